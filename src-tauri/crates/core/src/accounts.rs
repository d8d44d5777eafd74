//! App accounts: an app whose manifest has an `oauth` block can be connected by the person to
//! that provider (the flow is `osprey_apps::oauth`); the tokens live in the secret store (the
//! keyring, else the private file) under one key per app and provider,
//! `app.<id>.oauth.<provider>`, never in the database and never in a log. The access token
//! (never the refresh token) reaches the app only through `Configure`, under
//! `osprey.accounts.<provider>`, and only the app whose manifest declares that block (which the
//! manifest ties to its `oauth:<provider>` permission): another app's configuration is built
//! from its own keys only. Likewise the person's store token (`store.token`) goes, as
//! `osprey.store_token`, only to an app holding `user:token`.
//!
//! Tokens are refreshed ahead of expiry by a task of the long-running Osprey (for the apps it
//! runs), before they are pushed at a launch, and when an app answers a tool call with the code
//! `token_expired`. A refresh the provider refuses with `invalid_grant` drops the tokens, keeps
//! a `disconnected` mark with the provider's words, tells the shells
//! ([`CoreEvent::AppAccountChanged`]) and pushes the app a configuration without the account.
//! Refreshes of one account are serialized (a rotated refresh token can be used once), and each
//! re-reads the store first, so two that race use the token only once. Removing the app deletes
//! its tokens (the installer's removal hook).
// Without the app runtime (Windows for now) only the store token is used.
#![cfg_attr(not(unix), allow(dead_code))]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use futures::future::BoxFuture;
use osprey_apps::Manifest;
use osprey_apps::oauth::{OAuthClient, Tokens, now};
use osprey_types::{AppAccount, AppAccountState, CoreEvent};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use crate::events::EventBus;
use crate::secrets::Secrets;

/// What a shell implements to open the provider's sign-in page (the system browser).
pub use osprey_apps::oauth::Browser;

/// The secret holding the person's app store token (`osprey config set store.token -`).
pub const STORE_TOKEN: &str = crate::store::STORE_TOKEN_SECRET;
/// The permission that lets an app receive the store token.
pub const USER_TOKEN_PERMISSION: (&str, &str) = ("user", "token");
/// The longest the refresher sleeps without looking again.
const REFRESH_POLL: Duration = Duration::from_secs(300);
/// After a refresh that failed for a passing reason (provider unreachable).
const RETRY_AFTER: u64 = 30;
/// How long a disconnect waits for the provider to revoke the tokens.
const REVOKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The secret store key of an app's account with a provider.
pub fn secret_name(app_id: &str, provider: &str) -> String {
    format!("app.{app_id}.oauth.{provider}")
}

/// What the secret store keeps for one account.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum Stored {
    Connected {
        tokens: Tokens,
    },
    /// The provider refused a refresh; the tokens are gone.
    Disconnected {
        reason: String,
        at: u64,
    },
}

/// What a refresh did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refreshed {
    /// Nothing connected, no refresh token, or not due yet.
    Nothing,
    /// New tokens are stored.
    Refreshed,
    /// The provider refused (`invalid_grant`): the account is disconnected.
    Dropped(String),
    /// The provider could not be asked; the old tokens stay. The message says why.
    Failed(String),
}

/// The accounts' store and the refresher's wake-up. Cheap to clone.
#[derive(Clone)]
pub struct Accounts {
    secrets: Secrets,
    apps_dir: PathBuf,
    events: EventBus,
    /// One lock per account (`app.<id>.oauth.<provider>`), held across a refresh.
    locks: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    /// Revocations a removal started (the installer's hook cannot wait), which
    /// [`Accounts::finish_revocations`] awaits so a short-lived process does not exit first.
    revoking: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    /// Accounts whose last refresh failed for a passing reason: not before this time again.
    retry_at: Arc<Mutex<HashMap<String, u64>>>,
    wake: Arc<Notify>,
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts").finish_non_exhaustive()
    }
}

