//! Channel apps as Osprey consumes them: for each `channel:NAME` an attached app provides (with
//! `channel:read`), its `ChannelService.Receive(NAME)` stream becomes [`ChannelEventIn`]s on one
//! bounded tokio channel shared by all apps (core takes the receiving end once); [`Channels::send`]
//! posts to a channel (`channel:write`). Reconnection and the size caps work as for comm apps
//! (see `comm.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_rpc::AppChannel;
use osprey_rpc::v1::channel_service_client::ChannelServiceClient;
use osprey_rpc::v1::{
    ChannelEvent, ChannelReceiveRequest, ChannelSendRequest, MessageAction, Sender,
};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::comm::{bounded_actions, bounded_sender, cut, follow};
use crate::manifest::{Capability, Manifest};
use crate::permissions::allows;
use crate::{Error, Result};

/// How much of what a channel app sends Osprey keeps.
#[derive(Clone, Debug)]
pub struct ChannelLimits {
    /// One gRPC message on the stream; a bigger one ends the stream (it is reopened).
    pub max_message_bytes: usize,
    /// Event text beyond this is cut and marked.
    pub max_text_bytes: usize,
    /// `data_json` over this (or not JSON) is dropped, and said so.
    pub max_data_bytes: usize,
    /// `id` and `kind` are cut to this.
    pub max_id_bytes: usize,
    /// Events waiting for core; the app's stream waits while it is full.
    pub queue: usize,
}

impl Default for ChannelLimits {
    fn default() -> ChannelLimits {
        ChannelLimits {
            max_message_bytes: 1024 * 1024,
            max_text_bytes: 16 * 1024,
            max_data_bytes: 64 * 1024,
            max_id_bytes: 128,
            queue: 256,
        }
    }
}

/// One event that arrived on an app's channel, within the limits.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelEventIn {
    pub app_id: String,
    /// The channel's name (as declared in `provides`, whatever the app put in the event).
    pub channel: String,
    pub id: String,
    pub kind: String,
    pub text: String,
    /// `data_json` parsed, when present, JSON and within the limit.
    pub data: Option<Value>,
    pub at_ms: i64,
    /// The text was cut at the limit.
    pub truncated: bool,
    /// Why `data_json` was dropped, if it was.
    pub data_dropped: Option<String>,
    /// Who wrote it, when the event is a message (fields cut to the id limit).
    pub author: Option<Sender>,
    /// Buttons or quick replies offered with it (at most 16).
    pub actions: Vec<MessageAction>,
    pub thread_id: String,
    pub reply_to_id: String,
}

/// A post to a channel: the text and, for channels that address someone or have threads, the
/// recipient, thread and the event it answers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChannelPost {
    pub text: String,
    pub data: Option<Value>,
    pub to: String,
    pub thread_id: String,
    pub reply_to_id: String,
    pub actions: Vec<MessageAction>,
}

/// One channel an attached app provides, and what Osprey may do with it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChannelInfo {
    pub app_id: String,
    pub name: String,
    pub may_read: bool,
    pub may_write: bool,
}

/// Actions kept per event.
const MAX_ACTIONS: usize = 16;

const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// The channel apps attached now. Cheap to clone.
#[derive(Clone)]
pub struct Channels {
    inner: Arc<Inner>,
}

struct Inner {
    limits: ChannelLimits,
    sender: mpsc::Sender<ChannelEventIn>,
    receiver: Mutex<Option<mpsc::Receiver<ChannelEventIn>>>,
    attached: Mutex<HashMap<String, Attached>>,
}

struct Attached {
    channel: AppChannel,
    names: Vec<String>,
    may_read: bool,
    may_write: bool,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Channels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channels")
            .field("channels", &self.channels())
            .finish_non_exhaustive()
    }
}

impl Default for Channels {
    fn default() -> Channels {
        Channels::new(ChannelLimits::default())
    }
}

