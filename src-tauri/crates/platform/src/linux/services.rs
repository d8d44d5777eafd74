//! The system capability's desktop services: battery over UPower and network over
//! NetworkManager (system bus), the colour-scheme preference over the settings portal (session
//! bus), lock, suspend and brightness over logind (system bus; the backlight devices are read
//! in `backlight`). Each answers within the bus timeout or is left out.

use zbus::Connection;
use zbus::zvariant::OwnedValue;

use super::LinuxBackend;
use super::bus::dbus_error;
use crate::error::within;
use crate::error::{Error, Result};
use crate::system::SystemServices;

const LOGIND: &str = "logind (org.freedesktop.login1)";

async fn property(
    connection: &Connection,
    destination: &str,
    path: &str,
    interface: &str,
    name: &str,
) -> Option<OwnedValue> {
    let proxy = zbus::Proxy::new(
        connection,
        destination.to_string(),
        path.to_string(),
        interface.to_string(),
    )
    .await
    .ok()?;
    proxy.get_property::<OwnedValue>(name).await.ok()
}

impl LinuxBackend {
    async fn quick<T>(&self, work: impl std::future::Future<Output = Option<T>>) -> Option<T> {
        tokio::time::timeout(self.buses.timeout, work)
            .await
            .ok()
            .flatten()
    }

    async fn logind(
        &self,
        path: &str,
        interface: &str,
        method: &str,
        body: &(impl serde::Serialize + zbus::zvariant::DynamicType),
    ) -> Result<zbus::Message> {
        let connection = self.buses.system().await?;
        within(LOGIND, self.buses.timeout, async {
            connection
                .call_method(
                    Some("org.freedesktop.login1"),
                    path,
                    Some(interface),
                    method,
                    body,
                )
                .await
                .map_err(|e| dbus_error(LOGIND, e))
        })
        .await
    }
}

impl LinuxBackend {
    /// The backlight device brightness applies to, read off the async threads.
    async fn backlight(&self) -> Result<super::backlight::Backlight> {
        let root = self.backlight_dir();
        tokio::task::spawn_blocking(move || super::backlight::preferred(&root))
            .await
            .map_err(|e| Error::Failed(e.to_string()))?
    }
}

impl SystemServices for LinuxBackend {
    async fn power(&self) -> Option<String> {
        self.quick(async {
            let bus = self.buses.system().await.ok()?;
            let device = "/org/freedesktop/UPower/devices/DisplayDevice";
            let upower = "org.freedesktop.UPower";
            let present: bool = property(
                &bus,
                upower,
                device,
                "org.freedesktop.UPower.Device",
                "IsPresent",
            )
            .await
            .and_then(|v| bool::try_from(v).ok())?;
            let on_battery: Option<bool> =
                property(&bus, upower, "/org/freedesktop/UPower", upower, "OnBattery")
                    .await
                    .and_then(|v| bool::try_from(v).ok());
            if !present {
                return Some(match on_battery {
                    Some(true) => "on battery".to_string(),
                    _ => "no battery (mains power)".to_string(),
                });
            }
            let percentage = property(
                &bus,
                upower,
                device,
                "org.freedesktop.UPower.Device",
                "Percentage",
            )
            .await
            .and_then(|v| f64::try_from(v).ok())
            .unwrap_or(0.0);
            let state = property(
                &bus,
                upower,
                device,
                "org.freedesktop.UPower.Device",
                "State",
            )
            .await
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(0);
            let state = match state {
                1 => "charging",
                2 => "discharging",
                3 => "empty",
                4 => "fully charged",
                5 => "waiting to charge",
                6 => "waiting to discharge",
                _ => "state unknown",
            };
            Some(format!("battery {percentage:.0}% {state}"))
        })
        .await
    }