impl Accounts {
    pub fn new(secrets: Secrets, apps_dir: PathBuf, events: EventBus) -> Accounts {
        Accounts {
            secrets,
            apps_dir,
            events,
            locks: Arc::default(),
            revoking: Arc::default(),
            retry_at: Arc::default(),
            wake: Arc::new(Notify::new()),
        }
    }

    /// Wakes the refresher (an account was connected, or its tokens changed elsewhere).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    fn lock(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(locks.entry(key.to_string()).or_default())
    }

    /// The stored state of an account (`None`: never connected, or disconnected by the person).
    pub(crate) async fn read(
        &self,
        app_id: &str,
        provider: &str,
    ) -> anyhow::Result<Option<Stored>> {
        let secrets = self.secrets.clone();
        let name = secret_name(app_id, provider);
        let text = tokio::task::spawn_blocking(move || secrets.get(&name))
            .await
            .context("reading the secret store")??;
        match text {
            None => Ok(None),
            // Unreadable (written by something else): as if never connected.
            Some(text) => Ok(serde_json::from_str(&text).ok()),
        }
    }

    async fn write(&self, app_id: &str, provider: &str, stored: &Stored) -> anyhow::Result<()> {
        let secrets = self.secrets.clone();
        let name = secret_name(app_id, provider);
        let text = serde_json::to_string(stored).context("encoding the account")?;
        tokio::task::spawn_blocking(move || secrets.set(&name, &text))
            .await
            .context("writing the secret store")??;
        Ok(())
    }

    async fn remove(&self, app_id: &str, provider: &str) -> anyhow::Result<bool> {
        let secrets = self.secrets.clone();
        let name = secret_name(app_id, provider);
        tokio::task::spawn_blocking(move || secrets.remove(&name))
            .await
            .context("writing the secret store")?
    }

    /// Deletes what is kept for a removed app (called by the installer, on a blocking thread)
    /// and starts asking the provider to revoke the grant; the tokens are gone here whatever it
    /// answers. [`Core::uninstall_app`] then waits for that answer (at most [`REVOKE_TIMEOUT`]),
    /// so `osprey app remove` does not exit before it.
    pub fn forget_app(&self, manifest: &Manifest) {
        let Some(oauth) = &manifest.oauth else {
            return;
        };
        let name = secret_name(&manifest.id, &oauth.provider);
        let stored = self.secrets.get(&name).ok().flatten();
        if let Err(error) = self.secrets.remove(&name) {
            tracing::warn!(app = %manifest.id, "could not delete the app's tokens: {error:#}");
        }
        let tokens = stored.and_then(|text| match serde_json::from_str(&text) {
            Ok(Stored::Connected { tokens }) => Some(tokens),
            _ => None,
        });
        if let (Some(tokens), Ok(runtime)) = (tokens, tokio::runtime::Handle::try_current()) {
            let (accounts, manifest) = (self.clone(), manifest.clone());
            let task = runtime.spawn(async move {
                let outcome = accounts.revoke(&manifest, tokens).await;
                tracing::info!(app = %manifest.id, "removed app's account: {outcome}");
            });
            self.revoking
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(task);
        }
    }

    /// Waits for the revocations removals started (each bounded by [`REVOKE_TIMEOUT`]).
    pub(crate) async fn finish_revocations(&self) {
        let tasks = std::mem::take(&mut *self.revoking.lock().unwrap_or_else(|e| e.into_inner()));
        for task in tasks {
            let _ = task.await;
        }
    }

    /// Asks the provider to revoke `tokens` (RFC 7009), within [`REVOKE_TIMEOUT`], and says
    /// what came of it in a sentence for the person (the tokens are already deleted here).
    pub(crate) async fn revoke(&self, manifest: &Manifest, tokens: Tokens) -> String {
        let provider = manifest
            .oauth
            .as_ref()
            .map_or("the provider", |oauth| oauth.provider.as_str());
        let elsewhere = format!(
            "remove {}'s access in your {provider} account settings to end it there too",
            manifest.name
        );
        // A removed sideload is no longer a link, yet its loopback server issued the tokens
        // (connecting was refused otherwise), so they may go back to it.
        let client = match &manifest.oauth {
            Some(oauth) if oauth.token_url.starts_with("http://") => OAuthClient::new(oauth, true),
            _ => self.client(manifest),
        };
        let outcome = match client {
            Ok(client) => tokio::time::timeout(REVOKE_TIMEOUT, client.revoke(&tokens))
                .await
                .unwrap_or_else(|_| {
                    Err(osprey_apps::Error::OAuth {
                        reason: "unreachable",
                        message: format!(
                            "{provider}'s revocation endpoint did not answer within {} s",
                            REVOKE_TIMEOUT.as_secs()
                        ),
                    })
                }),
            Err(error) => Err(error),
        };
        match outcome {
            Ok(true) => format!("its tokens are deleted here and revoked at {provider}"),
            Ok(false) => format!(
                "its tokens are deleted here; the app names no revocation endpoint for \
                 {provider}, so {elsewhere}"
            ),
            Err(error) => format!(
                "its tokens are deleted here, but {provider} could not revoke them ({error}); \
                 {elsewhere}"
            ),
        }
    }

    /// Whether the app is a sideload (only those may use a loopback authorization server).
    pub fn sideloaded(&self, app_id: &str) -> bool {
        std::fs::symlink_metadata(self.apps_dir.join(app_id))
            .is_ok_and(|meta| meta.file_type().is_symlink())
    }

    pub(crate) fn client(&self, manifest: &Manifest) -> osprey_apps::Result<OAuthClient> {
        let oauth = manifest
            .oauth
            .as_ref()
            .ok_or_else(|| osprey_apps::Error::OAuth {
                reason: "no_oauth",
                message: format!("{} declares no account to connect", manifest.id),
            })?;
        OAuthClient::new(oauth, self.sideloaded(&manifest.id))
    }

    /// The account as the shells show it.
    pub(crate) fn view(&self, manifest: &Manifest, stored: Option<&Stored>) -> Option<AppAccount> {
        let oauth = manifest.oauth.as_ref()?;
        let mut account = AppAccount {
            app_id: manifest.id.clone(),
            app_name: manifest.name.clone(),
            provider: oauth.provider.clone(),
            scopes: oauth.scopes.clone(),
            state: AppAccountState::NotConnected,
            expires_at: None,
            refreshed_at: None,
            reason: None,
            authorize_url: oauth.authorize_url.clone(),
        };
        match stored {
            Some(Stored::Connected { tokens }) => {
                account.state = AppAccountState::Connected;
                account.scopes = tokens.scopes.clone();
                account.expires_at = tokens.expires_at;
                account.refreshed_at = Some(tokens.obtained_at);
            }
            Some(Stored::Disconnected { reason, at }) => {
                account.state = AppAccountState::Disconnected;
                account.reason = Some(reason.clone());
                account.refreshed_at = Some(*at);
            }
            None => {}
        }
        Some(account)
    }

    /// Stores freshly obtained tokens and tells the shells.
    pub(crate) async fn connected(
        &self,
        manifest: &Manifest,
        tokens: Tokens,
    ) -> anyhow::Result<AppAccount> {
        let provider = &manifest.oauth.as_ref().context("no oauth block")?.provider;
        let key = secret_name(&manifest.id, provider);
        let lock = self.lock(&key);
        let _held = lock.lock().await;
        let stored = Stored::Connected { tokens };
        self.write(&manifest.id, provider, &stored).await?;
        self.retry_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        let account = self
            .view(manifest, Some(&stored))
            .context("no oauth block")?;
        self.events.emit(CoreEvent::AppAccountChanged {
            account: account.clone(),
        });
        self.wake();
        Ok(account)
    }

    /// Forgets the account's tokens (the person disconnected it) and answers them, so the caller
    /// can have the provider revoke them; `None` when none were kept.
    pub(crate) async fn disconnect(&self, manifest: &Manifest) -> anyhow::Result<Option<Tokens>> {
        let provider = &manifest.oauth.as_ref().context("no oauth block")?.provider;
        let lock = self.lock(&secret_name(&manifest.id, provider));
        let _held = lock.lock().await;
        let stored = self.read(&manifest.id, provider).await?;
        self.remove(&manifest.id, provider).await?;
        if let Some(account) = self.view(manifest, None) {
            self.events.emit(CoreEvent::AppAccountChanged { account });
        }
        Ok(match stored {
            Some(Stored::Connected { tokens }) => Some(tokens),
            _ => None,
        })
    }

    /// Refreshes the app's account when due (or now, with `force`). See [`Refreshed`].
    pub async fn refresh(&self, manifest: &Manifest, force: bool) -> Refreshed {
        let Some(oauth) = &manifest.oauth else {
            return Refreshed::Nothing;
        };
        let key = secret_name(&manifest.id, &oauth.provider);
        let lock = self.lock(&key);
        let _held = lock.lock().await;
        // Read under the lock: a refresh that just finished elsewhere is seen.
        let tokens = match self.read(&manifest.id, &oauth.provider).await {
            Ok(Some(Stored::Connected { tokens })) => tokens,
            Ok(_) => return Refreshed::Nothing,
            Err(error) => return Refreshed::Failed(format!("{error:#}")),
        };
        let (Some(refresh_token), Some(due)) = (tokens.refresh_token.clone(), tokens.refresh_due())
        else {
            return Refreshed::Nothing;
        };
        if !force && now() < due {
            return Refreshed::Nothing;
        }
        let client = match self.client(manifest) {
            Ok(client) => client,
            Err(error) => return Refreshed::Failed(error.to_string()),
        };
        match client.refresh(&refresh_token).await {
            Ok(fresh) => {
                let stored = Stored::Connected { tokens: fresh };
                if let Err(error) = self.write(&manifest.id, &oauth.provider, &stored).await {
                    return Refreshed::Failed(format!("{error:#}"));
                }
                self.retry_at
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&key);
                if let Some(account) = self.view(manifest, Some(&stored)) {
                    self.events.emit(CoreEvent::AppAccountChanged { account });
                }
                Refreshed::Refreshed
            }
            Err(osprey_apps::Error::OAuth {
                reason: "invalid_grant",
                message,
            }) => {
                let reason = format!("{message}; connect the account again");
                let stored = Stored::Disconnected {
                    reason: reason.clone(),
                    at: now(),
                };
                if let Err(error) = self.write(&manifest.id, &oauth.provider, &stored).await {
                    tracing::error!(app = %manifest.id, "could not mark the account disconnected: {error:#}");
                }
                tracing::warn!(app = %manifest.id, provider = %oauth.provider, "account disconnected: the provider refused a refresh");
                if let Some(account) = self.view(manifest, Some(&stored)) {
                    self.events.emit(CoreEvent::AppAccountChanged { account });
                }
                Refreshed::Dropped(reason)
            }
            Err(error) => {
                self.retry_at
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, now() + RETRY_AFTER);
                tracing::warn!(app = %manifest.id, provider = %oauth.provider, "refresh failed, retrying later: {error}");
                Refreshed::Failed(error.to_string())
            }
        }
    }

    /// When the app's account is next due for a refresh (unix seconds), if ever.
    pub(crate) async fn next_due(&self, manifest: &Manifest) -> Option<u64> {
        let oauth = manifest.oauth.as_ref()?;
        let key = secret_name(&manifest.id, &oauth.provider);
        let due = match self.read(&manifest.id, &oauth.provider).await {
            Ok(Some(Stored::Connected { tokens })) => tokens.refresh_due()?,
            _ => return None,
        };
        let retry = self
            .retry_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        Some(retry.map_or(due, |retry| retry.max(due)))
    }

    /// The hooks the app platform calls: the credentials pushed with `Configure`, the
    /// removal of an app's tokens, the refresh an app asks for.
    #[cfg(unix)]
    pub(crate) fn wiring(&self) -> crate::apps::AccountWiring {
        let (removing, refreshing) = (self.clone(), self.clone());
        crate::apps::AccountWiring {
            credentials: Arc::new(self.clone()),
            on_removed: Arc::new(move |manifest: &Manifest| removing.forget_app(manifest)),
            refresh: Arc::new(move |manifest: Manifest| {
                let accounts = refreshing.clone();
                Box::pin(async move {
                    match accounts.refresh(&manifest, true).await {
                        Refreshed::Refreshed => Some(true),
                        Refreshed::Dropped(_) => Some(false),
                        Refreshed::Nothing | Refreshed::Failed(_) => None,
                    }
                })
            }),
        }
    }

    /// Waits until woken or `limit` passes.
    pub(crate) async fn sleep(&self, limit: Duration) {
        tokio::select! {
            () = tokio::time::sleep(limit) => {}
            () = self.wake.notified() => {}
        }
    }
}

