//! The Anthropic Messages API (`POST /v1/messages`, `stream: true`, server-sent events).

use std::collections::BTreeSet;

use futures::future::BoxFuture;
use osprey_types::ContentBlock;
use serde_json::{Value, json};

use super::decode::{Decoder, SseFrame, disconnected, drive, sse_frames};
use super::{EventStream, Provider, RetryPolicy, send};
use crate::message::{ChatRequest, Message, Part, StopReason, StreamEvent, Usage};
use crate::{Error, Result};

/// The API version header this client speaks.
pub const API_VERSION: &str = "2023-06-01";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// An Anthropic client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Anthropic {
    client: reqwest::Client,
    base_url: String,
    api_key: String,
    retry: RetryPolicy,
}

impl Anthropic {
    /// `base_url` without the `/v1/messages` path (default [`DEFAULT_BASE_URL`]).
    pub fn new(base_url: Option<&str>, api_key: impl Into<String>) -> Self {
        Anthropic {
            client: reqwest::Client::new(),
            base_url: base_url
                .unwrap_or(DEFAULT_BASE_URL)
                .trim_end_matches('/')
                .to_string(),
            api_key: api_key.into(),
            retry: RetryPolicy::default(),
        }
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The request body for `request`.
    pub fn body(request: &ChatRequest) -> Value {
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages.iter().map(message).collect::<Vec<_>>(),
            "stream": true,
        });
        if !request.system.is_empty() {
            body["system"] = json!(request.system);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
                .collect();
        }
        body
    }
}

fn image(mime_type: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
}

/// Whether a text block may go: the API refuses empty and whitespace-only ones, and a model's
/// own answer can hold one (the blank line some models write before a tool call), as can a tool's
/// result.
fn sendable(text: &str) -> bool {
    !text.trim().is_empty()
}

fn message(message: &Message) -> Value {
    let mut content: Vec<Value> = message
        .content
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } if sendable(text) => Some(json!({"type": "text", "text": text})),
            Part::Text { .. } => None,
            Part::Image { mime_type, data } => Some(image(mime_type, data)),
            // Unsigned thinking (from another provider) cannot be sent back: the API checks it.
            Part::Thinking {
                text,
                signature: Some(signature),
            } => Some(json!({"type": "thinking", "thinking": text, "signature": signature})),
            Part::Thinking { .. } => None,
            Part::ToolCall { id, name, input } => {
                Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
            }
            Part::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                let blocks: Vec<Value> = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } if sendable(text) => {
                            Some(json!({"type": "text", "text": text}))
                        }
                        ContentBlock::Text { .. } => None,
                        ContentBlock::Image { mime_type, data } => Some(image(mime_type, data)),
                    })
                    .collect();
                let mut result = json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "is_error": is_error,
                });
                // A result with nothing to say goes without content (an empty text is refused).
                if !blocks.is_empty() {
                    result["content"] = Value::Array(blocks);
                }
                Some(result)
            }
        })
        .collect();
    // Every message but a final assistant one must have content.
    if content.is_empty() {
        content.push(json!({"type": "text", "text": "(nothing)"}));
    }
    json!({"role": message.role.as_str(), "content": content})
}

impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn stream(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream>> {
        Box::pin(async move {
            let body = Self::body(&request);
            let url = format!("{}/v1/messages", self.base_url);
            self.retry
                .run_stream(|| async {
                    let response = send(
                        self.client
                            .post(&url)
                            .header("x-api-key", &self.api_key)
                            .header("anthropic-version", API_VERSION)
                            .header(reqwest::header::ACCEPT, "text/event-stream")
                            .json(&body),
                    )
                    .await?;
                    Ok(drive(sse_frames(response), AnthropicDecoder::default()))
                })
                .await
        })
    }
}

#[derive(Default)]
struct AnthropicDecoder {
    tool_blocks: BTreeSet<u64>,
    stopped: bool,
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        other => StopReason::Other(other.to_string()),
    }
}

fn usage(value: &Value) -> Usage {
    Usage {
        input_tokens: value["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: value["output_tokens"].as_u64().unwrap_or(0),
    }
}

impl Decoder for AnthropicDecoder {
    type Frame = SseFrame;

    fn decode(&mut self, frame: SseFrame, out: &mut Vec<StreamEvent>) -> Result<()> {
        if frame.data.trim().is_empty() {
            return Ok(());
        }
        let data: Value = serde_json::from_str(&frame.data)
            .map_err(|e| Error::Protocol(format!("bad event data ({e}): {}", frame.data)))?;
        let kind = data["type"].as_str().unwrap_or(frame.event.as_str());
        let index = data["index"].as_u64().unwrap_or(0);
        match kind {
            "message_start" => out.push(StreamEvent::Usage(usage(&data["message"]["usage"]))),
            "content_block_start" => {
                let block = &data["content_block"];
                match block["type"].as_str().unwrap_or_default() {
                    "text" => {
                        if let Some(text) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push(StreamEvent::TextDelta(text.to_string()));
                        }
                    }
                    "thinking" => {
                        if let Some(text) = block["thinking"].as_str().filter(|t| !t.is_empty()) {
                            out.push(StreamEvent::ThinkingDelta(text.to_string()));
                        }
                    }
                    "tool_use" => {
                        self.tool_blocks.insert(index);
                        out.push(StreamEvent::ToolCallStart {
                            index: index as usize,
                            id: block["id"].as_str().unwrap_or_default().to_string(),
                            name: block["name"].as_str().unwrap_or_default().to_string(),
                        });
                        // The start block carries `input: {}`; the real input arrives as deltas.
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                let text = |key: &str| delta[key].as_str().unwrap_or_default().to_string();
                match delta["type"].as_str().unwrap_or_default() {
                    "text_delta" => out.push(StreamEvent::TextDelta(text("text"))),
                    "input_json_delta" => out.push(StreamEvent::ToolCallDelta {
                        index: index as usize,
                        json: text("partial_json"),
                    }),
                    "thinking_delta" => out.push(StreamEvent::ThinkingDelta(text("thinking"))),
                    "signature_delta" => {
                        out.push(StreamEvent::ThinkingSignature(text("signature")))
                    }
                    _ => {}
                }
            }
            "content_block_stop" if self.tool_blocks.contains(&index) => {
                out.push(StreamEvent::ToolCallEnd {
                    index: index as usize,
                });
            }
            "message_delta" => {
                if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                    out.push(StreamEvent::Stop(stop_reason(reason)));
                }
                if data.get("usage").is_some() {
                    out.push(StreamEvent::Usage(usage(&data["usage"])));
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let error = &data["error"];
                let message = error["message"].as_str().unwrap_or_default().to_string();
                return Err(match error["type"].as_str().unwrap_or_default() {
                    "overloaded_error" => Error::Overloaded(message),
                    "rate_limit_error" => Error::RateLimited {
                        message,
                        retry_after: None,
                    },
                    "authentication_error" | "permission_error" => Error::Auth(message),
                    _ => Error::Stream(message),
                });
            }
            _ => {} // ping, and event types added later
        }
        Ok(())
    }

    fn complete(&self) -> bool {
        self.stopped
    }

    fn end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<()> {
        if self.stopped {
            Ok(())
        } else {
            Err(disconnected("message_stop"))
        }
    }
}
