//! What the native profile asks of WebKitGTK itself on Linux: history with WebKit's own
//! back/forward list, snapshots of the view (viewport or full document) that work for a hidden
//! window too, and trusted input.
//!
//! Input: pointer and keys are GDK events of the page's own window, handed to GTK
//! (`gdk_event.rs`), which passes them to WebKit as it passes a person's input: the page gets
//! trusted events (`isTrusted`, a user activation) and WebKit's own editing runs. They go to
//! that window only, whether it is covered or on another workspace, and never move the person's
//! pointer or reach the window they are using. A hidden or minimized window (WebKit takes no
//! input there), a character the keyboard map has no key for, and `fill` (which inserts at once)
//! get DOM events synthesized in the page instead (`input.js`).

use std::time::{Duration, Instant};

use gtk::gdk;
use gtk::prelude::*;
use osprey_browser::driver::{HistoryStep, Keys, Pointer, ShotRequest, parse_press};
use osprey_browser::guard::Refusals;
use osprey_browser::{BrowserError, Result};
use tauri::WebviewWindow;
use webkit2gtk::{FileChooserRequestExt, SnapshotOptions, SnapshotRegion, WebViewExt};

use super::{NativeDriver, POLL, encode_image, on_platform_webview, shell};

#[path = "gdk_event.rs"]
mod gdk_event;

/// How long the page may take to receive input handed to GTK.
const INPUT_ARRIVES: Duration = Duration::from_secs(5);

/// The engine, as `status` names it.
pub const NAME: &str = "WebKitGTK";

/// Runs a webview call on the main thread and returns its answer.
async fn on_webview<T: Send + 'static>(
    window: &WebviewWindow,
    timeout: Duration,
    f: impl FnOnce(&webkit2gtk::WebView, tokio::sync::oneshot::Sender<T>) + Send + 'static,
) -> Result<T> {
    on_platform_webview(
        window,
        timeout,
        "the webview did not answer",
        move |platform, send| f(&platform.inner(), send),
    )
    .await
}

