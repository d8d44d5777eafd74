//! Text to speech: say text aloud, list voices, stop, and write speech to a WAV file. On Linux
//! speech-dispatcher is used over its SSIP socket when it runs (the desktop's own speech
//! service, shared with screen readers); otherwise the espeak-ng engine is run directly, which
//! is also what writes WAV files (speech-dispatcher cannot).

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};

/// Where the speech services are.
#[derive(Clone, Debug)]
pub struct SpeechConfig {
    /// speech-dispatcher's socket; `None`: `SPEECHD_ADDRESS` (`unix_socket:/path`), else
    /// `$XDG_RUNTIME_DIR/speech-dispatcher/speechd.sock`.
    pub speechd_socket: Option<PathBuf>,
    /// The espeak-ng program; `None`: `espeak-ng` on `PATH`.
    pub espeak_program: Option<PathBuf>,
    /// How long one request to speech-dispatcher, or a start of espeak-ng, may take.
    pub timeout: Duration,
}

impl Default for SpeechConfig {
    fn default() -> Self {
        SpeechConfig {
            speechd_socket: None,
            espeak_program: None,
            timeout: Duration::from_secs(5),
        }
    }
}

/// What to say and how.
#[derive(Clone, Debug, Default)]
pub struct Utterance {
    pub text: String,
    /// A language code (`en`, `de`, `en-us`) or a voice name from `voices`.
    pub voice: Option<String>,
    /// -100 (slowest) to 100 (fastest); 0 is normal.
    pub rate: i32,
}

/// A voice one of the engines offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Voice {
    pub name: String,
    pub language: String,
    /// A variant of a base voice (speech-dispatcher lists each espeak-ng voice with its
    /// variants), or its gender for espeak-ng.
    pub detail: Option<String>,
}

/// The most text one call speaks.
pub const MAX_TEXT_CHARS: usize = 10_000;

impl Utterance {
    /// Checks the text, voice and rate.
    pub fn new(text: &str, voice: Option<&str>, rate: Option<i64>) -> Result<Utterance> {
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::invalid("`text` is empty: give the words to say"));
        }
        if text.chars().count() > MAX_TEXT_CHARS {
            return Err(Error::invalid(format!(
                "`text` is longer than {MAX_TEXT_CHARS} characters; say it in parts"
            )));
        }
        let voice = match voice.map(str::trim).filter(|v| !v.is_empty()) {
            None => None,
            Some(v) if v.len() > 100 || v.starts_with('-') || v.chars().any(char::is_control) => {
                return Err(Error::invalid(
                    "`voice` must be a language code (en, de, en-us) or a name from `tts voices`",
                ));
            }
            Some(v) => Some(v.to_string()),
        };
        let rate = rate.unwrap_or(0);
        if !(-100..=100).contains(&rate) {
            return Err(Error::invalid(
                "`rate` must be -100 (slowest) to 100 (fastest); 0 is normal",
            ));
        }
        Ok(Utterance {
            text: text.to_string(),
            voice,
            rate: rate as i32,
        })
    }
}

/// Whether `voice` is a language code rather than a voice name.
pub fn is_language_code(voice: &str) -> bool {
    let mut parts = voice.split(['-', '_']);
    parts
        .next()
        .is_some_and(|p| (2..=3).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphabetic()))
        && parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// espeak-ng's words per minute for a rate of -100..100 (80, 175, 450 at -100, 0, 100).
pub fn espeak_words_per_minute(rate: i32) -> u32 {
    let rate = rate.clamp(-100, 100);
    if rate >= 0 {
        175 + (rate as u32 * 275) / 100
    } else {
        175 - ((-rate) as u32 * 95) / 100
    }
}

/// What the chunks of a RIFF WAVE file say up to its `data` chunk.
struct WavLayout {
    channels: u16,
    rate: u32,
    byte_rate: u32,
    /// Where the `data` chunk's header starts.
    data: usize,
}

