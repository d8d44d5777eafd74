//! The sound output against a real PulseAudio server of its own with two null sinks: status
//! lists both with the default marked; set, up, down, mute and unmute change the default output
//! or the one `device` names, and `pactl` (another client of the same server) sees the change.

use std::process::Command;

use osprey_platform::{OsConfig, OsTool};
use serde_json::{Value, json};

use crate::harness::{Pulse, call, code, installed, ok_text};

fn tool(pulse: &Pulse) -> OsTool {
    OsTool::new(OsConfig {
        pulse_server: Some(pulse.server.clone()),
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

/// `pactl` (another client of the server) run on `pulse`; what it printed.
fn pactl(pulse: &Pulse, args: &[&str]) -> String {
    let output = Command::new("pactl")
        .args(["-s", &pulse.server])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "pactl {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What `pactl` reports of sink `name`: each channel's volume in percent, and mute.
fn seen_by_pactl(pulse: &Pulse, name: &str) -> (Vec<String>, String) {
    let percents = pactl(pulse, &["get-sink-volume", name])
        .split_whitespace()
        .filter(|word| word.ends_with('%'))
        .map(str::to_string)
        .collect();
    let mute = pactl(pulse, &["get-sink-mute", name]).trim().to_string();
    (percents, mute)
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
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, ["40%", "40%"]);
    let up = audio(&tool, "up", json!({})).await;
    assert!(up.contains("volume 50%"), "{up}");
    let down = audio(&tool, "down", json!({"percent": 25})).await;
    assert!(down.contains("volume 25%"), "{down}");
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, ["25%", "25%"]);

    // Another output, by name; the default one is left alone.
    let headset = audio(
        &tool,
        "set",
        json!({"device": "osprey_headset", "percent": 70}),
    )
    .await;
    assert!(headset.contains("osprey_headset"), "{headset}");
    assert_eq!(seen_by_pactl(&pulse, "osprey_headset").0, ["70%", "70%"]);
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, ["25%", "25%"]);

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
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, ["25%", "25%"]);
}

#[tokio::test]
async fn a_volume_change_keeps_the_balance_between_left_and_right() {
    if !installed(&["pulseaudio", "pactl"]) {
        return;
    }
    let pulse = Pulse::with_sinks(&["osprey_speakers"]);
    let tool = tool(&pulse);
    pactl(
        &pulse,
        &["set-sink-volume", "osprey_speakers", "40%", "80%"],
    );
    // The volume is the loudest channel's, as pactl and the desktop's mixer show it.
    let status = audio(&tool, "status", json!({})).await;
    assert!(status.contains("volume 80%"), "{status}");
    // Up 10 points: the loudest channel to 90 %, the other scaled by the same 90/80.
    let up = audio(&tool, "up", json!({})).await;
    assert!(up.contains("volume 90%"), "{up}");
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, ["45%", "90%"]);
    let set = audio(&tool, "set", json!({"percent": 60})).await;
    assert!(set.contains("volume 60%"), "{set}");
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, ["30%", "60%"]);
    // From silence every channel goes to the volume asked for.
    pactl(&pulse, &["set-sink-volume", "osprey_speakers", "0%", "0%"]);
    audio(&tool, "up", json!({})).await;
    assert_eq!(seen_by_pactl(&pulse, "osprey_speakers").0, ["10%", "10%"]);
}

#[tokio::test]
async fn without_a_sound_server_the_answer_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let tool = OsTool::new(OsConfig {
        pulse_server: Some(format!("unix:{}", dir.path().join("none").display())),
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
