//! The settings Osprey understands, stored as JSON in the database's settings table. Each key is
//! validated on write, and read with a fallback to its default so a bad value never stops
//! start-up (it is logged instead).

use std::path::PathBuf;

use anyhow::{Context, bail};
use osprey_db::Settings;
use osprey_tools::{GovernanceConfig, OriginRules, PolicyConfig};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The approval policy: `{"level": "allowlist", "ask": "on-miss", "allowlist": ["git status"], "safe_bins": [...]}`.
pub const POLICY: &str = "policy";
/// Per-origin denies: `{"deny": {"comm": ["shell"], "mcp": ["file.write"]}}`.
pub const ORIGIN_RULES: &str = "origin_rules";
/// Lets the web tool reach 127.0.0.0/8 and ::1 (for local development and tests); off by default.
pub const WEB_ALLOW_LOOPBACK: &str = "web.allow_loopback";
/// Web search (`osprey_browser::SearchSettings`): `{"searxng_url": "https://searx.example/"}`;
/// Brave and Tavily keys live in the secret store (`search.brave.api_key`, `search.tavily.api_key`).
pub const WEB_SEARCH: &str = "web.search";
/// The person's own browser for the `chrome` browser profile: `{"port": 9222}`, the loopback
/// port they started it with (`--remote-debugging-port`). Unset: no `chrome` profile.
pub const WEB_CHROME: &str = "web.chrome";
/// The folder browser downloads are saved to (`~/Downloads/Osprey`; `~/` is the home folder).
/// Unset: downloads are refused. Downloaded files are never opened or run.
pub const WEB_DOWNLOADS: &str = "web.downloads";
/// How the desktop's own browser profile (`native`) opens its pages: `"shown"` (the default:
/// the person watches the agent browse) or `"hidden"` (off screen until the person shows them
/// or takes the browser over). For pages opened from then on.
pub const WEB_NATIVE_WINDOWS: &str = "web.native_windows";
/// Extra environment variable names passed to shell commands: `["CARGO_HOME", "RUSTUP_HOME"]`.
pub const SHELL_EXTRA_ENV: &str = "shell.extra_env";
/// The kernel sandbox shell commands run in: `{"workspaces": ["~/src"], "caches": [".cargo",
/// ".npm"], "network": true}` (see [`ShellSandboxSetting`]).
pub const SHELL_SANDBOX: &str = "shell.sandbox";
/// MCP servers to connect to: `{"weather": {"command": "weather-mcp", "args": []},
/// "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."}}}`.
pub const MCP_SERVERS: &str = "mcp.servers";

/// Model providers: `{"default": "openai", "openai": {"base_url": "http://127.0.0.1:8080/v1", "model": "qwen3"}}`.
/// Keys are not stored here but in the secret store (`osprey config set provider.openai.api_key`).
pub const PROVIDERS: &str = "providers";

/// When a provider key was last stored or removed through Osprey (Unix milliseconds): written
/// by Osprey itself, so a running Osprey sees the change and builds its chat runners anew.
pub const PROVIDER_KEYS_CHANGED: &str = "providers.keys_changed_ms";

/// The app store's root URL (`$OSPREY_STORE_URL` wins): `"https://store.example.com"`.
pub const STORE_URL: &str = "store.url";

/// When the person's store token (the secret `store.token`) was last stored or removed (Unix
/// milliseconds): written by Osprey itself, so a running Osprey reconnects the store's event
/// stream with the new token.
pub const STORE_TOKEN_CHANGED: &str = "store.token_changed_ms";

/// Hours a cached revocation list stays usable while the store cannot be reached, after which
/// store apps are refused and stopped (0 to 168, default 168). It can only be made stricter than
/// the default: revocation fails closed.
pub const STORE_REVOCATION_MAX_AGE: &str = "store.revocation_max_age_hours";

/// Sub-agent limits (`osprey_agent::SubAgentSettings`): `{"max_depth": 2, "timeout_seconds": 300}`.
pub const SUBAGENTS: &str = "subagents";

