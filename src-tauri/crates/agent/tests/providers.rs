//! Each provider's real client against a loopback server speaking its wire format: streamed
//! text, parallel tool calls with arguments split across chunks, thinking, images in tool
//! results, error classification, retries with `retry-after`, and a mid-stream disconnect.

#[path = "support/server.rs"]
mod server;
#[path = "support/wire.rs"]
mod wire;

use futures::StreamExt;
use osprey_agent::{
    Assembler, ChatRequest, Error, Message, Part, Role, StopReason, StreamEvent, ToolSpec, Usage,
};
use osprey_types::ContentBlock;
use serde_json::{Value, json};
use server::{Reply, SSE, Server, sse_event};
use std::time::Duration;
use wire::{ALL, ScriptCall, Wire, recording_retry};

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: "test-model".into(),
        system: "You are a test.".into(),
        messages,
        tools: vec![ToolSpec {
            name: "probe".into(),
            description: "A probe".into(),
            input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        }],
        max_tokens: 256,
    }
}

async fn collect(
    wire: Wire,
    url: &str,
    messages: Vec<Message>,
) -> (Vec<StreamEvent>, Option<Error>) {
    let (retry, _) = recording_retry(0);
    let provider = wire.provider(url, retry);
    let mut stream = match provider.stream(request(messages)).await {
        Ok(stream) => stream,
        Err(error) => return (Vec::new(), Some(error)),
    };
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

fn assemble(events: &[StreamEvent]) -> (Message, Usage, Option<StopReason>) {
    let mut assembler = Assembler::new();
    for event in events {
        assembler.push(event);
    }
    let usage = assembler.usage;
    let stop = assembler.stop.clone();
    let (message, bad) = assembler.finish();
    assert!(bad.is_empty(), "{bad:?}");
    (message, usage, stop)
}

#[tokio::test]
async fn each_wire_streams_text_usage_and_stop_reason() {
    for wire in ALL {
        let server = Server::start(vec![wire.turn("Hello there, person.", &[])]).await;
        let (events, error) = collect(wire, &server.url(), vec![Message::user_text("hi")]).await;
        assert!(error.is_none(), "{wire:?}: {error:?}");
        let (message, usage, stop) = assemble(&events);
        assert_eq!(message.text(), "Hello there, person.", "{wire:?}");
        assert_eq!(
            usage,
            Usage {
                input_tokens: 25,
                output_tokens: 17
            },
            "{wire:?}"
        );
        assert_eq!(stop, Some(StopReason::EndTurn), "{wire:?}");
        let seen = server.seen();
        assert_eq!(seen.len(), 1);
        let request = &seen[0];
        match wire {
            Wire::Anthropic => {
                assert_eq!(request.path, "/v1/messages");
                assert_eq!(request.headers["x-api-key"], "test-key");
                assert_eq!(request.headers["anthropic-version"], "2023-06-01");
                assert_eq!(request.body["system"], "You are a test.");
                assert_eq!(request.body["stream"], true);
                assert_eq!(request.body["tools"][0]["input_schema"]["type"], "object");
            }
            Wire::OpenAi => {
                assert_eq!(request.path, "/v1/chat/completions");
                assert_eq!(request.headers["authorization"], "Bearer test-key");
                assert_eq!(request.body["messages"][0]["role"], "system");
                assert_eq!(request.body["messages"][1]["content"], "hi");
                assert_eq!(request.body["tools"][0]["function"]["name"], "probe");
                assert_eq!(request.body["max_tokens"], 256, "compatible servers");
                assert_eq!(request.body["stream_options"]["include_usage"], true);
                let official = osprey_agent::OpenAi::new(None, Some("k".into()))
                    .body(&self::request(vec![Message::user_text("hi")]));
                assert_eq!(official["max_completion_tokens"], 256, "api.openai.com");
                assert!(official.get("max_tokens").is_none());
            }
            Wire::Ollama => {
                assert_eq!(request.path, "/api/chat");
                assert_eq!(request.body["messages"][0]["role"], "system");
                assert_eq!(request.body["tools"][0]["type"], "function");
                assert_eq!(request.body["options"]["num_predict"], 256);
            }
        }
    }
}

#[tokio::test]
async fn each_wire_streams_parallel_tool_calls_with_arguments_split_across_chunks() {
    let calls = [
        ScriptCall {
            id: "call_a",
            name: "probe",
            args: json!({"q": "first question, long enough to split", "n": 1}),
        },
        ScriptCall {
            id: "call_b",
            name: "probe",
            args: json!({"q": "second", "nested": {"list": [1, 2, 3]}}),
        },
    ];
    for wire in ALL {
        let server = Server::start(vec![wire.turn("Checking both.", &calls)]).await;
        let (events, error) = collect(wire, &server.url(), vec![Message::user_text("go")]).await;
        assert!(error.is_none(), "{wire:?}: {error:?}");
        let deltas = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallDelta { .. }))
            .count();
        if wire != Wire::Ollama {
            assert!(deltas >= 4, "{wire:?}: arguments arrive in fragments");
        }
        let (message, _, stop) = assemble(&events);
        assert_eq!(stop, Some(StopReason::ToolUse), "{wire:?}");
        assert_eq!(message.text(), "Checking both.");
        let got: Vec<(&str, &str, &Value)> = message.tool_calls().collect();
        assert_eq!(got.len(), 2, "{wire:?}");
        for (call, (id, name, input)) in calls.iter().zip(got) {
            assert_eq!(name, call.name);
            assert_eq!(input, &call.args, "{wire:?}");
            if wire != Wire::Ollama {
                assert_eq!(id, call.id);
            } else {
                assert!(!id.is_empty());
            }
        }
    }
}

