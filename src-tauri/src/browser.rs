//! The `native` browser profile: the `web` tool's browser actions in WebKit webview windows of
//! the desktop app, one window per page (labels `browser-N`), shown so the person sees what the
//! agent does and can take over (log in) or close a page. It implements osprey-browser's
//! [`Driver`]; the core receives it through [`osprey_core::Core::add_browser_profile`], so the
//! core never knows Tauri.
//!
//! - Profile: cookies and storage in the webviews' own data directory (`<data>/browser/native`),
//!   apart from the main window's, so logins persist between runs.
//! - Requests: every request of every page (navigations, redirects, subresources, frames,
//!   workers, WebSockets) goes through osprey-browser's [`GuardProxy`], the managed profile's
//!   enforcement of the `web` tool's SSRF rules, set as the webviews' proxy.
//! - Navigations the page starts are checked at once by `on_navigation` with the policy's rules on
//!   the URL's form (schemes, addresses); refusals come back through [`Driver::take_refusals`].
//! - Scripts: evaluated with WebKit's own evaluation (`eval_with_callback`); its result comes
//!   back from the engine, not over any channel the page could write to. These windows match
//!   no capability, so their pages have no IPC (`capabilities/browser.json`).
//! - Input: on Linux, GTK events of the page's window (`browser/webkit.rs`), trusted; DOM
//!   events synthesized in the page where that cannot be (`browser/input.js`).
//! - Screenshots: WebKit's own snapshot of the view (viewport or full document), encoded here.
//! - Engines: WebKitGTK on Linux (`browser/webkit.rs`: history and snapshots through WebKit);
//!   WKWebView and WebView2 elsewhere (`browser/portable.rs`: only Tauri's own calls, no
//!   snapshots yet). Every window first proves that its requests reach the guard proxy, so an
//!   engine that ignores the proxy setting fails closed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use osprey_browser::driver::{HistoryStep, Keys, Pointer, ShotRequest};
use osprey_browser::guard::{GuardProxy, Refusals};
use osprey_browser::{BrowserError, Driver, DriverStatus, PageInfo, Result, World};
use osprey_core::BrowserProfileConfig;
use serde_json::{Value, json};
use tauri::webview::{
    DownloadEvent, NewWindowResponse, PageLoadEvent, PermissionKind, PermissionResponse,
};
use tauri::{AppHandle, Manager, Url, WebviewUrl, WebviewWindow, WebviewWindowBuilder};

/// The profile's name, as calls give it (`profile: "native"`).
pub const PROFILE: &str = "native";
/// Windows of this profile are labelled `browser-1`, `browser-2`, ...
pub const LABEL_PREFIX: &str = "browser-";
/// What the person sees in the title bar, before the page's own title.
const TITLE: &str = "Osprey browser";

#[cfg(target_os = "linux")]
#[path = "browser/webkit.rs"]
mod engine;
#[cfg(not(target_os = "linux"))]
#[path = "browser/portable.rs"]
mod engine;
#[cfg(target_os = "windows")]
#[path = "browser/webview2.rs"]
mod webview2;
#[cfg(target_os = "macos")]
#[path = "browser/wkwebview.rs"]
mod wkwebview;

const HELPER: &str = include_str!("browser/native.js");
const INPUT: &str = include_str!("browser/input.js");

/// How long a new window may take to show its first (blank) page.
const OPEN_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a new window's check that its requests reach the guard proxy may take.
const GUARD_CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a pending answer (a promise, a navigation) is looked at again.
const POLL: Duration = Duration::from_millis(20);

/// Load events of one page, counted by `on_page_load`.
#[derive(Default)]
struct Loads {
    committed: AtomicU64,
    finished: AtomicU64,
    /// Navigations of this page that the policy refused, and the last reason.
    refused: AtomicU64,
    last_refusal: Mutex<String>,
}

#[derive(Default)]
struct Pages {
    /// Labels in the order the pages were opened.
    order: Vec<String>,
    current: Option<String>,
    loads: HashMap<String, Arc<Loads>>,
}

