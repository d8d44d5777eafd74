//! Chat for a shell with a UI (the desktop): [`Chats`] starts a turn in the background and
//! returns at once, streams the runner's [`AgentEvent`]s as [`CoreEvent`]s on the core's bus,
//! routes the turn's approval questions to the core's [`ApprovalBroker`](crate::approvals::ApprovalBroker),
//! stops a turn on request, and reads sessions and their history back as transcripts. The CLI
//! drives the runner itself (it prints instead of emitting).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use osprey_agent::{InputImage, Message, Part, Role};
use osprey_types::{
    ChatSearchHit, ChatSessionSummary, ChatUsage, CoreEvent, Origin, TranscriptItem, UiErrorCode,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{
    AgentEvent, ChatChoice, ChatOptions, Runner, TurnOutcome, TurnRequest, TurnStop,
};
use crate::runners::RunnerSource;
use crate::{Core, CoreError, CoreResult};

/// Session ids a caller may choose: 1 to 128 ASCII letters, digits, `.`, `_`, `:` and `-`, so
/// they stay readable in lists, logs and file names.
pub fn valid_session_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// The longest title a person may give a session, in characters.
pub const MAX_TITLE_CHARS: usize = 200;

/// A link from a chat message that may be handed to the system browser: `http`, `https` (with
/// a host) or `mailto`, without spaces or control characters, at most 4096 bytes. Returned
/// trimmed; anything else is refused with `invalid_link`, so a model's `javascript:`, `file:` or
/// custom-scheme link never reaches the system's opener.
pub fn external_link(url: &str) -> CoreResult<String> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let web = ["http://", "https://"]
        .iter()
        .find_map(|scheme| lower.strip_prefix(scheme));
    let ok = url.len() <= 4096
        && !url.chars().any(|c| c.is_whitespace() || c.is_control())
        && match web {
            Some(rest) => rest
                .split(['/', '?', '#'])
                .next()
                .is_some_and(|host| !host.is_empty() && !host.starts_with('@')),
            None => lower
                .strip_prefix("mailto:")
                .is_some_and(|to| !to.is_empty()),
        };
    if ok {
        Ok(url.to_string())
    } else {
        Err(CoreError::new(
            UiErrorCode::InvalidLink,
            format!(
                "`{}` is not a web or mail link, so it is not opened",
                url.chars().take(100).collect::<String>()
            ),
        ))
    }
}

/// A piece of `text` around the first (ASCII case-insensitive, as SQLite's LIKE) occurrence of
/// `query`, whitespace collapsed, at most about 120 characters, `…` where it was cut.
pub fn snippet(text: &str, query: &str) -> String {
    const BEFORE: usize = 40;
    const LENGTH: usize = 120;
    let chars: Vec<char> = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .collect();
    let needle: Vec<char> = query.trim().chars().collect();
    let at = if needle.is_empty() || needle.len() > chars.len() {
        None
    } else {
        (0..=chars.len() - needle.len()).find(|&i| {
            chars[i..i + needle.len()]
                .iter()
                .zip(&needle)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
        })
    };
    let start = at.map_or(0, |at| at.saturating_sub(BEFORE));
    let end = (start + LENGTH).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

fn summary(row: osprey_db::SessionRow) -> ChatSessionSummary {
    ChatSessionSummary {
        id: row.id,
        title: row.title,
        status: row.status,
        updated_ms: row.updated_ms,
        message_count: row.message_count,
    }
}

/// A turn's provider and model as the chat's model picker names them; both empty: the chats'
/// own choice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelPick {
    /// `anthropic`, `openai` or `ollama`.
    pub provider: Option<String>,
    pub model: Option<String>,
}

