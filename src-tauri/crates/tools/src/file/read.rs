//! `file read`: a page of a text file with line numbers, streamed so a huge file costs only
//! the lines shown (plus a fast newline count of the rest, bounded).

#[cfg(not(unix))]
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use osprey_types::ToolResult;

use super::{DEFAULT_READ_LIMIT, Stop, failed, human_bytes, not_found};
use crate::call::Call;
use crate::security::paths::PathGuard;

/// Characters of one line shown before it is cut.
pub(crate) const MAX_LINE_CHARS: usize = 2000;
/// Bytes sniffed for binary content.
const SNIFF_BYTES: usize = 8 * 1024;
/// Output bytes after which a read stops early (and says where to continue), so a page of
/// very long lines does not blow through the model's context.
const OUTPUT_BUDGET: usize = 200 * 1024;
/// Bytes scanned past the page to count the remaining lines; beyond this the note gives the
/// size left instead of an exact count.
const COUNT_BUDGET: u64 = 256 * 1024 * 1024;

pub(crate) fn run(guard: &PathGuard, target: &Path, call: &Call, stop: &Stop) -> ToolResult {
    let path = match guard.check_read(target) {
        Ok(path) => path,
        Err(refusal) => return refusal.into_result(),
    };
    let offset = call.u64("offset").unwrap_or(1).max(1);
    let limit = call.u64("limit").unwrap_or(DEFAULT_READ_LIMIT).max(1);
    match read_page(guard, &path, offset, limit, stop) {
        Ok(text) => ToolResult::text(text),
        Err(ReadError::Result(result)) => result,
        Err(ReadError::Io(err)) => match err.kind() {
            io::ErrorKind::NotFound => not_found(&path),
            io::ErrorKind::PermissionDenied => {
                failed(format!("permission denied reading {}", path.display()))
            }
            _ => failed(format!("could not read {}: {err}", path.display())),
        },
    }
}

enum ReadError {
    Io(io::Error),
    Result(ToolResult),
}

impl From<io::Error> for ReadError {
    fn from(err: io::Error) -> Self {
        ReadError::Io(err)
    }
}

fn read_page(
    guard: &PathGuard,
    path: &Path,
    offset: u64,
    limit: u64,
    stop: &Stop,
) -> Result<String, ReadError> {
    let metadata = std::fs::metadata(path)?;
    if metadata.is_dir() {
        return Err(ReadError::Result(failed(format!(
            "{} is a directory, not a file; list it with file glob (path: \"{}\", pattern: \"*\")",
            path.display(),
            path.display()
        ))));
    }
    // Judged by what was opened: a swapped link or a hard link to a protected file is refused.
    #[cfg(unix)]
    let mut file = match super::anchored::open_read(guard, path) {
        Ok(file) => file,
        Err(super::anchored::Refused::Io(error)) => return Err(ReadError::Io(error)),
        Err(super::anchored::Refused::Guard(result)) => return Err(ReadError::Result(result)),
    };
    #[cfg(not(unix))]
    let mut file = {
        let _ = guard;
        File::open(path)?
    };
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    if let Some(why) = binary_reason(&head) {
        return Err(ReadError::Result(failed(format!(
            "{} looks like a binary file ({why}); the file tool reads text only. Inspect it with \
             the shell tool instead (e.g. `file`, `xxd | head`).",
            path.display()
        ))));
    }
    if head.is_empty() {
        return Ok(format!("(empty file: {})", path.display()));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, io::Cursor::new(head).chain(file));

    // Skip to the first wanted line without keeping anything.
    let mut line_number = 1u64;
    while line_number < offset {
        if reader.skip_until(b'\n')? == 0 {
            let total = line_number - 1;
            return Err(ReadError::Result(failed(format!(
                "offset {offset} is past the end of {}: it has {total} line{}",
                path.display(),
                if total == 1 { "" } else { "s" }
            ))));
        }
        line_number += 1;
        if line_number.is_multiple_of(8192)
            && let Some(result) = stop.reason()
        {
            return Err(ReadError::Result(result));
        }
    }

    let mut out = String::new();
    let mut line = Vec::new();
    let mut shown = 0u64;
    let mut at_end = false;
    // A line is kept up to this many bytes (MAX_LINE_CHARS of any script, plus its newline);
    // the rest is skipped without being held in memory.
    let keep = (MAX_LINE_CHARS * 4 + 1) as u64;
    while shown < limit && out.len() < OUTPUT_BUDGET {
        line.clear();
        let kept = (&mut reader).take(keep).read_until(b'\n', &mut line)?;
        if kept == 0 {
            at_end = true;
            break;
        }
        let mut extra_bytes = 0u64;
        if line.last() != Some(&b'\n') && kept as u64 == keep {
            extra_bytes = reader.skip_until(b'\n')? as u64;
        }
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        let text = String::from_utf8_lossy(&line);
        out.push_str(&format!("{line_number:>6}\t"));
        push_cut(&mut out, &text, extra_bytes);
        out.push('\n');
        shown += 1;
        line_number += 1;
        if shown.is_multiple_of(1024) && stop.should_stop() {
            break;
        }
    }
    if !at_end && reader.fill_buf()?.is_empty() {
        at_end = true;
    }
    if !at_end {
        let next = line_number;
        let (more, exact) = count_lines(&mut reader, stop)?;
        let why = if shown < limit {
            "output limit reached"
        } else {
            "..."
        };
        if exact {
            out.push_str(&format!(
                "{why} {more} more line{}; read again with offset: {next}",
                if more == 1 { "" } else { "s" }
            ));
        } else {
            let left = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            out.push_str(&format!(
                "{why} more lines follow (the file is {}); read again with offset: {next}",
                human_bytes(left)
            ));
        }
        out.push('\n');
    }
    Ok(out)
}

