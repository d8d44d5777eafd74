//! Versioned schema migrations, tracked in SQLite's `user_version`. Each step runs in its own
//! transaction, so a failure leaves the file at the last good version.

use std::path::Path;

use rusqlite::Connection;

use crate::{Error, Result};

/// The schema steps in order; step `i` brings the file from version `i` to `i + 1`.
const STEPS: &[&str] = &[
    // 1: audit log, grants, settings.
    r#"
    CREATE TABLE audit (
        id          INTEGER PRIMARY KEY,
        at_ms       INTEGER NOT NULL,
        tool        TEXT NOT NULL,
        resource    TEXT,
        action      TEXT,
        origin      TEXT NOT NULL,
        session_id  TEXT,
        decision    TEXT NOT NULL,
        code        TEXT,
        duration_us INTEGER NOT NULL,
        error       TEXT,
        summary     TEXT
    );
    CREATE INDEX audit_at ON audit(at_ms);
    CREATE INDEX audit_session ON audit(session_id, at_ms);

    CREATE TABLE grants (
        id          INTEGER PRIMARY KEY,
        scope_kind  TEXT NOT NULL,
        scope_value TEXT NOT NULL,
        session_id  TEXT,
        expires_ms  INTEGER,
        created_ms  INTEGER NOT NULL
    );

    CREATE TABLE settings (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    "#,
];

pub(crate) const LATEST: i64 = STEPS.len() as i64;

pub(crate) fn migrate(path: &Path, conn: &mut Connection) -> Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if current > LATEST {
        return Err(Error::TooNew {
            path: path.to_path_buf(),
            found: current,
            supported: LATEST,
        });
    }
    for (index, sql) in STEPS.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}