#[tokio::test]
async fn a_429_is_retried_after_the_servers_retry_after() {
    for wire in ALL {
        let server = Server::start(vec![
            Reply::Status {
                status: 429,
                headers: vec![("retry-after", "2".into())],
                body: json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}).to_string(),
            },
            wire.turn("Made it.", &[]),
        ])
        .await;
        let (retry, waits) = recording_retry(3);
        let provider = wire.provider(&server.url(), retry);
        let mut stream = provider
            .stream(request(vec![Message::user_text("hi")]))
            .await
            .unwrap_or_else(|e| panic!("{wire:?}: {e}"));
        let mut assembler = Assembler::new();
        while let Some(event) = stream.next().await {
            assembler.push(&event.unwrap());
        }
        assert_eq!(assembler.text(), "Made it.");
        assert_eq!(*waits.lock().unwrap(), vec![Duration::from_secs(2)]);
        assert_eq!(server.seen().len(), 2);
    }
}

#[tokio::test]
async fn retries_are_bounded_with_exponential_backoff() {
    let overloaded = || Reply::Status {
        status: 529,
        headers: vec![],
        body:
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                .to_string(),
    };
    let server = Server::start(vec![overloaded(), overloaded(), overloaded(), overloaded()]).await;
    let (retry, waits) = recording_retry(2);
    let provider = Wire::Anthropic.provider(&server.url(), retry);
    let error = provider
        .stream(request(vec![Message::user_text("hi")]))
        .await
        .err()
        .expect("fails after the retries");
    assert!(
        matches!(error, Error::Overloaded(ref m) if m == "Overloaded"),
        "{error:?}"
    );
    assert_eq!(
        *waits.lock().unwrap(),
        vec![Duration::from_millis(100), Duration::from_millis(200)]
    );
    assert_eq!(server.seen().len(), 3, "one try and two retries");
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn errors_are_classified_and_only_transient_ones_retried() {
    let cases = [
        (
            401,
            json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
            "auth",
        ),
        (
            400,
            json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}),
            "context_too_long",
        ),
        (
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
            "context_too_long",
        ),
        (404, json!({"error": "model 'nope' not found"}), "api"),
    ];
    for (status, body, code) in cases {
        let server = Server::start(vec![Reply::Status {
            status,
            headers: vec![],
            body: body.to_string(),
        }])
        .await;
        let (retry, waits) = recording_retry(3);
        let provider = Wire::OpenAi.provider(&server.url(), retry);
        let error = provider
            .stream(request(vec![Message::user_text("hi")]))
            .await
            .err()
            .unwrap();
        assert_eq!(error.code(), code, "{status}: {error}");
        assert!(waits.lock().unwrap().is_empty(), "{code} is not retried");
        assert_eq!(server.seen().len(), 1);
    }
    // Nothing listening: a network error, retried.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (retry, waits) = recording_retry(1);
    let error = Wire::Ollama
        .provider(&url, retry)
        .stream(request(vec![Message::user_text("hi")]))
        .await
        .err()
        .unwrap();
    assert_eq!(error.code(), "network", "{error}");
    assert_eq!(waits.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_mid_stream_disconnect_is_a_network_error_after_the_text_so_far() {
    for wire in ALL {
        let text = "This answer will never finish because the line drops";
        let keep = match wire {
            Wire::Anthropic => 4,
            Wire::OpenAi => 2,
            Wire::Ollama => 1,
        };
        let server = Server::start(vec![wire.cut_turn(text, keep)]).await;
        let (events, error) = collect(wire, &server.url(), vec![Message::user_text("hi")]).await;
        let error = error.unwrap_or_else(|| panic!("{wire:?}: the stream must fail"));
        assert_eq!(error.code(), "network", "{wire:?}: {error}");
        let partial: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert!(
            !partial.is_empty() && text.starts_with(&partial) && partial != text,
            "{wire:?}: {partial:?}"
        );
        assert!(!events.iter().any(|e| matches!(e, StreamEvent::Stop(_))));
    }
}

#[tokio::test]
async fn anthropic_thinking_and_its_signature_are_kept() {
    let chunks = vec![
        sse_event(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ),
        sse_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        ),
        sse_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me think"}}),
        ),
        sse_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": " about it."}}),
        ),
        sse_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}}),
        ),
        sse_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        sse_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        ),
        sse_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "42"}}),
        ),
        sse_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        sse_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
        ),
        sse_event("message_stop", json!({"type": "message_stop"})),
    ];
    let server = Server::start(vec![Reply::Stream {
        content_type: SSE,
        chunks,
    }])
    .await;
    let (events, error) = collect(
        Wire::Anthropic,
        &server.url(),
        vec![Message::user_text("?")],
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    let (message, _, _) = assemble(&events);
    assert_eq!(
        message.content,
        vec![
            Part::Thinking {
                text: "Let me think about it.".into(),
                signature: Some("sig==".into())
            },
            Part::Text { text: "42".into() }
        ]
    );
    // Sent back verbatim on the next call.
    let body = osprey_agent::Anthropic::body(&request(vec![message]));
    assert_eq!(body["messages"][0]["content"][0]["type"], "thinking");
    assert_eq!(body["messages"][0]["content"][0]["signature"], "sig==");
}

