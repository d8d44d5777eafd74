//! The `os` tool against real parts: a private D-Bus session bus with a notification server, a
//! media player and gnome-keyring on it; an Xvfb display with openbox and GTK windows; desktop
//! entries launched for real; the clipboard read by another X client; Radicale as the CalDAV and
//! CardDAV server of the calendar and contacts; Dovecot and aiosmtpd on loopback for mail;
//! espeak-ng, speech-dispatcher and a null PulseAudio sink for speech; PulseAudio null sinks for
//! the sound output's volume and mute. See `os/harness.rs`.
//! (A test crate's root resolves modules beside it, hence the `#[path]`s.)
#![cfg(target_os = "linux")]

#[allow(dead_code)]
#[path = "os/harness.rs"]
mod harness;

#[path = "os/notification.rs"]
mod notification;

#[path = "os/music.rs"]
mod music;

#[path = "os/audio.rs"]
mod audio;

#[path = "os/keychain.rs"]
mod keychain;

#[path = "os/window.rs"]
mod window;

#[path = "os/app.rs"]
mod app;

#[path = "os/clipboard.rs"]
mod clipboard;

#[path = "os/tool.rs"]
mod tool;

#[path = "os/calendar.rs"]
mod calendar;

#[path = "os/contacts.rs"]
mod contacts;

#[path = "os/desktop_stores.rs"]
mod desktop_stores;

#[path = "os/brightness.rs"]
mod brightness;

#[path = "os/mail.rs"]
mod mail;

#[path = "os/tts.rs"]
mod tts;

#[path = "os/search.rs"]
mod search;
