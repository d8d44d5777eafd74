//! The MCP server: a [`Registry`] seen by an MCP client. `tools/list` is the registry's schemas;
//! `tools/call` is `Registry::execute` with origin `mcp` and a deadline. Approval questions go
//! to the approver the server was given, and with none (`osprey mcp serve`) a call that needs
//! approval is refused and not run: an MCP client cannot approve its own calls.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use osprey_tools::{Approver, Registry, ToolContext};
use osprey_types::{ApprovalAnswer, ApprovalRequest, ErrorCode, Origin, ToolResult};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool as McpTool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::to_mcp_result;

/// How the server runs calls.
#[derive(Clone)]
pub struct McpServerOptions {
    /// Each call's deadline.
    pub call_timeout: Duration,
    /// Who answers approval questions; `None` refuses every call that needs approval.
    pub approver: Option<Arc<dyn Approver>>,
}

impl Default for McpServerOptions {
    fn default() -> Self {
        McpServerOptions {
            call_timeout: Duration::from_secs(600),
            approver: None,
        }
    }
}

/// One MCP connection's view of the registry. Build one per connection.
#[derive(Clone)]
pub struct McpServer {
    registry: Registry,
    options: McpServerOptions,
    /// Woken by the registry when tools come or go; the connection then tells its client.
    changes: Arc<Notify>,
    forwarding: Arc<AtomicBool>,
    /// Cancelled when the last clone of this connection's server is dropped (the connection
    /// ended), so the forwarding task does not outlive it.
    ended: CancellationToken,
    _end_guard: Arc<DropGuard>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").finish_non_exhaustive()
    }
}

impl McpServer {
    pub fn new(registry: Registry, options: McpServerOptions) -> Self {
        let changes = Arc::new(Notify::new());
        let weak: Weak<Notify> = Arc::downgrade(&changes);
        // The registry keeps its listeners for good; a weak handle lets a closed connection's
        // listener fall silent.
        registry.on_change(move |_| {
            if let Some(changes) = weak.upgrade() {
                changes.notify_one();
            }
        });
        let ended = CancellationToken::new();
        McpServer {
            registry,
            options,
            changes,
            forwarding: Arc::new(AtomicBool::new(false)),
            _end_guard: Arc::new(ended.clone().drop_guard()),
            ended,
        }
    }

    /// Serves one client over a byte stream pair (stdin/stdout, a duplex in tests) until it
    /// disconnects. Every line passes the JSON-RPC [`gate`](super::gate) first, so a malformed
    /// message is answered with the specification's code and its own `id` and never ends the
    /// session.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> crate::Result<()>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (server_side, gate_side) = tokio::io::duplex(256 * 1024);
        let (from_server, to_server) = tokio::io::split(gate_side);
        let gate = tokio::spawn(super::gate::run(read, write, from_server, to_server));
        let served = self.serve_gated(server_side).await;
        // The gate writes out whatever the server said last (a handshake's error answer) once
        // the server's side has closed.
        let _ = gate.await;
        served
    }

    async fn serve_gated(self, transport: tokio::io::DuplexStream) -> crate::Result<()> {
        use rmcp::service::ServerInitializeError;
        let running = self.serve(transport).await.map_err(|err| match err {
            ServerInitializeError::ConnectionClosed(_) => crate::Error::McpClient(
                "closed the connection before it started a session: an MCP client sends \
                 `initialize` first"
                    .into(),
            ),
            other => crate::Error::McpClient(format!("could not start a session: {other}")),
        })?;
        running
            .waiting()
            .await
            .map_err(|err| crate::Error::McpClient(format!("connection failed: {err}")))?;
        Ok(())
    }

    /// Serves one client on this process's stdin and stdout (only protocol frames go there).
    pub async fn serve_stdio(self) -> crate::Result<()> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Starts telling the client about tool list changes, once per connection.
    fn forward_changes(&self, peer: rmcp::Peer<RoleServer>) {
        if self.forwarding.swap(true, Ordering::SeqCst) {
            return;
        }
        let changes = self.changes.clone();
        let ended = self.ended.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = changes.notified() => {}
                    _ = ended.cancelled() => break,
                }
                // Tools often come in bursts (a server connecting registers all of its tools):
                // one notification for the burst.
                tokio::time::sleep(Duration::from_millis(50)).await;
                if peer.is_transport_closed() {
                    break;
                }
                if let Err(err) = peer.notify_tool_list_changed().await {
                    tracing::debug!(%err, "could not send tools/list_changed; stopping");
                    break;
                }
            }
        });
    }

    async fn call(
        &self,
        name: &str,
        input: serde_json::Value,
        ct: CancellationToken,
    ) -> ToolResult {
        let mut ctx = ToolContext::new(Origin::Mcp, self.options.call_timeout);
        ctx.cancel = ct;
        let unattended = Arc::new(Unattended::default());
        ctx.approver = Some(match &self.options.approver {
            Some(approver) => approver.clone(),
            None => unattended.clone(),
        });
        let result = self.registry.execute(&ctx, name, input).await;
        match unattended.asked_about() {
            Some(summary) if result.code == Some(ErrorCode::ApprovalDenied) => ToolResult::error(
                ErrorCode::PolicyDenied,
                format!(
                    "`{summary}` needs approval under Osprey's policy, and a call over MCP cannot be \
                     approved (no one is attached to answer), so it was refused and not run. To let \
                     it through, allow it in Osprey's policy (`osprey config set policy ...`: the \
                     allowlist, or a higher level) or serve with `--policy full`."
                ),
            ),
            _ => result,
        }
    }
}