#[tokio::test]
async fn a_stream_error_event_is_classified() {
    let chunks = vec![
        sse_event(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
        ),
        sse_event(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ];
    let server = Server::start(vec![Reply::Stream {
        content_type: SSE,
        chunks,
    }])
    .await;
    let (_, error) = collect(
        Wire::Anthropic,
        &server.url(),
        vec![Message::user_text("?")],
    )
    .await;
    assert_eq!(error.map(|e| e.code()), Some("overloaded"));
}

/// Anthropic's stream for an answer that starts, and the overloaded error its server sends,
/// optionally after some text.
fn anthropic_overloaded(text_first: Option<&str>) -> Reply {
    let mut chunks = vec![sse_event(
        "message_start",
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
    )];
    if let Some(text) = text_first {
        chunks.push(sse_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
        ));
        chunks.push(sse_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": text}}),
        ));
    }
    chunks.push(sse_event(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    Reply::Stream {
        content_type: SSE,
        chunks,
    }
}

async fn drain(stream: osprey_agent::EventStream) -> (String, Option<Error>) {
    let mut stream = stream;
    let mut text = String::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent::TextDelta(t)) => text.push_str(&t),
            Ok(_) => {}
            Err(error) => return (text, Some(error)),
        }
    }
    (text, None)
}

