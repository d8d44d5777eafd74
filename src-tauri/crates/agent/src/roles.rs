//! Roles: tool packs and agent types. A pack ([`packs`]) is a named set of tools with a risk
//! profile; an agent type binds a prompt, an optional model and packs. Both are declarative
//! JSON, built in (compiled from `src-tauri/crates/agent/roles/{packs,agents}/*.json`) and the
//! person's (`<data>/packs/*.json`, `<data>/agents/*.json`). [`RoleCatalog::load`] validates
//! everything against the registry and the trust level: a bad file is refused with a clear
//! message (kept in [`RoleCatalog::problems`]) and the others still load.
//!
//! A type's tool set is its packs flattened (duplicates merged) into one [`ToolScope`], which
//! the registry enforces for the child that runs as that type (see `crate::subagent`). Names:
//! a pack's name must not repeat another pack's (built in or not); a person's agent type may
//! replace a built-in one of the same name (to give `summarizer` a cheaper model, say), and two
//! of the person's files may not share a name.

pub mod packs;

use std::collections::BTreeMap;
use std::path::Path;

use osprey_tools::{Registry, ToolScope};
use serde::{Deserialize, Serialize};

pub use packs::{PackManifest, RiskProfile, SCHEMA_VERSION, ToolPack};

/// Built-in packs, as files in the same format the person writes.
const BUILTIN_PACKS: &[(&str, &str)] = &[
    (
        "read-only-research",
        include_str!("../roles/packs/read-only-research.json"),
    ),
    ("web-fetch", include_str!("../roles/packs/web-fetch.json")),
    ("web-search", include_str!("../roles/packs/web-search.json")),
    ("writing", include_str!("../roles/packs/writing.json")),
    ("planning", include_str!("../roles/packs/planning.json")),
    ("coding", include_str!("../roles/packs/coding.json")),
    ("desktop", include_str!("../roles/packs/desktop.json")),
    ("browser", include_str!("../roles/packs/browser.json")),
    ("messaging", include_str!("../roles/packs/messaging.json")),
    (
        "memory-read",
        include_str!("../roles/packs/memory-read.json"),
    ),
    ("os", include_str!("../roles/packs/os.json")),
    ("vision", include_str!("../roles/packs/vision.json")),
    ("advice", include_str!("../roles/packs/advice.json")),
    (
        "task-graph-worker",
        include_str!("../roles/packs/task-graph-worker.json"),
    ),
    (
        "task-graph-orchestrator",
        include_str!("../roles/packs/task-graph-orchestrator.json"),
    ),
];

/// Built-in agent types.
const BUILTIN_TYPES: &[(&str, &str)] = &[
    (
        "researcher",
        include_str!("../roles/agents/researcher.json"),
    ),
    ("writer", include_str!("../roles/agents/writer.json")),
    ("planner", include_str!("../roles/agents/planner.json")),
    ("critic", include_str!("../roles/agents/critic.json")),
    (
        "summarizer",
        include_str!("../roles/agents/summarizer.json"),
    ),
    ("coder", include_str!("../roles/agents/coder.json")),
    (
        "desktop-operator",
        include_str!("../roles/agents/desktop-operator.json"),
    ),
    (
        "browser-operator",
        include_str!("../roles/agents/browser-operator.json"),
    ),
];

/// The largest pack or agent type file read.
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// The longest prompt an agent type may carry.
const MAX_PROMPT_CHARS: usize = 16_000;

/// The `agents` setting: `{"trust": "standard", "models": {"summarizer": "claude-haiku-4-5"}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// The riskiest pack this Osprey loads (default `privileged`: the person's own machine,
    /// every call still meeting the policy and the safeguard).
    pub trust: Option<RiskProfile>,
    /// A model per agent type, over the type's own (a cheaper one for `summarizer`, `critic`).
    pub models: BTreeMap<String, String>,
}

impl AgentSettings {
    pub fn trust(&self) -> RiskProfile {
        self.trust.unwrap_or(RiskProfile::Privileged)
    }
}

/// An agent type as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentTypeManifest {
    pub schema_version: u32,
    pub name: String,
    pub description: String,
    /// The role's instructions, a section of the child's system prompt.
    pub prompt: String,
    /// The model the child runs on (else its parent's).
    #[serde(default)]
    pub model: Option<String>,
    pub packs: Vec<String>,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// An agent type that loaded.
