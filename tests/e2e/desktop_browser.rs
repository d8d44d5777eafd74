//! The `native` browser profile in the real desktop app: the scripted model makes the agent
//! browse a page served on loopback in the app's own webview window (navigate, snapshot, click
//! by ref, fill, read text, evaluate with and without a promise, screenshot, list pages), and the
//! navigation policy holds: a metadata address is refused when asked for, a link the page offers
//! to it is refused when clicked, an image on a private address is refused by the guard proxy,
//! the page cannot reach the app's IPC, and a download link saves its file in the folder the
//! `web.downloads` setting names, not executable. With `web.native_windows: "hidden"` the same
//! works off screen.
//! Linux only: tauri-driver drives WebKitGTK here.
#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use osprey_tests::model_server::{AnthropicServer, ScriptedReply};
use osprey_tests::{DesktopApp, LaunchOptions, store_setting, wait_until};
use serde_json::{Value, json};

const UI_TIMEOUT: Duration = Duration::from_secs(30);
const TURN_TIMEOUT: Duration = Duration::from_secs(180);

const PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>Native test page</title></head>
<body>
<h1>Native browsing</h1>
<button id="change" onclick="document.getElementById('status').textContent = 'Clicked by the agent'">Change the text</button>
<p id="status">Not clicked yet</p>
<label>Your name <input id="name" type="text"></label>
<p id="echo"></p>
<a id="away" href="http://169.254.169.254/latest/meta-data/">Instance metadata</a>
<img alt="pixel" src="http://10.255.255.1/pixel.png" width="1" height="1">
<a id="file" href="/tool.sh" download>Get the tool</a>
<label>Attachment <input id="upload" type="file"></label>
<script>
document.cookie = 'osprey_login=kept; max-age=3600; path=/';
document.getElementById('name').addEventListener('input', (e) => {
  document.getElementById('echo').textContent = 'Hello, ' + e.target.value;
});
// What the button's click and the text field's key presses were: a person's (trusted) or a
// script's.
document.getElementById('change').addEventListener('click', (e) => { window.clickTrusted = e.isTrusted; });
document.getElementById('change').addEventListener('mouseover', (e) => {
  if (window.hoverTrusted === undefined) window.hoverTrusted = e.isTrusted;
});
window.keysSeen = [];
document.getElementById('name').addEventListener('keydown', (e) => {
  window.keysSeen.push((e.isTrusted ? 'trusted ' : 'synthetic ') + e.key);
});
// A hostile page: it replaces the builtins Osprey's page script uses and tries to replace the
// script itself; the native profile captured the first and defined the second before it ran.
JSON.stringify = () => '{"ok": "forged"}';
try { window.__osprey = { run: () => '{"ok": {"text": "forged"}}' }; } catch (_) {}
try { window.__osprey_native = { run: () => '{"v": "forged"}' }; } catch (_) {}
</script>
</body></html>"#;

/// What the page's download link serves.
const TOOL: &str = "#!/bin/sh\necho downloaded\n";

/// A loopback HTTP server answering every request with the test page; it records the request
/// heads it saw.
fn serve_page() -> Result<(String, Arc<Mutex<Vec<String>>>)> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding the page server")?;
    let url = format!("http://{}/page.html", listener.local_addr()?);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
                match stream.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            log.lock()
                .expect("log lock")
                .push(String::from_utf8_lossy(&head).into_owned());
            let (status, kind, body) = if head.starts_with(b"GET /page.html") {
                ("200 OK", "text/html; charset=utf-8", PAGE)
            } else if head.starts_with(b"GET /tool.sh") {
                (
                    "200 OK",
                    "application/x-sh\r\nContent-Disposition: attachment; filename=tool.sh",
                    TOOL,
                )
            } else {
                ("404 Not Found", "text/html; charset=utf-8", "not here")
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    Ok((url, seen))
}

/// The tool results of the turn, by tool call id, as the model received them.
fn tool_results(request: &Value) -> HashMap<String, (bool, Vec<Value>)> {
    let mut out = HashMap::new();
    for message in request["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                let id = block["tool_use_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let is_error = block["is_error"].as_bool().unwrap_or(false);
                let content = block["content"].as_array().cloned().unwrap_or_default();
                out.insert(id, (is_error, content));
            }
        }
    }
    out
}

