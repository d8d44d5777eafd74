//! The real parts these tests run against: a private D-Bus session bus per test, one Xvfb
//! display with openbox per test binary, GTK windows and clipboard clients in python3-gi, and a
//! way to call the `os` tool as the registry does (validate against the table, then run).
//! Nothing here changes this process's environment; every process started sits under a small
//! `sh` guard that kills it when this process's end of a pipe closes.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock, mpsc};
use std::time::{Duration, Instant};

use osprey_platform::OsTool;
use osprey_tools::{DomainTool, ToolContext};
use osprey_types::{Origin, ToolResult};
use serde_json::Value;

pub const STARTUP: Duration = Duration::from_secs(30);

/// A process that dies with the test process.
pub struct Guarded {
    child: Child,
    _stdin: Option<ChildStdin>,
}

impl Guarded {
    pub fn spawn(program: &str, args: &[&str], env: &[(&str, &str)]) -> Guarded {
        Guarded::spawn_with_input(program, args, env, "")
    }

    /// Like [`Guarded::spawn`], with `input` on the program's stdin.
    pub fn spawn_with_input(
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
        input: &str,
    ) -> Guarded {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#"printf %s "$GUARD_INPUT" | "$@" & child=$!; read -r _; kill $child 2>/dev/null; wait $child"#)
            .env("GUARD_INPUT", input)
            .arg("sh")
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting {program}: {e}"));
        let stdin = child.stdin.take();
        Guarded {
            child,
            _stdin: stdin,
        }
    }

    /// The lines the process prints.
    pub fn lines(&mut self) -> Lines {
        Lines::new(self.child.stdout.take().expect("stdout was piped"))
    }
}

/// Lines a child prints, read on a thread so a test can wait for one with a deadline.
pub struct Lines {
    receiver: mpsc::Receiver<String>,
}

impl Lines {
    fn new(stdout: ChildStdout) -> Lines {
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Lines { receiver }
    }

    pub fn wait_for(
        &self,
        what: &str,
        deadline: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        let end = Instant::now() + deadline;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.receiver.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(_) => continue,
                Err(_) => panic!("no `{what}` line within {deadline:?}"),
            }
        }
    }
}

/// Polls `ready` until it holds, panicking at the deadline.
pub fn wait_until(what: &str, deadline: Duration, mut ready: impl FnMut() -> bool) {
    let end = Instant::now() + deadline;
    while !ready() {
        assert!(Instant::now() < end, "{what} not ready after {deadline:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn program_exists(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
}

/// A session bus's configuration. Without `services` it starts nothing on demand: the standard
/// session configuration would activate the machine's own services (gnome-keyring with the
/// real HOME, a notification daemon). With it, only the services described there.
pub fn bus_config(services: Option<&std::path::Path>) -> String {
    let services = services
        .map(|dir| format!("\n  <servicedir>{}</servicedir>", dir.display()))
        .unwrap_or_default();
    format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>{services}
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#
    )
}

/// A private D-Bus session bus (dbus-daemon, no service activation) and its address.
pub fn private_bus() -> (Guarded, String) {
    assert!(
        program_exists("dbus-daemon"),
        "dbus-daemon is missing: apt-get install dbus (scripts/setup)"
    );
    static CONFIG: OnceLock<tempfile::TempPath> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, bus_config(None).as_bytes()).unwrap();
        file.into_temp_path()
    });
    let config = format!("--config-file={}", config.display());
    let mut daemon = Guarded::spawn(
        "dbus-daemon",
        &[&config, "--nofork", "--print-address=1"],
        &[],
    );
    let address = daemon
        .lines()
        .wait_for("dbus address", STARTUP, |l| l.contains('='));
    (daemon, address.trim().to_string())
}

/// One Xvfb display with openbox for the whole test binary, and a lock so tests that put
/// windows or clipboard content on it run one at a time.
pub struct Display {
    pub name: String,
    _processes: Vec<Guarded>,
}

