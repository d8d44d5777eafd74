//! Reaching a mail server: the name look-up, the clear-text rule, TCP, TLS, and a deadline on
//! each step. Errors name the server and say what to do: a timeout is `timeout`, a refused
//! connection or a name that does not resolve is `service_unavailable`, an untrusted
//! certificate or clear text off this machine is `permission_denied` with the steps.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::{MailAccount, MailServer, TlsMode};
use crate::error::{Error, Result, within};

/// One of an account's two servers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub account: &'a MailAccount,
    pub server: &'a MailServer,
    pub smtp: bool,
}

impl<'a> Target<'a> {
    pub fn imap(account: &'a MailAccount) -> Target<'a> {
        Target {
            account,
            server: &account.imap,
            smtp: false,
        }
    }

    pub fn smtp(account: &'a MailAccount) -> Target<'a> {
        Target {
            account,
            server: &account.smtp,
            smtp: true,
        }
    }

    pub fn host(&self) -> &'a str {
        self.server.host.trim()
    }

    pub fn port(&self) -> u16 {
        self.server.port_for(self.smtp)
    }

    /// `the IMAP server imap.example.com:993`.
    pub fn label(&self) -> String {
        format!(
            "the {} server {}:{}",
            if self.smtp { "SMTP" } else { "IMAP" },
            self.host(),
            self.port()
        )
    }
}

/// The server's addresses, after the clear-text rule: a `plain` connection only goes to a host
/// whose every address is a loopback address, unless the account allows insecure connections.
pub(crate) async fn resolve(target: Target<'_>, timeout: Duration) -> Result<Vec<SocketAddr>> {
    let (host, port) = (target.host(), target.port());
    let found = within(
        format!("looking up {}", target.label()),
        timeout,
        async {
            tokio::net::lookup_host((host, port)).await.map_err(|e| {
                Error::unavailable(
                    target.label(),
                    format!("the name {host} does not resolve ({e}); check `host` in the `os.mail` setting and the network"),
                )
            })
        },
    )
    .await?;
    let addresses: Vec<SocketAddr> = found.collect();
    if addresses.is_empty() {
        return Err(Error::unavailable(
            target.label(),
            format!("the name {host} has no addresses"),
        ));
    }
    let local = addresses
        .iter()
        .all(|a| a.ip().to_canonical().is_loopback());
    if target.server.tls == TlsMode::Plain && !local && !target.account.allow_insecure {
        return Err(Error::PermissionDenied {
            what: format!(
                "connecting to {} without TLS (the password would cross the network in clear text)",
                target.label()
            ),
            steps: format!(
                "set `tls` of the account {:?}'s {} server to \"tls\" or \"starttls\" in the \
                 `os.mail` setting; clear text is only used with servers on this machine, or \
                 when the account says \"allow_insecure\": true",
                target.account.name,
                if target.smtp { "smtp" } else { "imap" }
            ),
        });
    }
    Ok(addresses)
}

/// A TCP connection to the first address that answers (three tried at most).
pub(crate) async fn connect(
    target: Target<'_>,
    addresses: &[SocketAddr],
    timeout: Duration,
) -> Result<TcpStream> {
    let mut last = None;
    for address in addresses.iter().take(3) {
        let attempt = within(
            format!("connecting to {} ({address})", target.label()),
            timeout,
            async {
                TcpStream::connect(address).await.map_err(|e| {
                    let why = if e.kind() == io::ErrorKind::ConnectionRefused {
                        format!("nothing accepts connections at {address} (connection refused)")
                    } else {
                        format!("connecting to {address} failed: {e}")
                    };
                    Error::unavailable(
                        target.label(),
                        format!(
                            "{why}; check `host`, `port` and `tls` in the `os.mail` setting, and that the server is up"
                        ),
                    )
                })
            },
        )
        .await;
        match attempt {
            Ok(stream) => return Ok(stream),
            Err(err) => last = Some(err),
        }
    }
    Err(last.unwrap_or_else(|| Error::unavailable(target.label(), "no address to connect to")))
}

/// The TLS client configuration (see [`crate::tls`]): the system's trust store plus the
/// account's `ca_file` when it has one.
pub(crate) fn tls_config(account: &MailAccount) -> Result<Arc<rustls::ClientConfig>> {
    Ok(Arc::new(crate::tls::client_config(extra_roots(account)?)?))
}

/// The certificates of the account's `ca_file` (lettre is given them too: its rustls uses the
/// same ring provider).
pub(crate) fn extra_roots(account: &MailAccount) -> Result<Vec<CertificateDer<'static>>> {
    crate::tls::ca_file_roots(
        account.ca_file.as_deref(),
        &format!("the mail account {:?}", account.name),
    )
}

/// TLS over `tcp`, checking the certificate against the host name.
pub(crate) async fn handshake(
    target: Target<'_>,
    tcp: TcpStream,
    timeout: Duration,
) -> Result<TlsStream<TcpStream>> {
    let config = tls_config(target.account)?;
    let host = target.host().trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| Error::invalid(format!("{host} is not a valid TLS server name: {e}")))?;
    let connector = tokio_rustls::TlsConnector::from(config);
    within(
        format!("the TLS handshake with {}", target.label()),
        timeout,
        async {
            connector
                .connect(name, tcp)
                .await
                .map_err(|e| tls_error(target, e))
        },
    )
    .await
}

/// A failed handshake: an untrusted certificate says how to trust it; anything else is the
/// server not speaking TLS there.
pub(crate) fn tls_error(target: Target<'_>, error: impl std::fmt::Display) -> Error {
    let text = error.to_string();
    if text.contains("certificate") || text.contains("Certificate") {
        Error::PermissionDenied {
            what: format!("trusting the TLS certificate of {}", target.label()),
            steps: format!(
                "the certificate was refused ({text}). If the server uses a private certificate \
                 authority, set `ca_file` of the account {:?} in the `os.mail` setting to its PEM \
                 file; check that `host` is the name on the certificate",
                target.account.name
            ),
        }
    } else {
        Error::unavailable(
            target.label(),
            format!(
                "the TLS handshake failed ({text}); check `port` and `tls` (\"tls\" for a port \
                 that starts with TLS such as 993 or 465, \"starttls\" for 143 or 587)"
            ),
        )
    }
}

/// A mail connection, plain or TLS.
#[derive(Debug)]
pub(crate) enum MailStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for MailStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MailStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            MailStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for MailStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            MailStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            MailStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MailStream::Plain(s) => Pin::new(s).poll_flush(cx),
            MailStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MailStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            MailStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
