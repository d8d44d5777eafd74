//! Names models reach for that are not Osprey's tools, mapped to the call that does the job, so
//! an unknown name gets an error that teaches the right call.

/// `(wrong names, the tool, the right call)`. The call is written as a model would write it; its
/// input (every `key: value` inside the parentheses) is checked against the registered tool before
/// it is suggested, so no error ever teaches a call that would fail.
const CORRECTIONS: &[(&[&str], &str, &str)] = &[
    (
        &[
            "bash",
            "sh",
            "zsh",
            "shell_exec",
            "exec",
            "execute",
            "run",
            "run_command",
            "execute_command",
            "terminal",
            "command",
            "cmd",
        ],
        "shell",
        r#"shell(resource: "bash", action: "exec", command: "...")"#,
    ),
    (
        &["read", "read_file", "cat", "view", "open_file"],
        "file",
        r#"file(resource: "file", action: "read", path: "...")"#,
    ),
    (
        &["write", "write_file", "create_file", "save_file"],
        "file",
        r#"file(resource: "file", action: "write", path: "...", content: "...")"#,
    ),
    (
        &[
            "edit",
            "edit_file",
            "str_replace",
            "str_replace_editor",
            "replace",
            "multiedit",
            "multi_edit",
            "patch",
        ],
        "file",
        r#"file(resource: "file", action: "edit", path: "...", old_text: "...", new_text: "...")"#,
    ),
    (
        &["grep", "rg", "ripgrep", "search_files", "search_code"],
        "file",
        r#"file(resource: "file", action: "grep", pattern: "...")"#,
    ),
    (
        &["glob", "find", "find_files", "list_files", "ls"],
        "file",
        r#"file(resource: "file", action: "glob", pattern: "**/*.rs")"#,
    ),
    (
        &["websearch", "web_search", "search", "google", "search_web"],
        "web",
        r#"web(resource: "search", action: "query", query: "...")"#,
    ),
    (
        &[
            "webfetch",
            "web_fetch",
            "fetch",
            "curl",
            "wget",
            "http",
            "http_get",
            "browse_url",
        ],
        "web",
        r#"web(resource: "http", action: "fetch", url: "https://...")"#,
    ),
    (
        &["apps", "app_list", "list_apps", "applications"],
        "app",
        r#"app(action: "list")"#,
    ),
    (
        &["computer", "mouse", "keyboard", "click", "type_text"],
        "desktop",
        r#"desktop(action: "click", element: "B3")"#,
    ),
    (
        &["take_screenshot", "screen", "capture"],
        "screenshot",
        r#"screenshot(action: "see")"#,
    ),
];

/// The right call for a wrong name, when Osprey knows one.
pub fn suggest(name: &str) -> Option<(&'static str, &'static str)> {
    let lower = name.to_ascii_lowercase();
    CORRECTIONS
        .iter()
        .find(|(names, _, _)| names.contains(&lower.as_str()))
        .map(|(_, tool, call)| (*tool, *call))
}

/// The input of a suggested call: `web(resource: "search", action: "query", query: "...")` is
/// `{"resource": "search", "action": "query", "query": "..."}`.
pub fn call_input(call: &str) -> serde_json::Value {
    let inner = call
        .split_once('(')
        .and_then(|(_, rest)| rest.rsplit_once(')'))
        .map(|(inner, _)| inner)
        .unwrap_or_default();
    let mut input = serde_json::Map::new();
    let mut rest = inner;
    while let Some((key, after)) = rest.split_once(':') {
        let after = after.trim_start();
        let Some(quoted) = after.strip_prefix('"') else {
            break;
        };
        let Some((value, tail)) = quoted.split_once('"') else {
            break;
        };
        input.insert(key.trim().to_string(), value.into());
        rest = tail.trim_start().trim_start_matches(',');
    }
    serde_json::Value::Object(input)
}

/// The error text for an unknown tool: the right call, when the tool it names is registered and
/// accepts it (`accepts(tool, input)`), and the list of tools.
pub fn unknown_tool_message(
    name: &str,
    registered: &[String],
    accepts: impl Fn(&str, serde_json::Value) -> bool,
) -> String {
    let list = registered.join(", ");
    if let Some((tool, call)) = suggest(name)
        .filter(|(t, _)| registered.iter().any(|r| r == t))
        .filter(|(t, call)| accepts(t, call_input(call)))
    {
        return format!(
            "There is no tool `{name}`. Use {call} — the `{tool}` tool does that. Available tools: {list}."
        );
    }
    if let Some(same) = registered.iter().find(|r| r.eq_ignore_ascii_case(name)) {
        return format!(
            "There is no tool `{name}`; tool names are case-sensitive: use `{same}`. Available tools: {list}."
        );
    }
    format!("There is no tool `{name}`. Available tools: {list}.")
}

