//! Skills from the store: an Agent Skills folder (`SKILL.md` with `name` and `description` in its
//! front matter, plus any scripts, references and assets) travels as a gzip-compressed plain
//! ustar archive, signed by the store's key as a whole ([`crate::signing::ArchiveSignature`]:
//! ed25519 over the archive's SHA-256).
//!
//! Unpacking goes through the same hardened walk as `.napp` packages
//! ([`crate::napp`]'s `unpack_entries`): no absolute paths, `..`, links, devices, PAX or GNU
//! extension entries; names of plain components only (`[A-Za-z0-9_-][A-Za-z0-9._-]*`, so no
//! hidden files) at most [`MAX_DEPTH`] deep; each file, the total and the entry count capped on
//! the bytes actually read; files created new with mode 0644 (nothing in a skill is made
//! executable) in a fresh hidden staging folder that is renamed into place only when complete.
//!
//! [`SkillInstaller`] places store skills in the person's skill folder (`<data>/skills`, which
//! the skill loader reads), each with a record of where it came from ([`RECORD_FILE`]), and
//! removes them again. Signature checks come first: nothing is unpacked from an archive whose
//! signature does not verify against the store's key, and an unreachable key refuses the install.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use osprey_types::skill_md::{self, SKILL_FILE, SkillFrontmatter};
use serde::{Deserialize, Serialize};
use tempfile::TempDir;

use crate::napp::{self, Rejection, Slot};
use crate::signing::ArchiveSignature;
use crate::store_client::StoreClient;
use crate::trust::Trust;
use crate::{Error, Result};

/// The deepest a file may sit inside a skill folder (`scripts/lib/x.py` is 3).
pub const MAX_DEPTH: usize = 8;
/// Where an installed store skill records its source; hidden, so no archive can carry one and
/// the skill loader never reads it as a skill.
pub const RECORD_FILE: &str = ".osprey-store.json";
/// The largest skill archive downloaded (compressed bytes, counted as they arrive).
pub const MAX_ARCHIVE_BYTES: u64 = 25 * 1024 * 1024;

const MB: u64 = 1024 * 1024;

/// Caps on a skill archive's contents, counted on the bytes read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkillLimits {
    /// SKILL.md.
    pub skill_file: u64,
    /// Every other file.
    pub file: u64,
    pub total: u64,
    pub entries: u64,
}

impl Default for SkillLimits {
    fn default() -> SkillLimits {
        SkillLimits {
            skill_file: MB,
            file: 10 * MB,
            total: 20 * MB,
            entries: 1_000,
        }
    }
}

/// A skill unpacked into a hidden staging folder; dropping it removes the folder.
#[derive(Debug)]
pub struct StagedSkill {
    staging: TempDir,
    front: SkillFrontmatter,
    files: Vec<String>,
}

impl StagedSkill {
    pub fn path(&self) -> &Path {
        self.staging.path()
    }

    /// The skill's name (its front matter's, checked against the Agent Skills rules).
    pub fn name(&self) -> &str {
        self.front.name.as_deref().unwrap_or_default()
    }

    pub fn frontmatter(&self) -> &SkillFrontmatter {
        &self.front
    }

    /// Every file, by `/`-separated relative path, sorted.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Renames the staging folder to `destination`, which must be free.
    fn commit_to(self, destination: &Path) -> Result<()> {
        if std::fs::symlink_metadata(destination).is_ok() {
            return Err(Error::AlreadyInstalled(format!(
                "{} is occupied",
                destination.display()
            )));
        }
        let staging = self.staging.keep();
        std::fs::rename(&staging, destination).map_err(|e| {
            let _ = std::fs::remove_dir_all(&staging);
            Error::io(format!("move into {}", destination.display()), e)
        })
    }
}

