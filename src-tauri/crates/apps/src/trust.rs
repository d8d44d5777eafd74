//! Trust in store apps: the store's signing key (cached 24 h, refreshed once when a package names
//! another key id) and the revocation list (cached 1 h). Both caches live on disk, so a restart
//! offline still knows them. When the list cannot be fetched and the cached copy is older than
//! `max_revocation_age`, launching store apps is refused (`revocation_unavailable`: fail closed).
//! A revoked app is refused (`revoked`) and [`Trust::sweep`] quarantines revoked installs.
//! Sideloaded apps are not store apps: none of this applies to them.
//!
//! Where the key and list come from is a [`TrustSource`]: the store client over HTTP, or a test's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::napp::StagedPackage;
use crate::signing::{PublicKey, Signatures};
use crate::{Error, Result};

pub const KEY_TTL: Duration = Duration::from_secs(24 * 3600);
pub const REVOCATION_TTL: Duration = Duration::from_secs(3600);
const KEY_FILE: &str = "signing-key.json";
const REVOCATIONS_FILE: &str = "revocations.json";

/// One revoked app or store skill: every version, or one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revocation {
    /// The app's id, or the skill's name.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub reason: String,
    /// What is revoked; lists from before skills could be revoked name apps only.
    #[serde(default)]
    pub kind: RevokedKind,
}

/// What a [`Revocation`] names: an app (by id) or a store skill (by name). The two share one
/// list and could share a name, so every check matches the kind too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevokedKind {
    #[default]
    App,
    Skill,
}

impl Revocation {
    /// Does this revocation cover the app or skill `id` at `version`?
    pub fn covers(&self, kind: RevokedKind, id: &str, version: &str) -> bool {
        self.kind == kind && self.id == id && self.version.as_deref().is_none_or(|v| v == version)
    }
}

/// Where the store's key and revocation list come from.
pub trait TrustSource: Send + Sync + 'static {
    /// The store's current signing key, as a public key file's JSON.
    fn signing_key(&self) -> BoxFuture<'_, Result<String>>;
    fn revocations(&self) -> BoxFuture<'_, Result<Vec<Revocation>>>;
}

#[derive(Clone, Serialize, Deserialize)]
struct CachedKey {
    fetched_at: u64,
    key_json: String,
}

#[derive(Clone, Serialize, Deserialize)]
struct CachedRevocations {
    fetched_at: u64,
    revocations: Vec<Revocation>,
}

/// The trust caches and the rules that use them.
pub struct Trust {
    source: Box<dyn TrustSource>,
    cache_dir: PathBuf,
    max_revocation_age: Duration,
    key: Mutex<Option<CachedKey>>,
    revocations: Mutex<Option<CachedRevocations>>,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("cache_dir", &self.cache_dir)
            .finish_non_exhaustive()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn age(fetched_at: u64) -> Duration {
    Duration::from_secs(now().saturating_sub(fetched_at))
}

impl Trust {
    /// `cache_dir` holds the cached key and list; `max_revocation_age` is how old a cached list
    /// may be when the store cannot be reached before launches are refused.
    pub fn new(
        source: impl TrustSource,
        cache_dir: impl Into<PathBuf>,
        max_revocation_age: Duration,
    ) -> Trust {
        let cache_dir = cache_dir.into();
        let read = |name: &str| std::fs::read(cache_dir.join(name)).ok();
        let key = read(KEY_FILE).and_then(|b| serde_json::from_slice(&b).ok());
        let revocations = read(REVOCATIONS_FILE).and_then(|b| serde_json::from_slice(&b).ok());
        Trust {
            source: Box::new(source),
            cache_dir,
            max_revocation_age,
            key: Mutex::new(key),
            revocations: Mutex::new(revocations),
        }
    }

    /// The store key to verify a package signed by `key_id` against: the cached key while fresh
    /// and matching; otherwise fetched once. A package naming an unknown key then fails
    /// verification with `key_id_mismatch`.
    pub async fn key_for(&self, key_id: &str) -> Result<PublicKey> {
        let cached = self.key.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(cached) = &cached
            && age(cached.fetched_at) < KEY_TTL
            && let Ok(key) = PublicKey::from_json(&cached.key_json)
            && key.key_id() == key_id
        {
            return Ok(key);
        }
        match self.source.signing_key().await {
            Ok(key_json) => {
                let key = PublicKey::from_json(&key_json)?;
                let fresh = CachedKey {
                    fetched_at: now(),
                    key_json,
                };
                self.store(KEY_FILE, &fresh);
                *self.key.lock().unwrap_or_else(|e| e.into_inner()) = Some(fresh);
                Ok(key)
            }
            // Offline: a cached key still verifies what it signed.
            Err(error) => match cached.and_then(|c| PublicKey::from_json(&c.key_json).ok()) {
                Some(key) => Ok(key),
                None => Err(error),
            },
        }
    }

