//! Comm and channel apps in the core. [`start`] (called by [`Core::start_apps`]) takes the
//! incoming messages of every comm app and the events of every channel app off the app
//! platform's channels:
//!
//! - Each comm message runs an agent turn with origin [`Origin::Comm`] in the session
//!   `comm:<app-id>:<conversation-id>`, on the chat provider `resolve_chat` picks from the
//!   settings, and the final answer is sent back through the app (`CommService.Send`, to the
//!   conversation, replying to the message). The origin rules apply (by default `comm` may not
//!   use `shell`); approval questions go to the registry's default approver, the core's broker
//!   when a UI attached it ([`Core::attach_approvals`]), else they are denied: nothing is ever
//!   approved for lack of someone to ask. One turn at a time per conversation (later messages
//!   wait, at most [`MAX_WAITING_PER_CONVERSATION`]), turns of different conversations run
//!   concurrently, at most [`MAX_CONCURRENT_TURNS`]. With no provider set up the sender is told
//!   so in one short reply.
//! - Each channel event is appended, as a user-role text message, to the session
//!   `channel:<app-id>:<channel>`: the agent reads it with the `agent` tool's `session history`.
//!   At most [`MAX_CHANNEL_EVENTS_PER_MINUTE`] events per channel are stored; the rest are
//!   dropped and counted in the log. [`Core::channel_send`] posts to a channel.
//!
//! - Messages on a topic the agent subscribed to (agent to agent, see the `comm` resource) are
//!   comm messages too: the turn is told the topic, message type and payload, and the answer
//!   goes back to the sending agent on the same topic as a `response`.
//!
//! The agent's id for topics is the `comm.agent_id` setting ([`agent_identity`]), registered
//! with every comm app as it attaches.
//!
//! The dispatcher holds the core weakly: dropping the last `Core` ends it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use osprey_apps::channel::ChannelEventIn;
use osprey_apps::comm::{Incoming, Outgoing};
use osprey_types::Origin;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::agent::{ChatChoice, TurnRequest};
use crate::runners::RunnerSource;
use crate::{Core, WeakCore};

/// Agent turns for comm messages running at once, over all conversations.
pub const MAX_CONCURRENT_TURNS: usize = 4;
/// Messages of one conversation waiting for its running turn; more are dropped (and logged).
pub const MAX_WAITING_PER_CONVERSATION: usize = 16;
/// Conversations with messages waiting; messages of further ones are dropped (and logged).
pub const MAX_WAITING_CONVERSATIONS: usize = 64;
/// Channel events stored per channel per minute.
pub const MAX_CHANNEL_EVENTS_PER_MINUTE: u32 = 120;
/// How long one comm turn may run before it is cancelled.
pub const TURN_DEADLINE: Duration = Duration::from_secs(600);

/// What the sender is told when no model provider is set up.
pub const NO_PROVIDER_REPLY: &str =
    "Osprey cannot answer right now: no model provider is set up on this computer.";
/// What the sender is told when the turn failed.
const FAILED_REPLY: &str = "Osprey could not answer this message";

/// The agent id registered with comm apps (the `comm.agent_id` setting, chosen and stored the
/// first time: `osprey-` and 8 random hex digits) and the name shown with it (the persona's
/// name, else "Osprey").
pub fn agent_identity(core: &Core) -> (String, String) {
    let stored = core.db().settings();
    let display_name = stored
        .get(crate::settings::PERSONA)
        .ok()
        .flatten()
        .and_then(|persona| persona["name"].as_str().map(str::to_string))
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| "Osprey".to_string());
    let existing = stored
        .get(crate::settings::COMM_AGENT_ID)
        .ok()
        .flatten()
        .and_then(|id| id.as_str().map(str::to_string))
        .filter(|id| !id.trim().is_empty());
    if let Some(id) = existing {
        return (id, display_name);
    }
    let mut bytes = [0u8; 4];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = (std::process::id()).to_le_bytes();
    }
    let id = format!(
        "osprey-{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    if let Err(error) = stored.set(crate::settings::COMM_AGENT_ID, &json!(id)) {
        tracing::warn!("the comm agent id was not stored: {error}");
    }
    (id, display_name)
}

