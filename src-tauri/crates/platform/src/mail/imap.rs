//! Reading mail over IMAP with async-imap: connect (TLS, STARTTLS or, to loopback, plain), log
//! in, and the few commands the `mail` resource needs. Folders are opened read-only (EXAMINE)
//! unless a call changes flags, and bodies are fetched with `BODY.PEEK`, so nothing is marked
//! seen unless asked.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use async_imap::imap_proto::{BodyStructure, Response, Status};
use async_imap::types::{Fetch, Flag, Mailbox, NameAttribute};
use async_imap::{Client, Session};
use futures::TryStreamExt as _;

use super::message::{self, Summary};
use super::net::{self, MailStream, Target};
use super::{MailAccount, Page, Search, TlsMode, utf7};
use crate::error::{Error, Result, within};
use crate::tool::count;

/// What a listing fetches of each message.
const SUMMARY_ITEMS: &str =
    "(UID FLAGS BODYSTRUCTURE BODY.PEEK[HEADER.FIELDS (FROM SUBJECT DATE)])";
/// The largest message `read` downloads.
const MAX_MESSAGE_BYTES: u32 = 50 << 20;
/// Folders whose counts are asked for (STATUS is one round trip each).
const MAX_FOLDER_COUNTS: usize = 60;

/// `the IMAP server host:port` of an account.
pub(crate) fn label(account: &MailAccount) -> String {
    Target::imap(account).label()
}

/// Connects and reads the greeting without logging in: the status probe.
pub(crate) async fn greet(account: &MailAccount, timeout: Duration) -> Result<()> {
    open(account, timeout).await.map(drop)
}

/// A connection with its greeting read, secured as the account says.
async fn open(account: &MailAccount, timeout: Duration) -> Result<Client<MailStream>> {
    let target = Target::imap(account);
    let addresses = net::resolve(target, timeout).await?;
    let tcp = net::connect(target, &addresses, timeout).await?;
    let stream = match target.server.tls {
        TlsMode::Tls => MailStream::Tls(Box::new(net::handshake(target, tcp, timeout).await?)),
        TlsMode::Plain => MailStream::Plain(tcp),
        TlsMode::Starttls => {
            let mut client = Client::new(tcp);
            greeting(target, &mut client, timeout).await?;
            within(
                format!("STARTTLS with {}", target.label()),
                timeout,
                async {
                    client
                        .run_command_and_check_ok("STARTTLS", None)
                        .await
                        .map_err(|e| {
                            Error::unavailable(
                                target.label(),
                                format!(
                                    "it did not start TLS ({e}); use \"tls\" (port 993) if the \
                                     server offers it, never \"plain\" off this machine"
                                ),
                            )
                        })
                },
            )
            .await?;
            let tcp = client.into_inner();
            MailStream::Tls(Box::new(net::handshake(target, tcp, timeout).await?))
        }
    };
    let mut client = Client::new(stream);
    if target.server.tls != TlsMode::Starttls {
        greeting(target, &mut client, timeout).await?;
    }
    Ok(client)
}

