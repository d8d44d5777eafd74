//! `osprey mcp serve` driven by the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`
//! from npm), the client library most MCP hosts are built on: `tests/mcp-sdk/client.mjs` spawns
//! the server over stdio, initializes, lists the tools (titles, annotations, schemas without
//! top-level combinators), reads a file and checks the -32602 errors. This test installs the
//! client's locked packages (`npm ci`) when they are missing and runs it; it is skipped, saying
//! why, only when Node.js or npm is not installed.

use std::path::PathBuf;
use std::process::Command;

fn client_dir() -> PathBuf {
    osprey_tests::workspace_root().join("tests/mcp-sdk")
}

fn found(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

#[test]
fn the_official_typescript_sdk_lists_and_calls_osprey_tools() {
    if !found("node") || !found("npm") {
        eprintln!("skipped: Node.js and npm are needed to run the MCP TypeScript SDK client");
        return;
    }
    let dir = client_dir();
    if !dir
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .is_file()
    {
        let installed = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .expect("npm runs");
        assert!(
            installed.status.success(),
            "npm ci in {} failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&installed.stderr)
        );
    }
    let run = Command::new("node")
        .arg("client.mjs")
        .arg(env!("CARGO_BIN_EXE_osprey"))
        .current_dir(&dir)
        .env_remove("OSPREY_DATA_DIR")
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("mcp-sdk: ok"), "{stdout}\n{stderr}");
}
