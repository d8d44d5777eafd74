//! A loopback OAuth 2.0 authorization server for tests of app accounts, holding to the rules a
//! real provider enforces, so a client that passes here does not pass only because the server
//! is lenient:
//!
//! - RFC 6749's authorization code grant: a code is single-use, expires (ten minutes by
//!   default, [`OAuthServer::set_code_lifetime`]) and is bound to the client id and redirect
//!   URI it was issued for; a reused code is `invalid_grant` and revokes what it yielded
//!   (§4.1.2). Several clients can be registered ([`OAuthServer::add_client`]), so one client's
//!   code or refresh token presented by another is refused (§4.1.3, §6).
//! - The token endpoint takes `application/x-www-form-urlencoded` bodies only (§3.2, §4.1.3);
//!   anything else is `invalid_request`.
//! - RFC 7636's PKCE: S256 only; the verifier is 43 to 128 characters of `[A-Za-z0-9-._~]`
//!   (§4.1, else `invalid_request`) and must hash to the challenge (§4.6, else
//!   `invalid_grant`).
//! - RFC 8252's loopback redirects (`http://127.0.0.1:<any port>/oauth/callback`), the state
//!   echoed.
//! - Refresh tokens rotated on every use: a rotated-out or revoked refresh token is
//!   `invalid_grant`, and presenting a rotated-out one again revokes its whole family, the
//!   tokens issued after it included (RFC 9700 §4.14.2: the replay means it was stolen).
//! - RFC 7009's revocation endpoint: form-encoded, the client identified, a refresh token
//!   revokes its whole grant (its access tokens too), another client's token is refused
//!   (`unauthorized_client`), and a token the server does not know is answered 200 (§2.2).
//!
//! Errors are RFC 6749 §5.2 JSON. Its sign-in page approves at once (a 302 back to the client),
//! which is what a browser driving it sees after the person signed in.
//!
//! Blocking std networking on its own thread, like [`crate::model_server`]; dropped, it stops.
//! [`browse`] is the test's browser: it fetches the authorization URL, follows the provider's
//! redirect (optionally tampered with, to play an attacker) and returns the page it lands on.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

/// The only redirect path the server accepts (Osprey's loopback listener).
const CALLBACK_PATH: &str = "/oauth/callback";
/// How long an authorization code can be redeemed unless a test says otherwise (RFC 6749
/// §4.1.2 recommends ten minutes at most).
pub const CODE_LIFETIME: Duration = Duration::from_secs(600);

struct Code {
    client_id: String,
    /// No longer redeemable from then on.
    expires: Instant,
    redirect_uri: String,
    challenge: String,
    scope: String,
    used: bool,
    /// The refresh tokens issued from it (revoked if the code is replayed).
    family: Option<u64>,
}

struct Refresh {
    client_id: String,
    scope: String,
    family: u64,
    /// Rotated out or revoked.
    dead: bool,
}

#[derive(Default)]
struct State {
    /// The registered client ids.
    clients: Vec<String>,
    codes: HashMap<String, Code>,
    refresh: HashMap<String, Refresh>,
    /// Access token -> (expires at, unix seconds; family).
    access: HashMap<String, (u64, u64)>,
    revoked_families: Vec<u64>,
    /// Codes handed out, in order (a test can replay one).
    issued_codes: Vec<String>,
    /// `grant_type` of each token request that succeeded, in order.
    grants: Vec<String>,
    /// `error` of each token request refused, in order.
    refusals: Vec<String>,
    /// What each successful revocation request named: `refresh`, `access` or `unknown`.
    revocations: Vec<String>,
    deny_next: bool,
}

