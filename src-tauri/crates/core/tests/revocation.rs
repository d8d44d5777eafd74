//! The revocation sweep of a running Osprey against a real store server (in process, on a
//! loopback port): a running store app the store revokes is stopped, quarantined and announced
//! with `CoreEvent::AppRevoked`; when no revocation list can be had (the store down and the cache
//! too old), running store apps are held stopped, and run again once a list is back.
#![cfg(unix)]

use std::path::Path;
use std::time::{Duration, Instant};

use osprey_apps::Installer;
use osprey_apps::store_client::StoreClient;
use osprey_apps::supervisor::AppState;
use osprey_apps::trust::Trust;
use osprey_core::apps::MAX_REVOCATION_AGE;
use osprey_core::{Core, CoreOptions};
use osprey_store::{Store, StoreConfig};
use osprey_types::{CoreEvent, Origin, UiErrorCode};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use osprey_tests::{app_project, fixture_binary};

const TOKEN: &str = "sweep-test-token";
const DEADLINE: Duration = Duration::from_secs(60);

/// The store server, which can be taken down and brought back on the same port.
struct ServedStore {
    store: Store,
    address: std::net::SocketAddr,
    task: JoinHandle<()>,
}

impl ServedStore {
    async fn start(dir: &Path) -> ServedStore {
        let store = Store::open(StoreConfig {
            data_dir: dir.to_path_buf(),
            admin_token: TOKEN.into(),
        })
        .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let task = tokio::spawn(serve_forever(store.clone(), listener));
        ServedStore {
            store,
            address,
            task,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    fn down(&self) {
        self.task.abort();
    }

    async fn up(&mut self) {
        let listener = TcpListener::bind(self.address).await.unwrap();
        self.task = tokio::spawn(serve_forever(self.store.clone(), listener));
    }

    async fn revoke(&self, id: &str, reason: &str) {
        let body = json!({ "reason": reason }).to_string().into_bytes();
        self.admin(
            &format!("/api/v1/apps/{id}/revoke"),
            "application/json",
            body,
        )
        .await;
    }

    async fn admin(&self, path: &str, content_type: &str, body: Vec<u8>) {
        let status = reqwest::Client::new()
            .post(format!("{}{path}", self.url()))
            .bearer_auth(TOKEN)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap()
            .status();
        assert!(status.is_success(), "{path}: {status}");
    }
}

async fn serve_forever(store: Store, listener: TcpListener) {
    let _ = store.serve(listener).await;
}

/// Publishes the unit-converter fixture as `id` (the store signs it).
async fn publish(store: &ServedStore, root: &Path, id: &str) {
    let project = root.join(format!("project-{id}"));
    let manifest = json!({"id": id, "name": "Units", "version": "1.0.0",
        "provides": ["tool:convert"]});
    app_project(
        &project,
        &manifest,
        &fixture_binary("osprey-fixture-unit-converter"),
    );
    let package = root.join(format!("{id}.napp"));
    osprey_apps::napp::pack_to_file(&project, &package).unwrap();
    store
        .admin(
            "/api/v1/apps",
            "application/octet-stream",
            std::fs::read(&package).unwrap(),
        )
        .await;
}

async fn install(store: &ServedStore, data: &Path, id: &str) {
    std::fs::create_dir_all(data.join("apps")).unwrap();
    let client = StoreClient::new(store.url());
    let trust = Trust::new(client.clone(), data.join("trust"), MAX_REVOCATION_AGE);
    client
        .install(id, &Installer::new(data.join("apps")), &trust)
        .await
        .unwrap();
}

async fn until(what: &str, mut condition: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !condition().await {
        assert!(started.elapsed() < DEADLINE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn running(core: &Core, id: &str) -> bool {
    core.test_apps()
        .supervisor()
        .status()
        .await
        .unwrap_or_default()
        .iter()
        .any(|(running, state)| running == id && matches!(state, AppState::Running { .. }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_running_app_is_stopped_quarantined_and_announced() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let store = ServedStore::start(&root.path().join("store")).await;
    publish(&store, root.path(), "com.example.units").await;
    install(&store, &data, "com.example.units").await;
    let db = osprey_db::Database::open_in(&data).unwrap();
    db.settings().set("store.url", &json!(store.url())).unwrap();
    drop(db);

    let core = Core::open(CoreOptions {
        data_dir: Some(data.clone()),
        policy: None,
        ..CoreOptions::default()
    })
    .unwrap();
    let mut events = core.subscribe();
    core.start_apps().unwrap();
    until("the app to run", async || {
        running(&core, "com.example.units").await
    })
    .await;

    store.revoke("com.example.units", "leaks keys").await;
    let report = core.test_apps().sweep_revocations(true).await;
    assert_eq!(
        report.revoked,
        [("com.example.units".to_string(), "leaks keys".to_string())]
    );
    assert!(!running(&core, "com.example.units").await);
    let installed = core.test_apps().installer().list();
    assert!(
        installed[0]
            .quarantined
            .as_deref()
            .is_some_and(|why| why.contains("leaks keys")),
        "{:?}",
        installed[0].quarantined
    );
    let announced = tokio::time::timeout(DEADLINE, async {
        loop {
            if let CoreEvent::AppRevoked { app_id, reason } = events.recv().await.unwrap() {
                return (app_id, reason);
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(
        announced,
        ("com.example.units".to_string(), "leaks keys".to_string())
    );
    core.stop_apps().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_revocation_list_store_apps_are_held_until_one_is_back() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let mut store = ServedStore::start(&root.path().join("store")).await;
    publish(&store, root.path(), "com.example.units").await;
    install(&store, &data, "com.example.units").await;
    let db = osprey_db::Database::open_in(&data).unwrap();
    db.settings().set("store.url", &json!(store.url())).unwrap();
    db.settings()
        .set("store.revocation_max_age_hours", &json!(0))
        .unwrap();
    drop(db);
    let core = Core::open(CoreOptions {
        data_dir: Some(data.clone()),
        policy: None,
        ..CoreOptions::default()
    })
    .unwrap();
    core.start_apps().unwrap();
    until("the app to run", async || {
        running(&core, "com.example.units").await
    })
    .await;

    // The store goes away. With `store.revocation_max_age_hours` at 0 the list fetched at launch
    // is too old within the second: then no list can be had, and what runs is held.
    store.down();
    let mut report = core.test_apps().sweep_revocations(true).await;
    let started = Instant::now();
    while report.unavailable.is_none() {
        assert!(
            started.elapsed() < DEADLINE,
            "the cached list never aged: {report:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        report = core.test_apps().sweep_revocations(true).await;
    }
    assert!(
        report
            .unavailable
            .as_deref()
            .is_some_and(|why| why.contains("cannot be reached")),
        "{report:?}"
    );
    assert_eq!(report.held, ["com.example.units"]);
    assert!(!running(&core, "com.example.units").await);

    store.up().await;
    let report = core.test_apps().sweep_revocations(true).await;
    assert_eq!(report.unavailable, None, "{report:?}");
    assert_eq!(report.released, ["com.example.units"]);
    assert!(running(&core, "com.example.units").await);
    core.stop_apps().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_package_is_refused_at_install_by_every_front_end() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let store = ServedStore::start(&root.path().join("store")).await;
    publish(&store, root.path(), "com.example.units").await;
    // A copy of the signed package, downloaded while it was still good.
    let saved = root.path().join("saved");
    std::fs::create_dir_all(&saved).unwrap();
    let mut downloaded = StoreClient::new(store.url())
        .download("com.example.units", &saved)
        .await
        .unwrap();
    let package = root.path().join("units.napp");
    std::io::copy(
        &mut downloaded,
        &mut std::fs::File::create(&package).unwrap(),
    )
    .unwrap();
    store.revoke("com.example.units", "leaks keys").await;

    let db = osprey_db::Database::open_in(&data).unwrap();
    db.settings().set("store.url", &json!(store.url())).unwrap();
    drop(db);
    let core = Core::open(CoreOptions {
        data_dir: Some(data.clone()),
        policy: Some(osprey_core::PolicyOverride {
            level: Some(osprey_tools::Level::Full),
            ask: None,
        }),
        ..CoreOptions::default()
    })
    .unwrap();

    // The desktop's `install_app` command and `osprey app install` call this, by store id and
    // from a file.
    for source in ["com.example.units", package.to_str().unwrap()] {
        let error = core.install_app(source, None).await.unwrap_err();
        assert_eq!(error.code, UiErrorCode::Revoked, "{source}: {error}");
        assert!(error.message.contains("leaks keys"), "{error}");
    }
    // The agent's `app` tool (an install is asked every time, even at level `full`: approved).
    let approver = std::sync::Arc::new(osprey_tools::FixedApprover::new(
        osprey_types::ApprovalAnswer::Once,
    ));
    let ctx = osprey_tools::ToolContext::new(Origin::User, Duration::from_secs(60))
        .with_approver(approver.clone());
    let result = core
        .call_tool_with(
            &ctx,
            "app",
            json!({"action": "install", "id": "com.example.units"}),
        )
        .await;
    assert_eq!(approver.count(), 1, "the install was asked");
    assert!(result.is_error, "{result:?}");
    assert!(result.text_content().contains("revoked"), "{result:?}");

    assert!(core.installed_apps().await.is_empty());
    let leftovers: Vec<_> = std::fs::read_dir(data.join("apps"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
