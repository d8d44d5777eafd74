//! The tray icon and its quick actions: show the window, new chat, ask about the current window,
//! pause or resume automation, open the store, the state of running work, quit. The menu handler
//! and the texts are plain functions over [`TrayShell`] and [`AutomationStatus`], so they are
//! unit-tested with a fake: under Xvfb there is no tray host to click on (the `tray_action`
//! command runs the same handler for the window and the end-to-end tests).

use osprey_core::Core;
use osprey_types::{
    AutomationStatus, CoreEvent, Origin, UiError, UiEvent, WindowAsk, WindowSnapshot,
};
use tauri::menu::{MenuBuilder, MenuItem, MenuItemBuilder};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::broadcast::error::RecvError;

use crate::CoreState;
use crate::ui_feed::UiFeed;

/// The window every quick action brings forward (its label in tauri.conf.json).
pub const MAIN_WINDOW: &str = "main";

/// The tray's tooltip and icon id.
const TRAY_ID: &str = "osprey";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrayAction {
    Show,
    NewChat,
    AskAboutWindow,
    /// Pause when running, resume when paused.
    TogglePause,
    OpenStore,
    /// Brings the native browser profile's windows forward (the pages the agent browses).
    ShowBrowser,
    /// The person takes the browser over (to log in, to do a step themselves; the agent's
    /// browser calls wait) or hands it back.
    ToggleBrowserControl,
    Quit,
}

impl TrayAction {
    /// In menu order.
    pub const ALL: [TrayAction; 8] = [
        TrayAction::Show,
        TrayAction::NewChat,
        TrayAction::AskAboutWindow,
        TrayAction::TogglePause,
        TrayAction::OpenStore,
        TrayAction::ShowBrowser,
        TrayAction::ToggleBrowserControl,
        TrayAction::Quit,
    ];

    /// The menu item id.
    pub fn id(self) -> &'static str {
        match self {
            TrayAction::Show => "show",
            TrayAction::NewChat => "new-chat",
            TrayAction::AskAboutWindow => "ask-about-window",
            TrayAction::TogglePause => "pause",
            TrayAction::OpenStore => "open-store",
            TrayAction::ShowBrowser => "show-browser",
            TrayAction::ToggleBrowserControl => "browser-control",
            TrayAction::Quit => "quit",
        }
    }

    /// The label, given whether automation is paused now.
    pub fn label(self, paused: bool) -> &'static str {
        match self {
            TrayAction::Show => "Show Osprey",
            TrayAction::NewChat => "New chat",
            TrayAction::AskAboutWindow => "Ask about the current window",
            TrayAction::TogglePause if paused => "Resume automation",
            TrayAction::TogglePause => "Pause automation",
            TrayAction::OpenStore => "Open the store",
            TrayAction::ShowBrowser => "Show browser windows",
            TrayAction::ToggleBrowserControl => browser_control_label(false),
            TrayAction::Quit => "Quit Osprey",
        }
    }

    pub fn from_id(id: &str) -> Option<TrayAction> {
        TrayAction::ALL.into_iter().find(|action| action.id() == id)
    }
}

/// The browser control item's label, given whether the person has the browser now.
pub fn browser_control_label(held: bool) -> &'static str {
    if held {
        "Hand the browser back"
    } else {
        "Take over the browser"
    }
}

/// The tray's status line: autonomous mode (first, while it is on), paused, idle, or what runs.
pub fn status_line(status: &AutomationStatus) -> String {
    let mut parts = Vec::new();
    let chats = status
        .turns
        .iter()
        .filter(|t| t.origin == Origin::User)
        .count();
    let background = status.turns.len() - chats;
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    if chats > 0 {
        parts.push(plural(chats, "chat turn", "chat turns"));
    }
    if background > 0 {
        parts.push(plural(background, "background turn", "background turns"));
    }
    if status.apps_total > 0 {
        parts.push(format!(
            "{} of {} apps running",
            status.apps_running, status.apps_total
        ));
    }
    let work = if parts.is_empty() {
        "Idle".to_string()
    } else {
        parts.join(" · ")
    };
    let work = if status.paused {
        format!("Paused · {work}")
    } else {
        work
    };
    if status.autonomous {
        format!("AUTONOMOUS (runs unasked) · {work}")
    } else {
        work
    }
}

