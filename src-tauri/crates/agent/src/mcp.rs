//! MCP (the Model Context Protocol) both ways, with the `rmcp` crate.
//!
//! - [`server::McpServer`] exposes a [`Registry`](osprey_tools::Registry) to an MCP client
//!   (`osprey mcp serve` over stdio): every call runs through `Registry::execute` with origin
//!   `mcp`, so origin rules, the approval policy, the safeguard and the audit log apply, and
//!   nothing is approved on the caller's say-so.
//! - [`client::McpClients`] connects to configured MCP servers (a command over stdio, or a URL
//!   over streamable HTTP) and registers each server's tools as `mcp__<server>__<tool>`; they
//!   appear when the server connects and disappear when it goes away, and the connection is
//!   retried with backoff.
//!
//! Conversions between Osprey's [`ToolResult`] and MCP content live here, shared by both sides.

pub mod client;
pub mod gate;
pub mod server;

use std::collections::BTreeMap;

use osprey_types::{ContentBlock, ErrorCode, ToolResult};
use rmcp::model::{CallToolResult, ContentBlock as McpContent};
use serde::{Deserialize, Serialize};

pub use client::{McpClientOptions, McpClients, ServerState, ServerStatus};
pub use server::{McpServer, McpServerOptions};

/// The settings value of `mcp.servers`: server name -> how to reach it.
pub type McpServers = BTreeMap<String, McpServerConfig>;

/// How to reach one MCP server: either `command` (stdio) or `url` (streamable HTTP).
///
/// ```json
/// {"weather": {"command": "weather-mcp", "args": ["--units", "metric"], "env": {"API_KEY": "..."}},
///  "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."}}}
/// ```
///
/// The `type` field the peers' configs carry (Claude Code, VS Code, Cursor: `stdio`, `http`) is
/// accepted and checked against the endpoint; the old `sse` transport is refused with a hint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// `stdio` or `http` (also `streamable-http`); optional: `command` or `url` says which.
    #[serde(
        default,
        rename = "type",
        alias = "transport",
        skip_serializing_if = "Option::is_none"
    )]
    pub transport: Option<String>,
    /// The program to start; it speaks MCP on its stdin/stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment variables for the program (it inherits Osprey's environment too);
    /// `${NAME}` in a value is replaced by Osprey's own `NAME`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The working directory for the program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The streamable HTTP endpoint (`http://` or `https://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Extra HTTP headers sent with every request (an `Authorization` header, for example);
    /// `${NAME}` in a value is replaced by the environment variable `NAME`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// `false` keeps the entry without connecting.
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
}

fn enabled_by_default() -> bool {
    true
}

impl Default for McpServerConfig {
    /// An enabled entry with no endpoint yet.
    fn default() -> Self {
        McpServerConfig {
            transport: None,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            enabled: true,
        }
    }
}

/// Where a configured server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint<'a> {
    Stdio {
        command: &'a str,
        args: &'a [String],
    },
    Http {
        url: &'a str,
    },
}

