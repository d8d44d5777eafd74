//! The `file` tool end to end: the PathGuard on every path (including `..` and symlinks),
//! paging huge files, edits, atomic writes, glob and grep.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use osprey_tools::file::FileTool;
use osprey_tools::{DomainTool, PathGuard, ToolContext};
use osprey_types::{ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A fake home (with a `.ssh` holding a key) and a project directory inside it.
struct Fixture {
    home: TempDir,
    tool: FileTool,
}

impl Fixture {
    fn new() -> Self {
        let home = tempfile::tempdir().unwrap();
        fs::create_dir_all(home.path().join(".ssh")).unwrap();
        fs::write(
            home.path().join(".ssh/id_ed25519"),
            "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n",
        )
        .unwrap();
        fs::create_dir_all(home.path().join("project")).unwrap();
        let guard = PathGuard::new(Some(home.path().to_path_buf()), home.path().join(".osprey"));
        let tool = FileTool::new(guard).with_base_dir(home.path().join("project"));
        Fixture { home, tool }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    fn project(&self) -> PathBuf {
        self.home.path().join("project")
    }

    async fn call(&self, input: Value) -> ToolResult {
        let call = self
            .tool
            .domain()
            .resolve(input)
            .expect("input fits the table");
        let ctx = ToolContext::new(Origin::User, Duration::from_secs(60));
        self.tool.run(&ctx, call).await
    }
}

fn ok(result: &ToolResult) -> String {
    assert!(
        !result.is_error,
        "unexpected error: {}",
        result.text_content()
    );
    result.text_content()
}

fn err(result: &ToolResult, code: ErrorCode) -> String {
    assert!(
        result.is_error,
        "expected an error, got: {}",
        result.text_content()
    );
    assert_eq!(result.code, Some(code), "{}", result.text_content());
    result.text_content()
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

// ---------------------------------------------------------------- sensitive paths

#[cfg(unix)]
#[tokio::test]
async fn reads_of_credentials_are_refused_directly_via_dotdot_and_via_symlinks() {
    let f = Fixture::new();
    let key = f.home().join(".ssh/id_ed25519");
    symlink(&key, &f.project().join("innocent.txt"));
    symlink(&f.home().join(".ssh"), &f.project().join("keys"));
    for path in [
        key.to_string_lossy().to_string(),
        "~/.ssh/id_ed25519".to_string(),
        "../.ssh/id_ed25519".to_string(),
        f.project()
            .join("sub/../../.ssh/id_ed25519")
            .to_string_lossy()
            .to_string(),
        "innocent.txt".to_string(),
        "keys/id_ed25519".to_string(),
    ] {
        let r = f.call(json!({"action": "read", "path": path})).await;
        let message = err(&r, ErrorCode::SensitivePath);
        assert!(!message.contains("secret"), "{path}: {message}");
    }
}

/// A process's environment holds keys (Osprey's own: provider API keys), and the persistence
/// paths run code later: neither reachable through the file tool.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn process_environments_and_persistence_paths_are_refused() {
    let f = Fixture::new();
    for path in ["/proc/self/environ", "/proc/1/environ", "/proc/self/mem"] {
        let r = f.call(json!({"action": "read", "path": path})).await;
        err(&r, ErrorCode::SensitivePath);
    }
    for path in [
        "~/.bash_aliases",
        "~/.gitconfig",
        "~/.config/git/config",
        "~/.local/bin/ls",
        "~/.vimrc",
        "~/.local/lib/python3.12/site-packages/evil.pth",
        ".git/hooks/pre-commit",
    ] {
        let r = f
            .call(json!({"action": "write", "path": path, "content": "x"}))
            .await;
        err(&r, ErrorCode::SensitivePath);
    }
    assert!(!f.home().join(".bash_aliases").exists());
    assert!(!f.project().join(".git").exists());
}

#[cfg(unix)]
#[tokio::test]
async fn writes_and_edits_of_credentials_are_refused_and_change_nothing() {
    let f = Fixture::new();
    let key = f.home().join(".ssh/id_ed25519");
    symlink(&key, &f.project().join("innocent.txt"));
    symlink(&f.home().join(".ssh"), &f.project().join("keys"));
    for path in [
        "~/.ssh/authorized_keys",
        "../.ssh/authorized_keys",
        "innocent.txt",
        "keys/authorized_keys",
    ] {
        let r = f
            .call(json!({"action": "write", "path": path, "content": "ssh-ed25519 AAAA attacker"}))
            .await;
        err(&r, ErrorCode::SensitivePath);
        let r = f
            .call(json!({"action": "write", "path": path, "content": "x", "append": true}))
            .await;
        err(&r, ErrorCode::SensitivePath);
    }
    let r = f
        .call(json!({"action": "edit", "path": "innocent.txt", "old_text": "secret", "new_text": "mine"}))
        .await;
    err(&r, ErrorCode::SensitivePath);
    assert!(!f.home().join(".ssh/authorized_keys").exists());
    assert!(fs::read_to_string(&key).unwrap().contains("secret"));
}

#[cfg(unix)]
#[tokio::test]
async fn glob_and_grep_never_return_or_enter_sensitive_paths() {
    let f = Fixture::new();
    symlink(
        &f.home().join(".ssh/id_ed25519"),
        &f.project().join("innocent.txt"),
    );
    fs::write(
        f.project().join("notes.txt"),
        "PRIVATE KEY handling notes\n",
    )
    .unwrap();

    // Asking for the hidden directory by name makes the walker include hidden entries, so the
    // guard is what keeps the key out.
    let home = f.home().to_string_lossy().to_string();
    let r = f
        .call(json!({"action": "glob", "path": home, "pattern": ".ssh/*"}))
        .await;
    assert!(!ok(&r).contains("id_ed25519"), "{}", r.text_content());
    let r = f.call(json!({"action": "glob", "pattern": "*"})).await;
    let text = ok(&r);
    assert!(text.contains("notes.txt"), "{text}");
    assert!(!text.contains("innocent.txt"), "{text}");

    let r = f
        .call(json!({"action": "grep", "path": home, "pattern": "PRIVATE KEY", "glob": ".ssh/*"}))
        .await;
    assert!(!ok(&r).contains("secret"), "{}", r.text_content());
    let r = f
        .call(json!({"action": "grep", "pattern": "PRIVATE KEY|secret"}))
        .await;
    let text = ok(&r);
    assert!(text.contains("notes.txt:1: PRIVATE KEY"), "{text}");
    assert!(
        !text.contains("innocent") && !text.contains("secret"),
        "{text}"
    );

    // Searching the credential directory itself is refused outright.
    let r = f
        .call(json!({"action": "grep", "path": "~/.ssh", "pattern": "."}))
        .await;
    err(&r, ErrorCode::SensitivePath);
    let r = f
        .call(json!({"action": "glob", "path": "~/.ssh", "pattern": "*"}))
        .await;
    err(&r, ErrorCode::SensitivePath);
}

// ---------------------------------------------------------------- read

#[tokio::test]
async fn huge_files_page_quickly_with_a_note_saying_where_to_continue() {
    let f = Fixture::new();
    let path = f.project().join("big.log");
    let mut content = String::with_capacity(200_000 * 12);
    for i in 1..=200_000 {
        content.push_str(&format!("line {i}\n"));
    }
    fs::write(&path, content).unwrap();

    let started = Instant::now();
    let r = f.call(json!({"action": "read", "path": "big.log"})).await;
    let text = ok(&r);
    assert!(text.starts_with("     1\tline 1\n"), "{}", &text[..40]);
    assert!(text.contains("  2000\tline 2000\n"));
    assert!(!text.contains("line 2001\n"));
    assert!(
        text.ends_with("... 198000 more lines; read again with offset: 2001\n"),
        "{}",
        &text[text.len() - 100..]
    );

    let r = f
        .call(json!({"action": "read", "path": "big.log", "offset": 150_000, "limit": 3}))
        .await;
    assert_eq!(
        ok(&r),
        "150000\tline 150000\n150001\tline 150001\n150002\tline 150002\n\
         ... 49998 more lines; read again with offset: 150003\n"
    );
    let r = f
        .call(json!({"action": "read", "path": "big.log", "offset": 199_999}))
        .await;
    assert_eq!(ok(&r), "199999\tline 199999\n200000\tline 200000\n");
    // Generous bound for debug builds on a loaded CI machine; the real cost is milliseconds.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    let r = f
        .call(json!({"action": "read", "path": "big.log", "offset": 300_000}))
        .await;
    assert!(err(&r, ErrorCode::ToolFailed).contains("past the end"));
}

#[tokio::test]
async fn long_lines_are_cut_with_a_marker_and_reading_goes_on() {
    let f = Fixture::new();
    let long = "x".repeat(100_000);
    fs::write(
        f.project().join("min.js"),
        format!("short\n{long}\nafter\n"),
    )
    .unwrap();
    let r = f.call(json!({"action": "read", "path": "min.js"})).await;
    let text = ok(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text:.300}");
    assert_eq!(lines[0], "     1\tshort");
    assert!(lines[1].starts_with(&format!("     2\t{}", "x".repeat(2000))));
    assert!(!lines[1].contains(&"x".repeat(2001)));
    assert!(
        lines[1].ends_with("[... line cut at 2000 characters; it is 100.0 KB long]"),
        "{}",
        &lines[1][2000..]
    );
    assert_eq!(lines[2], "     3\tafter");
}

#[tokio::test]
async fn binary_files_are_refused_clearly() {
    let f = Fixture::new();
    fs::write(f.project().join("a.bin"), b"\x7fELF\x02\x01\x01\0\0\0rest").unwrap();
    let r = f.call(json!({"action": "read", "path": "a.bin"})).await;
    let message = err(&r, ErrorCode::ToolFailed);
    assert!(
        message.contains("binary") && message.contains("NUL"),
        "{message}"
    );

    fs::write(f.project().join("latin1.txt"), b"caf\xe9 au lait\n").unwrap();
    let r = f
        .call(json!({"action": "read", "path": "latin1.txt"}))
        .await;
    assert!(err(&r, ErrorCode::ToolFailed).contains("not UTF-8"));
}

#[tokio::test]
async fn missing_files_and_directories_get_actionable_messages() {
    let f = Fixture::new();
    fs::write(f.project().join("config.toml"), "a = 1\n").unwrap();
    let r = f
        .call(json!({"action": "read", "path": "config.yaml"}))
        .await;
    let message = err(&r, ErrorCode::ToolFailed);
    assert!(message.contains("file not found"), "{message}");
    assert!(message.contains("config.toml"), "{message}");
    assert!(message.contains("glob"), "{message}");

    let r = f.call(json!({"action": "read", "path": "."})).await;
    assert!(err(&r, ErrorCode::ToolFailed).contains("is a directory"));

    fs::write(f.project().join("empty"), "").unwrap();
    let r = f.call(json!({"action": "read", "path": "empty"})).await;
    assert!(ok(&r).contains("empty file"));
}

// ---------------------------------------------------------------- write

#[tokio::test]
async fn write_creates_parents_appends_and_replaces() {
    let f = Fixture::new();
    let r = f
        .call(json!({"action": "write", "path": "a/b/c/new.txt", "content": "one\n"}))
        .await;
    assert!(ok(&r).starts_with("created "), "{}", r.text_content());
    let path = f.project().join("a/b/c/new.txt");
    assert_eq!(fs::read_to_string(&path).unwrap(), "one\n");

    let r = f
        .call(
            json!({"action": "write", "path": "a/b/c/new.txt", "content": "two\n", "append": true}),
        )
        .await;
    assert!(ok(&r).starts_with("appended "), "{}", r.text_content());
    assert_eq!(fs::read_to_string(&path).unwrap(), "one\ntwo\n");

    let r = f
        .call(json!({"action": "write", "path": "a/b/c/new.txt", "content": "three\n"}))
        .await;
    assert!(ok(&r).starts_with("replaced "), "{}", r.text_content());
    assert_eq!(fs::read_to_string(&path).unwrap(), "three\n");
}

#[cfg(unix)]
#[tokio::test]
async fn replacing_is_atomic_keeps_permissions_and_leaves_no_temp_files() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let f = Fixture::new();
    let dir = f.project().join("atomic");
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("script.sh");
    fs::write(&path, "#!/bin/sh\necho old\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o750)).unwrap();
    let inode_before = fs::metadata(&path).unwrap().ino();
    // A hard link still sees the old content after an atomic replace (a new inode was
    // renamed into place) — an in-place rewrite would change it.
    let witness = dir.join("witness");
    fs::hard_link(&path, &witness).unwrap();

    let r = f
        .call(json!({"action": "write", "path": path, "content": "#!/bin/sh\necho new\n"}))
        .await;
    ok(&r);
    assert_eq!(fs::read_to_string(&path).unwrap(), "#!/bin/sh\necho new\n");
    assert_eq!(
        fs::read_to_string(&witness).unwrap(),
        "#!/bin/sh\necho old\n"
    );
    let meta = fs::metadata(&path).unwrap();
    assert_ne!(meta.ino(), inode_before);
    assert_eq!(meta.permissions().mode() & 0o7777, 0o750);

    let r = f
        .call(json!({"action": "edit", "path": path, "old_text": "new", "new_text": "edited"}))
        .await;
    ok(&r);
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o750
    );
    let names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names.len(), 2, "temp files left behind: {names:?}");

    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let r = f
        .call(json!({"action": "write", "path": path, "content": "x"}))
        .await;
    assert!(err(&r, ErrorCode::ToolFailed).contains("read-only"));
}

