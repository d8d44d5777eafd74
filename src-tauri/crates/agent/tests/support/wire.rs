//! Scripted model turns in each provider's real wire format, and the matching client.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use osprey_agent::{
    Anthropic, Ollama, OpenAi, Provider, RetryPolicy, Runner, RunnerConfig, SubAgents,
};
use serde_json::{Value, json};

use super::server::{NDJSON, Reply, SSE, ndjson, sse_data, sse_event};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
    Ollama,
}

pub const ALL: [Wire; 3] = [Wire::Anthropic, Wire::OpenAi, Wire::Ollama];

/// A tool call the scripted model makes.
#[derive(Clone, Debug)]
pub struct ScriptCall {
    pub id: &'static str,
    pub name: &'static str,
    pub args: Value,
}

/// Splits `text` into `n` pieces at character boundaries (so JSON arguments arrive in fragments).
pub fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(n).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Cuts every chunk in two, so frames straddle reads.
fn straddle(chunks: Vec<String>) -> Vec<String> {
    chunks
        .into_iter()
        .flat_map(|c| {
            let mid = c
                .char_indices()
                .nth(c.chars().count() / 2)
                .map_or(0, |(i, _)| i);
            [c[..mid].to_string(), c[mid..].to_string()]
        })
        .filter(|c| !c.is_empty())
        .collect()
}

/// Records the waits a retry policy asks for, without waiting.
pub fn recording_retry(max_retries: u32) -> (RetryPolicy, Arc<Mutex<Vec<Duration>>>) {
    let waits = Arc::new(Mutex::new(Vec::new()));
    let record = waits.clone();
    let policy = RetryPolicy {
        max_retries,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_secs(30),
        sleep: Arc::new(move |d| {
            record.lock().unwrap().push(d);
            Box::pin(async {})
        }),
    };
    (policy, waits)
}

impl Wire {
    pub fn provider(self, url: &str, retry: RetryPolicy) -> Arc<dyn Provider> {
        match self {
            Wire::Anthropic => Arc::new(Anthropic::new(Some(url), "test-key").with_retry(retry)),
            Wire::OpenAi => Arc::new(
                OpenAi::new(Some(&format!("{url}/v1")), Some("test-key".into())).with_retry(retry),
            ),
            Wire::Ollama => Arc::new(Ollama::new(Some(url)).with_retry(retry)),
        }
    }

    /// A runner on this wire's client for `url` (no retries) over `registry` and `db`'s
    /// sessions, on `model` with at most `max_steps` steps, and offered to `subagents` as the
    /// runner their children, advisors and image analyses use.
    pub fn runner(
        self,
        url: &str,
        registry: &osprey_tools::Registry,
        db: &osprey_db::Database,
        subagents: &SubAgents,
        model: &str,
        max_steps: u32,
    ) -> Runner {
        let (retry, _) = recording_retry(0);
        let runner = Runner::new(
            self.provider(url, retry),
            registry.clone(),
            db.sessions(),
            RunnerConfig {
                model: model.into(),
                max_steps,
                identity: "You are a test agent.".into(),
                ..RunnerConfig::default()
            },
        );
        subagents.set_factory(Arc::new(runner.clone()));
        runner
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Wire::Ollama => NDJSON,
            _ => SSE,
        }
    }

    /// The chunks of a turn: optional text, then tool calls (if any), then the stop.
    pub fn chunks(self, text: &str, calls: &[ScriptCall]) -> Vec<String> {
        straddle(self.frames(text, calls))
    }

    /// One whole frame (SSE event or NDJSON line) per element.
    fn frames(self, text: &str, calls: &[ScriptCall]) -> Vec<String> {
        match self {
            Wire::Anthropic => anthropic(text, calls),
            Wire::OpenAi => openai(text, calls),
            Wire::Ollama => ollama(text, calls),
        }
    }

    pub fn turn(self, text: &str, calls: &[ScriptCall]) -> Reply {
        Reply::Stream {
            content_type: self.content_type(),
            chunks: self.chunks(text, calls),
        }
    }

    /// The first `keep` frames of a text turn, then the stream stalls forever.
    pub fn hang_turn(self, text: &str, keep: usize) -> Reply {
        let mut chunks = self.frames(text, &[]);
        chunks.truncate(keep);
        Reply::Hang {
            content_type: self.content_type(),
            chunks,
        }
    }

    /// The first `keep` frames of a turn and half of the next, then the connection is cut.
    pub fn cut_turn(self, text: &str, keep: usize) -> Reply {
        let mut chunks = straddle(self.frames(text, &[]));
        chunks.truncate(keep * 2 + 1);
        Reply::Cut {
            content_type: self.content_type(),
            chunks,
        }
    }
}

