//! Launching real sidecar processes (the fixture apps under tests/fixtures, built with the SDK)
//! from an apps directory, and stopping them: environment, process group, socket, logs, and every
//! way a launch can fail.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use osprey_apps::runtime::{self, LaunchOptions, Launcher};
use osprey_rpc::v1::tool_service_client::ToolServiceClient;
use osprey_rpc::v1::{ExecuteRequest, content_block};
use serde_json::{Value, json};

use fixtures::{Apps, fixture_binary, quiet, until};

async fn call(
    app: &runtime::RunningApp,
    tool: &str,
    input: Value,
) -> Result<String, tonic::Status> {
    let response = ToolServiceClient::new(app.channel())
        .execute(ExecuteRequest {
            tool: tool.into(),
            input_json: input.to_string(),
            context: None,
        })
        .await?
        .into_inner();
    assert!(!response.is_error, "{response:?}");
    match &response.content[0].block {
        Some(content_block::Block::Text(text)) => Ok(text.clone()),
        other => panic!("{other:?}"),
    }
}

/// Pids of processes whose executable is `binary` (Linux /proc).
fn processes_running(binary: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == binary)
                && !runtime::process_gone(*pid)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_app_launches_healthy_serves_and_stops_cleanly() {
    let apps = Apps::new();
    let dir = apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"]}),
    );
    let launcher = apps.launcher();
    let app = launcher.launch("units").await.unwrap();
    let pid = app.pid();

    let socket = dir.join("app.sock");
    let meta = std::fs::symlink_metadata(&socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::read_to_string(dir.join(".pid")).unwrap().trim(),
        pid.to_string()
    );
    let group = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid as i32))).unwrap();
    assert_eq!(
        group.as_raw() as u32,
        pid,
        "the app leads its own process group"
    );
    assert!(dir.join("data").is_dir() && dir.join("logs").is_dir());

    app.health().await.unwrap();
    let answer = call(
        &app,
        "convert",
        json!({"value": 1, "from": "kg", "to": "g"}),
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&answer).unwrap()["value"],
        1000.0
    );

    // A second launch of a running app is refused, and leaves the running one alone.
    let error = launcher.launch("units").await.unwrap_err();
    assert_eq!(error.reason(), Some("already_running"), "{error}");
    app.health().await.unwrap();

    let report = app.stop().await;
    assert!(!report.killed, "exited on SIGTERM");
    assert!(report.status.unwrap().success());
    assert!(runtime::process_gone(pid));
    assert!(!socket.exists() && !dir.join(".pid").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_sanitized_and_output_is_logged() {
    let apps = Apps::new();
    let dir = apps.install(
        "probe",
        &fixture_binary("osprey-fixture-probe-app"),
        json!({"provides": ["tool:environment"]}),
    );
    let options = LaunchOptions {
        inherited_env: vec![
            ("PATH".into(), OsString::from("/usr/bin:/bin")),
            ("LANG".into(), OsString::from("C.UTF-8")),
            ("TZ".into(), OsString::from("UTC")),
        ],
        ..quiet()
    };
    let app = Launcher::new(apps.dir(), options)
        .launch("probe")
        .await
        .unwrap();
    let report: Value =
        serde_json::from_str(&call(&app, "environment", json!({})).await.unwrap()).unwrap();
    let env: BTreeMap<String, String> = serde_json::from_value(report["env"].clone()).unwrap();
    let expected: BTreeMap<String, String> = [
        ("OSPREY_APP_DIR", dir.display().to_string()),
        (
            "OSPREY_APP_SOCK",
            dir.join("app.sock").display().to_string(),
        ),
        ("OSPREY_APP_ID", "probe".into()),
        ("OSPREY_APP_NAME", "Fixture probe".into()),
        ("OSPREY_APP_VERSION", "0.3.0".into()),
        ("OSPREY_APP_DATA", dir.join("data").display().to_string()),
        ("PATH", "/usr/bin:/bin".into()),
        // Always the app's private tmp/ (the only writable place besides data/).
        ("TMPDIR", dir.join("tmp").display().to_string()),
        ("LANG", "C.UTF-8".into()),
        ("TZ", "UTC".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(
        env, expected,
        "nothing else of the test's environment leaks"
    );
    assert_eq!(report["cwd"], dir.display().to_string());
    assert_eq!(report["pid"], app.pid());
    app.stop().await;

    let stdout = std::fs::read_to_string(dir.join("logs/stdout.log")).unwrap();
    assert!(stdout.contains("probe: starting as pid"), "{stdout}");
    let stderr = std::fs::read_to_string(dir.join("logs/stderr.log")).unwrap();
    assert!(stderr.contains("probe: environment requested"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_environment_passes_only_the_allowlist() {
    let apps = Apps::new();
    apps.install(
        "probe",
        &fixture_binary("osprey-fixture-probe-app"),
        json!({"provides": ["tool:environment"]}),
    );
    let app = apps.launcher().launch("probe").await.unwrap();
    let report: Value =
        serde_json::from_str(&call(&app, "environment", json!({})).await.unwrap()).unwrap();
    for name in report["env"].as_object().unwrap().keys() {
        assert!(
            name.starts_with("OSPREY_APP_") || runtime::INHERITED_ENV.contains(&name.as_str()),
            "{name} leaked into the app"
        );
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_seen_and_the_app_still_stops_cleanly() {
    let apps = Apps::new();
    let dir = apps.install(
        "probe",
        &fixture_binary("osprey-fixture-probe-app"),
        json!({"provides": ["tool:crash"]}),
    );
    let mut app = apps.launcher().launch("probe").await.unwrap();
    let pid = app.pid();
    let status = ToolServiceClient::new(app.channel())
        .execute(ExecuteRequest {
            tool: "crash".into(),
            input_json: "{}".into(),
            context: None,
        })
        .await
        .unwrap_err();
    // The connection breaks mid-call: a transport failure, never an answer.
    assert!(
        matches!(
            status.code(),
            tonic::Code::Unavailable | tonic::Code::Unknown
        ),
        "{status}"
    );
    let exited = app
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("exited");
    assert_eq!(exited.unwrap().code(), Some(70));
    let error = app.health().await.unwrap_err();
    assert_eq!(error.reason(), Some("exited"));
    let report = app.stop().await;
    assert!(!report.killed);
    assert!(runtime::process_gone(pid));
    assert!(!dir.join(".pid").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_ignoring_sigterm_is_killed_after_the_grace_with_its_children() {
    let apps = Apps::new();
    apps.install(
        "stubborn",
        &fixture_binary("osprey-fixture-stubborn-app"),
        json!({"provides": ["tool:spawn_child"]}),
    );
    let app = apps.launcher().launch("stubborn").await.unwrap();
    let pid = app.pid();
    let child: Value =
        serde_json::from_str(&call(&app, "spawn_child", json!({})).await.unwrap()).unwrap();
    let child = u32::try_from(child["pid"].as_u64().unwrap()).unwrap();
    assert!(!runtime::process_gone(child));

    let started = Instant::now();
    let report = app.stop().await;
    let elapsed = started.elapsed();
    assert!(report.killed, "SIGTERM was ignored, so it took SIGKILL");
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(5),
        "stopped after {elapsed:?}"
    );
    assert!(runtime::process_gone(pid));
    until("the app's child to go", Duration::from_secs(5), || {
        runtime::process_gone(child)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_never_appears_fails_at_the_startup_timeout() {
    let apps = Apps::new();
    let binary = fixture_binary("osprey-fixture-probe-app");
    let dir = apps.install(
        "probe",
        &binary,
        json!({"provides": ["tool:environment"], "startup_timeout": 1}),
    );
    std::fs::create_dir(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/no-bind"), "").unwrap();
    let started = Instant::now();
    let error = apps.launcher().launch("probe").await.unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(error.reason(), Some("startup_timeout"), "{error}");
    assert!(error.to_string().contains("told not to bind"), "{error}");
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
    assert!(processes_running(&dir.join("binary")).is_empty());
    assert!(!dir.join(".pid").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_that_exits_at_once_fails_with_its_status() {
    let apps = Apps::new();
    apps.install("quitter", Path::new("/bin/false"), json!({}));
    let error = apps.launcher().launch("quitter").await.unwrap_err();
    assert_eq!(error.code(), "launch_failed");
    assert_eq!(error.reason(), Some("exited"), "{error}");
    assert!(error.to_string().contains("exit status: 1"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_sockets_are_replaced_but_other_files_are_not() {
    let apps = Apps::new();
    let dir = apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"]}),
    );
    drop(std::os::unix::net::UnixListener::bind(dir.join("app.sock")).unwrap());
    let app = apps.launcher().launch("units").await.unwrap();
    app.stop().await;

    std::fs::write(dir.join("app.sock"), "not a socket").unwrap();
    let error = apps.launcher().launch("units").await.unwrap_err();
    assert_eq!(error.reason(), Some("socket_path_occupied"));
    assert_eq!(
        std::fs::read_to_string(dir.join("app.sock")).unwrap(),
        "not a socket"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_is_validated_before_every_launch() {
    let apps = Apps::new();
    let dir = apps.install("scripted", Path::new("/bin/false"), json!({}));
    std::fs::write(dir.join("binary"), "#!/bin/sh\nexec sleep 600\n").unwrap();
    let error = apps.launcher().launch("scripted").await.unwrap_err();
    assert_eq!(error.code(), "binary_invalid");
    assert_eq!(error.reason(), Some("binary_is_script"));

    std::fs::remove_file(dir.join("binary")).unwrap();
    std::os::unix::fs::symlink("/bin/false", dir.join("binary")).unwrap();
    let error = apps.launcher().launch("scripted").await.unwrap_err();
    assert_eq!(error.reason(), Some("binary_not_regular_file"));
}

/// The unit-converter app launched and then left running, as a crashed Osprey leaves it: its
/// folder and pid.
async fn orphaned_units(apps: &Apps) -> (PathBuf, u32) {
    let dir = apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"]}),
    );
    let app = apps.launcher().launch("units").await.unwrap();
    let pid = app.pid();
    std::mem::forget(app);
    (dir, pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_of_a_previous_run_are_killed_on_start() {
    let apps = Apps::new();
    // Osprey "crashes": nothing stops the app, its pid file stays.
    let (dir, pid) = orphaned_units(&apps).await;
    assert!(!runtime::process_gone(pid));

    assert_eq!(runtime::kill_orphans(&apps.dir()), ["units"]);
    until("the orphan to die", Duration::from_secs(5), || {
        runtime::process_gone(pid)
    })
    .await;
    assert!(!dir.join(".pid").exists() && !dir.join("app.sock").exists());
    // A pid file naming some other process is cleared without killing it.
    std::fs::write(dir.join(".pid"), format!("{}\n", std::process::id())).unwrap();
    assert!(runtime::kill_orphans(&apps.dir()).is_empty());
    assert!(!dir.join(".pid").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_whose_pid_file_was_lost_are_found_by_a_process_scan() {
    let apps = Apps::new();
    // Osprey crashes and the pid file is gone with it.
    let (dir, pid) = orphaned_units(&apps).await;
    std::fs::remove_file(dir.join(".pid")).unwrap();
    // Bystanders: a process naming another folder's app socket, and one naming none (a
    // developer running a binary by hand).
    let other = tempfile::tempdir().unwrap();
    let mut elsewhere = std::process::Command::new("sleep")
        .arg("300")
        .env("OSPREY_APP_SOCK", other.path().join("apps/units/app.sock"))
        .spawn()
        .unwrap();
    let mut by_hand = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();

    assert_eq!(runtime::kill_orphans(&apps.dir()), ["units"]);
    until("the orphan to die", Duration::from_secs(5), || {
        runtime::process_gone(pid)
    })
    .await;
    assert!(
        elsewhere.try_wait().unwrap().is_none(),
        "another folder's app was killed"
    );
    assert!(
        by_hand.try_wait().unwrap().is_none(),
        "a bystander was killed"
    );
    for mut child in [elsewhere, by_hand] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
