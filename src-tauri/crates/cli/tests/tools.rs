//! `osprey tools` and `osprey tool` with MCP servers' and apps' tools, as a person runs them: the
//! real mcp-echo server configured with `osprey mcp add`, the real unit-converter app sideloaded
//! and reached through a running `osprey daemon` or launched by the command itself. Every call
//! goes through the registry: the approval question is answered on stdin, and a refusal or a
//! stricter policy stops it as it stops a built-in tool.
#![cfg(unix)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use osprey_tests::daemon::{start_daemon, wait_for_line};
use osprey_tests::{Finished as Run, fixture_binary, run_with_input, sideload_unit_converter};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `osprey --data-dir <data> <args>` with `stdin` as its standard input.
fn osprey(data: &Path, args: &[&str], stdin: &str) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_osprey"));
    command
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("OSPREY_DATA_DIR")
        .env_remove("OSPREY_STORE_URL");
    run_with_input(&mut command, stdin)
}

/// `osprey tools --json`: the listing and stderr.
fn listed(data: &Path) -> (Vec<Value>, String) {
    let run = osprey(data, &["tools", "--json", "--wait", "20"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tools: Value = serde_json::from_str(&run.stdout).unwrap();
    (tools.as_array().unwrap().clone(), run.stderr)
}

fn entry<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|tool| tool["name"] == name)
}

