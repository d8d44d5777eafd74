//! The capability registry: every capability the `os` tool knows, with the platforms that have a
//! backend for it, its category and whether it needs setup. Only capabilities whose platform list
//! includes the running system, and whose category is not switched off, become resources of the
//! tool; a probe (run on demand, never at registration) says whether each works on this machine
//! and, when not, why.

use serde::{Deserialize, Serialize};

/// What kind of thing a capability touches; settings and origin rules switch whole categories off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Facts about the machine, its power state, the keychain.
    System,
    /// Sound and music.
    Media,
    /// The person's documents and files, calendars and contacts.
    Productivity,
    /// The graphical session: clipboard, notifications, windows, applications.
    Desktop,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::System => "system",
            Category::Media => "media",
            Category::Productivity => "productivity",
            Category::Desktop => "desktop",
        }
    }

    pub fn parse(name: &str) -> Option<Category> {
        [
            Category::System,
            Category::Media,
            Category::Productivity,
            Category::Desktop,
        ]
        .into_iter()
        .find(|c| c.as_str().eq_ignore_ascii_case(name.trim()))
    }
}

/// An operating system with (or without) a backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    Linux,
    Macos,
    Windows,
}

impl Platform {
    /// The system this build runs on; `None` for one Osprey has no backends for.
    pub fn current() -> Option<Platform> {
        match std::env::consts::OS {
            "linux" => Some(Platform::Linux),
            "macos" => Some(Platform::Macos),
            "windows" => Some(Platform::Windows),
            _ => None,
        }
    }
}

/// One capability: a resource of the `os` tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capability {
    /// The resource name (`clipboard`).
    pub name: &'static str,
    pub category: Category,
    /// The systems with a working backend.
    pub platforms: &'static [Platform],
    /// True when it works only after the person configures something (an account).
    pub needs_setup: bool,
    /// What it does, for status listings.
    pub summary: &'static str,
}

impl Capability {
    pub fn supported_here(&self) -> bool {
        Platform::current().is_some_and(|p| self.platforms.contains(&p))
    }
}

use Platform::{Linux, Macos, Windows};

/// Every capability, in the order the tool lists them.
pub const CAPABILITIES: &[Capability] = &[
    Capability {
        name: "clipboard",
        category: Category::Desktop,
        platforms: &[Linux, Macos, Windows],
        needs_setup: false,
        summary: "read and write text and PNG images, clear",
    },
    Capability {
        name: "notification",
        category: Category::Desktop,
        platforms: &[Linux],
        needs_setup: false,
        summary: "post notifications with actions, report clicks, close",
    },
    Capability {
        name: "window",
        category: Category::Desktop,
        platforms: &[Linux],
        needs_setup: false,
        summary: "list, focus, move, resize, minimize, maximize, close windows",
    },
    Capability {
        name: "app",
        category: Category::Desktop,
        platforms: &[Linux],
        needs_setup: false,
        summary: "installed applications, launch, running, quit",
    },
    Capability {
        name: "system",
        category: Category::System,
        platforms: &[Linux, Macos, Windows],
        needs_setup: false,
        summary: "OS, CPU, memory, disks, battery, network, appearance; brightness, lock and suspend (Linux)",
    },
    Capability {
        name: "keychain",
        category: Category::System,
        platforms: &[Linux],
        needs_setup: false,
        summary: "secrets Osprey keeps in the system keychain",
    },
    Capability {
        name: "audio",
        category: Category::Media,
        platforms: &[Linux],
        needs_setup: false,
        summary: "the sound output: volume, up, down, mute (PulseAudio or PipeWire)",
    },
    Capability {
        name: "music",
        category: Category::Media,
        platforms: &[Linux],
        needs_setup: false,
        summary: "media players: what is playing, play, pause, next, seek, volume",
    },
    Capability {
        name: "search",
        category: Category::Productivity,
        platforms: &[Linux, Macos, Windows],
        needs_setup: false,
        summary: "find files by name and content",
    },
    Capability {
        name: "calendar",
        category: Category::Productivity,
        platforms: &[Linux, Macos, Windows],
        needs_setup: true,
        summary: "events on CalDAV accounts and the desktop's calendars (Evolution Data Server): list, search, create, update, delete, .ics import/export",
    },
    Capability {
        name: "contacts",
        category: Category::Productivity,
        platforms: &[Linux, Macos, Windows],
        needs_setup: true,
        summary: "contacts on CardDAV accounts and the desktop's address books (Evolution Data Server): list, search, create, update, delete, .vcf import/export",
    },
    Capability {
        name: "mail",
        category: Category::Productivity,
        platforms: &[Linux, Macos, Windows],
        needs_setup: true,
        summary: "mail accounts (IMAP, SMTP): folders, list, search, read, send, reply",
    },
    Capability {
        name: "tts",
        category: Category::Media,
        platforms: &[Linux],
        needs_setup: false,
        summary: "speak text (speech-dispatcher or espeak-ng), voices, stop, save to WAV",
    },
];

/// A capability by resource name.
pub fn capability(name: &str) -> Option<&'static Capability> {
    CAPABILITIES.iter().find(|c| c.name == name)
}

/// Whether a capability works on this machine right now, and why not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Availability {
    pub capability: String,
    pub category: Category,
    pub available: bool,
    /// What it found (the service, the display) or why it does not work and how to fix that.
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_is_named_once_and_categories_parse() {
        let mut names: Vec<_> = CAPABILITIES.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CAPABILITIES.len());
        assert_eq!(Category::parse(" Media "), Some(Category::Media));
        assert_eq!(Category::parse("games"), None);
        assert!(capability("clipboard").unwrap().supported_here());
    }
}
