//! The gRPC inspector on a real app process: what Osprey sent and what the app answered, kept per
//! app across a restart, decoded with the protocol's schema, credentials hidden, health checks
//! only when they fail.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::time::Duration;

use osprey_apps::provided_tools::register_tools;
use osprey_apps::runtime::{LaunchOptions, Launcher, RunningApp};
use osprey_rpc::Traffic;
use osprey_rpc::v1::tool_service_client::ToolServiceClient;
use osprey_rpc::v1::{ConfigureRequest, ExecuteRequest};
use osprey_tools::ToolContext;
use osprey_types::Origin;
use serde_json::json;

use fixtures::{Apps, fixture_binary, quiet, registry};

fn launcher(apps: &Apps, traffic: &Traffic) -> Launcher {
    Launcher::new(
        apps.dir(),
        LaunchOptions {
            traffic: traffic.clone(),
            ..quiet()
        },
    )
}

/// The unit-converter fixture installed as `units` and launched with its own inspector.
async fn launch_units() -> (Apps, Traffic, RunningApp) {
    let apps = Apps::new();
    apps.install(
        "units",
        &fixture_binary("osprey-fixture-unit-converter"),
        json!({"provides": ["tool:convert"]}),
    );
    let traffic = Traffic::new();
    let app = launcher(&apps, &traffic).launch("units").await.unwrap();
    (apps, traffic, app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_keeps_each_call_decoded_with_its_status_and_hides_credentials() {
    let (apps, traffic, app) = launch_units().await;
    // The launch's health check succeeded, so it is not kept.
    assert!(app.health().await.is_ok());
    assert!(traffic.recent("units", 100).is_empty());

    let registry = registry(apps.dir().as_path());
    register_tools(&registry, app.manifest(), app.channel(), &[])
        .await
        .unwrap();
    let result = registry
        .execute(
            &ToolContext::new(Origin::User, Duration::from_secs(10)),
            "convert",
            json!({"value": 2, "from": "lb", "to": "kg"}),
        )
        .await;
    assert!(!result.is_error, "{result:?}");

    let mut client = ToolServiceClient::new(app.channel());
    let refused = client
        .execute(ExecuteRequest {
            tool: "teleport".into(),
            input_json: "{}".into(),
            context: None,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound);
    client
        .configure(ConfigureRequest {
            settings_json: json!({
                "units": "metric",
                "osprey": {"store_token": "st-secret", "accounts": {"github": {"access_token": "gho-secret"}}},
            })
            .to_string(),
        })
        .await
        .unwrap();

    let calls = traffic.recent("units", 100);
    let methods: Vec<&str> = calls.iter().map(|call| call.method.as_str()).collect();
    assert!(
        methods.ends_with(&[
            "osprey.app.v1.ToolService/Execute",
            "osprey.app.v1.ToolService/Execute",
            "osprey.app.v1.ToolService/Configure",
        ]),
        "{methods:?}"
    );
    // Registration asked the app for its tools first.
    assert!(
        methods.contains(&"osprey.app.v1.ToolService/Schema"),
        "{methods:?}"
    );
    let ids: Vec<u64> = calls.iter().map(|call| call.id).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");

    let [.., converted, teleport, configured] = calls.as_slice() else {
        unreachable!()
    };
    assert_eq!(converted.status.as_deref(), Some("Ok"));
    assert!(converted.duration_ms.is_some_and(|ms| ms > 0.0));
    assert!(converted.request_bytes > 0 && converted.response_bytes > 0);
    // The input is shown as the JSON it is, with the call's context.
    assert_eq!(converted.request.len(), 1);
    assert_eq!(converted.request[0]["tool"], "convert");
    assert_eq!(
        converted.request[0]["input_json"],
        json!({"value": 2, "from": "lb", "to": "kg"})
    );
    assert_eq!(converted.request[0]["context"]["origin"], "user");
    let answer = converted.response[0].to_string();
    assert!(answer.contains("0.907"), "{answer}");

    assert_eq!(teleport.status.as_deref(), Some("NotFound"));
    assert_eq!(
        teleport.message.as_deref(),
        Some("no tool named `teleport`")
    );
    assert!(teleport.response.is_empty());

    let shown = configured.request[0].to_string();
    assert!(!shown.contains("secret"), "credentials leaked: {shown}");
    assert_eq!(
        configured.request[0]["settings_json"]["osprey"]["store_token"],
        "[redacted]"
    );
    assert_eq!(configured.request[0]["settings_json"]["units"], "metric");

    // The ring outlives the process: the next launch adds to it.
    let before = calls.len();
    app.stop().await;
    let app = launcher(&apps, &traffic).launch("units").await.unwrap();
    ToolServiceClient::new(app.channel())
        .configure(ConfigureRequest {
            settings_json: "{}".into(),
        })
        .await
        .unwrap();
    let after = traffic.recent("units", 100);
    assert_eq!(after.len(), before + 1);
    assert!(after.last().unwrap().id > configured.id);
    assert_eq!(traffic.recent("units", 2).len(), 2);
    app.stop().await;

    traffic.forget("units");
    assert!(traffic.recent("units", 100).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_health_check_is_kept_with_why_it_failed() {
    let (_apps, traffic, app) = launch_units().await;
    let channel = app.channel();
    let pid = app.pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    fixtures::until("the app to die", Duration::from_secs(10), || {
        osprey_apps::runtime::process_gone(pid)
    })
    .await;
    let failed = ToolServiceClient::new(channel)
        .health_check(osprey_rpc::v1::HealthCheckRequest {})
        .await;
    assert!(failed.is_err());
    let calls = traffic.recent("units", 100);
    let [health] = calls.as_slice() else {
        panic!("only the failed health check is kept: {calls:?}")
    };
    assert_eq!(health.method, "osprey.app.v1.ToolService/HealthCheck");
    assert_ne!(health.status.as_deref(), Some("Ok"));
    assert!(health.message.is_some(), "{health:?}");
    assert!(health.duration_ms.is_some());
    drop(app);
}
