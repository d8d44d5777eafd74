//! Comm and channel apps in the core, end to end: the comm fixture app runs as a real sidecar
//! (messages injected through files in its data dir, what Osprey sends read back from its record
//! file), the chat provider is a loopback server speaking the OpenAI streaming format configured
//! through the provider settings. An incoming message runs a turn with origin `comm` in its
//! conversation's session and the answer goes back to that conversation; origin rules and the
//! approval policy hold for those turns; the app crashing and being restarted by the supervisor
//! resumes receiving; channel events land in their channel's session.
//!
//! Outbound: the agent tool's `message send` to a channel (asked; recipient, thread, reply and
//! actions arrive), `message list`, refusals for apps without the permission and for stopped or
//! unknown channels; the `comm` resource's lifecycle and topics against the fixture's
//! `CommTopics` (registration at attach, subscribe, topics, send to an agent, an incoming topic
//! message answered on its topic, unsubscribe, deregistration at stop) and a bridge without
//! topics; a reminder delivering its output to a channel.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use osprey_apps::Installer;
use osprey_apps::supervisor::SupervisorEvent;
use osprey_core::{Core, CoreOptions};
use osprey_db::AuditQuery;
use osprey_tests::{app_project, fixture_binary};
use osprey_types::Origin;
use serde_json::{Value, json};

const APP: &str = "bridge";
const WAIT: Duration = Duration::from_secs(60);

/// A loopback OpenAI-compatible model whose answer depends on the conversation: a tool result
/// last gets "done: <result>", "please run shell" a `shell` call, "please write a file" a `file`
/// write, anything else "echo: <the message's last line>". Records every request body.
struct Model {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn chunk(delta: Value, finish: Value) -> String {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

fn reply(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let tool_call = |name: &str, args: Value| {
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call-1", "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}),
            Value::Null,
        ) + &chunk(json!({}), json!("tool_calls"))
            + "data: [DONE]\n\n"
    };
    let text = |text: String| {
        chunk(json!({"role": "assistant", "content": text}), Value::Null)
            + &chunk(json!({}), json!("stop"))
            + "data: [DONE]\n\n"
    };
    if last["role"] == "tool" {
        return text(format!("done: {}", text_of(&last)));
    }
    let said = text_of(&last);
    if said.contains("please run shell") {
        return tool_call(
            "shell",
            json!({"action": "exec", "command": format!("touch {}", said.lines().last().unwrap_or_default().trim_start_matches("please run shell ").trim())}),
        );
    }
    if said.contains("please write a file") {
        let path = said.lines().last().unwrap_or_default();
        let path = path.trim_start_matches("please write a file ").trim();
        return tool_call(
            "file",
            json!({"action": "write", "path": path, "content": "from comm"}),
        );
    }
    text(format!("echo: {}", said.lines().last().unwrap_or_default()))
}

fn model() -> Model {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let record = bodies.clone();
    // One thread per connection, each read bounded: a connection that stalls (or that a
    // cancelled request left open) must not hold up the turns of other conversations.
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let record = record.clone();
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(WAIT));
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut request = vec![0; length];
                if reader.read_exact(&mut request).is_err() {
                    return;
                }
                let body: Value = serde_json::from_slice(&request).unwrap_or(Value::Null);
                let answer = reply(&body);
                record.lock().unwrap().push(body);
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{answer}"
                );
                let _ = stream.flush();
            });
        }
    });
    Model { url, bodies }
}

/// The bridge with every comm and channel permission.
fn sideload_bridge(root: &Path, data: &Path) -> PathBuf {
    sideload_comm_app(root, data, APP, &["comm:*", "channel:*"])
}

/// The comm fixture sideloaded as `id` (providing `comm` and `channel:feed`) with
/// `permissions`; returns its data dir.
fn sideload_comm_app(root: &Path, data: &Path, id: &str, permissions: &[&str]) -> PathBuf {
    let project = root.join(format!("{id}-project"));
    let manifest = json!({
        "id": id,
        "name": "Chat bridge",
        "version": "1.0.0",
        "provides": ["comm", "channel:feed"],
        "permissions": permissions,
    });
    app_project(
        &project,
        &manifest,
        &fixture_binary("osprey-fixture-comm-app"),
    );
    Installer::new(data.join("apps"))
        .sideload(&project)
        .unwrap();
    // Sideloaded: the app's data dir lives in the apps dir entry.
    data.join("apps").join(id).join("data")
}

struct Setup {
    _root: tempfile::TempDir,
    core: Core,
    app_data: PathBuf,
    root: PathBuf,
    /// What the supervisor reported, for failure messages.
    supervisor: Arc<Mutex<Vec<String>>>,
    /// The model's requests, for failure messages (a turn that never reached the model, or one
    /// whose answer never came back).
    model_requests: Option<Arc<Mutex<Vec<Value>>>>,
}

/// A core with the bridge sideloaded and the model configured (unless `model` is `None`), apps
/// started.
async fn setup(model: Option<&Model>) -> Setup {
    setup_with(model, &[]).await
}

