//! A conversation's team for the front ends, and the agent types the person defines.
//!
//! The team is what the agent tool keeps about a conversation: the sub-agents under it (rows of
//! `subagent_tasks`, however deep), its branches, and the task graph its agents share
//! (`graph_tasks`, named by the conversation's session). [`Core::session_team`] reads it in one
//! go; [`CoreEvent::TeamChanged`] says when to read it again: the sub-agents call their observer
//! whenever a task starts, reports its status, ends or resumes, and the graph resource whenever
//! a task changes, and [`team_observer`] turns that into an event named by the conversation.
//!
//! Agent types are JSON files in `<data>/agents`; saving one here checks it with the loader's
//! own checks ([`osprey_agent::RoleCatalog::check_user_type`]), writes the file and loads the
//! catalog again, so the next spawn sees it without a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use osprey_agent::roles::{AgentTypeManifest, SCHEMA_VERSION};
use osprey_agent::{AgentSettings, TeamObserver};
use osprey_db::{GraphTask, SubAgentTask, SubAgentTasks};
use osprey_types::{
    AgentCatalogView, AgentTypeDraft, AgentTypeView, CoreEvent, TeamAgent, TeamGraphTask, TeamView,
    ToolPackView, UiErrorCode, UnavailablePack,
};

use crate::events::EventBus;
use crate::{Core, CoreError, CoreResult, settings};

/// The most sub-agents a team view lists (a conversation rarely has more than a few dozen).
const MAX_AGENTS: usize = 200;

/// The observer the sub-agents call: it names the conversation (the root session) in a
/// [`CoreEvent::TeamChanged`].
pub(crate) fn team_observer(tasks: SubAgentTasks, events: EventBus) -> TeamObserver {
    Arc::new(move |session: &str| {
        events.emit(CoreEvent::TeamChanged {
            session_id: root_of(&tasks, session),
        });
    })
}

/// The conversation `session` belongs to (the graph resource names its graph the same way).
fn root_of(tasks: &SubAgentTasks, session: &str) -> String {
    tasks
        .root_session(session)
        .unwrap_or_else(|_| session.to_string())
}

fn storage(error: osprey_db::Error) -> CoreError {
    CoreError::new(UiErrorCode::Storage, format!("reading the team: {error}"))
}

fn invalid(message: impl Into<String>) -> CoreError {
    CoreError::new(UiErrorCode::InvalidSetting, message)
}

impl Core {
    /// The team of the conversation `session_id`: its sub-agents (children first, each followed
    /// by its own children), its branches, and its task graph. Empty lists when it has none.
    pub fn session_team(&self, session_id: &str) -> CoreResult<TeamView> {
        let tasks = self.db().subagent_tasks();
        let mut agents = Vec::new();
        let mut branches = Vec::new();
        // Depth first, so a child's children follow it.
        let mut pending: Vec<SubAgentTask> = oldest_first(tasks.list(session_id, 1000))?;
        pending.reverse();
        while let Some(task) = pending.pop() {
            if agents.len() + branches.len() >= MAX_AGENTS {
                break;
            }
            let mut children = oldest_first(tasks.list(&task.session_id, 1000))?;
            children.reverse();
            let view = self.team_agent(&task);
            if task.kind == "branch" {
                branches.push(view);
            } else {
                agents.push(view);
            }
            pending.extend(children);
        }
        let graph = self.db().graph_tasks().list(session_id).map_err(storage)?;
        let graph = graph.iter().map(|t| graph_task(t, &graph)).collect();
        Ok(TeamView {
            session_id: session_id.to_string(),
            agents,
            branches,
            graph,
        })
    }

    fn team_agent(&self, task: &SubAgentTask) -> TeamAgent {
        TeamAgent {
            id: task.id,
            session_id: task.session_id.clone(),
            parent_session_id: task.parent_session_id.clone(),
            depth: task.depth,
            agent_type: task.agent_type.clone(),
            prompt: task.prompt.clone(),
            model: task.model.clone(),
            status: task.status.clone(),
            progress: task.progress.clone(),
            result: task.result.clone(),
            error: task.error.clone(),
            interactive: self.inner.subagents.is_interactive(task.id),
            delivered: task.delivered_ms.is_some(),
            started_ms: task.created_ms,
            finished_ms: task.finished_ms,
        }
    }

