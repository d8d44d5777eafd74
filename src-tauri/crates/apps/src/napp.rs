//! The `.napp` package: a gzip-compressed ustar archive holding `manifest.json`, the executable
//! (`binary` or `app`), `signatures.json`, `SKILL.md` and optional `ui/` files. Nothing else is
//! allowed in it: no links, no devices, no PAX or GNU extension headers (so there is no
//! header-size differential to exploit; `osprey napp pack` writes plain ustar), no names outside
//! the allowlist. See docs/napp-format.md.

mod extract;
mod pack;

use std::fmt;
use std::path::Path;

pub(crate) use extract::{STAGING_PREFIX, Slot, unpack_entries};
pub use extract::{StagedPackage, extract};
pub(crate) use pack::{append as append_entry, header as entry_header};
pub use pack::{pack, pack_to_file, sign_package, verify_package};

use crate::binary::{BinaryProblem, MAX_BINARY_BYTES};

pub const MANIFEST: &str = "manifest.json";
pub const SIGNATURES: &str = "signatures.json";
pub const SKILL: &str = "SKILL.md";
/// The executable may be called either; a package holds exactly one.
pub const BINARY_NAMES: [&str; 2] = ["binary", "app"];
pub const UI_DIR: &str = "ui";
/// The longest entry name, and the deepest `ui/` nesting.
pub(crate) const MAX_NAME_BYTES: usize = 255;
const MAX_UI_DEPTH: usize = 8;

const MB: u64 = 1024 * 1024;

/// Size and count caps, counted on the bytes actually read from the archive, never on what a
/// header claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Each of manifest.json, signatures.json, SKILL.md.
    pub metadata_file: u64,
    pub binary: u64,
    pub ui_file: u64,
    /// All entries' contents together.
    pub total: u64,
    pub entries: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            metadata_file: MB,
            binary: MAX_BINARY_BYTES,
            ui_file: 5 * MB,
            total: 600 * MB,
            entries: 2_000,
        }
    }
}

/// Why a package was refused (`package_rejected`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    AbsolutePath(String),
    ParentDir(String),
    /// A symlink or hard link.
    Link(String),
    /// A character or block device, or a FIFO.
    SpecialFile(String),
    /// PAX, GNU long-name, sparse, contiguous or unknown entry types.
    UnsupportedEntry(String),
    NameNotAllowed(String),
    Duplicate(String),
    FileTooLarge {
        name: String,
        limit: u64,
    },
    TotalTooLarge {
        limit: u64,
    },
    TooManyEntries {
        limit: u64,
    },
    Missing(&'static str),
    Binary(BinaryProblem),
    /// Not gzip, not tar, or cut short.
    Corrupt(String),
    /// A skill package whose SKILL.md does not meet the Agent Skills format (why).
    SkillInvalid(String),
}

impl Rejection {
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::AbsolutePath(_) => "absolute_path",
            Rejection::ParentDir(_) => "parent_dir",
            Rejection::Link(_) => "link",
            Rejection::SpecialFile(_) => "special_file",
            Rejection::UnsupportedEntry(_) => "unsupported_entry",
            Rejection::NameNotAllowed(_) => "name_not_allowed",
            Rejection::Duplicate(_) => "duplicate",
            Rejection::FileTooLarge { .. } => "file_too_large",
            Rejection::TotalTooLarge { .. } => "total_too_large",
            Rejection::TooManyEntries { .. } => "too_many_entries",
            Rejection::Missing(_) => "missing_file",
            Rejection::Binary(problem) => problem.code(),
            Rejection::Corrupt(_) => "corrupt",
            Rejection::SkillInvalid(_) => "skill_invalid",
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::AbsolutePath(name) => write!(f, "absolute path `{name}`"),
            Rejection::ParentDir(name) => write!(f, "`..` in `{name}`"),
            Rejection::Link(name) => write!(f, "`{name}` is a link"),
            Rejection::SpecialFile(name) => write!(f, "`{name}` is a device or FIFO"),
            Rejection::UnsupportedEntry(name) => {
                write!(f, "`{name}` is an extension or unsupported entry type")
            }
            Rejection::NameNotAllowed(name) => write!(f, "`{name}` is not allowed in a package"),
            Rejection::Duplicate(name) => write!(f, "`{name}` appears more than once"),
            Rejection::FileTooLarge { name, limit } => {
                write!(f, "`{name}` is larger than {limit} bytes")
            }
            Rejection::TotalTooLarge { limit } => {
                write!(f, "the contents exceed {limit} bytes in total")
            }
            Rejection::TooManyEntries { limit } => write!(f, "more than {limit} entries"),
            Rejection::Missing(name) => write!(f, "no `{name}`"),
            Rejection::Binary(problem) => write!(f, "the binary is {problem}"),
            Rejection::Corrupt(why) => write!(f, "not a readable archive: {why}"),
            Rejection::SkillInvalid(why) => write!(f, "not a valid skill: {why}"),
        }
    }
}

/// What an allowed entry name is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EntryName {
    Manifest,
    Signatures,
    Skill,
    Binary(&'static str),
    /// A path under `ui/` (or `ui` itself), normalized.
    Ui(String),
    /// `.` or `./`: the archive root, which some tools list first.
    Root,
}

