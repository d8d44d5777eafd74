//! Mail against real servers on loopback: Dovecot (IMAP) with a private configuration in a
//! temporary folder (its own base_dir, a passwd-file user, a maildir pre-filled with real
//! messages: plain text, HTML only, one with an attachment, a long one, a folder with a
//! non-ASCII name), listening on free ports plain (with STARTTLS) and with TLS; aiosmtpd (SMTP)
//! with STARTTLS (no login before it, as a submission server), with TLS, and plain for the
//! loopback clear-text case, printing each message it receives as a JSON line. Both use a
//! certificate from a test CA made with openssl; accounts trust it through `ca_file`.
//!
//! Where Dovecot, aiosmtpd or openssl is missing the tests say so and stop, except on CI
//! (`CI` set), where scripts/setup installs them and a missing one fails.

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use osprey_platform::mail::{MailAccount, MailConfig};
use osprey_platform::{OsConfig, OsTool};
use osprey_tools::{
    CheckOutcome, Level, Policy, PolicyConfig, Registry, RegistryConfig, ToolContext,
};
use osprey_types::{Origin, ToolResult};
use serde_json::{Value, json};

use osprey_tests::servers::{
    Aiosmtpd as Smtp, Dovecot, free_port, missing_mail_programs, python_with_aiosmtpd,
    skip_for_missing,
};

use crate::harness::{call, ok_text};

const USER: &str = "alice";
const PASSWORD: &str = "s3cret-Pass";
const EMAIL: &str = "alice@example.com";

/// Whether the servers can be started here; on CI a missing one fails the test.
fn servers_available() -> bool {
    let mut missing = missing_mail_programs();
    if python_with_aiosmtpd().is_none() {
        missing.push("python3 with aiosmtpd");
    }
    !skip_for_missing("the mail test", &missing)
}

/// A message file in a maildir, received (its mtime, Dovecot's INTERNALDATE) at `received`.
fn deliver(maildir: &Path, name: &str, seen: bool, received: SystemTime, message: &str) {
    let file = maildir
        .join("cur")
        .join(format!("{name}:2,{}", if seen { "S" } else { "" }));
    std::fs::write(&file, message.replace('\n', "\r\n")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(received)
        .unwrap();
}

fn day(date: &str) -> SystemTime {
    let date = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").unwrap();
    let seconds = date.and_hms_opt(12, 0, 0).unwrap().and_utc().timestamp();
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds as u64)
}

const LUNCH: &str = "From: Bob <bob@example.com>
To: Alice <alice@example.com>
Cc: Carol <carol@example.com>
Subject: Lunch on Friday?
Date: Sat, 1 Mar 2025 12:00:00 +0000
Message-ID: <lunch-1@example.com>
References: <plans-0@example.com>

Shall we try the new place?

Bob
";

const NEWSLETTER: &str = "From: Shop <news@shop.example>
To: alice@example.com
Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe_from_the_spring_sale?=
Date: Mon, 3 Mar 2025 12:00:00 +0000
Message-ID: <sale-7@shop.example>
MIME-Version: 1.0
Content-Type: text/html; charset=utf-8

<html><head><style>p { color: red }</style></head><body><h1>Spring sale</h1>
<p>Everything <b>half</b> price this week.</p><p><a href=\"https://shop.example/sale\">Shop now</a></p>
</body></html>
";

const REPORT: &str = "From: Carol <carol@example.com>
To: alice@example.com
Subject: Quarterly report
Date: Wed, 5 Mar 2025 12:00:00 +0100
Message-ID: <report-3@example.com>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=\"XYZ\"

--XYZ
Content-Type: text/plain; charset=utf-8

Hi Alice, the figures for invoice 4711 are in the attached PDF.
--XYZ
Content-Type: application/pdf; name=\"report-q1.pdf\"
Content-Disposition: attachment; filename=\"report-q1.pdf\"
Content-Transfer-Encoding: base64

JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoKdHJhaWxlcgo8PC9Sb290IDEgMCBSPj4KJSVFT0YK
--XYZ--
";

fn notes() -> String {
    let mut body = String::from(
        "From: Dan <dan@example.com>
To: alice@example.com
Subject: Meeting notes
Date: Fri, 7 Mar 2025 12:00:00 +0000
Message-ID: <notes-9@example.com>

",
    );
    for i in 0..600 {
        body.push_str(&format!(
            "Line {i:03} of the notes, with some words to fill it up.\n"
        ));
    }
    body.push_str("THE-END-MARKER\n");
    body
}

