//! The supervisor with real sidecars: a killed app is restarted after its backoff with its tools
//! back in the registry; too many restarts within the hour and it gives up and deregisters.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use osprey_apps::capabilities::Capabilities;
use osprey_apps::hooks::AppHooks;
use osprey_apps::runtime::{self, Launcher};
use osprey_apps::supervisor::{AppState, Supervisor, SupervisorConfig, SupervisorEvent};
use osprey_tools::{Registry, ToolContext};
use osprey_types::Origin;
use serde_json::json;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use fixtures::{Apps, fixture_binary, registry};

fn fast() -> SupervisorConfig {
    SupervisorConfig {
        health_interval: Duration::from_millis(100),
        initial_backoff: Duration::from_millis(200),
        max_backoff: Duration::from_millis(800),
        max_restarts: 5,
        ..SupervisorConfig::default()
    }
}

async fn next_event(
    events: &mut broadcast::Receiver<SupervisorEvent>,
    mut wanted: impl FnMut(&SupervisorEvent) -> bool,
) -> SupervisorEvent {
    let deadline = Duration::from_secs(20);
    tokio::time::timeout(deadline, async {
        loop {
            let event = events.recv().await.expect("supervisor events");
            if wanted(&event) {
                return event;
            }
        }
    })
    .await
    .expect("the event within the deadline")
}

struct Setup {
    apps: Apps,
    registry: Registry,
    supervisor: Supervisor,
    cancel: CancellationToken,
}

fn setup() -> Setup {
    let apps = Apps::new();
    apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"]}),
    );
    let registry = registry(&apps.dir());
    let host = Arc::new(Capabilities::new(registry.clone(), AppHooks::default()));
    let cancel = CancellationToken::new();
    let supervisor = Supervisor::start(
        Launcher::new(apps.dir(), fixtures::quiet()),
        host,
        fast(),
        cancel.clone(),
    );
    Setup {
        apps,
        registry,
        supervisor,
        cancel,
    }
}

async fn convert_works(registry: &Registry) -> bool {
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(5));
    let result = registry
        .execute(
            &ctx,
            "convert",
            json!({"value": 1, "from": "km", "to": "m"}),
        )
        .await;
    !result.is_error
}

fn kill9(pid: u32) {
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_app_is_restarted_after_its_backoff() {
    let setup = setup();
    let mut events = setup.supervisor.subscribe();
    let pid = setup.supervisor.launch("units").await.unwrap();
    assert!(convert_works(&setup.registry).await);

    let killed_at = Instant::now();
    kill9(pid);
    let failed = next_event(&mut events, |e| matches!(e, SupervisorEvent::Failed { .. })).await;
    let SupervisorEvent::Failed { delay, .. } = failed else {
        unreachable!()
    };
    assert_eq!(delay, Duration::from_millis(200));
    let restarted = next_event(&mut events, |e| {
        matches!(e, SupervisorEvent::Restarted { .. })
    })
    .await;
    let SupervisorEvent::Restarted { pid: new_pid, .. } = restarted else {
        unreachable!()
    };
    assert!(
        killed_at.elapsed() >= Duration::from_millis(200),
        "waited the backoff"
    );
    assert_ne!(new_pid, pid);
    assert!(runtime::process_gone(pid));
    assert_eq!(
        setup.supervisor.status().await.unwrap(),
        [("units".to_owned(), AppState::Running { pid: new_pid })]
    );
    assert!(convert_works(&setup.registry).await, "the tool is back");

    setup.supervisor.stop("units").await.unwrap();
    next_event(&mut events, |e| {
        matches!(e, SupervisorEvent::Stopped { .. })
    })
    .await;
    assert!(runtime::process_gone(new_pid));
    assert!(setup.registry.get("convert").is_none());
    assert!(setup.supervisor.status().await.unwrap().is_empty());
    setup.cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_crashes_within_the_hour_and_the_app_is_deregistered() {
    let setup = setup();
    let mut events = setup.supervisor.subscribe();
    let mut pid = setup.supervisor.launch("units").await.unwrap();
    let mut delays = Vec::new();
    for _ in 0..5 {
        kill9(pid);
        if let SupervisorEvent::Failed { delay, .. } =
            next_event(&mut events, |e| matches!(e, SupervisorEvent::Failed { .. })).await
        {
            delays.push(delay.as_millis());
        }
        if let SupervisorEvent::Restarted { pid: new_pid, .. } = next_event(&mut events, |e| {
            matches!(e, SupervisorEvent::Restarted { .. })
        })
        .await
        {
            pid = new_pid;
        }
    }
    assert_eq!(delays, [200, 400, 800, 800, 800], "doubling, capped");
    assert!(convert_works(&setup.registry).await);

    kill9(pid);
    let gave_up = next_event(&mut events, |e| matches!(e, SupervisorEvent::GaveUp { .. })).await;
    assert_eq!(
        gave_up,
        SupervisorEvent::GaveUp {
            id: "units".into(),
            restarts: 5
        }
    );
    assert!(setup.registry.get("convert").is_none(), "deregistered");
    assert_eq!(
        setup.supervisor.status().await.unwrap(),
        [("units".to_owned(), AppState::GaveUp)]
    );
    assert!(runtime::process_gone(pid));
    assert!(!setup.apps.dir().join("units/.pid").exists());
    setup.cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_supervisor_stops_every_app() {
    let setup = setup();
    let mut events = setup.supervisor.subscribe();
    let pid = setup.supervisor.launch("units").await.unwrap();
    setup.cancel.cancel();
    next_event(&mut events, |e| {
        matches!(e, SupervisorEvent::Stopped { .. })
    })
    .await;
    assert!(runtime::process_gone(pid));
    // Refused at once, whether the stopping task is still winding down or gone (a request that
    // reached it while its apps stopped used to wait for ever).
    let refused = tokio::time::timeout(Duration::from_secs(20), setup.supervisor.launch("units"))
        .await
        .expect("a launch after the stop is answered");
    assert_eq!(refused.unwrap_err().reason(), Some("supervisor_stopped"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_handle_refuses_at_once_then_runs_once_started() {
    let apps = Apps::new();
    apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"]}),
    );
    let supervisor = Supervisor::idle();
    assert!(!supervisor.is_running());
    let refused = supervisor.status().await.unwrap_err();
    assert_eq!(refused.reason(), Some("supervisor_stopped"));

    let registry = registry(apps.dir().as_path());
    let host = Arc::new(Capabilities::new(registry.clone(), AppHooks::default()));
    let cancel = CancellationToken::new();
    let clone = supervisor.clone();
    supervisor.run(apps.launcher(), host, fast(), cancel.clone());
    assert!(clone.is_running());
    let pid = clone.launch("units").await.unwrap();
    assert_eq!(
        supervisor.status().await.unwrap(),
        [("units".to_owned(), AppState::Running { pid })]
    );
    assert!(registry.names().contains(&"convert".to_owned()));

    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), supervisor.stopped())
        .await
        .expect("the supervisor stops within 10 s");
    assert!(!supervisor.is_running());
    assert!(runtime::process_gone(pid));
    assert!(!registry.names().contains(&"convert".to_owned()));
}
