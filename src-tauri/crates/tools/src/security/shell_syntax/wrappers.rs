//! Command-line grammars of the programs that run other programs: benign wrappers that are
//! stripped (`env`, `nice`, `timeout`, `xargs`, ...), privilege escalators that are kept but
//! looked through (`sudo CMD`), shells, interpreters and a few others.

use super::words::Field;

/// What kind of program a name is, for the analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    Escalator,
    Shell,
    Interpreter,
    Eval,
    Source,
    Find,
    Watch,
    /// Runs its trailing words as a command, with options too varied to parse exactly.
    Opaque,
    Plain,
}

/// Programs that run another program with the user's own rights.
pub const ESCALATORS: &[&str] = &[
    "sudo", "sudoedit", "sudo-rs", "doas", "pkexec", "su", "run0", "runuser", "gksu", "gksudo",
    "kdesu", "kdesudo", "beesu", "dzdo", "pbrun", "ksu", "please", "calife", "gsudo", "runas",
];

const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "ksh93",
    "mksh",
    "pdksh",
    "ash",
    "yash",
    "posh",
    "fish",
    "tcsh",
    "csh",
    "rbash",
    "oksh",
    "loksh",
    "cmd",
    "powershell",
    "pwsh",
];

const INTERPRETER_PREFIXES: &[&str] = &[
    "python",
    "pypy",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "node",
    "nodejs",
    "bun",
    "deno",
    "rscript",
    "julia",
    "osascript",
    "tclsh",
    "wish",
    "expect",
    "irb",
    "jruby",
    "groovy",
];

const OPAQUE: &[&str] = &[
    "unshare",
    "nsenter",
    "chroot",
    "firejail",
    "bwrap",
    "strace",
    "ltrace",
    "valgrind",
    "catchsegv",
    "dbus-launch",
    "dbus-run-session",
    "proxychains",
    "proxychains4",
    "torsocks",
    "tsocks",
    "faketime",
    "fakeroot",
    "fakechroot",
    "systemd-run",
    "systemd-inhibit",
    "flatpak-spawn",
    "ssh-agent",
    "xvfb-run",
    "with-lock-ex",
    "chpst",
    "setpriv",
    "prlimit",
    "cgexec",
    "numactl",
    "schedtool",
    "trickle",
    "sg",
    "setarch",
    "linux32",
    "linux64",
    "uname26",
    "capsh",
    "entr",
    "watchexec",
    "rlwrap",
    "sshpass",
    "nodemon",
    "runcon",
    "systemd-nspawn",
    "lxc-attach",
    "lxc-execute",
];

pub(super) fn shape_of(name: &str) -> Shape {
    let lower = name.to_ascii_lowercase();
    let name = lower.as_str();
    if ESCALATORS.contains(&name) {
        Shape::Escalator
    } else if SHELLS.contains(&name) {
        Shape::Shell
    } else if name == "eval" {
        Shape::Eval
    } else if matches!(name, "source" | ".") {
        Shape::Source
    } else if name == "find" {
        Shape::Find
    } else if name == "watch" {
        Shape::Watch
    } else if OPAQUE.contains(&name) || is_loader(name) || name == "busybox" {
        Shape::Opaque
    } else if is_interpreter(name) {
        Shape::Interpreter
    } else {
        Shape::Plain
    }
}

/// The dynamic loader run by hand (`ld-linux-x86-64.so.2 /bin/rm ...`): it runs the program it
/// is given.
fn is_loader(name: &str) -> bool {
    (name.starts_with("ld-linux") || name.starts_with("ld-musl") || name.starts_with("ld.so"))
        || (name.starts_with("ld-") && name.contains(".so"))
}