pub fn display() -> (&'static Display, MutexGuard<'static, ()>) {
    static DISPLAY: OnceLock<Display> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let display = DISPLAY.get_or_init(|| {
        assert!(
            program_exists("Xvfb") && program_exists("openbox"),
            "Xvfb and openbox are needed: apt-get install xvfb openbox (scripts/setup)"
        );
        let mut xvfb = Guarded::spawn(
            "Xvfb",
            &[
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1600x1000x24",
                "-nolisten",
                "tcp",
            ],
            &[],
        );
        let number = xvfb.lines().wait_for("Xvfb display number", STARTUP, |l| {
            l.trim().parse::<u32>().is_ok()
        });
        let name = format!(":{}", number.trim());
        let openbox = start_window_manager(&name);
        Display {
            name,
            _processes: vec![xvfb, openbox],
        }
    });
    (display, guard)
}

/// Starts openbox on `display` and waits until it announces itself on the root window
/// (_NET_SUPPORTING_WM_CHECK). An openbox that has not done so within a third of the start-up
/// deadline is replaced by a new one (`--replace`), twice at most: a full run once saw the
/// first openbox never get there while a second, started later in the same binary, did.
fn start_window_manager(display: &str) -> Guarded {
    const ATTEMPTS: u32 = 3;
    for attempt in 1..=ATTEMPTS {
        let openbox = Guarded::spawn(
            "openbox",
            &["--sm-disable", "--replace"],
            &[("DISPLAY", display)],
        );
        let end = Instant::now() + STARTUP / ATTEMPTS;
        while Instant::now() < end {
            if window_manager_running(display) {
                return openbox;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!(
            "openbox (attempt {attempt}) not running on {display} after {:?}",
            STARTUP / ATTEMPTS
        );
    }
    panic!("openbox not running on {display} after {ATTEMPTS} attempts");
}

fn window_manager_running(display: &str) -> bool {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _};
    let Ok((connection, screen)) = x11rb::connect(Some(display)) else {
        return false;
    };
    let root = connection.setup().roots[screen].root;
    let Ok(atom) = connection.intern_atom(false, b"_NET_SUPPORTING_WM_CHECK") else {
        return false;
    };
    let Ok(atom) = atom.reply() else { return false };
    connection
        .get_property(false, root, atom.atom, AtomEnum::WINDOW, 0, 1)
        .ok()
        .and_then(|c| c.reply().ok())
        .is_some_and(|r| r.value_len > 0)
}

/// The system python3 (PyGObject comes from apt: python3-gi, gir1.2-gtk-3.0).
pub fn python_with_gi() -> &'static str {
    static PYTHON: OnceLock<&'static str> = OnceLock::new();
    PYTHON.get_or_init(|| {
        ["/usr/bin/python3", "python3"]
            .into_iter()
            .find(|python| {
                Command::new(python)
                    .args(["-c", "import gi; gi.require_version('Gtk', '3.0')"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            })
            .expect("no python3 with PyGObject: apt-get install python3-gi gir1.2-gtk-3.0")
    })
}

/// A GTK window titled `title`; it prints `ready` once mapped and exits when closed.
pub fn gtk_window(display: &str, bus: &str, title: &str) -> Guarded {
    const SCRIPT: &str = r#"
import sys, gi
gi.require_version('Gtk', '3.0')
gi.require_version('Gdk', '3.0')
from gi.repository import Gtk, Gdk
Gdk.set_program_class('Osprey-fixture')
window = Gtk.Window(title=sys.argv[1])
window.set_default_size(320, 200)
window.connect('destroy', Gtk.main_quit)
window.connect('map-event', lambda *a: print('ready', flush=True))
window.show_all()
Gtk.main()
print('closed', flush=True)
"#;
    Guarded::spawn(
        python_with_gi(),
        &["-c", SCRIPT, title],
        &[
            ("DISPLAY", display),
            ("DBUS_SESSION_BUS_ADDRESS", bus),
            ("NO_AT_BRIDGE", "1"),
        ],
    )
}

/// Calls the tool as the registry would after its checks: the input is validated against the
/// tool's table first, so a call the table refuses never runs.
pub async fn call(tool: &OsTool, input: Value) -> ToolResult {
    call_as(tool, Origin::User, input).await
}

pub async fn call_as(tool: &OsTool, origin: Origin, input: Value) -> ToolResult {
    let call = match tool.domain().resolve(input) {
        Ok(call) => call,
        Err(message) => {
            return ToolResult::error(osprey_types::ErrorCode::InvalidInput, message);
        }
    };
    let ctx = ToolContext::new(origin, Duration::from_secs(60));
    tool.run(&ctx, call).await
}

/// The result's text, asserting it is not an error.
pub fn ok_text(result: &ToolResult) -> String {
    assert!(!result.is_error, "unexpected error: {result:?}");
    result.text_content()
}

/// The shared Radicale server (`osprey_tests::servers`) with a client that talks to it as
/// `alice`, as another CalDAV client would.
pub struct Radicale {
    server: osprey_tests::servers::Radicale,
    client: reqwest::Client,
}

impl std::ops::Deref for Radicale {
    type Target = osprey_tests::servers::Radicale;

    fn deref(&self) -> &Self::Target {
        &self.server
    }
}

/// Starts Radicale, or says why the test is skipped (never on CI: it must be installed there).
pub fn radicale(test: &str) -> Option<Radicale> {
    Some(Radicale {
        server: osprey_tests::servers::Radicale::start(test)?,
        client: reqwest::Client::new(),
    })
}

impl Radicale {
    /// One request as `alice`, as another CalDAV client would send it: status, ETag, body.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> (u16, Option<String>, String) {
        let mut request = self
            .client
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                format!("{}{}", self.url, path.trim_start_matches('/')),
            )
            .basic_auth("alice", Some("secret"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.body(body.to_string());
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get("etag")
            .map(|e| e.to_str().unwrap().to_string());
        (status, etag, response.text().await.unwrap())
    }

    /// Creates a calendar (`calendar`) or address book (`addressbook`) with a display name.
    pub async fn collection(&self, path: &str, kind: &str, name: &str) {
        self.server.make_collection(path, kind, name);
    }

    /// The `os` tool's account settings for this server: account `home` as `alice`, with
    /// `password` (None: none stored), listings in `zone`.
    pub fn config(&self, password: Option<&str>, zone: &str) -> osprey_platform::OsConfig {
        self.config_at("", password, zone)
    }

    /// [`Radicale::config`] with the account's URL at `path` on the server.
    pub fn config_at(
        &self,
        path: &str,
        password: Option<&str>,
        zone: &str,
    ) -> osprey_platform::OsConfig {
        use osprey_platform::{DavAccount, DavConfig, DavKind, StaticDavSettings};
        let settings = StaticDavSettings {
            accounts: vec![DavAccount {
                name: "home".into(),
                kind: DavKind::Dav,
                url: format!("{}{path}", self.url),
                username: "alice".into(),
            }],
            passwords: password
                .map(|p| [("home".to_string(), p.to_string())].into())
                .unwrap_or_default(),
        };
        osprey_platform::OsConfig {
            dav: DavConfig {
                settings: Some(std::sync::Arc::new(settings)),
                timezone: Some(zone.into()),
                timeout: Duration::from_secs(10),
                // Only the Radicale account: not the stores of whatever desktop runs the tests.
                desktop: false,
                ..DavConfig::default()
            },
            ..osprey_platform::OsConfig::default()
        }
    }
}

/// The error code of a result, asserting it is an error.
pub fn code(result: &ToolResult) -> &'static str {
    assert!(result.is_error, "expected an error: {result:?}");
    result.code.map(|c| c.as_str()).unwrap_or("none")
}

/// `{"resource": resource, "action": action}` with `rest`'s fields.
pub fn input(resource: &str, action: &str, rest: Value) -> Value {
    let mut input = serde_json::json!({"resource": resource, "action": action});
    input
        .as_object_mut()
        .unwrap()
        .extend(rest.as_object().cloned().unwrap_or_default());
    input
}

/// The uid a tool's answer names after `uid `.
pub fn uid_in(text: &str) -> String {
    let start = text.find("uid ").expect("a uid") + 4;
    text[start..]
        .split([')', ';', ']'])
        .next()
        .unwrap()
        .to_string()
}

/// Whether `programs` are installed; on CI a missing one fails the test.
pub fn installed(programs: &[&str]) -> bool {
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| !program_exists(p))
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("CI").is_err(),
        "{} must be installed on CI (scripts/setup)",
        missing.join(", ")
    );
    eprintln!(
        "skipped: {} not installed (scripts/setup installs espeak-ng, sox, speech-dispatcher, and pulseaudio where PipeWire is not the sound server)",
        missing.join(", ")
    );
    false
}

