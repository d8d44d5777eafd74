//! Calendars and address books on CalDAV/CardDAV servers: the accounts (from settings, with
//! their passwords from the keyring, both read at each call so a change applies at once), the
//! WebDAV discovery from an account's base URL (current-user-principal, then calendar-home-set
//! or addressbook-home-set, then the collections under it), and the versions (ETags) of the
//! objects the model has been shown, so a change someone else made since then is refused with
//! a conflict instead of being overwritten.
//!
//! Cross-platform code: reqwest with rustls and the system's trust store (see `tls`). Beside
//! the configured accounts, on Linux the desktop's own stores (Evolution Data Server, what GNOME
//! Calendar and Contacts show) appear as accounts named after their EDS account ("On This
//! Computer", an online account) when EDS answers on the session bus: a collection says where
//! its objects are kept ([`Store`]), and `store.rs` routes each read and write there, so the
//! resources parse and write iCalendar and vCard the same way for both.

pub(crate) mod http;
pub(crate) mod ics;
pub(crate) mod lines;
pub(crate) mod resource;
mod store;
pub(crate) mod vcf;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use osprey_tools::Call;
use reqwest::Url;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::tool::count;
use http::{DavHttp, Prop, Resource};

/// The setting that holds the accounts (`osprey config set dav.accounts '{...}'`).
pub const ACCOUNTS_SETTING: &str = "dav.accounts";

/// The setting that switches the desktop's own calendars and address books (Evolution Data
/// Server) off: `osprey config set os.desktop_stores false`. Absent: on.
pub const DESKTOP_SETTING: &str = "os.desktop_stores";

/// The secret an account's password is kept under in the keyring.
pub fn password_secret(account: &str) -> String {
    format!("dav.{account}.password")
}

/// What an account serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DavKind {
    /// Calendars only.
    Caldav,
    /// Address books only.
    Carddav,
    /// Both, from one base URL (Radicale, Nextcloud, Fastmail, iCloud).
    #[default]
    Dav,
}

impl DavKind {
    fn serves(self, kind: Kind) -> bool {
        matches!(
            (self, kind),
            (DavKind::Dav, _)
                | (DavKind::Caldav, Kind::Calendar)
                | (DavKind::Carddav, Kind::Contacts)
        )
    }
}

/// One account as the `dav.accounts` setting stores it, under its name. An entry being set up
/// one key at a time may lack its URL or username for a while; it is reported, not used.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DavAccountSetting {
    #[serde(default)]
    pub kind: DavKind,
    /// The server's base URL (`https://dav.example.com/`); the calendars and address books are
    /// found from there.
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub username: String,
}

/// The `dav.accounts` setting: accounts by name.
pub type DavAccounts = BTreeMap<String, DavAccountSetting>;

/// Checks an account entry before it is stored: a usable name and, when set, an http(s) URL.
pub fn validate_account(
    name: &str,
    account: &DavAccountSetting,
) -> std::result::Result<(), String> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "account name `{name}` must be 1 to 64 letters, digits, `-` or `_`"
        ));
    }
    match Url::parse(&account.url) {
        _ if account.url.is_empty() => {}
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {}
        _ => {
            return Err(format!(
                "account `{name}`: `{}` is not an http or https URL (e.g. https://dav.example.com/)",
                account.url
            ));
        }
    }
    Ok(())
}

/// A configured account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DavAccount {
    pub name: String,
    pub kind: DavKind,
    pub url: String,
    pub username: String,
}

/// Where the accounts and their passwords come from. Read at each call, from a blocking
/// thread (a keyring lookup may block).
pub trait DavSettings: Send + Sync {
    fn accounts(&self) -> Vec<DavAccount>;
    /// The account's password, if one is stored.
    fn password(&self, account: &str) -> Option<String>;
    /// Whether the desktop's own stores are offered beside the accounts ([`DESKTOP_SETTING`]).
    fn desktop(&self) -> bool {
        true
    }
}

