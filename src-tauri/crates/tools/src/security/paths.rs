//! The protected-path table: credential stores, system directories (Linux, macOS, Windows) and
//! Osprey's own data directory, and the persistence paths (shell, editor and session startup
//! files, programs on the search path, service and scheduler spools). Used by the safeguard and
//! by the file tool (reads and writes).
//!
//! Matching is case-insensitive and treats `\` like `/`: macOS and Windows file systems are
//! case-insensitive by default, and refusing `/ETC` on Linux as well costs nothing. A path is
//! checked both as written (after `..` is folded) and as resolved (each link followed where it
//! stands, before a later `..` is applied, as the kernel does: `l/../.bashrc` with `l` a link
//! into the home is the home's `.bashrc`), and is refused if either form is protected: a
//! dotfile manager's `~/.bashrc -> ~/dotfiles/bashrc` link must not turn a write to `~/.bashrc`
//! into an allowed one, and a link into `~/.ssh` must not hide where it points. Some protected
//! paths are recognised by shape wherever they are (`/proc/<pid>/environ`, `.pth` files in any
//! `site-packages`, a repository's `.git/hooks`).
//!
//! Decisions a reviewer should know:
//! - `/usr/local` and `/opt/homebrew` are writable: Homebrew and `make install` prefixes are
//!   commonly user-owned there; their `bin` directories are not (a program placed there
//!   shadows a system one). The rest of `/opt` is protected (system-installed packages).
//! - `/Applications` is protected for writes (installed apps are shared by all users).
//! - Reads of `/etc` are fine except the shadow and sudoers files; reads of home dotfiles are
//!   fine except the credential table.
//! - `/tmp`, `/var`, `/home`, `/Users`, `/mnt`, `/media`, `/Volumes` and drive roots may be
//!   written into but not deleted as a whole ([`PathGuard::check_delete`]).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use osprey_types::ErrorCode;

use super::Refusal;

/// Symlink hops followed before giving up (the kernel's own limit is 40).
const MAX_LINK_HOPS: usize = 40;

/// Credential stores and other secrets under the home directory: neither read nor written.
const HOME_SECRETS: &[(&str, &str)] = &[
    (".ssh", "an SSH credential path"),
    (".gnupg", "a GnuPG keyring"),
    (".aws/credentials", "a cloud credential file"),
    (".aws/config", "a cloud credential file"),
    (".aws/sso", "a cloud credential cache"),
    (".config/gcloud", "a cloud credential directory"),
    (".azure", "a cloud credential directory"),
    (".kube/config", "a Kubernetes credential file"),
    (
        ".docker/config.json",
        "a container registry credential file",
    ),
    (".npmrc", "a package registry credential file"),
    (".pypirc", "a package registry credential file"),
    (".cargo/credentials", "a package registry credential file"),
    (
        ".cargo/credentials.toml",
        "a package registry credential file",
    ),
    (".gem/credentials", "a package registry credential file"),
    (".netrc", "a network credential file"),
    (".git-credentials", "a git credential store"),
    (".password-store", "a password store"),
    (".vault-token", "a secrets-manager token"),
    (
        ".terraform.d/credentials.tfrc.json",
        "a cloud credential file",
    ),
    (".config/gh/hosts.yml", "a GitHub credential file"),
    (".config/hub", "a GitHub credential file"),
    (".config/op", "a password manager's data"),
    (".mozilla", "a browser profile"),
    (".thunderbird", "a mail client profile"),
    (".config/google-chrome", "a browser profile"),
    (".config/google-chrome-beta", "a browser profile"),
    (".config/chromium", "a browser profile"),
    (".config/BraveSoftware", "a browser profile"),
    (".config/microsoft-edge", "a browser profile"),
    (".config/vivaldi", "a browser profile"),
    (".config/opera", "a browser profile"),
    (".var/app/org.mozilla.firefox", "a browser profile"),
    (".var/app/com.google.Chrome", "a browser profile"),
    ("snap/firefox", "a browser profile"),
    ("snap/chromium", "a browser profile"),
    (".local/share/keyrings", "a keyring"),
    (".local/share/kwalletd", "a keyring"),
    ("Library/Keychains", "a keyring"),
    ("Library/Cookies", "a browser cookie store"),
    ("Library/Safari", "a browser profile"),
    (
        "Library/Application Support/Google/Chrome",
        "a browser profile",
    ),
    ("Library/Application Support/Firefox", "a browser profile"),
    (
        "Library/Application Support/BraveSoftware",
        "a browser profile",
    ),
    (
        "Library/Application Support/Microsoft Edge",
        "a browser profile",
    ),
    ("Library/Application Support/Chromium", "a browser profile"),
    (
        "Library/Application Support/com.apple.TCC",
        "the macOS privacy database",
    ),
    ("AppData/Local/Google/Chrome/User Data", "a browser profile"),
    (
        "AppData/Local/Microsoft/Edge/User Data",
        "a browser profile",
    ),
    ("AppData/Local/BraveSoftware", "a browser profile"),
    ("AppData/Local/Chromium", "a browser profile"),
    ("AppData/Roaming/Mozilla/Firefox", "a browser profile"),
    (
        "AppData/Roaming/Microsoft/Credentials",
        "a Windows credential store",
    ),
    (
        "AppData/Local/Microsoft/Credentials",
        "a Windows credential store",
    ),
    (
        "AppData/Roaming/Microsoft/Protect",
        "a Windows credential store",
    ),
];