/// [`setup`] with more copies of the comm fixture beside the bridge: `(id, permissions)`.
async fn setup_with(model: Option<&Model>, others: &[(&str, &[&str])]) -> Setup {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let core = Core::open(CoreOptions {
        data_dir: Some(data.clone()),
        policy: None,
        ..CoreOptions::default()
    })
    .unwrap();
    match model {
        Some(model) => {
            core.set_provider_setting("provider.default", "openai")
                .unwrap();
            core.set_provider_setting("provider.openai.base_url", &model.url)
                .unwrap();
            core.set_provider_setting("provider.openai.model", "test-model")
                .unwrap();
        }
        // A provider that cannot be built (no key, no local URL): the sender is told.
        None => {
            core.set_provider_setting("provider.default", "openai")
                .unwrap();
        }
    }
    let app_data = sideload_bridge(root.path(), &data);
    for (id, permissions) in others {
        sideload_comm_app(root.path(), &data, id, permissions);
    }
    let supervisor = Arc::new(Mutex::new(Vec::new()));
    let mut events = core.test_apps().supervisor().subscribe();
    let log = Arc::clone(&supervisor);
    tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            log.lock().unwrap().push(format!("{event:?}"));
        }
    });
    core.start_apps().unwrap();
    let path = root.path().to_path_buf();
    Setup {
        _root: root,
        core,
        app_data,
        root: path,
        supervisor,
        model_requests: model.map(|m| Arc::clone(&m.bodies)),
    }
}

/// Drops a message into the bridge's inbox (written beside it, then renamed in).
fn inject(app_data: &Path, name: &str, value: Value) {
    let inbox = app_data.join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    let staging = app_data.join(format!("{name}.tmp"));
    std::fs::write(&staging, value.to_string()).unwrap();
    std::fs::rename(&staging, inbox.join(format!("{name}.json"))).unwrap();
}