impl Channels {
    pub fn new(limits: ChannelLimits) -> Channels {
        let (sender, receiver) = mpsc::channel(limits.queue.max(1));
        Channels {
            inner: Arc::new(Inner {
                limits,
                sender,
                receiver: Mutex::new(Some(receiver)),
                attached: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The events of every attached channel; `None` after the first call (one consumer).
    pub fn take_events(&self) -> Option<mpsc::Receiver<ChannelEventIn>> {
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

    /// Every attached `(app id, channel name)`, sorted.
    pub fn channels(&self) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = self
            .attached()
            .iter()
            .flat_map(|(app, attached)| {
                attached
                    .names
                    .iter()
                    .map(move |name| (app.clone(), name.clone()))
            })
            .collect();
        all.sort();
        all
    }

    /// Every attached channel with its permissions, sorted by app and name.
    pub fn infos(&self) -> Vec<ChannelInfo> {
        let mut all: Vec<ChannelInfo> = self
            .attached()
            .iter()
            .flat_map(|(app, attached)| {
                attached.names.iter().map(move |name| ChannelInfo {
                    app_id: app.clone(),
                    name: name.clone(),
                    may_read: attached.may_read,
                    may_write: attached.may_write,
                })
            })
            .collect();
        all.sort_by(|a, b| (&a.app_id, &a.name).cmp(&(&b.app_id, &b.name)));
        all
    }

    /// Starts (or restarts) receiving each channel `manifest`'s app provides over `channel`.
    /// Needs a tokio runtime. Without `channel:read` the channels are attached for writing only.
    pub fn attach(&self, manifest: &Manifest, channel: AppChannel) {
        let names: Vec<String> = manifest
            .provides
            .iter()
            .filter_map(|capability| match capability {
                Capability::Channel(name) => Some(name.clone()),
                _ => None,
            })
            .collect();
        if names.is_empty() {
            return;
        }
        let cancel = CancellationToken::new();
        let may_read = allows(&manifest.permissions, "channel", "read");
        let may_write = allows(&manifest.permissions, "channel", "write");
        let previous = self.attached().insert(
            manifest.id.clone(),
            Attached {
                channel: channel.clone(),
                names: names.clone(),
                may_read,
                may_write,
                cancel: cancel.clone(),
            },
        );
        if let Some(previous) = previous {
            previous.cancel.cancel();
        }
        if !may_read {
            tracing::info!(app = %manifest.id, "channel app without channel:read: write only");
            return;
        }
        for name in names {
            let limits = self.inner.limits.clone();
            let transport = channel.clone();
            let requested = name.clone();
            let open = move || -> BoxFuture<'static, std::result::Result<_, tonic::Status>> {
                let mut client = ChannelServiceClient::new(transport.clone())
                    .max_decoding_message_size(limits.max_message_bytes);
                let request = ChannelReceiveRequest {
                    channel: requested.clone(),
                };
                Box::pin(async move { Ok(client.receive(request).await?.into_inner()) })
            };
            let limits = self.inner.limits.clone();
            let app_id = manifest.id.clone();
            let channel_name = name.clone();
            let convert =
                move |event: ChannelEvent| Some(bounded(&app_id, &channel_name, event, &limits));
            tokio::spawn(follow(
                manifest.id.clone(),
                "channel",
                open,
                convert,
                self.inner.sender.clone(),
                cancel.child_token(),
            ));
        }
    }

    /// Stops receiving from `app_id`'s channels and forgets them.
    pub fn detach(&self, app_id: &str) {
        if let Some(attached) = self.attached().remove(app_id) {
            attached.cancel.cancel();
        }
    }

    /// Posts `text` (and optional JSON `data`) to `app_id`'s channel `name`; returns the id the
    /// app gave the post.
    pub async fn send(
        &self,
        app_id: &str,
        name: &str,
        text: &str,
        data: Option<&Value>,
    ) -> Result<String> {
        let post = ChannelPost {
            text: text.to_string(),
            data: data.cloned(),
            ..ChannelPost::default()
        };
        self.post(app_id, name, post).await
    }

    /// Posts `post` to `app_id`'s channel `name` (it needs `channel:write`); returns the id the
    /// app gave the post.
    pub async fn post(&self, app_id: &str, name: &str, post: ChannelPost) -> Result<String> {
        let (channel, may_write) = match self.attached().get(app_id) {
            Some(attached) if attached.names.iter().any(|n| n == name) => {
                (attached.channel.clone(), attached.may_write)
            }
            _ => {
                return Err(Error::SendFailed(format!(
                    "no running app `{app_id}` provides the channel `{name}`"
                )));
            }
        };
        if !may_write {
            return Err(Error::SendFailed(format!(
                "the app `{app_id}` has no `channel:write` permission"
            )));
        }
        let request = ChannelSendRequest {
            channel: name.to_string(),
            text: post.text,
            data_json: post.data.as_ref().map(Value::to_string).unwrap_or_default(),
            to: post.to,
            thread_id: post.thread_id,
            reply_to_id: post.reply_to_id,
            actions: post.actions,
        };
        let mut client = ChannelServiceClient::new(channel);
        match tokio::time::timeout(SEND_TIMEOUT, client.send(request)).await {
            Err(_) => Err(Error::SendFailed(format!(
                "the app `{app_id}` did not confirm the post within {SEND_TIMEOUT:?}"
            ))),
            Ok(Err(status)) => Err(Error::SendFailed(format!(
                "the app `{app_id}` refused the post to `{name}`: {}",
                status.message()
            ))),
            Ok(Ok(response)) => Ok(response.into_inner().id),
        }
    }
}

fn bounded(
    app_id: &str,
    channel: &str,
    event: ChannelEvent,
    limits: &ChannelLimits,
) -> ChannelEventIn {
    let ChannelEvent {
        channel: _,
        mut id,
        mut kind,
        mut text,
        data_json,
        at_ms,
        author,
        actions,
        mut thread_id,
        mut reply_to_id,
    } = event;
    cut(&mut id, limits.max_id_bytes);
    cut(&mut thread_id, limits.max_id_bytes);
    cut(&mut reply_to_id, limits.max_id_bytes);
    cut(&mut kind, limits.max_id_bytes);
    let truncated = cut(&mut text, limits.max_text_bytes);
    let (data, data_dropped) = if data_json.is_empty() {
        (None, None)
    } else if data_json.len() > limits.max_data_bytes {
        (
            None,
            Some(format!("data over {} bytes", limits.max_data_bytes)),
        )
    } else {
        match serde_json::from_str::<Value>(&data_json) {
            Ok(value) => (Some(value), None),
            Err(error) => (None, Some(format!("data is not JSON: {error}"))),
        }
    };
    ChannelEventIn {
        app_id: app_id.to_string(),
        channel: channel.to_string(),
        id,
        kind,
        text,
        data,
        at_ms,
        truncated,
        data_dropped,
        author: author.map(|author| bounded_sender(author, limits.max_id_bytes)),
        actions: bounded_actions(actions, MAX_ACTIONS, limits.max_id_bytes),
        thread_id,
        reply_to_id,
    }
}