/// What a page may not open now that the agent's clicks are trusted: a file chooser (a dialog
/// in the person's way that the agent cannot use; nothing is uploaded from the native profile)
/// and full screen (it would cover the person's screen). Each refusal is reported with the
/// next tool result.
pub fn restrict(window: &WebviewWindow, refusals: Refusals) -> Result<()> {
    window
        .with_webview(move |platform| {
            let view = platform.inner();
            view.connect_run_file_chooser(move |view, request| {
                request.cancel();
                let page = view.uri().map(|uri| uri.to_string()).unwrap_or_default();
                refusals.push(format!(
                    "{page}: a file chooser (the native profile uploads no files)"
                ));
                true
            });
            view.connect_enter_fullscreen(|_| true);
        })
        .map_err(shell)
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

/// A snapshot's pixels as the engine hands them over: rows of `stride` bytes, four bytes a
/// pixel in BGRA order (cairo's ARGB32 on little-endian machines, premultiplied; pages are
/// opaque, so alpha is dropped).
struct Pixels {
    width: u32,
    height: u32,
    stride: usize,
    data: Vec<u8>,
}

/// Encodes the pixels as PNG, or JPEG at `quality`, cut at `max_height` rows.
fn encode(pixels: &Pixels, quality: Option<u8>, max_height: u32) -> Result<Vec<u8>> {
    let height = pixels.height.min(max_height.max(1));
    let mut rgb = Vec::with_capacity(pixels.width as usize * height as usize * 3);
    for row in 0..height as usize {
        let line = &pixels.data[row * pixels.stride..][..pixels.width as usize * 4];
        for px in line.chunks_exact(4) {
            rgb.extend_from_slice(&[px[2], px[1], px[0]]);
        }
    }
    let image = image::RgbImage::from_raw(pixels.width, height, rgb)
        .ok_or_else(|| BrowserError::Protocol("the snapshot has the wrong size".into()))?;
    encode_image(&image, quality)
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

/// One key for the window system: a GDK keyval and the modifiers held with it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stroke {
    keyval: u32,
    modifiers: gdk::ModifierType,
}

/// The GDK key name of a key whose DOM name (as `press` takes it) differs; the others (Tab,
/// Escape, Delete, Home, End, Insert, F1...) are the same in both.
fn gdk_name(key: &str) -> &str {
    match key {
        "Enter" => "Return",
        "Backspace" => "BackSpace",
        "ArrowLeft" => "Left",
        "ArrowRight" => "Right",
        "ArrowUp" => "Up",
        "ArrowDown" => "Down",
        "PageUp" => "Page_Up",
        "PageDown" => "Page_Down",
        other => other,
    }
}

/// A keyval GDK knows (an unknown name or character gives `VoidSymbol` or 0).
fn known(key: gdk::keys::Key) -> Option<u32> {
    (*key != *gdk::keys::constants::VoidSymbol && *key != 0).then_some(*key)
}

/// The key strokes for `keys`, or None when they are not sent as keys (`fill` inserts its text
/// at once, as an input method commits it) or a key has no keyval.
fn strokes(keys: &Keys) -> Option<Vec<Stroke>> {
    match keys {
        Keys::Insert(_) => None,
        Keys::Type(text) => text
            .chars()
            .map(|ch| {
                let key = if ch == '\n' {
                    gdk::keys::Key::from_name("Return")
                } else {
                    gdk::keys::Key::from_unicode(ch)
                };
                known(key).map(|keyval| Stroke {
                    keyval,
                    modifiers: gdk::ModifierType::empty(),
                })
            })
            .collect(),
        Keys::Press(raw) => {
            let (held, key) = parse_press(raw).ok()?;
            let mut modifiers = gdk::ModifierType::empty();
            for (on, mask) in [
                (held.ctrl, gdk::ModifierType::CONTROL_MASK),
                (held.shift, gdk::ModifierType::SHIFT_MASK),
                (held.alt, gdk::ModifierType::MOD1_MASK),
                (held.meta, gdk::ModifierType::SUPER_MASK),
            ] {
                if on {
                    modifiers |= mask;
                }
            }
            let mut chars = key.chars();
            let key = match (chars.next(), chars.next()) {
                (Some(ch), None) => gdk::keys::Key::from_unicode(ch),
                _ => gdk::keys::Key::from_name(gdk_name(&key)),
            };
            known(key).map(|keyval| vec![Stroke { keyval, modifiers }])
        }
    }
}

/// Hands `strokes` to GTK as key events of the page's window, after giving the webview the
/// window's keyboard focus: GTK passes them to WebKit as it passes a person's keys. False, with
/// nothing sent, when a key has no key code in the keyboard map.
fn send_strokes(view: &webkit2gtk::WebView, strokes: &[Stroke]) -> bool {
    let Some(toplevel) = view.toplevel().and_then(|widget| widget.window()) else {
        return false;
    };
    let display = toplevel.display();
    let Some(keymap) = gdk::Keymap::for_display(&display) else {
        return false;
    };
    let mut events = Vec::with_capacity(strokes.len());
    for stroke in strokes {
        // The key of the first group that gives the keyval, unshifted or shifted, as GDK's own
        // key simulation picks it.
        let entries = keymap.entries_for_keyval(stroke.keyval);
        let Some(entry) = entries
            .iter()
            .find(|k| k.group() == 0 && k.level() <= 1)
            .or(entries.first())
        else {
            return false;
        };
        let mut modifiers = stroke.modifiers;
        if entry.level() == 1 {
            modifiers |= gdk::ModifierType::SHIFT_MASK;
        }
        events.push(gdk_event::KeyFields {
            keyval: stroke.keyval,
            keycode: u16::try_from(entry.keycode()).unwrap_or(0),
            group: u8::try_from(entry.group()).unwrap_or(0),
            modifiers,
        });
    }
    let keyboard = display.default_seat().and_then(|seat| seat.keyboard());
    view.grab_focus();
    for fields in events {
        for kind in [gdk::EventType::KeyPress, gdk::EventType::KeyRelease] {
            let mut event = gdk_event::key_event(kind, &toplevel, keyboard.as_ref(), fields);
            gtk::main_do_event(&mut event);
        }
    }
    true
}

/// Hands input to GTK with `send` (on the main thread; it returns how many counted events it
/// made, or None when it could not make them) and waits until the page has counted that many
/// trusted `counted` events (`keyup`, `mouseup` or `mousemove`, which `native.js` counts). False, with nothing sent or nothing arrived, when the input must be
/// the page's own events instead: the window is not on screen (WebKit takes no input there), or
/// `send` could not make it. `in_frame` is a page expression telling whether the input went into
/// a cross-origin frame, whose events the top page cannot count: arrival is then assumed.
async fn deliver(
    driver: &NativeDriver,
    window: &WebviewWindow,
    counted: &'static str,
    in_frame: &str,
    send: impl FnOnce(&webkit2gtk::WebView) -> Option<usize> + Send + 'static,
) -> Result<bool> {
    if !window.is_visible().unwrap_or(false) || window.is_minimized().unwrap_or(false) {
        return Ok(false);
    }
    let count =
        format!("globalThis.__osprey_native ? globalThis.__osprey_native.seen({counted:?}) : -1");
    let read = || async {
        driver
            .evaluate_on(window, &count, INPUT_ARRIVES)
            .await
            .map(|answer| answer.parse::<i64>().unwrap_or(-1))
    };
    let before = read().await?;
    if before < 0 {
        return Ok(false);
    }
    let sent = on_webview(window, INPUT_ARRIVES, move |view, answer| {
        let _ = answer.send(send(view));
    })
    .await?;
    let Some(sent) = sent else {
        return Ok(false);
    };
    let wanted = before + i64::try_from(sent).unwrap_or(i64::MAX);
    let deadline = Instant::now() + INPUT_ARRIVES;
    let mut seen = before;
    while Instant::now() < deadline {
        seen = read().await?;
        // A count below the first means the page changed (a navigation): it arrived.
        if seen >= wanted || seen < before {
            return Ok(true);
        }
        tokio::time::sleep(POLL).await;
    }
    if seen > before {
        return Err(BrowserError::Page(format!(
            "only {} of {sent} input events reached the page",
            seen - before
        )));
    }
    if driver.evaluate_on(window, in_frame, INPUT_ARRIVES).await? == "true" {
        return Ok(true);
    }
    tracing::warn!(
        "no trusted {counted} reached the page in {} s; the page's own events go instead",
        INPUT_ARRIVES.as_secs()
    );
    Ok(false)
}

/// Sends `keys` as trusted key events and waits until the page has received them. False when
/// they must be DOM events instead (see `deliver`).
pub async fn trusted_keys(
    driver: &NativeDriver,
    window: &WebviewWindow,
    keys: &Keys,
) -> Result<bool> {
    let Some(strokes) = strokes(keys) else {
        return Ok(false);
    };
    deliver(
        driver,
        window,
        "keyup",
        "document.activeElement instanceof HTMLIFrameElement",
        move |view| send_strokes(view, &strokes).then_some(strokes.len()),
    )
    .await
}

/// The pointer at `(x, y)` of the page (CSS pixels of the viewport) in the coordinates of the
/// view's GDK window, and that window.
fn pointer_place(view: &webkit2gtk::WebView, x: f64, y: f64) -> Option<(gdk::Window, f64, f64)> {
    let window = view.window()?;
    let zoom = view.zoom_level();
    let (mut wx, mut wy) = (x * zoom, y * zoom);
    if !view.has_window() {
        // The view draws into its parent's window: its place in it is its allocation.
        let place = view.allocation();
        wx += f64::from(place.x());
        wy += f64::from(place.y());
    }
    Some((window, wx, wy))
}

/// Moves the pointer to `(x, y)` of the page and, for a click, presses and releases the left
/// button there as many times as it counts, as trusted events. False when they must be the
/// page's own events instead (see `deliver`).
pub async fn trusted_pointer(
    driver: &NativeDriver,
    window: &WebviewWindow,
    action: Pointer,
) -> Result<bool> {
    let (x, y, clicks) = match action {
        Pointer::Click { x, y, count } => (x, y, u32::from(count.max(1))),
        Pointer::Move { x, y } => (x, y, 0),
    };
    let (counted, expected) = if clicks == 0 {
        ("mousemove", 1)
    } else {
        ("mouseup", clicks as usize)
    };
    let in_frame = format!("document.elementFromPoint({x}, {y}) instanceof HTMLIFrameElement");
    deliver(driver, window, counted, &in_frame, move |view| {
        let (target, wx, wy) = pointer_place(view, x, y)?;
        let pointer = target
            .display()
            .default_seat()
            .and_then(|seat| seat.pointer());
        let dispatch = |kind, button, state| {
            let mut event =
                gdk_event::pointer_event(kind, &target, pointer.as_ref(), (wx, wy), button, state);
            gtk::main_do_event(&mut event);
        };
        let none = gdk::ModifierType::empty();
        dispatch(gdk::EventType::MotionNotify, 0, none);
        for _ in 0..clicks {
            dispatch(gdk::EventType::ButtonPress, 1, none);
            dispatch(
                gdk::EventType::ButtonRelease,
                1,
                gdk::ModifierType::BUTTON1_MASK,
            );
        }
        Some(expected)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_encode_as_png_or_jpeg_and_are_cut_at_the_height_limit() {
        // 3 x 4 pixels, stride 16 (cairo pads rows), all pure red in BGRA.
        let mut data = Vec::new();
        for _ in 0..4 {
            for _ in 0..3 {
                data.extend_from_slice(&[0, 0, 255, 255]);
            }
            data.extend_from_slice(&[9, 9, 9, 9]);
        }
        let pixels = Pixels {
            width: 3,
            height: 4,
            stride: 16,
            data,
        };
        let png = encode(&pixels, None, 2).unwrap();
        let decoded = image::load_from_memory(&png).unwrap().to_rgb8();
        assert_eq!(decoded.dimensions(), (3, 2));
        assert_eq!(decoded.get_pixel(2, 1).0, [255, 0, 0]);
        let jpeg = encode(&pixels, Some(80), 100).unwrap();
        assert_eq!(&jpeg[..2], &[0xff, 0xd8]);
    }

    #[test]
    fn text_and_presses_become_keyvals_with_their_modifiers() {
        let typed = strokes(&Keys::Type("aZ\n".into())).unwrap();
        let vals: Vec<u32> = typed.iter().map(|s| s.keyval).collect();
        assert_eq!(vals, vec![0x61, 0x5a, 0xff0d]);
        assert!(typed.iter().all(|s| s.modifiers.is_empty()));

        let select_all = strokes(&Keys::Press("Control+a".into())).unwrap();
        assert_eq!(
            select_all,
            vec![Stroke {
                keyval: 0x61,
                modifiers: gdk::ModifierType::CONTROL_MASK
            }]
        );
        let back = strokes(&Keys::Press("Shift+Tab".into())).unwrap();
        assert_eq!(back[0].keyval, 0xff09);
        assert_eq!(back[0].modifiers, gdk::ModifierType::SHIFT_MASK);
        assert_eq!(
            strokes(&Keys::Press("Backspace".into())).unwrap()[0].keyval,
            0xff08
        );
        assert_eq!(
            strokes(&Keys::Press("PageDown".into())).unwrap()[0].keyval,
            0xff56
        );
        assert_eq!(
            strokes(&Keys::Press("Return".into())).unwrap()[0].keyval,
            0xff0d
        );

        // fill inserts its text at once; a key GDK does not know stays a DOM event.
        assert_eq!(strokes(&Keys::Insert("x".into())), None);
        assert_eq!(strokes(&Keys::Press("NoSuchKey".into())), None);
    }
}
