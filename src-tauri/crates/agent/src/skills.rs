//! Skills: instructions the agent pulls in when a task calls for them. Each skill is a folder
//! holding a `SKILL.md` whose frontmatter names it, says what it is for and lists the phrases
//! that trigger it:
//!
//! ```text
//! ---
//! name: pdf-forms
//! description: Fill in PDF forms
//! triggers: [pdf form, fill in the form]
//! ---
//! The instructions...
//! ```
//!
//! Skills come from three kinds of place, later ones overriding earlier ones by name: bundled
//! (compiled into Osprey from `src-tauri/crates/agent/skills/`, see [`BUNDLED`]), then apps'
//! (`<data>/apps/<app-id>/SKILL.md`), then the person's own (`<data>/skills/<name>/SKILL.md`).
//! Start-up must not wait on thousands of them, so [`SkillCatalog::new`] only records the
//! directories; the index (every frontmatter) is built on first use or by
//! [`SkillCatalog::warm_in_background`], and again after [`SkillCatalog::refresh`] (the skill
//! tool calls it after writing).
//!
//! [`ActiveSkills`] keeps what the prompt carries: at most [`MAX_ACTIVE`] skills and
//! [`BUDGET_CHARS`] characters of instructions in all, each for [`AUTO_TTL`] turns after a
//! trigger matched ([`MANUAL_TTL`] when loaded by hand). [`Skills`] holds the catalog and one
//! active set per session, shared by the runner (triggers, the prompt section, turn counting) and
//! the `skill` tool (`load`). The active sets live in memory only: a restart forgets them, which
//! costs at most a few turns of a skill the next trigger brings back.
//!
//! The frontmatter is read by [`osprey_types::skill_md`] (a hand-written reader for the subset
//! SKILL.md files use; see there), which the skill store shares.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The file each skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";
/// The file the app platform puts in a quarantined app's folder (`osprey_apps`'s
/// `QUARANTINE_MARKER`; the agent does not depend on the apps crate).
pub const APP_QUARANTINE_MARKER: &str = ".quarantined";
/// At most this many skills are active at once.
pub const MAX_ACTIVE: usize = 4;
/// The active skills' instructions, in characters, in all.
pub const BUDGET_CHARS: usize = 16_000;
/// The prompt's index of skills (name and one line each), in characters at most. When every
/// skill fits, all are listed by name (the prompt stays the same from turn to turn); when not,
/// the ones most relevant to the person's message come first and the rest are counted.
pub const INDEX_BUDGET_CHARS: usize = 6_000;
/// A skill longer than this is read in pages of about this size: the first one goes in the
/// prompt, the rest come from `skill load` with an `offset`. Never refused for its length.
pub const PAGE_CHARS: usize = 12_000;
/// An index line's description, in characters at most.
const INDEX_DESCRIPTION_CHARS: usize = 200;
/// Turns a skill stays in the prompt after its trigger matched.
pub const AUTO_TTL: u32 = 4;
/// Turns a skill stays in the prompt after being loaded by hand.
pub const MANUAL_TTL: u32 = 6;

/// The skills shipped with Osprey, compiled in: `(folder, SKILL.md text)`.
pub const BUNDLED: &[(&str, &str)] = &[
    (
        "skill-authoring",
        include_str!("../skills/skill-authoring/SKILL.md"),
    ),
    (
        "desktop-automation",
        include_str!("../skills/desktop-automation/SKILL.md"),
    ),
];

/// Where a skill came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkillSource {
    Bundled,
    /// Shipped by the named app.
    App(String),
    User,
}

impl SkillSource {
    /// `bundled`, `app` or `user`.
    pub fn kind(&self) -> &'static str {
        match self {
            SkillSource::Bundled => "bundled",
            SkillSource::App(_) => "app",
            SkillSource::User => "user",
        }
    }
}

