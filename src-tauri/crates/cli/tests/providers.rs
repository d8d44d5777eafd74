//! Provider settings as a person sets them up from the terminal: `osprey config set provider.…`
//! stores base URLs and models in the settings and keys in the secret store (here the private
//! file: there is no keyring on a test machine), `osprey chat` then uses them without flags, and
//! a local Ollama that answers is offered when nothing else is set up. Every model server is a
//! real loopback HTTP server speaking the provider's wire format.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use osprey_tests::{Finished as Run, run_with_input};
use serde_json::{Value, json};

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

/// Answers each connection with `respond(path, body)` -> (status, content type, body); records
/// every request.
struct Server {
    address: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn serve(respond: impl Fn(&str, &Value) -> (u16, &'static str, String) + Send + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap_or(0);
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .to_string();
            let (mut length, mut authorization) = (0, None);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap();
                    } else if name.eq_ignore_ascii_case("authorization") {
                        authorization = Some(value.trim().to_string());
                    }
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let (status, kind, reply) = respond(&path, &body);
            record.lock().unwrap().push(Seen {
                path,
                authorization,
                body,
            });
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
            let _ = stream.flush();
        }
    });
    Server { address, seen }
}

/// Runs `osprey` with no provider keys in its environment and the secret store forced to the
/// private file.
fn osprey(data: &Path, args: &[&str], stdin: &str, environment: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_osprey"));
    command
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("OSPREY_DATA_DIR")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OLLAMA_HOST")
        .env("OSPREY_SECRETS", "file");
    for (name, value) in environment {
        command.env(name, value);
    }
    run_with_input(&mut command, stdin)
}

fn openai_text(text: &str) -> String {
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    chunk(json!({"role": "assistant", "content": text}), Value::Null)
        + &chunk(json!({}), json!("stop"))
        + "data: [DONE]\n\n"
}

/// An address where nothing listens (bound, then closed).
fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

#[test]
fn stored_provider_settings_and_key_drive_chat_and_the_key_is_never_printed() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(|_, _| (200, "text/event-stream", openai_text("configured")));
    let base_url = format!("http://{}/v1", server.address);
    for (key, value) in [
        ("provider.default", "openai"),
        ("provider.openai.base_url", base_url.as_str()),
        ("provider.openai.model", "local-model"),
    ] {
        let run = osprey(data.path(), &["config", "set", key, value], "", &[]);
        assert_eq!(run.code, 0, "{key}: {}", run.stderr);
    }
    // The key comes from standard input, so it stays out of shell history.
    let run = osprey(
        data.path(),
        &["config", "set", "provider.openai.api_key", "-"],
        "sk-from-stdin\n",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("readable only by you"),
        "{}",
        run.stderr
    );

    let run = osprey(data.path(), &["chat", "-p", "hello"], "", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "configured");
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Bearer sk-from-stdin")
    );
    assert_eq!(seen[0].body["model"], "local-model");

    // The key is in the private file and nowhere in the settings.
    let secrets = data.path().join("secrets.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&secrets).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(
        std::fs::read_to_string(&secrets)
            .unwrap()
            .contains("sk-from-stdin")
    );
    let run = osprey(data.path(), &["config", "get", "providers"], "", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("sk-from-stdin"), "{}", run.stdout);
    assert!(run.stdout.contains("local-model"), "{}", run.stdout);
    let run = osprey(
        data.path(),
        &["config", "get", "provider.openai.api_key"],
        "",
        &[],
    );
    assert_ne!(run.code, 0);
    assert!(!run.stdout.contains("sk-from-stdin"));
    assert!(run.stderr.contains("never printed"), "{}", run.stderr);

    let run = osprey(data.path(), &["config", "providers", "--json"], "", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("sk-from-stdin"));
    let shown: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(shown["chat_uses"], "openai local-model");
    assert_eq!(shown["default"], "openai");
    let openai = shown["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == "openai")
        .unwrap();
    assert_eq!(openai["key"], "stored");

    // Unsetting the key removes it from the store.
    let run = osprey(
        data.path(),
        &["config", "unset", "provider.openai.api_key"],
        "",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !std::fs::read_to_string(&secrets)
            .unwrap()
            .contains("sk-from-stdin")
    );
}

