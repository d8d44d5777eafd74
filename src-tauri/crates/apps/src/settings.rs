//! Per-app settings: a JSON object per app in `<apps>/.settings/<id>.json` (outside the app's
//! directory, so updates and quarantine keep it and the app cannot rewrite it), pushed to the
//! running app with `Configure` at launch and whenever it changes.
//!
//! What is pushed is the saved object plus, under the reserved key [`RESERVED_KEY`], what
//! Osprey passes an app from outside its settings ([`Credentials`]: the access tokens of its
//! connected accounts, the person's store token for an app holding `user:token`). That part is
//! never written to the settings file and never shown by the `app` tool's `settings` action.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_rpc::AppChannel;
use osprey_rpc::v1::ConfigureRequest;
use serde_json::{Map, Value};

use crate::manifest::{Capability, Manifest};
use crate::{Error, Result};

const SETTINGS_DIR: &str = ".settings";
const CONFIGURE_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest settings object kept for one app.
const MAX_SETTINGS_BYTES: usize = 256 * 1024;
/// The settings key Osprey fills itself: `{"accounts": {<provider>: {access_token, ...}},
/// "store_token": ...}`. Saved settings may not use it.
pub const RESERVED_KEY: &str = "osprey";

/// What Osprey adds to an app's pushed settings under [`RESERVED_KEY`] (the core implements it
/// over the secret store).
pub trait Credentials: Send + Sync + 'static {
    /// The object for this app, or `None` when it gets nothing.
    fn for_app<'a>(&'a self, manifest: &'a Manifest) -> BoxFuture<'a, Option<Value>>;
}

#[derive(Clone)]
pub struct SettingsStore {
    dir: PathBuf,
    credentials: Option<Arc<dyn Credentials>>,
}

impl std::fmt::Debug for SettingsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsStore")
            .field("dir", &self.dir)
            .field("credentials", &self.credentials.is_some())
            .finish()
    }
}

impl SettingsStore {
    pub fn new(apps_dir: impl Into<PathBuf>) -> SettingsStore {
        SettingsStore {
            dir: apps_dir.into().join(SETTINGS_DIR),
            credentials: None,
        }
    }

    /// Adds what `credentials` gives each app to the settings pushed to it.
    pub fn with_credentials(mut self, credentials: Arc<dyn Credentials>) -> SettingsStore {
        self.credentials = Some(credentials);
        self
    }

    /// What `Configure` carries for this app: its saved settings plus, under
    /// [`RESERVED_KEY`], what the credentials give it.
    pub async fn configuration(&self, manifest: &Manifest) -> Value {
        let mut settings = self.read(&manifest.id);
        if let Some(credentials) = &self.credentials
            && let Some(extra) = credentials.for_app(manifest).await
            && let Some(object) = settings.as_object_mut()
        {
            object.insert(RESERVED_KEY.to_string(), extra);
        }
        settings
    }

    /// Pushes this app's [`SettingsStore::configuration`] to it.
    pub async fn push_to(&self, channel: AppChannel, manifest: &Manifest) -> Result<()> {
        push(channel, manifest, &self.configuration(manifest).await).await
    }

