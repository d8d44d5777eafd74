//! Installed apps on disk: install (extract, verify, validate, place), update (swap in place
//! when no permission is added, otherwise stage in `.pending/` until the person approves),
//! uninstall, quarantine, sideload and unsideload, and the listing the UI and CLI show.
//!
//! The running process is not this module's business: after an update or quarantine the caller
//! (the supervisor) restarts or stops the app.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::manifest::Manifest;
use crate::napp::{self, Limits, MANIFEST, StagedPackage};
use crate::signing::PublicKey;
use crate::trust::{Revocation, RevokedKind, Trust};
use crate::{Error, Result};

/// Where updates that add permissions wait for approval: `<apps>/.pending/<id>/`.
pub const PENDING_DIR: &str = ".pending";
/// Marks a quarantined app: it keeps its data/ and logs/, loses its binary and is not launched.
pub const QUARANTINE_MARKER: &str = ".quarantined";
const KEPT_DIRS: [&str; 2] = [crate::layout::DATA_DIR, crate::layout::LOGS_DIR];

/// What an install did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum InstallOutcome {
    /// A new app.
    Installed { id: String, version: String },
    /// Replaced an installed version (no new permissions); data/ and logs/ kept. Restart it.
    Updated {
        id: String,
        from_version: String,
        version: String,
    },
    /// The update asks for more permissions: staged until approved; the old version stays.
    PendingApproval {
        id: String,
        version: String,
        new_permissions: Vec<String>,
    },
}

/// One installed app, as listed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InstalledApp {
    pub manifest: Manifest,
    pub path: PathBuf,
    /// A symlink to a project directory: signatures were never checked.
    pub sideloaded: bool,
    pub quarantined: Option<String>,
    /// The permissions a staged update would add.
    pub pending_permissions: Option<Vec<String>>,
}

/// Told of each app removed (uninstalled or unsideloaded), with the manifest it had: the core
/// deletes what it kept for the app outside its folder (its accounts' tokens).
pub type RemovalHook = std::sync::Arc<dyn Fn(&Manifest) + Send + Sync>;

/// The apps directory's installed apps.
#[derive(Clone)]
pub struct Installer {
    apps_dir: PathBuf,
    limits: Limits,
    on_removed: Option<RemovalHook>,
}