#[test]
fn bad_provider_settings_are_refused_with_what_to_do_and_nothing_changes() {
    let data = tempfile::tempdir().unwrap();
    let run = osprey(
        data.path(),
        &["config", "set", "provider.openai.model", "kept"],
        "",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (key, value, expected) in [
        ("provider.default", "gemini", "unknown provider"),
        ("provider.openai.base_url", "not a url", "is not a URL"),
        ("provider.openai.base_url", "ftp://host/v1", "http or https"),
        ("provider.openai.colour", "blue", "provider.default"),
        ("provider.mistral.model", "x", "unknown provider"),
    ] {
        let run = osprey(data.path(), &["config", "set", key, value], "", &[]);
        assert_ne!(run.code, 0, "{key} = {value} was accepted");
        assert!(run.stderr.contains(expected), "{key}: {}", run.stderr);
    }
    let run = osprey(data.path(), &["config", "get", "providers"], "", &[]);
    let stored: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(
        stored,
        json!({"anthropic": {}, "openai": {"model": "kept"}, "ollama": {}})
    );
}

/// Ollama's streamed answer (`/api/chat`, one JSON object per line) of `pieces` from qwen3:0.6b.
fn ollama_answer(pieces: &[&str]) -> (u16, &'static str, String) {
    let message = |content: &str| json!({"role": "assistant", "content": content});
    let mut lines: Vec<Value> = pieces
        .iter()
        .map(|piece| json!({"model": "qwen3:0.6b", "message": message(piece), "done": false}))
        .collect();
    lines.push(
        json!({"model": "qwen3:0.6b", "message": message(""), "done": true,
        "done_reason": "stop", "prompt_eval_count": 3, "eval_count": pieces.len()}),
    );
    let body = lines.iter().map(|line| format!("{line}\n")).collect();
    (200, "application/x-ndjson", body)
}

#[test]
fn a_local_ollama_is_offered_when_nothing_is_set_up() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(|path, _| match path {
        "/api/tags" => (
            200,
            "application/json",
            json!({"models": [{"name": "qwen3:0.6b", "size": 1}]}).to_string(),
        ),
        "/api/chat" => ollama_answer(&["local ", "answer"]),
        _ => (404, "text/plain", "not found".into()),
    });
    let ollama_host = [("OLLAMA_HOST", server.address.as_str())];
    let run = osprey(data.path(), &["chat", "-p", "hi"], "", &ollama_host);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "local answer");
    let seen = server.seen.lock().unwrap().clone();
    let chat = seen.iter().find(|s| s.path == "/api/chat").unwrap();
    // llama3.2 is not installed there, so the model it has is used.
    assert_eq!(chat.body["model"], "qwen3:0.6b");

    // Nothing answers and nothing is configured: the error says how to set a provider up.
    let nowhere = closed_port();
    let run = osprey(
        data.path(),
        &["chat", "-p", "hi"],
        "",
        &[("OLLAMA_HOST", nowhere.as_str())],
    );
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("no model provider is set up")
            && run
                .stderr
                .contains("osprey config set provider.anthropic.api_key"),
        "{}",
        run.stderr
    );
}

