//! The snapshot pipeline and desktop input: screen and window capture, the accessibility tree
//! (AT-SPI on Linux, AX on macOS, UIA on Windows), element IDs, annotated images, the snapshot
//! store, and input (enigo), exposed as the `screenshot` and `desktop` tools and as a plain API
//! for the CLI's `osprey see`. Platform code sits behind one trait per concern, in
//! `#[cfg(target_os)]` files. This crate must not know about Tauri, apps or the agent loop, must
//! not shell out to helper programs (xdotool, screencapture, python) and must not change the
//! process environment: display and bus addresses are passed in explicitly.

pub mod accessibility;
pub mod actions;
pub mod capture;
pub mod desktop;
pub mod elements;
pub mod error;
pub mod geometry;
pub mod input;
pub mod render;
pub mod snapshot;
pub mod tools;

pub use actions::ActionTarget;
pub use capture::{CaptureBackend, MonitorInfo, WindowInfo};
pub use desktop::{Desktop, DesktopConfig, SeeOptions, SeeTarget, Seen};
pub use elements::Element;
pub use error::{Error, Result};
pub use geometry::{Point, Rect};
pub use input::MouseButton;
pub use render::Quality;
pub use snapshot::{Snapshot, SnapshotStore};
pub use tools::{DesktopTool, ScreenTools, ScreenshotTool};

/// One snapshot for the CLI's `osprey see`: connects, looks, and returns the encoded annotated
/// image (`seen.image.bytes`, PNG unless `options.quality` asks for JPEG) and the element list
/// (`seen.text`). Set `config.snapshot_dir` so a later `osprey tool desktop ...` can use the IDs.
pub async fn see_once(
    config: DesktopConfig,
    target: SeeTarget,
    options: SeeOptions,
) -> Result<Seen> {
    let desktop = tokio::task::spawn_blocking(move || Desktop::new(config))
        .await
        .map_err(|e| Error::Display(format!("connecting failed: {e}")))??;
    desktop.see(&target, options).await
}