impl std::fmt::Debug for Installer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installer")
            .field("apps_dir", &self.apps_dir)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Installer {
    pub fn new(apps_dir: impl Into<PathBuf>) -> Installer {
        Installer {
            apps_dir: apps_dir.into(),
            limits: Limits::default(),
            on_removed: None,
        }
    }

    /// Calls `hook` after each app this installer (or a clone of it) removes.
    pub fn on_removed(mut self, hook: RemovalHook) -> Installer {
        self.on_removed = Some(hook);
        self
    }

    fn removed(&self, manifest: Option<Manifest>) {
        if let (Some(hook), Some(manifest)) = (&self.on_removed, manifest) {
            hook(&manifest);
        }
    }

    pub fn with_limits(mut self, limits: Limits) -> Installer {
        self.limits = limits;
        self
    }

    pub fn apps_dir(&self) -> &Path {
        &self.apps_dir
    }

    /// Installs or updates from a `.napp` stream signed by `key`. Nothing is placed unless the
    /// package passes every check; a refused package leaves nothing behind.
    pub fn install(&self, archive: impl Read, key: &PublicKey) -> Result<InstallOutcome> {
        let staged = napp::extract(archive, &self.apps_dir, &self.limits, true)?;
        staged.verify(key)?;
        self.place(staged)
    }

    /// Installs or updates from a store package: extracted once, verified against the store's
    /// current key (cached, refreshed once when the package names another key), and checked
    /// against the revocation list before anything is placed. A revoked app is refused, and so
    /// is any store package when no recent enough list can be had (fail closed). Every front end
    /// installs through here (the CLI, the `app` tool and the desktop, via the core).
    pub async fn install_from_store(
        &self,
        archive: impl Read,
        trust: &Trust,
    ) -> Result<InstallOutcome> {
        let staged = napp::extract(archive, &self.apps_dir, &self.limits, true)?;
        trust.verify(&staged).await?;
        let manifest = staged.manifest();
        trust.check_launch(&manifest.id, &manifest.version).await?;
        self.place(staged)
    }

    /// Quarantines every installed (not sideloaded, not already quarantined) app the store's
    /// revocation list names; returns their ids. Stop them first, or let the supervisor notice.
    pub async fn quarantine_revoked(&self, trust: &Trust) -> Result<Vec<String>> {
        let revoked = revoked_among(&trust.revocations().await?, &self.list());
        for (id, reason) in &revoked {
            self.quarantine(id, &format!("revoked: {reason}"))?;
        }
        Ok(revoked.into_iter().map(|(id, _)| id).collect())
    }

    /// The installed store apps (not sideloaded, not quarantined) the list revokes now, with the
    /// store's reason, fetched fresh when `fresh`. Nothing is changed: the caller stops each
    /// before quarantining it.
    pub async fn revoked(&self, trust: &Trust, fresh: bool) -> Result<Vec<(String, String)>> {
        let revocations = trust.revocations_from(fresh).await?;
        Ok(self.revoked_in(&revocations))
    }

    /// [`Installer::revoked`] against a list the caller already has.
    pub fn revoked_in(&self, revocations: &[Revocation]) -> Vec<(String, String)> {
        revoked_among(revocations, &self.list())
    }

    /// Places a verified package: a new app, an in-place update, or an update staged for
    /// approval.
    fn place(&self, staged: StagedPackage) -> Result<InstallOutcome> {
        let id = staged.manifest().id.clone();
        let version = staged.manifest().version.clone();
        let destination = self.apps_dir.join(&id);
        let Ok(meta) = std::fs::symlink_metadata(&destination) else {
            staged.commit()?;
            return Ok(InstallOutcome::Installed { id, version });
        };
        if !meta.is_dir() {
            return Err(Error::AlreadyInstalled(format!(
                "{id} is sideloaded or its path is occupied; unsideload it first"
            )));
        }
        let installed = read_manifest(&destination)?;
        let new_permissions: Vec<String> = staged
            .manifest()
            .permissions
            .iter()
            .filter(|p| !installed.permissions.contains(p))
            .cloned()
            .collect();
        if new_permissions.is_empty() {
            self.swap_in(staged_dir(staged)?, &destination)?;
            return Ok(InstallOutcome::Updated {
                id,
                from_version: installed.version,
                version,
            });
        }
        let pending = self.pending_path(&id);
        std::fs::create_dir_all(self.apps_dir.join(PENDING_DIR))
            .map_err(|e| Error::io("create .pending", e))?;
        remove_dir(&pending)?;
        staged.commit_to(pending)?;
        Ok(InstallOutcome::PendingApproval {
            id,
            version,
            new_permissions,
        })
    }

    /// Swaps a staged update in, keeping data/ and logs/. Restart the app afterwards.
    pub fn approve_update(&self, id: &str) -> Result<Manifest> {
        let pending = self.pending_path(id);
        if !pending.is_dir() {
            return Err(no_pending(id));
        }
        let manifest = read_manifest(&pending)?;
        self.swap_in(pending, &self.apps_dir.join(id))?;
        Ok(manifest)
    }

    /// Drops a staged update; the installed version stays as it is.
    pub fn reject_update(&self, id: &str) -> Result<()> {
        let pending = self.pending_path(id);
        if !pending.is_dir() {
            return Err(no_pending(id));
        }
        remove_dir(&pending)
    }

    /// Removes the app, its data and logs, and any staged update. A sideloaded app loses only
    /// its link; the project directory is not touched. Stop the app first.
    pub fn uninstall(&self, id: &str) -> Result<()> {
        let path = self.app_path(id)?;
        remove_dir(&self.pending_path(id))?;
        let meta = std::fs::symlink_metadata(&path).map_err(|_| not_installed(id))?;
        let manifest = read_manifest(&path).ok();
        if meta.file_type().is_symlink() {
            std::fs::remove_file(&path)
                .map_err(|e| Error::io(format!("unlink {}", path.display()), e))?;
        } else {
            remove_dir(&path)?;
        }
        self.removed(manifest);
        Ok(())
    }

    /// Quarantines an app (revoked, or misbehaving): its binary is removed, data/ and logs/ are
    /// kept, and the marker (with `reason`) stops it from being launched. Stop it first.
    pub fn quarantine(&self, id: &str, reason: &str) -> Result<()> {
        let path = self.app_path(id)?;
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            return Err(not_installed(id));
        }
        for name in napp::BINARY_NAMES {
            let binary = path.join(name);
            if std::fs::symlink_metadata(&binary).is_ok() {
                std::fs::remove_file(&binary)
                    .map_err(|e| Error::io(format!("remove {}", binary.display()), e))?;
            }
        }
        std::fs::write(path.join(QUARANTINE_MARKER), reason)
            .map_err(|e| Error::io("write the quarantine marker", e))
    }

    /// Links a project directory in as an app, without signatures (for developers). When the
    /// manifest has a `build`, it runs first and its output becomes the project's `binary`. The
    /// manifest and binary are validated; the app is flagged as sideloaded wherever it is listed.
    pub fn sideload(&self, project_dir: &Path) -> Result<Manifest> {
        let project = std::fs::canonicalize(project_dir)
            .map_err(|e| Error::io(format!("resolve {}", project_dir.display()), e))?;
        let manifest = read_manifest(&project)?;
        let link = self.apps_dir.join(&manifest.id);
        if std::fs::symlink_metadata(&link).is_ok() {
            return Err(Error::AlreadyInstalled(manifest.id.clone()));
        }
        if let Some(build) = &manifest.build {
            run_build(&manifest.id, &project, build)?;
        }
        crate::binary::validate_binary(&crate::layout::binary_path(&project), self.limits.binary)?;
        symlink_dir(&project, &link)?;
        Ok(manifest)
    }

    /// Removes a sideload link (never an installed app).
    pub fn unsideload(&self, id: &str) -> Result<()> {
        let path = self.app_path(id)?;
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let manifest = read_manifest(&path).ok();
                std::fs::remove_file(&path)
                    .map_err(|e| Error::io(format!("unlink {}", path.display()), e))?;
                self.removed(manifest);
                Ok(())
            }
            Ok(_) => Err(Error::AlreadyInstalled(format!(
                "{id} is installed, not sideloaded"
            ))),
            Err(_) => Err(not_installed(id)),
        }
    }

    /// Every app in the apps directory, sorted by id. Entries whose manifest cannot be read are
    /// skipped (and logged): one broken app must not hide the others.
    pub fn list(&self) -> Vec<InstalledApp> {
        let Ok(entries) = std::fs::read_dir(&self.apps_dir) else {
            return Vec::new();
        };
        let mut apps: Vec<InstalledApp> = entries
            .flatten()
            .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
            .filter_map(|entry| {
                let path = entry.path();
                let manifest = match read_manifest(&path) {
                    Ok(manifest) => manifest,
                    Err(error) => {
                        tracing::warn!(path = %path.display(), "skipping an app: {error}");
                        return None;
                    }
                };
                let sideloaded = entry.file_type().is_ok_and(|t| t.is_symlink());
                let quarantined = std::fs::read_to_string(path.join(QUARANTINE_MARKER)).ok();
                let pending_permissions =
                    read_manifest(&self.pending_path(&manifest.id))
                        .ok()
                        .map(|pending| {
                            pending
                                .permissions
                                .into_iter()
                                .filter(|p| !manifest.permissions.contains(p))
                                .collect()
                        });
                Some(InstalledApp {
                    manifest,
                    path,
                    sideloaded,
                    quarantined,
                    pending_permissions,
                })
            })
            .collect();
        apps.sort_by(|a, b| a.manifest.id.cmp(&b.manifest.id));
        apps
    }

    fn pending_path(&self, id: &str) -> PathBuf {
        self.apps_dir.join(PENDING_DIR).join(id)
    }

    /// `<apps>/<id>` for a syntactically valid id (never `..` or a path).
    fn app_path(&self, id: &str) -> Result<PathBuf> {
        let valid = !id.is_empty()
            && !id.starts_with('.')
            && id.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
            })
            && !id.contains("..");
        if valid {
            Ok(self.apps_dir.join(id))
        } else {
            Err(not_installed(id))
        }
    }

    /// Replaces `destination`'s contents with `new_dir`'s, moving data/ and logs/ across.
    fn swap_in(&self, new_dir: PathBuf, destination: &Path) -> Result<()> {
        for kept in KEPT_DIRS {
            let old = destination.join(kept);
            let new = new_dir.join(kept);
            if std::fs::symlink_metadata(&old).is_ok_and(|m| m.is_dir())
                && std::fs::symlink_metadata(&new).is_err()
            {
                std::fs::rename(&old, &new)
                    .map_err(|e| Error::io(format!("keep {}", old.display()), e))?;
            }
        }
        let retired = tempfile::Builder::new()
            .prefix(".retired-")
            .tempdir_in(&self.apps_dir)
            .map_err(|e| Error::io("create a directory for the old version", e))?;
        let old_version = retired.path().join("app");
        std::fs::rename(destination, &old_version)
            .map_err(|e| Error::io(format!("move {} aside", destination.display()), e))?;
        if let Err(e) = std::fs::rename(&new_dir, destination) {
            // Put the old version back rather than leave no app at all.
            let _ = std::fs::rename(&old_version, destination);
            return Err(Error::io(
                format!("move the update into {}", destination.display()),
                e,
            ));
        }
        // `retired` drops here and removes the old version.
        Ok(())
    }
}