/// A PulseAudio server of its own with a null sink: speech plays in real time into nothing.
pub struct Pulse {
    pub server: String,
    _dir: tempfile::TempDir,
    _process: Guarded,
}

impl Pulse {
    pub fn start() -> Pulse {
        Pulse::with_sinks(&["osprey_test"])
    }

    /// A server whose outputs are null sinks named `sinks` (the first is the default).
    pub fn with_sinks(sinks: &[&str]) -> Pulse {
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("run");
        std::fs::create_dir(&runtime).unwrap();
        std::fs::set_permissions(
            &runtime,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        let socket = dir.path().join("native");
        let native = format!(
            "module-native-protocol-unix socket={} auth-anonymous=1",
            socket.display()
        );
        let mut args = vec![
            "-n".to_string(),
            "--daemonize=no".into(),
            "--exit-idle-time=-1".into(),
            "--use-pid-file=no".into(),
            "--disable-shm=yes".into(),
            "-L".into(),
            native,
        ];
        for sink in sinks {
            args.push("-L".into());
            args.push(format!(
                "module-null-sink sink_name={sink} sink_properties=device.description={sink}"
            ));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let process = Guarded::spawn(
            "pulseaudio",
            &args,
            &[
                ("HOME", dir.path().to_str().unwrap()),
                ("XDG_RUNTIME_DIR", runtime.to_str().unwrap()),
                ("XDG_CONFIG_HOME", dir.path().to_str().unwrap()),
                ("DBUS_SESSION_BUS_ADDRESS", "disabled:"),
            ],
        );
        let pulse = Pulse {
            server: format!("unix:{}", socket.display()),
            _dir: dir,
            _process: process,
        };
        wait_until("pulseaudio", STARTUP, || {
            Command::new("pactl")
                .args(["-s", &pulse.server, "info"])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        pulse
    }

    /// Whether the default output plays silence for `window` now, as its monitor records it:
    /// a speech has ended even where the speaker keeps its stream open (speech-dispatcher does).
    pub fn silent(&self, window: Duration) -> bool {
        use std::io::Read as _;
        const RATE: u128 = 8_000;
        let mut recorder = Command::new("parec")
            .args(["-s", &self.server, "-d", "@DEFAULT_MONITOR@", "--raw"])
            .args(["--format=s16le", "--channels=1", &format!("--rate={RATE}")])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut samples = vec![0u8; (RATE * window.as_millis() / 1000 * 2) as usize];
        let read = recorder.stdout.take().unwrap().read_exact(&mut samples);
        let _ = recorder.kill();
        let _ = recorder.wait();
        read.unwrap();
        samples.iter().all(|b| *b == 0)
    }

    /// The streams playing now.
    pub fn streams(&self) -> usize {
        let output = Command::new("pactl")
            .args(["-s", &self.server, "list", "short", "sink-inputs"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count()
    }
}