/// Judges one entry name of a skill archive: `./` prefixes and a trailing `/` (directories)
/// are accepted; every component must be a plain name.
fn classify(
    raw: &[u8],
    is_dir: bool,
    limits: &SkillLimits,
) -> std::result::Result<Slot<String>, Rejection> {
    let shown = String::from_utf8_lossy(raw).into_owned();
    let Ok(name) = std::str::from_utf8(raw) else {
        return Err(Rejection::NameNotAllowed(shown));
    };
    if name.starts_with('/') || name.starts_with('\\') {
        return Err(Rejection::AbsolutePath(shown));
    }
    if name.len() > napp::MAX_NAME_BYTES || name.contains(['\0', '\\']) {
        return Err(Rejection::NameNotAllowed(shown));
    }
    let mut rest = name;
    while let Some(stripped) = rest.strip_prefix("./") {
        rest = stripped;
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() || rest == "." {
        return if is_dir {
            Ok(Slot::Root)
        } else {
            Err(Rejection::NameNotAllowed(shown))
        };
    }
    let components: Vec<&str> = rest.split('/').collect();
    if components.contains(&"..") {
        return Err(Rejection::ParentDir(shown));
    }
    if components.len() > MAX_DEPTH || !components.iter().all(|c| napp::safe_component(c)) {
        return Err(Rejection::NameNotAllowed(shown));
    }
    let path = components.join("/");
    let slot = path.to_ascii_lowercase();
    if is_dir {
        return Ok(Slot::Dir { path, slot });
    }
    let limit = if path == SKILL_FILE {
        limits.skill_file
    } else {
        limits.file
    };
    Ok(Slot::File {
        tag: path.clone(),
        path,
        slot,
        limit,
        executable: false,
    })
}

/// Unpacks a skill archive into a new hidden staging folder inside `dir` with every check, then
/// reads its SKILL.md: the front matter must name the skill by the Agent Skills rules (and name
/// it `expected_name` when given) and describe it. A refusal leaves nothing behind.
pub fn extract_skill(
    archive: impl Read,
    dir: &Path,
    limits: &SkillLimits,
    expected_name: Option<&str>,
) -> Result<StagedSkill> {
    let staging = tempfile::Builder::new()
        .prefix(napp::STAGING_PREFIX)
        .tempdir_in(dir)
        .map_err(|e| Error::io(format!("create a staging folder in {}", dir.display()), e))?;
    let mut files = napp::unpack_entries(
        archive,
        staging.path(),
        limits.total,
        limits.entries,
        |raw, is_dir| classify(raw, is_dir, limits),
    )?;
    files.sort();
    if !files.iter().any(|f| f == SKILL_FILE) {
        return Err(Error::rejected(Rejection::Missing(SKILL_FILE)));
    }
    let text = std::fs::read(staging.path().join(SKILL_FILE))
        .map_err(|e| Error::io("read SKILL.md", e))?;
    let text = String::from_utf8(text)
        .map_err(|_| Error::rejected(Rejection::SkillInvalid("SKILL.md is not UTF-8".into())))?;
    let (front, _) = skill_md::check_published(&text, expected_name)
        .map_err(|why| Error::rejected(Rejection::SkillInvalid(why)))?;
    Ok(StagedSkill {
        staging,
        front,
        files,
    })
}

/// Packs a skill folder as a deterministic plain-ustar `.tar.gz` (sorted names, zero times and
/// owners, mode 0644 files and 0755 folders), checking first what extraction would refuse: a
/// link, a special file, a hidden or oddly named file. Returns the archive and the front matter.
pub fn pack_skill(folder: &Path) -> Result<(Vec<u8>, SkillFrontmatter)> {
    let text = std::fs::read_to_string(folder.join(SKILL_FILE))
        .map_err(|e| Error::io(format!("read {}", folder.join(SKILL_FILE).display()), e))?;
    let (front, _) = skill_md::check_published(&text, None)
        .map_err(|why| Error::rejected(Rejection::SkillInvalid(why)))?;
    let mut directories = Vec::new();
    let mut files = Vec::new();
    collect(folder, "", 0, &mut directories, &mut files)?;
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    for name in &directories {
        let mut header = napp::entry_header(tar::EntryType::Directory, 0o755, 0);
        napp::append_entry(
            &mut builder,
            &mut header,
            &format!("{name}/"),
            std::io::empty(),
        )?;
    }
    for (name, path) in &files {
        let file = std::fs::File::open(path)
            .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
        let size = file
            .metadata()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?
            .len();
        let mut header = napp::entry_header(tar::EntryType::Regular, 0o644, size);
        napp::append_entry(&mut builder, &mut header, name, file)?;
    }
    let archive = builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .map_err(|e| Error::io("finish the archive", e))?;
    Ok((archive, front))
}

fn collect(
    dir: &Path,
    prefix: &str,
    depth: usize,
    directories: &mut Vec<String>,
    files: &mut Vec<(String, PathBuf)>,
) -> Result<()> {
    let mut children: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(format!("list {}", dir.display()), e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
    children.sort_by_key(|entry| entry.file_name());
    for child in children {
        let name = format!("{prefix}{}", child.file_name().to_string_lossy());
        let kind = child
            .file_type()
            .map_err(|e| Error::io(format!("stat {}", child.path().display()), e))?;
        if kind.is_symlink() {
            return Err(Error::rejected(Rejection::Link(name)));
        }
        classify(name.as_bytes(), kind.is_dir(), &SkillLimits::default())
            .map_err(Error::rejected)?;
        if kind.is_dir() {
            if depth + 1 >= MAX_DEPTH {
                return Err(Error::rejected(Rejection::NameNotAllowed(name)));
            }
            directories.push(name.clone());
            collect(
                &child.path(),
                &format!("{name}/"),
                depth + 1,
                directories,
                files,
            )?;
        } else if kind.is_file() {
            files.push((name, child.path()));
        } else {
            return Err(Error::rejected(Rejection::SpecialFile(name)));
        }
    }
    Ok(())
}

/// Where an installed store skill came from (its [`RECORD_FILE`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillRecord {
    pub name: String,
    pub version: String,
    /// The store's address when it was installed.
    pub store_url: String,
    /// The archive's SHA-256 and the key that signed it.
    pub sha256: String,
    pub key_id: String,
    /// Seconds since the Unix epoch.
    pub installed_at: u64,
}

/// What the person approved for an install: the store's entry as shown. The install refuses an
/// archive the store changed since (another version or other bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillExpectation {
    pub version: String,
    pub sha256: String,
}

