//! The store's event stream over HTTP on a loopback port, read with Osprey's own client
//! (`StoreClient::events`, eventsource-stream underneath): a publish, a revocation and a person's
//! install elsewhere each arrive with an id (a change whose event cannot be logged is not made); a reconnect with `Last-Event-ID` gets exactly what it
//! missed, across a restart of the store on the same files; an id older than the bounded log
//! gets `reset`; a person's events reach only their own streams; keep-alive comments flow.

use std::path::Path;
use std::time::Duration;

use futures::{Stream, StreamExt};
use osprey_apps::store_client::StoreClient;
use osprey_apps::store_events::{PushedEvent, StoreChange};
use osprey_apps::trust::RevokedKind;
use osprey_store::{Store, StoreConfig};
use serde_json::json;

const TOKEN: &str = "events-admin";
const DEADLINE: Duration = Duration::from_secs(20);

async fn serve(dir: &Path, log_limit: usize) -> (Store, StoreClient, tokio::task::JoinHandle<()>) {
    let store = Store::open_with_event_log(
        StoreConfig {
            data_dir: dir.to_path_buf(),
            admin_token: TOKEN.into(),
        },
        log_limit,
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = StoreClient::new(format!("http://{}", listener.local_addr().unwrap()));
    let served = store.clone();
    let task = tokio::spawn(async move {
        let _ = served.serve(listener).await;
    });
    (store, client, task)
}

/// An unsigned package of a tiny app (the store signs it).
fn package(root: &Path, id: &str, version: &str) -> Vec<u8> {
    let manifest = json!({"id": id, "name": "Units", "version": version,
        "provides": ["tool:convert"]});
    osprey_tests::app_package(
        &root.join(format!("{id}-{version}")),
        &manifest,
        b"\x7fELF fake binary",
    )
}

/// Publishes a tiny app as `id` at `version` (the store signs it).
async fn publish(client: &StoreClient, root: &Path, id: &str, version: &str) {
    client
        .publish(package(root, id, version), TOKEN, false)
        .await
        .unwrap();
}

async fn next(
    stream: &mut (impl Stream<Item = osprey_apps::Result<PushedEvent>> + Unpin),
) -> PushedEvent {
    tokio::time::timeout(DEADLINE, stream.next())
        .await
        .expect("an event within the deadline")
        .expect("the stream is open")
        .expect("a valid event")
}

#[tokio::test]
async fn events_arrive_with_ids_and_a_reconnect_gets_exactly_what_it_missed() {
    let root = tempfile::tempdir().unwrap();
    let (_store, client, task) = serve(&root.path().join("store"), 1000).await;

    let mut stream = Box::pin(client.events(None, None).await.unwrap());
    let ready = next(&mut stream).await;
    assert_eq!((ready.change, ready.id.as_str()), (StoreChange::Ready, "0"));

    publish(&client, root.path(), "com.example.units", "1.0.0").await;
    let updated = next(&mut stream).await;
    assert_eq!(
        updated.change,
        StoreChange::Updated {
            kind: RevokedKind::App,
            id: "com.example.units".into(),
            version: "1.0.0".into()
        }
    );
    let seen = updated.id.clone();
    drop(stream);

    // While nobody listens: a new version, then a revocation of the old one.
    publish(&client, root.path(), "com.example.units", "1.1.0").await;
    client
        .revoke("com.example.units", Some("1.0.0"), "leaks keys", TOKEN)
        .await
        .unwrap();

    // The store itself restarts on the same files: the log is its database, not its memory.
    task.abort();
    let _ = task.await;
    let (_store, client, _task) = serve(&root.path().join("store"), 1000).await;
    let mut stream = Box::pin(client.events(Some(&seen), None).await.unwrap());
    assert_eq!(next(&mut stream).await.change, StoreChange::Ready);
    let missed = [next(&mut stream).await, next(&mut stream).await];
    assert_eq!(
        missed[0].change,
        StoreChange::Updated {
            kind: RevokedKind::App,
            id: "com.example.units".into(),
            version: "1.1.0".into()
        }
    );
    assert_eq!(
        missed[1].change,
        StoreChange::Revoked {
            kind: RevokedKind::App,
            id: "com.example.units".into(),
            reason: "leaks keys".into(),
            versions: Some(vec!["1.0.0".into()]),
        }
    );
    let ids: Vec<i64> = missed.iter().map(|e| e.id.parse().unwrap()).collect();
    assert!(ids[0] > seen.parse().unwrap() && ids[1] > ids[0], "{ids:?}");
    // And nothing else: the next thing is a keep-alive or a new event, not a repeat.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), stream.next())
            .await
            .is_err(),
        "an event was sent twice"
    );
}

