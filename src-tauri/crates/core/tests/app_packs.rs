//! Packs naming tools that come and go after start-up: an app's own packs (its manifest's
//! `packs`) and the person's packs naming an app's (or an MCP server's) tools load while those
//! tools are registered, and an agent type built on them runs only then. A real app process (the
//! unit-converter fixture) registers and unregisters its tool.
#![cfg(unix)]

use std::path::Path;
use std::time::{Duration, Instant};

use osprey_apps::Installer;
use osprey_core::{Core, CoreOptions};
use osprey_tests::{app_project, fixture_binary};
use osprey_tools::ToolContext;
use osprey_types::Origin;
use serde_json::{Value, json};

async fn types(core: &Core) -> Value {
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(10)).with_session("main");
    let result = core
        .test_registry()
        .execute(
            &ctx,
            "agent",
            json!({"resource": "task", "action": "types"}),
        )
        .await;
    assert!(!result.is_error, "{result:?}");
    serde_json::from_str(&result.text_content()).unwrap()
}

fn type_named<'a>(types: &'a Value, name: &str) -> Option<&'a Value> {
    types["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
}

async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn write(path: &Path, value: Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packs_naming_an_apps_tools_load_while_the_app_runs() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    // The person's type on the app's pack, and their own pack naming the app's tool before it
    // exists (as one naming an MCP server's tool would).
    write(
        &data.join("agents/converter.json"),
        json!({"schemaVersion": 1, "name": "converter", "description": "Converts units",
               "prompt": "Convert what you are asked to.", "packs": ["units"]}),
    );
    write(
        &data.join("packs/late.json"),
        json!({"schemaVersion": 1, "name": "late", "description": "The converter",
               "tools": ["convert"], "riskProfile": "standard"}),
    );
    let core = Core::open(CoreOptions {
        data_dir: Some(data.clone()),
        ..CoreOptions::default()
    })
    .unwrap();
    let project = root.path().join("units");
    app_project(
        &project,
        &json!({"id": "units", "name": "Units", "version": "1.0.0",
                "provides": ["tool:convert"],
                "packs": [{"schemaVersion": 1, "name": "units", "description": "Unit conversion",
                           "tools": ["convert"], "riskProfile": "standard"}]}),
        &fixture_binary("osprey-fixture-unit-converter"),
    );
    Installer::new(data.join("apps"))
        .sideload(&project)
        .unwrap();

    // Before the app runs: its tool is not there, so neither pack loads and the type is refused
    // with why.
    let before = types(&core).await;
    assert!(type_named(&before, "converter").is_none(), "{before}");
    let refused = before["refused_files"].to_string();
    assert!(refused.contains("converter.json"), "{refused}");
    assert!(refused.contains("late.json"), "{refused}");

    // The app starts and registers `convert`: at the next use the catalog is built again.
    core.start_apps().unwrap();
    let registry = core.test_registry().clone();
    until("the convert tool", || {
        registry.names().contains(&"convert".to_owned())
    })
    .await;
    let running = types(&core).await;
    let converter = type_named(&running, "converter").unwrap_or_else(|| panic!("{running}"));
    assert_eq!(converter["tools"], "convert", "{converter}");
    assert_eq!(converter["not_available"], json!({}));
    assert_eq!(
        running["refused_files"],
        json!([]),
        "the person's pack on the app's tool loads too"
    );

    // The app stops: its tool goes, and the type cannot run any more, saying why.
    tokio::time::timeout(Duration::from_secs(20), core.stop_apps())
        .await
        .unwrap();
    assert!(!registry.names().contains(&"convert".to_owned()));
    let stopped = types(&core).await;
    let converter = type_named(&stopped, "converter").unwrap_or_else(|| panic!("{stopped}"));
    let why = converter["not_available"]["units"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("convert"), "{converter}");
}
