//! The agent's persona (`osprey_types::Persona`, the `persona` setting) turned into the identity
//! section of the system prompt, its checks, and the quiet-hours clock. The person edits the
//! persona; every runner asks for the identity at each turn, so a change applies from the next
//! turn on without a restart.

use chrono::NaiveTime;
use osprey_types::{Persona, QuietHours};

/// The longest name, in characters.
pub const NAME_MAX: usize = 40;
/// The longest emoji field, in characters (a flag or a family is several code points).
pub const EMOJI_MAX: usize = 8;
/// The longest vibe, in characters.
pub const VIBE_MAX: usize = 120;
/// The longest personality, in characters.
pub const PERSONALITY_MAX: usize = 2000;

/// Why a persona cannot be stored, in words for the person; `Ok` when it can.
pub fn validate(persona: &Persona) -> Result<(), String> {
    let name = persona.name.trim();
    if name.is_empty() {
        return Err("the persona needs a name, e.g. \"Osprey\"".into());
    }
    if name.contains(['\n', '\r']) {
        return Err("the persona's name must be one line".into());
    }
    let fields = [
        ("name", Some(name), NAME_MAX),
        ("emoji", persona.emoji.as_deref(), EMOJI_MAX),
        ("vibe", persona.vibe.as_deref(), VIBE_MAX),
        (
            "personality",
            persona.personality.as_deref(),
            PERSONALITY_MAX,
        ),
    ];
    for (field, value, max) in fields {
        let count = value.map_or(0, |v| v.chars().count());
        if count > max {
            return Err(format!(
                "the persona's {field} is {count} characters; at most {max} are kept"
            ));
        }
    }
    if let Some(quiet) = &persona.quiet_hours {
        let (start, end) = quiet_bounds(quiet)?;
        if start == end {
            return Err(format!(
                "quiet hours from {} to {} are empty; give an end other than the start",
                quiet.start, quiet.end
            ));
        }
    }
    Ok(())
}

/// The start and end of quiet hours as times of day, or why they are not `HH:MM`.
fn quiet_bounds(quiet: &QuietHours) -> Result<(NaiveTime, NaiveTime), String> {
    let parse = |which: &str, text: &str| {
        NaiveTime::parse_from_str(text.trim(), "%H:%M").map_err(|_| {
            format!("quiet hours' {which} `{text}` is not a time like 22:00 (HH:MM, 24-hour)")
        })
    };
    Ok((parse("start", &quiet.start)?, parse("end", &quiet.end)?))
}

/// Whether `now` (local time of day) falls in the quiet hours: from the start up to, not
/// including, the end, across midnight when the end comes first. Unreadable hours are never
/// quiet (they cannot be stored; this only guards hand-edited databases).
pub fn is_quiet(quiet: &QuietHours, now: NaiveTime) -> bool {
    let Ok((start, end)) = quiet_bounds(quiet) else {
        return false;
    };
    if start <= end {
        start <= now && now < end
    } else {
        now >= start || now < end
    }
}

/// Whether the persona's quiet hours hold at `now`.
pub fn quiet_now(persona: &Persona, now: NaiveTime) -> bool {
    persona
        .quiet_hours
        .as_ref()
        .is_some_and(|q| is_quiet(q, now))
}

/// The identity section for `persona` at local time `now`. The default persona gives the
/// runner's default identity word for word.
pub fn identity(persona: &Persona, now: NaiveTime) -> String {
    let name = match persona.name.trim() {
        "" => "Osprey",
        name => name,
    };
    let emoji = persona
        .emoji
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| format!(" {e}"))
        .unwrap_or_default();
    let mut text = format!(
        "You are {name}{emoji}, an AI agent on the person's desktop. You act through tools; \
         say briefly what you did."
    );
    if let Some(vibe) = nonempty(persona.vibe.as_deref()) {
        let vibe = vibe.trim_end_matches('.');
        text.push_str(&format!("\nYour manner: {vibe}."));
    }
    if let Some(personality) = nonempty(persona.personality.as_deref()) {
        text.push_str(&format!(
            "\n\nThe person describes your personality so:\n{personality}"
        ));
    }
    if let Some(quiet) = &persona.quiet_hours {
        let state = if is_quiet(quiet, now) {
            "It is quiet hours now."
        } else {
            "It is not quiet hours now."
        };
        text.push_str(&format!(
            "\n\nThe person's quiet hours are {} to {} local time. {state} During them, send no \
             notifications or messages of your own and leave non-urgent background work for \
             later, unless the person asks.",
            quiet.start.trim(),
            quiet.end.trim()
        ));
    }
    text
}

