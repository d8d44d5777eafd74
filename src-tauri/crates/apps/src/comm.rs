//! Comm apps as Osprey consumes them: each attached app's `CommService.Receive` stream becomes
//! [`Incoming`] messages on one bounded tokio channel (all apps share it; core takes its
//! receiving end once), and [`Comms::send`] sends a message out through an app. The capability
//! host attaches an app after every (re)launch, which replaces its receive loop with one on the
//! new connection; a stream that breaks while the app runs is reopened with backoff. Everything
//! an app sends is bounded ([`CommLimits`]): a gRPC message over the cap ends that stream (it is
//! reopened), text over its cap is cut, attachments over theirs are dropped and named, so a
//! hostile app cannot grow Osprey's memory. Core turns messages into agent turns; this crate does
//! not know the agent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_rpc::v1::comm_service_client::CommServiceClient;
use osprey_rpc::v1::{Attachment, CommMessage, CommReceiveRequest, CommSendRequest};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

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
        }
    }
}

/// One message that arrived through a comm app, within the limits.
#[derive(Clone, Debug, PartialEq)]
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
}

/// A message to send out through a comm app.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outgoing {
    pub conversation_id: String,
    pub recipient: String,
    pub text: String,
    /// The incoming message this answers, if any.
    pub reply_to_id: String,
}

/// How long one `Send` may take.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// The first wait before reopening a broken stream; it doubles up to [`MAX_RECONNECT_DELAY`].
const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(100);
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(5);

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
}

struct Attached {
    channel: Channel,
    may_send: bool,
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
            }),
        }
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
    pub fn attach(&self, manifest: &Manifest, channel: Channel) {
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
                cancel: cancel.clone(),
            },
        );
        if let Some(previous) = previous {
            previous.cancel.cancel();
        }
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

    /// Sends `message` out through `app_id`; returns the id the app gave it.
    pub async fn send(&self, app_id: &str, message: Outgoing) -> Result<String> {
        let (channel, may_send) = match self.attached().get(app_id) {
            Some(attached) => (attached.channel.clone(), attached.may_send),
            None => {
                return Err(Error::SendFailed(format!(
                    "no comm app `{app_id}` is running (`osprey app list` shows the apps)"
                )));
            }
        };
        if !may_send {
            return Err(Error::SendFailed(format!(
                "the app `{app_id}` has no `comm:send` permission"
            )));
        }
        let request = CommSendRequest {
            conversation_id: message.conversation_id,
            recipient: message.recipient,
            text: message.text,
            attachments: Vec::new(),
            reply_to_id: message.reply_to_id,
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
    })
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