impl ModelPick {
    fn apply(&self, choice: &mut ChatChoice) -> CoreResult<()> {
        let provider = self
            .provider
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty());
        if let Some(provider) = provider {
            let kind: crate::agent::ProviderKind = provider.parse().map_err(|_| {
                CoreError::new(
                    UiErrorCode::ProviderUnavailable,
                    format!(
                        "`{}` is not a provider: pick anthropic, openai or ollama",
                        provider.chars().take(40).collect::<String>()
                    ),
                )
            })?;
            // The picked provider with its own stored settings, not another one's.
            *choice = ChatChoice {
                provider: Some(kind),
                max_steps: choice.max_steps,
                ..ChatChoice::default()
            };
        }
        if let Some(model) = self
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
        {
            choice.model = Some(model.to_string());
        }
        Ok(())
    }
}

/// The desktop's chats. Cheap to clone.
#[derive(Clone)]
pub struct Chats {
    core: Core,
    choice: Arc<Mutex<ChatChoice>>,
    fixed: Arc<Mutex<Option<ChatOptions>>>,
    running: Arc<Mutex<HashMap<String, CancellationToken>>>,
    counter: Arc<AtomicU64>,
}

impl std::fmt::Debug for Chats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chats").finish_non_exhaustive()
    }
}