/// Accounts and passwords held in memory (tests, embedders without a settings store).
#[derive(Clone, Debug, Default)]
pub struct StaticDavSettings {
    pub accounts: Vec<DavAccount>,
    pub passwords: HashMap<String, String>,
}

impl DavSettings for StaticDavSettings {
    fn accounts(&self) -> Vec<DavAccount> {
        self.accounts.clone()
    }
    fn password(&self, account: &str) -> Option<String> {
        self.passwords.get(account).cloned()
    }
}

/// How the calendar and contacts resources reach their servers.
#[derive(Clone)]
pub struct DavConfig {
    /// The accounts; `None`: none configured.
    pub settings: Option<Arc<dyn DavSettings>>,
    /// The person's time zone (IANA name) that listings are shown in and times without a zone
    /// are read in; `None`: the system's (`TZ`, `/etc/localtime`), else UTC.
    pub timezone: Option<String>,
    /// How long one network step (connect, one request with its answer) may take.
    pub timeout: Duration,
    /// A PEM file of certificates to trust besides the system's, for every account (servers
    /// with a private certificate authority).
    pub ca_file: Option<PathBuf>,
    /// Also offer the desktop's own calendars and address books (Evolution Data Server on the
    /// session bus, Linux) beside the accounts, when EDS answers there.
    pub desktop: bool,
}

impl Default for DavConfig {
    fn default() -> Self {
        DavConfig {
            settings: None,
            timezone: None,
            timeout: Duration::from_secs(20),
            ca_file: None,
            desktop: true,
        }
    }
}

impl std::fmt::Debug for DavConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DavConfig")
            .field("settings", &self.settings.as_ref().map(|_| "..."))
            .field("timezone", &self.timezone)
            .field("timeout", &self.timeout)
            .field("ca_file", &self.ca_file)
            .field("desktop", &self.desktop)
            .finish()
    }
}

/// Calendars or address books.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Calendar,
    Contacts,
}

impl Kind {
    pub(crate) fn protocol(self) -> &'static str {
        match self {
            Kind::Calendar => "CalDAV",
            Kind::Contacts => "CardDAV",
        }
    }

    fn collection_word(self) -> &'static str {
        match self {
            Kind::Calendar => "calendar",
            Kind::Contacts => "address book",
        }
    }

    fn home_set(self) -> (&'static str, &'static str) {
        match self {
            Kind::Calendar => (http::CALDAV, "calendar-home-set"),
            Kind::Contacts => (http::CARDDAV, "addressbook-home-set"),
        }
    }

    fn resource_type(self) -> (&'static str, &'static str) {
        match self {
            Kind::Calendar => (http::CALDAV, "calendar"),
            Kind::Contacts => (http::CARDDAV, "addressbook"),
        }
    }

    /// The input field that names a collection.
    pub(crate) fn field(self) -> &'static str {
        match self {
            Kind::Calendar => "calendar",
            Kind::Contacts => "book",
        }
    }

    /// What one object is called in messages.
    pub(crate) fn object_word(self) -> &'static str {
        match self {
            Kind::Calendar => "event",
            Kind::Contacts => "contact",
        }
    }

    pub(crate) fn extension(self) -> &'static str {
        match self {
            Kind::Calendar => "ics",
            Kind::Contacts => "vcf",
        }
    }
}

/// The message that says how to add an account.
pub(crate) fn how_to_add_account(kind: Kind) -> String {
    format!(
        "No {} account is set up. Add one with `osprey config set dav.<name>.url \
         https://dav.example.com/` and `osprey config set dav.<name>.username <user>` (or the \
         setting `{ACCOUNTS_SETTING}`: {{\"<name>\": {{\"kind\": \"dav\", \"url\": ..., \
         \"username\": ...}}}}, kind caldav, carddav or dav for both), then store its password \
         in the keyring with `osprey config set dav.<name>.password -` (read from standard input)",
        kind.protocol()
    )
}

