//! The `shell` tool (being built).
