//! Tool governance through the registry, with real SQLite files: tools switched off vanish and
//! are refused, quotas per session and per day (kept across a restart), the circuit breaker
//! (opens on failures only, refuses with when to retry, a trial after the cool-down, closed by a
//! success), unknown fields refused with the accepted names and aliases accepted, and autonomous
//! mode allowing what the policy would ask but never what the safeguard, the person's denied
//! paths and blocklist refuse, nor what only a person's answer may let run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_db::{AuditQuery, Database};
use osprey_tools::domain::Domain;
use osprey_tools::file::FileTool;
use osprey_tools::shell::{ShellConfig, ShellSandbox, ShellTool};
use osprey_tools::{
    ApprovalNeed, AuditSink, BreakerConfig, Call, CallFacts, CheckOutcome, DomainTool, ExecTool,
    FieldType, Governance, GovernanceConfig, Level, PathGuard, Policy, Quota, Registry,
    RegistryConfig, Safeguard, ToolContext,
};
use osprey_types::{ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};

/// A tool that fails while `failing` is set, and counts the calls that reached it.
struct Flaky {
    domain: Domain,
    failing: Arc<AtomicBool>,
    runs: Arc<AtomicUsize>,
}

impl DomainTool for Flaky {
    fn domain(&self) -> &Domain {
        &self.domain
    }
    fn facts(&self, _call: &Call) -> CallFacts {
        CallFacts::default()
    }
    fn run<'a>(&'a self, _ctx: &'a ToolContext, _call: Call) -> BoxFuture<'a, ToolResult> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let failing = self.failing.load(Ordering::SeqCst);
        Box::pin(async move {
            if failing {
                ToolResult::error(ErrorCode::ToolFailed, "the backend said 503")
            } else {
                ToolResult::text("fine")
            }
        })
    }
}

struct Fixture {
    registry: Registry,
    db: Database,
    failing: Arc<AtomicBool>,
    runs: Arc<AtomicUsize>,
    dir: tempfile::TempDir,
}

