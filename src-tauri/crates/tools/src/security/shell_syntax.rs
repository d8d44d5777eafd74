//! Static analysis of a shell command with a real shell grammar (brush-parser): every simple
//! command that would run, with wrappers (`env`, `nice`, `timeout`, ...) seen through, nested code
//! (`$(...)`, backticks, `bash -c`, `eval`, heredocs fed to a shell) expanded where it can be, and
//! a reason when the program cannot be known statically.
//!
//! Words are normalised the way bash would before running them: quotes and backslashes removed,
//! ANSI-C strings (`$'\x73udo'`) decoded, brace expansion (`{rm,-rf,/}`) applied, `$IFS` used as
//! a separator split, and variables assigned earlier in the same command (`X=rm; $X`)
//! substituted. Values that cannot be known (`$1`, `$(curl ...)`) are kept as their source text
//! (`$1`, `$(curl ...)`), so a reader sees what was there. `~` and `$HOME` are left as written: the
//! safeguard expands them with the home it was given.
//!
//! Whatever changes the meaning of later words in ways only known at run time makes the
//! analysis `dynamic` (asked at every level): parameter expansions with operators or
//! indirection, namerefs, `printf -v`, `read`, `set --`, loops over unknown values, aliases,
//! functions, `trap`, `exec` without a command, variables that change what runs (`PATH`,
//! `HOME`, `CDPATH`, `PS4`, `GIT_*`, ...), and programs that run programs or strings. A `for`
//! loop over a few static values is walked once per value instead.
//!
//! The analysis over-approximates on purpose: a function body is listed even if the function is
//! never called, an `if` lists both branches, and an unknown word in command position also lists
//! the command that would run if it expanded to nothing.

mod words;
mod wrappers;

use std::collections::HashMap;

use brush_parser::ast;

use words::Field;
pub use wrappers::ESCALATORS;
use wrappers::{Shape, shape_of};

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
    /// Some argument is a file name pattern or came from an expansion (`~/.ss?/id_*`,
    /// `$HOME/x`, `$(pwd)`): what it names is only known when it runs.
    pub unresolved_args: bool,
    /// The directory a wrapper runs it in (`env -C DIR`), as written.
    pub chdir: Option<String>,
}

impl SimpleCommand {
    /// The program's file name without directories or a Windows extension (`/usr/bin/sudo`
    /// -> `sudo`, `DISKPART.EXE` -> `diskpart`), lower-cased only for Windows extensions.
    pub fn program_name(&self) -> &str {
        program_name(&self.program)
    }
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
    /// Set when a shell function calls itself (directly or through others) in a pipeline or in
    /// the background, or more than once: the fork-bomb pattern (`:(){ :|:& };:`).
    pub fork_bomb: Option<String>,
}

/// Parses `command` and lists what it would run.
pub fn analyze(command: &str) -> CommandAnalysis {
    let mut analyzer = Analyzer::default();
    analyzer.source(command, 0);
    analyzer.finish()
}

/// Lists what an argv runs, with no shell parsing at all (the `exec` tool): the words are the
/// program and its arguments exactly as given, judged as one simple command of a shell line
/// would be, so wrappers are seen through (`sudo X`, `env X`, `bash -c CODE`, `find -exec`).
/// `stdin` is the text the program reads, when given: a shell or interpreter fed a script is
/// judged on the script.
pub fn analyze_argv(argv: &[String], stdin: Option<&str>) -> CommandAnalysis {
    let mut analyzer = Analyzer::default();
    let fields: Vec<Field> = argv.iter().map(|word| Field::literal(word)).collect();
    let input = Input {
        text: stdin.map(|text| (text.to_string(), false)),
        ..Default::default()
    };
    analyzer.run_fields(fields, Vec::new(), &input, &[], 0);
    analyzer.finish()
}

/// The file name of a program path, without a `.exe`/`.com` suffix.
pub fn program_name(program: &str) -> &str {
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    for ext in [".exe", ".EXE", ".Exe", ".com", ".COM"] {
        if let Some(stem) = name.strip_suffix(ext)
            && !stem.is_empty()
        {
            return stem;
        }
    }
    name
}

/// How deep `bash -c "bash -c ..."`, `$( $( ) )` and `eval` nest before we give up.
const MAX_DEPTH: usize = 16;

/// A `for` loop over at most this many static values is judged once per value.
const MAX_LOOP_VALUES: usize = 16;

/// Where a simple command's standard input comes from, as far as it matters to shells.
#[derive(Clone, Debug, Default)]
struct Input {
    /// A pipe from the previous command.
    piped: bool,
    /// A heredoc or herestring: its text, and whether the text is only known at run time.
    text: Option<(String, bool)>,
    /// A `< file` redirection.
    file: bool,
}

#[derive(Debug, Default)]
struct Function {
    name: String,
    /// (callee, whether the call forks: in a pipeline, in the background, in a substitution).
    calls: Vec<(String, bool)>,
}

