//! Static analysis of a shell command with a real shell grammar (brush-parser): every simple
//! command that would run, with wrappers (`env`, `nice`, `timeout`, ...) seen through, nested code
//! (`$(...)`, backticks, `bash -c`, `eval`, heredocs fed to a shell) expanded where it can be, and
//! a reason when the program cannot be known statically.
//!
//! STUB: replaced by the safeguard work; the API below is the contract.

/// One simple command as it would run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The program after wrappers are stripped (`env X=1 nice git status` -> `git`).
    pub program: String,
    /// Its arguments, with quotes removed.
    pub args: Vec<String>,
    /// The wrappers that were stripped, outermost first.
    pub wrappers: Vec<String>,
    /// Redirections attached to it.
    pub redirects: Vec<Redirect>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// The file (or `&2` style target) named.
    pub target: String,
    /// True for `>`, `>>`, `<>`, `>|`, `&>`.
    pub writes: bool,
}

/// Everything [`analyze`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandAnalysis {
    pub commands: Vec<SimpleCommand>,
    /// Set when some program cannot be resolved statically (substitution in command position,
    /// `eval`, an interpreter given `-c`/`-e` code, anything piped into a shell, unparseable
    /// input): such a command must always be asked, never auto-approved.
    pub dynamic: Option<String>,
}

/// Parses `command` and lists what it would run.
pub fn analyze(command: &str) -> CommandAnalysis {
    let mut commands = Vec::new();
    for part in command.split(['|', ';', '&']) {
        let mut words = part.split_whitespace().map(str::to_string);
        if let Some(program) = words.next() {
            commands.push(SimpleCommand {
                program,
                args: words.collect(),
                ..Default::default()
            });
        }
    }
    CommandAnalysis {
        commands,
        dynamic: None,
    }
}
