//! `shell bash exec`: run a command in the foreground (with a timeout, cancellation and an
//! optional yield into a session) or in the background as a session. The `exec` tool's runs
//! ([`run_argv`]) share the spawn, the sandbox and the foreground wait, with an argv in place
//! of `bash -c`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use osprey_types::{ErrorCode, ToolResult};

use super::ShellTool;
use super::dirs::{default_dir, working_dir};
use super::env::child_env;
use super::input::Exec;
use super::job::{Job, JobGuard, Spec};
use super::sandbox::{Availability, Confined, Run, availability, confine, refusal_note};
use super::sessions::{duration_words, status_line};
use crate::tool::ToolContext;

/// Our own limit fires this long before the registry's deadline, so the person gets the
/// "timed out" result with the output so far rather than a bare deadline error.
const DEADLINE_MARGIN: Duration = Duration::from_millis(300);
/// How long to wait for a stopped job's driver to drain the last output after the grace.
const DRAIN_SLACK: Duration = Duration::from_secs(3);
/// Longest wait any field may ask for; keeps `Instant` arithmetic far from overflow.
const LONGEST: Duration = Duration::from_secs(7 * 24 * 3600);

pub(crate) async fn exec(tool: &ShellTool, ctx: &ToolContext, call: &Exec) -> ToolResult {
    let config = &tool.config;
    let command = call.command.as_str();
    if command.trim().is_empty() {
        return ToolResult::error(ErrorCode::InvalidInput, "shell exec needs `command`");
    }
    let background = call.background;
    let timeout = match call.timeout {
        Some(0) | None => config.default_timeout,
        Some(seconds) => Duration::from_secs(seconds).min(LONGEST),
    };
    // Foreground commands still running after `yield_ms` (default 10 s, `default_yield`) return what they printed
    // so far and go on as a session, so a long build never holds the turn; 0 means wait to the
    // end (within the timeout). Background runs return at once anyway.
    let yield_after = match call.yield_ms {
        Some(0) => None,
        Some(ms) => Some(Duration::from_millis(ms).min(LONGEST)),
        None if background => None,
        None => Some(config.default_yield),
    };
    let cwd = match working_dir(tool, call.cwd.as_deref()) {
        Ok(cwd) => cwd,
        Err(result) => return result,
    };
    tool.sessions.sweep();
    if background && tool.sessions.running() >= config.max_sessions {
        return ToolResult::error(
            ErrorCode::ToolFailed,
            format!(
                "{} background sessions are already running; kill one first (shell session list)",
                config.max_sessions
            ),
        );
    }

    let mut env = child_env(tool.parent_env(), &config.extra_env);
    let confined = match confinement(tool, call.sandbox, Run::Bash(command), &mut env) {
        Ok(confined) => confined,
        Err(result) => return result,
    };
    let job = match spawn(
        tool,
        command.to_string(),
        None,
        cwd,
        env,
        background,
        confined,
    ) {
        Ok(job) => job,
        Err(result) => return result,
    };

    if background {
        tool.sessions.adopt(job.clone());
        if let Some(wait) = yield_after {
            tokio::select! {
                _ = job.wait(wait) => {}
                _ = ctx.cancel.cancelled() => {}
            }
        }
        return started_session(&job, config.output_cap, true);
    }
    foreground(
        tool,
        ctx,
        &job,
        timeout,
        yield_after,
        "For long-running commands use background: true, or raise timeout.",
    )
    .await
}

/// What the `exec` tool runs: a program and its arguments, passed as they are.
pub(crate) struct ArgvRun<'a> {
    pub argv: &'a [String],
    /// Variables set on top of the sanitised environment (names a loader or shell would act
    /// on are refused before this, see [`super::env::is_denied`]).
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a str>,
    pub timeout: Duration,
    /// Text written to its standard input, which is then closed (else /dev/null).
    pub stdin: Option<&'a str>,
    /// Shown in results: the argv quoted as a shell would need it.
    pub display: String,
}

