//! The `profile` resource: facts about the person (name, time zone, preferences), one value per
//! key. They are stored as tacit memories in the `profile` namespace keyed by the fact's name, so
//! they last, are found by memory search too, and setting a fact again replaces it. Reading and
//! setting need no approval (Osprey's own data); deleting a fact the person may rely on goes
//! through the policy, as forgetting a memory does.

use osprey_db::{MemoryLayer, MemoryQuery, MemoryRow, NewMemory};
use osprey_tools::{ApprovalNeed, Call, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use super::{AgentTool, Outcome, field, invalid, json_result};

/// The memory namespace profile facts live in.
pub const PROFILE_NAMESPACE: &str = "profile";

/// The most facts `get` without a key returns.
const MAX_FACTS: u32 = 500;

pub(super) const SUMMARY: &str = "profile: facts about the person you work for (name, time zone, \
     preferences), one value per key.";

pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::{None as Free, Required};
    let domain = domain.resource(
        "profile",
        &["user", "me", "person", "preferences", "about_me"],
        &[
            ("get", "One fact by `key`, or every fact without one", Free),
            (
                "set",
                "Record a fact (replaces the value under `key`)",
                Free,
            ),
            ("delete", "Forget a fact", Required),
        ],
    );
    let domain = field(
        domain,
        "key",
        FieldType::String,
        "profile: the fact's name (`name`, `timezone`, `preferred_units`)",
        &["profile.set", "profile.delete"],
    );
    field(
        domain,
        "value",
        FieldType::String,
        "profile: the fact",
        &["profile.set"],
    )
}

pub(super) async fn run(tool: &AgentTool, _ctx: &ToolContext, call: Call) -> ToolResult {
    let result = match call.action() {
        "get" => get(tool, &call),
        "set" => set(tool, &call),
        "delete" => delete(tool, &call),
        other => Err(invalid(format!("profile has no action `{other}`"))),
    };
    result.unwrap_or_else(|e| e)
}

fn key_of(call: &Call) -> Result<Option<String>, ToolResult> {
    match call.str("key").map(str::trim) {
        None => Ok(None),
        Some("") => Err(invalid("`key` must not be empty")),
        // One spelling per fact: `Time Zone` and `time_zone` are the same key.
        Some(key) => Ok(Some(key.to_lowercase().replace([' ', '-'], "_"))),
    }
}

fn get(tool: &AgentTool, call: &Call) -> Outcome {
    if let Some(key) = key_of(call)? {
        return match tool
            .memory
            .recall(PROFILE_NAMESPACE, &key)
            .map_err(db_error)?
        {
            Some(row) => Ok(json_result(&fact_json(&row))),
            None => Err(ToolResult::error(
                ErrorCode::ToolFailed,
                format!("no profile fact `{key}`; get without a key lists them"),
            )),
        };
    }
    let rows = tool
        .memory
        .list(&MemoryQuery {
            namespace: Some(PROFILE_NAMESPACE),
            layer: Some(MemoryLayer::Tacit),
            limit: Some(MAX_FACTS),
            offset: 0,
            ..MemoryQuery::default()
        })
        .map_err(db_error)?;
    let mut facts = serde_json::Map::new();
    for row in &rows {
        if let Some(key) = &row.key {
            facts.insert(key.clone(), Value::String(row.content.clone()));
        }
    }
    Ok(json_result(&json!({"count": facts.len(), "facts": facts})))
}

fn set(tool: &AgentTool, call: &Call) -> Outcome {
    let key = key_of(call)?.ok_or_else(|| invalid("profile set needs `key`"))?;
    let value = call.str("value").unwrap_or_default().trim();
    if value.is_empty() {
        return Err(invalid(
            "`value` must not be empty (to forget a fact, use delete)",
        ));
    }
    let row = tool
        .memory
        .store(&NewMemory {
            layer: MemoryLayer::Tacit,
            namespace: PROFILE_NAMESPACE,
            key: Some(&key),
            content: value,
            ..NewMemory::default()
        })
        .map_err(db_error)?;
    Ok(json_result(&json!({"set": fact_json(&row)})))
}

fn delete(tool: &AgentTool, call: &Call) -> Outcome {
    let key = key_of(call)?.ok_or_else(|| invalid("profile delete needs `key`"))?;
    let row = tool
        .memory
        .recall(PROFILE_NAMESPACE, &key)
        .map_err(db_error)?
        .ok_or_else(|| {
            ToolResult::error(ErrorCode::ToolFailed, format!("no profile fact `{key}`"))
        })?;
    tool.memory.delete(row.id).map_err(db_error)?;
    Ok(json_result(&json!({"deleted": key})))
}

fn fact_json(row: &MemoryRow) -> Value {
    json!({
        "key": row.key,
        "value": row.content,
        "updated_ms": row.updated_ms,
    })
}

fn db_error(error: osprey_db::Error) -> ToolResult {
    super::db_error("profile", error)
}
