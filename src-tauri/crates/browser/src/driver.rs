//! The [`Driver`] trait: what a browser profile must offer so the `web` tool's browser actions
//! can run on it. It is deliberately small (pages, navigation, running the page script, input,
//! screenshots); everything else (snapshots, refs, fill, select, wait, text) is built once on top
//! of it in [`crate::actions`], with the one page script both profiles share.
//!
//! The managed profile implements it over the DevTools protocol; the native profile (a Tauri
//! webview in the desktop shell) implements it by injecting scripts and returning their results
//! as JSON strings over its own channel.

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::error::{BrowserError, Result};

/// One open page (tab).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PageInfo {
    /// Stable for the page's life; what `target_id` names.
    pub target_id: String,
    pub url: String,
    pub title: String,
    /// The page actions go to when a call names no `target_id`.
    pub current: bool,
}

/// The state of a profile, for `status`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DriverStatus {
    pub running: bool,
    /// The browser's product and version, when running.
    pub version: Option<String>,
    /// Where the profile keeps cookies and storage.
    pub profile_dir: Option<String>,
    pub headless: bool,
    /// The browser program, when the profile starts one.
    pub executable: Option<String>,
    pub pages: usize,
}

/// Which JavaScript world a script runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum World {
    /// Osprey's own world: the page's scripts cannot see or change what runs there (an isolated
    /// world in Chromium). Profiles without isolated worlds use the page's.
    Osprey,
    /// The page's own world, for `evaluate`: page globals are visible.
    Page,
}

/// A step through the page's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryStep {
    Back,
    Forward,
    Reload,
}

/// How far a navigation must get before it counts as done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadState {
    /// The new document is committed.
    Commit,
    DomContentLoaded,
    Load,
}

impl LoadState {
    pub fn parse(raw: &str) -> Option<LoadState> {
        match raw.to_ascii_lowercase().as_str() {
            "commit" => Some(LoadState::Commit),
            "domcontentloaded" | "interactive" => Some(LoadState::DomContentLoaded),
            "load" | "complete" => Some(LoadState::Load),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LoadState::Commit => "commit",
            LoadState::DomContentLoaded => "domcontentloaded",
            LoadState::Load => "load",
        }
    }

    /// True when a document whose `readyState` is `ready` has reached this state.
    pub fn reached_by(self, ready: &str) -> bool {
        match self {
            LoadState::Commit => true,
            LoadState::DomContentLoaded => ready == "interactive" || ready == "complete",
            LoadState::Load => ready == "complete",
        }
    }
}

/// A pointer action at a point of the page's viewport (CSS pixels).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pointer {
    Click { x: f64, y: f64, count: u8 },
    Move { x: f64, y: f64 },
}

/// The modifiers held for a key press.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    pub ctrl: bool,
    pub shift: bool,
    pub alt: bool,
    pub meta: bool,
}

/// A `Keys::Press` name (`Control+Shift+a`, `Return`, `+`) as the modifiers held and the key,
/// one character or a DOM key name; the usual aliases become DOM names (Return, Esc, Space, Del,
/// Up/Down/Left/Right; Option is Alt, Cmd/Command/Super is Meta). Every profile reads key names
/// through this, so a name that works in one works in all.
pub fn parse_press(raw: &str) -> Result<(Held, String)> {
    let mut held = Held::default();
    let parts: Vec<&str> = if raw == "+" {
        vec!["+"]
    } else {
        raw.split('+').collect()
    };
    let (key, modifiers) = parts
        .split_last()
        .filter(|(key, _)| !key.is_empty())
        .ok_or_else(|| BrowserError::Invalid(format!("`{raw}` is not a key")))?;
    for m in modifiers {
        let flag = match m.to_ascii_lowercase().as_str() {
            "control" | "ctrl" => &mut held.ctrl,
            "shift" => &mut held.shift,
            "alt" | "option" => &mut held.alt,
            "meta" | "cmd" | "command" | "super" => &mut held.meta,
            other => {
                return Err(BrowserError::Invalid(format!(
                    "`{other}` in `{raw}` is not a modifier (Control, Shift, Alt, Meta)"
                )));
            }
        };
        *flag = true;
    }
    let key = match key.to_ascii_lowercase().as_str() {
        "return" => "Enter".to_string(),
        "esc" => "Escape".to_string(),
        "space" => " ".to_string(),
        "del" => "Delete".to_string(),
        "up" => "ArrowUp".to_string(),
        "down" => "ArrowDown".to_string(),
        "left" => "ArrowLeft".to_string(),
        "right" => "ArrowRight".to_string(),
        _ => key.to_string(),
    };
    Ok((held, key))
}

