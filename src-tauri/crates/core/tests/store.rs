//! The Store page's core methods against a real store server (in process, on a loopback port)
//! and a real SQLite data folder: the front page's shelves and categories, search within a
//! category with paging, an app's page with its permissions in plain words and reviews,
//! installing with progress events, an update that adds a permission (highlighted, staged,
//! approved), and the errors a person sees when the store is unreachable or the app unknown.
#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use osprey_apps::store_client::{Listing, StoreClient};
use osprey_core::{Core, CoreOptions};
use osprey_store::{Store, StoreConfig};
use osprey_types::{AppInstallOutcome, CoreEvent, InstallStage, StoreInstallState, UiErrorCode};
use serde_json::json;
use tokio::net::TcpListener;

const TOKEN: &str = "store-page-token";
const FAKE_ELF: &[u8] = b"\x7FELF\x02\x01\x01\x00store page fixture";

async fn serve(dir: &Path) -> String {
    let store = Store::open(StoreConfig {
        data_dir: dir.to_path_buf(),
        admin_token: TOKEN.into(),
    })
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = store.serve(listener).await;
    });
    url
}

/// Publishes an unsigned package of `id` at `version` (the store signs it).
async fn publish(
    url: &str,
    root: &Path,
    id: &str,
    version: &str,
    permissions: &[&str],
    listing: Listing,
) {
    let project = root.join(format!("project-{id}-{version}"));
    let manifest = json!({"id": id, "name": id.to_uppercase(), "version": version,
        "description": format!("{id} does things"), "provides": ["tool:convert"],
        "permissions": permissions});
    let package = osprey_tests::app_package(&project, &manifest, FAKE_ELF);
    StoreClient::new(url)
        .publish_listed(package, TOKEN, &listing)
        .await
        .unwrap();
}

fn open(data: &Path, store_url: &str) -> Core {
    osprey_db::Database::open_in(data)
        .unwrap()
        .settings()
        .set("store.url", &json!(store_url))
        .unwrap();
    Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        ..CoreOptions::default()
    })
    .unwrap()
}

