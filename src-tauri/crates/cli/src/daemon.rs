//! `osprey daemon`: the long-running Osprey without a window, for servers, headless machines and
//! tests. It starts the installed apps under the supervisor, the reminder scheduler (an app that
//! provides `schedule` takes over while it runs) and the configured MCP servers, and serves the
//! control socket, so `osprey app launch | stop` from another terminal reach its supervisor. It
//! stops everything on SIGTERM or Ctrl-C. Calls that need approval are denied: nobody is there
//! to ask. One Osprey runs the apps of a data folder: a folder another Osprey holds is refused
//! before any app starts.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// The line printed once the daemon accepts requests (scripts and tests wait for it).
pub const READY: &str = "osprey daemon: ready";

pub async fn run(data_dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    use tokio::signal::unix::{SignalKind, signal};
    // Handlers first: a SIGTERM right after the ready line must still stop the apps cleanly.
    let mut terminate = signal(SignalKind::terminate()).context("installing a SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing a SIGINT handler")?;
    let core = crate::open(data_dir, None, None)?;
    let services = core.start(osprey_core::Start::all("osprey daemon")).await?;
    println!("{READY} on {}", core.data_dir().display());
    std::io::stdout().flush()?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
    eprintln!("osprey daemon: stopping the apps");
    services.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
