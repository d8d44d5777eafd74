//! The Accounts section of Settings: the mail accounts (`os.mail`) and the calendar and contacts
//! accounts (`dav.accounts`) the `os` tool uses, listed, added, changed, removed and tested from
//! the desktop instead of `osprey config set` one key at a time.
//!
//! The settings go through [`Core::set_setting`] (validated as the CLI's values are, stored, and
//! announced with `SettingChanged`); the `os` tool reads both settings and the passwords at each
//! call, so a change is in force at once. Passwords go only one way: into the secret store
//! through the functions the CLI uses ([`Core::set_mail_password`], the `dav.<name>.password`
//! key of [`Core::set_dav_setting`]); a view says whether one is stored, never what it is. An
//! empty password on an edit keeps the stored one; a rename carries it to the new name; removing
//! an account deletes it.
//!
//! "Test" runs what the tool would: for mail, the IMAP login and the folder list; for a DAV
//! account, the calendars and address books it serves. The answer is an [`AccountCheck`] in
//! words with the tool's error code, not a failed command: a wrong password is a result the page
//! shows beside the account.

use std::time::Duration;

use osprey_platform::dav::{ACCOUNTS_SETTING, DavAccountSetting, DavAccounts, password_secret};
use osprey_platform::mail::{MailAccount, MailServer, MailSettings, TlsMode};
use osprey_platform::{DavKind, OsTool};
use osprey_tools::{DomainTool, ToolContext};
use osprey_types::{
    AccountCheck, DavAccountInput, DavAccountView, MailAccountInput, MailAccountView,
    MailServerView, Origin, OsAccountsView, UiErrorCode,
};
use serde_json::json;

use crate::{Core, CoreError, CoreResult, settings};

fn invalid(message: impl Into<String>) -> CoreError {
    CoreError::new(UiErrorCode::InvalidSetting, message)
}

fn storage(error: &anyhow::Error) -> CoreError {
    CoreError::with_fallback(error, UiErrorCode::Storage)
}

/// Empty (after trimming) as `None`.
fn optional(value: &str) -> Option<String> {
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_string())
}

fn tls_mode(which: &str, value: &str) -> CoreResult<TlsMode> {
    match value.trim() {
        "" | "tls" => Ok(TlsMode::Tls),
        "starttls" => Ok(TlsMode::Starttls),
        "plain" => Ok(TlsMode::Plain),
        other => Err(invalid(format!(
            "the {which} security `{other}` is not one of tls, starttls or plain"
        ))),
    }
}

fn server(which: &str, view: &MailServerView) -> CoreResult<MailServer> {
    Ok(MailServer {
        host: view.host.trim().to_string(),
        port: view.port,
        tls: tls_mode(which, &view.tls)?,
    })
}

fn server_view(server: &MailServer) -> MailServerView {
    MailServerView {
        host: server.host.clone(),
        port: server.port,
        tls: server.tls.as_str().to_string(),
    }
}

fn dav_kind(value: &str) -> CoreResult<DavKind> {
    match value.trim() {
        "" | "dav" => Ok(DavKind::Dav),
        "caldav" => Ok(DavKind::Caldav),
        "carddav" => Ok(DavKind::Carddav),
        other => Err(invalid(format!(
            "`{other}` is not an account kind: dav (calendars and contacts), caldav or carddav"
        ))),
    }
}

fn dav_kind_name(kind: DavKind) -> &'static str {
    match kind {
        DavKind::Dav => "dav",
        DavKind::Caldav => "caldav",
        DavKind::Carddav => "carddav",
    }
}

/// The name being replaced by an edit, when it differs from the new one.
fn renamed_from<'a>(previous: &'a Option<String>, name: &str) -> Option<&'a str> {
    previous
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty() && *p != name)
}

/// How long a test may take in all: a server that does not answer is reported, not waited on.
const TEST_TIMEOUT: Duration = Duration::from_secs(30);

