//! Shared by the `web_*` tests: loopback servers, a scripted DNS resolver (no real look-ups ever
//! happen in these tests) and a short way to run a `web` call.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use osprey_tools::web::{WebConfig, WebTool};
use osprey_tools::{DomainTool, ToolContext};
use osprey_types::{ErrorCode, Origin, ToolResult};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde_json::Value;

/// Serves `router` on 127.0.0.1 at a free port until the test's runtime ends.
pub async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    addr
}

/// A server that accepts connections and never says anything; the sockets stay open.
pub async fn silent_server() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    addr
}

/// Answers look-ups from a script: each name has a list of answers, used in turn (the last one
/// repeats). Names not in the script fail, so no test can reach a real DNS server.
#[derive(Clone, Default)]
pub struct ScriptedResolver {
    script: Arc<Mutex<HashMap<String, Vec<Vec<IpAddr>>>>>,
    calls: Arc<Mutex<HashMap<String, usize>>>,
    total: Arc<AtomicUsize>,
}

impl ScriptedResolver {
    pub fn new() -> Self {
        Self::default()
    }

    /// `name` answers `answers[0]` on the first look-up, `answers[1]` on the second, ...
    pub fn answer(self, name: &str, answers: &[&[&str]]) -> Self {
        let parsed = answers
            .iter()
            .map(|a| a.iter().map(|ip| ip.parse().unwrap()).collect())
            .collect();
        self.script.lock().unwrap().insert(name.to_string(), parsed);
        self
    }

    pub fn calls(&self, name: &str) -> usize {
        self.calls.lock().unwrap().get(name).copied().unwrap_or(0)
    }

    pub fn total_calls(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }
}

impl Resolve for ScriptedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let name = name.as_str().to_string();
        self.total.fetch_add(1, Ordering::SeqCst);
        let n = {
            let mut calls = self.calls.lock().unwrap();
            let n = calls.entry(name.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let answer = self
            .script
            .lock()
            .unwrap()
            .get(&name)
            .map(|answers| answers[(n - 1).min(answers.len() - 1)].clone());
        Box::pin(async move {
            match answer {
                Some(ips) => {
                    Ok(Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0))) as Addrs)
                }
                None => Err(format!("{name} is not in the test's DNS script").into()),
            }
        })
    }
}

/// A config for tests: loopback allowed, DNS from `resolver` only.
pub fn loopback_config(resolver: &ScriptedResolver) -> WebConfig {
    WebConfig {
        allow_loopback: true,
        resolver: Some(Arc::new(resolver.clone())),
        timeout: Duration::from_secs(10),
        ..WebConfig::default()
    }
}

pub fn loopback_tool() -> WebTool {
    WebTool::new(loopback_config(&ScriptedResolver::new())).unwrap()
}

pub fn ctx() -> ToolContext {
    ToolContext::new(Origin::User, Duration::from_secs(60))
}

/// Resolves `input` against the tool's table (as the registry does) and runs it.
pub async fn run(tool: &WebTool, input: Value) -> ToolResult {
    let call = tool.domain().resolve(input).expect("input fits the table");
    tool.run(&ctx(), call).await
}

pub fn assert_code(result: &ToolResult, code: ErrorCode) {
    assert!(result.is_error, "expected {code}, got success: {result:?}");
    assert_eq!(result.code, Some(code), "{}", result.text_content());
}
