//! File search by name and content: through the desktop's file index where one runs and holds
//! the folders asked about (Tracker on Linux, [`FileIndex`]), and a walk with ripgrep's libraries
//! everywhere else (`ignore` for the walk: hidden files and ignore files respected;
//! `grep-searcher` + `grep-regex` for content). Whatever the index offers is checked on disk
//! with the same matcher as the walk, so an out-of-date index never returns a file that does not
//! match. Bounded by a result limit, a count of files looked at, a file size cap for content and a
//! deadline.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
    /// Ask the desktop's index first where it holds the folders (off: walk every file).
    pub use_index: bool,
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
    /// How the files were found: which folders the desktop's index answered for, or why it did
    /// not (none runs, still indexing, a pattern only a full read can match).
    pub source: Option<String>,
}

/// The desktop's file index, where the platform has one.
#[allow(async_fn_in_trait)]
pub trait FileIndex {
    /// Whether an index runs and is up to date (and, with `content`, holds files' words), and
    /// the folders whose whole tree it holds.
    async fn index_state(&self, content: bool) -> IndexState {
        let _ = content;
        IndexState::Absent
    }

    /// Files under `query.under` that may match; each is checked on disk before it is shown.
    async fn index_candidates(&self, query: &IndexQuery) -> Result<Vec<PathBuf>> {
        let _ = query;
        Err(Error::unsupported("a desktop file index"))
    }
}

#[derive(Clone, Debug)]
pub enum IndexState {
    Ready {
        index: &'static str,
        trees: Vec<PathBuf>,
    },
    /// An index runs but cannot answer now, and why.
    Unavailable(String),
    /// No index runs here (the search walks and says nothing of it).
    Absent,
}

/// What the index is asked: files under a folder, by name (a regular expression, case
/// insensitive) and by a word of their text (matched from the start of a word).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexQuery {
    pub under: PathBuf,
    pub name_regex: Option<String>,
    pub word: Option<String>,
    pub limit: usize,
}

/// The most a search waits for the desktop's index before it walks instead.
const INDEX_BUDGET: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether a path may be shown (credential stores and Osprey's data may not).
pub type Allowed = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

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

    /// The same match as a regular expression for the index (anchored for a glob).
    fn regex(pattern: &str) -> String {
        let escape = |c: char, out: &mut String| {
            if "\\.^$|?*+()[]{}".contains(c) {
                out.push('\\');
            }
            out.push(c);
        };
        let mut out = String::new();
        if !pattern.contains(['*', '?', '[']) {
            pattern.chars().for_each(|c| escape(c, &mut out));
            return out;
        }
        out.push('^');
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => out.push_str("[^/]*"),
                '?' => out.push_str("[^/]"),
                '[' => {
                    out.push('[');
                    if chars.peek() == Some(&'!') {
                        chars.next();
                        out.push('^');
                    }
                    for c in chars.by_ref() {
                        if c == '\\' {
                            out.push_str("\\\\");
                            continue;
                        }
                        out.push(c);
                        if c == ']' {
                            break;
                        }
                    }
                }
                c => escape(c, &mut out),
            }
        }
        out.push('$');
        out
    }
}

/// The longest word of a content pattern that is only words (letters and digits), which the
/// index can look up; `None` for a pattern only reading every file can match.
fn index_word(pattern: &str) -> Option<String> {
    let words: Vec<&str> = pattern.split_whitespace().collect();
    if words.is_empty() || !words.iter().all(|w| w.chars().all(char::is_alphanumeric)) {
        return None;
    }
    words
        .into_iter()
        .max_by_key(|w| w.chars().count())
        .map(str::to_lowercase)
}

/// The name and content tests every file found goes through, walked or offered by the index.
struct Matcher {
    name: Option<NameMatch>,
    content: Option<grep_regex::RegexMatcher>,
    searcher: grep_searcher::Searcher,
    max_content_bytes: u64,
}

