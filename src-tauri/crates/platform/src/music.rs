//! Media players (Linux: MPRIS over D-Bus): list them with what they play, and control one.

use serde::Serialize;

use crate::error::{Error, Result};

/// A player and what it is playing.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PlayerInfo {
    /// Its bus name without the MPRIS prefix (`vlc`, `spotify`).
    pub id: String,
    pub name: String,
    /// `Playing`, `Paused` or `Stopped`.
    pub status: String,
    pub title: Option<String>,
    pub artist: Option<String>,
    pub album: Option<String>,
    pub position_seconds: Option<f64>,
    pub length_seconds: Option<f64>,
    pub volume: Option<f64>,
}

impl std::fmt::Display for PlayerInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.id, self.name, self.status)?;
        if let Some(title) = &self.title {
            write!(f, " {title:?}")?;
        }
        if let Some(artist) = &self.artist {
            write!(f, " by {artist}")?;
        }
        if let Some(album) = &self.album {
            write!(f, " from {album:?}")?;
        }
        if let Some(p) = self.position_seconds {
            write!(f, " at {p:.0}s")?;
            if let Some(l) = self.length_seconds {
                write!(f, " of {l:.0}s")?;
            }
        }
        if let Some(v) = self.volume {
            write!(f, ", volume {:.0}%", v * 100.0)?;
        }
        Ok(())
    }
}

/// What to tell a player.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MediaCommand {
    Play,
    Pause,
    Toggle,
    Stop,
    Next,
    Previous,
    /// Move by this many seconds (negative: back).
    Seek(f64),
    /// Set the volume, 0.0 to 1.0.
    Volume(f64),
}

#[allow(async_fn_in_trait)]
pub trait MediaPlayers {
    async fn players(&self) -> Result<Vec<PlayerInfo>> {
        Err(Error::unsupported("media player control"))
    }
    /// Sends `command` to the player named `player` (its id or part of its name), or to the
    /// playing one (else the first) when `None`; returns its state afterwards.
    async fn control(&self, _player: Option<&str>, _command: MediaCommand) -> Result<PlayerInfo> {
        Err(Error::unsupported("media player control"))
    }
}

/// The player a call means: by id or name part, else the one playing, else the only one.
pub fn choose<'a>(players: &'a [PlayerInfo], wanted: Option<&str>) -> Result<&'a PlayerInfo> {
    if players.is_empty() {
        return Err(Error::unavailable(
            "a media player",
            "no MPRIS player is running; start one (most music and video players speak MPRIS)",
        ));
    }
    match wanted.map(str::trim).filter(|w| !w.is_empty()) {
        Some(wanted) => {
            let lower = wanted.to_lowercase();
            players
                .iter()
                .find(|p| p.id.eq_ignore_ascii_case(wanted))
                .or_else(|| {
                    players.iter().find(|p| {
                        p.id.to_lowercase().contains(&lower)
                            || p.name.to_lowercase().contains(&lower)
                    })
                })
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "no player matches {wanted:?}; players: {}",
                        players
                            .iter()
                            .map(|p| p.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        }
        None => Ok(players
            .iter()
            .find(|p| p.status == "Playing")
            .unwrap_or(&players[0])),
    }
}