impl Core {
    /// The mail and calendar/contacts accounts as stored, each with whether a password is kept.
    pub fn os_accounts(&self) -> OsAccountsView {
        let stored = self.db().settings();
        let secrets = self.secrets();
        let has_password = |key: String| secrets.get(&key).ok().flatten().is_some();
        let mail: MailSettings = settings::read(&stored, settings::OS_MAIL);
        let dav: DavAccounts = settings::read(&stored, ACCOUNTS_SETTING);
        OsAccountsView {
            mail: mail
                .accounts
                .iter()
                .map(|account| MailAccountView {
                    name: account.name.clone(),
                    email: account.email.clone(),
                    display_name: account.display_name.clone().unwrap_or_default(),
                    username: account.username.clone().unwrap_or_default(),
                    imap: server_view(&account.imap),
                    smtp: server_view(&account.smtp),
                    sent_folder: account.sent_folder.clone().unwrap_or_default(),
                    password_stored: has_password(osprey_platform::mail::password_secret(
                        &account.name,
                    )),
                })
                .collect(),
            dav: dav
                .into_iter()
                .map(|(name, account)| DavAccountView {
                    password_stored: has_password(password_secret(&name)),
                    kind: dav_kind_name(account.kind).to_string(),
                    url: account.url,
                    username: account.username,
                    name,
                })
                .collect(),
        }
    }

    /// Adds or changes a mail account (in place, keeping its position: the first is the
    /// default) and stores its password when one is given. Refused with `invalid_setting` and
    /// the reason, nothing stored.
    pub async fn save_mail_account(&self, input: MailAccountInput) -> CoreResult<OsAccountsView> {
        let name = input.name.trim().to_string();
        let mut setting: MailSettings = settings::read(&self.db().settings(), settings::OS_MAIL);
        let previous = renamed_from(&input.previous_name, &name);
        let editing = previous.unwrap_or(&name);
        let existing = setting.accounts.iter().position(|a| a.name == editing);
        if previous.is_some() && existing.is_none() {
            return Err(invalid(format!(
                "there is no mail account named `{editing}`"
            )));
        }
        // Adding, or renaming onto another account's name: that account would be replaced
        // unseen.
        let taken = setting
            .accounts
            .iter()
            .any(|a| a.name.eq_ignore_ascii_case(&name) && a.name != editing);
        if taken || (input.previous_name.is_none() && existing.is_some()) {
            return Err(invalid(format!(
                "a mail account named `{name}` exists already"
            )));
        }
        let kept = existing.map(|i| setting.accounts[i].clone());
        let account = MailAccount {
            name: name.clone(),
            email: input.email.trim().to_string(),
            display_name: optional(&input.display_name),
            username: optional(&input.username),
            imap: server("IMAP", &input.imap)?,
            smtp: server("SMTP", &input.smtp)?,
            // Not on the form: kept as the CLI set them.
            allow_insecure: kept.as_ref().is_some_and(|a| a.allow_insecure),
            ca_file: kept.and_then(|a| a.ca_file),
            sent_folder: optional(&input.sent_folder),
        };
        match existing {
            Some(i) => setting.accounts[i] = account,
            None => setting.accounts.push(account),
        }
        let value = serde_json::to_value(&setting).map_err(|e| invalid(e.to_string()))?;
        self.set_setting(settings::OS_MAIL, value).await?;
        let password = input.password.as_deref().unwrap_or_default();
        if !password.is_empty() {
            self.set_mail_password(&name, password)
                .map_err(|e| storage(&e))?;
        }
        if let Some(old) = previous {
            self.move_secret(
                &osprey_platform::mail::password_secret(old),
                &osprey_platform::mail::password_secret(&name),
                password.is_empty(),
            )?;
        }
        Ok(self.os_accounts())
    }

    /// Removes a mail account and its password.
    pub async fn remove_mail_account(&self, name: &str) -> CoreResult<OsAccountsView> {
        let mut setting: MailSettings = settings::read(&self.db().settings(), settings::OS_MAIL);
        let before = setting.accounts.len();
        setting.accounts.retain(|a| a.name != name);
        if setting.accounts.len() == before {
            return Err(invalid(format!("there is no mail account named `{name}`")));
        }
        let value = serde_json::to_value(&setting).map_err(|e| invalid(e.to_string()))?;
        self.set_setting(settings::OS_MAIL, value).await?;
        self.set_mail_password(name, "").map_err(|e| storage(&e))?;
        Ok(self.os_accounts())
    }

