//! The `skill` tool through a real Registry over real directories: catalog, load into a session,
//! create / update / delete of the person's skills (with approval), and the refusals: bundled and
//! app skills, bad frontmatter, names that try to leave the directory.

use std::sync::Arc;
use std::time::Duration;

use osprey_agent::SkillTool;
use osprey_agent::skills::{
    BUNDLED, Frontmatter, MANUAL_TTL, SKILL_FILE, SkillSource, Skills, write_skill,
};
use osprey_tools::{FixedApprover, Level, Policy, Registry, RegistryConfig, ToolContext};
use osprey_types::{ApprovalAnswer, ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};

struct Fixture {
    dir: tempfile::TempDir,
    skills: Skills,
    registry: Registry,
    approver: Arc<FixedApprover>,
}

impl Fixture {
    fn user_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("data/skills")
    }

    async fn call(&self, input: Value) -> ToolResult {
        let mut ctx =
            ToolContext::new(Origin::User, Duration::from_secs(30)).with_session("s1".to_string());
        ctx.approver = Some(self.approver.clone());
        self.registry.execute(&ctx, "skill", input).await
    }

    async fn ok(&self, input: Value) -> Value {
        let result = self.call(input.clone()).await;
        assert!(!result.is_error, "{input} -> {}", result.text_content());
        serde_json::from_str(&result.text_content()).unwrap_or(Value::Null)
    }

    async fn refused(&self, input: Value) -> String {
        let result = self.call(input.clone()).await;
        assert!(result.is_error, "{input} should fail");
        assert_eq!(result.code, Some(ErrorCode::InvalidInput), "{input}");
        result.text_content()
    }

    fn asked(&self) -> usize {
        self.approver.count()
    }
}

fn front(name: &str, description: &str, triggers: &[&str]) -> Frontmatter {
    Frontmatter {
        name: Some(name.into()),
        description: Some(description.into()),
        triggers: triggers.iter().map(|t| t.to_string()).collect(),
    }
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // An installed app that ships a skill: <data>/apps/<id>/SKILL.md.
    let apps = data.join("apps");
    std::fs::create_dir_all(apps.join("weather")).unwrap();
    std::fs::write(
        apps.join("weather").join(SKILL_FILE),
        "---\nname: forecast\ndescription: Read the forecast with the weather app\ntriggers: [forecast]\n---\nAsk the weather app.\n",
    )
    .unwrap();
    // A quarantined app's skill and a staging folder stay out of the catalog.
    std::fs::create_dir_all(apps.join("revoked")).unwrap();
    std::fs::write(
        apps.join("revoked").join(SKILL_FILE),
        "---\nname: revoked\ndescription: d\n---\nbad\n",
    )
    .unwrap();
    std::fs::write(apps.join("revoked").join(".quarantined"), "revoked key").unwrap();
    std::fs::create_dir_all(apps.join(".pending")).unwrap();
    std::fs::write(
        apps.join(".pending").join(SKILL_FILE),
        "---\nname: pending\ndescription: d\n---\nnot yet\n",
    )
    .unwrap();
    let skills = Skills::for_data_dir(&data);
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(Level::Allowlist),
        data.join("osprey-internal"),
    ));
    registry.register_domain(SkillTool::new(skills.clone()));
    Fixture {
        dir,
        skills,
        registry,
        approver: Arc::new(FixedApprover::new(ApprovalAnswer::Once)),
    }
}

#[tokio::test]
async fn the_catalog_lists_bundled_app_and_user_skills_and_searches() {
    let fx = fixture();
    write_skill(
        &fx.user_dir(),
        "mine",
        &front("mine", "My own way of filing invoices", &["invoice"]),
        "File them.",
    )
    .unwrap();
    let all = fx.ok(json!({"action": "catalog"})).await;
    assert_eq!(all["total"], BUNDLED.len() + 2);
    let sources: Vec<(String, String)> = all["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["source"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(sources.contains(&("forecast".into(), "app".into())));
    assert!(sources.contains(&("mine".into(), "user".into())));
    assert!(sources.contains(&("skill-authoring".into(), "bundled".into())));
    let forecast = all["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "forecast")
        .unwrap();
    assert_eq!(forecast["app"], "weather");

    let found = fx
        .ok(json!({"resource": "skills", "action": "catalog", "query": "INVOICES filing"}))
        .await;
    assert_eq!(found["total"], 1);
    assert_eq!(found["skills"][0]["name"], "mine");
    let bundled = fx
        .ok(json!({"action": "catalog", "source": "bundled"}))
        .await;
    assert_eq!(bundled["total"], BUNDLED.len());
    assert_eq!(fx.asked(), 0, "reading the catalog needs no approval");
}

#[tokio::test]
async fn load_puts_a_skill_in_the_session_for_six_turns() {
    let fx = fixture();
    let result = fx.call(json!({"action": "load", "name": "forecast"})).await;
    assert!(!result.is_error, "{}", result.text_content());
    assert!(result.text_content().contains("Ask the weather app."));
    let active = fx.skills.active("s1");
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].turns_left, MANUAL_TTL);
    assert!(active[0].manual);
    let listed = fx
        .ok(json!({"action": "catalog", "query": "forecast"}))
        .await;
    assert_eq!(listed["skills"][0]["active"], true);

    let missing = fx.call(json!({"action": "load", "name": "nope"})).await;
    assert!(missing.is_error);
    assert!(missing.text_content().contains("no skill named `nope`"));
}