#[derive(Default)]
struct Analyzer {
    commands: Vec<SimpleCommand>,
    dynamic: Option<String>,
    /// Variables assigned by the command itself: `Some(value)` when static.
    vars: HashMap<String, Option<String>>,
    functions: Vec<Function>,
    /// Index into `functions` of the bodies being walked.
    in_function: Vec<usize>,
    /// Greater than zero inside a pipeline, a background job or a substitution.
    forking: usize,
    /// Redirections of enclosing compound commands (`{ ...; } > file`), which apply to every
    /// command inside.
    outer_redirects: Vec<Redirect>,
    /// The known output of the previous command in the pipeline.
    pipe_text: Option<String>,
}

impl Analyzer {
    fn finish(self) -> CommandAnalysis {
        let fork_bomb = self.find_fork_bomb();
        // Over-approximation (opaque wrappers, unknown programs) can list a command twice.
        let mut commands: Vec<SimpleCommand> = Vec::with_capacity(self.commands.len());
        for command in self.commands {
            if !commands.contains(&command) {
                commands.push(command);
            }
        }
        CommandAnalysis {
            commands,
            dynamic: self.dynamic,
            fork_bomb,
        }
    }

    fn set_dynamic(&mut self, reason: impl Into<String>) {
        if self.dynamic.is_none() {
            self.dynamic = Some(reason.into());
        }
    }

