//! The `skill` tool: the catalog of skills (bundled, apps', the person's own), loading one into
//! the session's prompt, and writing the person's own.
//!
//! Approvals: `catalog` and `load` read instructions Osprey already has and need none. `create`,
//! `update` and `delete` change what future turns are told to do (a skill is standing
//! instructions, so writing one is a way to steer the agent later), so each goes through the
//! approval policy.
//!
//! Writes touch only the person's skill directory (`<data>/skills`): bundled skills are compiled
//! into Osprey and app skills belong to their app (an update would overwrite them), so changing
//! either is refused with a message saying what to do instead. Names are plain folder names
//! (lowercase letters, digits, `-`, `_`), so no name reaches outside the directory, and files are
//! written to a temporary name and renamed into place, so a crash leaves the old SKILL.md or the
//! new one, never half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use osprey_tools::{ApprovalNeed, Call, CallFacts, Domain, DomainTool, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use crate::skills::{
    BUDGET_CHARS, Frontmatter, MANUAL_TTL, SKILL_FILE, SkillError, SkillMeta, SkillSource, Skills,
    parse_skill, render_skill,
};

/// Catalog entries returned when no limit is given, and the most ever returned.
pub const DEFAULT_LIMIT: u64 = 50;
pub const MAX_LIMIT: u64 = 500;
/// Longest name, description and trigger accepted, and the most triggers.
pub const MAX_NAME_CHARS: usize = 64;
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
pub const MAX_TRIGGER_CHARS: usize = 100;
pub const MAX_TRIGGERS: usize = 32;

/// The `skill` domain tool.
pub struct SkillTool {
    domain: Domain,
    skills: Skills,
}

impl SkillTool {
    pub fn new(skills: Skills) -> Self {
        SkillTool {
            domain: Self::domain_table(),
            skills,
        }
    }

    pub fn domain_table() -> Domain {
        use ApprovalNeed::{None as Free, Required};
        Domain::new(
            "skill",
            "Skills: instructions for particular tasks, from Osprey (bundled), installed apps and \
             the person (user). Your prompt lists the skills by name and purpose; load one when \
             a task matches it (it stays in your prompt for 6 turns and is returned now; a long \
             one comes in pages: pass `offset` for the next). A skill whose trigger phrase \
             appears in the person's message is put in your prompt for 4 turns. Only the \
             person's own skills can be created, updated or deleted.",
        )
        .closed_world()
        .resource(
            "skill",
            &["skills", "instructions"],
            &[
                (
                    "catalog",
                    "List skills (name, description, source, triggers); filter with query/source",
                    Free,
                ),
                (
                    "load",
                    "Put a skill in the prompt for 6 turns and return its instructions (with \
                     `offset`: the page of a long skill that starts there)",
                    Free,
                ),
                (
                    "create",
                    "Write a new user skill (name, description, triggers, body; or content)",
                    Required,
                ),
                (
                    "update",
                    "Change a user skill (the fields given replace the old ones)",
                    Required,
                ),
                ("delete", "Remove a user skill", Required),
            ],
        )
        .field(
            "name",
            FieldType::String,
            "The skill's name (lowercase letters, digits, - and _; also its folder name)",
        )
        .required_for(&["load", "update", "delete"])
        .field(
            "description",
            FieldType::String,
            "One line: what the skill is for and when it helps",
        )
        .field(
            "triggers",
            FieldType::Array(Box::new(FieldType::String)),
            "Short phrases that put the skill in the prompt when the person's message holds one",
        )
        .field(
            "body",
            FieldType::String,
            "The instructions (Markdown, at most 16,000 characters)",
        )
        .field(
            "content",
            FieldType::String,
            "A whole SKILL.md (frontmatter with name, description, triggers; then the body), \
             instead of the separate fields",
        )
        .field(
            "query",
            FieldType::String,
            "catalog: words to look for in names, descriptions and triggers (best matches first)",
        )
        .field(
            "offset",
            FieldType::Integer,
            "load: where the next page of a long skill starts (given at the end of the previous page)",
        )
        .field(
            "source",
            FieldType::String,
            "catalog: only skills from here",
        )
        .one_of(&["bundled", "app", "user"])
        .field(
            "limit",
            FieldType::Integer,
            "catalog: at most this many (default 50, max 500)",
        )
    }

