//! Desktop entries in a private data dir: listed (hidden and NoDisplay ones left out, a user's
//! entry overriding the system's), launched with files in place of %F, and quit politely or,
//! when the app ignores SIGTERM, by force after the timeout.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use osprey_platform::{OsConfig, OsTool};
use serde_json::json;

use crate::harness::{call, ok_text, wait_until};

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn entry(dir: &Path, id: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join(format!("{id}.desktop")),
        format!("[Desktop Entry]\nType=Application\n{body}\n"),
    )
    .unwrap();
}

fn pid_of(message: &str) -> u32 {
    let rest = message.split("(pid ").nth(1).expect("a pid in the answer");
    rest.split(')').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn desktop_entries_are_listed_launched_with_files_and_quit() {
    let temp = tempfile::tempdir().unwrap();
    let bin = temp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let record = temp.path().join("argv.txt");
    script(
        &bin.join("recorder"),
        &format!(
            "for a in \"$@\"; do echo \"$a\"; done > {}.tmp; mv {0}.tmp {0}",
            record.display()
        ),
    );
    script(&bin.join("polite"), "exec sleep 300");
    let armed = temp.path().join("armed");
    script(
        &bin.join("stubborn"),
        &format!(
            "trap '' TERM\ntouch {}\nwhile :; do sleep 0.05; done",
            armed.display()
        ),
    );
    let user = temp.path().join("user/applications");
    let system = temp.path().join("system/applications");
    entry(
        &system,
        "org.osprey.Recorder",
        &format!(
            "Name=Osprey Recorder\nExec={} --open %F\nIcon=recorder\nCategories=Utility;Development;",
            bin.join("recorder").display()
        ),
    );
    entry(
        &system,
        "org.osprey.Polite",
        &format!("Name=Polite\nExec={}", bin.join("polite").display()),
    );
    entry(
        &system,
        "org.osprey.Stubborn",
        &format!("Name=Stubborn\nExec={}", bin.join("stubborn").display()),
    );
    entry(
        &system,
        "org.osprey.Helper",
        "Name=Helper\nExec=true\nNoDisplay=true",
    );
    entry(&system, "org.osprey.Removed", "Name=Removed\nExec=true");
    entry(
        &user,
        "org.osprey.Removed",
        "Name=Removed\nExec=true\nHidden=true",
    );
    entry(
        &system,
        "org.osprey.Console",
        "Name=Console Thing\nExec=top\nTerminal=true",
    );

    let tool = OsTool::new(OsConfig {
        data_dirs: Some(vec![temp.path().join("user"), temp.path().join("system")]),
        quit_timeout: Duration::from_millis(800),
        ..OsConfig::default()
    });
    let list = ok_text(&call(&tool, json!({"resource": "app", "action": "list"})).await);
    assert_eq!(
        list,
        "org.osprey.Console \"Console Thing\" []\n\
         org.osprey.Recorder \"Osprey Recorder\" [Utility,Development]\n\
         org.osprey.Polite \"Polite\" []\n\
         org.osprey.Stubborn \"Stubborn\" []"
    );

    let started = ok_text(
        &call(
            &tool,
            json!({"resource": "app", "action": "launch", "id": "osprey recorder",
                   "files": ["/tmp/a file.txt", "https://example.org/?q=1"]}),
        )
        .await,
    );
    assert!(
        started.starts_with("Started org.osprey.Recorder (pid "),
        "{started}"
    );
    tokio::task::block_in_place(|| {
        wait_until("the recorder's argv", Duration::from_secs(20), || {
            record.exists()
        })
    });
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        "--open\n/tmp/a file.txt\nhttps://example.org/?q=1\n"
    );

    let started = ok_text(
        &call(
            &tool,
            json!({"resource": "app", "action": "launch", "id": "org.osprey.Polite.desktop"}),
        )
        .await,
    );
    let polite = pid_of(&started);
    let quit = ok_text(
        &call(
            &tool,
            json!({"resource": "app", "action": "quit", "pid": polite}),
        )
        .await,
    );
    assert_eq!(quit, format!("Process {polite} quit."));

    let started = ok_text(
        &call(
            &tool,
            json!({"resource": "app", "action": "launch", "id": "Stubborn"}),
        )
        .await,
    );
    let stubborn = pid_of(&started);
    tokio::task::block_in_place(|| {
        wait_until(
            "the stubborn app ignoring SIGTERM",
            Duration::from_secs(20),
            || armed.exists(),
        )
    });
    let result = call(
        &tool,
        json!({"resource": "app", "action": "quit", "pid": stubborn, "force": false}),
    )
    .await;
    assert_eq!(
        result.code.map(|c| c.as_str()),
        Some("timeout"),
        "{result:?}"
    );
    let quit = ok_text(
        &call(
            &tool,
            json!({"resource": "app", "action": "quit", "pid": stubborn}),
        )
        .await,
    );
    assert!(quit.contains("it was killed"), "{quit}");

    let result = call(
        &tool,
        json!({"resource": "app", "action": "launch", "id": "Console Thing"}),
    )
    .await;
    assert_eq!(
        result.code.map(|c| c.as_str()),
        Some("platform_not_supported"),
        "{result:?}"
    );
    let result = call(
        &tool,
        json!({"resource": "app", "action": "launch", "id": "osprey"}),
    )
    .await;
    assert!(result.is_error && result.text_content().contains("several applications"));
    let result = call(
        &tool,
        json!({"resource": "app", "action": "quit", "pid": 1}),
    )
    .await;
    assert!(
        result.is_error && result.text_content().contains("refusing"),
        "{result:?}"
    );
}