/// A directory of skill folders.
#[derive(Clone, Debug)]
pub struct SkillDir {
    pub path: PathBuf,
    pub source: SkillSource,
    /// Each folder is an app (`<data>/apps/<id>/SKILL.md`): its skill's source is that app.
    pub folder_is_app: bool,
}

impl SkillDir {
    pub fn new(path: impl Into<PathBuf>, source: SkillSource) -> Self {
        SkillDir {
            path: path.into(),
            source,
            folder_is_app: false,
        }
    }

    /// The apps directory: every installed app's `SKILL.md`.
    pub fn apps(path: impl Into<PathBuf>) -> Self {
        SkillDir {
            path: path.into(),
            source: SkillSource::App(String::new()),
            folder_is_app: true,
        }
    }
}

/// What the frontmatter says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frontmatter {
    pub name: Option<String>,
    pub description: Option<String>,
    pub triggers: Vec<String>,
}

/// One indexed skill (the instructions stay on disk until loaded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillMeta {
    pub name: String,
    pub description: String,
    pub triggers: Vec<String>,
    pub path: PathBuf,
    pub source: SkillSource,
}

impl SkillMeta {
    /// The folder its SKILL.md sits in (bundled skills have none on disk: their compiled-in
    /// place is named).
    pub fn folder(&self) -> PathBuf {
        self.path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.path.clone())
    }
}

/// A loaded skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub meta: SkillMeta,
    pub body: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("no skill named `{0}`")]
    NotFound(String),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{0}")]
    Refused(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Splits a SKILL.md into its frontmatter and body (the reader is
/// [`osprey_types::skill_md::parse`], shared with the skill store). A file without frontmatter
/// has an empty one.
pub fn parse_skill(text: &str) -> Result<(Frontmatter, &str), String> {
    let (front, body) = osprey_types::skill_md::parse(text)?;
    Ok((
        Frontmatter {
            name: front.name,
            description: front.description,
            triggers: front.triggers,
        },
        body,
    ))
}

/// Lower-cased words separated by single spaces, padded with a space each side, so a phrase
/// matches on word boundaries with one `contains`.
fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(' ');
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        for c in word.chars().flat_map(char::to_lowercase) {
            out.push(c);
        }
        out.push(' ');
    }
    out
}

struct Index {
    skills: Vec<SkillMeta>,
    /// The compiled-in text of bundled skills, by skill index.
    embedded: HashMap<usize, &'static str>,
    by_name: HashMap<String, usize>,
    /// Normalised triggers with the skill they belong to.
    triggers: Vec<(String, usize)>,
    /// Each trigger's first word to the triggers starting with it, so a message is matched by
    /// looking up its words instead of scanning every trigger (thousands with a big catalog).
    by_first_word: HashMap<String, Vec<usize>>,
    /// Files that could not be read or parsed (skipped, reported here).
    problems: Vec<String>,
}

/// The skills on disk. Cheap to create; the index is built once, on first use.
#[derive(Clone)]
pub struct SkillCatalog {
    inner: Arc<CatalogInner>,
}

struct CatalogInner {
    dirs: Vec<SkillDir>,
    bundled: &'static [(&'static str, &'static str)],
    /// Built on first use; the lock is held while building so concurrent first uses wait for
    /// one build instead of each walking the disk.
    index: Mutex<Option<Arc<Index>>>,
    /// Names the person turned off (the `skills.disabled` setting): left out of the catalog,
    /// trigger matching and loading, still listed by [`SkillCatalog::all`].
    disabled: std::sync::RwLock<std::collections::BTreeSet<String>>,
}

impl std::fmt::Debug for SkillCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillCatalog")
            .field("dirs", &self.inner.dirs)
            .field("indexed", &self.is_indexed())
            .finish()
    }
}

impl SkillCatalog {
    /// A catalog over `dirs`, in precedence order (later ones override earlier ones by name).
    /// Touches no file.
    pub fn new(dirs: Vec<SkillDir>) -> Self {
        Self::with_bundled(&[], dirs)
    }

