//! `osprey napp keygen | pack | sign | verify`: the publisher's side of `.napp` packages. Refusals
//! print their stable code and reason (as JSON with `--json`) and exit with 3; other failures
//! exit with 1.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use osprey_apps::{KeyPair, PublicKey, napp};
use serde_json::{Value, json};

/// Exit code for a package or key Osprey refused (same as a refused tool call).
const EXIT_REFUSED: u8 = 3;

#[derive(Args, Debug)]
pub struct NappArgs {
    #[command(subcommand)]
    action: NappAction,
    /// Print one JSON object instead of readable text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum NappAction {
    /// Create an ed25519 signing key: a secret key file (mode 0600) and its public key file.
    Keygen {
        /// The secret key file to create.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The public key file (default: the secret file's name with `.pub.json`).
        #[arg(long, value_name = "FILE")]
        public: Option<PathBuf>,
    },
    /// Pack an app directory (manifest.json, binary or app, SKILL.md, ui/) into a `.napp`.
    Pack {
        dir: PathBuf,
        /// Default: `<id>-<version>.napp` in the current directory.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Sign a `.napp` with a secret key file, adding signatures.json.
    Sign {
        package: PathBuf,
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// Default: sign in place.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Check a `.napp` the way an install does, against a public (or secret) key file.
    Verify {
        package: PathBuf,
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
    },
}

pub fn run(args: NappArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    let outcome = match args.action {
        NappAction::Keygen { out, public } => keygen(&out, public),
        NappAction::Pack { dir, out } => pack(&dir, out),
        NappAction::Sign { package, key, out } => sign(&package, &key, out),
        NappAction::Verify { package, key } => verify(&package, &key),
    };
    match outcome {
        Ok(Ok(report)) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{}", report["message"].as_str().unwrap_or_default());
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok(Err(refusal)) => {
            let report = json!({
                "code": refusal.code(),
                "reason": refusal.reason(),
                "message": refusal.to_string(),
            });
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                eprintln!("osprey: {refusal}");
            }
            Ok(ExitCode::from(EXIT_REFUSED))
        }
        Err(error) => Err(error),
    }
}

/// The outer error is a failure to run (a file that cannot be read); the inner one is Osprey
/// refusing the package or key, reported with its code.
type Outcome = anyhow::Result<Result<Value, osprey_apps::Error>>;

fn keygen(out: &Path, public: Option<PathBuf>) -> Outcome {
    let public = public.unwrap_or_else(|| public_path(out));
    let key = match KeyPair::generate() {
        Ok(key) => key,
        Err(refusal) => return Ok(Err(refusal)),
    };
    write_new(out, key.to_secret_json().as_bytes(), 0o600)?;
    write_new(&public, key.public().to_json().as_bytes(), 0o644)?;
    let key_id = key.public().key_id();
    Ok(Ok(json!({
        "key_id": key_id,
        "secret_key_file": out,
        "public_key_file": public,
        "message": format!(
            "key {key_id}: secret key in {} (keep it private), public key in {}",
            out.display(),
            public.display()
        ),
    })))
}

fn pack(dir: &Path, out: Option<PathBuf>) -> Outcome {
    let out = match out {
        Some(out) => out,
        None => {
            let bytes = std::fs::read(dir.join(napp::MANIFEST))
                .with_context(|| format!("reading {}", dir.join(napp::MANIFEST).display()))?;
            match osprey_apps::Manifest::parse(&bytes) {
                Ok(manifest) => PathBuf::from(format!("{}-{}.napp", manifest.id, manifest.version)),
                Err(refusal) => return Ok(Err(refusal)),
            }
        }
    };
    Ok(napp::pack_to_file(dir, &out).map(|manifest| {
        json!({
            "id": manifest.id,
            "version": manifest.version,
            "package": out,
            "message": format!("packed {} {} into {}", manifest.id, manifest.version, out.display()),
        })
    }))
}

fn sign(package: &Path, key_file: &Path, out: Option<PathBuf>) -> Outcome {
    let text = std::fs::read_to_string(key_file)
        .with_context(|| format!("reading {}", key_file.display()))?;
    let key = match KeyPair::from_secret_json(&text) {
        Ok(key) => key,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let out = out.unwrap_or_else(|| package.to_path_buf());
    let key_id = key.public().key_id();
    Ok(napp::sign_package(package, &key, &out).map(|manifest| {
        json!({
            "id": manifest.id,
            "version": manifest.version,
            "key_id": key_id,
            "package": out,
            "message": format!("signed {} {} with key {key_id}: {}", manifest.id, manifest.version, out.display()),
        })
    }))
}

fn verify(package: &Path, key_file: &Path) -> Outcome {
    let text = std::fs::read_to_string(key_file)
        .with_context(|| format!("reading {}", key_file.display()))?;
    let key = match PublicKey::from_json(&text) {
        Ok(key) => key,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let key_id = key.key_id();
    Ok(napp::verify_package(package, &key).map(|manifest| {
        json!({
            "id": manifest.id,
            "version": manifest.version,
            "key_id": key_id,
            "message": format!("{} {} is signed by key {key_id}", manifest.id, manifest.version),
        })
    }))
}

fn public_path(secret: &Path) -> PathBuf {
    let stem = secret
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "key".into());
    secret.with_file_name(format!("{stem}.pub.json"))
}

/// Creates `path` (never overwriting: a key file replaced by mistake cannot be recovered).
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options
        .open(path)
        .with_context(|| format!("creating {} (it must not exist yet)", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.write_all(b"\n"))
        .with_context(|| format!("writing {}", path.display()))
}
