//! The `agent` tool's memory resource through a real registry: policy, aliases, hooks, audit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_agent::AgentTool;
use osprey_db::{AuditQuery, Database};
use osprey_tools::hooks::{FilterOutcome, HookDispatcher};
use osprey_tools::{
    AskMode, AuditSink, Level, OriginRules, PathGuard, Policy, PolicyConfig, Registry,
    RegistryConfig, Safeguard, ToolContext,
};
use osprey_types::{ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};

struct Fixture {
    registry: Registry,
    db: Database,
    _dir: tempfile::TempDir,
}

fn fixture(level: Level, hooks: Option<Arc<dyn HookDispatcher>>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(
            PolicyConfig {
                level,
                ask: AskMode::OnMiss,
                ..Default::default()
            },
            Some(db.grants()),
        )
        .unwrap(),
        origin_rules: OriginRules::default(),
        safeguard: Safeguard::new(PathGuard::new(
            Some("/home/tester".into()),
            dir.path().join("data"),
        )),
        audit: AuditSink::new(db.audit()),
        output_cap: 100_000,
    });
    let mut tool = AgentTool::new(&db);
    if let Some(hooks) = hooks {
        tool = tool.with_hooks(hooks);
    }
    registry.register_domain(tool);
    Fixture {
        registry,
        db,
        _dir: dir,
    }
}

fn ctx() -> ToolContext {
    ToolContext::new(Origin::User, Duration::from_secs(30)).with_session("s1")
}

async fn call(f: &Fixture, input: Value) -> ToolResult {
    f.registry.execute(&ctx(), "agent", input).await
}

fn body(result: &ToolResult) -> Value {
    assert!(!result.is_error, "{result:?}");
    serde_json::from_str(&result.text_content()).unwrap()
}

#[tokio::test]
async fn stores_recalls_searches_and_lists_without_approval_even_at_deny() {
    let f = fixture(Level::Deny, None);
    let stored = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "store", "layer": "tacit", "namespace": "user",
                   "key": "units", "content": "prefers metric units"}),
        )
        .await,
    );
    let id = stored["stored"]["id"].as_i64().unwrap();
    assert_eq!(stored["stored"]["layer"], "tacit");
    // Aliases and action inference: `notes` is memory; store's default layer is daily.
    let daily = body(
        &call(
            &f,
            json!({"resource": "notes", "action": "store", "content": "met Sam about the launch"}),
        )
        .await,
    );
    assert_eq!(daily["stored"]["layer"], "daily");
    assert_eq!(daily["stored"]["namespace"], "default");

    let by_key = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "recall", "namespace": "user", "key": "units"}),
        )
        .await,
    );
    assert_eq!(by_key["id"], id);
    let by_id = body(
        &call(
            &f,
            json!({"resource": "memories", "action": "recall", "id": id}),
        )
        .await,
    );
    assert_eq!(by_id["content"], "prefers metric units");

    let found = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "search", "query": "METRIC units?"}),
        )
        .await,
    );
    assert_eq!(found["count"], 1);
    assert!(found["memories"][0]["score"].as_f64().unwrap() > 0.0);
    for hostile in ["\"", "AND", "*", "NEAR(", "a\" OR \"b", "(", ""] {
        let r = call(
            &f,
            json!({"resource": "memory", "action": "search", "query": hostile}),
        )
        .await;
        assert!(!r.is_error, "{hostile:?}: {r:?}");
    }

    let listed = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "list", "limit": 1}),
        )
        .await,
    );
    assert_eq!(listed["total"], 2);
    assert_eq!(listed["memories"].as_array().unwrap().len(), 1);
    let tacit = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "list", "layer": "tacit"}),
        )
        .await,
    );
    assert_eq!(tacit["total"], 1);

    // Every call is in the audit log.
    f.registry.audit().flush();
    let audit = f.db.audit().list(&AuditQuery::default()).unwrap();
    assert!(
        audit.iter().filter(|e| e.tool == "agent").count() >= 6,
        "{audit:?}"
    );
}

