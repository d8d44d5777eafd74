//! End-to-end test harness (being built).