fn text_of(content: &[Value]) -> String {
    content
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The X windows of the display whose title (`_NET_WM_NAME`) contains `part`.
fn windows_titled(display: &str, part: &str) -> Result<Vec<u32>> {
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::ConnectionExt;
    let (conn, screen) = x11rb::connect(Some(display)).context("connecting to the display")?;
    let root = conn.setup().roots[screen].root;
    let name = conn.intern_atom(false, b"_NET_WM_NAME")?.reply()?.atom;
    let utf8 = conn.intern_atom(false, b"UTF8_STRING")?.reply()?.atom;
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(window) = queue.pop() {
        let Ok(title) = conn
            .get_property(false, window, name, utf8, 0, 1024)?
            .reply()
        else {
            continue;
        };
        if String::from_utf8_lossy(&title.value).contains(part) {
            found.push(window);
        }
        if let Ok(tree) = conn.query_tree(window)?.reply() {
            queue.extend(tree.children);
        }
    }
    Ok(found)
}

/// Asks `window` to close as a window manager does when the person clicks its close button
/// (ICCCM `WM_DELETE_WINDOW`).
fn close_like_a_person(display: &str, window: u32) -> Result<()> {
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::{ClientMessageEvent, ConnectionExt, EventMask};
    let (conn, _) = x11rb::connect(Some(display)).context("connecting to the display")?;
    let protocols = conn.intern_atom(false, b"WM_PROTOCOLS")?.reply()?.atom;
    let delete = conn.intern_atom(false, b"WM_DELETE_WINDOW")?.reply()?.atom;
    let event = ClientMessageEvent::new(
        32,
        window,
        protocols,
        [delete, x11rb::CURRENT_TIME, 0, 0, 0],
    );
    conn.send_event(false, window, EventMask::NO_EVENT, event)?;
    conn.flush()?;
    Ok(())
}

/// Starts the app on `data` with the scripted model, the `full` policy (no approval dialogs)
/// and loopback pages allowed (the test page), and sends `message` from the chat.
fn ask_to_browse(
    data: &std::path::Path,
    server: &AnthropicServer,
    test: &str,
    message: &str,
) -> Result<DesktopApp> {
    server.use_as_provider(data, data)?;
    store_setting(data, "policy", json!({"level": "full"}))?;
    store_setting(data, "web.allow_loopback", json!(true))?;
    let app = DesktopApp::launch_with(test, LaunchOptions::with_test_model(data))?;
    let driver = &app.driver;
    driver.wait_for_text("main h1", UI_TIMEOUT, |text| text == "Chat")?;
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, message)?;
    let button = driver.wait_for("[data-testid='chat-send']", UI_TIMEOUT)?;
    driver.click(&button)?;
    Ok(app)
}

fn browse(id: &str, input: Value) -> ScriptedReply {
    let mut input = input;
    input["resource"] = json!("browser");
    input["profile"] = json!("native");
    ScriptedReply::call(id, "web", input)
}

