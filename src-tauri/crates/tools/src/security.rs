//! The three security layers every call passes, in the order the registry runs them: per-origin
//! rules ([`origin`]), the configurable approval policy ([`policy`]), and the unconditional
//! safeguard ([`safeguard`], with its shell parser [`shell_syntax`] and the protected-path table
//! [`paths`]), and the workspace folders reads are judged against ([`workspace`]).

pub mod origin;
pub mod paths;
pub mod policy;
pub mod safeguard;
pub mod shell_syntax;
pub mod workspace;

use osprey_types::{ErrorCode, ToolResult};

/// A refusal by a security layer: a stable code and a message saying what was refused and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Refusal {
            code,
            message: message.into(),
        }
    }

    pub fn into_result(self) -> ToolResult {
        ToolResult::error(self.code, self.message)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}
