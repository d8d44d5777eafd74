//! Wiring the app platform into the core. [`Core::open`](crate::Core::open) builds only what
//! needs no process, runtime or network ([`AppPlatform::open`]): `<data>/apps`, the hook
//! dispatcher on the registry, the `app` tool (backed by an idle supervisor handle) and the
//! capability host. [`Core::start_apps`](crate::Core::start_apps) (the desktop app, once) kills
//! orphans of a previous run, starts the supervisor and the watcher and launches every installed,
//! non-quarantined app in the background; each app's tools and hooks are registered as it
//! becomes healthy. [`Core::stop_apps`](crate::Core::stop_apps) stops them all; dropping the last
//! `Core` cancels them too. The command line starts apps only for the length of one command that
//! needs them when no desktop or daemon runs (`osprey tools`, `osprey tool <app tool>`: see
//! [`crate::app_tools`]); otherwise its `app` tool lists them as not running.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_apps::store_client::StoreLink;
use osprey_apps::trust::{Revocation, TrustSource};

/// The store URL from the environment; it wins over the `store.url` setting.
pub const STORE_URL_ENV: &str = "OSPREY_STORE_URL";

/// The app store's URL: `$OSPREY_STORE_URL`, else the `store.url` setting, else none.
pub fn store_url(stored: &osprey_db::Settings) -> Option<String> {
    std::env::var(STORE_URL_ENV)
        .ok()
        .or_else(|| crate::settings::read::<Option<String>>(stored, crate::settings::STORE_URL))
        .map(|url| url.trim().to_string())
        .filter(|url| !url.is_empty())
}

#[cfg(unix)]
pub use platform::{AccountRefresh, AccountWiring, AppPlatform, LAUNCHING, LaunchReports};

/// The apps directory of a data directory.
pub fn apps_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("apps")
}

/// How old a cached revocation list may be when the store cannot be reached before store
/// apps are refused (the command line uses the same), unless the
/// `store.revocation_max_age_hours` setting makes it shorter.
pub const MAX_REVOCATION_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The revocation list's age limit: the setting when it is stricter, else [`MAX_REVOCATION_AGE`].
pub fn max_revocation_age(stored: &osprey_db::Settings) -> Duration {
    crate::settings::read::<Option<u64>>(stored, crate::settings::STORE_REVOCATION_MAX_AGE)
        .map(|hours| Duration::from_secs(hours.saturating_mul(3600)))
        .map_or(MAX_REVOCATION_AGE, |age| age.min(MAX_REVOCATION_AGE))
}

/// How often a running Osprey checks its installed apps against the store's revocation list.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(3600);

/// What one revocation sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// `(id, reason)` of each app stopped and quarantined.
    pub revoked: Vec<(String, String)>,
    /// `(name, reason)` of each store skill removed.
    pub revoked_skills: Vec<(String, String)>,
    /// Store apps stopped because no revocation list could be had.
    pub held: Vec<String>,
    /// Apps held by an earlier sweep and launched again.
    pub released: Vec<String>,
    /// Why no revocation list could be had, when it could not.
    pub unavailable: Option<String>,
}

/// The store configured now as a trust source; with none, only the cached key and list are used.
pub struct StoreSource(pub StoreLink);

impl StoreSource {
    fn client(&self) -> osprey_apps::Result<osprey_apps::store_client::StoreClient> {
        self.0.client().ok_or_else(|| {
            osprey_apps::Error::StoreUnavailable(
                "no store configured: pass --store URL, set OSPREY_STORE_URL, or run \
                 `osprey config set store.url URL`"
                    .to_string(),
            )
        })
    }
}

impl TrustSource for StoreSource {
    fn signing_key(&self) -> BoxFuture<'_, osprey_apps::Result<String>> {
        Box::pin(async move { self.client()?.signing_key().await })
    }

    fn revocations(&self) -> BoxFuture<'_, osprey_apps::Result<Vec<Revocation>>> {
        Box::pin(async move { self.client()?.revocations().await })
    }
}

