//! Sub-agents end to end: a parent turn on a real provider client against a loopback server
//! spawns children through the `agent` tool in a real Registry, the children run full turns on
//! the same registry and SQLite file, and the model server answers each agent from its own
//! script (parent, child and grandchild requests are told apart by the sub-agent preamble the
//! child's first message carries).

#[path = "support/server.rs"]
mod server;
#[path = "support/wire.rs"]
mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use osprey_agent::{
    AgentTool, Runner, RunnerConfig, RunnerPool, SubAgentConfig, SubAgentFactory, SubAgents,
    TurnRequest, TurnStop,
};
use osprey_db::Database;
use osprey_tools::domain::Domain;
use osprey_tools::{
    ApprovalNeed, Call, CallFacts, DomainTool, FieldType, FixedApprover, Level, PathGuard, Policy,
    Registry, RegistryConfig, Safeguard, ToolContext,
};
use osprey_types::{ApprovalAnswer, ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};
use server::{Reply, RoutedServer};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use wire::{ScriptCall, Wire, offered_schema, offered_tools, recording_retry};

// ---------------------------------------------------------------------------------------------
// Which script answers a request.

/// Which agent a request comes from, by the preamble of the sub-agent's first message.
fn agent_of(body: &str) -> usize {
    if body.contains("You are a sub-agent (depth 2 of") {
        2
    } else if body.contains("You are a sub-agent (depth 1 of") {
        1
    } else {
        0
    }
}

/// The `task` actions the `agent` tool offers in a request (its action enum, by the table's
/// `<action> (task)` descriptions).
fn task_actions(body: &str) -> Vec<String> {
    resource_actions(body, "task")
}

/// The actions of `resource` of the `agent` tool a request offers.
fn resource_actions(body: &str, resource: &str) -> Vec<String> {
    let parameters = agent_parameters(body);
    let description = parameters["properties"]["action"]["description"]
        .as_str()
        .unwrap()
        .to_string();
    let marker = format!(" ({resource}): ");
    description
        .split("; ")
        .filter_map(|entry| {
            entry
                .split_once(&marker)
                .map(|(action, _)| action.to_string())
        })
        .collect()
}

/// The JSON schema of the `agent` tool's input in a request, in any wire's form.
fn agent_parameters(body: &str) -> Value {
    let schema: Value = serde_json::from_str(&offered_schema(body, "agent")).unwrap();
    ["input_schema", "parameters"]
        .iter()
        .find_map(|k| schema.get(*k).or_else(|| schema["function"].get(*k)))
        .cloned()
        .unwrap()
}