/// Keyboard input to the focused element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keys {
    /// Insert text at once, as an input method would (fill).
    Insert(String),
    /// Type text one character at a time, with key events for each (type).
    Type(String),
    /// Press one key, with modifiers: `Enter`, `Control+a`.
    Press(String),
}

/// What a screenshot covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShotRequest {
    pub full_page: bool,
    /// JPEG at this quality instead of PNG.
    pub jpeg_quality: Option<u8>,
    /// The tallest image taken, in CSS pixels (full-page shots are cut there).
    pub max_height: u32,
}

/// A browser profile. Object-safe: every async method returns a boxed future. `target` is a
/// page's `target_id`, or `None` for the current page (a profile opens one when there is none).
pub trait Driver: Send + Sync + 'static {
    /// `managed`, `native`, `chrome`.
    fn profile(&self) -> &str;
    fn status(&self) -> BoxFuture<'_, Result<DriverStatus>>;
    /// Starts the browser when it is not running; a no-op otherwise.
    fn launch(&self) -> BoxFuture<'_, Result<DriverStatus>>;
    /// Stops the browser (the profile's data stays).
    fn close(&self) -> BoxFuture<'_, Result<()>>;
    fn pages(&self) -> BoxFuture<'_, Result<Vec<PageInfo>>>;
    /// Opens a new page on `about:blank` and makes it current.
    fn open_page(&self) -> BoxFuture<'_, Result<PageInfo>>;
    fn focus_page<'a>(&'a self, target: &'a str) -> BoxFuture<'a, Result<PageInfo>>;
    fn close_page<'a>(&'a self, target: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Starts a navigation to `url` (already checked against the navigation policy) and returns
    /// once it is committed; an error says why it failed (refused, unreachable).
    fn navigate<'a>(
        &'a self,
        target: Option<&'a str>,
        url: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<()>>;
    /// Starts a step through history; `Ok(false)` when there is no entry that way.
    fn history<'a>(
        &'a self,
        target: Option<&'a str>,
        step: HistoryStep,
    ) -> BoxFuture<'a, Result<bool>>;
    /// Runs `expression` in the page's top document and returns its value as JSON text. A
    /// promise is awaited. The value must be JSON-serializable; `undefined` comes back as `null`.
    fn evaluate<'a>(
        &'a self,
        target: Option<&'a str>,
        world: World,
        expression: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<String>>;
    fn pointer<'a>(&'a self, target: Option<&'a str>, action: Pointer)
    -> BoxFuture<'a, Result<()>>;
    fn keys<'a>(&'a self, target: Option<&'a str>, keys: Keys) -> BoxFuture<'a, Result<()>>;
    /// PNG or JPEG bytes.
    fn screenshot<'a>(
        &'a self,
        target: Option<&'a str>,
        request: ShotRequest,
    ) -> BoxFuture<'a, Result<Vec<u8>>>;
    /// Requests the navigation policy refused on this page since the last call, as
    /// `url: reason` lines (drained).
    fn take_refusals(&self) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_presses_split_into_modifiers_and_a_key() {
        let (held, key) = parse_press("Control+Shift+a").unwrap();
        assert_eq!(key, "a");
        assert_eq!(
            held,
            Held {
                ctrl: true,
                shift: true,
                ..Held::default()
            }
        );
        assert_eq!(parse_press("Enter").unwrap().1, "Enter");
        assert_eq!(parse_press("Return").unwrap().1, "Enter");
        assert_eq!(parse_press("space").unwrap().1, " ");
        assert_eq!(parse_press("+").unwrap().1, "+");
        assert!(parse_press("Cmd+ArrowLeft").unwrap().0.meta);
        assert!(matches!(
            parse_press("Hyper+a"),
            Err(BrowserError::Invalid(_))
        ));
        assert!(matches!(
            parse_press("Control+"),
            Err(BrowserError::Invalid(_))
        ));
    }
}
