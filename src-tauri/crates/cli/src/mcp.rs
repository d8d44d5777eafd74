//! `osprey mcp serve`: Osprey's tools for an MCP client (Claude Desktop, an IDE, an inspector)
//! over stdio. Standard output carries only protocol frames; logs go to standard error. Calls
//! run with origin `mcp` under the stored policy (or `--policy`/`--ask` for this run); one that
//! needs approval is refused, since nobody is there to approve it.
//!
//! `osprey mcp list`: connects to the servers configured under `mcp.servers` and prints where
//! each stands and the tools it brings. `osprey mcp add` / `remove` edit that setting the way the
//! peers' CLIs do (`claude mcp add NAME -- CMD ARGS`, `--transport http NAME URL`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use osprey_core::mcp::{McpClientOptions, McpServerConfig, McpServerOptions, ServerState};
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
    /// Add (or replace) an MCP server: `osprey mcp add NAME -- COMMAND [ARGS...]` for one that
    /// speaks on stdio, `osprey mcp add --transport http NAME URL` for streamable HTTP.
    Add {
        /// `stdio` (default) or `http`.
        #[arg(long, default_value = "stdio")]
        transport: String,
        /// An environment variable for a stdio server, `KEY=VALUE` (`${NAME}` reads Osprey's).
        #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// An HTTP header for an http server, `Name: value` or `Name=value`.
        #[arg(long = "header", short = 'H', value_name = "HEADER")]
        headers: Vec<String>,
        /// The server's name; its tools become `mcp__NAME__<tool>`.
        name: String,
        /// The command and its arguments (after `--`), or the URL for http.
        #[arg(required = true, num_args = 1.., allow_hyphen_values = true)]
        target: Vec<String>,
    },
    /// Remove an MCP server from `mcp.servers`.
    Remove { name: String },
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
        McpAction::Add {
            transport,
            env,
            headers,
            name,
            target,
        } => {
            let core = crate::open(data_dir, None, None)?;
            let config = server_config(&transport, &env, &headers, &target)?;
            core.add_mcp_server(&name, config)?;
            println!("added MCP server `{name}`; `osprey mcp list` connects and shows its tools");
            Ok(ExitCode::SUCCESS)
        }
        McpAction::Remove { name } => {
            let core = crate::open(data_dir, None, None)?;
            if core.remove_mcp_server(&name)? {
                println!("removed MCP server `{name}`");
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("osprey: no MCP server named `{name}` (`osprey mcp list` shows them)");
                Ok(ExitCode::from(crate::EXIT_TOOL_FAILED))
            }
        }
    }
}

/// The `mcp.servers` entry `osprey mcp add` describes.
fn server_config(
    transport: &str,
    env: &[String],
    headers: &[String],
    target: &[String],
) -> anyhow::Result<McpServerConfig> {
    let pair = |text: &str, separators: &[char]| -> anyhow::Result<(String, String)> {
        text.split_once(separators)
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| anyhow::anyhow!("`{text}` is not KEY=VALUE"))
    };
    match transport {
        "stdio" => {
            if !headers.is_empty() {
                anyhow::bail!("--header is for http servers; a stdio server takes --env");
            }
            Ok(McpServerConfig {
                transport: Some("stdio".into()),
                command: Some(target[0].clone()),
                args: target[1..].to_vec(),
                env: env
                    .iter()
                    .map(|e| pair(e, &['=']))
                    .collect::<anyhow::Result<_>>()?,
                ..McpServerConfig::default()
            })
        }
        "http" | "streamable-http" => {
            if target.len() != 1 {
                anyhow::bail!("an http server takes one URL");
            }
            if !env.is_empty() {
                anyhow::bail!("--env is for stdio servers; an http server takes --header");
            }
            Ok(McpServerConfig {
                transport: Some("http".into()),
                url: Some(target[0].clone()),
                headers: headers
                    .iter()
                    .map(|h| pair(h, &[':', '=']))
                    .collect::<anyhow::Result<_>>()?,
                ..McpServerConfig::default()
            })
        }
        "sse" => anyhow::bail!(
            "the sse transport is MCP's old one and is not supported: add the server's streamable \
             HTTP endpoint (often ending in /mcp) with --transport http"
        ),
        other => anyhow::bail!("unknown --transport `{other}`: use stdio or http"),
    }
}

async fn list(data_dir: Option<PathBuf>, wait: Duration, json: bool) -> anyhow::Result<ExitCode> {
    let core = crate::open(data_dir, None, None)?;
    core.start_mcp_with(McpClientOptions {
        connect_timeout: wait,
        ..McpClientOptions::default()
    })?;
    // Until every server has connected or failed once, or the wait is over.
    let statuses = core.wait_for_mcp(wait).await;
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
