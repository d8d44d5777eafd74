//! Builds the Tauri context: resolves capabilities from the workspace's `capabilities/` folder and
//! generates the `allow-<command>` permissions for the app's own commands.

use std::path::Path;

/// Every `#[tauri::command]` registered in `lib.rs`. A command missing here gets no permission and
/// the UI's call to it is refused, so keep the two lists together.
const COMMANDS: &[&str] = &[
    "next_ui_events",
    "app_info",
    "background_status",
    "send_message",
    "cancel_turn",
    "list_sessions",
    "load_history",
    "search_sessions",
    "rename_session",
    "delete_session",
    "session_usage",
    "open_link",
    "answer_approval",
    "pending_approvals",
    "list_apps",
    "install_app",
    "uninstall_app",
    "approve_app_update",
    "reject_app_update",
    "open_app_ui",
    "list_app_accounts",
    "app_traffic",
    "connect_app_account",
    "disconnect_app_account",
    "provider_overview",
    "set_provider_setting",
    "settings_overview",
    "os_capabilities",
    "set_setting",
    "set_skill_enabled",
    "automation_status",
    "set_automation_paused",
    "see_current_window",
    "tray_action",
    "save_mcp_server",
    "remove_mcp_server",
    "audit_log",
    "list_grants",
    "revoke_grant",
    "store_home",
    "store_catalog",
    "store_app",
    "install_store_app",
    "store_skills",
    "install_store_skill",
    "uninstall_store_skill",
    "explain_permissions",
    "os_accounts",
    "save_mail_account",
    "remove_mail_account",
    "save_dav_account",
    "remove_dav_account",
    "test_mail_account",
    "test_dav_account",
    "session_team",
    "cancel_subagent",
    "agent_catalog",
    "save_agent_type",
    "delete_agent_type",
];

fn main() {
    // tauri's own message for a missing frontendDist does not say how to produce it.
    let dist = Path::new("../ui/dist/index.html");
    println!("cargo:rerun-if-changed=../ui/dist/index.html");
    if !dist.exists() {
        panic!(
            "ui/dist is missing: build the UI first with `npm --prefix ui ci && npm --prefix ui run build` \
             (scripts/run and scripts/test do this)"
        );
    }
    println!("cargo:rerun-if-changed=../capabilities");

    let attributes = tauri_build::Attributes::new()
        .capabilities_path_pattern("../capabilities/**/*")
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS))
        // The start-up benchmark's probe (src/paint_probe.rs), registered only when asked for.
        .plugin(
            "paint-probe",
            tauri_build::InlinedPlugin::new().commands(&["painted"]),
        );
    if let Err(error) = tauri_build::try_build(attributes) {
        panic!("tauri-build failed: {error:#}");
    }
    symbol_order();
}

/// With `OSPREY_SYMBOL_ORDER` naming a file of symbols (scripts/symbol_order.py writes it from a
/// trace of the app's start), the binary is linked with the code they name laid out together, so
/// start-up faults in a few megabytes of code instead of pages spread over the whole `.text`.
/// Only where the linker is lld, Rust's default on x86_64 Linux; symbols missing from the build
/// are skipped.
fn symbol_order() {
    println!("cargo:rerun-if-env-changed=OSPREY_SYMBOL_ORDER");
    let Some(file) = std::env::var_os("OSPREY_SYMBOL_ORDER").filter(|f| !f.is_empty()) else {
        return;
    };
    let file = Path::new(&file);
    if std::env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        println!(
            "cargo:warning=OSPREY_SYMBOL_ORDER is for x86_64-unknown-linux-gnu (lld); ignored"
        );
        return;
    }
    if !file.is_file() {
        panic!(
            "OSPREY_SYMBOL_ORDER names {}, which is not a file",
            file.display()
        );
    }
    println!("cargo:rerun-if-changed={}", file.display());
    println!(
        "cargo:rustc-link-arg-bin=osprey-desktop=-Wl,--symbol-ordering-file={}",
        file.display()
    );
    println!("cargo:rustc-link-arg-bin=osprey-desktop=-Wl,--no-warn-symbol-ordering");
}
