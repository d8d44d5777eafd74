//! Osprey's storage: one SQLite file (`osprey.db`) in the data directory, opened in WAL mode with
//! foreign keys on, brought to the current schema by versioned migrations, and reached through
//! typed repositories ([`AuditLog`], [`Grants`], [`Settings`], [`Sessions`]). This crate owns the
//! schema and the data directory's location; it must not know about tools, policy or any async
//! runtime.

mod audit;
mod comm_subscriptions;
mod grants;
mod graph_tasks;
mod memory;
mod migrations;
mod model_windows;
mod reminders;
mod sessions;
mod settings;
mod store_cursors;
mod subagent_tasks;
mod tool_usage;
mod work_tasks;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

pub use audit::{AuditEntry, AuditLog, AuditQuery, AuditRecord, OUTCOMES};
pub use comm_subscriptions::CommSubscriptions;
pub use grants::{Grants, StoredGrant};
pub use graph_tasks::{GraphStatus, GraphTask, GraphTasks};
pub use memory::{
    Association, DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE, Memory, MemoryHit, MemoryLayer,
    MemoryQuery, MemoryRow, NewMemory, fts_query, normalize_tags,
};
pub use model_windows::ModelWindows;
pub use reminders::{
    NewReminder, NextRun, ReminderKind, ReminderRow, ReminderRun, Reminders, RunFinish, RunOutcome,
    RunStart, RunTrigger,
};
pub use sessions::{
    NewSession, SessionMatch, SessionRow, SessionUsage, Sessions, StoredMessage, StoredToolCall,
};
pub use settings::Settings;
pub use store_cursors::StoreCursors;
pub use subagent_tasks::{NewSubAgentTask, SubAgentTask, SubAgentTasks};
pub use tool_usage::ToolUsage;
pub use work_tasks::{WorkStatus, WorkTask, WorkTaskChange, WorkTasks};

/// Errors from opening or using the database.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot create the data directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "the database {path} has schema version {found}, newer than this Osprey understands ({supported}); update Osprey or point --data-dir elsewhere"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("stored value for `{key}` is not valid JSON: {source}")]
    BadJson {
        key: String,
        source: serde_json::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The environment variable that overrides the data directory.
pub const DATA_DIR_ENV: &str = "OSPREY_DATA_DIR";

/// Where Osprey keeps its data: an explicit override, else `$OSPREY_DATA_DIR`, else the platform's
/// data directory (`$XDG_DATA_HOME/osprey` on Linux, `~/Library/Application Support/osprey` on
/// macOS, `%APPDATA%\osprey\data` on Windows), else `./.osprey` when no home can be found.
pub fn data_dir(override_dir: Option<&Path>) -> PathBuf {
    if let Some(dir) = override_dir {
        return dir.to_path_buf();
    }
    if let Some(dir) = std::env::var_os(DATA_DIR_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    directories::ProjectDirs::from("", "", "osprey")
        .map(|dirs| dirs.data_dir().to_path_buf())
        .unwrap_or_else(|| PathBuf::from(".osprey"))
}

/// A cheap-clone handle on the open database. One connection behind a mutex: every statement here
/// is short, and SQLite serialises writers anyway.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("path", &self.inner.path)
            .finish()
    }
}

