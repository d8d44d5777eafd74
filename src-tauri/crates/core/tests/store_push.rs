//! Store-pushed changes end to end: a real store (`osprey store serve`, its own process) and a
//! running Osprey started as the desktop and `osprey daemon` start it (`Core::start`), with the
//! unit-converter fixture as a real sandboxed app. The follower reaches the store through a
//! loopback TCP relay the test can cut, as a network drop would.
//!
//! - A running app revoked through the store's admin API is stopped and quarantined through the
//!   push, seconds after, not at the hourly sweep, even behind an event Osprey cannot read
//!   (skipped, its id kept, the connection kept).
//! - A new version with the same permissions updates the running app; one that adds a
//!   permission, published while the connection is down, arrives on the reconnect (which sends
//!   `Last-Event-ID`) and is staged, not applied, until approved.
//! - A store skill revoked while no Osprey ran is removed when Osprey starts (its first
//!   connection to the store sweeps afresh); one revoked while Osprey runs leaves the catalog
//!   through the push and cannot be loaded.
//! - The person's install elsewhere (`installed`) is asked, with the app's name, version and
//!   permissions, and installs only on yes; their removal elsewhere removes it here. Neither is
//!   told back to the store; an install or removal the person makes here is.
//! - A pushed install still asked when Osprey stops is asked again at the next start.
//! - Changing `store.url` follows the new store.
#![cfg(unix)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use osprey_apps::Installer;
use osprey_apps::skill_package::pack_skill;
use osprey_apps::store_client::{Listing, StoreClient};
use osprey_apps::supervisor::AppState;
use osprey_apps::trust::Trust;
use osprey_core::apps::MAX_REVOCATION_AGE;
use osprey_core::events::Receiver;
use osprey_core::{Core, CoreOptions, Services, Start};
use osprey_tests::store::StoreProcess;
use osprey_tests::{cli_binary, fixture_binary};
use osprey_types::{ApprovalAnswer, CoreEvent};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOKEN: &str = "push-admin-token";
/// Far below the hourly sweep: what happens within it happened through the push.
const DEADLINE: Duration = Duration::from_secs(60);
const UNITS: &str = "com.example.units";

/// A loopback TCP relay to the store that can be cut (every open connection closed, new ones
/// refused) and restored, recording the request head of each connection it relays.
struct Relay {
    url: String,
    down: Arc<std::sync::atomic::AtomicBool>,
    connections: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    requests: Arc<Mutex<Vec<String>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Relay {
    async fn start(upstream: &str) -> Relay {
        let upstream = upstream.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let accept = tokio::spawn({
            let (down, connections, requests) =
                (down.clone(), connections.clone(), requests.clone());
            async move {
                loop {
                    let Ok((mut client, _)) = listener.accept().await else {
                        return;
                    };
                    if down.load(std::sync::atomic::Ordering::SeqCst) {
                        drop(client);
                        continue;
                    }
                    let (upstream, requests) = (upstream.clone(), requests.clone());
                    let relay = tokio::spawn(async move {
                        let mut head = Vec::new();
                        let mut buffer = [0u8; 4096];
                        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                            match client.read(&mut buffer).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => head.extend_from_slice(&buffer[..n]),
                            }
                        }
                        requests
                            .lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(&head).to_lowercase());
                        let Ok(mut server) = TcpStream::connect(&upstream).await else {
                            return;
                        };
                        if server.write_all(&head).await.is_err() {
                            return;
                        }
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    });
                    connections.lock().unwrap().push(relay);
                }
            }
        });
        Relay {
            url,
            down,
            connections,
            requests,
            accept,
        }
    }

    fn cut(&self) {
        self.down.store(true, std::sync::atomic::Ordering::SeqCst);
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }

    fn restore(&self) {
        self.down.store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// The request heads of the event stream connections so far.
    fn event_requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|head| head.starts_with("get /api/v1/events"))
            .cloned()
            .collect()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