    /// A catalog over compiled-in skills (`(folder, text)`, lowest precedence) and `dirs`.
    pub fn with_bundled(
        bundled: &'static [(&'static str, &'static str)],
        dirs: Vec<SkillDir>,
    ) -> Self {
        SkillCatalog {
            inner: Arc::new(CatalogInner {
                dirs,
                bundled,
                index: Mutex::new(None),
                disabled: Default::default(),
            }),
        }
    }

    /// Whether the index has been built.
    pub fn is_indexed(&self) -> bool {
        self.inner
            .index
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Forgets the index so the next use reads the directories again (after a skill was
    /// written or removed).
    pub fn refresh(&self) {
        *self.inner.index.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The directories, in precedence order.
    pub fn dirs(&self) -> &[SkillDir] {
        &self.inner.dirs
    }

    /// Builds the index on a background thread so the first use finds it ready. Returns the
    /// thread's handle (joining it is optional).
    pub fn warm_in_background(&self) -> std::thread::JoinHandle<()> {
        let catalog = self.clone();
        std::thread::spawn(move || {
            catalog.index();
        })
    }

    fn index(&self) -> Arc<Index> {
        let mut slot = self.inner.index.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert_with(|| Arc::new(build_index(self.inner.bundled, &self.inner.dirs)))
            .clone()
    }

    /// Turns skills off (or on again) by name; takes effect at the next catalog use.
    pub fn set_disabled(&self, names: impl IntoIterator<Item = String>) {
        *self
            .inner
            .disabled
            .write()
            .unwrap_or_else(|e| e.into_inner()) = names.into_iter().collect();
    }

    pub fn is_disabled(&self, name: &str) -> bool {
        self.inner
            .disabled
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(name)
    }

    /// Every skill on disk, turned off or not, sorted by name (the settings page).
    pub fn all(&self) -> Vec<SkillMeta> {
        let mut skills = self.index().skills.clone();
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        skills
    }

    /// Every skill that is on, sorted by name.
    pub fn list(&self) -> Vec<SkillMeta> {
        let mut skills = self.all();
        skills.retain(|skill| !self.is_disabled(&skill.name));
        skills
    }

    pub fn len(&self) -> usize {
        self.index().skills.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Files skipped because they could not be read or parsed.
    pub fn problems(&self) -> Vec<String> {
        self.index().problems.clone()
    }

    pub fn get(&self, name: &str) -> Option<SkillMeta> {
        if self.is_disabled(name) {
            return None;
        }
        let index = self.index();
        index.by_name.get(name).map(|&i| index.skills[i].clone())
    }

    /// Reads a skill's instructions from disk.
    pub fn load(&self, name: &str) -> Result<Skill, SkillError> {
        if self.is_disabled(name) {
            return Err(SkillError::NotFound(name.to_string()));
        }
        let index = self.index();
        let i = *index
            .by_name
            .get(name)
            .ok_or_else(|| SkillError::NotFound(name.to_string()))?;
        let meta = index.skills[i].clone();
        let text = match index.embedded.get(&i) {
            Some(text) => (*text).to_string(),
            None => std::fs::read_to_string(&meta.path).map_err(|source| SkillError::Read {
                path: meta.path.clone(),
                source,
            })?,
        };
        let (_, body) = parse_skill(&text).map_err(|message| SkillError::Invalid {
            path: meta.path.clone(),
            message,
        })?;
        Ok(Skill {
            body: body.to_string(),
            meta,
        })
    }

    /// The skills whose triggers appear in `message` (whole words, any case), in catalog order,
    /// each once.
    /// The skills that fit `query` best first (at least one of its words), ties by name.
    pub fn search(&self, query: &str) -> Vec<SkillMeta> {
        let words = query_words(query);
        let mut scored: Vec<(usize, SkillMeta)> = self
            .list()
            .into_iter()
            .map(|meta| (relevance(&meta, &words), meta))
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        scored.into_iter().map(|(_, meta)| meta).collect()
    }

    /// The prompt's index of skills within `budget` characters: every skill by name when all
    /// fit; otherwise the ones most relevant to `message` first, cut to the budget, with a line
    /// saying how many more the catalog holds. Empty when there are no skills.
    pub fn index_text(&self, message: &str, budget: usize) -> String {
        let skills = self.list();
        if skills.is_empty() {
            return String::new();
        }
        let head = "Skills you can load with the skill tool (`skill load name=...`) when a task \
                    matches one; their instructions are not in this prompt until loaded:\n";
        let lines: Vec<String> = skills.iter().map(index_line).collect();
        let all: usize = head.len() + lines.iter().map(String::len).sum::<usize>();
        if all <= budget {
            return format!("{head}{}", lines.concat());
        }
        let words = query_words(message);
        let mut ranked: Vec<(usize, &SkillMeta, &String)> = skills
            .iter()
            .zip(&lines)
            .map(|(meta, line)| (relevance(meta, &words), meta, line))
            .collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        // Room for the closing line.
        let room = budget.saturating_sub(head.len() + 160);
        let mut text = String::from(head);
        let mut used = 0;
        let mut listed = 0;
        for (_, _, line) in &ranked {
            if used + line.len() > room {
                break;
            }
            text.push_str(line);
            used += line.len();
            listed += 1;
        }
        text.push_str(&format!(
            "({} more skills are not listed here: find them with `skill catalog query=...`.)\n",
            skills.len() - listed
        ));
        text
    }

    pub fn matching(&self, message: &str) -> Vec<SkillMeta> {
        let index = self.index();
        let text = normalise(message);
        let mut hits: Vec<usize> = text
            .split(' ')
            .filter(|w| !w.is_empty())
            .filter_map(|word| index.by_first_word.get(word))
            .flatten()
            .map(|&t| &index.triggers[t])
            .filter(|(trigger, _)| text.contains(trigger.as_str()))
            .map(|&(_, i)| i)
            .collect();
        hits.sort_unstable();
        hits.dedup();
        hits.into_iter()
            .map(|i| index.skills[i].clone())
            .filter(|skill| !self.is_disabled(&skill.name))
            .collect()
    }
}

fn build_index(bundled: &'static [(&'static str, &'static str)], dirs: &[SkillDir]) -> Index {
    let mut skills: Vec<SkillMeta> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut embedded = HashMap::new();
    let mut problems = Vec::new();
    for (folder, text) in bundled {
        let path = PathBuf::from("<bundled>").join(folder).join(SKILL_FILE);
        match parse_skill(text) {
            Ok((front, body)) => {
                let meta = skill_meta(front, body, folder, path, SkillSource::Bundled);
                embedded.insert(skills.len(), *text);
                by_name.insert(meta.name.clone(), skills.len());
                skills.push(meta);
            }
            Err(message) => problems.push(format!("{}: {message}", path.display())),
        }
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir.path) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        folders.sort();
        for folder in folders {
            let hidden = folder
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            // Hidden folders are staging and temporary files; a quarantined app's instructions
            // must not reach the prompt.
            if hidden || (dir.folder_is_app && folder.join(APP_QUARANTINE_MARKER).exists()) {
                continue;
            }
            let path = folder.join(SKILL_FILE);
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => continue,
                Err(e) => {
                    problems.push(format!("{}: {e}", path.display()));
                    continue;
                }
            };
            match parse_skill(&text) {
                Ok((front, body)) => {
                    let folder_name = folder
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let source = if dir.folder_is_app {
                        SkillSource::App(folder_name.clone())
                    } else {
                        dir.source.clone()
                    };
                    let meta = skill_meta(front, body, &folder_name, path, source);
                    match by_name.get(&meta.name) {
                        Some(&i) => {
                            embedded.remove(&i);
                            skills[i] = meta;
                        }
                        None => {
                            by_name.insert(meta.name.clone(), skills.len());
                            skills.push(meta);
                        }
                    }
                }
                Err(message) => problems.push(format!("{}: {message}", path.display())),
            }
        }
    }
    let triggers: Vec<(String, usize)> = skills
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.triggers
                .iter()
                .map(|t| normalise(t))
                .filter(|t| !t.trim().is_empty())
                .map(move |t| (t, i))
        })
        .collect();
    let mut by_first_word: HashMap<String, Vec<usize>> = HashMap::new();
    for (t, (trigger, _)) in triggers.iter().enumerate() {
        if let Some(first) = trigger.split(' ').find(|w| !w.is_empty()) {
            by_first_word.entry(first.to_string()).or_default().push(t);
        }
    }
    Index {
        skills,
        embedded,
        by_name,
        triggers,
        by_first_word,
        problems,
    }
}

