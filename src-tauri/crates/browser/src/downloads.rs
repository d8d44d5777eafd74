//! Where the browser profiles save downloads: the folder the person named in the `web.downloads`
//! setting, shared by every profile and changed live. Without one, downloads are refused. A
//! downloaded file is never opened or run: it is saved under its own file name (made safe, never
//! replacing a file already there), and its execute bits are cleared once it is complete.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The download folder, or none. Cheap to clone; clones share the folder.
#[derive(Clone, Debug, Default)]
pub struct DownloadFolder(Arc<RwLock<Option<PathBuf>>>);

impl DownloadFolder {
    pub fn new(folder: Option<PathBuf>) -> DownloadFolder {
        DownloadFolder(Arc::new(RwLock::new(folder)))
    }

    pub fn get(&self) -> Option<PathBuf> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A new folder (or none) for every profile from their next download on.
    pub fn set(&self, folder: Option<PathBuf>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = folder;
    }

    /// Where a download the page calls `suggested` is saved: the folder (created when missing)
    /// joined with the name's last component, without separators or a leading dot, and with
    /// ` (1)`, ` (2)`, ... before the extension when that name is taken. None when downloads are
    /// off or the folder cannot be made.
    pub fn destination(&self, suggested: &str) -> Option<PathBuf> {
        let folder = self.get()?;
        std::fs::create_dir_all(&folder).ok()?;
        let name = safe_name(suggested);
        let (stem, extension) = match name.rsplit_once('.') {
            Some((stem, extension)) if !stem.is_empty() => {
                (stem.to_string(), format!(".{extension}"))
            }
            _ => (name.clone(), String::new()),
        };
        (0..1000)
            .map(|n| match n {
                0 => folder.join(&name),
                n => folder.join(format!("{stem} ({n}){extension}")),
            })
            .find(|path| std::fs::symlink_metadata(path).is_err())
    }
}

/// The file name a download is saved under: the last path component of `suggested`, with control
/// characters and leading dots removed, `download` when nothing is left.
fn safe_name(suggested: &str) -> String {
    let last = suggested.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last
        .chars()
        .filter(|c| !c.is_control())
        .collect::<String>()
        .trim()
        .trim_start_matches('.')
        .to_string();
    if cleaned.is_empty() {
        "download".into()
    } else {
        cleaned
    }
}

/// Clears a finished download's execute bits, so nothing saved from the web runs by a click.
pub fn make_inert(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let metadata = std::fs::symlink_metadata(path)?;
        if metadata.is_file() {
            let mode = metadata.permissions().mode() & !0o111;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_safe_and_never_replace_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let folder = DownloadFolder::default();
        assert_eq!(folder.destination("x.bin"), None, "off by default");
        folder.set(Some(dir.path().join("downloads")));
        let first = folder.destination("../../etc/report.pdf").unwrap();
        assert_eq!(first, dir.path().join("downloads/report.pdf"));
        std::fs::write(&first, "1").unwrap();
        assert_eq!(
            folder.destination("report.pdf").unwrap(),
            dir.path().join("downloads/report (1).pdf")
        );
        assert_eq!(
            folder.destination(".bashrc").unwrap(),
            dir.path().join("downloads/bashrc")
        );
        assert_eq!(
            folder.destination("a\\b\n").unwrap(),
            dir.path().join("downloads/b")
        );
        assert_eq!(
            folder.destination("").unwrap(),
            dir.path().join("downloads/download")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_finished_download_cannot_be_run() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tool.sh");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        make_inert(&file).unwrap();
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o644
        );
    }
}
