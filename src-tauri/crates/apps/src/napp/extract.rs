//! Extraction: every entry is checked before a byte of it is written, contents are counted as
//! they are read, and everything goes into a fresh staging directory inside the apps directory
//! that is renamed into place only once the package is complete (and, for installs, verified).
//! Any refusal drops the staging directory, so nothing is left behind.

use std::cell::Cell;
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use flate2::read::GzDecoder;
use tempfile::TempDir;

use super::{EntryName, Limits, Rejection, join};
use crate::binary::validate_binary;
use crate::manifest::Manifest;
use crate::signing::PublicKey;
use crate::{Error, Result};

pub(crate) const STAGING_PREFIX: &str = ".staging-";

/// A package unpacked into a staging directory inside the apps directory. Dropping it removes the
/// staging directory; [`StagedPackage::commit`] moves it into place.
#[derive(Debug)]
pub struct StagedPackage {
    staging: TempDir,
    apps_dir: PathBuf,
    manifest: Manifest,
    manifest_bytes: Vec<u8>,
    binary_name: &'static str,
    signed: bool,
}

impl StagedPackage {
    pub fn path(&self) -> &Path {
        self.staging.path()
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The exact bytes of manifest.json, as signed.
    pub fn manifest_bytes(&self) -> &[u8] {
        &self.manifest_bytes
    }

    pub fn binary_path(&self) -> PathBuf {
        self.staging.path().join(self.binary_name)
    }

    pub fn has_signatures(&self) -> bool {
        self.signed
    }

    /// Verifies signatures.json against `key` (the store's current key or a publisher's).
    pub fn verify(&self, key: &PublicKey) -> Result<()> {
        let path = self.staging.path().join(super::SIGNATURES);
        let signatures = std::fs::read(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => Error::rejected(Rejection::Missing(super::SIGNATURES)),
            _ => Error::io(format!("read {}", path.display()), e),
        })?;
        key.verify(
            &signatures,
            self.staging.path(),
            &self.manifest_bytes,
            &self.binary_path(),
        )
    }

    /// Signs the package with `key`, replacing any signatures.json it had.
    pub fn sign(&self, key: &crate::signing::KeyPair) -> Result<()> {
        let path = self.staging.path().join(super::SIGNATURES);
        let _ = std::fs::remove_file(&path);
        let signatures = key.sign(
            self.staging.path(),
            &self.manifest_bytes,
            &self.binary_path(),
        )?;
        std::fs::write(&path, signatures.to_json())
            .map_err(|e| Error::io(format!("write {}", path.display()), e))
    }

    /// Renames the staging directory to `<apps dir>/<id>`. Refuses when anything already occupies
    /// that name (an installed app, a file, a symlink): an update swaps directories explicitly.
    pub fn commit(self) -> Result<PathBuf> {
        let destination = self.apps_dir.join(&self.manifest.id);
        self.commit_to(destination)
    }

    /// Renames the staging directory to `destination`, which must be free and on the same file
    /// system (an update staged for approval goes to `<apps dir>/.pending/<id>`).
    pub fn commit_to(self, destination: PathBuf) -> Result<PathBuf> {
        if std::fs::symlink_metadata(&destination).is_ok() {
            return Err(Error::AlreadyInstalled(self.manifest.id.clone()));
        }
        let staging = self.staging.keep();
        if let Err(e) = std::fs::rename(&staging, &destination) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(Error::io(format!("move into {}", destination.display()), e));
        }
        Ok(destination)
    }
}