fn skill_meta(
    front: Frontmatter,
    body: &str,
    folder: &str,
    path: PathBuf,
    source: SkillSource,
) -> SkillMeta {
    let name = front.name.unwrap_or_else(|| folder.to_string());
    let description = front.description.unwrap_or_else(|| {
        body.lines()
            .map(|l| l.trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
            .unwrap_or_default()
            .to_string()
    });
    SkillMeta {
        name,
        description,
        triggers: front.triggers,
        path,
        source,
    }
}

/// A page of a skill's instructions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub text: String,
    /// Where the next page starts (a character offset), when there is one.
    pub next: Option<usize>,
    /// The instructions' whole length, in characters.
    pub total: usize,
}

/// The page of `body` starting at character `offset`: about `size` characters, ending at a
/// heading or a blank line in its last third when there is one, so sections stay whole.
pub fn page(body: &str, offset: usize, size: usize) -> Page {
    let chars: Vec<char> = body.chars().collect();
    let total = chars.len();
    let start = offset.min(total);
    let size = size.max(1);
    if total - start <= size {
        return Page {
            text: chars[start..].iter().collect(),
            next: None,
            total,
        };
    }
    let hard_end = start + size;
    let window: String = chars[start..hard_end].iter().collect();
    let floor = size * 2 / 3;
    // Byte positions in `window` turned back into character counts.
    let cut = ["\n#", "\n\n", "\n"]
        .iter()
        .find_map(|mark| {
            window
                .rfind(mark)
                .map(|at| window[..at].chars().count() + 1)
                .filter(|&at| at >= floor)
        })
        .unwrap_or(size);
    let end = start + cut;
    Page {
        text: chars[start..end].iter().collect(),
        next: Some(end),
        total,
    }
}

