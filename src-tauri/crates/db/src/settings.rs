//! Key-value settings stored as JSON.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use crate::{Database, Error, Result};

#[derive(Clone, Debug)]
pub struct Settings {
    db: Database,
}

impl Settings {
    pub(crate) fn new(db: Database) -> Self {
        Settings { db }
    }

    pub fn get(&self, key: &str) -> Result<Option<Value>> {
        let raw: Option<String> = self.db.with_conn(|c| {
            Ok(
                c.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                    r.get(0)
                })
                .optional()?,
            )
        })?;
        raw.map(|s| {
            serde_json::from_str(&s).map_err(|source| Error::BadJson {
                key: key.to_string(),
                source,
            })
        })
        .transpose()
    }

    pub fn set(&self, key: &str, value: &Value) -> Result<()> {
        let text = value.to_string();
        self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![key, text],
            )?;
            Ok(())
        })
    }

    pub fn remove(&self, key: &str) -> Result<bool> {
        self.db
            .with_conn(|c| Ok(c.execute("DELETE FROM settings WHERE key = ?1", [key])? > 0))
    }
}
