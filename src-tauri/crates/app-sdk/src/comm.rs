//! A comm app (a bridge people reach the agent through: mail, a chat network). The author gives
//! two things: a task that delivers incoming messages to an [`Inbox`] (started once when the app
//! starts serving), and a send handler for what Osprey sends out. The SDK queues delivered
//! messages (bounded, so a slow Osprey slows the producer instead of growing memory) and streams
//! them on `CommService.Receive`. When Osprey reconnects (it restarted, or the stream broke) the
//! new stream takes over the queue; a message whose hand-over failed is sent again first.
//!
//! A bridge that carries agent-to-agent messages on topics also implements [`CommTopics`] and
//! gives it to [`crate::App::comm_topics`]: Osprey then connects, registers its agent id,
//! subscribes and unsubscribes through it. Without one the lifecycle RPCs answer UNIMPLEMENTED,
//! which Osprey reports as "this bridge does not support topics"; plain messages still work.

use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use osprey_rpc::v1::comm_service_server::CommService;
use osprey_rpc::v1::{
    CommConnectRequest, CommConnectResponse, CommDeregisterRequest, CommDeregisterResponse,
    CommDisconnectRequest, CommDisconnectResponse, CommListTopicsRequest, CommListTopicsResponse,
    CommMessage, CommReceiveRequest, CommRegisterRequest, CommRegisterResponse, CommSendRequest,
    CommSendResponse, CommSubscribeRequest, CommSubscribeResponse, CommTopic,
    CommUnsubscribeRequest, CommUnsubscribeResponse, ConfigureRequest, ConfigureResponse,
    HealthCheckRequest, HealthCheckResponse,
};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::tool::{configure, serving};

/// How many delivered messages wait for Osprey before [`Inbox::deliver`] waits.
pub(crate) const QUEUE_CAPACITY: usize = 256;

/// Where the author's task delivers incoming messages.
#[derive(Clone)]
pub struct Inbox {
    sender: mpsc::Sender<CommMessage>,
}

impl Inbox {
    /// Queues `message` for Osprey, waiting while the queue is full. Fills in `id` (when empty)
    /// and `sent_at_ms` (when 0). False once the app stops serving.
    pub async fn deliver(&self, mut message: CommMessage) -> bool {
        if message.id.is_empty() {
            message.id = next_id();
        }
        if message.sent_at_ms == 0 {
            message.sent_at_ms = now_ms();
        }
        self.sender.send(message).await.is_ok()
    }
}

/// A message in `conversation_id` from `sender`, to hand to [`Inbox::deliver`].
pub fn message(
    conversation_id: impl Into<String>,
    sender: impl Into<String>,
    text: impl Into<String>,
) -> CommMessage {
    CommMessage {
        conversation_id: conversation_id.into(),
        sender: sender.into(),
        text: text.into(),
        ..CommMessage::default()
    }
}

/// The agent-to-agent side of a comm app: connection to its network, the agent's registration
/// and topic subscriptions. Each method returns why it failed as a message for the person.
/// Messages published on a subscribed topic are delivered to the [`Inbox`] with `topic`,
/// `message_type` and `payload_json` set, like any message.
pub trait CommTopics: Send + Sync + 'static {
    /// Reach the network; returns whether connected and a detail (what, or why not).
    fn connect(&self) -> BoxFuture<'_, Result<(bool, String), String>>;
    /// Leave the network (Osprey is stopping the app).
    fn disconnect(&self) -> BoxFuture<'_, Result<(), String>>;
    /// Make `agent_id` reachable; returns the id as registered (empty: as asked).
    fn register(
        &self,
        agent_id: String,
        display_name: String,
    ) -> BoxFuture<'_, Result<String, String>>;
    fn deregister(&self, agent_id: String) -> BoxFuture<'_, Result<(), String>>;
    fn subscribe(&self, topic: String) -> BoxFuture<'_, Result<(), String>>;
    fn unsubscribe(&self, topic: String) -> BoxFuture<'_, Result<(), String>>;
    /// The topics on offer.
    fn topics(&self) -> BoxFuture<'_, Result<Vec<CommTopic>, String>>;
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

/// A process-unique id: the time and a counter.
pub(crate) fn next_id() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", now_ms())
}

/// A queue one stream at a time drains: the item a broken stream could not hand over is kept
/// and goes first on the next stream.
pub(crate) struct Queue<T> {
    state: tokio::sync::Mutex<(mpsc::Receiver<T>, Option<T>)>,
    /// The newest stream's number: an older stream still draining stops when it changes.
    newest: watch::Sender<u64>,
}

