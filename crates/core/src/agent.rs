//! Chat through the agent: picks a model provider from the options (key passed in explicitly:
//! the shells read the environment or settings), and builds a [`Runner`] on the core's registry
//! and database, so every tool call of a chat meets the same policy and safeguard as any other.

use std::str::FromStr;
use std::sync::Arc;

use anyhow::Context;
pub use osprey_agent::{
    AgentEvent, Provider, Runner, RunnerConfig, TurnOutcome, TurnRequest, TurnStop,
};
use osprey_agent::{Anthropic, Ollama, OpenAi};

use crate::Core;

/// Which wire format to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    Anthropic,
    /// OpenAI Chat Completions, or any server that speaks it (`--base-url`).
    OpenAi,
    /// Ollama's native API.
    Ollama,
}

impl FromStr for ProviderKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "anthropic" | "claude" => Ok(ProviderKind::Anthropic),
            "openai" | "openai-compatible" => Ok(ProviderKind::OpenAi),
            "ollama" => Ok(ProviderKind::Ollama),
            _ => Err(format!(
                "unknown provider `{s}` (expected anthropic, openai or ollama)"
            )),
        }
    }
}

impl ProviderKind {
    /// The model used when none is named.
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "claude-sonnet-4-5",
            ProviderKind::OpenAi => "gpt-4.1-mini",
            ProviderKind::Ollama => "llama3.2",
        }
    }

    /// The environment variable the shells read the key from.
    pub fn key_variable(self) -> Option<&'static str> {
        match self {
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
            ProviderKind::Ollama => None,
        }
    }
}

/// How to build a chat runner.
#[derive(Clone, Debug)]
pub struct ChatOptions {
    pub provider: ProviderKind,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub max_steps: Option<u32>,
}

/// The provider client for `options`.
pub fn provider(options: &ChatOptions) -> anyhow::Result<Arc<dyn Provider>> {
    let base_url = options.base_url.as_deref();
    Ok(match options.provider {
        ProviderKind::Anthropic => {
            let key = options
                .api_key
                .clone()
                .filter(|k| !k.is_empty())
                .context("the Anthropic provider needs an API key: set ANTHROPIC_API_KEY")?;
            Arc::new(Anthropic::new(base_url, key))
        }
        ProviderKind::OpenAi => {
            // Local OpenAI-compatible servers need no key; api.openai.com does.
            if base_url.is_none() && options.api_key.as_deref().unwrap_or("").is_empty() {
                anyhow::bail!(
                    "the OpenAI provider needs an API key: set OPENAI_API_KEY (or pass --base-url for a local server)"
                );
            }
            Arc::new(OpenAi::new(base_url, options.api_key.clone()))
        }
        ProviderKind::Ollama => Arc::new(Ollama::new(base_url)),
    })
}

impl Core {
    /// A runner for chat turns on this core's registry and session store.
    pub fn chat_runner(&self, options: &ChatOptions) -> anyhow::Result<Runner> {
        let provider = provider(options)?;
        let defaults = RunnerConfig::default();
        Ok(Runner::new(
            provider,
            self.registry().clone(),
            self.db().sessions(),
            RunnerConfig {
                model: options
                    .model
                    .clone()
                    .unwrap_or_else(|| options.provider.default_model().to_string()),
                max_steps: options.max_steps.unwrap_or(defaults.max_steps),
                ..defaults
            },
        ))
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
