//! Bridges the core's events (a broadcast channel in osprey-core) to the main window's feed
//! ([`UiFeed`], which `ui/src/ipc.ts` long-polls), each as `UiEvent::Core`. Only the main window
//! reads the feed: `next_ui_events` is granted to it alone, and app UI windows must not learn
//! about chats or other apps. Some events also raise a system notification ([`Notifier`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use osprey_core::Core;
use osprey_types::{AppRunState, CoreEvent, UiEvent};
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_notification::NotificationExt;
use tokio::sync::broadcast::error::RecvError;

use crate::tray::MAIN_WINDOW;
use crate::ui_feed::UiFeed;

/// A turn that ran at least this long is worth a notification when it ends out of sight.
pub const LONG_TURN: Duration = Duration::from_secs(20);

/// Forwards every core event to the main window until the core's bus closes. Subscribes before
/// returning, so nothing emitted after this call is missed.
pub fn forward<R: Runtime>(app: AppHandle<R>, core: &Core) {
    let mut events = core.subscribe();
    let core = core.clone();
    tauri::async_runtime::spawn(async move {
        let mut notifier = Notifier::default();
        // Notices held in quiet hours go out as one summary once they end.
        let mut quiet_check = tokio::time::interval(QUIET_CHECK);
        loop {
            let received = tokio::select! {
                received = events.recv() => received,
                _ = quiet_check.tick() => {
                    if notifier.has_held()
                        && let Some((title, body)) = notifier.release(core.quiet_hours_now())
                    {
                        show(&app, title, body);
                    }
                    continue;
                }
            };
            match received {
                Ok(event) => {
                    let in_sight = app.get_webview_window(MAIN_WINDOW).is_some_and(|w| {
                        w.is_visible().unwrap_or(false) && w.is_focused().unwrap_or(false)
                    });
                    if let Some(notice) = notifier.notice(&event, Instant::now(), in_sight)
                        && let Some((title, body)) =
                            notifier.unless_quiet(notice, core.quiet_hours_now())
                    {
                        show(&app, title, body);
                    }
                    crate::approval_notice::notify_if_hidden(&app, &event, || {
                        core.quiet_hours_now()
                    });
                    app.state::<UiFeed>().push(UiEvent::Core { event });
                }
                // The UI missed some streaming; it reloads history when the turn ends.
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "the UI fell behind the core's events")
                }
                Err(RecvError::Closed) => break,
            }
        }
    });
}

/// How often held notices are checked for the end of quiet hours.
const QUIET_CHECK: Duration = Duration::from_secs(60);

/// At most this many held notices are named in the summary.
const HELD_NAMED: usize = 5;

/// Decides which events deserve a system notification: a reminder firing, an app revoked,
/// quarantined or given up (once per state), and a long turn that finished or failed while the
/// window was out of sight; in the persona's quiet hours it holds them and sends one summary
/// when they end. Pure, so it is tested without a notification service.
#[derive(Debug, Default)]
pub struct Notifier {
    turns: HashMap<String, Instant>,
    app_states: HashMap<String, AppRunState>,
    /// Apps with a staged update the person was told of (told once per staged update).
    pending_told: std::collections::HashSet<String>,
    /// Notices that came in quiet hours, oldest first.
    held: Vec<(String, String)>,
}

impl Notifier {
    /// `notice` itself outside quiet hours; in them it is held for [`Notifier::release`].
    pub fn unless_quiet(
        &mut self,
        notice: (String, String),
        quiet: bool,
    ) -> Option<(String, String)> {
        if quiet {
            self.held.push(notice);
            None
        } else {
            Some(notice)
        }
    }

