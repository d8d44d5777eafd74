//! Osprey accessible to its own agent, to screen readers and to the keyboard, in the real desktop
//! app under Xvfb:
//! - Osprey's own `see` (the screen crate's snapshot, what the agent's `desktop` tool and
//!   `osprey see` run) on Osprey's window lists the chat's and Settings' controls as actionable
//!   elements with their accessible names, read over AT-SPI from WebKitGTK's tree: every field of
//!   every Settings section (the Accounts forms too) by its label, never by its value, and the
//!   Apps page's controls with an app installed;
//! - Tab walks every control of the chat and Settings pages with a visible focus ring, and comes
//!   back round (no trap); the approval dialog keeps Tab inside itself and Esc denies;
//! - every visible text, placeholder and control edge on the chat (with a highlighted code block,
//!   a tool call and an error) and Settings pages meets WCAG AA, in the light and the dark theme,
//!   measured on the colours the page computes. Screenshots of both themes go to the artifacts.
//!
//! The accessibility bus: GTK asks the session bus for `org.a11y.Bus`, which D-Bus activates
//! (at-spi2-core's `at-spi-bus-launcher`, which starts `at-spi2-registryd`), so the harness's
//! private session bus is all it takes, as long as nothing sets `NO_AT_BRIDGE`.
//! Linux only: tauri-driver drives WebKitGTK here.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use osprey_screen::{DesktopConfig, SeeOptions, SeeTarget, Seen};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use osprey_tests::{DesktopApp, LaunchOptions, WebDriver, keys, wait_until};
use serde_json::json;

const UI_TIMEOUT: Duration = Duration::from_secs(30);

fn open_page(driver: &WebDriver, route: &str, heading: &str) -> Result<()> {
    driver.execute(
        "window.location.hash = arguments[0]; return true;",
        vec![format!("#/{route}").into()],
    )?;
    driver.wait_for_text("main h1", UI_TIMEOUT, |t| t == heading)?;
    Ok(())
}

fn send(driver: &WebDriver, text: &str) -> Result<()> {
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, text)?;
    let button = driver.wait_for("[data-testid='chat-send']", UI_TIMEOUT)?;
    driver.click(&button)
}

/// The X11 window of this launch: titled Osprey, and owned by the process started on this
/// test's data folder (other tests' Osprey windows may share the display).
fn osprey_window(app: &DesktopApp) -> Result<u64> {
    let desktop = osprey_screen::Desktop::new(config(app)).context("connecting to the display")?;
    let data_dir = app.data_dir().to_string_lossy().into_owned();
    let mut found = None;
    wait_until("Osprey's window", UI_TIMEOUT, || {
        found = desktop
            .capture()
            .windows()
            .unwrap_or_default()
            .into_iter()
            .filter(|w| w.title == "Osprey")
            .find(|w| {
                w.pid.is_some_and(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .map(|c| String::from_utf8_lossy(&c).contains(&data_dir))
                        .unwrap_or(false)
                })
            })
            .map(|w| w.id);
        Ok(found.is_some())
    })?;
    found.context("found above")
}

fn config(app: &DesktopApp) -> DesktopConfig {
    DesktopConfig {
        x11_display: Some(app.display().to_string()),
        session_bus_address: Some(app.bus_address().to_string()),
        ..DesktopConfig::default()
    }
}

