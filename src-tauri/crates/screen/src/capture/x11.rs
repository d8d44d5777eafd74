//! X11 capture with x11rb: one connection kept open for the life of the backend (xcap opens a
//! new one per call), display named explicitly (no reliance on the process's `DISPLAY`), window
//! metadata read with pipelined property requests, pixels with one MIT-SHM `GetImage` into a
//! server-created shared segment (read back with `pread`, so no `unsafe` mapping is needed),
//! or a plain `GetImage` over the socket where the server has no MIT-SHM 1.2.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use image::RgbImage;
use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::randr::ConnectionExt as _;
use x11rb::protocol::shm::ConnectionExt as _;
use x11rb::protocol::xproto::{
    Atom, AtomEnum, ClientMessageEvent, ConfigureWindowAux, ConnectionExt as _, EventMask,
    ImageFormat, ImageOrder, InputFocus, MapState, StackMode, Window, WindowClass,
};
use x11rb::rust_connection::RustConnection;

use super::{CaptureBackend, MonitorInfo, WindowInfo};
use crate::error::{Error, Result};
use crate::geometry::Rect;

macro_rules! atoms {
    ($($name:ident),* $(,)?) => {
        #[allow(non_snake_case)]
        #[derive(Clone, Copy, Debug)]
        struct Atoms { $($name: Atom,)* }
        impl Atoms {
            #[allow(non_snake_case)]
            fn intern(conn: &RustConnection) -> Result<Atoms> {
                $(let $name = conn.intern_atom(false, stringify!($name).as_bytes()).map_err(display)?;)*
                Ok(Atoms { $($name: $name.reply().map_err(display)?.atom,)* })
            }
        }
    };
}

atoms!(
    _NET_CLIENT_LIST_STACKING,
    _NET_CLIENT_LIST,
    _NET_WM_NAME,
    UTF8_STRING,
    _NET_WM_PID,
    _NET_ACTIVE_WINDOW,
    _NET_WM_STATE,
    _NET_WM_STATE_HIDDEN,
    WM_STATE,
    _NET_SUPPORTING_WM_CHECK,
);

fn display(error: impl std::fmt::Display) -> Error {
    Error::Display(error.to_string())
}

/// How the root window's pixels are laid out in a `GetImage` reply (32 bits per pixel).
#[derive(Clone, Copy, Debug)]
struct PixelLayout {
    red_shift: u32,
    green_shift: u32,
    blue_shift: u32,
    little_endian: bool,
}

/// The X11 capture backend. Cheap to share: the connection is behind an `Arc`.
#[derive(Clone)]
pub struct X11Capture {
    inner: Arc<Inner>,
}

struct Inner {
    conn: RustConnection,
    root: Window,
    screen_width: u16,
    screen_height: u16,
    atoms: Atoms,
    layout: PixelLayout,
    /// Cleared after the first MIT-SHM failure, so later captures go straight to `GetImage`.
    shm_usable: AtomicBool,
    /// The shared segment, reused across captures (one capture at a time uses it).
    segment: Mutex<Option<Segment>>,
}

/// A MIT-SHM segment the X server created, and our handle on its memory.
struct Segment {
    id: u32,
    file: File,
    size: u32,
}

/// Rows converted per block: about 256 KiB of source pixels, so a block stays in cache between
/// the read and the conversion.
const BLOCK_BYTES: usize = 256 * 1024;

impl std::fmt::Debug for X11Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X11Capture")
            .field("root", &self.inner.root)
            .finish_non_exhaustive()
    }
}