/// One account, ready to talk to its server.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    pub account: DavAccount,
    pub base: Url,
    pub password: Option<String>,
}

/// Where a collection's objects are kept.
#[derive(Clone, Debug)]
pub(crate) enum Store {
    /// On a CalDAV/CardDAV server.
    Dav(Session),
    /// In Evolution Data Server: the source's UID.
    #[cfg(target_os = "linux")]
    Eds(String),
}

/// A calendar or address book.
#[derive(Clone, Debug)]
pub(crate) struct Collection {
    pub account: String,
    pub url: Url,
    /// Its display name, else the last segment of its path.
    pub name: String,
    pub store: Store,
    /// Whether objects can be stored in it (a desktop calendar of birthdays cannot).
    pub writable: bool,
}

impl Collection {
    /// Whether it is one of the desktop's own (Evolution Data Server).
    pub(crate) fn is_desktop(&self) -> bool {
        match self.store {
            Store::Dav(_) => false,
            #[cfg(target_os = "linux")]
            Store::Eds(_) => true,
        }
    }

    /// `Work (home)`: the name and, when there are several accounts, the account.
    pub(crate) fn label(&self, accounts: usize) -> String {
        if accounts > 1 {
            format!("{} ({})", self.name, self.account)
        } else {
            self.name.clone()
        }
    }

    /// Where an object with `uid` is stored when Osprey creates it.
    pub(crate) fn object_url(&self, uid: &str, kind: Kind) -> Result<Url> {
        let safe = uid.len() <= 100
            && uid
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
            && !uid.starts_with('.');
        let file = if safe {
            format!("{uid}.{}", kind.extension())
        } else {
            format!("{}.{}", short_hash(uid), kind.extension())
        };
        self.url
            .join(&file)
            .map_err(|e| Error::Failed(format!("building the address of {uid:?}: {e}")))
    }
}

/// The object a call's `uid` names, where it was found.
pub(crate) struct Located {
    pub collection: Collection,
    pub object: StoredObject,
    pub uid: String,
    /// How many accounts the call looked in (for [`Collection::label`]).
    pub accounts: usize,
}

/// A stored object: where it is, its version, its text.
#[derive(Clone, Debug)]
pub(crate) struct StoredObject {
    pub url: Url,
    pub etag: Option<String>,
    pub text: String,
}

/// The hex SHA-256 of `text`, cut to 24 characters: derived UIDs and file names.
pub(crate) fn short_hash(text: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(text.as_bytes());
    hex::encode(&digest[..12])
}

/// The CalDAV/CardDAV side of the `os` tool: the accounts, the HTTP client, the home sets found
/// so far and the versions of the objects the model was shown.
pub(crate) struct Dav {
    config: DavConfig,
    http: DavHttp,
    /// Home-set URLs per account (name, URL, user) and kind: found once per tool.
    homes: Mutex<HashMap<(String, Kind), Vec<Url>>>,
    /// URL -> ETag of every object the model was shown (list, search) or that Osprey wrote, so
    /// update and delete send the version the model decided on.
    seen: Mutex<HashMap<String, String>>,
    /// The desktop's stores; `None` when switched off.
    #[cfg(target_os = "linux")]
    eds: Option<crate::linux::eds::Eds>,
}

