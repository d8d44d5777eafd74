//! The configurable approval policy: a level (deny / allowlist / full), an ask mode (off /
//! on-miss / always), safe bins, an allowlist, "always for this session" answers, and scoped
//! grants kept in SQLite. It decides allow, ask or deny; the [`Approver`] answers the asks.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;
use osprey_db::{Grants, StoredGrant};
use osprey_types::{ApprovalAnswer, ApprovalRequest, GrantDuration, GrantScope};
use serde::{Deserialize, Serialize};

use super::shell_syntax::{CommandAnalysis, SimpleCommand};

mod safe_bins;
use crate::call::{ApprovalNeed, CallFacts};

/// Answers approval questions: the desktop UI's dialog, the CLI's prompt, a test.
pub trait Approver: Send + Sync {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer>;
}

/// Gives every question the same answer and keeps the questions: for scripted runs and tests,
/// where nobody is there to ask but what was asked matters.
#[derive(Debug)]
pub struct FixedApprover {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl FixedApprover {
    pub fn new(answer: ApprovalAnswer) -> FixedApprover {
        FixedApprover {
            answer,
            asked: Mutex::new(Vec::new()),
        }
    }

    /// The questions so far, oldest first.
    pub fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn count(&self) -> usize {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Approver for FixedApprover {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request);
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

/// How much the policy lets through without asking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Nothing that needs approval runs.
    Deny,
    /// Allowlisted commands, safe bins and granted scopes run; the rest is asked (or denied).
    #[default]
    Allowlist,
    /// Everything that can be checked statically runs (the safeguard still applies).
    Full,
}

/// When to ask the person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AskMode {
    /// Never ask: what is not allowed is denied.
    Off,
    /// Ask when nothing allows the call.
    #[default]
    OnMiss,
    /// Ask for every approval-needing call that the person has not already granted.
    Always,
}

impl Level {
    /// The stricter of the two levels (deny, then allowlist, then full).
    pub fn stricter(self, other: Level) -> Level {
        let rank = |level: Level| match level {
            Level::Deny => 0,
            Level::Allowlist => 1,
            Level::Full => 2,
        };
        if rank(other) < rank(self) {
            other
        } else {
            self
        }
    }
}

impl FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "deny" => Ok(Level::Deny),
            "allowlist" => Ok(Level::Allowlist),
            "full" => Ok(Level::Full),
            _ => Err(format!(
                "unknown policy level `{s}` (expected deny, allowlist or full)"
            )),
        }
    }
}

impl FromStr for AskMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "off" => Ok(AskMode::Off),
            "on-miss" | "on_miss" | "onmiss" => Ok(AskMode::OnMiss),
            "always" => Ok(AskMode::Always),
            _ => Err(format!(
                "unknown ask mode `{s}` (expected off, on-miss or always)"
            )),
        }
    }
}

/// Programs that only read when given the options their table in `safe_bins` lists (git: its
/// read-only subcommands). A command made only of these, with only listed options, no
/// expansion or pattern in its arguments, no environment prefix and no writing redirection,
/// runs at level `allowlist` without asking; any other option makes it an ordinary command.
pub const SEED_SAFE_BINS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "rg",
    "egrep",
    "fgrep",
    "find",
    "echo",
    "printf",
    "pwd",
    "date",
    "whoami",
    "id",
    "uname",
    "hostname",
    "which",
    "type",
    "file",
    "stat",
    "du",
    "df",
    "sort",
    "uniq",
    "cut",
    "tr",
    "diff",
    "cmp",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "true",
    "false",
    "seq",
    "tree",
    "less",
    "more",
    "nl",
    "column",
    "jq",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "uptime",
    "free",
    "ps",
    "env",
    "printenv",
    "test",
    "[",
    "expr",
    "comm",
    "join",
    "paste",
    "fold",
    "fmt",
    "rev",
    "tac",
    "od",
    "hexdump",
    "xxd",
    "strings",
    "git",
];

/// The policy's settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    pub level: Level,
    pub ask: AskMode,
    pub safe_bins: Vec<String>,
    /// Allowlist entries: one word (`git`) allows the binary with any arguments; two words
    /// (`git status`) the binary with that first argument; three or more words, or a leading `=`
    /// (`=make test`), exactly that command.
    pub allowlist: Vec<String>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            level: Level::Allowlist,
            ask: AskMode::OnMiss,
            safe_bins: SEED_SAFE_BINS.iter().map(|s| s.to_string()).collect(),
            allowlist: Vec::new(),
        }
    }
}

