//! The first-paint probe for the start-up benchmark (`scripts/bench --desktop`): with
//! `OSPREY_PAINT_PROBE=1` a small plugin gives each page `window.__OSPREY_PAINT_PROBE__(stage)`,
//! which waits two animation frames (what the page shows is then painted) and calls this plugin's
//! `painted` command; the command prints the stage's line on stdout once, and the harness times the
//! launch to it. Two stages: `painted`, the first view on screen (Osprey's built page carries the
//! chat view's markup, ui/src/prerender.ts, and calls the probe as it is parsed), and
//! `interactive`, the same view once the app's script has run and taken it over. Without the
//! variable nothing is registered: the normal start costs one environment lookup, and the page's
//! call finds no function. The bench's floor (`examples/bare_window`) registers the same plugin,
//! so both sides are timed the same way.

use std::sync::atomic::{AtomicBool, Ordering};

use tauri::Runtime;
use tauri::plugin::{Builder, TauriPlugin};

/// The environment variable that turns the probe on (any value but empty or `0`).
pub const ENV: &str = "OSPREY_PAINT_PROBE";

/// The plugin's name: its command is `plugin:paint-probe|painted`, granted to the main window
/// as `paint-probe:allow-painted` (build.rs declares it, capabilities/main.json grants it).
const NAME: &str = "paint-probe";

/// Defines the function the UI calls once a stage is on screen. Two frames: the first callback
/// runs before the frame that shows it is painted, the second after it. No stage is `painted`.
const SCRIPT: &str = r#"Object.defineProperty(window, "__OSPREY_PAINT_PROBE__", {
  value: (stage) => requestAnimationFrame(() => requestAnimationFrame(() =>
    window.__TAURI_INTERNALS__.invoke("plugin:paint-probe|painted", { stage: stage ?? "painted" }))),
});"#;

/// The lines the harness waits for: the first view painted, then working.
pub const PAINTED: &str = "painted";
pub const INTERACTIVE: &str = "interactive";
const STAGES: [&str; 2] = [PAINTED, INTERACTIVE];

fn enabled(value: Option<std::ffi::OsString>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

/// Adds the probe to `builder` when `OSPREY_PAINT_PROBE` asks for it; otherwise returns it as is.
pub fn register<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    if enabled(std::env::var_os(ENV)) {
        builder.plugin(plugin())
    } else {
        builder
    }
}

fn plugin<R: Runtime>() -> TauriPlugin<R> {
    Builder::new(NAME)
        .js_init_script(SCRIPT)
        .invoke_handler(tauri::generate_handler![painted])
        .build()
}

/// Only the first call of each stage prints: a view mounted again later is not a start.
static REPORTED: [AtomicBool; STAGES.len()] = [const { AtomicBool::new(false) }; STAGES.len()];

/// The line to print for `stage`, the first time only; None for a stage the harness does not read.
fn first_report(stage: &str) -> Option<&'static str> {
    let index = STAGES.iter().position(|known| *known == stage)?;
    (!REPORTED[index].swap(true, Ordering::SeqCst)).then_some(STAGES[index])
}

#[tauri::command]
fn painted(stage: String) {
    if let Some(line) = first_report(&stage) {
        // println! flushes at the newline, so the harness sees the line now.
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_value_other_than_empty_or_zero_turns_it_on() {
        assert!(!enabled(None));
        assert!(!enabled(Some("".into())));
        assert!(!enabled(Some("0".into())));
        assert!(enabled(Some("1".into())));
    }

    #[test]
    fn the_script_calls_the_command_the_plugin_registers() {
        assert!(SCRIPT.contains(&format!("plugin:{NAME}|painted")));
        assert!(SCRIPT.contains(&format!("stage ?? \"{PAINTED}\"")));
    }

    #[test]
    fn each_stage_is_reported_once_and_unknown_stages_never() {
        assert_eq!(first_report("loaded"), None);
        assert_eq!(first_report(INTERACTIVE), Some(INTERACTIVE));
        assert_eq!(first_report(PAINTED), Some(PAINTED));
        assert_eq!(first_report(PAINTED), None);
        assert_eq!(first_report(INTERACTIVE), None);
    }
}