fn nonempty(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunnerConfig;

    fn at(hh: u32, mm: u32) -> NaiveTime {
        NaiveTime::from_hms_opt(hh, mm, 0).unwrap()
    }

    fn quiet(start: &str, end: &str) -> QuietHours {
        QuietHours {
            start: start.into(),
            end: end.into(),
        }
    }

    #[test]
    fn the_default_persona_is_the_default_identity() {
        assert_eq!(
            identity(&Persona::default(), at(12, 0)),
            RunnerConfig::default().identity
        );
    }

    #[test]
    fn quiet_hours_run_across_midnight_and_end_before_their_end() {
        let night = quiet("22:00", "07:00");
        assert!(is_quiet(&night, at(22, 0)));
        assert!(is_quiet(&night, at(23, 59)));
        assert!(is_quiet(&night, at(0, 0)));
        assert!(is_quiet(&night, at(6, 59)));
        assert!(!is_quiet(&night, at(7, 0)));
        assert!(!is_quiet(&night, at(21, 59)));
        let lunch = quiet("12:00", "13:30");
        assert!(is_quiet(&lunch, at(12, 45)));
        assert!(!is_quiet(&lunch, at(13, 30)));
        assert!(!is_quiet(&lunch, at(11, 59)));
        assert!(!is_quiet(&quiet("late", "07:00"), at(23, 0)));
    }

    #[test]
    fn identity_carries_name_emoji_vibe_personality_and_the_quiet_state() {
        let persona = Persona {
            name: "Kestrel".into(),
            emoji: Some("🦅".into()),
            vibe: Some("dry, brief.".into()),
            personality: Some("Speak like a ship's navigator.".into()),
            quiet_hours: Some(quiet("22:00", "07:00")),
        };
        let night = identity(&persona, at(23, 0));
        assert!(
            night.starts_with("You are Kestrel 🦅, an AI agent"),
            "{night}"
        );
        assert!(night.contains("Your manner: dry, brief."), "{night}");
        assert!(night.contains("Speak like a ship's navigator."), "{night}");
        assert!(night.contains("22:00 to 07:00"), "{night}");
        assert!(night.contains("It is quiet hours now."), "{night}");
        let day = identity(&persona, at(9, 0));
        assert!(day.contains("It is not quiet hours now."), "{day}");
    }

    #[test]
    fn bad_personas_are_refused_with_the_reason() {
        let named = |name: &str| Persona {
            name: name.into(),
            ..Persona::default()
        };
        assert!(validate(&Persona::default()).is_ok());
        assert!(validate(&named("  ")).unwrap_err().contains("needs a name"));
        assert!(validate(&named("a\nb")).unwrap_err().contains("one line"));
        assert!(
            validate(&named(&"x".repeat(41)))
                .unwrap_err()
                .contains("at most 40")
        );
        let long = Persona {
            personality: Some("p".repeat(2001)),
            ..Persona::default()
        };
        assert!(validate(&long).unwrap_err().contains("personality"));
        let bad_time = Persona {
            quiet_hours: Some(quiet("25:00", "07:00")),
            ..Persona::default()
        };
        assert!(validate(&bad_time).unwrap_err().contains("HH:MM"));
        let empty = Persona {
            quiet_hours: Some(quiet("07:00", "07:00")),
            ..Persona::default()
        };
        assert!(validate(&empty).unwrap_err().contains("empty"));
    }
}
