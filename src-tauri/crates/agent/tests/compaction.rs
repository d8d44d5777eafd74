//! Compaction end to end against the loopback model servers: with a small context window, old
//! screenshots leave the request first (the newest stays), then older turns are summarized by a
//! summarization request the server sees, the next request starts with the summary, and a
//! reloaded session sees the same compacted history.

#[path = "support/server.rs"]
mod server;
#[path = "support/wire.rs"]
mod wire;

use std::time::Duration;

use base64::Engine;
use futures::future::BoxFuture;
use osprey_agent::runner::compaction::{IMAGE_DROPPED, SUMMARY_HEADING, SUMMARY_ROLE};
use osprey_agent::runner::tokens::ImageCost;
use osprey_agent::{AgentEvent, Runner, RunnerConfig, TurnRequest};
use osprey_db::Database;
use osprey_tools::domain::Domain;
use osprey_tools::{
    ApprovalNeed, Call, CallFacts, DomainTool, FieldType, Level, Policy, Registry, RegistryConfig,
    ToolContext,
};
use osprey_types::{ContentBlock, ToolResult};
use serde_json::{Value, json};
use server::{Reply, SSE, Server, sse_event};
use tokio::sync::mpsc;
use wire::{ALL, ScriptCall, Wire, recording_retry};

/// A PNG header of the given size (all the token estimate reads), base64.
fn png(width: u32, height: u32) -> String {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `shot` returns a screenshot of the size asked for.
struct Shot {
    domain: Domain,
}

impl DomainTool for Shot {
    fn domain(&self) -> &Domain {
        &self.domain
    }
    fn facts(&self, _call: &Call) -> CallFacts {
        CallFacts::default()
    }
    fn run<'a>(&'a self, _ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let width = call.u64("width").unwrap_or(1000) as u32;
            ToolResult {
                content: vec![
                    ContentBlock::Text {
                        text: format!("screenshot {width}"),
                    },
                    ContentBlock::Image {
                        mime_type: "image/png".into(),
                        data: png(width, 1000),
                    },
                ],
                is_error: false,
                code: None,
                ..Default::default()
            }
        })
    }
}

fn shot_call(id: &'static str, width: u32) -> ScriptCall {
    ScriptCall {
        id,
        name: "shot",
        args: json!({"resource": "screen", "action": "take", "width": width}),
    }
}

fn provider_name(wire: Wire) -> &'static str {
    match wire {
        Wire::Anthropic => "anthropic",
        Wire::OpenAi => "openai",
        Wire::Ollama => "ollama",
    }
}

/// The conversation messages as each wire carries them (the system message left out).
fn conversation(wire: Wire, body: &Value) -> Vec<Value> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    match wire {
        Wire::Anthropic => messages,
        _ => messages
            .into_iter()
            .filter(|m| m["role"] != "system")
            .collect(),
    }
}

