//! Evolution Data Server: the GNOME desktop's own calendars and address books (what GNOME
//! Calendar, Contacts and Evolution show, its online accounts included), over D-Bus on the
//! session bus. The source registry (`Sources5`) lists the sources as key files; a factory opens
//! one source as an object that lives as long as our connection does, so the opened objects are
//! kept per source and opened again when the backend went away.
//!
//! Only the transport is here: the calendar and contacts resources see EDS sources as
//! collections of another kind of account (`dav::Store::Eds`) and parse and write the iCalendar
//! and vCard text exactly as for CalDAV/CardDAV. No libecal, no helper programs.

use std::collections::HashMap;
use std::time::Duration;

use zbus::Connection;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::bus::{Buses, dbus_error, name_available};
use crate::config::OsConfig;
use crate::dav::Kind;
use crate::error::{Error, Result, within};

/// What errors and the status call the service.
pub(crate) const SERVICE: &str = "Evolution Data Server";
/// The source registry's bus name.
pub(crate) const REGISTRY: &str = "org.gnome.evolution.dataserver.Sources5";
const REGISTRY_PATH: &str = "/org/gnome/evolution/dataserver/SourceManager";
const SOURCE_INTERFACE: &str = "org.gnome.evolution.dataserver.Source";

/// The factory that opens a source of `kind`: bus name, object path, interface, method, and the
/// interface of the opened object.
fn factory(kind: Kind) -> [&'static str; 5] {
    match kind {
        Kind::Calendar => [
            "org.gnome.evolution.dataserver.Calendar8",
            "/org/gnome/evolution/dataserver/CalendarFactory",
            "org.gnome.evolution.dataserver.CalendarFactory",
            "OpenCalendar",
            "org.gnome.evolution.dataserver.Calendar",
        ],
        Kind::Contacts => [
            "org.gnome.evolution.dataserver.AddressBook10",
            "/org/gnome/evolution/dataserver/AddressBookFactory",
            "org.gnome.evolution.dataserver.AddressBookFactory",
            "OpenAddressBook",
            "org.gnome.evolution.dataserver.AddressBook",
        ],
    }
}

/// The key-file group that makes a source a calendar or an address book (task lists, memo
/// lists and mail accounts have other groups).
fn group(kind: Kind) -> &'static str {
    match kind {
        Kind::Calendar => "Calendar",
        Kind::Contacts => "Address Book",
    }
}

/// One EDS calendar or address book.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Source {
    /// The source's UID (`system-calendar`).
    pub uid: String,
    /// Its display name (`Personal`).
    pub name: String,
    /// The display name of the account it belongs to (its parent source: `On This Computer`,
    /// an online account), else [`SERVICE`].
    pub account: String,
    /// False for read-only sources (the birthdays of the address books).
    pub writable: bool,
}

/// A source as the registry's key file describes it.
#[derive(Debug, Default)]
struct KeyFile {
    groups: HashMap<String, HashMap<String, String>>,
}

impl KeyFile {
    fn parse(text: &str) -> KeyFile {
        let mut out = KeyFile::default();
        let mut current = String::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                current = name.to_string();
                out.groups.entry(current.clone()).or_default();
            } else if let Some((key, value)) = line.split_once('=') {
                out.groups
                    .entry(current.clone())
                    .or_default()
                    .insert(key.trim().to_string(), unescape(value.trim()));
            }
        }
        out
    }

    fn get(&self, group: &str, key: &str) -> Option<&str> {
        self.groups.get(group)?.get(key).map(String::as_str)
    }

    /// A boolean key, `true` when absent (EDS's default for `Enabled`).
    fn enabled(&self, group: &str) -> bool {
        self.get(group, "Enabled") != Some("false")
    }
}

/// GLib key-file escapes (`\s`, `\n`, `\t`, `\r`, `\\`).
fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('s') => out.push(' '),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The sources of `kind` in the registry's answer (UID and key-file text per object): enabled
/// ones with the group of `kind`, each named after its display name and its parent's.
fn sources_of(kind: Kind, registry: &[(String, String)]) -> Vec<Source> {
    let files: Vec<(&str, KeyFile)> = registry
        .iter()
        .map(|(uid, data)| (uid.as_str(), KeyFile::parse(data)))
        .collect();
    let name_of = |uid: &str| {
        files
            .iter()
            .find(|(u, _)| *u == uid)
            .and_then(|(_, f)| f.get("Data Source", "DisplayName"))
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    };
    let mut out: Vec<Source> = files
        .iter()
        .filter(|(_, file)| {
            file.groups.contains_key(group(kind))
                && file.enabled("Data Source")
                && file.enabled(group(kind))
        })
        .map(|(uid, file)| Source {
            uid: uid.to_string(),
            name: name_of(uid).unwrap_or_else(|| uid.to_string()),
            account: file
                .get("Data Source", "Parent")
                .filter(|p| !p.is_empty())
                .and_then(name_of)
                .unwrap_or_else(|| SERVICE.to_string()),
            writable: file.get(group(kind), "Writable") != Some("false"),
        })
        .collect();
    out.sort_by(|a, b| (&a.account, &a.name).cmp(&(&b.account, &b.name)));
    out
}

