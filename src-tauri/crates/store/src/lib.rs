//! The app store server (axum + SQLite + a blob directory): publishing (every package passes the
//! same hostile-archive checks an install does, then is signed with the store's key), the
//! catalog (list, search, get, featured, popular, categories, with paging), reviews, downloads, the store's
//! public signing key and the revocation list. Skills (Agent Skills folders as `.tar.gz`
//! archives, signed as a whole by the same key) are published and listed the same way under
//! `/api/v1/skills` ([`SkillEntry`]). Publishing, featuring and revoking need the admin
//! token. Every publish and revocation is also an event on `/api/v1/events` (server-sent events
//! with a persisted, bounded log and `Last-Event-ID` resume; see [`events`]), which running
//! Osprey installs follow. The store owns its own database file; it must not touch Osprey's
//! (osprey-db).

mod api;
mod catalog;
pub mod events;
mod skills;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use osprey_apps::KeyPair;

pub use catalog::{AppEntry, Category, Review};
pub use events::StoreEvent;
pub use skills::SkillEntry;

/// What the store refuses or fails at; each maps to an HTTP status and `{code, message}`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unauthorized: the admin token is missing or wrong")]
    Unauthorized,
    #[error("not_found: {0}")]
    NotFound(String),
    #[error("version_exists: {0}")]
    VersionExists(String),
    #[error("invalid_request: {0}")]
    InvalidRequest(String),
    /// Too many of something at once (event streams); try again later.
    #[error("busy: {0}")]
    Busy(String),
    /// The package was refused (`package_rejected`, `manifest_invalid`, ...).
    #[error(transparent)]
    Package(#[from] osprey_apps::Error),
    #[error("database: {0}")]
    Database(#[from] rusqlite::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    pub fn code(&self) -> &'static str {
        match self {
            Error::Unauthorized => "unauthorized",
            Error::NotFound(_) => "not_found",
            Error::VersionExists(_) => "version_exists",
            Error::InvalidRequest(_) => "invalid_request",
            Error::Busy(_) => "busy",
            Error::Package(inner) => inner.code(),
            Error::Database(_) => "database",
            Error::Io(_) => "io",
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// How to open a store.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Holds store.db, blobs/ and signing-key.json (created, mode 0600, on first open).
    pub data_dir: PathBuf,
    /// Bearer token for publish, feature and revoke.
    pub admin_token: String,
}

/// An open store. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("data_dir", &self.inner.data_dir)
            .finish_non_exhaustive()
    }
}

struct Inner {
    data_dir: PathBuf,
    db: Mutex<rusqlite::Connection>,
    key: KeyPair,
    admin_token: String,
    /// The newest event id; open streams wait on it for the next event.
    head: tokio::sync::watch::Sender<i64>,
    /// One permit per open event stream.
    streams: Arc<tokio::sync::Semaphore>,
    event_log_limit: usize,
    /// Milliseconds between keep-alive comments on an idle stream.
    keep_alive_ms: std::sync::atomic::AtomicU64,
}

impl Store {
    pub fn open(config: StoreConfig) -> Result<Store> {
        Store::open_with_event_log(config, events::DEFAULT_EVENT_LOG_LIMIT)
    }

    /// [`Store::open`] keeping the newest `event_log_limit` events (at least one) for clients
    /// that reconnect.
    pub fn open_with_event_log(config: StoreConfig, event_log_limit: usize) -> Result<Store> {
        std::fs::create_dir_all(config.data_dir.join("blobs"))?;
        let key = load_or_create_key(&config.data_dir.join("signing-key.json"))?;
        let db = rusqlite::Connection::open(config.data_dir.join("store.db"))?;
        catalog::create_schema(&db)?;
        skills::create_schema(&db)?;
        events::create_schema(&db)?;
        let head = events::head(&db)?;
        Ok(Store {
            inner: Arc::new(Inner {
                data_dir: config.data_dir,
                db: Mutex::new(db),
                key,
                admin_token: config.admin_token,
                head: tokio::sync::watch::channel(head).0,
                streams: Arc::new(tokio::sync::Semaphore::new(events::MAX_STREAMS)),
                event_log_limit: event_log_limit.max(1),
                keep_alive_ms: std::sync::atomic::AtomicU64::new(
                    events::KEEP_ALIVE.as_millis() as u64
                ),
            }),
        })
    }

    /// The store's public key file (what clients verify packages against).
    pub fn public_key_json(&self) -> String {
        self.inner.key.public().to_json()
    }

    pub fn router(&self) -> axum::Router {
        api::router(self.clone())
    }

    /// Serves until the listener fails or the task is dropped.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    fn blobs(&self) -> PathBuf {
        self.inner.data_dir.join("blobs")
    }

    /// Where skill archives are kept (`skills/<name>-<version>.tar.gz`).
    fn skill_blobs(&self) -> PathBuf {
        self.inner.data_dir.join("skills")
    }
}

fn load_or_create_key(path: &Path) -> Result<KeyPair> {
    if let Ok(text) = std::fs::read_to_string(path) {
        return Ok(KeyPair::from_secret_json(&text)?);
    }
    let key = KeyPair::generate()?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    options
        .open(path)?
        .write_all(key.to_secret_json().as_bytes())?;
    Ok(key)
}
