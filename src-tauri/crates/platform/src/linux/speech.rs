//! Speech on Linux: speech-dispatcher over its SSIP socket when it runs, otherwise the espeak-ng
//! engine as a process (the engine itself, not a helper in front of an API: it plays through the
//! sound server, and with `--stdout` writes the WAV that `save` stores).
//!
//! One SSIP connection is kept with notifications on, so Osprey knows which of its messages are
//! being spoken (BEGIN, END and CANCELED events): `speak` answers once the speech has begun,
//! and `stop` cancels only Osprey's own messages (`CANCEL SELF`), never a screen reader's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::process::{Child, Command};
use tokio::sync::{Notify, mpsc};

use super::LinuxBackend;
use crate::error::{Error, Result, within};
use crate::tts::{
    Speech, SpeechConfig, Utterance, Voice, espeak_words_per_minute, fix_wav_sizes,
    is_language_code,
};

const SPEECHD: &str = "speech-dispatcher";
/// How long `speak` waits for speech-dispatcher to begin a message before saying it is queued.
const BEGIN_WAIT: Duration = Duration::from_secs(3);

/// The speech state of one backend: the SSIP connection and the espeak-ng processes started.
#[derive(Default)]
pub(crate) struct Speaker {
    ssip: tokio::sync::Mutex<Option<Ssip>>,
    espeak: Mutex<Vec<Child>>,
}

impl std::fmt::Debug for Speaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Speaker").finish_non_exhaustive()
    }
}

