//! The HTTP API: apps under `/api/v1/apps`, skills under `/api/v1/skills` (`crate::skills`).

use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use osprey_apps::napp::{self, Limits};
use osprey_apps::trust::{Revocation, RevokedKind};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::catalog::{self, AppEntry, Listing, Review};
use crate::{Error, Result, Store};

/// The largest package accepted for publishing (the download cap clients use is 600 MB).
const MAX_PUBLISH_BYTES: usize = 600 * 1024 * 1024;
const DEFAULT_PER_PAGE: u32 = 20;
const MAX_PER_PAGE: u32 = 100;

pub(crate) fn router(store: Store) -> Router {
    Router::new()
        .route(
            "/api/v1/apps",
            get(list)
                .post(publish)
                .layer(DefaultBodyLimit::max(MAX_PUBLISH_BYTES)),
        )
        .route("/api/v1/apps/featured", get(featured))
        .route("/api/v1/apps/popular", get(popular))
        .route("/api/v1/apps/categories", get(categories))
        .route("/api/v1/apps/signing-key", get(signing_key))
        .route("/api/v1/apps/revocations", get(revocations))
        .route("/api/v1/apps/{id}", get(app))
        .route("/api/v1/apps/{id}/download", get(download))
        .route("/api/v1/apps/{id}/revoke", post(revoke))
        .route("/api/v1/apps/{id}/feature", post(feature))
        .route("/api/v1/apps/{id}/reviews", get(reviews).post(add_review))
        .merge(crate::skills::router())
        .merge(crate::events::router())
        // Every answer is JSON with a code, a wrong path or method too.
        .fallback(|| async {
            Error::NotFound("no such endpoint under /api/v1/apps or /api/v1/skills".into())
        })
        .method_not_allowed_fallback(|| async {
            Error::InvalidRequest("this endpoint does not take that method".into())
        })
        .with_state(store)
}

/// A JSON request body, whatever its content type says: a malformed one is `invalid_request`
/// (in JSON), never axum's plain-text 400 or 415.
pub(crate) fn json_body<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T> {
    serde_json::from_slice(body).map_err(|e| {
        Error::InvalidRequest(format!("the request body is not the expected JSON: {e}"))
    })
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = match &self {
            Error::Unauthorized => StatusCode::UNAUTHORIZED,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::VersionExists(_) => StatusCode::CONFLICT,
            Error::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            Error::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::Package(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Error::Database(_) | Error::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let reason = match &self {
            Error::Package(inner) => inner.reason(),
            _ => None,
        };
        let body = json!({"code": self.code(), "reason": reason, "message": self.to_string()});
        (status, Json(body)).into_response()
    }
}

pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

pub(crate) fn with_db<T>(
    store: &Store,
    f: impl FnOnce(&rusqlite::Connection) -> Result<T>,
) -> Result<T> {
    let db = store.inner.db.lock().unwrap_or_else(|e| e.into_inner());
    f(&db)
}

pub(crate) fn require_admin(store: &Store, headers: &HeaderMap) -> Result<()> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    let expected = store.inner.admin_token.as_bytes();
    // Compare without stopping at the first difference.
    let same = given.len() == expected.len()
        && given
            .bytes()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if same && !expected.is_empty() {
        Ok(())
    } else {
        Err(Error::Unauthorized)
    }
}

#[derive(Deserialize)]
pub(crate) struct Page {
    pub(crate) q: Option<String>,
    pub(crate) category: Option<String>,
    pub(crate) page: Option<u32>,
    pub(crate) per_page: Option<u32>,
}

/// The page number (from 1) and its size (1 to 100, 20 when not given).
pub(crate) fn page_bounds(page: &Page) -> (u32, u32) {
    let number = page.page.unwrap_or(1).max(1);
    let per_page = page
        .per_page
        .unwrap_or(DEFAULT_PER_PAGE)
        .clamp(1, MAX_PER_PAGE);
    (number, per_page)
}

/// A `LIKE` pattern matching `query` anywhere, its wildcards escaped (`ESCAPE '\'`).
pub(crate) fn like_pattern(query: &str) -> String {
    format!(
        "%{}%",
        query
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    )
}