    pub fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// Once quiet hours are over, one notification naming what was held (each held notice's
    /// title, the first few); `None` while they last or when nothing was held.
    pub fn release(&mut self, quiet: bool) -> Option<(String, String)> {
        if quiet || self.held.is_empty() {
            return None;
        }
        let held = std::mem::take(&mut self.held);
        if let [(title, body)] = held.as_slice() {
            return Some((title.clone(), body.clone()));
        }
        let mut body = held
            .iter()
            .take(HELD_NAMED)
            .map(|(title, _)| title.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        if held.len() > HELD_NAMED {
            body.push_str(&format!("; and {} more", held.len() - HELD_NAMED));
        }
        Some((
            format!("While it was quiet: {} notifications", held.len()),
            format!("{body}. Open Osprey for the details."),
        ))
    }

    pub fn notice(
        &mut self,
        event: &CoreEvent,
        now: Instant,
        window_in_sight: bool,
    ) -> Option<(String, String)> {
        match event {
            CoreEvent::ReminderFired { title, .. } => {
                Some(("Osprey reminder".to_string(), title.clone()))
            }
            CoreEvent::AppRevoked { app_id, reason } => Some((
                format!("{app_id} was revoked"),
                format!("The store revoked it ({reason}); Osprey stopped it and set it aside."),
            )),
            CoreEvent::AppAccountChanged { account }
                if account.state == osprey_types::AppAccountState::Disconnected =>
            {
                Some((
                    format!("{} lost its {} account", account.app_name, account.provider),
                    format!(
                        "{} Connect it again on the Apps page.",
                        account
                            .reason
                            .as_deref()
                            .unwrap_or("The provider refused a refresh.")
                    ),
                ))
            }
            CoreEvent::AppRemoved { reason, .. } => {
                Some(("An app was removed".to_string(), reason.clone()))
            }
            CoreEvent::SkillRevoked { name, reason } => Some((
                format!("The skill {name} was revoked"),
                format!("The store revoked it ({reason}); Osprey removed it."),
            )),
            CoreEvent::AppStateChanged { app } => {
                // A staged update (new permissions) waits for the person: say so once.
                match app.pending_permissions.as_deref() {
                    Some(added) if !added.is_empty() => {
                        if self.pending_told.insert(app.id.clone()) {
                            return Some((
                                format!("{} {} asks for more permissions", app.name, app.version),
                                format!(
                                    "Its update adds: {}. Open Apps to review it; until then \
                                     the installed version keeps running.",
                                    added.join(", ")
                                ),
                            ));
                        }
                    }
                    _ => {
                        self.pending_told.remove(&app.id);
                    }
                }
                let before = self.app_states.insert(app.id.clone(), app.state);
                if before == Some(app.state) {
                    return None;
                }
                let why = app.reason.clone().unwrap_or_default();
                match app.state {
                    AppRunState::GaveUp => Some((
                        format!("{} stopped", app.name),
                        format!("It failed too often and Osprey gave up restarting it. {why}")
                            .trim()
                            .to_string(),
                    )),
                    AppRunState::Quarantined => Some((
                        format!("{} was quarantined", app.name),
                        format!("Osprey stopped it and kept its data. {why}")
                            .trim()
                            .to_string(),
                    )),
                    _ => None,
                }
            }
            CoreEvent::ChatTurnStarted { session_id } => {
                self.turns.insert(session_id.clone(), now);
                None
            }
            CoreEvent::ChatTurnFinished {
                session_id, text, ..
            } => {
                let started = self.turns.remove(session_id)?;
                if window_in_sight || now.duration_since(started) < LONG_TURN {
                    return None;
                }
                let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let body: String = line.chars().take(120).collect();
                Some((
                    "Osprey finished".to_string(),
                    if body.is_empty() {
                        "The answer is ready.".to_string()
                    } else {
                        body
                    },
                ))
            }
            CoreEvent::ChatTurnFailed {
                session_id,
                message,
                ..
            } => {
                let started = self.turns.remove(session_id)?;
                if window_in_sight || now.duration_since(started) < LONG_TURN {
                    return None;
                }
                Some((
                    "Osprey could not finish".to_string(),
                    message.chars().take(160).collect(),
                ))
            }
            _ => None,
        }
    }
}

/// Shows one notification (the desktop may have no notification service, as under Xvfb: then
/// only the log says so).
fn show<R: Runtime>(app: &AppHandle<R>, title: String, body: String) {
    if let Err(error) = app.notification().builder().title(title).body(body).show() {
        tracing::info!("no notification shown: {error}");
    }
}

#[cfg(test)]
mod tests {
    use osprey_types::{AppStatus, TurnFailureCode};

