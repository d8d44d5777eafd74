//! App accounts: the OAuth 2.0 authorization code grant with PKCE that Osprey runs for an app
//! whose manifest declares an `oauth` block, the way a native app must (RFC 8252): the person
//! signs in in their own browser (Osprey never sees their password), the provider sends the
//! browser back to a one-shot listener on `127.0.0.1` (an ephemeral port, one exact path, a
//! deadline), the `state` must be the one Osprey sent (RFC 6749 §10.12) and the code is
//! exchanged with the PKCE verifier (RFC 7636, S256), so a code caught on its way back is
//! useless to anyone else. Refreshing follows RFC 6749 §6; a refusal with `invalid_grant` means
//! the grant is gone and the person must connect again ([`Error::OAuth`] with reason
//! `invalid_grant`).
//!
//! The protocol itself is the `oauth2` crate's. This module keeps no tokens (the core keeps them
//! in the secret store) and opens no browser itself: the shell supplies a [`Browser`]. Tokens
//! never reach a log: [`Tokens`]'s `Debug` prints none of them.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicErrorResponseType, BasicRequestTokenError};
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, CsrfToken, EndpointNotSet, EndpointSet, HttpClientError,
    PkceCodeChallenge, RedirectUrl, RefreshToken, Scope, TokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::manifest::OAuth;
use crate::{Error, Result};

/// The path the provider sends the browser back to (the port is picked at each connect).
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// How long the person has to sign in before the listener gives up.
pub const DEFAULT_SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);
/// Each request to the provider's token endpoint.
const TOKEN_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens a URL in the person's browser. The desktop opens the system browser; the command line
/// prints the URL and tries `xdg-open`; tests fetch it as a browser would.
pub trait Browser: Send + Sync {
    /// Starts opening `url`; returns once it is on its way (not when the person has signed in).
    fn open(&self, url: &str) -> std::result::Result<(), String>;
}

/// What a provider granted: kept by the core in the secret store, never in the database.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    /// Absent when the provider issues none (the person must connect again at expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Usually `bearer`.
    pub token_type: String,
    /// Unix seconds; `None` when the provider did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When these tokens were obtained (unix seconds): with `expires_at`, their lifetime.
    pub obtained_at: u64,
    /// The scopes granted (the provider's answer, else those asked for).
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("token_type", &self.token_type)
            .field("expires_at", &self.expires_at)
            .field("has_refresh_token", &self.refresh_token.is_some())
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// When to refresh: ahead of expiry by a fifth of the tokens' lifetime, at most five
    /// minutes and at least one second (unix seconds). `None` when they do not expire or
    /// cannot be refreshed.
    pub fn refresh_due(&self) -> Option<u64> {
        let expires_at = self.expires_at?;
        self.refresh_token.as_ref()?;
        let lifetime = expires_at.saturating_sub(self.obtained_at);
        let ahead = (lifetime / 5).clamp(1, 300);
        Some(expires_at.saturating_sub(ahead))
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

type Client = BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// One app's OAuth client, built from its manifest's `oauth` block.
#[derive(Clone)]
pub struct OAuthClient {
    config: OAuth,
    http: reqwest::Client,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("provider", &self.config.provider)
            .finish_non_exhaustive()
    }
}

fn failed(reason: &'static str, message: impl Into<String>) -> Error {
    Error::OAuth {
        reason,
        message: message.into(),
    }
}

impl OAuthClient {
    /// `allow_loopback`: whether plain-http endpoints on this machine may be used (a
    /// developer's own authorization server; the core allows it for sideloaded apps only). The
    /// manifest already refused every other non-https URL.
    pub fn new(config: &OAuth, allow_loopback: bool) -> Result<OAuthClient> {
        if config.uses_loopback_http() && !allow_loopback {
            return Err(failed(
                "endpoint_refused",
                format!(
                    "the {} endpoints are plain http:// on this machine, which only a sideloaded \
                     app under development may use; an installed app must use https://",
                    config.provider
                ),
            ));
        }
        let http = reqwest::Client::builder()
            // A token endpoint that redirects would carry the code or refresh token elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TOKEN_REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| failed("unreachable", format!("building the HTTP client: {e}")))?;
        Ok(OAuthClient {
            config: config.clone(),
            http,
        })
    }

