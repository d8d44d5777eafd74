//! Tests on a real X display with real GTK 3 windows. See `display/harness.rs` for the
//! environment (reused from scripts/test, or started here when `DISPLAY` is unset).
//! (A test crate's root resolves modules beside it, hence the `#[path]`s.)

// Each test uses part of the harness.
#[allow(dead_code)]
#[path = "display/harness.rs"]
mod harness;

#[path = "display/capture.rs"]
mod capture;

#[path = "display/tree.rs"]
mod tree;

#[path = "display/see.rs"]
mod see;

#[path = "display/input.rs"]
mod input;

#[path = "display/tools.rs"]
mod tools;
