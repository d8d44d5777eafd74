//! The turn loop end to end: real provider clients against loopback servers speaking each wire
//! format, a real Registry with a small test tool, a real SQLite file for the session, a scripted
//! approver and a recording hook dispatcher.

#[path = "support/server.rs"]
mod server;
#[path = "support/wire.rs"]
mod wire;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_agent::runner::{
    MESSAGE_POST_RECEIVE, MESSAGE_PRE_SEND, PROMPT_SYSTEM_SECTIONS, SESSION_MESSAGE_APPEND,
    STEERING_GENERATE,
};
use osprey_agent::{AgentEvent, Runner, RunnerConfig, TurnRequest, TurnStop};
use osprey_db::Database;
use osprey_tools::domain::Domain;
use osprey_tools::hooks::{FilterOutcome, HookDispatcher};
use osprey_tools::{
    ApprovalNeed, Approver, Call, CallFacts, DomainTool, FieldType, FixedApprover, Level,
    PathGuard, Policy, Registry, RegistryConfig, Safeguard, ToolContext,
};
use osprey_types::{ApprovalAnswer, ApprovalRequest, ContentBlock, ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};
use server::{Reply, Server};
use tokio::sync::{Notify, mpsc};
use wire::{ALL, ScriptCall, Wire, offered_schema, recording_retry};

/// The test tool: `look` is read-only, `change` needs approval, `wait` runs until cancelled.
struct Probe {
    domain: Domain,
    waiting: Arc<Notify>,
}

impl Probe {
    fn new(waiting: Arc<Notify>) -> Self {
        let domain = Domain::new("probe", "A test tool that looks at and changes things")
            .resource(
                "thing",
                &[],
                &[
                    ("look", "Look at a thing", ApprovalNeed::None),
                    ("change", "Change a thing", ApprovalNeed::Required),
                    ("wait", "Wait until cancelled", ApprovalNeed::None),
                    ("shot", "Images: q is WxH or WxH*N", ApprovalNeed::None),
                ],
            )
            .field("q", FieldType::String, "What to look at or change");
        Probe { domain, waiting }
    }
}

impl DomainTool for Probe {
    fn domain(&self) -> &Domain {
        &self.domain
    }
    fn facts(&self, call: &Call) -> CallFacts {
        CallFacts {
            summary: format!("{} {}", call.action(), call.str("q").unwrap_or_default()),
            ..Default::default()
        }
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let q = call.str("q").unwrap_or_default().to_string();
            match call.action() {
                "look" => ToolResult::text(format!("looked at {q}")),
                "change" => ToolResult::text(format!("changed {q}")),
                "shot" => shots(&q),
                _ => {
                    self.waiting.notify_one();
                    ctx.cancel.cancelled().await;
                    ToolResult::error(ErrorCode::Cancelled, "stopped waiting")
                }
            }
        })
    }
}

/// `shot`'s result: `N` (default 1) PNG images of `W`x`H` after a line of text; a gradient, or
/// noise PNG cannot compress (a photo's worth of bytes) when `q` starts with `noise:`.
fn shots(q: &str) -> ToolResult {
    use base64::Engine;
    let (noise, q) = match q.strip_prefix("noise:") {
        Some(rest) => (true, rest),
        None => (false, q),
    };
    let (size, count) = q.split_once('*').unwrap_or((q, "1"));
    let (w, h) = size.split_once('x').expect("WxH");
    let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
    let png = if noise {
        osprey_tests::noise_png(w, h)
    } else {
        let mut png = Vec::new();
        image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
        })
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
        png
    };
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    let mut content = vec![ContentBlock::Text {
        text: format!("{count} images of {w}x{h}"),
    }];
    for _ in 0..count.parse::<usize>().unwrap() {
        content.push(ContentBlock::Image {
            mime_type: "image/png".into(),
            data: data.clone(),
        });
    }
    ToolResult {
        content,
        ..ToolResult::text("")
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    db: Database,
    registry: Registry,
    waiting: Arc<Notify>,
}

fn fixture() -> Fixture {
    fixture_with(false)
}

