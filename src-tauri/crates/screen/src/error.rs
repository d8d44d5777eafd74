//! The crate's one error type. Messages are written for the model that reads them: they say what
//! went wrong and what to do next (take a new snapshot, start a display, ...).

use std::time::Duration;

/// Everything that can go wrong in the snapshot pipeline and desktop input.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No display server to talk to (no `DISPLAY`, or the server refused the connection).
    #[error(
        "no display available: {0}. Osprey needs a graphical session (on Linux an X11 display: set DISPLAY, or start Xvfb)"
    )]
    NoDisplay(String),
    /// The display server answered with an error or the connection broke.
    #[error("display server error: {0}")]
    Display(String),
    /// The accessibility service could not be reached or answered with an error.
    #[error("accessibility error: {0}")]
    Accessibility(String),
    /// No window or monitor matched the request.
    #[error("{0}")]
    NotFound(String),
    /// A snapshot or element ID that is unknown, expired or no longer on screen.
    #[error("{0}; take a new snapshot (screenshot see) and use the IDs from it")]
    Stale(String),
    /// The request itself is wrong (bad key name, region outside the screen, ...).
    #[error("{0}")]
    InvalidInput(String),
    /// Simulated input failed.
    #[error("input failed: {0}")]
    Input(String),
    /// Encoding the image failed.
    #[error("image encoding failed: {0}")]
    Encode(String),
    /// A step ran past its deadline.
    #[error("{what} did not finish within {after:?}")]
    Timeout { what: String, after: Duration },
    /// The platform has no implementation of this feature.
    #[error("{0} is not supported on this platform")]
    Unsupported(&'static str),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
