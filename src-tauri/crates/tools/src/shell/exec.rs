//! `shell bash exec`: run a command in the foreground (with a timeout, cancellation and an
//! optional yield into a session) or in the background as a session.

use std::sync::Arc;
use std::time::{Duration, Instant};

use osprey_types::{ErrorCode, ToolResult};

use super::ShellTool;
use super::dirs::{default_dir, working_dir};
use super::env::child_env;
use super::input::Exec;
use super::job::{Job, JobGuard, Spec};
use super::sandbox::{Availability, Confined, availability, confine, refusal_note};
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
    let confined = match confinement(tool, call, command, &mut env) {
        Ok(confined) => confined,
        Err(result) => return result,
    };
    let spec = Spec {
        id: tool.sessions.next_id(),
        command: command.to_string(),
        cwd,
        env,
        piped_stdin: background,
        head_limit: config.output_cap / 2,
        log_capacity: config.session_buffer.max(config.output_cap),
        grace: config.kill_grace,
        sandboxed: confined.is_some(),
        sandbox: confined,
    };
    let job = match Job::spawn(spec) {
        Ok(job) => job,
        Err(err) => {
            return ToolResult::error(
                ErrorCode::ToolFailed,
                format!("could not start bash: {err}"),
            );
        }
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
            finished(&job, config.output_cap)
        }
        Ending::Yielded => {
            guard.disarm();
            tool.sessions.adopt(job.clone());
            started_session(&job, config.output_cap, false)
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
                    format!("the {} s timeout", timeout.as_secs())
                } else {
                    "the call's deadline".to_string()
                };
                text.push_str(&format!(
                    "[timed out: still running after {} ({which}); {stopped}. For long-running \
                     commands use background: true, or raise timeout.]\n",
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
    call: &Exec,
    command: &str,
    env: &mut Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Option<Confined>, ToolResult> {
    let config = &tool.config.sandbox;
    if !config.enabled || !call.sandbox {
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
        command,
        &default,
        home.as_deref(),
        env,
        &tmp,
    )))
}
