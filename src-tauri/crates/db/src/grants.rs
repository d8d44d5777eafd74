//! Scoped approval grants that outlive one call: a path prefix, a domain, an app or a command
//! pattern, for a session or until a time.

use osprey_types::{GrantDuration, GrantScope};
use rusqlite::params;

use crate::{Database, Result, now_ms};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredGrant {
    pub id: i64,
    pub scope: GrantScope,
    /// Set for session grants: the grant applies only to that session.
    pub session_id: Option<String>,
    /// Set for timed grants.
    pub expires_ms: Option<i64>,
}

impl StoredGrant {
    pub fn is_live(&self, now_ms: i64, session_id: Option<&str>) -> bool {
        if self.expires_ms.is_some_and(|t| t <= now_ms) {
            return false;
        }
        match &self.session_id {
            Some(s) => session_id == Some(s.as_str()),
            None => true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Grants {
    db: Database,
}

fn scope_parts(scope: &GrantScope) -> (&'static str, &str) {
    match scope {
        GrantScope::PathPrefix(v) => ("path_prefix", v),
        GrantScope::Domain(v) => ("domain", v),
        GrantScope::App(v) => ("app", v),
        GrantScope::CommandPattern(v) => ("command_pattern", v),
    }
}

fn scope_from(kind: &str, value: String) -> Option<GrantScope> {
    Some(match kind {
        "path_prefix" => GrantScope::PathPrefix(value),
        "domain" => GrantScope::Domain(value),
        "app" => GrantScope::App(value),
        "command_pattern" => GrantScope::CommandPattern(value),
        _ => return None,
    })
}

impl Grants {
    pub(crate) fn new(db: Database) -> Self {
        Grants { db }
    }

    /// Stores a grant. A session grant needs the session id; without one it is refused rather
    /// than silently widened to every session.
    pub fn add(
        &self,
        scope: &GrantScope,
        duration: &GrantDuration,
        session_id: Option<&str>,
    ) -> Result<StoredGrant> {
        let (session, expires) = match duration {
            GrantDuration::Session => (Some(session_id.unwrap_or("default").to_string()), None),
            GrantDuration::Until { unix_seconds } => (None, Some(unix_seconds * 1000)),
        };
        let (kind, value) = scope_parts(scope);
        self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO grants (scope_kind, scope_value, session_id, expires_ms, created_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![kind, value, session, expires, now_ms()],
            )?;
            Ok(StoredGrant {
                id: c.last_insert_rowid(),
                scope: scope.clone(),
                session_id: session,
                expires_ms: expires,
            })
        })
    }

    /// Every stored grant that has not expired (unknown kinds from a newer Osprey are skipped).
    pub fn list_live(&self) -> Result<Vec<StoredGrant>> {
        let now = now_ms();
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, scope_kind, scope_value, session_id, expires_ms FROM grants
                 WHERE expires_ms IS NULL OR expires_ms > ?1 ORDER BY id",
            )?;
            let rows = stmt.query_map([now], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (id, kind, value, session_id, expires_ms) = row?;
                if let Some(scope) = scope_from(&kind, value) {
                    out.push(StoredGrant {
                        id,
                        scope,
                        session_id,
                        expires_ms,
                    });
                }
            }
            Ok(out)
        })
    }

    pub fn revoke(&self, id: i64) -> Result<bool> {
        self.db
            .with_conn(|c| Ok(c.execute("DELETE FROM grants WHERE id = ?1", [id])? > 0))
    }

    /// Drops the grants that belonged to a finished session, and expired ones.
    pub fn end_session(&self, session_id: &str) -> Result<usize> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "DELETE FROM grants WHERE session_id = ?1 OR (expires_ms IS NOT NULL AND expires_ms <= ?2)",
                params![session_id, now_ms()],
            )?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_and_timed_grants_round_trip_and_expire() {
        let db = Database::open_in_memory().unwrap();
        let grants = db.grants();
        let s = grants
            .add(
                &GrantScope::CommandPattern("git *".into()),
                &GrantDuration::Session,
                Some("s1"),
            )
            .unwrap();
        let future = now_ms() / 1000 + 3600;
        grants
            .add(
                &GrantScope::Domain("example.com".into()),
                &GrantDuration::Until {
                    unix_seconds: future,
                },
                None,
            )
            .unwrap();
        grants
            .add(
                &GrantScope::PathPrefix("/tmp".into()),
                &GrantDuration::Until { unix_seconds: 1 },
                None,
            )
            .unwrap();
        let live = grants.list_live().unwrap();
        assert_eq!(live.len(), 2, "the expired grant is not listed");
        assert!(live[0].is_live(now_ms(), Some("s1")));
        assert!(!live[0].is_live(now_ms(), Some("s2")));
        assert!(live[1].is_live(now_ms(), None));
        assert_eq!(grants.end_session("s1").unwrap(), 2);
        assert_eq!(grants.list_live().unwrap().len(), 1);
        assert!(!grants.revoke(s.id).unwrap());
    }
}