impl Matcher {
    fn new(request: &SearchRequest) -> Result<Matcher> {
        if request.name.is_none() && request.content.is_none() {
            return Err(Error::invalid(
                "search needs `query` (a file name or glob) or `content` (a pattern), or both",
            ));
        }
        let content = request
            .content
            .as_deref()
            .map(|pattern| {
                RegexMatcherBuilder::new()
                    .case_smart(true)
                    .build(pattern)
                    .map_err(|e| Error::invalid(format!("bad content pattern {pattern:?}: {e}")))
            })
            .transpose()?;
        Ok(Matcher {
            name: request.name.as_deref().map(NameMatch::new).transpose()?,
            content,
            searcher: SearcherBuilder::new()
                .binary_detection(BinaryDetection::quit(b'\x00'))
                .line_number(true)
                .build(),
            max_content_bytes: request.max_content_bytes,
        })
    }

    /// The hit for a file (with its first matching line when content is searched), if it
    /// matches.
    fn check(
        &mut self,
        path: &Path,
        size: Option<u64>,
        allowed: &dyn Fn(&Path) -> bool,
    ) -> Option<SearchHit> {
        if self.name.as_ref().is_some_and(|n| !n.matches(path)) || !allowed(path) {
            return None;
        }
        let line = match &self.content {
            None => None,
            Some(matcher) => {
                if size.is_some_and(|size| size > self.max_content_bytes) {
                    return None;
                }
                let mut found = None;
                let sink = UTF8(|number, text| {
                    let text = text.trim_end();
                    let text: String = text.chars().take(200).collect();
                    found = Some((number, text));
                    Ok(false)
                });
                self.searcher.search_path(matcher, path, sink).ok()?;
                Some(found?)
            }
        };
        Some(SearchHit {
            path: path.to_path_buf(),
            line,
        })
    }
}

/// What the index answers for: the folders it covers (the walk skips them) and the files it
/// offered there.
#[derive(Default)]
struct IndexPlan {
    covered: HashSet<PathBuf>,
    candidates: Vec<PathBuf>,
    source: Option<String>,
}

/// Asks the index for the folders it holds whole, when it can answer this search.
async fn plan(index: &impl FileIndex, request: &SearchRequest) -> IndexPlan {
    let not_used = |why: String| IndexPlan {
        source: Some(format!("searched by walking the folders: {why}")),
        ..IndexPlan::default()
    };
    if !request.use_index {
        return IndexPlan::default();
    }
    let (name, trees) = match index.index_state(request.content.is_some()).await {
        IndexState::Ready { index, trees } => (index, trees),
        IndexState::Unavailable(why) => return not_used(why),
        IndexState::Absent => return IndexPlan::default(),
    };
    if request.include_hidden {
        return not_used(format!("{name} leaves hidden files out"));
    }
    let word = request.content.as_deref().and_then(index_word);
    if request.content.is_some() && word.is_none() {
        return not_used(format!(
            "{name} finds words, and this pattern needs every file read"
        ));
    }
    // Each root inside an indexed tree is asked whole; trees inside a root are asked and left
    // out of the walk.
    let mut folders: Vec<PathBuf> = Vec::new();
    for root in &request.roots {
        match trees.iter().find(|tree| root.starts_with(tree)) {
            Some(_) => folders.push(root.clone()),
            None => folders.extend(trees.iter().filter(|t| t.starts_with(root)).cloned()),
        }
    }
    folders.sort();
    folders.dedup_by(|later, earlier| later.starts_with(earlier));
    let mut plan = IndexPlan::default();
    let mut failed = None;
    let mut capped = false;
    for folder in folders {
        let query = IndexQuery {
            under: folder.clone(),
            name_regex: request.name.as_deref().map(NameMatch::regex),
            word: word.clone(),
            limit: (request.limit * 20).clamp(200, 5000),
        };
        match index.index_candidates(&query).await {
            Ok(found) => {
                capped |= found.len() >= query.limit;
                plan.candidates.extend(found);
                plan.covered.insert(folder);
            }
            Err(e) => failed = Some(e.to_string()),
        }
    }
    let mut covered: Vec<String> = plan
        .covered
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    covered.sort();
    plan.source = match (covered.is_empty(), failed) {
        (true, Some(why)) => Some(format!(
            "searched by walking the folders: {name} failed ({why})"
        )),
        (true, None) => Some(format!(
            "searched by walking the folders: {name} does not index them"
        )),
        (false, failed) => Some(format!(
            "{} from the desktop's index ({name}){}, the rest by walking; `index: false` reads every file{}{}",
            covered.join(", "),
            if word.is_some() {
                ", matching words from their start"
            } else {
                ""
            },
            if capped {
                "; the index offered as many files as it was asked for, so more may match: \
                 narrow the query"
            } else {
                ""
            },
            failed
                .map(|why| format!(" ({name} failed for a folder: {why})"))
                .unwrap_or_default()
        )),
    };
    plan
}

