//! [`Desktop`]: the platform backends put together (capture, accessibility, input) with the
//! snapshot store; the one handle the tools and the CLI use.

use std::sync::Arc;

use crate::accessibility::{
    AccessibilityBackend, AccessibilityTree, PlatformAccessibility, TreeLimits,
};
use crate::capture::{CaptureBackend, PlatformCapture, WindowInfo};
use crate::error::Result;

/// Where the backends connect. `None` fields fall back to the process environment (`DISPLAY`,
/// `DBUS_SESSION_BUS_ADDRESS`); tests and long-lived hosts pass them explicitly.
#[derive(Clone, Debug, Default)]
pub struct DesktopConfig {
    /// The X11 display name (`":0"`). Linux only.
    pub x11_display: Option<String>,
    /// The D-Bus session bus address, through which the AT-SPI bus is found. Linux only.
    pub session_bus_address: Option<String>,
}

/// The desktop handle. Cheap to clone.
#[derive(Clone)]
pub struct Desktop {
    inner: Arc<Inner>,
}

struct Inner {
    config: DesktopConfig,
    capture: PlatformCapture,
    accessibility: PlatformAccessibility,
}

impl std::fmt::Debug for Desktop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desktop")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Desktop {
    /// Connects to the display. Fails with [`crate::Error::NoDisplay`] when there is none.
    pub fn new(config: DesktopConfig) -> Result<Desktop> {
        #[cfg(target_os = "linux")]
        let capture = PlatformCapture::connect(config.x11_display.as_deref())?;
        #[cfg(not(target_os = "linux"))]
        let capture = PlatformCapture::new()?;
        let accessibility = PlatformAccessibility::new(config.session_bus_address.clone());
        Ok(Desktop {
            inner: Arc::new(Inner {
                config,
                capture,
                accessibility,
            }),
        })
    }

    pub fn config(&self) -> &DesktopConfig {
        &self.inner.config
    }

    /// The capture backend (monitors, windows, images).
    pub fn capture(&self) -> &dyn CaptureBackend {
        &self.inner.capture
    }

    /// The accessibility backend. Its connection is made on first use and belongs to the tokio
    /// runtime that made it: use one `Desktop` within one runtime.
    pub fn accessibility(&self) -> &dyn AccessibilityBackend {
        &self.inner.accessibility
    }

    /// The accessibility tree of a window, within the limits.
    pub async fn tree(&self, window: &WindowInfo, limits: TreeLimits) -> Result<AccessibilityTree> {
        self.inner.accessibility.window_tree(window, limits).await
    }

    /// Whether a window manager runs (always true where the platform has one built in).
    pub fn window_manager_running(&self) -> Result<bool> {
        #[cfg(target_os = "linux")]
        return self.inner.capture.window_manager_running();
        #[cfg(not(target_os = "linux"))]
        return Ok(true);
    }
}
