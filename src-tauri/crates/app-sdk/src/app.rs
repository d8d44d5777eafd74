//! The [`App`] builder and the serve loop.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use osprey_rpc::v1::channel_service_server::ChannelServiceServer;
use osprey_rpc::v1::comm_service_server::CommServiceServer;
use osprey_rpc::v1::gateway_service_server::GatewayServiceServer;
use osprey_rpc::v1::hook_service_server::HookServiceServer;
use osprey_rpc::v1::tool_service_server::ToolServiceServer;
use osprey_rpc::v1::ui_service_server::UiServiceServer;
use serde_json::Value;

use crate::channel::{Channel, ChannelServer};
use crate::comm::{CommDeclaration, CommTopics, Inbox};
use crate::gateway::{Events, GatewayHandler, GatewayServer};
use crate::hooks::{Filter, HookServer, Subscription};
use crate::tool::{Tool, ToolServer};
use crate::ui::{UiHandler, UiRequest, UiResponse, UiServer};
use crate::{Error, Result, SOCKET_ENV};

/// How long calls in flight may finish after SIGTERM. Osprey sends SIGKILL 2 s after SIGTERM.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);

/// An app: its tools and hook subscriptions. Build it, then [`App::run`] (from a plain `main`) or
/// [`App::serve`] (from inside a tokio runtime).
#[derive(Default)]
pub struct App {
    tools: Vec<Tool>,
    subscriptions: Vec<Subscription>,
    ui: Option<UiHandler>,
    gateway: Option<GatewayHandler>,
    comm: Option<CommDeclaration>,
    comm_topics: Option<Arc<dyn CommTopics>>,
    channels: Vec<Channel>,
}

impl App {
    pub fn new() -> App {
        App::default()
    }

    /// Serve `tool` (declare it as `tool:NAME` in the manifest).
    pub fn tool(mut self, tool: Tool) -> App {
        self.tools.push(tool);
        self
    }

    /// Subscribe a filter to `hook` (needs `hook:<hook>` in the manifest). Filters run lower
    /// `priority` first; 0 means the default, 10.
    pub fn filter<F, Fut>(mut self, hook: impl Into<String>, priority: i32, handler: F) -> App
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Filter> + Send + 'static,
    {
        self.subscriptions
            .push(Subscription::filter(hook.into(), priority, handler));
        self
    }

