//! Chat sessions: the session rows, their messages in order, and every tool call with its
//! result. Message content is stored as the agent's JSON (this crate does not know its shape),
//! and each row is written as it happens, so a crash loses at most the reply being streamed.

use rusqlite::{OptionalExtension, Row, params};
use serde_json::Value;

use crate::{Database, Error, Result, now_ms};

/// One session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub title: Option<String>,
    /// The origin its turns run with (`user`, `system` for reminders, ...).
    pub origin: String,
    /// `idle`, `running`, `cancelled`, `failed`.
    pub status: String,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub message_count: i64,
}

/// What a new session starts with.
#[derive(Clone, Debug, Default)]
pub struct NewSession<'a> {
    pub id: &'a str,
    pub title: Option<&'a str>,
    pub origin: &'a str,
    pub provider: Option<&'a str>,
    pub model: Option<&'a str>,
}

/// One stored message.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredMessage {
    /// Position in the session, from 1.
    pub seq: i64,
    pub role: String,
    /// The agent's JSON for the message's parts.
    pub content: Value,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub created_ms: i64,
}

/// One stored tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredToolCall {
    pub row_id: i64,
    /// The model's id for the call.
    pub call_id: String,
    /// The assistant message that made the call.
    pub message_seq: i64,
    pub name: String,
    pub input: Value,
    /// `running`, `done`, `error`.
    pub status: String,
    /// The JSON tool result, once finished.
    pub result: Option<Value>,
    pub code: Option<String>,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
}

/// A conversation found by [`Sessions::search_conversations`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionMatch {
    pub session: SessionRow,
    /// The text of the first message part that matched; `None` when only the title did.
    pub text: Option<String>,
}

/// The tokens a session's stored messages carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionUsage {
    /// Summed over every message that recorded usage (each model call counts its whole input).
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// The input of the last message with usage: how much context the model read last.
    pub last_input_tokens: Option<i64>,
}

/// `text` for a `LIKE ... ESCAPE '\'` pattern that matches it anywhere.
fn like_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// The sessions repository.
#[derive(Clone, Debug)]
pub struct Sessions {
    db: Database,
}

fn json(column: &str, text: String) -> Result<Value> {
    serde_json::from_str(&text).map_err(|source| Error::BadJson {
        key: column.to_string(),
        source,
    })
}

const SESSION_COLUMNS: &str =
    "s.id, s.title, s.origin, s.status, s.provider, s.model, s.created_ms, s.updated_ms,
     (SELECT count(*) FROM messages m WHERE m.session_id = s.id)";

fn session_row(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: row.get(0)?,
        title: row.get(1)?,
        origin: row.get(2)?,
        status: row.get(3)?,
        provider: row.get(4)?,
        model: row.get(5)?,
        created_ms: row.get(6)?,
        updated_ms: row.get(7)?,
        message_count: row.get(8)?,
    })
}

impl Sessions {
    pub(crate) fn new(db: Database) -> Self {
        Sessions { db }
    }

