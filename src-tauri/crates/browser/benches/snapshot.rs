//! The browser's headline figures against Playwright in the same run: the snapshot of a
//! 1,000-element page and navigate-to-snapshot on a local page, in the managed profile (the
//! system Chromium over CDP) and with playwright-core driving the same Chromium on the same page
//! (`benches/playwright/peer.mjs`, its `ariaSnapshot` in the `ai` mode Playwright makes for
//! agents, with element refs as ours has). Both sides are timed from here, the peer
//! through one stdin/stdout line per step (a round trip of microseconds next to milliseconds).
//! The size of each snapshot's text is printed too, in characters and in tokens as two real
//! tokenizers count them (Anthropic's published one and OpenAI's o200k, run by the peer): an
//! estimate of four characters a token undercounts this kind of text by 1.7x.
//!
//! The peer needs `node` and `npm ci` in `benches/playwright` (scripts/bench does it); without
//! them only our side runs, and it says why. The native profile's figures come from the desktop's
//! `examples/native_browser.rs` (it needs the Tauri runtime).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use criterion::{Criterion, criterion_group, criterion_main};
use osprey_browser::{BrowserActions, ManagedConfig, ManagedDriver};
use osprey_tools::Call;
use serde_json::{Value, json};

#[path = "playwright/peer.rs"]
mod peer;
use peer::Peer;

/// The page: 1,000 rows of a link, a checkbox and text, as in the tests.
fn page() -> String {
    let mut body = String::from("<h1>Timing page</h1><label>Name <input id=n></label>");
    for i in 0..1000 {
        body.push_str(&format!(
            "<div><a href=\"#item{i}\">Item {i}</a> <input type=checkbox aria-label=\"Pick {i}\"> <span>text {i}</span></div>"
        ));
    }
    format!(
        "<!doctype html><html><head><title>Timing page</title></head><body>{body}</body></html>"
    )
}

fn call(input: Value) -> Call {
    let input = input.as_object().cloned().unwrap_or_default();
    Call {
        resource: Some("browser".into()),
        action: input
            .get("action")
            .and_then(Value::as_str)
            .map(str::to_string),
        input,
    }
}

fn benches(c: &mut Criterion) {
    let chromium = match osprey_browser::find_chromium() {
        Ok(path) => path,
        Err(e) => {
            eprintln!("browser benches skipped: {e}");
            return;
        }
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let html = Arc::new(page());
    let url = rt.block_on(async {
        let app = Router::new().route(
            "/",
            get(move || {
                let html = html.clone();
                async move { Html((*html).clone()) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    });
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut config = ManagedConfig::new(dir.path().join("profile"));
    config.allow_loopback = true;
    config.executable = Some(chromium.clone());
    let actions = BrowserActions::new(Arc::new(ManagedDriver::new(config)), true);
    let run = |input: Value| rt.block_on(actions.run(&call(input)));
    let navigated = run(json!({"action": "navigate", "url": url}));
    assert!(!navigated.is_error, "{}", navigated.text_content());
    let ours = run(json!({"action": "snapshot", "max_chars": 1_000_000})).text_content();

    let mut group = c.benchmark_group("browser");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("snapshot_1000_managed", |b| {
        b.iter(|| {
            let r = run(json!({"action": "snapshot", "max_chars": 1_000_000}));
            assert!(!r.is_error);
            r
        })
    });
    group.bench_function("navigate_snapshot_managed", |b| {
        b.iter(|| {
            let r = run(json!({"action": "navigate", "url": url, "max_chars": 1_000_000}));
            assert!(!r.is_error);
            r
        })
    });
    let peer_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/playwright");
    match Peer::start(&peer_dir, &chromium, &url) {
        Ok(mut peer) => {
            group.bench_function("snapshot_1000_playwright", |b| {
                b.iter(|| peer.ask("snapshot"))
            });
            group.bench_function("navigate_snapshot_playwright", |b| {
                b.iter(|| peer.ask("navigate"))
            });
            let mut text = |command: &str| -> String {
                serde_json::from_str(peer.ask(command).trim()).expect("a JSON string")
            };
            let (ai, plain) = (text("text"), text("text-default"));
            // Tokens as two real tokenizers count them (the peer's `tokens`): Anthropic's
            // published one and OpenAI's o200k.
            let mut tokens = |text: &str| -> [f64; 2] {
                let command = format!("tokens {}", serde_json::to_string(text).expect("JSON"));
                let answer = peer.ask(&command);
                let counts: Vec<f64> = answer
                    .split_whitespace()
                    .skip(1)
                    .map(|n| n.parse().expect("a token count"))
                    .collect();
                [counts[0], counts[1]]
            };
            let (ours_tokens, ai_tokens, plain_tokens) =
                (tokens(&ours), tokens(&ai), tokens(&plain));
            let size = |text: &str, t: [f64; 2]| {
                format!(
                    "{} characters, {} / {} tokens",
                    text.chars().count(),
                    t[0],
                    t[1]
                )
            };
            let ratio = |theirs: [f64; 2]| {
                format!(
                    "ours {:.2}x / {:.2}x",
                    ours_tokens[0] / theirs[0].max(1.0),
                    ours_tokens[1] / theirs[1].max(1.0)
                )
            };
            eprintln!(
                "browser snapshot text of the 1,000-element page (tokens by Anthropic's tokenizer / \
                 OpenAI's o200k): ours {}; Playwright's ariaSnapshot for agents (mode ai, refs) \
                 {} ({}); its default ariaSnapshot (no refs to act on) {} ({})",
                size(&ours, ours_tokens),
                size(&ai, ai_tokens),
                ratio(ai_tokens),
                size(&plain, plain_tokens),
                ratio(plain_tokens),
            );
        }
        Err(why) => eprintln!("the Playwright baseline is skipped: {why}"),
    }
    group.finish();
    rt.block_on(async {
        use osprey_browser::Driver;
        let _ = ManagedDriver::new(ManagedConfig::new(dir.path().join("unused")))
            .close()
            .await;
    });
}

criterion_group!(browser, benches);
criterion_main!(browser);
