//! Simulated input through enigo: pointer moves, clicks, drags and scrolls, Unicode text and key
//! chords (`ctrl+shift+t`). On Linux enigo talks XTEST on the display named in the config (not
//! `$DISPLAY` unless none is given). enigo calls block, so [`Input`] runs them on a blocking
//! thread, one at a time.

use std::sync::{Arc, Mutex};

use enigo::{Axis, Button, Coordinate, Direction, Enigo, Key, Keyboard, Mouse, Settings};

use crate::error::{Error, Result};
use crate::geometry::Point;

/// Which mouse button.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MouseButton {
    Left,
    Right,
    Middle,
}

impl MouseButton {
    fn to_enigo(self) -> Button {
        match self {
            MouseButton::Left => Button::Left,
            MouseButton::Right => Button::Right,
            MouseButton::Middle => Button::Middle,
        }
    }
}

/// Parses a key chord: modifiers and one key joined by `+` (`ctrl+a`, `alt+F4`, `Return`).
pub fn parse_chord(chord: &str) -> Result<Vec<Key>> {
    let parts: Vec<&str> = chord
        .split('+')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    // A lone "+" means the plus key.
    if parts.is_empty() {
        return if chord.contains('+') {
            Ok(vec![Key::Unicode('+')])
        } else {
            Err(Error::InvalidInput("empty key chord".into()))
        };
    }
    parts.iter().map(|p| parse_key(p)).collect()
}

fn parse_key(name: &str) -> Result<Key> {
    let mut characters = name.chars();
    if let (Some(c), None) = (characters.next(), characters.next()) {
        // One character: the key that types it (lower-case letters, so `ctrl+A` is ctrl+a).
        return Ok(Key::Unicode(c.to_ascii_lowercase()));
    }
    let lower = name.to_ascii_lowercase();
    let key = match lower.as_str() {
        "ctrl" | "control" => Key::Control,
        "shift" => Key::Shift,
        "alt" | "option" => Key::Alt,
        "super" | "meta" | "cmd" | "command" | "win" | "windows" => Key::Meta,
        "enter" | "return" => Key::Return,
        "tab" => Key::Tab,
        "esc" | "escape" => Key::Escape,
        "backspace" => Key::Backspace,
        "delete" | "del" => Key::Delete,
        "space" => Key::Space,
        "home" => Key::Home,
        "end" => Key::End,
        "pageup" | "page_up" => Key::PageUp,
        "pagedown" | "page_down" => Key::PageDown,
        "up" | "arrowup" => Key::UpArrow,
        "down" | "arrowdown" => Key::DownArrow,
        "left" | "arrowleft" => Key::LeftArrow,
        "right" | "arrowright" => Key::RightArrow,
        "capslock" => Key::CapsLock,
        "plus" => Key::Unicode('+'),
        "minus" => Key::Unicode('-'),
        "f1" => Key::F1,
        "f2" => Key::F2,
        "f3" => Key::F3,
        "f4" => Key::F4,
        "f5" => Key::F5,
        "f6" => Key::F6,
        "f7" => Key::F7,
        "f8" => Key::F8,
        "f9" => Key::F9,
        "f10" => Key::F10,
        "f11" => Key::F11,
        "f12" => Key::F12,
        _ => {
            return Err(Error::InvalidInput(format!(
                "unknown key `{name}`: use a single character, a modifier (ctrl, shift, alt, super) \
                 or a named key (enter, tab, escape, backspace, delete, space, home, end, pageup, \
                 pagedown, up, down, left, right, f1-f12), joined with + (ctrl+shift+t)"
            )));
        }
    };
    Ok(key)
}

/// The input device. Cheap to clone; connects on first use.
#[derive(Clone)]
pub struct Input {
    x11_display: Option<String>,
    enigo: Arc<Mutex<Option<Enigo>>>,
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input")
            .field("x11_display", &self.x11_display)
            .finish_non_exhaustive()
    }
}

fn input_error(error: impl std::fmt::Display) -> Error {
    Error::Input(error.to_string())
}

/// Runs `work` with X11's per-event XTest delay off, restoring it afterwards (other
/// platforms have no such delay).
fn without_delay<T>(e: &mut Enigo, work: impl FnOnce(&mut Enigo) -> T) -> T {
    #[cfg(target_os = "linux")]
    {
        let delay = e.delay();
        e.set_delay(0);
        let result = work(e);
        e.set_delay(delay);
        result
    }
    #[cfg(not(target_os = "linux"))]
    work(e)
}

impl Input {
    pub fn new(x11_display: Option<String>) -> Input {
        Input {
            x11_display,
            enigo: Arc::new(Mutex::new(None)),
        }
    }

