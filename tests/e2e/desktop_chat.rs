//! Chat in the real desktop app against a loopback Anthropic-format SSE server: a typed message
//! streams its answer into the transcript; a scripted tool call that needs approval opens the
//! approval dialog, "Allow once" runs the real shell tool, and the model's final answer appears.
//! Sessions are renamed, searched and deleted from the list, each keeps its own draft, Ctrl+K and
//! Ctrl+L work from anywhere on the page; Esc stops a streaming turn and a failed turn offers
//! Retry, which sends the message again.
//! Linux only: tauri-driver drives WebKitGTK here.
#![cfg(target_os = "linux")]

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use osprey_tests::{DesktopApp, LaunchOptions, WebDriver, keys, wait_until};
use serde_json::json;

const UI_TIMEOUT: Duration = Duration::from_secs(30);

/// Points the app's chat at the loopback server through the stored provider settings (the same
/// setting `osprey config set provider.anthropic.base_url` writes).
/// The scripted model as the provider, and `work` as the shell sandbox's workspace (commands
/// Types into the chat box and presses Send.
fn send(driver: &WebDriver, text: &str) -> Result<()> {
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, text)?;
    let button = driver.wait_for("[data-testid='chat-send']", UI_TIMEOUT)?;
    driver.click(&button)
}

#[test]
fn a_typed_message_streams_and_an_approved_tool_call_runs() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-chat-")
        .tempdir()?;
    // Outside the data dir: the safeguard refuses writes into Osprey's own data.
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let target = work.path().join("approved-by-a-click");
    let server = AnthropicServer::start(vec![
        // Paced so the transcript is seen growing.
        ScriptedReply {
            thinking: "A greeting; answer briefly.".into(),
            text: "Hello! I am the scripted model, streaming this answer piece by piece.".into(),
            ..ScriptedReply::default()
        }
        .paced(Duration::from_millis(60)),
        ScriptedReply::call(
            "toolu_e2e",
            "shell",
            json!({"resource": "bash", "action": "exec", "command": format!("touch {}", target.display())}),
        ),
        ScriptedReply::text("Done: I created the file you asked for."),
    ])?;
    server.use_as_provider(data.path(), work.path())?;
    let app = DesktopApp::launch_with("desktop_chat", LaunchOptions::with_test_model(data.path()))?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;

    // 1. A typed message; the answer streams in.
    send(driver, "Hello there")?;
    driver.wait_for_text("[data-testid='chat-user']", UI_TIMEOUT, |t| {
        t == "Hello there"
    })?;
    let mut partial_seen = false;
    let full = "Hello! I am the scripted model, streaming this answer piece by piece.";
    wait_until("the streamed answer", UI_TIMEOUT, || {
        let answers = driver.texts("[data-testid='chat-assistant']")?;
        let answer = answers.last().cloned().unwrap_or_default();
        if !answer.is_empty() && answer != full {
            ensure!(
                full.starts_with(&answer),
                "the transcript shows {answer:?}, not a prefix of the answer"
            );
            partial_seen = true;
        }
        Ok(answer == full)
    })?;
    ensure!(
        partial_seen,
        "the answer appeared all at once; it should stream"
    );
    ensure!(
        driver.texts("[data-testid='chat-thinking'] summary")? == ["Thinking"],
        "thinking is shown collapsed under a 'Thinking' summary"
    );
    wait_until("the turn to end", UI_TIMEOUT, || {
        Ok(driver.find("[data-testid='chat-send']")?.is_some())
    })?;
    app.save_screenshot("streamed-answer")?;

    // 2. A tool call that needs approval: the dialog shows it, Allow once runs it.
    send(driver, "Please create the file")?;
    let dialog_summary = driver
        .wait_for_text(
            "[data-testid='approval-dialog'] [data-testid='approval-summary']",
            UI_TIMEOUT,
            |t| t.contains("touch"),
        )
        .inspect_err(|_| {
            let _ = app.save_screenshot("no-approval-dialog");
        })?;
    ensure!(
        dialog_summary.contains(&target.display().to_string()),
        "the dialog summarises {dialog_summary:?}"
    );
    let countdown = driver.wait_for_text(
        "[data-testid='approval-dialog'] [data-testid='approval-countdown']",
        UI_TIMEOUT,
        |t| t.contains(" s "),
    )?;
    ensure!(
        countdown.contains("Denied automatically in"),
        "countdown reads {countdown:?}"
    );
    ensure!(!target.exists(), "the tool ran before anyone approved it");
    app.save_screenshot("approval-dialog")?;

    let allow = driver.wait_for(
        "[data-testid='approval-dialog'] [data-testid='approval-once']",
        UI_TIMEOUT,
    )?;
    driver.click(&allow)?;
    wait_until("the final answer", UI_TIMEOUT, || {
        Ok(driver
            .texts("[data-testid='chat-assistant']")?
            .iter()
            .any(|t| t == "Done: I created the file you asked for."))
    })?;
    ensure!(target.exists(), "approved, yet the file was not created");
    driver.wait_for("[data-testid='chat-tool']", UI_TIMEOUT)?;
    let status = driver.execute(
        "return document.querySelector(\"[data-testid='chat-tool']\").dataset.status;",
        vec![],
    )?;
    ensure!(status == "done", "the tool call's status is {status}");
    ensure!(
        driver.find("[data-testid='approval-dialog']")?.is_none(),
        "the dialog stayed open after the answer"
    );
    ensure!(
        server.remaining() == 0,
        "the model was asked {} times, expected 3",
        server.seen().len()
    );
    // The model got the tool's result back.
    let last = server.seen().pop().unwrap_or_default();
    ensure!(
        last.to_string().contains("toolu_e2e"),
        "the last request did not carry the tool result: {last}"
    );
    app.save_screenshot("approved-tool-call")?;

    // 3. New chat empties the transcript; the session list brings the stored one back.
    let new_chat = driver.wait_for("[data-testid='chat-new']", UI_TIMEOUT)?;
    driver.click(&new_chat)?;
    driver.wait_for("[data-testid='chat-empty']", UI_TIMEOUT)?;
    let session = driver.wait_for("[data-testid='chat-sessions'] button", UI_TIMEOUT)?;
    driver.click(&session)?;
    wait_until("the stored session", UI_TIMEOUT, || {
        Ok(driver.texts("[data-testid='chat-user']")? == ["Hello there", "Please create the file"])
    })?;
    ensure!(
        driver
            .texts("[data-testid='chat-assistant']")?
            .last()
            .map(String::as_str)
            == Some("Done: I created the file you asked for."),
        "the reloaded transcript lacks the final answer"
    );
    let status = driver.execute(
        "return document.querySelector(\"[data-testid='chat-tool']\").dataset.status;",
        vec![],
    )?;
    ensure!(
        status == "done",
        "the reloaded tool call's status is {status}"
    );
    Ok(())
}