    /// Creates the session unless it exists; returns it either way.
    pub fn open_or_create(&self, new: &NewSession<'_>) -> Result<SessionRow> {
        let now = now_ms();
        self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO sessions (id, title, origin, status, provider, model, created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, 'idle', ?4, ?5, ?6, ?6)
                 ON CONFLICT(id) DO NOTHING",
                params![new.id, new.title, new.origin, new.provider, new.model, now],
            )?;
            Ok(())
        })?;
        self.get(new.id)?
            .ok_or_else(|| Error::Sqlite(rusqlite::Error::QueryReturnedNoRows))
    }

    pub fn get(&self, id: &str) -> Result<Option<SessionRow>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = ?1"),
                [id],
                session_row,
            )
            .optional()?)
        })
    }

    /// The most recently active sessions first.
    pub fn list(&self, limit: Option<u32>) -> Result<Vec<SessionRow>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions s ORDER BY s.updated_ms DESC, s.rowid DESC LIMIT ?1"
            ))?;
            let rows = stmt.query_map([limit.map(i64::from).unwrap_or(-1)], session_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Like [`Sessions::list`], without the sessions sub-agents ran in (they belong to their
    /// parent's conversation; the agent tool's `task` resource shows them).
    pub fn list_conversations(&self, limit: Option<u32>) -> Result<Vec<SessionRow>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions s
                 WHERE NOT EXISTS (SELECT 1 FROM subagent_tasks t WHERE t.session_id = s.id)
                 ORDER BY s.updated_ms DESC, s.rowid DESC LIMIT ?1"
            ))?;
            let rows = stmt.query_map([limit.map(i64::from).unwrap_or(-1)], session_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    pub fn set_status(&self, id: &str, status: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "UPDATE sessions SET status = ?2, updated_ms = ?3 WHERE id = ?1",
                params![id, status, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Sets the session's title; false when there is no such session. The session keeps its
    /// place in the list (`updated_ms` is left alone).
    pub fn set_title(&self, id: &str, title: &str) -> Result<bool> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "UPDATE sessions SET title = ?2 WHERE id = ?1",
                params![id, title],
            )? > 0)
        })
    }

    /// Conversations (as [`Sessions::list_conversations`]) whose title or the text of a person's
    /// or the model's message holds `query` (case-insensitive for ASCII), newest first, each with
    /// the first matching text. An empty query lists them all.
    pub fn search_conversations(
        &self,
        query: &str,
        limit: Option<u32>,
    ) -> Result<Vec<SessionMatch>> {
        let query = query.trim();
        if query.is_empty() {
            return Ok(self
                .list_conversations(limit)?
                .into_iter()
                .map(|session| SessionMatch {
                    session,
                    text: None,
                })
                .collect());
        }
        let pattern = like_pattern(query);
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT * FROM (
                   SELECT {SESSION_COLUMNS},
                     (SELECT json_extract(p.value, '$.text')
                        FROM messages m, json_each(m.content) p
                       WHERE m.session_id = s.id AND m.role IN ('user', 'assistant')
                         AND json_type(m.content) = 'array'
                         AND json_extract(p.value, '$.type') = 'text'
                         AND json_extract(p.value, '$.text') LIKE ?1 ESCAPE '\\'
                       ORDER BY m.seq LIMIT 1) AS hit,
                     s.title LIKE ?1 ESCAPE '\\' AS title_hit,
                     s.rowid AS rid
                   FROM sessions s
                   WHERE NOT EXISTS (SELECT 1 FROM subagent_tasks t WHERE t.session_id = s.id))
                 WHERE title_hit OR hit IS NOT NULL
                 ORDER BY updated_ms DESC, rid DESC LIMIT ?2"
            ))?;
            let rows = stmt.query_map(
                params![pattern, limit.map(i64::from).unwrap_or(-1)],
                |row| {
                    Ok(SessionMatch {
                        session: session_row(row)?,
                        text: row.get(9)?,
                    })
                },
            )?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The tokens the session's stored messages carry.
    pub fn usage(&self, session_id: &str) -> Result<SessionUsage> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                "SELECT coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
                   (SELECT input_tokens FROM messages
                     WHERE session_id = ?1 AND input_tokens IS NOT NULL
                     ORDER BY seq DESC LIMIT 1)
                 FROM messages WHERE session_id = ?1",
                [session_id],
                |r| {
                    Ok(SessionUsage {
                        input_tokens: r.get(0)?,
                        output_tokens: r.get(1)?,
                        last_input_tokens: r.get(2)?,
                    })
                },
            )?)
        })
    }

    /// Appends a message at the end of the session; returns its `seq`.
    pub fn append_message(
        &self,
        session_id: &str,
        role: &str,
        content: &Value,
        tokens: Option<(i64, i64)>,
    ) -> Result<i64> {
        let text = content.to_string();
        let now = now_ms();
        self.db.with_conn(|c| {
            let tx = c.transaction()?;
            let seq: i64 = tx.query_row(
                "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?1",
                [session_id],
                |r| r.get(0),
            )?;
            tx.execute(
                "INSERT INTO messages (session_id, seq, role, content, input_tokens, output_tokens, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    session_id,
                    seq,
                    role,
                    text,
                    tokens.map(|t| t.0),
                    tokens.map(|t| t.1),
                    now
                ],
            )?;
            tx.execute(
                "UPDATE sessions SET updated_ms = ?2 WHERE id = ?1",
                params![session_id, now],
            )?;
            tx.commit()?;
            Ok(seq)
        })
    }

    /// The session's messages in order.
    pub fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>> {
        let rows = self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT seq, role, content, input_tokens, output_tokens, created_ms
                 FROM messages WHERE session_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map([session_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })?;
        rows.into_iter()
            .map(|(seq, role, content, input, output, created)| {
                Ok(StoredMessage {
                    seq,
                    role,
                    content: json("messages.content", content)?,
                    input_tokens: input,
                    output_tokens: output,
                    created_ms: created,
                })
            })
            .collect()
    }

    /// Records a call as it starts; returns the row id to finish it with.
    pub fn start_tool_call(
        &self,
        session_id: &str,
        message_seq: i64,
        call_id: &str,
        name: &str,
        input: &Value,
    ) -> Result<i64> {
        self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO tool_calls (session_id, call_id, message_seq, name, input, status, started_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6)",
                params![session_id, call_id, message_seq, name, input.to_string(), now_ms()],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    /// Records a call's result (`status` is `done` or `error`).
    pub fn finish_tool_call(
        &self,
        row_id: i64,
        status: &str,
        result: &Value,
        code: Option<&str>,
    ) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "UPDATE tool_calls SET status = ?2, result = ?3, code = ?4, finished_ms = ?5 WHERE id = ?1",
                params![row_id, status, result.to_string(), code, now_ms()],
            )?;
            Ok(())
        })
    }

    /// The session's tool calls in the order they started.
    pub fn tool_calls(&self, session_id: &str) -> Result<Vec<StoredToolCall>> {
        type Raw = (
            i64,
            String,
            i64,
            String,
            String,
            String,
            Option<String>,
            Option<String>,
            i64,
            Option<i64>,
        );
        let rows: Vec<Raw> = self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, call_id, message_seq, name, input, status, result, code, started_ms, finished_ms
                 FROM tool_calls WHERE session_id = ?1 ORDER BY id",
            )?;
            let rows = stmt.query_map([session_id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                ))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })?;
        rows.into_iter()
            .map(|r| {
                Ok(StoredToolCall {
                    row_id: r.0,
                    call_id: r.1,
                    message_seq: r.2,
                    name: r.3,
                    input: json("tool_calls.input", r.4)?,
                    status: r.5,
                    result: r.6.map(|t| json("tool_calls.result", t)).transpose()?,
                    code: r.7,
                    started_ms: r.8,
                    finished_ms: r.9,
                })
            })
            .collect()
    }

    /// Forgets the session's messages and tool calls; the session itself stays.
    pub fn clear(&self, session_id: &str) -> Result<()> {
        self.db.with_conn(|c| {
            let tx = c.transaction()?;
            tx.execute("DELETE FROM tool_calls WHERE session_id = ?1", [session_id])?;
            tx.execute("DELETE FROM messages WHERE session_id = ?1", [session_id])?;
            tx.execute(
                "UPDATE sessions SET status = 'idle', updated_ms = ?2 WHERE id = ?1",
                params![session_id, now_ms()],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Removes the session with everything in it.
    pub fn delete(&self, session_id: &str) -> Result<bool> {
        self.db
            .with_conn(|c| Ok(c.execute("DELETE FROM sessions WHERE id = ?1", [session_id])? > 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn new(id: &str) -> NewSession<'_> {
        NewSession {
            id,
            origin: "user",
            model: Some("m"),
            ..Default::default()
        }
    }

    #[test]
    fn conversations_leave_out_the_sessions_sub_agents_ran_in() {
        let db = Database::open_in_memory().unwrap();
        let sessions = db.sessions();
        sessions.open_or_create(&new("parent")).unwrap();
        let task = db
            .subagent_tasks()
            .start(&crate::NewSubAgentTask {
                parent_session_id: "parent",
                depth: 1,
                prompt: "look",
                model: None,
                timeout_ms: 1000,
                agent_type: None,
            })
            .unwrap();
        sessions.open_or_create(&new(&task.session_id)).unwrap();
        sessions.open_or_create(&new("other")).unwrap();
        let all: Vec<String> = sessions
            .list(None)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(all.len(), 3);
        let conversations: Vec<String> = sessions
            .list_conversations(None)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert!(
            !conversations.contains(&task.session_id),
            "{conversations:?}"
        );
        assert_eq!(conversations.len(), 2);
    }

    #[test]
    fn messages_and_tool_calls_survive_a_reopen_in_order() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::open_in(dir.path()).unwrap();
            let sessions = db.sessions();
            let row = sessions.open_or_create(&new("s1")).unwrap();
            assert_eq!((row.status.as_str(), row.message_count), ("idle", 0));
            assert_eq!(
                sessions
                    .append_message("s1", "user", &json!([{"type": "text", "text": "hi"}]), None)
                    .unwrap(),
                1
            );
            let seq = sessions
                .append_message(
                    "s1",
                    "assistant",
                    &json!([{"type": "tool_call"}]),
                    Some((10, 5)),
                )
                .unwrap();
            assert_eq!(seq, 2);
            let call = sessions
                .start_tool_call("s1", seq, "call_1", "file", &json!({"action": "read"}))
                .unwrap();
            // The same model id twice in one session is kept apart by row id.
            let again = sessions
                .start_tool_call("s1", seq, "call_1", "file", &json!({}))
                .unwrap();
            sessions
                .finish_tool_call(call, "done", &json!({"is_error": false}), None)
                .unwrap();
            sessions
                .finish_tool_call(
                    again,
                    "error",
                    &json!({"is_error": true}),
                    Some("cancelled"),
                )
                .unwrap();
            sessions.set_status("s1", "running").unwrap();
        }
        let db = Database::open_in(dir.path()).unwrap();
        let sessions = db.sessions();
        let row = sessions.open_or_create(&new("s1")).unwrap();
        assert_eq!((row.status.as_str(), row.message_count), ("running", 2));
        let messages = sessions.messages("s1").unwrap();
        assert_eq!(
            messages
                .iter()
                .map(|m| (m.seq, m.role.as_str()))
                .collect::<Vec<_>>(),
            [(1, "user"), (2, "assistant")]
        );
        assert_eq!(messages[0].content[0]["text"], "hi");
        assert_eq!(messages[1].input_tokens, Some(10));
        let calls = sessions.tool_calls("s1").unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].status, "done");
        assert_eq!(calls[0].input, json!({"action": "read"}));
        assert_eq!(calls[1].code.as_deref(), Some("cancelled"));
        assert!(calls[1].finished_ms.is_some());
    }

    #[test]
    fn search_finds_titles_and_message_text_newest_first_and_sums_usage() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open_in(dir.path()).unwrap();
        let sessions = db.sessions();
        let text = |t: &str| json!([{"type": "text", "text": t}]);
        sessions.open_or_create(&new("old")).unwrap();
        assert!(sessions.set_title("old", "Trip to Lisbon").unwrap());
        sessions
            .append_message("old", "user", &text("book a hotel"), None)
            .unwrap();
        sessions.open_or_create(&new("new")).unwrap();
        sessions
            .append_message("new", "user", &text("What about \"50%_off\" deals?"), None)
            .unwrap();
        sessions
            .append_message(
                "new",
                "assistant",
                &json!([{"type": "tool_call", "id": "c", "name": "t", "input": {"text": "lisbon"}},
                        {"type": "text", "text": "A HOTEL in Lisbon is cheaper in May."}]),
                Some((100, 20)),
            )
            .unwrap();
        sessions
            .append_message("new", "assistant", &text("done"), Some((130, 5)))
            .unwrap();
        // A summary row is not a message a person wrote or read.
        sessions
            .append_message("new", "summary", &text("secret summary"), None)
            .unwrap();
        // `new` was written last: it comes first.
        let ids = |query: &str| -> Vec<(String, Option<String>)> {
            sessions
                .search_conversations(query, None)
                .unwrap()
                .into_iter()
                .map(|m| (m.session.id, m.text))
                .collect()
        };
        assert_eq!(
            ids("hotel"),
            [
                (
                    "new".to_string(),
                    Some("A HOTEL in Lisbon is cheaper in May.".to_string())
                ),
                ("old".to_string(), Some("book a hotel".to_string())),
            ]
        );
        // Matched by title only: no text.
        assert_eq!(ids("trip to"), [("old".to_string(), None)]);
        // LIKE's wildcards are taken literally.
        assert_eq!(ids("50%_off").len(), 1);
        assert!(ids("5%f").is_empty());
        assert!(ids("secret").is_empty());
        assert_eq!(ids("  ").len(), 2);
        // The whole answer survives a reopen of the file.
        drop(sessions);
        drop(db);
        let db = Database::open_in(dir.path()).unwrap();
        let sessions = db.sessions();
        assert_eq!(
            sessions.usage("new").unwrap(),
            SessionUsage {
                input_tokens: 230,
                output_tokens: 25,
                last_input_tokens: Some(130),
            }
        );
        assert_eq!(sessions.usage("old").unwrap(), SessionUsage::default());
        assert_eq!(sessions.usage("none").unwrap(), SessionUsage::default());
        assert!(!sessions.set_title("none", "x").unwrap());
        assert_eq!(
            sessions.get("old").unwrap().unwrap().title.as_deref(),
            Some("Trip to Lisbon")
        );
    }

    #[test]
    fn list_clear_and_delete() {
        let db = Database::open_in_memory().unwrap();
        let sessions = db.sessions();
        sessions.open_or_create(&new("a")).unwrap();
        sessions.open_or_create(&new("b")).unwrap();
        sessions
            .append_message("a", "user", &json!([]), None)
            .unwrap();
        let listed: Vec<String> = sessions
            .list(None)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(listed.len(), 2);
        assert!(listed.contains(&"a".to_string()));
        let call = sessions
            .start_tool_call("a", 1, "c", "t", &json!({}))
            .unwrap();
        assert!(call > 0);
        sessions.clear("a").unwrap();
        assert!(sessions.messages("a").unwrap().is_empty());
        assert!(sessions.tool_calls("a").unwrap().is_empty());
        assert!(sessions.get("a").unwrap().is_some());
        sessions
            .append_message("b", "user", &json!([]), None)
            .unwrap();
        sessions
            .start_tool_call("b", 1, "c", "t", &json!({}))
            .unwrap();
        assert!(sessions.delete("b").unwrap());
        assert!(sessions.get("b").unwrap().is_none());
        assert!(sessions.tool_calls("b").unwrap().is_empty(), "cascade");
        assert!(!sessions.delete("b").unwrap());
        assert_eq!(sessions.list(Some(1)).unwrap().len(), 1);
    }

    #[test]
    fn a_message_for_an_unknown_session_is_refused() {
        let db = Database::open_in_memory().unwrap();
        assert!(
            db.sessions()
                .append_message("nope", "user", &json!([]), None)
                .is_err()
        );
    }
}
