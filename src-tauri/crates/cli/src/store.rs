//! `osprey store serve`: runs the app store server (osprey-store) until Ctrl-C or SIGTERM. It
//! prints the address it listens on first, so scripts and tests can bind port 0 and read it.
//! Publishing, featuring and revoking need the admin token from $OSPREY_STORE_ADMIN_TOKEN; without
//! one they are refused and the store only serves its catalog.
//!
//! `osprey store publish FILE.napp`, `osprey store publish-skill DIR|FILE.tar.gz`,
//! `osprey store revoke ID --reason ...` (`--skill` for a skill) and `osprey store add-person
//! NAME`: what an app or skill author or a store operator sends to a store, with the admin token
//! from $OSPREY_STORE_ADMIN_TOKEN or one line on stdin. The store re-signs what it publishes with
//! its own key; every publish and revocation also goes out on its event stream.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use osprey_store::{Store, StoreConfig};

const ADMIN_TOKEN_ENV: &str = "OSPREY_STORE_ADMIN_TOKEN";

#[derive(Args, Debug)]
pub struct StoreArgs {
    #[command(subcommand)]
    action: StoreAction,
}

#[derive(Subcommand, Debug)]
enum StoreAction {
    /// Serve the store's API (/api/v1/apps and /api/v1/skills) until interrupted.
    Serve {
        /// The address to listen on (port 0 picks a free port; the chosen one is printed).
        #[arg(long, default_value = "127.0.0.1:8787")]
        addr: String,
        /// Where the store keeps store.db, blobs/ and its signing key (default: <data>/store).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Publish a .napp to a store (it is checked as an install would, then signed by the store).
    Publish {
        /// The package (`osprey napp pack` makes one; it needs a SKILL.md).
        file: PathBuf,
        /// The store's URL (default: the `store.url` setting or $OSPREY_STORE_URL).
        #[arg(long)]
        store: Option<String>,
        /// List it among the featured apps.
        #[arg(long)]
        featured: bool,
        /// The category to list it in (`productivity`, `developer`, ...; a-z, 0-9, -).
        #[arg(long)]
        category: Option<String>,
        /// Who publishes it, as the store shows it.
        #[arg(long)]
        publisher: Option<String>,
    },
    /// Publish a skill (an Agent Skills folder with a SKILL.md, or its .tar.gz) to a store: it is
    /// checked as an install would check it, packed again and signed by the store.
    PublishSkill {
        /// The skill's folder (its name is the SKILL.md's `name`), or a .tar.gz of it.
        path: PathBuf,
        #[arg(long)]
        store: Option<String>,
        #[arg(long)]
        featured: bool,
        #[arg(long)]
        category: Option<String>,
        #[arg(long)]
        publisher: Option<String>,
        /// The version, when the SKILL.md's `metadata` has no `version`.
        #[arg(long)]
        version: Option<String>,
    },
    /// Revoke an app (or with --skill a skill) on a store: installs that follow the store's
    /// events stop and quarantine it at once, the others at their next hourly sweep.
    Revoke {
        /// The app's id, or the skill's name with --skill.
        id: String,
        /// Revoke the store skill of that name instead of an app.
        #[arg(long)]
        skill: bool,
        /// Why; installs show it.
        #[arg(long)]
        reason: String,
        /// Only this version (default: every version).
        #[arg(long)]
        version: Option<String>,
        #[arg(long)]
        store: Option<String>,
    },
    /// Issue a person's token (printed once): given to their Osprey installs with
    /// `osprey config set store.token -`, it ties their event streams to them.
    AddPerson {
        name: String,
        #[arg(long)]
        store: Option<String>,
    },
}

pub async fn run(data_dir: Option<PathBuf>, args: StoreArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        StoreAction::Serve { addr, dir } => serve(data_dir, &addr, dir).await,
        StoreAction::Publish {
            file,
            store,
            featured,
            category,
            publisher,
        } => {
            let client = client(data_dir, store)?;
            let package =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let listing = osprey_apps::store_client::Listing {
                featured,
                category,
                publisher,
            };
            let entry = client
                .publish_listed(package, &admin_token()?, &listing)
                .await?;
            println!("{}", serde_json::to_string_pretty(&entry)?);
            Ok(ExitCode::SUCCESS)
        }
        StoreAction::PublishSkill {
            path,
            store,
            featured,
            category,
            publisher,
            version,
        } => {
            let client = client(data_dir, store)?;
            let archive = if path.is_dir() {
                osprey_apps::skill_package::pack_skill(&path)
                    .with_context(|| format!("packing {}", path.display()))?
                    .0
            } else {
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?
            };
            let listing = osprey_apps::store_client::Listing {
                featured,
                category,
                publisher,
            };
            let entry = client
                .publish_skill(archive, &admin_token()?, &listing, version.as_deref())
                .await?;
            println!("{}", serde_json::to_string_pretty(&entry)?);
            Ok(ExitCode::SUCCESS)
        }
        StoreAction::Revoke {
            id,
            skill,
            reason,
            version,
            store,
        } => {
            let client = client(data_dir, store)?;
            let token = admin_token()?;
            if skill {
                client
                    .revoke_skill(&id, version.as_deref(), &reason, &token)
                    .await?;
            } else {
                client
                    .revoke(&id, version.as_deref(), &reason, &token)
                    .await?;
            }
            println!(
                "revoked {id}; installs that follow the store's events act on it at once, the \
                 others at their next revocation sweep"
            );
            Ok(ExitCode::SUCCESS)
        }
        StoreAction::AddPerson { name, store } => {
            let client = client(data_dir, store)?;
            let person = client.add_person(&name, &admin_token()?).await?;
            println!("{}", person["token"].as_str().unwrap_or_default());
            eprintln!(
                "osprey: the token of {name} is shown this once; on each of their computers run \
                 `osprey config set store.token -` and paste it"
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn client(
    data_dir: Option<PathBuf>,
    store: Option<String>,
) -> anyhow::Result<osprey_apps::store_client::StoreClient> {
    // `--store`, else $OSPREY_STORE_URL, else the `store.url` setting.
    let url = match store.filter(|url| !url.trim().is_empty()) {
        Some(url) => Some(url),
        None => crate::open(data_dir, None, None)?.store_url(),
    };
    let url = url.ok_or_else(|| {
        anyhow::anyhow!(
            "no store given: pass --store URL, set OSPREY_STORE_URL, or run \
             `osprey config set store.url URL`"
        )
    })?;
    Ok(osprey_apps::store_client::StoreClient::new(url))
}

/// The admin token: $OSPREY_STORE_ADMIN_TOKEN, else one line on stdin (never an argument, so it
/// stays out of shell history and `ps`).
fn admin_token() -> anyhow::Result<String> {
    if let Ok(token) = std::env::var(ADMIN_TOKEN_ENV)
        && !token.trim().is_empty()
    {
        return Ok(token.trim().to_string());
    }
    use std::io::{BufRead, IsTerminal};
    if std::io::stdin().is_terminal() {
        eprint!("store admin token: ");
        let _ = std::io::stderr().flush();
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let token = line.trim().to_string();
    if token.is_empty() {
        anyhow::bail!("no admin token: set {ADMIN_TOKEN_ENV} or give it on stdin");
    }
    Ok(token)
}

async fn serve(
    data_dir: Option<PathBuf>,
    addr: &str,
    dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let dir =
        dir.unwrap_or_else(|| osprey_core::resolve_data_dir(data_dir.as_deref()).join("store"));
    let admin_token = std::env::var(ADMIN_TOKEN_ENV).unwrap_or_default();
    let store = Store::open(StoreConfig {
        data_dir: dir.clone(),
        admin_token: admin_token.clone(),
    })
    .map_err(|e| anyhow::anyhow!("opening the store in {}: {e}", dir.display()))?;
    // Listen for SIGTERM and Ctrl-C before announcing the address: whoever reads the address
    // may signal at once, and an unhandled SIGTERM would kill the process uncleanly.
    let shutdown = shutdown_signal()?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let local = listener
        .local_addr()
        .context("reading the listening address")?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "osprey store: listening on http://{local}")?;
        writeln!(out, "osprey store: data in {}", dir.display())?;
        if admin_token.is_empty() {
            writeln!(
                out,
                "osprey store: publishing is disabled (set {ADMIN_TOKEN_ENV} to enable it)"
            )?;
        }
        out.flush()?;
    }
    tokio::select! {
        result = store.serve(listener) => {
            result.context("serving the store")?;
        }
        () = shutdown => {
            eprintln!("osprey store: shutting down");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C, or SIGTERM on Unix. The handlers are installed when this is called, so signals that
/// arrive before the returned future is first polled are not lost.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let mut interrupt =
            signal(SignalKind::interrupt()).context("installing the Ctrl-C handler")?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = interrupt.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
