//! The registry's seven steps, their order, and what each writes to the audit log, exercised
//! with a probe tool, a recording hook dispatcher and a scripted approver.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_db::{AuditQuery, Database};
use osprey_tools::domain::Domain;
use osprey_tools::hooks::{FilterOutcome, HookDispatcher, TOOL_POST_EXECUTE, TOOL_PRE_EXECUTE};
use osprey_tools::{
    ApprovalNeed, Approver, AskMode, AuditSink, Call, CallFacts, CheckOutcome, DomainTool,
    FieldType, Level, OriginRules, PathGuard, Policy, PolicyConfig, Registry, RegistryChange,
    RegistryConfig, Safeguard, ToolContext,
};
use osprey_types::{
    ApprovalAnswer, ApprovalRequest, ErrorCode, GrantDuration, GrantScope, Origin, ToolResult,
};
use serde_json::{Value, json};

/// Shared log of what happened, in order, across the hook, the approver and the tool.
type Events = Arc<Mutex<Vec<String>>>;

struct Probe {
    domain: Domain,
    events: Events,
}

impl Probe {
    fn new(events: Events) -> Self {
        let domain = Domain::new("probe", "A tool that records its calls")
            .resource(
                "cmd",
                &["command"],
                &[
                    ("run", "Run a command", ApprovalNeed::Required),
                    ("look", "Read something", ApprovalNeed::None),
                    ("hang", "Never finish", ApprovalNeed::None),
                    ("panic", "Panic", ApprovalNeed::None),
                    ("big", "Return a lot", ApprovalNeed::None),
                    ("write", "Write a file", ApprovalNeed::Required),
                ],
            )
            .field("command", FieldType::String, "The command")
            .required_for(&["run"])
            .field("path", FieldType::String, "A path")
            .required_for(&["write"]);
        Probe { domain, events }
    }
}

impl DomainTool for Probe {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        CallFacts {
            command: call.str("command").map(String::from),
            write_paths: call.str("path").map(Into::into).into_iter().collect(),
            summary: call
                .str("command")
                .or(call.str("path"))
                .unwrap_or_default()
                .to_string(),
            ..Default::default()
        }
    }

    fn run<'a>(&'a self, _ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            self.events
                .lock()
                .unwrap()
                .push(format!("execute {}", call.action()));
            match call.action() {
                "hang" => {
                    futures::future::pending::<()>().await;
                    unreachable!()
                }
                "panic" => panic!("probe exploded"),
                "big" => ToolResult::text("x".repeat(10_000)),
                _ => ToolResult::text(format!("ran {}", call.str("command").unwrap_or("-"))),
            }
        })
    }
}

/// Records every filter call and can rewrite or handle.
struct RecordingHooks {
    events: Events,
    rewrite_command: Option<String>,
    handle: bool,
    post_suffix: Option<String>,
}

impl HookDispatcher for RecordingHooks {
    fn has_subscribers(&self, _hook: &str) -> bool {
        true
    }
    fn apply_filter<'a>(
        &'a self,
        hook: &'a str,
        mut payload: Value,
    ) -> BoxFuture<'a, FilterOutcome> {
        Box::pin(async move {
            self.events.lock().unwrap().push(format!("hook {hook}"));
            if hook == TOOL_PRE_EXECUTE {
                if self.handle {
                    payload["result"] =
                        serde_json::to_value(ToolResult::text("from hook")).unwrap();
                    return FilterOutcome {
                        payload,
                        handled: true,
                    };
                }
                if let Some(cmd) = &self.rewrite_command {
                    payload["input"]["command"] = json!(cmd);
                }
            }
            if hook == TOOL_POST_EXECUTE
                && let Some(suffix) = &self.post_suffix
            {
                let text = payload["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                payload["result"]["content"][0]["text"] = json!(format!("{text}{suffix}"));
            }
            FilterOutcome {
                payload,
                handled: false,
            }
        })
    }
    fn do_action<'a>(&'a self, _hook: &'a str, _payload: Value) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// Answers every question with a fixed answer and counts the questions.
struct Scripted {
    answer: ApprovalAnswer,
    asked: AtomicUsize,
    events: Events,
    last: Mutex<Option<ApprovalRequest>>,
}

impl Scripted {
    fn new(answer: ApprovalAnswer, events: Events) -> Arc<Self> {
        Arc::new(Scripted {
            answer,
            asked: AtomicUsize::new(0),
            events,
            last: Mutex::new(None),
        })
    }
}