/// Why a program with these arguments runs code decided at run time (another program, a
/// string, commands built from its input), if it does.
pub(super) fn runs_code(name: &str, args: &[&str]) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let name = lower.as_str();
    let has = |flags: &[&str]| {
        args.iter().any(|a| {
            flags
                .iter()
                .any(|f| a == f || a.starts_with(&format!("{f}=")))
        })
    };
    let starts = |prefixes: &[&str]| {
        args.iter()
            .any(|a| prefixes.iter().any(|p| a.starts_with(p)))
    };
    let why = |what: &str| Some(format!("`{name}` {what}"));
    if OPAQUE.contains(&name) || name == "busybox" {
        return why("runs the program it is given");
    }
    if is_loader(name) {
        return why("(the dynamic loader) runs the program it is given");
    }
    match name {
        "xargs" | "parallel" => why("builds commands from its input"),
        "sort"
            if args.iter().any(|a| {
                a.strip_prefix("--").is_some_and(|key| {
                    let key = key.split('=').next().unwrap_or(key);
                    key.len() >= 3 && "compress-program".starts_with(key)
                })
            }) =>
        {
            why("runs the compression program it is given")
        }
        "rg" | "ripgrep" if has(&["--pre"]) => why("runs a preprocessor program on every file"),
        "less" | "more"
            if args.iter().any(|a| {
                (a.starts_with('+') && a.contains(['!', '|']))
                    || a.starts_with("--lesskey")
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('k'))
            }) =>
        {
            why("runs shell commands or a key file that can set its input preprocessor")
        }
        "find" if has(&["-exec", "-execdir", "-ok", "-okdir"]) => {
            why("runs a program for every file it finds")
        }
        "find" if has(&["-delete"]) => why("deletes every file it finds"),
        "rsync" if has(&["--rsh", "--rsync-path"]) || starts(&["-e"]) => {
            why("runs the remote shell program it is given")
        }
        "scp" | "sftp" if starts(&["-S", "-F", "-o"]) => {
            why("runs the program or configuration it is given")
        }
        "ssh" | "slogin" if starts(&["-F", "-o"]) => {
            why("takes a configuration that can run local commands or reach this machine's agents")
        }
        "ssh" | "slogin" | "scp" | "sftp" | "rsync" | "sshfs"
            if args.iter().any(|a| names_this_machine(a)) =>
        {
            why(
                "reaches this machine over the network, where commands run outside Osprey's sandbox",
            )
        }
        "man" if has(&["--pager", "--html", "--preprocessor"]) || starts(&["-P", "-H"]) => {
            why("runs the pager or browser it is given")
        }
        "emacs" | "emacsclient" | "xemacs"
            if has(&[
                "--eval",
                "-eval",
                "--load",
                "-load",
                "--funcall",
                "-funcall",
                "--script",
            ]) || starts(&["-l", "-f", "--eval="]) =>
        {
            why("runs the Lisp code it is given")
        }
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" if awk_runs(args) => {
            why("runs commands or writes files from its program text")
        }
        "sed" | "gsed" if has(&["--file"]) || starts(&["-f"]) => {
            why("runs a script file whose commands are not shown")
        }
        "sed" | "gsed" if args.iter().any(|a| sed_writes(a)) => {
            why("writes files named in its script")
        }
        "ip" if args.contains(&"exec") => why("runs a program in another namespace"),
        "flatpak" | "snap" | "distrobox" | "toolbox" | "distrobox-enter" | "podman-remote"
            if args.iter().any(|a| {
                matches!(*a, "run" | "enter" | "exec" | "create") || a.starts_with("--command")
            }) =>
        {
            why("runs a program in another environment")
        }
        "dbus-send" | "busctl" | "gdbus" | "qdbus" | "qdbus6" | "dbus-run-session" => {
            why("sends D-Bus calls, which can start programs and services or end the session")
        }
        "systemctl"
            if args.iter().any(|a| {
                matches!(
                    *a,
                    "enable"
                        | "link"
                        | "edit"
                        | "set-environment"
                        | "import-environment"
                        | "unset-environment"
                        | "preset"
                        | "preset-all"
                        | "revert"
                        | "mask"
                        | "add-wants"
                        | "add-requires"
                        | "set-property"
                        | "start"
                        | "restart"
                        | "reload-or-restart"
                        | "stop"
                        | "kill"
                        | "daemon-reload"
                        | "daemon-reexec"
                )
            }) =>
        {
            why("changes which services run, now or at login")
        }
        "mount" | "umount" | "fusermount" | "fusermount3" => {
            why("changes the mounted file systems")
        }
        "xdg-open" | "gio" | "kde-open" | "kde-open5" | "exo-open" | "gnome-open" | "gvfs-open"
        | "open" | "xdg-launch" | "dex" => {
            why("opens a file or a desktop entry with whatever program the desktop picks")
        }
        "npx" | "bunx" | "pnpx" | "uvx" => why("downloads and runs a package"),
        "npm" | "pnpm" | "yarn" | "pipx"
            if args.first().is_some_and(|a| {
                matches!(*a, "exec" | "x" | "dlx") || (name == "pipx" && *a == "run")
            }) =>
        {
            why("downloads or runs a package's program")
        }
        "ed" | "red" | "ex" if args.iter().any(|a| a.starts_with('!')) => {
            why("runs shell commands from its arguments")
        }
        "flock" => why("runs the command it is given while it holds the lock"),
        "script"
            if has(&["--command"])
                || args
                    .iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c')) =>
        {
            why("runs the command given with -c")
        }
        "tmux" | "screen" | "at" | "batch" | "daemonize" => {
            why("runs commands apart from this one")
        }
        "ssh" | "scp" | "sftp"
            if args.iter().any(|a| {
                let a = a.to_ascii_lowercase();
                a.contains("proxycommand") || a.contains("localcommand") || a.contains("proxyjump")
            }) =>
        {
            why("runs a local command from its options")
        }
        "git" if has(&["-c", "--config-env", "--exec-path"]) || starts(&["-c"]) => {
            why("runs commands named in configuration given on the command line")
        }
        "git" if git_runs(args) => why("runs a program or a command string it is given"),
        "sed" | "gsed" if args.iter().any(|a| sed_runs(a)) => why("runs commands from its script"),
        "tar" | "bsdtar"
            if starts(&[
                "--checkpoint-action",
                "--to-command",
                "--use-compress-program",
                "--info-script",
                "--new-volume-script",
                "-I",
                "-F",
            ]) =>
        {
            why("runs a program named in its options")
        }
        "make" | "gmake" if starts(&["--eval", "-E"]) => why("runs code given on the command line"),
        "zip" if has(&["-TT", "--unzip-command"]) => why("runs the test command it is given"),
        "gdb" | "lldb" | "perf" | "ltrace" => why("runs and controls other programs"),
        "vim" | "vi" | "nvim" | "view" | "ex" | "vimdiff" | "gvim" | "rvim" | "evim"
            if starts(&["+", "--cmd", "-S", "-u", "-s"])
                || args.iter().any(|a| {
                    a.starts_with('-') && !a.starts_with("--") && a[1..].contains(['c', 'S'])
                }) =>
        {
            why("runs editor commands, which can run programs")
        }
        "docker" | "podman" | "nerdctl"
            if starts(&[
                "-v",
                "--volume",
                "--mount",
                "--privileged",
                "--pid=host",
                "--device",
            ]) =>
        {
            why("starts a container with access to the host")
        }
        _ => None,
    }
}