/// The session of a comm conversation.
pub fn comm_session(app_id: &str, conversation_id: &str) -> String {
    format!("comm:{app_id}:{conversation_id}")
}

/// The session of a channel's events.
pub fn channel_session(app_id: &str, channel: &str) -> String {
    format!("channel:{app_id}:{channel}")
}

impl Core {
    /// Sends `text` into a comm app's conversation (not as a reply); returns the app's id for it.
    pub async fn comm_send(
        &self,
        app_id: &str,
        conversation_id: &str,
        text: &str,
    ) -> anyhow::Result<String> {
        Ok(self
            .apps()
            .comms()
            .send(
                app_id,
                Outgoing {
                    conversation_id: conversation_id.to_string(),
                    text: text.to_string(),
                    ..Outgoing::default()
                },
            )
            .await?)
    }

    /// Posts to a channel app's channel (it needs `channel:write`); returns the app's id for it.
    pub async fn channel_send(
        &self,
        app_id: &str,
        channel: &str,
        text: &str,
        data: Option<&Value>,
    ) -> anyhow::Result<String> {
        Ok(self
            .apps()
            .channels()
            .send(app_id, channel, text, data)
            .await?)
    }
}

/// Starts consuming comm messages and channel events on the current tokio runtime. Only the
/// first call does anything (each channel has one consumer).
pub(crate) fn start(core: &Core) {
    if let Some(incoming) = core.apps().comms().take_incoming() {
        tokio::spawn(dispatch(core.downgrade(), incoming));
    }
    if let Some(events) = core.apps().channels().take_events() {
        tokio::spawn(record_channel_events(core.downgrade(), events));
    }
}

/// A message waiting for its turn: the attachments' bytes are not kept (the agent is only told
/// their names and sizes), so waiting messages cost little more than their text.
struct Queued {
    message: Incoming,
    /// "name (mime type, N bytes)" per attachment.
    attachments: Vec<String>,
}

impl Queued {
    fn new(mut message: Incoming) -> Queued {
        let attachments = std::mem::take(&mut message.attachments)
            .iter()
            .map(|a| format!("{} ({}, {} bytes)", a.name, a.mime_type, a.data.len()))
            .collect();
        Queued {
            message,
            attachments,
        }
    }
}

/// Each conversation's waiting messages; an entry exists while its worker runs.
type Waiting = Arc<Mutex<HashMap<String, mpsc::Sender<Queued>>>>;

async fn dispatch(core: WeakCore, mut incoming: mpsc::Receiver<Incoming>) {
    let turns = Arc::new(Semaphore::new(MAX_CONCURRENT_TURNS));
    let waiting: Waiting = Arc::default();
    while let Some(message) = incoming.recv().await {
        if core.upgrade().is_none() {
            return;
        }
        let message = Queued::new(message);
        let session = comm_session(&message.message.app_id, &message.message.conversation_id);
        let mut queues = waiting.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(queue) = queues.get(&session) {
            // Sent under the lock: the worker checks for more under it before it ends.
            if queue.try_send(message).is_err() {
                tracing::warn!(%session, "dropped a comm message: too many waiting in this conversation");
            }
            continue;
        }
        if queues.len() >= MAX_WAITING_CONVERSATIONS {
            tracing::warn!(%session, "dropped a comm message: too many conversations waiting");
            continue;
        }
        let (sender, receiver) = mpsc::channel(MAX_WAITING_PER_CONVERSATION);
        let _ = sender.try_send(message);
        queues.insert(session.clone(), sender);
        drop(queues);
        tokio::spawn(conversation(
            core.clone(),
            session,
            receiver,
            Arc::clone(&waiting),
            Arc::clone(&turns),
        ));
    }
}