#[test]
fn without_a_model_provider_the_chat_says_how_to_set_one_up() -> Result<()> {
    let app = DesktopApp::launch_with(
        "desktop_chat_no_provider",
        LaunchOptions {
            data_dir: None,
            env: vec![
                // Whatever the machine running the tests has set up, this app has no provider.
                ("ANTHROPIC_API_KEY".into(), String::new()),
                ("OPENAI_API_KEY".into(), String::new()),
                ("OLLAMA_HOST".into(), "127.0.0.1:9".into()),
                ("OSPREY_SECRETS".into(), "file".into()),
            ],
        },
    )?;
    let driver = &app.driver;
    send(driver, "Hello?")?;
    let error = driver.wait_for_text("[data-testid='chat-send-error']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        error.contains("Settings > Model")
            && error.contains("ANTHROPIC_API_KEY")
            && error.contains("Ollama"),
        "the error does not say how to set up a provider: {error:?}"
    );
    // Nothing was sent: the message is back in the box to try again, and no turn runs.
    let draft = driver.execute(
        "return document.querySelector(\"[data-testid='chat-input']\").value;",
        vec![],
    )?;
    ensure!(draft == "Hello?", "the typed message was lost: {draft}");
    ensure!(
        driver.find("[data-testid='chat-running']")?.is_none(),
        "a turn looks like it is running"
    );
    app.save_screenshot("no-provider")?;
    Ok(())
}

