//! Requests that send data (POST, PUT, PATCH, DELETE with a JSON or text body) and bounded
//! retries, against loopback servers: what arrives at the server, how redirects treat the
//! method and the body, which answers are retried and which methods never are, and that every
//! data-sending call is asked each time.

#[path = "support/web_support.rs"]
mod web_support;

/// Inside a module named `web` so `cargo test -p osprey-tools web` selects these tests.
mod web {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::web_support::{assert_code, loopback_tool, run};
    use axum::Router;
    use axum::http::{HeaderMap, Method, StatusCode, header};
    use axum::response::{IntoResponse, Redirect};
    use axum::routing::{any, get};
    use osprey_tools::DomainTool;
    use osprey_types::ErrorCode;
    use serde_json::{Value, json};

    /// Answers every request with what it received: method, content type and body.
    async fn echo(method: Method, headers: HeaderMap, body: String) -> impl IntoResponse {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (
            [(header::CONTENT_TYPE, "application/json")],
            json!({"method": method.as_str(), "content_type": content_type, "body": body})
                .to_string(),
        )
    }

    /// A server with `/echo`, redirects to it, and `/busy` that answers 503 `busy_times` times
    /// (counting every hit in `hits`) before it answers 200.
    async fn server(busy_times: usize, hits: Arc<AtomicUsize>) -> std::net::SocketAddr {
        let router = Router::new()
            .route("/echo", any(echo))
            .route("/see-other", any(|| async { Redirect::to("/echo") }))
            .route(
                "/found",
                any(|| async { (StatusCode::FOUND, [(header::LOCATION, "/echo")]) }),
            )
            .route("/temporary", any(|| async { Redirect::temporary("/echo") }))
            .route(
                "/busy",
                any(move || {
                    let hits = hits.clone();
                    async move {
                        let n = hits.fetch_add(1, Ordering::SeqCst);
                        if n < busy_times {
                            (
                                StatusCode::SERVICE_UNAVAILABLE,
                                [(header::RETRY_AFTER, "0")],
                                "busy",
                            )
                                .into_response()
                        } else {
                            "ready".into_response()
                        }
                    }
                }),
            );
        crate::web_support::serve(router).await
    }

    fn body_of(text: &str) -> Value {
        let json = &text[text.find('{').expect("a JSON answer")..];
        serde_json::from_str(json).unwrap()
    }

