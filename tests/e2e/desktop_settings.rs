//! Settings, the tray's pause and the dark theme in the real desktop app, against a loopback
//! Anthropic-format model: a policy chosen in Settings is applied to the next tool call and kept
//! after a restart; an MCP server added in Settings (the `mcp-echo` fixture) connects and lists
//! its tools; pausing automation through the tray's handler holds a turn's tool call until it is
//! resumed; the persona saved in Settings is the next chat's identity, and Settings lists what
//! the os tool can use here; the dark theme paints dark; a tool group switched off in Settings >
//! Tools leaves the next turn's tool list, and autonomous mode, once confirmed, shows its banner. Screenshots go to the test's artifacts folder.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use osprey_tests::{DesktopApp, LaunchOptions, WebDriver, store_setting, wait_until};
use serde_json::{Value, json};

const UI_TIMEOUT: Duration = Duration::from_secs(30);

fn launch(test: &str, data_dir: &Path) -> Result<DesktopApp> {
    DesktopApp::launch_with(
        test,
        LaunchOptions {
            data_dir: Some(data_dir.to_path_buf()),
            env: vec![
                ("ANTHROPIC_API_KEY".into(), "test-key".into()),
                ("OSPREY_SECRETS".into(), "file".into()),
            ],
        },
    )
}

fn open_page(driver: &WebDriver, route: &str, heading: &str) -> Result<()> {
    driver.execute(
        "window.location.hash = arguments[0]; return true;",
        vec![format!("#/{route}").into()],
    )?;
    driver.wait_for_text("main h1", UI_TIMEOUT, |t| t == heading)?;
    Ok(())
}

fn click(driver: &WebDriver, css: &str) -> Result<()> {
    let element = driver.wait_for(css, UI_TIMEOUT)?;
    driver.click(&element)
}

fn send(driver: &WebDriver, text: &str) -> Result<()> {
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, text)?;
    click(driver, "[data-testid='chat-send']")
}

fn script(driver: &WebDriver, body: &str) -> Result<Value> {
    driver.execute(body, vec![])
}

fn tool_status(driver: &WebDriver) -> Result<String> {
    Ok(script(
        driver,
        "const e = document.querySelector(\"[data-testid='chat-tool']\"); \
         return e ? e.dataset.status + '|' + e.querySelector('.status').textContent.trim() : '';",
    )?
    .as_str()
    .unwrap_or_default()
    .to_string())
}

#[test]
fn a_policy_set_in_settings_applies_to_the_next_call_and_survives_a_restart() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-policy-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let target = work.path().join("made-under-full");
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_policy",
            "shell",
            json!({"resource": "bash", "action": "exec", "command": format!("touch {}", target.display())}),
        ),
        ScriptedReply::text("Created it."),
    ])?;
    server.use_as_provider(data.path(), work.path())?;
    let mut app = launch("desktop_settings_policy", data.path())?;
    let driver = &app.driver;

    open_page(driver, "settings", "Settings")?;
    driver.wait_for("[data-testid='policy-settings']", UI_TIMEOUT)?;
    app.save_screenshot("settings-light")?;
    click(driver, "[data-testid='policy-level-full']")?;
    click(driver, "[data-testid='policy-save']")?;
    driver.wait_for_text(
        "[data-testid='policy-settings'] [role='status']",
        UI_TIMEOUT,
        |t| t.starts_with("Saved"),
    )?;

    // The next call runs without a question: no dialog, the file appears.
    open_page(driver, "chat", "Chat")?;
    send(driver, "Make the file")?;
    wait_until("the final answer", UI_TIMEOUT, || {
        Ok(script(
            driver,
            "return Array.from(document.querySelectorAll(\"[data-testid='chat-assistant']\")).some((e) => e.textContent.trim() === 'Created it.');",
        )? == Value::Bool(true))
    })
    .inspect_err(|_| {
        let _ = app.save_screenshot("policy-no-answer");
    })?;
    ensure!(
        target.exists(),
        "the call did not run under the full policy"
    );
    ensure!(
        driver.find("[data-testid='approval-dialog']")?.is_none(),
        "a question was asked under the full policy"
    );
    ensure!(
        tool_status(driver)?.starts_with("done"),
        "{}",
        tool_status(driver)?
    );

    // An invalid value is refused in place (the store URL's scheme).
    open_page(driver, "settings", "Settings")?;
    let url = driver.wait_for("[data-testid='store-url']", UI_TIMEOUT)?;
    driver.send_keys(&url, "ftp://store.example.com")?;
    click(driver, "[data-testid='store-url-save']")?;
    let error = driver.wait_for_text("[data-testid='store-url-error']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        error.contains("http or https"),
        "the refusal reads {error:?}"
    );
    app.save_screenshot("settings-invalid-store-url")?;

    // Kept after a restart.
    app.driver.delete_session()?;
    drop(app);
    // Its own artifacts folder: a launch empties the folder of its name.
    app = launch("desktop_settings_policy_restart", data.path())?;
    let driver = &app.driver;
    open_page(driver, "settings", "Settings")?;
    let checked = driver.wait_for("[data-testid='policy-level-full']", UI_TIMEOUT)?;
    let _ = checked;
    wait_until("the stored level to be shown", UI_TIMEOUT, || {
        Ok(script(
            driver,
            "return document.querySelector(\"[data-testid='policy-level-full']\").checked;",
        )? == Value::Bool(true))
    })?;
    app.save_screenshot("settings-after-restart")?;
    Ok(())
}