/// The tray's "Ask about the current window": the snapshot is attached to a new chat, and
/// sending sends its image to the model in the person's message (checked at the loopback
/// Anthropic server, which refuses a malformed image as the real API does), shown above the
/// question in the transcript.
#[test]
fn asking_about_the_current_window_sends_its_snapshot_image_to_the_model() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-ask-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let server = AnthropicServer::start(vec![ScriptedReply::text(
        "That is Osprey's own chat window.",
    )])?;
    server.use_as_provider(data.path(), work.path())?;
    let app = DesktopApp::launch_with(
        "desktop_chat_ask_window",
        LaunchOptions::with_test_model(data.path()),
    )?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;

    driver.invoke("tray_action", json!({"id": "ask-about-window"}))?;
    driver.wait_for("[data-testid='chat-attachment'] img", UI_TIMEOUT)?;
    app.save_screenshot("snapshot-attached")?;
    let button = driver.wait_for("[data-testid='chat-send']", UI_TIMEOUT)?;
    driver.click(&button)?;
    driver.wait_for_text("[data-testid='chat-assistant']", UI_TIMEOUT, |t| {
        t.contains("Osprey's own chat window")
    })?;
    driver.wait_for("[data-testid='chat-user-image']", UI_TIMEOUT)?;
    app.save_screenshot("snapshot-sent")?;

    let request = server.seen().pop().context("the model was not asked")?;
    let messages = request["messages"].as_array().context("no messages")?;
    let content = &messages.last().context("no message")?["content"];
    ensure!(
        content[0]["type"] == "image"
            && content[0]["source"]["media_type"]
                .as_str()
                .is_some_and(|t| t.starts_with("image/")),
        "the question went without the image: {content}"
    );
    let text = content[1]["text"].as_str().unwrap_or_default();
    ensure!(
        text.contains("snapshot") && text.contains("What can you tell me about"),
        "the question's text: {text}"
    );
    Ok(())
}

fn value_of(driver: &WebDriver, css: &str) -> Result<String> {
    Ok(driver
        .execute(
            "const e = document.querySelector(arguments[0]); return e ? e.value : null;",
            vec![css.into()],
        )?
        .as_str()
        .unwrap_or_default()
        .to_string())
}

