//! The `audio` resource of the `os` tool: the sound outputs with their volume, and changing the
//! volume or mute of one (the default output unless `device` names another). Changes go through
//! the approval policy like the media player's volume.

use osprey_tools::{ApprovalNeed, Call, CallFacts, Domain, FieldType};
use osprey_types::ToolResult;
use serde_json::Value;

use super::{OsTool, text};
use crate::audio::{Audio as _, AudioChange, MAX_PERCENT};
use crate::error::{Error, Result};

/// How far `up` and `down` move without a `percent`.
const DEFAULT_STEP: u32 = 10;

pub(super) fn resource(domain: Domain) -> Domain {
    use ApprovalNeed::{None as Free, Required};
    domain.resource(
        "audio",
        &["volume", "sound", "speaker", "speakers", "mute"],
        &[
            (
                "status",
                "Sound outputs: volume, muted, which is default",
                Free,
            ),
            ("set", "Set the volume to percent (0-150)", Required),
            ("up", "Raise the volume by percent (default 10)", Required),
            ("down", "Lower the volume by percent (default 10)", Required),
            ("mute", "Mute", Required),
            ("unmute", "Unmute", Required),
        ],
    )
}

pub(super) fn fields(domain: Domain) -> Domain {
    domain.also_required_for("percent", &["audio.set"]).field(
        "device",
        FieldType::String,
        "audio: output name or part of its description from status (default: the default output)",
    )
}

pub(super) fn facts(call: &Call, facts: &mut CallFacts) {
    if let Some(device) = call.str("device") {
        facts.summary.push_str(&format!(" device {device:?}"));
    }
    if let Some(percent) = call.input.get("percent").and_then(Value::as_f64) {
        facts.summary.push_str(&format!(" to/by {percent}%"));
    }
}

impl OsTool {
    pub(super) async fn audio(&self, call: &Call) -> Result<ToolResult> {
        let percent = || -> Result<Option<u32>> {
            match call.input.get("percent").and_then(Value::as_f64) {
                None => Ok(None),
                Some(p) if (0.0..=f64::from(MAX_PERCENT)).contains(&p) => {
                    Ok(Some(p.round() as u32))
                }
                Some(_) => Err(Error::invalid(format!(
                    "`percent` must be 0 to {MAX_PERCENT}"
                ))),
            }
        };
        let change = match call.action() {
            "status" => {
                let outputs = self.backend.outputs().await?;
                if outputs.is_empty() {
                    return text("The sound server has no outputs.");
                }
                return text(
                    outputs
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
            "set" => AudioChange::Set(
                percent()?.ok_or_else(|| Error::invalid("set needs `percent` (0 to 150)"))?,
            ),
            "up" => AudioChange::Raise(percent()?.unwrap_or(DEFAULT_STEP)),
            "down" => AudioChange::Lower(percent()?.unwrap_or(DEFAULT_STEP)),
            "mute" => AudioChange::Mute(true),
            "unmute" => AudioChange::Mute(false),
            other => return Err(Error::invalid(format!("unknown audio action {other}"))),
        };
        let after = self
            .backend
            .change_output(call.str("device"), change)
            .await?;
        text(format!("Done. {after}"))
    }
}