/// The server; see the module docs.
pub struct OAuthServer {
    port: u16,
    lifetime: Arc<AtomicU64>,
    /// An authorization code's lifetime, in milliseconds.
    code_lifetime: Arc<AtomicU64>,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for OAuthServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthServer")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// A token no one can guess twice in a test: a counter and the clock, hashed.
fn fresh_token(kind: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let digest = sha2::Sha256::digest(format!("{kind}:{n}:{nanos}:{}", std::process::id()));
    format!(
        "{kind}-{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..18])
    )
}

impl OAuthServer {
    /// Listens on a free loopback port with the client `client_id` registered (more with
    /// [`OAuthServer::add_client`]); access tokens live `lifetime` (whole seconds).
    pub fn start(client_id: &str, lifetime: Duration) -> Result<OAuthServer> {
        let listener = TcpListener::bind("127.0.0.1:0").context("binding a loopback port")?;
        let port = listener.local_addr()?.port();
        let server = OAuthServer {
            port,
            lifetime: Arc::new(AtomicU64::new(lifetime.as_secs())),
            code_lifetime: Arc::new(AtomicU64::new(millis(CODE_LIFETIME))),
            state: Arc::default(),
            stop: Arc::new(AtomicBool::new(false)),
        };
        server.add_client(client_id);
        let context = Provider {
            lifetime: Arc::clone(&server.lifetime),
            code_lifetime: Arc::clone(&server.code_lifetime),
            state: Arc::clone(&server.state),
        };
        let stop = Arc::clone(&server.stop);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let context = context.clone();
                std::thread::spawn(move || {
                    let _ = context.serve(stream);
                });
            }
        });
        Ok(server)
    }

    pub fn authorize_url(&self) -> String {
        format!("http://127.0.0.1:{}/authorize", self.port)
    }

    pub fn token_url(&self) -> String {
        format!("http://127.0.0.1:{}/token", self.port)
    }

    pub fn revocation_url(&self) -> String {
        format!("http://127.0.0.1:{}/revoke", self.port)
    }

    /// Access tokens issued from now on live this long.
    pub fn set_lifetime(&self, lifetime: Duration) {
        self.lifetime.store(lifetime.as_secs(), Ordering::Relaxed);
    }

    /// Authorization codes issued from now on can be redeemed for this long (zero: a code has
    /// expired by the time anyone presents it).
    pub fn set_code_lifetime(&self, lifetime: Duration) {
        self.code_lifetime
            .store(millis(lifetime), Ordering::Relaxed);
    }

    /// Registers another public client (another app of the same provider).
    pub fn add_client(&self, client_id: &str) {
        self.lock().clients.push(client_id.to_string());
    }

    /// The next sign-in is declined (`error=access_denied`), as when the person says no.
    pub fn deny_next(&self) {
        self.lock().deny_next = true;
    }

    /// Revokes every refresh token (the person removed the app's access at the provider).
    pub fn revoke_all(&self) {
        let mut state = self.lock();
        for refresh in state.refresh.values_mut() {
            refresh.dead = true;
        }
        state.access.clear();
    }

    /// Whether `token` is an access token in force now.
    pub fn access_valid(&self, token: &str) -> bool {
        let state = self.lock();
        state.access.get(token).is_some_and(|(expires, family)| {
            *expires > unix_now() && !state.revoked_families.contains(family)
        })
    }

    /// The codes handed out so far, in order.
    pub fn issued_codes(&self) -> Vec<String> {
        self.lock().issued_codes.clone()
    }

    /// The grant type of each successful token request, in order.
    pub fn grants(&self) -> Vec<String> {
        self.lock().grants.clone()
    }

    /// The `error` of each refused token request, in order.
    pub fn refusals(&self) -> Vec<String> {
        self.lock().refusals.clone()
    }

    /// What each successful revocation named (`refresh`, `access`, `unknown`), in order.
    pub fn revocations(&self) -> Vec<String> {
        self.lock().revocations.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

#[derive(Clone)]
struct Provider {
    lifetime: Arc<AtomicU64>,
    code_lifetime: Arc<AtomicU64>,
    state: Arc<Mutex<State>>,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// RFC 7636 §4.1: `code-verifier = 43*128unreserved`, unreserved being `[A-Za-z0-9-._~]`.
fn verifier_well_formed(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// One HTTP/1.1 request as far as these servers need it.
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: HashMap<String, String>,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

/// Reads one request (request line, headers, a `content-length` body) from `stream`.
pub fn read_request(stream: &TcpStream) -> std::io::Result<Request> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let length = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0usize);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_string(), form(query.as_bytes())),
        None => (target, HashMap::new()),
    };
    Ok(Request {
        method,
        path,
        query,
        headers,
        body,
    })
}

