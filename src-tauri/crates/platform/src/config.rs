//! What the `os` tool is told about its surroundings. Display and bus addresses are passed in
//! explicitly (this crate never changes the process environment); `None` means the usual place.

use std::path::PathBuf;
use std::time::Duration;

use crate::capability::Category;

#[derive(Clone, Debug)]
pub struct OsConfig {
    /// The X11 display for windows (`":0"`); `None`: `DISPLAY`. The clipboard always follows
    /// the process's own `DISPLAY` / `WAYLAND_DISPLAY` (arboard connects there).
    pub x11_display: Option<String>,
    /// The D-Bus session bus (notifications, keychain, media players, portal); `None`: the
    /// process's session bus.
    pub session_bus_address: Option<String>,
    /// The D-Bus system bus (UPower, NetworkManager, logind); `None`: the system bus.
    pub system_bus_address: Option<String>,
    /// Where the kernel lists backlight devices (`/sys/class/backlight`, Linux); `None`: there.
    /// Tests give a folder laid out the same way.
    pub backlight_dir: Option<PathBuf>,
    /// Where desktop entries are looked up (each dir's `applications/`), most important first;
    /// `None`: `XDG_DATA_HOME` then `XDG_DATA_DIRS` (the spec's defaults when unset).
    pub data_dirs: Option<Vec<PathBuf>>,
    /// Where file search looks when the call names no folder; empty: the home folder.
    pub search_roots: Vec<PathBuf>,
    /// Categories switched off: their resources are not offered at all.
    pub disabled_categories: Vec<Category>,
    /// How long `app quit` waits for a polite exit before it kills.
    pub quit_timeout: Duration,
    /// How long one D-Bus call may take before it is reported as a timeout.
    pub bus_timeout: Duration,
    /// The sound server (PulseAudio, or PipeWire through pipewire-pulse) as `unix:/path`: the
    /// outputs of `audio`, and where espeak-ng plays (given to it as `PULSE_SERVER`); `None`:
    /// the session's (`PULSE_SERVER`, else `$XDG_RUNTIME_DIR/pulse/native`).
    pub pulse_server: Option<String>,
    /// The CalDAV/CardDAV accounts of the calendar and contacts resources.
    pub dav: crate::dav::DavConfig,
    /// Mail accounts (setting `os.mail`), where their passwords come from, the limits.
    pub mail: crate::mail::MailConfig,
    /// Text to speech: speech-dispatcher's socket, espeak-ng.
    pub tts: crate::tts::SpeechConfig,
}

impl Default for OsConfig {
    fn default() -> Self {
        OsConfig {
            x11_display: None,
            session_bus_address: None,
            system_bus_address: None,
            backlight_dir: None,
            data_dirs: None,
            search_roots: Vec::new(),
            disabled_categories: Vec::new(),
            quit_timeout: Duration::from_secs(5),
            bus_timeout: Duration::from_secs(5),
            pulse_server: None,
            dav: crate::dav::DavConfig::default(),
            mail: crate::mail::MailConfig::default(),
            tts: crate::tts::SpeechConfig::default(),
        }
    }
}

impl OsConfig {
    /// The desktop-entry data dirs: configured, or XDG's.
    pub fn data_dirs(&self) -> Vec<PathBuf> {
        if let Some(dirs) = &self.data_dirs {
            return dirs.clone();
        }
        let mut dirs = Vec::new();
        let home = home_dir();
        match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => dirs.push(PathBuf::from(dir)),
            None => dirs.extend(home.map(|h| h.join(".local/share"))),
        }
        let system = std::env::var("XDG_DATA_DIRS")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "/usr/local/share:/usr/share".into());
        dirs.extend(
            system
                .split(':')
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
        );
        dirs
    }

    /// The roots file search walks when the call names none.
    pub fn search_roots(&self) -> Vec<PathBuf> {
        if !self.search_roots.is_empty() {
            return self.search_roots.clone();
        }
        home_dir().into_iter().collect()
    }
}

/// The person's home folder.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" })
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
