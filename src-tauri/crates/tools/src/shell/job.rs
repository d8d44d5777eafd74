//! One running command: `bash --noprofile --norc -c` in its own process group, stdout and
//! stderr on one pipe (so they interleave in the order they were written), drained
//! continuously by a driver task into an [`OutputLog`].
//!
//! Process-group rules: stopping a job signals the whole group (SIGTERM, a grace period, then
//! SIGKILL) so grandchildren die too; when the command's main process exits, whatever it left
//! running in its group is stopped the same way, which also guarantees the output pipe closes.
//! A [`JobGuard`] stops the group when the future that owns a foreground job is dropped.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::watch;

use super::output::OutputLog;

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub at: Instant,
}

impl Exit {
    pub(crate) fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("killed by signal {}", signal_name(signal)),
            (None, None) => "ended (status unknown)".to_string(),
        }
    }
}

/// What waiters watch: bytes written so far, and the exit once the job is fully done (main
/// process reaped and output drained).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Progress {
    pub bytes: u64,
    pub exit: Option<Exit>,
}

/// What to run.
pub(crate) struct Spec {
    pub id: String,
    /// The bash command, or for an argv ([`Spec::argv`]) how it is shown.
    pub command: String,
    /// Run this program with these arguments instead of `bash -c command` (the `exec` tool):
    /// no shell parses anything.
    pub argv: Option<Vec<String>>,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    /// Pipe stdin so the session `write` action can feed it; foreground jobs get /dev/null,
    /// so a command that reads stdin sees end-of-file instead of hanging.
    pub piped_stdin: bool,
    pub head_limit: usize,
    pub log_capacity: usize,
    pub grace: Duration,
    /// Run through the sandbox launcher (which execs bash confined); `None`: bash directly.
    pub sandbox: Option<super::sandbox::Confined>,
    /// Whether the command ran sandboxed, for the result's notes.
    pub sandboxed: bool,
}

pub(crate) struct Job {
    pub id: String,
    pub command: String,
    pub cwd: PathBuf,
    pub pid: u32,
    pub started: Instant,
    pub log: Mutex<OutputLog>,
    /// Whether the kernel sandbox held it.
    pub sandboxed: bool,
    pub stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// The offset the next `poll` starts from.
    pub poll_cursor: Mutex<u64>,
    progress: watch::Sender<Progress>,
    grace: Duration,
}

impl Job {
    pub(crate) fn spawn(spec: Spec) -> io::Result<Arc<Job>> {
        let (reader, writer) = io::pipe()?;
        let mut command = match &spec.sandbox {
            // The launcher confines itself, then execs bash with the same pid.
            Some(confined) => {
                let mut command = Command::new(&confined.launcher);
                command.args(&confined.arguments);
                command
            }
            None if spec.argv.is_some() => {
                let argv = spec.argv.as_deref().unwrap_or_default();
                let mut command = Command::new(&argv[0]);
                command.args(&argv[1..]);
                command
            }
            None => {
                let mut command = Command::new("bash");
                command
                    .arg("--noprofile")
                    .arg("--norc")
                    .arg("-c")
                    .arg(&spec.command);
                command
            }
        };
        command
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.cwd)
            .stdin(if spec.piped_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(writer.try_clone()?)
            .stderr(writer)
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        // Our copies of the pipe's write end live in `command`; closing them now means the
        // read side sees end-of-file as soon as the process group is done with it.
        drop(command);
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("the child exited at once"))?;
        let stdin = child.stdin.take();
        let output = match tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader)) {
            Ok(output) => output,
            Err(err) => {
                signal_group(pid, Signal::SIGKILL);
                return Err(err);
            }
        };
        let (progress, _) = watch::channel(Progress {
            bytes: 0,
            exit: None,
        });
        let job = Arc::new(Job {
            id: spec.id,
            command: spec.command,
            cwd: spec.cwd,
            pid,
            started: Instant::now(),
            log: Mutex::new(OutputLog::new(spec.head_limit, spec.log_capacity)),
            sandboxed: spec.sandboxed,
            stdin: tokio::sync::Mutex::new(stdin),
            poll_cursor: Mutex::new(0),
            progress,
            grace: spec.grace,
        });
        tokio::spawn(drive(job.clone(), child, output));
        Ok(job)
    }

    pub(crate) fn watch(&self) -> watch::Receiver<Progress> {
        self.progress.subscribe()
    }

    pub(crate) fn exit(&self) -> Option<Exit> {
        self.progress.borrow().exit
    }

    pub(crate) fn is_running(&self) -> bool {
        self.exit().is_none()
    }

    /// Waits until the job is done, or `within` has passed; returns its exit if done.
    pub(crate) async fn wait(&self, within: Duration) -> Option<Exit> {
        let mut watch = self.watch();
        let done = tokio::time::timeout(within, watch.wait_for(|p| p.exit.is_some())).await;
        match done {
            Ok(Ok(progress)) => progress.exit,
            _ => self.exit(),
        }
    }

    /// Stops the whole process group: SIGTERM now, SIGKILL after the grace period if the job
    /// is not done by then.
    pub(crate) fn terminate(self: &Arc<Self>) {
        if !self.is_running() {
            return;
        }
        signal_group(self.pid, Signal::SIGTERM);
        let job = Arc::clone(self);
        tokio::spawn(async move {
            if job.wait(job.grace).await.is_none() {
                signal_group(job.pid, Signal::SIGKILL);
            }
        });
    }

    fn append(&self, bytes: &[u8]) {
        let total = {
            let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            log.push(bytes);
            log.total()
        };
        self.progress.send_modify(|p| p.bytes = total);
    }
}