impl osprey_apps::settings::Credentials for Accounts {
    /// `{"accounts": {<provider>: {access_token, token_type, expires_at, scopes}}}` for an app
    /// with an `oauth` block (refreshed first when due), and `store_token` for an app holding
    /// `user:token`; nothing for any other app.
    fn for_app<'a>(&'a self, manifest: &'a Manifest) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async move {
            let mut object = Map::new();
            if let Some(oauth) = &manifest.oauth {
                let _ = self.refresh(manifest, false).await;
                let mut accounts = Map::new();
                if let Ok(Some(Stored::Connected { tokens })) =
                    self.read(&manifest.id, &oauth.provider).await
                {
                    accounts.insert(
                        oauth.provider.clone(),
                        json!({
                            "access_token": tokens.access_token,
                            "token_type": tokens.token_type,
                            "expires_at": tokens.expires_at,
                            "scopes": tokens.scopes,
                        }),
                    );
                }
                object.insert("accounts".into(), Value::Object(accounts));
            }
            let (prefix, suffix) = USER_TOKEN_PERMISSION;
            if osprey_apps::permissions::allows(&manifest.permissions, prefix, suffix) {
                let secrets = self.secrets.clone();
                let token =
                    tokio::task::spawn_blocking(move || crate::store::read_store_token(&secrets))
                        .await
                        .ok()
                        .flatten();
                object.insert(
                    "store_token".into(),
                    token.map_or(Value::Null, Value::String),
                );
            }
            (!object.is_empty()).then_some(Value::Object(object))
        })
    }
}

