//! Registering a running app's capabilities through their adapters: tools into the registry,
//! hook subscriptions into the dispatcher, comm and channel streams into [`Comms`] and
//! [`Channels`] (whose receive loops restart on the new connection at every attach). The supervisor attaches after every (re)launch and
//! detaches when it gives up or the app is stopped. (UI, gateway and schedule adapters plug in
//! here as they are built.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use osprey_tools::Registry;

use crate::Result;
use crate::channel::Channels;
use crate::comm::Comms;
use crate::hooks::AppHooks;
use crate::manifest::Capability;
use crate::provided_tools::register_tools_with;
use crate::runtime::RunningApp;

/// Where a running app's capabilities go. Implemented by [`Capabilities`]; tests record calls.
pub trait CapabilityHost: Send + Sync + 'static {
    /// Registers (or re-registers, after a restart) what the app provides.
    fn attach<'a>(&'a self, app: &'a RunningApp) -> BoxFuture<'a, Result<()>>;
    /// Removes everything the app registered.
    fn detach(&self, app_id: &str);
    /// Says goodbye before the app is stopped on purpose (a comm app deregisters the agent id
    /// and disconnects); bounded, best effort. Not called when the app died on its own.
    fn depart<'a>(&'a self, app_id: &'a str) -> BoxFuture<'a, ()> {
        let _ = app_id;
        Box::pin(async {})
    }
}

/// The real host: the tool registry and the hook dispatcher.
#[derive(Clone)]
pub struct Capabilities {
    registry: Registry,
    hooks: AppHooks,
    settings: Option<crate::settings::SettingsStore>,
    refresher: Option<crate::provided_tools::TokenRefresher>,
    tools: Arc<Mutex<HashMap<String, Vec<String>>>>,
    comms: Comms,
    channels: Channels,
}

impl std::fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capabilities").finish_non_exhaustive()
    }
}

impl Capabilities {
    pub fn new(registry: Registry, hooks: AppHooks) -> Capabilities {
        Capabilities {
            registry,
            hooks,
            settings: None,
            refresher: None,
            tools: Arc::new(Mutex::new(HashMap::new())),
            comms: Comms::default(),
            channels: Channels::default(),
        }
    }

    /// Where comm apps' messages go (and sends come from), instead of a private default.
    pub fn with_comms(mut self, comms: Comms) -> Capabilities {
        self.comms = comms;
        self
    }

    /// Where channel apps' events go, instead of a private default.
    pub fn with_channels(mut self, channels: Channels) -> Capabilities {
        self.channels = channels;
        self
    }

    pub fn comms(&self) -> &Comms {
        &self.comms
    }

    pub fn channels(&self) -> &Channels {
        &self.channels
    }

    /// Push each app's saved settings with `Configure` after every (re)launch.
    pub fn with_settings(mut self, settings: crate::settings::SettingsStore) -> Capabilities {
        self.settings = Some(settings);
        self
    }

    /// How an app's tool that answers `token_expired` gets its account refreshed.
    pub fn with_token_refresher(
        mut self,
        refresher: crate::provided_tools::TokenRefresher,
    ) -> Capabilities {
        self.refresher = Some(refresher);
        self
    }

    /// The tools `app_id` has in the registry.
    pub fn tools_of(&self, app_id: &str) -> Vec<String> {
        let tools = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        tools.get(app_id).cloned().unwrap_or_default()
    }
}

impl CapabilityHost for Capabilities {
    fn attach<'a>(&'a self, app: &'a RunningApp) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let manifest = app.manifest();
            // The configuration (settings, accounts, store token) first: no tool of the app can
            // be called before the app has what it needs to answer it.
            if let Some(settings) = &self.settings
                && let Err(error) = settings.push_to(app.channel(), manifest).await
            {
                // Saved settings the app now refuses must not keep it from running.
                tracing::warn!(app = %manifest.id, "settings not applied: {error}");
            }
            if manifest.tools().next().is_some() {
                let previous = self.tools_of(&manifest.id);
                let registration = register_tools_with(
                    &self.registry,
                    manifest,
                    app.channel(),
                    &previous,
                    self.refresher.clone(),
                )
                .await?;
                for (name, reason) in &registration.refused {
                    tracing::warn!(app = %manifest.id, tool = %name, "tool refused: {reason}");
                }
                let mut tools = self.tools.lock().unwrap_or_else(|e| e.into_inner());
                tools.insert(manifest.id.clone(), registration.registered);
            }
            if manifest.provides.contains(&Capability::Hooks) {
                self.hooks.register(manifest, app.channel()).await?;
            }
            // Replaces the receive loops on the previous connection, if any.
            self.comms.attach(manifest, app.channel());
            self.channels.attach(manifest, app.channel());
            Ok(())
        })
    }

    fn depart<'a>(&'a self, app_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(self.comms.depart(app_id))
    }

    fn detach(&self, app_id: &str) {
        let removed = {
            let mut tools = self.tools.lock().unwrap_or_else(|e| e.into_inner());
            tools.remove(app_id).unwrap_or_default()
        };
        for name in removed {
            self.registry.unregister(&name);
        }
        self.hooks.deregister(app_id);
        self.comms.detach(app_id);
        self.channels.detach(app_id);
    }
}
