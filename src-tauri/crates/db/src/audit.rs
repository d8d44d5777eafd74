//! The audit log: one row per tool call, whatever its outcome.

use rusqlite::params;

use crate::{Database, Result};

/// One tool call as it was decided and run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    pub at_ms: i64,
    pub tool: String,
    pub resource: Option<String>,
    pub action: Option<String>,
    pub origin: String,
    pub session_id: Option<String>,
    /// How the call was let through or stopped: `allow`, `ask:once`, `ask:session`, `ask:grant`,
    /// `grant`, `hook`, or a refusal code such as `safeguard_blocked`.
    pub decision: String,
    /// The result's error code, when it had one.
    pub code: Option<String>,
    pub duration_us: i64,
    /// The error message, when the call failed or was refused.
    pub error: Option<String>,
    /// One line saying what the call was about (the command, path or URL).
    pub summary: Option<String>,
}

/// Filters for [`AuditLog::list`]; the newest rows come first.
#[derive(Clone, Debug, Default)]
pub struct AuditQuery {
    pub session_id: Option<String>,
    pub tool: Option<String>,
    pub limit: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct AuditLog {
    db: Database,
}

impl AuditLog {
    pub(crate) fn new(db: Database) -> Self {
        AuditLog { db }
    }

    pub fn insert(&self, entry: &AuditEntry) -> Result<()> {
        self.insert_many(std::slice::from_ref(entry))
    }

    /// Writes a batch in one transaction (the registry's background writer batches rows).
    pub fn insert_many(&self, entries: &[AuditEntry]) -> Result<()> {
        self.db.with_conn(|conn| {
            let tx = conn.transaction()?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO audit (at_ms, tool, resource, action, origin, session_id, decision, code, duration_us, error, summary)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )?;
                for e in entries {
                    stmt.execute(params![
                        e.at_ms,
                        e.tool,
                        e.resource,
                        e.action,
                        e.origin,
                        e.session_id,
                        e.decision,
                        e.code,
                        e.duration_us,
                        e.error,
                        e.summary
                    ])?;
                }
            }
            tx.commit()?;
            Ok(())
        })
    }

    pub fn list(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        self.db.with_conn(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT at_ms, tool, resource, action, origin, session_id, decision, code, duration_us, error, summary
                 FROM audit
                 WHERE (?1 IS NULL OR session_id = ?1) AND (?2 IS NULL OR tool = ?2)
                 ORDER BY id DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(
                params![
                    query.session_id,
                    query.tool,
                    query.limit.map(i64::from).unwrap_or(-1)
                ],
                |row| {
                    Ok(AuditEntry {
                        at_ms: row.get(0)?,
                        tool: row.get(1)?,
                        resource: row.get(2)?,
                        action: row.get(3)?,
                        origin: row.get(4)?,
                        session_id: row.get(5)?,
                        decision: row.get(6)?,
                        code: row.get(7)?,
                        duration_us: row.get(8)?,
                        error: row.get(9)?,
                        summary: row.get(10)?,
                    })
                },
            )?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    pub fn count(&self) -> Result<i64> {
        self.db
            .with_conn(|c| Ok(c.query_row("SELECT count(*) FROM audit", [], |r| r.get(0))?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tool: &str, session: Option<&str>) -> AuditEntry {
        AuditEntry {
            at_ms: crate::now_ms(),
            tool: tool.into(),
            resource: Some("bash".into()),
            action: Some("exec".into()),
            origin: "user".into(),
            session_id: session.map(Into::into),
            decision: "allow".into(),
            code: None,
            duration_us: 12,
            error: None,
            summary: Some("ls".into()),
        }
    }

    #[test]
    fn lists_newest_first_with_filters() {
        let db = Database::open_in_memory().unwrap();
        let log = db.audit();
        log.insert(&entry("shell", Some("s1"))).unwrap();
        log.insert_many(&[entry("file", Some("s1")), entry("web", Some("s2"))])
            .unwrap();
        let all = log.list(&AuditQuery::default()).unwrap();
        assert_eq!(
            all.iter().map(|e| e.tool.as_str()).collect::<Vec<_>>(),
            ["web", "file", "shell"]
        );
        let s1 = log
            .list(&AuditQuery {
                session_id: Some("s1".into()),
                limit: Some(1),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(s1.len(), 1);
        assert_eq!(s1[0].tool, "file");
        assert_eq!(log.count().unwrap(), 3);
    }
}
