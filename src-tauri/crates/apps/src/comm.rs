//! Comm apps as Osprey consumes them: each attached app's `CommService.Receive` stream becomes
//! [`Incoming`] messages on one bounded tokio channel (all apps share it; core takes its
//! receiving end once), and [`Comms::send`] sends a message out through an app. The capability
//! host attaches an app after every (re)launch, which replaces its receive loop with one on the
//! new connection; a stream that breaks while the app runs is reopened with backoff. Everything
//! an app sends is bounded ([`CommLimits`]): a gRPC message over the cap ends that stream (it is
//! reopened), text over its cap is cut, attachments over theirs are dropped and named, so a
//! hostile app cannot grow Osprey's memory. Core turns messages into agent turns; this crate does
//! not know the agent.
//!
//! Agent-to-agent messaging rides on the same apps through the optional lifecycle RPCs
//! (`ConnectNetwork`, `Register`, `Subscribe`, `Unsubscribe`, `ListTopics`, `Deregister`,
//! `DisconnectNetwork`). Each attach connects and registers the agent id set with
//! [`Comms::set_identity`] and subscribes again to the topics the agent subscribed to (kept here
//! across relaunches, so a restarted bridge does not silently drop them); [`Comms::depart`]
//! deregisters and disconnects before the app is stopped. An app that answers UNIMPLEMENTED is
//! recorded as not supporting topics, and topic calls to it fail with
//! [`Error::TopicsUnsupported`] instead of reaching it.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_rpc::AppChannel;
use osprey_rpc::v1::comm_service_client::CommServiceClient;
use osprey_rpc::v1::{
    Attachment, CommConnectRequest, CommDeregisterRequest, CommDisconnectRequest,
    CommListTopicsRequest, CommMessage, CommReceiveRequest, CommRegisterRequest, CommSendRequest,
    CommSubscribeRequest, CommUnsubscribeRequest, MessageAction, Sender,
};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::manifest::{Capability, Manifest};
use crate::permissions::allows;
use crate::{Error, Result};

/// How much of what a comm app sends Osprey keeps.
#[derive(Clone, Debug)]
pub struct CommLimits {
    /// One gRPC message on the stream, attachments included; a bigger one ends the stream.
    pub max_message_bytes: usize,
    /// Message text beyond this is cut (on a character boundary) and marked.
    pub max_text_bytes: usize,
    /// Attachments kept per message; the rest are dropped and named.
    pub max_attachments: usize,
    /// One attachment's bytes; a bigger one is dropped and named.
    pub max_attachment_bytes: usize,
    /// `id`, `conversation_id`, `sender`: a message whose conversation id is longer is dropped
    /// (cutting it could merge two conversations); the others are cut.
    pub max_id_bytes: usize,
    /// Messages waiting for core; the app's stream waits (HTTP/2 flow control) while it is full.
    pub queue: usize,
    /// Actions (buttons, quick replies) kept per message; the rest are dropped.
    pub max_actions: usize,
    /// A topic message's `payload_json`; a bigger or non-JSON one is dropped and said so.
    pub max_payload_bytes: usize,
}

impl Default for CommLimits {
    fn default() -> CommLimits {
        CommLimits {
            max_message_bytes: 8 * 1024 * 1024,
            max_text_bytes: 64 * 1024,
            max_attachments: 8,
            max_attachment_bytes: 2 * 1024 * 1024,
            max_id_bytes: 256,
            // With the message cap, at most 128 MB wait here.
            queue: 16,
            max_actions: 16,
            max_payload_bytes: 64 * 1024,
        }
    }
}

/// One message that arrived through a comm app, within the limits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Incoming {
    pub app_id: String,
    pub id: String,
    pub conversation_id: String,
    pub sender: String,
    pub text: String,
    pub sent_at_ms: i64,
    pub attachments: Vec<Attachment>,
    /// The text was cut at the limit.
    pub truncated: bool,
    /// Attachments that were over a limit and dropped: name and why.
    pub dropped_attachments: Vec<String>,
    /// The sender, structured, when the app gave it (fields cut to the id limit).
    pub author: Option<Sender>,
    /// Buttons or quick replies offered with the message (at most `max_actions`).
    pub actions: Vec<MessageAction>,
    pub thread_id: String,
    pub reply_to_id: String,
    /// The action picked, when this message answers one.
    pub action_id: String,
    /// Agent-to-agent messages: the topic, the sender's message type and the JSON payload.
    pub topic: String,
    pub message_type: String,
    pub payload_json: String,
    /// Why the payload was dropped, if it was.
    pub payload_dropped: Option<String>,
}

