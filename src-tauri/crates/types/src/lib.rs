//! Plain data shared by every layer of Osprey: who made a call ([`Origin`]), what a tool call
//! returns ([`ToolResult`]), the stable codes a refusal carries ([`ErrorCode`]), and the shape of
//! approval questions and answers. Everything here is serde data with no behaviour beyond
//! formatting, plus [`skill_md`], the SKILL.md front-matter reader the skill loader and the skill
//! store share (text in, data out); this crate must not depend on any other Osprey crate, on I/O
//! or on an async runtime.

use std::fmt;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

mod audit;
mod os_accounts;
pub mod skill_md;
mod store;

pub use audit::{AuditFilter, AuditOutcome, AuditRow, GrantRow};
pub use os_accounts::{
    AccountCheck, DavAccountInput, DavAccountView, MailAccountInput, MailAccountView,
    MailServerView, OsAccountsView,
};
pub use store::{
    InstallStage, PermissionExplained, PermissionSensitivity, StoreAppDetails, StoreAppSummary,
    StoreCatalogPage, StoreCategory, StoreHome, StoreInstallState, StoreReview, StoreSkillPage,
    StoreSkillReport, StoreSkillSummary,
};

/// The longest edge, in pixels, of an image Osprey hands a model. Anthropic scales anything
/// longer down to it before Claude looks, and OpenAI (detail high) keeps less (768 px on the short
/// side): pixels beyond it cost encoding and upload and show the model nothing. With
/// [`MODEL_IMAGE_MAX_PATCHES`] it makes [`model_image_size`], the size screenshots are taken at
/// and the agent scales any other image to.
pub const MODEL_IMAGE_MAX_EDGE: u32 = 1_568;

/// Claude sees an image in 28 x 28 px patches and, on its standard tier, takes at most this many
/// of them (`ceil(w / 28) * ceil(h / 28)`); a larger image is scaled down before it looks, and
/// the points it answers are then in the scaled image, not the one sent. A 1568 x 882 screenshot
/// is 1,792 patches: kept within this, what Osprey sends is what the model sees, so a point it
/// reads off a screenshot maps back to the screen by the factor Osprey reports.
pub const MODEL_IMAGE_MAX_PATCHES: u32 = 1_568;

/// The side of one of Claude's image patches.
pub const MODEL_IMAGE_PATCH: u32 = 28;

/// How many of Claude's patches an image of this size is, a part patch counting whole: what it
/// costs in tokens when it goes as it is.
pub fn model_image_patches(width: u32, height: u32) -> u64 {
    u64::from(width.div_ceil(MODEL_IMAGE_PATCH)) * u64::from(height.div_ceil(MODEL_IMAGE_PATCH))
}

/// Whether an image of this size goes to a model as it is: within [`MODEL_IMAGE_MAX_EDGE`] and
/// [`MODEL_IMAGE_MAX_PATCHES`].
pub fn fits_model(width: u32, height: u32) -> bool {
    width.max(height) <= MODEL_IMAGE_MAX_EDGE
        && model_image_patches(width, height) <= u64::from(MODEL_IMAGE_MAX_PATCHES)
}

/// The size an image is given to a model at: itself when it [fits](fits_model), else the
/// largest size of the same aspect (to the pixel) that does. 1920 x 1080 becomes 1456 x 819.
pub fn model_image_size(width: u32, height: u32) -> (u32, u32) {
    if width == 0 || height == 0 || fits_model(width, height) {
        return (width, height);
    }
    let (long, short) = (width.max(height), width.min(height));
    let patch_area = f64::from(MODEL_IMAGE_MAX_PATCHES) * f64::from(MODEL_IMAGE_PATCH).powi(2);
    let by_area = f64::from(long) * (patch_area / (f64::from(width) * f64::from(height))).sqrt();
    // Partly filled patches count whole, so the area bound can be a little over: from there,
    // the long side steps down a pixel at a time until the size fits (a few dozen steps at
    // most; 1 x 1 always fits).
    let mut side = ((by_area + 1e-6).floor() as u32).clamp(1, MODEL_IMAGE_MAX_EDGE.min(long));
    loop {
        let other = ((f64::from(side) * f64::from(short) / f64::from(long)).round() as u32).max(1);
        let size = if width >= height {
            (side, other)
        } else {
            (other, side)
        };
        if fits_model(size.0, size.1) || side == 1 {
            return size;
        }
        side -= 1;
    }
}

/// The most bytes an image handed to a model may have: its base64 (4/3 of it, 4.93 MB) stays
/// under the 5 MiB Anthropic takes for one image.
pub const MODEL_IMAGE_MAX_BYTES: usize = 3_700_000;

/// Where a tool call came from. Travels in every call's context and decides which origin rules
/// apply (for example, `shell` is denied to `comm`, `app` and `skill` by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, TS, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The person at the keyboard, through chat or the CLI.
    User,
    /// A message that arrived over a communication channel (mail, chat bridge, ...).
    Comm,
    /// An installed app acting through the app platform.
    App,
    /// A skill's instructions.
    Skill,
    /// Osprey itself: reminders, scheduled jobs.
    System,
    /// A client of Osprey's MCP server.
    Mcp,
}

impl Origin {
    pub const ALL: [Origin; 6] = [
        Origin::User,
        Origin::Comm,
        Origin::App,
        Origin::Skill,
        Origin::System,
        Origin::Mcp,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Comm => "comm",
            Origin::App => "app",
            Origin::Skill => "skill",
            Origin::System => "system",
            Origin::Mcp => "mcp",
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Origin {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Origin::ALL
            .into_iter()
            .find(|o| o.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "unknown origin `{s}` (expected one of user, comm, app, skill, system, mcp)"
                )
            })
    }
}