async fn greeting<T>(target: Target<'_>, client: &mut Client<T>, timeout: Duration) -> Result<()>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + fmt::Debug + Send,
{
    let response = within(
        format!("the greeting of {}", target.label()),
        timeout,
        async {
            client.read_response().await.map_err(|e| {
                Error::unavailable(target.label(), format!("reading its greeting failed: {e}"))
            })
        },
    )
    .await?;
    match response {
        None => Err(Error::unavailable(
            target.label(),
            "it closed the connection without a greeting; is this the IMAP port, with the right `tls`?",
        )),
        Some(response) => match response.parsed() {
            Response::Data {
                status: Status::Bye,
                outcome,
            } => Err(Error::unavailable(
                target.label(),
                format!(
                    "it refused the connection: {}",
                    outcome.information.as_deref().unwrap_or("BYE")
                ),
            )),
            _ => Ok(()),
        },
    }
}

/// An IMAP error during `what`, as the crate's error.
fn imap_error(label: &str, what: &str, error: async_imap::error::Error) -> Error {
    use async_imap::error::Error as E;
    match error {
        E::Io(io) => {
            Error::unavailable(label, format!("the connection failed during {what}: {io}"))
        }
        E::ConnectionLost => {
            Error::unavailable(label, format!("it closed the connection during {what}"))
        }
        E::No(text) => Error::Failed(format!("{label} refused {what}: {text}")),
        E::Bad(text) => Error::Failed(format!("{label} did not accept {what}: {text}")),
        other => Error::Failed(format!("{what} on {label} failed: {other}")),
    }
}

/// A folder and its counts.
#[derive(Clone, Debug)]
pub(crate) struct Folder {
    pub name: String,
    pub role: Option<&'static str>,
    pub selectable: bool,
    pub counts: Option<(u32, Option<u32>)>,
}

impl fmt::Display for Folder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)?;
        if let Some(role) = self.role {
            write!(f, " [{role}]")?;
        }
        if !self.selectable {
            return write!(f, " (holds only folders)");
        }
        match self.counts {
            Some((messages, Some(unseen))) => write!(
                f,
                ": {}, {unseen} unseen",
                count(messages as usize, "message")
            ),
            Some((messages, None)) => {
                write!(f, ": {}", count(messages as usize, "message"))
            }
            None => Ok(()),
        }
    }
}

/// What a search asks the server for.
#[derive(Clone, Debug, Default)]
pub(crate) struct Criteria {
    /// Each must appear in the sender, the subject or the body.
    words: Vec<String>,
    /// IMAP dates (`3-Mar-2025`).
    since: Option<String>,
    before: Option<String>,
}

/// Checks a search and turns it into criteria.
pub(crate) fn criteria(search: &Search) -> Result<Criteria> {
    let words = match search
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        None => Vec::new(),
        Some(query) => {
            if query.chars().any(char::is_control) {
                return Err(Error::invalid("`query` must be on one line"));
            }
            let words = split_query(query);
            if words.len() > 8 || words.iter().any(|w| w.len() > 200) {
                return Err(Error::invalid(
                    "`query` takes at most 8 words (or \"quoted phrases\") of 200 characters",
                ));
            }
            words
        }
    };
    let date = |field: &str, value: Option<&str>| -> Result<Option<String>> {
        value
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| {
                chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
                    .map(|d| d.format("%-d-%b-%Y").to_string())
                    .map_err(|_| {
                        Error::invalid(format!("`{field}` must be a date like 2025-03-31"))
                    })
            })
            .transpose()
    };
    let criteria = Criteria {
        words,
        since: date("since", search.since.as_deref())?,
        before: date("before", search.before.as_deref())?,
    };
    if criteria.words.is_empty() && criteria.since.is_none() && criteria.before.is_none() {
        return Err(Error::invalid(
            "mail search needs `query` (words to find in the sender, subject or body), `since` or `before`",
        ));
    }
    Ok(criteria)
}

/// Words, with `"quoted phrases"` kept whole.
fn split_query(query: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = query.trim();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('"') {
            let end = after.find('"').unwrap_or(after.len());
            let phrase = after[..end].trim();
            if !phrase.is_empty() {
                words.push(phrase.to_string());
            }
            rest = after.get(end + 1..).unwrap_or("").trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            words.push(rest[..end].trim_matches('"').to_string());
            rest = rest[end..].trim_start();
        }
    }
    words.retain(|w| !w.is_empty());
    words
}

impl Criteria {
    fn needs_utf8(&self) -> bool {
        !self.words.iter().all(|w| w.is_ascii())
    }