fn sent(app_data: &Path) -> Vec<Value> {
    std::fs::read_to_string(app_data.join("sent.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

impl Setup {
    /// Waits for the reply to message `id`.
    async fn reply_to(&self, id: &str) -> Value {
        let started = Instant::now();
        loop {
            if let Some(found) = sent(&self.app_data)
                .into_iter()
                .find(|s| s["reply_to_id"] == id)
            {
                return found;
            }
            if started.elapsed() > WAIT {
                let log = self.app_data.parent().unwrap().join("logs/stderr.log");
                let asked: Vec<String> = self
                    .model_requests
                    .as_ref()
                    .map(|bodies| {
                        bodies
                            .lock()
                            .unwrap()
                            .iter()
                            .filter_map(|b| b["messages"].as_array()?.last().map(text_of))
                            .collect()
                    })
                    .unwrap_or_default();
                panic!(
                    "no reply to {id}; sent so far: {:?}; the model was asked (last messages): \
                     {asked:?}; supervisor: {:?}; app stderr: {}",
                    sent(&self.app_data),
                    self.supervisor.lock().unwrap(),
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_answered_in_its_conversation_by_a_comm_turn() {
    let model = model();
    let setup = setup(Some(&model)).await;
    let mut events = setup.core.subscribe();
    inject(
        &setup.app_data,
        "01",
        json!({"id": "m1", "conversation_id": "room-1", "sender": "ana", "text": "hello osprey"}),
    );
    let answer = setup.reply_to("m1").await;
    assert_eq!(answer["conversation_id"], "room-1");
    assert_eq!(answer["recipient"], "ana");
    assert_eq!(answer["text"], "echo: hello osprey");
    // The desktop watches it like any chat: started, streamed, finished, in that session.
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        match event {
            osprey_types::CoreEvent::ChatTurnStarted { session_id } => {
                seen.push(format!("started {session_id}"))
            }
            osprey_types::CoreEvent::ChatTextDelta { .. }
                if seen.last().is_none_or(|last| last != "text") =>
            {
                seen.push("text".into())
            }
            osprey_types::CoreEvent::ChatTurnFinished {
                session_id, text, ..
            } => seen.push(format!("finished {session_id}: {text}")),
            _ => {}
        }
    }
    assert_eq!(
        seen,
        [
            "started comm:bridge:room-1",
            "text",
            "finished comm:bridge:room-1: echo: hello osprey"
        ]
    );

    // The turn ran in the conversation's session with origin comm, and the model was told who
    // wrote through which app.
    let sessions = setup.core.test_db().sessions();
    let session = sessions.get("comm:bridge:room-1").unwrap().unwrap();
    assert_eq!(session.origin, "comm");
    assert_eq!(session.title.as_deref(), Some("ana via bridge"));
    let first_request = model.bodies.lock().unwrap()[0].clone();
    let said = text_of(
        first_request["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
    );
    assert!(
        said.contains("from ana via the comm app `bridge`"),
        "{said}"
    );

    // The same conversation continues in the same session (the model sees the history); another
    // conversation gets its own.
    inject(
        &setup.app_data,
        "02",
        json!({"id": "m2", "conversation_id": "room-1", "sender": "ana", "text": "again"}),
    );
    inject(
        &setup.app_data,
        "03",
        json!({"id": "m3", "conversation_id": "room-2", "sender": "bo", "text": "other room"}),
    );
    assert_eq!(setup.reply_to("m2").await["text"], "echo: again");
    let other = setup.reply_to("m3").await;
    assert_eq!(other["conversation_id"], "room-2");
    assert_eq!(other["text"], "echo: other room");
    // (A compaction summary may sit between them; only the conversation's messages count.)
    let conversation = |id: &str| {
        sessions
            .messages(id)
            .unwrap()
            .iter()
            .filter(|m| m.role == "user" || m.role == "assistant")
            .count()
    };
    assert_eq!(conversation("comm:bridge:room-1"), 4);
    assert_eq!(conversation("comm:bridge:room-2"), 2);
    let bodies = model.bodies.lock().unwrap().clone();
    let saw_history = bodies.iter().any(|body| {
        let messages = body["messages"].as_array().unwrap();
        let (last, earlier) = messages.split_last().unwrap();
        text_of(last).ends_with("again")
            && earlier.iter().any(|m| text_of(m).contains("hello osprey"))
    });
    assert!(
        saw_history,
        "the second turn did not see the first: {bodies:#?}"
    );

    // Messages of one conversation arriving together are answered one turn at a time, in
    // order: the session alternates question and answer, never two questions in a row.
    for n in 1..=3 {
        inject(
            &setup.app_data,
            &format!("1{n}"),
            json!({"id": format!("q{n}"), "conversation_id": "room-3", "sender": "cy", "text": format!("question {n}")}),
        );
    }
    for n in 1..=3 {
        assert_eq!(
            setup.reply_to(&format!("q{n}")).await["text"],
            format!("echo: question {n}")
        );
    }
    let order: Vec<String> = sessions
        .messages("comm:bridge:room-3")
        .unwrap()
        .iter()
        .filter(|m| m.role == "user" || m.role == "assistant")
        .map(|m| {
            let text = m.content[0]["text"].as_str().unwrap_or_default();
            format!("{}: {}", m.role, text.lines().last().unwrap_or_default())
        })
        .collect();
    assert_eq!(
        order,
        [
            "user: question 1",
            "assistant: echo: question 1",
            "user: question 2",
            "assistant: echo: question 2",
            "user: question 3",
            "assistant: echo: question 3",
        ]
    );
    let replies: Vec<String> = sent(&setup.app_data)
        .iter()
        .filter(|s| s["conversation_id"] == "room-3")
        .map(|s| s["reply_to_id"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(replies, ["q1", "q2", "q3"]);
    setup.core.stop_apps().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comm_turns_meet_origin_rules_and_approval_is_never_assumed() {
    let model = model();
    let setup = setup(Some(&model)).await;
    let marker = setup.root.join("shell-ran");
    inject(
        &setup.app_data,
        "01",
        json!({"id": "s1", "conversation_id": "room-s", "sender": "eve",
               "text": format!("please run shell {}", marker.display())}),
    );
    let answer = setup.reply_to("s1").await;
    let text = answer["text"].as_str().unwrap();
    assert!(text.starts_with("done: "), "{text}");
    assert!(text.contains("origin rules"), "{text}");
    assert!(!marker.exists(), "the shell command ran");
    // Audit rows are written by a background thread: wait for what was sent.
    setup.core.test_registry().audit().flush();
    let audit = setup
        .core
        .test_db()
        .audit()
        .list(&AuditQuery {
            session_id: Some("comm:bridge:room-s".into()),
            ..AuditQuery::default()
        })
        .unwrap();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0].tool, "shell");
    assert_eq!(audit[0].origin, Origin::Comm.as_str());
    assert_eq!(audit[0].decision, "origin_denied");

    // A write needs approval at the default policy; no one is attached to answer, so it is
    // refused, not approved.
    let target = setup.root.join("written-by-comm.txt");
    inject(
        &setup.app_data,
        "02",
        json!({"id": "w1", "conversation_id": "room-w", "sender": "eve",
               "text": format!("please write a file {}", target.display())}),
    );
    let answer = setup.reply_to("w1").await;
    let text = answer["text"].as_str().unwrap();
    assert!(text.contains("no one is attached to answer"), "{text}");
    assert!(!target.exists(), "the write ran without approval");
    // Audit rows are written by a background thread: wait for what was sent.
    setup.core.test_registry().audit().flush();
    let audit = setup
        .core
        .test_db()
        .audit()
        .list(&AuditQuery {
            session_id: Some("comm:bridge:room-w".into()),
            ..AuditQuery::default()
        })
        .unwrap();
    assert_eq!(audit[0].tool, "file");
    assert_eq!(audit[0].origin, "comm");
    assert_eq!(audit[0].decision, "policy_denied");

    // With the broker attached the question goes to the UI, naming the comm origin; denied there.
    setup.core.attach_approvals();
    let mut events = setup.core.subscribe();
    inject(
        &setup.app_data,
        "03",
        json!({"id": "w2", "conversation_id": "room-w", "sender": "eve",
               "text": format!("please write a file {}", target.display())}),
    );
    let request = tokio::time::timeout(WAIT, async {
        loop {
            if let Ok(osprey_types::CoreEvent::ApprovalRequested { request, .. }) =
                events.recv().await
            {
                return request;
            }
        }
    })
    .await
    .expect("no approval was asked");
    assert_eq!(request.origin, Origin::Comm);
    assert_eq!(request.session_id.as_deref(), Some("comm:bridge:room-w"));
    setup
        .core
        .approvals()
        .answer(&request.id, osprey_types::ApprovalAnswer::Deny)
        .unwrap();
    setup.reply_to("w2").await;
    assert!(!target.exists());
    setup.core.stop_apps().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiving_resumes_after_the_supervisor_restarts_a_crashed_app() {
    let model = model();
    let setup = setup(Some(&model)).await;
    let mut supervisor = setup.core.test_apps().supervisor().subscribe();
    inject(
        &setup.app_data,
        "01",
        json!({"id": "a1", "conversation_id": "room", "text": "before"}),
    );
    assert_eq!(setup.reply_to("a1").await["text"], "echo: before");
    inject(&setup.app_data, "02", json!({"crash": true}));
    // The supervisor notices, waits its backoff (10 s by default) and relaunches.
    tokio::time::timeout(Duration::from_secs(90), async {
        loop {
            if let Ok(SupervisorEvent::Restarted { id, .. }) = supervisor.recv().await
                && id == APP
            {
                return;
            }
        }
    })
    .await
    .expect("the app was not restarted");
    inject(
        &setup.app_data,
        "03",
        json!({"id": "a2", "conversation_id": "room", "text": "after"}),
    );
    assert_eq!(setup.reply_to("a2").await["text"], "echo: after");
    setup.core.stop_apps().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_provider_the_sender_is_told_in_one_short_reply() {
    if std::env::var("OPENAI_API_KEY").is_ok_and(|key| !key.is_empty()) {
        eprintln!("skipped: OPENAI_API_KEY is set, so a provider exists");
        return;
    }
    let setup = setup(None).await;
    inject(
        &setup.app_data,
        "01",
        json!({"id": "n1", "conversation_id": "room", "text": "anyone?"}),
    );
    let answer = setup.reply_to("n1").await;
    assert_eq!(answer["text"], osprey_core::comm::NO_PROVIDER_REPLY);
    setup.core.stop_apps().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_events_land_in_their_session_and_the_core_posts_out() {
    let setup = setup(None).await;
    inject(
        &setup.app_data,
        "01",
        json!({"channel": "feed", "kind": "alert", "text": "disk almost full", "data": {"free_gb": 3}}),
    );
    let sessions = setup.core.test_db().sessions();
    let started = Instant::now();
    while sessions
        .get("channel:bridge:feed")
        .unwrap()
        .is_none_or(|s| s.message_count == 0)
    {
        assert!(started.elapsed() < WAIT, "the event was not stored");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The agent reads it through the `agent` tool's session resource.
    let result = setup
        .core
        .call_tool(
            Origin::User,
            "agent",
            json!({"resource": "session", "action": "history", "session_id": "channel:bridge:feed"}),
        )
        .await;
    assert!(!result.is_error, "{result:?}");
    let text = result.text_content();
    assert!(text.contains("disk almost full"), "{text}");
    assert!(text.contains("alert"), "{text}");
    assert!(text.contains("free_gb"), "{text}");

    let id = setup
        .core
        .channel_send(APP, "feed", "hello feed", None)
        .await
        .unwrap();
    assert_eq!(id, "posted");
    let posts = std::fs::read_to_string(setup.app_data.join("channel-sent.jsonl")).unwrap();
    assert!(posts.contains("hello feed"), "{posts}");
    // The core can also start a message in a conversation (not a reply).
    let id = setup
        .core
        .comm_send(APP, "room-9", "a notice")
        .await
        .unwrap();
    assert_eq!(id, "sent-");
    let notice = sent(&setup.app_data);
    assert_eq!(notice[0]["conversation_id"], "room-9");
    assert_eq!(notice[0]["text"], "a notice");
    assert_eq!(notice[0]["reply_to_id"], "");
    let error = setup
        .core
        .channel_send(APP, "nope", "x", None)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("`nope`"), "{error}");
    setup.core.stop_apps().await;
}

/// Lines of a JSON-lines record file the fixture writes.
fn records(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits (up to [`WAIT`]) until `check` holds, then returns its value.
async fn until<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(started.elapsed() < WAIT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An `agent` call from the person, answered by `approver`.
async fn agent_call(
    core: &Core,
    approver: &Arc<osprey_tools::FixedApprover>,
    input: Value,
) -> osprey_types::ToolResult {
    let ctx = osprey_tools::ToolContext::new(Origin::User, Duration::from_secs(60))
        .with_approver(Arc::clone(approver) as Arc<dyn osprey_tools::Approver>);
    core.call_tool_with(&ctx, "agent", input).await
}

fn yes() -> Arc<osprey_tools::FixedApprover> {
    Arc::new(osprey_tools::FixedApprover::new(
        osprey_types::ApprovalAnswer::Once,
    ))
}

fn parsed(result: &osprey_types::ToolResult) -> Value {
    assert!(!result.is_error, "{result:?}");
    serde_json::from_str(&result.text_content()).unwrap()
}

/// `message list`'s entries by channel name, once `names` all run.
async fn listed_running(core: &Core, names: &[&str]) -> Value {
    until("the channels to connect", async || {
        let listed = parsed(
            &core
                .call_tool(
                    Origin::User,
                    "agent",
                    json!({"resource": "message", "action": "list"}),
                )
                .await,
        );
        let running = |name: &str| {
            listed["channels"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["channel"] == name && c["status"] == "running")
        };
        names.iter().all(|n| running(n)).then_some(listed)
    })
    .await
}

fn entry<'a>(listed: &'a Value, channel: &str) -> &'a Value {
    listed["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["channel"] == channel)
        .unwrap_or_else(|| panic!("no {channel} in {listed}"))
}

const MUTE: &str = "mute-bridge";
const PLAIN: &str = "plain-bridge";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_send_goes_out_through_a_channel_app_asked_and_within_its_permissions() {
    let setup = setup_with(
        None,
        &[
            (MUTE, &["comm:receive", "channel:read"]),
            (PLAIN, &["comm:*", "channel:read"]),
        ],
    )
    .await;
    let core = &setup.core;
    let listed = listed_running(core, &[APP, "bridge/feed", MUTE, "mute-bridge/feed", PLAIN]).await;
    let bridge = entry(&listed, APP);
    assert_eq!(bridge["kind"], "comm");
    assert_eq!(bridge["can_send"], true);
    assert_eq!(bridge["can_receive"], true);
    let feed = entry(&listed, "bridge/feed");
    assert_eq!(feed["kind"], "channel");
    assert_eq!(feed["app_id"], APP);
    assert_eq!(entry(&listed, MUTE)["can_send"], false);
    assert_eq!(entry(&listed, "mute-bridge/feed")["can_send"], false);
    assert_eq!(entry(&listed, "mute-bridge/feed")["can_receive"], true);

    // To a channel: asked first, showing where and to whom; everything arrives.
    let approver = yes();
    let posted = parsed(
        &agent_call(
            core,
            &approver,
            json!({"resource": "message", "action": "send", "channel": "bridge/feed",
                   "to": "ana", "thread_id": "t-1", "reply_to": "e-5", "text": "deploy done",
                   "actions": [{"id": "ok", "label": "Thanks"}]}),
        )
        .await,
    );
    assert_eq!(posted["id"], "posted");
    let asked = approver.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].summary.contains("via bridge/feed to ana"),
        "{}",
        asked[0].summary
    );
    let posts = records(&setup.app_data.join("channel-sent.jsonl"));
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0]["text"], "deploy done");
    assert_eq!(posts[0]["to"], "ana");
    assert_eq!(posts[0]["thread_id"], "t-1");
    assert_eq!(posts[0]["reply_to_id"], "e-5");
    assert_eq!(posts[0]["actions"][0]["label"], "Thanks");

    // To a comm bridge: the thread is its conversation; Osprey speaks as its agent id.
    parsed(
        &agent_call(
            core,
            &yes(),
            json!({"resource": "message", "action": "send", "channel": APP, "to": "bo",
                   "thread_id": "room-7", "reply_to": "m-3", "text": "see you at 5"}),
        )
        .await,
    );
    let out = sent(&setup.app_data);
    let message = out.last().unwrap();
    assert_eq!(message["conversation_id"], "room-7");
    assert_eq!(message["thread_id"], "room-7");
    assert_eq!(message["recipient"], "bo");
    assert_eq!(message["reply_to_id"], "m-3");
    let agent_id = core.settings().get("comm.agent_id").unwrap().unwrap();
    assert!(
        agent_id.as_str().unwrap().starts_with("osprey-"),
        "{agent_id}"
    );
    assert_eq!(message["author"]["id"], agent_id);
    assert_eq!(message["author"]["is_bot"], true);

    // Nobody to ask: refused, nothing sent.
    let refused = core
        .call_tool(
            Origin::User,
            "agent",
            json!({"resource": "message", "action": "send", "channel": APP, "to": "bo", "text": "unasked"}),
        )
        .await;
    assert!(refused.is_error, "{refused:?}");
    assert!(!sent(&setup.app_data).iter().any(|m| m["text"] == "unasked"));

    // An app without the send or write permission refuses, saying which permission; an unknown
    // name says what is connected; a stopped app says it is stopped.
    let refusal = async |channel: &str| {
        let result = agent_call(
            core,
            &yes(),
            json!({"resource": "message", "action": "send", "channel": channel, "to": "x", "text": "hi"}),
        )
        .await;
        assert!(result.is_error, "{channel}: {result:?}");
        result.text_content()
    };
    let no_send = refusal(MUTE).await;
    assert!(no_send.contains("`comm:send`"), "{no_send}");
    let no_write = refusal("mute-bridge/feed").await;
    assert!(no_write.contains("`channel:write`"), "{no_write}");
    let mute_data = setup.root.join("data/apps").join(MUTE).join("data");
    assert!(sent(&mute_data).is_empty());
    assert!(records(&mute_data.join("channel-sent.jsonl")).is_empty());
    let why = refusal("nowhere").await;
    assert!(why.contains("no connected channel `nowhere`"), "{why}");
    assert!(why.contains("bridge (comm, can send)"), "{why}");
    assert!(why.contains("bridge/feed (channel, can send)"), "{why}");
    core.test_apps().supervisor().stop(PLAIN).await.unwrap();
    let stopped = refusal(PLAIN).await;
    assert!(stopped.contains("installed but stopped"), "{stopped}");
    let listed = parsed(
        &core
            .call_tool(
                Origin::User,
                "agent",
                json!({"resource": "message", "action": "list"}),
            )
            .await,
    );
    assert_eq!(entry(&listed, PLAIN)["status"], "stopped");

    // A post into a session still works as before (no channel: free).
    core.test_db()
        .sessions()
        .open_or_create(&osprey_db::NewSession {
            id: "notes",
            title: None,
            origin: "user",
            provider: None,
            model: None,
        })
        .unwrap();
    let posted = core
        .call_tool(
            Origin::User,
            "agent",
            json!({"resource": "message", "action": "send", "session_id": "notes", "text": "a note"}),
        )
        .await;
    assert!(!posted.is_error, "{posted:?}");

    // A channel event's structured sender and actions reach its session.
    inject(
        &setup.app_data,
        "01",
        json!({"channel": "feed", "kind": "message", "text": "lunch?", "thread_id": "t-2",
               "author": {"id": "u-7", "display_name": "Ana Lima", "is_bot": false},
               "actions": [{"id": "y", "label": "Yes"}]}),
    );
    let stored = until("the channel event", async || {
        let messages = core
            .test_db()
            .sessions()
            .messages("channel:bridge:feed")
            .ok()?;
        messages.last().map(|m| {
            m.content[0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
    })
    .await;
    assert!(stored.contains("[from Ana Lima (u-7)]"), "{stored}");
    assert!(stored.contains("[Actions offered: Yes (y)]"), "{stored}");
    setup.core.stop_apps().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_comm_resource_registers_subscribes_and_talks_to_other_agents_on_topics() {
    let model = model();
    let setup = setup_with(Some(&model), &[(PLAIN, &["comm:*", "channel:read"])]).await;
    let core = &setup.core;
    let lifecycle = setup.app_data.join("lifecycle.jsonl");
    let status =
        |input: Value| async move { parsed(&core.call_tool(Origin::User, "agent", input).await) };

    // At attach the bridge connected and registered the agent id; the plain bridge has no topics.
    let agent_id = until("the registration", async || {
        let now = status(json!({"resource": "comm", "action": "status"})).await;
        let apps = now["apps"].as_array()?.clone();
        let bridge = apps.iter().find(|a| a["app_id"] == APP)?;
        let plain = apps.iter().find(|a| a["app_id"] == PLAIN)?;
        (bridge["agent_id"].is_string() && plain["topics_supported"] == false)
            .then(|| bridge["agent_id"].as_str().unwrap().to_string())
    })
    .await;
    assert_eq!(
        Some(json!(agent_id)),
        core.settings().get("comm.agent_id").unwrap()
    );
    let calls = records(&lifecycle);
    assert_eq!(calls[0]["call"], "connect");
    assert_eq!(calls[1]["call"], "register");
    assert_eq!(calls[1]["agent_id"], agent_id.as_str());
    let now = status(json!({"resource": "comm", "action": "status", "app": PLAIN})).await;
    assert_eq!(
        now["apps"][0]["note"],
        "this bridge does not support topics"
    );

    // Subscribing is asked; unasked it is refused and nothing reaches the app.
    let subscribe = json!({"resource": "comm", "action": "subscribe", "app": APP, "topic": "news"});
    assert!(
        core.call_tool(Origin::User, "agent", subscribe.clone())
            .await
            .is_error
    );
    let approver = yes();
    parsed(&agent_call(core, &approver, subscribe).await);
    assert_eq!(approver.count(), 1);
    assert!(
        records(&lifecycle)
            .iter()
            .any(|c| c["call"] == "subscribe" && c["topic"] == "news")
    );
    let topics = status(json!({"resource": "comm", "action": "topics", "app": APP})).await;
    let topics = topics["topics"].as_array().unwrap();
    let news = topics.iter().find(|t| t["name"] == "news").unwrap();
    assert_eq!(news["subscribed"], true);
    let jobs = topics.iter().find(|t| t["name"] == "jobs").unwrap();
    assert_eq!(jobs["subscribed"], false);
    let now = status(json!({"resource": "comm", "action": "status", "app": APP})).await;
    assert_eq!(now["apps"][0]["subscriptions"], json!(["news"]));
    assert_eq!(now["apps"][0]["connected"], true);

    // Sending to another agent: asked, with topic, type and payload, as this agent.
    let approver = yes();
    let sent_now = parsed(
        &agent_call(
            core,
            &approver,
            json!({"resource": "comm", "action": "send", "app": APP, "to": "agent-b",
                   "topic": "news", "message_type": "request", "text": "any news?",
                   "payload": {"since": 5}}),
        )
        .await,
    );
    assert_eq!(sent_now["to"], "agent-b");
    assert!(
        approver.asked()[0]
            .summary
            .contains("to agent agent-b on topic news"),
        "{:?}",
        approver.asked()
    );
    let out = sent(&setup.app_data);
    let message = out.iter().find(|m| m["recipient"] == "agent-b").unwrap();
    assert_eq!(message["topic"], "news");
    assert_eq!(message["message_type"], "request");
    assert_eq!(message["payload_json"], r#"{"since":5}"#);
    assert_eq!(message["author"]["id"], agent_id.as_str());
    assert_eq!(message["author"]["kind"], "agent");

    // A message on the topic from the other agent runs a comm turn that sees who wrote, and the
    // answer goes back to that agent on the topic as a response.
    inject(
        &setup.app_data,
        "01",
        json!({"id": "n-1", "conversation_id": "news", "sender": "b", "topic": "news",
               "message_type": "event", "text": "rain at noon", "payload": {"mm": 3},
               "author": {"id": "agent-b", "display_name": "Agent B", "is_bot": true, "kind": "agent"}}),
    );
    let answer = setup.reply_to("n-1").await;
    assert_eq!(answer["recipient"], "agent-b");
    assert_eq!(answer["topic"], "news");
    assert_eq!(answer["message_type"], "response");
    assert_eq!(answer["text"], r#"echo: payload: {"mm":3}"#);
    let asked_model = text_of(
        model.bodies.lock().unwrap()[0]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
    );
    assert!(
        asked_model.contains(
            "from Agent B <agent-b> (agent, bot) on the topic `news` (event) via the comm app `bridge`"
        ),
        "{asked_model}"
    );
    let session = core
        .test_db()
        .sessions()
        .get("comm:bridge:news")
        .unwrap()
        .unwrap();
    assert_eq!(session.origin, "comm");
    assert_eq!(session.title.as_deref(), Some("Agent B via bridge"));

    // A relaunched bridge is registered and subscribed again without being asked.
    parsed(
        &agent_call(
            core,
            &yes(),
            json!({"resource": "comm", "action": "subscribe", "app": APP, "topic": "jobs"}),
        )
        .await,
    );
    let before = records(&lifecycle).len();
    core.test_apps().supervisor().stop(APP).await.unwrap();
    core.test_apps().supervisor().launch(APP).await.unwrap();
    let again = until("the bridge to join again", async || {
        let after = calls_since(&lifecycle, before);
        (after.len() >= 6).then_some(after)
    })
    .await;
    assert_eq!(
        again,
        [
            format!("deregister {agent_id}"),
            "disconnect ".to_string(),
            "connect ".to_string(),
            format!("register {agent_id}"),
            "subscribe jobs".to_string(),
            "subscribe news".to_string(),
        ]
    );
    parsed(
        &core
            .call_tool(
                Origin::User,
                "agent",
                json!({"resource": "comm", "action": "unsubscribe", "app": APP, "topic": "jobs"}),
            )
            .await,
    );

    // Unsubscribing is free and reaches the app.
    parsed(
        &core
            .call_tool(
                Origin::User,
                "agent",
                json!({"resource": "comm", "action": "unsubscribe", "app": APP, "topic": "news"}),
            )
            .await,
    );
    assert!(
        records(&lifecycle)
            .iter()
            .any(|c| c["call"] == "unsubscribe" && c["topic"] == "news")
    );
    let now = status(json!({"resource": "comm", "action": "status", "app": APP})).await;
    assert_eq!(now["apps"][0]["subscriptions"], json!([]));

    // A bridge without topics says so plainly, for every topic action.
    for action in ["subscribe", "topics", "send"] {
        let result = agent_call(
            core,
            &yes(),
            json!({"resource": "comm", "action": action, "app": PLAIN, "topic": "news",
                   "to": "agent-b", "text": "hi"}),
        )
        .await;
        assert!(result.is_error, "{action}: {result:?}");
        assert!(
            result
                .text_content()
                .contains("this bridge does not support topics"),
            "{action}: {result:?}"
        );
    }

    // Stopping the apps deregisters and disconnects first.
    setup.core.stop_apps().await;
    let calls: Vec<String> = records(&lifecycle)
        .iter()
        .map(|c| c["call"].as_str().unwrap_or_default().to_string())
        .collect();
    let tail = &calls[calls.len() - 2..];
    assert_eq!(tail, ["deregister", "disconnect"], "{calls:?}");
}

/// The calls the bridge logged from index `from` on, as `call topic-or-agent`.
fn calls_since(lifecycle: &Path, from: usize) -> Vec<String> {
    records(lifecycle)[from..]
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["call"].as_str().unwrap_or_default(),
                c["topic"]
                    .as_str()
                    .or(c["agent_id"].as_str())
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// A new Osprey on `data` with its apps started, and the first `calls` lifecycle calls the bridge
/// logged for it.
async fn next_osprey(data: &Path, lifecycle: &Path, calls: usize) -> (Core, Vec<String>) {
    let core = Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        ..CoreOptions::default()
    })
    .unwrap();
    let before = records(lifecycle).len();
    core.start_apps().unwrap();
    let joined = until("the bridge to join the next Osprey", async || {
        let after = calls_since(lifecycle, before);
        (after.len() >= calls).then_some(after)
    })
    .await;
    (core, joined)
}

/// A subscription outlives Osprey itself: the next Osprey on the folder subscribes again when the
/// bridge attaches; an unsubscription and an uninstall are kept too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_subscriptions_are_subscribed_again_after_osprey_restarts() {
    let setup = setup(None).await;
    let lifecycle = setup.app_data.join("lifecycle.jsonl");
    let data = setup.root.join("data");
    until("the bridge to register", async || {
        records(&lifecycle)
            .iter()
            .any(|c| c["call"] == "register")
            .then_some(())
    })
    .await;
    for topic in ["news", "jobs"] {
        parsed(
            &agent_call(
                &setup.core,
                &yes(),
                json!({"resource": "comm", "action": "subscribe", "app": APP, "topic": topic}),
            )
            .await,
        );
    }
    setup.core.stop_apps().await;
    drop(setup.core);

    let (core, joined) = next_osprey(&data, &lifecycle, 4).await;
    assert_eq!(joined[0], "connect ");
    assert!(joined[1].starts_with("register "), "{joined:?}");
    assert_eq!(joined[2..4], ["subscribe jobs", "subscribe news"]);
    let status = parsed(
        &core
            .call_tool(
                Origin::User,
                "agent",
                json!({"resource": "comm", "action": "status", "app": APP}),
            )
            .await,
    );
    assert_eq!(status["apps"][0]["subscriptions"], json!(["jobs", "news"]));

    // Unsubscribing is kept too: the next Osprey subscribes to news only.
    parsed(
        &core
            .call_tool(
                Origin::User,
                "agent",
                json!({"resource": "comm", "action": "unsubscribe", "app": APP, "topic": "jobs"}),
            )
            .await,
    );
    core.stop_apps().await;
    drop(core);
    let (core, joined) = next_osprey(&data, &lifecycle, 3).await;
    assert_eq!(joined[2], "subscribe news", "{joined:?}");
    assert!(
        !joined.contains(&"subscribe jobs".to_string()),
        "{joined:?}"
    );

    // An uninstalled bridge's subscriptions are forgotten with it.
    core.uninstall_app(APP).await.unwrap();
    assert!(
        core.test_db()
            .comm_subscriptions()
            .all()
            .unwrap()
            .is_empty()
    );
    core.stop_apps().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_delivers_its_output_to_a_channel_when_it_fires() {
    let model = model();
    let setup = setup(Some(&model)).await;
    let core = &setup.core;
    listed_running(core, &["bridge/feed"]).await;
    core.start_scheduler().unwrap();
    let create = json!({"resource": "reminder", "action": "create", "schedule": "every day at 9am",
                        "prompt": "summarise the day", "session_id": "daily",
                        "deliver": {"channel": "bridge/feed", "to": "ana", "thread_id": "t-daily"}});
    // Nobody to ask: refused (it would speak for the person later, unasked).
    assert!(
        core.call_tool(Origin::User, "agent", create.clone())
            .await
            .is_error
    );
    let approver = yes();
    let created = parsed(&agent_call(core, &approver, create).await);
    let question = &approver.asked()[0];
    assert!(question.once_only, "{question:?}");
    assert!(
        question
            .summary
            .contains("send its output via bridge/feed to ana"),
        "{}",
        question.summary
    );
    assert_eq!(created["created"]["deliver"]["channel"], "bridge/feed");
    let id = created["created"]["id"].as_str().unwrap().to_string();

    core.reminders().unwrap().run_now(id.clone()).await.unwrap();
    let post = until("the delivery", async || {
        records(&setup.app_data.join("channel-sent.jsonl")).pop()
    })
    .await;
    let text = post["text"].as_str().unwrap();
    assert!(
        text.starts_with("echo: ") && text.contains("summarise the day"),
        "{text}"
    );
    assert_eq!(post["to"], "ana");
    assert_eq!(post["thread_id"], "t-daily");
    // Still kept in its session.
    let kept = core.test_db().sessions().messages("daily").unwrap();
    assert!(
        kept.iter()
            .any(|m| m.role == "assistant" && m.content[0]["text"] == text),
        "{kept:?}"
    );

    // Removing the delivery is a plain update (nothing is sent out any more): not asked.
    let removed = core
        .call_tool(
            Origin::User,
            "agent",
            json!({"resource": "reminder", "action": "update", "id": id, "deliver": null}),
        )
        .await;
    assert!(!removed.is_error, "{removed:?}");
    let reminder = core.reminders().unwrap().get(id).await.unwrap();
    assert_eq!(reminder.deliver, None);
    core.stop_scheduler().await;
    setup.core.stop_apps().await;
}