/// What the prompt carries of a skill: its instructions, or their first page with where the
/// rest is.
fn prompt_copy(skill: &Skill, size: usize) -> String {
    let first = page(&skill.body, 0, size);
    match first.next {
        None => first.text,
        Some(next) => format!(
            "{}\n\n[This skill continues: {} of {} characters are above. Read the next part \
             with skill load name=\"{}\" offset={next} when you need it.]",
            first.text.trim_end(),
            next,
            first.total,
            skill.meta.name
        ),
    }
}

/// Words that say nothing about which skill fits.
const COMMON_WORDS: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "from", "into", "your", "you", "are", "was",
    "can", "use", "when", "what", "how", "please", "make", "help", "about", "have", "need", "want",
    "some", "all", "any", "not", "but", "its", "our", "will", "would", "could",
];

/// The words of `text` that can tell skills apart: lower case, three letters or more, common
/// words left out.
pub fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !COMMON_WORDS.contains(&w.as_str()))
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// How well a skill fits `words`: a word in its name counts three, in its triggers two, in its
/// description one.
pub fn relevance(meta: &SkillMeta, words: &[String]) -> usize {
    let name = meta.name.to_lowercase();
    let triggers = meta.triggers.join(" ").to_lowercase();
    let description = meta.description.to_lowercase();
    words
        .iter()
        .map(|w| {
            3 * usize::from(name.contains(w.as_str()))
                + 2 * usize::from(triggers.contains(w.as_str()))
                + usize::from(description.contains(w.as_str()))
        })
        .sum()
}