    /// The SEARCH arguments. Non-ASCII words go as non-synchronizing literals where the server
    /// takes them (LITERAL+), else as quoted UTF-8, which most servers accept.
    fn command(&self, literal_plus: bool) -> String {
        let string = |word: &str| -> String {
            if !word.is_ascii() && literal_plus {
                format!("{{{}+}}\r\n{word}", word.len())
            } else {
                format!("\"{}\"", word.replace('\\', "\\\\").replace('"', "\\\""))
            }
        };
        let mut keys = Vec::new();
        if self.needs_utf8() {
            keys.push("CHARSET UTF-8".to_string());
        }
        for word in &self.words {
            let w = string(word);
            keys.push(format!("OR FROM {w} OR SUBJECT {w} BODY {w}"));
        }
        if let Some(since) = &self.since {
            keys.push(format!("SINCE {since}"));
        }
        if let Some(before) = &self.before {
            keys.push(format!("BEFORE {before}"));
        }
        if keys.iter().all(|k| k.starts_with("CHARSET")) {
            keys.push("ALL".into());
        }
        keys.join(" ")
    }
}

/// A logged-in IMAP session.
pub(crate) struct Imap {
    session: Session<MailStream>,
    label: String,
    timeout: Duration,
}

impl Imap {
    /// Connects and logs in; a refused login is `permission_denied` with what to check.
    pub async fn login(account: &MailAccount, password: &str, timeout: Duration) -> Result<Imap> {
        let target = Target::imap(account);
        let label = target.label();
        let client = open(account, timeout).await?;
        let user = account.login();
        let outcome = within(format!("logging in to {label}"), timeout, async {
            Ok(client.login(user, password).await)
        })
        .await?;
        match outcome {
            Ok(session) => Ok(Imap {
                session,
                label,
                timeout,
            }),
            Err((async_imap::error::Error::No(text) | async_imap::error::Error::Bad(text), _)) => {
                Err(Error::PermissionDenied {
                    what: format!("logging in to {label} as {user:?} ({})", text.trim()),
                    steps: format!(
                        "check `username` (or `email`) of the account {:?} in the `os.mail` \
                         setting and store the right password with `osprey os mail-password {}`; \
                         providers with two-step sign-in (Gmail, Outlook, iCloud, Fastmail) want \
                         an app password, and some need IMAP switched on in their settings",
                        account.name, account.name
                    ),
                })
            }
            Err((other, _)) => Err(imap_error(&label, "the login", other)),
        }
    }

    /// Logs out, briefly; a server that does not answer is left.
    pub async fn logout(&mut self) {
        let _ = tokio::time::timeout(
            self.timeout.min(Duration::from_secs(5)),
            self.session.logout(),
        )
        .await;
    }

    /// Every folder, INBOX first, with its counts (for the first 60 that can hold messages).
    pub async fn folders(&mut self) -> Result<Vec<Folder>> {
        let (label, timeout) = (self.label.clone(), self.timeout);
        let session = &mut self.session;
        let names = within(format!("listing the folders on {label}"), timeout, async {
            let stream = session
                .list(Some(""), Some("*"))
                .await
                .map_err(|e| imap_error(&label, "LIST", e))?;
            stream
                .try_collect::<Vec<_>>()
                .await
                .map_err(|e| imap_error(&label, "LIST", e))
        })
        .await?;
        let mut folders: Vec<(String, Folder)> = names
            .iter()
            .map(|name| {
                let attributes = name.attributes();
                let selectable = !attributes
                    .iter()
                    .any(|a| matches!(a, NameAttribute::NoSelect))
                    && !attributes.iter().any(|a| {
                        matches!(a, NameAttribute::Extension(e) if e.eq_ignore_ascii_case("\\NonExistent"))
                    });
                let role = attributes.iter().find_map(|a| match a {
                    NameAttribute::All => Some("all"),
                    NameAttribute::Archive => Some("archive"),
                    NameAttribute::Drafts => Some("drafts"),
                    NameAttribute::Flagged => Some("flagged"),
                    NameAttribute::Junk => Some("junk"),
                    NameAttribute::Sent => Some("sent"),
                    NameAttribute::Trash => Some("trash"),
                    _ => None,
                });
                (
                    name.name().to_string(),
                    Folder {
                        name: utf7::decode(name.name()),
                        role,
                        selectable,
                        counts: None,
                    },
                )
            })
            .collect();
        folders.sort_by_key(|(raw, _)| !raw.eq_ignore_ascii_case("INBOX"));
        for (raw, folder) in folders
            .iter_mut()
            .filter(|(_, f)| f.selectable)
            .take(MAX_FOLDER_COUNTS)
        {
            let session = &mut self.session;
            let status = within(
                format!("counting the messages of {} on {label}", folder.name),
                timeout,
                async {
                    session
                        .status(raw.as_str(), "(MESSAGES UNSEEN)")
                        .await
                        .map_err(|e| imap_error(&label, "STATUS", e))
                },
            )
            .await;
            if let Ok(mailbox) = status {
                folder.counts = Some((mailbox.exists, mailbox.unseen));
            }
        }
        Ok(folders.into_iter().map(|(_, f)| f).collect())
    }

