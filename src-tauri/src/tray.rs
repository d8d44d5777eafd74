//! The tray icon and its quick actions. The menu handler is a plain function over [`TrayShell`],
//! so it is unit-tested with a fake: under Xvfb there is no tray host to click on.

use tauri::menu::MenuBuilder;
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};

/// The window every quick action brings forward (its label in tauri.conf.json).
pub const MAIN_WINDOW: &str = "main";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrayAction {
    Show,
    NewChat,
    Quit,
}

impl TrayAction {
    /// In menu order.
    pub const ALL: [TrayAction; 3] = [TrayAction::Show, TrayAction::NewChat, TrayAction::Quit];

    /// The menu item id.
    pub fn id(self) -> &'static str {
        match self {
            TrayAction::Show => "show",
            TrayAction::NewChat => "new-chat",
            TrayAction::Quit => "quit",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            TrayAction::Show => "Show Osprey",
            TrayAction::NewChat => "New chat",
            TrayAction::Quit => "Quit",
        }
    }

    pub fn from_id(id: &str) -> Option<TrayAction> {
        TrayAction::ALL.into_iter().find(|action| action.id() == id)
    }
}

/// What the quick actions need from the running app.
pub trait TrayShell {
    fn show_main_window(&self) -> Result<(), String>;
    /// Switches the UI to a route of its hash router (`chat`, `settings`, ...).
    fn navigate(&self, route: &str) -> Result<(), String>;
    fn quit(&self);
}

/// Runs the quick action behind a menu item id. Unknown ids (items added by someone else) are
/// ignored and reported as `None`.
pub fn handle_menu_event(shell: &impl TrayShell, id: &str) -> Option<Result<(), String>> {
    let action = TrayAction::from_id(id)?;
    Some(match action {
        TrayAction::Show => shell.show_main_window(),
        TrayAction::NewChat => shell
            .show_main_window()
            .and_then(|()| shell.navigate("chat")),
        TrayAction::Quit => {
            shell.quit();
            Ok(())
        }
    })
}

struct AppShell<'a, R: Runtime>(&'a AppHandle<R>);

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

    fn navigate(&self, route: &str) -> Result<(), String> {
        let window = self
            .0
            .get_webview_window(MAIN_WINDOW)
            .ok_or_else(|| "the main window is gone".to_string())?;
        // JSON-encode the hash so the route can never break out of the string literal.
        let hash = serde_json::to_string(&format!("#/{route}")).map_err(|e| e.to_string())?;
        window
            .eval(format!("window.location.hash = {hash};"))
            .map_err(|error| error.to_string())
    }

    fn quit(&self) {
        self.0.exit(0);
    }
}

/// Creates the tray icon with the quick-action menu.
pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let mut menu = MenuBuilder::new(app);
    for action in TrayAction::ALL {
        if action == TrayAction::Quit {
            menu = menu.separator();
        }
        menu = menu.text(action.id(), action.label());
    }
    let menu = menu.build()?;
    TrayIconBuilder::with_id("osprey")
        .icon(tauri::include_image!("../icons/tray.png"))
        .tooltip("Osprey")
        .menu(&menu)
        .on_menu_event(|app, event| {
            if let Some(Err(error)) = handle_menu_event(&AppShell(app), event.id().as_ref()) {
                tracing::warn!("tray action {:?} failed: {error}", event.id().as_ref());
            }
        })
        .build(app)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    #[derive(Default)]
    struct FakeShell {
        calls: RefCell<Vec<String>>,
        window_missing: bool,
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
        fn navigate(&self, route: &str) -> Result<(), String> {
            self.calls.borrow_mut().push(format!("navigate {route}"));
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
        let labels: Vec<_> = TrayAction::ALL.iter().map(|a| a.label()).collect();
        assert_eq!(labels, ["Show Osprey", "New chat", "Quit"]);
    }

    #[test]
    fn each_action_does_what_its_label_says() {
        let shell = FakeShell::default();
        assert_eq!(handle_menu_event(&shell, "show"), Some(Ok(())));
        assert_eq!(handle_menu_event(&shell, "new-chat"), Some(Ok(())));
        assert_eq!(handle_menu_event(&shell, "quit"), Some(Ok(())));
        assert_eq!(
            *shell.calls.borrow(),
            ["show", "show", "navigate chat", "quit"]
        );
    }

    #[test]
    fn unknown_ids_are_ignored() {
        let shell = FakeShell::default();
        assert_eq!(handle_menu_event(&shell, "format-disk"), None);
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
}
