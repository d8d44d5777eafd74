//! Settings > Accounts in the real desktop app under Xvfb, against a real CalDAV/CardDAV server
//! (Radicale on loopback, started by the test from `osprey_tests::servers`): a person fills the
//! calendar and contacts form, saves, presses Test and reads that it works with the calendar the
//! server has; the account is in the settings store (its password is not), and a wrong password
//! is said in words beside the account. Screenshots of the form and the states go to the test's
//! artifacts folder.
#![cfg(target_os = "linux")]

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use osprey_tests::servers::{RADICALE_PASSWORD, RADICALE_USER, Radicale};
use osprey_tests::{DesktopApp, LaunchOptions, WebDriver, wait_until};
use serde_json::json;

const UI_TIMEOUT: Duration = Duration::from_secs(30);

fn fill(driver: &WebDriver, testid: &str, text: &str) -> Result<()> {
    // The form's fields start empty (the password too, when editing).
    let field = driver.wait_for(&format!("[data-testid='{testid}']"), UI_TIMEOUT)?;
    driver.send_keys(&field, text)
}

/// Brings what `css` finds to the middle of the view, for the screenshots.
fn scroll_to(driver: &WebDriver, css: &str) -> Result<()> {
    driver.execute(
        "document.querySelector(arguments[0]).scrollIntoView({block: 'center'}); return true;",
        vec![css.into()],
    )?;
    Ok(())
}

fn click(driver: &WebDriver, css: &str) -> Result<()> {
    let element = driver.wait_for(css, UI_TIMEOUT)?;
    driver.click(&element)
}

/// The account's state and the test's words, once the state is `wanted`.
fn wait_for_state(driver: &WebDriver, account: &str, wanted: &str) -> Result<String> {
    let row = format!("[data-testid='dav-account-{account}']");
    driver.wait_for_text(
        &format!("{row} [data-testid='account-state']"),
        UI_TIMEOUT,
        |t| t == wanted,
    )?;
    let check = driver.wait_for(&format!("{row} [data-testid='account-check']"), UI_TIMEOUT)?;
    driver.text(&check)
}

#[test]
fn a_dav_account_added_in_settings_is_tested_against_a_real_server_and_stored() -> Result<()> {
    let Some(server) = Radicale::start("desktop_accounts") else {
        return Ok(());
    };
    server.make_collection(&format!("{RADICALE_USER}/work/"), "calendar", "Work");
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-accounts-")
        .tempdir()?;
    let app = DesktopApp::launch_with(
        "desktop_accounts",
        LaunchOptions {
            data_dir: Some(data.path().to_path_buf()),
            env: vec![("OSPREY_SECRETS".into(), "file".into())],
        },
    )?;
    let driver = &app.driver;
    driver.execute("window.location.hash = '#/settings'; return true;", vec![])?;
    driver.wait_for_text("main h1", UI_TIMEOUT, |t| t == "Settings")?;
    driver.wait_for("[data-testid='accounts-settings']", UI_TIMEOUT)?;
    scroll_to(driver, "[data-testid='accounts-settings']")?;

    click(driver, "[data-testid='dav-add']")?;
    fill(driver, "dav-name", "home")?;
    fill(driver, "dav-url", &server.url)?;
    fill(driver, "dav-username", RADICALE_USER)?;
    fill(driver, "dav-password", RADICALE_PASSWORD)?;
    scroll_to(driver, "[data-testid='dav-form']")?;
    app.save_screenshot("accounts-dav-form")?;
    click(driver, "[data-testid='dav-save']")?;

    // Saved, listed, and tested at once; then Test again by hand.
    let said = wait_for_state(driver, "home", "Works")?;
    click(
        driver,
        "[data-testid='dav-account-home'] [data-testid='account-test']",
    )?;
    let said_again = wait_for_state(driver, "home", "Works")?;
    scroll_to(driver, "[data-testid='accounts-settings']")?;
    app.save_screenshot("accounts-dav-works")?;
    for words in [&said, &said_again] {
        ensure!(
            words.contains("1 calendar (Work)") && words.contains(&server.url),
            "the test said: {words}"
        );
    }

    // In the settings store, without the password; the password is in the secret store.
    let mut stored = None;
    wait_until("the account in the settings store", UI_TIMEOUT, || {
        stored = osprey_db::Database::open_in(data.path())?
            .settings()
            .get("dav.accounts")?;
        Ok(stored.is_some())
    })?;
    let stored = stored.context("read above")?;
    ensure!(
        stored == json!({"home": {"kind": "dav", "url": server.url, "username": RADICALE_USER}}),
        "stored: {stored}"
    );

    // A wrong password: said in words beside the account.
    click(
        driver,
        "[data-testid='dav-account-home'] [data-testid='account-edit']",
    )?;
    fill(driver, "dav-password", "not-her-password")?;
    click(driver, "[data-testid='dav-save']")?;
    let said = wait_for_state(driver, "home", "Does not work")?;
    scroll_to(driver, "[data-testid='accounts-settings']")?;
    app.save_screenshot("accounts-dav-wrong-password")?;
    ensure!(
        said.contains("refused the sign-in as alice") && said.contains("password"),
        "a wrong password was reported as: {said}"
    );
    // The mail form: the servers suggested from the address, secure defaults.
    click(driver, "[data-testid='mail-add']")?;
    fill(driver, "mail-name", "work")?;
    fill(driver, "mail-email", "alice@example.org")?;
    // Leaving the address fills the empty server fields.
    fill(driver, "mail-display-name", "Alice")?;
    wait_until("the suggested IMAP server", UI_TIMEOUT, || {
        Ok(driver.execute(
            "return document.querySelector(\"[data-testid='mail-imap-host']\").value;",
            vec![],
        )? == json!("imap.example.org"))
    })?;
    scroll_to(driver, "[data-testid='mail-form']")?;
    app.save_screenshot("accounts-mail-form")?;
    Ok(())
}
