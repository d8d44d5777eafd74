//! The CalDAV/CardDAV accounts of the `os` tool's calendar and contacts: the `dav.accounts`
//! setting (name -> kind, base URL, username) and each account's password in the secret store
//! under `dav.<name>.password` (the OS keyring, else the private file, as provider keys), never
//! in the settings table. The tool reads both at each call, so an account added while Osprey
//! runs works at once. `osprey config set` takes dotted keys for one field at a time:
//! `dav.<name>.url`, `.username`, `.kind`, `.password` (`-`: from standard input).

use std::sync::Arc;

use anyhow::{Context, bail};
use osprey_platform::dav::{
    ACCOUNTS_SETTING, DavAccountSetting, DavAccounts, password_secret, validate_account,
};
use osprey_platform::{DavAccount, DavConfig, DavKind, DavSettings};

use crate::secrets::{SecretLocation, Secrets};
use crate::{Core, settings};

/// The accounts from the settings table, the passwords from the secret store.
struct StoredDavSettings {
    settings: osprey_db::Settings,
    secrets: Secrets,
}

impl DavSettings for StoredDavSettings {
    fn accounts(&self) -> Vec<DavAccount> {
        let stored: DavAccounts = settings::read(&self.settings, ACCOUNTS_SETTING);
        stored
            .into_iter()
            .map(|(name, account)| DavAccount {
                name,
                kind: account.kind,
                url: account.url,
                username: account.username,
            })
            .collect()
    }

    fn desktop(&self) -> bool {
        settings::read::<Option<bool>>(&self.settings, osprey_platform::dav::DESKTOP_SETTING)
            .unwrap_or(true)
    }

    fn password(&self, account: &str) -> Option<String> {
        self.secrets
            .get(&password_secret(account))
            .map_err(|error| tracing::warn!(%error, "cannot read the account's password"))
            .ok()
            .flatten()
    }
}

/// The `os` tool's account source for this data folder.
pub(crate) fn dav_config(settings: osprey_db::Settings, secrets: Secrets) -> DavConfig {
    DavConfig {
        settings: Some(Arc::new(StoredDavSettings { settings, secrets })),
        ..DavConfig::default()
    }
}

/// Checks the `dav.accounts` setting's value.
pub(crate) fn validate(value: &serde_json::Value) -> anyhow::Result<()> {
    let accounts: DavAccounts = serde_json::from_value(value.clone()).with_context(|| {
        format!(
            "invalid value for `{ACCOUNTS_SETTING}`: {value}; give {{\"<name>\": {{\"kind\": \
             \"dav\"|\"caldav\"|\"carddav\", \"url\": \"https://...\", \"username\": \"...\"}}}}"
        )
    })?;
    for (name, account) in &accounts {
        validate_account(name, account).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// What `osprey config set dav.…` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DavSettingWritten {
    /// Stored in the `dav.accounts` setting.
    Setting,
    /// A password, stored in the keyring or the private file.
    Password(SecretLocation),
    /// The account and its password were removed.
    Removed,
}

impl Core {
    /// Writes one account field addressed by a dotted key: `dav.<name>.url`, `.username`,
    /// `.kind` (caldav, carddav or dav) or `.password` (into the secret store). An empty value
    /// clears the field (the password: removes it); `dav.<name>` with an empty value removes the
    /// account and its password.
    pub fn set_dav_setting(&self, key: &str, value: &str) -> anyhow::Result<DavSettingWritten> {
        let path = key
            .strip_prefix("dav.")
            .with_context(|| format!("`{key}` is not an account setting"))?;
        let usage = "use dav.<name>.url, dav.<name>.username, dav.<name>.kind or \
                     dav.<name>.password (or the JSON setting dav.accounts)";
        let value = value.trim();
        let stored_settings = self.db().settings();
        let mut accounts: DavAccounts = settings::read(&stored_settings, ACCOUNTS_SETTING);
        let (name, field) = match path.split_once('.') {
            Some((name, field)) => (name, Some(field)),
            None => (path, None),
        };
        validate_account(name, &DavAccountSetting::default()).map_err(anyhow::Error::msg)?;
        let written = match field {
            None if value.is_empty() => {
                accounts.remove(name);
                self.secrets().remove(&password_secret(name))?;
                DavSettingWritten::Removed
            }
            None => bail!("unknown account setting `{key}`: {usage}"),
            Some("password") => {
                let secrets = self.secrets();
                return Ok(if value.is_empty() {
                    secrets.remove(&password_secret(name))?;
                    DavSettingWritten::Removed
                } else {
                    DavSettingWritten::Password(secrets.set(&password_secret(name), value)?)
                });
            }
            Some(field) => {
                let entry = accounts.entry(name.to_string()).or_default();
                match field {
                    "url" => entry.url = value.to_string(),
                    "username" => entry.username = value.to_string(),
                    "kind" => {
                        entry.kind = match value {
                            "" | "dav" => DavKind::Dav,
                            "caldav" => DavKind::Caldav,
                            "carddav" => DavKind::Carddav,
                            other => {
                                bail!("`{other}` is not an account kind: caldav, carddav or dav")
                            }
                        }
                    }
                    _ => bail!("unknown account setting `{key}`: {usage}"),
                }
                validate_account(name, entry).map_err(anyhow::Error::msg)?;
                DavSettingWritten::Setting
            }
        };
        stored_settings.set(ACCOUNTS_SETTING, &serde_json::to_value(&accounts)?)?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accounts_are_validated() {
        validate(
            &json!({"home": {"kind": "dav", "url": "https://dav.example.com/", "username": "me"}}),
        )
        .unwrap();
        validate(&json!({"home": {"url": "ftp://x/", "username": "me"}})).unwrap_err();
        validate(&json!({"bad name": {"url": "https://x/", "username": "me"}})).unwrap_err();
        validate(&json!({"home": {"url": "https://x/", "password": "no"}})).unwrap_err();
        validate(&json!(["home"])).unwrap_err();
    }

    #[test]
    fn the_tool_reads_accounts_from_the_settings_and_passwords_from_the_secret_store() {
        let db = osprey_db::Database::open_in_memory().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let secrets = Secrets::new(dir.path(), crate::secrets::Backend::FileOnly);
        let source = StoredDavSettings {
            settings: db.settings(),
            secrets: secrets.clone(),
        };
        assert!(source.accounts().is_empty());
        db.settings()
            .set(
                ACCOUNTS_SETTING,
                &json!({"home": {"url": "https://dav.example.com/", "username": "me"}}),
            )
            .unwrap();
        secrets.set(&password_secret("home"), "pw").unwrap();
        assert_eq!(
            source.accounts(),
            [DavAccount {
                name: "home".into(),
                kind: DavKind::Dav,
                url: "https://dav.example.com/".into(),
                username: "me".into(),
            }]
        );
        assert_eq!(source.password("home").as_deref(), Some("pw"));
        assert_eq!(source.password("work"), None);
    }
}