    fn catalog(&self, call: &Call, session_id: Option<&str>) -> Outcome {
        let catalog = self.skills.catalog();
        let query = call.str("query").unwrap_or_default();
        let source = call.str("source");
        let limit = call
            .u64("limit")
            .unwrap_or(DEFAULT_LIMIT)
            .clamp(1, MAX_LIMIT) as usize;
        let active: Vec<String> = session_id
            .map(|s| self.skills.active(s).into_iter().map(|a| a.name).collect())
            .unwrap_or_default();
        // Best matches first; without a query (or words that tell skills apart), all by name.
        let found = if crate::skills::query_words(query).is_empty() {
            catalog.list()
        } else {
            catalog.search(query)
        };
        let matches: Vec<SkillMeta> = found
            .into_iter()
            .filter(|s| source.is_none_or(|kind| s.source.kind() == kind))
            .collect();
        let total = matches.len();
        let skills: Vec<Value> = matches
            .iter()
            .take(limit)
            .map(|s| {
                let mut entry = json!({
                    "name": s.name,
                    "description": s.description,
                    "source": s.source.kind(),
                    "triggers": s.triggers,
                    "active": active.contains(&s.name),
                });
                if let SkillSource::App(app) = &s.source {
                    entry["app"] = json!(app);
                }
                entry
            })
            .collect();
        let mut result = json!({"total": total, "count": skills.len(), "skills": skills});
        let problems = catalog.problems();
        if !problems.is_empty() {
            result["unreadable"] = json!(problems);
        }
        Ok(ToolResult::text(result.to_string()))
    }

    fn load(&self, call: &Call, session_id: Option<&str>) -> Outcome {
        let name = call.str("name").unwrap_or_default();
        let offset = call.u64("offset").unwrap_or(0) as usize;
        let (skill, page) = self.skills.page(name, offset).map_err(skill_error)?;
        let folder = format!(
            "Its folder (scripts and references it names are there): {}",
            skill.meta.folder().display()
        );
        let more = match page.next {
            Some(next) => format!(
                "\n\n[Characters {offset} to {next} of {}. The next part: skill load \
                 name=\"{}\" offset={next}]",
                page.total, skill.meta.name
            ),
            None if offset > 0 => format!("\n\n[The end of `{}`.]", skill.meta.name),
            None => String::new(),
        };
        if offset > 0 {
            // A later page: read now, the prompt keeps what it has.
            return Ok(ToolResult::text(format!(
                "Skill `{}`, from character {offset}. {folder}\n\n{}{more}",
                skill.meta.name, page.text
            )));
        }
        let Some(session_id) = session_id else {
            // No session to keep it in (a call from outside a chat): return it all the same.
            return Ok(ToolResult::text(format!(
                "Skill `{}` (not kept in a prompt: this call has no chat session). {folder}\n\n{}{more}",
                skill.meta.name, page.text
            )));
        };
        let (skill, evicted) = self.skills.load(session_id, name).map_err(skill_error)?;
        let mut header = format!(
            "Skill `{}` is in your prompt for the next {MANUAL_TTL} turns. {folder}",
            skill.meta.name
        );
        if !evicted.is_empty() {
            header.push_str(&format!(
                " To make room, these left it: {}.",
                evicted.join(", ")
            ));
        }
        Ok(ToolResult::text(format!("{header}\n\n{}{more}", page.text)))
    }

