//! The `shell` tool end to end, with real processes: process-group kills on timeout,
//! cancellation and drop; the environment allowlist; background sessions; the output cap;
//! process list/info/kill. Every wait polls a condition against a deadline.
#![cfg(unix)]

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use osprey_tools::shell::{ShellConfig, ShellSandbox, ShellTool};
use osprey_tools::{DomainTool, ToolContext};
use osprey_types::{ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(15);

fn base_env() -> Vec<(OsString, OsString)> {
    let mut env = vec![(
        OsString::from("PATH"),
        std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
    )];
    if let Some(home) = std::env::var_os("HOME") {
        env.push(("HOME".into(), home));
    }
    env
}

/// Commands run in the kernel sandbox as they do for people; these tests' scratch folders are
/// under the temp dir, which is their workspace.
fn config() -> ShellConfig {
    osprey_tests::build_sandbox_launcher();
    ShellConfig {
        parent_env: Some(base_env()),
        kill_grace: Duration::from_millis(500),
        sandbox: ShellSandbox {
            workspaces: vec![std::env::temp_dir()],
            ..ShellSandbox::default()
        },
        ..Default::default()
    }
}

fn ctx() -> ToolContext {
    ToolContext::new(Origin::User, Duration::from_secs(120))
}

async fn run(tool: &ShellTool, ctx: &ToolContext, input: Value) -> ToolResult {
    let call = tool.domain().resolve(input).expect("input fits the table");
    tool.run(ctx, call).await
}

fn ok(result: &ToolResult) -> String {
    assert!(
        !result.is_error,
        "unexpected error: {}",
        result.text_content()
    );
    result.text_content()
}

/// Alive and not a zombie (an orphan reparented to an init that does not reap stays a
/// zombie, which is as dead as it gets).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for a pid file the command writes, and returns the pid.
async fn pid_from(path: &Path) -> i32 {
    let mut pid = None;
    eventually(&format!("pid file {}", path.display()), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        pid.is_some()
    })
    .await;
    pid.unwrap()
}

/// A command that starts a process tree: a background grandchild, a nested shell with its
/// own background child, and a foreground sleep.
fn tree_command(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "sleep 300 & echo $! > {d}/grandchild.tmp && mv {d}/grandchild.tmp {d}/grandchild; \
         bash -c 'sleep 300 & echo $! > {d}/nested.tmp && mv {d}/nested.tmp {d}/nested; wait' & \
         sleep 300"
    )
}

fn session_id(text: &str) -> String {
    let start = text.find("session_id: \"").expect("a session id") + "session_id: \"".len();
    let end = text[start..].find('"').unwrap();
    text[start..start + end].to_string()
}

// ---------------------------------------------------------------- process groups

#[tokio::test]
async fn timeout_kills_the_whole_tree_including_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let tool = ShellTool::new(config());
    let started = Instant::now();
    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": tree_command(dir.path()), "timeout": 1}),
    )
    .await;
    assert_eq!(r.code, Some(ErrorCode::Timeout), "{}", r.text_content());
    assert!(
        r.text_content().contains("timed out"),
        "{}",
        r.text_content()
    );
    assert!(r.text_content().contains("the 1 s timeout"));
    assert!(started.elapsed() < Duration::from_secs(10));
    let grandchild = pid_from(&dir.path().join("grandchild")).await;
    let nested = pid_from(&dir.path().join("nested")).await;
    eventually("grandchild gone", || !alive(grandchild)).await;
    eventually("nested grandchild gone", || !alive(nested)).await;
}

#[tokio::test]
async fn the_calls_deadline_also_stops_the_command() {
    let tool = ShellTool::new(config());
    let ctx = ToolContext::new(Origin::User, Duration::from_millis(1500));
    let r = run(
        &tool,
        &ctx,
        json!({"action": "exec", "command": "sleep 300"}),
    )
    .await;
    assert_eq!(r.code, Some(ErrorCode::Timeout), "{}", r.text_content());
    assert!(r.text_content().contains("the call's deadline"));
}

