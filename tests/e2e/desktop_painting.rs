//! Osprey's windows on a machine without a GPU (src-tauri/src/rendering.rs): this Xvfb has no
//! render node, so the chat window paints on the CPU (WebKit's hardware acceleration off). The
//! page must paint and take a person's real keyboard input (XTest, through the `osprey` CLI's
//! desktop tool) as on the GPU path. WebDriver only reads here: WebKitGTK's automation does not
//! answer simulated input with acceleration off (tests/processes.rs).

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use osprey_tests::{DesktopApp, LaunchOptions, cli_binary, wait_until};
use serde_json::json;

const UI_TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn without_a_gpu_the_window_paints_on_the_cpu_and_takes_real_typing() -> Result<()> {
    // The machine's own choice (no render node here), not the harness's override.
    let app = DesktopApp::launch_with(
        "desktop_painting_cpu",
        LaunchOptions {
            data_dir: None,
            env: vec![("OSPREY_WEBVIEW_GPU".into(), String::new())],
        },
    )?;
    ensure!(
        !std::path::Path::new("/dev/dri").exists(),
        "this machine has a GPU: the test is for one without"
    );
    app.driver
        .wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;
    let driver = &app.driver;
    // A person types into the chat box: real key events from the X server (XTest).
    driver.execute(
        "document.querySelector(\"[data-testid='chat-input']\").focus(); return true;",
        vec![],
    )?;
    let cli_data = tempfile::tempdir()?;
    let typed = std::process::Command::new(cli_binary())
        .arg("--data-dir")
        .arg(cli_data.path())
        .args(["tool", "desktop", "--policy", "full"])
        .arg(json!({"resource": "input", "action": "type", "text": "typed by hand"}).to_string())
        .env("DISPLAY", app.display())
        .env("DBUS_SESSION_BUS_ADDRESS", app.bus_address())
        .env("OSPREY_SECRETS", "file")
        .env_remove("OSPREY_DATA_DIR")
        .output()
        .context("running osprey tool desktop")?;
    ensure!(
        typed.status.success(),
        "typing failed: {}{}",
        String::from_utf8_lossy(&typed.stdout),
        String::from_utf8_lossy(&typed.stderr)
    );
    wait_until("the typed text in the chat box", UI_TIMEOUT, || {
        Ok(driver.execute(
            "return document.querySelector(\"[data-testid='chat-input']\").value;",
            vec![],
        )? == "typed by hand")
    })?;
    // The page really painted it: a look at what a person sees.
    app.save_screenshot("typed-on-the-cpu-path")?;
    Ok(())
}
