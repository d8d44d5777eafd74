//! The child environment: an allowlist, not a denylist. Only the names a shell session needs
//! to work (and to reach the desktop for GUI commands) are passed, plus the names the
//! configuration adds; a fixed set of names that make programs load or run code chosen by
//! whoever set them is dropped even when configured.

use std::ffi::OsString;

/// Passed when present. `DISPLAY`, `WAYLAND_DISPLAY`, `XDG_RUNTIME_DIR` and
/// `DBUS_SESSION_BUS_ADDRESS` are included because GUI and desktop commands (`xdg-open`,
/// `notify-send`, `gio`) fail without them; they address the user's own session, which the
/// agent already acts in.
const ALLOWED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
];
const ALLOWED_PREFIXES: &[&str] = &["LC_"];

/// Never passed, even when configured: each makes a dynamic loader, shell or interpreter
/// load a library, source a file or run a command as a side effect.
const DENIED: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS4",
    "IFS",
    "CDPATH",
    "GLOBIGNORE",
    "SHELLOPTS",
    "BASHOPTS",
    "ZDOTDIR",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "RES_OPTIONS",
    "NLSPATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_PROXY_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "LESSOPEN",
    "LESSCLOSE",
];
const DENIED_PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG"];

/// Used when the parent has no `PATH`, so plain commands still resolve.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Whether a variable may never reach a child.
pub fn is_denied(name: &str) -> bool {
    let name = normal(name);
    DENIED.contains(&name.as_str()) || DENIED_PREFIXES.iter().any(|p| name.starts_with(p))
}

fn is_allowed(name: &str, extra: &[String]) -> bool {
    let normal_name = normal(name);
    ALLOWED.contains(&normal_name.as_str())
        || ALLOWED_PREFIXES.iter().any(|p| normal_name.starts_with(p))
        || extra.iter().any(|pattern| {
            let pattern = normal(pattern.trim());
            match pattern.strip_suffix('*') {
                Some(prefix) => !prefix.is_empty() && normal_name.starts_with(prefix),
                None => pattern == normal_name,
            }
        })
}

/// Windows variable names are case-insensitive.
fn normal(name: &str) -> String {
    if cfg!(windows) {
        name.to_ascii_uppercase()
    } else {
        name.to_string()
    }
}

/// The environment a child gets from `parent`: allowlisted names plus `extra` (exact names,
/// or prefixes ending in `*`), minus the denied names.
pub fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    extra: &[String],
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = parent
        .into_iter()
        .filter(|(name, _)| {
            name.to_str()
                .is_some_and(|n| !n.is_empty() && !is_denied(n) && is_allowed(n, extra))
        })
        .collect();
    if !out
        .iter()
        .any(|(n, _)| normal(&n.to_string_lossy()) == "PATH")
    {
        out.push(("PATH".into(), FALLBACK_PATH.into()));
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(vars: &[(OsString, OsString)]) -> Vec<String> {
        vars.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_allowlisted_and_configured_names_pass() {
        let parent = env(&[
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("OPENAI_API_KEY", "x"),
            ("CARGO_HOME", "/c"),
            ("MY_TOOL_TOKEN", "t"),
        ]);
        let out = child_env(parent, &["CARGO_HOME".into(), "MY_TOOL_*".into()]);
        assert_eq!(
            names(&out),
            ["CARGO_HOME", "HOME", "LC_ALL", "MY_TOOL_TOKEN", "PATH"]
        );
    }

    #[test]
    fn dangerous_names_never_pass_even_when_configured() {
        let dangerous = [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "LD_AUDIT",
            "DYLD_INSERT_LIBRARIES",
            "BASH_ENV",
            "ENV",
            "BASH_FUNC_ls%%",
            "PROMPT_COMMAND",
            "IFS",
            "CDPATH",
            "GLOBIGNORE",
            "SHELLOPTS",
            "BASHOPTS",
            "PYTHONSTARTUP",
            "PYTHONPATH",
            "NODE_OPTIONS",
            "PERL5OPT",
            "PERL5LIB",
            "RUBYOPT",
            "GCONV_PATH",
            "HOSTALIASES",
            "LOCALDOMAIN",
            "RES_OPTIONS",
            "GIT_SSH_COMMAND",
        ];
        let parent: Vec<(OsString, OsString)> = dangerous
            .iter()
            .map(|n| (OsString::from(n), OsString::from("x")))
            .collect();
        let extra: Vec<String> = dangerous.iter().map(|n| n.to_string()).collect();
        let out = child_env(parent, &[extra, vec!["*".into(), "LD_*".into()]].concat());
        assert_eq!(names(&out), ["PATH"]);
        assert_eq!(out[0].1, FALLBACK_PATH);
    }
}
