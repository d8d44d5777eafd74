//! Setting up a mail account from the terminal as the README says: `osprey config set os.mail`
//! (checked: no password in clear text off this machine), `osprey os mail-password <account>`
//! (the password from standard input into the secret store, here the private file), and the
//! `os` tool then reaching the account's server with them, without a restart. The server is a
//! loopback port nothing listens on, so the answer says the password was found and the server
//! is not there; the mail resource itself is tested against real servers in osprey-platform.

use std::net::TcpListener;
use std::path::Path;

use osprey_tests::{Finished as Run, run_osprey};
use serde_json::{Value, json};

fn osprey(data: &Path, args: &[&str], stdin: &str) -> Run {
    run_osprey(env!("CARGO_BIN_EXE_osprey"), data, args, stdin)
}

fn tool(data: &Path, input: Value, extra: &[&str]) -> Value {
    let input = input.to_string();
    let mut args = vec!["tool", "os", input.as_str(), "--json"];
    args.extend_from_slice(extra);
    let run = osprey(data, &args, "");
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} / {}", run.stdout, run.stderr))
}

#[test]
fn a_mail_account_is_set_up_from_the_terminal() {
    let data = tempfile::tempdir().unwrap();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let folders = json!({"resource": "mail", "action": "folders"});

    // Nothing set up: status and the tool say how.
    let run = osprey(data.path(), &["os", "status", "--json"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let status: Value = serde_json::from_str(&run.stdout).unwrap();
    let mail = status
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["capability"] == "mail")
        .unwrap();
    assert_eq!(mail["available"], false);
    assert!(
        mail["detail"]
            .as_str()
            .unwrap()
            .contains("osprey config set os.mail"),
        "{mail}"
    );
    let answer = tool(data.path(), folders.clone(), &["--policy", "full"]);
    assert_eq!(answer["code"], "not_configured", "{answer}");

    // A password in clear text to another machine is refused when the setting is stored.
    let remote = json!({"accounts": [{"name": "work", "email": "me@example.com",
        "imap": {"host": "imap.example.com", "tls": "plain"}, "smtp": {"host": "smtp.example.com"}}]});
    let run = osprey(
        data.path(),
        &["config", "set", "os.mail", &remote.to_string()],
        "",
    );
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("clear text"), "{}", run.stderr);

    let local = json!({"accounts": [{"name": "work", "email": "me@example.com", "username": "me",
        "imap": {"host": "127.0.0.1", "port": closed, "tls": "plain"},
        "smtp": {"host": "127.0.0.1", "port": closed, "tls": "plain"}}]});
    let run = osprey(
        data.path(),
        &["config", "set", "os.mail", &local.to_string()],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let answer = tool(data.path(), folders.clone(), &["--policy", "full"]);
    assert_eq!(answer["code"], "not_configured", "{answer}");
    assert!(
        answer.to_string().contains("osprey os mail-password work"),
        "{answer}"
    );

    // The password from standard input, into the private file (no keyring here).
    let run = osprey(
        data.path(),
        &["os", "mail-password", "WORK"],
        "pass with spaces \n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("readable only by you"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("no account named"), "{}", run.stderr);
    let secrets: Value =
        serde_json::from_str(&std::fs::read_to_string(data.path().join("secrets.json")).unwrap())
            .unwrap();
    assert_eq!(secrets["os.mail.work.password"], "pass with spaces ");
    let run = osprey(data.path(), &["config", "get", "os.mail"], "");
    assert!(!run.stdout.contains("pass with spaces"), "{}", run.stdout);

    // Now the tool finds the password and goes to the server, which is not there.
    let answer = tool(data.path(), folders.clone(), &["--policy", "full"]);
    assert_eq!(answer["code"], "service_unavailable", "{answer}");
    assert!(
        answer.to_string().contains(&format!("127.0.0.1:{closed}")),
        "{answer}"
    );
    // Reading needs approval under the default policy; sending is asked even at `full`.
    let run = osprey(
        data.path(),
        &["tool", "os", &folders.to_string(), "--check"],
        "",
    );
    assert!(run.stdout.starts_with("ask"), "{}", run.stdout);
    let send = json!({"resource": "mail", "action": "send", "to": ["bob@example.com"],
        "subject": "hi", "text": "hello"});
    let run = osprey(
        data.path(),
        &[
            "tool",
            "os",
            &send.to_string(),
            "--check",
            "--policy",
            "full",
        ],
        "",
    );
    assert!(
        run.stdout
            .starts_with("ask: mail goes out in the person's name"),
        "{}",
        run.stdout
    );

    // Forgetting the password.
    let run = osprey(
        data.path(),
        &["os", "mail-password", "work", "--remove"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let answer = tool(data.path(), folders, &["--policy", "full"]);
    assert_eq!(answer["code"], "not_configured", "{answer}");
    // A password for an account not set up yet is kept, with a note.
    let run = osprey(data.path(), &["os", "mail-password", "home"], "x\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("no account named home"),
        "{}",
        run.stderr
    );
    let run = osprey(data.path(), &["os", "mail-password", "home"], "\n");
    assert_ne!(run.code, 0);
}