    use super::*;

    fn app(state: AppRunState) -> CoreEvent {
        CoreEvent::AppStateChanged {
            app: AppStatus {
                id: "com.example.units".into(),
                name: "Units".into(),
                version: "1.0.0".into(),
                description: String::new(),
                state,
                reason: Some("crashed 5 times".into()),
                sideloaded: false,
                permissions: vec![],
                pending_permissions: None,
                has_ui: false,
            },
        }
    }

    #[test]
    fn long_turns_notify_only_out_of_sight() {
        let mut notifier = Notifier::default();
        let start = Instant::now();
        let started = |s: &str| CoreEvent::ChatTurnStarted {
            session_id: s.into(),
        };
        let finished = |s: &str| CoreEvent::ChatTurnFinished {
            session_id: s.into(),
            stop: "end_turn".into(),
            text: "\nAll 12 files renamed.\nDetails...".into(),
        };
        notifier.notice(&started("a"), start, false);
        notifier.notice(&started("b"), start, false);
        notifier.notice(&started("c"), start, false);
        // Short: nothing.
        assert_eq!(
            notifier.notice(&finished("a"), start + Duration::from_secs(2), false),
            None
        );
        // Long but watched: nothing.
        assert_eq!(
            notifier.notice(&finished("b"), start + LONG_TURN * 2, true),
            None
        );
        // Long and out of sight: the first line of the answer.
        assert_eq!(
            notifier.notice(&finished("c"), start + LONG_TURN * 2, false),
            Some(("Osprey finished".into(), "All 12 files renamed.".into()))
        );
        notifier.notice(&started("d"), start, false);
        let failed = CoreEvent::ChatTurnFailed {
            session_id: "d".into(),
            code: TurnFailureCode::Network,
            message: "the provider could not be reached".into(),
        };
        assert_eq!(
            notifier
                .notice(&failed, start + LONG_TURN, false)
                .map(|n| n.0),
            Some("Osprey could not finish".into())
        );
    }

    #[test]
    fn a_dropped_account_is_told_and_a_connected_one_is_not() {
        let mut notifier = Notifier::default();
        let account = |state, reason: Option<&str>| CoreEvent::AppAccountChanged {
            account: osprey_types::AppAccount {
                app_id: "mail".into(),
                app_name: "Mail".into(),
                provider: "github".into(),
                scopes: vec![],
                state,
                expires_at: None,
                refreshed_at: None,
                reason: reason.map(str::to_owned),
                authorize_url: "https://github.com/login/oauth/authorize".into(),
            },
        };
        let now = Instant::now();
        let connected = account(osprey_types::AppAccountState::Connected, None);
        assert_eq!(notifier.notice(&connected, now, false), None);
        let dropped = account(
            osprey_types::AppAccountState::Disconnected,
            Some("github refused refreshing the tokens (invalid_grant)."),
        );
        let (title, body) = notifier.notice(&dropped, now, false).unwrap();
        assert_eq!(title, "Mail lost its github account");
        assert!(
            body.contains("invalid_grant") && body.contains("Apps page"),
            "{body}"
        );
    }

