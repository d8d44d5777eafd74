//! App accounts end to end, against a loopback authorization server that enforces RFC 6749,
//! 7636 and 8252 (`osprey_tests::oauth_server`) and a test browser that drives the sign-in as a
//! person's browser would: connect, the token reaching a real sandboxed app through
//! `Configure` (and no other app), refresh ahead of expiry and at the app's request, a refresh
//! the provider refuses, disconnect, uninstall; and the sign-ins that must fail: a forged state,
//! an injected code (wrong PKCE verifier), a replayed code, a refusal, no answer.
#![cfg(unix)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use osprey_apps::Installer;
use osprey_apps::oauth::Browser;
use osprey_core::{Core, CoreOptions, PolicyOverride, events};
use osprey_tests::oauth_server::{OAuthServer, browse, http_get, with_param};
use osprey_tests::{app_project, fixture_binary};
use osprey_tools::Level;
use osprey_types::{AppAccountState, CoreEvent, Origin, UiErrorCode};
use serde_json::{Value, json};

const CLIENT: &str = "osprey-test-client";
const PROVIDER: &str = "devmail";

fn open(data: &Path) -> Core {
    Core::open(CoreOptions {
        data_dir: Some(data.to_path_buf()),
        policy: Some(PolicyOverride {
            level: Some(Level::Full),
            ask: None,
        }),
        secrets: Some(osprey_core::secrets::Backend::FileOnly),
    })
    .unwrap()
}

/// Sideloads the probe app as `id` with `extra` manifest fields; `prefix` names its tools.
fn sideload_probe(root: &Path, data: &Path, id: &str, prefix: &str, extra: Value) {
    let dir = root.join(id);
    let mut manifest = json!({
        "id": id,
        "name": format!("Probe {id}"),
        "version": "1.0.0",
        "provides": [format!("tool:{prefix}settings"), format!("tool:{prefix}account")],
    });
    for (key, value) in extra.as_object().unwrap() {
        manifest[key] = value.clone();
    }
    app_project(&dir, &manifest, &fixture_binary("osprey-fixture-probe-app"));
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/tool-prefix"), prefix).unwrap();
    Installer::new(data.join("apps")).sideload(&dir).unwrap();
}

fn mail_manifest(server: &OAuthServer) -> Value {
    json!({
        "permissions": [format!("oauth:{PROVIDER}")],
        "oauth": {
            "provider": PROVIDER,
            "client_id": CLIENT,
            "authorize_url": server.authorize_url(),
            "token_url": server.token_url(),
            "revocation_url": server.revocation_url(),
            "scopes": ["mail.read", "mail.send"],
        },
    })
}

type Tamper = Box<dyn FnOnce(&str, url::Url) -> url::Url + Send>;
/// A page the browser landed on (status and body), or why it could not.
type Landing = Result<(u16, String), String>;

/// The person's browser: fetches the sign-in page, which approves at once, and follows the
/// provider back to Osprey, through `tamper` when one is set (an attacker on the way).
#[derive(Clone, Default)]
struct TestBrowser {
    tamper: Arc<Mutex<Option<Tamper>>>,
    /// Each page the browser landed on: status and body, or why it could not.
    pages: Arc<Mutex<Vec<Landing>>>,
    /// Open nothing (the person walked away).
    idle: bool,
}

impl TestBrowser {
    fn tampering(tamper: impl FnOnce(&str, url::Url) -> url::Url + Send + 'static) -> TestBrowser {
        let browser = TestBrowser::default();
        *browser.tamper.lock().unwrap() = Some(Box::new(tamper));
        browser
    }

