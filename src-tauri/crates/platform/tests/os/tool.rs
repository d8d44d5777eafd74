//! The tool as a whole: the capability status, system facts, file search, the schema's size,
//! and the approvals the registry asks for by origin.

use std::time::Duration;

use osprey_platform::{Category, OsConfig, OsTool};
use osprey_tools::{
    CheckOutcome, DomainTool, Policy, PolicyConfig, Registry, RegistryConfig, ToolContext,
};
use osprey_types::Origin;
use serde_json::json;

use crate::harness::{call, ok_text, private_bus};

#[tokio::test(flavor = "multi_thread")]
async fn status_says_what_works_here_and_why_not() {
    let (_bus, address) = private_bus();
    let tool = OsTool::new(OsConfig {
        x11_display: Some(":4078".into()),
        session_bus_address: Some(address.clone()),
        system_bus_address: Some(address),
        data_dirs: Some(vec![]),
        search_roots: vec![std::env::temp_dir()],
        disabled_categories: vec![Category::Media],
        bus_timeout: Duration::from_secs(2),
        ..OsConfig::default()
    });
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    let line = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(&format!("{name} (")))
            .unwrap_or_else(|| panic!("{name} missing:\n{status}"))
            .to_string()
    };
    assert!(
        line("notification").contains("unavailable - service_unavailable"),
        "{status}"
    );
    assert!(
        line("keychain").contains("unavailable - service_unavailable"),
        "{status}"
    );
    assert!(
        line("window").contains("unavailable - service_unavailable"),
        "{status}"
    );
    assert!(
        line("music").contains("unavailable - not_configured: the media category is switched off"),
        "{status}"
    );
    assert!(
        line("app").contains("available - 0 desktop applications"),
        "{status}"
    );
    assert!(
        line("system").contains("available - system facts; battery: no service"),
        "{status}"
    );
    assert!(
        line("search").contains("available - searches")
            && line("search").ends_with("; no desktop index runs"),
        "{status}"
    );
    // A switched-off category is not offered at all.
    let result = call(&tool, json!({"resource": "music", "action": "status"})).await;
    assert!(
        result.is_error && result.text_content().contains("no resource `music`"),
        "{result:?}"
    );
    assert!(tool.offered().iter().all(|c| c.category != Category::Media));
}

