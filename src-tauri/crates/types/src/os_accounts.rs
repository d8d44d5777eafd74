//! The Accounts section of Settings: the person's mail accounts (IMAP and SMTP) and calendar and
//! contacts accounts (CalDAV/CardDAV) that the `os` tool uses, as the page shows and edits them.
//! Passwords only travel towards the core: a view says whether one is stored, never what it is.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// An IMAP or SMTP server of a mail account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct MailServerView {
    pub host: String,
    /// `None`: the default for `tls` (IMAP 993 / 143, SMTP 465 / 587 / 25).
    pub port: Option<u16>,
    /// `tls` (from the first byte), `starttls` or `plain` (servers on this machine only).
    pub tls: String,
}

/// One mail account as Settings lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct MailAccountView {
    pub name: String,
    pub email: String,
    /// Empty when unset.
    pub display_name: String,
    /// Empty when unset: the email address is the login.
    pub username: String,
    pub imap: MailServerView,
    pub smtp: MailServerView,
    /// Empty when unset: no copy is saved (the server's own handling).
    pub sent_folder: String,
    pub password_stored: bool,
}

/// One calendar and contacts account as Settings lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct DavAccountView {
    pub name: String,
    /// `dav` (both), `caldav` or `carddav`.
    pub kind: String,
    pub url: String,
    pub username: String,
    pub password_stored: bool,
}

/// Every account of the `os` tool's mail, calendar and contacts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct OsAccountsView {
    pub mail: Vec<MailAccountView>,
    pub dav: Vec<DavAccountView>,
}

/// A mail account to add, or to change (`previous_name`: the name it had; a rename keeps its
/// password).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct MailAccountInput {
    pub previous_name: Option<String>,
    pub name: String,
    pub email: String,
    pub display_name: String,
    pub username: String,
    pub imap: MailServerView,
    pub smtp: MailServerView,
    pub sent_folder: String,
    /// `None` or empty: keep the stored password.
    pub password: Option<String>,
}

/// A calendar and contacts account to add or change, as [`MailAccountInput`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct DavAccountInput {
    pub previous_name: Option<String>,
    pub name: String,
    pub kind: String,
    pub url: String,
    pub username: String,
    /// `None` or empty: keep the stored password.
    pub password: Option<String>,
}

/// What testing an account found: it works (and what was seen), or why not in words, with the
/// `os` tool's error code (`permission_denied` for a refused login, `service_unavailable` for a
/// server that does not answer or a TLS failure, `not_configured` for a missing password).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AccountCheck {
    pub ok: bool,
    pub code: Option<String>,
    pub message: String,
}
