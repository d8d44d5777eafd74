//! What the app platform's integration tests share: building the fixture apps, installing them
//! into a temporary apps directory, and waiting on conditions with deadlines.
#![allow(dead_code)] // each test binary uses a different part

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use osprey_apps::runtime::{LaunchOptions, Launcher};
use serde_json::{Value, json};
use tempfile::TempDir;

pub use osprey_tests::fixture_binary;

pub struct Apps {
    root: TempDir,
}

impl Apps {
    pub fn new() -> Apps {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("apps")).unwrap();
        Apps { root }
    }

    pub fn dir(&self) -> PathBuf {
        self.root.path().join("apps")
    }

    /// Installs `binary` as app `id` (as an install would leave it, minus signatures).
    pub fn install(&self, id: &str, binary: &Path, manifest_extra: Value) -> PathBuf {
        let dir = self.dir().join(id);
        std::fs::create_dir(&dir).unwrap();
        let mut manifest = json!({
            "id": id,
            "name": format!("Fixture {id}"),
            "version": "0.3.0",
            "provides": ["tool:fixture"],
        });
        for (key, value) in manifest_extra.as_object().unwrap() {
            manifest[key] = value.clone();
        }
        std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
        std::fs::write(dir.join("SKILL.md"), "# fixture\n").unwrap();
        std::fs::copy(binary, dir.join("binary")).unwrap();
        std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        dir
    }

    pub fn launcher(&self) -> Launcher {
        Launcher::new(self.dir(), quiet())
    }
}

pub fn quiet() -> LaunchOptions {
    LaunchOptions {
        echo_logs: false,
        ..LaunchOptions::default()
    }
}

pub async fn until(what: &str, deadline: Duration, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A registry at policy level `full` that guards `data` as Osprey's data.
pub fn registry(data: &Path) -> osprey_tools::Registry {
    osprey_tools::Registry::new(osprey_tools::RegistryConfig::new(
        osprey_tools::Policy::at_level(osprey_tools::Level::Full),
        data,
    ))
}