/// `localhost`, `127.0.0.1`, `[::1]` as a host (`user@localhost`, `localhost:path`): a login to
/// this very machine, whose shell is not in the sandbox.
fn names_this_machine(word: &str) -> bool {
    if word.starts_with('-') {
        return false;
    }
    let host = word.rsplit('@').next().unwrap_or(word);
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.split_once(']'))
        .map_or_else(|| host.split(':').next().unwrap_or(host), |(h, _)| h);
    let host = host.to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.starts_with("127.")
        || host == "::1"
        || host == "0.0.0.0"
        || host == "ip6-localhost"
}

/// Where the remote command starts in `ssh [options] host command...`.
pub(super) fn ssh_command(args: &[Field]) -> Option<usize> {
    const VALUES: &str = "bcDEeFIiJLlmOopQRSWw";
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if let Some(letters) = a.strip_prefix('-').filter(|l| !l.is_empty()) {
            // The last letter of a cluster may take the next word as its value.
            let last = letters.chars().last().unwrap_or(' ');
            let valued_at = letters.find(|c| VALUES.contains(c));
            if valued_at.is_some_and(|at| at + 1 == letters.len()) && VALUES.contains(last) {
                i += 1;
            }
            i += 1;
            continue;
        }
        break;
    }
    // `i` is the host; the command follows it.
    (i + 1 < args.len()).then_some(i + 1)
}

