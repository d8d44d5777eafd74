//! The `exec` tool: run one program with an explicit argv, environment, working directory,
//! timeout and standard input. Nothing is parsed by a shell: each argument reaches the program
//! exactly as given, so `;`, `|`, `$(...)` and `*` in an argument are just characters.
//!
//! It is the shell tool's machinery with an argv in place of `bash -c` (see
//! [`crate::shell`]): the same kernel sandbox, sanitised environment, process group, timeout
//! handling and output cap. The safeguard and the policy judge the argv directly, as one simple
//! command ([`analyze_argv`]): wrappers are seen through (`sudo`, `env`, `bash -c CODE`), so
//! `exec` is no way around a rule `shell` keeps. Stricter than `shell` in one respect: an
//! argument naming a credential store or Osprey's data is refused outright, not asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_types::{ErrorCode, ToolResult};
use serde::Deserialize;
use serde_json::Value;

use crate::call::{ApprovalNeed, Call, CallFacts};
use crate::domain::{Domain, FieldType};
use crate::security::shell_syntax::analyze_argv;
use crate::shell::{ShellConfig, ShellTool, dirs, is_denied};
use crate::tool::{DomainTool, ToolContext};

/// The `exec` domain tool.
pub struct ExecTool {
    shell: ShellTool,
    domain: Domain,
}

/// One call's input, after the domain table has validated it.
#[derive(Debug, Deserialize)]
struct ExecInput {
    program: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, Value>,
    cwd: Option<String>,
    timeout_ms: Option<u64>,
    stdin: Option<String>,
}

impl ExecInput {
    fn parse(call: &Call) -> Result<ExecInput, ToolResult> {
        serde_json::from_value(Value::Object(call.input.clone()))
            .map_err(|e| ToolResult::error(ErrorCode::InvalidInput, format!("exec: {e}")))
    }

    fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.clone())
            .chain(self.args.iter().cloned())
            .collect()
    }

    /// The environment the call adds, or why it cannot have it.
    fn env(&self) -> Result<Vec<(String, String)>, ToolResult> {
        let mut out = Vec::new();
        for (name, value) in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(ToolResult::error(
                    ErrorCode::InvalidInput,
                    format!("exec env: `{name}` is not a variable name"),
                ));
            }
            if is_denied(name) {
                return Err(ToolResult::error(
                    ErrorCode::InvalidInput,
                    format!(
                        "exec env: `{name}` is never passed to programs (it makes a loader, shell \
                         or interpreter run code chosen by whoever sets it); leave it out"
                    ),
                ));
            }
            let value = match value {
                Value::String(text) => text.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => {
                    return Err(ToolResult::error(
                        ErrorCode::InvalidInput,
                        format!("exec env: `{name}` must be a string, got {other}"),
                    ));
                }
            };
            out.push((name.clone(), value));
        }
        Ok(out)
    }
}

/// Default limit on one run.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

impl ExecTool {
    /// With the shell tool's settings (the same sandbox, environment allowlist and output cap).
    pub fn new(config: ShellConfig) -> Self {
        ExecTool {
            shell: ShellTool::new(config),
            domain: exec_domain(),
        }
    }

    /// The arguments that name files, as the paths they are from `cwd`: each is checked by
    /// the safeguard as a read (credential stores and Osprey's data are refused).
    fn named_paths(&self, argv: &[String], cwd: Option<&Path>) -> Vec<PathBuf> {
        let home = self.shell.home();
        argv.iter()
            .map(|arg| match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with('-') => value,
                _ => arg.as_str(),
            })
            .filter(|arg| arg.contains('/') || *arg == "~" || arg.starts_with("~/"))
            .filter_map(|arg| {
                let path = match (arg.strip_prefix('~'), &home) {
                    (Some(rest), Some(home)) => home.join(rest.trim_start_matches('/')),
                    _ => PathBuf::from(arg),
                };
                match (path.is_absolute(), cwd) {
                    (true, _) => Some(path),
                    (false, Some(cwd)) => Some(cwd.join(path)),
                    (false, None) => None,
                }
            })
            .collect()
    }

    async fn run_call(&self, ctx: &ToolContext, call: Call) -> ToolResult {
        let input = match ExecInput::parse(&call) {
            Ok(input) => input,
            Err(result) => return result,
        };
        let env = match input.env() {
            Ok(env) => env,
            Err(result) => return result,
        };
        if input.program.trim().is_empty() {
            return ToolResult::error(ErrorCode::InvalidInput, "exec needs `program`");
        }
        let timeout = match input.timeout_ms {
            Some(0) | None => DEFAULT_TIMEOUT,
            Some(ms) => Duration::from_millis(ms),
        };
        #[cfg(unix)]
        {
            let argv = input.argv();
            crate::shell::exec::run_argv(
                &self.shell,
                ctx,
                &crate::shell::exec::ArgvRun {
                    display: display(&argv),
                    argv: &argv,
                    env: &env,
                    cwd: input.cwd.as_deref(),
                    timeout,
                    stdin: input.stdin.as_deref(),
                },
            )
            .await
        }
        #[cfg(not(unix))]
        {
            let _ = (ctx, env, timeout);
            ToolResult::error(
                ErrorCode::PlatformNotSupported,
                "running programs is not supported on this platform yet",
            )
        }
    }
}