fn listed(category: &str, featured: bool) -> Listing {
    Listing {
        featured,
        category: Some(category.into()),
        publisher: Some("Acme Apps".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browse_install_with_progress_and_approve_an_update_that_adds_a_permission() {
    let root = tempfile::tempdir().unwrap();
    let url = serve(&root.path().join("store")).await;
    publish(
        &url,
        root.path(),
        "notes",
        "1.0.0",
        &["network:api.example.com"],
        listed("productivity", true),
    )
    .await;
    publish(
        &url,
        root.path(),
        "todo",
        "1.0.0",
        &[],
        listed("productivity", false),
    )
    .await;
    publish(
        &url,
        root.path(),
        "lint",
        "1.0.0",
        &["filesystem:read"],
        listed("developer", false),
    )
    .await;
    reqwest::Client::new()
        .post(format!("{url}/api/v1/apps/notes/reviews"))
        .json(&json!({"author": "ana", "rating": 4, "body": "Handy."}))
        .send()
        .await
        .unwrap();
    let core = open(&root.path().join("data"), &url);

    let home = core.store_home().await.unwrap();
    assert_eq!(home.store_url, url);
    assert_eq!(
        home.featured
            .iter()
            .map(|a| a.id.as_str())
            .collect::<Vec<_>>(),
        ["notes"]
    );
    assert_eq!(home.popular.len(), 3);
    let categories: Vec<(String, u64)> = home
        .categories
        .iter()
        .map(|c| (c.name.clone(), c.count))
        .collect();
    assert_eq!(
        categories,
        [
            ("developer".to_string(), 1),
            ("productivity".to_string(), 2)
        ]
    );
    assert_eq!(home.featured[0].publisher.as_deref(), Some("Acme Apps"));

    let shelf = core
        .store_catalog("", Some("productivity"), 1)
        .await
        .unwrap();
    assert_eq!((shelf.total, shelf.page), (2, 1));
    let found = core.store_catalog("notes does", None, 1).await.unwrap();
    assert_eq!(
        found.apps.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        ["notes"]
    );
    assert_eq!(
        core.store_catalog("", None, 2).await.unwrap().apps.len(),
        0,
        "one page holds all three"
    );

    let page = core.store_app("notes").await.unwrap();
    assert_eq!(page.install_state, StoreInstallState::NotInstalled);
    assert_eq!(
        page.permissions[0].explanation,
        "Connect to api.example.com over the internet"
    );
    assert_eq!(page.reviews.len(), 1);
    assert_eq!(page.reviews[0].author, "ana");
    assert_eq!(page.app.rating, Some(4.0));
    assert_eq!(page.app.review_count, 1);
    assert!(page.app.size > 0 && page.sha256.len() == 64);

    // Install: progress events, downloading then verifying, before the answer.
    let mut events = core.subscribe();
    let report = core.install_store_app("notes").await.unwrap();
    assert_eq!(report.outcome, AppInstallOutcome::Installed);
    let mut stages = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let CoreEvent::AppInstallProgress {
            app_id,
            stage,
            received,
            total,
        } = event
        {
            assert_eq!(app_id, "notes");
            if stage == InstallStage::Downloading {
                assert!(total.is_none_or(|total| received <= total));
            }
            stages.push(stage);
        }
    }
    assert_eq!(
        stages.first(),
        Some(&InstallStage::Downloading),
        "{stages:?}"
    );
    assert_eq!(stages.last(), Some(&InstallStage::Verifying), "{stages:?}");
    let page = core.store_app("notes").await.unwrap();
    assert_eq!(page.install_state, StoreInstallState::Installed);
    assert_eq!(page.app.installed_version.as_deref(), Some("1.0.0"));
    assert!(
        core.store_home().await.unwrap().featured[0]
            .installed_version
            .is_some()
    );

    // An update that adds a permission: shown, staged, then approved.
    publish(
        &url,
        root.path(),
        "notes",
        "1.1.0",
        &["network:api.example.com", "filesystem:read"],
        Listing::default(),
    )
    .await;
    let page = core.store_app("notes").await.unwrap();
    assert_eq!(page.install_state, StoreInstallState::UpdateAvailable);
    assert_eq!(page.added_permissions, ["filesystem:read"]);
    assert_eq!(
        page.app.category.as_deref(),
        Some("productivity"),
        "kept by the update"
    );
    let report = core.install_store_app("notes").await.unwrap();
    assert_eq!(report.outcome, AppInstallOutcome::PendingApproval);
    assert_eq!(report.new_permissions, ["filesystem:read"]);
    assert_eq!(
        core.store_app("notes").await.unwrap().install_state,
        StoreInstallState::UpdatePending
    );
    let status = core.approve_app_update("notes").await.unwrap();
    assert_eq!(status.version, "1.1.0");
    let page = core.store_app("notes").await.unwrap();
    assert_eq!(page.install_state, StoreInstallState::Installed);
    assert!(page.added_permissions.is_empty());

    // Uninstalled: the store shows it installable again.
    core.uninstall_app("notes").await.unwrap();
    assert_eq!(
        core.store_app("notes").await.unwrap().install_state,
        StoreInstallState::NotInstalled
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_app_an_unreachable_store_and_no_store_say_so_with_their_codes() {
    let root = tempfile::tempdir().unwrap();
    let url = serve(&root.path().join("store")).await;
    let core = open(&root.path().join("data"), &url);
    let error = core.store_app("nope").await.unwrap_err();
    assert_eq!(error.code, UiErrorCode::UnknownApp, "{error}");
    let error = core.install_store_app("../etc").await.unwrap_err();
    assert_eq!(
        error.code,
        UiErrorCode::NotInstalled,
        "not an app id: {error}"
    );

    // A port nothing listens on.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let other = tempfile::tempdir().unwrap();
    let core = open(other.path(), &dead);
    let started = std::time::Instant::now();
    let error = core.store_home().await.unwrap_err();
    assert_eq!(error.code, UiErrorCode::StoreUnavailable);
    assert!(error.message.contains("could not be reached"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let error = core.install_store_app("notes").await.unwrap_err();
    assert_eq!(error.code, UiErrorCode::StoreUnavailable, "{error}");

    let none = tempfile::tempdir().unwrap();
    let core = Core::open(CoreOptions {
        data_dir: Some(none.path().to_path_buf()),
        ..CoreOptions::default()
    })
    .unwrap();
    if std::env::var_os("OSPREY_STORE_URL").is_none() {
        let error = core.store_catalog("x", None, 1).await.unwrap_err();
        assert_eq!(error.code, UiErrorCode::StoreUnavailable);
        assert!(error.message.contains("Settings"), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_are_explained_for_every_front_end() {
    let explained = osprey_core::store::explain_permissions(&[
        "filesystem:read".to_string(),
        "network:*".to_string(),
    ]);
    assert_eq!(explained[0].explanation, "Read files on your computer");
    assert_eq!(
        explained[1].sensitivity,
        osprey_types::PermissionSensitivity::High
    );
}

/// A store set in Settings while Osprey runs serves the next install (and its signing key and
/// revocation list) without a restart; so does a store moved to another address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_set_while_running_serves_the_next_install() {
    if std::env::var_os("OSPREY_STORE_URL").is_some() {
        eprintln!("skipped: OSPREY_STORE_URL overrides the store.url setting");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let first = serve(&root.path().join("store-a")).await;
    let second = serve(&root.path().join("store-b")).await;
    publish(
        &first,
        root.path(),
        "todo",
        "1.0.0",
        &[],
        Listing::default(),
    )
    .await;
    publish(
        &second,
        root.path(),
        "lint",
        "1.0.0",
        &[],
        Listing::default(),
    )
    .await;
    let data = root.path().join("data");
    let core = Core::open(CoreOptions {
        data_dir: Some(data.clone()),
        ..CoreOptions::default()
    })
    .unwrap();
    let error = core.install_store_app("todo").await.unwrap_err();
    assert_eq!(error.code, UiErrorCode::StoreUnavailable, "{error}");

    core.set_setting("store.url", json!(first)).await.unwrap();
    let report = core.install_store_app("todo").await.unwrap();
    assert_eq!(report.outcome, AppInstallOutcome::Installed, "{report:?}");

    // Moved: the other store, with its own signing key, serves the next one.
    core.set_setting("store.url", json!(second)).await.unwrap();
    let report = core.install_store_app("lint").await.unwrap();
    assert_eq!(report.outcome, AppInstallOutcome::Installed, "{report:?}");
    assert!(data.join("apps/todo/manifest.json").is_file());
    assert!(data.join("apps/lint/manifest.json").is_file());
}