impl<T: Send + 'static> Queue<T> {
    pub(crate) fn new(capacity: usize) -> (mpsc::Sender<T>, Arc<Queue<T>>) {
        let (sender, receiver) = mpsc::channel(capacity);
        let queue = Queue {
            state: tokio::sync::Mutex::new((receiver, None)),
            newest: watch::channel(0).0,
        };
        (sender, Arc::new(queue))
    }

    /// A stream of the queue's items, taking over from any earlier one.
    pub(crate) fn stream(self: &Arc<Self>) -> ReceiverStream<Result<T, Status>> {
        // Capacity 1: an item handed over to a stream Osprey then drops is lost (the protocol
        // has no acknowledgements), so hand over as few as possible ahead of Osprey's reads.
        let (sender, receiver) = mpsc::channel(1);
        let mut newest = self.newest.subscribe();
        let mine = {
            let mut number = 0;
            self.newest.send_modify(|current| {
                *current += 1;
                number = *current;
            });
            number
        };
        let queue = Arc::clone(self);
        tokio::spawn(async move {
            let superseded = async move {
                while newest.changed().await.is_ok() {
                    if *newest.borrow() != mine {
                        return;
                    }
                }
                std::future::pending::<()>().await;
            };
            tokio::pin!(superseded);
            let mut state = tokio::select! {
                state = queue.state.lock() => state,
                () = &mut superseded => return,
            };
            let (receiver, held) = &mut *state;
            loop {
                let item = match held.take() {
                    Some(item) => item,
                    None => tokio::select! {
                        item = receiver.recv() => match item {
                            Some(item) => item,
                            None => return,
                        },
                        () = sender.closed() => return,
                        () = &mut superseded => return,
                    },
                };
                // Reserve first, so an item is never lost to a stream that went away or was
                // replaced while waiting for room.
                let permit = tokio::select! {
                    permit = sender.reserve() => permit.ok(),
                    () = &mut superseded => None,
                };
                match permit {
                    Some(permit) => permit.send(Ok(item)),
                    None => {
                        *held = Some(item);
                        return;
                    }
                }
            }
        });
        ReceiverStream::new(receiver)
    }
}

pub(crate) type SendHandler =
    Arc<dyn Fn(CommSendRequest) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;
pub(crate) type Producer = Box<dyn FnOnce(Inbox) -> BoxFuture<'static, ()> + Send>;

/// What `App::comm` declared, until serving starts.
pub(crate) struct CommDeclaration {
    pub(crate) producer: Producer,
    pub(crate) send: SendHandler,
}

impl CommDeclaration {
    /// Starts the producer and returns the service.
    pub(crate) fn start(
        self,
        settings: Arc<RwLock<Value>>,
        topics: Option<Arc<dyn CommTopics>>,
    ) -> (CommServer, tokio::task::JoinHandle<()>) {
        let (sender, queue) = Queue::new(QUEUE_CAPACITY);
        let producer = tokio::spawn((self.producer)(Inbox { sender }));
        let server = CommServer {
            queue,
            send: self.send,
            topics,
            settings,
        };
        (server, producer)
    }
}

pub(crate) struct CommServer {
    queue: Arc<Queue<CommMessage>>,
    send: SendHandler,
    topics: Option<Arc<dyn CommTopics>>,
    settings: Arc<RwLock<Value>>,
}

impl CommServer {
    fn topics(&self) -> Result<&Arc<dyn CommTopics>, Status> {
        self.topics
            .as_ref()
            .ok_or_else(|| Status::unimplemented("this bridge does not support topics"))
    }
}

fn refused(reason: String) -> Status {
    Status::failed_precondition(reason)
}

#[tonic::async_trait]
impl CommService for CommServer {
    type ReceiveStream = ReceiverStream<Result<CommMessage, Status>>;

    async fn receive(
        &self,
        _: Request<CommReceiveRequest>,
    ) -> Result<Response<Self::ReceiveStream>, Status> {
        Ok(Response::new(self.queue.stream()))
    }

    async fn send(
        &self,
        request: Request<CommSendRequest>,
    ) -> Result<Response<CommSendResponse>, Status> {
        match (self.send)(request.into_inner()).await {
            Ok(id) => Ok(Response::new(CommSendResponse { id })),
            Err(reason) => Err(Status::unavailable(reason)),
        }
    }

    async fn connect_network(
        &self,
        _: Request<CommConnectRequest>,
    ) -> Result<Response<CommConnectResponse>, Status> {
        let (connected, detail) = self.topics()?.connect().await.map_err(refused)?;
        Ok(Response::new(CommConnectResponse { connected, detail }))
    }

    async fn disconnect_network(
        &self,
        _: Request<CommDisconnectRequest>,
    ) -> Result<Response<CommDisconnectResponse>, Status> {
        self.topics()?.disconnect().await.map_err(refused)?;
        Ok(Response::new(CommDisconnectResponse {}))
    }

    async fn register(
        &self,
        request: Request<CommRegisterRequest>,
    ) -> Result<Response<CommRegisterResponse>, Status> {
        let request = request.into_inner();
        let agent_id = self
            .topics()?
            .register(request.agent_id, request.display_name)
            .await
            .map_err(refused)?;
        Ok(Response::new(CommRegisterResponse { agent_id }))
    }

    async fn deregister(
        &self,
        request: Request<CommDeregisterRequest>,
    ) -> Result<Response<CommDeregisterResponse>, Status> {
        let agent_id = request.into_inner().agent_id;
        self.topics()?.deregister(agent_id).await.map_err(refused)?;
        Ok(Response::new(CommDeregisterResponse {}))
    }

    async fn subscribe(
        &self,
        request: Request<CommSubscribeRequest>,
    ) -> Result<Response<CommSubscribeResponse>, Status> {
        let topic = request.into_inner().topic;
        self.topics()?.subscribe(topic).await.map_err(refused)?;
        Ok(Response::new(CommSubscribeResponse {}))
    }

    async fn unsubscribe(
        &self,
        request: Request<CommUnsubscribeRequest>,
    ) -> Result<Response<CommUnsubscribeResponse>, Status> {
        let topic = request.into_inner().topic;
        self.topics()?.unsubscribe(topic).await.map_err(refused)?;
        Ok(Response::new(CommUnsubscribeResponse {}))
    }

    async fn list_topics(
        &self,
        _: Request<CommListTopicsRequest>,
    ) -> Result<Response<CommListTopicsResponse>, Status> {
        let topics = self.topics()?.topics().await.map_err(refused)?;
        Ok(Response::new(CommListTopicsResponse { topics }))
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