impl std::fmt::Debug for Dav {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dav")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// At most this many remembered versions; past it the memory starts over.
const SEEN_LIMIT: usize = 20_000;

impl Dav {
    /// The accounts of `config`, and the desktop's stores on the session bus at
    /// `session_bus_address` (`None`: the process's) when `config.desktop` is set.
    pub(crate) fn new(config: DavConfig, session_bus_address: Option<String>) -> Dav {
        #[cfg(not(target_os = "linux"))]
        let _ = session_bus_address;
        Dav {
            #[cfg(target_os = "linux")]
            eds: config
                .desktop
                .then(|| crate::linux::eds::Eds::new(session_bus_address, config.timeout)),
            http: DavHttp::new(config.timeout, config.ca_file.clone()),
            config,
            homes: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// The person's zone: configured, else the system's, else UTC.
    pub(crate) fn local_zone(&self) -> chrono_tz::Tz {
        self.config
            .timezone
            .clone()
            .or_else(|| iana_time_zone::get_timezone().ok())
            .and_then(|name| name.parse().ok())
            .unwrap_or(chrono_tz::UTC)
    }

    /// The accounts serving `kind` (only `wanted` when given), each with its password;
    /// `not_configured` when there is none. Read on a blocking thread (a keyring look-up may
    /// block), and only the passwords of the accounts the call uses.
    pub(crate) async fn sessions(&self, kind: Kind, wanted: Option<&str>) -> Result<Vec<Session>> {
        let Some(settings) = self.config.settings.clone() else {
            return Err(Error::NotConfigured(how_to_add_account(kind)));
        };
        let wanted = wanted.map(str::to_string);
        tokio::task::spawn_blocking(move || {
            let serving: Vec<DavAccount> = settings
                .accounts()
                .into_iter()
                .filter(|a| a.kind.serves(kind))
                .collect();
            if serving.is_empty() {
                return Err(Error::NotConfigured(how_to_add_account(kind)));
            }
            let names = serving
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let chosen: Vec<DavAccount> = serving
                .iter()
                .filter(|a| {
                    wanted
                        .as_deref()
                        .is_none_or(|w| w.eq_ignore_ascii_case(&a.name))
                })
                .cloned()
                .collect();
            if chosen.is_empty() {
                return Err(Error::invalid(format!(
                    "no {} account named {:?}; the accounts are: {names}",
                    kind.protocol(),
                    wanted.unwrap_or_default()
                )));
            }
            chosen
                .into_iter()
                .map(|account| {
                    let base = account_base(&account)?;
                    let password = settings.password(&account.name);
                    Ok(Session {
                        account,
                        base,
                        password,
                    })
                })
                .collect()
        })
        .await
        .map_err(|e| Error::Failed(format!("reading the accounts failed: {e}")))?
    }

    /// Every calendar (or address book) of the accounts, found from their base URLs, then the
    /// desktop's (only those of `account` when given: a configured account or a desktop one).
    pub(crate) async fn collections(
        &self,
        kind: Kind,
        account: Option<&str>,
    ) -> Result<Vec<Collection>> {
        let desktop = self.desktop_collections(kind).await;
        let found = desktop.as_deref().unwrap_or_default();
        if let Some(wanted) = account
            && found.iter().any(|c| c.account.eq_ignore_ascii_case(wanted))
        {
            return Ok(found
                .iter()
                .filter(|c| c.account.eq_ignore_ascii_case(wanted))
                .cloned()
                .collect());
        }
        let sessions = match self.sessions(kind, account).await {
            Ok(sessions) => sessions,
            Err(Error::NotConfigured(_)) if account.is_none() && !found.is_empty() => {
                return Ok(found.to_vec());
            }
            Err(Error::NotConfigured(_)) if !found.is_empty() => {
                return Err(Error::invalid(format!(
                    "no account named {:?}; the desktop's accounts are: {}",
                    account.unwrap_or_default(),
                    desktop_accounts(found)
                )));
            }
            Err(Error::NotConfigured(how)) => {
                return Err(Error::NotConfigured(match (&desktop, account) {
                    (Err(why), None) => {
                        format!("{how}. The desktop's own stores are not there either: {why}")
                    }
                    _ => how,
                }));
            }
            Err(Error::InvalidInput(message)) if !found.is_empty() => {
                return Err(Error::invalid(format!(
                    "{message}; the desktop's accounts are: {}",
                    desktop_accounts(found)
                )));
            }
            Err(error) => return Err(error),
        };
        let mut out = Vec::new();
        for session in sessions {
            out.extend(self.account_collections(&session, kind).await?);
        }
        if account.is_none() {
            out.extend(found.iter().cloned());
        }
        Ok(out)
    }

    /// The collections of one account.
    pub(crate) async fn account_collections(
        &self,
        session: &Session,
        kind: Kind,
    ) -> Result<Vec<Collection>> {
        let key = (
            format!(
                "{}\n{}\n{}",
                session.account.name, session.account.url, session.account.username
            ),
            kind,
        );
        let cached = self
            .homes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let homes = match cached {
            Some(homes) => homes,
            None => {
                let homes = self.discover_homes(session, kind).await?;
                self.homes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.clone(), homes.clone());
                homes
            }
        };
        let mut out: Vec<Collection> = Vec::new();
        for home in homes {
            let listing = match self
                .http
                .propfind(session, kind, &home, "1", http::COLLECTION_PROPS)
                .await
            {
                Ok(listing) => listing,
                Err(error) => {
                    // The server may have moved things: find the home set again next time.
                    self.homes
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&key);
                    return Err(error);
                }
            };
            for resource in listing {
                if !is_collection_of(&resource, kind) {
                    continue;
                }
                if kind == Kind::Calendar && !holds_events(&resource) {
                    continue;
                }
                let url = self.http.resolve(&home, &resource.href)?;
                if out.iter().any(|c| c.url == url) {
                    continue;
                }
                let name = resource
                    .prop(http::DAV, "displayname")
                    .map(|p| p.text.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| last_segment(&url));
                out.push(Collection {
                    account: session.account.name.clone(),
                    url,
                    name,
                    store: Store::Dav(session.clone()),
                    writable: true,
                });
            }
        }
        Ok(out)
    }

