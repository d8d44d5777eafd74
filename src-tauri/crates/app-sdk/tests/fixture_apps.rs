//! The SDK as an author uses it: the fixture apps under `tests/fixtures/` run as real processes,
//! serve on the socket named by `OSPREY_APP_SOCK`, answer calls over it, and exit cleanly on
//! SIGTERM, removing their socket.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use osprey_rpc::v1::hook_service_client::HookServiceClient;
use osprey_rpc::v1::tool_service_client::ToolServiceClient;
use osprey_rpc::v1::{
    ActionRequest, CallContext, ConfigureRequest, ExecuteRequest, FilterRequest,
    HealthCheckRequest, ListHooksRequest, NameRequest, ToolRequest, content_block,
    health_check_response, hook_subscription,
};
use serde_json::{Value, json};
use tonic::transport::Channel;

const DEADLINE: Duration = Duration::from_secs(20);

use osprey_tests::fixture_binary;

/// A fixture app running with a clean environment; killed on drop if a test fails midway.
struct RunningApp {
    child: Child,
    socket: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl RunningApp {
    fn start(package: &str) -> RunningApp {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("app.sock");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let child = Command::new(fixture_binary(package))
            .env_clear()
            .env("OSPREY_APP_SOCK", &socket)
            .env("OSPREY_APP_DATA", &data)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let mut app = RunningApp {
            child,
            socket,
            data,
            _dir: dir,
        };
        let started = Instant::now();
        while !app.socket.exists() {
            if let Some(status) = app.child.try_wait().unwrap() {
                panic!("{package} exited before serving: {status}");
            }
            assert!(
                started.elapsed() < DEADLINE,
                "{package} never bound its socket"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        app
    }

    async fn channel(&self) -> Channel {
        osprey_rpc::connect_checked(&self.socket, Some(self.child.id()), DEADLINE)
            .await
            .unwrap()
    }

    /// SIGTERM, then the exit status, failing the test if it takes longer than the deadline.
    fn terminate(&mut self) -> ExitStatus {
        let pid = Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        kill(pid, Signal::SIGTERM).unwrap();
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(started.elapsed() < DEADLINE, "app ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for RunningApp {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn text(response: &osprey_rpc::v1::ExecuteResponse) -> String {
    match &response.content[0].block {
        Some(content_block::Block::Text(text)) => text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

async fn convert(client: &mut ToolServiceClient<Channel>, input: Value) -> (bool, String, String) {
    let response = client
        .execute(ExecuteRequest {
            tool: "convert".into(),
            input_json: input.to_string(),
            context: Some(CallContext {
                origin: "user".into(),
                call_id: "c1".into(),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    (
        response.is_error,
        response.error_code.clone(),
        text(&response),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_app_serves_calls_and_exits_cleanly_on_sigterm() {
    let mut app = RunningApp::start("osprey-fixture-unit-converter");
    let mut client = ToolServiceClient::new(app.channel().await);

    let health = client.health_check(HealthCheckRequest {}).await.unwrap();
    assert_eq!(
        health.into_inner().status(),
        health_check_response::Status::Serving
    );
    let names = client
        .name(NameRequest {})
        .await
        .unwrap()
        .into_inner()
        .names;
    assert_eq!(names, ["convert"]);
    let schema = client
        .schema(ToolRequest {
            tool: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .schema_json;
    let schema: Value = serde_json::from_str(&schema).unwrap();
    assert_eq!(schema["required"], json!(["value", "from", "to"]));

    let (is_error, _, answer) =
        convert(&mut client, json!({"value": 5, "from": "km", "to": "mi"})).await;
    assert!(!is_error, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let miles = answer["value"].as_f64().unwrap();
    assert!((miles - 3.106_855_96).abs() < 1e-6, "{miles}");
    let (_, _, answer) = convert(&mut client, json!({"value": 100, "from": "C", "to": "F"})).await;
    let fahrenheit = serde_json::from_str::<Value>(&answer).unwrap()["value"]
        .as_f64()
        .unwrap();
    assert!((fahrenheit - 212.0).abs() < 1e-9);

    let (is_error, code, message) =
        convert(&mut client, json!({"value": 1, "from": "kg", "to": "km"})).await;
    assert!(is_error);
    assert_eq!(code, "invalid_input");
    assert!(message.contains("cannot convert mass"), "{message}");
    let (is_error, code, _) = convert(&mut client, json!({"from": "kg"})).await;
    assert!(is_error);
    assert_eq!(code, "invalid_input");

    // Not JSON at all: refused before the handler runs.
    let response = client
        .execute(ExecuteRequest {
            tool: "convert".into(),
            input_json: "{not json".into(),
            context: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(response.is_error);
    assert_eq!(response.error_code, "invalid_input");
    // Unknown tool: a NotFound status.
    let status = client
        .description(ToolRequest {
            tool: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);

    let configured = client
        .configure(ConfigureRequest {
            settings_json: r#"{"precision": 3}"#.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(configured.error, "");
    let refused = client
        .configure(ConfigureRequest {
            settings_json: "[1]".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(refused.error.contains("JSON object"), "{}", refused.error);

    drop(client);
    let status = app.terminate();
    assert!(status.success(), "exit status {status}");
    assert!(!app.socket.exists(), "socket left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_app_filters_and_records_actions() {
    let mut app = RunningApp::start("osprey-fixture-hooks-app");
    let mut client = HookServiceClient::new(app.channel().await);

    let hooks = client
        .list_hooks(ListHooksRequest {})
        .await
        .unwrap()
        .into_inner()
        .hooks;
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0].hook, "tool.pre_execute");
    assert_eq!(hooks[0].kind(), hook_subscription::Kind::Filter);
    assert_eq!(hooks[0].priority, 5);
    assert_eq!(hooks[1].hook, "session.message_append");
    assert_eq!(hooks[1].kind(), hook_subscription::Kind::Action);

    let filter = |payload: Value| FilterRequest {
        hook: "tool.pre_execute".into(),
        payload_json: payload.to_string(),
    };
    let handled = client
        .apply_filter(filter(json!({
            "tool": "shell", "input": {"command": "echo forbidden"}, "origin": "user"
        })))
        .await
        .unwrap()
        .into_inner();
    assert!(handled.handled);
    let payload: Value = serde_json::from_str(&handled.payload_json).unwrap();
    assert_eq!(payload["result"]["code"], "hook_rejected");

    let rewritten = client
        .apply_filter(filter(json!({"tool": "file", "input": {"path": "/tmp/x"}})))
        .await
        .unwrap()
        .into_inner();
    assert!(!rewritten.handled);
    let payload: Value = serde_json::from_str(&rewritten.payload_json).unwrap();
    assert_eq!(payload["input"]["checked_by"], "hooks-app");
    assert_eq!(payload["input"]["path"], "/tmp/x");

    let unchanged = client
        .apply_filter(filter(json!({"tool": "file"})))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(unchanged.payload_json, "", "empty means unchanged");

    client
        .do_action(ActionRequest {
            hook: "session.message_append".into(),
            payload_json: json!({"session_id": "s1", "text": "hi"}).to_string(),
        })
        .await
        .unwrap();
    let recorded = std::fs::read_to_string(app.data.join("actions.jsonl")).unwrap();
    let line: Value = serde_json::from_str(recorded.trim()).unwrap();
    assert_eq!(line["text"], "hi");

    let status = client
        .apply_filter(FilterRequest {
            hook: "tool.post_execute".into(),
            payload_json: "{}".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    let status = client
        .apply_filter(FilterRequest {
            hook: "tool.pre_execute".into(),
            payload_json: "{oops".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);

    drop(client);
    let status = app.terminate();
    assert!(status.success(), "exit status {status}");
    assert!(!app.socket.exists());
}

#[test]
fn an_app_started_without_its_socket_variable_says_so_and_fails() {
    let output = Command::new(fixture_binary("osprey-fixture-unit-converter"))
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("missing_socket_env"), "{stderr}");
}

/// The client's runtime is blocked while the app shuts down, so the HTTP/2 close is never
/// acknowledged: the app must still exit, within its drain limit.
#[tokio::test(flavor = "current_thread")]
async fn an_unresponsive_client_does_not_hold_the_app_past_its_grace() {
    let mut app = RunningApp::start("osprey-fixture-unit-converter");
    let mut client = ToolServiceClient::new(app.channel().await);
    client.name(NameRequest {}).await.unwrap();
    let started = Instant::now();
    let status = app.terminate();
    let elapsed = started.elapsed();
    assert!(status.success(), "exit status {status}");
    assert!(
        elapsed >= osprey_app_sdk::SHUTDOWN_GRACE / 2 && elapsed < Duration::from_secs(2),
        "exited after {elapsed:?}"
    );
    assert!(!app.socket.exists());
    drop(client);
}
