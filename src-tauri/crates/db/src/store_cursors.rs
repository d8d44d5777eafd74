//! Where this Osprey is in each store's event stream: the `id:` of the last event it applied,
//! by store URL, so a restart or a dropped connection resumes with `Last-Event-ID` and misses
//! nothing. Keyed by URL so another store is never asked to resume from this one's id.

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
}