/// Files that run code at login or on a schedule, under the home directory: writing them is a
/// way to persist or escalate, so they are refused for writes (reading them is fine).
const HOME_STARTUP: &[(&str, &str)] = &[
    (".bashrc", "a shell startup file"),
    (".bash_profile", "a shell startup file"),
    (".bash_login", "a shell startup file"),
    (".bash_logout", "a shell startup file"),
    (".profile", "a shell startup file"),
    (".zshrc", "a shell startup file"),
    (".zprofile", "a shell startup file"),
    (".zshenv", "a shell startup file"),
    (".zlogin", "a shell startup file"),
    (".zlogout", "a shell startup file"),
    (".cshrc", "a shell startup file"),
    (".tcshrc", "a shell startup file"),
    (".kshrc", "a shell startup file"),
    (".mkshrc", "a shell startup file"),
    (".config/fish/config.fish", "a shell startup file"),
    (".config/fish/conf.d", "a shell startup directory"),
    (".xprofile", "a session startup file"),
    (".xinitrc", "a session startup file"),
    (".xsession", "a session startup file"),
    (".xsessionrc", "a session startup file"),
    (".pam_environment", "a session startup file"),
    (".config/environment.d", "a session startup directory"),
    (".config/autostart", "an autostart directory"),
    (".config/systemd/user", "a user service directory"),
    (".local/share/systemd", "a user service directory"),
    ("Library/LaunchAgents", "an autostart directory"),
    (
        "AppData/Roaming/Microsoft/Windows/Start Menu/Programs/Startup",
        "an autostart directory",
    ),
    (".bash_aliases", "a shell startup file"),
    (".bash_functions", "a shell startup file"),
    (".bashrc.d", "a shell startup directory"),
    (".profile.d", "a shell startup directory"),
    (".bash_completion", "a shell startup file"),
    (".bash_completion.d", "a shell startup directory"),
    (".local/share/bash-completion", "a shell startup directory"),
    (".config/bash", "a shell startup directory"),
    (".config/zsh", "a shell startup directory"),
    (".oh-my-zsh/custom", "a shell startup directory"),
    (".config/fish", "a shell startup directory"),
    (".config/nushell", "a shell startup directory"),
    (".config/ion", "a shell startup directory"),
    (".cargo/env", "a shell startup file"),
    (
        ".cargo/config",
        "a build tool's configuration, which names programs it runs",
    ),
    (
        ".cargo/config.toml",
        "a build tool's configuration, which names programs it runs",
    ),
    (
        ".gitconfig",
        "the git configuration, which names programs git runs",
    ),
    (
        ".config/git",
        "the git configuration, which names programs git runs",
    ),
    (
        ".hgrc",
        "the Mercurial configuration, which names programs it runs",
    ),
    (".local/bin", "a directory of programs on the search path"),
    ("bin", "a directory of programs on the search path"),
    (".cargo/bin", "a directory of programs on the search path"),
    ("go/bin", "a directory of programs on the search path"),
    (".yarn/bin", "a directory of programs on the search path"),
    (
        ".rustup/toolchains",
        "the installed Rust toolchains, whose programs run outside any sandbox",
    ),
    (
        ".rustup/settings.toml",
        "the Rust toolchain settings, which choose the programs that run",
    ),
    (
        ".local/share/applications",
        "a directory of desktop entries",
    ),
    (".config/autostart-scripts", "an autostart directory"),
    (".config/plasma-workspace", "a session startup directory"),
    (".kde/Autostart", "an autostart directory"),
    (".kde4/Autostart", "an autostart directory"),
    (".config/lxsession", "a session startup directory"),
    (
        ".config/openbox",
        "a window manager's startup configuration",
    ),
    (".config/i3", "a window manager's startup configuration"),
    (".i3", "a window manager's startup configuration"),
    (".config/sway", "a window manager's startup configuration"),
    (".config/hypr", "a window manager's startup configuration"),
    (".config/labwc", "a window manager's startup configuration"),
    (".config/river", "a window manager's startup configuration"),
    (".config/niri", "a window manager's startup configuration"),
    (
        ".config/awesome",
        "a window manager's startup configuration",
    ),
    (".config/bspwm", "a window manager's startup configuration"),
    (".config/sxhkd", "a window manager's startup configuration"),
    (
        ".config/herbstluftwm",
        "a window manager's startup configuration",
    ),
    (".config/qtile", "a window manager's startup configuration"),
    (".xmonad", "a window manager's startup configuration"),
    (".config/xmonad", "a window manager's startup configuration"),
    (".gnomerc", "a session startup file"),
    (".xbindkeysrc", "a session startup file"),
    (
        ".config/mimeapps.list",
        "the list of programs that open files",
    ),
    (".local/share/mime", "the list of programs that open files"),
    (".mailcap", "the list of programs that open files"),
    (".vimrc", "an editor startup file"),
    (".gvimrc", "an editor startup file"),
    (".exrc", "an editor startup file"),
    (".vim", "an editor startup directory"),
    (".config/nvim", "an editor startup directory"),
    (".local/share/nvim/site", "an editor startup directory"),
    (".emacs", "an editor startup file"),
    (".emacs.el", "an editor startup file"),
    (".emacs.d", "an editor startup directory"),
    (".config/emacs", "an editor startup directory"),
    (".tmux.conf", "a terminal multiplexer's startup file"),
    (".config/tmux", "a terminal multiplexer's startup file"),
    (".screenrc", "a terminal multiplexer's startup file"),
    (".gdbinit", "a debugger's startup file"),
    (".config/gdb", "a debugger's startup file"),
    (
        ".lesskey",
        "the pager's key file, which can set its preprocessor",
    ),
    (
        ".config/lesskey",
        "the pager's key file, which can set its preprocessor",
    ),
    (".pip", "the Python package installer's configuration"),
    (
        ".config/pip",
        "the Python package installer's configuration",
    ),
    (".config/environment.d", "a session startup directory"),
    ("Documents/PowerShell", "a shell startup directory"),
    ("Documents/WindowsPowerShell", "a shell startup directory"),
];

/// System files that hold secrets: neither read nor written.
const SYSTEM_SECRETS: &[(&str, &str)] = &[
    ("/etc/shadow", "the system password database"),
    ("/etc/shadow-", "the system password database's backup"),
    ("/etc/gshadow", "the system password database"),
    ("/etc/gshadow-", "the system password database's backup"),
    ("/etc/security/opasswd", "old password hashes"),
    ("/etc/master.passwd", "the system password database"),
    ("/private/etc/master.passwd", "the system password database"),
    ("/private/var/db/dslocal", "the system password database"),
];

/// `/etc/sudoers`, `/etc/sudoers.d/...`, `/etc/sudoers.bak`: matched as a name stem.
const SYSTEM_SECRET_STEMS: &[(&str, &str)] = &[
    ("/etc/sudoers", "the sudo configuration"),
    ("/private/etc/sudoers", "the sudo configuration"),
];

