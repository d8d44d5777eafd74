//! Web search against loopback fakes that answer in each provider's real response format; one
//! fails, to prove the fallback.

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use osprey_browser::{Search, SearchConfig};
use serde_json::json;

async fn fakes() -> String {
    let app = Router::new()
        .route("/searx/search", get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "instance down") }))
        .route("/searx-ok/search", get(|| async {
            axum::Json(json!({"query": "rust", "results": [
                {"url": "https://www.rust-lang.org/", "title": "Rust", "content": "A language <b>empowering</b> everyone", "engine": "duckduckgo"}
            ]}))
        }))
        .route("/brave", get(|headers: HeaderMap| async move {
            if headers.get("x-subscription-token").and_then(|v| v.to_str().ok()) != Some("brave-key") {
                return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "bad key"})));
            }
            (StatusCode::OK, axum::Json(json!({"type": "search", "web": {"type": "search", "results": [
                {"title": "The Rust Programming Language", "url": "https://doc.rust-lang.org/book/", "description": "The <strong>book</strong>", "language": "en"},
                {"title": "Rust by Example", "url": "https://doc.rust-lang.org/rust-by-example/", "description": "Examples"}
            ]}})))
        }))
        .route("/tavily", post(|headers: HeaderMap, body: axum::Json<serde_json::Value>| async move {
            assert_eq!(headers.get("authorization").unwrap(), "Bearer tavily-key");
            axum::Json(json!({"query": body["query"], "answer": null, "results": [
                {"title": "Tavily hit", "url": "https://tavily.example/", "content": "From Tavily", "score": 0.9}
            ], "response_time": 0.5}))
        }))
        .route("/ddg", post(|| async {
            r#"<html><body><div class="result results_links results_links_deep web-result ">
<div class="links_main links_deep result__body"><h2 class="result__title">
<a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2F&amp;rut=abc">Rust Programming &amp; Language</a></h2>
<a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">A language empowering <b>everyone</b>.</a></div></div>
<div class="result"><h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fcrates.io%2F&amp;rut=d">crates.io</a></h2>
<a class="result__snippet" href="x">The registry</a></div></body></html>"#
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn config(base: &str) -> SearchConfig {
    SearchConfig {
        searxng_url: Some(format!("{base}/searx")),
        brave_key: Some("brave-key".into()),
        brave_url: format!("{base}/brave"),
        tavily_key: Some("tavily-key".into()),
        tavily_url: format!("{base}/tavily"),
        duckduckgo_url: Some(format!("{base}/ddg")),
        ..SearchConfig::default()
    }
}

#[tokio::test]
async fn a_failing_provider_falls_back_to_the_next_one() {
    let base = fakes().await;
    let search = Search::new(&config(&base));
    assert_eq!(search.names(), ["searxng", "brave", "tavily", "duckduckgo"]);
    let answer = search.query("rust", 5, None).await.unwrap();
    assert_eq!(answer.provider, "brave");
    assert_eq!(answer.failures.len(), 1);
    assert!(answer.failures[0].contains("searxng") && answer.failures[0].contains("500"));
    assert_eq!(answer.hits[0].title, "The Rust Programming Language");
    assert_eq!(answer.hits[0].url, "https://doc.rust-lang.org/book/");
    assert_eq!(answer.hits[0].snippet, "The book");
    let one = search.query("rust", 1, None).await.unwrap();
    assert_eq!(one.hits.len(), 1);
}

#[tokio::test]
async fn each_provider_reads_its_own_format() {
    let base = fakes().await;
    let mut c = config(&base);
    c.searxng_url = Some(format!("{base}/searx-ok"));
    let search = Search::new(&c);
    let s = search.query("rust", 5, Some("searxng")).await.unwrap();
    assert_eq!(
        (s.hits[0].title.as_str(), s.hits[0].snippet.as_str()),
        ("Rust", "A language empowering everyone")
    );
    let t = search.query("rust", 5, Some("tavily")).await.unwrap();
    assert_eq!(t.hits[0].url, "https://tavily.example/");
    let d = search.query("rust", 5, Some("duckduckgo")).await.unwrap();
    assert_eq!(d.provider, "duckduckgo");
    assert_eq!(d.hits.len(), 2);
    assert_eq!(d.hits[0].title, "Rust Programming & Language");
    assert_eq!(d.hits[0].url, "https://www.rust-lang.org/");
    assert_eq!(d.hits[0].snippet, "A language empowering everyone.");
    assert_eq!(d.hits[1].url, "https://crates.io/");
    // A wrong key is a failure, and a provider that is not set up is named.
    let mut bad = config(&base);
    bad.brave_key = Some("wrong".into());
    bad.searxng_url = None;
    let answer = Search::new(&bad).query("rust", 5, None).await.unwrap();
    assert_eq!(answer.provider, "tavily");
    assert!(answer.failures[0].contains("401"), "{:?}", answer.failures);
    let err = Search::new(&SearchConfig {
        duckduckgo_url: None,
        ..SearchConfig::default()
    })
    .query("rust", 5, Some("brave"))
    .await
    .unwrap_err();
    assert!(err.to_string().contains("not set up"), "{err}");
    let err = search.query("  ", 5, None).await.unwrap_err();
    assert!(err.to_string().contains("non-empty"));
}
