//! A conversation's team through the core's facade, against a real Anthropic-format SSE server on
//! loopback that scripts the model: a sub-agent reporting its status and working the task graph
//! shows in `session_team` while it runs and after, with `team_changed` events named by the
//! conversation; a person cancels a running sub-agent; agent types saved through the facade are
//! checked by the loader's own checks and used by the next spawn without a restart.

use std::time::{Duration, Instant};

use osprey_agent::{TurnRequest, TurnStop};
use osprey_core::agent::{ChatOptions, ProviderKind};
use osprey_core::{Core, CoreOptions, events};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use osprey_types::{AgentTypeDraft, CoreEvent, TeamView, UiErrorCode};
use serde_json::json;
use tokio::sync::broadcast;

fn open(data: &std::path::Path, server: &AnthropicServer) -> (Core, osprey_agent::Runner) {
    let core = Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        ..CoreOptions::default()
    })
    .unwrap();
    let runner = core
        .chat_runner(&ChatOptions {
            gateway_app: None,
            provider: ProviderKind::Anthropic,
            base_url: Some(server.url()),
            model: Some("claude-test".into()),
            api_key: Some("test-key".into()),
            max_steps: None,
        })
        .unwrap();
    (core, runner)
}

/// Reads `session`'s team at each of its `team_changed` events until `done` holds, or fails at
/// the deadline with what was last seen.
async fn team_when(
    core: &Core,
    events: &mut events::Receiver,
    session: &str,
    done: impl Fn(&TeamView) -> bool,
) -> TeamView {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let team = core.session_team(session).unwrap();
        if done(&team) {
            return team;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the team never got there: {team:#?}");
        match tokio::time::timeout(left, events.recv()).await {
            Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(error)) => panic!("the event bus closed: {error}"),
            Err(_) => panic!("the team never got there: {team:#?}"),
        }
    }
}

fn draft(name: &str, packs: &[&str]) -> AgentTypeDraft {
    AgentTypeDraft {
        name: name.into(),
        description: "Looks at files and says what it found.".into(),
        prompt: "You are Scout. Read carefully and report in one line.".into(),
        model: None,
        packs: packs.iter().map(|p| p.to_string()).collect(),
    }
}

