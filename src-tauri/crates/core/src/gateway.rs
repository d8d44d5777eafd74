//! An installed app that provides `gateway` as a model provider: the agent's request becomes a
//! `GatewayRequest`, the app's event stream becomes the agent's stream events. The agent and the
//! app platform do not know each other; this adapter is where they meet.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use osprey_agent::message::{ChatRequest, Part, Role, StopReason, StreamEvent, Usage};
use osprey_agent::{Error, EventStream, Provider};
use osprey_apps::gateway::{TurnEvent, stream_turn};
use osprey_apps::supervisor::Supervisor;
use osprey_rpc::v1::{GatewayMessage, GatewayRequest, ToolCall, ToolDefinition};
use tokio_stream::wrappers::ReceiverStream;

/// How long a turn may go without an event from the app.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the first call waits for the app to become healthy (it may still be starting).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The model provider an app's gateway offers.
#[derive(Clone)]
pub struct GatewayProvider {
    app_id: String,
    apps_dir: PathBuf,
    supervisor: Supervisor,
}

impl GatewayProvider {
    pub fn new(
        app_id: impl Into<String>,
        apps_dir: &Path,
        supervisor: Supervisor,
    ) -> GatewayProvider {
        GatewayProvider {
            app_id: app_id.into(),
            apps_dir: apps_dir.to_path_buf(),
            supervisor,
        }
    }

    /// The app's channel once it runs; an error naming the app when it does not come up.
    async fn channel(&self) -> Result<osprey_rpc::AppChannel, Error> {
        // Not installed: say so now rather than after waiting for a launch that cannot come.
        if !self
            .apps_dir
            .join(&self.app_id)
            .join(osprey_apps::napp::MANIFEST)
            .is_file()
        {
            return Err(Error::Config(format!(
                "no app `{}` is installed (`osprey app list` shows the apps)",
                self.app_id
            )));
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            match self.supervisor.channel(&self.app_id).await {
                Ok(Some((manifest, channel))) => {
                    if !manifest
                        .provides
                        .contains(&osprey_apps::Capability::Gateway)
                    {
                        return Err(Error::Config(format!(
                            "the app `{}` does not provide a gateway",
                            self.app_id
                        )));
                    }
                    return Ok(channel);
                }
                // Launching, or the supervisor itself is still starting (`start_apps` returns
                // before it runs): ask again in a moment.
                Ok(None) | Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok(None) => {
                    return Err(Error::Config(format!(
                        "the gateway app `{}` is not running (is it installed? `osprey app list` shows the apps)",
                        self.app_id
                    )));
                }
                Err(err) => {
                    return Err(Error::Config(format!(
                        "the app platform is not running: {err}"
                    )));
                }
            }
        }
    }
}

/// The agent's conversation in the gateway protocol's terms. Images have no place in the
/// protocol yet, so they are named in the text instead of silently vanishing.
pub fn gateway_request(request: &ChatRequest) -> GatewayRequest {
    let mut messages = Vec::new();
    for message in &request.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for part in &message.content {
            match part {
                Part::Text { text: t } => text.push_str(t),
                Part::Image { mime_type, .. } => {
                    text.push_str(&format!("[an image ({mime_type}) is not shown]"))
                }
                Part::Thinking { .. } => {}
                Part::ToolCall { id, name, input } => tool_calls.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    input_json: input.to_string(),
                }),
                Part::ToolResult {
                    call_id,
                    content,
                    is_error,
                } => messages.push(GatewayMessage {
                    role: "tool".into(),
                    text: osprey_types::ToolResult {
                        content: content.clone(),
                        is_error: *is_error,
                        code: None,
                        ..Default::default()
                    }
                    .text_content(),
                    tool_calls: Vec::new(),
                    tool_call_id: call_id.clone(),
                    is_error: *is_error,
                }),
            }
        }
        if !text.is_empty() || !tool_calls.is_empty() {
            messages.push(GatewayMessage {
                role: role.into(),
                text,
                tool_calls,
                tool_call_id: String::new(),
                is_error: false,
            });
        }
    }
    GatewayRequest {
        model: request.model.clone(),
        system: request.system.clone(),
        messages,
        tools: request
            .tools
            .iter()
            .map(|tool| ToolDefinition {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema_json: tool.input_schema.to_string(),
            })
            .collect(),
        max_tokens: request.max_tokens,
        temperature: None,
    }
}

