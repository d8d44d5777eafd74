//! Windows through EWMH over X11 (x11rb): the window manager's client list and properties for
//! listing, client messages to the root window for everything that changes a window, so the
//! window manager stays in charge (as a pager or taskbar does).

use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{
    AtomEnum, ClientMessageEvent, ConnectionExt as _, EventMask, Window,
};
use x11rb::rust_connection::RustConnection;

use super::LinuxBackend;
use crate::error::{Error, Result};
use crate::window::{WindowInfo, WindowOp, Windows};

x11rb::atom_manager! {
    pub Atoms: AtomsCookie {
        _NET_CLIENT_LIST,
        _NET_ACTIVE_WINDOW,
        _NET_WM_NAME,
        _NET_WM_PID,
        _NET_WM_DESKTOP,
        _NET_WM_STATE,
        _NET_WM_STATE_HIDDEN,
        _NET_WM_STATE_MAXIMIZED_VERT,
        _NET_WM_STATE_MAXIMIZED_HORZ,
        _NET_CLOSE_WINDOW,
        _NET_MOVERESIZE_WINDOW,
        _NET_SUPPORTING_WM_CHECK,
        _NET_CURRENT_DESKTOP,
        WM_CHANGE_STATE,
        UTF8_STRING,
    }
}

/// An X11 connection with the EWMH atoms interned.
pub struct Ewmh {
    connection: RustConnection,
    root: Window,
    atoms: Atoms,
}

impl std::fmt::Debug for Ewmh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ewmh").field("root", &self.root).finish()
    }
}

const DISPLAY: &str = "the X11 display";

fn broken(error: impl std::fmt::Display) -> Error {
    Error::unavailable(DISPLAY, error)
}

/// Source indication 2: a pager, i.e. a direct request from the person (EWMH "source indication").
const SOURCE_PAGER: u32 = 2;

impl Ewmh {
    pub fn connect(display: Option<&str>) -> Result<Ewmh> {
        let (connection, screen) = RustConnection::connect(display).map_err(|e| {
            Error::unavailable(
                DISPLAY,
                format!(
                    "{e}. Window management needs an X11 session (DISPLAY); on Wayland only \
                     XWayland windows are reachable and compositors do not let programs move \
                     other programs' windows"
                ),
            )
        })?;
        let root = connection.setup().roots[screen].root;
        let atoms = Atoms::new(&connection)
            .map_err(broken)?
            .reply()
            .map_err(broken)?;
        Ok(Ewmh {
            connection,
            root,
            atoms,
        })
    }

    fn property_u32s(
        &self,
        window: Window,
        property: u32,
        kind: impl Into<u32>,
    ) -> Result<Vec<u32>> {
        let reply = self
            .connection
            .get_property(false, window, property, kind, 0, 4096)
            .map_err(broken)?
            .reply()
            .map_err(broken)?;
        Ok(reply.value32().map(|v| v.collect()).unwrap_or_default())
    }

    fn property_bytes(
        &self,
        window: Window,
        property: u32,
        kind: impl Into<u32>,
    ) -> Result<Vec<u8>> {
        let reply = self
            .connection
            .get_property(false, window, property, kind, 0, 4096)
            .map_err(broken)?
            .reply()
            .map_err(broken)?;
        Ok(reply.value)
    }

    /// Whether an EWMH window manager runs (it names its check window on the root).
    pub fn window_manager(&self) -> Result<bool> {
        Ok(!self
            .property_u32s(
                self.root,
                self.atoms._NET_SUPPORTING_WM_CHECK,
                AtomEnum::WINDOW,
            )?
            .is_empty())
    }

    fn require_window_manager(&self) -> Result<()> {
        if self.window_manager()? {
            Ok(())
        } else {
            Err(Error::unavailable(
                "a window manager",
                "no EWMH window manager runs on this display (nothing set _NET_SUPPORTING_WM_CHECK)",
            ))
        }
    }

    fn info(&self, window: Window, active: Option<Window>) -> Result<WindowInfo> {
        let atoms = &self.atoms;
        let mut title = String::from_utf8_lossy(&self.property_bytes(
            window,
            atoms._NET_WM_NAME,
            atoms.UTF8_STRING,
        )?)
        .into_owned();
        if title.is_empty() {
            title = String::from_utf8_lossy(&self.property_bytes(
                window,
                AtomEnum::WM_NAME.into(),
                AtomEnum::STRING,
            )?)
            .into_owned();
        }
        // WM_CLASS is "instance\0class\0": the class names the application.
        let class = self.property_bytes(window, AtomEnum::WM_CLASS.into(), AtomEnum::STRING)?;
        let parts: Vec<&[u8]> = class.split(|b| *b == 0).filter(|p| !p.is_empty()).collect();
        let app = parts
            .get(1)
            .or(parts.first())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .unwrap_or_default();
        let pid = self
            .property_u32s(window, atoms._NET_WM_PID, AtomEnum::CARDINAL)?
            .first()
            .copied();
        let workspace = self
            .property_u32s(window, atoms._NET_WM_DESKTOP, AtomEnum::CARDINAL)?
            .first()
            .copied()
            .filter(|d| *d != u32::MAX);
        let state = self.property_u32s(window, atoms._NET_WM_STATE, AtomEnum::ATOM)?;
        let geometry = self
            .connection
            .get_geometry(window)
            .map_err(broken)?
            .reply()
            .map_err(broken)?;
        let origin = self
            .connection
            .translate_coordinates(window, self.root, 0, 0)
            .map_err(broken)?
            .reply()
            .map_err(broken)?;
        Ok(WindowInfo {
            id: u64::from(window),
            title,
            app,
            pid,
            x: i32::from(origin.dst_x),
            y: i32::from(origin.dst_y),
            width: u32::from(geometry.width),
            height: u32::from(geometry.height),
            workspace,
            focused: active == Some(window),
            minimized: state.contains(&atoms._NET_WM_STATE_HIDDEN),
            maximized: state.contains(&atoms._NET_WM_STATE_MAXIMIZED_VERT)
                && state.contains(&atoms._NET_WM_STATE_MAXIMIZED_HORZ),
        })
    }

