//! Applications from freedesktop desktop entries (`<data dir>/applications/**/*.desktop`, the
//! first data dir wins for an id), started in-process from their Exec line with the field codes
//! (%f %F %u %U %i %c %k) expanded by the desktop-entry crate, and stopped with signals.

use std::collections::HashSet;
use std::process::{Command, Stdio};

use freedesktop_desktop_entry::{DesktopEntry, Iter};

use super::LinuxBackend;
use crate::app::{AppEntry, Applications, Launched};
use crate::error::{Error, Result};

fn locales() -> Vec<String> {
    ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.is_empty())
        .map(|v| v.split(['.', '@']).next().unwrap_or("").to_string())
        .into_iter()
        .filter(|v| !v.is_empty() && v != "C" && v != "POSIX")
        .collect()
}

fn entry_of(entry: &DesktopEntry, locales: &[String]) -> Option<AppEntry> {
    if entry.type_() != Some("Application") || entry.hidden() || entry.no_display() {
        return None;
    }
    let exec = entry.exec()?.to_string();
    Some(AppEntry {
        id: entry.id().to_string(),
        name: entry
            .name(locales)
            .map(|n| n.into_owned())
            .unwrap_or_else(|| entry.id().to_string()),
        exec,
        icon: entry.icon().map(str::to_string),
        categories: entry
            .categories()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect(),
        wm_class: entry.startup_wm_class().map(str::to_string),
        path: entry.path.clone(),
    })
}

impl Applications for LinuxBackend {
    fn installed(&self) -> Result<Vec<AppEntry>> {
        let locales = locales();
        let dirs = self
            .config
            .data_dirs()
            .into_iter()
            .map(|d| d.join("applications"));
        let mut seen = HashSet::new();
        let mut entries = Vec::new();
        for path in Iter::new(dirs) {
            let Ok(entry) = DesktopEntry::from_path(&path, Some(&locales)) else {
                continue;
            };
            // The first data dir to define an id wins, hidden or not (a user's override hides).
            if !seen.insert(entry.id().to_string()) {
                continue;
            }
            entries.extend(entry_of(&entry, &locales));
        }
        entries.sort_by_key(|e| e.name.to_lowercase());
        Ok(entries)
    }

    fn launch(&self, app: &AppEntry, files: &[String]) -> Result<Launched> {
        let locales = locales();
        let entry = DesktopEntry::from_path(&app.path, Some(&locales))
            .map_err(|e| Error::Failed(format!("reading {}: {e}", app.path.display())))?;
        if entry.terminal() {
            return Err(Error::PlatformNotSupported {
                what: "launching a terminal application (Terminal=true)",
                platform: "this desktop tool; run it with the shell tool instead",
            });
        }
        let uris: Vec<&str> = files.iter().map(String::as_str).collect();
        let argv = entry
            .parse_exec_with_uris(&uris, &locales)
            .map_err(|e| Error::Failed(format!("the Exec line of {}: {e}", app.id)))?;
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| Error::Failed(format!("{} has an empty Exec line", app.id)))?;
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(dir) = entry.path().filter(|d| !d.is_empty()) {
            command.current_dir(dir);
        }
        if let Some(display) = &self.config.x11_display {
            command.env("DISPLAY", display);
        }
        if let Some(bus) = &self.config.session_bus_address {
            command.env("DBUS_SESSION_BUS_ADDRESS", bus);
        }
        // Its own process group, so stopping Osprey's turn or terminal does not stop the app.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .map_err(|e| Error::Failed(format!("starting {} ({program}): {e}", app.id)))?;
        let pid = child.id();
        // Reap it when it exits, so it never lingers as a zombie of this process.
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        Ok(Launched { pid, argv })
    }

    fn signal(&self, pid: u32, force: bool) -> Result<()> {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        let raw = i32::try_from(pid).map_err(|_| Error::invalid(format!("bad pid {pid}")))?;
        let signal = if force {
            Signal::SIGKILL
        } else {
            Signal::SIGTERM
        };
        match kill(Pid::from_raw(raw), signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
            Err(nix::errno::Errno::EPERM) => Err(Error::PermissionDenied {
                what: format!("stopping process {pid}"),
                steps: "it belongs to another user; quit it from that user's session".into(),
            }),
            Err(e) => Err(Error::Failed(format!("signalling {pid}: {e}"))),
        }
    }
}
