//! Messages: parsing what IMAP returns (mail-parser) into text a model can read, and building
//! what SMTP sends (lettre): new messages and replies with their threading headers.

use std::hash::{BuildHasher as _, Hasher as _};

use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart, SinglePart};
use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders as _, PartType};

use super::{MailAccount, Outgoing, Page};
use crate::error::{Error, Result};
use crate::tool::count;

/// A file to attach.
#[derive(Clone, Debug)]
pub struct Attachment {
    pub name: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// A message in a listing.
#[derive(Clone, Debug)]
pub(crate) struct Summary {
    pub uid: u32,
    pub from: String,
    pub subject: String,
    pub date: String,
    pub flags: Vec<String>,
    pub attachments: bool,
}

/// An email address (`me@example.com`), if `text` is one.
pub(crate) fn parse_address(text: &str) -> Option<lettre::Address> {
    text.trim().parse().ok()
}

fn show_date(date: &mail_parser::DateTime) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} {}{:02}{:02}",
        date.year,
        date.month,
        date.day,
        date.hour,
        date.minute,
        if date.tz_before_gmt { '-' } else { '+' },
        date.tz_hour,
        date.tz_minute
    )
}

fn show_addresses(address: Option<&Address<'_>>) -> String {
    address
        .map(|a| {
            a.iter()
                .map(|addr| match (addr.name(), addr.address()) {
                    (Some(name), Some(email)) if !name.is_empty() => format!("{name} <{email}>"),
                    (_, Some(email)) => email.to_string(),
                    (Some(name), None) => name.to_string(),
                    (None, None) => String::new(),
                })
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// The sender, subject and date of a header block.
pub(crate) fn header_summary(header: &[u8]) -> (String, String, String) {
    match MessageParser::default().parse_headers(header) {
        Some(message) => (
            show_addresses(message.from()),
            message.subject().unwrap_or("").to_string(),
            message.date().map(show_date).unwrap_or_default(),
        ),
        None => Default::default(),
    }
}

/// A page of a listing as lines: `uid 12 | date | from | subject | unseen, attachments`.
pub(crate) fn listing(
    folder: &str,
    total: usize,
    page: Page,
    summaries: &[Summary],
    search: Option<&str>,
) -> String {
    let pages = total.div_ceil(page.limit).max(1);
    let what = match search {
        Some(search) if total == 1 => format!("{folder}: 1 message matches {search}"),
        Some(search) => format!("{folder}: {total} messages match {search}"),
        None => format!("{folder}: {}", count(total, "message")),
    };
    if summaries.is_empty() {
        return if total == 0 || page.page == 1 {
            format!("{what}.")
        } else {
            format!(
                "{what}; page {} is past the last page ({pages}).",
                page.page
            )
        };
    }
    let first = (page.page - 1) * page.limit + 1;
    let mut lines = vec![format!(
        "{what}, newest first; {first}-{} shown (page {} of {pages}{}).",
        first + summaries.len() - 1,
        page.page,
        if page.page < pages {
            format!("; `page: {}` for more", page.page + 1)
        } else {
            String::new()
        }
    )];
    for s in summaries {
        let mut marks: Vec<String> = Vec::new();
        if !s.flags.iter().any(|f| f == "seen") {
            marks.push("unseen".into());
        }
        marks.extend(s.flags.iter().filter(|f| *f != "seen").cloned());
        if s.attachments {
            marks.push("attachments".into());
        }
        let subject = if s.subject.is_empty() {
            "(no subject)"
        } else {
            &s.subject
        };
        lines.push(format!(
            "message {} | {} | {} | {}{}",
            s.uid,
            if s.date.is_empty() { "?" } else { &s.date },
            if s.from.is_empty() {
                "?".to_string()
            } else {
                cut(&s.from, 80)
            },
            cut(subject, 160),
            if marks.is_empty() {
                String::new()
            } else {
                format!(" | {}", marks.join(", "))
            }
        ));
    }
    lines.join("\n")
}

/// At most `max` characters of `text`, with `…` where it was cut.
fn cut(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

fn size(bytes: usize) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// The readable text of a message: its text/plain parts, else its HTML converted to text.
fn body_text(message: &mail_parser::Message<'_>) -> (String, bool) {
    let plain: Vec<&str> = message
        .text_bodies()
        .filter_map(|part| match &part.body {
            PartType::Text(text) => Some(text.as_ref()),
            _ => None,
        })
        .collect();
    if !plain.is_empty() {
        return (plain.join("\n\n"), false);
    }
    let html: Vec<String> = message
        .html_bodies()
        .filter_map(|part| match &part.body {
            PartType::Html(html) => Some(
                html2text::from_read(html.as_bytes(), 100)
                    .unwrap_or_else(|_| mail_parser::decoders::html::html_to_text(html)),
            ),
            _ => None,
        })
        .collect();
    (html.join("\n\n"), !html.is_empty())
}

/// A message as text: headers, its attachments (name, type, size), then the body from `offset`
/// characters, at most `limit` of them, with a note saying how to read on.
pub(crate) fn render(
    folder: &str,
    uid: u32,
    flags: &[String],
    raw: &[u8],
    offset: usize,
    limit: usize,
    marked_seen: bool,
) -> Result<String> {
    let message = MessageParser::default()
        .parse(raw)
        .ok_or_else(|| Error::Failed(format!("message {uid} could not be parsed")))?;
    let mut lines = Vec::new();
    for (name, value) in [
        ("From", show_addresses(message.from())),
        ("To", show_addresses(message.to())),
        ("Cc", show_addresses(message.cc())),
        ("Reply-To", show_addresses(message.reply_to())),
        ("Date", message.date().map(show_date).unwrap_or_default()),
        ("Subject", message.subject().unwrap_or("").to_string()),
        (
            "Message-ID",
            message
                .message_id()
                .map(|id| format!("<{id}>"))
                .unwrap_or_default(),
        ),
    ] {
        if !value.is_empty() {
            // A list's worth of recipients is not read in full.
            lines.push(format!("{name}: {}", cut(&value, 400)));
        }
    }
    lines.push(format!(
        "Folder {folder}, uid {uid}; flags: {}{}",
        if flags.is_empty() {
            "none (unseen)".to_string()
        } else {
            flags.join(", ")
        },
        if marked_seen {
            " (marked seen now)"
        } else {
            ""
        }
    ));
    let attachments: Vec<String> = message
        .attachments()
        .map(|part| {
            let kind = part
                .content_type()
                .map(|t| match t.subtype() {
                    Some(sub) => format!("{}/{sub}", t.ctype()),
                    None => t.ctype().to_string(),
                })
                .unwrap_or_else(|| "application/octet-stream".into());
            format!(
                "{} ({kind}, {})",
                part.attachment_name().unwrap_or("(no name)"),
                size(part.len())
            )
        })
        .collect();
    if attachments.is_empty() {
        lines.push("Attachments: none".into());
    } else {
        let more = attachments.len().saturating_sub(50);
        lines.push(format!(
            "Attachments ({}): {}{}",
            attachments.len(),
            attachments[..attachments.len() - more].join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ));
    }
    let (body, from_html) = body_text(&message);
    let total = body.chars().count();
    lines.push(String::new());
    if from_html {
        lines.push("[The message has only HTML; here converted to text.]".into());
    }
    if offset >= total && total > 0 {
        lines.push(format!(
            "[No text from offset {offset}: the body has {total} characters.]"
        ));
        return Ok(lines.join("\n"));
    }
    let shown: String = body.chars().skip(offset).take(limit).collect();
    if total == 0 {
        lines.push("[The message has no text body.]".into());
    } else {
        if offset > 0 {
            lines.push(format!("[Body from character {offset} of {total}.]"));
        }
        lines.push(shown.trim_end().to_string());
        let end = offset + limit;
        if end < total {
            lines.push(String::new());
            lines.push(format!(
                "[Body cut: characters {offset}-{end} of {total} shown. Call read again with \
                 `offset: {end}` for the rest.]"
            ));
        }
    }
    Ok(lines.join("\n"))
}

/// A message ready for SMTP.
#[derive(Clone, Debug)]
pub(crate) struct Composed {
    pub subject: String,
    /// The envelope recipients (To and Cc).
    pub recipients: Vec<String>,
    pub message_id: String,
    pub envelope: lettre::address::Envelope,
    /// The whole message as sent.
    pub formatted: Vec<u8>,
}

/// The headers that put a reply in its thread.
#[derive(Clone, Debug, Default)]
pub(crate) struct Thread {
    pub in_reply_to: Option<String>,
    pub references: Option<String>,
}

fn mailboxes(field: &str, list: &[String]) -> Result<Vec<Mailbox>> {
    list.iter()
        .map(|text| {
            text.trim().parse::<Mailbox>().map_err(|e| {
                Error::invalid(format!(
                    "`{field}`: {text:?} is not an email address ({e}); give `name@example.com` or `Name <name@example.com>`"
                ))
            })
        })
        .collect()
}

/// A fresh Message-ID in the sender's domain (never this machine's host name).
fn new_message_id(email: &str) -> String {
    let domain = email.rsplit_once('@').map_or("osprey.invalid", |(_, d)| d);
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("<{nanos:x}.{random:016x}.osprey@{domain}>")
}

/// Builds the message: plain text in UTF-8, the attachments after it.
pub(crate) fn compose(
    account: &MailAccount,
    outgoing: &Outgoing,
    thread: Option<&Thread>,
) -> Result<Composed> {
    let to = mailboxes("to", &outgoing.to)?;
    let cc = mailboxes("cc", &outgoing.cc)?;
    if to.is_empty() {
        return Err(Error::invalid(
            "mail send needs at least one address in `to`",
        ));
    }
    if to.len() + cc.len() > 50 {
        return Err(Error::invalid(
            "at most 50 recipients (to and cc) per message",
        ));
    }
    if outgoing.subject.chars().any(char::is_control) || outgoing.subject.len() > 998 {
        return Err(Error::invalid(
            "`subject` must be one line of at most 998 bytes",
        ));
    }
    let from_address = parse_address(&account.email).ok_or_else(|| {
        Error::invalid(format!(
            "the account {:?} has no valid `email` in the `os.mail` setting",
            account.name
        ))
    })?;
    let from = Mailbox::new(
        account
            .display_name
            .clone()
            .filter(|n| !n.trim().is_empty()),
        from_address,
    );
    let message_id = new_message_id(&account.email);
    let mut builder = lettre::Message::builder()
        .from(from)
        .subject(outgoing.subject.clone())
        .date_now()
        .message_id(Some(message_id.clone()))
        .user_agent("Osprey".into());
    for mailbox in &to {
        builder = builder.to(mailbox.clone());
    }
    for mailbox in &cc {
        builder = builder.cc(mailbox.clone());
    }
    if let Some(thread) = thread {
        if let Some(id) = &thread.in_reply_to {
            builder = builder.in_reply_to(id.clone());
        }
        if let Some(references) = &thread.references {
            builder = builder.references(references.clone());
        }
    }
    let text = SinglePart::plain(outgoing.text.clone());
    let built = if outgoing.attachments.is_empty() {
        builder.singlepart(text)
    } else {
        let mut parts = MultiPart::mixed().singlepart(text);
        for file in &outgoing.attachments {
            let content_type = ContentType::parse(&file.content_type)
                .unwrap_or_else(|_| ContentType::parse("application/octet-stream").expect("valid"));
            parts = parts.singlepart(
                lettre::message::Attachment::new(file.name.clone())
                    .body(file.bytes.clone(), content_type),
            );
        }
        builder.multipart(parts)
    }
    .map_err(|e| Error::invalid(format!("the message cannot be built: {e}")))?;
    Ok(Composed {
        subject: outgoing.subject.clone(),
        recipients: to.iter().chain(&cc).map(|m| m.email.to_string()).collect(),
        message_id,
        envelope: built.envelope().clone(),
        formatted: built.formatted(),
    })
}

/// A reply: who it goes to, its subject and text, and its thread headers.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    pub outgoing: Outgoing,
    pub thread: Thread,
}

/// `Re: subject`, without stacking `Re:`s.
pub(crate) fn reply_subject(subject: &str) -> String {
    let subject = subject.trim();
    if subject
        .get(..3)
        .is_some_and(|p| p.eq_ignore_ascii_case("re:"))
    {
        subject.to_string()
    } else {
        format!("Re: {subject}")
    }
}

fn addresses_of(address: Option<&Address<'_>>) -> Vec<(Option<String>, String)> {
    address
        .map(|a| {
            a.iter()
                .filter_map(|addr| {
                    let email = addr.address()?.trim().to_string();
                    parse_address(&email)?;
                    Some((addr.name().map(str::to_string), email))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn mailbox_text((name, email): &(Option<String>, String)) -> String {
    match email.parse() {
        Ok(address) => {
            Mailbox::new(name.clone().filter(|n| !n.trim().is_empty()), address).to_string()
        }
        Err(_) => email.clone(),
    }
}

fn ids(value: &HeaderValue<'_>) -> Vec<String> {
    match value {
        HeaderValue::Text(id) => vec![id.to_string()],
        HeaderValue::TextList(ids) => ids.iter().map(|id| id.to_string()).collect(),
        _ => Vec::new(),
    }
}

/// The reply to the message `raw`: to its Reply-To or sender (with `reply_all`, the other
/// recipients in Cc, never the account itself), `Re:` subject, In-Reply-To and References, the
/// original quoted below `text`.
pub(crate) fn reply_to(
    account: &MailAccount,
    raw: &[u8],
    reply_all: bool,
    text: String,
    attachments: Vec<super::Attachment>,
) -> Result<Reply> {
    let original = MessageParser::default()
        .parse(raw)
        .ok_or_else(|| Error::Failed("the original message could not be parsed".into()))?;
    let own = account.email.trim().to_ascii_lowercase();
    let is_own = |(_, email): &(Option<String>, String)| email.to_ascii_lowercase() == own;
    let original_to = addresses_of(original.to());
    let mut to = addresses_of(original.reply_to().or(original.from()));
    if to.iter().all(is_own) {
        // A reply to one's own sent message goes to its recipients.
        to = original_to.iter().filter(|a| !is_own(a)).cloned().collect();
    }
    to.retain(|a| !is_own(a));
    if to.is_empty() {
        return Err(Error::invalid(
            "the message has no sender or recipient to reply to",
        ));
    }
    let mut cc = Vec::new();
    if reply_all {
        for address in original_to.into_iter().chain(addresses_of(original.cc())) {
            let lower = address.1.to_ascii_lowercase();
            if !is_own(&address)
                && !to
                    .iter()
                    .chain(&cc)
                    .any(|(_, e)| e.to_ascii_lowercase() == lower)
            {
                cc.push(address);
            }
        }
    }
    let message_id = original.message_id().map(|id| format!("<{id}>"));
    let mut references: Vec<String> = ids(original.references())
        .into_iter()
        .map(|id| format!("<{id}>"))
        .collect();
    if references.is_empty() {
        references = ids(original.in_reply_to())
            .into_iter()
            .map(|id| format!("<{id}>"))
            .collect();
    }
    if let Some(id) = &message_id {
        references.push(id.clone());
    }
    // Long threads keep the first reference and the latest ones.
    if references.len() > 20 {
        let first = references[0].clone();
        let tail = references.split_off(references.len() - 19);
        references = std::iter::once(first).chain(tail).collect();
    }
    let (body, _) = body_text(&original);
    let quoted: String = body
        .lines()
        .take(400)
        .map(|line| {
            if line.is_empty() {
                ">".to_string()
            } else {
                format!("> {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let said = format!(
        "On {}, {} wrote:",
        original
            .date()
            .map(show_date)
            .unwrap_or_else(|| "an earlier day".into()),
        show_addresses(original.from())
    );
    let text = format!("{}\n\n{said}\n{quoted}\n", text.trim_end());
    Ok(Reply {
        outgoing: Outgoing {
            to: to.iter().map(mailbox_text).collect(),
            cc: cc.iter().map(mailbox_text).collect(),
            subject: reply_subject(original.subject().unwrap_or("")),
            text,
            attachments,
        },
        thread: Thread {
            in_reply_to: message_id,
            references: (!references.is_empty()).then(|| references.join(" ")),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account() -> MailAccount {
        serde_json::from_value(serde_json::json!({
            "name": "work", "email": "me@example.com", "display_name": "Me",
            "imap": {"host": "localhost"}, "smtp": {"host": "localhost"}
        }))
        .unwrap()
    }

    const ORIGINAL: &[u8] = b"From: Bob <bob@example.com>\r\n\
To: me@example.com, Carol <carol@example.com>\r\n\
Cc: Dan <dan@example.com>, ME@example.com\r\n\
Subject: Lunch?\r\n\
Date: Mon, 3 Mar 2025 10:00:00 +0100\r\n\
Message-ID: <m2@example.com>\r\n\
References: <m0@example.com> <m1@example.com>\r\n\
In-Reply-To: <m1@example.com>\r\n\
\r\n\
Shall we?\r\n\
\r\n\
Bob\r\n";

    #[test]
    fn a_reply_threads_and_addresses_correctly() {
        let reply = reply_to(&account(), ORIGINAL, false, "Yes!".into(), vec![]).unwrap();
        assert_eq!(reply.outgoing.to, ["Bob <bob@example.com>"]);
        assert!(reply.outgoing.cc.is_empty());
        assert_eq!(reply.outgoing.subject, "Re: Lunch?");
        assert_eq!(
            reply.thread.in_reply_to.as_deref(),
            Some("<m2@example.com>")
        );
        assert_eq!(
            reply.thread.references.as_deref(),
            Some("<m0@example.com> <m1@example.com> <m2@example.com>")
        );
        assert!(
            reply
                .outgoing
                .text
                .starts_with("Yes!\n\nOn 2025-03-03 10:00 +0100, Bob <bob@example.com> wrote:\n> Shall we?\n>\n> Bob"),
            "{}",
            reply.outgoing.text
        );
        let all = reply_to(&account(), ORIGINAL, true, "Yes!".into(), vec![]).unwrap();
        assert_eq!(
            all.outgoing.cc,
            ["Carol <carol@example.com>", "Dan <dan@example.com>"]
        );
        assert_eq!(reply_subject("RE: Lunch?"), "RE: Lunch?");

        let composed = compose(&account(), &all.outgoing, Some(&all.thread)).unwrap();
        let text = String::from_utf8(composed.formatted.clone()).unwrap();
        assert!(text.contains("In-Reply-To: <m2@example.com>"), "{text}");
        assert!(text.contains("Subject: Re: Lunch?"), "{text}");
        assert!(text.contains("From: Me <me@example.com>"), "{text}");
        assert!(text.contains("@example.com>"), "{text}");
        assert_eq!(
            composed.recipients,
            ["bob@example.com", "carol@example.com", "dan@example.com"]
        );
    }

    #[test]
    fn long_bodies_are_cut_with_a_way_on() {
        let mut raw = b"From: a@example.com\r\nSubject: long\r\n\r\n".to_vec();
        raw.extend(std::iter::repeat_n(b'x', 250));
        let first = render("INBOX", 7, &[], &raw, 0, 100, false).unwrap();
        assert!(
            first.contains("Call read again with `offset: 100`"),
            "{first}"
        );
        assert!(first.contains("flags: none (unseen)"), "{first}");
        let last = render("INBOX", 7, &[], &raw, 200, 100, false).unwrap();
        assert!(last.contains("[Body from character 200 of 250.]"), "{last}");
        assert!(!last.contains("Call read again"), "{last}");
        let past = render("INBOX", 7, &[], &raw, 300, 100, false).unwrap();
        assert!(past.contains("the body has 250 characters"), "{past}");
    }

    #[test]
    fn bad_addresses_are_refused_before_sending() {
        let outgoing = Outgoing {
            to: vec!["not an address".into()],
            subject: "x".into(),
            ..Outgoing::default()
        };
        let err = compose(&account(), &outgoing, None).unwrap_err();
        assert_eq!(err.code().as_str(), "invalid_input");
        let outgoing = Outgoing {
            to: vec!["a@example.com".into()],
            subject: "x\r\nBcc: evil@example.com".into(),
            ..Outgoing::default()
        };
        assert!(compose(&account(), &outgoing, None).is_err());
    }
}
