//! Ollama's native chat API (`POST {base}/api/chat`, newline-delimited JSON). Tool calls arrive
//! whole (arguments as an object) and without ids, so ids are made up here and tool results are
//! matched back by the tool's name.
//!
//! Ollama cuts a prompt longer than `options.num_ctx` from the front without a word, and its
//! default is small (2,048 to 8,192 tokens depending on the version), far below Osprey's system
//! prompt and tools. So every request sets `num_ctx` to fit what is sent plus the reply, rounded
//! up, within the model's own window, which is read once per model from `POST /api/show`
//! (`model_info.<architecture>.context_length`) and, with [`Ollama::with_known_windows`], kept
//! in the database per server and model, so a new process does not ask again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use osprey_types::ContentBlock;
use serde_json::{Value, json};

use super::decode::{Decoder, disconnected, drive, ndjson_lines};
use super::{EventStream, Provider, RetryPolicy, send};
use crate::message::{ChatRequest, Part, Role, StopReason, StreamEvent, Usage};
use crate::{Error, Result};

pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

/// An Ollama client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Ollama {
    client: reqwest::Client,
    base_url: String,
    retry: RetryPolicy,
    /// Each model's window from `/api/show` (`None`: the server could not say).
    windows: Arc<Mutex<HashMap<String, Option<u64>>>>,
    /// Where learned windows outlive this process.
    known: Option<osprey_db::ModelWindows>,
}

/// The smallest `num_ctx` Osprey asks for, and the step it rounds up to.
const NUM_CTX_STEP: u64 = 4096;
/// The largest `num_ctx` asked for when the model's window is unknown.
const NUM_CTX_UNKNOWN_CAP: u64 = 32_768;

impl Ollama {
    pub fn new(base_url: Option<&str>) -> Self {
        Ollama {
            client: reqwest::Client::new(),
            base_url: base_url
                .unwrap_or(DEFAULT_BASE_URL)
                .trim_end_matches('/')
                .to_string(),
            retry: RetryPolicy::default(),
            windows: Arc::default(),
            known: None,
        }
    }

    /// Keeps each model's window in `known` once learned, and reads it from there before asking
    /// the server.
    pub fn with_known_windows(mut self, known: osprey_db::ModelWindows) -> Self {
        self.known = Some(known);
        self
    }

    /// The model's window: learned earlier (in this process, else in the database), else from
    /// `POST /api/show`, asked once per model.
    async fn window(&self, model: &str) -> Option<u64> {
        if let Some(known) = self
            .windows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(model)
        {
            return *known;
        }
        let stored = self.known.as_ref().and_then(|known| {
            known
                .get("ollama", &self.base_url, model)
                .unwrap_or_else(|error| {
                    tracing::warn!(%error, "reading a learned context window");
                    None
                })
        });
        if let Some(window) = stored {
            self.remember(model, Some(window));
            return Some(window);
        }
        let window = async {
            let response = self
                .client
                .post(format!("{}/api/show", self.base_url))
                .timeout(std::time::Duration::from_secs(5))
                .json(&json!({"model": model}))
                .send()
                .await
                .ok()?;
            if !response.status().is_success() {
                return None;
            }
            let body: Value = response.json().await.ok()?;
            body["model_info"]
                .as_object()?
                .iter()
                .find(|(key, _)| key.ends_with(".context_length"))
                .and_then(|(_, value)| value.as_u64())
        }
        .await;
        // Only a window the server stated is kept: one it could not say may be stated later.
        if let (Some(known), Some(learned)) = (&self.known, window)
            && let Err(error) = known.set("ollama", &self.base_url, model, learned)
        {
            tracing::warn!(%error, "keeping a learned context window");
        }
        self.remember(model, window);
        window
    }

    fn remember(&self, model: &str, window: Option<u64>) {
        self.windows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(model.to_string(), window);
    }