struct Fixture {
    root: tempfile::TempDir,
    store: StoreProcess,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let store = StoreProcess::start(&cli_binary(), root.path(), TOKEN);
        Fixture { root, store }
    }

    fn client(&self) -> StoreClient {
        StoreClient::new(&self.store.url)
    }

    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// Publishes the unit-converter fixture as `UNITS` at `version` with `permissions`.
    async fn publish_units(&self, version: &str, permissions: &[&str]) {
        let project = self.root.path().join(format!("project-{version}"));
        let manifest = json!({"id": UNITS, "name": "Units", "version": version,
            "description": "Converts units", "provides": ["tool:convert"],
            "permissions": permissions});
        let package = osprey_tests::app_package(
            &project,
            &manifest,
            &std::fs::read(fixture_binary("osprey-fixture-unit-converter")).unwrap(),
        );
        let listing = Listing {
            publisher: Some("Acme Apps".into()),
            ..Listing::default()
        };
        self.client()
            .publish_listed(package, TOKEN, &listing)
            .await
            .unwrap();
    }

    async fn publish_skill(&self, name: &str) {
        let folder = self.root.path().join(format!("skill-{name}")).join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: Converts {name} files\nmetadata:\n  version: \
                 \"1.0.0\"\n---\n# {name}\n"
            ),
        )
        .unwrap();
        let (archive, _) = pack_skill(&folder).unwrap();
        self.client()
            .publish_skill(archive, TOKEN, &Listing::default(), None)
            .await
            .unwrap();
    }

    /// Writes an event straight into the store's log (as a newer or broken store would send
    /// it), returning its id. The stream sends it with the next event the store records.
    fn append_event(&self, name: &str, data: &str) -> i64 {
        let db = rusqlite::Connection::open(self.store.dir.join("store.db")).unwrap();
        db.busy_timeout(Duration::from_secs(10)).unwrap();
        db.execute(
            "INSERT INTO events (name, data, person, created_at) VALUES (?1, ?2, NULL, 0)",
            [name, data],
        )
        .unwrap();
        db.last_insert_rowid()
    }

    /// How many of the person's `name` events (`installed`, `uninstalled`) the store logged.
    fn person_events(&self, name: &str) -> i64 {
        let db = rusqlite::Connection::open(self.store.dir.join("store.db")).unwrap();
        db.busy_timeout(Duration::from_secs(10)).unwrap();
        db.query_row(
            "SELECT COUNT(*) FROM events WHERE name = ?1 AND person IS NOT NULL",
            [name],
            |row| row.get(0),
        )
        .unwrap()
    }

    /// Installs the store's `UNITS` into the data folder, as an earlier run would have.
    async fn install_units(&self) {
        std::fs::create_dir_all(self.data().join("apps")).unwrap();
        let client = self.client();
        let trust = Trust::new(
            client.clone(),
            self.data().join("trust"),
            MAX_REVOCATION_AGE,
        );
        client
            .install(UNITS, &Installer::new(self.data().join("apps")), &trust)
            .await
            .unwrap();
    }

    /// A core on the data folder that reaches the store at `store_url`.
    fn core(&self, store_url: &str) -> Core {
        osprey_db::Database::open_in(&self.data())
            .unwrap()
            .settings()
            .set("store.url", &json!(store_url))
            .unwrap();
        Core::open(CoreOptions {
            data_dir: Some(self.data()),
            secrets: Some(osprey_core::secrets::Backend::FileOnly),
            ..CoreOptions::default()
        })
        .unwrap()
    }
}

async fn start(core: &Core) -> Services {
    core.start(Start::all("the store push test")).await.unwrap()
}