/// The desktop app's `native` browser profile.
pub struct NativeDriver {
    app: AppHandle,
    config: BrowserProfileConfig,
    pages: Mutex<Pages>,
    proxy: tokio::sync::Mutex<Option<GuardProxy>>,
    /// Held while a call without a page opens one, so two such calls share one window.
    opening: tokio::sync::Mutex<()>,
    refusals: Refusals,
    next: AtomicU64,
}

impl std::fmt::Debug for NativeDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeDriver")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

enum Outcome {
    Value(String),
    Pending,
}

/// Reads what WebKit handed back for one evaluation: the JSON of the string the helper
/// returned (`v` and the value's JSON, `e` and a message, `p` for a pending promise). An empty
/// answer means the script threw before the helper ran (a syntax error).
fn read_answer(raw: &str) -> Result<Outcome> {
    if raw.is_empty() {
        return Err(BrowserError::Page(
            "the script did not run: it has a syntax error, or the page is gone".into(),
        ));
    }
    let text: String = serde_json::from_str(raw).map_err(|e| {
        BrowserError::Protocol(format!("the page answered something unexpected: {e}"))
    })?;
    let mut chars = text.chars();
    match chars.next() {
        Some('v') => Ok(Outcome::Value(chars.as_str().to_string())),
        Some('e') => Err(BrowserError::Page(chars.as_str().to_string())),
        Some('p') => Ok(Outcome::Pending),
        _ => Err(BrowserError::Protocol(format!(
            "the page answered something unexpected: {}",
            text.chars().take(80).collect::<String>()
        ))),
    }
}

/// The expression that runs `expression` through the helper (installing a copy when the
/// document has none, as on a first blank page).
fn wrap(expression: &str, id: &str) -> String {
    format!(
        "(globalThis.__osprey_native || (globalThis.__osprey_native = {HELPER})).run({id:?}, () => ({expression}\n))"
    )
}

/// The script every document of the profile starts with, before the page's own scripts: the
/// evaluation helper and the shared page script, as properties the page cannot replace.
fn initialization_script() -> String {
    format!(
        "(() => {{ try {{ Object.defineProperty(globalThis, '__osprey_native', {{ value: {HELPER} }}); \
         Object.defineProperty(globalThis, '__osprey', {{ value: {} }}); }} catch (_) {{}} }})();",
        osprey_browser::script::SOURCE
    )
}

fn shell(e: impl std::fmt::Display) -> BrowserError {
    BrowserError::Protocol(e.to_string())
}

/// Runs `f` on the main thread with the window's platform webview and a sender for its answer,
/// and waits for that answer: "the page went away" when `f` drops the sender unanswered, a
/// timeout saying `late` (and how long it waited) when the answer does not come in time.
async fn on_platform_webview<T: Send + 'static>(
    window: &WebviewWindow,
    timeout: Duration,
    late: &str,
    f: impl FnOnce(tauri::webview::PlatformWebview, tokio::sync::oneshot::Sender<T>) + Send + 'static,
) -> Result<T> {
    let (send, receive) = tokio::sync::oneshot::channel::<T>();
    window
        .with_webview(move |platform| f(platform, send))
        .map_err(shell)?;
    match tokio::time::timeout(timeout, receive).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_)) => Err(BrowserError::Page("the page went away".into())),
        Err(_) => Err(BrowserError::Timeout(format!(
            "{late} in {} s",
            timeout.as_secs()
        ))),
    }
}

/// A permission as a person would name it.
fn permission_name(kind: PermissionKind) -> String {
    match kind {
        PermissionKind::Microphone => "the microphone".into(),
        PermissionKind::Camera => "the camera".into(),
        PermissionKind::Geolocation => "the location".into(),
        PermissionKind::Notifications => "notifications".into(),
        PermissionKind::ClipboardRead => "reading the clipboard".into(),
        PermissionKind::DisplayCapture => "the screen".into(),
        PermissionKind::PointerLock => "the pointer lock".into(),
        other => format!("{other:?}"),
    }
}

/// A snapshot's pixels as PNG, or JPEG at `quality` (WebView2's DevTools encode their own).
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn encode_image(image: &image::RgbImage, quality: Option<u8>) -> Result<Vec<u8>> {
    let mut out = std::io::Cursor::new(Vec::new());
    match quality {
        Some(q) => image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, q)
            .encode_image(image)
            .map_err(shell)?,
        None => image
            .write_to(&mut out, image::ImageFormat::Png)
            .map_err(shell)?,
    }
    Ok(out.into_inner())
}