fn staged_dir(staged: StagedPackage) -> Result<PathBuf> {
    // Keep the staging directory (inside the apps dir, same file system) for the swap.
    let parent = staged
        .path()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let name = format!(".update-{}", staged.manifest().id);
    let target = parent.join(name);
    remove_dir(&target)?;
    staged.commit_to(target)
}

pub(crate) fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join(MANIFEST);
    let bytes =
        std::fs::read(&path).map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    Manifest::parse(&bytes)
}

fn remove_dir(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("remove {}", path.display()), e)),
    }
}

#[cfg(unix)]
fn symlink_dir(target: &Path, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, link)
        .map_err(|e| Error::io(format!("link {}", link.display()), e))
}

#[cfg(windows)]
fn symlink_dir(target: &Path, link: &Path) -> Result<()> {
    std::os::windows::fs::symlink_dir(target, link)
        .map_err(|e| Error::io(format!("link {}", link.display()), e))
}

fn not_installed(id: &str) -> Error {
    Error::NotInstalled(id.to_owned())
}

fn no_pending(id: &str) -> Error {
    Error::NoPendingUpdate(id.to_owned())
}

/// `(id, reason)` of each installed store app `revocations` names (the whole app, or its
/// installed version).
fn revoked_among(revocations: &[Revocation], installed: &[InstalledApp]) -> Vec<(String, String)> {
    installed
        .iter()
        .filter(|app| !app.sideloaded && app.quarantined.is_none())
        .filter_map(|app| {
            let manifest = &app.manifest;
            revocations
                .iter()
                .find(|r| r.covers(RevokedKind::App, &manifest.id, &manifest.version))
                .map(|r| (manifest.id.clone(), r.reason.clone()))
        })
        .collect()
}