/// An app's error code as the agent classifies provider errors, so retries and messages work
/// the same as for the built-in providers.
fn classify(code: &str, message: String) -> Error {
    match code {
        "auth" | "unauthenticated" => Error::Auth(message),
        "rate_limited" => Error::RateLimited {
            message,
            retry_after: None,
        },
        "overloaded" => Error::Overloaded(message),
        "context_too_long" => Error::ContextTooLong(message),
        "timeout" | "unavailable" => Error::Network(message),
        _ => Error::Stream(format!("{code}: {message}")),
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop" | "" => StopReason::EndTurn,
        "tool_use" | "tool_calls" => StopReason::ToolUse,
        "max_tokens" | "length" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        other => StopReason::Other(other.to_string()),
    }
}

/// One app event as the agent's stream events (a tool call arrives whole, so it is a start, its
/// whole JSON, and an end).
fn stream_events(event: TurnEvent, next_call: &mut usize) -> Vec<Result<StreamEvent, Error>> {
    match event {
        TurnEvent::Text(text) => vec![Ok(StreamEvent::TextDelta(text))],
        TurnEvent::Thinking(text) => vec![Ok(StreamEvent::ThinkingDelta(text))],
        TurnEvent::ToolCall { id, name, input } => {
            let index = *next_call;
            *next_call += 1;
            vec![
                Ok(StreamEvent::ToolCallStart { index, id, name }),
                Ok(StreamEvent::ToolCallDelta {
                    index,
                    json: input.to_string(),
                }),
                Ok(StreamEvent::ToolCallEnd { index }),
            ]
        }
        TurnEvent::Done {
            stop_reason: reason,
            input_tokens,
            output_tokens,
        } => vec![
            Ok(StreamEvent::Usage(Usage {
                input_tokens,
                output_tokens,
            })),
            Ok(StreamEvent::Stop(stop_reason(&reason))),
        ],
        TurnEvent::Error { code, message } => vec![Err(classify(&code, message))],
    }
}

impl Provider for GatewayProvider {
    fn name(&self) -> &str {
        &self.app_id
    }

    fn stream(&self, request: ChatRequest) -> BoxFuture<'_, osprey_agent::Result<EventStream>> {
        Box::pin(async move {
            let channel = self.channel().await?;
            let events = stream_turn(channel, gateway_request(&request), IDLE_TIMEOUT);
            let mut next_call = 0;
            let stream = ReceiverStream::new(events)
                .flat_map(move |event| futures::stream::iter(stream_events(event, &mut next_call)));
            Ok(stream.boxed())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use osprey_agent::message::{Message, ToolSpec};
    use osprey_types::ContentBlock;
    use serde_json::json;

    #[test]
    fn the_conversation_maps_onto_the_gateway_protocol() {
        let request = ChatRequest {
            model: "echo".into(),
            system: "be brief".into(),
            messages: vec![
                Message {
                    role: Role::User,
                    content: vec![Part::Text {
                        text: "convert 1 km".into(),
                    }],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Part::Thinking {
                            text: "hm".into(),
                            signature: None,
                        },
                        Part::ToolCall {
                            id: "c1".into(),
                            name: "convert".into(),
                            input: json!({"value": 1}),
                        },
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![Part::ToolResult {
                        call_id: "c1".into(),
                        content: vec![ContentBlock::Text {
                            text: "1000 m".into(),
                        }],
                        is_error: false,
                    }],
                },
            ],
            tools: vec![ToolSpec {
                name: "convert".into(),
                description: "units".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: 100,
        };
        let mapped = gateway_request(&request);
        assert_eq!(mapped.system, "be brief");
        let roles: Vec<&str> = mapped.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool"]);
        assert_eq!(
            mapped.messages[1].tool_calls[0].input_json,
            r#"{"value":1}"#
        );
        assert_eq!(mapped.messages[2].tool_call_id, "c1");
        assert_eq!(mapped.messages[2].text, "1000 m");
        assert_eq!(mapped.tools[0].input_schema_json, r#"{"type":"object"}"#);
    }

    #[test]
    fn app_errors_are_classified_like_provider_errors() {
        assert!(classify("rate_limited", "x".into()).is_retryable());
        assert_eq!(classify("auth", "x".into()).code(), "auth");
        assert_eq!(classify("unavailable", "x".into()).code(), "network");
        assert_eq!(classify("gateway_incomplete", "x".into()).code(), "stream");
    }
}