// ---------------------------------------------------------------- edit

#[tokio::test]
async fn edit_needs_a_unique_match_unless_replace_all() {
    let f = Fixture::new();
    let path = f.project().join("lib.rs");
    fs::write(&path, "let a = 1;\nlet b = 1;\nlet c = 2;\nlet d = 1;\n").unwrap();

    let r = f
        .call(json!({"action": "edit", "path": "lib.rs", "old_text": "= 1;", "new_text": "= 9;"}))
        .await;
    let message = err(&r, ErrorCode::ToolFailed);
    assert!(message.contains("matches 3 times"), "{message}");
    assert!(message.contains("lines 1, 2, 4"), "{message}");
    assert!(message.contains("replace_all"), "{message}");
    assert!(message.contains("surrounding lines"), "{message}");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "let a = 1;\nlet b = 1;\nlet c = 2;\nlet d = 1;\n"
    );

    let r = f
        .call(json!({"action": "edit", "path": "lib.rs", "old_text": "let b = 1;", "new_text": "let b = 5;"}))
        .await;
    assert!(
        ok(&r).contains("replaced 1 occurrence (line 2)"),
        "{}",
        r.text_content()
    );

    let r = f
        .call(json!({"action": "edit", "path": "lib.rs", "old_text": "= 1;", "new_text": "= 0;", "replace_all": true}))
        .await;
    assert!(
        ok(&r).contains("replaced 2 occurrences"),
        "{}",
        r.text_content()
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "let a = 0;\nlet b = 5;\nlet c = 2;\nlet d = 0;\n"
    );
}