    /// Verifies a staged store package against the store's key.
    pub async fn verify(&self, staged: &StagedPackage) -> Result<()> {
        staged.verify(&self.key_of(staged.path()).await?)
    }

    /// Verifies an installed store app's files against the store's key before it runs, so a
    /// binary, skill or UI file changed on disk since the install is refused.
    pub async fn verify_installed(&self, app_dir: &Path) -> Result<()> {
        self.key_of(app_dir).await?.verify_installed(app_dir)
    }

    /// The store key that signed the package in `dir`.
    async fn key_of(&self, dir: &Path) -> Result<PublicKey> {
        let signatures = std::fs::read(dir.join(crate::napp::SIGNATURES))
            .map_err(|e| Error::io("read signatures.json", e))?;
        self.key_for(&Signatures::parse(&signatures)?.key_id).await
    }

    /// The revocation list: cached while younger than an hour, else fetched; when the fetch
    /// fails, the cached list while younger than `max_revocation_age`, else
    /// `revocation_unavailable`.
    pub async fn revocations(&self) -> Result<Vec<Revocation>> {
        self.revocations_from(false).await
    }

    /// The revocation list fetched now, whatever the cache's age (the store announced a
    /// revocation, or a person asked); on failure the same fallback as [`Trust::revocations`].
    pub async fn fresh_revocations(&self) -> Result<Vec<Revocation>> {
        self.revocations_from(true).await
    }

    pub async fn revocations_from(&self, force: bool) -> Result<Vec<Revocation>> {
        let cached = self
            .revocations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if !force
            && let Some(cached) = &cached
            && age(cached.fetched_at) < REVOCATION_TTL
        {
            return Ok(cached.revocations.clone());
        }
        match self.source.revocations().await {
            Ok(revocations) => {
                let fresh = CachedRevocations {
                    fetched_at: now(),
                    revocations: revocations.clone(),
                };
                self.store(REVOCATIONS_FILE, &fresh);
                *self.revocations.lock().unwrap_or_else(|e| e.into_inner()) = Some(fresh);
                Ok(revocations)
            }
            Err(error) => match cached {
                Some(cached) if age(cached.fetched_at) <= self.max_revocation_age => {
                    Ok(cached.revocations)
                }
                Some(cached) => Err(Error::RevocationUnavailable(format!(
                    "the store cannot be reached ({error}) and the cached revocation list is \
                     {} h old (limit {} h)",
                    age(cached.fetched_at).as_secs() / 3600,
                    self.max_revocation_age.as_secs() / 3600
                ))),
                None => Err(Error::RevocationUnavailable(format!(
                    "the store cannot be reached ({error}) and no revocation list is cached"
                ))),
            },
        }
    }

    /// May this store app (id, version) be launched?
    pub async fn check_launch(&self, id: &str, version: &str) -> Result<()> {
        self.check(RevokedKind::App, id, version).await
    }

    /// May this store app or skill (id or name, version) be installed or used? Refused when
    /// the list revokes it (`revoked`), or when no recent enough list can be had.
    pub async fn check(&self, kind: RevokedKind, id: &str, version: &str) -> Result<()> {
        let revocations = self.revocations().await?;
        match revocations.iter().find(|r| r.covers(kind, id, version)) {
            Some(revocation) => Err(Error::Revoked {
                id: id.to_owned(),
                reason: revocation.reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn store(&self, name: &str, value: &impl Serialize) {
        // The cache is an optimisation and the offline fallback; failing to write it is logged.
        let result = std::fs::create_dir_all(&self.cache_dir).and_then(|()| {
            let temp = self.cache_dir.join(format!(".{name}.tmp"));
            std::fs::write(&temp, serde_json::to_vec(value).unwrap_or_default())?;
            std::fs::rename(&temp, self.cache_dir.join(name))
        });
        if let Err(error) = result {
            tracing::warn!("cannot write the trust cache {name}: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revocation_covers_its_kind_name_and_version_only() {
        let skill: Revocation = serde_json::from_value(serde_json::json!({
            "id": "units", "version": "1.0.0", "reason": "prompt injection", "kind": "skill"
        }))
        .unwrap();
        assert!(skill.covers(RevokedKind::Skill, "units", "1.0.0"));
        assert!(!skill.covers(RevokedKind::Skill, "units", "1.1.0"));
        // An app of the same name is not the skill.
        assert!(!skill.covers(RevokedKind::App, "units", "1.0.0"));
        // Lists from before skills could be revoked name apps only.
        let old: Revocation =
            serde_json::from_str(r#"{"id": "units", "reason": "malware"}"#).unwrap();
        assert_eq!(old.kind, RevokedKind::App);
        assert!(old.covers(RevokedKind::App, "units", "9.9.9"));
        assert!(!old.covers(RevokedKind::Skill, "units", "9.9.9"));
    }
}
