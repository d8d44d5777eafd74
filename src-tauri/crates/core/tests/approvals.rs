//! The approval broker through the real registry and a real shell command: a question is
//! announced as an event and listed as pending, the answer runs the call, a timeout denies it,
//! "always this session" skips the next question of that session only, and a cancelled call
//! withdraws its question. Every outcome is in the audit log.

use std::path::Path;
use std::time::Duration;

use osprey_core::{Core, CoreOptions, events};
use osprey_db::AuditQuery;
use osprey_tools::ToolContext;
use osprey_types::{ApprovalAnswer, ApprovalResolution, CoreEvent, ErrorCode, Origin, ToolResult};
use serde_json::json;

/// A core on `root/data` whose shell commands may write in `root/work` (they run in the
/// sandbox, which keeps them out of the data folder).
fn open(root: &Path) -> Core {
    let data = root.join("data");
    std::fs::create_dir_all(root.join("work")).unwrap();
    osprey_db::Database::open_in(&data)
        .unwrap()
        .settings()
        .set("shell.sandbox", &json!({"workspaces": [root.join("work")]}))
        .unwrap();
    // The stored default policy: allowlist level, ask on a miss. `touch` is no safe bin.
    let core = Core::open(CoreOptions {
        data_dir: Some(data),
        policy: None,
        ..CoreOptions::default()
    })
    .unwrap();
    core.attach_approvals();
    core
}

fn touch(target: &Path) -> serde_json::Value {
    json!({"resource": "bash", "action": "exec", "command": format!("touch {}", target.display())})
}

fn context(session: &str) -> ToolContext {
    ToolContext::new(Origin::User, Duration::from_secs(60)).with_session(session)
}

/// The next event of the wanted kind, skipping others, within 10 s.
async fn next_event(
    events: &mut events::Receiver,
    wanted: impl Fn(&CoreEvent) -> bool,
) -> CoreEvent {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let event = events.recv().await.expect("event bus closed");
            if wanted(&event) {
                return event;
            }
        }
    })
    .await
    .expect("no such event within 10 s")
}

fn is_request(event: &CoreEvent) -> bool {
    matches!(event, CoreEvent::ApprovalRequested { .. })
}

fn is_resolution(event: &CoreEvent) -> bool {
    matches!(event, CoreEvent::ApprovalResolved { .. })
}

fn requested_id(event: CoreEvent) -> (String, String, i64) {
    match event {
        CoreEvent::ApprovalRequested {
            request,
            deadline_ms,
        } => (request.id, request.summary, deadline_ms),
        other => panic!("not a request: {other:?}"),
    }
}

fn decisions(core: &Core, session: &str) -> Vec<(String, Option<String>)> {
    core.test_registry().audit().flush();
    let mut rows = core
        .test_db()
        .audit()
        .list(&AuditQuery {
            session_id: Some(session.into()),
            ..AuditQuery::default()
        })
        .unwrap();
    rows.reverse();
    rows.into_iter().map(|r| (r.decision, r.code)).collect()
}

