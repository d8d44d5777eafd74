//! The first-paint probe for the start-up benchmark (`scripts/bench --desktop`): with
//! `OSPREY_PAINT_PROBE=1` a small plugin gives each page `window.__OSPREY_PAINT_PROBE__()`, which
//! waits two animation frames (the view is then painted) and calls this plugin's `painted`
//! command; the command prints the line `painted` on stdout once, and the harness times the launch
//! to that line. Without the variable nothing is registered: the normal start costs one
//! environment lookup, and the page's call finds no function. The bench's floor
//! (`examples/bare_window`) registers the same plugin, so both sides are timed the same way.

use std::sync::atomic::{AtomicBool, Ordering};

use tauri::Runtime;
use tauri::plugin::{Builder, TauriPlugin};

/// The environment variable that turns the probe on (any value but empty or `0`).
pub const ENV: &str = "OSPREY_PAINT_PROBE";

/// The plugin's name: its command is `plugin:paint-probe|painted`, granted to the main window
/// as `paint-probe:allow-painted` (build.rs declares it, capabilities/main.json grants it).
const NAME: &str = "paint-probe";

/// Defines the function the UI calls once its first view is on screen. Two frames: the first
/// callback runs before the frame that shows the view is painted, the second after it.
const SCRIPT: &str = r#"Object.defineProperty(window, "__OSPREY_PAINT_PROBE__", {
  value: () => requestAnimationFrame(() => requestAnimationFrame(() =>
    window.__TAURI_INTERNALS__.invoke("plugin:paint-probe|painted"))),
});"#;

/// The line the harness waits for.
pub const PAINTED: &str = "painted";

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

/// Only the first call prints: a view mounted again later is not a start.
static REPORTED: AtomicBool = AtomicBool::new(false);

#[tauri::command]
fn painted() {
    if !REPORTED.swap(true, Ordering::SeqCst) {
        // println! flushes at the newline, so the harness sees the line now.
        println!("{PAINTED}");
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
    }
}
