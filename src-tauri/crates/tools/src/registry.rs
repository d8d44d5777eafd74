//! The registry: the set of tools, and [`Registry::execute`], the single choke point every tool
//! call passes. Its steps run in this order:
//!
//! 0. the pause: while automation is paused ([`Registry::set_paused`]) a call waits here;
//! 1. resolve the name (a registered name as is, else strip an MCP prefix; an unknown name gets
//!    the right call and the list); a tool the person switched off is refused here
//!    (`tool_disabled`, [`crate::governance`]);
//! 2. validate `resource`/`action` and the fields against the domain table (aliases, inference,
//!    defaults; an unknown field is refused with the accepted names); then the tool's circuit
//!    breaker (`circuit_open` while it is open);
//! 3. the `tool.pre_execute` filter (may rewrite the input, which is validated again, or handle
//!    the call);
//! 4. origin rules, then the tool's quotas (`quota_exceeded`, checked before anyone is asked);
//! 5. the approval policy (asking the approver when it says so; in autonomous mode what it would
//!    ask is allowed instead, audited as `autonomous`, except what only a person's answer to
//!    that very call may let run);
//! 6. the safeguard, unconditional: it runs after an approval too, under `full` and in
//!    autonomous mode, with the person's denied paths and command blocklist; then the call is
//!    counted against its quotas;
//! 7. execution with the call's deadline and cancellation, output capped, the
//!    `tool.post_execute` filter, the outcome counted by the circuit breaker, and an audit row.
//!
//! As a courtesy the safeguard is also consulted before asking, so nobody is asked to approve a
//! call that would be refused anyway; the check in step 6 runs regardless.

use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use futures::FutureExt;
use osprey_db::AuditEntry;
use osprey_types::{ApprovalAnswer, ApprovalRequest, ContentBlock, ErrorCode, Origin, ToolResult};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::audit::AuditSink;
use crate::call::{ApprovalNeed, Call, CallFacts};
use crate::correction::{resolve_tool_name, unknown_tool_message};
use crate::domain::Domain;
use crate::governance::Governance;
use crate::hooks::{HookDispatcher, NoHooks, TOOL_POST_EXECUTE, TOOL_PRE_EXECUTE};
use crate::scope::ToolScope;
use crate::security::Refusal;
use crate::security::origin::OriginRules;
use crate::security::policy::{Approver, Policy, Subject, Verdict};
use crate::security::safeguard::Safeguard;
use crate::security::shell_syntax::{CommandAnalysis, analyze};
use crate::spec::ToolSpec;
use crate::tool::{DomainAdapter, DomainTool, Tool, ToolContext};

/// A change to the set of registered tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryChange {
    Added(String),
    Removed(String),
}

type Listener = Arc<dyn Fn(&RegistryChange) + Send + Sync>;

/// What the registry is built from.
pub struct RegistryConfig {
    pub policy: Policy,
    pub origin_rules: OriginRules,
    pub safeguard: Safeguard,
    pub audit: AuditSink,
    /// Text results longer than this many bytes are cut, with a note saying so.
    pub output_cap: usize,
}

impl RegistryConfig {
    /// A registry that guards `data_dir` as Osprey's data and has no home directory to protect:
    /// the policy as given, no origin denies, no audit, the default output cap. Override fields
    /// with struct update syntax where a caller needs more (the core builds every field itself).
    pub fn new(policy: Policy, data_dir: impl Into<std::path::PathBuf>) -> Self {
        RegistryConfig {
            policy,
            origin_rules: OriginRules::none(),
            safeguard: Safeguard::new(crate::PathGuard::new(None, data_dir.into())),
            audit: AuditSink::discard(),
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }
}

/// What a call would meet, without running it (`osprey tool --check`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum CheckOutcome {
    /// It would run without a question.
    Allow { reason: String },
    /// The person would be asked.
    Ask { reason: String },
    /// It would be refused.
    Refused { code: ErrorCode, message: String },
    /// A `tool.pre_execute` hook would handle it.
    HandledByHook,
}

/// The tool set and its choke point. Cheap to clone.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

/// A registry held without keeping it alive: what something the registry itself holds (a
/// listener, a tool's helper) keeps of it, so there is no cycle.
#[derive(Clone)]
pub struct WeakRegistry(std::sync::Weak<Inner>);