/// System directories: refused for writes. `?:` stands for any drive letter.
const SYSTEM_DIRS: &[(&str, &str)] = &[
    // Linux (and the shared Unix layout).
    ("/etc", "a system directory"),
    ("/usr", "a system directory"),
    ("/bin", "a system directory"),
    ("/sbin", "a system directory"),
    ("/lib", "a system directory"),
    ("/lib32", "a system directory"),
    ("/lib64", "a system directory"),
    ("/libx32", "a system directory"),
    ("/boot", "a system directory"),
    ("/efi", "a system directory"),
    ("/dev", "a device path"),
    ("/proc", "a kernel interface"),
    ("/sys", "a kernel interface"),
    ("/root", "the root user's home"),
    ("/var/lib", "a system directory"),
    ("/var/spool/cron", "a scheduled-task spool"),
    ("/var/at", "a scheduled-task spool"),
    ("/opt", "a system directory"),
    ("/snap", "a system directory"),
    // macOS.
    ("/System", "a system directory"),
    ("/Library", "a system directory"),
    ("/Applications", "the shared applications directory"),
    ("/private/etc", "a system directory"),
    ("/private/var/db", "a system directory"),
    ("/private/var/at", "a scheduled-task spool"),
    ("/private/var/root", "the root user's home"),
    // Windows.
    ("?:/Windows", "a system directory"),
    ("?:/Program Files", "a system directory"),
    ("?:/Program Files (x86)", "a system directory"),
    ("?:/ProgramData", "a system directory"),
    ("//./", "a raw device"),
    ("//?/GLOBALROOT", "a raw device"),
    ("HKLM", "a Windows registry hive"),
    ("HKEY_LOCAL_MACHINE", "a Windows registry hive"),
    ("HKCR", "a Windows registry hive"),
    ("HKEY_CLASSES_ROOT", "a Windows registry hive"),
    ("HKU", "a Windows registry hive"),
    ("HKEY_USERS", "a Windows registry hive"),
    ("HKEY_CURRENT_CONFIG", "a Windows registry hive"),
    (
        "HKCU/Software/Microsoft/Windows/CurrentVersion/Run",
        "an autostart registry key",
    ),
    (
        "HKEY_CURRENT_USER/Software/Microsoft/Windows/CurrentVersion/Run",
        "an autostart registry key",
    ),
    (
        "HKCU:/Software/Microsoft/Windows/CurrentVersion/Run",
        "an autostart registry key",
    ),
    ("HKLM:", "a Windows registry hive"),
];

/// System places that run code at boot, at login or on a schedule, or hold the programs on the
/// search path, which stay protected for writes inside the writable exceptions below
/// (`/usr/local/bin` inside `/usr/local`).
const SYSTEM_STARTUP: &[(&str, &str)] = &[
    (
        "/usr/local/bin",
        "a directory of programs on the search path",
    ),
    (
        "/usr/local/sbin",
        "a directory of programs on the search path",
    ),
    ("/usr/local/etc", "a system configuration directory"),
    ("/usr/local/lib/systemd", "a service directory"),
    ("/run/systemd", "a service directory"),
    ("/var/spool/at", "a scheduled-task spool"),
    ("/var/spool/anacron", "a scheduled-task spool"),
    ("/var/spool/atjobs", "a scheduled-task spool"),
    (
        "/opt/homebrew/bin",
        "a directory of programs on the search path",
    ),
];

/// Inside the system directories above, these stay writable (see the module notes).
const WRITABLE_EXCEPTIONS: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/fd",
    "/dev/shm",
    "/usr/local",
    "/opt/homebrew",
];

/// Directories that may be written into but must not be deleted (or replaced) as a whole.
const DELETE_ONLY: &[(&str, &str)] = &[
    ("/home", "the directory holding every user's home"),
    ("/Users", "the directory holding every user's home"),
    ("?:/Users", "the directory holding every user's home"),
    ("/tmp", "the shared temporary directory"),
    ("/var", "a system directory"),
    ("/var/tmp", "the shared temporary directory"),
    ("/private", "a system directory"),
    ("/private/tmp", "the shared temporary directory"),
    ("/mnt", "the mount point directory"),
    ("/media", "the mount point directory"),
    ("/Volumes", "the mount point directory"),
    ("/run", "a system directory"),
    ("/srv", "a system directory"),
];

/// Registry hive files, matched by file name wherever they are.
const HIVE_FILES: &[&str] = &["ntuser.dat", "usrclass.dat"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    /// The path and everything under it.
    Tree,
    /// Only the path itself.
    Exact,
    /// Any path whose text starts with the key (`/etc/sudoers` covers `/etc/sudoers.d/x`).
    Stem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Applies {
    /// Refused for reads, writes and deletes.
    Read,
    /// Refused for writes and deletes.
    Write,
    /// Refused for deletes only.
    Delete,
}

#[derive(Clone, Debug)]
struct Rule {
    key: String,
    what: &'static str,
    scope: Scope,
    applies: Applies,
    /// System rules may be lifted by [`WRITABLE_EXCEPTIONS`]; credential rules never are.
    system: bool,
}

/// Knows which paths are off limits.
#[derive(Clone, Debug)]
pub struct PathGuard {
    home: Option<PathBuf>,
    data_dir: PathBuf,
    rules: Vec<Rule>,
    exceptions: Vec<String>,
    /// The person's denied paths (`tools.denied_paths`), refused like the rules; shared with
    /// the registry's governance, so a change applies to every clone at once.
    denied: crate::governance::DeniedPaths,
}

/// Everything no shell command may read: the credential stores under `home`, the password
/// databases and the SSH host private keys (the shell sandbox hides them from the kernel's
/// view; missing ones are listed anyway, so one created later stays hidden).
pub fn secret_paths(home: Option<&Path>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = SYSTEM_SECRETS
        .iter()
        .chain(SYSTEM_SECRET_STEMS)
        .map(|(path, _)| PathBuf::from(path))
        .collect();
    if let Some(home) = home {
        paths.extend(HOME_SECRETS.iter().map(|(path, _)| home.join(path)));
    }
    if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
        paths.extend(entries.flatten().map(|e| e.path()).filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
        }));
    }
    paths
}

