//! Osprey's end-to-end harness. It runs the real desktop binary under a private X server (Xvfb)
//! and D-Bus session bus, drives it through `tauri-driver` (WebKitWebDriver underneath) with a
//! small WebDriver client, and kills everything it started when dropped. It never builds
//! anything: running cargo from inside a test would wait forever on the build lock, so a missing
//! binary is an error that says which command to run.

pub mod model_server;
pub mod oauth_server;
pub mod provider_rules;
pub mod webdriver;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub use webdriver::{Element, WebDriver, keys};

#[cfg(unix)]
pub mod daemon;
#[cfg(unix)]
mod launch_report;
#[cfg(unix)]
mod processes;
#[cfg(unix)]
pub mod servers;
#[cfg(unix)]
#[path = "store_process.rs"]
pub mod store;
#[cfg(unix)]
pub use processes::{DesktopApp, LaunchOptions, SessionBus, TauriDriver, VirtualDisplay};

/// A PNG of `width` x `height` noise: PNG cannot compress it, so it weighs what a photo of that
/// size does (about 3 bytes a pixel), for tests of what the model APIs take.
pub fn noise_png(width: u32, height: u32) -> Vec<u8> {
    let mut state = 0x9e37_79b9_u32;
    let image = image::RgbImage::from_fn(width, height, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let [r, g, b, _] = state.to_le_bytes();
        image::Rgb([r, g, b])
    });
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .expect("a PNG in memory");
    png
}

/// Stores a setting in the data folder's database, as `osprey config set` would, before the
/// Osprey under test starts.
pub fn store_setting(data_dir: &Path, key: &str, value: serde_json::Value) -> Result<()> {
    osprey_db::Database::open_in(data_dir)
        .context("opening the test database")?
        .settings()
        .set(key, &value)
        .with_context(|| format!("storing {key}"))
}

/// Polls `condition` every 50 ms until it holds, failing after `timeout` with `what` named.
pub fn wait_until(
    what: &str,
    timeout: std::time::Duration,
    mut condition: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if condition()? {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The workspace root: the nearest folder above the running test's crate that holds
/// `Cargo.lock`, so it is right from any crate's tests. Cargo sets `CARGO_MANIFEST_DIR` when it
/// runs a test, and that wins over the compile-time value: cargo reuses artifacts between
/// checkouts that share a target directory, and the baked-in path may be another checkout's.
pub fn workspace_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest_dir
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .map(Path::to_path_buf)
        .unwrap_or(manifest_dir)
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` (relative paths are relative to the workspace,
/// as cargo reads them) or `<root>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target"),
    }
}

/// The debug build of the desktop app. Missing means the suite was started without building it.
pub fn desktop_binary() -> Result<PathBuf> {
    let name = format!("osprey-desktop{}", std::env::consts::EXE_SUFFIX);
    let path = target_dir().join("debug").join(name);
    if !path.is_file() {
        bail!(
            "{} does not exist: build the desktop app first with `npm --prefix ui run build && \
             cargo build -p osprey-desktop` (scripts/test does both)",
            path.display()
        );
    }
    Ok(path)
}

/// Where a test keeps what a person may want to look at afterwards (screenshots, driver logs):
/// `<target>/e2e/<test name>/`, emptied first.
pub fn artifacts_dir(test_name: &str) -> Result<PathBuf> {
    let dir = target_dir().join("e2e").join(test_name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("emptying {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Finds an executable on `PATH`, then in the extra directories given.
pub fn find_program(name: &str, extra_dirs: &[PathBuf]) -> Option<PathBuf> {
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .iter()
        .chain(extra_dirs)
        .map(|dir| dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX)))
        .find(|candidate| candidate.is_file())
}

/// Where `cargo install` puts binaries: `$CARGO_HOME/bin`, else `~/.cargo/bin`.
pub fn cargo_bin_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = std::env::var_os("CARGO_HOME").filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(home).join("bin"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(home).join(".cargo").join("bin"));
    }
    dirs
}

/// Checks a PNG's signature and returns its width and height.
pub fn png_dimensions(bytes: &[u8]) -> Result<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || !bytes.starts_with(SIGNATURE) || &bytes[12..16] != b"IHDR" {
        bail!("not a PNG ({} bytes)", bytes.len());
    }
    let width = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let height = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    Ok((width, height))
}

/// Writes an app project into `dir` (created if missing): `manifest` as manifest.json, a
/// one-line SKILL.md, and `binary` copied in as its executable.
pub fn app_project(dir: &Path, manifest: &serde_json::Value, binary: &Path) {
    app_project_with(dir, manifest, &std::fs::read(binary).unwrap());
}

/// [`app_project`] with the executable's bytes given (a stand-in ELF for tests that never run
/// the app).
pub fn app_project_with(dir: &Path, manifest: &serde_json::Value, binary: &[u8]) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("SKILL.md"), "# fixture\n").unwrap();
    std::fs::write(dir.join("binary"), binary).unwrap();
    std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// An unsigned `.napp` of the project [`app_project_with`] writes into `dir` (a store signs what
/// it publishes).
#[cfg(feature = "apps")]
pub fn app_package(dir: &Path, manifest: &serde_json::Value, binary: &[u8]) -> Vec<u8> {
    app_project_with(dir, manifest, binary);
    let mut package = Vec::new();
    osprey_apps::napp::pack(dir, &mut package).unwrap();
    package
}

