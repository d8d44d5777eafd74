//! The settings page's facade: one picture of what it edits ([`Core::settings_overview`]) and
//! one write ([`Core::set_setting`]) that validates a value with [`settings::validate`], stores
//! it, and puts it in force in the running core at once (the registry's policy and origin rules,
//! the MCP connections, the skills turned off, the approval timeout), so no change waits for a
//! restart. The CLI's `osprey config set` stores, then tells a running desktop or daemon over the
//! control socket (`settings.applied`), which applies the stored value the same way.

use osprey_agent::mcp::ServerState;
use osprey_tools::{OriginRules, PolicyConfig};
use osprey_types::{
    CoreEvent, McpServerView, PolicySettings, SettingsOverview, SkillView, ToolBreakerView,
    ToolCategoryView, ToolGovernanceView, ToolQuotaView, UiErrorCode,
};
use serde_json::Value;

use crate::{Core, CoreError, CoreResult, settings};

impl Core {
    /// What the settings page shows: the policy, origin rules, MCP servers and their state,
    /// skills, the store URL, the data folder, the theme and whether automation is paused.
    pub fn settings_overview(&self) -> SettingsOverview {
        let stored = self.db().settings();
        let policy: PolicyConfig = settings::read(&stored, settings::POLICY);
        let origin: OriginRules = settings::read(&stored, settings::ORIGIN_RULES);
        let store_from_environment =
            std::env::var(crate::apps::STORE_URL_ENV).is_ok_and(|url| !url.trim().is_empty());
        SettingsOverview {
            policy: PolicySettings {
                level: wire_name(&policy.level),
                ask: wire_name(&policy.ask),
                allowlist: policy.allowlist,
                safe_bins: policy.safe_bins,
            },
            origin_deny: origin.deny,
            approval_timeout_seconds: u32::try_from(
                crate::approvals::stored_timeout(&stored).as_secs(),
            )
            .unwrap_or(u32::MAX),
            mcp_servers: self.mcp_views(),
            skills: self.skill_views(),
            store_url: self.store_url(),
            store_url_from_environment: store_from_environment,
            data_dir: self.data_dir().display().to_string(),
            theme: settings::read(&stored, settings::UI_THEME),
            persona: settings::read(&stored, settings::PERSONA),
            paused: self.automation_paused(),
            tools: self.governance_view(),
        }
    }

    /// The `tools.*` settings in force, with the categories and the tools registered in each.
    fn governance_view(&self) -> ToolGovernanceView {
        let config = self.registry().governance().config();
        let small = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let names = self.registry().names();
        ToolGovernanceView {
            disabled: config.disabled,
            autonomous: config.autonomous,
            denied_paths: config.denied_paths,
            blocklist: config.blocklist,
            quotas: config
                .quotas
                .into_iter()
                .map(|(key, quota)| {
                    let view = ToolQuotaView {
                        per_session: quota.per_session.map(small),
                        per_day: quota.per_day.map(small),
                    };
                    (key, view)
                })
                .collect(),
            breaker: ToolBreakerView {
                failures: config.breaker.failures,
                window_seconds: small(config.breaker.window_seconds),
                cooldown_seconds: small(config.breaker.cooldown_seconds),
            },
            categories: osprey_tools::governance::CATEGORIES
                .iter()
                .map(|(name, _, description)| ToolCategoryView {
                    name: name.to_string(),
                    description: description.to_string(),
                    tools: names
                        .iter()
                        .filter(|tool| osprey_tools::governance::category_of(tool) == *name)
                        .cloned()
                        .collect(),
                })
                .collect(),
        }
    }

    /// Validates, stores and applies one setting (`value` as JSON; `null` removes it, going back
    /// to the default). Refused with `invalid_setting` and the reason, nothing stored.
    pub async fn set_setting(&self, key: &str, value: Value) -> CoreResult<()> {
        let stored = self.db().settings();
        if value.is_null() {
            if !settings::KNOWN.iter().any(|(known, _)| *known == key) {
                settings::validate(key, &value).map_err(invalid)?;
            }
            stored
                .remove(key)
                .map_err(|error| CoreError::new(UiErrorCode::Storage, error.to_string()))?;
        } else {
            settings::validate(key, &value).map_err(invalid)?;
            stored
                .set(key, &value)
                .map_err(|error| CoreError::new(UiErrorCode::Storage, error.to_string()))?;
        }
        self.apply_setting(key).await;
        self.emit(CoreEvent::SettingChanged {
            key: key.to_string(),
        });
        Ok(())
    }