#[test]
fn an_mcp_server_added_in_settings_shows_its_tools() -> Result<()> {
    let echo = osprey_tests::fixture_binary("osprey-fixture-mcp-echo");
    let app = DesktopApp::launch("desktop_settings_mcp")?;
    let driver = &app.driver;
    open_page(driver, "settings", "Settings")?;
    let name = driver.wait_for("[data-testid='mcp-new-name']", UI_TIMEOUT)?;
    driver.send_keys(&name, "echo")?;
    let command = driver.wait_for("[data-testid='mcp-new-command']", UI_TIMEOUT)?;
    driver.send_keys(&command, &echo.display().to_string())?;
    click(driver, "[data-testid='mcp-add']")?;
    let tools = driver
        .wait_for_text(
            "[data-testid='mcp-server-echo'] [data-testid='mcp-tools']",
            UI_TIMEOUT,
            |t| !t.trim().is_empty(),
        )
        .inspect_err(|_| {
            let _ = app.save_screenshot("mcp-no-tools");
        })?;
    let state = driver.wait_for_text(
        "[data-testid='mcp-server-echo'] [data-testid='mcp-state']",
        UI_TIMEOUT,
        |t| t.starts_with("Connected"),
    )?;
    ensure!(state.contains("tool"), "state reads {state:?}");
    let names = driver.invoke("app_info", json!({}))?;
    let registered: Vec<String> = names["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str().map(str::to_string))
        .filter(|t| t.starts_with("mcp__echo__"))
        .collect();
    ensure!(!registered.is_empty(), "no mcp__echo__ tool is registered");
    ensure!(
        registered
            .iter()
            .any(|t| tools.contains(t.trim_start_matches("mcp__echo__"))),
        "the page lists {tools:?}, the registry {registered:?}"
    );
    driver.execute(
        "document.querySelector(\"[data-testid='mcp-settings']\").scrollIntoView();",
        vec![],
    )?;
    app.save_screenshot("mcp-server-tools")?;

    // Removing it takes its tools away.
    click(driver, "[data-testid='mcp-server-echo'] button")?;
    wait_until("the server to go", UI_TIMEOUT, || {
        Ok(driver.find("[data-testid='mcp-server-echo']")?.is_none())
    })?;
    wait_until("its tools to go", UI_TIMEOUT, || {
        let info = driver.invoke("app_info", json!({}))?;
        Ok(!info["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t.as_str().is_some_and(|t| t.starts_with("mcp__echo__"))))
    })?;
    Ok(())
}

#[test]
fn pausing_from_the_tray_holds_a_turn_until_resumed() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-pause-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let target = work.path().join("made-after-resume");
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_paused",
            "shell",
            json!({"resource": "bash", "action": "exec", "command": format!("touch {}", target.display())}),
        ),
        ScriptedReply::text("Done after the pause."),
    ])?;
    server.use_as_provider(data.path(), work.path())?;
    // No question in the way: the pause is what holds the call.
    store_setting(data.path(), "policy", json!({"level": "full"}))?;
    let app = launch("desktop_settings_pause", data.path())?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |t| t == "Chat")?;

    driver.invoke("tray_action", json!({"id": "pause"}))?;
    driver.wait_for_text("[data-testid='paused-banner']", UI_TIMEOUT, |t| {
        t.contains("Automation is paused")
    })?;
    let status = driver.invoke("automation_status", json!({}))?;
    ensure!(status["paused"] == true, "status: {status}");

    send(driver, "Make the file")?;
    wait_until("the tool call to wait", UI_TIMEOUT, || {
        Ok(tool_status(driver)? == "running|waiting: automation is paused")
    })
    .inspect_err(|_| {
        let _ = app.save_screenshot("pause-no-waiting-call");
    })?;
    ensure!(!target.exists(), "the tool ran while automation was paused");
    let status = driver.invoke("automation_status", json!({}))?;
    ensure!(
        status["turns"].as_array().is_some_and(|t| t.len() == 1),
        "the waiting turn is listed as running work: {status}"
    );
    app.save_screenshot("paused-turn-waiting")?;

    // Resume from the tray: the call runs and the turn ends.
    driver.invoke("tray_action", json!({"id": "pause"}))?;
    wait_until("the final answer", UI_TIMEOUT, || {
        Ok(script(
            driver,
            "return Array.from(document.querySelectorAll(\"[data-testid='chat-assistant']\")).some((e) => e.textContent.trim() === 'Done after the pause.');",
        )? == Value::Bool(true))
    })?;
    ensure!(target.exists(), "resumed, yet the call did not run");
    ensure!(
        driver.find("[data-testid='paused-banner']")?.is_none(),
        "the banner stayed after resuming"
    );
    Ok(())
}

