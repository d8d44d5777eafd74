//! The `os` domain tool: one resource per capability of the registry that this platform has a
//! backend for (minus switched-off categories), routed to the platform's backend. Nothing
//! connects until a call needs it, so the tool registers on a machine without a display or a
//! session bus and answers there with `service_unavailable` and the reason.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::future::BoxFuture;
use osprey_tools::{
    ApprovalNeed, Call, CallFacts, Domain, DomainTool, FieldType, PathGuard, ToolContext,
};
use osprey_types::{ContentBlock, ErrorCode, ToolResult};
use serde_json::{Value, json};

use crate::Backend;
use crate::app::{self, Applications as _};
use crate::capability::{Availability, CAPABILITIES, Capability};
use crate::clipboard::SharedClipboard;
use crate::config::OsConfig;
use crate::error::{Error, Result};
use crate::keychain::{Keychain as _, check_key};
use crate::music::{MediaCommand, MediaPlayers as _};
use crate::notification::{Notification, Notifications as _, Outcome, Urgency};
use crate::search::{self, Allowed, FileIndex, IndexState, SearchRequest};
use crate::system::{SystemServices as _, machine_facts};
use crate::window::{self, WindowOp, Windows as _};

mod audio_actions;
mod mail_actions;
mod speech_actions;

/// The `os` tool.
#[derive(Debug)]
pub struct OsTool {
    domain: Domain,
    backend: Arc<Backend>,
    clipboard: SharedClipboard,
    guard: Option<PathGuard>,
    dav: crate::dav::Dav,
    mail: crate::mail::Mail,
}

impl OsTool {
    /// The tool with the capabilities this platform has, minus the configured categories.
    pub fn new(config: OsConfig) -> OsTool {
        let offered: Vec<&'static Capability> = CAPABILITIES
            .iter()
            .filter(|c| c.supported_here() && !config.disabled_categories.contains(&c.category))
            .collect();
        OsTool {
            domain: os_domain(&offered),
            dav: crate::dav::Dav::new(config.dav.clone(), config.session_bus_address.clone()),
            mail: crate::mail::Mail::new(config.mail.clone()),
            backend: Arc::new(Backend::new(config)),
            clipboard: SharedClipboard::default(),
            guard: None,
        }
    }

    /// Checks file paths (clipboard images, search folders, mail attachments, speech files)
    /// against the credential and Osprey-data rules, as the `file` tool does; search skips what
    /// it refuses.
    pub fn with_path_guard(mut self, guard: PathGuard) -> OsTool {
        self.guard = Some(guard);
        self
    }