/// The `agent` tool's resources a request offers.
fn agent_resources(body: &str) -> Vec<String> {
    let parameters = agent_parameters(body);
    parameters["properties"]["resource"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A test tool and an approver.

/// `look` is read-only; `change` needs approval (and counts its runs); `hold` blocks until the
/// test releases it or the call is cancelled.
struct Probe {
    domain: Domain,
    changes: Arc<AtomicUsize>,
    held: Arc<Notify>,
    release: Arc<Notify>,
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
                "change" => {
                    self.changes.fetch_add(1, Ordering::SeqCst);
                    ToolResult::text(format!("changed {q}"))
                }
                _ => {
                    self.held.notify_one();
                    tokio::select! {
                        _ = self.release.notified() => ToolResult::text(format!("held {q}")),
                        _ = ctx.cancel.cancelled() => {
                            ToolResult::error(ErrorCode::Cancelled, "stopped holding")
                        }
                    }
                }
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The fixture: a registry with the agent tool and the probe, sub-agents on a runner.

struct Fixture {
    _dir: tempfile::TempDir,
    db: Database,
    registry: Registry,
    subagents: SubAgents,
    changes: Arc<AtomicUsize>,
    held: Arc<Notify>,
    release: Arc<Notify>,
}

fn fixture(level: Level, config: SubAgentConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let paths = PathGuard::new(Some(dir.path().join("home")), dir.path().join("data"));
    let registry = Registry::new(RegistryConfig {
        safeguard: Safeguard::new(paths),
        ..RegistryConfig::new(Policy::at_level(level), dir.path().join("data"))
    });
    let subagents = SubAgents::new(&db, config);
    registry.register_domain(AgentTool::new(&db).with_subagents(subagents.clone()));
    let (changes, held, release) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
    );
    registry.register_domain(Probe {
        domain: Domain::new("probe", "A test tool")
            .resource(
                "thing",
                &[],
                &[
                    ("look", "Look at a thing", ApprovalNeed::None),
                    ("change", "Change a thing", ApprovalNeed::Required),
                    ("hold", "Hold until released", ApprovalNeed::None),
                ],
            )
            .field("q", FieldType::String, "What to look at, change or hold"),
        changes: changes.clone(),
        held: held.clone(),
        release: release.clone(),
    });
    Fixture {
        _dir: dir,
        db,
        registry,
        subagents,
        changes,
        held,
        release,
    }
}

fn runner(fx: &Fixture, wire: Wire, url: &str) -> Runner {
    wire.runner(url, &fx.registry, &fx.db, &fx.subagents, "test-model", 8)
}

fn agent_call(id: &'static str, args: Value) -> ScriptCall {
    ScriptCall {
        id,
        name: "agent",
        args,
    }
}

fn probe(id: &'static str, action: &str, q: &str) -> ScriptCall {
    ScriptCall {
        id,
        name: "probe",
        args: json!({"resource": "thing", "action": action, "q": q}),
    }
}

fn ctx(session: &str) -> ToolContext {
    ToolContext::new(Origin::User, Duration::from_secs(30)).with_session(session)
}

fn body(result: &ToolResult) -> Value {
    serde_json::from_str(&result.text_content())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", result.text_content()))
}

/// Waits for `check` to hold, failing the test after a deadline.
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn task_status(fx: &Fixture, id: i64) -> String {
    fx.db.subagent_tasks().get(id).unwrap().unwrap().status
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_child_uses_a_tool_and_its_answer_returns_to_the_waiting_parent() {
    for wire in wire::ALL {
        let fx = fixture(Level::Allowlist, SubAgentConfig::default());
        let server = RoutedServer::start(
            agent_of,
            vec![
                vec![
                    wire.turn(
                        "Let me ask a helper.",
                        &[agent_call(
                            "call_spawn",
                            json!({"resource": "subagent", "action": "spawn",
                               "prompt": "Look at the sky and say its colour.",
                               "system": "Answer in one sentence."}),
                        )],
                    ),
                    wire.turn("My helper says the sky is blue.", &[]),
                ],
                vec![
                    wire.turn("", &[probe("call_look", "look", "the sky")]),
                    wire.turn("The sky is blue.", &[]),
                ],
            ],
        )
        .await;
        let outcome = runner(&fx, wire, &server.url)
            .run_turn(TurnRequest::new("main", "What colour is the sky?"))
            .await
            .unwrap();
        assert_eq!(outcome.stop, TurnStop::EndTurn, "{wire:?}");
        assert_eq!(outcome.text, "My helper says the sky is blue.");

        // The child got the task with the preamble and the guidance, and ran the probe.
        let child_requests = server.seen(1);
        assert_eq!(child_requests.len(), 2, "{wire:?}");
        assert!(child_requests[0].contains("Look at the sky and say its colour."));
        assert!(child_requests[0].contains("Answer in one sentence."));
        assert!(child_requests[1].contains("looked at the sky"), "{wire:?}");

        // The parent's second request carries the child's answer as the spawn's result.
        let parent_requests = server.seen(0);
        assert_eq!(parent_requests.len(), 2);
        assert!(
            parent_requests[1].contains("The sky is blue."),
            "{wire:?}: {}",
            parent_requests[1]
        );

        // The task links the sessions; the child's session holds its own conversation.
        let tasks = fx.db.subagent_tasks().list("main", 10).unwrap();
        assert_eq!(tasks.len(), 1);
        let task = &tasks[0];
        assert_eq!(task.status, "done");
        assert_eq!(task.depth, 1);
        assert_eq!(task.result.as_deref(), Some("The sky is blue."));
        assert_eq!(task.session_id, format!("main/task-{}", task.id));
        let child_calls = fx.db.sessions().tool_calls(&task.session_id).unwrap();
        assert_eq!(child_calls.len(), 1);
        assert_eq!(child_calls[0].name, "probe");
        assert_eq!(child_calls[0].status, "done");
        let child_session = fx.db.sessions().get(&task.session_id).unwrap().unwrap();
        assert_eq!(child_session.status, "idle");
        assert_eq!(child_session.origin, "user");
        // The parent's own session has the spawn call, done.
        let parent_calls = fx.db.sessions().tool_calls("main").unwrap();
        assert_eq!(parent_calls[0].name, "agent");
        assert_eq!(parent_calls[0].status, "done");
        assert!(fx.subagents.running().is_empty());
    }
}

#[tokio::test]
async fn a_no_wait_spawn_returns_an_id_that_status_and_result_poll() {
    let fx = fixture(Level::Allowlist, SubAgentConfig::default());
    let wire = Wire::OpenAi;
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![
                wire.turn(
                    "",
                    &[agent_call(
                        "call_spawn",
                        json!({"action": "spawn", "prompt": "Hold the line.", "wait": false}),
                    )],
                ),
                wire.turn("Started a helper.", &[]),
            ],
            vec![
                wire.turn("", &[probe("call_hold", "hold", "the line")]),
                wire.turn("Held it.", &[]),
            ],
        ],
    )
    .await;
    let outcome = runner(&fx, wire, &server.url)
        .run_turn(TurnRequest::new("main", "start a helper"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "Started a helper.");
    // The spawn's result named the task and said how to get its answer.
    let spawn_result = &fx.db.sessions().tool_calls("main").unwrap()[0];
    let spawned: Value = serde_json::from_str(
        spawn_result.result.as_ref().unwrap()["content"][0]["text"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(spawned["status"], "running");
    let id = spawned["id"].as_i64().unwrap();
    assert!(spawned["note"].as_str().unwrap().contains("result"));

    // The child is holding: status says running, result without wait says so too.
    tokio::time::timeout(Duration::from_secs(10), fx.held.notified())
        .await
        .expect("the child reached its tool");
    let status = fx
        .registry
        .execute(
            &ctx("main"),
            "agent",
            json!({"resource": "task", "action": "status", "id": id}),
        )
        .await;
    assert_eq!(body(&status)["status"], "running");
    let early = fx
        .registry
        .execute(&ctx("main"), "agent", json!({"action": "result", "id": id}))
        .await;
    assert!(!early.is_error);
    assert!(
        body(&early)["note"]
            .as_str()
            .unwrap()
            .contains("still running")
    );
    // Another session cannot see it.
    let stranger = fx
        .registry
        .execute(
            &ctx("other"),
            "agent",
            json!({"action": "status", "id": id, "resource": "task"}),
        )
        .await;
    assert!(stranger.is_error);
    assert!(stranger.text_content().contains("no sub-agent task"));

    // Released, the child finishes and `result` with wait returns its answer.
    fx.release.notify_one();
    let done = fx
        .registry
        .execute(
            &ctx("main"),
            "agent",
            json!({"resource": "task", "action": "result", "id": id, "wait": true, "timeout_seconds": 10}),
        )
        .await;
    assert!(!done.is_error, "{done:?}");
    let done = body(&done);
    assert_eq!(done["status"], "done");
    assert_eq!(done["answer"], "Held it.");
    let listed = fx
        .registry
        .execute(
            &ctx("main"),
            "agent",
            json!({"resource": "task", "action": "list"}),
        )
        .await;
    assert_eq!(body(&listed)["count"], 1);
}

#[tokio::test]
async fn a_grandchild_spawn_beyond_the_depth_limit_is_refused_and_the_model_is_told() {
    let fx = fixture(
        Level::Allowlist,
        SubAgentConfig {
            max_depth: 1,
            ..SubAgentConfig::default()
        },
    );
    let wire = Wire::Anthropic;
    let server = RoutedServer::start(agent_of, vec![
        vec![
            wire.turn(
                "",
                &[agent_call(
                    "toolu_spawn",
                    json!({"resource": "task", "action": "spawn", "prompt": "Research, delegating as you like."}),
                )],
            ),
            wire.turn("Done.", &[]),
        ],
        vec![
            wire.turn(
                "",
                &[agent_call(
                    "toolu_deeper",
                    json!({"resource": "task", "action": "spawn", "prompt": "Go deeper."}),
                )],
            ),
            wire.turn("I could not delegate, so I did it myself.", &[]),
        ],
        // Nothing for a grandchild: if one ran, the server would answer 500 and the test fail.
        vec![],
    ])
    .await;
    let outcome = runner(&fx, wire, &server.url)
        .run_turn(TurnRequest::new("main", "research"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "Done.");

    // The child was told it cannot spawn and was not offered the action; it tried anyway and
    // was refused by its role.
    let child_requests = server.seen(1);
    assert!(child_requests[0].contains("You cannot spawn sub-agents of your own."));
    let actions = task_actions(&child_requests[0]);
    assert_eq!(actions, ["set_status"], "{}", child_requests[0]);
    assert!(
        child_requests[1].contains("is not among the tools of role `worker`"),
        "{}",
        child_requests[1]
    );
    assert!(server.seen(2).is_empty(), "no grandchild ran");

    let tasks = fx.db.subagent_tasks().list("main", 10).unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(
        tasks[0].result.as_deref(),
        Some("I could not delegate, so I did it myself.")
    );
    let refused = &fx.db.sessions().tool_calls(&tasks[0].session_id).unwrap()[0];
    assert_eq!(refused.status, "error");
    assert_eq!(refused.code.as_deref(), Some("role_denied"));
    assert!(
        fx.db
            .subagent_tasks()
            .list(&tasks[0].session_id, 10)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_default_depth_allows_a_grandchild_and_refuses_a_great_grandchild() {
    let fx = fixture(Level::Allowlist, SubAgentConfig::default());
    let wire = Wire::Ollama;
    let spawn = |id, prompt: &str| {
        agent_call(
            id,
            json!({"resource": "task", "action": "spawn", "prompt": prompt}),
        )
    };
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![
                wire.turn("", &[spawn("c1", "level one")]),
                wire.turn("top done", &[]),
            ],
            vec![
                wire.turn("", &[spawn("c2", "level two")]),
                wire.turn("child done", &[]),
            ],
            vec![
                wire.turn("", &[spawn("c3", "level three")]),
                wire.turn("grandchild done", &[]),
            ],
        ],
    )
    .await;
    let outcome = runner(&fx, wire, &server.url)
        .run_turn(TurnRequest::new("main", "go"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "top done");
    let grandchild = server.seen(2);
    assert_eq!(grandchild.len(), 2);
    assert_eq!(task_actions(&grandchild[0]), ["set_status"]);
    assert!(grandchild[1].contains("is not among the tools of role `worker`"));
    // The child, below the limit, could spawn.
    assert!(task_actions(&server.seen(1)[0]).contains(&"spawn".to_string()));
    let child = &fx.db.subagent_tasks().list("main", 1).unwrap()[0];
    let grand = &fx.db.subagent_tasks().list(&child.session_id, 1).unwrap()[0];
    assert_eq!((child.depth, grand.depth), (1, 2));
    assert_eq!(grand.status, "done");
}

#[tokio::test]
async fn the_childs_calls_are_asked_like_the_parents_and_never_auto_run() {
    // The registry's policy asks for `change`; the person (the parent's approver) says no.
    let fx = fixture(Level::Allowlist, SubAgentConfig::default());
    let wire = Wire::Anthropic;
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![
                wire.turn(
                    "",
                    &[agent_call(
                        "toolu_spawn",
                        json!({"action": "spawn", "prompt": "Change the door."}),
                    )],
                ),
                wire.turn("The helper was not allowed.", &[]),
            ],
            vec![
                wire.turn("", &[probe("toolu_change", "change", "the door")]),
                wire.turn("I was not allowed to change it.", &[]),
            ],
        ],
    )
    .await;
    let approver = Arc::new(FixedApprover::new(ApprovalAnswer::Deny));
    let mut turn = TurnRequest::new("main", "change the door, via a helper");
    turn.approver = Some(approver.clone());
    runner(&fx, wire, &server.url).run_turn(turn).await.unwrap();

    let asked = approver.asked();
    assert_eq!(
        asked.len(),
        1,
        "the person was asked about the child's call"
    );
    assert_eq!(asked[0].tool, "probe");
    assert_eq!(asked[0].origin, Origin::User);
    assert!(
        asked[0]
            .session_id
            .as_deref()
            .unwrap()
            .starts_with("main/task-")
    );
    assert_eq!(fx.changes.load(Ordering::SeqCst), 0, "the change never ran");
    assert!(server.seen(1)[1].contains("did not approve"));
}

#[tokio::test]
async fn a_child_cannot_loosen_its_parents_level_and_may_tighten_it() {
    // The registry's own policy is `full`: `change` would run unasked.
    for (parent_cap, asked_level, expected) in [
        // The parent asks for a stricter child: denied outright.
        (None, Some("deny"), "policy_denied"),
        // The parent is itself capped at allowlist and asks for `full`: the child stays capped
        // and, with no one to ask, is refused rather than auto-run.
        (Some(Level::Allowlist), Some("full"), "policy_denied"),
    ] {
        let fx = fixture(Level::Full, SubAgentConfig::default());
        let wire = Wire::OpenAi;
        let mut spawn = json!({"action": "spawn", "prompt": "Change the door."});
        if let Some(level) = asked_level {
            spawn["policy"] = json!(level);
        }
        let server = RoutedServer::start(
            agent_of,
            vec![
                vec![
                    wire.turn("", &[agent_call("call_spawn", spawn)]),
                    wire.turn("ok", &[]),
                ],
                vec![
                    wire.turn("", &[probe("call_change", "change", "the door")]),
                    wire.turn("refused", &[]),
                ],
            ],
        )
        .await;
        let mut turn = TurnRequest::new("main", "go");
        turn.level_cap = parent_cap;
        runner(&fx, wire, &server.url).run_turn(turn).await.unwrap();
        let task = &fx.db.subagent_tasks().list("main", 1).unwrap()[0];
        let call = &fx.db.sessions().tool_calls(&task.session_id).unwrap()[0];
        assert_eq!(
            call.code.as_deref(),
            Some(expected),
            "{parent_cap:?} {asked_level:?}"
        );
        assert_eq!(fx.changes.load(Ordering::SeqCst), 0);
    }

    // Without a cap the same call runs at `full`: the refusals above came from the caps.
    let fx = fixture(Level::Full, SubAgentConfig::default());
    let wire = Wire::OpenAi;
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![
                wire.turn(
                    "",
                    &[agent_call(
                        "call_spawn",
                        json!({"action": "spawn", "prompt": "Change it."}),
                    )],
                ),
                wire.turn("ok", &[]),
            ],
            vec![
                wire.turn("", &[probe("call_change", "change", "the door")]),
                wire.turn("changed", &[]),
            ],
        ],
    )
    .await;
    runner(&fx, wire, &server.url)
        .run_turn(TurnRequest::new("main", "go"))
        .await
        .unwrap();
    assert_eq!(fx.changes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cancelling_the_parent_turn_cancels_the_running_child() {
    let fx = fixture(Level::Allowlist, SubAgentConfig::default());
    let wire = Wire::Anthropic;
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![wire.turn(
                "",
                &[agent_call(
                    "toolu_spawn",
                    json!({"action": "spawn", "prompt": "Hold on."}),
                )],
            )],
            vec![wire.turn("", &[probe("toolu_hold", "hold", "on")])],
        ],
    )
    .await;
    let runner = runner(&fx, wire, &server.url);
    let cancel = CancellationToken::new();
    let mut turn = TurnRequest::new("main", "hold via a helper");
    turn.cancel = cancel.clone();
    let parent = tokio::spawn(async move { runner.run_turn(turn).await });

    tokio::time::timeout(Duration::from_secs(10), fx.held.notified())
        .await
        .expect("the child reached its tool");
    assert_eq!(fx.subagents.running().len(), 1);
    cancel.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), parent)
        .await
        .expect("the parent stopped")
        .unwrap()
        .unwrap();
    assert_eq!(outcome.stop, TurnStop::Cancelled);

    let task = fx.db.subagent_tasks().list("main", 1).unwrap()[0].clone();
    until("the child to end cancelled", || {
        task_status(&fx, task.id) == "cancelled"
    })
    .await;
    // The child's tool call was stopped (by the tool or by the registry, whichever saw it first).
    let held = &fx.db.sessions().tool_calls(&task.session_id).unwrap()[0];
    assert_eq!(held.code.as_deref(), Some("cancelled"));
    let child = fx.db.sessions().get(&task.session_id).unwrap().unwrap();
    assert_eq!(child.status, "cancelled");
    assert!(fx.subagents.running().is_empty());
}