/// What an install did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkillInstallOutcome {
    pub name: String,
    pub version: String,
    /// The version it replaced, for an update.
    pub from_version: Option<String>,
    pub files: Vec<String>,
    pub path: PathBuf,
}

/// The person's skill folder as the store sees it.
#[derive(Clone, Debug)]
pub struct SkillInstaller {
    skills_dir: PathBuf,
    limits: SkillLimits,
}

impl SkillInstaller {
    pub fn new(skills_dir: impl Into<PathBuf>) -> SkillInstaller {
        SkillInstaller {
            skills_dir: skills_dir.into(),
            limits: SkillLimits::default(),
        }
    }

    pub fn skills_dir(&self) -> &Path {
        &self.skills_dir
    }

    /// The record of the store skill `name`, when one is installed here.
    pub fn record(&self, name: &str) -> Option<SkillRecord> {
        skill_md::check_name(name).ok()?;
        let folder = self.skills_dir.join(name);
        // A plain folder only: a link in its place is no store install.
        if !std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()) {
            return None;
        }
        let bytes = std::fs::read(folder.join(RECORD_FILE)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Every store skill installed here, by name.
    pub fn installed(&self) -> Vec<SkillRecord> {
        let Ok(entries) = std::fs::read_dir(&self.skills_dir) else {
            return Vec::new();
        };
        let mut records: Vec<SkillRecord> = entries
            .flatten()
            .filter_map(|entry| self.record(&entry.file_name().to_string_lossy()))
            .collect();
        records.sort_by(|a, b| a.name.cmp(&b.name));
        records
    }

    /// Downloads the store skill `name`, verifies its archive against the store's key (fail
    /// closed: a key that cannot be had or a signature that does not verify refuses it before
    /// anything is unpacked), unpacks it with every check and places it in the skill folder:
    /// new, or replacing an earlier store install of it. A folder of that name that the store
    /// did not install (the person's own skill) is never replaced. With `expected`, the store's
    /// entry must still be the version and archive the person approved.
    pub async fn install_from_store(
        &self,
        client: &StoreClient,
        trust: &Trust,
        name: &str,
        expected: Option<&SkillExpectation>,
    ) -> Result<SkillInstallOutcome> {
        skill_md::check_name(name)
            .map_err(|why| Error::NotInstalled(format!("`{name}` is not a skill name: {why}")))?;
        let entry = client.skill(name).await?;
        let version = entry["version"].as_str().unwrap_or_default().to_string();
        let signature: ArchiveSignature = serde_json::from_value(entry["signature"].clone())
            .map_err(|e| {
                Error::StoreUnavailable(format!(
                    "the store's entry for `{name}` has no valid signature: {e}"
                ))
            })?;
        if let Some(expected) = expected
            && (expected.version != version || expected.sha256 != signature.sha256)
        {
            return Err(Error::StoreRefused {
                code: "changed".into(),
                message: format!(
                    "the store's `{name}` changed since it was approved ({} {} then, {version} \
                     now): ask again",
                    expected.version,
                    short(&expected.sha256)
                ),
            });
        }
        let archive = client.download_skill(name, &version).await?;
        let key = trust.key_for(&signature.key_id).await?;
        key.verify_archive(&signature, &archive)?;
        // The store's revocation list covers skills too (and fails closed as for apps).
        trust
            .check(crate::trust::RevokedKind::Skill, name, &version)
            .await?;

        std::fs::create_dir_all(&self.skills_dir)
            .map_err(|e| Error::io(format!("create {}", self.skills_dir.display()), e))?;
        let staged = extract_skill(&archive[..], &self.skills_dir, &self.limits, Some(name))?;
        let record = SkillRecord {
            name: name.to_string(),
            version: version.clone(),
            store_url: client.base().to_string(),
            sha256: signature.sha256.clone(),
            key_id: signature.key_id.clone(),
            installed_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default(),
        };
        write_new(
            &staged.path().join(RECORD_FILE),
            &serde_json::to_vec_pretty(&record).unwrap_or_default(),
        )?;
        let files = staged.files().to_vec();
        let destination = self.skills_dir.join(name);
        let from_version = match std::fs::symlink_metadata(&destination) {
            Err(_) => {
                staged.commit_to(&destination)?;
                None
            }
            Ok(_) => {
                let previous = self.record(name).ok_or_else(|| {
                    Error::AlreadyInstalled(format!(
                        "{} holds a skill the store did not install (your own `{name}`); it is \
                         left as it is",
                        destination.display()
                    ))
                })?;
                self.swap_in(staged, &destination)?;
                Some(previous.version)
            }
        };
        Ok(SkillInstallOutcome {
            name: name.to_string(),
            version,
            from_version,
            files,
            path: destination,
        })
    }

    /// Replaces an installed store skill's folder with the staged one: the old folder is moved
    /// aside under a hidden name, the new one renamed in, then the old one removed.
    fn swap_in(&self, staged: StagedSkill, destination: &Path) -> Result<()> {
        let aside = tempfile::Builder::new()
            .prefix(".replaced-")
            .tempdir_in(&self.skills_dir)
            .map_err(|e| Error::io("create a folder for the replaced skill", e))?;
        let old = aside.path().join("old");
        std::fs::rename(destination, &old)
            .map_err(|e| Error::io(format!("move {} aside", destination.display()), e))?;
        if let Err(error) = staged.commit_to(destination) {
            // Put the old version back.
            let _ = std::fs::rename(&old, destination);
            return Err(error);
        }
        Ok(())
    }

    /// `(name, reason)` of each installed store skill `revocations` names (the whole skill or
    /// its installed version). Nothing is changed: the caller removes them.
    pub fn revoked_among(&self, revocations: &[crate::trust::Revocation]) -> Vec<(String, String)> {
        self.installed()
            .into_iter()
            .filter_map(|record| {
                revocations
                    .iter()
                    .find(|r| {
                        r.covers(
                            crate::trust::RevokedKind::Skill,
                            &record.name,
                            &record.version,
                        )
                    })
                    .map(|r| (record.name.clone(), r.reason.clone()))
            })
            .collect()
    }

    /// Removes the store skill `name` with its folder. A skill the store did not install is
    /// refused (`not_installed`).
    pub fn uninstall(&self, name: &str) -> Result<SkillRecord> {
        let record = self.record(name).ok_or_else(|| {
            Error::NotInstalled(format!(
                "no skill `{name}` installed from the store (your own skills are removed with \
                 the skill tool's delete)"
            ))
        })?;
        let folder = self.skills_dir.join(name);
        std::fs::remove_dir_all(&folder)
            .map_err(|e| Error::io(format!("remove {}", folder.display()), e))?;
        Ok(record)
    }
}

/// What the person approves for an install of the store skill `name`: its entry (description,
/// author, version, files) and who signed it; with the expectation the install holds the store to.
pub async fn skill_install_details(
    client: &StoreClient,
    name: &str,
    installed: Option<&SkillRecord>,
) -> Result<(osprey_types::ApprovalDetails, SkillExpectation)> {
    let entry = client.skill(name).await?;
    let text = |key: &str| entry[key].as_str().map(str::to_string);
    let version = text("version").unwrap_or_default();
    let sha256 = entry["signature"]["sha256"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let files: Vec<String> = entry["files"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let key_id = entry["signature"]["key_id"].as_str().unwrap_or_default();
    let description = text("description").unwrap_or_default();
    let title = match installed {
        Some(record) if record.version == version => {
            format!("Reinstall the skill {name} {version} from the store")
        }
        Some(record) => format!(
            "Update the skill {name} from {} to {version} from the store",
            record.version
        ),
        None => format!("Install the skill {name} {version} from the store"),
    };
    let details = osprey_types::ApprovalDetails {
        title,
        kind: "skill".into(),
        name: name.to_string(),
        id: name.to_string(),
        version: Some(version.clone()),
        publisher: text("author").or_else(|| text("publisher")),
        signer: Some(format!(
            "the store at {}, which signs what it lists with its key {key_id}",
            client.base()
        )),
        permissions: Vec::new(),
        files,
        notes: vec![
            format!("What it is for: {}", description.replace(['\n', '\r'], " ")),
            "A skill is instructions the agent reads and may follow in later turns; the scripts \
             in it run only through the shell tool, which asks as usual."
                .to_string(),
        ],
    };
    Ok((details, SkillExpectation { version, sha256 }))
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io(format!("write {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKILL: &str = "---\nname: pdf-tools\ndescription: Fill in PDF forms\nmetadata:\n  author: Ana\n  version: \"1.0.0\"\n---\n# PDF\n";

    /// A `.tar.gz` of `(name, contents)` entries written as raw ustar headers, so hostile names
    /// and entry types can be made.
    fn archive(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
        for (name, kind, data) in entries {
            let mut header = tar::Header::new_ustar();
            header.set_entry_type(*kind);
            header.set_mode(0o644);
            header.set_size(data.len() as u64);
            // Raw bytes: `set_path` refuses `..`.
            let bytes = name.as_bytes();
            header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            if kind.is_symlink() {
                header.set_link_name("/etc/passwd").unwrap();
            }
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    fn refused(bytes: &[u8]) -> &'static str {
        let dir = tempfile::tempdir().unwrap();
        let error = extract_skill(bytes, dir.path(), &SkillLimits::default(), None).unwrap_err();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing is left behind"
        );
        match error {
            Error::PackageRejected { reason } => reason.code(),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn a_packed_skill_folder_unpacks_with_its_files() {
        let source = tempfile::tempdir().unwrap();
        let folder = source.path().join("pdf-tools");
        std::fs::create_dir_all(folder.join("scripts")).unwrap();
        std::fs::write(folder.join(SKILL_FILE), SKILL).unwrap();
        std::fs::write(folder.join("scripts/fill.py"), "print(1)\n").unwrap();
        std::fs::write(folder.join("reference.md"), "# ref\n").unwrap();
        let (bytes, front) = pack_skill(&folder).unwrap();
        assert_eq!(front.metadata["author"], "Ana");
        let into = tempfile::tempdir().unwrap();
        let staged = extract_skill(
            &bytes[..],
            into.path(),
            &SkillLimits::default(),
            Some("pdf-tools"),
        )
        .unwrap();
        assert_eq!(staged.name(), "pdf-tools");
        assert_eq!(
            staged.files(),
            ["SKILL.md", "reference.md", "scripts/fill.py"]
        );
        assert_eq!(
            std::fs::read_to_string(staged.path().join("scripts/fill.py")).unwrap(),
            "print(1)\n"
        );
        let error = extract_skill(
            &bytes[..],
            into.path(),
            &SkillLimits::default(),
            Some("other"),
        )
        .unwrap_err();
        assert_eq!(error.reason(), Some("skill_invalid"), "{error}");
    }

    #[test]
    fn hostile_archives_are_refused_and_leave_nothing() {
        use tar::EntryType::{Regular, Symlink};
        let skill = SKILL.as_bytes();
        assert_eq!(
            refused(&archive(&[
                (SKILL_FILE, Regular, skill),
                ("../evil", Regular, b"x")
            ])),
            "parent_dir"
        );
        assert_eq!(
            refused(&archive(&[
                (SKILL_FILE, Regular, skill),
                ("a/../../evil", Regular, b"x")
            ])),
            "parent_dir"
        );
        assert_eq!(
            refused(&archive(&[("/etc/evil", Regular, b"x")])),
            "absolute_path"
        );
        assert_eq!(
            refused(&archive(&[
                (SKILL_FILE, Regular, skill),
                ("link", Symlink, b"")
            ])),
            "link"
        );
        assert_eq!(
            refused(&archive(&[
                (SKILL_FILE, Regular, skill),
                (".osprey-store.json", Regular, b"{}")
            ])),
            "name_not_allowed"
        );
        assert_eq!(
            refused(&archive(&[
                (SKILL_FILE, Regular, skill),
                ("skill.md", Regular, skill)
            ])),
            "duplicate"
        );
        assert_eq!(
            refused(&archive(&[("notes.md", Regular, b"x")])),
            "missing_file"
        );
        assert_eq!(
            refused(&archive(&[(
                SKILL_FILE,
                Regular,
                b"---\nname: Bad Name\ndescription: d\n---\n"
            )])),
            "skill_invalid"
        );
        let big = vec![b'x'; 2 * 1024 * 1024];
        assert_eq!(
            refused(&archive(&[(SKILL_FILE, Regular, &big)])),
            "file_too_large"
        );
        assert_eq!(refused(b"not gzip at all"), "corrupt");
    }
}
