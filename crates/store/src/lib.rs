//! The app store server (axum): catalog, package downloads, the signing key, revocations, reviews.
//!
//! Status: not built yet (see the app platform issue).