/// A skill's index line: its name and the first line of its description, cut short.
fn index_line(meta: &SkillMeta) -> String {
    let first = meta.description.lines().next().unwrap_or_default().trim();
    let mut description: String = first.chars().take(INDEX_DESCRIPTION_CHARS).collect();
    if first.chars().count() > INDEX_DESCRIPTION_CHARS {
        description.push('…');
    }
    format!("- {}: {description}\n", meta.name)
}

/// One skill in the prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActiveSkill {
    pub name: String,
    /// What the prompt carries: the instructions, or their first page and where the rest is.
    pub body: String,
    /// The skill's folder, for the scripts and references its instructions name.
    pub folder: PathBuf,
    /// Turns left, counting the current one.
    pub turns_left: u32,
    pub manual: bool,
}

/// The skills the prompt carries, within the count and character budget.
#[derive(Clone, Debug)]
pub struct ActiveSkills {
    active: Vec<ActiveSkill>,
    max_active: usize,
    budget_chars: usize,
}

impl Default for ActiveSkills {
    fn default() -> Self {
        ActiveSkills::new(MAX_ACTIVE, BUDGET_CHARS)
    }
}

impl ActiveSkills {
    pub fn new(max_active: usize, budget_chars: usize) -> Self {
        ActiveSkills {
            active: Vec::new(),
            max_active,
            budget_chars,
        }
    }

    pub fn active(&self) -> &[ActiveSkill] {
        &self.active
    }

    pub fn chars(&self) -> usize {
        self.active.iter().map(|a| a.body.chars().count()).sum()
    }

    /// Puts a skill in the prompt for [`AUTO_TTL`] turns ([`MANUAL_TTL`] when `manual`): its
    /// instructions, or their first page (with where the rest is) when longer than
    /// [`PAGE_CHARS`]. An active skill gets its turns renewed (never shortened). To make room,
    /// the skills with the fewest turns left go first. Returns the names evicted.
    pub fn activate(&mut self, skill: &Skill, manual: bool) -> Result<Vec<String>, SkillError> {
        let ttl = if manual { MANUAL_TTL } else { AUTO_TTL };
        let body = prompt_copy(skill, self.budget_chars.min(PAGE_CHARS));
        if let Some(existing) = self.active.iter_mut().find(|a| a.name == skill.meta.name) {
            existing.turns_left = existing.turns_left.max(ttl);
            existing.manual |= manual;
            existing.body = body;
        } else {
            self.active.push(ActiveSkill {
                name: skill.meta.name.clone(),
                body,
                folder: skill.meta.folder(),
                turns_left: ttl,
                manual,
            });
        }
        Ok(self.evict_to_fit(&skill.meta.name))
    }

    /// Drops the skills expiring soonest, never `keep`, until the count and the budget hold.
    fn evict_to_fit(&mut self, keep: &str) -> Vec<String> {
        let mut evicted = Vec::new();
        while self.active.len() > self.max_active || self.chars() > self.budget_chars {
            let victim = self
                .active
                .iter()
                .enumerate()
                .filter(|(_, a)| a.name != keep)
                .min_by_key(|(_, a)| a.turns_left)
                .map(|(i, _)| i);
            match victim {
                Some(i) => evicted.push(self.active.remove(i).name),
                None => break,
            }
        }
        evicted
    }

    /// Takes a skill out of the prompt; whether it was in.
    pub fn deactivate(&mut self, name: &str) -> bool {
        let before = self.active.len();
        self.active.retain(|a| a.name != name);
        before != self.active.len()
    }

    /// Activates the catalog's skills whose triggers appear in `message` (a turn's start).
    /// Skills that cannot be read are skipped and returned as problems.
    pub fn match_message(&mut self, catalog: &SkillCatalog, message: &str) -> Vec<String> {
        self.activate_matched(catalog, catalog.matching(message))
    }

