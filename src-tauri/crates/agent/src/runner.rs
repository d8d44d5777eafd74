//! The turn loop. One turn: persist the person's message, build the system prompt from sections,
//! then step: stream the model's reply, persist it, run its tool calls through the registry (in
//! parallel, each with the session's origin, approver and the turn's cancellation), persist and
//! feed back the results, until the model ends its turn or the step limit is reached.
//! Cancellation is honoured at every await. Hook points run only when someone subscribes.
//!
//! Context: the prompt carries the installed apps, the session's active skills (triggers matched
//! on each message) and relevant memory (see `prompt.rs`); before each model call the history is
//! measured (`tokens.rs`) and, near the model's window, old screenshots are dropped and then
//! older turns summarized (`compaction.rs`).

pub mod compaction;
pub mod prompt;
pub mod tokens;

use std::collections::HashSet;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use osprey_db::{Memory, NewSession, Sessions};
use osprey_tools::hooks::{HookDispatcher, NoHooks};
use osprey_tools::{Approver, Level, Registry, ToolContext, ToolScope};
use osprey_types::{ContentBlock, ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::images;
use crate::message::{
    ChatRequest, InputImage, Message, Part, Role, StopReason, StreamEvent, ToolSpec, Usage,
};
use crate::provider::{Assembler, Provider};
use crate::skills::Skills;
use crate::{Error, Result};
use compaction::{SUMMARY_INSTRUCTIONS, SUMMARY_ROLE, Transcript};
use prompt::{MemoryBudget, Section};
use tokens::ImageCost;

pub use osprey_tools::hooks::{
    MEMORY_PRE_RECALL, MEMORY_PRE_STORE, MESSAGE_POST_RECEIVE, MESSAGE_PRE_SEND,
    PROMPT_SYSTEM_SECTIONS, RESPONSE_STREAM, SESSION_MESSAGE_APPEND, SESSION_START,
    STEERING_GENERATE,
};

/// How the runner behaves.
#[derive(Clone, Debug)]
pub struct RunnerConfig {
    pub model: String,
    pub max_tokens: u32,
    /// Model calls per turn before the runner stops with [`TurnStop::StepLimit`].
    pub max_steps: u32,
    /// The identity section of the system prompt.
    pub identity: String,
    /// Deadline for each tool call.
    pub tool_timeout: Duration,
    /// The model's context window in tokens; `None`: by the model's name
    /// ([`tokens::default_context_window`]).
    pub context_window: Option<u64>,
    /// Compact when a request's estimate reaches this share of the window.
    pub compact_threshold: f64,
    /// Turns kept word for word when older ones are summarized.
    pub keep_turns: usize,
    /// How much memory the prompt carries.
    pub memory: MemoryBudget,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            model: String::new(),
            max_tokens: 8192,
            max_steps: 25,
            identity: "You are Osprey, an AI agent on the person's desktop. You act through \
                       tools; say briefly what you did."
                .into(),
            tool_timeout: Duration::from_secs(600),
            context_window: None,
            compact_threshold: 0.8,
            keep_turns: 4,
            memory: MemoryBudget {
                tacit: 10,
                recalled: 5,
                chars: 4_000,
            },
        }
    }
}

/// The installed-apps section of the prompt, asked for at each turn (apps come and go); core
/// supplies it.
pub type AppsSection = Arc<dyn Fn() -> BoxFuture<'static, String> + Send + Sync>;

/// The identity section of the prompt, asked for at each turn (the person edits the persona
/// while Osprey runs); core supplies it. Without one the runner uses [`RunnerConfig::identity`].
pub type IdentitySection = Arc<dyn Fn() -> String + Send + Sync>;

/// Results that arrived for a session since its last turn (a branch's answer), asked for at the
/// start of each turn and put into the conversation before the person's message; core supplies
/// it from the sub-agents.
pub type Inbox = Arc<dyn Fn(&str) -> Vec<String> + Send + Sync>;

/// Older turns of a session about to be summarised out of its context (`transcript` as text),
/// handed to whoever keeps what is worth remembering from them (core attaches
/// `SubAgents::consolidator`, which runs the memory consolidator on them).
#[derive(Clone, Debug, PartialEq)]
pub struct Consolidation {
    pub session_id: String,
    pub origin: Origin,
    pub transcript: String,
}

/// Takes [`Consolidation`]s; it must not block (it starts the work and returns).
pub type Consolidate = Arc<dyn Fn(Consolidation) + Send + Sync>;

/// One turn to run.
#[derive(Clone)]
pub struct TurnRequest {
    pub session_id: String,
    pub origin: Origin,
    /// The person's message.
    pub input: String,
    /// Who answers approval questions for this turn's tool calls.
    pub approver: Option<Arc<dyn Approver>>,
    pub cancel: CancellationToken,
    /// Where live events go (UI, CLI); `None` to run quietly.
    pub events: Option<UnboundedSender<AgentEvent>>,
    /// The loosest policy level this turn's tool calls may be judged at (a sub-agent's turn
    /// carries its parent's cap; see `ToolContext::level_cap`).
    pub level_cap: Option<Level>,
    /// The tools this turn may use (a typed sub-agent's role); `None`: every registered tool.
    /// The model is shown only these and the registry refuses the rest.
    pub scope: Option<Arc<ToolScope>>,
    /// Role instructions (an agent type's prompt), the system prompt's `role` section.
    pub instructions: Option<String>,
    /// Images the person attached to the message (the tray's window snapshot).
    pub images: Vec<InputImage>,
}

