//! The store client: the store's signing key and revocation list (a [`TrustSource`]), the
//! catalog, and installing from the store. Downloads stream to a temporary file in the apps
//! directory, capped at 600 MB counted on the bytes received, and are verified before anything
//! is extracted into place; the temporary file is gone afterwards either way.

use std::io::{Seek, SeekFrom, Write};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::install::{InstallOutcome, Installer};
use crate::napp::Rejection;
use crate::trust::{Revocation, Trust, TrustSource};
use crate::{Error, Result};

/// The largest download accepted.
pub const MAX_DOWNLOAD_BYTES: u64 = 600 * 1024 * 1024;
/// The largest signing-key answer accepted (a key is a few dozen bytes).
pub const MAX_SIGNING_KEY_BYTES: usize = 64 * 1024;
/// The largest revocation list accepted.
pub const MAX_REVOCATIONS_BYTES: usize = 1024 * 1024;
/// How long a signing-key or revocation fetch may take in all (connecting, waiting, reading):
/// these run before launches and installs, so a store that stalls must not stall Osprey.
pub const TRUST_FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct StoreClient {
    base: String,
    http: reqwest::Client,
    max_download: u64,
    trust_timeout: std::time::Duration,
}

impl StoreClient {
    /// `base` is the store's root URL, e.g. `http://127.0.0.1:8787`.
    pub fn new(base: impl Into<String>) -> StoreClient {
        StoreClient {
            base: base.into().trim_end_matches('/').to_owned(),
            http: reqwest::Client::builder()
                .connect_timeout(std::time::Duration::from_secs(10))
                .build()
                .unwrap_or_default(),
            max_download: MAX_DOWNLOAD_BYTES,
            trust_timeout: TRUST_FETCH_TIMEOUT,
        }
    }

    pub fn with_max_download(mut self, bytes: u64) -> StoreClient {
        self.max_download = bytes;
        self
    }

    /// Replaces [`TRUST_FETCH_TIMEOUT`] (tests).
    pub fn with_trust_timeout(mut self, timeout: std::time::Duration) -> StoreClient {
        self.trust_timeout = timeout;
        self
    }