/// A message to send out through a comm app.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outgoing {
    pub conversation_id: String,
    pub recipient: String,
    pub text: String,
    /// The incoming message this answers, if any.
    pub reply_to_id: String,
    pub thread_id: String,
    /// Buttons or quick replies to offer.
    pub actions: Vec<MessageAction>,
    /// Agent-to-agent: the topic, message type and JSON payload (`recipient` is the agent id).
    pub topic: String,
    pub message_type: String,
    pub payload_json: String,
}

/// What Osprey knows of one comm app: whether it runs, what it may do, and where its
/// agent-to-agent lifecycle stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CommStatus {
    pub app_id: String,
    /// Attached now (the app runs and is healthy).
    pub running: bool,
    pub may_send: bool,
    pub may_receive: bool,
    /// `None` until the app answered the first lifecycle call; `Some(false)` when it answered
    /// UNIMPLEMENTED (no topics).
    pub topics_supported: Option<bool>,
    /// What `ConnectNetwork` answered.
    pub connected: bool,
    /// The app's word on the connection, or why a lifecycle call failed.
    pub detail: String,
    /// The agent id the app registered, while registered.
    pub agent_id: Option<String>,
    /// The topics the agent subscribed to through this app (kept across relaunches).
    pub subscriptions: Vec<String>,
}

/// A topic as an app lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Topic {
    pub name: String,
    pub description: String,
    pub subscribers: u32,
    /// The agent subscribed to it through this app.
    pub subscribed: bool,
}

/// Per app, what survives relaunches: the subscriptions, and the last lifecycle answers.
#[derive(Clone, Debug, Default)]
struct Lifecycle {
    topics_supported: Option<bool>,
    connected: bool,
    detail: String,
    agent_id: Option<String>,
    subscriptions: BTreeSet<String>,
}

/// How long one lifecycle call (connect, register, subscribe, ...) may take.
const LIFECYCLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Deregistering and disconnecting before a stop: short, since the stop waits for them.
const DEPART_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one `Send` may take.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// The first wait before reopening a broken stream; it doubles up to [`MAX_RECONNECT_DELAY`].
const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(100);
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(5);

/// Where the agent's topic subscriptions are kept across Osprey restarts (core keeps them in its
/// database). A write that fails is the store's to log: the subscription is in force now either
/// way.
pub trait SubscriptionStore: Send + Sync {
    /// Every kept subscription as `(app id, topic)`.
    fn load(&self) -> Vec<(String, String)>;
    fn added(&self, app_id: &str, topic: &str);
    fn removed(&self, app_id: &str, topic: &str);
    /// The app was uninstalled: none of its subscriptions are kept.
    fn forget_app(&self, app_id: &str);
}

/// The comm apps attached now, and the channel their messages arrive on. Cheap to clone.
#[derive(Clone)]
pub struct Comms {
    inner: Arc<Inner>,
}

struct Inner {
    limits: CommLimits,
    sender: mpsc::Sender<Incoming>,
    receiver: Mutex<Option<mpsc::Receiver<Incoming>>>,
    attached: Mutex<HashMap<String, Attached>>,
    lifecycle: Mutex<HashMap<String, Lifecycle>>,
    /// The agent id and display name registered with every comm app.
    identity: Mutex<Option<(String, String)>>,
    /// Where subscriptions outlive Osprey, read once at the first use after it is set.
    store: std::sync::OnceLock<Arc<dyn SubscriptionStore>>,
    loaded: std::sync::Once,
}

struct Attached {
    channel: AppChannel,
    may_send: bool,
    may_receive: bool,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Comms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comms")
            .field("apps", &self.apps())
            .finish_non_exhaustive()
    }
}

