//! The JSON-RPC gate in front of the MCP server: every line a client sends passes here before
//! `rmcp` sees it, so a badly formed message gets the answer the JSON-RPC 2.0 specification
//! names, with the request's own `id`, and cannot end the session.
//!
//! `rmcp` answers a malformed line with `-32600` and no `id` member at all (a response without
//! `id` is itself invalid JSON-RPC, so a client cannot match it to anything), answers text that
//! is not JSON the same way instead of `-32700`, and ends the whole session when a notification
//! arrives before the lifecycle has started. The gate answers those itself:
//! - a line that is not JSON: `-32700` (parse error), `id: null`;
//! - JSON that is not a request, notification or response (wrong `jsonrpc`, a `method` that is
//!   not a string, an `id` that is null or not a string or integer, `params` that is not an
//!   object, a batch, which MCP dropped in 2025-06-18): `-32600` (invalid request) with the
//!   request's `id` when it has a usable one, else `null`;
//! - before the client has started the session (`initialize`, or a request carrying the
//!   stateless protocol's `_meta` version): notifications and stray responses are dropped
//!   (JSON-RPC never answers a notification) instead of ending the session.
//!
//! - a request other than `ping` before the session started: `-32602`, the code `rmcp` gives
//!   too, with a message that says to send `initialize` first.
//!
//! Everything else goes to `rmcp` unchanged. The gate's own answers and `rmcp`'s go out through
//! one writer, a line each.

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// JSON-RPC 2.0's code for text that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0's code for JSON that is not a valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0's code for a request whose parameters do not fit: what MCP (and `rmcp`) answer
/// to a request that comes before the session has started.
pub const INVALID_PARAMS: i64 = -32602;

/// The longest line the gate accepts (a tool call's arguments included); a longer one is
/// answered as invalid and skipped, never buffered without bound.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// The MCP metadata key that lets a request start a session without `initialize` (the
/// stateless protocol revision `rmcp` also speaks).
const INLINE_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// What one line from the client is.
#[derive(Debug, PartialEq)]
enum Message {
    /// A request (`method` and `id`): answered by `rmcp`.
    Request {
        id: Value,
        method: String,
        starts_session: bool,
    },
    /// A notification (`method`, no `id`).
    Notification,
    /// A response to a request the server sent.
    Response,
}

/// Why a line was refused, with the answer's code, `id` and message.
#[derive(Debug, PartialEq)]
struct Refusal {
    code: i64,
    id: Value,
    message: String,
}

impl Refusal {
    fn invalid(id: Value, message: impl Into<String>) -> Refusal {
        Refusal {
            code: INVALID_REQUEST,
            id,
            message: message.into(),
        }
    }

    fn answer(&self) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code, "message": self.message},
        })
    }
}

/// Reads one line as JSON-RPC 2.0 the way MCP uses it.
fn classify(line: &[u8]) -> Result<Message, Refusal> {
    let value: Value = serde_json::from_slice(line).map_err(|err| Refusal {
        code: PARSE_ERROR,
        id: Value::Null,
        message: format!("Parse error: the line is not JSON ({err})"),
    })?;
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(Refusal::invalid(
                Value::Null,
                "Invalid request: JSON-RPC batches are not supported by MCP (removed in \
                 2025-06-18); send one message per line",
            ));
        }
        _ => {
            return Err(Refusal::invalid(
                Value::Null,
                "Invalid request: a JSON-RPC message is a JSON object",
            ));
        }
    };
    // The id to answer with: the request's own when it is one JSON-RPC allows, else null.
    let id = match object.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(Refusal::invalid(
            id,
            "Invalid request: `jsonrpc` must be \"2.0\"",
        ));
    }
    match object.get("id") {
        None => {}
        Some(Value::String(_)) => {}
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {}
        Some(_) => {
            return Err(Refusal::invalid(
                id,
                "Invalid request: `id` must be a string or an integer (MCP does not allow null)",
            ));
        }
    }
    match object.get("method") {
        Some(Value::String(method)) => {
            match object.get("params") {
                None | Some(Value::Object(_)) => {}
                Some(_) => {
                    return Err(Refusal::invalid(
                        id,
                        format!("Invalid request: the `params` of `{method}` must be an object"),
                    ));
                }
            }
            if object.contains_key("id") {
                Ok(Message::Request {
                    id,
                    starts_session: method == "initialize" || carries_inline_version(&object),
                    method: method.clone(),
                })
            } else {
                Ok(Message::Notification)
            }
        }
        Some(_) => Err(Refusal::invalid(
            id,
            "Invalid request: `method` must be a string",
        )),
        None if object.contains_key("id")
            && (object.contains_key("result") || object.contains_key("error")) =>
        {
            Ok(Message::Response)
        }
        None => Err(Refusal::invalid(
            id,
            "Invalid request: a request needs a `method` (a response needs `result` or `error`)",
        )),
    }
}

fn carries_inline_version(object: &Map<String, Value>) -> bool {
    object
        .get("params")
        .and_then(|params| params.get("_meta"))
        .and_then(|meta| meta.get(INLINE_VERSION_KEY))
        .is_some_and(Value::is_string)
}

