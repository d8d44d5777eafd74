//! A loopback model server speaking the Anthropic Messages API's streaming wire format (SSE with
//! named events), for tests of whole programs (the desktop app, the core's chat) that cannot
//! share a tokio runtime with the test. It plays scripted replies in order, whatever the path,
//! and records each request body. Blocking std networking on its own thread; dropped, it stops
//! accepting. (src-tauri/crates/agent/tests/support has the async, multi-format original.)

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};

/// A tool call the scripted model makes.
#[derive(Clone, Debug)]
pub struct ScriptedCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// One scripted model reply: optional thinking, text (streamed in small pieces), tool calls.
#[derive(Clone, Debug, Default)]
pub struct ScriptedReply {
    pub thinking: String,
    pub text: String,
    pub calls: Vec<ScriptedCall>,
    /// Pause between SSE events, so a UI can be seen streaming.
    pub pace: Duration,
    /// Instead of a stream, an HTTP error with this status and an Anthropic-shaped error body
    /// carrying the message (a request the API refuses, as a turn that fails).
    pub failure: Option<(u16, String)>,
}

impl ScriptedReply {
    pub fn text(text: &str) -> ScriptedReply {
        ScriptedReply {
            text: text.to_string(),
            ..ScriptedReply::default()
        }
    }

    pub fn call(id: &str, name: &str, input: Value) -> ScriptedReply {
        ScriptedReply {
            calls: vec![ScriptedCall {
                id: id.to_string(),
                name: name.to_string(),
                input,
            }],
            ..ScriptedReply::default()
        }
    }

    /// An HTTP error instead of an answer: `status` (a 4xx one, which providers do not retry)
    /// with `message` in the API's error body.
    pub fn failure(status: u16, message: &str) -> ScriptedReply {
        ScriptedReply {
            failure: Some((status, message.to_string())),
            ..ScriptedReply::default()
        }
    }

    pub fn paced(mut self, pace: Duration) -> ScriptedReply {
        self.pace = pace;
        self
    }

    /// The SSE events of this reply, in order.
    pub fn events(&self) -> Vec<String> {
        let mut out = vec![
            sse_event(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
            ),
            sse_event("ping", json!({"type": "ping"})),
        ];
        let mut index = 0;
        if !self.thinking.is_empty() {
            out.push(sse_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}}),
            ));
            for piece in pieces(&self.thinking, 8) {
                out.push(sse_event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}}),
                ));
            }
            out.push(sse_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "sig"}}),
            ));
            out.push(sse_event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        if !self.text.is_empty() {
            out.push(sse_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            ));
            for piece in pieces(&self.text, 6) {
                out.push(sse_event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
                ));
            }
            out.push(sse_event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        for call in &self.calls {
            out.push(sse_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
            ));
            for piece in pieces(&call.input.to_string(), 12) {
                out.push(sse_event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}),
                ));
            }
            out.push(sse_event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        let stop = if self.calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        out.push(sse_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 17}}),
        ));
        out.push(sse_event("message_stop", json!({"type": "message_stop"})));
        out
    }
}

fn sse_event(event: &str, data: Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// `text` cut into pieces of about `size` characters (on char boundaries).
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|chunk| chunk.iter().collect())
        .collect()
}

struct Script {
    replies: Mutex<VecDeque<ScriptedReply>>,
    seen: Mutex<Vec<Value>>,
    /// The `x-api-key` of each request, in order ("" when none was sent).
    keys: Mutex<Vec<String>>,
}

/// The running server.
pub struct AnthropicServer {
    port: u16,
    script: Arc<Script>,
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for AnthropicServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicServer")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl AnthropicServer {
    /// Listens on a free loopback port and plays `replies` in order.
    pub fn start(replies: Vec<ScriptedReply>) -> Result<AnthropicServer> {
        let listener = TcpListener::bind("127.0.0.1:0").context("binding a loopback port")?;
        let port = listener.local_addr()?.port();
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            seen: Mutex::new(Vec::new()),
            keys: Mutex::new(Vec::new()),
        });
        let stop = Arc::new(AtomicBool::new(false));
        std::thread::spawn({
            let script = script.clone();
            let stop = stop.clone();
            move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let script = script.clone();
                    std::thread::spawn(move || {
                        let _ = serve(stream, &script);
                    });
                }
            }
        });
        Ok(AnthropicServer { port, script, stop })
    }

    /// The base URL to give the Anthropic client.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Makes this server the default (Anthropic) provider of the Osprey on `data_dir`, with
    /// `workspace` as the shell sandbox's workspace (stored before that Osprey starts).
    pub fn use_as_provider(
        &self,
        data_dir: &std::path::Path,
        workspace: &std::path::Path,
    ) -> Result<()> {
        crate::store_setting(
            data_dir,
            "shell.sandbox",
            json!({"workspaces": [workspace]}),
        )?;
        crate::store_setting(
            data_dir,
            "providers",
            json!({"default": "anthropic", "anthropic": {"base_url": self.url(), "model": "claude-test"}}),
        )
    }

    /// The request bodies received so far.
    pub fn seen(&self) -> Vec<Value> {
        self.script
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The API key each request carried (`x-api-key`), in order.
    pub fn keys(&self) -> Vec<String> {
        self.script
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replies not played yet.
    pub fn remaining(&self) -> usize {
        self.script
            .replies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

impl Drop for AnthropicServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(stream: TcpStream, script: &Script) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    let mut line = String::new();
    let mut path = None;
    let mut key = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if path.is_none() {
            // The request line: METHOD PATH VERSION.
            path = trimmed.split_whitespace().nth(1).map(String::from);
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("x-api-key") {
                key = value.trim().to_string();
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    script
        .seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(body.clone());
    script
        .keys
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(key);
    let mut stream = stream;
    // Refused as the real API refuses it, without using up a scripted reply.
    if let Some((status, error)) =
        crate::provider_rules::refusal(path.as_deref().unwrap_or("/"), &body)
    {
        let error = error.to_string();
        write!(
            stream,
            "HTTP/1.1 {status} Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{error}",
            error.len()
        )?;
        return stream.flush();
    }
    let reply = script
        .replies
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop_front();
    let Some(reply) = reply else {
        let message = "the test script has no more replies";
        write!(
            stream,
            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{message}",
            message.len()
        )?;
        return stream.flush();
    };
    if let Some((status, message)) = &reply.failure {
        let error = json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
            .to_string();
        write!(
            stream,
            "HTTP/1.1 {status} Scripted Failure\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{error}",
            error.len()
        )?;
        return stream.flush();
    }
    // No length: the body ends when the connection closes.
    write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
    )?;
    stream.flush()?;
    for event in reply.events() {
        if !reply.pace.is_zero() {
            std::thread::sleep(reply.pace);
        }
        stream.write_all(event.as_bytes())?;
        stream.flush()?;
    }
    stream.shutdown(std::net::Shutdown::Both)
}
