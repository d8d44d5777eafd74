//! A channel app: named streams of events the agent can listen to (a feed, a device's
//! notifications), each declared as `channel:NAME` in the manifest. Per channel the author gives
//! a task that publishes events to a [`Feed`] (started once when the app starts serving) and,
//! for channels that accept writes, a send handler. Queueing and reconnection work as for comm
//! apps (see `comm.rs`).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use osprey_rpc::v1::channel_service_server::ChannelService;
use osprey_rpc::v1::{
    ChannelEvent, ChannelReceiveRequest, ChannelSendRequest, ChannelSendResponse, ConfigureRequest,
    ConfigureResponse, HealthCheckRequest, HealthCheckResponse,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::comm::{QUEUE_CAPACITY, Queue, next_id, now_ms};
use crate::tool::{configure, serving};

/// Where a channel's task publishes its events.
#[derive(Clone)]
pub struct Feed {
    channel: String,
    sender: mpsc::Sender<ChannelEvent>,
}

impl Feed {
    /// Queues an event of `kind` ("message", "alert", ...) with `text` and optional JSON data,
    /// waiting while the queue is full. False once the app stops serving.
    pub async fn publish(&self, kind: &str, text: impl Into<String>, data: Option<Value>) -> bool {
        let event = ChannelEvent {
            channel: self.channel.clone(),
            id: next_id(),
            kind: kind.to_string(),
            text: text.into(),
            data_json: data.map(|d| d.to_string()).unwrap_or_default(),
            at_ms: now_ms(),
            ..ChannelEvent::default()
        };
        self.sender.send(event).await.is_ok()
    }

    /// Queues a whole event (a message with its author, actions, thread), waiting while the
    /// queue is full. Fills in `channel`, and `id` and `at_ms` when empty. False once the app
    /// stops serving.
    pub async fn publish_event(&self, mut event: ChannelEvent) -> bool {
        event.channel = self.channel.clone();
        if event.id.is_empty() {
            event.id = next_id();
        }
        if event.at_ms == 0 {
            event.at_ms = now_ms();
        }
        self.sender.send(event).await.is_ok()
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.channel
    }
}

type Producer = Box<dyn FnOnce(Feed) -> BoxFuture<'static, ()> + Send>;
type SendHandler =
    Arc<dyn Fn(ChannelSendRequest) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// One channel an app serves: its name (declared as `channel:NAME`), its event source and,
/// optionally, what a write to it does.
pub struct Channel {
    pub(crate) name: String,
    producer: Producer,
    send: Option<SendHandler>,
}

impl Channel {
    /// `producer` runs once, from when the app starts serving; it publishes to the [`Feed`].
    pub fn new<F, Fut>(name: impl Into<String>, producer: F) -> Channel
    where
        F: FnOnce(Feed) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Channel {
            name: name.into(),
            producer: Box::new(move |feed| Box::pin(producer(feed))),
            send: None,
        }
    }

    /// Accept writes: `handler` gets each `Send` and returns the new event's id, or why it
    /// failed. Without one, writes are refused as `unimplemented`.
    pub fn on_send<F, Fut>(mut self, handler: F) -> Channel
    where
        F: Fn(ChannelSendRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        self.send = Some(Arc::new(move |request| Box::pin(handler(request))));
        self
    }
}

struct Served {
    queue: Arc<Queue<ChannelEvent>>,
    send: Option<SendHandler>,
}

pub(crate) struct ChannelServer {
    channels: HashMap<String, Served>,
    settings: Arc<RwLock<Value>>,
}

impl ChannelServer {
    /// Starts every channel's producer and returns the service and the producers' tasks.
    pub(crate) fn start(
        channels: Vec<Channel>,
        settings: Arc<RwLock<Value>>,
    ) -> (ChannelServer, Vec<tokio::task::JoinHandle<()>>) {
        let mut served = HashMap::new();
        let mut tasks = Vec::new();
        for channel in channels {
            let (sender, queue) = Queue::new(QUEUE_CAPACITY);
            let feed = Feed {
                channel: channel.name.clone(),
                sender,
            };
            tasks.push(tokio::spawn((channel.producer)(feed)));
            served.insert(
                channel.name,
                Served {
                    queue,
                    send: channel.send,
                },
            );
        }
        let server = ChannelServer {
            channels: served,
            settings,
        };
        (server, tasks)
    }

    fn served(&self, name: &str) -> Result<&Served, Status> {
        self.channels
            .get(name)
            .ok_or_else(|| Status::not_found(format!("this app serves no channel `{name}`")))
    }
}

#[tonic::async_trait]
impl ChannelService for ChannelServer {
    type ReceiveStream = ReceiverStream<Result<ChannelEvent, Status>>;

    async fn receive(
        &self,
        request: Request<ChannelReceiveRequest>,
    ) -> Result<Response<Self::ReceiveStream>, Status> {
        let served = self.served(&request.get_ref().channel)?;
        Ok(Response::new(served.queue.stream()))
    }

    async fn send(
        &self,
        request: Request<ChannelSendRequest>,
    ) -> Result<Response<ChannelSendResponse>, Status> {
        let request = request.into_inner();
        let served = self.served(&request.channel)?;
        let Some(handler) = &served.send else {
            return Err(Status::unimplemented(format!(
                "the channel `{}` does not accept writes",
                request.channel
            )));
        };
        match handler(request).await {
            Ok(id) => Ok(Response::new(ChannelSendResponse { id })),
            Err(reason) => Err(Status::unavailable(reason)),
        }
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