/// An `application/x-www-form-urlencoded` body or query as a map (the last value of a repeated
/// name wins).
pub fn form(bytes: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<()> {
    write!(stream, "HTTP/1.1 {status}\r\n")?;
    for (name, value) in headers {
        write!(stream, "{name}: {value}\r\n")?;
    }
    write!(
        stream,
        "content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// RFC 6749 §5.2: 400 (401 for client authentication) with `{error, error_description}`.
fn token_error(stream: &mut TcpStream, error: &str, description: &str) -> std::io::Result<()> {
    let status = if error == "invalid_client" {
        "401 Unauthorized"
    } else {
        "400 Bad Request"
    };
    let body = json!({"error": error, "error_description": description}).to_string();
    respond(
        stream,
        status,
        &[
            ("content-type", "application/json"),
            ("cache-control", "no-store"),
        ],
        &body,
    )
}

/// Whether `uri` is a loopback redirect as RFC 8252 §7.3 allows (any port).
fn loopback_redirect(uri: &str) -> bool {
    url::Url::parse(uri).is_ok_and(|url| {
        url.scheme() == "http"
            && url.host_str() == Some("127.0.0.1")
            && url.port().is_some()
            && url.path() == CALLBACK_PATH
            && url.query().is_none()
    })
}

impl Provider {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn serve(&self, mut stream: TcpStream) -> std::io::Result<()> {
        let request = read_request(&stream)?;
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/authorize") => self.authorize(&mut stream, &request.query),
            ("POST", path @ ("/token" | "/revoke")) => {
                // RFC 6749 §4.1.3 and §6, RFC 7009 §2.1: the parameters come form-encoded,
                // nothing else.
                let media_type = request
                    .headers
                    .get("content-type")
                    .and_then(|value| value.split(';').next())
                    .map(str::trim);
                if !media_type
                    .is_some_and(|t| t.eq_ignore_ascii_case("application/x-www-form-urlencoded"))
                {
                    self.lock().refusals.push("invalid_request".into());
                    return token_error(
                        &mut stream,
                        "invalid_request",
                        "the request must be application/x-www-form-urlencoded",
                    );
                }
                let params = form(&request.body);
                // A public client identifies itself in the body (it has no secret).
                let client_id = params.get("client_id").map_or("", String::as_str);
                if !self.known_client(client_id) {
                    self.lock().refusals.push("invalid_client".into());
                    return token_error(&mut stream, "invalid_client", "unknown client_id");
                }
                if path == "/token" {
                    self.token(&mut stream, &params)
                } else {
                    self.revoke(&mut stream, &params)
                }
            }
            _ => respond(&mut stream, "404 Not Found", &[], "not found"),
        }
    }

    /// RFC 7009 §2.1-2.2: the client must be known and the token its own; a refresh token
    /// revokes its grant (the access tokens issued with it too), an access token only itself;
    /// a token the server does not know (or revoked already) is answered 200 all the same.
    fn revoke(
        &self,
        stream: &mut TcpStream,
        params: &HashMap<String, String>,
    ) -> std::io::Result<()> {
        let get = |name: &str| params.get(name).map(String::as_str).unwrap_or_default();
        let client_id = get("client_id");
        let token = get("token");
        if token.is_empty() {
            self.lock().refusals.push("invalid_request".into());
            return token_error(stream, "invalid_request", "`token` is required");
        }
        let mut state = self.lock();
        let what = if let Some(refresh) = state.refresh.get(token) {
            if refresh.client_id != client_id {
                state.refusals.push("unauthorized_client".into());
                drop(state);
                return token_error(
                    stream,
                    "unauthorized_client",
                    "the token was issued to another client",
                );
            }
            let family = refresh.family;
            state.revoke_family(family);
            "refresh"
        } else if state.access.remove(token).is_some() {
            "access"
        } else {
            "unknown"
        };
        state.revocations.push(what.to_string());
        drop(state);
        respond(stream, "200 OK", &[("cache-control", "no-store")], "")
    }

    fn authorize(
        &self,
        stream: &mut TcpStream,
        query: &HashMap<String, String>,
    ) -> std::io::Result<()> {
        let get = |name: &str| query.get(name).map(String::as_str).unwrap_or_default();
        // §4.1.2.1: a bad client or redirect URI is never redirected to.
        if !self.known_client(get("client_id")) {
            return respond(stream, "400 Bad Request", &[], "unknown client_id");
        }
        let redirect = get("redirect_uri");
        if !loopback_redirect(redirect) {
            return respond(stream, "400 Bad Request", &[], "redirect_uri not allowed");
        }
        let state = get("state");
        let back = |params: &[(&str, &str)]| {
            let mut url = url::Url::parse(redirect).expect("checked above");
            url.query_pairs_mut().extend_pairs(params);
            url.to_string()
        };
        let location = if get("response_type") != "code" {
            back(&[("error", "unsupported_response_type"), ("state", state)])
        } else if get("code_challenge_method") != "S256" || get("code_challenge").len() != 43 {
            back(&[
                ("error", "invalid_request"),
                ("error_description", "PKCE with S256 is required"),
                ("state", state),
            ])
        } else if std::mem::take(&mut self.lock().deny_next) {
            back(&[
                ("error", "access_denied"),
                ("error_description", "the person declined"),
                ("state", state),
            ])
        } else {
            let code = fresh_token("code");
            let lifetime = Duration::from_millis(self.code_lifetime.load(Ordering::Relaxed));
            let mut locked = self.lock();
            locked.codes.insert(
                code.clone(),
                Code {
                    client_id: get("client_id").to_string(),
                    expires: Instant::now() + lifetime,
                    redirect_uri: redirect.to_string(),
                    challenge: get("code_challenge").to_string(),
                    scope: get("scope").to_string(),
                    used: false,
                    family: None,
                },
            );
            locked.issued_codes.push(code.clone());
            drop(locked);
            back(&[("code", &code), ("state", state)])
        };
        respond(stream, "302 Found", &[("location", &location)], "")
    }

    fn token(
        &self,
        stream: &mut TcpStream,
        params: &HashMap<String, String>,
    ) -> std::io::Result<()> {
        let get = |name: &str| params.get(name).map(String::as_str).unwrap_or_default();
        let client_id = get("client_id");
        let grant = get("grant_type").to_string();
        let issued = match grant.as_str() {
            "authorization_code" => self.redeem_code(params),
            "refresh_token" => self.rotate_refresh(client_id, get("refresh_token")),
            _ => Err((
                "unsupported_grant_type",
                "only authorization_code and refresh_token",
            )),
        };
        match issued {
            Ok((family, scope)) => {
                let body = self.issue(client_id, family, &scope);
                self.lock().grants.push(grant);
                respond(
                    stream,
                    "200 OK",
                    &[
                        ("content-type", "application/json"),
                        ("cache-control", "no-store"),
                    ],
                    &body.to_string(),
                )
            }
            Err((error, description)) => {
                self.lock().refusals.push(error.to_string());
                token_error(stream, error, description)
            }
        }
    }

    /// §4.1.3 and RFC 7636 §4.6: the code, once and before it expires, for its client and
    /// redirect URI, with a well-formed verifier that hashes to its challenge.
    fn redeem_code(
        &self,
        params: &HashMap<String, String>,
    ) -> std::result::Result<(u64, String), (&'static str, &'static str)> {
        let get = |name: &str| params.get(name).map(String::as_str).unwrap_or_default();
        let mut state = self.lock();
        let Some(code) = state.codes.get_mut(get("code")) else {
            return Err(("invalid_grant", "unknown authorization code"));
        };
        if code.used {
            // A replayed code: what it yielded is revoked too (§4.1.2).
            if let Some(family) = code.family {
                state.revoke_family(family);
            }
            return Err(("invalid_grant", "the authorization code was already used"));
        }
        code.used = true;
        if Instant::now() >= code.expires {
            return Err(("invalid_grant", "the authorization code has expired"));
        }
        if code.client_id != get("client_id") {
            return Err(("invalid_grant", "the code was issued to another client"));
        }
        if code.redirect_uri != get("redirect_uri") {
            return Err((
                "invalid_grant",
                "redirect_uri differs from the authorization request",
            ));
        }
        let verifier = get("code_verifier");
        if !verifier_well_formed(verifier) {
            return Err((
                "invalid_request",
                "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~",
            ));
        }
        let hashed = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(verifier.as_bytes()));
        if hashed != code.challenge {
            return Err(("invalid_grant", "PKCE verification failed"));
        }
        let family = fresh_family();
        code.family = Some(family);
        Ok((family, code.scope.clone()))
    }

    /// §6 with rotation: the old refresh token dies as the new one is issued; presented again,
    /// it takes its whole family with it (RFC 9700 §4.14.2).
    fn rotate_refresh(
        &self,
        client_id: &str,
        token: &str,
    ) -> std::result::Result<(u64, String), (&'static str, &'static str)> {
        let mut state = self.lock();
        let Some(refresh) = state.refresh.get_mut(token) else {
            return Err(("invalid_grant", "unknown refresh token"));
        };
        if refresh.dead {
            let family = refresh.family;
            state.revoke_family(family);
            return Err((
                "invalid_grant",
                "the refresh token was revoked or already used",
            ));
        }
        if refresh.client_id != client_id {
            return Err((
                "invalid_grant",
                "the refresh token belongs to another client",
            ));
        }
        refresh.dead = true;
        Ok((refresh.family, refresh.scope.clone()))
    }

    fn known_client(&self, client_id: &str) -> bool {
        self.lock().clients.iter().any(|known| known == client_id)
    }

    fn issue(&self, client_id: &str, family: u64, scope: &str) -> Value {
        let lifetime = self.lifetime.load(Ordering::Relaxed);
        let access = fresh_token("access");
        let refresh = fresh_token("refresh");
        let mut state = self.lock();
        state
            .access
            .insert(access.clone(), (unix_now() + lifetime, family));
        state.refresh.insert(
            refresh.clone(),
            Refresh {
                client_id: client_id.to_string(),
                scope: scope.to_string(),
                family,
                dead: false,
            },
        );
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": lifetime,
            "refresh_token": refresh,
            "scope": scope,
        })
    }
}

