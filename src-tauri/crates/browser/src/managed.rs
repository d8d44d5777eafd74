//! The managed profile: a Chromium that Osprey starts itself, headless by default, with its own
//! profile folder under the data directory, driven over the DevTools protocol (chromiumoxide).
//! Every request it makes goes through the [`GuardProxy`], which applies the `web` tool's SSRF
//! rules; downloads are denied or saved to a chosen folder, never opened; JavaScript dialogs are
//! answered so they cannot stall the page.
//!
//! The same driver is the `chrome` profile ([`ManagedDriver::attach`]): the person's own
//! Chromium-family browser, which they started with remote debugging on a loopback port, so the
//! agent works in their signed-in session. Osprey never starts that browser, never changes its
//! downloads or proxy, works in a tab of its own unless told a `target_id`, and `close` only lets
//! go of it.

pub mod locate;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::browser::{
    EventDownloadWillBegin, GetVersionParams, SetDownloadBehaviorBehavior,
    SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::page::{
    CreateIsolatedWorldParams, DialogType, EventJavascriptDialogOpening, FrameId,
    GetNavigationHistoryParams, HandleJavaScriptDialogParams, NavigateParams,
    NavigateToHistoryEntryParams, ReloadParams,
};
use chromiumoxide::cdp::browser_protocol::target::{
    ActivateTargetParams, CloseTargetParams, GetTargetsParams, TargetId,
};
use chromiumoxide::cdp::js_protocol::runtime::{EvaluateParams, TimeDelta};
use chromiumoxide::page::Page;
use futures::StreamExt;
use futures::future::BoxFuture;
use tokio::sync::Mutex;

use crate::devtools;
use crate::driver::{
    Driver, DriverStatus, HistoryStep, Keys, PageInfo, Pointer, ShotRequest, World,
};
use crate::error::{BrowserError, Result};
use crate::guard::{GuardProxy, Refusals};

/// The isolated world Osprey's page script runs in.
const WORLD_NAME: &str = "osprey";

/// Settings of the managed profile.
#[derive(Clone, Debug)]
pub struct ManagedConfig {
    /// The profile folder (cookies, storage); created when missing.
    pub profile_dir: PathBuf,
    /// The browser program; `None` looks in the usual places ([`locate::find_chromium`]).
    pub executable: Option<PathBuf>,
    pub headless: bool,
    /// Lets pages reach 127.0.0.0/8 and ::1 (for tests and developers); private, link-local and
    /// metadata addresses stay refused.
    pub allow_loopback: bool,
    /// Where downloads are saved (none denies them), changed live by the `web.downloads`
    /// setting. Downloaded files are never opened.
    pub downloads: crate::DownloadFolder,
    pub launch_timeout: Duration,
    pub window: (u32, u32),
}

impl ManagedConfig {
    pub fn new(profile_dir: PathBuf) -> ManagedConfig {
        ManagedConfig {
            profile_dir,
            executable: None,
            headless: true,
            allow_loopback: false,
            downloads: crate::DownloadFolder::default(),
            launch_timeout: Duration::from_secs(30),
            window: (1280, 800),
        }
    }
}

/// The `web.chrome` setting: the loopback port of the person's own browser, started with
/// `--remote-debugging-port=<port>`. Unset, there is no `chrome` profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChromeAttach {
    pub port: std::num::NonZeroU16,
}

struct Running {
    browser: Browser,
    handler: tokio::task::JoinHandle<()>,
    /// The guard proxy of a browser Osprey started; none for an attached one.
    _proxy: Option<GuardProxy>,
    executable: Option<PathBuf>,
    version: String,
    current: Option<TargetId>,
    /// Pages whose dialogs are answered by a listener already.
    watched: HashSet<TargetId>,
    /// The download folder last given to the browser; none for an attached browser, whose
    /// downloads are the person's own.
    downloads: Option<Option<PathBuf>>,
}

