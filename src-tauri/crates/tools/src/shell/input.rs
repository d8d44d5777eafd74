//! A `shell` call's input, parsed once (serde) into one variant per resource and action after
//! the domain table has validated it: each pair is spelled here and nowhere else, and the
//! actions read typed fields instead of looking names up in JSON.

use osprey_types::{ErrorCode, ToolResult};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::call::Call;

/// One shell call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ShellCall {
    Exec(Exec),
    ProcessList(ProcessList),
    ProcessInfo(Pid),
    ProcessKill(Kill),
    SessionList,
    SessionPoll(Poll),
    SessionLog(Log),
    SessionWrite(Write),
    SessionKill(SessionId),
}

/// `bash exec`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Exec {
    pub command: String,
    #[serde(default)]
    pub background: bool,
    /// Seconds; 0 or none means the default.
    pub timeout: Option<u64>,
    /// Milliseconds; 0 waits to the end.
    pub yield_ms: Option<u64>,
    pub cwd: Option<String>,
    /// `false` runs outside the kernel sandbox (asked every time).
    #[serde(default = "yes")]
    pub sandbox: bool,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct ProcessList {
    pub filter: Option<String>,
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Pid {
    pub pid: i64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Kill {
    pub pid: i64,
    #[serde(default = "term")]
    pub signal: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct SessionId {
    pub session_id: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Poll {
    pub session_id: String,
    pub yield_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Log {
    pub session_id: String,
    pub offset: Option<u64>,
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Write {
    pub session_id: String,
    #[serde(default)]
    pub input: String,
    #[serde(default)]
    pub eof: bool,
}

fn yes() -> bool {
    true
}

fn term() -> String {
    "TERM".to_string()
}

impl ShellCall {
    /// The call's typed form; an input the table let through but that does not fit (a missing
    /// field, a wrong type) is `invalid_input` with serde's words.
    pub(crate) fn parse(call: &Call) -> Result<ShellCall, ToolResult> {
        Ok(match (call.resource(), call.action()) {
            ("bash", "exec") => ShellCall::Exec(typed(call, "shell exec")?),
            ("process", "list") => ShellCall::ProcessList(typed(call, "process list")?),
            ("process", "info") => ShellCall::ProcessInfo(typed(call, "process info")?),
            ("process", "kill") => ShellCall::ProcessKill(typed(call, "process kill")?),
            ("session", "list") => ShellCall::SessionList,
            ("session", "poll") => ShellCall::SessionPoll(typed(call, "session poll")?),
            ("session", "log") => ShellCall::SessionLog(typed(call, "session log")?),
            ("session", "write") => ShellCall::SessionWrite(typed(call, "session write")?),
            ("session", "kill") => ShellCall::SessionKill(typed(call, "session kill")?),
            (_, action) => {
                return Err(ToolResult::error(
                    ErrorCode::InvalidInput,
                    format!(
                        "shell has no action `{action}` there; use bash exec, process \
                         list/info/kill, or session list/poll/log/write/kill"
                    ),
                ));
            }
        })
    }
}

fn typed<T: DeserializeOwned>(call: &Call, what: &str) -> Result<T, ToolResult> {
    T::deserialize(&call.input)
        .map_err(|error| ToolResult::error(ErrorCode::InvalidInput, format!("{what}: {error}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::shell::{ShellConfig, ShellTool};
    use crate::tool::DomainTool;

    fn parse(input: serde_json::Value) -> Result<ShellCall, ToolResult> {
        let tool = ShellTool::new(ShellConfig::default());
        ShellCall::parse(&tool.domain().resolve(input).unwrap())
    }

    #[test]
    fn each_pair_parses_into_its_variant_with_defaults() {
        assert_eq!(
            parse(json!({"action": "exec", "command": "ls"})).unwrap(),
            ShellCall::Exec(Exec {
                command: "ls".into(),
                background: false,
                timeout: None,
                yield_ms: None,
                cwd: None,
                sandbox: true,
                reason: None,
            })
        );
        assert_eq!(
            parse(json!({"action": "kill", "pid": 42})).unwrap(),
            ShellCall::ProcessKill(Kill {
                pid: 42,
                signal: "TERM".into()
            })
        );
        assert_eq!(
            parse(json!({"action": "write", "session_id": "sh-1", "input": "y\n"})).unwrap(),
            ShellCall::SessionWrite(Write {
                session_id: "sh-1".into(),
                input: "y\n".into(),
                eof: false
            })
        );
        assert_eq!(
            parse(json!({"resource": "session", "action": "list"})).unwrap(),
            ShellCall::SessionList
        );
    }
}
