//! `osprey mcp serve` driven by rmcp's client over a real child process's stdio, and
//! `osprey mcp list` connecting to a configured server (the `osprey mcp serve` binary itself,
//! with a data dir of its own).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use osprey_db::{AuditEntry, AuditQuery, Database};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

const DEADLINE: Duration = Duration::from_secs(20);

fn osprey_command(data: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_osprey"));
    command
        .arg("--data-dir")
        .arg(data)
        .env_remove("OSPREY_DATA_DIR");
    command
}

/// Runs `osprey --data-dir <data> <args>` to completion.
fn osprey(data: &Path, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_osprey"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("OSPREY_DATA_DIR")
        .stdin(Stdio::null())
        .output()
        .expect("the osprey binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// An MCP client connected to `osprey mcp serve <extra>` on `data`.
/// `osprey mcp serve` started in `cwd`, as a client starts it in the project it works on: the
/// workspace whose files it reads without approval.
async fn serve(data: &Path, cwd: &Path, extra: &[&str]) -> RunningService<RoleClient, ()> {
    let mut command = osprey_command(data);
    command.args(["mcp", "serve"]).args(extra).current_dir(cwd);
    let transport = TokioChildProcess::new(command).expect("osprey mcp serve starts");
    tokio::time::timeout(DEADLINE, ().serve(transport))
        .await
        .expect("the handshake finishes in time")
        .expect("the handshake succeeds")
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, input: Value) -> CallToolResult {
    let Value::Object(arguments) = input else {
        panic!("input must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments))
        .await
        .expect("the call gets an answer")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits for the audit row of `tool` matching `pick` (rows are written by a background thread).
async fn audit_row(data: &Path, tool: &str, pick: impl Fn(&AuditEntry) -> bool) -> AuditEntry {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let rows = Database::open_in(data)
            .unwrap()
            .audit()
            .list(&AuditQuery {
                tool: Some(tool.to_string()),
                ..Default::default()
            })
            .unwrap();
        if let Some(row) = rows.into_iter().find(|r| pick(r)) {
            return row;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no audit row for {tool} in time"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn serve_lists_tools_reads_files_refuses_what_needs_approval_and_audits_as_mcp() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let client = serve(data.path(), work.path(), &[]).await;

    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for expected in ["file", "shell", "web"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }

    let note = work.path().join("note.txt");
    std::fs::write(&note, "read through osprey mcp serve\n").unwrap();
    let read = call(
        &client,
        "file",
        json!({"action": "read", "path": note.to_str().unwrap()}),
    )
    .await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    assert!(text(&read).contains("read through osprey mcp serve"));
    // A model that saw the tools through a client prefix reaches the same tool.
    let prefixed = call(
        &client,
        "mcp__osprey__file",
        json!({"action": "read", "path": note.to_str().unwrap()}),
    )
    .await;
    assert_eq!(prefixed.is_error, Some(false), "{prefixed:?}");

    // A shell command needs approval under the default policy: refused and not run.
    let marker = work.path().join("ran");
    let command = format!("touch {}", marker.display());
    let refused = call(&client, "shell", json!({"command": command})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("cannot be approved"), "{refused:?}");

    let read_row = audit_row(data.path(), "file", |r| r.code.is_none()).await;
    assert_eq!(read_row.origin, "mcp");
    let shell_row = audit_row(data.path(), "shell", |_| true).await;
    assert_eq!(shell_row.origin, "mcp");
    assert_eq!(shell_row.decision, "approval_denied");
    assert!(!marker.exists(), "the refused command ran");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn origin_rules_denying_mcp_refuse_and_policy_full_lets_writes_through() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (code, _, stderr) = osprey(
        data.path(),
        &[
            "config",
            "set",
            "origin_rules",
            r#"{"deny": {"mcp": ["file.write"]}}"#,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    // Commands run in the sandbox, which writes only in its workspace: this test's folder.
    let sandbox = json!({"workspaces": [work.path()]}).to_string();
    let (code, _, stderr) = osprey(data.path(), &["config", "set", "shell.sandbox", &sandbox]);
    assert_eq!(code, 0, "{stderr}");
    let client = serve(data.path(), data.path(), &["--policy", "full"]).await;

    let target = work.path().join("denied.txt");
    let denied = call(
        &client,
        "file",
        json!({"action": "write", "path": target.to_str().unwrap(), "content": "x"}),
    )
    .await;
    assert_eq!(denied.is_error, Some(true));
    assert!(text(&denied).contains("origin `mcp`"), "{denied:?}");
    assert!(!target.exists());
    let row = audit_row(data.path(), "file", |r| r.decision == "origin_denied").await;
    assert_eq!(row.origin, "mcp");

    // Under --policy full the shell runs without a question; the origin rule above is about
    // file writes only.
    let marker = work.path().join("ran");
    let ran = call(
        &client,
        "shell",
        json!({"command": format!("touch {}", marker.display())}),
    )
    .await;
    assert_eq!(ran.is_error, Some(false), "{ran:?}");
    assert!(marker.exists());
    client.cancel().await.unwrap();
}

/// `osprey mcp serve` on `data` with piped stdio, for tests that speak raw JSON-RPC lines.
/// `osprey mcp serve` on pipes, and what it writes to stderr as it comes. Its stderr is read
/// all along: a full pipe (the debug log of one `tools/list` is larger than the pipe's buffer)
/// would block the server's next log line and so its answers.
fn piped_server(
    data: &Path,
    env: &[(&str, &str)],
) -> (tokio::process::Child, tokio::task::JoinHandle<String>) {
    use tokio::io::AsyncReadExt;
    let mut child = osprey_command(data)
        .args(["mcp", "serve"])
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let log = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    (child, log)
}

/// Waits for a server whose stdin was closed to exit, successfully.
async fn exits_cleanly(child: &mut tokio::process::Child) {
    let status = tokio::time::timeout(DEADLINE, child.wait())
        .await
        .expect("the server exits after stdin closes")
        .unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn stdout_carries_only_protocol_frames_even_with_debug_logs() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    let data = tempfile::tempdir().unwrap();
    let (mut child, log) = piped_server(data.path(), &[("OSPREY_LOG", "debug")]);
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "file", "arguments": {"action": "read", "path": "/nonexistent/x"}}}),
        // Params that do not fit a known method, and a method nobody knows.
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/frobnicate", "params": {}}),
    ];
    for request in &requests {
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answered = Vec::new();
    let mut errors = std::collections::BTreeMap::new();
    while answered.len() < 5 {
        let line = tokio::time::timeout(DEADLINE, lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("stdout stays open");
        let frame: Map<String, Value> = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
        assert_eq!(frame["jsonrpc"], "2.0", "{line}");
        if let Some(id) = frame.get("id") {
            answered.push(id.clone());
            if let Some(error) = frame.get("error") {
                errors.insert(id.as_i64().unwrap(), error["code"].clone());
            }
        }
    }
    // Requests are handled concurrently, so answers may come in any order.
    answered.sort_by_key(|id| id.as_i64());
    assert_eq!(answered, [json!(1), json!(2), json!(3), json!(4), json!(5)]);
    assert_eq!(errors.get(&4), Some(&json!(-32602)), "{errors:?}");
    assert_eq!(errors.get(&5), Some(&json!(-32601)), "{errors:?}");
    assert_eq!(errors.len(), 2, "only the bad requests fail: {errors:?}");
    // Closing stdin ends the server cleanly; the debug logs went to stderr.
    drop(stdin);
    exits_cleanly(&mut child).await;
    let log = log.await.unwrap();
    assert!(log.contains("DEBUG"), "no debug log on stderr: {log}");
}

/// A client that breaks the protocol's rules, as a hand-written or buggy one does, gets the
/// JSON-RPC answers the specification names, each with its request's `id`, and the session
/// survives them: notifications before `initialize` do not end it, and `initialize` still works
/// after refused requests.
#[tokio::test]
async fn a_client_breaking_the_rules_gets_json_rpc_errors_with_its_ids_and_keeps_its_session() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    let data = tempfile::tempdir().unwrap();
    let (mut child, _log) = piped_server(data.path(), &[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // Sends one line and returns the answer to it (or checks that none comes before a ping's).
    let mut exchange = async |line: &str| -> Value {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        let answer = tokio::time::timeout(DEADLINE, lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("stdout stays open");
        serde_json::from_str(&answer).unwrap()
    };
    let error = |answer: &Value| (answer["id"].clone(), answer["error"]["code"].clone());

    // Before initialize: a notification is no reason to end the session (a ping still answers),
    // and a request is refused with -32602 and told what to send first.
    let pong = exchange(
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\
         {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}",
    )
    .await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 0, "result": {}}));
    let early = exchange(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await;
    assert_eq!(error(&early), (json!(1), json!(-32602)), "{early}");
    assert!(
        early["error"]["message"]
            .as_str()
            .unwrap()
            .contains("send `initialize` first"),
        "{early}"
    );

    // Malformed messages: -32600 with the request's own id (null when it has none to give),
    // -32700 for text that is not JSON.
    for (line, id, code) in [
        (
            r#"{"jsonrpc":"2.0","id":"two","method":5}"#,
            json!("two"),
            -32600,
        ),
        (r#"{"jsonrpc":"2.0","id":3}"#, json!(3), -32600),
        (r#"{"id":4,"method":"ping"}"#, json!(4), -32600),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
            -32600,
        ),
        (
            r#"[{"jsonrpc":"2.0","id":5,"method":"ping"}]"#,
            Value::Null,
            -32600,
        ),
        ("this is not json", Value::Null, -32700),
    ] {
        let answer = exchange(line).await;
        assert_eq!(answer["jsonrpc"], "2.0", "{line}: {answer}");
        assert_eq!(error(&answer), (id, json!(code)), "{line}: {answer}");
    }

    // The session starts normally after all that.
    let init = exchange(
        r#"{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"rough","version":"1"}}}"#,
    )
    .await;
    assert_eq!(init["id"], 6, "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "osprey", "{init}");
    let listed = exchange(
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\
         {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}",
    )
    .await;
    assert_eq!(listed["id"], 7, "{listed}");
    assert!(!listed["result"]["tools"].as_array().unwrap().is_empty());
    let bad_params =
        exchange(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":"file"}"#).await;
    assert_eq!(
        error(&bad_params),
        (json!(8), json!(-32600)),
        "{bad_params}"
    );
    drop(stdin);
    exits_cleanly(&mut child).await;
}

/// A client that leaves without starting a session is told about in words that name the
/// client, not a model provider.
#[test]
fn a_client_that_leaves_before_initialize_is_named_as_the_cause() {
    let data = tempfile::tempdir().unwrap();
    let served = osprey_tests::run_osprey(
        env!("CARGO_BIN_EXE_osprey"),
        data.path(),
        &["mcp", "serve"],
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n",
    );
    assert!(
        served.stdout.contains("\"code\":-32602"),
        "{}",
        served.stdout
    );
    assert_eq!(served.code, 1, "{}", served.stderr);
    assert!(
        served
            .stderr
            .contains("the MCP client closed the connection before it started a session"),
        "{}",
        served.stderr
    );
    assert!(!served.stderr.contains("provider"), "{}", served.stderr);
}

#[tokio::test]
async fn mcp_list_connects_to_configured_servers_and_reports_failures() {
    let data = tempfile::tempdir().unwrap();
    let peer_data = tempfile::tempdir().unwrap();
    let servers = json!({
        "self": {
            "command": env!("CARGO_BIN_EXE_osprey"),
            "args": ["--data-dir", peer_data.path().to_str().unwrap(), "mcp", "serve"]
        }
    });
    let (code, _, stderr) = osprey(
        data.path(),
        &["config", "set", "mcp.servers", &servers.to_string()],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = osprey(data.path(), &["mcp", "list", "--json"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let statuses: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(statuses[0]["name"], "self");
    assert_eq!(statuses[0]["state"], "connected", "{statuses}");
    let tools = statuses[0]["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("mcp__self__file")), "{tools:?}");

    // A bad entry is refused when written, and the stored value is kept.
    let (code, _, stderr) = osprey(
        data.path(),
        &[
            "config",
            "set",
            "mcp.servers",
            r#"{"x": {"url": "ftp://nope"}}"#,
        ],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("http://"), "{stderr}");
    let (_, stored, _) = osprey(data.path(), &["config", "get", "mcp.servers"]);
    assert!(stored.contains("\"self\""), "{stored}");

    // A server that cannot start is reported, with a failing exit code.
    let (code, _, stderr) = osprey(
        data.path(),
        &[
            "config",
            "set",
            "mcp.servers",
            r#"{"gone": {"command": "/nonexistent/mcp-server"}}"#,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, _) = osprey(data.path(), &["mcp", "list", "--wait", "5"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("gone: not connected: cannot start"),
        "{stdout}"
    );
}
