//! `file write` and `file edit`. Replacing a file goes through a temporary file in the same
//! directory and a rename, so a crash or a full disk never leaves a half-written file, and
//! the original permissions are carried over.

#[cfg(not(unix))]
use std::fs::OpenOptions;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
#[cfg(not(unix))]
use std::sync::atomic::{AtomicU64, Ordering};

use osprey_types::{ErrorCode, ToolResult};

use super::{failed, human_bytes, not_found};
use crate::call::Call;
use crate::security::paths::PathGuard;

/// Files larger than this are not edited in memory.
const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

pub(crate) fn write(guard: &PathGuard, target: &Path, call: &Call) -> ToolResult {
    let path = match writable_path(guard, target) {
        Ok(path) => path,
        Err(result) => return result,
    };
    let Some(content) = call.str("content") else {
        return ToolResult::error(ErrorCode::InvalidInput, "file write needs `content`");
    };
    let append = call.bool("append").unwrap_or(false);
    let previous = fs::metadata(&path).ok();
    if let Some(meta) = &previous {
        if meta.is_dir() {
            return failed(format!(
                "{} is a directory; give a file path",
                path.display()
            ));
        }
        if meta.permissions().readonly() {
            return failed(format!("{} is read-only; not changing it", path.display()));
        }
    }
    if let Some(parent) = path.parent()
        && let Err(err) = fs::create_dir_all(parent)
    {
        return failed(format!(
            "could not create the directory {}: {err}",
            parent.display()
        ));
    }
    let bytes = content.len() as u64;
    if append {
        let outcome = match open_append(guard, &path) {
            Ok(file) => file.and_then(|mut file| file.write_all(content.as_bytes())),
            Err(refused) => return refused,
        };
        return match outcome {
            Ok(()) => {
                let now = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                ToolResult::text(format!(
                    "appended {} to {} (now {})",
                    human_bytes(bytes),
                    path.display(),
                    human_bytes(now)
                ))
            }
            Err(err) => failed(format!("could not append to {}: {err}", path.display())),
        };
    }
    match replace(guard, &path, content.as_bytes()) {
        Ok(Ok(())) => ToolResult::text(match previous {
            Some(old) => format!(
                "replaced {} ({}, was {})",
                path.display(),
                human_bytes(bytes),
                human_bytes(old.len())
            ),
            None => format!("created {} ({})", path.display(), human_bytes(bytes)),
        }),
        Ok(Err(err)) => failed(format!("could not write {}: {err}", path.display())),
        Err(refused) => refused,
    }
}

