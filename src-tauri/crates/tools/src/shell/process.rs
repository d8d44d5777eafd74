//! `shell process`: list, info and kill. The process table comes from `/proc` on Linux and
//! from `ps` on other Unix systems; on other platforms the actions say they are unsupported.

#[cfg(target_os = "linux")]
mod linux;
// Compiled in tests on Linux too, so its parser is checked where CI runs.
#[cfg(any(test, all(unix, not(target_os = "linux"))))]
#[cfg_attr(target_os = "linux", allow(dead_code))]
mod ps;

#[cfg(target_os = "linux")]
use linux as table;
#[cfg(all(unix, not(target_os = "linux")))]
use ps as table;

use std::io;
use std::path::PathBuf;

use osprey_types::{ErrorCode, ToolResult};

use super::input::ProcessList;
use crate::file::human_bytes;

/// Rows `list` shows when `limit` is not given (largest memory first).
const DEFAULT_LIST_LIMIT: usize = 50;

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ProcessInfo {
    pub pid: i32,
    pub ppid: i32,
    pub name: String,
    pub state: Option<String>,
    pub command: String,
    pub uid: Option<u32>,
    pub threads: Option<u64>,
    pub rss_bytes: Option<u64>,
    pub cwd: Option<PathBuf>,
    pub exe: Option<PathBuf>,
    pub children: Vec<i32>,
    /// What the process has open, by descriptor (`3 /home/me/notes.txt`, `4 socket:[8812]`),
    /// the first 50; `None` where the system does not tell (another user's
    /// process, or no /proc).
    pub open_files: Option<Vec<String>>,
    /// How many descriptors it has open in all.
    pub open_files_total: usize,
}

/// Open files `info` lists, at most (read from /proc, so Linux only).
#[cfg(target_os = "linux")]
pub(crate) const OPEN_FILES_SHOWN: usize = 50;

#[cfg(unix)]
fn list_processes() -> io::Result<Vec<ProcessInfo>> {
    table::list()
}

#[cfg(unix)]
fn process_info(pid: i32) -> io::Result<Option<ProcessInfo>> {
    table::info(pid)
}

#[cfg(unix)]
pub(crate) fn is_alive(pid: i32) -> bool {
    table::is_alive(pid)
}

#[cfg(not(unix))]
fn list_processes() -> io::Result<Vec<ProcessInfo>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "process listing is not supported on this platform yet",
    ))
}

#[cfg(not(unix))]
fn process_info(_pid: i32) -> io::Result<Option<ProcessInfo>> {
    list_processes().map(|_| None)
}

/// The name of a process, for approval summaries.
pub(crate) fn name_of(pid: i32) -> Option<String> {
    process_info(pid).ok().flatten().map(|p| p.name)
}

pub(crate) async fn list(call: &ProcessList) -> ToolResult {
    let filter = call
        .filter
        .as_deref()
        .map(|f| f.trim().to_lowercase())
        .filter(|f| !f.is_empty());
    let limit = call.limit.map_or(DEFAULT_LIST_LIMIT, |l| l.max(1) as usize);
    let listed = tokio::task::spawn_blocking(list_processes).await;
    let processes = match listed {
        Ok(Ok(processes)) => processes,
        Ok(Err(err)) => return failed(format!("could not list processes: {err}")),
        Err(err) => return failed(format!("could not list processes: {err}")),
    };
    let own = std::process::id() as i32;
    let mut matching: Vec<&ProcessInfo> = processes
        .iter()
        .filter(|p| {
            filter.as_ref().is_none_or(|f| {
                p.name.to_lowercase().contains(f) || p.command.to_lowercase().contains(f)
            })
        })
        .collect();
    // With a short list, the ones that matter most come first: the largest in memory.
    matching.sort_by_key(|p| (std::cmp::Reverse(p.rss_bytes.unwrap_or(0)), p.pid));
    let mut out = String::from("PID\tPPID\tNAME\tCOMMAND\n");
    for p in matching.iter().take(limit) {
        let command = if p.command.is_empty() {
            format!("[{}]", p.name)
        } else {
            super::output::one_line(&p.command, 300)
        };
        let mark = if p.pid == own { " (osprey)" } else { "" };
        out.push_str(&format!(
            "{}\t{}\t{}{mark}\t{command}\n",
            p.pid, p.ppid, p.name
        ));
    }
    if matching.len() > limit {
        out.push_str(&format!(
            "[showing {limit} of {} processes; use filter or raise limit]\n",
            matching.len()
        ));
    } else if matching.is_empty() {
        out.push_str("(no matching processes)\n");
    }
    ToolResult::text(out)
}

pub(crate) async fn info(pid: i64) -> ToolResult {
    let pid = match pid_of(pid) {
        Ok(pid) => pid,
        Err(result) => return result,
    };
    let found = tokio::task::spawn_blocking(move || process_info(pid)).await;
    let p = match found {
        Ok(Ok(Some(p))) => p,
        Ok(Ok(None)) => return failed(format!("no process with pid {pid}")),
        Ok(Err(err)) => return failed(format!("could not read process {pid}: {err}")),
        Err(err) => return failed(format!("could not read process {pid}: {err}")),
    };
    let mut out = format!("pid: {}\nppid: {}\nname: {}\n", p.pid, p.ppid, p.name);
    let optional = [
        ("state", p.state.clone()),
        ("uid", p.uid.map(|u| u.to_string())),
        ("threads", p.threads.map(|t| t.to_string())),
        ("memory (rss)", p.rss_bytes.map(human_bytes)),
        ("cwd", p.cwd.as_ref().map(|c| c.display().to_string())),
        ("exe", p.exe.as_ref().map(|e| e.display().to_string())),
    ];
    for (label, value) in optional {
        if let Some(value) = value {
            out.push_str(&format!("{label}: {value}\n"));
        }
    }
    out.push_str(&format!("command: {}\n", p.command));
    if !p.children.is_empty() {
        let children: Vec<String> = p.children.iter().map(i32::to_string).collect();
        out.push_str(&format!("children: {}\n", children.join(", ")));
    }
    match &p.open_files {
        Some(files) => {
            out.push_str(&format!("open files ({}):\n", p.open_files_total));
            for file in files {
                out.push_str(&format!("  {file}\n"));
            }
            if p.open_files_total > files.len() {
                out.push_str(&format!(
                    "  ... and {} more\n",
                    p.open_files_total - files.len()
                ));
            }
        }
        None => {
            out.push_str("open files: not readable here (another user's process, or no /proc)\n")
        }
    }
    if p.pid == std::process::id() as i32 {
        out.push_str("(this is Osprey itself)\n");
    }
    ToolResult::text(out)
}

