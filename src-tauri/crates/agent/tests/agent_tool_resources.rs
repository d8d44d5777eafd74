//! The `agent` tool's work, session, message and profile resources, its aliases and its
//! action-to-resource inference, through a real Registry on a real SQLite file.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_agent::AgentTool;
use osprey_agent::runner::SESSION_MESSAGE_APPEND;
use osprey_db::{Database, MemoryLayer, NewSession};
use osprey_tools::hooks::{FilterOutcome, HookDispatcher};
use osprey_tools::{Level, Policy, Registry, RegistryConfig, ToolContext};
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
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(level),
        dir.path().join("data"),
    ));
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

async fn call_in(f: &Fixture, session: &str, input: Value) -> ToolResult {
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(30)).with_session(session);
    f.registry.execute(&ctx, "agent", input).await
}

fn body(result: &ToolResult) -> Value {
    assert!(!result.is_error, "{result:?}");
    serde_json::from_str(&result.text_content()).unwrap()
}

fn titles_and_statuses(list: &Value) -> Vec<(String, String)> {
    list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["title"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn work_tasks_are_created_updated_listed_and_deleted_per_session() {
    // Even at `deny`: the to-do list is the model's own scratch plan.
    let f = fixture(Level::Deny, None);
    let first = body(
        &call_in(
            &f,
            "s1",
            json!({"resource": "todo", "action": "create", "title": "read the report"}),
        )
        .await,
    );
    let id = first["created"]["id"].as_i64().unwrap();
    assert_eq!(first["created"]["status"], "pending");
    // No resource: `create` with a title can only be a work task.
    let second = body(
        &call_in(
            &f,
            "s1",
            json!({"action": "create", "title": "write the summary", "notes": "keep it short"}),
        )
        .await,
    );
    assert_eq!(second["progress"], "0 of 2 done");

    let updated = body(
        &call_in(
            &f,
            "s1",
            json!({"resource": "work", "action": "update", "id": id, "status": "done"}),
        )
        .await,
    );
    assert_eq!(updated["updated"]["status"], "done");
    assert_eq!(updated["progress"], "1 of 2 done");

    let list = body(&call_in(&f, "s1", json!({"resource": "checklist", "action": "list"})).await);
    assert_eq!(
        titles_and_statuses(&list),
        [
            ("read the report".to_string(), "done".to_string()),
            ("write the summary".to_string(), "pending".to_string())
        ]
    );
    let done_only = body(
        &call_in(
            &f,
            "s1",
            json!({"resource": "work", "action": "list", "status": "done"}),
        )
        .await,
    );
    assert_eq!(done_only["count"], 1);

    // Another session has its own (empty) list and cannot touch this one.
    let other = body(&call_in(&f, "s2", json!({"resource": "work", "action": "list"})).await);
    assert_eq!(other["count"], 0);
    let foreign = call_in(
        &f,
        "s2",
        json!({"resource": "work", "action": "delete", "id": id}),
    )
    .await;
    assert!(foreign.is_error);
    assert!(foreign.text_content().contains("no step"));

    // Bad input is refused with what to do, and nothing changes.
    let bad = call_in(
        &f,
        "s1",
        json!({"resource": "work", "action": "update", "id": id, "status": "blocked"}),
    )
    .await;
    assert_eq!(bad.code, Some(ErrorCode::InvalidInput));
    assert!(
        bad.text_content().contains("pending, in_progress, done"),
        "{bad:?}"
    );
    let empty = call_in(
        &f,
        "s1",
        json!({"resource": "work", "action": "update", "id": id}),
    )
    .await;
    assert!(empty.text_content().contains("at least one of"));

    let deleted = body(
        &call_in(
            &f,
            "s1",
            json!({"resource": "todos", "action": "delete", "id": id}),
        )
        .await,
    );
    assert_eq!(deleted["deleted"], id);
    assert_eq!(
        titles_and_statuses(&deleted),
        [("write the summary".to_string(), "pending".to_string())]
    );
    assert_eq!(f.db.work_tasks().list("s1", None).unwrap().len(), 1);
}

struct Recorder {
    actions: Mutex<Vec<(String, Value)>>,
}

impl HookDispatcher for Recorder {
    fn has_subscribers(&self, hook: &str) -> bool {
        hook == SESSION_MESSAGE_APPEND
    }
    fn apply_filter<'a>(&'a self, _hook: &'a str, payload: Value) -> BoxFuture<'a, FilterOutcome> {
        Box::pin(async move {
            FilterOutcome {
                payload,
                handled: false,
            }
        })
    }
    fn do_action<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, ()> {
        self.actions
            .lock()
            .unwrap()
            .push((hook.to_string(), payload));
        Box::pin(async {})
    }
}

fn open_session(db: &Database, id: &str) {
    db.sessions()
        .open_or_create(&NewSession {
            id,
            origin: "user",
            ..Default::default()
        })
        .unwrap();
}

#[tokio::test]
async fn a_message_lands_in_another_session_and_listeners_hear_of_it() {
    let recorder = Arc::new(Recorder {
        actions: Mutex::new(Vec::new()),
    });
    let f = fixture(Level::Allowlist, Some(recorder.clone()));
    open_session(&f.db, "chat");
    open_session(&f.db, "reminder-run");

    let sent = body(
        &call_in(
            &f,
            "reminder-run",
            json!({"action": "send", "session_id": "chat", "text": "Your build finished."}),
        )
        .await,
    );
    assert_eq!(sent["seq"], 1);
    let stored = f.db.sessions().messages("chat").unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].role, "assistant");
    assert_eq!(
        stored[0].content,
        json!([{"type": "text", "text": "Your build finished."}])
    );
    let actions = recorder.actions.lock().unwrap().clone();
    assert_eq!(actions.len(), 1);
    assert_eq!(actions[0].1["session_id"], "chat");
    assert_eq!(actions[0].1["from_session_id"], "reminder-run");

    // The current session, a missing one and a running one are refused; nothing is stored.
    let own = call_in(
        &f,
        "chat",
        json!({"resource": "message", "action": "send", "session_id": "chat", "text": "hi"}),
    )
    .await;
    assert!(
        own.text_content().contains("say it in your reply"),
        "{own:?}"
    );
    let missing = call_in(
        &f,
        "chat",
        json!({"resource": "message", "action": "send", "session_id": "nope", "text": "hi"}),
    )
    .await;
    assert!(missing.text_content().contains("no session `nope`"));
    f.db.sessions().set_status("chat", "running").unwrap();
    let busy = call_in(
        &f,
        "reminder-run",
        json!({"resource": "notify", "action": "send", "session_id": "chat", "text": "hi"}),
    )
    .await;
    assert!(busy.text_content().contains("middle of a turn"), "{busy:?}");
    assert_eq!(f.db.sessions().messages("chat").unwrap().len(), 1);
}

