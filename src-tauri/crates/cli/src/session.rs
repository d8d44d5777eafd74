//! `osprey session list | show <id> | status <id> | clear <id> | delete <id>`: the chat sessions
//! stored in the data dir, for people who chat from the terminal and for scripts (`--json`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use osprey_db::{SessionRow, StoredMessage};
use serde_json::{Value, json};

#[derive(Args, Debug)]
pub struct SessionArgs {
    #[command(subcommand)]
    action: SessionAction,
    /// Print JSON instead of readable text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum SessionAction {
    /// The most recently used sessions first.
    List {
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// A session's messages in order (tool calls with their outcome).
    Show { id: String },
    /// A session's status, origin, model and message count.
    Status { id: String },
    /// Forget a session's messages and tool calls; the session stays.
    Clear { id: String },
    /// Remove a session with everything in it.
    Delete { id: String },
}

fn row_json(row: &SessionRow) -> Value {
    json!({
        "id": row.id,
        "title": row.title,
        "origin": row.origin,
        "status": row.status,
        "provider": row.provider,
        "model": row.model,
        "created_ms": row.created_ms,
        "updated_ms": row.updated_ms,
        "messages": row.message_count,
    })
}

fn row_line(row: &SessionRow) -> String {
    format!(
        "{:<28} {:<9} {:>4} messages  {}{}",
        row.id,
        row.status,
        row.message_count,
        row.model.as_deref().unwrap_or("-"),
        row.title
            .as_deref()
            .map(|t| format!("  \"{t}\""))
            .unwrap_or_default()
    )
}

/// One message as a line or two: the role, then each part (text, tool calls, tool results).
fn message_text(message: &StoredMessage) -> String {
    let parts = message.content.as_array().cloned().unwrap_or_default();
    let mut lines = Vec::new();
    for part in parts {
        let line = match part["type"].as_str() {
            Some("text") => part["text"].as_str().unwrap_or_default().to_string(),
            Some("thinking") => "(thinking)".to_string(),
            Some("tool_call") => format!(
                "-> {} {}",
                part["name"].as_str().unwrap_or("?"),
                part["input"]
            ),
            Some("tool_result") => {
                let outcome = if part["is_error"].as_bool() == Some(true) {
                    "error"
                } else {
                    "ok"
                };
                let text: String = part["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|block| block["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                let preview: String = text.chars().take(120).collect();
                format!("<- {outcome}: {preview}")
            }
            Some("image") => "(image)".to_string(),
            _ => part.to_string(),
        };
        lines.push(line);
    }
    format!(
        "[{}] {}: {}",
        message.seq,
        message.role,
        lines.join("\n    ")
    )
}

pub async fn run(data_dir: Option<PathBuf>, args: SessionArgs) -> anyhow::Result<ExitCode> {
    let core = crate::open(data_dir, None, None)?;
    let sessions = core.sessions();
    let missing = |id: &str| {
        eprintln!("osprey: no session `{id}`; `osprey session list` shows them");
        Ok(ExitCode::from(crate::EXIT_TOOL_FAILED))
    };
    match args.action {
        SessionAction::List { limit } => {
            let rows = sessions.list(Some(limit))?;
            if args.json {
                let rows: Vec<Value> = rows.iter().map(row_json).collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else if rows.is_empty() {
                println!("no sessions yet; start one with `osprey chat`");
            } else {
                for row in &rows {
                    println!("{}", row_line(row));
                }
            }
        }
        SessionAction::Status { id } => {
            let Some(row) = sessions.get(&id)? else {
                return missing(&id);
            };
            if args.json {
                println!("{}", serde_json::to_string_pretty(&row_json(&row))?);
            } else {
                println!("{}", row_line(&row));
            }
        }
        SessionAction::Show { id } => {
            if sessions.get(&id)?.is_none() {
                return missing(&id);
            }
            let messages = sessions.messages(&id)?;
            if args.json {
                let messages: Vec<Value> = messages
                    .iter()
                    .map(|m| json!({"seq": m.seq, "role": m.role, "content": m.content}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&messages)?);
            } else {
                for message in &messages {
                    println!("{}", message_text(message));
                }
            }
        }
        SessionAction::Clear { id } => {
            if sessions.get(&id)?.is_none() {
                return missing(&id);
            }
            sessions.clear(&id)?;
        }
        SessionAction::Delete { id } => {
            if !sessions.delete(&id)? {
                return missing(&id);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
