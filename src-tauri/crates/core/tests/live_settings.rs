//! The settings page's facade on a real core: a policy or origin-rule change is in force at the
//! next call without a restart and kept after one; invalid values are refused with the reason
//! and nothing is stored; skills turn off and on; and pausing automation holds tool calls at the
//! registry until resumed (a call whose deadline passes first ends with `paused`, a cancelled one
//! with `cancelled`); tool governance (`tools.*`) is in force at once, autonomous mode is
//! announced to the front ends, and both survive a restart.

use std::path::Path;
use std::time::Duration;

use osprey_core::{Core, CoreOptions};
use osprey_tools::{CheckOutcome, ToolContext};
use osprey_types::{CoreEvent, ErrorCode, Origin, UiErrorCode};
use serde_json::json;

/// A core whose workspace is the folder around its data folder (where the tests' files are).
fn open(data: &Path) -> Core {
    let workspace = data.parent().unwrap_or(data);
    osprey_db::Database::open_in(data)
        .unwrap()
        .settings()
        .set(
            "shell.sandbox",
            &json!({"workspaces": [workspace.display().to_string()]}),
        )
        .unwrap();
    Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        policy: None,
        secrets: Some(osprey_core::secrets::Backend::FileOnly),
    })
    .unwrap()
}

/// `mkdir` is neither a safe bin nor allowlisted: the default policy asks about it.
fn mkdir() -> serde_json::Value {
    json!({"resource": "bash", "action": "exec", "command": "mkdir /tmp/osprey-live-settings-never-run"})
}

async fn decision(core: &Core) -> &'static str {
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(30));
    match core.check_tool(&ctx, "shell", mkdir()).await {
        CheckOutcome::Allow { .. } => "allow",
        CheckOutcome::Ask { .. } => "ask",
        CheckOutcome::Refused {
            code: ErrorCode::PolicyDenied,
            ..
        } => "deny",
        other => panic!("unexpected outcome {other:?}"),
    }
}

#[tokio::test]
async fn a_policy_change_applies_to_the_next_call_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    let mut events = core.subscribe();
    assert_eq!(decision(&core).await, "ask");
    assert_eq!(core.settings_overview().policy.level, "allowlist");

    core.set_setting(
        "policy",
        json!({"level": "deny", "ask": "on-miss", "allowlist": [], "safe_bins": ["ls"]}),
    )
    .await
    .unwrap();
    assert_eq!(
        decision(&core).await,
        "deny",
        "the running registry uses it"
    );
    assert!(matches!(
        events.try_recv(),
        Ok(CoreEvent::SettingChanged { key }) if key == "policy"
    ));

    core.set_setting(
        "policy",
        json!({"level": "full", "ask": "on-miss", "allowlist": ["git status"], "safe_bins": []}),
    )
    .await
    .unwrap();
    assert_eq!(decision(&core).await, "allow");

    // Refused with the reason; the stored policy is unchanged.
    let error = core
        .set_setting("policy", json!({"level": "yolo"}))
        .await
        .unwrap_err();
    assert_eq!(error.code, UiErrorCode::InvalidSetting);
    assert!(error.message.contains("policy"), "{}", error.message);
    assert_eq!(decision(&core).await, "allow");

    drop(core);
    let core = open(dir.path());
    assert_eq!(decision(&core).await, "allow", "kept after a restart");
    let overview = core.settings_overview();
    assert_eq!(overview.policy.level, "full");
    assert_eq!(overview.policy.allowlist, ["git status"]);
    assert!(overview.policy.safe_bins.is_empty());

    // `null` goes back to the default.
    core.set_setting("policy", serde_json::Value::Null)
        .await
        .unwrap();
    assert_eq!(decision(&core).await, "ask");
}

#[tokio::test]
async fn origin_rules_theme_and_store_url_are_validated_and_in_force_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    std::fs::write(dir.path().join("note.txt"), "hello").unwrap();
    let read = json!({"resource": "file", "action": "read", "path": dir.path().join("note.txt")});

    core.set_setting("origin_rules", json!({"deny": {"user": ["file.read"]}}))
        .await
        .unwrap();
    let result = core.call_tool(Origin::User, "file", read.clone()).await;
    assert_eq!(result.code, Some(ErrorCode::OriginDenied), "{result:?}");
    core.set_setting("origin_rules", json!({"deny": {}}))
        .await
        .unwrap();
    assert!(core.settings_overview().origin_deny.is_empty());

    let error = core
        .set_setting("origin_rules", json!({"deny": {"martians": ["shell"]}}))
        .await
        .unwrap_err();
    assert_eq!(error.code, UiErrorCode::InvalidSetting);

    core.set_setting("ui.theme", json!("dark")).await.unwrap();
    assert_eq!(core.settings_overview().theme, osprey_types::Theme::Dark);
    assert_eq!(
        core.set_setting("ui.theme", json!("purple"))
            .await
            .unwrap_err()
            .code,
        UiErrorCode::InvalidSetting
    );
    let error = core
        .set_setting("store.url", json!("ftp://store"))
        .await
        .unwrap_err();
    assert!(error.message.contains("http or https"), "{}", error.message);
    assert_eq!(core.settings_overview().store_url, None);
    assert_eq!(
        core.settings_overview().data_dir,
        dir.path().display().to_string()
    );
}

