//! The `chrome` profile: the person's own Chromium, started by them with remote debugging on a
//! loopback port. The agent works in a tab of its own there, sees the person's tabs, never
//! closes their browser, and every call there is asked.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Rig, chromium, serve};
use osprey_browser::{ManagedDriver, SearchConfig};
use osprey_tools::DomainTool;
use serde_json::{Value, json};

/// The person's browser, killed when the test ends however it ends.
struct PersonsBrowser(Child);

impl Drop for PersonsBrowser {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The person's browser: a Chromium with its own profile and `--remote-debugging-port=0`, on
/// `url`; returns it with the port it chose (from `DevToolsActivePort`).
fn persons_browser(program: &Path, profile: &Path, url: &str) -> (PersonsBrowser, u16) {
    let mut command = Command::new(program);
    command
        .arg("--headless=new")
        .arg("--remote-debugging-port=0")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args([
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            // A throwaway profile: with a session bus, Chromium would otherwise ask the keyring
            // for its password store, whose unlock prompt nobody answers under Xvfb, and stall.
            "--password-store=basic",
        ])
        .arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Chromium's own sandbox cannot start as root (as in this CI's container).
    if std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0 {
        command.arg("--no-sandbox");
    }
    let child = PersonsBrowser(command.spawn().unwrap());
    let file = profile.join("DevToolsActivePort");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(port) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse().ok())
        {
            return (child, port);
        }
        assert!(Instant::now() < deadline, "the browser never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pages `list_pages` printed, one line each: `* <target_id> "<title>" <url>` (`*` marks the
/// current one, `-` the others).
fn pages(listed: &str) -> Vec<String> {
    listed
        .lines()
        .filter(|line| line.starts_with("* ") || line.starts_with("- "))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_works_in_a_tab_of_its_own_in_the_persons_browser_and_leaves_it_running() {
    let Some(program) = chromium() else { return };
    let base = serve("127.0.0.1").await;
    let rig = Rig::new(true, SearchConfig::default());
    let profile = rig.dir.path().join("persons-profile");
    let (mut browser, port) = persons_browser(&program, &profile, &format!("{base}/links"));
    rig.actions
        .add_profile(Arc::new(ManagedDriver::attach(port)), false);

    // Every call there is asked, reads included; the managed profile's reads are not.
    let facts = |input: Value| {
        let call = rig.tool.domain().resolve(input).unwrap();
        rig.tool.facts(&call)
    };
    let asked = facts(json!({"resource": "browser", "action": "snapshot", "profile": "chrome"}));
    assert!(asked.needs_approval.is_some(), "{asked:?}");
    assert!(asked.summary.contains("(profile chrome)"), "{asked:?}");
    assert!(
        facts(json!({"resource": "browser", "action": "snapshot"}))
            .needs_approval
            .is_none()
    );

    // The person's tab is there to see.
    let listed = rig
        .ok(json!({"resource": "browser", "action": "list_pages", "profile": "chrome"}))
        .await;
    let theirs = pages(&listed);
    assert!(
        theirs.iter().any(|p| p.ends_with(&format!("{base}/links"))),
        "{listed}"
    );

    // The agent navigates, reads and fills in its own tab.
    let page = rig
        .ok(
            json!({"resource": "browser", "action": "navigate", "profile": "chrome",
                   "url": format!("{base}/form")}),
        )
        .await;
    assert!(page.contains("Title: Form"), "{page}");
    let name = common::ref_of(&page, r#"textbox "Name""#);
    rig.ok(
        json!({"resource": "browser", "action": "fill", "profile": "chrome",
                  "ref": name, "value": "Ada"}),
    )
    .await;
    let now = rig
        .ok(json!({"resource": "browser", "action": "snapshot", "profile": "chrome"}))
        .await;
    assert!(now.contains(r#"= "Ada""#), "{now}");
    let listed = pages(
        &rig.ok(json!({"resource": "browser", "action": "list_pages", "profile": "chrome"}))
            .await,
    );
    assert_eq!(listed.len(), theirs.len() + 1, "{listed:?}");
    assert!(
        listed.iter().any(|p| p.ends_with(&format!("{base}/links"))),
        "the person's tab was left where it was: {listed:?}"
    );
    assert!(
        listed
            .iter()
            .any(|p| p.starts_with("* ") && p.ends_with(&format!("{base}/form"))),
        "the agent's own tab is the current one: {listed:?}"
    );
    let status = rig
        .ok(json!({"resource": "browser", "action": "status", "profile": "chrome"}))
        .await;
    assert!(status.contains(r#""running":true"#), "{status}");
    assert!(status.contains(r#""profile_dir":null"#), "{status}");
    assert!(status.contains("Chrome"), "{status}");

    // Closing lets go: the person's browser and tabs stay.
    rig.ok(json!({"resource": "browser", "action": "close", "profile": "chrome"}))
        .await;
    assert!(
        browser.0.try_wait().unwrap().is_none(),
        "the person's browser was closed"
    );
    let still: Value = reqwest::get(format!("http://127.0.0.1:{port}/json/list"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        still
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["url"] == format!("{base}/links")),
        "{still}"
    );
    drop(browser);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_persons_browser_listening_the_error_says_how_to_start_it() {
    let rig = Rig::new(true, SearchConfig::default());
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    rig.actions
        .add_profile(Arc::new(ManagedDriver::attach(port)), false);
    let listed = rig
        .call(json!({"resource": "browser", "action": "list_pages", "profile": "chrome"}))
        .await;
    assert!(listed.is_error, "{listed:?}");
    let launched = rig
        .call(json!({"resource": "browser", "action": "launch", "profile": "chrome"}))
        .await;
    assert!(launched.is_error, "{launched:?}");
    let text = launched.text_content();
    assert!(
        text.contains(&format!("--remote-debugging-port={port}")) && text.contains("web.chrome"),
        "{text}"
    );

    // A profile nobody set up says how to set it up.
    let other = Rig::new(true, SearchConfig::default());
    let refused = other
        .call(json!({"resource": "browser", "action": "snapshot", "profile": "chrome"}))
        .await;
    assert!(refused.is_error);
    assert!(
        refused
            .text_content()
            .contains("--remote-debugging-port=9222"),
        "{refused:?}"
    );
}