/// Stable, machine-readable codes carried by refusals and errors. The UI and scripts branch on
/// these; the human message next to them may change wording at any time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The unconditional safeguard refused the call.
    SafeguardBlocked,
    /// The approval policy (level `deny`, or no way to ask) refused the call.
    PolicyDenied,
    /// A per-origin rule refused the call.
    OriginDenied,
    /// The caller's role (an agent type's tool set) does not include the tool or action.
    RoleDenied,
    /// The person (or the broker's timeout) answered no.
    ApprovalDenied,
    /// A URL or a resolved address pointed somewhere private.
    SsrfBlocked,
    /// A read or write of a credential, system or Osprey-internal path.
    SensitivePath,
    /// No tool by that name.
    UnknownTool,
    /// The input does not fit the tool's schema (unknown action, missing field, wrong type).
    InvalidInput,
    /// The call ran past its deadline.
    Timeout,
    /// The call was cancelled.
    Cancelled,
    /// A hook handled the call and returned an error.
    HookRejected,
    /// The tool ran and failed.
    ToolFailed,
    /// The operating system refused (a permission the person must grant); the message says how.
    PermissionDenied,
    /// The feature does not exist on this operating system or desktop.
    PlatformNotSupported,
    /// The feature needs setup first (an account, a setting); the message says which.
    NotConfigured,
    /// The service behind the feature is not running or not reachable (a D-Bus service, a display).
    ServiceUnavailable,
    /// Automation is paused (tray or window): the call was held and its deadline passed before
    /// the person resumed.
    Paused,
    /// The person switched the tool (or its category) off in Settings.
    ToolDisabled,
    /// The tool's per-session or per-day quota is used up; the message says when it resets.
    QuotaExceeded,
    /// The tool failed repeatedly and its circuit breaker is open; the message says when to retry.
    CircuitOpen,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::SafeguardBlocked => "safeguard_blocked",
            ErrorCode::PolicyDenied => "policy_denied",
            ErrorCode::OriginDenied => "origin_denied",
            ErrorCode::RoleDenied => "role_denied",
            ErrorCode::ApprovalDenied => "approval_denied",
            ErrorCode::SsrfBlocked => "ssrf_blocked",
            ErrorCode::SensitivePath => "sensitive_path",
            ErrorCode::UnknownTool => "unknown_tool",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::HookRejected => "hook_rejected",
            ErrorCode::ToolFailed => "tool_failed",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::PlatformNotSupported => "platform_not_supported",
            ErrorCode::NotConfigured => "not_configured",
            ErrorCode::ServiceUnavailable => "service_unavailable",
            ErrorCode::Paused => "paused",
            ErrorCode::ToolDisabled => "tool_disabled",
            ErrorCode::QuotaExceeded => "quota_exceeded",
            ErrorCode::CircuitOpen => "circuit_open",
        }
    }

    /// Whether a model can get past this error by changing its call (`false`: only a person,
    /// a setting or time can).
    pub fn recoverable(self) -> bool {
        !self.is_refusal()
            && !matches!(
                self,
                ErrorCode::Cancelled
                    | ErrorCode::PermissionDenied
                    | ErrorCode::PlatformNotSupported
                    | ErrorCode::NotConfigured
                    | ErrorCode::Paused
                    | ErrorCode::ToolDisabled
                    | ErrorCode::QuotaExceeded
                    | ErrorCode::CircuitOpen
            )
    }

    /// What a model should do after this error, in order.
    pub fn recovery(self) -> &'static [&'static str] {
        match self {
            ErrorCode::SafeguardBlocked | ErrorCode::SensitivePath => &[
                "do not retry it or reach the same thing another way",
                "tell the person what was refused and why",
            ],
            ErrorCode::PolicyDenied | ErrorCode::ApprovalDenied => &[
                "do not retry the same call",
                "take another way that needs no approval, or ask the person to allow it",
            ],
            ErrorCode::OriginDenied | ErrorCode::RoleDenied => &[
                "do not retry it: this caller may not use it",
                "use the tools you have, or hand the step to the person",
            ],
            ErrorCode::SsrfBlocked => &[
                "do not retry the address: private and local addresses are refused",
                "use a public address",
            ],
            ErrorCode::UnknownTool => &["call one of the tools you were given, by its exact name"],
            ErrorCode::InvalidInput => &[
                "read the message for the valid fields and choices",
                "call again with the input corrected",
            ],
            ErrorCode::Timeout => {
                &["retry with a longer timeout, or split the work into smaller steps"]
            }
            ErrorCode::Cancelled => &["stop: the person or the turn cancelled it"],
            ErrorCode::HookRejected => &[
                "read the message: an installed app refused the call",
                "change the call as it says, or tell the person",
            ],
            ErrorCode::ToolFailed => &[
                "read the message for the cause",
                "fix the cause (a path, an argument, a missing file) and retry once",
                "if it fails again, tell the person",
            ],
            ErrorCode::PermissionDenied => {
                &["tell the person which system permission to grant, as the message says"]
            }
            ErrorCode::PlatformNotSupported => &["do it another way: this system cannot"],
            ErrorCode::NotConfigured => &["tell the person what to set up, as the message says"],
            ErrorCode::ServiceUnavailable => &[
                "retry once in a moment",
                "if it is still unavailable, tell the person which service is down",
            ],
            ErrorCode::Paused => &["wait: the person paused automation; do not retry now"],
            ErrorCode::ToolDisabled => &[
                "do not retry it: the person switched this tool off",
                "use the tools you have, or tell the person which tool the step needs",
            ],
            ErrorCode::QuotaExceeded => &[
                "do not retry it before the quota resets (the message says when)",
                "use another way, or tell the person the quota was reached",
            ],
            ErrorCode::CircuitOpen => &[
                "do not call this tool again before the time the message gives",
                "do the step another way, or tell the person the tool keeps failing",
            ],
        }
    }

    /// True for the codes a security layer produces (as opposed to plain tool failures).
    pub fn is_refusal(self) -> bool {
        matches!(
            self,
            ErrorCode::SafeguardBlocked
                | ErrorCode::PolicyDenied
                | ErrorCode::OriginDenied
                | ErrorCode::RoleDenied
                | ErrorCode::ApprovalDenied
                | ErrorCode::SsrfBlocked
                | ErrorCode::SensitivePath
                | ErrorCode::ToolDisabled
                | ErrorCode::QuotaExceeded
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One block of a tool result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    /// Base64-encoded image bytes.
    Image {
        mime_type: String,
        data: String,
    },
}

/// What every tool call returns. Errors a model can act on are results with `is_error: true`,
/// never panics or transport failures. The registry adds, on every result that passes it, how
/// long the call took, and on every error whether the model can get past it by changing its call
/// and the steps to follow ([`ErrorCode::recovery`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct ToolResult {
    pub content: Vec<ContentBlock>,
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub code: Option<ErrorCode>,
    /// For an error: `true` when a changed call can succeed, `false` when only a person (or
    /// time) can change the outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub recoverable: Option<bool>,
    /// For an error: what to do next, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub recovery: Option<Vec<String>>,
    /// How long the call took, from the registry's first step to its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub duration_ms: Option<u64>,
}