/// The home's startup files and program folders that lie inside one of `folders` (paths
/// relative to the home, such as the tool caches `.cargo` and `go`), as full paths under
/// `home`: the shell sandbox keeps the existing ones read-only inside its writable caches.
pub fn startup_paths_within(home: &Path, folders: &[String]) -> Vec<PathBuf> {
    HOME_STARTUP
        .iter()
        .map(|(path, _)| Path::new(path))
        .filter(|path| folders.iter().any(|folder| path.starts_with(folder)))
        .map(|path| home.join(path))
        .collect()
}

/// What kind of access is being checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Read,
    Write,
    Delete,
}

impl Access {
    fn verb(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Delete => "delete",
        }
    }

    fn hit_by(self, applies: Applies) -> bool {
        match self {
            Access::Read => applies == Applies::Read,
            Access::Write => applies <= Applies::Write,
            Access::Delete => true,
        }
    }
}

impl PathGuard {
    /// `home` is the user's home directory; `data_dir` is Osprey's data directory.
    pub fn new(home: Option<PathBuf>, data_dir: PathBuf) -> Self {
        let mut rules = Vec::new();
        let mut push = |key: String, what, scope, applies, system| {
            if !rules
                .iter()
                .any(|r: &Rule| r.key == key && r.scope == scope && r.applies == applies)
            {
                rules.push(Rule {
                    key,
                    what,
                    scope,
                    applies,
                    system,
                });
            }
        };
        // The data dir and home are matched as given and as resolved, so a symlinked home
        // (macOS `/var` -> `/private/var`, a home on another disk) is covered either way.
        for data in variants(&data_dir) {
            push(
                key_of(&data),
                "Osprey's own data directory",
                Scope::Tree,
                Applies::Read,
                false,
            );
        }
        if let Some(home) = &home {
            for home in variants(home) {
                let base = key_of(&home);
                push(
                    base.clone(),
                    "your home directory itself",
                    Scope::Exact,
                    Applies::Write,
                    false,
                );
                for (rel, what) in HOME_SECRETS {
                    push(
                        join_key(&base, rel),
                        what,
                        Scope::Tree,
                        Applies::Read,
                        false,
                    );
                }
                for (rel, what) in HOME_STARTUP {
                    push(
                        join_key(&base, rel),
                        what,
                        Scope::Tree,
                        Applies::Write,
                        false,
                    );
                }
            }
        }
        for (path, what) in SYSTEM_SECRETS {
            push(key_str(path), what, Scope::Tree, Applies::Read, false);
        }
        for (path, what) in SYSTEM_SECRET_STEMS {
            push(key_str(path), what, Scope::Stem, Applies::Read, false);
        }
        push(
            "/".into(),
            "the filesystem root",
            Scope::Exact,
            Applies::Write,
            true,
        );
        push(
            "?:".into(),
            "a drive root",
            Scope::Exact,
            Applies::Write,
            true,
        );
        for (path, what) in SYSTEM_DIRS {
            push(key_str(path), what, Scope::Tree, Applies::Write, true);
        }
        for (path, what) in SYSTEM_STARTUP {
            push(key_str(path), what, Scope::Tree, Applies::Write, false);
        }
        for (path, what) in DELETE_ONLY {
            push(key_str(path), what, Scope::Exact, Applies::Delete, true);
        }
        PathGuard {
            home,
            data_dir,
            rules,
            exceptions: WRITABLE_EXCEPTIONS.iter().map(|p| key_str(p)).collect(),
            denied: Default::default(),
        }
    }

    /// The guard refusing the person's denied paths too (the handle from
    /// [`crate::Governance::denied_paths`]): reads, writes and deletes, and every directory the
    /// file tool's glob and grep would walk into.
    pub fn with_denied(mut self, denied: crate::governance::DeniedPaths) -> Self {
        self.denied = denied;
        self
    }

    /// A guard for the current user's home and the given data directory.
    pub fn for_current_user(data_dir: PathBuf) -> Self {
        let home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        Self::new(home, data_dir)
    }

    /// The person's denied paths this guard refuses (empty unless [`PathGuard::with_denied`]).
    pub fn denied(&self) -> &crate::governance::DeniedPaths {
        &self.denied
    }

    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Refuses reads of credential stores and Osprey's data. Returns the resolved path to use.
    pub fn check_read(&self, path: &Path) -> Result<PathBuf, Refusal> {
        self.check(path, Access::Read)
    }

    /// Refuses writes to credential stores, startup files, system paths and Osprey's data.
    /// Returns the resolved path to use.
    pub fn check_write(&self, path: &Path) -> Result<PathBuf, Refusal> {
        self.check(path, Access::Write)
    }

    /// Refuses deleting (or moving away) a path that is protected, that contains a protected
    /// path (`/home`, `~/.config`, an ancestor of Osprey's data), or that is one of the shared
    /// directories which may be written into but not removed (`/tmp`, `/mnt`, ...).
    pub fn check_delete(&self, path: &Path) -> Result<PathBuf, Refusal> {
        self.check(path, Access::Delete)
    }

