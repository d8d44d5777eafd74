//! A waiting approval while the main window is hidden (closed to the tray, minimized) raises a
//! system notification, so a question does not time out unseen. The answer itself is always
//! given in the window: the approval dialog is an overlay over every page, so whether the person
//! clicks the notification or opens Osprey from the tray, the question is the first thing shown
//! (notification clicks are not delivered on every Linux desktop, so nothing relies on them).

use osprey_types::{CoreEvent, Origin};
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_notification::NotificationExt;

use crate::tray::MAIN_WINDOW;

/// The notification's title and body for `event` when the window is not on screen; `None` when
/// there is nothing to say, the person can already see the dialog, or it is quiet hours and the
/// question comes from background work rather than a turn the person started (it waits in the
/// window and times out there, denied).
pub fn notice(event: &CoreEvent, window_on_screen: bool, quiet: bool) -> Option<(String, String)> {
    let CoreEvent::ApprovalRequested { request, .. } = event else {
        return None;
    };
    if window_on_screen || (quiet && request.origin != Origin::User) {
        return None;
    }
    let what = match (&request.resource, &request.action) {
        (Some(resource), Some(action)) => format!("{} {resource} {action}", request.tool),
        (None, Some(action)) => format!("{} {action}", request.tool),
        _ => request.tool.clone(),
    };
    let mut summary = request.summary.clone();
    if summary.chars().count() > 120 {
        summary = summary.chars().take(119).collect::<String>() + "…";
    }
    Some((
        "Osprey is waiting for your approval".to_string(),
        format!("{what}: {summary}\nOpen Osprey to allow or deny it."),
    ))
}

/// Shows the notice for `event` when the main window is hidden or minimized; `quiet` says
/// whether the persona's quiet hours hold (asked only for approval events).
pub fn notify_if_hidden<R: Runtime>(
    app: &AppHandle<R>,
    event: &CoreEvent,
    quiet: impl FnOnce() -> bool,
) {
    if !matches!(event, CoreEvent::ApprovalRequested { .. }) {
        return;
    }
    let on_screen = app.get_webview_window(MAIN_WINDOW).is_some_and(|window| {
        window.is_visible().unwrap_or(false) && !window.is_minimized().unwrap_or(false)
    });
    let Some((title, body)) = notice(event, on_screen, quiet()) else {
        return;
    };
    if let Err(error) = app.notification().builder().title(title).body(body).show() {
        tracing::info!("no approval notification shown: {error}");
    }
}

#[cfg(test)]
mod tests {
    use osprey_types::ApprovalRequest;

    use super::*;

    fn asked(summary: &str) -> CoreEvent {
        asked_by(Origin::User, summary)
    }

    fn asked_by(origin: Origin, summary: &str) -> CoreEvent {
        CoreEvent::ApprovalRequested {
            request: ApprovalRequest {
                id: "r1".into(),
                tool: "shell".into(),
                resource: Some("bash".into()),
                action: Some("exec".into()),
                origin,
                session_id: None,
                summary: summary.into(),
                input: serde_json::json!({}),
                suggested_scopes: vec![],
                details: None,
                once_only: false,
            },
            deadline_ms: 0,
        }
    }

    #[test]
    fn a_question_is_announced_only_while_the_window_is_off_screen() {
        let (title, body) = notice(&asked("git push"), false, false).unwrap();
        assert!(title.contains("approval"));
        assert!(body.starts_with("shell bash exec: git push"), "{body}");
        assert!(body.contains("Open Osprey"));
        assert_eq!(notice(&asked("git push"), true, false), None);
        let other = CoreEvent::ChatTurnStarted {
            session_id: "s".into(),
        };
        assert_eq!(notice(&other, false, false), None);
    }

    #[test]
    fn quiet_hours_silence_only_background_questions() {
        assert!(notice(&asked("git push"), false, true).is_some());
        let background = asked_by(Origin::System, "backup");
        assert!(notice(&background, false, false).is_some());
        assert_eq!(notice(&background, false, true), None);
        assert_eq!(notice(&asked_by(Origin::Comm, "reply"), false, true), None);
    }

    #[test]
    fn long_summaries_are_cut() {
        let (_, body) = notice(&asked(&"x".repeat(500)), false, false).unwrap();
        assert!(body.chars().count() < 200, "{body}");
    }
}