/// Why a call may run without a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllowReason {
    ReadOnly,
    Full,
    SafeBin,
    Allowlist,
    SessionAlways,
    Grant,
}

impl AllowReason {
    pub fn as_str(self) -> &'static str {
        match self {
            AllowReason::ReadOnly => "allow:read_only",
            AllowReason::Full => "allow:full",
            AllowReason::SafeBin => "allow:safe_bin",
            AllowReason::Allowlist => "allow:allowlist",
            AllowReason::SessionAlways => "allow:session",
            AllowReason::Grant => "allow:grant",
        }
    }
}

/// The policy's verdict on one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow(AllowReason),
    /// Ask the person; the reason says why no rule allowed it.
    Ask(String),
    /// Refused without asking (`policy_denied`).
    Deny(String),
}

/// What the policy needs to know about one call.
#[derive(Clone, Copy, Debug)]
pub struct Subject<'a> {
    pub tool: &'a str,
    pub resource: Option<&'a str>,
    pub action: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub facts: &'a CallFacts,
    pub analysis: Option<&'a CommandAnalysis>,
    /// Set when the call must not run without a person's answer whatever the level or lists
    /// say (for example a shell command that reads a credential file); says why.
    pub must_ask: Option<&'a str>,
}

impl Subject<'_> {
    /// The key an "always for this session" answer is remembered under: the same tool, action
    /// and subject (command, path, URL, app) — never wider.
    fn session_key(&self) -> String {
        format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.tool,
            self.resource.unwrap_or(""),
            self.action.unwrap_or(""),
            self.facts.summary
        )
    }
}

/// The live policy: settings, remembered answers and grants. Cheap to clone.
#[derive(Clone)]
pub struct Policy {
    inner: Arc<PolicyInner>,
}

struct PolicyInner {
    config: RwLock<Arc<PolicyConfig>>,
    session_always: Mutex<HashSet<(String, String)>>,
    grants: RwLock<Vec<StoredGrant>>,
    store: Option<Grants>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("config", &self.config())
            .finish_non_exhaustive()
    }
}

/// Errors from storing a grant.
pub type GrantError = osprey_db::Error;

impl Policy {
    /// A policy at `level` with the default ask mode and lists, keeping grants in memory only
    /// (tests, benchmarks, throwaway registries).
    pub fn at_level(level: Level) -> Self {
        let config = PolicyConfig {
            level,
            ..PolicyConfig::default()
        };
        Self::new(config, None).expect("a policy without a grant store cannot fail to load")
    }

    /// A policy whose grants persist in `store` (loaded now).
    pub fn new(config: PolicyConfig, store: Option<Grants>) -> Result<Self, GrantError> {
        let grants = match &store {
            Some(s) => s.list_live()?,
            None => Vec::new(),
        };
        Ok(Policy {
            inner: Arc::new(PolicyInner {
                config: RwLock::new(Arc::new(config)),
                session_always: Mutex::new(HashSet::new()),
                grants: RwLock::new(grants),
                store,
            }),
        })
    }

