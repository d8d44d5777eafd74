//! What the Approvals page shows besides the queue: the audit trail of tool calls and the
//! lasting grants in force.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{GrantScope, Origin};

/// How a call ended, in the four groups the audit filter offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    /// Let through without asking (read-only, allowlist, safe bin, a grant, the level).
    Allowed,
    /// Asked and approved by the person.
    Approved,
    /// Refused: denied by the person or a timeout, the policy, an origin rule, the safeguard.
    Refused,
    /// Let through, but the tool failed (or was cancelled).
    Failed,
}

/// One tool call from the audit table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct AuditRow {
    #[ts(type = "number")]
    pub id: i64,
    /// Unix milliseconds.
    #[ts(type = "number")]
    pub at_ms: i64,
    pub tool: String,
    pub resource: Option<String>,
    pub action: Option<String>,
    /// `user`, `comm`, `app`, `skill`, `system`, `mcp`.
    pub origin: String,
    pub session_id: Option<String>,
    /// As recorded: `allow:full`, `ask:once`, `ask:grant`, `approval_denied`, ...
    pub decision: String,
    pub outcome: AuditOutcome,
    /// The result's error code, when it had one.
    pub code: Option<String>,
    #[ts(type = "number")]
    pub duration_ms: f64,
    pub error: Option<String>,
    /// The command, path or URL.
    pub summary: Option<String>,
}

/// Which audit rows to list; every field narrows. Newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct AuditFilter {
    #[ts(optional)]
    pub tool: Option<String>,
    #[ts(optional)]
    pub origin: Option<Origin>,
    #[ts(optional)]
    pub outcome: Option<AuditOutcome>,
    /// Words found in the summary, the action or the resource.
    #[ts(optional)]
    pub text: Option<String>,
    /// Rows older than this id (the next page).
    #[ts(optional)]
    pub before_id: Option<i64>,
    /// At most this many (default 100, at most 500).
    #[ts(optional)]
    pub limit: Option<u32>,
}

/// A lasting grant in force.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct GrantRow {
    #[ts(type = "number")]
    pub id: i64,
    pub scope: GrantScope,
    /// The scope in words: "commands matching `git *`".
    pub description: String,
    /// Set for a grant that lasts while this session does.
    pub session_id: Option<String>,
    /// Unix milliseconds when it ends; `None` with a session: when the session ends.
    #[ts(type = "number | null")]
    pub expires_ms: Option<i64>,
}