#[cfg(unix)]
mod platform {
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use anyhow::Context;
    use osprey_apps::Installer;
    use osprey_apps::capabilities::Capabilities;
    use osprey_apps::channel::Channels;
    use osprey_apps::comm::Comms;
    use osprey_apps::hooks::AppHooks;
    use osprey_apps::manage_tool::AppsTool;
    use osprey_apps::runtime::{LaunchOptions, Launcher, kill_orphans};
    use osprey_apps::settings::SettingsStore;
    use osprey_apps::skill_package::SkillInstaller;
    use osprey_apps::store_client::{StoreClient, StoreLink};
    use osprey_apps::supervisor::{Supervisor, SupervisorConfig};
    use osprey_apps::trust::Trust;
    use osprey_apps::watcher::{AppWatcher, watch};
    use std::collections::BTreeSet;

    use osprey_tools::Registry;
    use osprey_types::{CoreEvent, InstallStage};
    use tokio::sync::Notify;
    use tokio_util::sync::CancellationToken;

    use super::{StoreSource, SweepReport};
    use crate::events::EventBus;

    /// How long the watcher waits for an app's files to be quiet before restarting it.
    const WATCH_DEBOUNCE: Duration = Duration::from_millis(500);

    /// The comm subscriptions as the database keeps them (a failed write is logged: the
    /// subscription is in force until Osprey stops either way).
    struct KeptSubscriptions(osprey_db::CommSubscriptions);

    impl osprey_apps::comm::SubscriptionStore for KeptSubscriptions {
        fn load(&self) -> Vec<(String, String)> {
            self.0.all().unwrap_or_else(|error| {
                tracing::warn!("the kept comm subscriptions could not be read: {error}");
                Vec::new()
            })
        }

        fn added(&self, app_id: &str, topic: &str) {
            if let Err(error) = self.0.add(app_id, topic) {
                tracing::warn!(app = app_id, topic, "the subscription is not kept: {error}");
            }
        }

        fn removed(&self, app_id: &str, topic: &str) {
            if let Err(error) = self.0.remove(app_id, topic) {
                tracing::warn!(
                    app = app_id,
                    topic,
                    "the unsubscription is not kept: {error}"
                );
            }
        }

        fn forget_app(&self, app_id: &str) {
            if let Err(error) = self.0.forget_app(app_id) {
                tracing::warn!(
                    app = app_id,
                    "its comm subscriptions are still kept: {error}"
                );
            }
        }
    }

    /// The app platform as the core holds it: cheap handles, and the running part once started.
    pub struct AppPlatform {
        apps_dir: PathBuf,
        settings: SettingsStore,
        installer: Installer,
        supervisor: Supervisor,
        capabilities: Arc<Capabilities>,
        comms: Comms,
        channels: Channels,
        trust: Arc<Trust>,
        config: SupervisorConfig,
        launch: LaunchOptions,
        running: Mutex<Option<Running>>,
        launch_reports: LaunchReports,
        events: EventBus,
        /// Store apps stopped because the revocation list could not be had; relaunched by the
        /// first sweep that gets one and does not revoke them.
        held: Arc<Mutex<BTreeSet<String>>>,
        /// Wakes the sweep loop early (`sweep_revocations_soon`).
        sweep_now: Arc<Notify>,
        store: StoreLink,
        trust_dir: PathBuf,
        max_revocation_age: Duration,
        /// The store skills the sweep also checks (set once the core's skills exist).
        skills: Arc<std::sync::OnceLock<StoreSkills>>,
        /// The store's event stream follower (`crate::store_push`).
        push: crate::store_push::PushSlot,
    }

    /// The person's store skills as the sweep sees them: where they are installed, and the
    /// catalog to take a removed one out of.
    #[derive(Clone)]
    pub struct StoreSkills {
        pub installer: SkillInstaller,
        pub skills: osprey_agent::Skills,
    }

    /// What became of each app's launch by `start_apps`, by app id: `("launching", "")` while
    /// it runs, else why it failed (`code`, message); no entry once launched. A channel names
    /// each app whose entry changed (the UI's app list listens; see `app_status.rs`).
    #[derive(Clone)]
    pub struct LaunchReports {
        failures: Arc<Mutex<std::collections::HashMap<String, (String, String)>>>,
        changed: tokio::sync::broadcast::Sender<String>,
    }

