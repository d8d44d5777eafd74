//! An installed app's UI in the real desktop app: the Apps page shows the sideloaded fixture UI
//! app running (flagged as sideloaded), "Open" brings up its window on `osprey-app://<id>/`,
//! the page's static files load, its `fetch('/api/...')` reaches the app process, and the page
//! has no IPC to Osprey's commands, and the Apps page's inspector shows the call the page's fetch
//! became. Linux only (tauri-driver drives WebKitGTK).
#![cfg(target_os = "linux")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use osprey_tests::{DesktopApp, LaunchOptions, fixture_binary};
use serde_json::json;

const UI_TIMEOUT: Duration = Duration::from_secs(30);

fn project(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir.join("ui"))?;
    let manifest = json!({
        "id": "ui-panel", "name": "Panel", "version": "1.0.0",
        "description": "A fixture app with a UI", "provides": ["ui"],
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string())?;
    std::fs::write(dir.join("SKILL.md"), "# fixture\n")?;
    std::fs::write(
        dir.join("ui/index.html"),
        "<!doctype html><html><head><title>Panel</title><script src=\"app.js\"></script></head>\
         <body><h1 id=\"title\">Fixture panel</h1><p id=\"script\">script not run</p></body></html>",
    )?;
    std::fs::write(
        dir.join("ui/app.js"),
        "addEventListener('DOMContentLoaded', () => { document.getElementById('script').textContent = 'script ran'; });",
    )?;
    let binary = fixture_binary("osprey-fixture-ui-app");
    std::fs::copy(&binary, dir.join("binary")).context("copying the fixture binary")?;
    std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

#[test]
fn an_apps_ui_opens_in_its_own_window_and_reaches_its_api_only() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-appui-")
        .tempdir()?;
    let projects = tempfile::Builder::new()
        .prefix("osprey-e2e-project-")
        .tempdir()?;
    project(&projects.path().join("panel"))?;
    std::fs::create_dir_all(data.path().join("apps"))?;
    osprey_apps::Installer::new(data.path().join("apps"))
        .sideload(&projects.path().join("panel"))
        .context("sideloading the fixture")?;

    let app = DesktopApp::launch_with(
        "desktop_app_ui",
        LaunchOptions {
            data_dir: Some(data.path().to_path_buf()),
            env: vec![("OSPREY_SECRETS".into(), "file".into())],
        },
    )?;
    let driver = &app.driver;
    let main_window = driver.window_handle()?;
    let nav = driver.wait_for("[data-testid='nav-apps']", UI_TIMEOUT)?;
    driver.click(&nav)?;
    driver.wait_for_text(
        "[data-app-id='ui-panel'] [data-testid='app-state']",
        UI_TIMEOUT,
        |t| t == "Running",
    )?;
    let flags = driver.wait_for_text("[data-app-id='ui-panel']", UI_TIMEOUT, |t| {
        t.contains("Sideloaded")
    })?;
    ensure!(flags.contains("Panel"), "the app row reads {flags:?}");
    app.save_screenshot("apps-page")?;

    let open = driver.wait_for(
        "[data-app-id='ui-panel'] [data-testid='app-open-ui']",
        UI_TIMEOUT,
    )?;
    driver.click(&open)?;
    let deadline = Instant::now() + UI_TIMEOUT;
    let panel_window = loop {
        let handles = driver.window_handles()?;
        if let Some(handle) = handles.iter().find(|h| **h != main_window) {
            break handle.clone();
        }
        if Instant::now() > deadline {
            bail!("no app window opened (windows: {handles:?})");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    driver.switch_to_window(&panel_window)?;
    driver.wait_for_text("#title", UI_TIMEOUT, |t| t == "Fixture panel")?;
    driver.wait_for_text("#script", UI_TIMEOUT, |t| t == "script ran")?;
    let location = driver.execute("return window.location.href;", vec![])?;
    ensure!(
        location
            .as_str()
            .is_some_and(|l| l.starts_with("osprey-app://ui-panel/")),
        "the app window is at {location}"
    );

    // The app's own API, through the scheme, to the app process and back.
    let echoed = driver.execute_async(
        "const done = arguments[0]; \
         fetch('/api/echo?from=window', { method: 'POST', body: 'ping' }) \
           .then((r) => r.json()).then((j) => done(j), (e) => done('failed: ' + e));",
        vec![],
    )?;
    ensure!(
        echoed["path"] == "/echo" && echoed["query"] == "from=window" && echoed["body"] == "ping",
        "the app's API answered {echoed}"
    );
    // A path outside ui/ is not served.
    let escaped = driver.execute_async(
        "const done = arguments[0]; \
         fetch('/../manifest.json').then((r) => done(r.status), (e) => done('failed: ' + e));",
        vec![],
    )?;
    ensure!(escaped != 200, "a path outside ui/ was served ({escaped})");

    // The page cannot reach anything but its own app: a fetch to a loopback server (standing in
    // for the internet) is blocked by the content security policy, and the server sees nothing.
    let outside = std::net::TcpListener::bind("127.0.0.1:0")?;
    outside.set_nonblocking(true)?;
    let outside_url = format!("http://{}/", outside.local_addr()?);
    let blocked = driver.execute_async(
        "const [url, done] = arguments; \
         fetch(url).then((r) => done('reached: ' + r.status), (e) => done('blocked: ' + e));",
        vec![outside_url.clone().into()],
    )?;
    ensure!(
        blocked.as_str().is_some_and(|o| o.starts_with("blocked")),
        "fetch({outside_url}) from an app window: {blocked}"
    );
    ensure!(
        outside.accept().is_err(),
        "the outside server got a connection from the app window"
    );

    // No IPC: Osprey's commands are not granted to app windows.
    let ipc = driver.execute_async(
        "const done = arguments[0]; \
         const internals = window.__TAURI_INTERNALS__; \
         if (!internals) { done('no ipc'); return; } \
         internals.invoke('app_info').then(() => done('allowed'), (e) => done('denied: ' + String(e)));",
        vec![],
    )?;
    ensure!(
        ipc.as_str()
            .is_some_and(|o| o == "no ipc" || o.starts_with("denied")),
        "app_info from an app window: {ipc}"
    );
    app.save_screenshot("app-window")?;
    driver.switch_to_window(&main_window)?;

    // The gRPC inspector on the Apps page shows the call the window's fetch became, decoded.
    let inspect = driver.wait_for(
        "[data-app-id='ui-panel'] [data-testid='app-traffic-toggle']",
        UI_TIMEOUT,
    )?;
    driver.click(&inspect)?;
    let call = "[data-app-id='ui-panel'] [data-testid='app-traffic-call']\
                [data-method='osprey.app.v1.UIService/HandleRequest']";
    let line = driver.wait_for_text(call, UI_TIMEOUT, |t| t.contains("UIService/HandleRequest"))?;
    ensure!(line.contains("Ok"), "the call reads {line:?}");
    let summary = driver.wait_for(&format!("{call} summary"), UI_TIMEOUT)?;
    driver.click(&summary)?;
    let sent = driver.wait_for_text(
        &format!("{call} [data-testid='app-traffic-request']"),
        UI_TIMEOUT,
        |t| t.contains("\"path\": \"/echo\""),
    )?;
    ensure!(sent.contains("from=window"), "the request shown: {sent}");
    app.save_screenshot("apps-inspector")?;
    Ok(())
}