    pub fn provider(&self) -> &str {
        &self.config.provider
    }

    fn client(&self, redirect: Option<&str>) -> Result<Client> {
        let auth = AuthUrl::new(self.config.authorize_url.clone())
            .map_err(|e| failed("endpoint_refused", format!("authorize_url: {e}")))?;
        let token = TokenUrl::new(self.config.token_url.clone())
            .map_err(|e| failed("endpoint_refused", format!("token_url: {e}")))?;
        let mut client = BasicClient::new(ClientId::new(self.config.client_id.clone()))
            .set_auth_uri(auth)
            .set_token_uri(token);
        if let Some(redirect) = redirect {
            client = client.set_redirect_uri(
                RedirectUrl::new(redirect.to_string())
                    .map_err(|e| failed("listener", format!("redirect URI: {e}")))?,
            );
        }
        Ok(client)
    }

    /// Runs the whole grant: listens on a fresh loopback port, has `browser` open the
    /// provider's sign-in page, waits (at most `timeout`) for the provider to send the browser
    /// back, checks the state, exchanges the code with the PKCE verifier and answers the
    /// browser with a page saying how it went.
    pub async fn connect(&self, browser: &dyn Browser, timeout: Duration) -> Result<Tokens> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| failed("listener", format!("listening on 127.0.0.1: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| failed("listener", e.to_string()))?
            .port();
        // RFC 8252 §7.3: the loopback IP literal, not `localhost`.
        let redirect = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
        let client = self.client(Some(&redirect))?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state) = client
            .authorize_url(CsrfToken::new_random)
            .add_scopes(self.config.scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(challenge)
            .url();

        let (answers, mut received) = mpsc::channel::<Answer>(1);
        let stop = tokio_util::sync::CancellationToken::new();
        let server = tokio::spawn(serve_callback(listener, answers, stop.clone()));
        let _stop_server = stop.clone().drop_guard();

        browser.open(url.as_str()).map_err(|why| {
            failed(
                "browser",
                format!("could not open the browser ({why}); open this address yourself: {url}"),
            )
        })?;
        let answer = tokio::time::timeout(timeout, received.recv())
            .await
            .map_err(|_| {
                failed(
                    "timeout",
                    format!(
                        "no answer from {} within {} s: sign in again from the start",
                        self.config.provider,
                        timeout.as_secs()
                    ),
                )
            })?
            .ok_or_else(|| failed("listener", "the loopback listener stopped"))?;

        let outcome = self
            .redeem(&client, &answer.query, state.secret(), verifier)
            .await;
        let page = match &outcome {
            Ok(_) => page(
                "Connected",
                &format!(
                    "Osprey is connected to your {} account. You can close this window.",
                    self.config.provider
                ),
            ),
            Err(error) => page(
                "Not connected",
                &format!("{error}. You can close this window and try again from Osprey."),
            ),
        };
        let _ = answer.reply.send(page);
        // Let the page reach the browser before the listener goes.
        stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
        outcome
    }

    /// Checks what the provider sent back and exchanges the code.
    async fn redeem(
        &self,
        client: &Client,
        query: &HashMap<String, String>,
        expected_state: &str,
        verifier: oauth2::PkceCodeVerifier,
    ) -> Result<Tokens> {
        // The state first: an answer to someone else's request is not looked at further.
        let state = query.get("state").map(String::as_str).unwrap_or_default();
        if !constant_time_equal(state.as_bytes(), expected_state.as_bytes()) {
            return Err(failed(
                "state_mismatch",
                "the answer that came back does not carry the state Osprey sent (a forged or \
                 stale sign-in); nothing was connected",
            ));
        }
        if let Some(error) = query.get("error") {
            let detail = query
                .get("error_description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            return Err(failed(
                "denied",
                format!(
                    "{} refused the sign-in ({error}{detail})",
                    self.config.provider
                ),
            ));
        }
        let Some(code) = query.get("code").filter(|code| !code.is_empty()) else {
            return Err(failed(
                "no_code",
                "the answer that came back carries no authorization code",
            ));
        };
        let response = client
            .exchange_code(AuthorizationCode::new(code.clone()))
            .set_pkce_verifier(verifier)
            .request_async(&self.http)
            .await
            .map_err(|error| self.token_error("exchanging the authorization code", error))?;
        Ok(self.tokens(&response, None))
    }

