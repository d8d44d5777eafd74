//! `osprey chat -p` as a script would run it, against a loopback server that speaks the OpenAI
//! Chat Completions streaming format (plain HTTP/1.1 on a std thread, server-sent events) and
//! refuses what the real API refuses (`osprey_tests::provider_rules`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use osprey_tests::{Finished as Run, run_with_input};
use serde_json::{Value, json};

/// Serves one scripted reply per connection, in order; records each request body.
struct ModelServer {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

fn serve(replies: Vec<(u16, String)>) -> ModelServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let record = bodies.clone();
    std::thread::spawn(move || {
        for (status, body) in replies {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            let mut path = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if path.is_empty() {
                    path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut request = vec![0; length];
            reader.read_exact(&mut request).unwrap();
            let request: Value = serde_json::from_slice(&request).unwrap_or(Value::Null);
            record.lock().unwrap().push(request.clone());
            // What the real API refuses is refused here too (a tool schema without an object at
            // the top), whatever the script says.
            let (status, body) = match osprey_tests::provider_rules::refusal(&path, &request) {
                Some((status, error)) => (status, error.to_string()),
                None => (status, body),
            };
            let kind = if status == 200 {
                "text/event-stream"
            } else {
                "application/json"
            };
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\nconnection: close\r\n\r\n{body}"
            );
            let _ = stream.flush();
        }
    });
    ModelServer { url, bodies }
}

fn chunk(delta: Value, finish: Value) -> String {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

fn tool_call_turn(id: &str, name: &str, args: Value) -> (u16, String) {
    let args = args.to_string();
    let (first, second) = args.split_at(args.len() / 2);
    let mut body = chunk(
        json!({"role": "assistant", "content": "Let me check."}),
        Value::Null,
    );
    body += &chunk(
        json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": first}}]}),
        Value::Null,
    );
    body += &chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": second}}]}),
        Value::Null,
    );
    body += &chunk(json!({}), json!("tool_calls"));
    body += "data: [DONE]\n\n";
    (200, body)
}

fn text_turn(text: &str) -> (u16, String) {
    let mut body = chunk(json!({"role": "assistant", "content": text}), Value::Null);
    body += &chunk(json!({}), json!("stop"));
    body += "data: [DONE]\n\n";
    (200, body)
}

/// A scratch folder holding `notes.txt` ("alpha"), and the model turn that reads it.
struct Notes {
    _dir: tempfile::TempDir,
    read: Value,
}

fn notes() -> Notes {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "alpha\n").unwrap();
    Notes {
        read: json!({"action": "read", "path": notes.to_str().unwrap()}),
        _dir: dir,
    }
}

impl Notes {
    fn read_turn(&self, id: &str) -> (u16, String) {
        tool_call_turn(id, "file", self.read.clone())
    }
}

fn chat(data: &Path, server: &ModelServer, extra: &[&str], stdin: &str) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_osprey"));
    // From the temp folder, where the notes the model reads are: the workspace.
    command
        .current_dir(std::env::temp_dir())
        .arg("--data-dir")
        .arg(data)
        .args(["chat", "--provider", "openai", "--base-url", &server.url])
        .args(["--model", "test-model"])
        .args(extra)
        .env_remove("OSPREY_DATA_DIR")
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", "sk-test");
    run_with_input(&mut command, stdin)
}

#[test]
fn one_shot_prints_the_final_answer_and_tool_activity_goes_to_stderr() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let notes = work.path().join("notes.txt");
    std::fs::write(&notes, "alpha\n").unwrap();
    let server = serve(vec![
        tool_call_turn(
            "call_1",
            "file",
            json!({"action": "read", "path": notes.display().to_string()}),
        ),
        text_turn("The notes say alpha."),
    ]);
    let run = chat(
        data.path(),
        &server,
        &["-p", "What do my notes say?", "--session", "s1"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "The notes say alpha.\n");
    assert!(run.stderr.contains("[tool] file"), "{}", run.stderr);
    let bodies = server.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["model"], "test-model");
    let tool_message = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert!(
        tool_message["content"].as_str().unwrap().contains("alpha"),
        "{tool_message}"
    );
    // The session is in the database, with the call.
    let db = osprey_db::Database::open_in(data.path()).unwrap();
    assert_eq!(db.sessions().messages("s1").unwrap().len(), 4);
    assert_eq!(db.sessions().tool_calls("s1").unwrap()[0].status, "done");

    // `osprey session` shows, then clears, then deletes it.
    let session = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_osprey"))
            .arg("--data-dir")
            .arg(data.path())
            .arg("session")
            .args(args)
            .env_remove("OSPREY_DATA_DIR")
            .output()
            .unwrap();
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        (
            output.status.code().unwrap_or(-1),
            text(&output.stdout),
            text(&output.stderr),
        )
    };
    let (code, listed, _) = session(&["list", "--json"]);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["id"], "s1");
    assert_eq!(listed[0]["messages"], 4);
    assert_eq!(listed[0]["model"], "test-model");
    let (code, shown, _) = session(&["show", "s1"]);
    assert_eq!(code, 0);
    assert!(shown.contains("user: What do my notes say?"), "{shown}");
    assert!(shown.contains("-> file"), "{shown}");
    assert!(shown.contains("<- ok: "), "{shown}");
    assert!(shown.contains("assistant: The notes say alpha."), "{shown}");
    let (code, _, _) = session(&["clear", "s1"]);
    assert_eq!(code, 0);
    let (_, status, _) = session(&["status", "s1", "--json"]);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        (status["messages"].clone(), status["status"].clone()),
        (json!(0), json!("idle"))
    );
    let (code, _, _) = session(&["delete", "s1"]);
    assert_eq!(code, 0);
    let (code, _, error) = session(&["show", "s1"]);
    assert_eq!(code, 1);
    assert!(error.contains("no session `s1`"), "{error}");
}