    /// The capabilities offered as resources.
    pub fn offered(&self) -> Vec<&'static Capability> {
        self.domain
            .resources
            .iter()
            .filter_map(|r| crate::capability::capability(&r.name))
            .collect()
    }

    /// Every capability: whether it works on this machine, and why not. Probes run now (each
    /// within the bus timeout), not at registration.
    pub async fn status(&self) -> Vec<Availability> {
        let mut out = Vec::new();
        for capability in CAPABILITIES {
            let result = if !capability.supported_here() {
                Err(Error::unsupported("this capability"))
            } else if self
                .backend
                .config()
                .disabled_categories
                .contains(&capability.category)
            {
                Err(Error::NotConfigured(format!(
                    "the {} category is switched off in settings",
                    capability.category.as_str()
                )))
            } else {
                self.probe(capability.name).await
            };
            out.push(Availability {
                capability: capability.name.to_string(),
                category: capability.category,
                available: result.is_ok(),
                detail: result.unwrap_or_else(|e| format!("{}: {e}", e.code())),
            });
        }
        out
    }

    async fn probe(&self, name: &str) -> Result<String> {
        match name {
            "clipboard" => {
                self.blocking_clipboard(|c| c.read_text().map(drop)).await?;
                Ok("the clipboard answers".into())
            }
            "system" => {
                let mut parts = vec!["system facts".to_string()];
                let brightness = self.brightness_fact().await;
                for (what, fact) in [
                    ("battery", self.backend.power().await),
                    ("network", self.backend.network().await),
                    ("appearance", self.backend.appearance().await),
                    ("brightness", brightness),
                ] {
                    parts.push(format!(
                        "{what}: {}",
                        fact.unwrap_or_else(|| "no service".into())
                    ));
                }
                Ok(parts.join("; "))
            }
            "mail" => self.mail.probe().await,
            "search" => {
                let roots = self.backend.config().search_roots();
                if roots.iter().any(|r| r.is_dir()) {
                    let shown = |paths: &[PathBuf]| {
                        let shown: Vec<String> =
                            paths.iter().map(|r| r.display().to_string()).collect();
                        shown.join(", ")
                    };
                    let index = match self.backend.index_state(false).await {
                        IndexState::Ready { index, trees } if !trees.is_empty() => {
                            format!("; the desktop's index ({index}) holds {}", shown(&trees))
                        }
                        IndexState::Ready { index, .. } => {
                            format!("; the desktop's index ({index}) holds no whole folder")
                        }
                        IndexState::Unavailable(why) => format!("; {why}"),
                        IndexState::Absent => "; no desktop index runs".into(),
                    };
                    Ok(format!("searches {}{index}", shown(&roots)))
                } else {
                    Err(Error::NotConfigured(
                        "no folder to search: set HOME or the search roots".into(),
                    ))
                }
            }
            "window" => {
                let windows = self.blocking(|b| b.windows()).await?;
                Ok(format!(
                    "window manager answers; {}",
                    count(windows.len(), "window")
                ))
            }
            "app" => {
                let installed = self.blocking(|b| b.installed()).await?.len();
                Ok(format!(
                    "{} installed",
                    count(installed, "desktop application")
                ))
            }
            "calendar" => self.dav.probe(crate::dav::Kind::Calendar).await,
            "contacts" => self.dav.probe(crate::dav::Kind::Contacts).await,
            other => self.backend.probe(other).await,
        }
    }

    /// The brightness, or why there is none (no backlight device, no backend); `None` when
    /// reading it failed otherwise.
    async fn brightness_fact(&self) -> Option<String> {
        match self.backend.brightness().await {
            Ok(level) => Some(level),
            Err(why @ Error::PlatformNotSupported { .. }) => Some(why.to_string()),
            Err(_) => None,
        }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Backend) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let backend = self.backend.clone();
        tokio::task::spawn_blocking(move || work(&backend))
            .await
            .map_err(|e| Error::Failed(format!("the worker thread failed: {e}")))?
    }

    async fn blocking_clipboard<T: Send + 'static>(
        &self,
        work: impl FnOnce(&SharedClipboard) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let clipboard = self.clipboard.clone();
        tokio::task::spawn_blocking(move || work(&clipboard))
            .await
            .map_err(|e| Error::Failed(format!("the clipboard thread failed: {e}")))?
    }

    fn check_path(&self, path: &str, write: bool) -> Result<PathBuf> {
        let path = PathBuf::from(path);
        if !path.is_absolute() {
            return Err(Error::invalid(format!(
                "`path` must be absolute, got {}",
                path.display()
            )));
        }
        match &self.guard {
            None => Ok(path),
            Some(guard) => {
                let checked = if write {
                    guard.check_write(&path)
                } else {
                    guard.check_read(&path)
                };
                checked.map_err(|refusal| Error::PermissionDenied {
                    what: format!(
                        "{} {}",
                        if write { "writing" } else { "reading" },
                        path.display()
                    ),
                    steps: format!("{}; use another path", refusal.message),
                })
            }
        }
    }
}

