//! The `store` tool: the agent browses the store the settings name (`store.url` or
//! `$OSPREY_STORE_URL`, read at each call) and installs from it. Resources `apps` (list, get,
//! featured, popular, reviews, install, uninstall) and `skills` (list, get, install, uninstall);
//! fields `id`, `query`, `category`, `page`, `page_size`.
//!
//! Reading is free. Installing and uninstalling are always asked, whatever the approval policy
//! (`full` included), the origin or an earlier answer: only the person's answer to that very call
//! lets it run (`CallFacts::ask_every_time`), and with asking off it is refused. The question
//! carries what the desktop's install prompt shows ([`ApprovalDetails`]): the app's name, publisher,
//! the store key that signed it, its version and its permissions in plain words (a skill's author,
//! version and files). The install then holds the store to what was shown: a package or archive
//! whose version or SHA-256 changed after the question is refused.
//!
//! Apps install through the core's one verified path ([`Core::install_store_app_expecting`]);
//! skills through [`Core::install_store_skill`] (signature first, hardened unpacking, the skill
//! catalog refreshed so the skill is usable at once).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use futures::future::BoxFuture;
use osprey_apps::skill_package::{
    SkillExpectation, SkillInstallOutcome, SkillInstaller, SkillRecord, skill_install_details,
};
use osprey_apps::store_client::{Shelf, app_install_details};
use osprey_tools::{
    ApprovalNeed, Call, CallFacts, DetailsFuture, Domain, DomainTool, FieldType, ToolContext,
};
use osprey_types::{
    ApprovalDetails, ErrorCode, StoreAppSummary, StoreCatalogPage, StoreInstallState, ToolResult,
    UiErrorCode,
};
use serde_json::Value;

use crate::{Core, CoreError, CoreResult, WeakCore};

/// Entries a page holds when `page_size` is not given, and the most it may ask for.
pub const DEFAULT_PAGE_SIZE: u32 = 20;
pub const MAX_PAGE_SIZE: u32 = 100;
/// Approved installs waiting to run, kept by call id (older ones are forgotten).
const MAX_APPROVED: usize = 64;

/// What the person saw when asked to install: the install must get exactly that.
#[derive(Clone, Debug)]
enum Approved {
    App {
        id: String,
        sha256: String,
    },
    Skill {
        name: String,
        expected: SkillExpectation,
    },
}

/// The `store` domain tool. Holds the core weakly (the core holds the registry that holds it).
pub struct StoreTool {
    domain: Domain,
    core: Arc<OnceLock<WeakCore>>,
    approved: Mutex<VecDeque<(String, Approved)>>,
}

impl StoreTool {
    /// The tool for the core the slot will hold (filled once the core is built).
    pub(crate) fn new(core: Arc<OnceLock<WeakCore>>) -> StoreTool {
        StoreTool {
            domain: domain_table(),
            core,
            approved: Mutex::new(VecDeque::new()),
        }
    }

    fn core(&self) -> Result<Core, ToolResult> {
        self.core
            .get()
            .and_then(WeakCore::upgrade)
            .ok_or_else(|| ToolResult::error(ErrorCode::ToolFailed, "Osprey is shutting down"))
    }

