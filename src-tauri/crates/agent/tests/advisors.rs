//! Advisors end to end: a turn on a real provider client against a loopback server calls the
//! `agent` tool's advisor resource in a real Registry; the personas' calls go out in parallel to
//! the same server, which answers each persona from its own script (told apart by the persona's
//! prompt), one of them never finishing.

#[path = "support/server.rs"]
mod server;
#[path = "support/wire.rs"]
mod wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use osprey_agent::advisors::Advisors;
use osprey_agent::{AgentTool, Runner, RunnerConfig, SubAgentConfig, SubAgents, TurnRequest};
use osprey_db::Database;
use osprey_tools::{Level, PathGuard, Policy, Registry, RegistryConfig, Safeguard, ToolContext};
use osprey_types::Origin;
use serde_json::{Value, json};
use server::{Reply, RoutedServer};
use wire::{ScriptCall, Wire, offered_tools, recording_retry};

const SKEPTIC: usize = 0;
const PRAGMATIST: usize = 1;
const OPTIMIST: usize = 2;
const SYNTHESIS: usize = 3;
const PARENT: usize = 4;

/// Which script answers: each persona by its prompt, the synthesis by its instructions, the
/// rest is the asking agent.
fn who(body: &str) -> usize {
    if body.contains("You are the skeptic.") {
        SKEPTIC
    } else if body.contains("You are the pragmatist.") {
        PRAGMATIST
    } else if body.contains("You are the optimist.") {
        OPTIMIST
    } else if body.contains("You combine several advisors' views") {
        SYNTHESIS
    } else {
        PARENT
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    db: Database,
    registry: Registry,
    subagents: SubAgents,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let paths = PathGuard::new(Some(dir.path().join("home")), dir.path().join("data"));
    let registry = Registry::new(RegistryConfig {
        safeguard: Safeguard::new(paths),
        ..RegistryConfig::new(Policy::at_level(Level::Allowlist), dir.path().join("data"))
    });
    let subagents = SubAgents::new(&db, SubAgentConfig::default());
    registry.register_domain(
        AgentTool::new(&db)
            .with_subagents(subagents.clone())
            .with_advisors(Advisors::new(subagents.clone())),
    );
    Fixture {
        _dir: dir,
        db,
        registry,
        subagents,
    }
}

fn runner(fx: &Fixture, wire: Wire, url: &str) -> Runner {
    wire.runner(url, &fx.registry, &fx.db, &fx.subagents, "test-model", 4)
}

fn consult(args: Value) -> ScriptCall {
    ScriptCall {
        id: "call_consult",
        name: "agent",
        args,
    }
}

#[tokio::test]
async fn advisors_answer_in_parallel_and_one_that_times_out_is_reported_not_waited_for() {
    for wire in wire::ALL {
        let fx = fixture();
        let server = RoutedServer::start(
            who,
            vec![
                vec![wire.turn(
                    r#"{"view": "The migration has no rollback plan.", "confidence": 0.8}"#,
                    &[],
                )],
                vec![wire.turn(
                    "Do it in two steps, the schema first.\n\nConfidence: 60%",
                    &[],
                )],
                vec![wire.hang_turn("It will go", 1)],
                vec![wire.turn(
                    "Both agree it can work; add a rollback plan and split it.",
                    &[],
                )],
                vec![
                    wire.turn(
                        "",
                        &[consult(json!({
                            "resource": "advisor", "action": "consult",
                            "question": "Should we migrate the database this week?",
                            "context": "Postgres 12 to 16, 40 GB.",
                            "advisors": ["skeptic", "Pragmatist", "optimist"],
                            "timeout_seconds": 2}))],
                    ),
                    wire.turn("Not this week: a rollback plan first.", &[]),
                ],
            ],
        )
        .await;
        let started = Instant::now();
        let outcome = runner(&fx, wire, &server.url)
            .run_turn(TurnRequest::new("main", "Should we migrate this week?"))
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{wire:?}: the hanging advisor was waited for"
        );
        assert_eq!(outcome.text, "Not this week: a rollback plan first.");

        let call = &fx.db.sessions().tool_calls("main").unwrap()[0];
        assert_eq!(call.status, "done", "{wire:?}: {:?}", call.result);
        let text = call.result.as_ref().unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        let result: Value = serde_json::from_str(&text).unwrap();
        let advisors = result["advisors"].as_array().unwrap();
        assert_eq!(advisors.len(), 3, "{result}");

        assert_eq!(advisors[0]["persona"], "skeptic");
        assert_eq!(advisors[0]["status"], "answered");
        assert_eq!(advisors[0]["view"], "The migration has no rollback plan.");
        assert_eq!(advisors[0]["confidence"], 0.8);
        assert_eq!(advisors[0]["structured"], true);

        assert_eq!(advisors[1]["persona"], "pragmatist");
        assert_eq!(advisors[1]["status"], "answered");
        assert_eq!(advisors[1]["confidence"], 0.6);
        assert_eq!(
            advisors[1]["structured"], false,
            "prose is taken as the view"
        );

        assert_eq!(advisors[2]["persona"], "optimist");
        assert_eq!(advisors[2]["status"], "timed_out");
        assert!(advisors[2]["view"].is_null());
        assert!(
            advisors[2]["error"]
                .as_str()
                .unwrap()
                .contains("no answer within 2 s"),
            "{result}"
        );
        assert_eq!(
            result["synthesis"],
            "Both agree it can work; add a rollback plan and split it."
        );

        // Each persona got the question and the context, its own prompt, and no tools.
        for persona in [SKEPTIC, PRAGMATIST, OPTIMIST] {
            let seen = server.seen(persona);
            assert_eq!(seen.len(), 1, "{wire:?} persona {persona}");
            assert!(seen[0].contains("Should we migrate the database this week?"));
            assert!(seen[0].contains("Postgres 12 to 16"));
            assert!(offered_tools(&seen[0]).is_empty(), "{wire:?}");
        }
        // The synthesis saw the two views that arrived, with their confidence, and not the
        // one that did not.
        let synthesis = &server.seen(SYNTHESIS)[0];
        assert!(synthesis.contains("The migration has no rollback plan."));
        assert!(synthesis.contains("Do it in two steps"));
        assert!(synthesis.contains("confidence 0.80"));
        assert!(!synthesis.contains("[optimist]"));
        // The asking agent's next request carries the result.
        assert!(server.seen(PARENT)[1].contains("timed_out"), "{wire:?}");
    }
}

