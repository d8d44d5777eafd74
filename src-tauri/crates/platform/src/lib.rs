//! The `os` tool: the operating system's own capabilities (clipboard, notifications, windows,
//! applications, system facts and session control, the keychain, media players, file search,
//! calendars and contacts on CalDAV/CardDAV servers, mail, text to speech), one resource per
//! capability, listed in a capability registry that says where each works and a probe that says
//! whether it works here and why not. Linux is served in-process over D-Bus (zbus), X11 (x11rb)
//! and maintained crates (arboard, sysinfo, secret-service, ignore/grep); calendars, contacts and
//! mail are the same network code everywhere (reqwest, async-imap, lettre, mail-parser over
//! rustls); macOS and Windows sit behind the same traits and answer `platform_not_supported`
//! where no backend exists yet.
//!
//! This crate must not know about Tauri, apps or the agent loop, must not spawn helper programs
//! (xdotool, wmctrl, notify-send, xdg-open; only the applications the person asks to launch,
//! and espeak-ng, the speech engine itself, when speech-dispatcher does not run) and must not
//! change the process environment: display and bus addresses are passed in.

pub mod app;
pub mod audio;
mod calendar;
pub mod capability;
pub mod clipboard;
pub mod config;
mod contacts;
pub mod dav;
pub mod error;
pub mod keychain;
pub mod mail;
pub mod music;
pub mod notification;
pub mod search;
pub mod system;
mod tls;
pub mod tool;
pub mod tts;
pub mod window;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(not(target_os = "linux"))]
mod unsupported;

pub use capability::{Availability, CAPABILITIES, Capability, Category, Platform};
pub use config::OsConfig;
pub use dav::{DavAccount, DavConfig, DavKind, DavSettings, StaticDavSettings};
pub use error::{Error, Result};
pub use tool::OsTool;

/// The backend of the running platform: every capability trait, implemented where a backend
/// exists and answering `platform_not_supported` elsewhere.
#[cfg(target_os = "linux")]
pub type Backend = linux::LinuxBackend;
#[cfg(not(target_os = "linux"))]
pub type Backend = unsupported::Unsupported;