#[tokio::test]
async fn edit_with_no_match_says_so_and_changes_nothing() {
    let f = Fixture::new();
    let path = f.project().join("main.py");
    fs::write(&path, "def main():\n    return 1\n").unwrap();
    let r = f
        .call(json!({"action": "edit", "path": "main.py", "old_text": "return 2", "new_text": "return 3"}))
        .await;
    let message = err(&r, ErrorCode::ToolFailed);
    assert!(
        message.contains("not found") && message.contains("0 matches"),
        "{message}"
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "def main():\n    return 1\n"
    );

    let r = f
        .call(json!({"action": "edit", "path": "nope.py", "old_text": "a", "new_text": "b"}))
        .await;
    assert!(err(&r, ErrorCode::ToolFailed).contains("file not found"));
}

#[tokio::test]
async fn edit_matches_crlf_files_written_with_plain_newlines() {
    let f = Fixture::new();
    let path = f.project().join("win.txt");
    fs::write(&path, "one\r\ntwo\r\nthree\r\n").unwrap();
    let r = f
        .call(json!({"action": "edit", "path": "win.txt", "old_text": "one\ntwo", "new_text": "1\n2"}))
        .await;
    ok(&r);
    assert_eq!(fs::read_to_string(&path).unwrap(), "1\r\n2\r\nthree\r\n");
}

