//! MCP both ways with real peers: Osprey's server driven by rmcp's client over an in-process
//! duplex, and Osprey's client connected to a real stdio server process (the mcp-echo fixture)
//! and to Osprey's own server over streamable HTTP on loopback.

use std::sync::Arc;
use std::time::Duration;

use osprey_agent::mcp::{
    McpClientOptions, McpClients, McpServer, McpServerConfig, McpServerOptions, McpServers,
    ServerState,
};
use osprey_tools::file::FileTool;
use osprey_tools::{
    FixedApprover, Level, PathGuard, Policy, Registry, RegistryConfig, ToolContext,
};
use osprey_types::{ApprovalAnswer, ContentBlock, ErrorCode, Origin};
use rmcp::model::CallToolRequestParams;
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

const DEADLINE: Duration = Duration::from_secs(20);

/// A registry with the file tool, guarding `data` as Osprey's data.
fn registry(level: Level, data: &std::path::Path) -> Registry {
    let registry = Registry::new(RegistryConfig::new(Policy::at_level(level), data));
    // The test's folder is the workspace: reads there need no approval, which MCP cannot ask.
    let workspace = data.parent().unwrap_or(data).to_path_buf();
    registry.register_domain(
        FileTool::new(PathGuard::new(None, data.to_path_buf())).with_workspaces(vec![workspace]),
    );
    registry
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Waits until `condition` holds, checking every 20 ms, failing the test at the deadline.
async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A client that counts `tools/list_changed` notifications.
#[derive(Clone, Default)]
struct Listener {
    changed: Arc<Notify>,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

#[tokio::test]
async fn the_server_lists_the_registry_runs_calls_as_mcp_and_approves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(Level::Allowlist, &dir.path().join("data"));
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_side);
    let server = McpServer::new(registry.clone(), McpServerOptions::default());
    tokio::spawn(server.serve_io(read, write));
    let listener = Listener::default();
    let client = listener.clone().serve(client_side).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    let file = tools
        .iter()
        .find(|t| t.name == "file")
        .expect("file listed");
    assert_eq!(
        Value::Object((*file.input_schema).clone()),
        registry.specs()[0].input_schema
    );
    // A title and the spec's hints: `file` writes (so not read-only, may destroy) and stays on
    // this machine.
    assert_eq!(file.title.as_deref(), Some("File"));
    let hints = file.annotations.as_ref().expect("annotations");
    assert_eq!(hints.read_only_hint, Some(false));
    assert_eq!(hints.destructive_hint, Some(true));
    assert_eq!(hints.idempotent_hint, Some(false));
    assert_eq!(hints.open_world_hint, Some(false));

    // An unknown tool is the spec's invalid-params error, with the right call suggested.
    let unknown = client
        .call_tool(CallToolRequestParams::new("read_file").with_arguments(object(json!({}))))
        .await
        .unwrap_err();
    match unknown {
        rmcp::ServiceError::McpError(error) => {
            assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(error.message.contains("read_file"), "{}", error.message);
        }
        other => panic!("not a JSON-RPC error: {other:?}"),
    }

    let note = dir.path().join("note.txt");
    std::fs::write(&note, "hello over mcp\n").unwrap();
    let read = client
        .call_tool(CallToolRequestParams::new("file").with_arguments(object(
            json!({"action": "read", "path": note.to_str().unwrap()}),
        )))
        .await
        .unwrap();
    assert_eq!(read.is_error, Some(false), "{read:?}");
    assert!(
        read.content[0]
            .as_text()
            .unwrap()
            .text
            .contains("hello over mcp")
    );

    // A write needs approval; nobody can give it over MCP, so it is refused and not run.
    let target = dir.path().join("written.txt");
    let write = client
        .call_tool(CallToolRequestParams::new("file").with_arguments(object(
            json!({"action": "write", "path": target.to_str().unwrap(), "content": "x"}),
        )))
        .await
        .unwrap();
    assert_eq!(write.is_error, Some(true));
    let text = &write.content[0].as_text().unwrap().text;
    assert!(text.contains("cannot be approved"), "{text}");
    assert!(!target.exists());

    // A tool registered while connected reaches the client as tools/list_changed.
    let changed = listener.changed.notified();
    registry.unregister("file");
    tokio::time::timeout(DEADLINE, changed)
        .await
        .expect("tools/list_changed after a tool left");
    assert!(client.list_all_tools().await.unwrap().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_server_hands_questions_to_its_approver_when_it_has_one() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(Level::Allowlist, &dir.path().join("data"));
    let approver = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_side);
    let options = McpServerOptions {
        approver: Some(approver.clone()),
        ..McpServerOptions::default()
    };
    tokio::spawn(McpServer::new(registry, options).serve_io(read, write));
    let client = ().serve(client_side).await.unwrap();
    let target = dir.path().join("approved.txt");
    let result = client
        .call_tool(CallToolRequestParams::new("file").with_arguments(object(
            json!({"action": "write", "path": target.to_str().unwrap(), "content": "ok"}),
        )))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(approver.count(), 1);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "ok");
    client.cancel().await.unwrap();
}

