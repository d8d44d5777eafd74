//! File search by name and content, a walk with ripgrep's libraries (`ignore` for the walk:
//! hidden files and ignore files respected; `grep-searcher` + `grep-regex` for content), bounded
//! by a result limit, a count of files looked at, a file size cap for content and a deadline.

use std::path::{Path, PathBuf};
use std::time::Instant;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};

use crate::error::{Error, Result};

/// One search.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    pub roots: Vec<PathBuf>,
    /// File name: a glob (`*.pdf`) when it has `*?[`, else a case-insensitive part of the name.
    pub name: Option<String>,
    /// A regular expression the content must match (case-insensitive unless it has capitals).
    pub content: Option<String>,
    pub limit: usize,
    /// Stop after looking at this many files.
    pub max_files: usize,
    /// Files bigger than this are not searched for content.
    pub max_content_bytes: u64,
    pub include_hidden: bool,
    pub deadline: Instant,
}

/// A file found, with the first matching line when content was searched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchHit {
    pub path: PathBuf,
    pub line: Option<(u64, String)>,
}

#[derive(Clone, Debug, Default)]
pub struct SearchOutcome {
    pub hits: Vec<SearchHit>,
    pub files_seen: usize,
    /// Why the walk stopped early, when it did.
    pub stopped: Option<String>,
}

enum NameMatch {
    Glob(globset::GlobMatcher),
    Part(String),
}

impl NameMatch {
    fn new(pattern: &str) -> Result<NameMatch> {
        if pattern.contains(['*', '?', '[']) {
            let glob = globset::GlobBuilder::new(pattern)
                .case_insensitive(true)
                .literal_separator(true)
                .build()
                .map_err(|e| Error::invalid(format!("bad name pattern {pattern:?}: {e}")))?;
            Ok(NameMatch::Glob(glob.compile_matcher()))
        } else {
            Ok(NameMatch::Part(pattern.to_lowercase()))
        }
    }

    fn matches(&self, path: &Path) -> bool {
        let Some(name) = path.file_name() else {
            return false;
        };
        match self {
            NameMatch::Glob(glob) => glob.is_match(name),
            NameMatch::Part(part) => name.to_string_lossy().to_lowercase().contains(part),
        }
    }
}

/// Runs the search, skipping files `allowed` refuses (credential stores, Osprey's data).
/// Blocking: call from a blocking thread.
pub fn search(request: &SearchRequest, allowed: &dyn Fn(&Path) -> bool) -> Result<SearchOutcome> {
    if request.name.is_none() && request.content.is_none() {
        return Err(Error::invalid(
            "search needs `query` (a file name or glob) or `content` (a pattern), or both",
        ));
    }
    let name = request.name.as_deref().map(NameMatch::new).transpose()?;
    let matcher = request
        .content
        .as_deref()
        .map(|pattern| {
            RegexMatcherBuilder::new()
                .case_smart(true)
                .build(pattern)
                .map_err(|e| Error::invalid(format!("bad content pattern {pattern:?}: {e}")))
        })
        .transpose()?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .build();
    let Some((first, rest)) = request.roots.split_first() else {
        return Err(Error::invalid("no folder to search in"));
    };
    for root in &request.roots {
        if !root.is_dir() {
            return Err(Error::invalid(format!(
                "{} is not a folder",
                root.display()
            )));
        }
    }
    let mut walk = ignore::WalkBuilder::new(first);
    for root in rest {
        walk.add(root);
    }
    walk.hidden(!request.include_hidden)
        .follow_links(false)
        .require_git(false);
    let mut outcome = SearchOutcome::default();
    for entry in walk.build() {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        outcome.files_seen += 1;
        if outcome.files_seen > request.max_files {
            outcome.stopped = Some(format!(
                "looked at {} files, the limit; name a narrower folder with `path`",
                request.max_files
            ));
            break;
        }
        if outcome.files_seen % 256 == 0 && Instant::now() >= request.deadline {
            outcome.stopped = Some("ran out of time; name a narrower folder with `path`".into());
            break;
        }
        let path = entry.path();
        if name.as_ref().is_some_and(|n| !n.matches(path)) || !allowed(path) {
            continue;
        }
        let line = match &matcher {
            None => None,
            Some(matcher) => {
                if entry
                    .metadata()
                    .is_ok_and(|m| m.len() > request.max_content_bytes)
                {
                    continue;
                }
                let mut found = None;
                let sink = UTF8(|number, text| {
                    let text = text.trim_end();
                    let text: String = text.chars().take(200).collect();
                    found = Some((number, text));
                    Ok(false)
                });
                if searcher.search_path(matcher, path, sink).is_err() {
                    continue;
                }
                match found {
                    Some(found) => Some(found),
                    None => continue,
                }
            }
        };
        outcome.hits.push(SearchHit {
            path: path.to_path_buf(),
            line,
        });
        if outcome.hits.len() >= request.limit {
            outcome.stopped = Some(format!("stopped at the limit of {} results", request.limit));
            break;
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn request(root: &Path) -> SearchRequest {
        SearchRequest {
            roots: vec![root.to_path_buf()],
            name: None,
            content: None,
            limit: 50,
            max_files: 10_000,
            max_content_bytes: 1 << 20,
            include_hidden: false,
            deadline: Instant::now() + Duration::from_secs(10),
        }
    }

    #[test]
    fn finds_by_name_glob_and_content_within_limits() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("notes/deep")).unwrap();
        std::fs::write(root.join("notes/Budget 2026.txt"), "rent\ngroceries: 120\n").unwrap();
        std::fs::write(
            root.join("notes/deep/plan.md"),
            "# Plan\nGroceries on friday\n",
        )
        .unwrap();
        std::fs::write(root.join("notes/photo.png"), b"\x89PNG\x00\x00groceries").unwrap();
        std::fs::write(root.join(".hidden.txt"), "groceries").unwrap();

        let mut by_name = request(root);
        by_name.name = Some("budget".into());
        let found = search(&by_name, &|_| true).unwrap();
        assert_eq!(found.hits.len(), 1);
        assert!(found.hits[0].path.ends_with("Budget 2026.txt"));

        let mut by_glob = request(root);
        by_glob.name = Some("*.MD".into());
        let found = search(&by_glob, &|_| true).unwrap();
        assert_eq!(found.hits.len(), 1, "{found:?}");

        let mut by_content = request(root);
        by_content.content = Some("groceries".into());
        let found = search(&by_content, &|_| true).unwrap();
        let mut lines: Vec<_> = found.hits.iter().map(|h| h.line.clone().unwrap()).collect();
        lines.sort();
        // The binary file and the hidden one are skipped; matching is case-insensitive.
        assert_eq!(
            lines,
            vec![
                (2, "Groceries on friday".to_string()),
                (2, "groceries: 120".to_string())
            ]
        );

        let mut limited = request(root);
        limited.content = Some("groceries".into());
        limited.limit = 1;
        let found = search(&limited, &|_| true).unwrap();
        assert_eq!(found.hits.len(), 1);
        assert!(found.stopped.unwrap().contains("limit of 1"));

        let mut bad = request(root);
        bad.content = Some("(".into());
        assert!(matches!(
            search(&bad, &|_| true),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            search(&request(root), &|_| true),
            Err(Error::InvalidInput(_))
        ));
    }
}