/// Runs the search: the index's offers for the folders it holds (checked on disk), then a walk
/// of the rest, skipping files `allowed` refuses.
pub async fn run(
    index: &impl FileIndex,
    request: SearchRequest,
    allowed: Allowed,
) -> Result<SearchOutcome> {
    let matcher = Matcher::new(&request)?;
    check_roots(&request.roots)?;
    // An index that does not answer in time is not waited for: the folders are walked.
    let budget = INDEX_BUDGET.min(request.deadline.saturating_duration_since(Instant::now()) / 2);
    let plan = match tokio::time::timeout(budget, plan(index, &request)).await {
        Ok(plan) => plan,
        Err(_) => IndexPlan {
            source: Some(format!(
                "searched by walking the folders: the desktop index did not answer within {} ms",
                budget.as_millis()
            )),
            ..IndexPlan::default()
        },
    };
    tokio::task::spawn_blocking(move || Ok(search_with(&request, matcher, plan, &*allowed)))
        .await
        .map_err(|e| Error::Failed(e.to_string()))?
}

/// Runs the search by walking only, skipping files `allowed` refuses. Blocking: call from a
/// blocking thread.
pub fn search(request: &SearchRequest, allowed: &dyn Fn(&Path) -> bool) -> Result<SearchOutcome> {
    let matcher = Matcher::new(request)?;
    check_roots(&request.roots)?;
    Ok(search_with(request, matcher, IndexPlan::default(), allowed))
}

fn check_roots(roots: &[PathBuf]) -> Result<()> {
    if roots.is_empty() {
        return Err(Error::invalid("no folder to search in"));
    }
    match roots.iter().find(|root| !root.is_dir()) {
        Some(root) => Err(Error::invalid(format!(
            "{} is not a folder",
            root.display()
        ))),
        None => Ok(()),
    }
}

