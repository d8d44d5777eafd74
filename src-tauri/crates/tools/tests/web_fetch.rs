//! Fetching from loopback servers: HTML to readable text, raw mode, JSON, paging, the size cap,
//! binary refusal, timeouts, cancellation, status errors, and refusal of loopback by default.

#[path = "support/web_support.rs"]
mod web_support;

/// Inside a module named `web` so `cargo test -p osprey-tools web` selects these tests.
mod web {

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use crate::web_support::{
        ScriptedResolver, assert_code, ctx, loopback_config, loopback_tool, run,
    };
    use axum::Router;
    use axum::body::Body;
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    use axum::routing::get;
    use osprey_tools::DomainTool;
    use osprey_tools::web::{WebConfig, WebTool};
    use osprey_types::ErrorCode;
    use serde_json::json;

    const PAGE: &str = r#"<!DOCTYPE html>
<html><head>
  <title>Osprey &amp; Friends</title>
  <style>.secret_css { color: red }</style>
  <script>secret_js_function();</script>
</head><body>
  <h1>Fish hawks</h1>
  <p>The osprey eats <b>fish</b>. See <a href="https://example.org/raptors">raptors</a>.</p>
  <noscript>enable javascript</noscript>
  <script type="module">also_secret_js();</script>
  <h2>Range</h2>
  <ul><li>Europe</li><li>Americas</li></ul>
</body></html>"#;

    /// A body of `n` numbered lines, distinct so pages can be stitched back and compared.
    fn numbered(n: usize) -> String {
        (0..n).map(|i| format!("line {i:05}\n")).collect()
    }

    fn endless(chunk: &'static [u8]) -> Body {
        Body::from_stream(futures::stream::repeat_with(move || {
            Ok::<_, std::io::Error>(axum::body::Bytes::from_static(chunk))
        }))
    }