#[test]
fn a_call_the_person_refuses_on_the_terminal_does_not_run() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let target = work.path().join("made-by-the-model");
    let server = serve(vec![
        tool_call_turn(
            "call_1",
            "shell",
            json!({"command": format!("touch {}", target.display())}),
        ),
        text_turn("Understood, I did not create it."),
    ]);
    let run = chat(
        data.path(),
        &server,
        &[
            "-p",
            "make a file",
            "--policy",
            "allowlist",
            "--ask",
            "on-miss",
        ],
        "n\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "Understood, I did not create it.\n");
    assert!(run.stderr.contains("Approval needed"), "{}", run.stderr);
    assert!(run.stderr.contains("approval_denied"), "{}", run.stderr);
    assert!(!target.exists());
}

#[test]
fn a_provider_failure_exits_1_with_its_code() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(vec![(
        401,
        json!({"error": {"message": "Incorrect API key provided"}}).to_string(),
    )]);
    let run = chat(data.path(), &server, &["-p", "hi"], "");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("auth") && run.stderr.contains("Incorrect API key"),
        "{}",
        run.stderr
    );
}

#[test]
fn interactive_chat_streams_replies_and_keeps_one_session() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(vec![text_turn("First reply."), text_turn("Second reply.")]);
    let run = chat(
        data.path(),
        &server,
        &["--session", "talk"],
        "hello\nand again\n\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("First reply.") && run.stdout.contains("Second reply."),
        "{}",
        run.stdout
    );
    let bodies = server.bodies.lock().unwrap().clone();
    let second = bodies[1]["messages"].to_string();
    assert!(second.contains("hello") && second.contains("First reply."));
    let db = osprey_db::Database::open_in(data.path()).unwrap();
    assert_eq!(db.sessions().messages("talk").unwrap().len(), 4);
}

