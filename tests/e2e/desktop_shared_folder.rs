//! Two Ospreys on one data folder, as a person gets them by opening the desktop app while
//! `osprey daemon` runs: the daemon keeps the folder and its running app (same process, still
//! alive), and the desktop window says which process holds the folder instead of touching the
//! apps. Linux only (tauri-driver drives WebKitGTK).
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use osprey_tests::daemon::{start_daemon, wait_for_line};
use osprey_tests::{DesktopApp, LaunchOptions, app_project, cli_binary, fixture_binary};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(60);

/// The app's process while its supervisor has it running.
fn app_pid(data: &Path, id: &str) -> Option<i32> {
    std::fs::read_to_string(data.join("apps").join(id).join(".pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

#[test]
fn the_desktop_on_a_folder_the_daemon_holds_names_the_daemon_and_leaves_its_apps() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-shared-")
        .tempdir()?;
    let project = tempfile::Builder::new()
        .prefix("osprey-e2e-project-")
        .tempdir()?;
    app_project(
        project.path(),
        &json!({"id": "units", "name": "Units", "version": "1.0.0",
                "provides": ["tool:convert"]}),
        &fixture_binary("osprey-fixture-unit-converter"),
    );
    std::fs::create_dir_all(data.path().join("apps"))?;
    osprey_apps::Installer::new(data.path().join("apps"))
        .sideload(project.path())
        .context("sideloading the fixture")?;

    let (daemon, lines) = start_daemon(&cli_binary(), data.path());
    wait_for_line(&lines, "osprey daemon: ready");
    let deadline = Instant::now() + DEADLINE;
    let pid = loop {
        if let Some(pid) = app_pid(data.path(), "units").filter(|pid| alive(*pid)) {
            break pid;
        }
        if Instant::now() > deadline {
            bail!("the daemon never ran the app");
        }
        std::thread::sleep(Duration::from_millis(50));
    };

    let app = DesktopApp::launch_with(
        "desktop_shared_folder",
        LaunchOptions {
            data_dir: Some(data.path().to_path_buf()),
            env: vec![("OSPREY_SECRETS".into(), "file".into())],
        },
    )?;
    let holder = format!("osprey daemon (pid {})", daemon.0.id());
    let banner = app
        .driver
        .wait_for_text("[data-testid='background-error']", DEADLINE, |text| {
            text.contains(&holder)
        })
        .context("the window never said who holds the folder")?;
    app.save_screenshot("folder-in-use")?;
    ensure!(banner.contains("--data-dir"), "the banner reads {banner:?}");
    // The daemon's app was left alone: the same process runs, under the daemon.
    ensure!(alive(pid), "the daemon's app died when the desktop opened");
    ensure!(
        app_pid(data.path(), "units") == Some(pid),
        "the app was restarted"
    );
    drop(app);
    ensure!(alive(pid), "the daemon's app died when the desktop closed");
    drop(daemon);
    Ok(())
}
