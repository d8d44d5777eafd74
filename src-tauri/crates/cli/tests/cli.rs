//! The `osprey` binary driven as a person or a script would: real processes, a temp data dir,
//! answers piped to the approval prompt.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn osprey(data: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    osprey_with(data, args, stdin, &[])
}

fn osprey_with(data: &Path, args: &[&str], stdin: Option<&str>, removed_env: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_osprey"));
    for name in removed_env {
        command.env_remove(name);
    }
    // Run from the temp folder, where these tests keep their files: the workspace the file
    // tool reads without asking (tests/file_tool.rs covers reads outside it).
    let mut child = command
        .current_dir(std::env::temp_dir())
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("OSPREY_DATA_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the osprey binary runs");
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

fn json_of(run: &Run) -> Value {
    serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", run.stdout))
}

#[test]
fn a_read_prints_the_content_and_exits_zero() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("notes.txt");
    std::fs::write(&file, "alpha\nbeta\n").unwrap();
    let input = format!(r#"{{"action": "read", "path": "{}"}}"#, file.display());
    let run = osprey(data.path(), &["tool", "file", &input], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("alpha") && run.stdout.contains("beta"),
        "{}",
        run.stdout
    );
    assert!(
        data.path().join("osprey.db").exists(),
        "--data-dir is where the database goes"
    );
}

#[test]
fn json_output_has_content_is_error_and_code() {
    let data = tempfile::tempdir().unwrap();
    let run = osprey(
        data.path(),
        &[
            "tool",
            "file",
            "--json",
            r#"{"action": "read", "path": "~/.ssh/id_rsa"}"#,
        ],
        None,
    );
    assert_eq!(run.code, 3);
    let v = json_of(&run);
    assert_eq!(v["is_error"], true);
    assert_eq!(v["code"], "sensitive_path");
    assert!(v["content"][0]["text"].as_str().unwrap().contains(".ssh"));
}

#[test]
fn approvals_are_asked_on_the_terminal() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let target = work.path().join("out.txt");
    let input = format!(
        r#"{{"action": "write", "path": "{}", "content": "hi"}}"#,
        target.display()
    );

    let run = osprey(data.path(), &["tool", "file", &input], Some("n\n"));
    assert_eq!(run.code, 3);
    assert!(
        run.stderr.contains("Approval needed") && run.stderr.contains("approval_denied"),
        "{}",
        run.stderr
    );
    assert!(!target.exists());

    let run = osprey(data.path(), &["tool", "file", &input], None);
    assert_eq!(run.code, 3, "end of input counts as no");
    assert!(!target.exists());

    let run = osprey(data.path(), &["tool", "file", &input], Some("y\n"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi");

    let run = osprey(
        data.path(),
        &["tool", "file", &input, "--policy", "full"],
        None,
    );
    assert_eq!(run.code, 0, "`full` needs no answer: {}", run.stderr);
    assert!(!run.stderr.contains("Approval needed"));

    let run = osprey(
        data.path(),
        &["tool", "file", &input, "--policy", "deny"],
        Some("y\n"),
    );
    assert_eq!(run.code, 3);
    assert!(run.stderr.contains("policy_denied"), "{}", run.stderr);

    let run = osprey(
        data.path(),
        &["tool", "file", &input, "--ask", "off"],
        Some("y\n"),
    );
    assert_eq!(run.code, 3);
    assert!(run.stderr.contains("policy_denied"), "{}", run.stderr);
}

#[test]
fn check_prints_the_decision_and_runs_nothing() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let target = work.path().join("out.txt");
    let input = format!(
        r#"{{"action": "write", "path": "{}", "content": "hi"}}"#,
        target.display()
    );
    let run = osprey(data.path(), &["tool", "file", "--check", &input], None);
    assert_eq!(run.code, 0);
    assert!(run.stdout.starts_with("ask: "), "{}", run.stdout);
    let run = osprey(
        data.path(),
        &[
            "tool", "file", "--check", "--json", "--policy", "full", &input,
        ],
        None,
    );
    assert_eq!(
        json_of(&run),
        serde_json::json!({"decision": "allow", "reason": "allow:full"})
    );
    let protected = data.path().join("osprey.db");
    let bad = format!(
        r#"{{"action": "write", "path": "{}", "content": "x"}}"#,
        protected.display()
    );
    let run = osprey(
        data.path(),
        &["tool", "file", "--check", "--policy", "full", &bad],
        None,
    );
    assert_eq!(run.code, 3);
    assert!(
        run.stdout.starts_with("refused sensitive_path:"),
        "{}",
        run.stdout
    );
    assert!(!target.exists());
}

#[test]
fn mistakes_get_clear_errors() {
    let data = tempfile::tempdir().unwrap();
    let run = osprey(data.path(), &["tool", "bash", r#"{"command": "ls"}"#], None);
    assert_eq!(run.code, 3);
    assert!(
        run.stderr
            .contains(r#"shell(resource: "bash", action: "exec""#),
        "{}",
        run.stderr
    );
    let run = osprey(data.path(), &["tool", "file", "{not json"], None);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("not valid JSON"), "{}", run.stderr);
    let run = osprey(
        data.path(),
        &["tool", "file", r#"{"action": "teleport"}"#],
        None,
    );
    assert_eq!(run.code, 3);
    assert!(
        run.stderr.contains("invalid_input") && run.stderr.contains("read"),
        "{}",
        run.stderr
    );
    let run = osprey(
        data.path(),
        &["tool", "file", "{}", "--policy", "lax"],
        None,
    );
    assert_eq!(run.code, 2, "clap usage error");
    assert!(
        run.stderr.contains("deny, allowlist or full"),
        "{}",
        run.stderr
    );
}

#[test]
fn every_call_lands_in_the_audit_log() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let note = work.path().join("note.txt");
    std::fs::write(&note, "x").unwrap();
    osprey(
        data.path(),
        &[
            "tool",
            "file",
            &json!({"action": "read", "path": note}).to_string(),
        ],
        None,
    );
    osprey(
        data.path(),
        &[
            "tool",
            "file",
            r#"{"action": "read", "path": "~/.aws/credentials"}"#,
        ],
        None,
    );
    osprey(data.path(), &["tool", "nothing", "{}"], None);
    let db = osprey_db::Database::open_in(data.path()).unwrap();
    let rows = db.audit().list(&Default::default()).unwrap();
    let decisions: Vec<&str> = rows.iter().rev().map(|r| r.decision.as_str()).collect();
    assert_eq!(
        decisions,
        ["allow:read_only", "sensitive_path", "unknown_tool"]
    );
    assert!(
        rows.iter()
            .all(|r| r.origin == "user" && r.session_id.as_deref() == Some("cli"))
    );
}

#[test]
fn tools_prints_every_schema() {
    let data = tempfile::tempdir().unwrap();
    let run = osprey(data.path(), &["tools", "--json"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tools = json_of(&run);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in ["file", "shell", "web", "screenshot", "desktop"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["input_schema"]["type"] == "object")
    );
}

#[test]
fn settings_are_validated_on_write() {
    let data = tempfile::tempdir().unwrap();
    let run = osprey(
        data.path(),
        &["config", "set", "policy", r#"{"level": "whatever"}"#],
        None,
    );
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("invalid value for `policy`"),
        "{}",
        run.stderr
    );
    let run = osprey(
        data.path(),
        &["config", "set", "web.allow_loopback", "true"],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = osprey(data.path(), &["config", "get", "web.allow_loopback"], None);
    assert_eq!(run.stdout.trim(), "true");
    let run = osprey(
        data.path(),
        &["config", "set", "policy", r#"{"level": "deny"}"#],
        None,
    );
    assert_eq!(run.code, 0);
    let run = osprey(
        data.path(),
        &[
            "tool",
            "file",
            "--check",
            r#"{"action": "write", "path": "/tmp/x", "content": ""}"#,
        ],
        None,
    );
    assert!(
        run.stdout.starts_with("refused policy_denied"),
        "the stored policy applies: {}",
        run.stdout
    );
}

#[test]
fn see_without_a_display_says_what_is_missing() {
    let data = tempfile::tempdir().unwrap();
    let run = osprey_with(data.path(), &["see", "--screen"], None, &["DISPLAY"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("no display available"),
        "{}",
        run.stderr
    );
    let run = osprey_with(
        data.path(),
        &["tool", "screenshot", r#"{"action": "see"}"#],
        None,
        &["DISPLAY"],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("tool_failed") && run.stderr.contains("DISPLAY"),
        "{}",
        run.stderr
    );
    let run = osprey(data.path(), &["see", "--window", "x", "--screen"], None);
    assert_eq!(run.code, 2, "one target at a time: {}", run.stderr);
}

#[test]
fn memories_stored_by_one_run_are_found_by_the_next() {
    let data = tempfile::tempdir().unwrap();
    let store = r#"{"resource": "memory", "action": "store", "layer": "entity", "content": "Ada prefers tea over coffee"}"#;
    let run = osprey(data.path(), &["tool", "agent", store], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let search = r#"{"resource": "memory", "action": "search", "query": "coffee?"}"#;
    let run = osprey(data.path(), &["tool", "agent", search], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Ada prefers tea"), "{}", run.stdout);
}