/// The fixture, its probe deferred ([`Domain::deferred`]) when `deferred`.
fn fixture_with(deferred: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let paths = PathGuard::new(Some(dir.path().join("home")), dir.path().join("data"));
    let registry = Registry::new(RegistryConfig {
        safeguard: Safeguard::new(paths),
        output_cap: 64 * 1024,
        ..RegistryConfig::new(Policy::at_level(Level::Allowlist), dir.path().join("data"))
    });
    let waiting = Arc::new(Notify::new());
    let mut probe = Probe::new(waiting.clone());
    if deferred {
        probe.domain = probe.domain.deferred();
    }
    registry.register_domain(probe);
    Fixture {
        _dir: dir,
        db,
        registry,
        waiting,
    }
}

fn runner(fx: &Fixture, wire: Wire, url: &str, max_steps: u32) -> Runner {
    let (retry, _) = recording_retry(0);
    Runner::new(
        wire.provider(url, retry),
        fx.registry.clone(),
        fx.db.sessions(),
        RunnerConfig {
            model: "test-model".into(),
            max_steps,
            identity: "You are a test agent.".into(),
            ..RunnerConfig::default()
        },
    )
}

fn call(id: &'static str, action: &str, q: &str) -> ScriptCall {
    ScriptCall {
        id,
        name: "probe",
        args: json!({"resource": "thing", "action": action, "q": q}),
    }
}

fn roles(fx: &Fixture, session: &str) -> Vec<String> {
    fx.db
        .sessions()
        .messages(session)
        .unwrap()
        .into_iter()
        .map(|m| m.role)
        .collect()
}

/// A deferred tool goes out in its short form (resources and actions, no fields) until the
/// conversation calls it; then in full, for the rest of the turn and the session's later turns.
/// Another session starts short again.
#[tokio::test]
async fn a_deferred_tool_is_offered_short_until_the_conversation_calls_it() {
    for wire in ALL {
        let fx = fixture_with(true);
        let server = Server::start(vec![
            wire.turn(
                "Let me look.",
                &[ScriptCall {
                    id: "call_1",
                    name: "probe",
                    args: json!({"resource": "thing", "action": "look"}),
                }],
            ),
            wire.turn("Looked.", &[]),
            wire.turn("Again.", &[]),
            wire.turn("Elsewhere.", &[]),
        ])
        .await;
        let runner = runner(&fx, wire, &server.url(), 8);
        for (session, message) in [("s1", "look"), ("s1", "again"), ("s2", "other")] {
            runner
                .run_turn(TurnRequest::new(session, message))
                .await
                .unwrap();
        }
        let seen = server.seen();
        let probe = |n: usize| offered_schema(&seen[n].body.to_string(), "probe");
        let field = "What to look at or change";
        assert!(!probe(0).contains(field), "{wire:?}: {}", probe(0));
        assert!(probe(0).contains("after your first call"), "{wire:?}");
        assert!(
            probe(0).contains("look"),
            "the actions are named: {}",
            probe(0)
        );
        assert!(probe(1).contains(field), "{wire:?}: full once called");
        assert!(probe(2).contains(field), "{wire:?}: full in the next turn");
        assert!(
            !probe(3).contains(field),
            "{wire:?}: short in a new session"
        );
    }
}

