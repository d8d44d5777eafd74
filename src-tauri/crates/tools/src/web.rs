//! The `web` tool: `http.fetch` gets a page over HTTP(S) and returns readable text, in pages.
//!
//! Nothing private is reachable through it (see [`ssrf`]): the URL is checked before the request
//! and at every redirect (followed here, by hand, so each hop is checked the same way), the host
//! is looked up and checked before each hop, and the client connects only through
//! [`resolve::GuardedResolver`], which drops private addresses at connect time. Proxies from the
//! environment are ignored, since a proxy would resolve names where we cannot check them.

pub mod content;
pub mod markup;
pub mod resolve;
pub mod ssrf;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use osprey_types::{ErrorCode, ToolResult};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use url::{Host, Url};

use crate::call::{ApprovalNeed, Call, CallFacts};
use crate::domain::{Domain, FieldType};
use crate::tool::{DomainTool, ToolContext};
use content::Kind;
use resolve::{GuardedResolver, LookupError};
use ssrf::{Blocked, UrlError};

/// Settings of the `web` tool.
#[derive(Clone)]
pub struct WebConfig {
    /// Lets exactly 127.0.0.0/8 and ::1 through (for tests against loopback servers). Private,
    /// link-local and metadata addresses stay refused whatever this says.
    pub allow_loopback: bool,
    /// The longest a fetch may take, all redirects and the body included (the call's own
    /// deadline applies too, whichever is earlier).
    pub timeout: Duration,
    /// The most body bytes read (after decompression); the rest is not downloaded.
    pub max_bytes: usize,
    pub max_redirects: usize,
    /// Page size when a call gives no `max_chars`.
    pub default_max_chars: usize,
    pub user_agent: String,
    /// Answers DNS look-ups instead of the system resolver (tests use it to simulate names,
    /// including ones that change their answer). Its answers are filtered like the system's.
    pub resolver: Option<Arc<dyn reqwest::dns::Resolve>>,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            allow_loopback: false,
            timeout: Duration::from_secs(30),
            max_bytes: 10 * 1024 * 1024,
            max_redirects: 10,
            default_max_chars: DEFAULT_MAX_CHARS,
            user_agent: format!("Osprey/{} (web tool)", env!("CARGO_PKG_VERSION")),
            resolver: None,
        }
    }
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("allow_loopback", &self.allow_loopback)
            .field("timeout", &self.timeout)
            .field("max_bytes", &self.max_bytes)
            .field("max_redirects", &self.max_redirects)
            .field("default_max_chars", &self.default_max_chars)
            .field("user_agent", &self.user_agent)
            .field("custom_resolver", &self.resolver.is_some())
            .finish()
    }
}

const DEFAULT_MAX_CHARS: usize = 20_000;
/// The largest page a call may ask for, so one result cannot flood the model's context.
const MAX_PAGE_CHARS: usize = 100_000;
const MAX_HEADERS: usize = 32;

/// Request headers a call may not set: they steer routing or framing (request smuggling,
/// virtual-host confusion), spoof the client's address to internal allowlists, or exist only to
/// talk to cloud metadata services.
fn header_refusal(name: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    let framing = [
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "expect",
    ];
    let spoofing = [
        "forwarded",
        "via",
        "x-real-ip",
        "x-client-ip",
        "true-client-ip",
        "x-originating-ip",
    ];
    let metadata = [
        "metadata",
        "metadata-flavor",
        "x-google-metadata-request",
        "x-aws-ec2-metadata-token",
        "x-aws-ec2-metadata-token-ttl-seconds",
    ];
    if framing.contains(&name.as_str()) {
        Some("it controls connection framing or routing")
    } else if spoofing.contains(&name.as_str())
        || name.starts_with("x-forwarded-")
        || name.starts_with("proxy-")
    {
        Some("it spoofs proxy or client-address information")
    } else if metadata.contains(&name.as_str()) {
        Some("it is only used to talk to cloud metadata services")
    } else {
        None
    }
}

