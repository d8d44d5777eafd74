//! A minimal W3C WebDriver client over plain HTTP/1.1: just what the suites use (sessions,
//! finding elements, text, clicks, scripts, screenshots). One short-lived connection per request
//! keeps it free of an HTTP stack. Requests deliberately carry no `Connection: close`: tauri-driver
//! forwards headers to WebKitWebDriver, which then closes the connection tauri-driver pools, and
//! the next forwarded command fails with "connection reset by peer".

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine;
use serde_json::{Value, json};

/// The key W3C WebDriver uses for element references.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long a single request may take (a new session launches the app).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// WebDriver's codes for keys that are not characters, for [`WebDriver::press_keys`].
pub mod keys {
    pub const TAB: &str = "\u{E004}";
    pub const SHIFT: &str = "\u{E008}";
    pub const CONTROL: &str = "\u{E009}";
    pub const ESCAPE: &str = "\u{E00C}";
    pub const ENTER: &str = "\u{E007}";
}

/// A reference to an element in the current page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Element(String);

/// A WebDriver session on one running app.
#[derive(Debug)]
pub struct WebDriver {
    port: u16,
    session: Option<String>,
}

/// An HTTP response: status and parsed JSON body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Value,
}

/// An error the driver answered with (the WebDriver spec's error object), kept typed so a caller
/// can tell one error code from another.
#[derive(Debug)]
pub struct WebDriverError {
    /// The request, as `METHOD path`.
    pub request: String,
    pub status: u16,
    /// The spec's error code, such as `stale element reference` or `no such element`.
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for WebDriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: HTTP {}: {} {}",
            self.request, self.status, self.code, self.message
        )
    }
}

impl std::error::Error for WebDriverError {}

/// Whether `error` is the driver saying the element it was asked about left the page (the page
/// replaced it between two requests).
fn is_stale(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<WebDriverError>()
        .is_some_and(|e| e.code == "stale element reference")
}

/// Sends one request to `127.0.0.1:port` and parses the JSON answer.
pub fn http_request(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Response> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .with_context(|| format!("connecting to 127.0.0.1:{port}"))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    stream.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    let payload = body.map(Value::to_string).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n"
    );
    if body.is_some() {
        request.push_str("Content-Type: application/json; charset=utf-8\r\n");
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", payload.len()));
    stream.write_all(request.as_bytes())?;
    stream.write_all(payload.as_bytes())?;
    stream.flush()?;

    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader
        .read_line(&mut status_line)
        .with_context(|| format!("{method} {path}: no answer within {REQUEST_TIMEOUT:?}"))?;
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| anyhow!("{method} {path}: not an HTTP response: {status_line:?}"))?;

    let mut content_length = None;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                content_length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.eq_ignore_ascii_case("chunked");
            }
        }
    }

    let raw = if chunked {
        read_chunked(&mut reader)?
    } else if let Some(length) = content_length {
        let mut buffer = vec![0; length];
        reader.read_exact(&mut buffer)?;
        buffer
    } else {
        let mut buffer = Vec::new();
        reader.read_to_end(&mut buffer)?;
        buffer
    };
    let body = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&raw).with_context(|| {
            format!(
                "{method} {path}: answer is not JSON: {}",
                String::from_utf8_lossy(&raw)
            )
        })?
    };
    Ok(Response { status, body })
}

fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line)?;
        let size_text = size_line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size_text, 16)
            .with_context(|| format!("bad chunk size {size_line:?}"))?;
        if size == 0 {
            return Ok(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
}

impl WebDriver {
    /// A client for the driver listening on `port`; no session yet.
    pub fn new(port: u16) -> WebDriver {
        WebDriver {
            port,
            session: None,
        }
    }

    /// Starts the Tauri app at `application` with `args` (through `tauri:options`).
    pub fn new_session(&mut self, application: &Path, args: &[String]) -> Result<()> {
        let capabilities = json!({
            "capabilities": {
                "alwaysMatch": {
                    "tauri:options": { "application": application, "args": args }
                }
            }
        });
        let value = self.send("POST", "/session", Some(&capabilities))?;
        let id = value["sessionId"]
            .as_str()
            .ok_or_else(|| anyhow!("new session: no sessionId in {value}"))?;
        self.session = Some(id.to_string());
        Ok(())
    }

    fn session_path(&self, rest: &str) -> Result<String> {
        let id = self
            .session
            .as_deref()
            .ok_or_else(|| anyhow!("no WebDriver session"))?;
        Ok(format!("/session/{id}{rest}"))
    }

    /// Sends a command and returns its `value`, turning WebDriver errors into `Err`.
    fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let response = http_request(self.port, method, path, body)?;
        let value = match response.body {
            Value::Object(mut map) => map.remove("value").unwrap_or(Value::Null),
            other => other,
        };
        if response.status >= 400 {
            return Err(WebDriverError {
                request: format!("{method} {path}"),
                status: response.status,
                code: value["error"].as_str().unwrap_or("error").to_string(),
                message: value["message"].as_str().unwrap_or_default().to_string(),
            }
            .into());
        }
        Ok(value)
    }

    fn session_command(&self, method: &str, rest: &str, body: Option<&Value>) -> Result<Value> {
        let path = self.session_path(rest)?;
        self.send(method, &path, body)
    }

    pub fn title(&self) -> Result<String> {
        let value = self.session_command("GET", "/title", None)?;
        Ok(value.as_str().unwrap_or_default().to_string())
    }

    /// The first element matching a CSS selector, if there is one now.
    pub fn find(&self, css: &str) -> Result<Option<Element>> {
        let body = json!({ "using": "css selector", "value": css });
        // WebKitWebDriver answers "stale element" to a search that runs while the page replaces
        // the nodes it matched (a Settings section re-rendering after a save); a moment later
        // the search finds the new ones.
        let mut attempts = 0;
        let value = loop {
            match self.session_command("POST", "/elements", Some(&body)) {
                Err(error) if attempts < 5 && is_stale(&error) => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
                other => break other?,
            }
        };
        Ok(value
            .as_array()
            .and_then(|elements| elements.first())
            .and_then(|element| element[ELEMENT_KEY].as_str())
            .map(|id| Element(id.to_string())))
    }

    /// Polls for an element until `timeout`; the error names the selector.
    pub fn wait_for(&self, css: &str, timeout: Duration) -> Result<Element> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(element) = self.find(css)? {
                return Ok(element);
            }
            if Instant::now() >= deadline {
                bail!("no element matches `{css}` after {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Polls until the element's text satisfies `accept`, returning that text.
    pub fn wait_for_text(
        &self,
        css: &str,
        timeout: Duration,
        accept: impl Fn(&str) -> bool,
    ) -> Result<String> {
        let deadline = Instant::now() + timeout;
        let mut last = String::new();
        loop {
            if let Some(element) = self.find(css)? {
                match self.text(&element) {
                    Ok(text) => {
                        last = text;
                        if accept(&last) {
                            return Ok(last);
                        }
                    }
                    // The page replaced the element between the two requests (a reply turns
                    // from plain text into rendered markdown): look it up again.
                    Err(error) if is_stale(&error) => {}
                    Err(error) => return Err(error),
                }
            }
            if Instant::now() >= deadline {
                bail!("`{css}` never showed the expected text (last: {last:?}) in {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn text(&self, element: &Element) -> Result<String> {
        let value = self.session_command("GET", &format!("/element/{}/text", element.0), None)?;
        Ok(value.as_str().unwrap_or_default().to_string())
    }

    pub fn click(&self, element: &Element) -> Result<()> {
        self.session_command(
            "POST",
            &format!("/element/{}/click", element.0),
            Some(&json!({})),
        )?;
        Ok(())
    }

    /// The handles of the session's open windows.
    pub fn window_handles(&self) -> Result<Vec<String>> {
        let value = self.session_command("GET", "/window/handles", None)?;
        Ok(value
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The handle of the window commands go to now.
    pub fn window_handle(&self) -> Result<String> {
        let value = self.session_command("GET", "/window", None)?;
        Ok(value.as_str().unwrap_or_default().to_string())
    }

    /// Sends the following commands to another window.
    pub fn switch_to_window(&self, handle: &str) -> Result<()> {
        self.session_command("POST", "/window", Some(&json!({ "handle": handle })))?;
        Ok(())
    }

    /// Types `text` into the element as keystrokes (WebDriver "Element Send Keys").
    pub fn send_keys(&self, element: &Element, text: &str) -> Result<()> {
        self.session_command(
            "POST",
            &format!("/element/{}/value", element.0),
            Some(&json!({ "text": text })),
        )?;
        Ok(())
    }

    /// Presses keys wherever the focus is (WebDriver "Perform Actions"), as a person at the
    /// keyboard does: each of `keys` goes down and up in turn while the `held` modifiers stay
    /// down. Keys are characters or WebDriver's key codes ([`keys`]).
    pub fn press_keys(&self, held: &[&str], keys: &[&str]) -> Result<()> {
        let mut actions = Vec::new();
        for modifier in held {
            actions.push(json!({"type": "keyDown", "value": modifier}));
        }
        for key in keys {
            actions.push(json!({"type": "keyDown", "value": key}));
            actions.push(json!({"type": "keyUp", "value": key}));
        }
        for modifier in held.iter().rev() {
            actions.push(json!({"type": "keyUp", "value": modifier}));
        }
        let body = json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]});
        self.session_command("POST", "/actions", Some(&body))?;
        Ok(())
    }

    /// Waits until the app's page (not the blank page a webview starts on) has loaded and the
    /// app's script has taken it over: the built page shows the chat view before its script runs
    /// (ui/src/prerender.ts), and `ui/src/main.ts` marks the root `data-app="running"` once the
    /// view works. Commands sent while the webview is still navigating fail with "no such
    /// frame", so those are retried.
    pub fn wait_for_page_load(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let script = "return [document.readyState, window.location.href, \
                      document.documentElement.dataset.app ?? null];";
        loop {
            let last = match self.execute(script, vec![]) {
                Ok(value) => {
                    let state = value[0].as_str().unwrap_or_default();
                    let href = value[1].as_str().unwrap_or_default();
                    let app = value[2].as_str().unwrap_or("not running");
                    if state == "complete"
                        && !href.is_empty()
                        && href != "about:blank"
                        && app == "running"
                    {
                        return Ok(());
                    }
                    format!("readyState {state}, at {href}, app {app}")
                }
                Err(error) => error.to_string(),
            };
            if Instant::now() >= deadline {
                bail!("the page did not load in {timeout:?} (last: {last})");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs a synchronous script in the page and returns its result.
    pub fn execute(&self, script: &str, args: Vec<Value>) -> Result<Value> {
        let body = json!({ "script": script, "args": args });
        self.session_command("POST", "/execute/sync", Some(&body))
    }

    /// The trimmed texts of every element matching `css`, in document order.
    pub fn texts(&self, css: &str) -> Result<Vec<String>> {
        let value = self.execute(
            "return Array.from(document.querySelectorAll(arguments[0])).map((e) => e.textContent);",
            vec![css.into()],
        )?;
        Ok(value
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|v| v.as_str().unwrap_or_default().trim().to_string())
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Runs an asynchronous script: it gets a callback as its last argument and the command
    /// returns the value passed to it.
    pub fn execute_async(&self, script: &str, args: Vec<Value>) -> Result<Value> {
        let body = json!({ "script": script, "args": args });
        self.session_command("POST", "/execute/async", Some(&body))
    }

    /// Runs a Tauri command from the page, as the UI does (what the tray's menu handler runs,
    /// for instance, which no WebDriver click can reach).
    pub fn invoke(&self, command: &str, args: Value) -> Result<Value> {
        let value = self.execute_async(
            "const done = arguments[arguments.length - 1]; \
             window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1]) \
               .then((v) => done({ok: v ?? null}), (e) => done({error: e}));",
            vec![command.into(), args],
        )?;
        match value.get("error") {
            Some(error) => bail!("{command} failed: {error}"),
            None => Ok(value.get("ok").cloned().unwrap_or(Value::Null)),
        }
    }

    /// Waits until the page has painted its current DOM: two animation frames, since the first
    /// callback runs before the frame that contains the latest changes is drawn.
    pub fn wait_for_paint(&self) -> Result<()> {
        self.execute_async(
            "const done = arguments[arguments.length - 1]; \
             requestAnimationFrame(() => requestAnimationFrame(() => done(true)));",
            vec![],
        )?;
        Ok(())
    }

    /// A PNG of the window's viewport, taken once the current DOM has been painted.
    pub fn screenshot(&self) -> Result<Vec<u8>> {
        self.wait_for_paint()?;
        let value = self.session_command("GET", "/screenshot", None)?;
        let encoded = value
            .as_str()
            .ok_or_else(|| anyhow!("screenshot: no image in the answer"))?;
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .context("screenshot: bad base64")
    }

    /// Ends the session, which closes the app.
    pub fn delete_session(&mut self) -> Result<()> {
        if let Some(id) = self.session.take() {
            self.send("DELETE", &format!("/session/{id}"), None)?;
        }
        Ok(())
    }
}

impl Drop for WebDriver {
    fn drop(&mut self) {
        // Best effort: the driver may already be gone, and the process group is killed anyway.
        let _ = self.delete_session();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(code: &str) -> anyhow::Error {
        WebDriverError {
            request: "GET /session/1/element/2/text".into(),
            status: 404,
            code: code.into(),
            message: "gone".into(),
        }
        .into()
    }

    #[test]
    fn only_the_stale_element_code_counts_as_stale_even_under_context() {
        assert!(is_stale(&answered("stale element reference")));
        assert!(is_stale(
            &answered("stale element reference").context("reading the reply")
        ));
        assert!(!is_stale(&answered("no such element")));
        // A message that merely mentions it is not the driver's code.
        assert!(!is_stale(&anyhow!("stale element reference")));
        assert_eq!(
            answered("no such element").to_string(),
            "GET /session/1/element/2/text: HTTP 404: no such element gone"
        );
    }
}
