//! The navigation policy's enforcement point for the managed profile: a forward proxy on
//! loopback that Chromium sends every request through (`--proxy-server`, with
//! `--proxy-bypass-list=<-loopback>` so loopback goes through it too). Each request's host is
//! checked with the `web` tool's SSRF rules and looked up through its guarded resolver, and the
//! proxy connects to the address it checked, so navigations, redirects (each hop is a new
//! request), subresources, workers, pop-ups, cross-origin frames and WebSockets of every page
//! are covered, and a name that changes its answer (DNS rebinding) cannot get past it.
//!
//! Plain HTTP requests arrive in absolute form and are forwarded with `Connection: close` so
//! the next request on the client's connection is checked again; HTTPS and WebSockets over TLS
//! arrive as `CONNECT host:port` and are tunnelled after the check.
//!
//! A webview that ignores its proxy setting would load everything directly, unchecked (WKWebView
//! before macOS 14 does). [`GuardProxy::probe_url`] tells: only the proxy answers it, with its
//! own secret, since the host is under `.invalid` (RFC 2606), which no resolver answers.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use osprey_tools::web::resolve::{GuardedResolver, LookupError};
use osprey_tools::web::ssrf;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

/// The longest request head read (request line and headers).
const MAX_HEAD: usize = 32 * 1024;
/// Refusals kept for the tool's next result.
const MAX_REFUSALS: usize = 50;
/// The host of [`GuardProxy::probe_url`].
pub const PROBE_HOST: &str = "osprey-guard.invalid";

/// The refusals a proxy made, shared with the driver that reports them.
#[derive(Clone, Debug, Default)]
pub struct Refusals(Arc<Mutex<VecDeque<String>>>);

impl Refusals {
    /// Notes a refusal (the proxy's, or a profile's own navigation or download hook).
    pub fn push(&self, line: String) {
        let mut list = self.0.lock().expect("refusal list lock");
        if list.len() >= MAX_REFUSALS {
            list.pop_front();
        }
        list.push_back(line);
    }

    /// The refusals since the last call.
    pub fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .expect("refusal list lock")
            .drain(..)
            .collect()
    }
}

/// A running guard proxy; it stops when dropped.
#[derive(Debug)]
pub struct GuardProxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    forbidden_ports: Arc<Mutex<Vec<u16>>>,
    probe: Arc<str>,
}

impl Drop for GuardProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Rules {
    allow_loopback: bool,
    resolver: GuardedResolver,
    refusals: Refusals,
    /// Loopback ports never reachable, whatever `allow_loopback` says: the proxy's own and the
    /// browser's DevTools port (a page that reached it could drive the browser).
    forbidden_ports: Arc<Mutex<Vec<u16>>>,
    /// The path after `/` that the probe host answers with this secret.
    probe: Arc<str>,
}

impl GuardProxy {
    pub async fn start(allow_loopback: bool, refusals: Refusals) -> std::io::Result<GuardProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let forbidden_ports = Arc::new(Mutex::new(vec![addr.port()]));
        let probe: Arc<str> = crate::nonce(16).into();
        let rules = Rules {
            allow_loopback,
            resolver: GuardedResolver::new(None, allow_loopback),
            refusals,
            forbidden_ports: forbidden_ports.clone(),
            probe: probe.clone(),
        };
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, peer)) = listener.accept().await else {
                    continue;
                };
                // Only this machine's processes reach a loopback listener; only loopback peers
                // are served all the same.
                if !peer.ip().is_loopback() {
                    continue;
                }
                let rules = rules.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve(stream, &rules).await {
                        tracing::debug!(error = %e, "guard proxy connection ended");
                    }
                });
            }
        });
        Ok(GuardProxy {
            addr,
            task,
            forbidden_ports,
            probe,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// An address only this proxy answers, and the text it answers with: a page whose
    /// `fetch` of the URL reads back the secret sends its requests through this proxy.
    pub fn probe_url(&self) -> (String, &str) {
        (format!("http://{PROBE_HOST}/{}", self.probe), &self.probe)
    }

    /// Refuses a loopback port from now on (the DevTools port, once the browser runs).
    pub fn forbid_port(&self, port: u16) {
        self.forbidden_ports
            .lock()
            .expect("forbidden ports lock")
            .push(port);
    }
}

/// Reads up to the end of the request head; returns the head and any bytes after it.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok(Some((String::from_utf8_lossy(&buf).into_owned(), rest)));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

async fn refuse(stream: &mut TcpStream, rules: &Rules, target: &str, why: &str) {
    rules.refusals.push(format!("{target}: {why}"));
    let body = format!("Osprey's navigation policy refused {target}: {why}\n");
    let reply = format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
}

/// Checks `host:port` and connects to an address that passed, or says why not.
async fn connect(rules: &Rules, host: &str, port: u16) -> Result<TcpStream, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => {
            if let Some(why) = ssrf::ip_refusal(ip, rules.allow_loopback) {
                return Err(format!("{ip} is {why}"));
            }
            vec![SocketAddr::new(ip, port)]
        }
        Err(_) => match rules.resolver.lookup(bare).await {
            Ok(found) => found
                .into_iter()
                .map(|a| SocketAddr::new(a.ip(), port))
                .collect(),
            Err(LookupError::Blocked(b)) => return Err(b.reason),
            Err(LookupError::Failed(m)) => return Err(m),
        },
    };
    let forbidden = rules
        .forbidden_ports
        .lock()
        .expect("forbidden ports lock")
        .clone();
    let mut last = String::from("no address to connect to");
    for addr in addrs {
        if addr.ip().is_loopback() && forbidden.contains(&addr.port()) {
            return Err(format!(
                "port {} on loopback is Osprey's own (the proxy or the browser's DevTools port)",
                addr.port()
            ));
        }
        match TcpStream::connect(addr).await {
            Ok(s) => return Ok(s),
            Err(e) => last = format!("connecting to {addr} failed: {e}"),
        }
    }
    Err(last)
}