/// Headers that are dropped when a redirect leaves the origin they were meant for.
const CREDENTIAL_HEADERS: &[&str] = &["authorization", "cookie"];

/// Why building the tool failed (the TLS backend could not start).
#[derive(Debug, thiserror::Error)]
#[error("could not build the HTTP client: {0}")]
pub struct WebError(#[from] reqwest::Error);

/// Resources another crate adds to the `web` tool (osprey-browser's `browser` and `search`).
/// osprey-tools cannot depend on that crate, so the web tool calls it through this trait; the
/// calls still pass the registry like every other web call.
pub trait WebExtension: Send + Sync + 'static {
    /// Adds its resources, fields and action aliases to the web tool's table.
    fn extend(&self, domain: Domain) -> Domain;
    /// True for the resources it added.
    fn handles(&self, resource: &str) -> bool;
    fn facts(&self, call: &Call) -> CallFacts;
    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult>;
}

/// The `web` domain tool.
pub struct WebTool {
    config: WebConfig,
    domain: Domain,
    client: reqwest::Client,
    resolver: GuardedResolver,
    extensions: Vec<Arc<dyn WebExtension>>,
}

impl std::fmt::Debug for WebTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebTool")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// One request's inputs, validated.
struct Request {
    url: Url,
    method: Method,
    headers: HeaderMap,
    /// What a POST, PUT, PATCH or DELETE sends, with its content type.
    body: Option<(Vec<u8>, &'static str)>,
    /// Further attempts after a failed connection or a 429/502/503/504 answer; 0 for methods
    /// that are not idempotent.
    retries: u32,
    offset: usize,
    max_chars: usize,
    raw: bool,
}

/// The largest request body sent.
const MAX_REQUEST_BODY: usize = 1024 * 1024;
/// Retries when none are asked for, and the most allowed.
const DEFAULT_RETRIES: u64 = 2;
const MAX_RETRIES: u64 = 5;
/// The first wait before a retry (doubling each time), and the longest wait, whatever a
/// Retry-After header asks.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Methods that send or change data: each call is asked, and none is retried unless idempotent.
fn sends_data(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// Methods a retry cannot apply twice (RFC 9110, 9.2.2).
fn idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE
    )
}

/// A response whose body has been read (up to the cap).
struct Fetched {
    url: Url,
    status: StatusCode,
    content_type: Option<String>,
    redirects: Vec<Url>,
    body: Vec<u8>,
    /// The body went on past the cap and was cut there.
    truncated: bool,
    head_headers: Vec<(String, String)>,
    /// A Retry-After header's delay, in seconds form.
    retry_after: Option<Duration>,
}

/// A failed fetch, by the code it is reported with.
enum Failure {
    Refused(Blocked),
    Invalid(String),
    Timeout,
    Cancelled,
    Failed(String),
    /// No connection could be made (refused, reset, no route): worth a retry.
    Unreachable(String),
}

impl Failure {
    fn into_result(self, timeout: Duration) -> ToolResult {
        match self {
            Failure::Refused(b) => ToolResult::error(ErrorCode::SsrfBlocked, b.to_string()),
            Failure::Invalid(m) => ToolResult::error(ErrorCode::InvalidInput, m),
            Failure::Timeout => ToolResult::error(
                ErrorCode::Timeout,
                format!(
                    "no complete response within {:.1}s; the server may be slow or not answering",
                    timeout.as_secs_f64()
                ),
            ),
            Failure::Cancelled => {
                ToolResult::error(ErrorCode::Cancelled, "the fetch was cancelled")
            }
            Failure::Failed(m) | Failure::Unreachable(m) => {
                ToolResult::error(ErrorCode::ToolFailed, m)
            }
        }
    }
}