impl Default for Comms {
    fn default() -> Comms {
        Comms::new(CommLimits::default())
    }
}

impl Comms {
    pub fn new(limits: CommLimits) -> Comms {
        let (sender, receiver) = mpsc::channel(limits.queue.max(1));
        Comms {
            inner: Arc::new(Inner {
                limits,
                sender,
                receiver: Mutex::new(Some(receiver)),
                attached: Mutex::new(HashMap::new()),
                lifecycle: Mutex::new(HashMap::new()),
                identity: Mutex::new(None),
                store: std::sync::OnceLock::new(),
                loaded: std::sync::Once::new(),
            }),
        }
    }

    /// Keeps subscriptions in `store` from now on, and subscribes again to the ones it holds when
    /// their apps attach. Set once, before the apps start; later calls are ignored.
    pub fn set_store(&self, store: Arc<dyn SubscriptionStore>) {
        let _ = self.inner.store.set(store);
    }

    /// Reads the kept subscriptions in, the first time any are needed.
    fn load_kept(&self) {
        let Some(store) = self.inner.store.get() else {
            return;
        };
        self.inner.loaded.call_once(|| {
            let kept = store.load();
            let mut lifecycle = self.lifecycle();
            for (app_id, topic) in kept {
                lifecycle
                    .entry(app_id)
                    .or_default()
                    .subscriptions
                    .insert(topic);
            }
        });
    }

    /// Forgets `app_id`'s subscriptions and lifecycle answers (it was uninstalled), here and in
    /// the store.
    pub fn forget(&self, app_id: &str) {
        self.load_kept();
        self.lifecycle().remove(app_id);
        if let Some(store) = self.inner.store.get() {
            store.forget_app(app_id);
        }
    }

    /// The agent id (and a display name) registered with comm apps from their next attach on.
    pub fn set_identity(&self, agent_id: &str, display_name: &str) {
        *self
            .inner
            .identity
            .lock()
            .unwrap_or_else(|e| e.into_inner()) =
            Some((agent_id.to_string(), display_name.to_string()));
    }

