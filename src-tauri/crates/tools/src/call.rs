//! Plain data about one call that the registry, the domain tables, the policy and the tools all
//! share: the resolved call, its approval need and the facts a tool states about it. It depends on
//! nothing else in this crate, so those modules can all use it without depending on each other.

use std::path::PathBuf;

use serde_json::{Map, Value};

/// One call after the registry has resolved its name and validated `resource`/`action`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Call {
    /// The resource, resolved from an alias or inferred (always set for domain tools).
    pub resource: Option<String>,
    /// The action (always set for domain tools).
    pub action: Option<String>,
    /// The whole input object, with defaults filled in. `resource` and `action` are left in it.
    pub input: Map<String, Value>,
}

impl Call {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.input.get(key).and_then(Value::as_str)
    }
    pub fn u64(&self, key: &str) -> Option<u64> {
        self.input.get(key).and_then(Value::as_u64)
    }
    pub fn bool(&self, key: &str) -> Option<bool> {
        self.input.get(key).and_then(Value::as_bool)
    }
    pub fn action(&self) -> &str {
        self.action.as_deref().unwrap_or("")
    }
    pub fn resource(&self) -> &str {
        self.resource.as_deref().unwrap_or("")
    }
}

/// Whether an action needs the approval policy at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ApprovalNeed {
    /// Read-only and harmless (reading a non-sensitive file, listing processes): allowed at every
    /// level but `deny`... and even there, since it changes nothing. Origin rules and the
    /// safeguard still apply.
    None,
    /// Changes something or reaches outside: the policy decides (allowlist, grants, ask).
    #[default]
    Required,
}

/// What a call is about, stated by the tool so the choke point can judge it without knowing the
/// tool: the approval need, a one-line summary for people, and the subjects that policy grants
/// and the safeguard match against.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallFacts {
    /// Used for tools without a domain table; for domain tools the registry takes the need the
    /// table declares for the action.
    pub approval: ApprovalNeed,
    /// One line a person can judge: the command, the path, the URL.
    pub summary: String,
    /// A shell command the call will run (checked by the safeguard's shell parser).
    pub command: Option<String>,
    /// `command` parsed, when the tool parsed it already to state its facts; the registry
    /// parses `command` itself otherwise, so a command is parsed once per call either way.
    pub analysis: Option<crate::security::shell_syntax::CommandAnalysis>,
    /// The directory the command starts in, against which its relative paths are judged;
    /// `None` is the process's working directory.
    pub cwd: Option<PathBuf>,
    /// Paths the call reads.
    pub read_paths: Vec<PathBuf>,
    /// Paths the call writes, creates or deletes.
    pub write_paths: Vec<PathBuf>,
    /// A URL the call fetches.
    pub url: Option<String>,
    /// The app the call is for.
    pub app: Option<String>,
    /// Set when only a person's answer to this very call may let it run: no level, list, safe
    /// bin, grant or earlier "always" counts (a shell command outside the kernel sandbox, or on
    /// a machine without one). Says why.
    pub ask_every_time: Option<String>,
    /// Set by a tool when this call of an action its table calls free needs approval all the
    /// same (a file read outside the workspace folders). It can only raise the need, never
    /// lower it. Says why.
    pub needs_approval: Option<String>,
}