/// Runs one program with its argv in the shell tool's sandbox, environment and process group,
/// in the foreground only, and returns its output like a foreground shell command.
pub(crate) async fn run_argv(tool: &ShellTool, ctx: &ToolContext, run: &ArgvRun<'_>) -> ToolResult {
    let config = &tool.config;
    if run.argv.first().is_none_or(|p| p.is_empty()) {
        return ToolResult::error(ErrorCode::InvalidInput, "exec needs `program`");
    }
    let cwd = match working_dir(tool, run.cwd) {
        Ok(cwd) => cwd,
        Err(result) => return result,
    };
    let mut env = child_env(tool.parent_env(), &config.extra_env);
    for (name, value) in run.env {
        env.retain(|(k, _)| k != name.as_str());
        env.push((name.into(), value.into()));
    }
    let confined = match confinement(tool, true, Run::Argv(run.argv), &mut env) {
        Ok(confined) => confined,
        Err(result) => return result,
    };
    let argv = Some(run.argv.to_vec());
    let piped = run.stdin.is_some();
    let job = match spawn(tool, run.display.clone(), argv, cwd, env, piped, confined) {
        Ok(job) => job,
        Err(result) => return result,
    };
    if let Some(text) = run.stdin {
        use tokio::io::AsyncWriteExt;
        let stdin = job.stdin.lock().await.take();
        if let Some(mut stdin) = stdin {
            let text = text.to_string();
            // Written beside the wait, so a program that prints before it reads cannot
            // deadlock with us; dropping it closes the pipe.
            tokio::spawn(async move {
                let _ = stdin.write_all(text.as_bytes()).await;
                let _ = stdin.shutdown().await;
            });
        }
    }
    foreground(
        tool,
        ctx,
        &job,
        run.timeout.min(LONGEST),
        None,
        "Raise timeout_ms if it needs longer.",
    )
    .await
}

/// Starts a job with the tool's output and kill settings: `command` through bash, or `argv`
/// as it is.
fn spawn(
    tool: &ShellTool,
    command: String,
    argv: Option<Vec<String>>,
    cwd: std::path::PathBuf,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    piped_stdin: bool,
    confined: Option<Confined>,
) -> Result<Arc<Job>, ToolResult> {
    let config = &tool.config;
    let program = argv
        .as_ref()
        .and_then(|argv| argv.first().cloned())
        .unwrap_or_else(|| "bash".into());
    Job::spawn(Spec {
        id: tool.sessions.next_id(),
        command,
        argv,
        cwd,
        env,
        piped_stdin,
        head_limit: config.output_cap / 2,
        log_capacity: config.session_buffer.max(config.output_cap),
        grace: config.kill_grace,
        sandboxed: confined.is_some(),
        sandbox: confined,
    })
    .map_err(|err| {
        ToolResult::error(
            ErrorCode::ToolFailed,
            format!("could not start {program}: {err}"),
        )
    })
}

/// Waits for a foreground job: to its end, its timeout (or the call's deadline), cancellation,
/// or (shell only) `yield_after`, when it goes on as a session.
async fn foreground(
    tool: &ShellTool,
    ctx: &ToolContext,
    job: &Arc<Job>,
    timeout: Duration,
    yield_after: Option<Duration>,
    timeout_hint: &str,
) -> ToolResult {
    let config = &tool.config;
    // From here until the job ends or becomes a session, dropping this future stops it.
    let mut guard = JobGuard::new(job.clone());
    let started = Instant::now();
    let own_limit = started + timeout;
    let registry_limit = ctx
        .deadline
        .checked_sub(DEADLINE_MARGIN)
        .unwrap_or(ctx.deadline)
        .max(started);
    let (limit_at, limit_is_ours) = if own_limit <= registry_limit {
        (own_limit, true)
    } else {
        (registry_limit, false)
    };
    let far = started + LONGEST * 2;
    let yield_at = yield_after.map_or(far, |wait| started + wait);

    enum Ending {
        Done,
        TimedOut,
        Cancelled,
        Yielded,
    }
    let mut progress = job.watch();
    let ending = tokio::select! {
        _ = progress.wait_for(|p| p.exit.is_some()) => Ending::Done,
        _ = tokio::time::sleep_until(limit_at.into()) => Ending::TimedOut,
        _ = ctx.cancel.cancelled() => Ending::Cancelled,
        _ = tokio::time::sleep_until(yield_at.into()), if yield_after.is_some() => Ending::Yielded,
    };
    drop(progress);

    match ending {
        Ending::Done => {
            guard.disarm();
            finished(job, config.output_cap)
        }
        Ending::Yielded => {
            guard.disarm();
            tool.sessions.adopt(job.clone());
            started_session(job, config.output_cap, false)
        }
        Ending::TimedOut | Ending::Cancelled => {
            job.terminate();
            let exit = job.wait(config.kill_grace + DRAIN_SLACK).await;
            guard.disarm();
            let output = job
                .log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .render(config.output_cap);
            let mut text = output_block(&output);
            let stopped = match exit {
                Some(_) => "the command and every process it started were stopped",
                None => "SIGTERM and SIGKILL were sent to its process group",
            };
            if matches!(ending, Ending::Cancelled) {
                text.push_str(&format!(
                    "[cancelled after {}; {stopped}]\n",
                    duration_words(started.elapsed())
                ));
                ToolResult::error(ErrorCode::Cancelled, text)
            } else {
                let which = if limit_is_ours {
                    match timeout.subsec_millis() {
                        0 => format!("the {} s timeout", timeout.as_secs()),
                        _ => format!("the {} ms timeout", timeout.as_millis()),
                    }
                } else {
                    "the call's deadline".to_string()
                };
                text.push_str(&format!(
                    "[timed out: still running after {} ({which}); {stopped}. {timeout_hint}]\n",
                    duration_words(started.elapsed())
                ));
                ToolResult::error(ErrorCode::Timeout, text)
            }
        }
    }
}

