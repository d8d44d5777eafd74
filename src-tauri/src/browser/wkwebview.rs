//! WKWebView's own snapshot, for the native profile on macOS: `takeSnapshotWithConfiguration:`
//! of the visible page, in the view's backing pixels, encoded as the other profiles encode
//! theirs. A full-page shot is refused with the managed profile named: WKWebView draws only what
//! its view shows. The Objective-C calls are the only unsafe code; they run on the main thread,
//! where `with_webview` runs its closure.
//!
//! Compiled by `scripts/test`'s macOS clippy; it has not run on macOS.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::time::Duration;

use block2::RcBlock;
use objc2::MainThreadMarker;
use objc2_app_kit::{NSBitmapImageFileType, NSBitmapImageRep, NSImage};
use objc2_foundation::{NSDictionary, NSError};
use objc2_web_kit::{WKSnapshotConfiguration, WKWebView};
use osprey_browser::driver::ShotRequest;
use osprey_browser::{BrowserError, Result};
use tauri::WebviewWindow;

use super::{encode_image, on_platform_webview, shell};

/// How long WKWebView may take to draw the snapshot.
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(20);

type Answer = std::result::Result<Vec<u8>, String>;

/// The visible page as PNG, or JPEG at the request's quality, cut at `max_height` CSS pixels.
pub async fn screenshot(window: &WebviewWindow, request: ShotRequest) -> Result<Vec<u8>> {
    if request.full_page {
        return Err(BrowserError::Unsupported(
            "full-page screenshots of the native profile are not taken on macOS (WKWebView \
             draws only what its view shows); take the viewport, or use `profile: \"managed\"`"
                .into(),
        ));
    }
    let answer = on_platform_webview(
        window,
        SNAPSHOT_TIMEOUT,
        "WKWebView drew no snapshot",
        move |platform, send: tokio::sync::oneshot::Sender<Answer>| {
            let send = Cell::new(Some(send));
            let answer = move |result: Answer| {
                if let Some(send) = send.take() {
                    let _ = send.send(result);
                }
            };
            let Some(mtm) = MainThreadMarker::new() else {
                answer(Err("not on the main thread".into()));
                return;
            };
            // SAFETY: `inner()` is the window's live WKWebView (Tauri's handle), used on the main
            // thread while Tauri keeps the view alive for the closure's duration.
            let view: &WKWebView = unsafe { &*platform.inner().cast::<WKWebView>() };
            // SAFETY: a new configuration object, used on the main thread.
            let configuration = unsafe { WKSnapshotConfiguration::new(mtm) };
            let done = RcBlock::new(move |image: *mut NSImage, error: *mut NSError| {
                // SAFETY: WebKit hands either a live image or a live error to the handler, on the
                // main thread, valid for the call.
                let result = match unsafe { (image.as_ref(), error.as_ref()) } {
                    (Some(image), _) => png_of(image),
                    (None, Some(error)) => Err(error.localizedDescription().to_string()),
                    (None, None) => Err("WKWebView gave no image".into()),
                };
                answer(result);
            });
            // SAFETY: main thread; WebKit copies the block and keeps the configuration.
            unsafe {
                view.takeSnapshotWithConfiguration_completionHandler(Some(&configuration), &done)
            };
        },
    )
    .await?;
    let png = answer.map_err(|error| {
        BrowserError::Page(format!("WKWebView could not take the snapshot: {error}"))
    })?;
    let scale = window.scale_factor().unwrap_or(1.0);
    tokio::task::spawn_blocking(move || {
        let image = image::load_from_memory(&png)
            .map_err(|e| BrowserError::Protocol(format!("WKWebView's snapshot: {e}")))?
            .to_rgb8();
        // The image is in backing pixels (two per CSS pixel on a Retina screen).
        let limit = (f64::from(request.max_height.max(1)) * scale).round() as u32;
        let image = if image.height() > limit {
            image::imageops::crop_imm(&image, 0, 0, image.width(), limit).to_image()
        } else {
            image
        };
        encode_image(&image, request.jpeg_quality)
    })
    .await
    .map_err(shell)?
}

/// The image's best bitmap as PNG bytes.
fn png_of(image: &NSImage) -> Answer {
    let tiff = image
        .TIFFRepresentation()
        .ok_or("the snapshot has no bitmap")?;
    let bitmap =
        NSBitmapImageRep::imageRepWithData(&tiff).ok_or("the snapshot's bitmap is unreadable")?;
    // SAFETY: an empty property dictionary is valid for every file type.
    let png = unsafe {
        bitmap.representationUsingType_properties(NSBitmapImageFileType::PNG, &NSDictionary::new())
    }
    .ok_or("the snapshot could not be encoded")?;
    Ok(png.to_vec())
}
