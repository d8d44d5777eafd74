//! Chat through the agent: which model provider to talk to (the run's choice, else the stored
//! provider settings, else a key in the environment or the secret store, else a local Ollama
//! server that answers), and a [`Runner`] on the core's registry and database, so every tool call
//! of a chat meets the same policy and safeguard as any other.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
pub use osprey_agent::{
    AgentEvent, Provider, Runner, RunnerConfig, StopReason, TurnOutcome, TurnRequest, TurnStop,
};
use osprey_agent::{Anthropic, Ollama, OpenAi};

use crate::Core;
pub use crate::provider_settings::{
    EmbeddingSettings, ProviderEntry, ProviderKind, ProviderSettings,
};
use crate::secrets::{Backend, SecretLocation, Secrets};
use crate::settings;

/// The API key for `kind`: its environment variable, else the secret store.
fn key_for(kind: ProviderKind, secrets: &Secrets) -> Option<String> {
    kind.key_variable()
        .and_then(|name| std::env::var(name).ok())
        .filter(|key| !key.is_empty())
        .or_else(|| match secrets.get(&kind.key_secret()) {
            Ok(key) => key.filter(|k| !k.is_empty()),
            Err(err) => {
                tracing::warn!(%err, "cannot read the secret store");
                None
            }
        })
}

/// The embedder memory search uses, when `memory.embeddings` is set (an OpenAI key comes from
/// the environment or the secret store, as for chat).
pub(crate) fn memory_embedder(
    stored: &osprey_db::Settings,
    data_dir: &std::path::Path,
) -> Option<Arc<dyn osprey_agent::embedding::Embedder>> {
    use osprey_agent::embedding::{OllamaEmbedder, OpenAiEmbedder};
    let settings: Option<EmbeddingSettings> = settings::read(stored, settings::MEMORY_EMBEDDINGS);
    let settings = settings?;
    let base_url = settings.base_url.as_deref();
    match settings.provider {
        ProviderKind::Ollama => Some(Arc::new(OllamaEmbedder::new(
            base_url.or(Some(&default_ollama_url())),
            settings.model,
        ))),
        ProviderKind::OpenAi => {
            let secrets = Secrets::new(data_dir, Backend::from_environment());
            let key = key_for(ProviderKind::OpenAi, &secrets);
            Some(Arc::new(OpenAiEmbedder::new(base_url, key, settings.model)))
        }
        ProviderKind::Anthropic => None,
    }
}

/// What a run asks for (CLI flags, the desktop's chat options); everything unset is resolved
/// by [`Core::resolve_chat`].
#[derive(Clone, Debug, Default)]
pub struct ChatChoice {
    pub provider: Option<ProviderKind>,
    /// Chat through this installed app's gateway.
    pub app: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub max_steps: Option<u32>,
}

/// What `osprey config set provider.…` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderSettingWritten {
    /// Stored in the `providers` setting.
    Setting,
    /// A key, stored in the keyring or the private file.
    Secret(SecretLocation),
}

/// How long the local Ollama probe waits: it runs before a chat starts, so it must be short.
const OLLAMA_PROBE_TIMEOUT: Duration = Duration::from_millis(400);

/// The models a local Ollama server offers at `base_url`, or `None` when nothing answers there.
/// Local first: a running Ollama is offered without any setup.
pub async fn detect_ollama(base_url: &str) -> Option<Vec<String>> {
    Ollama::installed_models(Some(base_url), OLLAMA_PROBE_TIMEOUT).await
}

/// Where Ollama listens when nothing says otherwise: `$OLLAMA_HOST` (as Ollama itself reads it),
/// else its default port on loopback.
fn default_ollama_url() -> String {
    match std::env::var("OLLAMA_HOST") {
        Ok(host) if !host.is_empty() => {
            if host.contains("://") {
                host
            } else {
                format!("http://{host}")
            }
        }
        _ => osprey_agent::provider::ollama::DEFAULT_BASE_URL.to_string(),
    }
}

/// How to build a chat runner.
#[derive(Clone, Debug)]
pub struct ChatOptions {
    pub provider: ProviderKind,
    /// An installed app whose gateway is the model; then `provider`, `base_url` and `api_key`
    /// are unused.
    pub gateway_app: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub max_steps: Option<u32>,
}