/// speech-dispatcher's socket: configured, `SPEECHD_ADDRESS`, or the runtime dir's.
fn socket_path(config: &SpeechConfig) -> Option<PathBuf> {
    if let Some(path) = &config.speechd_socket {
        return Some(path.clone());
    }
    if let Ok(address) = std::env::var("SPEECHD_ADDRESS")
        && let Some(path) = address.strip_prefix("unix_socket:")
        && !path.is_empty()
    {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(|dir| PathBuf::from(dir).join("speech-dispatcher/speechd.sock"))
}

/// One SSIP answer: its code and lines.
#[derive(Debug)]
struct Reply {
    code: u16,
    lines: Vec<String>,
}

impl Reply {
    fn ok(&self) -> bool {
        (200..300).contains(&self.code)
    }
    /// The data lines (all but the last, which is the status text).
    fn data(&self) -> &[String] {
        &self.lines[..self.lines.len().saturating_sub(1)]
    }
    fn text(&self) -> String {
        format!(
            "{} {}",
            self.code,
            self.lines.last().map_or("", String::as_str)
        )
    }
}

/// Osprey's messages speech-dispatcher has not finished: id -> begun.
#[derive(Default)]
struct Active {
    messages: Mutex<BTreeMap<u32, bool>>,
    changed: Notify,
}

impl Active {
    fn snapshot(&self) -> BTreeMap<u32, bool> {
        self.messages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// An SSIP connection: commands go out on `writer`; a reader task sorts what comes back into
/// replies and events.
struct Ssip {
    writer: OwnedWriteHalf,
    replies: mpsc::UnboundedReceiver<Reply>,
    active: Arc<Active>,
    reader: tokio::task::JoinHandle<()>,
    path: PathBuf,
    /// The voice set on this connection, so a call without one gets a fresh connection.
    voice: Option<String>,
}

impl Drop for Ssip {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Ssip {
    async fn connect(path: PathBuf, timeout: Duration) -> Result<Ssip> {
        let stream = within(
            format!("connecting to {SPEECHD} at {}", path.display()),
            timeout,
            async {
                UnixStream::connect(&path)
                    .await
                    .map_err(|e| Error::unavailable(SPEECHD, format!("{}: {e}", path.display())))
            },
        )
        .await?;
        let (read, writer) = stream.into_split();
        let (sender, replies) = mpsc::unbounded_channel();
        let active = Arc::new(Active::default());
        let events = active.clone();
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            let mut pending: Vec<String> = Vec::new();
            while let Ok(Some(line)) = lines.next_line().await {
                let line = line.trim_end_matches('\r');
                let Some(code) = line.get(..3).and_then(|c| c.parse::<u16>().ok()) else {
                    continue;
                };
                pending.push(line.get(4..).unwrap_or("").to_string());
                if line.as_bytes().get(3) == Some(&b'-') {
                    continue;
                }
                let reply = Reply {
                    code,
                    lines: std::mem::take(&mut pending),
                };
                if (700..800).contains(&code) {
                    let id = reply
                        .lines
                        .first()
                        .and_then(|l| l.trim().parse::<u32>().ok());
                    if let Some(id) = id {
                        let mut messages =
                            events.messages.lock().unwrap_or_else(|p| p.into_inner());
                        match code {
                            701 => {
                                messages.insert(id, true);
                            }
                            702 | 703 => {
                                messages.remove(&id);
                            }
                            _ => {}
                        }
                    }
                    events.changed.notify_waiters();
                } else if sender.send(reply).is_err() {
                    break;
                }
            }
            // The connection is gone: nothing of ours is being spoken through it any more.
            events
                .messages
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clear();
            events.changed.notify_waiters();
        });
        let mut ssip = Ssip {
            writer,
            replies,
            active,
            reader,
            path,
            voice: None,
        };
        let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
        let user: String = user
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        ssip.expect(&format!("SET SELF CLIENT_NAME {user}:osprey:os"), timeout)
            .await?;
        ssip.expect("SET SELF NOTIFICATION ALL on", timeout).await?;
        Ok(ssip)
    }

    async fn send(&mut self, text: &str) -> Result<()> {
        let path = self.path.display().to_string();
        self.writer
            .write_all(text.as_bytes())
            .await
            .map_err(|e| Error::unavailable(SPEECHD, format!("{path}: {e}")))
    }

    async fn reply(&mut self, timeout: Duration) -> Result<Reply> {
        within(format!("an answer from {SPEECHD}"), timeout, async {
            self.replies
                .recv()
                .await
                .ok_or_else(|| Error::unavailable(SPEECHD, "it closed the connection"))
        })
        .await
    }

    /// Sends one command and returns its successful reply.
    async fn expect(&mut self, command: &str, timeout: Duration) -> Result<Reply> {
        self.send(&format!("{command}\r\n")).await?;
        let reply = self.reply(timeout).await?;
        if reply.ok() {
            Ok(reply)
        } else {
            Err(Error::Failed(format!(
                "{SPEECHD} refused `{command}`: {}",
                reply.text()
            )))
        }
    }

    /// Queues `text`; the message id.
    async fn speak(&mut self, text: &str, timeout: Duration) -> Result<u32> {
        let reply = self.expect("SPEAK", timeout).await?;
        if reply.code != 230 {
            return Err(Error::Failed(format!(
                "{SPEECHD} did not take text: {}",
                reply.text()
            )));
        }
        // Lines end in CRLF; one that starts with a dot gets another (a lone dot ends the text).
        let mut data = String::with_capacity(text.len() + 16);
        for line in text.replace("\r\n", "\n").replace('\r', "\n").split('\n') {
            if line.starts_with('.') {
                data.push('.');
            }
            data.push_str(line);
            data.push_str("\r\n");
        }
        data.push_str(".\r\n");
        self.send(&data).await?;
        let reply = self.reply(timeout).await?;
        let id = reply
            .data()
            .first()
            .and_then(|l| l.trim().parse::<u32>().ok())
            .filter(|_| reply.ok())
            .ok_or_else(|| {
                Error::Failed(format!(
                    "{SPEECHD} did not queue the text: {}",
                    reply.text()
                ))
            })?;
        self.active
            .messages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id)
            .or_insert(false);
        Ok(id)
    }

    /// Waits until `done` holds for the active messages, or the deadline passes.
    async fn wait_for(&self, deadline: Duration, done: impl Fn(&BTreeMap<u32, bool>) -> bool) {
        let end = Instant::now() + deadline;
        loop {
            let notified = self.active.changed.notified();
            if done(&self.active.snapshot()) {
                return;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, notified).await.is_err() {
                return;
            }
        }
    }
}

impl LinuxBackend {
    /// The SSIP connection, opened if needed; `Ok(None)` when speech-dispatcher does not run.
    async fn ssip<'a>(&self, slot: &'a mut Option<Ssip>) -> Result<Option<&'a mut Ssip>> {
        let config = &self.config.tts;
        if slot.as_ref().is_some_and(|s| s.reader.is_finished()) {
            *slot = None;
        }
        if slot.is_none() {
            let Some(path) = socket_path(config) else {
                return Ok(None);
            };
            if !path.exists() {
                return Ok(None);
            }
            match Ssip::connect(path, config.timeout).await {
                Ok(ssip) => *slot = Some(ssip),
                // A stale socket file: nothing listens.
                Err(Error::ServiceUnavailable { .. }) => return Ok(None),
                Err(err) => return Err(err),
            }
        }
        Ok(slot.as_mut())
    }

    fn espeak_program(&self) -> Result<PathBuf> {
        let config = &self.config.tts;
        if let Some(program) = &config.espeak_program {
            return if program.is_file() {
                Ok(program.clone())
            } else {
                Err(no_engine(&format!("{} does not exist", program.display())))
            };
        }
        std::env::var_os("PATH")
            .and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("espeak-ng"))
                    .find(|p| p.is_file())
            })
            .ok_or_else(|| no_engine("espeak-ng is not on PATH"))
    }

    fn espeak(&self, utterance: &Utterance) -> Result<Command> {
        let mut command = Command::new(self.espeak_program()?);
        command
            .arg("-b")
            .arg("1")
            .arg("-s")
            .arg(espeak_words_per_minute(utterance.rate).to_string());
        if let Some(voice) = &utterance.voice {
            command.arg("-v").arg(voice);
        }
        if let Some(server) = &self.config.pulse_server {
            command.env("PULSE_SERVER", server);
        }
        command.stdin(Stdio::piped()).stderr(Stdio::piped());
        Ok(command)
    }

    /// Stops the espeak-ng processes still speaking; how many there were.
    async fn stop_espeak(&self) -> Vec<u32> {
        let children: Vec<Child> = std::mem::take(
            &mut *self
                .speaker
                .espeak
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        let mut stopped = Vec::new();
        for mut child in children {
            if matches!(child.try_wait(), Ok(None)) {
                if let Some(pid) = child.id() {
                    stopped.push(pid);
                }
                let _ = child.kill().await;
            }
        }
        stopped
    }

    /// Starts espeak-ng on the text. It is not killed when the tool goes away: like `spd-say`,
    /// a speech started from a one-shot `osprey tool` call is heard to its end.
    async fn speak_with_espeak(&self, utterance: &Utterance) -> Result<String> {
        let mut child = self
            .espeak(utterance)?
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| no_engine(&format!("starting espeak-ng failed: {e}")))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(utterance.text.as_bytes())
                .await
                .map_err(|e| Error::Failed(format!("giving espeak-ng the text failed: {e}")))?;
        }
        let mut stderr = child.stderr.take();
        // A failure to open the sound device shows within a moment.
        let settle = Duration::from_millis(400);
        let exited = tokio::time::timeout(settle, child.wait()).await;
        let mut complaint = String::new();
        if let Some(stderr) = stderr.as_mut()
            && exited.is_ok()
        {
            let _ = stderr.read_to_string(&mut complaint).await;
        }
        match exited {
            Ok(Ok(status)) if !status.success() || !complaint.trim().is_empty() => {
                Err(Error::unavailable(
                    "espeak-ng",
                    format!(
                        "it could not play the speech ({}): is a sound server (PipeWire or \
                         PulseAudio) running? `os tts save` writes a WAV file instead",
                        complaint
                            .lines()
                            .rev()
                            .find(|l| !l.trim().is_empty())
                            .unwrap_or("exit status")
                            .trim()
                    ),
                ))
            }
            Ok(Ok(_)) => Ok(format!(
                "Said {} characters with espeak-ng.",
                utterance.text.chars().count()
            )),
            Ok(Err(e)) => Err(Error::Failed(format!("espeak-ng failed: {e}"))),
            Err(_) => {
                let pid = child.id().unwrap_or(0);
                // stderr must keep draining or a chatty espeak-ng would block on it.
                if let Some(mut stderr) = stderr {
                    tokio::spawn(async move {
                        let mut sink = Vec::new();
                        let _ = stderr.read_to_end(&mut sink).await;
                    });
                }
                self.speaker
                    .espeak
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(child);
                Ok(format!(
                    "Speaking {} characters with espeak-ng (pid {pid}); `os tts stop` stops it.",
                    utterance.text.chars().count()
                ))
            }
        }
    }

    /// Which engine answers here, for the status probe.
    pub(crate) async fn speech_probe(&self) -> Result<String> {
        let mut slot = self.speaker.ssip.lock().await;
        if let Some(ssip) = self.ssip(&mut slot).await? {
            return Ok(format!(
                "{SPEECHD} answers at {}; WAV files through espeak-ng",
                ssip.path.display()
            ));
        }
        let program = self.espeak_program()?;
        Ok(format!(
            "espeak-ng ({}); {SPEECHD} is not running",
            program.display()
        ))
    }
}

