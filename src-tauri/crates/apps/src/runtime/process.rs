//! Process-group signalling, the `.pid` file, and killing orphans a previous run left behind.

use std::path::Path;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::{PID_FILE, SOCKET_FILE};
use crate::binary::validate_binary;
use crate::napp::BINARY_NAMES;

fn pid(raw: u32) -> Option<Pid> {
    i32::try_from(raw)
        .ok()
        .filter(|p| *p > 1)
        .map(Pid::from_raw)
}

/// Signals the whole process group led by `leader`. False when the group no longer exists.
pub(crate) fn signal_group(leader: u32, signal: Signal) -> bool {
    pid(leader).is_some_and(|group| killpg(group, signal).is_ok())
}

/// True when no process of the group led by `leader` is left (zombies count as gone: they hold
/// no resources and run nothing).
pub(crate) fn group_gone(leader: u32) -> bool {
    match pid(leader) {
        None => true,
        Some(group) => matches!(killpg(group, None), Err(Errno::ESRCH)),
    }
}

/// True when the process is gone or a zombie.
pub fn process_gone(raw: u32) -> bool {
    let Some(target) = pid(raw) else {
        return true;
    };
    if matches!(kill(target, None), Err(Errno::ESRCH)) {
        return true;
    }
    zombie(raw)
}

#[cfg(target_os = "linux")]
fn zombie(raw: u32) -> bool {
    // /proc/<pid>/stat: "pid (comm) S ..."; comm may hold spaces and parentheses, so take the
    // state after the last ')'.
    std::fs::read_to_string(format!("/proc/{raw}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next())
        })
        .is_none_or(|state| state == 'Z' || state == 'X')
}

#[cfg(not(target_os = "linux"))]
fn zombie(_raw: u32) -> bool {
    false
}

/// Whether `raw` is running the binary of the app in `app_dir`, so a recycled pid is never
/// killed by mistake. Only Linux can tell (through /proc); elsewhere the answer is no.
#[cfg(target_os = "linux")]
fn runs_app_binary(raw: u32, app_dir: &Path) -> bool {
    let Ok(exe) = std::fs::read_link(format!("/proc/{raw}/exe")) else {
        return false;
    };
    let exe = exe.to_string_lossy();
    // A binary replaced since launch shows as "<path> (deleted)".
    let exe = exe.strip_suffix(" (deleted)").unwrap_or(&exe);
    BINARY_NAMES.iter().any(|name| {
        let binary = app_dir.join(name);
        let canonical = std::fs::canonicalize(&binary).unwrap_or(binary);
        canonical.to_string_lossy() == exe
    })
}

#[cfg(not(target_os = "linux"))]
fn runs_app_binary(_raw: u32, _app_dir: &Path) -> bool {
    false
}

/// Kills the process groups recorded in `<apps>/*/.pid` by a previous run that are still running
/// the app's binary, and removes their pid files and sockets. Returns the app ids it killed.
pub fn kill_orphans(apps_dir: &Path) -> Vec<String> {
    let mut killed = Vec::new();
    let Ok(entries) = std::fs::read_dir(apps_dir) else {
        return killed;
    };
    for entry in entries.flatten() {
        let app_dir = entry.path();
        let pid_file = app_dir.join(PID_FILE);
        let Ok(text) = std::fs::read_to_string(&pid_file) else {
            continue;
        };
        if let Ok(raw) = text.trim().parse::<u32>()
            && !process_gone(raw)
            && runs_app_binary(raw, &app_dir)
        {
            signal_group(raw, Signal::SIGKILL);
            killed.push(entry.file_name().to_string_lossy().into_owned());
        }
        let _ = std::fs::remove_file(&pid_file);
        let _ = std::fs::remove_file(app_dir.join(SOCKET_FILE));
    }
    killed
}

/// The pid in the app's `.pid` file, when that process is still running the app's binary.
pub(crate) fn running_pid(app_dir: &Path) -> Option<u32> {
    let raw = std::fs::read_to_string(app_dir.join(PID_FILE))
        .ok()?
        .trim()
        .parse::<u32>()
        .ok()?;
    (!process_gone(raw) && runs_app_binary(raw, app_dir)).then_some(raw)
}

/// Validates the binary before every launch (it may have changed since install).
pub(crate) fn check_binary(app_dir: &Path) -> crate::Result<std::path::PathBuf> {
    let path = crate::layout::binary_path(app_dir);
    validate_binary(&path, crate::binary::MAX_BINARY_BYTES)?;
    Ok(path)
}