    pub fn config(&self) -> Arc<PolicyConfig> {
        self.inner
            .config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn set_config(&self, config: PolicyConfig) {
        *self.inner.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
    }

    /// Decides allow, ask or deny.
    pub fn evaluate(&self, subject: &Subject<'_>) -> Verdict {
        self.evaluate_capped(subject, None)
    }

    /// Decides as [`Policy::evaluate`] with the level lowered to `cap` when the cap is stricter
    /// (a sub-agent's calls are judged at most as loosely as its parent's). A cap never raises.
    pub fn evaluate_capped(&self, subject: &Subject<'_>, cap: Option<Level>) -> Verdict {
        let facts = subject.facts;
        if facts.approval == ApprovalNeed::None {
            return Verdict::Allow(AllowReason::ReadOnly);
        }
        let mut config = self.config();
        if let Some(cap) = cap
            && cap.stricter(config.level) != config.level
        {
            Arc::make_mut(&mut config).level = cap;
        }
        if config.level == Level::Deny {
            return Verdict::Deny(format!(
                "the approval policy is at level `deny`, which lets no call that changes something run ({})",
                facts.summary
            ));
        }
        // The person's own answers come first: they hold at every level and ask mode.
        if let Some(reason) = facts.ask_every_time.as_deref() {
            return match config.ask {
                AskMode::Off => Verdict::Deny(format!("{reason}, and asking is off")),
                _ => Verdict::Ask(reason.to_string()),
            };
        }
        if self.remembered(subject) {
            return Verdict::Allow(AllowReason::SessionAlways);
        }
        if self.granted(subject) {
            return Verdict::Allow(AllowReason::Grant);
        }
        let dynamic = subject.analysis.and_then(|a| a.dynamic.as_deref());
        let miss = |why: String| -> Verdict {
            match config.ask {
                AskMode::Off => Verdict::Deny(format!("{why}, and asking is off")),
                _ => Verdict::Ask(why),
            }
        };
        if let Some(reason) = dynamic {
            // What cannot be resolved statically is never auto-approved, not even by `full`.
            return miss(format!(
                "the command cannot be checked statically ({reason})"
            ));
        }
        if let Some(reason) = subject.must_ask {
            return miss(format!("it needs a person's approval: {reason}"));
        }
        if config.ask == AskMode::Always {
            return Verdict::Ask("the ask mode is `always`".into());
        }
        if config.level == Level::Full {
            return Verdict::Allow(AllowReason::Full);
        }
        // A safe bin reads; what it would read outside the workspace folders is asked, as the
        // file tool's reads there are (the person's own allowlist entries still count).
        let reads_outside = facts.needs_approval.as_deref();
        let safe = |c: &SimpleCommand| reads_outside.is_none() && is_safe_bin(&config, c);
        if let Some(analysis) = subject.analysis
            && !analysis.commands.is_empty()
        {
            if analysis.commands.iter().all(safe) {
                return Verdict::Allow(AllowReason::SafeBin);
            }
            if analysis
                .commands
                .iter()
                .all(|c| safe(c) || allowlisted(&config, c))
            {
                return Verdict::Allow(AllowReason::Allowlist);
            }
        }
        match reads_outside {
            Some(why) => miss(format!("{why}, so it needs approval")),
            None => miss(format!(
                "no allowlist entry or grant covers {}",
                facts.summary
            )),
        }
    }

    /// Records the person's answer so later calls can use it. Returns the stored grant, if any.
    pub fn remember(
        &self,
        subject: &Subject<'_>,
        answer: &ApprovalAnswer,
    ) -> Result<Option<StoredGrant>, GrantError> {
        if subject.facts.ask_every_time.is_some() {
            // Answered for this call only, whatever the answer said.
            return Ok(None);
        }
        match answer {
            ApprovalAnswer::AlwaysThisSession => {
                self.inner
                    .session_always
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert((
                        subject.session_id.unwrap_or("").to_string(),
                        subject.session_key(),
                    ));
                Ok(None)
            }
            ApprovalAnswer::Grant { scope, duration } => self
                .add_grant(scope, duration, subject.session_id)
                .map(Some),
            ApprovalAnswer::Once | ApprovalAnswer::Deny => Ok(None),
        }
    }

    /// Adds a grant (stored in SQLite when the policy has a store).
    pub fn add_grant(
        &self,
        scope: &GrantScope,
        duration: &GrantDuration,
        session_id: Option<&str>,
    ) -> Result<StoredGrant, GrantError> {
        let grant = match &self.inner.store {
            Some(store) => store.add(scope, duration, session_id)?,
            None => StoredGrant {
                id: 0,
                scope: scope.clone(),
                session_id: match duration {
                    GrantDuration::Session => Some(session_id.unwrap_or("default").to_string()),
                    GrantDuration::Until { .. } => None,
                },
                expires_ms: match duration {
                    GrantDuration::Session => None,
                    GrantDuration::Until { unix_seconds } => Some(unix_seconds * 1000),
                },
            },
        };
        self.inner
            .grants
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(grant.clone());
        Ok(grant)
    }

    /// Lasting scopes that would cover this call, for the approval dialog to offer.
    pub fn suggest_scopes(&self, subject: &Subject<'_>) -> Vec<GrantScope> {
        let facts = subject.facts;
        let mut out = Vec::new();
        if facts.ask_every_time.is_some() {
            // Nothing lasting may cover it: the person answers for this call only.
            return out;
        }
        if let Some(analysis) = subject.analysis
            && analysis.dynamic.is_none()
            && analysis.commands.len() == 1
        {
            let c = &analysis.commands[0];
            out.push(GrantScope::CommandPattern(command_line(c)));
            match c.args.first() {
                Some(first) if !first.starts_with('-') => out.push(GrantScope::CommandPattern(
                    format!("{} {first} *", c.program),
                )),
                _ => {}
            }
        }
        let paths: Vec<&PathBuf> = facts.write_paths.iter().chain(&facts.read_paths).collect();
        if subject.analysis.is_none()
            && let Some(dir) = paths.first().and_then(|p| p.parent())
        {
            out.push(GrantScope::PathPrefix(dir.display().to_string()));
        }
        if let Some(host) = facts.url.as_deref().and_then(host_of) {
            out.push(GrantScope::Domain(host));
        }
        if let Some(app) = &facts.app {
            out.push(GrantScope::App(app.clone()));
        }
        out
    }

    /// Forgets the session's remembered answers (its session grants are dropped from storage).
    pub fn end_session(&self, session_id: &str) -> Result<(), GrantError> {
        self.inner
            .session_always
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(s, _)| s != session_id);
        self.inner
            .grants
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|g| g.session_id.as_deref() != Some(session_id));
        if let Some(store) = &self.inner.store {
            store.end_session(session_id)?;
        }
        Ok(())
    }

    /// The grants in force now. With a store they are read from it (so grants another process
    /// added or revoked show) and the policy's own copy is replaced by what it holds.
    pub fn grants(&self) -> Result<Vec<StoredGrant>, GrantError> {
        let now = osprey_db::now_ms();
        let live = match &self.inner.store {
            Some(store) => {
                let live = store.list_live()?;
                *self.inner.grants.write().unwrap_or_else(|e| e.into_inner()) = live.clone();
                live
            }
            None => self
                .inner
                .grants
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .filter(|g| g.expires_ms.is_none_or(|t| t > now))
                .cloned()
                .collect(),
        };
        Ok(live)
    }

    /// Revokes a grant: gone from storage and from the policy's copy at once, so the next call
    /// it covered is asked again. False when no grant has that id.
    pub fn revoke_grant(&self, id: i64) -> Result<bool, GrantError> {
        let removed_here = {
            let mut grants = self.inner.grants.write().unwrap_or_else(|e| e.into_inner());
            let before = grants.len();
            grants.retain(|g| g.id != id);
            grants.len() != before
        };
        match &self.inner.store {
            Some(store) => Ok(store.revoke(id)? || removed_here),
            None => Ok(removed_here),
        }
    }

    fn remembered(&self, subject: &Subject<'_>) -> bool {
        let set = self
            .inner
            .session_always
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        !set.is_empty()
            && set.contains(&(
                subject.session_id.unwrap_or("").to_string(),
                subject.session_key(),
            ))
    }

    fn granted(&self, subject: &Subject<'_>) -> bool {
        let grants = self.inner.grants.read().unwrap_or_else(|e| e.into_inner());
        if grants.is_empty() {
            return false;
        }
        let now = osprey_db::now_ms();
        grants
            .iter()
            .filter(|g| g.is_live(now, subject.session_id))
            .any(|g| scope_covers(&g.scope, subject))
    }
}