    fn user_dir(&self) -> Result<&Path, ToolResult> {
        self.skills.user_dir().ok_or_else(|| {
            ToolResult::error(
                ErrorCode::ToolFailed,
                "this Osprey has no directory for your own skills",
            )
        })
    }

    fn create(&self, call: &Call) -> Outcome {
        let user_dir = self.user_dir()?;
        let (front, body, text) = skill_from_call(call, None)?;
        let name = front.name.clone().unwrap_or_default();
        if let Some(existing) = self.skills.catalog().get(&name) {
            return Err(match existing.source {
                SkillSource::User => invalid(format!(
                    "you already have a skill named `{name}`: use update to change it"
                )),
                _ => refused(format!(
                    "`{name}` is {}; a skill of yours under the same name would hide it. \
                     Choose another name",
                    source_phrase(&existing.source)
                )),
            });
        }
        let folder = user_dir.join(&name);
        if folder.join(SKILL_FILE).exists() {
            return Err(invalid(format!(
                "{} already holds a SKILL.md (under another name in its frontmatter); \
                 choose another name",
                folder.display()
            )));
        }
        write_atomically(user_dir, &name, &text).map_err(skill_error)?;
        self.skills.catalog().refresh();
        self.skills.changed(&name);
        Ok(ToolResult::text(
            json!({
                "created": name,
                "path": folder.join(SKILL_FILE),
                "triggers": front.triggers,
                "body_chars": body.chars().count(),
            })
            .to_string(),
        ))
    }

    fn update(&self, call: &Call) -> Outcome {
        let user_dir = self.user_dir()?;
        let name = call.str("name").unwrap_or_default();
        let existing = self.owned(user_dir, name)?;
        let current = self.skills.catalog().load(name).map_err(skill_error)?;
        let (front, _, text) = skill_from_call(call, Some((&existing, &current.body)))?;
        if front.name.as_deref() != Some(name) {
            return Err(invalid(format!(
                "update keeps the name: the content names `{}`, not `{name}` (create a new \
                 skill and delete this one to rename it)",
                front.name.unwrap_or_default()
            )));
        }
        let folder = folder_of(&existing)?;
        write_atomically(user_dir, &folder, &text).map_err(skill_error)?;
        self.skills.catalog().refresh();
        self.skills.changed(name);
        Ok(ToolResult::text(
            json!({"updated": name, "path": existing.path}).to_string(),
        ))
    }

    fn delete(&self, call: &Call) -> Outcome {
        let user_dir = self.user_dir()?;
        let name = call.str("name").unwrap_or_default();
        let existing = self.owned(user_dir, name)?;
        let folder = user_dir.join(folder_of(&existing)?);
        let file = folder.join(SKILL_FILE);
        std::fs::remove_file(&file).map_err(|source| {
            skill_error(SkillError::Write {
                path: file.clone(),
                source,
            })
        })?;
        // Other files the person keeps beside the skill stay; the folder goes once empty.
        let kept_folder = std::fs::remove_dir(&folder).is_err();
        self.skills.catalog().refresh();
        self.skills.changed(name);
        let mut result = json!({"deleted": name});
        if kept_folder {
            result["kept"] = json!(format!(
                "{} holds other files and was left in place",
                folder.display()
            ));
        }
        Ok(ToolResult::text(result.to_string()))
    }

    /// The person's skill `name`, refusing bundled and app skills and anything whose file is not
    /// a plain folder directly in the user directory.
    fn owned(&self, user_dir: &Path, name: &str) -> Result<SkillMeta, ToolResult> {
        validate_name(name)?;
        let meta = self
            .skills
            .catalog()
            .get(name)
            .ok_or_else(|| not_found(name))?;
        if meta.source != SkillSource::User {
            return Err(refused(format!(
                "`{name}` is {} and cannot be changed here; create a skill of your own under \
                 another name instead",
                source_phrase(&meta.source)
            )));
        }
        let folder = folder_of(&meta)?;
        let expected = user_dir.join(&folder).join(SKILL_FILE);
        let is_plain_dir = std::fs::symlink_metadata(user_dir.join(&folder))
            .map(|m| m.is_dir())
            .unwrap_or(false);
        if meta.path != expected || !is_plain_dir {
            return Err(refused(format!(
                "`{name}` is not a plain folder in {}; change it by hand",
                user_dir.display()
            )));
        }
        Ok(meta)
    }
}

