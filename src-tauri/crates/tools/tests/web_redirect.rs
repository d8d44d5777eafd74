//! Redirects and DNS rebinding: every hop is checked like the first, private targets are refused
//! before any connection, and a name that turns private between check and connect is refused by
//! the resolver the client connects through.

#[path = "support/web_support.rs"]
mod web_support;

/// Inside a module named `web` so `cargo test -p osprey-tools web` selects these tests.
mod web {

    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use crate::web_support::{ScriptedResolver, assert_code, loopback_config, loopback_tool, run};
    use axum::Router;
    use axum::extract::{Path, Query};
    use axum::http::{HeaderMap, Method, StatusCode, header};
    use axum::response::IntoResponse;
    use axum::routing::{any, get};
    use osprey_tools::web::WebTool;
    use osprey_types::ErrorCode;
    use serde_json::json;

    const CODES: [u16; 5] = [301, 302, 303, 307, 308];

    /// `/redirect/{code}?to=URL` answers `code` with `Location: URL`; `/loop` redirects to itself;
    /// `/echo` shows the method and the credential headers it got.
    async fn server(seen: Arc<Mutex<Vec<String>>>) -> std::net::SocketAddr {
        let router = Router::new()
            .route(
                "/redirect/{code}",
                any(
                    |Path(code): Path<u16>, Query(q): Query<HashMap<String, String>>| async move {
                        (
                            StatusCode::from_u16(code).unwrap(),
                            [(header::LOCATION, q["to"].clone())],
                        )
                    },
                ),
            )
            .route(
                "/loop",
                get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop")]) }),
            )
            .route(
                "/echo",
                any(move |method: Method, headers: HeaderMap| {
                    let seen = seen.clone();
                    async move {
                        let auth = headers
                            .get(header::AUTHORIZATION)
                            .map_or("none", |v| v.to_str().unwrap())
                            .to_string();
                        let accept = headers
                            .get(header::ACCEPT)
                            .map_or("none", |v| v.to_str().unwrap())
                            .to_string();
                        seen.lock().unwrap().push(method.to_string());
                        (
                            [(header::CONTENT_TYPE, "text/plain")],
                            format!("method={method} auth={auth} accept={accept}"),
                        )
                            .into_response()
                    }
                }),
            );
        crate::web_support::serve(router).await
    }

    fn redirect(addr: std::net::SocketAddr, code: u16, to: &str) -> String {
        redirect_from(&addr.to_string(), code, to)
    }

    fn redirect_from(authority: &str, code: u16, to: &str) -> String {
        let mut url = url::Url::parse(&format!("http://{authority}/redirect/{code}")).unwrap();
        url.query_pairs_mut().append_pair("to", to);
        url.to_string()
    }

    #[tokio::test]
    async fn redirects_to_private_addresses_are_refused_for_every_code() {
        let addr = server(Default::default()).await;
        let tool = loopback_tool();
        for code in CODES {
            for target in [
                "http://169.254.169.254/latest/meta-data/",
                "http://10.0.0.1/",
                "http://[fd00:ec2::254]/",
                "http://0xa9fea9fe/",
                "http://[::ffff:192.168.0.1]/",
                "http://metadata.google.internal/",
                "http://localhost/",
                "file:///etc/passwd",
            ] {
                let started = Instant::now();
                let result = run(
                    &tool,
                    json!({"action": "fetch", "url": redirect(addr, code, target)}),
                )
                .await;
                assert_code(&result, ErrorCode::SsrfBlocked);
                let text = result.text_content();
                // Refused by the URL check of the redirect target: no look-up, no connection (a
                // connection attempt to these addresses would fail or hang, not say this).
                assert!(text.contains("redirect from"), "{code} -> {target}: {text}");
                assert!(started.elapsed() < Duration::from_secs(5));
            }
        }
    }

    #[tokio::test]
    async fn redirects_to_names_that_resolve_privately_are_refused() {
        let addr = server(Default::default()).await;
        let script = ScriptedResolver::new()
            .answer("internal.test", &[&["10.0.0.5"]])
            .answer("mixed-private.test", &[&["192.168.7.7", "fe80::1"]])
            .answer("metadata-alias.test", &[&["169.254.169.254"]]);
        let tool = WebTool::new(loopback_config(&script)).unwrap();
        for code in CODES {
            for name in ["internal.test", "mixed-private.test", "metadata-alias.test"] {
                let result = run(
                &tool,
                json!({"action": "fetch", "url": redirect(addr, code, &format!("http://{name}/x"))}),
            )
            .await;
                assert_code(&result, ErrorCode::SsrfBlocked);
                assert!(
                    result.text_content().contains("resolves only"),
                    "{}",
                    result.text_content()
                );
            }
        }
        // Each refused at the look-up before the hop, never by the client's own look-up.
        assert_eq!(script.calls("internal.test"), CODES.len());
    }