/// The result of a foreground command that ran to the end.
fn finished(job: &Job, cap: usize) -> ToolResult {
    let output = job
        .log
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .render(cap);
    let mut text = output_block(&output);
    let exit = job.exit();
    let took = exit.map_or(Duration::ZERO, |e| {
        e.at.saturating_duration_since(job.started)
    });
    text.push_str(&format!(
        "[{} after {}]\n",
        exit.map_or("ended".to_string(), |e| e.describe()),
        duration_words(took)
    ));
    let failed = exit.is_none_or(|e| e.code != Some(0));
    if job.sandboxed
        && failed
        && let Some(note) = refusal_note(&output)
    {
        text.push_str(note);
        text.push('\n');
    }
    ToolResult::text(text)
}

/// The result for a command that is (or was just) running as a session.
fn started_session(job: &Arc<Job>, cap: usize, background: bool) -> ToolResult {
    let (output, total) = {
        let log = job.log.lock().unwrap_or_else(|e| e.into_inner());
        (log.render(cap), log.total())
    };
    // The next poll starts after what this result already shows.
    *job.poll_cursor.lock().unwrap_or_else(|e| e.into_inner()) = total;
    let mut text = if total == 0 {
        String::new()
    } else {
        output_block(&output)
    };
    let how = if background {
        format!(
            "started in the background as session {} (pid {})",
            job.id, job.pid
        )
    } else {
        format!(
            "still running after {}; it continues as session {} (pid {})",
            duration_words(job.started.elapsed()),
            job.id,
            job.pid
        )
    };
    text.push_str(&format!(
        "[{how}. Read new output with shell(resource: \"session\", action: \"poll\", \
         session_id: \"{id}\"), send input with action \"write\", stop it with action \"kill\".]\n",
        id = job.id
    ));
    if !job.is_running() {
        text.push_str(&status_line(job));
    }
    ToolResult::text(text)
}

fn output_block(output: &str) -> String {
    if output.is_empty() {
        return "(no output)\n".to_string();
    }
    let mut text = output.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The directory a command runs in: the call's `cwd` (absolute, `~/...`, or relative to the
/// default), else the configured default, else the process's working directory.
/// How the command is confined: through the launcher, unless the call asked to run outside
/// the sandbox or this machine has none (both approved by a person for this call alone, see
/// `facts`). Sandboxed commands get the private temp dir as `TMPDIR`.
fn confinement(
    tool: &ShellTool,
    sandbox: bool,
    run: Run<'_>,
    env: &mut Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Option<Confined>, ToolResult> {
    let config = &tool.config.sandbox;
    if !config.enabled || !sandbox {
        return Ok(None);
    }
    let Availability::Ready { launcher, .. } = availability(config, &tool.sandbox) else {
        return Ok(None);
    };
    let tmp = tool
        .tmp_dir()
        .map_err(|why| ToolResult::error(ErrorCode::ToolFailed, why))?;
    env.retain(|(name, _)| name != "TMPDIR");
    env.push(("TMPDIR".into(), tmp.clone().into_os_string()));
    let default = default_dir(tool)?;
    let home = tool.home();
    Ok(Some(confine(
        config,
        &launcher,
        run,
        &default,
        home.as_deref(),
        env,
        &tmp,
    )))
}
