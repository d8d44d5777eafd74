//! The native profile where the webview is WKWebView (macOS) or WebView2 (Windows). History goes
//! through the page's own `history`, with the Navigation API telling whether there is a page to
//! go to where the engine has it (WebView2, Safari 26), and `history.length` otherwise.
//!
//! On Windows, screenshots and trusted input go through WebView2's own DevTools session
//! (`webview2.rs`): the protocol commands the managed profile sends its Chromium. On macOS,
//! screenshots are WKWebView's own snapshot of the visible page (`wkwebview.rs`), and input is
//! the page's own events (`input.js`).
//!
//! Compiled for both platforms here (`scripts/test`'s clippy); it has run on neither.

use std::time::Duration;

use osprey_browser::Result;
#[cfg(target_os = "windows")]
use osprey_browser::devtools;
use osprey_browser::driver::{HistoryStep, Keys, Pointer, ShotRequest};
use osprey_browser::guard::Refusals;
use tauri::WebviewWindow;

#[cfg(target_os = "windows")]
use super::webview2::{self, WebView2};
use super::{NativeDriver, shell};

/// The engine, as `status` names it.
#[cfg(target_os = "windows")]
pub const NAME: &str = "WebView2";
#[cfg(not(target_os = "windows"))]
pub const NAME: &str = "WKWebView";

/// Trusted clicks could open a file chooser (a dialog in the person's way that the agent cannot
/// use): WebView2's are intercepted (see `trusted_pointer`) and reported with the next result.
/// WebView2 keeps full screen inside its own window.
#[cfg(target_os = "windows")]
pub fn restrict(window: &WebviewWindow, refusals: Refusals) -> Result<()> {
    webview2::report_file_choosers(window, refusals)
}

/// Clicks here are the page's own (untrusted) events, which open no file chooser and no full
/// screen: nothing to restrict.
#[cfg(not(target_os = "windows"))]
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

/// The viewport or the full page, through WebView2's DevTools session.
#[cfg(target_os = "windows")]
pub async fn screenshot(
    _driver: &NativeDriver,
    window: &WebviewWindow,
    request: ShotRequest,
) -> Result<Vec<u8>> {
    devtools::screenshot(&WebView2(window), request).await
}

/// The visible page, through WKWebView's own snapshot.
#[cfg(target_os = "macos")]
pub async fn screenshot(
    _driver: &NativeDriver,
    window: &WebviewWindow,
    request: ShotRequest,
) -> Result<Vec<u8>> {
    super::wkwebview::screenshot(window, request).await
}

/// Whether the window takes input from the window system: a hidden or minimized webview gets
/// the page's own events instead, as on Linux.
#[cfg(target_os = "windows")]
fn on_screen(window: &WebviewWindow) -> bool {
    window.is_visible().unwrap_or(false) && !window.is_minimized().unwrap_or(true)
}

/// Keys as trusted events (`Input.dispatchKeyEvent`, `Input.insertText`); false, nothing sent,
/// when the window is not on screen.
#[cfg(target_os = "windows")]
pub async fn trusted_keys(
    _driver: &NativeDriver,
    window: &WebviewWindow,
    keys: &Keys,
) -> Result<bool> {
    if !on_screen(window) {
        return Ok(false);
    }
    devtools::keys(&WebView2(window), keys.clone()).await?;
    Ok(true)
}

/// The pointer as trusted events (`Input.dispatchMouseEvent`), with file choosers intercepted
/// first; false, nothing sent, when the window is not on screen or the interception could not
/// be set (the page's own events open no chooser).
#[cfg(target_os = "windows")]
pub async fn trusted_pointer(
    _driver: &NativeDriver,
    window: &WebviewWindow,
    action: Pointer,
) -> Result<bool> {
    if !on_screen(window) {
        return Ok(false);
    }
    let session = WebView2(window);
    if matches!(action, Pointer::Click { .. })
        && let Err(error) = session.intercept_file_choosers().await
    {
        tracing::warn!("file choosers could not be intercepted ({error}); page events instead");
        return Ok(false);
    }
    devtools::pointer(&session, action).await?;
    Ok(true)
}

/// Keys are DOM events synthesized in the page here (`input.js`): false, nothing sent.
#[cfg(not(target_os = "windows"))]
pub async fn trusted_keys(
    _driver: &NativeDriver,
    _window: &WebviewWindow,
    _keys: &Keys,
) -> Result<bool> {
    Ok(false)
}

/// Pointer input is DOM events synthesized in the page here (`input.js`): false, nothing sent.
#[cfg(not(target_os = "windows"))]
pub async fn trusted_pointer(
    _driver: &NativeDriver,
    _window: &WebviewWindow,
    _action: Pointer,
) -> Result<bool> {
    Ok(false)
}