    /// Activates skills already matched (see [`SkillCatalog::matching`]) for [`AUTO_TTL`] turns.
    pub fn activate_matched(
        &mut self,
        catalog: &SkillCatalog,
        matched: Vec<SkillMeta>,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        for meta in matched {
            if self.active.iter().any(|a| a.name == meta.name) {
                if let Some(a) = self.active.iter_mut().find(|a| a.name == meta.name) {
                    a.turns_left = a.turns_left.max(AUTO_TTL);
                }
                continue;
            }
            match catalog
                .load(&meta.name)
                .and_then(|s| self.activate(&s, false))
            {
                Ok(evicted) => problems.extend(evicted.into_iter().map(|name| {
                    format!("`{name}` left the prompt to make room (load it again when needed)")
                })),
                Err(e) => problems.push(e.to_string()),
            }
        }
        problems
    }

    /// A turn ended: every skill loses one turn, and those with none left leave the prompt.
    pub fn end_turn(&mut self) {
        for a in &mut self.active {
            a.turns_left = a.turns_left.saturating_sub(1);
        }
        self.active.retain(|a| a.turns_left > 0);
    }

    /// The text of the system prompt's `skills` section (empty when none is active).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for a in &self.active {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&format!(
                "## Skill: {}\n(Its folder, for the files it names: {})\n{}",
                a.name,
                a.folder.display(),
                a.body.trim_end()
            ));
        }
        out
    }
}

/// Writes a SKILL.md (tests and fixtures; the skill tool writes atomically, see
/// `skill_tool.rs`).
pub fn write_skill(
    dir: &Path,
    folder: &str,
    front: &Frontmatter,
    body: &str,
) -> std::io::Result<PathBuf> {
    let text = render_skill(front, body);
    let folder = dir.join(folder);
    std::fs::create_dir_all(&folder)?;
    let path = folder.join(SKILL_FILE);
    std::fs::write(&path, text)?;
    Ok(path)
}

/// A SKILL.md's text: the frontmatter (values double-quoted, so any text round-trips through
/// [`parse_skill`]), then the body.
pub fn render_skill(front: &Frontmatter, body: &str) -> String {
    let quote = |s: &str| {
        format!(
            "\"{}\"",
            s.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n")
                .replace('\t', "\\t")
        )
    };
    let mut text = String::from("---\n");
    if let Some(name) = &front.name {
        text.push_str(&format!("name: {}\n", quote(name)));
    }
    if let Some(description) = &front.description {
        text.push_str(&format!("description: {}\n", quote(description)));
    }
    if !front.triggers.is_empty() {
        let items: Vec<String> = front.triggers.iter().map(|t| quote(t)).collect();
        text.push_str(&format!("triggers: [{}]\n", items.join(", ")));
    }
    text.push_str("---\n");
    text.push_str(body);
    text
}

/// The catalog and each session's active skills, shared by the runner and the `skill` tool.
/// Cheap to clone.
#[derive(Clone, Debug)]
pub struct Skills {
    inner: Arc<SkillsInner>,
}

#[derive(Debug)]
struct SkillsInner {
    catalog: SkillCatalog,
    /// Where the person's skills are written; `None` when the catalog has none (read-only).
    user_dir: Option<PathBuf>,
    sessions: Mutex<HashMap<String, ActiveSkills>>,
}

