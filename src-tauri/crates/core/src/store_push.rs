//! Store-pushed changes: a long-running Osprey (the desktop, `osprey daemon`) follows the store's
//! event stream (`GET /api/v1/events`, server-sent events; see osprey-store's `events` and
//! `osprey_apps::store_events`) and applies what it says, each through the path a person's own
//! action takes, so the push adds no way around a check:
//!
//! - `revoked` of an app or skill installed here wakes the revocation sweep now, with a freshly
//!   fetched list: the event itself is only a wake-up, the store's signed-for list decides (and
//!   fails closed as the sweep does); one of something not installed here fetches nothing. A
//!   revoked running app is stopped and quarantined, a revoked store skill removed, each with a
//!   [`CoreEvent`] the desktop turns into a notification.
//! - `updated` of an installed store app installs the store's version through the one install
//!   path ([`Core::install_store_app`]): the same permissions swap in place (the watcher restarts
//!   it), added permissions are staged until the person approves them on the Apps page. An
//!   installed store skill is updated through [`Core::install_store_skill`].
//! - `installed` (the person installed the app on another device or on the store's page) is
//!   never applied silently: it is the agent's `store` install call, asked every time with the
//!   app's name, publisher, version and permissions, run with origin `system` in the session
//!   [`STORE_PUSH_SESSION`], and installs only on yes. With nobody to ask (`osprey daemon` has no
//!   UI) it is refused. One question per app at a time: an `installed` that arrives while it is
//!   asked is asked after it, unless the app was installed meanwhile. The question is noted in
//!   the database (`store_pending_installs`) until answered, since the event's id is kept as
//!   soon as it is asked: a stop while it waits asks it again once the next start connects.
//! - `uninstalled` removes the app through [`Core::uninstall_app`] and says so
//!   ([`CoreEvent::AppRemoved`]); sideloaded apps are never touched. It runs on a task of its
//!   own that a reconnect or a stop does not cut short.
//! - `reset` (the store no longer has the events after our id) runs the full check: a fresh
//!   sweep and an update check of every installed store app and skill.
//! - An event this Osprey cannot read (a kind a newer store added, data that does not parse or
//!   is over 64 KB) is logged and skipped with its id kept, so one bad event never stops the
//!   events after it; the sweep and the update check cover what it may have said.
//!
//! The first connection to a store (no id kept for it) replays nothing, so it wakes a fresh
//! revocation sweep instead. A person's token the store refuses does not stop the follower: it
//! follows the public events (revocations, updates) and says the token was refused.
//!
//! The follower reconnects after 1 s, doubling to 5 min (back to 1 s once an event other than
//! `ready` came through, or the connection held for a minute), with `Last-Event-ID`: the id of the
//! last event applied, kept per store URL in the database (`store_cursors`), so a restart or a
//! dropped connection misses nothing. A change of `store.url` or of the person's store token
//! (`store.token` in the secret store, [`Core::set_store_token`]) reconnects at once. Installs and updates run on tasks of
//! their own, so a question waiting for the person never delays a revocation.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use osprey_apps::store_events::{PushedEvent, StoreChange};
use osprey_apps::trust::RevokedKind;
use osprey_types::{CoreEvent, Origin};
use serde_json::json;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::{Core, WeakCore};

/// The session a pushed install is asked in, so the question (and the audit) says where it came
/// from.
pub const STORE_PUSH_SESSION: &str = "store-push";
/// The first wait before reconnecting; it doubles up to [`MAX_RETRY`] while connecting fails.
pub const FIRST_RETRY: Duration = Duration::from_secs(1);
pub const MAX_RETRY: Duration = Duration::from_secs(300);
/// A connection that stayed up this long counts as working: the next reconnect waits
/// [`FIRST_RETRY`] again. (A `ready` alone does not: a store that says `ready` and then drops
/// the connection every time would otherwise be asked once a second forever.)
pub const STABLE_AFTER: Duration = Duration::from_secs(60);