    /// Parses and walks shell source text.
    fn source(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.set_dynamic("the command nests shells too deeply to follow");
            words::fallback_commands(text)
                .into_iter()
                .for_each(|f| self.run_fields(f, Vec::new(), &Input::default(), &[], depth));
            return;
        }
        let options = words::parser_options();
        let mut parser = brush_parser::Parser::new(std::io::Cursor::new(text.as_bytes()), options);
        match parser.parse_program() {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.compound_list(list, depth);
                }
            }
            Err(err) => {
                self.set_dynamic(format!("the command could not be parsed ({err})"));
                // Still list what the words look like, so the safeguard sees `sudo` in junk.
                for fields in words::fallback_commands(text) {
                    self.run_fields(fields, Vec::new(), &Input::default(), &[], depth + 1);
                }
            }
        }
    }

    fn compound_list(&mut self, list: &ast::CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, separator) in &list.0 {
            let background = matches!(separator, ast::SeparatorOperator::Async);
            self.forking += usize::from(background);
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, depth),
                }
            }
            self.forking -= usize::from(background);
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        let forks = pipeline.seq.len() > 1;
        self.forking += usize::from(forks);
        for (i, command) in pipeline.seq.iter().enumerate() {
            let before = self.commands.len();
            self.command(command, i > 0, depth);
            // `echo 'rm -rf /' | sh`: a static echo's output is known to the next command.
            self.pipe_text = match &self.commands[before..] {
                [only] => static_output(only),
                _ => None,
            };
        }
        self.pipe_text = None;
        self.forking -= usize::from(forks);
    }

    fn command(&mut self, command: &ast::Command, piped: bool, depth: usize) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, piped, depth),
            ast::Command::Compound(compound, redirects) => {
                let saved = self.outer_redirects.len();
                if let Some(list) = redirects {
                    for redirect in &list.0 {
                        let mut input = Input::default();
                        if let Some(r) = self.redirect(redirect, &mut input, depth) {
                            self.outer_redirects.push(r);
                        }
                    }
                }
                self.compound(compound, piped, depth);
                self.outer_redirects.truncate(saved);
            }
            ast::Command::Function(def) => self.function(def, depth),
            ast::Command::ExtendedTest(test, _) => self.extended_test(&test.expr, depth),
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, piped: bool, depth: usize) {
        match compound {
            ast::CompoundCommand::Arithmetic(a) => {
                self.scan_text(&a.expr.value, depth);
                // Bash reads `(( ... ))` as nested subshells when the inside is not arithmetic
                // (and `( ( ... ) )` always), where this grammar may see arithmetic: judge that
                // reading too, so `( ( rm -rf ~ ) )` is seen as the `rm` bash runs.
                self.subshell_reading(&a.expr.value, depth);
            }
            ast::CompoundCommand::ArithmeticForClause(f) => {
                for expr in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.scan_text(&expr.value, depth);
                }
                self.compound_list(&f.body.list, depth);
            }
            ast::CompoundCommand::BraceGroup(g) => self.compound_list(&g.list, depth),
            ast::CompoundCommand::Subshell(s) => self.compound_list(&s.list, depth),
            ast::CompoundCommand::ForClause(f) => {
                let mut values: Vec<Field> = Vec::new();
                for value in f.values.iter().flatten() {
                    values.extend(self.expand(&value.value, depth));
                }
                // A few static values: the body is judged once with each, so `for d in /` is
                // seen as the `rm -rf /` it runs. Anything else binds the variable to what is
                // only known when it runs: asked.
                let resolved = f.values.is_some()
                    && values.len() <= MAX_LOOP_VALUES
                    && values.iter().all(|v| !v.unknown && !v.glob)
                    && self.in_function.is_empty();
                if resolved {
                    for value in values {
                        self.vars
                            .insert(f.variable_name.clone(), Some(value.text.clone()));
                        self.compound_list(&f.body.list, depth);
                    }
                } else {
                    self.set_dynamic(format!(
                        "the loop variable `{}` takes values only known when the command runs",
                        f.variable_name
                    ));
                    self.vars.insert(f.variable_name.clone(), None);
                    self.compound_list(&f.body.list, depth);
                }
                self.vars.insert(f.variable_name.clone(), None);
            }
            ast::CompoundCommand::CaseClause(c) => {
                self.expand(&c.value.value, depth);
                for item in &c.cases {
                    for pattern in &item.patterns {
                        self.expand(&pattern.value, depth);
                    }
                    if let Some(list) = &item.cmd {
                        self.compound_list(list, depth);
                    }
                }
            }
            ast::CompoundCommand::IfClause(i) => {
                self.compound_list(&i.condition, depth);
                self.compound_list(&i.then, depth);
                for branch in i.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.compound_list(condition, depth);
                    }
                    self.compound_list(&branch.body, depth);
                }
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.compound_list(&w.0, depth);
                self.compound_list(&w.1.list, depth);
            }
            ast::CompoundCommand::Coprocess(c) => {
                self.forking += 1;
                self.command(&c.body, piped, depth);
                self.forking -= 1;
            }
        }
    }

    fn function(&mut self, def: &ast::FunctionDefinition, depth: usize) {
        let name = words::literal_text(&def.fname.value);
        // A function can take the name of a command (`cd`, `ls`, `command_not_found_handle`)
        // and so change what a later word means; its body is still judged below.
        self.set_dynamic(format!(
            "the command defines the shell function `{name}`, which can change what later \
             commands do"
        ));
        self.functions.push(Function {
            name,
            calls: Vec::new(),
        });
        self.in_function.push(self.functions.len() - 1);
        let saved = self.outer_redirects.len();
        if let Some(list) = &def.body.1 {
            for redirect in &list.0 {
                let mut input = Input::default();
                if let Some(r) = self.redirect(redirect, &mut input, depth) {
                    self.outer_redirects.push(r);
                }
            }
        }
        // The body is listed whether or not the function is called: over-approximation.
        self.compound(&def.body.0, false, depth);
        self.outer_redirects.truncate(saved);
        self.in_function.pop();
    }

    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr, depth: usize) {
        match expr {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.extended_test(a, depth);
                self.extended_test(b, depth);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.extended_test(a, depth)
            }
            ast::ExtendedTestExpr::UnaryTest(_, w) => {
                self.expand(&w.value, depth);
            }
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                // Arithmetic operators evaluate their operands, and `a[$(cmd)]` runs `cmd`
                // even from inside quotes.
                self.scan_text(&a.value, depth);
                self.scan_text(&b.value, depth);
                self.expand(&a.value, depth);
                self.expand(&b.value, depth);
            }
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, piped: bool, depth: usize) {
        let mut fields: Vec<Field> = Vec::new();
        let mut redirects: Vec<Redirect> = Vec::new();
        let mut assignments: Vec<(String, Option<String>)> = Vec::new();
        let mut input = Input {
            piped,
            text: if piped {
                self.pipe_text.take().map(|t| (t, false))
            } else {
                None
            },
            ..Default::default()
        };
        let prefix = simple.prefix.iter().flat_map(|p| p.0.iter());
        let suffix = simple.suffix.iter().flat_map(|s| s.0.iter());
        let mut items: Vec<Item<'_>> = prefix.map(Item::Part).collect();
        if let Some(word) = &simple.word_or_name {
            items.push(Item::Word(word));
        }
        items.extend(suffix.map(Item::Part));
        for item in items {
            match item {
                Item::Word(word) => fields.extend(self.expand(&word.value, depth)),
                Item::Part(ast::CommandPrefixOrSuffixItem::Word(word)) => {
                    fields.extend(self.expand(&word.value, depth))
                }
                Item::Part(ast::CommandPrefixOrSuffixItem::IoRedirect(redirect)) => {
                    if let Some(r) = self.redirect(redirect, &mut input, depth) {
                        redirects.push(r);
                    }
                }
                Item::Part(ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, word)) => {
                    if fields.is_empty() {
                        let value = self.assignment_value(assignment, depth);
                        let name = match &assignment.name {
                            ast::AssignmentName::VariableName(n) => n.clone(),
                            ast::AssignmentName::ArrayElementName(n, index) => {
                                self.scan_text(index, depth);
                                n.clone()
                            }
                        };
                        let value = if assignment.append { None } else { value };
                        assignments.push((name, value));
                    } else {
                        // After the program (`declare x=1`, `export x=$(...)`): an argument.
                        fields.extend(self.expand(&word.value, depth));
                    }
                }
                Item::Part(ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub)) => {
                    self.forking += 1;
                    self.compound_list(&sub.list, depth);
                    self.forking -= 1;
                    fields.push(Field::process_substitution());
                }
            }
        }
        redirects.extend(self.outer_redirects.iter().cloned());
        if fields.is_empty() {
            // Bare assignments persist for the rest of the command; bare redirections
            // (`> file`) still open (and truncate) their files.
            for (name, value) in assignments {
                self.assigned(&name, value.as_deref());
                self.vars.insert(name, value);
            }
            if !redirects.is_empty() {
                self.record(SimpleCommand {
                    redirects,
                    ..Default::default()
                });
            }
            return;
        }
        // `PATH=/tmp ls`, `LESSOPEN='|cmd' less`: a prefix assignment changes what the program
        // does, so it is kept with the command like a wrapper (no safe bin or allowlist entry
        // covers a command that carries one).
        for (name, value) in &assignments {
            self.assigned(name, value.as_deref());
        }
        let prefixes: Vec<String> = assignments
            .iter()
            .map(|(name, value)| format!("{name}={}", value.as_deref().unwrap_or("?")))
            .collect();
        self.run_fields(fields, redirects, &input, &prefixes, depth);
    }

    fn assignment_value(&mut self, assignment: &ast::Assignment, depth: usize) -> Option<String> {
        match &assignment.value {
            ast::AssignmentValue::Scalar(word) => {
                let fields = self.expand_quoted(&word.value, depth);
                (!fields.unknown).then_some(fields.text)
            }
            ast::AssignmentValue::Array(items) => {
                for (key, value) in items {
                    if let Some(key) = key {
                        self.expand(&key.value, depth);
                    }
                    self.expand(&value.value, depth);
                }
                None
            }
        }
    }

    fn redirect(
        &mut self,
        redirect: &ast::IoRedirect,
        input: &mut Input,
        depth: usize,
    ) -> Option<Redirect> {
        match redirect {
            ast::IoRedirect::File(_, kind, target) => {
                let writes = matches!(
                    kind,
                    ast::IoFileRedirectKind::Write
                        | ast::IoFileRedirectKind::Append
                        | ast::IoFileRedirectKind::ReadAndWrite
                        | ast::IoFileRedirectKind::Clobber
                );
                match target {
                    ast::IoFileRedirectTarget::Filename(word) => {
                        let target = self.expand_quoted(&word.value, depth).text;
                        if matches!(kind, ast::IoFileRedirectKind::Read) {
                            input.file = true;
                        }
                        Some(Redirect { target, writes })
                    }
                    ast::IoFileRedirectTarget::Fd(fd) => Some(Redirect {
                        target: format!("&{fd}"),
                        writes: false,
                    }),
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                        self.forking += 1;
                        self.compound_list(&sub.list, depth);
                        self.forking -= 1;
                        Some(Redirect {
                            target: "/dev/fd/63".into(),
                            writes: false,
                        })
                    }
                    ast::IoFileRedirectTarget::Duplicate(word) => {
                        let target = self.expand_quoted(&word.value, depth).text;
                        // `>&file` (not a number, not `-`) sends stdout and stderr to a file.
                        let to_file = matches!(kind, ast::IoFileRedirectKind::DuplicateOutput)
                            && !target.is_empty()
                            && target != "-"
                            && !target
                                .trim_end_matches('-')
                                .chars()
                                .all(|c| c.is_ascii_digit());
                        Some(if to_file {
                            Redirect {
                                target,
                                writes: true,
                            }
                        } else {
                            Redirect {
                                target: format!("&{target}"),
                                writes: false,
                            }
                        })
                    }
                }
            }
            ast::IoRedirect::OutputAndError(word, _) => {
                let target = self.expand_quoted(&word.value, depth).text;
                Some(Redirect {
                    target,
                    writes: true,
                })
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                let (text, unknown) = if doc.requires_expansion {
                    let expanded = self.expand_heredoc(&doc.doc.value, depth);
                    (expanded.text, expanded.unknown)
                } else {
                    (doc.doc.value.clone(), false)
                };
                input.text = Some((text, unknown));
                None
            }
            ast::IoRedirect::HereString(_, word) => {
                let expanded = self.expand_quoted(&word.value, depth);
                input.text = Some((expanded.text, expanded.unknown));
                None
            }
        }
    }

    /// Records a command and, for functions, who calls whom.
    fn record(&mut self, command: SimpleCommand) {
        if let Some(&current) = self.in_function.last() {
            let forks = self.forking > 0;
            self.functions[current]
                .calls
                .push((command.program.clone(), forks));
        }
        self.commands.push(command);
    }

    /// Resolves wrappers and nested code for one expanded simple command.
    fn run_fields(
        &mut self,
        fields: Vec<Field>,
        redirects: Vec<Redirect>,
        input: &Input,
        outer_wrappers: &[String],
        depth: usize,
    ) {
        let mut wrappers: Vec<String> = outer_wrappers.to_vec();
        let mut chdir: Option<String> = None;
        let mut start = 0;
        loop {
            let Some(head) = fields.get(start) else {
                return;
            };
            if head.expanded {
                self.set_dynamic(format!(
                    "the program name `{}` comes from an expansion",
                    head.text
                ));
                if head.unknown {
                    // It may expand to nothing, leaving the next word as the program.
                    let rest = fields[start + 1..].to_vec();
                    if !rest.is_empty() && depth < MAX_DEPTH {
                        self.run_fields(rest, redirects.clone(), input, &wrappers, depth + 1);
                    }
                }
            } else if head.glob {
                self.set_dynamic(format!(
                    "the program name `{}` is a file name pattern",
                    head.text
                ));
            }
            let name = program_name(&head.text).to_string();
            let args = &fields[start + 1..];
            // A program that runs programs or strings it is given (wrappers like `xargs`
            // included): what runs is decided when it runs, so the command is asked at every
            // level; its plausible inner commands are still judged, so a destructive one is
            // blocked outright.
            let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
            if let Some(why) = wrappers::runs_code(&name, &texts) {
                self.set_dynamic(why);
            }
            match wrappers::strip(&name, args) {
                wrappers::Stripped::Command(skip) => {
                    if name == "env" {
                        self.env_wrapper(&args[..skip], &mut chdir);
                    }
                    wrappers.push(name);
                    start += 1 + skip;
                }
                wrappers::Stripped::SplitString(text, rest) => {
                    // `env -S "sudo rm"`: the string is split into words that come first.
                    wrappers.push(name);
                    let mut fields: Vec<Field> =
                        text.split_whitespace().map(Field::literal).collect();
                    fields.extend(args[rest..].iter().cloned());
                    if depth < MAX_DEPTH {
                        self.run_fields(fields, redirects, input, &wrappers, depth + 1);
                    }
                    return;
                }
                wrappers::Stripped::NotAWrapper => break,
            }
        }
        let head = &fields[start];
        let mut args: Vec<Field> = fields[start + 1..].to_vec();
        if wrappers.last().is_some_and(|w| w == "xargs") {
            // `echo / | xargs rm -rf`: the piped words become arguments.
            if let Some((text, false)) = &input.text {
                args.extend(text.split_whitespace().map(Field::literal));
            }
        }
        let name = program_name(&head.text).to_string();
        self.builtin(&name, &args, input, depth);
        self.record(SimpleCommand {
            program: head.text.clone(),
            args: args.iter().map(|a| a.text.clone()).collect(),
            wrappers: wrappers.clone(),
            redirects: redirects.clone(),
            unresolved_args: args.iter().any(|a| a.glob || a.expanded || a.unknown),
            chdir: chdir.clone(),
        });
        if let Some(dir) = &chdir
            && shape_of(&name) != Shape::Plain
        {
            // The commands it nests are listed without the directory it moves them to.
            self.set_dynamic(format!(
                "`env -C {dir}` runs `{name}`, whose own commands start in that directory"
            ));
        }
        self.nested(&name, &args, &redirects, input, &wrappers, depth);
    }

    /// Code a command runs that is not its own program: `bash -c`, `eval`, `sudo CMD`,
    /// `find -exec`, interpreters, ...
    fn nested(
        &mut self,
        name: &str,
        args: &[Field],
        redirects: &[Redirect],
        input: &Input,
        wrappers: &[String],
        depth: usize,
    ) {
        let mut inner_wrappers = wrappers.to_vec();
        inner_wrappers.push(name.to_string());
        match shape_of(name) {
            Shape::Escalator => match wrappers::escalated(name, args) {
                wrappers::Escalated::Command(start) => self.run_fields(
                    args[start..].to_vec(),
                    redirects.to_vec(),
                    input,
                    &inner_wrappers,
                    depth + 1,
                ),
                wrappers::Escalated::Code(index) => {
                    self.code_string(name, &args[index], depth);
                }
                wrappers::Escalated::Nothing => {}
            },
            Shape::Shell => self.shell(name, args, input, depth),
            Shape::Interpreter => self.interpreter(name, args, input),
            Shape::Eval => {
                if args.iter().any(|a| a.unknown) {
                    self.set_dynamic("`eval` of text only known at run time");
                }
                let text = joined(args);
                if depth < MAX_DEPTH {
                    self.source(&text, depth + 1);
                } else {
                    self.set_dynamic("the command nests `eval` too deeply to follow");
                }
            }
            Shape::Source => {
                let file = args.first().map(|a| a.text.as_str()).unwrap_or("");
                self.set_dynamic(format!("`{name}` runs the commands in the file `{file}`"));
            }
            Shape::Find => {
                let mut i = 0;
                while i < args.len() {
                    let flag = args[i].text.as_str();
                    if matches!(flag, "-exec" | "-execdir" | "-ok" | "-okdir") {
                        let end = args[i + 1..]
                            .iter()
                            .position(|a| a.text == ";" || a.text == "+")
                            .map_or(args.len(), |p| i + 1 + p);
                        let command = args[i + 1..end].to_vec();
                        if !command.is_empty() {
                            self.run_fields(
                                command,
                                Vec::new(),
                                &Input::default(),
                                &inner_wrappers,
                                depth + 1,
                            );
                        }
                        i = end + 1;
                    } else {
                        i += 1;
                    }
                }
            }
            Shape::Watch => {
                let start = wrappers::watch_command(args);
                if let Some(start) = start {
                    let text = joined(&args[start..]);
                    if args[start..].iter().any(|a| a.unknown) {
                        self.set_dynamic("`watch` of a command only known at run time");
                    }
                    if depth < MAX_DEPTH {
                        self.source(&text, depth + 1);
                    }
                }
            }
            Shape::Opaque => {
                // Sandboxes, tracers and the like run their trailing words as a command, but
                // their options are too varied to parse: list every plausible start.
                let starts: Vec<usize> = (0..args.len())
                    .filter(|&i| {
                        !args[i].text.starts_with('-')
                            && (i == 0
                                || !args[i - 1].text.starts_with("--")
                                || args[i - 1].text.contains('='))
                    })
                    .take(3)
                    .collect();
                for start in starts {
                    self.run_fields(
                        args[start..].to_vec(),
                        redirects.to_vec(),
                        input,
                        &inner_wrappers,
                        depth + 1,
                    );
                }
            }
            Shape::Plain if matches!(name, "ssh" | "slogin") => {
                // `ssh host 'rm -rf ~'`: the remote shell runs the words, so judge them too.
                if let Some(start) = wrappers::ssh_command(args) {
                    let text = joined(&args[start..]);
                    if depth < MAX_DEPTH {
                        self.source(&text, depth + 1);
                    }
                }
            }
            Shape::Plain => {}
        }
    }

    /// A command string given to a shell (`bash -c`, `su -c`).
    fn code_string(&mut self, name: &str, code: &Field, depth: usize) {
        if code.unknown {
            self.set_dynamic(format!("`{name}` runs code only known at run time"));
        }
        if depth < MAX_DEPTH {
            self.source(&code.text, depth + 1);
        } else {
            self.set_dynamic("the command nests shells too deeply to follow");
        }
    }

    fn shell(&mut self, name: &str, args: &[Field], input: &Input, depth: usize) {
        match wrappers::shell_invocation(name, args) {
            wrappers::ShellRun::Code(index) => self.code_string(name, &args[index], depth),
            wrappers::ShellRun::Opaque => {
                self.set_dynamic(format!("`{name}` is given code this analysis cannot read"))
            }
            wrappers::ShellRun::Script(index)
                if is_stdin_path(&args[index].text) && !args[index].procsub =>
            {
                self.shell_stdin(name, input, depth)
            }
            wrappers::ShellRun::Script(index) => {
                if args[index].procsub {
                    self.set_dynamic(format!(
                        "`{name}` runs the output of a process substitution"
                    ));
                }
            }
            wrappers::ShellRun::Stdin => self.shell_stdin(name, input, depth),
        }
    }

    fn shell_stdin(&mut self, name: &str, input: &Input, depth: usize) {
        if let Some((text, unknown)) = &input.text {
            if *unknown {
                self.set_dynamic(format!("`{name}` is fed code only known at run time"));
            }
            if depth < MAX_DEPTH {
                self.source(text, depth + 1);
            }
        } else if input.piped {
            self.set_dynamic(format!("a pipe feeds code into the shell `{name}`"));
        } else if input.file {
            self.set_dynamic(format!("`{name}` runs the commands in a file it reads"));
        }
    }

    fn interpreter(&mut self, name: &str, args: &[Field], input: &Input) {
        match wrappers::interpreter_invocation(name, args) {
            wrappers::InterpreterRun::Code => {
                self.set_dynamic(format!("`{name}` is given code to run"))
            }
            wrappers::InterpreterRun::Script(index)
                if is_stdin_path(&args[index].text) && !args[index].procsub =>
            {
                self.set_dynamic(format!(
                    "`{name}` runs a program it reads from `{}`",
                    args[index].text
                ))
            }
            wrappers::InterpreterRun::Script(index) => {
                if args[index].procsub {
                    self.set_dynamic(format!(
                        "`{name}` runs the output of a process substitution"
                    ));
                }
            }
            wrappers::InterpreterRun::Stdin => {
                if input.piped || input.text.is_some() {
                    self.set_dynamic(format!("code is piped into the interpreter `{name}`"));
                }
            }
            wrappers::InterpreterRun::Nothing => {}
        }
    }

    /// Expands a word into fields (for arguments and the program).
    fn expand(&mut self, raw: &str, depth: usize) -> Vec<Field> {
        words::expand(self, raw, depth)
    }

    /// Expands a word as one string, as in an assignment or redirection target.
    fn expand_quoted(&mut self, raw: &str, depth: usize) -> Field {
        words::expand_joined(self, raw, depth)
    }

    fn expand_heredoc(&mut self, raw: &str, depth: usize) -> Field {
        words::expand_heredoc(self, raw, depth)
    }

    /// Walks substitutions in text that is not a word (arithmetic, parameter operands).
    /// Adds the commands `text` would run as a command list, when it parses as one.
    fn subshell_reading(&mut self, text: &str, depth: usize) {
        if depth >= MAX_DEPTH {
            return;
        }
        let options = words::parser_options();
        let mut parser = brush_parser::Parser::new(std::io::Cursor::new(text.as_bytes()), options);
        if parser.parse_program().is_ok() {
            self.source(text, depth + 1);
        }
    }

    fn scan_text(&mut self, text: &str, depth: usize) {
        if text.contains("$(") || text.contains('`') || text.contains("<(") {
            words::expand_heredoc(self, text, depth);
        }
    }

    /// Runs a command substitution: lists what it runs and returns its output when it is a
    /// plain `echo`/`printf` of static words.
    fn substitution(&mut self, code: &str, depth: usize) -> Option<String> {
        if depth >= MAX_DEPTH {
            self.set_dynamic("the command nests substitutions too deeply to follow");
            return None;
        }
        let before = self.commands.len();
        let was_dynamic = self.dynamic.is_some();
        self.forking += 1;
        self.source(code, depth + 1);
        self.forking -= 1;
        let new = &self.commands[before..];
        if was_dynamic != self.dynamic.is_some() || new.len() != 1 {
            return None;
        }
        static_output(&new[0])
    }

    fn lookup(&self, name: &str) -> Option<Option<&str>> {
        self.vars.get(name).map(|v| v.as_deref())
    }

    /// Looks for a cycle of function calls that forks or branches.
    fn find_fork_bomb(&self) -> Option<String> {
        let index: HashMap<&str, usize> = self
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_str(), i))
            .collect();
        let n = self.functions.len();
        if n == 0 {
            return None;
        }
        // reach[i][j]: j is callable from i.
        let mut reach = vec![vec![false; n]; n];
        for (i, f) in self.functions.iter().enumerate() {
            for (callee, _) in &f.calls {
                if let Some(&j) = index.get(callee.as_str()) {
                    reach[i][j] = true;
                }
            }
        }
        for k in 0..n {
            let via = reach[k].clone();
            for row in reach.iter_mut() {
                if row[k] {
                    for (cell, &onward) in row.iter_mut().zip(&via) {
                        *cell |= onward;
                    }
                }
            }
        }
        for (i, f) in self.functions.iter().enumerate() {
            if !reach[i][i] {
                continue;
            }
            // Calls from f back into its own cycle.
            let cyclic: Vec<bool> = f
                .calls
                .iter()
                .filter_map(|(callee, forks)| {
                    index
                        .get(callee.as_str())
                        .filter(|&&j| reach[j][i])
                        .map(|_| *forks)
                })
                .collect();
            if cyclic.iter().any(|&forks| forks) || cyclic.len() >= 2 {
                return Some(f.name.clone());
            }
        }
        None
    }
}

