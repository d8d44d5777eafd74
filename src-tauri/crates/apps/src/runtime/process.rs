//! Process-group signalling, the `.pid` file, and killing orphans a previous run left behind.

use std::path::Path;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::{PID_FILE, SOCKET_FILE};
use crate::binary::validate_binary;
#[cfg(target_os = "linux")]
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

/// Kills what a previous run left running: the process groups recorded in `<apps>/*/.pid` that
/// still run the app's binary, then (on Linux) every other process of this user that Osprey
/// launched as an app of this folder, found by the `OSPREY_APP_SOCK` it was given (a pid file
/// lost in a crash, or an app whose folder was removed under it). Removes the pid files and
/// sockets. Returns the app ids it killed. Call it only while holding the data folder: then no
/// app of this folder belongs to a live Osprey.
pub fn kill_orphans(apps_dir: &Path) -> Vec<String> {
    let mut killed = kill_recorded_orphans(apps_dir);
    for id in kill_unrecorded_orphans(apps_dir) {
        if !killed.contains(&id) {
            killed.push(id);
        }
    }
    killed
}

/// The `.pid` file pass of [`kill_orphans`].
fn kill_recorded_orphans(apps_dir: &Path) -> Vec<String> {
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

/// The process scan of [`kill_orphans`]: every process of this user whose environment names a
/// socket of an app in `apps_dir` (`OSPREY_APP_SOCK=<apps>/<id>/app.sock`, set by the launcher
/// and kept across its exec into the app) is killed with its group. A program the developer runs
/// by hand from a sideloaded project has no such variable and is left alone.
#[cfg(target_os = "linux")]
fn kill_unrecorded_orphans(apps_dir: &Path) -> Vec<String> {
    let mut roots = vec![apps_dir.to_path_buf()];
    if let Ok(real) = std::fs::canonicalize(apps_dir)
        && real != apps_dir
    {
        roots.push(real);
    }
    let me = std::process::id();
    let mut killed = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return killed;
    };
    for entry in entries.flatten() {
        let Some(raw) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if raw == me {
            continue;
        }
        // Another user's process cannot be read, and is none of ours.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let Some(id) = app_of_environ(&environ, &roots) else {
            continue;
        };
        if process_gone(raw) {
            continue;
        }
        let group = nix::unistd::getpgid(pid(raw)).ok();
        if group == pid(raw) {
            signal_group(raw, Signal::SIGKILL);
        } else if let Some(target) = pid(raw) {
            let _ = kill(target, Signal::SIGKILL);
        }
        tracing::info!(app = %id, pid = raw, "killed an app process a previous run left behind");
        if !killed.contains(&id) {
            killed.push(id);
        }
    }
    killed
}

#[cfg(not(target_os = "linux"))]
fn kill_unrecorded_orphans(_apps_dir: &Path) -> Vec<String> {
    Vec::new()
}

/// The app id whose socket under one of `roots` a process environment (`/proc/<pid>/environ`:
/// NUL-separated `KEY=value`) names in `OSPREY_APP_SOCK`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn app_of_environ(environ: &[u8], roots: &[std::path::PathBuf]) -> Option<String> {
    let value = environ
        .split(|byte| *byte == 0)
        .find_map(|pair| pair.strip_prefix(b"OSPREY_APP_SOCK="))?;
    let socket = Path::new(std::str::from_utf8(value).ok()?);
    if socket.file_name()? != SOCKET_FILE {
        return None;
    }
    let app_dir = socket.parent()?;
    roots
        .iter()
        .any(|root| app_dir.parent() == Some(root.as_path()))
        .then(|| app_dir.file_name()?.to_str().map(str::to_owned))
        .flatten()
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn an_environment_names_its_app_only_under_this_folders_apps() {
        let roots = [PathBuf::from("/data/apps")];
        let env = |sock: &str| format!("HOME=/h\0OSPREY_APP_SOCK={sock}\0OSPREY_APP_ID=x\0");
        assert_eq!(
            app_of_environ(env("/data/apps/units/app.sock").as_bytes(), &roots).as_deref(),
            Some("units")
        );
        for other in [
            "/elsewhere/apps/units/app.sock",
            "/data/apps/units/other.sock",
            "/data/apps/app.sock",
            "/data/apps/units/deeper/app.sock",
        ] {
            assert_eq!(
                app_of_environ(env(other).as_bytes(), &roots),
                None,
                "{other}"
            );
        }
        assert_eq!(app_of_environ(b"HOME=/h\0PATH=/bin\0", &roots), None);
    }
}
