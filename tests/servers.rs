//! Real mail and calendar servers on loopback for the suites that need one: Dovecot (IMAP, plain
//! with STARTTLS and implicit TLS, one passwd-file user) with a certificate from a test CA made
//! with openssl, aiosmtpd (SMTP: STARTTLS as a submission server, implicit TLS and plain, one
//! login) with the same certificate, and Radicale (CalDAV and CardDAV, htpasswd user `alice:secret`). The platform
//! crate's `os` tests and the core's account tests start the same servers from here, so there
//! is one copy of how each is configured.
//!
//! Each server runs from its own temporary folder on free ports and is killed when dropped. A
//! missing program is reported by [`missing_mail_programs`] / [`Radicale::start`] so a test can
//! say why it is skipped; on CI (`CI` set) scripts/setup installs them and a missing one fails.

use std::io::Read as _;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// How long a server may take to answer after it is started.
pub const STARTUP: Duration = Duration::from_secs(30);

/// A server process, killed (and reaped) when dropped.
pub struct ServerProcess(Child);

impl ServerProcess {
    fn spawn(program: &Path, args: &[&str]) -> ServerProcess {
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
        ServerProcess(child)
    }
}

impl ServerProcess {
    /// Like `spawn`, with the lines the program prints: its output as is, its errors prefixed
    /// with [`STDERR`]. The channel closes when the program has exited.
    fn spawn_reading(program: &Path, args: &[&str]) -> (ServerProcess, mpsc::Receiver<String>) {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (sender, receiver) = mpsc::channel();
        let errors = sender.clone();
        std::thread::spawn(move || forward_lines(stdout, "", sender));
        std::thread::spawn(move || forward_lines(stderr, STDERR, errors));
        (ServerProcess(child), receiver)
    }
}

/// How a line the program wrote to its standard error starts in `spawn_reading`'s channel.
const STDERR: &str = "stderr: ";

