//! Tool governance: what the person decides about the tools as a whole, on top of the approval
//! policy and the safeguard, all enforced in the registry (see [`crate::registry`]):
//!
//! - **switched off**: tools, or whole categories of them ([`CATEGORIES`]), leave the model's
//!   tool list, and a call to one is refused (`tool_disabled`) saying it is off in Settings;
//! - **autonomous mode**: what the policy would ask a person is allowed instead (audited as
//!   `autonomous`). It never covers what the safeguard refuses, what the safeguard or the sandbox
//!   leave to a person's answer on that very call (a credential read, a command outside the
//!   kernel sandbox), origin denies or level `deny`. Only the person turns it on: it is a setting,
//!   and no tool writes settings;
//! - **denied paths and the command blocklist**: globs no file, shell or exec call may name, and
//!   commands (a program, or a program and its first arguments) never run, refused
//!   unconditionally at the safeguard's step, before and after any approval;
//! - **quotas**: per tool (or `tool.resource`, `tool.resource.action`), per session and per day
//!   (UTC), counted in SQLite so a day's count survives a restart;
//! - **the circuit breaker**: after `failures` consecutive failures of one tool (it ran and
//!   failed, or timed out; not refusals or bad input) within `window_seconds`, calls to it are
//!   refused for `cooldown_seconds` with why and when to retry; the first call after the cool-down
//!   is a trial: success closes the breaker, failure opens it again at once.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use osprey_db::ToolUsage;
use osprey_types::{ErrorCode, ToolResult};
use serde::{Deserialize, Serialize};

use crate::security::Refusal;
use crate::security::paths::fold;
use crate::security::shell_syntax::{CommandAnalysis, SimpleCommand, program_name};

/// The categories tools can be switched off by, with the tools in each. A tool not named here
/// is in `mcp` when its name has the MCP client's prefix, else in `apps` (an app's tools).
pub const CATEGORIES: &[(&str, &[&str], &str)] = &[
    ("files", &["file"], "read, write, edit and search files"),
    ("shell", &["shell", "exec"], "run commands and programs"),
    ("web", &["web"], "fetch pages, search, drive the browser"),
    (
        "desktop",
        &["desktop", "screenshot"],
        "see the screen and drive the mouse and keyboard",
    ),
    (
        "os",
        &["os"],
        "clipboard, notifications, windows, mail, calendar, contacts",
    ),
    (
        "apps",
        &["app"],
        "install and manage apps, and apps' own tools",
    ),
    ("store", &["store"], "the app store"),
    (
        "agent",
        &["agent", "skill", "vision"],
        "memory, sessions, reminders, sub-agents, advisors, image analysis and skills",
    ),
    ("mcp", &[], "tools of connected MCP servers"),
];

/// The category of a tool by its name.
pub fn category_of(tool: &str) -> &'static str {
    if let Some((name, _, _)) = CATEGORIES
        .iter()
        .find(|(_, tools, _)| tools.contains(&tool))
    {
        return name;
    }
    if tool.starts_with("mcp__") {
        "mcp"
    } else {
        "apps"
    }
}

/// Caps on how often a tool runs; `None`: no cap.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quota {
    pub per_session: Option<u64>,
    pub per_day: Option<u64>,
}

/// When the circuit breaker opens and for how long.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BreakerConfig {
    /// Consecutive failures that open it (0 turns the breaker off).
    pub failures: u32,
    /// The failures must fall within this many seconds of each other.
    pub window_seconds: u64,
    /// How long calls are refused once it is open.
    pub cooldown_seconds: u64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failures: 5,
            window_seconds: 60,
            cooldown_seconds: 60,
        }
    }
}

/// Everything the person set about the tools as a whole (the `tools.*` settings).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GovernanceConfig {
    /// Tool names and category names ([`CATEGORIES`]) switched off.
    pub disabled: Vec<String>,
    pub autonomous: bool,
    /// Globs (`~/` is the home directory) no call may read or write.
    pub denied_paths: Vec<String>,
    /// Commands never run: `rsync` (the program, any arguments) or `git push` (an argv prefix).
    pub blocklist: Vec<String>,
    /// By `tool`, `tool.resource` or `tool.resource.action`.
    pub quotas: BTreeMap<String, Quota>,
    pub breaker: BreakerConfig,
}