#[tokio::test]
async fn a_two_step_tool_turn_runs_through_the_registry_and_is_persisted() {
    for wire in ALL {
        let fx = fixture();
        let server = Server::start(vec![
            wire.turn("Let me look.", &[call("call_1", "look", "the sky")]),
            wire.turn("The sky is blue.", &[]),
            wire.turn("Still blue.", &[]),
        ])
        .await;
        let runner = runner(&fx, wire, &server.url(), 8);
        let (events, mut received) = mpsc::unbounded_channel();
        let mut turn = TurnRequest::new("s1", "What colour is the sky?");
        turn.events = Some(events);
        let outcome = runner.run_turn(turn).await.unwrap();
        assert_eq!(outcome.stop, TurnStop::EndTurn, "{wire:?}");
        assert_eq!(outcome.text, "The sky is blue.");
        assert_eq!(outcome.steps, 2);
        assert_eq!(outcome.usage.input_tokens, 50);

        // The second request carried the tool's result back to the model.
        let seen = server.seen();
        assert_eq!(seen.len(), 2);
        let body = seen[1].body.to_string();
        assert!(body.contains("looked at the sky"), "{wire:?}: {body}");
        assert!(body.contains("You are a test agent."), "{wire:?}");

        // Everything is in the session, in order.
        assert_eq!(
            roles(&fx, "s1"),
            ["user", "assistant", "user", "assistant"],
            "{wire:?}"
        );
        let calls = fx.db.sessions().tool_calls("s1").unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "probe");
        assert_eq!(calls[0].status, "done");
        assert_eq!(calls[0].message_seq, 2);
        assert_eq!(
            calls[0].result.as_ref().unwrap()["content"][0]["text"],
            "looked at the sky"
        );
        let session = fx.db.sessions().get("s1").unwrap().unwrap();
        assert_eq!(session.status, "idle");

        // Live events: text deltas, the call starting and finishing, both steps.
        let mut seen_events = Vec::new();
        while let Ok(event) = received.try_recv() {
            seen_events.push(event);
        }
        let text: String = seen_events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Let me look.The sky is blue.");
        assert!(seen_events.iter().any(|e| matches!(e, AgentEvent::ToolCallFinished { result, .. } if result.text_content() == "looked at the sky")));

        // A new runner on the same database continues the conversation from SQLite.
        let again = runner_reopened(&fx, wire, &server.url());
        let outcome = again
            .run_turn(TurnRequest::new("s1", "And now?"))
            .await
            .unwrap();
        assert_eq!(outcome.text, "Still blue.");
        let third = server.seen()[2].body.to_string();
        assert!(
            third.contains("What colour is the sky?") && third.contains("looked at the sky"),
            "{wire:?}: the history goes out again"
        );
        assert_eq!(roles(&fx, "s1").len(), 6);
    }
}

fn runner_reopened(fx: &Fixture, wire: Wire, url: &str) -> Runner {
    let db = Database::open(fx.db.path()).unwrap();
    let (retry, _) = recording_retry(0);
    Runner::new(
        wire.provider(url, retry),
        fx.registry.clone(),
        db.sessions(),
        RunnerConfig {
            model: "test-model".into(),
            ..RunnerConfig::default()
        },
    )
}

#[tokio::test]
async fn parallel_tool_calls_run_and_their_results_go_back_in_order() {
    let fx = fixture();
    let wire = Wire::OpenAi;
    let server = Server::start(vec![
        wire.turn(
            "",
            &[
                call("call_a", "look", "left"),
                call("call_b", "look", "right"),
            ],
        ),
        wire.turn("Both seen.", &[]),
    ])
    .await;
    let outcome = runner(&fx, wire, &server.url(), 8)
        .run_turn(TurnRequest::new("p", "look both ways"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "Both seen.");
    let messages = server.seen()[1].body["messages"].clone();
    let tools: Vec<(&str, &str)> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [("call_a", "looked at left"), ("call_b", "looked at right")]
    );
    assert_eq!(fx.db.sessions().tool_calls("p").unwrap().len(), 2);
}

#[tokio::test]
async fn approval_denied_goes_back_to_the_model_and_approved_runs() {
    for (answer, expected) in [
        (ApprovalAnswer::Deny, "did not approve"),
        (ApprovalAnswer::Once, "changed the door"),
    ] {
        let fx = fixture();
        let wire = Wire::Anthropic;
        let server = Server::start(vec![
            wire.turn("", &[call("toolu_1", "change", "the door")]),
            wire.turn("Done.", &[]),
        ])
        .await;
        let approver = Arc::new(FixedApprover::new(answer.clone()));
        let mut turn = TurnRequest::new("a", "paint the door");
        turn.approver = Some(approver.clone());
        let outcome = runner(&fx, wire, &server.url(), 8)
            .run_turn(turn)
            .await
            .unwrap();
        assert_eq!(outcome.stop, TurnStop::EndTurn);
        let asked = approver.asked();
        assert_eq!(asked.len(), 1, "{answer:?}");
        assert_eq!(asked[0].tool, "probe");
        assert_eq!(asked[0].origin, Origin::User);
        assert_eq!(asked[0].session_id.as_deref(), Some("a"));
        assert_eq!(asked[0].summary, "change the door");
        let result = &server.seen()[1].body["messages"][2]["content"][0];
        assert_eq!(result["type"], "tool_result");
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(expected),
            "{result}"
        );
        assert_eq!(result["is_error"], answer == ApprovalAnswer::Deny);
        let stored = &fx.db.sessions().tool_calls("a").unwrap()[0];
        if answer == ApprovalAnswer::Deny {
            assert_eq!(stored.code.as_deref(), Some("approval_denied"));
        } else {
            assert_eq!(stored.status, "done");
        }
    }
}