    fn remember(&self, call_id: &str, approved: Approved) {
        let mut list = self.approved.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|(id, _)| id != call_id);
        if list.len() >= MAX_APPROVED {
            list.pop_front();
        }
        list.push_back((call_id.to_string(), approved));
    }

    fn take_approved(&self, call_id: &str) -> Option<Approved> {
        let mut list = self.approved.lock().unwrap_or_else(|e| e.into_inner());
        let index = list.iter().position(|(id, _)| id == call_id)?;
        list.remove(index).map(|(_, approved)| approved)
    }

    async fn details(
        &self,
        ctx: &ToolContext,
        call: &Call,
    ) -> Result<Option<Box<ApprovalDetails>>, ToolResult> {
        let core = self.core()?;
        let id = call.str("id").unwrap_or_default();
        let cannot_ask = |error: CoreError| {
            ToolResult::error(
                tool_code(&error),
                format!(
                    "cannot ask about this {} of `{id}`: {}",
                    call.action(),
                    error.message
                ),
            )
        };
        match (call.resource(), call.action()) {
            ("apps", "install") => {
                let (client, _) = core.store_client().map_err(cannot_ask)?;
                let installed = core
                    .installed_apps()
                    .await
                    .into_iter()
                    .find(|app| app.manifest.id == id && !app.sideloaded)
                    .map(|app| app.manifest);
                let (mut details, _, sha256) = app_install_details(&client, id, installed.as_ref())
                    .await
                    .map_err(|e| cannot_ask(e.into()))?;
                if ctx.origin == osprey_types::Origin::System
                    && ctx.session_id.as_deref() == Some(crate::store_push::STORE_PUSH_SESSION)
                {
                    details.notes.insert(
                        0,
                        "The store says you installed it on another device or on the store's \
                         page. It is installed here only if you allow it."
                            .to_string(),
                    );
                }
                self.remember(
                    &ctx.call_id,
                    Approved::App {
                        id: id.to_string(),
                        sha256,
                    },
                );
                Ok(Some(Box::new(details)))
            }
            ("apps", "uninstall") => {
                let app = core
                    .installed_apps()
                    .await
                    .into_iter()
                    .find(|app| app.manifest.id == id)
                    .ok_or_else(|| not_installed(&format!("no app `{id}` is installed")))?;
                let manifest = app.manifest;
                Ok(Some(Box::new(ApprovalDetails {
                    title: format!(
                        "Uninstall the app {} {} and delete its data",
                        manifest.name, manifest.version
                    ),
                    kind: "app".into(),
                    name: manifest.name.clone(),
                    id: manifest.id.clone(),
                    version: Some(manifest.version.clone()),
                    publisher: None,
                    signer: None,
                    permissions: crate::store::explain_permissions(&manifest.permissions),
                    files: Vec::new(),
                    notes: vec![
                        "It is stopped, and its folder goes with its data and logs.".to_string(),
                    ],
                })))
            }
            ("skills", "install") => {
                let (client, _) = core.store_client().map_err(cannot_ask)?;
                let installed = core.skill_installer().map(|i| i.record(id)).ok().flatten();
                let (details, expected) = skill_install_details(&client, id, installed.as_ref())
                    .await
                    .map_err(|e| cannot_ask(e.into()))?;
                self.remember(
                    &ctx.call_id,
                    Approved::Skill {
                        name: id.to_string(),
                        expected,
                    },
                );
                Ok(Some(Box::new(details)))
            }
            ("skills", "uninstall") => {
                let record = core
                    .skill_installer()
                    .map_err(cannot_ask)?
                    .record(id)
                    .ok_or_else(|| {
                        not_installed(&format!(
                            "no skill `{id}` is installed from the store (skill catalog \
                             source=user lists your own; the skill tool deletes those)"
                        ))
                    })?;
                Ok(Some(Box::new(ApprovalDetails {
                    title: format!("Remove the skill {} {}", record.name, record.version),
                    kind: "skill".into(),
                    name: record.name.clone(),
                    id: record.name.clone(),
                    version: Some(record.version.clone()),
                    publisher: None,
                    signer: Some(format!("installed from the store at {}", record.store_url)),
                    permissions: Vec::new(),
                    files: Vec::new(),
                    notes: vec!["Its folder is deleted with every file in it.".to_string()],
                })))
            }
            _ => Ok(None),
        }
    }

    async fn dispatch(&self, ctx: &ToolContext, call: &Call) -> Result<String, ToolResult> {
        let core = self.core()?;
        let id = call.str("id").unwrap_or_default().trim().to_string();
        let query = call.str("query").unwrap_or_default().trim().to_string();
        let category = call
            .str("category")
            .map(str::trim)
            .filter(|c| !c.is_empty());
        let page = call.u64("page").unwrap_or(1).clamp(1, 100_000) as u32;
        let page_size = call.u64("page_size").map_or(DEFAULT_PAGE_SIZE, |n| {
            n.clamp(1, u64::from(MAX_PAGE_SIZE)) as u32
        });
        let failed = |error: CoreError| ToolResult::error(tool_code(&error), error.message);
        match (call.resource(), call.action()) {
            ("apps", "list" | "featured" | "popular") => {
                let shelf = match call.action() {
                    "featured" => Shelf::Featured,
                    "popular" => Shelf::Popular,
                    _ => Shelf::All,
                };
                let listed = core
                    .store_listing(shelf, &query, category, page, page_size)
                    .await
                    .map_err(failed)?;
                Ok(apps_page(call.action(), &query, category, &listed))
            }
            ("apps", "get") => {
                let details = core.store_app(&id).await.map_err(failed)?;
                Ok(app_text(&details))
            }
            ("apps", "reviews") => {
                let details = core.store_app(&id).await.map_err(failed)?;
                Ok(reviews_text(&details, page, page_size))
            }
            ("apps", "install") => {
                let sha256 = match self.take_approved(&ctx.call_id) {
                    Some(Approved::App {
                        id: approved,
                        sha256,
                    }) if approved == id => sha256,
                    _ => return Err(not_approved(&id)),
                };
                // An install the store pushed is not told back to it (see store_push.rs).
                let report =
                    if ctx.session_id.as_deref() == Some(crate::store_push::STORE_PUSH_SESSION) {
                        core.install_pushed_store_app(&id, &sha256).await
                    } else {
                        core.install_store_app_expecting(&id, Some(&sha256)).await
                    }
                    .map_err(failed)?;
                Ok(format!(
                    "{}. {}",
                    report.message,
                    match report.outcome {
                        osprey_types::AppInstallOutcome::PendingApproval => {
                            "The installed version keeps running until the person approves the \
                             new permissions on the Apps page."
                        }
                        _ =>
                            "A running Osprey launches it (or restarts it on the new version); \
                              its tools appear when it is up.",
                    }
                ))
            }
            ("apps", "uninstall") => {
                core.uninstall_app(&id).await.map_err(failed)?;
                Ok(format!("Uninstalled the app {id} with its data."))
            }
            ("skills", "list") => {
                let listed = core
                    .store_skill_listing(&query, category, page, page_size)
                    .await
                    .map_err(failed)?;
                Ok(skills_page(&core, &query, category, &listed))
            }
            ("skills", "get") => {
                let entry = core.store_skill(&id).await.map_err(failed)?;
                Ok(skill_text(&core, &entry))
            }
            ("skills", "install") => {
                let expected = match self.take_approved(&ctx.call_id) {
                    Some(Approved::Skill { name, expected }) if name == id => expected,
                    _ => return Err(not_approved(&id)),
                };
                let outcome = core
                    .install_store_skill(&id, Some(&expected))
                    .await
                    .map_err(failed)?;
                Ok(installed_skill_text(&outcome))
            }
            ("skills", "uninstall") => {
                let record = core.uninstall_store_skill(&id).await.map_err(failed)?;
                Ok(format!(
                    "Removed the skill {} {} (installed from {}).",
                    record.name, record.version, record.store_url
                ))
            }
            (resource, action) => Err(ToolResult::error(
                ErrorCode::InvalidInput,
                format!("`{resource}` has no action `{action}`"),
            )),
        }
    }
}

