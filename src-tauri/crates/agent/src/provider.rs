//! The model provider trait and what the three wire formats share: error classification from
//! HTTP statuses, bounded retries with backoff (the sleep is injectable so tests never wait), and
//! the [`Assembler`] that turns a stream of events back into a message.

pub mod anthropic;
mod decode;
pub mod ollama;
pub mod openai;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::message::{ChatRequest, Message, Part, Role, StopReason, StreamEvent, Usage};
use crate::{Error, Result};

/// A stream of events for one model call; an `Err` item ends it.
pub type EventStream = BoxStream<'static, Result<StreamEvent>>;

/// A model provider: one streaming call per step of a turn.
pub trait Provider: Send + Sync {
    /// A short name (`anthropic`, `openai`, `ollama`, or an app's id).
    fn name(&self) -> &str;
    /// Sends the request; resolves once the response has started (retrying failures that are
    /// worth retrying), then streams its events.
    fn stream(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream>>;
    /// The model's context window as the server reports it (Ollama's `/api/show`), when it can
    /// say; the runner prefers it to guessing from the model's name.
    fn context_window<'a>(&'a self, _model: &'a str) -> BoxFuture<'a, Option<u64>> {
        Box::pin(async { None })
    }
}

/// How long to wait between attempts. Injected so tests can record the waits instead of sleeping.
pub type Sleeper = Arc<dyn Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync>;

/// Bounded retries with exponential backoff; a server's `retry-after` wins when present (capped).
#[derive(Clone)]
pub struct RetryPolicy {
    /// Attempts after the first.
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub sleep: Sleeper,
}

impl std::fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_retries", &self.max_retries)
            .field("base_delay", &self.base_delay)
            .field("max_delay", &self.max_delay)
            .finish_non_exhaustive()
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
            sleep: Arc::new(|d| Box::pin(tokio::time::sleep(d))),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (0-based) after `error`.
    pub fn delay(&self, attempt: u32, error: &Error) -> Duration {
        let backoff = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.min(16)));
        let wanted = match error {
            Error::RateLimited {
                retry_after: Some(after),
                ..
            } => *after,
            _ => backoff,
        };
        wanted.min(self.max_delay)
    }

    /// Runs `attempt` until it succeeds, fails with an error not worth retrying, or the retries
    /// run out.
    pub async fn run<T, F, Fut>(&self, mut attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut tries = 0;
        loop {
            match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) if error.is_retryable() && tries < self.max_retries => {
                    let wait = self.delay(tries, &error);
                    tracing::debug!(%error, ?wait, tries, "retrying the model call");
                    (self.sleep)(wait).await;
                    tries += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

impl RetryPolicy {
    /// Starts a streamed call with `start` and waits for its first output (text, thinking or a
    /// tool call). A retryable failure before that, whether the request failed or the stream
    /// reported one (Anthropic's mid-stream `overloaded_error`, an OpenAI-compatible server's
    /// error chunk), starts the call again with the same backoff and budget as a 529: nothing
    /// was shown yet. Once output has arrived, errors pass through to the runner.
    pub async fn run_stream<F, Fut>(&self, mut start: F) -> Result<EventStream>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<EventStream>>,
    {
        use futures::StreamExt;
        self.run(|| {
            let started = start();
            async move {
                let mut stream = started.await?;
                let mut head = Vec::new();
                while let Some(item) = stream.next().await {
                    let event = item?;
                    let output = !matches!(event, StreamEvent::Usage(_));
                    head.push(Ok(event));
                    if output {
                        break;
                    }
                }
                Ok(futures::stream::iter(head).chain(stream).boxed())
            }
        })
        .await
    }
}

/// A call id for providers that send none (Ollama) or a server that left it out: unique across
/// sessions and restarts, since tool results are matched back by it.
pub(crate) fn fresh_call_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("call_{:x}_{n}", osprey_db::now_ms())
}

/// Classifies a failed HTTP response. `body` is the response text (providers put a JSON error in
/// it); `retry_after` the parsed header.
pub(crate) fn classify_status(status: u16, body: &str, retry_after: Option<Duration>) -> Error {
    let message = error_message(body);
    let lower = message.to_ascii_lowercase();
    let context_too_long = lower.contains("context length")
        || lower.contains("context_length")
        || lower.contains("prompt is too long")
        || lower.contains("too many tokens")
        || lower.contains("maximum context");
    match status {
        401 | 403 => Error::Auth(message),
        429 => Error::RateLimited {
            message,
            retry_after,
        },
        400 | 413 if context_too_long => Error::ContextTooLong(message),
        503 | 529 => Error::Overloaded(message),
        500..=599 => Error::Overloaded(format!("server error {status}: {message}")),
        _ => Error::Api { status, message },
    }
}

/// The human part of an error body: `error.message`, `error` as a string, or the text itself.
fn error_message(body: &str) -> String {
    let text = body.trim();
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let error = value.get("error").unwrap_or(&value);
        if let Some(message) = error.get("message").and_then(Value::as_str) {
            return message.to_string();
        }
        if let Some(message) = error.as_str() {
            return message.to_string();
        }
    }
    let mut text = text.to_string();
    text.truncate(2000);
    text
}

