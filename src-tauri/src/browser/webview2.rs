//! WebView2's own DevTools session, for the native profile on Windows. Screenshots and trusted
//! input are the same protocol commands the managed profile sends its Chromium
//! (`osprey_browser::devtools`, tested there against a real Chromium), carried by
//! `ICoreWebView2::CallDevToolsProtocolMethod` instead of a WebSocket. The COM calls are the only
//! unsafe code; they run on the webview's UI thread, where `with_webview` runs its closure.
//!
//! Compiled by `scripts/test`'s Windows clippy; it has not run on Windows.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use osprey_browser::devtools::page::{EnableParams, SetInterceptFileChooserDialogParams};
use osprey_browser::devtools::{Command, DevTools};
use osprey_browser::guard::Refusals;
use osprey_browser::{BrowserError, Result};
use tauri::WebviewWindow;

use super::on_platform_webview;
use webview2_com::{
    CallDevToolsProtocolMethodCompletedHandler, DevToolsProtocolEventReceivedEventHandler,
    take_pwstr,
};
use windows_core::{HSTRING, PWSTR};

/// How long one protocol call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// The DevTools session of one window's webview.
pub struct WebView2<'a>(pub &'a WebviewWindow);

impl WebView2<'_> {
    /// File choosers become `Page.fileChooserOpened` events instead of dialogs (the setting
    /// lasts for the session; it is set again before each trusted click so that a click never
    /// goes without it).
    pub async fn intercept_file_choosers(&self) -> Result<()> {
        self.execute(EnableParams::default()).await?;
        self.execute(SetInterceptFileChooserDialogParams::new(true))
            .await?;
        Ok(())
    }
}

impl DevTools for WebView2<'_> {
    async fn execute<C>(&self, command: C) -> Result<C::Response>
    where
        C: Command + Send + 'static,
        C::Response: Send,
    {
        let method = command.identifier().to_string();
        let params = serde_json::to_string(&command)
            .map_err(|e| BrowserError::Protocol(format!("{method}: {e}")))?;
        let called = method.clone();
        let late = format!("WebView2 did not answer {method}");
        let answer = on_platform_webview(self.0, CALL_TIMEOUT, &late, move |platform, send| {
            // One sender, taken by whichever answers first: the completion handler, or the
            // call's own failure.
            let send = Rc::new(Cell::new(Some(send)));
            let reply = send.clone();
            let handler =
                CallDevToolsProtocolMethodCompletedHandler::create(Box::new(move |done, json| {
                    if let Some(reply) = reply.take() {
                        let _ = reply.send(
                            done.map(|()| json.clone())
                                .map_err(|e| format!("{}: {json}", e.message())),
                        );
                    }
                    Ok(())
                }));
            // SAFETY: COM calls on the UI thread that owns the controller (`with_webview` runs
            // there); the strings outlive the call, and the handler is reference counted by COM.
            let called = unsafe {
                platform.controller().CoreWebView2().and_then(|core| {
                    core.CallDevToolsProtocolMethod(
                        &HSTRING::from(called.as_str()),
                        &HSTRING::from(params.as_str()),
                        &handler,
                    )
                })
            };
            if let Err(error) = called
                && let Some(send) = send.take()
            {
                let _ = send.send(Err(error.message()));
            }
        })
        .await?;
        let json = answer
            .map_err(|error| BrowserError::Protocol(format!("WebView2 {method}: {error}")))?;
        serde_json::from_str(&json)
            .map_err(|e| BrowserError::Protocol(format!("WebView2 {method} answered {json}: {e}")))
    }
}

/// Reports every file chooser the page opens; the chooser itself is intercepted by
/// `Page.setInterceptFileChooserDialog`, which the trusted pointer sets before each click (a
/// click made while it could not be set goes as the page's own event, which opens none).
pub fn report_file_choosers(window: &WebviewWindow, refusals: Refusals) -> Result<()> {
    window
        .with_webview(move |platform| {
            let handler = DevToolsProtocolEventReceivedEventHandler::create(Box::new(
                move |sender, _args| {
                    let page = sender
                        .map(|core| {
                            let mut uri = PWSTR::null();
                            // SAFETY: on the UI thread, in the webview's own event; `take_pwstr`
                            // frees the string COM allocated.
                            match unsafe { core.Source(&mut uri) } {
                                Ok(()) => take_pwstr(uri),
                                Err(_) => String::new(),
                            }
                        })
                        .unwrap_or_default();
                    refusals.push(format!(
                        "{page}: a file chooser (the native profile uploads no files)"
                    ));
                    Ok(())
                },
            ));
            let mut token = 0i64;
            // SAFETY: COM calls on the controller's UI thread; `token` outlives the call.
            let added = unsafe {
                platform.controller().CoreWebView2().and_then(|core| {
                    core.GetDevToolsProtocolEventReceiver(&HSTRING::from("Page.fileChooserOpened"))
                        .and_then(|receiver| {
                            receiver.add_DevToolsProtocolEventReceived(&handler, &mut token)
                        })
                })
            };
            if let Err(error) = added {
                tracing::warn!("file choosers of the native profile go unreported: {error}");
            }
        })
        .map_err(|e| BrowserError::Protocol(e.to_string()))
}
