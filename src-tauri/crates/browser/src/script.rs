//! The page script ([`SOURCE`], `snapshot.js`) and the expressions that call it. The script
//! installs itself once per document on the global of the world it runs in; a call first tries
//! the installed copy and sends the whole script only when the document has none yet.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{BrowserError, Result};

/// The page script, shared by every profile.
pub const SOURCE: &str = include_str!("snapshot.js");

/// What a call returns when the document has no copy of the script yet.
pub const MISSING: &str = "__osprey_missing__";

/// An expression that runs `name(args)` with the installed script, or returns [`MISSING`].
pub fn call_installed(name: &str, args: &Value) -> String {
    format!(
        "(globalThis.__osprey ? globalThis.__osprey.run({}, {}) : {:?})",
        Value::String(name.into()),
        args,
        MISSING
    )
}

/// An expression that installs the script and runs `name(args)`.
pub fn call_installing(name: &str, args: &Value) -> String {
    format!(
        "((globalThis.__osprey = globalThis.__osprey || {SOURCE}).run({}, {}))",
        Value::String(name.into()),
        args
    )
}

/// Decodes what a call returned: the JSON text of the string `run` produced, holding either
/// `{"ok": value}` or `{"error": message}`.
pub fn decode<T: DeserializeOwned>(returned: &str) -> Result<T> {
    let inner: String = serde_json::from_str(returned).map_err(|e| {
        BrowserError::Protocol(format!(
            "the page script returned something unexpected: {e}"
        ))
    })?;
    let mut reply: Value = serde_json::from_str(&inner).map_err(|e| {
        BrowserError::Protocol(format!("the page script returned invalid JSON: {e}"))
    })?;
    if let Some(message) = reply.get("error").and_then(Value::as_str) {
        return Err(BrowserError::Page(message.to_string()));
    }
    serde_json::from_value(reply["ok"].take()).map_err(|e| {
        BrowserError::Protocol(format!("the page script's answer has a bad shape: {e}"))
    })
}