#[tokio::test]
async fn skills_turn_off_and_on_and_stay_so() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    let overview = core.settings_overview();
    let skill = overview
        .skills
        .iter()
        .find(|s| s.source == "bundled")
        .expect("Osprey bundles skills")
        .clone();
    assert!(skill.enabled);
    core.set_skill_enabled(&skill.name, false).await.unwrap();
    assert!(core.skills().catalog().get(&skill.name).is_none());
    assert!(
        !core
            .skills()
            .catalog()
            .list()
            .iter()
            .any(|s| s.name == skill.name),
        "left out of the catalog the model sees"
    );
    drop(core);
    let core = open(dir.path());
    let view = core
        .settings_overview()
        .skills
        .into_iter()
        .find(|s| s.name == skill.name)
        .unwrap();
    assert!(!view.enabled, "kept after a restart");
    core.set_skill_enabled(&skill.name, true).await.unwrap();
    assert!(core.skills().catalog().get(&skill.name).is_some());
    assert_eq!(
        core.set_skill_enabled("no-such-skill", false)
            .await
            .unwrap_err()
            .code,
        UiErrorCode::InvalidSetting
    );
}

#[tokio::test]
async fn a_paused_core_holds_tool_calls_until_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let core = open(&dir.path().join("data"));
    // Outside the data folder, which the safeguard keeps the tools out of.
    std::fs::write(dir.path().join("note.txt"), "hello").unwrap();
    let read = json!({"resource": "file", "action": "read", "path": dir.path().join("note.txt")});
    let mut events = core.subscribe();

    core.set_automation_paused(true);
    assert!(core.automation_paused());
    assert!(core.automation_status().await.paused);
    assert!(matches!(
        events.try_recv(),
        Ok(CoreEvent::AutomationPaused { paused: true })
    ));
    // A second pause changes nothing and says nothing.
    core.set_automation_paused(true);
    assert!(events.try_recv().is_err());

    let held = tokio::spawn({
        let core = core.clone();
        let read = read.clone();
        async move { core.call_tool(Origin::User, "file", read).await }
    });
    // Still held after a while: it waits for the person, not for a timer.
    let waited = tokio::time::timeout(Duration::from_millis(300), async {
        while !held.is_finished() {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_err(), "the call ran while automation was paused");

    core.set_automation_paused(false);
    let result = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("the call did not resume")
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert!(result.text_content().contains("hello"));

    // A call whose deadline passes while paused ends with `paused`; a cancelled one with
    // `cancelled`. Neither runs.
    core.set_automation_paused(true);
    let ctx = ToolContext::new(Origin::System, Duration::from_millis(200));
    let result = core.call_tool_with(&ctx, "file", read.clone()).await;
    assert_eq!(result.code, Some(ErrorCode::Paused), "{result:?}");
    assert!(result.text_content().contains("Resume"), "{result:?}");
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(60));
    ctx.cancel.cancel();
    let result = core.call_tool_with(&ctx, "file", read).await;
    assert_eq!(result.code, Some(ErrorCode::Cancelled), "{result:?}");
    // The audit sink may write in the background: look until a deadline.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let audit = core
            .test_db()
            .audit()
            .list(&osprey_db::AuditQuery::default())
            .unwrap();
        if audit.iter().any(|row| row.decision == "paused") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the refusal is not audited"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `osprey config set` is another process: it stores the value, then tells the running Osprey
/// over the control socket, which puts the stored value in force and tells its front ends.
#[cfg(unix)]
#[tokio::test]
async fn a_setting_stored_by_another_process_applies_when_it_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let core = open(&data);
    let _control = core.serve_control().unwrap();
    let mut events = core.subscribe();
    assert_eq!(decision(&core).await, "ask");

    // The other process: its own connection to the database, then the control socket.
    osprey_db::Database::open_in(&data)
        .unwrap()
        .settings()
        .set("policy", &json!({"level": "deny"}))
        .unwrap();
    assert_eq!(
        decision(&core).await,
        "ask",
        "not applied before it is told"
    );
    let told = |key: &str| {
        let data = data.clone();
        let key = key.to_string();
        async move {
            osprey_core::control::request(&data, &json!({"op": "settings.applied", "key": key}))
                .await
                .unwrap()
        }
    };
    let answer = told("policy").await;
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(decision(&core).await, "deny");
    assert!(matches!(
        events.try_recv(),
        Ok(CoreEvent::SettingChanged { key }) if key == "policy"
    ));

    let answer = told("no.such.setting").await;
    assert_eq!(answer["ok"], false);
    assert_eq!(answer["code"], "invalid_setting", "{answer}");
}