impl GovernanceConfig {
    /// Why the settings cannot work, for the person (a glob that does not parse, an empty
    /// blocklist entry).
    pub fn validate(&self) -> Result<(), String> {
        denied_set(&self.denied_paths, None)?;
        if let Some(entry) = self
            .blocklist
            .iter()
            .find(|e| e.split_whitespace().count() == 0)
        {
            return Err(format!("a blocklist entry is empty ({entry:?})"));
        }
        if let Some(key) = self
            .quotas
            .keys()
            .find(|k| k.is_empty() || k.split('.').count() > 3)
        {
            return Err(format!(
                "the quota key `{key}` is not `tool`, `tool.resource` or `tool.resource.action`"
            ));
        }
        Ok(())
    }
}

struct Compiled {
    config: GovernanceConfig,
    blocklist: Vec<Vec<String>>,
}

/// The person's denied paths, compiled, in a handle every holder shares: the registry's checks
/// and the [`crate::PathGuard`]s given it ([`crate::PathGuard::with_denied`]), so the file
/// tool's own reads, writes and directory walks refuse them too, and a change is seen by all at
/// once.
#[derive(Clone, Default)]
pub struct DeniedPaths {
    inner: Arc<RwLock<Arc<DeniedSet>>>,
}

#[derive(Default)]
struct DeniedSet {
    set: GlobSet,
    patterns: Vec<String>,
    /// The patterns that name one path (no glob characters), `~/` expanded.
    literal: Vec<PathBuf>,
}

impl std::fmt::Debug for DeniedPaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.current().patterns).finish()
    }
}

impl DeniedPaths {
    fn current(&self) -> Arc<DeniedSet> {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn replace(&self, set: GlobSet, patterns: Vec<String>, literal: Vec<PathBuf>) {
        *self.inner.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(DeniedSet {
            set,
            patterns,
            literal,
        });
    }

    pub fn is_empty(&self) -> bool {
        self.current().set.is_empty()
    }

    /// The denied paths that name one path rather than a pattern (`~/private`, not
    /// `/srv/**/*.key`), absolute: what the kernel sandbox hides from shell and exec commands,
    /// so a path built at run time is out of reach too. Patterns stay with [`DeniedPaths::check`],
    /// which sees only the paths a call names.
    pub fn literal_paths(&self) -> Vec<PathBuf> {
        self.current().literal.clone()
    }

    /// Refuses an absolute, tidied `path` under a denied path; `shown` is how the call named it.
    pub fn check(&self, path: &Path, shown: &Path) -> Result<(), Refusal> {
        let denied = self.current();
        if denied.set.is_empty() {
            return Ok(());
        }
        let Some(index) = denied.set.matches(path).first().copied() else {
            return Ok(());
        };
        let pattern = denied.patterns.get(index / 2).cloned().unwrap_or_default();
        Err(Refusal::new(
            ErrorCode::SafeguardBlocked,
            format!(
                "{} is under a denied path (`{pattern}`, setting `tools.denied_paths`): the \
                 person does not let any tool read or write it. This applies at every approval \
                 level and in autonomous mode",
                shown.display()
            ),
        ))
    }
}

/// The live governance state of one registry. Cheap to clone.
#[derive(Clone)]
pub struct Governance {
    inner: Arc<GovernanceInner>,
}

struct GovernanceInner {
    compiled: RwLock<Arc<Compiled>>,
    denied: DeniedPaths,
    home: Option<PathBuf>,
    /// Where quota uses are counted: the data folder's database, or (for a registry core has
    /// not given one) an in-memory one opened at the first quota check.
    usage: OnceLock<ToolUsage>,
    breakers: Mutex<HashMap<String, Breaker>>,
}

#[derive(Default)]
struct Breaker {
    /// When the current run of failures happened, oldest first.
    failures: Vec<Instant>,
    open_until: Option<Instant>,
    /// The cool-down passed and one trial call is allowed.
    trial: bool,
    last_error: String,
}

impl Governance {
    /// Governance with the default settings (nothing off, no quotas, the default breaker),
    /// counting uses in `usage`; `home` expands `~/` in denied paths.
    pub fn new(usage: ToolUsage, home: Option<PathBuf>) -> Self {
        // A day's count from before yesterday is of no use; sessions idle for a month neither.
        let _ = usage.prune(&day_scope(chrono::Utc::now()), 30 * 24 * 3600 * 1000);
        Governance::with_usage(OnceLock::from(usage), home)
    }