/// Osprey's own `see` on its window, as the agent runs it, retried until `ready` accepts what it
/// lists (WebKit builds the page's accessible tree a moment after the page paints).
fn see_until(
    app: &DesktopApp,
    window: u64,
    name: &str,
    ready: impl Fn(&Seen) -> bool,
) -> Result<Seen> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let deadline = Instant::now() + UI_TIMEOUT;
    loop {
        let seen = runtime
            .block_on(osprey_screen::see_once(
                config(app),
                SeeTarget::WindowId(window),
                SeeOptions::default(),
            ))
            .context("Osprey's see on its own window")?;
        if ready(&seen) || Instant::now() > deadline {
            std::fs::write(
                app.artifacts().join(format!("{name}.png")),
                &seen.image.bytes,
            )?;
            std::fs::write(app.artifacts().join(format!("{name}.txt")), &seen.text)?;
            return Ok(seen);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A part of Settings to check: the element scrolled into view, the button that opens it (the
/// Accounts forms), the field a marker is typed into, and the (kind, name) pairs `see` must list.
type FieldGroup<'a> = (&'a str, Option<&'a str>, &'a str, &'a [(&'a str, &'a str)]);

/// Whether `see` lists an element of `kind` whose name is `name`.
fn lists(seen: &Seen, kind: &str, name: &str) -> bool {
    seen.snapshot
        .elements
        .iter()
        .any(|e| e.kind == kind && e.name == name)
}

fn check_listed(seen: &Seen, expected: &[(&str, &str)]) -> Result<()> {
    let missing: Vec<String> = expected
        .iter()
        .filter(|(kind, name)| !lists(seen, kind, name))
        .map(|(kind, name)| format!("{kind} {name:?}"))
        .collect();
    ensure!(
        missing.is_empty(),
        "Osprey's see does not list {missing:?}; it lists:\n{}",
        seen.text
    );
    let unnamed: Vec<String> = seen
        .snapshot
        .elements
        .iter()
        .filter(|e| e.name.trim().is_empty())
        .map(|e| e.line(true))
        .collect();
    ensure!(
        unnamed.is_empty(),
        "controls without an accessible name: {unnamed:?}\n{}",
        seen.text
    );
    Ok(())
}

#[test]
fn osprey_own_see_lists_the_chat_and_settings_controls_by_name() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-a11y-see-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let server = AnthropicServer::start(vec![ScriptedReply::text("Hello.")])?;
    server.use_as_provider(data.path(), work.path())?;
    // An installed app, so the Apps page has controls to name.
    let projects = tempfile::Builder::new()
        .prefix("osprey-e2e-a11y-apps-")
        .tempdir()?;
    osprey_tests::app_project(
        &projects.path().join("units"),
        &json!({"id": "units", "name": "Units", "version": "1.0.0",
            "description": "Converts units", "provides": ["tool:convert"]}),
        &osprey_tests::fixture_binary("osprey-fixture-unit-converter"),
    );
    std::fs::create_dir_all(data.path().join("apps"))?;
    osprey_apps::Installer::new(data.path().join("apps"))
        .sideload(&projects.path().join("units"))
        .context("sideloading the fixture app")?;
    let app = DesktopApp::launch_with(
        "desktop_a11y_see",
        LaunchOptions::with_test_model(data.path()),
    )?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;
    // A typed draft enables Send (a disabled button is not actionable).
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, "a draft")?;
    let window = osprey_window(&app)?;

    let chat_controls = [
        ("text field", "Message"),
        ("button", "Send"),
        ("button", "New chat"),
        ("text field", "Search chats"),
        ("combo box", "Model for this chat"),
        ("link", "Chat"),
        ("link", "Approvals"),
        ("link", "Store"),
        ("link", "Settings"),
    ];
    let seen = see_until(&app, window, "see-chat", |seen| {
        chat_controls.iter().all(|(k, n)| lists(seen, k, n))
    })?;
    check_listed(&seen, &chat_controls)?;
    // IDs are what the agent acts on: the send button's box lies inside the window.
    let send = seen
        .snapshot
        .elements
        .iter()
        .find(|e| e.kind == "button" && e.name == "Send")
        .context("Send listed above")?;
    ensure!(
        send.bounds.width > 0 && send.bounds.height > 0,
        "Send has no size: {}",
        send.line(true)
    );

    open_page(driver, "settings", "Settings")?;
    let settings_controls = [
        ("link", "Chat"),
        ("link", "Settings"),
        ("radio", "Dark"),
        ("radio", "Light"),
        ("radio", "Follow the system"),
        // Labelled by `for`: the name is the label alone, not the label and the value.
        ("text field", "Model"),
        ("text field", "Base URL (empty: the provider's own)"),
        ("button", "Save"),
    ];
    let seen = see_until(&app, window, "see-settings", |seen| {
        settings_controls.iter().all(|(k, n)| lists(seen, k, n))
    })?;
    check_listed(&seen, &settings_controls)?;
    ensure!(
        seen.snapshot.elements.len() >= 15,
        "Settings shows only {} controls to see:\n{}",
        seen.snapshot.elements.len(),
        seen.text
    );

    // Every field of every section, the Accounts forms included, named by its label and never
    // by its value: each group is scrolled into view (`see` lists what is visible), a marker is
    // typed into one of its fields, and no listed name may contain it.
    let groups: [FieldGroup; 10] = [
        (
            "persona-settings",
            None,
            "persona-vibe",
            &[
                ("text field", "Name"),
                ("text field", "Emoji"),
                ("text field", "Manner"),
                ("text field", "Personality"),
            ],
        ),
        (
            "policy-ask",
            None,
            "policy-allowlist",
            &[
                ("combo box", "When to ask"),
                ("text field", "Allowed commands"),
            ],
        ),
        (
            "tools-denied-paths",
            None,
            "tools-blocklist",
            &[
                ("text field", "Denied paths"),
                ("text field", "Command blocklist"),
            ],
        ),
        (
            "quota-key",
            None,
            "quota-key",
            &[
                ("text field", "Tool or action for a quota"),
                ("text field", "Calls per session"),
                ("text field", "Calls per day"),
                ("text field", "Failures"),
                ("text field", "Within (s)"),
                ("text field", "Cool-down (s)"),
            ],
        ),
        (
            "origin-new-entry",
            None,
            "origin-new-entry",
            &[
                ("combo box", "Source"),
                ("text field", "Tool, resource or action"),
            ],
        ),
        (
            "mcp-new-name",
            None,
            "mcp-new-command",
            &[
                ("text field", "Name"),
                ("text field", "Program"),
                ("text field", "Arguments"),
            ],
        ),
        (
            "store-url",
            None,
            "store-url",
            &[("text field", "Store address")],
        ),
        (
            "mail-form",
            Some("mail-add"),
            "mail-email",
            &[
                ("text field", "Name"),
                ("text field", "Email address"),
                ("text field", "Your name (shown beside the address)"),
                ("text field", "Username (empty: the address)"),
                ("text field", "IMAP server"),
                ("text field", "IMAP port"),
                ("combo box", "IMAP security"),
                ("text field", "SMTP server"),
                ("text field", "SMTP port"),
                ("combo box", "SMTP security"),
            ],
        ),
        (
            "mail-password",
            None,
            "mail-sent-folder",
            &[
                (
                    "text field",
                    "Sent folder (empty: the server keeps its own copy)",
                ),
                ("text field", "Password"),
            ],
        ),
        (
            "dav-form",
            Some("dav-add"),
            "dav-url",
            &[
                ("text field", "Name"),
                ("combo box", "Serves"),
                ("text field", "Server address"),
                ("text field", "Username"),
                ("text field", "Password"),
            ],
        ),
    ];
    for (index, (anchor, open, typed, expected)) in groups.iter().enumerate() {
        if let Some(button) = open {
            let button = driver.wait_for(&format!("[data-testid='{button}']"), UI_TIMEOUT)?;
            driver.click(&button)?;
        }
        let anchor = format!("[data-testid='{anchor}']");
        driver.wait_for(&anchor, UI_TIMEOUT)?;
        let marker = format!("zqmark{index}");
        let field = driver.wait_for(&format!("[data-testid='{typed}']"), UI_TIMEOUT)?;
        driver.send_keys(&field, &marker)?;
        driver.execute(
            "document.querySelector(arguments[0]).scrollIntoView({block: 'center'}); return true;",
            vec![anchor.into()],
        )?;
        let name = format!("see-settings-{index}");
        let seen = see_until(&app, window, &name, |seen| {
            expected.iter().all(|(k, n)| lists(seen, k, n))
        })?;
        check_listed(&seen, expected)?;
        let by_value: Vec<String> = seen
            .snapshot
            .elements
            .iter()
            .filter(|e| e.name.contains(&marker))
            .map(|e| e.line(true))
            .collect();
        ensure!(
            by_value.is_empty(),
            "fields named by their value ({marker}): {by_value:?}\n{}",
            seen.text
        );
    }

    // The Apps page: the installed app's controls, named.
    open_page(driver, "apps", "Apps")?;
    driver.wait_for_text(
        "[data-app-id='units'] [data-testid='app-state']",
        UI_TIMEOUT,
        |t| !t.is_empty(),
    )?;
    let apps_controls = [
        ("link", "Apps"),
        ("link", "Settings"),
        ("button", "Inspect calls"),
    ];
    let seen = see_until(&app, window, "see-apps", |seen| {
        apps_controls.iter().all(|(k, n)| lists(seen, k, n))
    })?;
    check_listed(&seen, &apps_controls)?;
    Ok(())
}

/// What has the keyboard focus: enough to tell a real control from a stray one, and whether a
/// focus ring shows, and at what contrast against what is behind it. A control with no test id
/// is named by its place among the body's elements (focusing a page's link loads that page's
/// chunk, which adds links to the head).
const FOCUSED: &str = r#"
const e = document.activeElement;
if (!e || e === document.body || e === document.documentElement) return null;
const a11y = window.__a11y;
const control = /^(a|button|input|select|textarea|summary)$/i.test(e.tagName)
  || (e.tabIndex >= 0 && !!e.getAttribute('role'));
// A control drawn by its label (a visually hidden radio in a segmented switch) shows its ring
// on the label.
const own = e.getBoundingClientRect();
const holder = (a11y.opacity(e) < 0.05 || own.width <= 1) ? (e.closest('label') || e.parentElement) : e;
const s = getComputedStyle(holder);
const r = holder.getBoundingClientRect();
const outline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 1;
const ring = outline || (s.boxShadow && s.boxShadow !== 'none');
const ringColour = outline ? s.outlineColor : s.boxShadow;
return {
  id: e.dataset.testid || e.id || (e.tagName + ':' + (e.getAttribute('aria-label') || e.textContent || '').trim().slice(0, 30)
    + '#' + [...document.body.querySelectorAll('*')].indexOf(e)),
  tag: e.tagName.toLowerCase(),
  control, ring, ringColour,
  ringContrast: a11y.ratio(a11y.parse(ringColour) || {r: 0, g: 0, b: 0, a: 1}, a11y.background(holder.parentElement || holder)),
  visible: r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth,
  inDialog: !!e.closest('[aria-modal="true"]'),
};
"#;

/// Colour helpers the page scripts share, installed as `window.__a11y`: CSS colour parsing, the
/// WCAG luminance and contrast formula, alpha blending, and the background actually painted
/// behind an element (its own and its ancestors' backgrounds, composited).
const HELPERS: &str = r#"
window.__a11y = (() => {
  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const channel = (c) => { c /= 255; return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const lum = (c) => 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const blend = (top, under) => ({
    r: top.r * top.a + under.r * (1 - top.a), g: top.g * top.a + under.g * (1 - top.a),
    b: top.b * top.a + under.b * (1 - top.a), a: 1,
  });
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let colour = { r: 255, g: 255, b: 255, a: 1 };
    for (const layer of layers.reverse()) colour = blend(layer, colour);
    return colour;
  };
  const opacity = (el) => { let o = 1; for (let e = el; e; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity); return o; };
  return { parse, ratio, blend, background, opacity };
})();
return true;
"#;

/// Every visible text, placeholder and control edge on the page, measured: returns the checks
/// made and the failures (WCAG AA: 4.5:1 text, 3:1 large text, 3:1 a control's edge or fill
/// against what surrounds it). Disabled controls are exempt, as WCAG exempts them.
const AUDIT: &str = r#"
const { parse, ratio, blend, background, opacity } = window.__a11y;
const failures = [];
let checked = 0;
const describe = (e) => (e.dataset.testid ? `[${e.dataset.testid}]` : e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : ''))
  + ' "' + (e.textContent || e.placeholder || '').trim().slice(0, 40) + '"';
