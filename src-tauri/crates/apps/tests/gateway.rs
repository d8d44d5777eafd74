//! A gateway app's turns streamed from a real process: text, thinking and tool-call events in
//! order, ending with exactly one `done` or `error`, including when the app forgets to finish.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::time::Duration;

use osprey_apps::gateway::{TurnEvent, stream_turn};
use osprey_rpc::v1::{GatewayMessage, GatewayRequest};
use serde_json::json;

use fixtures::{Apps, fixture_binary};

fn turn(text: &str) -> GatewayRequest {
    GatewayRequest {
        model: "echo-1".into(),
        messages: vec![GatewayMessage {
            role: "user".into(),
            text: text.into(),
            ..GatewayMessage::default()
        }],
        ..GatewayRequest::default()
    }
}

async fn collect(channel: osprey_rpc::AppChannel, text: &str) -> Vec<TurnEvent> {
    let mut events = stream_turn(channel, turn(text), Duration::from_secs(10));
    let mut all = Vec::new();
    while let Some(event) = events.recv().await {
        all.push(event);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_stream_and_always_end_once() {
    let apps = Apps::new();
    apps.install(
        "echo-model",
        &fixture_binary("osprey-fixture-gateway-app"),
        json!({"provides": ["gateway"], "permissions": ["network:api.example.com"]}),
    );
    let app = apps.launcher().launch("echo-model").await.unwrap();
    app.health().await.unwrap();

    let events = collect(app.channel(), "hello there world").await;
    assert_eq!(
        events,
        [
            TurnEvent::Thinking("echoing for echo-1".into()),
            TurnEvent::Text("hello".into()),
            TurnEvent::Text(" there".into()),
            TurnEvent::Text(" world".into()),
            TurnEvent::Done {
                stop_reason: "end_turn".into(),
                input_tokens: 3,
                output_tokens: 3
            },
        ]
    );

    let events = collect(app.channel(), "call a tool").await;
    assert_eq!(
        events[0],
        TurnEvent::ToolCall {
            id: "call-1".into(),
            name: "convert".into(),
            input: json!({"value": 1, "from": "km", "to": "m"})
        }
    );
    assert!(matches!(&events[1], TurnEvent::Done { stop_reason, .. } if stop_reason == "tool_use"));

    let events = collect(app.channel(), "fail").await;
    assert_eq!(
        events,
        [TurnEvent::Error {
            code: "rate_limited".into(),
            message: "slow down".into()
        }]
    );
    let events = collect(app.channel(), "forget").await;
    assert_eq!(events.len(), 1);
    assert!(matches!(&events[0], TurnEvent::Error { code, .. } if code == "gateway_incomplete"));

    app.stop().await;
    let events = collect(
        apps.launcher()
            .launch("echo-model")
            .await
            .unwrap()
            .channel(),
        "x",
    )
    .await;
    assert!(matches!(events.last(), Some(TurnEvent::Done { .. })));
}