/// Creates `path` empty and owner-only when it does not exist yet, so the database is never
/// readable by others, not even between its creation and a later `chmod`.
fn create_private(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Narrows `path`'s permissions to `mode` when others (group or world) have any; a missing
/// file is fine, a failure is logged (the data stays usable).
pub fn keep_private(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(metadata) = std::fs::metadata(path) else {
            return;
        };
        if metadata.permissions().mode() & 0o077 != 0
            && let Err(error) =
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        {
            tracing::warn!(path = %path.display(), %error, "cannot make a private file private");
        }
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
}

impl Database {
    /// The database file's name inside the data directory.
    pub const FILE_NAME: &'static str = "osprey.db";

    /// Opens (creating if needed) `<data_dir>/osprey.db` and migrates it. The data folder is
    /// made owner-only (0700) and the database files 0600, repaired when found looser: they
    /// hold conversations, grants and app data.
    pub fn open_in(data_dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(|source| Error::CreateDir {
            path: data_dir.to_path_buf(),
            source,
        })?;
        keep_private(data_dir, 0o700);
        Self::open(&data_dir.join(Self::FILE_NAME))
    }

    /// Opens (creating if needed) the database file at `path` and migrates it.
    pub fn open(path: &Path) -> Result<Self> {
        create_private(path);
        let conn = Connection::open(path).map_err(|source| Error::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let database = Self::configure(path, conn)?;
        // SQLite gives its WAL and shared-memory files the database file's mode; an older
        // Osprey's looser files are repaired here.
        for suffix in ["", "-wal", "-shm"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            keep_private(Path::new(&name), 0o600);
        }
        Ok(database)
    }

    /// A private in-memory database (tests and benchmarks).
    pub fn open_in_memory() -> Result<Self> {
        Self::configure(Path::new(":memory:"), Connection::open_in_memory()?)
    }

    fn configure(path: &Path, mut conn: Connection) -> Result<Self> {
        let open_err = |source| Error::Open {
            path: path.to_path_buf(),
            source,
        };
        // WAL lets readers (the UI listing audit rows) run beside the writer; NORMAL sync is
        // durable across application crashes, which is the failure we design for.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(open_err)?;
        migrations::migrate(path, &mut conn)?;
        Ok(Database {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                conn: Mutex::new(conn),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The schema version the file is at.
    pub fn schema_version(&self) -> Result<i64> {
        Ok(self
            .lock()
            .query_row("PRAGMA user_version", [], |row| row.get(0))?)
    }

    pub fn audit(&self) -> AuditLog {
        AuditLog::new(self.clone())
    }

    pub fn grants(&self) -> Grants {
        Grants::new(self.clone())
    }

    pub fn settings(&self) -> Settings {
        Settings::new(self.clone())
    }

    pub fn sessions(&self) -> Sessions {
        Sessions::new(self.clone())
    }

    pub fn memory(&self) -> Memory {
        Memory::new(self.clone())
    }

    pub fn reminders(&self) -> Reminders {
        Reminders::new(self.clone())
    }

    pub fn graph_tasks(&self) -> GraphTasks {
        GraphTasks::new(self.clone())
    }

    pub fn work_tasks(&self) -> WorkTasks {
        WorkTasks::new(self.clone())
    }

    pub fn subagent_tasks(&self) -> SubAgentTasks {
        SubAgentTasks::new(self.clone())
    }

    pub fn store_cursors(&self) -> StoreCursors {
        StoreCursors::new(self.clone())
    }

    pub fn model_windows(&self) -> ModelWindows {
        ModelWindows::new(self.clone())
    }

    pub fn tool_usage(&self) -> ToolUsage {
        ToolUsage::new(self.clone())
    }

    pub fn comm_subscriptions(&self) -> CommSubscriptions {
        CommSubscriptions::new(self.clone())
    }

    /// Runs `f` on the connection. Keep it short: every repository shares this lock.
    pub fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        f(&mut self.lock())
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves a connection that is still consistent (SQLite
        // rolls back the open statement), so poisoning is not a reason to fail every later call.
        self.inner
            .conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn the_data_folder_and_database_files_are_owner_only_and_repaired() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let db = Database::open_in(&data).unwrap();
        db.settings().set("k", &serde_json::json!(1)).unwrap();
        let file = data.join(Database::FILE_NAME);
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&data.join("osprey.db-wal")), 0o600);
        drop(db);

        // An older Osprey's (or a careless copy's) loose files are narrowed at the next start,
        // and nothing in them is lost.
        let loose = |path: &Path, m| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).unwrap()
        };
        loose(&data, 0o755);
        loose(&file, 0o644);
        let db = Database::open_in(&data).unwrap();
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&file), 0o600);
        assert_eq!(db.settings().get("k").unwrap(), Some(serde_json::json!(1)));
    }

    #[test]
    fn opens_in_wal_mode_with_foreign_keys_and_current_schema() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open_in(&dir.path().join("nested/data")).unwrap();
        assert!(dir.path().join("nested/data/osprey.db").exists());
        let (mode, fk): (String, i64) = db
            .with_conn(|c| {
                Ok((
                    c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?,
                    c.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?,
                ))
            })
            .unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(fk, 1);
        assert_eq!(db.schema_version().unwrap(), migrations::LATEST);
    }

    #[test]
    fn reopening_keeps_data_and_does_not_rerun_migrations() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::open_in(dir.path()).unwrap();
            db.settings()
                .set("k", &serde_json::json!({"a": 1}))
                .unwrap();
        }
        let db = Database::open_in(dir.path()).unwrap();
        assert_eq!(
            db.settings().get("k").unwrap(),
            Some(serde_json::json!({"a": 1}))
        );
    }

    #[test]
    fn refuses_a_database_from_a_newer_osprey_and_leaves_it_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("osprey.db");
        {
            let c = Connection::open(&path).unwrap();
            c.pragma_update(None, "user_version", 9999).unwrap();
        }
        let err = Database::open(&path).unwrap_err();
        assert!(matches!(err, Error::TooNew { found: 9999, .. }), "{err}");
        let c = Connection::open(&path).unwrap();
        let v: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, 9999);
    }

    #[test]
    fn data_dir_prefers_the_explicit_override() {
        assert_eq!(data_dir(Some(Path::new("/x/y"))), PathBuf::from("/x/y"));
    }

    #[test]
    fn a_garbage_file_gives_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("osprey.db");
        std::fs::write(
            &path,
            b"this is not a database, just some text bytes.......",
        )
        .unwrap();
        let err = Database::open(&path).unwrap_err().to_string();
        assert!(err.contains("osprey.db"), "{err}");
        // The file is left as it was for the person to inspect.
        assert!(std::fs::read(&path).unwrap().starts_with(b"this is not"));
    }
}
