//! The desktop app starts, shows its UI, and a Tauri command round-trips through Rust.
//! Linux only: tauri-driver drives WebKitGTK here; macOS has no WebDriver for WKWebView.
#![cfg(target_os = "linux")]

use std::time::Duration;

use anyhow::{Result, ensure};
use osprey_tests::{DesktopApp, LaunchOptions, png_dimensions};

const UI_TIMEOUT: Duration = Duration::from_secs(20);

#[test]
fn window_opens_on_chat_and_settings_shows_app_info() -> Result<()> {
    let app = DesktopApp::launch("desktop_smoke")?;
    let driver = &app.driver;

    ensure!(
        driver.title()? == "Osprey",
        "window title is {:?}",
        driver.title()?
    );
    driver.wait_for("nav[aria-label='Main']", UI_TIMEOUT)?;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;
    // The built page carries the chat view (ui/src/prerender.ts); the app's script took that
    // markup over instead of adding its own next to it.
    let shells = driver.execute(
        "return [document.querySelectorAll(\"nav[aria-label='Main']\").length, \
                document.querySelectorAll('#chat-input').length]",
        vec![],
    )?;
    ensure!(
        shells == serde_json::json!([1, 1]),
        "navigation bars and chat inputs in the page: {shells}"
    );
    let chat_screenshot = app.save_screenshot("chat")?;

    let settings_link = driver.wait_for("[data-testid='nav-settings']", UI_TIMEOUT)?;
    driver.click(&settings_link)?;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Settings")?;

    // These values come from `app_info` in Rust: the command ran and its answer reached the page.
    let version = driver.wait_for_text("[data-testid='about-version']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        version == env!("CARGO_PKG_VERSION"),
        "About shows version {version:?}"
    );
    let data_dir = driver.wait_for_text("[data-testid='about-data-dir']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        data_dir == app.data_dir().display().to_string(),
        "About shows data dir {data_dir:?}, the test gave {}",
        app.data_dir().display()
    );
    ensure!(
        app.data_dir().join("osprey.db").exists() || std::fs::read_dir(app.data_dir())?.count() > 0,
        "the core wrote nothing in its data dir {}",
        app.data_dir().display()
    );
    let tools = driver.wait_for_text("[data-testid='about-tool-count']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        tools
            .split(':')
            .next()
            .is_some_and(|n| n.trim().parse::<usize>().is_ok()),
        "tool count reads {tools:?}"
    );

    // The capability grants the page Osprey's commands and nothing more: a shell plugin command
    // (registered, but not granted) must be refused by Tauri's ACL.
    let outcome = |command: &str| {
        driver.execute_async(
            "const [command, done] = arguments; \
             window.__TAURI_INTERNALS__.invoke(command, { path: 'https://example.com' }) \
               .then(() => done('allowed'), (error) => done('denied: ' + String(error)));",
            vec![command.into()],
        )
    };
    let app_info = outcome("app_info")?;
    ensure!(app_info == "allowed", "app_info from the page: {app_info}");
    let shell_open = outcome("plugin:shell|open")?;
    ensure!(
        shell_open.as_str().is_some_and(|o| o.starts_with("denied")),
        "plugin:shell|open from the page: {shell_open}"
    );

    // Settings > Model: choose an OpenAI-compatible local server; what chat will use updates,
    // and the choice is stored in the core's settings.
    driver.wait_for("[data-testid='model-settings']", UI_TIMEOUT)?;
    let openai = driver.wait_for("[data-testid='provider-openai']", UI_TIMEOUT)?;
    driver.click(&openai)?;
    let base_url = driver.wait_for("[data-testid='provider-base-url']", UI_TIMEOUT)?;
    driver.send_keys(&base_url, "http://127.0.0.1:9/v1")?;
    let save = driver.wait_for("[data-testid='provider-save']", UI_TIMEOUT)?;
    driver.click(&save)?;
    driver.wait_for_text("[data-testid='chat-uses']", UI_TIMEOUT, |text| {
        text == "Chat uses openai gpt-4.1-mini."
    })?;
    let stored = osprey_db::Database::open_in(app.data_dir())?
        .settings()
        .get("providers")?
        .unwrap_or_default();
    ensure!(
        stored["default"] == "openai" && stored["openai"]["base_url"] == "http://127.0.0.1:9/v1",
        "stored provider settings: {stored}"
    );

    let settings_screenshot = app.save_screenshot("settings")?;
    let (width, height) = png_dimensions(&std::fs::read(&settings_screenshot)?)?;
    ensure!(
        width >= 400 && height >= 300,
        "screenshot is {width}x{height}"
    );
    eprintln!(
        "screenshots: {} and {}",
        chat_screenshot.display(),
        settings_screenshot.display()
    );
    Ok(())
}

#[test]
fn a_core_that_cannot_open_is_shown_not_fatal() -> Result<()> {
    // A regular file where the data directory should be: the core cannot open, the window must.
    let blocker = tempfile::NamedTempFile::new()?;
    let app = DesktopApp::launch_with(
        "desktop_core_error",
        LaunchOptions {
            data_dir: Some(blocker.path().to_path_buf()),
            ..LaunchOptions::default()
        },
    )?;
    let banner = app
        .driver
        .wait_for_text("[data-testid='core-error']", UI_TIMEOUT, |t| !t.is_empty())?;
    ensure!(
        banner.contains("did not start"),
        "core error banner reads {banner:?}"
    );
    app.save_screenshot("core-error")?;
    Ok(())
}