fn is_safe_bin(config: &PolicyConfig, command: &SimpleCommand) -> bool {
    config.safe_bins.iter().any(|b| b == &command.program)
        // Only the options its table lists (see safe_bins): anything else is asked.
        && safe_bins::options_allowed(command)
        // What a pattern or an expansion names is only known at run time: asked.
        && !command.unresolved_args
        && command
            .redirects
            .iter()
            .all(|r| !r.writes || is_null_device(&r.target))
        && command.wrappers.is_empty()
}

fn is_null_device(target: &str) -> bool {
    target == "/dev/null" || target.starts_with('&')
}

fn command_line(c: &SimpleCommand) -> String {
    std::iter::once(c.program.as_str())
        .chain(c.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

fn allowlisted(config: &PolicyConfig, command: &SimpleCommand) -> bool {
    if command
        .redirects
        .iter()
        .any(|r| r.writes && !is_null_device(&r.target))
    {
        return false;
    }
    // `PATH=/tmp git status`: an environment prefix changes what runs; never covered.
    if command.wrappers.iter().any(|w| w.contains('=')) {
        return false;
    }
    let line = command_line(command);
    config.allowlist.iter().any(|entry| {
        let entry = entry.trim();
        if let Some(exact) = entry.strip_prefix('=') {
            return exact.trim() == line;
        }
        let words: Vec<&str> = entry.split_whitespace().collect();
        match words.as_slice() {
            [] => false,
            [binary] => *binary == command.program,
            [binary, first] => {
                *binary == command.program
                    && command.args.first().map(String::as_str) == Some(*first)
            }
            _ => words.join(" ") == line,
        }
    })
}

/// Does `pattern` (with `*` matching any run of characters) match `text`?
fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// Lexically normalises a path (`a/./b/../c` -> `a/c`) without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The host a URL really reaches, parsed as a browser would (so `https://a.example\\@b.example/`
/// is `a.example`, not `b.example`).
fn host_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']');
    (!host.is_empty()).then(|| host.trim_end_matches('.').to_ascii_lowercase())
}

