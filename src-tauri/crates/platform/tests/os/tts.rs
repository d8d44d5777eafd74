//! Speech against the real engines: espeak-ng writing WAV files that sox measures; espeak-ng and
//! speech-dispatcher speaking into a private PulseAudio server with a null sink (so a speech is
//! a stream that can be seen playing, and stopped); voices as the engines list them.
//!
//! Where a program is missing the test says so and stops, except on CI (`CI` set), where
//! scripts/setup installs them and a missing one fails.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use osprey_platform::tts::SpeechConfig;
use osprey_platform::{OsConfig, OsTool};
use osprey_types::ToolResult;
use serde_json::{Value, json};

use crate::harness::{Guarded, Pulse, STARTUP, call, installed, ok_text, wait_until};

fn code(result: &ToolResult) -> &'static str {
    result.code.map_or("none", |c| c.as_str())
}

async fn tts(tool: &OsTool, input: Value) -> ToolResult {
    let mut input = input;
    input["resource"] = json!("tts");
    call(tool, input).await
}

/// The tool with these speech services, playing into `pulse` when given.
fn tool(speech: SpeechConfig, pulse: Option<&Pulse>) -> OsTool {
    OsTool::new(OsConfig {
        tts: speech,
        pulse_server: pulse.map(|p| p.server.clone()),
        ..OsConfig::default()
    })
}

/// A speech-dispatcher socket that does not exist: espeak-ng is used.
fn without_speechd(dir: &Path) -> SpeechConfig {
    SpeechConfig {
        speechd_socket: Some(dir.join("no-speechd.sock")),
        ..SpeechConfig::default()
    }
}

/// The espeak-ng process a speech names: `Speaking ... (pid 123)`.
fn espeak_pid(said: &str) -> i32 {
    said.split("(pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {said}"))
}

