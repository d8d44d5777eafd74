//! `osprey store serve` started by a test: the real store server as its own process on a loopback
//! port it picked (read from its first line), killed when dropped. Suites outside osprey-cli pass
//! [`crate::cli_binary`], the CLI's own tests `CARGO_BIN_EXE_osprey`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the store may take to print its address.
pub const STORE_DEADLINE: Duration = Duration::from_secs(30);

/// A running `osprey store serve`.
pub struct StoreProcess {
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its folder: store.db, blobs/, skills/ and signing-key.json.
    pub dir: PathBuf,
}

impl StoreProcess {
    /// Serves a store kept in `<root>/store` (its Osprey data folder `<root>/store-data`) with
    /// the admin token `token`.
    pub fn start(osprey: &Path, root: &Path, token: &str) -> StoreProcess {
        let dir = root.join("store");
        let mut child = Command::new(osprey)
            .args(["store", "serve", "--addr", "127.0.0.1:0", "--dir"])
            .arg(&dir)
            .arg("--data-dir")
            .arg(root.join("store-data"))
            .env("OSPREY_STORE_ADMIN_TOKEN", token)
            .env_remove("OSPREY_DATA_DIR")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("osprey store serve starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines, received) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + STORE_DEADLINE;
        let url = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match received.recv_timeout(left) {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("osprey store: listening on ") {
                        break url.trim().to_owned();
                    }
                }
                Err(error) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("the store did not print its address in time: {error}");
                }
            }
        };
        StoreProcess { child, url, dir }
    }

    /// The store's secret key file (JSON), which it signs what it publishes with.
    pub fn secret_key_json(&self) -> String {
        std::fs::read_to_string(self.dir.join("signing-key.json")).unwrap()
    }
}

impl Drop for StoreProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
