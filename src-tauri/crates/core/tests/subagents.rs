//! Sub-agents through the core as `osprey chat` builds them: the runner core makes is offered to
//! the agent tool's task resource, so a chat turn can delegate to a child that runs on the same
//! provider (a real Anthropic-format SSE server on loopback) and store.

use osprey_agent::{TurnRequest, TurnStop};
use osprey_core::agent::{ChatOptions, ProviderKind};
use osprey_core::{Core, CoreOptions};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use serde_json::json;

/// The core on `data`, and a chat runner on the loopback Anthropic server.
fn open(data: &std::path::Path, server: &AnthropicServer) -> (Core, osprey_agent::Runner) {
    let core = Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        policy: None,
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

#[tokio::test]
async fn a_chat_runner_from_the_core_can_delegate_to_a_sub_agent() {
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_spawn",
            "agent",
            json!({"resource": "subagent", "action": "spawn", "prompt": "Say hello."}),
        ),
        ScriptedReply::text("Hello from the child."),
        ScriptedReply::text("The child said hello."),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (core, runner) = open(dir.path(), &server);
    let outcome = runner
        .run_turn(TurnRequest::new("main", "delegate a greeting"))
        .await
        .unwrap();
    assert_eq!(outcome.stop, TurnStop::EndTurn);
    assert_eq!(outcome.text, "The child said hello.");

    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert!(
        seen[1]
            .to_string()
            .contains("You are a sub-agent (depth 1 of")
    );
    assert_eq!(seen[1]["model"], "claude-test");
    assert!(seen[2].to_string().contains("Hello from the child."));
    let tasks = core.test_db().subagent_tasks().list("main", 10).unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].status, "done");
    assert_eq!(tasks[0].result.as_deref(), Some("Hello from the child."));
}

