//! The system prompt's sections end to end: what the loopback model server receives when a
//! skill's trigger is in the person's message (and four turns later, when it is gone), when
//! memories bear on the message, with the installed apps core supplies, and with a
//! `prompt.system_sections` hook rewriting a section.

#[path = "support/server.rs"]
mod server;
#[path = "support/wire.rs"]
mod wire;

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use osprey_agent::runner::{MEMORY_PRE_RECALL, PROMPT_SYSTEM_SECTIONS};
use osprey_agent::skills::{
    AUTO_TTL, Frontmatter, SkillCatalog, SkillDir, SkillSource, Skills, write_skill,
};
use osprey_agent::{Runner, RunnerConfig, TurnRequest};
use osprey_db::{Database, MemoryLayer, NewMemory};
use osprey_tools::hooks::{FilterOutcome, HookDispatcher};
use osprey_tools::{Level, Policy, Registry, RegistryConfig};
use serde_json::{Value, json};
use server::Server;
use wire::{ALL, Wire, recording_retry};

struct Fixture {
    dir: tempfile::TempDir,
    db: Database,
    registry: Registry,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(Level::Allowlist),
        dir.path().join("data"),
    ));
    Fixture { dir, db, registry }
}

fn runner(fx: &Fixture, wire: Wire, url: &str) -> Runner {
    let (retry, _) = recording_retry(0);
    Runner::new(
        wire.provider(url, retry),
        fx.registry.clone(),
        fx.db.sessions(),
        RunnerConfig {
            model: "test-model".into(),
            identity: "You are a test agent.".into(),
            ..RunnerConfig::default()
        },
    )
}

/// The system prompt as each wire carries it.
fn system_of(wire: Wire, body: &Value) -> String {
    match wire {
        Wire::Anthropic => body["system"].as_str().unwrap_or_default().to_string(),
        Wire::OpenAi | Wire::Ollama => {
            let first = &body["messages"][0];
            assert_eq!(first["role"], "system", "{body}");
            first["content"].as_str().unwrap_or_default().to_string()
        }
    }
}

const SKILL_MARKER: &str = "QUARTERLY-MARKER: use the finance template";

#[tokio::test]
async fn a_triggered_skill_is_in_the_prompt_for_four_turns_then_drops_out() {
    for wire in ALL {
        let fx = fixture();
        let skill_dir = fx.dir.path().join("skills");
        write_skill(
            &skill_dir,
            "quarterly",
            &Frontmatter {
                name: Some("quarterly".into()),
                description: Some("Quarterly reports".into()),
                triggers: vec!["quarterly report".into()],
            },
            SKILL_MARKER,
        )
        .unwrap();
        let skills = Skills::new(
            SkillCatalog::new(vec![SkillDir::new(&skill_dir, SkillSource::User)]),
            None,
        );
        let turns = AUTO_TTL as usize + 2;
        let server = Server::start((0..turns).map(|_| wire.turn("Done.", &[])).collect()).await;
        let runner = runner(&fx, wire, &server.url());
        runner.set_skills(skills.clone());

        runner
            .run_turn(TurnRequest::new("s", "Please draft the Quarterly Report."))
            .await
            .unwrap();
        for _ in 1..turns {
            runner
                .run_turn(TurnRequest::new("s", "go on"))
                .await
                .unwrap();
        }
        let seen = server.seen();
        assert_eq!(seen.len(), turns);
        for (turn, request) in seen.iter().enumerate() {
            let system = system_of(wire, &request.body);
            let expected = turn < AUTO_TTL as usize;
            assert_eq!(
                system.contains(SKILL_MARKER),
                expected,
                "{wire:?} turn {}: {system}",
                turn + 1
            );
            if expected {
                assert!(system.contains("## Skill: quarterly"), "{system}");
            }
        }
        // Another session never saw the trigger.
        assert!(skills.active("other").is_empty());
        assert!(skills.active("s").is_empty());
    }
}