impl TurnRequest {
    pub fn new(session_id: impl Into<String>, input: impl Into<String>) -> Self {
        TurnRequest {
            session_id: session_id.into(),
            origin: Origin::User,
            input: input.into(),
            approver: None,
            cancel: CancellationToken::new(),
            events: None,
            level_cap: None,
            scope: None,
            instructions: None,
            images: Vec::new(),
        }
    }
}

/// What happens during a turn, as it happens.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    TextDelta(String),
    ThinkingDelta(String),
    ToolCallStarted {
        id: String,
        name: String,
        input: Value,
    },
    ToolCallFinished {
        id: String,
        name: String,
        result: ToolResult,
    },
    StepFinished {
        step: u32,
        usage: Usage,
        stop: Option<StopReason>,
    },
    /// The history neared the context window and was made smaller before a model call.
    Compacted {
        /// Tool-result images replaced by a note (the newest is kept).
        images_dropped: usize,
        /// Messages replaced by a summary (0 when dropping images was enough).
        messages_summarized: usize,
        tokens_before: u64,
        tokens_after: u64,
    },
}

/// Why a turn ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnStop {
    /// The model finished.
    EndTurn,
    /// The model ran out of output tokens.
    MaxTokens,
    /// The runner stopped after [`RunnerConfig::max_steps`] model calls.
    StepLimit,
    Cancelled,
    /// Another stop reason from the provider (a refusal, ...).
    Other(String),
}

/// The end of a turn.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnOutcome {
    pub stop: TurnStop,
    /// The text of the model's last reply.
    pub text: String,
    pub steps: u32,
    /// Tokens over every step.
    pub usage: Usage,
}

/// Runs turns. Cheap to clone.
#[derive(Clone)]
pub struct Runner {
    inner: Arc<Inner>,
}

struct Inner {
    provider: Arc<dyn Provider>,
    registry: Registry,
    sessions: Sessions,
    hooks: RwLock<Arc<dyn HookDispatcher>>,
    sources: RwLock<Sources>,
    /// The tacit memories last read, and when: listing them scans the memory table (its query
    /// filters cannot use an index), and they change rarely, so they are read again after
    /// [`TACIT_CACHE`] or after this runner ran an `agent` tool call (the memory resource).
    tacit: std::sync::Mutex<Option<(std::time::Instant, Vec<String>)>>,
    /// How many real input tokens (as the provider reported them) the last request had per
    /// estimated one, between 1 and [`MAX_CALIBRATION`]: text in other scripts and code run
    /// denser than four characters a token, and undercounting would let a request overflow.
    /// Never below 1, because providers report cached prompt tokens apart (or not at all).
    calibration: std::sync::Mutex<f64>,
    /// A window learned from the provider refusing a request as too long, for a model whose
    /// window is neither configured nor known by name: below the estimate that was refused.
    learned_window: std::sync::Mutex<Option<u64>>,
    /// The window the provider reports for the model (Ollama's `/api/show`), asked once.
    provider_window: tokio::sync::OnceCell<Option<u64>>,
    config: RunnerConfig,
}

/// The most the estimate is scaled up by what the provider reported.
const MAX_CALIBRATION: f64 = 4.0;

/// How long the prompt reuses the tacit memories it read.
const TACIT_CACHE: Duration = Duration::from_secs(30);

/// Where the prompt's identity, apps, skills and memory sections come from.
#[derive(Clone, Default)]
struct Sources {
    identity: Option<IdentitySection>,
    skills: Option<Skills>,
    memory: Option<Memory>,
    apps: Option<AppsSection>,
    inbox: Option<Inbox>,
    consolidate: Option<Consolidate>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("provider", &self.inner.provider.name())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// How a step's stream ended.
enum Streamed {
    Done(Assembler),
    Cancelled(Assembler),
}

impl Runner {
    pub fn new(
        provider: Arc<dyn Provider>,
        registry: Registry,
        sessions: Sessions,
        config: RunnerConfig,
    ) -> Self {
        Runner {
            inner: Arc::new(Inner {
                provider,
                registry,
                sessions,
                hooks: RwLock::new(Arc::new(NoHooks)),
                sources: RwLock::new(Sources::default()),
                tacit: std::sync::Mutex::new(None),
                calibration: std::sync::Mutex::new(1.0),
                learned_window: std::sync::Mutex::new(None),
                provider_window: tokio::sync::OnceCell::new(),
                config,
            }),
        }
    }

    pub fn set_hooks(&self, hooks: Arc<dyn HookDispatcher>) {
        *self.inner.hooks.write().unwrap_or_else(|e| e.into_inner()) = hooks;
    }

    /// Where each turn's identity section comes from (the persona).
    pub fn set_identity(&self, identity: IdentitySection) {
        self.write_sources().identity = Some(identity);
    }

    /// The skills whose triggers and active set fill the prompt's `skills` section (per
    /// session, kept in memory by [`Skills`]).
    pub fn set_skills(&self, skills: Skills) {
        self.write_sources().skills = Some(skills);
    }

    /// The memory recalled into the prompt's `memory` section.
    pub fn set_memory(&self, memory: Memory) {
        self.write_sources().memory = Some(memory);
    }

    /// Where results that arrive between turns come from (see [`Inbox`]).
    pub fn set_inbox(&self, inbox: Inbox) {
        self.write_sources().inbox = Some(inbox);
    }

    /// Who keeps what is worth remembering from turns compaction summarises (see
    /// [`Consolidate`]).
    pub fn set_consolidator(&self, consolidate: Consolidate) {
        self.write_sources().consolidate = Some(consolidate);
    }

