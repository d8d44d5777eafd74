//! `osprey tools`: every tool a model can be given here: the built-in ones, each configured MCP
//! server's as `mcp__<server>__<tool>` (connected with a bounded wait, each server's failure
//! said once on stderr) and each installed app's under the name the agent sees (the apps the
//! running desktop app or `osprey daemon` runs, reached there; with neither running, every
//! installed app launched here for the listing and stopped after).
//!
//! The reaching half of `osprey tool <name>`: a name that is not built in is looked up among the
//! configured MCP servers (`mcp__<server>__<tool>` connects that server only) and the installed
//! apps' declared tools (that app is reached or launched), so the call runs through the same
//! registry as a built-in one. A name found nowhere is refused by the registry (audited, with
//! its suggestion and its tools), and [`elsewhere`] adds the apps' and MCP servers' tools.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use osprey_core::Core;
use osprey_core::mcp::McpClientOptions;
use serde_json::{Value, json};

/// What was connected or launched for this run; [`Reached::release`] undoes it.
pub struct Reached {
    core: Core,
    mcp: bool,
    #[cfg(unix)]
    apps: Option<osprey_core::app_tools::AppToolsLease>,
}

impl Reached {
    fn nothing(core: &Core) -> Reached {
        Reached {
            core: core.clone(),
            mcp: false,
            #[cfg(unix)]
            apps: None,
        }
    }

    /// The app whose tool `name` is, when an app brought it.
    fn app_of(&self, name: &str) -> Option<String> {
        #[cfg(unix)]
        if let Some(apps) = &self.apps {
            return apps.app_of(name).map(str::to_string);
        }
        let _ = name;
        None
    }

    /// Disconnects the MCP servers and stops the apps this run launched (apps of a running
    /// Osprey keep running).
    pub async fn release(self) {
        if self.mcp {
            self.core.stop_mcp().await;
        }
        #[cfg(unix)]
        if let Some(apps) = self.apps {
            apps.release().await;
        }
    }
}

/// Where a tool name led.
pub enum Reach {
    /// Run the call through the registry: the tool is there now, or the name is found nowhere
    /// and the registry refuses it.
    Ready(Reached),
    /// It could not be made ready: the error code and why (after `Reached` was released).
    Failed(osprey_types::ErrorCode, String),
}

/// Makes the tool `name` callable through `core`'s registry: nothing to do for a built-in, the
/// one MCP server for `mcp__<server>__<tool>`, the app that declares it otherwise.
pub async fn reach(core: &Core, name: &str, wait: Duration) -> anyhow::Result<Reach> {
    use osprey_types::ErrorCode;
    let mut reached = Reached::nothing(core);
    if core.has_tool(name) {
        return Ok(Reach::Ready(reached));
    }
    if let Some((server, _)) = name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        // A server that is not configured: the registry refuses the name (and audits it).
        if !core.start_mcp_server(server, client_options(wait))? {
            return Ok(Reach::Ready(reached));
        }
        reached.mcp = true;
        let statuses = core.wait_for_mcp(wait).await;
        crate::chat::report_mcp(&statuses);
        let connected = statuses.iter().any(|s| {
            s.name == server && matches!(s.state, osprey_core::mcp::ServerState::Connected)
        });
        // Connected without that tool: the registry's refusal lists the server's tools.
        if connected || core.has_tool(name) {
            return Ok(Reach::Ready(reached));
        }
        reached.release().await;
        return Ok(Reach::Failed(
            ErrorCode::ServiceUnavailable,
            format!("MCP server `{server}` is not connected, so `{name}` cannot run"),
        ));
    }
    #[cfg(unix)]
    if let Some(app) = core.app_declaring(name).await {
        let lease = core
            .reach_app_tools(std::slice::from_ref(&app), wait, true)
            .await?;
        let failures: Vec<String> = lease.failures.iter().map(|(_, why)| why.clone()).collect();
        reached.apps = Some(lease);
        if core.has_tool(name) {
            return Ok(Reach::Ready(reached));
        }
        reached.release().await;
        let why = if failures.is_empty() {
            format!("it did not offer `{name}`")
        } else {
            failures.join("; ")
        };
        return Ok(Reach::Failed(
            ErrorCode::ServiceUnavailable,
            format!("`{name}` is a tool of the app `{app}`, which could not be reached: {why}"),
        ));
    }
    // Found nowhere: the registry refuses it, with its suggestion and an audit row.
    Ok(Reach::Ready(reached))
}