/// Names a command's environment or shell variables must not set unasked: each changes which
/// program runs, what it loads, or where a relative word points (the shell tool's denied
/// environment, `PATH`, `HOME`, the pagers and editors programs start, and every `GIT_`,
/// `LD_` and interpreter option variable).
pub(super) fn changes_what_runs(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "PATH",
        "HOME",
        "PWD",
        "OLDPWD",
        "PAGER",
        "MANPAGER",
        "SYSTEMD_PAGER",
        "EDITOR",
        "VISUAL",
        "BROWSER",
        "LESS",
        "LESSKEY",
        "LESSKEYIN",
        "LESSKEY_SRC",
        "SUDO_ASKPASS",
        "TERMINAL",
        "RUSTC_WRAPPER",
        "RUSTC",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CONFIG_DIRS",
        "XDG_DATA_DIRS",
        "MAILCAP",
        "MAILCAPS",
        "HISTFILE",
        "INPUTRC",
        "TERMINFO",
    ];
    const PREFIXES: &[&str] = &[
        "GIT_",
        "LD_",
        "DYLD_",
        "PYTHON",
        "PERL",
        "RUBY",
        "NODE_",
        "NPM_CONFIG_",
        "BASH_",
        "PS",
        "LESS",
        "SSH_",
        "CARGO_TARGET_",
    ];
    // Common settings that only tune output or identity, never what runs.
    const HARMLESS: &[&str] = &[
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONIOENCODING",
        "PYTHONHASHSEED",
        "PYTHONUTF8",
        "PYTHONFAULTHANDLER",
        "NODE_ENV",
        "NODE_NO_WARNINGS",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_TERMINAL_PROMPT",
    ];
    let upper = name.to_ascii_uppercase();
    if HARMLESS.contains(&upper.as_str()) {
        return false;
    }
    crate::shell::env::is_denied(name)
        || NAMES.contains(&upper.as_str())
        || PREFIXES
            .iter()
            .any(|p| upper.starts_with(p) && (*p != "PS" || upper.len() == 3))
        || (upper.starts_with("CARGO_")
            && (upper.ends_with("_RUNNER") || upper.ends_with("_LINKER")))
}

