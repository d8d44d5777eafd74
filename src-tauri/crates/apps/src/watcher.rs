//! The apps directory watcher: a new app directory is launched, a changed binary or manifest
//! restarts the app (debounced, so a build writing the binary in pieces restarts it once), and a
//! removed directory stops it. Restarts the supervisor or an install just did are not repeated
//! (see [`Supervisor::reload`]). Only an app's own top-level files count: its data/, logs/,
//! socket and pid file change all the time and are ignored, as are dot-directories (staging,
//! pending updates).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::napp::{BINARY_NAMES, MANIFEST};
use crate::supervisor::Supervisor;
use crate::{Error, Result};

/// Keeps the watch alive; dropping it (or cancelling the token) ends it.
pub struct AppWatcher {
    _watcher: RecommendedWatcher,
}

impl std::fmt::Debug for AppWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppWatcher").finish_non_exhaustive()
    }
}

/// Starts watching `apps_dir`, acting through `supervisor` once an app's changes have been quiet
/// for `debounce`.
pub fn watch(
    apps_dir: &Path,
    supervisor: Supervisor,
    debounce: Duration,
    cancel: CancellationToken,
) -> Result<AppWatcher> {
    let apps_dir = std::fs::canonicalize(apps_dir)
        .map_err(|e| Error::io(format!("resolve {}", apps_dir.display()), e))?;
    let (changes, receiver) = mpsc::unbounded_channel();
    let root = apps_dir.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else {
            return;
        };
        if matches!(
            event.kind,
            EventKind::Access(_) | EventKind::Any | EventKind::Other
        ) {
            return;
        }
        for path in &event.paths {
            if let Some(id) = app_of(&root, path) {
                let _ = changes.send(id);
            }
        }
    })
    .map_err(|e| Error::io("start the file watcher", std::io::Error::other(e)))?;
    watcher
        .watch(&apps_dir, RecursiveMode::Recursive)
        .map_err(|e| {
            Error::io(
                format!("watch {}", apps_dir.display()),
                std::io::Error::other(e),
            )
        })?;
    tokio::spawn(run(apps_dir, supervisor, debounce, receiver, cancel));
    Ok(AppWatcher { _watcher: watcher })
}

/// The app a changed path belongs to, when the change is one that matters: the app directory
/// itself, or its manifest or binary.
fn app_of(root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    let parts: Vec<&str> = relative
        .components()
        .map(|c| match c {
            Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let id = match parts.as_slice() {
        [id] => id,
        [id, file] if *file == MANIFEST || BINARY_NAMES.contains(file) => id,
        _ => return None,
    };
    (!id.starts_with('.')).then(|| (*id).to_owned())
}

async fn run(
    apps_dir: PathBuf,
    supervisor: Supervisor,
    debounce: Duration,
    mut changes: mpsc::UnboundedReceiver<String>,
    cancel: CancellationToken,
) {
    let mut due: HashMap<String, Instant> = HashMap::new();
    loop {
        let next = due.values().min().copied();
        let timer = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = cancel.cancelled() => break,
            change = changes.recv() => match change {
                Some(id) => {
                    due.insert(id, Instant::now() + debounce);
                }
                None => break,
            },
            () = timer => {
                let now = Instant::now();
                let ready: Vec<String> =
                    due.iter().filter(|(_, at)| **at <= now).map(|(id, _)| id.clone()).collect();
                for id in ready {
                    due.remove(&id);
                    act(&apps_dir, &supervisor, &id, debounce).await;
                }
            }
        }
    }
}

async fn act(apps_dir: &Path, supervisor: &Supervisor, id: &str, debounce: Duration) {
    let dir = apps_dir.join(id);
    if !dir.join(MANIFEST).exists() {
        if std::fs::symlink_metadata(&dir).is_err() {
            let _ = supervisor.stop(id).await;
        }
        return;
    }
    // The supervisor's own restarts write no watched files, but an install's swap does just
    // before it asks for a restart: twice the debounce covers that.
    match supervisor.reload(id, Some(debounce * 2)).await {
        Ok(outcome) => tracing::info!(app = id, ?outcome, "reloaded after a file change"),
        Err(error) => tracing::warn!(app = id, "reload after a file change failed: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_top_level_app_files_count() {
        let root = Path::new("/data/apps");
        let app = |p: &str| app_of(root, &root.join(p));
        assert_eq!(app("units"), Some("units".into()));
        assert_eq!(app("units/binary"), Some("units".into()));
        assert_eq!(app("units/app"), Some("units".into()));
        assert_eq!(app("units/manifest.json"), Some("units".into()));
        assert_eq!(app("units/logs/stderr.log"), None);
        assert_eq!(app("units/data/state"), None);
        assert_eq!(app("units/app.sock"), None);
        assert_eq!(app("units/.pid"), None);
        assert_eq!(app(".staging-abc/binary"), None);
        assert_eq!(app(".pending/units/manifest.json"), None);
        assert_eq!(app_of(root, Path::new("/elsewhere/units")), None);
    }
}
