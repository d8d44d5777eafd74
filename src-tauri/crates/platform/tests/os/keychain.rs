//! The keychain against gnome-keyring on a private session bus: store, list, read, delete,
//! and other programs' secrets stay out of sight.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use osprey_platform::{OsConfig, OsTool};
use serde_json::json;

use crate::harness::{Guarded, call, ok_text, private_bus, program_exists, wait_until};

#[tokio::test(flavor = "multi_thread")]
async fn secrets_round_trip_through_gnome_keyring() {
    if !program_exists("gnome-keyring-daemon") {
        assert!(
            std::env::var("CI").is_err(),
            "gnome-keyring-daemon must be installed on CI (scripts/setup)"
        );
        eprintln!("skipped: gnome-keyring-daemon is not installed (scripts/setup installs it)");
        return;
    }
    let (_bus, address) = private_bus();
    let home = tempfile::tempdir().unwrap();
    let runtime = home.path().join("run");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let tool = OsTool::new(OsConfig {
        session_bus_address: Some(address.clone()),
        ..OsConfig::default()
    });
    // Before a keyring runs: a coded answer naming what is missing.
    let result = call(&tool, json!({"resource": "keychain", "action": "list"})).await;
    assert_eq!(
        result.code.map(|c| c.as_str()),
        Some("service_unavailable"),
        "{result:?}"
    );

    // `--unlock` reads the login keyring's password from stdin and creates it unlocked.
    let _keyring = Guarded::spawn_with_input(
        "gnome-keyring-daemon",
        &["--unlock", "--components=secrets", "--foreground"],
        &[
            ("DBUS_SESSION_BUS_ADDRESS", &address),
            ("HOME", home.path().to_str().unwrap()),
            ("XDG_RUNTIME_DIR", runtime.to_str().unwrap()),
        ],
        "test",
    );
    let connection = zbus::connection::Builder::address(address.as_str())
        .unwrap()
        .build()
        .await
        .unwrap();
    let dbus = zbus::fdo::DBusProxy::new(&connection).await.unwrap();
    let handle = tokio::runtime::Handle::current();
    tokio::task::block_in_place(|| {
        wait_until("gnome-keyring on the bus", Duration::from_secs(20), || {
            handle
                .block_on(dbus.name_has_owner("org.freedesktop.secrets".try_into().unwrap()))
                .unwrap_or(false)
        })
    });

    // Another program's secret in the same keyring.
    let service = secret_service::SecretService::connect_with_existing(
        secret_service::EncryptionType::Dh,
        connection.clone(),
    )
    .await
    .unwrap();
    let collection = service.get_default_collection().await.unwrap();
    collection
        .create_item(
            "someone else's",
            HashMap::from([("application", "mail"), ("osprey-key", "smtp")]),
            b"not for osprey",
            true,
            "text/plain",
        )
        .await
        .unwrap();

    let list = ok_text(&call(&tool, json!({"resource": "keychain", "action": "list"})).await);
    assert_eq!(list, "Osprey keeps no secrets in the keychain.");
    ok_text(
        &call(
            &tool,
            json!({"resource": "keychain", "action": "store", "key": "smtp", "secret": "hunter2"}),
        )
        .await,
    );
    ok_text(
        &call(
            &tool,
            json!({"resource": "secrets", "action": "store", "key": "caldav", "secret": "pa ss"}),
        )
        .await,
    );
    // Storing again replaces.
    ok_text(
        &call(
            &tool,
            json!({"resource": "keychain", "action": "store", "key": "smtp", "secret": "hunter3"}),
        )
        .await,
    );
    let list = ok_text(&call(&tool, json!({"resource": "keychain", "action": "list"})).await);
    assert_eq!(list, "caldav\nsmtp");
    let read = ok_text(
        &call(
            &tool,
            json!({"resource": "keychain", "action": "read", "key": "smtp"}),
        )
        .await,
    );
    assert_eq!(read, "hunter3");
    ok_text(
        &call(
            &tool,
            json!({"resource": "keychain", "action": "delete", "key": "smtp"}),
        )
        .await,
    );
    let result = call(
        &tool,
        json!({"resource": "keychain", "action": "read", "key": "smtp"}),
    )
    .await;
    assert!(result.is_error && result.text_content().contains("no secret named \"smtp\""));
    // The other program's item is still there, untouched.
    let others = service
        .search_items(HashMap::from([("application", "mail")]))
        .await
        .unwrap();
    assert_eq!(others.unlocked.len(), 1);
    assert_eq!(
        others.unlocked[0].get_secret().await.unwrap(),
        b"not for osprey"
    );

    let result = call(
        &tool,
        json!({"resource": "keychain", "action": "store", "key": "a\nb", "secret": "x"}),
    )
    .await;
    assert!(result.is_error && result.text_content().contains("printable"));
}
