//! Mail: the person's accounts (IMAP to read, SMTP to send), set up in the `os.mail` setting with
//! each password in the secret store (the system keyring, else Osprey's private file). Folders,
//! list, search and read go over IMAP (async-imap on tokio); send and reply build the message
//! with lettre and hand it to the account's SMTP server; messages are parsed with mail-parser.
//! Every network step has a deadline (`timeout`), TLS is rustls with the system's trust store,
//! and a password only crosses the network in clear text to a loopback server, or where the
//! account says `allow_insecure`.
//!
//! This module is the same on every platform: it needs the network, not the desktop.

mod imap;
mod message;
mod net;
mod smtp;
mod utf7;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::tool::count;

pub use message::Attachment;

/// The setting that holds the accounts: `{"accounts": [...]}` (see [`MailSettings`]).
pub const SETTING: &str = "os.mail";

/// The name a mail account's password is kept under in the secret store.
pub fn password_secret(account: &str) -> String {
    format!("os.mail.{account}.password")
}

/// The `os.mail` setting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MailSettings {
    /// The accounts; a call that names none uses the first.
    pub accounts: Vec<MailAccount>,
    /// Seconds each network step (look-up, connect, TLS, login, one command) may take; 30 when
    /// unset.
    pub timeout_seconds: Option<u64>,
}

/// One mail account. The password is not here: it lives in the secret store under
/// [`password_secret`] (`osprey os mail-password <name>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailAccount {
    /// What calls name it by (`work`): letters, digits, `.`, `_`, `-`.
    pub name: String,
    /// The address mail is sent from.
    pub email: String,
    /// The name shown beside the address in sent mail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The login for both servers; the email address when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    pub imap: MailServer,
    pub smtp: MailServer,
    /// Lets `tls: "plain"` reach a server that is not on this machine, sending the password in
    /// clear text. Off: plain connections are refused unless every address of the host is a
    /// loopback address.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_insecure: bool,
    /// A PEM file of certificates to trust besides the system's (a server with a private CA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// A folder a copy of each sent message is saved to (`Sent`); none: the server's own
    /// handling (Gmail and others keep a copy themselves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_folder: Option<String>,
}

/// An IMAP or SMTP server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailServer {
    pub host: String,
    /// The port; by `tls` when unset: IMAP 993 / 143 / 143, SMTP 465 / 587 / 25.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(default)]
    pub tls: TlsMode,
}

/// How a connection is secured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    /// TLS from the first byte (IMAPS 993, SMTPS 465).
    #[default]
    Tls,
    /// A plain connection upgraded with STARTTLS, which must succeed (never falls back).
    Starttls,
    /// No encryption: loopback servers only, unless the account sets `allow_insecure`.
    Plain,
}

impl TlsMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TlsMode::Tls => "tls",
            TlsMode::Starttls => "starttls",
            TlsMode::Plain => "plain",
        }
    }
}

impl MailAccount {
    /// The login name.
    pub fn login(&self) -> &str {
        self.username
            .as_deref()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or(&self.email)
    }
}

impl MailServer {
    fn port_for(&self, smtp: bool) -> u16 {
        self.port.unwrap_or(match (smtp, self.tls) {
            (false, TlsMode::Tls) => 993,
            (false, _) => 143,
            (true, TlsMode::Tls) => 465,
            (true, TlsMode::Starttls) => 587,
            (true, TlsMode::Plain) => 25,
        })
    }
}