// ---------------------------------------------------------------- glob

fn touch(path: &Path, age_seconds: u64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, "fn x() {}\n").unwrap();
    let when = SystemTime::now() - Duration::from_secs(age_seconds);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

#[tokio::test]
async fn glob_lists_newest_first_skips_noise_and_honours_limit() {
    let f = Fixture::new();
    let p = f.project();
    touch(&p.join("src/old.rs"), 3000);
    touch(&p.join("src/newest.rs"), 10);
    touch(&p.join("src/deep/middle.rs"), 1000);
    touch(&p.join("README.md"), 5);
    for skipped in [
        "node_modules/pkg/index.rs",
        "vendor/lib.rs",
        ".git/hooks/x.rs",
        ".hidden/secret.rs",
        "__pycache__/m.rs",
        "target/debug/build.rs",
    ] {
        touch(&p.join(skipped), 1);
    }
    fs::write(
        p.join("target/CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n",
    )
    .unwrap();

    let r = f
        .call(json!({"action": "glob", "pattern": "**/*.rs"}))
        .await;
    let text = ok(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        vec![
            p.join("src/newest.rs").to_string_lossy(),
            p.join("src/deep/middle.rs").to_string_lossy(),
            p.join("src/old.rs").to_string_lossy(),
        ],
        "{text}"
    );

    // No slash: the name matches at any depth.
    let r = f.call(json!({"action": "glob", "pattern": "*.rs"})).await;
    assert_eq!(ok(&r).lines().count(), 3);
    // A slash anchors at the root, and `*` stays within one directory.
    let r = f
        .call(json!({"action": "glob", "pattern": "src/*.rs"}))
        .await;
    assert_eq!(ok(&r).lines().count(), 2);

    let r = f
        .call(json!({"action": "glob", "pattern": "*.rs", "limit": u64::MAX}))
        .await;
    assert_eq!(ok(&r).lines().count(), 3);
    let r = f
        .call(json!({"action": "glob", "pattern": "**/*.rs", "limit": 2}))
        .await;
    let text = ok(&r);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("newest.rs") && text.contains("middle.rs") && !text.contains("old.rs"));
    assert!(text.contains("showing the newest 2 of 3"), "{text}");

    // Naming a hidden directory explicitly searches it.
    let r = f
        .call(json!({"action": "glob", "pattern": ".hidden/*.rs"}))
        .await;
    assert!(ok(&r).contains("secret.rs"));

    let r = f
        .call(json!({"action": "glob", "pattern": "**/*.zig"}))
        .await;
    assert!(ok(&r).contains("no files match"));
    let r = f.call(json!({"action": "glob", "pattern": "src/[a"})).await;
    err(&r, ErrorCode::InvalidInput);
}

