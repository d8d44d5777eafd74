//! A media player served on a private bus with zbus (the MPRIS interfaces a real player
//! exports) is listed with what it plays and does what `os music` tells it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use osprey_platform::{OsConfig, OsTool};
use serde_json::json;
use zbus::zvariant::{OwnedValue, Value};

use crate::harness::{call, ok_text, private_bus};

struct Root;

#[zbus::interface(name = "org.mpris.MediaPlayer2")]
impl Root {
    #[zbus(property)]
    fn identity(&self) -> String {
        "Osprey Test Player".into()
    }
}

struct Player {
    status: String,
    position: i64,
    volume: f64,
    calls: Arc<Mutex<Vec<String>>>,
}

impl Player {
    fn record(&self, name: &str) {
        self.calls.lock().unwrap().push(name.into());
    }
}

#[zbus::interface(name = "org.mpris.MediaPlayer2.Player")]
impl Player {
    fn play(&mut self) {
        self.record("Play");
        self.status = "Playing".into();
    }
    fn pause(&mut self) {
        self.record("Pause");
        self.status = "Paused".into();
    }
    fn play_pause(&mut self) {
        self.record("PlayPause");
        self.status = if self.status == "Playing" {
            "Paused"
        } else {
            "Playing"
        }
        .into();
    }
    fn stop(&mut self) {
        self.record("Stop");
        self.status = "Stopped".into();
    }
    fn next(&mut self) {
        self.record("Next");
    }
    fn previous(&mut self) {
        self.record("Previous");
    }
    fn seek(&mut self, offset: i64) {
        self.record("Seek");
        self.position = (self.position + offset).max(0);
    }
    #[zbus(property)]
    fn playback_status(&self) -> String {
        self.status.clone()
    }
    #[zbus(property)]
    fn metadata(&self) -> HashMap<String, OwnedValue> {
        let value = |v: Value<'_>| v.try_to_owned().unwrap();
        HashMap::from([
            (
                "xesam:title".to_string(),
                value(Value::from("Blue in Green")),
            ),
            (
                "xesam:artist".to_string(),
                value(Value::from(vec!["Miles Davis".to_string()])),
            ),
            (
                "xesam:album".to_string(),
                value(Value::from("Kind of Blue")),
            ),
            (
                "mpris:length".to_string(),
                value(Value::from(337_000_000i64)),
            ),
        ])
    }
    #[zbus(property)]
    fn position(&self) -> i64 {
        self.position
    }
    #[zbus(property)]
    fn volume(&self) -> f64 {
        self.volume
    }
    #[zbus(property)]
    fn set_volume(&mut self, volume: f64) {
        self.record("Volume");
        self.volume = volume;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_media_player_on_the_bus_is_listed_and_controlled() {
    let (_bus, address) = private_bus();
    let tool = OsTool::new(OsConfig {
        session_bus_address: Some(address.clone()),
        ..OsConfig::default()
    });
    let result = call(&tool, json!({"resource": "music", "action": "status"})).await;
    assert_eq!(ok_text(&result), "No media player is running.");
    let result = call(&tool, json!({"resource": "music", "action": "play"})).await;
    assert_eq!(result.code.map(|c| c.as_str()), Some("service_unavailable"));

    let calls = Arc::new(Mutex::new(Vec::new()));
    let _player = zbus::connection::Builder::address(address.as_str())
        .unwrap()
        .name("org.mpris.MediaPlayer2.osprey_test")
        .unwrap()
        .serve_at("/org/mpris/MediaPlayer2", Root)
        .unwrap()
        .serve_at(
            "/org/mpris/MediaPlayer2",
            Player {
                status: "Paused".into(),
                position: 10_000_000,
                volume: 1.0,
                calls: calls.clone(),
            },
        )
        .unwrap()
        .build()
        .await
        .unwrap();

    let status = ok_text(&call(&tool, json!({"resource": "music", "action": "status"})).await);
    assert_eq!(
        status,
        "osprey_test (Osprey Test Player): Paused \"Blue in Green\" by Miles Davis from \
         \"Kind of Blue\" at 10s of 337s, volume 100%"
    );
    let after = ok_text(&call(&tool, json!({"resource": "music", "action": "play"})).await);
    assert!(after.contains(": Playing"), "{after}");
    let after = ok_text(
        &call(
            &tool,
            json!({"resource": "music", "action": "seek", "seconds": 30}),
        )
        .await,
    );
    assert!(after.contains("at 40s"), "{after}");
    let after = ok_text(
        &call(
            &tool,
            json!({"resource": "music", "action": "volume", "percent": 40, "player": "osprey test"}),
        )
        .await,
    );
    assert!(after.contains("volume 40%"), "{after}");
    ok_text(&call(&tool, json!({"resource": "music", "action": "next"})).await);
    ok_text(&call(&tool, json!({"resource": "music", "action": "toggle"})).await);
    assert_eq!(
        *calls.lock().unwrap(),
        ["Play", "Seek", "Volume", "Next", "PlayPause"]
    );

    let result = call(
        &tool,
        json!({"resource": "music", "action": "pause", "player": "spotify"}),
    )
    .await;
    assert!(result.is_error && result.text_content().contains("players: osprey_test"));
    let result = call(
        &tool,
        json!({"resource": "music", "action": "volume", "percent": 900}),
    )
    .await;
    assert!(result.is_error && result.text_content().contains("0 to 150"));
}
