//! The hook dispatcher the registry calls ([`osprey_tools::HookDispatcher`]), fed by hook apps.
//! Filters run in priority order (lower first; 0 means 10), each with a 500 ms deadline; a late,
//! failed or garbled filter is skipped and the chain goes on with the payload unchanged;
//! `handled: true` stops the chain, but only from an app that declares the hook in its manifest's
//! `overrides` (any other filter may rewrite the payload, never skip the built-in step). Three
//! consecutive failures of one app disable all of its hooks (a circuit breaker) until it is
//! registered again (after a restart); any success resets the count. Subscriptions to unknown hooks, or without their `hook:` permission, are refused at
//! registration. With no subscribers, [`AppHooks::has_subscribers`] is one read lock and a map
//! lookup: no allocation, no JSON.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_rpc::AppChannel;
use osprey_rpc::v1::hook_service_client::HookServiceClient;
use osprey_rpc::v1::{ActionRequest, FilterRequest, ListHooksRequest, hook_subscription};
use osprey_tools::{FilterOutcome, HookDispatcher};
use serde_json::Value;

use crate::manifest::{Capability, Manifest};
use crate::permissions;
use crate::{Error, Result};

/// Each filter or action call's deadline.
pub const HOOK_CALL_TIMEOUT: Duration = Duration::from_millis(500);
/// Consecutive failures after which an app's hooks are disabled.
pub const BREAKER_THRESHOLD: u32 = 3;
/// The priority a subscription with priority 0 gets.
pub const DEFAULT_PRIORITY: i32 = 10;
/// How long registration waits for `ListHooks`.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookKind {
    Filter,
    Action,
}

/// What registering an app's hooks did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registration {
    /// (hook, kind, priority) of each accepted subscription.
    pub accepted: Vec<(String, HookKind, i32)>,
    /// (hook, reason) of each refused one.
    pub refused: Vec<(String, String)>,
}

#[derive(Default)]
struct Breaker {
    failures: AtomicU32,
    open: AtomicBool,
}

impl Breaker {
    fn is_open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }
    fn succeed(&self) {
        self.failures.store(0, Ordering::Relaxed);
    }
    fn fail(&self, app_id: &str, hook: &str, why: &str) {
        let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(app = app_id, hook, failures, "hook call failed: {why}");
        if failures >= BREAKER_THRESHOLD && !self.open.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                app = app_id,
                "{failures} consecutive hook failures: hooks disabled"
            );
        }
    }
}

#[derive(Clone)]
struct Subscriber {
    app_id: Arc<str>,
    kind: HookKind,
    priority: i32,
    /// The manifest lists this hook in `overrides`: its `handled: true` may skip the built-in
    /// step. Any other filter may rewrite the payload, never stop the chain.
    may_override: bool,
    client: HookServiceClient<AppChannel>,
    breaker: Arc<Breaker>,
}

/// The apps' hook dispatcher. Cheap to clone; hand it to the registry with `set_hooks`.
#[derive(Clone)]
pub struct AppHooks {
    inner: Arc<Inner>,
}

struct Inner {
    /// Per hook, subscribers sorted by (priority, app id). Replaced whole on (de)registration so
    /// dispatch clones one `Arc` and holds no lock while calling out.
    table: RwLock<HashMap<String, Arc<[Subscriber]>>>,
    call_timeout: Duration,
}

impl Default for AppHooks {
    fn default() -> AppHooks {
        AppHooks::new(HOOK_CALL_TIMEOUT)
    }
}

impl std::fmt::Debug for AppHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppHooks").finish_non_exhaustive()
    }
}

impl AppHooks {
    pub fn new(call_timeout: Duration) -> AppHooks {
        AppHooks {
            inner: Arc::new(Inner {
                table: RwLock::new(HashMap::new()),
                call_timeout,
            }),
        }
    }

