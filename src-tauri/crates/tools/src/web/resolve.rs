//! The DNS resolver the `web` tool's HTTP client connects through. It drops every private
//! address a name resolves to and fails when none is left, so the address actually connected to
//! has passed the check, whatever the name answered when the URL was checked (DNS rebinding).

use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::ssrf::{Blocked, host_name_refusal, ip_refusal};

/// Why a look-up gave nothing usable.
#[derive(Debug)]
pub enum LookupError {
    /// Every address was private, or the name itself is refused.
    Blocked(Blocked),
    /// The name did not resolve at all.
    Failed(String),
}

/// A [`Resolve`] that filters another one (the system resolver when `inner` is `None`).
#[derive(Clone)]
pub struct GuardedResolver {
    inner: Option<Arc<dyn Resolve>>,
    allow_loopback: bool,
}

impl std::fmt::Debug for GuardedResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedResolver")
            .field("custom_inner", &self.inner.is_some())
            .field("allow_loopback", &self.allow_loopback)
            .finish()
    }
}

impl GuardedResolver {
    pub fn new(inner: Option<Arc<dyn Resolve>>, allow_loopback: bool) -> Self {
        GuardedResolver {
            inner,
            allow_loopback,
        }
    }

    /// Resolves `host` and keeps only the addresses that may be connected to.
    pub async fn lookup(&self, host: &str) -> Result<Vec<SocketAddr>, LookupError> {
        if let Some(reason) = host_name_refusal(host, self.allow_loopback) {
            return Err(LookupError::Blocked(Blocked::new(host, reason)));
        }
        let found: Vec<SocketAddr> = match &self.inner {
            Some(inner) => {
                let name: Name = host.parse().map_err(|_| {
                    LookupError::Failed(format!("`{host}` is not a valid host name"))
                })?;
                inner
                    .resolve(name)
                    .await
                    .map_err(|e| LookupError::Failed(format!("could not resolve {host}: {e}")))?
                    .collect()
            }
            None => tokio::net::lookup_host((host, 0))
                .await
                .map_err(|e| LookupError::Failed(format!("could not resolve {host}: {e}")))?
                .collect(),
        };
        if found.is_empty() {
            return Err(LookupError::Failed(format!(
                "{host} did not resolve to any address"
            )));
        }
        let mut refused = Vec::new();
        let kept: Vec<SocketAddr> = found
            .into_iter()
            .filter(|addr| match ip_refusal(addr.ip(), self.allow_loopback) {
                Some(why) => {
                    refused.push(format!("{} ({why})", addr.ip()));
                    false
                }
                None => true,
            })
            .collect();
        if kept.is_empty() {
            return Err(LookupError::Blocked(Blocked::new(
                host,
                format!(
                    "it resolves only to addresses that may not be reached: {}",
                    refused.join(", ")
                ),
            )));
        }
        if !refused.is_empty() {
            tracing::debug!(host, refused = %refused.join(", "), "dropped private addresses");
        }
        Ok(kept)
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            match this.lookup(&host).await {
                Ok(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
                // Boxed as itself so the tool can find it in the client's error chain.
                Err(LookupError::Blocked(b)) => Err(Box::new(b) as _),
                Err(LookupError::Failed(m)) => Err(m.into()),
            }
        })
    }
}
