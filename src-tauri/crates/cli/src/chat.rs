//! `osprey chat`: talk to the agent from the terminal. With `-p "..."` it runs one turn for
//! scripts (the final answer on stdout, tool activity on stderr, exit code says how it ended);
//! without, it is interactive (replies stream to stdout, Ctrl-C stops the current turn, an empty
//! line or end of input quits). Approvals are asked on the terminal either way.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use osprey_core::Core;
use osprey_core::agent::{
    AgentEvent, ChatChoice, ProviderKind, Runner, TurnOutcome, TurnRequest, TurnStop,
};
use osprey_tools::{AskMode, Level};
use osprey_types::ToolResult;
use tokio::sync::mpsc;

use crate::prompt::TerminalApprover;

/// Exit code when the model could not be reached or failed (auth, rate limit, network, ...).
const EXIT_PROVIDER_FAILED: u8 = 2;

#[derive(Args, Debug)]
pub struct ChatArgs {
    /// Run one turn with this message and print the final answer (for scripts).
    #[arg(short = 'p', long = "print", value_name = "MESSAGE")]
    prompt: Option<String>,
    /// Which API to speak: anthropic, openai (any OpenAI-compatible server) or ollama. Default:
    /// anthropic when ANTHROPIC_API_KEY is set, else openai when OPENAI_API_KEY is set, else
    /// ollama.
    #[arg(long, value_parser = parse_provider)]
    provider: Option<ProviderKind>,
    /// The provider's base URL (OpenAI-compatible servers: up to `/v1`).
    #[arg(long)]
    base_url: Option<String>,
    /// The model name.
    #[arg(long)]
    model: Option<String>,
    /// Approval policy level for this run.
    #[arg(long, value_parser = crate::parse_level)]
    policy: Option<Level>,
    /// When to ask for approval in this run.
    #[arg(long, value_parser = crate::parse_ask)]
    ask: Option<AskMode>,
    /// Continue (or name) this session; default a new one.
    #[arg(long)]
    session: Option<String>,
    /// Chat through an installed app that provides a gateway (its id; default: the
    /// `provider.app` setting); starts the installed apps for the chat and stops them after.
    #[arg(long, value_name = "APP_ID", conflicts_with_all = ["provider", "base_url"])]
    app: Option<String>,
    /// Model calls per turn before stopping.
    #[arg(long)]
    max_steps: Option<u32>,
}

fn parse_provider(s: &str) -> Result<ProviderKind, String> {
    s.parse()
}

fn new_session_id() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("chat-{ms}")
}

pub async fn run(data_dir: Option<PathBuf>, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let core: Core = crate::open(data_dir, args.policy, args.ask)?;
    let options = core
        .resolve_chat(&ChatChoice {
            provider: args.provider,
            app: args.app.clone(),
            base_url: args.base_url.clone(),
            model: args.model.clone(),
            max_steps: args.max_steps,
        })
        .await?;
    // A gateway app is the model: the apps run for the length of the chat.
    // The configured MCP servers connect in the background; their tools join as they come. The
    // apps need the data folder to themselves: another Osprey holding it is refused here.
    let services = core
        .start(osprey_core::Start::chat(options.gateway_app.is_some()))
        .await?;
    let runner = core.chat_runner(&options)?;
    let session = args.session.clone().unwrap_or_else(new_session_id);
    let code = match args.prompt {
        Some(message) => one_shot(&runner, &session, message).await,
        None => interactive(&runner, &session).await,
    };
    // Stdio MCP servers and apps are child processes: stop them rather than leave them to exit.
    services.shutdown().await;
    code
}

/// `osprey config providers`: each provider's settings and whether a key is set, never the key.
pub async fn print_providers(core: &Core, json: bool) -> anyhow::Result<()> {
    let overview = core.provider_overview().await;
    if json {
        println!("{}", serde_json::to_string_pretty(&overview)?);
        return Ok(());
    }
    for row in &overview.providers {
        let key = match row.key.as_str() {
            "environment" => "from its variable",
            "not_needed" => "not needed",
            "not_set" => "not set",
            other => other,
        };
        println!(
            "{:<10} model {:<24} key {:<17} base URL {}",
            row.provider,
            row.model,
            key,
            row.base_url.as_deref().unwrap_or("(default)"),
        );
    }
    match (&overview.chat_uses, &overview.chat_problem) {
        (Some(uses), _) => println!("chat uses: {uses}"),
        (None, Some(problem)) => println!("chat uses: nothing yet ({problem})"),
        (None, None) => println!("chat uses: nothing yet"),
    }
    Ok(())
}