impl Running {
    /// The browser once connected, with its version asked.
    async fn new(
        browser: Browser,
        handler: tokio::task::JoinHandle<()>,
        proxy: Option<GuardProxy>,
        executable: Option<PathBuf>,
    ) -> Running {
        let version = browser
            .execute(GetVersionParams::default())
            .await
            .map(|v| v.result.product.clone())
            .unwrap_or_default();
        Running {
            browser,
            handler,
            _proxy: proxy,
            executable,
            version,
            current: None,
            watched: HashSet::new(),
            downloads: None,
        }
    }
}

/// The browser's download behaviour for `folder` (created when missing): saved there, or denied.
fn download_behavior(folder: Option<&std::path::Path>) -> Result<SetDownloadBehaviorParams> {
    Ok(match folder {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                BrowserError::Launch(format!(
                    "cannot create the downloads folder {}: {e}",
                    dir.display()
                ))
            })?;
            let mut p = SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::Allow);
            p.download_path = Some(dir.display().to_string());
            // `Browser.downloadWillBegin` tells a navigation that became a download (saved
            // or refused).
            p.events_enabled = Some(true);
            p
        }
        None => {
            let mut p = SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::Deny);
            p.events_enabled = Some(true);
            p
        }
    })
}

/// Reads the browser's event stream, which drives the connection: no command is answered unless
/// this runs.
fn follow(mut events: chromiumoxide::Handler) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // Errors here are single messages the handler could not read; it keeps going.
        while let Some(event) = events.next().await {
            if let Err(e) = event {
                tracing::debug!(error = %e, "browser handler");
            }
        }
    })
}

/// The managed Chromium profile, or the person's own browser attached to (`chrome`).
pub struct ManagedDriver {
    config: ManagedConfig,
    /// The loopback port of the person's browser, for the `chrome` profile.
    attach: Option<u16>,
    running: Mutex<Option<Running>>,
    refusals: Refusals,
    dialogs: Arc<std::sync::Mutex<Vec<String>>>,
}

impl std::fmt::Debug for ManagedDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedDriver")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn protocol(e: impl std::fmt::Display) -> BrowserError {
    BrowserError::Protocol(e.to_string())
}

impl ManagedDriver {
    pub fn new(config: ManagedConfig) -> ManagedDriver {
        ManagedDriver {
            config,
            attach: None,
            running: Mutex::new(None),
            refusals: Refusals::default(),
            dialogs: Arc::default(),
        }
    }

    /// The `chrome` profile: the browser the person started with
    /// `--remote-debugging-port=<port>`, reached on 127.0.0.1 only.
    pub fn attach(port: u16) -> ManagedDriver {
        let mut config = ManagedConfig::new(PathBuf::new());
        config.headless = false;
        ManagedDriver {
            attach: Some(port),
            ..ManagedDriver::new(config)
        }
    }

    pub fn config(&self) -> &ManagedConfig {
        &self.config
    }

    /// Connects to the person's browser on `port`.
    async fn connect(&self, port: u16) -> Result<Running> {
        let address = format!("http://127.0.0.1:{port}");
        let not_there = |why: String| {
            BrowserError::Launch(format!(
                "no browser answers on 127.0.0.1:{port} ({why}): start your Chrome or Chromium \
                 with --remote-debugging-port={port} (quit it first if it runs), or change the \
                 `web.chrome` setting"
            ))
        };
        // chromiumoxide asks the browser's address with reqwest 0.13, which the workspace builds
        // without a rustls provider of its own (rmcp's choice): the process needs one installed
        // first, the ring provider every other TLS client here uses. A second install is a no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (browser, events) =
            tokio::time::timeout(self.config.launch_timeout, Browser::connect(address))
                .await
                .map_err(|_| not_there("no answer in time".into()))?
                .map_err(|e| not_there(e.to_string()))?;
        let handler = follow(events);
        Ok(Running::new(browser, handler, None, None).await)
    }