    /// Base URL -> principal -> home set. A base URL that is itself a calendar or address book
    /// is used as it is; a server that names no principal at the base URL is asked at its
    /// `/.well-known/caldav` (or `carddav`) address (RFC 6764).
    async fn discover_homes(&self, session: &Session, kind: Kind) -> Result<Vec<Url>> {
        let (home_ns, home_name) = kind.home_set();
        let base = &session.base;
        let answer = self
            .http
            .propfind(session, kind, base, "0", http::DISCOVERY_PROPS)
            .await?;
        let first = answer.first();
        if first.is_some_and(|r| is_collection_of(r, kind)) {
            return Ok(vec![base.clone()]);
        }
        if let Some(homes) = first.and_then(|r| r.prop(home_ns, home_name))
            && !homes.hrefs.is_empty()
        {
            return self.resolve_all(base, &homes.hrefs);
        }
        let mut principal = first
            .and_then(|r| r.prop(http::DAV, "current-user-principal"))
            .and_then(|p| p.hrefs.first().cloned());
        let mut principal_base = base.clone();
        if principal.is_none() {
            let well_known = base
                .join(&format!("/.well-known/{}", kind.protocol().to_lowercase()))
                .map_err(|e| Error::Failed(e.to_string()))?;
            if let Ok(answer) = self
                .http
                .propfind(session, kind, &well_known, "0", http::DISCOVERY_PROPS)
                .await
            {
                principal = answer
                    .first()
                    .and_then(|r| r.prop(http::DAV, "current-user-principal"))
                    .and_then(|p| p.hrefs.first().cloned());
                principal_base = well_known;
            }
        }
        let Some(principal) = principal else {
            return Err(Error::unavailable(
                format!("the {} server at {}", kind.protocol(), base),
                format!(
                    "it names no current-user-principal, and {base} is not a {} itself; set the \
                     account's URL to the server's DAV root or to the {} itself",
                    kind.collection_word(),
                    kind.collection_word()
                ),
            ));
        };
        let principal = self.http.resolve(&principal_base, &principal)?;
        let answer = self
            .http
            .propfind(session, kind, &principal, "0", http::DISCOVERY_PROPS)
            .await?;
        match answer
            .first()
            .and_then(|r| r.prop(home_ns, home_name))
            .filter(|p| !p.hrefs.is_empty())
        {
            Some(homes) => self.resolve_all(&principal, &homes.hrefs),
            // Some servers keep the collections right under the principal.
            None => Ok(vec![principal]),
        }
    }