const shown = (e) => {
  const r = e.getBoundingClientRect();
  if (r.width <= 1 || r.height <= 1) return false;
  // Off screen (the skip link until it has the focus) is not seen.
  if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) return false;
  const s = getComputedStyle(e);
  if (s.visibility !== 'visible' || s.display === 'none') return false;
  return opacity(e) > 0.05;
};
const disabled = (e) => !!e.closest(':disabled, [aria-disabled="true"]');
for (const e of document.querySelectorAll(`${arguments[0]} *`)) {
  if (!shown(e) || disabled(e) || e.closest('svg')) continue;
  const s = getComputedStyle(e);
  const bg = background(e);
  const ownText = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (ownText) {
    const fg = parse(s.color);
    const size = parseFloat(s.fontSize);
    const large = size >= 24 || (size >= 18.66 && parseInt(s.fontWeight, 10) >= 700);
    const need = large ? 3 : 4.5;
    const got = ratio(blend({ ...fg, a: fg.a * opacity(e) }, bg), bg);
    checked++;
    if (got < need) failures.push(`text ${describe(e)}: ${got.toFixed(2)} < ${need} (${s.color} on rgb(${bg.r|0}, ${bg.g|0}, ${bg.b|0}))`);
  }
  if (/^(input|textarea)$/i.test(e.tagName) && e.placeholder && !e.value) {
    const ph = parse(getComputedStyle(e, '::placeholder').color);
    if (ph) {
      const got = ratio(blend(ph, bg), bg);
      checked++;
      if (got < 4.5) failures.push(`placeholder ${describe(e)}: ${got.toFixed(2)} < 4.5 (${getComputedStyle(e, '::placeholder').color})`);
    }
  }
  const isControl = /^(button|select|textarea|input)$/i.test(e.tagName) && e.type !== 'hidden';
  if (isControl) {
    const around = background(e.parentElement);
    const fill = background(e);
    const border = parse(s.borderTopColor);
    const edge = parseFloat(s.borderTopWidth) > 0 && s.borderTopStyle !== 'none' && border ? ratio(blend(border, around), around) : 1;
    const filled = ratio(fill, around);
    // A button with neither edge nor fill is known by its text, checked above.
    const plain = e.tagName === 'BUTTON' && edge < 1.05 && filled < 1.05;
    checked++;
    if (!plain && Math.max(edge, filled) < 3) failures.push(`control ${describe(e)}: edge ${edge.toFixed(2)}, fill ${filled.toFixed(2)} < 3 (border ${s.borderTopColor})`);
  }
}
return { checked, failures };
"#;

