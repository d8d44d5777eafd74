//! Tools: what an author declares, and the `ToolService` that serves them.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_rpc::v1::tool_service_server::ToolService;
use osprey_rpc::v1::{
    ConfigureRequest, ConfigureResponse, ContentBlock, DescriptionResponse, ExecuteRequest,
    ExecuteResponse, HealthCheckRequest, HealthCheckResponse, Image, NameRequest, NameResponse,
    RequiresApprovalRequest, RequiresApprovalResponse, SchemaResponse, ToolRequest, content_block,
    health_check_response,
};
use serde_json::Value;
use tonic::{Request, Response, Status};

type Handler = Arc<dyn Fn(Call) -> BoxFuture<'static, Output> + Send + Sync>;
type ApprovalCheck = Arc<dyn Fn(&Value) -> Option<String> + Send + Sync>;

/// One tool an app serves. Its name must be declared as `tool:NAME` in the manifest.
pub struct Tool {
    pub(crate) name: String,
    description: String,
    schema: Value,
    approval: Option<ApprovalCheck>,
    handler: Option<Handler>,
}

impl Tool {
    /// `schema` is the JSON Schema of the input object.
    pub fn new(name: impl Into<String>, description: impl Into<String>, schema: Value) -> Tool {
        Tool {
            name: name.into(),
            description: description.into(),
            schema,
            approval: None,
            handler: None,
        }
    }

    /// What the tool does when called. Without a handler every call is answered with a
    /// `tool_failed` error.
    pub fn run<F, Fut>(mut self, handler: F) -> Tool
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Output> + Send + 'static,
    {
        self.handler = Some(Arc::new(move |call| Box::pin(handler(call))));
        self
    }

    /// Ask for approval on calls where `check` returns a summary for the person. Osprey's own
    /// policy applies on top of this; an app can ask for more approval, never less.
    pub fn approval<F>(mut self, check: F) -> Tool
    where
        F: Fn(&Value) -> Option<String> + Send + Sync + 'static,
    {
        self.approval = Some(Arc::new(check));
        self
    }
}

/// One call of a tool.
#[derive(Clone, Debug)]
pub struct Call {
    pub tool: String,
    /// The input object (`Value::Null` when the input was not valid JSON is never passed: such
    /// calls are answered with `invalid_input` before the handler runs).
    pub input: Value,
    /// The latest settings Osprey pushed with `Configure` (an empty object until then).
    pub settings: Value,
    pub origin: String,
    pub session_id: String,
    pub call_id: String,
    /// How long the call may still take, when Osprey set a deadline.
    pub deadline: Option<Duration>,
}

impl Call {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.input.get(key).and_then(Value::as_str)
    }
    pub fn f64(&self, key: &str) -> Option<f64> {
        self.input.get(key).and_then(Value::as_f64)
    }
    pub fn bool(&self, key: &str) -> Option<bool> {
        self.input.get(key).and_then(Value::as_bool)
    }

    /// The access token of the account the person connected for this app with `provider` (the
    /// manifest's `oauth.provider`), as Osprey last pushed it; `None` while it is not
    /// connected. Osprey refreshes it before it expires and pushes the new one; a call the
    /// provider refuses with it can answer [`Output::token_expired`].
    pub fn access_token(&self, provider: &str) -> Option<&str> {
        self.settings
            .get("osprey")?
            .get("accounts")?
            .get(provider)?
            .get("access_token")?
            .as_str()
    }

    /// The person's app store token, for an app that holds `user:token` (and only then).
    pub fn store_token(&self) -> Option<&str> {
        self.settings.get("osprey")?.get("store_token")?.as_str()
    }
}

/// What a tool call returns. Errors the model can act on are outputs with a stable code, not
/// panics.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    content: Vec<ContentBlock>,
    is_error: bool,
    error_code: String,
}

impl Output {
    pub fn text(text: impl Into<String>) -> Output {
        Output {
            content: vec![text_block(text.into())],
            is_error: false,
            error_code: String::new(),
        }
    }

    /// `value` as pretty-printed JSON text.
    pub fn json(value: &Value) -> Output {
        Output::text(serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()))
    }

    pub fn image(mime_type: impl Into<String>, data: Vec<u8>) -> Output {
        Output {
            content: vec![ContentBlock {
                block: Some(content_block::Block::Image(Image {
                    mime_type: mime_type.into(),
                    data,
                })),
            }],
            is_error: false,
            error_code: String::new(),
        }
    }

    /// An error result with a stable `code` (`invalid_input`, `tool_failed`, or the app's own).
    pub fn error(code: impl Into<String>, message: impl Into<String>) -> Output {
        Output {
            content: vec![text_block(message.into())],
            is_error: true,
            error_code: code.into(),
        }
    }

    fn into_response(self) -> ExecuteResponse {
        ExecuteResponse {
            content: self.content,
            is_error: self.is_error,
            error_code: self.error_code,
        }
    }
}