const RECEIPT: &str = "From: Bank <service@bank.example>
To: alice@example.com
Subject: Your receipt
Date: Mon, 15 Jan 2024 12:00:00 +0000
Message-ID: <receipt-1@bank.example>

Thank you for your payment.
";

/// Dovecot with alice's maildir filled with the messages above.
fn start_dovecot() -> Dovecot {
    Dovecot::start(USER, PASSWORD, |maildir| {
        deliver(
            maildir,
            "1740830400.M1P1.osprey",
            true,
            day("2025-03-01"),
            LUNCH,
        );
        deliver(
            maildir,
            "1741003200.M2P1.osprey",
            false,
            day("2025-03-03"),
            NEWSLETTER,
        );
        deliver(
            maildir,
            "1741172400.M3P1.osprey",
            false,
            day("2025-03-05"),
            REPORT,
        );
        deliver(
            maildir,
            "1741348800.M4P1.osprey",
            true,
            day("2025-03-07"),
            &notes(),
        );
        deliver(
            &maildir.join(".Archive"),
            "1705320000.M5P1.osprey",
            true,
            day("2024-01-15"),
            RECEIPT,
        );
    })
}

fn account(dovecot: &Dovecot, smtp: Option<&Smtp>) -> Value {
    json!({
        "name": "work",
        "email": EMAIL,
        "display_name": "Alice Example",
        "username": USER,
        "imap": {"host": "127.0.0.1", "port": dovecot.imap, "tls": "plain"},
        "smtp": {"host": "127.0.0.1", "port": smtp.map_or(1, |s| s.plain), "tls": "plain"},
        "sent_folder": "Sent",
    })
}

fn tool_with(accounts: Vec<Value>, password: Option<&str>) -> OsTool {
    let accounts: Vec<MailAccount> = serde_json::from_value(json!(accounts)).unwrap();
    let password = password.map(str::to_string);
    OsTool::new(OsConfig {
        mail: MailConfig {
            accounts,
            secrets: Some(Arc::new(move |name: &str| {
                assert!(
                    name.starts_with("os.mail.") && name.ends_with(".password"),
                    "{name}"
                );
                Ok(password.clone())
            })),
            timeout: Duration::from_secs(10),
            max_body_chars: 5_000,
            ..MailConfig::default()
        },
        ..OsConfig::default()
    })
}

fn code(result: &ToolResult) -> &'static str {
    result.code.map_or("none", |c| c.as_str())
}

async fn mail(tool: &OsTool, input: Value) -> ToolResult {
    let mut input = input;
    input["resource"] = json!("mail");
    call(tool, input).await
}

