//! The processes an end-to-end test needs: a virtual X display, a D-Bus session bus, tauri-driver
//! and, through it, the app. Each is started in its own process group and the whole group is
//! killed on drop, so a failing test leaves nothing behind (WebKitWebDriver and the app are
//! children of tauri-driver and go with it).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tempfile::TempDir;

use crate::webdriver::{WebDriver, http_request};
use crate::{artifacts_dir, cargo_bin_dirs, desktop_binary, find_program, launch_report};

const STARTUP_DEADLINE: Duration = Duration::from_secs(30);

/// A child process leading its own process group; the group is terminated on drop.
#[derive(Debug)]
struct ProcessGroup {
    name: &'static str,
    child: Child,
}

impl ProcessGroup {
    fn spawn(name: &'static str, command: &mut Command) -> Result<ProcessGroup> {
        command.process_group(0);
        let child = command
            .spawn()
            .with_context(|| format!("starting {name} ({command:?})"))?;
        Ok(ProcessGroup { name, child })
    }

    /// Fails with `what`'s log if the process already exited.
    fn ensure_running(&mut self, log: Option<&Path>) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            let log_text = log
                .and_then(|path| std::fs::read_to_string(path).ok())
                .unwrap_or_default();
            bail!("{} exited early ({status}):\n{log_text}", self.name);
        }
        Ok(())
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let Ok(raw) = i32::try_from(self.child.id()) else {
            return;
        };
        let group = Pid::from_raw(raw);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                // The leader is gone; still sweep the group for stragglers.
                let _ = killpg(group, Signal::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Reads the first line a child prints on stdout, giving up at the deadline.
fn first_line(stdout: impl Read + Send + 'static, deadline: Duration) -> Result<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let result = BufReader::new(stdout).read_line(&mut line).map(|_| line);
        let _ = sender.send(result);
    });
    let line = receiver
        .recv_timeout(deadline)
        .map_err(|_| anyhow!("nothing printed within {deadline:?}"))??;
    let line = line.trim().to_string();
    if line.is_empty() {
        bail!("the process closed its output without printing anything");
    }
    Ok(line)
}

