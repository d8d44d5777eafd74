//! Settings' Accounts section on a real core against real servers on loopback (started from
//! `osprey_tests::servers`, as the platform crate's `os` tests do): a mail account added with
//! its password works when tested (an IMAP login at Dovecot and an SMTP login at aiosmtpd), a
//! wrong password says so, an SMTP server that refuses the login is named as the part that
//! does not work, an edit
//! with no password keeps the stored one, a rename carries it, removing the account deletes it
//! from the secret store; the same for a CalDAV/CardDAV account at Radicale, whose calendars the
//! registered `os` tool sees at once. Invalid accounts are refused with the reason and nothing
//! stored; everything is kept across a restart.
#![cfg(unix)]

use std::path::Path;

use osprey_core::{Core, CoreOptions};
use osprey_tests::servers::{
    Aiosmtpd, Dovecot, RADICALE_PASSWORD, RADICALE_USER, Radicale, missing_mail_programs,
    python_with_aiosmtpd, skip_for_missing,
};
use osprey_types::{
    CoreEvent, DavAccountInput, MailAccountInput, MailServerView, Origin, UiErrorCode,
};
use serde_json::json;

const USER: &str = "alice";
const PASSWORD: &str = "s3cret-Pass";

fn open(data: &Path) -> Core {
    Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        policy: None,
        secrets: Some(osprey_core::secrets::Backend::FileOnly),
    })
    .unwrap()
}

/// Dovecot and aiosmtpd taking `smtp_password` (or `None` with the reason printed where they
/// are not installed; on CI they must be).
fn mail_servers(test: &str, smtp_password: &str) -> Option<(Dovecot, Aiosmtpd)> {
    let mut missing = missing_mail_programs();
    if python_with_aiosmtpd().is_none() {
        missing.push("python3 with aiosmtpd");
    }
    if skip_for_missing(test, &missing) {
        return None;
    }
    let dovecot = Dovecot::start(USER, PASSWORD, |_| {});
    let smtp = Aiosmtpd::start(USER, smtp_password, &dovecot.certificates);
    Some((dovecot, smtp))
}

fn mail_input(servers: &(Dovecot, Aiosmtpd), password: Option<&str>) -> MailAccountInput {
    let (dovecot, smtp) = servers;
    MailAccountInput {
        previous_name: None,
        name: "work".into(),
        email: "alice@example.com".into(),
        display_name: "Alice Example".into(),
        username: USER.into(),
        imap: MailServerView {
            host: "127.0.0.1".into(),
            port: Some(dovecot.imap),
            tls: "plain".into(),
        },
        smtp: MailServerView {
            host: "127.0.0.1".into(),
            port: Some(smtp.plain),
            tls: "plain".into(),
        },
        sent_folder: "Sent".into(),
        password: password.map(str::to_string),
    }
}

fn stored_secret(core: &Core, key: &str) -> Option<String> {
    core.secrets().get(key).unwrap()
}

#[tokio::test]
async fn a_mail_account_is_added_tested_edited_renamed_and_removed_with_its_password() {
    let Some(servers) = mail_servers("the mail account test", PASSWORD) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    let mut events = core.subscribe();

    let view = core
        .save_mail_account(mail_input(&servers, Some(PASSWORD)))
        .await
        .unwrap();
    assert_eq!(view.mail.len(), 1);
    assert!(view.mail[0].password_stored);
    assert_eq!(view.mail[0].imap.port, Some(servers.0.imap));
    assert_eq!(view.mail[0].sent_folder, "Sent");
    // Announced, so an open Settings page and the tool see it without a restart.
    let changed = loop {
        match events.try_recv() {
            Ok(CoreEvent::SettingChanged { key }) => break key,
            Ok(_) => continue,
            Err(error) => panic!("no SettingChanged event: {error:?}"),
        }
    };
    assert_eq!(changed, "os.mail");
    // The password went to the secret store, never to the settings table.
    assert_eq!(
        stored_secret(&core, "os.mail.work.password").as_deref(),
        Some(PASSWORD)
    );
    let setting = core.settings().get("os.mail").unwrap().unwrap();
    assert!(!setting.to_string().contains(PASSWORD), "{setting}");
    assert_eq!(setting["accounts"][0]["username"], json!(USER));

    let check = core.test_mail_account("work").await;
    assert!(check.ok, "{check:?}");
    assert!(
        check.message.contains("Logged in to 127.0.0.1 as alice"),
        "{check:?}"
    );
    assert!(check.message.contains("folder"), "{check:?}");
    assert!(
        check
            .message
            .contains("Logged in to 127.0.0.1 for sending."),
        "{check:?}"
    );
    let login = servers.1.login();
    assert_eq!(login, json!({"login": USER, "ok": true}));

    // An edit with the password left blank keeps the stored one.
    let mut edit = mail_input(&servers, Some(""));
    edit.previous_name = Some("work".into());
    edit.display_name = "Alice E.".into();
    let view = core.save_mail_account(edit).await.unwrap();
    assert_eq!(view.mail[0].display_name, "Alice E.");
    assert!(core.test_mail_account("work").await.ok);

    // A wrong password is a clear result, not a failed command.
    let mut wrong = mail_input(&servers, Some("not-the-password"));
    wrong.previous_name = Some("work".into());
    core.save_mail_account(wrong).await.unwrap();
    let check = core.test_mail_account("work").await;
    assert!(!check.ok);
    assert_eq!(
        check.code.as_deref(),
        Some("permission_denied"),
        "{check:?}"
    );
    // In the page's words, not the command line's.
    assert!(
        check.message.contains("refused the sign-in as alice") && !check.message.contains("osprey"),
        "{check:?}"
    );

    // A rename with no new password carries the stored one to the new name.
    let mut renamed = mail_input(&servers, Some(PASSWORD));
    renamed.previous_name = Some("work".into());
    core.save_mail_account(renamed).await.unwrap();
    let mut renamed = mail_input(&servers, None);
    renamed.previous_name = Some("work".into());
    renamed.name = "office".into();
    let view = core.save_mail_account(renamed).await.unwrap();
    assert_eq!(view.mail.len(), 1);
    assert_eq!(view.mail[0].name, "office");
    assert_eq!(stored_secret(&core, "os.mail.work.password"), None);
    assert!(core.test_mail_account("office").await.ok);

    // Kept across a restart.
    drop(core);
    let core = open(dir.path());
    let view = core.os_accounts();
    assert_eq!(view.mail[0].name, "office");
    assert!(view.mail[0].password_stored);

    // Removing the account deletes its password.
    let view = core.remove_mail_account("office").await.unwrap();
    assert!(view.mail.is_empty());
    assert_eq!(stored_secret(&core, "os.mail.office.password"), None);
    let check = core.test_mail_account("office").await;
    assert!(!check.ok);
    assert_eq!(check.code.as_deref(), Some("not_configured"), "{check:?}");
}

