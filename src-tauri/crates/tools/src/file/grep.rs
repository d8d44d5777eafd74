//! `file grep`: a regex search over files with ripgrep's own libraries (`grep-regex`,
//! `grep-searcher`, `ignore`), in-process and in parallel. Prints `path:line: text` for matches
//! and `path-line- text` for context lines, like `rg -n`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use osprey_types::{ErrorCode, ToolResult};

use super::walk::{mentions_hidden, walker};
use super::{DEFAULT_GREP_LIMIT, Stop, not_found};
use crate::call::Call;
use crate::security::paths::PathGuard;

/// Characters of a matching line shown before it is cut.
const MAX_MATCH_LINE_CHARS: usize = 500;
/// Context lines are capped so a large `context` cannot turn a grep into a dump.
const MAX_CONTEXT: u64 = 20;

struct FileHits {
    path: PathBuf,
    text: String,
}

pub(crate) fn run(guard: &PathGuard, target: &Path, call: &Call, stop: &Stop) -> ToolResult {
    let Some(pattern) = call.str("pattern").filter(|p| !p.is_empty()) else {
        return ToolResult::error(ErrorCode::InvalidInput, "file grep needs `pattern`");
    };
    let limit = call.u64("limit").unwrap_or(DEFAULT_GREP_LIMIT).max(1) as usize;
    let context = call.u64("context").unwrap_or(0).min(MAX_CONTEXT) as usize;
    let case_insensitive = call.bool("case_insensitive").unwrap_or(false);
    let file_glob = call.str("glob").map(str::trim).filter(|g| !g.is_empty());

    let root = match guard.check_read(target) {
        Ok(root) => root,
        Err(refusal) => return refusal.into_result(),
    };
    let Ok(meta) = std::fs::metadata(&root) else {
        return not_found(&root);
    };
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(pattern)
    {
        Ok(matcher) => matcher,
        Err(err) => {
            return ToolResult::error(
                ErrorCode::InvalidInput,
                format!("invalid regex `{pattern}`: {err}"),
            );
        }
    };
    let mut builder = SearcherBuilder::new();
    builder
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(b'\x00'));

    let total = AtomicUsize::new(0);
    let reached = AtomicBool::new(false);
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let search = |searcher: &mut Searcher, path: &Path| -> bool {
        let mut sink = Collect::new(path, &total, limit);
        // Unreadable files (permissions, races with deletion) are skipped, as rg does.
        let _ = searcher.search_path(&matcher, path, &mut sink);
        if sink.reached {
            reached.store(true, Ordering::Relaxed);
        }
        if !sink.out.is_empty() {
            hits.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(FileHits {
                    path: path.to_path_buf(),
                    text: sink.out,
                });
        }
        !sink.reached
    };

    if meta.is_file() {
        search(&mut builder.build(), &root);
    } else {
        let mut walk = walker(guard, &root, file_glob.is_some_and(mentions_hidden));
        if let Some(glob) = file_glob {
            let overrides = OverrideBuilder::new(&root)
                .add(glob)
                .and_then(|b| b.build());
            match overrides {
                Ok(overrides) => {
                    walk.overrides(overrides);
                }
                Err(err) => {
                    return ToolResult::error(
                        ErrorCode::InvalidInput,
                        format!("invalid glob `{glob}`: {err}"),
                    );
                }
            }
        }
        let seen = AtomicUsize::new(0);
        walk.build_parallel().run(|| {
            let mut searcher = builder.build();
            let (search, reached, seen) = (&search, &reached, &seen);
            Box::new(move |entry| {
                if reached.load(Ordering::Relaxed)
                    || (seen.fetch_add(1, Ordering::Relaxed).is_multiple_of(256)
                        && stop.should_stop())
                {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                if guard.check_read(entry.path()).is_err() {
                    return WalkState::Continue;
                }
                if search(&mut searcher, entry.path()) {
                    WalkState::Continue
                } else {
                    WalkState::Quit
                }
            })
        });
    }
    if let Some(result) = stop.reason() {
        return result;
    }

    let mut hits = hits.into_inner().unwrap_or_else(|e| e.into_inner());
    if hits.is_empty() {
        let scope = match file_glob {
            Some(glob) => format!(" in files matching `{glob}`"),
            None => String::new(),
        };
        return ToolResult::text(format!(
            "no matches for /{pattern}/ under {}{scope} (hidden, binary and .gitignored files and \
             directories like node_modules are skipped)",
            root.display()
        ));
    }
    hits.sort_by(|a, b| a.path.cmp(&b.path));
    let shown = total.load(Ordering::Relaxed).min(limit);
    let files = hits.len();
    let separator = if context > 0 { "--\n" } else { "" };
    let mut out = hits
        .into_iter()
        .map(|h| h.text)
        .collect::<Vec<_>>()
        .join(separator);
    out.push_str(&format!(
        "[{shown} matching line{} in {files} file{}]\n",
        if shown == 1 { "" } else { "s" },
        if files == 1 { "" } else { "s" },
    ));
    if reached.load(Ordering::Relaxed) {
        out.push_str(&format!(
            "[stopped at the limit of {limit} matching lines; narrow the pattern or glob, or \
             raise limit]\n"
        ));
    }
    ToolResult::text(out)
}

/// Collects one file's lines, counting matches against the search-wide limit.
struct Collect<'a> {
    path: &'a Path,
    shown_path: Option<String>,
    out: String,
    total: &'a AtomicUsize,
    limit: usize,
    reached: bool,
    /// Where the before-context of the upcoming match starts, so it can be dropped when
    /// that match falls over the limit.
    pending_before: Option<usize>,
}

impl<'a> Collect<'a> {
    fn new(path: &'a Path, total: &'a AtomicUsize, limit: usize) -> Self {
        Collect {
            path,
            shown_path: None,
            out: String::new(),
            total,
            limit,
            reached: false,
            pending_before: None,
        }
    }

    fn line(&mut self, number: Option<u64>, mark: char, bytes: &[u8]) {
        let path = self
            .shown_path
            .get_or_insert_with(|| self.path.to_string_lossy().into_owned());
        self.out.push_str(path);
        self.out.push(mark);
        if let Some(n) = number {
            self.out.push_str(&n.to_string());
            self.out.push(mark);
        }
        self.out.push(' ');
        let mut end = bytes.len();
        while end > 0 && matches!(bytes[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        let text = String::from_utf8_lossy(&bytes[..end]);
        match text.char_indices().nth(MAX_MATCH_LINE_CHARS) {
            None => self.out.push_str(&text),
            Some((cut, _)) => {
                self.out.push_str(&text[..cut]);
                self.out.push_str(&format!(
                    " [... line cut at {MAX_MATCH_LINE_CHARS} characters]"
                ));
            }
        }
        self.out.push('\n');
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.total.fetch_add(1, Ordering::Relaxed) >= self.limit {
            self.reached = true;
            if let Some(start) = self.pending_before.take() {
                self.out.truncate(start);
            }
            return Ok(false);
        }
        self.pending_before = None;
        self.line(found.line_number(), ':', found.bytes());
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        if *context.kind() == SinkContextKind::Before && self.pending_before.is_none() {
            self.pending_before = Some(self.out.len());
        }
        self.line(context.line_number(), '-', context.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if !self.out.is_empty() {
            if self.pending_before.is_none() {
                self.pending_before = Some(self.out.len());
            }
            self.out.push_str("--\n");
        }
        Ok(true)
    }
}