    /// Adds or changes a calendar and contacts account and stores its password when one is
    /// given (as `osprey config set dav.<name>.password` does).
    pub async fn save_dav_account(&self, input: DavAccountInput) -> CoreResult<OsAccountsView> {
        let name = input.name.trim().to_string();
        let mut accounts: DavAccounts = settings::read(&self.db().settings(), ACCOUNTS_SETTING);
        let previous = renamed_from(&input.previous_name, &name);
        if let Some(old) = previous
            && accounts.remove(old).is_none()
        {
            return Err(invalid(format!(
                "there is no calendar account named `{old}`"
            )));
        }
        // Adding, or renaming onto another account's name.
        if (input.previous_name.is_none() || previous.is_some()) && accounts.contains_key(&name) {
            return Err(invalid(format!(
                "a calendar and contacts account named `{name}` exists already"
            )));
        }
        let url = input.url.trim().to_string();
        let username = input.username.trim().to_string();
        if url.is_empty() || username.is_empty() {
            return Err(invalid(
                "a calendar and contacts account needs the server's URL and the username",
            ));
        }
        accounts.insert(
            name.clone(),
            DavAccountSetting {
                kind: dav_kind(&input.kind)?,
                url,
                username,
            },
        );
        let value = serde_json::to_value(&accounts).map_err(|e| invalid(e.to_string()))?;
        self.set_setting(ACCOUNTS_SETTING, value).await?;
        let password = input.password.as_deref().unwrap_or_default();
        if !password.is_empty() {
            self.set_dav_setting(&format!("dav.{name}.password"), password)
                .map_err(|e| storage(&e))?;
        }
        if let Some(old) = previous {
            self.move_secret(
                &password_secret(old),
                &password_secret(&name),
                password.is_empty(),
            )?;
        }
        Ok(self.os_accounts())
    }

    /// Removes a calendar and contacts account and its password.
    pub async fn remove_dav_account(&self, name: &str) -> CoreResult<OsAccountsView> {
        let mut accounts: DavAccounts = settings::read(&self.db().settings(), ACCOUNTS_SETTING);
        if accounts.remove(name).is_none() {
            return Err(invalid(format!(
                "there is no calendar account named `{name}`"
            )));
        }
        let value = serde_json::to_value(&accounts).map_err(|e| invalid(e.to_string()))?;
        self.set_setting(ACCOUNTS_SETTING, value).await?;
        self.set_dav_setting(&format!("dav.{name}.password"), "")
            .map_err(|e| storage(&e))?;
        Ok(self.os_accounts())
    }

    /// After a rename: the old name's password goes to the new name when no new one was given
    /// (`carry`), and is deleted under the old name either way.
    fn move_secret(&self, old: &str, new: &str, carry: bool) -> CoreResult<()> {
        let secrets = self.secrets();
        if carry && let Some(password) = secrets.get(old).map_err(|e| storage(&e))? {
            secrets.set(new, &password).map_err(|e| storage(&e))?;
        }
        secrets.remove(old).map_err(|e| storage(&e))?;
        Ok(())
    }

    /// Logs in to the mail account's IMAP server with the stored password and lists its
    /// folders, then logs in to its SMTP server as sending would (sending nothing), as the `os`
    /// tool would.
    pub async fn test_mail_account(&self, name: &str) -> AccountCheck {
        let config =
            crate::os_config_with(&self.db().settings(), self.data_dir(), self.inner.secrets);
        let mail = osprey_platform::mail::Mail::new(config.mail);
        // The error, and what worked before it (so a refused SMTP login says reading works).
        let work = async {
            let call = mail.resolve(Some(name)).await.map_err(|e| (e, None))?;
            let folders = mail.folders(&call).await.map_err(|e| (e, None))?;
            let found = folders
                .lines()
                .next()
                .unwrap_or_default()
                .trim_end_matches(':');
            let receiving = format!(
                "Logged in to {} as {}: {found}.",
                call.account.imap.host,
                call.account.login()
            );
            match mail.check_sending(&call).await {
                Ok(()) => Ok(format!(
                    "{receiving} Logged in to {} for sending.",
                    call.account.smtp.host
                )),
                Err(e) => Err((e, Some(receiving))),
            }
        };
        match tokio::time::timeout(TEST_TIMEOUT, work).await {
            Ok(Ok(message)) => AccountCheck {
                ok: true,
                code: None,
                message,
            },
            Ok(Err((error, receiving))) => {
                let stored: MailSettings = settings::read(&self.db().settings(), settings::OS_MAIL);
                let login = stored
                    .accounts
                    .iter()
                    .find(|a| a.name.eq_ignore_ascii_case(name))
                    .map_or(name, |a| a.login());
                let server = match receiving {
                    Some(_) => "The outgoing (SMTP) server",
                    None => "The server",
                };
                let mut check = refused(error.code().as_str(), error.to_string(), login, server);
                if let Some(receiving) = receiving {
                    check.message = format!("{receiving} Sending does not work: {}", check.message);
                }
                check
            }
            Err(_) => timed_out(),
        }
    }