    /// `num_ctx` for a request: what is sent plus the reply, with a margin for the estimate's
    /// error, rounded up to 4,096; within the model's window when known, else at most 32,768.
    pub fn num_ctx(request: &ChatRequest, window: Option<u64>) -> u64 {
        let images = crate::runner::tokens::ImageCost::for_provider("ollama");
        let prompt = crate::runner::tokens::request_tokens(request, images);
        let wanted = prompt + prompt / 5 + u64::from(request.max_tokens);
        let rounded = wanted.div_ceil(NUM_CTX_STEP).max(1) * NUM_CTX_STEP;
        rounded.min(window.unwrap_or(NUM_CTX_UNKNOWN_CAP).max(NUM_CTX_STEP))
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The models installed on the Ollama server answering at `base_url` (the default port
    /// when `None`) within `timeout` (`GET /api/tags`), or `None` when nothing answers: how
    /// "local first" finds a server, and a model on it, to offer.
    pub async fn installed_models(
        base_url: Option<&str>,
        timeout: std::time::Duration,
    ) -> Option<Vec<String>> {
        let base = base_url.unwrap_or(DEFAULT_BASE_URL).trim_end_matches('/');
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .no_proxy()
            .build()
            .ok()?;
        let response = client.get(format!("{base}/api/tags")).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body: Value = response.json().await.ok()?;
        let models = body["models"].as_array()?;
        Some(
            models
                .iter()
                .filter_map(|m| m["name"].as_str().map(String::from))
                .collect(),
        )
    }

    /// The request body for `request`.
    pub fn body(request: &ChatRequest) -> Value {
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        let mut names: HashMap<&str, &str> = HashMap::new();
        for message in &request.messages {
            let mut text = String::new();
            let mut images = Vec::new();
            let mut calls = Vec::new();
            for part in &message.content {
                match part {
                    Part::Text { text: t } => text.push_str(t),
                    Part::Image { data, .. } => images.push(json!(data)),
                    Part::Thinking { .. } => {}
                    Part::ToolCall { id, name, input } => {
                        names.insert(id, name);
                        calls.push(json!({"function": {"name": name, "arguments": input}}));
                    }
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                    } => {
                        let mut result = String::new();
                        if *is_error {
                            result.push_str("Error: ");
                        }
                        let mut result_images = Vec::new();
                        for block in content {
                            match block {
                                ContentBlock::Text { text } => result.push_str(text),
                                ContentBlock::Image { data, .. } => result_images.push(json!(data)),
                            }
                        }
                        let mut wire = json!({"role": "tool", "content": result});
                        if let Some(name) = names.get(call_id.as_str()) {
                            wire["tool_name"] = json!(name);
                        }
                        if !result_images.is_empty() {
                            wire["images"] = json!(result_images);
                        }
                        messages.push(wire);
                    }
                }
            }
            if text.is_empty() && images.is_empty() && calls.is_empty() {
                continue;
            }
            let mut wire = json!({"role": message.role.as_str(), "content": text});
            if !images.is_empty() {
                wire["images"] = json!(images);
            }
            if !calls.is_empty() && message.role == Role::Assistant {
                wire["tool_calls"] = json!(calls);
            }
            messages.push(wire);
        }
        let mut body = json!({
            "model": request.model,
            "messages": messages,
            "stream": true,
            "options": {"num_predict": request.max_tokens},
        });
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

impl Provider for Ollama {
    fn name(&self) -> &str {
        "ollama"
    }

    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u64>> {
        Box::pin(self.window(model))
    }

    fn stream(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream>> {
        Box::pin(async move {
            let mut body = Self::body(&request);
            let window = self.window(&request.model).await;
            body["options"]["num_ctx"] = json!(Self::num_ctx(&request, window));
            let url = format!("{}/api/chat", self.base_url);
            self.retry
                .run_stream(|| async {
                    let response = send(self.client.post(&url).json(&body)).await?;
                    Ok(drive(ndjson_lines(response), OllamaDecoder::default()))
                })
                .await
        })
    }
}

#[derive(Default)]
struct OllamaDecoder {
    calls: usize,
    done: bool,
}

impl Decoder for OllamaDecoder {
    type Frame = String;

    fn decode(&mut self, line: String, out: &mut Vec<StreamEvent>) -> Result<()> {
        let chunk: Value = serde_json::from_str(&line)
            .map_err(|e| Error::Protocol(format!("bad line ({e}): {line}")))?;
        if let Some(error) = chunk["error"].as_str() {
            return Err(Error::Stream(error.to_string()));
        }
        let message = &chunk["message"];
        if let Some(text) = message["thinking"].as_str().filter(|t| !t.is_empty()) {
            out.push(StreamEvent::ThinkingDelta(text.to_string()));
        }
        if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
            out.push(StreamEvent::TextDelta(text.to_string()));
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let index = self.calls;
            self.calls += 1;
            let function = &call["function"];
            let arguments = match &function["arguments"] {
                // Some builds send the arguments as a JSON string.
                Value::String(text) => text.clone(),
                Value::Null => "{}".to_string(),
                other => other.to_string(),
            };
            out.push(StreamEvent::ToolCallStart {
                index,
                id: call["id"]
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(super::fresh_call_id),
                name: function["name"].as_str().unwrap_or_default().to_string(),
            });
            out.push(StreamEvent::ToolCallDelta {
                index,
                json: arguments,
            });
            out.push(StreamEvent::ToolCallEnd { index });
        }
        if chunk["done"].as_bool() == Some(true) {
            self.done = true;
            out.push(StreamEvent::Usage(Usage {
                input_tokens: chunk["prompt_eval_count"].as_u64().unwrap_or(0),
                output_tokens: chunk["eval_count"].as_u64().unwrap_or(0),
            }));
            // Ollama says `stop` even when it called tools.
            let reason = match chunk["done_reason"].as_str().unwrap_or("stop") {
                _ if self.calls > 0 => StopReason::ToolUse,
                "stop" => StopReason::EndTurn,
                "length" => StopReason::MaxTokens,
                other => StopReason::Other(other.to_string()),
            };
            out.push(StreamEvent::Stop(reason));
        }
        Ok(())
    }

    fn complete(&self) -> bool {
        self.done
    }

    fn end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<()> {
        if self.done {
            Ok(())
        } else {
            Err(disconnected("`done: true` line"))
        }
    }
}