/// How much of a failed build's output its error keeps (the end, where compilers say why).
const BUILD_OUTPUT_TAIL: usize = 4_000;

/// Runs a sideloaded project's build step in the project directory, as the person would in a
/// terminal (they asked for this project to be sideloaded), then puts the built executable in
/// place as the project's `binary` (copied, then renamed over the old one).
fn run_build(id: &str, project: &Path, build: &crate::manifest::Build) -> Result<()> {
    let failed = |message: String| Error::BuildFailed {
        id: id.to_owned(),
        message,
    };
    let shown = build.command.join(" ");
    tracing::info!(app = id, command = %shown, "building a sideloaded app");
    let output = std::process::Command::new(&build.command[0])
        .args(&build.command[1..])
        .current_dir(project)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| failed(format!("could not run `{shown}`: {e}")))?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
        if text.trim().is_empty() {
            text = String::from_utf8_lossy(&output.stdout).into_owned();
        }
        let start = text
            .char_indices()
            .rev()
            .nth(BUILD_OUTPUT_TAIL)
            .map_or(0, |(index, _)| index);
        return Err(failed(format!(
            "`{shown}` ended with {}: {}",
            output.status,
            text[start..].trim()
        )));
    }
    let built = project.join(&build.output);
    // The output must be a file inside the project, not a link out of it.
    let real = std::fs::canonicalize(&built).map_err(|e| {
        failed(format!(
            "`{shown}` succeeded but {} is not there ({e}): check `build.output`",
            build.output
        ))
    })?;
    if !real.starts_with(project) || !real.is_file() {
        return Err(failed(format!(
            "{} is not a file inside the project",
            build.output
        )));
    }
    let binary = project.join(napp::BINARY_NAMES[0]);
    if real == binary {
        return Ok(());
    }
    let staged = project.join(".binary.building");
    std::fs::copy(&real, &staged).map_err(|e| Error::io(format!("copy {}", real.display()), e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io("make the built binary executable", e))?;
    }
    std::fs::rename(&staged, &binary)
        .map_err(|e| Error::io(format!("put the build at {}", binary.display()), e))
}