/// Where the follower stands (tests and the settings page read it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreEventsStatus {
    /// The store it follows (or tries to).
    pub store_url: Option<String>,
    /// Whether a stream is open now (the store said `ready`).
    pub connected: bool,
    /// The last event id applied (or resumed from).
    pub last_event_id: Option<String>,
    /// Why the last connection failed or ended, or why it follows without the person's token.
    pub error: Option<String>,
    /// How many connections were opened so far.
    pub connections: u64,
}

/// The apps whose pushed install is being asked, each with whether another `installed` for it
/// came meanwhile.
type Asking = Arc<Mutex<HashMap<String, bool>>>;

/// The follower's handle in the app platform.
pub(crate) struct PushSlot {
    running: Mutex<Option<CancellationToken>>,
    reconnect: Arc<Notify>,
    status: watch::Sender<StoreEventsStatus>,
}

impl Default for PushSlot {
    fn default() -> Self {
        PushSlot {
            running: Mutex::default(),
            reconnect: Arc::new(Notify::new()),
            status: watch::channel(StoreEventsStatus::default()).0,
        }
    }
}

impl Core {
    /// Follows the store's event stream on the current tokio runtime until
    /// [`Core::stop_store_events`] (or the core is dropped). [`Core::start`] starts it after the
    /// apps; a second call does nothing.
    pub fn start_store_events(&self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| anyhow::anyhow!("following the store's events needs a tokio runtime"))?;
        let slot = self.apps().push();
        let mut running = slot.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.is_some() {
            return Ok(());
        }
        let cancel = CancellationToken::new();
        runtime.spawn(follow(self.downgrade(), cancel.clone()));
        *running = Some(cancel);
        Ok(())
    }

    /// Stops following the store's events (and any install or update it started).
    pub async fn stop_store_events(&self) {
        let slot = self.apps().push();
        if let Some(cancel) = slot
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            cancel.cancel();
        }
        slot.status.send_modify(|status| status.connected = false);
    }

    /// Drops the current stream and connects again at once (the store URL or token changed).
    pub fn reconnect_store_events(&self) {
        self.apps().push().reconnect.notify_one();
    }

    /// Where the store event follower stands, updated as it changes.
    pub fn store_events_status(&self) -> watch::Receiver<StoreEventsStatus> {
        self.apps().push().status.subscribe()
    }

    /// Applies one change the store pushed (see the module documentation). Long work (installs,
    /// updates, a question to the person) goes on `tasks`.
    async fn apply_store_change(
        &self,
        url: &str,
        change: StoreChange,
        tasks: &mut JoinSet<()>,
        asking: &Asking,
    ) {
        match change {
            // Connected: ask again what a stop cut short (or what another connection left).
            StoreChange::Ready => {
                let pending = self.db().store_cursors().pending_installs(url);
                for id in pending.unwrap_or_default() {
                    if self.is_installed(&id).await {
                        self.answered_pushed_install(url, &id);
                    } else {
                        self.ask_pushed_install(url, id, tasks, asking, false);
                    }
                }
            }
            StoreChange::Other { .. } => {}
            // Only a revocation of something installed here is worth fetching the whole list
            // for; the hourly sweep still covers everything.
            StoreChange::Revoked { kind, id, .. } => {
                let installed = match kind {
                    RevokedKind::App => self.installed_store_version(&id).await.is_some(),
                    RevokedKind::Skill => self
                        .skill_installer()
                        .is_ok_and(|installer| installer.record(&id).is_some()),
                };
                if installed {
                    tracing::info!(?kind, %id, "the store revoked something installed here: sweeping now");
                    self.apps().sweep_revocations_soon();
                }
            }
            StoreChange::Reset => {
                tracing::info!(
                    "the store's event log no longer reaches our last event: checking everything"
                );
                self.apps().sweep_revocations_soon();
                tasks.spawn(self.clone().check_store_updates());
            }
            StoreChange::Updated {
                kind: RevokedKind::App,
                id,
                version,
            } => {
                if self
                    .installed_store_version(&id)
                    .await
                    .is_some_and(|v| v != version)
                {
                    tasks.spawn(self.clone().update_store_app(id));
                }
            }
            StoreChange::Updated {
                kind: RevokedKind::Skill,
                id,
                version,
            } => {
                let record = self.skill_installer().ok().and_then(|i| i.record(&id));
                if record.is_some_and(|r| r.version != version) {
                    tasks.spawn(self.clone().update_store_skill(id));
                }
            }
            StoreChange::Installed { id } => {
                if !self.is_installed(&id).await {
                    self.ask_pushed_install(url, id, tasks, asking, true);
                }
            }
            // On a task of its own, like an install: a reconnect, or a stop, must not cut a
            // removal half way (the inner task runs on even if the follower's tasks are ended).
            StoreChange::Uninstalled { id } => {
                let core = self.clone();
                tasks.spawn(async move {
                    let _ = tokio::spawn(core.remove_pushed(id)).await;
                });
            }
        }
    }

    async fn is_installed(&self, id: &str) -> bool {
        self.installed_apps()
            .await
            .iter()
            .any(|app| app.manifest.id == id)
    }

    /// Asks, on a task, whether to install `id` as the store at `url` pushed, noting the
    /// question in the database until it is answered, so a stop while it waits asks it again at
    /// the next connection. One question per app at a time: a new `installed` (`again`) that
    /// arrives while it is asked is asked once more after it, unless the app got installed
    /// meanwhile; a noted question asked again on connecting is never doubled.
    fn ask_pushed_install(
        &self,
        url: &str,
        id: String,
        tasks: &mut JoinSet<()>,
        asking: &Asking,
        again: bool,
    ) {
        if let Err(error) = self.db().store_cursors().add_pending_install(url, &id) {
            tracing::warn!(app = %id, "cannot note the pushed install's question: {error}");
        }
        match asking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id.clone())
        {
            Entry::Occupied(mut waiting) => {
                if again {
                    waiting.insert(true);
                }
                return;
            }
            Entry::Vacant(entry) => {
                entry.insert(false);
            }
        }
        tasks.spawn(
            self.clone()
                .ask_until_answered(url.to_string(), id, Arc::clone(asking)),
        );
    }

    fn answered_pushed_install(&self, url: &str, id: &str) {
        if let Err(error) = self.db().store_cursors().remove_pending_install(url, id) {
            tracing::warn!(app = %id, "cannot forget the pushed install's question: {error}");
        }
    }

    /// Asks to install `id` (see [`Core::ask_to_install`]), again for each `installed` that came
    /// while it was asked, until it is installed or no such event is waiting. A stop drops this
    /// future mid-question, leaving the question noted for the next start.
    async fn ask_until_answered(self, url: String, id: String, asking: Asking) {
        loop {
            self.ask_to_install(&id).await;
            let installed = self.is_installed(&id).await;
            let mut waiting = asking.lock().unwrap_or_else(|e| e.into_inner());
            if !installed && waiting.get(&id) == Some(&true) {
                waiting.insert(id.clone(), false);
                continue;
            }
            waiting.remove(&id);
            drop(waiting);
            self.answered_pushed_install(&url, &id);
            return;
        }
    }

    /// Removes the store app `id` because the person removed it elsewhere (never a sideload),
    /// and says so.
    async fn remove_pushed(self, id: String) {
        let app = self
            .installed_apps()
            .await
            .into_iter()
            .find(|app| app.manifest.id == id && !app.sideloaded);
        let Some(app) = app else { return };
        match self.remove_app(&id, false).await {
            Ok(()) => self.emit(CoreEvent::AppRemoved {
                app_id: id,
                reason: format!(
                    "You removed {} on another device or on the store's page, so Osprey removed \
                     it here too, with its data.",
                    app.manifest.name
                ),
            }),
            Err(error) => {
                tracing::warn!(app = %id, "the store says it was removed; removing it here failed: {}", error.message)
            }
        }
    }

    /// The installed version of the store app `id` (not sideloaded, not quarantined).
    async fn installed_store_version(&self, id: &str) -> Option<String> {
        self.installed_apps()
            .await
            .into_iter()
            .find(|app| app.manifest.id == id && !app.sideloaded && app.quarantined.is_none())
            .map(|app| app.manifest.version)
    }

    async fn update_store_app(self, id: String) {
        match self.install_store_app(&id).await {
            Ok(report) => tracing::info!(app = %id, "the store's update: {}", report.message),
            Err(error) => tracing::warn!(app = %id, "the store's update failed: {}", error.message),
        }
    }

    async fn update_store_skill(self, name: String) {
        if let Err(error) = self.install_store_skill(&name, None).await {
            tracing::warn!(skill = %name, "the store's skill update failed: {}", error.message);
        }
    }

    /// The full check after a `reset`: every installed store app and skill against the store's
    /// current version.
    async fn check_store_updates(self) {
        let Ok((client, _)) = self.store_client() else {
            return;
        };
        for app in self.installed_apps().await {
            if app.sideloaded || app.quarantined.is_some() {
                continue;
            }
            let id = app.manifest.id;
            match client.app(&id).await {
                Ok(entry) if entry["version"].as_str() != Some(&app.manifest.version) => {
                    self.clone().update_store_app(id).await
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(app = %id, "checking for an update: {error}"),
            }
        }
        let records = self
            .skill_installer()
            .map(|i| i.installed())
            .unwrap_or_default();
        for record in records {
            match client.skill(&record.name).await {
                Ok(entry) if entry["version"].as_str() != Some(&record.version) => {
                    self.clone().update_store_skill(record.name).await
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(skill = %record.name, "checking for an update: {error}")
                }
            }
        }
    }

    /// Asks the person whether to install the store app `id` here too, as the agent's store
    /// install is asked (every time, with its name, publisher, version and permissions), and
    /// installs it only on yes.
    async fn ask_to_install(&self, id: &str) {
        let timeout = self.approvals().timeout() + Duration::from_secs(600);
        let ctx = osprey_tools::ToolContext::new(Origin::System, timeout)
            .with_session(STORE_PUSH_SESSION);
        let result = self
            .call_tool_with(
                &ctx,
                "store",
                json!({"resource": "apps", "action": "install", "id": id}),
            )
            .await;
        if result.is_error {
            tracing::info!(app = %id, "not installed from the store's push: {}", result.text_content());
        }
    }
}

