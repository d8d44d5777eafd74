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
            "os",
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
    ("user", Suffix::Strict(&["profile", "presence", "token"])),
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

/// How much a permission lets an app do, for the install prompt's emphasis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sensitivity {
    /// Reads or shows things inside Osprey.
    Low,
    /// Reaches outside Osprey or changes Osprey's state.
    Medium,
    /// Runs programs, touches files, reads mail or passwords, speaks for the person: worth a
    /// second look.
    High,
}

/// What a permission lets an app do, in words a person reads before installing:
/// `network:api.example.com` -> "Connect to api.example.com over the internet". Shared by the
/// desktop's install prompt and the command line. An unknown or malformed permission says so
/// (the manifest check refuses it anyway).
/// Each permission in plain words with its sensitivity, as every front end shows them (the
/// desktop's install prompt, the store tool's approval question, `osprey app`).
pub fn explained(permissions: &[String]) -> Vec<osprey_types::PermissionExplained> {
    use osprey_types::PermissionSensitivity;
    permissions
        .iter()
        .map(|permission| {
            let (explanation, sensitivity) = explain(permission);
            osprey_types::PermissionExplained {
                permission: permission.clone(),
                explanation,
                sensitivity: match sensitivity {
                    Sensitivity::Low => PermissionSensitivity::Low,
                    Sensitivity::Medium => PermissionSensitivity::Medium,
                    Sensitivity::High => PermissionSensitivity::High,
                },
            }
        })
        .collect()
}

