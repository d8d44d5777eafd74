//! Background sessions: commands that keep running after the call that started them returned
//! (`background: true`, or a foreground command still running after `yield_ms`). Each
//! session's output is drained continuously by its job's driver into a bounded ring, so an
//! unpolled session never blocks on a full pipe. Finished sessions are swept after a TTL,
//! lazily on each use (no background task to leak); dropping the registry stops every
//! session still running.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;
use osprey_types::{ErrorCode, ToolResult};
use tokio::io::AsyncWriteExt;

use super::job::{Job, signal_group};
use super::output::cap_bytes;

/// Lines `log` shows when `limit` is not given.
const DEFAULT_LOG_LINES: usize = 2000;
/// Finished sessions kept (with their logs) before the TTL, oldest forgotten first, so many
/// short sessions cannot pile up memory.
const MAX_FINISHED: usize = 64;

pub(crate) struct Sessions {
    jobs: Mutex<Vec<Arc<Job>>>,
    next: std::sync::atomic::AtomicU64,
    ttl: Duration,
}

impl Sessions {
    pub(crate) fn new(ttl: Duration) -> Self {
        Sessions {
            jobs: Mutex::new(Vec::new()),
            next: std::sync::atomic::AtomicU64::new(1),
            ttl,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Job>>> {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh id; every job gets one, though only those that become sessions show it.
    pub(crate) fn next_id(&self) -> String {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("sh-{n}")
    }

    pub(crate) fn adopt(&self, job: Arc<Job>) {
        self.sweep();
        self.lock().push(job);
    }

    pub(crate) fn running(&self) -> usize {
        self.lock().iter().filter(|j| j.is_running()).count()
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Job>> {
        self.sweep();
        self.lock().iter().find(|j| j.id == id.trim()).cloned()
    }

    /// Forgets sessions that finished more than the TTL ago, and the oldest finished ones
    /// beyond [`MAX_FINISHED`].
    pub(crate) fn sweep(&self) {
        let ttl = self.ttl;
        let mut jobs = self.lock();
        jobs.retain(|job| job.exit().is_none_or(|exit| exit.at.elapsed() < ttl));
        let finished = jobs.iter().filter(|j| !j.is_running()).count();
        let mut excess = finished.saturating_sub(MAX_FINISHED);
        // Jobs are in start order, so the first finished ones are the oldest.
        jobs.retain(|job| {
            if excess > 0 && !job.is_running() {
                excess -= 1;
                false
            } else {
                true
            }
        });
    }

    fn all(&self) -> Vec<Arc<Job>> {
        self.sweep();
        self.lock().clone()
    }

    fn unknown(&self, id: &str) -> ToolResult {
        let known: Vec<String> = self
            .all()
            .iter()
            .map(|j| format!("{} ({})", j.id, status_word(j)))
            .collect();
        let listing = if known.is_empty() {
            "there are no sessions".to_string()
        } else {
            format!("the sessions are: {}", known.join(", "))
        };
        ToolResult::error(
            ErrorCode::ToolFailed,
            format!("no session `{id}` (finished sessions are forgotten after a while); {listing}"),
        )
    }

    /// The job `id` names, or the error to return.
    fn find(&self, id: &str) -> Result<Arc<Job>, ToolResult> {
        self.get(id).ok_or_else(|| self.unknown(id))
    }

    pub(crate) fn list(&self) -> ToolResult {
        let jobs = self.all();
        if jobs.is_empty() {
            return ToolResult::text("no sessions");
        }
        let mut out = String::new();
        for job in jobs {
            let age = duration_words(job.started.elapsed());
            let status = match job.exit() {
                None => format!("running for {age}"),
                Some(exit) => format!(
                    "{} ({} ago; started {age} ago)",
                    exit.describe(),
                    duration_words(exit.at.elapsed())
                ),
            };
            out.push_str(&format!(
                "{}\t{status}\tpid {}\tcwd {}\t{}\n",
                job.id,
                job.pid,
                job.cwd.display(),
                super::output::one_line(&job.command, 200)
            ));
        }
        ToolResult::text(out)
    }

    /// New output since the last poll, and the status. With `yield_ms`, waits up to that
    /// long for new output or the end.
    pub(crate) async fn poll(&self, id: &str, yield_ms: Option<u64>, cap: usize) -> ToolResult {
        let job = match self.find(id) {
            Ok(job) => job,
            Err(result) => return result,
        };
        if let Some(ms) = yield_ms {
            let from = *job.poll_cursor.lock().unwrap_or_else(|e| e.into_inner());
            let mut watch = job.watch();
            let _ = tokio::time::timeout(
                Duration::from_millis(ms),
                watch.wait_for(|p| p.bytes > from || p.exit.is_some()),
            )
            .await;
        }
        let mut cursor = job.poll_cursor.lock().unwrap_or_else(|e| e.into_inner());
        let (bytes, gone) = job
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .since(*cursor);
        *cursor += gone + bytes.len() as u64;
        drop(cursor);
        let mut out = String::new();
        if gone > 0 {
            out.push_str(&format!(
                "[... {} dropped before this (the session keeps its latest output only) ...]\n",
                crate::file::human_bytes(gone)
            ));
        }
        if bytes.is_empty() {
            out.push_str("(no new output)\n");
        } else {
            out.push_str(&cap_bytes(&bytes, cap));
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        out.push_str(&status_line(&job));
        ToolResult::text(out)
    }

    /// The retained log, by lines: `offset` (1-based) and `limit`.
    pub(crate) fn log(
        &self,
        id: &str,
        offset: Option<u64>,
        limit: Option<u64>,
        cap: usize,
    ) -> ToolResult {
        let job = match self.find(id) {
            Ok(job) => job,
            Err(result) => return result,
        };
        let (bytes, dropped) = {
            let log = job.log.lock().unwrap_or_else(|e| e.into_inner());
            (log.since(0).0, log.dropped())
        };
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let offset = offset.unwrap_or(1).max(1) as usize;
        let limit = limit.map_or(DEFAULT_LOG_LINES, |l| l.max(1) as usize);
        let mut out = String::new();
        if dropped > 0 {
            out.push_str(&format!(
                "[the first {} of output were dropped; the log keeps the latest part]\n",
                crate::file::human_bytes(dropped)
            ));
        }
        if lines.is_empty() {
            out.push_str("(no output yet)\n");
        } else if offset > lines.len() {
            out.push_str(&format!(
                "(offset {offset} is past the end: the log has {} lines)\n",
                lines.len()
            ));
        } else {
            let end = (offset - 1).saturating_add(limit).min(lines.len());
            let mut page = String::new();
            for (i, line) in lines[offset - 1..end].iter().enumerate() {
                page.push_str(&format!("{:>6}\t{line}\n", offset + i));
            }
            out.push_str(&cap_bytes(page.as_bytes(), cap));
            if end < lines.len() {
                out.push_str(&format!(
                    "... {} more lines; read again with offset: {}\n",
                    lines.len() - end,
                    end + 1
                ));
            }
        }
        out.push_str(&status_line(&job));
        ToolResult::text(out)
    }

    /// Writes `input` to the session's stdin; `eof` closes it afterwards.
    pub(crate) async fn write(&self, id: &str, input: &str, close: bool) -> ToolResult {
        let job = match self.find(id) {
            Ok(job) => job,
            Err(result) => return result,
        };
        if !job.is_running() {
            return ToolResult::error(
                ErrorCode::ToolFailed,
                format!("session {} has ended ({})", job.id, status_word(&job)),
            );
        }
        let mut stdin = job.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return ToolResult::error(
                ErrorCode::ToolFailed,
                format!(
                    "session {}'s stdin is closed (it was closed with eof, or the command \
                     started in the foreground, which gets no stdin); start it with \
                     background: true to write to it",
                    job.id
                ),
            );
        };
        let written = async {
            pipe.write_all(input.as_bytes()).await?;
            pipe.flush().await
        }
        .await;
        if let Err(err) = written {
            *stdin = None;
            return ToolResult::error(
                ErrorCode::ToolFailed,
                format!(
                    "could not write to session {}: {err} (it has probably closed its stdin)",
                    job.id
                ),
            );
        }
        let mut message = format!("wrote {} bytes to session {}", input.len(), job.id);
        if close {
            *stdin = None;
            message.push_str(" and closed its stdin");
        }
        if !input.is_empty() && !input.ends_with('\n') && !close {
            message.push_str(" (no trailing newline: a line-reading program waits for one)");
        }
        message.push_str("; read its reply with poll");
        ToolResult::text(message)
    }

    /// Stops a session's whole process group.
    pub(crate) async fn kill(&self, id: &str) -> ToolResult {
        let job = match self.find(id) {
            Ok(job) => job,
            Err(result) => return result,
        };
        if !job.is_running() {
            return ToolResult::text(format!(
                "session {} had already ended ({})",
                job.id,
                status_word(&job)
            ));
        }
        job.terminate();
        let exit = job.wait(Duration::from_secs(10)).await;
        ToolResult::text(match exit {
            Some(exit) => format!(
                "stopped session {} and its process group ({})",
                job.id,
                exit.describe()
            ),
            None => format!(
                "sent SIGTERM and SIGKILL to session {}'s process group; it has not finished yet",
                job.id
            ),
        })
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        for job in self.lock().iter().filter(|j| j.is_running()) {
            signal_group(job.pid, Signal::SIGKILL);
        }
    }
}

fn status_word(job: &Job) -> String {
    match job.exit() {
        None => "running".to_string(),
        Some(exit) => exit.describe(),
    }
}

/// The last line of poll and log output.
pub(crate) fn status_line(job: &Job) -> String {
    match job.exit() {
        None => format!(
            "[session {} running for {}]\n",
            job.id,
            duration_words(job.started.elapsed())
        ),
        Some(exit) => format!(
            "[session {} finished: {} after {}]\n",
            job.id,
            exit.describe(),
            duration_words(exit.at.saturating_duration_since(job.started))
        ),
    }
}

pub(crate) fn duration_words(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{:.1} s", d.as_secs_f64())
    } else if s < 3600 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    }
}