impl Chats {
    pub fn new(core: Core) -> Chats {
        Chats {
            core,
            choice: Arc::new(Mutex::new(ChatChoice::default())),
            fixed: Arc::new(Mutex::new(None)),
            running: Arc::new(Mutex::new(HashMap::new())),
            counter: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Overrides the stored provider settings for the turns started from now on.
    pub fn set_choice(&self, choice: ChatChoice) {
        *self.choice.lock().unwrap_or_else(|e| e.into_inner()) = choice;
    }

    /// Uses exactly these options (provider, URL, key, model) instead of resolving them from the
    /// settings; `None` goes back to resolving. For embedders and tests that bring their own.
    pub fn set_options(&self, options: Option<ChatOptions>) {
        *self.fixed.lock().unwrap_or_else(|e| e.into_inner()) = options;
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh session id: time-based, unique within this process.
    pub fn new_session_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("chat-{}-{n}", osprey_db::now_ms())
    }

    /// Starts a turn with `text` in `session_id` (a new session when `None`) on the current tokio
    /// runtime and returns the session id at once. Progress arrives as `chat_*` events; the turn
    /// ends with `chat_turn_finished` or `chat_turn_failed`.
    pub async fn send(&self, session_id: Option<String>, text: &str) -> CoreResult<String> {
        self.send_with(session_id, text, &ModelPick::default())
            .await
    }

    /// [`Chats::send`] with this turn's provider and model picked by the person (the chat's
    /// model picker): a named provider is used with its stored base URL and key, and with
    /// `model` when given (else its stored model). An empty pick is the chats' choice.
    pub async fn send_with(
        &self,
        session_id: Option<String>,
        text: &str,
        pick: &ModelPick,
    ) -> CoreResult<String> {
        self.send_with_image(session_id, text, pick, None).await
    }

    /// [`Chats::send_with`] with an image the person attached (the tray's window snapshot), as
    /// a `data:image/...;base64,` URL: it goes to the model beside the text and stays in the
    /// session's history. An image that is not one (or over [`MAX_IMAGE_BYTES`]) is refused
    /// with `invalid_image`, and nothing is sent; one larger than the models take is scaled or
    /// encoded again on its way (`osprey_agent::images`).
    pub async fn send_with_image(
        &self,
        session_id: Option<String>,
        text: &str,
        pick: &ModelPick,
        image: Option<&str>,
    ) -> CoreResult<String> {
        let images = image.map(parse_image).transpose()?.into_iter().collect();
        let text = text.trim();
        if text.is_empty() {
            return Err(CoreError::new(
                UiErrorCode::EmptyMessage,
                "the message is empty: type something to send",
            ));
        }
        let session_id = session_id
            .filter(|id| !id.trim().is_empty())
            .unwrap_or_else(|| self.new_session_id());
        if !valid_session_id(&session_id) {
            return Err(CoreError::new(
                UiErrorCode::InvalidSessionId,
                format!(
                    "`{}` is not a session id: use 1 to 128 letters, digits, `.`, `_`, `:` or `-`",
                    session_id.chars().take(140).collect::<String>()
                ),
            ));
        }
        let mut choice = self
            .choice
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        pick.apply(&mut choice)?;
        let unavailable = |error: anyhow::Error| {
            CoreError::with_fallback(&error, UiErrorCode::ProviderUnavailable)
        };
        let fixed = self.fixed.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let source = match fixed {
            Some(options) => RunnerSource::Fixed(options),
            None => RunnerSource::Choice(choice),
        };
        // The session's runner from its last turn, unless the provider settings changed.
        let runner = self
            .core
            .session_runner(&session_id, &source)
            .await
            .map_err(unavailable)?;

        let cancel = CancellationToken::new();
        {
            let mut running = self.running();
            if running.contains_key(&session_id) {
                return Err(CoreError::new(
                    UiErrorCode::TurnRunning,
                    format!(
                        "a turn is already running in session {session_id}: stop it or wait for it to finish"
                    ),
                ));
            }
            running.insert(session_id.clone(), cancel.clone());
        }

        let mut turn = TurnRequest::new(session_id.clone(), text);
        turn.images = images;
        turn.origin = Origin::User;
        turn.approver = Some(Arc::new(self.core.approvals().clone()));
        turn.cancel = cancel;
        let title = title_for(text);
        let chats = self.clone();
        let session = session_id.clone();
        tokio::spawn(async move {
            chats
                .core
                .run_turn_with_events(&runner, turn, |core, _| {
                    let sessions = core.db().sessions();
                    if let Ok(Some(row)) = sessions.get(&session)
                        && row.title.is_none()
                        && let Err(error) = sessions.set_title(&session, &title)
                    {
                        tracing::warn!(%error, "could not title the session");
                    }
                    chats.running().remove(&session);
                })
                .await
        });
        Ok(session_id)
    }

    /// Stops the session's running turn; false when none runs.
    pub fn cancel(&self, session_id: &str) -> bool {
        match self.running().get(session_id) {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Whether a turn runs in the session now.
    pub fn is_running(&self, session_id: &str) -> bool {
        self.running().contains_key(session_id)
    }

    /// The most recently updated conversations first (sub-agents' sessions left out).
    pub fn sessions(&self, limit: u32) -> CoreResult<Vec<ChatSessionSummary>> {
        let rows = self
            .core
            .db()
            .sessions()
            .list_conversations(Some(limit))
            .context("listing chat sessions")
            .map_err(storage)?;
        Ok(rows.into_iter().map(summary).collect())
    }

    /// Conversations whose title or messages hold `query`, newest first, each with a snippet of
    /// the first message that matched. An empty query lists them like [`Chats::sessions`].
    pub fn search(&self, query: &str, limit: u32) -> CoreResult<Vec<ChatSearchHit>> {
        let found = self
            .core
            .db()
            .sessions()
            .search_conversations(query, Some(limit))
            .context("searching chat sessions")
            .map_err(storage)?;
        Ok(found
            .into_iter()
            .map(|hit| ChatSearchHit {
                snippet: hit.text.map(|text| snippet(&text, query)),
                session: summary(hit.session),
            })
            .collect())
    }

    /// Gives the session the person's title (trimmed, one line, 1 to [`MAX_TITLE_CHARS`]
    /// characters); the session keeps its place in the list.
    pub fn rename(&self, session_id: &str, title: &str) -> CoreResult<ChatSessionSummary> {
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        let length = title.chars().count();
        if length == 0 || length > MAX_TITLE_CHARS {
            return Err(CoreError::new(
                UiErrorCode::InvalidTitle,
                format!("a title needs 1 to {MAX_TITLE_CHARS} characters (this one has {length})"),
            ));
        }
        let sessions = self.core.db().sessions();
        let renamed = sessions
            .set_title(session_id, &title)
            .context("renaming the session")
            .map_err(storage)?;
        let row = if renamed {
            sessions
                .get(session_id)
                .context("reading the session")
                .map_err(storage)?
        } else {
            None
        };
        row.map(summary).ok_or_else(|| unknown_session(session_id))
    }

    /// Deletes the session with its messages and tool calls. A session whose turn is running is
    /// refused (stop it first).
    pub fn delete(&self, session_id: &str) -> CoreResult<()> {
        if self.is_running(session_id) {
            return Err(CoreError::new(
                UiErrorCode::TurnRunning,
                format!("a turn is running in session {session_id}: stop it before deleting"),
            ));
        }
        let deleted = self
            .core
            .db()
            .sessions()
            .delete(session_id)
            .context("deleting the session")
            .map_err(storage)?;
        if !deleted {
            return Err(unknown_session(session_id));
        }
        self.core.forget_session_runner(session_id);
        Ok(())
    }

    /// The tokens the session used, summed from its stored messages (zero for a session with
    /// none yet, or none stored).
    pub fn usage(&self, session_id: &str) -> CoreResult<ChatUsage> {
        let usage = self
            .core
            .db()
            .sessions()
            .usage(session_id)
            .with_context(|| format!("reading the usage of session {session_id}"))
            .map_err(storage)?;
        Ok(ChatUsage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            context_tokens: usage.last_input_tokens,
        })
    }

    /// The session's stored conversation as a transcript.
    pub fn history(&self, session_id: &str) -> CoreResult<Vec<TranscriptItem>> {
        let stored = self
            .core
            .db()
            .sessions()
            .messages(session_id)
            .with_context(|| format!("reading session {session_id}"))
            .map_err(storage)?;
        let mut messages = Vec::with_capacity(stored.len());
        for message in stored {
            let role = match message.role.as_str() {
                "assistant" => Role::Assistant,
                _ => Role::User,
            };
            let content: Vec<Part> = serde_json::from_value(message.content)
                .with_context(|| format!("stored message {} is unreadable", message.seq))
                .map_err(storage)?;
            messages.push(Message { role, content });
        }
        Ok(transcript(&messages))
    }
}

fn unknown_session(session_id: &str) -> CoreError {
    CoreError::new(
        UiErrorCode::UnknownSession,
        format!("there is no session {session_id} (it may have been deleted)"),
    )
}

/// A failure reading or writing what the database holds.
fn storage(error: anyhow::Error) -> CoreError {
    CoreError::with_fallback(&error, UiErrorCode::Storage)
}

impl Core {
    /// Runs `turn` on `runner` and tells the shells as it goes: `ChatTurnStarted`, the streamed
    /// text, thinking and tool calls, then `ChatTurnFinished` or `ChatTurnFailed`. Every turn a
    /// person may watch goes through here (their own, a reminder's, a comm message's), so the
    /// desktop shows them all alike. `before_end` runs after the last streamed event and before
    /// the end is announced (titling the session, bookkeeping).
    pub(crate) async fn run_turn_with_events(
        &self,
        runner: &Runner,
        mut turn: TurnRequest,
        before_end: impl FnOnce(&Core, &osprey_agent::Result<TurnOutcome>),
    ) -> osprey_agent::Result<TurnOutcome> {
        let session = turn.session_id.clone();
        let _running = self.enter_turn(&session, turn.origin);
        // A turn nobody typed (a reminder, a comm message) waits while automation is paused;
        // the person's own turn starts and only its tool calls wait (at the registry).
        if turn.origin != osprey_types::Origin::User
            && self.automation_paused()
            && !self.wait_while_paused(&turn.cancel).await
        {
            let error = osprey_agent::Error::Cancelled;
            before_end(self, &Err(osprey_agent::Error::Cancelled));
            self.emit(CoreEvent::ChatTurnFailed {
                session_id: session,
                code: error.turn_failure(),
                message: "the turn was cancelled while automation was paused".into(),
            });
            return Err(error);
        }
        let (sender, mut receiver) = mpsc::unbounded_channel();
        turn.events = Some(sender);
        self.emit(CoreEvent::ChatTurnStarted {
            session_id: session.clone(),
        });
        let forwarder = tokio::spawn({
            let events = self.events().clone();
            let session = session.clone();
            async move {
                while let Some(event) = receiver.recv().await {
                    if let Some(event) = to_core_event(&session, event) {
                        events.emit(event);
                    }
                }
            }
        });
        let outcome = runner.run_turn(turn).await;
        // The turn request (and its sender) is gone: the forwarder drains and ends, so every
        // streamed event is out before the turn's end is announced.
        let _ = forwarder.await;
        before_end(self, &outcome);
        self.emit(match &outcome {
            Ok(outcome) => CoreEvent::ChatTurnFinished {
                session_id: session,
                stop: stop_name(&outcome.stop),
                text: outcome.text.clone(),
            },
            Err(error) => CoreEvent::ChatTurnFailed {
                session_id: session,
                code: error.turn_failure(),
                message: error.to_string(),
            },
        });
        outcome
    }
}

/// The first line of the first message, shortened: the session list's title.
fn title_for(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    title
}

fn stop_name(stop: &TurnStop) -> String {
    match stop {
        TurnStop::EndTurn => "end_turn".into(),
        TurnStop::MaxTokens => "max_tokens".into(),
        TurnStop::StepLimit => "step_limit".into(),
        TurnStop::Cancelled => "cancelled".into(),
        TurnStop::Other(other) => other.clone(),
    }
}

/// The UI's event for one runner event; usage bookkeeping is not shown.
fn to_core_event(session: &str, event: AgentEvent) -> Option<CoreEvent> {
    let session_id = session.to_string();
    Some(match event {
        AgentEvent::TextDelta(text) => CoreEvent::ChatTextDelta { session_id, text },
        AgentEvent::ThinkingDelta(text) => CoreEvent::ChatThinkingDelta { session_id, text },
        AgentEvent::ToolCallStarted { id, name, input } => CoreEvent::ChatToolCallStarted {
            session_id,
            call_id: id,
            name,
            input,
        },
        AgentEvent::ToolCallFinished { id, name, result } => CoreEvent::ChatToolCallFinished {
            session_id,
            call_id: id,
            name,
            result,
        },
        _ => return None,
    })
}

/// The largest image a message may carry, decoded.
pub const MAX_IMAGE_BYTES: usize = 8 << 20;

/// An attached image from its `data:` URL: PNG, JPEG, WebP or GIF, base64, at most
/// [`MAX_IMAGE_BYTES`].
fn parse_image(url: &str) -> CoreResult<InputImage> {
    use base64::Engine;
    let refuse = |why: &str| {
        CoreError::new(
            UiErrorCode::InvalidImage,
            format!("the attached image cannot be sent: {why}"),
        )
    };
    let (head, data) = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(','))
        .ok_or_else(|| refuse("it is not a data: URL"))?;
    let mime_type = head
        .strip_suffix(";base64")
        .ok_or_else(|| refuse("it is not base64"))?;
    if !["image/png", "image/jpeg", "image/webp", "image/gif"].contains(&mime_type) {
        return Err(refuse(&format!(
            "{mime_type} is not a PNG, JPEG, WebP or GIF image"
        )));
    }
    if data.len() > MAX_IMAGE_BYTES / 3 * 4 + 4 {
        return Err(refuse(&format!("it is over {} MB", MAX_IMAGE_BYTES >> 20)));
    }
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|_| refuse("its base64 is damaged"))?;
    Ok(InputImage {
        mime_type: mime_type.to_string(),
        data: data.to_string(),
    })
}

/// Stored messages as transcript entries: tool results are attached to their calls; an image
/// the person attached comes before their text.
pub fn transcript(messages: &[Message]) -> Vec<TranscriptItem> {
    let mut items: Vec<TranscriptItem> = Vec::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    for message in messages {
        for part in &message.content {
            match part {
                Part::Text { text } if message.role == Role::User => {
                    items.push(TranscriptItem::User { text: text.clone() })
                }
                Part::Image { mime_type, data } if message.role == Role::User => {
                    items.push(TranscriptItem::UserImage {
                        image: format!("data:{mime_type};base64,{data}"),
                    })
                }
                Part::Text { text } => items.push(TranscriptItem::Assistant { text: text.clone() }),
                Part::Thinking { text, .. } => {
                    items.push(TranscriptItem::Thinking { text: text.clone() })
                }
                Part::ToolCall { id, name, input } => {
                    calls.insert(id.clone(), items.len());
                    items.push(TranscriptItem::ToolCall {
                        call_id: id.clone(),
                        name: name.clone(),
                        input: input.clone(),
                        result: None,
                    });
                }
                Part::ToolResult {
                    call_id,
                    content,
                    is_error,
                } => {
                    if let Some(TranscriptItem::ToolCall { result, .. }) =
                        calls.get(call_id).and_then(|&index| items.get_mut(index))
                    {
                        *result = Some(osprey_types::ToolResult {
                            content: content.clone(),
                            is_error: *is_error,
                            code: None,
                            ..Default::default()
                        });
                    }
                }
                // An image in an assistant message (none today) is not shown.
                Part::Image { .. } => {}
            }
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_results_attach_to_their_calls_and_roles_are_kept() {
        let messages = vec![
            Message::user_text("list files"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Part::Thinking {
                        text: "use the shell".into(),
                        signature: None,
                    },
                    Part::ToolCall {
                        id: "c1".into(),
                        name: "shell".into(),
                        input: json!({"command": "ls"}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![Part::ToolResult {
                    call_id: "c1".into(),
                    content: vec![osprey_types::ContentBlock::Text { text: "a b".into() }],
                    is_error: false,
                }],
            },
            Message::assistant_text("two files"),
        ];
        let items = transcript(&messages);
        assert_eq!(items.len(), 4);
        assert_eq!(
            items[0],
            TranscriptItem::User {
                text: "list files".into()
            }
        );
        assert!(matches!(&items[1], TranscriptItem::Thinking { text } if text == "use the shell"));
        match &items[2] {
            TranscriptItem::ToolCall {
                call_id, result, ..
            } => {
                assert_eq!(call_id, "c1");
                assert_eq!(result.as_ref().unwrap().text_content(), "a b");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            items[3],
            TranscriptItem::Assistant {
                text: "two files".into()
            }
        );
    }

    #[test]
    fn session_ids_are_short_and_plain() {
        assert!(valid_session_id("chat-1732240000000-0a1b2"));
        assert!(valid_session_id("reminder:daily.report_1"));
        assert!(!valid_session_id(""));
        assert!(!valid_session_id("../../etc"));
        assert!(!valid_session_id("a b"));
        assert!(!valid_session_id(&"x".repeat(129)));
    }

    #[test]
    fn only_web_and_mail_links_are_opened() {
        for good in [
            "https://example.com",
            " http://example.com/a?b=c#d ",
            "HTTPS://Example.com",
            "mailto:a@example.com",
        ] {
            assert!(external_link(good).is_ok(), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "https://",
            "https://@evil",
            "http:///path",
            "https://a b",
            "https://a\nb",
            "mailto:",
            "osprey-app://x",
            "",
        ] {
            let error = external_link(bad).unwrap_err();
            assert_eq!(error.code, UiErrorCode::InvalidLink, "{bad}");
        }
    }

    #[test]
    fn snippets_show_the_match_with_some_context() {
        assert_eq!(snippet("short  text\nhere", "TEXT"), "short text here");
        let long = format!("{} needle {}", "a ".repeat(100), "b ".repeat(100));
        let cut = snippet(&long, "Needle");
        assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
        assert!(cut.contains("needle"));
        assert!(cut.chars().count() <= 122);
        // No match (a query with odd spacing): the start of the text.
        assert!(snippet(&long, "zz").starts_with("a a"));
        assert_eq!(snippet("é", "ééé"), "é");
    }

    #[test]
    fn titles_are_the_first_line_shortened() {
        assert_eq!(title_for("hello\nmore"), "hello");
        let long = "x".repeat(80);
        assert_eq!(title_for(&long).chars().count(), 61);
    }
}
