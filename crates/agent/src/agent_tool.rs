//! The `agent` tool: Osprey's own data and machinery as one domain tool. Only the `memory`
//! resource is built; `task`, `reminder`, `message`, `session` and `profile` will join the same
//! table (see [`AgentTool::domain_table`]), which is why required fields are scoped
//! (`memory.store`) rather than bare action names.
//!
//! Approvals: memory is Osprey's own data, kept in its own database, and reading or adding to it
//! reaches nothing outside, so `store`, `recall`, `search` and `list` need no approval (the
//! origin rules and audit log still apply, as for every call). `delete` and `clear` destroy what
//! the person may rely on and cannot be undone, so they go through the approval policy.
//!
//! Hooks: `memory.pre_store` sees `{namespace, layer, key, content, origin, session_id}` before a
//! store and may rewrite those fields (redaction, routing to a namespace) or handle the store
//! itself (`handled`, with an optional `result` tool result in the payload);
//! `memory.pre_recall` sees `{action, id, key, query, namespace, layer, limit, origin,
//! session_id}` before `recall` and `search` and may rewrite them or answer itself (an app with
//! embeddings, for instance). Both are only called when someone subscribes.

use std::sync::Arc;

use futures::future::BoxFuture;
use osprey_db::{
    DEFAULT_NAMESPACE, Database, Memory, MemoryLayer, MemoryQuery, MemoryRow, NewMemory,
};
use osprey_tools::hooks::HookDispatcher;
use osprey_tools::{ApprovalNeed, Call, CallFacts, Domain, DomainTool, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use crate::runner::{MEMORY_PRE_RECALL, MEMORY_PRE_STORE};

/// Rows returned by `list` and `search` when no limit is given, and the most ever returned.
pub const DEFAULT_LIMIT: u64 = 20;
pub const MAX_LIMIT: u64 = 200;

/// The `agent` domain tool.
pub struct AgentTool {
    domain: Domain,
    memory: Memory,
    hooks: Option<Arc<dyn HookDispatcher>>,
}

impl AgentTool {
    pub fn new(db: &Database) -> Self {
        AgentTool {
            domain: Self::domain_table(),
            memory: db.memory(),
            hooks: None,
        }
    }

    /// Calls `memory.pre_store` / `memory.pre_recall` through this dispatcher when subscribed.
    pub fn with_hooks(mut self, hooks: Arc<dyn HookDispatcher>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// The resource/action table.
    pub fn domain_table() -> Domain {
        use ApprovalNeed::{None as Free, Required};
        Domain::new(
            "agent",
            "Osprey's own data. memory: what you remember between sessions, in layers (tacit: \
             lasting facts and preferences; daily: day-to-day notes; entity: records about people, \
             projects and things) and namespaces. Store with a key to keep one record per subject \
             (storing again under the key replaces it); search is full text.",
        )
        .resource(
            "memory",
            &["memories", "note", "notes"],
            &[
                (
                    "store",
                    "Remember something (replaces the memory under the same key)",
                    Free,
                ),
                ("recall", "Get one memory by id or by key", Free),
                ("search", "Full-text search, best match first", Free),
                (
                    "list",
                    "List memories, newest first, optionally by namespace and layer",
                    Free,
                ),
                ("delete", "Forget one memory by id", Required),
                (
                    "clear",
                    "Forget every memory in a namespace (optionally one layer)",
                    Required,
                ),
            ],
        )
        .field("content", FieldType::String, "What to remember")
        .required_for(&["memory.store"])
        .field(
            "layer",
            FieldType::String,
            "Memory layer (default daily when storing)",
        )
        .one_of(&["tacit", "daily", "entity"])
        .field(
            "namespace",
            FieldType::String,
            "Namespace (default `default` for store and recall; all for list and search)",
        )
        .required_for(&["memory.clear"])
        .field(
            "key",
            FieldType::String,
            "A stable key for the memory within its namespace",
        )
        .field("id", FieldType::Integer, "A memory's id")
        .required_for(&["memory.delete"])
        .field("query", FieldType::String, "Words to search for")
        .required_for(&["memory.search"])
        .field(
            "limit",
            FieldType::Integer,
            "At most this many results (default 20, max 200)",
        )
        .field(
            "offset",
            FieldType::Integer,
            "Skip this many results (paging)",
        )
    }

    async fn memory(&self, ctx: &ToolContext, call: Call) -> ToolResult {
        let result = match call.action() {
            "store" => self.store(ctx, &call).await,
            "recall" | "search" => self.recall_or_search(ctx, &call).await,
            "list" => self.list(&call),
            "delete" => self.delete(&call),
            "clear" => self.clear(&call),
            other => Err(ToolResult::error(
                ErrorCode::InvalidInput,
                format!("memory has no action `{other}`"),
            )),
        };
        result.unwrap_or_else(|e| e)
    }

    fn hooks_for(&self, hook: &str) -> Option<&Arc<dyn HookDispatcher>> {
        self.hooks.as_ref().filter(|h| h.has_subscribers(hook))
    }

    async fn store(&self, ctx: &ToolContext, call: &Call) -> Outcome {
        let mut fields = json!({
            "namespace": call.str("namespace").unwrap_or(DEFAULT_NAMESPACE),
            "layer": call.str("layer").unwrap_or("daily"),
            "key": call.str("key"),
            "content": call.str("content").unwrap_or_default(),
        });
        if let Some(hooks) = self.hooks_for(MEMORY_PRE_STORE) {
            let mut payload = fields.clone();
            payload["origin"] = json!(ctx.origin.as_str());
            payload["session_id"] = json!(ctx.session_id);
            let outcome = hooks.apply_filter(MEMORY_PRE_STORE, payload).await;
            if outcome.handled {
                return Ok(handled_result(
                    &outcome.payload,
                    "the memory was stored by a hook",
                ));
            }
            for field in ["namespace", "layer", "key", "content"] {
                if let Some(value) = outcome.payload.get(field) {
                    fields[field] = value.clone();
                }
            }
        }
        let layer = parse_layer(fields["layer"].as_str())?.unwrap_or(MemoryLayer::Daily);
        let content = fields["content"].as_str().unwrap_or_default();
        if content.trim().is_empty() {
            return Err(invalid("`content` must not be empty"));
        }
        let row = self
            .memory
            .store(&NewMemory {
                layer,
                namespace: fields["namespace"].as_str().unwrap_or(DEFAULT_NAMESPACE),
                key: fields["key"].as_str(),
                content,
            })
            .map_err(db_error)?;
        Ok(json_result(&json!({"stored": row_json(&row, None)})))
    }

    async fn recall_or_search(&self, ctx: &ToolContext, call: &Call) -> Outcome {
        let mut fields = json!({
            "action": call.action(),
            "id": call.input.get("id").and_then(Value::as_i64),
            "key": call.str("key"),
            "query": call.str("query"),
            "namespace": call.str("namespace"),
            "layer": call.str("layer"),
            "limit": limit_of(call),
        });
        if let Some(hooks) = self.hooks_for(MEMORY_PRE_RECALL) {
            let mut payload = fields.clone();
            payload["origin"] = json!(ctx.origin.as_str());
            payload["session_id"] = json!(ctx.session_id);
            let outcome = hooks.apply_filter(MEMORY_PRE_RECALL, payload).await;
            if outcome.handled {
                return Ok(handled_result(
                    &outcome.payload,
                    "no memories (answered by a hook)",
                ));
            }
            for field in ["id", "key", "query", "namespace", "layer", "limit"] {
                if let Some(value) = outcome.payload.get(field) {
                    fields[field] = value.clone();
                }
            }
        }
        let layer = parse_layer(fields["layer"].as_str())?;
        if call.action() == "recall" {
            let row = if let Some(id) = fields["id"].as_i64() {
                self.memory.get(id).map_err(db_error)?
            } else if let Some(key) = fields["key"].as_str() {
                let namespace = fields["namespace"].as_str().unwrap_or(DEFAULT_NAMESPACE);
                self.memory.recall(namespace, key).map_err(db_error)?
            } else {
                return Err(invalid("recall needs `id` or `key` (use search for words)"));
            };
            return match row {
                Some(row) => Ok(json_result(&row_json(&row, None))),
                None => Err(ToolResult::error(ErrorCode::ToolFailed, "no such memory")),
            };
        }
        let query = fields["query"].as_str().unwrap_or_default();
        let limit = fields["limit"]
            .as_u64()
            .unwrap_or(DEFAULT_LIMIT)
            .min(MAX_LIMIT);
        let hits = self
            .memory
            .search(
                query,
                &MemoryQuery {
                    namespace: fields["namespace"].as_str(),
                    layer,
                    limit: Some(limit as u32),
                    offset: offset_of(call),
                },
            )
            .map_err(db_error)?;
        let rows: Vec<Value> = hits
            .iter()
            .map(|h| row_json(&h.memory, Some(h.score)))
            .collect();
        Ok(json_result(&json!({"count": rows.len(), "memories": rows})))
    }

    fn list(&self, call: &Call) -> Outcome {
        let query = MemoryQuery {
            namespace: call.str("namespace"),
            layer: parse_layer(call.str("layer"))?,
            limit: Some(limit_of(call) as u32),
            offset: offset_of(call),
        };
        let total = self.memory.count(&query).map_err(db_error)?;
        let rows = self.memory.list(&query).map_err(db_error)?;
        let rows: Vec<Value> = rows.iter().map(|r| row_json(r, None)).collect();
        Ok(json_result(
            &json!({"total": total, "offset": query.offset, "memories": rows}),
        ))
    }

    fn delete(&self, call: &Call) -> Outcome {
        let id = call
            .input
            .get("id")
            .and_then(Value::as_i64)
            .ok_or_else(|| invalid("delete needs `id`"))?;
        if self.memory.delete(id).map_err(db_error)? {
            Ok(json_result(&json!({"deleted": id})))
        } else {
            Err(ToolResult::error(
                ErrorCode::ToolFailed,
                format!("no memory with id {id}"),
            ))
        }
    }

    fn clear(&self, call: &Call) -> Outcome {
        let namespace = call
            .str("namespace")
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| invalid("clear needs `namespace`"))?;
        let layer = parse_layer(call.str("layer"))?;
        let n = self.memory.clear(namespace, layer).map_err(db_error)?;
        Ok(json_result(&json!({"cleared": n, "namespace": namespace})))
    }
}

type Outcome = Result<ToolResult, ToolResult>;

fn invalid(message: impl Into<String>) -> ToolResult {
    ToolResult::error(ErrorCode::InvalidInput, message)
}

fn db_error(error: osprey_db::Error) -> ToolResult {
    ToolResult::error(ErrorCode::ToolFailed, format!("memory storage: {error}"))
}

fn parse_layer(layer: Option<&str>) -> Result<Option<MemoryLayer>, ToolResult> {
    match layer {
        None => Ok(None),
        Some(name) => MemoryLayer::parse(name).map(Some).ok_or_else(|| {
            invalid(format!(
                "unknown layer `{name}`; use tacit, daily or entity"
            ))
        }),
    }
}

fn limit_of(call: &Call) -> u64 {
    call.u64("limit")
        .unwrap_or(DEFAULT_LIMIT)
        .clamp(1, MAX_LIMIT)
}

fn offset_of(call: &Call) -> u32 {
    call.u64("offset").unwrap_or(0).min(u64::from(u32::MAX)) as u32
}

fn row_json(row: &MemoryRow, score: Option<f64>) -> Value {
    let mut v = json!({
        "id": row.id,
        "layer": row.layer.as_str(),
        "namespace": row.namespace,
        "key": row.key,
        "content": row.content,
        "created_ms": row.created_ms,
        "updated_ms": row.updated_ms,
    });
    if let Some(score) = score {
        v["score"] = json!(score);
    }
    v
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
            .unwrap_or_default();
        CallFacts {
            summary: format!("{} {} {subject}", call.resource(), call.action())
                .trim_end()
                .to_string(),
            ..Default::default()
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match call.resource() {
                "memory" => self.memory(ctx, call).await,
                other => ToolResult::error(
                    ErrorCode::InvalidInput,
                    format!("the agent tool has no resource `{other}`"),
                ),
            }
        })
    }
}