    /// Governance with the default settings whose counts (should quotas be set) live in memory,
    /// opened only then: a registry's start-up opens no database for it.
    pub fn in_memory(home: Option<PathBuf>) -> Self {
        Governance::with_usage(OnceLock::new(), home)
    }

    fn with_usage(usage: OnceLock<ToolUsage>, home: Option<PathBuf>) -> Self {
        Governance {
            inner: Arc::new(GovernanceInner {
                compiled: RwLock::new(Arc::new(Compiled {
                    config: GovernanceConfig::default(),
                    blocklist: Vec::new(),
                })),
                denied: DeniedPaths::default(),
                home,
                usage,
                breakers: Mutex::new(HashMap::new()),
            }),
        }
    }

    fn usage(&self) -> &ToolUsage {
        self.inner.usage.get_or_init(|| {
            osprey_db::Database::open_in_memory()
                .expect("an in-memory SQLite database opens")
                .tool_usage()
        })
    }

    /// Puts new settings in force; an invalid one is refused whole, the old ones stay.
    pub fn set_config(&self, config: GovernanceConfig) -> Result<(), String> {
        let (denied, literal) = denied_set(&config.denied_paths, self.inner.home.as_deref())?;
        let patterns = config.denied_paths.clone();
        let blocklist = config
            .blocklist
            .iter()
            .map(|e| e.split_whitespace().map(String::from).collect::<Vec<_>>())
            .filter(|words| !words.is_empty())
            .collect();
        *self
            .inner
            .compiled
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Arc::new(Compiled { config, blocklist });
        self.inner.denied.replace(denied, patterns, literal);
        Ok(())
    }

    /// The denied paths' shared handle, for the path guards that must refuse them too.
    pub fn denied_paths(&self) -> DeniedPaths {
        self.inner.denied.clone()
    }

    fn compiled(&self) -> Arc<Compiled> {
        self.inner
            .compiled
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn config(&self) -> GovernanceConfig {
        self.compiled().config.clone()
    }

    pub fn autonomous(&self) -> bool {
        self.compiled().config.autonomous
    }

    /// Whether `tool` is switched off (by its name or its category).
    pub fn is_disabled(&self, tool: &str) -> bool {
        self.disabled_by(tool).is_some()
    }

    fn disabled_by(&self, tool: &str) -> Option<String> {
        let compiled = self.compiled();
        let category = category_of(tool);
        compiled
            .config
            .disabled
            .iter()
            .find(|entry| entry.as_str() == tool || entry.as_str() == category)
            .cloned()
    }

    /// The refusal of a call to a switched-off tool.
    pub fn check_enabled(&self, tool: &str) -> Result<(), Refusal> {
        let Some(entry) = self.disabled_by(tool) else {
            return Ok(());
        };
        let how = if entry == tool {
            format!("the `{tool}` tool is switched off")
        } else {
            format!("the `{entry}` tools (which include `{tool}`) are switched off")
        };
        Err(Refusal::new(
            ErrorCode::ToolDisabled,
            format!(
                "{how} in Settings → Tools (setting `tools.disabled`), so it was not run; only \
                 the person can switch it back on"
            ),
        ))
    }

    /// Denied paths among `paths` (absolute, or relative to `cwd`).
    pub fn check_paths<'p>(
        &self,
        paths: impl IntoIterator<Item = &'p Path>,
        cwd: Option<&Path>,
    ) -> Result<(), Refusal> {
        if self.inner.denied.is_empty() {
            return Ok(());
        }
        for path in paths {
            self.check_path(path, cwd)?;
        }
        Ok(())
    }

    fn check_path(&self, path: &Path, cwd: Option<&Path>) -> Result<(), Refusal> {
        let text = path.to_string_lossy();
        let expanded = match (text.strip_prefix("~/"), &self.inner.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ if text == "~" => self
                .inner
                .home
                .clone()
                .unwrap_or_else(|| path.to_path_buf()),
            _ => path.to_path_buf(),
        };
        let absolute = match (expanded.is_absolute(), cwd) {
            (false, Some(cwd)) => cwd.join(&expanded),
            _ => expanded,
        };
        let lexical = fold(&absolute);
        // Links are followed too: a link inside the workspace to a denied folder is that folder.
        let resolved = std::fs::canonicalize(&lexical).ok();
        for candidate in std::iter::once(&lexical).chain(resolved.as_ref()) {
            self.inner.denied.check(candidate, path)?;
        }
        Ok(())
    }