    /// Fetches a small trust document whole: at most `limit` bytes (a larger declared or received
    /// body is refused without reading on), all within the trust timeout.
    async fn fetch_capped(&self, path: &str, what: &str, limit: usize) -> Result<Vec<u8>> {
        let fetch = async {
            let mut response = self.get(path).await?;
            if response
                .content_length()
                .is_some_and(|length| length > limit as u64)
            {
                return Err(too_large(what, limit));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| Error::StoreUnavailable(format!("reading {what}: {e}")))?
            {
                if body.len() + chunk.len() > limit {
                    return Err(too_large(what, limit));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        };
        tokio::time::timeout(self.trust_timeout, fetch)
            .await
            .unwrap_or_else(|_| {
                Err(Error::StoreUnavailable(format!(
                    "the store did not send {what} within {} s",
                    self.trust_timeout.as_secs_f32()
                )))
            })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/api/v1/apps{path}", self.base)
    }

    async fn get(&self, path: &str) -> Result<reqwest::Response> {
        let response = self
            .http
            .get(self.url(path))
            .send()
            .await
            .map_err(|e| Error::StoreUnavailable(e.to_string()))?;
        if !response.status().is_success() {
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            return Err(Error::StoreUnavailable(format!("{status}: {body}")));
        }
        Ok(response)
    }

    /// Publishes a package (`POST /api/v1/apps` with the admin token): the store checks it as an
    /// install would, signs it with its own key and lists it. Returns the store's entry.
    pub async fn publish(&self, package: Vec<u8>, token: &str, featured: bool) -> Result<Value> {
        let request = self
            .http
            .post(self.url(if featured { "?featured=true" } else { "" }))
            .bearer_auth(token)
            .header("content-type", "application/octet-stream")
            .body(package);
        self.admin(request)
            .await?
            .json()
            .await
            .map_err(|e| Error::StoreUnavailable(e.to_string()))
    }

    /// Revokes an app (every version, or one) with a reason the installs see
    /// (`POST /api/v1/apps/{id}/revoke` with the admin token).
    pub async fn revoke(
        &self,
        id: &str,
        version: Option<&str>,
        reason: &str,
        token: &str,
    ) -> Result<()> {
        let request = self
            .http
            .post(self.url(&format!("/{id}/revoke")))
            .bearer_auth(token)
            .json(&serde_json::json!({"version": version, "reason": reason}));
        self.admin(request).await.map(|_| ())
    }

    /// Sends an admin request; the store's own error (JSON with a code) becomes
    /// [`Error::StoreRefused`].
    async fn admin(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response> {
        let response = request
            .send()
            .await
            .map_err(|e| Error::StoreUnavailable(e.to_string()))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        Err(Error::StoreRefused {
            code: body["code"].as_str().unwrap_or("http_error").to_string(),
            message: body["message"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| format!("the store answered {status}")),
        })
    }

    /// A catalog page: `query` searches; `page` starts at 1.
    pub async fn catalog(&self, query: &str, page: u32) -> Result<Value> {
        let path = format!(
            "?q={}&page={page}",
            query
                .bytes()
                .map(|b| if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                })
                .collect::<String>()
        );
        self.get(&path)
            .await?
            .json()
            .await
            .map_err(|e| Error::StoreUnavailable(e.to_string()))
    }

    /// Downloads the app's latest package into a temporary file inside `dir`.
    pub async fn download(&self, id: &str, dir: &std::path::Path) -> Result<std::fs::File> {
        if !id.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
        }) {
            return Err(Error::NotInstalled(format!("`{id}` is not an app id")));
        }
        let mut response = self.get(&format!("/{id}/download")).await?;
        // Unlinked at once: nothing is left behind whatever happens next.
        let mut file =
            tempfile::tempfile_in(dir).map_err(|e| Error::io("create a download file", e))?;
        let mut received = 0u64;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Error::StoreUnavailable(e.to_string()))?
        {
            received += chunk.len() as u64;
            if received > self.max_download {
                return Err(Error::PackageRejected {
                    reason: Rejection::TotalTooLarge {
                        limit: self.max_download,
                    },
                });
            }
            file.write_all(&chunk)
                .map_err(|e| Error::io("write the download", e))?;
        }
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io("rewind the download", e))?;
        Ok(file)
    }

    /// Downloads, verifies against the store key and installs (or stages an update of) `id`.
    pub async fn install(
        &self,
        id: &str,
        installer: &Installer,
        trust: &Trust,
    ) -> Result<InstallOutcome> {
        let file = self.download(id, installer.apps_dir()).await?;
        installer
            .install_from_store(std::io::BufReader::new(file), trust)
            .await
    }
}

fn too_large(what: &str, limit: usize) -> Error {
    Error::StoreUnavailable(format!(
        "the store's {what} is larger than {} KB: refused",
        limit / 1024
    ))
}

impl TrustSource for StoreClient {
    fn signing_key(&self) -> BoxFuture<'_, Result<String>> {
        Box::pin(async move {
            let body = self
                .fetch_capped("/signing-key", "signing key", MAX_SIGNING_KEY_BYTES)
                .await?;
            String::from_utf8(body)
                .map_err(|_| Error::StoreUnavailable("the store's signing key is not text".into()))
        })
    }

    fn revocations(&self) -> BoxFuture<'_, Result<Vec<Revocation>>> {
        Box::pin(async move {
            let body = self
                .fetch_capped("/revocations", "revocation list", MAX_REVOCATIONS_BYTES)
                .await?;
            serde_json::from_slice(&body).map_err(|e| {
                Error::StoreUnavailable(format!("the store's revocation list is not valid: {e}"))
            })
        })
    }
}
