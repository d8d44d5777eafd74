//! `osprey app accounts | connect | disconnect`: the apps' accounts with their providers. The
//! sign-in runs in this process (a one-shot listener on 127.0.0.1 while the person signs in
//! in their browser); the tokens go to the secret store, and a running desktop app or
//! `osprey daemon` is told to push them to the app.

use std::time::Duration;

use osprey_core::{Core, CoreError};
use osprey_types::{AppAccount, AppAccountState};
use serde_json::{Value, json};

/// The command line's browser: the address is always printed (a machine without a desktop, a
/// browser on another device), then the system's opener is tried.
struct SystemBrowser;

impl osprey_apps::oauth::Browser for SystemBrowser {
    fn open(&self, url: &str) -> Result<(), String> {
        eprintln!("osprey: open this address to sign in (trying your browser):\n  {url}");
        #[cfg(target_os = "macos")]
        let opener = ("open", Vec::<&str>::new());
        #[cfg(target_os = "windows")]
        let opener = ("explorer", Vec::<&str>::new());
        #[cfg(not(any(target_os = "macos", target_os = "windows")))]
        let opener = ("xdg-open", Vec::<&str>::new());
        let spawned = std::process::Command::new(opener.0)
            .args(opener.1)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        match spawned {
            Ok(mut child) => {
                // Reaped in the background; the address above works either way.
                std::thread::spawn(move || child.wait());
            }
            Err(error) => eprintln!("osprey: could not start {}: {error}", opener.0),
        }
        Ok(())
    }
}

fn describe(account: &AppAccount) -> String {
    let mut line = format!(
        "{} ({}): {} ",
        account.app_id, account.app_name, account.provider
    );
    match account.state {
        AppAccountState::Connected => {
            line.push_str("connected");
            if let Some(expires) = account.expires_at {
                let left = expires.saturating_sub(osprey_apps::oauth::now());
                line.push_str(&format!(", access token expires in {left} s"));
            }
        }
        AppAccountState::NotConnected => line.push_str("not connected"),
        AppAccountState::Disconnected => {
            line.push_str("disconnected");
            if let Some(reason) = &account.reason {
                line.push_str(&format!(" ({reason})"));
            }
        }
    }
    if !account.scopes.is_empty() {
        line.push_str(&format!("; scopes: {}", account.scopes.join(" ")));
    }
    line
}

pub fn list(accounts: &[AppAccount]) -> Value {
    let message = if accounts.is_empty() {
        "no installed app has an account to connect".to_string()
    } else {
        accounts.iter().map(describe).collect::<Vec<_>>().join("\n")
    };
    json!({"accounts": accounts, "message": message})
}

/// What the person is shown before the browser opens: who asks, where they will sign in, and
/// for what.
fn announce(account: &AppAccount) {
    let host = url::Url::parse(&account.authorize_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| account.authorize_url.clone());
    let scopes = if account.scopes.is_empty() {
        "no particular scopes".to_string()
    } else {
        account.scopes.join(", ")
    };
    eprintln!(
        "osprey: {} ({}) asks to use your {} account, signing in at {host}, with: {scopes}",
        account.app_name, account.app_id, account.provider
    );
}

pub async fn connect(
    core: &Core,
    id: &str,
    provider: Option<&str>,
    timeout: u64,
    json: bool,
) -> Result<Value, CoreError> {
    if !json
        && let Some(account) = core
            .app_accounts()
            .await
            .into_iter()
            .find(|account| account.app_id == id)
    {
        announce(&account);
    }
    let account = core
        .connect_app_account(
            id,
            provider,
            &SystemBrowser,
            Some(Duration::from_secs(timeout.max(1))),
        )
        .await?;
    Ok(json!({
        "message": format!(
            "connected {} to your {} account; the app has its token",
            account.app_id, account.provider
        ),
        "account": account,
    }))
}
