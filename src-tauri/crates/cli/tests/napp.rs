//! `osprey napp` as a publisher runs it: keygen, pack a real directory, sign, verify, and the
//! refusals with their stable codes and exit status 3.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

fn osprey(dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_osprey"))
        .current_dir(dir)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(args)
        .arg("--json")
        .output()
        .expect("the osprey binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let report = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (
        output.status.code().unwrap_or(-1),
        report,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn app_dir(root: &Path) {
    let dir = root.join("units");
    std::fs::create_dir(&dir).unwrap();
    let manifest = json!({
        "id": "com.example.units",
        "name": "Units",
        "version": "2.0.1",
        "provides": ["tool:convert"]
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("SKILL.md"), "# Units\n").unwrap();
    std::fs::write(dir.join("binary"), b"\x7FELF\x02\x01\x01\x00rest").unwrap();
    std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn keygen_pack_sign_verify() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    app_dir(dir);

    let (code, report, stderr) = osprey(dir, &["napp", "keygen", "--out", "publisher.json"]);
    assert_eq!(code, 0, "{stderr}");
    let key_id = report["key_id"].as_str().unwrap().to_owned();
    let mode = std::fs::metadata(dir.join("publisher.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(dir.join("publisher.pub.json").exists());
    // Never overwrites a key.
    let (code, _, _) = osprey(dir, &["napp", "keygen", "--out", "publisher.json"]);
    assert_eq!(code, 1);

    let (code, report, stderr) = osprey(dir, &["napp", "pack", "units"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["package"], "com.example.units-2.0.1.napp");
    let package = "com.example.units-2.0.1.napp";

    // Unsigned: refused as an install would refuse it.
    let (code, report, _) = osprey(
        dir,
        &["napp", "verify", package, "--key", "publisher.pub.json"],
    );
    assert_eq!(code, 3);
    assert_eq!(report["code"], "package_rejected");
    assert_eq!(report["reason"], "missing_file");

    let (code, report, stderr) = osprey(dir, &["napp", "sign", package, "--key", "publisher.json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["key_id"], key_id.as_str());

    let (code, report, stderr) = osprey(
        dir,
        &["napp", "verify", package, "--key", "publisher.pub.json"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["id"], "com.example.units");
    assert_eq!(report["key_id"], key_id.as_str());

    // Another key: the store would refuse it.
    osprey(dir, &["napp", "keygen", "--out", "store.json"]);
    let (code, report, _) = osprey(dir, &["napp", "verify", package, "--key", "store.pub.json"]);
    assert_eq!(code, 3);
    assert_eq!(report["code"], "signature_invalid");
    assert_eq!(report["reason"], "key_id_mismatch");
}

#[test]
fn an_invalid_manifest_is_refused_with_its_field() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    app_dir(dir);
    std::fs::write(
        dir.join("units/manifest.json"),
        json!({"id": "x", "name": "X", "version": "1.0.0", "provides": ["gateway"]}).to_string(),
    )
    .unwrap();
    let (code, report, _) = osprey(dir, &["napp", "pack", "units", "--out", "x.napp"]);
    assert_eq!(code, 3);
    assert_eq!(report["code"], "manifest_invalid");
    let message = report["message"].as_str().unwrap();
    assert!(
        message.contains("provides[0]") && message.contains("network:"),
        "{message}"
    );
    assert!(!dir.join("x.napp").exists());
}
