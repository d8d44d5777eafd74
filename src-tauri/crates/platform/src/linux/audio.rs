//! The sound output over the PulseAudio native protocol (the `pulseaudio` crate's messages on
//! a Unix socket, in this process): PulseAudio itself, or PipeWire through pipewire-pulse. Each
//! call opens a connection, authenticates (the cookie, or anonymously where the server allows),
//! does its work and closes, on a blocking thread with a deadline on every read and write.

use std::ffi::CString;
use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use pulseaudio::protocol::{self, ChannelVolume, Command, Volume};

use super::LinuxBackend;
use crate::audio::{Audio, AudioChange, Output, choose};
use crate::error::{Error, Result};
use crate::tool::count;

const WHAT: &str = "the sound server (PulseAudio or PipeWire)";

/// One connection to the sound server.
struct Pulse {
    socket: BufReader<UnixStream>,
    version: u16,
    sequence: u32,
}

fn failed(error: impl ToString) -> Error {
    Error::unavailable(WHAT, error)
}

impl Pulse {
    /// Connects to `server` (`unix:/path`), else to the session's server, and says hello.
    fn connect(server: Option<&str>, timeout: Duration) -> Result<Pulse> {
        let path = match server {
            Some(server) => Some(PathBuf::from(server.strip_prefix("unix:").ok_or_else(
                || {
                    failed(format!(
                        "only local servers (unix:/path) are supported, not {server}"
                    ))
                },
            )?)),
            None => pulseaudio::socket_path_from_env(),
        }
        .ok_or_else(|| {
            failed(
                "no server socket: neither PULSE_SERVER nor $XDG_RUNTIME_DIR/pulse/native \
                 (is PulseAudio or pipewire-pulse running in this session?)",
            )
        })?;
        let stream = UnixStream::connect(&path)
            .map_err(|e| failed(format!("cannot connect to {}: {e}", path.display())))?;
        stream.set_read_timeout(Some(timeout)).map_err(failed)?;
        stream.set_write_timeout(Some(timeout)).map_err(failed)?;
        let mut pulse = Pulse {
            socket: BufReader::new(stream),
            version: protocol::MAX_VERSION,
            sequence: 0,
        };
        let cookie = pulseaudio::cookie_path_from_env()
            .and_then(|path| std::fs::read(path).ok())
            .unwrap_or_default();
        let auth: protocol::AuthReply = pulse.request(&Command::Auth(protocol::AuthParams {
            version: protocol::MAX_VERSION,
            supports_shm: false,
            supports_memfd: false,
            cookie,
        }))?;
        pulse.version = protocol::MAX_VERSION.min(auth.version);
        let mut props = protocol::Props::new();
        props.set(
            protocol::Prop::ApplicationName,
            CString::new("Osprey").unwrap_or_default(),
        );
        let _: protocol::SetClientNameReply = pulse.request(&Command::SetClientName(props))?;
        Ok(pulse)
    }

    fn send(&mut self, command: &Command) -> Result<()> {
        self.sequence += 1;
        protocol::write_command_message(self.socket.get_mut(), self.sequence, command, self.version)
            .map_err(failed)
    }

    fn request<R: protocol::CommandReply>(&mut self, command: &Command) -> Result<R> {
        self.send(command)?;
        let (_, reply) = protocol::read_reply_message::<R>(&mut self.socket, self.version)
            .map_err(|e| failed(format!("the server refused or broke off: {e}")))?;
        Ok(reply)
    }

    fn acknowledge(&mut self, command: &Command) -> Result<()> {
        self.send(command)?;
        protocol::read_ack_message(&mut self.socket)
            .map(|_| ())
            .map_err(|e| failed(format!("the server refused: {e}")))
    }

    /// Every output with its index and its channels' raw volumes, and which is the default.
    fn outputs(&mut self) -> Result<Vec<(u32, Vec<u32>, Output)>> {
        let server: protocol::ServerInfo = self.request(&Command::GetServerInfo)?;
        let sinks: protocol::SinkInfoList = self.request(&Command::GetSinkInfoList)?;
        let default = server.default_sink_name;
        Ok(sinks
            .into_iter()
            .map(|sink| {
                let channels: Vec<u32> =
                    sink.cvolume.channels().iter().map(|v| v.as_u32()).collect();
                let output = Output {
                    name: sink.name.to_string_lossy().into_owned(),
                    description: sink
                        .description
                        .as_ref()
                        .map(|d| d.to_string_lossy().into_owned())
                        .unwrap_or_else(|| sink.name.to_string_lossy().into_owned()),
                    volume_percent: percent_of(u64::from(loudest(&channels))),
                    muted: sink.muted,
                    default: default.as_ref() == Some(&sink.name),
                };
                (sink.index, channels, output)
            })
            .collect())
    }
}