/// The persona set in Settings (name, manner, quiet hours) is who the agent is in the next chat:
/// the model's system prompt carries it.
#[test]
fn the_persona_set_in_settings_is_the_next_chats_identity() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-persona-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let server = AnthropicServer::start(vec![ScriptedReply::text("Aye.")])?;
    server.use_as_provider(data.path(), work.path())?;
    let app = launch("desktop_settings_persona", data.path())?;
    let driver = &app.driver;

    open_page(driver, "settings", "Settings")?;
    let name = driver.wait_for("[data-testid='persona-name']", UI_TIMEOUT)?;
    ensure!(
        script(
            driver,
            "return document.querySelector(\"[data-testid='persona-name']\").value;"
        )? == "Osprey",
        "the stored default name is not shown"
    );
    script(
        driver,
        "const e = document.querySelector(\"[data-testid='persona-name']\"); \
         e.value = ''; e.dispatchEvent(new Event('input', {bubbles: true})); return true;",
    )?;
    driver.send_keys(&name, "Kestrel")?;
    let vibe = driver.wait_for("[data-testid='persona-vibe']", UI_TIMEOUT)?;
    driver.send_keys(&vibe, "dry and brief")?;
    click(driver, "[data-testid='persona-quiet']")?;
    driver.wait_for("[data-testid='persona-quiet-start']", UI_TIMEOUT)?;
    click(driver, "[data-testid='persona-save']")?;
    driver.wait_for_text(
        "[data-testid='persona-settings'] [role='status']",
        UI_TIMEOUT,
        |t| t.starts_with("Saved"),
    )?;
    app.save_screenshot("settings-persona")?;

    // The os tool's capabilities, probed on this machine: the clipboard works on this display,
    // mail names what to set up.
    driver.wait_for("[data-testid='os-capability-clipboard']", UI_TIMEOUT)?;
    ensure!(
        script(
            driver,
            "return document.querySelector(\"[data-testid='os-capability-clipboard']\").dataset.available;",
        )? == "true",
        "the clipboard is not shown as working"
    );
    let mail = driver.wait_for_text("[data-testid='os-capability-mail']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        mail.contains("Not available") && mail.contains("os.mail"),
        "mail without an account reads {mail:?}"
    );
    script(
        driver,
        "document.querySelector(\"[data-testid='os-settings']\").scrollIntoView(); return true;",
    )?;
    app.save_screenshot("settings-os")?;

    open_page(driver, "chat", "Chat")?;
    send(driver, "Who are you?")?;
    wait_until("the model to be asked", UI_TIMEOUT, || {
        Ok(!server.seen().is_empty())
    })?;
    let system = server.seen()[0]["system"].to_string();
    for expected in [
        "You are Kestrel, an AI agent",
        "Your manner: dry and brief.",
        "quiet hours are 22:00 to 07:00",
    ] {
        ensure!(
            system.contains(expected),
            "{expected:?} missing from the system prompt {system}"
        );
    }
    Ok(())
}

#[test]
fn the_dark_theme_renders_and_is_kept() -> Result<()> {
    let app = DesktopApp::launch("desktop_settings_dark")?;
    let driver = &app.driver;
    open_page(driver, "settings", "Settings")?;
    click(
        driver,
        "[data-testid='theme-settings'] label:nth-of-type(3)",
    )?;
    wait_until("the dark theme", UI_TIMEOUT, || {
        Ok(script(driver, "return document.documentElement.dataset.theme;")? == "dark")
    })?;
    let background = script(
        driver,
        "return getComputedStyle(document.body).backgroundColor;",
    )?;
    let channels: Vec<u32> = background
        .as_str()
        .unwrap_or_default()
        .trim_start_matches("rgba(")
        .trim_start_matches("rgb(")
        .trim_end_matches(')')
        .split(',')
        .take(3)
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    ensure!(
        channels.len() == 3 && channels.iter().all(|c| *c < 60),
        "the page background is {background}, not dark"
    );
    // The window itself never scrolls, however far down the page the control was: the page
    // scrolls inside the shell, which always fills the window.
    let window_scroll = script(
        driver,
        "const d = document.scrollingElement; return [d.scrollTop, d.scrollHeight - d.clientHeight];",
    )?;
    ensure!(
        window_scroll == json!([0, 0]),
        "the window scrolled (scrollTop, scrollable height): {window_scroll}"
    );
    app.save_screenshot("settings-dark")?;
    open_page(driver, "chat", "Chat")?;
    app.save_screenshot("chat-dark")?;
    // Stored in the core, not only in the page.
    let overview = driver.invoke("settings_overview", json!({}))?;
    ensure!(
        overview["theme"] == "dark",
        "theme stored as {}",
        overview["theme"]
    );
    Ok(())
}