impl From<UrlError> for Failure {
    fn from(e: UrlError) -> Self {
        match e {
            UrlError::Blocked(b) => Failure::Refused(b),
            UrlError::Invalid(m) => Failure::Invalid(m),
        }
    }
}

impl WebTool {
    pub fn new(config: WebConfig) -> Result<WebTool, WebError> {
        let resolver = GuardedResolver::new(config.resolver.clone(), config.allow_loopback);
        let client = reqwest::Client::builder()
            // Redirects are followed by hand so each hop is checked like the first.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve and connect where the resolver below cannot check.
            .no_proxy()
            .dns_resolver(Arc::new(resolver.clone()))
            .connect_timeout(config.timeout)
            .user_agent(config.user_agent.clone())
            .build()?;
        Ok(WebTool {
            domain: web_domain(config.default_max_chars),
            config,
            client,
            resolver,
            extensions: Vec::new(),
        })
    }

    /// Adds the resources of `extension` (browser, search) to this tool.
    pub fn with_extension(mut self, extension: Arc<dyn WebExtension>) -> Self {
        self.domain = extension.extend(self.domain);
        self.extensions.push(extension);
        self
    }

    fn extension_for(&self, resource: &str) -> Option<&Arc<dyn WebExtension>> {
        self.extensions.iter().find(|e| e.handles(resource))
    }

    pub fn config(&self) -> &WebConfig {
        &self.config
    }

    /// Checks a URL the way a fetch would before connecting (parsing, scheme, host), without
    /// any look-up or request.
    pub fn check_url(&self, raw: &str) -> Result<Url, UrlError> {
        ssrf::parse_url(raw, self.config.allow_loopback)
    }