#[tokio::test]
async fn cancellation_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let tool = ShellTool::new(config());
    let ctx = ctx();
    let command = tree_command(dir.path());
    let pid_file = dir.path().join("grandchild");
    let nested_file = dir.path().join("nested");
    let (result, (grandchild, nested)) = tokio::join!(
        run(&tool, &ctx, json!({"action": "exec", "command": command})),
        async {
            let pids = (pid_from(&pid_file).await, pid_from(&nested_file).await);
            ctx.cancel.cancel();
            pids
        }
    );
    assert_eq!(
        result.code,
        Some(ErrorCode::Cancelled),
        "{}",
        result.text_content()
    );
    assert!(result.text_content().contains("cancelled"));
    eventually("grandchild gone", || !alive(grandchild)).await;
    eventually("nested grandchild gone", || !alive(nested)).await;
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let tool = ShellTool::new(config());
    let ctx = ctx();
    let command = tree_command(dir.path());
    let pid_file = dir.path().join("grandchild");
    let grandchild = tokio::select! {
        r = run(&tool, &ctx, json!({"action": "exec", "command": command})) => {
            panic!("the command should still be running: {}", r.text_content())
        }
        pid = pid_from(&pid_file) => pid,
    };
    // The exec future is gone now; its guard stopped the group.
    eventually("grandchild gone after drop", || !alive(grandchild)).await;
}

// ---------------------------------------------------------------- environment

fn dangerous_env(dir: &Path) -> Vec<(String, String)> {
    let evil = dir.join("evil.sh");
    std::fs::write(&evil, "echo EVIL_SOURCED\n").unwrap();
    let evil = evil.display().to_string();
    vec![
        (
            "LD_PRELOAD".into(),
            "/nonexistent/osprey-test-preload.so".into(),
        ),
        ("LD_LIBRARY_PATH".into(), "/nonexistent".into()),
        ("BASH_ENV".into(), evil.clone()),
        ("ENV".into(), evil),
        ("BASH_FUNC_x%%".into(), "() {  echo PWNED\n}".into()),
        ("NODE_OPTIONS".into(), "--require /nonexistent/x.js".into()),
        ("PYTHONPATH".into(), "/nonexistent".into()),
        ("PROMPT_COMMAND".into(), "echo PWNED".into()),
        ("IFS".into(), "x".into()),
        ("CDPATH".into(), "/".into()),
        ("SHELLOPTS".into(), "xtrace".into()),
        ("PERL5OPT".into(), "-Mstrict".into()),
        ("GIT_SSH_COMMAND".into(), "touch /tmp/pwned".into()),
        ("DYLD_INSERT_LIBRARIES".into(), "/x.dylib".into()),
        ("OSPREY_TEST_SECRET".into(), "hunter2".into()),
        ("OSPREY_TEST_WANTED".into(), "yes".into()),
        ("LC_ALL".into(), "C".into()),
    ]
}

const NEVER: &[&str] = &[
    "LD_PRELOAD=",
    "LD_LIBRARY_PATH=",
    "BASH_ENV=",
    "ENV=",
    "BASH_FUNC_",
    "NODE_OPTIONS=",
    "PYTHONPATH=",
    "PROMPT_COMMAND=",
    "IFS=",
    "CDPATH=",
    "SHELLOPTS=",
    "PERL5OPT=",
    "GIT_SSH_COMMAND=",
    "DYLD_INSERT_LIBRARIES=",
    "OSPREY_TEST_SECRET",
    "hunter2",
    "EVIL_SOURCED",
    "PWNED",
];

fn check_scrubbed(output: &str) {
    for needle in NEVER {
        let found = output.lines().any(|line| {
            line.starts_with(needle) || (!needle.ends_with('=') && line.contains(needle))
        });
        assert!(!found, "`{needle}` reached the child:\n{output}");
    }
    assert!(output.contains("OSPREY_TEST_WANTED=yes"), "{output}");
    assert!(output.contains("LC_ALL=C"), "{output}");
    assert!(output.contains("PATH="), "{output}");
    assert!(output.contains("x: not found"), "{output}");
}

const ENV_PROBE: &str = "env; type x 2>&1 | sed 's/.*x: not found/x: not found/'; true";

