//! Web search's last resort: when every provider fails, a search engine's own page opened in the
//! browser profile (a real Chromium here), its results read from the page.

mod common;

use axum::Router;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::{get, post};
use common::{Rig, chromium};
use osprey_browser::SearchConfig;
use serde_json::json;

/// A failing keyless endpoint, a search page in DuckDuckGo's HTML format, and another engine's
/// page whose results are plain links.
async fn engines() -> String {
    let app = Router::new()
        .route("/ddg", post(|| async { (StatusCode::FORBIDDEN, "anomaly: are you a bot?") }))
        .route(
            "/page",
            get(|Query(q): Query<Vec<(String, String)>>| async move {
                let query = q.into_iter().find(|(k, _)| k == "q").map(|(_, v)| v).unwrap_or_default();
                Html(format!(
                    r#"<html><head><title>{query} at DuckDuckGo</title></head><body>
<div class="result"><h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2F&amp;rut=abc">Rust for {query}</a></h2>
<a class="result__snippet" href="x">A language empowering <b>everyone</b>.</a></div>
<div class="result"><h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fcrates.io%2F&amp;rut=d">crates.io</a></h2></div>
</body></html>"#
                ))
            }),
        )
        .route(
            "/other",
            get(|| async {
                Html(
                    r#"<html><body><a href="/settings">Settings</a>
<h3><a href="https://docs.rs/">Docs.rs, the documentation host</a></h3>
<h3><a href="https://blog.rust-lang.org/">The Rust blog</a></h3>
<a href="https://docs.rs/">Docs.rs again</a><a href="javascript:void(0)">More</a></body></html>"#,
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_provider_fails_the_browser_opens_a_search_page_and_reads_its_results() {
    if chromium().is_none() {
        return;
    }
    let base = engines().await;
    let rig = Rig::new(
        true,
        SearchConfig {
            duckduckgo_url: Some(format!("{base}/ddg")),
            browser_url: Some(format!("{base}/page?q={{query}}")),
            ..SearchConfig::default()
        },
    );
    let found = rig
        .ok(json!({"resource": "search", "action": "query", "query": "fast & safe"}))
        .await;
    assert!(found.contains("2 results from browser in"), "{found}");
    assert!(
        found.contains("tried first: ") && found.contains("HTTP 403"),
        "{found}"
    );
    // The query reached the page encoded, and the results are the page's, fenced.
    assert!(found.contains("Rust for fast & safe"), "{found}");
    assert!(found.contains("https://www.rust-lang.org/"), "{found}");
    assert!(found.contains("A language empowering everyone."), "{found}");
    assert!(found.contains("<<<page-content"), "{found}");
    // The search page was closed after reading: no page is left open.
    let pages = rig
        .ok(json!({"resource": "browser", "action": "list_pages"}))
        .await;
    assert!(!pages.contains("/page?q="), "{pages}");
    rig.close().await;

    // Another engine's page: its results are the links leading away from it.
    let other = Rig::new(
        true,
        SearchConfig {
            duckduckgo_url: None,
            browser_url: Some(format!("{base}/other?q={{query}}")),
            ..SearchConfig::default()
        },
    );
    let found = other
        .ok(json!({"resource": "search", "action": "query", "query": "rust", "engine": "browser"}))
        .await;
    assert!(found.contains("2 results from browser"), "{found}");
    assert!(
        found.contains("1. Docs.rs, the documentation host"),
        "{found}"
    );
    assert!(found.contains("2. The Rust blog"), "{found}");
    assert!(
        !found.contains("Settings"),
        "the engine's own links are not results: {found}"
    );
    other.close().await;

    // Turned off, the failure says what was tried.
    let off = Rig::new(
        true,
        SearchConfig {
            duckduckgo_url: Some(format!("{base}/ddg")),
            browser_url: None,
            ..SearchConfig::default()
        },
    );
    let failed = off
        .call(json!({"resource": "search", "action": "query", "query": "rust"}))
        .await;
    assert!(failed.is_error);
    assert!(
        failed.text_content().contains("search page is off")
            && failed.text_content().contains("403"),
        "{}",
        failed.text_content()
    );
}
