//! The `exec` tool for real, through the registry, in the kernel sandbox under a throwaway home
//! with a planted SSH key: arguments reach the program literally (no shell), stdin and the
//! environment are passed, a denied variable is refused, the safeguard judges the argv (and
//! what a shell in it would run), a timeout stops the program and what it started, and the
//! sandbox keeps writes inside the workspace.
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use osprey_tools::shell::{ShellConfig, ShellSandbox};
use osprey_tools::{
    ExecTool, FixedApprover, Level, PathGuard, Policy, Registry, RegistryConfig, Safeguard,
    ToolContext,
};
use osprey_types::{ApprovalAnswer, ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};

struct World {
    _root: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
    registry: Registry,
    approver: Arc<FixedApprover>,
}

fn world() -> World {
    osprey_tests::build_sandbox_launcher();
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let workspace = home.join("project");
    let data = home.join(".local/share/osprey");
    for dir in [&workspace, &data, &home.join(".ssh")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "PLANTED-PRIVATE-KEY").unwrap();
    let registry = Registry::new(RegistryConfig {
        safeguard: Safeguard::new(PathGuard::new(Some(home.clone()), data.clone())),
        ..RegistryConfig::new(Policy::at_level(Level::Allowlist), data.clone())
    });
    let approver = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    registry.set_approver(Some(approver.clone()));
    registry.register_domain(ExecTool::new(ShellConfig {
        parent_env: Some(vec![
            (
                "PATH".into(),
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            ),
            ("HOME".into(), home.clone().into_os_string()),
            ("LD_PRELOAD".into(), "/tmp/evil.so".into()),
        ]),
        default_cwd: Some(workspace.clone()),
        sandbox: ShellSandbox {
            workspaces: vec![workspace.clone()],
            hidden: vec![data],
            ..ShellSandbox::default()
        },
        ..ShellConfig::default()
    }));
    World {
        _root: root,
        home,
        workspace,
        registry,
        approver,
    }
}

async fn exec(world: &World, input: Value) -> ToolResult {
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(60));
    world.registry.execute(&ctx, "exec", input).await
}

#[tokio::test]
async fn arguments_with_shell_metacharacters_reach_the_program_literally() {
    let world = world();
    let words = ["a;b", "$(id)", "*", "x|y", "'q'", "> out.txt", "$HOME"];
    let mut args = vec!["[%s]\n"];
    args.extend(words);
    let r = exec(&world, json!({"program": "printf", "args": args})).await;
    assert!(!r.is_error, "{r:?}");
    let text = r.text_content();
    for word in words {
        assert!(
            text.contains(&format!("[{word}]")),
            "{word} not literal: {text}"
        );
    }
    assert!(text.contains("exit code 0"), "{text}");
    assert!(
        !world.workspace.join("out.txt").exists(),
        "no redirection happened"
    );
    // stdin text and the environment: the variable asked for, the sanitised rest.
    let r = exec(
        &world,
        json!({"program": "sh", "args": ["-c", "cat; echo \"[$GREETING][$LD_PRELOAD]\""],
               "stdin": "from stdin\n", "env": {"GREETING": "hi there"}}),
    )
    .await;
    assert!(r.text_content().contains("from stdin"), "{r:?}");
    assert!(r.text_content().contains("[hi there][]"), "{r:?}");
    let denied = exec(
        &world,
        json!({"program": "true", "env": {"LD_PRELOAD": "/tmp/evil.so"}}),
    )
    .await;
    assert_eq!(denied.code, Some(ErrorCode::InvalidInput), "{denied:?}");
    assert!(denied.text_content().contains("never passed"), "{denied:?}");
}

#[tokio::test]
async fn the_safeguard_judges_the_argv_before_anyone_is_asked() {
    let world = world();
    let refused = [
        json!({"program": "cat", "args": ["~/.ssh/id_rsa"]}),
        json!({"program": "cat", "args": [world.home.join(".ssh/id_rsa").display().to_string()]}),
        json!({"program": "rm", "args": ["-rf", "~"]}),
        json!({"program": "rm", "args": ["-rf", world.home.display().to_string()]}),
        json!({"program": "bash", "args": ["-c", "rm -rf ~"]}),
        json!({"program": "bash", "stdin": "rm -rf /\n"}),
        json!({"program": "/usr/bin/sudo", "args": ["ls"]}),
    ];
    for input in refused {
        let r = exec(&world, input.clone()).await;
        assert!(
            matches!(
                r.code,
                Some(ErrorCode::SafeguardBlocked | ErrorCode::SensitivePath)
            ),
            "{input}: {r:?}"
        );
        assert!(!r.text_content().contains("PLANTED"), "{r:?}");
    }
    assert_eq!(
        world.approver.count(),
        0,
        "nobody was asked about a refused call"
    );
    assert!(world.home.join(".ssh/id_rsa").exists());
}

#[tokio::test]
async fn a_timeout_stops_the_program_and_what_it_started() {
    let world = world();
    let started = Instant::now();
    let r = exec(
        &world,
        json!({"program": "sh", "args": ["-c", "sleep 30 & echo started; sleep 30"], "timeout_ms": 400}),
    )
    .await;
    assert_eq!(r.code, Some(ErrorCode::Timeout), "{r:?}");
    let text = r.text_content();
    assert!(
        text.contains("started") && text.contains("the 400 ms timeout"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn it_runs_in_the_sandbox_writing_only_in_the_workspace() {
    let world = world();
    let inside = exec(&world, json!({"program": "touch", "args": ["made.txt"]})).await;
    assert!(!inside.is_error, "{inside:?}");
    assert!(world.workspace.join("made.txt").exists());
    let target = world.home.join("outside.txt");
    let outside = exec(
        &world,
        json!({"program": "touch", "args": [target.display().to_string()]}),
    )
    .await;
    let text = outside.text_content();
    assert!(text.contains("Permission denied"), "{text}");
    assert!(text.contains("[sandbox:"), "{text}");
    assert!(!target.exists());
}