impl DomainTool for StoreTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        let id = call.str("id").unwrap_or_default();
        let what = if call.resource() == "skills" {
            "skill"
        } else {
            "app"
        };
        let summary = match call.action() {
            "install" => format!("install the {what} `{id}` from the store"),
            "uninstall" if what == "skill" => format!("remove the store skill `{id}`"),
            "uninstall" => format!("uninstall the app `{id}` and delete its data"),
            "get" => format!("read the store's page of the {what} `{id}`"),
            "reviews" => format!("read the reviews of the app `{id}`"),
            action => match call.str("query").filter(|q| !q.trim().is_empty()) {
                Some(query) => format!("search the store's {} for \"{query}\"", call.resource()),
                None => format!("{action} the store's {}", call.resource()),
            },
        };
        let ask_every_time = matches!(call.action(), "install" | "uninstall").then(|| {
            format!(
                "{} from the store changes what Osprey runs or follows, so only your answer to \
                 this very call lets it run",
                if call.action() == "install" {
                    "installing"
                } else {
                    "uninstalling"
                }
            )
        });
        CallFacts {
            summary,
            app: (what == "app" && !id.is_empty()).then(|| id.to_string()),
            ask_every_time,
            ..CallFacts::default()
        }
    }

    fn approval_details<'a>(&'a self, ctx: &'a ToolContext, call: &'a Call) -> DetailsFuture<'a> {
        Box::pin(self.details(ctx, call))
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match self.dispatch(ctx, &call).await {
                Ok(text) => ToolResult::text(text),
                Err(result) => result,
            }
        })
    }
}