    /// Subscribe an action to `hook` (needs `hook:<hook>` in the manifest).
    pub fn action<F, Fut>(mut self, hook: impl Into<String>, handler: F) -> App
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.subscriptions
            .push(Subscription::action(hook.into(), handler));
        self
    }

    /// Handle the UI's `/api/*` requests (declare `ui` in the manifest; the static `ui/` files
    /// are served by Osprey).
    pub fn ui<F, Fut>(mut self, handler: F) -> App
    where
        F: Fn(UiRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = UiResponse> + Send + 'static,
    {
        self.ui = Some(std::sync::Arc::new(move |request| {
            Box::pin(handler(request))
        }));
        self
    }

    /// Serve model turns (declare `gateway` and a `network:` permission in the manifest). The
    /// handler sends the turn's events and hands `Events` back when it is done.
    pub fn gateway<F, Fut>(mut self, handler: F) -> App
    where
        F: Fn(osprey_rpc::v1::GatewayRequest, Events) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Events> + Send + 'static,
    {
        self.gateway = Some(std::sync::Arc::new(move |request, events| {
            Box::pin(handler(request, events))
        }));
        self
    }

    /// Be a comm app (declare `comm` and a `comm:` permission in the manifest). `incoming` runs
    /// once, from when the app starts serving, and delivers the messages that arrive from
    /// outside to the [`Inbox`]; `send` gets each message Osprey sends out and returns its id in
    /// the bridge, or why it could not be sent.
    pub fn comm<P, PFut, S, SFut>(mut self, incoming: P, send: S) -> App
    where
        P: FnOnce(Inbox) -> PFut + Send + 'static,
        PFut: Future<Output = ()> + Send + 'static,
        S: Fn(osprey_rpc::v1::CommSendRequest) -> SFut + Send + Sync + 'static,
        SFut: Future<Output = std::result::Result<String, String>> + Send + 'static,
    {
        self.comm = Some(CommDeclaration {
            producer: Box::new(move |inbox| Box::pin(incoming(inbox))),
            send: Arc::new(move |request| Box::pin(send(request))),
        });
        self
    }

    /// Carry agent-to-agent messages on topics (with [`App::comm`]): Osprey connects,
    /// registers its agent id and subscribes through `topics`. Without it the comm app answers
    /// the lifecycle calls UNIMPLEMENTED ("this bridge does not support topics").
    pub fn comm_topics(mut self, topics: impl CommTopics) -> App {
        self.comm_topics = Some(Arc::new(topics));
        self
    }

    /// Serve `channel` (declare it as `channel:NAME` and a `channel:` permission in the
    /// manifest).
    pub fn channel(mut self, channel: Channel) -> App {
        self.channels.push(channel);
        self
    }

    /// Starts a tokio runtime and [`App::serve`]s on it: the whole `main` of a typical app.
    pub fn run(self) -> Result<()> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?
            .block_on(self.serve())
    }

    /// Serves on the socket named by `OSPREY_APP_SOCK` until SIGTERM or SIGINT.
    pub async fn serve(self) -> Result<()> {
        let path = std::env::var_os(SOCKET_ENV)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .ok_or(Error::MissingSocketEnv)?;
        let shutdown = termination()?;
        self.serve_at(&path, shutdown).await
    }

    /// Serves on `path` until `shutdown` completes, then finishes the calls in flight and removes
    /// the socket.
    pub async fn serve_at(
        self,
        path: &Path,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<()> {
        if self.tools.is_empty()
            && self.subscriptions.is_empty()
            && self.ui.is_none()
            && self.gateway.is_none()
            && self.comm.is_none()
            && self.channels.is_empty()
        {
            return Err(Error::NothingToServe);
        }
        let settings = Arc::new(RwLock::new(Value::Object(Default::default())));
        let tools = (!self.tools.is_empty()).then(|| {
            ToolServiceServer::new(ToolServer {
                tools: self.tools,
                settings: Arc::clone(&settings),
            })
        });
        let hooks = (!self.subscriptions.is_empty()).then(|| {
            HookServiceServer::new(HookServer {
                subscriptions: self.subscriptions,
            })
        });
        let ui = self.ui.map(|handler| {
            UiServiceServer::new(UiServer {
                handler,
                settings: Arc::clone(&settings),
            })
        });
        let gateway = self.gateway.map(|handler| {
            GatewayServiceServer::new(GatewayServer {
                handler,
                settings: Arc::clone(&settings),
            })
        });
        // The producers run while the app serves and stop with it.
        let mut producers = Vec::new();
        let comm_topics = self.comm_topics;
        let comm = self.comm.map(|declaration| {
            let (server, producer) = declaration.start(Arc::clone(&settings), comm_topics);
            producers.push(producer);
            CommServiceServer::new(server)
        });
        let channels = (!self.channels.is_empty()).then(|| {
            let (server, tasks) = ChannelServer::start(self.channels, Arc::clone(&settings));
            producers.extend(tasks);
            ChannelServiceServer::new(server)
        });
        let _producers = AbortOnDrop(producers);
        let listener = osprey_rpc::bind(path)?;
        let (fired, shutdown_fired) = tokio::sync::oneshot::channel::<()>();
        let server = tonic::transport::Server::builder()
            .add_optional_service(tools)
            .add_optional_service(hooks)
            .add_optional_service(ui)
            .add_optional_service(gateway)
            .add_optional_service(comm)
            .add_optional_service(channels)
            .serve_with_incoming_shutdown(osprey_rpc::incoming(listener), async move {
                shutdown.await;
                let _ = fired.send(());
            });
        // A graceful HTTP/2 close waits for every client to acknowledge it; a client that never
        // does must not keep the app alive past Osprey's SIGKILL deadline, so the drain is bounded.
        let drain_limit = async {
            match shutdown_fired.await {
                Ok(()) => tokio::time::sleep(SHUTDOWN_GRACE).await,
                Err(_) => std::future::pending().await,
            }
        };
        let served = tokio::select! {
            served = server => served,
            () = drain_limit => Ok(()),
        };
        // Osprey removes it too; an app that exits cleanly leaves nothing behind itself.
        let _ = std::fs::remove_file(path);
        Ok(served?)
    }
}

/// Aborts the producer tasks when serving ends, however it ends.
struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// How often an app checks that the Osprey that started it is still there.
#[cfg(unix)]
const PARENT_CHECK: std::time::Duration = std::time::Duration::from_millis(500);

/// Completes on the first SIGTERM or SIGINT, or when the process that started the app is gone
/// (Osprey killed or crashed: the app was reparented), so no app outlives the Osprey that runs
/// it. The handlers are installed before serving starts, so a signal that arrives during
/// start-up is not lost.
#[cfg(unix)]
fn termination() -> Result<impl Future<Output = ()> + Send> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let parent = std::os::unix::process::parent_id();
    Ok(async move {
        let orphaned = async {
            loop {
                tokio::time::sleep(PARENT_CHECK).await;
                if std::os::unix::process::parent_id() != parent {
                    return;
                }
            }
        };
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
            () = orphaned => eprintln!("the Osprey that started this app is gone; shutting down"),
        }
    })
}