impl Approver for Scripted {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.events
            .lock()
            .unwrap()
            .push(format!("ask {}", request.summary));
        *self.last.lock().unwrap() = Some(request);
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

struct Fixture {
    registry: Registry,
    events: Events,
    db: Database,
    _dir: tempfile::TempDir,
}

fn fixture(level: Level, ask: AskMode) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let events: Events = Arc::default();
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(
            PolicyConfig {
                level,
                ask,
                ..Default::default()
            },
            Some(db.grants()),
        )
        .unwrap(),
        origin_rules: OriginRules {
            deny: [(Origin::Comm, vec!["probe.run".to_string()])].into(),
        },
        safeguard: Safeguard::new(PathGuard::new(
            Some("/home/tester".into()),
            dir.path().join("data"),
        )),
        audit: AuditSink::new(db.audit()),
        output_cap: 1000,
    });
    registry.register_domain(Probe::new(events.clone()));
    Fixture {
        registry,
        events,
        db,
        _dir: dir,
    }
}

fn ctx() -> ToolContext {
    ToolContext::new(Origin::User, Duration::from_secs(30)).with_session("s1")
}

fn events(f: &Fixture) -> Vec<String> {
    f.events.lock().unwrap().clone()
}

#[tokio::test]
async fn a_hook_sees_the_call_before_the_policy_refuses_it() {
    let f = fixture(Level::Deny, AskMode::OnMiss);
    f.registry.set_hooks(Arc::new(RecordingHooks {
        events: f.events.clone(),
        rewrite_command: None,
        handle: false,
        post_suffix: None,
    }));
    let r = f
        .registry
        .execute(&ctx(), "probe", json!({"action": "run", "command": "make"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::PolicyDenied), "{r:?}");
    assert_eq!(events(&f), ["hook tool.pre_execute"]);
}

#[tokio::test]
async fn a_hook_rewrite_is_judged_by_policy_and_safeguard() {
    let f = fixture(Level::Full, AskMode::OnMiss);
    f.registry.set_hooks(Arc::new(RecordingHooks {
        events: f.events.clone(),
        rewrite_command: Some("sudo make".into()),
        handle: false,
        post_suffix: None,
    }));
    let r = f
        .registry
        .execute(&ctx(), "probe", json!({"action": "run", "command": "make"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::SafeguardBlocked), "{r:?}");
    assert!(!events(&f).iter().any(|e| e.starts_with("execute")));
}

#[tokio::test]
async fn a_hook_that_handles_the_call_skips_the_tool_and_a_post_hook_can_rewrite_results() {
    let f = fixture(Level::Full, AskMode::OnMiss);
    f.registry.set_hooks(Arc::new(RecordingHooks {
        events: f.events.clone(),
        rewrite_command: None,
        handle: true,
        post_suffix: None,
    }));
    let r = f
        .registry
        .execute(&ctx(), "probe", json!({"action": "run", "command": "make"}))
        .await;
    assert_eq!(r.text_content(), "from hook");
    assert_eq!(events(&f), ["hook tool.pre_execute"]);

    let f = fixture(Level::Full, AskMode::OnMiss);
    f.registry.set_hooks(Arc::new(RecordingHooks {
        events: f.events.clone(),
        rewrite_command: None,
        handle: false,
        post_suffix: Some(" (checked)".into()),
    }));
    let r = f
        .registry
        .execute(&ctx(), "probe", json!({"action": "run", "command": "make"}))
        .await;
    assert_eq!(r.text_content(), "ran make (checked)");
    assert_eq!(
        events(&f),
        [
            "hook tool.pre_execute",
            "execute run",
            "hook tool.post_execute"
        ]
    );
}

#[tokio::test]
async fn the_safeguard_runs_after_an_approval_and_under_full() {
    // A lasting grant approves `sudo *`, yet the safeguard still refuses, and nobody is asked.
    let f = fixture(Level::Allowlist, AskMode::OnMiss);
    let approver = Scripted::new(ApprovalAnswer::Once, f.events.clone());
    f.registry.set_approver(Some(approver.clone()));
    f.registry
        .policy()
        .add_grant(
            &GrantScope::CommandPattern("sudo *".into()),
            &GrantDuration::Session,
            Some("s1"),
        )
        .unwrap();
    let r = f
        .registry
        .execute(
            &ctx(),
            "probe",
            json!({"action": "run", "command": "sudo ls"}),
        )
        .await;
    assert_eq!(r.code, Some(ErrorCode::SafeguardBlocked), "{r:?}");
    assert_eq!(approver.asked.load(Ordering::SeqCst), 0);

    let f = fixture(Level::Full, AskMode::Off);
    let r = f
        .registry
        .execute(
            &ctx(),
            "probe",
            json!({"action": "run", "command": "ls | sudo tee x"}),
        )
        .await;
    assert_eq!(r.code, Some(ErrorCode::SafeguardBlocked), "{r:?}");
    assert!(
        events(&f).is_empty(),
        "the tool never ran: {:?}",
        events(&f)
    );
}

#[tokio::test]
async fn writes_to_osprey_data_are_refused_even_when_approved() {
    let f = fixture(Level::Full, AskMode::Off);
    let data = f._dir.path().join("data/osprey.db");
    let r = f
        .registry
        .execute(
            &ctx(),
            "probe",
            json!({"action": "write", "path": data.to_str().unwrap()}),
        )
        .await;
    assert_eq!(r.code, Some(ErrorCode::SensitivePath), "{r:?}");
    assert!(events(&f).is_empty());
}

#[tokio::test]
async fn origin_rules_refuse_before_anyone_is_asked() {
    let f = fixture(Level::Allowlist, AskMode::Always);
    let approver = Scripted::new(ApprovalAnswer::Once, f.events.clone());
    f.registry.set_approver(Some(approver.clone()));
    let comm = ToolContext::new(Origin::Comm, Duration::from_secs(5));
    let r = f
        .registry
        .execute(&comm, "probe", json!({"action": "run", "command": "ls"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::OriginDenied), "{r:?}");
    assert!(
        r.text_content().contains("origin `comm`"),
        "{}",
        r.text_content()
    );
    assert_eq!(approver.asked.load(Ordering::SeqCst), 0);
    // The same origin may still use what the rules leave open.
    let r = f
        .registry
        .execute(&comm, "probe", json!({"action": "look"}))
        .await;
    assert!(!r.is_error, "{r:?}");
}

#[tokio::test]
async fn approval_answers_once_always_and_deny() {
    let f = fixture(Level::Allowlist, AskMode::OnMiss);
    let once = Scripted::new(ApprovalAnswer::Once, f.events.clone());
    let call = json!({"action": "run", "command": "make install"});
    let r = f
        .registry
        .execute(&ctx().with_approver(once.clone()), "probe", call.clone())
        .await;
    assert_eq!(r.text_content(), "ran make install");
    let request = once.last.lock().unwrap().clone().unwrap();
    assert_eq!(request.summary, "make install");
    assert!(
        request
            .suggested_scopes
            .contains(&GrantScope::CommandPattern("make install *".into()))
    );
    f.registry
        .execute(&ctx().with_approver(once.clone()), "probe", call.clone())
        .await;
    assert_eq!(
        once.asked.load(Ordering::SeqCst),
        2,
        "`once` is asked again"
    );

    let always = Scripted::new(ApprovalAnswer::AlwaysThisSession, f.events.clone());
    f.registry
        .execute(&ctx().with_approver(always.clone()), "probe", call.clone())
        .await;
    f.registry
        .execute(&ctx().with_approver(always.clone()), "probe", call.clone())
        .await;
    assert_eq!(
        always.asked.load(Ordering::SeqCst),
        1,
        "`always` covers the rest of the session"
    );
    let other_session = ToolContext::new(Origin::User, Duration::from_secs(5))
        .with_session("s2")
        .with_approver(always.clone());
    f.registry
        .execute(&other_session, "probe", call.clone())
        .await;
    assert_eq!(
        always.asked.load(Ordering::SeqCst),
        2,
        "but not another session"
    );

    let deny = Scripted::new(ApprovalAnswer::Deny, f.events.clone());
    let r = f
        .registry
        .execute(
            &ctx().with_approver(deny),
            "probe",
            json!({"action": "run", "command": "make clean"}),
        )
        .await;
    assert_eq!(r.code, Some(ErrorCode::ApprovalDenied), "{r:?}");

    let r = f
        .registry
        .execute(
            &ctx(),
            "probe",
            json!({"action": "run", "command": "make dist"}),
        )
        .await;
    assert_eq!(
        r.code,
        Some(ErrorCode::PolicyDenied),
        "no approver attached: {r:?}"
    );
    assert!(
        r.text_content().contains("no one is attached"),
        "{}",
        r.text_content()
    );
}

#[tokio::test]
async fn a_scoped_grant_answer_is_stored_in_sqlite_and_survives_a_restart() {
    let f = fixture(Level::Allowlist, AskMode::OnMiss);
    let until = osprey_db::now_ms() / 1000 + 3600;
    let grant = Scripted::new(
        ApprovalAnswer::Grant {
            scope: GrantScope::CommandPattern("make *".into()),
            duration: GrantDuration::Until {
                unix_seconds: until,
            },
        },
        f.events.clone(),
    );
    f.registry
        .execute(
            &ctx().with_approver(grant.clone()),
            "probe",
            json!({"action": "run", "command": "make a"}),
        )
        .await;
    let r = f
        .registry
        .execute(
            &ctx().with_approver(grant.clone()),
            "probe",
            json!({"action": "run", "command": "make b"}),
        )
        .await;
    assert!(!r.is_error);
    assert_eq!(grant.asked.load(Ordering::SeqCst), 1);
    // A new policy over the same database (Osprey restarted) still honours the grant.
    let reloaded = Policy::new(PolicyConfig::default(), Some(f.db.grants())).unwrap();
    let grants = f.db.grants().list_live().unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].scope, GrantScope::CommandPattern("make *".into()));
    drop(reloaded);
}

#[tokio::test]
async fn unknown_names_get_the_right_call_and_mcp_prefixes_are_stripped() {
    let f = fixture(Level::Full, AskMode::Off);
    let r = f.registry.execute(&ctx(), "teleport", json!({})).await;
    assert_eq!(r.code, Some(ErrorCode::UnknownTool));
    assert!(
        r.text_content().contains("Available tools: probe"),
        "{}",
        r.text_content()
    );
    let r = f
        .registry
        .execute(&ctx(), "mcp__osprey__probe", json!({"action": "look"}))
        .await;
    assert!(!r.is_error, "{r:?}");
}

#[tokio::test]
async fn invalid_input_is_a_result_that_names_the_choices() {
    let f = fixture(Level::Full, AskMode::Off);
    let r = f
        .registry
        .execute(&ctx(), "probe", json!({"action": "fly"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::InvalidInput));
    assert!(
        r.text_content().contains("run, look"),
        "{}",
        r.text_content()
    );
    let r = f
        .registry
        .execute(
            &ctx(),
            "probe",
            json!({"resource": "command", "action": "run"}),
        )
        .await;
    assert!(
        r.text_content().contains("needs `command`"),
        "{}",
        r.text_content()
    );
}

/// Every result leaves with its duration; an error also says whether a changed call can help
/// and what to do next, and the line the model reads says the same.
#[tokio::test]
async fn results_carry_their_duration_and_errors_their_recovery() {
    let f = fixture(Level::Full, AskMode::Off);
    let r = f
        .registry
        .execute(&ctx(), "probe", json!({"action": "look"}))
        .await;
    assert!(!r.is_error, "{}", r.text_content());
    assert!(r.duration_ms.is_some());
    assert_eq!((r.recoverable, r.recovery_note()), (None, None));

    let r = f
        .registry
        .execute(&ctx(), "probe", json!({"action": "fly"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::InvalidInput));
    assert_eq!(r.recoverable, Some(true));
    assert!(r.duration_ms.is_some());
    let steps = r.recovery.clone().unwrap();
    assert!(steps.iter().any(|s| s.contains("corrected")), "{steps:?}");
    let note = r.recovery_note().unwrap();
    assert!(
        note.starts_with("[error invalid_input: a changed call can succeed"),
        "{note}"
    );

    // Refused by origin before anything runs: only a person can change that.
    let comm = ToolContext::new(Origin::Comm, Duration::from_secs(30));
    let r = f
        .registry
        .execute(&comm, "probe", json!({"action": "run", "command": "ls"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::OriginDenied));
    assert_eq!(r.recoverable, Some(false));
    assert!(
        r.recovery_note()
            .unwrap()
            .contains("changing the call will not help"),
        "{:?}",
        r.recovery_note()
    );
    // What the desktop and the session store receive is the same on the wire.
    let wire: ToolResult = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
    assert_eq!(wire, r);
}

#[tokio::test]
async fn deadline_cancellation_panics_and_output_cap() {
    let f = fixture(Level::Full, AskMode::Off);
    let mut short = ToolContext::new(Origin::User, Duration::from_millis(50));
    short.session_id = Some("s1".into());
    let r = f
        .registry
        .execute(&short, "probe", json!({"action": "hang"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::Timeout), "{r:?}");

    let cancelled = ctx();
    let token = cancelled.cancel.clone();
    let registry = f.registry.clone();
    let call = tokio::spawn(async move {
        registry
            .execute(&cancelled, "probe", json!({"action": "hang"}))
            .await
    });
    // Cancel once the tool is running, observed through its recorded start.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !events(&f).contains(&"execute hang".to_string()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the tool never started"
        );
        tokio::task::yield_now().await;
    }
    token.cancel();
    let r = call.await.unwrap();
    assert_eq!(r.code, Some(ErrorCode::Cancelled), "{r:?}");

    let r = f
        .registry
        .execute(&ctx(), "probe", json!({"action": "panic"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::ToolFailed));
    assert!(r.text_content().contains("probe exploded"));

    let r = f
        .registry
        .execute(&ctx(), "probe", json!({"action": "big"}))
        .await;
    assert!(
        r.text_content()
            .contains("[output truncated: 10000 bytes, showing the first 1000]")
    );
}

#[tokio::test]
async fn every_call_writes_an_audit_row() {
    let f = fixture(Level::Allowlist, AskMode::OnMiss);
    let once = Scripted::new(ApprovalAnswer::Once, f.events.clone());
    f.registry
        .execute(&ctx(), "probe", json!({"action": "look"}))
        .await;
    f.registry
        .execute(
            &ctx().with_approver(once),
            "probe",
            json!({"action": "run", "command": "make"}),
        )
        .await;
    f.registry
        .execute(
            &ctx(),
            "probe",
            json!({"action": "run", "command": "sudo make"}),
        )
        .await;
    f.registry
        .execute(
            &ToolContext::new(Origin::Comm, Duration::from_secs(5)),
            "probe",
            json!({"action": "run", "command": "ls"}),
        )
        .await;
    f.registry.execute(&ctx(), "nope", json!({})).await;
    f.registry.audit().flush();
    let rows = f.db.audit().list(&AuditQuery::default()).unwrap();
    type Row = (String, Option<String>, String, String, Option<String>);
    let summary: Vec<Row> = rows
        .iter()
        .rev()
        .map(|r| {
            (
                r.tool.clone(),
                r.action.clone(),
                r.origin.clone(),
                r.decision.clone(),
                r.code.clone(),
            )
        })
        .collect();
    let s = |x: &str| x.to_string();
    assert_eq!(
        summary,
        vec![
            (
                s("probe"),
                Some(s("look")),
                s("user"),
                s("allow:read_only"),
                None
            ),
            (s("probe"), Some(s("run")), s("user"), s("ask:once"), None),
            (
                s("probe"),
                Some(s("run")),
                s("user"),
                s("safeguard_blocked"),
                Some(s("safeguard_blocked"))
            ),
            (
                s("probe"),
                Some(s("run")),
                s("comm"),
                s("origin_denied"),
                Some(s("origin_denied"))
            ),
            (
                s("nope"),
                None,
                s("user"),
                s("unknown_tool"),
                Some(s("unknown_tool"))
            ),
        ]
    );
    let blocked = &rows[2];
    assert_eq!(blocked.summary.as_deref(), Some("sudo make"));
    assert!(blocked.error.as_deref().unwrap_or_default().len() > 10);
    assert!(rows.iter().all(|r| r.duration_us >= 0));
    assert_eq!(rows[4].session_id.as_deref(), Some("s1"));
}

#[tokio::test]
async fn check_reports_the_decision_without_running_or_asking() {
    let f = fixture(Level::Allowlist, AskMode::OnMiss);
    let approver = Scripted::new(ApprovalAnswer::Once, f.events.clone());
    f.registry.set_approver(Some(approver.clone()));
    assert!(matches!(
        f.registry
            .check(&ctx(), "probe", json!({"action": "run", "command": "make"}))
            .await,
        CheckOutcome::Ask { .. }
    ));
    assert_eq!(
        f.registry
            .check(&ctx(), "probe", json!({"action": "look"}))
            .await,
        CheckOutcome::Allow {
            reason: "allow:read_only".into()
        }
    );
    assert!(matches!(
        f.registry
            .check(
                &ctx(),
                "probe",
                json!({"action": "run", "command": "sudo make"})
            )
            .await,
        CheckOutcome::Refused {
            code: ErrorCode::SafeguardBlocked,
            ..
        }
    ));
    assert!(
        events(&f).is_empty(),
        "nothing ran and nobody was asked: {:?}",
        events(&f)
    );
    assert_eq!(approver.asked.load(Ordering::SeqCst), 0);
}

#[test]
fn tools_can_come_and_go_at_run_time_and_listeners_hear_it() {
    let f = fixture(Level::Full, AskMode::Off);
    let heard: Arc<Mutex<Vec<RegistryChange>>> = Arc::default();
    let sink = heard.clone();
    f.registry
        .on_change(move |c| sink.lock().unwrap().push(c.clone()));
    assert_eq!(f.registry.names(), ["probe"]);
    assert!(f.registry.unregister("probe"));
    assert!(!f.registry.unregister("probe"));
    f.registry.register_domain(Probe::new(f.events.clone()));
    assert_eq!(
        *heard.lock().unwrap(),
        [
            RegistryChange::Removed("probe".into()),
            RegistryChange::Added("probe".into())
        ]
    );
    let specs = f.registry.specs();
    assert_eq!(specs[0].name, "probe");
    assert_eq!(specs[0].input_schema["type"], "object");
}

#[tokio::test]
async fn a_command_reading_credentials_is_asked_even_under_full() {
    let f = fixture(Level::Full, AskMode::OnMiss);
    let once = Scripted::new(ApprovalAnswer::Once, f.events.clone());
    let read_key = json!({"action": "run", "command": "cat ~/.ssh/id_rsa"});
    let r = f
        .registry
        .execute(
            &ctx().with_approver(once.clone()),
            "probe",
            read_key.clone(),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(once.asked.load(Ordering::SeqCst), 1);
    // An ordinary command is not asked at `full`.
    f.registry
        .execute(
            &ctx().with_approver(once.clone()),
            "probe",
            json!({"action": "run", "command": "cat ./notes.txt"}),
        )
        .await;
    assert_eq!(once.asked.load(Ordering::SeqCst), 1);

    let f = fixture(Level::Full, AskMode::Off);
    let r = f.registry.execute(&ctx(), "probe", read_key).await;
    assert_eq!(r.code, Some(ErrorCode::PolicyDenied), "{r:?}");
    assert!(r.text_content().contains(".ssh"), "{}", r.text_content());
}

/// Every name the registry corrects, against the real built-in tools: when the error suggests a
/// call, that call passes the tool's own validation (no error teaches a call that fails).
#[tokio::test]
async fn every_suggested_correction_is_a_call_the_tool_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let paths = PathGuard::new(Some(dir.path().join("home")), dir.path().join("data"));
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(Level::Full),
        dir.path().join("data"),
    ));
    registry.register_domain(osprey_tools::file::FileTool::new(paths));
    registry.register_domain(osprey_tools::shell::ShellTool::new(
        osprey_tools::shell::ShellConfig::default(),
    ));
    registry.register_domain(
        osprey_tools::web::WebTool::new(osprey_tools::web::WebConfig::default()).unwrap(),
    );
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(5));
    let mut suggested = 0;
    for name in [
        "bash",
        "exec",
        "read_file",
        "write_file",
        "str_replace",
        "grep",
        "glob",
        "websearch",
        "web_search",
        "search",
        "google",
        "webfetch",
        "curl",
        "apps",
        "computer",
        "capture",
    ] {
        let CheckOutcome::Refused { code, message } = registry.check(&ctx, name, json!({})).await
        else {
            panic!("{name} is not a tool");
        };
        assert_eq!(code, ErrorCode::UnknownTool);
        let Some(call) = message
            .split_once("Use ")
            .and_then(|(_, rest)| rest.split_once(" — "))
            .map(|(call, _)| call)
        else {
            continue;
        };
        suggested += 1;
        let tool = call.split_once('(').unwrap().0;
        let input = osprey_tools::correction::call_input(call);
        let outcome = registry.check(&ctx, tool, input.clone()).await;
        assert!(
            !matches!(
                outcome,
                CheckOutcome::Refused {
                    code: ErrorCode::InvalidInput | ErrorCode::UnknownTool,
                    ..
                }
            ),
            "`{name}` suggests {call}, which is refused: {outcome:?}"
        );
    }
    assert!(suggested >= 8, "only {suggested} names got a suggestion");
}

#[tokio::test]
async fn a_role_scope_hides_and_refuses_what_it_does_not_grant() {
    use osprey_tools::ToolScope;
    let f = fixture(Level::Full, AskMode::Off);
    let mut scope = ToolScope::new("reader");
    scope.allow_resource("probe", "cmd", Some(&["look"]));
    let scope = Arc::new(scope);
    let mut scoped = ctx();
    scoped.scope = Some(scope.clone());

    // The model is shown only the granted action.
    let specs = f.registry.specs_for(Some(&scope));
    assert_eq!(specs.len(), 1);
    let shown = specs[0].input_schema.to_string();
    assert!(
        shown.contains("look") && !shown.contains("\"run\""),
        "{shown}"
    );
    assert!(specs[0].description.contains("Role `reader`"));
    assert!(
        f.registry
            .specs_for(Some(&ToolScope::new("none")))
            .is_empty()
    );

    // Granted: runs. Not granted: refused before any hook, policy or tool, naming the role's tools.
    let r = f
        .registry
        .execute(&scoped, "probe", json!({"action": "look"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    let r = f
        .registry
        .execute(&scoped, "probe", json!({"action": "run", "command": "ls"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::RoleDenied), "{r:?}");
    let text = r.text_content();
    assert!(
        text.contains("probe cmd run") && text.contains("role `reader`"),
        "{text}"
    );
    assert!(text.contains("probe (cmd: look)"), "{text}");
    assert_eq!(events(&f), ["execute look"]);

    // A tool outside the role, and an unknown name, list only the role's tools.
    let mut narrow = ToolScope::new("nothing-but-other");
    narrow.allow_tool("other");
    let mut other_ctx = ctx();
    other_ctx.scope = Some(Arc::new(narrow));
    let r = f
        .registry
        .execute(&other_ctx, "probe", json!({"action": "look"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::RoleDenied), "{r:?}");
    assert!(r.text_content().contains("cannot call that tool"));
    let r = f.registry.execute(&scoped, "nope", json!({})).await;
    assert_eq!(r.code, Some(ErrorCode::UnknownTool));
    // Each refusal is audited with its own decision.
    f.registry.audit().flush();
    let refused =
        f.db.audit()
            .list(&AuditQuery::default())
            .unwrap()
            .into_iter()
            .filter(|row| row.decision == "role_denied")
            .count();
    assert_eq!(refused, 2);
    assert_eq!(
        f.registry
            .check(&scoped, "probe", json!({"action": "run", "command": "ls"}))
            .await,
        CheckOutcome::Refused {
            code: ErrorCode::RoleDenied,
            message: text,
        }
    );
}

/// Installs things: its `install` is asked every time and its question carries details, unless
/// the thing cannot be described, which refuses the call before anyone is asked.
struct Installer {
    domain: Domain,
    ran: Arc<AtomicUsize>,
}

impl DomainTool for Installer {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        CallFacts {
            summary: format!("install {}", call.str("id").unwrap_or_default()),
            ask_every_time: Some("an install".into()),
            ..CallFacts::default()
        }
    }

    fn approval_details<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        call: &'a Call,
    ) -> osprey_tools::DetailsFuture<'a> {
        Box::pin(async move {
            match call.str("id") {
                Some("unknown") => Err(ToolResult::error(
                    ErrorCode::ToolFailed,
                    "the store cannot say what `unknown` is",
                )),
                Some(id) => Ok(Some(Box::new(osprey_types::ApprovalDetails {
                    title: format!("Install {id} 1.0.0"),
                    kind: "app".into(),
                    name: id.to_string(),
                    id: id.to_string(),
                    version: Some("1.0.0".into()),
                    ..Default::default()
                }))),
                None => Ok(None),
            }
        })
    }

    fn run<'a>(&'a self, _ctx: &'a ToolContext, _call: Call) -> BoxFuture<'a, ToolResult> {
        self.ran.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { ToolResult::text("installed") })
    }
}

#[tokio::test]
async fn approval_details_reach_the_question_and_an_undescribable_call_is_never_asked() {
    let f = fixture(Level::Full, AskMode::OnMiss);
    let ran = Arc::new(AtomicUsize::new(0));
    f.registry.register_domain(Installer {
        domain: Domain::new("installer", "Installs things")
            .resource(
                "thing",
                &[],
                &[("install", "Install a thing", ApprovalNeed::Required)],
            )
            .field("id", FieldType::String, "What to install")
            .required_for(&["install"]),
        ran: Arc::clone(&ran),
    });
    let approver = Scripted::new(ApprovalAnswer::AlwaysThisSession, f.events.clone());
    let asking = ctx().with_approver(approver.clone());
    for _ in 0..2 {
        let result = f
            .registry
            .execute(
                &asking,
                "installer",
                json!({"action": "install", "id": "units"}),
            )
            .await;
        assert!(!result.is_error, "{result:?}");
    }
    // Asked both times under `full`: "always" does not cover an install.
    assert_eq!(approver.asked.load(Ordering::SeqCst), 2);
    let question = approver.last.lock().unwrap().clone().unwrap();
    assert!(question.once_only);
    assert!(question.suggested_scopes.is_empty());
    let details = question.details.unwrap();
    assert_eq!(details.title, "Install units 1.0.0");
    assert_eq!(ran.load(Ordering::SeqCst), 2);

    let refused = f
        .registry
        .execute(
            &asking,
            "installer",
            json!({"action": "install", "id": "unknown"}),
        )
        .await;
    assert_eq!(refused.code, Some(ErrorCode::ToolFailed), "{refused:?}");
    assert!(refused.text_content().contains("cannot say"), "{refused:?}");
    assert_eq!(approver.asked.load(Ordering::SeqCst), 2, "nobody was asked");
    assert_eq!(ran.load(Ordering::SeqCst), 2, "nothing ran");
}

/// A tool without a domain table, as app and MCP tools are: only its JSON Schema says what fits.
struct Converter {
    schema: Value,
    runs: AtomicUsize,
}

impl osprey_tools::Tool for Converter {
    fn name(&self) -> &str {
        "convert"
    }
    fn description(&self) -> &str {
        "converts a value between units (test double of an app tool)"
    }
    fn schema(&self) -> &Value {
        &self.schema
    }
    fn facts(&self, _call: &Call) -> CallFacts {
        CallFacts {
            approval: ApprovalNeed::Required,
            summary: "convert".into(),
            ..Default::default()
        }
    }
    fn execute<'a>(&'a self, _ctx: &'a ToolContext, _call: Call) -> BoxFuture<'a, ToolResult> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { ToolResult::text("converted") })
    }
}