    /// The absolute path with `.`/`..` folded and every symlink followed, also through a
    /// dangling link and past the longest existing ancestor. Relative paths are taken from
    /// the process's working directory.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        resolve(&absolute(path))
    }

    fn check(&self, path: &Path, access: Access) -> Result<PathBuf, Refusal> {
        let text = path.to_string_lossy();
        if looks_foreign(&text) {
            // A Windows path on a Unix host (or a registry key): nothing to resolve here.
            let key = key_str(&text);
            return match self.matching(&key, access) {
                Some(rule) => Err(self.refusal(path, None, access, rule)),
                None => Ok(path.to_path_buf()),
            };
        }
        let lexical = fold(&absolute(path));
        let lexical_key = key_of(&lexical);
        let descriptor =
            lexical_key.starts_with("/dev/fd/") || lexical_key.starts_with("/proc/self/fd/");
        if access != Access::Delete
            && (STANDARD_DEVICES.contains(&lexical_key.as_str()) || descriptor)
        {
            // `/dev/stdout` is a link into `/proc`: the standard devices are judged as written.
            // A descriptor belongs to the command's shell, not to this process, so resolving it
            // here would judge the wrong file: see `indirect`. Anything else under `/dev`
            // (`/dev/shm/x`) is judged by where its links lead, like any other path.
            return Ok(lexical);
        }
        if let Some(rule) = self.matching(&lexical_key, access) {
            return Err(self.refusal(path, None, access, rule));
        }
        self.denied.check(&lexical, path)?;
        // Links are followed where they stand, before any `..` is applied: `l/../.bashrc`
        // with `l` a link into the home reaches the home's `.bashrc`, which the tidied
        // `./.bashrc` would hide.
        let resolved = resolve(&absolute(path));
        if resolved != lexical
            && let Some(rule) = self.matching(&key_of(&resolved), access)
        {
            return Err(self.refusal(path, Some(&resolved), access, rule));
        }
        if resolved != lexical {
            self.denied.check(&resolved, path)?;
        }
        Ok(resolved)
    }

    /// The names directly inside `dir` that a protected rule reaches (`.ssh` for the home),
    /// so a file name pattern there can be matched against them.
    pub fn protected_names(&self, dir: &Path) -> Vec<String> {
        let text = dir.to_string_lossy();
        let keys = if looks_foreign(&text) {
            vec![key_str(&text)]
        } else {
            let lexical = fold(&absolute(dir));
            let resolved = resolve(&absolute(dir));
            vec![key_of(&lexical), key_of(&resolved)]
        };
        let mut names: Vec<String> = Vec::new();
        for key in keys {
            let prefix = if key.ends_with('/') {
                key.clone()
            } else {
                format!("{key}/")
            };
            for rule in &self.rules {
                if let Some(rest) = rule.key.strip_prefix(&prefix) {
                    let name = rest.split('/').next().unwrap_or(rest);
                    if !name.is_empty() && !names.iter().any(|n| n == name) {
                        names.push(name.to_string());
                    }
                }
            }
        }
        names
    }

    /// Why a path cannot be judged by its text: it goes through another process's view of
    /// the file system (`/proc/<pid>/root/...`, `/proc/<pid>/cwd/...`) or an open file
    /// descriptor (`/dev/fd/7`, `/proc/self/fd/3`) whose file is only known when it runs.
    pub fn indirect(&self, path: &Path) -> Option<String> {
        let key = key_of(&fold(&absolute(path)));
        // 0-2 are the standard streams; from 10 up bash numbers its own descriptors (process
        // substitutions, `{var}<` redirections), whose files are judged where they are opened.
        if let Some(n) = key
            .strip_prefix("/dev/fd/")
            .and_then(|n| n.parse::<u32>().ok())
            && (n <= 2 || n >= 10)
        {
            return None;
        }
        let parts: Vec<&str> = key.split('/').collect();
        let through_proc = parts.len() > 3
            && parts[1] == "proc"
            && matches!(parts[3], "root" | "cwd" | "fd" | "map_files" | "exe");
        let through_fd = key.starts_with("/dev/fd/")
            || parts.len() > 3 && parts[1] == "proc" && parts[3] == "fd";
        (through_proc || through_fd).then(|| {
            format!(
                "`{}` goes through a process's open files or its view of the file system, \
                 which are only known when the command runs",
                path.display()
            )
        })
    }

    fn excepted(&self, key: &str) -> bool {
        self.exceptions.iter().any(|e| within(key, e))
    }

    fn matching(&self, key: &str, access: Access) -> Option<&Rule> {
        if let Some(rule) = pattern_rule(key)
            && access.hit_by(rule.applies)
        {
            return Some(rule);
        }
        let name = key.rsplit('/').next().unwrap_or(key);
        if HIVE_FILES.iter().any(|h| name.starts_with(h)) {
            static HIVE: Rule = Rule {
                key: String::new(),
                what: "a Windows registry hive",
                scope: Scope::Tree,
                applies: Applies::Read,
                system: true,
            };
            return Some(&HIVE);
        }
        let excepted = access != Access::Read && self.excepted(key);
        let applies = |rule: &&Rule| access.hit_by(rule.applies) && !(rule.system && excepted);
        let direct = self
            .rules
            .iter()
            .filter(applies)
            .filter(|rule| match rule.scope {
                Scope::Tree => within(key, &rule.key),
                Scope::Exact => key == rule.key,
                Scope::Stem => key.starts_with(&rule.key),
            })
            // The most specific rule names the real reason.
            .max_by_key(|r| (r.applies == Applies::Read, r.key.len()));
        if direct.is_some() || access != Access::Delete || excepted {
            return direct;
        }
        // Deleting a directory deletes what is under it; name the nearest protected thing.
        self.rules
            .iter()
            .filter(applies)
            .filter(|rule| within(&rule.key, key))
            .min_by_key(|r| r.key.len())
    }

    fn refusal(
        &self,
        path: &Path,
        resolved: Option<&Path>,
        access: Access,
        rule: &Rule,
    ) -> Refusal {
        let shown = match resolved {
            Some(to) => format!("{} (it resolves to {})", path.display(), to.display()),
            None => path.display().to_string(),
        };
        let why = if access == Access::Delete && !rule.key.is_empty() && !within_rule(path, rule) {
            format!("it contains {} ({})", rule.what, rule.key)
        } else {
            format!("it is {}", rule.what)
        };
        Refusal::new(
            ErrorCode::SensitivePath,
            format!("refused to {} {shown}: {why}", access.verb()),
        )
    }
}

/// The standard devices a command may always use, judged as written.
const STANDARD_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd/0",
    "/dev/fd/1",
    "/dev/fd/2",
    "/dev/random",
    "/dev/urandom",
];