#[tokio::test]
async fn sessions_are_listed_read_and_cleared_with_approval() {
    let f = fixture(Level::Allowlist, None);
    open_session(&f.db, "a");
    open_session(&f.db, "b");
    let sessions = f.db.sessions();
    sessions
        .append_message(
            "a",
            "user",
            &json!([{"type": "text", "text": "What is 2+2?"}]),
            None,
        )
        .unwrap();
    sessions
        .append_message(
            "a",
            "assistant",
            &json!([
                {"type": "text", "text": "Let me check."},
                {"type": "tool_call", "id": "c1", "name": "shell", "input": {}}
            ]),
            None,
        )
        .unwrap();
    sessions
        .append_message(
            "a",
            "assistant",
            &json!([{"type": "text", "text": "4"}]),
            None,
        )
        .unwrap();
    f.db.work_tasks()
        .create("a", "answer", osprey_db::WorkStatus::Done, None)
        .unwrap();

    let list = body(
        &call_in(
            &f,
            "b",
            json!({"resource": "conversations", "action": "list"}),
        )
        .await,
    );
    assert_eq!(list["count"], 2);

    // History of the current session by default, of another by id; the latest `limit`.
    let history = body(
        &call_in(
            &f,
            "a",
            json!({"resource": "chat", "action": "history", "limit": 2}),
        )
        .await,
    );
    assert_eq!(history["total"], 3);
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["text"], "Let me check.");
    assert_eq!(messages[0]["tool_calls"], json!(["shell"]));
    assert_eq!(messages[1]["text"], "4");
    let from_b = body(
        &call_in(
            &f,
            "b",
            json!({"resource": "session", "action": "history", "session_id": "a"}),
        )
        .await,
    );
    assert_eq!(from_b["messages"][0]["text"], "What is 2+2?");

    let status = body(
        &call_in(
            &f,
            "b",
            json!({"resource": "session", "action": "status", "session_id": "a"}),
        )
        .await,
    );
    assert_eq!(status["messages"], 3);
    assert_eq!(status["todo"], "1 of 1 done");

    // Clearing needs approval: with no one to ask it is refused and nothing is lost.
    let refused = call_in(
        &f,
        "b",
        json!({"resource": "session", "action": "clear", "session_id": "a"}),
    )
    .await;
    assert_eq!(refused.code, Some(ErrorCode::PolicyDenied), "{refused:?}");
    assert_eq!(f.db.sessions().messages("a").unwrap().len(), 3);

    // At `full` it runs: the messages go, the session and its to-do list stay.
    let f_full = Fixture {
        registry: {
            let registry = Registry::new(RegistryConfig::new(
                Policy::at_level(Level::Full),
                f._dir.path().join("data"),
            ));
            registry.register_domain(AgentTool::new(&f.db));
            registry
        },
        db: f.db.clone(),
        _dir: tempfile::tempdir().unwrap(),
    };
    f.db.sessions().set_status("a", "running").unwrap();
    let busy = call_in(
        &f_full,
        "b",
        json!({"resource": "session", "action": "clear", "session_id": "a"}),
    )
    .await;
    assert!(busy.text_content().contains("middle of a turn"));
    f.db.sessions().set_status("a", "idle").unwrap();
    let cleared = body(
        &call_in(
            &f_full,
            "b",
            json!({"resource": "session", "action": "clear", "session_id": "a"}),
        )
        .await,
    );
    assert_eq!(cleared["messages_removed"], 3);
    assert!(f.db.sessions().messages("a").unwrap().is_empty());
    assert!(f.db.sessions().get("a").unwrap().is_some());
    assert_eq!(f.db.work_tasks().list("a", None).unwrap().len(), 1);
}