/// A shell name: letters, digits and `_`, not starting with a digit.
pub(super) fn is_name(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with(|c: char| c.is_ascii_digit())
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Git subcommands and options that run a program or a command string given to them.
fn git_runs(args: &[&str]) -> bool {
    let Some(at) = args.iter().position(|a| !a.starts_with('-')) else {
        return false;
    };
    let sub = args[at];
    let rest = &args[at + 1..];
    let has = |flags: &[&str]| {
        rest.iter().any(|a| {
            flags
                .iter()
                .any(|f| a == f || a.starts_with(&format!("{f}=")))
        })
    };
    match sub {
        "submodule" => rest.contains(&"foreach"),
        "bisect" => rest.first() == Some(&"run"),
        "filter-branch" | "filter-repo" | "difftool" | "mergetool" => true,
        "rebase" => has(&["--exec", "-x"]) || rest.iter().any(|a| a.starts_with("-x")),
        "clone" | "fetch" | "pull" | "ls-remote" | "push" | "archive" => has(&[
            "--upload-pack",
            "--receive-pack",
            "--exec",
            "-u",
            "--config",
            "-c",
        ]),
        "config" => {
            // Settings that name a program later git commands run, and any write outside
            // this repository (the person's global configuration is a persistence path).
            let reads = has(&[
                "--get",
                "--get-all",
                "--get-regexp",
                "--list",
                "-l",
                "--show-origin",
            ]) || rest.first() == Some(&"get")
                || rest.first() == Some(&"list");
            let global = has(&["--global", "--system", "--file", "-f"]);
            let exec_key = rest.iter().any(|a| {
                let key = a.to_ascii_lowercase();
                key.starts_with("alias.")
                    || key.starts_with("core.")
                    || key.starts_with("filter.")
                    || key.starts_with("diff.")
                    || key.starts_with("merge.")
                    || key.starts_with("credential")
                    || key.starts_with("include")
                    || key.contains("command")
                    || key.ends_with(".program")
                    || key.ends_with(".cmd")
                    || key.ends_with(".tool")
                    || key.ends_with(".editor")
                    || key.ends_with(".pager")
                    || key.ends_with("hook")
                    || key.starts_with("sequence.")
            });
            !reads && (global || exec_key)
        }
        _ => false,
    }
}

/// An awk program that runs commands (`system`, pipes to or from a command) or writes files
/// (`print > "file"`), wherever the program is among the arguments.
fn awk_runs(args: &[&str]) -> bool {
    let mut programs: Vec<&str> = Vec::new();
    let mut i = 0;
    let mut first = true;
    while i < args.len() {
        let a = args[i];
        if matches!(
            a,
            "-v" | "-F" | "--assign" | "--field-separator" | "-i" | "--include"
        ) {
            i += 2;
            continue;
        }
        if matches!(a, "-e" | "--source") {
            programs.extend(args.get(i + 1));
            first = false;
            i += 2;
            continue;
        }
        if matches!(a, "-f" | "--file") || a.starts_with("-l") || a == "--load" {
            // A program or extension from a file: not shown.
            return true;
        }
        if a.starts_with('-') && a.len() > 1 {
            i += 1;
            continue;
        }
        if first {
            programs.push(a);
            first = false;
        }
        i += 1;
    }
    programs.iter().any(|text| {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        compact.contains("system(")
            || compact.contains("|\"")
            || compact.contains("|&")
            || compact.contains("|getline")
            || compact.contains("@load")
            || awk_prints_to_file(text)
    })
}

/// `print ... > "file"`, `printf ... >> file`: awk's own output redirection.
fn awk_prints_to_file(text: &str) -> bool {
    text.split(['{', '}', ';', '\n']).any(|statement| {
        let statement = statement.trim_start();
        (statement.starts_with("print") || statement.starts_with("printf"))
            && statement.contains('>')
    })
}

/// A sed script with a `w FILE` command or an `s///w FILE` flag: sed writes that file.
fn sed_writes(script: &str) -> bool {
    let script = script_text(script);
    script.split([';', '\n']).any(|part| {
        let command = strip_address(part);
        if command.starts_with("w ") || command.starts_with("W ") {
            return true;
        }
        substitution_flags(command).is_some_and(|flags| flags.contains('w'))
    })
}

/// The script in `--expression=SCRIPT` or `-eSCRIPT`, or the word itself.
fn script_text(arg: &str) -> &str {
    arg.strip_prefix("--expression=")
        .or_else(|| arg.strip_prefix("-e").filter(|s| !s.is_empty()))
        .unwrap_or(arg)
}

/// A sed command without its address (line numbers, `$`, ranges, `/regex/`).
fn strip_address(part: &str) -> &str {
    let part = part.trim_start();
    let command = part.trim_start_matches(|c: char| {
        c.is_ascii_digit() || matches!(c, '$' | ',' | '!' | ' ' | '~' | '+')
    });
    if let Some(rest) = command.strip_prefix('/') {
        rest.split_once('/')
            .map_or("", |(_, after)| after)
            .trim_start()
    } else {
        command
    }
}

/// The flags of an `s` command (`s/a/b/ge` -> `ge`).
fn substitution_flags(command: &str) -> Option<&str> {
    let mut chars = command.chars();
    if chars.next() != Some('s') {
        return None;
    }
    let delimiter = chars.next().filter(|d| !d.is_alphanumeric())?;
    let pieces: Vec<&str> = command[1 + delimiter.len_utf8()..]
        .splitn(3, delimiter)
        .collect();
    (pieces.len() == 3).then(|| pieces[2])
}

/// A sed script with an `e` command or an `s///e` flag (both run the pattern space as a
/// command), or a `w /dev/...`-style write is judged by the caller's redirect rules elsewhere.
fn sed_runs(script: &str) -> bool {
    let script = script_text(script);
    script.split([';', '\n']).any(|part| {
        let command = strip_address(part);
        if command == "e" || command.starts_with("e ") {
            return true;
        }
        substitution_flags(command).is_some_and(|flags| flags.contains('e'))
    })
}

/// `python3.12`, `perl5.36`, `php8.2`, `node`, ...: a known name, optionally followed by a
/// version.
fn is_interpreter(name: &str) -> bool {
    INTERPRETER_PREFIXES.iter().any(|p| {
        name.strip_prefix(p).is_some_and(|rest| {
            rest.chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == '-')
        })
    }) || name == "r"
}