pub(crate) fn edit(guard: &PathGuard, target: &Path, call: &Call) -> ToolResult {
    let path = match writable_path(guard, target) {
        Ok(path) => path,
        Err(result) => return result,
    };
    let (Some(old_text), Some(new_text)) = (call.str("old_text"), call.str("new_text")) else {
        return ToolResult::error(
            ErrorCode::InvalidInput,
            "file edit needs `old_text` and `new_text`",
        );
    };
    if old_text.is_empty() {
        return ToolResult::error(
            ErrorCode::InvalidInput,
            "old_text is empty; give the exact text to replace (to write a whole file, use file write)",
        );
    }
    if old_text == new_text {
        return ToolResult::error(
            ErrorCode::InvalidInput,
            "old_text and new_text are the same; nothing would change",
        );
    }
    let replace_all = call.bool("replace_all").unwrap_or(false);
    let meta = match fs::metadata(&path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return not_found(&path),
        Err(err) => return failed(format!("could not read {}: {err}", path.display())),
    };
    if meta.is_dir() {
        return failed(format!("{} is a directory, not a file", path.display()));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return failed(format!(
            "{} is {}; edit works on files up to {}",
            path.display(),
            human_bytes(meta.len()),
            human_bytes(MAX_EDIT_BYTES)
        ));
    }
    if meta.permissions().readonly() {
        return failed(format!("{} is read-only; not changing it", path.display()));
    }
    let text = match read_checked(guard, &path) {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let text = match text.map(String::from_utf8) {
        Ok(Ok(text)) => text,
        Ok(Err(_)) => {
            return failed(format!(
                "{} is not UTF-8 text; edit works on text files only",
                path.display()
            ));
        }
        Err(err) => return failed(format!("could not read {}: {err}", path.display())),
    };

    let mut old = old_text.to_string();
    let mut new = new_text.to_string();
    let mut starts = match_lines(&text, &old);
    if starts.is_empty() && text.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") {
        // The model saw the file's lines without their \r; match it the way it is stored.
        old = old.replace('\n', "\r\n");
        new = new.replace('\n', "\r\n");
        starts = match_lines(&text, &old);
    }
    match starts.len() {
        0 => return failed(no_match_message(&path, &text, old_text)),
        1 => {}
        n if !replace_all => {
            return failed(format!(
                "old_text matches {n} times in {} (at lines {}); it must match exactly once. \
                 Include more surrounding lines in old_text to pick one, or set replace_all: true \
                 to replace all {n}.",
                path.display(),
                list_lines(&starts)
            ));
        }
        _ => {}
    }
    let updated = if replace_all {
        text.replace(&old, &new)
    } else {
        text.replacen(&old, &new, 1)
    };
    match replace(guard, &path, updated.as_bytes()) {
        Ok(Ok(())) => {}
        Ok(Err(err)) => return failed(format!("could not write {}: {err}", path.display())),
        Err(refused) => return refused,
    }
    let n = starts.len();
    ToolResult::text(format!(
        "edited {}: replaced {n} occurrence{} (line{} {})",
        path.display(),
        if n == 1 { "" } else { "s" },
        if n == 1 { "" } else { "s" },
        list_lines(&starts)
    ))
}

/// The guard's answer for a write, re-checked on the link's target when the answer is
/// itself a symlink (a rename would otherwise replace the link instead of writing through it).
fn writable_path(guard: &PathGuard, target: &Path) -> Result<PathBuf, ToolResult> {
    let path = guard.check_write(target).map_err(|r| r.into_result())?;
    let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(path);
    }
    match fs::canonicalize(&path) {
        Ok(real) => guard.check_write(&real).map_err(|r| r.into_result()),
        // A dangling link: writing would create its target, which we cannot check by name.
        Err(_) => Err(failed(format!(
            "{} is a symlink to a missing file; write to the target path instead",
            path.display()
        ))),
    }
}

/// 1-based line numbers where each non-overlapping occurrence of `needle` starts.
fn match_lines(text: &str, needle: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let mut line = 1;
    let mut scanned = 0;
    for (at, _) in text.match_indices(needle) {
        line += text[scanned..at].bytes().filter(|&b| b == b'\n').count();
        scanned = at;
        lines.push(line);
    }
    lines
}

fn list_lines(lines: &[usize]) -> String {
    let mut shown: Vec<String> = lines.iter().take(10).map(|l| l.to_string()).collect();
    if lines.len() > 10 {
        shown.push(format!("and {} more", lines.len() - 10));
    }
    shown.join(", ")
}

fn no_match_message(path: &Path, text: &str, old_text: &str) -> String {
    let mut message = format!(
        "old_text was not found in {} (0 matches); it must match the file exactly, including \
         whitespace and indentation.",
        path.display()
    );
    let looks_numbered = old_text.lines().next().is_some_and(|first| {
        let trimmed = first.trim_start();
        let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && trimmed[digits..].starts_with('\t')
    });
    if looks_numbered {
        message.push_str(
            " It seems to include the line-number prefixes that file read shows; leave those out.",
        );
    } else if old_text.trim() != old_text && text.contains(old_text.trim()) {
        message.push_str(
            " It does match with its leading/trailing whitespace removed; check that whitespace.",
        );
    } else if text.to_lowercase().contains(&old_text.to_lowercase()) {
        message.push_str(" It matches when case is ignored; check the capitalisation.");
    }
    message.push_str(" Read the file again and copy the text exactly.");
    message
}

/// Anchored on Unix: the refusal of what a write really reaches, or the I/O outcome.
type Checked<T> = Result<io::Result<T>, ToolResult>;