#[cfg(unix)]
mod unix {
    use osprey_apps::InstalledApp;
    use osprey_apps::oauth::{Browser, DEFAULT_SIGN_IN_TIMEOUT};
    use osprey_types::UiErrorCode;

    use super::*;
    use crate::{Core, CoreError, CoreResult, WeakCore};

    fn oauth_refusal(reason: &'static str, message: String) -> CoreError {
        CoreError::from(osprey_apps::Error::OAuth { reason, message })
    }

    impl Core {
        /// The accounts' store (the refresher and the app configuration read it).
        pub(crate) fn accounts(&self) -> &Accounts {
            &self.inner.accounts
        }

        /// Every installed app's account (one per app with an `oauth` block), by app name.
        pub async fn app_accounts(&self) -> Vec<AppAccount> {
            let mut list = Vec::new();
            for app in self.installed_apps().await {
                let stored = match &app.manifest.oauth {
                    Some(oauth) => self
                        .accounts()
                        .read(&app.manifest.id, &oauth.provider)
                        .await
                        .ok()
                        .flatten(),
                    None => continue,
                };
                list.extend(self.accounts().view(&app.manifest, stored.as_ref()));
            }
            list.sort_by_key(|account| account.app_name.to_lowercase());
            list
        }

        /// The installed app `app_id` and its account's provider, checked against `provider`
        /// when one is named.
        async fn app_with_account(
            &self,
            app_id: &str,
            provider: Option<&str>,
        ) -> CoreResult<InstalledApp> {
            let app = self
                .installed_apps()
                .await
                .into_iter()
                .find(|app| app.manifest.id == app_id)
                .ok_or_else(|| {
                    CoreError::new(
                        UiErrorCode::NotInstalled,
                        format!("no installed app `{app_id}` (`osprey app list` shows them)"),
                    )
                })?;
            let Some(oauth) = &app.manifest.oauth else {
                return Err(oauth_refusal(
                    "no_oauth",
                    format!("{app_id} declares no account to connect (no `oauth` block)"),
                ));
            };
            if let Some(provider) = provider
                && provider != oauth.provider
            {
                return Err(oauth_refusal(
                    "no_oauth",
                    format!(
                        "{app_id} connects to {} only, not to {provider}",
                        oauth.provider
                    ),
                ));
            }
            Ok(app)
        }