/// The provider client for `options`.
pub fn provider(options: &ChatOptions) -> anyhow::Result<Arc<dyn Provider>> {
    provider_keeping(options, None)
}

/// [`provider`], with Ollama keeping the context windows it learns in `windows`.
fn provider_keeping(
    options: &ChatOptions,
    windows: Option<osprey_db::ModelWindows>,
) -> anyhow::Result<Arc<dyn Provider>> {
    let base_url = options.base_url.as_deref();
    Ok(match options.provider {
        ProviderKind::Anthropic => {
            let key = options
                .api_key
                .clone()
                .filter(|k| !k.is_empty())
                .context("the Anthropic provider needs an API key: set ANTHROPIC_API_KEY or run `osprey config set provider.anthropic.api_key <key>`")?;
            Arc::new(Anthropic::new(base_url, key))
        }
        ProviderKind::OpenAi => {
            // Local OpenAI-compatible servers need no key; api.openai.com does.
            if base_url.is_none() && options.api_key.as_deref().unwrap_or("").is_empty() {
                anyhow::bail!(
                    "the OpenAI provider needs an API key: set OPENAI_API_KEY or run `osprey config set provider.openai.api_key <key>` (or give a base URL for a local server)"
                );
            }
            Arc::new(OpenAi::new(base_url, options.api_key.clone()))
        }
        ProviderKind::Ollama => {
            let ollama = Ollama::new(base_url);
            Arc::new(match windows {
                Some(windows) => ollama.with_known_windows(windows),
                None => ollama,
            })
        }
    })
}

impl Core {
    /// The stored provider settings (defaults when unset or invalid).
    pub fn provider_settings(&self) -> ProviderSettings {
        settings::read(&self.db().settings(), settings::PROVIDERS)
    }

    /// Writes one provider setting addressed by a dotted key, as `osprey config set` takes it:
    /// `provider.default` (anthropic | openai | ollama), `provider.<kind>.model`,
    /// `provider.<kind>.base_url`, or `provider.<kind>.api_key` (into the secret store, never
    /// the settings table). An empty value clears the field.
    pub fn set_provider_setting(
        &self,
        key: &str,
        value: &str,
    ) -> anyhow::Result<ProviderSettingWritten> {
        let path = key
            .strip_prefix("provider.")
            .with_context(|| format!("`{key}` is not a provider setting"))?;
        let usage = "use provider.default, provider.app, provider.<anthropic|openai|ollama>.model, \
                     .base_url or .api_key";
        let mut stored = self.provider_settings();
        let value = value.trim();
        if path == "app" {
            if !value.is_empty() && !crate::apps::apps_dir(self.data_dir()).join(value).is_dir() {
                bail!("no app `{value}` is installed (`osprey app list` shows the apps)");
            }
            stored.app = (!value.is_empty()).then(|| value.to_string());
        } else if path == "default" {
            stored.default = if value.is_empty() {
                None
            } else {
                Some(value.parse().map_err(anyhow::Error::msg)?)
            };
        } else {
            let (kind, field) = path
                .split_once('.')
                .with_context(|| format!("unknown provider setting `{key}`: {usage}"))?;
            let kind: ProviderKind = kind.parse().map_err(anyhow::Error::msg)?;
            let entry = stored.entry_mut(kind);
            let optional = (!value.is_empty()).then(|| value.to_string());
            match field {
                "model" => entry.model = optional,
                "base_url" => {
                    if let Some(url) = &optional {
                        let parsed = reqwest::Url::parse(url).with_context(|| {
                            format!("`{url}` is not a URL (e.g. http://127.0.0.1:8080/v1)")
                        })?;
                        if !matches!(parsed.scheme(), "http" | "https") {
                            bail!("`{url}` must be an http or https URL");
                        }
                    }
                    entry.base_url = optional;
                }
                "api_key" => {
                    let secrets = self.secrets();
                    let written = if value.is_empty() {
                        secrets.remove(&kind.key_secret())?;
                        ProviderSettingWritten::Setting
                    } else {
                        ProviderSettingWritten::Secret(secrets.set(&kind.key_secret(), value)?)
                    };
                    // Kept runners hold the old key: tell them (and other Ospreys) it changed.
                    self.db().settings().set(
                        settings::PROVIDER_KEYS_CHANGED,
                        &serde_json::json!(osprey_db::now_ms()),
                    )?;
                    return Ok(written);
                }
                _ => bail!("unknown provider setting `{key}`: {usage}"),
            }
        }
        let value = serde_json::to_value(&stored)?;
        self.db().settings().set(settings::PROVIDERS, &value)?;
        Ok(ProviderSettingWritten::Setting)
    }

