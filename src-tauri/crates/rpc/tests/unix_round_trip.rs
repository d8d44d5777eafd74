//! The generated ToolService over a real Unix socket: serve, dial, call, and the socket rules.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::time::Duration;

use osprey_rpc::v1::tool_service_client::ToolServiceClient;
use osprey_rpc::v1::tool_service_server::{ToolService, ToolServiceServer};
use osprey_rpc::v1::{
    ConfigureRequest, ConfigureResponse, ContentBlock, DescriptionResponse, ExecuteRequest,
    ExecuteResponse, HealthCheckRequest, HealthCheckResponse, NameRequest, NameResponse,
    RequiresApprovalRequest, RequiresApprovalResponse, SchemaResponse, ToolRequest, content_block,
    health_check_response,
};
use tonic::{Request, Response, Status};

struct Echo;

#[tonic::async_trait]
impl ToolService for Echo {
    async fn name(&self, _: Request<NameRequest>) -> Result<Response<NameResponse>, Status> {
        Ok(Response::new(NameResponse {
            names: vec!["echo".into()],
        }))
    }
    async fn description(
        &self,
        _: Request<ToolRequest>,
    ) -> Result<Response<DescriptionResponse>, Status> {
        Ok(Response::new(DescriptionResponse {
            description: "echoes its input".into(),
        }))
    }
    async fn schema(&self, _: Request<ToolRequest>) -> Result<Response<SchemaResponse>, Status> {
        Ok(Response::new(SchemaResponse {
            schema_json: r#"{"type":"object"}"#.into(),
        }))
    }
    async fn requires_approval(
        &self,
        _: Request<RequiresApprovalRequest>,
    ) -> Result<Response<RequiresApprovalResponse>, Status> {
        Ok(Response::new(RequiresApprovalResponse::default()))
    }
    async fn execute(
        &self,
        request: Request<ExecuteRequest>,
    ) -> Result<Response<ExecuteResponse>, Status> {
        let request = request.into_inner();
        Ok(Response::new(ExecuteResponse {
            content: vec![ContentBlock {
                block: Some(content_block::Block::Text(format!(
                    "{}:{}",
                    request.tool, request.input_json
                ))),
            }],
            is_error: false,
            error_code: String::new(),
        }))
    }
    async fn health_check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(HealthCheckResponse {
            status: health_check_response::Status::Serving as i32,
            message: String::new(),
        }))
    }
    async fn configure(
        &self,
        _: Request<ConfigureRequest>,
    ) -> Result<Response<ConfigureResponse>, Status> {
        Ok(Response::new(ConfigureResponse::default()))
    }
}

fn serve(listener: tokio::net::UnixListener) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(ToolServiceServer::new(Echo))
            .serve_with_incoming_shutdown(osprey_rpc::incoming(listener), async {
                let _ = stopped.await;
            })
            .await
            .expect("server");
    });
    stop
}

#[tokio::test]
async fn tool_call_round_trips_over_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.sock");
    let listener = osprey_rpc::bind(&path).unwrap();
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let _stop = serve(listener);

    let channel =
        osprey_rpc::connect_checked(&path, Some(std::process::id()), Duration::from_secs(5))
            .await
            .unwrap();
    let mut client = ToolServiceClient::new(channel);
    let names = client
        .name(NameRequest {})
        .await
        .unwrap()
        .into_inner()
        .names;
    assert_eq!(names, ["echo"]);
    let health = client
        .health_check(HealthCheckRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(health.status(), health_check_response::Status::Serving);
    let result = client
        .execute(ExecuteRequest {
            tool: "echo".into(),
            input_json: r#"{"x":1.5}"#.into(),
            context: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        result.content[0].block,
        Some(content_block::Block::Text(r#"echo:{"x":1.5}"#.into()))
    );
}

#[tokio::test]
async fn a_socket_served_by_another_pid_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.sock");
    let _stop = serve(osprey_rpc::bind(&path).unwrap());
    let error =
        osprey_rpc::connect_checked(&path, Some(std::process::id() + 1), Duration::from_secs(5))
            .await
            .unwrap_err();
    assert_eq!(error.code(), "peer_mismatch", "{error}");
}

#[tokio::test]
async fn bind_replaces_a_stale_socket_but_not_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.sock");
    drop(osprey_rpc::bind(&path).unwrap());
    // The listener is gone but its socket file stays: a later bind removes it.
    assert!(path.exists());
    drop(osprey_rpc::bind(&path).unwrap());

    let file = dir.path().join("not-a-socket");
    std::fs::write(&file, "keep me").unwrap();
    let error = osprey_rpc::bind(&file).unwrap_err();
    assert_eq!(error.code(), "socket_io");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");

    let link = dir.path().join("link.sock");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    assert!(osprey_rpc::bind(&link).is_err());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
}

#[tokio::test]
async fn connecting_to_a_missing_socket_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let error = osprey_rpc::connect(&dir.path().join("absent.sock"), Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "transport");
}
