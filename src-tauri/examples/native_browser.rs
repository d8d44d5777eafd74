//! Drives the `native` browser profile outside the agent, for a quick look and for timing:
//! starts the desktop shell's Tauri runtime (no main window), serves a page with many elements
//! on loopback, and runs browser actions on it in the native profile and, when Chromium is
//! installed, in the managed one and with Playwright (playwright-core driving the same Chromium,
//! osprey-browser's bench peer) in the same run, printing each result and a table of the median
//! snapshot and navigate-to-snapshot times.
//!
//! `cargo run --release -p osprey-desktop --example native_browser [-- --elements N --rounds R]`
//! under a display (Xvfb works); the Playwright side needs `npm ci --prefix
//! src-tauri/crates/browser/benches/playwright` (scripts/bench does it).

#[cfg(target_os = "linux")]
#[path = "../crates/browser/benches/playwright/peer.rs"]
mod peer;

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("the native browser profile is built on Linux only for now");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use osprey_browser::{BrowserActions, Driver};

    use super::peer;
    use osprey_tools::Call;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

    fn page(elements: usize) -> String {
        let mut body = String::from(
            "<h1>Timing page</h1><button id=b onclick=\"document.getElementById('s').textContent='clicked'\">Press</button><p id=s>not yet</p><label>Name <input id=n></label><p id=echo></p>",
        );
        for i in 0..elements {
            body.push_str(&format!(
                "<div><a href=\"#item{i}\">Item {i}</a> <input type=checkbox aria-label=\"Pick {i}\"> <span>text {i}</span></div>"
            ));
        }
        format!(
            "<!doctype html><html><head><title>Timing page</title></head><body>{body}<script>document.getElementById('n').addEventListener('input', e => document.getElementById('echo').textContent = 'Hello, ' + e.target.value)</script></body></html>"
        )
    }

    async fn serve(html: String) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let html = Arc::new(html);
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    continue;
                };
                let html = html.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = stream.read(&mut buf).await;
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                        html.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                });
            }
        });
        url
    }

    fn show(name: &str, result: &osprey_types::ToolResult) {
        let text: Vec<String> = result
            .content
            .iter()
            .map(|b| match b {
                osprey_types::ContentBlock::Text { text } => text.chars().take(600).collect(),
                osprey_types::ContentBlock::Image { mime_type, data } => {
                    format!("[{mime_type}, {} base64 bytes]", data.len())
                }
            })
            .collect();
        println!(
            "== {name} (error: {}) ==\n{}\n",
            result.is_error,
            text.join("\n")
        );
    }

    /// The median of `times`, in milliseconds.
    fn median(mut times: Vec<Duration>) -> Option<f64> {
        times.sort();
        times.get(times.len() / 2).map(|d| d.as_secs_f64() * 1000.0)
    }

    fn ms(value: Option<f64>) -> String {
        value.map_or("-".into(), |v| format!("{v:.0} ms"))
    }

    /// Median snapshot and navigate-to-snapshot times, in milliseconds.
    type Figures = (Option<f64>, Option<f64>);

    async fn exercise(
        actions: &BrowserActions,
        profile: &str,
        url: &str,
        rounds: usize,
    ) -> Figures {
        let run = |input: Value| {
            let mut input = input;
            input["profile"] = json!(profile);
            async move { actions.run(&call(input)).await }
        };
        let started = Instant::now();
        let nav = run(json!({"action": "navigate", "url": url, "max_chars": 400})).await;
        let nav_ms = started.elapsed().as_millis();
        show(&format!("{profile} navigate ({nav_ms} ms)"), &nav);
        let timed = |input: Value| async move {
            let mut times = Vec::new();
            for _ in 0..rounds {
                let t = Instant::now();
                let result = run(input.clone()).await;
                times.push(t.elapsed());
                if result.is_error {
                    show(input["action"].as_str().unwrap_or_default(), &result);
                    break;
                }
            }
            median(times)
        };
        let snapshot = timed(json!({"action": "snapshot", "max_chars": 100000})).await;
        // Navigate with the whole snapshot in the answer, as Playwright's `goto` + snapshot.
        let navigate = timed(json!({"action": "navigate", "url": url, "max_chars": 100000})).await;
        println!(
            "{profile}: snapshot median {}, navigate + snapshot {} over {rounds} rounds\n",
            ms(snapshot),
            ms(navigate)
        );
        if profile == "native" {
            // The page script's own time (native only: in `managed` it lives in an isolated
            // world that `evaluate` does not reach).
            let inner = run(json!({"action": "evaluate", "script": "(() => { const t = performance.now(); globalThis.__osprey.run('snapshot', {max_chars: 100000}); return Math.round(performance.now() - t); })()"})).await;
            show("native snapshot inside the page (ms)", &inner);
        }
        for input in [
            json!({"action": "click", "selector": "#b"}),
            json!({"action": "fill", "selector": "#n", "value": "Osprey"}),
            json!({"action": "text", "selector": "body", "max_chars": 120}),
            json!({"action": "evaluate", "script": "new Promise(r => setTimeout(() => r({late: 42}), 100))"}),
            json!({"action": "press", "selector": "#n", "key": "Control+a"}),
            json!({"action": "type", "selector": "#n", "text": "Hi"}),
            json!({"action": "evaluate", "script": "document.getElementById('echo').textContent"}),
            json!({"action": "screenshot"}),
            json!({"action": "navigate", "url": "http://169.254.169.254/"}),
            json!({"action": "list_pages"}),
        ] {
            let name = format!("{profile} {}", input["action"].as_str().unwrap_or_default());
            show(&name, &run(input).await);
        }
        (snapshot, navigate)
    }

    /// The same figures with Playwright driving the same Chromium on the same page.
    fn playwright(url: &str, rounds: usize) -> Result<Figures, String> {
        let chromium = osprey_browser::find_chromium().map_err(|e| e.to_string())?;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("crates/browser/benches/playwright");
        let mut peer = peer::Peer::start(&dir, &chromium, url)?;
        let mut time = |command: &str| {
            let times: Vec<Duration> = (0..rounds)
                .map(|_| {
                    let t = Instant::now();
                    peer.ask(command);
                    t.elapsed()
                })
                .collect();
            median(times)
        };
        Ok((time("snapshot"), time("navigate")))
    }

    fn table(rows: &[(&str, Figures)]) {
        let baseline = rows
            .iter()
            .find(|(name, _)| *name == "Playwright")
            .map(|r| r.1);
        let ratio = |v: Option<f64>, base: Option<f64>| match (v, base) {
            (Some(v), Some(b)) if b > 0.0 => format!("{:.2}x", v / b),
            _ => "-".into(),
        };
        println!(
            "| profile | snapshot, 1,000 elements | vs Playwright | navigate + snapshot | vs Playwright |"
        );
        println!("| --- | --- | --- | --- | --- |");
        for (name, (snapshot, navigate)) in rows {
            println!(
                "| {name} | {} | {} | {} | {} |",
                ms(*snapshot),
                ratio(*snapshot, baseline.and_then(|b| b.0)),
                ms(*navigate),
                ratio(*navigate, baseline.and_then(|b| b.1)),
            );
        }
    }

    pub fn main() {
        let mut args = std::env::args().skip(1);
        let mut elements = 1000;
        let mut rounds = 10;
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--elements" => {
                    elements = args.next().and_then(|v| v.parse().ok()).unwrap_or(elements)
                }
                "--rounds" => rounds = args.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
                _ => {}
            }
        }
        let data = tempfile::tempdir().expect("a temporary folder");
        let data_dir = data.path().to_path_buf();
        let mut context: tauri::Context = tauri::generate_context!();
        // No main window: only the browser's own.
        context.config_mut().app.windows.clear();
        tauri::Builder::default()
            .setup(move |app| {
                let handle = app.handle().clone();
                tauri::async_runtime::spawn(async move {
                    let url = serve(page(elements)).await;
                    let native = osprey_desktop::browser::NativeDriver::new(
                        handle.clone(),
                        osprey_core::BrowserProfileConfig {
                            profile_dir: data_dir.join("browser/native"),
                            allow_loopback: true,
                            downloads: osprey_browser::DownloadFolder::default(),
                            hidden_windows: Default::default(),
                        },
                    );
                    let mut managed =
                        osprey_browser::ManagedConfig::new(data_dir.join("browser/managed"));
                    managed.allow_loopback = true;
                    let managed: Arc<dyn Driver> =
                        Arc::new(osprey_browser::ManagedDriver::new(managed));
                    let actions = BrowserActions::new(managed, true);
                    actions.add_profile(Arc::new(native), true);
                    let mut rows =
                        vec![("native", exercise(&actions, "native", &url, rounds).await)];
                    if osprey_browser::find_chromium().is_ok() {
                        rows.push(("managed", exercise(&actions, "managed", &url, rounds).await));
                        let _ = actions
                            .run(&call(json!({"action": "close", "profile": "managed"})))
                            .await;
                        let page = url.clone();
                        match tokio::task::spawn_blocking(move || playwright(&page, rounds)).await {
                            Ok(Ok(figures)) => rows.push(("Playwright", figures)),
                            Ok(Err(why)) => println!("no Playwright baseline: {why}"),
                            Err(e) => println!("no Playwright baseline: {e}"),
                        }
                    }
                    table(&rows);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    handle.exit(0);
                });
                Ok(())
            })
            .run(context)
            .expect("the Tauri runtime");
    }
}