    /// The stored provider settings, whether each provider has a key (never the key), and what
    /// chat resolves to now: for the settings page and `osprey config providers`.
    pub async fn provider_overview(&self) -> osprey_types::ProviderOverview {
        let stored = self.provider_settings();
        let providers = ProviderKind::ALL
            .into_iter()
            .map(|kind| {
                let entry = stored.entry(kind);
                let key = match kind.key_variable() {
                    None => "not_needed",
                    Some(variable) if std::env::var(variable).is_ok_and(|v| !v.is_empty()) => {
                        "environment"
                    }
                    Some(_) if self.provider_key(kind).is_some() => "stored",
                    Some(_) => "not_set",
                };
                osprey_types::ProviderRow {
                    provider: kind.name().to_string(),
                    base_url: entry.base_url.clone(),
                    model: entry
                        .model
                        .clone()
                        .unwrap_or_else(|| kind.default_model().to_string()),
                    key: key.to_string(),
                }
            })
            .collect();
        let (chat_uses, chat_problem) = match self.resolve_chat(&ChatChoice::default()).await {
            Ok(ChatOptions {
                gateway_app: Some(app),
                ..
            }) => (Some(format!("the app {app}")), None),
            Ok(options) => (
                Some(format!(
                    "{} {}",
                    options.provider.name(),
                    options
                        .model
                        .as_deref()
                        .unwrap_or(options.provider.default_model())
                )),
                None,
            ),
            Err(error) => (None, Some(format!("{error:#}"))),
        };
        osprey_types::ProviderOverview {
            default: stored.default.map(|kind| kind.name().to_string()),
            app: stored.app,
            providers,
            chat_uses,
            chat_problem,
        }
    }

    /// The API key for `kind`: its environment variable, else the secret store.
    pub fn provider_key(&self, kind: ProviderKind) -> Option<String> {
        key_for(kind, &self.secrets())
    }

    /// Fills in everything `choice` leaves open. The provider is the run's choice, else the
    /// stored default, else the first of Anthropic and OpenAI that has a key, else a local
    /// Ollama server that answers; with none of those it says how to set one up.
    pub async fn resolve_chat(&self, choice: &ChatChoice) -> anyhow::Result<ChatOptions> {
        let stored = self.provider_settings();
        // A gateway app: named for this run, or stored, unless the run names a provider.
        let app = choice
            .app
            .clone()
            .or_else(|| stored.app.clone().filter(|_| choice.provider.is_none()));
        if let Some(app) = app {
            return Ok(ChatOptions {
                provider: stored.default.unwrap_or(ProviderKind::Anthropic),
                gateway_app: Some(app),
                base_url: None,
                model: choice.model.clone(),
                api_key: None,
                max_steps: choice.max_steps,
            });
        }
        let kind = match choice.provider.or(stored.default) {
            Some(kind) => kind,
            None => match [ProviderKind::Anthropic, ProviderKind::OpenAi]
                .into_iter()
                .find(|kind| self.provider_key(*kind).is_some())
            {
                Some(kind) => kind,
                None => ProviderKind::Ollama,
            },
        };
        let entry = stored.entry(kind);
        let base_url = choice.base_url.clone().or_else(|| entry.base_url.clone());
        let mut model = choice.model.clone().or_else(|| entry.model.clone());
        let explicit = choice.provider.is_some() || stored.default.is_some();
        if kind == ProviderKind::Ollama {
            let url = base_url.clone().unwrap_or_else(default_ollama_url);
            match detect_ollama(&url).await {
                Some(models) => {
                    // Offer what is installed when the default model is not.
                    let wanted = model.clone().unwrap_or_else(|| kind.default_model().into());
                    if model.is_none()
                        && !models.iter().any(|m| m.split(':').next() == Some(&wanted))
                    {
                        model = models.into_iter().next();
                    }
                }
                None if !explicit => bail!(
                    "no model provider is set up. Choose one under Settings > Model in the \
                     desktop app, store a key with `osprey config set provider.anthropic.api_key -`, \
                     set ANTHROPIC_API_KEY or OPENAI_API_KEY, or start Ollama (nothing answered \
                     at {url})"
                ),
                None => {}
            }
            return Ok(ChatOptions {
                provider: kind,
                gateway_app: None,
                base_url: Some(url),
                model,
                api_key: None,
                max_steps: choice.max_steps,
            });
        }
        Ok(ChatOptions {
            provider: kind,
            gateway_app: None,
            base_url,
            model,
            api_key: self.provider_key(kind),
            max_steps: choice.max_steps,
        })
    }

