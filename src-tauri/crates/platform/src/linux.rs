//! The Linux backends: D-Bus services through zbus (notifications, the Secret Service, MPRIS,
//! UPower, NetworkManager, the settings portal, logind), windows through EWMH over X11 (x11rb),
//! applications from freedesktop desktop entries. Nothing here spawns helper programs; the only
//! programs started are the applications the person asks to launch.

mod apps;
mod audio;
mod backlight;
mod bus;
pub(crate) mod eds;
mod mpris;
mod notify;
mod secrets;
mod services;
mod speech;
mod tracker;
mod x11;

use std::sync::Mutex;

use crate::config::OsConfig;

pub use bus::Buses;

/// Every Linux capability, sharing one session and one system bus connection and one X11
/// connection, each opened on first use (and retried on the next call when that failed).
#[derive(Debug)]
pub struct LinuxBackend {
    config: OsConfig,
    buses: Buses,
    x11: Mutex<Option<x11::Ewmh>>,
    notifications: notify::Tracker,
    speaker: speech::Speaker,
}

impl LinuxBackend {
    pub fn new(config: OsConfig) -> LinuxBackend {
        LinuxBackend {
            buses: Buses::new(&config),
            config,
            x11: Mutex::new(None),
            notifications: notify::Tracker::default(),
            speaker: speech::Speaker::default(),
        }
    }

    pub fn config(&self) -> &OsConfig {
        &self.config
    }

    pub fn buses(&self) -> &Buses {
        &self.buses
    }

    /// Where the backlight devices are listed.
    fn backlight_dir(&self) -> std::path::PathBuf {
        self.config
            .backlight_dir
            .clone()
            .unwrap_or_else(|| backlight::SYSFS.into())
    }

    /// Runs `work` on the X11 connection, connecting first if needed.
    fn with_x11<T>(&self, work: impl FnOnce(&x11::Ewmh) -> crate::Result<T>) -> crate::Result<T> {
        let mut slot = self.x11.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(x11::Ewmh::connect(self.config.x11_display.as_deref())?);
        }
        let result = work(slot.as_ref().expect("set above"));
        // A broken connection is dropped so the next call reconnects.
        if let Err(crate::Error::ServiceUnavailable { .. }) = &result {
            *slot = None;
        }
        result
    }
}

impl LinuxBackend {
    /// Whether the D-Bus capability `name` works here: what answers, or why nothing does.
    pub async fn probe(&self, name: &str) -> crate::Result<String> {
        let service = |bus_name: &'static str, what: &'static str| async move {
            let connection = self.buses.session().await?;
            if bus::name_available(&connection, bus_name).await? {
                Ok(format!("{what} answers on the session bus ({bus_name})"))
            } else {
                Err(crate::Error::unavailable(
                    what,
                    format!("nothing owns or can start {bus_name} on the session bus"),
                ))
            }
        };
        match name {
            "notification" => {
                service("org.freedesktop.Notifications", "a notification server").await
            }
            "keychain" => service("org.freedesktop.secrets", "a Secret Service keyring").await,
            "music" => {
                let connection = self.buses.session().await?;
                let players = self.player_names(&connection).await?;
                Ok(format!(
                    "session bus reachable; {} MPRIS players running",
                    players.len()
                ))
            }
            "tts" => self.speech_probe().await,
            "audio" => self.audio_probe().await,
            _ => Err(crate::Error::unsupported("this capability")),
        }
    }
}