#[tokio::test]
async fn the_child_environment_is_an_allowlist_with_a_hard_denylist() {
    let dir = tempfile::tempdir().unwrap();
    let mut parent = base_env();
    parent.extend(
        dangerous_env(dir.path())
            .into_iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    let tool = ShellTool::new(ShellConfig {
        parent_env: Some(parent),
        // Configuring dangerous names does not let them through.
        extra_env: vec![
            "OSPREY_TEST_WANTED".into(),
            "LD_PRELOAD".into(),
            "BASH_ENV".into(),
            "NODE_OPTIONS".into(),
            "BASH_FUNC_*".into(),
        ],
        ..config()
    });
    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": ENV_PROBE}),
    )
    .await;
    check_scrubbed(&ok(&r));
}

/// The production path (reading the real process environment) checked in a child copy of
/// this test binary whose environment carries the dangerous variables; setting them on a
/// `Command` needs no `unsafe` `set_var`.
#[test]
fn the_real_process_environment_is_scrubbed_too() {
    if std::env::var_os("OSPREY_SHELL_ENV_PROBE").is_some() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let tool = ShellTool::new(ShellConfig {
            extra_env: vec!["OSPREY_TEST_WANTED".into(), "LD_PRELOAD".into()],
            ..ShellConfig::default()
        });
        let r = runtime.block_on(run(
            &tool,
            &ctx(),
            json!({"action": "exec", "command": ENV_PROBE}),
        ));
        check_scrubbed(&ok(&r));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "the_real_process_environment_is_scrubbed_too",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("OSPREY_SHELL_ENV_PROBE", "1")
        .envs(dangerous_env(dir.path()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "probe failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the probe did not run:\n{stdout}"
    );
}

// ---------------------------------------------------------------- foreground results

#[tokio::test]
async fn output_is_interleaved_in_order_with_the_exit_code() {
    let tool = ShellTool::new(config());
    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": "echo out; echo err >&2; echo out2; exit 3"}),
    )
    .await;
    let text = ok(&r);
    assert!(
        text.starts_with("out\nerr\nout2\n[exit code 3 after"),
        "{text}"
    );

    // stdin is empty in the foreground: `cat` ends at once instead of hanging.
    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": "cat; echo done"}),
    )
    .await;
    assert!(
        ok(&r).starts_with("done\n[exit code 0"),
        "{}",
        r.text_content()
    );

    // Absurd limits are clamped, not overflowed.
    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": "echo big", "timeout": u64::MAX, "yield_ms": u64::MAX}),
    )
    .await;
    assert!(
        ok(&r).starts_with("big\n[exit code 0"),
        "{}",
        r.text_content()
    );

    let r = run(&tool, &ctx(), json!({"action": "exec", "command": "true"})).await;
    assert!(
        ok(&r).starts_with("(no output)\n[exit code 0"),
        "{}",
        r.text_content()
    );

    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": "kill -9 $$"}),
    )
    .await;
    assert!(
        ok(&r).contains("killed by signal SIGKILL"),
        "{}",
        r.text_content()
    );
}

#[tokio::test]
async fn commands_run_in_the_requested_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let tool = ShellTool::new(ShellConfig {
        default_cwd: Some(dir.path().to_path_buf()),
        ..config()
    });
    let r = run(&tool, &ctx(), json!({"action": "exec", "command": "pwd"})).await;
    assert!(ok(&r).starts_with(&dir.path().display().to_string()));
    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": "pwd", "cwd": "sub"}),
    )
    .await;
    assert!(ok(&r).starts_with(&dir.path().join("sub").display().to_string()));
    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": "pwd", "cwd": "missing"}),
    )
    .await;
    assert!(r.is_error && r.text_content().contains("does not exist"));
}

