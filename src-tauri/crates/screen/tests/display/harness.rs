//! The display environment for these tests: an X display, a D-Bus session bus (the AT-SPI bus
//! starts itself when the first GTK app asks for it) and GTK 3 fixture windows.
//!
//! Under scripts/test `DISPLAY` and `DBUS_SESSION_BUS_ADDRESS` are set (Xvfb + dbus-run-session)
//! and reused. Without them (a developer running `cargo test -p osprey-screen`) the harness
//! starts its own Xvfb (`-displayfd`, so it picks a free display), openbox and a dbus-daemon,
//! once per test binary, and hands their addresses to the backends explicitly: nothing here
//! changes this process's environment. Every process it starts sits under a small `sh` guard
//! that kills it when this process's end of a pipe closes, so nothing outlives the tests.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use osprey_screen::{Desktop, DesktopConfig, WindowInfo};

pub const STARTUP: Duration = Duration::from_secs(30);

/// A process that dies when the test process does: `sh` waits on its stdin (our pipe) and kills
/// the program when the pipe closes.
pub struct Guarded {
    child: Child,
    _stdin: Option<ChildStdin>,
}

impl Guarded {
    fn spawn(program: &str, args: &[&str], env: &[(&str, &str)], capture_stdout: bool) -> Guarded {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#""$@" </dev/null & child=$!; read -r _; kill $child 2>/dev/null; wait $child"#)
            .arg("sh")
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(if capture_stdout {
                Stdio::piped()
            } else {
                Stdio::null()
            })
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

    fn stdout(&mut self) -> ChildStdout {
        self.child.stdout.take().expect("stdout was piped")
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

    /// Waits for a line that satisfies `wanted`, skipping others; panics at the deadline.
    pub fn wait_for(
        &self,
        what: &str,
        deadline: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        let end = Instant::now() + deadline;
        let mut skipped = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.receiver.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(line) => skipped.push(line),
                Err(_) => panic!("no `{what}` line within {deadline:?}; it printed {skipped:?}"),
            }
        }
    }

    /// Everything printed so far, without waiting.
    pub fn drain(&self) -> Vec<String> {
        self.receiver.try_iter().collect()
    }
}

/// The display and bus every test in this binary uses.
pub struct Environment {
    pub display: String,
    pub bus: String,
    _processes: Vec<Guarded>,
}

fn program_exists(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
}

impl Environment {
    fn start() -> Environment {
        let mut processes = Vec::new();
        let display = match std::env::var("DISPLAY").ok().filter(|d| !d.is_empty()) {
            Some(display) => display,
            None => {
                assert!(
                    program_exists("Xvfb"),
                    "DISPLAY is unset and Xvfb is missing: apt-get install xvfb"
                );
                let mut xvfb = Guarded::spawn(
                    "Xvfb",
                    &[
                        "-displayfd",
                        "1",
                        "-screen",
                        "0",
                        "1920x1080x24",
                        "-nolisten",
                        "tcp",
                    ],
                    &[],
                    true,
                );
                let lines = Lines::new(xvfb.stdout());
                let number = lines.wait_for("Xvfb display number", STARTUP, |l| {
                    l.trim().parse::<u32>().is_ok()
                });
                processes.push(xvfb);
                format!(":{}", number.trim())
            }
        };
        let bus = match std::env::var("DBUS_SESSION_BUS_ADDRESS")
            .ok()
            .filter(|a| !a.is_empty())
        {
            Some(bus) => bus,
            None => {
                let mut daemon = Guarded::spawn(
                    "dbus-daemon",
                    &["--session", "--nofork", "--print-address=1"],
                    &[],
                    true,
                );
                let lines = Lines::new(daemon.stdout());
                let address = lines.wait_for("dbus address", STARTUP, |l| l.contains('='));
                processes.push(daemon);
                address.trim().to_string()
            }
        };
        let environment = Environment {
            display,
            bus,
            _processes: processes,
        };
        // Our own display gets a window manager, as a person's desktop has; a display we were
        // given is left as it is. The tests pass with or without one.
        if !environment._processes.is_empty() && program_exists("openbox") {
            let openbox = Guarded::spawn(
                "openbox",
                &["--sm-disable"],
                &[("DISPLAY", &environment.display)],
                false,
            );
            let mut environment = environment;
            environment._processes.push(openbox);
            let desktop = environment.desktop();
            wait_until("openbox", STARTUP, || {
                desktop.window_manager_running().unwrap_or(false)
            });
            return environment;
        }
        environment
    }