impl WeakRegistry {
    /// The registry, while anyone still holds it.
    pub fn upgrade(&self) -> Option<Registry> {
        self.0.upgrade().map(|inner| Registry { inner })
    }
}

struct Inner {
    tools: RwLock<BTreeMap<String, Arc<dyn Tool>>>,
    /// The schema validators of the tools without a domain table (app and MCP tools), compiled
    /// when they register: their input is checked before anyone is asked about it.
    validators: RwLock<HashMap<String, Arc<jsonschema::Validator>>>,
    listeners: RwLock<Vec<Listener>>,
    hooks: RwLock<Arc<dyn HookDispatcher>>,
    origin_rules: RwLock<Arc<OriginRules>>,
    approver: RwLock<Option<Arc<dyn Approver>>>,
    /// `true` while automation is paused: calls wait at the door (see [`Registry::set_paused`]).
    paused: tokio::sync::watch::Sender<bool>,
    policy: Policy,
    safeguard: Safeguard,
    audit: AuditSink,
    output_cap: usize,
    /// What the person set about the tools as a whole (off, autonomous, quotas, ...).
    governance: RwLock<Governance>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .finish_non_exhaustive()
    }
}

/// How far a call got before execution.
enum Gate {
    Run {
        tool: Arc<dyn Tool>,
        call: Call,
        decision: String,
    },
    Done {
        result: ToolResult,
        decision: String,
    },
    WouldAsk(String),
}

/// What the audit row needs to know, filled in as the steps go.
#[derive(Default)]
struct Trail {
    tool: String,
    resource: Option<String>,
    action: Option<String>,
    summary: Option<String>,
}

/// Default cap on a result's text, in bytes.
pub const DEFAULT_OUTPUT_CAP: usize = 256 * 1024;

