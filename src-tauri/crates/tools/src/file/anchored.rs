//! Judging the file that is used, not the name that was asked for. A path checked by name and
//! opened afterwards can be redirected in between: a directory swapped for a link into `~/.ssh`
//! or Osprey's data after the check wins the race within a few dozen tries. So on Unix:
//!
//! - A read opens the file first, then asks the kernel where the open file really is
//!   (`/proc/self/fd/N`) and checks that path; the bytes come from the same descriptor.
//! - A write opens the parent directory first, checks where that directory really is (plus the
//!   file's name), and does everything else relative to that descriptor (`openat` with
//!   `O_NOFOLLOW`, `renameat`), so a swapped directory or a link dropped in place of the file
//!   cannot redirect it.
//! - A regular file with more than one link is compared with the protected files by device and
//!   inode, so a hard link to `~/.ssh/id_rsa` or Osprey's database made under another name is
//!   refused too.
//!
//! Where the kernel cannot say where a descriptor points (no `/proc`), the name checks stand
//! alone, as before.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, openat, renameat};
use nix::sys::stat::Mode;
use osprey_types::{ErrorCode, ToolResult};

use crate::security::paths::{PathGuard, secret_paths};

/// Why an anchored open did not give a file.
pub(crate) enum Refused {
    /// The guard refused what the open really reached.
    Guard(ToolResult),
    Io(io::Error),
}

impl From<io::Error> for Refused {
    fn from(error: io::Error) -> Self {
        Refused::Io(error)
    }
}

impl From<nix::Error> for Refused {
    fn from(error: nix::Error) -> Self {
        Refused::Io(io::Error::from(error))
    }
}

/// Where an open descriptor really is, when the kernel can say.
fn real_path(fd: &impl AsFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd())).ok()
}

/// Opens `path` for reading and checks the file it reached.
pub(crate) fn open_read(guard: &PathGuard, path: &Path) -> Result<File, Refused> {
    let file = File::open(path)?;
    if let Some(real) = real_path(&file)
        && let Err(refusal) = guard.check_read(&real)
    {
        return Err(Refused::Guard(refusal.into_result()));
    }
    refuse_hard_link(guard, &file.metadata()?, path)?;
    Ok(file)
}

/// A directory opened to write one file in it, checked for that file.
pub(crate) struct Anchor {
    dir: OwnedFd,
    name: PathBuf,
    shown: PathBuf,
}

impl Anchor {
    /// Opens `path`'s parent (which must exist) and checks where it really is, joined with the
    /// file's name, for a write.
    pub(crate) fn for_write(guard: &PathGuard, path: &Path) -> Result<Anchor, Refused> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(Refused::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a file path",
            )));
        };
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let dir: OwnedFd = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_DIRECTORY)
            .open(parent)?
            .into();
        if let Some(real) = real_path(&dir)
            && let Err(refusal) = guard.check_write(&real.join(name))
        {
            return Err(Refused::Guard(refusal.into_result()));
        }
        Ok(Anchor {
            dir,
            name: PathBuf::from(name),
            shown: path.to_path_buf(),
        })
    }

    fn open(&self, name: &OsStr, flags: OFlag, mode: Mode) -> Result<File, Refused> {
        let fd = openat(
            self.dir.as_fd(),
            name,
            flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            mode,
        )
        .map_err(|error| match error {
            // The name became a link after the check.
            nix::Error::ELOOP => Refused::Io(io::Error::other(format!(
                "{} became a symbolic link while it was being written; not following it",
                self.shown.display()
            ))),
            other => Refused::from(other),
        })?;
        Ok(File::from(fd))
    }

    /// The file itself, for reading (`None` when it does not exist).
    pub(crate) fn read_existing(&self, guard: &PathGuard) -> Result<Option<File>, Refused> {
        match self.open(self.name.as_os_str(), OFlag::O_RDONLY, Mode::empty()) {
            Ok(file) => {
                refuse_hard_link(guard, &file.metadata()?, &self.shown)?;
                Ok(Some(file))
            }
            Err(Refused::Io(error)) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// The file, opened to append (created when missing).
    pub(crate) fn append(&self, guard: &PathGuard) -> Result<File, Refused> {
        let file = self.open(
            self.name.as_os_str(),
            OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_CREAT,
            Mode::from_bits_truncate(0o666),
        )?;
        refuse_hard_link(guard, &file.metadata()?, &self.shown)?;
        Ok(file)
    }

    /// A new temporary file beside the target, and its name.
    pub(crate) fn temp(&self, stem: &str) -> Result<(File, PathBuf), Refused> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut last = None;
        for _ in 0..64 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = PathBuf::from(format!(".{stem}.{}.{n}.osprey-tmp", std::process::id()));
            match self.open(
                name.as_os_str(),
                OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
                Mode::S_IRUSR | Mode::S_IWUSR,
            ) {
                Ok(file) => return Ok((file, name)),
                Err(Refused::Io(error)) if error.kind() == io::ErrorKind::AlreadyExists => {
                    last = Some(error)
                }
                Err(other) => return Err(other),
            }
        }
        Err(Refused::Io(last.unwrap_or_else(|| {
            io::Error::other("no free temporary file name")
        })))
    }

    /// Renames the temporary file over the target, in the checked directory.
    pub(crate) fn commit(&self, temp: &Path) -> Result<(), Refused> {
        renameat(
            self.dir.as_fd(),
            temp,
            self.dir.as_fd(),
            self.name.as_path(),
        )?;
        Ok(())
    }

    /// Removes a temporary file left by a failed write.
    pub(crate) fn discard(&self, temp: &Path) {
        let _ = nix::unistd::unlinkat(
            self.dir.as_fd(),
            temp,
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    }
}

/// Refuses a regular file with several links when one of them is a protected file.
fn refuse_hard_link(guard: &PathGuard, metadata: &Metadata, shown: &Path) -> Result<(), Refused> {
    if !metadata.is_file() || metadata.nlink() < 2 {
        return Ok(());
    }
    let target = (metadata.dev(), metadata.ino());
    let mut roots = secret_paths(guard.home());
    roots.push(guard.data_dir().to_path_buf());
    for root in roots {
        if let Some(protected) = find_inode(&root, target, 3) {
            return Err(Refused::Guard(ToolResult::error(
                ErrorCode::SensitivePath,
                format!(
                    "refused: {} is a hard link to {}, which is protected",
                    shown.display(),
                    protected.display()
                ),
            )));
        }
    }
    Ok(())
}

/// The file under `root` (a file, or a folder searched `depth` levels down) with this device and
/// inode.
fn find_inode(root: &Path, target: (u64, u64), depth: usize) -> Option<PathBuf> {
    let metadata = std::fs::symlink_metadata(root).ok()?;
    if metadata.is_file() {
        return ((metadata.dev(), metadata.ino()) == target).then(|| root.to_path_buf());
    }
    if !metadata.is_dir() || depth == 0 {
        return None;
    }
    std::fs::read_dir(root)
        .ok()?
        .flatten()
        .find_map(|entry| find_inode(&entry.path(), target, depth - 1))
}