    fn last_page(&self) -> (u16, String) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(page) = self.pages.lock().unwrap().last() {
                return page.clone().unwrap();
            }
            assert!(Instant::now() < deadline, "the browser never landed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Browser for TestBrowser {
    fn open(&self, url: &str) -> Result<(), String> {
        if self.idle {
            return Ok(());
        }
        let url = url.to_string();
        let tamper = self.tamper.lock().unwrap().take();
        let pages = Arc::clone(&self.pages);
        std::thread::spawn(move || {
            let authorization = url.clone();
            let page = browse(&url, move |back| match tamper {
                Some(tamper) => tamper(&authorization, back),
                None => back,
            });
            pages
                .lock()
                .unwrap()
                .push(page.map_err(|e| format!("{e:#}")));
        });
        Ok(())
    }
}

async fn until<T>(what: &str, deadline: Duration, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(started.elapsed() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next account event.
async fn account_event(events: &mut events::Receiver) -> osprey_types::AppAccount {
    let wait = async {
        loop {
            if let CoreEvent::AppAccountChanged { account } = events.recv().await.unwrap() {
                return account;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("no account event")
}

/// What the app reports it was pushed last.
async fn pushed(core: &Core, tool: &str) -> Value {
    let result = core.call_tool(Origin::User, tool, json!({})).await;
    assert!(!result.is_error, "{result:?}");
    serde_json::from_str(&result.text_content()).unwrap()
}

fn token_in(settings: &Value) -> Option<String> {
    settings
        .pointer(&format!("/osprey/accounts/{PROVIDER}/access_token"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The secret store file (tests use the file backend) as text.
fn secrets_file(data: &Path) -> String {
    std::fs::read_to_string(data.join("secrets.json")).unwrap_or_default()
}

fn database_bytes(data: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for name in ["osprey.db", "osprey.db-wal"] {
        bytes.extend(std::fs::read(data.join(name)).unwrap_or_default());
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connected_account_reaches_its_app_is_refreshed_and_goes_away() {
    let server = OAuthServer::start(CLIENT, Duration::from_secs(3)).unwrap();
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let core = open(&data);
    sideload_probe(root.path(), &data, "mail", "", mail_manifest(&server));
    sideload_probe(
        root.path(),
        &data,
        "other",
        "other_",
        json!({"permissions": ["user:token"]}),
    );
    core.set_store_token(Some("store-token-of-the-person"))
        .await
        .unwrap();

    let accounts = core.app_accounts().await;
    assert_eq!(accounts.len(), 1, "{accounts:?}");
    assert_eq!(accounts[0].state, AppAccountState::NotConnected);
    // What the person is shown before connecting.
    assert_eq!(accounts[0].scopes, ["mail.read", "mail.send"]);
    assert_eq!(accounts[0].authorize_url, server.authorize_url());

    core.start_apps().unwrap();
    let registry = core.test_registry().clone();
    until("both probes' tools", Duration::from_secs(30), async || {
        let names = registry.names();
        (names.contains(&"settings".to_owned()) && names.contains(&"other_settings".to_owned()))
            .then_some(())
    })
    .await;
    let before = pushed(&core, "settings").await;
    assert_eq!(before["osprey"], json!({"accounts": {}}), "{before}");
    let other = pushed(&core, "other_settings").await;
    assert_eq!(
        other["osprey"],
        json!({"store_token": "store-token-of-the-person"}),
        "user:token passes the store token, and nothing else: {other}"
    );

    // Connect: the sign-in runs in the browser, the tokens reach the running app.
    let mut events = core.subscribe();
    let browser = TestBrowser::default();
    let account = core
        .connect_app_account("mail", None, &browser, Some(Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(account.state, AppAccountState::Connected);
    assert_eq!(account.scopes, ["mail.read", "mail.send"]);
    let (status, page) = browser.last_page();
    assert_eq!(status, 200);
    assert!(page.contains("You can close this window"), "{page}");
    assert_eq!(
        account_event(&mut events).await.state,
        AppAccountState::Connected
    );
    let first = token_in(&pushed(&core, "settings").await).expect("the app has its token");
    assert!(server.access_valid(&first));
    // Only the app that declared the provider gets it; the store token only goes to the app
    // holding `user:token`.
    let other = pushed(&core, "other_settings").await;
    assert!(!other.to_string().contains(&first), "{other}");
    assert_eq!(
        pushed(&core, "settings").await["osprey"].get("store_token"),
        None
    );
    // In the secret store, never in the database.
    assert!(secrets_file(&data).contains(&first));
    assert!(!contains(&database_bytes(&data), &first));

    // Ahead of expiry the running Osprey refreshes and pushes the new token.
    server.set_lifetime(Duration::from_secs(3600));
    let second = until("the refreshed token", Duration::from_secs(20), async || {
        token_in(&pushed(&core, "settings").await).filter(|token| *token != first)
    })
    .await;
    assert!(server.access_valid(&second));
    assert_eq!(server.grants(), ["authorization_code", "refresh_token"]);

    // At the app's request: it answers `token_expired`, Osprey refreshes, pushes and calls again.
    let result = core
        .call_tool(
            Origin::User,
            "account",
            json!({"provider": PROVIDER, "reject": second}),
        )
        .await;
    assert!(!result.is_error, "{result:?}");
    let third = serde_json::from_str::<Value>(&result.text_content()).unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(third, second);
    assert!(server.access_valid(&third));
    // Each refresh used the rotated refresh token of the one before.
    assert_eq!(
        server.grants(),
        ["authorization_code", "refresh_token", "refresh_token"]
    );

    // The person removes the app's access at the provider: the next refresh is refused, the
    // account is dropped and the person told.
    server.revoke_all();
    let mut events = core.subscribe();
    let result = core
        .call_tool(
            Origin::User,
            "account",
            json!({"provider": PROVIDER, "reject": third}),
        )
        .await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result.text_content().contains("connect mail again"),
        "{result:?}"
    );
    let dropped = account_event(&mut events).await;
    assert_eq!(dropped.state, AppAccountState::Disconnected);
    assert!(
        dropped.reason.as_deref().unwrap().contains("invalid_grant"),
        "{dropped:?}"
    );
    assert_eq!(
        core.app_accounts().await[0].state,
        AppAccountState::Disconnected
    );
    assert_eq!(
        pushed(&core, "settings").await["osprey"],
        json!({"accounts": {}})
    );
    assert!(!secrets_file(&data).contains(&third));

    // Connected again, then disconnected by the person.
    core.connect_app_account("mail", Some(PROVIDER), &TestBrowser::default(), None)
        .await
        .unwrap();
    let again = token_in(&pushed(&core, "settings").await).unwrap();
    assert!(server.access_valid(&again));
    let account = core
        .disconnect_app_account("mail", Some(PROVIDER))
        .await
        .unwrap();
    assert_eq!(account.state, AppAccountState::NotConnected);
    assert_eq!(
        pushed(&core, "settings").await["osprey"],
        json!({"accounts": {}})
    );
    assert!(!secrets_file(&data).contains(&again));
    // The provider was asked to revoke the grant (RFC 7009): the token no longer works there.
    assert!(
        account
            .reason
            .as_deref()
            .unwrap()
            .contains("revoked at devmail"),
        "{account:?}"
    );
    assert_eq!(server.revocations(), ["refresh"]);
    assert!(!server.access_valid(&again));

    // Uninstalling the app deletes its tokens.
    core.connect_app_account("mail", None, &TestBrowser::default(), None)
        .await
        .unwrap();
    assert!(secrets_file(&data).contains("app.mail.oauth.devmail"));
    let last = token_in(&pushed(&core, "settings").await).unwrap();
    core.uninstall_app("mail").await.unwrap();
    // ... and has the provider revoke them before the removal returns (a CLI exits then).
    assert!(!server.access_valid(&last));
    assert_eq!(server.revocations(), ["refresh", "refresh"]);
    assert!(
        !secrets_file(&data).contains("app.mail.oauth"),
        "{}",
        secrets_file(&data)
    );
    assert!(core.app_accounts().await.is_empty());
    core.stop_apps().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_injected_replayed_declined_and_unanswered_sign_ins_connect_nothing() {
    let server = OAuthServer::start(CLIENT, Duration::from_secs(3600)).unwrap();
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let core = open(&data);
    sideload_probe(root.path(), &data, "mail", "", mail_manifest(&server));
    let connect = async |browser: TestBrowser, timeout: u64| {
        core.connect_app_account("mail", None, &browser, Some(Duration::from_secs(timeout)))
            .await
    };
    let state_of = async || core.app_accounts().await[0].state;

    // A forged state: refused before the code is looked at.
    let forged = TestBrowser::tampering(|_, back| with_param(back, "state", "forged"));
    let error = connect(forged.clone(), 30).await.unwrap_err();
    assert_eq!(error.code, UiErrorCode::OauthFailed);
    assert_eq!(error.reason.as_deref(), Some("state_mismatch"), "{error:?}");
    assert!(forged.last_page().1.contains("Not connected"));
    assert!(server.grants().is_empty() && server.refusals().is_empty());
    assert_eq!(state_of().await, AppAccountState::NotConnected);

    // An injected code: one issued for someone else's PKCE challenge, delivered with Osprey's
    // state. Only the verifier check can catch it, and does.
    let injected = TestBrowser::tampering(|authorization, back| {
        let attacker = url::Url::parse(authorization).unwrap();
        let attacker = with_param(
            attacker,
            "code_challenge",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        );
        let (_, location, _) = http_get(&attacker).unwrap();
        let location = url::Url::parse(&location.unwrap()).unwrap();
        let code = location
            .query_pairs()
            .find(|(name, _)| name == "code")
            .unwrap()
            .1
            .into_owned();
        with_param(back, "code", &code)
    });
    let error = connect(injected, 30).await.unwrap_err();
    assert_eq!(error.reason.as_deref(), Some("invalid_grant"), "{error:?}");
    assert!(
        error.message.contains("PKCE verification failed"),
        "{error:?}"
    );
    assert_eq!(server.refusals(), ["invalid_grant"]);
    assert_eq!(state_of().await, AppAccountState::NotConnected);

    // A replayed code: refused, and the connection made with it stays as it is here.
    connect(TestBrowser::default(), 30).await.unwrap();
    let used = server.issued_codes().last().unwrap().clone();
    let replayed = TestBrowser::tampering(move |_, back| with_param(back, "code", &used));
    let error = connect(replayed, 30).await.unwrap_err();
    assert_eq!(error.reason.as_deref(), Some("invalid_grant"), "{error:?}");
    assert!(error.message.contains("already used"), "{error:?}");
    assert_eq!(state_of().await, AppAccountState::Connected);

    // The person declines at the provider.
    core.disconnect_app_account("mail", None).await.unwrap();
    server.deny_next();
    let error = connect(TestBrowser::default(), 30).await.unwrap_err();
    assert_eq!(error.reason.as_deref(), Some("denied"), "{error:?}");
    assert!(error.message.contains("access_denied"), "{error:?}");

    // Nobody signs in: the listener gives up at its deadline.
    let idle = TestBrowser {
        idle: true,
        ..TestBrowser::default()
    };
    let started = Instant::now();
    let error = connect(idle, 1).await.unwrap_err();
    assert_eq!(error.reason.as_deref(), Some("timeout"), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(state_of().await, AppAccountState::NotConnected);

    // An app without an oauth block, or another provider, has nothing to connect.
    let error = core
        .connect_app_account("mail", Some("github"), &TestBrowser::default(), None)
        .await
        .unwrap_err();
    assert_eq!(error.reason.as_deref(), Some("no_oauth"), "{error:?}");
}