fn page_of(store: &Store, listing: Listing<'_>, page: &Page) -> Result<Json<serde_json::Value>> {
    let (number, per_page) = page_bounds(page);
    let category = page.category.as_deref().filter(|c| !c.is_empty());
    let (apps, total) = with_db(store, |db| {
        catalog::list(db, listing, category, number, per_page)
    })?;
    Ok(Json(
        json!({"apps": apps, "total": total, "page": number, "per_page": per_page}),
    ))
}

async fn list(State(store): State<Store>, Query(page): Query<Page>) -> Result<impl IntoResponse> {
    let listing = match page.q.as_deref().filter(|q| !q.is_empty()) {
        Some(query) => Listing::Search(query),
        None => Listing::All,
    };
    page_of(&store, listing, &page)
}

async fn featured(
    State(store): State<Store>,
    Query(page): Query<Page>,
) -> Result<impl IntoResponse> {
    page_of(&store, Listing::Featured, &page)
}

async fn popular(
    State(store): State<Store>,
    Query(page): Query<Page>,
) -> Result<impl IntoResponse> {
    page_of(&store, Listing::Popular, &page)
}

async fn categories(State(store): State<Store>) -> Result<Json<Vec<catalog::Category>>> {
    with_db(&store, catalog::categories).map(Json)
}

async fn app(State(store): State<Store>, Path(id): Path<String>) -> Result<Json<AppEntry>> {
    with_db(&store, |db| catalog::get(db, &id)).map(Json)
}

async fn signing_key(State(store): State<Store>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        store.public_key_json(),
    )
}

async fn revocations(State(store): State<Store>) -> Result<Json<Vec<Revocation>>> {
    with_db(&store, catalog::revocations).map(Json)
}

#[derive(Deserialize)]
struct PublishOptions {
    #[serde(default)]
    featured: bool,
    /// The shelf to list it on; kept from the previous version when not given.
    category: Option<String>,
    /// Who publishes it; kept from the previous version when not given.
    publisher: Option<String>,
}

/// A category is a short lowercase word or two (`productivity`, `developer-tools`).
fn valid_category(category: &str) -> bool {
    (1..=40).contains(&category.len())
        && category
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The listing options a publish may give (apps and skills alike): a category of 1 to 40 of
/// a-z, 0-9 and -, a publisher of 1 to 100 bytes.
pub(crate) fn check_listing(category: Option<&str>, publisher: Option<&str>) -> Result<()> {
    if let Some(category) = category
        && !valid_category(category)
    {
        return Err(Error::InvalidRequest(format!(
            "category `{category}` must be 1 to 40 of a-z, 0-9 and -"
        )));
    }
    if let Some(publisher) = publisher
        && (publisher.trim().is_empty() || publisher.len() > 100)
    {
        return Err(Error::InvalidRequest(
            "publisher must be 1 to 100 bytes".into(),
        ));
    }
    Ok(())
}

async fn publish(
    State(store): State<Store>,
    headers: HeaderMap,
    Query(options): Query<PublishOptions>,
    body: Bytes,
) -> Result<(StatusCode, Json<AppEntry>)> {
    require_admin(&store, &headers)?;
    check_listing(options.category.as_deref(), options.publisher.as_deref())?;
    let entry = tokio::task::spawn_blocking(move || publish_blocking(&store, &body, options))
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))??;
    Ok((StatusCode::CREATED, Json(entry)))
}