/// The `store` tool's table.
pub fn domain_table() -> Domain {
    use ApprovalNeed::{None as Free, Required};
    Domain::new(
        "store",
        "The store Osprey is set to (Settings > store.url): find apps and skills and install \
         them. Apps add tools and run in Osprey's sandbox with the permissions they declare; \
         skills are instructions (and their scripts) for particular tasks. Results are pages: \
         pass `page` for the next. Install and uninstall are always asked: the person sees the \
         name, publisher, signing key, version and permissions and answers that very call; a \
         refusal is final for that call.",
    )
    .closed_world()
    .resource(
        "apps",
        &["app", "application", "applications"],
        &[
            (
                "list",
                "Browse or search the store's apps (`query`, `category`, `page`, `page_size`)",
                Free,
            ),
            (
                "get",
                "One app: description, publisher, version, permissions in plain words, rating, \
                 whether it is installed or has an update",
                Free,
            ),
            ("featured", "The apps the store features", Free),
            ("popular", "The most downloaded apps", Free),
            ("reviews", "An app's reviews, newest first", Free),
            (
                "install",
                "Install (or update) an app from the store by `id` (always asked)",
                Required,
            ),
            (
                "uninstall",
                "Stop an installed app and remove it with its data (always asked)",
                Required,
            ),
        ],
    )
    .resource(
        "skills",
        &["skill"],
        &[
            (
                "list",
                "Browse or search the store's skills (`query`, `category`, `page`, `page_size`)",
                Free,
            ),
            (
                "get",
                "One skill: description, author, version, files, installs, whether it is \
                 installed",
                Free,
            ),
            (
                "install",
                "Install (or update) a skill from the store by `id` (its name); it is usable at \
                 once (always asked)",
                Required,
            ),
            (
                "uninstall",
                "Remove a skill installed from the store (always asked)",
                Required,
            ),
        ],
    )
    .field(
        "id",
        FieldType::String,
        "The app's id, or the skill's name (required for get, reviews, install, uninstall)",
    )
    .required_for(&["get", "reviews", "install", "uninstall"])
    .field(
        "query",
        FieldType::String,
        "list: words to search names and descriptions for",
    )
    .field(
        "category",
        FieldType::String,
        "list, featured, popular: only this category (`productivity`, `developer`, ...)",
    )
    .field("page", FieldType::Integer, "Which page, from 1 (default 1)")
    .field(
        "page_size",
        FieldType::Integer,
        "Entries a page, 1 to 100 (default 20)",
    )
}

fn tool_code(error: &CoreError) -> ErrorCode {
    match error.code {
        UiErrorCode::UnknownApp | UiErrorCode::NotInstalled => ErrorCode::InvalidInput,
        _ => ErrorCode::ToolFailed,
    }
}

fn not_installed(message: &str) -> ToolResult {
    ToolResult::error(ErrorCode::InvalidInput, message)
}

fn not_approved(id: &str) -> ToolResult {
    ToolResult::error(
        ErrorCode::ApprovalDenied,
        format!("the install of `{id}` was not approved with its details: nothing was installed"),
    )
}

/// Text from a store's author on one line, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

fn pages(total: u64, per_page: u32) -> u64 {
    total.div_ceil(u64::from(per_page.max(1))).max(1)
}

/// "page 2 of 5 (20 a page); next: page=3" and the like.
fn page_line(total: u64, page: u32, per_page: u32, shown: usize) -> String {
    let last = pages(total, per_page);
    let mut line = format!("page {page} of {last} ({per_page} a page, {shown} here)");
    if u64::from(page) < last {
        line.push_str(&format!("; next: page={}", page + 1));
    }
    line
}