fn install_helpers(driver: &WebDriver) -> Result<()> {
    driver.execute(HELPERS, vec![])?;
    Ok(())
}

/// Tabs from the top of the page until the focus comes back round, checking each stop. Returns
/// the ids of the controls reached, in order.
fn tab_round(driver: &WebDriver, page: &str) -> Result<Vec<String>> {
    install_helpers(driver)?;
    // The window has nothing to scroll: the page scrolls inside the shell, and an element
    // placed outside that scroll area (its containing block the window) would make the window
    // scrollable and let focus or a click pull the whole shell up.
    let window = driver.execute(
        "document.activeElement && document.activeElement.blur(); const d = document.scrollingElement; return [d.scrollHeight, d.clientHeight];",
        vec![],
    )?;
    ensure!(
        window[0].as_f64() <= window[1].as_f64(),
        "on {page}, the window itself can scroll (scroll height, height): {window}"
    );
    let mut reached: Vec<String> = Vec::new();
    let mut blanks = 0;
    for _ in 0..120 {
        driver.press_keys(&[], &[keys::TAB])?;
        // The page scrolls the focused control into view as it takes the focus; give a scroll
        // container a moment to get there.
        let mut focused = driver.execute(FOCUSED, vec![])?;
        for _ in 0..10 {
            if focused.is_null() || focused["visible"] == true {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
            focused = driver.execute(FOCUSED, vec![])?;
        }
        if focused.is_null() {
            // Past the last control the focus may rest on the page itself once before wrapping.
            blanks += 1;
            ensure!(
                blanks <= 2,
                "on {page}, Tab left the focus nowhere after {reached:?}"
            );
            continue;
        }
        let id = focused["id"].as_str().unwrap_or_default().to_string();
        ensure!(
            focused["control"] == true,
            "on {page}, Tab stopped on {focused}, which is not a control"
        );
        ensure!(
            focused["ring"] == true,
            "on {page}, {id} shows no focus ring: {focused}"
        );
        ensure!(
            focused["visible"] == true,
            "on {page}, the focus went to {id}, which is not on screen: {focused}"
        );
        let contrast = focused["ringContrast"].as_f64().unwrap_or_default();
        ensure!(
            contrast >= 3.0,
            "on {page}, {id}'s focus ring has contrast {contrast:.2} against its background: {focused}"
        );
        if reached.first() == Some(&id) {
            return Ok(reached);
        }
        ensure!(
            !reached.contains(&id),
            "on {page}, Tab went back to {id} before reaching the start again (a trap?): {reached:?}"
        );
        reached.push(id);
    }
    bail!("on {page}, Tab never came back round after {reached:?}")
}

#[test]
fn the_keyboard_reaches_every_control_with_a_visible_focus_and_dialogs_trap_it() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-a11y-keys-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let target = work.path().join("never-approved");
    let server = AnthropicServer::start(vec![
        ScriptedReply::text("Hello! Here is some code:\n\n```rust\nfn main() {}\n```\n"),
        ScriptedReply::call(
            "toolu_keys",
            "shell",
            json!({"resource": "bash", "action": "exec", "command": format!("touch {}", target.display())}),
        ),
        ScriptedReply::text("Understood, I will not."),
    ])?;
    server.use_as_provider(data.path(), work.path())?;
    let app = DesktopApp::launch_with(
        "desktop_a11y_keyboard",
        LaunchOptions::with_test_model(data.path()),
    )?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;
    send(driver, "Hello")?;
    driver.wait_for("[data-testid='code-copy']", UI_TIMEOUT)?;
    wait_until("the turn to end", UI_TIMEOUT, || {
        Ok(driver.find("[data-testid='chat-send']")?.is_some())
    })?;

    let chat = tab_round(driver, "the chat page")?;
    for wanted in [
        "chat-new",
        "chat-search",
        "chat-model",
        "chat-input",
        "nav-chat",
        "nav-settings",
        "code-copy",
    ] {
        ensure!(
            chat.iter().any(|id| id == wanted),
            "Tab never reached {wanted} on the chat page: {chat:?}"
        );
    }
    // The session row, its rename and delete buttons.
    ensure!(
        chat.iter().any(|id| id == "session-rename"),
        "Tab never reached a session's rename button: {chat:?}"
    );
    app.save_screenshot("chat-focus")?;

    open_page(driver, "settings", "Settings")?;
    let settings = tab_round(driver, "the Settings page")?;
    ensure!(
        settings.len() >= 15,
        "Tab reached only {} controls on Settings: {settings:?}",
        settings.len()
    );

    // The approval dialog keeps Tab (and Shift+Tab) inside, and Esc answers no.
    open_page(driver, "chat", "Chat")?;
    send(driver, "Please create the file")?;
    driver.wait_for(
        "[data-testid='approval-dialog'] [aria-modal='true']",
        UI_TIMEOUT,
    )?;
    wait_until("the dialog to take the focus", UI_TIMEOUT, || {
        Ok(driver.execute(FOCUSED, vec![])?["inDialog"] == true)
    })?;
    for (held, count) in [(vec![], 9), (vec![keys::SHIFT], 5)] {
        for _ in 0..count {
            driver.press_keys(&held, &[keys::TAB])?;
            let focused = driver.execute(FOCUSED, vec![])?;
            ensure!(
                focused["inDialog"] == true,
                "Tab left the approval dialog for {focused}"
            );
            ensure!(
                focused["ring"] == true,
                "no focus ring in the dialog: {focused}"
            );
        }
    }
    app.save_screenshot("approval-dialog-focus")?;
    driver.press_keys(&[], &[keys::ESCAPE])?;
    wait_until("the dialog to close", UI_TIMEOUT, || {
        Ok(driver.find("[data-testid='approval-dialog']")?.is_none())
    })?;
    wait_until("the denied call", UI_TIMEOUT, || {
        Ok(driver.execute(
            "const e = document.querySelector(\"[data-testid='chat-tool']\"); return e ? e.dataset.status : '';",
            vec![],
        )? == "failed")
    })?;
    ensure!(!target.exists(), "Esc should deny, yet the command ran");
    Ok(())
}