impl DomainTool for ExecTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        let mut facts = CallFacts {
            approval: self.domain.approval_of(call),
            ..Default::default()
        };
        let Ok(input) = ExecInput::parse(call) else {
            facts.summary = "exec (invalid input)".into();
            return facts;
        };
        let argv = input.argv();
        facts.cwd = dirs::start_dir(&self.shell, input.cwd.as_deref());
        facts.read_paths = self.named_paths(&argv, facts.cwd.as_deref());
        facts.summary = match &input.stdin {
            Some(text) => {
                let shown: String = text.chars().take(60).collect();
                format!("{} <<< {shown:?}", display(&argv))
            }
            None => display(&argv),
        };
        self.shell
            .sandboxed_facts(&mut facts, analyze_argv(&argv, input.stdin.as_deref()));
        facts
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.run_call(ctx, call))
    }
}

/// The argv as a person would type it in a shell (quoted where a shell would split or expand):
/// for summaries and approval questions only, never parsed.
pub fn display(argv: &[String]) -> String {
    argv.iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn exec_domain() -> Domain {
    Domain::new(
        "exec",
        "Run one program with an explicit argument list: no shell, so arguments are passed \
         exactly as given (no quoting, globbing, pipes or variables). Runs in the same kernel \
         sandbox as shell commands, in the foreground, and returns its output and exit code.",
    )
    .resource(
        "program",
        &["process", "command"],
        &[(
            "run",
            "Run `program` with `args` and wait for it to finish",
            ApprovalNeed::Required,
        )],
    )
    .field(
        "program",
        FieldType::String,
        "The program: a name looked up on PATH, or a path",
    )
    .required_for(&["run"])
    .field_alias(&["cmd", "command", "executable"])
    .field(
        "args",
        FieldType::Array(Box::new(FieldType::String)),
        "Its arguments, each passed as is",
    )
    .field_alias(&["argv", "arguments"])
    .field(
        "env",
        FieldType::Object,
        "Environment variables to set on top of the minimal environment (string values)",
    )
    .field(
        "cwd",
        FieldType::String,
        "Directory to run in (absolute, ~/..., or relative to the default)",
    )
    .field(
        "timeout_ms",
        FieldType::Integer,
        "Milliseconds before it and everything it started are stopped (default 120000)",
    )
    .field_alias(&["timeout"])
    .field(
        "stdin",
        FieldType::String,
        "Text written to its standard input (default: none, end of file at once)",
    )
    .field_alias(&["input"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn display_quotes_only_what_a_shell_would_touch() {
        let argv: Vec<String> = ["echo", "a;b", "it's", "plain-1.0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(display(&argv), r"echo 'a;b' 'it'\''s' plain-1.0");
    }

    #[test]
    fn facts_judge_the_argv_as_one_command_and_name_its_paths() {
        let tool = ExecTool::new(ShellConfig {
            default_cwd: Some(PathBuf::from("/tmp")),
            parent_env: Some(vec![("HOME".into(), "/home/ada".into())]),
            ..ShellConfig::default()
        });
        let call = tool
            .domain()
            .resolve(json!({"program": "cat", "args": ["~/.ssh/id_rsa", "x;rm -rf /"]}))
            .unwrap();
        let facts = tool.facts(&call);
        let analysis = facts.analysis.unwrap();
        assert_eq!(analysis.commands.len(), 1, "{analysis:?}");
        assert_eq!(analysis.commands[0].program, "cat");
        assert_eq!(analysis.commands[0].args[1], "x;rm -rf /");
        assert!(
            facts
                .read_paths
                .contains(&PathBuf::from("/home/ada/.ssh/id_rsa"))
        );
        assert_eq!(facts.approval, ApprovalNeed::Required);
        // A shell given code through its argv is seen through.
        let call = tool
            .domain()
            .resolve(json!({"program": "bash", "args": ["-c", "sudo reboot"]}))
            .unwrap();
        let programs: Vec<String> = tool
            .facts(&call)
            .analysis
            .unwrap()
            .commands
            .iter()
            .map(|c| c.program.clone())
            .collect();
        assert!(programs.contains(&"reboot".to_string()), "{programs:?}");
    }
}