    fn request(&self, call: &Call) -> Result<Request, Failure> {
        let raw_url = call
            .str("url")
            .ok_or_else(|| Failure::Invalid("web fetch needs `url`".into()))?;
        let url = self.check_url(raw_url)?;
        let method = match call
            .str("method")
            .unwrap_or("GET")
            .to_ascii_uppercase()
            .as_str()
        {
            "GET" => Method::GET,
            "HEAD" => Method::HEAD,
            "POST" => Method::POST,
            "PUT" => Method::PUT,
            "PATCH" => Method::PATCH,
            "DELETE" => Method::DELETE,
            other => {
                return Err(Failure::Invalid(format!(
                    "method `{other}` is not supported; use GET, HEAD, POST, PUT, PATCH or DELETE"
                )));
            }
        };
        let body = request_body(call, &method)?;
        let retries = match call.input.get("retries") {
            None | Some(Value::Null) => DEFAULT_RETRIES,
            Some(v) => v.as_u64().filter(|n| *n <= MAX_RETRIES).ok_or_else(|| {
                Failure::Invalid(format!(
                    "`retries` is a whole number from 0 to {MAX_RETRIES}"
                ))
            })?,
        };
        // A POST or PATCH sent twice may do its work twice.
        let retries = if idempotent(&method) {
            retries as u32
        } else {
            0
        };
        let count = |key: &str, default: usize| -> Result<usize, Failure> {
            match call.input.get(key) {
                None | Some(Value::Null) => Ok(default),
                Some(v) => v
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        Failure::Invalid(format!("`{key}` must be a whole number of 0 or more"))
                    }),
            }
        };
        let offset = count("offset", 0)?;
        let max_chars = count("max_chars", self.config.default_max_chars)?;
        if max_chars == 0 {
            return Err(Failure::Invalid("`max_chars` must be at least 1".into()));
        }
        Ok(Request {
            url,
            method,
            headers: parse_headers(call.input.get("headers"))?,
            body,
            retries,
            offset,
            max_chars: max_chars.min(MAX_PAGE_CHARS),
            raw: call.bool("raw").unwrap_or(false),
        })
    }

    async fn fetch(&self, req: &Request) -> Result<Fetched, Failure> {
        let mut url = req.url.clone();
        let mut method = req.method.clone();
        let mut body = req.body.clone();
        let mut headers = req.headers.clone();
        let mut redirects = Vec::new();
        loop {
            ssrf::check_url(&url, self.config.allow_loopback).map_err(Failure::Refused)?;
            if let Some(Host::Domain(host)) = url.host() {
                // Checked here too (the resolver checks again at connect) so a refused name is
                // reported before any request, with its addresses.
                self.resolver.lookup(host).await.map_err(|e| match e {
                    LookupError::Blocked(b) => Failure::Refused(Blocked::new(
                        url.as_str(),
                        format!("host {}: {}", b.target, b.reason),
                    )),
                    LookupError::Failed(m) => Failure::Failed(m),
                })?;
            }
            let mut request = self
                .client
                .request(method.clone(), url.as_str())
                .headers(headers.clone());
            if let Some((bytes, content_type)) = &body {
                if !headers.contains_key(reqwest::header::CONTENT_TYPE) {
                    request = request.header(reqwest::header::CONTENT_TYPE, *content_type);
                }
                request = request.body(bytes.clone());
            }
            let mut response = request.send().await.map_err(|e| send_failure(&url, &e))?;
            // Belt and braces: the peer actually connected to must be allowed too.
            if let Some(peer) = response.remote_addr()
                && let Some(why) = ssrf::ip_refusal(peer.ip(), self.config.allow_loopback)
            {
                return Err(Failure::Refused(Blocked::new(
                    url.as_str(),
                    format!("the connection reached {}, which is {why}", peer.ip()),
                )));
            }
            let status = response.status();
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            if status.is_redirection()
                && status != StatusCode::NOT_MODIFIED
                && let Some(location) = response.headers().get(reqwest::header::LOCATION)
            {
                let location = location.to_str().map_err(|_| {
                    Failure::Failed(format!("{url} redirected to an unreadable Location"))
                })?;
                if redirects.len() >= self.config.max_redirects {
                    return Err(Failure::Failed(format!(
                        "too many redirects (more than {}), last at {url}",
                        self.config.max_redirects
                    )));
                }
                let mut next = url.join(location).map_err(|e| {
                    Failure::Failed(format!(
                        "{url} redirected to an invalid URL `{location}`: {e}"
                    ))
                })?;
                next.set_fragment(None);
                ssrf::check_url(&next, self.config.allow_loopback).map_err(|b| {
                    Failure::Refused(Blocked::new(
                        b.target,
                        format!("redirect from {url} refused: {}", b.reason),
                    ))
                })?;
                // 303 turns every method but HEAD into a bodiless GET, and so do 301 and 302
                // for a POST (as browsers do); 307 and 308 keep the method and the body, but
                // only within the origin the person approved sending it to.
                let to_get = status == StatusCode::SEE_OTHER && method != Method::HEAD
                    || matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
                        && method == Method::POST;
                if to_get {
                    method = Method::GET;
                    body = None;
                    headers.remove(reqwest::header::CONTENT_TYPE);
                } else if body.is_some() && next.origin() != url.origin() {
                    return Err(Failure::Failed(format!(
                        "{url} answered the {method} with {} to {next}, another origin; the \
                         data was not sent there. Call again with that URL if it should be",
                        status_line(status)
                    )));
                }
                if next.origin() != url.origin() {
                    for name in CREDENTIAL_HEADERS {
                        headers.remove(*name);
                    }
                }
                redirects.push(url);
                url = next;
                continue;
            }
            let content_type = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            if method == Method::HEAD {
                let head_headers = response
                    .headers()
                    .iter()
                    .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                    .collect();
                return Ok(Fetched {
                    url,
                    status,
                    content_type,
                    redirects,
                    body: Vec::new(),
                    truncated: false,
                    head_headers,
                    retry_after,
                });
            }
            if let Some(ct) = content_type
                .as_deref()
                .filter(|ct| content::is_binary_type(ct))
            {
                return Err(binary_refusal(&url, ct, response.content_length()));
            }
            let (body, truncated) = read_capped(&mut response, self.config.max_bytes, &url).await?;
            return Ok(Fetched {
                url,
                status,
                content_type,
                redirects,
                body,
                truncated,
                head_headers: Vec::new(),
                retry_after,
            });
        }
    }

    /// The response as the model reads it; `retried` says why earlier attempts were repeated.
    async fn render(
        &self,
        req: &Request,
        fetched: Fetched,
        retried: &[String],
    ) -> Result<ToolResult, Failure> {
        let mut head = vec![format!("URL: {}", fetched.url)];
        if sends_data(&req.method) {
            head.insert(0, format!("Method: {}", req.method));
        }
        if !fetched.redirects.is_empty() {
            let chain: Vec<&str> = fetched.redirects.iter().map(Url::as_str).collect();
            head.push(format!("Redirected from: {}", chain.join(" -> ")));
        }
        head.push(format!("Status: {}", status_line(fetched.status)));
        if !retried.is_empty() {
            head.push(format!(
                "Attempts: {} (retried after: {})",
                retried.len() + 1,
                retried.join("; ")
            ));
        }
        if let Some(ct) = &fetched.content_type {
            head.push(format!("Content-Type: {ct}"));
        }
        let failed = !fetched.status.is_success();
        let finish = |text: String| {
            if failed {
                ToolResult::error(ErrorCode::ToolFailed, text)
            } else {
                ToolResult::text(text)
            }
        };
        if req.method == Method::HEAD {
            head.push("Headers:".into());
            for (k, v) in &fetched.head_headers {
                head.push(format!("  {k}: {v}"));
            }
            return Ok(finish(head.join("\n")));
        }
        let kind = content::classify(fetched.content_type.as_deref(), &fetched.body);
        if kind == Kind::Binary {
            return Err(binary_refusal(
                &fetched.url,
                fetched.content_type.as_deref().unwrap_or("no content type"),
                Some(fetched.body.len() as u64),
            ));
        }
        let charset = fetched.content_type.as_deref().and_then(content::charset);
        let (decoded, charset_note) = content::decode(&fetched.body, charset.as_deref());
        let (title, text, html_note) = if kind == Kind::Html && !req.raw {
            let html = content::html_to_text(decoded)
                .await
                .map_err(Failure::Failed)?;
            (html.title, html.text, html.note)
        } else {
            (None, decoded, None)
        };
        if let Some(title) = title {
            head.push(format!("Title: {title}"));
        }
        if let Some(note) = html_note {
            head.push(format!("Note: {note}"));
        }
        if let Some(note) = charset_note {
            head.push(format!("Note: {note}"));
        }
        if fetched.truncated {
            head.push(format!(
                "Note: the response was larger than {} bytes; only the first {} bytes were read",
                self.config.max_bytes, self.config.max_bytes
            ));
        }
        let what = match (kind, req.raw) {
            (Kind::Html, false) => "readable text converted from HTML; `raw: true` gives the HTML",
            _ => "text as served",
        };
        let Some(page) = content::page(&text, req.offset, req.max_chars) else {
            return Err(Failure::Invalid(format!(
                "offset {} is past the end: the content is {} characters long",
                req.offset,
                text.chars().count()
            )));
        };
        if page.total == 0 {
            head.push(format!(
                "Length: 0 characters ({what}); the page has no text"
            ));
            return Ok(finish(head.join("\n")));
        }
        if page.start == 0 && page.end == page.total {
            head.push(format!("Length: {} characters ({what})", page.total));
        } else {
            head.push(format!(
                "Length: {} characters ({what}); showing characters {}..{}",
                page.total, page.start, page.end
            ));
        }
        let mut out = head.join("\n");
        out.push_str("\n\n");
        out.push_str(page.text);
        if page.end < page.total {
            out.push_str(&format!(
                "\n\n[{} more characters; fetch the same URL with offset: {} for the next page]",
                page.total - page.end,
                page.end
            ));
        }
        Ok(finish(out))
    }

    async fn fetch_call(&self, ctx: &ToolContext, call: Call) -> ToolResult {
        let req = match self.request(&call) {
            Ok(r) => r,
            Err(f) => return f.into_result(self.config.timeout),
        };
        let now = std::time::Instant::now();
        let deadline = ctx.deadline.min(now + self.config.timeout);
        // Reported in the timeout message: whichever limit was the nearer.
        let timeout = deadline.saturating_duration_since(now);
        let work = async {
            let mut retried = Vec::new();
            let fetched = loop {
                let attempt = self.fetch(&req).await;
                let wait = match &attempt {
                    _ if retried.len() as u32 >= req.retries => None,
                    Ok(fetched) => retry_wait(fetched, retried.len())
                        .map(|wait| (wait, status_line(fetched.status))),
                    Err(Failure::Unreachable(why)) => Some((backoff(retried.len()), why.clone())),
                    Err(_) => None,
                };
                match wait {
                    Some((wait, why)) => {
                        retried.push(why);
                        tokio::time::sleep(wait).await;
                    }
                    None => break attempt?,
                }
            };
            self.render(&req, fetched, &retried).await
        };
        let outcome = tokio::select! {
            _ = ctx.cancel.cancelled() => Err(Failure::Cancelled),
            r = tokio::time::timeout_at(deadline.into(), work) => r.unwrap_or(Err(Failure::Timeout)),
        };
        outcome.unwrap_or_else(|f| f.into_result(timeout))
    }
}

