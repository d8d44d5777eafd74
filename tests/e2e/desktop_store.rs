//! The Store and Approvals pages in the real desktop app. A store server runs in this process on
//! a loopback port (the real osprey-store, publishing the unit-converter fixture); the app is
//! pointed at it with `OSPREY_STORE_URL`. One test installs an app from the store through the
//! UI (its page, the permission prompt in plain words, progress, the result) and finds it on the
//! Apps page, then approves an update's new permission; another revokes a grant on the
//! Approvals page and sees the next matching call asked again; the last has the agent install an
//! app from chat, where the approval dialog shows what the Store page's prompt shows (name,
//! version, publisher, signer, permissions in plain words) and offers only Allow once and Deny.
//! The store's Skills tab installs a skill after naming its files, shows the newer version the
//! store pushed, and removes it.
//! Linux only (tauri-driver drives WebKitGTK).
#![cfg(target_os = "linux")]

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use osprey_apps::store_client::{Listing, StoreClient};
use osprey_store::{Store, StoreConfig};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use osprey_tests::{DesktopApp, LaunchOptions, WebDriver, app_project, fixture_binary, wait_until};
use osprey_types::{GrantDuration, GrantScope};
use serde_json::json;

const UI_TIMEOUT: Duration = Duration::from_secs(30);
const TOKEN: &str = "e2e-store-token";
const APP: &str = "com.example.units";

/// The store server on a loopback port, served by its own runtime until dropped.
struct ServedStore {
    runtime: tokio::runtime::Runtime,
    url: String,
    _dir: tempfile::TempDir,
}

impl ServedStore {
    fn start() -> Result<ServedStore> {
        let dir = tempfile::Builder::new()
            .prefix("osprey-e2e-store-")
            .tempdir()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let store = Store::open(StoreConfig {
            data_dir: dir.path().join("store"),
            admin_token: TOKEN.into(),
        })?;
        let listener =
            runtime.block_on(async { tokio::net::TcpListener::bind("127.0.0.1:0").await })?;
        let url = format!("http://{}", listener.local_addr()?);
        runtime.spawn(async move {
            let _ = store.serve(listener).await;
        });
        Ok(ServedStore {
            runtime,
            url,
            _dir: dir,
        })
    }

    /// A store that lists the unit converter (`APP` 1.0.0, asking for one network host).
    fn with_unit_converter() -> Result<ServedStore> {
        let store = ServedStore::start()?;
        store.publish(
            APP,
            "Unit Converter",
            "1.0.0",
            &["network:api.example.com"],
            listed("productivity", true),
        )?;
        Ok(store)
    }

    /// Publishes the unit converter as `id` at `version` with `permissions` (the store signs it).
    fn publish(
        &self,
        id: &str,
        name: &str,
        version: &str,
        permissions: &[&str],
        listing: Listing,
    ) -> Result<()> {
        let project = self._dir.path().join(format!("{id}-{version}"));
        let manifest = json!({
            "id": id, "name": name, "version": version,
            "description": "Converts lengths, weights and temperatures between units, offline.",
            "provides": ["tool:convert"], "permissions": permissions,
        });
        app_project(
            &project,
            &manifest,
            &fixture_binary("osprey-fixture-unit-converter"),
        );
        let mut package = Vec::new();
        osprey_apps::napp::pack(&project, &mut package)?;
        self.runtime
            .block_on(StoreClient::new(&self.url).publish_listed(package, TOKEN, &listing))?;
        Ok(())
    }

    /// Publishes a skill `name` at `version` (a SKILL.md and one script; the store signs it).
    fn publish_skill(&self, name: &str, version: &str) -> Result<()> {
        let folder = self._dir.path().join(format!("skill-{version}")).join(name);
        std::fs::create_dir_all(folder.join("scripts"))?;
        std::fs::write(
            folder.join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: Fills in PDF forms from a table\nlicense: MIT\n\
                 metadata:\n  author: Ana Lopez\n  version: \"{version}\"\n---\n# {name}\n\
                 Run scripts/fill.py with the form and the table.\n"
            ),
        )?;
        std::fs::write(folder.join("scripts/fill.py"), "print('filled')\n")?;
        let (archive, _) = osprey_apps::skill_package::pack_skill(&folder)?;
        self.runtime
            .block_on(StoreClient::new(&self.url).publish_skill(
                archive,
                TOKEN,
                &Listing::default(),
                None,
            ))?;
        Ok(())
    }
}

fn listed(category: &str, featured: bool) -> Listing {
    Listing {
        featured,
        category: Some(category.into()),
        publisher: Some("Example Co".into()),
    }
}

