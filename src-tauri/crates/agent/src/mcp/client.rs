//! The MCP client: one background task per configured server connects (a child process over
//! stdio, or streamable HTTP), registers the server's tools as `mcp__<server>__<tool>`, follows
//! `notifications/tools/list_changed`, pings to notice a dead peer, and on any disconnect
//! unregisters the tools and reconnects with exponential backoff.
//!
//! The registered tools are ordinary registry tools: their calls pass origin rules, the
//! approval policy (every remote tool needs approval: a server's "read-only" annotations are
//! hints from a party Osprey does not control), the safeguard and the audit log.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use osprey_tools::{ApprovalNeed, Call, CallFacts, Registry, Tool, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, Implementation,
    PingRequest, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Endpoint, McpServerConfig, McpServers, from_mcp_result};

/// Timing of connections.
#[derive(Clone, Debug)]
pub struct McpClientOptions {
    /// How long connecting and the handshake may take.
    pub connect_timeout: Duration,
    /// How often a connected server is pinged (a dead HTTP server is noticed only this way).
    pub ping_interval: Duration,
    /// How long a ping may take before the server counts as gone.
    pub ping_timeout: Duration,
    /// The first wait before reconnecting; it doubles per failed attempt up to `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for McpClientOptions {
    fn default() -> Self {
        McpClientOptions {
            connect_timeout: Duration::from_secs(30),
            ping_interval: Duration::from_secs(30),
            ping_timeout: Duration::from_secs(10),
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
        }
    }
}

/// Where a server's connection stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    Connecting,
    Connected,
    /// Not connected; the next attempt is after a wait.
    Retrying {
        error: String,
        retry_in_ms: u64,
    },
    /// `enabled: false` in the settings.
    Disabled,
    /// The entry cannot be used as written; it is not retried.
    Invalid {
        error: String,
    },
    /// Disconnected by [`McpClients::stop`].
    Stopped,
}

/// One configured server, as a UI or `osprey` would show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    pub name: String,
    #[serde(flatten)]
    pub state: ServerState,
    /// The registry names of its tools while connected.
    pub tools: Vec<String>,
}

/// The connections to every configured server. Dropping the last handle stops them (their
/// tools are unregistered and child processes killed).
#[derive(Clone)]
pub struct McpClients {
    inner: Arc<Inner>,
}