fn status_line(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

fn binary_refusal(url: &Url, content_type: &str, len: Option<u64>) -> Failure {
    let size = len.map(|n| format!(", {n} bytes")).unwrap_or_default();
    Failure::Failed(format!(
        "{url} is binary content ({content_type}{size}); the web tool returns text only"
    ))
}

/// Reads the body up to `cap` bytes, counting what actually arrives (after decompression), so
/// neither a lying Content-Length nor an endless or compressed stream gets past it.
async fn read_capped(
    response: &mut reqwest::Response,
    cap: usize,
    url: &Url,
) -> Result<(Vec<u8>, bool), Failure> {
    let mut body = Vec::new();
    loop {
        let chunk = response.chunk().await.map_err(|e| {
            Failure::Failed(format!("reading the body of {url} failed: {}", chain(&e)))
        })?;
        let Some(chunk) = chunk else {
            return Ok((body, false));
        };
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
}

/// Maps a send error: a refusal by the resolver (found in the error chain) is `ssrf_blocked`.
/// How long to wait before retry number `done + 1`: 0.5 s, 1 s, 2 s, ... at most 10 s.
fn backoff(done: usize) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(1 << done.min(8))
        .min(MAX_BACKOFF)
}

/// The wait before retrying an answer that says "try later" (429, 502, 503, 504): its
/// Retry-After in seconds when it gives one (at most 10 s), else the backoff; `None` for any
/// other answer.
fn retry_wait(fetched: &Fetched, done: usize) -> Option<Duration> {
    let retryable = matches!(
        fetched.status,
        StatusCode::TOO_MANY_REQUESTS
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    );
    retryable.then(|| {
        fetched
            .retry_after
            .map_or_else(|| backoff(done), |after| after.min(MAX_BACKOFF))
    })
}

/// The body a POST, PUT, PATCH or DELETE sends: `json` (any JSON value, sent as
/// application/json) or `body` (text, sent as text/plain unless a Content-Type header says
/// otherwise). GET and HEAD send none.
fn request_body(call: &Call, method: &Method) -> Result<Option<(Vec<u8>, &'static str)>, Failure> {
    let json = call.input.get("json").filter(|v| !v.is_null());
    let text = call.input.get("body").filter(|v| !v.is_null());
    let body = match (json, text) {
        (Some(_), Some(_)) => {
            return Err(Failure::Invalid("give `json` or `body`, not both".into()));
        }
        (Some(json), None) => Some((json.to_string().into_bytes(), "application/json")),
        (None, Some(Value::String(text))) => {
            Some((text.clone().into_bytes(), "text/plain; charset=utf-8"))
        }
        (None, Some(other)) => {
            return Err(Failure::Invalid(format!(
                "`body` is text; for JSON use `json` (got {other})"
            )));
        }
        (None, None) => None,
    };
    if body.is_some() && !sends_data(method) {
        return Err(Failure::Invalid(format!(
            "a {method} sends no body; use POST, PUT, PATCH or DELETE to send data"
        )));
    }
    if let Some((bytes, _)) = &body
        && bytes.len() > MAX_REQUEST_BODY
    {
        return Err(Failure::Invalid(format!(
            "the body is {} bytes; at most {MAX_REQUEST_BODY} are sent",
            bytes.len()
        )));
    }
    Ok(body)
}

fn send_failure(url: &Url, err: &reqwest::Error) -> Failure {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(b) = e.downcast_ref::<Blocked>() {
            return Failure::Refused(Blocked::new(
                url.as_str(),
                format!("at connect time, host {}: {}", b.target, b.reason),
            ));
        }
        source = e.source();
    }
    if err.is_timeout() {
        return Failure::Timeout;
    }
    let message = format!("request to {url} failed: {}", chain(err));
    if err.is_connect() {
        Failure::Unreachable(message)
    } else {
        Failure::Failed(message)
    }
}