#[cfg(unix)]
fn split<T>(outcome: Result<T, super::anchored::Refused>) -> Checked<T> {
    match outcome {
        Ok(value) => Ok(Ok(value)),
        Err(super::anchored::Refused::Io(error)) => Ok(Err(error)),
        Err(super::anchored::Refused::Guard(result)) => Err(result),
    }
}

/// The file's bytes, read through the checked directory (a file swapped for a link or a hard
/// link to a protected file is refused).
fn read_checked(guard: &PathGuard, path: &Path) -> Checked<Vec<u8>> {
    #[cfg(unix)]
    {
        use std::io::Read;
        split((|| {
            let anchor = super::anchored::Anchor::for_write(guard, path)?;
            let mut file = anchor
                .read_existing(guard)?
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the file is gone"))?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            Ok(bytes)
        })())
    }
    #[cfg(not(unix))]
    {
        let _ = guard;
        Ok(fs::read(path))
    }
}

/// The file opened to append, in its checked directory.
fn open_append(guard: &PathGuard, path: &Path) -> Checked<File> {
    #[cfg(unix)]
    {
        split(super::anchored::Anchor::for_write(guard, path).and_then(|a| a.append(guard)))
    }
    #[cfg(not(unix))]
    {
        let _ = guard;
        Ok(OpenOptions::new().create(true).append(true).open(path))
    }
}

/// Replaces `path` with `data` through a temporary file and a rename, keeping the original
/// file's permissions; on Unix everything happens in the directory that was checked.
fn replace(guard: &PathGuard, path: &Path, data: &[u8]) -> Checked<()> {
    #[cfg(unix)]
    {
        split(replace_anchored(guard, path, data))
    }
    #[cfg(not(unix))]
    {
        let _ = guard;
        Ok(replace_atomically(path, data))
    }
}

#[cfg(unix)]
fn replace_anchored(
    guard: &PathGuard,
    path: &Path,
    data: &[u8],
) -> Result<(), super::anchored::Refused> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let anchor = super::anchored::Anchor::for_write(guard, path)?;
    let permissions = anchor
        .read_existing(guard)?
        .and_then(|f| f.metadata().ok())
        .map(|m| m.permissions());
    let (mut temp, temp_name) = anchor.temp(&name)?;
    let written = (|| {
        temp.write_all(data)?;
        if let Some(permissions) = permissions {
            temp.set_permissions(permissions)?;
        }
        temp.sync_all()
    })();
    drop(temp);
    let outcome = written
        .map_err(super::anchored::Refused::Io)
        .and_then(|()| anchor.commit(&temp_name));
    if outcome.is_err() {
        anchor.discard(&temp_name);
    }
    outcome
}

/// Replaces `path` with `data` through a temporary file in the same directory and a rename,
/// keeping the original file's permissions.
#[cfg(not(unix))]
fn replace_atomically(path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let permissions = fs::metadata(path).ok().map(|m| m.permissions());
    let (temp_path, mut temp) = create_temp(dir, &name)?;
    let outcome = (|| {
        temp.write_all(data)?;
        if let Some(permissions) = permissions {
            temp.set_permissions(permissions)?;
        }
        temp.sync_all()?;
        drop(temp);
        fs::rename(&temp_path, path)
    })();
    if outcome.is_err() {
        let _ = fs::remove_file(&temp_path);
    }
    outcome
}

#[cfg(not(unix))]
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last_error = None;
    for _ in 0..64 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let candidate = dir.join(format!(".{name}.{}.{n}.osprey-tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(file) => return Ok((candidate, file)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last_error = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("no free temporary file name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_lines_counts_lines_of_each_occurrence() {
        assert_eq!(match_lines("a\nb x\nc\nx x\n", "x"), vec![2, 4, 4]);
        assert!(match_lines("abc", "z").is_empty());
    }

    #[test]
    fn no_match_hints() {
        let p = Path::new("/f");
        assert!(no_match_message(p, "fn main() {}", "    12\tfn main").contains("line-number"));
        assert!(
            no_match_message(p, "fn main() {}", "  fn main()  ").contains("whitespace removed")
        );
        assert!(no_match_message(p, "fn main() {}", "FN MAIN").contains("case"));
    }
}