    /// Whether the accounts and the desktop's stores answer: the calendars (or address books)
    /// of each, or why not.
    pub(crate) async fn probe(&self, kind: Kind) -> Result<String> {
        let accounts = self.probe_accounts(kind).await;
        match (accounts, self.desktop_probe(kind).await) {
            (Ok(accounts), None) => Ok(accounts),
            (Ok(accounts), Some(Ok(desktop))) => Ok(format!("{accounts}; {desktop}")),
            (Ok(accounts), Some(Err(why))) => Ok(format!(
                "{accounts}; the desktop's own stores: {}: {why}",
                why.code()
            )),
            (Err(Error::NotConfigured(_)), Some(Ok(desktop))) => Ok(desktop),
            (Err(error), Some(Ok(desktop))) => Ok(format!("{desktop}; {}: {error}", error.code())),
            (Err(Error::NotConfigured(how)), Some(Err(why))) => Err(Error::NotConfigured(format!(
                "{how}. The desktop's own stores are not there either: {why}"
            ))),
            (Err(error), _) => Err(error),
        }
    }

    /// Whether the configured accounts answer.
    async fn probe_accounts(&self, kind: Kind) -> Result<String> {
        let sessions = self.sessions(kind, None).await?;
        let mut parts = Vec::new();
        let mut first_error = None;
        let mut answered = 0;
        for session in &sessions {
            match self.account_collections(session, kind).await {
                Ok(found) => {
                    answered += 1;
                    let names: Vec<&str> = found.iter().map(|c| c.name.as_str()).collect();
                    parts.push(match names.as_slice() {
                        [] => format!(
                            "account `{}`: no {} yet (create one in the server's web interface \
                             or app)",
                            session.account.name,
                            kind.collection_word()
                        ),
                        _ => format!(
                            "account `{}`: {} ({})",
                            session.account.name,
                            count(names.len(), kind.collection_word()),
                            names.join(", ")
                        ),
                    });
                }
                Err(error) => {
                    parts.push(format!(
                        "account `{}`: {}: {error}",
                        session.account.name,
                        error.code()
                    ));
                    first_error.get_or_insert(error);
                }
            }
        }
        if let Some(error) = first_error
            && answered == 0
        {
            return Err(error);
        }
        Ok(parts.join("; "))
    }

    fn resolve_all(&self, base: &Url, hrefs: &[String]) -> Result<Vec<Url>> {
        hrefs.iter().map(|h| self.http.resolve(base, h)).collect()
    }

