//! The permission taxonomy: `prefix:suffix` strings an app declares in its manifest. Strict
//! prefixes take a suffix from a fixed list; flexible prefixes (`network:`, `oauth:`,
//! `settings:`) take a validated pattern; every prefix accepts `*`. Which suffixes exist is part
//! of the `.napp` format (docs/napp-format.md) and only grows within a protocol version.

/// Hook points apps may subscribe to: exactly the ones Osprey fires (`osprey_tools::hooks`).
pub use osprey_tools::hooks::KNOWN_HOOKS;

/// How a prefix's suffix is checked.
#[derive(Clone, Copy, Debug)]
pub enum Suffix {
    /// One of a fixed list.
    Strict(&'static [&'static str]),
    /// A host name or wildcard host, with an optional port.
    Host,
    /// A lowercase identifier (`[a-z0-9_-]`, 1-64).
    Identifier,
    /// A dotted settings key (`[a-z0-9_-]` segments joined by `.`).
    SettingsKey,
}

/// Every prefix and how its suffix is checked.
pub const PREFIXES: &[(&str, Suffix)] = &[
    ("network", Suffix::Host),
    ("oauth", Suffix::Identifier),
    ("settings", Suffix::SettingsKey),
    ("filesystem", Suffix::Strict(&["read", "write"])),
    (
        "capability",
        Suffix::Strict(&[
            "tool", "channel", "gateway", "vision", "browser", "comm", "ui", "schedule", "hooks",
        ]),
    ),
    ("memory", Suffix::Strict(&["read", "write", "search"])),
    ("session", Suffix::Strict(&["read", "write", "create"])),
    ("context", Suffix::Strict(&["read", "write"])),
    (
        "tool",
        Suffix::Strict(&[
            "file",
            "shell",
            "web",
            "screenshot",
            "desktop",
            "agent",
            "skill",
            "app",
            "store",
        ]),
    ),
    ("shell", Suffix::Strict(&["exec", "process", "session"])),
    ("subagent", Suffix::Strict(&["spawn", "list", "stop"])),
    ("lane", Suffix::Strict(&["main", "background", "scheduled"])),
    ("channel", Suffix::Strict(&["read", "write"])),
    ("comm", Suffix::Strict(&["send", "receive"])),
    ("notification", Suffix::Strict(&["send"])),
    ("embedding", Suffix::Strict(&["create", "search"])),
    (
        "skill",
        Suffix::Strict(&["read", "create", "update", "delete"]),
    ),
    ("advisor", Suffix::Strict(&["consult"])),
    ("model", Suffix::Strict(&["invoke", "list"])),
    ("mcp", Suffix::Strict(&["call", "list"])),
    ("database", Suffix::Strict(&["read", "write"])),
    ("storage", Suffix::Strict(&["read", "write"])),
    ("hook", Suffix::Strict(KNOWN_HOOKS)),
    ("schedule", Suffix::Strict(&["read", "write", "trigger"])),
    ("voice", Suffix::Strict(&["speak", "listen"])),
    ("browser", Suffix::Strict(&["read", "interact"])),
    ("user", Suffix::Strict(&["profile", "presence"])),
];

/// Checks one permission string; the error says why it is refused.
pub fn validate(permission: &str) -> Result<(), String> {
    let Some((prefix, suffix)) = permission.split_once(':') else {
        return Err(format!(
            "`{permission}` has no `prefix:` (e.g. `network:api.example.com`)"
        ));
    };
    let Some((_, kind)) = PREFIXES.iter().find(|(name, _)| *name == prefix) else {
        return Err(format!("unknown permission prefix `{prefix}:`"));
    };
    if suffix == "*" {
        return Ok(());
    }
    let valid = match kind {
        Suffix::Strict(allowed) => {
            if allowed.contains(&suffix) {
                return Ok(());
            }
            if prefix == "hook"
                && let Some(why) = osprey_tools::hooks::unknown_hook(suffix)
            {
                return Err(format!("`{permission}`: {why}"));
            }
            return Err(format!(
                "`{prefix}:` takes one of {} or `*`, not `{suffix}`",
                allowed.join(", ")
            ));
        }
        Suffix::Host => valid_host_pattern(suffix),
        Suffix::Identifier => valid_identifier(suffix),
        Suffix::SettingsKey => suffix.len() <= 128 && suffix.split('.').all(valid_identifier),
    };
    if valid {
        Ok(())
    } else {
        Err(format!("`{suffix}` is not a valid `{prefix}:` pattern"))
    }
}

