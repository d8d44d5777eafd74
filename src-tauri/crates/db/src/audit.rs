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

/// Filters for [`AuditLog::list`] and [`AuditLog::page`]; the newest rows come first.
#[derive(Clone, Debug, Default)]
pub struct AuditQuery {
    pub session_id: Option<String>,
    pub tool: Option<String>,
    pub limit: Option<u32>,
    /// `user`, `app`, ...
    pub origin: Option<String>,
    /// One of [`OUTCOMES`]: rows whose decision and result fall in that group.
    pub outcome: Option<String>,
    /// Words found in the summary, action or resource (case-insensitive).
    pub text: Option<String>,
    /// Rows older than this id.
    pub before_id: Option<i64>,
}

/// How a call ended, grouped: let through without asking (autonomous mode's calls among them:
/// no person answered), approved by the person, refused (by the person, a timeout, the policy,
/// an origin rule, the safeguard or tool governance), or let through but failed.
pub const OUTCOMES: [&str; 4] = ["allowed", "approved", "refused", "failed"];

/// The SQL that sorts a row into one of [`OUTCOMES`] (one definition for the column and the
/// filter).
const OUTCOME_SQL: &str = "CASE
    WHEN decision LIKE 'allow%' OR decision = 'hook' OR decision LIKE 'ask:%'
         OR decision = 'autonomous' THEN
        CASE WHEN code IS NOT NULL OR error IS NOT NULL THEN 'failed'
             WHEN decision LIKE 'ask:%' THEN 'approved'
             ELSE 'allowed' END
    ELSE 'refused' END";

/// One listed row: its id (for paging), the row and its outcome group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRecord {
    pub id: i64,
    pub entry: AuditEntry,
    pub outcome: String,
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

    /// Rows matching every filter of `query`, newest first, with their ids and outcome groups.
    pub fn page(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
        let text = query
            .text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| {
                format!(
                    "%{}%",
                    t.replace('\\', "\\\\")
                        .replace('%', "\\%")
                        .replace('_', "\\_")
                )
            });
        self.db.with_conn(|conn| {
            let sql = format!(
                "SELECT id, at_ms, tool, resource, action, origin, session_id, decision, code,
                        duration_us, error, summary, {OUTCOME_SQL} AS outcome
                 FROM audit
                 WHERE (?1 IS NULL OR session_id = ?1) AND (?2 IS NULL OR tool = ?2)
                   AND (?3 IS NULL OR origin = ?3) AND (?4 IS NULL OR {OUTCOME_SQL} = ?4)
                   AND (?5 IS NULL OR summary LIKE ?5 ESCAPE '\\' OR action LIKE ?5 ESCAPE '\\'
                        OR resource LIKE ?5 ESCAPE '\\')
                   AND (?6 IS NULL OR id < ?6)
                 ORDER BY id DESC LIMIT ?7"
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(
                params![
                    query.session_id,
                    query.tool,
                    query.origin,
                    query.outcome,
                    text,
                    query.before_id,
                    query.limit.map(i64::from).unwrap_or(-1)
                ],
                |row| {
                    Ok(AuditRecord {
                        id: row.get(0)?,
                        entry: AuditEntry {
                            at_ms: row.get(1)?,
                            tool: row.get(2)?,
                            resource: row.get(3)?,
                            action: row.get(4)?,
                            origin: row.get(5)?,
                            session_id: row.get(6)?,
                            decision: row.get(7)?,
                            code: row.get(8)?,
                            duration_us: row.get(9)?,
                            error: row.get(10)?,
                            summary: row.get(11)?,
                        },
                        outcome: row.get(12)?,
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

    #[test]
    fn pages_filter_by_origin_outcome_and_text_with_ids() {
        let db = Database::open_in_memory().unwrap();
        let log = db.audit();
        let row = |decision: &str, origin: &str, code: Option<&str>, summary: &str| AuditEntry {
            decision: decision.into(),
            origin: origin.into(),
            code: code.map(Into::into),
            error: code.map(|c| format!("{c}!")),
            summary: Some(summary.into()),
            ..entry("shell", None)
        };
        log.insert_many(&[
            row("allow:safe_bin", "user", None, "ls -la"),
            row("ask:grant", "user", None, "git push"),
            row(
                "approval_denied",
                "app",
                Some("approval_denied"),
                "rm -rf build",
            ),
            row("allow:full", "user", Some("tool_failed"), "make 100%_done"),
            row("hook", "mcp", None, "echo hi"),
        ])
        .unwrap();
        let outcomes = |query: AuditQuery| -> Vec<(String, String)> {
            log.page(&query)
                .unwrap()
                .into_iter()
                .map(|r| (r.entry.summary.unwrap(), r.outcome))
                .collect()
        };
        let all = outcomes(AuditQuery::default());
        assert_eq!(
            all.iter().map(|(_, o)| o.as_str()).collect::<Vec<_>>(),
            ["allowed", "failed", "refused", "approved", "allowed"]
        );
        let refused = outcomes(AuditQuery {
            outcome: Some("refused".into()),
            ..Default::default()
        });
        assert_eq!(
            refused,
            [("rm -rf build".to_string(), "refused".to_string())]
        );
        let apps = outcomes(AuditQuery {
            origin: Some("app".into()),
            ..Default::default()
        });
        assert_eq!(apps.len(), 1);
        let text = outcomes(AuditQuery {
            text: Some("GIT".into()),
            ..Default::default()
        });
        assert_eq!(text[0].0, "git push");
        let literal = outcomes(AuditQuery {
            text: Some("100%_".into()),
            ..Default::default()
        });
        assert_eq!(literal.len(), 1, "LIKE wildcards are literal");
        let first = log
            .page(&AuditQuery {
                limit: Some(2),
                ..Default::default()
            })
            .unwrap();
        let next = log
            .page(&AuditQuery {
                before_id: Some(first[1].id),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(next.len(), 3);
        assert!(next.iter().all(|r| r.id < first[1].id));
    }
}
