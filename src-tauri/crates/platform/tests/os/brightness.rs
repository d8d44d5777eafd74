//! Screen brightness against python3-dbusmock's logind (Debian's python3-dbusmock, its `logind`
//! template on a private bus, with `SetBrightness` added to the session object since the
//! template lacks it) and a temporary folder laid out like `/sys/class/backlight`: neither
//! logind nor a backlight exists in a container, so the sysfs root and the system bus are given
//! to the tool.

use std::path::Path;
use std::time::{Duration, Instant};

use osprey_platform::{OsConfig, OsTool};
use serde_json::json;
use zbus::zvariant::OwnedValue;

use crate::harness::{Guarded, call, code, ok_text, private_bus};

const SESSION: &str = "/org/freedesktop/login1/session/auto";
const MOCK: &str = "org.freedesktop.DBus.Mock";

fn device(root: &Path, name: &str, kind: &str, value: u32, max: u32) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("type"), format!("{kind}\n")).unwrap();
    std::fs::write(dir.join("brightness"), format!("{value}\n")).unwrap();
    std::fs::write(dir.join("max_brightness"), format!("{max}\n")).unwrap();
}

/// python3 with dbusmock, or `None` (printed) where it is not installed; on CI it must be.
fn python_with_dbusmock() -> Option<&'static str> {
    let found = ["/usr/bin/python3", "python3"].into_iter().find(|python| {
        std::process::Command::new(python)
            .args(["-c", "import dbusmock"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").is_err(),
            "python3-dbusmock must be installed on CI (scripts/setup)"
        );
        eprintln!("skipped: python3-dbusmock is not installed (scripts/setup)");
    }
    found
}

/// dbusmock's logind on `address`, once it owns its name, with a session `auto` that records
/// `SetBrightness`.
async fn mocked_logind(python: &str, address: &str) -> (Guarded, zbus::Connection) {
    let mock = Guarded::spawn(
        python,
        &["-m", "dbusmock", "--system", "--template", "logind"],
        &[("DBUS_SYSTEM_BUS_ADDRESS", address)],
    );
    let connection = zbus::connection::Builder::address(address)
        .unwrap()
        .build()
        .await
        .unwrap();
    let dbus = zbus::fdo::DBusProxy::new(&connection).await.unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    while !dbus
        .name_has_owner("org.freedesktop.login1".try_into().unwrap())
        .await
        .unwrap_or(false)
    {
        assert!(Instant::now() < end, "dbusmock's logind did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    connection
        .call_method(
            Some("org.freedesktop.login1"),
            "/org/freedesktop/login1",
            Some(MOCK),
            "AddSession",
            &("auto", "seat0", 1000u32, "alice", true),
        )
        .await
        .unwrap();
    connection
        .call_method(
            Some("org.freedesktop.login1"),
            SESSION,
            Some(MOCK),
            "AddMethod",
            &(
                "org.freedesktop.login1.Session",
                "SetBrightness",
                "ssu",
                "",
                "",
            ),
        )
        .await
        .unwrap();
    (mock, connection)
}

/// The `SetBrightness` calls dbusmock recorded on the session: (subsystem, name, value).
async fn recorded(connection: &zbus::Connection) -> Vec<(String, String, u32)> {
    let reply = connection
        .call_method(
            Some("org.freedesktop.login1"),
            SESSION,
            Some(MOCK),
            "GetMethodCalls",
            &("SetBrightness",),
        )
        .await
        .unwrap();
    let calls: Vec<(u64, Vec<OwnedValue>)> = reply.body().deserialize().unwrap();
    calls
        .into_iter()
        .map(|(_, args)| {
            (
                String::try_from(args[0].clone()).unwrap(),
                String::try_from(args[1].clone()).unwrap(),
                u32::try_from(args[2].clone()).unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn brightness_is_read_from_the_backlight_and_set_through_logind() {
    let Some(python) = python_with_dbusmock() else {
        return;
    };
    let (_bus, address) = private_bus();
    let (_mock, connection) = mocked_logind(python, &address).await;
    let sysfs = tempfile::tempdir().unwrap();
    // The GPU's raw device and the firmware's: the firmware's is the one meant (systemd's rule).
    device(sysfs.path(), "intel_backlight", "raw", 600, 1200);
    device(sysfs.path(), "acpi_video0", "firmware", 7, 10);
    let tool = OsTool::new(OsConfig {
        system_bus_address: Some(address.clone()),
        backlight_dir: Some(sysfs.path().to_path_buf()),
        ..OsConfig::default()
    });

    let level = ok_text(&call(&tool, json!({"resource": "system", "action": "brightness"})).await);
    assert_eq!(
        level,
        "Screen brightness: 70% (7 of 10 on acpi_video0, firmware)"
    );
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    assert!(
        status.contains("brightness: 70% (7 of 10 on acpi_video0, firmware)"),
        "{status}"
    );

    let set = ok_text(
        &call(
            &tool,
            json!({"resource": "system", "action": "set_brightness", "percent": 35}),
        )
        .await,
    );
    assert_eq!(
        set,
        "asked logind to set the brightness to 35% (4 of 10 on acpi_video0)"
    );
    assert_eq!(
        recorded(&connection).await,
        [("backlight".to_string(), "acpi_video0".to_string(), 4)]
    );

    // Without the firmware device, the raw one; its scale is finer.
    std::fs::remove_dir_all(sysfs.path().join("acpi_video0")).unwrap();
    ok_text(
        &call(
            &tool,
            json!({"resource": "system", "action": "set_brightness", "percent": 100}),
        )
        .await,
    );
    assert_eq!(
        recorded(&connection).await[1],
        ("backlight".to_string(), "intel_backlight".to_string(), 1200)
    );

    // Out of range or missing: refused before logind is asked.
    for bad in [json!(150), json!(-1), json!(null)] {
        let result = call(
            &tool,
            json!({"resource": "system", "action": "set_brightness", "percent": bad}),
        )
        .await;
        assert_eq!(code(&result), "invalid_input", "{result:?}");
    }
    assert_eq!(recorded(&connection).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_backlight_brightness_is_unavailable_and_nothing_is_asked() {
    let Some(python) = python_with_dbusmock() else {
        return;
    };
    let (_bus, address) = private_bus();
    let (_mock, connection) = mocked_logind(python, &address).await;
    let empty = tempfile::tempdir().unwrap();
    let tool = OsTool::new(OsConfig {
        system_bus_address: Some(address.clone()),
        backlight_dir: Some(empty.path().to_path_buf()),
        ..OsConfig::default()
    });
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    assert!(status.contains("no backlight device"), "{status}");
    for action in [
        json!({"resource": "system", "action": "brightness"}),
        json!({"resource": "system", "action": "set_brightness", "percent": 50}),
    ] {
        let result = call(&tool, action).await;
        assert_eq!(code(&result), "platform_not_supported", "{result:?}");
        assert!(
            result.text_content().contains("no backlight device"),
            "{result:?}"
        );
    }
    assert!(recorded(&connection).await.is_empty());
}