pub fn explain(permission: &str) -> (String, Sensitivity) {
    use Sensitivity::{High, Low, Medium};
    let Some((prefix, suffix)) = permission.split_once(':') else {
        return (format!("Unknown permission `{permission}`"), High);
    };
    let text = |s: &str| s.to_string();
    let (words, level) = match (prefix, suffix) {
        ("network", "*") => (text("Connect to any server on the internet"), High),
        ("network", host) => match host.strip_prefix("*.") {
            Some(domain) => (
                format!("Connect to {domain} and its subdomains over the internet"),
                Medium,
            ),
            None => (format!("Connect to {host} over the internet"), Medium),
        },
        ("oauth", "*") => (text("Sign in to any online account on your behalf"), High),
        ("oauth", provider) => (
            format!("Sign in to your {provider} account on your behalf"),
            High,
        ),
        ("settings", "*") => (text("Read and change all of its own settings"), Low),
        ("settings", key) => (format!("Read and change its setting `{key}`"), Low),
        ("filesystem", "read") => (text("Read files on your computer"), High),
        ("filesystem", "write") => (
            text("Create, change and delete files on your computer"),
            High,
        ),
        ("filesystem", _) => (text("Read, change and delete files on your computer"), High),
        ("capability", "tool") => (text("Add tools the assistant can use"), Low),
        ("capability", "channel") => (
            text("Post into and read from conversation channels"),
            Medium,
        ),
        ("capability", "gateway") => (
            text("Act as a model provider that sees your conversations"),
            High,
        ),
        ("capability", "vision") => (text("Analyse images for the assistant"), Medium),
        ("capability", "browser") => (text("Provide a web browser the assistant drives"), Medium),
        ("capability", "comm") => (
            text("Bring messages in from a messaging service and answer them"),
            High,
        ),
        ("capability", "ui") => (text("Show its own window"), Low),
        ("capability", "schedule") => (text("Run scheduled jobs"), Medium),
        ("capability", "hooks") => (
            text("Watch and change what the assistant does as it works"),
            High,
        ),
        ("capability", _) => (text("Provide every kind of capability to Osprey"), High),
        ("memory", "read") => (text("Read what the assistant remembers about you"), High),
        ("memory", "write") => (
            text("Add to and change what the assistant remembers"),
            Medium,
        ),
        ("memory", "search") => (text("Search what the assistant remembers"), High),
        ("memory", _) => (
            text("Read, search and change what the assistant remembers"),
            High,
        ),
        ("session", "read") => (text("Read your conversations"), High),
        ("session", "write") => (text("Add messages to your conversations"), Medium),
        ("session", "create") => (text("Start new conversations"), Low),
        ("session", _) => (text("Read, start and add to your conversations"), High),
        ("context", "read") => (text("Read the current conversation's context"), Medium),
        ("context", "write") => (text("Add to the current conversation's context"), Medium),
        ("context", _) => (
            text("Read and add to the current conversation's context"),
            Medium,
        ),
        ("tool", "file") => (
            text("Use the file tool (read and write files, with your approval rules)"),
            High,
        ),
        ("tool", "shell") => (
            text("Run commands on your computer (with your approval rules)"),
            High,
        ),
        ("tool", "web") => (text("Fetch web pages and use the browser"), Medium),
        ("tool", "screenshot") => (text("Take screenshots of your screen"), High),
        ("tool", "desktop") => (text("Click and type on your desktop"), High),
        ("tool", "agent") => (
            text("Use the assistant's agent tool (memory, reminders, sub-agents)"),
            Medium,
        ),
        ("tool", "skill") => (text("Use and manage skills"), Medium),
        ("tool", "app") => (text("Manage other apps"), High),
        ("tool", "store") => (text("Browse and install from the store"), High),
        ("tool", "os") => (
            text("Use your system: clipboard, notifications, windows, apps and the keychain"),
            High,
        ),
        ("tool", _) => (text("Use every built-in tool"), High),
        ("shell", "exec") => (text("Run commands on your computer"), High),
        ("shell", "process") => (text("List and stop programs on your computer"), High),
        ("shell", "session") => (text("Use running terminal sessions"), High),
        ("shell", _) => (
            text("Run commands and control programs on your computer"),
            High,
        ),
        ("subagent", "spawn") => (text("Start helper agents"), Medium),
        ("subagent", "list") => (text("See running helper agents"), Low),
        ("subagent", "stop") => (text("Stop helper agents"), Low),
        ("subagent", _) => (text("Start, see and stop helper agents"), Medium),
        ("lane", "main") => (text("Run work in the main lane"), Low),
        ("lane", "background") => (text("Run work in the background"), Low),
        ("lane", "scheduled") => (text("Run scheduled work"), Low),
        ("lane", _) => (text("Run work in any lane"), Low),
        ("channel", "read") => (text("Read conversation channels"), Medium),
        ("channel", "write") => (text("Post into conversation channels"), Medium),
        ("channel", _) => (text("Read and post into conversation channels"), Medium),
        ("comm", "send") => (text("Send messages on your behalf"), High),
        ("comm", "receive") => (text("Receive your messages"), High),
        ("comm", _) => (text("Send and receive messages on your behalf"), High),
        ("notification", _) => (text("Show notifications"), Low),
        ("embedding", "create") => (text("Compute text embeddings"), Low),
        ("embedding", "search") => (text("Search by meaning"), Low),
        ("embedding", _) => (text("Compute and search text embeddings"), Low),
        ("skill", "read") => (text("Read skills"), Low),
        ("skill", "create") => (text("Create skills"), Medium),
        ("skill", "update") => (text("Change skills"), Medium),
        ("skill", "delete") => (text("Delete skills"), Medium),
        ("skill", _) => (text("Read, create, change and delete skills"), Medium),
        ("advisor", _) => (text("Consult advisor personas"), Low),
        ("model", "invoke") => (
            text("Send prompts to your AI model (may cost you money)"),
            Medium,
        ),
        ("model", "list") => (text("See which AI models you have"), Low),
        ("model", _) => (
            text("See and use your AI models (may cost you money)"),
            Medium,
        ),
        ("mcp", "call") => (text("Call tools of your MCP servers"), High),
        ("mcp", "list") => (text("See your MCP servers' tools"), Low),
        ("mcp", _) => (text("See and call your MCP servers' tools"), High),
        ("database", "read") => (text("Read its own database"), Low),
        ("database", "write") => (text("Write its own database"), Low),
        ("database", _) => (text("Read and write its own database"), Low),
        ("storage", "read") => (text("Read its own storage"), Low),
        ("storage", "write") => (text("Write its own storage"), Low),
        ("storage", _) => (text("Read and write its own storage"), Low),
        ("hook", "*") => (text("Watch and change everything the assistant does"), High),
        ("hook", hook) => (hook_words(hook), High),
        ("schedule", "read") => (text("See scheduled jobs and reminders"), Low),
        ("schedule", "write") => (
            text("Create and change scheduled jobs and reminders"),
            Medium,
        ),
        ("schedule", "trigger") => (text("Run scheduled jobs now"), Medium),
        ("schedule", _) => (
            text("See, change and run scheduled jobs and reminders"),
            Medium,
        ),
        ("voice", "speak") => (text("Speak aloud"), Low),
        ("voice", "listen") => (text("Listen through your microphone"), High),
        ("voice", _) => (text("Speak aloud and listen through your microphone"), High),
        ("browser", "read") => (text("Read pages open in the browser"), High),
        ("browser", "interact") => (text("Click and type in the browser"), High),
        ("browser", _) => (text("Read and act in the browser"), High),
        ("user", "profile") => (text("Read your profile (name, preferences)"), Medium),
        ("user", "presence") => (text("Know whether you are at your computer"), Medium),
        ("user", "token") => (
            text("Use your app store sign-in (your store token) on your behalf"),
            High,
        ),
        ("user", _) => (
            text("Read your profile, whether you are at your computer, and use your store sign-in"),
            High,
        ),
        _ => (format!("Unknown permission `{permission}`"), High),
    };
    (words, level)
}