/// Answers one conversation's messages in order, then ends.
async fn conversation(
    core: WeakCore,
    session: String,
    mut receiver: mpsc::Receiver<Queued>,
    waiting: Waiting,
    turns: Arc<Semaphore>,
) {
    loop {
        let message = {
            let mut queues = waiting.lock().unwrap_or_else(|e| e.into_inner());
            match receiver.try_recv() {
                Ok(message) => message,
                Err(_) => {
                    queues.remove(&session);
                    return;
                }
            }
        };
        let Ok(_permit) = turns.acquire().await else {
            return;
        };
        let Some(core) = core.upgrade() else {
            return;
        };
        answer(&core, &session, message).await;
    }
}

/// Who wrote, as the turn shows it: the display name with the handle and kind when the app
/// gave a structured sender ("Ana Lima <ana@example.com>", "helper (agent a-2, bot)"), else the
/// plain handle, else "someone".
fn who(message: &Incoming) -> String {
    let Some(author) = &message.author else {
        return if message.sender.is_empty() {
            "someone".into()
        } else {
            message.sender.clone()
        };
    };
    let handle = if author.id.is_empty() {
        &message.sender
    } else {
        &author.id
    };
    let mut notes = Vec::new();
    if !author.kind.is_empty() && author.kind != "person" {
        notes.push(author.kind.clone());
    }
    if author.is_bot && author.kind != "bot" {
        notes.push("bot".into());
    }
    let mut name = match (author.display_name.is_empty(), handle.is_empty()) {
        (false, false) => format!("{} <{handle}>", author.display_name),
        (false, true) => author.display_name.clone(),
        (true, false) => handle.clone(),
        (true, true) => "someone".into(),
    };
    if !notes.is_empty() {
        name.push_str(&format!(" ({})", notes.join(", ")));
    }
    name
}

/// "\n[Actions offered: Yes (yes), No (no)]", or nothing without actions.
fn offered(actions: &[osprey_rpc::v1::MessageAction]) -> String {
    if actions.is_empty() {
        return String::new();
    }
    let offered: Vec<String> = actions
        .iter()
        .map(|a| format!("{} ({})", a.label, a.id))
        .collect();
    format!("\n[Actions offered: {}]", offered.join(", "))
}

/// What the agent reads: who wrote, through which app, the text, and what was left out.
fn turn_input(queued: &Queued) -> String {
    let message = &queued.message;
    let on_topic = if message.topic.is_empty() {
        String::new()
    } else {
        format!(
            " on the topic `{}` ({})",
            message.topic,
            if message.message_type.is_empty() {
                "message"
            } else {
                &message.message_type
            }
        )
    };
    let mut input = format!(
        "[A message from {}{on_topic} via the comm app `{}`]",
        who(message),
        message.app_id,
    );
    if !message.thread_id.is_empty() {
        input.push_str(&format!("\n[In thread {}]", message.thread_id));
    }
    if !message.action_id.is_empty() {
        input.push_str(&format!(
            "\n[They picked the action `{}` of message {}]",
            message.action_id, message.reply_to_id
        ));
    } else if !message.reply_to_id.is_empty() {
        input.push_str(&format!("\n[Replying to message {}]", message.reply_to_id));
    }
    input.push('\n');
    input.push_str(&message.text);
    if !message.payload_json.is_empty() {
        input.push_str(&format!("\npayload: {}", message.payload_json));
    }
    if let Some(reason) = &message.payload_dropped {
        input.push_str(&format!("\n[payload dropped: {reason}]"));
    }
    input.push_str(&offered(&message.actions));
    if message.truncated {
        input.push_str("\n[The message was longer; the rest was cut.]");
    }
    if !queued.attachments.is_empty() {
        input.push_str(&format!(
            "\n[Attachments, not shown: {}]",
            queued.attachments.join(", ")
        ));
    }
    if !message.dropped_attachments.is_empty() {
        input.push_str(&format!(
            "\n[Attachments dropped: {}]",
            message.dropped_attachments.join(", ")
        ));
    }
    input
}