/// The server's volume scale: 0x10000 is 100 %.
fn percent_of(raw: u64) -> u32 {
    let norm = u64::from(Volume::NORM.as_u32());
    ((raw * 100 + norm / 2) / norm) as u32
}

fn raw_of(percent: u32) -> u32 {
    (u64::from(Volume::NORM.as_u32()) * u64::from(percent) / 100) as u32
}

/// The loudest channel: an output's volume as pactl and desktop mixers show it, so a balance
/// (left quieter than right) does not read as a lower volume.
fn loudest(channels: &[u32]) -> u32 {
    channels.iter().copied().max().unwrap_or(0)
}

/// The channels with the loudest at `percent` and the others scaled by the same factor, so a
/// change of volume keeps the balance; silent channels all go to `percent`.
fn scaled(channels: &[u32], percent: u32) -> Vec<u32> {
    let target = u64::from(raw_of(percent));
    let max = u64::from(loudest(channels));
    if channels.is_empty() {
        return vec![target as u32];
    }
    channels
        .iter()
        .map(|&raw| {
            (u64::from(raw) * target + max / 2)
                .checked_div(max)
                .unwrap_or(target) as u32
        })
        .collect()
}

impl LinuxBackend {
    async fn with_pulse<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Pulse) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let server = self.config.pulse_server.clone();
        let timeout = self.config.bus_timeout;
        tokio::task::spawn_blocking(move || work(&mut Pulse::connect(server.as_deref(), timeout)?))
            .await
            .map_err(failed)?
    }

    /// Whether a sound server answers, with its default output.
    pub(super) async fn audio_probe(&self) -> Result<String> {
        let outputs = self.outputs().await?;
        let default = outputs.iter().find(|o| o.default);
        Ok(format!(
            "a sound server answers: {}{}",
            count(outputs.len(), "output"),
            default
                .map(|o| format!(", default {}", o.description))
                .unwrap_or_default()
        ))
    }
}

impl Audio for LinuxBackend {
    async fn outputs(&self) -> Result<Vec<Output>> {
        self.with_pulse(|pulse| Ok(pulse.outputs()?.into_iter().map(|(_, _, o)| o).collect()))
            .await
    }

    async fn change_output(&self, device: Option<&str>, change: AudioChange) -> Result<Output> {
        let device = device.map(str::to_owned);
        self.with_pulse(move |pulse| {
            let all = pulse.outputs()?;
            let outputs: Vec<Output> = all.iter().map(|(_, _, o)| o.clone()).collect();
            let chosen = choose(&outputs, device.as_deref())?.name.clone();
            let (index, channels, current) = all
                .into_iter()
                .find(|(_, _, o)| o.name == chosen)
                .ok_or_else(|| failed("the output went away"))?;
            match change.volume_from(current.volume_percent) {
                Some(percent) => {
                    let mut volume = ChannelVolume::empty();
                    for raw in scaled(&channels, percent) {
                        volume.push(Volume::from_u32_clamped(raw));
                    }
                    pulse.acknowledge(&Command::SetSinkVolume(
                        protocol::SetDeviceVolumeParams {
                            device_index: Some(index),
                            device_name: None,
                            volume,
                        },
                    ))?;
                }
                None => {
                    let AudioChange::Mute(mute) = change else {
                        unreachable!("only a mute change has no volume")
                    };
                    pulse.acknowledge(&Command::SetSinkMute(protocol::SetDeviceMuteParams {
                        device_index: Some(index),
                        device_name: None,
                        mute,
                    }))?;
                }
            }
            pulse
                .outputs()?
                .into_iter()
                .map(|(_, _, o)| o)
                .find(|o| o.name == chosen)
                .ok_or_else(|| failed("the output went away"))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_and_raw_volume_round_trip() {
        for percent in [0, 1, 33, 50, 99, 100, 150] {
            assert_eq!(percent_of(u64::from(raw_of(percent))), percent);
        }
        assert_eq!(percent_of(0x10000), 100);
    }

    #[test]
    fn a_volume_change_keeps_the_balance_of_the_channels() {
        let (forty, eighty) = (raw_of(40), raw_of(80));
        let louder = scaled(&[forty, eighty], 90);
        assert_eq!(louder[1], raw_of(90));
        assert_eq!(percent_of(u64::from(louder[0])), 45);
        assert_eq!(scaled(&[0, 0], 30), [raw_of(30), raw_of(30)]);
        assert_eq!(scaled(&[], 30), [raw_of(30)]);
        assert_eq!(loudest(&[forty, eighty]), eighty);
    }
}