fn forward_lines(from: impl std::io::Read, prefix: &str, to: mpsc::Sender<String>) {
    use std::io::BufRead as _;
    for line in std::io::BufReader::new(from).lines() {
        let Ok(line) = line else { break };
        if to.send(format!("{prefix}{line}")).is_err() {
            break;
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // SIGTERM, as a service manager stops it: Dovecot's master then stops its children.
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        if nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).is_err() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// A program on PATH or in the sbin folders (Dovecot lives in /usr/sbin).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// What Dovecot needs that is not installed here (empty: it can start).
pub fn missing_mail_programs() -> Vec<&'static str> {
    [("dovecot", "dovecot"), ("openssl", "openssl")]
        .into_iter()
        .filter(|(program, _)| find_program(program).is_none())
        .map(|(_, name)| name)
        .collect()
}

/// Whether the programs named by `missing` being absent skips the test: prints why and returns
/// `true`, or fails on CI where scripts/setup installs them.
pub fn skip_for_missing(test: &str, missing: &[&str]) -> bool {
    if missing.is_empty() {
        return false;
    }
    assert!(
        std::env::var("CI").is_err(),
        "{} must be installed on CI (scripts/setup: dovecot-imapd, openssl, python3-aiosmtpd, \
         radicale)",
        missing.join(", ")
    );
    eprintln!(
        "skipped {test}: {} not installed (scripts/setup installs dovecot-imapd, openssl, \
         python3-aiosmtpd, radicale)",
        missing.join(", ")
    );
    true
}

fn run(program: &Path, args: &[&str]) {
    let output = Command::new(program).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A test CA and a server certificate for localhost and 127.0.0.1 signed by it.
pub struct Certificates {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Makes a CA and a server certificate in `dir` with openssl.
pub fn certificates(dir: &Path) -> Certificates {
    let openssl = find_program("openssl").expect("openssl (scripts/setup installs it)");
    let at = |name: &str| dir.join(name);
    let s = |p: &Path| p.to_str().unwrap().to_string();
    run(
        &openssl,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=Osprey test CA",
            "-keyout",
            &s(&at("ca.key")),
            "-out",
            &s(&at("ca.pem")),
        ],
    );
    run(
        &openssl,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            &s(&at("server.key")),
            "-out",
            &s(&at("server.csr")),
        ],
    );
    std::fs::write(
        at("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(
        &openssl,
        &[
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            &s(&at("server.csr")),
            "-CA",
            &s(&at("ca.pem")),
            "-CAkey",
            &s(&at("ca.key")),
            "-CAcreateserial",
            "-extfile",
            &s(&at("ext.cnf")),
            "-out",
            &s(&at("server.pem")),
        ],
    );
    Certificates {
        ca: at("ca.pem"),
        cert: at("server.pem"),
        key: at("server.key"),
    }
}

/// Dovecot on free loopback ports: `imap` (plain, offers STARTTLS) and `imaps` (TLS), with one
/// user whose maildir has the folders Archive, Sent and Entwürfe.
pub struct Dovecot {
    pub dir: tempfile::TempDir,
    pub imap: u16,
    pub imaps: u16,
    pub certificates: Certificates,
    _process: ServerProcess,
}

impl Dovecot {
    /// Starts Dovecot with the user `user` / `password`; `fill` puts messages in the maildir
    /// (its argument) before the server first reads it.
    pub fn start(user: &str, password: &str, fill: impl FnOnce(&Path)) -> Dovecot {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Dovecot's unprivileged login processes must reach the sockets under base_dir.
        std::fs::set_permissions(root, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let certificates = certificates(root);
        let home = root.join("home");
        let maildir = home.join("Maildir");
        for folder in ["", ".Archive", ".Sent", ".Entw&APw-rfe"] {
            for sub in ["cur", "new", "tmp"] {
                std::fs::create_dir_all(maildir.join(folder).join(sub)).unwrap();
            }
        }
        fill(&maildir);

        use nix::unistd::{Gid, Group, Uid, User};
        let root_user = Uid::effective().is_root();
        let (uid, gid, login_user, internal_user, internal_group) = if root_user {
            // Dovecot refuses to run mail or login processes as root: its own users do.
            let dovecot = User::from_name("dovecot")
                .unwrap()
                .expect("the dovecot user (made by dovecot-core)");
            (
                dovecot.uid,
                dovecot.gid,
                "dovenull".to_string(),
                "dovecot".to_string(),
                "dovecot".to_string(),
            )
        } else {
            let me = User::from_uid(Uid::effective()).unwrap().unwrap();
            let group = Group::from_gid(Gid::effective()).unwrap().unwrap();
            (me.uid, me.gid, me.name.clone(), me.name, group.name)
        };
        if root_user {
            for entry in walk(&home) {
                nix::unistd::chown(&entry, Some(uid), Some(gid)).unwrap();
            }
        }
        std::fs::write(
            root.join("passwd"),
            format!(
                "{user}:{{PLAIN}}{password}:{uid}:{gid}::{}::\n",
                home.display()
            ),
        )
        .unwrap();
        let (imap, imaps) = (free_port(), free_port());
        let r = root.display();
        let config = format!(
            "base_dir = {r}/run
state_dir = {r}/state
log_path = {r}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
default_login_user = {login_user}
default_internal_user = {internal_user}
default_internal_group = {internal_group}
first_valid_uid = 1
mail_location = maildir:~/Maildir
passdb {{
  driver = passwd-file
  args = {r}/passwd
}}
userdb {{
  driver = passwd-file
  args = {r}/passwd
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
",
            cert = certificates.cert.display(),
            key = certificates.key.display(),
        );
        std::fs::create_dir_all(root.join("state")).unwrap();
        std::fs::write(root.join("dovecot.conf"), config).unwrap();
        let program = find_program("dovecot").expect("dovecot (scripts/setup installs it)");
        let conf = root.join("dovecot.conf");
        let process = ServerProcess::spawn(&program, &["-F", "-c", conf.to_str().unwrap()]);
        let log = root.join("dovecot.log");
        let greeting = |port: u16| {
            TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| {
                s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                let mut buf = [0u8; 64];
                s.read(&mut buf)
                    .is_ok_and(|n| buf[..n].starts_with(b"* OK"))
            })
        };
        let end = Instant::now() + STARTUP;
        while !greeting(imap) {
            assert!(
                Instant::now() < end,
                "dovecot did not greet on {imap}; its log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Dovecot {
            dir,
            imap,
            imaps,
            certificates,
            _process: process,
        }
    }

    /// What Dovecot logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("dovecot.log")).unwrap_or_default()
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The system python3 with aiosmtpd (Debian's python3-aiosmtpd).
pub fn python_with_aiosmtpd() -> Option<&'static str> {
    static PYTHON: OnceLock<Option<&'static str>> = OnceLock::new();
    *PYTHON.get_or_init(|| {
        ["/usr/bin/python3", "python3"].into_iter().find(|python| {
            Command::new(python)
                .args(["-c", "import aiosmtpd"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    })
}

const SMTP_SERVER: &str = r#"
import json, ssl, sys, time
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

user, password, cert, key, plain_port, starttls_port, tls_port = sys.argv[1:8]

class Handler:
    async def handle_DATA(self, server, session, envelope):
        print(json.dumps({
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "data": envelope.content.decode("utf-8", "replace"),
            "authenticated": bool(session.authenticated),
            # STARTTLS sets session.ssl; an implicit TLS connection shows on its transport.
            "tls": session.ssl is not None
                   or server.transport.get_extra_info("ssl_object") is not None,
        }), flush=True)
        return "250 OK"

def authenticator(server, session, envelope, mechanism, auth_data):
    ok = (isinstance(auth_data, LoginPassword)
          and auth_data.login.decode() == user and auth_data.password.decode() == password)
    print(json.dumps({"login": auth_data.login.decode(), "ok": ok}), flush=True)
    return AuthResult(success=ok, handled=False)

context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
context.load_cert_chain(cert, key)
common = dict(hostname="127.0.0.1", authenticator=authenticator, auth_required=True)
# As a submission server: STARTTLS offered, and no login before it.
starttls = Controller(Handler(), port=int(starttls_port), tls_context=context,
                      auth_require_tls=True, **common)
# aiosmtpd only counts STARTTLS as TLS, so a connection that starts with TLS must not ask again.
wrapped = Controller(Handler(), port=int(tls_port), ssl_context=context,
                     auth_require_tls=False, **common)
# Clear text, for the loopback `plain` accounts (the client allows it to loopback only).
plain = Controller(Handler(), port=int(plain_port), auth_require_tls=False, **common)
for server in (starttls, wrapped, plain):
    server.start()
print("ready", flush=True)
while True:
    time.sleep(3600)
"#;

/// aiosmtpd on `starttls` (login only after STARTTLS), `tls` (implicit TLS) and `plain` (clear
/// text), taking one login; what it receives: each message and each login tried.
pub struct Aiosmtpd {
    pub plain: u16,
    pub starttls: u16,
    pub tls: u16,
    events: Mutex<mpsc::Receiver<String>>,
    _process: ServerProcess,
}

impl Aiosmtpd {
    /// Starts the server for `user` / `password` with `certificates`' certificate. Check
    /// [`python_with_aiosmtpd`] first.
    pub fn start(user: &str, password: &str, certificates: &Certificates) -> Aiosmtpd {
        let python = python_with_aiosmtpd().expect("python3 with aiosmtpd");
        let (plain, starttls, tls) = (free_port(), free_port(), free_port());
        let (process, events) = ServerProcess::spawn_reading(
            Path::new(python),
            &[
                "-c",
                SMTP_SERVER,
                user,
                password,
                certificates.cert.to_str().unwrap(),
                certificates.key.to_str().unwrap(),
                &plain.to_string(),
                &starttls.to_string(),
                &tls.to_string(),
            ],
        );
        let server = Aiosmtpd {
            plain,
            starttls,
            tls,
            events: Mutex::new(events),
            _process: process,
        };
        server.next("aiosmtpd ready", STARTUP, |line| line == "ready");
        server
    }

    /// The next message the server received.
    pub fn received(&self) -> serde_json::Value {
        self.event("a received message", "data")
    }

    /// The next login tried: `{"login", "ok"}`.
    pub fn login(&self) -> serde_json::Value {
        self.event("a login", "login")
    }

    fn event(&self, what: &str, key: &str) -> serde_json::Value {
        let line = self.next(what, Duration::from_secs(20), |line| {
            serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.get(key).is_some())
        });
        serde_json::from_str(&line).unwrap()
    }

    /// The next line `wanted` accepts; panics when none comes in time or the server exits,
    /// quoting what it said on its standard error meanwhile.
    fn next(&self, what: &str, deadline: Duration, wanted: impl Fn(&str) -> bool) -> String {
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let end = Instant::now() + deadline;
        let mut errors: Vec<String> = vec![];
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let why = match events.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(line) => {
                    if let Some(error) = line.strip_prefix(STDERR) {
                        errors.push(error.to_string());
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    format!("no {what} from aiosmtpd within {deadline:?}")
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    format!("aiosmtpd exited before {what}")
                }
            };
            let said = &errors[errors.len().saturating_sub(10)..];
            panic!("{why}; its last errors: [{}]", said.join(" | "));
        }
    }
}

/// The user Radicale knows.
pub const RADICALE_USER: &str = "alice";
/// Her password.
pub const RADICALE_PASSWORD: &str = "secret";

/// The python3 on PATH, when Radicale can be imported with it (scripts/setup installs it with
/// pip).
pub fn python_with_radicale() -> Option<&'static str> {
    static PYTHON: OnceLock<Option<&'static str>> = OnceLock::new();
    *PYTHON.get_or_init(|| {
        Command::new("python3")
            .args(["-c", "import radicale"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            .then_some("python3")
    })
}

/// A Radicale server (CalDAV and CardDAV) on a free loopback port with its own configuration
/// and storage in a temporary folder, and the htpasswd (plain) user `alice:secret`.
pub struct Radicale {
    /// `http://127.0.0.1:PORT/`
    pub url: String,
    pub port: u16,
    pub dir: tempfile::TempDir,
    _process: ServerProcess,
}

impl Radicale {
    /// Starts Radicale, or says why `test` is skipped (never on CI: it must be installed
    /// there).
    pub fn start(test: &str) -> Option<Radicale> {
        let Some(python) = python_with_radicale() else {
            assert!(
                std::env::var("CI").is_err(),
                "Radicale must be installed on CI (scripts/setup installs it with pip)"
            );
            eprintln!(
                "skipped {test}: Radicale is not installed for python3 (scripts/setup installs \
                 it: python3 -m pip install radicale)"
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let users = dir.path().join("users");
        std::fs::write(&users, format!("{RADICALE_USER}:{RADICALE_PASSWORD}\n")).unwrap();
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            format!(
                "[server]\nhosts = 127.0.0.1:{port}\n\
                 [auth]\ntype = htpasswd\nhtpasswd_filename = {}\nhtpasswd_encryption = plain\n\
                 [storage]\nfilesystem_folder = {}\n\
                 [rights]\ntype = owner_only\n\
                 [logging]\nlevel = warning\n",
                users.display(),
                dir.path().join("collections").display()
            ),
        )
        .unwrap();
        let process = ServerProcess::spawn(
            Path::new(python),
            &["-m", "radicale", "--config", config.to_str().unwrap()],
        );
        let end = Instant::now() + STARTUP;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < end,
                "Radicale not listening after {STARTUP:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Radicale {
            url: format!("http://127.0.0.1:{port}/"),
            port,
            dir,
            _process: process,
        })
    }
}

impl Radicale {
    /// Creates a calendar (`calendar`) or address book (`addressbook`) named `name` at `path`
    /// (`alice/work/`) as `alice`, as another CalDAV client would (a plain HTTP/1.1 MKCOL).
    pub fn make_collection(&self, path: &str, kind: &str, name: &str) {
        use base64::Engine as _;
        use std::io::Write as _;
        let (ns, tag) = match kind {
            "calendar" => ("urn:ietf:params:xml:ns:caldav", "calendar"),
            _ => ("urn:ietf:params:xml:ns:carddav", "addressbook"),
        };
        let body = format!(
            r#"<?xml version="1.0"?><d:mkcol xmlns:d="DAV:" xmlns:x="{ns}"><d:set><d:prop><d:resourcetype><d:collection/><x:{tag}/></d:resourcetype><d:displayname>{name}</d:displayname></d:prop></d:set></d:mkcol>"#
        );
        let auth = base64::engine::general_purpose::STANDARD
            .encode(format!("{RADICALE_USER}:{RADICALE_PASSWORD}"));
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "MKCOL /{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Basic {auth}\r\n\
             Content-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            path.trim_start_matches('/'),
            self.port,
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        assert!(
            answer.starts_with("HTTP/1.1 201") || answer.starts_with("HTTP/1.0 201"),
            "MKCOL {path}: {answer}"
        );
    }
}
