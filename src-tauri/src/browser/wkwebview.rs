//! WKWebView's own pictures of the page, for the native profile on macOS, in the view's backing
//! pixels and encoded as the other profiles encode theirs. The viewport is
//! `takeSnapshotWithConfiguration:`, which draws only what the view shows. The full page is
//! `createPDFWithConfiguration:` with no rectangle, which WebKit documents as the whole page
//! (its contents size) on one PDF page; its top, down to the height limit, is drawn into a
//! bitmap, so a page many screens long is never rasterized whole. The Objective-C calls are the
//! only unsafe code; they run on the main thread, where `with_webview` runs its closure.
//!
//! Compiled by `scripts/test`'s macOS clippy; it has not run on macOS.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::time::Duration;

use block2::RcBlock;
use objc2::{AllocAnyThread, MainThreadMarker};
use objc2_app_kit::{
    NSBitmapImageFileType, NSBitmapImageRep, NSDeviceRGBColorSpace, NSGraphicsContext, NSImage,
    NSPDFImageRep,
};
use objc2_foundation::{NSData, NSDictionary, NSError, NSPoint, NSRect, NSSize};
use objc2_web_kit::{WKSnapshotConfiguration, WKWebView};
use osprey_browser::driver::ShotRequest;
use osprey_browser::{BrowserError, Result};
use tauri::WebviewWindow;

use super::{encode_image, on_platform_webview, shell};

/// How long WKWebView may take to draw the snapshot.
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(20);

type Answer = std::result::Result<Vec<u8>, String>;

/// The visible page, or the whole page with `full_page`, as PNG or JPEG at the request's quality,
/// cut at `max_height` CSS pixels.
pub async fn screenshot(window: &WebviewWindow, request: ShotRequest) -> Result<Vec<u8>> {
    let scale = window.scale_factor().unwrap_or(1.0);
    // The height limit in backing pixels (two per CSS pixel on a Retina screen).
    let limit = (f64::from(request.max_height.max(1)) * scale).round();
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
            if request.full_page {
                let done = RcBlock::new(move |pdf: *mut NSData, error: *mut NSError| {
                    // SAFETY: WebKit's arguments to this handler, during its call.
                    let result = unsafe {
                        handed(pdf, error, "no PDF", |pdf| png_of_pdf(pdf, scale, limit))
                    };
                    answer(result);
                });
                // SAFETY: main thread; no configuration is the whole page; WebKit copies the
                // block.
                unsafe { view.createPDFWithConfiguration_completionHandler(None, &done) };
                return;
            }
            // SAFETY: a new configuration object, used on the main thread.
            let configuration = unsafe { WKSnapshotConfiguration::new(mtm) };
            let done = RcBlock::new(move |image: *mut NSImage, error: *mut NSError| {
                // SAFETY: WebKit's arguments to this handler, during its call.
                answer(unsafe { handed(image, error, "no image", png_of) });
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
    tokio::task::spawn_blocking(move || {
        let image = image::load_from_memory(&png)
            .map_err(|e| BrowserError::Protocol(format!("WKWebView's snapshot: {e}")))?
            .to_rgb8();
        let limit = limit as u32;
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

/// What WebKit handed a completion handler, `convert`ed: the value, else its error, else `nothing`.
///
/// # Safety
/// `value` and `error` are each null or live for this call, as WebKit hands them to a completion
/// handler (on the main thread, valid for the handler's call).
unsafe fn handed<T>(
    value: *mut T,
    error: *mut NSError,
    nothing: &str,
    convert: impl FnOnce(&T) -> Answer,
) -> Answer {
    // SAFETY: the caller's contract above.
    match unsafe { (value.as_ref(), error.as_ref()) } {
        (Some(value), _) => convert(value),
        (None, Some(error)) => Err(error.localizedDescription().to_string()),
        (None, None) => Err(format!("WKWebView gave {nothing}")),
    }
}

/// The top of a one-page PDF, `limit` pixels at most, drawn at `scale` pixels per point (a PDF
/// point of WebKit's is a CSS pixel), as PNG bytes.
fn png_of_pdf(pdf: &NSData, scale: f64, limit: f64) -> Answer {
    let page = NSPDFImageRep::imageRepWithData(pdf).ok_or("WebKit's PDF is unreadable")?;
    let size = page.bounds().size;
    let (full_width, full_height) = (size.width * scale, size.height * scale);
    let (width, height) = (full_width.round(), full_height.min(limit).round());
    if width < 1.0 || height < 1.0 {
        return Err("the page has no size".into());
    }
    // SAFETY: null planes make AppKit allocate the bitmap itself; 8-bit RGBA, rows as wide as
    // it likes (0).
    let bitmap = unsafe {
        NSBitmapImageRep::initWithBitmapDataPlanes_pixelsWide_pixelsHigh_bitsPerSample_samplesPerPixel_hasAlpha_isPlanar_colorSpaceName_bytesPerRow_bitsPerPixel(
            NSBitmapImageRep::alloc(),
            std::ptr::null_mut(),
            width as isize,
            height as isize,
            8,
            4,
            true,
            false,
            NSDeviceRGBColorSpace,
            0,
            0,
        )
    }
    .ok_or("no bitmap of that size could be made")?;
    let context = NSGraphicsContext::graphicsContextWithBitmapImageRep(&bitmap)
        .ok_or("the bitmap cannot be drawn into")?;
    NSGraphicsContext::saveGraphicsState_class();
    NSGraphicsContext::setCurrentContext(Some(&context));
    // AppKit's origin is the bottom left: the page is placed so that its top meets the bitmap's,
    // and whatever lies below the limit falls outside it.
    let drawn = page.drawInRect(NSRect::new(
        NSPoint::new(0.0, height - full_height),
        NSSize::new(full_width, full_height),
    ));
    context.flushGraphics();
    NSGraphicsContext::restoreGraphicsState_class();
    if !drawn {
        return Err("AppKit could not draw WebKit's PDF".into());
    }
    png_of_bitmap(&bitmap)
}

/// The image's best bitmap as PNG bytes.
fn png_of(image: &NSImage) -> Answer {
    let tiff = image
        .TIFFRepresentation()
        .ok_or("the snapshot has no bitmap")?;
    let bitmap =
        NSBitmapImageRep::imageRepWithData(&tiff).ok_or("the snapshot's bitmap is unreadable")?;
    png_of_bitmap(&bitmap)
}

/// A bitmap as PNG bytes.
fn png_of_bitmap(bitmap: &NSBitmapImageRep) -> Answer {
    // SAFETY: an empty property dictionary is valid for every file type.
    let png = unsafe {
        bitmap.representationUsingType_properties(NSBitmapImageFileType::PNG, &NSDictionary::new())
    }
    .ok_or("the snapshot could not be encoded")?;
    Ok(png.to_vec())
}
