//! The `web` tool (being built).
