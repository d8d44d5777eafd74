//! The app platform's headline figures (issue 3): `apply_filter` with no subscribers, launch to
//! healthy for the fixture tool app (through the OS sandbox and without it), a tool call registry -> gRPC -> app and back against a raw
//! Unix-socket echo, and installing a 20 MB package against `tar xzf` + `sha256sum` of the same
//! file.

use std::hint::black_box;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use osprey_apps::hooks::AppHooks;
use osprey_apps::provided_tools::register_tools;
use osprey_apps::runtime::{LaunchOptions, Launcher};
use osprey_apps::sandbox::{SandboxLevel, SandboxOptions};
use osprey_apps::{Installer, KeyPair, napp};
use osprey_tools::{HookDispatcher, Level, Policy, Registry, RegistryConfig, ToolContext};
use osprey_types::Origin;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn fixture_binary(package: &str) -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let output = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", package, "--message-format=json"])
        .current_dir(&workspace)
        .stderr(Stdio::inherit())
        .output()
        .expect("run cargo build");
    assert!(output.status.success(), "building {package} failed");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == package)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("an executable")
}

fn install_fixture(apps: &Path, id: &str, binary: &Path) {
    let dir = apps.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({"id": id, "name": id, "version": "1.0.0", "provides": ["tool:convert"]});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("SKILL.md"), "# bench\n").unwrap();
    std::fs::copy(binary, dir.join("binary")).unwrap();
    std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn quiet() -> LaunchOptions {
    LaunchOptions {
        echo_logs: false,
        ..LaunchOptions::default()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn hooks_without_subscribers(c: &mut Criterion) {
    let hooks = AppHooks::default();
    let mut group = c.benchmark_group("hooks");
    group.bench_function("has_subscribers_none", |b| {
        b.iter(|| black_box(hooks.has_subscribers(black_box("tool.pre_execute"))))
    });
    group.bench_function("apply_filter_none", |b| {
        b.iter(|| {
            futures::executor::block_on(
                hooks.apply_filter(black_box("tool.pre_execute"), Value::Null),
            )
        })
    });
    group.finish();
}

/// Launch to healthy through the OS sandbox (the default) and without it, for the sandbox's cost.
fn launch_to_healthy(c: &mut Criterion) {
    let binary = fixture_binary("osprey-fixture-unit-converter");
    let root = tempfile::tempdir().unwrap();
    install_fixture(root.path(), "units", &binary);
    let rt = runtime();
    let mut group = c.benchmark_group("apps");
    group.sample_size(20);
    for (name, sandboxed) in [
        ("launch_to_healthy", true),
        ("launch_to_healthy_unsandboxed", false),
    ] {
        let launcher = Launcher::new(
            root.path(),
            LaunchOptions {
                sandbox: SandboxOptions {
                    enabled: sandboxed,
                    launcher: Some(osprey_tests::build_sandbox_launcher()),
                    allow_degraded: false,
                },
                ..quiet()
            },
        );
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        let started = Instant::now();
                        let app = launcher.launch("units").await.unwrap();
                        total += started.elapsed();
                        assert_eq!(
                            app.sandbox().level == SandboxLevel::Enforced,
                            sandboxed,
                            "{:?}",
                            app.sandbox()
                        );
                        app.stop().await;
                    }
                    total
                })
            })
        });
    }
    group.finish();
}