/// How one connection ended.
enum Ended {
    /// Stopping: the follower ends.
    Cancelled,
    /// The store URL or token changed: connect again at once.
    Reconnect,
    /// Refused, failed or dropped (why): connect again after the backoff.
    Dropped(String),
}

/// The follow loop: connect, apply, remember, reconnect.
async fn follow(weak: WeakCore, cancel: CancellationToken) {
    let mut retry = FIRST_RETRY;
    let mut tasks = JoinSet::new();
    let asking = Asking::default();
    loop {
        let Some(core) = weak.upgrade() else { break };
        let reconnect = Arc::clone(&core.apps().push().reconnect);
        let status = core.apps().push().status.clone();
        let client = core.apps().store().client();
        drop(core);
        let ended = match client {
            Some(client) => {
                let connection = Connection {
                    weak: &weak,
                    client,
                    status: &status,
                };
                tokio::select! {
                    () = cancel.cancelled() => Ended::Cancelled,
                    () = reconnect.notified() => Ended::Reconnect,
                    ended = connection.follow(&mut tasks, &asking, &mut retry) => ended,
                }
            }
            None => {
                // No store: wait until one is set.
                status.send_modify(|s| {
                    *s = StoreEventsStatus {
                        connections: s.connections,
                        ..StoreEventsStatus::default()
                    }
                });
                tokio::select! {
                    () = cancel.cancelled() => Ended::Cancelled,
                    () = reconnect.notified() => Ended::Reconnect,
                }
            }
        };
        status.send_modify(|s| s.connected = false);
        match ended {
            Ended::Cancelled => break,
            Ended::Reconnect => retry = FIRST_RETRY,
            Ended::Dropped(why) => {
                tracing::debug!("store events: {why}; reconnecting in {retry:?}");
                status.send_modify(|s| s.error = Some(why));
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = reconnect.notified() => retry = FIRST_RETRY,
                    () = tokio::time::sleep(retry) => retry = (retry * 2).min(MAX_RETRY),
                }
            }
        }
    }
    tasks.shutdown().await;
}

