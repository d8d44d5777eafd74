//! `osprey chat`: talk to the agent from the terminal. With `-p "..."` it runs one turn for
//! scripts: `--output-format text` (the default) prints the final answer on stdout and tool
//! activity on stderr; `json` prints one JSON object at the end (answer, tool calls with their
//! results, usage, stop reason, session id); `stream-json` prints one JSON event per line as it
//! happens, ending with that same object. Exit code 0: answered; 1: the turn failed or stopped
//! early (provider error, step limit, refusal); 2: bad usage (from the argument parser). Without
//! `-p` it is interactive (replies stream to stdout, Ctrl-C stops the current turn, an empty line
//! or end of input quits). Approvals are asked on the terminal either way.

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
use osprey_types::{ToolResult, TurnFailureCode};
use tokio::sync::mpsc;

use crate::prompt::TerminalApprover;

/// Exit code when the turn failed or stopped before an answer: the model could not be reached
/// (auth, rate limit, network, ...), the step limit, a refusal. 2 is left to usage errors.
const EXIT_TURN_FAILED: u8 = 1;

/// How `-p` prints the turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The final answer on stdout; tool activity on stderr.
    #[default]
    Text,
    /// One JSON object when the turn ends.
    Json,
    /// One JSON object per event, one per line, as they happen; the last is the result.
    StreamJson,
}

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
    /// With -p: how long to wait for the configured MCP servers to connect before the turn, in
    /// seconds (their tools are then in the first request; each failure is reported once).
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    mcp_wait: u64,
    /// With -p: text, json (one object at the end) or stream-json (one event per line).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, requires = "prompt")]
    output_format: OutputFormat,
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
    if args.prompt.is_some() {
        // One turn: its first request should carry the servers' tools.
        let statuses = core
            .wait_for_mcp(std::time::Duration::from_secs(args.mcp_wait))
            .await;
        report_mcp(&statuses);
    }
    let runner = core.chat_runner(&options)?;
    if let Some(warning) = autonomous_warning(&core) {
        eprintln!("{warning}");
    }
    let session = args.session.clone().unwrap_or_else(new_session_id);
    let code = match args.prompt {
        Some(message) => one_shot(&runner, &session, message, args.output_format).await,
        None => interactive(&runner, &session).await,
    };
    // Stdio MCP servers and apps are child processes: stop them rather than leave them to exit.
    services.shutdown().await;
    code
}

/// The line printed before a chat while autonomous mode is on: what would be asked runs unasked.
pub(crate) fn autonomous_warning(core: &Core) -> Option<&'static str> {
    core.autonomous().then_some(
        "osprey: WARNING: autonomous mode is on (tools.autonomous): tool calls the approval \
         policy would ask about run without asking you; the safeguard still refuses what it \
         refuses. Turn it off with `osprey config set tools.autonomous false`.",
    )
}

/// One line on stderr for each configured MCP server that is not there for this turn.
pub(crate) fn report_mcp(statuses: &[osprey_core::mcp::ServerStatus]) {
    use osprey_core::mcp::ServerState;
    for status in statuses {
        let why = match &status.state {
            ServerState::Connected | ServerState::Disabled | ServerState::Stopped => continue,
            ServerState::Connecting => "still connecting; its tools join when it is ready".into(),
            ServerState::Retrying { error, .. } => format!("not connected ({error})"),
            ServerState::Invalid { error } => format!("misconfigured ({error})"),
        };
        eprintln!("osprey: MCP server `{}`: {why}", status.name);
    }
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
    code: TurnFailureCode,
    message: String,
}

