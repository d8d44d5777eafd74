//! A UI app served as the shell serves it: static files from ui/ (and nothing outside it), and
//! `/api/*` forwarded to the app process's UIService.

#[path = "support/fixtures.rs"]
mod fixtures;

use osprey_apps::ui::{self, UiRequest};
use serde_json::{Value, json};

use fixtures::{Apps, fixture_binary};

fn get(path: &str) -> UiRequest {
    UiRequest {
        method: "GET".into(),
        path: path.into(),
        ..UiRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_files_and_the_api_are_served() {
    let apps = Apps::new();
    let dir = apps.install(
        "panel",
        &fixture_binary("osprey-fixture-ui-app"),
        json!({"provides": ["ui"]}),
    );
    std::fs::create_dir_all(dir.join("ui/assets")).unwrap();
    std::fs::write(dir.join("ui/index.html"), "<h1>panel</h1>").unwrap();
    std::fs::write(dir.join("ui/assets/app.js"), "console.log('hi')").unwrap();
    std::fs::write(dir.join("ui/.secret"), "hidden").unwrap();
    std::os::unix::fs::symlink(dir.join("manifest.json"), dir.join("ui/manifest.json")).unwrap();

    let app = apps.launcher().launch("panel").await.unwrap();
    app.health().await.unwrap();
    let channel = app.channel();
    let serve = |request: UiRequest| ui::serve(&dir, channel.clone(), request);

    let index = serve(get("/")).await;
    assert_eq!(index.status, 200);
    assert_eq!(index.body, b"<h1>panel</h1>");
    assert!(
        index
            .headers
            .contains(&("content-type".into(), "text/html; charset=utf-8".into()))
    );
    let script = serve(get("/assets/app.js")).await;
    assert_eq!(script.status, 200);
    assert!(script.headers[0].1.starts_with("text/javascript"));

    for path in [
        "/../manifest.json",
        "/assets/../../manifest.json",
        "/.secret",
        "/manifest.json",
        "/assets",
        "/missing.html",
        "//etc/passwd",
    ] {
        assert_eq!(serve(get(path)).await.status, 404, "{path}");
    }

    let echo = serve(UiRequest {
        method: "POST".into(),
        path: "/api/echo".into(),
        query: "x=1".into(),
        headers: vec![("connection".into(), "close".into())],
        body: b"payload".to_vec(),
    })
    .await;
    assert_eq!(echo.status, 200);
    let echoed: Value = serde_json::from_slice(&echo.body).unwrap();
    assert_eq!(
        echoed,
        json!({"method": "POST", "path": "/echo", "query": "x=1", "body": "payload"})
    );
    for expected in 1..=2 {
        let counter = serve(UiRequest {
            method: "POST".into(),
            path: "/api/counter".into(),
            ..UiRequest::default()
        })
        .await;
        let count: Value = serde_json::from_slice(&counter.body).unwrap();
        assert_eq!(count["count"], expected);
    }
    assert_eq!(serve(get("/api/nope")).await.status, 404);
    let write = UiRequest {
        method: "PUT".into(),
        path: "/index.html".into(),
        ..UiRequest::default()
    };
    assert_eq!(serve(write).await.status, 405);

    app.stop().await;
    assert_eq!(serve(get("/api/echo")).await.status, 502);
    assert_eq!(
        serve(get("/")).await.status,
        200,
        "static files need no process"
    );
}