impl ToolResult {
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentBlock::Text { text: text.into() }],
            ..Default::default()
        }
    }

    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentBlock::Text {
                text: message.into(),
            }],
            is_error: true,
            code: Some(code),
            ..Default::default()
        }
    }

    /// Fills in, for an error with a code, whether it is recoverable and the steps to follow,
    /// where the tool did not say.
    pub fn with_recovery(mut self) -> Self {
        if self.is_error {
            let code = self.code.unwrap_or(ErrorCode::ToolFailed);
            self.recoverable.get_or_insert(code.recoverable());
            self.recovery
                .get_or_insert_with(|| code.recovery().iter().map(|s| s.to_string()).collect());
        }
        self
    }

    /// The line the model reads after an error's text: its code, whether changing the call can
    /// help, and what to do next.
    pub fn recovery_note(&self) -> Option<String> {
        if !self.is_error {
            return None;
        }
        let code = self.code.unwrap_or(ErrorCode::ToolFailed);
        let recoverable = self.recoverable.unwrap_or(code.recoverable());
        let steps = match &self.recovery {
            Some(steps) => steps.join("; "),
            None => code.recovery().join("; "),
        };
        Some(format!(
            "[error {code}: {}. Next: {steps}]",
            if recoverable {
                "a changed call can succeed"
            } else {
                "changing the call will not help"
            }
        ))
    }

    /// All text blocks joined with newlines (images are skipped).
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// What the person is asked to approve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct ApprovalRequest {
    /// Unique per question, so a UI can answer the right one.
    pub id: String,
    pub tool: String,
    pub resource: Option<String>,
    pub action: Option<String>,
    pub origin: Origin,
    pub session_id: Option<String>,
    /// One line a person can judge: the command, the path, the URL...
    pub summary: String,
    /// The whole input, for a "details" view.
    pub input: serde_json::Value,
    /// Scopes the UI may offer for a lasting grant (each already fitted to this call).
    pub suggested_scopes: Vec<GrantScope>,
    /// What the tool could say about the call beyond its summary (an install from the store:
    /// the app's name, publisher, signer, version and permissions in plain words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub details: Option<Box<ApprovalDetails>>,
    /// Only this call can be answered: "always" and lasting grants do not apply to it (an
    /// install, a command outside the sandbox), so a UI offers Allow once and Deny only.
    #[serde(default)]
    pub once_only: bool,
}

/// What an approval question shows besides its one-line summary, when the tool can say more.
/// The store tool fills it for installs and uninstalls with what the desktop Store page's
/// permission prompt shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ApprovalDetails {
    /// One line: "Install the app Units 1.2.0 from the store".
    pub title: String,
    /// What it is about: `app` or `skill`.
    pub kind: String,
    /// The app's name, or the skill's.
    pub name: String,
    /// The app's id, or the skill's name.
    pub id: String,
    pub version: Option<String>,
    /// Who publishes it, as the store lists it (a skill's author).
    pub publisher: Option<String>,
    /// Who signed what would be installed: "the store at http://… (key 3f1c0a9e5b7d2c84)".
    pub signer: Option<String>,
    /// The app's permissions in plain words (none for a skill).
    pub permissions: Vec<PermissionExplained>,
    /// The files it brings (a skill's folder).
    pub files: Vec<String>,
    /// Other sentences to read before answering.
    pub notes: Vec<String>,
}

/// A lasting permission that makes matching calls skip the question.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum GrantScope {
    /// File operations under this directory (after symlinks are resolved).
    PathPrefix(String),
    /// Web requests to this host or its subdomains.
    Domain(String),
    /// Calls made by or for this app id.
    App(String),
    /// Shell commands matching this pattern: `git status` exactly, `git *` any git command.
    CommandPattern(String),
}

impl fmt::Display for GrantScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantScope::PathPrefix(p) => write!(f, "files under {p}"),
            GrantScope::Domain(d) => write!(f, "the web domain {d}"),
            GrantScope::App(a) => write!(f, "the app {a}"),
            GrantScope::CommandPattern(c) => write!(f, "commands matching `{c}`"),
        }
    }
}

/// How long a grant lasts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GrantDuration {
    /// Until the session ends.
    Session,
    /// Until this Unix time (seconds).
    Until {
        // A JSON number on the wire; seconds fit a double exactly until the year 285 million.
        #[ts(type = "number")]
        unix_seconds: i64,
    },
}

/// The answer to an [`ApprovalRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum ApprovalAnswer {
    Deny,
    /// This one call.
    Once,
    /// This exact call (same tool, action and subject) for the rest of the session.
    AlwaysThisSession,
    /// Every call the scope covers, for the duration.
    Grant {
        scope: GrantScope,
        duration: GrantDuration,
    },
}

/// What the shells show about the running core (About box, `osprey --version`, smoke tests).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CoreInfo {
    pub version: String,
    pub data_dir: String,
    /// Registered tool names, sorted.
    pub tools: Vec<String>,
}

/// An error as the UI receives it: it branches on `code`, shows `message`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct UiError {
    pub code: UiErrorCode,
    pub message: String,
}