struct Inner {
    cancel: CancellationToken,
    statuses: Arc<Mutex<BTreeMap<String, ServerStatus>>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl std::fmt::Debug for McpClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClients")
            .field("servers", &self.status())
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl McpClients {
    /// Starts a task per enabled, valid server on the current tokio runtime and returns at once.
    pub fn start(registry: &Registry, servers: &McpServers, options: McpClientOptions) -> Self {
        let cancel = CancellationToken::new();
        let statuses = Arc::new(Mutex::new(BTreeMap::new()));
        let mut tasks = Vec::new();
        for (name, config) in servers {
            let state = if !config.enabled {
                ServerState::Disabled
            } else if let Err(error) =
                super::check_server_name(name).and_then(|()| config.endpoint().map(|_| ()))
            {
                tracing::warn!(server = %name, %error, "not connecting to a misconfigured MCP server");
                ServerState::Invalid { error }
            } else {
                let connection = Connection {
                    name: name.clone(),
                    config: config.clone(),
                    registry: registry.clone(),
                    options: options.clone(),
                    statuses: statuses.clone(),
                };
                tasks.push(tokio::spawn(connection.run(cancel.child_token())));
                ServerState::Connecting
            };
            lock(&statuses).insert(
                name.clone(),
                ServerStatus {
                    name: name.clone(),
                    state,
                    tools: Vec::new(),
                },
            );
        }
        McpClients {
            inner: Arc::new(Inner {
                cancel,
                statuses,
                tasks: Mutex::new(tasks),
            }),
        }
    }

    /// Every configured server and where it stands, by name.
    pub fn status(&self) -> Vec<ServerStatus> {
        lock(&self.inner.statuses).values().cloned().collect()
    }

    /// Disconnects from every server and waits until their tools are unregistered.
    pub async fn stop(&self) {
        self.inner.cancel.cancel();
        let tasks = std::mem::take(&mut *lock(&self.inner.tasks));
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// One server's connection task.
struct Connection {
    name: String,
    config: McpServerConfig,
    registry: Registry,
    options: McpClientOptions,
    statuses: Arc<Mutex<BTreeMap<String, ServerStatus>>>,
}

/// Tools registered for one connection; unregistered when the connection ends, however it ends.
struct Registered {
    registry: Registry,
    names: BTreeSet<String>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        for name in std::mem::take(&mut self.names) {
            self.registry.unregister(&name);
        }
    }
}

/// Tells the connection task when the server's tool list changed.
struct Handler {
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // The handshake protocol: servers of every version answer `initialize`, and the
        // session it opens is what carries `tools/list_changed`.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("osprey", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

type Running = RunningService<RoleClient, Handler>;

impl Connection {
    async fn run(self, cancel: CancellationToken) {
        let mut backoff = self.options.initial_backoff;
        loop {
            self.set_state(ServerState::Connecting, Vec::new());
            let started = tokio::time::Instant::now();
            let error = tokio::select! {
                _ = cancel.cancelled() => break,
                error = self.session() => error,
            };
            // A connection that stayed up a while starts the backoff over.
            if started.elapsed() > self.options.max_backoff {
                backoff = self.options.initial_backoff;
            }
            tracing::warn!(server = %self.name, %error, retry_in = ?backoff, "MCP server disconnected");
            self.set_state(
                ServerState::Retrying {
                    error,
                    retry_in_ms: backoff.as_millis() as u64,
                },
                Vec::new(),
            );
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(self.options.max_backoff);
        }
        self.set_state(ServerState::Stopped, Vec::new());
    }

    fn set_state(&self, state: ServerState, tools: Vec<String>) {
        if let Some(status) = lock(&self.statuses).get_mut(&self.name) {
            status.state = state;
            status.tools = tools;
        }
    }

    /// One connection, from connecting until it ends; returns why it ended. Dropping it (on
    /// cancellation) unregisters the tools and closes the connection too.
    async fn session(&self) -> String {
        let (changed_tx, mut changed) = mpsc::unbounded_channel();
        let handler = Handler {
            changed: changed_tx,
        };
        let running =
            match tokio::time::timeout(self.options.connect_timeout, self.connect(handler)).await {
                Ok(Ok(running)) => running,
                Ok(Err(error)) => return error,
                Err(_) => {
                    return format!(
                        "no MCP handshake within {} s",
                        self.options.connect_timeout.as_secs()
                    );
                }
            };
        let peer = running.peer().clone();
        let mut registered = Registered {
            registry: self.registry.clone(),
            names: BTreeSet::new(),
        };
        if let Err(error) = self.sync_tools(&peer, &mut registered).await {
            return error;
        }
        tracing::info!(server = %self.name, tools = registered.names.len(), "MCP server connected");

        let mut closed = std::pin::pin!(running.waiting());
        let mut ping = tokio::time::interval(self.options.ping_interval);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ping.tick().await;
        loop {
            tokio::select! {
                quit = &mut closed => {
                    return match quit {
                        Ok(reason) => format!("the connection ended ({reason:?})"),
                        Err(err) => format!("the connection failed: {err}"),
                    };
                }
                Some(()) = changed.recv() => {
                    if let Err(error) = self.sync_tools(&peer, &mut registered).await {
                        return error;
                    }
                }
                _ = ping.tick() => {
                    let ping = peer.send_request(ClientRequest::PingRequest(PingRequest::default()));
                    match tokio::time::timeout(self.options.ping_timeout, ping).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(err)) => return format!("the server did not answer a ping: {err}"),
                        Err(_) => return format!(
                            "the server did not answer a ping within {} s",
                            self.options.ping_timeout.as_secs()
                        ),
                    }
                }
            }
        }
    }

    async fn connect(&self, handler: Handler) -> Result<Running, String> {
        match self.config.endpoint()? {
            Endpoint::Stdio { command, args } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args);
                for (name, value) in &self.config.env {
                    cmd.env(name, super::expand_env(value)?);
                }
                if let Some(cwd) = &self.config.cwd {
                    cmd.current_dir(cwd);
                }
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|err| format!("cannot start `{command}`: {err}"))?;
                if let Some(stderr) = stderr {
                    // The server's own log, kept out of Osprey's output unless asked for.
                    let name = self.name.clone();
                    tokio::spawn(async move {
                        let mut lines = tokio::io::BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tracing::debug!(server = %name, "{line}");
                        }
                    });
                }
                handler.serve(transport).await.map_err(|err| {
                    format!(
                        "the MCP handshake with `{command}` failed: {}",
                        innermost(&err)
                    )
                })
            }
            Endpoint::Http { url } => {
                install_crypto_provider();
                let mut headers = HashMap::new();
                for (name, value) in &self.config.headers {
                    let name = http::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
                    let value = http::HeaderValue::from_str(&super::expand_env(value)?)
                        .map_err(|_| format!("the value of header `{name}` is not valid"))?;
                    headers.insert(name, value);
                }
                let transport = StreamableHttpClientTransport::from_config(
                    StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers),
                );
                handler.serve(transport).await.map_err(|err| {
                    format!(
                        "the MCP handshake with {url} failed: {}",
                        handshake_error(&err)
                    )
                })
            }
        }
    }

    /// Makes the registered tools match the server's list.
    async fn sync_tools(
        &self,
        peer: &Peer<RoleClient>,
        registered: &mut Registered,
    ) -> Result<(), String> {
        let tools = tokio::time::timeout(self.options.connect_timeout, peer.list_all_tools())
            .await
            .map_err(|_| {
                format!(
                    "the server did not list its tools within {} s",
                    self.options.connect_timeout.as_secs()
                )
            })?
            .map_err(|err| format!("listing the server's tools failed: {err}"))?;
        let mut wanted = BTreeSet::new();
        for tool in tools {
            let name = registry_name(&self.name, &tool.name);
            if !wanted.insert(name.clone()) {
                tracing::warn!(server = %self.name, tool = %tool.name, "skipping a tool whose name collides with another after cleaning");
                continue;
            }
            let description = tool.description.as_deref().unwrap_or_default();
            self.registry.register(Arc::new(RemoteTool {
                description: format!("(from the MCP server `{}`) {description}", self.name),
                name: name.clone(),
                remote: tool.name.to_string(),
                server: self.name.clone(),
                schema: Value::Object((*tool.input_schema).clone()),
                peer: peer.clone(),
            }));
            registered.names.insert(name);
        }
        for gone in registered
            .names
            .difference(&wanted)
            .cloned()
            .collect::<Vec<_>>()
        {
            self.registry.unregister(&gone);
            registered.names.remove(&gone);
        }
        self.set_state(
            ServerState::Connected,
            registered.names.iter().cloned().collect(),
        );
        Ok(())
    }
}

