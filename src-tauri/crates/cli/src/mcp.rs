//! `osprey mcp serve`: Osprey's tools for an MCP client (Claude Desktop, an IDE, an inspector)
//! over stdio. Standard output carries only protocol frames; logs go to standard error. Calls
//! run with origin `mcp` under the stored policy (or `--policy`/`--ask` for this run); one that
//! needs approval is refused, since nobody is there to approve it.
//!
//! `osprey mcp list`: connects to the servers configured under `mcp.servers` and prints where
//! each stands and the tools it brings.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use osprey_core::mcp::{McpClientOptions, McpServerOptions, ServerState};
use osprey_tools::{AskMode, Level};

#[derive(Args, Debug)]
pub struct McpArgs {
    #[command(subcommand)]
    action: McpAction,
}

#[derive(Subcommand, Debug)]
enum McpAction {
    /// Serve Osprey's tools over stdio to an MCP client until it disconnects.
    Serve {
        /// Approval policy level for this run (default: the stored policy).
        #[arg(long, value_parser = crate::parse_level)]
        policy: Option<Level>,
        /// When to ask for approval in this run; over MCP an ask is a refusal.
        #[arg(long, value_parser = crate::parse_ask)]
        ask: Option<AskMode>,
        /// Stop a call after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// Connect to the servers in `mcp.servers` and print each one's state and tools.
    List {
        /// How long to wait for the servers to connect, in seconds.
        #[arg(long, default_value_t = 15)]
        wait: u64,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(data_dir: Option<PathBuf>, args: McpArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        McpAction::Serve {
            policy,
            ask,
            timeout,
        } => {
            let core = crate::open(data_dir, policy, ask)?;
            core.serve_mcp_stdio(McpServerOptions {
                call_timeout: Duration::from_secs(timeout),
                approver: None,
            })
            .await?;
            Ok(ExitCode::SUCCESS)
        }
        McpAction::List { wait, json } => list(data_dir, Duration::from_secs(wait), json).await,
    }
}

async fn list(data_dir: Option<PathBuf>, wait: Duration, json: bool) -> anyhow::Result<ExitCode> {
    let core = crate::open(data_dir, None, None)?;
    core.start_mcp_with(McpClientOptions {
        connect_timeout: wait,
        ..McpClientOptions::default()
    })?;
    // Until every server has connected or failed once, or the wait is over.
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let settled = core
            .mcp_status()
            .iter()
            .all(|s| !matches!(s.state, ServerState::Connecting));
        if settled || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let statuses = core.mcp_status();
    core.stop_mcp().await;
    if json {
        println!("{}", serde_json::to_string_pretty(&statuses)?);
    } else if statuses.is_empty() {
        println!(
            "no MCP servers configured; add some with `osprey config set mcp.servers '{{\"name\": {{\"command\": \"...\"}}}}'`"
        );
    } else {
        for status in &statuses {
            let state = match &status.state {
                ServerState::Connecting => "still connecting".to_string(),
                ServerState::Connected => format!("connected, {} tools", status.tools.len()),
                ServerState::Retrying { error, .. } => format!("not connected: {error}"),
                ServerState::Disabled => "disabled".to_string(),
                ServerState::Invalid { error } => format!("misconfigured: {error}"),
                ServerState::Stopped => "stopped".to_string(),
            };
            println!("{}: {state}", status.name);
            for tool in &status.tools {
                println!("  {tool}");
            }
        }
    }
    let all_well = statuses
        .iter()
        .all(|s| matches!(s.state, ServerState::Connected | ServerState::Disabled));
    Ok(if all_well {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::EXIT_TOOL_FAILED)
    })
}