async fn serve(mut client: TcpStream, rules: &Rules) -> std::io::Result<()> {
    let Some((head, rest)) = read_head(&mut client).await? else {
        return Ok(());
    };
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        refuse(&mut client, rules, "a request", "it is not valid HTTP").await;
        return Ok(());
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = target.rsplit_once(':') else {
            refuse(&mut client, rules, target, "CONNECT needs host:port").await;
            return Ok(());
        };
        let Ok(port) = port.parse::<u16>() else {
            refuse(&mut client, rules, target, "the port is not a number").await;
            return Ok(());
        };
        if let Some(why) = ssrf::host_name_refusal(host, rules.allow_loopback) {
            refuse(&mut client, rules, target, &why).await;
            return Ok(());
        }
        let mut upstream = match connect(rules, host, port).await {
            Ok(s) => s,
            Err(why) => {
                refuse(&mut client, rules, target, &why).await;
                return Ok(());
            }
        };
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        upstream.write_all(&rest).await?;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        return Ok(());
    }
    let url = match Url::parse(target) {
        Ok(u) => u,
        Err(_) => {
            refuse(
                &mut client,
                rules,
                target,
                "a proxy request needs an absolute URL",
            )
            .await;
            return Ok(());
        }
    };
    let shown = url.as_str().to_string();
    if url.scheme() == "http" && url.host_str() == Some(PROBE_HOST) {
        let (status, body) = if url.path().strip_prefix('/') == Some(&*rules.probe) {
            ("200 OK", &*rules.probe)
        } else {
            ("404 Not Found", "")
        };
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nAccess-Control-Allow-Origin: *\r\n\
             Cache-Control: no-store\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        client.write_all(reply.as_bytes()).await?;
        return Ok(());
    }
    if url.scheme() != "http" && url.scheme() != "ws" {
        refuse(
            &mut client,
            rules,
            &shown,
            "only http is proxied in the clear",
        )
        .await;
        return Ok(());
    }
    let mut checked = url.clone();
    if checked.scheme() == "ws" {
        let _ = checked.set_scheme("http");
    }
    if let Err(b) = ssrf::check_url(&checked, rules.allow_loopback) {
        refuse(&mut client, rules, &shown, &b.reason).await;
        return Ok(());
    }
    let host = url.host_str().unwrap_or_default().to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let mut upstream = match connect(rules, &host, port).await {
        Ok(s) => s,
        Err(why) => {
            refuse(&mut client, rules, &shown, &why).await;
            return Ok(());
        }
    };
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let mut out = format!("{method} {path} {version}\r\n");
    let upgrade = head.to_ascii_lowercase().contains("\r\nupgrade:");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        if name.eq_ignore_ascii_case("proxy-connection")
            || name.eq_ignore_ascii_case("proxy-authorization")
            || (!upgrade && name.eq_ignore_ascii_case("connection"))
            || name.eq_ignore_ascii_case("keep-alive")
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    if !upgrade {
        // One request per connection: a next request on the client's connection, perhaps for
        // another host, comes back through the check.
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    upstream.write_all(out.as_bytes()).await?;
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(proxy: &GuardProxy, url: &str) -> String {
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        let request = format!("GET {url} HTTP/1.1\r\nHost: {PROBE_HOST}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.unwrap();
        reply
    }

    #[tokio::test]
    async fn the_probe_host_answers_its_secret_only_through_this_proxy() {
        let proxy = GuardProxy::start(false, Refusals::default()).await.unwrap();
        let (url, secret) = proxy.probe_url();
        assert_eq!(secret.len(), 32, "{secret}");
        let reply = get(&proxy, &url).await;
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(
            reply.contains("\r\nAccess-Control-Allow-Origin: *\r\n"),
            "{reply}"
        );
        assert!(reply.ends_with(&format!("\r\n\r\n{secret}")), "{reply}");

        let wrong = get(&proxy, &format!("http://{PROBE_HOST}/guess")).await;
        assert!(wrong.starts_with("HTTP/1.1 404 Not Found\r\n"), "{wrong}");
        assert!(!wrong.contains(secret), "{wrong}");

        // Each proxy has its own secret.
        let other = GuardProxy::start(false, Refusals::default()).await.unwrap();
        assert_ne!(other.probe_url().1, secret);
        let theirs = get(&other, &url).await;
        assert!(theirs.starts_with("HTTP/1.1 404"), "{theirs}");
    }
}
