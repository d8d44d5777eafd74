//! macOS and Windows capture through xcap (CoreGraphics / GDI+DXGI underneath). Compile-checked
//! for both targets from Linux (`scripts/test`), never run; it uses only xcap's
//! portable API, which is the same on both. See the crate README.

use image::{DynamicImage, RgbImage};

use super::{CaptureBackend, MonitorInfo, WindowInfo};
use crate::error::{Error, Result};
use crate::geometry::Rect;

fn display(error: impl std::fmt::Display) -> Error {
    Error::Display(error.to_string())
}

/// Capture through xcap. Holds nothing: xcap looks monitors and windows up per call.
#[derive(Clone, Debug, Default)]
pub struct XcapCapture;

impl XcapCapture {
    pub fn new() -> Result<XcapCapture> {
        let monitors = xcap::Monitor::all()
            .map_err(|e| Error::NoDisplay(format!("cannot list monitors: {e}")))?;
        if monitors.is_empty() {
            return Err(Error::NoDisplay("no monitor is attached".into()));
        }
        Ok(XcapCapture)
    }

    fn monitor_bounds(monitor: &xcap::Monitor) -> Result<Rect> {
        Ok(Rect::new(
            monitor.x().map_err(display)?,
            monitor.y().map_err(display)?,
            monitor.width().map_err(display)?,
            monitor.height().map_err(display)?,
        ))
    }
}

impl CaptureBackend for XcapCapture {
    fn monitors(&self) -> Result<Vec<MonitorInfo>> {
        xcap::Monitor::all()
            .map_err(display)?
            .iter()
            .map(|m| {
                Ok(MonitorInfo {
                    id: m.id().map_err(display)?,
                    name: m.name().unwrap_or_default(),
                    bounds: Self::monitor_bounds(m)?,
                    primary: m.is_primary().unwrap_or(false),
                })
            })
            .collect()
    }

    fn windows(&self) -> Result<Vec<WindowInfo>> {
        let mut out = Vec::new();
        for window in xcap::Window::all().map_err(display)? {
            // A window that vanished or hides its details is skipped, not an error.
            let (Ok(id), Ok(x), Ok(y), Ok(width), Ok(height)) = (
                window.id(),
                window.x(),
                window.y(),
                window.width(),
                window.height(),
            ) else {
                continue;
            };
            out.push(WindowInfo {
                id: u64::from(id),
                title: window.title().unwrap_or_default(),
                app_name: window.app_name().unwrap_or_default(),
                pid: window.pid().ok(),
                bounds: Rect::new(x, y, width, height),
                focused: window.is_focused().unwrap_or(false),
                minimized: window.is_minimized().unwrap_or(false),
            });
        }
        // xcap lists front-most first; the trait promises front-most last.
        out.reverse();
        Ok(out)
    }

    fn screen_bounds(&self) -> Result<Rect> {
        let monitors = self.monitors()?;
        let left = monitors.iter().map(|m| m.bounds.x).min().unwrap_or(0);
        let top = monitors.iter().map(|m| m.bounds.y).min().unwrap_or(0);
        let right = monitors.iter().map(|m| m.bounds.right()).max().unwrap_or(0);
        let bottom = monitors
            .iter()
            .map(|m| m.bounds.bottom())
            .max()
            .unwrap_or(0);
        Ok(Rect::new(
            left,
            top,
            (right - left).max(0) as u32,
            (bottom - top).max(0) as u32,
        ))
    }

    fn capture_region(&self, region: Rect) -> Result<RgbImage> {
        // One monitor per call: the monitor holding the region's top-left corner.
        let monitor = xcap::Monitor::from_point(region.x, region.y)
            .map_err(|_| Error::InvalidInput(format!("region {region} is outside the screen")))?;
        let bounds = Self::monitor_bounds(&monitor)?;
        let clipped = region
            .intersection(&bounds)
            .ok_or_else(|| Error::InvalidInput(format!("region {region} is outside the screen")))?;
        let image = monitor
            .capture_region(
                (clipped.x - bounds.x) as u32,
                (clipped.y - bounds.y) as u32,
                clipped.width,
                clipped.height,
            )
            .map_err(display)?;
        Ok(DynamicImage::ImageRgba8(image).into_rgb8())
    }

    fn focus_window(&self, _id: u64) -> Result<()> {
        Err(Error::Unsupported("focusing a window"))
    }
}
