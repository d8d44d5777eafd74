//! Browser automation for the `web` tool's browser actions: the `Driver` trait that the native
//! webview profile (in the Tauri shell) and the managed Chromium profile (CDP) implement, and the
//! DOM snapshot script with element refs. It must not depend on Tauri.
//!
//! Status: not built yet; the crate exists so the workspace has its final shape.