    #[tokio::test]
    async fn json_and_text_bodies_arrive_with_their_method_and_type() {
        let addr = server(0, Arc::default()).await;
        let tool = loopback_tool();
        let url = format!("http://{addr}/echo");
        let posted = run(
            &tool,
            json!({"action": "fetch", "url": url, "method": "POST", "json": {"name": "osprey"}}),
        )
        .await;
        assert!(!posted.is_error, "{posted:?}");
        let text = posted.text_content();
        assert!(text.starts_with("Method: POST"), "{text}");
        assert_eq!(
            body_of(&text),
            json!({"method": "POST", "content_type": "application/json",
                   "body": r#"{"name":"osprey"}"#})
        );
        for method in ["PUT", "PATCH", "DELETE"] {
            let sent = run(
                &tool,
                json!({"action": "fetch", "url": url, "method": method, "body": "plain words"}),
            )
            .await;
            let echoed = body_of(&sent.text_content());
            assert_eq!(echoed["method"], method);
            assert_eq!(echoed["content_type"], "text/plain; charset=utf-8");
            assert_eq!(echoed["body"], "plain words");
        }
        // A Content-Type header of the caller's wins.
        let typed = run(
            &tool,
            json!({"action": "fetch", "url": url, "method": "POST", "body": "a=1&b=2",
                   "headers": {"Content-Type": "application/x-www-form-urlencoded"}}),
        )
        .await;
        assert_eq!(
            body_of(&typed.text_content())["content_type"],
            "application/x-www-form-urlencoded"
        );
    }

    #[tokio::test]
    async fn redirects_drop_the_body_on_303_and_keep_it_on_307_within_the_origin() {
        let addr = server(0, Arc::default()).await;
        let tool = loopback_tool();
        let post = |path: &str| {
            json!({"action": "fetch", "url": format!("http://{addr}{path}"), "method": "POST",
                   "json": {"n": 1}})
        };
        for path in ["/see-other", "/found"] {
            let moved = body_of(&run(&tool, post(path)).await.text_content());
            assert_eq!(moved["method"], "GET", "{path}");
            assert_eq!(moved["body"], "", "{path}");
        }
        let kept = body_of(&run(&tool, post("/temporary")).await.text_content());
        assert_eq!(kept["method"], "POST");
        assert_eq!(kept["body"], r#"{"n":1}"#);

        // A 307 to another origin is not followed with the data.
        let other = server(0, Arc::default()).await;
        let away = Router::new().route(
            "/away",
            any(move || async move { Redirect::temporary(&format!("http://{other}/echo")) }),
        );
        let away = crate::web_support::serve(away).await;
        let refused = run(
            &tool,
            json!({"action": "fetch", "url": format!("http://{away}/away"), "method": "PUT",
                   "body": "secret"}),
        )
        .await;
        assert_code(&refused, ErrorCode::ToolFailed);
        assert!(
            refused
                .text_content()
                .contains("another origin; the data was not sent there"),
            "{refused:?}"
        );
    }

    #[tokio::test]
    async fn busy_answers_are_retried_for_idempotent_methods_only() {
        let hits = Arc::new(AtomicUsize::new(0));
        let addr = server(2, hits.clone()).await;
        let tool = loopback_tool();
        let url = format!("http://{addr}/busy");
        let fetched = run(&tool, json!({"action": "fetch", "url": url})).await;
        assert!(!fetched.is_error, "{fetched:?}");
        let text = fetched.text_content();
        assert!(
            text.contains(
                "Attempts: 3 (retried after: 503 Service Unavailable; 503 Service Unavailable)"
            ),
            "{text}"
        );
        assert!(text.contains("ready"), "{text}");
        assert_eq!(hits.load(Ordering::SeqCst), 3);

        // Fewer retries than the server needs: the last answer is the result.
        let hits = Arc::new(AtomicUsize::new(0));
        let addr = server(5, hits.clone()).await;
        let url = format!("http://{addr}/busy");
        let gave_up = run(&tool, json!({"action": "fetch", "url": url, "retries": 1})).await;
        assert_code(&gave_up, ErrorCode::ToolFailed);
        assert!(
            gave_up.text_content().contains("Status: 503"),
            "{gave_up:?}"
        );
        assert_eq!(hits.load(Ordering::SeqCst), 2);

        // A POST is sent once, whatever `retries` says: it may have done its work.
        let posted = run(
            &tool,
            json!({"action": "fetch", "url": url, "method": "POST", "body": "x", "retries": 3}),
        )
        .await;
        assert_code(&posted, ErrorCode::ToolFailed);
        assert_eq!(hits.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_server_that_comes_up_late_is_reached_by_a_retry() {
        // A port nobody listens on yet; the server binds it a moment after the first attempt.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
            let router = Router::new().route("/late", get(|| async { "finally" }));
            axum::serve(listener, router).await.unwrap();
        });
        let result = run(
            &loopback_tool(),
            json!({"action": "fetch", "url": format!("http://{addr}/late")}),
        )
        .await;
        assert!(!result.is_error, "{result:?}");
        assert!(result.text_content().contains("finally"));
        let refused = run(
            &loopback_tool(),
            json!({"action": "fetch", "url": "http://127.0.0.1:9/none", "retries": 0}),
        )
        .await;
        assert_code(&refused, ErrorCode::ToolFailed);
    }

    #[tokio::test]
    async fn bad_bodies_and_methods_are_refused_before_anything_is_sent() {
        let hits = Arc::new(AtomicUsize::new(0));
        let addr = server(0, hits.clone()).await;
        let url = format!("http://{addr}/busy");
        let tool = loopback_tool();
        for (input, why) in [
            (json!({"body": "x"}), "a GET sends no body"),
            (
                json!({"method": "HEAD", "json": {}}),
                "a HEAD sends no body",
            ),
            (
                json!({"method": "POST", "body": "x", "json": {}}),
                "not both",
            ),
            (json!({"retries": 9}), "from 0 to 5"),
            (
                json!({"method": "POST", "body": "x".repeat(1024 * 1024 + 1)}),
                "at most",
            ),
        ] {
            let mut call = input.clone();
            call["action"] = json!("fetch");
            call["url"] = json!(url);
            let refused = run(&tool, call).await;
            assert_code(&refused, ErrorCode::InvalidInput);
            assert!(refused.text_content().contains(why), "{input}: {refused:?}");
        }
        assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing reached the server");
    }

    #[test]
    fn sending_data_is_asked_every_time_and_shows_what_is_sent() {
        let tool = loopback_tool();
        let facts = |input: Value| tool.facts(&tool.domain().resolve(input).unwrap());
        let get = facts(json!({"action": "fetch", "url": "https://example.com/"}));
        assert_eq!(get.ask_every_time, None);
        let post = facts(json!({"action": "fetch", "url": "https://example.com/api",
                                "method": "POST", "json": {"title": "hello"}}));
        assert!(post.ask_every_time.is_some(), "{post:?}");
        assert!(
            post.summary.starts_with(
                "POST https://example.com/api with a JSON body (17 bytes): {\"title\":\"hello\"}"
            ),
            "{}",
            post.summary
        );
        let delete = facts(json!({"action": "fetch", "url": "https://example.com/x",
                                  "method": "DELETE"}));
        assert!(delete.ask_every_time.is_some());
        assert!(delete.summary.starts_with("DELETE https://example.com/x"));
    }
}