#[test]
fn json_output_has_the_answer_the_tool_calls_with_results_usage_and_session() {
    let data = tempfile::tempdir().unwrap();
    let notes = notes();
    let server = serve(vec![
        notes.read_turn("call_1"),
        text_turn("The file says alpha."),
    ]);
    let run = chat(
        data.path(),
        &server,
        &[
            "-p",
            "what is in it?",
            "--output-format",
            "json",
            "--session",
            "s-json",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let result: Value = serde_json::from_str(&run.stdout).expect("one JSON object");
    assert_eq!(result["type"], "result");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["stop"], "end_turn");
    assert_eq!(result["session_id"], "s-json");
    assert_eq!(result["text"], "The file says alpha.");
    assert_eq!(result["steps"], 2);
    assert!(result["usage"]["input_tokens"].is_u64());
    let calls = result["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["name"], "file");
    assert_eq!(calls[0]["input"], notes.read);
    assert_eq!(calls[0]["result"]["is_error"], false);
    assert!(
        calls[0]["result"]["text"]
            .as_str()
            .unwrap()
            .contains("alpha"),
        "{result}"
    );
    // Tool activity is in the object, not printed on stderr.
    assert!(!run.stderr.contains("[tool]"), "{}", run.stderr);
}

#[test]
fn stream_json_prints_one_event_per_line_and_ends_with_the_result() {
    let data = tempfile::tempdir().unwrap();
    let notes = notes();
    let server = serve(vec![notes.read_turn("call_1"), text_turn("Done.")]);
    let run = chat(
        data.path(),
        &server,
        &["-p", "read it", "--output-format", "stream-json"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let position = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap();
    assert!(position("tool_call") < position("tool_result"), "{kinds:?}");
    assert!(position("tool_result") < kinds.len() - 1, "{kinds:?}");
    assert_eq!(*kinds.last().unwrap(), "result");
    assert_eq!(events.last().unwrap()["text"], "Done.");
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(text.ends_with("Done."), "{text}");
}

#[test]
fn the_step_limit_is_a_sentence_and_exit_1() {
    let data = tempfile::tempdir().unwrap();
    let notes = notes();
    let server = serve(vec![notes.read_turn("call_1")]);
    let run = chat(
        data.path(),
        &server,
        &["-p", "loop", "--max-steps", "1", "--session", "s-limit"],
        "",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("--max-steps") && run.stderr.contains("--session s-limit"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("StepLimit"), "{}", run.stderr);
    // The same as JSON: an error with the sentence.
    let server = serve(vec![notes.read_turn("call_2")]);
    let run = chat(
        data.path(),
        &server,
        &["-p", "loop", "--max-steps", "1", "--output-format", "json"],
        "",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["stop"], "step_limit");
    assert_eq!(result["is_error"], true);
    assert!(
        result["stop_message"]
            .as_str()
            .unwrap()
            .contains("--max-steps")
    );
}

#[test]
fn output_format_needs_a_prompt() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(vec![]);
    let run = chat(data.path(), &server, &["--output-format", "json"], "");
    assert_eq!(run.code, 2, "{}", run.stderr);
}

fn osprey(data: &Path, args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_osprey"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("OSPREY_DATA_DIR")
        .output()
        .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn a_server_added_with_mcp_add_brings_its_tools_to_the_first_turn() {
    let data = tempfile::tempdir().unwrap();
    let echo = osprey_tests::fixture_binary("osprey-fixture-mcp-echo");
    let added = osprey(
        data.path(),
        &["mcp", "add", "echo", "--", echo.to_str().unwrap(), "--flag"],
    );
    assert_eq!(added.code, 0, "{}", added.stderr);
    // Stored as the peers write it, and refused where they would be wrong.
    let stored = osprey(data.path(), &["config", "get", "mcp.servers"]);
    let stored: Value = serde_json::from_str(&stored.stdout).unwrap();
    assert_eq!(stored["echo"]["type"], "stdio");
    assert_eq!(stored["echo"]["args"], json!(["--flag"]));
    let sse = osprey(
        data.path(),
        &[
            "mcp",
            "add",
            "--transport",
            "sse",
            "old",
            "http://127.0.0.1:1/sse",
        ],
    );
    assert_eq!(sse.code, 1);
    assert!(sse.stderr.contains("streamable HTTP"), "{}", sse.stderr);
    let bad = osprey(data.path(), &["mcp", "add", "a__b", "--", "x"]);
    assert_eq!(bad.code, 1, "{}", bad.stderr);

    // `chat -p` waits for the server, so the first request already lists its tools.
    let server = serve(vec![text_turn("I see the echo tools.")]);
    let run = chat(data.path(), &server, &["-p", "what can you use?"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tools: Vec<String> = server.bodies.lock().unwrap()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        tools.iter().any(|t| t == "mcp__echo__echo"),
        "the first request's tools: {tools:?}"
    );

    // A server that cannot start is reported once and the turn still runs.
    let broken = osprey(
        data.path(),
        &["mcp", "add", "broken", "--", "/nonexistent/mcp-server"],
    );
    assert_eq!(broken.code, 0, "{}", broken.stderr);
    let server = serve(vec![text_turn("Still here.")]);
    let run = chat(data.path(), &server, &["-p", "hi", "--mcp-wait", "5"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("MCP server `broken`").count(),
        1,
        "{}",
        run.stderr
    );

    let removed = osprey(data.path(), &["mcp", "remove", "broken"]);
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    let again = osprey(data.path(), &["mcp", "remove", "broken"]);
    assert_eq!(again.code, 1);
    assert!(
        again.stderr.contains("no MCP server named"),
        "{}",
        again.stderr
    );
}

/// The tool results the model was sent, in order (the `tool` messages of the last request).
fn tool_results(server: &ModelServer) -> Vec<String> {
    let bodies = server.bodies.lock().unwrap().clone();
    bodies
        .last()
        .and_then(|body| body["messages"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn autonomous_mode_runs_what_would_be_asked_and_never_what_the_safeguard_refuses() {
    #[cfg(target_os = "linux")]
    osprey_tests::build_sandbox_launcher();
    let data = tempfile::tempdir().unwrap();
    // In the folder the chat starts in: the workspace commands may write.
    let work = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let made = work.path().join("made-by-the-model");
    for (key, value) in [
        ("tools.autonomous", "true"),
        ("tools.blocklist", r#"["git push"]"#),
    ] {
        let set = osprey(data.path(), &["config", "set", key, value]);
        assert_eq!(set.code, 0, "{}", set.stderr);
    }
    let server = serve(vec![
        tool_call_turn(
            "call_1",
            "shell",
            json!({"command": format!("touch {}", made.display()), "yield_ms": 0}),
        ),
        tool_call_turn("call_2", "shell", json!({"command": "rm -rf ~"})),
        tool_call_turn(
            "call_3",
            "exec",
            json!({"program": "git", "args": ["push"]}),
        ),
        tool_call_turn(
            "call_4",
            "exec",
            json!({"program": "rm", "args": ["-rf", "/"]}),
        ),
        text_turn("One file made; the rest was refused."),
    ]);
    // Allowlist with asking on, and nobody answering: only autonomy lets the first call run.
    let run = chat(
        data.path(),
        &server,
        &["-p", "go", "--policy", "allowlist", "--ask", "on-miss"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("WARNING: autonomous mode is on"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("Approval needed"), "{}", run.stderr);
    assert!(made.exists(), "{}", run.stderr);
    let results = tool_results(&server);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        results[1].contains("the safeguard blocked"),
        "{}",
        results[1]
    );
    assert!(results[2].contains("command blocklist"), "{}", results[2]);
    assert!(
        results[3].contains("the safeguard blocked"),
        "{}",
        results[3]
    );
    let db = osprey_db::Database::open_in(data.path()).unwrap();
    let rows = db.audit().list(&osprey_db::AuditQuery::default()).unwrap();
    let decisions: Vec<&str> = rows.iter().map(|r| r.decision.as_str()).collect();
    assert_eq!(
        decisions.iter().filter(|d| **d == "autonomous").count(),
        1,
        "{decisions:?}"
    );
    assert_eq!(
        decisions
            .iter()
            .filter(|d| **d == "safeguard_blocked")
            .count(),
        3,
        "{decisions:?}"
    );

    // Turned off, the warning goes and the same call is asked again (and refused unanswered).
    let off = osprey(data.path(), &["config", "set", "tools.autonomous", "false"]);
    assert_eq!(off.code, 0, "{}", off.stderr);
    let server = serve(vec![
        tool_call_turn(
            "call_1",
            "shell",
            json!({"command": format!("touch {}.2", made.display())}),
        ),
        text_turn("Not made."),
    ]);
    let run = chat(
        data.path(),
        &server,
        &["-p", "go", "--policy", "allowlist", "--ask", "on-miss"],
        "n\n",
    );
    assert!(
        !run.stderr.contains("autonomous mode is on"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("Approval needed"), "{}", run.stderr);
}

#[test]
fn quotas_and_the_circuit_breaker_stop_a_tool_and_tell_the_model_why() {
    #[cfg(target_os = "linux")]
    osprey_tests::build_sandbox_launcher();
    let data = tempfile::tempdir().unwrap();
    let notes = notes();
    for (key, value) in [
        ("tools.quotas", r#"{"file": {"per_session": 1}}"#),
        (
            "tools.breaker",
            r#"{"failures": 2, "window_seconds": 60, "cooldown_seconds": 600}"#,
        ),
    ] {
        let set = osprey(data.path(), &["config", "set", key, value]);
        assert_eq!(set.code, 0, "{}", set.stderr);
    }
    let slow = json!({"program": "sleep", "args": ["5"], "timeout_ms": 200});
    let server = serve(vec![
        notes.read_turn("call_1"),
        notes.read_turn("call_2"),
        tool_call_turn("call_3", "exec", slow.clone()),
        tool_call_turn("call_4", "exec", slow),
        tool_call_turn("call_5", "exec", json!({"program": "true"})),
        text_turn("Stopped."),
    ]);
    let run = chat(
        data.path(),
        &server,
        &["-p", "go", "--policy", "full", "--session", "q1"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = tool_results(&server);
    assert_eq!(results.len(), 5, "{results:?}");
    assert!(results[0].contains("alpha"), "{}", results[0]);
    assert!(
        results[1].contains("the quota for `file` is 1 calls per session and 1 have run"),
        "{}",
        results[1]
    );
    assert!(results[2].contains("timed out"), "{}", results[2]);
    assert!(results[3].contains("timed out"), "{}", results[3]);
    assert!(
        results[4].contains("`exec` failed 2 times in a row") && results[4].contains("retry after"),
        "{}",
        results[4]
    );
}
