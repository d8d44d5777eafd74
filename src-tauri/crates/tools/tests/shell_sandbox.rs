//! Shell commands in the kernel's sandbox, for real: under a throwaway home with a planted SSH
//! key, the kernel refuses reading the key, reading Osprey's data, writing outside the
//! workspace, and reaching into another process (`/proc/<pid>/mem` of Osprey itself, `ptrace`,
//! a signal); a setuid program gains nothing (`no_new_privs`) and a seccomp filter is on;
//! everyday work (files in the workspace, `git commit`, `cargo build` of a small crate,
//! `npm install` offline) still works. Through the registry, `sandbox: false` is asked every
//! time, even under `full`.
#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use osprey_tools::shell::{ShellConfig, ShellSandbox, ShellTool};
use osprey_tools::{
    DomainTool, FixedApprover, Level, Policy, Registry, RegistryConfig, ToolContext,
};
use osprey_types::{ApprovalAnswer, Origin, ToolResult};
use serde_json::{Value, json};

struct World {
    _root: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
    data: PathBuf,
}

fn world() -> World {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let workspace = home.join("project");
    let data = home.join(".local/share/osprey");
    for dir in [
        &workspace,
        &data,
        &home.join(".ssh"),
        &home.join(".cargo/bin"),
        &home.join(".cargo/registry"),
    ] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "PLANTED-PRIVATE-KEY").unwrap();
    std::fs::write(data.join("secrets.json"), "PLANTED-API-KEY").unwrap();
    std::fs::write(home.join("notes.txt"), "ordinary notes").unwrap();
    World {
        home,
        workspace,
        data,
        _root: root,
    }
}

fn env(world: &World) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vec![
        (
            "PATH".into(),
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        ),
        ("HOME".into(), world.home.clone().into_os_string()),
    ];
    // The real toolchain, read only; cargo's own home is a cache in the throwaway home.
    let real_home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
    let rustup = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".rustup"));
    env.push(("RUSTUP_HOME".into(), rustup.into_os_string()));
    env.push((
        "CARGO_HOME".into(),
        world.home.join(".cargo").into_os_string(),
    ));
    env
}

fn tool(world: &World) -> ShellTool {
    osprey_tests::build_sandbox_launcher();
    ShellTool::new(ShellConfig {
        parent_env: Some(env(world)),
        default_cwd: Some(world.workspace.clone()),
        extra_env: vec!["RUSTUP_HOME".into(), "CARGO_HOME".into()],
        sandbox: ShellSandbox {
            hidden: vec![world.data.clone()],
            ..ShellSandbox::default()
        },
        ..ShellConfig::default()
    })
}

async fn run(tool: &ShellTool, input: Value) -> ToolResult {
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(300));
    let call = tool.domain().resolve(input).expect("input fits the table");
    tool.run(&ctx, call).await
}

async fn sh(tool: &ShellTool, command: &str) -> String {
    run(
        tool,
        json!({"action": "exec", "command": command, "yield_ms": 0, "timeout": 240}),
    )
    .await
    .text_content()
}

#[tokio::test]
async fn the_kernel_keeps_credentials_data_and_the_rest_of_the_disk_out_of_reach() {
    let world = world();
    let tool = tool(&world);

    let key = sh(&tool, "cat ~/.ssh/id_rsa").await;
    assert!(!key.contains("PLANTED-PRIVATE-KEY"), "{key}");
    assert!(key.contains("Permission denied"), "{key}");
    assert!(key.contains("[sandbox:"), "no explanation: {key}");
    // Through a glob, a link or a copy: the same.
    let sneaky = sh(
        &tool,
        "cat ~/.ss?/id_* ; ln -s ~/.ssh keys && cat keys/id_rsa ; cp -r ~/.ssh stolen",
    )
    .await;
    assert!(!sneaky.contains("PLANTED-PRIVATE-KEY"), "{sneaky}");
    assert!(!world.workspace.join("stolen/id_rsa").exists());
    let data = sh(&tool, "cat ~/.local/share/osprey/secrets.json").await;
    assert!(!data.contains("PLANTED-API-KEY"), "{data}");

    // Writes: outside the workspace refused, inside fine; the home's other files readable.
    let outside = sh(&tool, "echo owned >> ~/.bashrc; echo x > ~/outside.txt").await;
    assert!(outside.contains("Permission denied"), "{outside}");
    assert!(!world.home.join(".bashrc").exists());
    assert!(!world.home.join("outside.txt").exists());
    let inside = sh(&tool, "echo built > out.txt && cat out.txt ~/notes.txt").await;
    assert!(
        inside.contains("built") && inside.contains("ordinary notes"),
        "{inside}"
    );
    assert_eq!(
        std::fs::read_to_string(world.workspace.join("out.txt")).unwrap(),
        "built\n"
    );
    // A tool cache is writable, but not the program folder and startup file inside it, which
    // run outside any sandbox later (~/.cargo/bin is on many people's PATH; ~/.cargo/env is
    // sourced at login).
    std::fs::write(
        world.home.join(".cargo/env"),
        "export PATH=\"$HOME/.cargo/bin:$PATH\"\n",
    )
    .unwrap();
    let cache = sh(
        &tool,
        "echo cached > ~/.cargo/registry/index && cat ~/.cargo/registry/index; \
         echo evil > ~/.cargo/bin/git; echo evil >> ~/.cargo/env; cat ~/.cargo/env",
    )
    .await;
    assert!(cache.contains("cached"), "{cache}");
    assert!(cache.contains("Permission denied"), "{cache}");
    assert!(
        cache.contains("export PATH"),
        "the startup file stays readable: {cache}"
    );
    assert!(!world.home.join(".cargo/bin/git").exists());
    assert!(
        !std::fs::read_to_string(world.home.join(".cargo/env"))
            .unwrap()
            .contains("evil")
    );

    // A private temp dir is its TMPDIR.
    let tmp = sh(&tool, "f=$(mktemp) && echo ok > \"$f\" && cat \"$f\"").await;
    assert!(tmp.contains("ok\n"), "{tmp}");

    // No privilege gain and a system-call filter; this (the parent) process is out of reach.
    let status = sh(&tool, "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status").await;
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    assert!(status.contains("Seccomp:\t2"), "{status}");
    // Osprey's memory is out of reach (landlock's ptrace rule). Its environment block in
    // /proc is not: docs/security.md says so, and keys never live there (keyring or the hidden
    // secrets file).
    let me = std::process::id();
    let probe = sh(&tool, &format!("head -c1 /proc/{me}/mem; echo done")).await;
    assert!(probe.contains("Permission denied"), "{probe}");
    // No new namespaces (util-linux's `unshare` is on every Debian system): refused by seccomp,
    // not by a missing program.
    let namespaces = sh(&tool, "unshare -r true && echo escaped").await;
    assert!(!namespaces.contains("escaped"), "{namespaces}");
    assert!(
        namespaces.contains("Operation not permitted"),
        "{namespaces}"
    );
}