/// Runs the turn for `message` and sends the answer back.
async fn answer(core: &Core, session: &str, queued: Queued) {
    let source = RunnerSource::Choice(ChatChoice::default());
    let reply = match core.session_runner(session, &source).await {
        Err(error) => {
            tracing::warn!(%session, "a comm message got no answer: {error:#}");
            NO_PROVIDER_REPLY.to_string()
        }
        Ok(runner) => {
            let cancel = CancellationToken::new();
            let mut turn = TurnRequest::new(session, turn_input(&queued));
            turn.origin = Origin::Comm;
            // No approver of its own: the registry's default (the broker a UI attached)
            // asks, and without one approval-needing calls are refused.
            turn.approver = None;
            turn.cancel = cancel.clone();
            let deadline = tokio::spawn({
                let cancel = cancel.clone();
                async move {
                    tokio::time::sleep(TURN_DEADLINE).await;
                    cancel.cancel();
                }
            });
            let outcome = core
                .run_turn_with_events(&runner, turn, |core, _| {
                    name_session(core, session, &queued.message)
                })
                .await;
            deadline.abort();
            match outcome {
                Ok(outcome) if !outcome.text.trim().is_empty() => outcome.text,
                Ok(outcome) => {
                    tracing::warn!(%session, stop = ?outcome.stop, "a comm turn ended without text");
                    format!("{FAILED_REPLY} (the turn ended without an answer).")
                }
                Err(error) => {
                    tracing::warn!(%session, "a comm turn failed: {error}");
                    format!("{FAILED_REPLY} ({}).", error.turn_failure())
                }
            }
        }
    };
    let message = queued.message;
    let sent = core
        .apps()
        .comms()
        .send(
            &message.app_id,
            Outgoing {
                conversation_id: message.conversation_id.clone(),
                recipient: message
                    .author
                    .as_ref()
                    .map(|a| a.id.clone())
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| message.sender.clone()),
                text: reply,
                reply_to_id: message.id.clone(),
                thread_id: message.thread_id.clone(),
                // An answer on a topic goes back on it, as a response.
                message_type: if message.topic.is_empty() {
                    String::new()
                } else {
                    "response".into()
                },
                topic: message.topic.clone(),
                ..Outgoing::default()
            },
        )
        .await;
    if let Err(error) = sent {
        tracing::warn!(%session, "the answer was not sent: {error}");
    }
}

/// Titles a new comm session after the conversation, as the session list shows it.
fn name_session(core: &Core, session: &str, message: &Incoming) {
    let sessions = core.db().sessions();
    if let Ok(Some(row)) = sessions.get(session)
        && row.title.is_none()
    {
        let who = message
            .author
            .as_ref()
            .map(|a| a.display_name.clone())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| {
                if message.sender.is_empty() {
                    message.conversation_id.clone()
                } else {
                    message.sender.clone()
                }
            });
        let mut title = format!("{who} via {}", message.app_id);
        truncate_chars(&mut title, 80);
        if let Err(error) = sessions.set_title(session, &title) {
            tracing::warn!(%session, "could not title the session: {error}");
        }
    }
}

fn truncate_chars(text: &mut String, max: usize) {
    if let Some((index, _)) = text.char_indices().nth(max) {
        text.truncate(index);
    }
}

/// One channel's count in the current minute.
struct Window {
    started: Instant,
    stored: u32,
    dropped: u32,
}

async fn record_channel_events(core: WeakCore, mut events: mpsc::Receiver<ChannelEventIn>) {
    let mut windows: HashMap<String, Window> = HashMap::new();
    while let Some(event) = events.recv().await {
        let Some(core) = core.upgrade() else {
            return;
        };
        let session = channel_session(&event.app_id, &event.channel);
        let window = windows.entry(session.clone()).or_insert(Window {
            started: Instant::now(),
            stored: 0,
            dropped: 0,
        });
        if window.started.elapsed() >= Duration::from_secs(60) {
            if window.dropped > 0 {
                tracing::warn!(%session, dropped = window.dropped, "channel events over the rate cap were dropped");
            }
            *window = Window {
                started: Instant::now(),
                stored: 0,
                dropped: 0,
            };
        }
        if window.stored >= MAX_CHANNEL_EVENTS_PER_MINUTE {
            window.dropped += 1;
            continue;
        }
        window.stored += 1;
        if let Err(error) = store_channel_event(&core, &session, &event) {
            tracing::warn!(%session, "a channel event was not stored: {error:#}");
        }
    }
}