fn client_options(wait: Duration) -> McpClientOptions {
    McpClientOptions {
        connect_timeout: wait,
        ..McpClientOptions::default()
    }
}

/// What an unknown-tool refusal adds to the registry's list of the tools it has: the tools of
/// the installed apps and the configured MCP servers, which are registered only when reached.
pub async fn elsewhere(core: &Core, name: &str) -> String {
    let servers = core.mcp_servers();
    let mut text = String::new();
    if let Some((server, _)) = name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .filter(|(server, _)| !servers.contains_key(*server))
    {
        text.push_str(&format!(" No MCP server `{server}` is configured."));
    }
    let apps: Vec<String> = core
        .installed_apps()
        .await
        .into_iter()
        .flat_map(|app| {
            let id = app.manifest.id.clone();
            app.manifest
                .tools()
                .map(|tool| format!("{tool} (app {id})"))
                .collect::<Vec<_>>()
        })
        .collect();
    if !apps.is_empty() {
        text.push_str(&format!(" App tools: {}.", apps.join(", ")));
    }
    let servers: Vec<String> = servers
        .keys()
        .map(|server| format!("mcp__{server}__<tool>"))
        .collect();
    if !servers.is_empty() {
        text.push_str(&format!(" MCP servers' tools: {}.", servers.join(", ")));
    }
    text.push_str(" `osprey tools` lists every tool with its schema.");
    text
}

/// `osprey tools`: the built-in tools, the configured MCP servers' and the installed apps'.
pub async fn list(core: &Core, json_output: bool, wait: Duration) -> anyhow::Result<ExitCode> {
    let mut reached = Reached::nothing(core);
    if !core.mcp_servers().is_empty() {
        core.start_mcp_with(client_options(wait))?;
        reached.mcp = true;
        crate::chat::report_mcp(&core.wait_for_mcp(wait).await);
    }
    #[cfg(unix)]
    {
        let ids: Vec<String> = core
            .installed_apps()
            .await
            .into_iter()
            .filter(|app| app.quarantined.is_none())
            .map(|app| app.manifest.id)
            .collect();
        if !ids.is_empty() {
            match core.reach_app_tools(&ids, wait, false).await {
                Ok(lease) => {
                    for (app, why) in &lease.failures {
                        eprintln!("osprey: app `{app}`: {why}");
                    }
                    reached.apps = Some(lease);
                }
                Err(error) => eprintln!("osprey: the apps' tools are not listed: {error:#}"),
            }
        }
    }
    // What a model is told: the portable schema every provider accepts.
    let specs = core.tool_specs();
    let servers = core.mcp_servers();
    let source = |name: &str| -> BTreeMap<&'static str, String> {
        let mut source = BTreeMap::new();
        if let Some(server) = name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
            .map(|(server, _)| server)
            .filter(|server| servers.contains_key(*server))
        {
            source.insert("source", "mcp".to_string());
            source.insert("server", server.to_string());
        } else if let Some(app) = reached.app_of(name) {
            source.insert("source", "app".to_string());
            source.insert("app", app);
        } else {
            source.insert("source", "builtin".to_string());
        }
        source
    };
    let printed = if json_output {
        let listed: Vec<Value> = specs
            .iter()
            .map(|spec| {
                let mut entry = json!({
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": spec.input_schema,
                });
                for (key, value) in source(&spec.name) {
                    entry[key] = Value::String(value);
                }
                entry
            })
            .collect();
        serde_json::to_string_pretty(&listed).map(|text| println!("{text}"))
    } else {
        specs.iter().try_for_each(|spec| {
            let from = source(&spec.name);
            let from = match from["source"].as_str() {
                "mcp" => format!(" (MCP server `{}`)", from["server"]),
                "app" => format!(" (app `{}`)", from["app"]),
                _ => String::new(),
            };
            serde_json::to_string_pretty(&spec.input_schema).map(|schema| {
                println!("{}{from}\n  {}\n{schema}\n", spec.name, spec.description);
            })
        })
    };
    reached.release().await;
    printed?;
    Ok(ExitCode::SUCCESS)
}