fn scope_covers(scope: &GrantScope, subject: &Subject<'_>) -> bool {
    let facts = subject.facts;
    match scope {
        GrantScope::CommandPattern(pattern) => match subject.analysis {
            // Every simple command must match, so `git *` never lets `git x; rm y` through.
            Some(a) if a.dynamic.is_none() && !a.commands.is_empty() => a
                .commands
                .iter()
                .all(|c| glob_match(pattern.trim(), &command_line(c))),
            _ => false,
        },
        GrantScope::PathPrefix(prefix) => {
            let prefix = normalize(Path::new(prefix));
            let paths: Vec<&PathBuf> = facts.read_paths.iter().chain(&facts.write_paths).collect();
            subject.analysis.is_none()
                && facts.command.is_none()
                && !paths.is_empty()
                && paths.iter().all(|p| normalize(p).starts_with(&prefix))
        }
        GrantScope::Domain(domain) => {
            let domain = domain.trim_start_matches("*.").to_ascii_lowercase();
            facts
                .url
                .as_deref()
                .and_then(host_of)
                .is_some_and(|h| h == domain || h.ends_with(&format!(".{domain}")))
        }
        GrantScope::App(app) => facts.app.as_deref() == Some(app.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::shell_syntax::analyze;

    fn shell_facts(cmd: &str) -> CallFacts {
        CallFacts {
            approval: ApprovalNeed::Required,
            summary: cmd.into(),
            command: Some(cmd.into()),
            ..Default::default()
        }
    }

    fn verdict(policy: &Policy, cmd: &str, session: Option<&str>) -> Verdict {
        let facts = shell_facts(cmd);
        let analysis = analyze(cmd);
        policy.evaluate(&Subject {
            tool: "shell",
            resource: Some("bash"),
            action: Some("exec"),
            session_id: session,
            facts: &facts,
            analysis: Some(&analysis),
            must_ask: None,
        })
    }

    fn policy(level: Level, ask: AskMode, allowlist: &[&str]) -> Policy {
        Policy::new(
            PolicyConfig {
                level,
                ask,
                allowlist: allowlist.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            },
            None,
        )
        .unwrap()
    }

    #[test]
    fn read_only_calls_need_no_approval_even_at_deny() {
        let p = policy(Level::Deny, AskMode::Off, &[]);
        let facts = CallFacts {
            approval: ApprovalNeed::None,
            ..Default::default()
        };
        let s = Subject {
            tool: "file",
            resource: None,
            action: Some("read"),
            session_id: None,
            facts: &facts,
            analysis: None,
            must_ask: None,
        };
        assert_eq!(p.evaluate(&s), Verdict::Allow(AllowReason::ReadOnly));
    }

    #[test]
    fn levels_and_ask_modes() {
        assert!(matches!(
            verdict(&policy(Level::Deny, AskMode::OnMiss, &[]), "touch x", None),
            Verdict::Deny(_)
        ));
        assert_eq!(
            verdict(&policy(Level::Full, AskMode::OnMiss, &[]), "touch x", None),
            Verdict::Allow(AllowReason::Full)
        );
        assert!(matches!(
            verdict(&policy(Level::Full, AskMode::Always, &[]), "touch x", None),
            Verdict::Ask(_)
        ));
        assert!(matches!(
            verdict(
                &policy(Level::Allowlist, AskMode::OnMiss, &[]),
                "touch x",
                None
            ),
            Verdict::Ask(_)
        ));
        assert!(matches!(
            verdict(
                &policy(Level::Allowlist, AskMode::Off, &[]),
                "touch x",
                None
            ),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn safe_bins_run_without_asking_unless_they_write() {
        let p = policy(Level::Allowlist, AskMode::OnMiss, &[]);
        assert_eq!(
            verdict(&p, "ls -la", None),
            Verdict::Allow(AllowReason::SafeBin)
        );
        assert!(matches!(
            verdict(&p, "find . -delete", None),
            Verdict::Ask(_)
        ));
    }

    #[test]
    fn safe_bins_are_judged_by_their_arguments_and_environment() {
        let p = policy(Level::Allowlist, AskMode::OnMiss, &["git"]);
        // The review's bypasses: each ran code or read a key unasked.
        for command in [
            "cat ~/.ss?/id_rsa",
            "cat ~/.ssh/id_*",
            "cat $HOME/.aws/credentials",
            "sort -S1 --compress-program=sh notes.txt",
            "sort -ofile notes.txt",
            "LESSOPEN='|sh -c id %s' less notes.txt",
            "PATH=/tmp ls",
            "LD_PRELOAD=/tmp/x.so cat notes.txt",
            "PATH=/tmp git status",
            "rg --pre ./run.sh secret .",
            "date -s 2020-01-01",
            "hostname evil",
            "uniq in.txt out.txt",
            "xxd -r dump.hex out.bin",
            "less -o log.txt notes.txt",
            "tree -o listing.txt",
            "file -C -m magic",
        ] {
            assert!(
                matches!(verdict(&p, command, None), Verdict::Ask(_)),
                "{command} was not asked: {:?}",
                verdict(&p, command, None)
            );
        }
        // Everyday reads stay unasked.
        for command in [
            "ls -la src",
            "cat README.md",
            "grep -rn TODO src",
            "sort -u names.txt",
            "uniq -c counts.txt",
            "date +%F",
            "hostname",
            "xxd file.bin",
            "find . -name '*.rs'",
            "git status",
        ] {
            assert!(
                matches!(verdict(&p, command, None), Verdict::Allow(_)),
                "{command} was asked: {:?}",
                verdict(&p, command, None)
            );
        }
    }

    #[test]
    fn programs_that_run_programs_or_strings_are_asked_even_under_full() {
        let p = policy(Level::Full, AskMode::OnMiss, &[]);
        for command in [
            "xargs rm < list",
            "find . -name '*.tmp' | xargs -0 echo",
            "parallel gzip ::: a b",
            "flock /tmp/lock -c 'make deploy'",
            "script -qc 'id' /dev/null",
            "tmux new -d 'sleep 100'",
            "echo 'rm -rf build' | at now",
            "ssh -o ProxyCommand='sh -c id' host",
            "git -c core.pager='sh -c id' log",
            "git -c alias.x='!id' x",
            "sed -n '1e id' notes.txt",
            "sed 's/x/id/e' notes.txt",
            "tar -cf x.tar --checkpoint=1 --checkpoint-action=exec=id src",
            "tar -xf x.tar --to-command='sh -c id'",
            "make --eval='all:;id'",
            "zip -TT 'sh -c id' x.zip f",
            "gdb -batch -ex 'shell id'",
            "vim -c '!id' -c q notes.txt",
            "strace -o /dev/null ls",
            "fakeroot ls",
            "nsenter -t 1 -m ls",
            "firejail ls",
            "busybox ls",
            "docker run -v /:/host alpine ls",
            "/lib64/ld-linux-x86-64.so.2 /bin/ls",
        ] {
            assert!(
                matches!(verdict(&p, command, None), Verdict::Ask(_)),
                "{command}: {:?}",
                verdict(&p, command, None)
            );
        }
        // Their plain uses are not affected.
        for command in [
            "sed -i 's/foo/bar/g' src/main.rs",
            "tar xzf archive.tar.gz -C vendor",
            "git log --oneline",
            "make test",
            "docker run --rm app",
            "vim --version",
        ] {
            assert!(
                matches!(verdict(&p, command, None), Verdict::Allow(_)),
                "{command}: {:?}",
                verdict(&p, command, None)
            );
        }
    }

    #[test]
    fn allowlist_matches_exact_binary_and_binary_plus_first_argument() {
        let p = policy(
            Level::Allowlist,
            AskMode::Off,
            &["cargo", "git commit", "=make test"],
        );
        assert_eq!(
            verdict(&p, "cargo build --release", None),
            Verdict::Allow(AllowReason::Allowlist)
        );
        assert_eq!(
            verdict(&p, "git commit -m x", None),
            Verdict::Allow(AllowReason::Allowlist)
        );
        assert!(matches!(verdict(&p, "git push", None), Verdict::Deny(_)));
        assert_eq!(
            verdict(&p, "make test", None),
            Verdict::Allow(AllowReason::Allowlist)
        );
        assert!(matches!(
            verdict(&p, "make install", None),
            Verdict::Deny(_)
        ));
        // Every command in a pipeline or chain must be covered.
        assert!(matches!(
            verdict(&p, "cargo build; git push", None),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn session_always_covers_only_the_same_call_in_the_same_session() {
        let p = policy(Level::Allowlist, AskMode::OnMiss, &[]);
        let facts = shell_facts("touch a");
        let analysis = analyze("touch a");
        let s = Subject {
            tool: "shell",
            resource: Some("bash"),
            action: Some("exec"),
            session_id: Some("s1"),
            facts: &facts,
            analysis: Some(&analysis),
            must_ask: None,
        };
        p.remember(&s, &ApprovalAnswer::AlwaysThisSession).unwrap();
        assert_eq!(p.evaluate(&s), Verdict::Allow(AllowReason::SessionAlways));
        assert!(matches!(
            verdict(&p, "touch a", Some("s2")),
            Verdict::Ask(_)
        ));
        assert!(matches!(
            verdict(&p, "touch b", Some("s1")),
            Verdict::Ask(_)
        ));
        p.end_session("s1").unwrap();
        assert!(matches!(p.evaluate(&s), Verdict::Ask(_)));
    }

    #[test]
    fn command_pattern_grants_cover_every_command_of_a_chain_or_none() {
        let p = policy(Level::Allowlist, AskMode::OnMiss, &[]);
        p.add_grant(
            &GrantScope::CommandPattern("git *".into()),
            &GrantDuration::Session,
            Some("s"),
        )
        .unwrap();
        assert_eq!(
            verdict(&p, "git push origin main", Some("s")),
            Verdict::Allow(AllowReason::Grant)
        );
        assert!(matches!(
            verdict(&p, "git push; touch x", Some("s")),
            Verdict::Ask(_)
        ));
        assert!(matches!(
            verdict(&p, "git push", Some("other")),
            Verdict::Ask(_)
        ));
    }

    #[test]
    fn a_revoked_grant_stops_covering_at_once_and_the_list_reads_the_store() {
        let db = osprey_db::Database::open_in_memory().unwrap();
        let config = PolicyConfig {
            level: Level::Allowlist,
            ask: AskMode::OnMiss,
            ..PolicyConfig::default()
        };
        let p = Policy::new(config.clone(), Some(db.grants())).unwrap();
        let far = osprey_db::now_ms() / 1000 + 600;
        let grant = p
            .add_grant(
                &GrantScope::CommandPattern("git *".into()),
                &GrantDuration::Until { unix_seconds: far },
                None,
            )
            .unwrap();
        assert_eq!(
            verdict(&p, "git push", None),
            Verdict::Allow(AllowReason::Grant)
        );
        // Another process (the CLI) adds one: the list shows it and the policy uses it.
        db.grants()
            .add(
                &GrantScope::CommandPattern("make *".into()),
                &GrantDuration::Until { unix_seconds: far },
                None,
            )
            .unwrap();
        assert_eq!(p.grants().unwrap().len(), 2);
        assert_eq!(
            verdict(&p, "make test", None),
            Verdict::Allow(AllowReason::Grant)
        );
        assert!(p.revoke_grant(grant.id).unwrap());
        assert!(matches!(verdict(&p, "git push", None), Verdict::Ask(_)));
        assert_eq!(db.grants().list_live().unwrap().len(), 1);
        assert!(!p.revoke_grant(grant.id).unwrap(), "already gone");
        // A fresh policy on the same store agrees.
        let again = Policy::new(config, Some(db.grants())).unwrap();
        assert!(matches!(verdict(&again, "git push", None), Verdict::Ask(_)));
    }

    #[test]
    fn path_domain_and_app_grants() {
        let p = policy(Level::Allowlist, AskMode::OnMiss, &[]);
        let far = osprey_db::now_ms() / 1000 + 60;
        let until = GrantDuration::Until { unix_seconds: far };
        p.add_grant(
            &GrantScope::PathPrefix("/home/u/project".into()),
            &until,
            None,
        )
        .unwrap();
        p.add_grant(&GrantScope::Domain("example.com".into()), &until, None)
            .unwrap();
        p.add_grant(&GrantScope::App("com.acme.notes".into()), &until, None)
            .unwrap();
        let check = |facts: CallFacts| {
            p.evaluate(&Subject {
                tool: "t",
                resource: None,
                action: None,
                session_id: None,
                facts: &facts,
                analysis: None,
                must_ask: None,
            })
        };
        let write = |path: &str| CallFacts {
            write_paths: vec![path.into()],
            ..Default::default()
        };
        assert_eq!(
            check(write("/home/u/project/src/a.rs")),
            Verdict::Allow(AllowReason::Grant)
        );
        assert!(matches!(
            check(write("/home/u/project/../secret")),
            Verdict::Ask(_)
        ));
        assert!(matches!(
            check(write("/home/u/projectx/a")),
            Verdict::Ask(_)
        ));
        let url = |u: &str| CallFacts {
            url: Some(u.into()),
            ..Default::default()
        };
        assert_eq!(
            check(url("https://api.example.com/x")),
            Verdict::Allow(AllowReason::Grant)
        );
        assert_eq!(
            check(url("https://user@EXAMPLE.com:8443/")),
            Verdict::Allow(AllowReason::Grant)
        );
        assert!(matches!(
            check(url("https://example.com.evil.net/")),
            Verdict::Ask(_)
        ));
        assert!(matches!(
            check(url("https://notexample.com/")),
            Verdict::Ask(_)
        ));
        // The real host of a backslash-userinfo URL is the first one.
        assert!(matches!(
            check(url("https://evil.net\\@example.com/")),
            Verdict::Ask(_)
        ));
        assert_eq!(
            check(url("https://example.com\\@evil.net/")),
            Verdict::Allow(AllowReason::Grant)
        );
        let app = |a: &str| CallFacts {
            app: Some(a.into()),
            ..Default::default()
        };
        assert_eq!(
            check(app("com.acme.notes")),
            Verdict::Allow(AllowReason::Grant)
        );
        assert!(matches!(check(app("com.acme.other")), Verdict::Ask(_)));
    }

    #[test]
    fn glob_patterns() {
        assert!(glob_match("git *", "git push"));
        assert!(!glob_match("git *", "gitx push"));
        assert!(glob_match("npm run *:test", "npm run unit:test"));
        assert!(glob_match("ls", "ls"));
        assert!(!glob_match("ls", "ls -la"));
    }

    #[test]
    fn a_level_cap_only_tightens() {
        let capped = |policy: &Policy, cap: Option<Level>| {
            let facts = shell_facts("touch /tmp/x");
            let analysis = analyze("touch /tmp/x");
            policy.evaluate_capped(
                &Subject {
                    tool: "shell",
                    resource: Some("bash"),
                    action: Some("exec"),
                    session_id: None,
                    facts: &facts,
                    analysis: Some(&analysis),
                    must_ask: None,
                },
                cap,
            )
        };
        let full = policy(Level::Full, AskMode::OnMiss, &[]);
        assert_eq!(capped(&full, None), Verdict::Allow(AllowReason::Full));
        assert_eq!(
            capped(&full, Some(Level::Full)),
            Verdict::Allow(AllowReason::Full)
        );
        assert!(matches!(
            capped(&full, Some(Level::Allowlist)),
            Verdict::Ask(_)
        ));
        assert!(matches!(capped(&full, Some(Level::Deny)), Verdict::Deny(_)));
        // A looser cap than the policy's own level changes nothing.
        let strict = policy(Level::Deny, AskMode::OnMiss, &[]);
        assert!(matches!(
            capped(&strict, Some(Level::Full)),
            Verdict::Deny(_)
        ));
        assert_eq!(Level::Full.stricter(Level::Allowlist), Level::Allowlist);
        assert_eq!(Level::Deny.stricter(Level::Full), Level::Deny);
    }
}
