//! Role-scoped tool sets: which tools (and, for domain tools, which resources and actions) a
//! caller may use. A call's [`crate::ToolContext::scope`] is enforced by the registry, not by a
//! prompt: a tool outside the scope is neither shown to the model
//! ([`crate::Registry::specs_for`]) nor run, whatever the model asks, and the refusal
//! (`role_denied`) names the role's tools. A scope only ever narrows: it adds no permission the
//! policy, origin rules or safeguard would refuse, and [`ToolScope::intersect`] is how a child
//! inherits its parent's limits.
//!
//! Entries are resolved to canonical names (a resource's alias becomes its name) by whoever
//! builds the scope (the agent crate's tool packs), so matching here is exact.

use std::collections::{BTreeMap, BTreeSet};

use crate::domain::Domain;

/// What a scope grants of one tool.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Grant {
    /// The whole tool.
    All,
    /// These resources; each with every action (`None`) or only these.
    Resources(BTreeMap<String, Option<BTreeSet<String>>>),
}

/// A named set of tools, resources and actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolScope {
    role: String,
    grants: BTreeMap<String, Grant>,
}

impl ToolScope {
    /// An empty scope for `role` (the name the refusals give).
    pub fn new(role: impl Into<String>) -> Self {
        ToolScope {
            role: role.into(),
            grants: BTreeMap::new(),
        }
    }

    pub fn role(&self) -> &str {
        &self.role
    }

    /// Grants the whole tool.
    pub fn allow_tool(&mut self, tool: &str) {
        self.grants.insert(tool.to_string(), Grant::All);
    }

    /// Grants one resource of a domain tool, every action (`actions: None`) or only these.
    pub fn allow_resource(&mut self, tool: &str, resource: &str, actions: Option<&[&str]>) {
        let grant = self
            .grants
            .entry(tool.to_string())
            .or_insert_with(|| Grant::Resources(BTreeMap::new()));
        let Grant::Resources(resources) = grant else {
            return; // the whole tool already
        };
        let wanted: Option<BTreeSet<String>> =
            actions.map(|a| a.iter().map(|s| s.to_string()).collect());
        match (resources.get_mut(resource), wanted) {
            (Some(existing), None) => *existing = None,
            (Some(Some(existing)), Some(more)) => existing.extend(more),
            (Some(None), Some(_)) => {}
            (None, wanted) => {
                resources.insert(resource.to_string(), wanted);
            }
        }
    }

    /// Everything `other` grants, added to this scope.
    pub fn merge(&mut self, other: &ToolScope) {
        for (tool, grant) in &other.grants {
            match grant {
                Grant::All => self.allow_tool(tool),
                Grant::Resources(resources) => {
                    for (resource, actions) in resources {
                        let actions: Option<Vec<&str>> = actions
                            .as_ref()
                            .map(|a| a.iter().map(String::as_str).collect());
                        self.allow_resource(tool, resource, actions.as_deref());
                    }
                }
            }
        }
    }

    /// What both scopes grant, under this scope's role name: a child's tools never exceed its
    /// parent's.
    pub fn intersect(&self, other: &ToolScope) -> ToolScope {
        let mut out = ToolScope::new(self.role.clone());
        for (tool, mine) in &self.grants {
            let Some(theirs) = other.grants.get(tool) else {
                continue;
            };
            let grant = match (mine, theirs) {
                (Grant::All, other) | (other, Grant::All) => other.clone(),
                (Grant::Resources(a), Grant::Resources(b)) => {
                    let mut both = BTreeMap::new();
                    for (resource, actions_a) in a {
                        let Some(actions_b) = b.get(resource) else {
                            continue;
                        };
                        let actions = match (actions_a, actions_b) {
                            (None, other) | (other, None) => other.clone(),
                            (Some(x), Some(y)) => {
                                let common: BTreeSet<String> = x.intersection(y).cloned().collect();
                                if common.is_empty() {
                                    continue;
                                }
                                Some(common)
                            }
                        };
                        both.insert(resource.clone(), actions);
                    }
                    if both.is_empty() {
                        continue;
                    }
                    Grant::Resources(both)
                }
            };
            out.grants.insert(tool.clone(), grant);
        }
        out
    }