#[tokio::test]
async fn old_screenshots_go_first_then_older_turns_become_a_summary_that_persists() {
    for wire in ALL {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open_in(dir.path()).unwrap();
        let registry = Registry::new(RegistryConfig::new(
            Policy::at_level(Level::Allowlist),
            dir.path().join("data"),
        ));
        registry.register_domain(Shot {
            domain: Domain::new("shot", "Screenshots")
                .resource("screen", &[], &[("take", "Take one", ApprovalNeed::None)])
                .field("width", FieldType::Integer, "Width"),
        });
        // The window fits one screenshot and change, not two: the second forces the first out,
        // and a long message on top of the newest forces a summary.
        let image = ImageCost::for_provider(provider_name(wire)).tokens(1000, 1000);
        let limit = image * 3 / 2 + 300;
        let window = limit * 10 / 8 + 1;
        let server = Server::start(vec![
            wire.turn("Looking.", &[shot_call("call_1", 1000)]),
            wire.turn("First screen seen.", &[]),
            wire.turn("Looking again.", &[shot_call("call_2", 999)]),
            wire.turn("Second screen seen.", &[]),
            // The summarization request's answer.
            wire.turn("The person looked at two screens; both were fine.", &[]),
            wire.turn("Read it.", &[]),
            wire.turn("Still here.", &[]),
        ])
        .await;
        let make_runner = || {
            let (retry, _) = recording_retry(0);
            Runner::new(
                wire.provider(&server.url(), retry),
                registry.clone(),
                db.sessions(),
                RunnerConfig {
                    model: "test-model".into(),
                    identity: "Test.".into(),
                    context_window: Some(window),
                    compact_threshold: 0.8,
                    keep_turns: 1,
                    ..RunnerConfig::default()
                },
            )
        };
        let runner = make_runner();
        let (events, mut received) = mpsc::unbounded_channel();
        let turn = |input: &str| {
            let mut request = TurnRequest::new("c", input);
            request.events = Some(events.clone());
            request
        };
        runner.run_turn(turn("show me the screen")).await.unwrap();
        runner.run_turn(turn("and again")).await.unwrap();

        let seen = server.seen();
        assert_eq!(seen.len(), 4);
        let first = png(1000, 1000);
        let second = png(999, 1000);
        // Turn one's second request carries its screenshot.
        assert!(seen[1].body.to_string().contains(&first), "{wire:?}");
        // Turn two's second request: the first screenshot was dropped, the newest kept.
        let body = seen[3].body.to_string();
        assert!(!body.contains(&first), "{wire:?}: the old screenshot stays");
        assert!(
            body.contains(&second),
            "{wire:?}: the newest screenshot went"
        );
        assert!(body.contains(IMAGE_DROPPED), "{wire:?}");
        let mut compacted = Vec::new();
        while let Ok(event) = received.try_recv() {
            if let AgentEvent::Compacted {
                images_dropped,
                messages_summarized,
                tokens_before,
                tokens_after,
            } = event
            {
                assert!(tokens_after < tokens_before);
                compacted.push((images_dropped, messages_summarized));
            }
        }
        assert_eq!(compacted, [(1, 0)], "{wire:?}");

        // A long message on top of the newest screenshot: the older turns become a summary.
        let long = "Please read this carefully. ".repeat(image as usize * 4 / 28 + 1);
        runner.run_turn(turn(&long)).await.unwrap();
        let seen = server.seen();
        assert_eq!(seen.len(), 6, "{wire:?}");
        let summarize = &seen[4].body;
        let summarize_text = summarize.to_string();
        assert!(
            summarize_text.contains("You summarize the earlier part of a conversation"),
            "{wire:?}: {summarize_text}"
        );
        assert!(summarize_text.contains("show me the screen"));
        assert!(summarize_text.contains("Osprey called shot"));
        assert!(
            !summarize_text.contains(&second),
            "images never go to the summarizer"
        );
        assert!(
            summarize
                .get("tools")
                .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)),
            "{wire:?}: no tools in a summarization request"
        );
        let next = conversation(wire, &seen[5].body);
        let opening = next[0].to_string();
        assert!(opening.contains(SUMMARY_HEADING), "{wire:?}: {opening}");
        assert!(opening.contains("both were fine"));
        let rest = seen[5].body.to_string();
        assert!(
            !rest.contains("show me the screen"),
            "{wire:?}: summarized turns are gone"
        );
        assert!(!rest.contains(&second));
        assert!(rest.contains("Please read this carefully."));
        let mut summarized = 0;
        while let Ok(event) = received.try_recv() {
            if let AgentEvent::Compacted {
                messages_summarized,
                ..
            } = event
            {
                summarized = messages_summarized;
            }
        }
        assert!(summarized >= 4, "{wire:?}: {summarized}");

        // Persisted: one summary row; the older rows are still there.
        let rows = db.sessions().messages("c").unwrap();
        let summaries: Vec<_> = rows.iter().filter(|r| r.role == SUMMARY_ROLE).collect();
        assert_eq!(summaries.len(), 1);
        assert!(summaries[0].content[0]["through_seq"].as_i64().unwrap() >= 4);
        // Readers that know nothing of summaries parse it as a text part.
        let parts: Vec<osprey_agent::Part> =
            serde_json::from_value(summaries[0].content.clone()).unwrap();
        assert!(
            matches!(&parts[0], osprey_agent::Part::Text { text } if text.starts_with(SUMMARY_HEADING))
        );
        assert!(
            rows.iter()
                .any(|r| r.content.to_string().contains("show me the screen"))
        );

        // A new runner on the same database sees the compacted history.
        let reloaded = make_runner();
        let history = reloaded.history("c").unwrap();
        assert!(history[0].text().starts_with(SUMMARY_HEADING), "{wire:?}");
        assert!(!format!("{history:?}").contains("show me the screen"));
        tokio::time::timeout(
            Duration::from_secs(10),
            reloaded.run_turn(TurnRequest::new("c", "ok")),
        )
        .await
        .unwrap()
        .unwrap();
        let last = conversation(wire, &server.seen()[6].body);
        assert!(last[0].to_string().contains(SUMMARY_HEADING), "{wire:?}");
        assert_eq!(server.remaining(), 0);
    }
}

/// An Anthropic text reply whose usage says the request had `input_tokens`.
fn anthropic_reply(text: &str, input_tokens: u64) -> Reply {
    let chunks = vec![
        sse_event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
        ),
        sse_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        sse_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        sse_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        sse_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 3}}),
        ),
        sse_event("message_stop", json!({"type": "message_stop"})),
    ];
    Reply::Stream {
        content_type: SSE,
        chunks,
    }
}