fn anthropic(text: &str, calls: &[ScriptCall]) -> Vec<String> {
    let mut out = vec![
        sse_event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
        ),
        sse_event("ping", json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !text.is_empty() {
        out.push(sse_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in pieces(text, 2) {
            out.push(sse_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        out.push(sse_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ));
        index = 1;
    }
    for call in calls {
        out.push(sse_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
        ));
        for piece in pieces(&call.args.to_string(), 3) {
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
    let stop = if calls.is_empty() {
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

fn openai_chunk(delta: Value, finish: Value) -> String {
    sse_data(json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }))
}

fn openai(text: &str, calls: &[ScriptCall]) -> Vec<String> {
    let mut out = vec![openai_chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in pieces(text, 2).into_iter().filter(|p| !p.is_empty()) {
        out.push(openai_chunk(json!({"content": piece}), Value::Null));
    }
    // Parallel calls: every call starts, then their argument fragments interleave.
    let fragments: Vec<Vec<String>> = calls
        .iter()
        .map(|c| pieces(&c.args.to_string(), 3))
        .collect();
    for (index, call) in calls.iter().enumerate() {
        out.push(openai_chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        ));
    }
    let rounds = fragments.iter().map(Vec::len).max().unwrap_or(0);
    for round in 0..rounds {
        for (index, parts) in fragments.iter().enumerate() {
            if let Some(part) = parts.get(round) {
                out.push(openai_chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
                    Value::Null,
                ));
            }
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out.push(openai_chunk(json!({}), json!(finish)));
    out.push(sse_data(json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [], "usage": {"prompt_tokens": 25, "completion_tokens": 17, "total_tokens": 42},
    })));
    out.push("data: [DONE]\n\n".to_string());
    out
}

fn ollama_line(message: Value, done: bool) -> String {
    let mut line = json!({"model": "llama-test", "created_at": "2026-01-01T00:00:00Z", "message": message, "done": done});
    if done {
        line["done_reason"] = json!("stop");
        line["prompt_eval_count"] = json!(25);
        line["eval_count"] = json!(17);
    }
    ndjson(line)
}

fn ollama(text: &str, calls: &[ScriptCall]) -> Vec<String> {
    let mut out = Vec::new();
    for piece in pieces(text, 2).into_iter().filter(|p| !p.is_empty()) {
        out.push(ollama_line(
            json!({"role": "assistant", "content": piece}),
            false,
        ));
    }
    if !calls.is_empty() {
        let wire: Vec<Value> = calls
            .iter()
            .map(|c| json!({"function": {"name": c.name, "arguments": c.args}}))
            .collect();
        out.push(ollama_line(
            json!({"role": "assistant", "content": "", "tool_calls": wire}),
            false,
        ));
    }
    out.push(ollama_line(
        json!({"role": "assistant", "content": ""}),
        true,
    ));
    out
}

/// The tool names a request offered the model, whatever the wire.
pub fn offered_tools(body: &str) -> Vec<String> {
    let body: Value = serde_json::from_str(body).unwrap();
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["name"]
                        .as_str()
                        .or(t["function"]["name"].as_str())
                        .unwrap()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The schema a request gave for one tool, as text.
pub fn offered_schema(body: &str, tool: &str) -> String {
    let body: Value = serde_json::from_str(body).unwrap();
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool || t["function"]["name"] == tool)
        .map(|t| t.to_string())
        .unwrap_or_else(|| panic!("{tool} not offered"))
}
