//! The `memory` resource: what the model remembers between sessions, in layers and namespaces,
//! with full-text search (approvals and hooks: see the `agent_tool` module docs).

use osprey_db::{DEFAULT_NAMESPACE, MemoryLayer, MemoryQuery, MemoryRow, NewMemory};
use osprey_tools::{ApprovalNeed, Call, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use super::{AgentTool, Outcome, field, handled_result, invalid, json_result};
use crate::runner::{MEMORY_PRE_RECALL, MEMORY_PRE_STORE};

/// Rows returned by `list` and `search` when no limit is given, and the most ever returned.
pub const DEFAULT_LIMIT: u64 = 20;
pub const MAX_LIMIT: u64 = 200;

/// The resource's line in the tool's description.
pub(super) const SUMMARY: &str = "memory: what you remember between sessions, in layers (tacit: \
     lasting facts and preferences; daily: day-to-day notes; entity: records about people, \
     projects and things) and namespaces. Store with a key to keep one record per subject \
     (storing again under the key replaces it); search is full text.";

/// Adds the resource and its fields to the table.
pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::{None as Free, Required};
    let domain = domain.resource(
        "memory",
        &["memories", "note", "notes", "remember"],
        &[
            (
                "store",
                "Remember something (replaces the memory under the same key)",
                Free,
            ),
            ("recall", "Get one memory by id or by key", Free),
            ("search", "Full-text search (fused with meaning when embeddings are set up), best match first", Free),
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
    );
    let domain = field(
        domain,
        "content",
        FieldType::String,
        "memory: what to remember",
        &["memory.store"],
    );
    let domain = field(
        domain,
        "layer",
        FieldType::String,
        "Memory layer (default daily when storing)",
        &[],
    )
    .one_of(&["tacit", "daily", "entity"]);
    let domain = field(
        domain,
        "namespace",
        FieldType::String,
        "Memory namespace (default `default` for store and recall; all for list and search)",
        &["memory.clear"],
    );
    let domain = field(
        domain,
        "key",
        FieldType::String,
        "memory: a stable key within its namespace",
        &[],
    );
    let domain = field(
        domain,
        "id",
        FieldType::Integer,
        "memory: a memory's id",
        &["memory.delete"],
    );
    let domain = field(
        domain,
        "query",
        FieldType::String,
        "Words to search for",
        &["memory.search"],
    );
    let domain = field(
        domain,
        "limit",
        FieldType::Integer,
        "At most this many results (default 20, max 200)",
        &[],
    );
    field(
        domain,
        "offset",
        FieldType::Integer,
        "Skip this many results (paging)",
        &[],
    )
}

pub(super) async fn run(tool: &AgentTool, ctx: &ToolContext, call: Call) -> ToolResult {
    let result = match call.action() {
        "store" => store(tool, ctx, &call).await,
        "recall" | "search" => recall_or_search(tool, ctx, &call).await,
        "list" => list(tool, &call),
        "delete" => delete(tool, &call),
        "clear" => clear(tool, &call),
        other => Err(ToolResult::error(
            ErrorCode::InvalidInput,
            format!("memory has no action `{other}`"),
        )),
    };
    result.unwrap_or_else(|e| e)
}

async fn store(tool: &AgentTool, ctx: &ToolContext, call: &Call) -> Outcome {
    let mut fields = json!({
        "namespace": call.str("namespace").unwrap_or(DEFAULT_NAMESPACE),
        "layer": call.str("layer").unwrap_or("daily"),
        "key": call.str("key"),
        "content": call.str("content").unwrap_or_default(),
    });
    if let Some(hooks) = tool.hooks_for(MEMORY_PRE_STORE) {
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
    let row = tool
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

async fn recall_or_search(tool: &AgentTool, ctx: &ToolContext, call: &Call) -> Outcome {
    let mut fields = json!({
        "action": call.action(),
        "id": call.input.get("id").and_then(Value::as_i64),
        "key": call.str("key"),
        "query": call.str("query"),
        "namespace": call.str("namespace"),
        "layer": call.str("layer"),
        "limit": limit_of(call),
    });
    if let Some(hooks) = tool.hooks_for(MEMORY_PRE_RECALL) {
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
            tool.memory.get(id).map_err(db_error)?
        } else if let Some(key) = fields["key"].as_str() {
            let namespace = fields["namespace"].as_str().unwrap_or(DEFAULT_NAMESPACE);
            tool.memory.recall(namespace, key).map_err(db_error)?
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
    let filters = MemoryQuery {
        namespace: fields["namespace"].as_str(),
        layer,
        limit: Some(limit as u32),
        offset: offset_of(call),
    };
    let hits =
        crate::embedding::hybrid_search(&tool.memory, tool.embedder.as_ref(), query, &filters)
            .await
            .map_err(|error| ToolResult::error(ErrorCode::ToolFailed, error.to_string()))?;
    let rows: Vec<Value> = hits
        .iter()
        .map(|h| row_json(&h.memory, Some(h.score)))
        .collect();
    Ok(json_result(&json!({"count": rows.len(), "memories": rows})))
}

fn list(tool: &AgentTool, call: &Call) -> Outcome {
    let query = MemoryQuery {
        namespace: call.str("namespace"),
        layer: parse_layer(call.str("layer"))?,
        limit: Some(limit_of(call) as u32),
        offset: offset_of(call),
    };
    let total = tool.memory.count(&query).map_err(db_error)?;
    let rows = tool.memory.list(&query).map_err(db_error)?;
    let rows: Vec<Value> = rows.iter().map(|r| row_json(r, None)).collect();
    Ok(json_result(
        &json!({"total": total, "offset": query.offset, "memories": rows}),
    ))
}

fn delete(tool: &AgentTool, call: &Call) -> Outcome {
    let id = call
        .input
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| invalid("delete needs `id`"))?;
    if tool.memory.delete(id).map_err(db_error)? {
        Ok(json_result(&json!({"deleted": id})))
    } else {
        Err(ToolResult::error(
            ErrorCode::ToolFailed,
            format!("no memory with id {id}"),
        ))
    }
}

fn clear(tool: &AgentTool, call: &Call) -> Outcome {
    let namespace = call
        .str("namespace")
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| invalid("clear needs `namespace`"))?;
    let layer = parse_layer(call.str("layer"))?;
    let n = tool.memory.clear(namespace, layer).map_err(db_error)?;
    Ok(json_result(&json!({"cleared": n, "namespace": namespace})))
}

fn db_error(error: osprey_db::Error) -> ToolResult {
    super::db_error("memory", error)
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