type Outcome = Result<ToolResult, ToolResult>;

fn invalid(message: impl Into<String>) -> ToolResult {
    ToolResult::error(ErrorCode::InvalidInput, message)
}

/// A refusal the model can act on (another name, a skill of its own): bad input, not a failure.
fn refused(message: impl Into<String>) -> ToolResult {
    ToolResult::error(ErrorCode::InvalidInput, message)
}

fn not_found(name: &str) -> ToolResult {
    ToolResult::error(
        ErrorCode::ToolFailed,
        format!("no skill named `{name}` (skill catalog lists them)"),
    )
}

fn skill_error(error: SkillError) -> ToolResult {
    match error {
        SkillError::NotFound(name) => not_found(&name),
        SkillError::Refused(message) => refused(message),
        SkillError::Invalid { .. } => invalid(error.to_string()),
        other => ToolResult::error(ErrorCode::ToolFailed, other.to_string()),
    }
}

fn source_phrase(source: &SkillSource) -> String {
    match source {
        SkillSource::Bundled => "a bundled skill (shipped with Osprey)".into(),
        SkillSource::App(app) => format!("a skill of the app `{app}` (updated with the app)"),
        SkillSource::User => "your own skill".into(),
    }
}

/// The folder a skill's SKILL.md sits in.
fn folder_of(meta: &SkillMeta) -> Result<String, ToolResult> {
    meta.path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            ToolResult::error(
                ErrorCode::ToolFailed,
                format!("cannot tell the folder of {}", meta.path.display()),
            )
        })
}

/// Names are folder names too: lowercase ASCII letters, digits, `-` and `_`, starting with a
/// letter or digit, so `..`, `/`, `\`, dots and hidden names cannot occur.
pub fn validate_name(name: &str) -> Result<(), ToolResult> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name.as_bytes()[0].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "`{name}` is not a usable skill name: use 1 to {MAX_NAME_CHARS} lowercase letters, \
             digits, `-` or `_`, starting with a letter or digit (it becomes a folder name)"
        )))
    }
}

