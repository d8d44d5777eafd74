//! Playwright as the baseline of the browser's figures: `peer.mjs` (playwright-core driving the
//! system Chromium) one step per stdin line, one answer per stdout line. Shared by osprey-browser's
//! snapshot bench and the desktop's `examples/native_browser.rs` (each includes this file).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Playwright, one step per line.
pub struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    /// Starts `peer.mjs` from `dir` (this folder, with its `node_modules`) on `chromium`, at
    /// `url`.
    pub fn start(dir: &Path, chromium: &Path, url: &str) -> Result<Peer, String> {
        for module in [
            "playwright-core",
            "@anthropic-ai/tokenizer",
            "gpt-tokenizer",
        ] {
            if !dir.join("node_modules").join(module).exists() {
                return Err(format!(
                    "{module} is not installed: run `npm ci --prefix {}`",
                    dir.display()
                ));
            }
        }
        let mut child = Command::new("node")
            .arg(dir.join("peer.mjs"))
            .arg(chromium)
            .arg(url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("node did not start: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut ready = String::new();
        stdout.read_line(&mut ready).map_err(|e| e.to_string())?;
        if ready.trim() != "ready" {
            return Err(format!("the peer said {ready:?}"));
        }
        Ok(Peer {
            child,
            stdin,
            stdout,
        })
    }

    pub fn ask(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").expect("peer stdin");
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).expect("peer stdout");
        assert!(!answer.starts_with("error"), "playwright: {answer}");
        answer
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