/// Why a handshake failed, in words a person can act on.
fn handshake_error(err: &rmcp::service::ClientInitializeError) -> String {
    match err {
        // The transport error is not linked as a source; its own chain is.
        rmcp::service::ClientInitializeError::TransportError { error, .. } => innermost(error),
        other => innermost(other),
    }
}

/// The deepest cause of an error ("Connection refused" rather than the transport's layers of
/// type names), which is what a person can act on.
fn innermost(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// rmcp's HTTP client uses rustls without a built-in crypto provider (see the root
/// Cargo.toml); the process-wide default is ring's, installed once.
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another part of the process installed one first, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The longest tool name the model APIs accept (Anthropic's and OpenAI's limit).
pub const MAX_TOOL_NAME: usize = 64;

/// `mcp__<server>__<tool>`, with characters model APIs refuse in tool names replaced by `_`, and
/// cut to [`MAX_TOOL_NAME`] with a hash of the full name kept at the end so cut names stay
/// distinct (one over-long name must not make a provider refuse every request).
pub fn registry_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = format!("mcp__{server}__{clean}");
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    // FNV-1a: stable across runs and Rust versions, unlike the std hasher.
    let hash = tool.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    });
    let suffix = format!("_{hash:08x}");
    // Only ASCII is left, so any byte index is a character boundary.
    format!("{}{suffix}", &full[..MAX_TOOL_NAME - suffix.len()])
}

/// A remote tool as the registry sees it.
struct RemoteTool {
    name: String,
    remote: String,
    server: String,
    description: String,
    schema: Value,
    peer: Peer<RoleClient>,
}

impl Tool for RemoteTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn schema(&self) -> &Value {
        &self.schema
    }

    fn facts(&self, call: &Call) -> CallFacts {
        let mut arguments = Value::Object(call.input.clone()).to_string();
        if arguments.len() > 200 {
            let mut end = 200;
            while !arguments.is_char_boundary(end) {
                end -= 1;
            }
            arguments.truncate(end);
            arguments.push('…');
        }
        CallFacts {
            approval: ApprovalNeed::Required,
            summary: format!(
                "`{}` on the MCP server `{}` with {arguments}",
                self.remote, self.server
            ),
            ..CallFacts::default()
        }
    }

    fn execute<'a>(&'a self, _ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        // The registry bounds the call with its deadline and cancellation; dropping this future
        // cancels the request on the server.
        async move {
            let request =
                CallToolRequestParams::new(self.remote.clone()).with_arguments(call.input);
            match self.peer.call_tool(request).await {
                Ok(result) => from_mcp_result(result),
                Err(err) => ToolResult::error(
                    ErrorCode::ToolFailed,
                    format!(
                        "the MCP server `{}` could not run `{}`: {err}",
                        self.server, self.remote
                    ),
                ),
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_carry_the_server_and_only_safe_characters() {
        assert_eq!(
            registry_name("weather", "forecast"),
            "mcp__weather__forecast"
        );
        assert_eq!(
            registry_name("docs", "search.pages v2"),
            "mcp__docs__search_pages_v2"
        );
        let long = "a".repeat(80);
        let cut = registry_name("docs", &long);
        assert_eq!(cut.len(), MAX_TOOL_NAME);
        assert!(cut.starts_with("mcp__docs__aaaa"), "{cut}");
        let other = registry_name("docs", &format!("{long}b"));
        assert_eq!(other.len(), MAX_TOOL_NAME);
        assert_ne!(cut, other);
        assert_eq!(cut, registry_name("docs", &long));
    }
}