/// Protected paths recognised by their shape wherever they are: another process's environment
/// or memory (`/proc/<pid>/environ`: Osprey's own holds API keys), Python's startup hooks in
/// any `site-packages`, the transient units of a user's systemd, and a repository's hooks and
/// configuration (later git commands run what they name).
fn pattern_rule(key: &str) -> Option<&'static Rule> {
    static ENVIRON: Rule = Rule {
        key: String::new(),
        what: "a process's environment, which can hold keys",
        scope: Scope::Exact,
        applies: Applies::Read,
        system: false,
    };
    static MEMORY: Rule = Rule {
        key: String::new(),
        what: "a process's memory",
        scope: Scope::Exact,
        applies: Applies::Read,
        system: false,
    };
    static PYTHON: Rule = Rule {
        key: String::new(),
        what: "a Python startup hook, run by every Python program",
        scope: Scope::Exact,
        applies: Applies::Write,
        system: false,
    };
    static UNITS: Rule = Rule {
        key: String::new(),
        what: "a user service directory",
        scope: Scope::Tree,
        applies: Applies::Write,
        system: false,
    };
    static GIT: Rule = Rule {
        key: String::new(),
        what: "a git repository's hooks or configuration, which name programs git runs",
        scope: Scope::Tree,
        applies: Applies::Write,
        system: false,
    };
    let parts: Vec<&str> = key.split('/').collect();
    let name = parts.last().copied().unwrap_or("");
    if parts.get(1) == Some(&"proc") {
        let per_process = match parts.len() {
            4 => Some(parts[3]),
            6 if parts[3] == "task" => Some(parts[5]),
            _ => None,
        };
        match per_process {
            Some("environ") => return Some(&ENVIRON),
            Some("mem") => return Some(&MEMORY),
            _ => {}
        }
    }
    let in_site = parts
        .iter()
        .any(|p| *p == "site-packages" || *p == "dist-packages");
    if in_site
        && (name.ends_with(".pth") || name == "usercustomize.py" || name == "sitecustomize.py")
    {
        return Some(&PYTHON);
    }
    if name == "usercustomize.py" || name == "sitecustomize.py" {
        return Some(&PYTHON);
    }
    if parts.len() > 4 && parts[1] == "run" && parts[2] == "user" && parts[4] == "systemd" {
        return Some(&UNITS);
    }
    if let Some(at) = parts.iter().position(|p| *p == ".git")
        && matches!(parts.get(at + 1), Some(&"hooks") | Some(&"config"))
    {
        return Some(&GIT);
    }
    None
}

/// Whether the refused path is the rule's path or under it (as opposed to an ancestor of it).
fn within_rule(path: &Path, rule: &Rule) -> bool {
    let text = path.to_string_lossy();
    let key = if looks_foreign(&text) {
        key_str(&text)
    } else {
        key_of(&fold(&absolute(path)))
    };
    match rule.scope {
        Scope::Stem => key.starts_with(&rule.key),
        _ => within(&key, &rule.key),
    }
}

/// `key` is `base` or under it.
fn within(key: &str, base: &str) -> bool {
    if base == "/" {
        return key.starts_with('/') && !key.starts_with("//");
    }
    match key.strip_prefix(base) {
        Some(rest) => rest.is_empty() || rest.starts_with('/') || base.ends_with('/'),
        None => false,
    }
}

/// The given path and, if different, its resolved form.
fn variants(path: &Path) -> Vec<PathBuf> {
    let text = path.to_string_lossy();
    if looks_foreign(&text) {
        return vec![path.to_path_buf()];
    }
    let lexical = fold(&absolute(path));
    let resolved = resolve(&lexical);
    if resolved == lexical {
        vec![lexical]
    } else {
        vec![lexical, resolved]
    }
}

/// A Windows-style path (`C:\...`, `\\?\...`, a registry key) on a host that would not
/// understand it as absolute.
fn looks_foreign(text: &str) -> bool {
    if cfg!(windows) {
        return false;
    }
    let b = text.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    let upper = text.to_ascii_uppercase();
    drive
        || text.starts_with("\\\\")
        || ["HKLM", "HKCU", "HKCR", "HKU", "HKEY_"]
            .iter()
            .any(|h| upper.starts_with(h) && upper[h.len()..].starts_with(['\\', ':', '/']))
        || upper.starts_with("HKEY_")
}

/// The matching key of a path: lower case, `/` separators, `.`/`..` folded, no trailing `/`,
/// any drive letter replaced by `?`.
fn key_of(path: &Path) -> String {
    key_str(&path.to_string_lossy())
}

fn key_str(text: &str) -> String {
    let lower = text.to_lowercase().replace('\\', "/");
    let (prefix, rest) = if let Some(rest) = lower.strip_prefix("//?/") {
        // `\\?\C:\x` is `C:\x`; `\\?\GLOBALROOT\...` is a device path.
        if rest.len() >= 2 && rest.as_bytes()[1] == b':' {
            ("?:", &rest[2..])
        } else {
            ("//?/", rest)
        }
    } else if let Some(rest) = lower.strip_prefix("//./") {
        ("//./", rest)
    } else if lower.len() >= 2
        && lower.as_bytes()[0].is_ascii_alphabetic()
        && lower.as_bytes()[1] == b':'
    {
        ("?:", &lower[2..])
    } else {
        ("", lower.as_str())
    };
    let absolute = rest.starts_with('/') || !prefix.is_empty();
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut key = String::with_capacity(lower.len());
    key.push_str(prefix);
    if prefix.ends_with('/') {
        key.push_str(&parts.join("/"));
    } else {
        for p in &parts {
            if absolute || !key.is_empty() {
                key.push('/');
            }
            key.push_str(p);
        }
        if key.is_empty() && absolute {
            key.push('/');
        }
    }
    key
}

fn join_key(base: &str, rel: &str) -> String {
    key_str(&format!("{base}/{rel}"))
}

/// Makes `path` absolute against the working directory, without touching the file system
/// otherwise.
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    }
}

/// Folds `.` and `..` lexically.
pub(crate) fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// One step of a path still to walk.
enum Part {
    Root(OsString),
    Parent,
    Name(OsString),
}