#[tokio::test]
async fn an_smtp_server_that_refuses_the_login_is_named_in_the_check() {
    let Some(servers) = mail_servers("the SMTP check test", "another-password") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    core.save_mail_account(mail_input(&servers, Some(PASSWORD)))
        .await
        .unwrap();
    let check = core.test_mail_account("work").await;
    assert!(!check.ok, "{check:?}");
    assert_eq!(
        check.code.as_deref(),
        Some("permission_denied"),
        "{check:?}"
    );
    // Reading works; the page says which half does not.
    assert!(
        check.message.starts_with("Logged in to 127.0.0.1 as alice")
            && check
                .message
                .contains("Sending does not work: The outgoing (SMTP) server refused the sign-in"),
        "{check:?}"
    );
    assert_eq!(servers.1.login(), json!({"login": USER, "ok": false}));
}

#[tokio::test]
async fn a_server_that_is_not_there_is_named_in_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    let closed = osprey_tests::servers::free_port();
    let input = MailAccountInput {
        imap: MailServerView {
            host: "127.0.0.1".into(),
            port: Some(closed),
            tls: "plain".into(),
        },
        ..mail_input_without_server()
    };
    core.save_mail_account(input).await.unwrap();
    let check = core.test_mail_account("work").await;
    assert!(!check.ok);
    assert_eq!(
        check.code.as_deref(),
        Some("service_unavailable"),
        "{check:?}"
    );
    assert!(check.message.contains(&closed.to_string()), "{check:?}");
}

fn mail_input_without_server() -> MailAccountInput {
    MailAccountInput {
        previous_name: None,
        name: "work".into(),
        email: "alice@example.com".into(),
        display_name: String::new(),
        username: String::new(),
        imap: MailServerView {
            host: "imap.example.com".into(),
            port: None,
            tls: "tls".into(),
        },
        smtp: MailServerView {
            host: "smtp.example.com".into(),
            port: None,
            tls: "starttls".into(),
        },
        sent_folder: String::new(),
        password: Some("pw".into()),
    }
}