// ---------------------------------------------------------------- grep

#[tokio::test]
async fn grep_filters_by_glob_ignores_case_shows_context_and_stops_at_the_limit() {
    let f = Fixture::new();
    let p = f.project();
    fs::create_dir_all(p.join("src")).unwrap();
    fs::write(
        p.join("src/a.rs"),
        "// header\nfn alpha() {}\nlet x = 1;\nfn Beta() {}\n",
    )
    .unwrap();
    fs::write(p.join("src/b.py"), "def alpha():\n    pass\n").unwrap();
    fs::write(p.join("notes.md"), "FN ALPHA is documented here\n").unwrap();
    fs::write(p.join("blob.bin"), b"fn alpha\0binary").unwrap();

    let r = f
        .call(json!({"action": "grep", "pattern": "fn \\w+", "glob": "*.rs"}))
        .await;
    let text = ok(&r);
    let a = p.join("src/a.rs").to_string_lossy().to_string();
    assert!(text.contains(&format!("{a}:2: fn alpha() {{}}")), "{text}");
    assert!(text.contains(&format!("{a}:4: fn Beta() {{}}")), "{text}");
    assert!(
        !text.contains("b.py") && !text.contains("notes.md") && !text.contains("blob"),
        "{text}"
    );
    assert!(text.contains("[2 matching lines in 1 file]"), "{text}");

    let r = f
        .call(json!({"action": "grep", "pattern": "fn alpha", "case_insensitive": true}))
        .await;
    let text = ok(&r);
    assert!(text.contains("notes.md:1: FN ALPHA"), "{text}");
    assert!(text.contains("a.rs:2: fn alpha"), "{text}");
    assert!(
        !text.contains("blob.bin"),
        "binary files are skipped: {text}"
    );
    let r = f
        .call(json!({"action": "grep", "pattern": "fn alpha"}))
        .await;
    assert!(!ok(&r).contains("notes.md"));

    let r = f
        .call(json!({"action": "grep", "pattern": "let x", "context": 1, "path": "src"}))
        .await;
    let text = ok(&r);
    assert_eq!(
        text,
        format!(
            "{a}-2- fn alpha() {{}}\n{a}:3: let x = 1;\n{a}-4- fn Beta() {{}}\n[1 matching line in 1 file]\n"
        )
    );

    let r = f
        .call(json!({"action": "grep", "pattern": "alpha|Beta|pass", "limit": 2}))
        .await;
    let text = ok(&r);
    let matches = text.lines().filter(|l| !l.starts_with('[')).count();
    assert_eq!(matches, 2, "{text}");
    assert!(text.contains("stopped at the limit of 2"), "{text}");

    // A single file as the path.
    let r = f
        .call(json!({"action": "grep", "pattern": "pass", "path": "src/b.py"}))
        .await;
    assert!(ok(&r).contains("b.py:2:     pass"));

    let r = f
        .call(json!({"action": "grep", "pattern": "zzz_nothing"}))
        .await;
    assert!(ok(&r).contains("no matches"));
    let r = f.call(json!({"action": "grep", "pattern": "fn ("})).await;
    assert!(err(&r, ErrorCode::InvalidInput).contains("invalid regex"));
}

