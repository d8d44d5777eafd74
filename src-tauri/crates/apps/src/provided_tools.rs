//! A tool app's tools in the registry: each `tool:NAME` the manifest declares and the app serves
//! becomes an [`AppTool`] that forwards calls over gRPC. Every call still goes through the
//! registry's whole chain (hooks, origin rules, approval, safeguard); app tools always need the
//! approval policy's say, since Osprey cannot see what they do.
//!
//! An app whose account token the provider refused answers with the error code
//! [`TOKEN_EXPIRED`]: when the core gave a [`TokenRefresher`], the account is refreshed (and the
//! new token pushed with `Configure`) and the call is made once more.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures::future::BoxFuture;
use osprey_rpc::AppChannel;
use osprey_rpc::v1::tool_service_client::ToolServiceClient;
use osprey_rpc::v1::{CallContext, ExecuteRequest, NameRequest, ToolRequest, content_block};
use osprey_tools::{ApprovalNeed, Call, CallFacts, Registry, Tool, ToolContext};
use osprey_types::{ContentBlock, ErrorCode, ToolResult};
use serde_json::Value;

use crate::manifest::Manifest;
use crate::{Error, Result};

/// How long registration waits for each of Name, Description and Schema.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The error code an app answers when the provider refused its account's access token.
pub const TOKEN_EXPIRED: &str = "token_expired";

/// Refreshes an app's account now and pushes the new token; true when a new one was pushed.
pub type TokenRefresher = Arc<dyn Fn(String) -> BoxFuture<'static, bool> + Send + Sync>;

/// One tool served by an app.
pub struct AppTool {
    app_id: String,
    name: String,
    description: String,
    schema: Value,
    client: ToolServiceClient<AppChannel>,
    refresher: Option<TokenRefresher>,
}

/// What registering an app's tools did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolRegistration {
    pub registered: Vec<String>,
    /// (name, reason) of each tool refused.
    pub refused: Vec<(String, String)>,
}

/// Asks the app for its tools and registers each one the manifest declares whose name is free
/// (an app can never replace a built-in tool or another app's). Tools this app registered before
/// are replaced.
pub async fn register_tools(
    registry: &Registry,
    manifest: &Manifest,
    channel: AppChannel,
    previous: &[String],
) -> Result<ToolRegistration> {
    register_tools_with(registry, manifest, channel, previous, None).await
}

/// [`register_tools`], with the refresher that answers [`TOKEN_EXPIRED`] (apps with an
/// `oauth` block only).
pub async fn register_tools_with(
    registry: &Registry,
    manifest: &Manifest,
    channel: AppChannel,
    previous: &[String],
    refresher: Option<TokenRefresher>,
) -> Result<ToolRegistration> {
    let refresher = refresher.filter(|_| manifest.oauth.is_some());
    let app_id = manifest.id.as_str();
    let mut client = ToolServiceClient::new(channel);
    let names = ask(app_id, client.name(NameRequest {})).await?.names;
    for name in previous {
        registry.unregister(name);
    }
    let mut registration = ToolRegistration::default();
    for name in names {
        if !manifest.tools().any(|declared| declared == name) {
            registration.refused.push((
                name.clone(),
                format!("not declared as `tool:{name}` in the manifest"),
            ));
            continue;
        }
        if registry.get(&name).is_some() {
            registration
                .refused
                .push((name.clone(), "a tool with this name already exists".into()));
            continue;
        }
        let request = || ToolRequest { tool: name.clone() };
        let description = ask(app_id, client.description(request()))
            .await?
            .description;
        let schema_json = ask(app_id, client.schema(request())).await?.schema_json;
        let schema = match serde_json::from_str::<Value>(&schema_json) {
            Ok(schema) if schema.is_object() => schema,
            _ => {
                registration
                    .refused
                    .push((name.clone(), "its schema is not a JSON object".into()));
                continue;
            }
        };
        registry.register(Arc::new(AppTool {
            app_id: app_id.to_owned(),
            name: name.clone(),
            description,
            schema,
            client: client.clone(),
            refresher: refresher.clone(),
        }));
        registration.registered.push(name);
    }
    Ok(registration)
}