    /// The agent id set with [`Comms::set_identity`].
    pub fn agent_id(&self) -> Option<String> {
        self.inner
            .identity
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|(id, _)| id.clone())
    }

    /// The incoming messages of every attached app; `None` after the first call (one consumer).
    pub fn take_incoming(&self) -> Option<mpsc::Receiver<Incoming>> {
        self.inner
            .receiver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn attached(&self) -> std::sync::MutexGuard<'_, HashMap<String, Attached>> {
        self.inner
            .attached
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The attached comm apps' ids, sorted.
    pub fn apps(&self) -> Vec<String> {
        let mut apps: Vec<String> = self.attached().keys().cloned().collect();
        apps.sort();
        apps
    }

    /// Starts (or, after a relaunch, restarts) receiving from `manifest`'s app over `channel`.
    /// Needs a tokio runtime. Does nothing for an app that does not provide `comm`; an app
    /// without `comm:receive` is attached for sending only.
    pub fn attach(&self, manifest: &Manifest, channel: AppChannel) {
        if !manifest.provides.contains(&Capability::Comm) {
            return;
        }
        let cancel = CancellationToken::new();
        let may_receive = allows(&manifest.permissions, "comm", "receive");
        let may_send = allows(&manifest.permissions, "comm", "send");
        let previous = self.attached().insert(
            manifest.id.clone(),
            Attached {
                channel: channel.clone(),
                may_send,
                may_receive,
                cancel: cancel.clone(),
            },
        );
        if let Some(previous) = previous {
            previous.cancel.cancel();
        }
        tokio::spawn({
            let comms = self.clone();
            let app_id = manifest.id.clone();
            let channel = channel.clone();
            let cancel = cancel.clone();
            async move {
                tokio::select! {
                    () = cancel.cancelled() => {}
                    () = comms.join(&app_id, channel) => {}
                }
            }
        });
        if !may_receive {
            tracing::info!(app = %manifest.id, "comm app without comm:receive: send only");
            return;
        }
        let limits = self.inner.limits.clone();
        let sender = self.inner.sender.clone();
        let app_id = manifest.id.clone();
        let open = move || -> BoxFuture<'static, std::result::Result<_, tonic::Status>> {
            let mut client = CommServiceClient::new(channel.clone())
                .max_decoding_message_size(limits.max_message_bytes);
            Box::pin(async move { Ok(client.receive(CommReceiveRequest {}).await?.into_inner()) })
        };
        let limits = self.inner.limits.clone();
        let id = app_id.clone();
        let convert = move |message: CommMessage| bounded(&id, message, &limits);
        tokio::spawn(follow(app_id, "comm", open, convert, sender, cancel));
    }

    /// Stops receiving from `app_id` and forgets it (it stopped, or the supervisor gave up).
    pub fn detach(&self, app_id: &str) {
        if let Some(attached) = self.attached().remove(app_id) {
            attached.cancel.cancel();
        }
    }

    /// Every attached comm app's status, sorted by app id.
    pub fn statuses(&self) -> Vec<CommStatus> {
        self.apps()
            .iter()
            .filter_map(|app| self.status(app))
            .collect()
    }

    /// `app_id`'s status: `None` when it is not attached and never was.
    pub fn status(&self, app_id: &str) -> Option<CommStatus> {
        self.load_kept();
        let attached = self
            .attached()
            .get(app_id)
            .map(|a| (a.may_send, a.may_receive));
        let lifecycle = self.lifecycle().get(app_id).cloned();
        if attached.is_none() && lifecycle.is_none() {
            return None;
        }
        let (may_send, may_receive) = attached.unwrap_or_default();
        let lifecycle = lifecycle.unwrap_or_default();
        Some(CommStatus {
            app_id: app_id.to_string(),
            running: attached.is_some(),
            may_send,
            may_receive,
            topics_supported: lifecycle.topics_supported,
            connected: lifecycle.connected && attached.is_some(),
            detail: lifecycle.detail,
            agent_id: lifecycle.agent_id.filter(|_| attached.is_some()),
            subscriptions: lifecycle.subscriptions.into_iter().collect(),
        })
    }

    fn lifecycle(&self) -> std::sync::MutexGuard<'_, HashMap<String, Lifecycle>> {
        self.inner
            .lifecycle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, app_id: &str, change: impl FnOnce(&mut Lifecycle)) {
        change(self.lifecycle().entry(app_id.to_string()).or_default());
    }

    /// The app's connection, checking that it runs and holds `comm:<what>`.
    fn channel_for(&self, app_id: &str, what: &str) -> Result<AppChannel> {
        let (channel, allowed) = match self.attached().get(app_id) {
            Some(attached) => (
                attached.channel.clone(),
                if what == "send" {
                    attached.may_send
                } else {
                    attached.may_receive
                },
            ),
            None => {
                return Err(Error::SendFailed(format!(
                    "no comm app `{app_id}` is running (`osprey app list` shows the apps)"
                )));
            }
        };
        if !allowed {
            return Err(Error::SendFailed(format!(
                "the app `{app_id}` has no `comm:{what}` permission"
            )));
        }
        Ok(channel)
    }

    /// Refuses topic calls to an app known not to support them.
    fn check_topics(&self, app_id: &str) -> Result<()> {
        match self
            .lifecycle()
            .get(app_id)
            .and_then(|l| l.topics_supported)
        {
            Some(false) => Err(Error::TopicsUnsupported(app_id.to_string())),
            _ => Ok(()),
        }
    }

    /// One lifecycle call with its timeout; UNIMPLEMENTED marks the app as without topics.
    async fn lifecycle_call<T>(
        &self,
        app_id: &str,
        what: &str,
        timeout: Duration,
        call: impl Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T> {
        match tokio::time::timeout(timeout, call).await {
            Err(_) => Err(Error::SendFailed(format!(
                "the comm app `{app_id}` did not answer {what} within {timeout:?}"
            ))),
            Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => {
                self.update(app_id, |l| {
                    l.topics_supported = Some(false);
                    l.connected = false;
                    l.agent_id = None;
                    l.detail = "this bridge does not support topics".into();
                });
                Err(Error::TopicsUnsupported(app_id.to_string()))
            }
            Ok(Err(status)) => Err(Error::SendFailed(format!(
                "the comm app `{app_id}` refused {what}: {}",
                status.message()
            ))),
            Ok(Ok(response)) => {
                self.update(app_id, |l| l.topics_supported = Some(true));
                Ok(response.into_inner())
            }
        }
    }

    /// After an attach: connect, register the agent id, subscribe again to the kept topics.
    /// Failures are recorded in the status (and logged), never fatal: plain messages work.
    async fn join(&self, app_id: &str, channel: AppChannel) {
        let mut client = CommServiceClient::new(channel);
        let connected = self
            .lifecycle_call(
                app_id,
                "ConnectNetwork",
                LIFECYCLE_TIMEOUT,
                client.connect_network(CommConnectRequest {}),
            )
            .await;
        match connected {
            Err(Error::TopicsUnsupported(_)) => {
                tracing::info!(
                    app = app_id,
                    "comm app without topics (lifecycle unimplemented)"
                );
                return;
            }
            Err(error) => {
                tracing::warn!(app = app_id, "comm app did not connect: {error}");
                self.update(app_id, |l| {
                    l.connected = false;
                    l.detail = error.to_string();
                });
                return;
            }
            Ok(answer) => self.update(app_id, |l| {
                l.connected = answer.connected;
                l.detail = answer.detail;
            }),
        }
        let identity = self
            .inner
            .identity
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some((agent_id, display_name)) = identity {
            let request = CommRegisterRequest {
                agent_id: agent_id.clone(),
                display_name,
            };
            match self
                .lifecycle_call(
                    app_id,
                    "Register",
                    LIFECYCLE_TIMEOUT,
                    client.register(request),
                )
                .await
            {
                Ok(answer) => self.update(app_id, |l| {
                    l.agent_id = Some(if answer.agent_id.is_empty() {
                        agent_id
                    } else {
                        answer.agent_id
                    });
                }),
                Err(error) => {
                    tracing::warn!(app = app_id, "the agent id was not registered: {error}");
                    self.update(app_id, |l| l.detail = error.to_string());
                }
            }
        }
        self.load_kept();
        let topics: Vec<String> = self
            .lifecycle()
            .get(app_id)
            .map(|l| l.subscriptions.iter().cloned().collect())
            .unwrap_or_default();
        for topic in topics {
            let request = CommSubscribeRequest {
                topic: topic.clone(),
            };
            if let Err(error) = self
                .lifecycle_call(
                    app_id,
                    "Subscribe",
                    LIFECYCLE_TIMEOUT,
                    client.subscribe(request),
                )
                .await
            {
                tracing::warn!(app = app_id, %topic, "could not subscribe again: {error}");
            }
        }
    }

    /// Before the app stops: deregister the agent id and disconnect (best effort, bounded).
    /// The subscriptions are kept for its next launch.
    pub async fn depart(&self, app_id: &str) {
        let Some(channel) = self.attached().get(app_id).map(|a| a.channel.clone()) else {
            return;
        };
        if self.check_topics(app_id).is_err() {
            return;
        }
        let mut client = CommServiceClient::new(channel);
        let registered = self
            .lifecycle()
            .get(app_id)
            .and_then(|l| l.agent_id.clone());
        if let Some(agent_id) = registered {
            let request = CommDeregisterRequest { agent_id };
            if let Err(error) = self
                .lifecycle_call(
                    app_id,
                    "Deregister",
                    DEPART_TIMEOUT,
                    client.deregister(request),
                )
                .await
            {
                tracing::debug!(app = app_id, "deregister: {error}");
            }
        }
        let request = CommDisconnectRequest {};
        if let Err(error) = self
            .lifecycle_call(
                app_id,
                "DisconnectNetwork",
                DEPART_TIMEOUT,
                client.disconnect_network(request),
            )
            .await
        {
            tracing::debug!(app = app_id, "disconnect: {error}");
        }
        self.update(app_id, |l| {
            l.agent_id = None;
            l.connected = false;
        });
    }

    /// [`Comms::depart`] for every attached app, at once (Osprey is shutting down).
    pub async fn depart_all(&self) {
        let apps = self.apps();
        futures::future::join_all(apps.iter().map(|app| self.depart(app))).await;
    }

    /// Subscribes the agent to `topic` through `app_id` (needs `comm:receive`: messages on the
    /// topic arrive as comm messages). Kept and sent again after a relaunch.
    pub async fn subscribe(&self, app_id: &str, topic: &str) -> Result<()> {
        let channel = self.channel_for(app_id, "receive")?;
        self.check_topics(app_id)?;
        let request = CommSubscribeRequest {
            topic: topic.to_string(),
        };
        let mut client = CommServiceClient::new(channel);
        self.lifecycle_call(
            app_id,
            "Subscribe",
            LIFECYCLE_TIMEOUT,
            client.subscribe(request),
        )
        .await?;
        self.load_kept();
        self.update(app_id, |l| {
            l.subscriptions.insert(topic.to_string());
        });
        if let Some(store) = self.inner.store.get() {
            store.added(app_id, topic);
        }
        Ok(())
    }

    /// Ends the agent's subscription to `topic` through `app_id`. Forgotten here even when the
    /// app cannot be reached, so it is not subscribed again at the next launch.
    pub async fn unsubscribe(&self, app_id: &str, topic: &str) -> Result<bool> {
        self.load_kept();
        let was = self.update_subscriptions(app_id, |set| set.remove(topic));
        if let Some(store) = self.inner.store.get() {
            store.removed(app_id, topic);
        }
        let channel = self.channel_for(app_id, "receive")?;
        self.check_topics(app_id)?;
        let request = CommUnsubscribeRequest {
            topic: topic.to_string(),
        };
        let mut client = CommServiceClient::new(channel);
        self.lifecycle_call(
            app_id,
            "Unsubscribe",
            LIFECYCLE_TIMEOUT,
            client.unsubscribe(request),
        )
        .await?;
        Ok(was)
    }

    fn update_subscriptions<T>(
        &self,
        app_id: &str,
        change: impl FnOnce(&mut BTreeSet<String>) -> T,
    ) -> T {
        change(
            &mut self
                .lifecycle()
                .entry(app_id.to_string())
                .or_default()
                .subscriptions,
        )
    }

    /// The topics `app_id` offers, each marked when the agent is subscribed (at most 500).
    pub async fn topics(&self, app_id: &str) -> Result<Vec<Topic>> {
        self.load_kept();
        let channel = self.channel_for(app_id, "receive")?;
        self.check_topics(app_id)?;
        let mut client = CommServiceClient::new(channel).max_decoding_message_size(1024 * 1024);
        let answer = self
            .lifecycle_call(
                app_id,
                "ListTopics",
                LIFECYCLE_TIMEOUT,
                client.list_topics(CommListTopicsRequest {}),
            )
            .await?;
        let subscribed = self
            .lifecycle()
            .get(app_id)
            .map(|l| l.subscriptions.clone())
            .unwrap_or_default();
        let max = self.inner.limits.max_id_bytes;
        Ok(answer
            .topics
            .into_iter()
            .take(500)
            .map(|mut topic| {
                cut(&mut topic.name, max);
                cut(&mut topic.description, 4 * max);
                Topic {
                    subscribed: subscribed.contains(&topic.name),
                    name: topic.name,
                    description: topic.description,
                    subscribers: topic.subscribers,
                }
            })
            .collect())
    }

    /// Sends `message` out through `app_id`; returns the id the app gave it. A message with a
    /// topic (agent to agent) is refused for an app known not to support topics.
    pub async fn send(&self, app_id: &str, message: Outgoing) -> Result<String> {
        let channel = self.channel_for(app_id, "send")?;
        if !message.topic.is_empty() {
            self.check_topics(app_id)?;
        }
        let author = self
            .inner
            .identity
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|(id, name)| Sender {
                id: id.clone(),
                display_name: name.clone(),
                is_bot: true,
                kind: "agent".into(),
            });
        let request = CommSendRequest {
            conversation_id: message.conversation_id,
            recipient: message.recipient,
            text: message.text,
            attachments: Vec::new(),
            reply_to_id: message.reply_to_id,
            actions: message.actions,
            thread_id: message.thread_id,
            topic: message.topic,
            message_type: message.message_type,
            payload_json: message.payload_json,
            author,
        };
        let mut client = CommServiceClient::new(channel);
        match tokio::time::timeout(SEND_TIMEOUT, client.send(request)).await {
            Err(_) => Err(Error::SendFailed(format!(
                "the app `{app_id}` did not confirm the message within {SEND_TIMEOUT:?}"
            ))),
            Ok(Err(status)) => Err(Error::SendFailed(format!(
                "the app `{app_id}` could not send the message: {}",
                status.message()
            ))),
            Ok(Ok(response)) => Ok(response.into_inner().id),
        }
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary; whether it cut.
pub(crate) fn cut(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

/// The message within the limits, or `None` (logged) when it cannot be used.
fn bounded(app_id: &str, message: CommMessage, limits: &CommLimits) -> Option<Incoming> {
    let CommMessage {
        mut id,
        conversation_id,
        mut sender,
        mut text,
        sent_at_ms,
        attachments,
        author,
        actions,
        mut thread_id,
        mut reply_to_id,
        mut action_id,
        mut topic,
        mut message_type,
        mut payload_json,
    } = message;
    if conversation_id.is_empty() || conversation_id.len() > limits.max_id_bytes {
        tracing::warn!(
            app = app_id,
            "dropped a message: its conversation id is empty or longer than {} bytes",
            limits.max_id_bytes
        );
        return None;
    }
    cut(&mut id, limits.max_id_bytes);
    cut(&mut sender, limits.max_id_bytes);
    for field in [
        &mut thread_id,
        &mut reply_to_id,
        &mut action_id,
        &mut topic,
        &mut message_type,
    ] {
        cut(field, limits.max_id_bytes);
    }
    let author = author.map(|author| bounded_sender(author, limits.max_id_bytes));
    let actions = bounded_actions(actions, limits.max_actions, limits.max_id_bytes);
    let payload_dropped = if payload_json.is_empty() {
        None
    } else if payload_json.len() > limits.max_payload_bytes {
        Some(format!("payload over {} bytes", limits.max_payload_bytes))
    } else if let Err(error) = serde_json::from_str::<serde_json::Value>(&payload_json) {
        Some(format!("payload is not JSON: {error}"))
    } else {
        None
    };
    if payload_dropped.is_some() {
        payload_json.clear();
    }
    let truncated = cut(&mut text, limits.max_text_bytes);
    let mut kept = Vec::new();
    let mut dropped_attachments = Vec::new();
    for mut attachment in attachments {
        cut(&mut attachment.name, limits.max_id_bytes);
        if attachment.data.len() > limits.max_attachment_bytes {
            dropped_attachments.push(format!(
                "{} (over {} bytes)",
                attachment.name, limits.max_attachment_bytes
            ));
        } else if kept.len() >= limits.max_attachments {
            dropped_attachments.push(format!(
                "{} (more than {} attachments)",
                attachment.name, limits.max_attachments
            ));
        } else {
            cut(&mut attachment.mime_type, limits.max_id_bytes);
            kept.push(attachment);
        }
    }
    Some(Incoming {
        app_id: app_id.to_string(),
        id,
        conversation_id,
        sender,
        text,
        sent_at_ms,
        attachments: kept,
        truncated,
        dropped_attachments,
        author,
        actions,
        thread_id,
        reply_to_id,
        action_id,
        topic,
        message_type,
        payload_json,
        payload_dropped,
    })
}

/// A structured sender with every field cut to `max` bytes.
pub(crate) fn bounded_sender(mut author: Sender, max: usize) -> Sender {
    cut(&mut author.id, max);
    cut(&mut author.display_name, max);
    cut(&mut author.kind, max);
    author
}

/// At most `count` actions, each field cut to `max` bytes (the value to four times that).
pub(crate) fn bounded_actions(
    actions: Vec<MessageAction>,
    count: usize,
    max: usize,
) -> Vec<MessageAction> {
    actions
        .into_iter()
        .take(count)
        .map(|mut action| {
            cut(&mut action.id, max);
            cut(&mut action.label, max);
            cut(&mut action.kind, max);
            cut(&mut action.value, 4 * max);
            action
        })
        .collect()
}

/// Reads an app's stream into `out` until `cancel`: reopens it with backoff whenever it ends
/// or fails (the app restarting, a message over the size cap), and waits while `out` is full.
pub(crate) async fn follow<M, T>(
    app_id: String,
    what: &'static str,
    open: impl Fn() -> BoxFuture<'static, std::result::Result<tonic::Streaming<M>, tonic::Status>>
    + Send,
    convert: impl Fn(M) -> Option<T> + Send,
    out: mpsc::Sender<T>,
    cancel: CancellationToken,
) where
    M: Send + 'static,
    T: Send + 'static,
{
    let mut delay = FIRST_RECONNECT_DELAY;
    loop {
        let opened = tokio::select! {
            () = cancel.cancelled() => return,
            opened = open() => opened,
        };
        match opened {
            Err(status) => {
                tracing::debug!(app = %app_id, "{what} stream not open: {}", status.message());
            }
            Ok(mut stream) => loop {
                let next = tokio::select! {
                    () = cancel.cancelled() => return,
                    next = stream.message() => next,
                };
                match next {
                    Ok(Some(message)) => {
                        delay = FIRST_RECONNECT_DELAY;
                        let Some(item) = convert(message) else {
                            continue;
                        };
                        tokio::select! {
                            () = cancel.cancelled() => return,
                            sent = out.send(item) => if sent.is_err() { return },
                        }
                    }
                    Ok(None) => {
                        tracing::debug!(app = %app_id, "the {what} stream ended");
                        break;
                    }
                    Err(status) => {
                        tracing::warn!(app = %app_id, "the {what} stream broke: {}", status.message());
                        break;
                    }
                }
            },
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(MAX_RECONNECT_DELAY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> CommLimits {
        CommLimits {
            max_id_bytes: 8,
            max_actions: 2,
            max_payload_bytes: 32,
            ..CommLimits::default()
        }
    }

    #[test]
    fn the_structured_envelope_is_kept_within_the_limits() {
        let message = CommMessage {
            conversation_id: "room".into(),
            text: "hi".into(),
            author: Some(Sender {
                id: "a-very-long-sender-id".into(),
                display_name: "Ana Lima de Souza".into(),
                is_bot: true,
                kind: "agent".into(),
            }),
            actions: (0..5)
                .map(|n| MessageAction {
                    id: format!("action-number-{n}"),
                    label: "Yes".into(),
                    ..MessageAction::default()
                })
                .collect(),
            thread_id: "thread-123456".into(),
            topic: "news".into(),
            message_type: "request".into(),
            payload_json: r#"{"n": 1}"#.into(),
            ..CommMessage::default()
        };
        let incoming = bounded("bridge", message.clone(), &limits()).unwrap();
        let author = incoming.author.unwrap();
        assert_eq!(author.id, "a-very-l");
        assert_eq!(author.display_name, "Ana Lima");
        assert!(author.is_bot);
        assert_eq!(incoming.actions.len(), 2, "only max_actions are kept");
        assert_eq!(incoming.actions[0].id, "action-n");
        assert_eq!(incoming.thread_id, "thread-1");
        assert_eq!(incoming.topic, "news");
        assert_eq!(incoming.payload_json, r#"{"n": 1}"#);
        assert_eq!(incoming.payload_dropped, None);

        // A payload over the cap, or not JSON, is dropped and said so, never cut.
        let mut big = message.clone();
        big.payload_json = format!(r#"{{"text": "{}"}}"#, "x".repeat(64));
        let incoming = bounded("bridge", big, &limits()).unwrap();
        assert!(incoming.payload_json.is_empty());
        assert_eq!(
            incoming.payload_dropped.as_deref(),
            Some("payload over 32 bytes")
        );
        let mut broken = message;
        broken.payload_json = "{not json".into();
        let incoming = bounded("bridge", broken, &limits()).unwrap();
        assert!(incoming.payload_json.is_empty());
        assert!(
            incoming
                .payload_dropped
                .unwrap()
                .starts_with("payload is not JSON")
        );
    }
}
