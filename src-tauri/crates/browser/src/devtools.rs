//! Input and screenshots over the Chrome DevTools Protocol, for every engine that speaks it: the
//! managed profile's Chromium (through chromiumoxide's page) and, in the desktop app, the native
//! profile's WebView2 (through its `CallDevToolsProtocolMethod`). `Input.dispatch*` events are
//! trusted: the page sees a person's clicks and keys, with user activation.

use std::future::Future;

use base64::Engine;
pub use chromiumoxide::Command;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
/// The Page domain's commands, for engines that set up their own session.
pub use chromiumoxide::cdp::browser_protocol::page;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, GetLayoutMetricsParams, Viewport,
};
use chromiumoxide::page::Page;

use crate::driver::{Keys, Pointer, ShotRequest, parse_press};
use crate::error::{BrowserError, Result};

/// One DevTools session: sends a command to the page and returns its result.
pub trait DevTools: Sync {
    fn execute<C>(&self, command: C) -> impl Future<Output = Result<C::Response>> + Send
    where
        C: Command + Send + 'static,
        C::Response: Send;
}

impl DevTools for Page {
    async fn execute<C>(&self, command: C) -> Result<C::Response>
    where
        C: Command + Send + 'static,
        C::Response: Send,
    {
        Page::execute(self, command)
            .await
            .map(|answer| answer.result)
            .map_err(|e| BrowserError::Protocol(e.to_string()))
    }
}

/// Moves the mouse to `(x, y)` of the viewport (CSS pixels) and, for a click, presses and
/// releases the left button there (a click counts at least one).
pub async fn pointer(devtools: &impl DevTools, action: Pointer) -> Result<()> {
    let (x, y, count) = match action {
        Pointer::Click { x, y, count } => (x, y, Some(count.max(1))),
        Pointer::Move { x, y } => (x, y, None),
    };
    let mut moved = DispatchMouseEventParams::new(DispatchMouseEventType::MouseMoved, x, y);
    moved.button = Some(MouseButton::None);
    devtools.execute(moved).await?;
    if let Some(count) = count {
        for kind in [
            DispatchMouseEventType::MousePressed,
            DispatchMouseEventType::MouseReleased,
        ] {
            let mut p = DispatchMouseEventParams::new(kind, x, y);
            p.button = Some(MouseButton::Left);
            p.buttons = Some(1);
            p.click_count = Some(i64::from(count));
            devtools.execute(p).await?;
        }
    }
    Ok(())
}

/// Types, presses or inserts (as an input method commits) into the focused element.
pub async fn keys(devtools: &impl DevTools, keys: Keys) -> Result<()> {
    match keys {
        Keys::Insert(text) => {
            devtools.execute(InsertTextParams::new(text)).await?;
        }
        Keys::Type(text) => {
            for c in text.chars() {
                let key = if c == '\n' {
                    Key::press("Enter")?
                } else {
                    Key::character(c)
                };
                key.stroke(devtools).await?;
            }
        }
        Keys::Press(name) => Key::press(&name)?.stroke(devtools).await?,
    }
    Ok(())
}

/// The viewport, or the whole page up to `max_height`, as PNG or JPEG.
pub async fn screenshot(devtools: &impl DevTools, request: ShotRequest) -> Result<Vec<u8>> {
    let mut params = CaptureScreenshotParams::default();
    match request.jpeg_quality {
        Some(q) => {
            params.format = Some(CaptureScreenshotFormat::Jpeg);
            params.quality = Some(i64::from(q));
        }
        None => params.format = Some(CaptureScreenshotFormat::Png),
    }
    if request.full_page {
        let metrics = devtools.execute(GetLayoutMetricsParams::default()).await?;
        let size = &metrics.css_content_size;
        params.capture_beyond_viewport = Some(true);
        params.clip = Some(Viewport {
            x: 0.0,
            y: 0.0,
            width: size.width.ceil(),
            height: size.height.ceil().min(f64::from(request.max_height)),
            scale: 1.0,
        });
    }
    let shot = devtools.execute(params).await?;
    let data: &str = shot.data.as_ref();
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| BrowserError::Protocol(format!("the screenshot's base64: {e}")))
}

/// One key as the protocol describes it.
#[derive(Debug, PartialEq)]
struct Key {
    /// Alt 1, Control 2, Meta 4, Shift 8.
    modifiers: i64,
    key: String,
    code: String,
    /// The Windows virtual key code; 0 for none.
    vk: i64,
    /// What the key types, if anything (none while Control or Meta is held).
    text: Option<String>,
}

impl Key {
    fn character(c: char) -> Key {
        Key {
            modifiers: 0,
            key: c.to_string(),
            code: String::new(),
            vk: 0,
            text: Some(c.to_string()),
        }
    }

