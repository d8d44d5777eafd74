//! The safeguard against three corpora (tests/corpus/*.txt): every dangerous command is blocked,
//! directly and through the registry under the `full` policy without the tool running or anyone
//! being asked; every bypass attempt is blocked or asked at every policy level, never allowed
//! unasked; every everyday command passes, and the common read-only ones run unasked at the
//! default policy.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_tools::registry::DEFAULT_OUTPUT_CAP;
use osprey_tools::security::policy::{Subject, Verdict};
use osprey_tools::security::shell_syntax::analyze;
use osprey_tools::{
    ApprovalNeed, AskMode, AuditSink, Call, CallFacts, FixedApprover, Level, OriginRules,
    PathGuard, Policy, PolicyConfig, Registry, RegistryConfig, Safeguard, Tool, ToolContext,
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
        "bypass.txt" => include_str!("corpus/bypass.txt"),
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
    assert!(corpus("bypass.txt").len() >= 300);
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
    registry_at(Level::Full, AskMode::OnMiss)
}

fn registry_at(level: Level, ask: AskMode) -> (Registry, Arc<FakeShell>) {
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(
            PolicyConfig {
                level,
                ask,
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

/// Every level and ask mode a person can choose.
const SETTINGS: &[(Level, AskMode)] = &[
    (Level::Allowlist, AskMode::OnMiss),
    (Level::Full, AskMode::OnMiss),
    (Level::Allowlist, AskMode::Off),
    (Level::Full, AskMode::Off),
    (Level::Allowlist, AskMode::Always),
    (Level::Full, AskMode::Always),
    (Level::Deny, AskMode::OnMiss),
];

/// What happens to a shell command, judged as the registry judges it: the safeguard first,
/// then the policy with the safeguard's reasons to ask.
fn judge(guard: &Safeguard, policy: &Policy, command: &str) -> Result<Verdict, String> {
    let analysis = analyze(command);
    if let Err(refusal) = guard.check_command(&analysis) {
        return Err(refusal.message);
    }
    let facts = CallFacts {
        approval: ApprovalNeed::Required,
        summary: command.to_string(),
        command: Some(command.to_string()),
        ..Default::default()
    };
    let must_ask = guard.must_ask(&analysis, None);
    Ok(policy.evaluate(&Subject {
        tool: "shell",
        resource: Some("bash"),
        action: Some("exec"),
        session_id: None,
        facts: &facts,
        analysis: Some(&analysis),
        must_ask: must_ask.as_deref(),
    }))
}

#[test]
fn no_bypass_attempt_is_allowed_unasked_at_any_level() {
    let guard = safeguard();
    let mut wrong = Vec::new();
    for &(level, ask) in SETTINGS {
        let policy = Policy::new(
            PolicyConfig {
                level,
                ask,
                ..Default::default()
            },
            None,
        )
        .expect("policy");
        for command in corpus("bypass.txt") {
            if let Ok(Verdict::Allow(reason)) = judge(&guard, &policy, &command) {
                wrong.push(format!(
                    "  [{level:?}/{ask:?}] {}  -> {}",
                    show(&command),
                    reason.as_str()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} bypass attempt(s) were allowed without asking:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[tokio::test]
async fn the_registry_never_runs_a_bypass_attempt_unasked() {
    // The person says no to every question, so nothing that is asked runs either: a run
    // means the call was allowed without anyone being asked.
    for &(level, ask) in SETTINGS {
        let (registry, tool) = registry_at(level, ask);
        let approver = Arc::new(FixedApprover::new(ApprovalAnswer::Deny));
        let mut wrong = Vec::new();
        for command in corpus("bypass.txt") {
            let ctx = ToolContext::new(Origin::User, Duration::from_secs(5))
                .with_approver(approver.clone());
            let asked = approver.count();
            let runs = tool.runs.load(Ordering::SeqCst);
            let result = registry
                .execute(&ctx, "shell", json!({"command": command}))
                .await;
            let ran = tool.runs.load(Ordering::SeqCst) != runs;
            let was_asked = approver.count() != asked;
            let refused = matches!(
                result.code,
                Some(
                    ErrorCode::SafeguardBlocked
                        | ErrorCode::SensitivePath
                        | ErrorCode::PolicyDenied
                        | ErrorCode::ApprovalDenied
                )
            );
            // Blocked outright must not bother anyone; asked must end as the person's no.
            let blocked = matches!(
                result.code,
                Some(ErrorCode::SafeguardBlocked | ErrorCode::SensitivePath)
            );
            if ran || !result.is_error || !refused || (blocked && was_asked) {
                wrong.push(format!(
                    "  {}  -> code={:?} ran={ran} asked={was_asked}",
                    show(&command),
                    result.code
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "[{level:?}/{ask:?}] {} bypass attempt(s) got past the registry:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}

#[test]
fn no_bypass_attempt_is_in_another_corpus() {
    let bypass = corpus("bypass.txt");
    let mut seen = std::collections::HashSet::new();
    for command in &bypass {
        assert!(seen.insert(command), "listed twice: {}", show(command));
    }
    for other in ["safe.txt", "dangerous.txt"] {
        for command in corpus(other) {
            assert!(
                !seen.contains(&command),
                "{} is in bypass.txt and {other}",
                show(&command)
            );
        }
    }
}

#[test]
fn common_read_only_commands_stay_unasked_at_the_default_policy() {
    let guard = safeguard();
    let policy = Policy::new(PolicyConfig::default(), None).expect("policy");
    let mut wrong = Vec::new();
    for command in [
        "ls",
        "ls -la",
        "ls -la src",
        "ls -lh tests/corpus",
        "cat Cargo.toml",
        "cat -n Cargo.toml",
        "head -n 20 Cargo.toml",
        "head -20 Cargo.toml",
        "tail -n 5 Cargo.toml",
        "wc -l src/lib.rs",
        "grep -rn TODO src",
        "grep -c fn src/lib.rs",
        "rg -n Safeguard src",
        "rg --files src",
        "sort -u tests/corpus/safe.txt",
        "uniq -c tests/corpus/safe.txt",
        "cut -d: -f1 Cargo.toml",
        "find . -name '*.rs'",
        "find src -type f -name '*.rs'",
        "du -sh src",
        "df -h",
        "stat Cargo.toml",
        "file Cargo.toml",
        "diff -u Cargo.toml Cargo.toml",
        "tree -L 2 src",
        "jq -r .name package.json",
        "pwd",
        "date +%F",
        "echo hello",
        "which cargo",
        "git status",
        "git status --short",
        "git log --oneline -n 20",
        "git log -p -1",
        "git diff",
        "git diff --staged",
        "git diff HEAD~1 -- src",
        "git show HEAD --stat",
        "git branch -a",
        "git blame src/lib.rs",
        "git rev-parse HEAD",
        "git ls-files",
        "ps aux",
        "cat Cargo.toml | grep name | head -1",
        "ls src | wc -l",
    ] {
        match judge(&guard, &policy, command) {
            Ok(Verdict::Allow(_)) => {}
            other => wrong.push(format!("  {command}  -> {other:?}")),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} everyday read(s) were not allowed unasked:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