/// A registry tool as MCP lists it: name, a title, description, the input schema in the
/// portable dialect (a client may forward it to a provider that refuses top-level combinators),
/// and the spec's hints, so a client can treat read-only tools as such.
fn as_mcp_tool(tool: &dyn osprey_tools::Tool) -> McpTool {
    let spec = osprey_tools::ToolSpec::portable(tool.name(), tool.description(), tool.schema());
    let input_schema = match spec.input_schema {
        serde_json::Value::Object(map) => map,
        // Never taken: a portable schema is an object.
        _ => serde_json::Map::new(),
    };
    let title = title_of(&spec.name);
    let mut annotations = ToolAnnotations::with_title(title.clone());
    if let Some(domain) = tool.domain() {
        // A tool is read-only when every action it has only reads; then it changes nothing and
        // a repeat changes nothing either. Otherwise some action may delete or overwrite.
        let read_only = domain.read_only();
        annotations.read_only_hint = Some(read_only);
        annotations.destructive_hint = Some(!read_only);
        annotations.idempotent_hint = Some(read_only);
        annotations.open_world_hint = Some(domain.open_world);
    }
    McpTool::new(spec.name, spec.description, Arc::new(input_schema))
        .with_title(title)
        .annotate(annotations)
}

/// "File", "Shell"; another server's tool keeps its own name (`mcp__docs__search`).
fn title_of(name: &str) -> String {
    if name.contains("__") {
        return name.to_string();
    }
    let mut chars = name.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// The approver of a server without one: it records the question and says no.
#[derive(Default)]
struct Unattended {
    asked: std::sync::Mutex<Option<String>>,
}

impl Unattended {
    fn asked_about(&self) -> Option<String> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Approver for Unattended {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(request.summary);
        futures::future::ready(ApprovalAnswer::Deny).boxed()
    }
}

/// The requests an MCP client sends whose params rmcp reads into a type: one of these that
/// reaches [`ServerHandler::on_custom_request`] came with params that did not fit.
const TYPED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
];

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("osprey", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Osprey's tools. Calls run under Osprey's approval policy, origin rules and \
             safeguards; a call that needs a person's approval is refused.",
        )
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.forward_changes(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.forward_changes(context.peer);
        let tools = self
            .registry
            .names()
            .iter()
            .filter_map(|name| self.registry.get(name))
            .map(|tool| as_mcp_tool(&*tool))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// A known method whose params do not fit (a `tools/call` without a `name`, say) is invalid
    /// params (-32602), as the JSON-RPC spec names it; only a method nobody knows is -32601.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        let method = request.method.as_str();
        if !TYPED_METHODS.contains(&method) {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
                None,
            ));
        }
        let why = match method {
            "tools/call" => serde_json::from_value::<CallToolRequestParams>(
                request.params.unwrap_or(serde_json::Value::Null),
            )
            .err()
            .map(|error| format!(": {error}"))
            .unwrap_or_default(),
            _ => String::new(),
        };
        Err(ErrorData::invalid_params(
            format!("the params of `{method}` do not fit the request{why}"),
            None,
        ))
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.registry.get(name).map(|tool| as_mcp_tool(&*tool))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let input = request
            .arguments
            .map(serde_json::Value::Object)
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        let result = self.call(&request.name, input, context.ct).await;
        // An unknown tool is a protocol error (-32602), as the MCP spec names it, still with the
        // registry's suggestion of the right call; a known tool that fails is a result with
        // isError, which the model can act on.
        if result.code == Some(ErrorCode::UnknownTool) {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}. {}", request.name, result.text_content()),
                None,
            ));
        }
        Ok(CallToolResponse::Complete(to_mcp_result(&result)))
    }
}
