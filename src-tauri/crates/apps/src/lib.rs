//! The app platform: manifests (parse and validate, the permission taxonomy), `.napp` packing and
//! hostile-archive-safe extraction, ed25519 signing and verification, binary validation; later the
//! sandboxed sidecar launch, the supervisor and watcher, the hook dispatcher, install/update, the
//! store client and the `app` tool. It must not depend on the agent crate or on Tauri; it reaches
//! the registry only through `osprey-tools`' traits. The runtime is Unix-only for now (Unix
//! sockets, process groups); Windows needs a named-pipe transport first.
//!
//! Every refusal is an [`Error`] with a stable [`Error::code`] (`package_rejected`,
//! `manifest_invalid`, `signature_invalid`, `binary_invalid`, ...) and, where it applies, a stable
//! reason code next to a message for people.

pub mod binary;
#[cfg(unix)]
pub mod capabilities;
#[cfg(unix)]
pub mod channel;
#[cfg(unix)]
pub mod comm;
pub mod gateway;
pub mod hooks;
pub mod install;
pub mod layout;
/// The `app` tool the agent uses to list, launch, install and configure apps.
#[cfg(unix)]
pub mod manage_tool;
pub mod manifest;
pub mod napp;
/// App accounts: the OAuth authorization code grant with PKCE, and refreshing.
pub mod oauth;
pub mod permissions;
/// The tools that installed apps provide, registered in the registry as they come and go.
pub mod provided_tools;
#[cfg(unix)]
pub mod runtime;
/// The kernel sandbox apps run in (shared with shell commands).
pub use osprey_sandbox as sandbox;
pub mod settings;
pub mod signing;
pub mod skill_package;
pub mod store_client;
pub mod store_events;
#[cfg(unix)]
pub mod supervisor;
pub mod trust;
pub mod ui;
#[cfg(unix)]
pub mod watcher;

use std::path::PathBuf;

pub use binary::{BinaryFormat, BinaryProblem, validate_binary};
pub use install::{InstallOutcome, InstalledApp, Installer};
pub use manifest::{Capability, Manifest};
pub use napp::{Limits, Rejection, StagedPackage};
pub use signing::{ArchiveSignature, KeyPair, PublicKey, SignatureFailure, Signatures};

/// Everything the app platform refuses or fails at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `.napp` archive was refused; nothing of it was kept.
    #[error("package_rejected ({}): {reason}", reason.code())]
    PackageRejected { reason: Rejection },
    /// `manifest.json` is not valid: which field, and why.
    #[error("manifest_invalid: {field}: {reason}")]
    ManifestInvalid { field: String, reason: String },
    /// The signatures do not check out.
    #[error("signature_invalid ({}): {reason}", reason.code())]
    SignatureInvalid { reason: SignatureFailure },
    /// An app binary that must not be run.
    #[error("binary_invalid ({}): {}: {problem}", problem.code(), path.display())]
    BinaryInvalid {
        path: PathBuf,
        problem: BinaryProblem,
    },
    /// An app could not be launched or is not healthy; `reason` is stable (`spawn`, `exited`,
    /// `startup_timeout`, `peer_mismatch`, `unhealthy`, `socket_path_occupied`, ...).
    #[error("launch_failed ({reason}): {id}: {message}")]
    LaunchFailed {
        id: String,
        reason: &'static str,
        message: String,
    },
    /// A key file that cannot be used.
    /// A sideloaded project's build step (the manifest's `build`) failed.
    #[error("build_failed: {id}: {message}")]
    BuildFailed { id: String, message: String },

    #[error("key_invalid: {0}")]
    KeyInvalid(String),
    /// An app with this id is already installed (or something else occupies its directory).
    #[error("already_installed: {0}")]
    AlreadyInstalled(String),
    /// The store revoked this app.
    #[error("revoked: {id}: {reason}")]
    Revoked { id: String, reason: String },
    /// The revocation list cannot be fetched and the cached one is too old: store apps are not
    /// launched (fail closed).
    #[error("revocation_unavailable: {0}")]
    RevocationUnavailable(String),
    /// The store could not be reached or answered wrongly.
    #[error("store_unavailable: {0}")]
    StoreUnavailable(String),
    /// The store answered a request with an error of its own (`unauthorized`, `version_exists`,
    /// `package_rejected`, ...).
    #[error("store_refused: {code}: {message}")]
    StoreRefused { code: String, message: String },
    /// The app (or Osprey) refused the settings; the message is for the person.
    #[error("settings_rejected: {0}")]
    SettingsRejected(String),
    /// No app with this id is installed.
    #[error("not_installed: {0}")]
    NotInstalled(String),
    /// There is no staged update to approve or reject.
    #[error("no_pending_update: {0}")]
    NoPendingUpdate(String),
    /// A comm or channel app could not send (not running, no permission, the app refused).
    #[error("send_failed: {0}")]
    SendFailed(String),
    /// A comm app answered a topic or lifecycle call (subscribe, register, ...) with
    /// UNIMPLEMENTED: it bridges messages but not agent-to-agent topics.
    #[error(
        "topics_unsupported: the comm app `{0}` does not support topics (this bridge does not support topics); plain messages still work"
    )]
    TopicsUnsupported(String),
    /// Connecting or refreshing an app's account failed; `reason` is stable
    /// (`endpoint_refused`, `browser`, `timeout`, `state_mismatch`, `denied`, `no_code`,
    /// `invalid_grant`, `token_refused`, `unreachable`, `listener`, `no_oauth`).
    #[error("oauth_failed ({reason}): {message}")]
    OAuth {
        reason: &'static str,
        message: String,
    },
    /// The file system failed under us.
    #[error("io: {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The stable code the UI and scripts branch on.
    pub fn code(&self) -> &'static str {
        match self {
            Error::PackageRejected { .. } => "package_rejected",
            Error::ManifestInvalid { .. } => "manifest_invalid",
            Error::SignatureInvalid { .. } => "signature_invalid",
            Error::BinaryInvalid { .. } => "binary_invalid",
            Error::LaunchFailed { .. } => "launch_failed",
            Error::BuildFailed { .. } => "build_failed",
            Error::KeyInvalid(_) => "key_invalid",
            Error::AlreadyInstalled(_) => "already_installed",
            Error::NotInstalled(_) => "not_installed",
            Error::SettingsRejected(_) => "settings_rejected",
            Error::Revoked { .. } => "revoked",
            Error::RevocationUnavailable(_) => "revocation_unavailable",
            Error::StoreUnavailable(_) => "store_unavailable",
            Error::StoreRefused { .. } => "store_refused",
            Error::NoPendingUpdate(_) => "no_pending_update",
            Error::SendFailed(_) => "send_failed",
            Error::TopicsUnsupported(_) => "topics_unsupported",
            Error::OAuth { .. } => "oauth_failed",
            Error::Io { .. } => "io",
        }
    }

    /// The stable reason within the code, where there is one.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            Error::PackageRejected { reason } => Some(reason.code()),
            Error::SignatureInvalid { reason } => Some(reason.code()),
            Error::BinaryInvalid { problem, .. } => Some(problem.code()),
            Error::LaunchFailed { reason, .. } => Some(reason),
            Error::OAuth { reason, .. } => Some(reason),
            _ => None,
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn rejected(reason: Rejection) -> Error {
        Error::PackageRejected { reason }
    }

    pub(crate) fn manifest(field: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::ManifestInvalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