#[tokio::test]
async fn a_change_whose_event_cannot_be_logged_is_not_made() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("store");
    let (store, client, _task) = serve(&dir, 1000).await;
    // The event log refuses every write (as a full disk or a broken database would).
    let db = rusqlite::Connection::open(dir.join("store.db")).unwrap();
    db.busy_timeout(Duration::from_secs(10)).unwrap();
    db.execute_batch(
        "CREATE TRIGGER no_events BEFORE INSERT ON events
         BEGIN SELECT RAISE(ABORT, 'the event log is broken'); END;",
    )
    .unwrap();

    let id = "com.example.units";
    let refused = client
        .publish(package(root.path(), id, "1.0.0"), TOKEN, false)
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert!(
        client.app(id).await.is_err(),
        "published though nobody was told"
    );
    let refused = client.revoke(id, None, "leaks keys", TOKEN).await;
    assert!(refused.is_err(), "{refused:?}");
    let list = reqwest::get(format!("{}/api/v1/apps/revocations", client.base()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !list.contains("leaks keys"),
        "revoked though nobody was told: {list}"
    );

    // Mended: the same version publishes (nothing of the failed attempt was left) and is told.
    db.execute_batch("DROP TRIGGER no_events;").unwrap();
    publish(&client, root.path(), id, "1.0.0").await;
    let told = store.events_after(0, None).unwrap();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        (told[0].name.as_str(), &told[0].data["version"]),
        ("updated", &json!("1.0.0"))
    );
}

#[tokio::test]
async fn an_id_older_than_the_bounded_log_or_from_another_store_gets_a_reset() {
    let root = tempfile::tempdir().unwrap();
    let (_store, client, _task) = serve(&root.path().join("store"), 2).await;
    for version in ["1.0.0", "1.1.0", "1.2.0", "1.3.0"] {
        client
            .publish(
                package(root.path(), "com.example.units", version),
                TOKEN,
                false,
            )
            .await
            .unwrap();
    }
    // Events 1 to 4 were written; the log keeps 3 and 4. Id 1 missed event 2: reset.
    let mut stream = Box::pin(client.events(Some("1"), None).await.unwrap());
    let reset = next(&mut stream).await;
    assert_eq!((reset.change, reset.id.as_str()), (StoreChange::Reset, "4"));
    assert_eq!(next(&mut stream).await.change, StoreChange::Ready);
    // Id 2 saw everything up to the oldest kept: it resumes with 3 and 4.
    let mut stream = Box::pin(client.events(Some("2"), None).await.unwrap());
    assert_eq!(next(&mut stream).await.change, StoreChange::Ready);
    assert_eq!(next(&mut stream).await.id, "3");
    assert_eq!(next(&mut stream).await.id, "4");
    // An id this store never gave (another store's): reset.
    let mut stream = Box::pin(client.events(Some("99"), None).await.unwrap());
    assert_eq!(next(&mut stream).await.change, StoreChange::Reset);
    let mut stream = Box::pin(client.events(Some("not a number"), None).await.unwrap());
    assert_eq!(next(&mut stream).await.change, StoreChange::Reset);
}

#[tokio::test]
async fn a_persons_installs_elsewhere_reach_only_their_own_streams() {
    let root = tempfile::tempdir().unwrap();
    let (_store, client, _task) = serve(&root.path().join("store"), 1000).await;
    publish(&client, root.path(), "com.example.units", "1.0.0").await;
    let ana = client.add_person("ana", TOKEN).await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let ben = client.add_person("ben", TOKEN).await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(ana, ben);
    // Only the operator issues tokens, and a name is issued once.
    assert!(client.add_person("eve", &ana).await.is_err());
    assert!(client.add_person("ana", TOKEN).await.is_err());

    let mut anas = Box::pin(client.events(None, Some(&ana)).await.unwrap());
    let mut bens = Box::pin(client.events(None, Some(&ben)).await.unwrap());
    let mut anonymous = Box::pin(client.events(None, None).await.unwrap());
    for stream in [&mut anas, &mut bens, &mut anonymous] {
        assert_eq!(next(stream).await.change, StoreChange::Ready);
    }
    client
        .record_install("com.example.units", true, &ana)
        .await
        .unwrap();
    client
        .record_install("com.example.units", false, &ana)
        .await
        .unwrap();
    // Then an event for everyone, which every stream sees next.
    publish(&client, root.path(), "com.example.units", "2.0.0").await;
    assert_eq!(
        next(&mut anas).await.change,
        StoreChange::Installed {
            id: "com.example.units".into()
        }
    );
    assert_eq!(
        next(&mut anas).await.change,
        StoreChange::Uninstalled {
            id: "com.example.units".into()
        }
    );
    for stream in [&mut anas, &mut bens, &mut anonymous] {
        assert!(matches!(
            next(stream).await.change,
            StoreChange::Updated { .. }
        ));
    }
    // A token nobody was given is refused, not served as anonymous; so is a person's install
    // of an app the store does not have, or one without a token.
    assert!(client.events(None, Some("made-up")).await.is_err());
    assert!(
        client
            .record_install("com.example.none", true, &ana)
            .await
            .is_err()
    );
    assert!(
        client
            .record_install("com.example.units", true, TOKEN)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_quiet_stream_sends_keep_alive_comments() {
    let root = tempfile::tempdir().unwrap();
    let (store, client, _task) = serve(&root.path().join("store"), 1000).await;
    store.set_keep_alive(Duration::from_millis(100));
    let response = reqwest::Client::new()
        .get(format!("{}/api/v1/events", client.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut bytes = response.bytes_stream();
    let mut text = String::new();
    tokio::time::timeout(DEADLINE, async {
        while !text.contains(":\n\n") && !text.contains(": keep-alive") {
            let chunk = bytes.next().await.unwrap().unwrap();
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no keep-alive comment in {text:?}"));
    assert!(text.starts_with("event: ready\n"), "{text}");
    assert!(text.contains("\nid: 0\n"), "{text}");
}