/// A turn that failed: the agent's error code (`auth`, `rate_limited`, `network`, ...) and
/// message.
struct TurnFailure {
    code: &'static str,
    message: String,
}

/// Runs one turn, printing events as they come. Text goes to stdout only when `stream_text`.
async fn turn(
    runner: &Runner,
    session: &str,
    message: String,
    stream_text: bool,
    cancel_on_interrupt: bool,
) -> Result<TurnOutcome, TurnFailure> {
    let (events, mut received) = mpsc::unbounded_channel();
    let mut request = TurnRequest::new(session, message);
    request.approver = Some(Arc::new(TerminalApprover));
    request.events = Some(events);
    let cancel = request.cancel.clone();
    let running = runner.clone();
    let mut task = tokio::spawn(async move { running.run_turn(request).await });
    let printer = tokio::spawn(async move {
        while let Some(event) = received.recv().await {
            print_event(&event, stream_text);
        }
    });
    let outcome = if cancel_on_interrupt {
        tokio::select! {
            outcome = &mut task => outcome,
            _ = tokio::signal::ctrl_c() => {
                cancel.cancel();
                eprintln!("\n(stopping...)");
                task.await
            }
        }
    } else {
        task.await
    };
    let _ = printer.await;
    match outcome {
        Ok(Ok(outcome)) => Ok(outcome),
        Ok(Err(error)) => Err(TurnFailure {
            code: error.code(),
            message: error.to_string(),
        }),
        Err(join) => Err(TurnFailure {
            code: "internal",
            message: format!("the turn stopped unexpectedly: {join}"),
        }),
    }
}

fn print_event(event: &AgentEvent, stream_text: bool) {
    match event {
        AgentEvent::TextDelta(text) if stream_text => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        AgentEvent::ToolCallStarted { name, input, .. } => {
            eprintln!("\n[tool] {name} {}", summarize(input));
        }
        AgentEvent::ToolCallFinished { name, result, .. } => {
            eprintln!("[tool] {name}: {}", result_line(result));
        }
        _ => {}
    }
}

fn summarize(input: &serde_json::Value) -> String {
    let mut text = input.to_string();
    if text.len() > 200 {
        let cut = (0..=200)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    text
}

fn result_line(result: &ToolResult) -> String {
    let text = result.text_content();
    let first = text.lines().next().unwrap_or_default();
    let first = summarize(&serde_json::Value::String(first.to_string()));
    match (result.is_error, result.code) {
        (true, Some(code)) => format!("error {code}: {first}"),
        (true, None) => format!("error: {first}"),
        (false, _) => format!("ok ({} bytes) {first}", text.len()),
    }
}

async fn one_shot(runner: &Runner, session: &str, message: String) -> anyhow::Result<ExitCode> {
    match turn(runner, session, message, false, false).await {
        Ok(outcome) => {
            let mut out = std::io::stdout().lock();
            out.write_all(outcome.text.as_bytes())?;
            if !outcome.text.ends_with('\n') {
                out.write_all(b"\n")?;
            }
            Ok(match outcome.stop {
                TurnStop::EndTurn => ExitCode::SUCCESS,
                other => {
                    eprintln!("osprey: the turn ended early: {other:?}");
                    ExitCode::from(crate::EXIT_TOOL_FAILED)
                }
            })
        }
        Err(TurnFailure { code, message }) => {
            eprintln!("osprey: {code}: {message}");
            Ok(ExitCode::from(EXIT_PROVIDER_FAILED))
        }
    }
}

async fn interactive(runner: &Runner, session: &str) -> anyhow::Result<ExitCode> {
    let terminal = std::io::stdin().is_terminal();
    if terminal {
        eprintln!(
            "osprey chat (session {session}). Ctrl-C stops a reply; an empty line or Ctrl-D quits."
        );
    }
    loop {
        if terminal {
            eprint!("\n> ");
            let _ = std::io::stderr().flush();
        }
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line),
            }
        })
        .await?;
        let Some(line) = line else { break };
        let message = line.trim().to_string();
        if message.is_empty() {
            break;
        }
        match turn(runner, session, message, true, true).await {
            Ok(outcome) => {
                println!();
                if outcome.stop != TurnStop::EndTurn {
                    eprintln!("(the turn ended early: {:?})", outcome.stop);
                }
            }
            Err(TurnFailure { code, message }) => {
                eprintln!("\nosprey: {code}: {message}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