#[tokio::test]
async fn a_sub_agents_status_and_the_task_graph_show_in_the_team_as_they_change() {
    let server = AnthropicServer::start(vec![
        // The conversation plans one task, then delegates.
        ScriptedReply::call(
            "toolu_plan",
            "agent",
            json!({"resource": "graph", "action": "create_task", "title": "Gather sources"}),
        ),
        ScriptedReply::call(
            "toolu_spawn",
            "agent",
            json!({"resource": "task", "action": "spawn", "prompt": "Research the topic\nand take notes."}),
        ),
        // The child reports, then works the graph (its next step streams slowly, so the test
        // sees it running with its status).
        ScriptedReply::call(
            "toolu_status",
            "agent",
            json!({"resource": "task", "action": "set_status", "text": "Read 3 of 5 pages"}),
        ),
        ScriptedReply::call(
            "toolu_more",
            "agent",
            json!({"resource": "graph", "action": "create_task", "title": "Write the summary", "depends_on": [1]}),
        )
        .paced(Duration::from_millis(150)),
        ScriptedReply::call(
            "toolu_submit",
            "agent",
            json!({"resource": "graph", "action": "submit_result", "id": 1, "result": "five sources"}),
        ),
        ScriptedReply::text("Notes taken."),
        ScriptedReply::text("The research is done."),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (core, runner) = open(dir.path(), &server);
    let mut events = core.subscribe();
    let mut watcher = core.subscribe();
    assert_eq!(core.session_team("main").unwrap().agents, []);

    let turn = tokio::spawn(async move {
        runner
            .run_turn(TurnRequest::new("main", "research something"))
            .await
    });
    // While the child runs, its status is there.
    let live = team_when(&core, &mut watcher, "main", |team| {
        team.agents
            .first()
            .is_some_and(|a| a.progress.as_deref() == Some("Read 3 of 5 pages"))
    })
    .await;
    assert_eq!(live.agents[0].status, "running");
    assert!(live.agents[0].finished_ms.is_none());
    assert_eq!(live.graph.len(), 1);
    assert_eq!(live.graph[0].title, "Gather sources");
    assert_eq!(live.graph[0].status, "open");

    let outcome = turn.await.unwrap().unwrap();
    assert_eq!(outcome.stop, TurnStop::EndTurn);
    assert_eq!(outcome.text, "The research is done.");

    let team = core.session_team("main").unwrap();
    assert_eq!(team.session_id, "main");
    assert_eq!(team.branches, []);
    assert_eq!(team.agents.len(), 1);
    let child = &team.agents[0];
    assert_eq!(child.status, "done");
    assert_eq!(child.depth, 1);
    assert_eq!(child.agent_type, None);
    assert_eq!(child.prompt, "Research the topic\nand take notes.");
    assert_eq!(child.progress.as_deref(), Some("Read 3 of 5 pages"));
    assert_eq!(child.result.as_deref(), Some("Notes taken."));
    assert!(!child.interactive);
    assert!(child.finished_ms.unwrap() >= child.started_ms);
    // The graph: the child's task is waiting on the first, which the child submitted.
    assert_eq!(team.graph.len(), 2);
    let (first, second) = (&team.graph[0], &team.graph[1]);
    assert_eq!(first.status, "submitted");
    assert_eq!(first.created_by, "main");
    assert_eq!(
        first.submitted_by.as_deref(),
        Some(child.session_id.as_str())
    );
    assert_eq!(first.result.as_deref(), Some("five sources"));
    assert_eq!(second.title, "Write the summary");
    assert_eq!(second.status, "open");
    assert_eq!(second.depends_on, [first.id]);
    assert_eq!(second.blocked_by, [first.id]);
    assert_eq!(second.created_by, child.session_id);

    // Every change was announced, named by the conversation, never by the child's session:
    // the plan, the spawn, the status, two graph changes by the child and its ending.
    let mut changes = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let CoreEvent::TeamChanged { session_id } = event {
            changes.push(session_id);
        }
    }
    assert_eq!(changes.len(), 6, "{changes:?}");
    assert!(changes.iter().all(|s| s == "main"), "{changes:?}");
    // Another conversation has no team.
    let other = core.session_team("other").unwrap();
    assert!(other.agents.is_empty() && other.graph.is_empty());
}

#[tokio::test]
async fn a_person_cancels_a_running_sub_agent_from_the_team() {
    let long: String = (0..400).map(|n| format!("word{n} ")).collect();
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_spawn",
            "agent",
            json!({"resource": "task", "action": "spawn", "agent_type": "researcher", "prompt": "Read everything."}),
        ),
        // The child streams for minutes unless stopped.
        ScriptedReply::text(&long).paced(Duration::from_millis(300)),
        ScriptedReply::text("The researcher was stopped."),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (core, runner) = open(dir.path(), &server);
    let mut watcher = core.subscribe();
    let turn = tokio::spawn(async move {
        runner
            .run_turn(TurnRequest::new("main", "research everything"))
            .await
    });
    let running = team_when(&core, &mut watcher, "main", |team| {
        team.agents.first().is_some_and(|a| a.status == "running")
    })
    .await;
    let id = running.agents[0].id;
    assert_eq!(running.agents[0].agent_type.as_deref(), Some("researcher"));

    // Another conversation cannot cancel it.
    let refused = core.cancel_subagent("other", id).await.unwrap_err();
    assert_eq!(refused.code, UiErrorCode::InvalidSetting);
    assert!(
        refused.message.contains("no sub-agent"),
        "{}",
        refused.message
    );

    let started = Instant::now();
    // Cancelled once the child is streaming its answer (its request reached the model).
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.seen().len() < 2 {
        assert!(Instant::now() < deadline, "the child never asked the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancelled = core.cancel_subagent("main", id).await.unwrap();
    assert_eq!(cancelled.status, "cancelled");
    assert!(started.elapsed() < Duration::from_secs(10));
    let outcome = turn.await.unwrap().unwrap();
    assert_eq!(outcome.text, "The researcher was stopped.");
    assert_eq!(
        core.session_team("main").unwrap().agents[0].status,
        "cancelled"
    );
    // Cancelling again returns it as it is.
    assert_eq!(
        core.cancel_subagent("main", id).await.unwrap().status,
        "cancelled"
    );
}

#[tokio::test]
async fn a_saved_agent_type_is_checked_by_the_loader_and_used_by_the_next_spawn() {
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_spawn",
            "agent",
            json!({"resource": "task", "action": "spawn", "agent_type": "scout", "prompt": "Look around."}),
        ),
        ScriptedReply::text("Nothing odd."),
        ScriptedReply::text("Scout found nothing odd."),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (core, runner) = open(dir.path(), &server);

    // An unknown pack: refused with the loader's own message, and nothing is written.
    let refused = core.save_agent_type(draft("scout", &["nope"])).unwrap_err();
    assert_eq!(refused.code, UiErrorCode::InvalidSetting);
    assert!(
        refused
            .message
            .starts_with("agent type `scout` names the pack `nope`, which does not exist (packs: "),
        "{}",
        refused.message
    );
    assert!(!dir.path().join("agents/scout.json").exists());
    // The same file put in the folder by hand is refused at start with the same words.
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(other.path().join("agents")).unwrap();
    std::fs::write(
        other.path().join("agents/scout.json"),
        json!({"schemaVersion": 1, "name": "scout", "description": "Looks at files and says what it found.",
               "prompt": "You are Scout. Read carefully and report in one line.", "packs": ["nope"]})
        .to_string(),
    )
    .unwrap();
    let by_hand = Core::open(CoreOptions {
        data_dir: Some(other.path().to_path_buf()),
        ..CoreOptions::default()
    })
    .unwrap();
    let problems = by_hand.agent_catalog().problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].ends_with(&refused.message), "{problems:?}");
    drop(by_hand);

    let bad_name = core
        .save_agent_type(draft("Scout Two!", &["read-only-research"]))
        .unwrap_err();
    assert!(
        bad_name.message.contains("is not valid"),
        "{}",
        bad_name.message
    );

    // Saved: written to <data>/agents, listed, and the next spawn runs as it.
    let saved = core
        .save_agent_type(draft("scout", &["read-only-research"]))
        .unwrap();
    assert!(!saved.builtin);
    assert_eq!(saved.packs, ["read-only-research"]);
    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("agents/scout.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(written["schemaVersion"], 1);
    assert_eq!(written["packs"], json!(["read-only-research"]));
    let catalog = core.agent_catalog();
    assert!(
        catalog
            .types
            .iter()
            .any(|t| t.name == "scout" && !t.builtin)
    );
    assert!(
        catalog
            .types
            .iter()
            .any(|t| t.name == "researcher" && t.builtin)
    );
    let pack = catalog
        .packs
        .iter()
        .find(|p| p.name == "read-only-research")
        .unwrap();
    assert_eq!(pack.risk, "read-only");

    let outcome = runner
        .run_turn(TurnRequest::new("main", "send the scout"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "Scout found nothing odd.");
    let seen = server.seen();
    assert!(
        seen[1]
            .to_string()
            .contains("You are Scout. Read carefully"),
        "{}",
        seen[1]
    );
    let mut tools: Vec<String> = seen[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    tools.sort();
    assert_eq!(tools, ["agent", "file"]);
    assert_eq!(
        core.session_team("main").unwrap().agents[0]
            .agent_type
            .as_deref(),
        Some("scout")
    );

    // Edited in place, then deleted; a built-in type cannot be deleted.
    let mut edited = draft("scout", &["read-only-research", "web-fetch"]);
    edited.model = Some("claude-small".into());
    let edited = core.save_agent_type(edited).unwrap();
    assert_eq!(edited.model.as_deref(), Some("claude-small"));
    assert_eq!(edited.own_model.as_deref(), Some("claude-small"));
    let refused = core.delete_agent_type("researcher").unwrap_err();
    assert!(refused.message.contains("built-in"), "{}", refused.message);
    core.delete_agent_type("scout").unwrap();
    assert!(!dir.path().join("agents/scout.json").exists());
    assert!(!core.agent_catalog().types.iter().any(|t| t.name == "scout"));
}

#[tokio::test]
async fn a_pack_the_trust_level_refuses_cannot_be_saved_into_a_type() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = osprey_db::Database::open_in(dir.path()).unwrap();
        db.settings()
            .set(
                osprey_core::settings::AGENTS,
                &json!({"trust": "read-only"}),
            )
            .unwrap();
    }
    let core = Core::open(CoreOptions {
        data_dir: Some(dir.path().to_path_buf()),
        ..CoreOptions::default()
    })
    .unwrap();
    let catalog = core.agent_catalog();
    assert_eq!(catalog.trust, "read-only");
    assert!(catalog.unavailable_packs.iter().any(|p| p.name == "coding"));
    let refused = core
        .save_agent_type(draft("fixer", &["coding"]))
        .unwrap_err();
    assert_eq!(refused.code, UiErrorCode::InvalidSetting);
    assert!(
        refused.message.contains("cannot use the pack `coding`")
            && refused.message.contains("allows packs up to read-only"),
        "{}",
        refused.message
    );
    assert!(!dir.path().join("agents/fixer.json").exists());
    // A read-only pack is fine.
    core.save_agent_type(draft("fixer", &["read-only-research"]))
        .unwrap();
}
