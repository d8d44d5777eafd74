//! Sub-agents through the core as `osprey chat` builds them: the runner core makes is offered to
//! the agent tool's task resource, so a chat turn can delegate to a child that runs on the same
//! provider (a real Anthropic-format SSE server on loopback) and store.

use osprey_agent::{TurnRequest, TurnStop};
use osprey_core::agent::{ChatOptions, ProviderKind};
use osprey_core::{Core, CoreOptions};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use serde_json::json;

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
    let core = Core::open(CoreOptions {
        data_dir: Some(dir.path().to_path_buf()),
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
    let core = Core::open(CoreOptions {
        data_dir: Some(dir.path().to_path_buf()),
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