    #[tokio::test]
    async fn a_name_that_rebinds_to_a_private_address_is_refused_at_connect_time() {
        // First answer public (passes the check before the request), second private (the client's
        // own look-up, at connect). Nothing is ever connected to: the second answer is refused.
        let script = ScriptedResolver::new()
            .answer("rebind.test", &[&["93.184.215.14"], &["10.0.0.1"]])
            .answer(
                "rebind6.test",
                &[&["2606:4700::1111"], &["::ffff:127.0.0.1"]],
            );
        let tool = WebTool::new(loopback_config(&script)).unwrap();
        for name in ["rebind.test", "rebind6.test"] {
            let result = run(
                &tool,
                json!({"action": "fetch", "url": format!("http://{name}/")}),
            )
            .await;
            assert_code(&result, ErrorCode::SsrfBlocked);
            let text = result.text_content();
            assert!(text.contains("at connect time"), "{text}");
            assert!(text.contains("resolves only"), "{text}");
            assert_eq!(script.calls(name), 2, "one check, one connect");
        }
    }

    #[tokio::test]
    async fn a_name_that_rebinds_during_a_redirect_chain_is_refused() {
        // hop.test is loopback (allowed in tests) for the first hop's check and connect, then
        // private when the redirect comes back to it. The pooled connection to the first address is
        // not reused for the second hop: its check fails first.
        let addr = server(Default::default()).await;
        let script = ScriptedResolver::new()
            .answer("hop.test", &[&["127.0.0.1"], &["127.0.0.1"], &["10.9.9.9"]]);
        let tool = WebTool::new(loopback_config(&script)).unwrap();
        let authority = format!("hop.test:{}", addr.port());
        let start = redirect_from(&authority, 302, &format!("http://{authority}/echo"));
        let result = run(&tool, json!({"action": "fetch", "url": start})).await;
        assert_code(&result, ErrorCode::SsrfBlocked);
        let text = result.text_content();
        assert!(
            text.contains("10.9.9.9") && text.contains("resolves only"),
            "{text}"
        );
        assert_eq!(script.calls("hop.test"), 3);
    }

    #[tokio::test]
    async fn safe_redirects_are_followed_and_reported() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let addr = server(seen.clone()).await;
        let tool = loopback_tool();
        for code in CODES {
            let start = redirect(addr, code, "/echo");
            let result = run(&tool, json!({"action": "fetch", "url": start})).await;
            assert!(!result.is_error, "{result:?}");
            let text = result.text_content();
            assert!(text.contains(&format!("URL: http://{addr}/echo")), "{text}");
            assert!(
                text.contains(&format!("Redirected from: {start}")),
                "{text}"
            );
            assert!(text.contains("method=GET"), "{text}");
        }
        // HEAD stays HEAD through every kind of redirect.
        seen.lock().unwrap().clear();
        for code in CODES {
            let result = run(
                &tool,
                json!({"action": "fetch", "url": redirect(addr, code, "/echo"), "method": "HEAD"}),
            )
            .await;
            assert!(!result.is_error, "{result:?}");
        }
        assert_eq!(*seen.lock().unwrap(), vec!["HEAD"; CODES.len()]);
    }

    #[tokio::test]
    async fn credentials_are_dropped_when_a_redirect_leaves_the_origin() {
        let a = server(Default::default()).await;
        let b = server(Default::default()).await;
        let tool = loopback_tool();
        let headers = json!({"Authorization": "Bearer secret", "Accept": "text/plain"});
        let same = run(
            &tool,
            json!({"action": "fetch", "url": redirect(a, 302, "/echo"), "headers": headers}),
        )
        .await;
        assert!(
            same.text_content()
                .contains("auth=Bearer secret accept=text/plain"),
            "{same:?}"
        );
        let other = run(
        &tool,
        json!({"action": "fetch", "url": redirect(a, 307, &format!("http://{b}/echo")), "headers": headers}),
    )
    .await;
        assert!(
            other.text_content().contains("auth=none accept=text/plain"),
            "{other:?}"
        );
    }

    #[tokio::test]
    async fn redirect_loops_stop_at_the_hop_limit() {
        let addr = server(Default::default()).await;
        let result = run(
            &loopback_tool(),
            json!({"action": "fetch", "url": format!("http://{addr}/loop")}),
        )
        .await;
        assert_code(&result, ErrorCode::ToolFailed);
        assert!(
            result.text_content().contains("too many redirects"),
            "{result:?}"
        );
    }
}