        /// Connects the app's account: runs the sign-in in the person's browser (opened by
        /// `browser`), waits up to `timeout` (`None`: five minutes), stores the tokens and
        /// pushes them to the app. An earlier connection stays in force if this one fails.
        pub async fn connect_app_account(
            &self,
            app_id: &str,
            provider: Option<&str>,
            browser: &dyn Browser,
            timeout: Option<Duration>,
        ) -> CoreResult<AppAccount> {
            let app = self.app_with_account(app_id, provider).await?;
            if let Some(reason) = &app.quarantined {
                return Err(CoreError::new(
                    UiErrorCode::Revoked,
                    format!("{app_id} is quarantined ({reason}); its account cannot be connected"),
                ));
            }
            let client = self.accounts().client(&app.manifest)?;
            let tokens = client
                .connect(browser, timeout.unwrap_or(DEFAULT_SIGN_IN_TIMEOUT))
                .await?;
            let account = self.accounts().connected(&app.manifest, tokens).await?;
            self.push_app_configuration(&app.manifest).await;
            Ok(account)
        }

        /// Forgets the app's tokens, pushes it a configuration without them and asks the
        /// provider to revoke them (RFC 7009). Answers the account as it now stands, with what
        /// the provider did in `reason`.
        pub async fn disconnect_app_account(
            &self,
            app_id: &str,
            provider: Option<&str>,
        ) -> CoreResult<AppAccount> {
            let app = self.app_with_account(app_id, provider).await?;
            let removed = self.accounts().disconnect(&app.manifest).await?;
            self.push_app_configuration(&app.manifest).await;
            let mut account = self.accounts().view(&app.manifest, None).ok_or_else(|| {
                CoreError::new(UiErrorCode::Internal, "the app's oauth block vanished")
            })?;
            if let Some(tokens) = removed {
                account.reason = Some(self.accounts().revoke(&app.manifest, tokens).await);
            }
            Ok(account)
        }