fn fixture(level: Level, config: GovernanceConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let home = dir.path().join("home");
    let workspace = home.join("project");
    std::fs::create_dir_all(workspace.join("private")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PLANTED-PRIVATE-KEY").unwrap();
    let governance = Governance::new(db.tool_usage(), Some(home.clone()));
    governance.set_config(config).unwrap();
    // As the core wires it: every path guard refuses the denied paths too.
    let paths = PathGuard::new(Some(home.clone()), dir.path().join("data"))
        .with_denied(governance.denied_paths());
    let registry = Registry::new(RegistryConfig {
        safeguard: Safeguard::new(paths.clone()),
        audit: AuditSink::new(db.audit()),
        ..RegistryConfig::new(Policy::at_level(level), dir.path().join("data"))
    });
    registry.set_governance(governance);
    let failing = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    registry.register_domain(Flaky {
        domain: Domain::new("flaky", "Fails on demand")
            .resource(
                "thing",
                &[],
                &[
                    ("poke", "Poke it", ApprovalNeed::None),
                    ("prod", "Prod it", ApprovalNeed::None),
                ],
            )
            .field("label", FieldType::String, "A label"),
        failing: failing.clone(),
        runs: runs.clone(),
    });
    registry.register_domain(FileTool::new(paths).with_workspaces(vec![workspace.clone()]));
    let shell = ShellConfig {
        parent_env: Some(vec![
            (
                "PATH".into(),
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            ),
            ("HOME".into(), home.clone().into_os_string()),
        ]),
        default_cwd: Some(workspace.clone()),
        sandbox: ShellSandbox {
            workspaces: vec![workspace],
            hidden: vec![dir.path().join("data")],
            ..ShellSandbox::default()
        },
        ..ShellConfig::default()
    };
    if cfg!(target_os = "linux") {
        osprey_tests::build_sandbox_launcher();
    }
    registry.register_domain(ShellTool::new(shell.clone()));
    registry.register_domain(ExecTool::new(shell));
    Fixture {
        registry,
        db,
        failing,
        runs,
        dir,
    }
}

fn ctx(session: &str) -> ToolContext {
    ToolContext::new(Origin::User, Duration::from_secs(60)).with_session(session)
}

async fn call(f: &Fixture, session: &str, tool: &str, input: Value) -> ToolResult {
    f.registry.execute(&ctx(session), tool, input).await
}

fn poke() -> Value {
    json!({"action": "poke"})
}

#[tokio::test]
async fn switched_off_tools_vanish_from_the_list_and_are_refused() {
    let f = fixture(
        Level::Full,
        GovernanceConfig {
            disabled: vec!["shell".into(), "flaky".into()],
            ..Default::default()
        },
    );
    let names: Vec<String> = f
        .registry
        .specs()
        .into_iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(names, ["file"], "the `shell` category takes exec too");
    let refused = call(&f, "s", "exec", json!({"program": "true"})).await;
    assert_eq!(refused.code, Some(ErrorCode::ToolDisabled), "{refused:?}");
    assert!(
        refused
            .text_content()
            .contains("`shell` tools (which include `exec`)")
            && refused.text_content().contains("Settings"),
        "{}",
        refused.text_content()
    );
    assert_eq!(
        call(&f, "s", "flaky", poke()).await.code,
        Some(ErrorCode::ToolDisabled)
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
    // Switched back on: listed and callable again, without a restart.
    f.registry
        .governance()
        .set_config(GovernanceConfig::default())
        .unwrap();
    assert!(!call(&f, "s", "flaky", poke()).await.is_error);
    assert_eq!(f.registry.specs().len(), 4);
}

#[tokio::test]
async fn quotas_count_per_session_and_per_day_and_the_day_survives_a_restart() {
    let quotas = [
        (
            "flaky".to_string(),
            Quota {
                per_session: Some(2),
                per_day: Some(4),
            },
        ),
        (
            "flaky.thing.prod".to_string(),
            Quota {
                per_session: Some(1),
                per_day: None,
            },
        ),
    ];
    let config = GovernanceConfig {
        quotas: quotas.into_iter().collect(),
        ..Default::default()
    };
    let f = fixture(Level::Full, config.clone());
    assert!(!call(&f, "a", "flaky", poke()).await.is_error);
    assert!(!call(&f, "a", "flaky", poke()).await.is_error);
    let third = call(&f, "a", "flaky", poke()).await;
    assert_eq!(third.code, Some(ErrorCode::QuotaExceeded), "{third:?}");
    let text = third.text_content();
    assert!(
        text.contains("2 calls per session and 2 have run") && text.contains("new session"),
        "{text}"
    );
    // Another session has its own count, within the day's.
    let prod = json!({"action": "prod"});
    assert!(!call(&f, "b", "flaky", prod.clone()).await.is_error);
    let again = call(&f, "b", "flaky", prod).await;
    assert!(
        again
            .text_content()
            .contains("`flaky.thing.prod` is 1 calls per session"),
        "{again:?}"
    );
    assert!(!call(&f, "c", "flaky", poke()).await.is_error);
    let over_day = call(&f, "c", "flaky", poke()).await;
    assert_eq!(over_day.code, Some(ErrorCode::QuotaExceeded));
    assert!(
        over_day
            .text_content()
            .contains("4 calls per day and 4 have run")
            && over_day.text_content().contains("resets at"),
        "{over_day:?}"
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 4, "refused calls never ran");
    // A refusal by quota is not counted: `--check` says so without using one.
    let check = f.registry.check(&ctx("d"), "flaky", poke()).await;
    assert!(matches!(
        check,
        CheckOutcome::Refused {
            code: ErrorCode::QuotaExceeded,
            ..
        }
    ));

    // A new process on the same data folder: the day's count is still there.
    let reopened = Database::open_in(f.dir.path()).unwrap();
    let governance = Governance::new(reopened.tool_usage(), None);
    governance.set_config(config).unwrap();
    f.registry.set_governance(governance);
    let after = call(&f, "e", "flaky", poke()).await;
    assert_eq!(after.code, Some(ErrorCode::QuotaExceeded), "{after:?}");
    f.registry.audit().flush();
    let audit =
        f.db.audit()
            .list(&AuditQuery {
                tool: Some("flaky".into()),
                ..Default::default()
            })
            .unwrap();
    assert!(audit.iter().any(|r| r.decision == "quota_exceeded"));
}

#[tokio::test]
async fn the_breaker_opens_after_failures_refuses_until_the_cool_down_and_a_success_closes_it() {
    let f = fixture(
        Level::Full,
        GovernanceConfig {
            breaker: BreakerConfig {
                failures: 3,
                window_seconds: 60,
                cooldown_seconds: 1,
            },
            ..Default::default()
        },
    );
    f.failing.store(true, Ordering::SeqCst);
    for _ in 0..2 {
        assert_eq!(
            call(&f, "s", "flaky", poke()).await.code,
            Some(ErrorCode::ToolFailed)
        );
        // Bad input is the model's mistake, not the tool's: it does not count.
        let bad = call(&f, "s", "flaky", json!({"action": "poke", "lable": "x"})).await;
        assert_eq!(bad.code, Some(ErrorCode::InvalidInput));
    }
    assert_eq!(f.runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        call(&f, "s", "flaky", poke()).await.code,
        Some(ErrorCode::ToolFailed)
    );
    let open = call(&f, "s", "flaky", poke()).await;
    assert_eq!(open.code, Some(ErrorCode::CircuitOpen), "{open:?}");
    let text = open.text_content();
    assert!(
        text.contains("failed 3 times in a row")
            && text.contains("the backend said 503")
            && text.contains("retry after"),
        "{text}"
    );
    assert_eq!(
        f.runs.load(Ordering::SeqCst),
        3,
        "an open breaker calls nothing"
    );
    // Other tools are not affected.
    assert!(
        !call(&f, "s", "file", json!({"action": "glob", "pattern": "*"}))
            .await
            .is_error
    );

    // After the cool-down one trial runs; failing again reopens at once.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        call(&f, "s", "flaky", poke()).await.code,
        Some(ErrorCode::ToolFailed)
    );
    assert_eq!(
        call(&f, "s", "flaky", poke()).await.code,
        Some(ErrorCode::CircuitOpen)
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    f.failing.store(false, Ordering::SeqCst);
    assert!(!call(&f, "s", "flaky", poke()).await.is_error);
    // Closed: a single failure does not open it again.
    f.failing.store(true, Ordering::SeqCst);
    call(&f, "s", "flaky", poke()).await;
    assert_eq!(
        call(&f, "s", "flaky", poke()).await.code,
        Some(ErrorCode::ToolFailed)
    );
}

#[tokio::test]
async fn unknown_fields_are_refused_with_the_accepted_names_and_aliases_are_taken() {
    let f = fixture(Level::Full, GovernanceConfig::default());
    let refused = call(
        &f,
        "s",
        "file",
        json!({"action": "read", "pth": "notes.txt"}),
    )
    .await;
    assert_eq!(refused.code, Some(ErrorCode::InvalidInput));
    let text = refused.text_content();
    assert!(
        text.contains("`pth`: did you mean `path`?")
            && text.contains("its fields are: resource, action, path"),
        "{text}"
    );
    let workspace = f.dir.path().join("home/project");
    std::fs::write(workspace.join("notes.txt"), "alpha beta").unwrap();
    let path = workspace.join("notes.txt").display().to_string();
    let edited = call(
        &f,
        "s",
        "file",
        json!({"action": "edit", "file_path": path, "old_string": "beta", "new_string": "gamma"}),
    )
    .await;
    assert!(!edited.is_error, "{edited:?}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "alpha gamma"
    );
    let both = call(
        &f,
        "s",
        "file",
        json!({"action": "read", "path": path, "file_path": path}),
    )
    .await;
    assert!(both.text_content().contains("give it once"), "{both:?}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn autonomous_mode_allows_what_the_policy_would_ask_and_never_what_the_safeguard_refuses() {
    let config = GovernanceConfig {
        autonomous: true,
        blocklist: vec!["git push".into()],
        denied_paths: vec!["~/project/private".into()],
        ..Default::default()
    };
    // Level allowlist, and nobody attached to answer: without autonomy every change is refused.
    let f = fixture(Level::Allowlist, config);
    let workspace = f.dir.path().join("home/project");
    let made = call(
        &f,
        "s",
        "shell",
        json!({"action": "exec", "command": "echo done > made.txt", "yield_ms": 0}),
    )
    .await;
    assert!(!made.is_error, "{made:?}");
    assert!(workspace.join("made.txt").exists());
    let ran = call(
        &f,
        "s",
        "exec",
        json!({"program": "touch", "args": ["exec.txt"]}),
    )
    .await;
    assert!(!ran.is_error, "{ran:?}");
    assert!(workspace.join("exec.txt").exists());
    let check = f
        .registry
        .check(
            &ctx("s"),
            "shell",
            json!({"action": "exec", "command": "touch x"}),
        )
        .await;
    assert_eq!(
        check,
        CheckOutcome::Allow {
            reason: "autonomous".into()
        }
    );

    // The safeguard, the blocklist and the denied paths still refuse.
    for (tool, input) in [
        ("shell", json!({"action": "exec", "command": "rm -rf ~"})),
        ("exec", json!({"program": "rm", "args": ["-rf", "~"]})),
        ("exec", json!({"program": "sudo", "args": ["touch", "x"]})),
        (
            "shell",
            json!({"action": "exec", "command": "git push origin main"}),
        ),
        ("exec", json!({"program": "git", "args": ["push"]})),
        (
            "shell",
            json!({"action": "exec", "command": "echo x > private/a"}),
        ),
        (
            "file",
            json!({"action": "write", "path": workspace.join("private/a").display().to_string(), "content": "x"}),
        ),
    ] {
        let refused = call(&f, "s", tool, input.clone()).await;
        assert_eq!(
            refused.code,
            Some(ErrorCode::SafeguardBlocked),
            "{tool} {input}: {refused:?}"
        );
    }
    assert!(!workspace.join("private/a").exists());
    // What only a person's answer may let run is still asked (and so refused here): a
    // credential read, and a command outside the sandbox.
    let key = call(
        &f,
        "s",
        "shell",
        json!({"action": "exec", "command": "cat ~/.ssh/id_rsa", "yield_ms": 0}),
    )
    .await;
    assert_eq!(key.code, Some(ErrorCode::PolicyDenied), "{key:?}");
    assert!(!key.text_content().contains("PLANTED"));
    let outside = call(
        &f,
        "s",
        "shell",
        json!({"action": "exec", "command": "true", "sandbox": false, "reason": "test"}),
    )
    .await;
    assert_eq!(outside.code, Some(ErrorCode::PolicyDenied), "{outside:?}");

    f.registry.audit().flush();
    let rows = f.db.audit().page(&AuditQuery::default()).unwrap();
    let autonomous = rows
        .iter()
        .filter(|r| r.entry.decision == "autonomous")
        .count();
    assert_eq!(autonomous, 2, "the two changes ran as autonomous");
    assert!(
        rows.iter()
            .filter(|r| r.entry.decision == "autonomous")
            .all(|r| r.outcome == "allowed")
    );

    // Off again: the same change is refused (no one to ask).
    let mut off = f.registry.governance().config();
    off.autonomous = false;
    f.registry.governance().set_config(off).unwrap();
    let refused = call(
        &f,
        "s",
        "exec",
        json!({"program": "touch", "args": ["again.txt"]}),
    )
    .await;
    assert_eq!(refused.code, Some(ErrorCode::PolicyDenied), "{refused:?}");
}

#[tokio::test]
async fn denied_paths_hold_inside_the_file_tools_walks_and_through_links() {
    let f = fixture(
        Level::Full,
        GovernanceConfig {
            denied_paths: vec!["~/project/private".into()],
            ..Default::default()
        },
    );
    let workspace = f.dir.path().join("home/project");
    std::fs::write(workspace.join("private/plan.txt"), "SECRET-PLAN").unwrap();
    std::fs::write(workspace.join("open.txt"), "SECRET-PLAN is public here").unwrap();
    let grep = || {
        call(
            &f,
            "s",
            "file",
            json!({"action": "grep", "pattern": "SECRET-PLAN", "path": workspace.display().to_string()}),
        )
    };
    let text = grep().await.text_content();
    assert!(text.contains("open.txt"), "{text}");
    assert!(
        !text.contains("plan.txt"),
        "the walk went into the denied folder: {text}"
    );
    let listed = call(
        &f,
        "s",
        "file",
        json!({"action": "glob", "pattern": "**/*.txt", "path": workspace.display().to_string()}),
    )
    .await;
    assert!(!listed.text_content().contains("plan.txt"), "{listed:?}");
    // A link in the workspace to the denied folder is the denied folder.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(workspace.join("private"), workspace.join("shortcut")).unwrap();
        let read = call(
            &f,
            "s",
            "file",
            json!({"action": "read", "path": workspace.join("shortcut/plan.txt").display().to_string()}),
        )
        .await;
        assert_eq!(read.code, Some(ErrorCode::SafeguardBlocked), "{read:?}");
        assert!(!read.text_content().contains("SECRET-PLAN"));
    }
    // Lifted in Settings: the same guards see it at once.
    f.registry
        .governance()
        .set_config(GovernanceConfig::default())
        .unwrap();
    let found = grep().await;
    assert!(found.text_content().contains("plan.txt"), "{found:?}");
}