/// Appends `text`, cut at [`MAX_LINE_CHARS`] with a marker when longer (or when bytes were
/// already skipped past the kept part).
fn push_cut(out: &mut String, text: &str, skipped_bytes: u64) {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        None if skipped_bytes == 0 => out.push_str(text),
        cut => {
            let end = cut.map_or(text.len(), |(i, _)| i);
            out.push_str(&text[..end]);
            let total = text.len() as u64 + skipped_bytes;
            out.push_str(&format!(
                " [... line cut at {MAX_LINE_CHARS} characters; it is {} long]",
                human_bytes(total)
            ));
        }
    }
}

/// Counts the lines left in `reader`; `false` when the count stopped at the scan budget.
fn count_lines(reader: &mut impl BufRead, stop: &Stop) -> io::Result<(u64, bool)> {
    let mut lines = 0u64;
    let mut scanned = 0u64;
    loop {
        let n = reader.skip_until(b'\n')? as u64;
        if n == 0 {
            return Ok((lines, true));
        }
        lines += 1;
        scanned += n;
        if scanned > COUNT_BUDGET || (lines.is_multiple_of(65_536) && stop.should_stop()) {
            return Ok((lines, false));
        }
    }
}

/// Why `head` (the first bytes of a file) is not text, if it is not.
fn binary_reason(head: &[u8]) -> Option<String> {
    if let Some(at) = head.iter().position(|&b| b == 0) {
        return Some(format!("NUL byte at offset {at}"));
    }
    match std::str::from_utf8(head) {
        Ok(_) => None,
        // A character cut by the sniff window's end is fine.
        Err(err) if err.error_len().is_none() => None,
        Err(err) => Some(format!("not UTF-8 at byte {}", err.valid_up_to())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_sniffing() {
        assert!(binary_reason(b"plain text\n").is_none());
        assert!(binary_reason(b"a\0b").unwrap().contains("NUL"));
        assert!(
            binary_reason(&[0x66, 0xff, 0x66])
                .unwrap()
                .contains("UTF-8")
        );
        // "é" cut in half at the end of the window.
        assert!(binary_reason(&[b'a', 0xc3]).is_none());
    }

    #[test]
    fn long_lines_are_cut_on_char_boundaries() {
        let mut out = String::new();
        push_cut(&mut out, &"é".repeat(MAX_LINE_CHARS + 5), 0);
        assert!(out.starts_with(&"é".repeat(MAX_LINE_CHARS)));
        assert!(out.contains("line cut at 2000 characters"));
        let mut out = String::new();
        push_cut(&mut out, "short", 0);
        assert_eq!(out, "short");
    }
}