/// Checks a skill's frontmatter and body; returns the problems in one message.
pub fn validate(front: &Frontmatter, body: &str) -> Result<(), ToolResult> {
    let name = front.name.as_deref().unwrap_or_default();
    validate_name(name)?;
    let mut problems = Vec::new();
    match front.description.as_deref().map(str::trim) {
        None | Some("") => problems
            .push("`description` is missing: one line saying what the skill is for".to_string()),
        Some(d) if d.contains('\n') => problems.push("`description` must be one line".into()),
        Some(d) if d.chars().count() > MAX_DESCRIPTION_CHARS => problems.push(format!(
            "`description` is longer than {MAX_DESCRIPTION_CHARS} characters"
        )),
        Some(_) => {}
    }
    if front.triggers.len() > MAX_TRIGGERS {
        problems.push(format!("at most {MAX_TRIGGERS} triggers"));
    }
    for trigger in &front.triggers {
        if trigger.contains('\n') || trigger.chars().count() > MAX_TRIGGER_CHARS {
            problems.push(format!(
                "trigger `{trigger}` must be one line of at most {MAX_TRIGGER_CHARS} characters"
            ));
        } else if !trigger.chars().any(char::is_alphanumeric) {
            problems.push(format!("trigger `{trigger}` has no letters or digits"));
        }
    }
    let chars = body.chars().count();
    if body.trim().is_empty() {
        problems.push("the body (the instructions) is empty".into());
    } else if chars > BUDGET_CHARS {
        problems.push(format!(
            "the body has {chars} characters; a skill must fit the prompt's {BUDGET_CHARS}"
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(invalid(format!(
            "the skill is not valid: {}",
            problems.join("; ")
        )))
    }
}

/// The skill a create or update call describes: from `content` (a whole SKILL.md, checked) or
/// from the separate fields over `existing` (update). Returns the frontmatter, the body and the
/// file's text.
fn skill_from_call(
    call: &Call,
    existing: Option<(&SkillMeta, &str)>,
) -> Result<(Frontmatter, String, String), ToolResult> {
    if let Some(content) = call.str("content") {
        if !content.trim_start().starts_with("---") {
            return Err(invalid(
                "`content` must be a whole SKILL.md starting with a `---` frontmatter block \
                 (name, description, triggers)",
            ));
        }
        let (mut front, body) = parse_skill(content)
            .map_err(|e| invalid(format!("the SKILL.md frontmatter cannot be read: {e}")))?;
        let named_in_file = front.name.is_some();
        if let Some(name) = call.str("name") {
            match &front.name {
                None => front.name = Some(name.to_string()),
                Some(in_file) if in_file != name => {
                    return Err(invalid(format!(
                        "`name` is `{name}` but the frontmatter says `{in_file}`"
                    )));
                }
                Some(_) => {}
            }
        }
        validate(&front, body)?;
        // The person's file as written, unless the name came from the call and must be added.
        let text = if named_in_file {
            content.to_string()
        } else {
            render_skill(&front, body)
        };
        return Ok((front, body.to_string(), text));
    }
    let triggers = match call.input.get("triggers") {
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(|t| t.trim().to_string())
                .collect::<Vec<_>>(),
        ),
        _ => None,
    };
    let front = Frontmatter {
        name: call
            .str("name")
            .map(String::from)
            .or_else(|| existing.map(|(m, _)| m.name.clone())),
        description: call
            .str("description")
            .map(|d| d.trim().to_string())
            .or_else(|| existing.map(|(m, _)| m.description.clone())),
        triggers: triggers
            .or_else(|| existing.map(|(m, _)| m.triggers.clone()))
            .unwrap_or_default(),
    };
    let body = call
        .str("body")
        .map(String::from)
        .or_else(|| existing.map(|(_, body)| body.to_string()))
        .unwrap_or_default();
    validate(&front, &body)?;
    let mut body = body;
    if !body.ends_with('\n') {
        body.push('\n');
    }
    let text = render_skill(&front, &body);
    Ok((front, body, text))
}

/// Writes `<dir>/<folder>/SKILL.md` through a temporary file in the same folder and a rename.
fn write_atomically(dir: &Path, folder: &str, text: &str) -> Result<PathBuf, SkillError> {
    let folder = dir.join(folder);
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SkillError::Write { path, source }
    };
    std::fs::create_dir_all(&folder).map_err(write_error(&folder))?;
    let path = folder.join(SKILL_FILE);
    let temporary = folder.join(format!(".{SKILL_FILE}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)
    })();
    if let Err(source) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(SkillError::Write { path, source });
    }
    Ok(path)
}

impl DomainTool for SkillTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        CallFacts {
            summary: format!(
                "skill {} {}",
                call.action(),
                call.str("name").or(call.str("query")).unwrap_or_default()
            )
            .trim_end()
            .to_string(),
            ..Default::default()
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let session = ctx.session_id.as_deref();
            let outcome = match call.action() {
                "catalog" => self.catalog(&call, session),
                "load" => self.load(&call, session),
                "create" => self.create(&call),
                "update" => self.update(&call),
                "delete" => self.delete(&call),
                other => Err(invalid(format!("the skill tool has no action `{other}`"))),
            };
            outcome.unwrap_or_else(|e| e)
        })
    }
}