    async fn server() -> std::net::SocketAddr {
        let router = Router::new()
            .route(
                "/page",
                get(|| async { ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE) }),
            )
            .route(
                "/json",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "application/json")],
                        r#"{"name": "osprey", "<b>": [1, 2]}"#,
                    )
                }),
            )
            .route(
                "/long",
                get(|| async { ([(header::CONTENT_TYPE, "text/plain")], numbered(5000)) }),
            )
            .route(
                "/endless",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "text/plain")],
                        endless(&[b'a'; 4096]),
                    )
                }),
            )
            .route(
                "/image",
                get(|| async { ([(header::CONTENT_TYPE, "image/png")], endless(&[0u8; 4096])) }),
            )
            .route(
                "/octets",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "application/octet-stream")],
                        b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec(),
                    )
                }),
            )
            .route(
                "/readme",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "application/octet-stream")],
                        "# Read me\nplain text served as octets\n",
                    )
                }),
            )
            .route(
                "/untyped-html",
                get(|| async { Body::from("<!doctype html><h1>No type</h1><script>x()</script>") }),
            )
            .route(
                "/latin1",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "text/plain; charset=ISO-8859-1")],
                        b"caf\xe9".to_vec(),
                    )
                }),
            )
            .route(
                "/missing",
                get(|| async {
                    (
                        StatusCode::NOT_FOUND,
                        [(header::CONTENT_TYPE, "text/html")],
                        "<h1>Nothing here</h1>",
                    )
                }),
            )
            .route(
                "/slow-body",
                get(|| async {
                    let stream = futures::stream::once(async {
                        Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"start "))
                    })
                    .chain(futures::stream::pending());
                    (
                        [(header::CONTENT_TYPE, "text/plain")],
                        Body::from_stream(stream),
                    )
                        .into_response()
                }),
            )
            .route(
                "/deep/{depth}",
                get(
                    |axum::extract::Path(depth): axum::extract::Path<usize>| async move {
                        let html = format!(
                            "<html><body>{}deep text{}</body></html>",
                            "<div>".repeat(depth),
                            "</div>".repeat(depth)
                        );
                        ([(header::CONTENT_TYPE, "text/html")], html)
                    },
                ),
            );
        crate::web_support::serve(router).await
    }

    use futures::StreamExt;

    #[tokio::test]
    async fn html_becomes_readable_text_without_scripts_or_styles() {
        let addr = server().await;
        let result = run(
            &loopback_tool(),
            json!({"action": "fetch", "url": format!("http://{addr}/page")}),
        )
        .await;
        assert!(!result.is_error, "{result:?}");
        let text = result.text_content();
        assert!(text.contains(&format!("URL: http://{addr}/page")), "{text}");
        assert!(text.contains("Status: 200 OK"), "{text}");
        assert!(text.contains("Title: Osprey & Friends"), "{text}");
        assert!(text.contains("Fish hawks"), "{text}");
        assert!(text.contains("The osprey eats"), "{text}");
        assert!(text.contains("Range") && text.contains("Europe"), "{text}");
        assert!(text.contains("https://example.org/raptors"), "{text}");
        assert!(text.contains("readable text converted from HTML"), "{text}");
        for hidden in ["secret_css", "secret_js_function", "also_secret_js", "<h1>"] {
            assert!(!text.contains(hidden), "{hidden} leaked: {text}");
        }
    }

    #[tokio::test]
    async fn raw_mode_returns_the_html_as_served() {
        let addr = server().await;
        let result = run(
            &loopback_tool(),
            json!({"action": "fetch", "url": format!("http://{addr}/page"), "raw": true}),
        )
        .await;
        let text = result.text_content();
        assert!(
            text.contains("<h1>Fish hawks</h1>") && text.contains("secret_js_function"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn json_and_text_pass_through_and_untyped_bodies_are_sniffed() {
        let addr = server().await;
        let tool = loopback_tool();
        let fetch = |path: &str| {
            let input = json!({"action": "fetch", "url": format!("http://{addr}{path}")});
            let tool = &tool;
            async move { run(tool, input).await }
        };
        let json = fetch("/json").await;
        assert!(
            json.text_content()
                .ends_with(r#"{"name": "osprey", "<b>": [1, 2]}"#),
            "{json:?}"
        );
        let readme = fetch("/readme").await;
        assert!(
            readme
                .text_content()
                .contains("plain text served as octets"),
            "{readme:?}"
        );
        let untyped = fetch("/untyped-html").await.text_content();
        assert!(
            untyped.contains("No type") && !untyped.contains("x()"),
            "{untyped}"
        );
        let latin1 = fetch("/latin1").await.text_content();
        assert!(latin1.ends_with("café"), "{latin1}");
    }

    #[tokio::test]
    async fn long_content_comes_in_pages_that_join_up() {
        let addr = server().await;
        let tool = loopback_tool();
        let url = format!("http://{addr}/long");
        let full = numbered(5000);
        let total = full.chars().count();

        let mut offset = 0;
        let mut joined = String::new();
        let mut pages = 0;
        loop {
            let result = run(
                &tool,
                json!({"action": "fetch", "url": url, "offset": offset, "max_chars": 7000}),
            )
            .await;
            assert!(!result.is_error, "{result:?}");
            let text = result.text_content();
            assert!(
                text.contains(&format!("Length: {total} characters")),
                "{text}"
            );
            let body = text.split_once("\n\n").unwrap().1;
            let next = format!("offset: {}", (offset + 7000).min(total));
            match body.rsplit_once("\n\n[") {
                Some((page, note)) => {
                    assert!(note.contains(&next), "{note}");
                    assert!(
                        note.contains(&format!("{} more characters", total - offset - 7000)),
                        "{note}"
                    );
                    joined.push_str(page);
                    offset += 7000;
                }
                None => {
                    joined.push_str(body);
                    break;
                }
            }
            pages += 1;
            assert!(pages < 20, "paging does not end");
        }
        assert_eq!(joined, full);

        let past = run(
            &tool,
            json!({"action": "fetch", "url": url, "offset": total + 1}),
        )
        .await;
        assert_code(&past, ErrorCode::InvalidInput);
        assert!(past.text_content().contains(&total.to_string()));

        // The default page size applies without max_chars.
        let first = run(&tool, json!({"action": "fetch", "url": url})).await;
        assert!(first.text_content().contains("offset: 20000"));
    }

    #[tokio::test]
    async fn the_body_is_cut_at_the_size_cap_even_when_it_never_ends() {
        let addr = server().await;
        let tool = WebTool::new(WebConfig {
            max_bytes: 64 * 1024,
            ..loopback_config(&ScriptedResolver::new())
        })
        .unwrap();
        let result = tokio::time::timeout(
        Duration::from_secs(20),
        run(
            &tool,
            json!({"action": "fetch", "url": format!("http://{addr}/endless"), "max_chars": 100000}),
        ),
    )
    .await
    .expect("the capped read finishes");
        assert!(!result.is_error, "{result:?}");
        let text = result.text_content();
        assert!(text.contains("larger than 65536 bytes"), "{text}");
        assert!(text.contains("Length: 65536 characters"), "{text}");
    }

    #[tokio::test]
    async fn binary_content_is_refused() {
        let addr = server().await;
        let tool = loopback_tool();
        // image/png with an endless body: refused from the header, without reading the body.
        let image = tokio::time::timeout(
            Duration::from_secs(20),
            run(
                &tool,
                json!({"action": "fetch", "url": format!("http://{addr}/image")}),
            ),
        )
        .await
        .expect("refused without reading the endless body");
        assert_code(&image, ErrorCode::ToolFailed);
        assert!(
            image.text_content().contains("binary content (image/png"),
            "{image:?}"
        );
        // Octets that are not text, found by sniffing.
        let octets = run(
            &tool,
            json!({"action": "fetch", "url": format!("http://{addr}/octets")}),
        )
        .await;
        assert_code(&octets, ErrorCode::ToolFailed);
        assert!(octets.text_content().contains("text only"), "{octets:?}");
    }

    #[tokio::test]
    async fn error_statuses_are_errors_that_still_show_the_page() {
        let addr = server().await;
        let result = run(
            &loopback_tool(),
            json!({"action": "fetch", "url": format!("http://{addr}/missing")}),
        )
        .await;
        assert_code(&result, ErrorCode::ToolFailed);
        let text = result.text_content();
        assert!(
            text.contains("Status: 404 Not Found") && text.contains("Nothing here"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn head_returns_status_and_headers() {
        let addr = server().await;
        let result = run(
            &loopback_tool(),
            json!({"action": "fetch", "url": format!("http://{addr}/page"), "method": "HEAD"}),
        )
        .await;
        assert!(!result.is_error, "{result:?}");
        let text = result.text_content();
        assert!(
            text.contains("Status: 200 OK") && text.contains("content-type: text/html"),
            "{text}"
        );
        assert!(!text.contains("Fish hawks"), "{text}");
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let silent = crate::web_support::silent_server().await;
        let addr = server().await;
        let tool = WebTool::new(WebConfig {
            timeout: Duration::from_millis(500),
            ..loopback_config(&ScriptedResolver::new())
        })
        .unwrap();
        for url in [
            format!("http://{silent}/"),
            format!("http://{addr}/slow-body"),
        ] {
            let started = Instant::now();
            let result = tokio::time::timeout(
                Duration::from_secs(20),
                run(&tool, json!({"action": "fetch", "url": url})),
            )
            .await
            .expect("the tool's own timeout fires first");
            assert_code(&result, ErrorCode::Timeout);
            assert!(started.elapsed() < Duration::from_secs(10));
        }
    }

    #[tokio::test]
    async fn the_call_deadline_and_cancellation_stop_a_fetch() {
        let silent = crate::web_support::silent_server().await;
        let tool = loopback_tool();
        let call = tool
            .domain()
            .resolve(json!({"action": "fetch", "url": format!("http://{silent}/")}))
            .unwrap();

        let mut short = ctx();
        short.deadline = Instant::now() + Duration::from_millis(300);
        let result = tokio::time::timeout(Duration::from_secs(20), tool.run(&short, call.clone()))
            .await
            .unwrap();
        assert_code(&result, ErrorCode::Timeout);

        let cancelled = ctx();
        let token = cancelled.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            token.cancel();
        });
        let result = tokio::time::timeout(Duration::from_secs(20), tool.run(&cancelled, call))
            .await
            .unwrap();
        assert_code(&result, ErrorCode::Cancelled);
    }

    #[tokio::test]
    async fn deeply_nested_html_is_converted_quickly() {
        let addr = server().await;
        let tool = loopback_tool();
        let fetch = |depth: usize| {
            let input = json!({"action": "fetch", "url": format!("http://{addr}/deep/{depth}")});
            let tool = &tool;
            async move {
                let started = Instant::now();
                let result = run(tool, input).await;
                assert!(!result.is_error, "{result:?}");
                assert!(result.text_content().contains("deep text"), "{result:?}");
                assert!(started.elapsed() < Duration::from_secs(5), "depth {depth}");
                result.text_content()
            }
        };
        // Within the parser's limits: converted by it (the renderer sees at most 128 levels).
        let moderate = fetch(200).await;
        assert!(!moderate.contains("too complex"), "{moderate}");
        // Far past them (the parser's time grows with the square of the depth): the fallback.
        let hostile = fetch(100_000).await;
        assert!(
            hostile.contains("too complex for the HTML converter"),
            "{hostile}"
        );
    }

    #[tokio::test]
    async fn loopback_is_refused_by_default_before_any_request() {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let addr = crate::web_support::serve(Router::new().route(
            "/",
            get(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                async { "hello" }
            }),
        ))
        .await;
        // Sanity: the server answers when loopback is allowed.
        let ok = run(
            &loopback_tool(),
            json!({"action": "fetch", "url": format!("http://{addr}/")}),
        )
        .await;
        assert!(ok.text_content().ends_with("hello"), "{ok:?}");
        assert_eq!(hits.load(Ordering::SeqCst), 1);

        let strict = WebTool::new(WebConfig::default()).unwrap();
        assert!(!strict.config().allow_loopback);
        for url in [
            format!("http://{addr}/"),
            format!("http://localhost:{}/", addr.port()),
            format!("http://[::ffff:127.0.0.1]:{}/", addr.port()),
            format!("http://2130706433:{}/", addr.port()),
        ] {
            let result = run(&strict, json!({"action": "fetch", "url": url})).await;
            assert_code(&result, ErrorCode::SsrfBlocked);
        }
        assert_eq!(
            hits.load(Ordering::SeqCst),
            1,
            "no request reached the server"
        );
    }

    #[tokio::test]
    async fn through_the_registry_the_fetch_needs_approval() {
        use osprey_tools::{
            AuditSink, Level, OriginRules, PathGuard, Policy, PolicyConfig, Registry,
            RegistryConfig, Safeguard,
        };
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let addr = crate::web_support::serve(Router::new().route(
            "/",
            get(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                async { "hello from the registry" }
            }),
        ))
        .await;
        let dir = tempfile::tempdir().unwrap();
        let registry = |level| {
            let db = osprey_db::Database::open_in_memory().unwrap();
            let registry = Registry::new(RegistryConfig {
                policy: Policy::new(
                    PolicyConfig {
                        level,
                        ..Default::default()
                    },
                    None,
                )
                .unwrap(),
                origin_rules: OriginRules::default(),
                safeguard: Safeguard::new(PathGuard::new(
                    Some(dir.path().join("home")),
                    dir.path().join("data"),
                )),
                audit: AuditSink::new(db.audit()),
                output_cap: 100_000,
            });
            registry.register_domain(loopback_tool());
            registry
        };
        let input = json!({"action": "fetch", "url": format!("http://{addr}/")});

        // Nobody to ask: refused before the tool runs.
        let asked = registry(Level::Allowlist)
            .execute(&ctx(), "web", input.clone())
            .await;
        assert_code(&asked, ErrorCode::PolicyDenied);
        assert!(asked.text_content().contains("fetch http://"), "{asked:?}");
        assert_eq!(hits.load(Ordering::SeqCst), 0);

        let full = registry(Level::Full).execute(&ctx(), "web", input).await;
        assert!(!full.is_error, "{full:?}");
        assert!(full.text_content().ends_with("hello from the registry"));
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }
}