    pub fn config(&self) -> DesktopConfig {
        DesktopConfig {
            x11_display: Some(self.display.clone()),
            session_bus_address: Some(self.bus.clone()),
            ..DesktopConfig::default()
        }
    }

    pub fn desktop(&self) -> Desktop {
        Desktop::new(self.config()).expect("connecting to the test display")
    }
}

/// The environment, started once; and a lock so tests that put windows on the one screen run
/// one at a time.
pub fn environment() -> (&'static Environment, MutexGuard<'static, ()>) {
    static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    (ENVIRONMENT.get_or_init(Environment::start), guard)
}

/// Polls `ready` until it holds, panicking at the deadline.
pub fn wait_until(what: &str, deadline: Duration, mut ready: impl FnMut() -> bool) {
    let end = Instant::now() + deadline;
    while !ready() {
        assert!(Instant::now() < end, "{what} not ready after {deadline:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The system python3 (PyGObject comes from apt: python3-gi, gir1.2-gtk-3.0); a pyenv or venv
/// python3 earlier on PATH usually lacks it.
pub fn python_with_gi() -> &'static str {
    static PYTHON: OnceLock<&'static str> = OnceLock::new();
    PYTHON.get_or_init(|| {
        ["/usr/bin/python3", "python3"]
            .into_iter()
            .find(|python| {
                Command::new(python)
                    .args(["-c", "import gi"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            })
            .expect("no python3 with PyGObject: apt-get install python3-gi gir1.2-gtk-3.0")
    })
}

/// A running GTK fixture window; closed when dropped.
pub struct FixtureApp {
    pub title: String,
    pub window: WindowInfo,
    pub lines: Lines,
    _process: Guarded,
}

/// This crate's folder. Cargo sets `CARGO_MANIFEST_DIR` when it runs a test, and that wins over
/// the compile-time value: cargo reuses a test binary built in another checkout that shares the
/// target folder, and the path baked into it is that checkout's (which may be gone).
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

pub fn fixture_path(name: &str) -> PathBuf {
    manifest_dir().join("tests").join("fixtures").join(name)
}

impl FixtureApp {
    /// Starts `form.py` with a unique title and waits until it has drawn and its window is
    /// listed.
    pub fn form(environment: &Environment, name: &str, extra_args: &[&str]) -> FixtureApp {
        let title = format!("Osprey {name} {}", std::process::id());
        let script = fixture_path("form.py");
        let script = script.to_string_lossy();
        let mut args = vec![script.as_ref(), title.as_str()];
        args.extend_from_slice(extra_args);
        let mut process = Guarded::spawn(
            python_with_gi(),
            &args,
            &[
                ("DISPLAY", environment.display.as_str()),
                ("DBUS_SESSION_BUS_ADDRESS", environment.bus.as_str()),
                ("GDK_BACKEND", "x11"),
                ("GTK_THEME", "Adwaita"),
            ],
            true,
        );
        let lines = Lines::new(process.stdout());
        lines.wait_for("ready", STARTUP, |l| l == "ready");
        let desktop = environment.desktop();
        // With a window manager, also wait for the new window to be focused: the focus change
        // repaints it, and a test should not capture half-way through that.
        let needs_focus = desktop.window_manager_running().unwrap_or(false);
        let mut found = None;
        wait_until(&format!("window {title:?}"), STARTUP, || {
            found = desktop
                .capture()
                .windows()
                .ok()
                .and_then(|ws| ws.into_iter().find(|w| w.title == title))
                .filter(|w| w.focused || !needs_focus);
            found.is_some()
        });
        // GTK moves focus into the window (and repaints) a moment after the window manager
        // activates it: wait until two captures in a row agree.
        let window = found.expect("found above");
        let mut previous = None;
        wait_until("the window to settle", STARTUP, || {
            let now = desktop.capture().capture_window(&window).ok();
            let settled = now.is_some() && now == previous;
            previous = now;
            settled
        });
        FixtureApp {
            title,
            window,
            lines,
            _process: process,
        }
    }
}

/// Runs a future on a fresh single-threaded runtime (one per test: the accessibility connection
/// belongs to the runtime that made it).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

impl FixtureApp {
    pub fn pid(&self) -> u32 {
        self.window.pid.expect("GTK windows carry _NET_WM_PID")
    }

    /// Stops (SIGSTOP) or continues (SIGCONT) the fixture, to play a hung application.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.pid().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{signal} failed");
    }
}

/// Where tests leave images for people to look at: `<target>/screen-tests/`.
pub fn artifact(name: &str) -> PathBuf {
    let dir = manifest_dir().join("../../../target/screen-tests");
    std::fs::create_dir_all(&dir).expect("creating the artifacts directory");
    dir.join(name)
}
