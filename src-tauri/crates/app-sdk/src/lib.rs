//! What an app author links to write an Osprey app in a few lines: declare tools and hook
//! subscriptions on an [`App`], then [`App::run`]. The SDK reads `OSPREY_APP_SOCK`, serves the app
//! protocol (`ToolService`, `HookService`, `UIService`, `GatewayService`, `CommService`,
//! `ChannelService`) on that Unix socket, answers health checks, keeps the
//! settings Osprey pushes with `Configure`, and on SIGTERM (or SIGINT) stops accepting calls,
//! finishes the ones in flight, removes the socket and returns.
//!
//! ```no_run
//! use osprey_app_sdk::{App, Output, Tool};
//! use serde_json::json;
//!
//! fn main() -> Result<(), osprey_app_sdk::Error> {
//!     App::new()
//!         .tool(Tool::new("greet", "Greets someone", json!({"type": "object"}))
//!             .run(|call| async move { Output::text(format!("hello {}", call.str("name").unwrap_or("you"))) }))
//!         .run()
//! }
//! ```
//!
//! This crate holds no Osprey policy (permissions, approval, supervision are Osprey's side) and
//! must not depend on any Osprey crate but `osprey-rpc`. Serving needs Unix sockets (the
//! Windows transport is not built yet).

mod app;
mod channel;
mod comm;
mod gateway;
mod hooks;
mod tool;
mod ui;

pub use app::{App, SHUTDOWN_GRACE};
pub use channel::{Channel, Feed};
pub use comm::{CommTopics, Inbox, message};
pub use gateway::Events;
pub use hooks::{Filter, HookKind};
/// The protocol's messages (`GatewayRequest`, ...), for handlers that need them.
pub use osprey_rpc::v1 as proto;
pub use tool::{Call, Output, Tool};
pub use ui::{UiRequest, UiResponse};

/// The environment variable naming the socket the app must serve on.
pub const SOCKET_ENV: &str = "OSPREY_APP_SOCK";

/// Why an app could not serve. `Debug` prints the same as `Display`, so a `main` returning
/// `Result<(), Error>` reports the stable code and reason rather than a struct dump.
#[derive(thiserror::Error)]
pub enum Error {
    /// The app was started without `OSPREY_APP_SOCK` (not by Osprey).
    #[error("missing_socket_env: {SOCKET_ENV} is not set; Osprey sets it when it launches an app")]
    MissingSocketEnv,
    /// The app declared nothing to serve.
    #[error(
        "nothing_to_serve: declare at least one tool, hook, UI, gateway, comm or channel handler"
    )]
    NothingToServe,
    /// Binding the socket failed.
    #[error(transparent)]
    Socket(#[from] osprey_rpc::Error),
    /// The gRPC server failed.
    #[error("transport: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// Starting the runtime or installing the signal handlers failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// A stable code for logs.
    pub fn code(&self) -> &'static str {
        match self {
            Error::MissingSocketEnv => "missing_socket_env",
            Error::NothingToServe => "nothing_to_serve",
            Error::Socket(inner) => inner.code(),
            Error::Transport(_) => "transport",
            Error::Io(_) => "io",
        }
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

pub type Result<T> = std::result::Result<T, Error>;
