//! Bridges the core's events (a broadcast channel in osprey-core) to Tauri events the UI listens
//! to through `ipc.ts`. The core emits no events yet, so there is nothing to forward; the main
//! capability already grants `core:event:default` so the UI can listen once it does.
