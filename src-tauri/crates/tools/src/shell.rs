//! The `shell` tool: run bash commands (foreground with a timeout, or background sessions),
//! look at and signal processes, and manage the sessions.
//!
//! Every command runs as `bash --noprofile --norc -c <command>` in its own process group with
//! stdin from /dev/null (background sessions get a pipe instead), stdout and stderr captured
//! together in order, and an allowlisted environment ([`env`]). Timeouts, cancellation and a
//! dropped call stop the whole process group, so nothing a command started outlives it by
//! accident; long-running work is meant for `background: true`.

pub(crate) mod dirs;
pub(crate) mod env;
#[cfg(unix)]
pub(crate) mod exec;
mod input;
#[cfg(unix)]
mod job;
// Only the Unix job machinery uses it for now.
#[cfg_attr(not(unix), allow(dead_code))]
mod output;
mod process;
#[cfg_attr(not(unix), allow(dead_code))]
mod sandbox;
#[cfg(unix)]
mod sessions;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_types::ToolResult;
use serde_json::json;

pub use env::{child_env, is_denied};
pub use sandbox::{DEFAULT_HOME_CACHES, ShellSandbox};

use crate::call::{ApprovalNeed, Call, CallFacts};
use crate::domain::{Domain, FieldType};
use crate::security::shell_syntax::analyze;
use crate::security::workspace;
use crate::tool::{DomainTool, ToolContext};
use input::ShellCall;

/// How the shell tool behaves.
#[derive(Clone, Debug)]
pub struct ShellConfig {
    /// Foreground commands are stopped after this long unless the call says otherwise.
    pub default_timeout: Duration,
    /// Foreground commands still running after this long return what they printed and go on as
    /// a session, unless the call's `yield_ms` says otherwise (0: wait to the end).
    pub default_yield: Duration,
    /// Bytes of output a result shows; beyond it the head and tail are kept.
    pub output_cap: usize,
    /// Environment variable names passed to commands on top of the built-in allowlist (exact
    /// names, or prefixes ending in `*`). Dangerous names are dropped even when listed.
    pub extra_env: Vec<String>,
    /// Where commands run when the call gives no `cwd` (default: Osprey's working directory).
    pub default_cwd: Option<PathBuf>,
    /// The environment children are built from; `None` reads the process environment at each
    /// spawn. Tests inject one here instead of mutating the process environment.
    pub parent_env: Option<Vec<(OsString, OsString)>>,
    /// Output a session keeps (the latest bytes); older output is dropped and counted.
    pub session_buffer: usize,
    /// Finished sessions are forgotten this long after they end.
    pub session_ttl: Duration,
    /// Background sessions that may run at once.
    pub max_sessions: usize,
    /// Between SIGTERM and SIGKILL when stopping a process group.
    pub kill_grace: Duration,
    /// The kernel sandbox every command runs in.
    pub sandbox: ShellSandbox,
}

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            default_timeout: Duration::from_secs(120),
            default_yield: Duration::from_secs(10),
            output_cap: 50 * 1024,
            extra_env: Vec::new(),
            default_cwd: None,
            parent_env: None,
            session_buffer: 1024 * 1024,
            session_ttl: Duration::from_secs(30 * 60),
            max_sessions: 32,
            kill_grace: Duration::from_secs(2),
            sandbox: ShellSandbox::default(),
        }
    }
}

/// The `shell` domain tool.
pub struct ShellTool {
    config: ShellConfig,
    domain: Domain,
    #[cfg(unix)]
    sessions: sessions::Sessions,
    /// What the kernel offers commands here, probed on first use.
    #[cfg(unix)]
    sandbox: std::sync::OnceLock<sandbox::Availability>,
    /// Commands' private temp dir (their `TMPDIR`), made on first use, removed with the tool.
    #[cfg(unix)]
    tmp: std::sync::OnceLock<Result<tempfile::TempDir, String>>,
}

