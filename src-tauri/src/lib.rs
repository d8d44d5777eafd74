//! Osprey's desktop shell: the only crate that knows Tauri. It opens the core, builds the main
//! window, the tray and the plugins, and exposes the core to the UI through thin commands (one
//! file per UI area under `commands/`). Logic belongs in osprey-core; a command here only
//! forwards and maps errors to [`UiError`].

mod app_ui;
mod approval_notice;
/// The `native` browser profile (public for `examples/native_browser.rs`).
pub mod browser;
mod commands;
mod events;
/// The start-up benchmark's first-paint probe (public for `examples/bare_window`).
pub mod paint_probe;
/// How Osprey's own windows paint (public for `examples/bare_window`).
pub mod rendering;
mod startup;
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod startup_memory;
mod tray;
mod ui_feed;

use osprey_core::chat::Chats;
use osprey_core::{Core, CoreError, CoreOptions, Services, Start};
use osprey_types::{UiError, UiErrorCode};

use startup::data_dir_from_args;

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
        self.core
            .as_ref()
            .map_err(|message| UiError::new(UiErrorCode::CoreUnavailable, message.clone()))
    }

    pub fn chats(&self) -> Result<&Chats, UiError> {
        self.core()?;
        self.chats
            .as_ref()
            .ok_or_else(|| UiError::new(UiErrorCode::CoreUnavailable, "chat is not available"))
    }
}

/// A failure of the shell itself (a window that would not open) as the UI receives it. Errors
/// from the core arrive as `CoreError` and convert with `?`, keeping their code.
pub fn ui_error(code: UiErrorCode, error: impl std::fmt::Display) -> UiError {
    UiError::new(code, format!("{error:#}"))
}

/// The background services of this window's core ([`Core::start`]), or why they did not start
/// (the data folder held by another Osprey, say), which the UI shows.
#[derive(Debug)]
pub struct Background {
    services: std::sync::Mutex<Option<Services>>,
    error: Option<UiError>,
}

impl From<anyhow::Result<Services>> for Background {
    fn from(started: anyhow::Result<Services>) -> Background {
        match started {
            Ok(services) => Background {
                services: std::sync::Mutex::new(Some(services)),
                error: None,
            },
            Err(error) => {
                tracing::error!("Osprey's background services did not start: {error:#}");
                let error = CoreError::with_fallback(&error, UiErrorCode::ServicesUnavailable);
                Background {
                    services: std::sync::Mutex::new(None),
                    error: Some(error.into()),
                }
            }
        }
    }
}

impl Background {
    /// Nothing started: the core did not open (the UI shows that error instead).
    fn none() -> Background {
        Background {
            services: std::sync::Mutex::new(None),
            error: None,
        }
    }

    /// Ok while the services run; the start's error when they did not start.
    pub fn status(&self) -> Result<(), UiError> {
        self.error.clone().map_or(Ok(()), Err)
    }

