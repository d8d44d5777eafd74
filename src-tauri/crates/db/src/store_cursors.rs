//! Where this Osprey is in each store's event stream: the `id:` of the last event it applied,
//! by store URL, so a restart or a dropped connection resumes with `Last-Event-ID` and misses
//! nothing. Keyed by URL so another store is never asked to resume from this one's id.
//!
//! Beside it, the pushed installs still waiting for the person's answer: the cursor moves past
//! an `installed` event as soon as its question is asked, so the question itself is what must
//! survive a stop.

use rusqlite::{OptionalExtension, params};

use crate::{Database, Result, now_ms};

#[derive(Clone, Debug)]
pub struct StoreCursors {
    db: Database,
}

impl StoreCursors {
    pub(crate) fn new(db: Database) -> Self {
        StoreCursors { db }
    }

    /// The last event id applied from the store at `store_url`, if any.
    pub fn get(&self, store_url: &str) -> Result<Option<String>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                "SELECT last_event_id FROM store_cursors WHERE store_url = ?1",
                [store_url],
                |row| row.get(0),
            )
            .optional()?)
        })
    }

    /// Records `last_event_id` as applied from the store at `store_url`.
    pub fn set(&self, store_url: &str, last_event_id: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO store_cursors (store_url, last_event_id, updated_ms)
                 VALUES (?1, ?2, ?3)
                 ON CONFLICT(store_url) DO UPDATE SET last_event_id = excluded.last_event_id,
                     updated_ms = excluded.updated_ms",
                params![store_url, last_event_id, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Notes that the install of `app_id` pushed by the store at `store_url` is being asked.
    pub fn add_pending_install(&self, store_url: &str, app_id: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "INSERT OR IGNORE INTO store_pending_installs (store_url, app_id, created_ms)
                 VALUES (?1, ?2, ?3)",
                params![store_url, app_id, now_ms()],
            )?;
            Ok(())
        })
    }

    /// The question about `app_id` was answered (or cannot be asked any more).
    pub fn remove_pending_install(&self, store_url: &str, app_id: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "DELETE FROM store_pending_installs WHERE store_url = ?1 AND app_id = ?2",
                params![store_url, app_id],
            )?;
            Ok(())
        })
    }

    /// The pushed installs from `store_url` still waiting for an answer, oldest first.
    pub fn pending_installs(&self, store_url: &str) -> Result<Vec<String>> {
        self.db.with_conn(|c| {
            let mut statement = c.prepare(
                "SELECT app_id FROM store_pending_installs WHERE store_url = ?1
                 ORDER BY created_ms, app_id",
            )?;
            let ids = statement
                .query_map([store_url], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(ids)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Database;

    #[test]
    fn a_cursor_is_kept_per_store_across_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let cursors = Database::open_in(dir.path()).unwrap().store_cursors();
            assert_eq!(cursors.get("http://a:1").unwrap(), None);
            cursors.set("http://a:1", "7").unwrap();
            cursors.set("http://a:1", "12").unwrap();
            cursors.set("http://b:1", "3").unwrap();
        }
        let cursors = Database::open_in(dir.path()).unwrap().store_cursors();
        assert_eq!(cursors.get("http://a:1").unwrap().as_deref(), Some("12"));
        assert_eq!(cursors.get("http://b:1").unwrap().as_deref(), Some("3"));
    }

    #[test]
    fn a_pending_install_is_kept_per_store_until_removed() {
        let dir = tempfile::tempdir().unwrap();
        {
            let cursors = Database::open_in(dir.path()).unwrap().store_cursors();
            cursors.add_pending_install("http://a:1", "units").unwrap();
            cursors.add_pending_install("http://a:1", "units").unwrap();
            cursors.add_pending_install("http://b:1", "notes").unwrap();
        }
        let cursors = Database::open_in(dir.path()).unwrap().store_cursors();
        assert_eq!(cursors.pending_installs("http://a:1").unwrap(), ["units"]);
        cursors
            .remove_pending_install("http://a:1", "units")
            .unwrap();
        assert!(cursors.pending_installs("http://a:1").unwrap().is_empty());
        assert_eq!(cursors.pending_installs("http://b:1").unwrap(), ["notes"]);
    }
}
