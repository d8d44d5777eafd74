//! Hook points the registry calls, behind a trait so the app platform can plug its dispatcher in
//! without this crate knowing about apps. With no subscribers a hook costs one check and no JSON.

use futures::future::BoxFuture;
use serde_json::Value;

/// The filter run on every call before the security layers; may rewrite the input or handle the
/// call itself (payload `{tool, resource, action, input, origin, session_id}`).
pub const TOOL_PRE_EXECUTE: &str = "tool.pre_execute";
/// The filter run on every result; may rewrite it (payload adds `result`).
pub const TOOL_POST_EXECUTE: &str = "tool.post_execute";

/// What a filter chain returned.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterOutcome {
    /// The payload after every filter ran.
    pub payload: Value,
    /// A filter handled the call: the built-in step is skipped. For `tool.pre_execute` the
    /// payload's `result` holds the tool result.
    pub handled: bool,
}

/// Dispatches filters and actions to subscribers (the app platform's hook apps).
pub trait HookDispatcher: Send + Sync {
    /// Must be cheap (no allocation, no JSON): the registry checks it on every call.
    fn has_subscribers(&self, hook: &str) -> bool;
    fn apply_filter<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, FilterOutcome>;
    fn do_action<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, ()>;
}

/// The dispatcher with no subscribers.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl HookDispatcher for NoHooks {
    fn has_subscribers(&self, _hook: &str) -> bool {
        false
    }
    fn apply_filter<'a>(&'a self, _hook: &'a str, payload: Value) -> BoxFuture<'a, FilterOutcome> {
        Box::pin(async move {
            FilterOutcome {
                payload,
                handled: false,
            }
        })
    }
    fn do_action<'a>(&'a self, _hook: &'a str, _payload: Value) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}