impl UiError {
    pub fn new(code: impl Into<UiErrorCode>, message: impl Into<String>) -> UiError {
        UiError {
            code: code.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for UiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for UiError {}

/// Defines a closed list of snake_case codes with `as_str`, `ALL`, `Display` and `FromStr`.
macro_rules! codes {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
        #[serde(rename_all = "snake_case")]
        $vis enum $name { $($(#[$vmeta])* $variant,)* }

        impl $name {
            /// Every code, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(text: &str) -> Result<Self, String> {
                match text {
                    $($text => Ok($name::$variant),)*
                    other => Err(format!("`{other}` is not a {}", stringify!($name))),
                }
            }
        }
    };
}

codes! {
    /// Why a chat turn failed: one list for the desktop's `chat_turn_failed` event, the CLI's
    /// JSON output and comm replies.
    pub enum TurnFailureCode {
        /// The provider refused the key (missing, wrong or expired).
        Auth = "auth",
        RateLimited = "rate_limited",
        Overloaded = "overloaded",
        /// The conversation no longer fits the model's context.
        ContextTooLong = "context_too_long",
        /// The provider could not be reached, or the connection broke.
        Network = "network",
        Cancelled = "cancelled",
        /// Osprey's own database failed.
        Storage = "storage",
        /// No provider could be set up (no key, nothing local answering, bad settings).
        ProviderUnavailable = "provider_unavailable",
        /// The provider answered with an error or something Osprey could not read.
        ProviderError = "provider_error",
        /// The turn's task stopped unexpectedly (a bug in Osprey).
        Internal = "internal",
    }
}

codes! {
    /// Every code an error reaching the UI (or the CLI's JSON) can carry, whichever crate
    /// refused: the UI's `UiError.code` is this union, so a new code is a compile-time change on
    /// both sides.
    pub enum UiErrorCode {
        // The shell and the core.
        /// The core could not be opened at start-up; the message says why.
        CoreUnavailable = "core_unavailable",
        /// The background services did not start.
        ServicesUnavailable = "services_unavailable",
        /// Another Osprey holds the data folder.
        DataFolderInUse = "data_folder_in_use",
        /// What was asked needs the long-running Osprey (the desktop app or `osprey daemon`)
        /// that supervises the apps, and none runs on this data folder.
        NotRunning = "not_running",
        /// Osprey's own database failed.
        Storage = "storage",
        InvalidSetting = "invalid_setting",
        /// This platform does not have the feature yet.
        NotSupported = "not_supported",
        WindowFailed = "window_failed",
        UnknownApp = "unknown_app",
        NoUi = "no_ui",
        /// A failure with no more specific code; the message says what happened.
        Internal = "internal",
        // Chat.
        TurnRunning = "turn_running",
        EmptyMessage = "empty_message",
        InvalidImage = "invalid_image",
        InvalidSessionId = "invalid_session_id",
        /// No stored session has that id (deleted, or never written).
        UnknownSession = "unknown_session",
        /// A session title that is empty or too long.
        InvalidTitle = "invalid_title",
        /// A link the system browser may not be asked to open (only http, https and mailto).
        InvalidLink = "invalid_link",
        Auth = "auth",
        RateLimited = "rate_limited",
        Overloaded = "overloaded",
        ContextTooLong = "context_too_long",
        Network = "network",
        Cancelled = "cancelled",
        ProviderUnavailable = "provider_unavailable",
        ProviderError = "provider_error",
        // Approvals.
        ApprovalNotPending = "approval_not_pending",
        /// No grant with that id is in force (already revoked or expired).
        GrantNotFound = "grant_not_found",
        // Apps and the store (osprey-apps' error codes).
        PackageRejected = "package_rejected",
        ManifestInvalid = "manifest_invalid",
        SignatureInvalid = "signature_invalid",
        BinaryInvalid = "binary_invalid",
        LaunchFailed = "launch_failed",
        /// A sideloaded project's build step failed.
        BuildFailed = "build_failed",
        KeyInvalid = "key_invalid",
        AlreadyInstalled = "already_installed",
        NotInstalled = "not_installed",
        SettingsRejected = "settings_rejected",
        Revoked = "revoked",
        RevocationUnavailable = "revocation_unavailable",
        StoreUnavailable = "store_unavailable",
        StoreRefused = "store_refused",
        NoPendingUpdate = "no_pending_update",
        SendFailed = "send_failed",
        /// Connecting or refreshing an app's account (OAuth) failed; the message says why.
        OauthFailed = "oauth_failed",
        Io = "io",
    }
}

impl From<TurnFailureCode> for UiErrorCode {
    fn from(code: TurnFailureCode) -> UiErrorCode {
        match code {
            TurnFailureCode::Auth => UiErrorCode::Auth,
            TurnFailureCode::RateLimited => UiErrorCode::RateLimited,
            TurnFailureCode::Overloaded => UiErrorCode::Overloaded,
            TurnFailureCode::ContextTooLong => UiErrorCode::ContextTooLong,
            TurnFailureCode::Network => UiErrorCode::Network,
            TurnFailureCode::Cancelled => UiErrorCode::Cancelled,
            TurnFailureCode::Storage => UiErrorCode::Storage,
            TurnFailureCode::ProviderUnavailable => UiErrorCode::ProviderUnavailable,
            TurnFailureCode::ProviderError => UiErrorCode::ProviderError,
            TurnFailureCode::Internal => UiErrorCode::Internal,
        }
    }
}

/// Something the core tells its shells as it happens (the desktop forwards each one to the UI as a
/// [`UiEvent::Core`]). Tagged by `type`; the UI switches on it. New variants may be added at any
/// time, so a listener must ignore types it does not know.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CoreEvent {
    /// A turn began on this session (the person's message is stored).
    ChatTurnStarted { session_id: String },
    /// Streamed text of the model's reply.
    ChatTextDelta { session_id: String, text: String },
    /// Streamed reasoning of the model (shown collapsed).
    ChatThinkingDelta { session_id: String, text: String },
    ChatToolCallStarted {
        session_id: String,
        call_id: String,
        name: String,
        input: serde_json::Value,
    },
    ChatToolCallFinished {
        session_id: String,
        call_id: String,
        name: String,
        result: ToolResult,
    },
    /// The turn ended normally; `stop` is `end_turn`, `max_tokens`, `step_limit`, `cancelled` or
    /// the provider's own reason.
    ChatTurnFinished {
        session_id: String,
        stop: String,
        text: String,
    },
    /// The turn ended with an error; `code` is stable (`auth`, `rate_limited`, `overloaded`,
    /// `context_too_long`, `network`, `provider_error`, `provider_unavailable`, ...).
    ChatTurnFailed {
        session_id: String,
        code: TurnFailureCode,
        message: String,
    },
    /// A tool call waits for the person's answer until `deadline_ms` (Unix milliseconds), when it
    /// is denied.
    ApprovalRequested {
        request: ApprovalRequest,
        // A JSON number on the wire (milliseconds fit a double exactly).
        #[ts(type = "number")]
        deadline_ms: i64,
    },
    /// A pending approval is no longer pending.
    ApprovalResolved {
        request_id: String,
        resolution: ApprovalResolution,
    },
    /// An app's state changed (launched, failed, gave up, quarantined, update staged, ...).
    AppStateChanged { app: AppStatus },
    /// The store revoked an installed app: it was stopped and quarantined (its data and logs
    /// kept). `reason` is the store's.
    AppRevoked { app_id: String, reason: String },
    /// An app was removed without the person doing it here: they removed it on another device
    /// or on the store's web page (the store told this Osprey). `reason` says so in words.
    AppRemoved { app_id: String, reason: String },
    /// The store revoked an installed store skill: it was removed from the skill folder, so it
    /// is no longer offered to the model or loadable. `reason` is the store's.
    SkillRevoked { name: String, reason: String },
    /// An install from the store is under way (the Store page's progress bar): `received` of
    /// `total` bytes while downloading, then verifying. The install call's answer ends it.
    AppInstallProgress {
        app_id: String,
        stage: InstallStage,
        #[ts(type = "number")]
        received: u64,
        #[ts(type = "number | null")]
        total: Option<u64>,
    },
    /// A reminder's time came (or it was run by hand); its turn runs in `session_id` when set.
    /// `trigger` is `schedule`, `catch_up` (it came due while Osprey was not running) or `manual`.
    ReminderFired {
        reminder_id: String,
        title: String,
        trigger: String,
        #[ts(optional)]
        session_id: Option<String>,
    },
    /// A reminder's run ended: `outcome` is `ok`, `error` or `interrupted`.
    ReminderFinished {
        reminder_id: String,
        outcome: String,
        #[ts(optional)]
        error: Option<String>,
    },
    /// Automation was paused (no tool runs; reminder and comm turns wait) or resumed.
    AutomationPaused { paused: bool },
    /// Autonomous mode was turned on or off (`tools.autonomous`).
    AutonomousMode { on: bool },
    /// A setting changed and is in force (the settings page reloads what it shows).
    SettingChanged { key: String },
    /// An app's account was connected, refreshed, disconnected by the person, or dropped
    /// because the provider refused a refresh (`state: disconnected`, with the reason).
    AppAccountChanged { account: AppAccount },
    /// Something of a conversation's team changed: a sub-agent started, reported its status
    /// (`set_status`), ended or took a follow-up, or a task of its task graph was created,
    /// submitted, completed or rejected. `session_id` is the conversation's (the root of every
    /// sub-agent under it); the desktop reloads the team panel under that conversation.
    TeamChanged { session_id: String },
}

/// What installing an app did (the desktop's store and the CLI show `message`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AppInstallReport {
    pub app_id: String,
    pub version: String,
    pub outcome: AppInstallOutcome,
    /// The version replaced, for an update.
    #[ts(optional)]
    pub from_version: Option<String>,
    /// The permissions a staged update asks for on top of the installed ones.
    pub new_permissions: Vec<String>,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AppInstallOutcome {
    /// A new app.
    Installed,
    /// An installed app replaced in place (no new permissions; data and logs kept).
    Updated,
    /// The update asks for more permissions: staged until approved; the old version stays.
    PendingApproval,
}

/// A question waiting for the person's answer (the approval dialog lists these after a reload).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct PendingApproval {
    pub request: ApprovalRequest,
    /// Unix milliseconds when it is denied.
    #[ts(type = "number")]
    pub deadline_ms: i64,
}

/// How a pending approval ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalResolution {
    /// Someone answered.
    Answered { answer: ApprovalAnswer },
    /// Nobody answered in time: denied.
    TimedOut,
    /// The call stopped waiting (its turn was cancelled).
    Withdrawn,
}

/// Where an installed app stands, as the Apps page shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AppRunState {
    /// Installed, not running (apps not started, or stopped).
    Stopped,
    Launching,
    Running,
    /// Failed; a restart is scheduled.
    Restarting,
    /// Too many restarts: stopped, its capabilities removed.
    GaveUp,
    /// Revoked or otherwise quarantined: kept data, not launched.
    Quarantined,
    /// Store apps are refused because the revocation list cannot be fetched and the cache is too
    /// old (fail closed); `reason` says why.
    RevocationUnavailable,
    /// The launch was refused or failed for another reason; `reason` says why.
    Failed,
}