#[tokio::test]
async fn the_subagents_setting_is_validated_and_read_at_start_up() {
    use osprey_core::settings::{SUBAGENTS, validate};
    validate(SUBAGENTS, &json!({"max_depth": 1, "timeout_seconds": 60})).unwrap();
    let error = validate(SUBAGENTS, &json!({"max_running": 0}))
        .unwrap_err()
        .to_string();
    assert!(error.contains("max_running"), "{error}");
    validate(SUBAGENTS, &json!({"depth": 1})).unwrap_err();

    // max_depth 0 turns sub-agents off: the spawn is refused and the model is told why.
    let dir = tempfile::tempdir().unwrap();
    {
        let db = osprey_db::Database::open_in(dir.path()).unwrap();
        db.settings()
            .set(SUBAGENTS, &json!({"max_depth": 0}))
            .unwrap();
    }
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_spawn",
            "agent",
            json!({"action": "spawn", "prompt": "Say hello."}),
        ),
        ScriptedReply::text("I will do it myself."),
    ])
    .unwrap();
    let (core, runner) = open(dir.path(), &server);
    let outcome = runner
        .run_turn(TurnRequest::new("main", "delegate"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "I will do it myself.");
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "no child ran");
    assert!(seen[1].to_string().contains("depth limit reached"));
    assert!(
        core.test_db()
            .subagent_tasks()
            .list("main", 10)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_core_loads_packs_and_types_and_a_researcher_gets_only_its_tools() {
    use osprey_core::settings::{AGENTS, validate};
    validate(
        AGENTS,
        &json!({"trust": "standard", "models": {"summarizer": "small"}}),
    )
    .unwrap();
    validate(AGENTS, &json!({"trust": "everything"})).unwrap_err();

    let dir = tempfile::tempdir().unwrap();
    // One bad pack file beside a good one: the good one and every built-in still load.
    let packs = dir.path().join("packs");
    std::fs::create_dir_all(&packs).unwrap();
    std::fs::write(packs.join("bad.json"), r#"{"schemaVersion": 1, "name": "bad", "description": "x", "tools": ["nonexistent"], "riskProfile": "standard"}"#).unwrap();
    std::fs::write(packs.join("good.json"), r#"{"schemaVersion": 1, "name": "good", "description": "Grep only.", "tools": ["file.grep"], "riskProfile": "read-only"}"#).unwrap();
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_spawn",
            "agent",
            json!({"action": "spawn", "agent_type": "researcher", "prompt": "Look around."}),
        ),
        ScriptedReply::call(
            "toolu_shell",
            "shell",
            json!({"resource": "bash", "action": "exec", "command": "echo hi"}),
        ),
        ScriptedReply::text("I may not use the shell."),
        ScriptedReply::text("The researcher could not use the shell."),
    ])
    .unwrap();
    let (core, runner) = open(dir.path(), &server);
    let outcome = runner
        .run_turn(TurnRequest::new("main", "research something"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "The researcher could not use the shell.");

    let seen = server.seen();
    assert_eq!(seen.len(), 4);
    let names = |request: &serde_json::Value| -> Vec<String> {
        let mut names: Vec<String> = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    assert!(names(&seen[0]).contains(&"shell".to_string()));
    // The researcher: file reads, web fetch and search, and the spawn tool; no shell, no desktop.
    assert_eq!(names(&seen[1]), ["agent", "file", "web"]);
    let web = seen[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "web")
        .unwrap()
        .to_string();
    let web: serde_json::Value = serde_json::from_str(&web).unwrap();
    assert_eq!(
        web["input_schema"]["properties"]["action"]["enum"],
        json!(["fetch", "query"])
    );
    // Fields only the browser's actions use are not shown either.
    assert!(
        web["input_schema"]["properties"].get("full_page").is_none(),
        "{web}"
    );
    let refused = seen[2].to_string();
    assert!(
        refused.contains("role_denied")
            || refused.contains("is not among the tools of role `researcher`"),
        "{refused}"
    );
    let calls = core
        .test_db()
        .sessions()
        .tool_calls(&core.test_db().subagent_tasks().list("main", 1).unwrap()[0].session_id)
        .unwrap();
    assert_eq!(calls[0].code.as_deref(), Some("role_denied"));

    // The bad file is reported with why, the good pack and the built-in types are there.
    let ctx = osprey_tools::ToolContext::new(
        osprey_types::Origin::User,
        std::time::Duration::from_secs(10),
    )
    .with_session("main");
    let types = core
        .test_registry()
        .execute(
            &ctx,
            "agent",
            json!({"resource": "task", "action": "types"}),
        )
        .await;
    let types: serde_json::Value = serde_json::from_str(&types.text_content()).unwrap();
    let refused = types["refused_files"].to_string();
    assert!(
        refused.contains("bad.json") && refused.contains("`nonexistent`, which is not registered"),
        "{refused}"
    );
    assert_eq!(types["refused_files"].as_array().unwrap().len(), 1);
    let names: Vec<&str> = types["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"researcher") && names.contains(&"coder"),
        "{names:?}"
    );
}

const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[tokio::test]
async fn the_core_loads_the_persons_advisors_and_vision_runs_on_the_vision_setting_s_model() {
    use osprey_core::settings::{VISION, validate};
    validate(VISION, &json!({"model": "vision-x"})).unwrap();
    validate(VISION, &json!({"modle": "vision-x"})).unwrap_err();

    let dir = tempfile::tempdir().unwrap();
    let advisors = dir.path().join("advisors");
    std::fs::create_dir_all(&advisors).unwrap();
    std::fs::write(
        advisors.join("lawyer.json"),
        r#"{"schemaVersion": 1, "name": "lawyer", "description": "Contract risk.", "prompt": "You are a careful contract lawyer."}"#,
    )
    .unwrap();
    {
        let db = osprey_db::Database::open_in(dir.path()).unwrap();
        db.settings()
            .set(VISION, &json!({"model": "vision-x"}))
            .unwrap();
    }
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_personas",
            "agent",
            json!({"resource": "advisor", "action": "personas"}),
        ),
        ScriptedReply::call(
            "toolu_look",
            "vision",
            json!({"action": "analyze", "prompt": "What shape is it?"}),
        ),
        ScriptedReply::text("A red square."),
        ScriptedReply::text("It is a red square, and a lawyer is on the panel."),
    ])
    .unwrap();
    let (_core, runner) = open(dir.path(), &server);
    let mut turn = TurnRequest::new("main", "What is in this picture?");
    // A whole 1x1 PNG: an image the API could not read would be left out before it goes.
    turn.images = vec![osprey_agent::InputImage {
        mime_type: "image/png".into(),
        data: PIXEL_PNG.into(),
    }];
    let outcome = runner.run_turn(turn).await.unwrap();
    assert_eq!(
        outcome.text,
        "It is a red square, and a lawyer is on the panel."
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 4);
    // The person's persona is listed beside the built-in ones.
    let listed = seen[1].to_string();
    assert!(listed.contains("lawyer"), "{listed}");
    assert!(listed.contains("skeptic"));
    // The vision call went out on the setting's model, with the attached image and no tools.
    assert_eq!(seen[2]["model"], "vision-x");
    assert!(seen[2].to_string().contains(PIXEL_PNG));
    assert!(
        seen[2]
            .get("tools")
            .is_none_or(|t| t.as_array().unwrap().is_empty())
    );
    assert!(seen[3].to_string().contains("A red square."));
}
