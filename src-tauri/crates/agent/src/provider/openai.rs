//! OpenAI Chat Completions (`POST {base}/chat/completions`, `stream: true`, server-sent events).
//! The base URL is configurable, so the same client serves OpenAI, OpenRouter, vLLM, LM Studio,
//! llama.cpp's server and Ollama's OpenAI-compatible endpoint (`http://localhost:11434/v1`).

use std::collections::BTreeSet;

use futures::future::BoxFuture;
use osprey_types::ContentBlock;
use serde_json::{Value, json};

use super::decode::{Decoder, SseFrame, disconnected, drive, sse_frames};
use super::{EventStream, Provider, RetryPolicy, send};
use crate::message::{ChatRequest, Message, Part, Role, StopReason, StreamEvent, Usage};
use crate::{Error, Result};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An OpenAI-compatible client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct OpenAi {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    name: String,
    retry: RetryPolicy,
}

impl OpenAi {
    /// `base_url` up to and including the version (`https://api.openai.com/v1`); the key is
    /// optional because local servers need none.
    pub fn new(base_url: Option<&str>, api_key: Option<String>) -> Self {
        OpenAi {
            client: reqwest::Client::new(),
            base_url: base_url
                .unwrap_or(DEFAULT_BASE_URL)
                .trim_end_matches('/')
                .to_string(),
            api_key: api_key.filter(|k| !k.is_empty()),
            name: "openai".into(),
            retry: RetryPolicy::default(),
        }
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The request body for `request`. OpenAI itself wants `max_completion_tokens` (its reasoning
    /// models refuse `max_tokens`); compatible servers know `max_tokens`.
    pub fn body(&self, request: &ChatRequest) -> Value {
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for message in &request.messages {
            push_message(&mut messages, message);
        }
        let mut body = json!({
            "model": request.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let limit = if self.base_url == DEFAULT_BASE_URL {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[limit] = json!(request.max_tokens);
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
                .collect();
        }
        body
    }
}

fn image_url(mime_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

/// Appends the wire messages for one of ours. Tool results become `tool` messages; since those
/// carry only text, their images follow in one `user` message.
fn push_message(out: &mut Vec<Value>, message: &Message) {
    match message.role {
        Role::Assistant => {
            let text = message.text();
            let calls: Vec<Value> = message
                .tool_calls()
                .map(|(id, name, input)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}})
                })
                .collect();
            let mut wire = json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) },
            });
            if !calls.is_empty() {
                wire["tool_calls"] = json!(calls);
            }
            out.push(wire);
        }
        Role::User => {
            let mut parts = Vec::new();
            let mut result_images = Vec::new();
            for part in &message.content {
                match part {
                    Part::Text { text } => parts.push(json!({"type": "text", "text": text})),
                    Part::Image { mime_type, data } => parts.push(image_url(mime_type, data)),
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                    } => {
                        let mut text = String::new();
                        if *is_error {
                            text.push_str("Error: ");
                        }
                        for block in content {
                            match block {
                                ContentBlock::Text { text: t } => {
                                    if !text.is_empty() && !text.ends_with(' ') {
                                        text.push('\n');
                                    }
                                    text.push_str(t);
                                }
                                ContentBlock::Image { mime_type, data } => {
                                    result_images.push(image_url(mime_type, data))
                                }
                            }
                        }
                        out.push(json!({"role": "tool", "tool_call_id": call_id, "content": text}));
                    }
                    Part::Thinking { .. } | Part::ToolCall { .. } => {}
                }
            }
            if !result_images.is_empty() {
                let mut content = vec![
                    json!({"type": "text", "text": "Images returned by the tool calls above:"}),
                ];
                content.extend(result_images);
                out.push(json!({"role": "user", "content": content}));
            }
            if !parts.is_empty() {
                let content = if parts.iter().all(|p| p["type"] == "text") {
                    json!(
                        parts
                            .iter()
                            .filter_map(|p| p["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("\n")
                    )
                } else {
                    json!(parts)
                };
                out.push(json!({"role": "user", "content": content}));
            }
        }
    }
}

impl Provider for OpenAi {
    fn name(&self) -> &str {
        &self.name
    }

    fn stream(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream>> {
        Box::pin(async move {
            let body = self.body(&request);
            let url = format!("{}/chat/completions", self.base_url);
            self.retry
                .run_stream(|| async {
                    let mut builder = self
                        .client
                        .post(&url)
                        .header(reqwest::header::ACCEPT, "text/event-stream")
                        .json(&body);
                    if let Some(key) = &self.api_key {
                        builder = builder.bearer_auth(key);
                    }
                    let response = send(builder).await?;
                    Ok(drive(sse_frames(response), OpenAiDecoder::default()))
                })
                .await
        })
    }
}

#[derive(Default)]
struct OpenAiDecoder {
    /// Tool call indices started and not yet ended.
    open_calls: BTreeSet<usize>,
    finished: bool,
    done: bool,
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_string()),
    }
}

impl Decoder for OpenAiDecoder {
    type Frame = SseFrame;

    fn decode(&mut self, frame: SseFrame, out: &mut Vec<StreamEvent>) -> Result<()> {
        let data = frame.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| Error::Protocol(format!("bad chunk ({e}): {data}")))?;
        if let Some(error) = chunk.get("error") {
            let message = error["message"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| error.to_string());
            let kind = [&error["type"], &error["code"]]
                .iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            // Overload and rate limits said mid-stream are retried like their HTTP statuses.
            return Err(if kind.contains("rate_limit") {
                Error::RateLimited {
                    message,
                    retry_after: None,
                }
            } else if ["overloaded", "server_error", "service_unavailable"]
                .iter()
                .any(|k| kind.contains(k))
            {
                Error::Overloaded(message)
            } else {
                Error::Stream(message)
            });
        }
        if let Some(choice) = chunk["choices"].get(0) {
            let delta = &choice["delta"];
            for key in ["reasoning_content", "reasoning"] {
                if let Some(text) = delta[key].as_str().filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::ThinkingDelta(text.to_string()));
                }
            }
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                out.push(StreamEvent::TextDelta(text.to_string()));
            }
            if let Some(calls) = delta["tool_calls"].as_array() {
                for (position, call) in calls.iter().enumerate() {
                    let index = call["index"].as_u64().map_or(position, |i| i as usize);
                    if self.open_calls.insert(index) {
                        out.push(StreamEvent::ToolCallStart {
                            index,
                            id: call["id"]
                                .as_str()
                                .map(String::from)
                                .unwrap_or_else(super::fresh_call_id),
                            name: call["function"]["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                        });
                    }
                    if let Some(args) = call["function"]["arguments"]
                        .as_str()
                        .filter(|a| !a.is_empty())
                    {
                        out.push(StreamEvent::ToolCallDelta {
                            index,
                            json: args.to_string(),
                        });
                    }
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                for index in std::mem::take(&mut self.open_calls) {
                    out.push(StreamEvent::ToolCallEnd { index });
                }
                out.push(StreamEvent::Stop(stop_reason(reason)));
                self.finished = true;
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            out.push(StreamEvent::Usage(Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
            }));
        }
        Ok(())
    }

    fn complete(&self) -> bool {
        self.done
    }

    fn end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<()> {
        // Some compatible servers omit `[DONE]`; a finish reason is enough to call it complete.
        if self.done || self.finished {
            Ok(())
        } else {
            Err(disconnected("finish_reason"))
        }
    }
}
