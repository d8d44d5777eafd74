//! The desktop's chat through the core: a real Anthropic-format SSE server on loopback (refusing
//! what the real API refuses, such as a tool schema with a top-level allOf), the real
//! provider client and runner, a real shell tool call behind the approval broker. What the UI
//! sees is the event bus, so that is what these tests read.

use std::path::Path;
use std::time::Duration;

use osprey_core::agent::{ChatOptions, ProviderKind};
use osprey_core::chat::Chats;
use osprey_core::{Core, CoreOptions, events};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use osprey_types::{ApprovalAnswer, ApprovalResolution, CoreEvent, TranscriptItem};
use serde_json::json;

/// Chats on the core in `data`, whose shell commands may write in `data/../work` (they run in
/// the sandbox, which keeps them out of the data folder).
fn chats(data: &Path, server: &AnthropicServer) -> (Core, Chats) {
    let work = data.parent().unwrap().join("work");
    std::fs::create_dir_all(&work).unwrap();
    osprey_db::Database::open_in(data)
        .unwrap()
        .settings()
        .set("shell.sandbox", &json!({"workspaces": [work]}))
        .unwrap();
    let core = Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        policy: None,
        ..CoreOptions::default()
    })
    .unwrap();
    let chats = Chats::new(core.clone());
    chats.set_options(Some(ChatOptions {
        gateway_app: None,
        provider: ProviderKind::Anthropic,
        base_url: Some(server.url()),
        model: Some("claude-test".into()),
        api_key: Some("test-key".into()),
        max_steps: None,
    }));
    (core, chats)
}

/// A core whose stored provider settings (no fixed options) lead to `server`: Anthropic,
/// model `claude-test`, key `key-one` in the file secret store.
fn core_with_stored_anthropic(dir: &Path, server: &AnthropicServer) -> Core {
    let core = Core::open(CoreOptions {
        data_dir: Some(dir.join("data")),
        secrets: Some(osprey_core::secrets::Backend::FileOnly),
        ..CoreOptions::default()
    })
    .unwrap();
    for (key, value) in [
        ("provider.default", "anthropic"),
        ("provider.anthropic.base_url", server.url().as_str()),
        ("provider.anthropic.model", "claude-test"),
        ("provider.anthropic.api_key", "key-one"),
    ] {
        core.set_provider_setting(key, value).unwrap();
    }
    core
}

