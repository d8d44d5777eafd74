//! The hook dispatcher against real hook apps: the priority chain, `handled`, actions, the 500 ms
//! deadline, the circuit breaker, permission and unknown-hook refusals, and the registry calling
//! through it.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use osprey_apps::hooks::{AppHooks, HookKind};
use osprey_apps::runtime::RunningApp;
use osprey_tools::{
    Call, CallFacts, HookDispatcher, Level, Policy, Registry, RegistryConfig, Tool, ToolContext,
};
use osprey_types::{Origin, ToolResult};
use serde_json::{Value, json};

use fixtures::{Apps, fixture_binary};

const GUARD_PERMISSIONS: [&str; 2] = ["hook:tool.pre_execute", "hook:session.message_append"];

/// The hooks app as "guard" (filter priority 5) and the probe app as "probe" (filter priority 1,
/// hangs on `"hang": true`), both launched and registered.
struct Hooked {
    apps: Apps,
    hooks: AppHooks,
    guard: RunningApp,
    probe: RunningApp,
}

async fn hooked() -> Hooked {
    hooked_with(json!({
        "provides": ["hooks"],
        "permissions": GUARD_PERMISSIONS,
        "overrides": ["tool.pre_execute"],
    }))
    .await
}

/// [`hooked`] with the guard's manifest fields given.
async fn hooked_with(guard_manifest: Value) -> Hooked {
    let apps = Apps::new();
    apps.install(
        "guard",
        &fixture_binary("osprey-fixture-hooks-app"),
        guard_manifest,
    );
    apps.install(
        "probe",
        &fixture_binary("osprey-fixture-probe-app"),
        json!({"provides": ["hooks", "tool:environment"], "permissions": ["hook:*"]}),
    );
    let launcher = apps.launcher();
    let guard = launcher.launch("guard").await.unwrap();
    let probe = launcher.launch("probe").await.unwrap();
    let hooks = AppHooks::default();
    let registered = hooks
        .register(guard.manifest(), guard.channel())
        .await
        .unwrap();
    assert!(registered.refused.is_empty(), "{registered:?}");
    assert_eq!(registered.accepted.len(), 2);
    hooks
        .register(probe.manifest(), probe.channel())
        .await
        .unwrap();
    Hooked {
        apps,
        hooks,
        guard,
        probe,
    }
}