    /// True when the scope grants some part of `tool`.
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.grants.contains_key(tool)
    }

    /// True when the scope grants this call. A tool granted only in part needs the call's
    /// resource and action to be among the granted ones.
    pub fn allows(&self, tool: &str, resource: Option<&str>, action: Option<&str>) -> bool {
        match self.grants.get(tool) {
            None => false,
            Some(Grant::All) => true,
            Some(Grant::Resources(resources)) => {
                let Some(actions) = resource.and_then(|r| resources.get(r)) else {
                    return false;
                };
                match actions {
                    None => true,
                    Some(actions) => action.is_some_and(|a| actions.contains(a)),
                }
            }
        }
    }

    /// The tools the scope grants some part of, sorted.
    pub fn tools(&self) -> Vec<&str> {
        self.grants.keys().map(String::as_str).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// `file (file: read, glob, grep), web (http), agent (task)`: for messages.
    pub fn describe(&self) -> String {
        if self.grants.is_empty() {
            return "none".into();
        }
        self.grants
            .iter()
            .map(|(tool, grant)| match grant {
                Grant::All => tool.clone(),
                Grant::Resources(resources) => {
                    let parts: Vec<String> = resources
                        .iter()
                        .map(|(resource, actions)| match actions {
                            None => resource.clone(),
                            Some(actions) => format!(
                                "{resource}: {}",
                                actions.iter().cloned().collect::<Vec<_>>().join(", ")
                            ),
                        })
                        .collect();
                    format!("{tool} ({})", parts.join("; "))
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The part of `domain` this scope grants: the same table with only the granted resources
    /// and actions (fields required only by dropped actions go too), and a note on the
    /// description. `None` when nothing of it is granted.
    pub fn restrict_domain(&self, domain: &Domain) -> Option<Domain> {
        let resources = match self.grants.get(&domain.name)? {
            Grant::All => return Some(domain.clone()),
            Grant::Resources(resources) => resources,
        };
        let mut out = domain.clone();
        out.resources.retain_mut(|resource| {
            let Some(actions) = resources.get(&resource.name) else {
                return false;
            };
            if let Some(actions) = actions {
                resource.actions.retain(|a| actions.contains(&a.name));
            }
            !resource.actions.is_empty()
        });
        if out.resources.is_empty() {
            return None;
        }
        let pairs: Vec<(String, String)> = out
            .resources
            .iter()
            .flat_map(|r| r.actions.iter().map(|a| (r.name.clone(), a.name.clone())))
            .collect();
        let kept = |entry: &str| match entry.split_once('.') {
            Some((r, a)) => pairs.iter().any(|(pr, pa)| pr == r && pa == a),
            None => pairs.iter().any(|(_, pa)| pa == entry),
        };
        // Tables label a field with the resources or actions it serves (`scroll: pixels`,
        // `memory: ...; task: a sub-agent task's id`); one labelled only for dropped ones goes
        // too, unless a kept action requires it.
        let only_for_dropped = |description: &str| {
            let labels: Vec<&str> = description
                .split("; ")
                .filter_map(|part| part.split_once(':').map(|(label, _)| label.trim()))
                .filter(|label| {
                    domain.find_resource(label).is_some() || domain.action_names().contains(label)
                })
                .collect();
            !labels.is_empty()
                && labels
                    .iter()
                    .all(|label| !pairs.iter().any(|(r, a)| r == label || a == label))
        };
        let fields = std::mem::take(&mut out.fields);
        out.fields = fields
            .into_iter()
            .filter_map(|mut field| {
                let required = !field.required_for.is_empty();
                field.required_for.retain(|entry| kept(entry));
                if !field.required_for.is_empty() {
                    return Some(field);
                }
                (!required && !only_for_dropped(&field.description)).then_some(field)
            })
            .collect();
        let action_names: Vec<String> = out
            .resources
            .iter()
            .flat_map(|r| r.actions.iter().map(|a| a.name.clone()))
            .collect();
        out.action_aliases
            .retain(|(_, action)| action_names.contains(action));
        let granted: Vec<String> = out
            .resources
            .iter()
            .map(|r| {
                let names: Vec<&str> = r.actions.iter().map(|a| a.name.as_str()).collect();
                format!("{} ({})", r.name, names.join(", "))
            })
            .collect();
        out.description = format!(
            "{} [Role `{}`: only {} here.]",
            out.description,
            self.role,
            granted.join("; ")
        );
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ApprovalNeed;
    use crate::domain::FieldType;

    fn file_like() -> Domain {
        Domain::new("file", "Files.")
            .resource(
                "file",
                &["fs"],
                &[
                    ("read", "Read", ApprovalNeed::None),
                    ("write", "Write", ApprovalNeed::Required),
                    ("grep", "Grep", ApprovalNeed::None),
                ],
            )
            .field("path", FieldType::String, "A path")
            .required_for(&["read", "write"])
            .field("content", FieldType::String, "What to write")
            .required_for(&["write"])
            .field("pattern", FieldType::String, "A regex")
            .required_for(&["file.grep"])
            .field("append", FieldType::Boolean, "write: add to the end")
            .field("limit", FieldType::Integer, "read: lines at most")
            .action_alias("cat", "read")
            .action_alias("save", "write")
    }

    #[test]
    fn grants_match_whole_tools_resources_and_actions() {
        let mut scope = ToolScope::new("researcher");
        scope.allow_tool("web");
        scope.allow_resource("file", "file", Some(&["read", "grep"]));
        scope.allow_resource("agent", "task", None);
        assert!(scope.allows("web", Some("browser"), Some("navigate")));
        assert!(scope.allows("file", Some("file"), Some("read")));
        assert!(!scope.allows("file", Some("file"), Some("write")));
        assert!(!scope.allows("file", None, None));
        assert!(scope.allows("agent", Some("task"), Some("spawn")));
        assert!(!scope.allows("agent", Some("memory"), Some("store")));
        assert!(!scope.allows("shell", Some("bash"), Some("exec")));
        assert_eq!(
            scope.describe(),
            "agent (task), file (file: grep, read), web"
        );
        // A later whole-resource grant widens an action grant; a whole tool absorbs both.
        scope.allow_resource("file", "file", None);
        assert!(scope.allows("file", Some("file"), Some("write")));
    }

    #[test]
    fn an_intersection_never_exceeds_either_side() {
        let mut parent = ToolScope::new("coder");
        parent.allow_tool("file");
        parent.allow_resource("web", "http", None);
        let mut child = ToolScope::new("researcher");
        child.allow_resource("file", "file", Some(&["read"]));
        child.allow_tool("web");
        child.allow_tool("shell");
        let both = child.intersect(&parent);
        assert_eq!(both.role(), "researcher");
        assert!(both.allows("file", Some("file"), Some("read")));
        assert!(!both.allows("file", Some("file"), Some("write")));
        assert!(both.allows("web", Some("http"), Some("fetch")));
        assert!(!both.allows("web", Some("search"), Some("query")));
        assert!(!both.allows_tool("shell"));
        let mut disjoint = ToolScope::new("x");
        disjoint.allow_resource("file", "file", Some(&["write"]));
        assert!(disjoint.intersect(&child).is_empty());
    }

    #[test]
    fn a_restricted_domain_keeps_only_granted_actions_and_their_fields() {
        let mut scope = ToolScope::new("reader");
        scope.allow_resource("file", "file", Some(&["read", "grep"]));
        let domain = scope.restrict_domain(&file_like()).unwrap();
        let actions: Vec<&str> = domain.action_names();
        assert_eq!(actions, ["read", "grep"]);
        let fields: Vec<&str> = domain.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(fields, ["path", "pattern", "limit"]);
        assert_eq!(domain.fields[0].required_for, ["read"]);
        assert_eq!(domain.action_aliases.len(), 1);
        assert!(
            domain
                .description
                .contains("Role `reader`: only file (read, grep)")
        );
        let schema = domain.json_schema().to_string();
        assert!(!schema.contains("write"), "{schema}");
        assert!(
            ToolScope::new("none")
                .restrict_domain(&file_like())
                .is_none()
        );
    }
}
