//! Tool packs: a named, declarative set of tools with a risk profile. A pack names whole tools
//! (`shell`), one resource of a domain tool (`web.http`), an action where only one resource has
//! it (`file.read`), or a resource's action (`agent.session.history`). Entries are resolved
//! against the registry when the pack loads, so a pack is registered only when its tools exist,
//! and the resolved [`ToolScope`] is what the registry enforces.

use std::collections::BTreeSet;

use osprey_tools::{ApprovalNeed, Registry, ToolScope};
use serde::{Deserialize, Serialize};

/// How much a pack can do, lowest first. The declared profile must cover what the pack's tools
/// can do, and the runtime's trust level must allow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RiskProfile {
    /// Nothing in it needs the person's approval (reading and searching).
    ReadOnly,
    /// It can change things or reach out, each such call meeting the approval policy.
    Standard,
    /// It can run programs or drive the desktop (`shell`, `exec`, `desktop`, `os`, `app`).
    Privileged,
}

impl RiskProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            RiskProfile::ReadOnly => "read-only",
            RiskProfile::Standard => "standard",
            RiskProfile::Privileged => "privileged",
        }
    }
}

impl std::fmt::Display for RiskProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tools that run programs or act on the desktop as the person: privileged whatever the action.
const PRIVILEGED_TOOLS: &[&str] = &["shell", "exec", "desktop", "os", "app"];

/// The manifest format this Osprey reads.
pub const SCHEMA_VERSION: u32 = 1;

/// A pack as written (`<data>/packs/<name>.json`, or built in).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackManifest {
    pub schema_version: u32,
    pub name: String,
    pub description: String,
    pub tools: Vec<String>,
    pub risk_profile: RiskProfile,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A pack that loaded: its manifest and the scope its entries resolve to.
#[derive(Clone, Debug)]
pub struct ToolPack {
    pub manifest: PackManifest,
    /// Where it came from (`built-in` or the file's path).
    pub source: String,
    pub scope: ToolScope,
}

/// `Some(message)` when `name` is not a valid pack or agent type name.
pub(crate) fn invalid_name(kind: &str, name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-');
    (!ok).then(|| {
        format!(
            "the {kind} name `{name}` is not valid: use 1 to 64 lower-case letters, digits and \
             hyphens, starting with a letter or digit"
        )
    })
}

impl PackManifest {
    /// Checks the manifest against the registry and the trust level; the resolved pack, or why
    /// it is refused (one clear message).
    pub fn validate(
        self,
        source: &str,
        registry: &Registry,
        trust: RiskProfile,
    ) -> Result<ToolPack, String> {
        if self.schema_version != SCHEMA_VERSION {
            return Err(format!(
                "schemaVersion {} is not supported (this Osprey reads {SCHEMA_VERSION})",
                self.schema_version
            ));
        }
        if let Some(message) = invalid_name("pack", &self.name) {
            return Err(message);
        }
        if self.description.trim().is_empty() {
            return Err(format!("pack `{}` needs a description", self.name));
        }
        if self.tools.is_empty() {
            return Err(format!("pack `{}` lists no tools", self.name));
        }
        let mut seen = BTreeSet::new();
        for entry in &self.tools {
            if !seen.insert(entry.as_str()) {
                return Err(format!(
                    "pack `{}` lists `{entry}` twice; name each tool once",
                    self.name
                ));
            }
        }
        let mut scope = ToolScope::new(self.name.clone());
        let mut needed = RiskProfile::ReadOnly;
        for entry in &self.tools {
            let (part, risk) =
                resolve_entry(entry, registry).map_err(|e| format!("pack `{}`: {e}", self.name))?;
            if risk > self.risk_profile {
                return Err(format!(
                    "pack `{}` declares riskProfile `{}`, but `{entry}` is {risk}; declare \
                     `{risk}` (or drop it)",
                    self.name, self.risk_profile
                ));
            }
            needed = needed.max(risk);
            let before = scope.describe();
            scope.merge(&part);
            if scope.describe() == before {
                return Err(format!(
                    "pack `{}`: `{entry}` repeats what another entry already gives",
                    self.name
                ));
            }
        }
        if self.risk_profile > trust {
            return Err(format!(
                "pack `{}` is {}, and this Osprey allows packs up to {trust} (the `agents` \
                 setting's `trust`)",
                self.name, self.risk_profile
            ));
        }
        Ok(ToolPack {
            manifest: self,
            source: source.to_string(),
            scope,
        })
    }
}