fn click(driver: &WebDriver, css: &str) -> Result<()> {
    let element = driver.wait_for(css, UI_TIMEOUT)?;
    driver.click(&element)
}

/// An attribute of the first element matching `css`, or `None`.
fn attribute(driver: &WebDriver, css: &str, name: &str) -> Result<Option<String>> {
    let value = driver.execute(
        "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null;",
        vec![css.into(), name.into()],
    )?;
    Ok(value.as_str().map(String::from))
}

fn wait_attribute(driver: &WebDriver, css: &str, name: &str, wanted: &str) -> Result<()> {
    wait_until(&format!("{css} [{name}={wanted}]"), UI_TIMEOUT, || {
        Ok(attribute(driver, css, name)?.as_deref() == Some(wanted))
    })
}

#[test]
fn an_app_installs_from_the_store_after_its_permission_prompt_and_an_update_is_approved()
-> Result<()> {
    let store = ServedStore::with_unit_converter()?;
    store.publish(
        "com.example.notes",
        "Quick Notes",
        "2.3.0",
        &["filesystem:read", "notification:send"],
        listed("productivity", true),
    )?;
    store.publish(
        "com.example.lint",
        "Lint Helper",
        "0.4.1",
        &[],
        listed("developer-tools", false),
    )?;
    let app = DesktopApp::launch_with(
        "desktop_store",
        LaunchOptions {
            data_dir: None,
            env: vec![
                ("OSPREY_STORE_URL".into(), store.url.clone()),
                ("OSPREY_SECRETS".into(), "file".into()),
            ],
        },
    )?;
    let driver = &app.driver;

    // The front page: featured apps, categories.
    click(driver, "[data-testid='nav-store']")?;
    let card = format!("[data-testid='store-featured'] [data-app-id='{APP}']");
    driver.wait_for_text(&card, UI_TIMEOUT, |t| t.contains("Unit Converter"))?;
    driver.wait_for_text("[data-testid='store-categories']", UI_TIMEOUT, |t| {
        t.contains("Productivity") && t.contains("Developer tools")
    })?;
    app.save_screenshot("store-home")?;

    // A category narrows the list.
    click(driver, "[data-category='developer-tools']")?;
    driver.wait_for_text("[data-testid='store-results']", UI_TIMEOUT, |t| {
        t.contains("Lint Helper") && !t.contains("Unit Converter")
    })?;
    click(driver, "[data-testid='store-categories'] button")?; // All
    driver.wait_for(&card, UI_TIMEOUT)?;

    // The app's page, its permission in plain words.
    click(driver, &format!("{card} button"))?;
    driver.wait_for_text("[data-testid='store-app-page'] h2", UI_TIMEOUT, |t| {
        t == "Unit Converter"
    })?;
    let permissions =
        driver.wait_for_text("[data-testid='store-permissions']", UI_TIMEOUT, |t| {
            !t.is_empty()
        })?;
    ensure!(
        permissions.contains("Connect to api.example.com over the internet"),
        "the app page explains {permissions:?}"
    );
    app.save_screenshot("store-app-page")?;

    // Install: the prompt lists what it may do; confirming downloads, verifies, reports.
    click(driver, "[data-testid='store-install']")?;
    let prompt = driver.wait_for_text("[data-testid='install-permissions']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        prompt.contains("Connect to api.example.com over the internet"),
        "the prompt says {prompt:?}"
    );
    ensure!(
        !app.data_dir().join("apps").join(APP).exists(),
        "installed before the person agreed"
    );
    app.save_screenshot("install-prompt")?;
    click(driver, "[data-testid='install-confirm']")?;
    wait_attribute(
        driver,
        "[data-testid='install-dialog']",
        "data-phase",
        "done",
    )?;
    let result = driver.wait_for_text("[data-testid='install-result']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        result.contains("Unit Converter 1.0.0 is installed"),
        "the result reads {result:?}"
    );
    app.save_screenshot("install-done")?;
    click(driver, "[data-testid='install-close']")?;
    wait_attribute(
        driver,
        "[data-testid='store-app-page']",
        "data-install-state",
        "installed",
    )?;

    // It is on the Apps page, and starts.
    click(driver, "[data-testid='nav-apps']")?;
    let row = format!("[data-app-id='{APP}']");
    driver.wait_for_text(
        &format!("{row} [data-testid='app-state']"),
        UI_TIMEOUT,
        |t| t == "Running",
    )?;
    app.save_screenshot("apps-after-install")?;

    // An update that adds a permission: highlighted in the prompt, staged, approved.
    store.publish(
        APP,
        "Unit Converter",
        "1.1.0",
        &["network:api.example.com", "filesystem:read"],
        Listing::default(),
    )?;
    click(driver, "[data-testid='nav-store']")?;
    click(driver, &format!("{card} button"))?;
    driver.wait_for_text("[data-testid='store-install']", UI_TIMEOUT, |t| {
        t == "Update"
    })?;
    driver.wait_for("[data-testid='store-update-adds']", UI_TIMEOUT)?;
    click(driver, "[data-testid='store-install']")?;
    let added = driver.wait_for_text(
        "[data-testid='install-permissions'] [data-added='true']",
        UI_TIMEOUT,
        |t| !t.is_empty(),
    )?;
    ensure!(
        added.contains("Read files on your computer") && added.contains("New"),
        "the new permission reads {added:?}"
    );
    app.save_screenshot("update-prompt")?;
    click(driver, "[data-testid='install-confirm']")?;
    wait_attribute(
        driver,
        "[data-testid='install-dialog']",
        "data-phase",
        "done",
    )?;
    wait_attribute(
        driver,
        "[data-testid='install-result']",
        "data-outcome",
        "pending_approval",
    )?;
    app.save_screenshot("update-pending")?;
    click(driver, "[data-testid='install-approve']")?;
    wait_until("the dialog to close", UI_TIMEOUT, || {
        Ok(driver.find("[data-testid='install-dialog']")?.is_none())
    })?;
    wait_attribute(
        driver,
        "[data-testid='store-app-page']",
        "data-install-state",
        "installed",
    )?;
    app.save_screenshot("update-approved")?;
    click(driver, "[data-testid='nav-apps']")?;
    driver.wait_for_text(&format!("{row} .version"), UI_TIMEOUT, |t| t == "1.1.0")?;
    ensure!(
        driver
            .find(&format!("{row} [data-testid='app-pending']"))?
            .is_none(),
        "the update still waits after approval"
    );
    Ok(())
}