fn lock_read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn lock_write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    pub fn new(config: RegistryConfig) -> Self {
        Registry {
            inner: Arc::new(Inner {
                tools: RwLock::new(BTreeMap::new()),
                validators: RwLock::new(HashMap::new()),
                listeners: RwLock::new(Vec::new()),
                hooks: RwLock::new(Arc::new(NoHooks)),
                origin_rules: RwLock::new(Arc::new(config.origin_rules)),
                approver: RwLock::new(None),
                paused: tokio::sync::watch::Sender::new(false),
                policy: config.policy,
                safeguard: config.safeguard,
                audit: config.audit,
                output_cap: config.output_cap,
                governance: RwLock::new(Governance::in_memory(None)),
            }),
        }
    }

    /// Adds (or replaces) a tool; listeners hear of it.
    pub fn register(&self, tool: Arc<dyn Tool>) {
        let name = tool.name().to_string();
        let validator = match tool.domain() {
            // A domain table validates its own calls (with the choices in its messages).
            Some(_) => None,
            None => match jsonschema::validator_for(tool.schema()) {
                Ok(validator) => Some(Arc::new(validator)),
                Err(error) => {
                    // A schema this validator cannot read (an MCP server's own dialect): the
                    // tool checks its input itself, as before.
                    tracing::debug!(tool = %name, %error, "the tool's input schema is not checked");
                    None
                }
            },
        };
        {
            let mut validators = lock_write(&self.inner.validators);
            match validator {
                Some(validator) => validators.insert(name.clone(), validator),
                None => validators.remove(&name),
            };
        }
        lock_write(&self.inner.tools).insert(name.clone(), tool);
        self.notify(&RegistryChange::Added(name));
    }

    /// Adds a domain tool, building its schema from its table.
    pub fn register_domain<T: DomainTool>(&self, tool: T) {
        self.register(Arc::new(DomainAdapter::new(tool)));
    }

    /// Removes a tool; returns whether it was there.
    pub fn unregister(&self, name: &str) -> bool {
        lock_write(&self.inner.validators).remove(name);
        let removed = lock_write(&self.inner.tools).remove(name).is_some();
        if removed {
            self.notify(&RegistryChange::Removed(name.to_string()));
        }
        removed
    }

    /// This registry, held weakly.
    pub fn downgrade(&self) -> WeakRegistry {
        WeakRegistry(Arc::downgrade(&self.inner))
    }

    /// Calls `listener` on every later registration change.
    pub fn on_change(&self, listener: impl Fn(&RegistryChange) + Send + Sync + 'static) {
        lock_write(&self.inner.listeners).push(Arc::new(listener));
    }

    fn notify(&self, change: &RegistryChange) {
        // Clone the list first so a listener may (un)register without deadlocking.
        let listeners: Vec<Listener> = lock_read(&self.inner.listeners).clone();
        for listener in listeners {
            listener(change);
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        lock_read(&self.inner.tools).get(name).cloned()
    }

    pub fn names(&self) -> Vec<String> {
        lock_read(&self.inner.tools).keys().cloned().collect()
    }

    /// Every tool as a model or an MCP client is told about it, sorted by name: its schema in
    /// the dialect every provider accepts ([`crate::spec::portable_schema`]; the tool itself
    /// still validates against its own, richer schema).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.specs_for(None)
    }

    /// The tools a caller with `scope` may use, as [`Registry::specs`] gives them: a tool
    /// outside the scope is left out, and a domain tool granted in part is shown with only the
    /// granted resources and actions (its schema built from the narrowed table), so the model
    /// is not offered what the registry would refuse.
    pub fn specs_for(&self, scope: Option<&ToolScope>) -> Vec<ToolSpec> {
        self.specs_for_turn(scope, |_| true)
    }

    /// Like [`Registry::specs_for`], with the short form of each deferred tool
    /// ([`Domain::deferred`]) that `loaded` does not name: the runner passes the tools its
    /// conversation has called.
    pub fn specs_for_turn(
        &self,
        scope: Option<&ToolScope>,
        loaded: impl Fn(&str) -> bool,
    ) -> Vec<ToolSpec> {
        let spec = |name: &str, domain: &Domain, full: &Value| {
            if domain.deferred && !loaded(name) {
                ToolSpec::portable(name, &domain.stub_description(), &domain.stub_schema())
            } else {
                ToolSpec::portable(name, &domain.description, full)
            }
        };
        let governance = self.governance();
        lock_read(&self.inner.tools)
            .values()
            .filter_map(|t| {
                // A tool the person switched off is not offered at all.
                if governance.is_disabled(t.name()) {
                    return None;
                }
                if let Some(scope) = scope
                    && !scope.allows_tool(t.name())
                {
                    return None;
                }
                match (t.domain(), scope) {
                    (Some(domain), None) => Some(spec(t.name(), domain, t.schema())),
                    (Some(domain), Some(scope)) => {
                        let narrowed = scope.restrict_domain(domain)?;
                        Some(spec(t.name(), &narrowed, &narrowed.json_schema()))
                    }
                    (None, None) => Some(ToolSpec::portable(t.name(), t.description(), t.schema())),
                    // A tool without a table is granted whole or not at all.
                    (None, Some(scope)) => scope
                        .allows(t.name(), None, None)
                        .then(|| ToolSpec::portable(t.name(), t.description(), t.schema())),
                }
            })
            .collect()
    }

    /// The hook dispatcher calls go through now (tools with hook points of their own, like the
    /// agent's memory, call the same one).
    pub fn hooks(&self) -> Arc<dyn HookDispatcher> {
        lock_read(&self.inner.hooks).clone()
    }

    pub fn set_hooks(&self, hooks: Arc<dyn HookDispatcher>) {
        *lock_write(&self.inner.hooks) = hooks;
    }

    pub fn set_origin_rules(&self, rules: OriginRules) {
        *lock_write(&self.inner.origin_rules) = Arc::new(rules);
    }

    pub fn origin_rules(&self) -> Arc<OriginRules> {
        lock_read(&self.inner.origin_rules).clone()
    }

    /// The default approver, used when a call's context names none.
    pub fn set_approver(&self, approver: Option<Arc<dyn Approver>>) {
        *lock_write(&self.inner.approver) = approver;
    }

    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// Tool governance now in force (a handle: its settings can be changed through it).
    pub fn governance(&self) -> Governance {
        lock_read(&self.inner.governance).clone()
    }

    /// Replaces the governance (the core's counts its quotas in the data folder's database;
    /// a new registry's counts live in memory).
    pub fn set_governance(&self, governance: Governance) {
        *lock_write(&self.inner.governance) = governance;
    }

    /// Pauses (or resumes) every tool call: while paused, [`Registry::execute`] holds each call
    /// before any step (nobody is asked, nothing runs) until it is resumed; a call whose deadline
    /// passes first ends with `paused`, one cancelled first with `cancelled`. Calls already
    /// running go on. Returns whether the state changed.
    pub fn set_paused(&self, paused: bool) -> bool {
        self.inner.paused.send_if_modified(|now| {
            let changed = *now != paused;
            *now = paused;
            changed
        })
    }

    pub fn is_paused(&self) -> bool {
        *self.inner.paused.borrow()
    }

    /// Follows the pause state (the core holds reminder and comm turns with it).
    pub fn watch_paused(&self) -> tokio::sync::watch::Receiver<bool> {
        self.inner.paused.subscribe()
    }

    /// Waits while paused. `Err` with the refusal when the call's deadline passes or it is
    /// cancelled first.
    async fn wait_unpaused(&self, ctx: &ToolContext) -> Result<(), Refusal> {
        let mut paused = self.inner.paused.subscribe();
        if !*paused.borrow_and_update() {
            return Ok(());
        }
        let deadline = tokio::time::Instant::from_std(ctx.deadline);
        tokio::select! {
            resumed = paused.wait_for(|paused| !paused) => match resumed {
                Ok(_) => Ok(()),
                // The sender lives as long as the registry; treat its end as a resume.
                Err(_) => Ok(()),
            },
            _ = ctx.cancel.cancelled() => Err(Refusal::new(
                ErrorCode::Cancelled,
                "the call was cancelled while automation was paused",
            )),
            _ = tokio::time::sleep_until(deadline) => Err(Refusal::new(
                ErrorCode::Paused,
                "automation is paused (tray menu or Osprey's window: Resume automation), and the call's time ran out before it was resumed",
            )),
        }
    }

    pub fn safeguard(&self) -> &Safeguard {
        &self.inner.safeguard
    }

    pub fn audit(&self) -> &AuditSink {
        &self.inner.audit
    }

    /// Runs one call through every step. Never panics and never fails: errors are results.
    pub async fn execute(&self, ctx: &ToolContext, name: &str, input: Value) -> ToolResult {
        let started = Instant::now();
        let mut trail = Trail {
            tool: name.to_string(),
            ..Default::default()
        };
        // 0. The pause, before anything is asked or run.
        if let Err(refusal) = self.wait_unpaused(ctx).await {
            let decision = refusal.code.as_str().to_string();
            let result = finished(refusal.into_result(), started);
            self.record(ctx, &trail, &decision, &result, started);
            return result;
        }
        let (result, decision) = match self.prepare(ctx, name, input, &mut trail, false).await {
            Gate::Done { result, decision } => (result, decision),
            Gate::WouldAsk(reason) => (
                ToolResult::error(ErrorCode::PolicyDenied, reason),
                "policy_denied".into(),
            ),
            Gate::Run {
                tool,
                call,
                decision,
            } => {
                let result = self.run(ctx, &tool, call.clone()).await;
                // The tool's own outcome, before any hook rewrites it.
                self.governance().record_outcome(tool.name(), &result);
                (
                    self.post_execute(ctx, &trail, &call, result).await,
                    decision,
                )
            }
        };
        let result = finished(result, started);
        self.record(ctx, &trail, &decision, &result, started);
        result
    }

    /// Runs every step but execution and says what the call would meet. Nobody is asked and
    /// nothing is audited.
    pub async fn check(&self, ctx: &ToolContext, name: &str, input: Value) -> CheckOutcome {
        let mut trail = Trail::default();
        match self.prepare(ctx, name, input, &mut trail, true).await {
            Gate::Run { decision, .. } => CheckOutcome::Allow { reason: decision },
            Gate::WouldAsk(reason) => CheckOutcome::Ask { reason },
            Gate::Done { decision, .. } if decision == "hook" => CheckOutcome::HandledByHook,
            Gate::Done { result, .. } => CheckOutcome::Refused {
                code: result.code.unwrap_or(ErrorCode::ToolFailed),
                message: result.text_content(),
            },
        }
    }

    /// Steps 1 to 6.
    async fn prepare(
        &self,
        ctx: &ToolContext,
        name: &str,
        input: Value,
        trail: &mut Trail,
        check_only: bool,
    ) -> Gate {
        let refuse = |refusal: Refusal| Gate::Done {
            decision: refusal.code.as_str().to_string(),
            result: refusal.into_result(),
        };

        // 1. Name. A caller with a role's scope is told only of its role's tools.
        let scope = ctx.scope.as_deref();
        let in_scope = |tool: &str| scope.is_none_or(|s| s.allows_tool(tool));
        let name = resolve_tool_name(name, |n| lock_read(&self.inner.tools).contains_key(n));
        trail.tool = name.to_string();
        let Some(tool) = self.get(name) else {
            let names: Vec<String> = self.names().into_iter().filter(|n| in_scope(n)).collect();
            return refuse(Refusal::new(
                ErrorCode::UnknownTool,
                unknown_tool_message(name, &names, |tool, input| {
                    in_scope(tool)
                        && self.get(tool).is_some_and(|tool| match tool.domain() {
                            Some(domain) => domain.resolve(input).is_ok(),
                            None => true,
                        })
                }),
            ));
        };
        if let Some(scope) = scope.filter(|s| !s.allows_tool(name)) {
            return refuse(role_refusal(scope, &describe(name, &Call::default()), name));
        }
        let governance = self.governance();
        if let Err(refusal) = governance.check_enabled(name) {
            return refuse(refusal);
        }

        // 2. Resource and action.
        let mut call = match self.resolve_checked(name, &*tool, input) {
            Ok(call) => call,
            Err(message) => return refuse(Refusal::new(ErrorCode::InvalidInput, message)),
        };
        trail.resource = call.resource.clone();
        trail.action = call.action.clone();
        if let Err(refusal) = governance.check_breaker(name) {
            return refuse(refusal);
        }

        // 3. Pre-execute filter.
        let hooks = lock_read(&self.inner.hooks).clone();
        if hooks.has_subscribers(TOOL_PRE_EXECUTE) {
            let payload = json!({
                "tool": name,
                "resource": call.resource,
                "action": call.action,
                "input": Value::Object(call.input.clone()),
                "origin": ctx.origin,
                "session_id": ctx.session_id,
            });
            let outcome = hooks.apply_filter(TOOL_PRE_EXECUTE, payload).await;
            if outcome.handled {
                let result = outcome
                    .payload
                    .get("result")
                    .and_then(|r| serde_json::from_value::<ToolResult>(r.clone()).ok())
                    .unwrap_or_else(|| ToolResult::text("(handled by a hook)"));
                return Gate::Done {
                    result,
                    decision: "hook".into(),
                };
            }
            if let Some(new_input) = outcome.payload.get("input") {
                // A rewritten input is validated again: hooks cannot smuggle a malformed call.
                call = match self.resolve_checked(name, &*tool, new_input.clone()) {
                    Ok(call) => call,
                    Err(message) => {
                        return refuse(Refusal::new(
                            ErrorCode::HookRejected,
                            format!(
                                "a tool.pre_execute hook rewrote the input into an invalid call: {message}"
                            ),
                        ));
                    }
                };
                trail.resource = call.resource.clone();
                trail.action = call.action.clone();
            }
        }

        // The role's scope, on the call as it will run (after any rewrite).
        if let Some(scope) =
            scope.filter(|s| !s.allows(name, call.resource.as_deref(), call.action.as_deref()))
        {
            return refuse(role_refusal(scope, &describe(name, &call), name));
        }

        // 4. Origin rules.
        let mut facts = facts_of(&*tool, &call);
        if facts.approval == ApprovalNeed::None
            && crate::security::origin::asked_from(
                ctx.origin,
                name,
                call.resource.as_deref(),
                call.action.as_deref(),
            )
        {
            facts.approval = ApprovalNeed::Required;
        }
        trail.summary = Some(facts.summary.clone());
        if let Some(entry) = self.origin_rules().denied(
            ctx.origin,
            name,
            call.resource.as_deref(),
            call.action.as_deref(),
        ) {
            return refuse(Refusal::new(
                ErrorCode::OriginDenied,
                format!(
                    "calls from origin `{}` may not use `{entry}` (origin rules); {} was refused",
                    ctx.origin,
                    describe(name, &call)
                ),
            ));
        }
        // Quotas, before anyone is asked about a call that could not run anyway.
        if let Err(refusal) = governance.check_quota(
            ctx.session_id.as_deref(),
            name,
            call.resource.as_deref(),
            call.action.as_deref(),
            false,
        ) {
            return refuse(refusal);
        }

        // 5. Approval policy.
        let analysis = facts
            .analysis
            .take()
            .or_else(|| facts.command.as_deref().map(analyze));
        if let Err(refusal) = self.safeguard_check(&facts, analysis.as_ref()) {
            return refuse(refusal);
        }
        let sensitive_read = analysis
            .as_ref()
            .and_then(|a| self.inner.safeguard.must_ask(a, facts.cwd.as_deref()));
        let subject = Subject {
            tool: name,
            resource: call.resource.as_deref(),
            action: call.action.as_deref(),
            session_id: ctx.session_id.as_deref(),
            facts: &facts,
            analysis: analysis.as_ref(),
            must_ask: sensitive_read.as_deref(),
        };
        let decision = match self.inner.policy.evaluate_capped(&subject, ctx.level_cap) {
            Verdict::Allow(reason) => reason.as_str().to_string(),
            Verdict::Deny(message) => {
                return refuse(Refusal::new(ErrorCode::PolicyDenied, message));
            }
            // Autonomous mode answers what the policy would ask, but never what only a
            // person's answer to this very call may let run: a command outside the kernel
            // sandbox (or on a machine without one) and what the safeguard leaves to a person
            // (a credential read, a target only known at run time).
            Verdict::Ask(_)
                if governance.autonomous()
                    && facts.ask_every_time.is_none()
                    && sensitive_read.is_none() =>
            {
                "autonomous".to_string()
            }
            Verdict::Ask(reason) if check_only => return Gate::WouldAsk(reason),
            Verdict::Ask(reason) => {
                let approver = ctx
                    .approver
                    .clone()
                    .or_else(|| lock_read(&self.inner.approver).clone());
                let Some(approver) = approver else {
                    return refuse(Refusal::new(
                        ErrorCode::PolicyDenied,
                        format!("{reason}, so it needs approval, and no one is attached to answer"),
                    ));
                };
                // What the tool can say beyond the summary (an install's permissions); a tool
                // that cannot say what the person would approve refuses instead of asking.
                let details = tokio::select! {
                    details = tool.approval_details(ctx, &call) => details,
                    _ = ctx.cancel.cancelled() => return refuse(Refusal::new(ErrorCode::Cancelled, "the call was cancelled while preparing its approval question")),
                };
                let details = match details {
                    Ok(details) => details,
                    Err(result) => {
                        return Gate::Done {
                            decision: result
                                .code
                                .map(|code| code.as_str().to_string())
                                .unwrap_or_else(|| "tool_failed".into()),
                            result,
                        };
                    }
                };
                let request = ApprovalRequest {
                    id: ctx.call_id.clone(),
                    tool: name.to_string(),
                    resource: call.resource.clone(),
                    action: call.action.clone(),
                    origin: ctx.origin,
                    session_id: ctx.session_id.clone(),
                    summary: facts.summary.clone(),
                    input: Value::Object(call.input.clone()),
                    suggested_scopes: self.inner.policy.suggest_scopes(&subject),
                    details,
                    once_only: facts.ask_every_time.is_some(),
                };
                let answer = tokio::select! {
                    answer = approver.ask(request) => answer,
                    _ = ctx.cancel.cancelled() => return refuse(Refusal::new(ErrorCode::Cancelled, "the call was cancelled while waiting for approval")),
                };
                let label = match &answer {
                    ApprovalAnswer::Deny => {
                        return refuse(Refusal::new(
                            ErrorCode::ApprovalDenied,
                            format!("the person did not approve {}", facts.summary),
                        ));
                    }
                    ApprovalAnswer::Once => "ask:once",
                    ApprovalAnswer::AlwaysThisSession => "ask:session",
                    ApprovalAnswer::Grant { .. } => "ask:grant",
                };
                if let Err(err) = self.inner.policy.remember(&subject, &answer) {
                    // The call itself was approved; only the lasting part failed.
                    tracing::warn!(%err, "could not store the approval grant");
                }
                label.to_string()
            }
        };

        // 6. Safeguard, unconditionally, after whatever the policy decided.
        if let Err(refusal) = self.safeguard_check(&facts, analysis.as_ref()) {
            return refuse(refusal);
        }
        // The call will run: it counts against its quotas now (a racing call may have taken
        // the last one since the check above).
        if !check_only
            && let Err(refusal) = governance.check_quota(
                ctx.session_id.as_deref(),
                name,
                call.resource.as_deref(),
                call.action.as_deref(),
                true,
            )
        {
            return refuse(refusal);
        }
        Gate::Run {
            tool,
            call,
            decision,
        }
    }

    fn safeguard_check(
        &self,
        facts: &CallFacts,
        analysis: Option<&CommandAnalysis>,
    ) -> Result<(), Refusal> {
        let safeguard = &self.inner.safeguard;
        let governance = self.governance();
        if let Some(analysis) = analysis {
            safeguard.check_command_in(analysis, facts.cwd.as_deref())?;
            // The person's blocklist and denied paths, at the same step.
            governance.check_command(analysis, facts.cwd.as_deref())?;
        }
        governance.check_paths(
            facts
                .write_paths
                .iter()
                .chain(&facts.read_paths)
                .map(|p| p.as_path()),
            facts.cwd.as_deref(),
        )?;
        for path in &facts.write_paths {
            safeguard.check_write_path(path)?;
        }
        // Reads of credential stores and Osprey's own data are refused here too, so `--check`
        // shows it and no tool can forget; the file tool checks again on the resolved path.
        for path in &facts.read_paths {
            safeguard.paths().check_read(path)?;
        }
        Ok(())
    }

    /// Step 7's execution: deadline, cancellation, panics, output cap.
    async fn run(&self, ctx: &ToolContext, tool: &Arc<dyn Tool>, call: Call) -> ToolResult {
        let future = AssertUnwindSafe(tool.execute(ctx, call)).catch_unwind();
        let result = tokio::select! {
            outcome = future => match outcome {
                Ok(result) => result,
                Err(panic) => {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    tracing::error!(tool = tool.name(), %what, "tool panicked");
                    ToolResult::error(ErrorCode::ToolFailed, format!("the {} tool failed internally: {what}", tool.name()))
                }
            },
            _ = ctx.cancel.cancelled() => ToolResult::error(ErrorCode::Cancelled, "the call was cancelled"),
            _ = tokio::time::sleep_until(ctx.deadline.into()) => ToolResult::error(
                ErrorCode::Timeout,
                "the call ran past its deadline and was stopped",
            ),
        };
        cap_output(result, self.inner.output_cap)
    }

    async fn post_execute(
        &self,
        ctx: &ToolContext,
        trail: &Trail,
        call: &Call,
        result: ToolResult,
    ) -> ToolResult {
        let hooks = lock_read(&self.inner.hooks).clone();
        if !hooks.has_subscribers(TOOL_POST_EXECUTE) {
            return result;
        }
        let payload = json!({
            "tool": trail.tool,
            "resource": call.resource,
            "action": call.action,
            "input": Value::Object(call.input.clone()),
            "origin": ctx.origin,
            "session_id": ctx.session_id,
            "result": result,
        });
        let outcome = hooks.apply_filter(TOOL_POST_EXECUTE, payload).await;
        match outcome
            .payload
            .get("result")
            .map(|r| serde_json::from_value::<ToolResult>(r.clone()))
        {
            Some(Ok(rewritten)) => cap_output(rewritten, self.inner.output_cap),
            Some(Err(err)) => {
                tracing::warn!(%err, "a tool.post_execute hook returned a malformed result; keeping the original");
                result
            }
            None => result,
        }
    }

    fn record(
        &self,
        ctx: &ToolContext,
        trail: &Trail,
        decision: &str,
        result: &ToolResult,
        started: Instant,
    ) {
        let error = result
            .is_error
            .then(|| truncate(&result.text_content(), 1000));
        self.inner.audit.record(AuditEntry {
            at_ms: osprey_db::now_ms(),
            tool: trail.tool.clone(),
            resource: trail.resource.clone(),
            action: trail.action.clone(),
            origin: ctx.origin.as_str().to_string(),
            session_id: ctx.session_id.clone(),
            decision: decision.to_string(),
            code: result.code.map(|c| c.as_str().to_string()),
            duration_us: started.elapsed().as_micros() as i64,
            error,
            summary: trail.summary.as_deref().map(|s| truncate(s, 300)),
        });
    }
}