#[tokio::test]
async fn big_output_keeps_head_and_tail_with_a_note() {
    let tool = ShellTool::new(config());
    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": "seq 1 200000"}),
    )
    .await;
    let text = ok(&r);
    assert!(text.starts_with("1\n2\n3\n"), "{}", &text[..20]);
    assert!(
        text.contains("200000\n[exit code 0"),
        "{}",
        &text[text.len() - 100..]
    );
    assert!(text.contains(" of output omitted ...]"), "no note");
    assert!(text.len() < 50 * 1024 + 300, "{} bytes", text.len());
    // seq 1 200000 prints 1,288,895 bytes; about 51 KB of it is shown.
    assert!(
        text.contains("[... 1.2 MB of output omitted ...]"),
        "wrong size in note"
    );
}

// ---------------------------------------------------------------- sessions

#[tokio::test]
async fn background_sessions_start_take_input_poll_log_and_die() {
    let tool = ShellTool::new(config());
    let c = ctx();
    let r = run(
        &tool,
        &c,
        json!({
            "action": "exec",
            "command": "echo ready; while read line; do echo \"got: $line\"; done; echo bye",
            "background": true,
        }),
    )
    .await;
    let text = ok(&r);
    assert!(
        text.contains("started in the background as session"),
        "{text}"
    );
    let id = session_id(&text);

    let r = run(
        &tool,
        &c,
        json!({"action": "write", "session_id": id, "input": "hello\n"}),
    )
    .await;
    assert!(ok(&r).contains("wrote 6 bytes"), "{}", r.text_content());

    // Poll (each waiting up to a second for news) until the reply shows up.
    let mut seen = String::new();
    let deadline = Instant::now() + PATIENCE;
    while !seen.contains("got: hello") {
        assert!(Instant::now() < deadline, "no reply; saw: {seen}");
        let r = run(
            &tool,
            &c,
            json!({"action": "poll", "session_id": id, "yield_ms": 1000}),
        )
        .await;
        seen.push_str(&ok(&r));
    }
    assert!(seen.contains("ready"), "{seen}");
    assert!(
        seen.contains(&format!("[session {id} running for")),
        "{seen}"
    );

    // A second poll only shows what is new.
    let r = run(&tool, &c, json!({"action": "poll", "session_id": id})).await;
    assert!(
        ok(&r).starts_with("(no new output)"),
        "{}",
        r.text_content()
    );

    let r = run(&tool, &c, json!({"resource": "session", "action": "list"})).await;
    let text = ok(&r);
    assert!(text.contains(&id) && text.contains("running for"), "{text}");

    let r = run(
        &tool,
        &c,
        json!({"action": "log", "session_id": id, "limit": u64::MAX}),
    )
    .await;
    let text = ok(&r);
    assert!(
        text.contains("     1\tready\n     2\tgot: hello\n"),
        "{text}"
    );

    // Close stdin: the loop ends and the session finishes on its own.
    let r = run(
        &tool,
        &c,
        json!({"action": "write", "session_id": id, "input": "last\n", "eof": true}),
    )
    .await;
    assert!(ok(&r).contains("closed its stdin"));
    let mut seen = String::new();
    let deadline = Instant::now() + PATIENCE;
    while !seen.contains("finished: exit code 0") {
        assert!(Instant::now() < deadline, "did not finish; saw: {seen}");
        let r = run(
            &tool,
            &c,
            json!({"action": "poll", "session_id": id, "yield_ms": 1000}),
        )
        .await;
        seen.push_str(&ok(&r));
    }
    // Polls return as soon as anything is new, so the lines may come in several pieces.
    let output: String = seen
        .lines()
        .filter(|l| !l.starts_with("[session") && !l.starts_with("(no new output)"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(output, "got: last\nbye\n", "{seen}");

    // A session that runs until killed; kill stops its whole group.
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        &tool,
        &c,
        json!({"action": "exec", "command": tree_command(dir.path()), "background": true}),
    )
    .await;
    let second = session_id(&ok(&r));
    let grandchild = pid_from(&dir.path().join("grandchild")).await;
    let r = run(&tool, &c, json!({"action": "kill", "session_id": second})).await;
    assert!(ok(&r).contains("stopped session"), "{}", r.text_content());
    eventually("session grandchild gone", || !alive(grandchild)).await;
    let r = run(&tool, &c, json!({"action": "poll", "session_id": second})).await;
    assert!(
        ok(&r).contains("finished: killed by signal SIGTERM"),
        "{}",
        r.text_content()
    );

    let r = run(&tool, &c, json!({"resource": "session", "action": "list"})).await;
    let text = ok(&r);
    assert!(text.contains(&id) && text.contains(&second), "{text}");
    let r = run(
        &tool,
        &c,
        json!({"action": "write", "session_id": second, "input": "x"}),
    )
    .await;
    assert!(r.is_error && r.text_content().contains("has ended"));

    let r = run(&tool, &c, json!({"action": "poll", "session_id": "sh-999"})).await;
    assert!(r.is_error, "{}", r.text_content());
    assert!(r.text_content().contains(&id), "{}", r.text_content());
}

#[tokio::test]
async fn foreground_commands_yield_by_default_and_yield_ms_0_waits_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let tool = ShellTool::new(ShellConfig {
        default_yield: Duration::from_millis(300),
        ..config()
    });
    let command = format!(
        "echo start; while [ ! -e {} ]; do sleep 0.05; done; echo end",
        gate.display()
    );
    let r = run(&tool, &ctx(), json!({"action": "exec", "command": command})).await;
    let text = ok(&r);
    assert!(text.contains("still running after"), "{text}");

    // With yield_ms 0 the call waits: the gate opens from another task while it runs.
    let opener = tokio::spawn({
        let gate = gate.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(600)).await;
            std::fs::write(&gate, "").unwrap();
        }
    });
    std::fs::remove_file(&gate).ok();
    let r = run(
        &tool,
        &ctx(),
        json!({"action": "exec", "command": command, "yield_ms": 0}),
    )
    .await;
    let text = ok(&r);
    assert!(text.contains("start\nend\n"), "{text}");
    assert!(!text.contains("still running"), "{text}");
    opener.await.unwrap();
}