    /// Cancels the running sub-agent `task_id` of the conversation `session_id` (or of any
    /// sub-agent under it), as the agent tool's `task cancel` does: its descendants stop with
    /// it. A task that already ended is returned as it is.
    pub async fn cancel_subagent(&self, session_id: &str, task_id: i64) -> CoreResult<TeamAgent> {
        let tasks = self.db().subagent_tasks();
        let task = tasks
            .get(task_id)
            .map_err(storage)?
            .filter(|task| root_of(&tasks, &task.parent_session_id) == session_id)
            .ok_or_else(|| {
                invalid(format!(
                    "this conversation has no sub-agent {task_id}; the team panel lists its sub-agents"
                ))
            })?;
        let task = self
            .inner
            .subagents
            .cancel(&task.parent_session_id, task_id)
            .await
            .map_err(|message| CoreError::new(UiErrorCode::Internal, message))?;
        Ok(self.team_agent(&task))
    }

    /// The agent types and packs loaded now, and the files that were refused.
    pub fn agent_catalog(&self) -> AgentCatalogView {
        let catalog = self.inner.subagents.roles();
        let settings = self.agent_settings();
        let unavailable = |names: &mut dyn Iterator<Item = (&String, &String)>| {
            names
                .map(|(name, reason)| UnavailablePack {
                    name: name.clone(),
                    reason: reason.clone(),
                })
                .collect::<Vec<_>>()
        };
        let types = catalog
            .types()
            .map(|t| {
                let builtin = t.source.starts_with("built-in ");
                let own_model = if builtin {
                    t.manifest
                        .model
                        .clone()
                        .filter(|_| !settings.models.contains_key(&t.manifest.name))
                } else {
                    read_manifest(Path::new(&t.source)).and_then(|m| m.model)
                };
                AgentTypeView {
                    name: t.manifest.name.clone(),
                    description: t.manifest.description.clone(),
                    prompt: t.manifest.prompt.clone(),
                    model: t.manifest.model.clone(),
                    own_model,
                    model_from_setting: settings.models.contains_key(&t.manifest.name),
                    packs: t.manifest.packs.clone(),
                    builtin,
                    source: t.source.clone(),
                    unavailable_packs: unavailable(&mut t.unavailable_packs.iter()),
                }
            })
            .collect();
        let packs = catalog
            .packs()
            .map(|p| ToolPackView {
                name: p.manifest.name.clone(),
                description: p.manifest.description.clone(),
                risk: p.manifest.risk_profile.as_str().to_string(),
                tools: p.manifest.tools.clone(),
                builtin: p.source.starts_with("built-in"),
            })
            .collect();
        AgentCatalogView {
            types,
            packs,
            unavailable_packs: unavailable(&mut catalog.unavailable_packs().iter()),
            trust: settings.trust().as_str().to_string(),
            problems: catalog
                .problems()
                .iter()
                .filter(|p| !p.source.starts_with("built-in "))
                .map(|p| format!("{}: {}", p.source, p.message))
                .collect(),
        }
    }

