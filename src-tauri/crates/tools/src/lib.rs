//! Osprey's tool layer: the [`Tool`] and [`DomainTool`] traits, the [`Registry`] that is the
//! single choke point every call passes (name resolution, validation, hooks, origin rules, the
//! approval policy, the unconditional safeguard, execution with a deadline, audit), the JSON
//! Schema builder for domain tables, tool governance ([`governance`]), and the built-in `file`,
//! `shell`, `exec` and `web` tools.
//!
//! It must not know about Tauri, the agent loop or the app platform: hooks arrive through the
//! [`HookDispatcher`] trait and approvals through the [`Approver`] trait.

pub mod audit;
pub mod call;
pub mod correction;
pub mod domain;
pub mod exec;
pub mod file;
pub mod governance;
pub mod hooks;
pub mod registry;
pub mod scope;
pub mod security;
pub mod shell;
pub mod spec;
pub mod tool;
pub mod web;

pub use audit::AuditSink;
pub use call::{ApprovalNeed, Call, CallFacts};
pub use domain::{Domain, FieldType};
pub use exec::ExecTool;
pub use governance::{BreakerConfig, DeniedPaths, Governance, GovernanceConfig, Quota};
pub use hooks::{FilterOutcome, HookDispatcher, NoHooks};
pub use registry::{CheckOutcome, Registry, RegistryChange, RegistryConfig, WeakRegistry};
pub use scope::ToolScope;
pub use security::Refusal;
pub use security::origin::OriginRules;
pub use security::paths::PathGuard;
pub use security::policy::{Approver, AskMode, FixedApprover, Level, Policy, PolicyConfig};
pub use security::safeguard::Safeguard;
pub use spec::ToolSpec;
pub use tool::{DetailsFuture, DomainTool, Tool, ToolContext};
