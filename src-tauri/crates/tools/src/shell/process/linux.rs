//! Process table from `/proc`.

use std::fs;
use std::io;
use std::path::Path;

use super::ProcessInfo;

pub(crate) fn list() -> io::Result<Vec<ProcessInfo>> {
    let mut out = Vec::new();
    for entry in fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // Processes exit while we read; a vanished one is simply not listed.
        if let Some(info) = read(pid, false) {
            out.push(info);
        }
    }
    out.sort_by_key(|p| p.pid);
    Ok(out)
}

pub(crate) fn info(pid: i32) -> io::Result<Option<ProcessInfo>> {
    let Some(mut info) = read(pid, true) else {
        return Ok(None);
    };
    info.children = list()?
        .into_iter()
        .filter(|p| p.ppid == pid)
        .map(|p| p.pid)
        .collect();
    Ok(Some(info))
}

/// Alive and not a zombie.
pub(crate) fn is_alive(pid: i32) -> bool {
    read_stat(&Path::new("/proc").join(pid.to_string()))
        .is_some_and(|(_, state, _)| state != "Z" && state != "X")
}

fn read(pid: i32, details: bool) -> Option<ProcessInfo> {
    let dir = Path::new("/proc").join(pid.to_string());
    let (name, state, ppid) = read_stat(&dir)?;
    let cmdline = fs::read(dir.join("cmdline")).unwrap_or_default();
    let command = cmdline
        .split(|&b| b == 0)
        .filter(|part| !part.is_empty())
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut info = ProcessInfo {
        pid,
        ppid,
        name,
        state: Some(state),
        command,
        ..Default::default()
    };
    if details {
        if let Ok(status) = fs::read_to_string(dir.join("status")) {
            for line in status.lines() {
                let mut fields = line.split_whitespace();
                match fields.next() {
                    Some("Uid:") => info.uid = fields.next().and_then(|v| v.parse().ok()),
                    Some("Threads:") => info.threads = fields.next().and_then(|v| v.parse().ok()),
                    Some("VmRSS:") => {
                        info.rss_bytes = fields
                            .next()
                            .and_then(|v| v.parse::<u64>().ok())
                            .map(|kb| kb * 1024)
                    }
                    _ => {}
                }
            }
        }
        info.cwd = fs::read_link(dir.join("cwd")).ok();
        info.exe = fs::read_link(dir.join("exe")).ok();
        if let Some((files, total)) = open_files(&dir) {
            info.open_files = Some(files);
            info.open_files_total = total;
        }
    }
    Some(info)
}

/// The targets of `/proc/<pid>/fd/*`, by descriptor number, the first
/// [`super::OPEN_FILES_SHOWN`], and how many there are; `None` when the directory cannot be
/// read (another user's process).
fn open_files(dir: &Path) -> Option<(Vec<String>, usize)> {
    let mut fds: Vec<(u32, String)> = fs::read_dir(dir.join("fd"))
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let fd = entry.file_name().to_str()?.parse().ok()?;
            // A descriptor closed since the listing has no target any more.
            let target = fs::read_link(entry.path()).ok()?;
            Some((fd, target.display().to_string()))
        })
        .collect();
    fds.sort_by_key(|(fd, _)| *fd);
    let total = fds.len();
    let shown = fds
        .into_iter()
        .take(super::OPEN_FILES_SHOWN)
        .map(|(fd, target)| format!("{fd} {target}"))
        .collect();
    Some((shown, total))
}

/// `(name, state, ppid)` from `/proc/<pid>/stat`. The name is in parentheses and may itself
/// contain spaces and parentheses, so the fields after it are found from the last `)`.
fn read_stat(dir: &Path) -> Option<(String, String, i32)> {
    let stat = fs::read_to_string(dir.join("stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.to_string();
    let ppid = rest.next()?.parse().ok()?;
    Some((name, state, ppid))
}