/// Types into the chat box and presses Send.
fn send(driver: &WebDriver, text: &str) -> Result<()> {
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, text)?;
    click(driver, "[data-testid='chat-send']")
}

fn assistant_said(driver: &WebDriver, text: &str) -> Result<bool> {
    let said = driver.execute(
        "return Array.from(document.querySelectorAll(\"[data-testid='chat-assistant']\")).some((e) => e.textContent.trim() === arguments[0]);",
        vec![text.into()],
    )?;
    Ok(said.as_bool().unwrap_or(false))
}

#[test]
fn a_revoked_grant_makes_the_next_matching_call_ask_again() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-grants-")
        .tempdir()?;
    // Outside the data dir: the safeguard refuses writes into Osprey's own data.
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-granted-")
        .tempdir()?;
    let write = |name: &str| json!({"action": "write", "path": work.path().join(name).display().to_string(), "content": "hi"});
    let server = AnthropicServer::start(vec![
        ScriptedReply::call("toolu_granted", "file", write("first.txt")),
        ScriptedReply::text("Wrote first.txt."),
        ScriptedReply::call("toolu_asked", "file", write("second.txt")),
        ScriptedReply::text("Wrote second.txt."),
    ])?;
    let database = osprey_db::Database::open_in(data.path()).context("opening the database")?;
    database.settings().set(
        "providers",
        &json!({"default": "anthropic", "anthropic": {"base_url": server.url(), "model": "claude-test"}}),
    )?;
    let an_hour = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs() as i64
        + 3600;
    database.grants().add(
        &GrantScope::PathPrefix(work.path().display().to_string()),
        &GrantDuration::Until {
            unix_seconds: an_hour,
        },
        None,
    )?;
    drop(database);
    let app = DesktopApp::launch_with(
        "desktop_grants",
        LaunchOptions::with_test_model(data.path()),
    )?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;

    // Covered by the grant: it runs without a question.
    send(driver, "Write the first file")?;
    wait_until("the first answer", UI_TIMEOUT, || {
        ensure!(
            driver.find("[data-testid='approval-dialog']")?.is_none(),
            "a call the grant covers was asked"
        );
        assistant_said(driver, "Wrote first.txt.")
    })?;
    ensure!(
        work.path().join("first.txt").exists(),
        "the granted write did not run"
    );

    // The grant is listed; revoking it removes it.
    click(driver, "[data-testid='nav-approvals']")?;
    click(driver, "[data-testid='approvals-tab-grants']")?;
    let grant = driver.wait_for_text("[data-testid='grant']", UI_TIMEOUT, |t| {
        t.contains("files under")
    })?;
    ensure!(
        grant.contains(&work.path().display().to_string()) && grant.contains("Revoke"),
        "the grant reads {grant:?}"
    );
    app.save_screenshot("grants")?;
    click(driver, "[data-testid='grant-revoke']")?;
    driver.wait_for("[data-testid='grants-empty']", UI_TIMEOUT)?;

    // The trail shows the call the grant let through.
    click(driver, "[data-testid='approvals-tab-activity']")?;
    wait_until("the granted call in the trail", UI_TIMEOUT, || {
        Ok(driver
            .find("[data-testid='audit-row'][data-decision='allow:grant']")?
            .is_some())
    })?;
    app.save_screenshot("activity")?;

    // The next matching call asks again.
    click(driver, "[data-testid='nav-chat']")?;
    send(driver, "Write the second file")?;
    driver
        .wait_for_text(
            "[data-testid='approval-dialog'] [data-testid='approval-summary']",
            UI_TIMEOUT,
            |t| t.contains("second.txt"),
        )
        .inspect_err(|_| {
            let _ = app.save_screenshot("no-approval-dialog");
        })?;
    ensure!(
        !work.path().join("second.txt").exists(),
        "the write ran before anyone approved it"
    );
    app.save_screenshot("asked-again")?;
    click(
        driver,
        "[data-testid='approval-dialog'] [data-testid='approval-once']",
    )?;
    wait_until("the second answer", UI_TIMEOUT, || {
        assistant_said(driver, "Wrote second.txt.")
    })?;
    ensure!(work.path().join("second.txt").exists());

    // The trail has the question's answer too, and filters to it.
    click(driver, "[data-testid='nav-approvals']")?;
    click(driver, "[data-testid='approvals-tab-activity']")?;
    driver.wait_for("[data-testid='audit-outcome']", UI_TIMEOUT)?;
    driver.execute(
        "const select = document.querySelector(\"[data-testid='audit-outcome']\"); \
         select.value = 'approved'; select.dispatchEvent(new Event('change'));",
        vec![],
    )?;
    click(driver, "[data-testid='audit-apply']")?;
    wait_until("only the approved call", UI_TIMEOUT, || {
        let rows = driver.execute(
            "return Array.from(document.querySelectorAll(\"[data-testid='audit-row']\")).map((r) => r.dataset.decision);",
            vec![],
        )?;
        Ok(rows == json!(["ask:once"]))
    })?;
    app.save_screenshot("activity-approved")?;
    Ok(())
}