impl Skills {
    pub fn new(catalog: SkillCatalog, user_dir: Option<PathBuf>) -> Self {
        Skills {
            inner: Arc::new(SkillsInner {
                catalog,
                user_dir,
                sessions: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The standard places for a data directory: the bundled skills, `<data>/apps/*/SKILL.md`
    /// and `<data>/skills/*/SKILL.md`. Touches no file (the index is built on first use).
    pub fn for_data_dir(data_dir: &Path) -> Self {
        let user_dir = data_dir.join("skills");
        let catalog = SkillCatalog::with_bundled(
            BUNDLED,
            vec![
                SkillDir::apps(data_dir.join("apps")),
                SkillDir::new(&user_dir, SkillSource::User),
            ],
        );
        Skills::new(catalog, Some(user_dir))
    }

    pub fn catalog(&self) -> &SkillCatalog {
        &self.inner.catalog
    }

    pub fn user_dir(&self) -> Option<&Path> {
        self.inner.user_dir.as_deref()
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, ActiveSkills>> {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// A turn starts: activates the skills whose triggers the message holds and returns the
    /// `skills` prompt section: the active skills' instructions, what could not be brought in
    /// (so the model knows, not only the log), and the index of the skills it may load.
    pub fn begin_turn(&self, session_id: &str, message: &str) -> String {
        let catalog = &self.inner.catalog;
        // Match outside the lock: the first match may build the index.
        let matched = catalog.matching(message);
        let index = catalog.index_text(message, INDEX_BUDGET_CHARS);
        let mut sessions = self.sessions();
        let mut problems = Vec::new();
        if !matched.is_empty() {
            let active = sessions.entry(session_id.to_string()).or_default();
            problems = active.activate_matched(catalog, matched);
        }
        for problem in &problems {
            tracing::warn!(%problem, "a triggered skill is not in the prompt");
        }
        let active = sessions
            .get(session_id)
            .map(ActiveSkills::render)
            .unwrap_or_default();
        let mut parts = Vec::new();
        if !active.is_empty() {
            parts.push(active);
        }
        if !problems.is_empty() {
            parts.push(format!(
                "Skills this message triggered that are not in the prompt: {}.",
                problems.join("; ")
            ));
        }
        if !index.is_empty() {
            parts.push(index);
        }
        parts.join("\n\n")
    }

    /// A page of a skill's instructions from `offset` (characters), read without changing
    /// what the prompt carries.
    pub fn page(&self, name: &str, offset: usize) -> Result<(Skill, Page), SkillError> {
        let skill = self.inner.catalog.load(name)?;
        let page = page(&skill.body, offset, PAGE_CHARS);
        Ok((skill, page))
    }

    /// A turn ended: every active skill of the session loses a turn.
    pub fn end_turn(&self, session_id: &str) {
        let mut sessions = self.sessions();
        if let Some(active) = sessions.get_mut(session_id) {
            active.end_turn();
            if active.active().is_empty() {
                sessions.remove(session_id);
            }
        }
    }

    /// Loads a skill by hand into the session's prompt ([`MANUAL_TTL`] turns); returns it and
    /// the names evicted to make room.
    pub fn load(&self, session_id: &str, name: &str) -> Result<(Skill, Vec<String>), SkillError> {
        let skill = self.inner.catalog.load(name)?;
        let evicted = self
            .sessions()
            .entry(session_id.to_string())
            .or_default()
            .activate(&skill, true)?;
        Ok((skill, evicted))
    }

    /// The session's active skills.
    pub fn active(&self, session_id: &str) -> Vec<ActiveSkill> {
        self.sessions()
            .get(session_id)
            .map(|a| a.active().to_vec())
            .unwrap_or_default()
    }

    /// After a skill changed on disk: active copies get the new text (or leave the prompt when
    /// the skill is gone).
    pub fn changed(&self, name: &str) {
        let skill = self.inner.catalog.load(name).ok();
        for active in self.sessions().values_mut() {
            if !active.active().iter().any(|a| a.name == name) {
                continue;
            }
            match &skill {
                Some(skill) => active.replace_body(skill),
                None => {
                    active.deactivate(name);
                }
            }
        }
    }
}

impl ActiveSkills {
    fn replace_body(&mut self, skill: &Skill) {
        let body = prompt_copy(skill, self.budget_chars.min(PAGE_CHARS));
        if let Some(a) = self.active.iter_mut().find(|a| a.name == skill.meta.name) {
            a.body = body;
        }
        // A longer body may break the budget: drop the ones expiring soonest, never this one.
        self.evict_to_fit(&skill.meta.name);
    }
}