/// Sideloads the unit-converter fixture app (tool `convert`) as `id`, from a project written to
/// `root/<id>`, into the data folder `data`, with the `osprey` program given.
pub fn sideload_unit_converter(osprey: &Path, root: &Path, data: &Path, id: &str) {
    let project = root.join(id);
    let manifest = serde_json::json!({"id": id, "name": "Units", "version": "1.0.0",
        "provides": ["tool:convert"]});
    app_project(
        &project,
        &manifest,
        &fixture_binary("osprey-fixture-unit-converter"),
    );
    let mut sideload = std::process::Command::new(osprey);
    sideload
        .arg("--data-dir")
        .arg(data)
        .args(["app", "sideload"])
        .arg(&project)
        .env_remove("OSPREY_DATA_DIR");
    let run = run_with_input(&mut sideload, "");
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// A command run to its end: the exit code (-1 when a signal ended it), stdout and stderr.
pub struct Finished {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the `osprey` binary at `binary` (a CLI test's `env!("CARGO_BIN_EXE_osprey")`) on the
/// data folder `data`, with secrets in its private file and no data folder from the
/// environment, `stdin` as its standard input.
pub fn run_osprey(binary: &str, data: &std::path::Path, args: &[&str], stdin: &str) -> Finished {
    let mut command = std::process::Command::new(binary);
    command
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("OSPREY_DATA_DIR")
        .env("OSPREY_SECRETS", "file");
    run_with_input(&mut command, stdin)
}

/// Runs `command` to its end with `stdin` as its standard input.
pub fn run_with_input(command: &mut std::process::Command, stdin: &str) -> Finished {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    Finished {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Builds a workspace package (a fixture app) once per test process and returns its executable
/// as cargo reports it. Safe from inside `cargo test`: cargo holds no build lock while tests run.
/// Apps run in the sandbox, so the launcher is built with the first fixture.
pub fn fixture_binary(package: &str) -> PathBuf {
    build_sandbox_launcher();
    built_executable(package, package)
}

/// The `osprey` command-line program, built as [`fixture_binary`] builds a fixture (for suites
/// outside osprey-cli, where cargo sets no `CARGO_BIN_EXE_osprey`).
pub fn cli_binary() -> PathBuf {
    built_executable("osprey-cli", "osprey")
}

/// Builds `osprey-sandbox` into the target directory, where the app runtime and the shell tool
/// look for it beside the running executable's folder: suites that run store apps (which never
/// run without the sandbox) or sandboxed commands call this first, so `cargo test -p <crate>`
/// works without a workspace build.
pub fn build_sandbox_launcher() -> PathBuf {
    built_executable("osprey-sandbox", "osprey-sandbox")
}

fn built_executable(package: &str, target: &str) -> PathBuf {
    use std::collections::HashMap;
    use std::sync::Mutex;

    static BUILT: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get_or_insert_with(HashMap::new).get(target) {
        return path.clone();
    }
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "-p",
            package,
            "--bin",
            target,
            "--message-format=json",
        ])
        .current_dir(workspace_root())
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run cargo build");
    assert!(output.status.success(), "building {package} failed");
    let executable = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| message["target"]["name"] == target)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo reported no executable {target} in {package}"));
    built
        .get_or_insert_with(HashMap::new)
        .insert(target.to_owned(), executable.clone());
    executable
}

/// An ELF header followed by a xorshift stream, `len` bytes in all: a package binary that does
/// not compress away, for the install benchmarks.
pub fn incompressible_elf(len: usize) -> Vec<u8> {
    let mut binary = b"\x7FELF\x02\x01\x01\x00".to_vec();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    while binary.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        binary.extend_from_slice(&state.to_le_bytes());
    }
    binary
}

/// The install benchmarks' baseline: `tar xzf` of `package` into `out`, then `sha256sum` of its
/// binary, as processes; returns how long both took.
pub fn tar_xzf_sha256sum(package: &Path, out: &Path) -> std::time::Duration {
    let started = std::time::Instant::now();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("tar xzf \"$1\" -C \"$2\" && sha256sum \"$2/binary\" >/dev/null")
        .arg("sh")
        .arg(package)
        .arg(out)
        .status()
        .expect("run sh");
    let elapsed = started.elapsed();
    assert!(status.success(), "tar xzf + sha256sum failed");
    elapsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_root_is_the_folder_with_the_lock_file() {
        let root = workspace_root();
        assert!(root.join("Cargo.lock").is_file(), "{}", root.display());
        assert!(root.join("tests/lib.rs").is_file(), "{}", root.display());
    }

    #[test]
    fn target_dir_defaults_under_the_workspace() {
        // CARGO_TARGET_DIR may be set by the caller; either way the path ends in a real directory
        // name and the binary path is built inside it.
        let dir = target_dir();
        assert!(dir.is_absolute());
        if std::env::var_os("CARGO_TARGET_DIR").is_none() {
            assert_eq!(dir, workspace_root().join("target"));
        }
    }

    #[test]
    fn png_dimensions_reads_the_header() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&640u32.to_be_bytes());
        png.extend_from_slice(&480u32.to_be_bytes());
        assert_eq!(png_dimensions(&png).unwrap(), (640, 480));
        assert!(png_dimensions(b"GIF89a").is_err());
    }

    #[test]
    fn find_program_looks_in_extra_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let name = "osprey-harness-test-program";
        assert_eq!(find_program(name, &[dir.path().to_path_buf()]), None);
        let file = dir
            .path()
            .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        std::fs::write(&file, b"").unwrap();
        assert_eq!(find_program(name, &[dir.path().to_path_buf()]), Some(file));
    }
}