/// A benign wrapper's grammar.
struct Wrapper {
    name: &'static str,
    /// Options that take the next word as their value.
    values: &'static [&'static str],
    /// Options meaning "no command follows" (`command -v`, `taskset -p`).
    stops: &'static [&'static str],
    /// Positional words before the command (`timeout DURATION`).
    positionals: usize,
    /// `NAME=value` words are allowed before the command.
    assignments: bool,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "env",
        values: &["-u", "--unset", "-C", "--chdir", "-P", "-a", "--argv0"],
        stops: &[],
        positionals: 0,
        assignments: true,
    },
    Wrapper {
        name: "nice",
        values: &["-n", "--adjustment"],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "ionice",
        values: &["-c", "--class", "-n", "--classdata"],
        stops: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "timeout",
        values: &["-s", "--signal", "-k", "--kill-after"],
        stops: &[],
        positionals: 1,
        assignments: false,
    },
    Wrapper {
        name: "nohup",
        values: &[],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "time",
        values: &["-f", "--format", "-o", "--output"],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "command",
        values: &[],
        stops: &["-v", "-V"],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "builtin",
        values: &[],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "exec",
        values: &["-a"],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "stdbuf",
        values: &["-i", "-o", "-e", "--input", "--output", "--error"],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "chrt",
        values: &[
            "-T",
            "-P",
            "-D",
            "--sched-runtime",
            "--sched-period",
            "--sched-deadline",
        ],
        stops: &["-p", "--pid"],
        positionals: 1,
        assignments: false,
    },
    Wrapper {
        name: "taskset",
        values: &[],
        stops: &["-p", "--pid"],
        positionals: 1,
        assignments: false,
    },
    Wrapper {
        name: "setsid",
        values: &[],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "xargs",
        values: &[
            "-I",
            "-n",
            "-P",
            "-d",
            "-E",
            "-s",
            "-L",
            "-a",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--eof",
            "--max-chars",
            "--max-lines",
            "--arg-file",
            "--replace",
            "--process-slot-var",
        ],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "caffeinate",
        values: &["-t", "-w"],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "flock",
        values: &["-w", "--timeout", "-E", "--conflict-exit-code"],
        stops: &[],
        positionals: 1,
        assignments: false,
    },
    Wrapper {
        name: "unbuffer",
        values: &[],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "nocorrect",
        values: &[],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "noglob",
        values: &[],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "busybox",
        values: &[],
        stops: &["--list", "--help"],
        positionals: 0,
        assignments: false,
    },
    Wrapper {
        name: "toybox",
        values: &[],
        stops: &[],
        positionals: 0,
        assignments: false,
    },
];

/// The outcome of stripping a wrapper.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Stripped {
    /// The wrapped command starts this many words into the wrapper's arguments.
    Command(usize),
    /// `env -S STRING`: STRING is split into the leading words, then the arguments from this
    /// index follow.
    SplitString(String, usize),
    /// Not a wrapper, or a wrapper with no command.
    NotAWrapper,
}

pub(super) fn strip(name: &str, args: &[Field]) -> Stripped {
    let Some(spec) = WRAPPERS.iter().find(|w| w.name == name) else {
        return Stripped::NotAWrapper;
    };
    let mut positionals = spec.positionals;
    let mut i = 0;
    let mut options = true;
    while i < args.len() {
        let arg = args[i].text.as_str();
        if options && arg == "--" {
            options = false;
            i += 1;
            continue;
        }
        if options && spec.name == "env" {
            // `env -S 'cmd args'` / `--split-string=...` / `-Scmd`.
            if arg == "-S" || arg == "--split-string" {
                return match args.get(i + 1) {
                    Some(value) => Stripped::SplitString(value.text.clone(), i + 2),
                    None => Stripped::NotAWrapper,
                };
            }
            if let Some(value) = arg
                .strip_prefix("--split-string=")
                .or_else(|| arg.strip_prefix("-S"))
            {
                return Stripped::SplitString(value.to_string(), i + 1);
            }
            if arg == "-" {
                i += 1;
                continue;
            }
        }
        if options && arg.starts_with('-') && arg.len() > 1 {
            if spec
                .stops
                .iter()
                .any(|s| arg == *s || arg.starts_with(&format!("{s}=")))
            {
                return Stripped::NotAWrapper;
            }
            if spec.values.contains(&arg) {
                i += 2;
            } else {
                // A flag, `--opt=value`, or a short option with its value attached (`-n10`).
                i += 1;
            }
            continue;
        }
        if spec.assignments && is_assignment(arg) {
            i += 1;
            continue;
        }
        if positionals > 0 {
            positionals -= 1;
            i += 1;
            continue;
        }
        return Stripped::Command(i);
    }
    Stripped::NotAWrapper
}

pub(super) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// What an escalator runs.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Escalated {
    /// A command starting at this argument.
    Command(usize),
    /// A shell command string at this argument (`su -c '...'`).
    Code(usize),
    Nothing,
}

