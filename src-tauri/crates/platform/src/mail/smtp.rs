//! Sending over SMTP with lettre: implicit TLS, required STARTTLS (never a silent fall back to
//! clear text) or, to loopback, plain; the account's login; one connection per message. The
//! host is looked up here first so the clear-text rule sees the addresses, and a plain
//! connection goes to the address that was checked.

use std::time::Duration;

use lettre::transport::smtp::AsyncSmtpTransport;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncTransport as _, Tokio1Executor};

use super::message::Composed;
use super::net::{self, Target};
use super::{MailAccount, TlsMode};
use crate::error::{Error, Result, within};

/// Hands `email` to the account's SMTP server.
pub(crate) async fn send(
    account: &MailAccount,
    password: &str,
    email: &Composed,
    timeout: Duration,
) -> Result<()> {
    let target = Target::smtp(account);
    let transport = transport(target, password, timeout).await?;
    // lettre's timeout holds for each step; the whole conversation gets a few of them.
    let whole = timeout * 4 + Duration::from_secs((email.formatted.len() >> 20) as u64);
    within(
        format!("sending through {}", target.label()),
        whole,
        async {
            transport
                .send_raw(&email.envelope, &email.formatted)
                .await
                .map(drop)
                .map_err(|e| smtp_error(target, e, timeout))
        },
    )
    .await
}

/// Connects to the account's SMTP server and logs in as sending would, then says goodbye: a
/// check that sending will work, without a message.
pub(crate) async fn check(account: &MailAccount, password: &str, timeout: Duration) -> Result<()> {
    let target = Target::smtp(account);
    let transport = transport(target, password, timeout).await?;
    within(
        format!("logging in to {}", target.label()),
        timeout * 4,
        async {
            match transport.test_connection().await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Error::unavailable(
                    target.label(),
                    "it closed the connection after the login",
                )),
                Err(e) => Err(smtp_error(target, e, timeout)),
            }
        },
    )
    .await
}

/// A transport to the account's server: implicit TLS, required STARTTLS or (to the checked
/// loopback address) plain, with the account's login.
async fn transport(
    target: Target<'_>,
    password: &str,
    timeout: Duration,
) -> Result<AsyncSmtpTransport<Tokio1Executor>> {
    let account = target.account;
    let addresses = net::resolve(target, timeout).await?;
    let tls = || -> Result<TlsParameters> {
        let mut builder = TlsParameters::builder(target.host().to_string());
        for certificate in net::extra_roots(account)? {
            builder = builder.add_root_certificate(
                Certificate::from_der(certificate.to_vec())
                    .map_err(|e| Error::invalid(format!("the account's `ca_file`: {e}")))?,
            );
        }
        builder
            .build_rustls()
            .map_err(|e| Error::Failed(format!("setting up TLS failed: {e}")))
    };
    let (server, security) = match target.server.tls {
        TlsMode::Tls => (target.host().to_string(), Tls::Wrapper(tls()?)),
        TlsMode::Starttls => (target.host().to_string(), Tls::Required(tls()?)),
        // The address the clear-text rule checked, not a second look-up.
        TlsMode::Plain => (addresses[0].ip().to_string(), Tls::None),
    };
    Ok(
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(server)
            .port(target.port())
            .tls(security)
            .credentials(Credentials::new(
                account.login().to_string(),
                password.to_string(),
            ))
            .timeout(Some(timeout))
            .build(),
    )
}

/// An SMTP failure as the crate's error.
fn smtp_error(
    target: Target<'_>,
    error: lettre::transport::smtp::Error,
    timeout: Duration,
) -> Error {
    let label = target.label();
    if error.is_timeout() {
        return Error::Timeout {
            what: format!("a step of sending through {label}"),
            after: timeout,
        };
    }
    // An implicit TLS connection reports a refused certificate as a connection error.
    let text = detail(&error);
    if error.is_tls() || text.to_ascii_lowercase().contains("certificate") {
        return net::tls_error(target, text);
    }
    // The server named no login it takes here: most take one only after STARTTLS.
    if error.is_client() && text.contains("authentication mechanism") {
        return Error::PermissionDenied {
            what: format!(
                "logging in to {label} as {:?} (it offers no way to log in on this connection)",
                target.account.login()
            ),
            steps: format!(
                "most servers take a login only over TLS: set `tls` of the account {:?}'s smtp \
                 server to \"starttls\" (ports 587 and 25) or \"tls\" (port 465) in the `os.mail` \
                 setting",
                target.account.name
            ),
        };
    }
    if let Some(code) = error.status() {
        let code = code.to_string();
        let text = detail(&error);
        return match code.as_str() {
            "535" | "534" | "530" | "538" => Error::PermissionDenied {
                what: format!(
                    "logging in to {label} as {:?} ({code}: {text})",
                    target.account.login()
                ),
                steps: format!(
                    "check `username` (or `email`) of the account {:?} in the `os.mail` setting \
                     and store the right password with `osprey os mail-password {}`; providers \
                     with two-step sign-in want an app password",
                    target.account.name, target.account.name
                ),
            },
            c if c.starts_with('4') => Error::unavailable(
                label,
                format!("it refused for now ({code}: {text}); try again later"),
            ),
            _ => Error::Failed(format!("{label} refused the message ({code}: {text})")),
        };
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            let why = match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    "nothing accepts connections there (connection refused)".to_string()
                }
                _ => format!("the connection failed: {io}"),
            };
            return Error::unavailable(
                label,
                format!(
                    "{why}; check `host`, `port` and `tls` in the `os.mail` setting, and that the server is up"
                ),
            );
        }
        source = err.source();
    }
    Error::Failed(format!(
        "sending through {label} failed: {}",
        detail(&error)
    ))
}

/// The error with its causes, on one line.
fn detail(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(err) = source {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = err.source();
    }
    parts.join(": ")
}