/// One connection to one store.
struct Connection<'a> {
    weak: &'a WeakCore,
    client: osprey_apps::store_client::StoreClient,
    status: &'a watch::Sender<StoreEventsStatus>,
}

impl Connection<'_> {
    /// Opens the stream (resuming after the last id kept for this store) and applies its events
    /// until it ends. The backoff starts again from [`FIRST_RETRY`] once an event other than
    /// `ready` was applied, or the connection stayed up for [`STABLE_AFTER`].
    async fn follow(
        &self,
        tasks: &mut JoinSet<()>,
        asking: &Asking,
        retry: &mut Duration,
    ) -> Ended {
        let mut opened_at = None;
        let ended = self.read(tasks, asking, retry, &mut opened_at).await;
        if opened_at.is_some_and(|at: Instant| at.elapsed() >= STABLE_AFTER) {
            *retry = FIRST_RETRY;
        }
        ended
    }

    async fn read(
        &self,
        tasks: &mut JoinSet<()>,
        asking: &Asking,
        retry: &mut Duration,
        opened_at: &mut Option<Instant>,
    ) -> Ended {
        let url = self.client.base().to_string();
        let (last, secrets) = match self.weak.upgrade() {
            Some(core) => (
                core.db().store_cursors().get(&url).ok().flatten(),
                core.secrets(),
            ),
            None => return Ended::Cancelled,
        };
        let token = tokio::task::spawn_blocking(move || crate::store::read_store_token(&secrets))
            .await
            .ok()
            .flatten();
        self.status.send_modify(|s| {
            s.store_url = Some(url.clone());
            s.last_event_id = last.clone();
        });
        let mut note = None;
        let opened = match self.client.events(last.as_deref(), token.as_deref()).await {
            // A token this store does not know (another store's, or withdrawn) must not cost the
            // revocations everyone gets: follow without it, and say why.
            Err(osprey_apps::Error::StoreRefused { code, message })
                if code == "unauthorized" && token.is_some() =>
            {
                tracing::warn!(store = %url, "the store refused the store token: {message}");
                note = Some(format!(
                    "the store refused your store token ({message}); following its public \
                     events only"
                ));
                self.client.events(last.as_deref(), None).await
            }
            other => other,
        };
        let stream = match opened {
            Ok(stream) => stream,
            Err(error) => return Ended::Dropped(error.to_string()),
        };
        self.status.send_modify(|s| s.connections += 1);
        *opened_at = Some(Instant::now());
        let mut stream = std::pin::pin!(stream);
        loop {
            let item = tokio::select! {
                Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
                item = stream.next() => item,
            };
            let event = match item {
                None => return Ended::Dropped("the store closed the event stream".into()),
                Some(Err(error)) => return Ended::Dropped(error.to_string()),
                Some(Ok(event)) => event,
            };
            let Some(core) = self.weak.upgrade() else {
                return Ended::Cancelled;
            };
            if event.change == StoreChange::Ready {
                self.status.send_modify(|s| {
                    s.connected = true;
                    s.error = note.clone();
                });
                // Never followed this store before: what it said earlier is not replayed, so
                // check the revocation list itself now.
                if last.is_none() {
                    core.apps().sweep_revocations_soon();
                }
            } else {
                *retry = FIRST_RETRY;
            }
            let id = event.id.clone();
            apply(&core, &url, event, tasks, asking).await;
            if !id.is_empty() {
                self.status.send_modify(|s| s.last_event_id = Some(id));
            }
        }
    }
}

/// Applies one event and then remembers its id for `url`, so a reconnect resumes after it.
async fn apply(
    core: &Core,
    url: &str,
    event: PushedEvent,
    tasks: &mut JoinSet<()>,
    asking: &Asking,
) {
    core.apply_store_change(url, event.change, tasks, asking)
        .await;
    if !event.id.is_empty()
        && let Err(error) = core.db().store_cursors().set(url, &event.id)
    {
        tracing::warn!("cannot remember the store's event id: {error}");
    }
}