pub(super) fn escalated(name: &str, args: &[Field]) -> Escalated {
    let (values, stops, assignments): (&[&str], &[&str], bool) = match name {
        "sudo" | "sudo-rs" | "sudoedit" => (
            &[
                "-u",
                "--user",
                "-g",
                "--group",
                "-h",
                "--host",
                "-p",
                "--prompt",
                "-C",
                "--close-from",
                "-U",
                "--other-user",
                "-r",
                "--role",
                "-t",
                "--type",
                "-D",
                "--chdir",
                "-R",
                "--chroot",
                "-T",
                "--command-timeout",
            ],
            &[
                "-l",
                "--list",
                "-v",
                "--validate",
                "-V",
                "--version",
                "-K",
                "-e",
                "--edit",
            ],
            true,
        ),
        "doas" => (&["-u", "-C", "-a"], &["-L"], false),
        "pkexec" => (&["--user", "-u"], &["--version", "--help"], false),
        "run0" => (
            &[
                "-u",
                "--user",
                "-g",
                "--group",
                "--nice",
                "-D",
                "--chdir",
                "--setenv",
                "--unit",
                "--property",
                "--description",
                "--slice",
                "--machine",
                "--background",
            ],
            &[],
            false,
        ),
        "su" | "runuser" | "ksu" => {
            // `su [opts] [user] [-c cmd]`; `runuser -u user -- cmd`.
            let mut i = 0;
            while i < args.len() {
                let arg = args[i].text.as_str();
                if arg == "-c" || arg == "--command" || arg == "--session-command" {
                    return if i + 1 < args.len() {
                        Escalated::Code(i + 1)
                    } else {
                        Escalated::Nothing
                    };
                }
                if name == "runuser" && (arg == "-u" || arg == "--user") {
                    let start = if args.get(i + 2).is_some_and(|a| a.text == "--") {
                        i + 3
                    } else {
                        i + 2
                    };
                    return if start < args.len() {
                        Escalated::Command(start)
                    } else {
                        Escalated::Nothing
                    };
                }
                if matches!(
                    arg,
                    "-s" | "--shell" | "-g" | "--group" | "-G" | "--supp-group" | "-w"
                ) {
                    i += 1;
                }
                i += 1;
            }
            return Escalated::Nothing;
        }
        _ => return Escalated::Nothing,
    };
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].text.as_str();
        if arg == "--" {
            return if i + 1 < args.len() {
                Escalated::Command(i + 1)
            } else {
                Escalated::Nothing
            };
        }
        if arg.starts_with('-') && arg.len() > 1 {
            if stops.contains(&arg) {
                return Escalated::Nothing;
            }
            i += if values.contains(&arg) { 2 } else { 1 };
            continue;
        }
        if assignments && is_assignment(arg) {
            i += 1;
            continue;
        }
        return Escalated::Command(i);
    }
    Escalated::Nothing
}

/// How a shell is asked to run code.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ShellRun {
    /// `-c STRING`: the string is at this argument.
    Code(usize),
    /// A script file at this argument.
    Script(usize),
    /// Commands from standard input.
    Stdin,
    /// Code this analysis cannot read (PowerShell, `cmd /c`, `-c` with no string).
    Opaque,
}

pub(super) fn shell_invocation(name: &str, args: &[Field]) -> ShellRun {
    let lower = name.to_ascii_lowercase();
    if matches!(lower.as_str(), "cmd" | "powershell" | "pwsh") {
        let file = args.iter().position(|a| {
            a.text.eq_ignore_ascii_case("-file") || a.text.eq_ignore_ascii_case("-f")
        });
        return match file {
            Some(i) if i + 1 < args.len() => ShellRun::Script(i + 1),
            _ if args.is_empty() => ShellRun::Stdin,
            _ => ShellRun::Opaque,
        };
    }
    let mut command_mode = false;
    let mut stdin_mode = false;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].text.as_str();
        if arg == "--" || arg == "-" {
            i += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if long == "command" {
                // fish's `--command CMD`.
                command_mode = true;
            } else if let Some(code) = long.strip_prefix("command=") {
                let _ = code;
                return ShellRun::Opaque;
            } else if matches!(long, "rcfile" | "init-file" | "init-command") {
                i += 1;
            }
            i += 1;
            continue;
        }
        if (arg.starts_with('-') || arg.starts_with('+')) && arg.len() > 1 {
            let flags = &arg[1..];
            if flags.contains('c') {
                command_mode = true;
            }
            if flags.contains('s') {
                stdin_mode = true;
            }
            if flags.contains('o') || flags.contains('O') {
                // `-o pipefail`: the option name follows.
                i += 1;
            }
            i += 1;
            continue;
        }
        break;
    }
    if command_mode {
        return if i < args.len() {
            ShellRun::Code(i)
        } else {
            ShellRun::Opaque
        };
    }
    if stdin_mode || i >= args.len() {
        ShellRun::Stdin
    } else {
        ShellRun::Script(i)
    }
}

