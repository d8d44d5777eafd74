//! `osprey app accounts | connect | disconnect` and `osprey config set store.token` as a person
//! runs them, against a loopback authorization server (`osprey_tests::oauth_server`): the
//! command says what the app asks for, prints the sign-in address (the test's browser follows
//! it; a stand-in `xdg-open` on PATH keeps a real browser from opening), stores the tokens in
//! the secret store and never prints them.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use osprey_tests::oauth_server::{OAuthServer, browse};
use osprey_tests::{app_project, fixture_binary, run_osprey};
use serde_json::{Value, json};

const OSPREY: &str = env!("CARGO_BIN_EXE_osprey");

fn accounts(data: &Path) -> Value {
    let listed = run_osprey(OSPREY, data, &["app", "accounts", "--json"], "");
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    serde_json::from_str(&listed.stdout).unwrap()
}

#[test]
fn connecting_from_the_command_line_stores_tokens_it_never_prints() {
    let server = OAuthServer::start("cli-client", Duration::from_secs(3600)).unwrap();
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let project = root.path().join("mail");
    let manifest = json!({
        "id": "mail", "name": "Mail", "version": "1.0.0",
        "provides": ["tool:settings"],
        "permissions": ["oauth:devmail"],
        "oauth": {
            "provider": "devmail",
            "client_id": "cli-client",
            "authorize_url": server.authorize_url(),
            "token_url": server.token_url(),
            "scopes": ["mail.read"],
        },
    });
    app_project(
        &project,
        &manifest,
        &fixture_binary("osprey-fixture-probe-app"),
    );
    let sideloaded = run_osprey(
        OSPREY,
        &data,
        &["app", "sideload", project.to_str().unwrap()],
        "",
    );
    assert_eq!(sideloaded.code, 0, "{}", sideloaded.stderr);
    assert_eq!(accounts(&data)["accounts"][0]["state"], "not_connected");

    // A stand-in system opener, so no real browser starts; the test's browser follows the
    // address the command prints.
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("xdg-open"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(bin.join("xdg-open"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new(OSPREY)
        .arg("--data-dir")
        .arg(&data)
        .args(["app", "connect", "mail", "--timeout", "30"])
        .env_remove("OSPREY_DATA_DIR")
        .env("OSPREY_SECRETS", "file")
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let url = loop {
        let mut line = String::new();
        assert_ne!(
            stderr.read_line(&mut line).unwrap(),
            0,
            "no address: {said}"
        );
        said.push_str(&line);
        if let Some(url) = line.trim().strip_prefix(&server.authorize_url()) {
            break format!("{}{url}", server.authorize_url());
        }
    };
    // Shown before the sign-in: who asks, where, for what.
    assert!(
        said.contains(
            "Mail (mail) asks to use your devmail account, signing in at 127.0.0.1, with: mail.read"
        ),
        "{said}"
    );
    let (status, page) = browse(&url, |back| back).unwrap();
    assert_eq!(status, 200);
    assert!(page.contains("You can close this window"), "{page}");
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("connected mail to your devmail account"),
        "{stdout}"
    );

    let listed = accounts(&data);
    assert_eq!(listed["accounts"][0]["state"], "connected", "{listed}");
    let secrets = std::fs::read_to_string(data.join("secrets.json")).unwrap();
    let stored: Value = serde_json::from_str(&secrets).unwrap();
    let account: Value =
        serde_json::from_str(stored["app.mail.oauth.devmail"].as_str().unwrap()).unwrap();
    let token = account["tokens"]["access_token"].as_str().unwrap();
    assert!(server.access_valid(token));
    assert!(!listed.to_string().contains(token));
    assert!(!stdout.contains(token));

    // The store token: kept in the secret store, never printed back.
    let set = run_osprey(
        OSPREY,
        &data,
        &["config", "set", "store.token", "-"],
        "st-123\n",
    );
    assert_eq!(set.code, 0, "{}", set.stderr);
    let get = run_osprey(OSPREY, &data, &["config", "get", "store.token"], "");
    assert_ne!(get.code, 0);
    assert!(!get.stdout.contains("st-123"));
    let secrets = std::fs::read_to_string(data.join("secrets.json")).unwrap();
    assert!(secrets.contains("\"store.token\": \"st-123\""), "{secrets}");

    let disconnected = run_osprey(OSPREY, &data, &["app", "disconnect", "mail"], "");
    assert_eq!(disconnected.code, 0, "{}", disconnected.stderr);
    // This app names no revocation endpoint: the person is told to end the grant themselves.
    assert!(
        disconnected
            .stdout
            .contains("names no revocation endpoint for devmail"),
        "{}",
        disconnected.stdout
    );
    assert!(server.revocations().is_empty());
    assert_eq!(accounts(&data)["accounts"][0]["state"], "not_connected");
    let secrets = std::fs::read_to_string(data.join("secrets.json")).unwrap();
    assert!(!secrets.contains("app.mail.oauth"), "{secrets}");

    // Another provider than the app's is refused with its code and exit status 3.
    let refused = run_osprey(OSPREY, &data, &["app", "connect", "mail", "github"], "");
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("oauth_failed"),
        "{}",
        refused.stderr
    );
}