/// Every result leaves the registry with its duration, and an error with whether it is
/// recoverable and what to do next.
fn finished(result: ToolResult, started: Instant) -> ToolResult {
    let mut result = result.with_recovery();
    result.duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    result
}

impl Registry {
    /// [`resolve`], then, for a tool without a domain table, its input checked against the
    /// tool's own schema: a call that cannot work is refused with why before anyone is asked to
    /// approve it.
    fn resolve_checked(&self, name: &str, tool: &dyn Tool, input: Value) -> Result<Call, String> {
        let call = resolve(tool, input)?;
        let validator = lock_read(&self.inner.validators).get(name).cloned();
        if let Some(validator) = validator {
            let input = Value::Object(call.input.clone());
            let problems: Vec<String> = validator
                .iter_errors(&input)
                .take(3)
                .map(|error| {
                    let at = error.instance_path().to_string();
                    if at.is_empty() {
                        error.to_string()
                    } else {
                        format!("{at}: {error}")
                    }
                })
                .collect();
            if !problems.is_empty() {
                let fields = tool
                    .schema()
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
                    .filter(|f| !f.is_empty())
                    .map(|f| format!(" (its fields: {f})"))
                    .unwrap_or_default();
                return Err(format!(
                    "the input does not fit `{name}`'s schema{fields}: {}",
                    problems.join("; ")
                ));
            }
        }
        Ok(call)
    }
}