/// What the quick actions need from the running app.
pub trait TrayShell {
    fn show_main_window(&self) -> Result<(), String>;
    /// Switches the UI to a route of its hash router (`chat`, `settings`, ...): an event in the
    /// window's feed, which cannot fail (a window that is gone never reads it).
    fn navigate(&self, route: &str);
    fn is_paused(&self) -> Result<bool, String>;
    fn set_paused(&self, paused: bool) -> Result<(), String>;
    /// Starts taking a snapshot of the focused window; [`deliver_snapshot`] finishes the action.
    fn start_window_snapshot(&self) -> Result<(), String>;
    /// Hands the snapshot (or why there is none) to the chat in the main window, through the
    /// window's feed like [`TrayShell::navigate`].
    fn send_snapshot(&self, ask: WindowAsk);
    /// Shows the windows of the native browser profile.
    fn show_browser_windows(&self) -> Result<(), String>;
    /// Whether the person has taken the default browser profile over.
    fn browser_held(&self) -> Result<bool, String>;
    /// Takes the default browser profile over (`true`) or hands it back.
    fn set_browser_held(&self, held: bool) -> Result<(), String>;
    /// After a hand back, the pages go back to where the agent keeps them: hidden again while
    /// `web.native_windows` is `"hidden"` (taking over showed them), left shown otherwise.
    fn put_browser_windows_back(&self) -> Result<(), String>;
    fn quit(&self);
}

/// Runs the quick action behind a menu item id. Unknown ids (items added by someone else, the
/// status line) are ignored and reported as `None`.
pub fn handle_menu_event(shell: &impl TrayShell, id: &str) -> Option<Result<(), String>> {
    let action = TrayAction::from_id(id)?;
    Some(match action {
        TrayAction::Show => shell.show_main_window(),
        TrayAction::NewChat => shell
            .show_main_window()
            .map(|()| shell.navigate("chat?new")),
        // The snapshot is taken before the window comes forward, so it shows what the person
        // was looking at, not Osprey.
        TrayAction::AskAboutWindow => shell.start_window_snapshot(),
        TrayAction::TogglePause => shell
            .is_paused()
            .and_then(|paused| shell.set_paused(!paused)),
        TrayAction::OpenStore => shell.show_main_window().map(|()| shell.navigate("store")),
        TrayAction::ShowBrowser => shell.show_browser_windows(),
        // Taking over brings the pages forward, so the person sees what they took; handing back
        // puts them back.
        TrayAction::ToggleBrowserControl => shell.browser_held().and_then(|held| {
            shell.set_browser_held(!held)?;
            if held {
                shell.put_browser_windows_back()
            } else {
                shell.show_browser_windows()
            }
        }),
        TrayAction::Quit => {
            shell.quit();
            Ok(())
        }
    })
}

/// The end of "Ask about the current window": the window comes forward on the chat, which
/// starts a new chat with the snapshot attached (or says why there is none) when it takes it.
/// Not `chat?new`: that route's own new chat could land after the snapshot and clear it.
pub fn deliver_snapshot(
    shell: &impl TrayShell,
    snapshot: Result<WindowSnapshot, UiError>,
) -> Result<(), String> {
    shell.show_main_window()?;
    shell.navigate("chat");
    shell.send_snapshot(match snapshot {
        Ok(snapshot) => WindowAsk::Snapshot { snapshot },
        Err(error) => WindowAsk::Error { error },
    });
    Ok(())
}

pub struct AppShell<'a, R: Runtime>(pub &'a AppHandle<R>);

impl<R: Runtime> AppShell<'_, R> {
    fn core(&self) -> Result<Core, String> {
        self.0
            .state::<CoreState>()
            .core()
            .cloned()
            .map_err(|error| error.message)
    }
}