/// Reads the output and reaps the main process; marks the job done when both are finished.
async fn drive(job: Arc<Job>, mut child: Child, mut output: tokio::net::unix::pipe::Receiver) {
    // If this task is dropped early (runtime shutdown), the group must not outlive it.
    let mut guard = GroupKillOnDrop(Some(job.pid));
    let mut buffer = vec![0u8; 32 * 1024];
    let mut status = None;
    let mut output_open = true;
    // Set when the main process has exited: leftovers in its group get TERM, then KILL at
    // the first deadline, and reading stops at the second even if something that left the
    // group (setsid) still holds the pipe.
    let mut kill_at: Option<tokio::time::Instant> = None;
    let mut give_up_at: Option<tokio::time::Instant> = None;
    loop {
        let far = tokio::time::Instant::now() + Duration::from_secs(3600);
        tokio::select! {
            read = output.read(&mut buffer), if output_open => match read {
                Ok(0) | Err(_) => output_open = false,
                Ok(n) => job.append(&buffer[..n]),
            },
            waited = child.wait(), if status.is_none() => {
                status = Some(waited);
                signal_group(job.pid, Signal::SIGTERM);
                if output_open {
                    let now = tokio::time::Instant::now();
                    kill_at = Some(now + job.grace);
                    give_up_at = Some(now + job.grace + Duration::from_secs(1));
                }
            },
            _ = tokio::time::sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() => {
                signal_group(job.pid, Signal::SIGKILL);
                kill_at = None;
            },
            _ = tokio::time::sleep_until(give_up_at.unwrap_or(far)), if give_up_at.is_some() => {
                output_open = false;
            },
        }
        if status.is_some() && !output_open {
            break;
        }
    }
    guard.0 = None;
    let exit = exit_of(status);
    job.progress.send_modify(|p| p.exit = Some(exit));
}

fn exit_of(status: Option<io::Result<std::process::ExitStatus>>) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    let status = status.and_then(Result::ok);
    Exit {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        at: Instant::now(),
    }
}

/// Sends `signal` to the process group led by `pid`. A group that is already gone is fine.
pub(crate) fn signal_group(pid: u32, signal: Signal) {
    if let Ok(raw) = i32::try_from(pid)
        && raw > 1
    {
        let _ = killpg(Pid::from_raw(raw), signal);
    }
}

pub(crate) fn signal_name(signal: i32) -> String {
    Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| signal.to_string())
}

/// SIGKILLs the group on drop unless cleared.
struct GroupKillOnDrop(Option<u32>);

impl Drop for GroupKillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            signal_group(pid, Signal::SIGKILL);
        }
    }
}

/// Held by a foreground exec while it waits: if that future is dropped (the registry's
/// deadline, the caller going away), the job's group is stopped. Disarmed when the job ends
/// normally or becomes a session.
pub(crate) struct JobGuard {
    job: Option<Arc<Job>>,
}

impl JobGuard {
    pub(crate) fn new(job: Arc<Job>) -> Self {
        JobGuard { job: Some(job) }
    }

    pub(crate) fn disarm(&mut self) {
        self.job = None;
    }
}

impl Drop for JobGuard {
    fn drop(&mut self) {
        let Some(job) = self.job.take() else {
            return;
        };
        if !job.is_running() {
            return;
        }
        signal_group(job.pid, Signal::SIGTERM);
        // No awaiting in Drop, and the runtime may be shutting down: escalate from a thread.
        let (pid, grace) = (job.pid, job.grace);
        let _ = std::thread::Builder::new()
            .name("osprey-shell-kill".into())
            .spawn(move || {
                let deadline = Instant::now() + grace;
                while Instant::now() < deadline {
                    if !job.is_running() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                signal_group(pid, Signal::SIGKILL);
            });
    }
}