#[tokio::test]
async fn a_cancelled_search_stops_with_cancelled() {
    let f = Fixture::new();
    fs::write(f.project().join("a.txt"), "hello\n").unwrap();
    let call = f
        .tool
        .domain()
        .resolve(json!({"action": "grep", "pattern": "hello"}))
        .unwrap();
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(60));
    ctx.cancel.cancel();
    let r = f.tool.run(&ctx, call).await;
    err(&r, ErrorCode::Cancelled);
}

// ---------------------------------------------------------------- through the registry

#[cfg(unix)]
#[tokio::test]
async fn through_the_registry_credentials_stay_refused() {
    use osprey_db::Database;
    use osprey_tools::{
        AskMode, AuditSink, Level, OriginRules, Policy, PolicyConfig, Registry, RegistryConfig,
        Safeguard,
    };
    let f = Fixture::new();
    let db = Database::open_in(&f.home().join(".osprey")).unwrap();
    let guard = f.tool.guard().clone();
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(
            PolicyConfig {
                level: Level::Full,
                ask: AskMode::Off,
                ..Default::default()
            },
            None,
        )
        .unwrap(),
        origin_rules: OriginRules::default(),
        safeguard: Safeguard::new(guard.clone()),
        audit: AuditSink::new(db.audit()),
        output_cap: 256 * 1024,
    });
    registry.register_domain(FileTool::new(guard).with_base_dir(f.project()));
    symlink(
        &f.home().join(".ssh/id_ed25519"),
        &f.project().join("innocent.txt"),
    );
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(60));
    let r = registry
        .execute(
            &ctx,
            "file",
            json!({"action": "read", "path": "innocent.txt"}),
        )
        .await;
    assert_eq!(
        r.code,
        Some(ErrorCode::SensitivePath),
        "{}",
        r.text_content()
    );
    let r = registry
        .execute(
            &ctx,
            "file",
            json!({"action": "write", "path": "~/.ssh/authorized_keys", "content": "x"}),
        )
        .await;
    assert!(
        r.is_error && r.code.is_some_and(|c| c.is_refusal()),
        "{r:?}"
    );
    assert!(!f.home().join(".ssh/authorized_keys").exists());
    let r = registry
        .execute(
            &ctx,
            "file",
            json!({"action": "write", "path": "ok.txt", "content": "fine"}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text_content());
    assert_eq!(
        fs::read_to_string(f.project().join("ok.txt")).unwrap(),
        "fine"
    );
}

