//! The topics the agent subscribed to through each comm app (the `comm` resource's
//! `subscribe`), so the subscriptions hold across an Osprey restart: the app is asked to
//! subscribe again each time it is attached.

use rusqlite::params;

use crate::{Database, Result, now_ms};

#[derive(Clone, Debug)]
pub struct CommSubscriptions {
    db: Database,
}

impl CommSubscriptions {
    pub(crate) fn new(db: Database) -> Self {
        CommSubscriptions { db }
    }

    /// Every kept subscription as `(app id, topic)`, by app then topic.
    pub fn all(&self) -> Result<Vec<(String, String)>> {
        self.db.with_conn(|c| {
            let mut statement =
                c.prepare("SELECT app_id, topic FROM comm_subscriptions ORDER BY app_id, topic")?;
            let rows = statement
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    pub fn add(&self, app_id: &str, topic: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "INSERT OR IGNORE INTO comm_subscriptions (app_id, topic, created_ms)
                 VALUES (?1, ?2, ?3)",
                params![app_id, topic, now_ms()],
            )?;
            Ok(())
        })
    }

    pub fn remove(&self, app_id: &str, topic: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "DELETE FROM comm_subscriptions WHERE app_id = ?1 AND topic = ?2",
                params![app_id, topic],
            )?;
            Ok(())
        })
    }

    /// Forgets every subscription through `app_id` (it was uninstalled).
    pub fn forget_app(&self, app_id: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "DELETE FROM comm_subscriptions WHERE app_id = ?1",
                params![app_id],
            )?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Database;

    #[test]
    fn subscriptions_are_kept_per_app_and_forgotten_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("osprey.db");
        let subscriptions = Database::open(&path).unwrap().comm_subscriptions();
        subscriptions.add("bridge", "weather").unwrap();
        subscriptions.add("bridge", "weather").unwrap();
        subscriptions.add("bridge", "alerts").unwrap();
        subscriptions.add("other", "weather").unwrap();
        subscriptions.remove("bridge", "nothing").unwrap();
        // A second open of the file sees them: they are on disk.
        let reopened = Database::open(&path).unwrap().comm_subscriptions();
        assert_eq!(
            reopened.all().unwrap(),
            [
                ("bridge".to_string(), "alerts".to_string()),
                ("bridge".into(), "weather".into()),
                ("other".into(), "weather".into()),
            ]
        );
        reopened.remove("bridge", "alerts").unwrap();
        reopened.forget_app("other").unwrap();
        assert_eq!(
            subscriptions.all().unwrap(),
            [("bridge".to_string(), "weather".to_string())]
        );
    }
}
