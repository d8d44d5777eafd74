//! Messages the agent sends out of Osprey: through a chat or mail bridge (a comm app) or a
//! channel app, and agent-to-agent on topics. The agent crate does not know apps (the crates'
//! direction is tools <- {apps, agent} <- core), so this module only says what the `agent`
//! tool's `message` and `comm` resources and a reminder's `deliver` need ([`Outbox`]); core
//! implements it over the app platform and puts it in the [`OutboxSlot`]. An empty slot (no app
//! platform, as on Windows today) makes those calls say outbound messages are not available.
//!
//! Channel names: a comm bridge is named by its app id (`bridge`); a channel of a channel app
//! by `<app id>/<channel>` (`bridge/feed`). `message list` shows the names to use.

use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A button or quick reply offered with a message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboundAction {
    pub id: String,
    pub label: String,
}

/// A message to send through a connected channel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboundMessage {
    /// A name from [`Outbox::channels`]: `<app>` for a comm bridge, `<app>/<channel>`.
    pub channel: String,
    /// The recipient in the bridge's terms (an address, a user, a room); may be empty where the
    /// channel needs none.
    pub to: String,
    pub text: String,
    /// The message this one answers (the bridge's id for it).
    pub reply_to: String,
    /// The thread or conversation to post in.
    pub thread_id: String,
    pub actions: Vec<OutboundAction>,
}

/// What a send returns: where it went and the id the bridge gave it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sent {
    pub channel: String,
    pub id: String,
}

/// One channel the agent can reach, as `message list` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConnectedChannel {
    /// The name `message send` takes.
    pub channel: String,
    pub app_id: String,
    /// `comm` (a bridge people write through) or `channel` (a named event stream).
    pub kind: String,
    pub can_send: bool,
    pub can_receive: bool,
    /// `running`, or `stopped` for an installed app that is not running now.
    pub status: String,
}

/// Where a reminder's output goes when it fires, besides its session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub channel: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub to: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thread_id: String,
}

impl Delivery {
    /// The message that delivers `text`.
    pub fn message(&self, text: &str) -> OutboundMessage {
        OutboundMessage {
            channel: self.channel.clone(),
            to: self.to.clone(),
            text: text.to_string(),
            thread_id: self.thread_id.clone(),
            ..OutboundMessage::default()
        }
    }
}

/// An agent-to-agent operation of the `comm` resource. `app` picks the comm app when more than
/// one runs; with one, it may be left out.
#[derive(Clone, Debug, PartialEq)]
pub enum CommOperation {
    Send {
        app: Option<String>,
        /// The other agent's id.
        to: String,
        topic: String,
        message_type: String,
        text: String,
        payload: Option<Value>,
    },
    Subscribe {
        app: Option<String>,
        topic: String,
    },
    Unsubscribe {
        app: Option<String>,
        topic: String,
    },
    Topics {
        app: Option<String>,
    },
    Status {
        app: Option<String>,
    },
}

/// Sends out of Osprey on the agent's behalf. Errors are messages for the model and the person
/// (what went wrong and what to do, naming the connected channels where that helps).
pub trait Outbox: Send + Sync + 'static {
    /// The channels the agent can reach now, and installed ones that are stopped.
    fn channels(&self) -> BoxFuture<'_, Vec<ConnectedChannel>>;
    /// Sends `message` through its channel's app.
    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<Sent, String>>;
    /// Runs an agent-to-agent operation; the answer is JSON for the tool result.
    fn comm(&self, operation: CommOperation) -> BoxFuture<'_, Result<Value, String>>;
}

/// Where the agent tool and the reminder handler find the [`Outbox`]; empty until core fills
/// it. Cheap to clone; every clone sees the same one.
#[derive(Clone, Default)]
pub struct OutboxSlot {
    outbox: Arc<RwLock<Option<Arc<dyn Outbox>>>>,
}

impl std::fmt::Debug for OutboxSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxSlot")
            .field("set", &self.get().is_some())
            .finish()
    }
}

impl OutboxSlot {
    pub fn set(&self, outbox: Arc<dyn Outbox>) {
        *self
            .outbox
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(outbox);
    }

    pub fn get(&self) -> Option<Arc<dyn Outbox>> {
        self.outbox
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// What a call says when no outbox is in place.
pub const NOT_AVAILABLE: &str = "outbound messages are not available in this Osprey: channel and \
     comm apps run in the desktop app or `osprey daemon` (on Linux and macOS)";