        /// Refreshes the app's account now (the app said its token was refused) and pushes the
        /// new token.
        pub async fn refresh_app_account(&self, app_id: &str) -> CoreResult<Refreshed> {
            let app = self.app_with_account(app_id, None).await?;
            let outcome = self.accounts().refresh(&app.manifest, true).await;
            if matches!(outcome, Refreshed::Refreshed | Refreshed::Dropped(_)) {
                self.push_app_configuration(&app.manifest).await;
            }
            Ok(outcome)
        }

        /// Passes the person's store token (as it now is) to the running apps that hold
        /// `user:token` (see [`Core::set_store_token`]).
        pub(crate) async fn push_store_token_to_apps(&self) {
            let (prefix, suffix) = USER_TOKEN_PERMISSION;
            for app in self.installed_apps().await {
                if osprey_apps::permissions::allows(&app.manifest.permissions, prefix, suffix) {
                    self.push_app_configuration(&app.manifest).await;
                }
            }
        }

        /// Pushes the app its configuration (settings, accounts, store token) if it runs here,
        /// else asks the running Osprey to (the command line connected it).
        pub(crate) async fn push_app_configuration(&self, manifest: &Manifest) {
            let supervisor = self.apps().supervisor();
            if supervisor.is_running() {
                if let Ok(Some((running, channel))) = supervisor.channel(&manifest.id).await
                    && let Err(error) = self.apps().settings().push_to(channel, &running).await
                {
                    tracing::warn!(app = %manifest.id, "could not push the configuration: {error}");
                }
                return;
            }
            let request = json!({"op": "app.configure", "id": manifest.id});
            match crate::control::request(self.data_dir(), &request).await {
                Ok(answer) if answer["ok"] == Value::Bool(true) => {}
                Ok(answer) => {
                    tracing::warn!(app = %manifest.id, %answer, "the running Osprey did not push the configuration")
                }
                // Nothing runs: the app gets it at its next launch.
                Err(_) => {}
            }
        }
    }

