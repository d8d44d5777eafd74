//! The agent's [`Outbox`] over the app platform: `message send` to a channel, `message list`,
//! the `comm` resource and a reminder's `deliver` reach comm apps (`Comms`) and channel apps
//! (`Channels`) here. Names: a comm bridge is its app id, a channel app's channel is
//! `<app>/<channel>`; a bare channel name is accepted when exactly one running app has it. The
//! permission checks (`comm:send`, `channel:write`, `comm:receive` for topics) are the app
//! platform's; this adapter resolves names and says, when a name reaches nothing, which
//! channels are connected.

use std::collections::BTreeSet;

use futures::future::BoxFuture;
use osprey_agent::outbox::{CommOperation, ConnectedChannel, OutboundMessage, Outbox, Sent};
use osprey_apps::Installer;
use osprey_apps::channel::{ChannelPost, Channels};
use osprey_apps::comm::{Comms, Outgoing};
use osprey_apps::manifest::Capability;
use osprey_apps::permissions::allows;
use osprey_rpc::v1::MessageAction;
use serde_json::{Value, json};

/// The outbox core puts in the agent tool's slot.
pub(crate) struct AppOutbox {
    pub(crate) comms: Comms,
    pub(crate) channels: Channels,
    pub(crate) installer: Installer,
}

impl AppOutbox {
    /// The running channels, then installed comm and channel apps that are not running.
    async fn list(&self) -> Vec<ConnectedChannel> {
        let mut all: Vec<ConnectedChannel> = self
            .comms
            .statuses()
            .into_iter()
            .filter(|status| status.running)
            .map(|status| ConnectedChannel {
                channel: status.app_id.clone(),
                app_id: status.app_id,
                kind: "comm".into(),
                can_send: status.may_send,
                can_receive: status.may_receive,
                status: "running".into(),
            })
            .collect();
        all.extend(
            self.channels
                .infos()
                .into_iter()
                .map(|info| ConnectedChannel {
                    channel: format!("{}/{}", info.app_id, info.name),
                    app_id: info.app_id,
                    kind: "channel".into(),
                    can_send: info.may_write,
                    can_receive: info.may_read,
                    status: "running".into(),
                }),
        );
        let running: BTreeSet<String> = all.iter().map(|c| c.channel.clone()).collect();
        let installer = self.installer.clone();
        let installed = tokio::task::spawn_blocking(move || installer.list())
            .await
            .unwrap_or_default();
        for app in installed {
            let manifest = &app.manifest;
            let permissions = &manifest.permissions;
            for capability in &manifest.provides {
                let (channel, kind, send, receive) = match capability {
                    Capability::Comm => (
                        manifest.id.clone(),
                        "comm",
                        allows(permissions, "comm", "send"),
                        allows(permissions, "comm", "receive"),
                    ),
                    Capability::Channel(name) => (
                        format!("{}/{name}", manifest.id),
                        "channel",
                        allows(permissions, "channel", "write"),
                        allows(permissions, "channel", "read"),
                    ),
                    _ => continue,
                };
                if running.contains(&channel) {
                    continue;
                }
                all.push(ConnectedChannel {
                    channel,
                    app_id: manifest.id.clone(),
                    kind: kind.into(),
                    can_send: send,
                    can_receive: receive,
                    status: if app.quarantined.is_some() {
                        "quarantined".into()
                    } else {
                        "stopped".into()
                    },
                });
            }
        }
        all
    }

    /// "No connected channel `x`" with what is connected, and a hint when the app is stopped.
    async fn unknown(&self, name: &str) -> String {
        let all = self.list().await;
        let running: Vec<String> = all
            .iter()
            .filter(|c| c.status == "running")
            .map(|c| {
                let can = if c.can_send {
                    "can send"
                } else {
                    "cannot send"
                };
                format!("{} ({}, {can})", c.channel, c.kind)
            })
            .collect();
        let connected = if running.is_empty() {
            "no channel is connected (install or start a comm or channel app)".to_string()
        } else {
            format!("connected: {}", running.join(", "))
        };
        match all.iter().find(|c| c.channel == name || c.app_id == name) {
            Some(stopped) => format!(
                "the app `{}` is installed but {} now (`osprey app launch {}` or the Apps page starts it); {connected}",
                stopped.app_id, stopped.status, stopped.app_id
            ),
            None => format!("no connected channel `{name}`; {connected}"),
        }
    }