#[test]
fn mcp_tools_are_listed_and_run_through_the_registry() {
    let data = tempfile::tempdir().unwrap();
    let data = data.path();
    let echo = fixture_binary("osprey-fixture-mcp-echo");
    let added = osprey(
        data,
        &["mcp", "add", "echo", "--", echo.to_str().unwrap()],
        "",
    );
    assert_eq!(added.code, 0, "{}", added.stderr);
    let broken = osprey(
        data,
        &["mcp", "add", "broken", "--", "/nonexistent/mcp"],
        "",
    );
    assert_eq!(broken.code, 0, "{}", broken.stderr);

    // Listed with the built-in tools; the server that cannot start is said once, and the
    // listing goes on.
    let (tools, stderr) = listed(data);
    let echo_tool = entry(&tools, "mcp__echo__echo").expect("mcp__echo__echo is listed");
    assert_eq!(echo_tool["source"], "mcp");
    assert_eq!(echo_tool["server"], "echo");
    assert_eq!(echo_tool["input_schema"]["type"], "object");
    assert!(entry(&tools, "mcp__echo__pid").is_some());
    assert_eq!(entry(&tools, "file").unwrap()["source"], "builtin");
    assert_eq!(stderr.matches("MCP server `broken`").count(), 1, "{stderr}");
    let text = osprey(data, &["tools", "--wait", "20"], "");
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("mcp__echo__echo (MCP server `echo`)"),
        "{}",
        text.stdout
    );

    // The call asks (an MCP tool always needs the policy's say): yes runs it, no refuses it.
    let input = r#"{"text": "hello"}"#;
    let run = osprey(data, &["tool", "mcp__echo__echo", input], "y\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "echo: hello");
    assert!(run.stderr.contains("Approval needed"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("broken"),
        "only the server named connects"
    );
    let run = osprey(data, &["tool", "mcp__echo__echo", input, "--json"], "");
    assert_eq!(run.code, 3, "{}", run.stderr);
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["code"], "approval_denied", "{result}");
    let deny = ["tool", "mcp__echo__echo", input, "--policy", "deny"];
    expect(&osprey(data, &deny, "y\n"), 3, &["policy_denied"]);
    let run = osprey(data, &["tool", "mcp__echo__echo", input, "--check"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("ask"), "{}", run.stdout);
    // The tool's result as the server gave it, error flag included.
    let fail = osprey(data, &["tool", "mcp__echo__fail", "{}"], "y\n");
    expect(&fail, 1, &["it failed, as asked"]);

    // Unknown names say what exists.
    let run = osprey(data, &["tool", "mcp__echo__nope", "{}"], "");
    expect(
        &run,
        3,
        &["unknown_tool", "mcp__echo__echo, mcp__echo__fail"],
    );
    let run = osprey(data, &["tool", "mcp__nobody__x", "{}"], "");
    expect(&run, 3, &["No MCP server `nobody` is configured"]);
    let run = osprey(data, &["tool", "nothing_here", "{}"], "");
    expect(&run, 3, &["Available tools: ", "file", "mcp__echo__<tool>"]);
    // A configured server that cannot start: said, and the call fails without running.
    let broken = ["tool", "mcp__broken__x", "{}", "--wait", "5"];
    expect(&osprey(data, &broken, "y\n"), 1, &["not connected"]);
}

/// The run exited with `code` and its stderr says each of `said`.
fn expect(run: &Run, code: i32, said: &[&str]) {
    assert_eq!(run.code, code, "{}", run.stderr);
    for words in said {
        assert!(
            run.stderr.contains(words),
            "no `{words}` in: {}",
            run.stderr
        );
    }
}

fn pid_file(data: &Path) -> std::path::PathBuf {
    data.join("apps/units/.pid")
}

fn pid_alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

const CONVERT: &str = r#"{"value": 2, "from": "km", "to": "m"}"#;

fn converted(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(run.stdout.trim()).unwrap()
}

#[test]
fn app_tools_are_listed_and_run_launched_here_or_through_the_daemon() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let osprey_program = Path::new(env!("CARGO_BIN_EXE_osprey"));
    sideload_unit_converter(osprey_program, root.path(), &data, "units");

    // No Osprey runs: the command launches the app itself, and stops it when done.
    let (tools, stderr) = listed(&data);
    let convert = entry(&tools, "convert").unwrap_or_else(|| panic!("{tools:?} {stderr}"));
    assert_eq!(convert["source"], "app");
    assert_eq!(convert["app"], "units");
    assert_eq!(
        convert["input_schema"]["required"],
        json!(["value", "from", "to"])
    );
    assert!(
        !pid_file(&data).exists(),
        "the listing left the app running"
    );

    let run = osprey(&data, &["tool", "convert", CONVERT], "y\n");
    assert_eq!(converted(&run), json!({"value": 2000.0, "unit": "m"}));
    assert!(run.stderr.contains("Approval needed"), "{}", run.stderr);
    assert!(!pid_file(&data).exists(), "the call left the app running");
    // App tools need the policy's say, as every app tool does.
    expect(
        &osprey(&data, &["tool", "convert", CONVERT], ""),
        3,
        &["approval_denied"],
    );
    // Input that does not fit the app tool's schema is refused before anyone is asked.
    let run = osprey(&data, &["tool", "convert", r#"{"value": 1}"#], "");
    expect(
        &run,
        3,
        &[
            "invalid_input",
            "does not fit `convert`'s schema",
            "\"from\" is a required property",
        ],
    );
    assert!(!run.stderr.contains("Approval needed"), "{}", run.stderr);
    // An unknown name lists the app's tool with the built-in ones.
    let run = osprey(&data, &["tool", "konvert", "{}"], "");
    expect(&run, 3, &["convert (app units)"]);

    // A daemon runs the app: the command reaches that process rather than start another.
    let (_daemon, lines) = start_daemon(osprey_program, &data);
    wait_for_line(&lines, "osprey daemon: ready");
    let started = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(pid_file(&data))
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok())
            .filter(|pid| pid_alive(*pid))
        {
            break pid;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "the daemon did not start the app"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = osprey(&data, &["tool", "convert", CONVERT], "y\n");
    assert_eq!(converted(&run), json!({"value": 2000.0, "unit": "m"}));
    let (tools, stderr) = listed(&data);
    assert_eq!(
        entry(&tools, "convert").map(|tool| &tool["app"]),
        Some(&json!("units")),
        "{stderr}"
    );
    // The daemon's app served both, and still runs.
    assert!(pid_alive(pid));
    assert_eq!(
        std::fs::read_to_string(pid_file(&data)).unwrap().trim(),
        pid.to_string()
    );
}