#[derive(Clone, Debug)]
pub struct AgentType {
    pub manifest: AgentTypeManifest,
    pub source: String,
    /// Its available packs flattened: exactly the tools a child of this type gets (plus the
    /// spawn tool below the depth limit).
    pub scope: ToolScope,
    /// Packs it names that did not load here, with why (a tool missing, the trust level): a
    /// type runs only when every pack it names loaded.
    pub unavailable_packs: BTreeMap<String, String>,
}

impl AgentType {
    /// The model a child of this type runs on, when the type names one.
    pub fn model(&self) -> Option<&str> {
        self.manifest.model.as_deref()
    }
}

/// A file (or built-in entry) refused, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub source: String,
    pub message: String,
}

/// Every pack and agent type that loaded, and what was refused. Cheap to clone behind an `Arc`.
#[derive(Clone, Debug, Default)]
pub struct RoleCatalog {
    packs: BTreeMap<String, ToolPack>,
    types: BTreeMap<String, AgentType>,
    /// Packs that parsed but did not load, by name: a type naming one loads without it.
    unavailable: BTreeMap<String, String>,
    problems: Vec<Problem>,
    trust: Option<RiskProfile>,
}

/// `Desktop Operator`, `desktop_operator` -> `desktop-operator`.
pub fn normalize_name(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace([' ', '_'], "-")
}

impl RoleCatalog {
    /// The built-in packs and types, then the person's from `data_dir` (`packs/`, `agents/`),
    /// checked against `registry` (which should hold every tool by now) and `settings`.
    pub fn load(data_dir: Option<&Path>, registry: &Registry, settings: &AgentSettings) -> Self {
        Self::load_with(data_dir, Vec::new(), registry, settings)
    }

    /// [`RoleCatalog::load`] with packs from elsewhere after the person's: the installed apps'
    /// (`(source, manifest JSON)`, the source `app <id>`). The person's files keep their names.
    pub fn load_with(
        data_dir: Option<&Path>,
        app_packs: Vec<(String, String)>,
        registry: &Registry,
        settings: &AgentSettings,
    ) -> Self {
        let trust = settings.trust();
        let mut catalog = RoleCatalog {
            trust: Some(trust),
            ..RoleCatalog::default()
        };
        let builtin = |list: &[(&str, &str)]| -> Vec<(String, Result<String, String>)> {
            list.iter()
                .map(|(name, text)| (format!("built-in {name}"), Ok(text.to_string())))
                .collect()
        };
        let user_packs = data_dir
            .map(|d| read_dir(&d.join("packs")))
            .unwrap_or_default();
        let user_types = data_dir
            .map(|d| read_dir(&d.join("agents")))
            .unwrap_or_default();

        let app_packs = app_packs
            .into_iter()
            .map(|(source, text)| (source, Ok(text)));
        for (source, text) in builtin(BUILTIN_PACKS)
            .into_iter()
            .chain(user_packs)
            .chain(app_packs)
        {
            catalog.add_pack(&source, text, registry, trust);
        }
        let mut user_type_names = BTreeMap::new();
        for (source, text) in builtin(BUILTIN_TYPES) {
            catalog.add_type(&source, text, settings, None);
        }
        for (source, text) in user_types {
            catalog.add_type(&source, text, settings, Some(&mut user_type_names));
        }
        for problem in &catalog.problems {
            if problem.source.starts_with("built-in ") || problem.source.starts_with("app ") {
                // A built-in pack whose tools this build lacks (no display, no browser), or an
                // app's whose app does not run now.
                tracing::debug!(source = %problem.source, message = %problem.message, "role not loaded");
            } else {
                tracing::warn!(source = %problem.source, message = %problem.message, "role file refused");
            }
        }
        catalog
    }

