//! The safeguard against two corpora of real-world commands (tests/corpus/*.txt): every
//! dangerous one is blocked, directly and through the registry under the `full` policy without
//! the tool running or anyone being asked; every everyday one passes.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_tools::registry::DEFAULT_OUTPUT_CAP;
use osprey_tools::security::shell_syntax::analyze;
use osprey_tools::{
    ApprovalNeed, AuditSink, Call, CallFacts, FixedApprover, Level, OriginRules, PathGuard, Policy,
    PolicyConfig, Registry, RegistryConfig, Safeguard, Tool, ToolContext,
};
use osprey_types::{ApprovalAnswer, ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};

const HOME: &str = "/home/tester";
const DATA: &str = "/home/tester/.local/share/osprey";

/// The corpora are compiled in, so the test binary never reads a path from another checkout.
fn corpus(name: &str) -> Vec<String> {
    let text = match name {
        "dangerous.txt" => include_str!("corpus/dangerous.txt"),
        "safe.txt" => include_str!("corpus/safe.txt"),
        other => panic!("no corpus named {other}"),
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.replace('⏎', "\n"))
        .collect()
}

fn safeguard() -> Safeguard {
    Safeguard::new(PathGuard::new(
        Some(PathBuf::from(HOME)),
        PathBuf::from(DATA),
    ))
}

fn show(command: &str) -> String {
    command.replace('\n', "⏎")
}

#[test]
fn corpora_are_large_enough() {
    assert!(corpus("dangerous.txt").len() >= 150);
    assert!(corpus("safe.txt").len() >= 150);
}

#[test]
fn every_dangerous_command_is_blocked() {
    let guard = safeguard();
    let mut missed = Vec::new();
    for command in corpus("dangerous.txt") {
        match guard.check_command(&analyze(&command)) {
            Err(refusal) if refusal.code == ErrorCode::SafeguardBlocked => {}
            Err(refusal) => missed.push(format!(
                "  {}  (wrong code {:?})",
                show(&command),
                refusal.code
            )),
            Ok(()) => missed.push(format!("  {}", show(&command))),
        }
    }
    assert!(
        missed.is_empty(),
        "{} dangerous command(s) were not blocked:\n{}",
        missed.len(),
        missed.join("\n")
    );
}

#[test]
fn no_everyday_command_is_blocked() {
    let guard = safeguard();
    let mut wrong = Vec::new();
    for command in corpus("safe.txt") {
        if let Err(refusal) = guard.check_command(&analyze(&command)) {
            wrong.push(format!(
                "  {}\n      -> {}",
                show(&command),
                refusal.message
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} everyday command(s) were blocked:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A stand-in for the shell tool: states the command, counts runs.
struct FakeShell {
    schema: Value,
    runs: AtomicUsize,
}

impl Tool for FakeShell {
    fn name(&self) -> &str {
        "shell"
    }
    fn description(&self) -> &str {
        "runs a shell command (test double)"
    }
    fn schema(&self) -> &Value {
        &self.schema
    }
    fn facts(&self, call: &Call) -> CallFacts {
        let command = call.str("command").unwrap_or_default().to_string();
        CallFacts {
            approval: ApprovalNeed::Required,
            summary: command.clone(),
            command: Some(command),
            ..Default::default()
        }
    }
    fn execute<'a>(&'a self, _ctx: &'a ToolContext, _call: Call) -> BoxFuture<'a, ToolResult> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { ToolResult::text("ran") })
    }
}

fn full_registry() -> (Registry, Arc<FakeShell>) {
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(
            PolicyConfig {
                level: Level::Full,
                ..Default::default()
            },
            None,
        )
        .expect("policy"),
        origin_rules: OriginRules::none(),
        safeguard: safeguard(),
        audit: AuditSink::discard(),
        output_cap: DEFAULT_OUTPUT_CAP,
    });
    let tool = Arc::new(FakeShell {
        schema: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        runs: AtomicUsize::new(0),
    });
    registry.register(tool.clone());
    (registry, tool)
}

#[tokio::test]
async fn the_registry_blocks_every_dangerous_command_under_full_without_asking() {
    let (registry, tool) = full_registry();
    let approver = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let mut wrong = Vec::new();
    for command in corpus("dangerous.txt") {
        let ctx =
            ToolContext::new(Origin::User, Duration::from_secs(5)).with_approver(approver.clone());
        let asked = approver.count();
        let runs = tool.runs.load(Ordering::SeqCst);
        let result = registry
            .execute(&ctx, "shell", json!({"command": command}))
            .await;
        let ok = result.is_error
            && result.code == Some(ErrorCode::SafeguardBlocked)
            && tool.runs.load(Ordering::SeqCst) == runs
            && approver.count() == asked;
        if !ok {
            wrong.push(format!(
                "  {}  -> is_error={} code={:?} ran={} asked={}",
                show(&command),
                result.is_error,
                result.code,
                tool.runs.load(Ordering::SeqCst) != runs,
                approver.count() != asked
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} dangerous command(s) got past the registry:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[tokio::test]
async fn the_registry_runs_everyday_commands_under_full() {
    let (registry, tool) = full_registry();
    let approver = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let mut wrong = Vec::new();
    for command in corpus("safe.txt") {
        let ctx =
            ToolContext::new(Origin::User, Duration::from_secs(5)).with_approver(approver.clone());
        let runs = tool.runs.load(Ordering::SeqCst);
        let result = registry
            .execute(&ctx, "shell", json!({"command": command}))
            .await;
        if result.is_error || tool.runs.load(Ordering::SeqCst) != runs + 1 {
            wrong.push(format!(
                "  {}  -> {}",
                show(&command),
                result.text_content()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} everyday command(s) did not run:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
