//! The `advisor` resource: ask up to five personas for their view of one question, in parallel,
//! and get each view with a confidence and a synthesis (see `crate::advisors`). Free of
//! approval: the personas are model calls with no tools, and they see only what the call gives
//! them.

use std::time::Duration;

use osprey_tools::{ApprovalNeed, Call, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::json;

use super::{AgentTool, field, invalid, json_result, session_of};
use crate::advisors::{Consult, MAX_ADVISORS, MAX_TIMEOUT};

/// The resource's line in the tool's description.
pub(super) const SUMMARY: &str = "advisor: before a decision, consult up to five personas \
     (skeptic, pragmatist, user-advocate, security, optimist, or the person's own; `personas` \
     lists them) in parallel for their views with confidence and a synthesis.";

pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::None as Free;
    let domain = domain.resource(
        "advisor",
        &["advisors", "advice", "council", "consult"],
        &[
            (
                "consult",
                "Ask the named personas (`advisors`, default skeptic, pragmatist and \
                 user-advocate) the `question` in parallel, each within `timeout_seconds` (at \
                 most 30); returns each view with its confidence, and a synthesis",
                Free,
            ),
            ("personas", "The personas an advisor call can name", Free),
        ],
    );
    let domain = field(
        domain,
        "question",
        FieldType::String,
        "advisor: the question or decision, self-contained",
        &["advisor.consult"],
    );
    let domain = field(
        domain,
        "context",
        FieldType::String,
        "advisor: what the advisors should know (they see nothing of this conversation)",
        &[],
    );
    let domain = field(
        domain,
        "advisors",
        FieldType::Array(Box::new(FieldType::String)),
        "advisor: persona names, at most 5",
        &[],
    );
    field(
        domain,
        "timeout_seconds",
        FieldType::Integer,
        "advisor: each persona's limit (default and most 30)",
        &[],
    )
}

pub(super) async fn run(tool: &AgentTool, ctx: &ToolContext, call: Call) -> ToolResult {
    let Some(advisors) = tool.advisors.as_ref() else {
        return ToolResult::error(
            ErrorCode::ToolFailed,
            "advisors are not available here (no model runner is attached); weigh the options \
             yourself",
        );
    };
    match call.action() {
        "personas" => {
            let personas = advisors.personas();
            let rows: Vec<_> = personas
                .iter()
                .map(|p| {
                    json!({"name": p.manifest.name, "description": p.manifest.description,
                           "model": p.manifest.model, "source": p.source})
                })
                .collect();
            json_result(&json!({"count": rows.len(), "personas": rows,
                "max_per_consult": MAX_ADVISORS}))
        }
        "consult" => {
            let session = match session_of(ctx) {
                Ok(session) => session,
                Err(error) => return error,
            };
            let names: Vec<String> = call
                .input
                .get("advisors")
                .and_then(|v| v.as_array())
                .map(|list| {
                    list.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let timeout = call
                .u64("timeout_seconds")
                .map_or(MAX_TIMEOUT, Duration::from_secs)
                .max(Duration::from_secs(1));
            let consult = Consult {
                question: call.str("question").unwrap_or_default().to_string(),
                context: call.str("context").map(str::to_string),
                personas: names,
                timeout,
            };
            match advisors.consult(session, consult, &ctx.cancel).await {
                Ok(consultation) => json_result(&json!(consultation)),
                Err(why) => invalid(why),
            }
        }
        other => invalid(format!(
            "advisor has no action `{other}`; use consult or personas"
        )),
    }
}
