//! The tool traits: what the registry needs from a tool, and what a tool gets when it runs.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use osprey_types::{ApprovalDetails, Origin, ToolResult};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::{Call, CallFacts};
use crate::domain::Domain;
use crate::scope::ToolScope;
use crate::security::policy::{Approver, Level};

/// Everything a running call may need from its surroundings.
#[derive(Clone)]
pub struct ToolContext {
    pub origin: Origin,
    pub session_id: Option<String>,
    /// Unique per call (audit rows and approval questions carry it).
    pub call_id: String,
    /// Cancelled when the person stops the turn; tools should stop promptly and clean up.
    pub cancel: CancellationToken,
    /// When the registry will give up on the call. Tools with their own timeouts (shell) use the
    /// earlier of the two.
    pub deadline: Instant,
    /// Who answers approval questions for this call; when `None` the registry's default broker.
    pub approver: Option<Arc<dyn Approver>>,
    /// The loosest policy level this call may be judged at; the registry's policy applies the
    /// stricter of its own level and this. Sub-agents carry their parent's (or a stricter) cap so
    /// a child is never judged more loosely than its parent.
    pub level_cap: Option<Level>,
    /// The tools this call's caller may use (its role's set); `None`: every registered tool.
    /// The registry refuses a call outside it with `role_denied`, whatever the model asked.
    pub scope: Option<Arc<ToolScope>>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("origin", &self.origin)
            .field("session_id", &self.session_id)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

/// A tool as the registry sees it. Object-safe; async work returns a boxed future.
pub trait Tool: Send + Sync + 'static {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// The JSON Schema of the input object.
    fn schema(&self) -> &Value;
    /// The resource/action table, for domain tools; the registry validates calls against it.
    fn domain(&self) -> Option<&Domain> {
        None
    }
    /// What the call is about, with its approval need (per action).
    fn facts(&self, call: &Call) -> CallFacts;
    /// More than the summary for a question about to be asked ([`ApprovalDetails`]: what an
    /// install would put on the computer). Called only when the registry is about to ask a
    /// person, so it may reach the network; an error refuses the call before anyone is asked
    /// (the tool cannot say what the person would be approving).
    fn approval_details<'a>(&'a self, _ctx: &'a ToolContext, _call: &'a Call) -> DetailsFuture<'a> {
        Box::pin(async { Ok(None) })
    }
    fn execute<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult>;
}

/// What [`Tool::approval_details`] returns: the details, none, or the refusal to give instead of
/// asking.
pub type DetailsFuture<'a> = BoxFuture<'a, Result<Option<Box<ApprovalDetails>>, ToolResult>>;

/// A tool that covers one domain with a table of resources and actions (`file`, `shell`, `web`,
/// ...). Register it with [`crate::Registry::register_domain`], which builds its JSON Schema from
/// the table once.
pub trait DomainTool: Send + Sync + 'static {
    fn domain(&self) -> &Domain;
    fn facts(&self, call: &Call) -> CallFacts;
    /// See [`Tool::approval_details`].
    fn approval_details<'a>(&'a self, _ctx: &'a ToolContext, _call: &'a Call) -> DetailsFuture<'a> {
        Box::pin(async { Ok(None) })
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult>;
}

/// Adapts a [`DomainTool`] to [`Tool`], holding the schema built from its table.
pub struct DomainAdapter<T> {
    tool: T,
    schema: Value,
}

impl<T: DomainTool> DomainAdapter<T> {
    pub fn new(tool: T) -> Self {
        let schema = tool.domain().json_schema();
        DomainAdapter { tool, schema }
    }

    pub fn inner(&self) -> &T {
        &self.tool
    }
}

impl<T: DomainTool> Tool for DomainAdapter<T> {
    fn name(&self) -> &str {
        &self.tool.domain().name
    }
    fn description(&self) -> &str {
        &self.tool.domain().description
    }
    fn schema(&self) -> &Value {
        &self.schema
    }
    fn domain(&self) -> Option<&Domain> {
        Some(self.tool.domain())
    }
    fn facts(&self, call: &Call) -> CallFacts {
        self.tool.facts(call)
    }
    fn approval_details<'a>(&'a self, ctx: &'a ToolContext, call: &'a Call) -> DetailsFuture<'a> {
        self.tool.approval_details(ctx, call)
    }
    fn execute<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        self.tool.run(ctx, call)
    }
}