    /// Opens `folder`: read-only unless `write`.
    async fn open_folder(&mut self, folder: &str, write: bool) -> Result<Mailbox> {
        let (label, timeout) = (self.label.clone(), self.timeout);
        let raw = utf7::encode(folder);
        let session = &mut self.session;
        within(format!("opening {folder} on {label}"), timeout, async {
            let opened = if write {
                session.select(&raw).await
            } else {
                session.examine(&raw).await
            };
            opened.map_err(|e| match e {
                async_imap::error::Error::No(text) => Error::invalid(format!(
                    "{label} has no folder {folder:?} ({}); `os mail folders` lists them",
                    text.trim()
                )),
                other => imap_error(&label, "opening the folder", other),
            })
        })
        .await
    }

    /// Fetches summaries of `set` (sequence numbers, or UIDs with `uid`), newest first.
    async fn summaries(&mut self, set: &str, uid: bool) -> Result<Vec<Summary>> {
        let (label, timeout) = (self.label.clone(), self.timeout);
        let session = &mut self.session;
        let fetches: Vec<Fetch> = within(
            format!("fetching message summaries from {label}"),
            timeout,
            async {
                let fetched = if uid {
                    session.uid_fetch(set, SUMMARY_ITEMS).await.map(|s| {
                        Box::pin(s)
                            as futures::stream::BoxStream<'_, async_imap::error::Result<Fetch>>
                    })
                } else {
                    session.fetch(set, SUMMARY_ITEMS).await.map(|s| {
                        Box::pin(s)
                            as futures::stream::BoxStream<'_, async_imap::error::Result<Fetch>>
                    })
                };
                fetched
                    .map_err(|e| imap_error(&label, "FETCH", e))?
                    .try_collect()
                    .await
                    .map_err(|e| imap_error(&label, "FETCH", e))
            },
        )
        .await?;
        let mut summaries: Vec<Summary> = fetches.iter().filter_map(summary).collect();
        summaries.sort_by_key(|s| std::cmp::Reverse(s.uid));
        Ok(summaries)
    }

    /// The newest messages of `folder`: its message count and one page, newest first.
    pub async fn list(&mut self, folder: &str, page: Page) -> Result<(usize, Vec<Summary>)> {
        let total = self.open_folder(folder, false).await?.exists as usize;
        let skip = (page.page - 1) * page.limit;
        if skip >= total {
            return Ok((total, Vec::new()));
        }
        // Sequence numbers run oldest to newest: the page's newest is `total - skip`.
        let high = total - skip;
        let low = high.saturating_sub(page.limit) + 1;
        let summaries = self.summaries(&format!("{low}:{high}"), false).await?;
        Ok((total, summaries))
    }

    /// The messages of `folder` that match, newest first: how many matched and one page.
    pub async fn search(
        &mut self,
        folder: &str,
        criteria: &Criteria,
        page: Page,
    ) -> Result<(usize, Vec<Summary>)> {
        self.open_folder(folder, false).await?;
        let (label, timeout) = (self.label.clone(), self.timeout);
        let literal_plus = if criteria.needs_utf8() {
            let session = &mut self.session;
            within(format!("asking {label} what it supports"), timeout, async {
                session
                    .capabilities()
                    .await
                    .map_err(|e| imap_error(&label, "CAPABILITY", e))
            })
            .await?
            .has_str("LITERAL+")
        } else {
            false
        };
        let command = criteria.command(literal_plus);
        let session = &mut self.session;
        let found: HashSet<u32> =
            within(format!("searching {folder} on {label}"), timeout, async {
                session
                    .uid_search(&command)
                    .await
                    .map_err(|e| imap_error(&label, "SEARCH", e))
            })
            .await?;
        let mut uids: Vec<u32> = found.into_iter().collect();
        uids.sort_unstable_by(|a, b| b.cmp(a));
        let total = uids.len();
        let chosen: Vec<String> = uids
            .iter()
            .skip((page.page - 1) * page.limit)
            .take(page.limit)
            .map(u32::to_string)
            .collect();
        if chosen.is_empty() {
            return Ok((total, Vec::new()));
        }
        let summaries = self.summaries(&chosen.join(","), true).await?;
        Ok((total, summaries))
    }