#[tokio::test]
async fn invalid_accounts_are_refused_with_the_reason_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    let refused = |input: MailAccountInput| {
        let core = &core;
        async move { core.save_mail_account(input).await.unwrap_err() }
    };
    let error = refused(MailAccountInput {
        email: "not an address".into(),
        ..mail_input_without_server()
    })
    .await;
    assert_eq!(error.code, UiErrorCode::InvalidSetting);
    assert!(error.message.contains("email"), "{error:?}");
    let error = refused(MailAccountInput {
        smtp: MailServerView {
            host: "smtp.example.com".into(),
            port: Some(25),
            tls: "plain".into(),
        },
        ..mail_input_without_server()
    })
    .await;
    assert!(error.message.contains("clear text"), "{error:?}");
    let error = refused(MailAccountInput {
        name: "has space".into(),
        ..mail_input_without_server()
    })
    .await;
    assert_eq!(error.code, UiErrorCode::InvalidSetting);
    // Nothing stored by the refusals, the password included.
    assert!(core.os_accounts().mail.is_empty());
    assert_eq!(stored_secret(&core, "os.mail.work.password"), None);
    assert_eq!(stored_secret(&core, "os.mail.has space.password"), None);

    // A second account of the same name is refused rather than replacing the first.
    core.save_mail_account(mail_input_without_server())
        .await
        .unwrap();
    let error = refused(mail_input_without_server()).await;
    assert!(error.message.contains("exists already"), "{error:?}");
    // Nor may a rename land on another account's name.
    core.save_mail_account(MailAccountInput {
        name: "home".into(),
        ..mail_input_without_server()
    })
    .await
    .unwrap();
    let error = refused(MailAccountInput {
        previous_name: Some("home".into()),
        name: "Work".into(),
        ..mail_input_without_server()
    })
    .await;
    assert!(error.message.contains("exists already"), "{error:?}");
    let names: Vec<String> = core
        .os_accounts()
        .mail
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["work", "home"]);

    let error = core
        .save_dav_account(DavAccountInput {
            previous_name: None,
            name: "home".into(),
            kind: "dav".into(),
            url: "ftp://dav.example.com/".into(),
            username: "me".into(),
            password: None,
        })
        .await
        .unwrap_err();
    assert_eq!(error.code, UiErrorCode::InvalidSetting);
    assert!(error.message.contains("http"), "{error:?}");
    assert!(core.os_accounts().dav.is_empty());
}

fn dav_input(server: &Radicale, password: Option<&str>) -> DavAccountInput {
    DavAccountInput {
        previous_name: None,
        name: "home".into(),
        kind: "dav".into(),
        url: server.url.clone(),
        username: RADICALE_USER.into(),
        password: password.map(str::to_string),
    }
}

#[tokio::test]
async fn a_dav_account_is_added_tested_used_by_the_tool_and_removed_with_its_password() {
    let Some(server) = Radicale::start("a_dav_account_is_added_tested_used_by_the_tool") else {
        return;
    };
    server.make_collection("alice/work/", "calendar", "Work");
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());

    let view = core
        .save_dav_account(dav_input(&server, Some(RADICALE_PASSWORD)))
        .await
        .unwrap();
    assert_eq!(view.dav.len(), 1);
    assert!(view.dav[0].password_stored);
    assert_eq!(view.dav[0].kind, "dav");
    // Stored where `osprey config set dav.home.password` puts it.
    assert_eq!(
        stored_secret(&core, "dav.home.password").as_deref(),
        Some(RADICALE_PASSWORD)
    );
    let setting = core.settings().get("dav.accounts").unwrap().unwrap();
    assert!(!setting.to_string().contains(RADICALE_PASSWORD));

    let check = core.test_dav_account("home").await;
    assert!(check.ok, "{check:?}");
    assert!(check.message.contains("1 calendar (Work)"), "{check:?}");
    assert!(check.message.contains("address book"), "{check:?}");

    // The registered tool sees the new account at once, without a restart.
    let listed = core
        .call_tool(
            Origin::User,
            "os",
            json!({"resource": "calendar", "action": "calendars", "account": "home"}),
        )
        .await;
    assert!(!listed.is_error, "{listed:?}");
    assert!(listed.text_content().contains("Work"), "{listed:?}");

    // Calendars only: the address books are not asked for.
    let mut caldav = dav_input(&server, None);
    caldav.previous_name = Some("home".into());
    caldav.kind = "caldav".into();
    core.save_dav_account(caldav).await.unwrap();
    let check = core.test_dav_account("home").await;
    assert!(check.ok, "{check:?}");
    assert!(!check.message.contains("address book"), "{check:?}");

    // A wrong password is named as such.
    let mut wrong = dav_input(&server, Some("wrong"));
    wrong.previous_name = Some("home".into());
    core.save_dav_account(wrong).await.unwrap();
    let check = core.test_dav_account("home").await;
    assert!(!check.ok);
    assert_eq!(
        check.code.as_deref(),
        Some("permission_denied"),
        "{check:?}"
    );
    assert!(
        check.message.contains("refused the sign-in as alice") && !check.message.contains("osprey"),
        "{check:?}"
    );

    // Renamed with no new password: the stored one moves with it.
    let mut renamed = dav_input(&server, Some(RADICALE_PASSWORD));
    renamed.previous_name = Some("home".into());
    core.save_dav_account(renamed).await.unwrap();
    let mut renamed = dav_input(&server, Some(""));
    renamed.previous_name = Some("home".into());
    renamed.name = "radicale".into();
    let view = core.save_dav_account(renamed).await.unwrap();
    assert_eq!(view.dav.len(), 1);
    assert_eq!(view.dav[0].name, "radicale");
    assert_eq!(stored_secret(&core, "dav.home.password"), None);
    assert!(core.test_dav_account("radicale").await.ok);

    let view = core.remove_dav_account("radicale").await.unwrap();
    assert!(view.dav.is_empty());
    assert_eq!(stored_secret(&core, "dav.radicale.password"), None);
    assert!(!core.test_dav_account("radicale").await.ok);
}