#[tokio::test]
async fn a_slow_foreground_command_yields_into_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let tool = ShellTool::new(config());
    let c = ctx();
    // It waits for a file the test creates, so "still running at yield time" is certain.
    let command = format!(
        "echo start; while [ ! -e {} ]; do sleep 0.05; done; echo end",
        gate.display()
    );
    let r = run(
        &tool,
        &c,
        json!({"action": "exec", "command": command, "yield_ms": 300}),
    )
    .await;
    let text = ok(&r);
    assert!(text.starts_with("start\n"), "{text}");
    assert!(text.contains("still running after"), "{text}");
    let id = session_id(&text);
    std::fs::write(&gate, "").unwrap();
    let mut seen = String::new();
    let deadline = Instant::now() + PATIENCE;
    while !seen.contains("finished: exit code 0") {
        assert!(Instant::now() < deadline, "did not finish; saw: {seen}");
        let r = run(
            &tool,
            &c,
            json!({"action": "poll", "session_id": id, "yield_ms": 1000}),
        )
        .await;
        seen.push_str(&ok(&r));
    }
    assert!(seen.contains("end\n"), "{seen}");
    assert!(
        !seen.contains("start"),
        "poll repeats what exec showed: {seen}"
    );
    // A yielded foreground command has no stdin to write to.
    let r = run(
        &tool,
        &c,
        json!({"action": "write", "session_id": id, "input": "x"}),
    )
    .await;
    assert!(r.is_error);
}