#[tokio::test]
async fn cancelling_during_a_tool_call_stops_the_turn_and_records_it() {
    let fx = fixture();
    let wire = Wire::Ollama;
    let server = Server::start(vec![
        wire.turn("", &[call("x", "wait", "forever")]),
        wire.turn("never asked", &[]),
    ])
    .await;
    let runner = runner(&fx, wire, &server.url(), 8);
    let turn = TurnRequest::new("c", "wait for it");
    let cancel = turn.cancel.clone();
    let waiting = fx.waiting.clone();
    let task = tokio::spawn(async move { runner.run_turn(turn).await });
    tokio::time::timeout(Duration::from_secs(10), waiting.notified())
        .await
        .expect("the tool starts");
    cancel.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the turn ends promptly")
        .unwrap()
        .unwrap();
    assert_eq!(outcome.stop, TurnStop::Cancelled);
    assert_eq!(server.seen().len(), 1, "no further model call");
    let calls = fx.db.sessions().tool_calls("c").unwrap();
    assert_eq!(calls[0].code.as_deref(), Some("cancelled"));
    assert_eq!(roles(&fx, "c"), ["user", "assistant", "user"]);
    assert_eq!(
        fx.db.sessions().get("c").unwrap().unwrap().status,
        "cancelled"
    );
}

#[tokio::test]
async fn cancelling_while_the_model_streams_keeps_the_text_so_far() {
    for wire in ALL {
        let fx = fixture();
        let keep = match wire {
            Wire::Anthropic => 4,
            Wire::OpenAi => 2,
            Wire::Ollama => 1,
        };
        let server = Server::start(vec![wire.hang_turn("Half of an answer", keep)]).await;
        let runner = runner(&fx, wire, &server.url(), 8);
        let (events, mut received) = mpsc::unbounded_channel();
        let mut turn = TurnRequest::new("h", "talk");
        turn.events = Some(events);
        let cancel = turn.cancel.clone();
        let task = tokio::spawn(async move { runner.run_turn(turn).await });
        let first = tokio::time::timeout(Duration::from_secs(10), received.recv())
            .await
            .expect("text arrives")
            .unwrap();
        assert!(matches!(first, AgentEvent::TextDelta(_)), "{first:?}");
        cancel.cancel();
        let outcome = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the turn ends promptly")
            .unwrap()
            .unwrap();
        assert_eq!(outcome.stop, TurnStop::Cancelled, "{wire:?}");
        assert!(!outcome.text.is_empty());
        let messages = fx.db.sessions().messages("h").unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].content[0]["text"], outcome.text);
    }
}

#[tokio::test]
async fn an_answer_that_breaks_off_fails_the_turn_clearly_and_keeps_what_arrived() {
    let fx = fixture();
    let chunks = vec![
        server::sse_event(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
        ),
        server::sse_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
        ),
        server::sse_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": "The first half"}}),
        ),
        server::sse_event(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ];
    let server = Server::start(vec![Reply::Stream {
        content_type: server::SSE,
        chunks,
    }])
    .await;
    let runner = runner(&fx, Wire::Anthropic, &server.url(), 8);
    let error = runner
        .run_turn(TurnRequest::new("b", "talk"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "overloaded");
    assert!(error.to_string().contains("broke off"), "{error}");
    let messages = fx.db.sessions().messages("b").unwrap();
    assert_eq!(
        messages.last().unwrap().content[0]["text"],
        "The first half"
    );
    assert_eq!(server.seen().len(), 1, "not retried after output");
}

/// Subscribes to the runner's hooks: rewrites the system prompt and records every call.
struct PromptHooks {
    calls: Mutex<Vec<String>>,
}