fn parts_of(path: &Path) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => parts.push(Part::Root(p.as_os_str().to_os_string())),
            Component::RootDir => match parts.last_mut() {
                Some(Part::Root(prefix)) => prefix.push(std::path::MAIN_SEPARATOR_STR),
                _ => parts.push(Part::Root(component.as_os_str().to_os_string())),
            },
            Component::CurDir => {}
            Component::ParentDir => parts.push(Part::Parent),
            Component::Normal(name) => parts.push(Part::Name(name.to_os_string())),
        }
    }
    parts
}

/// Walks an absolute path one component at a time, following each symlink where it stands (so
/// `..` after a link goes up from the link's target, as the kernel does), including dangling
/// links, up to [`MAX_LINK_HOPS`].
fn resolve(path: &Path) -> PathBuf {
    let mut pending: Vec<Part> = parts_of(path);
    pending.reverse();
    let mut out = PathBuf::new();
    let mut hops = 0;
    // Once a component is missing, nothing below it can exist either.
    let mut exists = true;
    while let Some(part) = pending.pop() {
        match part {
            Part::Root(root) => out = PathBuf::from(root),
            Part::Parent => {
                out.pop();
            }
            Part::Name(name) => {
                let candidate = out.join(&name);
                if exists && hops < MAX_LINK_HOPS {
                    match std::fs::symlink_metadata(&candidate) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            if let Ok(target) = std::fs::read_link(&candidate) {
                                hops += 1;
                                let mut more = parts_of(&target);
                                more.reverse();
                                pending.extend(more);
                                continue;
                            }
                        }
                        Ok(_) => {}
                        Err(_) => exists = false,
                    }
                }
                out = candidate;
            }
        }
    }
    if out.as_os_str().is_empty() {
        out.push(std::path::MAIN_SEPARATOR_STR);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(home: &Path) -> PathGuard {
        PathGuard::new(Some(home.to_path_buf()), home.join(".local/share/osprey"))
    }

    fn refused(r: Result<PathBuf, Refusal>) -> String {
        match r {
            Err(refusal) => {
                assert_eq!(refusal.code, ErrorCode::SensitivePath);
                refusal.message
            }
            Ok(p) => panic!("expected a refusal, got {}", p.display()),
        }
    }

    #[test]
    fn credential_paths_are_refused_for_reads_and_writes() {
        let g = guard(Path::new("/home/u"));
        let msg = refused(g.check_write(Path::new("/home/u/.ssh/authorized_keys")));
        assert_eq!(
            msg,
            "refused to write /home/u/.ssh/authorized_keys: it is an SSH credential path"
        );
        refused(g.check_read(Path::new("/home/u/.aws/credentials")));
        refused(g.check_read(Path::new("/home/u/.config/google-chrome/Default/Cookies")));
        refused(g.check_read(Path::new("/home/u/.local/share/osprey/osprey.db")));
        refused(g.check_read(Path::new("/etc/shadow")));
        refused(g.check_read(Path::new("/etc/sudoers.d/90-cloud")));
        assert!(g.check_read(Path::new("/etc/hosts")).is_ok());
        assert!(g.check_read(Path::new("/home/u/.bashrc")).is_ok());
        assert!(
            g.check_read(Path::new("/home/u/project/src/main.rs"))
                .is_ok()
        );
        assert!(g.check_read(Path::new("/home/u")).is_ok());
    }

    #[test]
    fn startup_and_system_paths_are_refused_for_writes_only() {
        let g = guard(Path::new("/home/u"));
        for p in [
            "/home/u/.bashrc",
            "/home/u/.config/autostart/x.desktop",
            "/home/u/.config/systemd/user/evil.service",
            "/etc/passwd",
            "/usr/bin/ls",
            "/boot/vmlinuz",
            "/dev/sda",
            "/proc/sys/kernel/x",
            "/var/spool/cron/crontabs/u",
            "/System/Library/x",
            "/private/etc/hosts",
            "/",
            "/home/u",
            "/home/u/",
            "/opt/google/chrome",
            "/usr/local/bin/tool",
            "/home/u/.local/bin/tool",
            "/home/u/.bash_aliases",
            "/home/u/.gitconfig",
            "/home/u/.config/git/config",
            "/home/u/.vimrc",
            "/home/u/.local/share/applications/x.desktop",
            "/home/u/.local/lib/python3.12/site-packages/x.pth",
            "/home/u/project/.venv/lib/python3.12/site-packages/usercustomize.py",
            "/home/u/project/.git/hooks/pre-commit",
            "/home/u/project/.git/config",
            "/run/user/1000/systemd/transient/x.service",
            "/var/spool/at/a1",
        ] {
            refused(g.check_write(Path::new(p)));
        }
        for p in [
            "/proc/self/environ",
            "/proc/1/environ",
            "/proc/7/task/8/environ",
            "/proc/1/mem",
        ] {
            refused(g.check_read(Path::new(p)));
        }
        assert!(g.check_read(Path::new("/proc/self/status")).is_ok());
        assert!(g.check_read(Path::new("/home/u/.gitconfig")).is_ok());
        for p in [
            "/dev/null",
            "/dev/stdout",
            "/dev/stderr",
            "/dev/fd/2",
            "/usr/local/share/tool/x",
            "/usr/local/lib/libx.so",
            "/opt/homebrew/Cellar/x",
            "/home/u/project/.git/HEAD",
            "/home/u/project/lib/site-packages/x.py",
            "/tmp/x",
            "/home/u/project/out.txt",
            "/home/u/.bashrc.bak",
            "/home/u/.sshx",
        ] {
            assert!(g.check_write(Path::new(p)).is_ok(), "{p}");
        }
        assert!(g.check_read(Path::new("/usr/bin/ls")).is_ok());
    }

    #[test]
    fn deleting_a_parent_of_something_protected_is_refused() {
        let g = guard(Path::new("/home/u"));
        let msg = refused(g.check_delete(Path::new("/home")));
        assert!(msg.contains("every user's home"), "{msg}");
        let msg = refused(g.check_delete(Path::new("/srv/../home/u/..")));
        assert!(msg.contains("every user's home"), "{msg}");
        let g2 = guard(Path::new("/data/people/u"));
        let msg = refused(g2.check_delete(Path::new("/data/people")));
        assert!(
            msg.contains("it contains your home directory itself"),
            "{msg}"
        );
        refused(g.check_delete(Path::new("/home/u/.config")));
        refused(g.check_delete(Path::new("/home/u/.local")));
        refused(g.check_delete(Path::new("/tmp")));
        refused(g.check_delete(Path::new("/")));
        assert!(g.check_delete(Path::new("/tmp/build")).is_ok());
        assert!(g.check_delete(Path::new("/home/u/project/target")).is_ok());
        assert!(g.check_delete(Path::new("/usr/local/share/x")).is_ok());
    }

    #[test]
    fn dot_dot_cannot_escape_the_table() {
        let g = guard(Path::new("/home/u"));
        refused(g.check_write(Path::new("/home/u/project/../.ssh/id_rsa")));
        refused(g.check_write(Path::new("/tmp/../etc/passwd")));
        refused(g.check_delete(Path::new("/home/u/project/../../..")));
    }

    #[test]
    fn windows_paths_match_case_insensitively_with_either_slash() {
        let g = PathGuard::new(
            Some(PathBuf::from(r"C:\Users\Ann")),
            PathBuf::from(r"C:\Users\Ann\AppData\Roaming\osprey"),
        );
        for p in [
            r"C:\Windows\System32\drivers\etc\hosts",
            "c:/windows/system32",
            r"C:\PROGRAM FILES\App\app.exe",
            r"d:\Program Files (x86)\x",
            r"C:\ProgramData\x",
            r"\\?\C:\Windows\x",
            r"\\.\PhysicalDrive0",
            r"HKLM\SOFTWARE\Microsoft",
            r"C:\Users\Ann\NTUSER.DAT",
            r"c:/users/ann/appdata/local/google/chrome/user data/default",
            r"C:\Users\Ann\AppData\Roaming\osprey\db.sqlite",
            r"C:\Users\Ann\.ssh\id_ed25519",
        ] {
            refused(g.check_write(Path::new(p)));
        }
        refused(g.check_read(Path::new(r"C:\USERS\ANN\.SSH\config")));
        assert!(
            g.check_write(Path::new(r"C:\Users\Ann\projects\app\out.txt"))
                .is_ok()
        );
        assert!(g.check_read(Path::new(r"C:\Windows\win.ini")).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_resolved_even_when_dangling() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join("project")).unwrap();
        let g = guard(&home);
        // A link to the credential directory.
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("project/keys")).unwrap();
        let msg = refused(g.check_write(&home.join("project/keys/authorized_keys")));
        assert!(msg.contains("resolves to"), "{msg}");
        refused(g.check_read(&home.join("project/keys/id_rsa")));
        // A dangling link whose target does not exist yet.
        std::os::unix::fs::symlink(home.join(".bashrc"), home.join("project/rc")).unwrap();
        refused(g.check_write(&home.join("project/rc")));
        // A chain of links, one relative.
        std::os::unix::fs::symlink("keys", home.join("project/k2")).unwrap();
        refused(g.check_read(&home.join("project/k2/id_rsa")));
        // `..` after a link goes up from the link's target.
        std::fs::create_dir_all(home.join(".ssh/sub")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh/sub"), home.join("project/deep")).unwrap();
        let resolved = g.resolve(&home.join("project/deep/../known_hosts"));
        assert_eq!(resolved, home.join(".ssh/known_hosts"));
        // A loop does not hang.
        std::os::unix::fs::symlink(home.join("project/loop"), home.join("project/loop")).unwrap();
        assert!(g.check_write(&home.join("project/loop")).is_ok());
        // Ordinary files resolve to themselves.
        assert_eq!(
            g.check_write(&home.join("project/a.txt")).unwrap(),
            home.join("project/a.txt")
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_before_dot_dot_is_applied() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("sub")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        let g = guard(&home);
        // `l` leads into the home, so `l/../.bashrc` is the home's `.bashrc`, which the tidied
        // `work/.bashrc` would hide.
        std::os::unix::fs::symlink(home.join("sub"), dir.path().join("work/l")).unwrap();
        let msg = refused(g.check_write(&dir.path().join("work/l/../.bashrc")));
        assert!(msg.contains("shell startup file"), "{msg}");
        refused(g.check_write(&dir.path().join("work/l/../.ssh/authorized_keys")));
        refused(g.check_read(&dir.path().join("work/l/../.ssh/id_rsa")));
        assert!(g.check_write(&dir.path().join("work/x/../.bashrc")).is_ok());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn links_under_dev_are_judged_by_where_they_lead() {
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let g = guard(&home);
        let link = shm.join(format!("osprey-test-{}", std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(home.join(".bashrc"), &link).unwrap();
        let result = g.check_write(&link);
        std::fs::remove_file(&link).unwrap();
        let msg = refused(result);
        assert!(msg.contains("resolves to"), "{msg}");
        // The standard devices are still judged as written.
        assert!(g.check_write(Path::new("/dev/stdout")).is_ok());
        assert!(g.check_write(Path::new("/dev/null")).is_ok());
        assert!(g.indirect(Path::new("/dev/fd/7")).is_some());
        assert!(
            g.indirect(Path::new("/proc/self/root/etc/shadow"))
                .is_some()
        );
        assert!(g.indirect(Path::new("/dev/fd/2")).is_none());
    }

    #[test]
    fn protected_names_list_what_a_pattern_can_reach() {
        let g = guard(Path::new("/home/u"));
        let names = g.protected_names(Path::new("/home/u"));
        for name in [".ssh", ".gnupg", ".bashrc", ".config", ".local"] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        let etc = g.protected_names(Path::new("/etc"));
        assert!(etc.iter().any(|n| n == "shadow"), "{etc:?}");
    }

    #[test]
    fn keys_fold_case_slashes_and_drives() {
        assert_eq!(key_str(r"C:\Windows\"), "?:/windows");
        assert_eq!(key_str("/"), "/");
        assert_eq!(key_str("/a/./b/../c/"), "/a/c");
        assert_eq!(key_str(r"\\?\C:\x"), "?:/x");
        assert_eq!(key_str("C:"), "?:");
        assert!(within("/etc/x", "/etc"));
        assert!(!within("/etcx", "/etc"));
        assert!(within("/x", "/"));
    }
}