#[tokio::test]
async fn finished_sessions_are_swept_after_their_ttl() {
    let tool = ShellTool::new(ShellConfig {
        session_ttl: Duration::ZERO,
        ..config()
    });
    let c = ctx();
    let r = run(
        &tool,
        &c,
        json!({"action": "exec", "command": "echo hi", "background": true}),
    )
    .await;
    let id = session_id(&ok(&r));
    let deadline = Instant::now() + PATIENCE;
    loop {
        let r = run(&tool, &c, json!({"resource": "session", "action": "list"})).await;
        if !ok(&r).contains(&id) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never swept: {}",
            r.text_content()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = run(&tool, &c, json!({"action": "poll", "session_id": id})).await;
    assert!(r.is_error && r.text_content().contains("no session"));
}

// ---------------------------------------------------------------- processes

#[tokio::test]
async fn process_list_and_info_include_osprey_itself() {
    let tool = ShellTool::new(config());
    let own = std::process::id();
    let r = run(
        &tool,
        &ctx(),
        json!({"resource": "process", "action": "list"}),
    )
    .await;
    let text = ok(&r);
    assert!(text.starts_with("PID\tPPID\tNAME\tCOMMAND\n"));
    let rows = text.lines().filter(|l| l.contains('\t')).count() - 1;
    assert!(rows <= 50, "the default list is 50 rows, got {rows}");
    let r = run(
        &tool,
        &ctx(),
        json!({"resource": "process", "action": "list", "limit": 100000}),
    )
    .await;
    let text = ok(&r);
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{own}\t")) && l.contains("(osprey)")),
        "own pid missing"
    );
    let r = run(
        &tool,
        &ctx(),
        json!({"resource": "process", "action": "list", "filter": "shell_tool", "limit": 5}),
    )
    .await;
    assert!(ok(&r).contains(&format!("{own}\t")));

    let r = run(&tool, &ctx(), json!({"action": "info", "pid": own})).await;
    let text = ok(&r);
    assert!(text.contains(&format!("pid: {own}\n")), "{text}");
    assert!(text.contains("this is Osprey itself"), "{text}");
}

#[tokio::test]
async fn process_kill_refuses_init_negative_and_own_pids_and_kills_others() {
    let tool = ShellTool::new(config());
    for pid in [1i64, 0, -1, -42, std::process::id() as i64] {
        let r = run(
            &tool,
            &ctx(),
            json!({"resource": "process", "action": "kill", "pid": pid, "signal": "KILL"}),
        )
        .await;
        assert_eq!(
            r.code,
            Some(ErrorCode::InvalidInput),
            "pid {pid}: {}",
            r.text_content()
        );
        assert!(
            r.text_content().contains("refusing"),
            "{}",
            r.text_content()
        );
    }

    let mut child = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let pid = child.id();
    let r = run(
        &tool,
        &ctx(),
        json!({"resource": "process", "action": "kill", "pid": pid}),
    )
    .await;
    assert!(
        ok(&r).contains(&format!("sent SIGTERM to {pid} (sleep); it has exited")),
        "{}",
        r.text_content()
    );
    let status = child.wait().unwrap();
    assert!(!status.success());

    let r = run(
        &tool,
        &ctx(),
        json!({"resource": "process", "action": "info", "pid": pid}),
    )
    .await;
    assert!(r.is_error && r.text_content().contains("no process"));
}

// ---------------------------------------------------------------- through the registry

/// The real choke point: the registry's own deadline and safeguard sit around the tool.
#[tokio::test]
async fn through_the_registry_a_deadline_still_kills_the_tree() {
    use osprey_db::Database;
    use osprey_tools::{
        AskMode, AuditSink, Level, OriginRules, PathGuard, Policy, PolicyConfig, Registry,
        RegistryConfig, Safeguard,
    };
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(&dir.path().join("data")).unwrap();
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(
            PolicyConfig {
                level: Level::Full,
                ask: AskMode::Off,
                ..Default::default()
            },
            None,
        )
        .unwrap(),
        origin_rules: OriginRules::default(),
        safeguard: Safeguard::new(PathGuard::new(
            Some(dir.path().join("home")),
            dir.path().join("data"),
        )),
        audit: AuditSink::new(db.audit()),
        output_cap: 256 * 1024,
    });
    registry.register_domain(ShellTool::new(config()));
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();

    let ctx = ToolContext::new(Origin::User, Duration::from_millis(1500));
    let r = registry
        .execute(
            &ctx,
            "shell",
            json!({"action": "exec", "command": tree_command(&work)}),
        )
        .await;
    assert_eq!(r.code, Some(ErrorCode::Timeout), "{}", r.text_content());
    let grandchild = pid_from(&work.join("grandchild")).await;
    let nested = pid_from(&work.join("nested")).await;
    eventually("grandchild gone", || !alive(grandchild)).await;
    eventually("nested grandchild gone", || !alive(nested)).await;

    let r = registry
        .execute(
            &ctx_long(),
            "shell",
            json!({"action": "exec", "command": "echo via registry"}),
        )
        .await;
    assert!(ok(&r).starts_with("via registry\n[exit code 0"));
}

