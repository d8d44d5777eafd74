//! The agent: model providers (Anthropic, OpenAI-compatible, Ollama) behind one streaming
//! [`Provider`] trait, and the [`Runner`] that plays a turn (system prompt from sections, stream,
//! tool calls through the registry, results fed back) with every message and tool call persisted
//! through `osprey-db`. Memory, skills, the scheduler, sub-agents and MCP will live here too.
//!
//! It must not depend on the apps crate or on Tauri: core adapts an app's gateway into a
//! [`Provider`] and hands over the hook dispatcher; every tool call goes through
//! `osprey_tools::Registry::execute`, never around it.

pub mod advisors;
pub mod agent_tool;
pub mod embedding;
pub mod images;
pub mod mcp;
pub mod message;
pub mod outbox;
pub mod persona;
pub mod provider;
pub mod roles;
pub mod runner;
pub mod scheduler;
pub mod skill_tool;
pub mod skills;
pub mod subagent;
pub mod vision;

use std::time::Duration;

pub use agent_tool::AgentTool;
pub use message::{
    ChatRequest, InputImage, Message, Part, Role, StopReason, StreamEvent, ToolSpec, Usage,
};
pub use provider::anthropic::Anthropic;
pub use provider::ollama::Ollama;
pub use provider::openai::OpenAi;
pub use provider::{Assembler, EventStream, Provider, RetryPolicy, Sleeper};
pub use roles::{AgentSettings, AgentType, AgentTypeManifest, RiskProfile, RoleCatalog, ToolPack};
pub use runner::{
    AgentEvent, Consolidate, Consolidation, IdentitySection, Inbox, Runner, RunnerConfig,
    TurnOutcome, TurnRequest, TurnStop,
};
pub use scheduler::{
    ManualClock, ReminderHandler, ScheduleBackend, ScheduleSlot, Scheduler, SchedulerConfig,
    SystemClock,
};
pub use skill_tool::SkillTool;
pub use skills::Skills;
pub use subagent::{
    RolesLoader, RunnerPool, SpawnRequest, Spawned, SubAgentConfig, SubAgentFactory,
    SubAgentSettings, SubAgents, TeamObserver,
};
pub use vision::VisionTool;

/// What can go wrong talking to a model or running a turn. Provider errors are classified so the
/// runner (and the person) can tell what to do about them.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the provider rejected the credentials: {0}")]
    Auth(String),
    #[error("rate limited: {message}")]
    RateLimited {
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("the provider is overloaded: {0}")]
    Overloaded(String),
    #[error("the conversation is too long for the model's context window: {0}")]
    ContextTooLong(String),
    #[error("network error talking to the provider: {0}")]
    Network(String),
    #[error("the provider answered {status}: {message}")]
    Api { status: u16, message: String },
    #[error("the provider sent something unexpected: {0}")]
    Protocol(String),
    #[error("the provider reported an error: {0}")]
    Stream(String),
    /// The model's answer had started streaming when the provider failed: not retried (what
    /// was shown cannot be taken back); the part that arrived is kept in the session.
    #[error(
        "the model's answer broke off after it had started ({0}); the part that arrived is kept \
         in the session: send the message again to continue"
    )]
    BrokeOff(Box<Error>),
    #[error("the turn was cancelled")]
    Cancelled,
    #[error("session storage: {0}")]
    Db(#[from] osprey_db::Error),
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    InvalidSchedule(String),
    #[error("no reminder with id `{0}`: list the reminders to see their ids")]
    ReminderNotFound(String),
    #[error("{0}")]
    SchedulerStopped(String),
    /// `osprey mcp serve`'s session with its MCP client failed (nothing a model provider did).
    #[error("the MCP client {0}")]
    McpClient(String),
}

impl Error {
    /// Worth another attempt after a wait.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::RateLimited { .. } | Error::Overloaded(_) | Error::Network(_)
        )
    }

    /// Why a turn that ended with this error failed, in the one list the desktop, the CLI and
    /// comm replies share.
    pub fn turn_failure(&self) -> osprey_types::TurnFailureCode {
        use osprey_types::TurnFailureCode as Code;
        match self {
            Error::Auth(_) => Code::Auth,
            Error::RateLimited { .. } => Code::RateLimited,
            Error::Overloaded(_) => Code::Overloaded,
            Error::ContextTooLong(_) => Code::ContextTooLong,
            Error::Network(_) => Code::Network,
            Error::BrokeOff(inner) => inner.turn_failure(),
            Error::Cancelled => Code::Cancelled,
            Error::Db(_) => Code::Storage,
            Error::Config(_) => Code::ProviderUnavailable,
            _ => Code::ProviderError,
        }
    }

    /// A stable code for UIs and scripts.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Auth(_) => "auth",
            Error::RateLimited { .. } => "rate_limited",
            Error::Overloaded(_) => "overloaded",
            Error::ContextTooLong(_) => "context_too_long",
            Error::Network(_) => "network",
            Error::Api { .. } => "api",
            Error::Protocol(_) => "protocol",
            Error::Stream(_) => "stream",
            Error::BrokeOff(inner) => inner.code(),
            Error::Cancelled => "cancelled",
            Error::Db(_) => "db",
            Error::Config(_) => "config",
            Error::InvalidSchedule(_) => "invalid_schedule",
            Error::ReminderNotFound(_) => "not_found",
            Error::SchedulerStopped(_) => "scheduler_stopped",
            Error::McpClient(_) => "mcp_client",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
