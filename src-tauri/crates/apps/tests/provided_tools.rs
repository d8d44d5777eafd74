//! A tool app's tools in the registry: calls go registry -> gRPC -> the app process and back,
//! with the app's error codes, deadlines and name rules.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::time::Duration;

use osprey_apps::provided_tools::register_tools;
use osprey_tools::ToolContext;
use osprey_types::{ErrorCode, Origin};
use serde_json::{Value, json};

use fixtures::{Apps, fixture_binary, registry};

fn ctx(timeout: Duration) -> ToolContext {
    ToolContext::new(Origin::User, timeout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_tool_is_called_through_the_registry() {
    let apps = Apps::new();
    apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"]}),
    );
    let app = apps.launcher().launch("units").await.unwrap();
    let registry = registry(apps.dir().as_path());
    let registration = register_tools(&registry, app.manifest(), app.channel(), &[])
        .await
        .unwrap();
    assert_eq!(registration.registered, ["convert"]);
    let tool = registry.get("convert").unwrap();
    assert!(tool.description().contains("units"));
    assert_eq!(tool.schema()["required"], json!(["value", "from", "to"]));

    let result = registry
        .execute(
            &ctx(Duration::from_secs(10)),
            "convert",
            json!({"value": 2, "from": "lb", "to": "kg"}),
        )
        .await;
    assert!(!result.is_error, "{result:?}");
    let value = serde_json::from_str::<Value>(&result.text_content()).unwrap()["value"]
        .as_f64()
        .unwrap();
    assert!((value - 0.907_184_74).abs() < 1e-9);

    let result = registry
        .execute(
            &ctx(Duration::from_secs(10)),
            "convert",
            json!({"value": 2, "from": "lb", "to": "parsec"}),
        )
        .await;
    assert!(result.is_error);
    assert_eq!(result.code, Some(ErrorCode::InvalidInput));

    // The same name from another app, or a built-in's name, is refused.
    let again = register_tools(&registry, app.manifest(), app.channel(), &[])
        .await
        .unwrap();
    assert!(again.registered.is_empty());
    assert!(again.refused[0].1.contains("already exists"));
    // Re-registering the same app's tools (after a restart) replaces them.
    let replaced = register_tools(
        &registry,
        app.manifest(),
        app.channel(),
        &["convert".into()],
    )
    .await
    .unwrap();
    assert_eq!(replaced.registered, ["convert"]);

    app.stop().await;
    let result = registry
        .execute(
            &ctx(Duration::from_secs(10)),
            "convert",
            json!({"value": 1, "from": "m", "to": "ft"}),
        )
        .await;
    assert!(result.is_error);
    assert_eq!(result.code, Some(ErrorCode::ToolFailed));
    assert!(result.text_content().contains("unavailable"), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undeclared_tools_are_not_registered_and_deadlines_hold() {
    let apps = Apps::new();
    // The probe serves environment, crash, attempt, settings, account and hang; the manifest
    // declares only two.
    apps.install(
        "probe",
        &fixture_binary("osprey-fixture-probe-app"),
        json!({"provides": ["tool:environment", "tool:hang"]}),
    );
    let app = apps.launcher().launch("probe").await.unwrap();
    let registry = registry(apps.dir().as_path());
    let registration = register_tools(&registry, app.manifest(), app.channel(), &[])
        .await
        .unwrap();
    assert_eq!(registration.registered, ["environment", "hang"]);
    let mut refused: Vec<&str> = registration
        .refused
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    refused.sort_unstable();
    assert_eq!(refused, ["account", "attempt", "crash", "settings"]);
    assert!(registry.get("crash").is_none());

    let started = std::time::Instant::now();
    let result = registry
        .execute(&ctx(Duration::from_millis(400)), "hang", json!({}))
        .await;
    assert!(result.is_error);
    assert_eq!(result.code, Some(ErrorCode::Timeout), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    app.health().await.unwrap();
    app.stop().await;
}