#[tokio::test]
async fn create_update_delete_a_user_skill_with_approval() {
    let fx = fixture();
    let created = fx
        .ok(json!({
            "action": "create",
            "name": "tea-time",
            "description": "How the person likes their tea",
            "triggers": ["make tea", "a cup of \"tea\", please"],
            "body": "Green, no sugar.",
        }))
        .await;
    assert_eq!(created["created"], "tea-time");
    assert_eq!(fx.asked(), 1, "create needs approval");
    let path = fx.user_dir().join("tea-time").join(SKILL_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("---\nname: \"tea-time\""), "{text}");
    // No temporary file is left behind.
    let entries: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(entries, [SKILL_FILE]);

    // The catalog sees it at once, with its triggers intact, and a trigger matches.
    let meta = fx.skills.catalog().get("tea-time").unwrap();
    assert_eq!(meta.source, SkillSource::User);
    assert_eq!(meta.triggers, ["make tea", "a cup of \"tea\", please"]);
    assert_eq!(fx.skills.catalog().matching("please MAKE TEA now").len(), 1);

    // Active copies follow an update.
    fx.ok(json!({"action": "load", "name": "tea-time"})).await;
    fx.ok(json!({"action": "update", "name": "tea-time", "body": "Black, one sugar."}))
        .await;
    assert_eq!(fx.asked(), 2);
    let skill = fx.skills.catalog().load("tea-time").unwrap();
    assert_eq!(skill.body.trim(), "Black, one sugar.");
    assert_eq!(skill.meta.description, "How the person likes their tea");
    assert_eq!(fx.skills.active("s1")[0].body.trim(), "Black, one sugar.");

    // A whole SKILL.md as content.
    fx.ok(json!({
        "action": "update",
        "name": "tea-time",
        "content": "---\nname: tea-time\ndescription: Tea, revised\ntriggers: [kettle]\n---\nOolong.\n",
    }))
    .await;
    let meta = fx.skills.catalog().get("tea-time").unwrap();
    assert_eq!(meta.description, "Tea, revised");
    assert_eq!(meta.triggers, ["kettle"]);

    // Creating it again is refused: update is the way.
    let again = fx
        .refused(json!({"action": "create", "name": "tea-time", "description": "d", "body": "b"}))
        .await;
    assert!(again.contains("use update"), "{again}");

    // Delete keeps files the person put beside the skill.
    std::fs::write(fx.user_dir().join("tea-time/notes.txt"), "keep me").unwrap();
    let deleted = fx.ok(json!({"action": "delete", "name": "tea-time"})).await;
    assert_eq!(deleted["deleted"], "tea-time");
    assert!(deleted["kept"].as_str().unwrap().contains("other files"));
    assert!(!path.exists());
    assert!(fx.user_dir().join("tea-time/notes.txt").exists());
    assert!(fx.skills.catalog().get("tea-time").is_none());
    assert!(
        fx.skills.active("s1").is_empty(),
        "a deleted skill leaves the prompt"
    );
}