fn os_domain(offered: &[&Capability]) -> Domain {
    use ApprovalNeed::{None as Free, Required};
    let mut domain = Domain::new(
        "os",
        "Use the operating system itself: clipboard, notifications, windows, installed apps, \
         system facts, the keychain, media players, file search, calendar, contacts, mail, \
         speech. `capability list` says which work on this machine and why others do not. Errors \
         carry a code \
         (service_unavailable, permission_denied with steps, platform_not_supported, ...).",
    )
    // Large, and many conversations never touch the operating system: models get the short
    // form until they first call it (tests/os/tool.rs measures both).
    .deferred()
    .resource(
        "capability",
        &["capabilities", "status"],
        &[("list", "Which capabilities work here, and why not", Free)],
    );
    let has = |name: &str| offered.iter().any(|c| c.name == name);
    if has("clipboard") {
        domain = domain.resource(
            "clipboard",
            &["pasteboard"],
            &[
                (
                    "read",
                    "The clipboard's text, or its image (format image)",
                    Free,
                ),
                (
                    "write",
                    "Put text, or a PNG file (format image, path), on the clipboard",
                    Required,
                ),
                ("clear", "Empty the clipboard", Required),
            ],
        );
    }
    if has("notification") {
        domain = domain.resource(
            "notification",
            &["notifications", "notify"],
            &[
                (
                    "send",
                    "Show a notification; with actions and wait, report the click",
                    Free,
                ),
                (
                    "result",
                    "Which action the person clicked on notification_id",
                    Free,
                ),
                ("close", "Take notification_id down", Free),
            ],
        );
    }
    if has("window") {
        domain = domain.resource(
            "window",
            &["windows"],
            &[
                (
                    "list",
                    "Open windows: id, title, app, pid, geometry, workspace, focus",
                    Free,
                ),
                ("focus", "Raise and focus", Required),
                ("move", "Move to x, y", Required),
                ("resize", "Resize to width, height", Required),
                ("minimize", "Minimize", Required),
                ("maximize", "Maximize", Required),
                ("restore", "Undo minimize/maximize and focus", Required),
                (
                    "close",
                    "Ask it to close (its app may ask to save)",
                    Required,
                ),
            ],
        );
    }
    if has("app") {
        domain = domain.resource(
            "app",
            &["apps", "application", "applications"],
            &[
                ("list", "Installed applications: id, name, categories", Free),
                ("running", "Applications with open windows", Free),
                (
                    "launch",
                    "Start one by id or name, optionally with files or URLs",
                    Required,
                ),
                (
                    "quit",
                    "Close its windows, then stop it (forcefully after a timeout)",
                    Required,
                ),
            ],
        );
    }
    if has("system") {
        domain = domain.resource(
            "system",
            &["machine", "computer"],
            &[
                (
                    "info",
                    "OS, kernel, host, CPU, memory, disks, uptime, battery, network, dark/light",
                    Free,
                ),
                (
                    "brightness",
                    "Screen brightness in percent (where there is a backlight)",
                    Free,
                ),
                (
                    "set_brightness",
                    "Set the screen brightness to percent (0-100)",
                    Required,
                ),
                ("lock", "Lock the screen", Required),
                ("suspend", "Suspend the machine", Required),
            ],
        );
    }
    if has("keychain") {
        domain = domain.resource(
            "keychain",
            &["secret", "secrets", "keyring", "password"],
            &[
                ("list", "Names of the secrets Osprey keeps", Free),
                ("read", "One secret's value", Required),
                ("store", "Keep a secret under key (replaces)", Required),
                ("delete", "Forget a secret", Required),
            ],
        );
    }
    if has("audio") {
        domain = audio_actions::resource(domain);
    }
    if has("music") {
        domain = domain.resource(
            "music",
            &["media", "player"],
            &[
                ("status", "Players and what they are playing", Free),
                ("play", "Play", Required),
                ("pause", "Pause", Required),
                ("toggle", "Play/pause", Required),
                ("stop", "Stop", Required),
                ("next", "Next track", Required),
                ("previous", "Previous track", Required),
                ("seek", "Move by seconds (negative: back)", Required),
                ("volume", "Set volume to percent", Required),
            ],
        );
    }
    if has("search") {
        domain = domain.resource(
            "search",
            &["files", "find"],
            &[("files", "Find files by name (query) and/or content", Free)],
        );
    }
    if has("calendar") {
        domain = domain.resource(
            "calendar",
            &["calendars", "events", "event"],
            &[
                ("calendars", "Calendars", Free),
                ("list", "Events, start to end (default 30 days)", Required),
                ("search", "Events with query", Required),
                ("create", "title, start; no duplicate if repeated", Required),
                ("update", "By uid", Required),
                ("delete", "By uid", Required),
                ("import", "From .ics path", Required),
                ("export", "To .ics path", Required),
            ],
        );
    }
    if has("contacts") {
        domain = domain.resource(
            "contacts",
            &["contact", "addressbook", "people"],
            &[
                ("books", "Address books", Free),
                ("list", "All contacts", Required),
                ("search", "By name, email, phone (query)", Required),
                ("create", "name, emails, phones, org", Required),
                ("update", "By uid", Required),
                ("delete", "By uid", Required),
                ("import", "From .vcf path", Required),
                ("export", "To .vcf path", Required),
            ],
        );
    }
    if has("mail") {
        domain = mail_actions::resource(domain);
    }
    if has("tts") {
        domain = speech_actions::resource(domain);
    }
    let domain = domain
        .field(
            "text",
            FieldType::String,
            "the text: clipboard write, mail send/reply body, tts speak/save",
        )
        .field(
            "format",
            FieldType::String,
            "clipboard: text or image (PNG)",
        )
        .one_of(&["text", "image"])
        .default_value(json!("text"))
        .field(
            "path",
            FieldType::String,
            "Absolute path: clipboard image file to write from or save to; search folder; \
             .ics/.vcf file to import or export",
        )
        .field("title", FieldType::String, "notification or event title")
        .required_for(&["notification.send", "calendar.create"])
        .field("body", FieldType::String, "notification body")
        .field("urgency", FieldType::String, "notification urgency")
        .one_of(&["low", "normal", "critical"])
        .field("icon", FieldType::String, "notification icon name or file")
        .field(
            "actions",
            FieldType::Array(Box::new(FieldType::String)),
            "notification button labels",
        )
        .field(
            "wait",
            FieldType::Integer,
            "notification send/result: seconds to wait for a click (max 300)",
        )
        .field(
            "notification_id",
            FieldType::Integer,
            "id from notification send",
        )
        .required_for(&["notification.close", "notification.result"])
        .field("window", FieldType::String, "window id or title (part)")
        .required_for(&[
            "window.focus",
            "window.move",
            "window.resize",
            "window.minimize",
            "window.maximize",
            "window.restore",
            "window.close",
        ])
        .field("x", FieldType::Integer, "window move: left, screen pixels")
        .required_for(&["window.move"])
        .field("y", FieldType::Integer, "window move: top, screen pixels")
        .required_for(&["window.move"])
        .field("width", FieldType::Integer, "window resize: pixels")
        .required_for(&["window.resize"])
        .field("height", FieldType::Integer, "window resize: pixels")
        .required_for(&["window.resize"])
        .field("id", FieldType::String, "app: desktop id or name")
        .required_for(&["app.launch"])
        .field(
            "files",
            FieldType::Array(Box::new(FieldType::String)),
            "app launch: files or URLs to open; mail send/reply: files to attach",
        )
        .field("pid", FieldType::Integer, "app quit: process id (else id)")
        .field(
            "force",
            FieldType::Boolean,
            "app quit: kill if still running after the timeout",
        )
        .default_value(json!(true))
        .field("key", FieldType::String, "keychain: the secret's name")
        .required_for(&["keychain.read", "keychain.store", "keychain.delete"])
        .field("secret", FieldType::String, "keychain store: the value")
        .required_for(&["keychain.store"])
        .field(
            "player",
            FieldType::String,
            "music: player id or name (default: the playing one)",
        )
        .field("seconds", FieldType::Number, "music seek: seconds")
        .required_for(&["music.seek"])
        .field(
            "percent",
            FieldType::Number,
            "music volume: 0-100; audio set: 0-150; audio up/down: points (default 10); system \
             set_brightness: 0-100",
        )
        .required_for(&["music.volume", "system.set_brightness"])
        .field(
            "query",
            FieldType::String,
            "search: file name part or glob (*.pdf); calendar, contacts: text to find; mail \
             search: words; tts voices: language or name",
        )
        .field(
            "content",
            FieldType::String,
            "search: regex the content must match",
        )
        .field(
            "limit",
            FieldType::Integer,
            "search, mail, tts voices: most results",
        )
        .default_value(json!(20))
        .field("hidden", FieldType::Boolean, "search: include hidden files")
        .field(
            "index",
            FieldType::Boolean,
            "search: false reads every file instead of the desktop's index",
        )
        .field(
            "start",
            FieldType::String,
            "calendar: event start, or list range start (2026-03-29T10:00 local or in \
             timezone, ...+02:00, or a date)",
        )
        .required_for(&["calendar.create"])
        .field(
            "end",
            FieldType::String,
            "calendar: event end (all_day: last day), or range end",
        )
        .field("all_day", FieldType::Boolean, "calendar: all-day event")
        .field(
            "timezone",
            FieldType::String,
            "calendar: IANA zone the event keeps (default local)",
        )
        .field("location", FieldType::String, "calendar: event location")
        .field(
            "description",
            FieldType::String,
            "calendar: event description; contacts: note",
        )
        // vCard's name for a contact's free text.
        .field_alias(&["note"])
        .field(
            "uid",
            FieldType::String,
            "calendar, contacts: for update, delete (optional for create)",
        )
        .field("calendar", FieldType::String, "calendar name")
        .field("book", FieldType::String, "contacts: address book name")
        .field(
            "account",
            FieldType::String,
            "calendar, contacts, mail: account name (default: the first)",
        )
        .field("name", FieldType::String, "contacts: full name")
        .required_for(&["contacts.create"])
        .field(
            "emails",
            FieldType::Array(Box::new(FieldType::String)),
            "contacts: email addresses (replace all)",
        )
        .field(
            "phones",
            FieldType::Array(Box::new(FieldType::String)),
            "contacts: phone numbers (replace all)",
        )
        .field("org", FieldType::String, "contacts: organisation");
    let domain = if has("mail") {
        mail_actions::fields(domain)
    } else {
        domain
    };
    let domain = if has("tts") {
        speech_actions::fields(domain)
    } else {
        domain
    };
    let domain = if has("audio") {
        audio_actions::fields(domain)
    } else {
        domain
    };
    // Mail, calendars and contacts reach servers elsewhere; without them the tool only touches
    // this machine.
    if has("mail") || has("calendar") || has("contacts") {
        domain
    } else {
        domain.closed_world()
    }
}