#[tokio::test]
async fn a_stream_error_before_any_output_is_retried_like_a_529() {
    // Anthropic: the answer's stream opens, then the server is overloaded.
    let server = Server::start(vec![
        anthropic_overloaded(None),
        Wire::Anthropic.turn("Hello after the retry.", &[]),
    ])
    .await;
    let (retry, waits) = recording_retry(2);
    let stream = Wire::Anthropic
        .provider(&server.url(), retry)
        .stream(request(vec![Message::user_text("hi")]))
        .await
        .expect("the retry answers");
    let (text, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text, "Hello after the retry.");
    assert_eq!(server.seen().len(), 2);
    assert_eq!(*waits.lock().unwrap(), vec![Duration::from_millis(100)]);

    // An OpenAI-compatible server's error chunk before any output: the same.
    let error_chunk = Reply::Stream {
        content_type: SSE,
        chunks: vec![server::sse_data(json!({"error": {
            "message": "The server is overloaded", "type": "server_error"}}))],
    };
    let server = Server::start(vec![error_chunk, Wire::OpenAi.turn("Recovered.", &[])]).await;
    let (retry, waits) = recording_retry(2);
    let stream = Wire::OpenAi
        .provider(&server.url(), retry)
        .stream(request(vec![Message::user_text("hi")]))
        .await
        .expect("the retry answers");
    let (text, error) = drain(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text, "Recovered.");
    assert_eq!(waits.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_stream_error_after_output_is_not_retried() {
    let server = Server::start(vec![
        anthropic_overloaded(Some("Half of")),
        Wire::Anthropic.turn("never asked for", &[]),
    ])
    .await;
    let (retry, waits) = recording_retry(2);
    let stream = Wire::Anthropic
        .provider(&server.url(), retry)
        .stream(request(vec![Message::user_text("hi")]))
        .await
        .unwrap();
    let (text, error) = drain(stream).await;
    assert_eq!(text, "Half of");
    assert_eq!(error.map(|e| e.code()), Some("overloaded"));
    assert_eq!(server.seen().len(), 1);
    assert!(waits.lock().unwrap().is_empty());
}

#[tokio::test]
async fn ollama_is_told_a_num_ctx_that_fits_the_prompt_within_the_models_window() {
    let server = Server::start(vec![
        Wire::Ollama.turn("short", &[]),
        Wire::Ollama.turn("long", &[]),
    ])
    .await;
    let (retry, _) = recording_retry(0);
    let provider = Wire::Ollama.provider(&server.url(), retry);
    // A small request: the smallest step, not Ollama's silent default.
    drain(
        provider
            .stream(request(vec![Message::user_text("hi")]))
            .await
            .unwrap(),
    )
    .await;
    // A prompt of about 60,000 tokens: a window that holds it and the reply.
    let long = "word ".repeat(48_000);
    drain(
        provider
            .stream(request(vec![Message::user_text(&long)]))
            .await
            .unwrap(),
    )
    .await;
    let seen = server.seen();
    let small = seen[0].body["options"]["num_ctx"].as_u64().unwrap();
    let large = seen[1].body["options"]["num_ctx"].as_u64().unwrap();
    assert_eq!(small, 4096);
    let estimate = osprey_agent::runner::tokens::request_tokens(
        &request(vec![Message::user_text(&long)]),
        osprey_agent::runner::tokens::ImageCost::for_provider("ollama"),
    );
    assert!(
        large > estimate + 256 && large <= server::OLLAMA_WINDOW,
        "{large} for {estimate}"
    );
    assert_eq!(large % 4096, 0);
    // The window was asked once for the model, and the provider reports it.
    assert_eq!(server.shown().len(), 1);
    assert_eq!(server.shown()[0]["model"], "test-model");
    assert_eq!(
        provider.context_window("test-model").await,
        Some(server::OLLAMA_WINDOW)
    );
    assert_eq!(server.shown().len(), 1);
}

/// A history with a tool call whose result holds text and a screenshot.
fn history_with_image_result() -> Vec<Message> {
    vec![
        Message::user_text("look at the screen"),
        Message {
            role: Role::Assistant,
            content: vec![Part::ToolCall {
                id: "call_1".into(),
                name: "probe".into(),
                input: json!({"q": "screen"}),
            }],
        },
        Message {
            role: Role::User,
            content: vec![Part::ToolResult {
                call_id: "call_1".into(),
                content: vec![
                    ContentBlock::Text {
                        text: "a screenshot".into(),
                    },
                    ContentBlock::Image {
                        mime_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    },
                ],
                is_error: false,
            }],
        },
    ]
}

#[tokio::test]
async fn images_in_tool_results_go_out_in_each_wire_format() {
    for wire in ALL {
        let server = Server::start(vec![wire.turn("I see it.", &[])]).await;
        let (_, error) = collect(wire, &server.url(), history_with_image_result()).await;
        assert!(error.is_none(), "{wire:?}: {error:?}");
        let body = &server.seen()[0].body;
        let messages = body["messages"].as_array().unwrap();
        match wire {
            Wire::Anthropic => {
                let assistant = &messages[1]["content"][0];
                assert_eq!(assistant["type"], "tool_use");
                assert_eq!(assistant["input"], json!({"q": "screen"}));
                let result = &messages[2]["content"][0];
                assert_eq!(result["type"], "tool_result");
                assert_eq!(result["tool_use_id"], "call_1");
                assert_eq!(result["content"][1]["type"], "image");
                assert_eq!(result["content"][1]["source"]["type"], "base64");
                assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
                assert_eq!(result["content"][1]["source"]["data"], "iVBORw0KGgo=");
            }
            Wire::OpenAi => {
                // system, user, assistant (tool_calls), tool, user (the image)
                assert_eq!(messages.len(), 5, "{messages:#?}");
                let call = &messages[2]["tool_calls"][0];
                assert_eq!(call["function"]["arguments"], r#"{"q":"screen"}"#);
                assert_eq!(messages[3]["role"], "tool");
                assert_eq!(messages[3]["tool_call_id"], "call_1");
                assert_eq!(messages[3]["content"], "a screenshot");
                assert_eq!(messages[4]["role"], "user");
                assert_eq!(
                    messages[4]["content"][1]["image_url"]["url"],
                    "data:image/png;base64,iVBORw0KGgo="
                );
            }
            Wire::Ollama => {
                assert_eq!(
                    messages[2]["tool_calls"][0]["function"]["arguments"]["q"],
                    "screen"
                );
                assert_eq!(messages[3]["role"], "tool");
                assert_eq!(messages[3]["tool_name"], "probe");
                assert_eq!(messages[3]["content"], "a screenshot");
                assert_eq!(messages[3]["images"][0], "iVBORw0KGgo=");
            }
        }
    }
}

#[tokio::test]
async fn an_ollama_server_and_its_models_are_found_by_the_tags_endpoint() {
    let server = Server::start(vec![Reply::Status {
        status: 200,
        headers: vec![("content-type", "application/json".into())],
        body: json!({"models": [{"name": "qwen3:0.6b", "size": 1}, {"name": "llama3.2:latest"}]})
            .to_string(),
    }])
    .await;
    let found =
        osprey_agent::Ollama::installed_models(Some(&server.url()), Duration::from_secs(5)).await;
    assert_eq!(
        found,
        Some(vec![
            "qwen3:0.6b".to_string(),
            "llama3.2:latest".to_string()
        ])
    );
    assert_eq!(server.seen()[0].path, "/api/tags");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    assert_eq!(
        osprey_agent::Ollama::installed_models(Some(&closed), Duration::from_secs(5)).await,
        None
    );
}

/// What models and tools really produce, against a loopback Anthropic that refuses what the API
/// refuses: a blank line a model wrote before its tool call, a tool result with only empty text,
/// an answer of only whitespace. Each would be refused at every later request of the session;
/// they go without the blank blocks.
#[tokio::test]
async fn blank_text_from_a_model_or_a_tool_is_not_sent_to_anthropic() {
    use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
    let server = AnthropicServer::start(vec![ScriptedReply::text("fine")]).unwrap();
    let text = |t: &str| Part::Text { text: t.into() };
    let messages = vec![
        Message::user_text("look"),
        Message {
            role: Role::Assistant,
            content: vec![
                text("\n\n"),
                Part::ToolCall {
                    id: "t1".into(),
                    name: "probe".into(),
                    input: json!({"q": "x"}),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![Part::ToolResult {
                call_id: "t1".into(),
                is_error: false,
                content: vec![ContentBlock::Text { text: "".into() }],
            }],
        },
        Message {
            role: Role::Assistant,
            content: vec![text(" \n")],
        },
        Message::user_text("and?"),
    ];
    let (events, error) = collect(Wire::Anthropic, &server.url(), messages).await;
    assert!(error.is_none(), "{error:?}");
    let (answer, _, _) = assemble(&events);
    assert_eq!(answer.text(), "fine");
    let sent = &server.seen()[0]["messages"];
    assert_eq!(sent[1]["content"][0]["type"], "tool_use", "{sent}");
    assert!(sent[2]["content"][0].get("content").is_none(), "{sent}");
    assert_eq!(sent[3]["content"][0]["text"], "(nothing)");
}
