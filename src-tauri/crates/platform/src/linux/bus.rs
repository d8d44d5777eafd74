//! The session and system bus connections, opened on first use at the configured addresses,
//! and a deadline for every call.

use std::time::Duration;

use tokio::sync::Mutex;
use zbus::Connection;

use crate::config::OsConfig;
use crate::error::{Error, Result, within};

#[derive(Debug)]
pub struct Buses {
    session_address: Option<String>,
    system_address: Option<String>,
    session: Mutex<Option<Connection>>,
    system: Mutex<Option<Connection>>,
    pub timeout: Duration,
}

impl Buses {
    pub fn new(config: &OsConfig) -> Buses {
        Buses {
            session_address: config.session_bus_address.clone(),
            system_address: config.system_bus_address.clone(),
            session: Mutex::new(None),
            system: Mutex::new(None),
            timeout: config.bus_timeout,
        }
    }

    pub async fn session(&self) -> Result<Connection> {
        self.connect(true).await
    }

    pub async fn system(&self) -> Result<Connection> {
        self.connect(false).await
    }

    async fn connect(&self, session: bool) -> Result<Connection> {
        let (slot, address, name) = if session {
            (
                &self.session,
                &self.session_address,
                "the D-Bus session bus",
            )
        } else {
            (&self.system, &self.system_address, "the D-Bus system bus")
        };
        let mut slot = slot.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let builder = match (address, session) {
            (Some(address), _) => zbus::connection::Builder::address(address.as_str()),
            (None, true) => zbus::connection::Builder::session(),
            (None, false) => zbus::connection::Builder::system(),
        }
        .map_err(|e| Error::unavailable(name, e))?
        .method_timeout(self.timeout);
        let connection = within(name, self.timeout, async {
            builder
                .build()
                .await
                .map_err(|e| Error::unavailable(name, e))
        })
        .await?;
        *slot = Some(connection.clone());
        Ok(connection)
    }
}

/// Whether a well-known name has an owner now or can be started on demand.
pub async fn name_available(connection: &Connection, name: &str) -> Result<bool> {
    let dbus = zbus::fdo::DBusProxy::new(connection)
        .await
        .map_err(|e| Error::unavailable("the D-Bus daemon", e))?;
    let bus_name = zbus::names::BusName::try_from(name)
        .map_err(|e| Error::Failed(format!("bad bus name {name}: {e}")))?;
    if dbus.name_has_owner(bus_name).await.unwrap_or(false) {
        return Ok(true);
    }
    let activatable = dbus.list_activatable_names().await.unwrap_or_default();
    Ok(activatable.iter().any(|n| n.as_str() == name))
}

/// A D-Bus error as one of ours: a missing service is `service_unavailable`, an access refusal
/// is `permission_denied` with the polkit hint, the rest a failure.
pub fn dbus_error(service: &str, error: zbus::Error) -> Error {
    if let zbus::Error::MethodError(name, message, _) = &error {
        let detail = message.clone().unwrap_or_default();
        match name.as_str() {
            "org.freedesktop.DBus.Error.ServiceUnknown"
            | "org.freedesktop.DBus.Error.NameHasNoOwner"
            | "org.freedesktop.DBus.Error.UnknownObject"
            | "org.freedesktop.DBus.Error.UnknownMethod" => {
                return Error::unavailable(service, format!("{name}: {detail}"));
            }
            "org.freedesktop.DBus.Error.AccessDenied"
            | "org.freedesktop.DBus.Error.AuthFailed"
            | "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired" => {
                return Error::PermissionDenied {
                    what: format!("{service} ({detail})"),
                    steps:
                        "allow it for your user in the desktop's settings or with a polkit rule \
                            (/etc/polkit-1/rules.d), or do it from the desktop yourself"
                            .into(),
                };
            }
            _ => {}
        }
    }
    Error::Failed(format!("{service}: {error}"))
}
