//! Binary validation, at install and again before every launch: the path must be a regular file
//! (checked with lstat, so a symlink is refused rather than followed), executable, non-empty,
//! within the size cap, and start with ELF, Mach-O or PE magic. Scripts (`#!`) are refused: an
//! interpreter would run code that no signature or format check covers the way it covers a binary.

use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::{Error, Result};

/// The largest binary Osprey runs (also the per-file cap inside a package).
pub const MAX_BINARY_BYTES: u64 = 500 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryFormat {
    Elf,
    MachO,
    Pe,
}

/// Why a binary is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinaryProblem {
    Missing,
    /// A symlink, directory, device, FIFO or socket.
    NotRegularFile,
    NotExecutable,
    Empty,
    TooLarge {
        limit: u64,
    },
    /// Starts with `#!`.
    Script,
    /// Not ELF, Mach-O or PE.
    UnknownFormat,
}

impl BinaryProblem {
    pub fn code(&self) -> &'static str {
        match self {
            BinaryProblem::Missing => "binary_missing",
            BinaryProblem::NotRegularFile => "binary_not_regular_file",
            BinaryProblem::NotExecutable => "binary_not_executable",
            BinaryProblem::Empty => "binary_empty",
            BinaryProblem::TooLarge { .. } => "binary_too_large",
            BinaryProblem::Script => "binary_is_script",
            BinaryProblem::UnknownFormat => "binary_unknown_format",
        }
    }
}

impl fmt::Display for BinaryProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BinaryProblem::Missing => f.write_str("no binary"),
            BinaryProblem::NotRegularFile => f.write_str("not a regular file"),
            BinaryProblem::NotExecutable => f.write_str("not executable"),
            BinaryProblem::Empty => f.write_str("empty"),
            BinaryProblem::TooLarge { limit } => write!(f, "larger than {limit} bytes"),
            BinaryProblem::Script => f.write_str("a script (`#!`); only native binaries run"),
            BinaryProblem::UnknownFormat => f.write_str("not an ELF, Mach-O or PE binary"),
        }
    }
}

/// Checks the binary at `path`; see the module doc.
pub fn validate_binary(path: &Path, max_bytes: u64) -> Result<BinaryFormat> {
    let refuse = |problem: BinaryProblem| Error::BinaryInvalid {
        path: path.to_path_buf(),
        problem,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse(BinaryProblem::Missing));
        }
        Err(e) => return Err(Error::io(format!("lstat {}", path.display()), e)),
    };
    if !meta.file_type().is_file() {
        return Err(refuse(BinaryProblem::NotRegularFile));
    }
    if !is_executable(&meta) {
        return Err(refuse(BinaryProblem::NotExecutable));
    }
    if meta.len() == 0 {
        return Err(refuse(BinaryProblem::Empty));
    }
    if meta.len() > max_bytes {
        return Err(refuse(BinaryProblem::TooLarge { limit: max_bytes }));
    }
    let mut file =
        std::fs::File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    let mut head = [0u8; 64];
    let read = read_up_to(&mut file, &mut head)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    match classify(&head[..read]) {
        Magic::Format(format) => Ok(format),
        Magic::Script => Err(refuse(BinaryProblem::Script)),
        Magic::Unknown => Err(refuse(BinaryProblem::UnknownFormat)),
        Magic::Dos { pe_offset } => {
            // "MZ" alone is any DOS file; a PE image has "PE\0\0" where the DOS header points.
            let mut signature = [0u8; 4];
            let found = file
                .seek(SeekFrom::Start(u64::from(pe_offset)))
                .and_then(|_| read_up_to(&mut file, &mut signature))
                .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
            if found == 4 && signature == *b"PE\0\0" {
                Ok(BinaryFormat::Pe)
            } else {
                Err(refuse(BinaryProblem::UnknownFormat))
            }
        }
    }
}

enum Magic {
    Format(BinaryFormat),
    Dos { pe_offset: u32 },
    Script,
    Unknown,
}

