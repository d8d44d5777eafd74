//! The app protocol's generated code (tonic + prost from `/proto`, compiled with `protox` at build
//! time, so no system `protoc` is needed) and the Unix-socket helpers both sides use: binding an
//! app's socket, serving on it, and dialing it from Osprey with an optional peer-pid check.
//! Schema and transport only: no Osprey policy (permissions, supervision) lives here, and this
//! crate must not depend on any other Osprey crate.

// Windows has no tokio Unix sockets; a named-pipe transport would go beside this module.
#[cfg(unix)]
pub mod unix;

pub mod inspect;
pub use inspect::{AppChannel, Traffic};

/// `osprey.app.v1`: messages, `*_client` and `*_server` modules for every service.
#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("osprey.app.v1");
}

#[cfg(unix)]
pub use unix::{bind, connect, connect_checked, incoming};

/// What can go wrong setting up a connection. Call failures themselves are `tonic::Status`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding, connecting or inspecting a socket failed.
    #[error("socket_io: {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The process on the other end of the socket is not the one Osprey started.
    #[error("peer_mismatch: socket {path} is served by pid {actual:?}, expected {expected}")]
    PeerMismatch {
        path: String,
        expected: u32,
        actual: Option<i32>,
    },
    /// tonic could not set up the HTTP/2 channel.
    #[error("transport: {0}")]
    Transport(#[from] tonic::transport::Error),
}

impl Error {
    /// A stable code for logs and the UI.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Io { .. } => "socket_io",
            Error::PeerMismatch { .. } => "peer_mismatch",
            Error::Transport(_) => "transport",
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