fn tool_call(c: &mut Criterion) {
    let binary = fixture_binary("osprey-fixture-unit-converter");
    let root = tempfile::tempdir().unwrap();
    install_fixture(root.path(), "units", &binary);
    let rt = runtime();
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(Level::Full),
        root.path(),
    ));
    let launcher = Launcher::new(root.path(), quiet());
    let app = rt.block_on(launcher.launch("units")).unwrap();
    rt.block_on(register_tools(
        &registry,
        app.manifest(),
        app.channel(),
        &[],
    ))
    .unwrap();

    // The baseline: a 64-byte request and answer over a raw Unix socket to an echo task.
    let socket = root.path().join("echo.sock");
    let listener = rt.block_on(async { tokio::net::UnixListener::bind(&socket).unwrap() });
    rt.spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 64];
                while stream.read_exact(&mut buffer).await.is_ok() {
                    if stream.write_all(&buffer).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    let mut echo = rt
        .block_on(tokio::net::UnixStream::connect(&socket))
        .unwrap();

    let mut group = c.benchmark_group("apps");
    group.bench_function("tool_call_registry_grpc", |b| {
        b.iter(|| {
            rt.block_on(async {
                let ctx = ToolContext::new(Origin::User, Duration::from_secs(10));
                let result = registry
                    .execute(
                        &ctx,
                        "convert",
                        json!({"value": 3, "from": "km", "to": "mi"}),
                    )
                    .await;
                assert!(!result.is_error);
                black_box(result)
            })
        })
    });
    // The same call straight over gRPC, without the registry's layers; then on a channel without
    // the gRPC inspector's tap (the baseline of what keeping each call for `osprey app inspect`
    // costs).
    let bare = rt
        .block_on(osprey_rpc::connect(
            &app.dir().join(osprey_apps::layout::SOCKET_FILE),
            Duration::from_secs(5),
        ))
        .unwrap();
    for (name, channel) in [
        ("tool_call_grpc_direct", app.channel()),
        (
            "tool_call_grpc_direct_uninspected",
            osprey_rpc::AppChannel::uninspected(bare),
        ),
    ] {
        let mut client = osprey_rpc::v1::tool_service_client::ToolServiceClient::new(channel);
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let response = client
                        .execute(osprey_rpc::v1::ExecuteRequest {
                            tool: "convert".into(),
                            input_json: r#"{"value": 3, "from": "km", "to": "mi"}"#.into(),
                            context: None,
                        })
                        .await
                        .unwrap();
                    black_box(response)
                })
            })
        });
    }
    // The same echo answered by another process (the fixture binary in its echo mode, blocking
    // std I/O): the cheapest round trip with the topology of an app call.
    let process_socket = root.path().join("process-echo.sock");
    let mut echo_process = std::process::Command::new(&binary)
        .env("OSPREY_FIXTURE_ECHO_SOCK", &process_socket)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut process_echo = loop {
        match std::os::unix::net::UnixStream::connect(&process_socket) {
            Ok(stream) => break stream,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Err(error) => panic!("the echo process did not listen: {error}"),
        }
    };
    group.bench_function("unix_socket_echo_process", |b| {
        b.iter(|| {
            use std::io::{Read, Write};
            let mut buffer = [7u8; 64];
            process_echo.write_all(&buffer).unwrap();
            process_echo.read_exact(&mut buffer).unwrap();
            black_box(buffer)
        })
    });
    group.bench_function("unix_socket_echo", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut buffer = [7u8; 64];
                echo.write_all(&buffer).await.unwrap();
                echo.read_exact(&mut buffer).await.unwrap();
                black_box(buffer)
            })
        })
    });
    group.finish();
    drop(process_echo);
    let _ = echo_process.wait();
    rt.block_on(app.stop());
}

fn install_20mb(c: &mut Criterion) {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("binary"),
        osprey_tests::incompressible_elf(20 * 1024 * 1024),
    )
    .unwrap();
    std::fs::set_permissions(
        project.join("binary"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let manifest =
        json!({"id": "big", "name": "Big", "version": "1.0.0", "provides": ["tool:big"]});
    std::fs::write(project.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(project.join("SKILL.md"), "# big\n").unwrap();
    let key = KeyPair::generate().unwrap();
    let unsigned = root.path().join("big.unsigned.napp");
    let package = root.path().join("big.napp");
    napp::pack_to_file(&project, &unsigned).unwrap();
    napp::sign_package(&unsigned, &key, &package).unwrap();
    let public = key.public();

    let mut group = c.benchmark_group("apps");
    group.sample_size(10);
    group.bench_function("install_20mb", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let apps = tempfile::tempdir_in(root.path()).unwrap();
                let started = Instant::now();
                let file = std::fs::File::open(&package).unwrap();
                Installer::new(apps.path())
                    .install(std::io::BufReader::new(file), &public)
                    .unwrap();
                total += started.elapsed();
            }
            total
        })
    });
    group.bench_function("tar_xzf_sha256sum_20mb", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let out = tempfile::tempdir_in(root.path()).unwrap();
                total += osprey_tests::tar_xzf_sha256sum(&package, out.path());
            }
            total
        })
    });
    group.finish();
}

/// What start-up must do before the registry is ready (apps then launch in the background):
/// list 150 installed apps, reading and validating each manifest.
fn list_150_apps(c: &mut Criterion) {
    let root = tempfile::tempdir().unwrap();
    for index in 0..150 {
        let dir = root.path().join(format!("app-{index:03}"));
        std::fs::create_dir(&dir).unwrap();
        let manifest = json!({
            "id": format!("app-{index:03}"), "name": format!("App {index}"), "version": "1.0.0",
            "description": "A benchmark app", "provides": ["tool:convert", "ui"],
            "permissions": ["network:api.example.com", "storage:read"]
        });
        std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    }
    let installer = Installer::new(root.path());
    assert_eq!(installer.list().len(), 150);
    let mut group = c.benchmark_group("apps");
    group.bench_function("list_150_apps", |b| b.iter(|| black_box(installer.list())));
    group.finish();
}

criterion_group!(
    benches,
    list_150_apps,
    hooks_without_subscribers,
    launch_to_healthy,
    tool_call,
    install_20mb
);
criterion_main!(benches);
