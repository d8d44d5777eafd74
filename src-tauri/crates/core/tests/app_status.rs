//! What the desktop's Apps page and app UI windows get from the core, with a real sideloaded UI
//! app process: states from the installer and supervisor (quarantined with its reason,
//! sideloaded flagged), `AppStateChanged` events as the app comes up, and `serve_app_ui`
//! (static files with traversal refused, `/api/*` reaching the app's UIService).
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use osprey_apps::install::QUARANTINE_MARKER;
use osprey_apps::{Installer, napp};
use osprey_core::app_status::UiRequest;
use osprey_core::{Core, CoreOptions};
use osprey_tests::fixture_binary;
use osprey_types::{AppRunState, CoreEvent};
use serde_json::{Value, json};

fn project(dir: &Path, id: &str, name: &str, binary: &Path) {
    std::fs::create_dir_all(dir.join("ui")).unwrap();
    let manifest = json!({
        "id": id, "name": name, "version": "1.2.0", "description": "A UI fixture",
        "provides": ["ui"],
    });
    std::fs::write(dir.join(napp::MANIFEST), manifest.to_string()).unwrap();
    std::fs::write(dir.join("SKILL.md"), "# fixture\n").unwrap();
    std::fs::write(dir.join("ui/index.html"), "<h1>Fixture UI</h1>").unwrap();
    std::fs::write(dir.join("ui/app.js"), "console.log(1)").unwrap();
    std::fs::copy(binary, dir.join("binary")).unwrap();
    std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn get(path: &str) -> UiRequest {
    UiRequest {
        method: "GET".into(),
        path: path.into(),
        ..UiRequest::default()
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_page_sees_states_and_events_and_app_windows_are_served() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let binary = fixture_binary("osprey-fixture-ui-app");
    let core = Core::open(CoreOptions {
        data_dir: Some(data.clone()),
        policy: None,
        ..CoreOptions::default()
    })
    .unwrap();
    let installer = Installer::new(data.join("apps"));
    project(&root.path().join("panel"), "ui-panel", "Panel", &binary);
    installer.sideload(&root.path().join("panel")).unwrap();
    project(&root.path().join("held"), "held-app", "Held", &binary);
    installer.sideload(&root.path().join("held")).unwrap();
    std::fs::write(
        root.path().join("held").join(QUARANTINE_MARKER),
        "revoked by the store",
    )
    .unwrap();

    // Before start_apps: installed, not running.
    let before = core.app_statuses().await;
    assert_eq!(
        before
            .iter()
            .map(|a| (a.id.as_str(), a.state))
            .collect::<Vec<_>>(),
        [
            ("held-app", AppRunState::Quarantined),
            ("ui-panel", AppRunState::Stopped)
        ]
    );
    assert_eq!(before[0].reason.as_deref(), Some("revoked by the store"));
    assert!(before.iter().all(|a| a.sideloaded && a.has_ui));
    assert_eq!(before[1].version, "1.2.0");

    let mut events = core.subscribe();
    core.forward_app_events();
    core.start_apps().unwrap();

    // The panel comes up, and the page is told.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        assert!(!remaining.is_zero(), "no running state event for ui-panel");
        match tokio::time::timeout(remaining, events.recv()).await {
            Ok(Ok(CoreEvent::AppStateChanged { app })) if app.id == "ui-panel" => {
                if app.state == AppRunState::Running {
                    break;
                }
                assert!(
                    matches!(app.state, AppRunState::Launching | AppRunState::Running),
                    "unexpected state on the way up: {app:?}"
                );
            }
            Ok(Ok(_)) => {}
            Ok(Err(error)) => panic!("event bus: {error}"),
            Err(_) => panic!("no running state event for ui-panel"),
        }
    }
    let running = core.app_status("ui-panel").await.unwrap();
    assert_eq!(running.state, AppRunState::Running);
    assert_eq!(
        core.app_status("held-app").await.unwrap().state,
        AppRunState::Quarantined
    );

    // Static files, with the right types; nothing outside ui/.
    let index = core.serve_app_ui("ui-panel", get("/")).await;
    assert_eq!(index.status, 200);
    assert_eq!(index.body, b"<h1>Fixture UI</h1>");
    assert!(
        header(&index.headers, "content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let script = core.serve_app_ui("ui-panel", get("/app.js")).await;
    assert!(
        header(&script.headers, "content-type")
            .unwrap()
            .contains("javascript")
    );
    for escape in [
        "/../manifest.json",
        "/%2e%2e/manifest.json",
        "/../../osprey.db",
    ] {
        let refused = core.serve_app_ui("ui-panel", get(escape)).await;
        assert_eq!(refused.status, 404, "{escape} was served");
    }

    // The API reaches the app process.
    let echoed = core
        .serve_app_ui(
            "ui-panel",
            UiRequest {
                method: "POST".into(),
                path: "/api/echo".into(),
                query: "x=1".into(),
                headers: vec![("content-type".into(), "text/plain".into())],
                body: b"hello app".to_vec(),
            },
        )
        .await;
    assert_eq!(echoed.status, 200);
    let echoed: Value = serde_json::from_slice(&echoed.body).unwrap();
    assert_eq!(echoed["path"], "/echo");
    assert_eq!(echoed["query"], "x=1");
    assert_eq!(echoed["body"], "hello app");

    // Unknown, quarantined (not running) and update-less apps get clear answers.
    assert_eq!(core.serve_app_ui("nope", get("/")).await.status, 404);
    let held = core.serve_app_ui("held-app", get("/")).await;
    assert_eq!(held.status, 503);
    assert!(String::from_utf8_lossy(&held.body).contains("not running"));
    let error = core.reject_app_update("ui-panel").await.unwrap_err();
    assert_eq!(error.code, osprey_types::UiErrorCode::NoPendingUpdate);
    assert!(error.message.contains("ui-panel"), "{error}");

    core.stop_apps().await;
    assert_eq!(
        core.app_status("ui-panel").await.unwrap().state,
        AppRunState::Stopped
    );
}

/// A signed store package of the `notes` app at `version` asking for `permissions`.
fn signed_package(
    root: &Path,
    key: &osprey_apps::KeyPair,
    version: &str,
    permissions: &[&str],
) -> std::path::PathBuf {
    let dir = root.join(format!("notes-{version}"));
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({
        "id": "notes", "name": "Notes", "version": version,
        "provides": ["tool:note"], "permissions": permissions,
    });
    std::fs::write(dir.join(napp::MANIFEST), manifest.to_string()).unwrap();
    std::fs::write(dir.join("SKILL.md"), "# notes\n").unwrap();
    // Never launched here: any ELF-looking executable will do.
    std::fs::write(dir.join("binary"), b"\x7FELF\x02\x01\x01\x00fixture").unwrap();
    std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let unsigned = dir.with_extension("unsigned.napp");
    napp::pack_to_file(&dir, &unsigned).unwrap();
    let signed = dir.with_extension("napp");
    napp::sign_package(&unsigned, key, &signed).unwrap();
    signed
}

#[tokio::test]
async fn a_staged_update_is_shown_and_rejected_or_approved_from_the_page() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let core = Core::open(CoreOptions {
        data_dir: Some(data.clone()),
        policy: None,
        ..CoreOptions::default()
    })
    .unwrap();
    let key = osprey_apps::KeyPair::generate().unwrap();
    let installer = Installer::new(data.join("apps"));
    let install = |version: &str, permissions: &[&str]| {
        let package = signed_package(root.path(), &key, version, permissions);
        installer
            .install(std::fs::File::open(package).unwrap(), &key.public())
            .unwrap()
    };
    install("1.0.0", &[]);
    install("2.0.0", &["network:api.example.com"]);
    let mut events = core.subscribe();

    let staged = core.app_status("notes").await.unwrap();
    assert_eq!(
        staged.version, "1.0.0",
        "the old version stays until approved"
    );
    assert_eq!(
        staged.pending_permissions,
        Some(vec!["network:api.example.com".to_string()])
    );
    assert!(!staged.sideloaded);

    let rejected = core.reject_app_update("notes").await.unwrap();
    assert_eq!(rejected.pending_permissions, None);
    assert_eq!(rejected.version, "1.0.0");
    match events.try_recv().unwrap() {
        CoreEvent::AppStateChanged { app } => assert_eq!(app, rejected),
        other => panic!("{other:?}"),
    }

    install("2.0.0", &["network:api.example.com"]);
    let approved = core.approve_app_update("notes").await.unwrap();
    assert_eq!(approved.version, "2.0.0");
    assert_eq!(approved.pending_permissions, None);
    match events.try_recv().unwrap() {
        CoreEvent::AppStateChanged { app } => assert_eq!(app.version, "2.0.0"),
        other => panic!("{other:?}"),
    }
    // The installer's own code reaches the UI, not a catch-all.
    let error = osprey_types::UiError::from(core.approve_app_update("notes").await.unwrap_err());
    assert_eq!(error.code, osprey_types::UiErrorCode::NoPendingUpdate);
    assert!(error.message.contains("notes"), "{error:?}");
}