    /// Saves the person's agent type to `<data>/agents/<name>.json` (replacing the file it was
    /// loaded from when it has the same name), after the loader's own checks: an invalid name,
    /// a pack that does not exist, a pack the trust level (`agents.trust`) refuses or whose
    /// tools are missing, is refused with the loader's message. The next spawn sees it.
    pub fn save_agent_type(&self, draft: AgentTypeDraft) -> CoreResult<AgentTypeView> {
        let manifest = AgentTypeManifest {
            schema_version: SCHEMA_VERSION,
            name: draft.name.trim().to_string(),
            description: draft.description.trim().to_string(),
            prompt: draft.prompt.trim().to_string(),
            model: draft
                .model
                .map(|m| m.trim().to_string())
                .filter(|m| !m.is_empty()),
            packs: draft.packs,
            tags: Vec::new(),
        };
        let catalog = self.inner.subagents.roles();
        let path = match catalog.agent_type(&manifest.name) {
            Ok(existing) if !existing.source.starts_with("built-in ") => {
                PathBuf::from(&existing.source)
            }
            _ => self.agents_dir().join(format!("{}.json", manifest.name)),
        };
        let source = path.display().to_string();
        catalog
            .check_user_type(manifest.clone(), &source, &self.agent_settings())
            .map_err(invalid)?;
        let text = serde_json::to_string_pretty(&manifest)
            .map_err(|e| CoreError::new(UiErrorCode::Internal, e.to_string()))?;
        write_atomically(&path, &text).map_err(|e| {
            CoreError::new(
                UiErrorCode::Io,
                format!("cannot write the agent type to {}: {e}", path.display()),
            )
        })?;
        self.reload_roles();
        self.agent_catalog()
            .types
            .into_iter()
            .find(|t| t.name == manifest.name)
            .ok_or_else(|| {
                CoreError::new(
                    UiErrorCode::Internal,
                    format!(
                        "the agent type `{}` was saved but did not load",
                        manifest.name
                    ),
                )
            })
    }

    /// Deletes the person's agent type `name` (its file); a built-in type cannot be deleted
    /// (a type of the same name of the person's own replaces it instead).
    pub fn delete_agent_type(&self, name: &str) -> CoreResult<()> {
        let catalog = self.inner.subagents.roles();
        let agent_type = catalog.agent_type(name).map_err(invalid)?;
        if agent_type.source.starts_with("built-in ") {
            return Err(invalid(format!(
                "`{}` is a built-in agent type and cannot be deleted",
                agent_type.manifest.name
            )));
        }
        let path = PathBuf::from(&agent_type.source);
        if path.parent() != Some(self.agents_dir().as_path()) {
            return Err(invalid(format!(
                "`{name}` was not loaded from {}",
                self.agents_dir().display()
            )));
        }
        std::fs::remove_file(&path).map_err(|e| {
            CoreError::new(
                UiErrorCode::Io,
                format!("cannot delete {}: {e}", path.display()),
            )
        })?;
        self.reload_roles();
        Ok(())
    }

    fn agents_dir(&self) -> PathBuf {
        self.data_dir().join("agents")
    }

    fn agent_settings(&self) -> AgentSettings {
        settings::read(&self.db().settings(), settings::AGENTS)
    }

    /// Loads the packs and agent types again, as at start, and tells the shells.
    fn reload_roles(&self) {
        self.inner.subagents.reload_roles();
        self.emit(CoreEvent::SettingChanged {
            key: settings::AGENTS.to_string(),
        });
    }
}

fn oldest_first(tasks: osprey_db::Result<Vec<SubAgentTask>>) -> CoreResult<Vec<SubAgentTask>> {
    let mut tasks = tasks.map_err(storage)?;
    tasks.sort_by_key(|t| t.id);
    Ok(tasks)
}

fn graph_task(task: &GraphTask, all: &[GraphTask]) -> TeamGraphTask {
    TeamGraphTask {
        id: task.id,
        title: task.title.clone(),
        description: task.description.clone(),
        status: task.status.as_str().to_string(),
        depends_on: task.depends_on.clone(),
        blocked_by: task.blocked_by(all),
        created_by: task.created_by.clone(),
        submitted_by: task.submitted_by.clone(),
        feedback: task.feedback.clone(),
        result: task.result.clone(),
        updated_ms: task.updated_ms,
    }
}

/// A person's agent type file as written (its own model, before the `agents.models` setting).
fn read_manifest(path: &Path) -> Option<AgentTypeManifest> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Writes beside the target and renames over it, so a reader never sees half a file.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let partial = path.with_extension("json.partial");
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}
