//! `osprey daemon` as a person runs it on a headless machine: it starts the installed apps,
//! `osprey app launch | stop | list` from another process reach its supervisor over the control
//! socket, a second Osprey that wants the same data dir's apps is refused naming the holder, and SIGTERM stops every app. Without
//! a daemon, `launch` says how to get one.
#![cfg(unix)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use osprey_tests::daemon::{start_daemon, wait_for_line};

use serde_json::Value;

const DEADLINE: Duration = Duration::from_secs(60);

fn osprey(data: &Path, args: &[&str]) -> (i32, Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_osprey"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("OSPREY_DATA_DIR")
        .env_remove("OSPREY_STORE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (
        output.status.code().unwrap_or(-1),
        serde_json::from_str(&stdout).unwrap_or(Value::String(stdout)),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A sideloaded unit-converter app in `root/units`.
fn sideload(root: &Path, data: &Path) {
    osprey_tests::sideload_unit_converter(
        Path::new(env!("CARGO_BIN_EXE_osprey")),
        root,
        data,
        "units",
    );
}

fn state_of(data: &Path, id: &str) -> Option<String> {
    let (code, report, stderr) = osprey(data, &["app", "list", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    report["apps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|app| app["id"] == id)
        .and_then(|app| app["state"].as_str().map(String::from))
}

/// The running app's process, from its supervisor's pid file.
fn pid_of(data: &Path, id: &str) -> i32 {
    std::fs::read_to_string(data.join("apps").join(id).join(".pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pid_alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

#[test]
fn the_daemon_supervises_apps_that_other_commands_launch_and_stop() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir_all(data.join("apps")).unwrap();
    sideload(root.path(), &data);

    // Without a daemon: a clear refusal, exit 1.
    let (code, report, _) = osprey(&data, &["app", "launch", "units", "--json"]);
    assert_eq!(code, 1);
    assert_eq!(report["code"], "not_running");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("osprey daemon"),
        "{report}"
    );
    assert_eq!(state_of(&data, "units"), None);

    let (daemon, lines) = start_daemon(osprey_bin(), &data);
    wait_for_line(&lines, "osprey daemon: ready");
    // The daemon starts installed apps itself.
    until("the app to run", || {
        state_of(&data, "units").as_deref() == Some("running")
    });

    // A second Osprey that wants the apps of the same data dir (another daemon, a chat whose
    // model is an app) is refused before it touches them, and says who holds the folder.
    let running = pid_of(&data, "units");
    let holder = format!("in use by osprey daemon (pid {})", daemon.0.id());
    let (code, _, stderr) = osprey(&data, &["daemon"]);
    assert_eq!(code, 1);
    assert!(stderr.contains(&holder), "{stderr}");
    let (code, _, stderr) = osprey(&data, &["chat", "--app", "units", "-p", "hello"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&holder) && stderr.contains("--data-dir"),
        "{stderr}"
    );
    assert!(pid_alive(running));
    assert_eq!(pid_of(&data, "units"), running);

    let (code, report, stderr) = osprey(&data, &["app", "stop", "units", "--json"]);
    assert_eq!(code, 0, "{stderr} {report}");
    assert_eq!(state_of(&data, "units"), None);

    let (code, report, stderr) = osprey(&data, &["app", "launch", "units", "--json"]);
    assert_eq!(code, 0, "{stderr} {report}");
    let pid = report["pid"].as_i64().unwrap() as i32;
    assert!(pid_alive(pid));
    assert_eq!(state_of(&data, "units").as_deref(), Some("running"));
    let (code, report, _) = osprey(&data, &["app", "launch", "nothing-here", "--json"]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["ok"], false);

    // SIGTERM: the app goes with the daemon, and so does the control socket.
    let mut daemon = daemon;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = daemon.0.wait().unwrap();
    assert!(status.success(), "{status}");
    until("the app process to exit", || !pid_alive(pid));
    assert!(!data.join("control.sock").exists());
}

/// An Osprey that is killed outright (no chance to stop its apps) leaves no app behind: each app
/// notices it was orphaned and shuts down.
#[test]
fn apps_do_not_outlive_a_killed_daemon() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir_all(data.join("apps")).unwrap();
    sideload(root.path(), &data);
    let (mut daemon, lines) = start_daemon(osprey_bin(), &data);
    wait_for_line(&lines, "osprey daemon: ready");
    until("the app to run", || {
        state_of(&data, "units").as_deref() == Some("running")
    });
    let pid = pid_of(&data, "units");
    assert!(pid_alive(pid));
    daemon.0.kill().unwrap();
    daemon.0.wait().unwrap();
    until("the orphaned app to exit", || !pid_alive(pid));
    // The kernel dropped the killed daemon's folder lock with its process: the next one starts
    // (its lock file still names the dead holder; a stale name never blocks).
    let (next, lines) = start_daemon(osprey_bin(), &data);
    wait_for_line(&lines, "osprey daemon: ready");
    drop(next);
}

/// `osprey app inspect` shows what the Osprey supervising the app sent it and got back.
#[test]
fn a_developer_inspects_the_calls_the_daemon_made_to_an_app() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir_all(data.join("apps")).unwrap();
    sideload(root.path(), &data);

    // Nobody supervises the app: the inspector has nothing, and says where it would be.
    let (code, report, _) = osprey(&data, &["app", "inspect", "units", "--json"]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["code"], "not_running");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("osprey daemon"),
        "{report}"
    );
    let (code, report, _) = osprey(&data, &["app", "inspect", "nope", "--json"]);
    assert_eq!(report["code"], "not_installed", "{report}");
    assert_ne!(code, 0);

    let (_daemon, lines) = start_daemon(osprey_bin(), &data);
    wait_for_line(&lines, "osprey daemon: ready");
    until("the app to run", || {
        state_of(&data, "units").as_deref() == Some("running")
    });
    // The daemon asked the app for its tools when it started it.
    let mut traffic = Value::Null;
    until("the daemon's calls to the app", || {
        let (code, report, stderr) = osprey(&data, &["app", "inspect", "units", "--json"]);
        assert_eq!(code, 0, "{report} {stderr}");
        traffic = report["traffic"].clone();
        traffic["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|call| call["method"] == "osprey.app.v1.ToolService/Schema")
    });
    assert_eq!(traffic["app_id"], "units");
    let schema = traffic["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|call| call["method"] == "osprey.app.v1.ToolService/Schema")
        .unwrap();
    assert_eq!(schema["status"], "Ok", "{schema}");
    assert_eq!(schema["request"][0]["tool"], "convert", "{schema}");
    assert!(
        schema["response"][0].to_string().contains("\"from\""),
        "the schema the app answered is shown: {schema}"
    );

    // As text: one block per call, messages after arrows.
    let (code, text, stderr) = osprey(&data, &["app", "inspect", "units", "--limit", "1"]);
    assert_eq!(code, 0, "{stderr}");
    let text = text.as_str().unwrap().to_owned();
    assert!(text.starts_with('#'), "{text}");
    assert!(text.contains("osprey.app.v1."), "{text}");
    assert!(text.contains("  -> "), "{text}");
    assert_eq!(
        text.lines().filter(|line| line.starts_with('#')).count(),
        1,
        "{text}"
    );
}

fn osprey_bin() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_BIN_EXE_osprey"))
}