/// The uid of the listed message with `subject`.
fn uid_of(listing: &str, subject: &str) -> u32 {
    let line = listing
        .lines()
        .find(|l| l.contains(&format!("| {subject}")))
        .unwrap_or_else(|| panic!("{subject} not listed:\n{listing}"));
    line.strip_prefix("message ")
        .and_then(|l| l.split(' ').next())
        .and_then(|u| u.parse().ok())
        .unwrap_or_else(|| panic!("no uid in {line}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn folders_list_search_and_read_a_real_imap_server() {
    if !servers_available() {
        return;
    }
    let dovecot = start_dovecot();
    let tool = tool_with(vec![account(&dovecot, None)], Some(PASSWORD));

    let folders = ok_text(&mail(&tool, json!({"action": "folders"})).await);
    let lines: Vec<&str> = folders.lines().collect();
    assert_eq!(lines[0], "4 folders of work:", "{folders}");
    assert_eq!(lines[1], "INBOX: 4 messages, 2 unseen", "{folders}");
    for expected in [
        "Archive: 1 message, 0 unseen",
        "Sent: 0 messages, 0 unseen",
        "Entwürfe: 0 messages, 0 unseen",
    ] {
        assert!(lines.contains(&expected), "{expected} missing:\n{folders}");
    }

    // Newest first, with flags and attachments; the newsletter's subject is decoded.
    let listing = ok_text(&mail(&tool, json!({"action": "list"})).await);
    let rows: Vec<&str> = listing.lines().skip(1).collect();
    assert!(
        listing.starts_with("INBOX: 4 messages, newest first; 1-4 shown (page 1 of 1)."),
        "{listing}"
    );
    assert!(
        rows[0].contains("| Dan <dan@example.com> | Meeting notes"),
        "{listing}"
    );
    assert!(
        rows[1].ends_with("| Carol <carol@example.com> | Quarterly report | unseen, attachments"),
        "{listing}"
    );
    assert!(
        rows[2].ends_with("| Shop <news@shop.example> | Grüße from the spring sale | unseen"),
        "{listing}"
    );
    assert!(
        rows[3].contains("2025-03-01 12:00 +0000 | Bob <bob@example.com> | Lunch on Friday?"),
        "{listing}"
    );
    assert!(!rows[3].contains("unseen"), "{listing}");
    let uids: Vec<u32> = rows
        .iter()
        .map(|r| uid_of(r, r.split(" | ").nth(3).unwrap()))
        .collect();
    assert!(
        uids.windows(2).all(|w| w[0] > w[1]),
        "not newest first: {uids:?}"
    );

    // Paging: two a page.
    let page2 = ok_text(&mail(&tool, json!({"action": "list", "limit": 2, "page": 2})).await);
    assert!(page2.contains("3-4 shown (page 2 of 2)"), "{page2}");
    assert!(
        page2.contains("Lunch on Friday?") && !page2.contains("Meeting notes"),
        "{page2}"
    );
    let page1 = ok_text(&mail(&tool, json!({"action": "list", "limit": 2})).await);
    assert!(page1.contains("`page: 2` for more"), "{page1}");

    // Search: words in the body, the subject, the sender; dates by arrival.
    let found = ok_text(&mail(&tool, json!({"action": "search", "query": "invoice 4711"})).await);
    assert!(
        found.starts_with("INBOX: 1 message matches \"invoice 4711\""),
        "{found}"
    );
    assert!(found.contains("Quarterly report"), "{found}");
    let found = ok_text(&mail(&tool, json!({"action": "search", "query": "friday"})).await);
    assert!(
        found.contains("Lunch on Friday?") && found.contains("1 message matches"),
        "{found}"
    );
    let found = ok_text(&mail(&tool, json!({"action": "search", "query": "news@shop"})).await);
    assert!(found.contains("Grüße"), "{found}");
    let found = ok_text(
        &mail(
            &tool,
            json!({"action": "search", "since": "2025-03-04", "before": "2025-03-06"}),
        )
        .await,
    );
    assert!(
        found.contains("1 message matches since 2025-03-04 before 2025-03-06"),
        "{found}"
    );
    assert!(found.contains("Quarterly report"), "{found}");
    let found = ok_text(
        &mail(
            &tool,
            json!({"action": "search", "query": "nothing-like-this"}),
        )
        .await,
    );
    assert_eq!(found, "INBOX: 0 messages match \"nothing-like-this\".");
    let found = ok_text(
        &mail(
            &tool,
            json!({"action": "search", "folder": "Archive", "query": "payment"}),
        )
        .await,
    );
    assert!(found.contains("Your receipt"), "{found}");
    let result = mail(&tool, json!({"action": "search", "since": "last week"})).await;
    assert_eq!(code(&result), "invalid_input", "{result:?}");

    // Read: headers, attachments by name, type and size; not marked seen unless asked.
    let report = uid_of(&listing, "Quarterly report");
    let text = ok_text(&mail(&tool, json!({"action": "read", "message": report})).await);
    assert!(text.contains("From: Carol <carol@example.com>"), "{text}");
    assert!(text.contains("Subject: Quarterly report"), "{text}");
    assert!(
        text.contains("Message-ID: <report-3@example.com>"),
        "{text}"
    );
    assert!(
        text.contains("Attachments (1): report-q1.pdf (application/pdf, 78 B)"),
        "{text}"
    );
    assert!(text.contains("the figures for invoice 4711"), "{text}");
    assert!(text.contains("flags: none (unseen)"), "{text}");
    let again = ok_text(&mail(&tool, json!({"action": "list"})).await);
    assert!(
        again.contains("Quarterly report | unseen, attachments"),
        "read marked it seen:\n{again}"
    );

    // HTML only: converted to text, no tags or styles.
    let sale = uid_of(&listing, "Grüße from the spring sale");
    let text = ok_text(
        &mail(
            &tool,
            json!({"action": "read", "message": sale, "mark_seen": true}),
        )
        .await,
    );
    assert!(
        text.contains("[The message has only HTML; here converted to text.]"),
        "{text}"
    );
    assert!(
        text.contains("Everything **half** price this week."),
        "{text}"
    );
    assert!(text.contains("https://shop.example/sale"), "{text}");
    assert!(
        !text.contains("<p>") && !text.contains("color: red"),
        "{text}"
    );
    assert!(text.contains("flags: seen (marked seen now)"), "{text}");
    let again = ok_text(&mail(&tool, json!({"action": "list"})).await);
    assert!(
        !again.contains("spring sale | unseen"),
        "not marked seen:\n{again}"
    );

    // A long body is cut with the way on.
    let notes = uid_of(&listing, "Meeting notes");
    let first = ok_text(&mail(&tool, json!({"action": "read", "message": notes})).await);
    assert!(first.contains("Line 000 of the notes"), "{first}");
    assert!(!first.contains("THE-END-MARKER"), "{first}");
    assert!(
        first.contains("Call read again with `offset: 5000` for the rest."),
        "{first}"
    );
    let mut offset = 5000;
    let mut last = String::new();
    while offset < 60_000 {
        last = ok_text(
            &mail(
                &tool,
                json!({"action": "read", "message": notes, "offset": offset}),
            )
            .await,
        );
        if !last.contains("Call read again") {
            break;
        }
        offset += 5000;
    }
    assert!(last.contains("THE-END-MARKER"), "{last}");

    // Wrong uid or folder: what to do instead.
    let result = mail(&tool, json!({"action": "read", "message": 999})).await;
    assert_eq!(code(&result), "invalid_input", "{result:?}");
    assert!(
        result.text_content().contains("no message with uid 999"),
        "{result:?}"
    );
    let result = mail(&tool, json!({"action": "list", "folder": "Nowhere"})).await;
    assert_eq!(code(&result), "invalid_input", "{result:?}");
    assert!(
        result
            .text_content()
            .contains("`os mail folders` lists them"),
        "{result:?}"
    );
    let folder = ok_text(&mail(&tool, json!({"action": "list", "folder": "Entwürfe"})).await);
    assert_eq!(folder, "Entwürfe: 0 messages.");
    drop(dovecot);
}

#[tokio::test(flavor = "multi_thread")]
async fn send_and_reply_reach_a_real_smtp_server() {
    if !servers_available() {
        return;
    }
    let dovecot = start_dovecot();
    let smtp = Smtp::start(USER, PASSWORD, &dovecot.certificates);
    let tool = tool_with(vec![account(&dovecot, Some(&smtp))], Some(PASSWORD));

    let attachment = dovecot.dir.path().join("agenda.txt");
    std::fs::write(&attachment, "1. Budget\n2. Hiring\n").unwrap();
    let sent = ok_text(
        &mail(
            &tool,
            json!({
                "action": "send",
                "to": ["Bob <bob@example.com>"],
                "cc": ["carol@example.com"],
                "subject": "Agenda für Montag",
                "text": "Hi Bob,\n\nthe agenda is attached.\n\nAlice",
                "files": [attachment.to_str().unwrap()],
            }),
        )
        .await,
    );
    assert!(
        sent.starts_with("Sent \"Agenda für Montag\" to bob@example.com, carol@example.com"),
        "{sent}"
    );
    assert!(sent.ends_with("A copy is in Sent."), "{sent}");
    let received = smtp.received();
    assert_eq!(received["mail_from"], EMAIL);
    assert_eq!(
        received["rcpt_tos"],
        json!(["bob@example.com", "carol@example.com"])
    );
    assert_eq!(received["authenticated"], true);
    let data = received["data"].as_str().unwrap();
    let parsed = mail_parser::MessageParser::default()
        .parse(data.as_bytes())
        .unwrap();
    assert_eq!(parsed.subject(), Some("Agenda für Montag"));
    let from = parsed.from().unwrap().first().unwrap();
    assert_eq!(
        (from.name(), from.address()),
        (Some("Alice Example"), Some(EMAIL))
    );
    assert_eq!(
        parsed.to().unwrap().first().unwrap().address(),
        Some("bob@example.com")
    );
    assert_eq!(
        parsed.cc().unwrap().first().unwrap().address(),
        Some("carol@example.com")
    );
    assert!(
        parsed
            .message_id()
            .is_some_and(|id| id.ends_with("@example.com")),
        "{data}"
    );
    assert!(parsed.date().is_some(), "{data}");
    assert!(
        parsed
            .body_text(0)
            .unwrap()
            .contains("the agenda is attached"),
        "{data}"
    );
    let attached = parsed.attachments().next().expect("an attachment");
    assert_eq!(
        mail_parser::MimeHeaders::attachment_name(attached),
        Some("agenda.txt")
    );
    assert_eq!(attached.contents(), b"1. Budget\n2. Hiring\n");
    // The copy in Sent is the message as sent.
    let copy = ok_text(&mail(&tool, json!({"action": "list", "folder": "Sent"})).await);
    assert!(
        copy.contains("| Alice Example <alice@example.com> | Agenda für Montag | attachments"),
        "{copy}"
    );

    // A reply threads and quotes; reply_all copies the others, never the account itself.
    let listing = ok_text(&mail(&tool, json!({"action": "list"})).await);
    let lunch = uid_of(&listing, "Lunch on Friday?");
    let replied = ok_text(
        &mail(
            &tool,
            json!({"action": "reply", "message": lunch, "text": "Yes, 12:30?", "reply_all": true}),
        )
        .await,
    );
    assert!(
        replied.starts_with("Sent \"Re: Lunch on Friday?\" to bob@example.com, carol@example.com"),
        "{replied}"
    );
    let received = smtp.received();
    let data = received["data"].as_str().unwrap();
    let parsed = mail_parser::MessageParser::default()
        .parse(data.as_bytes())
        .unwrap();
    assert_eq!(parsed.subject(), Some("Re: Lunch on Friday?"));
    assert_eq!(
        parsed.in_reply_to().as_text(),
        Some("lunch-1@example.com"),
        "{data}"
    );
    assert!(
        data.contains("References: <plans-0@example.com> <lunch-1@example.com>"),
        "{data}"
    );
    assert_eq!(
        parsed.to().unwrap().first().unwrap().address(),
        Some("bob@example.com")
    );
    let cc: Vec<_> = parsed
        .cc()
        .unwrap()
        .iter()
        .filter_map(|a| a.address())
        .collect();
    assert_eq!(cc, ["carol@example.com"], "{data}");
    let body = parsed.body_text(0).unwrap().replace("\r\n", "\n");
    assert!(body.starts_with("Yes, 12:30?"), "{body}");
    assert!(
        body.contains("Bob <bob@example.com> wrote:\n> Shall we try the new place?"),
        "{body}"
    );
    // The original is marked answered.
    let listing = ok_text(&mail(&tool, json!({"action": "list"})).await);
    assert!(listing.contains("Lunch on Friday? | answered"), "{listing}");
    // A plain reply goes to the sender alone.
    ok_text(
        &mail(
            &tool,
            json!({"action": "reply", "message": lunch, "text": "Only you."}),
        )
        .await,
    );
    let received = smtp.received();
    assert_eq!(received["rcpt_tos"], json!(["bob@example.com"]));
    drop(dovecot);
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_and_starttls_are_used_and_checked() {
    if !servers_available() {
        return;
    }
    let dovecot = start_dovecot();
    let smtp = Smtp::start(USER, PASSWORD, &dovecot.certificates);
    let ca = dovecot.certificates.ca.to_str().unwrap().to_string();
    let secured =
        |imap_tls: &str, imap_port: u16, smtp_tls: &str, smtp_port: u16, ca: Option<&str>| {
            let mut account = json!({
                "name": "secure",
                "email": EMAIL,
                "username": USER,
                "imap": {"host": "localhost", "port": imap_port, "tls": imap_tls},
                "smtp": {"host": "localhost", "port": smtp_port, "tls": smtp_tls},
            });
            if let Some(ca) = ca {
                account["ca_file"] = json!(ca);
            }
            tool_with(vec![account], Some(PASSWORD))
        };
    for (imap_tls, imap_port, smtp_tls, smtp_port) in [
        ("tls", dovecot.imaps, "tls", smtp.tls),
        ("starttls", dovecot.imap, "starttls", smtp.starttls),
    ] {
        let tool = secured(imap_tls, imap_port, smtp_tls, smtp_port, Some(&ca));
        let listing = ok_text(&mail(&tool, json!({"action": "list"})).await);
        assert!(
            listing.contains("Quarterly report"),
            "{imap_tls}: {listing}"
        );
        ok_text(
            &mail(
                &tool,
                json!({"action": "send", "to": ["bob@example.com"], "subject": imap_tls, "text": "over TLS"}),
            )
            .await,
        );
        let received = smtp.received();
        assert_eq!(received["tls"], true, "{smtp_tls}: {received}");
        assert!(
            received["data"]
                .as_str()
                .unwrap()
                .contains(&format!("Subject: {imap_tls}"))
        );
    }
    assert!(
        dovecot.log().contains("TLS"),
        "dovecot saw no TLS login:\n{}",
        dovecot.log()
    );

    // The test CA is not trusted without `ca_file`: refused, with how to trust it.
    let tool = secured("tls", dovecot.imaps, "tls", smtp.tls, None);
    let result = mail(&tool, json!({"action": "folders"})).await;
    assert_eq!(code(&result), "permission_denied", "{result:?}");
    assert!(
        result.text_content().contains("set `ca_file`"),
        "{result:?}"
    );
    let result = mail(
        &tool,
        json!({"action": "send", "to": ["bob@example.com"], "subject": "x", "text": "x"}),
    )
    .await;
    assert_eq!(code(&result), "permission_denied", "{result:?}");
    // TLS spoken to a plain port: a clear failure, not a hang.
    let tool = secured("tls", dovecot.imap, "tls", smtp.plain, Some(&ca));
    let result = mail(&tool, json!({"action": "folders"})).await;
    assert!(
        matches!(code(&result), "service_unavailable" | "timeout"),
        "{result:?}"
    );
    // A submission server takes no login before STARTTLS: a clear-text client is refused.
    let tool = secured("tls", dovecot.imaps, "plain", smtp.starttls, Some(&ca));
    let result = mail(
        &tool,
        json!({"action": "send", "to": ["bob@example.com"], "subject": "x", "text": "x"}),
    )
    .await;
    assert_eq!(code(&result), "permission_denied", "{result:?}");
    assert!(result.text_content().contains("\"starttls\""), "{result:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_have_codes_and_say_what_to_do() {
    if !servers_available() {
        return;
    }
    let dovecot = start_dovecot();
    let smtp = Smtp::start(USER, PASSWORD, &dovecot.certificates);

    // No account at all: how to add one.
    let tool = tool_with(vec![], None);
    let result = mail(&tool, json!({"action": "list"})).await;
    assert_eq!(code(&result), "not_configured", "{result:?}");
    let text = result.text_content();
    assert!(text.contains("osprey config set os.mail"), "{text}");
    assert!(text.contains("osprey os mail-password"), "{text}");
    // An account without a stored password: how to store it.
    let tool = tool_with(vec![account(&dovecot, Some(&smtp))], None);
    let result = mail(&tool, json!({"action": "folders"})).await;
    assert_eq!(code(&result), "not_configured", "{result:?}");
    assert!(
        result
            .text_content()
            .contains("osprey os mail-password work"),
        "{result:?}"
    );

    // A wrong password: permission_denied with the steps, for IMAP and SMTP.
    let tool = tool_with(vec![account(&dovecot, Some(&smtp))], Some("wrong"));
    let result = mail(&tool, json!({"action": "list"})).await;
    assert_eq!(code(&result), "permission_denied", "{result:?}");
    assert!(result.text_content().contains("app password"), "{result:?}");
    let result = mail(
        &tool,
        json!({"action": "send", "to": ["bob@example.com"], "subject": "x", "text": "x"}),
    )
    .await;
    assert_eq!(code(&result), "permission_denied", "{result:?}");
    assert!(result.text_content().contains("535"), "{result:?}");

    // Nothing listening: service_unavailable naming the host. (A name that does not resolve is
    // answered the same way; not tried here, as it would send a query to the machine's DNS.)
    let closed = free_port();
    let mut unreachable = account(&dovecot, Some(&smtp));
    unreachable["imap"]["port"] = json!(closed);
    unreachable["smtp"]["port"] = json!(closed);
    let tool = tool_with(vec![unreachable], Some(PASSWORD));
    let result = mail(&tool, json!({"action": "folders"})).await;
    assert_eq!(code(&result), "service_unavailable", "{result:?}");
    assert!(
        result
            .text_content()
            .contains(&format!("127.0.0.1:{closed}"))
            && result.text_content().contains("connection refused"),
        "{result:?}"
    );
    let result = mail(
        &tool,
        json!({"action": "send", "to": ["bob@example.com"], "subject": "x", "text": "x"}),
    )
    .await;
    assert_eq!(code(&result), "service_unavailable", "{result:?}");

    // A server that accepts and never answers: timeout.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let mut stalled = account(&dovecot, Some(&smtp));
    stalled["imap"]["port"] = json!(silent_port);
    let accounts: Vec<MailAccount> = serde_json::from_value(json!([stalled])).unwrap();
    let tool = OsTool::new(OsConfig {
        mail: MailConfig {
            accounts,
            secrets: Some(Arc::new(|_: &str| Ok(Some(PASSWORD.to_string())))),
            timeout: Duration::from_secs(1),
            ..MailConfig::default()
        },
        ..OsConfig::default()
    });
    let result = mail(&tool, json!({"action": "folders"})).await;
    assert_eq!(code(&result), "timeout", "{result:?}");
    assert!(result.text_content().contains("greeting"), "{result:?}");
    drop(silent);

    // Clear text to a host off this machine is refused before anything is sent.
    let mut clear = account(&dovecot, Some(&smtp));
    clear["imap"] = json!({"host": "192.0.2.10", "port": 143, "tls": "plain"});
    let tool = tool_with(vec![clear], Some(PASSWORD));
    let result = mail(&tool, json!({"action": "folders"})).await;
    assert_eq!(code(&result), "permission_denied", "{result:?}");
    assert!(result.text_content().contains("clear text"), "{result:?}");

    // Bad input is refused before any connection.
    let tool = tool_with(vec![account(&dovecot, Some(&smtp))], Some(PASSWORD));
    let result = mail(
        &tool,
        json!({"action": "send", "to": ["not an address"], "subject": "x", "text": "x"}),
    )
    .await;
    assert_eq!(code(&result), "invalid_input", "{result:?}");
    let result = mail(
        &tool,
        json!({"action": "send", "subject": "x", "text": "x"}),
    )
    .await;
    assert_eq!(code(&result), "invalid_input", "{result:?}");
    assert!(result.text_content().contains("needs `to`"), "{result:?}");
    let result = mail(
        &tool,
        json!({"action": "read", "account": "home", "message": 1}),
    )
    .await;
    assert_eq!(code(&result), "invalid_input", "{result:?}");
    assert!(
        result.text_content().contains("accounts are: work"),
        "{result:?}"
    );
}

fn check(registry: &Registry, origin: Origin, input: Value) -> CheckOutcome {
    let ctx = ToolContext::new(origin, Duration::from_secs(5));
    futures::executor::block_on(registry.check(&ctx, "os", input))
}

/// Reading mail is asked under the default policy; sending is asked every time, even where the
/// policy would let everything else run.
#[test]
fn mail_approvals_follow_the_issue() {
    let asks = |outcome: &CheckOutcome| matches!(outcome, CheckOutcome::Ask { .. });
    for (level, data) in [
        (Level::Allowlist, tempfile::tempdir().unwrap()),
        (Level::Full, tempfile::tempdir().unwrap()),
    ] {
        let policy = Policy::new(
            PolicyConfig {
                level,
                ..PolicyConfig::default()
            },
            None,
        )
        .unwrap();
        let registry = Registry::new(RegistryConfig::new(policy, data.path()));
        registry.register_domain(OsTool::new(OsConfig::default()));
        let send = json!({"resource": "mail", "action": "send", "to": ["a@example.com"], "subject": "s", "text": "t"});
        let reply = json!({"resource": "mail", "action": "reply", "message": 3, "text": "t"});
        for input in [send, reply] {
            match check(&registry, Origin::User, input.clone()) {
                CheckOutcome::Ask { reason } => {
                    assert!(reason.contains("sending is asked every time"), "{reason}")
                }
                other => panic!("{input} at {level:?}: {other:?}"),
            }
        }
        for action in ["folders", "list", "search", "read"] {
            let input = json!({"resource": "mail", "action": action, "message": 1, "query": "x"});
            assert_eq!(
                asks(&check(&registry, Origin::User, input.clone())),
                level != Level::Full,
                "{input} at {level:?}"
            );
            assert!(asks(&check(&registry, Origin::Comm, input.clone())) || level == Level::Full);
        }
    }
}