#[tokio::test]
async fn everyday_developer_work_runs_inside_the_sandbox() {
    let world = world();
    let tool = tool(&world);
    let git = sh(
        &tool,
        "git init -q repo && cd repo && echo hi > a.txt && git add a.txt && \
         git -c user.name=T -c user.email=t@example.com commit -qm first && git log --oneline",
    )
    .await;
    assert!(
        git.contains("first") && git.contains("exit code 0"),
        "{git}"
    );

    let cargo = sh(
        &tool,
        "cargo new -q --vcs none hello && cd hello && cargo build -q --offline && \
         ./target/debug/hello",
    )
    .await;
    assert!(
        cargo.contains("Hello, world!") && cargo.contains("exit code 0"),
        "{cargo}"
    );

    // npm: pack a local package, install it offline (npm's cache under ~/.npm is one of the
    // tool caches the sandbox lets commands write), and load it with node.
    let npm = sh(
        &tool,
        "mkdir pkg && cd pkg && \
         printf '{\"name\":\"osprey-local-pkg\",\"version\":\"1.0.0\",\"main\":\"index.js\"}' > package.json && \
         echo 'module.exports = \"loaded from the local package\";' > index.js && \
         npm pack --silent && cd .. && mkdir app && cd app && npm init -y > /dev/null && \
         npm install --offline --no-audit --no-fund ../pkg/osprey-local-pkg-1.0.0.tgz && \
         node -e 'console.log(require(\"osprey-local-pkg\"))'",
    )
    .await;
    assert!(
        npm.contains("loaded from the local package") && npm.contains("exit code 0"),
        "{npm}"
    );
    // ~/.npm did not exist: it was made (owner-only) because npm is installed.
    assert!(world.home.join(".npm/_cacache").is_dir(), "{npm}");
    assert!(
        !world.home.join(".m2").exists() || which("mvn"),
        "no maven, no ~/.m2"
    );
}

/// What a compromised command would try against privileges and other processes, refused by the
/// kernel: a setuid program does not change who runs it (`no_new_privs`), `ptrace` is refused
/// (seccomp), and a signal to a process outside the command's own tree is refused (landlock's
/// signal scope), while signals within its tree still work.
#[tokio::test]
async fn privileges_ptrace_and_foreign_signals_are_refused_by_the_kernel() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let world = world();
    let tool = tool(&world);

    // A process outside the command: the target of ptrace and of a signal.
    let mut outsider = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let pid = outsider.id();
    let seize = sh(
        &tool,
        &format!(
            "python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); \
             r = libc.ptrace(0x4206, {pid}, 0, 0); \
             print(\"ptrace\", r, os.strerror(ctypes.get_errno()))'"
        ),
    )
    .await;
    assert!(
        seize.contains("ptrace -1 Operation not permitted"),
        "PTRACE_SEIZE of another process: {seize}"
    );
    let signal = sh(&tool, &format!("kill -TERM {pid} && echo delivered")).await;
    assert!(!signal.contains("delivered"), "{signal}");
    assert!(signal.contains("Operation not permitted"), "{signal}");
    assert!(
        outsider.try_wait().unwrap().is_none(),
        "the outside process was killed from the sandbox"
    );
    outsider.kill().unwrap();
    outsider.wait().unwrap();
    let own = sh(
        &tool,
        "sleep 30 & kill -TERM $! ; wait $! ; echo \"own child: $?\"",
    )
    .await;
    assert!(own.contains("own child: 143"), "{own}");

    // A setuid program owned by another user: outside the sandbox it runs as its owner, inside
    // as the caller. Making one needs root (CI runs as root).
    let me = std::fs::metadata("/proc/self").unwrap().uid();
    if me != 0 {
        eprintln!("skipped the setuid part: making a setuid file of another user needs root");
        return;
    }
    let setuid_id = world.home.join("setuid-id");
    std::fs::copy("/usr/bin/id", &setuid_id).unwrap();
    std::os::unix::fs::chown(&setuid_id, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&setuid_id, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let outside = std::process::Command::new(&setuid_id)
        .arg("-u")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&outside.stdout).trim(),
        "65534",
        "the setuid bit works on this file system outside the sandbox"
    );
    let inside = sh(&tool, &format!("{} -u", setuid_id.display())).await;
    assert!(inside.starts_with(&format!("{me}\n")), "{inside}");
}

