//! How Osprey's own windows (the chat window, apps' UIs) paint.
//!
//! WebKitGTK paints with Skia on the GPU and composites with GL. On a machine without a GPU
//! (a virtual machine, a remote desktop, a server's Xvfb) that GL is Mesa's software rasterizer,
//! llvmpipe, and painting "on the GPU" through it is far slower than Skia painting on the CPU:
//! under Xvfb the chat view's first frame took about a second with WebKit's default, against
//! tens of milliseconds with hardware acceleration off (docs/architecture.md, "How the windows
//! paint").
//!
//! So a window whose machine has no GPU render node (`/dev/dri/renderD*`) is given WebKit's
//! hardware-acceleration policy `Never`: CPU painting, no GL compositor. With a GPU, WebKit's
//! own default is kept. `OSPREY_WEBVIEW_GPU` overrides the guess: `on` keeps WebKit's default,
//! `off` turns acceleration off.
//!
//! The browser profile's windows are left alone: web pages get WebKit's own default, as in any
//! browser. Elsewhere than on Linux the choice is always WebKit's default (there is nothing to
//! set there).

use std::ffi::OsStr;
use std::path::Path;

use tauri::{Runtime, WebviewWindow};

/// The environment variable that overrides the guess (`on` or `off`).
pub const ENV: &str = "OSPREY_WEBVIEW_GPU";

/// Whether a window paints with WebKit's default (GPU) or with acceleration off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Painting {
    /// WebKit's default: Skia on the GPU, composited with GL.
    Default,
    /// Hardware acceleration off: Skia on the CPU, no compositor.
    Cpu,
}

/// The choice for this machine: the override when it is `on` or `off` (anything else is
/// ignored with a warning), otherwise `Cpu` exactly when `dri` holds no render node.
pub fn choose(override_value: Option<&OsStr>, dri: &Path) -> Painting {
    match override_value.and_then(OsStr::to_str).map(str::trim) {
        Some("on") => return Painting::Default,
        Some("off") => return Painting::Cpu,
        Some(other) if !other.is_empty() => {
            tracing::warn!("{ENV}={other} is neither `on` nor `off`; guessing from {dri:?}");
        }
        _ => {}
    }
    if has_render_node(dri) {
        Painting::Default
    } else {
        Painting::Cpu
    }
}

fn has_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|entry| entry.file_name().to_string_lossy().starts_with("renderD"))
    })
}

/// This machine's choice, read once.
pub fn for_this_machine() -> Painting {
    static CHOICE: std::sync::OnceLock<Painting> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| {
        if !cfg!(target_os = "linux") {
            return Painting::Default;
        }
        let choice = choose(std::env::var_os(ENV).as_deref(), Path::new("/dev/dri"));
        tracing::debug!("Osprey's windows paint with {choice:?}");
        choice
    })
}

/// Applies this machine's choice to `window`. Call it right after the window is built: the
/// page's first frame is painted the chosen way (setting it later would switch the page over).
pub fn apply<R: Runtime>(window: &WebviewWindow<R>) {
    if for_this_machine() == Painting::Default {
        return;
    }
    #[cfg(target_os = "linux")]
    if let Err(error) = window.with_webview(|webview| {
        use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
        if let Some(settings) = webview.inner().settings() {
            settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
        }
    }) {
        tracing::warn!("could not set how {} paints: {error}", window.label());
    }
    #[cfg(not(target_os = "linux"))]
    let _ = window;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dri(render_node: bool) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        // A card node alone (a display without a render node) is not a GPU WebKit can paint on.
        std::fs::write(dir.path().join("card0"), b"").unwrap();
        if render_node {
            std::fs::write(dir.path().join("renderD128"), b"").unwrap();
        }
        dir
    }

    #[test]
    fn a_machine_without_a_render_node_paints_on_the_cpu() {
        assert_eq!(choose(None, dri(false).path()), Painting::Cpu);
        assert_eq!(choose(None, Path::new("/no/such/dri")), Painting::Cpu);
    }

    #[test]
    fn a_machine_with_a_render_node_keeps_webkits_default() {
        assert_eq!(choose(None, dri(true).path()), Painting::Default);
    }

    #[test]
    fn the_override_wins_either_way_and_nonsense_is_ignored() {
        let gpu = dri(true);
        let none = dri(false);
        assert_eq!(choose(Some(OsStr::new("off")), gpu.path()), Painting::Cpu);
        assert_eq!(
            choose(Some(OsStr::new("on")), none.path()),
            Painting::Default
        );
        assert_eq!(choose(Some(OsStr::new(" off ")), gpu.path()), Painting::Cpu);
        assert_eq!(
            choose(Some(OsStr::new("yes")), gpu.path()),
            Painting::Default
        );
        assert_eq!(choose(Some(OsStr::new("")), none.path()), Painting::Cpu);
    }
}