/// An opened calendar or address book: its object and the bus name that serves it.
#[derive(Clone, Debug)]
struct Opened {
    path: String,
    bus: String,
}

/// The EDS client of one `os` tool: its own session-bus connection (opened on first use) and
/// the sources opened on it.
#[derive(Debug)]
pub(crate) struct Eds {
    buses: Buses,
    timeout: Duration,
    opened: tokio::sync::Mutex<HashMap<(String, Kind), Opened>>,
}

/// The errors EDS answers when an object is not there (`e-book-client-error` /
/// `e-cal-client-error` code 1, "not found").
fn not_found(error: &zbus::Error) -> bool {
    matches!(error, zbus::Error::MethodError(name, message, _)
        if (name.as_str().ends_with("_2dcal_2dclient_2derror_2dquark.Code1")
            || name.as_str().ends_with("_2dbook_2dclient_2derror_2dquark.Code1")
            || name.as_str().ends_with("ContactNotFound")
            || name.as_str().ends_with("ObjectNotFound"))
            || message.as_deref().is_some_and(|m| m.contains("not found")))
}

/// The errors EDS answers when a created object's UID is taken.
fn already_there(error: &zbus::Error) -> bool {
    matches!(error, zbus::Error::MethodError(_, message, _)
    if message.as_deref().is_some_and(|m| {
        m.contains("already exists") || m.contains("Conflicting UIDs")
    }))
}

/// Whether the opened object went away (the backend exited): open it again.
fn gone(error: &zbus::Error) -> bool {
    matches!(error, zbus::Error::MethodError(name, _, _) if matches!(
        name.as_str(),
        "org.freedesktop.DBus.Error.ServiceUnknown"
            | "org.freedesktop.DBus.Error.UnknownObject"
            | "org.freedesktop.DBus.Error.UnknownMethod"
            | "org.freedesktop.DBus.Error.NoReply"
    ))
}