impl HookDispatcher for PromptHooks {
    fn has_subscribers(&self, hook: &str) -> bool {
        [
            PROMPT_SYSTEM_SECTIONS,
            MESSAGE_PRE_SEND,
            MESSAGE_POST_RECEIVE,
            SESSION_MESSAGE_APPEND,
        ]
        .contains(&hook)
    }
    fn apply_filter<'a>(
        &'a self,
        hook: &'a str,
        mut payload: Value,
    ) -> BoxFuture<'a, FilterOutcome> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(hook.to_string());
            if hook == PROMPT_SYSTEM_SECTIONS {
                let sections = payload["sections"].as_array_mut().unwrap();
                assert_eq!(sections[0]["name"], "identity");
                sections[0]["text"] = json!("You are a pirate.");
                sections.push(json!({"name": "house_rules", "text": "Say arr."}));
            }
            if hook == MESSAGE_POST_RECEIVE {
                payload["message"]["content"][0]["text"] = json!("Arr, rewritten.");
            }
            FilterOutcome {
                payload,
                handled: false,
            }
        })
    }
    fn do_action<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(format!(
                "{hook} {}",
                payload["role"].as_str().unwrap_or("?")
            ));
        })
    }
}

#[tokio::test]
async fn a_hook_rewrites_the_system_prompt_and_sees_every_message() {
    let fx = fixture();
    let wire = Wire::Anthropic;
    let server = Server::start(vec![wire.turn("Hello.", &[])]).await;
    let runner = runner(&fx, wire, &server.url(), 8);
    let hooks = Arc::new(PromptHooks {
        calls: Mutex::new(Vec::new()),
    });
    runner.set_hooks(hooks.clone());
    let outcome = runner.run_turn(TurnRequest::new("k", "hi")).await.unwrap();
    assert_eq!(outcome.text, "Arr, rewritten.");
    let system = server.seen()[0].body["system"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.starts_with("You are a pirate."), "{system}");
    assert!(system.ends_with("Say arr."), "{system}");
    assert!(!system.contains("test agent"));
    assert!(
        system.contains("- probe:"),
        "the tools section stays: {system}"
    );
    assert_eq!(
        *hooks.calls.lock().unwrap(),
        [
            "session.message_append user",
            "prompt.system_sections",
            "message.pre_send",
            "message.post_receive",
            "session.message_append assistant",
        ]
    );
    let stored = fx.db.sessions().messages("k").unwrap();
    assert_eq!(stored[1].content[0]["text"], "Arr, rewritten.");
}

#[tokio::test]
async fn the_step_limit_ends_a_turn_that_keeps_calling_tools() {
    let fx = fixture();
    let wire = Wire::OpenAi;
    let server = Server::start(vec![
        wire.turn("", &[call("c1", "look", "a")]),
        wire.turn("", &[call("c2", "look", "b")]),
        wire.turn("not reached", &[]),
    ])
    .await;
    let outcome = runner(&fx, wire, &server.url(), 2)
        .run_turn(TurnRequest::new("l", "loop"))
        .await
        .unwrap();
    assert_eq!(outcome.stop, TurnStop::StepLimit);
    assert_eq!(outcome.steps, 2);
    assert_eq!(server.seen().len(), 2);
    assert_eq!(fx.db.sessions().tool_calls("l").unwrap().len(), 2);
}

