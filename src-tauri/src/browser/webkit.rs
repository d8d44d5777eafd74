//! What the native profile asks of WebKitGTK itself on Linux: history with WebKit's own
//! back/forward list, snapshots of the view (viewport or full document) that work for a hidden
//! window too, and trusted key events.
//!
//! Keys: typing and key presses are GDK key events of the page's own window, handed to GTK
//! (`gdk_key.rs`), which passes them to WebKit as it passes a person's keys: the page gets
//! trusted events (`isTrusted`, a user activation) and WebKit's own editing runs. They go to
//! that window only, whether it is covered, hidden or on another workspace, and never move the
//! person's pointer or reach the window they are using. A character the keyboard map has no key
//! for (and `fill`, which inserts at once) is DOM events synthesized in the page instead
//! (`input.js`).

use std::time::{Duration, Instant};

use gtk::gdk;
use gtk::prelude::*;
use osprey_browser::driver::{HistoryStep, Keys, ShotRequest};
use osprey_browser::{BrowserError, Result};
use serde_json::Value;
use tauri::WebviewWindow;
use webkit2gtk::{SnapshotOptions, SnapshotRegion, WebViewExt};

use super::{NativeDriver, POLL, Pixels, encode, parse_press, shell};

#[path = "gdk_key.rs"]
mod gdk_key;

/// How long the page may take to receive keys sent through the window system.
const KEYS_ARRIVE: Duration = Duration::from_secs(5);

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

/// One key for the window system: a GDK keyval and the modifiers held with it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stroke {
    keyval: u32,
    modifiers: gdk::ModifierType,
}

/// The GDK key name of a key as `press` names it (DOM names and the usual aliases).
fn key_name(key: &str) -> Option<&'static str> {
    Some(match key {
        "Enter" => "Return",
        "Tab" => "Tab",
        "Escape" => "Escape",
        "Backspace" => "BackSpace",
        "Delete" => "Delete",
        "ArrowLeft" => "Left",
        "ArrowRight" => "Right",
        "ArrowUp" => "Up",
        "ArrowDown" => "Down",
        "Home" => "Home",
        "End" => "End",
        "PageUp" => "Page_Up",
        "PageDown" => "Page_Down",
        "Insert" => "Insert",
        " " => "space",
        "F1" => "F1",
        "F2" => "F2",
        "F3" => "F3",
        "F4" => "F4",
        "F5" => "F5",
        "F6" => "F6",
        "F7" => "F7",
        "F8" => "F8",
        "F9" => "F9",
        "F10" => "F10",
        "F11" => "F11",
        "F12" => "F12",
        _ => return None,
    })
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
                (*key != *gdk::keys::constants::VoidSymbol && *key != 0).then_some(Stroke {
                    keyval: *key,
                    modifiers: gdk::ModifierType::empty(),
                })
            })
            .collect(),
        Keys::Press(raw) => {
            let (held, key) = parse_press(raw).ok()?;
            let mut modifiers = gdk::ModifierType::empty();
            for (name, mask) in [
                ("ctrl", gdk::ModifierType::CONTROL_MASK),
                ("shift", gdk::ModifierType::SHIFT_MASK),
                ("alt", gdk::ModifierType::MOD1_MASK),
                ("meta", gdk::ModifierType::SUPER_MASK),
            ] {
                if held.get(name).and_then(Value::as_bool) == Some(true) {
                    modifiers |= mask;
                }
            }
            let keyval = match key_name(&key) {
                Some(name) => *gdk::keys::Key::from_name(name),
                None => {
                    let mut chars = key.chars();
                    match (chars.next(), chars.next()) {
                        (Some(ch), None) => *gdk::keys::Key::from_unicode(ch),
                        _ => *gdk::keys::Key::from_name(&key),
                    }
                }
            };
            (keyval != *gdk::keys::constants::VoidSymbol && keyval != 0)
                .then_some(vec![Stroke { keyval, modifiers }])
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
        events.push(gdk_key::KeyFields {
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
            let mut event = gdk_key::key_event(kind, &toplevel, keyboard.as_ref(), fields);
            gtk::main_do_event(&mut event);
        }
    }
    true
}

/// Sends `keys` as trusted key events and waits until the page has received them. False when
/// they must be DOM events instead (see the module's note): nothing was sent then.
pub async fn trusted_keys(
    driver: &NativeDriver,
    window: &WebviewWindow,
    keys: &Keys,
) -> Result<bool> {
    let Some(strokes) = strokes(keys) else {
        return Ok(false);
    };
    // WebKit takes no keys in a window that is not on screen (`web.native_windows: "hidden"`).
    if !window.is_visible().unwrap_or(false) || window.is_minimized().unwrap_or(false) {
        return Ok(false);
    }
    let count = "globalThis.__osprey_native ? globalThis.__osprey_native.keys() : -1";
    let before: i64 = driver
        .evaluate_on(window, count, KEYS_ARRIVE)
        .await?
        .parse()
        .unwrap_or(-1);
    if before < 0 {
        return Ok(false);
    }
    let sent = on_webview(window, KEYS_ARRIVE, move |view, send| {
        let _ = send.send(send_strokes(view, &strokes).then_some(strokes.len()));
    })
    .await?;
    let Some(sent) = sent else {
        return Ok(false);
    };
    // The page counts the trusted key releases it sees; the keys arrived when the count has
    // grown by as many.
    let deadline = Instant::now() + KEYS_ARRIVE;
    let wanted = before + i64::try_from(sent).unwrap_or(i64::MAX);
    let mut seen = before;
    while Instant::now() < deadline {
        seen = driver
            .evaluate_on(window, count, KEYS_ARRIVE)
            .await?
            .parse()
            .unwrap_or(-1);
        if seen >= wanted || seen < before {
            return Ok(true);
        }
        tokio::time::sleep(POLL).await;
    }
    if seen > before {
        return Err(BrowserError::Page(format!(
            "only {} of {sent} keys reached the page",
            seen - before
        )));
    }
    // None arrived. Keys typed into a cross-origin frame are not counted by the top page, so
    // with the focus in a frame they are taken as typed; otherwise the window took none (it is
    // not on screen after all) and the page's own events go instead.
    let in_frame = driver
        .evaluate_on(
            window,
            "document.activeElement instanceof HTMLIFrameElement",
            KEYS_ARRIVE,
        )
        .await?;
    Ok(in_frame == "true")
}

#[cfg(test)]
mod tests {
    use super::*;

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