fn classify(head: &[u8]) -> Magic {
    const MACH_O: [[u8; 4]; 6] = [
        [0xFE, 0xED, 0xFA, 0xCE],
        [0xFE, 0xED, 0xFA, 0xCF],
        [0xCE, 0xFA, 0xED, 0xFE],
        [0xCF, 0xFA, 0xED, 0xFE],
        [0xCA, 0xFE, 0xBA, 0xBE],
        [0xBE, 0xBA, 0xFE, 0xCA],
    ];
    if head.starts_with(b"#!") {
        return Magic::Script;
    }
    if head.starts_with(b"\x7FELF") {
        return Magic::Format(BinaryFormat::Elf);
    }
    if head.len() >= 4 && MACH_O.iter().any(|magic| head[..4] == *magic) {
        return Magic::Format(BinaryFormat::MachO);
    }
    if head.starts_with(b"MZ") && head.len() >= 0x40 {
        let pe_offset = u32::from_le_bytes([head[0x3C], head[0x3D], head[0x3E], head[0x3F]]);
        return Magic::Dos { pe_offset };
    }
    Magic::Unknown
}

fn read_up_to(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    true
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    fn problem(path: &Path, max: u64) -> BinaryProblem {
        match validate_binary(path, max).unwrap_err() {
            Error::BinaryInvalid { problem, .. } => problem,
            other => panic!("{other}"),
        }
    }

    fn pe_image() -> Vec<u8> {
        let mut bytes = vec![0u8; 0x90];
        bytes[..2].copy_from_slice(b"MZ");
        bytes[0x3C] = 0x80;
        bytes[0x80..0x84].copy_from_slice(b"PE\0\0");
        bytes
    }

    #[test]
    fn native_formats_pass() {
        let dir = tempfile::tempdir().unwrap();
        let elf = write(dir.path(), "elf", b"\x7FELF\x02\x01\x01rest", 0o755);
        assert_eq!(validate_binary(&elf, 1024).unwrap(), BinaryFormat::Elf);
        let macho = write(
            dir.path(),
            "macho",
            &[0xCF, 0xFA, 0xED, 0xFE, 7, 0, 0, 1],
            0o700,
        );
        assert_eq!(validate_binary(&macho, 1024).unwrap(), BinaryFormat::MachO);
        let pe = write(dir.path(), "pe", &pe_image(), 0o755);
        assert_eq!(validate_binary(&pe, 1024).unwrap(), BinaryFormat::Pe);
        // The test binary itself is a real ELF file.
        let me = std::env::current_exe().unwrap();
        assert_eq!(
            validate_binary(&me, MAX_BINARY_BYTES).unwrap(),
            BinaryFormat::Elf
        );
    }

    #[test]
    fn everything_else_is_refused_with_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        let script = write(dir.path(), "script", b"#!/bin/sh\necho hi\n", 0o755);
        assert_eq!(problem(&script, 1024), BinaryProblem::Script);
        let text = write(dir.path(), "text", b"hello world", 0o755);
        assert_eq!(problem(&text, 1024), BinaryProblem::UnknownFormat);
        let mut dos = pe_image();
        dos[0x80..0x84].copy_from_slice(b"NOPE");
        let dos = write(dir.path(), "dos", &dos, 0o755);
        assert_eq!(problem(&dos, 1024), BinaryProblem::UnknownFormat);
        let plain = write(dir.path(), "plain", b"\x7FELF....", 0o644);
        assert_eq!(problem(&plain, 1024), BinaryProblem::NotExecutable);
        let empty = write(dir.path(), "empty", b"", 0o755);
        assert_eq!(problem(&empty, 1024), BinaryProblem::Empty);
        let big = write(dir.path(), "big", &[0x7F; 2048], 0o755);
        assert_eq!(problem(&big, 1024), BinaryProblem::TooLarge { limit: 1024 });
        let elf = write(dir.path(), "elf", b"\x7FELF....", 0o755);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&elf, &link).unwrap();
        assert_eq!(problem(&link, 1024), BinaryProblem::NotRegularFile);
        assert_eq!(problem(dir.path(), 1024), BinaryProblem::NotRegularFile);
        assert_eq!(
            problem(&dir.path().join("absent"), 1024),
            BinaryProblem::Missing
        );
    }
}
