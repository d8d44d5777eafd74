//! The modules of osprey-screen, less `tools.rs`, compiled for whichever target cargo is given.
//! Only for `cargo check --target x86_64-pc-windows-gnu | x86_64-apple-darwin`.

pub mod accessibility;
pub mod actions;
pub mod capture;
pub mod desktop;
pub mod elements;
pub mod error;
pub mod geometry;
pub mod input;
pub mod render;
pub mod snapshot;
