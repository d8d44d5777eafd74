//! Top-level windows: list them (title, app, pid, geometry, workspace, focus) and act on one
//! (focus, move, resize, minimize, maximize, close). Linux: EWMH over X11 (x11rb) through the
//! window manager. Wayland gives clients no way to list or move other clients' windows; under
//! Wayland only XWayland windows are visible here.

use serde::Serialize;

use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WindowInfo {
    pub id: u64,
    pub title: String,
    /// The application class (X11 WM_CLASS), e.g. `gedit`.
    pub app: String,
    pub pid: Option<u32>,
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    /// Workspace number; `None` when on all workspaces or unknown.
    pub workspace: Option<u32>,
    pub focused: bool,
    pub minimized: bool,
    pub maximized: bool,
}

impl std::fmt::Display for WindowInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:?} app {} pid {} at {},{} {}x{}",
            self.id,
            self.title,
            self.app,
            self.pid.map_or("?".to_string(), |p| p.to_string()),
            self.x,
            self.y,
            self.width,
            self.height
        )?;
        if let Some(w) = self.workspace {
            write!(f, " workspace {w}")?;
        }
        for (flag, name) in [
            (self.focused, "focused"),
            (self.minimized, "minimized"),
            (self.maximized, "maximized"),
        ] {
            if flag {
                write!(f, " {name}")?;
            }
        }
        Ok(())
    }
}

/// What to do to a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowOp {
    Focus,
    Move {
        x: i32,
        y: i32,
    },
    Resize {
        width: u32,
        height: u32,
    },
    Minimize,
    Maximize,
    /// Undo maximize and minimize.
    Restore,
    /// Ask the window to close (its app may ask about unsaved work).
    Close,
}

/// Lists and manages windows. Blocking: call from a blocking thread.
pub trait Windows {
    fn windows(&self) -> Result<Vec<WindowInfo>> {
        Err(Error::unsupported("window management"))
    }
    fn apply(&self, _id: u64, _op: WindowOp) -> Result<()> {
        Err(Error::unsupported("window management"))
    }
}

/// The window a call means: an id (decimal or 0x hex), else an exact title, else the one title
/// containing the text (case-insensitive). Ambiguity and misses name the candidates.
pub fn find<'a>(windows: &'a [WindowInfo], wanted: &str) -> Result<&'a WindowInfo> {
    let wanted = wanted.trim();
    let id = wanted
        .strip_prefix("0x")
        .map(|hex| u64::from_str_radix(hex, 16).ok())
        .unwrap_or_else(|| wanted.parse().ok());
    if let Some(w) = id.and_then(|id| windows.iter().find(|w| w.id == id)) {
        return Ok(w);
    }
    if let Some(w) = windows.iter().find(|w| w.title == wanted) {
        return Ok(w);
    }
    let lower = wanted.to_lowercase();
    let matching: Vec<&WindowInfo> = windows
        .iter()
        .filter(|w| w.title.to_lowercase().contains(&lower))
        .collect();
    let names = |list: &[&WindowInfo]| {
        list.iter()
            .map(|w| format!("{} {:?}", w.id, w.title))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match matching.as_slice() {
        [one] => Ok(one),
        [] => Err(Error::invalid(format!(
            "no window matches {wanted:?}; open windows: {}",
            names(&windows.iter().collect::<Vec<_>>())
        ))),
        several => Err(Error::invalid(format!(
            "{wanted:?} matches several windows ({}); use the id",
            names(several)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(id: u64, title: &str) -> WindowInfo {
        WindowInfo {
            id,
            title: title.into(),
            app: "x".into(),
            pid: None,
            x: 0,
            y: 0,
            width: 1,
            height: 1,
            workspace: None,
            focused: false,
            minimized: false,
            maximized: false,
        }
    }

    #[test]
    fn finds_by_id_title_or_unique_part() {
        let list = vec![
            window(10, "Notes"),
            window(11, "Notes 2"),
            window(31, "Mail"),
        ];
        assert_eq!(find(&list, "0x1f").unwrap().id, 31);
        assert_eq!(find(&list, "11").unwrap().id, 11);
        assert_eq!(find(&list, "Notes").unwrap().id, 10);
        assert_eq!(find(&list, "mai").unwrap().id, 31);
        let err = find(&list, "note").unwrap_err().to_string();
        assert!(err.contains("several") && err.contains("Notes 2"), "{err}");
        let err = find(&list, "calc").unwrap_err().to_string();
        assert!(
            err.contains("open windows") && err.contains("Mail"),
            "{err}"
        );
    }
}