impl Eds {
    /// A client for the session bus at `session_bus_address` (`None`: the process's), each
    /// call within `timeout` (opening a source starts its backend, which takes a moment).
    pub(crate) fn new(session_bus_address: Option<String>, timeout: Duration) -> Eds {
        let config = OsConfig {
            session_bus_address,
            bus_timeout: timeout,
            ..OsConfig::default()
        };
        Eds {
            buses: Buses::new(&config),
            timeout,
            opened: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    async fn connection(&self) -> Result<Connection> {
        self.buses.session().await
    }

    /// The calendars (or address books) the registry lists; `service_unavailable` when no
    /// registry runs or can be started on the session bus.
    pub(crate) async fn sources(&self, kind: Kind) -> Result<Vec<Source>> {
        let connection = self.connection().await?;
        if !name_available(&connection, REGISTRY).await? {
            return Err(Error::unavailable(
                SERVICE,
                format!(
                    "nothing owns or can start {REGISTRY} on the session bus (install \
                     evolution-data-server, or use a CalDAV/CardDAV account)"
                ),
            ));
        }
        let reply = within(SERVICE, self.timeout, async {
            connection
                .call_method(
                    Some(REGISTRY),
                    REGISTRY_PATH,
                    Some("org.freedesktop.DBus.ObjectManager"),
                    "GetManagedObjects",
                    &(),
                )
                .await
                .map_err(|e| dbus_error(SERVICE, e))
        })
        .await?;
        type Managed = HashMap<OwnedObjectPath, HashMap<String, HashMap<String, OwnedValue>>>;
        let managed: Managed = reply
            .body()
            .deserialize()
            .map_err(|e| Error::Failed(format!("{SERVICE} answered a strange source list: {e}")))?;
        let text = |props: &HashMap<String, OwnedValue>, key: &str| {
            props
                .get(key)
                .and_then(|v| String::try_from(v.clone()).ok())
                .unwrap_or_default()
        };
        let registry: Vec<(String, String)> = managed
            .values()
            .filter_map(|interfaces| interfaces.get(SOURCE_INTERFACE))
            .map(|props| (text(props, "UID"), text(props, "Data")))
            .filter(|(uid, _)| !uid.is_empty())
            .collect();
        Ok(sources_of(kind, &registry))
    }

    /// Opens `source` (once per connection) and returns its object.
    async fn open(&self, kind: Kind, source: &str, again: bool) -> Result<Opened> {
        let key = (source.to_string(), kind);
        let mut opened = self.opened.lock().await;
        if !again && let Some(found) = opened.get(&key) {
            return Ok(found.clone());
        }
        let connection = self.connection().await?;
        let [bus, path, interface, method, object_interface] = factory(kind);
        let what = format!("{SERVICE} opening {source}");
        let found = within(what.clone(), self.timeout, async {
            let reply = connection
                .call_method(Some(bus), path, Some(interface), method, &(source,))
                .await
                .map_err(|e| dbus_error(&what, e))?;
            let (path, bus): (String, String) = reply
                .body()
                .deserialize()
                .map_err(|e| Error::Failed(format!("{what}: {e}")))?;
            connection
                .call_method(
                    Some(bus.as_str()),
                    path.as_str(),
                    Some(object_interface),
                    "Open",
                    &(),
                )
                .await
                .map_err(|e| dbus_error(&what, e))?;
            Ok(Opened { path, bus })
        })
        .await?;
        opened.insert(key, found.clone());
        Ok(found)
    }

    /// Calls `method` on the opened `source`, opening it again once when its backend went away.
    /// `Ok(Err(..))` is EDS's own refusal, for the caller to read.
    async fn call<B>(
        &self,
        kind: Kind,
        source: &str,
        method: &str,
        body: &B,
    ) -> Result<std::result::Result<zbus::Message, zbus::Error>>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        let connection = self.connection().await?;
        let interface = factory(kind)[4];
        let mut again = false;
        loop {
            let opened = self.open(kind, source, again).await?;
            let answer = within(format!("{SERVICE} ({method})"), self.timeout, async {
                Ok(connection
                    .call_method(
                        Some(opened.bus.as_str()),
                        opened.path.as_str(),
                        Some(interface),
                        method,
                        body,
                    )
                    .await)
            })
            .await?;
            match answer {
                Err(error) if gone(&error) && !again => again = true,
                other => return Ok(other),
            }
        }
    }

    /// `call` where every refusal is an error.
    async fn call_ok<B>(
        &self,
        kind: Kind,
        source: &str,
        method: &str,
        body: &B,
    ) -> Result<zbus::Message>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        self.call(kind, source, method, body)
            .await?
            .map_err(|e| dbus_error(&format!("{SERVICE} ({method} in {source})"), e))
    }

    /// The objects (iCalendar components or vCards) matching an EDS query (`#t`: all).
    pub(crate) async fn query(&self, kind: Kind, source: &str, sexp: &str) -> Result<Vec<String>> {
        let method = match kind {
            Kind::Calendar => "GetObjectList",
            Kind::Contacts => "GetContactList",
        };
        let reply = self.call_ok(kind, source, method, &(sexp,)).await?;
        reply
            .body()
            .deserialize()
            .map_err(|e| Error::Failed(format!("{SERVICE} answered a strange list: {e}")))
    }

    /// The object with `uid` (a calendar's master with its exceptions), if there is one.
    pub(crate) async fn get(&self, kind: Kind, source: &str, uid: &str) -> Result<Option<String>> {
        let answer = match kind {
            Kind::Calendar => self.call(kind, source, "GetObject", &(uid, "")).await?,
            Kind::Contacts => self.call(kind, source, "GetContact", &(uid,)).await?,
        };
        match answer {
            Ok(reply) => reply
                .body()
                .deserialize()
                .map(Some)
                .map_err(|e| Error::Failed(format!("{SERVICE} answered a strange object: {e}"))),
            Err(error) if not_found(&error) => Ok(None),
            Err(error) => Err(dbus_error(&format!("{SERVICE} ({source})"), error)),
        }
    }

    /// Creates objects that share one UID; false when the UID was taken.
    pub(crate) async fn create(
        &self,
        kind: Kind,
        source: &str,
        objects: Vec<String>,
    ) -> Result<bool> {
        let answer = match kind {
            Kind::Calendar => {
                self.call(kind, source, "CreateObjects", &(objects, 0u32))
                    .await?
            }
            Kind::Contacts => {
                self.call(kind, source, "CreateContacts", &(objects, 0u32))
                    .await?
            }
        };
        match answer {
            Ok(_) => Ok(true),
            Err(error) if already_there(&error) => Ok(false),
            Err(error) => Err(dbus_error(
                &format!("{SERVICE} (creating in {source})"),
                error,
            )),
        }
    }