#[tokio::test]
async fn profile_facts_are_set_read_and_forgotten_and_live_in_tacit_memory() {
    let f = fixture(Level::Allowlist, None);
    body(
        &call_in(
            &f,
            "s",
            json!({"resource": "user", "action": "set", "key": "Time Zone", "value": "Europe/Berlin"}),
        )
        .await,
    );
    body(
        &call_in(
            &f,
            "s",
            json!({"resource": "me", "action": "set", "key": "name", "value": "Ada"}),
        )
        .await,
    );
    // Setting again replaces the value.
    body(
        &call_in(
            &f,
            "s",
            json!({"resource": "profile", "action": "set", "key": "name", "value": "Ada Lovelace"}),
        )
        .await,
    );
    let one = body(
        &call_in(
            &f,
            "s",
            json!({"resource": "profile", "action": "get", "key": "time_zone"}),
        )
        .await,
    );
    assert_eq!(one["value"], "Europe/Berlin");
    let all = body(&call_in(&f, "s", json!({"resource": "profile", "action": "get"})).await);
    assert_eq!(
        all["facts"],
        json!({"name": "Ada Lovelace", "time_zone": "Europe/Berlin"})
    );

    // Stored durably as tacit memories in the `profile` namespace, so memory search finds them.
    let stored =
        f.db.memory()
            .recall(osprey_agent::agent_tool::PROFILE_NAMESPACE, "name")
            .unwrap()
            .unwrap();
    assert_eq!(stored.layer, MemoryLayer::Tacit);
    let found = body(
        &call_in(
            &f,
            "s",
            json!({"resource": "memory", "action": "search", "query": "Lovelace"}),
        )
        .await,
    );
    assert_eq!(found["count"], 1);

    // Forgetting needs approval; with nobody to ask it is refused and the fact stays.
    let refused = call_in(
        &f,
        "s",
        json!({"resource": "profile", "action": "delete", "key": "name"}),
    )
    .await;
    assert_eq!(refused.code, Some(ErrorCode::PolicyDenied));
    let missing_value = call_in(
        &f,
        "s",
        json!({"resource": "profile", "action": "set", "key": "name"}),
    )
    .await;
    assert_eq!(missing_value.code, Some(ErrorCode::InvalidInput));
    assert!(missing_value.text_content().contains("`value`"));
    let unknown = call_in(
        &f,
        "s",
        json!({"resource": "profile", "action": "get", "key": "shoe size"}),
    )
    .await;
    assert!(
        unknown
            .text_content()
            .contains("no profile fact `shoe_size`")
    );
    assert!(
        f.db.memory()
            .recall(osprey_agent::agent_tool::PROFILE_NAMESPACE, "name")
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn aliases_and_action_inference_reach_every_resource() {
    let f = fixture(Level::Allowlist, None);
    open_session(&f.db, "s");
    // Each alias lands on its resource (the error or answer names it).
    for (resource, expected) in [
        ("notes", "memories"),
        ("remember", "memories"),
        ("todo", "tasks"),
        ("checklist", "tasks"),
        ("chat", "sessions"),
        ("history", "sessions"),
    ] {
        let result = call_in(&f, "s", json!({"resource": resource, "action": "list"})).await;
        assert!(
            body(&result).get(expected).is_some(),
            "{resource}: {result:?}"
        );
    }
    for alias in ["subagent", "delegate", "agent"] {
        let result = call_in(&f, "s", json!({"resource": alias, "action": "list"})).await;
        // No sub-agents attached in this fixture: the task resource says so.
        assert!(
            result
                .text_content()
                .contains("sub-agents are not available"),
            "{alias}: {result:?}"
        );
    }

    // Actions only one resource has need no resource.
    let spawn = call_in(&f, "s", json!({"action": "spawn", "prompt": "do it"})).await;
    assert!(
        spawn
            .text_content()
            .contains("sub-agents are not available")
    );
    let sent = call_in(
        &f,
        "s",
        json!({"action": "send", "text": "hi", "session_id": "s"}),
    )
    .await;
    assert!(sent.text_content().contains("say it in your reply"));
    let set = body(&call_in(&f, "s", json!({"action": "set", "key": "k", "value": "v"})).await);
    assert_eq!(set["set"]["value"], "v");
    let cleared = call_in(&f, "s", json!({"action": "clear", "session_id": "s"})).await;
    // `clear` is on memory and session; the session id picks the session (which needs approval).
    assert_eq!(cleared.code, Some(ErrorCode::PolicyDenied), "{cleared:?}");
    assert!(
        cleared.text_content().contains("session clear"),
        "{cleared:?}"
    );

    // A shared action with nothing to tell the resources apart asks for the resource.
    let ambiguous = call_in(&f, "s", json!({"action": "list"})).await;
    assert_eq!(ambiguous.code, Some(ErrorCode::InvalidInput));
    assert!(
        ambiguous
            .text_content()
            .contains("say which with `resource`")
    );
}