    /// Refreshes the accounts of the apps running here ahead of expiry and pushes the new
    /// tokens, until the core is dropped.
    pub(crate) fn start_refresher(core: &Core) {
        tokio::spawn(refresher(core.downgrade(), core.accounts().clone()));
    }

    async fn refresher(core: WeakCore, accounts: Accounts) {
        loop {
            let next = {
                let Some(core) = core.upgrade() else { return };
                refresh_running(&core).await
            };
            let wait = next.map_or(REFRESH_POLL, |due| {
                Duration::from_secs(due.saturating_sub(now()).max(1)).min(REFRESH_POLL)
            });
            accounts.sleep(wait).await;
        }
    }

    /// One pass: refreshes what is due among the running apps' accounts, pushes what changed,
    /// and answers the next due time.
    async fn refresh_running(core: &Core) -> Option<u64> {
        let running = core.apps().supervisor().status().await.unwrap_or_default();
        let mut next: Option<u64> = None;
        for app in core.installed_apps().await {
            if app.manifest.oauth.is_none() || !running.iter().any(|(id, _)| id == &app.manifest.id)
            {
                continue;
            }
            let outcome = core.accounts().refresh(&app.manifest, false).await;
            if matches!(outcome, Refreshed::Refreshed | Refreshed::Dropped(_)) {
                core.push_app_configuration(&app.manifest).await;
            }
            if let Some(due) = core.accounts().next_due(&app.manifest).await {
                next = Some(next.map_or(due, |next| next.min(due)));
            }
        }
        next
    }
}

#[cfg(unix)]
pub(crate) use unix::start_refresher;

#[cfg(not(unix))]
impl crate::Core {
    /// No app runtime on this platform yet: no accounts.
    pub async fn app_accounts(&self) -> Vec<AppAccount> {
        Vec::new()
    }

    pub async fn connect_app_account(
        &self,
        app_id: &str,
        _provider: Option<&str>,
        _browser: &dyn osprey_apps::oauth::Browser,
        _timeout: Option<Duration>,
    ) -> crate::CoreResult<AppAccount> {
        Err(unsupported(app_id))
    }

    pub async fn disconnect_app_account(
        &self,
        app_id: &str,
        _provider: Option<&str>,
    ) -> crate::CoreResult<AppAccount> {
        Err(unsupported(app_id))
    }

    /// No app runs here to pass the store token to.
    pub(crate) async fn push_store_token_to_apps(&self) {}
}

#[cfg(not(unix))]
fn unsupported(app_id: &str) -> crate::CoreError {
    crate::CoreError::new(
        osprey_types::UiErrorCode::NotSupported,
        format!("{app_id}: apps do not run on this platform yet"),
    )
}