/// One installed app with its state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AppStatus {
    pub id: String,
    pub name: String,
    pub version: String,
    pub description: String,
    pub state: AppRunState,
    /// Why it is in that state (the failure, the quarantine reason, ...).
    pub reason: Option<String>,
    /// A symlink to a project directory: signatures were never checked.
    pub sideloaded: bool,
    /// The permissions the installed version holds (`network:api.example.com`, ...).
    pub permissions: Vec<String>,
    /// The permissions a staged update would add, waiting for approve or reject.
    pub pending_permissions: Option<Vec<String>>,
    /// Serves a UI (`osprey-app://<id>/`).
    pub has_ui: bool,
}

/// Where an app's account (its OAuth connection to a provider) stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AppAccountState {
    /// The person has not connected it (or disconnected it).
    NotConnected,
    /// Tokens are kept and passed to the app.
    Connected,
    /// The provider refused a refresh (the grant was revoked or expired): the person must
    /// connect again; `reason` says what the provider said.
    Disconnected,
}

/// One app's account with a provider, as the Apps page and `osprey app accounts` show it.
/// Tokens are never part of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AppAccount {
    pub app_id: String,
    pub app_name: String,
    /// The manifest's `oauth.provider` (`github`, ...).
    pub provider: String,
    /// What the app asks for (shown before connecting), or what was granted once connected.
    pub scopes: Vec<String>,
    pub state: AppAccountState,
    /// When the access token expires (Unix seconds), when connected and the provider said.
    #[ts(type = "number | null")]
    pub expires_at: Option<u64>,
    /// When the tokens were last obtained or refreshed (Unix seconds).
    #[ts(type = "number | null")]
    pub refreshed_at: Option<u64>,
    /// Why it was disconnected.
    pub reason: Option<String>,
    /// The provider's sign-in page (its host is what the person is shown before connecting).
    pub authorize_url: String,
}