/// The candidate `name` most likely misspells, when one is close enough to suggest (`comand`
/// for `command`, `filepath` for `path` is not).
pub fn closest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let lower = name.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (c, strsim::jaro_winkler(&lower, &c.to_ascii_lowercase())))
        .filter(|(_, score)| *score >= 0.85)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// The tool a called name means: the name itself when a tool is registered under it (the MCP
/// client registers other servers' tools as `mcp__<server>__<tool>`), else the name with an MCP
/// prefix stripped (a model that saw Osprey's tools through an MCP client calls
/// `mcp__osprey__file`, meaning `file`).
pub fn resolve_tool_name(name: &str, is_registered: impl Fn(&str) -> bool) -> &str {
    if is_registered(name) {
        name
    } else {
        strip_mcp_prefix(name)
    }
}

/// Strips an MCP prefix (`mcp__osprey__web` -> `web`, `mcp__files__read` -> `read`).
pub fn strip_mcp_prefix(name: &str) -> &str {
    match name.strip_prefix("mcp__") {
        Some(rest) => rest.split_once("__").map(|(_, tool)| tool).unwrap_or(rest),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<String> {
        ["file", "shell", "web", "app"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn message(name: &str) -> String {
        unknown_tool_message(name, &tools(), |_, _| true)
    }

    #[test]
    fn every_named_alias_maps_to_its_call() {
        for (name, tool) in [
            ("bash", "shell"),
            ("read", "file"),
            ("write", "file"),
            ("edit", "file"),
            ("grep", "file"),
            ("glob", "file"),
            ("websearch", "web"),
            ("web_search", "web"),
            ("webfetch", "web"),
            ("web_fetch", "web"),
            ("apps", "app"),
            ("Bash", "shell"),
        ] {
            let msg = message(name);
            assert!(msg.contains(&format!("`{tool}` tool")), "{name}: {msg}");
            assert!(
                msg.contains("Available tools: file, shell, web, app"),
                "{msg}"
            );
        }
        let msg = message("bash");
        assert!(
            msg.contains(r#"shell(resource: "bash", action: "exec""#),
            "{msg}"
        );
    }

    #[test]
    fn unknown_names_list_the_tools_and_case_slips_name_the_right_one() {
        let msg = message("teleport");
        assert_eq!(
            msg,
            "There is no tool `teleport`. Available tools: file, shell, web, app."
        );
        assert!(message("Web").contains("use `web`"));
        // A suggestion for a tool that is not registered is not made.
        assert!(!message("screen").contains("screenshot("));
    }

    #[test]
    fn a_call_the_tool_would_refuse_is_not_suggested() {
        // A web tool without a search resource: no suggestion of one, only the list.
        let without_search = |tool: &str, input: serde_json::Value| {
            !(tool == "web" && input["resource"] == "search")
        };
        for name in ["websearch", "web_search", "search", "google"] {
            let msg = unknown_tool_message(name, &tools(), without_search);
            assert_eq!(
                msg,
                format!("There is no tool `{name}`. Available tools: file, shell, web, app.")
            );
        }
        // fetch is still suggested: the same tool accepts it.
        let msg = unknown_tool_message("webfetch", &tools(), without_search);
        assert!(
            msg.contains(r#"web(resource: "http", action: "fetch""#),
            "{msg}"
        );
    }

    #[test]
    fn call_inputs_are_read_from_the_suggested_call() {
        assert_eq!(
            call_input(r#"web(resource: "search", action: "query", query: "...")"#),
            serde_json::json!({"resource": "search", "action": "query", "query": "..."})
        );
        assert_eq!(
            call_input(r#"app(action: "list")"#),
            serde_json::json!({"action": "list"})
        );
    }

    #[test]
    fn mcp_prefixes_are_stripped() {
        assert_eq!(strip_mcp_prefix("mcp__osprey__web"), "web");
        assert_eq!(strip_mcp_prefix("mcp__web"), "web");
        assert_eq!(strip_mcp_prefix("web"), "web");
    }

    #[test]
    fn registered_mcp_names_resolve_to_themselves_and_others_are_stripped() {
        let registered = |name: &str| ["file", "mcp__weather__forecast"].contains(&name);
        assert_eq!(
            resolve_tool_name("mcp__weather__forecast", registered),
            "mcp__weather__forecast"
        );
        assert_eq!(resolve_tool_name("mcp__osprey__file", registered), "file");
        assert_eq!(resolve_tool_name("file", registered), "file");
        // An unregistered prefixed name is stripped, and then reported unknown by the registry.
        assert_eq!(
            resolve_tool_name("mcp__weather__radar", registered),
            "radar"
        );
    }
}
