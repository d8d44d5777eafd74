//! Bridges the core's events (a broadcast channel in osprey-core) to the main window as the Tauri
//! event [`CORE_EVENT`], whose payload is an `osprey_types::CoreEvent`; `ui/src/ipc.ts` listens.
//! Only the main window receives them: app UI windows have no event permission and must not
//! learn about chats or other apps.

use osprey_core::Core;
use osprey_types::CoreEvent;
use tauri::{AppHandle, Emitter, Runtime};
use tauri_plugin_notification::NotificationExt;
use tokio::sync::broadcast::error::RecvError;

use crate::tray::MAIN_WINDOW;

/// The Tauri event name the UI listens to.
pub const CORE_EVENT: &str = "core-event";

/// Forwards every core event to the main window until the core's bus closes. Subscribes before
/// returning, so nothing emitted after this call is missed.
pub fn forward<R: Runtime>(app: AppHandle<R>, core: &Core) {
    let mut events = core.subscribe();
    tauri::async_runtime::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) => {
                    notify(&app, &event);
                    crate::approval_notice::notify_if_hidden(&app, &event);
                    if let Err(error) = app.emit_to(MAIN_WINDOW, CORE_EVENT, &event) {
                        tracing::warn!("could not forward a core event: {error}");
                    }
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

/// A reminder that fires and an app the store revoked are worth a system notification even when
/// the window is hidden (the desktop may have no notification service, as under Xvfb: then only
/// the log says so).
fn notify<R: Runtime>(app: &AppHandle<R>, event: &CoreEvent) {
    let (title, body) = match event {
        CoreEvent::ReminderFired { title, .. } => ("Osprey reminder".to_string(), title.clone()),
        CoreEvent::AppRevoked { app_id, reason } => (
            format!("{app_id} was revoked"),
            format!("The store revoked it ({reason}); Osprey stopped it and set it aside."),
        ),
        _ => return,
    };
    if let Err(error) = app.notification().builder().title(title).body(body).show() {
        tracing::info!("no notification shown: {error}");
    }
}