fn running(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

fn soxi(flag: &str, file: &Path) -> String {
    let output = Command::new("soxi").arg(flag).arg(file).output().unwrap();
    assert!(
        output.status.success(),
        "soxi {flag} {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

const LONG: &str = "This is a long sentence that Osprey reads aloud so that a test can stop it \
                    before it ends. It goes on for a good while, with many words and several \
                    clauses, so that the speech lasts well beyond the moment the test asks it to \
                    stop, even on a slow machine.";

/// speech-dispatcher of its own (configuration, socket and logs in a temporary folder) with
/// the espeak-ng module, playing through `pulse`.
struct SpeechDispatcher {
    socket: PathBuf,
    _dir: tempfile::TempDir,
    _process: Guarded,
}

impl SpeechDispatcher {
    fn start(pulse: &Pulse) -> SpeechDispatcher {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("conf");
        std::fs::create_dir_all(config.join("modules")).unwrap();
        std::fs::create_dir_all(dir.path().join("log")).unwrap();
        std::fs::write(
            config.join("speechd.conf"),
            format!(
                "LogLevel 3\nLogDir \"{}\"\nAudioOutputMethod \"pulse\"\nAudioPulseServer \"{}\"\n\
                 AddModule \"espeak-ng\" \"sd_espeak-ng\" \"espeak-ng.conf\"\nDefaultModule espeak-ng\n",
                dir.path().join("log").display(),
                pulse.server
            ),
        )
        .unwrap();
        std::fs::write(config.join("modules/espeak-ng.conf"), "").unwrap();
        let modules = [
            "/usr/lib/speech-dispatcher-modules",
            "/usr/libexec/speech-dispatcher-modules",
        ]
        .into_iter()
        .find(|d| Path::new(d).join("sd_espeak-ng").exists())
        .expect("sd_espeak-ng (apt-get install speech-dispatcher-espeak-ng)");
        let socket = dir.path().join("speechd.sock");
        let process = Guarded::spawn(
            "speech-dispatcher",
            &[
                "-s",
                "-t",
                "0",
                "-c",
                "unix_socket",
                "-S",
                socket.to_str().unwrap(),
                "-C",
                config.to_str().unwrap(),
                "-m",
                modules,
            ],
            &[
                ("HOME", dir.path().to_str().unwrap()),
                ("PULSE_SERVER", &pulse.server),
            ],
        );
        wait_until("speech-dispatcher's socket", STARTUP, || {
            std::os::unix::net::UnixStream::connect(&socket).is_ok()
        });
        SpeechDispatcher {
            socket,
            _dir: dir,
            _process: process,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn save_writes_a_wav_that_sox_measures() {
    if !installed(&["espeak-ng", "soxi"]) {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".local/share/osprey");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    let guard = osprey_tools::PathGuard::new(Some(home.path().to_path_buf()), data.clone());
    let tool = tool(without_speechd(home.path()), None).with_path_guard(guard);

    let out = home.path().join("hello.wav");
    let said = ok_text(
        &tts(
            &tool,
            json!({"action": "save", "text": "Hello from Osprey. This is a test of the speech engine.", "output": out.to_str().unwrap()}),
        )
        .await,
    );
    assert!(
        said.starts_with("Wrote ") && said.contains("Hz, mono"),
        "{said}"
    );
    let seconds: f64 = soxi("-D", &out).parse().unwrap();
    assert!(seconds > 1.0 && seconds < 20.0, "{seconds} s");
    assert_eq!(soxi("-r", &out), "22050");
    assert_eq!(soxi("-c", &out), "1");
    assert!(
        said.contains(&format!("{seconds:.1} s of speech")),
        "{said} vs {seconds}"
    );

    // Rate and voice reach the engine: slower speech lasts longer; German works.
    let slow = home.path().join("slow.wav");
    let fast = home.path().join("fast.wav");
    for (file, rate) in [(&slow, -60), (&fast, 80)] {
        ok_text(
            &tts(
                &tool,
                json!({"action": "save", "text": "one two three four five six seven", "rate": rate, "output": file.to_str().unwrap()}),
            )
            .await,
        );
    }
    let (slow, fast): (f64, f64) = (
        soxi("-D", &slow).parse().unwrap(),
        soxi("-D", &fast).parse().unwrap(),
    );
    assert!(slow > fast * 1.5, "slow {slow} s, fast {fast} s");
    let german = home.path().join("german.wav");
    ok_text(
        &tts(
            &tool,
            json!({"action": "save", "text": "Guten Morgen", "voice": "de", "output": german.to_str().unwrap()}),
        )
        .await,
    );
    assert!(soxi("-D", &german).parse::<f64>().unwrap() > 0.3);

    // Writes go through the path guard; bad paths say why.
    for (output, expected) in [
        (home.path().join(".ssh/speech.wav"), "permission_denied"),
        (data.join("speech.wav"), "permission_denied"),
        (home.path().join("speech.mp3"), "invalid_input"),
        (PathBuf::from("relative.wav"), "invalid_input"),
    ] {
        let result = tts(
            &tool,
            json!({"action": "save", "text": "no", "output": output.to_str().unwrap()}),
        )
        .await;
        assert_eq!(code(&result), expected, "{output:?}: {result:?}");
        assert!(
            !output.is_absolute() || !output.exists(),
            "{output:?} was written"
        );
    }
    let result = tts(
        &tool,
        json!({"action": "save", "text": "  ", "output": out.to_str().unwrap()}),
    )
    .await;
    assert_eq!(code(&result), "invalid_input", "{result:?}");
    let result = tts(&tool, json!({"action": "save", "text": "x"})).await;
    assert!(
        result.text_content().contains("needs `output`"),
        "{result:?}"
    );

    // espeak-ng's own voice list.
    let voices = ok_text(&tts(&tool, json!({"action": "voices", "query": "en"})).await);
    assert!(voices.starts_with("espeak-ng: "), "{voices}");
    assert!(voices.contains("English"), "{voices}");
    let all = ok_text(&tts(&tool, json!({"action": "voices", "limit": 500})).await);
    assert!(all.lines().count() > 50, "{all}");
    assert!(all.contains("German (de)"), "{all}");
}

#[tokio::test(flavor = "multi_thread")]
async fn espeak_speaks_into_the_sound_server_and_stop_ends_it() {
    if !installed(&["espeak-ng", "pulseaudio", "pactl"]) {
        return;
    }
    let pulse = Pulse::start();
    let dir = tempfile::tempdir().unwrap();
    let tool = tool(without_speechd(dir.path()), Some(&pulse));
    assert_eq!(pulse.streams(), 0);
    let said = ok_text(&tts(&tool, json!({"action": "speak", "text": LONG})).await);
    assert!(said.starts_with("Speaking "), "{said}");
    let pid = espeak_pid(&said);
    wait_until("espeak-ng's stream", Duration::from_secs(10), || {
        pulse.streams() == 1
    });
    let stopped = ok_text(&tts(&tool, json!({"action": "stop"})).await);
    assert_eq!(stopped, format!("Stopped: stopped espeak-ng (pid {pid})."));
    wait_until("the stream to end", Duration::from_secs(10), || {
        pulse.streams() == 0
    });
    assert!(!running(pid), "espeak-ng {pid} still runs");
    let again = ok_text(&tts(&tool, json!({"action": "stop"})).await);
    assert_eq!(again, "Nothing is being spoken.");

    // A new speech stops the one before it.
    let first = espeak_pid(&ok_text(
        &tts(&tool, json!({"action": "speak", "text": LONG})).await,
    ));
    wait_until("the first stream", Duration::from_secs(10), || {
        pulse.streams() == 1
    });
    let second = espeak_pid(&ok_text(
        &tts(&tool, json!({"action": "speak", "text": LONG, "rate": 40})).await,
    ));
    wait_until(
        "the first espeak-ng to be stopped",
        Duration::from_secs(10),
        || !running(first),
    );
    wait_until("one stream", Duration::from_secs(10), || {
        pulse.streams() == 1
    });
    assert!(running(second), "the second speech stopped too");
    ok_text(&tts(&tool, json!({"action": "stop"})).await);
    // A short speech ends by itself.
    let said = ok_text(&tts(&tool, json!({"action": "speak", "text": "Hi."})).await);
    assert!(said.contains("espeak-ng"), "{said}");
    wait_until("the short speech to end", Duration::from_secs(10), || {
        pulse.streams() == 0
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn speech_dispatcher_speaks_lists_voices_and_stops() {
    if !installed(&[
        "speech-dispatcher",
        "espeak-ng",
        "pulseaudio",
        "pactl",
        "parec",
    ]) {
        return;
    }
    let pulse = Pulse::start();
    let speechd = SpeechDispatcher::start(&pulse);
    let tool = tool(
        SpeechConfig {
            speechd_socket: Some(speechd.socket.clone()),
            ..SpeechConfig::default()
        },
        Some(&pulse),
    );

    let voices = ok_text(&tts(&tool, json!({"action": "voices", "query": "en"})).await);
    assert!(voices.starts_with("speech-dispatcher: "), "{voices}");
    assert!(voices.contains("English"), "{voices}");
    let base = ok_text(&tts(&tool, json!({"action": "voices", "limit": 500})).await);
    assert!(base.lines().count() > 50, "{base}");
    assert!(
        !base.contains('+'),
        "variants listed without a query:\n{base}"
    );

    let said = ok_text(&tts(&tool, json!({"action": "speak", "text": LONG})).await);
    assert!(said.starts_with("Speaking "), "{said}");
    let message: u32 = said
        .split("(message ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no message id in {said}"));
    let stopped = ok_text(&tts(&tool, json!({"action": "stop"})).await);
    assert_eq!(
        stopped,
        format!("Stopped: speech-dispatcher cancelled message {message} (while speaking).")
    );
    let again = ok_text(&tts(&tool, json!({"action": "stop"})).await);
    assert_eq!(again, "Nothing is being spoken.");

    // Another language, then back to the default voice; a short speech ends by itself.
    let said = ok_text(
        &tts(
            &tool,
            json!({"action": "speak", "text": "Guten Tag", "voice": "de"}),
        )
        .await,
    );
    assert!(said.contains("speech-dispatcher"), "{said}");
    let said = ok_text(&tts(&tool, json!({"action": "speak", "text": "Hello."})).await);
    assert!(said.contains("speech-dispatcher"), "{said}");
    // speech-dispatcher keeps its stream open after speaking: the end is heard, as silence.
    wait_until("the short speech to end", Duration::from_secs(15), || {
        pulse.silent(Duration::from_millis(300))
    });
    assert_eq!(
        ok_text(&tts(&tool, json!({"action": "stop"})).await),
        "Nothing is being spoken."
    );

    // The status probe names the service.
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    let line = status.lines().find(|l| l.starts_with("tts (")).unwrap();
    assert!(
        line.contains("available - speech-dispatcher answers at"),
        "{line}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_an_engine_speech_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tool(
        SpeechConfig {
            espeak_program: Some(dir.path().join("espeak-ng")),
            ..without_speechd(dir.path())
        },
        None,
    );
    for input in [
        json!({"action": "speak", "text": "hello"}),
        json!({"action": "voices"}),
        json!({"action": "save", "text": "hello", "output": dir.path().join("x.wav").to_str().unwrap()}),
    ] {
        let result = tts(&tool, input.clone()).await;
        assert_eq!(code(&result), "service_unavailable", "{input}: {result:?}");
        assert!(
            result.text_content().contains("apt install espeak-ng"),
            "{result:?}"
        );
    }
    assert_eq!(
        ok_text(&tts(&tool, json!({"action": "stop"})).await),
        "Nothing is being spoken."
    );
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    let line = status
        .lines()
        .find(|l| l.starts_with("tts (media)"))
        .unwrap();
    assert!(line.contains("unavailable - service_unavailable"), "{line}");
}

/// Speaking is free for the person and asked from chats, apps and skills (like a notification);
/// writing a WAV file needs approval; voices and stop never do.
#[test]
fn speech_approvals_follow_the_table_and_the_origin() {
    use osprey_tools::{CheckOutcome, Policy, PolicyConfig, Registry, RegistryConfig, ToolContext};
    use osprey_types::Origin;
    let data = tempfile::tempdir().unwrap();
    let policy = Policy::new(PolicyConfig::default(), None).unwrap();
    let registry = Registry::new(RegistryConfig::new(policy, data.path()));
    registry.register_domain(OsTool::new(OsConfig::default()));
    let asks = |origin: Origin, input: Value| {
        let ctx = ToolContext::new(origin, Duration::from_secs(5));
        matches!(
            futures::executor::block_on(registry.check(&ctx, "os", input)),
            CheckOutcome::Ask { .. }
        )
    };
    let speak = json!({"resource": "tts", "action": "speak", "text": "hi"});
    assert!(!asks(Origin::User, speak.clone()));
    for origin in [Origin::Comm, Origin::App, Origin::Skill] {
        assert!(asks(origin, speak.clone()), "{origin:?} speaks unasked");
    }
    assert!(asks(
        Origin::User,
        json!({"resource": "tts", "action": "save", "text": "hi", "output": "/tmp/x.wav"})
    ));
    for action in ["voices", "stop"] {
        assert!(!asks(
            Origin::Comm,
            json!({"resource": "tts", "action": action})
        ));
    }
}