impl ShellTool {
    pub fn new(config: ShellConfig) -> Self {
        ShellTool {
            domain: shell_domain(&config),
            #[cfg(unix)]
            sessions: sessions::Sessions::new(config.session_ttl),
            #[cfg(unix)]
            sandbox: std::sync::OnceLock::new(),
            #[cfg(unix)]
            tmp: std::sync::OnceLock::new(),
            config,
        }
    }

    /// Why every command needs a person's answer on this machine (no sandbox to keep it in),
    /// if it does.
    #[cfg(unix)]
    fn sandbox_lacking(&self) -> Option<String> {
        if !self.config.sandbox.enabled {
            return None;
        }
        sandbox::availability(&self.config.sandbox, &self.sandbox).lacking()
    }

    /// The private temp dir commands get as `TMPDIR`.
    #[cfg(unix)]
    fn tmp_dir(&self) -> Result<PathBuf, String> {
        self.tmp
            .get_or_init(|| {
                tempfile::Builder::new()
                    .prefix("osprey-shell-")
                    .tempdir()
                    .map_err(|e| format!("cannot make the commands' temp dir: {e}"))
            })
            .as_ref()
            .map(|dir| dir.path().to_path_buf())
            .map_err(Clone::clone)
    }

    pub fn config(&self) -> &ShellConfig {
        &self.config
    }

    fn parent_env(&self) -> Vec<(OsString, OsString)> {
        match &self.config.parent_env {
            Some(vars) => vars.clone(),
            None => std::env::vars_os().collect(),
        }
    }

    /// The home directory children see, for `~` in `cwd`.
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn home(&self) -> Option<PathBuf> {
        self.parent_env()
            .into_iter()
            .find(|(name, _)| name == "HOME")
            .map(|(_, value)| PathBuf::from(value))
    }

    /// The facts of a command that runs in the sandbox (a shell line, or the `exec` tool's
    /// argv), judged on its `analysis` from `facts.cwd`: every command needs a person's answer
    /// on a machine without the sandbox, and what it reads outside the workspace folders is
    /// asked under the default policy, as the file tool's reads are (no safe bin covers it).
    pub(crate) fn sandboxed_facts(
        &self,
        facts: &mut CallFacts,
        analysis: crate::security::shell_syntax::CommandAnalysis,
    ) {
        #[cfg(unix)]
        if let Some(why) = self.sandbox_lacking() {
            facts.ask_every_time = Some(format!("no sandbox can hold it on this machine: {why}"));
        }
        facts.needs_approval = facts.cwd.as_deref().and_then(|start| {
            let home = self.home();
            let folders = workspace::folders(
                &self.config.sandbox.workspaces,
                &dirs::start_dir(self, None).unwrap_or_else(|| start.to_path_buf()),
                home.as_deref(),
            );
            let outside =
                workspace::first_read_outside(&analysis, start, home.as_deref(), &folders)?;
            Some(format!(
                "it reads {}, outside the workspace folders",
                outside.display()
            ))
        });
        // Parsed once: the registry judges the call on this analysis.
        facts.analysis = Some(analysis);
    }

    async fn dispatch(&self, ctx: &ToolContext, call: Call) -> ToolResult {
        let call = match ShellCall::parse(&call) {
            Ok(call) => call,
            Err(refusal) => return refusal,
        };
        #[cfg(unix)]
        let cap = self.config.output_cap;
        match call {
            ShellCall::ProcessList(list) => process::list(&list).await,
            ShellCall::ProcessInfo(target) => process::info(target.pid).await,
            ShellCall::ProcessKill(kill) => process::kill(kill.pid, &kill.signal).await,
            #[cfg(unix)]
            ShellCall::Exec(exec) => exec::exec(self, ctx, &exec).await,
            #[cfg(unix)]
            ShellCall::SessionList => self.sessions.list(),
            #[cfg(unix)]
            ShellCall::SessionPoll(poll) => {
                self.sessions
                    .poll(&poll.session_id, poll.yield_ms, cap)
                    .await
            }
            #[cfg(unix)]
            ShellCall::SessionLog(log) => {
                self.sessions
                    .log(&log.session_id, log.offset, log.limit, cap)
            }
            #[cfg(unix)]
            ShellCall::SessionWrite(write) => {
                self.sessions
                    .write(&write.session_id, &write.input, write.eof)
                    .await
            }
            #[cfg(unix)]
            ShellCall::SessionKill(session) => self.sessions.kill(&session.session_id).await,
            #[cfg(not(unix))]
            _ => {
                let _ = ctx;
                ToolResult::error(
                    osprey_types::ErrorCode::ToolFailed,
                    "running commands is not supported on this platform yet",
                )
            }
        }
    }
}

