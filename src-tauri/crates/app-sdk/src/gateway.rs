//! A gateway app (a model provider): the author's handler gets each turn's request and an
//! [`Events`] sender; the SDK streams what it sends and ends the stream with exactly one `done`
//! or `error` (an `error` if the handler returns without either).

use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use osprey_rpc::v1::gateway_event::Event;
use osprey_rpc::v1::gateway_service_server::GatewayService;
use osprey_rpc::v1::{
    ConfigureRequest, ConfigureResponse, GatewayDone, GatewayError, GatewayEvent, GatewayRequest,
    HealthCheckRequest, HealthCheckResponse, ToolCall,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::tool::{configure, serving};

/// Sends one turn's events to Osprey. Sends fail quietly once Osprey stopped listening
/// (the person cancelled); [`Events::is_closed`] tells a long generation to stop.
pub struct Events {
    sender: mpsc::Sender<Result<GatewayEvent, Status>>,
    finished: bool,
}

impl Events {
    async fn send(&mut self, event: Event) {
        if self.finished {
            return;
        }
        self.finished = matches!(event, Event::Done(_) | Event::Error(_));
        let _ = self
            .sender
            .send(Ok(GatewayEvent { event: Some(event) }))
            .await;
    }

    pub async fn text(&mut self, delta: impl Into<String>) {
        self.send(Event::Text(delta.into())).await;
    }

    pub async fn thinking(&mut self, delta: impl Into<String>) {
        self.send(Event::Thinking(delta.into())).await;
    }

    pub async fn tool_call(
        &mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: &Value,
    ) {
        self.send(Event::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            input_json: input.to_string(),
        }))
        .await;
    }

    /// Ends the turn.
    pub async fn done(&mut self, stop_reason: &str, input_tokens: u64, output_tokens: u64) {
        self.send(Event::Done(GatewayDone {
            stop_reason: stop_reason.into(),
            input_tokens,
            output_tokens,
        }))
        .await;
    }

    /// Ends the turn with an error (`rate_limited`, `auth`, `unavailable`, `bad_request`, ...).
    pub async fn error(&mut self, code: &str, message: impl Into<String>) {
        self.send(Event::Error(GatewayError {
            code: code.into(),
            message: message.into(),
        }))
        .await;
    }

    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

pub(crate) type GatewayHandler =
    Arc<dyn Fn(GatewayRequest, Events) -> BoxFuture<'static, Events> + Send + Sync>;

pub(crate) struct GatewayServer {
    pub(crate) handler: GatewayHandler,
    pub(crate) settings: Arc<RwLock<Value>>,
}

#[tonic::async_trait]
impl GatewayService for GatewayServer {
    type StreamStream = ReceiverStream<Result<GatewayEvent, Status>>;

    async fn stream(
        &self,
        request: Request<GatewayRequest>,
    ) -> Result<Response<Self::StreamStream>, Status> {
        let (sender, receiver) = mpsc::channel(64);
        let events = Events {
            sender,
            finished: false,
        };
        let turn = (self.handler)(request.into_inner(), events);
        tokio::spawn(async move {
            let mut events = turn.await;
            if !events.finished {
                events
                    .error(
                        "gateway_incomplete",
                        "the app ended the turn without `done`",
                    )
                    .await;
            }
        });
        Ok(Response::new(ReceiverStream::new(receiver)))
    }

    async fn health_check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(serving()))
    }

    async fn configure(
        &self,
        request: Request<ConfigureRequest>,
    ) -> Result<Response<ConfigureResponse>, Status> {
        Ok(Response::new(configure(
            &self.settings,
            request.into_inner(),
        )))
    }
}