    /// The installed-apps section, asked for at each turn.
    pub fn set_installed_apps(&self, apps: AppsSection) {
        self.write_sources().apps = Some(apps);
    }

    fn write_sources(&self) -> std::sync::RwLockWriteGuard<'_, Sources> {
        self.inner
            .sources
            .write()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn sources(&self) -> Sources {
        self.inner
            .sources
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn hooks(&self) -> Arc<dyn HookDispatcher> {
        self.inner
            .hooks
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn config(&self) -> &RunnerConfig {
        &self.inner.config
    }

    /// The registry this runner's turns call tools through.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// A runner like this one (provider, registry, sessions, hooks, prompt sources) asking the
    /// provider for `model` instead: an agent type's cheaper model on its parent's provider.
    pub fn with_model(&self, model: &str) -> Runner {
        let runner = Runner::new(
            self.inner.provider.clone(),
            self.inner.registry.clone(),
            self.inner.sessions.clone(),
            RunnerConfig {
                model: model.to_string(),
                // A window learned or configured for another model does not carry over.
                context_window: None,
                ..self.inner.config.clone()
            },
        );
        runner.set_hooks(self.hooks());
        *runner.write_sources() = self.sources();
        runner
    }

    /// The session's conversation as the model sees it: from the latest summary on (see
    /// `compaction.rs`), repaired so every tool call has a result (a crash or a failure between
    /// persisting a call and its result would otherwise leave a history the providers reject).
    pub fn history(&self, session_id: &str) -> Result<Vec<Message>> {
        Ok(self.transcript(session_id)?.messages)
    }

    fn transcript(&self, session_id: &str) -> Result<Transcript> {
        let rows = self.inner.sessions.messages(session_id)?;
        let summary = rows.iter().rev().find(|r| r.role == SUMMARY_ROLE);
        let mut items: Vec<(Message, i64)> = Vec::with_capacity(rows.len() + 1);
        let mut through = 0;
        if let Some(row) = summary {
            through = row.content[0]["through_seq"].as_i64().unwrap_or(0);
            let text = row.content[0]["text"].as_str().unwrap_or_default();
            items.push((Message::user_text(text), through));
        }
        for stored in rows {
            if stored.role == SUMMARY_ROLE || stored.seq <= through {
                continue;
            }
            let role = match stored.role.as_str() {
                "assistant" => Role::Assistant,
                _ => Role::User,
            };
            let content: Vec<Part> = serde_json::from_value(stored.content).map_err(|e| {
                Error::Protocol(format!("stored message {} is unreadable: {e}", stored.seq))
            })?;
            items.push((Message { role, content }, stored.seq));
        }
        let mut transcript = Transcript::default();
        for (message, seq) in repair_indexed(items) {
            transcript.push(message, seq);
        }
        Ok(transcript)
    }

    /// Runs one turn to its end. Provider failures end the turn with an error (the session is
    /// marked `failed`); everything persisted so far stays.
    pub async fn run_turn(&self, turn: TurnRequest) -> Result<TurnOutcome> {
        let sessions = &self.inner.sessions;
        let new = sessions.get(&turn.session_id)?.is_none();
        sessions.open_or_create(&NewSession {
            id: &turn.session_id,
            title: None,
            origin: turn.origin.as_str(),
            provider: Some(self.inner.provider.name()),
            model: Some(&self.inner.config.model),
        })?;
        let hooks = self.hooks();
        if new && hooks.has_subscribers(SESSION_START) {
            let payload = json!({"session_id": turn.session_id, "origin": turn.origin.as_str()});
            hooks.do_action(SESSION_START, payload).await;
        }
        sessions.set_status(&turn.session_id, "running")?;
        let outcome = self.play(&turn).await;
        if let Some(skills) = &self.sources().skills {
            skills.end_turn(&turn.session_id);
        }
        let status = match &outcome {
            Ok(o) if o.stop == TurnStop::Cancelled => "cancelled",
            Ok(_) => "idle",
            Err(Error::Cancelled) => "cancelled",
            Err(_) => "failed",
        };
        sessions.set_status(&turn.session_id, status)?;
        outcome
    }

    async fn play(&self, turn: &TurnRequest) -> Result<TurnOutcome> {
        let config = &self.inner.config;
        let mut transcript = self.transcript(&turn.session_id)?;
        // A session stored before images were fitted on arrival may hold one a provider refuses
        // (and would refuse again at every request).
        for message in transcript.messages.iter_mut() {
            if images::needs_fitting(message) {
                *message = within_image_limits(message.clone()).await;
            }
        }
        // What arrived since the last turn joins the conversation before the person's message.
        let arrived = match &self.sources().inbox {
            Some(inbox) => inbox(&turn.session_id),
            None => Vec::new(),
        };
        for text in arrived {
            let note = Message::assistant_text(&text);
            let seq = self.persist(turn, &note, None).await?;
            transcript.push(note, seq);
        }
        let user = within_image_limits(Message::user_with_images(&turn.input, &turn.images)).await;
        let user_seq = self.persist(turn, &user, None).await?;
        transcript.push(user, user_seq);

        // A deferred tool goes out in its short form until the conversation has called it.
        let mut called: HashSet<String> = transcript
            .messages
            .iter()
            .flat_map(|m| m.tool_calls().map(|(_, name, _)| name.to_string()))
            .collect();
        let specs = |called: &HashSet<String>| {
            self.inner
                .registry
                .specs_for_turn(turn.scope.as_deref(), |name| called.contains(name))
        };
        let mut tools: Vec<ToolSpec> = specs(&called);
        let system = self.system_prompt(turn, &tools).await;
        // The system prompt stays the same for the whole turn, the tools until one is first
        // called: measure them once, and again then.
        let mut fixed_tokens = tokens::text_tokens(&system) + tokens::tools_tokens(&tools);

        let mut total = Usage::default();
        let mut last_text = String::new();
        for step in 1..=config.max_steps {
            let mut estimate = self
                .fit_context(turn, fixed_tokens, &mut transcript)
                .await?;
            let mut refused_as_too_long = false;
            let streamed = loop {
                let mut request = ChatRequest {
                    model: config.model.clone(),
                    system: system.clone(),
                    messages: transcript.messages.clone(),
                    tools: tools.clone(),
                    max_tokens: config.max_tokens,
                };
                self.steer(turn, step, &mut request).await;
                self.pre_send(turn, &mut request).await;
                images::cap_images(
                    &mut request.messages,
                    images::MAX_IMAGES,
                    images::MAX_IMAGE_BYTES,
                );
                match self.stream_step(turn, step, request).await {
                    // The window was a guess (or unknown): learn it from the refusal, compact
                    // to fit under it, and try once more.
                    Err(Error::ContextTooLong(message)) if !refused_as_too_long => {
                        refused_as_too_long = true;
                        let refused = self.measured(estimate);
                        tracing::info!(%message, refused, "the model's window is smaller than the request; compacting");
                        *self
                            .inner
                            .learned_window
                            .lock()
                            .unwrap_or_else(|e| e.into_inner()) = Some(refused * 9 / 10);
                        estimate = self
                            .fit_context(turn, fixed_tokens, &mut transcript)
                            .await?;
                    }
                    other => break other?,
                }
            };
            let (assembler, cancelled) = match streamed {
                Streamed::Done(a) => (a, false),
                Streamed::Cancelled(a) => (a, true),
            };
            let usage = assembler.usage;
            if usage.input_tokens > 0 && estimate > 0 {
                let ratio = usage.input_tokens as f64 / estimate as f64;
                *self
                    .inner
                    .calibration
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = ratio.clamp(1.0, MAX_CALIBRATION);
            }
            total.input_tokens += usage.input_tokens;
            total.output_tokens += usage.output_tokens;
            let stop = assembler.stop.clone();

            if cancelled {
                // Keep what the person already saw; a half-streamed tool call is dropped.
                let text = assembler.text();
                if !text.is_empty() {
                    let partial = Message::assistant_text(&text);
                    self.persist(turn, &partial, Some(usage)).await?;
                }
                return Ok(TurnOutcome {
                    stop: TurnStop::Cancelled,
                    text,
                    steps: step,
                    usage: total,
                });
            }

            let (mut reply, bad_arguments) = assembler.finish();
            self.post_receive(turn, &mut reply).await;
            let seq = self.persist(turn, &reply, Some(usage)).await?;
            last_text = reply.text();
            transcript.push(reply.clone(), seq);
            emit(
                turn,
                AgentEvent::StepFinished {
                    step,
                    usage,
                    stop: stop.clone(),
                },
            );

            let calls: Vec<(String, String, Value)> = reply
                .tool_calls()
                .map(|(id, name, input)| (id.to_string(), name.to_string(), input.clone()))
                .collect();
            if calls.is_empty() {
                let stop = match stop {
                    Some(StopReason::MaxTokens) => TurnStop::MaxTokens,
                    Some(StopReason::Other(other)) => TurnStop::Other(other),
                    _ => TurnStop::EndTurn,
                };
                return Ok(TurnOutcome {
                    stop,
                    text: last_text,
                    steps: step,
                    usage: total,
                });
            }

            let before = called.len();
            called.extend(calls.iter().map(|(_, name, _)| name.clone()));
            if called.len() > before {
                let next = specs(&called);
                if next != tools {
                    tools = next;
                    fixed_tokens = tokens::text_tokens(&system) + tokens::tools_tokens(&tools);
                }
            }
            let results = self.run_tools(turn, seq, calls, &bad_arguments).await?;
            let feedback = within_image_limits(Message {
                role: Role::User,
                content: results,
            })
            .await;
            let feedback_seq = self.persist(turn, &feedback, None).await?;
            transcript.push(feedback, feedback_seq);
            if turn.cancel.is_cancelled() {
                return Ok(TurnOutcome {
                    stop: TurnStop::Cancelled,
                    text: last_text,
                    steps: step,
                    usage: total,
                });
            }
        }
        Ok(TurnOutcome {
            stop: TurnStop::StepLimit,
            text: last_text,
            steps: config.max_steps,
            usage: total,
        })
    }

    async fn system_prompt(&self, turn: &TurnRequest, tools: &[ToolSpec]) -> String {
        let sources = self.sources();
        let apps = match &sources.apps {
            Some(apps) => apps().await,
            None => String::new(),
        };
        let skills = sources
            .skills
            .as_ref()
            .map(|s| s.begin_turn(&turn.session_id, &turn.input))
            .unwrap_or_default();
        let memory = match &sources.memory {
            Some(memory) => self.memory_section(turn, memory).await,
            None => String::new(),
        };
        let identity = match &sources.identity {
            Some(identity) => identity(),
            None => self.inner.config.identity.clone(),
        };
        let mut sections = prompt::sections(&identity, tools, &apps, &skills, &memory);
        if let Some(role) = turn
            .instructions
            .as_deref()
            .filter(|r| !r.trim().is_empty())
        {
            // Right after the identity: who this agent is for this task.
            sections.insert(1, Section::new("role", role.trim()));
        }
        let hooks = self.hooks();
        if hooks.has_subscribers(PROMPT_SYSTEM_SECTIONS) {
            let payload = json!({"session_id": turn.session_id, "sections": sections});
            let outcome = hooks.apply_filter(PROMPT_SYSTEM_SECTIONS, payload).await;
            match serde_json::from_value::<Vec<Section>>(outcome.payload["sections"].clone()) {
                Ok(rewritten) => sections = rewritten,
                Err(error) => {
                    tracing::warn!(%error, "a prompt.system_sections hook returned unusable sections; keeping the built-in ones")
                }
            }
        }
        prompt::render(&sections)
    }

    /// Memory for the prompt. A `memory.pre_recall` subscriber sees `{action: "prompt", query,
    /// limit, origin, session_id}` first and may rewrite the query, or answer itself
    /// (`handled`, with the memories' texts in `memories`).
    async fn memory_section(&self, turn: &TurnRequest, memory: &Memory) -> String {
        let budget = self.inner.config.memory;
        let mut query = turn.input.clone();
        let hooks = self.hooks();
        if hooks.has_subscribers(MEMORY_PRE_RECALL) {
            let payload = json!({
                "action": "prompt",
                "query": query,
                "limit": budget.recalled,
                "origin": turn.origin.as_str(),
                "session_id": turn.session_id,
            });
            let outcome = hooks.apply_filter(MEMORY_PRE_RECALL, payload).await;
            if outcome.handled {
                let texts: Vec<String> = outcome.payload["memories"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m.as_str().or_else(|| m["content"].as_str()))
                    .map(String::from)
                    .collect();
                return prompt::memory_text(&[], &texts, budget.chars);
            }
            if let Some(rewritten) = outcome.payload["query"].as_str() {
                query = rewritten.to_string();
            }
        }
        let tacit = self.tacit_memories(memory, budget.tacit);
        let recalled = prompt::recalled_memories(memory, &query, budget.recalled, &tacit);
        prompt::memory_text(&tacit, &recalled, budget.chars)
    }

    fn tacit_memories(&self, memory: &Memory, limit: u32) -> Vec<String> {
        let mut cache = self.inner.tacit.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((read_at, tacit)) = cache.as_ref()
            && read_at.elapsed() < TACIT_CACHE
        {
            return tacit.clone();
        }
        let tacit = prompt::tacit_memories(memory, limit);
        *cache = Some((std::time::Instant::now(), tacit.clone()));
        tacit
    }

    /// A plain estimate scaled by what the provider's reported token counts taught.
    fn measured(&self, estimate: u64) -> u64 {
        let scale = *self
            .inner
            .calibration
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        (estimate as f64 * scale) as u64
    }

    /// Before a model call: when the request's estimate reaches the threshold of the window,
    /// drop old screenshots, then summarize older turns (persisted as a summary row). Returns
    /// the plain estimate of what will be sent (before calibration).
    async fn fit_context(
        &self,
        turn: &TurnRequest,
        fixed: u64,
        transcript: &mut Transcript,
    ) -> Result<u64> {
        let config = &self.inner.config;
        let provider = self.inner.provider.name();
        let learned = *self
            .inner
            .learned_window
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let images = ImageCost::for_provider(provider);
        let raw = |messages: &[Message]| -> u64 {
            fixed
                + messages
                    .iter()
                    .map(|m| tokens::message_tokens(m, images))
                    .sum::<u64>()
        };
        let reported = *self
            .inner
            .provider_window
            .get_or_init(|| self.inner.provider.context_window(&config.model))
            .await;
        let Some(window) = config
            .context_window
            .or(learned)
            .or(reported)
            .or_else(|| tokens::default_context_window(provider, &config.model))
        else {
            // Nothing known about the window: send as is; a refusal teaches it (see run_turn).
            return Ok(raw(&transcript.messages));
        };
        let limit = (window as f64 * config.compact_threshold) as u64;
        let measure = |messages: &[Message]| self.measured(raw(messages));
        let before = measure(&transcript.messages);
        if before < limit {
            return Ok(raw(&transcript.messages));
        }
        let images_dropped = compaction::drop_old_images(&mut transcript.messages);
        let mut after = measure(&transcript.messages);
        let mut messages_summarized = 0;
        if after >= limit {
            // Room for the summary itself (about 400 words).
            let summary_allowance = 800;
            let cut = compaction::choose_cut(&transcript.messages, config.keep_turns, |cut| {
                measure(&transcript.messages[cut..]) + summary_allowance < limit
            });
            if let Some(cut) = cut {
                // The summarizer sees at most half the window of transcript.
                let max_chars = (window as usize / 2).saturating_mul(4);
                // What is worth remembering from these turns is kept before they leave the
                // context (in the background: the turn does not wait for it).
                if let Some(consolidate) = self.sources().consolidate {
                    consolidate(Consolidation {
                        session_id: turn.session_id.clone(),
                        origin: turn.origin,
                        transcript: compaction::transcript_text(
                            &transcript.messages[..cut],
                            max_chars,
                        ),
                    });
                }
                match self
                    .summarize(turn, &transcript.messages[..cut], max_chars)
                    .await
                {
                    Ok(summary) => {
                        let through = transcript.seqs[cut - 1];
                        // A text part readers that know nothing of summaries can show; they
                        // ignore the extra field.
                        let text = compaction::summary_message(&summary).text();
                        let content =
                            json!([{"type": "text", "text": text, "through_seq": through}]);
                        let seq = self.inner.sessions.append_message(
                            &turn.session_id,
                            SUMMARY_ROLE,
                            &content,
                            None,
                        )?;
                        let hooks = self.hooks();
                        if hooks.has_subscribers(SESSION_MESSAGE_APPEND) {
                            let payload = json!({
                                "session_id": turn.session_id,
                                "seq": seq,
                                "role": SUMMARY_ROLE,
                                "content": content,
                            });
                            hooks.do_action(SESSION_MESSAGE_APPEND, payload).await;
                        }
                        transcript.replace_head(cut, &summary);
                        messages_summarized = cut;
                        after = measure(&transcript.messages);
                    }
                    Err(Error::Cancelled) => return Err(Error::Cancelled),
                    Err(error) => {
                        // The call may still fit, or fail with a clear context error.
                        tracing::warn!(%error, "summarizing older turns failed; sending as is");
                    }
                }
            }
        }
        if images_dropped > 0 || messages_summarized > 0 {
            emit(
                turn,
                AgentEvent::Compacted {
                    images_dropped,
                    messages_summarized,
                    tokens_before: before,
                    tokens_after: after,
                },
            );
        }
        Ok(raw(&transcript.messages))
    }

    /// Asks the model for a summary of `messages` (no tools, its own instructions).
    async fn summarize(
        &self,
        turn: &TurnRequest,
        messages: &[Message],
        max_chars: usize,
    ) -> Result<String> {
        let message = Message::user_text(format!(
            "Summarize this conversation so far:\n\n{}",
            compaction::transcript_text(messages, max_chars)
        ));
        let summary = self
            .complete(SUMMARY_INSTRUCTIONS, message, 2_048, &turn.cancel)
            .await?;
        if summary.trim().is_empty() {
            return Err(Error::Protocol(
                "the model returned an empty summary".into(),
            ));
        }
        Ok(summary)
    }

    /// One model call with no tools and no session: `system` as the instructions, `message` as
    /// the whole conversation, the answer's text back (at most `max_tokens`, and never more than
    /// the runner's own limit). Summaries, advisors and image analysis use it; nothing is
    /// stored.
    pub async fn complete(
        &self,
        system: &str,
        message: Message,
        max_tokens: u32,
        cancel: &CancellationToken,
    ) -> Result<String> {
        let request = ChatRequest {
            model: self.inner.config.model.clone(),
            system: system.to_string(),
            messages: vec![message],
            tools: Vec::new(),
            max_tokens: self.inner.config.max_tokens.min(max_tokens),
        };
        let mut assembler = Assembler::new();
        let mut stream = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(Error::Cancelled),
            stream = self.inner.provider.stream(request) => stream?,
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Error::Cancelled),
                next = stream.next() => next,
            };
            match next {
                None => break,
                Some(Err(error)) => return Err(error),
                Some(Ok(event)) => assembler.push(&event),
            }
        }
        Ok(assembler.text())
    }