impl X11Capture {
    /// Connects to the named display (`":99"`), or to `$DISPLAY` when `None`.
    pub fn connect(display_name: Option<&str>) -> Result<X11Capture> {
        if display_name.is_none() && std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
            return Err(Error::NoDisplay("DISPLAY is not set".into()));
        }
        let (conn, screen_number) = x11rb::connect(display_name).map_err(|e| {
            Error::NoDisplay(format!(
                "cannot connect to X display {}: {e}",
                display_name.unwrap_or("$DISPLAY")
            ))
        })?;
        let setup = conn.setup();
        let screen = setup
            .roots
            .get(screen_number)
            .ok_or_else(|| Error::Display(format!("screen {screen_number} does not exist")))?;
        let visual = screen
            .allowed_depths
            .iter()
            .flat_map(|d| d.visuals.iter())
            .find(|v| v.visual_id == screen.root_visual)
            .ok_or_else(|| Error::Display("the root visual is not listed".into()))?;
        let bits_per_pixel = setup
            .pixmap_formats
            .iter()
            .find(|f| f.depth == screen.root_depth)
            .map(|f| f.bits_per_pixel)
            .unwrap_or(0);
        if bits_per_pixel != 32 {
            return Err(Error::Unsupported(
                "an X11 root window with other than 32 bits per pixel",
            ));
        }
        let layout = PixelLayout {
            red_shift: visual.red_mask.trailing_zeros(),
            green_shift: visual.green_mask.trailing_zeros(),
            blue_shift: visual.blue_mask.trailing_zeros(),
            little_endian: setup.image_byte_order == ImageOrder::LSB_FIRST,
        };
        let root = screen.root;
        let (screen_width, screen_height) = (screen.width_in_pixels, screen.height_in_pixels);
        let atoms = Atoms::intern(&conn)?;
        // CreateSegment (the server makes the memory and hands us a descriptor) is MIT-SHM 1.2.
        let shm_usable = conn
            .extension_information(x11rb::protocol::shm::X11_EXTENSION_NAME)
            .ok()
            .flatten()
            .is_some()
            && conn
                .shm_query_version()
                .ok()
                .and_then(|c| c.reply().ok())
                .is_some_and(|v| (v.major_version, v.minor_version) >= (1, 2));
        Ok(X11Capture {
            inner: Arc::new(Inner {
                conn,
                root,
                screen_width,
                screen_height,
                atoms,
                layout,
                shm_usable: AtomicBool::new(shm_usable),
                segment: Mutex::new(None),
            }),
        })
    }

    /// Whether captures go through MIT-SHM.
    pub fn uses_shared_memory(&self) -> bool {
        self.inner.shm_usable.load(Ordering::Relaxed)
    }

    /// The pixels of `area` (already clipped to the screen) through a shared segment.
    fn capture_shared(&self, area: Rect) -> Result<RgbImage> {
        let inner = &self.inner;
        let needed = area.width * area.height * 4;
        let mut slot = inner.segment.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_none_or(|s| s.size < needed) {
            if let Some(old) = slot.take() {
                let _ = inner.conn.shm_detach(old.id);
            }
            // At least a full screen, so ordinary captures never re-create it.
            let size =
                needed.max(u32::from(inner.screen_width) * u32::from(inner.screen_height) * 4);
            let id = inner.conn.generate_id().map_err(display)?;
            let reply = inner
                .conn
                .shm_create_segment(id, size, false)
                .map_err(display)?
                .reply()
                .map_err(display)?;
            *slot = Some(Segment {
                id,
                file: File::from(reply.shm_fd),
                size,
            });
        }
        let segment = slot.as_ref().expect("created above");
        inner
            .conn
            .shm_get_image(
                inner.root,
                area.x as i16,
                area.y as i16,
                area.width as u16,
                area.height as u16,
                !0,
                u8::from(ImageFormat::Z_PIXMAP),
                segment.id,
                0,
            )
            .map_err(display)?
            .reply()
            .map_err(display)?;
        let row_bytes = area.width as usize * 4;
        let rows_per_block = (BLOCK_BYTES / row_bytes).max(1);
        let mut block = vec![0u8; rows_per_block * row_bytes];
        let mut rgb = Vec::with_capacity(area.width as usize * area.height as usize * 3);
        let mut row = 0usize;
        while row < area.height as usize {
            let rows = rows_per_block.min(area.height as usize - row);
            let bytes = &mut block[..rows * row_bytes];
            segment
                .file
                .read_exact_at(bytes, (row * row_bytes) as u64)
                .map_err(|e| Error::Display(format!("reading the shared segment: {e}")))?;
            self.convert(bytes, &mut rgb);
            row += rows;
        }
        RgbImage::from_raw(area.width, area.height, rgb)
            .ok_or_else(|| Error::Display("image buffer has the wrong size".into()))
    }

    /// Whether an EWMH window manager announces itself on the root window.
    pub fn window_manager_running(&self) -> Result<bool> {
        let inner = &self.inner;
        let reply = inner
            .conn
            .get_property(
                false,
                inner.root,
                inner.atoms._NET_SUPPORTING_WM_CHECK,
                AtomEnum::WINDOW,
                0,
                1,
            )
            .map_err(display)?
            .reply()
            .map_err(display)?;
        Ok(reply.value32().and_then(|mut v| v.next()).is_some())
    }

    /// Client windows from the window manager's list, or (no window manager) the viewable
    /// children of the root that have a title.
    fn client_windows(&self) -> Result<Vec<Window>> {
        let inner = &self.inner;
        for list in [
            inner.atoms._NET_CLIENT_LIST_STACKING,
            inner.atoms._NET_CLIENT_LIST,
        ] {
            let reply = inner
                .conn
                .get_property(false, inner.root, list, AtomEnum::WINDOW, 0, u32::MAX)
                .map_err(display)?
                .reply()
                .map_err(display)?;
            if let Some(values) = reply.value32() {
                let windows: Vec<Window> = values.collect();
                if !windows.is_empty() {
                    return Ok(windows);
                }
            }
        }
        let tree = inner
            .conn
            .query_tree(inner.root)
            .map_err(display)?
            .reply()
            .map_err(display)?;
        let cookies = tree
            .children
            .iter()
            .map(|w| inner.conn.get_window_attributes(*w))
            .collect::<Result<Vec<_>, _>>()
            .map_err(display)?;
        let mut out = Vec::new();
        for (window, cookie) in tree.children.iter().zip(cookies) {
            let Ok(attributes) = cookie.reply() else {
                continue; // destroyed meanwhile
            };
            if attributes.map_state == MapState::VIEWABLE
                && attributes.class == WindowClass::INPUT_OUTPUT
                && !attributes.override_redirect
            {
                out.push(*window);
            }
        }
        Ok(out)
    }

    fn describe(&self, windows: &[Window], active: Option<Window>) -> Result<Vec<WindowInfo>> {
        let inner = &self.inner;
        let conn = &inner.conn;
        let a = inner.atoms;
        // Send every request first, then read the replies: one round trip for the whole list.
        let mut pending = Vec::with_capacity(windows.len());
        for &w in windows {
            let any = AtomEnum::ANY;
            pending.push((
                w,
                conn.get_property(false, w, a._NET_WM_NAME, a.UTF8_STRING, 0, 1024)
                    .map_err(display)?,
                conn.get_property(false, w, AtomEnum::WM_NAME, any, 0, 1024)
                    .map_err(display)?,
                conn.get_property(false, w, AtomEnum::WM_CLASS, any, 0, 1024)
                    .map_err(display)?,
                conn.get_property(false, w, a._NET_WM_PID, AtomEnum::CARDINAL, 0, 1)
                    .map_err(display)?,
                conn.get_property(false, w, a._NET_WM_STATE, AtomEnum::ATOM, 0, 64)
                    .map_err(display)?,
                conn.get_property(false, w, a.WM_STATE, a.WM_STATE, 0, 2)
                    .map_err(display)?,
                conn.get_geometry(w).map_err(display)?,
                conn.translate_coordinates(w, inner.root, 0, 0)
                    .map_err(display)?,
            ));
        }
        let mut out = Vec::new();
        for (w, net_name, name, class, pid, net_state, wm_state, geometry, position) in pending {
            // A window destroyed between the list and the replies is skipped, not an error.
            let (Ok(geometry), Ok(position)) = (geometry.reply(), position.reply()) else {
                continue;
            };
            let title = net_name
                .reply()
                .ok()
                .filter(|r| !r.value.is_empty())
                .map(|r| String::from_utf8_lossy(&r.value).into_owned())
                .or_else(|| {
                    name.reply()
                        .ok()
                        .map(|r| String::from_utf8_lossy(&r.value).into_owned())
                })
                .unwrap_or_default();
            // WM_CLASS is "instance\0class\0"; the class is the application's name.
            let app_name = class
                .reply()
                .ok()
                .map(|r| {
                    let parts: Vec<&[u8]> = r.value.split(|b| *b == 0).collect();
                    let pick = parts
                        .get(1)
                        .filter(|p| !p.is_empty())
                        .or(parts.first())
                        .copied()
                        .unwrap_or_default();
                    String::from_utf8_lossy(pick).into_owned()
                })
                .unwrap_or_default();
            let pid = pid
                .reply()
                .ok()
                .and_then(|r| r.value32().and_then(|mut v| v.next()));
            let hidden = net_state
                .reply()
                .ok()
                .and_then(|r| {
                    r.value32()
                        .map(|mut v| v.any(|s| s == a._NET_WM_STATE_HIDDEN))
                })
                .unwrap_or(false);
            let iconic = wm_state
                .reply()
                .ok()
                .and_then(|r| r.value32().and_then(|mut v| v.next()))
                == Some(3);
            if title.is_empty() && app_name.is_empty() {
                continue;
            }
            out.push(WindowInfo {
                id: u64::from(w),
                title,
                app_name,
                pid,
                bounds: Rect::new(
                    i32::from(position.dst_x),
                    i32::from(position.dst_y),
                    u32::from(geometry.width),
                    u32::from(geometry.height),
                ),
                focused: active == Some(w),
                minimized: hidden || iconic,
            });
        }
        Ok(out)
    }

    fn active_window(&self) -> Result<Option<Window>> {
        let inner = &self.inner;
        let reply = inner
            .conn
            .get_property(
                false,
                inner.root,
                inner.atoms._NET_ACTIVE_WINDOW,
                AtomEnum::WINDOW,
                0,
                1,
            )
            .map_err(display)?
            .reply()
            .map_err(display)?;
        if let Some(w) = reply
            .value32()
            .and_then(|mut v| v.next())
            .filter(|w| *w != 0)
        {
            return Ok(Some(w));
        }
        let focus = inner
            .conn
            .get_input_focus()
            .map_err(display)?
            .reply()
            .map_err(display)?
            .focus;
        Ok((focus > 1).then_some(focus))
    }

    /// Appends 32-bit pixels as RGB.
    fn convert(&self, data: &[u8], rgb: &mut Vec<u8>) {
        let layout = self.inner.layout;
        let standard = layout.little_endian
            && layout.red_shift == 16
            && layout.green_shift == 8
            && layout.blue_shift == 0;
        if standard {
            // The common case (B, G, R, X in memory): a straight byte shuffle.
            for pixel in data.chunks_exact(4) {
                rgb.extend_from_slice(&[pixel[2], pixel[1], pixel[0]]);
            }
        } else {
            for pixel in data.chunks_exact(4) {
                let word = if layout.little_endian {
                    u32::from_le_bytes([pixel[0], pixel[1], pixel[2], pixel[3]])
                } else {
                    u32::from_be_bytes([pixel[0], pixel[1], pixel[2], pixel[3]])
                };
                rgb.extend_from_slice(&[
                    (word >> layout.red_shift) as u8,
                    (word >> layout.green_shift) as u8,
                    (word >> layout.blue_shift) as u8,
                ]);
            }
        }
    }

    fn to_rgb(&self, width: u32, height: u32, data: &[u8]) -> Result<RgbImage> {
        let expected = width as usize * height as usize * 4;
        if data.len() < expected {
            return Err(Error::Display(format!(
                "GetImage returned {} bytes for {width}x{height}",
                data.len()
            )));
        }
        let mut rgb = Vec::with_capacity(width as usize * height as usize * 3);
        self.convert(&data[..expected], &mut rgb);
        RgbImage::from_raw(width, height, rgb)
            .ok_or_else(|| Error::Display("image buffer has the wrong size".into()))
    }

    /// The pixels of `area` (clipped) over the socket, without shared memory.
    pub fn capture_over_socket(&self, area: Rect) -> Result<RgbImage> {
        let inner = &self.inner;
        let reply = inner
            .conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                inner.root,
                area.x as i16,
                area.y as i16,
                area.width as u16,
                area.height as u16,
                !0,
            )
            .map_err(display)?
            .reply()
            .map_err(display)?;
        self.to_rgb(area.width, area.height, &reply.data)
    }
}

