//! Chat in the real desktop app against a loopback Anthropic-format SSE server: a typed message
//! streams its answer into the transcript; a scripted tool call that needs approval opens the
//! approval dialog, "Allow once" runs the real shell tool, and the model's final answer appears.
//! Linux only: tauri-driver drives WebKitGTK here.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use osprey_tests::{DesktopApp, LaunchOptions, WebDriver};
use serde_json::json;

const UI_TIMEOUT: Duration = Duration::from_secs(30);

/// Points the app's chat at the loopback server through the stored provider settings (the same
/// setting `osprey config set provider.anthropic.base_url` writes).
/// The scripted model as the provider, and `work` as the shell sandbox's workspace (commands
/// write only there).
fn configure(data_dir: &Path, server: &AnthropicServer, work: &Path) -> Result<()> {
    let database = osprey_db::Database::open_in(data_dir).context("opening the test database")?;
    database
        .settings()
        .set("shell.sandbox", &json!({"workspaces": [work]}))
        .context("storing the sandbox settings")?;
    database
        .settings()
        .set(
            "providers",
            &json!({
                "default": "anthropic",
                "anthropic": {"base_url": server.url(), "model": "claude-test"},
            }),
        )
        .context("storing the provider settings")?;
    Ok(())
}

/// Types into the chat box and presses Send.
fn send(driver: &WebDriver, text: &str) -> Result<()> {
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, text)?;
    let button = driver.wait_for("[data-testid='chat-send']", UI_TIMEOUT)?;
    driver.click(&button)
}

/// The texts of every element matching `css`, in document order.
fn texts(driver: &WebDriver, css: &str) -> Result<Vec<String>> {
    let value = driver.execute(
        "return Array.from(document.querySelectorAll(arguments[0])).map((e) => e.textContent);",
        vec![css.into()],
    )?;
    Ok(value
        .as_array()
        .map(|list| {
            list.iter()
                .map(|v| v.as_str().unwrap_or_default().trim().to_string())
                .collect()
        })
        .unwrap_or_default())
}

fn wait_until(what: &str, mut condition: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + UI_TIMEOUT;
    loop {
        if condition()? {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
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
    configure(data.path(), &server, work.path())?;
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
    wait_until("the streamed answer", || {
        let answers = texts(driver, "[data-testid='chat-assistant']")?;
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
        texts(driver, "[data-testid='chat-thinking'] summary")? == ["Thinking"],
        "thinking is shown collapsed under a 'Thinking' summary"
    );
    wait_until("the turn to end", || {
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
    wait_until("the final answer", || {
        Ok(texts(driver, "[data-testid='chat-assistant']")?
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
    wait_until("the stored session", || {
        Ok(
            texts(driver, "[data-testid='chat-user']")?
                == ["Hello there", "Please create the file"],
        )
    })?;
    ensure!(
        texts(driver, "[data-testid='chat-assistant']")?
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
    configure(data.path(), &server, work.path())?;
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