/// Ollama's window for a model is asked once from `/api/show` and kept in the database: a second
/// process on the same data folder sizes `num_ctx` from it without asking again.
#[test]
fn ollama_remembers_a_models_window_across_processes() {
    let data = tempfile::tempdir().unwrap();
    const WINDOW: u64 = 65_536;
    /// What Osprey asks for at most while it does not know the window.
    const UNKNOWN_CAP: u64 = 32_768;
    let server = serve(|path, _| {
        match path {
        "/api/show" => (
            200,
            "application/json",
            json!({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": WINDOW}})
                .to_string(),
        ),
        "/api/chat" => ollama_answer(&["ok"]),
        _ => (404, "text/plain", "not found".into()),
    }
    });
    let url = format!("http://{}", server.address);
    // A prompt of about 35,000 tokens (with the system prompt and tools): more than Osprey asks
    // for while the window is unknown, and well within the window (so nothing is summarised).
    let long = "word ".repeat(24_000);
    let args = [
        "chat",
        "--provider",
        "ollama",
        "--base-url",
        url.as_str(),
        "--model",
        "qwen3:0.6b",
        "-p",
        long.as_str(),
    ];
    let count = |path: &str| {
        server
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path == path)
            .count()
    };
    let num_ctx = || {
        let seen = server.seen.lock().unwrap();
        let chat = seen.iter().rev().find(|s| s.path == "/api/chat").unwrap();
        chat.body["options"]["num_ctx"].as_u64().unwrap()
    };

    let first = osprey(data.path(), &args, "", &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(count("/api/show"), 1);
    let sized = num_ctx();
    assert!(
        sized > UNKNOWN_CAP && sized <= WINDOW,
        "the first run sizes num_ctx within the window: {sized}"
    );

    let second = osprey(data.path(), &args, "", &[]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(count("/api/chat"), 2);
    assert_eq!(
        count("/api/show"),
        1,
        "the second process asked /api/show again"
    );
    assert_eq!(
        num_ctx(),
        sized,
        "the second run uses the remembered window"
    );
}

/// Child processes killed when the test ends, however it ends.
struct Children(Vec<std::process::Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn program(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

/// With a real Secret Service (gnome-keyring on a private session bus), keys go to the keyring
/// and never touch the data directory.
#[test]
fn keys_go_to_the_system_keyring_when_one_answers() {
    if !program("gnome-keyring-daemon") || !program("dbus-daemon") {
        assert!(
            std::env::var("CI").is_err(),
            "gnome-keyring-daemon and dbus-daemon must be installed on CI (scripts/setup)"
        );
        eprintln!(
            "skipped: gnome-keyring-daemon or dbus-daemon is not installed (scripts/setup installs them)"
        );
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let runtime = home.path().join("run");
    std::fs::create_dir(&runtime).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut children = Children(Vec::new());
    let mut bus = Command::new("dbus-daemon")
        .args(["--session", "--nofork", "--print-address=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut address = String::new();
    BufReader::new(bus.stdout.take().unwrap())
        .read_line(&mut address)
        .unwrap();
    children.0.push(bus);
    let address = address.trim().to_string();
    let environment = [
        ("DBUS_SESSION_BUS_ADDRESS", address.as_str()),
        ("HOME", home.path().to_str().unwrap()),
        ("XDG_RUNTIME_DIR", runtime.to_str().unwrap()),
    ];
    let mut keyring = Command::new("gnome-keyring-daemon");
    keyring
        .args(["--unlock", "--components=secrets", "--foreground"])
        .envs(environment)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut keyring = keyring.spawn().unwrap();
    // The login keyring's password, then end of input.
    keyring.stdin.take().unwrap().write_all(b"test").unwrap();
    children.0.push(keyring);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let owned = Command::new("dbus-send")
            .args([
                "--session",
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.NameHasOwner",
                "string:org.freedesktop.secrets",
            ])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .output()
            .unwrap();
        if String::from_utf8_lossy(&owned.stdout).contains("boolean true") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "gnome-keyring did not take org.freedesktop.secrets within 20 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    let data = home.path().join("data");
    let run_with_keyring = |args: &[&str], stdin: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_osprey"));
        command
            .arg("--data-dir")
            .arg(&data)
            .args(args)
            .env_remove("OSPREY_DATA_DIR")
            .env_remove("OSPREY_SECRETS")
            .env_remove("ANTHROPIC_API_KEY")
            .envs(environment);
        run_with_input(&mut command, stdin)
    };
    let run = run_with_keyring(
        &["config", "set", "provider.anthropic.api_key", "-"],
        "sk-in-keyring",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("the system keyring"), "{}", run.stderr);
    assert!(!data.join("secrets.json").exists());
    let run = run_with_keyring(&["config", "providers", "--json"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let shown: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(shown["providers"][0]["provider"], "anthropic");
    assert_eq!(shown["providers"][0]["key"], "stored");
    assert_eq!(shown["chat_uses"], "anthropic claude-sonnet-4-5");
    // Removed from the keyring: the next run has no key.
    let run = run_with_keyring(&["config", "unset", "provider.anthropic.api_key"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = run_with_keyring(&["config", "providers", "--json"], "");
    let shown: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(shown["providers"][0]["key"], "not_set");
}

/// With `memory.embeddings` set, the agent tool's memory search finds by meaning through the
/// configured Ollama embedder; the setting is validated when it is written.
#[test]
fn memory_search_uses_the_configured_embeddings() {
    let data = tempfile::tempdir().unwrap();
    // Vectors by topic: vehicles point one way, everything else the other.
    let server = serve(|path, body| {
        if path != "/api/embed" {
            return (404, "text/plain", "not found".into());
        }
        let vectors: Vec<Value> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|text| {
                let text = text.as_str().unwrap();
                if text.contains("hatchback") || text.contains("vehicle") {
                    json!([1.0, 0.0])
                } else {
                    json!([0.0, 1.0])
                }
            })
            .collect();
        let reply = json!({"model": "nomic-embed-text", "embeddings": vectors});
        (200, "application/json", reply.to_string())
    });
    let refused = osprey(
        data.path(),
        &[
            "config",
            "set",
            "memory.embeddings",
            r#"{"provider": "anthropic", "model": "x"}"#,
        ],
        "",
        &[],
    );
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains("no embeddings API"),
        "{}",
        refused.stderr
    );
    let setting = json!({"provider": "ollama", "model": "nomic-embed-text",
        "base_url": format!("http://{}", server.address)});
    let run = osprey(
        data.path(),
        &["config", "set", "memory.embeddings", &setting.to_string()],
        "",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    for content in ["Sam drives a red hatchback", "The garden needs water"] {
        let input = json!({"resource": "memory", "action": "store", "content": content});
        let run = osprey(
            data.path(),
            &["tool", "agent", &input.to_string(), "--policy", "full"],
            "",
            &[],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let input = json!({"resource": "memory", "action": "search", "query": "vehicle"});
    let run = osprey(
        data.path(),
        &["tool", "agent", &input.to_string(), "--policy", "full"],
        "",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let found: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        found["memories"][0]["content"], "Sam drives a red hatchback",
        "{found}"
    );
    let seen = server.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|s| s.path == "/api/embed"));
    assert_eq!(seen.last().unwrap().body["input"], json!(["vehicle"]));
}