#[tokio::test]
async fn a_child_past_its_timeout_is_stopped_and_the_parent_is_told() {
    let fx = fixture(Level::Allowlist, SubAgentConfig::default());
    let wire = Wire::OpenAi;
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![
                wire.turn(
                    "",
                    &[agent_call(
                        "call_spawn",
                        json!({"action": "spawn", "prompt": "Hold forever.", "timeout_seconds": 1}),
                    )],
                ),
                wire.turn("The helper took too long.", &[]),
            ],
            vec![wire.turn("Holding.", &[probe("call_hold", "hold", "forever")])],
        ],
    )
    .await;
    let started = Instant::now();
    let outcome = runner(&fx, wire, &server.url)
        .run_turn(TurnRequest::new("main", "hold via a helper"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "The helper took too long.");
    assert!(started.elapsed() < Duration::from_secs(10));

    let task = &fx.db.subagent_tasks().list("main", 1).unwrap()[0];
    assert_eq!(task.status, "timed_out");
    assert_eq!(task.result.as_deref(), Some("Holding."));
    let held = &fx.db.sessions().tool_calls(&task.session_id).unwrap()[0];
    assert_eq!(held.code.as_deref(), Some("cancelled"));
    let spawn = &fx.db.sessions().tool_calls("main").unwrap()[0];
    assert_eq!(spawn.code.as_deref(), Some("timeout"));
    assert!(server.seen(0)[1].contains("ran past its timeout of 1 s"));
}

#[tokio::test]
async fn without_a_runner_or_a_session_spawning_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(Level::Allowlist),
        dir.path().join("data"),
    ));
    let subagents = SubAgents::new(&db, SubAgentConfig::default());
    registry.register_domain(AgentTool::new(&db).with_subagents(subagents));
    let spawn = json!({"action": "spawn", "prompt": "anything"});
    let no_runner = registry.execute(&ctx("main"), "agent", spawn.clone()).await;
    assert!(
        no_runner
            .text_content()
            .contains("no model runner is attached")
    );
    let no_session = registry
        .execute(
            &ToolContext::new(Origin::User, Duration::from_secs(5)),
            "agent",
            spawn,
        )
        .await;
    assert!(no_session.is_error);
    assert!(no_session.text_content().contains("session"));
}