    /// Asks the app for its subscriptions and registers those its manifest permits, replacing
    /// any earlier registration of the same app (with a fresh breaker).
    pub async fn register(&self, manifest: &Manifest, channel: AppChannel) -> Result<Registration> {
        let app_id = manifest.id.as_str();
        let mut client = HookServiceClient::new(channel);
        let listed = tokio::time::timeout(LIST_TIMEOUT, client.list_hooks(ListHooksRequest {}))
            .await
            .map_err(|_| hooks_unavailable(app_id, "ListHooks timed out".into()))?
            .map_err(|status| hooks_unavailable(app_id, status.to_string()))?
            .into_inner()
            .hooks;
        let breaker = Arc::new(Breaker::default());
        let mut registration = Registration::default();
        let mut subscribers = Vec::new();
        for subscription in listed {
            let hook = subscription.hook.clone();
            let kind = match subscription.kind() {
                hook_subscription::Kind::Filter => HookKind::Filter,
                hook_subscription::Kind::Action => HookKind::Action,
                hook_subscription::Kind::Unspecified => {
                    registration
                        .refused
                        .push((hook, "no kind (filter or action)".into()));
                    continue;
                }
            };
            let refusal = if !manifest.provides.contains(&Capability::Hooks) {
                Some("the manifest does not provide `hooks`".to_owned())
            } else if let Some(why) = osprey_tools::hooks::unknown_hook(&hook) {
                Some(why)
            } else if !permissions::allows(&manifest.permissions, "hook", &hook) {
                Some(format!("needs the `hook:{hook}` permission"))
            } else {
                None
            };
            if let Some(reason) = refusal {
                tracing::warn!(app = app_id, hook = %hook, "hook subscription refused: {reason}");
                registration.refused.push((hook, reason));
                continue;
            }
            let priority = match subscription.priority {
                0 => DEFAULT_PRIORITY,
                other => other,
            };
            registration.accepted.push((hook.clone(), kind, priority));
            let may_override = manifest.overrides.contains(&hook);
            subscribers.push((
                hook,
                Subscriber {
                    app_id: Arc::from(app_id),
                    kind,
                    priority,
                    may_override,
                    client: client.clone(),
                    breaker: Arc::clone(&breaker),
                },
            ));
        }
        self.update(|table| {
            remove_app(table, app_id);
            for (hook, subscriber) in subscribers {
                let mut list: Vec<Subscriber> =
                    table.get(&hook).map(|l| l.to_vec()).unwrap_or_default();
                list.push(subscriber);
                list.sort_by(|a, b| (a.priority, &a.app_id).cmp(&(b.priority, &b.app_id)));
                table.insert(hook, list.into());
            }
        });
        Ok(registration)
    }

    /// Removes every subscription of `app_id` (the app stopped, was quarantined or uninstalled).
    pub fn deregister(&self, app_id: &str) {
        self.update(|table| remove_app(table, app_id));
    }

    /// Whether the app's breaker has opened (its hooks are skipped).
    pub fn is_disabled(&self, app_id: &str) -> bool {
        let table = self.inner.table.read().unwrap_or_else(|e| e.into_inner());
        table
            .values()
            .flat_map(|list| list.iter())
            .find(|s| &*s.app_id == app_id)
            .is_some_and(|s| s.breaker.is_open())
    }

    /// (app id, kind, priority) of each subscriber of `hook`, in dispatch order.
    pub fn subscribers(&self, hook: &str) -> Vec<(String, HookKind, i32)> {
        self.snapshot(hook)
            .iter()
            .map(|s| (s.app_id.to_string(), s.kind, s.priority))
            .collect()
    }

    fn update(&self, change: impl FnOnce(&mut HashMap<String, Arc<[Subscriber]>>)) {
        let mut table = self.inner.table.write().unwrap_or_else(|e| e.into_inner());
        change(&mut table);
    }

    fn snapshot(&self, hook: &str) -> Arc<[Subscriber]> {
        self.subscribed(hook).unwrap_or_else(|| Arc::from([]))
    }

    /// The subscribers of `hook`, without allocating when there are none.
    fn subscribed(&self, hook: &str) -> Option<Arc<[Subscriber]>> {
        let table = self.inner.table.read().unwrap_or_else(|e| e.into_inner());
        table.get(hook).cloned()
    }