impl Analyzer {
    /// A variable assigned by the command (bare, as a prefix, or through `export`/`declare`).
    fn assigned(&mut self, name: &str, value: Option<&str>) {
        if wrappers::changes_what_runs(name) {
            self.set_dynamic(format!(
                "the command sets `{name}`, which changes what programs run or load"
            ));
        }
        // `x='a[$(cmd)]'` runs `cmd` when `x` is used in arithmetic: judge it now.
        if let Some(value) = value
            && (value.contains("$(") || value.contains('`'))
        {
            self.scan_text(value, 0);
        }
    }

    /// `env NAME=value -C DIR CMD`: the assignments and the directory.
    fn env_wrapper(&mut self, args: &[Field], chdir: &mut Option<String>) {
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].text.as_str();
            if let Some((name, value)) = arg.split_once('=')
                && wrappers::is_assignment(arg)
            {
                self.assigned(name, Some(value));
            } else if arg == "-C" || arg == "--chdir" {
                *chdir = args.get(i + 1).map(|a| a.text.clone());
                i += 1;
            } else if let Some(dir) = arg
                .strip_prefix("--chdir=")
                .or_else(|| arg.strip_prefix("-C").filter(|d| !d.is_empty()))
            {
                *chdir = Some(dir.to_string());
            }
            i += 1;
        }
    }

    /// Builtins that bind names, define code for later, or change how later words are read:
    /// their effect is only known when the command runs, so the command is asked (and any
    /// code they hold is judged now).
    fn builtin(&mut self, name: &str, args: &[Field], input: &Input, depth: usize) {
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        let flags = |letter: char| {
            texts
                .iter()
                .any(|a| a.starts_with(['-', '+']) && !a.starts_with("--") && a.contains(letter))
        };
        let operands = || texts.iter().filter(|a| !a.starts_with('-')).copied();
        let ask = |an: &mut Analyzer, why: String| an.set_dynamic(why);
        match name {
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                if flags('n') && name != "export" {
                    ask(
                        self,
                        format!("`{name} -n` makes a name refer to another variable"),
                    );
                }
                // `export -f f` / `declare -fx f` hands a function to every child bash;
                // `declare -f f` only prints it.
                let exports = name == "export" || flags('x');
                if flags('f') && exports && args.iter().any(|a| !a.text.starts_with('-')) {
                    ask(
                        self,
                        format!("`{name} -f` exports shell functions to the programs it starts"),
                    );
                }
                for arg in args {
                    if let Some((var, value)) = arg.text.split_once('=')
                        && wrappers::is_assignment(&arg.text)
                    {
                        let value = (!arg.unknown).then(|| value.to_string());
                        self.assigned(var, value.as_deref());
                        if flags('i') {
                            self.scan_text(value.as_deref().unwrap_or(""), depth);
                        }
                        self.vars.insert(var.to_string(), value);
                    }
                }
            }
            "printf" if texts.first().is_some_and(|a| a.starts_with("-v")) => {
                let var = texts[0].strip_prefix("-v").filter(|v| !v.is_empty());
                let var = var.or(texts.get(1).copied()).unwrap_or("");
                self.vars.insert(var.to_string(), None);
                ask(
                    self,
                    format!("`printf -v {var}` assigns a variable a computed value"),
                );
            }
            "wait" if !flags('p') => {}
            "read" | "readarray" | "mapfile" | "getopts" | "wait" | "select" => {
                for var in operands() {
                    if wrappers::is_name(var) {
                        self.vars.insert(var.to_string(), None);
                    }
                }
                for (i, a) in texts.iter().enumerate() {
                    if (matches!(*a, "-p" | "-a" | "-u") && name != "read" || *a == "-a")
                        && let Some(var) = texts.get(i + 1)
                    {
                        self.vars.insert(var.to_string(), None);
                    }
                }
                ask(
                    self,
                    format!("`{name}` assigns variables values only known when the command runs"),
                );
            }
            "let" => {
                for text in &texts {
                    self.scan_text(text, depth);
                }
            }
            "unset" => {
                for var in operands() {
                    self.vars.insert(var.to_string(), None);
                }
            }
            "set"
                if texts.iter().any(|a| *a == "--" || *a == "-")
                    || texts.iter().enumerate().any(|(i, a)| {
                        // `set -euo pipefail`: a word after an `o` cluster is an option's name.
                        !(a.starts_with(['-', '+'])
                            || i > 0
                                && texts[i - 1].starts_with(['-', '+'])
                                && texts[i - 1].ends_with('o'))
                    }) =>
            {
                ask(self, "`set` replaces the positional parameters".into());
            }
            "alias" => {
                for arg in &texts {
                    if let Some((alias, value)) = arg.split_once('=') {
                        if depth < MAX_DEPTH {
                            self.source(value, depth + 1);
                        }
                        ask(self, format!("the command defines the alias `{alias}`"));
                    }
                }
            }
            "trap" => {
                if let Some(code) = args.iter().find(|a| !a.text.starts_with('-')) {
                    if code.unknown {
                        ask(self, "`trap` is given code only known at run time".into());
                    }
                    if depth < MAX_DEPTH {
                        self.source(&code.text, depth + 1);
                    }
                    ask(
                        self,
                        "`trap` sets code to run later, on a signal or at exit".into(),
                    );
                }
            }
            "hash" if flags('p') => ask(self, "`hash -p` changes which program a name runs".into()),
            "enable" if !texts.is_empty() => {
                ask(self, "`enable` loads or switches off shell builtins".into())
            }
            "shopt" if flags('s') || flags('u') => ask(
                self,
                "`shopt` changes how the shell reads later words".into(),
            ),
            "exec" if operands().next().is_none() => ask(
                self,
                "`exec` without a command changes the shell's own files for the rest of the \
                 command"
                    .into(),
            ),
            "cd" | "pushd" => {
                let relative = operands()
                    .next()
                    .is_some_and(|d| !d.starts_with(['/', '.', '~', '$']));
                if relative && self.vars.contains_key("CDPATH") {
                    ask(self, "`cd` searches the `CDPATH` the command set".into());
                }
            }
            "ed" | "red" | "ex" if input.piped || input.text.is_some() || input.file => ask(
                self,
                format!("`{name}` runs the editor commands it reads, which can run programs"),
            ),
            _ => {}
        }
    }
}