    pub fn list(&self) -> Result<Vec<WindowInfo>> {
        self.require_window_manager()?;
        let clients =
            self.property_u32s(self.root, self.atoms._NET_CLIENT_LIST, AtomEnum::WINDOW)?;
        let active = self
            .property_u32s(self.root, self.atoms._NET_ACTIVE_WINDOW, AtomEnum::WINDOW)?
            .first()
            .copied()
            .filter(|w| *w != 0);
        // A window that vanished between the list and its properties is skipped.
        Ok(clients
            .into_iter()
            .filter_map(|w| self.info(w, active).ok())
            .collect())
    }

    fn message(&self, window: Window, kind: u32, data: [u32; 5]) -> Result<()> {
        let event = ClientMessageEvent::new(32, window, kind, data);
        self.connection
            .send_event(
                false,
                self.root,
                EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                event,
            )
            .map_err(broken)?;
        Ok(())
    }

    pub fn apply(&self, id: u64, op: WindowOp) -> Result<()> {
        self.require_window_manager()?;
        let window = Window::try_from(id)
            .map_err(|_| Error::invalid(format!("{id} is not an X11 window id")))?;
        let clients =
            self.property_u32s(self.root, self.atoms._NET_CLIENT_LIST, AtomEnum::WINDOW)?;
        if !clients.contains(&window) {
            return Err(Error::invalid(format!(
                "no window {id}; `os window list` shows the open ones"
            )));
        }
        let atoms = &self.atoms;
        let maximized = |add: bool| {
            [
                u32::from(add),
                atoms._NET_WM_STATE_MAXIMIZED_VERT,
                atoms._NET_WM_STATE_MAXIMIZED_HORZ,
                SOURCE_PAGER,
                0,
            ]
        };
        match op {
            WindowOp::Focus => {
                // Bring the window's workspace forward first, as a pager does.
                if let Some(&desktop) = self
                    .property_u32s(window, atoms._NET_WM_DESKTOP, AtomEnum::CARDINAL)?
                    .first()
                    && desktop != u32::MAX
                {
                    self.message(self.root, atoms._NET_CURRENT_DESKTOP, [desktop, 0, 0, 0, 0])?;
                }
                self.message(window, atoms._NET_ACTIVE_WINDOW, [SOURCE_PAGER, 0, 0, 0, 0])?;
            }
            WindowOp::Move { x, y } => {
                // Flags: x and y given (bits 8, 9), source pager (bits 12-15), static gravity.
                let flags = 10 | (1 << 8) | (1 << 9) | (SOURCE_PAGER << 12);
                self.message(
                    window,
                    atoms._NET_MOVERESIZE_WINDOW,
                    [flags, x as u32, y as u32, 0, 0],
                )?;
            }
            WindowOp::Resize { width, height } => {
                self.message(window, atoms._NET_WM_STATE, maximized(false))?;
                let flags = 10 | (1 << 10) | (1 << 11) | (SOURCE_PAGER << 12);
                self.message(
                    window,
                    atoms._NET_MOVERESIZE_WINDOW,
                    [flags, 0, 0, width, height],
                )?;
            }
            WindowOp::Minimize => {
                // ICCCM: WM_CHANGE_STATE with IconicState (3).
                self.message(window, atoms.WM_CHANGE_STATE, [3, 0, 0, 0, 0])?;
            }
            WindowOp::Maximize => self.message(window, atoms._NET_WM_STATE, maximized(true))?,
            WindowOp::Restore => {
                self.message(window, atoms._NET_WM_STATE, maximized(false))?;
                self.message(window, atoms._NET_ACTIVE_WINDOW, [SOURCE_PAGER, 0, 0, 0, 0])?;
            }
            WindowOp::Close => {
                self.message(window, atoms._NET_CLOSE_WINDOW, [0, SOURCE_PAGER, 0, 0, 0])?
            }
        }
        self.connection.flush().map_err(broken)?;
        Ok(())
    }
}

impl Windows for LinuxBackend {
    fn windows(&self) -> Result<Vec<WindowInfo>> {
        self.with_x11(|x| x.list())
    }

    fn apply(&self, id: u64, op: WindowOp) -> Result<()> {
        self.with_x11(|x| x.apply(id, op))
    }
}

impl LinuxBackend {
    /// Whether an X11 display with an EWMH window manager answers.
    pub fn probe_windows(&self) -> Result<String> {
        self.with_x11(|x| {
            x.require_window_manager()?;
            Ok("X11 display with an EWMH window manager".to_string())
        })
    }
}