    fn add_pack(
        &mut self,
        source: &str,
        text: Result<String, String>,
        registry: &Registry,
        trust: RiskProfile,
    ) {
        let manifest = match text.and_then(|t| parse::<PackManifest>(&t)) {
            Ok(m) => m,
            Err(message) => return self.refuse(source, message),
        };
        let name = manifest.name.clone();
        if let Some(existing) = self.packs.get(&name) {
            let message = format!(
                "a pack named `{name}` is already loaded (from {}); choose another name",
                existing.source
            );
            return self.refuse(source, message);
        }
        match manifest.validate(source, registry, trust) {
            Ok(pack) => {
                self.unavailable.remove(&name);
                self.packs.insert(name, pack);
            }
            Err(message) => {
                if invalid_name_of(&name).is_none() {
                    self.unavailable.insert(name, message.clone());
                }
                self.refuse(source, message);
            }
        }
    }

    fn add_type(
        &mut self,
        source: &str,
        text: Result<String, String>,
        settings: &AgentSettings,
        user_names: Option<&mut BTreeMap<String, String>>,
    ) {
        let manifest = match text.and_then(|t| parse::<AgentTypeManifest>(&t)) {
            Ok(m) => m,
            Err(message) => return self.refuse(source, message),
        };
        if let Some(names) = user_names {
            if let Some(first) = names.get(&manifest.name) {
                let message = format!(
                    "an agent type named `{}` is already defined in {first}; choose another name",
                    manifest.name
                );
                return self.refuse(source, message);
            }
            names.insert(manifest.name.clone(), source.to_string());
        }
        match self.validate_type(manifest, source, settings) {
            Ok(agent_type) => {
                self.types
                    .insert(agent_type.manifest.name.clone(), agent_type);
            }
            Err(message) => self.refuse(source, message),
        }
    }

    fn validate_type(
        &self,
        mut manifest: AgentTypeManifest,
        source: &str,
        settings: &AgentSettings,
    ) -> Result<AgentType, String> {
        check_prompted(
            "agent type",
            manifest.schema_version,
            &manifest.name,
            &manifest.description,
            &manifest.prompt,
        )?;
        let name = manifest.name.clone();
        if manifest.packs.is_empty() {
            return Err(format!("agent type `{name}` names no packs"));
        }
        let mut scope = ToolScope::new(name.clone());
        let mut unavailable_packs = BTreeMap::new();
        for (i, pack) in manifest.packs.iter().enumerate() {
            if manifest.packs[..i].contains(pack) {
                return Err(format!("agent type `{name}` names the pack `{pack}` twice"));
            }
            if let Some(loaded) = self.packs.get(pack) {
                scope.merge(&loaded.scope);
            } else if let Some(why) = self.unavailable.get(pack) {
                unavailable_packs.insert(pack.clone(), why.clone());
            } else {
                return Err(format!(
                    "agent type `{name}` names the pack `{pack}`, which does not exist (packs: {})",
                    self.pack_names().join(", ")
                ));
            }
        }
        if let Some(model) = settings.models.get(&name) {
            manifest.model = Some(model.clone());
        }
        if manifest
            .model
            .as_deref()
            .is_some_and(|m| m.trim().is_empty())
        {
            manifest.model = None;
        }
        Ok(AgentType {
            manifest,
            source: source.to_string(),
            scope,
            unavailable_packs,
        })
    }

    /// Checks an agent type the person is saving (from the desktop) to `source`, with the
    /// loader's own checks ([`RoleCatalog::load`] runs the same ones on every file), and two
    /// more that the loader only notes: a pack that did not load here (the trust level refuses
    /// its risk, or its tools are missing) would leave a type that cannot run, and another of
    /// the person's files may already define the name.
    pub fn check_user_type(
        &self,
        manifest: AgentTypeManifest,
        source: &str,
        settings: &AgentSettings,
    ) -> Result<AgentType, String> {
        if let Some(existing) = self.types.get(&manifest.name)
            && !existing.source.starts_with("built-in ")
            && existing.source != source
        {
            return Err(format!(
                "an agent type named `{}` is already defined in {}; choose another name",
                manifest.name, existing.source
            ));
        }
        let agent_type = self.validate_type(manifest, source, settings)?;
        if let Some((pack, why)) = agent_type.unavailable_packs.iter().next() {
            return Err(format!(
                "agent type `{}` cannot use the pack `{pack}` here: {why}",
                agent_type.manifest.name
            ));
        }
        Ok(agent_type)
    }

    /// Packs that parsed but did not load here, with why (the trust level, missing tools).
    pub fn unavailable_packs(&self) -> &BTreeMap<String, String> {
        &self.unavailable
    }

