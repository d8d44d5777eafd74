//! The crate's one error type. Each variant maps to a stable [`ErrorCode`]; messages are written
//! for the model that reads them: what went wrong and what to do next.

use std::future::Future;
use std::time::Duration;

use osprey_types::{ErrorCode, ToolResult};

/// Everything that can go wrong in a platform capability.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The feature does not exist on this operating system (or this desktop, e.g. Wayland).
    #[error("{what} is not supported on {platform}")]
    PlatformNotSupported {
        what: &'static str,
        platform: &'static str,
    },
    /// The service behind the feature is not running or not reachable.
    #[error("{service} is not available: {reason}")]
    ServiceUnavailable { service: String, reason: String },
    /// The operating system refused; `steps` says how the person can allow it.
    #[error("{what} was refused by the system. To allow it: {steps}")]
    PermissionDenied { what: String, steps: String },
    /// The feature needs setup first.
    #[error("{0}")]
    NotConfigured(String),
    /// The request itself is wrong (unknown window, bad field value, ...).
    #[error("{0}")]
    InvalidInput(String),
    /// A step ran past its deadline.
    #[error("{what} did not finish within {after:?}")]
    Timeout { what: String, after: Duration },
    /// The operation ran and failed.
    #[error("{0}")]
    Failed(String),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::PlatformNotSupported { .. } => ErrorCode::PlatformNotSupported,
            Error::ServiceUnavailable { .. } => ErrorCode::ServiceUnavailable,
            Error::PermissionDenied { .. } => ErrorCode::PermissionDenied,
            Error::NotConfigured(_) => ErrorCode::NotConfigured,
            Error::InvalidInput(_) => ErrorCode::InvalidInput,
            Error::Timeout { .. } => ErrorCode::Timeout,
            Error::Failed(_) => ErrorCode::ToolFailed,
        }
    }

    /// A service that is not there, with why.
    pub fn unavailable(service: impl Into<String>, reason: impl ToString) -> Error {
        Error::ServiceUnavailable {
            service: service.into(),
            reason: reason.to_string(),
        }
    }

    /// The feature on a platform that has no backend for it.
    pub fn unsupported(what: &'static str) -> Error {
        Error::PlatformNotSupported {
            what,
            platform: std::env::consts::OS,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Error {
        Error::InvalidInput(message.into())
    }

    pub fn into_result(self) -> ToolResult {
        ToolResult::error(self.code(), self.to_string())
    }
}

/// Runs `work` with a deadline: past it, [`Error::Timeout`] naming `what` (`connecting to
/// imap.example.com:993`), so every step that waits on another program says what it waited for.
pub(crate) async fn within<T>(
    what: impl Into<String>,
    after: Duration,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    tokio::time::timeout(after, work).await.unwrap_or_else(|_| {
        Err(Error::Timeout {
            what: what.into(),
            after,
        })
    })
}
