//! The store client: the store's signing key and revocation list (a [`TrustSource`]), the
//! catalog, and installing from the store. Downloads stream to a temporary file in the apps
//! directory, capped at 600 MB counted on the bytes received, and are verified before anything
//! is extracted into place; the temporary file is gone afterwards either way.

use std::io::{Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex};

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

/// The store as the running Osprey reaches it: its address is asked at each use, so a store
/// the person sets in Settings serves the next browse, install or trust fetch without a
/// restart. The client for an address is kept while the address stays the same.
#[derive(Clone)]
pub struct StoreLink {
    url: Arc<dyn Fn() -> Option<String> + Send + Sync>,
    client: Arc<Mutex<Option<StoreClient>>>,
}

impl std::fmt::Debug for StoreLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreLink")
            .field("url", &(self.url)())
            .finish()
    }
}

impl StoreLink {
    /// `url` says where the store is now (`None`: no store is configured).
    pub fn new(url: impl Fn() -> Option<String> + Send + Sync + 'static) -> StoreLink {
        StoreLink {
            url: Arc::new(url),
            client: Arc::default(),
        }
    }

    /// Always the same store (or none).
    pub fn fixed(url: Option<String>) -> StoreLink {
        StoreLink::new(move || url.clone())
    }

    /// A client for the store configured now, or `None` when none is.
    pub fn client(&self) -> Option<StoreClient> {
        let url = (self.url)()?;
        let base = url.trim().trim_end_matches('/');
        if base.is_empty() {
            return None;
        }
        let mut cached = self.client.lock().unwrap_or_else(|e| e.into_inner());
        match &*cached {
            Some(client) if client.base == base => Some(client.clone()),
            _ => {
                let client = StoreClient::new(base);
                *cached = Some(client.clone());
                Some(client)
            }
        }
    }
}

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
            let response = self.get(path).await?;
            read_capped(response, limit as u64, what, || too_large(what, limit)).await
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

    fn skills_url(&self, path: &str) -> String {
        format!("{}/api/v1/skills{path}", self.base)
    }

    /// The store's root URL, as given (without a trailing `/`).
    pub fn base(&self) -> &str {
        &self.base
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
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
        let listing = Listing {
            featured,
            ..Listing::default()
        };
        self.publish_listed(package, token, &listing).await
    }

    /// [`StoreClient::publish`] with where the store lists it: featured, a category, the
    /// publisher's name (the last two kept from the previous version when `None`).
    pub async fn publish_listed(
        &self,
        package: Vec<u8>,
        token: &str,
        listing: &Listing,
    ) -> Result<Value> {
        let mut query = vec![format!("featured={}", listing.featured)];
        if let Some(category) = &listing.category {
            query.push(format!("category={}", escape(category)));
        }
        if let Some(publisher) = &listing.publisher {
            query.push(format!("publisher={}", escape(publisher)));
        }
        let request = self
            .http
            .post(self.url(&format!("?{}", query.join("&"))))
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

    /// Revokes a store skill (every version, or one): `POST /api/v1/skills/{name}/revoke` with
    /// the admin token. Installs remove it at their next sweep, or at once when they follow the
    /// store's event stream.
    pub async fn revoke_skill(
        &self,
        name: &str,
        version: Option<&str>,
        reason: &str,
        token: &str,
    ) -> Result<()> {
        check_skill_name(name)?;
        let request = self
            .http
            .post(self.skills_url(&format!("/{name}/revoke")))
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
        self.listing(Shelf::All, query, None, page, None).await
    }

    /// A page of one shelf of the catalog (`{apps, total, page, per_page}`): everything (searched
    /// by `query` when not empty), the featured or the popular apps, within `category` when given.
    pub async fn listing(
        &self,
        shelf: Shelf,
        query: &str,
        category: Option<&str>,
        page: u32,
        per_page: Option<u32>,
    ) -> Result<Value> {
        let mut path = match shelf {
            Shelf::All => String::new(),
            Shelf::Featured => "/featured".to_string(),
            Shelf::Popular => "/popular".to_string(),
        };
        path.push_str(&format!("?q={}&page={page}", escape(query)));
        if let Some(category) = category.filter(|c| !c.is_empty()) {
            path.push_str(&format!("&category={}", escape(category)));
        }
        if let Some(per_page) = per_page {
            path.push_str(&format!("&per_page={per_page}"));
        }
        self.get_json(&path).await
    }

    /// The categories with their app counts (`[{name, count}]`).
    pub async fn categories(&self) -> Result<Value> {
        self.get_json("/categories").await
    }

    /// One app's catalog entry; an unknown id is the store's `not_found`
    /// ([`Error::StoreRefused`]).
    pub async fn app(&self, id: &str) -> Result<Value> {
        check_id(id)?;
        self.get_json(&format!("/{id}")).await
    }

    /// An app's reviews, newest first.
    pub async fn reviews(&self, id: &str) -> Result<Value> {
        check_id(id)?;
        self.get_json(&format!("/{id}/reviews")).await
    }

    /// A JSON answer: the store's own refusal (a 4xx with a code) is [`Error::StoreRefused`];
    /// no answer, a server error or a body that is not JSON is [`Error::StoreUnavailable`].
    async fn get_json(&self, path: &str) -> Result<Value> {
        self.get_json_at(self.url(path)).await
    }

    async fn get_json_at(&self, url: String) -> Result<Value> {
        self.answer_for(self.http.get(url).timeout(CATALOG_TIMEOUT))
            .await?
            .json()
            .await
            .map_err(|e| Error::StoreUnavailable(format!("the store's answer is not JSON: {e}")))
    }

    /// Sends `request` and keeps a successful answer: the store's own refusal (a 4xx with a
    /// code) is [`Error::StoreRefused`]; no answer or a server error is
    /// [`Error::StoreUnavailable`].
    pub(crate) async fn answer_for(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        let response = request
            .send()
            .await
            .map_err(|e| Error::StoreUnavailable(unreachable(&self.base, &e)))?;
        let status = response.status();
        if status.is_client_error() {
            let body: Value = response.json().await.unwrap_or(Value::Null);
            return Err(Error::StoreRefused {
                code: body["code"].as_str().unwrap_or("http_error").to_string(),
                message: body["message"]
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| format!("the store answered {status}")),
            });
        }
        if !status.is_success() {
            return Err(Error::StoreUnavailable(format!(
                "the store at {} answered {status}",
                self.base
            )));
        }
        Ok(response)
    }

    /// A page of the store's skills (`{skills, total, page, per_page}`): every one (searched by
    /// `query` when not empty), the featured or the popular ones, within `category` when given.
    pub async fn skill_listing(
        &self,
        shelf: Shelf,
        query: &str,
        category: Option<&str>,
        page: u32,
        per_page: Option<u32>,
    ) -> Result<Value> {
        let mut path = match shelf {
            Shelf::All => String::new(),
            Shelf::Featured => "/featured".to_string(),
            Shelf::Popular => "/popular".to_string(),
        };
        path.push_str(&format!("?q={}&page={page}", escape(query)));
        if let Some(category) = category.filter(|c| !c.is_empty()) {
            path.push_str(&format!("&category={}", escape(category)));
        }
        if let Some(per_page) = per_page {
            path.push_str(&format!("&per_page={per_page}"));
        }
        self.get_json_at(self.skills_url(&path)).await
    }

    /// The skills' categories with their counts (`[{name, count}]`).
    pub async fn skill_categories(&self) -> Result<Value> {
        self.get_json_at(self.skills_url("/categories")).await
    }

    /// One skill's entry (name, description, author, version, files, installs, signature); an
    /// unknown name is the store's `not_found` ([`Error::StoreRefused`]).
    pub async fn skill(&self, name: &str) -> Result<Value> {
        check_skill_name(name)?;
        self.get_json_at(self.skills_url(&format!("/{name}"))).await
    }

    /// Downloads version `version` of the skill `name` whole (at most
    /// [`crate::skill_package::MAX_ARCHIVE_BYTES`], counted as the bytes arrive).
    pub async fn download_skill(&self, name: &str, version: &str) -> Result<Vec<u8>> {
        check_skill_name(name)?;
        let limit = crate::skill_package::MAX_ARCHIVE_BYTES;
        let response = self
            .answer_for(
                self.http
                    .get(self.skills_url(&format!("/{name}/download?version={}", escape(version))))
                    .timeout(SKILL_DOWNLOAD_TIMEOUT),
            )
            .await?;
        read_capped(response, limit, "the skill", || Error::PackageRejected {
            reason: Rejection::TotalTooLarge { limit },
        })
        .await
    }

    /// Publishes a skill archive (`POST /api/v1/skills` with the admin token): the store unpacks
    /// it with every install-time check, reads its SKILL.md, signs the archive with its own key
    /// and lists it. Returns the store's entry.
    /// `version` is used when the SKILL.md's `metadata` names none.
    pub async fn publish_skill(
        &self,
        archive: Vec<u8>,
        token: &str,
        listing: &Listing,
        version: Option<&str>,
    ) -> Result<Value> {
        let mut query = vec![format!("featured={}", listing.featured)];
        if let Some(version) = version {
            query.push(format!("version={}", escape(version)));
        }
        if let Some(category) = &listing.category {
            query.push(format!("category={}", escape(category)));
        }
        if let Some(publisher) = &listing.publisher {
            query.push(format!("publisher={}", escape(publisher)));
        }
        let request = self
            .http
            .post(self.skills_url(&format!("?{}", query.join("&"))))
            .bearer_auth(token)
            .header("content-type", "application/gzip")
            .body(archive);
        self.admin(request)
            .await?
            .json()
            .await
            .map_err(|e| Error::StoreUnavailable(e.to_string()))
    }

    /// Downloads the app's latest package into a temporary file inside `dir`.
    pub async fn download(&self, id: &str, dir: &std::path::Path) -> Result<std::fs::File> {
        self.download_with_progress(id, dir, &mut |_, _| {}).await
    }

    /// [`StoreClient::download`], calling `progress(received, total)` after each chunk (`total`
    /// is the length the store announced, when it did).
    pub async fn download_with_progress(
        &self,
        id: &str,
        dir: &std::path::Path,
        progress: &mut (dyn FnMut(u64, Option<u64>) + Send),
    ) -> Result<std::fs::File> {
        check_id(id)?;
        let mut response = self.get(&format!("/{id}/download")).await?;
        let total = response.content_length();
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
            progress(received, total);
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

/// What the person approves for an install of the app `id` from this store: the store's entry
/// (name, publisher, version, its permissions in plain words), who signs it (the store's key) and,
/// for an update of `installed`, what changes. Also returns the entry's version and package
/// SHA-256, so the install can refuse a package the store changed after the question. Fails when
/// the store cannot say, in which case nothing would install from it either.
pub async fn app_install_details(
    client: &StoreClient,
    id: &str,
    installed: Option<&crate::Manifest>,
) -> Result<(osprey_types::ApprovalDetails, String, String)> {
    let entry = client.app(id).await?;
    let text = |key: &str| entry[key].as_str().map(str::to_string);
    let version = text("version").unwrap_or_default();
    let sha256 = text("sha256").unwrap_or_default();
    let name = text("name").unwrap_or_else(|| id.to_string());
    let permissions: Vec<String> = entry["permissions"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|p| p.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let signer = store_signer(client).await?;
    let mut notes = vec![
        "It runs in Osprey's app sandbox and can use only what these permissions allow."
            .to_string(),
    ];
    let title = match installed {
        Some(current) if current.version == version => {
            notes.push(format!(
                "{name} {version} is installed already: it is installed again."
            ));
            format!("Reinstall the app {name} {version} from the store")
        }
        Some(current) => {
            let added: Vec<&String> = permissions
                .iter()
                .filter(|p| !current.permissions.contains(p))
                .collect();
            if !added.is_empty() {
                notes.push(format!(
                    "The update adds permissions ({}); they wait for your approval on the Apps \
                     page before the new version runs.",
                    added
                        .iter()
                        .map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            format!(
                "Update the app {name} from {} to {version} from the store",
                current.version
            )
        }
        None => format!("Install the app {name} {version} from the store"),
    };
    let details = osprey_types::ApprovalDetails {
        title,
        kind: "app".into(),
        name,
        id: id.to_string(),
        version: Some(version.clone()),
        publisher: text("publisher"),
        signer: Some(signer),
        permissions: crate::permissions::explained(&permissions),
        files: Vec::new(),
        notes,
    };
    Ok((details, version, sha256))
}

/// "the store at URL, which signs ... with its key ID": who signs what this store serves.
/// Fetching the key fails when the store cannot give one, and then no install from it could be
/// verified either.
pub async fn store_signer(client: &StoreClient) -> Result<String> {
    let key = crate::signing::PublicKey::from_json(&client.signing_key().await?)?;
    Ok(format!(
        "the store at {}, which signs what it lists with its key {}",
        client.base(),
        key.key_id()
    ))
}

/// Where the store lists a package it publishes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    pub featured: bool,
    pub category: Option<String>,
    pub publisher: Option<String>,
}

/// Which shelf of the catalog [`StoreClient::listing`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shelf {
    All,
    Featured,
    Popular,
}

/// How long a skill download may take in all.
pub const SKILL_DOWNLOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// How long a catalog request may take in all: the person is waiting on a page.
pub const CATALOG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// Percent-encodes everything but ASCII letters and digits.
fn escape(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn check_id(id: &str) -> Result<()> {
    if id.is_empty()
        || !id.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
        })
    {
        return Err(Error::NotInstalled(format!("`{id}` is not an app id")));
    }
    Ok(())
}

fn check_skill_name(name: &str) -> Result<()> {
    osprey_types::skill_md::check_name(name)
        .map_err(|why| Error::NotInstalled(format!("`{name}` is not a skill name: {why}")))
}

/// The whole body of `response`, refused with `too_large()` once it declares or sends more than
/// `limit` bytes (counted as they arrive, so a lying or absent length cannot get past it).
async fn read_capped(
    mut response: reqwest::Response,
    limit: u64,
    what: &str,
    too_large: impl Fn() -> Error,
) -> Result<Vec<u8>> {
    if response
        .content_length()
        .is_some_and(|length| length > limit)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Error::StoreUnavailable(format!("reading {what}: {e}")))?
    {
        if body.len() as u64 + chunk.len() as u64 > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Why the store could not be reached, in one sentence.
fn unreachable(base: &str, error: &reqwest::Error) -> String {
    if error.is_timeout() {
        format!("the store at {base} did not answer in time")
    } else if error.is_connect() {
        format!("the store at {base} could not be reached")
    } else {
        format!("the store at {base} failed: {error}")
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