/// Whether `host` names this machine without a look-up (`localhost`, `127.0.0.1`, `::1`).
fn is_loopback_name(host: &str) -> bool {
    let host = host.trim().trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.to_ascii_lowercase().ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

impl MailSettings {
    /// Checks the setting before it is stored: names, addresses, hosts, and that no account
    /// sends its password in clear text off this machine without saying so.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let mut seen = Vec::new();
        for account in &self.accounts {
            let name = &account.name;
            if name.is_empty()
                || name.len() > 64
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            {
                return Err(format!(
                    "mail account name {name:?} must be 1 to 64 letters, digits, `.`, `_` or `-`"
                ));
            }
            if seen.contains(&name) {
                return Err(format!("two mail accounts are named {name:?}"));
            }
            seen.push(name);
            if message::parse_address(&account.email).is_none() {
                return Err(format!(
                    "mail account {name:?}: `email` {:?} is not an email address",
                    account.email
                ));
            }
            for (which, server) in [("imap", &account.imap), ("smtp", &account.smtp)] {
                let host = server.host.trim();
                if host.is_empty() || host.len() > 253 || host.contains(char::is_whitespace) {
                    return Err(format!(
                        "mail account {name:?}: `{which}.host` must be a host name or address"
                    ));
                }
                if server.port == Some(0) {
                    return Err(format!("mail account {name:?}: `{which}.port` cannot be 0"));
                }
                if server.tls == TlsMode::Plain
                    && !account.allow_insecure
                    && !is_loopback_name(host)
                {
                    return Err(format!(
                        "mail account {name:?}: `{which}.tls` \"plain\" would send the password \
                         to {host} in clear text; use \"tls\" or \"starttls\" (clear text is \
                         for servers on this machine, or set \"allow_insecure\": true)"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Looks a secret up by name (the secret store's `get`); `Ok(None)` when none is stored.
pub type SecretLookup =
    Arc<dyn Fn(&str) -> std::result::Result<Option<String>, String> + Send + Sync>;

/// Reads the stored `os.mail` setting.
pub type SettingsLookup = Arc<dyn Fn() -> MailSettings + Send + Sync>;

/// What the `os` tool knows about mail: the accounts, where passwords come from, the limits.
#[derive(Clone)]
pub struct MailConfig {
    pub accounts: Vec<MailAccount>,
    /// When set, the setting is read at every call and its accounts and timeout replace
    /// `accounts` and `timeout`, so a change to `os.mail` applies without a restart.
    pub settings: Option<SettingsLookup>,
    /// Where passwords are read from (by [`password_secret`]); `None`: nowhere, so every
    /// account answers `not_configured`.
    pub secrets: Option<SecretLookup>,
    /// How long each network step may take.
    pub timeout: Duration,
    /// The most characters of a body one `read` returns; `offset` pages on.
    pub max_body_chars: usize,
}

impl Default for MailConfig {
    fn default() -> Self {
        MailConfig {
            accounts: Vec::new(),
            settings: None,
            secrets: None,
            timeout: Duration::from_secs(30),
            max_body_chars: 20_000,
        }
    }
}

impl MailConfig {
    /// The configuration that follows the stored setting, with passwords from a secret store.
    pub fn live(settings: SettingsLookup, secrets: SecretLookup) -> MailConfig {
        MailConfig {
            settings: Some(settings),
            secrets: Some(secrets),
            ..MailConfig::default()
        }
    }

    /// The accounts and the step timeout in force now (reads the setting: call it from a
    /// blocking thread).
    fn current(&self) -> (Vec<MailAccount>, Duration) {
        match &self.settings {
            Some(read) => {
                let settings = read();
                let timeout = settings
                    .timeout_seconds
                    .map_or(self.timeout, |s| Duration::from_secs(s.clamp(1, 600)));
                (settings.accounts, timeout)
            }
            None => (self.accounts.clone(), self.timeout),
        }
    }
}

impl fmt::Debug for MailConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MailConfig")
            .field(
                "accounts",
                &self.accounts.iter().map(|a| &a.name).collect::<Vec<_>>(),
            )
            .field("settings", &self.settings.is_some())
            .field("secrets", &self.secrets.is_some())
            .field("timeout", &self.timeout)
            .field("max_body_chars", &self.max_body_chars)
            .finish()
    }
}

/// How to add an account, for `not_configured` answers.
pub fn setup_steps() -> String {
    format!(
        "add an account to the `{SETTING}` setting, e.g. `osprey config set {SETTING} \
         '{{\"accounts\": [{{\"name\": \"personal\", \"email\": \"me@example.com\", \"imap\": \
         {{\"host\": \"imap.example.com\"}}, \"smtp\": {{\"host\": \"smtp.example.com\", \"port\": \
         587, \"tls\": \"starttls\"}}}}]}}'` (fields: name, email, username, display_name, \
         imap/smtp host, port, tls \"tls\"|\"starttls\"|\"plain\"), then store its password with \
         `osprey os mail-password personal` (read from standard input, kept in the system \
         keyring)"
    )
}

/// A message to send.
#[derive(Clone, Debug, Default)]
pub struct Outgoing {
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    pub text: String,
    pub attachments: Vec<Attachment>,
}

/// A search: words that must each appear in the sender, the subject or the body, and dates.
#[derive(Clone, Debug, Default)]
pub struct Search {
    pub query: Option<String>,
    /// Received on or after this day (`YYYY-MM-DD`).
    pub since: Option<String>,
    /// Received before this day.
    pub before: Option<String>,
}

/// Which page of a listing.
#[derive(Clone, Copy, Debug)]
pub struct Page {
    /// Messages per page.
    pub limit: usize,
    /// 1-based.
    pub page: usize,
}

/// What one call works with: its account, that account's password and the step timeout, read
/// together once per call on a blocking thread (the setting is read from the database, and a
/// keyring look-up goes over D-Bus, so neither may run on the async runtime), then passed down.
#[derive(Clone)]
pub struct Resolved {
    pub account: MailAccount,
    password: String,
    timeout: Duration,
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolved")
            .field("account", &self.account.name)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The account `name`, or the first one.
fn pick(accounts: &[MailAccount], name: Option<&str>) -> Result<MailAccount> {
    if accounts.is_empty() {
        return Err(Error::NotConfigured(format!(
            "no mail account is set up. To add one: {}",
            setup_steps()
        )));
    }
    match name.map(str::trim).filter(|n| !n.is_empty()) {
        None => Ok(accounts[0].clone()),
        Some(wanted) => accounts
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(wanted))
            .cloned()
            .ok_or_else(|| {
                Error::invalid(format!(
                    "no mail account named {wanted:?}; the accounts are: {}",
                    accounts
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }),
    }
}

impl MailConfig {
    /// The account's password from the secret store (blocking).
    fn password(&self, account: &MailAccount) -> Result<String> {
        let missing = || {
            Error::NotConfigured(format!(
                "no password is stored for the mail account {:?}. Store it with `osprey os \
                 mail-password {}` (it reads the password from standard input and keeps it in \
                 the system keyring, or Osprey's private secrets file without one)",
                account.name, account.name
            ))
        };
        let Some(lookup) = &self.secrets else {
            return Err(missing());
        };
        lookup(&password_secret(&account.name))
            .map_err(|e| Error::unavailable("the secret store", e))?
            .filter(|p| !p.is_empty())
            .ok_or_else(missing)
    }
}

/// The mail accounts, as the `os` tool uses them.
#[derive(Debug)]
pub struct Mail {
    config: MailConfig,
}

impl Mail {
    pub fn new(config: MailConfig) -> Mail {
        Mail { config }
    }

    pub fn config(&self) -> &MailConfig {
        &self.config
    }

    /// Runs `work` on the configuration on a blocking thread.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&MailConfig) -> T + Send + 'static,
    ) -> Result<T> {
        let config = self.config.clone();
        tokio::task::spawn_blocking(move || work(&config))
            .await
            .map_err(|e| Error::Failed(format!("reading the mail settings failed: {e}")))
    }

    /// The account `name` (or the first one) with its password and the timeout in force.
    pub async fn resolve(&self, name: Option<&str>) -> Result<Resolved> {
        let name = name.map(str::to_string);
        self.blocking(move |config| {
            let (accounts, timeout) = config.current();
            let account = pick(&accounts, name.as_deref())?;
            let password = config.password(&account)?;
            Ok(Resolved {
                account,
                password,
                timeout,
            })
        })
        .await?
    }

    async fn imap(&self, call: &Resolved) -> Result<imap::Imap> {
        imap::Imap::login(&call.account, &call.password, call.timeout).await
    }

    /// Folders with their message and unseen counts.
    pub async fn folders(&self, call: &Resolved) -> Result<String> {
        let mut imap = self.imap(call).await?;
        let result = imap.folders().await;
        imap.logout().await;
        let folders = result?;
        let mut lines = vec![format!(
            "{} of {}:",
            count(folders.len(), "folder"),
            call.account.name
        )];
        lines.extend(folders.iter().map(ToString::to_string));
        Ok(lines.join("\n"))
    }

    /// The newest messages of a folder, a page at a time.
    pub async fn list(&self, call: &Resolved, folder: &str, page: Page) -> Result<String> {
        let mut imap = self.imap(call).await?;
        let result = imap.list(folder, page).await;
        imap.logout().await;
        let (total, summaries) = result?;
        Ok(message::listing(folder, total, page, &summaries, None))
    }

    /// Messages that match, newest first, a page at a time.
    pub async fn search(
        &self,
        call: &Resolved,
        folder: &str,
        search: &Search,
        page: Page,
    ) -> Result<String> {
        let criteria = imap::criteria(search)?;
        let mut imap = self.imap(call).await?;
        let result = imap.search(folder, &criteria, page).await;
        imap.logout().await;
        let (total, summaries) = result?;
        Ok(message::listing(
            folder,
            total,
            page,
            &summaries,
            Some(&describe_search(search)),
        ))
    }

    /// One message as text: headers, the body from `offset` (cut at the limit, with how to go
    /// on) and its attachments. Marks it seen only when asked.
    pub async fn read(
        &self,
        call: &Resolved,
        folder: &str,
        uid: u32,
        offset: usize,
        mark_seen: bool,
    ) -> Result<String> {
        let mut imap = self.imap(call).await?;
        let result = imap.fetch_message(folder, uid, mark_seen).await;
        imap.logout().await;
        let (flags, raw) = result?;
        message::render(
            folder,
            uid,
            &flags,
            &raw,
            offset,
            self.config.max_body_chars,
            mark_seen,
        )
    }

    /// Logs in to the account's SMTP server as sending would, and sends nothing.
    pub async fn check_sending(&self, call: &Resolved) -> Result<()> {
        smtp::check(&call.account, &call.password, call.timeout).await
    }

    /// Sends a new message.
    pub async fn send(&self, call: &Resolved, outgoing: Outgoing) -> Result<String> {
        let email = message::compose(&call.account, &outgoing, None)?;
        self.deliver(call, email, None).await
    }

    /// Replies to a message (to its sender, or everyone with `reply_all`): `Re:` subject,
    /// In-Reply-To and References, the original quoted below the text; marks it answered.
    pub async fn reply(
        &self,
        call: &Resolved,
        folder: &str,
        uid: u32,
        reply_all: bool,
        text: String,
        attachments: Vec<Attachment>,
    ) -> Result<String> {
        let account = &call.account;
        let mut imap = self.imap(call).await?;
        let result: Result<String> = async {
            let (_, raw) = imap.fetch_message(folder, uid, false).await?;
            let reply = message::reply_to(account, &raw, reply_all, text, attachments)?;
            let email = message::compose(account, &reply.outgoing, Some(&reply.thread))?;
            let sent = self.deliver(call, email, Some(&mut imap)).await?;
            // Best effort: the reply went out either way.
            let _ = imap.mark_answered(folder, uid).await;
            Ok(sent)
        }
        .await;
        imap.logout().await;
        result
    }

    /// Hands the message to SMTP, then saves a copy to the account's sent folder if it has one
    /// (reusing `imap` when the caller is logged in already).
    async fn deliver(
        &self,
        call: &Resolved,
        email: message::Composed,
        imap: Option<&mut imap::Imap>,
    ) -> Result<String> {
        let account = &call.account;
        smtp::send(account, &call.password, &email, call.timeout).await?;
        let mut said = format!(
            "Sent {:?} to {} (Message-ID {}).",
            email.subject,
            email.recipients.join(", "),
            email.message_id
        );
        if let Some(folder) = account.sent_folder.as_deref().filter(|f| !f.is_empty()) {
            let saved = match imap {
                Some(session) => session.append_sent(folder, &email.formatted).await,
                None => match self.imap(call).await {
                    Ok(mut session) => {
                        let saved = session.append_sent(folder, &email.formatted).await;
                        session.logout().await;
                        saved
                    }
                    Err(err) => Err(err),
                },
            };
            match saved {
                Ok(()) => said.push_str(&format!(" A copy is in {folder}.")),
                Err(err) => said.push_str(&format!(" Saving a copy to {folder} failed: {err}")),
            }
        }
        Ok(said)
    }

    /// Whether mail works: accounts set up, passwords stored, each IMAP server answering.
    pub async fn probe(&self) -> Result<String> {
        let (accounts, timeout, stored) = self
            .blocking(|config| {
                let (accounts, timeout) = config.current();
                let stored: Vec<bool> = accounts
                    .iter()
                    .map(|a| config.password(a).is_ok())
                    .collect();
                (accounts, timeout, stored)
            })
            .await?;
        if accounts.is_empty() {
            return Err(Error::NotConfigured(format!(
                "no mail account is set up. To add one: {}",
                setup_steps()
            )));
        }
        let mut parts = Vec::new();
        let mut any = false;
        for (account, stored) in accounts.iter().zip(stored) {
            let password = if stored {
                "password stored"
            } else {
                "no password stored"
            };
            match imap::greet(account, timeout.min(Duration::from_secs(5))).await {
                Ok(()) => {
                    any = true;
                    parts.push(format!(
                        "{}: {} answers; {password}",
                        account.name,
                        imap::label(account)
                    ));
                }
                Err(err) => parts.push(format!("{}: {err}", account.name)),
            }
        }
        if any {
            Ok(parts.join("; "))
        } else {
            Err(Error::unavailable("mail", parts.join("; ")))
        }
    }
}

fn describe_search(search: &Search) -> String {
    let mut parts = Vec::new();
    if let Some(query) = &search.query {
        parts.push(format!("{query:?}"));
    }
    if let Some(since) = &search.since {
        parts.push(format!("since {since}"));
    }
    if let Some(before) = &search.before {
        parts.push(format!("before {before}"));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(value: serde_json::Value) -> MailSettings {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn settings_are_checked_before_they_are_stored() {
        let good = settings(json!({"accounts": [{
            "name": "work", "email": "me@example.com",
            "imap": {"host": "imap.example.com"},
            "smtp": {"host": "smtp.example.com", "port": 587, "tls": "starttls"}
        }]}));
        good.validate().unwrap();
        assert_eq!(good.accounts[0].imap.port_for(false), 993);
        assert_eq!(good.accounts[0].smtp.port_for(true), 587);
        assert_eq!(good.accounts[0].login(), "me@example.com");

        let clear = settings(json!({"accounts": [{
            "name": "work", "email": "me@example.com",
            "imap": {"host": "imap.example.com", "tls": "plain"},
            "smtp": {"host": "127.0.0.1", "tls": "plain"}
        }]}));
        let err = clear.validate().unwrap_err();
        assert!(err.contains("clear text"), "{err}");
        let mut allowed = clear.clone();
        allowed.accounts[0].allow_insecure = true;
        allowed.validate().unwrap();
        let mut local = clear;
        local.accounts[0].imap.host = "localhost".into();
        local.validate().unwrap();

        let mut bad = good.clone();
        bad.accounts[0].name = "a b".into();
        assert!(bad.validate().unwrap_err().contains("name"));
        let mut bad = good.clone();
        bad.accounts[0].email = "nobody".into();
        assert!(bad.validate().unwrap_err().contains("email"));
        let mut twice = good.clone();
        twice.accounts.push(good.accounts[0].clone());
        assert!(twice.validate().unwrap_err().contains("two mail accounts"));
        assert!(
            serde_json::from_value::<MailSettings>(json!({"accounts": [{"nmae": "x"}]})).is_err()
        );
    }

    #[tokio::test]
    async fn no_account_or_password_says_how_to_set_one_up() {
        let mail = Mail::new(MailConfig::default());
        let err = mail.resolve(None).await.unwrap_err();
        assert_eq!(err.code().as_str(), "not_configured");
        assert!(
            err.to_string().contains("osprey config set os.mail"),
            "{err}"
        );
        assert!(err.to_string().contains("osprey os mail-password"), "{err}");

        let account: MailAccount = serde_json::from_value(json!({
            "name": "work", "email": "me@example.com",
            "imap": {"host": "127.0.0.1"}, "smtp": {"host": "127.0.0.1"}
        }))
        .unwrap();
        let mail = Mail::new(MailConfig {
            accounts: vec![account],
            secrets: Some(Arc::new(|_| Ok(None))),
            ..MailConfig::default()
        });
        let err = mail.resolve(Some("WORK")).await.unwrap_err();
        assert_eq!(err.code().as_str(), "not_configured");
        assert!(
            err.to_string().contains("osprey os mail-password work"),
            "{err}"
        );
        let err = mail.resolve(Some("home")).await.unwrap_err();
        assert!(err.to_string().contains("accounts are: work"), "{err}");
    }

    #[tokio::test]
    async fn one_call_reads_the_setting_and_the_password_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let reads = Arc::new(AtomicUsize::new(0));
        let lookups = Arc::new(AtomicUsize::new(0));
        let (r, l) = (reads.clone(), lookups.clone());
        let mail = Mail::new(MailConfig::live(
            Arc::new(move || {
                r.fetch_add(1, Ordering::SeqCst);
                settings(json!({"accounts": [{
                    "name": "work", "email": "me@example.com",
                    "imap": {"host": "127.0.0.1"}, "smtp": {"host": "127.0.0.1"}
                }], "timeout_seconds": 7}))
            }),
            Arc::new(move |_| {
                l.fetch_add(1, Ordering::SeqCst);
                Ok(Some("pw".into()))
            }),
        ));
        let call = mail.resolve(None).await.unwrap();
        assert_eq!(
            (
                call.account.name.as_str(),
                call.timeout,
                call.password.as_str()
            ),
            ("work", Duration::from_secs(7), "pw")
        );
        assert_eq!(
            (reads.load(Ordering::SeqCst), lookups.load(Ordering::SeqCst)),
            (1, 1)
        );
        assert!(!format!("{call:?}").contains("pw"));
    }
}