impl EntryName {
    /// Classifies a raw entry name, refusing anything outside the allowlist. A leading `./` is
    /// accepted (what `tar -C dir .` writes); a trailing `/` only on directories.
    pub(crate) fn classify(raw: &[u8]) -> Result<EntryName, Rejection> {
        let shown = String::from_utf8_lossy(raw).into_owned();
        let Ok(name) = std::str::from_utf8(raw) else {
            return Err(Rejection::NameNotAllowed(shown));
        };
        if name.starts_with('/') || name.starts_with('\\') {
            return Err(Rejection::AbsolutePath(shown));
        }
        if name.len() > MAX_NAME_BYTES || name.contains(['\0', '\\']) {
            return Err(Rejection::NameNotAllowed(shown));
        }
        let mut rest = name;
        while let Some(stripped) = rest.strip_prefix("./") {
            rest = stripped;
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest == "." {
            return Ok(EntryName::Root);
        }
        let components: Vec<&str> = rest.split('/').collect();
        if components.contains(&"..") {
            return Err(Rejection::ParentDir(shown));
        }
        Ok(match components.as_slice() {
            [single] => match *single {
                MANIFEST => EntryName::Manifest,
                SIGNATURES => EntryName::Signatures,
                SKILL => EntryName::Skill,
                "binary" => EntryName::Binary(BINARY_NAMES[0]),
                "app" => EntryName::Binary(BINARY_NAMES[1]),
                UI_DIR => EntryName::Ui(UI_DIR.to_owned()),
                _ => return Err(Rejection::NameNotAllowed(shown)),
            },
            [UI_DIR, inner @ ..]
                if inner.len() < MAX_UI_DEPTH && inner.iter().all(|c| safe_component(c)) =>
            {
                EntryName::Ui(components.join("/"))
            }
            _ => return Err(Rejection::NameNotAllowed(shown)),
        })
    }

    /// The relative path inside the package.
    pub(crate) fn path(&self) -> &str {
        match self {
            EntryName::Manifest => MANIFEST,
            EntryName::Signatures => SIGNATURES,
            EntryName::Skill => SKILL,
            EntryName::Binary(name) => name,
            EntryName::Ui(path) => path,
            EntryName::Root => ".",
        }
    }

    /// Two entries conflict when these match: names compare case-insensitively (a package must
    /// unpack the same on case-insensitive file systems), and `binary` and `app` are one slot.
    pub(crate) fn slot(&self) -> String {
        match self {
            EntryName::Binary(_) => "<binary>".to_owned(),
            other => other.path().to_ascii_lowercase(),
        }
    }

    pub(crate) fn limit(&self, limits: &Limits) -> u64 {
        match self {
            EntryName::Manifest | EntryName::Signatures | EntryName::Skill => limits.metadata_file,
            EntryName::Binary(_) => limits.binary,
            EntryName::Ui(_) | EntryName::Root => limits.ui_file,
        }
    }
}

/// A `ui/` path component: `[A-Za-z0-9_-][A-Za-z0-9._-]*`, at most 128 bytes (no hidden files,
/// no `.` or `..`, nothing a shell or a URL would treat specially).
pub(crate) fn safe_component(component: &str) -> bool {
    (1..=128).contains(&component.len())
        && !component.starts_with('.')
        && component
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The relative path `name` inside `dir`.
pub(crate) fn join(dir: &Path, name: &str) -> std::path::PathBuf {
    name.split('/')
        .fold(dir.to_path_buf(), |path, part| path.join(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(raw: &str) -> &'static str {
        EntryName::classify(raw.as_bytes()).unwrap_err().code()
    }

    #[test]
    fn allowlisted_names_are_classified() {
        assert_eq!(
            EntryName::classify(b"manifest.json"),
            Ok(EntryName::Manifest)
        );
        assert_eq!(EntryName::classify(b"./SKILL.md"), Ok(EntryName::Skill));
        assert_eq!(EntryName::classify(b"app"), Ok(EntryName::Binary("app")));
        assert_eq!(EntryName::classify(b"ui/"), Ok(EntryName::Ui("ui".into())));
        assert_eq!(
            EntryName::classify(b"ui/assets/index-1.js"),
            Ok(EntryName::Ui("ui/assets/index-1.js".into()))
        );
        assert_eq!(EntryName::classify(b"./"), Ok(EntryName::Root));
    }

    #[test]
    fn hostile_names_are_refused() {
        assert_eq!(code("/etc/passwd"), "absolute_path");
        assert_eq!(code("../x"), "parent_dir");
        assert_eq!(code("ui/../../x"), "parent_dir");
        for name in [
            "evil.sh",
            "ui/.hidden",
            "ui//x",
            "ui/./x",
            "data/x",
            "ui/a b",
            "Manifest.JSON",
            "ui\\x",
            "ui/a/b/c/d/e/f/g/h/i",
        ] {
            assert_eq!(code(name), "name_not_allowed", "{name}");
        }
        assert_eq!(
            EntryName::classify(b"ui/\xFF").unwrap_err().code(),
            "name_not_allowed"
        );
    }
}