    /// The running services, once, for the shutdown at exit.
    fn take(&self) -> Option<Services> {
        self.services
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// Whether the tray icon was created, so closing the window may hide it there.
struct TrayPresence(bool);

/// Closing hides to the tray only when there is a tray to come back from, and `OSPREY_CLOSE_QUITS`
/// is not set (automation such as WebDriver sessions closes the window to end the app).
fn hide_on_close<R: tauri::Runtime>(app: &tauri::AppHandle<R>) -> bool {
    let tray = tauri::Manager::try_state::<TrayPresence>(app).is_some_and(|t| t.0);
    tray && std::env::var_os("OSPREY_CLOSE_QUITS").is_none_or(|v| v.is_empty() || v == "0")
}

/// Starts the desktop app and blocks until it quits.
pub fn run() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();

    let data_dir = data_dir_from_args(std::env::args_os().skip(1));
    let single = startup::single_instance(
        data_dir.as_deref(),
        std::env::var_os(osprey_core::DATA_DIR_ENV),
    );
    let state = CoreState::open(CoreOptions {
        data_dir,
        policy: None,
        ..CoreOptions::default()
    });

    let mut builder = tauri::Builder::default();
    if single {
        // Registered first, as the plugin asks: a second launch hands over and exits, and the
        // first comes forward.
        builder = builder.plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Err(error) = tray::TrayShell::show_main_window(&tray::AppShell(app)) {
                tracing::warn!("could not bring the window forward: {error}");
            }
        }));
    }
    let builder = paint_probe::register(builder)
        .plugin(tauri_plugin_shell::init())
        .plugin(tauri_plugin_notification::init())
        .manage(state)
        .manage(ui_feed::UiFeed::default())
        .invoke_handler(tauri::generate_handler![
            commands::events::next_ui_events,
            commands::settings::app_info,
            commands::settings::background_status,
            commands::settings::provider_overview,
            commands::settings::set_provider_setting,
            commands::chat::send_message,
            commands::chat::cancel_turn,
            commands::chat::list_sessions,
            commands::chat::load_history,
            commands::chat::search_sessions,
            commands::chat::rename_session,
            commands::chat::delete_session,
            commands::chat::session_usage,
            commands::chat::open_link,
            commands::approvals::answer_approval,
            commands::approvals::pending_approvals,
            commands::apps::list_apps,
            commands::apps::install_app,
            commands::apps::uninstall_app,
            commands::apps::approve_app_update,
            commands::apps::reject_app_update,
            commands::apps::open_app_ui,
            commands::apps::list_app_accounts,
            commands::apps::app_traffic,
            commands::apps::connect_app_account,
            commands::apps::disconnect_app_account,
            commands::settings::settings_overview,
            commands::settings::os_capabilities,
            commands::settings::set_setting,
            commands::settings::set_skill_enabled,
            commands::automation::automation_status,
            commands::automation::set_automation_paused,
            commands::automation::see_current_window,
            commands::automation::tray_action,
            commands::settings::save_mcp_server,
            commands::settings::remove_mcp_server,
            commands::approvals::audit_log,
            commands::approvals::list_grants,
            commands::approvals::revoke_grant,
            commands::store::store_home,
            commands::store::store_catalog,
            commands::store::store_app,
            commands::store::install_store_app,
            commands::store::store_skills,
            commands::store::install_store_skill,
            commands::store::uninstall_store_skill,
            commands::store::explain_permissions,
            commands::accounts::os_accounts,
            commands::accounts::save_mail_account,
            commands::accounts::remove_mail_account,
            commands::accounts::save_dav_account,
            commands::accounts::remove_dav_account,
            commands::accounts::test_mail_account,
            commands::accounts::test_dav_account,
            commands::team::session_team,
            commands::team::cancel_subagent,
            commands::team::agent_catalog,
            commands::team::save_agent_type,
            commands::team::delete_agent_type,
        ]);
    let builder = builder.register_asynchronous_uri_scheme_protocol(app_ui::SCHEME, app_ui::handle);
    // Once the main window's page has loaded, what only start-up needed goes back to the system.
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    let builder = builder.on_page_load(|webview, payload| {
        static ONCE: std::sync::Once = std::sync::Once::new();
        if webview.label() == tray::MAIN_WINDOW
            && matches!(payload.event(), tauri::webview::PageLoadEvent::Finished)
        {
            ONCE.call_once(|| {
                std::thread::spawn(|| {
                    let released = startup_memory::release();
                    tracing::debug!("start-up memory handed back: {released:?}");
                });
            });
        }
    });
    // Closing the main window hides it to the tray; Quit in the tray (or the session ending)
    // stops Osprey. Without a tray host nothing could bring it back, so it then closes as usual.
    let builder = builder.on_window_event(|window, event| {
        if let tauri::WindowEvent::CloseRequested { api, .. } = event
            && window.label() == tray::MAIN_WINDOW
            && hide_on_close(tauri::Manager::app_handle(window))
        {
            api.prevent_close();
            if let Err(error) = window.hide() {
                tracing::warn!("could not hide the window: {error}");
            }
        }
    });
    let result = builder
        .setup(|app| {
            // Before the page's first frame: the window was built just before this hook.
            if let Some(window) = tauri::Manager::get_webview_window(app, tray::MAIN_WINDOW) {
                rendering::apply(&window);
            }
            // No tray host (a bare X server, some Wayland desktops) must not stop the app.
            let core = tauri::Manager::state::<CoreState>(app).core().ok().cloned();
            let tray_shown = match tray::create(app.handle(), core) {
                Ok(()) => true,
                Err(error) => {
                    tracing::warn!("no tray icon: {error}");
                    false
                }
            };
            tauri::Manager::manage(app, TrayPresence(tray_shown));
            let mut background = Background::none();
            if let Ok(core) = tauri::Manager::state::<CoreState>(app).core().cloned() {
                // The UI answers approval questions; events reach it through the main window.
                core.attach_approvals();
                // The agent browses in this app's own webview windows (the `native` profile),
                // where the person sees it; `profile: "managed"` still reaches the headless one.
                browser::attach(app.handle(), &core);
                events::forward(app.handle().clone(), &core);
                // One start for every background service (apps, reminders, MCP, the control
                // socket). It only spawns, so the window does not wait; a data folder held by
                // another Osprey is reported to the UI, and this window still chats.
                background = Background::from(tauri::async_runtime::block_on(
                    core.start(Start::all("the Osprey desktop app")),
                ));
            }
            tauri::Manager::manage(app, background);
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
            && let Some(background) = tauri::Manager::try_state::<Background>(handle)
            && let Some(services) = background.take()
        {
            tauri::async_runtime::block_on(services.shutdown());
        }
    });
}
