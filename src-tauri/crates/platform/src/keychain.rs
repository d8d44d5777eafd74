//! Secrets the agent keeps, in the system keychain (Linux: the Secret Service over D-Bus). Every
//! item is marked with Osprey's own attributes, and listing, reading and deleting only ever see
//! items so marked: other programs' secrets are out of reach.

use crate::error::{Error, Result};

/// Stores and reads Osprey's secrets.
#[allow(async_fn_in_trait)]
pub trait Keychain {
    async fn store(&self, _key: &str, _secret: &str) -> Result<()> {
        Err(Error::unsupported("the keychain"))
    }
    async fn read(&self, _key: &str) -> Result<Option<String>> {
        Err(Error::unsupported("the keychain"))
    }
    /// The keys, sorted.
    async fn keys(&self) -> Result<Vec<String>> {
        Err(Error::unsupported("the keychain"))
    }
    /// True when there was something to delete.
    async fn delete(&self, _key: &str) -> Result<bool> {
        Err(Error::unsupported("the keychain"))
    }
}

/// A key must be short, printable and on one line: it is shown in approvals and listings.
pub fn check_key(key: &str) -> Result<&str> {
    let key = key.trim();
    if key.is_empty() || key.len() > 200 || key.chars().any(char::is_control) {
        return Err(Error::invalid(
            "`key` must be 1 to 200 printable characters on one line",
        ));
    }
    Ok(key)
}
