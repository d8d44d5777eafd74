//! gRPC over Unix domain sockets: the app binds and serves, Osprey dials.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::{UnixListener, UnixStream};
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::{Error, Result};

/// Binds `path` for serving. A socket file left by an earlier run is removed first; anything else
/// at that path (a regular file, a symlink, a directory) is refused rather than deleted. The
/// socket is made owner-only (0600) before anyone can be told about it.
pub fn bind(path: &Path) -> Result<UnixListener> {
    let io_error = |context: &str, source: io::Error| Error::Io {
        context: format!("{context} {}", path.display()),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(|e| io_error("remove stale socket", e))?;
        }
        Ok(_) => {
            return Err(io_error(
                "refuse to replace",
                io::Error::new(io::ErrorKind::AlreadyExists, "not a socket"),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error("inspect", e)),
    }
    let listener = UnixListener::bind(path).map_err(|e| io_error("bind", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io_error("chmod 0600", e))?;
    Ok(listener)
}

/// The stream of accepted connections tonic's `serve_with_incoming` takes.
pub fn incoming(listener: UnixListener) -> UnixListenerStream {
    UnixListenerStream::new(listener)
}

/// Dials the app serving on `path`. The channel connects once, now; `connect_timeout` bounds it.
pub async fn connect(path: &Path, connect_timeout: Duration) -> Result<Channel> {
    connect_checked(path, None, connect_timeout).await
}

/// Like [`connect`], and when `expected_pid` is set, refuses a socket whose serving process (the
/// peer credentials of the connection) is not that pid: something else may have bound the path.
pub async fn connect_checked(
    path: &Path,
    expected_pid: Option<u32>,
    connect_timeout: Duration,
) -> Result<Channel> {
    let path: PathBuf = path.to_path_buf();
    // The authority is never used: every connection goes through the connector below.
    let endpoint =
        Endpoint::from_static("http://osprey-app.invalid").connect_timeout(connect_timeout);
    let connector_path = path.clone();
    let connector = tower::service_fn(move |_: Uri| {
        let path = connector_path.clone();
        async move {
            let stream = UnixStream::connect(&path).await?;
            if let Some(expected) = expected_pid {
                check_peer(&stream, expected)?;
            }
            Ok::<_, io::Error>(TokioIo::new(stream))
        }
    });
    match endpoint.connect_with_connector(connector).await {
        Ok(channel) => Ok(channel),
        Err(error) => {
            // Surface a peer mismatch as its own error rather than a generic transport failure.
            if let Some(expected) = expected_pid
                && let Ok(stream) = UnixStream::connect(&path).await
                && let Err(mismatch) = check_peer(&stream, expected)
                && mismatch.kind() == io::ErrorKind::PermissionDenied
            {
                return Err(Error::PeerMismatch {
                    path: path.display().to_string(),
                    expected,
                    actual: stream.peer_cred().ok().and_then(|cred| cred.pid()),
                });
            }
            Err(Error::Transport(error))
        }
    }
}

fn check_peer(stream: &UnixStream, expected: u32) -> io::Result<()> {
    let pid = stream.peer_cred()?.pid();
    if pid.and_then(|pid| u32::try_from(pid).ok()) == Some(expected) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("peer pid {pid:?} is not {expected}"),
        ))
    }
}