impl<R: Runtime> TrayShell for AppShell<'_, R> {
    fn show_main_window(&self) -> Result<(), String> {
        let window = self
            .0
            .get_webview_window(MAIN_WINDOW)
            .ok_or_else(|| "the main window is gone".to_string())?;
        window
            .unminimize()
            .and_then(|()| window.show())
            .and_then(|()| window.set_focus())
            .map_err(|error| error.to_string())
    }

    fn navigate(&self, route: &str) {
        self.0.state::<UiFeed>().push(UiEvent::Navigate {
            route: route.to_string(),
        });
    }

    fn is_paused(&self) -> Result<bool, String> {
        Ok(self.core()?.automation_paused())
    }

    fn set_paused(&self, paused: bool) -> Result<(), String> {
        self.core()?.set_automation_paused(paused);
        Ok(())
    }

    fn start_window_snapshot(&self) -> Result<(), String> {
        let core = self.core()?;
        let app = self.0.clone();
        tauri::async_runtime::spawn(async move {
            let snapshot = core.see_focused_window().await.map_err(UiError::from);
            if let Err(error) = deliver_snapshot(&AppShell(&app), snapshot) {
                tracing::warn!("could not open the window snapshot in a chat: {error}");
            }
        });
        Ok(())
    }

    fn send_snapshot(&self, ask: WindowAsk) {
        self.0
            .state::<UiFeed>()
            .push(UiEvent::AskAboutWindow { ask });
    }

    fn show_browser_windows(&self) -> Result<(), String> {
        crate::browser::show_all(self.0);
        Ok(())
    }

    fn browser_held(&self) -> Result<bool, String> {
        let core = self.core()?;
        let (_, default) = core.browser_profiles();
        Ok(core.browser_taken_over().contains(&default))
    }

    fn set_browser_held(&self, held: bool) -> Result<(), String> {
        let core = self.core()?;
        if held {
            core.browser_take_over(None)
                .map(|_| ())
                .map_err(|error| error.to_string())
        } else {
            core.browser_hand_back(None);
            Ok(())
        }
    }

    fn put_browser_windows_back(&self) -> Result<(), String> {
        let core = self.core()?;
        if core
            .browser_profile_config(crate::browser::PROFILE)
            .hidden_windows
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            crate::browser::hide_all(self.0);
        }
        Ok(())
    }

    fn quit(&self) {
        // RunEvent::Exit stops the background services (apps) before the process ends.
        self.0.exit(0);
    }
}

/// The menu items whose text follows the state.
struct LiveItems<R: Runtime> {
    status: MenuItem<R>,
    pause: MenuItem<R>,
}

/// Creates the tray icon with the quick-action menu, and keeps its status line and pause item
/// in step with the core.
pub fn create<R: Runtime>(app: &AppHandle<R>, core: Option<Core>) -> tauri::Result<()> {
    let paused = core.as_ref().is_some_and(Core::automation_paused);
    let status = MenuItemBuilder::with_id("status", "Idle")
        .enabled(false)
        .build(app)?;
    let pause = MenuItemBuilder::with_id(
        TrayAction::TogglePause.id(),
        TrayAction::TogglePause.label(paused),
    )
    .build(app)?;
    let browser = MenuItemBuilder::with_id(
        TrayAction::ToggleBrowserControl.id(),
        TrayAction::ToggleBrowserControl.label(paused),
    )
    .build(app)?;
    let mut menu = MenuBuilder::new(app);
    for action in TrayAction::ALL {
        match action {
            TrayAction::TogglePause => {
                menu = menu.separator().item(&status).item(&pause);
            }
            TrayAction::ToggleBrowserControl => menu = menu.item(&browser),
            TrayAction::Quit => {
                menu = menu.separator().text(action.id(), action.label(paused));
            }
            _ => menu = menu.text(action.id(), action.label(paused)),
        }
    }
    let menu = menu.build()?;
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(tauri::include_image!("../icons/tray.png"))
        .tooltip("Osprey")
        .menu(&menu)
        .on_menu_event(move |app, event| {
            let shell = AppShell(app);
            if let Some(Err(error)) = handle_menu_event(&shell, event.id().as_ref()) {
                tracing::warn!("tray action {:?} failed: {error}", event.id().as_ref());
            }
            if event.id().as_ref() == TrayAction::ToggleBrowserControl.id()
                && let Ok(held) = shell.browser_held()
            {
                let _ = browser.set_text(browser_control_label(held));
            }
        })
        .build(app)?;
    if let Some(core) = core {
        follow(app.clone(), core, LiveItems { status, pause });
    }
    Ok(())
}