    /// One whole message and its flags; with `mark_seen` it is marked seen after.
    pub async fn fetch_message(
        &mut self,
        folder: &str,
        uid: u32,
        mark_seen: bool,
    ) -> Result<(Vec<String>, Vec<u8>)> {
        self.open_folder(folder, mark_seen).await?;
        let (label, timeout) = (self.label.clone(), self.timeout);
        let missing = || {
            Error::invalid(format!(
                "{folder} has no message with uid {uid}; `os mail list` or `os mail search` shows the messages' uids"
            ))
        };
        let sized = self
            .fetch_uid(
                uid,
                "(UID RFC822.SIZE)",
                format!("looking up message {uid} on {label}"),
                timeout,
            )
            .await?;
        let size = sized
            .iter()
            .find(|f| f.uid == Some(uid))
            .ok_or_else(missing)?
            .size
            .unwrap_or(0);
        if size > MAX_MESSAGE_BYTES {
            return Err(Error::invalid(format!(
                "message {uid} is {} MB, more than the {} MB read downloads; open it in a mail program",
                size >> 20,
                MAX_MESSAGE_BYTES >> 20
            )));
        }
        let fetched = self
            .fetch_uid(
                uid,
                "(UID FLAGS BODY.PEEK[])",
                format!("downloading message {uid} from {label}"),
                timeout + Duration::from_secs(u64::from(size >> 20)),
            )
            .await?;
        let fetch = fetched
            .iter()
            .find(|f| f.uid == Some(uid))
            .ok_or_else(missing)?;
        let raw = fetch.body().ok_or_else(missing)?.to_vec();
        let mut flags = flag_names(fetch);
        if mark_seen {
            self.store(uid, "+FLAGS.SILENT (\\Seen)").await?;
            if !flags.iter().any(|f| f == "seen") {
                flags.push("seen".into());
            }
        }
        Ok((flags, raw))
    }

    /// `UID FETCH uid items`, collected within `timeout`; `what` names the step in a timeout.
    async fn fetch_uid(
        &mut self,
        uid: u32,
        items: &str,
        what: String,
        timeout: Duration,
    ) -> Result<Vec<Fetch>> {
        let label = &self.label;
        let session = &mut self.session;
        within(what, timeout, async {
            session
                .uid_fetch(uid.to_string(), items)
                .await
                .map_err(|e| imap_error(label, "FETCH", e))?
                .try_collect()
                .await
                .map_err(|e| imap_error(label, "FETCH", e))
        })
        .await
    }

    async fn store(&mut self, uid: u32, change: &str) -> Result<()> {
        let (label, timeout) = (self.label.clone(), self.timeout);
        let session = &mut self.session;
        within(
            format!("changing the flags of message {uid} on {label}"),
            timeout,
            async {
                session
                    .uid_store(uid.to_string(), change)
                    .await
                    .map_err(|e| imap_error(&label, "STORE", e))?
                    .try_collect::<Vec<_>>()
                    .await
                    .map_err(|e| imap_error(&label, "STORE", e))
                    .map(drop)
            },
        )
        .await
    }

    /// Flags a message as answered.
    pub async fn mark_answered(&mut self, folder: &str, uid: u32) -> Result<()> {
        self.open_folder(folder, true).await?;
        self.store(uid, "+FLAGS.SILENT (\\Answered)").await
    }