    #[test]
    fn quiet_hours_hold_notices_and_release_one_summary_after() {
        let mut notifier = Notifier::default();
        let notice = |title: &str| (title.to_string(), format!("{title} body"));
        assert_eq!(
            notifier.unless_quiet(notice("Osprey reminder"), false),
            Some(notice("Osprey reminder"))
        );
        assert_eq!(notifier.release(false), None);
        for title in ["Osprey reminder", "Units stopped", "Osprey finished"] {
            assert_eq!(notifier.unless_quiet(notice(title), true), None);
        }
        assert!(notifier.has_held());
        // Still quiet: nothing yet.
        assert_eq!(notifier.release(true), None);
        let (title, body) = notifier.release(false).unwrap();
        assert_eq!(title, "While it was quiet: 3 notifications");
        assert!(
            body.starts_with("Osprey reminder; Units stopped; Osprey finished."),
            "{body}"
        );
        assert!(!notifier.has_held());
        assert_eq!(notifier.release(false), None);
        // One held notice comes back as itself; many are counted past the first few.
        notifier.unless_quiet(notice("Osprey reminder"), true);
        assert_eq!(notifier.release(false), Some(notice("Osprey reminder")));
        for n in 0..8 {
            notifier.unless_quiet(notice(&format!("n{n}")), true);
        }
        let (_, body) = notifier.release(false).unwrap();
        assert!(body.contains("n4; and 3 more"), "{body}");
    }

    #[test]
    fn apps_notify_once_when_they_give_up_or_are_quarantined() {
        let mut notifier = Notifier::default();
        let now = Instant::now();
        assert_eq!(notifier.notice(&app(AppRunState::Running), now, true), None);
        let gave_up = notifier
            .notice(&app(AppRunState::GaveUp), now, true)
            .unwrap();
        assert_eq!(gave_up.0, "Units stopped");
        assert!(gave_up.1.contains("crashed 5 times"), "{}", gave_up.1);
        assert_eq!(notifier.notice(&app(AppRunState::GaveUp), now, true), None);
        assert_eq!(
            notifier
                .notice(&app(AppRunState::Quarantined), now, true)
                .map(|n| n.0),
            Some("Units was quarantined".into())
        );
        let reminder = CoreEvent::ReminderFired {
            reminder_id: "r1".into(),
            title: "Stand up".into(),
            trigger: "schedule".into(),
            session_id: None,
        };
        assert_eq!(
            notifier.notice(&reminder, now, true),
            Some(("Osprey reminder".into(), "Stand up".into()))
        );
    }

    #[test]
    fn store_pushed_changes_notify_and_a_staged_update_is_told_once() {
        let mut notifier = Notifier::default();
        let now = Instant::now();
        let staged = |pending: Option<Vec<String>>| {
            let CoreEvent::AppStateChanged { mut app } = app(AppRunState::Running) else {
                unreachable!()
            };
            app.pending_permissions = pending;
            CoreEvent::AppStateChanged { app }
        };
        let asked = notifier
            .notice(
                &staged(Some(vec!["network:api.example.com".into()])),
                now,
                true,
            )
            .unwrap();
        assert_eq!(asked.0, "Units 1.0.0 asks for more permissions");
        assert!(asked.1.contains("network:api.example.com"), "{}", asked.1);
        // The same staged update again: told already.
        assert_eq!(
            notifier.notice(
                &staged(Some(vec!["network:api.example.com".into()])),
                now,
                true
            ),
            None
        );
        // Approved (nothing pending), then another staged update: told again.
        assert_eq!(notifier.notice(&staged(None), now, true), None);
        assert!(
            notifier
                .notice(&staged(Some(vec!["clipboard:read".into()])), now, true)
                .is_some()
        );
        let removed = CoreEvent::AppRemoved {
            app_id: "com.example.units".into(),
            reason: "You removed Units on another device.".into(),
        };
        assert_eq!(
            notifier.notice(&removed, now, true).map(|n| n.1),
            Some("You removed Units on another device.".into())
        );
        let revoked = CoreEvent::SkillRevoked {
            name: "pdf-tools".into(),
            reason: "exfiltrates files".into(),
        };
        assert_eq!(
            notifier.notice(&revoked, now, true).map(|n| n.0),
            Some("The skill pdf-tools was revoked".into())
        );
    }
}
