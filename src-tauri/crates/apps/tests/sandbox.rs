//! The OS sandbox around a real sidecar (the probe fixture, started through the
//! `osprey-sandbox` launcher): what a hostile app tries is refused by the kernel while its
//! ordinary work goes on, the network follows the manifest's `network:` permission, the launch
//! fails closed without the launcher, and the app list shows what is enforced. Each refusal has a
//! control: the same attempt succeeds with the sandbox turned off, so the tests cannot pass by
//! accident.
#![cfg(target_os = "linux")]

#[path = "support/fixtures.rs"]
mod fixtures;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use osprey_apps::runtime::{LaunchOptions, Launcher, RunningApp};
use osprey_apps::sandbox::{SandboxLevel, SandboxOptions};
use osprey_rpc::v1::tool_service_client::ToolServiceClient;
use osprey_rpc::v1::{ExecuteRequest, content_block};
use serde_json::{Value, json};

use fixtures::{Apps, fixture_binary, quiet};

/// A fake home with a planted private key, and the probe installed with `permissions`.
struct Setup {
    apps: Apps,
    home: PathBuf,
    dir: PathBuf,
}

fn setup(permissions: Value) -> Setup {
    let apps = Apps::new();
    let home = apps.dir().parent().unwrap().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
    let dir = apps.install(
        "probe",
        &fixture_binary("osprey-fixture-probe-app"),
        json!({"provides": ["tool:attempt", "tool:environment"], "permissions": permissions}),
    );
    Setup { apps, home, dir }
}

impl Setup {
    fn options(&self, sandbox: bool) -> LaunchOptions {
        LaunchOptions {
            inherited_env: vec![
                ("PATH".into(), OsString::from("/usr/bin:/bin")),
                ("HOME".into(), self.home.clone().into_os_string()),
            ],
            sandbox: SandboxOptions {
                enabled: sandbox,
                ..SandboxOptions::default()
            },
            ..quiet()
        }
    }

    async fn launch(&self, sandbox: bool) -> RunningApp {
        Launcher::new(self.apps.dir(), self.options(sandbox))
            .launch("probe")
            .await
            .unwrap()
    }
}