#[tokio::test]
async fn children_run_on_their_parents_model_or_the_one_they_name() {
    let fx = fixture(Level::Allowlist, SubAgentConfig::default());
    let build = |model: &str| {
        let (retry, _) = recording_retry(0);
        Runner::new(
            Wire::Ollama.provider("http://127.0.0.1:9", retry),
            fx.registry.clone(),
            fx.db.sessions(),
            RunnerConfig {
                model: model.into(),
                ..RunnerConfig::default()
            },
        )
    };
    // A lone runner serves its own model only.
    let alone = build("small");
    assert!(alone.runner("main", Some("small")).is_ok());
    let error = alone.runner("main", Some("large")).unwrap_err();
    assert!(
        error.contains("large") && error.contains("small"),
        "{error}"
    );

    // A pool picks the parent session's model, else the newest; a hint picks by name.
    let pool = RunnerPool::new(fx.db.sessions());
    assert!(pool.runner("main", None).is_err());
    pool.register(&build("small"));
    pool.register(&build("large"));
    pool.register(&build("small"));
    assert_eq!(pool.models(), ["large", "small"]);
    fx.db
        .sessions()
        .open_or_create(&osprey_db::NewSession {
            id: "on-large",
            origin: "user",
            model: Some("large"),
            ..Default::default()
        })
        .unwrap();
    let model = |r: Runner| r.config().model.clone();
    assert_eq!(model(pool.runner("on-large", None).unwrap()), "large");
    assert_eq!(model(pool.runner("unknown", None).unwrap()), "small");
    assert_eq!(
        model(pool.runner("on-large", Some("small")).unwrap()),
        "small"
    );
    let error = pool.runner("on-large", Some("huge")).unwrap_err();
    assert!(
        error.contains("huge") && error.contains("large, small"),
        "{error}"
    );

    // The pool's factory sees the same runners but does not keep them alive.
    let factory = pool.factory();
    assert_eq!(model(factory.runner("on-large", None).unwrap()), "large");
    drop(pool);
    let error = factory.runner("on-large", None).unwrap_err();
    assert!(error.contains("shutting down"), "{error}");
}

#[tokio::test]
async fn a_pool_factory_leaves_no_cycle_between_the_registry_and_its_runners() {
    let fx = fixture(Level::Allowlist, SubAgentConfig::default());
    let (retry, _) = recording_retry(0);
    let runner = Runner::new(
        Wire::Ollama.provider("http://127.0.0.1:9", retry),
        fx.registry.clone(),
        fx.db.sessions(),
        RunnerConfig::default(),
    );
    let pool = RunnerPool::new(fx.db.sessions());
    pool.register(&runner);
    fx.subagents.set_factory(pool.factory());
    // The probe tool lives in the registry; it holds this counter.
    let probe_alive = fx.changes.clone();
    drop((runner, pool, fx));
    assert_eq!(
        Arc::strong_count(&probe_alive),
        1,
        "the registry (and its tools) outlived everything that held it"
    );
}

#[tokio::test]
async fn cancel_stops_a_no_wait_child_and_the_running_limit_holds() {
    let fx = fixture(
        Level::Allowlist,
        SubAgentConfig {
            max_running: 1,
            ..SubAgentConfig::default()
        },
    );
    let wire = Wire::Anthropic;
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![],
            vec![wire.turn("", &[probe("toolu_hold", "hold", "on")])],
        ],
    )
    .await;
    // Building the runner attaches it as the children's factory.
    runner(&fx, wire, &server.url);
    let spawned = fx
        .registry
        .execute(
            &ctx("main"),
            "agent",
            json!({"action": "spawn", "prompt": "Hold on.", "wait": false}),
        )
        .await;
    let id = body(&spawned)["id"].as_i64().unwrap();
    tokio::time::timeout(Duration::from_secs(10), fx.held.notified())
        .await
        .expect("the child reached its tool");

    // One is running and one is the most: a second spawn is refused, saying what to do.
    let second = fx
        .registry
        .execute(
            &ctx("main"),
            "agent",
            json!({"action": "spawn", "prompt": "Another.", "wait": false}),
        )
        .await;
    assert!(second.is_error);
    assert!(
        second.text_content().contains("already running"),
        "{second:?}"
    );

    let cancelled = fx
        .registry
        .execute(
            &ctx("main"),
            "agent",
            json!({"resource": "task", "action": "cancel", "id": id}),
        )
        .await;
    assert!(!cancelled.is_error, "{cancelled:?}");
    assert_eq!(body(&cancelled)["status"], "cancelled");
    assert!(fx.subagents.running().is_empty());
    let result = fx
        .registry
        .execute(&ctx("main"), "agent", json!({"action": "result", "id": id}))
        .await;
    assert_eq!(result.code, Some(ErrorCode::Cancelled));
    assert_eq!(fx.db.subagent_tasks().list("main", 10).unwrap().len(), 1);
}

