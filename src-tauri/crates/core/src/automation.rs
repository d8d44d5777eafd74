//! Pausing automation and the state of running work (the tray's quick actions and the window's
//! banner), and the snapshot behind "Ask about the current window".
//!
//! Pause is the registry's ([`osprey_tools::Registry::set_paused`]): every tool call, whoever
//! makes it, waits at the door until the person resumes. Turns that nobody typed (reminders,
//! comm messages) wait before they start ([`Core::run_turn_with_events`]); the person's own chat
//! turns start, so the model can still answer, and their tool calls wait.

use std::collections::BTreeMap;
use std::sync::Mutex;

use base64::Engine;
use osprey_types::{AutomationStatus, CoreEvent, Origin, RunningTurn, UiErrorCode, WindowSnapshot};

use crate::{Core, CoreError, CoreResult};

/// The turns running now, by session.
#[derive(Debug, Default)]
pub(crate) struct RunningTurns(Mutex<BTreeMap<String, RunningTurn>>);

impl RunningTurns {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, RunningTurn>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Takes a turn off the list when it ends, however it ends.
pub(crate) struct TurnEntry<'a> {
    turns: &'a RunningTurns,
    session_id: String,
}

impl Drop for TurnEntry<'_> {
    fn drop(&mut self) {
        self.turns.lock().remove(&self.session_id);
    }
}

impl Core {
    /// Pauses or resumes all automation; tells the shells (`automation_paused`) when it changed.
    pub fn set_automation_paused(&self, paused: bool) {
        if self.registry().set_paused(paused) {
            tracing::info!(paused, "automation paused state changed");
            self.emit(CoreEvent::AutomationPaused { paused });
        }
    }

    pub fn automation_paused(&self) -> bool {
        self.registry().is_paused()
    }

    /// Whether autonomous mode is on (`tools.autonomous`): what the approval policy would ask
    /// runs without a question. Front ends show it for as long as it is on.
    pub fn autonomous(&self) -> bool {
        self.registry().governance().autonomous()
    }

    /// Whether automation is paused, the turns running, and how many apps run.
    pub async fn automation_status(&self) -> AutomationStatus {
        let apps = self.app_statuses().await;
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        AutomationStatus {
            paused: self.automation_paused(),
            autonomous: self.autonomous(),
            turns: self.inner.turns.lock().values().cloned().collect(),
            apps_running: count(
                apps.iter()
                    .filter(|app| app.state == osprey_types::AppRunState::Running)
                    .count(),
            ),
            apps_total: count(apps.len()),
        }
    }

    /// Notes a turn as running until the returned guard drops.
    pub(crate) fn enter_turn(&self, session_id: &str, origin: Origin) -> TurnEntry<'_> {
        self.inner.turns.lock().insert(
            session_id.to_string(),
            RunningTurn {
                session_id: session_id.to_string(),
                origin,
                started_ms: osprey_db::now_ms(),
            },
        );
        TurnEntry {
            turns: &self.inner.turns,
            session_id: session_id.to_string(),
        }
    }

    /// Waits while automation is paused; false when `cancel` fired first.
    pub(crate) async fn wait_while_paused(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> bool {
        let mut paused = self.registry().watch_paused();
        tokio::select! {
            _ = paused.wait_for(|paused| !paused) => true,
            _ = cancel.cancelled() => false,
        }
    }

    /// An annotated `see` snapshot of the focused window (the whole screen when no window has
    /// the focus), kept in `<data>/snapshots` so the `desktop` tool can act on its element IDs.
    pub async fn see_focused_window(&self) -> CoreResult<WindowSnapshot> {
        let options = osprey_screen::SeeOptions {
            max_width: Some(1600),
            ..osprey_screen::SeeOptions::default()
        };
        let seen = osprey_screen::see_once(
            crate::desktop_config(self.data_dir()),
            osprey_screen::SeeTarget::Focused,
            options,
        )
        .await
        .map_err(|error| {
            CoreError::new(
                UiErrorCode::NotSupported,
                format!("could not take a snapshot of the current window: {error}"),
            )
        })?;
        let window = seen.snapshot.window.as_ref();
        Ok(WindowSnapshot {
            snapshot_id: seen.snapshot.id.clone(),
            title: window.map(|w| w.title.clone()),
            app: window.map(|w| w.app_name.clone()).filter(|a| !a.is_empty()),
            image: format!(
                "data:{};base64,{}",
                seen.image.mime_type,
                base64::engine::general_purpose::STANDARD.encode(&seen.image.bytes)
            ),
            width: seen.width,
            height: seen.height,
            elements: seen.text,
        })
    }
}
