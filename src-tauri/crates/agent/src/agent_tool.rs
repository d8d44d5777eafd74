//! The `agent` tool: Osprey's own data and machinery as one domain tool. Each resource lives in
//! its own module (`agent_tool/<resource>.rs`) with its part of the table (a `table` function
//! adding the resource and its fields) and its handlers (`run`); this file puts the table
//! together and dispatches. Fields are shared across resources (one `id`, one `limit`), merged by
//! [`field`], which is why required fields are scoped (`memory.store`) rather than bare action
//! names.
//!
//! Approvals: memory is Osprey's own data, kept in its own database, and reading or adding to it
//! reaches nothing outside, so `store`, `recall`, `search` and `list` need no approval (the
//! origin rules and audit log still apply, as for every call). `delete` and `clear` destroy what
//! the person may rely on and cannot be undone, so they go through the approval policy. The
//! other resources follow the same rule: reading and adding to Osprey's own data is free,
//! destroying what the person may rely on (`reminder.delete`, `session.clear`,
//! `profile.delete`) is not; the scratch to-do list (`work`) is free throughout, and `task`
//! (sub-agents) is free because every call a child makes meets the policy itself (see
//! `crate::subagent`).
//!
//! Hooks: `memory.pre_store` sees `{namespace, layer, key, content, origin, session_id}` before a
//! store and may rewrite those fields (redaction, routing to a namespace) or handle the store
//! itself (`handled`, with an optional `result` tool result in the payload);
//! `memory.pre_recall` sees `{action, id, key, query, namespace, layer, limit, origin,
//! session_id}` before `recall` and `search` and may rewrite them or answer itself (an app with
//! embeddings, for instance). Both are only called when someone subscribes.

mod advisor;
mod comm;
mod graph;
mod memory;
mod message;
mod profile;
mod reminder;
mod session;
mod task;
mod work;

use std::sync::Arc;