#[tokio::test]
async fn a_child_keeps_its_parents_origin_and_meets_its_origin_rules() {
    // Calls from origin `comm` (a message from a chat bridge) may not use the probe; a user may.
    let fx = fixture(Level::Full, SubAgentConfig::default());
    let rules: osprey_tools::OriginRules =
        serde_json::from_value(json!({"deny": {"comm": ["probe"]}})).unwrap();
    fx.registry.set_origin_rules(rules);
    let wire = Wire::Anthropic;
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![
                wire.turn(
                    "",
                    &[agent_call(
                        "toolu_spawn",
                        json!({"action": "spawn", "prompt": "Change the door."}),
                    )],
                ),
                wire.turn("ok", &[]),
            ],
            vec![
                wire.turn("", &[probe("toolu_change", "change", "the door")]),
                wire.turn("not allowed", &[]),
            ],
        ],
    )
    .await;
    let mut turn = TurnRequest::new("bridge", "change the door via a helper");
    turn.origin = Origin::Comm;
    runner(&fx, wire, &server.url).run_turn(turn).await.unwrap();
    let task = &fx.db.subagent_tasks().list("bridge", 1).unwrap()[0];
    let child = fx.db.sessions().get(&task.session_id).unwrap().unwrap();
    assert_eq!(child.origin, "comm");
    let call = &fx.db.sessions().tool_calls(&task.session_id).unwrap()[0];
    assert_eq!(call.code.as_deref(), Some("origin_denied"));
    assert_eq!(fx.changes.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------
// Typed sub-agents: packs, agent types and role-scoped tools.

/// One `agent` tool call from `session`, through the registry.
async fn agent(fx: &Fixture, session: &str, input: Value) -> ToolResult {
    fx.registry.execute(&ctx(session), "agent", input).await
}

/// A parent's script: one spawn with `args`, then `answer`.
fn parent_spawning(wire: Wire, args: Value, answer: &str) -> Vec<Reply> {
    vec![
        wire.turn("", &[agent_call("call_spawn", args)]),
        wire.turn(answer, &[]),
    ]
}

/// A turn that calls `tool` once.
fn calling(wire: Wire, id: &'static str, tool: &'static str, args: Value) -> Reply {
    wire.turn(
        "",
        &[ScriptCall {
            id,
            name: tool,
            args,
        }],
    )
}

/// The fixture with the real file, shell and exec tools beside the probe, and the packs and agent
/// types of `data` (built-in ones too) loaded against that registry.
fn typed_fixture(config: SubAgentConfig, data: Option<&std::path::Path>) -> Fixture {
    let fx = fixture(Level::Full, config);
    let paths = PathGuard::new(
        Some(fx._dir.path().join("home")),
        fx._dir.path().join("data"),
    );
    fx.registry
        .register_domain(osprey_tools::file::FileTool::new(paths));
    fx.registry
        .register_domain(osprey_tools::shell::ShellTool::new(
            osprey_tools::shell::ShellConfig::default(),
        ));
    fx.registry.register_domain(osprey_tools::ExecTool::new(
        osprey_tools::shell::ShellConfig::default(),
    ));
    // A stand-in for the web tool with the resources the research packs name.
    fx.registry.register_domain(Probe {
        domain: Domain::new("web", "The web")
            .resource(
                "http",
                &[],
                &[("fetch", "Fetch a page", ApprovalNeed::Required)],
            )
            .resource(
                "search",
                &[],
                &[("query", "Search the web", ApprovalNeed::Required)],
            ),
        changes: fx.changes.clone(),
        held: fx.held.clone(),
        release: fx.release.clone(),
    });
    fx.subagents.set_roles(osprey_agent::RoleCatalog::load(
        data,
        &fx.registry,
        &osprey_agent::AgentSettings::default(),
    ));
    fx
}

#[tokio::test]
async fn a_researcher_child_sees_and_may_call_only_its_packs_tools() {
    for wire in wire::ALL {
        let fx = typed_fixture(SubAgentConfig::default(), None);
        let notes = fx._dir.path().join("notes.txt");
        std::fs::write(&notes, "The sky is blue.\n").unwrap();
        let marker = fx._dir.path().join("shell-ran");
        let server = RoutedServer::start(
            agent_of,
            vec![
                vec![
                    wire.turn(
                        "",
                        &[agent_call(
                            "call_spawn",
                            json!({"action": "spawn", "agent_type": "researcher",
                               "prompt": "What colour is the sky, per notes.txt?"}),
                        )],
                    ),
                    wire.turn("The researcher says blue.", &[]),
                ],
                vec![
                    calling(
                        wire,
                        "call_shell",
                        "shell",
                        json!({"resource": "bash", "action": "exec",
                                     "command": format!("touch {}", marker.display())}),
                    ),
                    calling(
                        wire,
                        "call_write",
                        "file",
                        json!({"action": "write", "path": notes.display().to_string(),
                                     "content": "changed"}),
                    ),
                    calling(
                        wire,
                        "call_read",
                        "file",
                        json!({"action": "read", "path": notes.display().to_string()}),
                    ),
                    wire.turn("Blue, says notes.txt line 1.", &[]),
                ],
            ],
        )
        .await;
        let outcome = runner(&fx, wire, &server.url)
            .run_turn(TurnRequest::new("main", "Ask a researcher."))
            .await
            .unwrap();
        assert_eq!(outcome.text, "The researcher says blue.", "{wire:?}");

        // The parent is offered everything; the child only its packs' tools and the spawn tool.
        let parent = server.seen(0);
        let mut everything = offered_tools(&parent[0]);
        everything.sort();
        assert_eq!(
            everything,
            ["agent", "exec", "file", "probe", "shell", "web"],
            "{wire:?}"
        );
        let child = server.seen(1);
        assert_eq!(child.len(), 4, "{wire:?}");
        let mut offered = offered_tools(&child[0]);
        offered.sort();
        assert_eq!(offered, ["agent", "file", "web"], "{wire:?}");
        let file_schema = offered_schema(&child[0], "file");
        assert!(
            file_schema.contains("\"read\"") && !file_schema.contains("\"write\""),
            "{wire:?}: {file_schema}"
        );
        let agent_schema = offered_schema(&child[0], "agent");
        assert!(
            agent_schema.contains("spawn") && !agent_schema.contains("\"memory\""),
            "{wire:?}: {agent_schema}"
        );
        // Its role's prompt is in its system prompt.
        assert!(child[0].contains("You are a researcher."), "{wire:?}");

        // Asking for shell or a file write anyway is refused by the registry, naming the
        // role's tools; nothing ran.
        assert!(!marker.exists(), "{wire:?}: the shell command ran");
        assert_eq!(
            std::fs::read_to_string(&notes).unwrap(),
            "The sky is blue.\n"
        );
        let task = &fx.db.subagent_tasks().list("main", 1).unwrap()[0];
        // The task remembers which type it ran as (task list and status show it).
        assert_eq!(task.agent_type.as_deref(), Some("researcher"));
        let calls = fx.db.sessions().tool_calls(&task.session_id).unwrap();
        let codes: Vec<Option<&str>> = calls.iter().map(|c| c.code.as_deref()).collect();
        assert_eq!(
            codes,
            [Some("role_denied"), Some("role_denied"), None],
            "{wire:?}"
        );
        assert!(
            child[1].contains("is not among the tools of role `researcher`")
                && child[1].contains("file (file: glob, grep, read)"),
            "{wire:?}: {}",
            child[1]
        );
        assert!(child[3].contains("The sky is blue."), "{wire:?}");

        // The spawn's result says which role ran and with what.
        assert!(
            parent[1].contains("\\\"agent_type\\\":\\\"researcher\\\""),
            "{wire:?}: {}",
            parent[1]
        );
    }
}

#[tokio::test]
async fn an_unknown_agent_type_is_refused_with_the_known_ones() {
    let fx = typed_fixture(SubAgentConfig::default(), None);
    let wire = Wire::Anthropic;
    let server = RoutedServer::start(
        agent_of,
        vec![vec![
            wire.turn(
                "",
                &[agent_call(
                    "toolu_spawn",
                    json!({"action": "spawn", "agent_type": "astronaut", "prompt": "Fly."}),
                )],
            ),
            wire.turn("No astronauts here.", &[]),
        ]],
    )
    .await;
    runner(&fx, wire, &server.url)
        .run_turn(TurnRequest::new("main", "send an astronaut"))
        .await
        .unwrap();
    let refused = &server.seen(0)[1];
    assert!(
        refused.contains("there is no agent type `astronaut`; agent types: browser-operator, coder, critic, desktop-operator, planner, researcher, summarizer, writer"),
        "{refused}"
    );
    assert!(fx.db.subagent_tasks().list("main", 10).unwrap().is_empty());
    assert!(server.seen(1).is_empty(), "no child ran");

    // `types` lists them with their tools; a type whose packs' tools are missing says so.
    let types = body(&agent(&fx, "main", json!({"resource": "task", "action": "types"})).await);
    let researcher = types["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "researcher")
        .unwrap();
    assert_eq!(
        researcher["tools"],
        "agent (graph: get_task, list_tasks, submit_result), file (file: glob, grep, read), \
         web (http; search)"
    );
    let desktop = types["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "desktop-operator")
        .unwrap();
    assert!(
        desktop["not_available"]["desktop"]
            .as_str()
            .unwrap()
            .contains("`screenshot`, which is not registered")
    );
    // A type whose packs did not all load cannot be spawned, and says why.
    let desktop = agent(
        &fx,
        "main",
        json!({"action": "spawn", "agent_type": "Desktop Operator", "prompt": "Click."}),
    )
    .await;
    assert!(
        desktop
            .text_content()
            .contains("the agent type `desktop-operator` cannot run here: pack `desktop`: it names the tool `screenshot`"),
        "{desktop:?}"
    );
}

#[tokio::test]
async fn a_bad_pack_file_is_refused_clearly_and_the_others_still_load() {
    let data = tempfile::tempdir().unwrap();
    let packs = data.path().join("packs");
    let agents = data.path().join("agents");
    std::fs::create_dir_all(&packs).unwrap();
    std::fs::create_dir_all(&agents).unwrap();
    let write = |path: std::path::PathBuf, value: Value| {
        std::fs::write(path, serde_json::to_string_pretty(&value).unwrap()).unwrap()
    };
    let notes = json!(["file.read", "probe.thing.look"]);
    for (file, version, name, tools, risk) in [
        ("notes.json", 1, "notes", notes, "read-only"),
        ("typo.json", 1, "typo", json!(["shel"]), "privileged"),
        (
            "understated.json",
            1,
            "understated",
            json!(["shell"]),
            "read-only",
        ),
        (
            "twice.json",
            1,
            "twice",
            json!(["file.read", "file.read"]),
            "read-only",
        ),
        ("future.json", 2, "future", json!(["file"]), "standard"),
        (
            "shadow.json",
            1,
            "coding",
            json!(["file.read"]),
            "read-only",
        ),
    ] {
        write(
            packs.join(file),
            json!({"schemaVersion": version, "name": name, "description": "A test pack.",
                   "tools": tools, "riskProfile": risk, "tags": ["test"]}),
        );
    }
    std::fs::write(packs.join("broken.json"), "{ not json").unwrap();
    write(
        agents.join("note-reader.json"),
        json!({"schemaVersion": 1, "name": "note-reader", "description": "Reads notes.",
               "prompt": "You read notes and quote them.", "model": "cheap-model",
               "packs": ["notes"]}),
    );
    write(
        agents.join("lost.json"),
        json!({"schemaVersion": 1, "name": "lost", "description": "Lost.",
               "prompt": "p", "packs": ["nowhere"]}),
    );

    let fx = typed_fixture(SubAgentConfig::default(), Some(data.path()));
    let roles = fx.subagents.roles();
    let problem = |file: &str| {
        roles
            .problems()
            .iter()
            .find(|p| p.source.ends_with(file))
            .unwrap_or_else(|| panic!("{file} was not refused: {:?}", roles.problems()))
            .message
            .clone()
    };
    assert!(
        problem("typo.json").contains(
            "names the tool `shel`, which is not registered here (tools: agent, exec, file, probe, shell, web)"
        ),
        "{}",
        problem("typo.json")
    );
    assert!(
        problem("understated.json")
            .contains("declares riskProfile `read-only`, but `shell` is privileged")
    );
    assert!(problem("twice.json").contains("lists `file.read` twice"));
    assert!(problem("future.json").contains("schemaVersion 2 is not supported"));
    assert!(problem("shadow.json").contains("a pack named `coding` is already loaded"));
    assert!(problem("broken.json").contains("not a valid manifest"));
    assert!(problem("lost.json").contains("names the pack `nowhere`, which does not exist"));
    // The good ones loaded beside them.
    assert_eq!(
        roles.pack("notes").unwrap().scope.describe(),
        "file (file: read), probe (thing: look)"
    );
    assert!(roles.agent_type("note-reader").is_ok());
    assert!(roles.agent_type("researcher").is_ok());
    let error = roles.agent_type("lost").unwrap_err();
    assert!(
        error.contains("note-reader") && error.contains("researcher"),
        "{error}"
    );

    // The person's type runs with its pack's tools, on its model, with its prompt.
    let wire = Wire::OpenAi;
    let server = RoutedServer::start(
        agent_of,
        vec![
            parent_spawning(
                wire,
                json!({"action": "spawn", "agent_type": "note_reader", "prompt": "Look."}),
                "done",
            ),
            vec![
                wire.turn("", &[probe("call_change", "change", "it")]),
                wire.turn("", &[probe("call_look", "look", "it")]),
                wire.turn("Looked.", &[]),
            ],
        ],
    )
    .await;
    runner(&fx, wire, &server.url)
        .run_turn(TurnRequest::new("main", "read the notes"))
        .await
        .unwrap();
    let child = server.seen(1);
    let request: Value = serde_json::from_str(&child[0]).unwrap();
    assert_eq!(request["model"], "cheap-model");
    let mut offered = offered_tools(&child[0]);
    offered.sort();
    assert_eq!(offered, ["agent", "file", "probe"]);
    assert!(child[0].contains("You read notes and quote them."));
    assert!(
        child[1].contains("role_denied")
            || child[1].contains("not among the tools of role `note-reader`"),
        "{}",
        child[1]
    );
    assert!(child[2].contains("looked at it"));
    assert_eq!(
        fx.changes.load(Ordering::SeqCst),
        0,
        "the probe changed nothing"
    );
    let task = &fx.db.subagent_tasks().list("main", 1).unwrap()[0];
    assert_eq!(task.model.as_deref(), Some("cheap-model"));

    // `types` reports the refused files too.
    let types = body(&agent(&fx, "main", json!({"action": "types"})).await);
    assert_eq!(types["refused_files"].as_array().unwrap().len(), 7);
}

#[tokio::test]
async fn a_typed_child_never_gets_a_tool_its_parent_lacks_and_none_past_the_depth_limit() {
    let fx = typed_fixture(
        SubAgentConfig {
            max_depth: 1,
            ..SubAgentConfig::default()
        },
        None,
    );
    let wire = Wire::Ollama;
    let server = RoutedServer::start(
        agent_of,
        vec![
            parent_spawning(
                wire,
                json!({"action": "spawn", "agent_type": "coder", "prompt": "Run ls."}),
                "done",
            ),
            vec![
                calling(
                    wire,
                    "call_shell",
                    "shell",
                    json!({"action": "exec", "command": "ls"}),
                ),
                wire.turn("I could not.", &[]),
            ],
        ],
    )
    .await;
    // The parent itself runs as a reader: file reads and the spawn tool, no shell.
    let mut parent_scope = osprey_tools::ToolScope::new("reader");
    parent_scope.allow_resource("file", "file", Some(&["read"]));
    parent_scope.allow_resource("agent", "task", None);
    let mut turn = TurnRequest::new("main", "have a coder run ls");
    turn.scope = Some(Arc::new(parent_scope));
    runner(&fx, wire, &server.url).run_turn(turn).await.unwrap();

    let parent = server.seen(0);
    let mut offered = offered_tools(&parent[0]);
    offered.sort();
    assert_eq!(offered, ["agent", "file"]);
    let spawned = &parent[1];
    assert!(
        spawned.contains("not among the parent's tools"),
        "{spawned}"
    );
    // The coder kept only what the reader has (a file read), and at depth 1 of 1 no spawn tool.
    let child = server.seen(1);
    // At depth 1 of 1 the only part of the `agent` tool left is reporting progress.
    assert_eq!(offered_tools(&child[0]), ["agent", "file"]);
    let agent_schema = offered_schema(&child[0], "agent");
    assert!(
        agent_schema.contains(r#""enum":["set_status"]"#),
        "{agent_schema}"
    );
    assert!(
        child[1].contains("not among the tools of role `coder`"),
        "{}",
        child[1]
    );
    assert!(
        child[1].contains("this role's tools: agent (task: set_status), file (file: read)"),
        "{}",
        child[1]
    );
    let task = &fx.db.subagent_tasks().list("main", 1).unwrap()[0];
    let calls = fx.db.sessions().tool_calls(&task.session_id).unwrap();
    assert_eq!(calls[0].code.as_deref(), Some("role_denied"));
}

#[tokio::test]
async fn the_task_graph_is_shared_and_role_gated_a_worker_cannot_complete_and_a_reject_defers() {
    let fx = typed_fixture(SubAgentConfig::default(), None);
    let graph = |action: &str, args: Value| {
        let mut input = json!({"resource": "graph", "action": action});
        input
            .as_object_mut()
            .unwrap()
            .extend(args.as_object().unwrap().clone());
        let registry = fx.registry.clone();
        async move { registry.execute(&ctx("main"), "agent", input).await }
    };
    // The conversation (no role: an orchestrator) plans two tasks, the second after the first.
    let first = body(&graph("create_task", json!({"title": "Gather notes"})).await);
    let first_id = first["id"].as_i64().unwrap();
    let second = body(
        &graph(
            "create_task",
            json!({"title": "Write the summary", "depends_on": [first_id]}),
        )
        .await,
    );
    let second_id = second["id"].as_i64().unwrap();
    assert_eq!(second["ready"], false);
    assert_eq!(second["blocked_by"], json!([first_id]));
    let missing = graph("create_task", json!({"title": "x", "depends_on": [999]})).await;
    assert!(
        missing.text_content().contains("does not have"),
        "{missing:?}"
    );

    // A researcher worker: sees the same graph, cannot complete, cannot submit a blocked task,
    // submits the ready one.
    let wire = Wire::Anthropic;
    let worker = |id: &'static str, action: &str, args: Value| {
        let mut input = json!({"resource": "graph", "action": action});
        input
            .as_object_mut()
            .unwrap()
            .extend(args.as_object().unwrap().clone());
        calling(wire, id, "agent", input)
    };
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![],
            vec![
                worker("toolu_list", "list_tasks", json!({})),
                worker("toolu_complete", "complete_task", json!({"id": first_id})),
                worker(
                    "toolu_early",
                    "submit_result",
                    json!({"id": second_id, "result": "early"}),
                ),
                worker(
                    "toolu_submit",
                    "submit_result",
                    json!({"id": first_id, "result": "three notes"}),
                ),
                wire.turn("Submitted task 1.", &[]),
            ],
        ],
    )
    .await;
    runner(&fx, wire, &server.url);
    let spawned = agent(
        &fx,
        "main",
        json!({"action": "spawn", "agent_type": "researcher", "prompt": "Do task 1."}),
    )
    .await;
    assert!(!spawned.is_error, "{spawned:?}");
    let child = server.seen(1);
    assert!(
        child[1].contains("Gather notes"),
        "the worker sees the conversation's graph"
    );
    assert!(
        child[2].contains("not among the tools of role `researcher`"),
        "{}",
        child[2]
    );
    assert!(child[3].contains("is blocked"), "{}", child[3]);
    let task = &fx.db.subagent_tasks().list("main", 1).unwrap()[0];
    let codes: Vec<Option<String>> = fx
        .db
        .sessions()
        .tool_calls(&task.session_id)
        .unwrap()
        .into_iter()
        .map(|c| c.code)
        .collect();
    assert_eq!(
        codes,
        [
            None,
            Some("role_denied".into()),
            Some("tool_failed".into()),
            None
        ]
    );
    let submitted = body(&graph("get_task", json!({"id": first_id})).await);
    assert_eq!(submitted["status"], "submitted");
    assert_eq!(submitted["result"], "three notes");
    assert_eq!(submitted["submitted_by"], task.session_id.as_str());

    // The orchestrator rejects it: back to deferred with the feedback, ready again; the second
    // task stays blocked until the first is done.
    let rejected = body(
        &graph(
            "reject_task",
            json!({"id": first_id, "feedback": "Cite the files."}),
        )
        .await,
    );
    assert_eq!(rejected["status"], "deferred");
    assert_eq!(rejected["feedback"], "Cite the files.");
    assert_eq!(rejected["ready"], true);
    let done = body(&graph("complete_task", json!({"id": first_id})).await);
    assert_eq!(done["status"], "done");
    let list = body(&graph("list_tasks", json!({})).await);
    assert_eq!(list["tasks"][1]["ready"], true);
    // Another conversation has its own graph.
    let other = agent(
        &fx,
        "elsewhere",
        json!({"action": "get_task", "id": first_id}),
    )
    .await;
    assert!(other.text_content().contains("has no task"), "{other:?}");
}

#[tokio::test]
async fn an_interactive_worker_reports_progress_and_answers_a_follow_up() {
    let fx = typed_fixture(SubAgentConfig::default(), None);
    let wire = Wire::OpenAi;
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![],
            vec![
                calling(
                    wire,
                    "call_status",
                    "agent",
                    json!({"action": "set_status", "text": "reading the notes"}),
                ),
                wire.turn("First answer: three notes.", &[]),
                wire.turn("Follow-up answer: the second note is about tea.", &[]),
                wire.turn("A plain answer.", &[]),
            ],
        ],
    )
    .await;
    runner(&fx, wire, &server.url);
    let first = body(
        &agent(
            &fx,
            "main",
            json!({"action": "spawn", "agent_type": "researcher", "interactive": true,
                   "prompt": "Read the notes."}),
        )
        .await,
    );
    assert_eq!(first["answer"], "First answer: three notes.");
    assert_eq!(first["progress"], "reading the notes");
    let id = first["id"].as_i64().unwrap();

    let follow_up = agent(
        &fx,
        "main",
        json!({"action": "route", "id": id, "message": "What is the second note about?"}),
    )
    .await;
    assert!(!follow_up.is_error, "{follow_up:?}");
    assert_eq!(
        body(&follow_up)["answer"],
        "Follow-up answer: the second note is about tea."
    );
    // The follow-up turn ran in the worker's session: it saw its earlier work and the question,
    // with its role's tools only.
    let child = server.seen(1);
    assert_eq!(child.len(), 3);
    assert!(
        child[2].contains("First answer: three notes.")
            && child[2].contains("What is the second note about?"),
        "{}",
        child[2]
    );
    let mut offered = offered_tools(&child[2]);
    offered.sort();
    assert_eq!(offered, ["agent", "file", "web"]);
    let task = fx.db.subagent_tasks().get(id).unwrap().unwrap();
    assert_eq!(task.status, "done");
    assert_eq!(
        task.result.as_deref(),
        Some("Follow-up answer: the second note is about tea.")
    );

    // Another session cannot route to it; a worker not spawned interactive takes no follow-up.
    let stranger = agent(
        &fx,
        "elsewhere",
        json!({"action": "route", "id": id, "message": "hi"}),
    )
    .await;
    assert!(stranger.text_content().contains("has no sub-agent task"));
    let plain = body(&agent(&fx, "main", json!({"action": "spawn", "prompt": "Answer."})).await);
    let refused = agent(
        &fx,
        "main",
        json!({"action": "route", "id": plain["id"], "message": "more?"}),
    )
    .await;
    assert!(
        refused
            .text_content()
            .contains("is not an interactive worker"),
        "{refused:?}"
    );
    // set_status outside a sub-agent says what it is for.
    let outside = agent(&fx, "main", json!({"action": "set_status", "text": "x"})).await;
    assert!(outside.text_content().contains("this session is not one"));
}