/// Tool packs and agent types (`osprey_agent::AgentSettings`): `{"trust": "standard", "models":
/// {"summarizer": "claude-haiku-4-5"}}`; read at start-up with `<data>/packs` and `<data>/agents`.
pub const AGENTS: &str = "agents";

/// The vision tool's own model (`osprey_agent::vision::VisionSettings`): `{"model": "gpt-4o"}`;
/// none: the conversation's model. Read at each call.
pub const VISION: &str = "vision";

/// Embeddings for memory search (optional): `{"provider": "ollama", "model": "nomic-embed-text"}`
/// or `{"provider": "openai", "model": "text-embedding-3-small", "base_url": ...}`.
pub const MEMORY_EMBEDDINGS: &str = "memory.embeddings";

/// Seconds an approval question waits for the person before it is denied (5 to 3600; default 120).
pub const APPROVAL_TIMEOUT: &str = "approvals.timeout_seconds";

/// The window's appearance (`osprey_types::Theme`): `"system"`, `"light"` or `"dark"`.
pub const UI_THEME: &str = "ui.theme";

/// Skills turned off by name: `["desktop-automation"]`. They stay on disk, out of the catalog.
pub const SKILLS_DISABLED: &str = "skills.disabled";
/// Who the agent is: name, emoji, vibe, personality, quiet hours (`osprey_types::Persona`).
pub const PERSONA: &str = "persona";

/// CalDAV/CardDAV accounts of the `os` tool's calendar and contacts: `{"home": {"kind": "dav",
/// "url": "https://dav.example.com/", "username": "me"}}`; passwords live in the secret store
/// (`osprey config set dav.home.password -`).
pub const DAV_ACCOUNTS: &str = osprey_platform::dav::ACCOUNTS_SETTING;

/// The `os` tool's mail accounts (`osprey_platform::mail::MailSettings`): `{"accounts": [{"name":
/// "work", "email": ..., "imap": {"host": ...}, "smtp": {"host": ..., "port": 587, "tls":
/// "starttls"}}]}`; each password lives in the secret store (`osprey os mail-password <name>`).
pub const OS_MAIL: &str = osprey_platform::mail::SETTING;

/// Whether the `os` tool's calendar and contacts also offer the desktop's own stores (Evolution
/// Data Server on Linux): `false` turns them off. Absent: on.
pub const OS_DESKTOP_STORES: &str = osprey_platform::dav::DESKTOP_SETTING;

/// Tools and tool categories switched off: `["desktop", "web", "exec"]` (categories: files,
/// shell, web, desktop, os, apps, store, agent, mcp). They leave the model's list and are refused.
pub const TOOLS_DISABLED: &str = "tools.disabled";
/// Autonomous mode: `true` lets what the approval policy would ask run without a question
/// (never what the safeguard refuses). Off by default; only the person turns it on.
pub const TOOLS_AUTONOMOUS: &str = "tools.autonomous";
/// Globs no tool may read or write: `["~/private", "/srv/**/*.key"]`.
pub const TOOLS_DENIED_PATHS: &str = "tools.denied_paths";
/// Commands never run, as a program or an argv prefix: `["git push", "rsync"]`.
pub const TOOLS_BLOCKLIST: &str = "tools.blocklist";
/// Quotas by `tool`, `tool.resource` or `tool.resource.action`:
/// `{"shell": {"per_session": 50, "per_day": 500}}`.
pub const TOOLS_QUOTAS: &str = "tools.quotas";
/// The circuit breaker: `{"failures": 5, "window_seconds": 60, "cooldown_seconds": 60}`.
pub const TOOLS_BREAKER: &str = "tools.breaker";

/// The `tools.*` keys, which together make the registry's [`GovernanceConfig`].
pub const TOOLS_KEYS: &[&str] = &[
    TOOLS_DISABLED,
    TOOLS_AUTONOMOUS,
    TOOLS_DENIED_PATHS,
    TOOLS_BLOCKLIST,
    TOOLS_QUOTAS,
    TOOLS_BREAKER,
];

