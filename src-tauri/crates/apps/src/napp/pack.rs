//! Packing for publishers: a deterministic plain-ustar `.napp` (sorted names, zero mtimes and
//! owners, Osprey's modes) from an app directory, and signing and verifying a `.napp` file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::{BINARY_NAMES, EntryName, Limits, MANIFEST, Rejection, SIGNATURES, SKILL, UI_DIR};
use crate::binary::validate_binary;
use crate::manifest::Manifest;
use crate::signing::{KeyPair, PublicKey};
use crate::{Error, Result};

/// Writes `dir` as a `.napp` stream: manifest.json, SKILL.md, signatures.json (when present),
/// `ui/` and the binary. Other files in `dir` are not packed. The manifest and binary are
/// validated first; symlinks anywhere in what would be packed are refused.
pub fn pack(dir: &Path, out: impl Write) -> Result<Manifest> {
    let manifest_path = dir.join(MANIFEST);
    regular_file(&manifest_path, MANIFEST)?;
    let manifest_bytes = std::fs::read(&manifest_path)
        .map_err(|e| Error::io(format!("read {}", manifest_path.display()), e))?;
    let manifest = Manifest::parse(&manifest_bytes)?;
    regular_file(&dir.join(SKILL), SKILL)?;

    let present: Vec<&str> = BINARY_NAMES
        .into_iter()
        .filter(|name| std::fs::symlink_metadata(dir.join(name)).is_ok())
        .collect();
    let binary = match present.as_slice() {
        [one] => *one,
        [] => return Err(Error::rejected(Rejection::Missing("binary"))),
        _ => return Err(Error::rejected(Rejection::Duplicate("app".into()))),
    };
    validate_binary(&dir.join(binary), Limits::default().binary).map_err(|e| match e {
        Error::BinaryInvalid { problem, .. } => Error::rejected(Rejection::Binary(problem)),
        other => other,
    })?;

    let mut files: Vec<(String, PathBuf, u32)> = vec![
        (MANIFEST.into(), manifest_path, 0o644),
        (SKILL.into(), dir.join(SKILL), 0o644),
    ];
    let signatures = dir.join(SIGNATURES);
    if std::fs::symlink_metadata(&signatures).is_ok() {
        regular_file(&signatures, SIGNATURES)?;
        files.push((SIGNATURES.into(), signatures, 0o644));
    }
    let mut directories = Vec::new();
    let ui = dir.join(UI_DIR);
    if let Ok(meta) = std::fs::symlink_metadata(&ui) {
        if !meta.is_dir() {
            return Err(Error::rejected(Rejection::NameNotAllowed(UI_DIR.into())));
        }
        collect_ui(&ui, UI_DIR, &mut directories, &mut files)?;
    }
    files.push((binary.into(), dir.join(binary), 0o755));

    let mut builder = tar::Builder::new(GzEncoder::new(out, Compression::default()));
    for name in &directories {
        let mut header = header(tar::EntryType::Directory, 0o755, 0);
        append(&mut builder, &mut header, &format!("{name}/"), io::empty())?;
    }
    for (name, path, mode) in &files {
        let file =
            File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
        let size = file
            .metadata()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?
            .len();
        let mut header = header(tar::EntryType::Regular, *mode, size);
        append(&mut builder, &mut header, name, file)?;
    }
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .and_then(|mut out| out.flush())
        .map_err(|e| Error::io("finish the archive", e))?;
    Ok(manifest)
}

/// [`pack`] into `out`, written to a temporary file beside it and renamed when complete.
pub fn pack_to_file(dir: &Path, out: &Path) -> Result<Manifest> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temp = tempfile::NamedTempFile::new_in(parent)
        .map_err(|e| Error::io(format!("create a file in {}", parent.display()), e))?;
    let manifest = pack(dir, BufWriter::new(temp.as_file()))?;
    temp.persist(out)
        .map_err(|e| Error::io(format!("write {}", out.display()), e.error))?;
    Ok(manifest)
}

/// Signs the `.napp` at `input` with `key`, writing the signed package to `output` (which may be
/// `input`). The package is unpacked with all the extraction checks first.
pub fn sign_package(input: &Path, key: &KeyPair, output: &Path) -> Result<Manifest> {
    let work = tempfile::tempdir().map_err(|e| Error::io("create a work directory", e))?;
    let file = File::open(input).map_err(|e| Error::io(format!("open {}", input.display()), e))?;
    let staged = super::extract(
        io::BufReader::new(file),
        work.path(),
        &Limits::default(),
        false,
    )?;
    staged.sign(key)?;
    pack_to_file(staged.path(), output)
}

/// Unpacks the `.napp` at `input` with all the checks and verifies its signatures against `key`.
pub fn verify_package(input: &Path, key: &PublicKey) -> Result<Manifest> {
    let work = tempfile::tempdir().map_err(|e| Error::io("create a work directory", e))?;
    let file = File::open(input).map_err(|e| Error::io(format!("open {}", input.display()), e))?;
    let staged = super::extract(
        io::BufReader::new(file),
        work.path(),
        &Limits::default(),
        true,
    )?;
    staged.verify(key)?;
    Ok(staged.manifest().clone())
}

fn regular_file(path: &Path, name: &'static str) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => Ok(()),
        Ok(meta) if meta.file_type().is_symlink() => {
            Err(Error::rejected(Rejection::Link(name.into())))
        }
        Ok(_) => Err(Error::rejected(Rejection::NameNotAllowed(name.into()))),
        Err(_) => Err(Error::rejected(Rejection::Missing(name))),
    }
}

fn collect_ui(
    dir: &Path,
    name: &str,
    directories: &mut Vec<String>,
    files: &mut Vec<(String, PathBuf, u32)>,
) -> Result<()> {
    directories.push(name.to_owned());
    let mut children: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(format!("list {}", dir.display()), e))?
        .collect::<io::Result<_>>()
        .map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
    children.sort_by_key(|entry| entry.file_name());
    for child in children {
        let child_name = format!("{name}/{}", child.file_name().to_string_lossy());
        EntryName::classify(child_name.as_bytes()).map_err(Error::rejected)?;
        let kind = child
            .file_type()
            .map_err(|e| Error::io(format!("stat {}", child.path().display()), e))?;
        if kind.is_symlink() {
            return Err(Error::rejected(Rejection::Link(child_name)));
        } else if kind.is_dir() {
            collect_ui(&child.path(), &child_name, directories, files)?;
        } else if kind.is_file() {
            files.push((child_name, child.path(), 0o644));
        } else {
            return Err(Error::rejected(Rejection::SpecialFile(child_name)));
        }
    }
    Ok(())
}

pub(crate) fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header
}

pub(crate) fn append<W: Write>(
    builder: &mut tar::Builder<W>,
    header: &mut tar::Header,
    name: &str,
    data: impl io::Read,
) -> Result<()> {
    header
        .set_path(name)
        .map_err(|e| Error::io(format!("name {name}"), e))?;
    header.set_cksum();
    builder
        .append(header, data)
        .map_err(|e| Error::io(format!("append {name}"), e))
}