/// One gRPC call between Osprey and an app, as the inspector kept it (`osprey app inspect`, the
/// Apps page's Traffic view). Credentials in it read `[redacted]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct AppExchange {
    /// Counts up per app from 1.
    #[ts(type = "number")]
    pub id: u64,
    /// `osprey.app.v1.ToolService/Execute`.
    pub method: String,
    /// When the call started (Unix milliseconds).
    #[ts(type = "number")]
    pub started_at_ms: u64,
    /// None while the call is still going.
    pub duration_ms: Option<f64>,
    /// The gRPC status name (`Ok`, `Unavailable`, ...), once the app answered one.
    pub status: Option<String>,
    /// The status's message, or why the call ended without one.
    pub message: Option<String>,
    #[ts(type = "number")]
    pub request_bytes: u64,
    #[ts(type = "number")]
    pub response_bytes: u64,
    /// Each message sent, as protobuf JSON with the proto's field names (`*_json` payloads shown
    /// as JSON); a message the inspector did not keep whole is a string saying so.
    pub request: Vec<serde_json::Value>,
    pub response: Vec<serde_json::Value>,
}

/// An app's recent gRPC traffic, oldest call first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct AppTraffic {
    pub app_id: String,
    pub exchanges: Vec<AppExchange>,
    /// How many calls the inspector keeps per app, and how many bytes of each direction.
    pub calls_kept: u32,
    pub bytes_kept: u32,
}

/// One model provider as the settings page shows it. Keys are never sent: only whether one is set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ProviderRow {
    /// `anthropic`, `openai` or `ollama`.
    pub provider: String,
    /// The stored base URL; `None`: the provider's own.
    pub base_url: Option<String>,
    /// The stored model, else the provider's default.
    pub model: String,
    /// `not_needed`, `environment` (from its variable), `stored`, `not_set`.
    pub key: String,
}

/// What chat will talk to, and what is stored (the settings page's model section).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ProviderOverview {
    /// The stored default provider, if any.
    pub default: Option<String>,
    /// A stored gateway app that chat uses instead, if any.
    pub app: Option<String>,
    pub providers: Vec<ProviderRow>,
    /// What chat resolves to now (`anthropic claude-sonnet-4-5`, `the app com.example.gw`).
    pub chat_uses: Option<String>,
    /// Why chat cannot talk to a model yet, and how to set one up.
    pub chat_problem: Option<String>,
}

/// A chat session as the session list shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ChatSessionSummary {
    pub id: String,
    pub title: Option<String>,
    /// `idle`, `running`, `cancelled`, `failed`.
    pub status: String,
    #[ts(type = "number")]
    pub updated_ms: i64,
    #[ts(type = "number")]
    pub message_count: i64,
}

/// A session found by a search of titles and message text (the session list's search box).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ChatSearchHit {
    pub session: ChatSessionSummary,
    /// A short piece of the first message that matched, the match in it; `None` when only the
    /// title matched.
    pub snippet: Option<String>,
}

/// The tokens a session used, summed from its stored messages (the conversation header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ChatUsage {
    /// Every model call's input, summed (what a provider bills).
    #[ts(type = "number")]
    pub input_tokens: i64,
    #[ts(type = "number")]
    pub output_tokens: i64,
    /// The input of the last call: how much of the context window the conversation fills.
    #[ts(type = "number | null")]
    pub context_tokens: Option<i64>,
}

/// One entry of a chat transcript, as stored history is shown (streaming builds the same entries
/// from [`CoreEvent`]s).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TranscriptItem {
    User {
        text: String,
    },
    /// An image the person attached to their message, as a `data:` URL.
    UserImage {
        image: String,
    },
    Assistant {
        text: String,
    },
    Thinking {
        text: String,
    },
    /// A tool call and, once it finished, its result.
    ToolCall {
        call_id: String,
        name: String,
        input: serde_json::Value,
        result: Option<ToolResult>,
    },
}

/// The appearance the person chose (`ui.theme`); `system` follows the desktop's light or dark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

/// Who the agent is to the person (`persona`): its name and emoji, its vibe in a few words, a
/// personality the person wrote, and the quiet hours when it leaves them alone. It feeds the
/// identity section of every system prompt from the next turn on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
pub struct Persona {
    /// What the agent calls itself (1 to 40 characters, one line).
    pub name: String,
    /// An emoji it signs with, if any (at most 8 characters).
    pub emoji: Option<String>,
    /// Its tone in a few words ("calm and concise"; at most 120 characters).
    pub vibe: Option<String>,
    /// Instructions on character and manner, in the person's words (at most 2000 characters).
    pub personality: Option<String>,
    /// Local times when it sends no notifications of its own and keeps background work quiet.
    pub quiet_hours: Option<QuietHours>,
}

impl Default for Persona {
    fn default() -> Self {
        Persona {
            name: "Osprey".into(),
            emoji: None,
            vibe: None,
            personality: None,
            quiet_hours: None,
        }
    }
}

/// A daily stretch of local time, `"22:00"` to `"07:00"`; it may run past midnight.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct QuietHours {
    /// Start, `HH:MM` on a 24-hour clock.
    pub start: String,
    /// End, `HH:MM`; before the start means the next morning.
    pub end: String,
}

/// The approval policy as the settings page edits it (`policy`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PolicySettings {
    #[ts(type = "\"deny\" | \"allowlist\" | \"full\"")]
    pub level: String,
    #[ts(type = "\"off\" | \"on-miss\" | \"always\"")]
    pub ask: String,
    pub allowlist: Vec<String>,
    pub safe_bins: Vec<String>,
}

/// One configured MCP server and where its connection stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpServerView {
    pub name: String,
    pub enabled: bool,
    /// The program (stdio servers).
    pub command: Option<String>,
    pub args: Vec<String>,
    /// The endpoint (streamable HTTP servers).
    pub url: Option<String>,
    /// `connecting`, `connected`, `retrying`, `disabled`, `invalid`, `stopped`, or
    /// `not_started` (the background services are not running).
    pub state: String,
    /// Why it is not connected.
    pub error: Option<String>,
    /// Its tools' registry names while connected.
    pub tools: Vec<String>,
}

/// One capability of the `os` tool as Settings lists it: whether it works on this machine, and
/// what was found or why not and how to fix that.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct OsCapabilityView {
    /// The resource name (`clipboard`, `mail`).
    pub name: String,
    /// `system`, `media`, `productivity` or `desktop`.
    pub category: String,
    pub available: bool,
    pub detail: String,
}

/// One skill and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SkillView {
    pub name: String,
    pub description: String,
    /// `bundled`, `app` or `user`.
    pub source: String,
    /// The app that ships it, for `app` skills.
    pub app: Option<String>,
    pub path: String,
    pub enabled: bool,
}