fn which(program: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|dir| dir.join(program).is_file())
}

fn registry(level: Level, data: &Path) -> Registry {
    Registry::new(RegistryConfig::new(Policy::at_level(level), data))
}

#[tokio::test]
async fn outside_the_sandbox_is_asked_every_time_even_under_full() {
    let world = world();
    let registry = registry(Level::Full, &world.data);
    registry.register_domain(tool(&world));
    let inside = json!({"action": "exec", "command": "echo inside", "yield_ms": 0});
    let outside = json!({"action": "exec", "command": "cat ~/.ssh/id_rsa", "yield_ms": 0,
                         "sandbox": false, "reason": "read the deploy key"});

    // Full lets a sandboxed command run unasked; the same level asks for the one outside.
    let unasked = ToolContext::new(Origin::User, Duration::from_secs(60));
    let r = registry.execute(&unasked, "shell", inside).await;
    assert!(r.text_content().contains("inside"), "{}", r.text_content());
    let r = registry.execute(&unasked, "shell", outside.clone()).await;
    assert!(r.is_error, "ran unasked: {}", r.text_content());
    assert!(
        r.text_content().contains("outside Osprey's sandbox")
            && r.text_content().contains("read the deploy key"),
        "{}",
        r.text_content()
    );

    // "Always this session" is not remembered for it: the next call is asked again.
    let always = Arc::new(FixedApprover::new(ApprovalAnswer::AlwaysThisSession));
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(60))
        .with_approver(always.clone())
        .with_session("s1");
    let r = registry.execute(&ctx, "shell", outside.clone()).await;
    assert!(
        r.text_content().contains("PLANTED-PRIVATE-KEY"),
        "approved, it runs outside: {}",
        r.text_content()
    );
    let r = registry.execute(&ctx, "shell", outside).await;
    assert!(!r.is_error, "{}", r.text_content());
    assert_eq!(always.count(), 2, "the second call was not asked");
}

#[tokio::test]
async fn a_denied_path_is_hidden_by_the_kernel_even_when_the_command_builds_it_at_run_time() {
    let world = world();
    std::fs::create_dir_all(world.home.join("private")).unwrap();
    std::fs::write(world.home.join("private/diary.txt"), "PLANTED-DIARY").unwrap();
    std::fs::write(world.home.join("keys.pem"), "PLANTED-PEM").unwrap();
    let governance = osprey_tools::Governance::in_memory(Some(world.home.clone()));
    governance
        .set_config(osprey_tools::GovernanceConfig {
            denied_paths: vec!["~/private".into(), "~/*.pem".into()],
            ..Default::default()
        })
        .unwrap();
    osprey_tests::build_sandbox_launcher();
    let tool = ShellTool::new(ShellConfig {
        parent_env: Some(env(&world)),
        default_cwd: Some(world.workspace.clone()),
        sandbox: ShellSandbox {
            hidden: vec![world.data.clone()],
            denied: governance.denied_paths(),
            ..ShellSandbox::default()
        },
        ..ShellConfig::default()
    });
    // The path is put together when the command runs, where no parser can see it.
    let built = sh(&tool, "d=pri; cat ~/${d}vate/diary.txt; ls ~/${d}vate").await;
    assert!(!built.contains("PLANTED-DIARY"), "{built}");
    assert!(built.contains("Permission denied"), "{built}");
    // A pattern is not a path the kernel can hide: it is refused where a call names it (the
    // registry's safeguard step), so here, with no registry, the file is still readable.
    let pattern = sh(&tool, "cat ~/keys.pem").await;
    assert!(pattern.contains("PLANTED-PEM"), "{pattern}");
    // A change applies to the next command.
    governance
        .set_config(osprey_tools::GovernanceConfig::default())
        .unwrap();
    let lifted = sh(&tool, "cat ~/private/diary.txt").await;
    assert!(lifted.contains("PLANTED-DIARY"), "{lifted}");
}