/// Runs the gate: reads the client's lines from `client_read`, writes what passes to
/// `server_write` (`rmcp`'s input), and writes both its own answers and every line `rmcp`
/// writes to `server_read` out to `client_write`. Returns once `rmcp` has said all it will
/// (after the client closed its side, or after `rmcp` ended the session on its own).
pub async fn run<CR, CW, SR, SW>(
    client_read: CR,
    client_write: CW,
    server_read: SR,
    server_write: SW,
) where
    CR: AsyncRead + Unpin,
    CW: AsyncWrite + Unpin,
    SR: AsyncRead + Unpin,
    SW: AsyncWrite + Unpin,
{
    // `None` says the server has ended: what was queued before it still goes out.
    let (answers, mut outgoing) = mpsc::channel::<Option<Vec<u8>>>(64);
    let inbound = inbound(client_read, server_write, answers.clone());
    let from_server = async move {
        let mut lines = BufReader::new(server_read);
        loop {
            let mut line = Vec::new();
            match lines.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if answers.send(Some(line)).await.is_err() {
                        return;
                    }
                }
            }
        }
        let _ = answers.send(None).await;
    };
    let writer = async move {
        let mut client_write = client_write;
        while let Some(Some(mut line)) = outgoing.recv().await {
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            if client_write.write_all(&line).await.is_err() || client_write.flush().await.is_err() {
                tracing::debug!("the MCP client stopped reading; dropping the rest");
                break;
            }
        }
    };
    let output = async { tokio::join!(from_server, writer) };
    tokio::pin!(inbound, output);
    tokio::select! {
        // The client closed its side: `rmcp` sees the end of its input and finishes.
        _ = &mut inbound => { output.await; }
        // `rmcp` ended first (a failed handshake): stop reading the client.
        _ = &mut output => {}
    }
}

/// The client-to-server half: classifies each line and forwards, answers or drops it. Ends at
/// the client's end of input (closing `rmcp`'s input so it ends too) or when `rmcp` stops
/// reading.
async fn inbound<CR, SW>(
    client_read: CR,
    mut server_write: SW,
    answers: mpsc::Sender<Option<Vec<u8>>>,
) where
    CR: AsyncRead + Unpin,
    SW: AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(client_read);
    let mut line = Vec::new();
    let mut started = false;
    loop {
        line.clear();
        let read = (&mut lines)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) => {
                tracing::debug!(%err, "reading from the MCP client failed");
                break;
            }
        }
        if line.len() > MAX_LINE && !line.ends_with(b"\n") {
            // Skip the rest of the oversized line, then answer it.
            let mut rest = Vec::new();
            if lines.read_until(b'\n', &mut rest).await.is_err() {
                break;
            }
            let refusal = Refusal::invalid(
                Value::Null,
                format!("Invalid request: a message is limited to {MAX_LINE} bytes"),
            );
            let _ = answers
                .send(Some(refusal.answer().to_string().into_bytes()))
                .await;
            continue;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        // Forward it (true), drop it (false), or answer it.
        let verdict = match classify(text) {
            Err(refusal) => Err(refusal),
            Ok(Message::Request {
                id,
                starts_session,
                method,
            }) => {
                if starts_session {
                    started = true;
                    Ok(true)
                } else if !started && method != "ping" {
                    // `rmcp` refuses it too, with the same code, but names only the stateless
                    // revision's metadata: say what a client of any revision must do.
                    Err(Refusal {
                        code: INVALID_PARAMS,
                        id,
                        message: format!(
                            "`{method}` before the session started: send `initialize` first \
                             (from protocol 2026-07-28 on, a request may instead carry `_meta` \
                             with `{INLINE_VERSION_KEY}` and the client's capabilities)"
                        ),
                    })
                } else {
                    Ok(true)
                }
            }
            // JSON-RPC never answers these; before the session they would end it in `rmcp`.
            Ok(Message::Notification | Message::Response) => Ok(started),
        };
        let forward = match verdict {
            Ok(forward) => forward,
            Err(refusal) => {
                tracing::debug!(
                    code = refusal.code,
                    "answered an MCP message the server cannot take"
                );
                if answers
                    .send(Some(refusal.answer().to_string().into_bytes()))
                    .await
                    .is_err()
                {
                    break;
                }
                false
            }
        };
        if forward {
            let mut framed = text.to_vec();
            framed.push(b'\n');
            if server_write.write_all(&framed).await.is_err() || server_write.flush().await.is_err()
            {
                // The server has ended (a failed handshake, say); nothing more can be served.
                break;
            }
        }
    }
    let _ = server_write.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> Refusal {
        classify(line.as_bytes()).expect_err(line)
    }

    #[test]
    fn malformed_messages_are_answered_with_the_specs_codes_and_their_own_id() {
        let parse = refused("{not json");
        assert_eq!((parse.code, parse.id), (PARSE_ERROR, Value::Null));

        for (line, id) in [
            (r#"{"jsonrpc":"2.0","id":7,"method":5}"#, json!(7)),
            (r#"{"jsonrpc":"2.0","id":"a"}"#, json!("a")),
            (r#"{"jsonrpc":"1.0","id":8,"method":"ping"}"#, json!(8)),
            (r#"{"id":9,"method":"ping"}"#, json!(9)),
            (
                r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":[1]}"#,
                json!(10),
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                Value::Null,
            ),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, json!(1.5)),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, Value::Null),
            ("42", Value::Null),
        ] {
            let refusal = refused(line);
            assert_eq!(refusal.code, INVALID_REQUEST, "{line}");
            assert_eq!(refusal.id, id, "{line}");
            let answer = refusal.answer();
            assert_eq!(answer["jsonrpc"], "2.0");
            assert!(answer.as_object().unwrap().contains_key("id"), "{answer}");
        }
    }

    #[test]
    fn requests_notifications_and_responses_pass() {
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
            Ok(Message::Request {
                id: json!(1),
                method: "initialize".into(),
                starts_session: true
            })
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":"x","method":"tools/list"}"#),
            Ok(Message::Request {
                id: json!("x"),
                method: "tools/list".into(),
                starts_session: false
            })
        );
        assert_eq!(
            classify(
                br#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
            ),
            Ok(Message::Request {
                id: json!(2),
                method: "tools/list".into(),
                starts_session: true
            })
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification)
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Ok(Message::Response)
        );
    }
}
