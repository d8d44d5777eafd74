//! Browser automation and web search for the `web` tool's `browser` and `search` resources.
//!
//! It owns the [`Driver`] trait that every browser profile implements (the managed Chromium
//! here, over the DevTools protocol; the native webview profile in the Tauri shell), the one page
//! script (`snapshot.js`: the DOM snapshot with element refs and the element helpers) that all
//! profiles run, the browser actions built on top of both ([`BrowserActions`]), the navigation
//! policy of the managed profile ([`guard`]: the `web` tool's SSRF rules on every request), and
//! the search providers with fallback ([`Search`]). It joins the `web` tool through
//! osprey-tools' `WebExtension` ([`WebBrowsing`]).
//!
//! It must not depend on Tauri or on the core; text from pages is always returned fenced as
//! untrusted page content.

pub mod actions;
pub mod devtools;
pub mod downloads;
pub mod driver;
pub mod error;
pub mod extension;
pub mod guard;
pub mod managed;
pub mod script;
pub mod search;

pub use actions::{BrowserActions, Verdict, navigation_verdict, nonce, untrusted};
pub use downloads::DownloadFolder;
pub use driver::{Driver, DriverStatus, PageInfo, World};
pub use error::{BrowserError, Result};
pub use extension::WebBrowsing;
pub use managed::locate::find_chromium;
pub use managed::{ChromeAttach, ManagedConfig, ManagedDriver};
pub use search::{Search, SearchConfig, SearchSettings};