/// Reads a `.napp` stream into a new staging directory under `apps_dir`. With
/// `require_signatures`, a package without signatures.json is refused (installs); without it, it
/// is accepted (signing an unsigned package). Signatures are not verified here: call
/// [`StagedPackage::verify`].
pub fn extract(
    archive: impl Read,
    apps_dir: &Path,
    limits: &Limits,
    require_signatures: bool,
) -> Result<StagedPackage> {
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(apps_dir)
        .map_err(|e| {
            Error::io(
                format!("create a staging directory in {}", apps_dir.display()),
                e,
            )
        })?;
    // On error `staging` drops here and takes everything written with it.
    let contents = unpack(archive, staging.path(), limits)?;

    let binary_name = contents
        .binary
        .ok_or(Error::rejected(Rejection::Missing("binary")))?;
    let manifest_bytes = contents
        .manifest
        .ok_or(Error::rejected(Rejection::Missing(super::MANIFEST)))?;
    if !contents.skill {
        return Err(Error::rejected(Rejection::Missing(super::SKILL)));
    }
    if require_signatures && !contents.signatures {
        return Err(Error::rejected(Rejection::Missing(super::SIGNATURES)));
    }
    let manifest = Manifest::parse(&manifest_bytes)?;
    validate_binary(&staging.path().join(binary_name), limits.binary).map_err(|e| match e {
        Error::BinaryInvalid { problem, .. } => Error::rejected(Rejection::Binary(problem)),
        other => other,
    })?;
    Ok(StagedPackage {
        staging,
        apps_dir: apps_dir.to_path_buf(),
        manifest,
        manifest_bytes,
        binary_name,
        signed: contents.signatures,
    })
}

#[derive(Default)]
struct Contents {
    manifest: Option<Vec<u8>>,
    binary: Option<&'static str>,
    signatures: bool,
    skill: bool,
}

fn unpack(archive: impl Read, staging: &Path, limits: &Limits) -> Result<Contents> {
    let written = unpack_entries(
        archive,
        staging,
        limits.total,
        limits.entries,
        |raw, is_dir| {
            let shown = || String::from_utf8_lossy(raw).into_owned();
            let name = EntryName::classify(raw)?;
            match (&name, is_dir) {
                (EntryName::Root, true) => Ok(Slot::Root),
                (EntryName::Ui(path), true) => Ok(Slot::Dir {
                    path: path.clone(),
                    slot: name.slot(),
                }),
                (_, true) => Err(Rejection::NameNotAllowed(shown())),
                (EntryName::Root, false) => Err(Rejection::NameNotAllowed(shown())),
                (EntryName::Ui(path), false) if path == super::UI_DIR => {
                    Err(Rejection::NameNotAllowed(shown()))
                }
                (_, false) => Ok(Slot::File {
                    path: name.path().to_owned(),
                    slot: name.slot(),
                    limit: name.limit(limits),
                    executable: matches!(name, EntryName::Binary(_)),
                    tag: name,
                }),
            }
        },
    )?;
    let mut contents = Contents::default();
    for name in written {
        match name {
            EntryName::Manifest => {
                let path = join(staging, super::MANIFEST);
                contents.manifest =
                    Some(std::fs::read(&path).map_err(|e| Error::io("read manifest.json", e))?)
            }
            EntryName::Binary(binary) => contents.binary = Some(binary),
            EntryName::Signatures => contents.signatures = true,
            EntryName::Skill => contents.skill = true,
            EntryName::Ui(_) | EntryName::Root => {}
        }
    }
    Ok(contents)
}

/// What an archive entry becomes, as a package format's name rules decide ([`unpack_entries`]).
pub(crate) enum Slot<T> {
    /// The archive root (`./`): nothing to write.
    Root,
    /// A directory at this relative path.
    Dir { path: String, slot: String },
    /// A file at this relative path, read up to `limit` bytes. `slot` names what may not appear
    /// twice (compared as given: lowercase it for case-insensitive uniqueness); `tag` is handed
    /// back for each file written.
    File {
        path: String,
        slot: String,
        limit: u64,
        executable: bool,
        tag: T,
    },
}