/// Unpacks the upload with every install-time check, signs it with the store key, and stores
/// the signed package as the app's latest version.
fn publish_blocking(store: &Store, body: &[u8], options: PublishOptions) -> Result<AppEntry> {
    let work = tempfile::tempdir_in(store.blobs())?;
    let staged = napp::extract(body, work.path(), &Limits::default(), false)?;
    staged.sign(&store.inner.key)?;
    let manifest = staged.manifest().clone();
    let blob = store
        .blobs()
        .join(format!("{}-{}.napp", manifest.id, manifest.version));
    if blob.exists() {
        return Err(Error::VersionExists(format!(
            "{} {} is already published",
            manifest.id, manifest.version
        )));
    }
    napp::pack_to_file(staged.path(), &blob)?;
    let bytes = std::fs::read(&blob)?;
    let entry = AppEntry {
        id: manifest.id.clone(),
        name: manifest.name.clone(),
        description: manifest.description.clone(),
        version: manifest.version.clone(),
        size: bytes.len() as u64,
        sha256: hex::encode(Sha256::digest(&bytes)),
        permissions: manifest.permissions.clone(),
        published_at: now(),
        downloads: 0,
        featured: options.featured,
        rating: None,
        category: options.category,
        publisher: options.publisher.map(|p| p.trim().to_string()),
        reviews: 0,
    };
    let event = json!({"kind": "app", "id": entry.id, "version": entry.version,
        "permissions": entry.permissions});
    let listed = store.change("updated", event, None, |db| {
        catalog::upsert(db, &entry)?;
        catalog::get(db, &entry.id)
    });
    match listed {
        Ok((listed, _)) => Ok(listed),
        Err(error) => {
            let _ = std::fs::remove_file(&blob);
            Err(error)
        }
    }
}

/// How much of a package file each read of a download takes.
const DOWNLOAD_CHUNK: usize = 256 * 1024;

async fn download(State(store): State<Store>, Path(id): Path<String>) -> Result<Response> {
    let entry = with_db(&store, |db| catalog::get(db, &id))?;
    let path = store
        .blobs()
        .join(format!("{}-{}.napp", entry.id, entry.version));
    let file = tokio::fs::File::open(&path).await?;
    let length = file.metadata().await?.len();
    with_db(&store, |db| catalog::count_download(db, &id))?;
    // Large reads: the default 4 KiB chunks cost a frame, a wake-up and a client write each,
    // and made a 20 MB download take ~300 ms on loopback.
    let body = Body::from_stream(tokio_util::io::ReaderStream::with_capacity(
        file,
        DOWNLOAD_CHUNK,
    ));
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_LENGTH, length.to_string()),
        ],
        body,
    )
        .into_response())
}

#[derive(Deserialize)]
struct RevokeRequest {
    version: Option<String>,
    reason: String,
}

async fn revoke(
    State(store): State<Store>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<StatusCode> {
    revoke_kind(&store, &headers, RevokedKind::App, id, &body)
}

/// Adds an app or skill to the revocation list, then tells the running installs
/// (`revoked`, with the reason and the versions: `null` for every version).
pub(crate) fn revoke_kind(
    store: &Store,
    headers: &HeaderMap,
    kind: RevokedKind,
    id: String,
    body: &Bytes,
) -> Result<StatusCode> {
    require_admin(store, headers)?;
    let request: RevokeRequest = json_body(body)?;
    if request.reason.trim().is_empty() {
        return Err(Error::InvalidRequest(
            "a revocation needs a reason: installs show it".into(),
        ));
    }
    let revocation = Revocation {
        id,
        version: request.version,
        reason: request.reason,
        kind,
    };
    let event = json!({"kind": revocation.kind, "id": revocation.id,
        "reason": revocation.reason, "versions": revocation.version.as_ref().map(|v| vec![v])});
    store.change("revoked", event, None, |db| {
        catalog::revoke(db, &revocation, now())
    })?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct FeatureRequest {
    featured: bool,
}

async fn feature(
    State(store): State<Store>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<StatusCode> {
    let request: FeatureRequest = json_body(&body)?;
    require_admin(&store, &headers)?;
    with_db(&store, |db| {
        catalog::set_featured(db, &id, request.featured)
    })?;
    Ok(StatusCode::NO_CONTENT)
}

async fn reviews(State(store): State<Store>, Path(id): Path<String>) -> Result<Json<Vec<Review>>> {
    with_db(&store, |db| {
        catalog::get(db, &id)?;
        catalog::reviews(db, &id)
    })
    .map(Json)
}

async fn add_review(
    State(store): State<Store>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<StatusCode> {
    let review: Review = json_body(&body)?;
    with_db(&store, |db| catalog::add_review(db, &id, &review, now()))?;
    Ok(StatusCode::CREATED)
}