fn resolve(tool: &dyn Tool, input: Value) -> Result<Call, String> {
    match tool.domain() {
        Some(domain) => domain.resolve(input),
        None => match input {
            Value::Object(map) => Ok(Call {
                resource: map
                    .get("resource")
                    .and_then(Value::as_str)
                    .map(String::from),
                action: map.get("action").and_then(Value::as_str).map(String::from),
                input: map,
            }),
            Value::Null => Ok(Call {
                input: Map::new(),
                ..Default::default()
            }),
            other => Err(format!("{} takes a JSON object, got {other}", tool.name())),
        },
    }
}

/// The tool's facts; for a domain tool the approval need is the one its table declares for the
/// action, so it can be read off the schema and no tool can quietly loosen it per call (a tool
/// may raise it for one call, with `needs_approval`).
fn facts_of(tool: &dyn Tool, call: &Call) -> CallFacts {
    let mut facts = tool.facts(call);
    if let Some(domain) = tool.domain() {
        facts.approval = domain.approval_of(call);
    }
    if facts.needs_approval.is_some() {
        facts.approval = ApprovalNeed::Required;
    }
    if facts.summary.is_empty() {
        facts.summary = describe(tool.name(), call);
    }
    facts
}

/// The refusal of a call outside the caller's role: what was refused and what the role has.
fn role_refusal(scope: &ToolScope, what: &str, tool: &str) -> Refusal {
    Refusal::new(
        ErrorCode::RoleDenied,
        format!(
            "`{what}` is not among the tools of role `{}`, so it was not run (whatever is asked, \
             this role cannot call {}); this role's tools: {}",
            scope.role(),
            if scope.allows_tool(tool) {
                "that action"
            } else {
                "that tool"
            },
            scope.describe()
        ),
    )
}