/// Everything the settings page shows besides the model providers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SettingsOverview {
    pub policy: PolicySettings,
    /// For each origin (`comm`, `app`, ...), the tools, resources or actions it may not call.
    pub origin_deny: std::collections::BTreeMap<Origin, Vec<String>>,
    pub approval_timeout_seconds: u32,
    pub mcp_servers: Vec<McpServerView>,
    pub skills: Vec<SkillView>,
    pub store_url: Option<String>,
    /// `OSPREY_STORE_URL` is set and wins over the stored URL.
    pub store_url_from_environment: bool,
    pub data_dir: String,
    pub theme: Theme,
    pub persona: Persona,
    pub paused: bool,
    /// Tool governance: what is switched off, autonomous mode, denied paths, the blocklist,
    /// quotas and the circuit breaker.
    pub tools: ToolGovernanceView,
}

/// Tool governance as the settings page edits it (the `tools.*` settings).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ToolGovernanceView {
    /// Tool and category names switched off (`tools.disabled`).
    pub disabled: Vec<String>,
    /// Autonomous mode (`tools.autonomous`): what the policy would ask is allowed.
    pub autonomous: bool,
    /// Globs no tool may read or write (`tools.denied_paths`).
    pub denied_paths: Vec<String>,
    /// Commands never run: a program, or a program and its first arguments (`tools.blocklist`).
    pub blocklist: Vec<String>,
    /// By `tool`, `tool.resource` or `tool.resource.action` (`tools.quotas`).
    pub quotas: std::collections::BTreeMap<String, ToolQuotaView>,
    pub breaker: ToolBreakerView,
    /// The categories tools can be switched off by, with the registered tools in each.
    pub categories: Vec<ToolCategoryView>,
}

/// Caps on how often one tool runs; `None`: no cap.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ToolQuotaView {
    pub per_session: Option<u32>,
    pub per_day: Option<u32>,
}

/// When a tool's circuit breaker opens (`tools.breaker`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ToolBreakerView {
    /// Consecutive failures that open it (0: off).
    pub failures: u32,
    pub window_seconds: u32,
    pub cooldown_seconds: u32,
}

/// One category of tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ToolCategoryView {
    pub name: String,
    pub description: String,
    /// The registered tools in it.
    pub tools: Vec<String>,
}

/// A turn running now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RunningTurn {
    pub session_id: String,
    pub origin: Origin,
    #[ts(type = "number")]
    pub started_ms: i64,
}

/// The state of running work (the tray's status line and the window's banner).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AutomationStatus {
    pub paused: bool,
    /// Autonomous mode is on: what the policy would ask runs without a question (shown
    /// everywhere while on).
    pub autonomous: bool,
    pub turns: Vec<RunningTurn>,
    pub apps_running: u32,
    pub apps_total: u32,
}

/// A `see` snapshot of the window that had the focus (the tray's "Ask about the current
/// window"): the chat shows the image and sends the element list with the question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct WindowSnapshot {
    /// The snapshot's id: `desktop` actions take its element IDs (`B3`) while it lives.
    pub snapshot_id: String,
    pub title: Option<String>,
    pub app: Option<String>,
    /// The annotated image as a `data:` URL.
    pub image: String,
    pub width: u32,
    pub height: u32,
    /// The header line and the element list, as the `screenshot see` tool gives them.
    pub elements: String,
}

/// What the desktop shell has for its main window, in the order it happened. The page takes
/// them as the answers to its own calls (`next_ui_events`, a long poll), so nothing is evaluated
/// in the page for an event and the app process runs no JavaScript engine of its own. Tagged by
/// `kind`; a page must ignore kinds it does not know.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UiEvent {
    /// An event of the core's bus.
    Core { event: CoreEvent },
    /// The tray's "Ask about the current window": the snapshot, or why there is none.
    AskAboutWindow { ask: WindowAsk },
    /// The tray asks the window to show a page: `route` is the part after `#/` (`chat?new`,
    /// `store`).
    Navigate { route: String },
}

/// The snapshot the tray took for "Ask about the current window", or why it could not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[serde(untagged)]
pub enum WindowAsk {
    Snapshot { snapshot: WindowSnapshot },
    Error { error: UiError },
}

/// One answer of `next_ui_events`: the events after the cursor the page sent, oldest first, and
/// the cursor to send next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct UiEventBatch {
    pub events: Vec<UiEvent>,
    pub next: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_image_sizes_fit_the_edge_and_the_patches_and_keep_the_aspect() {
        // Anthropic's table of sizes it takes without scaling, and the screens people have.
        for (w, h) in [
            (1092, 1092),
            (951, 1268),
            (784, 1568),
            (1456, 816),
            (40, 30),
        ] {
            assert_eq!(model_image_size(w, h), (w, h), "{w}x{h} fits");
        }
        assert_eq!(model_image_size(1920, 1080), (1456, 819));
        assert_eq!(model_image_patches(1456, 819), 52 * 30);
        assert_eq!(model_image_patches(1568, 882), 56 * 32);
        assert_eq!(model_image_size(1568, 882), (1456, 819));
        for (w, h) in [
            (3840, 2160),
            (2560, 1600),
            (1366, 768),
            (1920, 1200),
            (3000, 1000),
            (9000, 40),
            (40, 9000),
            (5000, 5000),
            (1569, 1),
            // Over the patches only by its part patches: never scaled up.
            (1100, 1100),
        ] {
            let (fw, fh) = model_image_size(w, h);
            assert!(fits_model(fw, fh), "{w}x{h} -> {fw}x{fh}");
            // The same aspect, to the pixel of the short side.
            let (long, short, fit_long, fit_short) = if w >= h {
                (w, h, fw, fh)
            } else {
                (h, w, fh, fw)
            };
            let expected = f64::from(fit_long) * f64::from(short) / f64::from(long);
            assert!(
                (expected - f64::from(fit_short)).abs() <= 1.0,
                "{w}x{h} -> {fw}x{fh}"
            );
            // And the largest that fits: a few pixels more on each side would not.
            let grown = (fw + fw / 100 + 2, fh + fh / 100 + 2);
            assert!(
                !fits_model(grown.0.min(w), grown.1.min(h)) || (fw, fh) == (w, h),
                "{w}x{h} -> {fw}x{fh} could be larger"
            );
        }
        // 1366 x 768 is 49 x 28 = 1,372 patches: it goes as it is.
        assert_eq!(model_image_size(1366, 768), (1366, 768));
    }

    #[test]
    fn origin_round_trips_through_strings() {
        for origin in Origin::ALL {
            assert_eq!(origin.as_str().parse::<Origin>().unwrap(), origin);
            assert_eq!(
                serde_json::to_value(origin).unwrap(),
                serde_json::Value::String(origin.as_str().into())
            );
        }
        assert!("root".parse::<Origin>().is_err());
    }

    #[test]
    fn error_codes_serialize_as_their_stable_names() {
        for code in [
            ErrorCode::SafeguardBlocked,
            ErrorCode::PolicyDenied,
            ErrorCode::OriginDenied,
            ErrorCode::RoleDenied,
            ErrorCode::ApprovalDenied,
            ErrorCode::SsrfBlocked,
            ErrorCode::SensitivePath,
        ] {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
            assert!(code.is_refusal());
        }
        assert!(!ErrorCode::ToolFailed.is_refusal());
    }

    #[test]
    fn tool_result_json_has_content_is_error_and_code() {
        let r = ToolResult::error(ErrorCode::PolicyDenied, "no");
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["is_error"], true);
        assert_eq!(v["code"], "policy_denied");
        assert_eq!(v["content"][0]["type"], "text");
        assert_eq!(r.text_content(), "no");
        let ok = serde_json::to_value(ToolResult::text("hi")).unwrap();
        assert!(ok.get("code").is_none());
    }
}