#[tokio::test]
async fn memories_that_bear_on_the_message_and_tacit_facts_are_recalled_into_the_prompt() {
    let fx = fixture();
    let memory = fx.db.memory();
    for (layer, key, content) in [
        (
            MemoryLayer::Tacit,
            Some("name"),
            "The person is called Ada Lovelace",
        ),
        (
            MemoryLayer::Entity,
            Some("staging"),
            "The staging server is at 10.1.2.3",
        ),
        (MemoryLayer::Daily, None, "Lunch was at noon with the team"),
    ] {
        memory
            .store(&NewMemory {
                layer,
                namespace: "default",
                key,
                content,
                ..NewMemory::default()
            })
            .unwrap();
    }
    let wire = Wire::Anthropic;
    let server = Server::start(vec![wire.turn("It is at 10.1.2.3.", &[])]).await;
    let runner = runner(&fx, wire, &server.url());
    runner.set_memory(fx.db.memory());
    runner
        .run_turn(TurnRequest::new("m", "Where is the staging server?"))
        .await
        .unwrap();
    let system = system_of(wire, &server.seen()[0].body);
    assert!(system.contains("Ada Lovelace"), "{system}");
    assert!(system.contains("10.1.2.3"), "{system}");
    assert!(
        !system.contains("Lunch"),
        "unrelated memories stay out: {system}"
    );
    let tacit = system.find("Ada Lovelace").unwrap();
    let recalled = system.find("10.1.2.3").unwrap();
    assert!(tacit < recalled, "tacit facts come first");
}

#[tokio::test]
async fn important_tacit_facts_come_first_and_recall_follows_links() {
    let fx = fixture();
    let memory = fx.db.memory();
    let store = |layer, content, importance| {
        memory
            .store(&NewMemory {
                layer,
                content,
                importance: Some(importance),
                ..NewMemory::default()
            })
            .unwrap()
            .id
    };
    store(MemoryLayer::Tacit, "Likes green tea", 2);
    store(MemoryLayer::Tacit, "Is allergic to peanuts", 5);
    let printer = store(MemoryLayer::Entity, "The office printer is a LaserJet", 3);
    let toner = store(MemoryLayer::Entity, "Spare toner sits in cupboard B", 3);
    memory.link(printer, toner, "supplies").unwrap();
    let wire = Wire::Anthropic;
    let server = Server::start(vec![wire.turn("Cupboard B.", &[])]).await;
    let runner = runner(&fx, wire, &server.url());
    runner.set_memory(fx.db.memory());
    runner
        .run_turn(TurnRequest::new("m", "The printer is out of ink"))
        .await
        .unwrap();
    let system = system_of(wire, &server.seen()[0].body);
    let allergy = system.find("allergic to peanuts").expect("important fact");
    let tea = system.find("green tea").expect("other fact");
    assert!(allergy < tea, "the more important fact first: {system}");
    assert!(system.contains("LaserJet"), "{system}");
    // Not found by the words of the message, but linked to what was.
    assert!(
        system.contains("(linked, supplies) Spare toner sits in cupboard B"),
        "{system}"
    );
}

/// Rewrites the memory section, records the section names, and answers prompt recalls itself.
struct SectionHooks {
    names: Mutex<Vec<String>>,
}