fn describe(tool: &str, call: &Call) -> String {
    match (&call.resource, &call.action) {
        (Some(r), Some(a)) => format!("{tool} {r} {a}"),
        (None, Some(a)) => format!("{tool} {a}"),
        _ => tool.to_string(),
    }
}

/// `text` cut to at most `max` bytes on a character boundary, with `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Cuts text blocks so their total stays under `cap` bytes, saying so at the end.
fn cap_output(mut result: ToolResult, cap: usize) -> ToolResult {
    let total: usize = result
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Image { .. } => 0,
        })
        .sum();
    if total <= cap {
        return result;
    }
    let mut budget = cap;
    for block in &mut result.content {
        if let ContentBlock::Text { text } = block {
            if text.len() > budget {
                let mut end = budget;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
            }
            budget -= text.len();
        }
    }
    result.content.push(ContentBlock::Text {
        text: format!("[output truncated: {total} bytes, showing the first {cap}]"),
    });
    result
}

impl ToolContext {
    /// A context with a fresh call id and cancellation token, no session, and a deadline
    /// `timeout` from now.
    pub fn new(origin: Origin, timeout: std::time::Duration) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ToolContext {
            origin,
            session_id: None,
            call_id: format!("call-{}-{n}", std::process::id()),
            cancel: tokio_util::sync::CancellationToken::new(),
            deadline: Instant::now() + timeout,
            approver: None,
            level_cap: None,
            scope: None,
        }
    }

    pub fn with_session(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_cap_cuts_on_char_boundaries_and_says_so() {
        let r = cap_output(ToolResult::text("é".repeat(10)), 5);
        let text = r.text_content();
        assert!(
            text.starts_with("éé\n[output truncated: 20 bytes"),
            "{text}"
        );
        let small = cap_output(ToolResult::text("ok"), 5);
        assert_eq!(small.content.len(), 1);
    }
}
