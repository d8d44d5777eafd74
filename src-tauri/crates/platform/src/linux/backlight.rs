//! Screen brightness: the kernel's backlight devices (`/sys/class/backlight/<name>/` with
//! `type`, `brightness` and `max_brightness`), read directly, and set through logind's
//! `Session.SetBrightness("backlight", name, value)`, which an unprivileged session may call (the
//! way GNOME does it; writing the sysfs file would need root). Several devices: the one the
//! kernel means for it, as systemd-backlight picks, firmware (ACPI) before platform before raw
//! (the GPU's own register). A machine without one (a desktop whose monitors are set with their
//! own buttons, a virtual machine) says so instead of pretending.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where the kernel lists backlight devices.
pub(crate) const SYSFS: &str = "/sys/class/backlight";

/// One backlight device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Backlight {
    pub name: String,
    /// `firmware`, `platform` or `raw`.
    pub kind: String,
    pub value: u32,
    pub max: u32,
}

impl Backlight {
    /// The level in percent, rounded.
    pub(crate) fn percent(&self) -> u32 {
        ((u64::from(self.value) * 100 + u64::from(self.max) / 2) / u64::from(self.max)) as u32
    }

    /// The device value for `percent` (0-100), rounded.
    pub(crate) fn value_for(&self, percent: u32) -> u32 {
        ((u64::from(percent.min(100)) * u64::from(self.max) + 50) / 100) as u32
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "{}% ({} of {} on {}, {})",
            self.percent(),
            self.value,
            self.max,
            self.name,
            self.kind
        )
    }
}

/// The error of a machine without a backlight.
pub(crate) fn none_here() -> Error {
    Error::PlatformNotSupported {
        what: "brightness",
        platform: "this machine: no backlight device (an external monitor's brightness is set \
                   with its own buttons or menu)",
    }
}

fn rank(kind: &str) -> u8 {
    match kind {
        "firmware" => 0,
        "platform" => 1,
        _ => 2,
    }
}

/// The devices under `root`, the preferred one first; unreadable entries are left out.
pub(crate) fn devices(root: &Path) -> Vec<Backlight> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let read = |dir: &PathBuf, file: &str| {
        std::fs::read_to_string(dir.join(file))
            .ok()
            .map(|t| t.trim().to_string())
    };
    let mut out: Vec<Backlight> = entries
        .flatten()
        .filter_map(|entry| {
            let dir = entry.path();
            let max: u32 = read(&dir, "max_brightness")?.parse().ok()?;
            let value: u32 = read(&dir, "brightness")?.parse().ok()?;
            (max > 0).then(|| Backlight {
                name: entry.file_name().to_string_lossy().into_owned(),
                kind: read(&dir, "type").unwrap_or_else(|| "raw".into()),
                value: value.min(max),
                max,
            })
        })
        .collect();
    out.sort_by(|a, b| (rank(&a.kind), &a.name).cmp(&(rank(&b.kind), &b.name)));
    out
}

/// The device brightness applies to, or why there is none.
pub(crate) fn preferred(root: &Path) -> Result<Backlight> {
    devices(root).into_iter().next().ok_or_else(none_here)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(root: &Path, name: &str, kind: Option<&str>, value: &str, max: &str) {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(kind) = kind {
            std::fs::write(dir.join("type"), format!("{kind}\n")).unwrap();
        }
        std::fs::write(dir.join("brightness"), format!("{value}\n")).unwrap();
        std::fs::write(dir.join("max_brightness"), format!("{max}\n")).unwrap();
    }

    #[test]
    fn firmware_before_platform_before_raw_and_percent_both_ways() {
        let root = tempfile::tempdir().unwrap();
        assert!(matches!(
            preferred(root.path()),
            Err(Error::PlatformNotSupported { .. })
        ));
        device(root.path(), "intel_backlight", Some("raw"), "600", "1200");
        assert_eq!(preferred(root.path()).unwrap().name, "intel_backlight");
        device(root.path(), "dell_backlight", Some("platform"), "3", "15");
        assert_eq!(preferred(root.path()).unwrap().name, "dell_backlight");
        device(root.path(), "acpi_video0", Some("firmware"), "7", "10");
        // A broken entry (max 0, not a number) is skipped.
        device(root.path(), "broken", Some("firmware"), "x", "0");
        let found = preferred(root.path()).unwrap();
        assert_eq!(found.name, "acpi_video0");
        assert_eq!(found.percent(), 70);
        assert_eq!(devices(root.path()).len(), 3);
        let raw = &devices(root.path())[2];
        assert_eq!(raw.percent(), 50);
        assert_eq!(raw.value_for(33), 396);
        assert_eq!(raw.value_for(100), 1200);
        assert_eq!(raw.value_for(250), 1200);
        assert_eq!(raw.value_for(0), 0);
    }
}