fn focused_testid(driver: &WebDriver) -> Result<String> {
    Ok(driver
        .execute(
            "return document.activeElement && document.activeElement.dataset.testid || '';",
            vec![],
        )?
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// Clicks `button` (a data-testid) in the session row whose text contains `title`.
fn click_in_row(driver: &WebDriver, title: &str, button: &str) -> Result<()> {
    let clicked = driver.execute(
        "const row = [...document.querySelectorAll('aside li')].find((li) => li.textContent.includes(arguments[0])); \
         const target = row && (arguments[1] ? row.querySelector(`[data-testid='${arguments[1]}']`) : row.querySelector('button.session')); \
         if (!target) return false; target.click(); return true;",
        vec![title.into(), button.into()],
    )?;
    ensure!(
        clicked == true,
        "no {button:?} in the session row {title:?}"
    );
    Ok(())
}

fn wait_for_turn_end(driver: &WebDriver) -> Result<()> {
    wait_until("the turn to end", UI_TIMEOUT, || {
        Ok(driver.find("[data-testid='chat-running']")?.is_none()
            && driver.find("[data-testid='chat-send']")?.is_some())
    })
}

#[test]
fn sessions_are_renamed_searched_and_deleted_and_each_keeps_its_draft() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-sessions-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let server = AnthropicServer::start(vec![
        ScriptedReply::text("Herons **wade**."),
        ScriptedReply::text("Ospreys dive."),
    ])?;
    server.use_as_provider(data.path(), work.path())?;
    let app = DesktopApp::launch_with(
        "desktop_chat_sessions",
        LaunchOptions::with_test_model(data.path()),
    )?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;

    send(driver, "Alpha: tell me about herons")?;
    driver.wait_for_text("[data-testid='chat-assistant']", UI_TIMEOUT, |t| {
        t == "Herons wade."
    })?;
    wait_for_turn_end(driver)?;
    // Ctrl+K from the transcript (not the input) starts a new chat and puts the cursor in it.
    driver.execute(
        "document.querySelector('#chat-search').focus(); return true;",
        vec![],
    )?;
    driver.press_keys(&[keys::CONTROL], &["k"])?;
    driver.wait_for("[data-testid='chat-empty']", UI_TIMEOUT)?;
    ensure!(
        focused_testid(driver)? == "chat-input",
        "Ctrl+K left the focus on {:?}",
        focused_testid(driver)?
    );
    send(driver, "Beta: and about ospreys")?;
    driver.wait_for_text("[data-testid='chat-assistant']", UI_TIMEOUT, |t| {
        t == "Ospreys dive."
    })?;
    wait_for_turn_end(driver)?;
    wait_until("both sessions listed", UI_TIMEOUT, || {
        Ok(driver.texts("[data-testid='chat-sessions'] .title")?.len() == 2)
    })?;

    // A fresh window loads the markdown renderer after its first paint; a session opened from
    // the list waits for it, so its replies never show unformatted first. Every reply element
    // the page adds is recorded as it is added.
    // The old document is marked: `reload` returns before it is gone, and its list (already
    // showing both) must not pass for the new one's.
    driver.execute(
        "window.__before_reload = true; location.reload(); return true;",
        vec![],
    )?;
    // Read in one script: the elements found before the reload are gone after it. A script
    // that meets the old document going away fails; the next one reads the new document.
    wait_until("both sessions listed after a reload", UI_TIMEOUT, || {
        let listed = driver.execute(
            "return window.__before_reload ? -1 : \
             document.querySelectorAll(\"[data-testid='chat-sessions'] .title\").length;",
            vec![],
        );
        Ok(listed.is_ok_and(|listed| listed == 2))
    })?;
    driver.execute(
        "window.__replies = []; \
         new MutationObserver(() => document.querySelectorAll(\"[data-testid='chat-assistant']\") \
           .forEach((e) => window.__replies.push(e.innerHTML))) \
           .observe(document.body, { childList: true, subtree: true }); return true;",
        vec![],
    )?;
    click_in_row(driver, "Alpha", "")?;
    wait_until("the Alpha reply from history", UI_TIMEOUT, || {
        Ok(driver.texts("[data-testid='chat-assistant']")? == ["Herons wade."])
    })?;
    let shown = driver.execute("return window.__replies;", vec![])?;
    let shown: Vec<String> = serde_json::from_value(shown)?;
    ensure!(
        !shown.is_empty()
            && shown
                .iter()
                .all(|html| html.contains("<strong>wade</strong>")),
        "the reply showed unformatted: {shown:?}"
    );
    click_in_row(driver, "Beta", "")?;
    wait_until("the Beta chat again", UI_TIMEOUT, || {
        Ok(driver.texts("[data-testid='chat-user']")? == ["Beta: and about ospreys"])
    })?;

    // Drafts: each chat keeps what was typed in it, across switches.
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, "unsent beta draft")?;
    click_in_row(driver, "Alpha", "")?;
    wait_until("the Alpha chat", UI_TIMEOUT, || {
        Ok(driver.texts("[data-testid='chat-user']")? == ["Alpha: tell me about herons"])
    })?;
    ensure!(
        value_of(driver, "[data-testid='chat-input']")?.is_empty(),
        "the Beta draft followed into the Alpha chat"
    );
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, "unsent alpha draft")?;
    click_in_row(driver, "Beta", "")?;
    wait_until("the Beta draft back", UI_TIMEOUT, || {
        Ok(value_of(driver, "[data-testid='chat-input']")? == "unsent beta draft")
    })?;
    click_in_row(driver, "Alpha", "")?;
    wait_until("the Alpha draft back", UI_TIMEOUT, || {
        Ok(value_of(driver, "[data-testid='chat-input']")? == "unsent alpha draft")
    })?;
    // Ctrl+L goes back to the message box from anywhere on the page.
    driver.execute(
        "document.querySelector('#chat-model').focus(); return true;",
        vec![],
    )?;
    driver.press_keys(&[keys::CONTROL], &["l"])?;
    wait_until("Ctrl+L to focus the input", UI_TIMEOUT, || {
        Ok(focused_testid(driver)? == "chat-input")
    })?;
    app.save_screenshot("drafts")?;

    // Rename: the row's button, a new title, Enter; kept in the core.
    click_in_row(driver, "Alpha", "session-rename")?;
    let rename = driver.wait_for("[data-testid='session-rename-input']", UI_TIMEOUT)?;
    // The old title is selected, so typing replaces it.
    driver.send_keys(&rename, "Heron notes")?;
    driver.press_keys(&[], &[keys::ENTER])?;
    wait_until("the new title", UI_TIMEOUT, || {
        Ok(driver
            .texts("[data-testid='chat-sessions'] .title")?
            .iter()
            .any(|t| t == "Heron notes"))
    })?;
    let stored = driver.invoke("list_sessions", json!({}))?;
    ensure!(
        stored
            .as_array()
            .is_some_and(|list| list.iter().any(|s| s["title"] == "Heron notes")),
        "the rename was not stored: {stored}"
    );

    // Search finds the other chat by its words, says when nothing matches, Esc clears it.
    let search = driver.wait_for("[data-testid='chat-search']", UI_TIMEOUT)?;
    driver.send_keys(&search, "ospreys")?;
    wait_until("the search results", UI_TIMEOUT, || {
        Ok(driver
            .texts("[data-testid='chat-search-results'] .title")?
            .iter()
            .any(|t| t.starts_with("Beta")))
    })?;
    ensure!(
        driver
            .texts("[data-testid='chat-search-results'] .title")?
            .len()
            == 1,
        "the search for ospreys found the heron chat too"
    );
    ensure!(
        driver
            .texts("[data-testid='chat-search-snippet']")?
            .iter()
            .any(|t| t.to_lowercase().contains("osprey")),
        "the result shows no excerpt with the word"
    );
    app.save_screenshot("search")?;
    driver.send_keys(&search, "zzqx")?;
    driver.wait_for("[data-testid='chat-search-empty']", UI_TIMEOUT)?;
    driver.press_keys(&[], &[keys::ESCAPE])?;
    driver.wait_for("[data-testid='chat-sessions']", UI_TIMEOUT)?;
    ensure!(
        value_of(driver, "[data-testid='chat-search']")?.is_empty(),
        "Esc did not clear the search"
    );

    // Delete asks first, then removes the chat from the list and the core, and its draft.
    click_in_row(driver, "Heron notes", "session-delete")?;
    let confirm = driver.wait_for("[data-testid='session-delete-confirm']", UI_TIMEOUT)?;
    app.save_screenshot("delete-confirm")?;
    driver.click(&confirm)?;
    wait_until("the deleted chat to go", UI_TIMEOUT, || {
        Ok(driver.texts("[data-testid='chat-sessions'] .title")?.len() == 1)
    })?;
    ensure!(
        !driver
            .texts("[data-testid='chat-sessions'] .title")?
            .iter()
            .any(|t| t == "Heron notes"),
        "the deleted chat is still listed"
    );
    let stored = driver.invoke("list_sessions", json!({}))?;
    ensure!(
        stored.as_array().map(Vec::len) == Some(1),
        "the core still has {stored}"
    );
    // It was the open chat: the view is empty and its draft is gone.
    driver.wait_for("[data-testid='chat-empty']", UI_TIMEOUT)?;
    ensure!(
        value_of(driver, "[data-testid='chat-input']")? != "unsent alpha draft",
        "the deleted chat's draft is still in the box"
    );
    Ok(())
}