impl CaptureBackend for X11Capture {
    fn monitors(&self) -> Result<Vec<MonitorInfo>> {
        let inner = &self.inner;
        let has_randr = inner
            .conn
            .extension_information(x11rb::protocol::randr::X11_EXTENSION_NAME)
            .map_err(display)?
            .is_some();
        if has_randr
            && let Ok(reply) = inner
                .conn
                .randr_get_monitors(inner.root, true)
                .map_err(display)?
                .reply()
        {
            let names = reply
                .monitors
                .iter()
                .map(|m| inner.conn.get_atom_name(m.name))
                .collect::<Result<Vec<_>, _>>()
                .map_err(display)?;
            let monitors: Vec<MonitorInfo> = reply
                .monitors
                .iter()
                .zip(names)
                .enumerate()
                .map(|(index, (m, name))| MonitorInfo {
                    id: index as u32,
                    name: name
                        .reply()
                        .map(|r| String::from_utf8_lossy(&r.name).into_owned())
                        .unwrap_or_default(),
                    bounds: Rect::new(
                        i32::from(m.x),
                        i32::from(m.y),
                        u32::from(m.width),
                        u32::from(m.height),
                    ),
                    primary: m.primary,
                })
                .collect();
            if !monitors.is_empty() {
                return Ok(monitors);
            }
        }
        Ok(vec![MonitorInfo {
            id: 0,
            name: "screen".into(),
            bounds: self.screen_bounds()?,
            primary: true,
        }])
    }