/// Events until (and including) the first one `last` accepts, within 20 s.
async fn events_until(
    events: &mut events::Receiver,
    last: impl Fn(&CoreEvent) -> bool,
) -> Vec<CoreEvent> {
    tokio::time::timeout(Duration::from_secs(20), async {
        let mut seen = Vec::new();
        loop {
            let event = events.recv().await.expect("event bus closed");
            let done = last(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
    })
    .await
    .expect("the awaited event did not come within 20 s")
}

fn turn_ended(event: &CoreEvent) -> bool {
    matches!(
        event,
        CoreEvent::ChatTurnFinished { .. } | CoreEvent::ChatTurnFailed { .. }
    )
}

#[tokio::test]
async fn a_message_streams_its_answer_as_events_and_is_stored() {
    let server = AnthropicServer::start(vec![ScriptedReply {
        thinking: "The person greets me.".into(),
        text: "Hello from the scripted model.".into(),
        ..ScriptedReply::default()
    }])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (_core, chats) = chats(dir.path(), &server);
    let mut events = _core.subscribe();

    let session = chats.send(None, "  hi there  ").await.unwrap();
    let seen = events_until(&mut events, turn_ended).await;
    assert!(
        matches!(&seen[0], CoreEvent::ChatTurnStarted { session_id } if *session_id == session)
    );
    let text: String = seen
        .iter()
        .filter_map(|e| match e {
            CoreEvent::ChatTextDelta { session_id, text } if *session_id == session => {
                Some(text.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello from the scripted model.");
    let deltas = seen
        .iter()
        .filter(|e| matches!(e, CoreEvent::ChatTextDelta { .. }))
        .count();
    assert!(deltas > 1, "the answer arrived in one piece, not streamed");
    assert!(
        seen.iter()
            .any(|e| matches!(e, CoreEvent::ChatThinkingDelta { .. }))
    );
    match seen.last().unwrap() {
        CoreEvent::ChatTurnFinished { stop, text, .. } => {
            assert_eq!(stop, "end_turn");
            assert_eq!(text, "Hello from the scripted model.");
        }
        other => panic!("{other:?}"),
    }
    // The model got the trimmed message.
    assert_eq!(
        server.seen()[0]["messages"][0]["content"][0]["text"],
        "hi there"
    );

    let history = chats.history(&session).unwrap();
    assert_eq!(
        history[0],
        TranscriptItem::User {
            text: "hi there".into()
        }
    );
    assert!(history.contains(&TranscriptItem::Assistant {
        text: "Hello from the scripted model.".into()
    }));
    let sessions = chats.sessions(10).unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].id, session);
    assert_eq!(sessions[0].title.as_deref(), Some("hi there"));
    assert_eq!(sessions[0].status, "idle");
    assert!(!chats.is_running(&session));
}

#[tokio::test]
async fn a_tool_call_waits_for_approval_then_runs_and_the_answer_follows() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("work/made-by-the-model");
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_1",
            "shell",
            json!({"resource": "bash", "action": "exec", "command": format!("touch {}", target.display())}),
        ),
        ScriptedReply::text("I created the file."),
    ])
    .unwrap();
    let (core, chats) = chats(&dir.path().join("data"), &server);
    let mut events = core.subscribe();

    let session = chats.send(None, "make a file").await.unwrap();
    let seen = events_until(&mut events, |e| {
        matches!(e, CoreEvent::ApprovalRequested { .. })
    })
    .await;
    let request = match seen.last().unwrap() {
        CoreEvent::ApprovalRequested { request, .. } => request.clone(),
        _ => unreachable!(),
    };
    assert_eq!(request.session_id.as_deref(), Some(session.as_str()));
    assert!(request.summary.contains("touch"));
    assert!(!target.exists());

    // While the turn waits, a second message to the same session is refused.
    let busy = chats
        .send(Some(session.clone()), "again")
        .await
        .unwrap_err();
    assert_eq!(busy.code, osprey_types::UiErrorCode::TurnRunning);

    core.approvals()
        .answer(&request.id, ApprovalAnswer::Once)
        .unwrap();
    let mut seen = seen;
    seen.extend(events_until(&mut events, turn_ended).await);
    assert!(target.exists());
    // The runner's events and the broker's travel separately, so only their presence is checked
    // across the whole turn, not their interleaving.
    assert!(seen.iter().any(
        |e| matches!(e, CoreEvent::ChatToolCallStarted { call_id, name, .. } if call_id == "toolu_1" && name == "shell")
    ));

    assert!(seen.iter().any(|e| matches!(
        e,
        CoreEvent::ChatToolCallFinished { call_id, result, .. } if call_id == "toolu_1" && !result.is_error
    )));
    match seen.last().unwrap() {
        CoreEvent::ChatTurnFinished { text, .. } => assert_eq!(text, "I created the file."),
        other => panic!("{other:?}"),
    }
    let history = chats.history(&session).unwrap();
    assert!(history.iter().any(|item| matches!(
        item,
        TranscriptItem::ToolCall { call_id, result: Some(result), .. } if call_id == "toolu_1" && !result.is_error
    )));
}

#[tokio::test]
async fn stopping_a_turn_withdraws_its_pending_approval() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("work/never");
    let server = AnthropicServer::start(vec![ScriptedReply::call(
        "toolu_9",
        "shell",
        json!({"resource": "bash", "action": "exec", "command": format!("touch {}", target.display())}),
    )])
    .unwrap();
    let (core, chats) = chats(&dir.path().join("data"), &server);
    let mut events = core.subscribe();

    let session = chats.send(None, "make a file").await.unwrap();
    let seen = events_until(&mut events, |e| {
        matches!(e, CoreEvent::ApprovalRequested { .. })
    })
    .await;
    let request_id = match seen.last().unwrap() {
        CoreEvent::ApprovalRequested { request, .. } => request.id.clone(),
        _ => unreachable!(),
    };
    assert!(chats.cancel(&session));
    let seen = events_until(&mut events, turn_ended).await;
    assert!(seen.iter().any(|e| matches!(
        e,
        CoreEvent::ApprovalResolved { request_id: id, resolution: ApprovalResolution::Withdrawn } if *id == request_id
    )));
    match seen.last().unwrap() {
        CoreEvent::ChatTurnFinished { stop, .. } => assert_eq!(stop, "cancelled"),
        CoreEvent::ChatTurnFailed { code, .. } => {
            assert_eq!(*code, osprey_types::TurnFailureCode::Cancelled)
        }
        other => panic!("{other:?}"),
    }
    assert!(core.approvals().pending().is_empty());
    assert!(!target.exists());
    assert!(!chats.cancel(&session), "nothing left to stop");
}

