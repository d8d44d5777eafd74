//! The SDK's serve loop inside a test process: graceful shutdown on a signal future, and the
//! refusals that need no child process.

use std::time::Duration;

use osprey_app_sdk::{App, Output, Tool};
use osprey_rpc::v1::tool_service_client::ToolServiceClient;
use osprey_rpc::v1::{ExecuteRequest, RequiresApprovalRequest, content_block};
use serde_json::json;

#[tokio::test]
async fn serve_at_answers_until_shutdown_then_removes_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("app.sock");
    let app = App::new().tool(
        Tool::new("shout", "Upper-cases text", json!({"type": "object"}))
            .approval(|input| {
                input["text"]
                    .as_str()
                    .filter(|text| text.len() > 10)
                    .map(|text| format!("shout {} characters", text.len()))
            })
            .run(|call| async move {
                let settings_suffix = call.settings["suffix"].as_str().unwrap_or("").to_owned();
                Output::text(format!(
                    "{}{settings_suffix} ({})",
                    call.str("text").unwrap_or("").to_uppercase(),
                    call.origin
                ))
            }),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn({
        let socket = socket.clone();
        async move {
            app.serve_at(&socket, async {
                let _ = stopped.await;
            })
            .await
        }
    });

    let started = std::time::Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let channel = osprey_rpc::connect(&socket, Duration::from_secs(5))
        .await
        .unwrap();
    let mut client = ToolServiceClient::new(channel);
    client
        .configure(osprey_rpc::v1::ConfigureRequest {
            settings_json: r#"{"suffix": "!"}"#.into(),
        })
        .await
        .unwrap();
    let response = client
        .execute(ExecuteRequest {
            tool: String::new(),
            input_json: json!({"text": "hey"}).to_string(),
            context: Some(osprey_rpc::v1::CallContext {
                origin: "skill".into(),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        response.content[0].block,
        Some(content_block::Block::Text("HEY! (skill)".into()))
    );
    let short = client
        .requires_approval(RequiresApprovalRequest {
            tool: "shout".into(),
            input_json: json!({"text": "hey"}).to_string(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!short.required);
    let long = client
        .requires_approval(RequiresApprovalRequest {
            tool: "shout".into(),
            input_json: json!({"text": "a long piece of text"}).to_string(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(long.required);
    assert_eq!(long.summary, "shout 20 characters");

    drop(client);
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("serve_at returned after shutdown")
        .unwrap()
        .unwrap();
    assert!(!socket.exists());
}

#[tokio::test]
async fn an_app_with_nothing_to_serve_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let error = App::new()
        .serve_at(&dir.path().join("app.sock"), async {})
        .await
        .unwrap_err();
    assert_eq!(error.code(), "nothing_to_serve");
    assert!(!dir.path().join("app.sock").exists());
}
