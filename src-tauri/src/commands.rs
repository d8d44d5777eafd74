//! Tauri commands, one module per UI area. Each forwards to osprey-core in a few lines and returns
//! errors as `UiError { code, message }`. A new command must also be listed in `build.rs`
//! (`COMMANDS`) and granted in `capabilities/main.json`.

pub mod accounts;
pub mod approvals;
pub mod apps;
pub mod automation;
pub mod chat;
pub mod events;
pub mod settings;
pub mod store;
pub mod team;