/// Runs the audit on the current page and fails with every pair under AA.
fn audit(driver: &WebDriver, what: &str) -> Result<u64> {
    audit_within(driver, "body", what)
}

/// The audit on what `root` (a CSS selector) holds: a dialog over a dimmed page.
fn audit_within(driver: &WebDriver, root: &str, what: &str) -> Result<u64> {
    install_helpers(driver)?;
    let result = driver.execute(AUDIT, vec![root.into()])?;
    let checked = result["checked"].as_u64().unwrap_or_default();
    let failures: Vec<String> = result["failures"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    ensure!(
        failures.is_empty(),
        "{what}: {} colour pairs under WCAG AA:\n{}",
        failures.len(),
        failures.join("\n")
    );
    Ok(checked)
}

#[test]
fn both_themes_meet_wcag_aa_on_the_rendered_pages() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-a11y-contrast-")
        .tempdir()?;
    let work = tempfile::Builder::new()
        .prefix("osprey-e2e-work-")
        .tempdir()?;
    let reply = "Here is **bold**, a [link](https://example.com), `inline code` and:\n\n\
        ```rust\n// A comment\nfn main() {\n    let name = \"Osprey\"; // string\n    println!(\"{name} {}\", 42);\n}\n```\n\n\
        ```diff\n- removed\n+ added\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> a quote";
    let server = AnthropicServer::start(vec![
        ScriptedReply::call(
            "toolu_contrast",
            "shell",
            json!({"resource": "bash", "action": "exec", "command": "true"}),
        ),
        ScriptedReply::text(reply),
    ])?;
    server.use_as_provider(data.path(), work.path())?;
    let app = DesktopApp::launch_with(
        "desktop_a11y_contrast",
        LaunchOptions::with_test_model(data.path()),
    )?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;
    send(driver, "Show me some code")?;
    // The dialog is measured too, then the call allowed so the transcript shows it finished.
    driver.wait_for("[data-testid='approval-dialog']", UI_TIMEOUT)?;
    audit_within(
        driver,
        "[data-testid='approval-dialog'] [aria-modal='true']",
        "the approval dialog, light theme",
    )?;
    let allow = driver.wait_for("[data-testid='approval-once']", UI_TIMEOUT)?;
    driver.click(&allow)?;
    driver
        .wait_for(".hljs-keyword", UI_TIMEOUT)
        .inspect_err(|_| {
            let _ = app.save_screenshot("no-highlighted-code");
        })?;
    wait_until("the turn to end", UI_TIMEOUT, || {
        Ok(driver.find("[data-testid='chat-send']")?.is_some())
    })?;
    // The tool call open, so its input and result are measured too.
    driver.execute(
        "document.querySelectorAll(\"[data-testid='chat-tool'], [data-testid='chat-thinking']\").forEach((d) => d.open = true); return true;",
        vec![],
    )?;

    for theme in ["light", "dark"] {
        driver.invoke("set_setting", json!({"key": "ui.theme", "value": theme}))?;
        wait_until(&format!("the {theme} theme"), UI_TIMEOUT, || {
            Ok(driver.execute("return document.documentElement.dataset.theme;", vec![])? == theme)
        })?;
        open_page(driver, "chat", "Chat")?;
        if driver.find(".hljs-keyword")?.is_none() {
            // Back from another page the chat opens empty: the session list brings it back.
            let session =
                driver.wait_for("[data-testid='chat-sessions'] button.session", UI_TIMEOUT)?;
            driver.click(&session)?;
            driver.wait_for(".hljs-keyword", UI_TIMEOUT)?;
            driver.execute(
                "document.querySelectorAll(\"[data-testid='chat-tool']\").forEach((d) => d.open = true); return true;",
                vec![],
            )?;
        }
        // A typed draft: Send enabled is measured, the placeholder of the search box too.
        let checked = audit(driver, &format!("the chat page, {theme} theme"))?;
        ensure!(
            checked >= 30,
            "only {checked} things measured on the chat page"
        );
        // Syntax colours are really applied: a keyword is not the body text's colour.
        let colours = driver.execute(
            "return [getComputedStyle(document.querySelector('.hljs-keyword')).color, \
                     getComputedStyle(document.querySelector('.markdown p')).color];",
            vec![],
        )?;
        ensure!(
            colours[0] != colours[1],
            "code keywords are not coloured: {colours}"
        );
        app.save_screenshot(&format!("chat-{theme}"))?;
        open_page(driver, "settings", "Settings")?;
        let checked = audit(driver, &format!("the Settings page, {theme} theme"))?;
        ensure!(checked >= 30, "only {checked} things measured on Settings");
        app.save_screenshot(&format!("settings-{theme}"))?;
        for (route, heading) in [("approvals", "Approvals"), ("store", "Store")] {
            open_page(driver, route, heading)?;
            audit(driver, &format!("the {heading} page, {theme} theme"))?;
            app.save_screenshot(&format!("{route}-{theme}"))?;
        }
    }
    Ok(())
}