#[tokio::test]
async fn a_branch_forks_the_conversation_and_its_answer_joins_it_at_the_next_turn() {
    let fx = typed_fixture(SubAgentConfig::default(), None);
    let wire = Wire::Anthropic;
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![
                wire.turn(
                    "Let me think about that on the side.",
                    &[agent_call(
                        "toolu_branch",
                        json!({"action": "branch", "prompt": "Think of names for the cat."}),
                    )],
                ),
                wire.turn("A branch is thinking about names.", &[]),
                wire.turn("The branch suggests Whiskers or Mochi.", &[]),
            ],
            vec![wire.turn("Whiskers or Mochi.", &[])],
        ],
    )
    .await;
    let runner = runner(&fx, wire, &server.url);
    runner.set_inbox(fx.subagents.inbox());
    let first = runner
        .run_turn(TurnRequest::new("main", "Name my cat, please."))
        .await
        .unwrap();
    assert_eq!(first.text, "A branch is thinking about names.");
    // The branch returned at once; it starts from the conversation so far.
    let spawned = &fx.db.sessions().tool_calls("main").unwrap()[0];
    let note = spawned.result.as_ref().unwrap().to_string();
    assert!(
        note.contains("joins this conversation at your next turn"),
        "{note}"
    );
    let task = fx.db.subagent_tasks().list("main", 1).unwrap()[0].clone();
    let ended = fx
        .subagents
        .wait(
            "main",
            task.id,
            Duration::from_secs(10),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(ended.status, "done");
    let child = server.seen(1);
    assert!(
        child[0].contains("Think of names for the cat.")
            && child[0].contains("user: Name my cat, please."),
        "{}",
        child[0]
    );

    // The next turn carries the branch's answer before the person's message, once.
    let second = runner
        .run_turn(TurnRequest::new("main", "Any ideas yet?"))
        .await
        .unwrap();
    assert_eq!(second.text, "The branch suggests Whiskers or Mochi.");
    let request = &server.seen(0)[2];
    let delivered = request
        .find("has ended]\\nWhiskers or Mochi.")
        .expect(request);
    assert!(delivered < request.find("Any ideas yet?").unwrap());
    assert!(fx.subagents.inbox()("main").is_empty(), "delivered once");
    let notes = fx
        .db
        .sessions()
        .messages("main")
        .unwrap()
        .into_iter()
        .filter(|m| m.content.to_string().contains("has ended"))
        .count();
    assert_eq!(notes, 1);
}