#[tokio::test]
async fn delete_and_clear_go_through_the_approval_policy() {
    let f = fixture(Level::Deny, None);
    let id = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "store", "content": "x"}),
        )
        .await,
    )["stored"]["id"]
        .as_i64()
        .unwrap();
    let refused = call(
        &f,
        json!({"resource": "memory", "action": "delete", "id": id}),
    )
    .await;
    assert_eq!(refused.code, Some(ErrorCode::PolicyDenied), "{refused:?}");
    let refused = call(
        &f,
        json!({"resource": "memory", "action": "clear", "namespace": "default"}),
    )
    .await;
    assert_eq!(refused.code, Some(ErrorCode::PolicyDenied), "{refused:?}");
    assert_eq!(f.db.memory().count(&Default::default()).unwrap(), 1);

    let f = fixture(Level::Full, None);
    let a = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "store", "content": "a", "namespace": "n"}),
        )
        .await,
    )["stored"]["id"]
        .as_i64()
        .unwrap();
    call(
        &f,
        json!({"resource": "memory", "action": "store", "content": "b", "namespace": "n"}),
    )
    .await;
    call(
        &f,
        json!({"resource": "memory", "action": "store", "content": "c", "namespace": "m"}),
    )
    .await;
    assert_eq!(
        body(
            &call(
                &f,
                json!({"resource": "memory", "action": "delete", "id": a})
            )
            .await
        )["deleted"],
        a
    );
    let again = call(
        &f,
        json!({"resource": "memory", "action": "delete", "id": a}),
    )
    .await;
    assert_eq!(again.code, Some(ErrorCode::ToolFailed));
    // clear needs a namespace: the table says so, so a bare clear cannot wipe everything.
    let bare = call(&f, json!({"resource": "memory", "action": "clear"})).await;
    assert_eq!(bare.code, Some(ErrorCode::InvalidInput), "{bare:?}");
    assert_eq!(
        body(
            &call(
                &f,
                json!({"resource": "memory", "action": "clear", "namespace": "n"})
            )
            .await
        )["cleared"],
        1
    );
    assert_eq!(f.db.memory().count(&Default::default()).unwrap(), 1);
}

#[tokio::test]
async fn bad_input_is_refused_with_a_message_the_model_can_use() {
    let f = fixture(Level::Full, None);
    let r = call(&f, json!({"resource": "memory", "action": "store"})).await;
    assert_eq!(r.code, Some(ErrorCode::InvalidInput));
    let r = call(
        &f,
        json!({"resource": "memory", "action": "store", "content": "x", "layer": "weekly"}),
    )
    .await;
    assert_eq!(r.code, Some(ErrorCode::InvalidInput));
    let r = call(&f, json!({"resource": "memory", "action": "recall"})).await;
    assert_eq!(r.code, Some(ErrorCode::InvalidInput));
    assert!(r.text_content().contains("id"), "{r:?}");
    let r = call(
        &f,
        json!({"resource": "memory", "action": "recall", "key": "nope"}),
    )
    .await;
    assert_eq!(r.code, Some(ErrorCode::ToolFailed));
    let r = call(&f, json!({"resource": "memory", "action": "fly"})).await;
    assert_eq!(r.code, Some(ErrorCode::InvalidInput));
}

/// Subscribes to the memory hooks: redacts stored content and answers searches for "embedding".
struct MemoryHooks {
    subscribed: bool,
    seen: Mutex<Vec<(String, Value)>>,
}

impl HookDispatcher for MemoryHooks {
    fn has_subscribers(&self, hook: &str) -> bool {
        self.subscribed && hook.starts_with("memory.")
    }
    fn apply_filter<'a>(
        &'a self,
        hook: &'a str,
        mut payload: Value,
    ) -> BoxFuture<'a, FilterOutcome> {
        self.seen
            .lock()
            .unwrap()
            .push((hook.to_string(), payload.clone()));
        Box::pin(async move {
            let mut handled = false;
            if hook == "memory.pre_store" {
                let content = payload["content"]
                    .as_str()
                    .unwrap_or_default()
                    .replace("hunter2", "[redacted]");
                payload["content"] = json!(content);
                payload["namespace"] = json!("redacted");
            }
            if hook == "memory.pre_recall" && payload["query"] == "embedding" {
                handled = true;
                payload["result"] =
                    serde_json::to_value(ToolResult::text("{\"count\":0,\"from\":\"hook\"}"))
                        .unwrap();
            }
            FilterOutcome { payload, handled }
        })
    }
    fn do_action<'a>(&'a self, _hook: &'a str, _payload: Value) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

#[tokio::test]
async fn memory_hooks_rewrite_and_handle_when_subscribed() {
    let hooks = Arc::new(MemoryHooks {
        subscribed: true,
        seen: Mutex::default(),
    });
    let f = fixture(Level::Full, Some(hooks.clone()));
    let stored = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "store", "content": "password hunter2"}),
        )
        .await,
    );
    assert_eq!(stored["stored"]["content"], "password [redacted]");
    assert_eq!(stored["stored"]["namespace"], "redacted");
    let from_hook = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "search", "query": "embedding"}),
        )
        .await,
    );
    assert_eq!(from_hook["from"], "hook");
    let plain = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "search", "query": "password"}),
        )
        .await,
    );
    assert_eq!(plain["count"], 1);
    let seen = hooks.seen.lock().unwrap();
    let names: Vec<&str> = seen.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        names,
        ["memory.pre_store", "memory.pre_recall", "memory.pre_recall"]
    );
    assert_eq!(seen[0].1["origin"], "user");
    assert_eq!(seen[0].1["session_id"], "s1");
}

