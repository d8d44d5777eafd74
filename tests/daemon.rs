//! `osprey daemon` started by a test: killed if the test ends early, its stdout lines readable.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a test waits for the daemon to say something.
pub const DAEMON_DEADLINE: Duration = Duration::from_secs(60);

/// The daemon, killed if the test ends early.
pub struct Daemon(pub Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `<osprey> --data-dir <data> daemon` (the CLI's tests pass `CARGO_BIN_EXE_osprey`, other
/// suites [`crate::cli_binary`]) without the caller's data dir or store settings.
pub fn start_daemon(osprey: &Path, data: &Path) -> (Daemon, mpsc::Receiver<String>) {
    let mut child = Command::new(osprey)
        .arg("--data-dir")
        .arg(data)
        .arg("daemon")
        .env_remove("OSPREY_DATA_DIR")
        .env_remove("OSPREY_STORE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    (Daemon(child), received)
}

pub fn wait_for_line(lines: &mpsc::Receiver<String>, prefix: &str) {
    let deadline = Instant::now() + DAEMON_DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no `{prefix}` line: {e}"));
        if line.starts_with(prefix) {
            return;
        }
    }
}