    /// The app's settings (an empty object when none were saved).
    pub fn read(&self, id: &str) -> Value {
        std::fs::read(self.dir.join(format!("{id}.json")))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .filter(Value::is_object)
            .map(|mut settings| {
                // Written by hand into the file, it would pass for Osprey's own.
                if let Some(object) = settings.as_object_mut() {
                    object.remove(RESERVED_KEY);
                }
                settings
            })
            .unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// Merges `values` (a JSON object; `null` removes a key) into the saved settings and returns
    /// the result.
    pub fn update(&self, id: &str, values: &Value) -> Result<Value> {
        let Some(changes) = values.as_object() else {
            return Err(Error::SettingsRejected(
                "settings must be a JSON object".into(),
            ));
        };
        if changes.contains_key(RESERVED_KEY) {
            return Err(Error::SettingsRejected(format!(
                "`{RESERVED_KEY}` is Osprey's own key (the app's accounts and tokens): use \
                 another name"
            )));
        }
        let mut settings = self.read(id);
        if let Some(current) = settings.as_object_mut() {
            for (key, value) in changes {
                if value.is_null() {
                    current.remove(key);
                } else {
                    current.insert(key.clone(), value.clone());
                }
            }
        }
        let bytes = serde_json::to_vec_pretty(&settings).unwrap_or_default();
        if bytes.len() > MAX_SETTINGS_BYTES {
            return Err(Error::SettingsRejected(format!(
                "settings larger than {MAX_SETTINGS_BYTES} bytes"
            )));
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io("create .settings", e))?;
        let temp = self.dir.join(format!(".{id}.json.tmp"));
        std::fs::write(&temp, bytes).map_err(|e| Error::io("write settings", e))?;
        std::fs::rename(&temp, self.dir.join(format!("{id}.json")))
            .map_err(|e| Error::io("write settings", e))?;
        Ok(settings)
    }
}

/// Pushes `settings` to a running app through its primary service's `Configure`. An app that
/// refuses them answers with a message for the person (`settings_rejected`).
pub async fn push(channel: AppChannel, manifest: &Manifest, settings: &Value) -> Result<()> {
    use osprey_rpc::v1::{
        channel_service_client::ChannelServiceClient, comm_service_client::CommServiceClient,
        gateway_service_client::GatewayServiceClient,
        schedule_service_client::ScheduleServiceClient, tool_service_client::ToolServiceClient,
        ui_service_client::UiServiceClient,
    };
    let request = ConfigureRequest {
        settings_json: settings.to_string(),
    };
    let call = async {
        match manifest.provides.first() {
            // Hook apps have no Configure.
            Some(Capability::Hooks) => Ok(None),
            Some(Capability::Gateway) => GatewayServiceClient::new(channel)
                .configure(request)
                .await
                .map(Some),
            Some(Capability::Comm) => CommServiceClient::new(channel)
                .configure(request)
                .await
                .map(Some),
            Some(Capability::Channel(_)) => ChannelServiceClient::new(channel)
                .configure(request)
                .await
                .map(Some),
            Some(Capability::Ui) => UiServiceClient::new(channel)
                .configure(request)
                .await
                .map(Some),
            Some(Capability::Schedule) => ScheduleServiceClient::new(channel)
                .configure(request)
                .await
                .map(Some),
            _ => ToolServiceClient::new(channel)
                .configure(request)
                .await
                .map(Some),
        }
    };
    let answer = tokio::time::timeout(CONFIGURE_TIMEOUT, call)
        .await
        .map_err(|_| Error::SettingsRejected("the app did not answer Configure in time".into()))?
        .map_err(|status| {
            Error::SettingsRejected(format!("Configure failed: {}", status.message()))
        })?;
    match answer.map(tonic::Response::into_inner) {
        Some(response) if !response.error.is_empty() => {
            Err(Error::SettingsRejected(response.error))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_reserved_key_is_never_saved_nor_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = SettingsStore::new(dir.path());
        let refused = store
            .update("mail", &json!({"osprey": {"accounts": {}}}))
            .unwrap_err();
        assert!(
            refused.to_string().contains("Osprey's own key"),
            "{refused}"
        );
        store.update("mail", &json!({"folder": "INBOX"})).unwrap();
        // Written into the file by hand, it would pass for Osprey's own: dropped on reading.
        std::fs::write(
            dir.path().join(SETTINGS_DIR).join("mail.json"),
            r#"{"folder": "INBOX", "osprey": {"store_token": "forged"}}"#,
        )
        .unwrap();
        assert_eq!(store.read("mail"), json!({"folder": "INBOX"}));
    }
}
