//! File search through the desktop's index: the real Tracker 3 miner and extractor (Debian's
//! tracker-miner-fs), on a private session bus of the test's own with a throwaway home, which
//! they index as they would a person's (the home folder one level deep, Documents whole). Tracker
//! leaves folders under /tmp out, so the home sits in the build's own temporary folder.

use std::path::Path;
use std::time::{Duration, Instant};

use osprey_platform::{OsConfig, OsTool};
use serde_json::json;

use crate::harness::{Guarded, STARTUP, bus_config, call, ok_text, program_exists};

const MINER: &str = "/usr/libexec/tracker-miner-fs-3";
const EXTRACTOR: &str = "/usr/libexec/tracker-extract-3";

/// Asks the bus at `address` to start Tracker's miner, as a desktop session does at login.
async fn start_miner(address: &str) {
    let connection = zbus::connection::Builder::address(address)
        .unwrap()
        .build()
        .await
        .unwrap();
    let dbus = zbus::fdo::DBusProxy::new(&connection).await.unwrap();
    let started = tokio::time::timeout(
        STARTUP,
        dbus.start_service_by_name(
            "org.freedesktop.Tracker3.Miner.Files".try_into().unwrap(),
            0,
        ),
    )
    .await;
    assert!(
        matches!(started, Ok(Ok(_))),
        "the bus could not start Tracker's miner: {started:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn search_asks_the_desktop_index_where_it_holds_the_folders_and_walks_the_rest() {
    if !Path::new(MINER).exists() || !Path::new(EXTRACTOR).exists() {
        assert!(
            std::env::var("CI").is_err(),
            "tracker-miner-fs must be installed on CI (scripts/setup)"
        );
        eprintln!("skipped: Tracker is not installed (apt-get install tracker-miner-fs)");
        return;
    }
    assert!(program_exists("dbus-daemon"));
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = |name: &str| {
        let path = home.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    };
    let (config, data, cache, runtime) = (dir("config"), dir("data"), dir("cache"), dir("run"));
    let (docs, code) = (dir("Documents/notes"), dir("code"));
    std::fs::write(
        config.join("user-dirs.dirs"),
        "XDG_DOCUMENTS_DIR=\"$HOME/Documents\"\n",
    )
    .unwrap();
    std::fs::write(docs.join("Budget 2026.txt"), "rent\ngroceries budget 120\n").unwrap();
    std::fs::write(docs.join("plan.md"), "# Plan\nGroceries on friday\n").unwrap();
    // Tracker leaves `*.tmp` out: only a walk finds this one.
    std::fs::write(docs.join("groceries.tmp"), "groceries\n").unwrap();
    // The home is indexed one level deep: what is in `code` is walked.
    std::fs::write(code.join("groceries-list.txt"), "more groceries\n").unwrap();

    // The session bus starts the miner and the extractor when asked, with the test's home (a
    // bus's activated services inherit its environment), as a desktop session does.
    let services = dir("services");
    for (name, exec) in [
        (
            "org.freedesktop.Tracker3.Miner.Files",
            format!("{MINER} --initial-sleep 0"),
        ),
        (
            "org.freedesktop.Tracker3.Miner.Extract",
            EXTRACTOR.to_string(),
        ),
    ] {
        std::fs::write(
            services.join(format!("{name}.service")),
            format!("[D-BUS Service]\nName={name}\nExec={exec}\n"),
        )
        .unwrap();
    }
    let config_file = home.path().join("bus.conf");
    std::fs::write(&config_file, bus_config(Some(&services))).unwrap();
    let text = |path: &Path| path.display().to_string();
    let env = [
        ("HOME", text(home.path())),
        ("XDG_CONFIG_HOME", text(&config)),
        ("XDG_DATA_HOME", text(&data)),
        ("XDG_CACHE_HOME", text(&cache)),
        ("XDG_RUNTIME_DIR", text(&runtime)),
        ("GSETTINGS_BACKEND", "memory".into()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut bus = Guarded::spawn(
        "dbus-daemon",
        &[
            &format!("--config-file={}", config_file.display()),
            "--nofork",
            "--print-address=1",
        ],
        &env,
    );
    let address = bus
        .lines()
        .wait_for("dbus address", STARTUP, |l| l.contains('='))
        .trim()
        .to_string();
    let _stopped_with_the_bus = bus;
    // Osprey never starts the miner (that would begin indexing); the session does, here.
    start_miner(&address).await;

    let tool = OsTool::new(OsConfig {
        session_bus_address: Some(address.clone()),
        search_roots: vec![home.path().to_path_buf()],
        ..OsConfig::default()
    });
    let search = |input: serde_json::Value| {
        let tool = &tool;
        async move {
            let mut input = input;
            input["resource"] = json!("search");
            input["action"] = json!("files");
            ok_text(&call(tool, input).await)
        }
    };
    // Indexing (files, then their words) takes seconds: wait until the index answers for the
    // Documents folder with the words of both notes.
    let end = Instant::now() + Duration::from_secs(120);
    let found = loop {
        let found = search(json!({"content": "groceries"})).await;
        if found.contains("from the desktop's index") && found.contains("plan.md:2:") {
            break found;
        }
        assert!(Instant::now() < end, "the index never answered:\n{found}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let docs_shown = text(&home.path().join("Documents"));
    let status = tool.status().await;
    let search_status = status.iter().find(|a| a.capability == "search").unwrap();
    let detail = &search_status.detail;
    assert!(
        detail.contains("the desktop's index (Tracker) holds") && detail.contains(&docs_shown),
        "{search_status:?}"
    );
    assert!(
        found.contains(&format!("{docs_shown} from the desktop's index (Tracker)")),
        "{found}"
    );
    assert!(
        found.contains("Budget 2026.txt:2: groceries budget 120"),
        "{found}"
    );
    assert!(found.contains("plan.md:2: Groceries on friday"), "{found}");
    assert!(
        found.contains("groceries-list.txt:1: more groceries"),
        "walked: {found}"
    );
    assert!(
        !found.contains("groceries.tmp"),
        "the index does not hold it: {found}"
    );

    // By name, a part and a glob; the glob is the index's regular expression.
    let found = search(json!({"query": "budget"})).await;
    assert!(
        found.starts_with(&text(&docs.join("Budget 2026.txt"))),
        "{found}"
    );
    let found = search(json!({"query": "*.MD"})).await;
    assert!(found.starts_with(&text(&docs.join("plan.md"))), "{found}");
    assert!(found.contains("from the desktop's index"), "{found}");

    // A pattern only a full read can match, and `index: false`, walk everything.
    let found = search(json!({"content": "groc.ries"})).await;
    assert!(found.contains("needs every file read"), "{found}");
    assert!(found.contains("groceries.tmp:1:"), "{found}");
    let found = search(json!({"query": "groceries", "index": false})).await;
    assert!(found.contains("groceries.tmp"), "{found}");
    assert!(!found.contains("desktop's index"), "{found}");
}