#[tokio::test]
async fn bundled_and_app_skills_bad_frontmatter_and_path_tricks_are_refused() {
    let fx = fixture();
    let bundled = fx
        .refused(json!({"action": "update", "name": "skill-authoring", "body": "x"}))
        .await;
    assert!(bundled.contains("bundled skill"), "{bundled}");
    let app = fx
        .refused(json!({"action": "delete", "name": "forecast"}))
        .await;
    assert!(app.contains("the app `weather`"), "{app}");
    assert!(
        fx.dir
            .path()
            .join("data/apps/weather")
            .join(SKILL_FILE)
            .exists()
    );
    let shadow = fx
        .refused(json!({"action": "create", "name": "forecast", "description": "d", "body": "b"}))
        .await;
    assert!(shadow.contains("Choose another name"), "{shadow}");

    for name in [
        "../escape",
        "a/b",
        "..",
        ".hidden",
        "UPPER",
        "",
        "a\\b",
        "tilde~",
    ] {
        let message = fx
            .refused(json!({"action": "create", "name": name, "description": "d", "body": "b"}))
            .await;
        assert!(
            message.contains("not a usable skill name"),
            "{name}: {message}"
        );
    }
    assert!(!fx.dir.path().join("data/escape").exists());

    let no_description = fx
        .refused(json!({"action": "create", "name": "x1", "body": "b"}))
        .await;
    assert!(
        no_description.contains("`description` is missing"),
        "{no_description}"
    );
    let unclosed = fx
        .refused(json!({"action": "create", "content": "---\nname: x2\ndescription: d\nbody without end"}))
        .await;
    assert!(unclosed.contains("closing `---`"), "{unclosed}");
    let mismatch = fx
        .refused(json!({"action": "create", "name": "x3", "content": "---\nname: x4\ndescription: d\n---\nbody"}))
        .await;
    assert!(mismatch.contains("frontmatter says `x4`"), "{mismatch}");
    let too_big = fx
        .refused(json!({"action": "create", "name": "x5", "description": "d", "body": "y".repeat(16_001)}))
        .await;
    assert!(too_big.contains("16000"), "{too_big}");
    let bad_trigger = fx
        .refused(json!({"action": "create", "name": "x6", "description": "d", "triggers": ["!!"], "body": "b"}))
        .await;
    assert!(
        bad_trigger.contains("no letters or digits"),
        "{bad_trigger}"
    );
    // Nothing was written for any of them.
    assert!(!fx.user_dir().exists() || std::fs::read_dir(fx.user_dir()).unwrap().count() == 0);
}

#[tokio::test]
async fn a_symlinked_user_skill_is_not_written_through() {
    let fx = fixture();
    let outside = fx.dir.path().join("outside");
    write_skill(&outside, "linked", &front("linked", "d", &[]), "original").unwrap();
    std::fs::create_dir_all(fx.user_dir()).unwrap();
    std::os::unix::fs::symlink(outside.join("linked"), fx.user_dir().join("linked")).unwrap();
    let message = fx
        .refused(json!({"action": "update", "name": "linked", "body": "changed"}))
        .await;
    assert!(message.contains("not a plain folder"), "{message}");
    assert!(
        std::fs::read_to_string(outside.join("linked").join(SKILL_FILE))
            .unwrap()
            .contains("original")
    );
}

/// A published skill far larger than a prompt page loads in pages through the tool, each
/// naming where the next starts, and the folder its scripts are in.
#[tokio::test]
async fn a_long_skill_loads_page_by_page_through_the_tool() {
    let fixture = fixture();
    let body: String = (0..3000)
        .map(|i| format!("Line {i} of the reference.\n"))
        .collect();
    write_skill(
        &fixture.user_dir(),
        "reference",
        &front("reference", "A long reference", &[]),
        &body,
    )
    .unwrap();
    fixture.skills.catalog().refresh();

    let first = fixture
        .call(json!({"action": "load", "name": "reference"}))
        .await;
    assert!(!first.is_error, "{}", first.text_content());
    let text = first.text_content();
    assert!(text.contains("is in your prompt"), "{text}");
    assert!(
        text.contains(&fixture.user_dir().join("reference").display().to_string()),
        "{text}"
    );
    let next: u64 = text
        .rsplit("offset=")
        .next()
        .and_then(|rest| rest.trim_end_matches(']').trim().parse().ok())
        .unwrap_or_else(|| panic!("no next offset in {}", &text[text.len() - 200..]));
    let second = fixture
        .call(json!({"action": "load", "name": "reference", "offset": next}))
        .await;
    let second = second.text_content();
    assert!(
        second.contains(&format!("from character {next}")),
        "{second}"
    );
    let first_line_of_second = second.split("\n\n").nth(1).unwrap().lines().next().unwrap();
    assert!(
        body.contains(first_line_of_second),
        "{first_line_of_second}"
    );
}