pub(crate) fn text(message: impl Into<String>) -> Result<ToolResult> {
    Ok(ToolResult::text(message))
}

/// `1 message`, `2 messages`: a number and the word for what it counts, for the answers and
/// status texts (the word must take a plain `s` in the plural).
pub(crate) fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

fn int(call: &Call, key: &str) -> Option<i64> {
    call.input.get(key).and_then(Value::as_i64)
}

fn strings(call: &Call, key: &str) -> Vec<String> {
    call.input
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn image_result(message: String, png: &[u8]) -> ToolResult {
    ToolResult {
        content: vec![
            ContentBlock::Text { text: message },
            ContentBlock::Image {
                mime_type: "image/png".into(),
                data: base64::engine::general_purpose::STANDARD.encode(png),
            },
        ],
        is_error: false,
        code: None,
        ..Default::default()
    }
}

impl OsTool {
    async fn capability(&self) -> Result<ToolResult> {
        let lines: Vec<String> = self
            .status()
            .await
            .into_iter()
            .map(|a| {
                format!(
                    "{} ({}): {} - {}",
                    a.capability,
                    a.category.as_str(),
                    if a.available {
                        "available"
                    } else {
                        "unavailable"
                    },
                    a.detail
                )
            })
            .collect();
        text(lines.join("\n"))
    }

    async fn clipboard(&self, call: &Call) -> Result<ToolResult> {
        let image = call.str("format") == Some("image");
        match call.action() {
            "read" if image => {
                let save_to = call
                    .str("path")
                    .map(|p| self.check_path(p, true))
                    .transpose()?;
                let Some(found) = self.blocking_clipboard(|c| c.read_image()).await? else {
                    return text("The clipboard holds no image.");
                };
                let message = format!("Clipboard image {}x{}", found.width, found.height);
                match save_to {
                    Some(path) => {
                        std::fs::write(&path, &found.png).map_err(|e| {
                            Error::Failed(format!("writing {}: {e}", path.display()))
                        })?;
                        text(format!("{message} saved to {}", path.display()))
                    }
                    None => Ok(image_result(message, &found.png)),
                }
            }
            "read" => match self.blocking_clipboard(|c| c.read_text()).await? {
                Some(content) => text(content),
                None => text("The clipboard holds no text."),
            },
            "write" if image => {
                let path = call.str("path").ok_or_else(|| {
                    Error::invalid("clipboard write with format image needs `path`: a PNG file")
                })?;
                let path = self.check_path(path, false)?;
                let bytes = std::fs::read(&path)
                    .map_err(|e| Error::invalid(format!("reading {}: {e}", path.display())))?;
                let (w, h) = self
                    .blocking_clipboard(move |c| c.write_image(&bytes))
                    .await?;
                text(format!("Put a {w}x{h} image on the clipboard."))
            }
            "write" => {
                let content = call
                    .input
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        Error::invalid("clipboard write needs `text` (or format image with `path`)")
                    })?;
                let content = content.to_string();
                let count = content.chars().count();
                self.blocking_clipboard(move |c| c.write_text(&content))
                    .await?;
                text(format!("Put {count} characters on the clipboard."))
            }
            "clear" => {
                self.blocking_clipboard(|c| c.clear()).await?;
                text("Cleared the clipboard.")
            }
            other => Err(Error::invalid(format!("unknown clipboard action {other}"))),
        }
    }

    async fn notification(&self, ctx: &ToolContext, call: &Call) -> Result<ToolResult> {
        let wait = || {
            let asked = Duration::from_secs(int(call, "wait").unwrap_or(0).clamp(0, 300) as u64);
            // Leave the registry a moment to return the answer before its own deadline.
            let left = ctx
                .deadline
                .saturating_duration_since(Instant::now())
                .saturating_sub(Duration::from_millis(500));
            asked.min(left)
        };
        let describe = |id: u32, outcome: Outcome| match outcome {
            Outcome::Pending => format!("Notification {id} is showing; no action clicked yet."),
            Outcome::Clicked(action) => {
                format!("Notification {id}: the person clicked {action:?}.")
            }
            Outcome::Closed(why) => format!("Notification {id} closed ({why}) without a click."),
        };
        match call.action() {
            "send" => {
                let urgency = call
                    .str("urgency")
                    .and_then(Urgency::parse)
                    .unwrap_or_default();
                let actions = strings(call, "actions");
                if actions.len() > 8 {
                    return Err(Error::invalid("at most 8 notification actions"));
                }
                let notification = Notification {
                    title: call.str("title").unwrap_or_default().to_string(),
                    body: call.str("body").unwrap_or_default().to_string(),
                    urgency,
                    icon: call.str("icon").map(str::to_string),
                    actions,
                    expire: None,
                };
                let id = self.backend.send(&notification).await?;
                let wait = wait();
                if wait.is_zero() {
                    return text(format!("Sent notification {id}."));
                }
                let outcome = self.backend.outcome(id, wait).await?;
                text(format!("Sent. {}", describe(id, outcome)))
            }
            "result" => {
                let id = notification_id(call)?;
                let outcome = self.backend.outcome(id, wait()).await?;
                text(describe(id, outcome))
            }
            "close" => {
                let id = notification_id(call)?;
                self.backend.close(id).await?;
                text(format!("Closed notification {id}."))
            }
            other => Err(Error::invalid(format!(
                "unknown notification action {other}"
            ))),
        }
    }

    async fn window(&self, call: &Call) -> Result<ToolResult> {
        let windows = self.blocking(|b| b.windows()).await?;
        if call.action() == "list" {
            if windows.is_empty() {
                return text("No windows.");
            }
            return text(
                windows
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        let target = window::find(&windows, call.str("window").unwrap_or_default())?.clone();
        let coordinate = |key: &str| {
            int(call, key)
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| Error::invalid(format!("`{key}` must be a pixel coordinate")))
        };
        let size = |key: &str| {
            int(call, key)
                .and_then(|v| u32::try_from(v).ok())
                .filter(|v| (1..=32_767).contains(v))
                .ok_or_else(|| Error::invalid(format!("`{key}` must be 1 to 32767 pixels")))
        };
        let op = match call.action() {
            "focus" => WindowOp::Focus,
            "move" => WindowOp::Move {
                x: coordinate("x")?,
                y: coordinate("y")?,
            },
            "resize" => WindowOp::Resize {
                width: size("width")?,
                height: size("height")?,
            },
            "minimize" => WindowOp::Minimize,
            "maximize" => WindowOp::Maximize,
            "restore" => WindowOp::Restore,
            "close" => WindowOp::Close,
            other => return Err(Error::invalid(format!("unknown window action {other}"))),
        };
        let id = target.id;
        self.blocking(move |b| b.apply(id, op)).await?;
        text(format!(
            "Asked the window manager to {} {} {:?}.",
            call.action(),
            target.id,
            target.title
        ))
    }

    async fn app(&self, call: &Call) -> Result<ToolResult> {
        match call.action() {
            "list" => {
                let entries = self.blocking(|b| b.installed()).await?;
                if entries.is_empty() {
                    return text("No desktop applications found.");
                }
                text(
                    entries
                        .iter()
                        .map(|e| format!("{} {:?} [{}]", e.id, e.name, e.categories.join(",")))
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            }
            "launch" => {
                let wanted = call.str("id").unwrap_or_default().to_string();
                let files = strings(call, "files");
                let launched = self
                    .blocking(move |b| {
                        let entries = b.installed()?;
                        let entry = app::find(&entries, &wanted)?;
                        let launched = b.launch(entry, &files)?;
                        Ok((entry.id.clone(), launched))
                    })
                    .await?;
                text(format!(
                    "Started {} (pid {}): {}",
                    launched.0,
                    launched.1.pid,
                    launched.1.argv.join(" ")
                ))
            }
            "running" => {
                let windows = self.blocking(|b| b.windows()).await?;
                let mut apps: Vec<(String, Option<u32>, Vec<String>)> = Vec::new();
                for w in windows {
                    match apps.iter_mut().find(|(a, p, _)| *a == w.app && *p == w.pid) {
                        Some(entry) => entry.2.push(w.title),
                        None => apps.push((w.app, w.pid, vec![w.title])),
                    }
                }
                if apps.is_empty() {
                    return text("No applications with windows.");
                }
                text(
                    apps.iter()
                        .map(|(app, pid, titles)| {
                            format!(
                                "{app} pid {}: {}",
                                pid.map_or("?".into(), |p| p.to_string()),
                                titles
                                    .iter()
                                    .map(|t| format!("{t:?}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            }
            "quit" => self.quit(call).await,
            other => Err(Error::invalid(format!("unknown app action {other}"))),
        }
    }

    /// Quits politely (close its windows, SIGTERM), waits, then kills if asked to.
    async fn quit(&self, call: &Call) -> Result<ToolResult> {
        let windows = self.blocking(|b| b.windows()).await.unwrap_or_default();
        let pid = match (int(call, "pid"), call.str("id")) {
            (Some(pid), _) => u32::try_from(pid).map_err(|_| Error::invalid("bad `pid`"))?,
            (None, Some(wanted)) => {
                let lower = wanted.to_lowercase();
                let entries = self.blocking(|b| b.installed()).await.unwrap_or_default();
                let class = app::find(&entries, wanted)
                    .ok()
                    .and_then(|e| e.wm_class.clone())
                    .map(|c| c.to_lowercase());
                let pids: Vec<u32> = windows
                    .iter()
                    .filter(|w| {
                        let app = w.app.to_lowercase();
                        app == lower || class.as_deref() == Some(app.as_str())
                    })
                    .filter_map(|w| w.pid)
                    .collect();
                match pids.as_slice() {
                    [] => {
                        return Err(Error::invalid(format!(
                            "no running application with windows matches {wanted:?}; give `pid`, \
                             or see `os app running`"
                        )));
                    }
                    [first, rest @ ..] if rest.iter().all(|p| p == first) => *first,
                    _ => {
                        return Err(Error::invalid(format!(
                            "{wanted:?} matches several processes ({pids:?}); give `pid`"
                        )));
                    }
                }
            }
            (None, None) => return Err(Error::invalid("app quit needs `pid` or `id`")),
        };
        if pid <= 1 || pid == std::process::id() {
            return Err(Error::invalid(format!("refusing to stop process {pid}")));
        }
        let force = call.bool("force").unwrap_or(true);
        for w in windows.iter().filter(|w| w.pid == Some(pid)) {
            let id = w.id;
            let _ = self.blocking(move |b| b.apply(id, WindowOp::Close)).await;
        }
        self.blocking(move |b| b.signal(pid, false)).await?;
        let timeout = self.backend.config().quit_timeout;
        if wait_for_exit(pid, timeout).await {
            return text(format!("Process {pid} quit."));
        }
        if !force {
            return Err(Error::Timeout {
                what: format!("process {pid} quitting"),
                after: timeout,
            });
        }
        self.blocking(move |b| b.signal(pid, true)).await?;
        if wait_for_exit(pid, Duration::from_secs(2)).await {
            text(format!(
                "Process {pid} did not quit within {timeout:?}; it was killed."
            ))
        } else {
            Err(Error::Failed(format!("process {pid} survived SIGKILL")))
        }
    }

    async fn system(&self, call: &Call) -> Result<ToolResult> {
        match call.action() {
            "info" => {
                let mut facts = tokio::task::spawn_blocking(machine_facts)
                    .await
                    .map_err(|e| Error::Failed(e.to_string()))?;
                let (power, network, appearance) = tokio::join!(
                    self.backend.power(),
                    self.backend.network(),
                    self.backend.appearance()
                );
                let brightness = self.brightness_fact().await;
                for (what, fact) in [
                    ("power", power),
                    ("network", network),
                    ("appearance", appearance),
                    ("brightness", brightness),
                ] {
                    facts.push_str(&format!(
                        "\n{what}: {}",
                        fact.unwrap_or_else(|| "unknown (no service answers)".into())
                    ));
                }
                text(facts)
            }
            "brightness" => text(format!(
                "Screen brightness: {}",
                self.backend.brightness().await?
            )),
            "set_brightness" => {
                let percent = call
                    .input
                    .get("percent")
                    .and_then(Value::as_f64)
                    .filter(|p| (0.0..=100.0).contains(p))
                    .ok_or_else(|| Error::invalid("set_brightness needs `percent`, 0 to 100"))?;
                text(self.backend.set_brightness(percent.round() as u32).await?)
            }
            "lock" => text(self.backend.lock().await?),
            "suspend" => text(self.backend.suspend().await?),
            other => Err(Error::invalid(format!("unknown system action {other}"))),
        }
    }

    async fn keychain(&self, call: &Call) -> Result<ToolResult> {
        let key = || check_key(call.str("key").unwrap_or_default());
        match call.action() {
            "list" => {
                let keys = self.backend.keys().await?;
                if keys.is_empty() {
                    return text("Osprey keeps no secrets in the keychain.");
                }
                text(keys.join("\n"))
            }
            "read" => {
                let key = key()?;
                match self.backend.read(key).await? {
                    Some(secret) => text(secret),
                    None => Err(Error::invalid(format!(
                        "no secret named {key:?}; `os keychain list` shows the names"
                    ))),
                }
            }
            "store" => {
                let key = key()?;
                let secret = call
                    .input
                    .get("secret")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if secret.is_empty() || secret.len() > 64 * 1024 {
                    return Err(Error::invalid("`secret` must be 1 byte to 64 KiB"));
                }
                self.backend.store(key, secret).await?;
                text(format!("Stored the secret {key:?}."))
            }
            "delete" => {
                let key = key()?;
                if self.backend.delete(key).await? {
                    text(format!("Deleted the secret {key:?}."))
                } else {
                    Err(Error::invalid(format!("no secret named {key:?}")))
                }
            }
            other => Err(Error::invalid(format!("unknown keychain action {other}"))),
        }
    }

    async fn music(&self, call: &Call) -> Result<ToolResult> {
        let number = |key: &str| call.input.get(key).and_then(Value::as_f64);
        let command = match call.action() {
            "status" => {
                let players = self.backend.players().await?;
                if players.is_empty() {
                    return text("No media player is running.");
                }
                return text(
                    players
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
            "play" => MediaCommand::Play,
            "pause" => MediaCommand::Pause,
            "toggle" => MediaCommand::Toggle,
            "stop" => MediaCommand::Stop,
            "next" => MediaCommand::Next,
            "previous" => MediaCommand::Previous,
            "seek" => MediaCommand::Seek(
                number("seconds")
                    .filter(|s| s.is_finite() && s.abs() < 86_400.0)
                    .ok_or_else(|| Error::invalid("`seconds` must be a number of seconds"))?,
            ),
            "volume" => MediaCommand::Volume(
                number("percent")
                    .filter(|p| (0.0..=150.0).contains(p))
                    .ok_or_else(|| Error::invalid("`percent` must be 0 to 150"))?
                    / 100.0,
            ),
            other => return Err(Error::invalid(format!("unknown music action {other}"))),
        };
        let after = self.backend.control(call.str("player"), command).await?;
        text(format!("Done. {after}"))
    }

    async fn search(&self, ctx: &ToolContext, call: &Call) -> Result<ToolResult> {
        let roots = match call.str("path") {
            Some(path) => vec![self.check_path(path, false)?],
            None => self.backend.config().search_roots(),
        };
        let request = SearchRequest {
            roots,
            name: call.str("query").map(str::to_string),
            content: call.str("content").map(str::to_string),
            limit: int(call, "limit").unwrap_or(20).clamp(1, 500) as usize,
            max_files: 200_000,
            max_content_bytes: 8 << 20,
            include_hidden: call.bool("hidden").unwrap_or(false),
            deadline: ctx
                .deadline
                .checked_sub(Duration::from_millis(500))
                .unwrap_or(ctx.deadline)
                .min(Instant::now() + Duration::from_secs(30)),
            use_index: call.bool("index").unwrap_or(true),
        };
        let guard = self.guard.clone();
        let allowed: Allowed =
            Arc::new(move |path: &Path| guard.as_ref().is_none_or(|g| g.check_read(path).is_ok()));
        let outcome = search::run(&*self.backend, request, allowed).await?;
        let mut lines: Vec<String> = outcome
            .hits
            .iter()
            .map(|hit| match &hit.line {
                Some((number, line)) => format!("{}:{number}: {line}", hit.path.display()),
                None => hit.path.display().to_string(),
            })
            .collect();
        if lines.is_empty() {
            lines.push(format!(
                "No files found ({} looked at).",
                outcome.files_seen
            ));
        }
        for note in [outcome.stopped, outcome.source].into_iter().flatten() {
            lines.push(format!("({note})"));
        }
        text(lines.join("\n"))
    }
}

fn notification_id(call: &Call) -> Result<u32> {
    int(call, "notification_id")
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| Error::invalid("`notification_id` must be an id from notification send"))
}

/// Polls until the process is gone (or a zombie: exited, not yet reaped by its parent).
async fn wait_for_exit(pid: u32, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if !alive(pid) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn alive(pid: u32) -> bool {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};
    let mut system = System::new();
    let pid = Pid::from_u32(pid);
    system.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        true,
        ProcessRefreshKind::nothing(),
    );
    system
        .process(pid)
        .is_some_and(|p| !matches!(p.status(), ProcessStatus::Zombie | ProcessStatus::Dead))
}

impl DomainTool for OsTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        let mut summary = format!("os {} {}", call.resource(), call.action());
        let mut facts = CallFacts {
            approval: self.domain.approval_of(call),
            ..CallFacts::default()
        };
        for key in [
            "window", "id", "pid", "key", "player", "title", "query", "content", "uid", "name",
            "start", "calendar", "book",
        ] {
            if let Some(value) = call.input.get(key).filter(|v| !v.is_null()) {
                let shown = value
                    .as_str()
                    .map(|s| format!("{:?}", s.chars().take(60).collect::<String>()))
                    .unwrap_or_else(|| value.to_string());
                summary.push_str(&format!(" {key} {shown}"));
            }
        }
        if call.resource() == "system"
            && let Some(percent) = call.input.get("percent").and_then(Value::as_f64)
        {
            summary.push_str(&format!(" to {percent}%"));
        }
        if call.resource() == "clipboard"
            && let Some(t) = call.str("text")
        {
            summary.push_str(&format!(
                " text {:?}",
                t.chars().take(60).collect::<String>()
            ));
        }
        let files = strings(call, "files");
        if !files.is_empty() {
            summary.push_str(&format!(" files {}", files.join(" ")));
        }
        if let Some(path) = call.str("path") {
            summary.push_str(&format!(" path {path}"));
            let image = call.str("format") == Some("image");
            match (call.resource(), call.action()) {
                ("clipboard", "read") if image => facts.write_paths.push(path.into()),
                ("clipboard", "write") if image => facts.read_paths.push(path.into()),
                ("search", _) => facts.read_paths.push(path.into()),
                ("calendar" | "contacts", "import") => facts.read_paths.push(path.into()),
                ("calendar" | "contacts", "export") => facts.write_paths.push(path.into()),
                _ => {}
            }
        } else if call.resource() == "search" {
            facts.read_paths = self.backend.config().search_roots();
        }
        facts.summary = summary;
        match call.resource() {
            "mail" => mail_actions::facts(call, &mut facts),
            "tts" => speech_actions::facts(call, &mut facts),
            "audio" => audio_actions::facts(call, &mut facts),
            _ => {}
        }
        facts
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let work = async {
                match call.resource() {
                    "capability" => self.capability().await,
                    "clipboard" => self.clipboard(&call).await,
                    "notification" => self.notification(ctx, &call).await,
                    "window" => self.window(&call).await,
                    "app" => self.app(&call).await,
                    "system" => self.system(&call).await,
                    "keychain" => self.keychain(&call).await,
                    "music" => self.music(&call).await,
                    "audio" => self.audio(&call).await,
                    "search" => self.search(ctx, &call).await,
                    "calendar" => {
                        crate::calendar::run(&self.dav, &call, &|p, w| self.check_path(p, w)).await
                    }
                    "contacts" => {
                        crate::contacts::run(&self.dav, &call, &|p, w| self.check_path(p, w)).await
                    }
                    "mail" => self.mail(&call).await,
                    "tts" => self.tts(&call).await,
                    other => Err(Error::invalid(format!("unknown os resource {other}"))),
                }
            };
            tokio::select! {
                result = work => result.unwrap_or_else(Error::into_result),
                _ = ctx.cancel.cancelled() => ToolResult::error(ErrorCode::Cancelled, "cancelled"),
            }
        })
    }
}