impl NativeDriver {
    pub fn new(app: AppHandle, config: BrowserProfileConfig) -> NativeDriver {
        NativeDriver {
            app,
            config,
            pages: Mutex::new(Pages::default()),
            proxy: tokio::sync::Mutex::new(None),
            opening: tokio::sync::Mutex::new(()),
            refusals: Refusals::default(),
            next: AtomicU64::new(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pages> {
        self.pages.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The open pages, dropping those whose window is gone (the person closed it).
    fn live(&self) -> Vec<String> {
        let mut pages = self.lock();
        let app = &self.app;
        pages
            .order
            .retain(|label| app.get_webview_window(label).is_some());
        let order = pages.order.clone();
        pages.loads.retain(|label, _| order.contains(label));
        if pages.current.as_ref().is_some_and(|c| !order.contains(c)) {
            pages.current = order.last().cloned();
        }
        order
    }

    /// The guard proxy's address, and its probe's URL and secret.
    async fn proxy(&self) -> Result<(Url, String, String)> {
        let mut proxy = self.proxy.lock().await;
        if proxy.is_none() {
            let started = GuardProxy::start(self.config.allow_loopback, self.refusals.clone())
                .await
                .map_err(|e| BrowserError::Launch(format!("cannot start the guard proxy: {e}")))?;
            *proxy = Some(started);
        }
        let proxy = proxy.as_ref().expect("started above");
        let (probe, secret) = proxy.probe_url();
        let url = Url::parse(&format!("http://{}", proxy.addr())).map_err(shell)?;
        Ok((url, probe, secret.to_string()))
    }

    /// Fails unless the page's requests reach the guard proxy: a webview that ignores its
    /// proxy setting (WKWebView before macOS 14) would load every page and subresource
    /// unchecked, so the profile is refused there rather than run without its policy.
    async fn check_guard(&self, window: &WebviewWindow, probe: &str, secret: &str) -> Result<()> {
        let expression = format!(
            "fetch({probe:?}, {{ cache: 'no-store' }}).then((r) => r.text(), (e) => 'failed: ' + e)"
        );
        let answer = self
            .evaluate_on(window, &expression, GUARD_CHECK_TIMEOUT)
            .await?;
        let text: String = serde_json::from_str(&answer).unwrap_or_default();
        if text == secret {
            return Ok(());
        }
        Err(BrowserError::Launch(format!(
            "this system's webview does not send its pages' requests through Osprey's guard \
             proxy (on macOS that needs macOS 14 or later), so the native profile cannot keep \
             the web tool's navigation policy; use `profile: \"managed\"` instead (the probe \
             got: {})",
            text.chars().take(120).collect::<String>()
        )))
    }

    /// Opens a window on a blank page and waits for it to be ready for scripts.
    async fn open(&self) -> Result<String> {
        std::fs::create_dir_all(&self.config.profile_dir).map_err(|e| {
            BrowserError::Launch(format!(
                "cannot create the profile folder {}: {e}",
                self.config.profile_dir.display()
            ))
        })?;
        let (proxy, probe, secret) = self.proxy().await?;
        let label = format!(
            "{LABEL_PREFIX}{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let loads = Arc::new(Loads::default());
        // Tauri loads nothing for a plain `about:blank` (no load event would ever come, and wry
        // keeps scripts queued until the first one): a fragment makes it a real load.
        let blank = Url::parse("about:blank#osprey").map_err(shell)?;
        let allow_loopback = self.config.allow_loopback;
        let navigation_refusals = self.refusals.clone();
        let navigation_loads = loads.clone();
        let page_loads = loads.clone();
        let download_refusals = self.refusals.clone();
        let downloads = self.config.downloads.clone();
        let popup_app = self.app.clone();
        let popup_label = label.clone();
        let popup_refusals = self.refusals.clone();
        let permission_refusals = self.refusals.clone();
        let hidden = self.config.hidden_windows.load(Ordering::SeqCst);
        let builder = WebviewWindowBuilder::new(&self.app, &label, WebviewUrl::External(blank))
            .title(TITLE)
            .inner_size(1280.0, 800.0)
            .focused(false)
            // `web.native_windows: "hidden"`: off screen until the person shows it.
            .visible(!hidden)
            .data_directory(self.config.profile_dir.clone())
            .proxy_url(proxy)
            .initialization_script(initialization_script())
            .on_navigation(move |url| {
                match osprey_browser::navigation_verdict(url.as_str(), allow_loopback) {
                    Ok(_) => true,
                    Err(why) => {
                        let line = format!("{url}: {why}");
                        *navigation_loads
                            .last_refusal
                            .lock()
                            .unwrap_or_else(|e| e.into_inner()) = why.to_string();
                        navigation_loads.refused.fetch_add(1, Ordering::SeqCst);
                        navigation_refusals.push(line);
                        false
                    }
                }
            })
            // Pages get no device or site permission: the agent's browsing is not the person
            // asking for their camera, microphone, location or clipboard. (wry's own default
            // on macOS would grant the camera and microphone.)
            .on_permission_request(move |_, kind| {
                permission_refusals.push(format!(
                    "a page asked for {}: refused (the native profile grants pages no permissions)",
                    permission_name(kind)
                ));
                PermissionResponse::Deny
            })
            .on_page_load(move |_window, payload| match payload.event() {
                PageLoadEvent::Started => {
                    page_loads.committed.fetch_add(1, Ordering::SeqCst);
                }
                PageLoadEvent::Finished => {
                    page_loads.finished.fetch_add(1, Ordering::SeqCst);
                }
            })
            .on_document_title_changed(|window, title| {
                let shown = if title.trim().is_empty() {
                    TITLE.to_string()
                } else {
                    format!("{} — {TITLE}", title.trim())
                };
                let _ = window.set_title(&shown);
            })
            // Saved in the `web.downloads` folder under a safe name of their own, made
            // non-executable once complete, never opened; refused when no folder is set.
            .on_download(move |_webview, event| match event {
                DownloadEvent::Requested { url, destination } => {
                    let suggested = destination
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                        .unwrap_or_else(|| url.path().to_string());
                    match downloads.destination(&suggested) {
                        Some(path) => {
                            *destination = path;
                            true
                        }
                        None => {
                            download_refusals.push(format!(
                                "{url}: downloads are turned off (the web.downloads setting \
                                 names a folder for them)"
                            ));
                            false
                        }
                    }
                }
                DownloadEvent::Finished { path, .. } => {
                    if let Some(path) = path
                        && let Err(error) = osprey_browser::downloads::make_inert(&path)
                    {
                        tracing::warn!(path = %path.display(), "a download stays executable: {error}");
                    }
                    true
                }
                _ => true,
            })
            // Pop-ups (window.open, target=_blank) open in the same page, after the policy.
            .on_new_window(move |url, _features| {
                match osprey_browser::navigation_verdict(url.as_str(), allow_loopback) {
                    Ok(_) => {
                        if let Some(window) = popup_app.get_webview_window(&popup_label) {
                            let _ = window.navigate(url);
                        }
                    }
                    Err(why) => popup_refusals.push(format!("{url}: {why}")),
                }
                NewWindowResponse::Deny
            });
        let window = builder
            .build()
            .map_err(|e| BrowserError::Launch(format!("cannot open a browser window: {e}")))?;
        if hidden {
            // WebKitGTK's view is shown with its window as it is added; hide the window again.
            window.hide().map_err(shell)?;
        }
        if let Err(error) = engine::restrict(&window, self.refusals.clone()) {
            let _ = window.destroy();
            return Err(error);
        }
        {
            let mut pages = self.lock();
            pages.order.push(label.clone());
            pages.loads.insert(label.clone(), loads.clone());
            pages.current = Some(label.clone());
        }
        // Scripts sent before the first commit are queued by wry without their answers: wait
        // for the blank page.
        let deadline = Instant::now() + OPEN_TIMEOUT;
        while loads.committed.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
        }
        let ready = if loads.committed.load(Ordering::SeqCst) == 0 {
            Err(BrowserError::Launch(
                "the browser window did not load its first page in time".into(),
            ))
        } else {
            self.check_guard(&window, &probe, &secret).await
        };
        if let Err(error) = ready {
            let _ = window.destroy();
            self.forget(&label);
            return Err(error);
        }
        Ok(label)
    }

    /// Drops a page whose window was destroyed.
    fn forget(&self, label: &str) {
        let mut pages = self.lock();
        pages.order.retain(|l| l != label);
        pages.loads.remove(label);
        if pages.current.as_deref() == Some(label) {
            pages.current = pages.order.last().cloned();
        }
    }

    /// The page `target` names, or the current one (opening one when none is open).
    async fn page(&self, target: Option<&str>) -> Result<(String, WebviewWindow, Arc<Loads>)> {
        let live = self.live();
        let label = match target {
            Some(id) => {
                if !live.iter().any(|l| l == id) {
                    return Err(BrowserError::Invalid(format!(
                        "no page `{id}` in the native profile (it may have been closed); see \
                         list_pages"
                    )));
                }
                id.to_string()
            }
            None => {
                let _opening = self.opening.lock().await;
                self.live();
                let current = self.lock().current.clone();
                match current {
                    Some(current) => current,
                    None => self.open().await?,
                }
            }
        };
        let window = self
            .app
            .get_webview_window(&label)
            .ok_or_else(|| BrowserError::Page(format!("the page {label} was closed")))?;
        let loads = self.lock().loads.get(&label).cloned().unwrap_or_default();
        Ok((label, window, loads))
    }

    fn info(&self, label: &str, current: Option<&str>) -> Option<PageInfo> {
        let window = self.app.get_webview_window(label)?;
        Some(PageInfo {
            target_id: label.to_string(),
            url: window.url().map(|u| u.to_string()).unwrap_or_default(),
            title: window
                .title()
                .unwrap_or_default()
                .trim_end_matches(TITLE)
                .trim_end_matches(" — ")
                .to_string(),
            current: current == Some(label),
        })
    }

    /// Runs one evaluation and returns WebKit's raw answer.
    async fn eval_raw(
        &self,
        window: &WebviewWindow,
        script: String,
        deadline: Instant,
    ) -> Result<String> {
        let (send, receive) = tokio::sync::oneshot::channel::<String>();
        let send = Mutex::new(Some(send));
        window
            .eval_with_callback(script, move |answer| {
                if let Some(send) = send.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    let _ = send.send(answer);
                }
            })
            .map_err(shell)?;
        match tokio::time::timeout_at(deadline.into(), receive).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(BrowserError::Page(
                "the page went away before the script answered".into(),
            )),
            Err(_) => Err(BrowserError::Timeout(
                "the script did not answer in time".into(),
            )),
        }
    }

    async fn input(&self, target: Option<&str>, op: &str, args: Value) -> Result<()> {
        let expression = format!("({INPUT})({}, {args})", Value::String(op.into()));
        self.evaluate_in(target, &expression, Duration::from_secs(10))
            .await
            .map(|_| ())
    }

    async fn evaluate_in(
        &self,
        target: Option<&str>,
        expression: &str,
        timeout: Duration,
    ) -> Result<String> {
        let (_, window, _) = self.page(target).await?;
        self.evaluate_on(&window, expression, timeout).await
    }

    /// Evaluates `expression` in `window`'s page and returns the JSON of its (settled) value.
    async fn evaluate_on(
        &self,
        window: &WebviewWindow,
        expression: &str,
        timeout: Duration,
    ) -> Result<String> {
        let deadline = Instant::now() + timeout;
        let id = osprey_browser::nonce(12);
        let first = self
            .eval_raw(window, wrap(expression, &id), deadline)
            .await?;
        if let Outcome::Value(v) = read_answer(&first)? {
            return Ok(v);
        }
        // A promise: its settled value waits in the page under the id.
        let take = format!(
            "(globalThis.__osprey_native ? globalThis.__osprey_native.take({id:?}) : \
             'ethe page changed before the promise settled')"
        );
        loop {
            if Instant::now() >= deadline {
                return Err(BrowserError::Timeout(format!(
                    "the promise did not settle within {} ms",
                    timeout.as_millis()
                )));
            }
            tokio::time::sleep(POLL).await;
            let answer = self.eval_raw(window, take.clone(), deadline).await?;
            if let Outcome::Value(v) = read_answer(&answer)? {
                return Ok(v);
            }
        }
    }
}

impl Driver for NativeDriver {
    fn profile(&self) -> &str {
        PROFILE
    }

    fn status(&self) -> BoxFuture<'_, Result<DriverStatus>> {
        Box::pin(async move {
            let pages = self.live().len();
            Ok(DriverStatus {
                running: pages > 0,
                version: Some(format!("{} (the desktop app's webview)", engine::NAME)),
                profile_dir: Some(self.config.profile_dir.display().to_string()),
                headless: false,
                executable: None,
                pages,
            })
        })
    }

    fn launch(&self) -> BoxFuture<'_, Result<DriverStatus>> {
        Box::pin(async move {
            // The current page, or a new one when none is open.
            self.page(None).await?;
            self.status().await
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            for label in self.live() {
                if let Some(window) = self.app.get_webview_window(&label) {
                    window.destroy().map_err(shell)?;
                }
            }
            *self.lock() = Pages::default();
            self.proxy.lock().await.take();
            Ok(())
        })
    }

