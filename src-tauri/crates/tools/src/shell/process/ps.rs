//! Process table from `ps`, for Unix systems without `/proc` (macOS, the BSDs).

use std::io;
use std::process::Command;

use super::ProcessInfo;

pub(crate) fn list() -> io::Result<Vec<ProcessInfo>> {
    let mut out = run_ps(&["-axo", "pid=,ppid=,stat=,args="])?;
    out.sort_by_key(|p| p.pid);
    Ok(out)
}

pub(crate) fn info(pid: i32) -> io::Result<Option<ProcessInfo>> {
    let pid_arg = pid.to_string();
    let Some(mut info) = run_ps(&["-o", "pid=,ppid=,stat=,args=", "-p", &pid_arg])?
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    info.children = list()?
        .into_iter()
        .filter(|p| p.ppid == pid)
        .map(|p| p.pid)
        .collect();
    Ok(Some(info))
}

pub(crate) fn is_alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
        && run_ps(&["-o", "pid=,ppid=,stat=,args=", "-p", &pid.to_string()])
            .ok()
            .and_then(|list| list.into_iter().next())
            .is_some_and(|p| !p.state.as_deref().unwrap_or("").starts_with('Z'))
}

fn run_ps(args: &[&str]) -> io::Result<Vec<ProcessInfo>> {
    let output = Command::new("ps").args(args).output()?;
    // `ps -p` exits 1 when the pid does not exist; that is an empty answer, not a failure.
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text.lines().filter_map(parse_line).collect())
}

pub(crate) fn parse_line(line: &str) -> Option<ProcessInfo> {
    let mut rest = line.trim_start();
    let mut field = || -> Option<&str> {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (value, tail) = rest.split_at(end);
        rest = tail.trim_start();
        (!value.is_empty()).then_some(value)
    };
    let pid = field()?.parse().ok()?;
    let ppid = field()?.parse().ok()?;
    let state = field()?.to_string();
    let command = rest.to_string();
    let name = command
        .split_whitespace()
        .next()
        .and_then(|program| program.rsplit('/').next())
        .unwrap_or("")
        .to_string();
    Some(ProcessInfo {
        pid,
        ppid,
        name,
        state: Some(state),
        command,
        ..Default::default()
    })
}