/// Runs the probe's `attempt` tool: `Ok(detail)` when the operation worked, `Err(refusal)`.
async fn attempt(app: &RunningApp, input: Value) -> Result<String, String> {
    let response = ToolServiceClient::new(app.channel())
        .execute(ExecuteRequest {
            tool: "attempt".into(),
            input_json: input.to_string(),
            context: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!response.is_error, "{response:?}");
    let Some(content_block::Block::Text(text)) = &response.content[0].block else {
        panic!("{response:?}");
    };
    let outcome: Value = serde_json::from_str(text).unwrap();
    let detail = outcome["detail"].as_str().unwrap().to_owned();
    if outcome["ok"] == true {
        Ok(detail)
    } else {
        Err(detail)
    }
}

fn read(path: &Path) -> Value {
    json!({"action": "read", "path": path})
}

fn write(path: &Path) -> Value {
    json!({"action": "write", "path": path})
}

fn refused(outcome: Result<String, String>, what: &str) -> String {
    match outcome {
        Ok(detail) => panic!("{what} was allowed under the sandbox: {detail}"),
        Err(refusal) => refusal,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_app_cannot_reach_home_its_package_or_other_processes() {
    let setup = setup(json!([]));
    let key = setup.home.join(".ssh/id_rsa");
    let app = setup.launch(true).await;
    let report = app.sandbox().clone();
    assert_eq!(report.level, SandboxLevel::Enforced, "{report:?}");
    assert!(report.filesystem && report.seccomp && report.no_new_privs && report.limits);
    assert!(report.network_blocked);

    // Its ordinary work goes on: data/ and its private tmp/ are writable, its package readable.
    let data_file = setup.dir.join("data/notes.txt");
    assert_eq!(attempt(&app, write(&data_file)).await.unwrap(), "written");
    assert_eq!(
        std::fs::read_to_string(&data_file).unwrap(),
        "written by the probe"
    );
    assert!(
        attempt(&app, write(&setup.dir.join("tmp/scratch")))
            .await
            .is_ok()
    );
    assert!(
        attempt(&app, read(&setup.dir.join("manifest.json")))
            .await
            .is_ok()
    );
    let environment = ToolServiceClient::new(app.channel())
        .execute(ExecuteRequest {
            tool: "environment".into(),
            input_json: "{}".into(),
            context: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!environment.is_error);

    // The planted key, the home directory, and anything outside data/ and tmp/ are out of reach.
    let refusal = refused(attempt(&app, read(&key)).await, "reading ~/.ssh/id_rsa");
    assert!(refusal.contains("Permission denied"), "{refusal}");
    refused(
        attempt(&app, json!({"action": "list", "path": setup.home})).await,
        "listing $HOME",
    );
    refused(
        attempt(&app, write(&setup.home.join("planted"))).await,
        "writing into $HOME",
    );
    refused(
        attempt(&app, write(&setup.dir.join("manifest.json"))).await,
        "rewriting its own manifest",
    );
    refused(
        attempt(&app, write(&setup.apps.dir().join("other-app"))).await,
        "writing into the apps directory",
    );
    refused(
        attempt(&app, read(Path::new("/etc/shadow"))).await,
        "reading /etc/shadow",
    );
    // Other processes: pid 1's environment, and debugging its parent (Osprey).
    refused(
        attempt(&app, read(Path::new("/proc/1/environ"))).await,
        "reading /proc/1/environ",
    );
    let osprey_environment = PathBuf::from(format!("/proc/{}/environ", std::process::id()));
    refused(
        attempt(&app, read(&osprey_environment)).await,
        "reading Osprey's environment",
    );
    let refusal = refused(
        attempt(&app, json!({"action": "ptrace_parent"})).await,
        "ptrace of its parent",
    );
    assert!(refusal.contains("EPERM"), "{refusal}");
    // A Unix socket of the desktop's (a stand-in for the session bus) is out of reach too.
    let bus = setup.apps.dir().parent().unwrap().join("bus.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&bus).unwrap();
    refused(
        attempt(&app, json!({"action": "connect_unix", "path": bus})).await,
        "connecting to a Unix socket outside",
    );
    // Its own /proc entry stays readable (runtimes read /proc/self).
    assert!(
        attempt(&app, read(Path::new("/proc/self/status")))
            .await
            .is_ok()
    );

    assert!(!setup.home.join("planted").exists());
    assert_eq!(
        std::fs::read_to_string(&key).unwrap(),
        "PRIVATE KEY",
        "nothing changed the key"
    );
    app.stop().await;
    assert!(!setup.dir.join(".sandbox.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_the_same_attempts_succeed() {
    // The control for the test above: the probe really tries, and only the sandbox stops it.
    let setup = setup(json!([]));
    let app = setup.launch(false).await;
    assert_eq!(app.sandbox().level, SandboxLevel::Off);
    assert_eq!(
        attempt(&app, read(&setup.home.join(".ssh/id_rsa")))
            .await
            .unwrap(),
        "PRIVATE KEY"
    );
    assert!(
        attempt(&app, write(&setup.home.join("planted")))
            .await
            .is_ok()
    );
    let osprey_environment = PathBuf::from(format!("/proc/{}/environ", std::process::id()));
    assert!(attempt(&app, read(&osprey_environment)).await.is_ok());
    if std::fs::read("/proc/1/environ").is_ok() {
        // Only where the test itself may read it: the app runs as the same user.
        assert!(
            attempt(&app, read(Path::new("/proc/1/environ")))
                .await
                .is_ok()
        );
    }
    let bus = setup.apps.dir().parent().unwrap().join("bus.sock");
    let _bus = std::os::unix::net::UnixListener::bind(&bus).unwrap();
    assert!(
        attempt(&app, json!({"action": "connect_unix", "path": bus}))
            .await
            .is_ok()
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    assert!(
        attempt(&app, json!({"action": "connect", "address": address}))
            .await
            .is_ok()
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_needs_a_network_permission() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let connect = json!({"action": "connect", "address": address});

    let offline = setup(json!([]));
    let app = offline.launch(true).await;
    // socket(AF_INET) itself is refused by the seccomp filter.
    let refusal = refused(attempt(&app, connect.clone()).await, "a TCP connect");
    assert!(refusal.contains("not permitted"), "{refusal}");
    app.stop().await;

    let online = setup(json!(["network:localhost"]));
    let app = online.launch(true).await;
    assert_eq!(app.sandbox().level, SandboxLevel::Enforced);
    assert!(!app.sandbox().network_blocked);
    assert_eq!(attempt(&app, connect).await.unwrap(), "connected");
    // The network does not open the file system.
    refused(
        attempt(&app, read(&online.home.join(".ssh/id_rsa"))).await,
        "reading the key with network",
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kernel_sees_the_filter_and_no_new_privs() {
    // Checked from outside, in /proc, rather than trusting the launcher's report.
    let setup = setup(json!([]));
    let app = setup.launch(true).await;
    let status = std::fs::read_to_string(format!("/proc/{}/status", app.pid())).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|value| value.trim().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(field("NoNewPrivs:"), "1", "{status}");
    assert_eq!(field("Seccomp:"), "2", "filter mode: {status}");
    assert!(field("Seccomp_filters:").parse::<u32>().unwrap() >= 2);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", app.pid())).unwrap();
    let core = limits
        .lines()
        .find(|line| line.starts_with("Max core file size"))
        .unwrap();
    assert!(
        core.split_whitespace().nth(4) == Some("0"),
        "core dumps off: {core}"
    );
    // The app binary itself runs (exec'd by the launcher, same pid), not the launcher.
    assert_eq!(
        std::fs::read_link(format!("/proc/{}/exe", app.pid())).unwrap(),
        std::fs::canonicalize(setup.dir.join("binary")).unwrap()
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_app_is_not_launched_without_the_launcher() {
    let setup = setup(json!([]));
    let mut options = setup.options(true);
    options.sandbox.launcher = Some(setup.apps.dir().join("no-such-launcher"));
    let error = Launcher::new(setup.apps.dir(), options)
        .launch("probe")
        .await
        .unwrap_err();
    assert_eq!(error.reason(), Some("sandbox_unavailable"), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("never run unsandboxed") && message.contains("no-such-launcher"),
        "{message}"
    );
    assert!(!setup.dir.join(".pid").exists(), "nothing was started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sideloaded_app_runs_flagged_without_the_launcher() {
    // Sideloaded = the app directory is a symlink to a developer's project.
    let setup = setup(json!([]));
    let project = setup.apps.dir().parent().unwrap().join("project");
    std::fs::rename(&setup.dir, &project).unwrap();
    std::os::unix::fs::symlink(&project, &setup.dir).unwrap();
    let mut options = setup.options(true);
    options.sandbox.launcher = Some(setup.apps.dir().join("no-such-launcher"));
    let app = Launcher::new(setup.apps.dir(), options)
        .launch("probe")
        .await
        .unwrap();
    let report = app.sandbox();
    assert_eq!(report.level, SandboxLevel::Off);
    assert!(
        report.notes[0].contains("sideloaded apps run without it"),
        "{report:?}"
    );
    app.stop().await;
}

#[test]
fn the_launcher_is_found_beside_the_test_executable() {
    // cargo puts test executables in target/<profile>/deps and binaries one level up.
    let built = osprey_tests::build_sandbox_launcher();
    let found = osprey_apps::sandbox::find_launcher(None).unwrap();
    assert_eq!(
        std::fs::canonicalize(found).unwrap(),
        std::fs::canonicalize(built).unwrap()
    );
}

#[test]
fn a_stale_or_hand_run_launcher_refuses_clearly() {
    let output = std::process::Command::new(osprey_tests::build_sandbox_launcher())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("usage"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sideloaded_app_is_sandboxed_through_its_symlink() {
    // The app directory is a symlink to the project: the rules follow it to the real paths.
    let setup = setup(json!([]));
    let project = setup.apps.dir().parent().unwrap().join("project");
    std::fs::rename(&setup.dir, &project).unwrap();
    std::os::unix::fs::symlink(&project, &setup.dir).unwrap();
    let app = setup.launch(true).await;
    assert_eq!(app.sandbox().level, SandboxLevel::Enforced);
    assert!(
        attempt(&app, write(&setup.dir.join("data/state")))
            .await
            .is_ok()
    );
    assert_eq!(
        std::fs::read_to_string(project.join("data/state")).unwrap(),
        "written by the probe"
    );
    refused(
        attempt(&app, write(&project.join("src.rs"))).await,
        "writing into the project outside data/",
    );
    refused(
        attempt(&app, read(&setup.home.join(".ssh/id_rsa"))).await,
        "reading the key",
    );
    app.stop().await;
}