#[tokio::test]
async fn a_worker_has_no_memory_or_conversation_tools_and_a_branch_may_only_recall() {
    let fx = fixture(Level::Allowlist, SubAgentConfig::default());
    let wire = Wire::OpenAi;
    let store = |id| {
        agent_call(
            id,
            json!({"resource": "memory", "action": "store", "content": "The person likes tea."}),
        )
    };
    let server = RoutedServer::start(
        agent_of,
        vec![
            vec![
                wire.turn(
                    "",
                    &[agent_call(
                        "p_spawn",
                        json!({"resource": "task", "action": "spawn", "prompt": "Work."}),
                    )],
                ),
                wire.turn(
                    "",
                    &[agent_call(
                        "p_branch",
                        json!({"resource": "task", "action": "branch", "prompt": "Think."}),
                    )],
                ),
                wire.turn("ok", &[]),
            ],
            vec![
                // The worker tries to remember something and to route a follow-up.
                wire.turn(
                    "",
                    &[
                        store("w_store"),
                        agent_call(
                            "w_route",
                            json!({"resource": "task", "action": "route", "id": 1,
                                   "message": "hi"}),
                        ),
                    ],
                ),
                wire.turn("worked", &[]),
                // The branch searches memory, then tries to store.
                wire.turn(
                    "",
                    &[
                        agent_call(
                            "b_search",
                            json!({"resource": "memory", "action": "search", "query": "tea"}),
                        ),
                        store("b_store"),
                    ],
                ),
                wire.turn("thought", &[]),
            ],
        ],
    )
    .await;
    runner(&fx, wire, &server.url)
        .run_turn(TurnRequest::new("main", "go"))
        .await
        .unwrap();
    let tasks = || fx.db.subagent_tasks().list("main", 10).unwrap();
    until("the branch to end", || {
        tasks().len() == 2 && tasks().iter().all(|t| t.status == "done")
    })
    .await;

    let requests = server.seen(1);
    // The worker is offered no conversation resource, and of `task` no branch or route.
    let resources = agent_resources(&requests[0]);
    for conversation in [
        "memory", "profile", "session", "message", "comm", "reminder",
    ] {
        assert!(
            !resources.contains(&conversation.to_string()),
            "{conversation} offered to a worker: {resources:?}"
        );
    }
    for kept in ["work", "graph", "task", "advisor"] {
        assert!(resources.contains(&kept.to_string()), "{resources:?}");
    }
    let actions = task_actions(&requests[0]);
    assert!(actions.contains(&"set_status".to_string()));
    assert!(!actions.contains(&"branch".to_string()) && !actions.contains(&"route".to_string()));

    let code_of = |session: &str, call: &str| {
        fx.db
            .sessions()
            .tool_calls(session)
            .unwrap()
            .into_iter()
            .find(|c| c.call_id == call)
            .unwrap()
            .code
    };
    let (branch, worker): (Vec<_>, Vec<_>) =
        tasks().into_iter().partition(|t| t.prompt == "Think.");
    let worker = &worker[0].session_id;
    let branch = &branch[0].session_id;
    assert_eq!(code_of(worker, "w_store").as_deref(), Some("role_denied"));
    assert_eq!(code_of(worker, "w_route").as_deref(), Some("role_denied"));
    // The branch recalls but does not store.
    assert_eq!(code_of(branch, "b_search"), None);
    assert_eq!(code_of(branch, "b_store").as_deref(), Some("role_denied"));
    let recall = resource_actions(&requests[2], "memory");
    assert!(!recall.is_empty());
    assert!(
        recall
            .iter()
            .all(|a| ["search", "recall", "list"].contains(&a.as_str())),
        "{recall:?}"
    );
    assert!(
        fx.db.memory().list(&Default::default()).unwrap().is_empty(),
        "nothing was stored"
    );
}

