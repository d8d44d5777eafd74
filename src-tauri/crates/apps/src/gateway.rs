//! A gateway app's model turns, as Osprey consumes them: the gRPC stream turned into
//! [`TurnEvent`]s on a channel, ending with exactly one `Done` or `Error` whatever the app does
//! (a stream that stops early, a silent app, a malformed tool call). Core adapts this into the
//! agent's model provider; this crate does not know the agent.

use std::time::Duration;

use osprey_rpc::AppChannel;
use osprey_rpc::v1::GatewayRequest;
use osprey_rpc::v1::gateway_event::Event;
use osprey_rpc::v1::gateway_service_client::GatewayServiceClient;
use serde_json::Value;
use tokio::sync::mpsc;

/// One event of a model turn.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnEvent {
    Text(String),
    Thinking(String),
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    Done {
        stop_reason: String,
        input_tokens: u64,
        output_tokens: u64,
    },
    Error {
        code: String,
        message: String,
    },
}

impl TurnEvent {
    fn error(code: &str, message: impl Into<String>) -> TurnEvent {
        TurnEvent::Error {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// Starts a turn. Events arrive on the returned channel; a gap longer than `idle_timeout`
/// between events ends the turn with a `timeout` error. Dropping the receiver cancels the call.
pub fn stream_turn(
    channel: AppChannel,
    request: GatewayRequest,
    idle_timeout: Duration,
) -> mpsc::Receiver<TurnEvent> {
    let (sender, receiver) = mpsc::channel(64);
    tokio::spawn(async move {
        let last = run_turn(channel, request, idle_timeout, &sender).await;
        let _ = sender.send(last).await;
    });
    receiver
}

/// Forwards events until the end, and returns the final `Done` or `Error`.
async fn run_turn(
    channel: AppChannel,
    request: GatewayRequest,
    idle_timeout: Duration,
    sender: &mpsc::Sender<TurnEvent>,
) -> TurnEvent {
    let mut client = GatewayServiceClient::new(channel);
    let mut stream = match tokio::time::timeout(idle_timeout, client.stream(request)).await {
        Err(_) => return TurnEvent::error("timeout", "the gateway did not start the turn"),
        Ok(Err(status)) => return TurnEvent::error("unavailable", status.message()),
        Ok(Ok(response)) => response.into_inner(),
    };
    loop {
        let message = match tokio::time::timeout(idle_timeout, stream.message()).await {
            Err(_) => return TurnEvent::error("timeout", "the gateway went quiet mid-turn"),
            Ok(Err(status)) => return TurnEvent::error("unavailable", status.message()),
            Ok(Ok(None)) => {
                return TurnEvent::error("gateway_incomplete", "the stream ended without `done`");
            }
            Ok(Ok(Some(message))) => message,
        };
        let event = match message.event {
            None => continue,
            Some(Event::Text(text)) => TurnEvent::Text(text),
            Some(Event::Thinking(text)) => TurnEvent::Thinking(text),
            Some(Event::ToolCall(call)) => match serde_json::from_str::<Value>(&call.input_json) {
                Ok(input) if input.is_object() => TurnEvent::ToolCall {
                    id: call.id,
                    name: call.name,
                    input,
                },
                _ => {
                    return TurnEvent::error(
                        "bad_response",
                        format!("tool call `{}` has no JSON object input", call.name),
                    );
                }
            },
            Some(Event::Done(done)) => {
                return TurnEvent::Done {
                    stop_reason: done.stop_reason,
                    input_tokens: done.input_tokens,
                    output_tokens: done.output_tokens,
                };
            }
            Some(Event::Error(error)) => {
                return TurnEvent::Error {
                    code: error.code,
                    message: error.message,
                };
            }
        };
        if sender.send(event).await.is_err() {
            // Nobody listens any more: dropping the stream cancels the call.
            return TurnEvent::error("cancelled", "the turn was cancelled");
        }
    }
}