fn fast_options() -> McpClientOptions {
    McpClientOptions {
        connect_timeout: Duration::from_secs(20),
        ping_interval: Duration::from_millis(200),
        ping_timeout: Duration::from_secs(2),
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(400),
    }
}

#[tokio::test]
async fn stdio_server_tools_come_work_follow_changes_and_go_with_the_process() {
    let echo = osprey_tests::fixture_binary("osprey-fixture-mcp-echo");
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(Level::Allowlist, &dir.path().join("data"));
    let servers: McpServers = [(
        "echo".to_string(),
        McpServerConfig {
            command: Some(echo.display().to_string()),
            ..McpServerConfig::default()
        },
    )]
    .into();
    let clients = McpClients::start(&registry, &servers, fast_options());
    wait_until("the echo tools are registered", || {
        registry.get("mcp__echo__echo").is_some()
    })
    .await;
    for name in ["mcp__echo__pid", "mcp__echo__image", "mcp__echo__grow"] {
        assert!(registry.get(name).is_some(), "{name} missing");
    }
    assert_eq!(clients.status()[0].state, ServerState::Connected);
    // The built-in tool is still reached by its MCP-prefixed name.
    assert!(registry.get("file").is_some());

    // Remote tools need approval: with nobody to ask, refused...
    let ctx = ToolContext::new(Origin::User, DEADLINE);
    let refused = registry
        .execute(&ctx, "mcp__echo__echo", json!({"text": "hi"}))
        .await;
    assert_eq!(refused.code, Some(ErrorCode::PolicyDenied), "{refused:?}");
    // ...and with an approver, asked and run on the server.
    let approver = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let ctx = ToolContext::new(Origin::User, DEADLINE).with_approver(approver.clone());
    let echoed = registry
        .execute(&ctx, "mcp__echo__echo", json!({"text": "hi"}))
        .await;
    assert_eq!(echoed.text_content(), "echo: hi", "{echoed:?}");
    assert_eq!(approver.count(), 1);

    let image = registry.execute(&ctx, "mcp__echo__image", json!({})).await;
    assert!(
        matches!(&image.content[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/png"),
        "{image:?}"
    );
    let failed = registry.execute(&ctx, "mcp__echo__fail", json!({})).await;
    assert!(failed.is_error);
    assert_eq!(failed.text_content(), "it failed, as asked");

    // tools/list_changed from the server adds the new tool.
    registry.execute(&ctx, "mcp__echo__grow", json!({})).await;
    wait_until("`extra` appears after `grow`", || {
        registry.get("mcp__echo__extra").is_some()
    })
    .await;

    // Killing the server removes its tools; the client reconnects and they come back.
    let pid: i32 = registry
        .execute(&ctx, "mcp__echo__pid", json!({}))
        .await
        .text_content()
        .parse()
        .unwrap();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    wait_until("the echo tools are gone", || {
        registry.get("mcp__echo__echo").is_none() && registry.get("mcp__echo__extra").is_none()
    })
    .await;
    wait_until("the echo tools are back after a reconnect", || {
        registry.get("mcp__echo__echo").is_some()
    })
    .await;
    let new_pid: i32 = registry
        .execute(&ctx, "mcp__echo__pid", json!({}))
        .await
        .text_content()
        .parse()
        .unwrap();
    assert_ne!(pid, new_pid);
    // A fresh server has not grown.
    assert!(registry.get("mcp__echo__extra").is_none());

    clients.stop().await;
    assert!(registry.get("mcp__echo__echo").is_none());
    assert_eq!(clients.status()[0].state, ServerState::Stopped);
    wait_until("the server process is gone after stop", || {
        !process_alive(new_pid)
    })
    .await;
}

/// Whether a process exists and is not a zombie waiting to be reaped.
fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn misconfigured_and_disabled_servers_are_reported_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(Level::Allowlist, &dir.path().join("data"));
    let servers: McpServers = serde_json::from_value(json!({
        "broken": {"url": "ftp://example.com"},
        "off": {"command": "does-not-matter", "enabled": false},
        "missing": {"command": "/nonexistent/osprey-mcp-server"}
    }))
    .unwrap();
    let clients = McpClients::start(&registry, &servers, fast_options());
    let status = clients.status();
    assert!(
        matches!(&status[0].state, ServerState::Invalid { error } if error.contains("http://"))
    );
    assert_eq!(status[2].state, ServerState::Disabled);
    wait_until("the missing program is reported", || {
        matches!(&clients.status()[1].state, ServerState::Retrying { error, .. } if error.contains("cannot start"))
    })
    .await;
    clients.stop().await;
}

#[tokio::test]
async fn http_server_tools_come_work_and_go_with_the_server() {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    use tokio_util::sync::CancellationToken;

    let dir = tempfile::tempdir().unwrap();
    // The remote side: Osprey's own server over a registry of its own, on loopback.
    let remote = registry(Level::Allowlist, &dir.path().join("remote-data"));
    let stop = CancellationToken::new();
    let service = StreamableHttpService::new(
        {
            let remote = remote.clone();
            move || Ok(McpServer::new(remote.clone(), McpServerOptions::default()))
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.clone()),
    );
    let seen_headers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let app = axum::Router::new().nest_service("/mcp", service).layer(
        axum::middleware::from_fn_with_state(seen_headers.clone(), record_test_header),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });

    let local = registry(Level::Allowlist, &dir.path().join("local-data"));
    local.set_approver(Some(Arc::new(FixedApprover::new(ApprovalAnswer::Once))));
    let servers: McpServers = serde_json::from_value(json!({
        "remote": {
            "url": format!("http://{address}/mcp"),
            "headers": {"X-Osprey-Test": "from ${CARGO_PKG_NAME}"}
        }
    }))
    .unwrap();
    let clients = McpClients::start(&local, &servers, fast_options());
    wait_until("the remote file tool is registered", || {
        local.get("mcp__remote__file").is_some()
    })
    .await;

    // Configured headers go with the requests, `${NAME}` taken from the environment.
    assert!(
        seen_headers
            .lock()
            .unwrap()
            .iter()
            .any(|v| v == "from osprey-agent"),
        "{seen_headers:?}"
    );

    let note = dir.path().join("remote-note.txt");
    std::fs::write(&note, "read over streamable http").unwrap();
    let ctx = ToolContext::new(Origin::User, DEADLINE);
    let read = local
        .execute(
            &ctx,
            "mcp__remote__file",
            json!({"action": "read", "path": note.to_str().unwrap()}),
        )
        .await;
    assert!(!read.is_error, "{read:?}");
    assert!(read.text_content().contains("read over streamable http"));
    // The remote registry's own rules held: a write there is still refused.
    let write = local
        .execute(
            &ctx,
            "mcp__remote__file",
            json!({"action": "write", "path": dir.path().join("w").to_str().unwrap(), "content": "x"}),
        )
        .await;
    assert!(write.is_error);
    assert!(
        write.text_content().contains("cannot be approved"),
        "{write:?}"
    );
    // Tools the remote side registers later follow through tools/list_changed.
    remote.unregister("file");
    wait_until(
        "the remote file tool leaves with the remote registry's",
        || local.get("mcp__remote__file").is_none(),
    )
    .await;
    remote.register_domain(FileTool::new(PathGuard::new(
        None,
        dir.path().join("remote-data"),
    )));
    wait_until("the remote file tool is back", || {
        local.get("mcp__remote__file").is_some()
    })
    .await;

    // Stopping the server makes the tools disappear.
    stop.cancel();
    server.abort();
    let _ = server.await;
    wait_until("the remote tools are gone after the server stopped", || {
        local.get("mcp__remote__file").is_none()
    })
    .await;
    assert!(matches!(
        clients.status()[0].state,
        ServerState::Retrying { .. } | ServerState::Connecting
    ));
    clients.stop().await;
}

/// Records the `X-Osprey-Test` header of every request the loopback MCP server receives.
async fn record_test_header(
    axum::extract::State(seen): axum::extract::State<Arc<std::sync::Mutex<Vec<String>>>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if let Some(value) = request.headers().get("x-osprey-test") {
        seen.lock()
            .unwrap()
            .push(value.to_str().unwrap_or_default().to_string());
    }
    next.run(request).await
}