    /// Runs `work` with the device on a blocking thread.
    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Enigo) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let slot = self.enigo.clone();
        let display = self.x11_display.clone();
        tokio::task::spawn_blocking(move || {
            let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                let settings = Settings {
                    x11_display: display,
                    // Milliseconds between key events: enough for X clients to keep up.
                    linux_delay: 4,
                    ..Settings::default()
                };
                *slot =
                    Some(Enigo::new(&settings).map_err(|e| {
                        Error::NoDisplay(format!("cannot open the input device: {e}"))
                    })?);
            }
            let enigo = slot.as_mut().expect("set above");
            work(enigo)
        })
        .await
        .map_err(|e| Error::Input(format!("input worker failed: {e}")))?
    }

    pub async fn move_to(&self, at: Point) -> Result<()> {
        self.with(move |e| {
            e.move_mouse(at.x, at.y, Coordinate::Abs)
                .map_err(input_error)
        })
        .await
    }

    /// Moves to `at` and clicks `count` times.
    ///
    /// The presses and releases go out without XTest's per-event delay, so the server
    /// stamps them in one go: with a delay each event waits on a server timer, and a
    /// server starved of CPU can let the clicks of a double click drift further apart than
    /// the application's double-click time, which then sees two single clicks.
    pub async fn click(&self, at: Point, button: MouseButton, count: u32) -> Result<()> {
        self.with(move |e| {
            e.move_mouse(at.x, at.y, Coordinate::Abs)
                .map_err(input_error)?;
            without_delay(e, |e| {
                for _ in 0..count.max(1) {
                    e.button(button.to_enigo(), Direction::Click)
                        .map_err(input_error)?;
                }
                Ok(())
            })
        })
        .await
    }

    /// Presses at `from`, moves to `to` in steps (so applications see motion), releases.
    pub async fn drag(&self, from: Point, to: Point) -> Result<()> {
        self.with(move |e| {
            e.move_mouse(from.x, from.y, Coordinate::Abs)
                .map_err(input_error)?;
            e.button(Button::Left, Direction::Press)
                .map_err(input_error)?;
            let steps = 10;
            for step in 1..=steps {
                let x = from.x + (to.x - from.x) * step / steps;
                let y = from.y + (to.y - from.y) * step / steps;
                e.move_mouse(x, y, Coordinate::Abs).map_err(input_error)?;
            }
            e.button(Button::Left, Direction::Release)
                .map_err(input_error)
        })
        .await
    }

    /// Scrolls at `at`: positive `dy` scrolls down, positive `dx` right (in wheel notches).
    pub async fn scroll(&self, at: Point, dx: i32, dy: i32) -> Result<()> {
        self.with(move |e| {
            e.move_mouse(at.x, at.y, Coordinate::Abs)
                .map_err(input_error)?;
            if dy != 0 {
                e.scroll(dy, Axis::Vertical).map_err(input_error)?;
            }
            if dx != 0 {
                e.scroll(dx, Axis::Horizontal).map_err(input_error)?;
            }
            Ok(())
        })
        .await
    }

    /// Types Unicode text into whatever has keyboard focus.
    pub async fn type_text(&self, text: &str) -> Result<()> {
        let text = text.to_string();
        self.with(move |e| e.text(&text).map_err(input_error)).await
    }

    /// Presses a chord: modifiers down in order, the last key clicked, modifiers up in reverse.
    pub async fn key(&self, chord: &str) -> Result<()> {
        let keys = parse_chord(chord)?;
        self.with(move |e| {
            let (last, modifiers) = keys.split_last().expect("parse_chord never returns empty");
            let mut pressed = Vec::new();
            let mut result = Ok(());
            for key in modifiers {
                if let Err(error) = e.key(*key, Direction::Press) {
                    result = Err(input_error(error));
                    break;
                }
                pressed.push(*key);
            }
            if result.is_ok() {
                result = e.key(*last, Direction::Click).map_err(input_error);
            }
            // Always release what was pressed, even after an error.
            for key in pressed.iter().rev() {
                let _ = e.key(*key, Direction::Release);
            }
            result
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chords_parse_modifiers_named_keys_and_characters() {
        assert_eq!(
            parse_chord("ctrl+shift+T").unwrap(),
            [Key::Control, Key::Shift, Key::Unicode('t')]
        );
        assert_eq!(parse_chord("Return").unwrap(), [Key::Return]);
        assert_eq!(parse_chord("alt+F4").unwrap(), [Key::Alt, Key::F4]);
        assert_eq!(parse_chord("+").unwrap(), [Key::Unicode('+')]);
        assert_eq!(parse_chord("é").unwrap(), [Key::Unicode('é')]);
        let error = parse_chord("ctrl+hyper").unwrap_err().to_string();
        assert!(error.contains("unknown key `hyper`"), "{error}");
    }
}
