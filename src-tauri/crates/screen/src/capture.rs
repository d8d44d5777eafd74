//! Capture: the monitors and top-level windows of the desktop with their metadata, and images of
//! a monitor, a window or a region. One [`CaptureBackend`] per platform: X11 through x11rb on
//! Linux (one connection kept open, explicit display name), xcap on macOS and Windows.

use image::RgbImage;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::geometry::Rect;

#[cfg(target_os = "linux")]
mod x11;
#[cfg(target_os = "linux")]
pub use x11::X11Capture as PlatformCapture;

#[cfg(any(target_os = "macos", target_os = "windows"))]
mod xcap_backend;
#[cfg(any(target_os = "macos", target_os = "windows"))]
pub use xcap_backend::XcapCapture as PlatformCapture;

/// One monitor (an output of the display).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MonitorInfo {
    pub id: u32,
    pub name: String,
    pub bounds: Rect,
    pub primary: bool,
}

/// One top-level window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowInfo {
    /// The platform's window id (an X11 window, a CGWindowID, an HWND value).
    pub id: u64,
    pub title: String,
    /// The application's name (X11: the WM_CLASS class; macOS/Windows: the process name).
    pub app_name: String,
    pub pid: Option<u32>,
    /// Outer bounds of the client area in screen pixels.
    pub bounds: Rect,
    pub focused: bool,
    pub minimized: bool,
}

/// What the platform layer must provide for capture and window management.
pub trait CaptureBackend: Send + Sync {
    fn monitors(&self) -> Result<Vec<MonitorInfo>>;
    /// Top-level windows that a person could see, front-most last when the platform knows the
    /// stacking order.
    fn windows(&self) -> Result<Vec<WindowInfo>>;
    /// The pixels of a screen region (clipped to the screen; an error when nothing is left).
    fn capture_region(&self, region: Rect) -> Result<RgbImage>;
    /// The bounds of the whole virtual screen.
    fn screen_bounds(&self) -> Result<Rect>;
    /// Raises and focuses a window.
    fn focus_window(&self, id: u64) -> Result<()>;

    /// A window's pixels as they are on screen (what a person sees at its bounds).
    fn capture_window(&self, window: &WindowInfo) -> Result<RgbImage> {
        self.capture_region(window.bounds)
    }

    /// A monitor's pixels.
    fn capture_monitor(&self, monitor: &MonitorInfo) -> Result<RgbImage> {
        self.capture_region(monitor.bounds)
    }
}

/// Finds a window by a case-insensitive title substring (exact title preferred).
pub fn find_window_by_title<'a>(windows: &'a [WindowInfo], title: &str) -> Option<&'a WindowInfo> {
    let wanted = title.to_lowercase();
    windows
        .iter()
        .rev()
        .find(|w| w.title.to_lowercase() == wanted)
        .or_else(|| {
            windows
                .iter()
                .rev()
                .find(|w| w.title.to_lowercase().contains(&wanted))
        })
}

/// Finds a window by a case-insensitive application name.
pub fn find_window_by_app<'a>(windows: &'a [WindowInfo], app: &str) -> Option<&'a WindowInfo> {
    let wanted = app.to_lowercase();
    windows.iter().rev().filter(|w| !w.minimized).find(|w| {
        w.app_name.to_lowercase() == wanted || w.app_name.to_lowercase().contains(&wanted)
    })
}