#[test]
fn the_agent_installs_from_the_store_only_after_a_dialog_showing_what_the_app_may_do() -> Result<()>
{
    let store = ServedStore::with_unit_converter()?;
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-agent-install-")
        .tempdir()?;
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_install",
            "store",
            json!({"resource": "apps", "action": "install", "id": APP}),
        ),
        ScriptedReply::text("Unit Converter is installed."),
    ])?;
    let database = osprey_db::Database::open_in(data.path()).context("opening the database")?;
    database.settings().set(
        "providers",
        &json!({"default": "anthropic", "anthropic": {"base_url": server.url(), "model": "claude-test"}}),
    )?;
    drop(database);
    let mut options = LaunchOptions::with_test_model(data.path());
    options
        .env
        .push(("OSPREY_STORE_URL".into(), store.url.clone()));
    let app = DesktopApp::launch_with("desktop_agent_install", options)?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;

    send(driver, "Install the unit converter from the store")?;
    let dialog = "[data-testid='approval-dialog']";
    driver
        .wait_for_text(
            &format!("{dialog} [data-testid='approval-details-title']"),
            UI_TIMEOUT,
            |t| t.contains("Unit Converter"),
        )
        .inspect_err(|_| {
            let _ = app.save_screenshot("no-install-dialog");
        })?;
    let version = driver.wait_for_text(
        &format!("{dialog} [data-testid='approval-version']"),
        UI_TIMEOUT,
        |t| !t.is_empty(),
    )?;
    ensure!(version == "1.0.0", "the dialog shows version {version:?}");
    let permissions = driver.wait_for_text(
        &format!("{dialog} [data-testid='approval-permissions']"),
        UI_TIMEOUT,
        |t| !t.is_empty(),
    )?;
    ensure!(
        permissions.contains("Connect to api.example.com over the internet"),
        "the dialog explains {permissions:?}"
    );
    ensure!(
        driver
            .find(&format!("{dialog} [data-testid='approval-signer']"))?
            .is_some(),
        "the dialog names who signed the package"
    );
    // An install is answered for this call only: no "always", no lasting grant.
    ensure!(
        driver
            .find(&format!("{dialog} [data-testid='approval-session']"))?
            .is_none(),
        "an install offered 'Always this session'"
    );
    ensure!(
        !data.path().join("apps").join(APP).exists(),
        "the app was installed before anyone answered"
    );
    app.save_screenshot("install-dialog")?;

    click(driver, &format!("{dialog} [data-testid='approval-once']"))?;
    wait_until("the agent's answer", UI_TIMEOUT, || {
        assistant_said(driver, "Unit Converter is installed.")
    })?;
    ensure!(
        data.path()
            .join("apps")
            .join(APP)
            .join("manifest.json")
            .is_file(),
        "the approved install is not on disk"
    );
    // The Apps page lists it.
    click(driver, "[data-testid='nav-apps']")?;
    driver.wait_for_text("main", UI_TIMEOUT, |t| t.contains("Unit Converter"))?;
    app.save_screenshot("installed-from-chat")?;
    Ok(())
}

