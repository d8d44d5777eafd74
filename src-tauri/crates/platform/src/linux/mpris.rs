//! Media players over MPRIS (org.mpris.MediaPlayer2.* on the session bus).

use std::collections::HashMap;

use zbus::Connection;
use zbus::zvariant::{OwnedValue, Value};

use super::LinuxBackend;
use super::bus::dbus_error;
use crate::error::within;
use crate::error::{Error, Result};
use crate::music::{MediaCommand, MediaPlayers, PlayerInfo, choose};

const PREFIX: &str = "org.mpris.MediaPlayer2.";
const PATH: &str = "/org/mpris/MediaPlayer2";
const ROOT: &str = "org.mpris.MediaPlayer2";
const PLAYER: &str = "org.mpris.MediaPlayer2.Player";
const NAME: &str = "the media player";

async fn proxy<'a>(
    connection: &Connection,
    bus_name: &str,
    interface: &'static str,
) -> Result<zbus::Proxy<'a>> {
    zbus::Proxy::new(connection, bus_name.to_string(), PATH, interface)
        .await
        .map_err(|e| dbus_error(NAME, e))
}

fn text(metadata: &HashMap<String, OwnedValue>, key: &str) -> Option<String> {
    let value = metadata.get(key)?;
    match &**value {
        Value::Str(s) => Some(s.to_string()),
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .filter_map(|v| match v {
                    Value::Str(s) => Some(s.to_string()),
                    _ => None,
                })
                .collect();
            (!parts.is_empty()).then(|| parts.join(", "))
        }
        _ => None,
    }
}

fn micros(value: &Value<'_>) -> Option<f64> {
    match value {
        Value::I64(v) => Some(*v as f64 / 1e6),
        Value::U64(v) => Some(*v as f64 / 1e6),
        Value::I32(v) => Some(f64::from(*v) / 1e6),
        Value::U32(v) => Some(f64::from(*v) / 1e6),
        _ => None,
    }
}

async fn describe(connection: &Connection, bus_name: &str) -> Result<PlayerInfo> {
    let root = proxy(connection, bus_name, ROOT).await?;
    let player = proxy(connection, bus_name, PLAYER).await?;
    let id = bus_name.trim_start_matches(PREFIX).to_string();
    let name = root
        .get_property::<String>("Identity")
        .await
        .unwrap_or_else(|_| id.clone());
    let status = player
        .get_property::<String>("PlaybackStatus")
        .await
        .map_err(|e| dbus_error(NAME, e))?;
    let metadata: HashMap<String, OwnedValue> =
        player.get_property("Metadata").await.unwrap_or_default();
    let position = player
        .get_property::<OwnedValue>("Position")
        .await
        .ok()
        .and_then(|v| micros(&v));
    Ok(PlayerInfo {
        id,
        name,
        status,
        title: text(&metadata, "xesam:title"),
        artist: text(&metadata, "xesam:artist"),
        album: text(&metadata, "xesam:album"),
        position_seconds: position,
        length_seconds: metadata.get("mpris:length").and_then(|v| micros(v)),
        volume: player.get_property::<f64>("Volume").await.ok(),
    })
}

impl LinuxBackend {
    pub(super) async fn player_names(&self, connection: &Connection) -> Result<Vec<String>> {
        let dbus = zbus::fdo::DBusProxy::new(connection)
            .await
            .map_err(|e| Error::unavailable("the D-Bus daemon", e))?;
        let mut names: Vec<String> = dbus
            .list_names()
            .await
            .map_err(|e| Error::unavailable("the D-Bus daemon", e))?
            .into_iter()
            .map(|n| n.to_string())
            .filter(|n| n.starts_with(PREFIX))
            .collect();
        names.sort();
        Ok(names)
    }
}

impl MediaPlayers for LinuxBackend {
    async fn players(&self) -> Result<Vec<PlayerInfo>> {
        let connection = self.buses.session().await?;
        within("listing media players", self.buses.timeout, async {
            let mut players = Vec::new();
            for name in self.player_names(&connection).await? {
                // A player that stops answering is left out, not an error for the others.
                if let Ok(info) = describe(&connection, &name).await {
                    players.push(info);
                }
            }
            Ok(players)
        })
        .await
    }

    async fn control(&self, wanted: Option<&str>, command: MediaCommand) -> Result<PlayerInfo> {
        let players = self.players().await?;
        let chosen = choose(&players, wanted)?;
        let bus_name = format!("{PREFIX}{}", chosen.id);
        let connection = self.buses.session().await?;
        within(NAME, self.buses.timeout, async {
            let player = proxy(&connection, &bus_name, PLAYER).await?;
            let result = match command {
                MediaCommand::Play => player.call_method("Play", &()).await.map(drop),
                MediaCommand::Pause => player.call_method("Pause", &()).await.map(drop),
                MediaCommand::Toggle => player.call_method("PlayPause", &()).await.map(drop),
                MediaCommand::Stop => player.call_method("Stop", &()).await.map(drop),
                MediaCommand::Next => player.call_method("Next", &()).await.map(drop),
                MediaCommand::Previous => player.call_method("Previous", &()).await.map(drop),
                MediaCommand::Seek(seconds) => player
                    .call_method("Seek", &((seconds * 1e6) as i64))
                    .await
                    .map(drop),
                MediaCommand::Volume(volume) => player
                    .set_property("Volume", volume)
                    .await
                    .map_err(zbus::Error::from),
            };
            result.map_err(|e| dbus_error(NAME, e))?;
            describe(&connection, &bus_name).await
        })
        .await
    }
}
