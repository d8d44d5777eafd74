//! The keychain over the Secret Service (gnome-keyring, KeePassXC, KWallet's bridge) with the
//! `secret-service` crate on our session connection, Diffie-Hellman session encryption so the
//! secret never crosses the bus in the clear. Items live in the default collection (the login
//! keyring), marked `application=osprey` plus `osprey-key=<key>`; every lookup carries
//! `application=osprey`, so other programs' secrets are never listed, read or deleted. (A
//! collection of Osprey's own would need an interactive prompt to set its password when first
//! created, which a headless agent cannot answer.)

use std::collections::HashMap;

use secret_service::{EncryptionType, SecretService};

use super::LinuxBackend;
use crate::error::within;
use crate::error::{Error, Result};
use crate::keychain::Keychain;

const NAME: &str = "the Secret Service (org.freedesktop.secrets)";
const APPLICATION: (&str, &str) = ("application", "osprey");

fn map_error(error: secret_service::Error) -> Error {
    match error {
        secret_service::Error::Locked | secret_service::Error::Prompt => Error::PermissionDenied {
            what: "using the keychain (it is locked)".into(),
            steps: "unlock the login keyring: log in to the desktop session, or unlock it in \
                    the Passwords and Keys app (seahorse)"
                .into(),
        },
        secret_service::Error::Unavailable | secret_service::Error::PromptDisconnected => {
            Error::unavailable(
                NAME,
                "no keyring answers on the session bus; install and start gnome-keyring (or \
                 another Secret Service)",
            )
        }
        secret_service::Error::NoResult => Error::NotConfigured(
            "the keyring has no default collection; create a keyring in the Passwords and Keys \
             app (seahorse) and make it the default"
                .into(),
        ),
        secret_service::Error::Zbus(e) => super::bus::dbus_error(NAME, e),
        other => Error::Failed(format!("keychain: {other}")),
    }
}

impl LinuxBackend {
    async fn secret_service(&self) -> Result<SecretService<'static>> {
        let connection = self.buses.session().await?;
        if !super::bus::name_available(&connection, "org.freedesktop.secrets").await? {
            return Err(map_error(secret_service::Error::Unavailable));
        }
        within(NAME, self.buses.timeout, async {
            SecretService::connect_with_existing(EncryptionType::Dh, connection)
                .await
                .map_err(map_error)
        })
        .await
    }
}

fn attributes(key: &str) -> HashMap<&str, &str> {
    HashMap::from([APPLICATION, ("osprey-key", key)])
}

impl Keychain for LinuxBackend {
    async fn store(&self, key: &str, secret: &str) -> Result<()> {
        let service = self.secret_service().await?;
        within(NAME, self.buses.timeout, async {
            let collection = service.get_default_collection().await.map_err(map_error)?;
            if collection.is_locked().await.map_err(map_error)? {
                return Err(map_error(secret_service::Error::Locked));
            }
            collection
                .create_item(
                    &format!("Osprey: {key}"),
                    attributes(key),
                    secret.as_bytes(),
                    true,
                    "text/plain",
                )
                .await
                .map_err(map_error)?;
            Ok(())
        })
        .await
    }

    async fn read(&self, key: &str) -> Result<Option<String>> {
        let service = self.secret_service().await?;
        within(NAME, self.buses.timeout, async {
            let found = service
                .search_items(attributes(key))
                .await
                .map_err(map_error)?;
            let Some(item) = found.unlocked.first() else {
                if !found.locked.is_empty() {
                    return Err(map_error(secret_service::Error::Locked));
                }
                return Ok(None);
            };
            let secret = item.get_secret().await.map_err(map_error)?;
            String::from_utf8(secret)
                .map(Some)
                .map_err(|_| Error::Failed(format!("the secret {key:?} is not text")))
        })
        .await
    }

    async fn keys(&self) -> Result<Vec<String>> {
        let service = self.secret_service().await?;
        within(NAME, self.buses.timeout, async {
            let found = service
                .search_items(HashMap::from([APPLICATION]))
                .await
                .map_err(map_error)?;
            let mut keys = Vec::new();
            for item in found.unlocked.iter().chain(&found.locked) {
                let attributes = item.get_attributes().await.map_err(map_error)?;
                keys.extend(attributes.get("osprey-key").cloned());
            }
            keys.sort();
            keys.dedup();
            Ok(keys)
        })
        .await
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        let service = self.secret_service().await?;
        within(NAME, self.buses.timeout, async {
            let found = service
                .search_items(attributes(key))
                .await
                .map_err(map_error)?;
            if found.unlocked.is_empty() && !found.locked.is_empty() {
                return Err(map_error(secret_service::Error::Locked));
            }
            for item in &found.unlocked {
                item.delete().await.map_err(map_error)?;
            }
            Ok(!found.unlocked.is_empty())
        })
        .await
    }
}
