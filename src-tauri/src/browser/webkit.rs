//! What the native profile asks of WebKitGTK itself on Linux: history with WebKit's own
//! back/forward list, and snapshots of the view (viewport or full document) that work for a
//! hidden window too.

use std::time::{Duration, Instant};

use osprey_browser::driver::{HistoryStep, ShotRequest};
use osprey_browser::{BrowserError, Result};
use tauri::WebviewWindow;
use webkit2gtk::{SnapshotOptions, SnapshotRegion, WebViewExt};

use super::{NativeDriver, POLL, Pixels, encode, shell};

/// The engine, as `status` names it.
pub const NAME: &str = "WebKitGTK";

/// Runs a webview call on the main thread and returns its answer.
async fn on_webview<T: Send + 'static>(
    window: &WebviewWindow,
    timeout: Duration,
    f: impl FnOnce(&webkit2gtk::WebView, tokio::sync::oneshot::Sender<T>) + Send + 'static,
) -> Result<T> {
    let (send, receive) = tokio::sync::oneshot::channel::<T>();
    window
        .with_webview(move |platform| f(&platform.inner(), send))
        .map_err(shell)?;
    match tokio::time::timeout(timeout, receive).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_)) => Err(BrowserError::Page("the page went away".into())),
        Err(_) => Err(BrowserError::Timeout(
            "the webview did not answer in time".into(),
        )),
    }
}

/// Goes back, forward or reloads; false when there is no page to go to.
pub async fn history(
    _driver: &NativeDriver,
    _label: &str,
    window: &WebviewWindow,
    step: HistoryStep,
) -> Result<bool> {
    on_webview(window, Duration::from_secs(5), move |view, send| {
        let moved = match step {
            HistoryStep::Back => {
                view.can_go_back() && {
                    view.go_back();
                    true
                }
            }
            HistoryStep::Forward => {
                view.can_go_forward() && {
                    view.go_forward();
                    true
                }
            }
            HistoryStep::Reload => {
                view.reload();
                true
            }
        };
        let _ = send.send(moved);
    })
    .await
}

fn take_pixels(surface: cairo::Surface) -> std::result::Result<Pixels, String> {
    let mut image = cairo::ImageSurface::try_from(surface)
        .map_err(|_| "WebKit's snapshot is not an image surface".to_string())?;
    image.flush();
    let width = u32::try_from(image.width()).map_err(|e| e.to_string())?;
    let height = u32::try_from(image.height()).map_err(|e| e.to_string())?;
    let stride = usize::try_from(image.stride()).map_err(|e| e.to_string())?;
    let data = image.data().map_err(|e| e.to_string())?.to_vec();
    Ok(Pixels {
        width,
        height,
        stride,
        data,
    })
}

/// WebKit's snapshot of the page, encoded.
pub async fn screenshot(
    _driver: &NativeDriver,
    window: &WebviewWindow,
    request: ShotRequest,
) -> Result<Vec<u8>> {
    let region = if request.full_page {
        SnapshotRegion::FullDocument
    } else {
        SnapshotRegion::Visible
    };
    let snapshot = || {
        on_webview(window, Duration::from_secs(20), move |view, send| {
            view.snapshot(
                region,
                SnapshotOptions::NONE,
                None::<&webkit2gtk::gio::Cancellable>,
                move |result| {
                    let _ = send.send(result.map_err(|e| e.to_string()).and_then(take_pixels));
                },
            );
        })
    };
    // WebKit draws nothing for a window that is not mapped (`web.native_windows: "hidden"`):
    // the window is shown off screen, unfocused, for the snapshot, then hidden again where it
    // was.
    let hidden = !window.is_visible().unwrap_or(true);
    let mut pixels = snapshot().await?;
    if hidden && pixels.is_err() {
        let place = window.outer_position().ok();
        let _ = window.set_position(tauri::PhysicalPosition::new(-32_000, -32_000));
        window.show().map_err(shell)?;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            pixels = snapshot().await?;
            if pixels.is_ok() || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        let _ = window.hide();
        if let Some(place) = place {
            let _ = window.set_position(place);
        }
    }
    let pixels = pixels
        .map_err(|e| BrowserError::Page(format!("WebKit could not take the snapshot: {e}")))?;
    tokio::task::spawn_blocking(move || encode(&pixels, request.jpeg_quality, request.max_height))
        .await
        .map_err(shell)?
}