#[tokio::test]
async fn an_answered_question_runs_the_call_and_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    let mut events = core.subscribe();
    let target = dir.path().join("work/answered");

    let call = tokio::spawn({
        let core = core.clone();
        let input = touch(&target);
        async move { core.call_tool_with(&context("s1"), "shell", input).await }
    });
    let (id, summary, deadline_ms) = requested_id(next_event(&mut events, is_request).await);
    assert!(summary.contains("touch"), "summary: {summary}");
    let now = osprey_db::now_ms();
    assert!(deadline_ms > now && deadline_ms <= now + 120_000);
    let pending = core.approvals().pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].request.id, id);
    assert!(!target.exists(), "ran before the answer");

    core.approvals().answer(&id, ApprovalAnswer::Once).unwrap();
    let result: ToolResult = call.await.unwrap();
    assert!(!result.is_error, "{result:?}");
    assert!(target.exists());
    match next_event(&mut events, is_resolution).await {
        CoreEvent::ApprovalResolved {
            request_id,
            resolution,
        } => {
            assert_eq!(request_id, id);
            assert_eq!(
                resolution,
                ApprovalResolution::Answered {
                    answer: ApprovalAnswer::Once
                }
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(core.approvals().pending().is_empty());
    // A second answer to the same question is refused with a clear error.
    let error = core
        .approvals()
        .answer(&id, ApprovalAnswer::Once)
        .unwrap_err();
    assert_eq!(error.code(), "approval_not_pending");
    assert!(error.to_string().contains(&id));
    assert_eq!(decisions(&core, "s1"), [("ask:once".to_string(), None)]);
}

#[tokio::test]
async fn an_unanswered_question_is_denied_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    core.approvals().set_timeout(Duration::from_millis(300));
    let mut events = core.subscribe();
    let target = dir.path().join("work/timed-out");

    let result = core
        .call_tool_with(&context("s2"), "shell", touch(&target))
        .await;
    assert!(result.is_error);
    assert_eq!(result.code, Some(ErrorCode::ApprovalDenied));
    assert!(!target.exists());
    let (id, _, _) = requested_id(next_event(&mut events, is_request).await);
    match next_event(&mut events, is_resolution).await {
        CoreEvent::ApprovalResolved {
            request_id,
            resolution,
        } => {
            assert_eq!(request_id, id);
            assert_eq!(resolution, ApprovalResolution::TimedOut);
        }
        other => panic!("{other:?}"),
    }
    assert!(core.approvals().pending().is_empty());
    let audited = decisions(&core, "s2");
    assert_eq!(audited.len(), 1);
    assert_eq!(audited[0].1.as_deref(), Some("approval_denied"));
}

#[tokio::test]
async fn always_this_session_skips_the_next_question_in_that_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    let mut events = core.subscribe();
    let target = dir.path().join("work/always");

    let first = tokio::spawn({
        let core = core.clone();
        let input = touch(&target);
        async move { core.call_tool_with(&context("s3"), "shell", input).await }
    });
    let (id, _, _) = requested_id(next_event(&mut events, is_request).await);
    core.approvals()
        .answer(&id, ApprovalAnswer::AlwaysThisSession)
        .unwrap();
    assert!(!first.await.unwrap().is_error);

    // Same call, same session: runs with nobody asked (a short timeout would deny it otherwise).
    core.approvals().set_timeout(Duration::from_millis(200));
    std::fs::remove_file(&target).unwrap();
    let again = core
        .call_tool_with(&context("s3"), "shell", touch(&target))
        .await;
    assert!(!again.is_error, "{again:?}");
    assert!(target.exists());

    // Another session is asked again (and, unanswered, denied).
    std::fs::remove_file(&target).unwrap();
    let other = core
        .call_tool_with(&context("s4"), "shell", touch(&target))
        .await;
    assert_eq!(other.code, Some(ErrorCode::ApprovalDenied));
    assert!(!target.exists());

    let mut asked = 0;
    while let Ok(event) = events.try_recv() {
        asked += usize::from(is_request(&event));
    }
    // The first question was consumed above; only session s4's came after it.
    assert_eq!(asked, 1);
    assert_eq!(
        decisions(&core, "s3"),
        [
            ("ask:session".to_string(), None),
            ("allow:session".to_string(), None)
        ]
    );
}

#[tokio::test]
async fn a_cancelled_call_withdraws_its_question() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    let mut events = core.subscribe();
    let target = dir.path().join("work/cancelled");
    let ctx = context("s5");
    let cancel = ctx.cancel.clone();

    let call = tokio::spawn({
        let core = core.clone();
        let input = touch(&target);
        async move { core.call_tool_with(&ctx, "shell", input).await }
    });
    let (id, _, _) = requested_id(next_event(&mut events, is_request).await);
    cancel.cancel();
    let result = call.await.unwrap();
    assert_eq!(result.code, Some(ErrorCode::Cancelled));
    match next_event(&mut events, is_resolution).await {
        CoreEvent::ApprovalResolved {
            request_id,
            resolution,
        } => {
            assert_eq!(request_id, id);
            assert_eq!(resolution, ApprovalResolution::Withdrawn);
        }
        other => panic!("{other:?}"),
    }
    assert!(core.approvals().pending().is_empty());
    // The UI's late click finds nothing to answer and nothing runs.
    assert!(core.approvals().answer(&id, ApprovalAnswer::Once).is_err());
    assert!(!target.exists());
    assert_eq!(
        decisions(&core, "s5"),
        [("cancelled".to_string(), Some("cancelled".to_string()))]
    );
}

