//! Concurrent launches through the supervisor with real (sandboxed) sidecars: slow-starting apps
//! start side by side, each shows as `launching` meanwhile, a hanging app holds up no other, and
//! the launch slots bound how many start at once.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::sync::Arc;
use std::time::{Duration, Instant};

use osprey_apps::capabilities::Capabilities;
use osprey_apps::hooks::AppHooks;
use osprey_apps::supervisor::{AppState, Supervisor, SupervisorConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use fixtures::{Apps, fixture_binary, registry, until};

/// How long each slow app waits before binding its socket.
const SLOW_START: Duration = Duration::from_millis(1500);

fn supervisor(apps: &Apps, launch_slots: usize) -> (Supervisor, CancellationToken) {
    let host = Arc::new(Capabilities::new(
        registry(&apps.dir()),
        AppHooks::default(),
    ));
    let cancel = CancellationToken::new();
    let config = SupervisorConfig {
        max_concurrent_launches: launch_slots,
        ..SupervisorConfig::default()
    };
    let supervisor = Supervisor::start(apps.launcher(), host, config, cancel.clone());
    (supervisor, cancel)
}

/// Installs probe apps `slow-0..n` that each take [`SLOW_START`] to bind.
fn install_slow(apps: &Apps, count: usize) -> Vec<String> {
    (0..count)
        .map(|index| {
            let id = format!("slow-{index}");
            let dir = apps.install(
                &id,
                &fixture_binary("osprey-fixture-probe-app"),
                json!({"provides": ["tool:environment"]}),
            );
            std::fs::create_dir(dir.join("data")).unwrap();
            std::fs::write(
                dir.join("data/slow-start"),
                SLOW_START.as_millis().to_string(),
            )
            .unwrap();
            id
        })
        .collect()
}

/// Launches `ids` at once through the supervisor; returns the wall time until all are healthy.
async fn launch_all(supervisor: &Supervisor, ids: &[String]) -> Duration {
    let started = Instant::now();
    let launches = ids.iter().map(|id| supervisor.launch(id));
    for (id, result) in ids.iter().zip(futures::future::join_all(launches).await) {
        result.unwrap_or_else(|e| panic!("{id}: {e}"));
    }
    started.elapsed()
}

async fn states(supervisor: &Supervisor) -> Vec<(String, AppState)> {
    supervisor.status().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_slow_apps_take_about_as_long_as_one() {
    let apps = Apps::new();
    let ids = install_slow(&apps, 7);
    let (supervisor, cancel) = supervisor(&apps, 8);

    let one = launch_all(&supervisor, &ids[..1]).await;
    assert!(one >= SLOW_START, "the fixture really is slow: {one:?}");

    let many = &ids[1..];
    let watcher = supervisor.clone();
    let launches = tokio::spawn({
        let many = many.to_vec();
        let supervisor = supervisor.clone();
        async move { launch_all(&supervisor, &many).await }
    });
    // All six are visibly launching at the same time.
    let deadline = Instant::now() + SLOW_START;
    loop {
        let launching = states(&watcher)
            .await
            .iter()
            .filter(|(_, state)| *state == AppState::Launching)
            .count();
        if launching == many.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never saw all six launching together (last: {launching})"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let six = launches.await.unwrap();
    assert!(
        six < one * 2,
        "six slow launches took {six:?}, one took {one:?}: they did not overlap"
    );
    let running = states(&supervisor)
        .await
        .iter()
        .filter(|(_, state)| matches!(state, AppState::Running { .. }))
        .count();
    assert_eq!(running, 7);
    println!(
        "launch wall time: one slow app {one:?}, six at once {six:?} (ratio {:.2})",
        six.as_secs_f64() / one.as_secs_f64()
    );
    cancel.cancel();
    supervisor.stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_app_holds_up_no_other_launch() {
    let apps = Apps::new();
    let hung = apps.install(
        "hung",
        &fixture_binary("osprey-fixture-probe-app"),
        json!({"provides": ["tool:environment"], "startup_timeout": 5}),
    );
    std::fs::create_dir(hung.join("data")).unwrap();
    std::fs::write(hung.join("data/no-bind"), "").unwrap();
    apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"]}),
    );
    let (supervisor, cancel) = supervisor(&apps, 8);

    let hanging = tokio::spawn({
        let supervisor = supervisor.clone();
        async move { supervisor.launch("hung").await }
    });
    until(
        "the hung app to be launching",
        Duration::from_secs(5),
        || hung.join(".pid").exists(),
    )
    .await;
    let started = Instant::now();
    supervisor.launch("units").await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "units waited for the hung app: {:?}",
        started.elapsed()
    );
    let now = states(&supervisor).await;
    assert!(
        now.contains(&("hung".to_owned(), AppState::Launching)),
        "{now:?}"
    );
    assert!(matches!(
        now.iter().find(|(id, _)| id == "units"),
        Some((_, AppState::Running { .. }))
    ));

    let error = hanging.await.unwrap().unwrap_err();
    assert_eq!(error.reason(), Some("startup_timeout"), "{error}");
    // A first launch that failed leaves nothing supervised behind.
    let after = states(&supervisor).await;
    assert!(!after.iter().any(|(id, _)| id == "hung"), "{after:?}");
    cancel.cancel();
    supervisor.stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launch_slots_bound_how_many_start_at_once() {
    let apps = Apps::new();
    let ids = install_slow(&apps, 4);
    let (supervisor, cancel) = supervisor(&apps, 2);

    let launches = tokio::spawn({
        let ids = ids.clone();
        let supervisor = supervisor.clone();
        async move { launch_all(&supervisor, &ids).await }
    });
    // Two in their slots; the other two wait, still shown as launching (no pid file yet).
    until("two apps started", Duration::from_secs(10), || {
        ids.iter()
            .filter(|id| apps.dir().join(id).join(".pid").exists())
            .count()
            == 2
    })
    .await;
    let waiting = ids
        .iter()
        .filter(|id| !apps.dir().join(id).join(".pid").exists())
        .count();
    assert_eq!(waiting, 2, "only two slots");
    let all = launches.await.unwrap();
    assert!(
        all >= SLOW_START * 2,
        "four slow apps in two slots need two rounds: {all:?}"
    );
    cancel.cancel();
    supervisor.stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launching_one_app_twice_at_once_starts_it_once() {
    let apps = Apps::new();
    let ids = install_slow(&apps, 1);
    let (supervisor, cancel) = supervisor(&apps, 8);
    let (first, second) = tokio::join!(supervisor.launch(&ids[0]), supervisor.launch(&ids[0]));
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(
        first, second,
        "the second launch found the first one's process"
    );
    assert_eq!(
        states(&supervisor).await,
        [(ids[0].clone(), AppState::Running { pid: first })]
    );
    // Stopped while nothing else waits: gone from the status, and launchable again.
    supervisor.stop(&ids[0]).await.unwrap();
    assert!(states(&supervisor).await.is_empty());
    let again = supervisor.launch(&ids[0]).await.unwrap();
    assert_ne!(again, first);
    cancel.cancel();
    supervisor.stopped().await;
}