    /// The blocklist and the denied paths against every command an analysis lists (the nested
    /// ones too: `sudo X`, `bash -c "X"`), with the arguments that look like paths judged from
    /// `cwd`.
    pub fn check_command(
        &self,
        analysis: &CommandAnalysis,
        cwd: Option<&Path>,
    ) -> Result<(), Refusal> {
        let compiled = self.compiled();
        for command in &analysis.commands {
            if let Some(entry) = blocked(&compiled.blocklist, command) {
                return Err(Refusal::new(
                    ErrorCode::SafeguardBlocked,
                    format!(
                        "`{}` is on the person's command blocklist (`{entry}`, setting \
                         `tools.blocklist`), so it never runs, at any approval level and in \
                         autonomous mode; do it another way or ask the person",
                        command_text(command)
                    ),
                ));
            }
            if self.inner.denied.is_empty() {
                continue;
            }
            let operands = command
                .args
                .iter()
                .map(|a| match a.split_once('=') {
                    Some((flag, value)) if flag.starts_with('-') => value,
                    _ => a.as_str(),
                })
                .chain(command.redirects.iter().map(|r| r.target.as_str()))
                .chain(command.chdir.as_deref())
                .filter(|a| !a.starts_with('-') && !a.is_empty());
            for arg in operands {
                let path_like =
                    arg.contains('/') || arg.starts_with('~') || arg == "." || arg == "..";
                if path_like || cwd.is_some_and(|dir| dir.join(arg).exists()) {
                    self.check_path(Path::new(arg), cwd)?;
                }
            }
        }
        Ok(())
    }

    /// The quota subjects a call counts against, with their caps: `(key, quota)`.
    fn quotas_for(
        &self,
        tool: &str,
        resource: Option<&str>,
        action: Option<&str>,
    ) -> Vec<(String, Quota)> {
        let compiled = self.compiled();
        // Most people set none: no key is built per call then.
        if compiled.config.quotas.is_empty() {
            return Vec::new();
        }
        let mut keys = vec![tool.to_string()];
        if let Some(resource) = resource {
            keys.push(format!("{tool}.{resource}"));
            if let Some(action) = action {
                keys.push(format!("{tool}.{resource}.{action}"));
            }
        }
        keys.into_iter()
            .filter_map(|key| compiled.config.quotas.get(&key).map(|q| (key, q.clone())))
            .collect()
    }