fn rating(rating: Option<f64>, reviews: u64) -> String {
    match rating {
        Some(rating) => format!(
            "rated {rating:.1}/5 ({reviews} review{})",
            if reviews == 1 { "" } else { "s" }
        ),
        None => "no ratings".to_string(),
    }
}

fn app_state(app: &StoreAppSummary) -> String {
    match &app.installed_version {
        None => String::new(),
        Some(installed) if *installed == app.version => format!(" [installed {installed}]"),
        Some(installed) => format!(
            " [installed {installed}; update available: {}]",
            app.version
        ),
    }
}

fn app_line(app: &StoreAppSummary) -> String {
    let mut line = format!("- {} — {} {}", app.id, one_line(&app.name, 64), app.version);
    if let Some(publisher) = &app.publisher {
        line.push_str(&format!(" by {}", one_line(publisher, 40)));
    }
    if let Some(category) = &app.category {
        line.push_str(&format!(" [{category}]"));
    }
    line.push_str(&format!(
        ", {}, {} downloads: {}{}\n",
        rating(app.rating, app.review_count),
        app.downloads,
        one_line(&app.description, 120),
        app_state(app)
    ));
    line
}

fn apps_page(
    action: &str,
    query: &str,
    category: Option<&str>,
    listed: &StoreCatalogPage,
) -> String {
    let mut head = match action {
        "featured" => "Featured apps".to_string(),
        "popular" => "Popular apps (most downloaded first)".to_string(),
        _ if query.is_empty() => "Apps".to_string(),
        _ => format!("Apps matching \"{query}\""),
    };
    if let Some(category) = category {
        head.push_str(&format!(" in {category}"));
    }
    let mut text = format!(
        "{head}: {} in all, {}.\n",
        listed.total,
        page_line(
            listed.total,
            listed.page,
            listed.per_page,
            listed.apps.len()
        )
    );
    if listed.apps.is_empty() {
        text.push_str("(none on this page)\n");
    }
    for app in &listed.apps {
        text.push_str(&app_line(app));
    }
    text.push_str("Details: store apps get id=...; install: store apps install id=... (asked).");
    text
}

fn app_text(details: &osprey_types::StoreAppDetails) -> String {
    let app = &details.app;
    let mut text = format!("{} ({}) {}", one_line(&app.name, 64), app.id, app.version);
    if let Some(publisher) = &app.publisher {
        text.push_str(&format!(" by {}", one_line(publisher, 60)));
    }
    if let Some(category) = &app.category {
        text.push_str(&format!(", category {category}"));
    }
    text.push_str(&format!(
        "\n{}\n{}, {} downloads, {} KB.\n",
        one_line(&app.description, 600),
        rating(app.rating, app.review_count),
        app.downloads,
        app.size.div_ceil(1024)
    ));
    if details.permissions.is_empty() {
        text.push_str("Permissions: none (it can only answer Osprey's calls).\n");
    } else {
        text.push_str("Permissions:\n");
        for permission in &details.permissions {
            let added = if details.added_permissions.contains(&permission.permission) {
                " (new in this version)"
            } else {
                ""
            };
            text.push_str(&format!(
                "- {} ({}; {:?} sensitivity){added}\n",
                permission.explanation, permission.permission, permission.sensitivity
            ));
        }
    }
    let state = match details.install_state {
        StoreInstallState::NotInstalled => "not installed".to_string(),
        StoreInstallState::Installed => "installed".to_string(),
        StoreInstallState::UpdateAvailable => format!(
            "installed {}; update available to {}",
            app.installed_version.as_deref().unwrap_or("?"),
            app.version
        ),
        StoreInstallState::UpdatePending => {
            "an update waits for the person's approval on the Apps page".to_string()
        }
    };
    text.push_str(&format!("State: {state}.\n"));
    if !details.reviews.is_empty() {
        text.push_str(&format!(
            "{} review{}: store apps reviews id={}.\n",
            details.reviews.len(),
            if details.reviews.len() == 1 { "" } else { "s" },
            app.id
        ));
    }
    text
}

