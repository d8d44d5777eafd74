//! What the `calendar` and `contacts` resources share beyond the server: the files of import and
//! export (checked like the tool's other paths, with a size limit), the UIDs Osprey derives so a
//! repeated create or import finds the first object instead of making a duplicate, deleting by
//! UID, and what an import or a create that found its object says. The listings and the
//! iCalendar and vCard bodies stay in `calendar.rs` and `contacts.rs`: they differ.

use std::path::{Path, PathBuf};

use osprey_tools::Call;

use super::{Collection, Dav, Kind, Located, short_hash};
use crate::error::{Error, Result};
use crate::tool::count;

/// Largest .ics or .vcf file imported.
pub(crate) const MAX_FILE: u64 = 32 << 20;

/// Checks a path for reading (`false`) or writing (`true`) as the tool's other file paths are.
pub(crate) type PathCheck<'a> = &'a (dyn Fn(&str, bool) -> Result<PathBuf> + Send + Sync);

/// The checked `path` of an import (`write` false) or export.
pub(crate) fn file_path(
    call: &Call,
    kind: Kind,
    paths: PathCheck<'_>,
    write: bool,
) -> Result<PathBuf> {
    match call.str("path").map(str::trim).filter(|p| !p.is_empty()) {
        Some(path) => paths(path, write),
        None => Err(Error::invalid(format!(
            "{} {} needs `path`: the absolute path of the .{} file",
            call.resource(),
            call.action(),
            kind.extension()
        ))),
    }
}

/// A file to import, at most [`MAX_FILE`] bytes, as text.
pub(crate) async fn read_file(path: &Path) -> Result<String> {
    let size = tokio::fs::metadata(path)
        .await
        .map_err(|e| Error::invalid(format!("reading {}: {e}", path.display())))?
        .len();
    if size > MAX_FILE {
        return Err(Error::invalid(format!(
            "{} has {size} bytes; at most {MAX_FILE} are imported",
            path.display()
        )));
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|e| Error::invalid(format!("reading {}: {e}", path.display())))?;
    String::from_utf8(bytes)
        .map_err(|_| Error::invalid(format!("{} is not UTF-8 text", path.display())))
}

/// Writes an export (the file is replaced).
pub(crate) async fn write_file(path: &Path, content: &str) -> Result<()> {
    tokio::fs::write(path, content)
        .await
        .map_err(|e| Error::Failed(format!("writing {}: {e}", path.display())))
}

/// The UID Osprey gives an object that came without one: `osprey-` and a hash of what makes it
/// the same object (lower-cased title, start and calendar; name, first address and book), so the
/// same create or import twice finds the first. The parts are joined as they always were, so
/// UIDs derived before stay the same.
pub(crate) fn derived_uid(parts: &[&str]) -> String {
    format!("osprey-{}", short_hash(&parts.join("\n")))
}

impl Dav {
    /// Creates an object under its UID, only where nothing is yet: `created` says what was
    /// made (given the collection's label); finding it there already is no error and says so.
    pub(crate) async fn create_once(
        &self,
        collection: &Collection,
        accounts: usize,
        kind: Kind,
        uid: &str,
        text: String,
        created: impl FnOnce(&str) -> String,
    ) -> Result<String> {
        let url = collection.object_url(uid, kind)?;
        let label = collection.label(accounts);
        Ok(if self.create(collection, kind, &url, text).await? {
            created(&label)
        } else {
            format!(
                "Not created again: {label} already has the {} with uid {uid} (the same create \
                 ran before, or that uid is taken), so there is no duplicate. Use update to \
                 change it.",
                kind.object_word()
            )
        })
    }

    /// Stores the objects of an imported file (UID, text) in `collection`, each only where
    /// nothing is yet, and says how many were stored and how many were there already.
    pub(crate) async fn import_objects(
        &self,
        collection: &Collection,
        accounts: usize,
        kind: Kind,
        objects: Vec<(String, String)>,
        path: &Path,
    ) -> Result<String> {
        let (mut created, mut there) = (0, 0);
        for (uid, text) in objects {
            let url = collection.object_url(&uid, kind)?;
            if self.create(collection, kind, &url, text).await? {
                created += 1;
            } else {
                there += 1;
            }
        }
        Ok(format!(
            "Imported {} from {} into {}{}.",
            count(created, kind.object_word()),
            path.display(),
            collection.label(accounts),
            match there {
                0 => String::new(),
                1 => "; 1 was already there (same uid) and was left as it is".into(),
                n => format!("; {n} were already there (same uid) and were left as they are"),
            }
        ))
    }

    /// Deletes the object the call's `uid` names (only if it is still the version the model
    /// was shown); `name` reads what to call it from its text and UID.
    pub(crate) async fn delete_by_uid(
        &self,
        kind: Kind,
        call: &Call,
        name: impl Fn(&str, &str) -> Option<String>,
    ) -> Result<String> {
        let Located {
            collection,
            object,
            uid,
            accounts,
        } = self.locate(kind, call).await?;
        let called = name(&object.text, &uid).unwrap_or_default();
        Ok(if self.remove(&collection, kind, &object).await? {
            format!(
                "Deleted the {} {called:?} (uid {uid}) from {}.",
                kind.object_word(),
                collection.label(accounts)
            )
        } else {
            format!("The {} {uid} was already gone.", kind.object_word())
        })
    }
}