    /// The code of a launch in progress.
    pub const LAUNCHING: &str = "launching";

    impl Default for LaunchReports {
        fn default() -> Self {
            LaunchReports {
                failures: Arc::default(),
                changed: tokio::sync::broadcast::channel(64).0,
            }
        }
    }

    impl LaunchReports {
        fn set(&self, id: &str, failure: Option<(String, String)>) {
            let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
            match failure {
                Some(failure) => failures.insert(id.to_string(), failure),
                None => failures.remove(id),
            };
            drop(failures);
            let _ = self.changed.send(id.to_string());
        }

        pub fn get(&self, id: &str) -> Option<(String, String)> {
            self.failures
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(id)
                .cloned()
        }

        pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<String> {
            self.changed.subscribe()
        }
    }

    /// What `start_apps` started: cancelled by `stop_apps` or when the core is dropped.
    struct Running {
        cancel: CancellationToken,
        watcher: Arc<Mutex<Option<AppWatcher>>>,
    }

    impl std::fmt::Debug for AppPlatform {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("AppPlatform")
                .field("apps_dir", &self.apps_dir)
                .finish_non_exhaustive()
        }
    }

    impl AppPlatform {
        /// Builds the platform without starting anything: creates `<data>/apps`, sets the hook
        /// dispatcher on `registry` and registers the `app` tool. Reads no app directory.
        pub fn open(
            data_dir: &Path,
            registry: &Registry,
            accounts: AccountWiring,
            store: StoreLink,
            max_revocation_age: Duration,
            events: EventBus,
            subscriptions: osprey_db::CommSubscriptions,
        ) -> anyhow::Result<AppPlatform> {
            let apps_dir = super::apps_dir(data_dir);
            std::fs::create_dir_all(&apps_dir)
                .with_context(|| format!("creating {}", apps_dir.display()))?;
            let trust_dir = data_dir.join("trust");
            let trust = Arc::new(Trust::new(
                StoreSource(store.clone()),
                trust_dir.clone(),
                max_revocation_age,
            ));
            let hooks = AppHooks::default();
            registry.set_hooks(Arc::new(hooks.clone()));
            // Pushed with each app's accounts and store token (see `crate::accounts`).
            let settings = SettingsStore::new(&apps_dir).with_credentials(accounts.credentials);
            let comms = Comms::default();
            comms.set_store(Arc::new(KeptSubscriptions(subscriptions)));
            let channels = Channels::default();
            let supervisor = Supervisor::idle();
            let capabilities = Arc::new(
                Capabilities::new(registry.clone(), hooks)
                    .with_settings(settings.clone())
                    .with_token_refresher(token_refresher(
                        supervisor.clone(),
                        settings.clone(),
                        accounts.refresh,
                    ))
                    .with_comms(comms.clone())
                    .with_channels(channels.clone()),
            );
            // Every removal (the app tool's, the core's) deletes the app's tokens and forgets its
            // comm subscriptions.
            let installer = Installer::new(&apps_dir).on_removed({
                let comms = comms.clone();
                let tokens = accounts.on_removed;
                Arc::new(move |manifest: &osprey_apps::Manifest| {
                    tokens(manifest);
                    comms.forget(&manifest.id);
                })
            });
            registry.register_domain(AppsTool::new(
                installer.clone(),
                supervisor.clone(),
                settings.clone(),
                Some((store.clone(), Arc::clone(&trust))),
            ));
            Ok(AppPlatform {
                apps_dir,
                settings,
                installer,
                supervisor,
                capabilities,
                comms,
                channels,
                trust,
                config: SupervisorConfig::default(),
                launch: LaunchOptions::default(),
                running: Mutex::new(None),
                launch_reports: LaunchReports::default(),
                events,
                held: Arc::default(),
                sweep_now: Arc::new(Notify::new()),
                store,
                trust_dir,
                max_revocation_age,
                skills: Arc::default(),
                push: crate::store_push::PushSlot::default(),
            })
        }

        /// Lets the revocation sweep check the store skills in `skills`' folder too.
        pub fn attach_skills(&self, skills: &osprey_agent::Skills) {
            if let Some(dir) = skills.user_dir() {
                let _ = self.skills.set(StoreSkills {
                    installer: SkillInstaller::new(dir),
                    skills: skills.clone(),
                });
            }
        }

        /// The store link (its address asked at each use).
        pub fn store(&self) -> &StoreLink {
            &self.store
        }

        /// The store's event stream follower.
        pub(crate) fn push(&self) -> &crate::store_push::PushSlot {
            &self.push
        }

        /// Installs (or updates) an app from a `.napp` file (a path ending in `.napp`, or any
        /// existing file) or by its store id, through the installer's one verified path:
        /// extracted once, its signatures checked against the store's key and its id and
        /// version against the revocation list before anything is placed. `store` overrides
        /// the configured store for this install (the CLI's `--store`).
        pub async fn install(
            &self,
            source: &str,
            store: Option<String>,
        ) -> osprey_apps::Result<osprey_apps::InstallOutcome> {
            let path = Path::new(source);
            if source.ends_with(".napp") || path.is_file() {
                return self.install_package(source, store, &mut |_, _, _| {}).await;
            }
            self.install_from_store(source, store, None, &mut |_, _, _| {})
                .await
        }

        /// Installs a `.napp` file through the verified path (see [`AppPlatform::install`]);
        /// `progress` hears once when verifying starts.
        pub async fn install_package(
            &self,
            file: &str,
            store: Option<String>,
            progress: &mut (dyn FnMut(InstallStage, u64, Option<u64>) + Send),
        ) -> osprey_apps::Result<osprey_apps::InstallOutcome> {
            let (_, trust) = self.store_and_trust(store);
            self.ensure_apps_dir()?;
            let path = Path::new(file);
            let file = std::fs::File::open(path).map_err(|error| osprey_apps::Error::Io {
                context: format!("open {}", path.display()),
                source: error,
            })?;
            self.verify_and_place(file, &trust, progress).await
        }

        /// Downloads the store app `id` and installs it through the verified path, telling
        /// `progress` the bytes received and the length announced, then when verifying starts.
        /// Never reads a local file, whatever `id` is. With `expected_sha256` (the package a
        /// person approved), a download of other bytes is refused before it is unpacked.
        pub async fn install_from_store(
            &self,
            id: &str,
            store: Option<String>,
            expected_sha256: Option<&str>,
            progress: &mut (dyn FnMut(InstallStage, u64, Option<u64>) + Send),
        ) -> osprey_apps::Result<osprey_apps::InstallOutcome> {
            let (client, trust) = self.store_and_trust(store);
            self.ensure_apps_dir()?;
            let Some(client) = client else {
                return Err(osprey_apps::Error::StoreUnavailable(format!(
                    "`{id}` is not a file, and no store is configured to install it \
                     from: pass --store URL, set OSPREY_STORE_URL, or run \
                     `osprey config set store.url URL`"
                )));
            };
            let mut file = client
                .download_with_progress(id, &self.apps_dir, &mut |received, total| {
                    progress(InstallStage::Downloading, received, total)
                })
                .await?;
            if let Some(expected) = expected_sha256 {
                let found = sha256_of(&mut file)?;
                if found != expected {
                    return Err(osprey_apps::Error::StoreRefused {
                        code: "changed".into(),
                        message: format!(
                            "the store's package of `{id}` changed since it was approved \
                             (SHA-256 {} then, {} now): ask again",
                            &expected[..expected.len().min(12)],
                            &found[..12]
                        ),
                    });
                }
            }
            self.verify_and_place(file, &trust, progress).await
        }

        /// The store client and trust for an install: `store` overrides the configured store.
        fn store_and_trust(&self, store: Option<String>) -> (Option<StoreClient>, Arc<Trust>) {
            match store {
                Some(url) => {
                    let client = StoreClient::new(url.clone());
                    let trust = Trust::new(
                        StoreSource(StoreLink::fixed(Some(url))),
                        self.trust_dir.clone(),
                        self.max_revocation_age,
                    );
                    (Some(client), Arc::new(trust))
                }
                None => (self.store.client(), Arc::clone(&self.trust)),
            }
        }

        /// The trust in the configured store (its signing key and revocation list, cached).
        pub fn trust(&self) -> &Arc<Trust> {
            &self.trust
        }

        fn ensure_apps_dir(&self) -> osprey_apps::Result<()> {
            std::fs::create_dir_all(&self.apps_dir).map_err(|source| osprey_apps::Error::Io {
                context: format!("create {}", self.apps_dir.display()),
                source,
            })
        }

        async fn verify_and_place(
            &self,
            file: std::fs::File,
            trust: &Trust,
            progress: &mut (dyn FnMut(InstallStage, u64, Option<u64>) + Send),
        ) -> osprey_apps::Result<osprey_apps::InstallOutcome> {
            let length = file.metadata().map(|m| m.len()).unwrap_or_default();
            progress(InstallStage::Verifying, length, Some(length));
            self.installer
                .install_from_store(std::io::BufReader::new(file), trust)
                .await
        }

        pub fn apps_dir(&self) -> &Path {
            &self.apps_dir
        }

        pub fn supervisor(&self) -> &Supervisor {
            &self.supervisor
        }

        /// Each app's recent gRPC calls (the inspector's rings), filled by the launches here.
        pub fn traffic(&self) -> &osprey_rpc::Traffic {
            &self.launch.traffic
        }

        /// The apps' saved settings, and what is pushed to them with `Configure`.
        pub fn settings(&self) -> &SettingsStore {
            &self.settings
        }

        pub fn installer(&self) -> &Installer {
            &self.installer
        }

        /// The comm apps attached now, their incoming messages and sends (see `crate::comm`).
        pub fn comms(&self) -> &Comms {
            &self.comms
        }

        /// The channel apps attached now, their events and posts (see `crate::comm`).
        pub fn channels(&self) -> &Channels {
            &self.channels
        }

        pub fn launch_reports(&self) -> &LaunchReports {
            &self.launch_reports
        }

        /// Starts the apps in the background on the current tokio runtime and returns at once;
        /// a second call while they run does nothing. Fails only outside a tokio runtime.
        pub fn start(&self) -> anyhow::Result<()> {
            let runtime = tokio::runtime::Handle::try_current()
                .context("starting apps needs a tokio runtime")?;
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if running.is_some() {
                return Ok(());
            }
            let cancel = CancellationToken::new();
            let watcher = Arc::new(Mutex::new(None));
            let launcher = Launcher::new(&self.apps_dir, self.launch.clone())
                .with_trust(Arc::clone(&self.trust));
            let job = StartJob {
                apps_dir: self.apps_dir.clone(),
                installer: self.installer.clone(),
                supervisor: self.supervisor.clone(),
                capabilities: Arc::clone(&self.capabilities),
                config: self.config.clone(),
                launcher,
                cancel: cancel.clone(),
                watcher: Arc::clone(&watcher),
                launch_reports: self.launch_reports.clone(),
            };
            runtime.spawn(job.run());
            runtime.spawn(self.sweeper().run(cancel.clone()));
            *running = Some(Running { cancel, watcher });
            Ok(())
        }

        /// Runs the supervisor here without launching every installed app, then launches `ids`
        /// (at once, each attached as it becomes healthy) and returns each one's outcome: for a
        /// short-lived command that needs a few apps (`osprey tool <app tool>`), in a process
        /// that holds the data folder. No watcher and no periodic sweep (each launch still checks
        /// the revocation list). [`AppPlatform::stop`] stops them; a second call while the
        /// supervisor runs only launches.
        pub async fn launch_here(&self, ids: &[String]) -> Vec<(String, osprey_apps::Result<u32>)> {
            let started = {
                let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
                if running.is_some() {
                    None
                } else {
                    let cancel = CancellationToken::new();
                    *running = Some(Running {
                        cancel: cancel.clone(),
                        watcher: Arc::default(),
                    });
                    Some(cancel)
                }
            };
            if let Some(cancel) = started {
                // This process holds the folder, so any app process still running is an orphan.
                kill_orphans_of(self.apps_dir.clone()).await;
                let launcher = Launcher::new(&self.apps_dir, self.launch.clone())
                    .with_trust(Arc::clone(&self.trust));
                self.supervisor.run(
                    launcher,
                    self.capabilities.clone(),
                    self.config.clone(),
                    cancel,
                );
            }
            let launches = ids
                .iter()
                .map(|id| async move { (id.clone(), self.supervisor.launch(id).await) });
            futures::future::join_all(launches).await
        }

        /// The tools app `id` registered in this process's registry.
        pub fn tools_of(&self, id: &str) -> Vec<String> {
            self.capabilities.tools_of(id)
        }

        /// Checks the installed apps against the store's revocation list now (fetched fresh when
        /// `fresh`): each revoked one is stopped, quarantined and announced
        /// ([`CoreEvent::AppRevoked`]). When no list can be had (the store unreachable and the
        /// cache older than [`MAX_REVOCATION_AGE`]), running store apps are stopped and held
        /// until a later sweep gets a list: revocation fails closed. The same runs at start,
        /// every [`super::SWEEP_INTERVAL`] and on [`AppPlatform::sweep_revocations_soon`].
        pub async fn sweep_revocations(&self, fresh: bool) -> SweepReport {
            self.sweeper().sweep(fresh).await
        }

        /// Wakes the running sweep loop (the store announced a revocation).
        pub fn sweep_revocations_soon(&self) {
            self.sweep_now.notify_one();
        }

        fn sweeper(&self) -> Sweeper {
            Sweeper {
                installer: self.installer.clone(),
                supervisor: self.supervisor.clone(),
                trust: Arc::clone(&self.trust),
                reports: self.launch_reports.clone(),
                events: self.events.clone(),
                held: Arc::clone(&self.held),
                wake: Arc::clone(&self.sweep_now),
                skills: self.skills.get().cloned(),
            }
        }

        /// Stops every app (SIGTERM, grace, SIGKILL; capabilities removed) and the watcher, and
        /// returns once the supervisor has finished. Nothing to do if the apps were not started.
        pub async fn stop(&self) {
            let running = self
                .running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            let Some(running) = running else {
                return;
            };
            running.cancel.cancel();
            running
                .watcher
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            self.supervisor.stopped().await;
        }
    }

    impl Drop for AppPlatform {
        fn drop(&mut self) {
            // The supervisor task (if any) stops its apps once cancelled.
            if let Some(running) = self
                .running
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                running.cancel.cancel();
            }
        }
    }

    /// Refreshes an app's account now (its manifest given): `Some(true)` when new tokens are
    /// stored, `Some(false)` when the provider refused and the account was dropped, `None` when
    /// nothing changed.
    pub type AccountRefresh = Arc<
        dyn Fn(osprey_apps::Manifest) -> futures::future::BoxFuture<'static, Option<bool>>
            + Send
            + Sync,
    >;

    /// How the app platform reaches the core's accounts (`crate::accounts`).
    pub struct AccountWiring {
        /// Adds each app's tokens and store token to what `Configure` pushes.
        pub credentials: Arc<dyn osprey_apps::settings::Credentials>,
        /// Deletes a removed app's tokens.
        pub on_removed: osprey_apps::install::RemovalHook,
        /// Refreshes an app's account when its tool answers `token_expired`.
        pub refresh: AccountRefresh,
    }

    /// What an app tool's `token_expired` answer runs: the account refreshed, then the new
    /// token pushed to the running app.
    fn token_refresher(
        supervisor: Supervisor,
        settings: SettingsStore,
        refresh: AccountRefresh,
    ) -> osprey_apps::provided_tools::TokenRefresher {
        Arc::new(move |app_id: String| {
            let (supervisor, settings, refresh) =
                (supervisor.clone(), settings.clone(), Arc::clone(&refresh));
            Box::pin(async move {
                let Ok(Some((manifest, channel))) = supervisor.channel(&app_id).await else {
                    return false;
                };
                let Some(refreshed) = refresh(manifest.clone()).await else {
                    return false;
                };
                // A dropped account is pushed too: the app must stop using the old token.
                let pushed = settings.push_to(channel, &manifest).await.is_ok();
                refreshed && pushed
            })
        })
    }

    /// The revocation sweep's handles (cheap clones of the platform's).
    struct Sweeper {
        installer: Installer,
        supervisor: Supervisor,
        trust: Arc<Trust>,
        reports: LaunchReports,
        events: EventBus,
        held: Arc<Mutex<BTreeSet<String>>>,
        wake: Arc<Notify>,
        skills: Option<StoreSkills>,
    }

    impl Sweeper {
        /// At start, then every interval or when woken, until cancelled. A wake is fresh: the
        /// store just said something changed.
        async fn run(self, cancel: CancellationToken) {
            let mut fresh = false;
            loop {
                let report = self.sweep(fresh).await;
                if !report.revoked.is_empty()
                    || !report.revoked_skills.is_empty()
                    || report.unavailable.is_some()
                {
                    tracing::warn!(?report, "revocation sweep");
                }
                fresh = tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(super::SWEEP_INTERVAL) => false,
                    () = self.wake.notified() => true,
                };
            }
        }

        async fn sweep(&self, fresh: bool) -> SweepReport {
            let mut report = SweepReport::default();
            // Sideloaded apps and the person's own skills have no store to revoke them: without
            // store apps or skills nothing is asked of the store (nor warned about when there is
            // none).
            let installer = self.installer.clone();
            let skills = self.skills.clone();
            let from_a_store = tokio::task::spawn_blocking(move || {
                installer.list().iter().any(|app| !app.sideloaded)
                    || skills.is_some_and(|s| !s.installer.installed().is_empty())
            })
            .await
            .unwrap_or(true);
            if !from_a_store {
                return report;
            }
            match self.trust.revocations_from(fresh).await {
                Ok(list) => {
                    let installer = self.installer.clone();
                    let revoked = {
                        let list = list.clone();
                        tokio::task::spawn_blocking(move || installer.revoked_in(&list))
                            .await
                            .unwrap_or_default()
                    };
                    for (id, reason) in revoked {
                        self.revoke(&id, &reason).await;
                        report.revoked.push((id, reason));
                    }
                    report.revoked_skills = self.revoke_skills(list).await;
                    let held =
                        std::mem::take(&mut *self.held.lock().unwrap_or_else(|e| e.into_inner()));
                    for id in held {
                        self.reports.set(&id, None);
                        if self.supervisor.is_running() {
                            match self.supervisor.launch(&id).await {
                                Ok(_) => report.released.push(id),
                                Err(error) => self
                                    .reports
                                    .set(&id, Some((error.code().to_string(), error.to_string()))),
                            }
                        }
                    }
                }
                Err(error) => {
                    let why = error.to_string();
                    for app in self.installer.list() {
                        let id = app.manifest.id;
                        if app.sideloaded
                            || app.quarantined.is_some()
                            || !self.is_running(&id).await
                        {
                            continue;
                        }
                        if let Err(stop) = self.supervisor.stop(&id).await {
                            tracing::warn!(app = %id, "could not stop an app without a revocation list: {stop}");
                        }
                        self.reports
                            .set(&id, Some((error.code().to_string(), why.clone())));
                        self.held
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(id.clone());
                        report.held.push(id);
                    }
                    report.unavailable = Some(why);
                }
            }
            report
        }

        async fn is_running(&self, id: &str) -> bool {
            self.supervisor
                .status()
                .await
                .unwrap_or_default()
                .iter()
                .any(|(running, _)| running == id)
        }

        /// Removes each installed store skill `list` revokes, takes it out of the skill catalog
        /// (and every session's active skills) and tells the shells.
        async fn revoke_skills(
            &self,
            list: Vec<osprey_apps::trust::Revocation>,
        ) -> Vec<(String, String)> {
            let Some(skills) = self.skills.clone() else {
                return Vec::new();
            };
            let installer = skills.installer.clone();
            let removed = tokio::task::spawn_blocking(move || {
                installer
                    .revoked_among(&list)
                    .into_iter()
                    .filter(|(name, _)| match installer.uninstall(name) {
                        Ok(_) => true,
                        Err(error) => {
                            tracing::error!(skill = %name, "a revoked skill could not be removed: {error}");
                            false
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
            if !removed.is_empty() {
                skills.skills.catalog().refresh();
            }
            for (name, reason) in &removed {
                skills.skills.changed(name);
                self.events.emit(CoreEvent::SkillRevoked {
                    name: name.clone(),
                    reason: reason.clone(),
                });
            }
            removed
        }

        /// Stops the app (if it runs), quarantines it and tells the shells.
        async fn revoke(&self, id: &str, reason: &str) {
            if self.is_running(id).await
                && let Err(error) = self.supervisor.stop(id).await
            {
                tracing::warn!(app = %id, "stopping a revoked app: {error}");
            }
            let installer = self.installer.clone();
            let (owned, why) = (id.to_string(), format!("revoked: {reason}"));
            let quarantined =
                tokio::task::spawn_blocking(move || installer.quarantine(&owned, &why)).await;
            match quarantined {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::error!(app = %id, "a revoked app could not be quarantined: {error}")
                }
                Err(error) => {
                    tracing::error!(app = %id, "quarantining a revoked app failed: {error}")
                }
            }
            self.held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(id);
            // The app list shows the quarantine; the notice says why.
            self.reports.set(id, None);
            self.events.emit(CoreEvent::AppRevoked {
                app_id: id.to_string(),
                reason: reason.to_string(),
            });
        }
    }

    /// The SHA-256 (hex) of a downloaded file, read from its start; left rewound.
    fn sha256_of(file: &mut std::fs::File) -> osprey_apps::Result<String> {
        use sha2::Digest;
        use std::io::{Read, Seek, SeekFrom};
        let io = |e| osprey_apps::Error::Io {
            context: "hash the download".into(),
            source: e,
        };
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut hasher = sha2::Sha256::new();
        let mut buffer = vec![0u8; 256 * 1024];
        loop {
            let read = file.read(&mut buffer).map_err(io)?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        Ok(hex::encode(hasher.finalize()))
    }

    /// Kills the app processes a previous run left behind in `apps_dir`.
    async fn kill_orphans_of(apps_dir: PathBuf) {
        let orphans = tokio::task::spawn_blocking(move || kill_orphans(&apps_dir))
            .await
            .unwrap_or_default();
        if !orphans.is_empty() {
            tracing::warn!(?orphans, "killed apps left running by a previous run");
        }
    }

    /// The background half of `start`.
    struct StartJob {
        apps_dir: PathBuf,
        installer: Installer,
        supervisor: Supervisor,
        capabilities: Arc<Capabilities>,
        config: SupervisorConfig,
        launcher: Launcher,
        cancel: CancellationToken,
        watcher: Arc<Mutex<Option<AppWatcher>>>,
        launch_reports: LaunchReports,
    }

    impl StartJob {
        async fn run(self) {
            // Orphans first, so no launch finds its app still running from before.
            kill_orphans_of(self.apps_dir.clone()).await;
            if self.cancel.is_cancelled() {
                return;
            }
            self.supervisor.run(
                self.launcher,
                self.capabilities,
                self.config,
                self.cancel.clone(),
            );
            match watch(
                &self.apps_dir,
                self.supervisor.clone(),
                WATCH_DEBOUNCE,
                self.cancel.clone(),
            ) {
                Ok(watcher) => {
                    let mut slot = self.watcher.lock().unwrap_or_else(|e| e.into_inner());
                    // Stopped meanwhile: drop the watcher rather than keep it.
                    if !self.cancel.is_cancelled() {
                        *slot = Some(watcher);
                    }
                }
                Err(error) => tracing::warn!("apps are not watched for changes: {error}"),
            }
            let installer = self.installer.clone();
            let installed = tokio::task::spawn_blocking(move || installer.list())
                .await
                .unwrap_or_default();
            let launches = installed
                .into_iter()
                .filter(|app| app.quarantined.is_none())
                .map(|app| {
                    let supervisor = self.supervisor.clone();
                    let failures = self.launch_reports.clone();
                    async move {
                        let id = app.manifest.id;
                        failures.set(&id, Some((LAUNCHING.to_string(), String::new())));
                        match supervisor.launch(&id).await {
                            Ok(_) => failures.set(&id, None),
                            Err(error) => {
                                tracing::warn!(app = %id, "not launched: {error}");
                                failures
                                    .set(&id, Some((error.code().to_string(), error.to_string())));
                            }
                        }
                    }
                });
            tokio::select! {
                () = self.cancel.cancelled() => {}
                _ = futures::future::join_all(launches) => {}
            }
        }
    }
}
