//! Per-origin rules: hard denies by where a call came from. By default a message from a comm
//! channel, an app or a skill cannot reach `shell`; the rules are configurable but always
//! enforced.

use std::collections::BTreeMap;

use osprey_types::Origin;
use serde::{Deserialize, Serialize};

/// For each origin, the tools it may not call. An entry is a tool (`shell`), a tool's resource
/// (`shell.process`) or a tool's action (`file.write`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginRules {
    pub deny: BTreeMap<Origin, Vec<String>>,
}

impl Default for OriginRules {
    fn default() -> Self {
        let shell = || vec!["shell".to_string()];
        OriginRules {
            deny: BTreeMap::from([
                (Origin::Comm, shell()),
                (Origin::App, shell()),
                (Origin::Skill, shell()),
            ]),
        }
    }
}

/// Calls that are free for the person but change what Osprey does later or speak for the
/// person: from an origin outside the person's control (`comm`, `app`, `skill`) they need a
/// person's approval, so a chat message, an app or a skill cannot plant a reminder, a memory or
/// a profile fact, post as the agent, type on the desktop, read the clipboard, raise a system
/// notification or speak aloud unasked. Entries name a tool, a
/// tool's resource or one action, as deny entries do.
pub const ASKED_FROM_OUTSIDE: &[&str] = &[
    "agent.reminder.create",
    "agent.reminder.update",
    "agent.reminder.resume",
    "agent.reminder.run",
    "agent.memory.store",
    "agent.profile.set",
    "agent.message.send",
    "desktop",
    // The clipboard may hold what the person copied from anywhere (a password, a private note).
    "os.clipboard.read",
    // A notification looks like the system speaking: text from a message or an app must not
    // reach the person that way unasked (a fake "your session expired, open ..." prompt).
    "os.notification.send",
    // Speech is the system speaking too, out loud.
    "os.tts.speak",
];

/// Origins outside the person's control: messages from other people, apps, skills' own text.
pub fn is_outside(origin: Origin) -> bool {
    matches!(origin, Origin::Comm | Origin::App | Origin::Skill)
}

/// Whether a call from `origin` must be asked although its action is free for the person.
pub fn asked_from(
    origin: Origin,
    tool: &str,
    resource: Option<&str>,
    action: Option<&str>,
) -> bool {
    is_outside(origin)
        && ASKED_FROM_OUTSIDE
            .iter()
            .any(|entry| entry_matches(entry, tool, resource, action))
}

/// Whether a rule entry names this call: `tool` (or `tool.*`), `tool.resource`, `tool.action`
/// or `tool.resource.action`. Deny rules and [`ASKED_FROM_OUTSIDE`] read entries the same way.
fn entry_matches(entry: &str, tool: &str, resource: Option<&str>, action: Option<&str>) -> bool {
    let mut parts = entry.split('.');
    if parts.next() != Some(tool) {
        return false;
    }
    match (parts.next(), parts.next()) {
        (None, _) | (Some("*"), None) => true,
        (Some(one), None) => resource == Some(one) || action == Some(one),
        (Some(r), Some(a)) => resource == Some(r) && action == Some(a),
    }
}

impl OriginRules {
    /// No denies at all.
    pub fn none() -> Self {
        OriginRules {
            deny: BTreeMap::new(),
        }
    }

    /// The matching deny entry, if the call is denied.
    pub fn denied(
        &self,
        origin: Origin,
        tool: &str,
        resource: Option<&str>,
        action: Option<&str>,
    ) -> Option<&str> {
        let entries = self.deny.get(&origin)?;
        entries
            .iter()
            .map(String::as_str)
            .find(|entry| entry_matches(entry, tool, resource, action))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_is_denied_to_comm_app_and_skill_by_default() {
        let rules = OriginRules::default();
        for origin in [Origin::Comm, Origin::App, Origin::Skill] {
            assert_eq!(
                rules.denied(origin, "shell", Some("bash"), Some("exec")),
                Some("shell")
            );
        }
        for origin in [Origin::User, Origin::System, Origin::Mcp] {
            assert_eq!(
                rules.denied(origin, "shell", Some("bash"), Some("exec")),
                None
            );
        }
        assert_eq!(
            rules.denied(Origin::Comm, "file", Some("file"), Some("read")),
            None
        );
    }

    #[test]
    fn what_changes_later_behaviour_is_asked_from_outside_origins_only() {
        for origin in [Origin::Comm, Origin::App, Origin::Skill] {
            assert!(asked_from(
                origin,
                "agent",
                Some("reminder"),
                Some("create")
            ));
            assert!(asked_from(origin, "agent", Some("memory"), Some("store")));
            assert!(asked_from(
                origin,
                "desktop",
                Some("keyboard"),
                Some("type")
            ));
            assert!(!asked_from(origin, "agent", Some("reminder"), Some("list")));
        }
        for origin in [Origin::User, Origin::System, Origin::Mcp] {
            assert!(!asked_from(
                origin,
                "agent",
                Some("reminder"),
                Some("create")
            ));
        }
    }

    #[test]
    fn entries_can_name_a_resource_or_an_action() {
        let rules = OriginRules {
            deny: BTreeMap::from([(
                Origin::Mcp,
                vec!["file.write".into(), "shell.process".into()],
            )]),
        };
        assert!(
            rules
                .denied(Origin::Mcp, "file", Some("file"), Some("write"))
                .is_some()
        );
        assert!(
            rules
                .denied(Origin::Mcp, "file", Some("file"), Some("read"))
                .is_none()
        );
        assert!(
            rules
                .denied(Origin::Mcp, "shell", Some("process"), Some("kill"))
                .is_some()
        );
        assert!(
            rules
                .denied(Origin::Mcp, "shell", Some("bash"), Some("exec"))
                .is_none()
        );
    }

    #[test]
    fn rules_round_trip_as_json_settings() {
        let json = serde_json::to_value(OriginRules::default()).unwrap();
        assert_eq!(json["deny"]["comm"], serde_json::json!(["shell"]));
        let back: OriginRules = serde_json::from_value(json).unwrap();
        assert_eq!(back, OriginRules::default());
    }
}