/// Walks the chunks in order, each by its size (a chunk's contents are never searched), to the
/// `fmt ` facts and the `data` chunk; the walk stops there, as a piped WAV's data size is a
/// placeholder. `None`: not a WAV file.
fn wav_layout(wav: &[u8]) -> Option<WavLayout> {
    if wav.get(0..4)? != b"RIFF" || wav.get(8..12)? != b"WAVE" {
        return None;
    }
    let u16_at = |at: usize| Some(u16::from_le_bytes(wav.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(wav.get(at..at + 4)?.try_into().ok()?));
    let mut format = None;
    let mut at = 12;
    while at + 8 <= wav.len() {
        let size = u32_at(at + 4)? as usize;
        match wav.get(at..at + 4)? {
            b"fmt " => format = Some((u16_at(at + 10)?, u32_at(at + 12)?, u32_at(at + 16)?)),
            b"data" => {
                let (channels, rate, byte_rate) = format?;
                return Some(WavLayout {
                    channels,
                    rate,
                    byte_rate,
                    data: at,
                });
            }
            _ => {}
        }
        at = at.checked_add(8 + size + (size & 1))?;
    }
    None
}

/// Seconds, sample rate and channels of a WAV file (the data that is there, whatever its header
/// claims).
pub fn wav_facts(wav: &[u8]) -> Option<(f64, u32, u16)> {
    let layout = wav_layout(wav)?;
    let stored = u32::from_le_bytes(wav.get(layout.data + 4..layout.data + 8)?.try_into().ok()?);
    let present = (wav.len() - layout.data - 8).min(stored as usize);
    (layout.byte_rate > 0).then(|| {
        (
            present as f64 / f64::from(layout.byte_rate),
            layout.rate,
            layout.channels,
        )
    })
}

/// A WAV written to a pipe has placeholder sizes (the writer cannot seek back): sets the RIFF
/// and `data` chunk sizes from what was actually written, so players and `soxi` see its length.
pub fn fix_wav_sizes(wav: &mut [u8]) -> Result<()> {
    let bad = || Error::Failed("espeak-ng did not produce a WAV file".into());
    let data = wav_layout(wav).ok_or_else(bad)?.data;
    let riff = u32::try_from(wav.len() - 8).map_err(|_| bad())?;
    wav[4..8].copy_from_slice(&riff.to_le_bytes());
    let size = u32::try_from(wav.len() - data - 8).map_err(|_| bad())?;
    wav[data + 4..data + 8].copy_from_slice(&size.to_le_bytes());
    Ok(())
}

/// Speaks; the Linux backend implements it, other platforms answer `platform_not_supported`.
#[allow(async_fn_in_trait)]
pub trait Speech {
    /// Starts saying the text (what Osprey was still saying stops first) and says how.
    async fn speak(&self, _utterance: &Utterance) -> Result<String> {
        Err(Error::unsupported("text to speech"))
    }
    /// The voices, those matching `filter` (a language code or a part of a name) when given.
    async fn voices(&self, _filter: Option<&str>) -> Result<(String, Vec<Voice>)> {
        Err(Error::unsupported("text to speech"))
    }
    /// Stops what Osprey is saying and says what was stopped.
    async fn stop(&self) -> Result<String> {
        Err(Error::unsupported("text to speech"))
    }
    /// The speech as a WAV file's bytes.
    async fn synthesize(&self, _utterance: &Utterance) -> Result<Vec<u8>> {
        Err(Error::unsupported("text to speech"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utterances_are_checked() {
        assert!(Utterance::new("  ", None, None).is_err());
        assert!(Utterance::new("hi", Some("--help"), None).is_err());
        assert!(Utterance::new("hi", None, Some(150)).is_err());
        let u = Utterance::new(" hi ", Some("en-us"), Some(-20)).unwrap();
        assert_eq!(
            (u.text.as_str(), u.voice.as_deref(), u.rate),
            ("hi", Some("en-us"), -20)
        );
        assert!(is_language_code("en") && is_language_code("en-US") && is_language_code("yue"));
        assert!(!is_language_code("English (America)+Adam") && !is_language_code("e"));
        assert_eq!(espeak_words_per_minute(0), 175);
        assert_eq!(espeak_words_per_minute(100), 450);
        assert_eq!(espeak_words_per_minute(-100), 80);
    }

    /// A mono 22050 Hz 16-bit WAV header as a pipe leaves it, an `extra` chunk before `data`.
    fn piped_wav(extra: &[u8]) -> Vec<u8> {
        let mut wav = b"RIFF\xff\xff\xff\x7fWAVEfmt \x10\x00\x00\x00".to_vec();
        wav.extend(1u16.to_le_bytes()); // PCM
        wav.extend(1u16.to_le_bytes()); // channels
        wav.extend(22_050u32.to_le_bytes());
        wav.extend(44_100u32.to_le_bytes()); // bytes per second
        wav.extend(2u16.to_le_bytes());
        wav.extend(16u16.to_le_bytes());
        wav.extend(extra);
        wav.extend(b"data\xff\xff\xff\x7f");
        wav.extend([1u8; 4410]);
        wav
    }

    #[test]
    fn wav_sizes_are_fixed() {
        let mut wav = piped_wav(&[]);
        fix_wav_sizes(&mut wav).unwrap();
        assert_eq!(
            u32::from_le_bytes(wav[4..8].try_into().unwrap()) as usize,
            wav.len() - 8
        );
        assert_eq!(u32::from_le_bytes(wav[40..44].try_into().unwrap()), 4410);
        assert!(fix_wav_sizes(&mut b"nope".to_vec()).is_err());
    }

    #[test]
    fn wav_facts_walk_the_chunks_and_never_search_inside_one() {
        // A LIST chunk whose text says "data" is stepped over, not taken for the data chunk.
        let mut wav = piped_wav(b"LIST\x08\x00\x00\x00INFOdata");
        fix_wav_sizes(&mut wav).unwrap();
        let (seconds, rate, channels) = wav_facts(&wav).unwrap();
        assert_eq!((rate, channels), (22_050, 1));
        assert!((seconds - 0.1).abs() < 1e-9, "{seconds}");
        // Before its sizes are fixed, only the data that is there counts.
        assert!((wav_facts(&piped_wav(&[])).unwrap().0 - 0.1).abs() < 1e-9);
        assert!(wav_facts(b"RIFF\x04\x00\x00\x00WAVE").is_none());
    }
}
