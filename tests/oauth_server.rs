//! A loopback OAuth 2.0 authorization server for tests of app accounts, holding to the rules a
//! real provider enforces: RFC 6749's authorization code grant (a code is single-use and bound
//! to the client id and redirect URI it was issued for; a reused code is `invalid_grant` and
//! revokes what it yielded, §4.1.2), RFC 7636's PKCE (S256 only; the verifier must hash to the
//! challenge), RFC 8252's loopback redirects (`http://127.0.0.1:<any port>/oauth/callback`),
//! the state echoed, and refresh tokens rotated on every use (a rotated-out or revoked refresh
//! token is `invalid_grant`). Errors are RFC 6749 §5.2 JSON. Its sign-in page approves at once
//! (a 302 back to the client), which is what a browser driving it sees after the person signed in.
//!
//! Blocking std networking on its own thread, like [`crate::model_server`]; dropped, it stops.
//! [`browse`] is the test's browser: it fetches the authorization URL, follows the provider's
//! redirect (optionally tampered with, to play an attacker) and returns the page it lands on.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

/// The only redirect path the server accepts (Osprey's loopback listener).
const CALLBACK_PATH: &str = "/oauth/callback";

struct Code {
    client_id: String,
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
    deny_next: bool,
}

/// The server; see the module docs.
pub struct OAuthServer {
    port: u16,
    client_id: String,
    lifetime: Arc<AtomicU64>,
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
    /// Listens on a free loopback port for the one client `client_id`; access tokens live
    /// `lifetime` (whole seconds).
    pub fn start(client_id: &str, lifetime: Duration) -> Result<OAuthServer> {
        let listener = TcpListener::bind("127.0.0.1:0").context("binding a loopback port")?;
        let port = listener.local_addr()?.port();
        let server = OAuthServer {
            port,
            client_id: client_id.to_string(),
            lifetime: Arc::new(AtomicU64::new(lifetime.as_secs())),
            state: Arc::default(),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let context = Provider {
            client_id: server.client_id.clone(),
            lifetime: Arc::clone(&server.lifetime),
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

    /// Access tokens issued from now on live this long.
    pub fn set_lifetime(&self, lifetime: Duration) {
        self.lifetime.store(lifetime.as_secs(), Ordering::Relaxed);
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
    client_id: String,
    lifetime: Arc<AtomicU64>,
    state: Arc<Mutex<State>>,
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
            ("POST", "/token") => {
                let params = form(&request.body);
                self.token(&mut stream, &params)
            }
            _ => respond(&mut stream, "404 Not Found", &[], "not found"),
        }
    }

    fn authorize(
        &self,
        stream: &mut TcpStream,
        query: &HashMap<String, String>,
    ) -> std::io::Result<()> {
        let get = |name: &str| query.get(name).map(String::as_str).unwrap_or_default();
        // §4.1.2.1: a bad client or redirect URI is never redirected to.
        if get("client_id") != self.client_id {
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
            let mut locked = self.lock();
            locked.codes.insert(
                code.clone(),
                Code {
                    client_id: self.client_id.clone(),
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
        // A public client identifies itself in the body (it has no secret).
        if get("client_id") != self.client_id {
            self.lock().refusals.push("invalid_client".into());
            return token_error(stream, "invalid_client", "unknown client_id");
        }
        let grant = get("grant_type").to_string();
        let issued = match grant.as_str() {
            "authorization_code" => self.redeem_code(params),
            "refresh_token" => self.rotate_refresh(get("refresh_token")),
            _ => Err((
                "unsupported_grant_type",
                "only authorization_code and refresh_token",
            )),
        };
        match issued {
            Ok((family, scope)) => {
                let body = self.issue(family, &scope);
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

    /// §4.1.3 and RFC 7636 §4.6: the code, once, for its client and redirect URI, with the
    /// verifier that hashes to its challenge.
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
            let family = code.family;
            if let Some(family) = family {
                state.revoked_families.push(family);
                for refresh in state.refresh.values_mut() {
                    if refresh.family == family {
                        refresh.dead = true;
                    }
                }
            }
            return Err(("invalid_grant", "the authorization code was already used"));
        }
        code.used = true;
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
        let hashed = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(verifier.as_bytes()));
        if !(43..=128).contains(&verifier.len()) || hashed != code.challenge {
            return Err(("invalid_grant", "PKCE verification failed"));
        }
        let family = fresh_family();
        code.family = Some(family);
        Ok((family, code.scope.clone()))
    }

    /// §6 with rotation: the old refresh token dies as the new one is issued.
    fn rotate_refresh(
        &self,
        token: &str,
    ) -> std::result::Result<(u64, String), (&'static str, &'static str)> {
        let mut state = self.lock();
        let Some(refresh) = state.refresh.get_mut(token) else {
            return Err(("invalid_grant", "unknown refresh token"));
        };
        if refresh.dead {
            return Err((
                "invalid_grant",
                "the refresh token was revoked or already used",
            ));
        }
        if refresh.client_id != self.client_id {
            return Err((
                "invalid_grant",
                "the refresh token belongs to another client",
            ));
        }
        refresh.dead = true;
        Ok((refresh.family, refresh.scope.clone()))
    }

    fn issue(&self, family: u64, scope: &str) -> Value {
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
                client_id: self.client_id.clone(),
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
