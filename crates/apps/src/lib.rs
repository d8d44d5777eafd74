//! The app platform: manifests, `.napp` packing and extraction, ed25519 signing, sandboxed sidecar
//! launch, the supervisor and watcher, the hook dispatcher, install/update, the store client and
//! the `app` tool. It must not depend on the agent crate or on Tauri.
//!
//! Status: not built yet (see the app platform issue).
