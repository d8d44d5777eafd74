//! The `tts` resource of the `os` tool: speak, voices, stop, and save (speech to a WAV file,
//! written through the path guard like the `file` tool's writes).

use osprey_tools::{ApprovalNeed, Call, CallFacts, Domain, FieldType};
use osprey_types::ToolResult;
use serde_json::Value;

use super::{OsTool, count, int, text};
use crate::error::{Error, Result};
use crate::tts::{Speech as _, Utterance, wav_facts};

/// Speaking is free for the person (like a notification; asked from chats, apps and skills);
/// writing a file needs approval.
pub(super) fn resource(domain: Domain) -> Domain {
    use ApprovalNeed::{None as Free, Required};
    domain.resource(
        "tts",
        &["speech", "speak", "say", "voice"],
        &[
            (
                "speak",
                "Say text aloud (voice, rate); stops what Osprey was saying",
                Free,
            ),
            (
                "voices",
                "Voices; query: a language (en) or name part",
                Free,
            ),
            ("stop", "Stop speaking", Free),
            (
                "save",
                "Write text as speech to a WAV file at output",
                Required,
            ),
        ],
    )
}

pub(super) fn fields(domain: Domain) -> Domain {
    domain
        .also_required_for("text", &["tts.speak", "tts.save"])
        .field(
            "voice",
            FieldType::String,
            "tts: language code (en, de, en-us) or name from voices",
        )
        .field(
            "rate",
            FieldType::Integer,
            "tts: -100 slowest to 100 fastest, 0 normal",
        )
        .field(
            "output",
            FieldType::String,
            "tts save: absolute path of the .wav file",
        )
        .required_for(&["tts.save"])
}

pub(super) fn facts(call: &Call, facts: &mut CallFacts) {
    if let Some(said) = call.str("text") {
        let short: String = said.chars().take(80).collect();
        facts.summary.push_str(&format!(" text {short:?}"));
    }
    if let Some(voice) = call.str("voice") {
        facts.summary.push_str(&format!(" voice {voice:?}"));
    }
    if let Some(output) = call.str("output") {
        facts.summary.push_str(&format!(" output {output}"));
        if call.action() == "save" {
            facts.write_paths.push(output.into());
        }
    }
}

impl OsTool {
    pub(super) async fn tts(&self, call: &Call) -> Result<ToolResult> {
        let utterance = || {
            Utterance::new(
                call.input
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                call.str("voice"),
                int(call, "rate"),
            )
        };
        match call.action() {
            "speak" => {
                if call.str("output").is_some() {
                    return Err(Error::invalid(
                        "speak plays aloud; to write a WAV file use action `save` with `output`",
                    ));
                }
                text(self.backend.speak(&utterance()?).await?)
            }
            "voices" => {
                let limit = int(call, "limit").unwrap_or(20).clamp(1, 500) as usize;
                let (engine, voices) = self.backend.voices(call.str("query")).await?;
                if voices.is_empty() {
                    return text(format!(
                        "{engine} has no voice matching {:?}.",
                        call.str("query").unwrap_or("")
                    ));
                }
                let mut lines = vec![format!(
                    "{engine}: {}{}{}",
                    count(voices.len(), "voice"),
                    if voices.len() > limit {
                        format!(", {limit} shown (`limit` for more)")
                    } else {
                        String::new()
                    },
                    if call.str("query").is_none() {
                        "; `query` filters by language (en) or name"
                    } else {
                        ""
                    }
                )];
                lines.extend(voices.iter().take(limit).map(|v| {
                    let mut line = format!("{} ({})", v.name, v.language);
                    if let Some(detail) = v.detail.as_deref().filter(|d| *d != "none") {
                        line.push_str(&format!(" {detail}"));
                    }
                    line
                }));
                text(lines.join("\n"))
            }
            "stop" => text(self.backend.stop().await?),
            "save" => {
                let output = call.str("output").unwrap_or_default();
                if !output.to_ascii_lowercase().ends_with(".wav") {
                    return Err(Error::invalid("`output` must be a path ending in .wav"));
                }
                let path = self.check_path(output, true)?;
                let wav = self.backend.synthesize(&utterance()?).await?;
                tokio::fs::write(&path, &wav)
                    .await
                    .map_err(|e| Error::Failed(format!("writing {}: {e}", path.display())))?;
                let described = wav_facts(&wav)
                    .map(|(seconds, rate, channels)| {
                        format!(
                            "{seconds:.1} s of speech, {rate} Hz, {}",
                            if channels == 1 { "mono" } else { "stereo" }
                        )
                    })
                    .unwrap_or_else(|| "speech".into());
                text(format!(
                    "Wrote {described} ({} bytes) to {}.",
                    wav.len(),
                    path.display()
                ))
            }
            other => Err(Error::invalid(format!("unknown tts action {other}"))),
        }
    }
}