    fn windows(&self) -> Result<Vec<WindowInfo>> {
        let windows = self.client_windows()?;
        let active = self.active_window()?;
        self.describe(&windows, active)
    }

    fn screen_bounds(&self) -> Result<Rect> {
        Ok(Rect::new(
            0,
            0,
            u32::from(self.inner.screen_width),
            u32::from(self.inner.screen_height),
        ))
    }

    fn capture_region(&self, region: Rect) -> Result<RgbImage> {
        let screen = self.screen_bounds()?;
        let clipped = region.intersection(&screen).ok_or_else(|| {
            Error::InvalidInput(format!("region {region} is outside the screen ({screen})"))
        })?;
        if self.uses_shared_memory() {
            match self.capture_shared(clipped) {
                Ok(image) => return Ok(image),
                Err(error) => {
                    tracing::debug!(%error, "MIT-SHM capture failed; using GetImage from now on");
                    self.inner.shm_usable.store(false, Ordering::Relaxed);
                }
            }
        }
        self.capture_over_socket(clipped)
    }

    fn focus_window(&self, id: u64) -> Result<()> {
        let inner = &self.inner;
        let window = Window::try_from(id)
            .map_err(|_| Error::InvalidInput(format!("{id} is not an X11 window id")))?;
        if self.window_manager_running()? {
            // EWMH: ask the window manager (source 2 = a pager, acting for the user).
            let event = ClientMessageEvent::new(
                32,
                window,
                inner.atoms._NET_ACTIVE_WINDOW,
                [2, 0, 0, 0, 0],
            );
            inner
                .conn
                .send_event(
                    false,
                    inner.root,
                    EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                    event,
                )
                .map_err(display)?;
        } else {
            inner
                .conn
                .configure_window(
                    window,
                    &ConfigureWindowAux::new().stack_mode(StackMode::ABOVE),
                )
                .map_err(display)?;
            inner
                .conn
                .set_input_focus(InputFocus::PARENT, window, x11rb::CURRENT_TIME)
                .map_err(display)?;
        }
        // A round trip makes sure the server has processed the requests.
        inner
            .conn
            .get_input_focus()
            .map_err(display)?
            .reply()
            .map_err(display)?;
        Ok(())
    }
}