    /// Exchanges `refresh_token` for new tokens. A provider that issues no new refresh token
    /// leaves the old one in force (RFC 6749 §6), so it is kept.
    pub async fn refresh(&self, refresh_token: &str) -> Result<Tokens> {
        let client = self.client(None)?;
        let response = client
            .exchange_refresh_token(&RefreshToken::new(refresh_token.to_string()))
            .request_async(&self.http)
            .await
            .map_err(|error| self.token_error("refreshing the tokens", error))?;
        Ok(self.tokens(&response, Some(refresh_token)))
    }

    /// Asks the provider to revoke the grant behind `tokens` at its RFC 7009 endpoint: the
    /// refresh token when there is one (which revokes the grant's access tokens too, §2.1),
    /// else the access token. `Ok(false)` when the manifest names no revocation endpoint (the
    /// tokens then stay valid at the provider until they expire or the person revokes the
    /// app there). A token the provider no longer knows counts as revoked (§2.2).
    ///
    /// The request is made here rather than by the `oauth2` crate, whose revocation refuses
    /// every `http://` endpoint: a sideloaded app's loopback authorization server (which
    /// [`OAuthClient::new`] allows, as for the token endpoint) could not be revoked at.
    pub async fn revoke(&self, tokens: &Tokens) -> Result<bool> {
        let Some(url) = &self.config.revocation_url else {
            return Ok(false);
        };
        let (token, hint) = match &tokens.refresh_token {
            Some(refresh) => (refresh, "refresh_token"),
            None => (&tokens.access_token, "access_token"),
        };
        let provider = &self.config.provider;
        let response = self
            .http
            .post(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&[
                ("token", token.as_str()),
                ("token_type_hint", hint),
                ("client_id", self.config.client_id.as_str()),
            ])
            .send()
            .await
            .map_err(|error| {
                failed(
                    "unreachable",
                    format!(
                        "{provider}'s revocation endpoint did not answer: {}",
                        error_chain(&error)
                    ),
                )
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok(true);
        }
        // §2.2.1: an error is RFC 6749 §5.2 JSON; say its code when there is one.
        let body = response.bytes().await.unwrap_or_default();
        let error = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|answer| answer.get("error")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("HTTP {status}"));
        Err(failed(
            "token_refused",
            format!("{provider} refused to revoke the tokens ({error})"),
        ))
    }

    fn tokens(
        &self,
        response: &oauth2::basic::BasicTokenResponse,
        previous_refresh: Option<&str>,
    ) -> Tokens {
        let obtained_at = now();
        Tokens {
            access_token: response.access_token().secret().clone(),
            refresh_token: response
                .refresh_token()
                .map(|token| token.secret().clone())
                .or_else(|| previous_refresh.map(str::to_owned)),
            token_type: response.token_type().as_ref().to_ascii_lowercase(),
            expires_at: response
                .expires_in()
                .map(|lifetime| obtained_at.saturating_add(lifetime.as_secs())),
            obtained_at,
            scopes: response.scopes().map_or_else(
                || self.config.scopes.clone(),
                |scopes| scopes.iter().map(|scope| scope.to_string()).collect(),
            ),
        }
    }