pub(crate) async fn kill(pid: i64, signal: &str) -> ToolResult {
    let pid = match pid_of(pid) {
        Ok(pid) => pid,
        Err(result) => return result,
    };
    if pid <= 1 {
        return ToolResult::error(
            ErrorCode::InvalidInput,
            format!("refusing to signal pid {pid}: pids 0 and 1 (init) are never signalled"),
        );
    }
    if pid == std::process::id() as i32 {
        return ToolResult::error(
            ErrorCode::InvalidInput,
            format!("refusing to signal pid {pid}: that is Osprey itself"),
        );
    }
    send(pid, &signal.to_ascii_uppercase()).await
}

#[cfg(unix)]
async fn send(pid: i32, signal_name: &str) -> ToolResult {
    use std::time::Duration;

    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let signal = match signal_name.trim_start_matches("SIG") {
        "TERM" => Signal::SIGTERM,
        "KILL" => Signal::SIGKILL,
        "INT" => Signal::SIGINT,
        "HUP" => Signal::SIGHUP,
        other => {
            return ToolResult::error(
                ErrorCode::InvalidInput,
                format!("unknown signal `{other}`; use TERM, KILL, INT or HUP"),
            );
        }
    };
    let name = name_of(pid).unwrap_or_else(|| "?".into());
    if let Err(err) = kill(Pid::from_raw(pid), signal) {
        let why = match err {
            nix::errno::Errno::ESRCH => "no such process".to_string(),
            nix::errno::Errno::EPERM => "permission denied (it belongs to another user)".into(),
            other => other.desc().to_string(),
        };
        return failed(format!(
            "could not send {} to {pid}: {why}",
            signal.as_str()
        ));
    }
    // Say whether it is gone, so the model knows whether to escalate.
    for _ in 0..20 {
        if !is_alive(pid) {
            return ToolResult::text(format!(
                "sent {} to {pid} ({name}); it has exited",
                signal.as_str()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ToolResult::text(format!(
        "sent {} to {pid} ({name}); it is still running after 1 s{}",
        signal.as_str(),
        if signal == Signal::SIGKILL {
            ""
        } else {
            " (use signal KILL to force it)"
        }
    ))
}

#[cfg(not(unix))]
async fn send(pid: i32, _signal_name: &str) -> ToolResult {
    failed(format!(
        "signalling processes is not supported on this platform yet (pid {pid})"
    ))
}

fn pid_of(raw: i64) -> Result<i32, ToolResult> {
    if raw < 0 {
        return Err(ToolResult::error(
            ErrorCode::InvalidInput,
            format!(
                "refusing pid {raw}: negative pids address whole process groups; give one process's pid"
            ),
        ));
    }
    i32::try_from(raw).map_err(|_| {
        ToolResult::error(
            ErrorCode::InvalidInput,
            format!("pid {raw} is out of range"),
        )
    })
}

fn failed(message: impl Into<String>) -> ToolResult {
    ToolResult::error(ErrorCode::ToolFailed, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ps_lines_parse() {
        let p = ps::parse_line("  412     1 Ss   /usr/sbin/sshd -D").unwrap();
        assert_eq!((p.pid, p.ppid), (412, 1));
        assert_eq!(p.name, "sshd");
        assert_eq!(p.command, "/usr/sbin/sshd -D");
        assert!(ps::parse_line("garbage").is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn own_process_is_listed_with_details() {
        let own = std::process::id() as i32;
        let all = list_processes().unwrap();
        assert!(all.iter().any(|p| p.pid == own));
        let me = process_info(own).unwrap().unwrap();
        assert!(me.rss_bytes.is_some() && me.cwd.is_some());
        assert!(is_alive(own));
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn info_lists_the_files_a_process_has_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held-open.txt");
        let held = std::fs::File::create(&path).unwrap();
        let me = process_info(std::process::id() as i32).unwrap().unwrap();
        let files = me.open_files.expect("our own descriptors are readable");
        assert!(me.open_files_total >= files.len() && !files.is_empty());
        let shown = info(i64::from(std::process::id())).await.text_content();
        if me.open_files_total <= OPEN_FILES_SHOWN {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&held);
            let line = format!("{fd} {}", path.display());
            assert!(files.contains(&line), "{line} not in {files:?}");
            assert!(shown.contains(&line), "{shown}");
        }
        assert!(shown.contains("open files ("), "{shown}");
        drop(held);
        // Another user's process (pid 1 belongs to root): not readable unless we are root.
        if nix_is_not_root() {
            let init = process_info(1).unwrap().unwrap();
            assert_eq!(init.open_files, None);
        }
    }

    #[cfg(target_os = "linux")]
    fn nix_is_not_root() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(2).map(|u| u != "0"))
            })
            .unwrap_or(false)
    }
}
