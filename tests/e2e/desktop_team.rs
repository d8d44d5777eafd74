//! The agent team in the real desktop app, against a loopback Anthropic-format model: a chat turn
//! whose scripted model plans a task, spawns a sub-agent that reports its status and adds a
//! dependent task shows the Team panel under the conversation, live (the sub-agent running with
//! its status text) and after (done, the graph grouped with its dependency named); an agent type
//! created in Settings > Agents is written to the data folder, and a bad name is refused in
//! place. Screenshots of both themes go to the test's artifacts folder.
//! Linux only: tauri-driver drives WebKitGTK here.
#![cfg(target_os = "linux")]

use std::time::Duration;

use anyhow::{Result, ensure};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use osprey_tests::{DesktopApp, LaunchOptions, WebDriver, wait_until};
use serde_json::{Value, json};

const UI_TIMEOUT: Duration = Duration::from_secs(30);

fn click(driver: &WebDriver, css: &str) -> Result<()> {
    let element = driver.wait_for(css, UI_TIMEOUT)?;
    driver.click(&element)
}

fn type_into(driver: &WebDriver, css: &str, text: &str) -> Result<()> {
    let element = driver.wait_for(css, UI_TIMEOUT)?;
    driver.send_keys(&element, text)
}

fn set_theme(driver: &WebDriver, theme: &str) -> Result<()> {
    driver.invoke("set_setting", json!({"key": "ui.theme", "value": theme}))?;
    wait_until(&format!("the {theme} theme"), UI_TIMEOUT, || {
        Ok(driver.execute("return document.documentElement.dataset.theme;", vec![])? == theme)
    })?;
    driver.wait_for_paint()
}