#[test]
fn a_skill_installs_from_the_stores_skills_tab_after_showing_its_files_and_is_removed() -> Result<()>
{
    let store = ServedStore::start()?;
    store.publish_skill("pdf-forms", "1.0.0")?;
    let app = DesktopApp::launch_with(
        "desktop_store_skills",
        LaunchOptions {
            data_dir: None,
            env: vec![
                ("OSPREY_STORE_URL".into(), store.url.clone()),
                ("OSPREY_SECRETS".into(), "file".into()),
            ],
        },
    )?;
    let driver = &app.driver;
    let card = "[data-testid='store-skill'][data-skill='pdf-forms']";
    let installed = app.data_dir().join("skills/pdf-forms");

    click(driver, "[data-testid='nav-store']")?;
    click(driver, "[data-testid='store-tab-skills']")?;
    driver.wait_for_text(card, UI_TIMEOUT, |t| {
        t.contains("Fills in PDF forms") && t.contains("Ana Lopez")
    })?;

    // Install asks first, naming the files it adds; Cancel installs nothing.
    click(
        driver,
        &format!("{card} [data-testid='store-skill-install']"),
    )?;
    let files = driver.wait_for_text("[data-testid='skill-install-files']", UI_TIMEOUT, |t| {
        !t.is_empty()
    })?;
    ensure!(
        files.contains("SKILL.md") && files.contains("scripts/fill.py"),
        "the question lists {files:?}"
    );
    app.save_screenshot("skill-install-question")?;
    click(driver, "[data-testid='skill-install-cancel']")?;
    ensure!(!installed.exists(), "cancelled, yet installed");

    click(
        driver,
        &format!("{card} [data-testid='store-skill-install']"),
    )?;
    click(driver, "[data-testid='skill-install-confirm']")?;
    driver.wait_for_text("[data-testid='store-skill-notice']", UI_TIMEOUT, |t| {
        t.contains("Installed the skill pdf-forms 1.0.0")
    })?;
    driver.wait_for(
        &format!("{card} [data-testid='store-skill-remove']"),
        UI_TIMEOUT,
    )?;
    ensure!(
        installed.join("scripts/fill.py").is_file(),
        "the skill's files are not in the skills folder"
    );
    app.save_screenshot("skill-installed")?;

    // A new version in the store reaches this computer through the store's push; the tab,
    // opened again, shows it installed at that version.
    store.publish_skill("pdf-forms", "1.1.0")?;
    wait_until("the pushed update of the skill", UI_TIMEOUT, || {
        Ok(std::fs::read_to_string(installed.join("SKILL.md"))?.contains("\"1.1.0\""))
    })?;
    click(driver, "[data-testid='store-tab-apps']")?;
    click(driver, "[data-testid='store-tab-skills']")?;
    driver.wait_for_text(card, UI_TIMEOUT, |t| {
        t.contains("1.1.0") && t.contains("Installed") && !t.contains("available")
    })?;

    // Remove takes it off this computer.
    click(
        driver,
        &format!("{card} [data-testid='store-skill-remove']"),
    )?;
    driver.wait_for_text("[data-testid='store-skill-notice']", UI_TIMEOUT, |t| {
        t.contains("Removed the skill pdf-forms")
    })?;
    wait_until("the skill's folder to go", UI_TIMEOUT, || {
        Ok(!installed.exists())
    })?;
    driver.wait_for(
        &format!("{card} [data-testid='store-skill-install']"),
        UI_TIMEOUT,
    )?;
    Ok(())
}