/// Where a turn's events go: the terminal (text), one JSON line each (stream-json), and in every
/// format the tool calls with their results for the final JSON object.
struct Sink {
    format: OutputFormat,
    calls: Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

/// Runs one turn, printing events as they come.
async fn turn(
    runner: &Runner,
    session: &str,
    message: String,
    sink: Sink,
    cancel_on_interrupt: bool,
) -> Result<TurnOutcome, TurnFailure> {
    // Interactive chat streams the answer; `-p` text prints it whole at the end.
    let stream_text = cancel_on_interrupt;
    let (events, mut received) = mpsc::unbounded_channel();
    let mut request = TurnRequest::new(session, message);
    request.approver = Some(Arc::new(TerminalApprover));
    request.events = Some(events);
    let cancel = request.cancel.clone();
    let running = runner.clone();
    let mut task = tokio::spawn(async move { running.run_turn(request).await });
    let printer = tokio::spawn(async move {
        let mut started = std::collections::HashMap::new();
        while let Some(event) = received.recv().await {
            record_call(&event, &mut started, &sink.calls);
            match sink.format {
                OutputFormat::Text => print_event(&event, stream_text),
                OutputFormat::Json => {}
                OutputFormat::StreamJson => {
                    if let Some(line) = event_line(&event) {
                        println!("{line}");
                    }
                }
            }
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
            code: error.turn_failure(),
            message: error.to_string(),
        }),
        Err(join) => Err(TurnFailure {
            code: TurnFailureCode::Internal,
            message: format!("the turn stopped unexpectedly: {join}"),
        }),
    }
}

/// Pairs each tool call with its result, in the order they finish.
fn record_call(
    event: &AgentEvent,
    started: &mut std::collections::HashMap<String, serde_json::Value>,
    calls: &std::sync::Mutex<Vec<serde_json::Value>>,
) {
    match event {
        AgentEvent::ToolCallStarted { id, input, .. } => {
            started.insert(id.clone(), input.clone());
        }
        AgentEvent::ToolCallFinished { id, name, result } => {
            let input = started.remove(id).unwrap_or(serde_json::Value::Null);
            calls
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(serde_json::json!({
                    "id": id,
                    "name": name,
                    "input": input,
                    "result": result_json(result),
                }));
        }
        _ => {}
    }
}

fn result_json(result: &ToolResult) -> serde_json::Value {
    serde_json::json!({
        "text": result.text_content(),
        "is_error": result.is_error,
        "code": result.code,
    })
}

/// One `stream-json` line for an event.
fn event_line(event: &AgentEvent) -> Option<serde_json::Value> {
    Some(match event {
        AgentEvent::TextDelta(text) => serde_json::json!({"type": "text", "text": text}),
        AgentEvent::ThinkingDelta(text) => serde_json::json!({"type": "thinking", "text": text}),
        AgentEvent::ToolCallStarted { id, name, input } => {
            serde_json::json!({"type": "tool_call", "id": id, "name": name, "input": input})
        }
        AgentEvent::ToolCallFinished { id, name, result } => serde_json::json!({
            "type": "tool_result", "id": id, "name": name, "result": result_json(result),
        }),
        AgentEvent::StepFinished { step, usage, stop } => serde_json::json!({
            "type": "step", "step": step, "usage": usage,
            "stop": stop.as_ref().map(step_stop_name),
        }),
        AgentEvent::Compacted {
            images_dropped,
            messages_summarized,
            tokens_before,
            tokens_after,
        } => serde_json::json!({
            "type": "compacted", "images_dropped": images_dropped,
            "messages_summarized": messages_summarized, "tokens_before": tokens_before,
            "tokens_after": tokens_after,
        }),
    })
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

async fn one_shot(
    runner: &Runner,
    session: &str,
    message: String,
    format: OutputFormat,
) -> anyhow::Result<ExitCode> {
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Sink {
        format,
        calls: calls.clone(),
    };
    let outcome = turn(runner, session, message, sink, false).await;
    let calls = std::mem::take(&mut *calls.lock().unwrap_or_else(|e| e.into_inner()));
    let answered = matches!(&outcome, Ok(o) if o.stop == TurnStop::EndTurn);
    match format {
        OutputFormat::Text => match &outcome {
            Ok(outcome) => {
                let mut out = std::io::stdout().lock();
                out.write_all(outcome.text.as_bytes())?;
                if !outcome.text.ends_with('\n') {
                    out.write_all(b"\n")?;
                }
                if outcome.stop != TurnStop::EndTurn {
                    eprintln!("osprey: {}", stop_sentence(&outcome.stop, session));
                }
            }
            Err(TurnFailure { code, message }) => eprintln!("osprey: {code}: {message}"),
        },
        OutputFormat::Json | OutputFormat::StreamJson => {
            let result = result_object(session, &outcome, calls);
            let line = if format == OutputFormat::Json {
                serde_json::to_string_pretty(&result)?
            } else {
                result.to_string()
            };
            println!("{line}");
        }
    }
    Ok(if answered {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TURN_FAILED)
    })
}

/// Why a turn stopped before its answer, in words, with what to do.
fn stop_sentence(stop: &TurnStop, session: &str) -> String {
    match stop {
        TurnStop::EndTurn => "the turn finished".to_string(),
        TurnStop::StepLimit => format!(
            "the turn stopped after the most model calls a turn may make (--max-steps) before \
             the model finished; the answer so far is above. Continue it with \
             `osprey chat --session {session} -p ...`, or raise --max-steps"
        ),
        TurnStop::MaxTokens => "the model ran out of output tokens before it finished; the \
             answer so far is above"
            .to_string(),
        TurnStop::Cancelled => "the turn was stopped before it finished".to_string(),
        TurnStop::Other(reason) => format!("the model stopped early ({reason})"),
    }
}

/// The last line of `json` and `stream-json`: everything a script needs about the turn.
fn result_object(
    session: &str,
    outcome: &Result<TurnOutcome, TurnFailure>,
    tool_calls: Vec<serde_json::Value>,
) -> serde_json::Value {
    match outcome {
        Ok(outcome) => serde_json::json!({
            "type": "result",
            "session_id": session,
            "is_error": outcome.stop != TurnStop::EndTurn,
            "stop": stop_name(&outcome.stop),
            "stop_message": (outcome.stop != TurnStop::EndTurn)
                .then(|| stop_sentence(&outcome.stop, session)),
            "text": outcome.text,
            "steps": outcome.steps,
            "usage": outcome.usage,
            "tool_calls": tool_calls,
        }),
        Err(TurnFailure { code, message }) => serde_json::json!({
            "type": "result",
            "session_id": session,
            "is_error": true,
            "stop": "error",
            "error": {"code": code, "message": message},
            "tool_calls": tool_calls,
        }),
    }
}

fn step_stop_name(stop: &osprey_core::agent::StopReason) -> String {
    use osprey_core::agent::StopReason;
    match stop {
        StopReason::EndTurn => "end_turn".into(),
        StopReason::ToolUse => "tool_use".into(),
        StopReason::MaxTokens => "max_tokens".into(),
        StopReason::StopSequence => "stop_sequence".into(),
        StopReason::Other(reason) => reason.clone(),
    }
}

fn stop_name(stop: &TurnStop) -> String {
    match stop {
        TurnStop::EndTurn => "end_turn".into(),
        TurnStop::MaxTokens => "max_tokens".into(),
        TurnStop::StepLimit => "step_limit".into(),
        TurnStop::Cancelled => "cancelled".into(),
        TurnStop::Other(reason) => reason.clone(),
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
        let sink = Sink {
            format: OutputFormat::Text,
            calls: Arc::default(),
        };
        match turn(runner, session, message, sink, true).await {
            Ok(outcome) => {
                println!();
                if outcome.stop != TurnStop::EndTurn {
                    eprintln!("({})", stop_sentence(&outcome.stop, session));
                }
            }
            Err(TurnFailure { code, message }) => {
                eprintln!("\nosprey: {code}: {message}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