#[tokio::test]
async fn an_empty_message_or_a_bad_session_id_is_refused_before_anything_runs() {
    let server = AnthropicServer::start(vec![]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (_core, chats) = chats(dir.path(), &server);
    let error = chats.send(None, "   ").await.unwrap_err();
    assert_eq!(error.code, osprey_types::UiErrorCode::EmptyMessage);
    let error = chats
        .send(Some("../other".into()), "hello")
        .await
        .unwrap_err();
    assert_eq!(error.code, osprey_types::UiErrorCode::InvalidSessionId);
    assert!(error.message.contains("../other"));
    assert!(server.seen().is_empty());
    assert!(chats.sessions(10).unwrap().is_empty());
}

/// The desktop keeps a session's runner between its messages: the provider is resolved (the key
/// read from the secret store) for the first message only, until the provider settings change.
#[tokio::test]
async fn a_second_message_reuses_the_sessions_runner_until_the_settings_change() {
    let server = AnthropicServer::start(vec![
        ScriptedReply::text("one"),
        ScriptedReply::text("two"),
        ScriptedReply::text("three"),
        ScriptedReply::text("four"),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let core = core_with_stored_anthropic(dir.path(), &server);
    let chats = Chats::new(core.clone());
    let mut events = core.subscribe();
    let session = chats.send(None, "first").await.unwrap();
    events_until(&mut events, turn_ended).await;

    // The key changes behind Osprey's back: the kept runner does not look it up again.
    core.secrets()
        .set("anthropic.api_key", "changed-elsewhere")
        .unwrap();
    chats.send(Some(session.clone()), "second").await.unwrap();
    events_until(&mut events, turn_ended).await;

    // Changed through Osprey (the settings page, `osprey config set`): the next message uses it.
    core.set_provider_setting("provider.anthropic.api_key", "key-three")
        .unwrap();
    chats.send(Some(session.clone()), "third").await.unwrap();
    events_until(&mut events, turn_ended).await;

    // Another session resolves its own runner.
    chats.send(None, "elsewhere").await.unwrap();
    events_until(&mut events, turn_ended).await;
    assert_eq!(
        server.keys(),
        ["key-one", "key-one", "key-three", "key-three"]
    );
}

/// The persona the person edits is the identity of the very next turn, even in a session whose
/// runner is kept; a persona the core cannot use is refused and the stored one stays.
#[tokio::test]
async fn the_persona_is_the_next_turns_identity() {
    let server =
        AnthropicServer::start(vec![ScriptedReply::text("one"), ScriptedReply::text("two")])
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let core = core_with_stored_anthropic(dir.path(), &server);
    let chats = Chats::new(core.clone());
    let mut events = core.subscribe();
    let system = |n: usize| server.seen()[n]["system"].to_string();

    let session = chats.send(None, "first").await.unwrap();
    events_until(&mut events, turn_ended).await;
    assert!(
        system(0).contains("You are Osprey, an AI agent"),
        "{}",
        system(0)
    );

    core.set_setting(
        "persona",
        json!({
            "name": "Kestrel",
            "emoji": "🦅",
            "vibe": "dry and brief",
            "personality": "Answer like a ship's navigator.",
            "quiet_hours": {"start": "22:00", "end": "07:00"}
        }),
    )
    .await
    .unwrap();
    let refused = core
        .set_setting("persona", json!({"name": "x".repeat(41)}))
        .await
        .unwrap_err();
    assert!(refused.message.contains("at most 40"), "{refused:?}");
    assert_eq!(core.persona().name, "Kestrel");
    assert_eq!(core.settings_overview().persona.name, "Kestrel");

    chats.send(Some(session), "second").await.unwrap();
    events_until(&mut events, turn_ended).await;
    let second = system(1);
    for expected in [
        "You are Kestrel 🦅, an AI agent",
        "Your manner: dry and brief.",
        "Answer like a ship's navigator.",
        "quiet hours are 22:00 to 07:00 local time",
    ] {
        assert!(
            second.contains(expected),
            "{expected:?} missing from {second}"
        );
    }
}

/// The session list's actions on stored chats: usage summed from the stored messages after a
/// turn, search by title and by message text with a snippet, rename (kept when the next turn
/// ends), delete (and the errors each gives for a session that is not there).
#[tokio::test]
async fn sessions_are_searched_renamed_and_deleted_and_report_their_usage() {
    use osprey_types::UiErrorCode;
    let server = AnthropicServer::start(vec![
        ScriptedReply {
            text: "Lisbon has trams and pastéis de nata.".into(),
            ..ScriptedReply::default()
        },
        ScriptedReply {
            text: "Use cargo test.".into(),
            ..ScriptedReply::default()
        },
        ScriptedReply {
            text: "Again: cargo test.".into(),
            ..ScriptedReply::default()
        },
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (core, chats) = chats(dir.path(), &server);
    let mut events = core.subscribe();

    // A session with nothing stored used nothing.
    let none = chats.usage("chat-none").unwrap();
    assert_eq!((none.input_tokens, none.output_tokens), (0, 0));
    assert_eq!(none.context_tokens, None);

    let trip = chats
        .send(Some("chat-trip".into()), "plan a trip")
        .await
        .unwrap();
    events_until(&mut events, turn_ended).await;
    let code = chats
        .send(Some("chat-code".into()), "how do I run the tests?")
        .await
        .unwrap();
    events_until(&mut events, turn_ended).await;

    let usage = chats.usage(&trip).unwrap();
    assert!(
        usage.input_tokens > 0 && usage.output_tokens > 0,
        "{usage:?}"
    );
    assert_eq!(usage.context_tokens, Some(usage.input_tokens));

    // By message text, with a snippet around the match; newest first.
    let hits = chats.search("TRAMS", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session.id, trip);
    assert_eq!(
        hits[0].snippet.as_deref(),
        Some("Lisbon has trams and pastéis de nata.")
    );
    let hits = chats.search("t", 10).unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| h.session.id.as_str())
            .collect::<Vec<_>>(),
        [code.as_str(), trip.as_str()]
    );
    assert_eq!(chats.search("", 10).unwrap().len(), 2);
    assert!(chats.search("nowhere", 10).unwrap().is_empty());

    // Renamed: found by the new title (no snippet), and the title stays after the next turn.
    let renamed = chats.rename(&code, "  Testing\n the   app ").unwrap();
    assert_eq!(renamed.title.as_deref(), Some("Testing the app"));
    let hits = chats.search("testing the", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].snippet, None);
    chats.send(Some(code.clone()), "again?").await.unwrap();
    events_until(&mut events, turn_ended).await;
    let listed = chats.sessions(10).unwrap();
    assert_eq!(listed[0].id, code);
    assert_eq!(listed[0].title.as_deref(), Some("Testing the app"));
    let more = chats.usage(&code).unwrap();
    assert!(more.input_tokens > usage.input_tokens, "{more:?}");

    assert_eq!(
        chats.rename(&code, " \n ").unwrap_err().code,
        UiErrorCode::InvalidTitle
    );
    assert_eq!(
        chats.rename(&code, &"x".repeat(201)).unwrap_err().code,
        UiErrorCode::InvalidTitle
    );
    assert_eq!(
        chats.rename("chat-none", "x").unwrap_err().code,
        UiErrorCode::UnknownSession
    );

    // Deleted: gone from the list, the search and the history.
    chats.delete(&trip).unwrap();
    assert_eq!(chats.sessions(10).unwrap().len(), 1);
    assert!(chats.search("trams", 10).unwrap().is_empty());
    assert!(chats.history(&trip).unwrap().is_empty());
    assert_eq!(
        chats.delete(&trip).unwrap_err().code,
        UiErrorCode::UnknownSession
    );
}

/// The chat's model picker: a turn names its provider and model, the next one without a pick
/// goes back to the stored settings, and a provider Osprey does not know is refused.
#[tokio::test]
async fn a_turn_uses_the_provider_and_model_the_person_picked() {
    use osprey_core::chat::ModelPick;
    let server = AnthropicServer::start(vec![
        ScriptedReply::text("picked"),
        ScriptedReply::text("default"),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let core = core_with_stored_anthropic(dir.path(), &server);
    let chats = Chats::new(core.clone());
    let mut events = core.subscribe();
    let pick = ModelPick {
        provider: Some("anthropic".into()),
        model: Some(" claude-picked ".into()),
    };
    let session = chats.send_with(None, "first", &pick).await.unwrap();
    events_until(&mut events, turn_ended).await;
    chats.send(Some(session.clone()), "second").await.unwrap();
    events_until(&mut events, turn_ended).await;
    let models: Vec<String> = server
        .seen()
        .iter()
        .map(|request| request["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(models, ["claude-picked", "claude-test"]);

    let bad = ModelPick {
        provider: Some("skynet".into()),
        model: None,
    };
    let error = chats.send_with(None, "x", &bad).await.unwrap_err();
    assert_eq!(error.code, osprey_types::UiErrorCode::ProviderUnavailable);
    assert!(error.message.contains("skynet"), "{}", error.message);
}

/// The tray's "Ask about the current window": the snapshot's image goes to the model in the
/// person's message (before their text) and stays in the history; something that is not an
/// image is refused before anything is sent.
#[tokio::test]
async fn an_attached_image_reaches_the_model_with_the_question_and_stays_in_the_history() {
    use base64::Engine;
    use osprey_core::chat::ModelPick;
    let server = AnthropicServer::start(vec![ScriptedReply::text("a settings window")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let core = core_with_stored_anthropic(dir.path(), &server);
    let chats = Chats::new(core.clone());
    let mut events = core.subscribe();
    let mut png = Vec::new();
    image::RgbImage::from_pixel(4, 3, image::Rgb([200, 30, 30]))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    let url = format!("data:image/png;base64,{data}");

    let refused = chats
        .send_with_image(
            None,
            "what is this?",
            &ModelPick::default(),
            Some("data:text/html;base64,PGgxPg=="),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, osprey_types::UiErrorCode::InvalidImage);
    assert!(server.seen().is_empty(), "a refused image was sent");

    let session = chats
        .send_with_image(None, "what is this?", &ModelPick::default(), Some(&url))
        .await
        .unwrap();
    events_until(&mut events, turn_ended).await;
    let request = server.seen().pop().unwrap();
    let content = &request["messages"][0]["content"];
    assert_eq!(content[0]["type"], "image", "{content}");
    assert_eq!(content[0]["source"]["media_type"], "image/png");
    assert_eq!(content[0]["source"]["data"], data.as_str());
    assert_eq!(content[1]["text"], "what is this?");

    let history = chats.history(&session).unwrap();
    assert_eq!(history[0], TranscriptItem::UserImage { image: url });
    assert_eq!(
        history[1],
        TranscriptItem::User {
            text: "what is this?".into()
        }
    );
}

/// A photo the person attaches that the API would refuse (its base64 over Anthropic's 5 MiB: a
/// loopback server refuses it as the real one does) is scaled and encoded again before it goes,
/// and the session goes on with it.
#[tokio::test]
async fn an_attached_photo_too_large_for_the_api_goes_smaller() {
    use base64::Engine;
    use osprey_core::chat::ModelPick;
    let server = AnthropicServer::start(vec![
        ScriptedReply::text("a noisy picture"),
        ScriptedReply::text("still noisy"),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let core = core_with_stored_anthropic(dir.path(), &server);
    let chats = Chats::new(core.clone());
    let mut events = core.subscribe();
    // Noise PNG cannot compress: 1,500 x 1,500 is about 6.75 MB, 9 MB of base64.
    let png = osprey_tests::noise_png(1500, 1500);
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    assert!(data.len() > 5 * 1024 * 1024);
    let url = format!("data:image/png;base64,{data}");

    let session = chats
        .send_with_image(None, "what is this?", &ModelPick::default(), Some(&url))
        .await
        .unwrap();
    let seen = events_until(&mut events, turn_ended).await;
    assert!(
        matches!(seen.last(), Some(CoreEvent::ChatTurnFinished { text, .. }) if text == "a noisy picture"),
        "{seen:?}"
    );
    // It went at the size the model takes as it is, within the bytes.
    let request = server.seen().pop().unwrap();
    let source = &request["messages"][0]["content"][0]["source"];
    let sent = source["data"].as_str().unwrap();
    assert!(sent.len() <= 5 * 1024 * 1024);
    let sent = image::load_from_memory(
        &base64::engine::general_purpose::STANDARD
            .decode(sent)
            .unwrap(),
    )
    .unwrap();
    assert_eq!((sent.width(), sent.height()), (1092, 1092));

    chats.send(Some(session.clone()), "and now?").await.unwrap();
    let seen = events_until(&mut events, turn_ended).await;
    assert!(
        matches!(seen.last(), Some(CoreEvent::ChatTurnFinished { text, .. }) if text == "still noisy"),
        "{seen:?}"
    );
}