    async fn network(&self) -> Option<String> {
        self.quick(async {
            let bus = self.buses.system().await.ok()?;
            let nm = "org.freedesktop.NetworkManager";
            let state = property(&bus, nm, "/org/freedesktop/NetworkManager", nm, "State")
                .await
                .and_then(|v| u32::try_from(v).ok())?;
            let state = match state {
                70 => "connected",
                60 => "connected (site only, no internet)",
                50 => "connected (local only)",
                40 => "connecting",
                30 => "disconnecting",
                20 => "disconnected",
                10 => "asleep",
                _ => "unknown",
            };
            let primary = property(
                &bus,
                nm,
                "/org/freedesktop/NetworkManager",
                nm,
                "PrimaryConnection",
            )
            .await
            .and_then(|v| zbus::zvariant::OwnedObjectPath::try_from(v).ok())
            .filter(|p| p.as_str() != "/");
            let mut text = state.to_string();
            if let Some(path) = primary {
                let active = "org.freedesktop.NetworkManager.Connection.Active";
                let id = property(&bus, nm, path.as_str(), active, "Id")
                    .await
                    .and_then(|v| String::try_from(v).ok());
                let kind = property(&bus, nm, path.as_str(), active, "Type")
                    .await
                    .and_then(|v| String::try_from(v).ok());
                if let (Some(id), Some(kind)) = (id, kind) {
                    text.push_str(&format!(" via {id:?} ({kind})"));
                }
            }
            Some(text)
        })
        .await
    }

    async fn appearance(&self) -> Option<String> {
        self.quick(async {
            let bus = self.buses.session().await.ok()?;
            let reply = bus
                .call_method(
                    Some("org.freedesktop.portal.Desktop"),
                    "/org/freedesktop/portal/desktop",
                    Some("org.freedesktop.portal.Settings"),
                    "ReadOne",
                    &("org.freedesktop.appearance", "color-scheme"),
                )
                .await
                .ok()?;
            let value: OwnedValue = reply.body().deserialize().ok()?;
            let scheme = u32::try_from(value).ok()?;
            Some(
                match scheme {
                    1 => "dark",
                    2 => "light",
                    _ => "no preference",
                }
                .to_string(),
            )
        })
        .await
    }

    async fn brightness(&self) -> Result<String> {
        let device = self.backlight().await?;
        Ok(device.describe())
    }

    async fn set_brightness(&self, percent: u32) -> Result<String> {
        let device = self.backlight().await?;
        let value = device.value_for(percent);
        // The caller's own session may set its seat's backlight without polkit.
        self.logind(
            "/org/freedesktop/login1/session/auto",
            "org.freedesktop.login1.Session",
            "SetBrightness",
            &("backlight", device.name.as_str(), value),
        )
        .await?;
        Ok(format!(
            "asked logind to set the brightness to {percent}% ({value} of {} on {})",
            device.max, device.name
        ))
    }

    async fn lock(&self) -> Result<String> {
        // `auto` is the caller's own session (or the user's display session).
        self.logind(
            "/org/freedesktop/login1/session/auto",
            "org.freedesktop.login1.Session",
            "Lock",
            &(),
        )
        .await?;
        Ok("asked logind to lock the screen".into())
    }

    async fn suspend(&self) -> Result<String> {
        let manager = "org.freedesktop.login1.Manager";
        let reply = self
            .logind("/org/freedesktop/login1", manager, "CanSuspend", &())
            .await?;
        let can: String = reply
            .body()
            .deserialize()
            .map_err(|e| Error::Failed(format!("{LOGIND} answered oddly: {e}")))?;
        match can.as_str() {
            "yes" | "challenge" => {}
            "na" => {
                return Err(Error::PlatformNotSupported {
                    what: "suspend",
                    platform: "this machine (logind says the hardware cannot)",
                });
            }
            _ => {
                return Err(Error::PermissionDenied {
                    what: format!("suspending (logind CanSuspend: {can})"),
                    steps: "allow org.freedesktop.login1.suspend for your user with a polkit \
                            rule, or suspend from the desktop's menu"
                        .into(),
                });
            }
        }
        // Not interactive: a polkit prompt nobody sees would hang the call.
        self.logind("/org/freedesktop/login1", manager, "Suspend", &(false,))
            .await?;
        Ok("asked logind to suspend".into())
    }
}
