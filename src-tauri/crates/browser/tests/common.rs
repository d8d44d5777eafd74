//! Shared by the browser tests: pages served on loopback, a managed Chromium, and the `web` tool
//! with the browser and search resources, called the way the registry calls it.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, Query};
use axum::response::{Html, IntoResponse, Redirect};
use axum::routing::get;
use osprey_browser::{
    BrowserActions, ManagedConfig, ManagedDriver, Search, SearchConfig, WebBrowsing,
};
use osprey_tools::web::{WebConfig, WebTool};
use osprey_tools::{DomainTool, ToolContext};
use osprey_types::{ContentBlock, Origin, ToolResult};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Serves the test pages on `ip`; returns the base URL.
pub async fn serve(ip: &str) -> String {
    let app = Router::new()
        .route("/form", get(|| async { Html(FORM) }))
        .route("/result", get(|Query(q): Query<Vec<(String, String)>>| async move {
            let items: Vec<String> = q.iter().map(|(k, v)| format!("<li>{k}={v}</li>")).collect();
            Html(format!("<title>Result</title><h1>Submitted</h1><ul id=out>{}</ul>", items.join("")))
        }))
        .route("/links", get(|| async { Html(LINKS) }))
        .route("/self-nav", get(|| async { Html(SELF_NAV) }))
        .route("/slow", get(|| async { Html(SLOW) }))
        .route("/slow-resource", get(|| async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            "done"
        }))
        .route("/many", get(|| async { Html(many()) }))
        .route("/iframe", get(|Query(q): Query<Vec<(String, String)>>| async move {
            let other = q.iter().find(|(k, _)| k == "other").map(|(_, v)| v.clone()).unwrap_or_default();
            Html(format!(
                "<title>Frames</title><h1>Outer</h1><iframe title=inner src=/inner></iframe>\
                 <iframe title=foreign src=\"{other}/inner\"></iframe>"
            ))
        }))
        .route("/inner", get(|| async {
            Html("<p>Inside the frame</p><button onclick=\"document.querySelector('p').textContent='frame clicked'\">Frame button</button>")
        }))
        .route("/menu", get(|| async { Html(MENU) }))
        .route("/redirect/{*to}", get(|Path(to): Path<String>| async move { Redirect::temporary(&format!("http://{to}")) }))
        .route("/leak", get(|| async { Html(LEAK) }))
        .route("/dialog", get(|| async { Html("<title>Dialog</title><script>alert('hello from the page')</script><p>after</p>") }))
        .route("/download", get(|| async {
            ([("content-type", "application/octet-stream"), ("content-disposition", "attachment; filename=x.bin")], "binary").into_response()
        }));
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

const FORM: &str = r#"<!doctype html><title>Form</title>
<h1>Sign up</h1>
<form action="/result" method="get">
  <label for=name>Name</label> <input id=name name=name value="old">
  <label>Email <input type=email name=email required></label>
  <input type=password name=secret aria-label="Password">
  <label><input type=checkbox name=agree> I agree</label>
  <select name=color aria-label="Color"><option value=r>Red</option><option value=g>Green</option><option value=b>Blue</option></select>
  <textarea name=note aria-label="Note"></textarea>
  <input id=keys aria-label="Keys" onkeydown="this.dataset.count=(+this.dataset.count||0)+1">
  <button type=submit>Send</button>
  <button type=button disabled>Later</button>
</form>
<p>Fill the form and press <b>Send</b>.</p>"#;

const LINKS: &str = r##"<!doctype html><title>Links</title><nav><ul>
<li><a href="/form">Go to form</a></li><li><a href="/menu">Menu</a></li>
<li><a href="https://example.com/x">Elsewhere</a></li>
<li><a href="#end">To the end</a></li><li><a href="/links?page=2#end">Next page</a></li></ul></nav>
<p id=end>The end of the links.</p>"##;

const SELF_NAV: &str = r#"<!doctype html><title>Moving</title><p>Leaving soon</p>
<script>setTimeout(() => { location.href = '/form'; }, 300);</script>"#;