    async fn start(&self) -> Result<Running> {
        if let Some(port) = self.attach {
            return self.connect(port).await;
        }
        let executable = match &self.config.executable {
            Some(path) => path.clone(),
            None => locate::find_chromium()?,
        };
        std::fs::create_dir_all(&self.config.profile_dir).map_err(|e| {
            BrowserError::Launch(format!(
                "cannot create the profile folder {}: {e}",
                self.config.profile_dir.display()
            ))
        })?;
        let proxy = GuardProxy::start(self.config.allow_loopback, self.refusals.clone())
            .await
            .map_err(|e| BrowserError::Launch(format!("cannot start the guard proxy: {e}")))?;
        let (width, height) = self.config.window;
        let mut builder = BrowserConfig::builder()
            .chrome_executable(&executable)
            .user_data_dir(&self.config.profile_dir)
            .launch_timeout(self.config.launch_timeout)
            .window_size(width, height)
            .viewport(None);
        for (name, value) in launch_args(&proxy) {
            builder = match value {
                Some(v) => builder.arg((name.as_str(), v.as_str())),
                None => builder.arg(name),
            };
        }
        if !self.config.headless {
            builder = builder.with_head();
        }
        if needs_no_sandbox() {
            builder = builder.no_sandbox();
        }
        let config = builder.build().map_err(BrowserError::Launch)?;
        let (browser, events) = Browser::launch(config).await.map_err(|e| {
            BrowserError::Launch(format!("{} did not start: {e}", executable.display()))
        })?;
        let handler = follow(events);
        if let Some(port) = Url::parse(browser.websocket_address())
            .ok()
            .and_then(|u| u.port())
        {
            proxy.forbid_port(port);
        }
        let downloads = self.config.downloads.get();
        browser
            .execute(download_behavior(downloads.as_deref())?)
            .await
            .map_err(protocol)?;
        let mut running = Running::new(browser, handler, Some(proxy), Some(executable)).await;
        running.downloads = Some(downloads);
        Ok(running)
    }

    /// The page `target` names, or the current one (opening a page when there is none),
    /// starting the browser when needed.
    async fn page(&self, target: Option<&str>) -> Result<Page> {
        let mut guard = self.running.lock().await;
        if guard.is_none() {
            *guard = Some(self.start().await?);
        }
        let running = guard.as_mut().expect("started above");
        // `web.downloads` changed while the browser runs: it saves to the new folder from now on.
        if let Some(applied) = &running.downloads {
            let wanted = self.config.downloads.get();
            if *applied != wanted {
                running
                    .browser
                    .execute(download_behavior(wanted.as_deref())?)
                    .await
                    .map_err(protocol)?;
                running.downloads = Some(wanted);
            }
        }
        let page = match target {
            Some(id) => {
                let id = TargetId::new(id);
                let known = self.page_targets(running).await?;
                if !known.contains(&id) {
                    return Err(BrowserError::Invalid(format!(
                        "no page with target_id {}; list_pages shows the open ones",
                        id.inner()
                    )));
                }
                running.browser.get_page(id).await.map_err(protocol)?
            }
            None => {
                let known = self.page_targets(running).await?;
                // In the person's own browser the agent opens a tab of its own rather than take
                // over the one they are looking at.
                let current = running
                    .current
                    .clone()
                    .filter(|c| known.contains(c))
                    .or_else(|| {
                        self.attach
                            .is_none()
                            .then(|| known.first().cloned())
                            .flatten()
                    });
                match current {
                    Some(id) => running.browser.get_page(id).await.map_err(protocol)?,
                    None => running
                        .browser
                        .new_page("about:blank")
                        .await
                        .map_err(protocol)?,
                }
            }
        };
        if target.is_none() {
            running.current = Some(page.target_id().clone());
        }
        if running.watched.insert(page.target_id().clone()) {
            self.answer_dialogs(&page).await?;
        }
        Ok(page)
    }