#[tokio::test]
async fn memory_hooks_are_not_called_without_subscribers() {
    let hooks = Arc::new(MemoryHooks {
        subscribed: false,
        seen: Mutex::default(),
    });
    let f = fixture(Level::Full, Some(hooks.clone()));
    body(
        &call(
            &f,
            json!({"resource": "memory", "action": "store", "content": "hunter2"}),
        )
        .await,
    );
    let found = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "search", "query": "hunter2"}),
        )
        .await,
    );
    assert_eq!(found["count"], 1);
    assert!(hooks.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn memories_carry_importance_tags_metadata_and_their_source() {
    let f = fixture(Level::Deny, None);
    let stored = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "store", "layer": "entity", "key": "launch",
                   "content": "The launch is on 3 May", "importance": 5,
                   "tags": ["Work", "launch"], "metadata": {"confidence": "high"}}),
        )
        .await,
    )["stored"]
        .clone();
    assert_eq!(stored["importance"], 5);
    assert_eq!(stored["tags"], json!(["launch", "work"]));
    assert_eq!(stored["metadata"], json!({"confidence": "high"}));
    // Where it came from is the call's origin and session, not something the model says.
    assert_eq!(stored["source"], "user");
    let row =
        f.db.memory()
            .get(stored["id"].as_i64().unwrap())
            .unwrap()
            .unwrap();
    assert_eq!(row.source_session.as_deref(), Some("s1"));
    call(
        &f,
        json!({"resource": "memory", "action": "store", "content": "Buy launch balloons",
               "tags": ["home"]}),
    )
    .await;

    let work = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "search", "query": "launch", "tags": ["work"]}),
        )
        .await,
    );
    assert_eq!(work["count"], 1);
    assert_eq!(work["memories"][0]["key"], "launch");
    let listed = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "list", "tags": ["home"]}),
        )
        .await,
    );
    assert_eq!(listed["total"], 1);

    for bad in [
        json!({"resource": "memory", "action": "store", "content": "x", "importance": 7}),
        json!({"resource": "memory", "action": "store", "content": "x", "tags": "work"}),
        json!({"resource": "memory", "action": "store", "content": "x", "metadata": [1]}),
        json!({"resource": "memory", "action": "store", "content": "x",
               "metadata": {"blob": "y".repeat(5000)}}),
    ] {
        let refused = call(&f, bad.clone()).await;
        assert!(refused.is_error, "{bad}: {refused:?}");
        assert_eq!(refused.code, Some(ErrorCode::InvalidInput), "{bad}");
    }
}

#[tokio::test]
async fn links_bring_related_memories_along_and_use_is_counted() {
    let f = fixture(Level::Deny, None);
    let store = |content: &'static str| {
        let f = &f;
        async move {
            body(
                &call(
                    f,
                    json!({"resource": "memory", "action": "store", "content": content}),
                )
                .await,
            )["stored"]["id"]
                .as_i64()
                .unwrap()
        }
    };
    let sam = store("Sam leads the launch").await;
    let date = store("The launch date is 3 May").await;
    let linked = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "link", "id": sam, "to_id": date,
                   "relation": "about"}),
        )
        .await,
    );
    assert_eq!(linked["new"], true);
    for (bad, why) in [
        (json!({"id": sam, "to_id": sam}), "itself"),
        (json!({"id": sam, "to_id": 999}), "no memory with id 999"),
        (json!({"id": sam}), "needs `to_id`"),
    ] {
        let mut input = bad;
        input["resource"] = json!("memory");
        input["action"] = json!("link");
        let refused = call(&f, input).await;
        assert!(refused.is_error);
        assert!(refused.text_content().contains(why), "{refused:?}");
    }

    // Recalling Sam brings the launch date along, and counts a use.
    let recalled = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "recall", "id": sam}),
        )
        .await,
    );
    assert_eq!(recalled["associated"][0]["id"], date);
    assert_eq!(recalled["associated"][0]["relation"], "about");
    assert_eq!(recalled["associated"][0]["via"], sam);
    let found = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "search", "query": "Sam"}),
        )
        .await,
    );
    assert_eq!(found["memories"][0]["id"], sam);
    assert_eq!(found["associated"][0]["id"], date);
    let row = f.db.memory().get(sam).unwrap().unwrap();
    assert_eq!(row.access_count, 2, "a recall and a search");

    let unlinked = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "unlink", "id": sam, "to_id": date}),
        )
        .await,
    );
    assert_eq!(unlinked["unlinked"], 1);
    let alone = body(
        &call(
            &f,
            json!({"resource": "memory", "action": "recall", "id": sam}),
        )
        .await,
    );
    assert_eq!(alone["associated"], json!([]));
}