/// A second thread exchanges `project/swap` (a real folder) with a link to `~/.ssh`, atomically
/// (`renameat2` with `RENAME_EXCHANGE`), as fast as it can while the tool writes and reads
/// `swap/...` over and over. Checked by name, a call sees the real folder and then uses the link
/// (the old code lost within a few hundred tries); judged by what was opened, whatever the
/// interleaving, nothing lands in `~/.ssh` and the key is never read.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_link_between_check_and_use_redirects_nothing() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};

    let f = Fixture::new();
    let swap = f.project().join("swap");
    fs::create_dir_all(&swap).unwrap();
    fs::write(swap.join("id_ed25519"), "ordinary text\n").unwrap();
    let ssh = f.home().join(".ssh");
    let evil = f.project().join("evil");
    std::os::unix::fs::symlink(&ssh, &evil).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, swap, evil) = (stop.clone(), swap.clone(), evil.clone());
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                renameat2(
                    AT_FDCWD,
                    &swap,
                    AT_FDCWD,
                    &evil,
                    RenameFlags::RENAME_EXCHANGE,
                )
                .unwrap();
                flips += 1;
            }
            // Leave the real folder at `swap`.
            if flips % 2 == 1 {
                renameat2(
                    AT_FDCWD,
                    &swap,
                    AT_FDCWD,
                    &evil,
                    RenameFlags::RENAME_EXCHANGE,
                )
                .unwrap();
            }
            flips
        })
    };
    let mut read_key = false;
    for i in 0..1000 {
        let _ = f
            .call(json!({"action": "write", "path": "swap/planted", "content": format!("{i}")}))
            .await;
        let read = f
            .call(json!({"action": "read", "path": "swap/id_ed25519"}))
            .await;
        read_key |= read.text_content().contains("OPENSSH PRIVATE KEY");
        if read_key || ssh.join("planted").exists() {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = swapper.join().unwrap();
    assert!(flips > 100, "the swapper barely ran ({flips} flips)");
    assert!(!ssh.join("planted").exists(), "a write landed in ~/.ssh");
    let leftovers: Vec<_> = fs::read_dir(&ssh)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "id_ed25519")
        .collect();
    assert!(leftovers.is_empty(), "~/.ssh gained {leftovers:?}");
    assert!(!read_key, "the key was read through the swapped folder");
}

/// A hard link to the key made under an innocent name is the key: refused for reads, edits and
/// appends, and the key is unchanged.
#[cfg(unix)]
#[tokio::test]
async fn a_hard_link_to_a_protected_file_is_refused() {
    let f = Fixture::new();
    let key = f.home().join(".ssh/id_ed25519");
    let innocent = f.project().join("notes.txt");
    fs::hard_link(&key, &innocent).unwrap();
    let before = fs::read_to_string(&key).unwrap();
    let read = f.call(json!({"action": "read", "path": "notes.txt"})).await;
    assert!(err(&read, ErrorCode::SensitivePath).contains("hard link"));
    let edit = f
        .call(json!({"action": "edit", "path": "notes.txt", "old_text": "secret", "new_text": "x"}))
        .await;
    err(&edit, ErrorCode::SensitivePath);
    let append = f
        .call(json!({"action": "write", "path": "notes.txt", "content": "more", "append": true}))
        .await;
    err(&append, ErrorCode::SensitivePath);
    assert_eq!(fs::read_to_string(&key).unwrap(), before);
    // An ordinary file with two names is fine.
    fs::write(f.project().join("a.txt"), "shared\n").unwrap();
    fs::hard_link(f.project().join("a.txt"), f.project().join("b.txt")).unwrap();
    ok(&f.call(json!({"action": "read", "path": "b.txt"})).await);
}