    /// Checks the call's quotas and, when `take`, counts it (all of its quotas at once, or none).
    pub fn check_quota(
        &self,
        session: Option<&str>,
        tool: &str,
        resource: Option<&str>,
        action: Option<&str>,
        take: bool,
    ) -> Result<(), Refusal> {
        let quotas = self.quotas_for(tool, resource, action);
        if quotas.is_empty() {
            return Ok(());
        }
        let now = chrono::Utc::now();
        let day = day_scope(now);
        let session_scope = session.map(|s| format!("session:{s}"));
        // (scope, key, limit, what a refusal says)
        let mut entries: Vec<(String, String, u64, &'static str)> = Vec::new();
        for (key, quota) in &quotas {
            if let Some(limit) = quota.per_day {
                entries.push((day.clone(), key.clone(), limit, "day"));
            }
            if let (Some(limit), Some(scope)) = (quota.per_session, &session_scope) {
                entries.push((scope.clone(), key.clone(), limit, "session"));
            }
        }
        let usage = self.usage();
        let over = if take {
            let rows: Vec<(&str, &str, u64)> = entries
                .iter()
                .map(|(s, k, l, _)| (s.as_str(), k.as_str(), *l))
                .collect();
            usage.take(&rows)
        } else {
            entries
                .iter()
                .position(|(scope, key, limit, _)| {
                    usage.count(scope, key).is_ok_and(|count| count >= *limit)
                })
                .map_or(Ok(None), |i| Ok(Some(i)))
        };
        let over = match over {
            Ok(over) => over,
            Err(error) => {
                // Counting failed: the quota cannot be kept, so the call does not run.
                return Err(Refusal::new(
                    ErrorCode::QuotaExceeded,
                    format!("the use of `{tool}` could not be counted against its quota ({error})"),
                ));
            }
        };
        let Some(index) = over else {
            return Ok(());
        };
        let (scope, key, limit, per) = &entries[index];
        let count = usage.count(scope, key).unwrap_or(*limit);
        let resets = match *per {
            "day" => {
                let midnight = (now + chrono::Duration::days(1))
                    .date_naive()
                    .and_hms_opt(0, 0, 0)
                    .map(|t| t.and_utc().format("%Y-%m-%d %H:%M UTC").to_string())
                    .unwrap_or_else(|| "at midnight UTC".into());
                format!("it resets at {midnight}")
            }
            _ => "it resets when a new session starts".to_string(),
        };
        Err(Refusal::new(
            ErrorCode::QuotaExceeded,
            format!(
                "the quota for `{key}` is {limit} calls per {per} and {count} have run, so this \
                 call was not run; {resets} (setting `tools.quotas`)"
            ),
        ))
    }

    /// Refuses a call to a tool whose breaker is open.
    pub fn check_breaker(&self, tool: &str) -> Result<(), Refusal> {
        let config = self.compiled().config.breaker.clone();
        if config.failures == 0 {
            return Ok(());
        }
        let mut breakers = self
            .inner
            .breakers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(breaker) = breakers.get_mut(tool) else {
            return Ok(());
        };
        let Some(until) = breaker.open_until else {
            return Ok(());
        };
        let now = Instant::now();
        if now >= until {
            breaker.open_until = None;
            breaker.trial = true;
            return Ok(());
        }
        let left = until.saturating_duration_since(now);
        let at = chrono::Utc::now()
            + chrono::Duration::from_std(left).unwrap_or_else(|_| chrono::Duration::zero());
        Err(Refusal::new(
            ErrorCode::CircuitOpen,
            format!(
                "`{tool}` failed {} times in a row (the last: {}), so Osprey stops calling it for \
                 {} s: retry after {} ({} s from now), or do the step another way; this is not \
                 about your input",
                config.failures,
                breaker.last_error,
                config.cooldown_seconds,
                at.format("%H:%M:%S UTC"),
                left.as_secs().max(1)
            ),
        ))
    }

    /// Counts a call's outcome towards `tool`'s breaker: failures and timeouts count, a success
    /// closes it, anything else (refusals, bad input, cancellation) leaves it as it was.
    pub fn record_outcome(&self, tool: &str, result: &ToolResult) {
        let config = self.compiled().config.breaker.clone();
        if config.failures == 0 {
            return;
        }
        let mut breakers = self
            .inner
            .breakers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !result.is_error {
            breakers.remove(tool);
            return;
        }
        if !matches!(
            result.code,
            Some(ErrorCode::ToolFailed | ErrorCode::Timeout) | None
        ) {
            return;
        }
        let breaker = breakers.entry(tool.to_string()).or_default();
        let now = Instant::now();
        let window = Duration::from_secs(config.window_seconds);
        breaker
            .failures
            .retain(|at| now.saturating_duration_since(*at) <= window);
        breaker.failures.push(now);
        let text = result.text_content();
        breaker.last_error =
            crate::registry::truncate(text.lines().next().unwrap_or_default(), 200);
        if breaker.trial || breaker.failures.len() >= config.failures as usize {
            breaker.trial = false;
            breaker.failures.clear();
            breaker.open_until = Some(now + Duration::from_secs(config.cooldown_seconds));
            tracing::warn!(%tool, "the circuit breaker opened after repeated failures");
        }
    }
}

/// `day:YYYY-MM-DD` (UTC): such scopes sort by date.
fn day_scope(now: chrono::DateTime<chrono::Utc>) -> String {
    format!("day:{}", now.format("%Y-%m-%d"))
}

/// The denied globs, each as itself and as everything under it (`~/secret` denies
/// `~/secret/key` too): pattern `i` is entries `2i` and `2i + 1`; and the patterns that are one
/// absolute path.
fn denied_set(patterns: &[String], home: Option<&Path>) -> Result<(GlobSet, Vec<PathBuf>), String> {
    let mut builder = GlobSetBuilder::new();
    let mut literal = Vec::new();
    for pattern in patterns {
        let trimmed = pattern.trim().trim_end_matches('/');
        if trimmed.is_empty() {
            return Err(format!("a denied path is empty ({pattern:?})"));
        }
        let expanded = match (trimmed.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => format!("{}/{rest}", home.display()),
            (None, Some(home)) if trimmed == "~" => home.display().to_string(),
            _ => trimmed.to_string(),
        };
        if !expanded.starts_with('/') && !expanded.starts_with('~') && !expanded.starts_with("**") {
            return Err(format!(
                "the denied path `{pattern}` must be absolute, start with `~/`, or start with `**/`"
            ));
        }
        if expanded.starts_with('/') && !expanded.contains(['*', '?', '[', ']', '{', '}']) {
            literal.push(PathBuf::from(&expanded));
        }
        for glob in [expanded.clone(), format!("{expanded}/**")] {
            let glob = GlobBuilder::new(&glob)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("the denied path `{pattern}` is not a valid pattern: {e}"))?;
            builder.add(glob);
        }
    }
    let set = builder
        .build()
        .map_err(|e| format!("the denied paths cannot be used: {e}"))?;
    Ok((set, literal))
}

/// The blocklist entry that covers `command`, if one does.
fn blocked(blocklist: &[Vec<String>], command: &SimpleCommand) -> Option<String> {
    let name = command.program_name();
    blocklist
        .iter()
        .find(|entry| {
            program_name(&entry[0]) == name
                && entry.len() - 1 <= command.args.len()
                && entry[1..]
                    .iter()
                    .zip(&command.args)
                    .all(|(want, got)| want == got)
        })
        .map(|entry| entry.join(" "))
}

fn command_text(command: &SimpleCommand) -> String {
    std::iter::once(command.program.as_str())
        .chain(command.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::shell_syntax::analyze;

    fn governance(config: GovernanceConfig) -> Governance {
        let db = osprey_db::Database::open_in_memory().unwrap();
        let g = Governance::new(db.tool_usage(), Some(PathBuf::from("/home/ada")));
        g.set_config(config).unwrap();
        g
    }

    #[test]
    fn categories_and_names_switch_tools_off() {
        let g = governance(GovernanceConfig {
            disabled: vec!["desktop".into(), "web".into(), "mcp".into()],
            ..Default::default()
        });
        assert!(g.is_disabled("screenshot"));
        assert!(g.is_disabled("web"));
        assert!(g.is_disabled("mcp__weather__forecast"));
        assert!(!g.is_disabled("file"));
        let message = g.check_enabled("screenshot").unwrap_err().message;
        assert!(message.contains("`desktop` tools"), "{message}");
        assert!(message.contains("Settings"), "{message}");
    }

    #[test]
    fn blocklist_matches_programs_and_argv_prefixes_through_wrappers() {
        let g = governance(GovernanceConfig {
            blocklist: vec!["git push".into(), "rsync".into()],
            ..Default::default()
        });
        assert!(g.check_command(&analyze("git status"), None).is_ok());
        assert!(g.check_command(&analyze("git pushx"), None).is_ok());
        let refused = g
            .check_command(&analyze("cd /x && sudo git push origin main"), None)
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::SafeguardBlocked);
        assert!(
            refused.message.contains("`git push`"),
            "{}",
            refused.message
        );
        assert!(
            g.check_command(&analyze("bash -c '/usr/bin/rsync -a a b'"), None)
                .is_err()
        );
    }

    #[test]
    fn denied_paths_cover_what_is_under_them_and_relative_names() {
        let g = governance(GovernanceConfig {
            denied_paths: vec!["~/private".into(), "/srv/**/*.key".into()],
            ..Default::default()
        });
        assert!(
            g.check_paths([Path::new("/home/ada/private/a.txt")], None)
                .is_err()
        );
        assert!(g.check_paths([Path::new("~/private")], None).is_err());
        assert!(
            g.check_paths([Path::new("/home/ada/privateer")], None)
                .is_ok()
        );
        assert!(
            g.check_paths(
                [Path::new("../private/x")],
                Some(Path::new("/home/ada/src"))
            )
            .is_err()
        );
        assert!(
            g.check_paths([Path::new("/srv/a/b/tls.key")], None)
                .is_err()
        );
        assert!(
            g.check_command(&analyze("cat ~/private/notes"), None)
                .is_err()
        );
        assert!(
            g.check_command(&analyze("cp x /srv/tls.key"), None)
                .is_err()
        );
        assert!(g.check_command(&analyze("cat notes"), None).is_ok());
        let bad = GovernanceConfig {
            denied_paths: vec!["relative/path".into()],
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("absolute"));
    }
}