#[test]
fn the_team_panel_follows_a_sub_agent_and_an_agent_type_is_created_in_settings() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-team-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_plan",
            "agent",
            json!({"resource": "graph", "action": "create_task", "title": "Gather sources"}),
        ),
        ScriptedReply::call(
            "toolu_spawn",
            "agent",
            json!({"resource": "task", "action": "spawn", "prompt": "Research the history of ospreys and take notes."}),
        ),
        ScriptedReply::call(
            "toolu_status",
            "agent",
            json!({"resource": "task", "action": "set_status", "text": "Read 3 of 5 pages"}),
        ),
        // Slow, so the panel is seen while the sub-agent runs.
        ScriptedReply::call(
            "toolu_more",
            "agent",
            json!({"resource": "graph", "action": "create_task", "title": "Write the summary", "depends_on": [1]}),
        )
        .paced(Duration::from_millis(700)),
        ScriptedReply::text("Notes taken: five sources."),
        ScriptedReply::text("The research is done."),
    ])?;
    server.use_as_provider(data.path(), work.path())?;
    let app = DesktopApp::launch_with("desktop_team", LaunchOptions::with_test_model(data.path()))?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;
    ensure!(
        driver.find("[data-testid='team-panel']")?.is_none(),
        "a chat without a team shows no Team panel"
    );

    type_into(
        driver,
        "[data-testid='chat-input']",
        "Research ospreys with a helper",
    )?;
    click(driver, "[data-testid='chat-send']")?;

    // Live: the sub-agent runs and its status is there.
    driver
        .wait_for_text("[data-testid='team-agent-progress']", UI_TIMEOUT, |t| {
            t == "Read 3 of 5 pages"
        })
        .inspect_err(|_| {
            let _ = app.save_screenshot("no-team-progress");
        })?;
    let status = driver.texts("[data-testid='team-agent-status']")?;
    ensure!(
        status == ["Running"],
        "the sub-agent shows {status:?} while it runs"
    );
    ensure!(
        driver.find("[data-testid='team-agent-cancel']")?.is_some(),
        "a running sub-agent offers Cancel"
    );
    app.save_screenshot("team-running")?;

    // After: done, and the graph grouped with the dependency named.
    wait_until("the final answer", UI_TIMEOUT, || {
        Ok(driver
            .texts("[data-testid='chat-assistant']")?
            .last()
            .is_some_and(|t| t == "The research is done."))
    })?;
    wait_until("the sub-agent to show done", UI_TIMEOUT, || {
        Ok(driver.texts("[data-testid='team-agent-status']")? == ["Done"])
    })?;
    ensure!(
        driver.find("[data-testid='team-agent-cancel']")?.is_none(),
        "a finished sub-agent offers no Cancel"
    );
    let progress = driver.texts("[data-testid='team-agent-progress']")?;
    ensure!(progress == ["Read 3 of 5 pages"], "{progress:?}");
    let groups: Value = driver.execute(
        "return Array.from(document.querySelectorAll(\"[data-testid='team-graph-group']\")).map((g) => \
           [g.dataset.group, Array.from(g.querySelectorAll(\"[data-testid='team-graph-task']\")).map((t) => t.textContent.replace(/\\s+/g, ' ').trim())]);",
        vec![],
    )?;
    let groups = groups.as_array().cloned().unwrap_or_default();
    ensure!(groups.len() == 2, "two groups of tasks, not {groups:?}");
    ensure!(
        groups[0][0] == "ready" && groups[1][0] == "blocked",
        "{groups:?}"
    );
    let ready = groups[0][1][0].as_str().unwrap_or_default();
    ensure!(
        ready.contains("#1 Gather sources") && ready.contains("Created by the conversation"),
        "{ready:?}"
    );
    let blocked = groups[1][1][0].as_str().unwrap_or_default();
    ensure!(
        blocked.contains("#2 Write the summary")
            && blocked.contains("Created by sub-agent #1")
            && blocked.contains("Depends on #1 Gather sources (not done)"),
        "{blocked:?}"
    );
    let summary = driver.texts("[data-testid='team-summary']")?;
    ensure!(summary == ["1 sub-agent · 2 tasks, 0 done"], "{summary:?}");
    // The graph is below the sub-agents: scroll the panel to it.
    driver.execute(
        "const panel = document.querySelector(\"[data-testid='team-panel']\"); panel.scrollTop = panel.scrollHeight; return true;",
        vec![],
    )?;
    driver.wait_for_paint()?;
    app.save_screenshot("team-done-light")?;
    set_theme(driver, "dark")?;
    app.save_screenshot("team-done-dark")?;

    // Hide and show: the toggle says which.
    click(driver, "[data-testid='team-toggle']")?;
    wait_until("the panel to fold", UI_TIMEOUT, || {
        Ok(driver.find("[data-testid='team-agent']")?.is_none())
    })?;
    let toggle = driver.wait_for("[data-testid='team-toggle']", UI_TIMEOUT)?;
    ensure!(
        driver.text(&toggle)? == "Show",
        "the folded panel offers Show"
    );
    driver.click(&toggle)?;
    driver.wait_for("[data-testid='team-agent']", UI_TIMEOUT)?;

    // Settings > Agents: a bad name is refused in place; a good type is written and listed.
    driver.execute("window.location.hash = '#/settings'; return true;", vec![])?;
    driver.wait_for_text("main h1", UI_TIMEOUT, |t| t == "Settings")?;
    driver.wait_for(
        "[data-testid='agents-builtin'] [data-testid='agent-type-researcher']",
        UI_TIMEOUT,
    )?;
    type_into(driver, "[data-testid='agent-name']", "Scout!")?;
    type_into(
        driver,
        "[data-testid='agent-description']",
        "Looks through my notes",
    )?;
    type_into(
        driver,
        "[data-testid='agent-prompt']",
        "You are Scout. Read the notes and report in one line.",
    )?;
    click(driver, "[data-testid='agent-pack-read-only-research']")?;
    click(driver, "[data-testid='agent-save']")?;
    driver.wait_for_text("[data-testid='agent-error']", UI_TIMEOUT, |t| {
        t.contains("`Scout!` is not valid")
    })?;
    ensure!(
        !data.path().join("agents").exists()
            || std::fs::read_dir(data.path().join("agents"))?
                .next()
                .is_none(),
        "a refused type wrote a file"
    );
    driver.execute(
        "const name = document.querySelector(\"[data-testid='agent-name']\"); \
         name.value = ''; name.dispatchEvent(new Event('input')); return true;",
        vec![],
    )?;
    type_into(driver, "[data-testid='agent-name']", "scout")?;
    click(driver, "[data-testid='agent-save']")?;
    driver.wait_for_text("[data-testid='agent-saved']", UI_TIMEOUT, |t| {
        t == "Saved scout."
    })?;
    driver.wait_for(
        "[data-testid='agents-own'] [data-testid='agent-type-scout']",
        UI_TIMEOUT,
    )?;
    let written: Value = serde_json::from_str(&std::fs::read_to_string(
        data.path().join("agents/scout.json"),
    )?)?;
    ensure!(
        written["packs"] == json!(["read-only-research"])
            && written["prompt"] == "You are Scout. Read the notes and report in one line.",
        "{written}"
    );
    driver.execute(
        "document.querySelector(\"[data-testid='agents-settings']\").scrollIntoView(); return true;",
        vec![],
    )?;
    driver.wait_for_paint()?;
    app.save_screenshot("settings-agents-dark")?;
    set_theme(driver, "light")?;
    app.save_screenshot("settings-agents-light")?;
    driver.execute(
        "document.querySelector(\"[data-testid='agent-pack-read-only-research']\").scrollIntoView(); return true;",
        vec![],
    )?;
    driver.wait_for_paint()?;
    app.save_screenshot("settings-agents-packs")?;
    driver.execute(
        "document.querySelector(\"[data-testid='agents-builtin']\").scrollIntoView(); return true;",
        vec![],
    )?;
    driver.wait_for_paint()?;
    app.save_screenshot("settings-agents-builtin")?;
    Ok(())
}