#[tokio::test]
async fn tool_governance_applies_at_once_and_autonomous_mode_is_announced() {
    // Autonomy never covers a command on a machine without the sandbox: build the launcher.
    osprey_tests::build_sandbox_launcher();
    let dir = tempfile::tempdir().unwrap();
    let core = open(dir.path());
    let mut events = core.subscribe();
    let view = core.settings_overview().tools;
    assert!(!view.autonomous, "never on by default");
    assert!(!core.automation_status().await.autonomous);
    let shell = view.categories.iter().find(|c| c.name == "shell").unwrap();
    assert_eq!(shell.tools, ["exec", "shell"]);
    assert_eq!(view.breaker.failures, 5);

    // Autonomous: what was asked is allowed, and the front ends hear of it.
    assert_eq!(decision(&core).await, "ask");
    core.set_setting("tools.autonomous", json!(true))
        .await
        .unwrap();
    assert_eq!(decision(&core).await, "allow");
    assert!(core.automation_status().await.autonomous);
    let mut heard = Vec::new();
    while let Ok(event) = events.try_recv() {
        heard.push(event);
    }
    assert!(
        heard.contains(&CoreEvent::AutonomousMode { on: true }),
        "{heard:?}"
    );

    // Switched off: refused at the next call, the reason naming Settings.
    core.set_setting("tools.disabled", json!(["shell"]))
        .await
        .unwrap();
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(30));
    match core
        .check_tool(&ctx, "exec", json!({"program": "true"}))
        .await
    {
        CheckOutcome::Refused { code, message } => {
            assert_eq!(code, ErrorCode::ToolDisabled);
            assert!(message.contains("Settings"), "{message}");
        }
        other => panic!("unexpected outcome {other:?}"),
    }
    // A bad value is refused whole; what is in force stays.
    let refused = core
        .set_setting("tools.denied_paths", json!(["relative/path"]))
        .await
        .unwrap_err();
    assert_eq!(refused.code, UiErrorCode::InvalidSetting);
    assert!(refused.message.contains("absolute"), "{}", refused.message);
    drop(core);

    // A restart keeps it all.
    let core = open(dir.path());
    assert!(core.automation_status().await.autonomous);
    assert_eq!(core.settings_overview().tools.disabled, ["shell"]);
    core.set_setting("tools.autonomous", json!(false))
        .await
        .unwrap();
    assert!(!core.settings_overview().tools.autonomous);
}

/// `web.chrome` adds the `chrome` browser profile (the person's own browser) at once, a null
/// takes it away, a bad port is refused, and the setting is there after a restart.
#[tokio::test]
async fn the_persons_browser_profile_follows_its_setting() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let core = open(&data);
    let has_chrome = |core: &Core| core.browser_profiles().0.contains(&"chrome".to_string());
    assert!(!has_chrome(&core));
    let refused = core
        .set_setting("web.chrome", json!({"port": 0}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, UiErrorCode::InvalidSetting);
    assert!(!has_chrome(&core));
    core.set_setting("web.chrome", json!({"port": 9222}))
        .await
        .unwrap();
    assert!(has_chrome(&core));
    drop(core);
    let core = open(&data);
    assert!(has_chrome(&core), "kept after a restart");
    core.set_setting("web.chrome", serde_json::Value::Null)
        .await
        .unwrap();
    assert!(!has_chrome(&core));
}

/// `web.downloads` names the folder every browser profile saves to, at once; a relative path is
/// refused; null turns downloads off again.
#[tokio::test]
async fn the_download_folder_is_validated_and_in_force_at_once() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let core = open(&data);
    let folder = || core.browser_profile_config("native").downloads.get();
    assert_eq!(folder(), None, "downloads are off until a folder is named");
    let refused = core
        .set_setting("web.downloads", json!("Downloads"))
        .await
        .unwrap_err();
    assert_eq!(refused.code, UiErrorCode::InvalidSetting);
    assert!(refused.message.contains("full path"), "{}", refused.message);
    let chosen = root.path().join("Downloads");
    core.set_setting("web.downloads", json!(chosen.display().to_string()))
        .await
        .unwrap();
    assert_eq!(folder(), Some(chosen.clone()));
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap());
    core.set_setting("web.downloads", json!("~/Downloads/Osprey"))
        .await
        .unwrap();
    assert_eq!(folder(), Some(home.join("Downloads/Osprey")));
    core.set_setting("web.downloads", serde_json::Value::Null)
        .await
        .unwrap();
    assert_eq!(folder(), None);
}