    /// Replaces an object: a contact, or an event (`mod_type` `all` for a series' master,
    /// `this` for one changed occurrence).
    pub(crate) async fn modify(
        &self,
        kind: Kind,
        source: &str,
        object: String,
        mod_type: &str,
    ) -> Result<()> {
        match kind {
            Kind::Calendar => {
                self.call_ok(
                    kind,
                    source,
                    "ModifyObjects",
                    &(vec![object], mod_type, 0u32),
                )
                .await?
            }
            Kind::Contacts => {
                self.call_ok(kind, source, "ModifyContacts", &(vec![object], 0u32))
                    .await?
            }
        };
        Ok(())
    }

    /// Removes the object with `uid` (a whole series); false when it was already gone.
    pub(crate) async fn remove(&self, kind: Kind, source: &str, uid: &str) -> Result<bool> {
        let answer = match kind {
            Kind::Calendar => {
                self.call(
                    kind,
                    source,
                    "RemoveObjects",
                    &(vec![(uid, "")], "all", 0u32),
                )
                .await?
            }
            Kind::Contacts => {
                self.call(kind, source, "RemoveContacts", &(vec![uid], 0u32))
                    .await?
            }
        };
        match answer {
            Ok(_) => Ok(true),
            Err(error) if not_found(&error) => Ok(false),
            Err(error) => Err(dbus_error(
                &format!("{SERVICE} (deleting in {source})"),
                error,
            )),
        }
    }

    /// The VTIMEZONE a calendar has under `tzid`, if it knows it.
    pub(crate) async fn timezone(&self, source: &str, tzid: &str) -> Option<String> {
        let reply = self
            .call(Kind::Calendar, source, "GetTimezone", &(tzid,))
            .await
            .ok()?
            .ok()?;
        reply.body().deserialize().ok()
    }

    /// Tells a calendar a VTIMEZONE before objects that name it are stored.
    pub(crate) async fn add_timezone(&self, source: &str, vtimezone: String) -> Result<()> {
        self.call_ok(Kind::Calendar, source, "AddTimezone", &(vtimezone,))
            .await
            .map(drop)
    }

    /// Whether EDS answers: its calendars (or address books) by name, or why not.
    pub(crate) async fn probe(&self, kind: Kind) -> Result<String> {
        let sources = self.sources(kind).await?;
        let word = match kind {
            Kind::Calendar => "calendar",
            Kind::Contacts => "address book",
        };
        Ok(format!(
            "{SERVICE} answers on the session bus: {} ({})",
            crate::tool::count(sources.len(), word),
            sources
                .iter()
                .map(|s| format!("{} in {}", s.name, s.account))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_told_apart_by_group_and_named_after_their_parent() {
        let registry = vec![
            (
                "local-stub".to_string(),
                "[Data Source]\nDisplayName[de]=Auf diesem Rechner\nDisplayName=On This Computer\nParent=\n".to_string(),
            ),
            (
                "system-calendar".to_string(),
                "\n[Data Source]\nDisplayName=Personal\nEnabled=true\nParent=local-stub\n\n[Calendar]\nBackendName=local\n".to_string(),
            ),
            (
                "system-address-book".to_string(),
                "[Data Source]\nDisplayName=Personal\nParent=local-stub\n[Address Book]\nBackendName=local\n".to_string(),
            ),
            (
                "off".to_string(),
                "[Data Source]\nDisplayName=Old\nEnabled=false\n[Calendar]\n".to_string(),
            ),
            (
                "tasks".to_string(),
                "[Data Source]\nDisplayName=Tasks\\sand more\n[Task List]\n".to_string(),
            ),
            (
                "orphan".to_string(),
                "[Data Source]\nDisplayName=Team\\sdates\nParent=gone\n[Calendar]\nEnabled=true\n".to_string(),
            ),
        ];
        let calendars = sources_of(Kind::Calendar, &registry);
        assert_eq!(
            calendars,
            vec![
                Source {
                    uid: "orphan".into(),
                    name: "Team dates".into(),
                    account: SERVICE.into(),
                    writable: true
                },
                Source {
                    uid: "system-calendar".into(),
                    name: "Personal".into(),
                    account: "On This Computer".into(),
                    writable: true
                },
            ]
        );
        let books = sources_of(Kind::Contacts, &registry);
        assert_eq!(books.len(), 1);
        assert_eq!(books[0].uid, "system-address-book");
    }
}