    fn refuse(&mut self, source: &str, message: String) {
        self.problems.push(Problem {
            source: source.to_string(),
            message,
        });
    }

    /// The packs that loaded, by name.
    pub fn packs(&self) -> impl Iterator<Item = &ToolPack> {
        self.packs.values()
    }

    pub fn pack_names(&self) -> Vec<&str> {
        self.packs.keys().map(String::as_str).collect()
    }

    pub fn pack(&self, name: &str) -> Option<&ToolPack> {
        self.packs.get(&normalize_name(name))
    }

    /// Several packs flattened into one scope named `role`, duplicates merged; an unknown pack
    /// is refused with the list.
    pub fn resolve_packs(&self, role: &str, names: &[&str]) -> Result<ToolScope, String> {
        let mut scope = ToolScope::new(role);
        for name in names {
            let pack = self.pack(name).ok_or_else(|| {
                match self.unavailable.get(&normalize_name(name)) {
                    Some(why) => format!("the pack `{name}` is not available here: {why}"),
                    None => format!(
                        "there is no pack `{name}`; packs: {}",
                        self.pack_names().join(", ")
                    ),
                }
            })?;
            scope.merge(&pack.scope);
        }
        Ok(scope)
    }

    /// The agent types that loaded, by name.
    pub fn types(&self) -> impl Iterator<Item = &AgentType> {
        self.types.values()
    }

    pub fn type_names(&self) -> Vec<&str> {
        self.types.keys().map(String::as_str).collect()
    }

    /// The type `name` (any case, spaces or underscores for hyphens); an unknown one is refused
    /// with the list of known types.
    pub fn agent_type(&self, name: &str) -> Result<&AgentType, String> {
        self.types.get(&normalize_name(name)).ok_or_else(|| {
            if self.types.is_empty() {
                format!("there is no agent type `{name}`: no agent types are loaded here")
            } else {
                format!(
                    "there is no agent type `{name}`; agent types: {}",
                    self.type_names().join(", ")
                )
            }
        })
    }

    /// Files and built-in entries that were refused, with why.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The trust level the catalog was loaded with (`None` for an empty catalog).
    pub fn trust(&self) -> Option<RiskProfile> {
        self.trust
    }
}

fn invalid_name_of(name: &str) -> Option<String> {
    packs::invalid_name("pack", name)
}

/// What an agent type and an advisor persona share: the schema version, a valid name, a
/// description, and a prompt of reasonable length. `kind` names it in the message.
pub(crate) fn check_prompted(
    kind: &str,
    schema_version: u32,
    name: &str,
    description: &str,
    prompt: &str,
) -> Result<(), String> {
    if schema_version != SCHEMA_VERSION {
        return Err(format!(
            "schemaVersion {schema_version} is not supported (this Osprey reads {SCHEMA_VERSION})"
        ));
    }
    if let Some(message) = packs::invalid_name(kind, name) {
        return Err(message);
    }
    if description.trim().is_empty() {
        return Err(format!("{kind} `{name}` needs a description"));
    }
    if prompt.trim().is_empty() {
        return Err(format!("{kind} `{name}` needs a prompt"));
    }
    if prompt.chars().count() > MAX_PROMPT_CHARS {
        return Err(format!(
            "{kind} `{name}`: the prompt is longer than {MAX_PROMPT_CHARS} characters"
        ));
    }
    Ok(())
}

pub(crate) fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("not a valid manifest: {e}"))
}

