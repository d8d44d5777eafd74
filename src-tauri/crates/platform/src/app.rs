//! Installed applications (Linux: freedesktop desktop entries from the XDG data dirs), launching
//! one with files or URLs, the running ones, and quitting one: politely first (its windows are
//! asked to close and the process gets SIGTERM), by force (SIGKILL) after a timeout.

use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, Result};

/// One installed application.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AppEntry {
    /// The desktop file id (`org.gnome.gedit`).
    pub id: String,
    pub name: String,
    /// The command line template (`gedit %U`).
    pub exec: String,
    pub icon: Option<String>,
    pub categories: Vec<String>,
    /// The X11 class its windows carry, when the entry says.
    pub wm_class: Option<String>,
    pub path: PathBuf,
}

/// A started application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launched {
    pub pid: u32,
    pub argv: Vec<String>,
}

/// Finds, starts and stops applications. Blocking: call from a blocking thread.
pub trait Applications {
    fn installed(&self) -> Result<Vec<AppEntry>> {
        Err(Error::unsupported("listing applications"))
    }
    /// Starts `entry` with `files` (paths or URLs) in place of its field codes.
    fn launch(&self, _entry: &AppEntry, _files: &[String]) -> Result<Launched> {
        Err(Error::unsupported("launching applications"))
    }
    /// Sends the polite (`force == false`) or forceful stop signal.
    fn signal(&self, _pid: u32, _force: bool) -> Result<()> {
        Err(Error::unsupported("quitting applications"))
    }
}

/// The entry a call means: an exact id (with or without `.desktop`), an exact name, else the one
/// whose name or id contains the text (case-insensitive).
pub fn find<'a>(entries: &'a [AppEntry], wanted: &str) -> Result<&'a AppEntry> {
    let wanted = wanted.trim();
    let bare = wanted.strip_suffix(".desktop").unwrap_or(wanted);
    if let Some(e) = entries.iter().find(|e| e.id == bare) {
        return Ok(e);
    }
    if let Some(e) = entries.iter().find(|e| e.name.eq_ignore_ascii_case(bare)) {
        return Ok(e);
    }
    let lower = bare.to_lowercase();
    let matching: Vec<&AppEntry> = entries
        .iter()
        .filter(|e| e.name.to_lowercase().contains(&lower) || e.id.to_lowercase().contains(&lower))
        .collect();
    match matching.as_slice() {
        [one] => Ok(one),
        [] => Err(Error::invalid(format!(
            "no installed application matches {wanted:?}; `os app list` shows them"
        ))),
        several => Err(Error::invalid(format!(
            "{wanted:?} matches several applications ({}); use the id",
            several
                .iter()
                .take(10)
                .map(|e| format!("{} ({})", e.id, e.name))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, name: &str) -> AppEntry {
        AppEntry {
            id: id.into(),
            name: name.into(),
            exec: "x".into(),
            icon: None,
            categories: vec![],
            wm_class: None,
            path: PathBuf::new(),
        }
    }

    #[test]
    fn finds_by_id_name_or_unique_part() {
        let list = vec![
            entry("org.gnome.TextEditor", "Text Editor"),
            entry("firefox", "Firefox Web Browser"),
            entry("org.gnome.Calculator", "Calculator"),
        ];
        assert_eq!(find(&list, "firefox.desktop").unwrap().id, "firefox");
        assert_eq!(
            find(&list, "text editor").unwrap().id,
            "org.gnome.TextEditor"
        );
        assert_eq!(find(&list, "calc").unwrap().id, "org.gnome.Calculator");
        assert!(
            find(&list, "gnome")
                .unwrap_err()
                .to_string()
                .contains("several")
        );
        assert!(
            find(&list, "gimp")
                .unwrap_err()
                .to_string()
                .contains("os app list")
        );
    }
}