#[test]
fn esc_stops_a_streaming_turn_and_retry_sends_again_after_a_failure() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-stop-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let long = "word ".repeat(300);
    let server = AnthropicServer::start(vec![
        ScriptedReply::text(long.trim_end()).paced(Duration::from_millis(50)),
        ScriptedReply::failure(400, "the scripted model refused this one"),
        ScriptedReply::text("Second time lucky."),
    ])?;
    server.use_as_provider(data.path(), work.path())?;
    let app = DesktopApp::launch_with(
        "desktop_chat_stop_retry",
        LaunchOptions::with_test_model(data.path()),
    )?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;

    send(driver, "Talk for a long time")?;
    driver.wait_for_text("[data-testid='chat-assistant']", UI_TIMEOUT, |t| {
        t.split_whitespace().count() >= 5
    })?;
    ensure!(
        driver.find("[data-testid='chat-stop']")?.is_some(),
        "no Stop button while the answer streams"
    );
    driver.press_keys(&[], &[keys::ESCAPE])?;
    wait_for_turn_end(driver)?;
    let words = driver
        .texts("[data-testid='chat-assistant']")?
        .last()
        .map(|t| t.split_whitespace().count())
        .unwrap_or_default();
    ensure!(
        words < 300,
        "Esc did not stop the turn: all {words} words arrived"
    );
    app.save_screenshot("stopped")?;

    send(driver, "Try again please")?;
    let error =
        driver.wait_for_text("[data-testid='chat-error']", UI_TIMEOUT, |t| !t.is_empty())?;
    ensure!(
        error.contains("refused this one"),
        "the failure shows as {error:?}"
    );
    app.save_screenshot("failed-turn")?;
    let retry = driver.wait_for("[data-testid='chat-retry']", UI_TIMEOUT)?;
    driver.click(&retry)?;
    wait_until("the retried answer", UI_TIMEOUT, || {
        Ok(driver
            .texts("[data-testid='chat-assistant']")?
            .last()
            .map(String::as_str)
            == Some("Second time lucky."))
    })?;
    ensure!(
        driver.find("[data-testid='chat-error']")?.is_none(),
        "the error stayed after the retry worked"
    );
    let request = server
        .seen()
        .pop()
        .context("the retry never reached the model")?;
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    ensure!(
        last.to_string().contains("Try again please"),
        "the retry did not send the message again: {last}"
    );
    ensure!(
        server.remaining() == 0,
        "the model was not asked three times"
    );
    app.save_screenshot("retried")?;
    Ok(())
}