    /// Lists the calendars and address books the account serves, as the `os` tool would.
    pub async fn test_dav_account(&self, name: &str) -> AccountCheck {
        let accounts: DavAccounts = settings::read(&self.db().settings(), ACCOUNTS_SETTING);
        let Some(account) = accounts.get(name) else {
            return AccountCheck {
                ok: false,
                code: Some("not_configured".into()),
                message: format!("there is no calendar account named `{name}`"),
            };
        };
        let mut config =
            crate::os_config_with(&self.db().settings(), self.data_dir(), self.inner.secrets);
        // This account only: not the desktop's own calendars.
        config.dav.desktop = false;
        let tool = OsTool::new(config);
        let mut found = Vec::new();
        for (serves, resource, action, what) in [
            (
                account.kind != DavKind::Carddav,
                "calendar",
                "calendars",
                "calendar",
            ),
            (
                account.kind != DavKind::Caldav,
                "contacts",
                "books",
                "address book",
            ),
        ] {
            if !serves {
                continue;
            }
            let input = json!({"resource": resource, "action": action, "account": name});
            let call = match tool.domain().resolve(input) {
                Ok(call) => call,
                Err(message) => {
                    return AccountCheck {
                        ok: false,
                        code: Some("internal".into()),
                        message,
                    };
                }
            };
            let ctx = ToolContext::new(Origin::User, TEST_TIMEOUT);
            let Ok(result) = tokio::time::timeout(TEST_TIMEOUT, tool.run(&ctx, call)).await else {
                return timed_out();
            };
            let text = result.text_content();
            if result.is_error {
                let code = result.code.map_or("failed", |c| c.as_str());
                return refused(code, text, &account.username, "The server");
            }
            let names: Vec<&str> = text
                .lines()
                .filter(|l| l.contains(" (account "))
                .filter_map(|l| l.split(" (account ").next())
                .collect();
            found.push(match names.as_slice() {
                [] => format!("no {what} yet"),
                [one] => format!("1 {what} ({one})"),
                many => format!("{} {what}s ({})", many.len(), many.join(", ")),
            });
        }
        AccountCheck {
            ok: true,
            code: None,
            message: format!(
                "Signed in to {} as {}: {}.",
                account.url,
                account.username,
                found.join("; ")
            ),
        }
    }
}

/// A failed test in the page's words: the tool's messages end with the command-line steps
/// (`osprey config set dav.<name>.password -`), which the form replaces, so a refused sign-in
/// says what to check here instead, naming `server` ("The server", or which one of the account's
/// two). A refused certificate (also `permission_denied`) keeps the tool's own explanation.
fn refused(code: &str, message: String, login: &str, server: &str) -> AccountCheck {
    let message = if code == "permission_denied" && !message.to_lowercase().contains("certificate")
    {
        format!(
            "{server} refused the sign-in as {login}: check the username and the password \
             (providers with two-step sign-in want an app password). Edit the account to change \
             them."
        )
    } else {
        message
    };
    AccountCheck {
        ok: false,
        code: Some(code.to_string()),
        message,
    }
}

fn timed_out() -> AccountCheck {
    AccountCheck {
        ok: false,
        code: Some("timeout".into()),
        message: format!(
            "the server did not answer within {} seconds: check the host name, the port and \
             that this machine reaches it",
            TEST_TIMEOUT.as_secs()
        ),
    }
}
