//! The native profile where the webview is WKWebView (macOS) or WebView2 (Windows): only what
//! Tauri offers on every platform. History goes through the page's own `history`, with the
//! Navigation API telling whether there is a page to go to where the engine has it (WebView2,
//! Safari 26), and `history.length` otherwise. Snapshots need the engine's own call
//! (`takeSnapshot`, `CapturePreview`), which Tauri does not expose: the action says so and
//! names the managed profile.
//!
//! Only the Windows build of this file is compiled here (`scripts/test`'s Windows clippy); it
//! has run on neither platform.

use std::time::Duration;

use osprey_browser::driver::{HistoryStep, Keys, ShotRequest};
use osprey_browser::guard::Refusals;
use osprey_browser::{BrowserError, Result};
use tauri::WebviewWindow;

use super::{NativeDriver, shell};

/// The engine, as `status` names it.
#[cfg(target_os = "windows")]
pub const NAME: &str = "WebView2";
#[cfg(not(target_os = "windows"))]
pub const NAME: &str = "WKWebView";

/// Clicks here are the page's own (untrusted) events, which open no file chooser and no full
/// screen: nothing to restrict.
pub fn restrict(_window: &WebviewWindow, _refusals: Refusals) -> Result<()> {
    Ok(())
}

/// Goes back, forward or reloads; false when there is no page to go to.
pub async fn history(
    driver: &NativeDriver,
    label: &str,
    window: &WebviewWindow,
    step: HistoryStep,
) -> Result<bool> {
    let script = match step {
        HistoryStep::Reload => {
            window.reload().map_err(shell)?;
            return Ok(true);
        }
        HistoryStep::Back => {
            "(() => { const n = globalThis.navigation; \
             const can = n && 'canGoBack' in n ? n.canGoBack : history.length > 1; \
             if (can) history.back(); return can; })()"
        }
        HistoryStep::Forward => {
            "(() => { const n = globalThis.navigation; \
             const can = n && 'canGoForward' in n ? n.canGoForward : true; \
             if (can) history.forward(); return can; })()"
        }
    };
    let answer = driver
        .evaluate_in(Some(label), script, Duration::from_secs(5))
        .await?;
    Ok(answer == "true")
}

pub async fn screenshot(
    _driver: &NativeDriver,
    _window: &WebviewWindow,
    _request: ShotRequest,
) -> Result<Vec<u8>> {
    Err(BrowserError::Unsupported(format!(
        "screenshots of the native profile are taken on Linux only for now ({NAME} has no \
         snapshot call through Tauri); use `profile: \"managed\"` for a page's screenshot, or \
         the screenshot tool on the shown window"
    )))
}

/// Keys are DOM events synthesized in the page here (`input.js`): false, nothing sent.
pub async fn trusted_keys(
    _driver: &NativeDriver,
    _window: &WebviewWindow,
    _keys: &Keys,
) -> Result<bool> {
    Ok(false)
}

/// Pointer input is DOM events synthesized in the page here (`input.js`): false, nothing sent.
pub async fn trusted_pointer(
    _driver: &NativeDriver,
    _window: &WebviewWindow,
    _x: f64,
    _y: f64,
    _clicks: u32,
) -> Result<bool> {
    Ok(false)
}