impl DomainTool for ShellTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        let mut facts = CallFacts {
            approval: self.domain.approval_of(call),
            ..Default::default()
        };
        facts.summary = match ShellCall::parse(call) {
            Ok(ShellCall::Exec(exec)) => {
                facts.command = Some(exec.command.clone());
                // Relative paths in the command are judged from where it will start.
                facts.cwd = dirs::start_dir(self, exec.cwd.as_deref());
                if !exec.sandbox {
                    let reason = exec
                        .reason
                        .as_deref()
                        .filter(|r| !r.trim().is_empty())
                        .unwrap_or("no reason given");
                    facts.ask_every_time = Some(format!(
                        "it runs outside Osprey's sandbox, with full access to files ({reason})"
                    ));
                    format!("[outside the sandbox] {}", exec.command)
                } else {
                    self.sandboxed_facts(&mut facts, analyze(&exec.command));
                    exec.command
                }
            }
            Ok(ShellCall::ProcessKill(kill)) => {
                let name = i32::try_from(kill.pid)
                    .ok()
                    .filter(|p| *p > 1)
                    .and_then(process::name_of)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                format!(
                    "kill process {}{name} with SIG{}",
                    kill.pid,
                    kill.signal.to_ascii_uppercase()
                )
            }
            Ok(ShellCall::ProcessInfo(target)) => format!("show process {}", target.pid),
            Ok(ShellCall::ProcessList(_)) => "list processes".to_string(),
            Ok(ShellCall::SessionWrite(write)) => {
                let shown: String = write.input.chars().take(80).collect();
                format!("write to session {}'s stdin: {shown:?}", write.session_id)
            }
            Ok(ShellCall::SessionKill(session)) => format!("stop session {}", session.session_id),
            Ok(ShellCall::SessionList) => "list shell sessions".to_string(),
            Ok(ShellCall::SessionPoll(poll)) => format!("poll session {}", poll.session_id),
            Ok(ShellCall::SessionLog(log)) => format!("log session {}", log.session_id),
            Err(_) => format!("shell {} {}", call.resource(), call.action()),
        };
        facts
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.dispatch(ctx, call))
    }
}

