//! Installed apps on disk: install from a signed package, update in place or staged for
//! approval (approve and reject), uninstall, quarantine, sideload, and an installed package
//! launched as a real process.

#[path = "support/fixtures.rs"]
mod fixtures;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use osprey_apps::install::QUARANTINE_MARKER;
use osprey_apps::napp;
use osprey_apps::{InstallOutcome, Installer, KeyPair};
use serde_json::{Value, json};
use tempfile::TempDir;

use fixtures::fixture_binary;

const FAKE_ELF: &[u8] = b"\x7FELF\x02\x01\x01\x00fixture binary";

struct Store {
    root: TempDir,
    key: KeyPair,
}

impl Store {
    fn new() -> Store {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("apps")).unwrap();
        Store {
            root,
            key: KeyPair::generate().unwrap(),
        }
    }

    fn apps(&self) -> PathBuf {
        self.root.path().join("apps")
    }

    fn installer(&self) -> Installer {
        Installer::new(self.apps())
    }

    /// A project directory for `version` with `permissions`, and `binary` as its executable.
    fn project(&self, version: &str, permissions: &[&str], binary: &[u8]) -> PathBuf {
        let dir = self.root.path().join(format!("project-{version}"));
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = json!({
            "id": "units",
            "name": "Units",
            "version": version,
            "provides": ["tool:convert"],
            "permissions": permissions,
        });
        std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
        std::fs::write(dir.join("SKILL.md"), format!("# Units {version}\n")).unwrap();
        std::fs::write(dir.join("binary"), binary).unwrap();
        std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        dir
    }

    /// Packs and signs a project with the store key.
    fn package(&self, project: &Path) -> PathBuf {
        let unsigned = project.with_extension("unsigned.napp");
        napp::pack_to_file(project, &unsigned).unwrap();
        let signed = project.with_extension("napp");
        napp::sign_package(&unsigned, &self.key, &signed).unwrap();
        signed
    }

    fn install(&self, package: &Path) -> Result<InstallOutcome, osprey_apps::Error> {
        self.installer()
            .install(std::fs::File::open(package).unwrap(), &self.key.public())
    }

    fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.apps())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

