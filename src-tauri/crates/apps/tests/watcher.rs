//! The apps-directory watcher with a real supervisor and real sidecars: a rebuilt binary restarts
//! the app once, a new app directory is launched, a removed one is stopped.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_apps::capabilities::CapabilityHost;
use osprey_apps::runtime::{self, Launcher, RunningApp};
use osprey_apps::supervisor::{Supervisor, SupervisorConfig, SupervisorEvent};
use osprey_apps::watcher;
use serde_json::json;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use fixtures::{Apps, fixture_binary};

const DEBOUNCE: Duration = Duration::from_millis(300);

/// Capabilities are not what these tests are about.
struct NoCapabilities;

impl CapabilityHost for NoCapabilities {
    fn attach<'a>(&'a self, _app: &'a RunningApp) -> BoxFuture<'a, osprey_apps::Result<()>> {
        Box::pin(async { Ok(()) })
    }
    fn detach(&self, _app_id: &str) {}
}

async fn next_event(
    events: &mut broadcast::Receiver<SupervisorEvent>,
    within: Duration,
) -> Option<SupervisorEvent> {
    tokio::time::timeout(within, events.recv())
        .await
        .ok()
        .map(|e| e.unwrap())
}

struct Setup {
    apps: Apps,
    supervisor: Supervisor,
    events: broadcast::Receiver<SupervisorEvent>,
    cancel: CancellationToken,
    _watcher: watcher::AppWatcher,
}

fn setup() -> Setup {
    let apps = Apps::new();
    let cancel = CancellationToken::new();
    let supervisor = Supervisor::start(
        Launcher::new(apps.dir(), fixtures::quiet()),
        Arc::new(NoCapabilities),
        SupervisorConfig::default(),
        cancel.clone(),
    );
    let events = supervisor.subscribe();
    let watcher =
        watcher::watch(&apps.dir(), supervisor.clone(), DEBOUNCE, cancel.clone()).unwrap();
    Setup {
        apps,
        supervisor,
        events,
        cancel,
        _watcher: watcher,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuilt_binary_restarts_the_app_once() {
    let mut setup = setup();
    let dir = setup.apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"]}),
    );
    // The install itself is seen by the watcher: the app is launched.
    let launched = next_event(&mut setup.events, Duration::from_secs(20)).await;
    let Some(SupervisorEvent::Launched { pid, .. }) = launched else {
        panic!("expected a launch, got {launched:?}");
    };
    assert!(
        next_event(&mut setup.events, DEBOUNCE * 3).await.is_none(),
        "launched once"
    );

    // A rebuild: the old file is replaced by a new one, written in several steps.
    let binary = dir.join("binary");
    std::fs::remove_file(&binary).unwrap();
    std::fs::copy(fixture_binary("osprey-fixture-unit-converter"), &binary).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();

    let restarted = next_event(&mut setup.events, Duration::from_secs(20)).await;
    let Some(SupervisorEvent::Restarted { pid: new_pid, .. }) = restarted else {
        panic!("expected a restart, got {restarted:?}");
    };
    assert_ne!(new_pid, pid);
    assert!(runtime::process_gone(pid));
    assert!(
        next_event(&mut setup.events, DEBOUNCE * 3).await.is_none(),
        "the burst of writes restarted it once"
    );

    // A reload right after a restart is suppressed (the restart's own doing).
    assert_eq!(
        setup
            .supervisor
            .reload("units", Some(Duration::from_secs(60)))
            .await
            .unwrap(),
        osprey_apps::supervisor::Reload::Suppressed
    );

    // The directory goes away: the app is stopped.
    std::fs::remove_dir_all(&dir).unwrap();
    let stopped = next_event(&mut setup.events, Duration::from_secs(20)).await;
    assert_eq!(
        stopped,
        Some(SupervisorEvent::Stopped { id: "units".into() })
    );
    assert!(runtime::process_gone(new_pid));
    setup.cancel.cancel();
}