fn search_with(
    request: &SearchRequest,
    mut matcher: Matcher,
    plan: IndexPlan,
    allowed: &dyn Fn(&Path) -> bool,
) -> SearchOutcome {
    let mut outcome = SearchOutcome {
        source: plan.source,
        ..SearchOutcome::default()
    };
    // An offer is taken only inside a folder asked about, and like the walk, not when a name
    // beneath that folder is hidden.
    let acceptable = |path: &Path| {
        request.roots.iter().any(|root| {
            path.strip_prefix(root).is_ok_and(|inside| {
                request.include_hidden
                    || !inside
                        .components()
                        .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
            })
        })
    };
    let mut offered = HashSet::new();
    for path in plan.candidates {
        if !offered.insert(path.clone()) || !acceptable(&path) {
            continue;
        }
        let Ok(metadata) = std::fs::symlink_metadata(&path) else {
            continue; // gone since it was indexed
        };
        if !metadata.is_file() {
            continue;
        }
        outcome.files_seen += 1;
        if let Some(hit) = matcher.check(&path, Some(metadata.len()), allowed) {
            outcome.hits.push(hit);
            if outcome.hits.len() >= request.limit {
                outcome.stopped =
                    Some(format!("stopped at the limit of {} results", request.limit));
                return outcome;
            }
        }
    }
    let roots: Vec<&PathBuf> = request
        .roots
        .iter()
        .filter(|root| !plan.covered.iter().any(|c| root.starts_with(c)))
        .collect();
    let Some((first, rest)) = roots.split_first() else {
        return outcome;
    };
    let mut walk = ignore::WalkBuilder::new(first);
    for root in rest {
        walk.add(root);
    }
    let covered = plan.covered;
    walk.hidden(!request.include_hidden)
        .follow_links(false)
        .require_git(false)
        .filter_entry(move |entry| !covered.contains(entry.path()));
    let mut walked = 0;
    for entry in walk.build() {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        outcome.files_seen += 1;
        walked += 1;
        if walked > request.max_files {
            outcome.stopped = Some(format!(
                "looked at {} files, the limit; name a narrower folder with `path`",
                request.max_files
            ));
            break;
        }
        if walked % 256 == 0 && Instant::now() >= request.deadline {
            outcome.stopped = Some("ran out of time; name a narrower folder with `path`".into());
            break;
        }
        let size = entry.metadata().ok().map(|m| m.len());
        let Some(hit) = matcher.check(entry.path(), size, allowed) else {
            continue;
        };
        outcome.hits.push(hit);
        if outcome.hits.len() >= request.limit {
            outcome.stopped = Some(format!("stopped at the limit of {} results", request.limit));
            break;
        }
    }
    outcome
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
            use_index: true,
        }
    }

    #[test]
    fn names_and_words_become_what_the_index_understands() {
        assert_eq!(NameMatch::regex("budget"), "budget");
        assert_eq!(NameMatch::regex("a.b(1)"), "a\\.b\\(1\\)");
        assert_eq!(NameMatch::regex("*.pdf"), "^[^/]*\\.pdf$");
        assert_eq!(
            NameMatch::regex("rep?rt[!0-9].txt"),
            "^rep[^/]rt[^0-9]\\.txt$"
        );
        for (glob, name, matches) in [
            ("*.pdf", "Tax 2025.PDF", true),
            ("*.pdf", "a.pdf.bak", false),
            ("rep?rt[!0-9].txt", "report.txt", false),
            ("rep?rt[!0-9].txt", "repxrtA.txt", true),
        ] {
            let regex = RegexMatcherBuilder::new()
                .case_insensitive(true)
                .build(&NameMatch::regex(glob))
                .unwrap();
            let found = grep_matcher::Matcher::is_match(&regex, name.as_bytes()).unwrap();
            assert_eq!(found, matches, "{glob} {name}");
            let glob_match = NameMatch::new(glob).unwrap().matches(Path::new(name));
            assert_eq!(glob_match, matches, "the walk's own match: {glob} {name}");
        }
        assert_eq!(
            index_word("Groceries on friday").as_deref(),
            Some("groceries")
        );
        assert_eq!(index_word("Käse"), Some("käse".into()));
        assert_eq!(index_word("groc.*ies"), None);
        assert_eq!(index_word("   "), None);
    }

    /// An index that holds `tree` and offers a fixed list, to check what is done with its
    /// offers; the real one (Tracker) is tested in tests/os/search.rs.
    struct Offering {
        tree: PathBuf,
        offers: Vec<PathBuf>,
        asked: std::sync::Mutex<Vec<IndexQuery>>,
    }

    impl FileIndex for Offering {
        async fn index_state(&self, _content: bool) -> IndexState {
            IndexState::Ready {
                index: "Offering",
                trees: vec![self.tree.clone()],
            }
        }

        async fn index_candidates(&self, query: &IndexQuery) -> Result<Vec<PathBuf>> {
            self.asked.lock().unwrap().push(query.clone());
            Ok(self.offers.clone())
        }
    }

    /// An index that never answers.
    struct Hanging;

    impl FileIndex for Hanging {
        async fn index_state(&self, _content: bool) -> IndexState {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn an_index_that_does_not_answer_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let mut request = request(dir.path());
        request.name = Some("notes".into());
        request.deadline = Instant::now() + Duration::from_millis(400);
        let started = Instant::now();
        let found = run(&Hanging, request, Arc::new(|_: &Path| true))
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(found.hits.len(), 1);
        assert!(
            found
                .source
                .unwrap()
                .contains("the desktop index did not answer within")
        );
    }

    #[tokio::test]
    async fn the_index_answers_for_its_trees_and_every_offer_is_checked_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let docs = root.join("Documents");
        std::fs::create_dir_all(root.join("code")).unwrap();
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("groceries.txt"), "milk\n").unwrap();
        std::fs::write(docs.join("groceries-old.txt"), "eggs\n").unwrap();
        std::fs::write(docs.join("secret-groceries.txt"), "x\n").unwrap();
        std::fs::create_dir_all(docs.join(".cache")).unwrap();
        std::fs::write(docs.join(".cache/groceries.txt"), "x\n").unwrap();
        std::fs::write(root.join("code/groceries.rs"), "// list\n").unwrap();
        // Not offered by the index: inside its tree, so never walked.
        std::fs::write(docs.join("groceries-unindexed.txt"), "").unwrap();
        let index = Offering {
            tree: docs.clone(),
            offers: vec![
                docs.join("groceries.txt"),
                docs.join("groceries.txt"),
                docs.join("groceries-deleted.txt"),
                docs.join("notes.txt"),
                docs.join("secret-groceries.txt"),
                docs.join("groceries-old.txt"),
                docs.join(".cache/groceries.txt"),
                PathBuf::from("/etc/groceries"),
            ],
            asked: Default::default(),
        };
        let mut request = request(root);
        request.name = Some("groceries".into());
        let allowed: Allowed = Arc::new(|p: &Path| !p.ends_with("secret-groceries.txt"));
        let found = run(&index, request.clone(), allowed.clone()).await.unwrap();
        let mut paths: Vec<_> = found.hits.iter().map(|h| h.path.clone()).collect();
        paths.sort();
        assert_eq!(
            paths,
            vec![
                root.join("Documents/groceries-old.txt"),
                root.join("Documents/groceries.txt"),
                root.join("code/groceries.rs"),
            ]
        );
        let source = found.source.unwrap();
        assert!(
            source.contains("from the desktop's index (Offering)"),
            "{source}"
        );
        assert!(source.contains(&docs.display().to_string()), "{source}");
        let asked = index.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].under, docs);
        assert_eq!(asked[0].name_regex.as_deref(), Some("groceries"));

        // Content that only a full read can match, hidden files, and `index: false` walk.
        let mut regex = request.clone();
        regex.content = Some("mi.k".into());
        let found = run(&index, regex, allowed.clone()).await.unwrap();
        assert_eq!(found.hits.len(), 1);
        assert!(found.source.unwrap().contains("needs every file read"));
        let mut walk = request.clone();
        walk.use_index = false;
        let found = run(&index, walk, allowed).await.unwrap();
        assert_eq!(found.hits.len(), 4, "the unindexed file too: {found:?}");
        assert_eq!(found.source, None);
        assert_eq!(index.asked.lock().unwrap().len(), 1);

        // An index that gives as many files as it was asked for may hold more: said so.
        let full = Offering {
            tree: docs.clone(),
            offers: vec![docs.join("groceries.txt"); 1000],
            asked: Default::default(),
        };
        let found = run(&full, request, Arc::new(|_: &Path| true))
            .await
            .unwrap();
        assert_eq!(full.asked.lock().unwrap()[0].limit, 1000);
        assert!(found.source.unwrap().contains("more may match"));
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
