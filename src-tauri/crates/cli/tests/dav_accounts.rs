//! Calendar and contacts accounts as a person sets them up from the terminal: `osprey config set
//! dav.<name>.…` stores the URL and username in the `dav.accounts` setting and the password in
//! the secret store (here the private file), and `osprey os status` then reaches the server
//! named there. The server's side (discovery, sign-in) is tested against Radicale in
//! osprey-platform's tests/os/calendar.rs.

use std::path::Path;

use osprey_tests::{Finished as Run, run_osprey};
use serde_json::{Value, json};

fn osprey(data: &Path, args: &[&str], stdin: &str) -> Run {
    run_osprey(env!("CARGO_BIN_EXE_osprey"), data, args, stdin)
}

fn status_of(data: &Path, capability: &str) -> Value {
    let run = osprey(data, &["os", "status", "--json"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let all: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    all.as_array()
        .unwrap()
        .iter()
        .find(|c| c["capability"] == capability)
        .unwrap_or_else(|| panic!("{capability} missing: {all}"))
        .clone()
}

#[test]
fn accounts_are_set_up_field_by_field_and_the_password_stays_secret() {
    let data = tempfile::tempdir().unwrap();
    // Only the accounts set up here: not the calendars of a desktop the test may run on.
    let run = osprey(
        data.path(),
        &["config", "set", "os.desktop_stores", "false"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let calendar = status_of(data.path(), "calendar");
    assert_eq!(calendar["available"], false);
    assert!(
        calendar["detail"]
            .as_str()
            .unwrap()
            .contains("osprey config set dav.<name>.url"),
        "{calendar}"
    );

    // A port nothing listens on: once the account is complete, the tool goes there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/dav/");
    let run = osprey(data.path(), &["config", "set", "dav.home.url", &url], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let detail = status_of(data.path(), "contacts")["detail"].to_string();
    assert!(
        detail.contains("has no username yet") && detail.contains("dav.home.username"),
        "{detail}"
    );
    let run = osprey(
        data.path(),
        &["config", "set", "dav.home.username", "ada"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = osprey(
        data.path(),
        &["config", "set", "dav.home.kind", "caldav"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = osprey(
        data.path(),
        &["config", "set", "dav.home.password", "-"],
        "s3cret-from-stdin\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("the password is stored in"),
        "{}",
        run.stderr
    );

    let run = osprey(data.path(), &["config", "get", "dav.accounts"], "");
    let stored: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(
        stored,
        json!({"home": {"kind": "caldav", "url": url, "username": "ada"}})
    );
    assert!(!run.stdout.contains("s3cret"));
    let run = osprey(data.path(), &["config", "get", "dav.home.password"], "");
    assert_ne!(run.code, 0);
    assert!(!run.stdout.contains("s3cret") && run.stderr.contains("never printed"));
    let secrets = data.path().join("secrets.json");
    let kept = std::fs::read_to_string(&secrets).unwrap();
    assert!(
        kept.contains("\"dav.home.password\": \"s3cret-from-stdin\""),
        "{kept}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&secrets).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let calendar = status_of(data.path(), "calendar");
    assert_eq!(calendar["available"], false);
    let detail = calendar["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("service_unavailable") && detail.contains(&format!("127.0.0.1:{port}")),
        "{detail}"
    );
    // A CalDAV-only account serves no contacts.
    let contacts = status_of(data.path(), "contacts");
    assert!(
        contacts["detail"]
            .as_str()
            .unwrap()
            .contains("No CardDAV account"),
        "{contacts}"
    );

    for (key, value, expected) in [
        (
            "dav.home.url",
            "ftp://example.org/",
            "not an http or https URL",
        ),
        ("dav.home.kind", "webdav", "not an account kind"),
        ("dav.bad name.url", "https://x/", "must be 1 to 64 letters"),
        ("dav.home.colour", "blue", "unknown account setting"),
    ] {
        let run = osprey(data.path(), &["config", "set", key, value], "");
        assert_ne!(run.code, 0, "{key} = {value} was accepted");
        assert!(run.stderr.contains(expected), "{key}: {}", run.stderr);
    }
    let run = osprey(
        data.path(),
        &[
            "config",
            "set",
            "dav.accounts",
            r#"{"x": {"url": "https://x/", "pass": "y"}}"#,
        ],
        "",
    );
    assert_ne!(run.code, 0);

    // Removing the account removes its password too.
    let run = osprey(data.path(), &["config", "unset", "dav.home"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = osprey(data.path(), &["config", "get", "dav.accounts"], "");
    assert_eq!(run.stdout.trim(), "{}");
    assert!(
        !std::fs::read_to_string(&secrets)
            .unwrap()
            .contains("s3cret")
    );
}