    /// A `Keys::Press` name (`driver::parse_press`): one character or a named key, after
    /// `+`-joined modifiers.
    fn press(name: &str) -> Result<Key> {
        let (held, key) = parse_press(name)?;
        let modifiers = i64::from(held.alt)
            | i64::from(held.ctrl) << 1
            | i64::from(held.meta) << 2
            | i64::from(held.shift) << 3;
        // Control and Meta chords type nothing.
        let types = !held.ctrl && !held.meta;
        let key = if key == " " { "Space".to_string() } else { key };
        let named: &[(&str, i64, Option<&str>)] = &[
            ("Enter", 13, Some("\r")),
            ("Tab", 9, None),
            ("Escape", 27, None),
            ("Backspace", 8, None),
            ("Delete", 46, None),
            ("ArrowUp", 38, None),
            ("ArrowDown", 40, None),
            ("ArrowLeft", 37, None),
            ("ArrowRight", 39, None),
            ("Home", 36, None),
            ("End", 35, None),
            ("PageUp", 33, None),
            ("PageDown", 34, None),
            ("Space", 32, Some(" ")),
        ];
        if let Some((k, vk, text)) = named.iter().find(|(k, ..)| k.eq_ignore_ascii_case(&key)) {
            return Ok(Key {
                modifiers,
                key: k.to_string(),
                code: k.to_string(),
                vk: *vk,
                text: text.filter(|_| types).map(str::to_string),
            });
        }
        let mut chars = key.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => {
                let upper = c.to_ascii_uppercase();
                let code = if c.is_ascii_alphabetic() {
                    format!("Key{upper}")
                } else if c.is_ascii_digit() {
                    format!("Digit{c}")
                } else {
                    String::new()
                };
                Ok(Key {
                    modifiers,
                    key: c.to_string(),
                    code,
                    vk: upper as i64,
                    text: types.then(|| c.to_string()),
                })
            }
            _ => Err(BrowserError::Invalid(format!(
                "unknown key `{key}`; use one character or Enter, Tab, Escape, Backspace, \
                 Delete, ArrowUp/Down/Left/Right, Home, End, PageUp, PageDown, Space"
            ))),
        }
    }

    fn event(&self, kind: DispatchKeyEventType, with_text: bool) -> DispatchKeyEventParams {
        let mut p = DispatchKeyEventParams::new(kind);
        p.modifiers = Some(self.modifiers);
        p.key = Some(self.key.clone());
        if !self.code.is_empty() {
            p.code = Some(self.code.clone());
        }
        if self.vk != 0 {
            p.windows_virtual_key_code = Some(self.vk);
            p.native_virtual_key_code = Some(self.vk);
        }
        if let Some(text) = self.text.as_ref().filter(|_| with_text) {
            p.text = Some(text.clone());
            p.unmodified_text = Some(text.clone());
        }
        p
    }

    /// Down (a `keyDown` that types, or a `rawKeyDown` that does not), then up.
    async fn stroke(&self, devtools: &impl DevTools) -> Result<()> {
        let down = if self.text.is_some() {
            DispatchKeyEventType::KeyDown
        } else {
            DispatchKeyEventType::RawKeyDown
        };
        devtools.execute(self.event(down, true)).await?;
        devtools
            .execute(self.event(DispatchKeyEventType::KeyUp, false))
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chords_type_nothing_and_named_keys_carry_their_codes() {
        let enter = Key::press("Enter").unwrap();
        assert_eq!((enter.vk, enter.text.as_deref()), (13, Some("\r")));
        let select_all = Key::press("Control+a").unwrap();
        assert_eq!(select_all.modifiers, 2);
        assert_eq!(select_all.code, "KeyA");
        assert_eq!(select_all.vk, 'A' as i64);
        assert_eq!(select_all.text, None);
        let shifted = Key::press("shift+Tab").unwrap();
        assert_eq!((shifted.modifiers, shifted.text), (8, None));
        assert_eq!(Key::press("Shift+1").unwrap().text.as_deref(), Some("1"));
        let error = Key::press("Hyper+x").unwrap_err().to_string();
        assert!(
            error.contains("`hyper` in `Hyper+x` is not a modifier"),
            "{error}"
        );
        // The aliases every profile takes.
        assert_eq!(Key::press("Return").unwrap(), enter);
        assert_eq!(Key::press("Option+Up").unwrap().modifiers, 1);
        assert_eq!(Key::press("Up").unwrap().vk, 38);
        let space = Key::press("space").unwrap();
        assert_eq!(
            (space.code.as_str(), space.text.as_deref()),
            ("Space", Some(" "))
        );
        let error = Key::press("F13").unwrap_err().to_string();
        assert!(error.contains("unknown key `F13`"), "{error}");
    }

    #[test]
    fn the_up_event_types_nothing() {
        let a = Key::character('a');
        let down = a.event(DispatchKeyEventType::KeyDown, true);
        assert_eq!(down.text.as_deref(), Some("a"));
        let up = a.event(DispatchKeyEventType::KeyUp, false);
        assert_eq!((up.text, up.key.as_deref()), (None, Some("a")));
    }
}
