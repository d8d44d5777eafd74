//! `osprey app` and `osprey store serve` as a person runs them: a real store served by the
//! `osprey` binary on a loopback port, packages signed with that store's key, installs from a
//! file and by store id, the listing flags, updates waiting for approval, removal, sideloading,
//! and the refusals with their stable codes and exit status 3 leaving nothing in `<data>/apps`.

use std::io::{BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use osprey_apps::{KeyPair, Limits, napp};
use osprey_tests::daemon::{start_daemon, wait_for_line};
use osprey_tests::store::StoreProcess;
use serde_json::{Value, json};
use tempfile::TempDir;

const TOKEN: &str = "test-admin-token";
const DEADLINE: Duration = Duration::from_secs(30);

/// `osprey store serve` as a child process, on a port it picked (the shared harness's).
struct ServedStore(StoreProcess);

impl std::ops::Deref for ServedStore {
    type Target = StoreProcess;
    fn deref(&self) -> &StoreProcess {
        &self.0
    }
}

impl std::ops::DerefMut for ServedStore {
    fn deref_mut(&mut self) -> &mut StoreProcess {
        &mut self.0
    }
}

impl ServedStore {
    fn start(root: &Path) -> ServedStore {
        ServedStore(StoreProcess::start(
            Path::new(env!("CARGO_BIN_EXE_osprey")),
            root,
            TOKEN,
        ))
    }

    /// The store's secret key, which it signs published packages with.
    fn key(&self) -> KeyPair {
        KeyPair::from_secret_json(&self.secret_key_json()).unwrap()
    }

    /// `METHOD path` with the admin token, over plain HTTP/1.1; returns the status code.
    /// The status code and the body of a raw admin request.
    fn admin_exchange(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> (u16, String) {
        let authority = self.url.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(authority).unwrap();
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let response = String::from_utf8_lossy(&response).into_owned();
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|status| status.parse().ok())
            .unwrap_or_else(|| panic!("no status in {response}"));
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default();
        (status, body)
    }

    /// `osprey store ...` against this store, the token in the environment or on stdin.
    fn cli(&self, args: &[&str], token: Token) -> (i32, String, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_osprey"));
        command
            .args(args)
            .args(["--store", &self.url])
            .env_remove("OSPREY_STORE_URL")
            .env_remove("OSPREY_STORE_ADMIN_TOKEN");
        let stdin = match token {
            Token::Env(token) => {
                command.env("OSPREY_STORE_ADMIN_TOKEN", token);
                String::new()
            }
            Token::Stdin(token) => format!("{token}\n"),
        };
        let run = osprey_tests::run_with_input(&mut command, &stdin);
        (run.code, run.stdout, run.stderr)
    }

    /// Publishes an unsigned package (the store signs it).
    /// Publishes with `osprey store publish`, as an app author does (token in the environment).
    fn publish(&self, package: &Path) {
        let (code, stdout, stderr) = self.cli(
            &["store", "publish", package.to_str().unwrap()],
            Token::Env(TOKEN),
        );
        assert_eq!(code, 0, "publishing {}: {stderr}", package.display());
        let entry: Value = serde_json::from_str(&stdout).unwrap();
        assert!(entry["id"].is_string(), "{entry}");
    }

    /// Revokes with `osprey store revoke` (the token on stdin).
    fn revoke(&self, id: &str, reason: &str) {
        let (code, _, stderr) = self.cli(
            &["store", "revoke", id, "--reason", reason],
            Token::Stdin(TOKEN),
        );
        assert_eq!(code, 0, "revoking {id}: {stderr}");
    }
}

/// How `osprey store` gets the admin token.
enum Token<'a> {
    Env(&'a str),
    Stdin(&'a str),
}

struct Fixture {
    root: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            root: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn apps(&self) -> PathBuf {
        self.path().join("data/apps")
    }

    /// Everything in `<data>/apps`, hidden entries included.
    fn apps_entries(&self) -> Vec<String> {
        match std::fs::read_dir(self.apps()) {
            Ok(entries) => entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// An app project directory.
    fn project(&self, id: &str, version: &str, permissions: &[&str]) -> PathBuf {
        let dir = self.path().join(format!("{id}-{version}"));
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = json!({
            "id": id,
            "name": "Units",
            "version": version,
            "provides": ["tool:convert"],
            "permissions": permissions,
        });
        std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
        std::fs::write(dir.join("SKILL.md"), format!("# {id} {version}\n")).unwrap();
        std::fs::write(dir.join("binary"), b"\x7FELF\x02\x01\x01\x00rest").unwrap();
        std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        dir
    }

    /// An unsigned package of a project whose binary is the unit-converter fixture app, which
    /// really runs.
    fn runnable_package(&self, id: &str, version: &str) -> PathBuf {
        let project = self.project(id, version, &[]);
        std::fs::copy(
            osprey_tests::fixture_binary("osprey-fixture-unit-converter"),
            project.join("binary"),
        )
        .unwrap();
        let out = self.path().join(format!("{id}-{version}-runnable.napp"));
        napp::pack_to_file(&project, &out).unwrap();
        out
    }

    /// The app's entry in `osprey app list`.
    fn listed_app(&self, id: &str) -> Option<Value> {
        self.listed().into_iter().find(|app| app["id"] == id)
    }

    /// An unsigned package of a project.
    fn package(&self, id: &str, version: &str, permissions: &[&str]) -> PathBuf {
        let project = self.project(id, version, permissions);
        let out = self.path().join(format!("{id}-{version}.napp"));
        napp::pack_to_file(&project, &out).unwrap();
        out
    }

    /// A package of a project signed with `key`.
    fn signed(&self, id: &str, version: &str, permissions: &[&str], key: &KeyPair) -> PathBuf {
        let package = self.package(id, version, permissions);
        napp::sign_package(&package, key, &package).unwrap();
        package
    }

    /// Runs `osprey --data-dir <root>/data <args> --json`: exit code, the JSON report, stderr.
    fn osprey(&self, args: &[&str]) -> (i32, Value, String) {
        let output = self.command(args).arg("--json").output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let report = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        (
            output.status.code().unwrap_or(-1),
            report,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Runs without `--json`: exit code, stdout, stderr.
    fn osprey_text(&self, args: &[&str]) -> (i32, String, String) {
        let output = self.command(args).output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_osprey"));
        command
            .current_dir(self.path())
            .env_remove("OSPREY_STORE_URL")
            .arg("--data-dir")
            .arg(self.path().join("data"))
            .args(args);
        command
    }

    fn listed(&self) -> Vec<Value> {
        let (code, report, stderr) = self.osprey(&["app", "list"]);
        assert_eq!(code, 0, "{stderr}");
        report["apps"].as_array().unwrap().clone()
    }
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn install_from_a_file_and_by_store_id_then_list_and_remove() {
    let fixture = Fixture::new();
    let store = ServedStore::start(fixture.path());
    let url = store.url.as_str();

    // A file signed with the store's key, verified against the key the store serves.
    let package = fixture.signed("com.example.units", "1.0.0", &[], &store.key());
    let (code, report, stderr) =
        fixture.osprey(&["app", "install", text(&package), "--store", url]);
    assert_eq!(code, 0, "{stderr} {report}");
    assert_eq!(report["ok"], true);
    assert_eq!(report["outcome"], "installed");
    assert_eq!(report["id"], "com.example.units");
    assert_eq!(report["version"], "1.0.0");

    // By store id: published unsigned, signed by the store, downloaded and verified. The store
    // comes from the `store.url` setting this time (a bad URL is refused when it is set).
    let clock = fixture.package("com.example.clock", "0.3.0", &[]);
    store.publish(&clock);
    let (code, _, stderr) = fixture.osprey_text(&["config", "set", "store.url", "ftp://x"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("http or https URL"), "{stderr}");
    let (code, _, stderr) = fixture.osprey_text(&["config", "set", "store.url", url]);
    assert_eq!(code, 0, "{stderr}");
    let (code, report, stderr) = fixture.osprey(&["app", "install", "com.example.clock"]);
    assert_eq!(code, 0, "{stderr} {report}");
    assert_eq!(report["outcome"], "installed");
    assert_eq!(report["id"], "com.example.clock");

    let listed = fixture.listed();
    let ids: Vec<&str> = listed.iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["com.example.clock", "com.example.units"]);
    for app in &listed {
        assert_eq!(app["sideloaded"], false);
        assert_eq!(app["quarantined"], false);
        assert_eq!(app["pending_update"], false);
    }
    let (code, stdout, _) = fixture.osprey_text(&["app", "list"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("com.example.units 1.0.0"), "{stdout}");

    // Quarantined (as the revocation sweep does): flagged with its reason, and removable.
    osprey_apps::Installer::new(fixture.apps())
        .quarantine("com.example.units", "revoked: test")
        .unwrap();
    let listed = fixture.listed();
    assert_eq!(listed[1]["id"], "com.example.units");
    assert_eq!(listed[1]["quarantined"], true);
    assert_eq!(listed[1]["quarantine_reason"], "revoked: test");
    let (_, stdout, _) = fixture.osprey_text(&["app", "list"]);
    assert!(stdout.contains("[quarantined: revoked: test]"), "{stdout}");

    let (code, report, stderr) = fixture.osprey(&["app", "remove", "com.example.units"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["ok"], true);
    let (code, _, _) = fixture.osprey(&["app", "remove", "com.example.clock"]);
    assert_eq!(code, 0);
    assert!(fixture.listed().is_empty());
    assert!(
        fixture.apps_entries().is_empty(),
        "{:?}",
        fixture.apps_entries()
    );

    // Removing what is not installed is refused with its code.
    let (code, stdout, stderr) = fixture.osprey_text(&["app", "remove", "com.example.units"]);
    assert_eq!(code, 3, "{stdout}");
    assert!(
        stderr.starts_with("osprey: not_installed: com.example.units"),
        "{stderr}"
    );
}

#[test]
fn a_tampered_package_is_refused_and_leaves_nothing_behind() {
    let fixture = Fixture::new();
    let store = ServedStore::start(fixture.path());
    let url = store.url.as_str();
    let package = fixture.signed("com.example.units", "1.0.0", &[], &store.key());

    // Unpack the signed package, change the manifest, pack it again with the old signatures.
    let work = tempfile::tempdir().unwrap();
    let staged = napp::extract(
        BufReader::new(std::fs::File::open(&package).unwrap()),
        work.path(),
        &Limits::default(),
        true,
    )
    .unwrap();
    let manifest = json!({
        "id": "com.example.units",
        "name": "Units",
        "version": "1.0.0",
        "provides": ["tool:convert"],
        "permissions": ["network:evil.example.com"],
    });
    std::fs::write(staged.path().join("manifest.json"), manifest.to_string()).unwrap();
    let tampered = fixture.path().join("tampered.napp");
    napp::pack_to_file(staged.path(), &tampered).unwrap();

    let (code, report, _) = fixture.osprey(&["app", "install", text(&tampered), "--store", url]);
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["ok"], false);
    assert_eq!(report["code"], "signature_invalid");
    let (code, _, stderr) =
        fixture.osprey_text(&["app", "install", text(&tampered), "--store", url]);
    assert_eq!(code, 3);
    assert!(
        stderr.starts_with("osprey: signature_invalid: "),
        "{stderr}"
    );
    assert!(
        fixture.apps_entries().is_empty(),
        "{:?}",
        fixture.apps_entries()
    );

    // Signed by someone else's key: refused the same way.
    let other = KeyPair::generate().unwrap();
    let foreign = fixture.signed("com.example.other", "1.0.0", &[], &other);
    let (code, report, _) = fixture.osprey(&["app", "install", text(&foreign), "--store", url]);
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["code"], "signature_invalid");
    assert_eq!(report["reason"], "key_id_mismatch");

    // Not signed at all: the package itself is rejected, with the reason.
    let unsigned = fixture.package("com.example.plain", "1.0.0", &[]);
    let (code, report, _) = fixture.osprey(&["app", "install", text(&unsigned), "--store", url]);
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["code"], "package_rejected");
    assert_eq!(report["reason"], "missing_file");
    assert!(
        fixture.apps_entries().is_empty(),
        "{:?}",
        fixture.apps_entries()
    );
}

#[test]
fn a_revoked_app_is_refused() {
    let fixture = Fixture::new();
    let store = ServedStore::start(fixture.path());
    let url = store.url.as_str();
    let clock = fixture.package("com.example.clock", "0.3.0", &[]);
    store.publish(&clock);
    store.revoke("com.example.clock", "malware");
    let (code, report, _) =
        fixture.osprey(&["app", "install", "com.example.clock", "--store", url]);
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["code"], "revoked");
    assert!(
        report["message"].as_str().unwrap().contains("malware"),
        "{report}"
    );
    assert!(
        fixture.apps_entries().is_empty(),
        "{:?}",
        fixture.apps_entries()
    );
}

/// A store app running under `osprey daemon` that the store then revokes is stopped and
/// quarantined, its data kept: by the store's pushed event, or by the daemon's sweep (here asked
/// for with `osprey app sweep`; it also runs at start and every hour), whichever comes first.
#[test]
fn a_running_app_the_store_revokes_is_stopped_and_quarantined_by_the_sweep() {
    let fixture = Fixture::new();
    let store = ServedStore::start(fixture.path());
    let url = store.url.as_str();
    store.publish(&fixture.runnable_package("com.example.units", "1.0.0"));
    let (code, report, stderr) =
        fixture.osprey(&["app", "install", "com.example.units", "--store", url]);
    assert_eq!(code, 0, "{stderr} {report}");
    let data = fixture.path().join("data");
    let (code, _, stderr) =
        fixture.osprey_text(&["config", "set", "store.url", &format!("\"{url}\"")]);
    assert_eq!(code, 0, "{stderr}");
    std::fs::create_dir_all(data.join("apps/com.example.units/data")).unwrap();
    std::fs::write(data.join("apps/com.example.units/data/notes.txt"), "kept").unwrap();

    let (_daemon, lines) = start_daemon(osprey_bin(), &data);
    wait_for_line(&lines, "osprey daemon: ready");
    let pid = wait_for_pid(&fixture, "com.example.units");

    // Nothing revoked yet: the sweep changes nothing.
    let (code, said, stderr) = fixture.osprey_text(&["app", "sweep"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(said.contains("no installed app is revoked"), "{said}");
    assert!(pid_alive(pid));

    // The daemon hears of the revocation from the store's event stream, or at the latest from
    // this sweep: whichever comes first stops and quarantines the app.
    store.revoke("com.example.units", "leaks keys");
    let (code, report, stderr) = fixture.osprey(&["app", "sweep"]);
    assert_eq!(code, 0, "{stderr} {report}");
    let swept = report["revoked"].as_array().unwrap();
    assert!(
        swept.is_empty()
            || (swept[0]["id"] == "com.example.units" && swept[0]["reason"] == "leaks keys"),
        "{report}"
    );
    let deadline = Instant::now() + DEADLINE;
    while pid_alive(pid) {
        assert!(Instant::now() < deadline, "the revoked app still runs");
        std::thread::sleep(Duration::from_millis(50));
    }
    let listed = fixture.listed_app("com.example.units").unwrap();
    assert_eq!(listed["quarantined"], true, "{listed}");
    assert!(
        listed["quarantine_reason"]
            .as_str()
            .is_some_and(|why| why.contains("leaks keys")),
        "{listed}"
    );
    assert_eq!(
        std::fs::read_to_string(data.join("apps/com.example.units/data/notes.txt")).unwrap(),
        "kept"
    );
    // Quarantined apps are not launched again.
    let (code, report, _) = fixture.osprey(&["app", "launch", "com.example.units"]);
    assert_ne!(code, 0, "{report}");
}

/// The pid of a running app (from its `.pid` file), once the running Osprey reports it running.
fn wait_for_pid(fixture: &Fixture, id: &str) -> i32 {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if fixture
            .listed_app(id)
            .is_some_and(|app| app["state"] == "running")
            && let Ok(text) = std::fs::read_to_string(fixture.apps().join(id).join(".pid"))
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "{id} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pid_alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

#[test]
fn without_a_store_nothing_is_trusted() {
    let fixture = Fixture::new();
    let key = KeyPair::generate().unwrap();
    let package = fixture.signed("com.example.units", "1.0.0", &[], &key);
    // No --store, no cached key: the signing key cannot be known.
    let (code, report, _) = fixture.osprey(&["app", "install", text(&package)]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["code"], "store_unavailable");
    assert!(
        fixture.apps_entries().is_empty(),
        "{:?}",
        fixture.apps_entries()
    );
}

#[test]
fn an_update_adding_permissions_waits_for_approval() {
    let fixture = Fixture::new();
    let store = ServedStore::start(fixture.path());
    let url = store.url.as_str();
    let key = store.key();
    let v1 = fixture.signed("com.example.units", "1.0.0", &[], &key);
    let v2 = fixture.signed(
        "com.example.units",
        "2.0.0",
        &["network:api.example.com"],
        &key,
    );
    let (code, _, stderr) = fixture.osprey(&["app", "install", text(&v1), "--store", url]);
    assert_eq!(code, 0, "{stderr}");

    let (code, report, stderr) = fixture.osprey(&["app", "install", text(&v2), "--store", url]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["outcome"], "pending_approval");
    assert_eq!(
        report["new_permissions"],
        json!(["network:api.example.com"])
    );
    let listed = fixture.listed();
    assert_eq!(listed[0]["version"], "1.0.0");
    assert_eq!(listed[0]["pending_update"], true);
    assert_eq!(
        listed[0]["pending_permissions"],
        json!(["network:api.example.com"])
    );

    let (code, _, stderr) = fixture.osprey(&["app", "reject-update", "com.example.units"]);
    assert_eq!(code, 0, "{stderr}");
    let listed = fixture.listed();
    assert_eq!(listed[0]["version"], "1.0.0");
    assert_eq!(listed[0]["pending_update"], false);
    let (code, report, _) = fixture.osprey(&["app", "approve-update", "com.example.units"]);
    assert_eq!(code, 3);
    assert_eq!(report["code"], "no_pending_update");

    let (code, report, stderr) = fixture.osprey(&["app", "install", text(&v2), "--store", url]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["outcome"], "pending_approval");
    let (code, report, stderr) = fixture.osprey(&["app", "approve-update", "com.example.units"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["version"], "2.0.0");
    let listed = fixture.listed();
    assert_eq!(listed[0]["version"], "2.0.0");
    assert_eq!(listed[0]["pending_update"], false);
}

/// Gives a project's manifest a `build` step.
fn with_build(project: &Path, command: &[&str], output: &str) {
    let path = project.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["build"] = json!({"command": command, "output": output});
    std::fs::write(&path, manifest.to_string()).unwrap();
}

#[test]
fn sideload_builds_starts_the_app_once_and_unsideload_leaves_the_project_alone() {
    let fixture = Fixture::new();
    let project = fixture.project("com.example.dev", "0.1.0", &[]);
    // The project builds its binary (here by copying the unit-converter fixture app, which
    // really runs): the build's output becomes `binary`.
    std::fs::remove_file(project.join("binary")).unwrap();
    let app = osprey_tests::fixture_binary("osprey-fixture-unit-converter");
    let build = format!("mkdir -p out && cp '{}' out/units", app.display());
    with_build(&project, &["sh", "-c", &build], "out/units");
    let (code, report, stderr) = fixture.osprey(&["app", "sideload", text(&project)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["id"], "com.example.dev");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("built with `sh -c"),
        "{report}"
    );
    assert_eq!(
        std::fs::read(project.join("binary")).unwrap(),
        std::fs::read(&app).unwrap()
    );
    let listed = fixture.listed();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], "com.example.dev");
    assert_eq!(listed[0]["sideloaded"], true);
    let (_, stdout, _) = fixture.osprey_text(&["app", "list"]);
    assert!(stdout.contains("[sideloaded]"), "{stdout}");

    // Twice is refused.
    let (code, report, _) = fixture.osprey(&["app", "sideload", text(&project)]);
    assert_eq!(code, 3);
    assert_eq!(report["code"], "already_installed");

    let (code, _, stderr) = fixture.osprey(&["app", "unsideload", "com.example.dev"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(fixture.listed().is_empty());
    assert!(project.join("manifest.json").is_file());
    assert!(project.join("binary").is_file());
    let (code, report, _) = fixture.osprey(&["app", "unsideload", "com.example.dev"]);
    assert_eq!(code, 3);
    assert_eq!(report["code"], "not_installed");
}

#[test]
fn a_sideload_whose_build_fails_or_whose_app_does_not_start_is_not_linked() {
    let fixture = Fixture::new();
    let project = fixture.project("com.example.broken", "0.1.0", &[]);
    with_build(
        &project,
        &[
            "sh",
            "-c",
            "echo 'error[E0432]: unresolved import' >&2; exit 101",
        ],
        "out/units",
    );
    let (code, report, _) = fixture.osprey(&["app", "sideload", text(&project)]);
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["code"], "build_failed");
    let message = report["message"].as_str().unwrap();
    assert!(
        message.contains("unresolved import") && message.contains("exit status: 101"),
        "{message}"
    );
    assert!(fixture.listed().is_empty());

    // It builds, but what it built cannot start (not a real program): the link goes again.
    let project = fixture.project("com.example.stillborn", "0.1.0", &[]);
    let (code, report, _) = fixture.osprey(&["app", "sideload", text(&project)]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["code"], "launch_failed");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("did not start, so the link was removed"),
        "{report}"
    );
    assert!(fixture.listed().is_empty());
    assert!(
        project.join("binary").is_file(),
        "the project is left alone"
    );
}

#[test]
fn launch_and_stop_without_a_running_osprey_say_how_to_start_one() {
    let fixture = Fixture::new();
    for action in ["launch", "stop"] {
        let (code, stdout, stderr) = fixture.osprey_text(&["app", action, "com.example.units"]);
        assert_eq!(code, 1, "{stdout}");
        assert!(
            stderr.starts_with("osprey: not_running: ")
                && stderr.contains("start the desktop app or `osprey daemon`"),
            "{stderr}"
        );
    }
}

#[test]
fn store_serve_stops_on_sigterm() {
    let fixture = Fixture::new();
    let mut store = ServedStore::start(fixture.path());
    let status = Command::new("kill")
        .args(["-TERM", &store.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + DEADLINE;
    let exit = loop {
        if let Some(exit) = store.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "the store did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
}

fn osprey_bin() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_BIN_EXE_osprey"))
}

#[test]
fn the_store_refuses_in_json_with_a_code_and_the_cli_says_which() {
    let fixture = Fixture::new();
    let store = ServedStore::start(fixture.path());
    let package = fixture.runnable_package("com.example.units", "1.0.0");
    // A wrong token: refused, nothing published.
    let (code, _, stderr) = store.cli(
        &["store", "publish", package.to_str().unwrap()],
        Token::Env("not-the-token"),
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("store_refused: unauthorized"), "{stderr}");
    store.publish(&package);
    // The same version again: the store's own code comes through.
    let (code, _, stderr) = store.cli(
        &["store", "publish", package.to_str().unwrap()],
        Token::Env(TOKEN),
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("version_exists"), "{stderr}");
    // Not JSON, the wrong content type, an unknown path: JSON with a code, never plain text.
    for (path, content_type, body) in [
        (
            "/api/v1/apps/com.example.units/revoke",
            "text/plain",
            "leaks keys",
        ),
        (
            "/api/v1/apps/com.example.units/revoke",
            "application/json",
            "{",
        ),
        ("/api/v1/nothing-here", "application/json", "{}"),
    ] {
        let (status, answer) = store.admin_exchange("POST", path, content_type, body.as_bytes());
        assert!(status >= 400, "{path}: {status}");
        let answer: Value = serde_json::from_str(&answer)
            .unwrap_or_else(|e| panic!("{path} {content_type}: not JSON ({e}): {answer}"));
        assert!(answer["code"].is_string(), "{answer}");
    }
}