    async fn steer(&self, turn: &TurnRequest, step: u32, request: &mut ChatRequest) {
        let hooks = self.hooks();
        if !hooks.has_subscribers(STEERING_GENERATE) {
            return;
        }
        let payload = json!({"session_id": turn.session_id, "step": step, "steering": []});
        let outcome = hooks.apply_filter(STEERING_GENERATE, payload).await;
        let texts: Vec<String> = outcome.payload["steering"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .filter(|t| !t.trim().is_empty())
            .map(String::from)
            .collect();
        if texts.is_empty() {
            return;
        }
        if let Some(last) = request
            .messages
            .iter_mut()
            .rev()
            .find(|m| m.role == Role::User)
        {
            last.content
                .extend(texts.into_iter().map(|text| Part::Text { text }));
        }
    }

    async fn pre_send(&self, turn: &TurnRequest, request: &mut ChatRequest) {
        let hooks = self.hooks();
        if !hooks.has_subscribers(MESSAGE_PRE_SEND) {
            return;
        }
        let payload = json!({
            "session_id": turn.session_id,
            "system": request.system,
            "messages": request.messages,
        });
        let outcome = hooks.apply_filter(MESSAGE_PRE_SEND, payload).await;
        if let Some(system) = outcome.payload["system"].as_str() {
            request.system = system.to_string();
        }
        match serde_json::from_value::<Vec<Message>>(outcome.payload["messages"].clone()) {
            Ok(messages) => request.messages = messages,
            Err(error) => {
                tracing::warn!(%error, "a message.pre_send hook returned unusable messages")
            }
        }
    }

    async fn post_receive(&self, turn: &TurnRequest, reply: &mut Message) {
        let hooks = self.hooks();
        if !hooks.has_subscribers(MESSAGE_POST_RECEIVE) {
            return;
        }
        let payload = json!({"session_id": turn.session_id, "message": reply});
        let outcome = hooks.apply_filter(MESSAGE_POST_RECEIVE, payload).await;
        match serde_json::from_value::<Message>(outcome.payload["message"].clone()) {
            Ok(message) => *reply = message,
            Err(error) => {
                tracing::warn!(%error, "a message.post_receive hook returned an unusable message")
            }
        }
    }

    /// Writes a message to the session and tells subscribers; returns its seq.
    async fn persist(
        &self,
        turn: &TurnRequest,
        message: &Message,
        usage: Option<Usage>,
    ) -> Result<i64> {
        let content = serde_json::to_value(&message.content)
            .map_err(|e| Error::Protocol(format!("cannot serialise a message: {e}")))?;
        let tokens = usage.map(|u| (u.input_tokens as i64, u.output_tokens as i64));
        let seq = self.inner.sessions.append_message(
            &turn.session_id,
            message.role.as_str(),
            &content,
            tokens,
        )?;
        let hooks = self.hooks();
        if hooks.has_subscribers(SESSION_MESSAGE_APPEND) {
            let payload = json!({
                "session_id": turn.session_id,
                "seq": seq,
                "role": message.role,
                "content": content,
            });
            hooks.do_action(SESSION_MESSAGE_APPEND, payload).await;
        }
        Ok(seq)
    }

    /// Streams one model call, forwarding deltas; stops early on cancellation.
    async fn stream_step(
        &self,
        turn: &TurnRequest,
        step: u32,
        request: ChatRequest,
    ) -> Result<Streamed> {
        let mut assembler = Assembler::new();
        let stream_hook = ResponseStreamHook::start(self.hooks(), &turn.session_id, step);
        let mut stream = tokio::select! {
            biased;
            _ = turn.cancel.cancelled() => return Ok(Streamed::Cancelled(assembler)),
            stream = self.inner.provider.stream(request) => stream?,
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = turn.cancel.cancelled() => return Ok(Streamed::Cancelled(assembler)),
                next = stream.next() => next,
            };
            match next {
                None => return Ok(Streamed::Done(assembler)),
                Some(Err(error)) => {
                    // Keep the text that arrived: it was shown, and a crash would lose only this.
                    let text = assembler.text();
                    if !text.is_empty() {
                        let _ = self
                            .persist(turn, &Message::assistant_text(text), None)
                            .await;
                        return Err(Error::BrokeOff(Box::new(error)));
                    }
                    return Err(error);
                }
                Some(Ok(event)) => {
                    match &event {
                        StreamEvent::TextDelta(text) => {
                            if let Some(hook) = &stream_hook {
                                hook.send(text);
                            }
                            emit(turn, AgentEvent::TextDelta(text.clone()))
                        }
                        StreamEvent::ThinkingDelta(text) => {
                            emit(turn, AgentEvent::ThinkingDelta(text.clone()))
                        }
                        _ => {}
                    }
                    assembler.push(&event);
                }
            }
        }
    }

