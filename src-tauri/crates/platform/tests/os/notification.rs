//! A notification server served on a private bus with zbus receives what `os notification send`
//! posts; a click it reports is the answer the tool gives.

use std::collections::HashMap;
use std::time::Duration;

use osprey_platform::{OsConfig, OsTool};
use serde_json::json;
use tokio::sync::mpsc;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::OwnedValue;

use crate::harness::{call, ok_text, private_bus};

#[derive(Debug)]
struct Received {
    id: u32,
    app: String,
    title: String,
    body: String,
    icon: String,
    actions: Vec<String>,
    urgency: Option<u8>,
}

struct Server {
    next: u32,
    received: mpsc::UnboundedSender<Received>,
    closed: mpsc::UnboundedSender<u32>,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Server {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &mut self,
        app_name: String,
        _replaces_id: u32,
        app_icon: String,
        summary: String,
        body: String,
        actions: Vec<String>,
        hints: HashMap<String, OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        self.next += 1;
        let _ = self.received.send(Received {
            id: self.next,
            app: app_name,
            title: summary,
            body,
            icon: app_icon,
            actions,
            urgency: hints.get("urgency").and_then(|v| u8::try_from(v).ok()),
        });
        self.next
    }

    async fn close_notification(
        &self,
        id: u32,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) -> zbus::fdo::Result<()> {
        let _ = self.closed.send(id);
        Self::notification_closed(&emitter, id, 3).await?;
        Ok(())
    }

    fn get_capabilities(&self) -> Vec<String> {
        vec!["actions".into(), "body".into()]
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        ("test".into(), "osprey".into(), "1".into(), "1.2".into())
    }

    #[zbus(signal)]
    async fn action_invoked(emitter: &SignalEmitter<'_>, id: u32, key: &str) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn notification_closed(
        emitter: &SignalEmitter<'_>,
        id: u32,
        reason: u32,
    ) -> zbus::Result<()>;
}

const PATH: &str = "/org/freedesktop/Notifications";

#[tokio::test(flavor = "multi_thread")]
async fn notification_reaches_the_server_and_the_click_comes_back() {
    let (_bus, address) = private_bus();
    let tool = OsTool::new(OsConfig {
        session_bus_address: Some(address.clone()),
        ..OsConfig::default()
    });

    // No server yet: a clear, coded answer.
    let result = call(
        &tool,
        json!({"resource": "notification", "action": "send", "title": "x"}),
    )
    .await;
    assert!(result.is_error);
    assert_eq!(
        result.code.map(|c| c.as_str()),
        Some("service_unavailable"),
        "{result:?}"
    );

    let (received_tx, mut received) = mpsc::unbounded_channel();
    let (closed_tx, mut closed) = mpsc::unbounded_channel();
    let server = zbus::connection::Builder::address(address.as_str())
        .unwrap()
        .name("org.freedesktop.Notifications")
        .unwrap()
        .serve_at(
            PATH,
            Server {
                next: 0,
                received: received_tx,
                closed: closed_tx,
            },
        )
        .unwrap()
        .build()
        .await
        .unwrap();

    // Send and wait for the click, while the "person" clicks Open.
    let sending = tokio::spawn({
        let tool = std::sync::Arc::new(tool);
        let for_task = tool.clone();
        async move {
            let result = call(
                &for_task,
                json!({"resource": "notification", "action": "send", "title": "Build done",
                       "body": "All 212 tests passed", "urgency": "critical",
                       "icon": "dialog-information", "actions": ["Open", "Later"], "wait": 20}),
            )
            .await;
            (tool, result)
        }
    });
    let got = tokio::time::timeout(Duration::from_secs(20), received.recv())
        .await
        .expect("the server got no notification within 20 s")
        .unwrap();
    assert_eq!(
        (
            got.app.as_str(),
            got.title.as_str(),
            got.body.as_str(),
            got.icon.as_str()
        ),
        (
            "Osprey",
            "Build done",
            "All 212 tests passed",
            "dialog-information"
        )
    );
    assert_eq!(got.actions, ["Open", "Open", "Later", "Later"]);
    assert_eq!(got.urgency, Some(2));
    let emitter = SignalEmitter::new(&server, PATH).unwrap();
    Server::action_invoked(&emitter, got.id, "Open")
        .await
        .unwrap();
    let (tool, result) = sending.await.unwrap();
    let message = ok_text(&result);
    assert!(
        message.contains(&format!(
            "Notification {}: the person clicked \"Open\"",
            got.id
        )),
        "{message}"
    );
    // Later asks about it see the click, not the close that follows it.
    Server::notification_closed(&emitter, got.id, 2)
        .await
        .unwrap();
    let message = ok_text(
        &call(
            &tool,
            json!({"resource": "notification", "action": "result", "notification_id": got.id}),
        )
        .await,
    );
    assert!(message.contains("clicked \"Open\""), "{message}");

    // A second one, closed by the tool: the server is told, and the result says so.
    let message = ok_text(
        &call(
            &tool,
            json!({"action": "send", "resource": "notification", "title": "Second"}),
        )
        .await,
    );
    let second = tokio::time::timeout(Duration::from_secs(20), received.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        message.contains(&format!("Sent notification {}", second.id)),
        "{message}"
    );
    ok_text(
        &call(
            &tool,
            json!({"resource": "notification", "action": "close", "notification_id": second.id}),
        )
        .await,
    );
    let closed_id = tokio::time::timeout(Duration::from_secs(20), closed.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(closed_id, second.id);
    let message = ok_text(
        &call(
            &tool,
            json!({"resource": "notification", "action": "result",
                   "notification_id": second.id, "wait": 20}),
        )
        .await,
    );
    assert!(message.contains("closed (closed by a call)"), "{message}");

    // Bad input is refused before anything is sent.
    let result = call(&tool, json!({"resource": "notification", "action": "send"})).await;
    assert!(result.is_error && result.text_content().contains("needs `title`"));
    let result = call(
        &tool,
        json!({"resource": "notification", "action": "send", "title": "x", "urgency": "loud"}),
    )
    .await;
    assert!(result.is_error && result.text_content().contains("low, normal, critical"));
}