    /// Saves a sent message (already seen) to `folder`.
    pub async fn append_sent(&mut self, folder: &str, message: &[u8]) -> Result<()> {
        let (label, timeout) = (self.label.clone(), self.timeout);
        let raw = utf7::encode(folder);
        let session = &mut self.session;
        within(format!("saving to {folder} on {label}"), timeout, async {
            session
                .append(&raw, Some("(\\Seen)"), None, message)
                .await
                .map_err(|e| imap_error(&label, "APPEND", e))
        })
        .await
    }
}

fn flag_names(fetch: &Fetch) -> Vec<String> {
    fetch
        .flags()
        .filter_map(|flag| match flag {
            Flag::Seen => Some("seen".to_string()),
            Flag::Answered => Some("answered".into()),
            Flag::Flagged => Some("flagged".into()),
            Flag::Deleted => Some("deleted".into()),
            Flag::Draft => Some("draft".into()),
            Flag::Custom(name) if !name.starts_with('\\') && !name.starts_with('$') => {
                Some(name.to_string())
            }
            _ => None,
        })
        .collect()
}

fn summary(fetch: &Fetch) -> Option<Summary> {
    let uid = fetch.uid?;
    let (from, subject, date) = message::header_summary(fetch.header().unwrap_or_default());
    Some(Summary {
        uid,
        from,
        subject,
        date,
        flags: flag_names(fetch),
        attachments: fetch.bodystructure().is_some_and(has_attachments),
    })
}

/// Whether a body structure has a part meant to be saved rather than read: a part marked
/// `attachment`, or a non-text part with a file name that is not marked inline.
fn has_attachments(structure: &BodyStructure<'_>) -> bool {
    let named = |common: &async_imap::imap_proto::BodyContentCommon<'_>| {
        let has = |params: &Option<Vec<(std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>)>>,
                   key: &str| {
            params
                .as_ref()
                .is_some_and(|p| p.iter().any(|(k, _)| k.eq_ignore_ascii_case(key)))
        };
        has(&common.ty.params, "name")
            || common
                .disposition
                .as_ref()
                .is_some_and(|d| has(&d.params, "filename"))
    };
    match structure {
        BodyStructure::Multipart { bodies, .. } => bodies.iter().any(has_attachments),
        BodyStructure::Basic { common, .. }
        | BodyStructure::Text { common, .. }
        | BodyStructure::Message { common, .. } => {
            match common
                .disposition
                .as_ref()
                .map(|d| d.ty.to_ascii_lowercase())
                .as_deref()
            {
                Some("attachment") => true,
                Some("inline") => false,
                _ => !matches!(structure, BodyStructure::Text { .. }) && named(common),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_become_imap_criteria() {
        let search = |query: &str, since: Option<&str>| Search {
            query: Some(query.into()),
            since: since.map(Into::into),
            before: None,
        };
        let c = criteria(&search("invoice \"March 2025\"", Some("2025-03-01"))).unwrap();
        assert_eq!(
            c.command(false),
            "OR FROM \"invoice\" OR SUBJECT \"invoice\" BODY \"invoice\" OR FROM \"March 2025\" \
             OR SUBJECT \"March 2025\" BODY \"March 2025\" SINCE 1-Mar-2025"
        );
        let c = criteria(&search("Grüße", None)).unwrap();
        assert_eq!(
            c.command(true),
            "CHARSET UTF-8 OR FROM {7+}\r\nGrüße OR SUBJECT {7+}\r\nGrüße BODY {7+}\r\nGrüße"
        );
        let c = criteria(&search("say \\\"hi", None)).unwrap();
        assert!(c.command(false).contains("\"say\""), "{}", c.command(false));
        assert!(criteria(&search("a\r\nb", None)).is_err());
        assert!(criteria(&search("", Some("yesterday"))).is_err());
        assert!(criteria(&Search::default()).is_err());
        let c = criteria(&Search {
            before: Some("2024-12-31".into()),
            ..Search::default()
        })
        .unwrap();
        assert_eq!(c.command(false), "BEFORE 31-Dec-2024");
    }
}
