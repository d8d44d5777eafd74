//! Osprey's desktop shell: the only crate that knows Tauri. It opens the core, builds the main
//! window, the tray and the plugins, and exposes the core to the UI through thin commands (one
//! file per UI area under `commands/`). Logic belongs in osprey-core; a command here only
//! forwards and maps errors to [`UiError`].

mod app_ui;
mod commands;
mod events;
mod startup;
mod tray;

use osprey_core::chat::Chats;
use osprey_core::{Core, CoreOptions};
use osprey_types::UiError;

use startup::data_dir_from_args;

/// Error codes the shell itself produces (the UI branches on them).
pub mod codes {
    /// The core could not be opened at startup; the message says why.
    pub const CORE_UNAVAILABLE: &str = "core_unavailable";
}

/// What the commands reach through `tauri::State`: the core, or why it failed to open. Keeping the
/// failure (instead of panicking) lets the window open and show it.
#[derive(Debug)]
pub struct CoreState {
    core: Result<Core, String>,
    chats: Option<Chats>,
}

impl CoreState {
    pub fn open(options: CoreOptions) -> CoreState {
        let core = Core::open(options).map_err(|error| format!("{error:#}"));
        if let Err(message) = &core {
            tracing::error!("Osprey's core did not open: {message}");
        }
        let chats = core.as_ref().ok().map(|core| Chats::new(core.clone()));
        CoreState { core, chats }
    }

    pub fn core(&self) -> Result<&Core, UiError> {
        self.core.as_ref().map_err(|message| UiError {
            code: codes::CORE_UNAVAILABLE.to_string(),
            message: message.clone(),
        })
    }

    pub fn chats(&self) -> Result<&Chats, UiError> {
        self.core()?;
        self.chats.as_ref().ok_or_else(|| UiError {
            code: codes::CORE_UNAVAILABLE.to_string(),
            message: "chat is not available".to_string(),
        })
    }
}

/// A core error as the UI receives it.
pub fn ui_error(code: &str, error: impl std::fmt::Display) -> UiError {
    UiError {
        code: code.to_string(),
        message: format!("{error:#}"),
    }
}

/// The control socket's server, kept for the life of the app (dropping it removes the socket).
#[cfg(unix)]
struct ControlSocket {
    _server: osprey_core::control::ControlServer,
}

/// Starts the desktop app and blocks until it quits.
pub fn run() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();

    let state = CoreState::open(CoreOptions {
        data_dir: data_dir_from_args(std::env::args_os().skip(1)),
        policy: None,
    });

    let builder = tauri::Builder::default()
        .plugin(tauri_plugin_shell::init())
        .plugin(tauri_plugin_notification::init())
        .manage(state)
        .invoke_handler(tauri::generate_handler![
            commands::settings::app_info,
            commands::settings::provider_overview,
            commands::settings::set_provider_setting,
            commands::chat::send_message,
            commands::chat::cancel_turn,
            commands::chat::list_sessions,
            commands::chat::load_history,
            commands::approvals::answer_approval,
            commands::approvals::pending_approvals,
            commands::apps::list_apps,
            commands::apps::approve_app_update,
            commands::apps::reject_app_update,
            commands::apps::open_app_ui,
        ]);
    #[cfg(unix)]
    let builder = builder.register_asynchronous_uri_scheme_protocol(app_ui::SCHEME, app_ui::handle);
    let result = builder
        .setup(|app| {
            // No tray host (a bare X server, some Wayland desktops) must not stop the app.
            if let Err(error) = tray::create(app.handle()) {
                tracing::warn!("no tray icon: {error}");
            }
            // Apps launch in the background on Tauri's tokio runtime; the window never waits.
            if let Ok(core) = tauri::Manager::state::<CoreState>(app).core().cloned() {
                // The UI answers approval questions; events reach it through the main window.
                core.attach_approvals();
                events::forward(app.handle().clone(), &core);
                let handle = app.handle().clone();
                tauri::async_runtime::spawn(async move {
                    core.forward_app_events();
                    if let Err(error) = core.start_apps() {
                        tracing::warn!("apps not started: {error:#}");
                    }
                    // Reminders fire while the window is open; an app that provides `schedule`
                    // takes over while it runs.
                    if let Err(error) = core.start_scheduler() {
                        tracing::warn!("reminders not started: {error:#}");
                    }
                    core.follow_schedule_apps();
                    if let Err(error) = core.start_mcp() {
                        tracing::warn!("MCP servers not started: {error:#}");
                    }
                    // `osprey app launch | stop` from a terminal reach this supervisor.
                    #[cfg(unix)]
                    match core.serve_control() {
                        Ok(server) => {
                            tauri::Manager::manage(&handle, ControlSocket { _server: server });
                        }
                        Err(error) => tracing::warn!("no control socket: {error:#}"),
                    }
                    #[cfg(not(unix))]
                    let _ = handle;
                });
            }
            Ok(())
        })
        .build(tauri::generate_context!());
    let app = match result {
        Ok(app) => app,
        Err(error) => {
            eprintln!("osprey-desktop: {error}");
            std::process::exit(1);
        }
    };
    app.run(|handle, event| {
        // Stop the apps' processes before the process ends, so none is left to be found as an
        // orphan at the next start.
        if let tauri::RunEvent::Exit = event
            && let Ok(core) = tauri::Manager::state::<CoreState>(handle).core()
        {
            tauri::async_runtime::block_on(async {
                core.stop_mcp().await;
                core.stop_scheduler().await;
                core.stop_apps().await;
            });
        }
    });
}