    /// Closes `page` and opens a blank one in its place as the current page.
    async fn replace_page(&self, page: &Page) -> Result<()> {
        let mut guard = self.running.lock().await;
        let Some(running) = guard.as_mut() else {
            return Ok(());
        };
        let fresh = running
            .browser
            .new_page("about:blank")
            .await
            .map_err(protocol)?;
        running.current = Some(fresh.target_id().clone());
        running.watched.insert(fresh.target_id().clone());
        let _ = running
            .browser
            .execute(CloseTargetParams::new(page.target_id().clone()))
            .await;
        drop(guard);
        self.answer_dialogs(&fresh).await
    }

    async fn page_targets(&self, running: &Running) -> Result<Vec<TargetId>> {
        let targets = running
            .browser
            .execute(GetTargetsParams::default())
            .await
            .map_err(protocol)?;
        Ok(targets
            .result
            .target_infos
            .iter()
            .filter(|t| t.r#type == "page")
            .map(|t| t.target_id.clone())
            .collect())
    }

    /// Answers JavaScript dialogs on `page` (accepts alerts, dismisses confirm and prompt) so
    /// they cannot block it; their messages are reported with the next result.
    async fn answer_dialogs(&self, page: &Page) -> Result<()> {
        let mut opened = page
            .event_listener::<EventJavascriptDialogOpening>()
            .await
            .map_err(protocol)?;
        let page = page.clone();
        let dialogs = self.dialogs.clone();
        tokio::spawn(async move {
            while let Some(event) = opened.next().await {
                let accept = matches!(event.r#type, DialogType::Alert | DialogType::Beforeunload);
                dialogs
                    .lock()
                    .expect("dialog list lock")
                    .push(format!("{:?} dialog: {}", event.r#type, event.message));
                let _ = page
                    .execute(HandleJavaScriptDialogParams::new(accept))
                    .await;
            }
        });
        Ok(())
    }

    async fn info(&self, page: &Page, current: bool) -> PageInfo {
        let url = page.url().await.ok().flatten().unwrap_or_default();
        let title = page.get_title().await.ok().flatten().unwrap_or_default();
        PageInfo {
            target_id: page.target_id().inner().clone(),
            url,
            title,
            current,
        }
    }

    async fn eval_in(
        &self,
        page: &Page,
        world: World,
        expression: &str,
        timeout: Duration,
    ) -> Result<String> {
        let mut params = EvaluateParams::new(expression);
        params.return_by_value = Some(true);
        params.await_promise = Some(true);
        params.timeout = Some(TimeDelta::new(timeout.as_millis() as f64));
        if world == World::Osprey {
            // The main frame's id is its target's id. The same world name gives the same world
            // (and so the same refs) for as long as the document lives.
            let frame = FrameId::new(page.target_id().inner().clone());
            let mut create = CreateIsolatedWorldParams::new(frame);
            create.world_name = Some(WORLD_NAME.into());
            let created = page.execute(create).await.map_err(protocol)?;
            params.context_id = Some(created.result.execution_context_id);
        } else {
            params.user_gesture = Some(true);
        }
        let started = std::time::Instant::now();
        let too_long = || {
            BrowserError::Timeout(format!(
                "the script did not finish within {:.1}s and was stopped",
                timeout.as_secs_f64()
            ))
        };
        let reply = tokio::time::timeout(timeout + Duration::from_secs(1), page.execute(params))
            .await
            .map_err(|_| too_long())?
            // Chromium answers a script it stopped at `timeout` with an internal error.
            .map_err(|e| {
                if started.elapsed() >= timeout {
                    too_long()
                } else {
                    protocol(e)
                }
            })?;
        if let Some(details) = &reply.result.exception_details {
            let message = details
                .exception
                .as_ref()
                .and_then(|e| e.description.clone())
                .unwrap_or_else(|| details.text.clone());
            if message.contains("Execution was terminated") {
                return Err(BrowserError::Timeout(format!(
                    "the script was stopped after {:.1}s",
                    timeout.as_secs_f64()
                )));
            }
            return Err(BrowserError::Page(format!("the script threw: {message}")));
        }
        let value = reply
            .result
            .result
            .value
            .clone()
            .unwrap_or(serde_json::Value::Null);
        serde_json::to_string(&value).map_err(protocol)
    }
}

use url::Url;

/// Chromium's switches, as (name without dashes, value): the ones this closed network and a
/// root user need, and the guard proxy.
fn launch_args(proxy: &GuardProxy) -> Vec<(String, Option<String>)> {
    let mut args: Vec<(String, Option<String>)> = [
        "disable-gpu",
        "disable-quic",
        "no-first-run",
        "no-default-browser-check",
        "disable-background-networking",
        "disable-component-update",
        "disable-sync",
        "disable-domain-reliability",
        "disable-crash-reporter",
    ]
    .into_iter()
    .map(|k| (k.to_string(), None))
    .collect();
    let mut value = |k: &str, v: String| args.push((k.to_string(), Some(v)));
    // Peer-to-peer traffic would not pass the proxy.
    value(
        "force-webrtc-ip-handling-policy",
        "disable_non_proxied_udp".into(),
    );
    value(
        "webrtc-ip-handling-policy",
        "disable_non_proxied_udp".into(),
    );
    value("proxy-server", format!("http://{}", proxy.addr()));
    // Loopback requests go through the proxy too (Chromium bypasses it for them otherwise).
    value("proxy-bypass-list", "<-loopback>".into());
    args
}

/// Chromium's own sandbox cannot start as root; only then is it turned off.
#[cfg(target_os = "linux")]
fn needs_no_sandbox() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

#[cfg(not(target_os = "linux"))]
fn needs_no_sandbox() -> bool {
    false
}

impl Driver for ManagedDriver {
    fn profile(&self) -> &str {
        if self.attach.is_some() {
            "chrome"
        } else {
            "managed"
        }
    }

    fn status(&self) -> BoxFuture<'_, Result<DriverStatus>> {
        Box::pin(async move {
            let guard = self.running.lock().await;
            let mut status = DriverStatus {
                // The person's browser keeps its profile where it always does.
                profile_dir: self
                    .attach
                    .is_none()
                    .then(|| self.config.profile_dir.display().to_string()),
                headless: self.config.headless,
                executable: self
                    .config
                    .executable
                    .as_ref()
                    .map(|p| p.display().to_string()),
                ..DriverStatus::default()
            };
            if let Some(running) = guard.as_ref() {
                status.running = true;
                status.version = Some(running.version.clone());
                status.executable = running
                    .executable
                    .as_ref()
                    .map(|path| path.display().to_string());
                status.pages = self.page_targets(running).await?.len();
            }
            Ok(status)
        })
    }

    fn launch(&self) -> BoxFuture<'_, Result<DriverStatus>> {
        Box::pin(async move {
            {
                let mut guard = self.running.lock().await;
                if guard.is_none() {
                    *guard = Some(self.start().await?);
                }
            }
            self.status().await
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let taken = self.running.lock().await.take();
            if self.attach.is_some() {
                // The person's browser stays as it is: only the connection ends.
                if let Some(running) = taken {
                    running.handler.abort();
                }
                return Ok(());
            }
            if let Some(mut running) = taken {
                let _ = tokio::time::timeout(Duration::from_secs(5), running.browser.close()).await;
                let _ = tokio::time::timeout(Duration::from_secs(5), running.browser.wait()).await;
                running.browser.kill().await;
                running.handler.abort();
            }
            Ok(())
        })
    }

    fn pages(&self) -> BoxFuture<'_, Result<Vec<PageInfo>>> {
        Box::pin(async move {
            let mut guard = self.running.lock().await;
            // The person's browser runs whether or not Osprey is attached: its tabs are there.
            if guard.is_none() && self.attach.is_some() {
                *guard = Some(self.start().await?);
            }
            let Some(running) = guard.as_ref() else {
                return Ok(Vec::new());
            };
            let targets = running
                .browser
                .execute(GetTargetsParams::default())
                .await
                .map_err(protocol)?;
            let current = running.current.clone();
            let mut out: Vec<PageInfo> = targets
                .result
                .target_infos
                .iter()
                .filter(|t| t.r#type == "page")
                .map(|t| PageInfo {
                    target_id: t.target_id.inner().clone(),
                    url: t.url.clone(),
                    title: t.title.clone(),
                    current: current.as_ref() == Some(&t.target_id),
                })
                .collect();
            if !out.iter().any(|p| p.current)
                && let Some(first) = out.first_mut()
            {
                first.current = true;
            }
            Ok(out)
        })
    }

    fn open_page(&self) -> BoxFuture<'_, Result<PageInfo>> {
        Box::pin(async move {
            let page = {
                let mut guard = self.running.lock().await;
                if guard.is_none() {
                    *guard = Some(self.start().await?);
                }
                let running = guard.as_mut().expect("started above");
                let page = running
                    .browser
                    .new_page("about:blank")
                    .await
                    .map_err(protocol)?;
                running.current = Some(page.target_id().clone());
                running.watched.insert(page.target_id().clone());
                page
            };
            self.answer_dialogs(&page).await?;
            Ok(self.info(&page, true).await)
        })
    }

    fn focus_page<'a>(&'a self, target: &'a str) -> BoxFuture<'a, Result<PageInfo>> {
        Box::pin(async move {
            let page = self.page(Some(target)).await?;
            page.execute(ActivateTargetParams::new(page.target_id().clone()))
                .await
                .map_err(protocol)?;
            if let Some(running) = self.running.lock().await.as_mut() {
                running.current = Some(page.target_id().clone());
            }
            Ok(self.info(&page, true).await)
        })
    }

    fn close_page<'a>(&'a self, target: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let page = self.page(Some(target)).await?;
            let guard = self.running.lock().await;
            let running = guard
                .as_ref()
                .ok_or_else(|| protocol("the browser stopped"))?;
            running
                .browser
                .execute(CloseTargetParams::new(page.target_id().clone()))
                .await
                .map_err(protocol)?;
            // Closing is asynchronous; return once the page is really gone.
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while self.page_targets(running).await?.contains(page.target_id()) {
                if std::time::Instant::now() >= deadline {
                    return Err(BrowserError::Timeout(format!(
                        "page {} did not close within 5s",
                        page.target_id().inner()
                    )));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
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
            let page = self.page(target).await?;
            // A navigation that becomes a saved download never finishes as a navigation, so the
            // download's start ends the wait (only a browser Osprey started reports them).
            let began = {
                let guard = self.running.lock().await;
                match guard.as_ref() {
                    Some(running) if self.attach.is_none() => Some(
                        running
                            .browser
                            .event_listener::<EventDownloadWillBegin>()
                            .await
                            .map_err(protocol)?,
                    ),
                    _ => None,
                }
            };
            let frame = page.target_id().inner().clone();
            let download = async move {
                let mut began = began?;
                while let Some(event) = began.next().await {
                    if *event.frame_id.inner() == frame {
                        return Some(event.suggested_filename.clone());
                    }
                }
                None
            };
            let navigation = tokio::time::timeout(timeout, page.execute(NavigateParams::new(url)));
            let started = tokio::select! {
                started = navigation => started,
                Some(name) = download => {
                    // The browser library would hold this tab's next navigation until the one
                    // that became a download times out, so a fresh tab takes its place.
                    self.replace_page(&page).await?;
                    return Err(BrowserError::Page(format!(
                        "{url} is a download, not a page ({})",
                        match self.config.downloads.get() {
                            Some(folder) => {
                                // The name is the site's: short, one line.
                                let name: String = name
                                    .chars()
                                    .filter(|c| !c.is_control())
                                    .take(100)
                                    .collect();
                                format!("saved to {} as {name}, not opened", folder.display())
                            }
                            None => "downloads are turned off: the web.downloads setting names \
                                     a folder for them"
                                .into(),
                        }
                    )));
                }
            }
            .map_err(|_| {
                BrowserError::Timeout(format!(
                    "{url} did not answer within {:.1}s",
                    timeout.as_secs_f64()
                ))
            })?;
            let started = match started {
                Ok(started) => started,
                // chromiumoxide gave up waiting for the load: say where the page is, which tells
                // a navigation that never started from a slow one.
                Err(chromiumoxide::error::CdpError::Timeout) => {
                    let at = page.url().await.ok().flatten().unwrap_or_default();
                    return Err(BrowserError::Timeout(format!(
                        "{url} did not load (the page is at {at:?})"
                    )));
                }
                Err(error) => return Err(protocol(error)),
            };
            if let Some(error) = &started.result.error_text {
                let refused = self.refusals.take();
                if !refused.is_empty() {
                    return Err(BrowserError::Refused(format!(
                        "the navigation policy refused {}",
                        refused.join("; ")
                    )));
                }
                return Err(BrowserError::Page(format!("loading {url} failed: {error}")));
            }
            if started.result.is_download == Some(true) {
                return Err(BrowserError::Page(format!(
                    "{url} is a download, not a page ({})",
                    match (self.attach, self.config.downloads.get()) {
                        (Some(_), _) => "your browser saves it where it saves downloads".into(),
                        (None, Some(dir)) => format!("saved to {}, not opened", dir.display()),
                        (None, None) => "downloads are turned off: the web.downloads setting \
                                         names a folder for them"
                            .into(),
                    }
                )));
            }
            Ok(())
        })
    }

