//! What the app platform's integration tests share: building the fixture apps, installing them
//! into a temporary apps directory, and waiting on conditions with deadlines.
#![allow(dead_code)] // each test binary uses a different part

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use osprey_apps::runtime::{LaunchOptions, Launcher};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Builds a fixture package once per test binary and returns its executable, as cargo reports it.
pub fn fixture_binary(package: &str) -> PathBuf {
    static BUILT: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get_or_insert_with(HashMap::new).get(package) {
        return path.clone();
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new(env!("CARGO"))
        .args(["build", "-p", package, "--message-format=json"])
        .current_dir(&workspace)
        .stderr(Stdio::inherit())
        .output()
        .expect("run cargo build");
    assert!(output.status.success(), "building {package} failed");
    let executable = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| message["target"]["name"] == package)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo reported no executable for {package}"));
    built
        .get_or_insert_with(HashMap::new)
        .insert(package.to_owned(), executable.clone());
    executable
}

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