impl State {
    /// Every token of `family` stops working: its refresh tokens and its access tokens.
    fn revoke_family(&mut self, family: u64) {
        self.revoked_families.push(family);
        for refresh in self.refresh.values_mut() {
            if refresh.family == family {
                refresh.dead = true;
            }
        }
    }
}

fn fresh_family() -> u64 {
    static FAMILY: AtomicU64 = AtomicU64::new(1);
    FAMILY.fetch_add(1, Ordering::Relaxed)
}

/// A plain-HTTP GET on loopback: `(status, location header, body)`.
pub fn http_get(url: &url::Url) -> Result<(u16, Option<String>, String)> {
    let host = url.host_str().context("no host")?;
    let port = url.port_or_known_default().context("no port")?;
    let mut stream =
        TcpStream::connect((host, port)).with_context(|| format!("connecting to {url}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nhost: {host}:{port}\r\nconnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no status line")?;
    let location = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_string())
    });
    Ok((status, location, body.to_string()))
}

/// The test's browser: fetches the authorization URL, passes the provider's redirect through
/// `tamper` (the identity for an honest browser) and follows it, returning the status and the
/// body of the page it lands on (Osprey's "you can close this window").
pub fn browse(
    authorization_url: &str,
    tamper: impl FnOnce(url::Url) -> url::Url,
) -> Result<(u16, String)> {
    let url = url::Url::parse(authorization_url).context("the authorization URL")?;
    let (status, location, body) = http_get(&url)?;
    let Some(location) = location else {
        bail!("the authorization server answered {status} without a redirect: {body}");
    };
    let back = tamper(url::Url::parse(&location).context("the redirect")?);
    let (status, _, body) = http_get(&back)?;
    Ok((status, body))
}