fn no_engine(why: &str) -> Error {
    Error::unavailable(
        "text to speech",
        format!(
            "neither {SPEECHD} nor espeak-ng can be used ({why}); install espeak-ng (Debian/Ubuntu: \
             apt install espeak-ng), or speech-dispatcher for the desktop's speech service"
        ),
    )
}

impl Speech for LinuxBackend {
    async fn speak(&self, utterance: &Utterance) -> Result<String> {
        let timeout = self.config.tts.timeout;
        self.stop_espeak().await;
        let mut slot = self.speaker.ssip.lock().await;
        // A voice set earlier stays on a connection: a call without one starts afresh.
        if utterance.voice.is_none()
            && slot.as_ref().is_some_and(|s| s.voice.is_some())
            && let Some(mut old) = slot.take()
            && !old.active.snapshot().is_empty()
        {
            let _ = old.expect("CANCEL SELF", timeout).await;
        }
        let Some(ssip) = self.ssip(&mut slot).await? else {
            drop(slot);
            return self.speak_with_espeak(utterance).await;
        };
        if !ssip.active.snapshot().is_empty() {
            ssip.expect("CANCEL SELF", timeout).await?;
        }
        ssip.expect(&format!("SET SELF RATE {}", utterance.rate), timeout)
            .await?;
        if let Some(voice) = &utterance.voice
            && ssip.voice.as_ref() != Some(voice)
        {
            let command = if is_language_code(voice) {
                format!("SET SELF LANGUAGE {voice}")
            } else {
                format!("SET SELF SYNTHESIS_VOICE {voice}")
            };
            ssip.expect(&command, timeout).await.map_err(|_| {
                Error::invalid(format!(
                    "{SPEECHD} has no voice {voice:?}; `os tts voices` lists them"
                ))
            })?;
            ssip.voice = Some(voice.clone());
        }
        let id = ssip.speak(&utterance.text, timeout).await?;
        ssip.wait_for(BEGIN_WAIT, |active| active.get(&id) != Some(&false))
            .await;
        let chars = utterance.text.chars().count();
        Ok(match ssip.active.snapshot().get(&id) {
            Some(true) => format!(
                "Speaking {chars} characters with {SPEECHD} (message {id}); `os tts stop` stops it."
            ),
            Some(false) => format!(
                "Queued {chars} characters with {SPEECHD} (message {id}); it has not begun \
                 within {BEGIN_WAIT:?}, perhaps behind another program's speech."
            ),
            None => format!("Said {chars} characters with {SPEECHD} (message {id})."),
        })
    }