/// How an interpreter is asked to run code.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum InterpreterRun {
    /// Code given on the command line (`python -c`, `perl -e`, `node -e`).
    Code,
    /// A script file at this argument.
    Script(usize),
    /// A program from standard input.
    Stdin,
    /// A module, a version query, a REPL with no input...
    Nothing,
}

pub(super) fn interpreter_invocation(name: &str, args: &[Field]) -> InterpreterRun {
    let lower = name.to_ascii_lowercase();
    let family = INTERPRETER_PREFIXES
        .iter()
        .find(|p| lower.starts_with(*p))
        .copied()
        .unwrap_or(lower.as_str());
    // Short-option letters that introduce code, letters whose value is the rest of the word
    // (so `-MData::Dumper` is not `-e`), options whose value is the next word.
    type Grammar = (
        &'static str,
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
    );
    let (code_letters, value_letters, code_longs, values): Grammar = match family {
        "python" | "pypy" => ("c", "WXQm", &[], &["-W", "-X", "-Q"]),
        "perl" => ("eE", "IMmilx0CdD", &[], &["-I", "-M", "-m"]),
        "ruby" | "jruby" => ("e", "IrCEKTWxF0", &[], &["-r", "-I", "-C"]),
        "irb" => ("", "rI", &[], &["-r", "-I"]),
        "node" | "nodejs" | "bun" => (
            "ep",
            "r",
            &["--eval", "--print"],
            &[
                "-r",
                "--require",
                "--import",
                "--loader",
                "--experimental-loader",
            ],
        ),
        "php" => ("rRBE", "cdz", &[], &["-c", "-d", "-z"]),
        "lua" | "luajit" => ("e", "l", &[], &["-l"]),
        "rscript" | "r" => ("e", "", &[], &[]),
        "julia" => ("eE", "", &["--eval", "--print"], &[]),
        "osascript" => ("e", "ls", &[], &["-l", "-s"]),
        "expect" => ("c", "", &[], &[]),
        "groovy" => ("e", "", &[], &[]),
        _ => ("", "", &[], &[]),
    };
    if family == "deno" || (family == "bun" && args.first().is_some_and(|a| a.text == "eval")) {
        return match args.first().map(|a| a.text.as_str()) {
            Some("eval") => InterpreterRun::Code,
            Some("run") => args
                .iter()
                .skip(1)
                .position(|a| !a.text.starts_with('-'))
                .map_or(InterpreterRun::Nothing, |p| InterpreterRun::Script(p + 1)),
            _ => InterpreterRun::Nothing,
        };
    }
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].text.as_str();
        if arg == "-" {
            return InterpreterRun::Stdin;
        }
        if arg == "--" {
            i += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let key = long.split('=').next().unwrap_or(long);
            if code_longs.iter().any(|c| c.trim_start_matches('-') == key) {
                return InterpreterRun::Code;
            }
            if matches!(key, "version" | "help") {
                return InterpreterRun::Nothing;
            }
            i += if values.contains(&arg) { 2 } else { 1 };
            continue;
        }
        if arg.starts_with('-') && arg.len() > 1 {
            if matches!(family, "python" | "pypy") && arg.starts_with("-m") {
                return InterpreterRun::Nothing;
            }
            if arg[1..]
                .chars()
                .take_while(|c| !value_letters.contains(*c))
                .any(|c| code_letters.contains(c))
            {
                return InterpreterRun::Code;
            }
            if matches!(arg, "-V" | "-v" | "-h") && family != "perl" {
                return InterpreterRun::Nothing;
            }
            i += if values.contains(&arg) { 2 } else { 1 };
            continue;
        }
        break;
    }
    if i < args.len() {
        InterpreterRun::Script(i)
    } else {
        InterpreterRun::Stdin
    }
}

/// Where `watch`'s command starts.
pub(super) fn watch_command(args: &[Field]) -> Option<usize> {
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].text.as_str();
        if arg == "--" {
            return (i + 1 < args.len()).then_some(i + 1);
        }
        if arg.starts_with('-') && arg.len() > 1 {
            i += if matches!(arg, "-n" | "--interval" | "-q" | "--equexit") {
                2
            } else {
                1
            };
            continue;
        }
        return Some(i);
    }
    None
}
