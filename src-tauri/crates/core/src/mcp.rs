//! Wiring MCP into the core: the servers configured under `mcp.servers` are connected by
//! [`Core::start_mcp`] (the desktop app at start-up; `osprey mcp list`), in the background, each
//! server's tools registered as `mcp__<server>__<tool>` while it is connected.
//! [`Core::stop_mcp`] disconnects them all; dropping the last `Core` does too.

use std::sync::Mutex;

pub use osprey_agent::mcp::{
    McpClientOptions, McpServerConfig, McpServerOptions, ServerState, ServerStatus,
};
use osprey_agent::mcp::{McpClients, McpServers};

use crate::{Core, settings};

/// The running connections, once started.
#[derive(Default)]
pub struct McpSlot {
    clients: Mutex<Option<McpClients>>,
}

impl std::fmt::Debug for McpSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSlot").finish_non_exhaustive()
    }
}

impl McpSlot {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<McpClients>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Core {
    /// Connects to every enabled server in `mcp.servers` in the background on the current tokio
    /// runtime and returns at once; tools appear as servers connect. A second call does nothing
    /// until [`Core::stop_mcp`]. Must be called inside a tokio runtime.
    pub fn start_mcp(&self) -> anyhow::Result<()> {
        self.start_mcp_with(McpClientOptions::default())
    }

    /// [`Core::start_mcp`] with explicit timings (tests, `osprey mcp list`).
    pub fn start_mcp_with(&self, options: McpClientOptions) -> anyhow::Result<()> {
        self.start_mcp_servers(self.mcp_servers(), options)
    }

    /// [`Core::start_mcp_with`] for the one configured server `name` (`osprey tool
    /// mcp__NAME__...` connects only the server it needs); false when none has that name.
    pub fn start_mcp_server(&self, name: &str, options: McpClientOptions) -> anyhow::Result<bool> {
        let mut servers = self.mcp_servers();
        servers.retain(|server, _| server == name);
        if servers.is_empty() {
            return Ok(false);
        }
        self.start_mcp_servers(servers, options)?;
        Ok(true)
    }

    fn start_mcp_servers(
        &self,
        servers: McpServers,
        options: McpClientOptions,
    ) -> anyhow::Result<()> {
        tokio::runtime::Handle::try_current()
            .map_err(|_| anyhow::anyhow!("MCP connections need a running tokio runtime"))?;
        let mut slot = self.inner.mcp.lock();
        if slot.is_some() {
            return Ok(());
        }
        *slot = Some(McpClients::start(self.registry(), &servers, options));
        Ok(())
    }

    /// Waits until every configured server has connected or failed once, or `wait` is over, and
    /// returns where each stands (what `osprey chat -p` and `osprey mcp list` wait for, so the
    /// first turn sees the servers' tools).
    pub async fn wait_for_mcp(&self, wait: std::time::Duration) -> Vec<ServerStatus> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let statuses = self.mcp_status();
            let settled = statuses
                .iter()
                .all(|s| !matches!(s.state, ServerState::Connecting));
            if settled || tokio::time::Instant::now() >= deadline {
                return statuses;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    /// The `mcp.servers` setting.
    pub fn mcp_servers(&self) -> McpServers {
        settings::read(&self.db().settings(), settings::MCP_SERVERS)
    }

    /// Adds or replaces one entry of `mcp.servers` (`osprey mcp add`), checked first.
    pub fn add_mcp_server(
        &self,
        name: &str,
        config: osprey_agent::mcp::McpServerConfig,
    ) -> anyhow::Result<()> {
        let mut servers = self.mcp_servers();
        servers.insert(name.to_string(), config);
        osprey_agent::mcp::validate_servers(&servers).map_err(anyhow::Error::msg)?;
        self.db()
            .settings()
            .set(settings::MCP_SERVERS, &serde_json::to_value(&servers)?)?;
        Ok(())
    }

    /// Removes one entry of `mcp.servers`; false when there was none by that name.
    pub fn remove_mcp_server(&self, name: &str) -> anyhow::Result<bool> {
        let mut servers = self.mcp_servers();
        if servers.remove(name).is_none() {
            return Ok(false);
        }
        self.db()
            .settings()
            .set(settings::MCP_SERVERS, &serde_json::to_value(&servers)?)?;
        Ok(true)
    }

    /// Every configured server and where its connection stands (empty before `start_mcp`).
    pub fn mcp_status(&self) -> Vec<ServerStatus> {
        self.inner
            .mcp
            .lock()
            .as_ref()
            .map(McpClients::status)
            .unwrap_or_default()
    }

    /// Whether [`Core::start_mcp`] has run (and [`Core::stop_mcp`] not since).
    pub fn mcp_started(&self) -> bool {
        self.inner.mcp.lock().is_some()
    }

    /// Disconnects from every server; returns once their tools are unregistered. A later
    /// `start_mcp` reads the settings again (after `mcp.servers` changed, for example).
    pub async fn stop_mcp(&self) {
        let clients = self.inner.mcp.lock().take();
        if let Some(clients) = clients {
            clients.stop().await;
        }
    }
}

impl Core {
    /// Serves this core's registry to one MCP client on stdin/stdout until it disconnects
    /// (`osprey mcp serve`). Calls arrive with origin `mcp`; with no approver in `options`, a
    /// call that needs approval is refused, never run.
    pub async fn serve_mcp_stdio(&self, options: McpServerOptions) -> anyhow::Result<()> {
        osprey_agent::mcp::McpServer::new(self.registry().clone(), options)
            .serve_stdio()
            .await?;
        Ok(())
    }
}
