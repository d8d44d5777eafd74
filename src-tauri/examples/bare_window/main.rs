//! The floor of the desktop start-up benchmark (`scripts/bench --desktop`): a bare Tauri window
//! built the way Osprey is (this workspace, the release profile, the same tauri and features, the
//! same window size, CSP and painting choice, `rendering::apply`) showing an embedded empty page.
//! With `OSPREY_PAINT_PROBE=1` it registers the same paint probe as Osprey and the page calls it
//! at once, so its start-to-paint time and memory are what any Tauri app of this build pays
//! before doing anything of its own.
//!
//! It is an example of the desktop crate, not a crate of its own, so it reuses the desktop's
//! build script (capabilities, the probe's permission) and compiled dependencies: building it
//! adds one small file and a link.
//!
//! `cargo build --release -p osprey-desktop --example bare_window --features tauri/custom-protocol`

fn main() {
    let builder = osprey_desktop::paint_probe::register(tauri::Builder::default()).setup(|app| {
        // Its windows paint the way Osprey's do (on the CPU where there is no GPU).
        for window in tauri::Manager::webview_windows(app).values() {
            osprey_desktop::rendering::apply(window);
        }
        Ok(())
    });
    if let Err(error) = builder.run(tauri::generate_context!(
        "examples/bare_window/tauri.conf.json"
    )) {
        eprintln!("bare_window: {error}");
        std::process::exit(1);
    }
}