#[tokio::test(flavor = "multi_thread")]
async fn system_info_reports_the_machine_and_lock_needs_logind() {
    let (_bus, address) = private_bus();
    let tool = OsTool::new(OsConfig {
        session_bus_address: Some(address.clone()),
        // A bus without logind, UPower or NetworkManager on it.
        system_bus_address: Some(address),
        bus_timeout: Duration::from_secs(2),
        ..OsConfig::default()
    });
    let info = ok_text(&call(&tool, json!({"resource": "system", "action": "info"})).await);
    for fact in [
        "os: ", "kernel: ", "host: ", "cpu: ", "memory: ", "uptime: ", "disk /",
    ] {
        assert!(info.contains(fact), "{fact} missing:\n{info}");
    }
    assert!(
        info.contains("power: unknown (no service answers)"),
        "{info}"
    );
    let result = call(&tool, json!({"resource": "system", "action": "lock"})).await;
    assert_eq!(
        result.code.map(|c| c.as_str()),
        Some("service_unavailable"),
        "{result:?}"
    );
    assert!(result.text_content().contains("logind"), "{result:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn search_finds_files_by_name_and_content_and_skips_guarded_ones() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".local/share/osprey");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(home.path().join("Documents")).unwrap();
    std::fs::create_dir_all(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join("Documents/invoice-march.txt"),
        "Total: 120 EUR\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join(".aws/credentials"),
        "aws_secret_access_key = EUR\n",
    )
    .unwrap();
    let guard = osprey_tools::PathGuard::new(Some(home.path().to_path_buf()), data);
    let tool = OsTool::new(OsConfig {
        search_roots: vec![home.path().to_path_buf()],
        ..OsConfig::default()
    })
    .with_path_guard(guard);
    let found = ok_text(
        &call(
            &tool,
            json!({"resource": "search", "action": "files", "query": "invoice"}),
        )
        .await,
    );
    assert!(found.ends_with("Documents/invoice-march.txt"), "{found}");
    let found = ok_text(
        &call(
            &tool,
            json!({"resource": "search", "action": "files", "content": "eur", "hidden": true}),
        )
        .await,
    );
    assert!(
        found.ends_with("invoice-march.txt:1: Total: 120 EUR"),
        "{found}"
    );
    assert!(
        !found.contains("credentials"),
        "a credential file was searched:\n{found}"
    );
    let result = call(
        &tool,
        json!({"resource": "search", "action": "files", "content": "x", "path": "/no/such/dir"}),
    )
    .await;
    assert_eq!(result.code.map(|c| c.as_str()), Some("invalid_input"));
    let result = call(&tool, json!({"resource": "search", "action": "files"})).await;
    assert!(result.is_error && result.text_content().contains("needs `query`"));
}

fn check(registry: &Registry, origin: Origin, input: serde_json::Value) -> CheckOutcome {
    let ctx = ToolContext::new(origin, Duration::from_secs(5));
    futures::executor::block_on(registry.check(&ctx, "os", input))
}

#[test]
fn approvals_follow_the_table_and_the_origin() {
    let data = tempfile::tempdir().unwrap();
    let policy = Policy::new(PolicyConfig::default(), None).unwrap();
    let registry = Registry::new(RegistryConfig::new(policy, data.path()));
    registry.register_domain(OsTool::new(OsConfig::default()));
    let asks = |outcome: &CheckOutcome| matches!(outcome, CheckOutcome::Ask { .. });
    let read = json!({"resource": "clipboard", "action": "read"});
    let notify = json!({"resource": "notification", "action": "send", "title": "t"});
    for input in [read, notify] {
        assert!(!asks(&check(&registry, Origin::User, input.clone())));
        for origin in [Origin::Comm, Origin::App, Origin::Skill] {
            assert!(
                asks(&check(&registry, origin, input.clone())),
                "{origin:?} runs {input} unasked"
            );
        }
    }
    for input in [
        json!({"resource": "keychain", "action": "read", "key": "k"}),
        json!({"resource": "app", "action": "quit", "pid": 5}),
        json!({"resource": "system", "action": "lock"}),
        json!({"resource": "system", "action": "set_brightness", "percent": 40}),
        json!({"resource": "window", "action": "close", "window": "x"}),
        json!({"resource": "clipboard", "action": "write", "text": "x"}),
    ] {
        assert!(
            asks(&check(&registry, Origin::User, input.clone())),
            "{input} runs unasked"
        );
    }
    for input in [
        json!({"resource": "system", "action": "info"}),
        json!({"resource": "system", "action": "brightness"}),
        json!({"resource": "window", "action": "list"}),
        json!({"resource": "notification", "action": "send", "title": "t"}),
    ] {
        assert!(
            !asks(&check(&registry, Origin::User, input.clone())),
            "{input} is asked"
        );
    }
}

/// The schema every model receives with the tool: printed so its cost is on record.
#[test]
fn schema_size_is_measured() {
    let tool = OsTool::new(OsConfig::default());
    let domain = tool.domain();
    let size = |description: &str, schema: serde_json::Value| {
        serde_json::to_string(&json!({
            "name": "os",
            "description": description,
            "input_schema": schema,
        }))
        .unwrap()
        .len()
    };
    let full = size(&domain.description, domain.json_schema());
    let short = size(&domain.stub_description(), domain.stub_schema());
    eprintln!(
        "os tool schema: {full} characters (about {} tokens) in full, {short} (about {}) in the \
         short form models get until they call it: {:.1}x smaller",
        full / 4,
        short / 4,
        full as f64 / short as f64
    );
    assert!(domain.deferred, "the os tool is deferred");
    assert!(
        full / 4 < 4000,
        "the os schema grew to about {} tokens",
        full / 4
    );
    assert!(
        short * 3 < full,
        "the short form saves too little: {short} of {full}"
    );
}

struct Login {
    can_suspend: String,
    calls: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

#[zbus::interface(name = "org.freedesktop.login1.Manager")]
impl Login {
    fn can_suspend(&self) -> String {
        self.can_suspend.clone()
    }
    fn suspend(&self, interactive: bool) {
        self.calls
            .lock()
            .unwrap()
            .push(format!("Suspend({interactive})"));
    }
}

struct Session {
    calls: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

#[zbus::interface(name = "org.freedesktop.login1.Session")]
impl Session {
    fn lock(&self) {
        self.calls.lock().unwrap().push("Lock".into());
    }
}

/// logind served on a private "system" bus: lock and suspend reach it; a refusal to suspend is
/// `permission_denied` with the steps to allow it.
#[tokio::test(flavor = "multi_thread")]
async fn lock_and_suspend_go_through_logind() {
    let (_bus, address) = private_bus();
    let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let login = zbus::connection::Builder::address(address.as_str())
        .unwrap()
        .name("org.freedesktop.login1")
        .unwrap()
        .serve_at(
            "/org/freedesktop/login1",
            Login {
                can_suspend: "yes".into(),
                calls: calls.clone(),
            },
        )
        .unwrap()
        .serve_at(
            "/org/freedesktop/login1/session/auto",
            Session {
                calls: calls.clone(),
            },
        )
        .unwrap()
        .build()
        .await
        .unwrap();
    let tool = OsTool::new(OsConfig {
        system_bus_address: Some(address.clone()),
        ..OsConfig::default()
    });
    let message = ok_text(&call(&tool, json!({"resource": "system", "action": "lock"})).await);
    assert_eq!(message, "asked logind to lock the screen");
    let message = ok_text(&call(&tool, json!({"resource": "system", "action": "suspend"})).await);
    assert_eq!(message, "asked logind to suspend");
    assert_eq!(*calls.lock().unwrap(), ["Lock", "Suspend(false)"]);

    login
        .object_server()
        .interface::<_, Login>("/org/freedesktop/login1")
        .await
        .unwrap()
        .get_mut()
        .await
        .can_suspend = "no".into();
    let result = call(&tool, json!({"resource": "system", "action": "suspend"})).await;
    assert_eq!(
        result.code.map(|c| c.as_str()),
        Some("permission_denied"),
        "{result:?}"
    );
    assert!(result.text_content().contains("polkit"), "{result:?}");
    assert_eq!(calls.lock().unwrap().len(), 2);
}
