//! What an app author links: serve the app protocol's services on the socket named by
//! `OSPREY_APP_SOCK` and shut down cleanly on SIGTERM.
//!
//! Status: not built yet (see the app platform issue).