fn wait_until(
    what: &str,
    deadline: Duration,
    mut ready: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let end = Instant::now() + deadline;
    loop {
        if ready()? {
            return Ok(());
        }
        if Instant::now() >= end {
            bail!("{what} not ready after {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn log_file(path: &Path) -> Result<File> {
    File::create(path).with_context(|| format!("creating {}", path.display()))
}

/// An X display: `$DISPLAY` when set, otherwise a private Xvfb on a free display number.
#[derive(Debug)]
pub struct VirtualDisplay {
    display: String,
    process: Option<ProcessGroup>,
}

impl VirtualDisplay {
    pub fn start_or_reuse(artifacts: &Path) -> Result<VirtualDisplay> {
        if let Some(display) = std::env::var("DISPLAY").ok().filter(|d| !d.is_empty()) {
            return Ok(VirtualDisplay {
                display,
                process: None,
            });
        }
        let xvfb = find_program("Xvfb", &[]).ok_or_else(|| {
            anyhow!(
                "DISPLAY is unset and Xvfb is missing: run scripts/setup (apt-get install xvfb)"
            )
        })?;
        let log = artifacts.join("xvfb.log");
        // -displayfd makes Xvfb pick a free display itself and print its number once it is
        // listening, so parallel tests never race for one.
        let mut process = ProcessGroup::spawn(
            "Xvfb",
            Command::new(xvfb)
                .args([
                    "-displayfd",
                    "1",
                    "-screen",
                    "0",
                    "1920x1080x24",
                    "-nolisten",
                    "tcp",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(log_file(&log)?),
        )?;
        let stdout = process.child.stdout.take().context("Xvfb stdout")?;
        let number: u32 = match first_line(stdout, STARTUP_DEADLINE) {
            Ok(line) => line
                .parse()
                .with_context(|| format!("Xvfb printed {line:?}, not a display number"))?,
            Err(error) => {
                process.ensure_running(Some(&log))?;
                return Err(error.context("waiting for Xvfb to choose a display"));
            }
        };
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{number}"));
        wait_until(
            &format!("Xvfb socket {}", socket.display()),
            STARTUP_DEADLINE,
            || {
                process.ensure_running(Some(&log))?;
                Ok(socket.exists())
            },
        )?;
        Ok(VirtualDisplay {
            display: format!(":{number}"),
            process: Some(process),
        })
    }

    /// The value for `DISPLAY`.
    pub fn display(&self) -> &str {
        &self.display
    }

    pub fn is_private(&self) -> bool {
        self.process.is_some()
    }
}

/// A D-Bus session bus: `$DBUS_SESSION_BUS_ADDRESS` when set, otherwise a private dbus-daemon.
/// GTK and WebKit expect one (accessibility, portals) and misbehave slowly without it.
#[derive(Debug)]
pub struct SessionBus {
    address: String,
    _process: Option<ProcessGroup>,
}

impl SessionBus {
    pub fn start_or_reuse() -> Result<SessionBus> {
        if let Some(address) = std::env::var("DBUS_SESSION_BUS_ADDRESS")
            .ok()
            .filter(|a| !a.is_empty())
        {
            return Ok(SessionBus {
                address,
                _process: None,
            });
        }
        let daemon = find_program("dbus-daemon", &[]).ok_or_else(|| {
            anyhow!("dbus-daemon is missing: run scripts/setup (apt-get install dbus-x11)")
        })?;
        // --nofork keeps the daemon our child, so dropping the group really stops it.
        let mut process = ProcessGroup::spawn(
            "dbus-daemon",
            Command::new(daemon)
                .args(["--session", "--nofork", "--print-address=1"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )?;
        let stdout = process.child.stdout.take().context("dbus-daemon stdout")?;
        let address = first_line(stdout, STARTUP_DEADLINE)
            .context("waiting for dbus-daemon to print its address")?;
        Ok(SessionBus {
            address,
            _process: Some(process),
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }
}

fn free_port() -> Result<u16> {
    // The port is free when we look; the short window before the driver binds it is acceptable
    // for tests, and a clash fails loudly at startup rather than silently.
    let listener = TcpListener::bind(("127.0.0.1", 0)).context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// tauri-driver on free ports, with WebKitWebDriver behind it.
#[derive(Debug)]
pub struct TauriDriver {
    port: u16,
    _process: ProcessGroup,
}

impl TauriDriver {
    /// Starts the driver with the given environment for the apps it launches.
    pub fn start(env: &[(&str, &str)], removed_env: &[&str], log: &Path) -> Result<TauriDriver> {
        let driver = find_program("tauri-driver", &cargo_bin_dirs()).ok_or_else(|| {
            anyhow!(
                "tauri-driver is missing: run scripts/setup, or `cargo install tauri-driver --locked --version ^2`"
            )
        })?;
        let native = find_program("WebKitWebDriver", &[]).ok_or_else(|| {
            anyhow!(
                "WebKitWebDriver is missing: run scripts/setup, or `apt-get install webkit2gtk-driver`"
            )
        })?;
        let port = free_port()?;
        let native_port = free_port()?;
        let log_handle = log_file(log)?;
        let mut command = Command::new(driver);
        command
            .arg("--port")
            .arg(port.to_string())
            .arg("--native-port")
            .arg(native_port.to_string())
            .arg("--native-driver")
            .arg(native)
            .stdin(Stdio::null())
            .stdout(log_handle.try_clone()?)
            .stderr(log_handle);
        for name in removed_env {
            command.env_remove(name);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let mut process = ProcessGroup::spawn("tauri-driver", &mut command)?;
        wait_until("tauri-driver", STARTUP_DEADLINE, || {
            process.ensure_running(Some(log))?;
            // /status is answered by WebKitWebDriver, so this waits for both.
            Ok(http_request(port, "GET", "/status", None)
                .map(|response| response.status == 200)
                .unwrap_or(false))
        })?;
        Ok(TauriDriver {
            port,
            _process: process,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

/// How to launch the app for a test.
#[derive(Debug, Default)]
pub struct LaunchOptions {
    /// Passed as `--data-dir`; `None` gives the test a fresh temporary directory.
    pub data_dir: Option<PathBuf>,
    /// Extra environment for the app (keys for a loopback model server, ...).
    pub env: Vec<(String, String)>,
}

impl LaunchOptions {
    /// The app on `data_dir` talking to a loopback model server (the scripted model) with a test
    /// key, its secrets in a file there, never the real keyring of whoever runs the tests.
    pub fn with_test_model(data_dir: &Path) -> LaunchOptions {
        LaunchOptions {
            data_dir: Some(data_dir.to_path_buf()),
            env: vec![
                ("ANTHROPIC_API_KEY".into(), "test-key".into()),
                ("OSPREY_SECRETS".into(), "file".into()),
            ],
        }
    }
}

/// The desktop app running under its own display, bus and driver, with a WebDriver session.
/// Fields drop in order: the session (closing the app), the driver, the bus, the display, and
/// last the temporary data directory.
#[derive(Debug)]
pub struct DesktopApp {
    pub driver: WebDriver,
    _tauri_driver: TauriDriver,
    _bus: SessionBus,
    display: VirtualDisplay,
    data_dir: PathBuf,
    _temp: Option<TempDir>,
    /// The XDG data and cache folders of this launch (the webview's storage).
    _webview: TempDir,
    artifacts: PathBuf,
}

impl DesktopApp {
    /// Launches the app with a fresh temporary data directory.
    pub fn launch(test_name: &str) -> Result<DesktopApp> {
        DesktopApp::launch_with(test_name, LaunchOptions::default())
    }

    pub fn launch_with(test_name: &str, options: LaunchOptions) -> Result<DesktopApp> {
        DesktopApp::launch_program(test_name, &desktop_binary()?, options)
    }

    /// Launches `binary` instead of the workspace's debug build (the package test runs the one
    /// extracted from the `.deb`).
    pub fn launch_program(
        test_name: &str,
        binary: &Path,
        options: LaunchOptions,
    ) -> Result<DesktopApp> {
        let binary = binary.to_path_buf();
        let artifacts = artifacts_dir(test_name)?;
        let display = VirtualDisplay::start_or_reuse(&artifacts)?;
        let bus = SessionBus::start_or_reuse()?;
        let (data_dir, temp) = match options.data_dir {
            Some(dir) => (dir, None),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("osprey-e2e-")
                    .tempdir()
                    .context("creating a temporary data directory")?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        let data_dir_text = data_dir.to_string_lossy().into_owned();
        // WebKit keeps the page's storage (localStorage: the chat's drafts) under the XDG data
        // and cache folders, by app identifier: one per launch, so apps running side by side
        // (or a test after another) never share it.
        let webview = tempfile::Builder::new()
            .prefix("osprey-e2e-webview-")
            .tempdir()
            .context("creating a temporary webview folder")?;
        let xdg_data = webview.path().join("data").to_string_lossy().into_owned();
        let xdg_cache = webview.path().join("cache").to_string_lossy().into_owned();
        let mut removed_env = vec![];
        if display.is_private() {
            // Our Xvfb, not a Wayland session the caller may have.
            removed_env.push("WAYLAND_DISPLAY");
        }
        let mut env = vec![
            ("DISPLAY", display.display()),
            ("DBUS_SESSION_BUS_ADDRESS", bus.address()),
            ("GDK_BACKEND", "x11"),
            // Also through the environment, so even an argument mix-up cannot reach the
            // real data directory of the person running the tests.
            ("OSPREY_DATA_DIR", &data_dir_text),
            ("XDG_DATA_HOME", &xdg_data),
            ("XDG_CACHE_HOME", &xdg_cache),
            // On this GPU-less display Osprey would paint on the CPU (src-tauri/src/rendering.rs),
            // and WebKitGTK 2.50's automation never answers a simulated click or key press with
            // hardware acceleration off (the WebDriver request waits forever; a person's real
            // input works). WebDriver suites drive the GPU path; `desktop_painting` covers the
            // CPU one with real input. A launch's own `env` can set it back.
            ("OSPREY_WEBVIEW_GPU", "on"),
        ];
        env.extend(
            options
                .env
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        );
        let tauri_driver =
            TauriDriver::start(&env, &removed_env, &artifacts.join("tauri-driver.log"))?;
        let mut driver = WebDriver::new(tauri_driver.port());
        let launched = driver
            .new_session(&binary, &["--data-dir".to_string(), data_dir_text.clone()])
            .and_then(|()| driver.wait_for_page_load(STARTUP_DEADLINE));
        if let Err(error) = launched {
            // The driver, and so the app, still runs: say what it is doing.
            let report = launch_report::report(
                &data_dir_text,
                &artifacts.join("tauri-driver.log"),
                &artifacts,
            );
            return Err(error.context(format!(
                "launching {} did not reach a loaded page\n{report}",
                binary.display()
            )));
        }
        Ok(DesktopApp {
            driver,
            _tauri_driver: tauri_driver,
            _bus: bus,
            display,
            data_dir,
            _temp: temp,
            _webview: webview,
            artifacts,
        })
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn display(&self) -> &str {
        self.display.display()
    }

    /// The app's D-Bus session bus, where its accessibility bus is found (what an AT-SPI client
    /// such as Osprey's own `see` connects through).
    pub fn bus_address(&self) -> &str {
        self._bus.address()
    }

    pub fn artifacts(&self) -> &Path {
        &self.artifacts
    }

    /// Saves a screenshot as `<artifacts>/<name>.png` and returns its path.
    pub fn save_screenshot(&self, name: &str) -> Result<PathBuf> {
        let png = self.driver.screenshot()?;
        crate::png_dimensions(&png)?;
        let path = self.artifacts.join(format!("{name}.png"));
        std::fs::write(&path, png).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}