    /// Runs the reply's tool calls concurrently through the registry; returns the result parts
    /// in call order. Every call is persisted as it starts and as it finishes.
    async fn run_tools(
        &self,
        turn: &TurnRequest,
        message_seq: i64,
        calls: Vec<(String, String, Value)>,
        bad_arguments: &[(String, String)],
    ) -> Result<Vec<Part>> {
        let sessions = &self.inner.sessions;
        let mut rows = Vec::with_capacity(calls.len());
        for (id, name, input) in &calls {
            rows.push(sessions.start_tool_call(&turn.session_id, message_seq, id, name, input)?);
            emit(
                turn,
                AgentEvent::ToolCallStarted {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                },
            );
        }
        let runs = calls.iter().zip(&rows).map(|((id, name, input), row)| {
            let bad = bad_arguments.iter().find(|(bad_id, _)| bad_id == id);
            async move {
                let result = match bad {
                    Some((_, message)) => ToolResult::error(ErrorCode::InvalidInput, message),
                    None => self.call_tool(turn, name, input.clone()).await,
                };
                let status = if result.is_error { "error" } else { "done" };
                let stored = serde_json::to_value(&result).unwrap_or(Value::Null);
                let code = result.code.map(|c| c.as_str());
                sessions.finish_tool_call(*row, status, &stored, code)?;
                emit(
                    turn,
                    AgentEvent::ToolCallFinished {
                        id: id.clone(),
                        name: name.clone(),
                        result: result.clone(),
                    },
                );
                // The model reads an error's code, whether a changed call can help and what
                // to do next after the error's own text.
                let note = result.recovery_note();
                let mut content = result.content;
                if let Some(note) = note {
                    content.push(ContentBlock::Text { text: note });
                }
                Ok::<_, Error>(Part::ToolResult {
                    call_id: id.clone(),
                    is_error: result.is_error,
                    content,
                })
            }
        });
        futures::future::join_all(runs).await.into_iter().collect()
    }

