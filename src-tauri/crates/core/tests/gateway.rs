//! An installed app that provides `gateway` is a model provider: a chat turn through
//! `Core::gateway_runner` streams from the real sidecar process, its tool calls go through the
//! registry, and its errors are classified like any provider's.
#![cfg(unix)]

use std::path::Path;

use osprey_apps::Installer;
use osprey_core::agent::{AgentEvent, ChatChoice, ProviderKind, TurnRequest, TurnStop};
use osprey_core::{Core, CoreOptions, PolicyOverride};
use osprey_tests::{app_project, fixture_binary};
use osprey_tools::Level;
use serde_json::json;

fn sideload_gateway(root: &Path, data: &Path) {
    let project = root.join("echo-model");
    let manifest = json!({
        "id": "echo-model",
        "name": "Echo model",
        "version": "1.0.0",
        "provides": ["gateway"],
        "permissions": ["network:api.example.com"],
    });
    app_project(
        &project,
        &manifest,
        &fixture_binary("osprey-fixture-gateway-app"),
    );
    Installer::new(data.join("apps"))
        .sideload(&project)
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_app_answers_chat_turns_and_its_failures_are_classified() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let core = Core::open(CoreOptions {
        data_dir: Some(data.clone()),
        policy: Some(PolicyOverride {
            level: Some(Level::Full),
            ask: None,
        }),
        ..CoreOptions::default()
    })
    .unwrap();
    sideload_gateway(root.path(), &data);
    core.start_apps().unwrap();
    // The first model call waits for the app to come up; no polling here.
    let runner = core.gateway_runner("echo-model", Some("echo-1".into()), Some(3));

    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let mut request = TurnRequest::new("g1", "hello from the gateway");
    request.events = Some(events);
    let outcome = runner.run_turn(request).await.unwrap();
    assert_eq!(outcome.stop, TurnStop::EndTurn);
    assert_eq!(outcome.text, "hello from the gateway");
    let mut deltas = Vec::new();
    let mut thinking = String::new();
    while let Ok(event) = received.try_recv() {
        match event {
            AgentEvent::TextDelta(text) => deltas.push(text),
            AgentEvent::ThinkingDelta(text) => thinking.push_str(&text),
            _ => {}
        }
    }
    assert_eq!(deltas, ["hello", " from", " the", " gateway"]);
    assert_eq!(thinking, "echoing for echo-1");

    // A tool call from the app goes through the registry: `convert` is not registered, so the
    // model gets the registry's correction as an error result.
    let outcome = runner
        .run_turn(TurnRequest::new("g2", "call a tool"))
        .await
        .unwrap();
    assert!(outcome.steps >= 2, "{outcome:?}");
    let calls = core.test_db().sessions().tool_calls("g2").unwrap();
    assert!(!calls.is_empty());
    assert_eq!(calls[0].name, "convert");
    assert_eq!(calls[0].status, "error");
    let result = calls[0].result.as_ref().unwrap().to_string();
    assert!(result.contains("There is no tool `convert`"), "{result}");

    // The app's error code is the provider error the runner reports.
    let error = runner
        .run_turn(TurnRequest::new("g3", "fail"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "rate_limited");

    // An app that is not installed is named in the error.
    let missing = core.gateway_runner("no-such-app", None, None);
    let error = missing
        .run_turn(TurnRequest::new("g4", "hi"))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("no app `no-such-app` is installed"),
        "{error}"
    );

    // Stored as the default model (`osprey config set provider.app echo-model`), chat without
    // any choice goes through the gateway; naming a provider for the run overrides it.
    let refused = core
        .set_provider_setting("provider.app", "not-installed")
        .unwrap_err();
    assert!(
        refused.to_string().contains("no app `not-installed`"),
        "{refused}"
    );
    core.set_provider_setting("provider.app", "echo-model")
        .unwrap();
    let options = core.resolve_chat(&ChatChoice::default()).await.unwrap();
    assert_eq!(options.gateway_app.as_deref(), Some("echo-model"));
    let runner = core.chat_runner(&options).unwrap();
    let outcome = runner
        .run_turn(TurnRequest::new("g5", "through the default"))
        .await
        .unwrap();
    assert_eq!(outcome.text, "through the default");
    let named = core
        .resolve_chat(&ChatChoice {
            provider: Some(ProviderKind::Ollama),
            base_url: Some("http://127.0.0.1:9".into()),
            ..ChatChoice::default()
        })
        .await
        .unwrap();
    assert_eq!(named.gateway_app, None);
    assert_eq!(named.provider, ProviderKind::Ollama);
    core.stop_apps().await;
}
