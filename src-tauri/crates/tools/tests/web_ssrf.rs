//! The `web` tool's SSRF checks without any traffic: a corpus of URLs that must be refused
//! (numeric and IPv6 encodings, metadata hosts, parser confusion, other schemes), public URLs
//! that must pass, the guarded resolver's filtering, input validation and the call's facts.

#[path = "support/web_support.rs"]
mod web_support;

/// Inside a module named `web` so `cargo test -p osprey-tools web` selects these tests.
mod web {

    use std::sync::Arc;

    use crate::web_support::{ScriptedResolver, assert_code, run};
    use osprey_tools::web::resolve::{GuardedResolver, LookupError};
    use osprey_tools::web::ssrf::{Blocked, UrlError, parse_url};
    use osprey_tools::web::{WebConfig, WebTool};
    use osprey_tools::{ApprovalNeed, DomainTool};
    use osprey_types::ErrorCode;
    use reqwest::dns::Resolve;
    use serde_json::json;

    /// Every one of these must be refused by the URL check, with loopback allowed or not.
    const BLOCKED: &[&str] = &[
        // Loopback, in every spelling the URL standard accepts.
        "http://127.0.0.1/",
        "http://127.1/",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://0177.1/",
        "http://127.0.0.1./",
        "http://127.000.000.001/",
        "http://0x7f.0x0.0x0.0x1/",
        "http://%31%32%37.0.0.1/",
        "http://127。0。0。1/",
        "http://１２７.０.０.１/",
        "http://localhost/",
        "http://LOCALHOST:8080/",
        "http://localhost./",
        "http://foo.localhost/",
        "http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/",
        "http://0/",
        "http://0.0.0.0/",
        "http://[::]/",
        "http://[::1]/",
        "http://[0:0:0:0:0:0:0:1]/",
        // IPv6 forms that embed IPv4.
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[::127.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[::ffff:0:10.0.0.1]/",
        "http://[64:ff9b::127.0.0.1]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[64:ff9b:1::1]/",
        "http://[64:ff9b:1::5db8:d70e]/",
        "http://[2002:7f00:1::]/",
        "http://[2002:a9fe:a9fe::1]/",
        "http://[2002:c0a8:101::1]/",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
        "http://[2001:0:a00:1::1]/",
        // IPv6 ranges.
        "http://[fc00::1]/",
        "http://[fd12:3456:789a::1]/",
        "http://[fd00:ec2::254]/",
        "http://[fe80::1]/",
        "http://[febf::1]/",
        "http://[fec0::1]/",
        "http://[ff02::1]/",
        "http://[2001:db8::1]/",
        "http://[3fff::1]/",
        "http://[2001:2::1]/",
        "http://[100::1]/",
        "http://[4000::1]/",
        // Private, shared, link-local and special IPv4.
        "http://10.0.0.1/",
        "http://10.255.255.255/",
        "http://172.16.0.1/",
        "http://172.31.255.254/",
        "http://192.168.1.1/",
        "http://0xc0a80101/",
        "http://3232235777/",
        "http://100.64.0.1/",
        "http://100.127.255.254/",
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.0.1/",
        "http://0xa9fea9fe/",
        "http://2852039166/",
        "http://0251.0376.0251.0376/",
        "http://169.254.43518/",
        "http://100.100.100.200/latest/meta-data/",
        "http://192.0.0.192/",
        "http://192.0.0.8/",
        "http://198.18.0.1/",
        "http://198.19.255.255/",
        "http://192.0.2.1/",
        "http://198.51.100.7/",
        "http://203.0.113.9/",
        "http://224.0.0.1/",
        "http://239.255.255.250/",
        "http://255.255.255.255/",
        "http://240.0.0.1/",
        "http://192.88.99.1/",
        // Metadata and local-network names.
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://METADATA.GOOGLE.INTERNAL./",
        "http://metadata/",
        "http://metadata.goog/",
        "http://metadata.google.com/computeMetadata/v1/",
        "https://Metadata.Google.Com./",
        "http://metadata.packet.net/metadata",
        "http://instance-data/",
        "http://instance-data.ec2.internal/latest/",
        "http://printer.local/",
        "http://intranet/",
        "http://router.lan/",
        "http://nas.home.arpa/",
        "http://db.corp/",
        "http://1.0.0.127.in-addr.arpa/",
        // Parser confusion.
        "http://evil.com@127.0.0.1/",
        "http://evil.com:80@10.0.0.1/",
        "https://example.com@169.254.169.254/",
        "http://127.0.0.1#@evil.com/",
        "http://127.0.0.1\\@evil.com/",
        "http://127.0.0.1:80\\@example.com/",
        "http://user:pass@example.com/",
        "http://user@example.com/",
        "  http://127.0.0.1/  ",
        "http://1\n27.0.0.1/",
        "http://127.0.0.1\t/",
        "HTTP://127.0.0.1/",
        "//127.0.0.1/",
        "127.0.0.1",
        "localhost:8080",
        "[::1]:80",
        // Other schemes.
        "file:///etc/passwd",
        "file://localhost/etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "ftp://example.com/",
        "data:text/html,<script>alert(1)</script>",
        "dict://127.0.0.1:11211/stat",
        "ldap://127.0.0.1/",
        "javascript:alert(1)",
        "ws://example.com/",
        "wss://example.com/",
        "jar:http://example.com!/",
        "view-source:http://127.0.0.1/",
        "sftp://example.com/",
        "netdoc:///etc/passwd",
        "blob:https://example.com/uuid",
    ];

    /// Public addresses and names: the URL check must let them through (no fetch happens).
    const PUBLIC: &[&str] = &[
        "https://93.184.215.14/",
        "https://[2606:4700::1111]/",
        "https://example.com/",
        "http://example.com:8080/path?q=1#frag",
        "https://EXAMPLE.com./",
        "https://bücher.de/",
        "https://1.1.1.1/",
        "http://8.8.8.8/",
        "https://[2001:4860:4860::8888]/",
        "https://[::ffff:93.184.215.14]/",
        "https://[64:ff9b::5db8:d70e]/",
        "https://[2002:5db8:d70e::1]/",
        "example.com/path",
        "https://172.32.0.1/",
        "https://100.128.0.1/",
        "https://169.255.0.1/",
        "https://192.169.0.1/",
        "https://11.0.0.1/",
        "https://198.20.0.1/",
        "https://localhost.example.com/",
        "https://metadata.example.com/",
    ];

    #[test]
    fn the_corpus_is_refused_by_the_url_check() {
        assert!(BLOCKED.len() >= 60, "corpus has {} URLs", BLOCKED.len());
        for allow_loopback in [false, true] {
            for raw in BLOCKED {
                // With loopback allowed, plain 127/8 and ::1 literals pass by design.
                let plain_loopback = matches!(
                    parse_url(raw, false),
                    Err(UrlError::Blocked(ref b)) if b.reason.starts_with("127.") && b.reason.contains(" is loopback")
                        || b.reason.starts_with("::1 is loopback")
                );
                if allow_loopback && plain_loopback {
                    assert!(
                        parse_url(raw, true).is_ok(),
                        "{raw:?} with loopback allowed"
                    );
                    continue;
                }
                match parse_url(raw, allow_loopback) {
                    Err(UrlError::Blocked(Blocked { reason, .. })) => {
                        assert!(!reason.is_empty(), "{raw:?}")
                    }
                    other => panic!("{raw:?} (allow_loopback {allow_loopback}) gave {other:?}"),
                }
            }
        }
    }

    #[tokio::test]
    async fn the_corpus_is_refused_by_the_tool_with_ssrf_blocked() {
        // Default config: no loopback. The URL check above already proved no request can start.
        let tool = WebTool::new(WebConfig {
            resolver: Some(Arc::new(ScriptedResolver::new())),
            ..WebConfig::default()
        })
        .unwrap();
        for raw in BLOCKED {
            let result = run(&tool, json!({"action": "fetch", "url": raw})).await;
            assert_code(&result, ErrorCode::SsrfBlocked);
            assert!(
                result.text_content().starts_with("refused "),
                "{raw:?}: {}",
                result.text_content()
            );
        }
    }

    #[test]
    fn public_urls_pass_the_url_check() {
        for raw in PUBLIC {
            let url = parse_url(raw, false).unwrap_or_else(|e| panic!("{raw:?}: {e}"));
            assert!(url.fragment().is_none(), "fragments are dropped: {url}");
        }
        assert_eq!(
            parse_url("https://bücher.de/", false).unwrap().host_str(),
            Some("xn--bcher-kva.de")
        );
        assert_eq!(
            parse_url("example.com/path", false).unwrap().as_str(),
            "https://example.com/path"
        );
    }

    #[test]
    fn refusals_say_what_and_why() {
        let reason = |raw: &str| match parse_url(raw, false) {
            Err(UrlError::Blocked(b)) => b.to_string(),
            other => panic!("{raw}: {other:?}"),
        };
        assert!(reason("http://0x7f.1/").contains("127.0.0.1 is loopback"));
        assert!(reason("http://169.254.169.254/").contains("metadata"));
        assert!(reason("http://[::ffff:10.0.0.1]/").contains("IPv4-mapped"));
        assert!(reason("http://[2002:7f00:1::]/").contains("6to4"));
        assert!(reason("http://[64:ff9b::a9fe:a9fe]/").contains("NAT64"));
        assert!(reason("http://[2001:0:a00:1::1]/").contains("Teredo"));
        assert!(reason("http://100.64.0.1/").contains("carrier-grade NAT"));
        assert!(reason("http://198.18.0.1/").contains("benchmarking"));
        assert!(reason("http://metadata.google.internal/").contains("metadata"));
        assert!(reason("http://metadata.google.com/computeMetadata/v1/").contains("metadata"));
        assert!(reason("http://a.localhost/").contains("loopback"));
        assert!(reason("gopher://x.example/").contains("only http and https"));
        assert!(reason("http://a.example@b.example/").contains("credentials"));
    }

    #[test]
    fn unparseable_urls_are_invalid_input() {
        for raw in [
            "http://[::1/",
            "http://exa mple.com/",
            "http://0x100000000/",
            "",
        ] {
            assert!(
                matches!(parse_url(raw, false), Err(UrlError::Invalid(_))),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn loopback_allowance_admits_only_loopback_literals() {
        for ok in [
            "http://127.0.0.1:8080/",
            "http://127.1/",
            "http://[::1]:1/",
            "http://127.255.255.254/",
        ] {
            assert!(parse_url(ok, true).is_ok(), "{ok}");
        }
        for refused in [
            "http://localhost/",
            "http://[::ffff:127.0.0.1]/",
            "http://0.0.0.0/",
            "http://10.0.0.1/",
            "http://169.254.169.254/",
            "http://[fe80::1]/",
            "http://[64:ff9b::7f00:1]/",
        ] {
            assert!(
                matches!(parse_url(refused, true), Err(UrlError::Blocked(_))),
                "{refused}"
            );
        }
    }

    #[tokio::test]
    async fn the_resolver_drops_private_answers_and_fails_when_none_remain() {
        let script = ScriptedResolver::new()
            .answer("private.test", &[&["10.0.0.7"]])
            .answer("mixed.test", &[&["10.0.0.7", "93.184.215.14", "fe80::1"]])
            .answer("mapped.test", &[&["::ffff:127.0.0.1"]])
            .answer("loop.test", &[&["127.0.0.1"]])
            .answer("nat64.test", &[&["64:ff9b::a9fe:a9fe", "2002:a00:1::1"]]);
        let guard = GuardedResolver::new(Some(Arc::new(script.clone())), false);

        let kept = guard.lookup("mixed.test").await.unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].ip().to_string(), "93.184.215.14");

        for name in ["private.test", "mapped.test", "loop.test", "nat64.test"] {
            match guard.lookup(name).await {
                Err(LookupError::Blocked(b)) => assert!(b.reason.contains("resolves only"), "{b}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        // Loopback allowed lets 127/8 through, still not an embedded form.
        let lenient = GuardedResolver::new(Some(Arc::new(script.clone())), true);
        assert!(lenient.lookup("loop.test").await.is_ok());
        assert!(lenient.lookup("mapped.test").await.is_err());

        // Names refused by the name check are never looked up.
        let before = script.total_calls();
        for name in [
            "localhost",
            "a.localhost",
            "metadata.google.internal",
            "metadata.google.com",
            "METADATA.Google.COM.",
            "intranet",
        ] {
            assert!(matches!(
                guard.lookup(name).await,
                Err(LookupError::Blocked(_))
            ));
        }
        assert_eq!(script.total_calls(), before);

        // Through reqwest's trait, the refusal is an error carrying `Blocked` (found in the client's
        // error chain later and reported as ssrf_blocked).
        let err = match Resolve::resolve(&guard, "private.test".parse().unwrap()).await {
            Err(e) => e,
            Ok(_) => panic!("private.test resolved"),
        };
        assert!(err.downcast_ref::<Blocked>().is_some(), "{err}");
    }

    #[tokio::test]
    async fn names_that_resolve_privately_are_refused_before_any_request() {
        let script = ScriptedResolver::new()
            .answer("internal.test", &[&["10.1.2.3"]])
            .answer("nip.test", &[&["169.254.169.254"]]);
        let tool = WebTool::new(WebConfig {
            resolver: Some(Arc::new(script.clone())),
            ..WebConfig::default()
        })
        .unwrap();
        for name in ["internal.test", "nip.test"] {
            let result = run(
                &tool,
                json!({"action": "fetch", "url": format!("http://{name}/")}),
            )
            .await;
            assert_code(&result, ErrorCode::SsrfBlocked);
            assert!(
                result.text_content().contains("resolves only"),
                "{}",
                result.text_content()
            );
            // Refused at the first look-up: the client never got to resolve (and connect).
            assert_eq!(script.calls(name), 1);
        }
    }

    #[tokio::test]
    async fn bad_input_is_refused_with_the_reason() {
        let tool = WebTool::new(WebConfig::default()).unwrap();
        let invalid = |input: serde_json::Value| {
            let tool = &tool;
            async move {
                let result = run(tool, input).await;
                assert_code(&result, ErrorCode::InvalidInput);
                result.text_content()
            }
        };
        assert!(
        invalid(json!({"action": "fetch", "url": "https://example.com/", "headers": {"Host": "internal"}}))
            .await
            .contains("Host")
    );
        assert!(
        invalid(json!({"action": "fetch", "url": "https://example.com/", "headers": {"X-Forwarded-For": "127.0.0.1"}}))
            .await
            .contains("spoofs")
    );
        assert!(
        invalid(json!({"action": "fetch", "url": "https://example.com/", "headers": {"Metadata-Flavor": "Google"}}))
            .await
            .contains("metadata")
    );
        assert!(
            invalid(
                json!({"action": "fetch", "url": "https://example.com/", "headers": {"Accept": 5}})
            )
            .await
            .contains("string")
        );
        assert!(
            invalid(json!({"action": "fetch", "url": "https://example.com/", "max_chars": 0}))
                .await
                .contains("max_chars")
        );
        assert!(
            invalid(json!({"action": "fetch", "url": "http://[::1/"}))
                .await
                .contains("not a valid URL")
        );
        // POST is not in the table at all.
        let err = tool
            .domain()
            .resolve(json!({"action": "fetch", "url": "https://example.com/", "method": "TRACE"}))
            .unwrap_err();
        assert!(err.contains("GET, HEAD, POST, PUT, PATCH, DELETE"), "{err}");
        assert!(tool.domain().resolve(json!({"action": "fetch"})).is_err());
    }

    #[test]
    fn facts_carry_the_canonical_url_and_a_summary() {
        let tool = WebTool::new(WebConfig::default()).unwrap();
        let call = |input| tool.domain().resolve(input).unwrap();

        let facts = tool.facts(&call(
            json!({"action": "fetch", "url": "https://Example.COM/x"}),
        ));
        assert_eq!(facts.approval, ApprovalNeed::Required);
        assert_eq!(facts.url.as_deref(), Some("https://example.com/x"));
        assert_eq!(facts.summary, "fetch https://example.com/x");

        // The backslash form is really a.example: the grant check must see that host.
        let facts = tool.facts(&call(
            json!({"action": "fetch", "url": "https://a.example\\@b.example/"}),
        ));
        assert_eq!(facts.url.as_deref(), Some("https://a.example/@b.example/"));

        let facts = tool.facts(&call(json!({
            "resource": "http", "action": "fetch", "url": "example.com",
            "method": "HEAD", "headers": {"Authorization": "Bearer t"}
        })));
        assert_eq!(
            facts.summary,
            "fetch headers of https://example.com/ (sending headers: Authorization)"
        );

        let schema = tool.domain().json_schema();
        assert_eq!(schema["properties"]["resource"]["enum"], json!(["http"]));
        assert_eq!(schema["properties"]["max_chars"]["default"], 20000);
        assert_eq!(schema["properties"]["offset"]["default"], 0);
        assert_eq!(schema["properties"]["raw"]["default"], false);
    }
}