/// Whether `granted` (the manifest's permissions) holds any permission under `prefix`.
pub fn has_prefix(granted: &[String], prefix: &str) -> bool {
    granted
        .iter()
        .any(|p| p.split_once(':').is_some_and(|(name, _)| name == prefix))
}

/// Whether `granted` covers `prefix:suffix` exactly or through `prefix:*`.
pub fn allows(granted: &[String], prefix: &str, suffix: &str) -> bool {
    granted.iter().any(|p| {
        p.split_once(':')
            .is_some_and(|(name, value)| name == prefix && (value == "*" || value == suffix))
    })
}

fn valid_identifier(value: &str) -> bool {
    (1..=64).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// `host`, `*.host`, optionally `:port`. Labels are LDH, 1-63 long; at least one dot after a
/// wildcard so `*.com`-style suffix grabs still need two labels.
fn valid_host_pattern(value: &str) -> bool {
    let (host, port) = match value.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (value, None),
    };
    if let Some(port) = port
        && !port.parse::<u16>().is_ok_and(|port| port > 0)
    {
        return false;
    }
    let (wildcard, host) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    let labels: Vec<&str> = host.split('.').collect();
    if host.len() > 253 || (wildcard && labels.len() < 2) {
        return false;
    }
    labels.iter().all(|label| {
        (1..=63).contains(&label.len())
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_prefixes_take_listed_suffixes_or_a_star() {
        assert!(validate("filesystem:read").is_ok());
        assert!(validate("filesystem:*").is_ok());
        assert!(validate("hook:tool.pre_execute").is_ok());
        let error = validate("filesystem:root").unwrap_err();
        assert!(error.contains("read, write"), "{error}");
        assert!(validate("hook:tool.anything").is_err());
    }

    #[test]
    fn flexible_prefixes_take_validated_patterns() {
        for ok in [
            "network:api.example.com",
            "network:*.example.com",
            "network:localhost:8080",
            "network:*",
            "oauth:github",
            "settings:display.theme",
        ] {
            assert!(validate(ok).is_ok(), "{ok}");
        }
        for bad in [
            "network:",
            "network:*.com",
            "network:exa mple.com",
            "network:example.com:0",
            "network:example.com:99999",
            "network:-bad.com",
            "network:Example.com",
            "oauth:Git Hub",
            "settings:a..b",
        ] {
            assert!(validate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_prefixes_and_missing_colons_are_refused() {
        assert!(validate("root:everything").unwrap_err().contains("unknown"));
        assert!(validate("network").unwrap_err().contains("prefix"));
    }

    #[test]
    fn hook_permissions_name_only_hooks_that_fire_and_point_old_names_to_new_ones() {
        for hook in KNOWN_HOOKS {
            assert!(validate(&format!("hook:{hook}")).is_ok(), "{hook}");
        }
        let why = validate("hook:prompt.system").unwrap_err();
        assert!(why.contains("use `prompt.system_sections`"), "{why}");
        let why = validate("hook:session.end").unwrap_err();
        assert!(why.contains("unknown hook `session.end`"), "{why}");
    }

    #[test]
    fn allows_matches_exact_or_star() {
        let granted = vec!["hook:tool.pre_execute".to_owned(), "comm:*".to_owned()];
        assert!(allows(&granted, "hook", "tool.pre_execute"));
        assert!(!allows(&granted, "hook", "tool.post_execute"));
        assert!(allows(&granted, "comm", "send"));
        assert!(has_prefix(&granted, "comm"));
        assert!(!has_prefix(&granted, "network"));
    }
}
