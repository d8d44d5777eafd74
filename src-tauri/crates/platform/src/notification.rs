//! Desktop notifications: post one (title, body, urgency, icon, action buttons), learn which
//! button the person clicked, close it. Linux: org.freedesktop.Notifications over D-Bus.

use std::time::Duration;

use crate::error::{Error, Result};

/// How insistent a notification is (the freedesktop urgency levels).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Urgency {
    Low,
    #[default]
    Normal,
    Critical,
}

impl Urgency {
    pub fn parse(name: &str) -> Option<Urgency> {
        match name.trim().to_ascii_lowercase().as_str() {
            "low" => Some(Urgency::Low),
            "normal" => Some(Urgency::Normal),
            "critical" | "high" => Some(Urgency::Critical),
            _ => None,
        }
    }
}

/// A notification to post.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Notification {
    pub title: String,
    pub body: String,
    pub urgency: Urgency,
    /// An icon name from the theme (`dialog-information`) or a file path.
    pub icon: Option<String>,
    /// Button labels; a click is reported with the label.
    pub actions: Vec<String>,
    /// How long it stays up; `None`: the server decides.
    pub expire: Option<Duration>,
}

/// What happened to a posted notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still showing (or nothing heard yet).
    Pending,
    /// The person clicked this action (its label; `default` for the body itself).
    Clicked(String),
    /// Closed without a click: expired, dismissed, closed by a call.
    Closed(&'static str),
}

/// Posts and follows notifications.
#[allow(async_fn_in_trait)]
pub trait Notifications {
    /// Posts the notification and returns its id.
    async fn send(&self, _notification: &Notification) -> Result<u32> {
        Err(Error::unsupported("notifications"))
    }
    /// What happened to notification `id`, waiting up to `wait` for a click or close.
    async fn outcome(&self, _id: u32, _wait: Duration) -> Result<Outcome> {
        Err(Error::unsupported("notifications"))
    }
    async fn close(&self, _id: u32) -> Result<()> {
        Err(Error::unsupported("notifications"))
    }
}