/// `*.json` files of `dir`, sorted by name, each read (size-capped) or with why not. A missing
/// folder has none.
pub(crate) fn read_dir(dir: &Path) -> Vec<(String, Result<String, String>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = match std::fs::symlink_metadata(&path) {
                Ok(meta) if !meta.is_file() => {
                    Err("not a regular file (symlinks are not followed)".to_string())
                }
                Ok(meta) if meta.len() > MAX_FILE_BYTES => {
                    Err(format!("larger than {} KB", MAX_FILE_BYTES / 1024))
                }
                Ok(_) => std::fs::read_to_string(&path).map_err(|e| format!("cannot read it: {e}")),
                Err(e) => Err(format!("cannot read it: {e}")),
            };
            (path.display().to_string(), text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use osprey_tools::file::FileTool;
    use osprey_tools::{Level, PathGuard, Policy, RegistryConfig};

    fn registry(dir: &Path) -> Registry {
        let registry = Registry::new(RegistryConfig::new(
            Policy::at_level(Level::Allowlist),
            dir.join("data"),
        ));
        registry.register_domain(FileTool::new(PathGuard::new(None, dir.join("data"))));
        registry
    }

    #[test]
    fn the_builtin_files_parse_and_name_themselves() {
        for (name, text) in BUILTIN_PACKS {
            let pack: PackManifest = serde_json::from_str(text).unwrap();
            assert_eq!(&pack.name, name);
        }
        for (name, text) in BUILTIN_TYPES {
            let agent: AgentTypeManifest = serde_json::from_str(text).unwrap();
            assert_eq!(&agent.name, name);
            for pack in &agent.packs {
                assert!(
                    BUILTIN_PACKS.iter().any(|(p, _)| p == pack),
                    "{name} names {pack}"
                );
            }
        }
    }

    #[test]
    fn packs_resolve_flatten_and_refuse_with_clear_messages() {
        let dir = tempfile::tempdir().unwrap();
        let registry = registry(dir.path());
        let catalog = RoleCatalog::load(None, &registry, &AgentSettings::default());
        // Only the file tool is here: the file packs load, the others say what is missing.
        let research = catalog.pack("read-only-research").unwrap();
        assert_eq!(research.scope.describe(), "file (file: glob, grep, read)");
        let coding = catalog
            .problems()
            .iter()
            .find(|p| p.source == "built-in coding")
            .unwrap();
        assert!(
            coding.message.contains("`shell`, which is not registered"),
            "{coding:?}"
        );
        let flat = catalog
            .resolve_packs("both", &["read-only-research", "writing"])
            .unwrap();
        assert_eq!(flat.describe(), "file");
        let error = catalog.resolve_packs("x", &["nope"]).unwrap_err();
        assert!(
            error.contains("packs: read-only-research, writing"),
            "{error}"
        );
        let error = catalog.resolve_packs("x", &["coding"]).unwrap_err();
        assert!(error.contains("not available here"), "{error}");
        // A type whose packs are partly here is listed with the rest noted (and cannot run).
        let researcher = catalog.agent_type("Researcher").unwrap();
        assert_eq!(researcher.scope.describe(), "file (file: glob, grep, read)");
        assert!(researcher.unavailable_packs.contains_key("web-fetch"));

        let pack = |tools: serde_json::Value, risk: &str| PackManifest {
            schema_version: 1,
            name: "p".into(),
            description: "d".into(),
            tools: serde_json::from_value(tools).unwrap(),
            risk_profile: serde_json::from_value(serde_json::json!(risk)).unwrap(),
            tags: vec![],
        };
        let check = |p: PackManifest, trust| p.validate("test", &registry, trust).map(|p| p.scope);
        let error = |p, trust| check(p, trust).unwrap_err();
        use serde_json::json;
        let e = error(
            pack(json!(["file.write"]), "read-only"),
            RiskProfile::Privileged,
        );
        assert!(
            e.contains("declares riskProfile `read-only`") && e.contains("standard"),
            "{e}"
        );
        let e = error(
            pack(json!(["file.read", "file.read"]), "read-only"),
            RiskProfile::Privileged,
        );
        assert!(e.contains("twice"), "{e}");
        let e = error(
            pack(json!(["file", "file.read"]), "standard"),
            RiskProfile::Privileged,
        );
        assert!(e.contains("repeats"), "{e}");
        let e = error(
            pack(json!(["file.nope"]), "standard"),
            RiskProfile::Privileged,
        );
        assert!(
            e.contains("neither a resource nor an action") && e.contains("read, write"),
            "{e}"
        );
        let e = error(pack(json!(["file"]), "standard"), RiskProfile::ReadOnly);
        assert!(e.contains("allows packs up to read-only"), "{e}");
        let e = error(
            pack(json!(["a.b.c.d"]), "standard"),
            RiskProfile::Privileged,
        );
        assert!(e.contains("not a tool entry"), "{e}");
        let ok = check(
            pack(json!(["file.file.read", "file.grep"]), "read-only"),
            RiskProfile::ReadOnly,
        )
        .unwrap();
        assert_eq!(ok.describe(), "file (file: grep, read)");
    }
}