#[tokio::test]
async fn an_app_or_mcp_tools_input_is_checked_against_its_schema_before_anyone_is_asked() {
    let f = fixture(Level::Allowlist, AskMode::OnMiss);
    let converter = Arc::new(Converter {
        schema: json!({
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "from": {"type": "string"},
                "to": {"type": "string"}
            },
            "required": ["value", "from", "to"],
            "additionalProperties": false
        }),
        runs: AtomicUsize::new(0),
    });
    f.registry.register(converter.clone());
    let approver = Scripted::new(ApprovalAnswer::Once, f.events.clone());
    let asking = ctx().with_approver(approver.clone());

    let bad = f
        .registry
        .execute(&asking, "convert", json!({"value": "one", "from": "m"}))
        .await;
    assert_eq!(bad.code, Some(ErrorCode::InvalidInput), "{bad:?}");
    let said = bad.text_content();
    assert!(
        said.contains("`convert`'s schema")
            && said.contains("its fields: from, to, value")
            && said.contains("\"to\" is a required property")
            && said.contains("/value"),
        "{said}"
    );
    assert_eq!(
        approver.asked.load(Ordering::SeqCst),
        0,
        "asked about a call that cannot work"
    );
    assert_eq!(converter.runs.load(Ordering::SeqCst), 0);

    let good = f
        .registry
        .execute(
            &asking,
            "convert",
            json!({"value": 1, "from": "m", "to": "ft"}),
        )
        .await;
    assert_eq!(good.text_content(), "converted", "{good:?}");
    assert_eq!(approver.asked.load(Ordering::SeqCst), 1);

    // A schema the validator cannot compile leaves the tool to check its input itself.
    f.registry.register(Arc::new(Converter {
        schema: json!({"type": "object", "properties": {"value": {"type": 7}}}),
        runs: AtomicUsize::new(0),
    }));
    let unchecked = f
        .registry
        .execute(&asking, "convert", json!({"value": "anything"}))
        .await;
    assert_eq!(unchecked.text_content(), "converted", "{unchecked:?}");
}
