//! The sound output: the outputs (sinks) with their volume and mute, and changing them (Linux:
//! the PulseAudio protocol, which PipeWire also serves through pipewire-pulse, spoken in-process).

use serde::Serialize;

use crate::error::{Error, Result};

/// One sound output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Output {
    /// The server's name for it (`alsa_output.pci-0000_00_1f.3.analog-stereo`).
    pub name: String,
    /// What a person calls it (`Built-in Audio Analog Stereo`).
    pub description: String,
    /// Its loudest channel (as pactl and desktop mixers show it), where 100 is the output's
    /// normal full volume; a change scales every channel alike, keeping the balance.
    pub volume_percent: u32,
    pub muted: bool,
    /// Where sound goes unless a program chooses otherwise.
    pub default: bool,
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): volume {}%",
            self.description, self.name, self.volume_percent
        )?;
        if self.muted {
            f.write_str(", muted")?;
        }
        if self.default {
            f.write_str(", default output")?;
        }
        Ok(())
    }
}

/// The highest volume a call may set: above 100 the server amplifies in software, which
/// distorts; 150 is where desktop mixers stop.
pub const MAX_PERCENT: u32 = 150;

/// A change to an output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AudioChange {
    /// To this percent (0 to [`MAX_PERCENT`]).
    Set(u32),
    /// Up by this many points, to at most 100 (or where it already was above that).
    Raise(u32),
    /// Down by this many points, to at least 0.
    Lower(u32),
    Mute(bool),
}

impl AudioChange {
    /// The volume after this change from `current`; `None` for a mute change.
    pub fn volume_from(self, current: u32) -> Option<u32> {
        match self {
            AudioChange::Set(percent) => Some(percent.min(MAX_PERCENT)),
            AudioChange::Raise(by) => Some(current.saturating_add(by).min(current.max(100))),
            AudioChange::Lower(by) => Some(current.saturating_sub(by)),
            AudioChange::Mute(_) => None,
        }
    }
}

/// The outputs and changing them. Platforms without a backend say so.
#[allow(async_fn_in_trait)]
pub trait Audio {
    async fn outputs(&self) -> Result<Vec<Output>> {
        Err(Error::unsupported("controlling the sound output"))
    }
    /// Changes `device` (a name or part of a description; `None`: the default output) and
    /// returns it as it is afterwards.
    async fn change_output(&self, _device: Option<&str>, _change: AudioChange) -> Result<Output> {
        Err(Error::unsupported("controlling the sound output"))
    }
}

/// The output `wanted` names (its exact name, else the one description containing it), or the
/// default output.
pub fn choose<'a>(outputs: &'a [Output], wanted: Option<&str>) -> Result<&'a Output> {
    let list = || {
        outputs
            .iter()
            .map(|o| format!("{} ({})", o.description, o.name))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let Some(wanted) = wanted.map(str::trim).filter(|w| !w.is_empty()) else {
        return outputs
            .iter()
            .find(|o| o.default)
            .or(outputs.first())
            .ok_or_else(|| Error::invalid("the sound server has no outputs"));
    };
    if let Some(exact) = outputs.iter().find(|o| o.name == wanted) {
        return Ok(exact);
    }
    let lower = wanted.to_lowercase();
    let matching: Vec<&Output> = outputs
        .iter()
        .filter(|o| o.description.to_lowercase().contains(&lower))
        .collect();
    match matching.as_slice() {
        [one] => Ok(one),
        [] => Err(Error::invalid(format!(
            "no sound output is called {wanted:?}; the outputs: {}",
            list()
        ))),
        _ => Err(Error::invalid(format!(
            "{wanted:?} fits several outputs; give the name of one: {}",
            list()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(name: &str, description: &str, default: bool) -> Output {
        Output {
            name: name.into(),
            description: description.into(),
            volume_percent: 50,
            muted: false,
            default,
        }
    }

    #[test]
    fn raising_stops_at_full_and_lowering_at_silence() {
        assert_eq!(AudioChange::Raise(10).volume_from(95), Some(100));
        assert_eq!(AudioChange::Raise(10).volume_from(120), Some(120));
        assert_eq!(AudioChange::Lower(30).volume_from(20), Some(0));
        assert_eq!(AudioChange::Set(400).volume_from(20), Some(MAX_PERCENT));
        assert_eq!(AudioChange::Mute(true).volume_from(20), None);
    }

    #[test]
    fn an_output_is_chosen_by_name_or_description_else_the_default() {
        let outputs = [
            output("hdmi", "HDMI Monitor", false),
            output("speakers", "Built-in Speakers", true),
            output("usb", "USB Headset Speakers", false),
        ];
        assert_eq!(choose(&outputs, None).unwrap().name, "speakers");
        assert_eq!(choose(&outputs, Some("usb")).unwrap().name, "usb");
        assert_eq!(choose(&outputs, Some("hdmi monitor")).unwrap().name, "hdmi");
        let several = choose(&outputs, Some("speakers")).unwrap();
        assert_eq!(several.name, "speakers", "an exact name wins");
        let error = choose(&outputs, Some("Speak")).unwrap_err().to_string();
        assert!(error.contains("several"), "{error}");
        let error = choose(&outputs, Some("bluetooth")).unwrap_err().to_string();
        assert!(error.contains("HDMI Monitor (hdmi)"), "{error}");
    }
}