fn hook_words(hook: &str) -> String {
    use osprey_tools::hooks as h;
    match hook {
        h::TOOL_PRE_EXECUTE => "See and change each tool call before it runs".into(),
        h::TOOL_POST_EXECUTE => "See and change each tool call's result".into(),
        h::MESSAGE_PRE_SEND => "See and change what is sent to the AI model".into(),
        h::MESSAGE_POST_RECEIVE => "See and change the AI model's replies".into(),
        h::RESPONSE_STREAM => "See the AI model's replies as they stream".into(),
        h::SESSION_START => "Know when a conversation starts".into(),
        h::SESSION_MESSAGE_APPEND => "See each message added to a conversation".into(),
        h::PROMPT_SYSTEM_SECTIONS => "Add instructions to the assistant's prompt".into(),
        h::STEERING_GENERATE => "Steer the assistant between steps".into(),
        h::MEMORY_PRE_STORE => "See and change what the assistant is about to remember".into(),
        h::MEMORY_PRE_RECALL => "See and change what the assistant recalls".into(),
        other => format!("Watch the `{other}` event"),
    }
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

    #[test]
    fn every_known_permission_has_plain_words() {
        assert_eq!(
            explain("network:api.example.com").0,
            "Connect to api.example.com over the internet"
        );
        assert_eq!(explain("filesystem:read").0, "Read files on your computer");
        assert_eq!(explain("filesystem:read").1, Sensitivity::High);
        assert!(explain("network:*.example.com").0.contains("subdomains"));
        for (prefix, kind) in PREFIXES {
            let mut suffixes = vec!["*"];
            if let Suffix::Strict(list) = kind {
                suffixes.extend(list.iter().copied());
            } else {
                suffixes.push("example");
            }
            for suffix in suffixes {
                let permission = format!("{prefix}:{suffix}");
                let (words, _) = explain(&permission);
                assert!(!words.starts_with("Unknown"), "{permission}: {words}");
                assert!(
                    !words.contains('`') || *prefix == "settings" || *prefix == "hook",
                    "{permission}: {words}"
                );
            }
        }
        assert!(explain("root:all").0.starts_with("Unknown"));
        assert!(explain("nonsense").0.starts_with("Unknown"));
    }
}