fn version_on_disk(dir: &Path) -> String {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    manifest["version"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installed_package_launches() {
    let store = Store::new();
    let binary = std::fs::read(fixture_binary("osprey-fixture-unit-converter")).unwrap();
    let package = store.package(&store.project("1.0.0", &[], &binary));
    let outcome = store.install(&package).unwrap();
    assert_eq!(
        outcome,
        InstallOutcome::Installed {
            id: "units".into(),
            version: "1.0.0".into()
        }
    );
    assert_eq!(store.entries(), ["units"], "no staging left behind");
    let launcher = osprey_apps::runtime::Launcher::new(store.apps(), fixtures::quiet());
    let app = launcher.launch("units").await.unwrap();
    app.health().await.unwrap();
    app.stop().await;
}

#[test]
fn a_package_signed_by_another_key_installs_nothing() {
    let store = Store::new();
    let package = store.package(&store.project("1.0.0", &[], FAKE_ELF));
    let other = KeyPair::generate().unwrap().public();
    let error = store
        .installer()
        .install(std::fs::File::open(&package).unwrap(), &other)
        .unwrap_err();
    assert_eq!(error.code(), "signature_invalid");
    assert_eq!(error.reason(), Some("key_id_mismatch"));
    assert!(store.entries().is_empty());
}

#[test]
fn an_update_without_new_permissions_swaps_in_place_keeping_data_and_logs() {
    let store = Store::new();
    store
        .install(&store.package(&store.project("1.0.0", &["network:a.example.com"], FAKE_ELF)))
        .unwrap();
    let app = store.apps().join("units");
    std::fs::create_dir(app.join("data")).unwrap();
    std::fs::write(app.join("data/state.json"), "{\"n\": 1}").unwrap();
    std::fs::create_dir(app.join("logs")).unwrap();
    std::fs::write(app.join("logs/stderr.log"), "old log\n").unwrap();

    // Same permissions (a subset would do too).
    let outcome = store
        .install(&store.package(&store.project("1.1.0", &["network:a.example.com"], FAKE_ELF)))
        .unwrap();
    assert_eq!(
        outcome,
        InstallOutcome::Updated {
            id: "units".into(),
            from_version: "1.0.0".into(),
            version: "1.1.0".into()
        }
    );
    assert_eq!(version_on_disk(&app), "1.1.0");
    assert_eq!(
        std::fs::read_to_string(app.join("SKILL.md")).unwrap(),
        "# Units 1.1.0\n"
    );
    assert_eq!(
        std::fs::read_to_string(app.join("data/state.json")).unwrap(),
        "{\"n\": 1}"
    );
    assert_eq!(
        std::fs::read_to_string(app.join("logs/stderr.log")).unwrap(),
        "old log\n"
    );
    assert_eq!(
        store.entries(),
        ["units"],
        "no retired or staging directory left"
    );
}

#[test]
fn an_update_adding_permissions_waits_for_approval() {
    let store = Store::new();
    store
        .install(&store.package(&store.project("1.0.0", &[], FAKE_ELF)))
        .unwrap();
    let app = store.apps().join("units");
    std::fs::create_dir(app.join("data")).unwrap();
    std::fs::write(app.join("data/keep"), "kept").unwrap();

    let wants_more = store.package(&store.project("2.0.0", &["network:api.example.com"], FAKE_ELF));
    let outcome = store.install(&wants_more).unwrap();
    assert_eq!(
        outcome,
        InstallOutcome::PendingApproval {
            id: "units".into(),
            version: "2.0.0".into(),
            new_permissions: vec!["network:api.example.com".into()]
        }
    );
    assert_eq!(
        version_on_disk(&app),
        "1.0.0",
        "the old version stays until approved"
    );
    let listed = store.installer().list();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].pending_permissions,
        Some(vec!["network:api.example.com".to_owned()])
    );

    // Rejected: the staged update is gone, the old version untouched.
    store.installer().reject_update("units").unwrap();
    assert_eq!(version_on_disk(&app), "1.0.0");
    assert_eq!(store.installer().list()[0].pending_permissions, None);
    assert_eq!(
        store.installer().reject_update("units").unwrap_err().code(),
        "no_pending_update"
    );

    // Staged again and approved: swapped in, data kept.
    store.install(&wants_more).unwrap();
    let manifest = store.installer().approve_update("units").unwrap();
    assert_eq!(manifest.version, "2.0.0");
    assert_eq!(version_on_disk(&app), "2.0.0");
    assert_eq!(
        std::fs::read_to_string(app.join("data/keep")).unwrap(),
        "kept"
    );
    assert_eq!(store.installer().list()[0].pending_permissions, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quarantine_keeps_data_and_logs_and_blocks_launch() {
    let store = Store::new();
    let binary = std::fs::read(fixture_binary("osprey-fixture-unit-converter")).unwrap();
    store
        .install(&store.package(&store.project("1.0.0", &[], &binary)))
        .unwrap();
    let app = store.apps().join("units");
    let launcher = osprey_apps::runtime::Launcher::new(store.apps(), fixtures::quiet());
    launcher.launch("units").await.unwrap().stop().await;
    std::fs::write(app.join("data/state"), "x").unwrap();

    store
        .installer()
        .quarantine("units", "revoked by the store")
        .unwrap();
    assert!(!app.join("binary").exists());
    assert!(app.join("data/state").exists() && app.join("logs").is_dir());
    assert_eq!(
        std::fs::read_to_string(app.join(QUARANTINE_MARKER)).unwrap(),
        "revoked by the store"
    );
    let error = launcher.launch("units").await.unwrap_err();
    assert_eq!(error.reason(), Some("quarantined"), "{error}");
    assert_eq!(
        store.installer().list()[0].quarantined.as_deref(),
        Some("revoked by the store")
    );

    store.installer().uninstall("units").unwrap();
    assert!(store.entries().is_empty());
    assert_eq!(
        store.installer().uninstall("units").unwrap_err().code(),
        "not_installed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sideloaded_project_is_flagged_launches_and_unsideloads() {
    let store = Store::new();
    let binary = std::fs::read(fixture_binary("osprey-fixture-unit-converter")).unwrap();
    let project = store.project("0.1.0-dev", &[], &binary);
    let manifest = store.installer().sideload(&project).unwrap();
    assert_eq!(manifest.id, "units");
    let listed = store.installer().list();
    assert!(listed[0].sideloaded);

    let launcher = osprey_apps::runtime::Launcher::new(store.apps(), fixtures::quiet());
    let app = launcher.launch("units").await.unwrap();
    app.stop().await;
    assert!(project.join("data").is_dir(), "data lives in the project");

    // A signed install does not replace a sideload.
    let package = store.package(&store.project("1.0.0", &[], FAKE_ELF));
    assert_eq!(
        store.install(&package).unwrap_err().code(),
        "already_installed"
    );

    store.installer().unsideload("units").unwrap();
    assert!(store.entries().is_empty());
    assert!(
        project.join("manifest.json").exists(),
        "the project is untouched"
    );

    store.install(&package).unwrap();
    assert_eq!(
        store.installer().unsideload("units").unwrap_err().code(),
        "already_installed"
    );
}