/// Words put back together as the text a shell would be given (`eval`, `watch`, `ssh`).
fn joined(words: &[Field]) -> String {
    words
        .iter()
        .map(|a| a.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `/dev/stdin`, `/dev/fd/N`, `/proc/self/fd/N`: a script that is the command's own input.
fn is_stdin_path(text: &str) -> bool {
    text == "/dev/stdin"
        || text.starts_with("/dev/fd/")
        || (text.starts_with("/proc/") && text.contains("/fd/"))
}

/// What a command prints when it is a plain `echo` or `printf` of static words.
fn static_output(c: &SimpleCommand) -> Option<String> {
    let dynamic = |a: &String| a.contains('$') || a.contains('`');
    if !c.wrappers.is_empty() || !c.redirects.is_empty() || c.args.iter().any(dynamic) {
        return None;
    }
    match c.program.as_str() {
        "echo" => {
            let args: Vec<&str> = c
                .args
                .iter()
                .map(String::as_str)
                .skip_while(|a| matches!(*a, "-n" | "-e" | "-E" | "-ne" | "-en"))
                .collect();
            Some(args.join(" "))
        }
        "printf" => match c.args.split_first() {
            Some((format, rest)) if format == "%s" || format == "%s\\n" => Some(rest.join("")),
            Some((format, [])) if !format.contains(['%', '\\']) => Some(format.clone()),
            _ => None,
        },
        _ => None,
    }
}

enum Item<'a> {
    Word(&'a ast::Word),
    Part(&'a ast::CommandPrefixOrSuffixItem),
}

#[cfg(test)]
mod tests;