    /// A runner whose model is an installed app's gateway (`osprey chat --app ID`). The app must
    /// be running: call [`Core::start_apps`] first; the first model call waits for it to come up.
    #[cfg(unix)]
    pub fn gateway_runner(
        &self,
        app_id: &str,
        model: Option<String>,
        max_steps: Option<u32>,
    ) -> Runner {
        let provider = crate::gateway::GatewayProvider::new(
            app_id,
            self.apps().apps_dir(),
            self.apps().supervisor().clone(),
        );
        self.runner_with(
            Arc::new(provider),
            model.unwrap_or_else(|| "default".to_string()),
            max_steps,
        )
    }

    /// A runner for chat turns on this core's registry and session store.
    pub fn chat_runner(&self, options: &ChatOptions) -> anyhow::Result<Runner> {
        if let Some(app) = &options.gateway_app {
            #[cfg(unix)]
            return Ok(self.gateway_runner(app, options.model.clone(), options.max_steps));
            #[cfg(not(unix))]
            anyhow::bail!("apps do not run on this platform yet, so `{app}` cannot be the model");
        }
        let model = options
            .model
            .clone()
            .unwrap_or_else(|| options.provider.default_model().to_string());
        let provider = provider_keeping(options, Some(self.db().model_windows()))?;
        Ok(self.runner_with(provider, model, options.max_steps))
    }

    /// The one place a runner is built, whatever its provider, so every chat gets the same
    /// registry, sessions and prompt sections.
    fn runner_with(
        &self,
        provider: Arc<dyn Provider>,
        model: String,
        max_steps: Option<u32>,
    ) -> Runner {
        let defaults = RunnerConfig::default();
        let runner = Runner::new(
            provider,
            self.registry().clone(),
            self.db().sessions(),
            RunnerConfig {
                model,
                max_steps: max_steps.unwrap_or(defaults.max_steps),
                ..defaults
            },
        );
        self.attach_prompt_sources(&runner);
        runner.set_inbox(self.inner.subagents.inbox());
        // Turns compaction summarises away leave what is worth remembering in memory first.
        runner.set_consolidator(self.inner.subagents.consolidator());
        self.inner.subagent_runners.register(&runner);
        runner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_parse_and_keys_are_required_where_needed() {
        assert_eq!("Anthropic".parse(), Ok(ProviderKind::Anthropic));
        assert_eq!("openai".parse(), Ok(ProviderKind::OpenAi));
        assert_eq!("ollama".parse(), Ok(ProviderKind::Ollama));
        assert!("gemini".parse::<ProviderKind>().is_err());
        let options = |provider, base_url: Option<&str>, key: Option<&str>| ChatOptions {
            provider,
            gateway_app: None,
            base_url: base_url.map(String::from),
            model: None,
            api_key: key.map(String::from),
            max_steps: None,
        };
        assert!(provider(&options(ProviderKind::Anthropic, None, None)).is_err());
        assert!(provider(&options(ProviderKind::Anthropic, None, Some("k"))).is_ok());
        assert!(provider(&options(ProviderKind::OpenAi, None, None)).is_err());
        assert!(
            provider(&options(
                ProviderKind::OpenAi,
                Some("http://127.0.0.1:8080/v1"),
                None
            ))
            .is_ok()
        );
        assert!(provider(&options(ProviderKind::Ollama, None, None)).is_ok());
    }
}