/// The tool governance the stored `tools.*` settings make.
pub fn governance(settings: &Settings) -> GovernanceConfig {
    GovernanceConfig {
        disabled: read(settings, TOOLS_DISABLED),
        autonomous: read(settings, TOOLS_AUTONOMOUS),
        denied_paths: read(settings, TOOLS_DENIED_PATHS),
        blocklist: read(settings, TOOLS_BLOCKLIST),
        quotas: read(settings, TOOLS_QUOTAS),
        breaker: read(settings, TOOLS_BREAKER),
    }
}

/// The id other agents reach this Osprey by through comm apps with topics (a string). Osprey
/// picks `osprey-<8 hex digits>` and stores it here the first time the apps start.
pub const COMM_AGENT_ID: &str = "comm.agent_id";

/// Every known key with a one-line description.
pub const KNOWN: &[(&str, &str)] = &[
    (POLICY, "approval policy: level, ask, allowlist, safe_bins"),
    (
        APPROVAL_TIMEOUT,
        "seconds an approval question waits before it is denied (5 to 3600, default 120)",
    ),
    (
        ORIGIN_RULES,
        "per-origin denies: {\"deny\": {\"comm\": [\"shell\"]}}",
    ),
    (
        WEB_ALLOW_LOOPBACK,
        "let the web tool reach loopback addresses (true/false)",
    ),
    (
        WEB_CHROME,
        "your own browser as the `chrome` profile: {\"port\": 9222}, the port you started it with (--remote-debugging-port); every call there is asked",
    ),
    (
        WEB_DOWNLOADS,
        "the folder the browser saves downloads to (\"~/Downloads/Osprey\"); unset, downloads are refused; files are never opened",
    ),
    (
        WEB_NATIVE_WINDOWS,
        "the desktop's browser windows: \"shown\" (default: you watch the agent browse) or \"hidden\" (until you show them or take the browser over); for pages opened from then on",
    ),
    (
        WEB_SEARCH,
        "web search: {\"searxng_url\": \"https://searx.example/\", \"duckduckgo\": true}",
    ),
    (
        SHELL_EXTRA_ENV,
        "extra environment variable names shell commands may see",
    ),
    (
        SHELL_SANDBOX,
        "shell commands' sandbox: {\"workspaces\": [folders commands may write], \"caches\": [folders under home they may write too], \"network\": true}",
    ),
    (
        MCP_SERVERS,
        "MCP servers: {\"name\": {\"command\": ..., \"args\": [...], \"env\": {...}} or {\"url\": ..., \"headers\": {...}}}",
    ),
    (
        STORE_URL,
        "the app store's URL (OSPREY_STORE_URL wins when set)",
    ),
    (
        STORE_TOKEN_CHANGED,
        "written by Osprey when the store token changes (set the token with `osprey config set store.token -`)",
    ),
    (
        STORE_REVOCATION_MAX_AGE,
        "hours a cached revocation list is trusted while the store is unreachable (0 to 168, default 168)",
    ),
    (
        MEMORY_EMBEDDINGS,
        "memory search by meaning too: {\"provider\": \"ollama\"|\"openai\", \"model\": ..., \"base_url\": ...}",
    ),
    (
        PROVIDERS,
        "model providers: {\"default\": \"openai\", \"openai\": {\"base_url\": ..., \"model\": ...}}; also provider.<kind>.model|base_url|api_key",
    ),
    (
        UI_THEME,
        "the desktop window's theme: \"system\", \"light\" or \"dark\"",
    ),
    (
        COMM_AGENT_ID,
        "the agent id registered with comm apps that carry topics (default: osprey-<random>, chosen once)",
    ),
    (
        PERSONA,
        "the agent's persona: {\"name\": \"Osprey\", \"emoji\": \"🦅\", \"vibe\": \"calm and brief\", \"personality\": \"...\", \"quiet_hours\": {\"start\": \"22:00\", \"end\": \"07:00\"}}",
    ),
    (
        SKILLS_DISABLED,
        "skills turned off by name: [\"desktop-automation\"]",
    ),
    (
        DAV_ACCOUNTS,
        "calendar and contacts accounts: {\"home\": {\"kind\": \"dav\"|\"caldav\"|\"carddav\", \"url\": ..., \"username\": ...}}; also dav.<name>.url|username|kind|password",
    ),
    (
        OS_DESKTOP_STORES,
        "false hides the desktop's own calendars and address books (Evolution Data Server) from calendar and contacts; on by default",
    ),
    (
        OS_MAIL,
        "mail accounts: {\"accounts\": [{\"name\", \"email\", \"username\", \"imap\": {\"host\", \"port\", \"tls\": \"tls\"|\"starttls\"|\"plain\"}, \"smtp\": {...}}]}; passwords: `osprey os mail-password NAME`",
    ),
    (
        SUBAGENTS,
        "sub-agent limits: {\"max_depth\": 2, \"timeout_seconds\": 300, \"max_timeout_seconds\": 3600, \"max_running\": 8} (max_depth 0 turns them off; read at start-up)",
    ),
    (
        TOOLS_DISABLED,
        "tools or tool categories switched off: [\"desktop\", \"exec\"] (categories: files, shell, web, desktop, os, apps, store, agent, mcp)",
    ),
    (
        TOOLS_AUTONOMOUS,
        "autonomous mode: true runs what the approval policy would ask without a question (never what the safeguard refuses); off by default",
    ),
    (
        TOOLS_DENIED_PATHS,
        "paths no tool may read or write, as globs: [\"~/private\", \"/srv/**/*.key\"]",
    ),
    (
        TOOLS_BLOCKLIST,
        "commands never run, a program or an argv prefix: [\"git push\", \"rsync\"]",
    ),
    (
        TOOLS_QUOTAS,
        "tool quotas: {\"shell\": {\"per_session\": 50, \"per_day\": 500}} (by tool, tool.resource or tool.resource.action)",
    ),
    (
        TOOLS_BREAKER,
        "circuit breaker: {\"failures\": 5, \"window_seconds\": 60, \"cooldown_seconds\": 60} (failures 0 turns it off)",
    ),
    (
        AGENTS,
        "tool packs, agent types and advisor personas: {\"trust\": \"read-only\"|\"standard\"|\"privileged\" (the riskiest pack loaded, default privileged), \"models\": {\"summarizer\": \"a cheaper model\", \"skeptic\": \"...\"}} (read at start-up)",
    ),
    (
        VISION,
        "the vision tool's model: {\"model\": \"a model on the same provider that sees images\"} (default: the conversation's model)",
    ),
];