/// The hardened walk every archive Osprey unpacks goes through (`.napp` packages, store skills):
/// gzip capped as a stream, raw tar entries (PAX and GNU extensions refused, never applied), no
/// links, devices or FIFOs, each name judged by `classify` before a byte is written, files
/// created new (`O_EXCL`) with Osprey's modes and counted on the bytes actually read (each
/// against its limit, all against `total`), at most `entries` entries. Returns the tags of the
/// files written, in archive order. On error the caller drops its staging directory.
pub(crate) fn unpack_entries<T>(
    archive: impl Read,
    staging: &Path,
    total_limit: u64,
    entries_limit: u64,
    mut classify: impl FnMut(&[u8], bool) -> std::result::Result<Slot<T>, Rejection>,
) -> Result<Vec<T>> {
    // Bounds the decompressed stream itself, so a gzip bomb or a lying header cannot make the tar
    // reader consume more than the caps allow (headers and padding get a fixed allowance).
    let stream_cap = total_limit
        .saturating_add(entries_limit.saturating_add(2).saturating_mul(1024))
        .saturating_add(64 * 1024);
    let exceeded = Rc::new(Cell::new(false));
    let stream = CappedReader {
        inner: GzDecoder::new(archive),
        remaining: stream_cap,
        exceeded: Rc::clone(&exceeded),
    };
    let corrupt = |e: io::Error| {
        if exceeded.get() {
            Error::rejected(Rejection::TotalTooLarge { limit: total_limit })
        } else {
            Error::rejected(Rejection::Corrupt(e.to_string()))
        }
    };

    let mut archive = tar::Archive::new(stream);
    // Raw: PAX and GNU extension headers come to us as entries (and are refused) instead of
    // being applied by the tar reader.
    let entries = archive.entries().map_err(corrupt)?.raw(true);
    let mut written_tags = Vec::new();
    let mut seen = HashSet::new();
    let mut count = 0u64;
    let mut total = 0u64;
    for entry in entries {
        let mut entry = entry.map_err(corrupt)?;
        count += 1;
        if count > entries_limit {
            return Err(Error::rejected(Rejection::TooManyEntries {
                limit: entries_limit,
            }));
        }
        let raw_name = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw_name).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            return Err(Error::rejected(Rejection::Link(shown)));
        }
        if kind.is_character_special() || kind.is_block_special() || kind.is_fifo() {
            return Err(Error::rejected(Rejection::SpecialFile(shown)));
        }
        if !kind.is_file() && !kind.is_dir() {
            return Err(Error::rejected(Rejection::UnsupportedEntry(shown)));
        }
        match classify(&raw_name, kind.is_dir()).map_err(Error::rejected)? {
            Slot::Root => {}
            Slot::Dir { path, slot } => {
                if !seen.insert(slot) {
                    return Err(Error::rejected(Rejection::Duplicate(shown)));
                }
                let path = join(staging, &path);
                std::fs::create_dir_all(&path)
                    .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
            }
            Slot::File {
                path,
                slot,
                limit,
                executable,
                tag,
            } => {
                if !seen.insert(slot) {
                    return Err(Error::rejected(Rejection::Duplicate(shown)));
                }
                let path = join(staging, &path);
                let written = write_entry(&mut entry, &path, limit, executable).map_err(corrupt)?;
                if written > limit {
                    return Err(Error::rejected(Rejection::FileTooLarge {
                        name: shown,
                        limit,
                    }));
                }
                total += written;
                if total > total_limit {
                    return Err(Error::rejected(Rejection::TotalTooLarge {
                        limit: total_limit,
                    }));
                }
                written_tags.push(tag);
            }
        }
    }
    Ok(written_tags)
}

/// Copies at most `limit + 1` bytes of the entry into a new file (never an existing one) and
/// returns how many it copied: more than `limit` means the entry is too large, whatever its
/// header said. Permissions are Osprey's, not the archive's.
fn write_entry(
    entry: &mut impl Read,
    path: &Path,
    limit: u64,
    executable: bool,
) -> io::Result<u64> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if executable { 0o755 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = executable;
    let mut file: File = options.open(path)?;
    let written = io::copy(&mut entry.take(limit.saturating_add(1)), &mut file)?;
    file.flush()?;
    Ok(written)
}

struct CappedReader<R> {
    inner: R,
    remaining: u64,
    exceeded: Rc<Cell<bool>>,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            // One probe byte tells a stream that ends exactly at the cap from one that goes on.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.exceeded.set(true);
                    Err(io::Error::other("decompressed size cap exceeded"))
                }
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buf[..want])?;
        self.remaining -= read as u64;
        Ok(read)
    }
}
