//! What an app that did not come up was doing. When a launch times out, the test's error carries
//! this report: every thread of the app and of its WebKit processes with its state and kernel wait
//! channel, the main threads' stacks (gdb, when installed; the whole dump is saved next to the
//! test's screenshots) and the end of the driver's log, where the app's own output goes. A hang
//! seen once on CI can then be read from the CI log instead of guessed at.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::find_program;

/// How long gdb may take to attach and walk every thread of a debug build.
const GDB_DEADLINE: Duration = Duration::from_secs(90);
/// Lines of each main thread's stack in the report (the saved dump has them all).
const STACK_LINES: usize = 30;
const LOG_LINES: usize = 40;

/// One process from `/proc/<pid>/stat`.
struct Process {
    pid: u32,
    parent: u32,
    name: String,
    state: char,
}

fn stat(pid: &str, task: Option<&str>) -> Option<Process> {
    let path = match task {
        Some(tid) => format!("/proc/{pid}/task/{tid}/stat"),
        None => format!("/proc/{pid}/stat"),
    };
    let text = std::fs::read_to_string(path).ok()?;
    // "pid (name) state ppid ...": the name may hold spaces and parentheses.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let mut rest = text[close + 1..].split_whitespace();
    Some(Process {
        pid: text[..open].trim().parse().ok()?,
        name: text[open + 1..close].to_string(),
        state: rest.next()?.chars().next()?,
        parent: rest.next()?.parse().ok()?,
    })
}

fn processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.parse::<u32>().ok()?;
            stat(&name, None)
        })
        .collect()
}

fn command_line(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .unwrap_or_default()
}

/// The app (the process whose command line holds `marker`, its data folder) and every process
/// under it, app first.
fn app_and_children(marker: &str) -> Vec<Process> {
    let all = processes();
    let mut pids: Vec<u32> = all
        .iter()
        .filter(|p| command_line(p.pid).contains(marker))
        .map(|p| p.pid)
        .collect();
    let mut next = 0;
    while let Some(&pid) = pids.get(next) {
        for child in all.iter().filter(|p| p.parent == pid) {
            if !pids.contains(&child.pid) {
                pids.push(child.pid);
            }
        }
        next += 1;
    }
    let mut found: Vec<Process> = all.into_iter().filter(|p| pids.contains(&p.pid)).collect();
    found.sort_by_key(|p| p.pid);
    found
}

fn threads(pid: u32) -> String {
    let mut out = String::new();
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return "  (its threads cannot be read)\n".into();
    };
    let mut tids: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    tids.sort_by_key(|tid| tid.parse::<u32>().unwrap_or(u32::MAX));
    for tid in tids {
        let pid_text = pid.to_string();
        let Some(thread) = stat(&pid_text, Some(&tid)) else {
            continue;
        };
        let wchan =
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/wchan")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  thread {tid} {:?}: {} {}",
            thread.name,
            thread.state,
            if wchan.is_empty() || wchan == "0" {
                "-"
            } else {
                &wchan
            }
        );
    }
    out
}