/// The tool names a request to the model offered.
fn offered_tools(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn tools_switched_off_in_settings_leave_the_models_list_and_autonomous_mode_shows_its_banner()
-> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-tools-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let server = AnthropicServer::start(vec![
        ScriptedReply::text("With every tool."),
        ScriptedReply::text("Without the shell."),
    ])?;
    server.use_as_provider(data.path(), work.path())?;
    let app = launch("desktop_settings_tools", data.path())?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |t| t == "Chat")?;

    send(driver, "First")?;
    driver.wait_for_text("[data-testid='chat-assistant']", UI_TIMEOUT, |t| {
        t == "With every tool."
    })?;
    let before = offered_tools(&server.seen().pop().context("the model was not asked")?);
    ensure!(
        before.iter().any(|t| t == "shell") && before.iter().any(|t| t == "file"),
        "the first turn did not offer the shell and file tools: {before:?}"
    );

    // Switch the shell group (shell and exec) off in Settings > Tools.
    open_page(driver, "settings", "Settings")?;
    click(driver, "[data-testid='tool-category-shell']")?;
    wait_until("the shell group to be stored as off", UI_TIMEOUT, || {
        let overview = driver.invoke("settings_overview", json!({}))?;
        Ok(overview["tools"]["disabled"]
            .as_array()
            .is_some_and(|d| d.iter().any(|v| v == "shell")))
    })?;
    let checked = script(
        driver,
        "return document.querySelector(\"[data-testid='tool-category-shell']\").checked;",
    )?;
    ensure!(checked == false, "the shell box is still ticked");
    app.save_screenshot("shell-off")?;

    // The next turn's tool list lacks it (and exec, in the same group); the rest stay.
    open_page(driver, "chat", "Chat")?;
    send(driver, "Second")?;
    driver.wait_for_text("[data-testid='chat-assistant']", UI_TIMEOUT, |t| {
        t == "Without the shell."
    })?;
    let after = offered_tools(&server.seen().pop().context("the model was not asked")?);
    ensure!(
        !after.iter().any(|t| t == "shell" || t == "exec"),
        "the shell group is off, yet the model was offered {after:?}"
    );
    ensure!(
        after.iter().any(|t| t == "file"),
        "switching the shell off took other tools too: {after:?}"
    );

    // Autonomous mode: nothing happens until the warning is confirmed; then the banner shows on
    // every page until it is turned off.
    open_page(driver, "settings", "Settings")?;
    click(driver, "[data-testid='autonomous-start']")?;
    let warning = driver.wait_for_text("[data-testid='autonomous-confirm']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        driver.find("[data-testid='autonomous-banner']")?.is_none(),
        "the banner shows before the warning was confirmed"
    );
    ensure!(
        driver.invoke("settings_overview", json!({}))?["tools"]["autonomous"] != true,
        "autonomous mode is on before the warning was confirmed ({warning:?})"
    );
    app.save_screenshot("autonomous-confirm")?;
    click(driver, "[data-testid='autonomous-yes']")?;
    driver.wait_for("[data-testid='autonomous-on']", UI_TIMEOUT)?;
    driver.wait_for("[data-testid='autonomous-banner']", UI_TIMEOUT)?;
    ensure!(
        driver.invoke("settings_overview", json!({}))?["tools"]["autonomous"] == true,
        "autonomous mode was not stored"
    );
    open_page(driver, "chat", "Chat")?;
    driver.wait_for("[data-testid='autonomous-banner']", UI_TIMEOUT)?;
    app.save_screenshot("autonomous-banner")?;
    open_page(driver, "settings", "Settings")?;
    click(driver, "[data-testid='autonomous-off']")?;
    wait_until("the banner to go", UI_TIMEOUT, || {
        Ok(driver.find("[data-testid='autonomous-banner']")?.is_none())
    })?;
    Ok(())
}