/// A conversation's team, shown under it in the desktop: every sub-agent under it (however
/// deep), its branches, and the task graph its agents share.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TeamView {
    pub session_id: String,
    /// Sub-agents (workers, not branches), oldest first; a child's children follow it.
    pub agents: Vec<TeamAgent>,
    /// Branches of the conversation, oldest first.
    pub branches: Vec<TeamAgent>,
    /// The task graph, oldest first.
    pub graph: Vec<TeamGraphTask>,
}

/// One sub-agent or branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TeamAgent {
    #[ts(type = "number")]
    pub id: i64,
    /// Its own session (`<parent>/task-<id>`).
    pub session_id: String,
    pub parent_session_id: String,
    /// 1 for a child of the conversation, 2 for a grandchild, ...
    #[ts(type = "number")]
    pub depth: i64,
    /// The agent type it runs as (`researcher`, ...); `None` for an untyped child.
    #[ts(optional)]
    pub agent_type: Option<String>,
    /// What it was asked to do.
    pub prompt: String,
    #[ts(optional)]
    pub model: Option<String>,
    /// `running`, `done`, `failed`, `cancelled`, `timed_out` or `interrupted`.
    pub status: String,
    /// Its latest report of where it stands (`set_status`).
    #[ts(optional)]
    pub progress: Option<String>,
    /// Its final answer (or what it had said when stopped).
    #[ts(optional)]
    pub result: Option<String>,
    #[ts(optional)]
    pub error: Option<String>,
    /// An interactive worker that takes follow-ups now.
    pub interactive: bool,
    /// A branch whose result was delivered into the conversation (`false` while pending).
    pub delivered: bool,
    #[ts(type = "number")]
    pub started_ms: i64,
    #[ts(optional, type = "number")]
    pub finished_ms: Option<i64>,
}

/// One task of a conversation's task graph, as the database has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TeamGraphTask {
    #[ts(type = "number")]
    pub id: i64,
    pub title: String,
    #[ts(optional)]
    pub description: Option<String>,
    /// `open`, `submitted` (waiting for an orchestrator), `done` or `deferred` (rejected back).
    pub status: String,
    #[ts(type = "number[]")]
    pub depends_on: Vec<i64>,
    /// Dependencies that are not done yet: the task waits for them.
    #[ts(type = "number[]")]
    pub blocked_by: Vec<i64>,
    /// The session that created it and the one that submitted its result.
    pub created_by: String,
    #[ts(optional)]
    pub submitted_by: Option<String>,
    /// Why it was last rejected.
    #[ts(optional)]
    pub feedback: Option<String>,
    #[ts(optional)]
    pub result: Option<String>,
    #[ts(type = "number")]
    pub updated_ms: i64,
}

/// The agent types and tool packs loaded now (Settings, Agents).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AgentCatalogView {
    pub types: Vec<AgentTypeView>,
    pub packs: Vec<ToolPackView>,
    /// Packs that did not load here, with why (the trust level, tools this build lacks).
    pub unavailable_packs: Vec<UnavailablePack>,
    /// The riskiest pack this Osprey loads (`agents.trust`).
    pub trust: String,
    /// Files in `<data>/agents` and `<data>/packs` that were refused, with why.
    pub problems: Vec<String>,
}

/// A pack that did not load.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct UnavailablePack {
    pub name: String,
    pub reason: String,
}

/// An agent type: built in (read-only) or the person's own (`<data>/agents/<name>.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AgentTypeView {
    pub name: String,
    pub description: String,
    pub prompt: String,
    /// The model it runs on: the `agents.models` setting's for it, else its own, else its
    /// parent's (`None`).
    #[ts(optional)]
    pub model: Option<String>,
    /// The model its own definition names (what the editor shows).
    #[ts(optional)]
    pub own_model: Option<String>,
    /// The model comes from the `agents.models` setting.
    pub model_from_setting: bool,
    pub packs: Vec<String>,
    pub builtin: bool,
    /// Where it came from (`built-in researcher` or the file's path).
    pub source: String,
    /// Packs it names that did not load here, with why (such a type cannot run).
    pub unavailable_packs: Vec<UnavailablePack>,
}

/// A tool pack: a named set of tools with a risk profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ToolPackView {
    pub name: String,
    pub description: String,
    /// `read-only`, `standard` or `privileged`.
    pub risk: String,
    /// Its entries as written (`file.read`, `web.http`, `shell`).
    pub tools: Vec<String>,
    pub builtin: bool,
}

/// An agent type the person saves from the desktop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AgentTypeDraft {
    pub name: String,
    pub description: String,
    pub prompt: String,
    /// Empty or missing: the parent's model (or the `agents.models` setting's).
    #[ts(optional)]
    pub model: Option<String>,
    pub packs: Vec<String>,
}