fn text_block(text: String) -> ContentBlock {
    ContentBlock {
        block: Some(content_block::Block::Text(text)),
    }
}

pub(crate) fn serving() -> HealthCheckResponse {
    HealthCheckResponse {
        status: health_check_response::Status::Serving as i32,
        message: String::new(),
    }
}

/// Serves the declared tools.
pub(crate) struct ToolServer {
    pub(crate) tools: Vec<Tool>,
    pub(crate) settings: Arc<RwLock<Value>>,
}

impl ToolServer {
    #[allow(clippy::result_large_err)] // tonic::Status is what every handler returns
    fn find(&self, name: &str) -> Result<&Tool, Status> {
        if name.is_empty() {
            return self
                .tools
                .first()
                .ok_or_else(|| Status::not_found("this app serves no tools"));
        }
        self.tools
            .iter()
            .find(|tool| tool.name == name)
            .ok_or_else(|| Status::not_found(format!("no tool named `{name}`")))
    }
}

#[tonic::async_trait]
impl ToolService for ToolServer {
    async fn name(&self, _: Request<NameRequest>) -> Result<Response<NameResponse>, Status> {
        Ok(Response::new(NameResponse {
            names: self.tools.iter().map(|tool| tool.name.clone()).collect(),
        }))
    }

    async fn description(
        &self,
        request: Request<ToolRequest>,
    ) -> Result<Response<DescriptionResponse>, Status> {
        let tool = self.find(&request.get_ref().tool)?;
        Ok(Response::new(DescriptionResponse {
            description: tool.description.clone(),
        }))
    }

    async fn schema(
        &self,
        request: Request<ToolRequest>,
    ) -> Result<Response<SchemaResponse>, Status> {
        let tool = self.find(&request.get_ref().tool)?;
        Ok(Response::new(SchemaResponse {
            schema_json: tool.schema.to_string(),
        }))
    }

    async fn requires_approval(
        &self,
        request: Request<RequiresApprovalRequest>,
    ) -> Result<Response<RequiresApprovalResponse>, Status> {
        let request = request.into_inner();
        let tool = self.find(&request.tool)?;
        let input: Value = serde_json::from_str(&request.input_json)
            .map_err(|e| Status::invalid_argument(format!("input is not JSON: {e}")))?;
        let summary = tool.approval.as_ref().and_then(|check| check(&input));
        Ok(Response::new(RequiresApprovalResponse {
            required: summary.is_some(),
            summary: summary.unwrap_or_default(),
        }))
    }

    async fn execute(
        &self,
        request: Request<ExecuteRequest>,
    ) -> Result<Response<ExecuteResponse>, Status> {
        let request = request.into_inner();
        let tool = self.find(&request.tool)?;
        let output = match serde_json::from_str::<Value>(&request.input_json) {
            Err(e) => Output::error("invalid_input", format!("input is not JSON: {e}")),
            Ok(input) if !input.is_object() => {
                Output::error("invalid_input", "input must be a JSON object")
            }
            Ok(input) => match &tool.handler {
                None => Output::error("tool_failed", format!("`{}` has no handler", tool.name)),
                Some(handler) => {
                    let context = request.context.unwrap_or_default();
                    let settings = self.settings.read().map(|s| s.clone()).unwrap_or_default();
                    handler(Call {
                        tool: tool.name.clone(),
                        input,
                        settings,
                        origin: context.origin,
                        session_id: context.session_id,
                        call_id: context.call_id,
                        deadline: (context.deadline_ms > 0)
                            .then(|| Duration::from_millis(context.deadline_ms)),
                    })
                    .await
                }
            },
        };
        Ok(Response::new(output.into_response()))
    }

    async fn health_check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(serving()))
    }

    async fn configure(
        &self,
        request: Request<ConfigureRequest>,
    ) -> Result<Response<ConfigureResponse>, Status> {
        Ok(Response::new(configure(
            &self.settings,
            request.into_inner(),
        )))
    }
}

/// Keeps pushed settings; anything but a JSON object is refused with a message for the person.
pub(crate) fn configure(settings: &RwLock<Value>, request: ConfigureRequest) -> ConfigureResponse {
    match serde_json::from_str::<Value>(&request.settings_json) {
        Ok(value) if value.is_object() => {
            if let Ok(mut current) = settings.write() {
                *current = value;
            }
            ConfigureResponse::default()
        }
        Ok(_) => ConfigureResponse {
            error: "settings must be a JSON object".into(),
        },
        Err(e) => ConfigureResponse {
            error: format!("settings are not JSON: {e}"),
        },
    }
}