/// Every thread's stack through gdb, saved to `dump`; returns the main thread's first lines.
fn main_stack(pid: u32, dump: &Path) -> String {
    let Some(gdb) = find_program("gdb", &[]) else {
        return "  (gdb is not installed: no stacks; scripts/setup installs it)\n".into();
    };
    let output = match std::fs::File::create(dump) {
        Ok(file) => file,
        Err(error) => return format!("  (cannot write {}: {error})\n", dump.display()),
    };
    let child = Command::new(gdb)
        .args(["-batch", "-nx", "-q", "-p", &pid.to_string()])
        .args(["-ex", "set pagination off", "-ex", "thread apply all bt"])
        .stdin(Stdio::null())
        .stdout(output.try_clone().map(Stdio::from).unwrap_or(Stdio::null()))
        .stderr(Stdio::from(output))
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(error) => return format!("  (gdb did not start: {error})\n"),
    };
    let deadline = Instant::now() + GDB_DEADLINE;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
    let text = std::fs::read_to_string(dump).unwrap_or_default();
    // gdb prints threads from the highest number down; "Thread 1 " is the main thread.
    let main: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.starts_with("Thread 1 "))
        .take_while(|line| !line.is_empty())
        .take(STACK_LINES)
        .collect();
    if main.is_empty() {
        let last: Vec<&str> = text.lines().rev().take(5).collect();
        return format!(
            "  (no main-thread stack from gdb; it said: {})\n",
            last.into_iter().rev().collect::<Vec<_>>().join(" / ")
        );
    }
    let mut out = String::new();
    for line in main {
        let _ = writeln!(out, "  {line}");
    }
    out
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for line in &lines[lines.len().saturating_sub(LOG_LINES)..] {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// The report on the app launched with `marker` in its command line, its driver logging to
/// `driver_log`; gdb's dumps go to `artifacts`.
pub(crate) fn report(marker: &str, driver_log: &Path, artifacts: &Path) -> String {
    let mut out = String::new();
    let family = app_and_children(marker);
    if family.is_empty() {
        out.push_str("no process of the app is running (it did not start, or it exited)\n");
    }
    for process in &family {
        let _ = writeln!(
            out,
            "process {} {:?} (parent {}), state {}:",
            process.pid, process.name, process.parent, process.state
        );
        out.push_str(&threads(process.pid));
    }
    for process in &family {
        let dump = artifacts.join(format!("stacks-{}-{}.txt", process.name, process.pid));
        let _ = writeln!(
            out,
            "main thread of {} {} (every thread: {}):",
            process.name,
            process.pid,
            dump.display()
        );
        out.push_str(&main_stack(process.pid, &dump));
    }
    let _ = writeln!(out, "the end of {}:", driver_log.display());
    out.push_str(&log_tail(driver_log));
    out
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    use super::*;

    /// A process group killed on drop, so a failing assertion leaves nothing running.
    struct Group(std::process::Child);

    impl Drop for Group {
        fn drop(&mut self) {
            let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = self.0.wait();
        }
    }

    #[test]
    fn a_hung_app_is_reported_with_its_children_their_threads_stacks_and_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("data").to_string_lossy().into_owned();
        let log = dir.path().join("driver.log");
        std::fs::write(&log, "first line\nthe app said this last\n").unwrap();
        // The "app": a shell with the marker among its arguments, waiting on a child.
        let app = Group(
            Command::new("sh")
                .args(["-c", "sleep 120 & wait", "sh", &marker])
                .process_group(0)
                .spawn()
                .unwrap(),
        );
        let app_pid = app.0.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !app_and_children(&marker).iter().any(|p| p.name == "sleep") {
            assert!(Instant::now() < deadline, "the app's child never appeared");
            std::thread::sleep(Duration::from_millis(20));
        }

        let report = report(&marker, &log, dir.path());

        assert!(
            report.contains(&format!("process {app_pid} \"sh\"")),
            "{report}"
        );
        assert!(
            report.contains(&format!("\"sleep\" (parent {app_pid})")),
            "{report}"
        );
        assert!(
            report.contains(&format!("  thread {app_pid} \"sh\": S")),
            "{report}"
        );
        assert!(report.contains("  the app said this last"), "{report}");
        if find_program("gdb", &[]).is_some() {
            assert!(report.contains("  Thread 1 "), "{report}");
            let dump = dir.path().join(format!("stacks-sh-{app_pid}.txt"));
            assert!(
                std::fs::read_to_string(&dump)
                    .unwrap()
                    .contains("Thread 1 "),
                "{}",
                dump.display()
            );
        }
    }

    #[test]
    fn an_app_that_is_gone_is_said_to_be_gone() {
        let dir = tempfile::tempdir().unwrap();
        let report = report(
            "osprey-no-process-has-this-argument",
            &dir.path().join("missing.log"),
            dir.path(),
        );
        assert!(
            report.starts_with("no process of the app is running"),
            "{report}"
        );
    }
}