#[test]
fn the_agent_browses_in_the_native_profile_within_the_navigation_policy() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-browser-")
        .tempdir()?;
    let (page, page_requests) = serve_page()?;
    let server = AnthropicServer::start(vec![
        browse("nav", json!({"action": "navigate", "url": page})),
        browse("snap", json!({"action": "snapshot"})),
        browse("hover", json!({"action": "hover", "ref": "e2"})),
        browse("click", json!({"action": "click", "ref": "e2"})),
        browse("upload", json!({"action": "click", "selector": "#upload"})),
        browse(
            "fill",
            json!({"action": "fill", "ref": "e3", "value": "Osprey"}),
        ),
        browse(
            "type",
            json!({"action": "type", "ref": "e3", "text": " & Co"}),
        ),
        browse("press", json!({"action": "press", "key": "Backspace"})),
        browse(
            "keys",
            json!({"action": "evaluate", "script": "({value: document.getElementById('name').value, keys: window.keysSeen, hover: window.hoverTrusted, click: window.clickTrusted, active: navigator.userActivation ? navigator.userActivation.hasBeenActive : 'unknown'})"}),
        ),
        browse("text", json!({"action": "text"})),
        browse(
            "eval",
            json!({"action": "evaluate", "script": "document.getElementById('status').textContent"}),
        ),
        browse(
            "promise",
            json!({"action": "evaluate", "script": "new Promise((r) => setTimeout(() => r({late: 6 * 7}), 200))"}),
        ),
        browse(
            "permissions",
            json!({"action": "evaluate", "script": "new Promise((r) => navigator.geolocation.getCurrentPosition(() => r('granted'), (e) => r('refused ' + e.code), {timeout: 4000}))"}),
        ),
        browse("shot", json!({"action": "screenshot"})),
        browse("full", json!({"action": "screenshot", "full_page": true})),
        browse(
            "metadata",
            json!({"action": "navigate", "url": "http://169.254.169.254/latest/meta-data/"}),
        ),
        browse("link", json!({"action": "click", "ref": "e4"})),
        browse("download", json!({"action": "click", "selector": "#file"})),
        browse(
            "ipc",
            json!({"action": "evaluate", "script": "(async () => { const t = window.__TAURI_INTERNALS__; if (!t) return 'no ipc'; try { await t.invoke('app_info'); return 'reached'; } catch (e) { return 'refused: ' + e; } })()"}),
        ),
        browse("pages", json!({"action": "list_pages"})),
        ScriptedReply::text("Done browsing."),
        // The second turn, after the person closed the window.
        browse("after", json!({"action": "list_pages"})),
        ScriptedReply::text("Your window is closed."),
    ])?;
    let downloads = data.path().join("Downloads");
    store_setting(
        data.path(),
        "web.downloads",
        json!(downloads.display().to_string()),
    )?;
    let app = ask_to_browse(
        data.path(),
        &server,
        "desktop_browser",
        "Look at my test page",
    )?;
    let driver = &app.driver;

    let started = Instant::now();
    loop {
        if server.remaining() == 2 {
            break;
        }
        if started.elapsed() > TURN_TIMEOUT {
            let _ = app.save_screenshot("browser-turn-stuck");
            let so_far = server
                .seen()
                .last()
                .map(|last| format!("{:#?}", tool_results(last)))
                .unwrap_or_default();
            bail!(
                "the turn did not finish: {} replies left; the results so far: {so_far}",
                server.remaining(),
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    app.save_screenshot("native-browsing")?;
    // Each call's card says what it did, not only which tool it was.
    let cards = driver.execute(
        "return [...document.querySelectorAll(\"[data-testid='chat-tool-what']\")].map((e) => e.textContent.trim());",
        vec![],
    )?;
    let cards: Vec<String> = serde_json::from_value(cards)?;
    ensure!(
        cards
            .first()
            .is_some_and(|c| c.starts_with("browser navigate http://127.0.0.1:"))
            && cards.iter().any(|c| c == "browser click #upload"),
        "the tool cards: {cards:?}"
    );
    let last = server.seen().pop().context("the model saw no request")?;
    let results = tool_results(&last);
    let result = |id: &str| -> Result<(bool, String, Vec<Value>)> {
        let (is_error, content) = results
            .get(id)
            .cloned()
            .with_context(|| format!("no result for {id} in {last}"))?;
        Ok((is_error, text_of(&content), content))
    };

    let (error, nav, _) = result("nav")?;
    ensure!(!error, "navigate failed: {nav}");
    ensure!(
        nav.contains("Title: Native test page") && nav.contains("Change the text"),
        "navigate did not return the page's snapshot: {nav}"
    );
    // Subresources go through the guard proxy too: the private address of the image.
    ensure!(
        nav.contains("10.255.255.1"),
        "the image on a private address was not refused by the proxy: {nav}"
    );

    let (error, snap, _) = result("snap")?;
    ensure!(!error, "snapshot failed: {snap}");
    ensure!(
        snap.contains("\ne2 button \"Change the text\""),
        "the snapshot lacks the button's ref: {snap}"
    );
    ensure!(
        snap.contains("\ne3 textbox \"Your name\"") && snap.contains("\ne4 "),
        "the snapshot lacks the text field's ref: {snap}"
    );

    let (error, click, _) = result("click")?;
    ensure!(!error && click.contains("Clicked"), "click: {click}");
    // A trusted click on a file input would open a file chooser in the person's way: it is
    // cancelled and reported.
    let (error, upload, _) = result("upload")?;
    ensure!(
        !error && upload.contains("a file chooser (the native profile uploads no files)"),
        "upload: {upload}"
    );
    let (error, fill, _) = result("fill")?;
    ensure!(!error && fill.contains("Osprey"), "fill: {fill}");
    // Hovering, clicking, typing and key presses arrive as a person's input would (GTK events
    // of the page's window): trusted, with a user activation, shifted characters included, and
    // WebKit's own editing handles the keys.
    let (error, typed, _) = result("type")?;
    ensure!(!error, "type: {typed}");
    let (error, pressed, _) = result("press")?;
    ensure!(!error, "press: {pressed}");
    let (error, keys, _) = result("keys")?;
    ensure!(!error, "keys: {keys}");
    ensure!(
        keys.contains(r#""value":"Osprey & C""#)
            && keys.contains(
                r#""keys":["trusted  ","trusted &","trusted  ","trusted C","trusted o","trusted Backspace"]"#
            )
            && keys.contains(r#""hover":true"#)
            && keys.contains(r#""click":true"#)
            && keys.contains(r#""active":true"#),
        "the hover, the click and the typed keys were not a person's: {keys}"
    );
    let (error, text, _) = result("text")?;
    ensure!(
        !error && text.contains("Clicked by the agent") && text.contains("Hello, Osprey & C"),
        "the page text does not show the click and the fill: {text}"
    );
    let (error, eval, _) = result("eval")?;
    ensure!(
        !error && eval.contains("\"Clicked by the agent\""),
        "evaluate: {eval}"
    );
    let (error, promise, _) = result("promise")?;
    ensure!(
        !error && promise.contains("{\"late\":42}"),
        "evaluate with a promise: {promise}"
    );
    // Pages are granted no permissions, and the agent is told what they asked for.
    let (error, permissions, _) = result("permissions")?;
    ensure!(
        !error
            && permissions.contains("\"refused 1\"")
            && permissions.contains("a page asked for the location: refused"),
        "permissions: {permissions}"
    );

    let (error, shot_text, shot) = result("shot")?;
    ensure!(!error, "screenshot failed: {shot_text}");
    let image = shot
        .iter()
        .find(|b| b["type"] == "image")
        .with_context(|| format!("the screenshot has no image: {shot_text}"))?;
    let encoded = image["source"]["data"].as_str().unwrap_or_default();
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, encoded)?;
    let (width, height) = osprey_tests::png_dimensions(&bytes)?;
    ensure!(
        width >= 600 && height >= 400,
        "the screenshot is {width}x{height}"
    );

    let (error, full, _) = result("full")?;
    ensure!(
        !error && full.contains("Full-page screenshot"),
        "full-page screenshot: {full}"
    );
    ensure!(
        !last.to_string().contains("forged"),
        "the page's replaced builtins reached a result"
    );

    let (error, metadata, _) = result("metadata")?;
    ensure!(
        error && metadata.contains("169.254.169.254"),
        "the metadata address was not refused: {metadata}"
    );
    let (_, link, _) = result("link")?;
    ensure!(
        link.contains("Blocked or answered by the browser's policy")
            && link.contains("169.254.169.254"),
        "the page's own navigation to the metadata address was not refused: {link}"
    );
    // The download link saved its file in the chosen folder, under its own name, not runnable.
    let (error, download, _) = result("download")?;
    ensure!(!error, "clicking the download link: {download}");
    let saved = downloads.join("tool.sh");
    wait_until("the download to land", UI_TIMEOUT, || {
        Ok(std::fs::read_to_string(&saved).is_ok_and(|text| text == TOOL))
    })?;
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&saved)?.permissions().mode();
        ensure!(mode & 0o111 == 0, "the download is executable ({mode:o})");
    }
    let (_, ipc, _) = result("ipc")?;
    ensure!(
        !ipc.contains("\"reached\"") && (ipc.contains("\"refused: ") || ipc.contains("\"no ipc\"")),
        "the page reached the app's IPC, or the call did not answer: {ipc}"
    );
    let (error, pages, _) = result("pages")?;
    ensure!(
        !error && pages.contains("browser-1") && pages.contains("Native test page"),
        "list_pages: {pages}"
    );
    // The page itself came through the guard proxy, which closes every connection after one
    // request and never forwards a Proxy-Connection header.
    let heads = page_requests.lock().expect("log lock").clone();
    ensure!(
        heads
            .iter()
            .any(|h| h.starts_with("GET /page.html") && h.contains("Connection: close")),
        "the page was not fetched through the guard proxy: {heads:?}"
    );
    // The person sees the page in a window of Osprey's browser, and closes it.
    let title = "Native test page — Osprey browser";
    let mut windows = Vec::new();
    wait_until("the browser window", UI_TIMEOUT, || {
        windows = windows_titled(app.display(), title)?;
        Ok(!windows.is_empty())
    })?;
    let mut asked = 0;
    wait_until("the browser window to close", UI_TIMEOUT, || {
        let open = windows_titled(app.display(), title)?;
        // As a person would click the close button again when nothing happens: once a second.
        if !open.is_empty() && asked % 20 == 0 {
            for window in &open {
                close_like_a_person(app.display(), *window)?;
            }
        }
        asked += 1;
        Ok(open.is_empty())
    })
    .with_context(|| {
        format!(
            "asked {asked} times to close {windows:?}; still there: {:?}",
            windows_titled(app.display(), title)
        )
    })?;
    let input = driver.wait_for("[data-testid='chat-input']", UI_TIMEOUT)?;
    driver.send_keys(&input, "I closed it")?;
    driver.click(&driver.wait_for("[data-testid='chat-send']", UI_TIMEOUT)?)?;
    wait_until(
        "the second turn",
        UI_TIMEOUT,
        || Ok(server.remaining() == 0),
    )?;
    let last = server.seen().pop().context("the model saw no request")?;
    let (error, after) = tool_results(&last)
        .get("after")
        .map(|(e, c)| (*e, text_of(c)))
        .context("no result for the list_pages after closing")?;
    ensure!(
        !error && after.contains("No pages are open"),
        "the driver did not notice the closed window: {after}"
    );

    // The profile's own folder under the data directory, where the page's lasting cookie (a
    // login, say) is kept for the next run.
    let cookies = data.path().join("browser/native/cookies");
    wait_until(
        "the page's cookie in the profile folder",
        UI_TIMEOUT,
        || {
            Ok(std::fs::read_to_string(&cookies)
                .map(|text| text.contains("osprey_login"))
                .unwrap_or(false))
        },
    )
    .with_context(|| format!("no cookie stored in {}", cookies.display()))?;
    Ok(())
}

/// The pid of the desktop app started on `data` (its command line names the data folder):
/// other tests' apps share the display.
fn app_pid(data: &std::path::Path) -> Result<u32> {
    let wanted = data.display().to_string();
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.first().is_some_and(|a| a.ends_with("osprey-desktop"))
            && args.iter().any(|a| a == &wanted)
        {
            return Ok(pid);
        }
    }
    bail!("no osprey-desktop runs on {wanted}")
}

/// The process that owns `window` (`_NET_WM_PID`).
fn window_pid(display: &str, window: u32) -> Result<Option<u32>> {
    use x11rb::protocol::xproto::{AtomEnum, ConnectionExt};
    let (conn, _) = x11rb::connect(Some(display)).context("connecting to the display")?;
    let atom = conn.intern_atom(false, b"_NET_WM_PID")?.reply()?.atom;
    let reply = conn
        .get_property(false, window, atom, AtomEnum::CARDINAL, 0, 1)?
        .reply()?;
    Ok(reply.value32().and_then(|mut values| values.next()))
}

/// Whether X maps `window` on screen (a hidden GTK window is unmapped or not created at all).
fn viewable(display: &str, window: u32) -> Result<bool> {
    use x11rb::protocol::xproto::{ConnectionExt, MapState};
    let (conn, _) = x11rb::connect(Some(display)).context("connecting to the display")?;
    let attributes = conn.get_window_attributes(window)?.reply()?;
    Ok(attributes.map_state == MapState::VIEWABLE)
}

#[test]
fn with_hidden_windows_the_agent_browses_off_screen() -> Result<()> {
    let data = tempfile::Builder::new()
        .prefix("osprey-e2e-hidden-")
        .tempdir()?;
    let (page, _) = serve_page()?;
    let server = AnthropicServer::start(vec![
        browse("nav", json!({"action": "navigate", "url": page})),
        browse("snap", json!({"action": "snapshot"})),
        browse("text", json!({"action": "text"})),
        browse("shot", json!({"action": "screenshot"})),
        // Typing reaches a page whose window is not on screen: WebKit takes no window-system
        // keys there, so they are the page's own (untrusted) key events.
        browse(
            "type",
            json!({"action": "type", "ref": "e3", "text": "Quiet"}),
        ),
        browse(
            "keys",
            json!({"action": "evaluate", "script": "({value: document.getElementById('name').value, trusted: window.keysSeen.every((k) => k.startsWith('trusted')), count: window.keysSeen.length})"}),
        ),
        ScriptedReply::text("Browsed unseen."),
    ])?;
    store_setting(data.path(), "web.native_windows", json!("hidden"))?;
    let app = ask_to_browse(
        data.path(),
        &server,
        "desktop_browser_hidden",
        "Look at my test page quietly",
    )?;
    wait_until("the turn", TURN_TIMEOUT, || Ok(server.remaining() == 0))?;

    let last = server.seen().pop().context("the model saw no request")?;
    let results = tool_results(&last);
    for id in ["nav", "snap", "text", "shot", "type", "keys"] {
        let (error, content) = results
            .get(id)
            .with_context(|| format!("no result for {id} in {last}"))?;
        ensure!(!error, "{id} failed off screen: {}", text_of(content));
    }
    let snap = text_of(&results["snap"].1);
    ensure!(
        snap.contains("\ne2 button \"Change the text\""),
        "the hidden page's snapshot: {snap}"
    );
    let keys = text_of(&results["keys"].1);
    ensure!(
        keys.contains(r#"{"value":"Quiet","trusted":false,"count":5}"#),
        "typing into the hidden page: {keys}"
    );
    ensure!(
        text_of(&results["text"].1).contains("Not clicked yet"),
        "the hidden page's text"
    );
    // The screenshot is of the page (drawn while the window was shown off screen), not blank.
    let shot = &results["shot"];
    let image = shot
        .1
        .iter()
        .find(|block| block["type"] == "image")
        .and_then(|block| block["source"]["data"].as_str())
        .with_context(|| format!("no screenshot of the hidden page: {}", text_of(&shot.1)))?;
    let bytes = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.decode(image)?
    };
    let saved = osprey_tests::artifacts_dir("desktop_browser_hidden")?.join("hidden-page.png");
    std::fs::write(&saved, &bytes)?;
    ensure!(
        bytes.len() > 2_000,
        "the hidden page's screenshot is {} bytes, blank? ({})",
        bytes.len(),
        saved.display()
    );
    // The page's window exists but is not on screen (GTK unmaps a hidden window on its next
    // main-loop turn, so this waits for it).
    let pid = app_pid(app.data_dir())?;
    let mut windows = Vec::new();
    for window in windows_titled(app.display(), "Osprey browser")? {
        if window_pid(app.display(), window)? == Some(pid) {
            windows.push(window);
        }
    }
    ensure!(!windows.is_empty(), "no browser window was made");
    // Whether every page's window is (`true`) or is not on screen.
    let on_screen = |wanted: bool| -> Result<bool> {
        for window in &windows {
            if viewable(app.display(), *window)? != wanted {
                return Ok(false);
            }
        }
        Ok(true)
    };
    wait_until("the browser window off screen", UI_TIMEOUT, || {
        on_screen(false)
    })
    .context("a browser window stays on screen although web.native_windows is hidden")?;
    app.save_screenshot("hidden-browsing")?;

    // Taking the browser over (the tray) brings the pages forward; handing it back hides them
    // again, as the setting says.
    app.driver
        .invoke("tray_action", json!({"id": "browser-control"}))?;
    wait_until("the pages shown for the take over", UI_TIMEOUT, || {
        on_screen(true)
    })
    .context("taking the browser over did not show its pages")?;
    app.driver
        .invoke("tray_action", json!({"id": "browser-control"}))?;
    wait_until("the pages hidden after the hand back", UI_TIMEOUT, || {
        on_screen(false)
    })
    .context("handing the browser back left its pages on screen")?;
    Ok(())
}