#[tokio::test]
async fn a_consultation_is_refused_before_anyone_is_asked_when_it_names_too_many_or_unknown_advisors()
 {
    let fx = fixture();
    // No server: nothing may be asked.
    let (retry, _) = recording_retry(0);
    let runner = Runner::new(
        Wire::Anthropic.provider("http://127.0.0.1:9", retry),
        fx.registry.clone(),
        fx.db.sessions(),
        RunnerConfig {
            model: "test-model".into(),
            ..RunnerConfig::default()
        },
    );
    fx.subagents.set_factory(Arc::new(runner));
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(30)).with_session("main");
    let ask = |args: Value| {
        let registry = fx.registry.clone();
        let ctx = ctx.clone();
        async move {
            let mut input = json!({"resource": "advisor", "action": "consult",
                                   "question": "Which one?"});
            input
                .as_object_mut()
                .unwrap()
                .extend(args.as_object().unwrap().clone());
            registry.execute(&ctx, "agent", input).await
        }
    };

    let six = ask(
        json!({"advisors": ["skeptic", "pragmatist", "optimist", "security",
                                      "user-advocate", "lawyer"]}),
    )
    .await;
    assert!(six.is_error);
    assert!(six.text_content().contains("at most 5 advisors"), "{six:?}");

    let unknown = ask(json!({"advisors": ["skeptic", "oracle"]})).await;
    assert!(unknown.is_error);
    let message = unknown.text_content();
    assert!(message.contains("no advisor `oracle`"), "{message}");
    assert!(
        message.contains("pragmatist"),
        "the list is given: {message}"
    );

    let twice = ask(json!({"advisors": ["skeptic", "Skeptic"]})).await;
    assert!(twice.text_content().contains("named twice"), "{twice:?}");

    let empty = ask(json!({"question": "  "})).await;
    assert!(empty.is_error);

    // The personas a call can name.
    let listed = fx
        .registry
        .execute(
            &ctx,
            "agent",
            json!({"resource": "advisor", "action": "personas"}),
        )
        .await;
    let listed: Value = serde_json::from_str(&listed.text_content()).unwrap();
    assert_eq!(listed["max_per_consult"], 5);
    assert!(
        listed["personas"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "security")
    );
}

#[tokio::test]
async fn when_every_advisor_fails_there_is_no_synthesis_and_the_result_says_why() {
    let fx = fixture();
    let wire = Wire::Anthropic;
    let server = RoutedServer::start(
        who,
        vec![
            vec![Reply::Status {
                status: 400,
                headers: Vec::new(),
                body: json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": "model: not found"}})
                .to_string(),
            }],
            vec![],
            vec![],
            vec![],
            vec![],
        ],
    )
    .await;
    let _runner = runner(&fx, wire, &server.url);
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(30)).with_session("main");
    let result = fx
        .registry
        .execute(
            &ctx,
            "agent",
            json!({"resource": "advisor", "action": "consult", "question": "Go?",
                   "advisors": ["skeptic"]}),
        )
        .await;
    let result: Value = serde_json::from_str(&result.text_content()).unwrap();
    assert_eq!(result["advisors"][0]["status"], "failed");
    assert!(
        result["advisors"][0]["error"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{result}"
    );
    assert!(result["synthesis"].is_null());
    assert!(
        result["synthesis_error"]
            .as_str()
            .unwrap()
            .contains("no advisor answered")
    );
    assert!(server.seen(SYNTHESIS).is_empty());
}
