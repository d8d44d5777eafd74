//! Comm and channel apps consumed from a real process (the comm fixture, driven through files in
//! its data dir): messages arrive on the channel in order, within the caps (text cut,
//! attachments over a cap dropped and named, a message over the size cap skipped without
//! stopping the stream), sends reach the app, channel events and posts work, and a relaunch
//! re-attached resumes receiving.
#![cfg(unix)]

#[path = "support/fixtures.rs"]
mod fixtures;

use std::path::{Path, PathBuf};
use std::time::Duration;

use osprey_apps::channel::{ChannelEventIn, Channels};
use osprey_apps::comm::{CommLimits, Comms, Incoming, Outgoing};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use fixtures::{Apps, fixture_binary, until};

const WAIT: Duration = Duration::from_secs(20);

fn install(apps: &Apps, permissions: Value) -> PathBuf {
    apps.install(
        "bridge",
        &fixture_binary("osprey-fixture-comm-app"),
        json!({"provides": ["comm", "channel:feed"], "permissions": permissions}),
    )
}

/// Drops a file into the app's inbox (written beside it, then renamed in).
fn inject(app_dir: &Path, name: &str, value: Value) {
    let inbox = app_dir.join("data").join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    let staging = app_dir.join("data").join(format!("{name}.tmp"));
    std::fs::write(&staging, value.to_string()).unwrap();
    std::fs::rename(&staging, inbox.join(format!("{name}.json"))).unwrap();
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

async fn next<T>(receiver: &mut mpsc::Receiver<T>) -> T {
    tokio::time::timeout(WAIT, receiver.recv())
        .await
        .expect("nothing arrived in time")
        .expect("the channel closed")
}

fn small_limits() -> CommLimits {
    CommLimits {
        max_message_bytes: 64 * 1024,
        max_text_bytes: 100,
        max_attachments: 2,
        max_attachment_bytes: 1000,
        ..CommLimits::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_arrive_within_the_caps_and_sends_reach_the_app() {
    let apps = Apps::new();
    let dir = install(&apps, json!(["comm:*", "channel:*"]));
    let app = apps.launcher().launch("bridge").await.unwrap();
    let comms = Comms::new(small_limits());
    let mut incoming = comms.take_incoming().unwrap();
    assert!(comms.take_incoming().is_none(), "one consumer only");
    comms.attach(app.manifest(), app.channel());
    assert_eq!(comms.apps(), ["bridge"]);

    inject(
        &dir,
        "01",
        json!({"id": "m1", "conversation_id": "room-1", "sender": "ana", "text": "hello"}),
    );
    let first: Incoming = next(&mut incoming).await;
    assert_eq!(first.app_id, "bridge");
    assert_eq!(
        (first.id.as_str(), first.conversation_id.as_str()),
        ("m1", "room-1")
    );
    assert_eq!(
        (first.sender.as_str(), first.text.as_str()),
        ("ana", "hello")
    );
    assert!(!first.truncated && first.dropped_attachments.is_empty());
    assert!(first.sent_at_ms > 0, "the SDK stamps the time");

    // Text over the cap is cut on a character boundary; attachments over the byte cap or the
    // count cap are dropped and named.
    let long = "é".repeat(80); // 160 bytes
    inject(
        &dir,
        "02",
        json!({"conversation_id": "room-1", "sender": "ana", "text": long, "attachments": [
            {"name": "a.txt", "size": 10}, {"name": "huge.bin", "size": 5000},
            {"name": "b.txt", "size": 10}, {"name": "c.txt", "size": 10}]}),
    );
    let capped = next(&mut incoming).await;
    assert!(capped.truncated);
    assert_eq!(capped.text, "é".repeat(50));
    let kept: Vec<&str> = capped.attachments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(kept, ["a.txt", "b.txt"]);
    assert_eq!(
        capped.dropped_attachments,
        [
            "huge.bin (over 1000 bytes)",
            "c.txt (more than 2 attachments)"
        ]
    );

    // A message over the size cap breaks the stream; it is skipped and the stream reopened.
    // Messages the app had already handed to the broken stream are lost with it (the protocol
    // has no acknowledgements), so the test keeps sending until one arrives. A message without
    // a conversation is dropped.
    inject(
        &dir,
        "03",
        json!({"conversation_id": "room-1", "text": "too big", "attachments": [{"name": "x", "size": 200000}]}),
    );
    inject(
        &dir,
        "04",
        json!({"conversation_id": "", "text": "nowhere"}),
    );
    let mut attempt = 0;
    let after = loop {
        attempt += 1;
        assert!(attempt < 100, "nothing arrived after the oversized message");
        inject(
            &dir,
            &format!("05-{attempt:03}"),
            json!({"conversation_id": "room-2", "text": "after the big one"}),
        );
        if let Ok(Some(message)) =
            tokio::time::timeout(Duration::from_millis(200), incoming.recv()).await
        {
            break message;
        }
    };
    assert_eq!(
        (after.conversation_id.as_str(), after.text.as_str()),
        ("room-2", "after the big one")
    );

    // Sending goes through the app, which records it.
    let id = comms
        .send(
            "bridge",
            Outgoing {
                conversation_id: "room-1".into(),
                recipient: "ana".into(),
                text: "hi ana".into(),
                reply_to_id: "m1".into(),
                ..Outgoing::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(id, "sent-m1");
    let sent = lines(&dir.join("data").join("sent.jsonl"));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["conversation_id"], "room-1");
    assert_eq!(sent[0]["text"], "hi ana");
    assert_eq!(sent[0]["reply_to_id"], "m1");

    // Unknown app: a clear error.
    let error = comms.send("nobody", Outgoing::default()).await.unwrap_err();
    assert_eq!(error.code(), "send_failed");
    assert!(
        error.to_string().contains("no comm app `nobody`"),
        "{error}"
    );

    // Detached: nothing more is received and sends are refused.
    comms.detach("bridge");
    assert!(comms.apps().is_empty());
    assert!(comms.send("bridge", Outgoing::default()).await.is_err());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relaunched_app_attached_again_resumes_receiving() {
    let apps = Apps::new();
    let dir = install(&apps, json!(["comm:*", "channel:read"]));
    let launcher = apps.launcher();
    let mut app = launcher.launch("bridge").await.unwrap();
    let comms = Comms::default();
    let mut incoming = comms.take_incoming().unwrap();
    comms.attach(app.manifest(), app.channel());
    inject(&dir, "01", json!({"conversation_id": "c", "text": "one"}));
    assert_eq!(next(&mut incoming).await.text, "one");

    // The app crashes; while it is down the receive loop retries quietly.
    inject(&dir, "02", json!({"crash": true}));
    assert!(app.wait_exit(WAIT).await.is_some(), "the app did not exit");
    app.stop().await;
    let app = launcher.launch("bridge").await.unwrap();
    comms.attach(app.manifest(), app.channel());
    inject(&dir, "03", json!({"conversation_id": "c", "text": "two"}));
    assert_eq!(next(&mut incoming).await.text, "two");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_events_arrive_and_posts_need_channel_write() {
    let apps = Apps::new();
    let dir = install(&apps, json!(["comm:receive", "channel:read"]));
    let app = apps.launcher().launch("bridge").await.unwrap();
    let channels = Channels::default();
    let mut events = channels.take_events().unwrap();
    channels.attach(app.manifest(), app.channel());
    assert_eq!(
        channels.channels(),
        [("bridge".to_string(), "feed".to_string())]
    );
    inject(
        &dir,
        "01",
        json!({"channel": "feed", "kind": "alert", "text": "disk almost full", "data": {"free": 3}}),
    );
    let event: ChannelEventIn = next(&mut events).await;
    assert_eq!(
        (event.app_id.as_str(), event.channel.as_str()),
        ("bridge", "feed")
    );
    assert_eq!(
        (event.kind.as_str(), event.text.as_str()),
        ("alert", "disk almost full")
    );
    assert_eq!(event.data, Some(json!({"free": 3})));

    // No `channel:write`: Osprey refuses to post, and the app records nothing.
    let error = channels
        .send("bridge", "feed", "hello", None)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("channel:write"), "{error}");
    let error = channels
        .send("bridge", "other", "hello", None)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("provides the channel `other`"),
        "{error}"
    );
    // No `comm:send` either: comm sends are refused before reaching the app.
    let comms = Comms::default();
    comms.attach(app.manifest(), app.channel());
    let error = comms.send("bridge", Outgoing::default()).await.unwrap_err();
    assert!(error.to_string().contains("comm:send"), "{error}");
    assert!(!dir.join("data").join("channel-sent.jsonl").exists());
    assert!(!dir.join("data").join("sent.jsonl").exists());
    app.stop().await;

    // With `channel:write` the post reaches the app.
    let apps = Apps::new();
    let dir = install(&apps, json!(["comm:*", "channel:*"]));
    let app = apps.launcher().launch("bridge").await.unwrap();
    let channels = Channels::default();
    channels.attach(app.manifest(), app.channel());
    let id = channels
        .send("bridge", "feed", "posted text", Some(&json!({"a": 1})))
        .await
        .unwrap();
    assert_eq!(id, "posted");
    let record = dir.join("data").join("channel-sent.jsonl");
    until("the post recorded", WAIT, || record.exists()).await;
    let posts = lines(&record);
    assert_eq!(posts[0]["channel"], "feed");
    assert_eq!(posts[0]["text"], "posted text");
    assert_eq!(posts[0]["data_json"], r#"{"a":1}"#);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_receive_stream_takes_the_queue_over_from_an_open_one() {
    use osprey_rpc::v1::CommReceiveRequest;
    use osprey_rpc::v1::comm_service_client::CommServiceClient;

    let apps = Apps::new();
    let dir = install(&apps, json!(["comm:*", "channel:*"]));
    let app = apps.launcher().launch("bridge").await.unwrap();
    let mut client = CommServiceClient::new(app.channel());
    let mut first = client
        .receive(CommReceiveRequest {})
        .await
        .unwrap()
        .into_inner();
    inject(
        &dir,
        "01",
        json!({"conversation_id": "c", "text": "to the first"}),
    );
    let got = tokio::time::timeout(WAIT, first.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got.text, "to the first");

    // A second stream while the first is still open (Osprey reconnected without the old one
    // closing): it gets what follows, the old one nothing more.
    let mut second = client
        .receive(CommReceiveRequest {})
        .await
        .unwrap()
        .into_inner();
    inject(
        &dir,
        "02",
        json!({"conversation_id": "c", "text": "to the second"}),
    );
    let got = tokio::time::timeout(WAIT, second.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got.text, "to the second");
    let old = tokio::time::timeout(Duration::from_millis(300), first.message()).await;
    assert!(
        !matches!(old, Ok(Ok(Some(_)))),
        "the replaced stream still got a message: {old:?}"
    );
    app.stop().await;
}
