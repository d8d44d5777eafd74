//! Osprey's windows painting on the CPU, as on a machine without a GPU (src-tauri/src/rendering.rs;
//! `OSPREY_WEBVIEW_GPU=off` makes the same choice on any machine). The page must paint and take
//! a person's real keyboard input (XTest, through the `osprey` CLI's desktop tool) as on the GPU
//! path. WebDriver only reads here: WebKitGTK's automation does not answer simulated input with
//! acceleration off (tests/processes.rs).

use std::time::Duration;

use anyhow::{Result, ensure};
use osprey_tests::{DesktopApp, LaunchOptions, cli_binary, run_with_input, wait_until};
use serde_json::json;

const UI_TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn painting_on_the_cpu_the_window_shows_and_takes_real_typing() -> Result<()> {
    let app = DesktopApp::launch_with(
        "desktop_painting_cpu",
        LaunchOptions {
            data_dir: None,
            env: vec![("OSPREY_WEBVIEW_GPU".into(), "off".into())],
        },
    )?;
    app.driver
        .wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;
    let driver = &app.driver;
    // A person types into the chat box: real key events from the X server (XTest).
    driver.execute(
        "document.querySelector(\"[data-testid='chat-input']\").focus(); return true;",
        vec![],
    )?;
    let cli_data = tempfile::tempdir()?;
    let typed = run_with_input(
        std::process::Command::new(cli_binary())
            .arg("--data-dir")
            .arg(cli_data.path())
            .args(["tool", "desktop", "--policy", "full"])
            .arg(
                json!({"resource": "input", "action": "type", "text": "typed by hand"}).to_string(),
            )
            .env("DISPLAY", app.display())
            .env("DBUS_SESSION_BUS_ADDRESS", app.bus_address())
            .env("OSPREY_SECRETS", "file")
            .env_remove("OSPREY_DATA_DIR"),
        "",
    );
    ensure!(
        typed.code == 0,
        "typing failed: {}{}",
        typed.stdout,
        typed.stderr
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
