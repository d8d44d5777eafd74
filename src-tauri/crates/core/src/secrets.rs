//! Where provider API keys live. The OS keyring (Secret Service on Linux, Keychain on macOS,
//! the Credential Manager on Windows) when one answers; otherwise `<data>/secrets.json`, created
//! 0600, and everyone who stores a key there is told so. Keys never go into the settings table,
//! so `osprey config get` and the settings UI cannot print them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The keyring service name Osprey's entries are filed under.
const SERVICE: &str = "osprey";
/// The fallback file's name inside the data directory.
const FILE_NAME: &str = "secrets.json";

/// Narrows `<data>/secrets.json` to 0600 when it was left looser (by hand, by an older Osprey);
/// called once when the core opens. New files are written 0600.
pub fn repair(data_dir: &Path) {
    osprey_db::keep_private(&data_dir.join(FILE_NAME), 0o600);
}

/// Where a secret was stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretLocation {
    /// The operating system's keyring.
    Keyring,
    /// `<data>/secrets.json`, readable only by this user.
    File,
}

impl std::fmt::Display for SecretLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SecretLocation::Keyring => "the system keyring",
            SecretLocation::File => "a file readable only by you (no system keyring answered)",
        })
    }
}

/// Which stores to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The OS keyring first, the file when the keyring is unavailable.
    KeyringThenFile,
    /// Only the file (`OSPREY_SECRETS=file`: headless machines, tests).
    FileOnly,
}

impl Backend {
    /// `OSPREY_SECRETS=file` forces the file; anything else tries the keyring first.
    pub fn from_environment() -> Backend {
        match std::env::var("OSPREY_SECRETS").as_deref() {
            Ok("file") => Backend::FileOnly,
            _ => Backend::KeyringThenFile,
        }
    }
}

/// Named secrets (`anthropic.api_key`, ...). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Secrets {
    file: PathBuf,
    backend: Backend,
}

impl Secrets {
    pub fn new(data_dir: &Path, backend: Backend) -> Secrets {
        Secrets {
            file: data_dir.join(FILE_NAME),
            backend,
        }
    }

    /// The secret called `name`, from the keyring or else the file.
    pub fn get(&self, name: &str) -> anyhow::Result<Option<String>> {
        if self.backend == Backend::KeyringThenFile
            && let Some(value) = keyring_get(name)
        {
            return Ok(Some(value));
        }
        Ok(self.read_file()?.remove(name))
    }

    /// Stores `value` under `name` and says where it went. A copy left in the file by an
    /// earlier run without a keyring is removed once the keyring has it.
    pub fn set(&self, name: &str, value: &str) -> anyhow::Result<SecretLocation> {
        if self.backend == Backend::KeyringThenFile && keyring_set(name, value) {
            let mut stored = self.read_file()?;
            if stored.remove(name).is_some() {
                self.write_file(&stored)?;
            }
            return Ok(SecretLocation::Keyring);
        }
        let mut stored = self.read_file()?;
        stored.insert(name.to_string(), value.to_string());
        self.write_file(&stored)?;
        Ok(SecretLocation::File)
    }

    /// Removes `name` from both stores; true when it existed in either.
    pub fn remove(&self, name: &str) -> anyhow::Result<bool> {
        let from_keyring = self.backend == Backend::KeyringThenFile && keyring_remove(name);
        let mut stored = self.read_file()?;
        let from_file = stored.remove(name).is_some();
        if from_file {
            self.write_file(&stored)?;
        }
        Ok(from_keyring || from_file)
    }

    fn read_file(&self) -> anyhow::Result<BTreeMap<String, String>> {
        let text = match std::fs::read_to_string(&self.file) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(err) => {
                return Err(err).with_context(|| format!("reading {}", self.file.display()));
            }
        };
        serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a JSON object of names to strings; fix or delete it and set the keys again",
                self.file.display()
            )
        })
    }

    /// Writes the whole map to a 0600 temporary file beside the real one, then renames it over,
    /// so a full disk or a crash leaves the previous file intact.
    fn write_file(&self, stored: &BTreeMap<String, String>) -> anyhow::Result<()> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let temporary = self.file.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let write = || -> std::io::Result<()> {
            let mut file = options.open(&temporary)?;
            // The mode above only applies to a file it creates; a leftover temporary keeps its own.
            #[cfg(unix)]
            std::fs::set_permissions(
                &temporary,
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
            )?;
            file.write_all(serde_json::to_string_pretty(stored)?.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temporary, &self.file)
        };
        write().with_context(|| format!("writing {}", self.file.display()))
    }
}

#[cfg(any(target_os = "linux", target_os = "macos", target_os = "windows"))]
fn entry(name: &str) -> Option<keyring::Entry> {
    keyring::Entry::new(SERVICE, name)
        .map_err(|err| tracing::debug!(%err, "no keyring entry"))
        .ok()
}

#[cfg(any(target_os = "linux", target_os = "macos", target_os = "windows"))]
fn keyring_get(name: &str) -> Option<String> {
    match entry(name)?.get_password() {
        Ok(value) => Some(value),
        Err(keyring::Error::NoEntry) => None,
        Err(err) => {
            tracing::debug!(%err, "the keyring did not answer; reading the secrets file");
            None
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "macos", target_os = "windows"))]
fn keyring_set(name: &str, value: &str) -> bool {
    match entry(name).map(|e| e.set_password(value)) {
        Some(Ok(())) => true,
        Some(Err(err)) => {
            tracing::info!(%err, "the keyring refused the secret; using the secrets file");
            false
        }
        None => false,
    }
}

#[cfg(any(target_os = "linux", target_os = "macos", target_os = "windows"))]
fn keyring_remove(name: &str) -> bool {
    entry(name).is_some_and(|e| e.delete_credential().is_ok())
}

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
fn keyring_get(_: &str) -> Option<String> {
    None
}
#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
fn keyring_set(_: &str, _: &str) -> bool {
    false
}
#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
fn keyring_remove(_: &str) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_store_is_private_and_survives_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = Secrets::new(dir.path(), Backend::FileOnly);
        assert_eq!(secrets.get("anthropic.api_key").unwrap(), None);
        let location = secrets.set("anthropic.api_key", "sk-one").unwrap();
        assert_eq!(location, SecretLocation::File);
        secrets.set("openai.api_key", "sk-two").unwrap();
        assert_eq!(
            secrets.get("anthropic.api_key").unwrap().as_deref(),
            Some("sk-one")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE_NAME))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(secrets.remove("anthropic.api_key").unwrap());
        assert!(!secrets.remove("anthropic.api_key").unwrap());
        assert_eq!(secrets.get("anthropic.api_key").unwrap(), None);
        assert_eq!(
            secrets.get("openai.api_key").unwrap().as_deref(),
            Some("sk-two")
        );
    }

    #[test]
    fn a_corrupt_file_is_reported_and_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "not json").unwrap();
        let secrets = Secrets::new(dir.path(), Backend::FileOnly);
        let err = secrets.get("x").unwrap_err().to_string();
        assert!(err.contains("is not a JSON object"), "{err}");
        secrets.set("x", "y").unwrap_err();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap(),
            "not json"
        );
    }
}