fn reviews_text(details: &osprey_types::StoreAppDetails, page: u32, per_page: u32) -> String {
    let app = &details.app;
    let total = details.reviews.len() as u64;
    let start = (page.saturating_sub(1) as usize).saturating_mul(per_page as usize);
    let shown: Vec<_> = details
        .reviews
        .iter()
        .skip(start)
        .take(per_page as usize)
        .collect();
    let mut text = format!(
        "Reviews of {} ({}), {}: {}.\n",
        one_line(&app.name, 64),
        app.id,
        rating(app.rating, app.review_count),
        page_line(total, page, per_page, shown.len())
    );
    if shown.is_empty() {
        text.push_str("(no reviews on this page)\n");
    }
    for review in shown {
        text.push_str(&format!(
            "- {}/5 by {}: {}\n",
            review.rating,
            one_line(&review.author, 40),
            one_line(&review.body, 300)
        ));
    }
    text
}

fn skill_state(core: &Core, entry: &Value) -> String {
    let name = entry["name"].as_str().unwrap_or_default();
    let version = entry["version"].as_str().unwrap_or_default();
    let record = core.skill_installer().ok().and_then(|i| i.record(name));
    match record {
        Some(record) if record.version == version => format!(" [installed {version}]"),
        Some(record) => format!(
            " [installed {}; update available: {version}]",
            record.version
        ),
        None => String::new(),
    }
}

fn skills_page(core: &Core, query: &str, category: Option<&str>, listed: &Value) -> String {
    let total = listed["total"].as_u64().unwrap_or_default();
    let page = listed["page"].as_u64().unwrap_or(1) as u32;
    let per_page = listed["per_page"]
        .as_u64()
        .unwrap_or(u64::from(DEFAULT_PAGE_SIZE)) as u32;
    let skills = listed["skills"].as_array().cloned().unwrap_or_default();
    let mut head = if query.is_empty() {
        "Skills".to_string()
    } else {
        format!("Skills matching \"{query}\"")
    };
    if let Some(category) = category {
        head.push_str(&format!(" in {category}"));
    }
    let mut text = format!(
        "{head}: {total} in all, {}.\n",
        page_line(total, page, per_page, skills.len())
    );
    if skills.is_empty() {
        text.push_str("(none on this page)\n");
    }
    for skill in &skills {
        let text_of = |key: &str| skill[key].as_str().unwrap_or_default();
        let mut line = format!("- {} {}", text_of("name"), text_of("version"));
        if let Some(author) = skill["author"].as_str() {
            line.push_str(&format!(" by {}", one_line(author, 40)));
        }
        if let Some(category) = skill["category"].as_str() {
            line.push_str(&format!(" [{category}]"));
        }
        line.push_str(&format!(
            ", {} installs: {}{}\n",
            skill["installs"].as_u64().unwrap_or_default(),
            one_line(text_of("description"), 120),
            skill_state(core, skill)
        ));
        text.push_str(&line);
    }
    text.push_str(
        "Details: store skills get id=NAME; install: store skills install id=NAME (asked).",
    );
    text
}

fn skill_text(core: &Core, entry: &Value) -> String {
    let text_of = |key: &str| entry[key].as_str().unwrap_or_default();
    let mut text = format!("Skill {} {}", text_of("name"), text_of("version"));
    if let Some(author) = entry["author"].as_str() {
        text.push_str(&format!(" by {}", one_line(author, 60)));
    }
    if let Some(category) = entry["category"].as_str() {
        text.push_str(&format!(", category {category}"));
    }
    if let Some(license) = entry["license"].as_str() {
        text.push_str(&format!(", license {}", one_line(license, 60)));
    }
    let files: Vec<&str> = entry["files"]
        .as_array()
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let state = skill_state(core, entry);
    text.push_str(&format!(
        "\n{}\n{} installs, {} KB. Files ({}): {}.\nState: {}.\n",
        one_line(text_of("description"), 1024),
        entry["installs"].as_u64().unwrap_or_default(),
        entry["size"].as_u64().unwrap_or_default().div_ceil(1024),
        files.len(),
        files.join(", "),
        if state.is_empty() {
            "not installed".to_string()
        } else {
            state.trim().trim_matches(['[', ']']).to_string()
        }
    ));
    text
}