    fn history<'a>(
        &'a self,
        target: Option<&'a str>,
        step: HistoryStep,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let page = self.page(target).await?;
            if step == HistoryStep::Reload {
                page.execute(ReloadParams::default())
                    .await
                    .map_err(protocol)?;
                return Ok(true);
            }
            let history = page
                .execute(GetNavigationHistoryParams::default())
                .await
                .map_err(protocol)?;
            let index =
                history.result.current_index + if step == HistoryStep::Back { -1 } else { 1 };
            let Some(entry) = usize::try_from(index)
                .ok()
                .and_then(|i| history.result.entries.get(i))
            else {
                return Ok(false);
            };
            page.execute(NavigateToHistoryEntryParams::new(entry.id))
                .await
                .map_err(protocol)?;
            Ok(true)
        })
    }

    fn evaluate<'a>(
        &'a self,
        target: Option<&'a str>,
        world: World,
        expression: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let page = self.page(target).await?;
            self.eval_in(&page, world, expression, timeout).await
        })
    }

    fn pointer<'a>(
        &'a self,
        target: Option<&'a str>,
        action: Pointer,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let page = self.page(target).await?;
            devtools::pointer(&page, action).await
        })
    }

    fn keys<'a>(&'a self, target: Option<&'a str>, keys: Keys) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let page = self.page(target).await?;
            devtools::keys(&page, keys).await
        })
    }

    fn screenshot<'a>(
        &'a self,
        target: Option<&'a str>,
        request: ShotRequest,
    ) -> BoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(async move {
            let page = self.page(target).await?;
            devtools::screenshot(&page, request).await
        })
    }

    fn take_refusals(&self) -> Vec<String> {
        let mut out = self.refusals.take();
        out.extend(
            self.dialogs
                .lock()
                .expect("dialog list lock")
                .drain(..)
                .map(|d| format!("answered a {d}")),
        );
        out
    }
}
