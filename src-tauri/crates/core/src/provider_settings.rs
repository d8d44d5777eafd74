//! The stored provider settings as plain types (the `providers` and `memory.embeddings`
//! settings): read by the settings validation and by chat, with no dependency on either, so
//! `settings.rs` and `agent.rs` do not import each other.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which wire format to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

    pub const ALL: [ProviderKind; 3] = [
        ProviderKind::Anthropic,
        ProviderKind::OpenAi,
        ProviderKind::Ollama,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
        }
    }

    /// The secret store's name for this provider's key.
    pub fn key_secret(self) -> String {
        format!("{}.api_key", self.name())
    }
}

/// One provider's stored settings; unset fields fall back to the provider's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderEntry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The `providers` setting: which provider chat uses by default and each one's base URL and
/// model. Keys are not here: they live in the secret store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<ProviderKind>,
    /// An installed app whose gateway chat uses by default; it wins over `default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    pub anthropic: ProviderEntry,
    pub openai: ProviderEntry,
    pub ollama: ProviderEntry,
}

impl ProviderSettings {
    pub fn entry(&self, kind: ProviderKind) -> &ProviderEntry {
        match kind {
            ProviderKind::Anthropic => &self.anthropic,
            ProviderKind::OpenAi => &self.openai,
            ProviderKind::Ollama => &self.ollama,
        }
    }

    pub(crate) fn entry_mut(&mut self, kind: ProviderKind) -> &mut ProviderEntry {
        match kind {
            ProviderKind::Anthropic => &mut self.anthropic,
            ProviderKind::OpenAi => &mut self.openai,
            ProviderKind::Ollama => &mut self.ollama,
        }
    }
}

/// The `memory.embeddings` setting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingSettings {
    pub provider: ProviderKind,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}
