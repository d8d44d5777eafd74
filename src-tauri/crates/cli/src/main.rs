//! `osprey`: the headless shell of Osprey's core, for power users, scripts and tests. Every tool
//! call goes through the same registry, policy and safeguard as the desktop app.

mod app;
mod chat;
#[cfg(unix)]
mod daemon;
mod mcp;
mod napp;
mod prompt;
mod see;
mod session;
mod store;
mod tools;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use osprey_core::{Core, CoreOptions, PolicyOverride};
use osprey_tools::{AskMode, CheckOutcome, Level, ToolContext};
use osprey_types::{ErrorCode, Origin, ToolResult};
use serde_json::Value;

/// Exit code for a tool that ran and failed.
pub(crate) const EXIT_TOOL_FAILED: u8 = 1;
/// Exit code for a call a security layer refused (policy, origin, approval, safeguard, SSRF,
/// sensitive path) or could not accept (unknown tool, invalid input).
const EXIT_REFUSED: u8 = 3;

#[derive(Parser, Debug)]
#[command(
    name = "osprey",
    version,
    about = "Osprey, a desktop AI agent: headless command line"
)]
struct Cli {
    /// Where Osprey keeps its data (default: $OSPREY_DATA_DIR, else the platform data dir).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one tool call through the registry: `osprey tool shell '{"command": "ls"}'`; an MCP
    /// server's tool as `mcp__<server>__<tool>`, an installed app's by its name.
    Tool(ToolArgs),
    /// Print every tool's name, description and JSON Schema: the built-in ones, the configured
    /// MCP servers' (`mcp__<server>__<tool>`) and the installed apps'.
    Tools {
        /// One JSON array instead of readable text.
        #[arg(long)]
        json: bool,
        /// How long to wait for the MCP servers to connect and the apps to start, in seconds.
        #[arg(long, default_value_t = 10, value_name = "SECONDS")]
        wait: u64,
    },
    /// Read and write settings.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print the version, data directory and tools.
    Info,
    /// The `os` tool: `osprey os status` says which capabilities work here and why not;
    /// `osprey os mail-password <account>` stores a mail account's password.
    Os {
        #[command(subcommand)]
        action: OsAction,
    },
    /// Talk to the agent: `osprey chat -p "..."` for one turn, `osprey chat` interactively.
    Chat(chat::ChatArgs),
    /// Chat sessions: `osprey session list | show <id> | status <id> | clear <id> | delete <id>`.
    Session(session::SessionArgs),
    /// Snapshot a window or the screen: print its elements with IDs, write the annotated image.
    See(see::SeeArgs),
    /// Publish apps: `osprey napp keygen | pack <dir> | sign --key | verify --key`.
    Napp(napp::NappArgs),
    /// Installed apps: `osprey app install <file.napp | id> | list | remove | sideload <dir> | ...`.
    App(app::AppArgs),
    /// Run Osprey without a window: supervise the installed apps and answer `osprey app
    /// launch | stop` from other terminals, until SIGTERM or Ctrl-C.
    #[cfg(unix)]
    Daemon,
    /// The app store server: `osprey store serve [--addr 127.0.0.1:8787] [--dir DIR]`.
    Store(store::StoreArgs),
    /// MCP: `osprey mcp serve` gives an MCP client Osprey's tools over stdio; `osprey mcp list`
    /// connects to the servers in `mcp.servers` and shows their tools.
    Mcp(mcp::McpArgs),
}

#[derive(Subcommand, Debug)]
enum OsAction {
    /// Each capability of the `os` tool: available or not, and why.
    Status {
        /// One JSON array instead of readable text.
        #[arg(long)]
        json: bool,
    },
    /// Store the password of a mail account of the `os.mail` setting, read as one line from
    /// standard input (never an argument, so it stays out of shell history and `ps`); it goes
    /// to the system keyring, else a file only you can read.
    MailPassword {
        /// The account's `name` in `os.mail`.
        account: String,
        /// Forget the stored password instead.
        #[arg(long)]
        remove: bool,
    },
}

#[derive(Args, Debug)]
struct ToolArgs {
    /// The tool's name (`file`, `shell`, `web`, ...).
    name: String,
    /// The input object as JSON; `-` reads it from standard input.
    #[arg(default_value = "{}")]
    input: String,
    /// Approval policy level for this run.
    #[arg(long, value_parser = parse_level)]
    policy: Option<Level>,
    /// When to ask for approval in this run.
    #[arg(long, value_parser = parse_ask)]
    ask: Option<AskMode>,
    /// The origin the call claims (origin rules apply to it).
    #[arg(long, default_value = "user", value_parser = parse_origin)]
    origin: Origin,
    /// Session id (answers "always for this session" and session grants are kept per session).
    #[arg(long)]
    session: Option<String>,
    /// Print `{content, is_error, code}` as JSON.
    #[arg(long)]
    json: bool,
    /// Run every step except execution and print the decision: allow, ask, or the refusal.
    #[arg(long)]
    check: bool,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// How long to wait for the tool's MCP server to connect or its app to start, in seconds.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    wait: u64,
}

