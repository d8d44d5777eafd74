//! org.freedesktop.Notifications: Notify, CloseNotification, and the ActionInvoked and
//! NotificationClosed signals, followed by one listener task per process so a click is known
//! whenever it happens, not only while a call waits for it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use zbus::zvariant::Value;

use super::LinuxBackend;
use super::bus::dbus_error;
use crate::error::within;
use crate::error::{Error, Result};
use crate::notification::{Notification, Notifications, Outcome, Urgency};

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
const NAME: &str = "the notification server (org.freedesktop.Notifications)";
/// How many outcomes are remembered (the oldest are forgotten first).
const REMEMBERED: usize = 256;

/// What the listener heard, by notification id.
#[derive(Debug, Default)]
pub struct Tracker {
    state: Arc<TrackerState>,
    listening: tokio::sync::Mutex<bool>,
}

#[derive(Debug, Default)]
struct TrackerState {
    outcomes: Mutex<BTreeMap<u32, Outcome>>,
    changed: tokio::sync::Notify,
}

impl TrackerState {
    fn record(&self, id: u32, outcome: Outcome) {
        let mut outcomes = self.outcomes.lock().unwrap_or_else(|p| p.into_inner());
        // A click is followed by a close; the click is what the person did.
        if matches!(outcomes.get(&id), Some(Outcome::Clicked(_))) {
            return;
        }
        outcomes.insert(id, outcome);
        while outcomes.len() > REMEMBERED {
            outcomes.pop_first();
        }
        drop(outcomes);
        self.changed.notify_waiters();
    }

    fn get(&self, id: u32) -> Outcome {
        self.outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
            .unwrap_or(Outcome::Pending)
    }
}

fn close_reason(code: u32) -> &'static str {
    match code {
        1 => "expired",
        2 => "dismissed by the person",
        3 => "closed by a call",
        _ => "closed",
    }
}

impl LinuxBackend {
    /// Starts the signal listener once (before the first Notify, so no click is missed).
    async fn listen(&self, connection: &zbus::Connection) -> Result<()> {
        let mut listening = self.notifications.listening.lock().await;
        if *listening {
            return Ok(());
        }
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface(SERVICE)
            .and_then(|b| b.path(PATH))
            .map_err(|e| Error::Failed(format!("match rule: {e}")))?
            .build();
        let mut stream = zbus::MessageStream::for_match_rule(rule, connection, Some(64))
            .await
            .map_err(|e| dbus_error(NAME, e))?;
        let state = self.notifications.state.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let header = message.header();
                let member = header.member().map(|m| m.to_string());
                match member.as_deref() {
                    Some("ActionInvoked") => {
                        if let Ok((id, key)) = message.body().deserialize::<(u32, String)>() {
                            state.record(id, Outcome::Clicked(key));
                        }
                    }
                    Some("NotificationClosed") => {
                        if let Ok((id, reason)) = message.body().deserialize::<(u32, u32)>() {
                            state.record(id, Outcome::Closed(close_reason(reason)));
                        }
                    }
                    _ => {}
                }
            }
        });
        *listening = true;
        Ok(())
    }
}

impl Notifications for LinuxBackend {
    async fn send(&self, notification: &Notification) -> Result<u32> {
        let connection = self.buses.session().await?;
        self.listen(&connection).await?;
        let mut actions = Vec::new();
        for label in &notification.actions {
            // The key comes back in ActionInvoked; the label is what the person sees.
            actions.push(label.clone());
            actions.push(label.clone());
        }
        let urgency: u8 = match notification.urgency {
            Urgency::Low => 0,
            Urgency::Normal => 1,
            Urgency::Critical => 2,
        };
        let mut hints: HashMap<&str, Value> = HashMap::new();
        hints.insert("urgency", Value::U8(urgency));
        let expire = notification
            .expire
            .map(|d| i32::try_from(d.as_millis()).unwrap_or(i32::MAX))
            .unwrap_or(-1);
        let reply = within(NAME, self.buses.timeout, async {
            connection
                .call_method(
                    Some(SERVICE),
                    PATH,
                    Some(SERVICE),
                    "Notify",
                    &(
                        "Osprey",
                        0u32,
                        notification.icon.as_deref().unwrap_or(""),
                        notification.title.as_str(),
                        notification.body.as_str(),
                        actions,
                        hints,
                        expire,
                    ),
                )
                .await
                .map_err(|e| dbus_error(NAME, e))
        })
        .await?;
        reply
            .body()
            .deserialize::<u32>()
            .map_err(|e| Error::Failed(format!("{NAME} answered oddly: {e}")))
    }

    async fn outcome(&self, id: u32, wait: Duration) -> Result<Outcome> {
        let state = &self.notifications.state;
        let end = tokio::time::Instant::now() + wait;
        loop {
            let changed = state.changed.notified();
            let outcome = state.get(id);
            if outcome != Outcome::Pending || tokio::time::Instant::now() >= end {
                return Ok(outcome);
            }
            if tokio::time::timeout_at(end, changed).await.is_err() {
                return Ok(state.get(id));
            }
        }
    }

    async fn close(&self, id: u32) -> Result<()> {
        let connection = self.buses.session().await?;
        within(NAME, self.buses.timeout, async {
            connection
                .call_method(Some(SERVICE), PATH, Some(SERVICE), "CloseNotification", &id)
                .await
                .map_err(|e| dbus_error(NAME, e))
        })
        .await?;
        Ok(())
    }
}