/// The event as a message of its channel's session.
fn store_channel_event(core: &Core, session: &str, event: &ChannelEventIn) -> anyhow::Result<()> {
    let sessions = core.db().sessions();
    let title = format!("Channel {} ({})", event.channel, event.app_id);
    sessions.open_or_create(&osprey_db::NewSession {
        id: session,
        title: Some(&title),
        origin: Origin::App.as_str(),
        provider: None,
        model: None,
    })?;
    let mut text = format!(
        "[channel `{}` of the app `{}`: {} event {} at {} ms]\n{}",
        event.channel, event.app_id, event.kind, event.id, event.at_ms, event.text
    );
    if let Some(author) = &event.author {
        let name = if author.display_name.is_empty() {
            &author.id
        } else {
            &author.display_name
        };
        let bot = if author.is_bot { ", bot" } else { "" };
        text.push_str(&format!("\n[from {name} ({}{bot})]", author.id));
    }
    if !event.thread_id.is_empty() || !event.reply_to_id.is_empty() {
        text.push_str(&format!(
            "\n[thread {}, replying to {}]",
            event.thread_id, event.reply_to_id
        ));
    }
    text.push_str(&offered(&event.actions));
    if event.truncated {
        text.push_str("\n[The text was longer; the rest was cut.]");
    }
    if let Some(data) = &event.data {
        text.push_str(&format!("\ndata: {data}"));
    }
    if let Some(reason) = &event.data_dropped {
        text.push_str(&format!("\n[data dropped: {reason}]"));
    }
    let content = json!([{"type": "text", "text": text}]);
    sessions.append_message(session, "user", &content, None)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use osprey_rpc::v1::Attachment;

    #[test]
    fn the_agent_is_told_who_wrote_and_what_was_left_out() {
        let mut message = Incoming {
            app_id: "bridge".into(),
            id: "m1".into(),
            conversation_id: "room".into(),
            sender: String::new(),
            text: "hi".into(),
            sent_at_ms: 1,
            attachments: Vec::new(),
            truncated: false,
            dropped_attachments: Vec::new(),
            ..Incoming::default()
        };
        assert_eq!(
            turn_input(&Queued::new(message.clone())),
            "[A message from someone via the comm app `bridge`]\nhi"
        );
        message.sender = "ana".into();
        message.truncated = true;
        message.attachments.push(Attachment {
            name: "a.txt".into(),
            mime_type: "text/plain".into(),
            data: vec![0; 3],
        });
        message
            .dropped_attachments
            .push("big.bin (over 4 bytes)".into());
        let queued = Queued::new(message);
        assert!(
            queued.message.attachments.is_empty(),
            "the bytes are not kept"
        );
        let input = turn_input(&queued);
        assert!(input.starts_with("[A message from ana via"), "{input}");
        assert!(input.contains("the rest was cut"), "{input}");
        assert!(
            input.contains("[Attachments, not shown: a.txt (text/plain, 3 bytes)]"),
            "{input}"
        );
        assert!(
            input.contains("[Attachments dropped: big.bin (over 4 bytes)]"),
            "{input}"
        );
    }

    #[test]
    fn sessions_are_named_by_app_and_conversation() {
        assert_eq!(comm_session("bridge", "room:1"), "comm:bridge:room:1");
        assert_eq!(channel_session("bridge", "feed"), "channel:bridge:feed");
        let mut title = "é".repeat(100);
        truncate_chars(&mut title, 80);
        assert_eq!(title.chars().count(), 80);
    }
}