impl Hooked {
    async fn stop(self) {
        self.guard.stop().await;
        self.probe.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_chain_by_priority_and_handled_stops_the_chain() {
    let hooked = hooked().await;
    let hooks = &hooked.hooks;
    assert_eq!(
        hooks.subscribers("tool.pre_execute"),
        [
            ("probe".to_owned(), HookKind::Filter, 1),
            ("guard".to_owned(), HookKind::Filter, 5)
        ]
    );
    assert!(hooks.has_subscribers("tool.pre_execute"));
    assert!(hooks.has_subscribers("session.message_append"));
    assert!(!hooks.has_subscribers("tool.post_execute"));

    let outcome = hooks
        .apply_filter(
            "tool.pre_execute",
            json!({"tool": "file", "input": {"path": "/tmp/a"}}),
        )
        .await;
    assert!(!outcome.handled);
    assert_eq!(outcome.payload["input"]["checked_by"], "hooks-app");
    assert_eq!(outcome.payload["input"]["path"], "/tmp/a");

    let outcome = hooks
        .apply_filter(
            "tool.pre_execute",
            json!({"tool": "shell", "input": {"command": "rm forbidden"}}),
        )
        .await;
    assert!(outcome.handled);
    assert_eq!(outcome.payload["result"]["code"], "hook_rejected");

    hooks
        .do_action(
            "session.message_append",
            json!({"session_id": "s1", "text": "hello"}),
        )
        .await;
    let recorded =
        std::fs::read_to_string(hooked.apps.dir().join("guard/data/actions.jsonl")).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(recorded.trim()).unwrap()["text"],
        "hello"
    );

    hooks.deregister("guard");
    assert_eq!(hooks.subscribers("tool.pre_execute").len(), 1);
    assert!(!hooks.has_subscribers("session.message_append"));
    hooked.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handled_skips_the_built_in_step_only_for_a_hook_the_app_overrides() {
    // The same guard without `overrides`: its rewrite still applies, its `handled` does not.
    let hooked =
        hooked_with(json!({"provides": ["hooks"], "permissions": GUARD_PERMISSIONS})).await;
    let outcome = hooked
        .hooks
        .apply_filter(
            "tool.pre_execute",
            json!({"tool": "shell", "input": {"command": "rm forbidden"}}),
        )
        .await;
    assert!(!outcome.handled, "{outcome:?}");
    assert_eq!(outcome.payload["result"]["code"], "hook_rejected");
    hooked.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_filter_is_skipped_at_the_deadline_and_the_breaker_opens_after_three() {
    let hooked = hooked().await;
    let hooks = &hooked.hooks;
    let hang = json!({"tool": "file", "input": {"hang": true}});
    let calm = json!({"tool": "file", "input": {}});

    // Failures must be consecutive: a success in between resets the count.
    for payload in [&hang, &hang, &calm, &hang, &hang] {
        let started = Instant::now();
        let outcome = hooks
            .apply_filter("tool.pre_execute", payload.clone())
            .await;
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_millis(1500), "took {elapsed:?}");
        // The chain went on to the next filter.
        assert_eq!(outcome.payload["input"]["checked_by"], "hooks-app");
    }
    assert!(!hooks.is_disabled("probe"));

    let started = Instant::now();
    hooks.apply_filter("tool.pre_execute", hang.clone()).await;
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert!(hooks.is_disabled("probe"), "third consecutive failure");
    assert!(!hooks.is_disabled("guard"));

    // The open breaker skips the app without calling it.
    let started = Instant::now();
    let outcome = hooks.apply_filter("tool.pre_execute", hang.clone()).await;
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(outcome.payload["input"]["checked_by"], "hooks-app");
    assert!(
        hooks.has_subscribers("tool.pre_execute"),
        "guard still listens"
    );

    // Registering again (as after a restart) closes the breaker.
    hooks
        .register(hooked.probe.manifest(), hooked.probe.channel())
        .await
        .unwrap();
    assert!(!hooks.is_disabled("probe"));
    hooked.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_without_their_permission_are_refused() {
    let apps = Apps::new();
    apps.install(
        "guard",
        &fixture_binary("osprey-fixture-hooks-app"),
        json!({"provides": ["hooks"], "permissions": ["hook:session.message_append"]}),
    );
    let guard = apps.launcher().launch("guard").await.unwrap();
    let hooks = AppHooks::default();
    let registration = hooks
        .register(guard.manifest(), guard.channel())
        .await
        .unwrap();
    assert_eq!(
        registration.accepted,
        [("session.message_append".to_owned(), HookKind::Action, 10)]
    );
    assert_eq!(registration.refused.len(), 1);
    assert_eq!(registration.refused[0].0, "tool.pre_execute");
    assert!(registration.refused[0].1.contains("hook:tool.pre_execute"));
    assert!(!hooks.has_subscribers("tool.pre_execute"));
    guard.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_hook_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("app.sock");
    let app = osprey_app_sdk::App::new()
        .filter("tool.teleport", 0, |_| async {
            osprey_app_sdk::Filter::Unchanged
        })
        .filter("tool.post_execute", 0, |_| async {
            osprey_app_sdk::Filter::Unchanged
        });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn({
        let socket = socket.clone();
        async move {
            app.serve_at(&socket, async {
                let _ = stopped.await;
            })
            .await
        }
    });
    fixtures::until("the socket", Duration::from_secs(10), || socket.exists()).await;
    let manifest = osprey_apps::Manifest::parse(
        json!({
            "id": "inline", "name": "Inline", "version": "1.0.0",
            "provides": ["hooks"], "permissions": ["hook:*"]
        })
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    let channel = osprey_rpc::AppChannel::uninspected(
        osprey_rpc::connect(&socket, Duration::from_secs(5))
            .await
            .unwrap(),
    );
    let hooks = AppHooks::default();
    let registration = hooks.register(&manifest, channel).await.unwrap();
    assert_eq!(registration.refused.len(), 1, "{registration:?}");
    assert_eq!(registration.refused[0].0, "tool.teleport");
    assert!(
        registration.refused[0]
            .1
            .starts_with("unknown hook `tool.teleport` (known: tool.pre_execute"),
        "{registration:?}"
    );
    assert_eq!(
        registration.accepted,
        [("tool.post_execute".to_owned(), HookKind::Filter, 10)]
    );
    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
}

/// A tool that answers with the input it was given.
struct Echo {
    schema: Value,
}

impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Answers with its input"
    }
    fn schema(&self) -> &Value {
        &self.schema
    }
    fn facts(&self, _call: &Call) -> CallFacts {
        CallFacts {
            approval: osprey_tools::ApprovalNeed::None,
            summary: "echo".into(),
            ..CallFacts::default()
        }
    }
    fn execute<'a>(&'a self, _ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move { ToolResult::text(Value::Object(call.input).to_string()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_calls_through_the_app_hooks() {
    let hooked = hooked().await;
    let data = tempfile::tempdir().unwrap();
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(Level::Allowlist),
        data.path(),
    ));
    registry.register(Arc::new(Echo {
        schema: json!({"type": "object"}),
    }));
    registry.set_hooks(Arc::new(hooked.hooks.clone()));
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(10));
    let result = registry.execute(&ctx, "echo", json!({"text": "hi"})).await;
    assert!(!result.is_error, "{result:?}");
    let echoed: Value = serde_json::from_str(&result.text_content()).unwrap();
    assert_eq!(
        echoed["checked_by"], "hooks-app",
        "the filter rewrote the input"
    );
    assert_eq!(echoed["text"], "hi");
    hooked.stop().await;
}
