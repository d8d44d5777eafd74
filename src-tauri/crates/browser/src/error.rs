//! The crate's one error type. Each variant maps to a stable [`ErrorCode`] for tool results.

use osprey_types::{ErrorCode, ToolResult};

#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No Chromium-family browser was found; the message names what to install.
    #[error("{0}")]
    NotInstalled(String),
    /// The browser could not be started or reached.
    #[error("the browser could not be started: {0}")]
    Launch(String),
    /// The DevTools protocol or the profile's own channel failed.
    #[error("the browser did not answer as expected: {0}")]
    Protocol(String),
    /// The page script reported a problem (no such ref, hidden element, ...).
    #[error("{0}")]
    Page(String),
    /// The input does not make sense (bad URL form, unknown profile, missing target).
    #[error("{0}")]
    Invalid(String),
    /// The navigation policy refused a URL.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Timeout(String),
    /// The profile cannot do this (the native profile outside the desktop app).
    #[error("{0}")]
    Unsupported(String),
    /// The person has taken the profile over and did not hand it back in time.
    #[error("{0}")]
    PersonInControl(String),
}

impl BrowserError {
    pub fn code(&self) -> ErrorCode {
        match self {
            BrowserError::Invalid(_) => ErrorCode::InvalidInput,
            BrowserError::Refused(_) => ErrorCode::SsrfBlocked,
            BrowserError::Timeout(_) => ErrorCode::Timeout,
            BrowserError::PersonInControl(_) => ErrorCode::Paused,
            _ => ErrorCode::ToolFailed,
        }
    }

    pub fn into_result(self) -> ToolResult {
        ToolResult::error(self.code(), self.to_string())
    }
}

pub type Result<T, E = BrowserError> = std::result::Result<T, E>;