    async fn filter(&self, hook: &str, mut payload: Value) -> FilterOutcome {
        let Some(subscribers) = self.subscribed(hook) else {
            return FilterOutcome {
                payload,
                handled: false,
            };
        };
        for subscriber in subscribers.iter() {
            if subscriber.kind != HookKind::Filter || subscriber.breaker.is_open() {
                continue;
            }
            let request = FilterRequest {
                hook: hook.to_owned(),
                payload_json: payload.to_string(),
            };
            let mut client = subscriber.client.clone();
            let answer =
                tokio::time::timeout(self.inner.call_timeout, client.apply_filter(request)).await;
            let response = match answer {
                Ok(Ok(response)) => response.into_inner(),
                Ok(Err(status)) => {
                    subscriber
                        .breaker
                        .fail(&subscriber.app_id, hook, &status.to_string());
                    continue;
                }
                Err(_) => {
                    subscriber
                        .breaker
                        .fail(&subscriber.app_id, hook, "deadline exceeded");
                    continue;
                }
            };
            if !response.payload_json.is_empty() {
                match serde_json::from_str(&response.payload_json) {
                    Ok(rewritten) => payload = rewritten,
                    Err(e) => {
                        subscriber.breaker.fail(
                            &subscriber.app_id,
                            hook,
                            &format!("payload is not JSON: {e}"),
                        );
                        continue;
                    }
                }
            }
            subscriber.breaker.succeed();
            if response.handled {
                if subscriber.may_override {
                    return FilterOutcome {
                        payload,
                        handled: true,
                    };
                }
                tracing::warn!(
                    app = &*subscriber.app_id,
                    hook,
                    "a filter answered handled without declaring the hook in `overrides`; \
                     the chain and the built-in step go on"
                );
            }
        }
        FilterOutcome {
            payload,
            handled: false,
        }
    }

    async fn action(&self, hook: &str, payload: Value) {
        let payload_json = payload.to_string();
        let subscribers = self.snapshot(hook);
        let calls = subscribers
            .iter()
            .filter(|s| s.kind == HookKind::Action && !s.breaker.is_open())
            .map(|subscriber| {
                let mut client = subscriber.client.clone();
                let request = ActionRequest {
                    hook: hook.to_owned(),
                    payload_json: payload_json.clone(),
                };
                async move {
                    match tokio::time::timeout(self.inner.call_timeout, client.do_action(request))
                        .await
                    {
                        Ok(Ok(_)) => subscriber.breaker.succeed(),
                        Ok(Err(status)) => {
                            subscriber
                                .breaker
                                .fail(&subscriber.app_id, hook, &status.to_string())
                        }
                        Err(_) => {
                            subscriber
                                .breaker
                                .fail(&subscriber.app_id, hook, "deadline exceeded")
                        }
                    }
                }
            });
        futures::future::join_all(calls).await;
    }
}

impl HookDispatcher for AppHooks {
    fn has_subscribers(&self, hook: &str) -> bool {
        let table = self.inner.table.read().unwrap_or_else(|e| e.into_inner());
        table
            .get(hook)
            .is_some_and(|list| list.iter().any(|s| !s.breaker.is_open()))
    }

    fn apply_filter<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, FilterOutcome> {
        Box::pin(self.filter(hook, payload))
    }

    fn do_action<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, ()> {
        Box::pin(self.action(hook, payload))
    }
}

fn remove_app(table: &mut HashMap<String, Arc<[Subscriber]>>, app_id: &str) {
    table.retain(|_, list| {
        if list.iter().any(|s| &*s.app_id == app_id) {
            *list = list
                .iter()
                .filter(|s| &*s.app_id != app_id)
                .cloned()
                .collect::<Vec<_>>()
                .into();
        }
        !list.is_empty()
    });
}

fn hooks_unavailable(app_id: &str, message: String) -> Error {
    Error::LaunchFailed {
        id: app_id.to_owned(),
        reason: "hooks_unavailable",
        message,
    }
}