impl McpServerConfig {
    /// Stdio or HTTP, or what is wrong with the entry.
    pub fn endpoint(&self) -> Result<Endpoint<'_>, String> {
        match self
            .transport
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None => {}
            Some("stdio") if self.command.is_none() => {
                return Err("`type: stdio` needs `command`".into());
            }
            Some("http" | "streamable-http" | "streamablehttp") if self.url.is_none() => {
                return Err("`type: http` needs `url`".into());
            }
            Some("stdio" | "http" | "streamable-http" | "streamablehttp") => {}
            Some("sse") => {
                return Err(
                    "the `sse` transport is MCP's old one and is not supported: use the \
                            server's streamable HTTP endpoint (often ending in /mcp) with \
                            `type: http`"
                        .into(),
                );
            }
            Some(other) => {
                return Err(format!("unknown `type` `{other}`: use `stdio` or `http`"));
            }
        }
        match (&self.command, &self.url) {
            (Some(command), None) if !command.trim().is_empty() => Ok(Endpoint::Stdio {
                command,
                args: &self.args,
            }),
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!(
                        "`url` must start with http:// or https://, got `{url}`"
                    ));
                }
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err("`args`, `env` and `cwd` belong to a `command` server, not a `url` one".into());
                }
                for name in self.headers.keys() {
                    http::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
                    // The transport sets these itself.
                    if ["accept", "mcp-session-id", "last-event-id"]
                        .contains(&name.to_ascii_lowercase().as_str())
                    {
                        return Err(format!(
                            "header `{name}` is set by the MCP transport and cannot be configured"
                        ));
                    }
                }
                for value in self.headers.values().filter(|v| !v.contains("${")) {
                    http::HeaderValue::from_str(value)
                        .map_err(|_| "a header value holds characters HTTP does not allow".to_string())?;
                }
                Ok(Endpoint::Http { url })
            }
            (Some(_), Some(_)) => Err("give either `command` (stdio) or `url` (streamable HTTP), not both".into()),
            _ => Err("give `command` (a program speaking MCP on stdio) or `url` (a streamable HTTP endpoint)".into()),
        }
    }
}

/// Replaces `${NAME}` in an `env` or `headers` value with Osprey's environment variable `NAME`,
/// so a token can live in the environment instead of the settings table. `$${` is a literal
/// `${`.
pub fn expand_env(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        if rest[..start].ends_with('$') {
            out.push_str(&rest[..start - 1]);
            out.push_str("${");
            rest = &rest[start + 2..];
            continue;
        }
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`${{` without a closing `}}` in `{value}`"))?;
        let name = &after[..end];
        let variable = std::env::var(name).map_err(|_| {
            format!("the environment variable `{name}` (named in the MCP settings) is not set")
        })?;
        out.push_str(&variable);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks a whole `mcp.servers` value: names usable in `mcp__<name>__<tool>`, each entry complete.
pub fn validate_servers(servers: &McpServers) -> Result<(), String> {
    for (name, config) in servers {
        check_server_name(name)?;
        config
            .endpoint()
            .map_err(|why| format!("MCP server `{name}`: {why}"))?;
    }
    Ok(())
}

/// Server names become part of tool names: letters, digits, `-` and single `_` only, so
/// `mcp__<server>__<tool>` splits back unambiguously.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !name.contains("__")
        && !name.starts_with('_')
        && !name.ends_with('_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a usable MCP server name: use up to 32 letters, digits, `-` and `_` \
             (no `__`, not at either end), for example `weather`"
        ))
    }
}

/// An Osprey result as MCP content: text as text, images as image content.
pub fn to_mcp_result(result: &ToolResult) -> CallToolResult {
    let content: Vec<McpContent> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => McpContent::text(text.clone()),
            ContentBlock::Image { mime_type, data } => {
                McpContent::image(data.clone(), mime_type.clone())
            }
        })
        .collect();
    if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// An MCP result as Osprey's: text and images kept, other content described in a line of text.