use futures::future::BoxFuture;
use osprey_db::{Database, GraphTasks, Memory, Sessions, SubAgentTasks, WorkTasks};
use osprey_tools::domain::Field;
use osprey_tools::hooks::HookDispatcher;
use osprey_tools::{Call, CallFacts, Domain, DomainTool, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::Value;

use crate::outbox::OutboxSlot;
use crate::scheduler::ScheduleSlot;

pub use memory::{DEFAULT_LIMIT, MAX_LIMIT};
pub use profile::PROFILE_NAMESPACE;

use crate::advisors::Advisors;
use crate::subagent::SubAgents;

/// The `agent` domain tool.
pub struct AgentTool {
    domain: Domain,
    memory: Memory,
    sessions: Sessions,
    work: WorkTasks,
    /// The task graph a conversation's agents share, and the links that find its root.
    graph: GraphTasks,
    subagent_tasks: SubAgentTasks,
    /// Sub-agents for the task resource; without them `task` says they are unavailable.
    subagents: Option<SubAgents>,
    /// Personas for the advisor resource; without them `advisor` says it is unavailable.
    advisors: Option<Advisors>,
    /// Where the reminder resource finds the scheduler (empty until core starts one).
    schedule: ScheduleSlot,
    /// Where `message send` to a channel and `comm` go (empty until core fills it).
    outbox: OutboxSlot,
    hooks: Option<Arc<dyn HookDispatcher>>,
    /// When set, memory search fuses full-text and vector results.
    embedder: Option<Arc<dyn crate::embedding::Embedder>>,
}

impl AgentTool {
    pub fn new(db: &Database) -> Self {
        AgentTool {
            domain: Self::domain_table(),
            memory: db.memory(),
            sessions: db.sessions(),
            work: db.work_tasks(),
            graph: db.graph_tasks(),
            subagent_tasks: db.subagent_tasks(),
            subagents: None,
            advisors: None,
            schedule: ScheduleSlot::new(),
            outbox: OutboxSlot::default(),
            hooks: None,
            embedder: None,
        }
    }

    /// Memory search fuses full-text search with this embedder's nearest memories.
    pub fn with_embedder(mut self, embedder: Arc<dyn crate::embedding::Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Reminders go to whichever scheduler this slot holds.
    pub fn with_schedule(mut self, schedule: ScheduleSlot) -> Self {
        self.schedule = schedule;
        self
    }

    /// Messages to channels and the `comm` resource go through whatever this slot holds.
    pub fn with_outbox(mut self, outbox: OutboxSlot) -> Self {
        self.outbox = outbox;
        self
    }

    /// Lets the task resource spawn sub-agents through `subagents`.
    pub fn with_subagents(mut self, subagents: SubAgents) -> Self {
        self.subagents = Some(subagents);
        self
    }

    /// Lets the advisor resource consult personas through `advisors`.
    pub fn with_advisors(mut self, advisors: Advisors) -> Self {
        self.advisors = Some(advisors);
        self
    }

    /// Calls `memory.pre_store` / `memory.pre_recall` through this dispatcher when subscribed.
    pub fn with_hooks(mut self, hooks: Arc<dyn HookDispatcher>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// The resource/action table: every resource module adds its part.
    pub fn domain_table() -> Domain {
        let summaries = [
            memory::SUMMARY,
            reminder::SUMMARY,
            task::SUMMARY,
            graph::SUMMARY,
            advisor::SUMMARY,
            work::SUMMARY,
            message::SUMMARY,
            comm::SUMMARY,
            session::SUMMARY,
            profile::SUMMARY,
        ];
        let domain = Domain::new(
            "agent",
            format!("Osprey's own data and machinery. {}", summaries.join(" ")),
        );
        let domain = reminder::table(memory::table(domain));
        let domain = advisor::table(graph::table(task::table(work::table(domain))));
        profile::table(session::table(comm::table(message::table(domain))))
    }

    fn hooks_for(&self, hook: &str) -> Option<&Arc<dyn HookDispatcher>> {
        self.hooks.as_ref().filter(|h| h.has_subscribers(hook))
    }
}

/// Adds a field to the table, or, when another resource already declared a field of that name,
/// merges into it: the `required_for` entries and allowed values are added and the description
/// extended, so `id` can be a memory's id and a work task's id at once. The kinds must agree
/// (checked by the table's unit test).
fn field(
    mut domain: Domain,
    name: &str,
    kind: FieldType,
    description: &str,
    required_for: &[&str],
) -> Domain {
    let required: Vec<String> = required_for.iter().map(|r| r.to_string()).collect();
    if let Some(existing) = domain.fields.iter_mut().find(|f| f.name == name) {
        assert_eq!(
            existing.kind, kind,
            "the agent tool's field `{name}` is declared with two types"
        );
        existing.required_for.extend(required);
        if !existing.description.contains(description) {
            existing.description = format!("{}; {description}", existing.description);
        }
        // Move it last so a following `one_of` applies to it.
        let index = domain.fields.iter().position(|f| f.name == name);
        if let Some(index) = index {
            let merged = domain.fields.remove(index);
            domain.fields.push(merged);
        }
        return domain;
    }
    domain.fields.push(Field {
        name: name.into(),
        kind,
        description: description.into(),
        enum_values: Vec::new(),
        default: None,
        required_for: required,
        aliases: Vec::new(),
    });
    domain
}

type Outcome = Result<ToolResult, ToolResult>;

/// The call's session: work tasks, sub-agents and history belong to one.
fn session_of(ctx: &ToolContext) -> Result<&str, ToolResult> {
    ctx.session_id.as_deref().ok_or_else(|| {
        invalid("this call belongs to no session, and this action needs one (it keeps per-session data)")
    })
}

fn invalid(message: impl Into<String>) -> ToolResult {
    ToolResult::error(ErrorCode::InvalidInput, message)
}

fn db_error(what: &str, error: osprey_db::Error) -> ToolResult {
    ToolResult::error(ErrorCode::ToolFailed, format!("{what} storage: {error}"))
}

fn json_result(value: &Value) -> ToolResult {
    ToolResult::text(value.to_string())
}

/// The result a hook that handled the call left in the payload's `result`, else `fallback`.
fn handled_result(payload: &Value, fallback: &str) -> ToolResult {
    payload
        .get("result")
        .cloned()
        .and_then(|r| serde_json::from_value::<ToolResult>(r).ok())
        .unwrap_or_else(|| ToolResult::text(fallback))
}

impl DomainTool for AgentTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        let subject = call
            .str("key")
            .map(|k| format!("key {k}"))
            .or_else(|| call.input.get("id").map(|id| format!("id {id}")))
            .or_else(|| call.str("query").map(|q| format!("\"{q}\"")))
            .or_else(|| call.str("namespace").map(|n| format!("namespace {n}")))
            .or_else(|| call.str("session_id").map(|s| format!("session {s}")))
            .or_else(|| call.str("title").map(|t| format!("\"{t}\"")))
            .or_else(|| {
                call.str("prompt")
                    .or_else(|| call.str("question"))
                    .map(|p| {
                        let short: String = p.chars().take(60).collect();
                        let more = if short.len() < p.len() { "…" } else { "" };
                        format!("\"{short}{more}\"")
                    })
            })
            .unwrap_or_default();
        let facts = CallFacts {
            summary: format!("{} {} {subject}", call.resource(), call.action())
                .trim_end()
                .to_string(),
            ..Default::default()
        };
        match call.resource() {
            "reminder" => {
                let facts = match call.str("command").map(str::trim) {
                    Some(command) if !command.is_empty() => {
                        reminder::command_facts(facts, call, command)
                    }
                    _ => facts,
                };
                match call.input.get("deliver") {
                    Some(delivery) if delivery.is_object() => {
                        reminder::deliver_facts(facts, delivery)
                    }
                    _ => facts,
                }
            }
            "message" => match call.str("channel").map(str::trim) {
                Some(channel) if !channel.is_empty() => {
                    message::channel_facts(facts, call, channel)
                }
                _ => facts,
            },
            "comm" => comm::facts(facts, call),
            _ => facts,
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match call.resource() {
                "memory" => memory::run(self, ctx, call).await,
                "task" => task::run(self, ctx, call).await,
                "graph" => graph::run(self, ctx, call).await,
                "advisor" => advisor::run(self, ctx, call).await,
                "work" => work::run(self, ctx, call).await,
                "message" => message::run(self, ctx, call).await,
                "comm" => comm::run(self, call).await,
                "session" => session::run(self, ctx, call).await,
                "profile" => profile::run(self, ctx, call).await,
                "reminder" => reminder::run(self, ctx, call).await,
                other => ToolResult::error(
                    ErrorCode::InvalidInput,
                    format!("the agent tool has no resource `{other}`"),
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_builds_and_every_required_field_names_a_real_action() {
        let domain = AgentTool::domain_table();
        for field in &domain.fields {
            for entry in &field.required_for {
                let (resource, action) = entry
                    .split_once('.')
                    .unwrap_or_else(|| panic!("`{entry}` on `{}` is not scoped", field.name));
                let r = domain
                    .find_resource(resource)
                    .unwrap_or_else(|| panic!("`{entry}`: no resource {resource}"));
                assert!(
                    r.actions.iter().any(|a| a.name == action),
                    "`{entry}`: no action {action}"
                );
            }
        }
        let names: Vec<&str> = domain.fields.iter().map(|f| f.name.as_str()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "duplicate fields: {names:?}");
    }
}