fn installed_skill_text(outcome: &SkillInstallOutcome) -> String {
    let verb = match &outcome.from_version {
        Some(from) => format!(
            "Updated the skill {} from {from} to {}",
            outcome.name, outcome.version
        ),
        None => format!("Installed the skill {} {}", outcome.name, outcome.version),
    };
    format!(
        "{verb} into {} ({} files). It is in the skill catalog now: skill load name={} puts it \
         in the prompt.",
        outcome.path.display(),
        outcome.files.len(),
        outcome.name
    )
}

impl Core {
    /// The person's skill folder (`<data>/skills`) as the store installs into it.
    pub fn skill_installer(&self) -> CoreResult<SkillInstaller> {
        let dir = self.skills().user_dir().ok_or_else(|| {
            CoreError::new(
                UiErrorCode::Internal,
                "this Osprey has no folder for skills",
            )
        })?;
        Ok(SkillInstaller::new(dir))
    }

    /// One page of the store's skills (`{skills, total, page, per_page}`), searched by `query`,
    /// within `category` when given.
    pub async fn store_skill_listing(
        &self,
        query: &str,
        category: Option<&str>,
        page: u32,
        per_page: u32,
    ) -> CoreResult<Value> {
        let (client, _) = self.store_client()?;
        Ok(client
            .skill_listing(
                Shelf::All,
                query.trim(),
                category,
                page.max(1),
                Some(per_page.clamp(1, MAX_PAGE_SIZE)),
            )
            .await?)
    }

    /// The store's entry for the skill `name`.
    pub async fn store_skill(&self, name: &str) -> CoreResult<Value> {
        let (client, _) = self.store_client()?;
        client.skill(name).await.map_err(|error| match &error {
            osprey_apps::Error::StoreRefused { code, .. } if code == "not_found" => CoreError::new(
                UiErrorCode::NotInstalled,
                format!("the store has no skill `{name}`"),
            ),
            _ => error.into(),
        })
    }

    /// Installs (or updates) the store skill `name` into `<data>/skills`: downloaded, its
    /// signature verified against the store's key (refused when it does not verify or no key
    /// can be had: nothing is unpacked then), unpacked with every check, its SKILL.md
    /// validated, placed, recorded (store, version) and put in the skill catalog at once. A
    /// bundled or app skill of that name, or the person's own, is never shadowed or replaced.
    /// With `expected`, the store's entry must still be what the person approved.
    pub async fn install_store_skill(
        &self,
        name: &str,
        expected: Option<&SkillExpectation>,
    ) -> CoreResult<SkillInstallOutcome> {
        let (client, _) = self.store_client()?;
        let installer = self.skill_installer()?;
        let catalog = self.skills().catalog();
        if let Some(existing) = catalog.all().into_iter().find(|s| s.name == name)
            && existing.source != osprey_agent::skills::SkillSource::User
        {
            return Err(CoreError::new(
                UiErrorCode::AlreadyInstalled,
                format!(
                    "a {} skill named `{name}` exists already; a store skill of the same name \
                     would hide it",
                    existing.source.kind()
                ),
            ));
        }
        let outcome = installer
            .install_from_store(&client, self.apps().trust(), name, expected)
            .await?;
        // The loader reads the folder again at its next use; active copies follow at once.
        catalog.refresh();
        self.skills().changed(name);
        Ok(outcome)
    }

    /// Removes the store skill `name` (one the store installed; the person's own skills are
    /// the skill tool's) and takes it out of the catalog and every prompt.
    pub async fn uninstall_store_skill(&self, name: &str) -> CoreResult<SkillRecord> {
        let installer = self.skill_installer()?;
        let owned = name.to_string();
        let record = tokio::task::spawn_blocking(move || installer.uninstall(&owned))
            .await
            .map_err(|e| CoreError::new(UiErrorCode::Internal, e.to_string()))??;
        self.skills().catalog().refresh();
        self.skills().changed(name);
        Ok(record)
    }
}