    /// Adds or replaces one MCP server (`{"command": ..., "args": [...]}` or `{"url": ...}`) and
    /// reconnects the servers; the entry is checked first.
    pub async fn save_mcp_server(&self, name: &str, config: Value) -> CoreResult<()> {
        let config: osprey_agent::mcp::McpServerConfig =
            serde_json::from_value(config).map_err(|error| {
                CoreError::new(
                    UiErrorCode::InvalidSetting,
                    format!("the MCP server `{name}` is not valid: {error}"),
                )
            })?;
        self.add_mcp_server(name, config).map_err(invalid)?;
        self.apply_setting(settings::MCP_SERVERS).await;
        self.emit(CoreEvent::SettingChanged {
            key: settings::MCP_SERVERS.to_string(),
        });
        Ok(())
    }

    /// Removes one MCP server (its tools go with it).
    pub async fn delete_mcp_server(&self, name: &str) -> CoreResult<()> {
        let removed = self
            .remove_mcp_server(name)
            .map_err(|error| CoreError::with_fallback(&error, UiErrorCode::Storage))?;
        if !removed {
            return Err(CoreError::new(
                UiErrorCode::InvalidSetting,
                format!("there is no MCP server named `{name}`"),
            ));
        }
        self.apply_setting(settings::MCP_SERVERS).await;
        self.emit(CoreEvent::SettingChanged {
            key: settings::MCP_SERVERS.to_string(),
        });
        Ok(())
    }

    /// Puts in force a setting another process stored (`osprey config set` while this core
    /// runs, told over the control socket) and tells the front ends, as [`Core::set_setting`]
    /// does for its own writes. Only known keys; the value is read from the database, never
    /// taken from the message.
    pub async fn apply_stored_setting(&self, key: &str) -> CoreResult<()> {
        if !settings::KNOWN.iter().any(|(known, _)| *known == key) {
            return Err(CoreError::new(
                UiErrorCode::InvalidSetting,
                format!("`{key}` is not a setting Osprey knows"),
            ));
        }
        self.apply_setting(key).await;
        self.emit(CoreEvent::SettingChanged {
            key: key.to_string(),
        });
        Ok(())
    }

    /// Puts the stored value of `key` in force in this running core.
    async fn apply_setting(&self, key: &str) {
        let stored = self.db().settings();
        match key {
            settings::POLICY => self
                .registry()
                .policy()
                .set_config(settings::read(&stored, settings::POLICY)),
            settings::ORIGIN_RULES => self
                .registry()
                .set_origin_rules(settings::read(&stored, settings::ORIGIN_RULES)),
            settings::APPROVAL_TIMEOUT => self
                .approvals()
                .set_timeout(crate::approvals::stored_timeout(&stored)),
            settings::SKILLS_DISABLED => self.apply_disabled_skills(),
            key if settings::TOOLS_KEYS.contains(&key) => {
                let was = self.autonomous();
                let governance = self.registry().governance();
                if let Err(why) = governance.set_config(settings::governance(&stored)) {
                    tracing::warn!(%why, "the tools settings could not be put in force");
                }
                let now = self.autonomous();
                if now != was {
                    tracing::warn!(on = now, "autonomous mode changed");
                    self.emit(CoreEvent::AutonomousMode { on: now });
                }
            }
            // Connected servers are reconnected from the new setting; before the background
            // services start there is nothing to restart.
            settings::MCP_SERVERS if self.mcp_started() => {
                self.stop_mcp().await;
                if let Err(error) = self.start_mcp() {
                    tracing::warn!(%error, "MCP servers could not be restarted");
                }
            }
            // Another store: its revocation list, not the old store's cached one, judges the
            // installed apps from now on.
            // ... and its event stream is followed instead of the old one's.
            #[cfg(unix)]
            settings::STORE_URL => {
                self.apps().sweep_revocations_soon();
                self.reconnect_store_events();
            }
            #[cfg(unix)]
            settings::STORE_TOKEN_CHANGED => self.reconnect_store_events(),
            // The person's own browser: the `chrome` profile follows the setting (a changed port
            // lets go of the old connection).
            settings::WEB_CHROME => {
                let chrome: Option<osprey_browser::ChromeAttach> =
                    settings::read(&stored, settings::WEB_CHROME);
                self.inner.browser.remove_profile("chrome").await;
                if let Some(chrome) = chrome {
                    self.add_browser_profile(
                        std::sync::Arc::new(osprey_browser::ManagedDriver::attach(
                            chrome.port.get(),
                        )),
                        false,
                    );
                }
            }
            settings::WEB_DOWNLOADS => self.inner.downloads.set(settings::downloads(&stored)),
            settings::WEB_NATIVE_WINDOWS => self.inner.hidden_windows.store(
                settings::native_windows_hidden(&stored),
                std::sync::atomic::Ordering::SeqCst,
            ),
            // Read where they are used (the theme by the UI).
            _ => {}
        }
    }