async fn ask<T>(
    app_id: &str,
    call: impl Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T> {
    let unavailable = |message: String| Error::LaunchFailed {
        id: app_id.to_owned(),
        reason: "tools_unavailable",
        message,
    };
    tokio::time::timeout(DESCRIBE_TIMEOUT, call)
        .await
        .map_err(|_| unavailable("no answer".into()))?
        .map(tonic::Response::into_inner)
        .map_err(|status| unavailable(status.to_string()))
}

impl AppTool {
    pub fn app_id(&self) -> &str {
        &self.app_id
    }

    async fn run(&self, ctx: &ToolContext, call: Call) -> ToolResult {
        let input = Value::Object(call.input).to_string();
        let result = self.run_once(ctx, &input).await;
        if !result.token_expired {
            return result.result;
        }
        let refreshed = match &self.refresher {
            Some(refresh) => refresh(self.app_id.clone()).await,
            None => false,
        };
        if refreshed {
            // The app has its new token: the same call once more.
            return self.run_once(ctx, &input).await.result;
        }
        let mut result = result.result;
        result.content.push(ContentBlock::Text {
            text: format!(
                "(the app's account token was refused and could not be refreshed: the person \
                 may need to connect {} again on the Apps page)",
                self.app_id
            ),
        });
        result
    }

    async fn run_once(&self, ctx: &ToolContext, input: &str) -> Answer {
        let remaining = ctx.deadline.saturating_duration_since(Instant::now());
        let request = ExecuteRequest {
            tool: self.name.clone(),
            input_json: input.to_string(),
            context: Some(CallContext {
                origin: ctx.origin.as_str().to_owned(),
                session_id: ctx.session_id.clone().unwrap_or_default(),
                call_id: ctx.call_id.clone(),
                deadline_ms: u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX),
            }),
        };
        let mut request = tonic::Request::new(request);
        request.set_timeout(remaining);
        let mut client = self.client.clone();
        let answer = tokio::select! {
            answer = tokio::time::timeout(remaining, client.execute(request)) => answer,
            () = ctx.cancel.cancelled() => {
                return ToolResult::error(ErrorCode::Cancelled, "cancelled").into();
            }
        };
        let response = match answer {
            Err(_) => {
                return ToolResult::error(
                    ErrorCode::Timeout,
                    format!("app `{}` did not answer in time", self.app_id),
                )
                .into();
            }
            // tonic's own timeout (from `set_timeout`) can fire a moment before ours; a failure
            // at or past the deadline is the deadline's doing.
            Ok(Err(status))
                if status.code() == tonic::Code::DeadlineExceeded
                    || Instant::now() >= ctx.deadline =>
            {
                return ToolResult::error(
                    ErrorCode::Timeout,
                    format!("app `{}` did not answer in time", self.app_id),
                )
                .into();
            }
            Ok(Err(status)) => {
                return ToolResult::error(
                    ErrorCode::ToolFailed,
                    format!("app `{}` is unavailable: {}", self.app_id, status.message()),
                )
                .into();
            }
            Ok(Ok(response)) => response.into_inner(),
        };
        let content = response
            .content
            .into_iter()
            .filter_map(|block| match block.block? {
                content_block::Block::Text(text) => Some(ContentBlock::Text { text }),
                content_block::Block::Image(image) => Some(ContentBlock::Image {
                    mime_type: image.mime_type,
                    data: STANDARD.encode(image.data),
                }),
            })
            .collect();
        let token_expired = response.is_error && response.error_code == TOKEN_EXPIRED;
        let code = response.is_error.then(|| {
            serde_json::from_value::<ErrorCode>(Value::String(response.error_code))
                .ok()
                // An app may not claim that a security layer refused its call.
                .filter(|code| !code.is_refusal())
                .unwrap_or(ErrorCode::ToolFailed)
        });
        Answer {
            result: ToolResult {
                content,
                is_error: response.is_error,
                code,
                ..Default::default()
            },
            token_expired,
        }
    }
}

/// One call's result, and whether the app said its account token was refused.
struct Answer {
    result: ToolResult,
    token_expired: bool,
}

impl From<ToolResult> for Answer {
    fn from(result: ToolResult) -> Answer {
        Answer {
            result,
            token_expired: false,
        }
    }
}

impl Tool for AppTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn schema(&self) -> &Value {
        &self.schema
    }
    fn facts(&self, _call: &Call) -> CallFacts {
        CallFacts {
            approval: ApprovalNeed::Required,
            summary: format!("{} (app `{}`)", self.name, self.app_id),
            app: Some(self.app_id.clone()),
            ..CallFacts::default()
        }
    }
    fn execute<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.run(ctx, call))
    }
}