/// The `shell.sandbox` setting. Every command runs in the kernel sandbox; this only says where it
/// may write and whether it has the network.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellSandboxSetting {
    /// Folders commands may write (`~/` is the home directory). Empty: the folder Osprey was
    /// started in, unless that is the home directory or `/`.
    pub workspaces: Vec<String>,
    /// Folders under the home directory commands may also write: tool caches.
    pub caches: Vec<String>,
    pub network: bool,
}

impl Default for ShellSandboxSetting {
    fn default() -> ShellSandboxSetting {
        ShellSandboxSetting {
            workspaces: Vec::new(),
            caches: osprey_tools::shell::DEFAULT_HOME_CACHES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            network: true,
        }
    }
}

/// Checks that `value` is valid for `key` before it is stored.
pub fn validate(key: &str, value: &Value) -> anyhow::Result<()> {
    match key {
        POLICY => check::<PolicyConfig>(key, value),
        ORIGIN_RULES => check::<OriginRules>(key, value),
        APPROVAL_TIMEOUT => {
            let seconds: u64 = serde_json::from_value(value.clone())
                .with_context(|| format!("`{key}` takes a number of seconds, not {value}"))?;
            if !(5..=3600).contains(&seconds) {
                bail!("`{key}` must be between 5 and 3600 seconds, not {seconds}");
            }
            Ok(())
        }
        AGENTS => check::<osprey_agent::AgentSettings>(key, value),
        VISION => check::<osprey_agent::vision::VisionSettings>(key, value),
        SUBAGENTS => {
            check::<osprey_agent::SubAgentSettings>(key, value)?;
            let settings: osprey_agent::SubAgentSettings = serde_json::from_value(value.clone())?;
            settings
                .config()
                .map(|_| ())
                .map_err(|why| anyhow::anyhow!("invalid value for `{key}`: {why}"))
        }
        STORE_REVOCATION_MAX_AGE => {
            let hours: u64 = serde_json::from_value(value.clone())
                .with_context(|| format!("`{key}` takes a number of hours, not {value}"))?;
            if hours > 168 {
                bail!("`{key}` can be at most 168 hours (7 days), not {hours}");
            }
            Ok(())
        }
        WEB_ALLOW_LOOPBACK => check::<bool>(key, value),
        STORE_TOKEN_CHANGED => check::<u64>(key, value),
        UI_THEME => check::<osprey_types::Theme>(key, value),
        PERSONA => {
            check::<osprey_types::Persona>(key, value)?;
            let persona: osprey_types::Persona = serde_json::from_value(value.clone())?;
            osprey_agent::persona::validate(&persona)
                .map_err(|why| anyhow::anyhow!("invalid value for `{key}`: {why}"))
        }
        SKILLS_DISABLED => check::<Vec<String>>(key, value),
        TOOLS_DISABLED => {
            let names: Vec<String> = typed(key, value)?;
            if let Some(empty) = names.iter().find(|n| n.trim().is_empty()) {
                bail!("`{key}` lists an empty name ({empty:?})");
            }
            Ok(())
        }
        TOOLS_AUTONOMOUS | OS_DESKTOP_STORES => check::<bool>(key, value),
        TOOLS_DENIED_PATHS | TOOLS_BLOCKLIST | TOOLS_QUOTAS | TOOLS_BREAKER => {
            let mut config = GovernanceConfig::default();
            match key {
                TOOLS_DENIED_PATHS => config.denied_paths = typed(key, value)?,
                TOOLS_BLOCKLIST => config.blocklist = typed(key, value)?,
                TOOLS_QUOTAS => config.quotas = typed(key, value)?,
                _ => config.breaker = typed(key, value)?,
            }
            config
                .validate()
                .map_err(|why| anyhow::anyhow!("invalid value for `{key}`: {why}"))
        }
        OS_MAIL => {
            check::<osprey_platform::mail::MailSettings>(key, value)?;
            let mail: osprey_platform::mail::MailSettings = serde_json::from_value(value.clone())?;
            mail.validate()
                .map_err(|why| anyhow::anyhow!("invalid value for `{key}`: {why}"))
        }
        WEB_NATIVE_WINDOWS => match typed::<Option<String>>(key, value)?.as_deref() {
            None | Some("shown" | "hidden") => Ok(()),
            Some(other) => bail!("`{key}` is \"shown\" or \"hidden\", not {other:?}"),
        },
        WEB_SEARCH => check::<osprey_browser::SearchSettings>(key, value),
        WEB_CHROME => check::<Option<osprey_browser::ChromeAttach>>(key, value),
        WEB_DOWNLOADS => {
            let folder: Option<String> = typed(key, value)?;
            match folder {
                Some(folder) if download_folder(&folder).is_none() => {
                    bail!("`{key}` takes a folder's full path or one under `~/`, not {folder:?}")
                }
                _ => Ok(()),
            }
        }
        SHELL_EXTRA_ENV => check::<Vec<String>>(key, value),
        SHELL_SANDBOX => check::<ShellSandboxSetting>(key, value),
        MCP_SERVERS => {
            check::<osprey_agent::mcp::McpServers>(key, value)?;
            let servers: osprey_agent::mcp::McpServers = serde_json::from_value(value.clone())?;
            osprey_agent::mcp::validate_servers(&servers)
                .map_err(|why| anyhow::anyhow!("invalid value for `{key}`: {why}"))
        }
        PROVIDERS => check::<crate::provider_settings::ProviderSettings>(key, value),
        DAV_ACCOUNTS => crate::dav_settings::validate(value),
        MEMORY_EMBEDDINGS => {
            let settings: crate::provider_settings::EmbeddingSettings =
                serde_json::from_value(value.clone())
                    .with_context(|| format!("invalid value for `{key}`: {value}"))?;
            if settings.provider == crate::provider_settings::ProviderKind::Anthropic {
                bail!("`{key}`: Anthropic has no embeddings API; use ollama or openai");
            }
            if settings.model.trim().is_empty() {
                bail!("`{key}` needs a model, e.g. nomic-embed-text");
            }
            Ok(())
        }
        STORE_URL => {
            let url: String = serde_json::from_value(value.clone())
                .with_context(|| format!("`{key}` takes a URL string, not {value}"))?;
            match url.split_once("://") {
                Some(("http" | "https", rest)) if !rest.is_empty() => Ok(()),
                _ => bail!("`{key}` must be an http or https URL, e.g. https://store.example.com"),
            }
        }
        _ => bail!(
            "unknown setting `{key}`; known settings: {}",
            KNOWN
                .iter()
                .map(|(k, d)| format!("{k} ({d})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn typed<T: DeserializeOwned>(key: &str, value: &Value) -> anyhow::Result<T> {
    serde_json::from_value::<T>(value.clone())
        .with_context(|| format!("invalid value for `{key}`: {value}"))
}

fn check<T: DeserializeOwned>(key: &str, value: &Value) -> anyhow::Result<()> {
    serde_json::from_value::<T>(value.clone())
        .map(|_| ())
        .with_context(|| format!("invalid value for `{key}`: {value}"))
}

/// Whether `web.native_windows` hides the desktop's browser windows.
pub fn native_windows_hidden(settings: &Settings) -> bool {
    read::<Option<String>>(settings, WEB_NATIVE_WINDOWS).as_deref() == Some("hidden")
}

/// The folder `web.downloads` names: an absolute path, or one under `~/` (the home folder).
pub fn download_folder(raw: &str) -> Option<PathBuf> {
    let raw = raw.trim();
    let path = match raw.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
        None => PathBuf::from(raw),
    };
    (path.is_absolute() && !raw.is_empty()).then_some(path)
}

/// The download folder in the settings, if one is set.
pub fn downloads(settings: &Settings) -> Option<PathBuf> {
    read::<Option<String>>(settings, WEB_DOWNLOADS)
        .as_deref()
        .and_then(download_folder)
}

/// Reads `key`, falling back to `T::default()` (with a warning) when it is missing or invalid.
pub fn read<T: DeserializeOwned + Default>(settings: &Settings, key: &str) -> T {
    match settings.get(key) {
        Ok(Some(value)) => serde_json::from_value(value).unwrap_or_else(|err| {
            tracing::warn!(%key, %err, "ignoring an invalid setting; using the default");
            T::default()
        }),
        Ok(None) => T::default(),
        Err(err) => {
            tracing::warn!(%key, %err, "cannot read a setting; using the default");
            T::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validates_known_keys_and_refuses_unknown_ones() {
        validate(POLICY, &json!({"level": "full"})).unwrap();
        validate(POLICY, &json!({"level": "yolo"})).unwrap_err();
        validate(POLICY, &json!({"levle": "full"})).unwrap_err();
        validate(ORIGIN_RULES, &json!({"deny": {"mcp": ["shell"]}})).unwrap();
        validate(ORIGIN_RULES, &json!({"deny": {"martians": ["shell"]}})).unwrap_err();
        validate(WEB_ALLOW_LOOPBACK, &json!(true)).unwrap();
        validate(WEB_ALLOW_LOOPBACK, &json!("yes")).unwrap_err();
        validate(UI_THEME, &json!("dark")).unwrap();
        validate(UI_THEME, &json!("purple")).unwrap_err();
        validate(
            PERSONA,
            &json!({"name": "Kestrel", "quiet_hours": {"start": "22:00", "end": "07:00"}}),
        )
        .unwrap();
        let why = validate(PERSONA, &json!({"name": "Kestrel", "mood": "sunny"})).unwrap_err();
        assert!(format!("{why:#}").contains("mood"), "{why:#}");
        let why = validate(
            PERSONA,
            &json!({"quiet_hours": {"start": "9pm", "end": "07:00"}}),
        )
        .unwrap_err();
        assert!(format!("{why:#}").contains("HH:MM"), "{why:#}");
        validate(SKILLS_DISABLED, &json!(["a"])).unwrap();
        validate(SKILLS_DISABLED, &json!("a")).unwrap_err();
        let account = json!({"name": "work", "email": "me@example.com",
            "imap": {"host": "imap.example.com"}, "smtp": {"host": "smtp.example.com", "tls": "starttls"}});
        validate(OS_MAIL, &json!({"accounts": [account]})).unwrap();
        let mut clear = account.clone();
        clear["smtp"]["tls"] = json!("plain");
        let err = validate(OS_MAIL, &json!({"accounts": [clear]}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("clear text"), "{err}");
        validate(OS_MAIL, &json!({"acounts": []})).unwrap_err();
        validate(MCP_SERVERS, &json!({"weather": {"command": "weather-mcp"}})).unwrap();
        let err = validate(MCP_SERVERS, &json!({"weather": {}}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("give `command`"), "{err}");
        validate(MCP_SERVERS, &json!({"w": {"comand": "x"}})).unwrap_err();
        validate(TOOLS_DISABLED, &json!(["desktop", "exec"])).unwrap();
        validate(TOOLS_AUTONOMOUS, &json!("yes")).unwrap_err();
        validate(OS_DESKTOP_STORES, &json!(false)).unwrap();
        validate(OS_DESKTOP_STORES, &json!("off")).unwrap_err();
        validate(TOOLS_BLOCKLIST, &json!(["git push"])).unwrap();
        validate(TOOLS_BLOCKLIST, &json!(["  "])).unwrap_err();
        let err = validate(TOOLS_DENIED_PATHS, &json!(["notes/private"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("must be absolute"), "{err}");
        validate(TOOLS_DENIED_PATHS, &json!(["~/private", "/srv/**/*.key"])).unwrap();
        validate(TOOLS_QUOTAS, &json!({"shell.bash.exec": {"per_day": 5}})).unwrap();
        validate(TOOLS_QUOTAS, &json!({"shell": {"per_week": 5}})).unwrap_err();
        validate(
            TOOLS_BREAKER,
            &json!({"failures": 3, "window_seconds": 30, "cooldown_seconds": 10}),
        )
        .unwrap();
        let err = validate("colour", &json!(1)).unwrap_err().to_string();
        assert!(err.contains("known settings: policy"), "{err}");
    }

    #[test]
    fn the_desktops_browser_windows_are_shown_or_hidden() {
        validate(WEB_NATIVE_WINDOWS, &json!("hidden")).unwrap();
        validate(WEB_NATIVE_WINDOWS, &json!("shown")).unwrap();
        let err = validate(WEB_NATIVE_WINDOWS, &json!("invisible"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"shown\" or \"hidden\""), "{err}");
        let db = osprey_db::Database::open_in_memory().unwrap();
        assert!(!native_windows_hidden(&db.settings()));
        db.settings()
            .set(WEB_NATIVE_WINDOWS, &json!("hidden"))
            .unwrap();
        assert!(native_windows_hidden(&db.settings()));
    }

    #[test]
    fn invalid_stored_values_fall_back_to_defaults() {
        let db = osprey_db::Database::open_in_memory().unwrap();
        db.settings().set(POLICY, &json!({"level": 7})).unwrap();
        let policy: PolicyConfig = read(&db.settings(), POLICY);
        assert_eq!(policy, PolicyConfig::default());
        db.settings()
            .set(POLICY, &json!({"level": "deny"}))
            .unwrap();
        let policy: PolicyConfig = read(&db.settings(), POLICY);
        assert_eq!(policy.level, osprey_tools::Level::Deny);
        assert_eq!(policy.safe_bins, PolicyConfig::default().safe_bins);
    }
}
