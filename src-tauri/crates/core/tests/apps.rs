//! The app platform wired into the core: `Core::open` builds it without launching anything,
//! `start_apps` launches the installed apps in the background with their tools reaching the
//! registry, `stop_apps` leaves no process behind.
#![cfg(unix)]

use std::path::Path;
use std::time::{Duration, Instant};

use osprey_apps::Installer;
use osprey_apps::install::QUARANTINE_MARKER;
use osprey_apps::runtime::{PID_FILE, process_gone};
use osprey_apps::supervisor::AppState;
use osprey_core::{Core, CoreOptions, PolicyOverride};
use osprey_tools::Level;
use osprey_types::Origin;
use serde_json::{Value, json};

use osprey_tests::{app_project, fixture_binary};

/// Writes an app project (manifest with `extra` fields, SKILL.md, binary) into `dir`.
fn project(dir: &Path, id: &str, extra: Value, binary: &Path) {
    let mut manifest = json!({
        "id": id,
        "name": format!("Fixture {id}"),
        "version": "0.3.0",
    });
    for (key, value) in extra.as_object().unwrap() {
        manifest[key] = value.clone();
    }
    app_project(dir, &manifest, binary);
}

fn open(data: &Path) -> Core {
    Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        policy: Some(PolicyOverride {
            level: Some(Level::Full),
            ask: None,
        }),
        ..CoreOptions::default()
    })
    .unwrap()
}

async fn until(what: &str, deadline: Duration, mut condition: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !condition().await {
        assert!(started.elapsed() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn app_list(core: &Core) -> Vec<Value> {
    let result = core
        .call_tool(Origin::User, "app", json!({"action": "list"}))
        .await;
    assert!(!result.is_error, "{result:?}");
    let listed: Value = serde_json::from_str(&result.text_content()).unwrap();
    listed["apps"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_apps_serve_their_tools_through_the_core_and_stop_cleanly() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let binary = fixture_binary("osprey-fixture-unit-converter");
    let core = open(&data);
    assert!(core.test_registry().names().contains(&"app".to_owned()));
    let installer = Installer::new(data.join("apps"));
    // Sideloaded: no store signatures to check against.
    project(
        &root.path().join("units"),
        "units",
        json!({"provides": ["tool:convert"]}),
        &binary,
    );
    installer.sideload(&root.path().join("units")).unwrap();
    // Sorts before `units`, so its launch request is handled first.
    let quarantined = root.path().join("aaa-quarantined");
    project(
        &quarantined,
        "aaa-quarantined",
        json!({"provides": ["tool:convert"]}),
        &binary,
    );
    installer.sideload(&quarantined).unwrap();
    std::fs::write(quarantined.join(QUARANTINE_MARKER), "test").unwrap();

    // Opening launches nothing.
    assert!(!core.test_registry().names().contains(&"convert".to_owned()));
    assert!(!core.test_apps().supervisor().is_running());

    let started = Instant::now();
    core.start_apps().unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "start_apps must not wait for launches"
    );
    let registry = core.test_registry().clone();
    until("the convert tool", Duration::from_secs(30), async || {
        registry.names().contains(&"convert".to_owned())
    })
    .await;

    let result = core
        .call_tool(
            Origin::User,
            "convert",
            json!({"value": 2, "from": "lb", "to": "kg"}),
        )
        .await;
    assert!(!result.is_error, "{result:?}");
    let value = serde_json::from_str::<Value>(&result.text_content()).unwrap()["value"]
        .as_f64()
        .unwrap();
    assert!((value - 0.907_184_74).abs() < 1e-9);

    let status = core.test_apps().supervisor().status().await.unwrap();
    let pid = match status.as_slice() {
        [(id, AppState::Running { pid })] if id == "units" => *pid,
        other => panic!("only units runs, not {other:?}"),
    };
    assert!(!quarantined.join(PID_FILE).exists());
    let listed = app_list(&core).await;
    let units = listed.iter().find(|app| app["id"] == "units").unwrap();
    assert_eq!(units["state"]["running"], true);

    // A second start changes nothing.
    core.start_apps().unwrap();
    assert_eq!(
        core.test_apps().supervisor().status().await.unwrap(),
        status
    );

    tokio::time::timeout(Duration::from_secs(20), core.stop_apps())
        .await
        .expect("stop_apps returns within 20 s");
    assert!(process_gone(pid), "the app process is gone");
    assert!(!root.path().join("units").join(PID_FILE).exists());
    assert!(!core.test_registry().names().contains(&"convert".to_owned()));
    // With the supervisor stopped, the app tool still lists the apps, as not running.
    let listed = app_list(&core).await;
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|app| app["state"]["running"] == false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_with_150_installed_apps_launches_nothing_and_lists_them_all() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let apps = data.join("apps");
    // Installed as copies (the listing reads manifests only; nothing is launched).
    let binary = Path::new("/bin/true");
    for n in 0..150 {
        let id = format!("app-{n:03}");
        project(
            &apps.join(&id),
            &id,
            json!({"provides": ["tool:fixture"]}),
            binary,
        );
    }
    let core = open(&data);
    assert!(!core.test_apps().supervisor().is_running());
    let listed = app_list(&core).await;
    assert_eq!(listed.len(), 150);
    let ids: Vec<&str> = listed.iter().filter_map(|app| app["id"].as_str()).collect();
    let expected: Vec<String> = (0..150).map(|n| format!("app-{n:03}")).collect();
    assert_eq!(ids, expected);
    assert!(listed.iter().all(|app| app["state"]["running"] == false));
    for id in &expected {
        assert!(!apps.join(id).join(PID_FILE).exists());
    }
}

#[test]
fn start_apps_outside_a_runtime_is_an_error_not_a_panic() {
    let root = tempfile::tempdir().unwrap();
    let core = open(root.path());
    let error = core.start_apps().unwrap_err();
    assert!(format!("{error:#}").contains("tokio runtime"), "{error:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_hook_app_filters_tool_calls_made_through_the_core() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let core = open(&data);
    let guard = root.path().join("guard");
    project(
        &guard,
        "guard",
        json!({
            "provides": ["hooks"],
            "permissions": ["hook:tool.pre_execute", "hook:session.message_append"],
            // Refusing a call is `handled: true`, which counts only for a hook the app overrides.
            "overrides": ["tool.pre_execute"],
        }),
        &fixture_binary("osprey-fixture-hooks-app"),
    );
    Installer::new(data.join("apps")).sideload(&guard).unwrap();

    core.start_apps().unwrap();
    // The supervisor reports an app running only after its hooks are registered.
    let supervisor = core.test_apps().supervisor().clone();
    until(
        "the guard app running",
        Duration::from_secs(30),
        async || {
            matches!(
                supervisor.status().await.as_deref(),
                Ok([(id, AppState::Running { .. })]) if id == "guard"
            )
        },
    )
    .await;

    let forbidden = json!({"command": "echo forbidden"});
    let result = core
        .call_tool(Origin::User, "shell", forbidden.clone())
        .await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result.text_content().contains("refused by hooks-app"),
        "{result:?}"
    );

    tokio::time::timeout(Duration::from_secs(20), core.stop_apps())
        .await
        .expect("stop_apps returns within 20 s");
    let result = core.call_tool(Origin::User, "shell", forbidden).await;
    assert!(!result.is_error, "{result:?}");
}
