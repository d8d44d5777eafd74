//! One start and one stop: `Core::start` claims the data folder with an OS lock before it touches
//! an app, so a second Osprey on the same folder (here a second `Core` in this process, as the
//! desktop's core would be) is refused with the holder named while the first one's app keeps
//! running; what needs no folder (chat with MCP only) still starts; `shutdown` stops the apps and
//! frees the folder for the next Osprey.
#![cfg(unix)]

use std::path::Path;
use std::time::{Duration, Instant};

use osprey_apps::Installer;
use osprey_apps::supervisor::AppState;
use osprey_core::{Core, CoreOptions, FolderInUse, Start};
use osprey_tests::{app_project, fixture_binary};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(60);

fn open(data: &Path) -> Core {
    Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        policy: None,
        ..CoreOptions::default()
    })
    .unwrap()
}

async fn running_pid(core: &Core, id: &str) -> Option<u32> {
    let apps = core.test_apps().supervisor().apps().await.ok()?;
    apps.into_iter().find_map(|app| match app.state {
        AppState::Running { pid } if app.id == id => Some(pid),
        _ => None,
    })
}

async fn wait_for_pid(core: &Core, id: &str) -> u32 {
    let started = Instant::now();
    loop {
        if let Some(pid) = running_pid(core, id).await {
            return pid;
        }
        assert!(started.elapsed() < DEADLINE, "{id} never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn alive(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_osprey_on_a_held_folder_is_refused_and_the_first_keeps_its_apps() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let project = root.path().join("units");
    app_project(
        &project,
        &json!({"id": "units", "name": "Units", "version": "1.0.0",
                "provides": ["tool:convert"]}),
        &fixture_binary("osprey-fixture-unit-converter"),
    );
    std::fs::create_dir_all(data.join("apps")).unwrap();
    Installer::new(data.join("apps"))
        .sideload(&project)
        .unwrap();

    let first = open(&data);
    let services = first.start(Start::all("the first Osprey")).await.unwrap();
    assert_eq!(services.started(), Start::all("the first Osprey"));
    let pid = wait_for_pid(&first, "units").await;

    // The second Osprey: refused before it touches the apps, naming this process.
    let second = open(&data);
    let error = second
        .start(Start::all("the second Osprey"))
        .await
        .unwrap_err();
    let in_use = error
        .downcast_ref::<FolderInUse>()
        .unwrap_or_else(|| panic!("not FolderInUse: {error:#}"));
    assert_eq!(in_use.folder, data);
    assert_eq!(
        in_use.holder,
        format!("the first Osprey (pid {})", std::process::id())
    );
    let message = error.to_string();
    assert!(
        message.contains(&in_use.holder) && message.contains("--data-dir"),
        "{message}"
    );
    // `osprey chat --app` wants the apps too: refused the same way.
    assert!(
        second
            .start(Start::chat(true))
            .await
            .unwrap_err()
            .is::<FolderInUse>()
    );
    // The first one's app was not touched: same process, still running, still supervised.
    assert!(alive(pid));
    assert_eq!(running_pid(&first, "units").await, Some(pid));
    assert!(running_pid(&second, "units").await.is_none());

    // Chat without apps needs no claim on the folder.
    let chat = second.start(Start::chat(false)).await.unwrap();
    assert!(!chat.started().apps && chat.started().mcp);
    chat.shutdown().await;

    // Shutdown stops the app and frees the folder: now the second one starts it.
    services.shutdown().await;
    let started = Instant::now();
    while alive(pid) {
        assert!(started.elapsed() < DEADLINE, "the app outlived shutdown");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let next = second.start(Start::all("the second Osprey")).await.unwrap();
    let new_pid = wait_for_pid(&second, "units").await;
    assert_ne!(new_pid, pid);
    next.shutdown().await;
}

#[test]
fn the_lock_is_an_os_lock_released_with_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let held = osprey_core::services::FolderLock::claim(dir.path(), "a test").unwrap();
    let refused = osprey_core::services::FolderLock::claim(dir.path(), "another test").unwrap_err();
    assert!(refused.is::<FolderInUse>(), "{refused:#}");
    // The lock file names the holder while held, and is empty once released.
    let written =
        std::fs::read_to_string(dir.path().join(osprey_core::services::LOCK_FILE)).unwrap();
    assert_eq!(written, format!("a test (pid {})\n", std::process::id()));
    drop(held);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(osprey_core::services::LOCK_FILE)).unwrap(),
        ""
    );
    let again = osprey_core::services::FolderLock::claim(dir.path(), "a test").unwrap();
    drop(again);
}