fn ctx_long() -> ToolContext {
    ToolContext::new(Origin::User, Duration::from_secs(60))
}

/// The call's `cwd` is where relative paths in the command are judged from: `rm -rf .ssh` in
/// the home is the home's `.ssh`, not a folder beside Osprey.
#[tokio::test]
async fn the_cwd_field_is_applied_before_judging_relative_paths() {
    use osprey_tools::{
        AskMode, AuditSink, Level, OriginRules, PathGuard, Policy, PolicyConfig, Registry,
        RegistryConfig, Safeguard,
    };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "key").unwrap();
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(
            PolicyConfig {
                level: Level::Full,
                ask: AskMode::Off,
                ..Default::default()
            },
            None,
        )
        .unwrap(),
        origin_rules: OriginRules::default(),
        safeguard: Safeguard::new(PathGuard::new(Some(home.clone()), dir.path().join("data"))),
        audit: AuditSink::discard(),
        output_cap: 256 * 1024,
    });
    registry.register_domain(ShellTool::new(config()));
    let ctx = ctx_long();
    let run = |command: &str, cwd: &Path| {
        registry.execute(
            &ctx,
            "shell",
            json!({"action": "exec", "command": command, "cwd": cwd.display().to_string()}),
        )
    };
    let r = run("rm -rf .ssh", &home).await;
    assert_eq!(
        r.code,
        Some(ErrorCode::SafeguardBlocked),
        "{}",
        r.text_content()
    );
    assert!(home.join(".ssh/id_rsa").exists());
    // Reading a key from inside its folder needs a person, even under `full`.
    let r = run("cat id_rsa", &home.join(".ssh")).await;
    assert_eq!(
        r.code,
        Some(ErrorCode::PolicyDenied),
        "{}",
        r.text_content()
    );
    assert!(r.text_content().contains("SSH"), "{}", r.text_content());
    // Elsewhere the same words are ordinary.
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join(".ssh")).unwrap();
    let r = run("rm -rf .ssh", &work).await;
    assert!(!r.is_error, "{}", r.text_content());
    assert!(!work.join(".ssh").exists());
}

/// Safe bins run unasked on what is inside the workspace folders; what they would read outside
/// them is asked under the default policy, as the file tool's reads are (`full` runs it).
#[tokio::test]
async fn safe_bins_reading_outside_the_workspace_are_asked() {
    use std::sync::Arc;

    use osprey_tools::{FixedApprover, Level, Policy, Registry, RegistryConfig};
    use osprey_types::ApprovalAnswer;

    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let other = dir.path().join("other");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(ws.join("notes.txt"), "inside\n").unwrap();
    std::fs::write(other.join("private.txt"), "outside\n").unwrap();
    let registry = |level: Level| {
        let registry = Registry::new(RegistryConfig::new(
            Policy::at_level(level),
            dir.path().join("data"),
        ));
        let mut config = config();
        config.default_cwd = Some(ws.clone());
        config.sandbox.workspaces = vec![ws.clone()];
        registry.register_domain(ShellTool::new(config));
        registry
    };
    let approver = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let ctx = ctx_long().with_approver(approver.clone());
    let default = registry(Level::Allowlist);
    let exec = |command: &str| json!({"action": "exec", "command": command});

    let r = default.execute(&ctx, "shell", exec("cat notes.txt")).await;
    assert!(ok(&r).contains("inside"));
    assert_eq!(
        approver.count(),
        0,
        "a safe bin in the workspace is not asked"
    );

    let r = default
        .execute(&ctx, "shell", exec("cat ../other/private.txt"))
        .await;
    assert!(ok(&r).contains("outside"), "answered once, it ran");
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].summary.contains("cat ../other/private.txt"),
        "{}",
        asked[0].summary
    );

    let r = registry(Level::Full)
        .execute(&ctx, "shell", exec("cat ../other/private.txt"))
        .await;
    assert!(ok(&r).contains("outside"));
    assert_eq!(approver.count(), 1, "full runs it unasked");
}