    fn token_error(
        &self,
        doing: &str,
        error: BasicRequestTokenError<HttpClientError<reqwest::Error>>,
    ) -> Error {
        use oauth2::RequestTokenError as E;
        let provider = &self.config.provider;
        match error {
            E::ServerResponse(response) => {
                let description = response
                    .error_description()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                let reason = if *response.error() == BasicErrorResponseType::InvalidGrant {
                    "invalid_grant"
                } else {
                    "token_refused"
                };
                failed(
                    reason,
                    format!(
                        "{provider} refused {doing} ({}{description})",
                        response.error()
                    ),
                )
            }
            E::Request(error) => failed(
                "unreachable",
                format!(
                    "{doing}: {provider}'s token endpoint did not answer: {}",
                    error_chain(&error)
                ),
            ),
            E::Parse(error, body) => failed(
                "token_refused",
                format!(
                    "{doing}: {provider} answered with something that is not a token \
                     response ({error}; {} bytes)",
                    body.len()
                ),
            ),
            E::Other(message) => failed("token_refused", format!("{doing}: {message}")),
        }
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn constant_time_equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// What the provider sent the browser back with, and where to send the page it sees.
struct Answer {
    query: HashMap<String, String>,
    reply: oneshot::Sender<String>,
}

/// Serves the callback path until `stop`: the first request there is the answer (later ones
/// are told the sign-in is over); any other path is 404, so a browser's favicon request uses
/// nothing up.
async fn serve_callback(
    listener: tokio::net::TcpListener,
    answers: mpsc::Sender<Answer>,
    stop: tokio_util::sync::CancellationToken,
) {
    use axum::extract::{Query, State};
    use axum::response::Html;

    async fn callback(
        State(answers): State<mpsc::Sender<Answer>>,
        Query(query): Query<HashMap<String, String>>,
    ) -> Html<String> {
        let (reply, page_ready) = oneshot::channel();
        if answers.try_send(Answer { query, reply }).is_err() {
            return Html(page(
                "Already answered",
                "This sign-in is over. You can close this window.",
            ));
        }
        Html(page_ready.await.unwrap_or_else(|_| {
            page(
                "Not connected",
                "Osprey stopped waiting. You can close this window.",
            )
        }))
    }

    let app = axum::Router::new()
        .route(CALLBACK_PATH, axum::routing::get(callback))
        .with_state(answers);
    let shutdown = async move { stop.cancelled().await };
    if let Err(error) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        tracing::warn!(%error, "the OAuth callback listener failed");
    }
}

/// The small page the browser shows at the end.
fn page(title: &str, message: &str) -> String {
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title} — Osprey</title></head>\
         <body style=\"font-family: sans-serif; margin: 3em\"><h1>{title}</h1><p>{message}</p>\
         </body></html>",
        title = escape(title),
        message = escape(message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(obtained_at: u64, expires_at: Option<u64>, refresh: bool) -> Tokens {
        Tokens {
            access_token: "secret-access".into(),
            refresh_token: refresh.then(|| "secret-refresh".into()),
            token_type: "bearer".into(),
            expires_at,
            obtained_at,
            scopes: vec!["repo".into()],
        }
    }

    #[test]
    fn refresh_is_due_ahead_of_expiry() {
        // An hour: five minutes ahead.
        assert_eq!(tokens(0, Some(3600), true).refresh_due(), Some(3300));
        // Ten seconds: two ahead; two seconds: one ahead.
        assert_eq!(tokens(100, Some(110), true).refresh_due(), Some(108));
        assert_eq!(tokens(100, Some(102), true).refresh_due(), Some(101));
        assert_eq!(tokens(100, None, true).refresh_due(), None);
        assert_eq!(tokens(100, Some(200), false).refresh_due(), None);
    }

    #[test]
    fn debug_prints_no_token() {
        let printed = format!("{:?}", tokens(0, Some(10), true));
        assert!(!printed.contains("secret"), "{printed}");
        assert!(printed.contains("has_refresh_token: true"), "{printed}");
    }

    #[test]
    fn loopback_endpoints_need_permission() {
        let config = OAuth {
            provider: "dev".into(),
            client_id: "client".into(),
            authorize_url: "http://127.0.0.1:9/authorize".into(),
            token_url: "http://127.0.0.1:9/token".into(),
            revocation_url: None,
            scopes: vec![],
        };
        let error = OAuthClient::new(&config, false).unwrap_err();
        assert_eq!(error.reason(), Some("endpoint_refused"));
        assert!(OAuthClient::new(&config, true).is_ok());
    }

    #[test]
    fn the_page_escapes_what_it_shows() {
        let shown = page("Not connected", "<script>x</script> & more");
        assert!(shown.contains("&lt;script&gt;x&lt;/script&gt; &amp; more"));
    }
}