/// One entry of a pack: the scope it grants and how risky that is.
fn resolve_entry(entry: &str, registry: &Registry) -> Result<(ToolScope, RiskProfile), String> {
    let parts: Vec<&str> = entry.split('.').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(format!(
            "`{entry}` is not a tool entry (write `tool`, `tool.resource`, `tool.action` or \
             `tool.resource.action`)"
        ));
    }
    let tool_name = parts[0];
    let Some(tool) = registry.get(tool_name) else {
        return Err(format!(
            "it names the tool `{tool_name}`, which is not registered here (tools: {})",
            registry.names().join(", ")
        ));
    };
    if tool_name == "agent" && parts.len() == 1 {
        return Err(
            "name the `agent` tool's resources one by one (`agent.memory`, `agent.work`, ...): \
             its `task` resource, the spawn tool, is given by depth, not by packs"
                .into(),
        );
    }
    let mut scope = ToolScope::new("");
    let privileged = PRIVILEGED_TOOLS.contains(&tool_name);
    let Some(domain) = tool.domain() else {
        if parts.len() > 1 {
            return Err(format!(
                "`{tool_name}` has no resources or actions; name it whole"
            ));
        }
        scope.allow_tool(tool_name);
        let risk = if privileged {
            RiskProfile::Privileged
        } else {
            RiskProfile::Standard
        };
        return Ok((scope, risk));
    };
    // The (resource, actions) granted, to judge the risk.
    let granted: Vec<(&str, Vec<&str>)> = match parts.as_slice() {
        [_] => {
            scope.allow_tool(tool_name);
            domain
                .resources
                .iter()
                .map(|r| {
                    (
                        r.name.as_str(),
                        r.actions.iter().map(|a| a.name.as_str()).collect(),
                    )
                })
                .collect()
        }
        [_, second] => {
            if let Some(resource) = domain.find_resource(second) {
                scope.allow_resource(tool_name, &resource.name, None);
                vec![(
                    resource.name.as_str(),
                    resource.actions.iter().map(|a| a.name.as_str()).collect(),
                )]
            } else {
                let owners: Vec<&str> = domain
                    .resources
                    .iter()
                    .filter(|r| r.actions.iter().any(|a| a.name == *second))
                    .map(|r| r.name.as_str())
                    .collect();
                match owners.as_slice() {
                    [owner] => {
                        scope.allow_resource(tool_name, owner, Some(&[second]));
                        vec![(*owner, vec![*second])]
                    }
                    [] => {
                        return Err(format!(
                            "`{second}` is neither a resource nor an action of `{tool_name}` \
                             (resources: {}; actions: {})",
                            resource_names(domain),
                            domain.action_names().join(", ")
                        ));
                    }
                    several => {
                        return Err(format!(
                            "`{second}` is an action of several `{tool_name}` resources ({}); \
                             write `{tool_name}.<resource>.{second}`",
                            several.join(", ")
                        ));
                    }
                }
            }
        }
        [_, resource_name, action] => {
            let Some(resource) = domain.find_resource(resource_name) else {
                return Err(format!(
                    "`{tool_name}` has no resource `{resource_name}` (resources: {})",
                    resource_names(domain)
                ));
            };
            if !resource.actions.iter().any(|a| a.name == *action) {
                return Err(format!(
                    "`{tool_name}.{}` has no action `{action}` (actions: {})",
                    resource.name,
                    resource
                        .actions
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            scope.allow_resource(tool_name, &resource.name, Some(&[action]));
            vec![(resource.name.as_str(), vec![*action])]
        }
        _ => unreachable!("checked above"),
    };
    if tool_name == "agent" && granted.iter().any(|(r, _)| *r == "task") {
        return Err(
            "`agent.task` (the spawn tool) is given by depth, not by packs; leave it out".into(),
        );
    }
    let needs_approval = granted.iter().any(|(resource, actions)| {
        let resource = domain.find_resource(resource).expect("resolved above");
        resource
            .actions
            .iter()
            .any(|a| actions.contains(&a.name.as_str()) && a.approval != ApprovalNeed::None)
    });
    let risk = if privileged {
        RiskProfile::Privileged
    } else if needs_approval {
        RiskProfile::Standard
    } else {
        RiskProfile::ReadOnly
    };
    Ok((scope, risk))
}

fn resource_names(domain: &osprey_tools::Domain) -> String {
    domain
        .resources
        .iter()
        .map(|r| r.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