/// `Retry-After` in seconds (the HTTP-date form is rare from model APIs and is ignored).
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// Sends a request and classifies a non-success status or a transport failure.
pub(crate) async fn send(request: reqwest::RequestBuilder) -> Result<reqwest::Response> {
    let response = request.send().await.map_err(network)?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let after = retry_after(response.headers());
    let body = response.text().await.unwrap_or_default();
    Err(classify_status(status.as_u16(), &body, after))
}

pub(crate) fn network(error: reqwest::Error) -> Error {
    // Keep the source chain: "error sending request" alone says nothing.
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    Error::Network(message)
}

/// Rebuilds the assistant message from streamed events.
#[derive(Debug, Default)]
pub struct Assembler {
    parts: Vec<Part>,
    /// Tool calls by stream index: (id, name, argument text), in the order they started.
    calls: BTreeMap<usize, (usize, String, String, String)>,
    pub usage: Usage,
    pub stop: Option<StopReason>,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta(text) => match self.parts.last_mut() {
                Some(Part::Text { text: last }) => last.push_str(text),
                _ => self.parts.push(Part::Text { text: text.clone() }),
            },
            StreamEvent::ThinkingDelta(text) => match self.parts.last_mut() {
                Some(Part::Thinking { text: last, .. }) => last.push_str(text),
                _ => self.parts.push(Part::Thinking {
                    text: text.clone(),
                    signature: None,
                }),
            },
            StreamEvent::ThinkingSignature(signature) => {
                if let Some(Part::Thinking { signature: s, .. }) = self
                    .parts
                    .iter_mut()
                    .rev()
                    .find(|p| matches!(p, Part::Thinking { .. }))
                {
                    s.get_or_insert_with(String::new).push_str(signature);
                }
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                let order = self.calls.len();
                self.calls
                    .entry(*index)
                    .or_insert_with(|| (order, id.clone(), name.clone(), String::new()));
            }
            StreamEvent::ToolCallDelta { index, json } => {
                if let Some(call) = self.calls.get_mut(index) {
                    call.3.push_str(json);
                }
            }
            StreamEvent::ToolCallEnd { .. } => {}
            StreamEvent::Usage(usage) => {
                if usage.input_tokens > 0 {
                    self.usage.input_tokens = usage.input_tokens;
                }
                if usage.output_tokens > 0 {
                    self.usage.output_tokens = usage.output_tokens;
                }
            }
            StreamEvent::Stop(reason) => self.stop = Some(reason.clone()),
        }
    }

    /// Text received so far.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The finished message. Arguments that are not a JSON object become an error the runner
    /// reports back to the model as the tool's result.
    pub fn finish(self) -> (Message, Vec<(String, String)>) {
        let mut parts = self.parts;
        let mut bad = Vec::new();
        let mut calls: Vec<_> = self.calls.into_values().collect();
        calls.sort_by_key(|c| c.0);
        for (_, id, name, args) in calls {
            let input = if args.trim().is_empty() {
                Value::Object(Default::default())
            } else {
                match serde_json::from_str::<Value>(&args) {
                    Ok(value @ Value::Object(_)) => value,
                    Ok(_) | Err(_) => {
                        bad.push((
                            id.clone(),
                            format!("the arguments were not a JSON object: {args}"),
                        ));
                        Value::Object(Default::default())
                    }
                }
            };
            parts.push(Part::ToolCall { id, name, input });
        }
        (
            Message {
                role: Role::Assistant,
                content: parts,
            },
            bad,
        )
    }
}