/// Updates the status line, the pause item and the tooltip whenever work starts or ends.
fn follow<R: Runtime>(app: AppHandle<R>, core: Core, items: LiveItems<R>) {
    let mut events = core.subscribe();
    tauri::async_runtime::spawn(async move {
        loop {
            let status = core.automation_status().await;
            let line = status_line(&status);
            let _ = items.status.set_text(&line);
            let _ = items
                .pause
                .set_text(TrayAction::TogglePause.label(status.paused));
            if let Some(tray) = app.tray_by_id(TRAY_ID) {
                let _ = tray.set_tooltip(Some(format!("Osprey · {line}")));
            }
            // Wait for the next event that changes what runs.
            loop {
                match events.recv().await {
                    Ok(
                        CoreEvent::ChatTurnStarted { .. }
                        | CoreEvent::ChatTurnFinished { .. }
                        | CoreEvent::ChatTurnFailed { .. }
                        | CoreEvent::AutomationPaused { .. }
                        | CoreEvent::AutonomousMode { .. }
                        | CoreEvent::AppStateChanged { .. },
                    )
                    | Err(RecvError::Lagged(_)) => break,
                    Ok(_) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use osprey_types::{RunningTurn, UiErrorCode};

    use super::*;

    #[derive(Default)]
    struct FakeShell {
        calls: RefCell<Vec<String>>,
        window_missing: bool,
        paused: RefCell<bool>,
        browser_held: RefCell<bool>,
    }

    impl TrayShell for FakeShell {
        fn show_main_window(&self) -> Result<(), String> {
            self.calls.borrow_mut().push("show".into());
            if self.window_missing {
                Err("the main window is gone".into())
            } else {
                Ok(())
            }
        }
        fn navigate(&self, route: &str) {
            self.calls.borrow_mut().push(format!("navigate {route}"));
        }
        fn is_paused(&self) -> Result<bool, String> {
            Ok(*self.paused.borrow())
        }
        fn set_paused(&self, paused: bool) -> Result<(), String> {
            self.calls.borrow_mut().push(format!("paused {paused}"));
            *self.paused.borrow_mut() = paused;
            Ok(())
        }
        fn start_window_snapshot(&self) -> Result<(), String> {
            self.calls.borrow_mut().push("snapshot".into());
            Ok(())
        }
        fn send_snapshot(&self, ask: WindowAsk) {
            self.calls.borrow_mut().push(match ask {
                WindowAsk::Snapshot { snapshot } => format!("send {}", snapshot.snapshot_id),
                WindowAsk::Error { error } => format!("send error {}", error.code),
            });
        }
        fn show_browser_windows(&self) -> Result<(), String> {
            self.calls.borrow_mut().push("browser".into());
            Ok(())
        }
        fn browser_held(&self) -> Result<bool, String> {
            Ok(*self.browser_held.borrow())
        }
        fn set_browser_held(&self, held: bool) -> Result<(), String> {
            self.calls.borrow_mut().push(format!("browser held {held}"));
            *self.browser_held.borrow_mut() = held;
            Ok(())
        }
        fn put_browser_windows_back(&self) -> Result<(), String> {
            self.calls.borrow_mut().push("browser back".into());
            Ok(())
        }
        fn quit(&self) {
            self.calls.borrow_mut().push("quit".into());
        }
    }

    #[test]
    fn menu_ids_round_trip_and_labels_are_the_documented_ones() {
        for action in TrayAction::ALL {
            assert_eq!(TrayAction::from_id(action.id()), Some(action));
        }
        let labels: Vec<_> = TrayAction::ALL.iter().map(|a| a.label(false)).collect();
        assert_eq!(
            labels,
            [
                "Show Osprey",
                "New chat",
                "Ask about the current window",
                "Pause automation",
                "Open the store",
                "Show browser windows",
                "Take over the browser",
                "Quit Osprey"
            ]
        );
        assert_eq!(TrayAction::TogglePause.label(true), "Resume automation");
        assert_eq!(browser_control_label(true), "Hand the browser back");
    }

    #[test]
    fn each_action_does_what_its_label_says() {
        let shell = FakeShell::default();
        for id in [
            "show",
            "new-chat",
            "ask-about-window",
            "pause",
            "pause",
            "open-store",
            "show-browser",
            "browser-control",
            "browser-control",
            "quit",
        ] {
            assert_eq!(handle_menu_event(&shell, id), Some(Ok(())), "{id}");
        }
        assert_eq!(
            *shell.calls.borrow(),
            [
                "show",
                "show",
                "navigate chat?new",
                "snapshot",
                "paused true",
                "paused false",
                "show",
                "navigate store",
                "browser",
                "browser held true",
                "browser",
                "browser held false",
                "browser back",
                "quit"
            ]
        );
    }

    #[test]
    fn a_snapshot_opens_the_chat_with_it_or_with_the_reason() {
        let shell = FakeShell::default();
        let snapshot = WindowSnapshot {
            snapshot_id: "s1".into(),
            title: Some("Editor".into()),
            app: None,
            image: "data:image/png;base64,".into(),
            width: 1,
            height: 1,
            elements: String::new(),
        };
        deliver_snapshot(&shell, Ok(snapshot)).unwrap();
        deliver_snapshot(
            &shell,
            Err(UiError::new(UiErrorCode::NotSupported, "no display")),
        )
        .unwrap();
        assert_eq!(
            *shell.calls.borrow(),
            [
                "show",
                "navigate chat",
                "send s1",
                "show",
                "navigate chat",
                "send error not_supported"
            ]
        );
    }

    #[test]
    fn unknown_ids_are_ignored() {
        let shell = FakeShell::default();
        assert_eq!(handle_menu_event(&shell, "format-disk"), None);
        assert_eq!(handle_menu_event(&shell, "status"), None);
        assert!(shell.calls.borrow().is_empty());
    }

    #[test]
    fn new_chat_does_not_navigate_a_missing_window() {
        let shell = FakeShell {
            window_missing: true,
            ..FakeShell::default()
        };
        assert!(matches!(
            handle_menu_event(&shell, "new-chat"),
            Some(Err(_))
        ));
        assert_eq!(*shell.calls.borrow(), ["show"]);
    }

    #[test]
    fn the_status_line_says_what_runs() {
        let turn = |origin| RunningTurn {
            session_id: "s".into(),
            origin,
            started_ms: 0,
        };
        let mut status = AutomationStatus {
            paused: false,
            autonomous: false,
            turns: vec![],
            apps_running: 0,
            apps_total: 0,
        };
        assert_eq!(status_line(&status), "Idle");
        status.turns = vec![turn(Origin::User), turn(Origin::System)];
        status.apps_running = 1;
        status.apps_total = 2;
        assert_eq!(
            status_line(&status),
            "1 chat turn · 1 background turn · 1 of 2 apps running"
        );
        status.paused = true;
        status.turns.clear();
        status.apps_total = 0;
        assert_eq!(status_line(&status), "Paused · Idle");
        status.autonomous = true;
        assert_eq!(
            status_line(&status),
            "AUTONOMOUS (runs unasked) · Paused · Idle"
        );
    }
}