/// An error with its causes, one line.
fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        source = e.source();
    }
    out
}

fn parse_headers(value: Option<&Value>) -> Result<HeaderMap, Failure> {
    let mut headers = HeaderMap::new();
    let map = match value {
        None | Some(Value::Null) => return Ok(headers),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(Failure::Invalid(
                "`headers` must be an object of header names to string values".into(),
            ));
        }
    };
    if map.len() > MAX_HEADERS {
        return Err(Failure::Invalid(format!(
            "at most {MAX_HEADERS} headers may be set"
        )));
    }
    for (name, value) in map {
        if let Some(why) = header_refusal(name) {
            return Err(Failure::Invalid(format!(
                "header `{name}` may not be set: {why}"
            )));
        }
        let Some(value) = value.as_str() else {
            return Err(Failure::Invalid(format!(
                "header `{name}` must have a string value"
            )));
        };
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Failure::Invalid(format!("`{name}` is not a valid header name")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| Failure::Invalid(format!("the value of header `{name}` is not valid")))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

fn web_domain(default_max_chars: usize) -> Domain {
    use ApprovalNeed::Required;
    Domain::new(
        "web",
        "Fetch web pages over HTTP(S) and read them as text. HTML becomes readable text (headings, \
         paragraphs, numbered link references); JSON and plain text come back as served; binary \
         files are refused. Long pages come in pages: the result says which `offset` gives the \
         next one. Private, loopback and cloud-metadata addresses are refused.",
    )
    .resource(
        "http",
        &["page"],
        &[(
            "fetch",
            "Fetch a URL (GET, HEAD) or send a request (POST, PUT, PATCH, DELETE: each one is \
             asked) and return the response as text; failed connections and busy answers \
             (429, 502-504) are retried for GET, HEAD, PUT and DELETE",
            Required,
        )],
    )
    .field(
        "url",
        FieldType::String,
        "The http(s) URL to fetch; https:// is assumed when no scheme is given",
    )
    .required_for(&["fetch"])
    .field(
        "method",
        FieldType::String,
        "GET for the content, HEAD for the status and headers only; POST, PUT, PATCH, DELETE \
         send `json` or `body`",
    )
    .one_of(&["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])
    .default_value(json!("GET"))
    .field(
        "json",
        FieldType::Object,
        "A JSON body to send (application/json); POST, PUT, PATCH, DELETE only",
    )
    .field(
        "body",
        FieldType::String,
        "A text body to send (text/plain unless a Content-Type header says otherwise; at most \
         1 MiB); POST, PUT, PATCH, DELETE only",
    )
    .field(
        "retries",
        FieldType::Integer,
        "Further attempts after a failed connection or a 429/502/503/504 answer, waiting 0.5 s \
         and doubling (or the server's Retry-After, at most 10 s); 0 to 5. POST and PATCH are \
         never retried",
    )
    .default_value(json!(DEFAULT_RETRIES))
    .field(
        "headers",
        FieldType::Object,
        "Extra request headers, name to string value (for example Accept or Authorization). \
         Host, framing, proxy and forwarding headers are refused; Authorization and Cookie are \
         dropped when a redirect leaves the origin",
    )
    .field(
        "offset",
        FieldType::Integer,
        "Character offset into the text, for the next page of a long result",
    )
    .default_value(json!(0))
    .field(
        "max_chars",
        FieldType::Integer,
        "Page size in characters (at most 100000)",
    )
    .default_value(json!(default_max_chars))
    .field(
        "raw",
        FieldType::Boolean,
        "Return HTML as served instead of readable text",
    )
    .default_value(json!(false))
}

impl DomainTool for WebTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        if let Some(extension) = self.extension_for(call.resource()) {
            return extension.facts(call);
        }
        let raw = call.str("url").unwrap_or_default();
        // The canonical form, so grants match the host that will really be contacted
        // (`https://a.example\@b.example/` is a.example).
        let url = self
            .check_url(raw)
            .map(|u| u.to_string())
            .or_else(|e| match e {
                UrlError::Blocked(b) => Ok(b.target),
                UrlError::Invalid(_) => Err(()),
            })
            .ok();
        let shown = url.clone().unwrap_or_else(|| raw.to_string());
        let method = call.str("method").unwrap_or("GET").to_ascii_uppercase();
        let mut summary = match method.as_str() {
            "HEAD" => format!("fetch headers of {shown}"),
            "GET" => format!("fetch {shown}"),
            other => format!("{other} {shown}"),
        };
        let sent = ["json", "body"].into_iter().find_map(|name| {
            call.input
                .get(name)
                .filter(|v| !v.is_null())
                .map(|v| (name, v))
        });
        if let Some((name, value)) = sent {
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let preview: String = text.chars().take(120).collect();
            let more = if preview.len() < text.len() {
                "…"
            } else {
                ""
            };
            summary.push_str(&format!(
                " with a {} body ({} bytes): {preview}{more}",
                if name == "json" { "JSON" } else { "text" },
                text.len()
            ));
        }
        if let Some(Value::Object(h)) = call.input.get("headers")
            && !h.is_empty()
        {
            let names: Vec<&str> = h.keys().map(String::as_str).collect();
            summary.push_str(&format!(" (sending headers: {})", names.join(", ")));
        }
        // Sending or changing data somewhere is the person's call each time: a grant for
        // reading a site does not cover posting to it.
        let ask_every_time = ["POST", "PUT", "PATCH", "DELETE"]
            .contains(&method.as_str())
            .then(|| format!("a {method} sends or changes data on the server; each one is asked"));
        CallFacts {
            approval: ApprovalNeed::Required,
            summary,
            url,
            ask_every_time,
            ..Default::default()
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match (call.resource(), call.action()) {
                ("http", "fetch") => self.fetch_call(ctx, call).await,
                (resource, _) if self.extension_for(resource).is_some() => {
                    let extension = self.extension_for(resource).expect("checked by the guard");
                    extension.run(ctx, call).await
                }
                (resource, action) => ToolResult::error(
                    ErrorCode::InvalidInput,
                    format!("web has no action `{action}` on resource `{resource}`"),
                ),
            }
        })
    }
}