    fn pages(&self) -> BoxFuture<'_, Result<Vec<PageInfo>>> {
        Box::pin(async move {
            let live = self.live();
            let current = self.lock().current.clone();
            Ok(live
                .iter()
                .filter_map(|label| self.info(label, current.as_deref()))
                .collect())
        })
    }

    fn open_page(&self) -> BoxFuture<'_, Result<PageInfo>> {
        Box::pin(async move {
            let label = self.open().await?;
            self.info(&label, Some(&label))
                .ok_or_else(|| BrowserError::Page("the new page closed at once".into()))
        })
    }

    fn focus_page<'a>(&'a self, target: &'a str) -> BoxFuture<'a, Result<PageInfo>> {
        Box::pin(async move {
            let (label, window, _) = self.page(Some(target)).await?;
            self.lock().current = Some(label.clone());
            if !self.config.hidden_windows.load(Ordering::SeqCst) {
                window.show().map_err(shell)?;
            }
            self.info(&label, Some(&label))
                .ok_or_else(|| BrowserError::Page(format!("the page {label} was closed")))
        })
    }

    fn close_page<'a>(&'a self, target: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let (_, window, _) = self.page(Some(target)).await?;
            window.destroy().map_err(shell)?;
            self.live();
            Ok(())
        })
    }

    fn navigate<'a>(
        &'a self,
        target: Option<&'a str>,
        url: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let (_, window, loads) = self.page(target).await?;
            let url = Url::parse(url).map_err(|e| BrowserError::Invalid(e.to_string()))?;
            let committed = loads.committed.load(Ordering::SeqCst);
            let refused = loads.refused.load(Ordering::SeqCst);
            window.navigate(url.clone()).map_err(shell)?;
            let deadline = Instant::now() + timeout;
            loop {
                if loads.committed.load(Ordering::SeqCst) > committed {
                    return Ok(());
                }
                if loads.refused.load(Ordering::SeqCst) > refused {
                    let why = loads
                        .last_refusal
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clone();
                    return Err(BrowserError::Refused(why));
                }
                if Instant::now() >= deadline {
                    return Err(BrowserError::Timeout(format!(
                        "{url} did not start loading within {} ms",
                        timeout.as_millis()
                    )));
                }
                tokio::time::sleep(POLL).await;
            }
        })
    }

    fn history<'a>(
        &'a self,
        target: Option<&'a str>,
        step: HistoryStep,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let (label, window, _) = self.page(target).await?;
            engine::history(self, &label, &window, step).await
        })
    }

    fn evaluate<'a>(
        &'a self,
        target: Option<&'a str>,
        _world: World,
        expression: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<String>> {
        // Both worlds are the page's here: wry does not expose WebKit's isolated worlds.
        Box::pin(self.evaluate_in(target, expression, timeout))
    }

    fn pointer<'a>(
        &'a self,
        target: Option<&'a str>,
        action: Pointer,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let (_, window, _) = self.page(target).await?;
            if engine::trusted_pointer(self, &window, action).await? {
                return Ok(());
            }
            let (op, args) = match action {
                Pointer::Click { x, y, count } => {
                    ("click", json!({"x": x, "y": y, "count": count}))
                }
                Pointer::Move { x, y } => ("move", json!({"x": x, "y": y})),
            };
            self.input(target, op, args).await
        })
    }

    fn keys<'a>(&'a self, target: Option<&'a str>, keys: Keys) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let (_, window, _) = self.page(target).await?;
            if engine::trusted_keys(self, &window, &keys).await? {
                return Ok(());
            }
            match keys {
                Keys::Insert(text) => self.input(target, "insert", json!({"text": text})).await,
                Keys::Type(text) => self.input(target, "type", json!({"text": text})).await,
                Keys::Press(raw) => {
                    let (held, key) = osprey_browser::driver::parse_press(&raw)?;
                    let modifiers = json!({
                        "ctrl": held.ctrl, "shift": held.shift, "alt": held.alt, "meta": held.meta
                    });
                    self.input(target, "press", json!({"key": key, "modifiers": modifiers}))
                        .await
                }
            }
        })
    }

    fn screenshot<'a>(
        &'a self,
        target: Option<&'a str>,
        request: ShotRequest,
    ) -> BoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(async move {
            let (_, window, _) = self.page(target).await?;
            engine::screenshot(self, &window, request).await
        })
    }

    fn take_refusals(&self) -> Vec<String> {
        self.refusals.take()
    }
}

