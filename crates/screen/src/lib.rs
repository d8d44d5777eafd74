//! The snapshot pipeline and desktop input: screen and window capture (xcap), the accessibility
//! tree (AT-SPI on Linux, AX on macOS, UIA on Windows), element IDs, annotated images, the
//! snapshot store, and input (enigo), exposed as the `screenshot` and `desktop` tools.
//! It must not know about Tauri, apps or the agent loop.
//!
//! Status: not built yet (see the screen issue); the crate exists so the workspace has its final shape.