const SLOW: &str = r#"<!doctype html><title>Slow</title><p>Text arrives first</p><img src="/slow-resource" alt="slow">"#;

const MENU: &str = r#"<!doctype html><title>Menu</title><style>
#sub{display:none} #menu:hover #sub{display:block} .tall{height:3000px}</style>
<div id=menu><button>Menu</button><div id=sub><a href="/form">Hidden item</a></div></div>
<div class=tall></div><p id=end>The end</p>
<details><summary>More</summary>Details text</details>"#;

const LEAK: &str = r#"<!doctype html><title>Leak</title><p id=s>waiting</p>
<script>fetch('http://10.1.2.3/secret').then(() => s.textContent='reached').catch(() => s.textContent='blocked');</script>"#;

fn many() -> String {
    let mut s = String::from("<!doctype html><title>Many</title><h1>Thousand</h1><main>");
    for i in 0..250 {
        s.push_str(&format!(
            "<div class=row><button id=b{i}>Button {i}</button><a href=\"/item/{i}\">Item {i}</a>\
             <input aria-label=\"Field {i}\" value=\"v{i}\"><span>Text {i}</span></div>"
        ));
    }
    s.push_str("</main>");
    s
}

/// The browser program, or `None` with the reason printed (only where it cannot be installed).
pub fn chromium() -> Option<std::path::PathBuf> {
    match osprey_browser::find_chromium() {
        Ok(path) => Some(path),
        Err(e) if cfg!(target_os = "linux") => {
            panic!("{e} (scripts/setup installs it on Linux)")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

pub struct Rig {
    pub tool: WebTool,
    pub driver: Arc<ManagedDriver>,
    /// The browser resource's profiles (clones share them: add one here to call it).
    pub actions: BrowserActions,
    pub dir: tempfile::TempDir,
}

impl Rig {
    pub fn new(allow_loopback: bool, search: SearchConfig) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ManagedConfig::new(dir.path().join("profile"));
        config.allow_loopback = allow_loopback;
        let driver = Arc::new(ManagedDriver::new(config));
        let actions = BrowserActions::new(driver.clone(), allow_loopback)
            .with_screenshots(dir.path().join("shots"));
        let browsing = WebBrowsing::new(actions.clone(), move || Search::new(&search));
        let tool = WebTool::new(WebConfig {
            allow_loopback,
            ..WebConfig::default()
        })
        .unwrap()
        .with_extension(Arc::new(browsing));
        Rig {
            tool,
            driver,
            actions,
            dir,
        }
    }

    /// Resolves `input` against the web tool's table (as the registry does) and runs it.
    pub async fn call(&self, input: Value) -> ToolResult {
        let call = self
            .tool
            .domain()
            .resolve(input.clone())
            .unwrap_or_else(|e| panic!("{input}: {e}"));
        let ctx = ToolContext {
            origin: Origin::User,
            session_id: None,
            call_id: "test".into(),
            cancel: CancellationToken::new(),
            deadline: Instant::now() + Duration::from_secs(60),
            approver: None,
            level_cap: None,
            scope: None,
        };
        self.tool.run(&ctx, call).await
    }

    pub async fn ok(&self, input: Value) -> String {
        let r = self.call(input.clone()).await;
        assert!(!r.is_error, "{input} failed: {}", r.text_content());
        r.text_content()
    }

    pub async fn close(&self) {
        use osprey_browser::Driver;
        self.driver.close().await.unwrap();
    }
}

/// The ref of the first snapshot line containing `needle`: the line's first word
/// (`e12 button "Send"`).
pub fn ref_of(snapshot: &str, needle: &str) -> String {
    let line = snapshot
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{snapshot}"));
    let word = line.split_whitespace().next().unwrap_or_default();
    assert!(
        word.strip_prefix('e')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        "the line {line:?} does not start with a ref"
    );
    word.to_string()
}

pub fn image_of(r: &ToolResult) -> Option<(&str, &str)> {
    r.content.iter().find_map(|b| match b {
        ContentBlock::Image { mime_type, data } => Some((mime_type.as_str(), data.as_str())),
        _ => None,
    })
}
