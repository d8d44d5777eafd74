//! The `app` tool through the registry: list, launch, settings (saved, and pushed to the running
//! app with Configure), stop, uninstall; and the system prompt's installed-apps section.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::sync::Arc;
use std::time::Duration;

use osprey_apps::Installer;
use osprey_apps::capabilities::Capabilities;
use osprey_apps::hooks::AppHooks;
use osprey_apps::manage_tool::{AppsTool, installed_apps_prompt};
use osprey_apps::runtime::{self, Launcher};
use osprey_apps::settings::SettingsStore;
use osprey_apps::supervisor::{Supervisor, SupervisorConfig};
use osprey_tools::{Registry, ToolContext};
use osprey_types::{ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use fixtures::{Apps, fixture_binary, registry};

async fn app_tool(registry: &Registry, input: Value) -> ToolResult {
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(30));
    registry.execute(&ctx, "app", input).await
}

fn json_of(result: &ToolResult) -> Value {
    assert!(!result.is_error, "{result:?}");
    serde_json::from_str(&result.text_content()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_tool_manages_apps_through_the_registry() {
    let apps = Apps::new();
    apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"], "description": "Converts units"}),
    );
    let registry = registry(&apps.dir());
    let settings = SettingsStore::new(apps.dir());
    let host =
        Capabilities::new(registry.clone(), AppHooks::default()).with_settings(settings.clone());
    let cancel = CancellationToken::new();
    let supervisor = Supervisor::start(
        Launcher::new(apps.dir(), fixtures::quiet()),
        Arc::new(host),
        SupervisorConfig::default(),
        cancel.clone(),
    );
    let installer = Installer::new(apps.dir());
    registry.register_domain(AppsTool::new(
        installer.clone(),
        supervisor.clone(),
        settings.clone(),
        None,
    ));

    let listed = json_of(&app_tool(&registry, json!({"action": "list"})).await);
    assert_eq!(listed["apps"][0]["id"], "units");
    assert_eq!(listed["apps"][0]["state"]["running"], false);

    let launched = json_of(&app_tool(&registry, json!({"action": "launch", "id": "units"})).await);
    let pid = u32::try_from(launched["pid"].as_u64().unwrap()).unwrap();
    assert!(registry.get("convert").is_some(), "its tool is registered");
    let listed = json_of(&app_tool(&registry, json!({"action": "list"})).await);
    assert_eq!(listed["apps"][0]["state"]["pid"], pid);

    let configured = json_of(
        &app_tool(
            &registry,
            json!({"action": "configure", "id": "units", "values": {"precision": 3, "unit_system": "metric"}}),
        )
        .await,
    );
    assert_eq!(configured["pushed_to_running_app"], true);
    let read = json_of(&app_tool(&registry, json!({"action": "settings", "id": "units"})).await);
    assert_eq!(
        read["settings"],
        json!({"precision": 3, "unit_system": "metric"})
    );
    let removed = json_of(
        &app_tool(
            &registry,
            json!({"action": "configure", "id": "units", "values": {"unit_system": null}}),
        )
        .await,
    );
    assert_eq!(removed["settings"], json!({"precision": 3}));

    let states = supervisor.status().await.unwrap();
    let prompt = installed_apps_prompt(&installer.list(), &states);
    assert!(
        prompt.contains(
            "Fixture units (units 0.3.0): Converts units; provides tool:convert; running"
        ),
        "{prompt}"
    );

    let missing = app_tool(&registry, json!({"action": "settings", "id": "ghost"})).await;
    assert!(missing.is_error);
    assert_eq!(missing.code, Some(ErrorCode::InvalidInput));
    let browse = app_tool(&registry, json!({"action": "browse", "query": "x"})).await;
    assert!(
        browse.text_content().contains("store_unavailable"),
        "{browse:?}"
    );

    json_of(&app_tool(&registry, json!({"action": "stop", "id": "units"})).await);
    assert!(runtime::process_gone(pid));
    assert!(registry.get("convert").is_none());
    // Uninstalling is asked every time, whatever the policy level: nobody to ask refuses it.
    let unasked = app_tool(&registry, json!({"action": "uninstall", "id": "units"})).await;
    assert_eq!(unasked.code, Some(ErrorCode::PolicyDenied), "{unasked:?}");
    assert_eq!(installer.list().len(), 1);
    let approver = std::sync::Arc::new(osprey_tools::FixedApprover::new(
        osprey_types::ApprovalAnswer::Once,
    ));
    let ctx =
        ToolContext::new(Origin::User, Duration::from_secs(30)).with_approver(approver.clone());
    json_of(
        &registry
            .execute(&ctx, "app", json!({"action": "uninstall", "id": "units"}))
            .await,
    );
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].once_only);
    assert!(installer.list().is_empty());
    cancel.cancel();
}
