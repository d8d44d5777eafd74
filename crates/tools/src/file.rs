//! The `file` tool (being built).