pub fn from_mcp_result(result: CallToolResult) -> ToolResult {
    let mut content = Vec::new();
    for block in result.content {
        match block {
            McpContent::Text(text) => content.push(ContentBlock::Text { text: text.text }),
            McpContent::Image(image) => content.push(ContentBlock::Image {
                mime_type: image.mime_type,
                data: image.data,
            }),
            McpContent::Audio(audio) => content.push(ContentBlock::Text {
                text: format!("[audio content ({}) not shown]", audio.mime_type),
            }),
            McpContent::Resource(resource) => {
                let value = serde_json::to_value(&resource.resource).unwrap_or_default();
                let text = value
                    .get("text")
                    .and_then(|t| t.as_str())
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        format!(
                            "[embedded resource {} not shown]",
                            value.get("uri").and_then(|u| u.as_str()).unwrap_or("?")
                        )
                    });
                content.push(ContentBlock::Text { text });
            }
            McpContent::ResourceLink(link) => content.push(ContentBlock::Text {
                text: format!("[resource link: {}]", link.uri),
            }),
            _ => content.push(ContentBlock::Text {
                text: "[content of a kind Osprey does not show]".into(),
            }),
        }
    }
    if content.is_empty()
        && let Some(structured) = result.structured_content
    {
        content.push(ContentBlock::Text {
            text: structured.to_string(),
        });
    }
    let is_error = result.is_error.unwrap_or(false);
    ToolResult {
        content,
        is_error,
        code: is_error.then_some(ErrorCode::ToolFailed),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_entries_need_exactly_one_endpoint() {
        let parse = |v: serde_json::Value| serde_json::from_value::<McpServers>(v).unwrap();
        validate_servers(&parse(json!({"weather": {"command": "weather-mcp"}}))).unwrap();
        validate_servers(&parse(
            json!({"docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}}),
        ))
        .unwrap();
        let err = validate_servers(&parse(json!({"both": {"command": "a", "url": "http://b"}})))
            .unwrap_err();
        assert!(err.contains("not both"), "{err}");
        let err = validate_servers(&parse(json!({"none": {}}))).unwrap_err();
        assert!(err.contains("give `command`"), "{err}");
        let err =
            validate_servers(&parse(json!({"ftp": {"url": "ftp://example.com"}}))).unwrap_err();
        assert!(err.contains("http://"), "{err}");
        let err = validate_servers(&parse(json!({"a__b": {"command": "x"}}))).unwrap_err();
        assert!(err.contains("not a usable MCP server name"), "{err}");
        let err = validate_servers(&parse(
            json!({"h": {"url": "http://x", "headers": {"Bad Header": "v"}}}),
        ))
        .unwrap_err();
        assert!(err.contains("header name"), "{err}");
        // Typos are refused rather than ignored.
        serde_json::from_value::<McpServers>(json!({"w": {"comand": "x"}})).unwrap_err();
        // The `type` that Claude Code and VS Code configs carry: checked against the endpoint.
        validate_servers(&parse(
            json!({"fs": {"type": "stdio", "command": "npx", "args": ["-y", "server"]},
                   "web": {"type": "http", "url": "https://example.com/mcp"}}),
        ))
        .unwrap();
        let err =
            validate_servers(&parse(json!({"x": {"type": "http", "command": "a"}}))).unwrap_err();
        assert!(err.contains("needs `url`"), "{err}");
        let err = validate_servers(&parse(
            json!({"old": {"type": "sse", "url": "http://x/sse"}}),
        ))
        .unwrap_err();
        assert!(err.contains("streamable HTTP"), "{err}");
    }

    #[test]
    fn environment_references_expand_and_missing_ones_are_named() {
        // PATH is set in any test environment; the other name is not.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(
            expand_env("Bearer ${PATH}!").unwrap(),
            format!("Bearer {path}!")
        );
        assert_eq!(expand_env("plain").unwrap(), "plain");
        assert_eq!(expand_env("cost $${PATH}").unwrap(), "cost ${PATH}");
        let err = expand_env("${OSPREY_SURELY_UNSET_VARIABLE}").unwrap_err();
        assert!(err.contains("`OSPREY_SURELY_UNSET_VARIABLE`"), "{err}");
        assert!(expand_env("${PATH").unwrap_err().contains("closing"));
    }

    #[test]
    fn results_keep_text_and_images_both_ways() {
        let ours = ToolResult {
            content: vec![
                ContentBlock::Text { text: "hi".into() },
                ContentBlock::Image {
                    mime_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                },
            ],
            is_error: false,
            code: None,
            ..Default::default()
        };
        let theirs = to_mcp_result(&ours);
        assert_eq!(theirs.is_error, Some(false));
        assert!(theirs.content[1].as_image().is_some());
        assert_eq!(from_mcp_result(theirs), ours);

        let failed = to_mcp_result(&ToolResult::error(ErrorCode::PolicyDenied, "no"));
        assert_eq!(failed.is_error, Some(true));
        let back = from_mcp_result(failed);
        assert!(back.is_error);
        assert_eq!(back.code, Some(ErrorCode::ToolFailed));
    }
}