#[tokio::test]
async fn a_provider_failure_ends_the_turn_with_its_error_and_marks_the_session() {
    let fx = fixture();
    let server = Server::start(vec![server::Reply::Status {
        status: 401,
        headers: vec![],
        body: json!({"error": {"message": "bad key"}}).to_string(),
    }])
    .await;
    let error = runner(&fx, Wire::OpenAi, &server.url(), 8)
        .run_turn(TurnRequest::new("f", "hi"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "auth", "{error}");
    assert_eq!(fx.db.sessions().get("f").unwrap().unwrap().status, "failed");
    assert_eq!(roles(&fx, "f"), ["user"], "the person's message is kept");
}

#[tokio::test]
async fn malformed_tool_arguments_come_back_as_an_error_result() {
    let fx = fixture();
    let wire = Wire::OpenAi;
    let bad = ScriptCall {
        id: "bad_1",
        name: "probe",
        args: json!("not an object"),
    };
    let server = Server::start(vec![wire.turn("", &[bad]), wire.turn("Sorry.", &[])]).await;
    let outcome = runner(&fx, wire, &server.url(), 8)
        .run_turn(TurnRequest::new("m", "go"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "Sorry.");
    let calls = fx.db.sessions().tool_calls("m").unwrap();
    assert_eq!(calls[0].code.as_deref(), Some("invalid_input"));
}

#[tokio::test]
async fn a_history_cut_off_mid_call_is_repaired_before_the_next_turn() {
    let fx = fixture();
    // What a crash between persisting a reply and its tool's result leaves behind.
    let sessions = fx.db.sessions();
    sessions
        .open_or_create(&osprey_db::NewSession {
            id: "r",
            origin: "user",
            ..Default::default()
        })
        .unwrap();
    sessions
        .append_message(
            "r",
            "user",
            &json!([{"type": "text", "text": "look"}]),
            None,
        )
        .unwrap();
    sessions
        .append_message(
            "r",
            "assistant",
            &json!([{"type": "tool_call", "id": "toolu_lost", "name": "probe", "input": {"action": "look"}}]),
            None,
        )
        .unwrap();
    let wire = Wire::Anthropic;
    let server = Server::start(vec![wire.turn("Sorry, where were we?", &[])]).await;
    runner(&fx, wire, &server.url(), 8)
        .run_turn(TurnRequest::new("r", "hello?"))
        .await
        .unwrap();
    let messages = server.seen()[0].body["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages:#}");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_lost");
    assert_eq!(messages[2]["content"][0]["is_error"], true);
    assert_eq!(messages[2]["content"][1]["text"], "hello?");
}

/// Adds a steering line before every model call.
struct Steering;

impl HookDispatcher for Steering {
    fn has_subscribers(&self, hook: &str) -> bool {
        hook == STEERING_GENERATE
    }
    fn apply_filter<'a>(
        &'a self,
        _hook: &'a str,
        mut payload: Value,
    ) -> BoxFuture<'a, FilterOutcome> {
        Box::pin(async move {
            let step = payload["step"].as_u64().unwrap();
            payload["steering"] = json!([format!("(steering for step {step})")]);
            FilterOutcome {
                payload,
                handled: false,
            }
        })
    }
    fn do_action<'a>(&'a self, _hook: &'a str, _payload: Value) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

#[tokio::test]
async fn steering_reaches_the_model_but_not_the_session() {
    let fx = fixture();
    let wire = Wire::Anthropic;
    let server = Server::start(vec![
        wire.turn("", &[call("toolu_1", "look", "x")]),
        wire.turn("Done.", &[]),
    ])
    .await;
    let runner = runner(&fx, wire, &server.url(), 8);
    runner.set_hooks(Arc::new(Steering));
    runner.run_turn(TurnRequest::new("st", "go")).await.unwrap();
    let seen = server.seen();
    let first = &seen[0].body["messages"][0]["content"];
    assert_eq!(first[1]["text"], "(steering for step 1)", "{first}");
    let second = &seen[1].body["messages"][2]["content"];
    assert_eq!(second[0]["type"], "tool_result");
    assert_eq!(second[1]["text"], "(steering for step 2)", "{second}");
    let stored = serde_json::to_string(
        &fx.db
            .sessions()
            .messages("st")
            .unwrap()
            .into_iter()
            .map(|m| m.content)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(!stored.contains("steering"), "{stored}");
}

/// Never answers; says when it has been asked.
struct SilentApprover {
    asked: Arc<Notify>,
}

impl Approver for SilentApprover {
    fn ask(&self, _request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        self.asked.notify_one();
        Box::pin(futures::future::pending())
    }
}

#[tokio::test]
async fn cancelling_while_an_approval_is_pending_ends_the_turn() {
    let fx = fixture();
    let wire = Wire::OpenAi;
    let server = Server::start(vec![wire.turn("", &[call("c1", "change", "x")])]).await;
    let runner = runner(&fx, wire, &server.url(), 8);
    let asked = Arc::new(Notify::new());
    let mut turn = TurnRequest::new("ap", "change it");
    turn.approver = Some(Arc::new(SilentApprover {
        asked: asked.clone(),
    }));
    let cancel = turn.cancel.clone();
    let task = tokio::spawn(async move { runner.run_turn(turn).await });
    tokio::time::timeout(Duration::from_secs(10), asked.notified())
        .await
        .expect("the approver is asked");
    cancel.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the turn ends promptly")
        .unwrap()
        .unwrap();
    assert_eq!(outcome.stop, TurnStop::Cancelled);
    let calls = fx.db.sessions().tool_calls("ap").unwrap();
    assert_eq!(calls[0].code.as_deref(), Some("cancelled"));
}

/// Subscribes to every hook Osprey knows and records which fired, with the streamed text.
#[derive(Default)]
struct EveryHook {
    fired: Mutex<Vec<String>>,
    streamed: Mutex<String>,
}

impl HookDispatcher for EveryHook {
    fn has_subscribers(&self, hook: &str) -> bool {
        osprey_tools::hooks::KNOWN_HOOKS.contains(&hook)
    }
    fn apply_filter<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, FilterOutcome> {
        self.fired.lock().unwrap().push(hook.to_string());
        Box::pin(async move {
            FilterOutcome {
                payload,
                handled: false,
            }
        })
    }
    fn do_action<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, ()> {
        self.fired.lock().unwrap().push(hook.to_string());
        if hook == osprey_tools::hooks::RESPONSE_STREAM {
            self.streamed
                .lock()
                .unwrap()
                .push_str(payload["text"].as_str().unwrap_or_default());
        }
        Box::pin(async {})
    }
}

/// The list apps may subscribe to is exactly what fires: one turn that stores a memory through
/// the agent tool fires every hook in `KNOWN_HOOKS`, and nothing outside it.
#[tokio::test]
async fn every_known_hook_fires_in_a_turn_and_no_other() {
    let fx = fixture();
    let hooks = Arc::new(EveryHook::default());
    fx.registry.set_hooks(hooks.clone());
    fx.registry
        .register_domain(osprey_agent::AgentTool::new(&fx.db).with_hooks(hooks.clone()));
    let wire = Wire::Anthropic;
    let store = ScriptCall {
        id: "m1",
        name: "agent",
        args: json!({"resource": "memory", "action": "store", "content": "tea, not coffee"}),
    };
    let server = Server::start(vec![
        wire.turn("Noting that.", &[store]),
        wire.turn("Done: tea it is.", &[]),
    ])
    .await;
    let runner = runner(&fx, wire, &server.url(), 8);
    runner.set_memory(fx.db.memory());
    runner.set_hooks(hooks.clone());
    let outcome = runner
        .run_turn(TurnRequest::new("every-hook", "remember: tea"))
        .await
        .unwrap();
    assert_eq!(outcome.stop, TurnStop::EndTurn);

    // response.stream runs on a task of its own: wait for the last piece with a deadline.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !hooks.streamed.lock().unwrap().ends_with("tea it is.") {
        assert!(
            std::time::Instant::now() < deadline,
            "response.stream never caught up"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        *hooks.streamed.lock().unwrap(),
        "Noting that.Done: tea it is.",
        "every streamed piece, in order"
    );
    let fired: std::collections::BTreeSet<String> =
        hooks.fired.lock().unwrap().iter().cloned().collect();
    let known: std::collections::BTreeSet<String> = osprey_tools::hooks::KNOWN_HOOKS
        .iter()
        .map(|h| h.to_string())
        .collect();
    assert_eq!(fired, known);

    // A second turn in the same session does not start it again.
    hooks.fired.lock().unwrap().clear();
    let server = Server::start(vec![wire.turn("Still tea.", &[])]).await;
    let again = runner_with_url(&fx, wire, &server.url());
    again.set_hooks(hooks.clone());
    again
        .run_turn(TurnRequest::new("every-hook", "and now?"))
        .await
        .unwrap();
    assert!(
        !hooks
            .fired
            .lock()
            .unwrap()
            .contains(&osprey_tools::hooks::SESSION_START.to_string())
    );
}

fn runner_with_url(fx: &Fixture, wire: Wire, url: &str) -> Runner {
    runner(fx, wire, url, 8)
}

/// Image sizes (and the texts) of the tool results a request carried.
fn result_images(request: &Value) -> (Vec<(u32, u32)>, Vec<String>) {
    use base64::Engine;
    let (mut sizes, mut texts) = (Vec::new(), Vec::new());
    for message in request["messages"].as_array().unwrap() {
        for block in message["content"].as_array().into_iter().flatten() {
            for inner in block["content"].as_array().into_iter().flatten() {
                if inner["type"] == "image" {
                    let data = inner["source"]["data"].as_str().unwrap();
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(data)
                        .unwrap();
                    let size = image::ImageReader::new(std::io::Cursor::new(bytes))
                        .with_guessed_format()
                        .unwrap()
                        .into_dimensions()
                        .unwrap();
                    sizes.push(size);
                } else if let Some(text) = inner["text"].as_str() {
                    texts.push(text.to_string());
                }
            }
        }
    }
    (sizes, texts)
}

/// Against a loopback Anthropic that refuses what the real API refuses (a side over 8,000 px,
/// base64 over 5 MiB, more than 100 images): images over what the models take are scaled as
/// they arrive, stored that way, and the turn goes on; the model is told the factor.
#[tokio::test]
async fn images_models_would_refuse_are_scaled_as_they_arrive_and_the_turn_goes_on() {
    use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
    let fx = fixture();
    let shot = |id: &str, q: &str| {
        ScriptedReply::call(
            id,
            "probe",
            json!({"resource": "thing", "action": "shot", "q": q}),
        )
    };
    let server = AnthropicServer::start(vec![
        shot("t1", "9000x40"),
        shot("t2", "3840x2160"),
        ScriptedReply::text("I saw both."),
        ScriptedReply::text("Still there."),
    ])
    .unwrap();
    let runner = runner(&fx, Wire::Anthropic, &server.url(), 8);
    let outcome = runner
        .run_turn(TurnRequest::new("s1", "take two pictures"))
        .await
        .unwrap();
    assert_eq!(outcome.stop, TurnStop::EndTurn, "{outcome:?}");
    assert_eq!(outcome.text, "I saw both.");

    let seen = server.seen();
    let (sizes, texts) = result_images(&seen[2]);
    assert_eq!(sizes, [(1568, 7), (1456, 819)]);
    assert!(
        texts
            .iter()
            .any(|t| t.contains("scaled from 9000x40 to 1568x7")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("scaled from 3840x2160 to 1456x819") && t.contains("0.379")),
        "{texts:?}"
    );
    // Stored fitted: the next turn sends the same, without fitting again.
    let outcome = runner
        .run_turn(TurnRequest::new("s1", "and now?"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "Still there.");
    assert_eq!(result_images(&server.seen()[3]).0, sizes);
}

#[tokio::test]
async fn a_request_carries_the_newest_hundred_images_and_says_where_older_ones_were() {
    use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
    let fx = fixture();
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "t1",
            "probe",
            json!({"resource": "thing", "action": "shot", "q": "16x16*70"}),
        ),
        ScriptedReply::call(
            "t2",
            "probe",
            json!({"resource": "thing", "action": "shot", "q": "24x24*70"}),
        ),
        ScriptedReply::text("That is a lot of pictures."),
    ])
    .unwrap();
    let runner = runner(&fx, Wire::Anthropic, &server.url(), 8);
    let outcome = runner
        .run_turn(TurnRequest::new("s1", "take many pictures"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "That is a lot of pictures.", "{outcome:?}");
    let (sizes, texts) = result_images(&server.seen()[2]);
    assert_eq!(sizes.len(), 100);
    // The oldest 40 gave way; all 70 of the newest call are there.
    assert_eq!(sizes.iter().filter(|s| **s == (24, 24)).count(), 70);
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.as_str() == osprey_agent::images::IMAGE_OVER_BUDGET)
            .count(),
        40
    );
    // The session itself keeps every image: only the request leaves them out.
    let stored = fx.db.sessions().messages("s1").unwrap();
    let stored_images = stored
        .iter()
        .map(|m| m.content.to_string().matches("\"type\":\"image\"").count())
        .sum::<usize>();
    assert_eq!(stored_images, 140);
}

/// Some thirty full screenshots pass Anthropic's 32 MB per request long before the context
/// window fills (the loopback server answers 413 `request_too_large` as the API does): a request
/// carries the newest images within 20 MB and says where older ones were.
#[tokio::test]
async fn a_request_keeps_its_images_under_anthropics_32_mb() {
    use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
    let fx = fixture();
    // 1300 x 900 of noise: about 3.5 MB of PNG each, within what one image may be; eight are
    // 37 MB of base64.
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "t1",
            "probe",
            json!({"resource": "thing", "action": "shot", "q": "noise:1300x900*8"}),
        ),
        ScriptedReply::text("Eight photos."),
    ])
    .unwrap();
    let runner = runner(&fx, Wire::Anthropic, &server.url(), 8);
    let outcome = runner
        .run_turn(TurnRequest::new("s1", "take eight photos"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "Eight photos.", "{outcome:?}");
    let (sizes, texts) = result_images(&server.seen()[1]);
    assert_eq!(sizes, [(1300, 900); 4]);
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.as_str() == osprey_agent::images::IMAGE_OVER_BUDGET)
            .count(),
        4
    );
}