fn shell_domain(config: &ShellConfig) -> Domain {
    use ApprovalNeed::{None as Free, Required};
    let session_actions = [
        "session.poll",
        "session.log",
        "session.write",
        "session.kill",
    ];
    Domain::new(
        "shell",
        "Run bash commands and manage processes. Foreground commands return their output and \
         exit code; use background: true for servers and watchers, then poll the session. \
         Commands run in a kernel sandbox, in their own process group with a minimal \
         environment; stdin is empty unless the command runs in the background.",
    )
    .resource(
        "bash",
        &["sh", "command", "terminal"],
        &[(
            "exec",
            "Run a bash command (foreground, or background as a session)",
            Required,
        )],
    )
    .resource(
        "process",
        &["processes", "ps"],
        &[
            ("list", "List processes (pid, ppid, name, command line)", Free),
            ("kill", "Send TERM/KILL/INT/HUP to one process", Required),
            ("info", "Details of one process, with its open files", Free),
        ],
    )
    .resource(
        "session",
        &["sessions", "background", "job"],
        &[
            ("list", "List background sessions", Free),
            ("poll", "New output since the last poll, and status", Free),
            ("log", "The session's whole retained output, by lines", Free),
            ("write", "Write `input` to the session's stdin", Required),
            ("kill", "Stop the session and everything it started", Required),
        ],
    )
    .field("command", FieldType::String, "exec: the bash command to run")
    .required_for(&["exec"])
    .field_alias(&["cmd", "script"])
    .field(
        "timeout",
        FieldType::Integer,
        &format!(
            "exec: seconds before a foreground command and everything it started are stopped (default {})",
            config.default_timeout.as_secs()
        ),
    )
    .field(
        "cwd",
        FieldType::String,
        "exec: directory to run in (absolute, ~/..., or relative to the default)",
    )
    .field(
        "background",
        FieldType::Boolean,
        "exec: run as a background session and return at once with its id",
    )
    .default_value(json!(false))
    .field(
        "sandbox",
        FieldType::Boolean,
        "exec: commands run in a kernel sandbox (writes only in the workspace, its temp dir and \
         tool caches; no credential stores). false runs this one outside it: the person is \
         asked every time, so give `reason`",
    )
    .default_value(json!(true))
    .field(
        "reason",
        FieldType::String,
        "exec with sandbox: false: why the command needs to run outside the sandbox",
    )
    .field(
        "yield_ms",
        FieldType::Integer,
        "exec: if still running after this many ms (default 10000; 0 waits to the end), return \
         what it printed and keep it running as a session; poll: wait up to this long for new \
         output",
    )
    .field(
        "session_id",
        FieldType::String,
        "session poll/log/write/kill: the session (from exec or session list)",
    )
    .required_for(&session_actions)
    .field(
        "input",
        FieldType::String,
        "session write: text for the session's stdin (include \\n to end a line)",
    )
    .required_for(&["session.write"])
    .field(
        "eof",
        FieldType::Boolean,
        "session write: close stdin after writing",
    )
    .default_value(json!(false))
    .field(
        "offset",
        FieldType::Integer,
        "session log: first line, 1-based (default 1)",
    )
    .field(
        "limit",
        FieldType::Integer,
        "session log: lines (default 2000); process list: rows (default 300)",
    )
    .field(
        "pid",
        FieldType::Integer,
        "process kill/info: the process id",
    )
    .required_for(&["process.kill", "process.info"])
    .field(
        "signal",
        FieldType::String,
        "process kill: the signal (default TERM)",
    )
    .one_of(&["TERM", "KILL", "INT", "HUP"])
    .default_value(json!("TERM"))
    .field(
        "filter",
        FieldType::String,
        "process list: only processes whose name or command line contains this",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &ShellTool, input: serde_json::Value) -> Call {
        tool.domain().resolve(input).unwrap()
    }

    #[test]
    fn resources_are_inferred_from_fields() {
        let tool = ShellTool::new(ShellConfig::default());
        assert_eq!(
            call(&tool, json!({"action": "kill", "pid": 42})).resource(),
            "process"
        );
        assert_eq!(
            call(&tool, json!({"action": "kill", "session_id": "sh-1"})).resource(),
            "session"
        );
        assert_eq!(
            call(&tool, json!({"action": "exec", "command": "ls"})).resource(),
            "bash"
        );
    }

    #[test]
    fn facts_carry_the_command_and_the_approval_need() {
        let tool = ShellTool::new(ShellConfig::default());
        let facts = tool.facts(&call(
            &tool,
            json!({"action": "exec", "command": "git status && ls"}),
        ));
        assert_eq!(facts.command.as_deref(), Some("git status && ls"));
        assert_eq!(facts.summary, "git status && ls");
        assert_eq!(facts.approval, ApprovalNeed::Required);
        let facts = tool.facts(&call(
            &tool,
            json!({"resource": "process", "action": "list"}),
        ));
        assert_eq!(facts.approval, ApprovalNeed::None);
        assert!(facts.command.is_none());
        let facts = tool.facts(&call(
            &tool,
            json!({"action": "write", "session_id": "sh-2", "input": "y\n"}),
        ));
        assert_eq!(facts.approval, ApprovalNeed::Required);
        assert_eq!(facts.summary, "write to session sh-2's stdin: \"y\\n\"");
    }
}