#[tokio::test]
async fn the_estimate_follows_the_token_counts_the_provider_reports() {
    // Two turns whose text is about a quarter of the 8,000-token threshold by the
    // four-characters estimate; once the provider says the first request had 7,800 tokens, the
    // estimate is scaled up and the second turn is compacted. With a report below the estimate,
    // nothing happens.
    for (reported, compacts) in [(7_800, true), (25, false)] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open_in(dir.path()).unwrap();
        let registry = Registry::new(RegistryConfig::new(
            Policy::at_level(Level::Allowlist),
            dir.path().join("data"),
        ));
        let mut replies = vec![anthropic_reply("Read.", reported)];
        if compacts {
            replies.push(anthropic_reply("They sent a long text.", 0));
        }
        replies.push(anthropic_reply("Noted.", 0));
        let server = Server::start(replies).await;
        let (retry, _) = recording_retry(0);
        let runner = Runner::new(
            Wire::Anthropic.provider(&server.url(), retry),
            registry,
            db.sessions(),
            RunnerConfig {
                model: "test-model".into(),
                identity: "Test.".into(),
                context_window: Some(10_000),
                compact_threshold: 0.8,
                keep_turns: 1,
                ..RunnerConfig::default()
            },
        );
        runner
            .run_turn(TurnRequest::new("k", "word ".repeat(1_600)))
            .await
            .unwrap();
        runner
            .run_turn(TurnRequest::new("k", "and one more thing ".repeat(20)))
            .await
            .unwrap();
        let seen = server.seen();
        assert_eq!(server.remaining(), 0);
        if compacts {
            assert_eq!(seen.len(), 3);
            assert!(
                seen[1].body["system"]
                    .as_str()
                    .unwrap()
                    .starts_with("You summarize")
            );
            let opening = seen[2].body["messages"][0].to_string();
            assert!(opening.contains(SUMMARY_HEADING), "{opening}");
            assert!(!seen[2].body.to_string().contains("word word"));
        } else {
            assert_eq!(seen.len(), 2);
            assert!(seen[1].body.to_string().contains("word word"));
        }
    }
}

/// A model whose window nobody knows (an OpenAI-compatible server with a local model): nothing
/// is compacted on a guess; when the server refuses a request as too long, the runner learns the
/// window from it, summarizes the older turns and sends the step again, once.
#[tokio::test]
async fn an_unknown_window_is_learned_from_a_too_long_refusal() {
    let wire = Wire::OpenAi;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(Level::Allowlist),
        dir.path().join("data"),
    ));
    let too_long = Reply::Status {
        status: 400,
        headers: vec![("content-type", "application/json".into())],
        body: json!({"error": {"message": "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}).to_string(),
    };
    let long = "An earlier message with plenty of words in it. ".repeat(60);
    let server = Server::start(vec![
        wire.turn("One.", &[]),
        wire.turn("Two.", &[]),
        wire.turn("Three.", &[]),
        too_long,
        wire.turn("Earlier: three long messages, answered briefly.", &[]),
        wire.turn("Four, after compacting.", &[]),
    ])
    .await;
    let (retry, _) = recording_retry(0);
    let runner = Runner::new(
        wire.provider(&server.url(), retry),
        registry,
        db.sessions(),
        RunnerConfig {
            model: "some-local-model".into(),
            identity: "Test.".into(),
            keep_turns: 1,
            ..RunnerConfig::default()
        },
    );
    for _ in 0..3 {
        runner
            .run_turn(TurnRequest::new("u", long.clone()))
            .await
            .unwrap();
    }
    // Three long turns went out whole: no window was assumed.
    assert_eq!(server.seen().len(), 3);
    let (events, mut received) = mpsc::unbounded_channel();
    let mut request = TurnRequest::new("u", "and now?");
    request.events = Some(events);
    let outcome = runner.run_turn(request).await.unwrap();
    assert_eq!(outcome.text, "Four, after compacting.");
    let seen = server.seen();
    assert_eq!(seen.len(), 6);
    assert!(
        seen[4]
            .body
            .to_string()
            .contains("You summarize the earlier part of a conversation")
    );
    let retried = conversation(wire, &seen[5].body);
    assert!(retried[0].to_string().contains(SUMMARY_HEADING));
    assert!(seen[5].body.to_string().len() < seen[3].body.to_string().len());
    let mut compacted = false;
    while let Ok(event) = received.try_recv() {
        compacted |= matches!(event, AgentEvent::Compacted { messages_summarized, .. } if messages_summarized > 0);
    }
    assert!(compacted);

    // A server that still refuses after compacting: the error reaches the caller, no loop.
    let refusing = Server::start(vec![
        Reply::Status {
            status: 400,
            headers: vec![("content-type", "application/json".into())],
            body: json!({"error": {"message": "maximum context length exceeded"}}).to_string(),
        },
        Reply::Status {
            status: 400,
            headers: vec![("content-type", "application/json".into())],
            body: json!({"error": {"message": "maximum context length exceeded"}}).to_string(),
        },
    ])
    .await;
    let (retry, _) = recording_retry(0);
    let stubborn = Runner::new(
        wire.provider(&refusing.url(), retry),
        Registry::new(RegistryConfig::new(
            Policy::at_level(Level::Allowlist),
            dir.path().join("data"),
        )),
        db.sessions(),
        RunnerConfig {
            model: "some-local-model".into(),
            ..RunnerConfig::default()
        },
    );
    let error = stubborn
        .run_turn(TurnRequest::new("fresh", "hi"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "context_too_long");
    assert_eq!(refusing.seen().len(), 2);
}