    /// Turns off the skills named in `skills.disabled` (at open and after each change).
    pub(crate) fn apply_disabled_skills(&self) {
        let disabled: Vec<String> =
            settings::read(&self.db().settings(), settings::SKILLS_DISABLED);
        self.skills().catalog().set_disabled(disabled);
    }

    /// Turns one skill on or off (`skills.disabled`).
    pub async fn set_skill_enabled(&self, name: &str, enabled: bool) -> CoreResult<()> {
        if !self.skills().catalog().all().iter().any(|s| s.name == name) {
            return Err(CoreError::new(
                UiErrorCode::InvalidSetting,
                format!("there is no skill named `{name}`"),
            ));
        }
        let mut disabled: Vec<String> =
            settings::read(&self.db().settings(), settings::SKILLS_DISABLED);
        disabled.retain(|n| n != name);
        if !enabled {
            disabled.push(name.to_string());
        }
        disabled.sort();
        self.set_setting(settings::SKILLS_DISABLED, serde_json::json!(disabled))
            .await
    }

    fn skill_views(&self) -> Vec<SkillView> {
        let catalog = self.skills().catalog();
        catalog
            .all()
            .into_iter()
            .map(|skill| SkillView {
                enabled: !catalog.is_disabled(&skill.name),
                source: skill.source.kind().to_string(),
                app: match &skill.source {
                    osprey_agent::skills::SkillSource::App(app) if !app.is_empty() => {
                        Some(app.clone())
                    }
                    _ => None,
                },
                path: skill.path.display().to_string(),
                name: skill.name,
                description: skill.description,
            })
            .collect()
    }

    fn mcp_views(&self) -> Vec<McpServerView> {
        let statuses = self.mcp_status();
        let started = self.mcp_started();
        self.mcp_servers()
            .into_iter()
            .map(|(name, config)| {
                let status = statuses.iter().find(|s| s.name == name);
                let (state, error) = match status.map(|s| &s.state) {
                    Some(ServerState::Connecting) => ("connecting", None),
                    Some(ServerState::Connected) => ("connected", None),
                    Some(ServerState::Retrying { error, .. }) => ("retrying", Some(error.clone())),
                    Some(ServerState::Disabled) => ("disabled", None),
                    Some(ServerState::Invalid { error }) => ("invalid", Some(error.clone())),
                    Some(ServerState::Stopped) => ("stopped", None),
                    None if !config.enabled => ("disabled", None),
                    None if started => ("connecting", None),
                    None => ("not_started", None),
                };
                McpServerView {
                    enabled: config.enabled,
                    command: config.command,
                    args: config.args,
                    url: config.url,
                    state: state.to_string(),
                    error,
                    tools: status.map(|s| s.tools.clone()).unwrap_or_default(),
                    name,
                }
            })
            .collect()
    }
}

/// The name a value has in the stored JSON (`allowlist`, `on-miss`).
fn wire_name(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => String::new(),
    }
}

fn invalid(error: anyhow::Error) -> CoreError {
    CoreError::new(UiErrorCode::InvalidSetting, format!("{error:#}"))
}