impl HookDispatcher for SectionHooks {
    fn has_subscribers(&self, hook: &str) -> bool {
        hook == PROMPT_SYSTEM_SECTIONS || hook == MEMORY_PRE_RECALL
    }
    fn apply_filter<'a>(
        &'a self,
        hook: &'a str,
        mut payload: Value,
    ) -> BoxFuture<'a, FilterOutcome> {
        Box::pin(async move {
            if hook == MEMORY_PRE_RECALL {
                assert_eq!(payload["action"], "prompt");
                assert_eq!(payload["query"], "what do you know?");
                return FilterOutcome {
                    payload: json!({"memories": ["HOOK-RECALLED fact"]}),
                    handled: true,
                };
            }
            let sections = payload["sections"].as_array_mut().unwrap();
            *self.names.lock().unwrap() = sections
                .iter()
                .map(|s| s["name"].as_str().unwrap().to_string())
                .collect();
            let memory = sections.iter_mut().find(|s| s["name"] == "memory").unwrap();
            let text = memory["text"]
                .as_str()
                .unwrap()
                .replace("HOOK-RECALLED", "REWRITTEN");
            memory["text"] = json!(text);
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

#[tokio::test]
async fn sections_come_in_order_with_apps_and_a_hook_rewrites_them() {
    let fx = fixture();
    let wire = Wire::OpenAi;
    let server = Server::start(vec![wire.turn("Hi.", &[])]).await;
    let runner = runner(&fx, wire, &server.url());
    runner.set_memory(fx.db.memory());
    runner.set_installed_apps(Arc::new(|| {
        Box::pin(async { "## Installed apps\n- Weather (weather 1.0.0): forecasts".to_string() })
    }));
    let skill_dir = fx.dir.path().join("skills");
    write_skill(
        &skill_dir,
        "greet",
        &Frontmatter {
            name: Some("greet".into()),
            description: Some("d".into()),
            triggers: vec!["know".into()],
        },
        "GREET-BODY",
    )
    .unwrap();
    runner.set_skills(Skills::new(
        SkillCatalog::new(vec![SkillDir::new(&skill_dir, SkillSource::User)]),
        None,
    ));
    let hooks = Arc::new(SectionHooks {
        names: Mutex::new(Vec::new()),
    });
    runner.set_hooks(hooks.clone());
    runner
        .run_turn(TurnRequest::new("h", "what do you know?"))
        .await
        .unwrap();
    assert_eq!(
        *hooks.names.lock().unwrap(),
        ["identity", "tools", "apps", "skills", "memory"]
    );
    let system = system_of(wire, &server.seen()[0].body);
    let positions: Vec<usize> = [
        "You are a test agent.",
        "## Installed apps",
        "GREET-BODY",
        "REWRITTEN fact",
    ]
    .iter()
    .map(|needle| {
        system
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing: {system}"))
    })
    .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{system}");
    assert!(!system.contains("HOOK-RECALLED"));
}

#[tokio::test]
async fn a_fact_stored_during_a_turn_is_in_the_next_turns_prompt() {
    let fx = fixture();
    fx.registry
        .register_domain(osprey_agent::AgentTool::new(&fx.db));
    let wire = Wire::Anthropic;
    let store = wire::ScriptCall {
        id: "call_1",
        name: "agent",
        args: json!({"resource": "memory", "action": "store", "layer": "tacit", "key": "units", "content": "The person prefers metric units"}),
    };
    let server = Server::start(vec![
        wire.turn("Noted.", &[store]),
        wire.turn("I will remember.", &[]),
        wire.turn("12 km.", &[]),
    ])
    .await;
    let runner = runner(&fx, wire, &server.url());
    runner.set_memory(fx.db.memory());
    runner
        .run_turn(TurnRequest::new("r", "Always use metric, please."))
        .await
        .unwrap();
    runner
        .run_turn(TurnRequest::new("r", "How far is the lake?"))
        .await
        .unwrap();
    let seen = server.seen();
    assert!(!system_of(wire, &seen[0].body).contains("metric units"));
    let system = system_of(wire, &seen[2].body);
    assert!(
        system.contains("The person prefers metric units"),
        "{system}"
    );
}

#[tokio::test]
async fn a_skill_the_model_loads_stays_for_the_turn_and_five_more() {
    let fx = fixture();
    let skill_dir = fx.dir.path().join("user-skills");
    write_skill(
        &skill_dir,
        "packing",
        &Frontmatter {
            name: Some("packing".into()),
            description: Some("How to pack for a trip".into()),
            triggers: vec![],
        },
        "PACKING-BODY: roll the shirts",
    )
    .unwrap();
    let skills = Skills::new(
        SkillCatalog::new(vec![SkillDir::new(&skill_dir, SkillSource::User)]),
        Some(skill_dir.clone()),
    );
    fx.registry
        .register_domain(osprey_agent::SkillTool::new(skills.clone()));
    let wire = Wire::Ollama;
    let load = wire::ScriptCall {
        id: "call_1",
        name: "skill",
        args: json!({"action": "load", "name": "packing"}),
    };
    let mut replies = vec![wire.turn("", &[load]), wire.turn("Loaded.", &[])];
    replies.extend((0..6).map(|_| wire.turn("Ok.", &[])));
    let server = Server::start(replies).await;
    let runner = runner(&fx, wire, &server.url());
    runner.set_skills(skills.clone());
    for turn in 0..7 {
        runner
            .run_turn(TurnRequest::new("p", format!("message {turn}")))
            .await
            .unwrap();
    }
    let seen = server.seen();
    assert_eq!(seen.len(), 8);
    // Turn one: the instructions arrive as the tool's result, not yet in the system prompt.
    assert!(!system_of(wire, &seen[0].body).contains("PACKING-BODY"));
    assert!(seen[1].body.to_string().contains("PACKING-BODY"));
    for (index, request) in seen.iter().enumerate().skip(2) {
        let turn = index; // requests 2..=7 are turns 2..=7
        let system = system_of(wire, &request.body);
        assert_eq!(
            system.contains("PACKING-BODY"),
            turn <= 6,
            "turn {turn}: {system}"
        );
    }
}
