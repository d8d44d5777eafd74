//! How often each tool ran, per scope (a day or a session), for the tool quotas the person sets
//! (`tools.quotas`). Counts live here rather than in memory so a day's count survives a restart:
//! quitting Osprey must not reset a per-day cap.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use crate::{Database, Result, now_ms};

#[derive(Clone, Debug)]
pub struct ToolUsage {
    db: Database,
}

impl ToolUsage {
    pub(crate) fn new(db: Database) -> Self {
        ToolUsage { db }
    }

    /// The count of `key` in `scope` (0 when it never ran there).
    pub fn count(&self, scope: &str, key: &str) -> Result<u64> {
        self.db.with_conn(|c| {
            let count: Option<i64> = c
                .query_row(
                    "SELECT count FROM tool_usage WHERE scope = ?1 AND key = ?2",
                    params![scope, key],
                    |row| row.get(0),
                )
                .optional()?;
            Ok(count.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
        })
    }

    /// Counts one use of every `(scope, key, limit)` at once, if each is still under its limit:
    /// `Ok(None)` when counted, `Ok(Some(i))` (nothing counted) when the `i`-th is at its limit
    /// already. One transaction, so two calls racing cannot both take the last use.
    pub fn take(&self, entries: &[(&str, &str, u64)]) -> Result<Option<usize>> {
        self.db.with_conn(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            for (index, (scope, key, limit)) in entries.iter().enumerate() {
                let count: Option<i64> = tx
                    .query_row(
                        "SELECT count FROM tool_usage WHERE scope = ?1 AND key = ?2",
                        params![scope, key],
                        |row| row.get(0),
                    )
                    .optional()?;
                let count = count.and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
                if count >= *limit {
                    return Ok(Some(index));
                }
            }
            let now = now_ms();
            for (scope, key, _) in entries {
                tx.execute(
                    "INSERT INTO tool_usage (scope, key, count, updated_ms) VALUES (?1, ?2, 1, ?3)
                     ON CONFLICT(scope, key)
                     DO UPDATE SET count = count + 1, updated_ms = excluded.updated_ms",
                    params![scope, key, now],
                )?;
            }
            tx.commit()?;
            Ok(None)
        })
    }

    /// Forgets the counts of days before `day_scope` (`day:YYYY-MM-DD`; such scopes sort by
    /// date) and of sessions not touched for `session_max_age_ms`.
    pub fn prune(&self, day_scope: &str, session_max_age_ms: i64) -> Result<usize> {
        let cutoff = now_ms().saturating_sub(session_max_age_ms);
        self.db.with_conn(|c| {
            let days = c.execute(
                "DELETE FROM tool_usage WHERE scope LIKE 'day:%' AND scope < ?1",
                [day_scope],
            )?;
            let sessions = c.execute(
                "DELETE FROM tool_usage WHERE scope LIKE 'session:%' AND updated_ms < ?1",
                [cutoff],
            )?;
            Ok(days + sessions)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Database;

    #[test]
    fn counts_stop_at_the_limit_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let usage = Database::open_in(dir.path()).unwrap().tool_usage();
            let both = [("day:2026-01-02", "shell", 2), ("session:s1", "shell", 5)];
            assert_eq!(usage.take(&both).unwrap(), None);
            assert_eq!(usage.take(&both).unwrap(), None);
            // The day's cap is reached: nothing is counted, not even the session's.
            assert_eq!(usage.take(&both).unwrap(), Some(0));
            assert_eq!(usage.count("session:s1", "shell").unwrap(), 2);
        }
        let usage = Database::open_in(dir.path()).unwrap().tool_usage();
        assert_eq!(usage.count("day:2026-01-02", "shell").unwrap(), 2);
        assert_eq!(usage.count("day:2026-01-02", "file").unwrap(), 0);
        usage.take(&[("day:2026-01-03", "shell", 9)]).unwrap();
        assert_eq!(usage.prune("day:2026-01-03", i64::MAX).unwrap(), 1);
        assert_eq!(usage.count("day:2026-01-02", "shell").unwrap(), 0);
        assert_eq!(usage.count("day:2026-01-03", "shell").unwrap(), 1);
        assert_eq!(usage.count("session:s1", "shell").unwrap(), 2);
    }
}
