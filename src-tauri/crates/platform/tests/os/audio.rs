//! The sound output against a real PulseAudio server of its own with two null sinks: status
//! lists both with the default marked; set, up, down, mute and unmute change the default output
//! or the one `device` names, and `pactl` (another client of the same server) sees the change.

use std::process::Command;

use osprey_platform::tts::SpeechConfig;
use osprey_platform::{OsConfig, OsTool};
use serde_json::{Value, json};

use crate::harness::{Pulse, call, code, installed, ok_text};

fn tool(pulse: &Pulse) -> OsTool {
    OsTool::new(OsConfig {
        tts: SpeechConfig {
            pulse_server: Some(pulse.server.clone()),
            ..SpeechConfig::default()
        },
        ..OsConfig::default()
    })
}

async fn audio(tool: &OsTool, action: &str, rest: Value) -> String {
    let mut input = json!({"resource": "audio", "action": action});
    for (key, value) in rest.as_object().unwrap() {
        input[key] = value.clone();
    }
    ok_text(&call(tool, input).await)
}

/// What `pactl` reports of sink `name`: its volume (the first channel's percent) and mute.
fn seen_by_pactl(pulse: &Pulse, name: &str) -> (String, String) {
    let get = |what: &str| {
        let output = Command::new("pactl")
            .args(["-s", &pulse.server, what, name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let volume = get("get-sink-volume");
    let percent = volume
        .split_whitespace()
        .find(|word| word.ends_with('%'))
        .unwrap_or_default()
        .to_string();
    (percent, get("get-sink-mute").trim().to_string())
}

#[tokio::test]
async fn the_volume_and_mute_of_an_output_change_as_asked_and_other_clients_see_it() {
    if !installed(&["pulseaudio", "pactl"]) {
        return;
    }
    let pulse = Pulse::with_sinks(&["osprey_speakers", "osprey_headset"]);
    let tool = tool(&pulse);

    let status = audio(&tool, "status", json!({})).await;
    assert!(
        status.contains("osprey_speakers") && status.contains("osprey_headset"),
        "{status}"
    );
    assert!(
        status
            .lines()
            .any(|l| l.contains("osprey_speakers") && l.contains("default output")),
        "{status}"
    );

    let set = audio(&tool, "set", json!({"percent": 40})).await;
    assert!(
        set.contains("osprey_speakers") && set.contains("volume 40%"),
        "{set}"
    );
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, "40%");
    let up = audio(&tool, "up", json!({})).await;
    assert!(up.contains("volume 50%"), "{up}");
    let down = audio(&tool, "down", json!({"percent": 25})).await;
    assert!(down.contains("volume 25%"), "{down}");
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, "25%");

    // Another output, by name; the default one is left alone.
    let headset = audio(
        &tool,
        "set",
        json!({"device": "osprey_headset", "percent": 70}),
    )
    .await;
    assert!(headset.contains("osprey_headset"), "{headset}");
    assert_eq!(seen_by_pactl(&pulse, "osprey_headset").0, "70%");
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, "25%");

    let muted = audio(&tool, "mute", json!({})).await;
    assert!(muted.contains("muted"), "{muted}");
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").1, "Mute: yes");
    let unmuted = audio(&tool, "unmute", json!({})).await;
    assert!(!unmuted.contains("muted"), "{unmuted}");
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").1, "Mute: no");

    // Wrong input is refused before anything changes.
    let unknown = call(
        &tool,
        json!({"resource": "audio", "action": "set", "device": "bluetooth", "percent": 10}),
    )
    .await;
    assert_eq!(code(&unknown), "invalid_input", "{unknown:?}");
    assert!(
        unknown.text_content().contains("osprey_headset"),
        "{unknown:?}"
    );
    let too_loud = call(
        &tool,
        json!({"resource": "volume", "action": "set", "percent": 400}),
    )
    .await;
    assert_eq!(code(&too_loud), "invalid_input", "{too_loud:?}");
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, "25%");
}

#[tokio::test]
async fn without_a_sound_server_the_answer_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let tool = OsTool::new(OsConfig {
        tts: SpeechConfig {
            pulse_server: Some(format!("unix:{}", dir.path().join("none").display())),
            ..SpeechConfig::default()
        },
        ..OsConfig::default()
    });
    let result = call(&tool, json!({"resource": "audio", "action": "status"})).await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result.text_content().contains("sound server"),
        "{}",
        result.text_content()
    );
}