async fn until(what: &str, mut condition: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !condition().await {
        assert!(started.elapsed() < DEADLINE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn pid(core: &Core, id: &str) -> Option<u32> {
    core.test_apps()
        .supervisor()
        .status()
        .await
        .unwrap_or_default()
        .into_iter()
        .find_map(|(running, state)| match state {
            AppState::Running { pid } if running == id => Some(pid),
            _ => None,
        })
}

async fn connected(core: &Core) {
    let mut status = core.store_events_status();
    tokio::time::timeout(DEADLINE, status.wait_for(|s| s.connected))
        .await
        .expect("the store's event stream within the deadline")
        .unwrap();
}

/// The next event `pick` accepts.
async fn event<T>(events: &mut Receiver, mut pick: impl FnMut(CoreEvent) -> Option<T>) -> T {
    tokio::time::timeout(DEADLINE, async {
        loop {
            if let Some(found) = pick(events.recv().await.unwrap()) {
                return found;
            }
        }
    })
    .await
    .expect("the event within the deadline")
}

fn installed_version(core: &Core, id: &str) -> Option<String> {
    core.test_apps()
        .installer()
        .list()
        .into_iter()
        .find(|app| app.manifest.id == id)
        .map(|app| app.manifest.version)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_app_revoked_at_the_store_is_stopped_and_quarantined_through_the_push() {
    let fixture = Fixture::new();
    fixture.publish_units("1.0.0", &[]).await;
    fixture.install_units().await;
    let core = fixture.core(&fixture.store.url);
    let mut events = core.subscribe();
    let services = start(&core).await;
    until("the app to run", async || pid(&core, UNITS).await.is_some()).await;
    connected(&core).await;

    // First an event this Osprey cannot read (a kind a newer store might add): it is skipped,
    // not left to stop the stream before the revocation after it.
    let unreadable =
        fixture.append_event("updated", r#"{"kind":"widget","id":"w","version":"1.0.0"}"#);
    let revoked_at = Instant::now();
    fixture
        .client()
        .revoke(UNITS, None, "sends your files away", TOKEN)
        .await
        .unwrap();
    let reason = event(&mut events, |e| match e {
        CoreEvent::AppRevoked { app_id, reason } if app_id == UNITS => Some(reason),
        _ => None,
    })
    .await;
    assert_eq!(reason, "sends your files away");
    let took = revoked_at.elapsed();
    let past_both = (unreadable + 1).to_string();
    until("the cursor to pass the revocation", async || {
        core.store_events_status().borrow().last_event_id.as_deref() == Some(past_both.as_str())
    })
    .await;
    assert_eq!(
        core.store_events_status().borrow().connections,
        1,
        "the unreadable event cost the connection"
    );
    assert!(
        pid(&core, UNITS).await.is_none(),
        "a revoked app still runs"
    );
    let app = core.test_apps().installer().list().remove(0);
    assert!(
        app.quarantined
            .as_deref()
            .is_some_and(|why| why.contains("sends your files away")),
        "{:?}",
        app.quarantined
    );
    assert!(!app.path.join("binary").exists(), "the binary is removed");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    println!("revoked through the push: stopped and quarantined {took:?} after the revocation");
    services.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_arrive_by_push_and_after_a_dropped_connection_and_new_permissions_wait() {
    let fixture = Fixture::new();
    fixture.publish_units("1.0.0", &[]).await;
    fixture.install_units().await;
    let relay = Relay::start(&fixture.store.url).await;
    let core = fixture.core(&relay.url);
    let services = start(&core).await;
    until("the app to run", async || pid(&core, UNITS).await.is_some()).await;
    connected(&core).await;
    let first = pid(&core, UNITS).await.unwrap();

    // The same permissions: installed in place and the running app restarted on it.
    fixture.publish_units("1.1.0", &[]).await;
    until("1.1.0 to run", async || {
        installed_version(&core, UNITS).as_deref() == Some("1.1.0")
            && pid(&core, UNITS).await.is_some_and(|pid| pid != first)
    })
    .await;
    let cursor = core
        .store_events_status()
        .borrow()
        .last_event_id
        .clone()
        .unwrap();

    // The connection drops; a version that adds a permission is published meanwhile.
    relay.cut();
    let mut status = core.store_events_status();
    tokio::time::timeout(DEADLINE, status.wait_for(|s| !s.connected))
        .await
        .unwrap()
        .unwrap();
    fixture
        .publish_units("1.2.0", &["network:api.example.com"])
        .await;
    relay.restore();

    // On the reconnect it arrives (the stream resumed after the last event seen) and is staged.
    until("1.2.0 to be staged", async || {
        core.test_apps()
            .installer()
            .list()
            .iter()
            .any(|app| app.pending_permissions.is_some())
    })
    .await;
    let resumed = relay.event_requests();
    assert!(resumed.len() >= 2, "{resumed:?}");
    assert!(
        resumed
            .last()
            .unwrap()
            .contains(&format!("last-event-id: {cursor}\r\n")),
        "the reconnect did not resume after {cursor}: {resumed:?}"
    );
    let app = core.test_apps().installer().list().remove(0);
    assert_eq!(
        app.manifest.version, "1.1.0",
        "a permission-adding update is not applied"
    );
    assert_eq!(
        app.pending_permissions,
        Some(vec!["network:api.example.com".to_string()])
    );
    assert!(pid(&core, UNITS).await.is_some(), "1.1.0 keeps running");

    // Approved: 1.2.0 runs.
    core.approve_app_update(UNITS).await.unwrap();
    until("1.2.0 to run", async || {
        installed_version(&core, UNITS).as_deref() == Some("1.2.0")
            && pid(&core, UNITS).await.is_some()
    })
    .await;
    services.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_store_skills_leave_the_catalog_when_osprey_starts_and_through_the_push() {
    let fixture = Fixture::new();
    fixture.publish_skill("pdf-tools").await;
    fixture.publish_skill("csv-tools").await;
    let core = fixture.core(&fixture.store.url);
    for name in ["pdf-tools", "csv-tools"] {
        core.install_store_skill(name, None).await.unwrap();
    }
    let names = |core: &Core| -> Vec<String> {
        core.skills()
            .catalog()
            .all()
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    assert!(names(&core).contains(&"pdf-tools".to_string()));
    drop(core);

    // Revoked while no Osprey runs (and with a revocation list cached less than an hour ago, so
    // the start sweep alone would not see it yet): the first connection to the store checks
    // the list afresh and removes it.
    fixture
        .client()
        .revoke_skill("pdf-tools", None, "exfiltrates documents", TOKEN)
        .await
        .unwrap();
    let core = fixture.core(&fixture.store.url);
    let mut events = core.subscribe();
    let services = start(&core).await;
    let (name, reason) = event(&mut events, |e| match e {
        CoreEvent::SkillRevoked { name, reason } => Some((name, reason)),
        _ => None,
    })
    .await;
    assert_eq!(
        (name.as_str(), reason.as_str()),
        ("pdf-tools", "exfiltrates documents")
    );
    assert!(!names(&core).contains(&"pdf-tools".to_string()));
    assert!(!fixture.data().join("skills/pdf-tools").exists());
    // The store will not install it again either.
    let refused = core
        .install_store_skill("pdf-tools", None)
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("exfiltrates documents"),
        "{}",
        refused.message
    );

    // Revoked while it runs: the push removes it, and the skill tool cannot load it.
    connected(&core).await;
    assert!(names(&core).contains(&"csv-tools".to_string()));
    fixture
        .client()
        .revoke_skill("csv-tools", None, "prompt injection", TOKEN)
        .await
        .unwrap();
    let name = event(&mut events, |e| match e {
        CoreEvent::SkillRevoked { name, .. } => Some(name),
        _ => None,
    })
    .await;
    assert_eq!(name, "csv-tools");
    assert!(!names(&core).contains(&"csv-tools".to_string()));
    let load = core
        .call_tool(
            osprey_types::Origin::User,
            "skill",
            json!({"action": "load", "name": "csv-tools"}),
        )
        .await;
    assert!(load.is_error, "{}", load.text_content());
    services.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_elsewhere_is_asked_and_installs_only_on_yes_and_a_removal_elsewhere_removes() {
    let fixture = Fixture::new();
    fixture
        .publish_units("1.0.0", &["network:api.example.com"])
        .await;
    let person = fixture.client().add_person("ana", TOKEN).await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let core = fixture.core(&fixture.store.url);
    core.set_store_token(Some(&person)).await.unwrap();
    core.attach_approvals();
    let mut events = core.subscribe();
    let services = start(&core).await;
    connected(&core).await;

    // Ana installs it on another device: this Osprey asks, and a no installs nothing.
    let client = fixture.client();
    client.record_install(UNITS, true, &person).await.unwrap();
    let request = event(&mut events, |e| match e {
        CoreEvent::ApprovalRequested { request, .. } => Some(request),
        _ => None,
    })
    .await;
    assert!(request.once_only, "an install is asked every time");
    let details = request.details.clone().expect("the install's details");
    assert_eq!(details.name, "Units");
    assert_eq!(details.version.as_deref(), Some("1.0.0"));
    assert_eq!(details.publisher.as_deref(), Some("Acme Apps"));
    assert!(
        details
            .permissions
            .iter()
            .any(|p| p.permission == "network:api.example.com"),
        "{:?}",
        details.permissions
    );
    assert!(
        details.notes[0].contains("another device"),
        "{:?}",
        details.notes
    );
    core.approvals()
        .answer(&request.id, ApprovalAnswer::Deny)
        .unwrap();
    event(&mut events, |e| match e {
        CoreEvent::ApprovalResolved { request_id, .. } if request_id == request.id => Some(()),
        _ => None,
    })
    .await;
    assert_eq!(
        installed_version(&core, UNITS),
        None,
        "denied, yet installed"
    );

    // Asked again for the next install elsewhere; yes installs it and it runs.
    client.record_install(UNITS, true, &person).await.unwrap();
    let request = event(&mut events, |e| match e {
        CoreEvent::ApprovalRequested { request, .. } => Some(request),
        _ => None,
    })
    .await;
    core.approvals()
        .answer(&request.id, ApprovalAnswer::Once)
        .unwrap();
    until("the approved app to run", async || {
        pid(&core, UNITS).await.is_some()
    })
    .await;
    assert_eq!(installed_version(&core, UNITS).as_deref(), Some("1.0.0"));

    // Ana removes it on the store's page: it goes here too, and the front ends are told.
    client.record_install(UNITS, false, &person).await.unwrap();
    let removed = event(&mut events, |e| match e {
        CoreEvent::AppRemoved { app_id, reason } if app_id == UNITS => Some(reason),
        _ => None,
    })
    .await;
    assert!(removed.contains("Units"), "{removed}");
    assert_eq!(installed_version(&core, UNITS), None);
    assert!(pid(&core, UNITS).await.is_none());
    // What the push did here was not told back to the store (her other devices would be asked
    // again): only the test's own two installs and one removal are in its log.
    assert_eq!(fixture.person_events("installed"), 2);
    assert_eq!(fixture.person_events("uninstalled"), 1);

    // Ana installs it here herself, then removes it: the store hears of both, so her other
    // devices do.
    core.install_store_app(UNITS).await.unwrap();
    assert_eq!(fixture.person_events("installed"), 3);
    core.uninstall_app(UNITS).await.unwrap();
    assert_eq!(fixture.person_events("uninstalled"), 2);

    // Another store (which does not know Ana's token): the follower moves to it and follows its
    // public events.
    let other = StoreProcess::start(&cli_binary(), &fixture.root.path().join("other"), TOKEN);
    core.set_setting("store.url", json!(other.url))
        .await
        .unwrap();
    let mut status = core.store_events_status();
    tokio::time::timeout(
        DEADLINE,
        status.wait_for(|s| s.connected && s.store_url.as_deref() == Some(other.url.as_str())),
    )
    .await
    .expect("following the new store")
    .unwrap();
    let error = core.store_events_status().borrow().error.clone();
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("refused your store token")),
        "{error:?}"
    );
    services.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_install_still_asked_when_osprey_stops_is_asked_again_at_the_next_start() {
    let fixture = Fixture::new();
    fixture.publish_units("1.0.0", &[]).await;
    let person = fixture.client().add_person("ana", TOKEN).await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let asked = async |core: &Core, events: &mut Receiver| {
        event(events, |e| match e {
            CoreEvent::ApprovalRequested { request, .. }
                if request
                    .details
                    .as_ref()
                    .is_some_and(|details| details.name == "Units") =>
            {
                Some(request)
            }
            _ => None,
        })
        .await;
        core.store_events_status()
            .borrow()
            .store_url
            .clone()
            .unwrap()
    };

    // Ana installs it elsewhere; Osprey stops while the question waits.
    let core = fixture.core(&fixture.store.url);
    core.set_store_token(Some(&person)).await.unwrap();
    core.attach_approvals();
    let mut events = core.subscribe();
    let services = start(&core).await;
    connected(&core).await;
    fixture
        .client()
        .record_install(UNITS, true, &person)
        .await
        .unwrap();
    let store_url = asked(&core, &mut events).await;
    services.shutdown().await;
    drop(core);
    let pending = || {
        osprey_db::Database::open_in(&fixture.data())
            .unwrap()
            .store_cursors()
            .pending_installs(&store_url)
            .unwrap()
    };
    assert_eq!(pending(), [UNITS], "the unanswered question is kept");

    // The next start asks it again (the event itself is not replayed), and yes installs it.
    let core = fixture.core(&fixture.store.url);
    core.attach_approvals();
    let mut events = core.subscribe();
    let services = start(&core).await;
    let request = event(&mut events, |e| match e {
        CoreEvent::ApprovalRequested { request, .. } => Some(request),
        _ => None,
    })
    .await;
    assert_eq!(
        request.details.as_ref().map(|d| d.name.as_str()),
        Some("Units")
    );
    core.approvals()
        .answer(&request.id, ApprovalAnswer::Once)
        .unwrap();
    until("the approved app to run", async || {
        pid(&core, UNITS).await.is_some()
    })
    .await;
    until("the answered question to be forgotten", async || {
        pending().is_empty()
    })
    .await;
    services.shutdown().await;
}