/// A redirect's query with `name` set to `value` (added when missing).
pub fn with_param(url: url::Url, name: &str, value: &str) -> url::Url {
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .into_owned()
        .filter(|(key, _)| key != name)
        .chain([(name.to_string(), value.to_string())])
        .collect();
    let mut changed = url;
    changed.query_pairs_mut().clear().extend_pairs(pairs);
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "client-a";
    const B: &str = "client-b";
    const REDIRECT: &str = "http://127.0.0.1:4321/oauth/callback";

    /// A verifier of the allowed form and its S256 challenge.
    fn pkce(seed: &str) -> (String, String) {
        let verifier = format!("{seed}-{}", "v".repeat(50));
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(verifier.as_bytes()));
        (verifier, challenge)
    }

    /// Signs in as `client` with `challenge`: the code the provider redirects back with.
    fn code_for(server: &OAuthServer, client: &str, challenge: &str) -> String {
        let mut url = url::Url::parse(&server.authorize_url()).unwrap();
        url.query_pairs_mut().extend_pairs([
            ("response_type", "code"),
            ("client_id", client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("state", "s"),
        ]);
        let (status, location, body) = http_get(&url).unwrap();
        assert_eq!(status, 302, "{body}");
        let back = url::Url::parse(&location.unwrap()).unwrap();
        let code = back.query_pairs().find(|(name, _)| name == "code");
        code.expect("a code").1.into_owned()
    }

    /// POSTs `params` to the token endpoint with `content_type`: the status and the JSON answer.
    fn token(server: &OAuthServer, content_type: &str, params: &[(&str, &str)]) -> (u16, Value) {
        post(server, "/token", content_type, params)
    }

    /// POSTs `params` to `path`: the status and the JSON answer (`null` for an empty body).
    fn post(
        server: &OAuthServer,
        path: &str,
        content_type: &str,
        params: &[(&str, &str)],
    ) -> (u16, Value) {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params)
            .finish();
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: {content_type}\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        let value = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(body).unwrap()
        };
        (status, value)
    }

    fn revoke(server: &OAuthServer, client: &str, token: &str) -> (u16, Value) {
        post(
            server,
            "/revoke",
            FORM,
            &[
                ("token", token),
                ("token_type_hint", "refresh_token"),
                ("client_id", client),
            ],
        )
    }

    const FORM: &str = "application/x-www-form-urlencoded";

    fn redeem(server: &OAuthServer, client: &str, code: &str, verifier: &str) -> (u16, Value) {
        token(
            server,
            FORM,
            &[
                ("grant_type", "authorization_code"),
                ("client_id", client),
                ("code", code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", verifier),
            ],
        )
    }

    fn refresh(server: &OAuthServer, client: &str, refresh_token: &str) -> (u16, Value) {
        token(
            server,
            FORM,
            &[
                ("grant_type", "refresh_token"),
                ("client_id", client),
                ("refresh_token", refresh_token),
            ],
        )
    }

    fn error(answer: (u16, Value)) -> String {
        assert_eq!(answer.0, 400, "{}", answer.1);
        answer.1["error"].as_str().unwrap().to_string()
    }

    #[test]
    fn a_well_formed_exchange_and_refresh_succeed() {
        let server = OAuthServer::start(A, Duration::from_secs(60)).unwrap();
        let (verifier, challenge) = pkce("ok");
        let code = code_for(&server, A, &challenge);
        let (status, tokens) = redeem(&server, A, &code, &verifier);
        assert_eq!(status, 200, "{tokens}");
        let (status, fresh) = refresh(&server, A, tokens["refresh_token"].as_str().unwrap());
        assert_eq!(status, 200, "{fresh}");
        assert!(server.access_valid(fresh["access_token"].as_str().unwrap()));
        assert_eq!(server.grants(), ["authorization_code", "refresh_token"]);
    }

    #[test]
    fn a_token_request_that_is_not_form_encoded_is_refused() {
        let server = OAuthServer::start(A, Duration::from_secs(60)).unwrap();
        let (verifier, challenge) = pkce("json");
        let code = code_for(&server, A, &challenge);
        let params = [
            ("grant_type", "authorization_code"),
            ("client_id", A),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier.as_str()),
        ];
        assert_eq!(
            error(token(&server, "application/json", &params)),
            "invalid_request"
        );
        assert_eq!(
            error(token(&server, "text/plain", &params)),
            "invalid_request"
        );
        // The code was not spent on the refused request; a charset parameter is fine.
        let (status, answer) = token(&server, &format!("{FORM}; charset=UTF-8"), &params);
        assert_eq!(status, 200, "{answer}");
    }

    #[test]
    fn one_clients_code_and_refresh_token_are_refused_to_another() {
        let server = OAuthServer::start(A, Duration::from_secs(60)).unwrap();
        server.add_client(B);
        let (verifier, challenge) = pkce("a");
        let code = code_for(&server, A, &challenge);
        assert_eq!(error(redeem(&server, B, &code, &verifier)), "invalid_grant");

        let code = code_for(&server, A, &challenge);
        let (status, tokens) = redeem(&server, A, &code, &verifier);
        assert_eq!(status, 200, "{tokens}");
        let refresh_token = tokens["refresh_token"].as_str().unwrap();
        assert_eq!(error(refresh(&server, B, refresh_token)), "invalid_grant");
        // Still A's: B's attempt did not spend it.
        assert_eq!(refresh(&server, A, refresh_token).0, 200);
        // B is a client in its own right.
        let (verifier, challenge) = pkce("b");
        let code = code_for(&server, B, &challenge);
        assert_eq!(redeem(&server, B, &code, &verifier).0, 200);
        // And a client nobody registered is not.
        let (verifier, _) = pkce("c");
        let answer = redeem(&server, "client-c", &code, &verifier);
        assert_eq!(answer.0, 401, "{}", answer.1);
    }

    #[test]
    fn an_expired_code_is_refused() {
        let server = OAuthServer::start(A, Duration::from_secs(60)).unwrap();
        server.set_code_lifetime(Duration::ZERO);
        let (verifier, challenge) = pkce("late");
        let code = code_for(&server, A, &challenge);
        assert_eq!(error(redeem(&server, A, &code, &verifier)), "invalid_grant");
        server.set_code_lifetime(CODE_LIFETIME);
        let code = code_for(&server, A, &challenge);
        assert_eq!(redeem(&server, A, &code, &verifier).0, 200);
    }

    #[test]
    fn a_rotated_out_refresh_token_presented_again_revokes_its_family() {
        let server = OAuthServer::start(A, Duration::from_secs(60)).unwrap();
        let (verifier, challenge) = pkce("family");
        let code = code_for(&server, A, &challenge);
        let (_, first) = redeem(&server, A, &code, &verifier);
        let old = first["refresh_token"].as_str().unwrap();
        let (status, second) = refresh(&server, A, old);
        assert_eq!(status, 200, "{second}");
        // The old one again (an attacker who stole it, or the legitimate client after theft).
        assert_eq!(error(refresh(&server, A, old)), "invalid_grant");
        // The whole family went with it: the newer refresh token and its access token too.
        let newer = second["refresh_token"].as_str().unwrap();
        assert_eq!(error(refresh(&server, A, newer)), "invalid_grant");
        assert!(!server.access_valid(second["access_token"].as_str().unwrap()));
    }

    #[test]
    fn revoking_a_refresh_token_ends_its_grant_and_only_its_client_may() {
        let server = OAuthServer::start(A, Duration::from_secs(60)).unwrap();
        server.add_client(B);
        let (verifier, challenge) = pkce("revoke");
        let code = code_for(&server, A, &challenge);
        let (_, tokens) = redeem(&server, A, &code, &verifier);
        let refresh_token = tokens["refresh_token"].as_str().unwrap();
        assert_eq!(
            error(revoke(&server, B, refresh_token)),
            "unauthorized_client"
        );
        assert_eq!(revoke(&server, A, refresh_token).0, 200);
        assert_eq!(error(refresh(&server, A, refresh_token)), "invalid_grant");
        assert!(!server.access_valid(tokens["access_token"].as_str().unwrap()));
        // A token it does not know is answered 200 too (RFC 7009 §2.2).
        assert_eq!(revoke(&server, A, "never-issued").0, 200);
        assert_eq!(server.revocations(), ["refresh", "unknown"]);
        let (status, _) = post(&server, "/revoke", "application/json", &[("token", "x")]);
        assert_eq!(status, 400);
    }

    #[test]
    fn a_verifier_of_the_wrong_length_or_characters_is_refused() {
        let server = OAuthServer::start(A, Duration::from_secs(60)).unwrap();
        let too_short = "a".repeat(42);
        let too_long = "a".repeat(129);
        let bad_character = format!("{}+/", "a".repeat(50));
        for verifier in [too_short, too_long, bad_character] {
            // Its challenge matches: only its form is wrong.
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            let code = code_for(&server, A, &challenge);
            assert_eq!(
                error(redeem(&server, A, &code, &verifier)),
                "invalid_request",
                "{verifier}"
            );
        }
        let (_, challenge) = pkce("right");
        let code = code_for(&server, A, &challenge);
        let (wrong, _) = pkce("wrong");
        assert_eq!(error(redeem(&server, A, &code, &wrong)), "invalid_grant");
    }
}