    async fn call_tool(&self, turn: &TurnRequest, name: &str, input: Value) -> ToolResult {
        let mut ctx = ToolContext::new(turn.origin, self.inner.config.tool_timeout)
            .with_session(turn.session_id.clone());
        ctx.cancel = turn.cancel.child_token();
        ctx.approver = turn.approver.clone();
        ctx.level_cap = turn.level_cap;
        ctx.scope = turn.scope.clone();
        if ctx.cancel.is_cancelled() {
            return ToolResult::error(
                ErrorCode::Cancelled,
                "the turn was cancelled before the call ran",
            );
        }
        let result = self.inner.registry.execute(&ctx, name, input).await;
        if name == "agent" || name.ends_with("__agent") {
            // It may have stored or forgotten a tacit memory.
            *self.inner.tacit.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
        result
    }
}

/// Gives every tool call without a result an error result saying it was interrupted, placed in
/// the user message right after the call (created when missing).
pub fn repair_history(messages: Vec<Message>) -> Vec<Message> {
    repair_indexed(messages.into_iter().map(|m| (m, 0)).collect())
        .into_iter()
        .map(|(m, _)| m)
        .collect()
}

/// [`repair_history`] over messages paired with their stored seq (a created message takes the
/// seq of the call before it).
fn repair_indexed(messages: Vec<(Message, i64)>) -> Vec<(Message, i64)> {
    let mut repaired: Vec<(Message, i64)> = Vec::with_capacity(messages.len());
    let mut messages = messages.into_iter().peekable();
    while let Some((message, seq)) = messages.next() {
        let call_ids: Vec<String> = message
            .tool_calls()
            .map(|(id, _, _)| id.to_string())
            .collect();
        let is_assistant = message.role == Role::Assistant;
        repaired.push((message, seq));
        if !is_assistant || call_ids.is_empty() {
            continue;
        }
        let empty = || {
            (
                Message {
                    role: Role::User,
                    content: Vec::new(),
                },
                seq,
            )
        };
        let (mut next, next_seq) = match messages.peek() {
            Some((m, _)) if m.role == Role::User => messages.next().unwrap_or_else(empty),
            _ => empty(),
        };
        let answered = |id: &str| {
            next.content
                .iter()
                .any(|p| matches!(p, Part::ToolResult { call_id, .. } if call_id == id))
        };
        let missing: Vec<Part> = call_ids
            .iter()
            .filter(|id| !answered(id))
            .map(|id| Part::ToolResult {
                call_id: id.clone(),
                content: vec![ContentBlock::Text {
                    text: "the call was interrupted before it finished (no result)".into(),
                }],
                is_error: true,
            })
            .collect();
        // Results go first in the message (Anthropic requires it).
        next.content.splice(0..0, missing);
        repaired.push((next, next_seq));
    }
    repaired
}

fn emit(turn: &TurnRequest, event: AgentEvent) {
    if let Some(events) = &turn.events {
        let _ = events.send(event);
    }
}

/// Hands each streamed piece of text to `response.stream` subscribers in order, on a task of its
/// own so a slow subscriber never holds up the stream the person is watching. Exists only while
/// someone subscribes; pieces still queued when the step ends are delivered, then the task ends.
struct ResponseStreamHook {
    pieces: tokio::sync::mpsc::UnboundedSender<String>,
}

impl ResponseStreamHook {
    fn start(hooks: Arc<dyn HookDispatcher>, session_id: &str, step: u32) -> Option<Self> {
        if !hooks.has_subscribers(RESPONSE_STREAM) {
            return None;
        }
        let (pieces, mut received) = tokio::sync::mpsc::unbounded_channel::<String>();
        let session_id = session_id.to_string();
        tokio::spawn(async move {
            while let Some(text) = received.recv().await {
                let payload = json!({"session_id": session_id, "step": step, "text": text});
                hooks.do_action(RESPONSE_STREAM, payload).await;
            }
        });
        Some(ResponseStreamHook { pieces })
    }