/// Reads inside the workspace folders run unasked; outside them (judged where the path really
/// leads, links followed) they are asked under the default policy, with the folder offered as a
/// lasting scope, and run unasked under `full`.
#[tokio::test]
async fn reads_outside_the_workspace_are_asked_under_the_default_policy() {
    use std::sync::Arc;

    use osprey_db::Database;
    use osprey_tools::{
        AuditSink, FixedApprover, Level, Policy, Registry, RegistryConfig, Safeguard,
    };
    use osprey_types::{ApprovalAnswer, GrantScope};

    let f = Fixture::new();
    fs::write(f.project().join("notes.txt"), "inside").unwrap();
    fs::create_dir_all(f.home().join("elsewhere")).unwrap();
    fs::write(f.home().join("elsewhere/data.txt"), "outside").unwrap();
    symlink(&f.home().join("elsewhere"), &f.project().join("shortcut"));
    let db = Database::open_in(&f.home().join(".osprey")).unwrap();
    let registry = |level: Level| {
        let guard = f.tool.guard().clone();
        let registry = Registry::new(RegistryConfig {
            safeguard: Safeguard::new(guard.clone()),
            audit: AuditSink::new(db.audit()),
            ..RegistryConfig::new(Policy::at_level(level), f.home().join(".osprey"))
        });
        registry.register_domain(
            FileTool::new(guard)
                .with_base_dir(f.project())
                .with_workspaces(vec![f.project()]),
        );
        registry
    };
    let approver = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let ctx =
        ToolContext::new(Origin::User, Duration::from_secs(60)).with_approver(approver.clone());
    let default = registry(Level::Allowlist);
    let read = |path: &str| json!({"action": "read", "path": path});

    let r = default.execute(&ctx, "file", read("notes.txt")).await;
    assert!(ok(&r).contains("inside"));
    let r = default
        .execute(&ctx, "file", json!({"action": "grep", "pattern": "inside"}))
        .await;
    assert!(ok(&r).contains("notes.txt"));
    assert_eq!(approver.count(), 0, "reads in the workspace are not asked");

    let outside = f.home().join("elsewhere/data.txt");
    let r = default
        .execute(&ctx, "file", read(&outside.display().to_string()))
        .await;
    assert!(ok(&r).contains("outside"));
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].summary.contains("outside the workspace folders"),
        "{}",
        asked[0].summary
    );
    let folder = fs::canonicalize(f.home().join("elsewhere")).unwrap();
    assert!(
        asked[0]
            .suggested_scopes
            .contains(&GrantScope::PathPrefix(folder.display().to_string()))
            || asked[0].suggested_scopes.contains(&GrantScope::PathPrefix(
                f.home().join("elsewhere").display().to_string()
            )),
        "{:?}",
        asked[0].suggested_scopes
    );

    // A link in the workspace leads out of it: judged by where it leads.
    default
        .execute(&ctx, "file", read("shortcut/data.txt"))
        .await;
    // So does `..` out of the workspace, and a search rooted outside.
    default
        .execute(&ctx, "file", read("../elsewhere/data.txt"))
        .await;
    default
        .execute(
            &ctx,
            "file",
            json!({"action": "glob", "pattern": "*.txt", "path": "~/elsewhere"}),
        )
        .await;
    assert_eq!(approver.count(), 4, "{:#?}", approver.asked());

    // Under `full` nothing that only reads is asked.
    let full = registry(Level::Full);
    let r = full
        .execute(&ctx, "file", read(&outside.display().to_string()))
        .await;
    assert!(ok(&r).contains("outside"));
    assert_eq!(approver.count(), 4);
}
