//! The Approvals page's trail and grants: the audit rows the registry writes for every tool call
//! (filtered, newest first) and the lasting grants in force, each revocable. Revoking goes
//! through the policy, which holds the grants it decides with, so the next call the grant
//! covered is asked again at once.

use osprey_db::AuditQuery;
use osprey_types::{
    AuditFilter, AuditOutcome, AuditRow, GrantDuration, GrantRow, GrantScope, UiErrorCode,
};

use crate::{Core, CoreError, CoreResult};

/// Rows per audit page unless the filter asks for fewer.
pub const AUDIT_PAGE: u32 = 100;
/// The most rows one audit page returns.
pub const AUDIT_PAGE_MAX: u32 = 500;

fn outcome_name(outcome: AuditOutcome) -> &'static str {
    match outcome {
        AuditOutcome::Allowed => "allowed",
        AuditOutcome::Approved => "approved",
        AuditOutcome::Refused => "refused",
        AuditOutcome::Failed => "failed",
    }
}

fn outcome_from(name: &str) -> AuditOutcome {
    match name {
        "allowed" => AuditOutcome::Allowed,
        "approved" => AuditOutcome::Approved,
        "failed" => AuditOutcome::Failed,
        _ => AuditOutcome::Refused,
    }
}

/// A grant's scope in words (the same the approval dialog uses).
pub fn describe_scope(scope: &GrantScope) -> String {
    scope.to_string()
}

impl Core {
    /// Audit rows matching `filter`, newest first (a page of [`AUDIT_PAGE`] by default; pass
    /// the last row's id as `before_id` for the next). Rows of calls that just finished are
    /// written before reading.
    pub async fn audit_log(&self, filter: AuditFilter) -> CoreResult<Vec<AuditRow>> {
        let registry = self.registry().clone();
        let log = self.db().audit();
        let query = AuditQuery {
            tool: filter.tool.filter(|t| !t.trim().is_empty()),
            origin: filter.origin.map(|o| o.as_str().to_string()),
            outcome: filter.outcome.map(|o| outcome_name(o).to_string()),
            text: filter.text,
            before_id: filter.before_id,
            limit: Some(filter.limit.unwrap_or(AUDIT_PAGE).clamp(1, AUDIT_PAGE_MAX)),
            session_id: None,
        };
        let records = tokio::task::spawn_blocking(move || {
            registry.audit().flush();
            log.page(&query)
        })
        .await
        .map_err(|e| CoreError::new(UiErrorCode::Internal, format!("the audit read failed: {e}")))?
        .map_err(|e| CoreError::new(UiErrorCode::Storage, format!("reading the audit log: {e}")))?;
        Ok(records
            .into_iter()
            .map(|record| {
                let entry = record.entry;
                AuditRow {
                    id: record.id,
                    at_ms: entry.at_ms,
                    tool: entry.tool,
                    resource: entry.resource,
                    action: entry.action,
                    origin: entry.origin,
                    session_id: entry.session_id,
                    decision: entry.decision,
                    outcome: outcome_from(&record.outcome),
                    code: entry.code,
                    duration_ms: entry.duration_us as f64 / 1000.0,
                    error: entry.error,
                    summary: entry.summary,
                }
            })
            .collect())
    }

    /// The lasting grants in force (not expired), oldest first.
    pub fn grants(&self) -> CoreResult<Vec<GrantRow>> {
        let grants =
            self.registry().policy().grants().map_err(|e| {
                CoreError::new(UiErrorCode::Storage, format!("reading grants: {e}"))
            })?;
        Ok(grants
            .into_iter()
            .map(|grant| GrantRow {
                id: grant.id,
                description: describe_scope(&grant.scope),
                scope: grant.scope,
                session_id: grant.session_id,
                expires_ms: grant.expires_ms,
            })
            .collect())
    }

    /// Adds a lasting grant as an approval answer would (tests and the CLI; the dialog's
    /// answers go through the registry).
    pub fn add_grant(
        &self,
        scope: &GrantScope,
        duration: &GrantDuration,
        session_id: Option<&str>,
    ) -> CoreResult<GrantRow> {
        let grant = self
            .registry()
            .policy()
            .add_grant(scope, duration, session_id)
            .map_err(|e| CoreError::new(UiErrorCode::Storage, format!("storing a grant: {e}")))?;
        Ok(GrantRow {
            id: grant.id,
            description: describe_scope(&grant.scope),
            scope: grant.scope,
            session_id: grant.session_id,
            expires_ms: grant.expires_ms,
        })
    }

    /// Revokes a grant: the next call it covered is asked again. `grant_not_found` when no
    /// grant has that id (revoked already, or expired).
    pub fn revoke_grant(&self, id: i64) -> CoreResult<()> {
        let removed =
            self.registry().policy().revoke_grant(id).map_err(|e| {
                CoreError::new(UiErrorCode::Storage, format!("revoking a grant: {e}"))
            })?;
        if removed {
            Ok(())
        } else {
            Err(CoreError::new(
                UiErrorCode::GrantNotFound,
                format!("no grant {id} is in force (revoked already, or expired)"),
            ))
        }
    }
}