/// Which script answers in the consolidation test: the consolidator, the summarizer, the
/// conversation.
fn consolidation_part(body: &str) -> usize {
    if body.contains("You are Osprey's memory consolidator.") {
        2
    } else if body.contains("You summarize the earlier part of a conversation") {
        1
    } else {
        0
    }
}

#[tokio::test]
async fn turns_leaving_the_context_are_consolidated_into_memory_by_a_role_that_may_only_store() {
    let fx = fixture(Level::Allowlist, SubAgentConfig::default());
    let wire = Wire::Anthropic;
    let server = RoutedServer::start(
        consolidation_part,
        vec![
            vec![wire.turn("Noted.", &[]), wire.turn("Sure.", &[])],
            vec![wire.turn("The person introduced themselves at length.", &[])],
            vec![
                wire.turn(
                    "",
                    &[
                        agent_call(
                            "c_store",
                            json!({"resource": "memory", "action": "store", "layer": "tacit",
                                   "content": "The person drinks green tea, never coffee."}),
                        ),
                        // Anything else is refused, whatever the model asks.
                        probe("c_probe", "change", "the door"),
                        agent_call(
                            "c_delete",
                            json!({"resource": "memory", "action": "clear",
                                   "namespace": "default"}),
                        ),
                    ],
                ),
                wire.turn("Saved 1 memory.", &[]),
            ],
        ],
    )
    .await;
    let (retry, _) = recording_retry(0);
    let runner = Runner::new(
        wire.provider(&server.url, retry),
        fx.registry.clone(),
        fx.db.sessions(),
        RunnerConfig {
            model: "test-model".into(),
            identity: "Test.".into(),
            context_window: Some(3_000),
            compact_threshold: 0.8,
            keep_turns: 1,
            ..RunnerConfig::default()
        },
    );
    fx.subagents.set_factory(Arc::new(runner.clone()));
    runner.set_consolidator(fx.subagents.consolidator());

    let long = format!("I drink green tea, never coffee. {}", "word ".repeat(1_600));
    runner
        .run_turn(TurnRequest::new("chat", long))
        .await
        .unwrap();
    runner
        .run_turn(TurnRequest::new("chat", "And one more thing."))
        .await
        .unwrap();
    until("the consolidator to finish", || {
        fx.db
            .subagent_tasks()
            .list("chat", 10)
            .unwrap()
            .first()
            .is_some_and(|t| t.status == "done")
    })
    .await;

    let task = &fx.db.subagent_tasks().list("chat", 10).unwrap()[0];
    assert_eq!(task.agent_type.as_deref(), Some("memory-consolidator"));
    assert_eq!(task.result.as_deref(), Some("Saved 1 memory."));
    // It read the turns leaving the context, and was offered only memory store.
    let asked = &server.seen(2)[0];
    assert!(asked.contains("I drink green tea, never coffee."));
    assert_eq!(offered_tools(asked), ["agent"]);
    assert_eq!(resource_actions(asked, "memory"), ["store"]);
    assert_eq!(agent_resources(asked), ["memory"]);

    let calls = fx.db.sessions().tool_calls(&task.session_id).unwrap();
    let code = |id: &str| calls.iter().find(|c| c.call_id == id).unwrap().code.clone();
    assert_eq!(code("c_store"), None);
    assert_eq!(code("c_probe").as_deref(), Some("role_denied"));
    assert_eq!(code("c_delete").as_deref(), Some("role_denied"));
    assert_eq!(fx.changes.load(Ordering::SeqCst), 0);
    let memories = fx.db.memory().list(&Default::default()).unwrap();
    assert_eq!(memories.len(), 1);
    assert_eq!(
        memories[0].content,
        "The person drinks green tea, never coffee."
    );
    // The conversation went on without waiting, and its list of sessions does not show the
    // consolidator's.
    assert!(
        fx.db
            .sessions()
            .list_conversations(None)
            .unwrap()
            .iter()
            .all(|s| s.id == "chat")
    );
}
