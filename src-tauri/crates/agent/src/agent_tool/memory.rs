//! The `memory` resource: what the model remembers between sessions, in layers and namespaces,
//! with full-text search (approvals and hooks: see the `agent_tool` module docs). A memory
//! carries an importance, tags, metadata and where it came from (the calling origin and
//! session, recorded here, never taken from the model); recall and search count a use of what
//! they return (search ranks important and often-used memories up) and bring along the
//! memories linked to it, one hop.

use osprey_db::{Association, DEFAULT_NAMESPACE, MemoryLayer, MemoryQuery, MemoryRow, NewMemory};
use osprey_tools::{ApprovalNeed, Call, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use super::{AgentTool, Outcome, field, handled_result, invalid, json_result};
use crate::runner::{MEMORY_PRE_RECALL, MEMORY_PRE_STORE};

/// Rows returned by `list` and `search` when no limit is given, and the most ever returned.
pub const DEFAULT_LIMIT: u64 = 20;
pub const MAX_LIMIT: u64 = 200;
/// Linked memories returned alongside a recall or a search.
pub const ASSOCIATED_LIMIT: u32 = 5;
/// At most this many tags, each at most [`TAG_MAX`] characters.
pub const TAGS_MAX: usize = 20;
pub const TAG_MAX: usize = 40;
/// The largest metadata object, serialized.
pub const METADATA_MAX: usize = 4096;

/// The resource's line in the tool's description.
pub(super) const SUMMARY: &str = "memory: what you remember between sessions, in layers (tacit: \
     lasting facts and preferences; daily: day-to-day notes; entity: records about people, \
     projects and things) and namespaces. Store with a key to keep one record per subject \
     (storing again under the key replaces it), an importance 1-5 and tags; search is full \
     text and ranks important, often-used memories up; link related memories so recalling \
     one brings the others.";

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
            (
                "link",
                "Link memory `id` to memory `to_id` (relation: related, part_of, about, ...)",
                Free,
            ),
            ("unlink", "Remove the links from `id` to `to_id`", Free),
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
        &["memory.delete", "memory.link", "memory.unlink"],
    );
    let domain = field(
        domain,
        "to_id",
        FieldType::Integer,
        "memory: the memory a link points to",
        &["memory.link", "memory.unlink"],
    );
    let domain = field(
        domain,
        "relation",
        FieldType::String,
        "memory: how linked memories relate (default `related`)",
        &[],
    );
    let domain = field(
        domain,
        "importance",
        FieldType::Integer,
        "memory: 1 (trivia) to 5 (essential); default 3, kept when replacing by key",
        &[],
    );
    let domain = field(
        domain,
        "tags",
        FieldType::Array(Box::new(FieldType::String)),
        "memory: tags to file it under (store replaces them); list and search keep memories \
         with any of them",
        &[],
    );
    let domain = field(
        domain,
        "metadata",
        FieldType::Object,
        "memory: a small JSON object kept with it (kept when replacing by key without one)",
        &[],
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
        "link" => link(tool, &call),
        "unlink" => unlink(tool, &call),
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
        "importance": call.input.get("importance"),
        "tags": call.input.get("tags"),
        "metadata": call.input.get("metadata"),
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
        for field in [
            "namespace",
            "layer",
            "key",
            "content",
            "importance",
            "tags",
            "metadata",
        ] {
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
    let importance = importance_of(&fields["importance"])?;
    let tags = tags_of(&fields["tags"])?;
    let metadata = metadata_of(&fields["metadata"])?;
    let row = tool
        .memory
        .store(&NewMemory {
            layer,
            namespace: fields["namespace"].as_str().unwrap_or(DEFAULT_NAMESPACE),
            key: fields["key"].as_str(),
            content,
            importance,
            source: Some(ctx.origin.as_str()),
            source_session: ctx.session_id.as_deref(),
            metadata: metadata.as_deref(),
            tags: tags.as_deref(),
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
        "tags": call.input.get("tags"),
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
        for field in ["id", "key", "query", "namespace", "layer", "tags", "limit"] {
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
        let Some(row) = row else {
            return Err(ToolResult::error(ErrorCode::ToolFailed, "no such memory"));
        };
        tool.memory.touch(&[row.id]).map_err(db_error)?;
        let mut answer = row_json(&row, None);
        answer["associated"] = associated_json(tool, &[row.id])?;
        return Ok(json_result(&answer));
    }
    let tags = tags_of(&fields["tags"])?.unwrap_or_default();
    let query = fields["query"].as_str().unwrap_or_default();
    let limit = fields["limit"]
        .as_u64()
        .unwrap_or(DEFAULT_LIMIT)
        .min(MAX_LIMIT);
    let filters = MemoryQuery {
        namespace: fields["namespace"].as_str(),
        layer,
        tags: &tags,
        limit: Some(limit as u32),
        offset: offset_of(call),
    };
    let hits =
        crate::embedding::hybrid_search(&tool.memory, tool.embedder.as_ref(), query, &filters)
            .await
            .map_err(|error| ToolResult::error(ErrorCode::ToolFailed, error.to_string()))?;
    let ids: Vec<i64> = hits.iter().map(|h| h.memory.id).collect();
    tool.memory.touch(&ids).map_err(db_error)?;
    let rows: Vec<Value> = hits
        .iter()
        .map(|h| row_json(&h.memory, Some(h.score)))
        .collect();
    Ok(json_result(&json!({
        "count": rows.len(),
        "memories": rows,
        "associated": associated_json(tool, &ids)?,
    })))
}

/// The memories linked to `ids` (one hop), each with the memory it was reached from.
fn associated_json(tool: &AgentTool, ids: &[i64]) -> Result<Value, ToolResult> {
    let linked = tool
        .memory
        .associations(ids, ASSOCIATED_LIMIT)
        .map_err(db_error)?;
    Ok(Value::Array(linked.iter().map(association_json).collect()))
}

fn association_json(association: &Association) -> Value {
    let mut row = row_json(&association.memory, None);
    row["via"] = json!(association.via);
    row["relation"] = json!(association.relation);
    row["direction"] = json!(if association.outgoing {
        "from_via"
    } else {
        "to_via"
    });
    row
}

fn link(tool: &AgentTool, call: &Call) -> Outcome {
    let (from, to) = link_ends(call)?;
    let relation = call
        .str("relation")
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .unwrap_or("related");
    if relation.chars().count() > TAG_MAX {
        return Err(invalid(format!(
            "`relation` is at most {TAG_MAX} characters"
        )));
    }
    if from == to {
        return Err(invalid("a memory cannot be linked to itself"));
    }
    for id in [from, to] {
        if tool.memory.get(id).map_err(db_error)?.is_none() {
            return Err(ToolResult::error(
                ErrorCode::ToolFailed,
                format!("no memory with id {id}"),
            ));
        }
    }
    let created = tool.memory.link(from, to, relation).map_err(db_error)?;
    Ok(json_result(&json!({
        "linked": {"id": from, "to_id": to, "relation": relation},
        "new": created,
    })))
}

fn unlink(tool: &AgentTool, call: &Call) -> Outcome {
    let (from, to) = link_ends(call)?;
    let removed = tool
        .memory
        .unlink(from, to, call.str("relation"))
        .map_err(db_error)?;
    Ok(json_result(
        &json!({"unlinked": removed, "id": from, "to_id": to}),
    ))
}

fn link_ends(call: &Call) -> Result<(i64, i64), ToolResult> {
    let id = |name: &str| {
        call.input
            .get(name)
            .and_then(Value::as_i64)
            .ok_or_else(|| invalid(format!("{} needs `id` and `to_id`", call.action())))
    };
    Ok((id("id")?, id("to_id")?))
}

fn importance_of(value: &Value) -> Result<Option<u8>, ToolResult> {
    match value {
        Value::Null => Ok(None),
        value => match value.as_u64() {
            Some(n @ 1..=5) => Ok(Some(n as u8)),
            _ => Err(invalid(format!(
                "`importance` is a whole number from 1 to 5, not {value}"
            ))),
        },
    }
}

fn tags_of(value: &Value) -> Result<Option<Vec<String>>, ToolResult> {
    let items = match value {
        Value::Null => return Ok(None),
        Value::Array(items) => items,
        other => return Err(invalid(format!("`tags` is a list of words, not {other}"))),
    };
    let mut tags = Vec::with_capacity(items.len());
    for item in items {
        let tag = item
            .as_str()
            .ok_or_else(|| invalid(format!("each tag is a string, not {item}")))?;
        if tag.trim().chars().count() > TAG_MAX {
            return Err(invalid(format!("a tag is at most {TAG_MAX} characters")));
        }
        tags.push(tag.to_string());
    }
    let tags = osprey_db::normalize_tags(&tags);
    if tags.len() > TAGS_MAX {
        return Err(invalid(format!("at most {TAGS_MAX} tags per memory")));
    }
    Ok(Some(tags))
}

fn metadata_of(value: &Value) -> Result<Option<String>, ToolResult> {
    match value {
        Value::Null => Ok(None),
        Value::Object(_) => {
            let text = value.to_string();
            if text.len() > METADATA_MAX {
                return Err(invalid(format!(
                    "`metadata` is {} bytes; at most {METADATA_MAX} are kept",
                    text.len()
                )));
            }
            Ok(Some(text))
        }
        other => Err(invalid(format!("`metadata` is a JSON object, not {other}"))),
    }
}

fn list(tool: &AgentTool, call: &Call) -> Outcome {
    let tags = tags_of(call.input.get("tags").unwrap_or(&Value::Null))?.unwrap_or_default();
    let query = MemoryQuery {
        namespace: call.str("namespace"),
        layer: parse_layer(call.str("layer"))?,
        tags: &tags,
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
        "importance": row.importance,
        "tags": row.tags,
        "source": row.source,
        "uses": row.access_count,
    });
    if let Some(metadata) = &row.metadata {
        v["metadata"] = serde_json::from_str(metadata).unwrap_or(Value::Null);
    }
    if let Some(score) = score {
        v["score"] = json!(score);
    }
    v
}