    async fn voices(&self, filter: Option<&str>) -> Result<(String, Vec<Voice>)> {
        let timeout = self.config.tts.timeout;
        let filter = filter.map(str::trim).filter(|f| !f.is_empty());
        let wanted = |voice: &Voice| match filter {
            // Without a filter, the base voices (not each variant of them).
            None => voice
                .detail
                .as_deref()
                .is_none_or(|d| d.eq_ignore_ascii_case("none")),
            // A language code matches that language and its regions (`en`: en, en-us, ...);
            // anything else a part of the name.
            Some(f) if is_language_code(f) => {
                let (f, language) = (f.to_lowercase(), voice.language.to_lowercase());
                language == f
                    || language
                        .strip_prefix(&f)
                        .is_some_and(|rest| rest.starts_with(['-', '_']))
            }
            Some(f) => voice.name.to_lowercase().contains(&f.to_lowercase()),
        };
        // Base voices before their variants.
        let ordered = |mut voices: Vec<Voice>| {
            voices.sort_by_key(|v| {
                v.detail
                    .as_deref()
                    .is_some_and(|d| !d.eq_ignore_ascii_case("none"))
                    && v.name.contains('+')
            });
            voices
        };
        let mut slot = self.speaker.ssip.lock().await;
        if let Some(ssip) = self.ssip(&mut slot).await? {
            let reply = ssip.expect("LIST SYNTHESIS_VOICES", timeout).await?;
            let voices = reply
                .data()
                .iter()
                .filter_map(|line| {
                    let mut fields = line.split('\t');
                    let name = fields.next()?.trim().to_string();
                    let language = fields.next().unwrap_or("").trim().to_string();
                    let detail = fields
                        .next()
                        .map(str::trim)
                        .filter(|d| !d.is_empty())
                        .map(str::to_string);
                    (!name.is_empty()).then_some(Voice {
                        name,
                        language,
                        detail,
                    })
                })
                .filter(|v| wanted(v))
                .collect();
            return Ok((SPEECHD.to_string(), ordered(voices)));
        }
        drop(slot);
        let mut command = Command::new(self.espeak_program()?);
        let listing = command
            .arg("--voices")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = within("espeak-ng listing its voices", timeout, async {
            listing
                .await
                .map_err(|e| no_engine(&format!("running espeak-ng failed: {e}")))
        })
        .await?;
        // `Pty Language Age/Gender VoiceName File Other Languages`
        let voices = String::from_utf8_lossy(&output.stdout)
            .lines()
            .skip(1)
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (language, gender, name) = (fields.get(1)?, fields.get(2)?, fields.get(3)?);
                Some(Voice {
                    name: name.replace('_', " "),
                    language: language.to_string(),
                    detail: gender
                        .split('/')
                        .nth(1)
                        .filter(|g| *g != "-" && !g.is_empty())
                        .map(|g| {
                            if g == "M" {
                                "male"
                            } else if g == "F" {
                                "female"
                            } else {
                                g
                            }
                            .to_string()
                        }),
                })
            })
            .filter(|v| filter.is_none() || wanted(v))
            .collect();
        Ok(("espeak-ng".to_string(), voices))
    }

    async fn stop(&self) -> Result<String> {
        let timeout = self.config.tts.timeout;
        let mut said = Vec::new();
        let stopped = self.stop_espeak().await;
        if !stopped.is_empty() {
            said.push(format!(
                "stopped espeak-ng (pid {})",
                stopped
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let mut slot = self.speaker.ssip.lock().await;
        if let Some(ssip) = slot.as_mut().filter(|s| !s.reader.is_finished()) {
            let before = ssip.active.snapshot();
            if !before.is_empty() {
                ssip.expect("CANCEL SELF", timeout).await?;
                ssip.wait_for(timeout, |active| {
                    before.keys().all(|id| !active.contains_key(id))
                })
                .await;
                let after = ssip.active.snapshot();
                let describe = |(id, begun): (&u32, &bool)| {
                    format!(
                        "message {id} ({})",
                        if *begun { "while speaking" } else { "queued" }
                    )
                };
                let cancelled: Vec<String> = before
                    .iter()
                    .filter(|(id, _)| !after.contains_key(id))
                    .map(describe)
                    .collect();
                if cancelled.is_empty() {
                    said.push(format!(
                        "asked {SPEECHD} to cancel, but it has not confirmed within {timeout:?}"
                    ));
                } else {
                    said.push(format!("{SPEECHD} cancelled {}", cancelled.join(", ")));
                }
            }
        }
        if said.is_empty() {
            Ok("Nothing is being spoken.".into())
        } else {
            Ok(format!("Stopped: {}.", said.join("; ")))
        }
    }

    async fn synthesize(&self, utterance: &Utterance) -> Result<Vec<u8>> {
        let mut child = self
            .espeak(utterance)?
            .arg("--stdout")
            .stdout(Stdio::piped())
            // One that overruns its deadline is stopped with it.
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| no_engine(&format!("starting espeak-ng failed: {e}")))?;
        let mut stdin = child.stdin.take();
        let text = utterance.text.clone();
        let feed = async move {
            if let Some(stdin) = stdin.as_mut() {
                stdin.write_all(text.as_bytes()).await?;
            }
            drop(stdin);
            Ok::<(), std::io::Error>(())
        };
        // espeak-ng synthesises far faster than real time; long texts get longer.
        let deadline = Duration::from_secs(30 + utterance.text.len() as u64 / 200);
        let (fed, output) = within("espeak-ng writing the speech", deadline, async {
            Ok(tokio::join!(feed, child.wait_with_output()))
        })
        .await?;
        fed.map_err(|e| Error::Failed(format!("giving espeak-ng the text failed: {e}")))?;
        let output = output.map_err(|e| Error::Failed(format!("espeak-ng failed: {e}")))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(match &utterance.voice {
                Some(voice) if stderr.contains("voice") => Error::invalid(format!(
                    "espeak-ng has no voice {voice:?}; a language code (en, de, en-us) works"
                )),
                _ => Error::Failed(format!("espeak-ng failed: {}", stderr.trim())),
            });
        }
        let mut wav = output.stdout;
        fix_wav_sizes(&mut wav)?;
        Ok(wav)
    }
}