#[test]
fn the_timeout_comes_from_the_setting_which_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    assert_eq!(
        open(dir.path()).approvals().timeout(),
        Duration::from_secs(120)
    );
    let key = osprey_core::settings::APPROVAL_TIMEOUT;
    for bad in [json!(1), json!(7200), json!("soon")] {
        let error = osprey_core::settings::validate(key, &bad).unwrap_err();
        assert!(format!("{error:#}").contains(key), "{error:#}");
    }
    osprey_core::settings::validate(key, &json!(30)).unwrap();
    osprey_db::Database::open_in(&data)
        .unwrap()
        .settings()
        .set(key, &json!(30))
        .unwrap();
    assert_eq!(
        open(dir.path()).approvals().timeout(),
        Duration::from_secs(30)
    );
}

/// The Approvals page's trail and grants: a grant lets a call through (audited as `allow:grant`),
/// revoking it makes the very next matching call ask again (refused here: nobody is attached to
/// answer), and the trail filters by outcome, origin and text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_grant_asks_again_at_once_and_the_trail_shows_both_calls() {
    use osprey_types::{AuditFilter, AuditOutcome, GrantDuration, GrantScope};
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    // No approver attached: a call that must ask is refused at once.
    let core = Core::open(CoreOptions {
        data_dir: Some(root.path().join("data")),
        ..CoreOptions::default()
    })
    .unwrap();
    let write = |name: &str| json!({"action": "write", "path": work.join(name).display().to_string(), "content": "hi"});
    let far = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        + 3600;
    let grant = core
        .add_grant(
            &GrantScope::PathPrefix(work.display().to_string()),
            &GrantDuration::Until { unix_seconds: far },
            None,
        )
        .unwrap();
    assert_eq!(core.grants().unwrap().len(), 1);
    assert!(
        core.grants().unwrap()[0]
            .description
            .contains("files under")
    );

    let allowed = core.call_tool(Origin::User, "file", write("a.txt")).await;
    assert!(!allowed.is_error, "{}", allowed.text_content());
    core.revoke_grant(grant.id).unwrap();
    assert!(core.grants().unwrap().is_empty());
    let error = core.revoke_grant(grant.id).unwrap_err();
    assert_eq!(error.code, osprey_types::UiErrorCode::GrantNotFound);
    let refused = core.call_tool(Origin::User, "file", write("b.txt")).await;
    assert!(refused.is_error, "the next call must ask again");
    assert!(!work.join("b.txt").exists());

    let rows = core.audit_log(AuditFilter::default()).await.unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].outcome, AuditOutcome::Refused);
    assert_eq!(rows[1].decision, "allow:grant");
    assert_eq!(rows[1].outcome, AuditOutcome::Allowed);
    assert!(
        rows[1]
            .summary
            .as_deref()
            .is_some_and(|s| s.contains("a.txt"))
    );
    let refused_only = core
        .audit_log(AuditFilter {
            outcome: Some(AuditOutcome::Refused),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(refused_only.len(), 1);
    let by_text = core
        .audit_log(AuditFilter {
            text: Some("b.txt".into()),
            origin: Some(Origin::User),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(by_text.len(), 1);
    assert_eq!(by_text[0].id, rows[0].id);
    let older = core
        .audit_log(AuditFilter {
            before_id: Some(rows[0].id),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(older.len(), 1);
    assert!(
        core.audit_log(AuditFilter {
            origin: Some(Origin::App),
            ..AuditFilter::default()
        })
        .await
        .unwrap()
        .is_empty()
    );
}