    fn send(&self, text: &str) {
        let _ = self.pieces.send(text.to_string());
    }
}

/// The message with its images within what the models take ([`images`]): fitted on a blocking
/// thread when one may be over (decoding and scaling a 4K screenshot takes tens of
/// milliseconds), before it is stored, so it is fitted once.
async fn within_image_limits(message: Message) -> Message {
    if !images::needs_fitting(&message) {
        return message;
    }
    let original = message.clone();
    let fitted = tokio::task::spawn_blocking(move || {
        let mut message = message;
        let changed = images::fit_message(&mut message);
        (message, changed)
    })
    .await;
    match fitted {
        Ok((message, changed)) => {
            if changed > 0 {
                tracing::info!(changed, "images fitted to what the models take");
            }
            message
        }
        Err(error) => {
            tracing::warn!(%error, "fitting the images failed; they go as they are");
            original
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Part {
        Part::ToolCall {
            id: id.into(),
            name: "probe".into(),
            input: json!({}),
        }
    }

    fn result(id: &str) -> Part {
        Part::ToolResult {
            call_id: id.into(),
            content: vec![],
            is_error: false,
        }
    }

    fn assistant(parts: Vec<Part>) -> Message {
        Message {
            role: Role::Assistant,
            content: parts,
        }
    }

    fn user(parts: Vec<Part>) -> Message {
        Message {
            role: Role::User,
            content: parts,
        }
    }

    #[test]
    fn a_complete_history_is_left_alone() {
        let history = vec![
            Message::user_text("hi"),
            assistant(vec![call("a"), call("b")]),
            user(vec![result("a"), result("b")]),
            Message::assistant_text("done"),
        ];
        assert_eq!(repair_history(history.clone()), history);
    }

    #[test]
    fn calls_without_results_get_interrupted_results() {
        // Crash after the reply was stored: no result message at all, then a new question.
        let repaired = repair_history(vec![
            Message::user_text("hi"),
            assistant(vec![call("a")]),
            Message::user_text("are you there?"),
        ]);
        assert_eq!(repaired.len(), 3);
        assert!(
            matches!(&repaired[2].content[0], Part::ToolResult { call_id, is_error: true, .. } if call_id == "a")
        );
        assert_eq!(repaired[2].text(), "are you there?");

        // One of two results stored; and a trailing call with nothing after it.
        let repaired = repair_history(vec![
            assistant(vec![call("a"), call("b")]),
            user(vec![result("b")]),
            assistant(vec![call("c")]),
        ]);
        assert_eq!(repaired.len(), 4);
        let ids: Vec<&str> = repaired[1]
            .content
            .iter()
            .filter_map(|p| match p {
                Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(repaired[3].role, Role::User);
    }
}