    async fn send_message(&self, message: OutboundMessage) -> Result<Sent, String> {
        let name = message.channel.trim().to_string();
        let actions: Vec<MessageAction> = message
            .actions
            .iter()
            .map(|action| MessageAction {
                id: action.id.clone(),
                label: action.label.clone(),
                kind: "button".into(),
                value: String::new(),
            })
            .collect();
        let channel_target = match name.split_once('/') {
            Some((app, channel)) => Some((app.to_string(), channel.to_string())),
            None if self.comms.apps().contains(&name) => None,
            // A bare channel name that exactly one running app provides.
            None => {
                let matches: Vec<_> = self
                    .channels
                    .infos()
                    .into_iter()
                    .filter(|info| info.name == name)
                    .collect();
                match matches.as_slice() {
                    [one] => Some((one.app_id.clone(), one.name.clone())),
                    [] => return Err(self.unknown(&name).await),
                    _ => {
                        let names: Vec<String> = matches
                            .iter()
                            .map(|m| format!("{}/{}", m.app_id, m.name))
                            .collect();
                        return Err(format!(
                            "more than one app has a channel `{name}`: say which ({})",
                            names.join(", ")
                        ));
                    }
                }
            }
        };
        let sent = match channel_target {
            Some((app, channel)) => {
                if !self
                    .channels
                    .channels()
                    .contains(&(app.clone(), channel.clone()))
                {
                    return Err(self.unknown(&name).await);
                }
                let post = ChannelPost {
                    text: message.text,
                    data: None,
                    to: message.to,
                    thread_id: message.thread_id,
                    reply_to_id: message.reply_to,
                    actions,
                };
                self.channels.post(&app, &channel, post).await
            }
            None => {
                // For a bridge the thread is its conversation (sent in both fields).
                let outgoing = Outgoing {
                    conversation_id: message.thread_id.clone(),
                    recipient: message.to,
                    text: message.text,
                    reply_to_id: message.reply_to,
                    thread_id: message.thread_id,
                    actions,
                    ..Outgoing::default()
                };
                self.comms.send(&name, outgoing).await
            }
        };
        sent.map(|id| Sent { channel: name, id })
            .map_err(|error| error.to_string())
    }

    /// The comm app a topic operation goes to: the one named, or the only running one.
    fn comm_app(&self, app: Option<String>) -> Result<String, String> {
        if let Some(app) = app {
            return Ok(app);
        }
        let running: Vec<String> = self
            .comms
            .statuses()
            .into_iter()
            .filter(|s| s.running && s.topics_supported != Some(false))
            .map(|s| s.app_id)
            .collect();
        match running.as_slice() {
            [one] => Ok(one.clone()),
            [] => {
                Err("no comm app with topics is running (comm status shows the comm apps)".into())
            }
            _ => Err(format!(
                "more than one comm app runs: say which with `app` ({})",
                running.join(", ")
            )),
        }
    }

    async fn comm_operation(&self, operation: CommOperation) -> Result<Value, String> {
        let failed = |error: osprey_apps::Error| error.to_string();
        match operation {
            CommOperation::Send {
                app,
                to,
                topic,
                message_type,
                text,
                payload,
            } => {
                let app = self.comm_app(app)?;
                let outgoing = Outgoing {
                    // Replies on a topic come back in the topic's conversation.
                    conversation_id: topic.clone(),
                    recipient: to.clone(),
                    text,
                    topic: topic.clone(),
                    message_type,
                    payload_json: payload.map(|p| p.to_string()).unwrap_or_default(),
                    ..Outgoing::default()
                };
                let id = self.comms.send(&app, outgoing).await.map_err(failed)?;
                Ok(json!({"sent": true, "app": app, "to": to, "topic": topic, "id": id}))
            }
            CommOperation::Subscribe { app, topic } => {
                let app = self.comm_app(app)?;
                self.comms.subscribe(&app, &topic).await.map_err(failed)?;
                Ok(json!({"subscribed": topic, "app": app}))
            }
            CommOperation::Unsubscribe { app, topic } => {
                let app = self.comm_app(app)?;
                let was = self.comms.unsubscribe(&app, &topic).await.map_err(failed)?;
                Ok(json!({"unsubscribed": topic, "app": app, "was_subscribed": was}))
            }
            CommOperation::Topics { app } => {
                let app = self.comm_app(app)?;
                let topics = self.comms.topics(&app).await.map_err(failed)?;
                Ok(json!({"app": app, "topics": topics}))
            }
            CommOperation::Status { app } => {
                let statuses = match app {
                    Some(app) => vec![self.comms.status(&app).ok_or_else(|| {
                        format!("no comm app `{app}` has run since Osprey started")
                    })?],
                    None => self.comms.statuses(),
                };
                let apps: Vec<Value> = statuses
                    .into_iter()
                    .map(|status| {
                        let unsupported = status.topics_supported == Some(false);
                        let mut value = json!(status);
                        if unsupported {
                            value["note"] = json!("this bridge does not support topics");
                        }
                        value
                    })
                    .collect();
                Ok(json!({"agent_id": self.comms.agent_id(), "apps": apps}))
            }
        }
    }
}

impl Outbox for AppOutbox {
    fn channels(&self) -> BoxFuture<'_, Vec<ConnectedChannel>> {
        Box::pin(self.list())
    }

    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<Sent, String>> {
        Box::pin(self.send_message(message))
    }

    fn comm(&self, operation: CommOperation) -> BoxFuture<'_, Result<Value, String>> {
        Box::pin(self.comm_operation(operation))
    }
}