    /// The collection `wanted` names (display name, last path segment or URL), or the only one.
    pub(crate) async fn pick(
        &self,
        kind: Kind,
        account: Option<&str>,
        wanted: Option<&str>,
    ) -> Result<(Collection, usize)> {
        let all = self.collections(kind, account).await?;
        let accounts = count_accounts(&all);
        let word = kind.collection_word();
        let names = || {
            all.iter()
                .map(|c| format!("{:?}", c.label(accounts)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let found: Vec<&Collection> = match wanted {
            // Without a name, only where objects can be stored (not a desktop's birthdays).
            None if all.iter().any(|c| c.writable) => all.iter().filter(|c| c.writable).collect(),
            Some(wanted) => {
                let w = wanted.trim();
                let exact: Vec<&Collection> = all
                    .iter()
                    .filter(|c| {
                        c.name.eq_ignore_ascii_case(w)
                            || last_segment(&c.url).eq_ignore_ascii_case(w)
                            || c.url.as_str() == w
                            || c.label(2).eq_ignore_ascii_case(w)
                    })
                    .collect();
                exact
            }
            None => all.iter().collect(),
        };
        match found.as_slice() {
            [one] => Ok(((*one).clone(), accounts)),
            [] if all.is_empty() => Err(Error::NotConfigured(format!(
                "the {} account has no {word}; create one in its server's web interface or app",
                kind.protocol()
            ))),
            [] => Err(Error::invalid(format!(
                "no {word} named {:?}; the {word}s are: {}",
                wanted.unwrap_or_default(),
                names()
            ))),
            _ => Err(Error::invalid(format!(
                "there are several {word}s; say which with `{}`: {}",
                kind.field(),
                names()
            ))),
        }
    }

    /// The collections `wanted` narrows to (all when `None`).
    pub(crate) async fn select(
        &self,
        kind: Kind,
        account: Option<&str>,
        wanted: Option<&str>,
    ) -> Result<(Vec<Collection>, usize)> {
        match wanted {
            Some(_) => {
                let (one, accounts) = self.pick(kind, account, wanted).await?;
                Ok((vec![one], accounts))
            }
            None => {
                let all = self.collections(kind, account).await?;
                let accounts = count_accounts(&all);
                Ok((all, accounts))
            }
        }
    }

    /// `Work (account home): URL` for each collection.
    pub(crate) async fn describe_collections(
        &self,
        kind: Kind,
        account: Option<&str>,
    ) -> Result<String> {
        let all = self.collections(kind, account).await?;
        if all.is_empty() {
            return Ok(format!("The accounts have no {}s.", kind.collection_word()));
        }
        Ok(all
            .iter()
            .map(|c| format!("{} (account {}): {}", c.name, c.account, c.url))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    /// The object the call's `uid` names, in the collection its `calendar`/`book` names (any,
    /// when none).
    pub(crate) async fn locate(&self, kind: Kind, call: &Call) -> Result<Located> {
        let uid = check_uid(call.str("uid").unwrap_or_default())?.to_string();
        let (collections, accounts) = self
            .select(kind, call.str("account"), call.str(kind.field()))
            .await?;
        let Some((collection, object)) = self.find(kind, &collections, &uid).await? else {
            return Err(Error::invalid(format!(
                "no {} with uid {uid:?}; `os {} search` or `list` shows the uids",
                kind.object_word(),
                call.resource()
            )));
        };
        Ok(Located {
            collection,
            object,
            uid,
            accounts,
        })
    }

    /// The version a change is conditional on: the one the model was shown, else the current.
    fn version(&self, object: &StoredObject) -> String {
        self.remembered(&object.url)
            .or_else(|| object.etag.clone())
            .unwrap_or_else(|| "*".to_string())
    }

    /// Remembers the version of an object the model was shown.
    pub(crate) fn remember(&self, url: &Url, etag: Option<&str>) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        match etag {
            Some(etag) => {
                if seen.len() >= SEEN_LIMIT {
                    seen.clear();
                }
                seen.insert(url.to_string(), etag.to_string());
            }
            None => {
                seen.remove(url.as_str());
            }
        }
    }

    /// The version the model was last shown of the object at `url`.
    pub(crate) fn remembered(&self, url: &Url) -> Option<String> {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(url.as_str())
            .cloned()
    }
}

/// The account's base URL, or which of its settings is missing or wrong and how to set it.
fn account_base(account: &DavAccount) -> Result<Url> {
    let name = &account.name;
    for (missing, field, example) in [
        (
            account.url.trim().is_empty(),
            "url",
            "https://dav.example.com/",
        ),
        (account.username.trim().is_empty(), "username", "<user>"),
    ] {
        if missing {
            return Err(Error::NotConfigured(format!(
                "the account `{name}` has no {field} yet: set it with `osprey config set \
                 dav.{name}.{field} {example}`"
            )));
        }
    }
    Url::parse(&account.url).map_err(|e| {
        Error::NotConfigured(format!(
            "the account `{name}` has an unusable URL {:?} ({e}); fix it with `osprey config set \
             dav.{name}.url https://...`",
            account.url
        ))
    })
}

/// A UID a person or model gave: printable, on one line.
pub(crate) fn check_uid(uid: &str) -> Result<&str> {
    let uid = uid.trim();
    if uid.is_empty() {
        return Err(Error::invalid(
            "needs `uid`: list or search shows each one's uid",
        ));
    }
    if uid.len() > 255 || uid.chars().any(char::is_control) {
        return Err(Error::invalid(
            "`uid` must be 1 to 255 printable characters",
        ));
    }
    Ok(uid)
}

/// Whether `text` holds a `UID:` line with exactly `uid` (as the server has it: unescaped UIDs
/// are the norm).
fn contains_uid(text: &str, uid: &str) -> bool {
    lines::Document::parse(text).is_ok_and(|doc| {
        doc.blocks
            .iter()
            .flat_map(|b| std::iter::once(b).chain(b.children.iter()))
            .any(|b| b.value("UID").as_deref() == Some(uid))
    })
}

/// The names of the desktop's accounts among `collections`.
fn desktop_accounts(collections: &[Collection]) -> String {
    let mut names: Vec<&str> = collections.iter().map(|c| c.account.as_str()).collect();
    names.dedup();
    names.join(", ")
}

fn count_accounts(collections: &[Collection]) -> usize {
    let mut names: Vec<&str> = collections.iter().map(|c| c.account.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.len()
}

fn is_collection_of(resource: &Resource, kind: Kind) -> bool {
    let (ns, name) = kind.resource_type();
    resource
        .prop(http::DAV, "resourcetype")
        .is_some_and(|p: &Prop| p.has_child(ns, name))
}

/// A calendar that can hold events: one that names no component set, or names VEVENT.
fn holds_events(resource: &Resource) -> bool {
    match resource.prop(http::CALDAV, "supported-calendar-component-set") {
        Some(set) if !set.components.is_empty() => set
            .components
            .iter()
            .any(|c| c.eq_ignore_ascii_case("VEVENT")),
        _ => true,
    }
}

fn last_segment(url: &Url) -> String {
    url.path_segments()
        .and_then(|mut s| s.rfind(|p| !p.is_empty()).map(str::to_string))
        .unwrap_or_else(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accounts whose password look-ups are counted.
    struct Counted {
        accounts: Vec<DavAccount>,
        asked: Mutex<Vec<String>>,
    }

    impl DavSettings for Counted {
        fn accounts(&self) -> Vec<DavAccount> {
            self.accounts.clone()
        }
        fn password(&self, account: &str) -> Option<String> {
            self.asked.lock().unwrap().push(account.to_string());
            Some("pw".into())
        }
    }

    #[tokio::test]
    async fn only_the_passwords_of_the_accounts_a_call_uses_are_read() {
        let account = |name: &str, kind| DavAccount {
            name: name.into(),
            kind,
            url: "https://dav.example.com/".into(),
            username: "me".into(),
        };
        let settings = Arc::new(Counted {
            accounts: vec![
                account("home", DavKind::Dav),
                account("work", DavKind::Caldav),
                account("people", DavKind::Carddav),
            ],
            asked: Mutex::new(Vec::new()),
        });
        let dav = Dav::new(
            DavConfig {
                settings: Some(settings.clone()),
                desktop: false,
                ..DavConfig::default()
            },
            None,
        );
        let asked = || std::mem::take(&mut *settings.asked.lock().unwrap());
        let sessions = dav.sessions(Kind::Calendar, Some("WORK")).await.unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].password.as_deref(), Some("pw"));
        assert_eq!(asked(), ["work"]);
        dav.sessions(Kind::Contacts, None).await.unwrap();
        assert_eq!(asked(), ["home", "people"]);
        let err = dav
            .sessions(Kind::Contacts, Some("work"))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("the accounts are: home, people"),
            "{err}"
        );
        assert!(asked().is_empty());
    }
}