/// Builds the profile for `core` and hands it to the core as the default browser profile of
/// this app: the agent browses where the person can see it.
pub fn attach(app: &AppHandle, core: &osprey_core::Core) {
    let config = core.browser_profile_config(PROFILE);
    let driver = NativeDriver::new(app.clone(), config);
    core.add_browser_profile(Arc::new(driver), true);
}

/// Shows every open page of the profile (the tray's "Show browser windows").
pub fn show_all<R: tauri::Runtime>(app: &AppHandle<R>) -> usize {
    let mut shown = 0;
    for (label, window) in app.webview_windows() {
        if label.starts_with(LABEL_PREFIX) && window.show().is_ok() {
            let _ = window.unminimize();
            shown += 1;
        }
    }
    shown
}

/// Hides every open page of the profile (handed back while `web.native_windows` is `"hidden"`).
/// The agent's calls go on in them off screen, as in any hidden page.
pub fn hide_all<R: tauri::Runtime>(app: &AppHandle<R>) {
    for (label, window) in app.webview_windows() {
        if label.starts_with(LABEL_PREFIX)
            && let Err(error) = window.hide()
        {
            tracing::warn!("could not hide {label}: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(helper: &str) -> String {
        serde_json::to_string(helper).unwrap()
    }

    #[test]
    fn answers_are_values_errors_or_pending_promises() {
        match read_answer(&answer(r#"v{"a":[1,"x"]}"#)).unwrap() {
            Outcome::Value(v) => assert_eq!(v, r#"{"a":[1,"x"]}"#),
            Outcome::Pending => panic!("a value is not pending"),
        }
        match read_answer(&answer("vnull")).unwrap() {
            Outcome::Value(v) => assert_eq!(v, "null"),
            Outcome::Pending => panic!("null is a value"),
        }
        assert!(matches!(
            read_answer(&answer("p")).unwrap(),
            Outcome::Pending
        ));
        match read_answer(&answer("eboom")) {
            Err(BrowserError::Page(m)) => assert_eq!(m, "boom"),
            _ => panic!("an error answer is an error"),
        }
        // WebKit's empty answer: the script threw before the helper caught anything.
        assert!(matches!(read_answer(""), Err(BrowserError::Page(_))));
        // Something that is not the helper's string.
        assert!(matches!(read_answer("42"), Err(BrowserError::Protocol(_))));
        assert!(matches!(
            read_answer(&answer("x")),
            Err(BrowserError::Protocol(_))
        ));
    }

    #[test]
    fn evaluations_are_wrapped_with_their_id_and_the_helper() {
        let script = wrap("1 + 1", "abc");
        assert!(script.contains(r#".run("abc", () => (1 + 1"#));
        assert!(script.contains("__osprey_native"));
        let init = initialization_script();
        assert!(init.contains("defineProperty(globalThis, '__osprey_native'"));
        assert!(init.contains("defineProperty(globalThis, '__osprey'"));
    }
}
