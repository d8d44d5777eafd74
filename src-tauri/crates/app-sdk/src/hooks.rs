//! Hook subscriptions: filters and actions, and the `HookService` that serves them.

use std::sync::Arc;

use futures::future::BoxFuture;
use osprey_rpc::v1::hook_service_server::HookService;
use osprey_rpc::v1::{
    ActionRequest, ActionResponse, FilterRequest, FilterResponse, HealthCheckRequest,
    HealthCheckResponse, HookSubscription, ListHooksRequest, ListHooksResponse, hook_subscription,
};
use serde_json::Value;
use tonic::{Request, Response, Status};

use crate::tool::serving;

/// What a filter decided.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// Pass the payload on as it came.
    Unchanged,
    /// Pass this payload on instead.
    Replace(Value),
    /// Stop the chain and skip the built-in step, with this payload (for `tool.pre_execute` its
    /// `result` is the tool result).
    Handled(Value),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookKind {
    Filter,
    Action,
}

type FilterHandler = Arc<dyn Fn(Value) -> BoxFuture<'static, Filter> + Send + Sync>;
type ActionHandler = Arc<dyn Fn(Value) -> BoxFuture<'static, ()> + Send + Sync>;

pub(crate) enum HookHandler {
    Filter(FilterHandler),
    Action(ActionHandler),
}

pub(crate) struct Subscription {
    pub(crate) hook: String,
    pub(crate) priority: i32,
    pub(crate) handler: HookHandler,
}

impl Subscription {
    pub(crate) fn filter<F, Fut>(hook: String, priority: i32, handler: F) -> Subscription
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Filter> + Send + 'static,
    {
        Subscription {
            hook,
            priority,
            handler: HookHandler::Filter(Arc::new(move |payload| Box::pin(handler(payload)))),
        }
    }

    pub(crate) fn action<F, Fut>(hook: String, handler: F) -> Subscription
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Subscription {
            hook,
            priority: 0,
            handler: HookHandler::Action(Arc::new(move |payload| Box::pin(handler(payload)))),
        }
    }

    fn kind(&self) -> HookKind {
        match self.handler {
            HookHandler::Filter(_) => HookKind::Filter,
            HookHandler::Action(_) => HookKind::Action,
        }
    }
}

pub(crate) struct HookServer {
    pub(crate) subscriptions: Vec<Subscription>,
}

impl HookServer {
    fn find(&self, hook: &str, kind: HookKind) -> Option<&Subscription> {
        self.subscriptions
            .iter()
            .find(|s| s.hook == hook && s.kind() == kind)
    }
}

#[allow(clippy::result_large_err)] // tonic::Status is what every handler returns
fn parse(payload_json: &str) -> Result<Value, Status> {
    serde_json::from_str(payload_json)
        .map_err(|e| Status::invalid_argument(format!("payload is not JSON: {e}")))
}

#[tonic::async_trait]
impl HookService for HookServer {
    async fn apply_filter(
        &self,
        request: Request<FilterRequest>,
    ) -> Result<Response<FilterResponse>, Status> {
        let request = request.into_inner();
        let Some(Subscription {
            handler: HookHandler::Filter(handler),
            ..
        }) = self.find(&request.hook, HookKind::Filter)
        else {
            return Err(Status::not_found(format!(
                "no filter for `{}`",
                request.hook
            )));
        };
        let response = match handler(parse(&request.payload_json)?).await {
            Filter::Unchanged => FilterResponse::default(),
            Filter::Replace(payload) => FilterResponse {
                payload_json: payload.to_string(),
                handled: false,
            },
            Filter::Handled(payload) => FilterResponse {
                payload_json: payload.to_string(),
                handled: true,
            },
        };
        Ok(Response::new(response))
    }

    async fn do_action(
        &self,
        request: Request<ActionRequest>,
    ) -> Result<Response<ActionResponse>, Status> {
        let request = request.into_inner();
        let Some(Subscription {
            handler: HookHandler::Action(handler),
            ..
        }) = self.find(&request.hook, HookKind::Action)
        else {
            return Err(Status::not_found(format!(
                "no action for `{}`",
                request.hook
            )));
        };
        handler(parse(&request.payload_json)?).await;
        Ok(Response::new(ActionResponse {}))
    }

    async fn list_hooks(
        &self,
        _: Request<ListHooksRequest>,
    ) -> Result<Response<ListHooksResponse>, Status> {
        let hooks = self
            .subscriptions
            .iter()
            .map(|s| HookSubscription {
                hook: s.hook.clone(),
                kind: match s.kind() {
                    HookKind::Filter => hook_subscription::Kind::Filter,
                    HookKind::Action => hook_subscription::Kind::Action,
                } as i32,
                priority: s.priority,
            })
            .collect();
        Ok(Response::new(ListHooksResponse { hooks }))
    }

    async fn health_check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(serving()))
    }
}