#[derive(Subcommand, Debug)]
enum ConfigAction {
    /// Print a setting's JSON value.
    Get { key: String },
    /// Set a setting to a JSON value (a bare word is taken as a string). Provider settings take
    /// dotted keys: `provider.default openai`, `provider.openai.base_url URL`,
    /// `provider.anthropic.model NAME`, `provider.anthropic.api_key -` (the key from standard
    /// input; it goes to the system keyring, else a private file, never the settings table).
    /// Calendar and contacts accounts likewise: `dav.home.url https://dav.example.com/`,
    /// `dav.home.username me`, `dav.home.kind dav|caldav|carddav`, `dav.home.password -`.
    /// `store.token -`: your app store token, kept like a key and passed only to apps holding
    /// the `user:token` permission.
    Set { key: String, value: String },
    /// Remove a setting.
    Unset { key: String },
    /// Show the model providers: the default, each one's base URL and model, whether a key is
    /// set (never the key), and whether a local Ollama answers.
    Providers {
        #[arg(long)]
        json: bool,
    },
}

fn parse_level(s: &str) -> Result<Level, String> {
    s.parse()
}
fn parse_ask(s: &str) -> Result<AskMode, String> {
    s.parse()
}
fn parse_origin(s: &str) -> Result<Origin, String> {
    s.parse()
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OSPREY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // No colour codes in logs a script captures, nor for people who ask for none.
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("osprey: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("osprey: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Tool(args) => tool(cli.data_dir, args).await,
        Command::Tools { json, wait } => {
            let core = open(cli.data_dir, None, None)?;
            tools::list(&core, json, Duration::from_secs(wait)).await
        }
        Command::Config { action } => {
            let core = open(cli.data_dir, None, None)?;
            let settings = core.settings();
            match action {
                ConfigAction::Get { key } if key.ends_with(".api_key") => {
                    anyhow::bail!(
                        "keys are never printed; `osprey config providers` shows which are set"
                    );
                }
                ConfigAction::Get { key }
                    if key.starts_with("dav.") && key.ends_with(".password") =>
                {
                    anyhow::bail!("passwords are never printed");
                }
                ConfigAction::Get { key } if key == osprey_core::accounts::STORE_TOKEN => {
                    anyhow::bail!("the store token is never printed");
                }
                ConfigAction::Set { key, value } if key == osprey_core::accounts::STORE_TOKEN => {
                    let token = value_or_stdin(value)?;
                    if token.trim().is_empty() {
                        anyhow::bail!(
                            "no token given: pass it on stdin (`osprey config set store.token -`)"
                        );
                    }
                    if let Some(location) = core.set_store_token(Some(&token)).await? {
                        eprintln!("osprey: the store token is stored in {location}");
                    }
                    tell_running(&core, osprey_core::settings::STORE_TOKEN_CHANGED).await;
                }
                ConfigAction::Unset { key } if key == osprey_core::accounts::STORE_TOKEN => {
                    core.set_store_token(None).await?;
                    tell_running(&core, osprey_core::settings::STORE_TOKEN_CHANGED).await;
                }
                ConfigAction::Set { key, value } if is_dav_field(&key) => {
                    let value = value_or_stdin(value)?;
                    if let osprey_core::dav_settings::DavSettingWritten::Password(location) =
                        core.set_dav_setting(&key, &value)?
                    {
                        eprintln!("osprey: the password is stored in {location}");
                    }
                }
                ConfigAction::Unset { key } if is_dav_field(&key) => {
                    core.set_dav_setting(&key, "")?;
                }
                ConfigAction::Set { key, value } if key.starts_with("provider.") => {
                    let value = value_or_stdin(value)?;
                    if let osprey_core::agent::ProviderSettingWritten::Secret(location) =
                        core.set_provider_setting(&key, &value)?
                    {
                        eprintln!("osprey: the key is stored in {location}");
                    }
                }
                ConfigAction::Unset { key } if key.starts_with("provider.") => {
                    core.set_provider_setting(&key, "")?;
                }
                ConfigAction::Providers { json } => chat::print_providers(&core, json).await?,
                ConfigAction::Get { key } => match settings.get(&key)? {
                    Some(value) => println!("{value}"),
                    None => {
                        eprintln!("osprey: `{key}` is not set");
                        return Ok(ExitCode::from(EXIT_TOOL_FAILED));
                    }
                },
                ConfigAction::Set { key, value } => {
                    let parsed =
                        serde_json::from_str::<Value>(&value).unwrap_or(Value::String(value));
                    osprey_core::settings::validate(&key, &parsed)?;
                    settings.set(&key, &parsed)?;
                    tell_running(&core, &key).await;
                }
                ConfigAction::Unset { key } => {
                    settings.remove(&key)?;
                    tell_running(&core, &key).await;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Chat(args) => chat::run(cli.data_dir, args).await,
        Command::See(args) => see::run(cli.data_dir, args).await,
        Command::Session(args) => session::run(cli.data_dir, args).await,
        Command::Napp(args) => napp::run(args),
        Command::App(args) => app::run(cli.data_dir, args).await,
        Command::Store(args) => store::run(cli.data_dir, args).await,
        #[cfg(unix)]
        Command::Daemon => daemon::run(cli.data_dir).await,
        Command::Mcp(args) => mcp::run(cli.data_dir, args).await,
        Command::Os {
            action: OsAction::MailPassword { account, remove },
        } => {
            let core = open(cli.data_dir, None, None)?;
            let password = if remove {
                String::new()
            } else {
                read_secret_line(&format!("password of the mail account {account}: "))?
            };
            let stored = core.set_mail_password(&account, &password)?;
            match stored.location {
                Some(location) => eprintln!("osprey: the password is stored in {location}"),
                None => eprintln!("osprey: the password of {account} is forgotten"),
            }
            if !stored.account_configured {
                eprintln!(
                    "osprey: note: `os.mail` has no account named {account} yet; add it with \
                     `osprey config set os.mail '{{\"accounts\": [...]}}'` (see `osprey os status`)"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Os {
            action: OsAction::Status { json },
        } => {
            let status = osprey_core::os_status(cli.data_dir.as_deref()).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                for capability in status {
                    println!(
                        "{:<13} {:<13} {:<12} {}",
                        capability.capability,
                        capability.category.as_str(),
                        if capability.available {
                            "available"
                        } else {
                            "unavailable"
                        },
                        capability.detail
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Info => {
            let core = open(cli.data_dir, None, None)?;
            println!("{}", serde_json::to_string_pretty(&core.info())?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `value`, or standard input (trimmed) when it is `-`: secrets stay out of the shell history.
fn value_or_stdin(value: String) -> anyhow::Result<String> {
    if value != "-" {
        return Ok(value);
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .context("reading the value from standard input")?;
    Ok(text.trim().to_string())
}

/// `dav.<name>` or `dav.<name>.<field>`: one calendar/contacts account field (`dav.accounts` is
/// the whole setting, taken as JSON like any other).
fn is_dav_field(key: &str) -> bool {
    key.strip_prefix("dav.")
        .is_some_and(|rest| !rest.is_empty() && rest != "accounts")
}

/// One line from standard input (a prompt on the terminal first), without its line ending;
/// empty is refused.
fn read_secret_line(prompt: &str) -> anyhow::Result<String> {
    use std::io::{BufRead, IsTerminal};
    if std::io::stdin().is_terminal() {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading standard input")?;
    let secret = line.trim_end_matches(['\r', '\n']).to_string();
    if secret.is_empty() {
        anyhow::bail!("no password on standard input (use --remove to forget one)");
    }
    Ok(secret)
}

/// A desktop or daemon running on this data folder puts a setting just stored in force at once
/// (over the control socket); with none running there is nothing to tell.
async fn tell_running(core: &Core, key: &str) {
    #[cfg(unix)]
    {
        let request = serde_json::json!({"op": "settings.applied", "key": key});
        match osprey_core::control::request(core.data_dir(), &request).await {
            Ok(answer) if answer["ok"] == true => {
                eprintln!("osprey: the running Osprey applied `{key}`");
            }
            Ok(answer) => eprintln!(
                "osprey: stored; the running Osprey did not apply it ({}): restart it",
                answer["message"].as_str().unwrap_or("no reason given")
            ),
            Err(osprey_core::control::ControlError::NotRunning(_)) => {}
            Err(error) => eprintln!("osprey: stored; {error}: restart the running Osprey"),
        }
    }
    #[cfg(not(unix))]
    let _ = (core, key);
}

fn open(
    data_dir: Option<PathBuf>,
    level: Option<Level>,
    ask: Option<AskMode>,
) -> anyhow::Result<Core> {
    Core::open(CoreOptions {
        data_dir,
        policy: Some(PolicyOverride { level, ask }),
        ..CoreOptions::default()
    })
}

async fn tool(data_dir: Option<PathBuf>, args: ToolArgs) -> anyhow::Result<ExitCode> {
    let input: Value = if args.input == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("reading the input from standard input")?;
        parse_input(&text)?
    } else {
        parse_input(&args.input)?
    };
    let mut input = input;
    // This process ends with the call, and a command yielded into a session would end with it:
    // a shell command run from here waits to its end (within the timeout) unless told otherwise.
    if args.name == "shell"
        && let Some(fields) = input.as_object_mut()
    {
        fields.entry("yield_ms").or_insert(Value::from(0));
    }
    let core = open(data_dir, args.policy, args.ask)?;
    let reached = match tools::reach(&core, &args.name, Duration::from_secs(args.wait)).await? {
        tools::Reach::Ready(reached) => reached,
        tools::Reach::Failed(code, message) => {
            let result = ToolResult::error(code, message);
            print_result(&result, args.json)?;
            return Ok(exit_code(&result));
        }
    };
    let code = run_tool(&core, args, input).await;
    reached.release().await;
    code
}

/// Runs (or with `--check`, judges) the call once its tool is in the registry.
async fn run_tool(core: &Core, args: ToolArgs, input: Value) -> anyhow::Result<ExitCode> {
    let mut ctx = ToolContext::new(args.origin, Duration::from_secs(args.timeout));
    ctx.session_id = Some(args.session.unwrap_or_else(|| "cli".to_string()));

    if args.check {
        let mut outcome = core.check_tool(&ctx, &args.name, input).await;
        if let CheckOutcome::Refused {
            code: ErrorCode::UnknownTool,
            message,
        } = &mut outcome
        {
            message.push_str(&tools::elsewhere(core, &args.name).await);
        }
        if args.json {
            println!("{}", serde_json::to_string(&outcome)?);
        } else {
            match &outcome {
                CheckOutcome::Allow { reason } => println!("allow ({reason})"),
                CheckOutcome::Ask { reason } => println!("ask: {reason}"),
                CheckOutcome::HandledByHook => println!("handled by a hook"),
                CheckOutcome::Refused { code, message } => println!("refused {code}: {message}"),
            }
        }
        return Ok(match outcome {
            CheckOutcome::Refused { .. } => ExitCode::from(EXIT_REFUSED),
            _ => ExitCode::SUCCESS,
        });
    }

    ctx.approver = Some(Arc::new(prompt::TerminalApprover));
    let mut result = core.call_tool_with(&ctx, &args.name, input).await;
    if result.code == Some(ErrorCode::UnknownTool) {
        let more = tools::elsewhere(core, &args.name).await;
        result = ToolResult::error(ErrorCode::UnknownTool, result.text_content() + &more);
    }
    print_result(&result, args.json)?;
    Ok(exit_code(&result))
}

fn parse_input(text: &str) -> anyhow::Result<Value> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(text).map_err(|err| {
        anyhow::anyhow!("the tool input is not valid JSON ({err}); pass an object such as '{{\"action\": \"read\", \"path\": \"README.md\"}}'")
    })
}

fn print_result(result: &ToolResult, json: bool) -> anyhow::Result<()> {
    if json {
        let value = serde_json::json!({
            "content": result.content,
            "is_error": result.is_error,
            "code": result.code,
        });
        println!("{value}");
        return Ok(());
    }
    let text = result.text_content();
    if result.is_error {
        let code = result
            .code
            .map(|c| c.to_string())
            .unwrap_or_else(|| "error".into());
        eprintln!("osprey: {code}: {text}");
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            out.write_all(b"\n")?;
        }
        let images = result
            .content
            .iter()
            .filter(|b| matches!(b, osprey_types::ContentBlock::Image { .. }))
            .count();
        if images > 0 {
            eprintln!("({images} image block(s) not shown; use --json to get them)");
        }
    }
    Ok(())
}

fn exit_code(result: &ToolResult) -> ExitCode {
    match (result.is_error, result.code) {
        (false, _) => ExitCode::SUCCESS,
        (true, Some(code)) if code.is_refusal() => ExitCode::from(EXIT_REFUSED),
        (true, Some(ErrorCode::UnknownTool | ErrorCode::InvalidInput)) => {
            ExitCode::from(EXIT_REFUSED)
        }
        (true, _) => ExitCode::from(EXIT_TOOL_FAILED),
    }
}
