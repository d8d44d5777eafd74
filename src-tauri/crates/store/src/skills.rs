//! The store's skills: Agent Skills folders published as `.tar.gz` archives, checked as an
//! install checks them (`osprey_apps::skill_package`), packed again deterministically, signed as
//! a whole with the store's key and listed. The API lives under `/api/v1/skills`; the database
//! table is `skills` (the latest version of each), the archives `skills/<name>-<version>.tar.gz`.

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use osprey_apps::ArchiveSignature;
use osprey_apps::skill_package::{self, SkillLimits};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::api::{Page, check_listing, like_pattern, now, page_bounds, require_admin, with_db};
use crate::{Error, Result, Store};

/// The largest skill archive accepted for publishing (clients download at most 25 MB).
const MAX_PUBLISH_BYTES: usize = 25 * 1024 * 1024;

pub(crate) fn create_schema(db: &Connection) -> Result<()> {
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS skills (
             name TEXT PRIMARY KEY,
             description TEXT NOT NULL,
             version TEXT NOT NULL,
             author TEXT,
             license TEXT,
             files TEXT NOT NULL,
             size INTEGER NOT NULL,
             sha256 TEXT NOT NULL,
             signature TEXT NOT NULL,
             published_at INTEGER NOT NULL,
             downloads INTEGER NOT NULL DEFAULT 0,
             featured INTEGER NOT NULL DEFAULT 0,
             category TEXT,
             publisher TEXT
         );",
    )?;
    Ok(())
}

/// One skill in the catalog (its latest version).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    pub name: String,
    pub description: String,
    pub version: String,
    /// `metadata.author` from its SKILL.md, else the publisher the operator named.
    pub author: Option<String>,
    pub license: Option<String>,
    /// Every file in the skill folder, by relative path.
    pub files: Vec<String>,
    /// The archive's size in bytes.
    pub size: u64,
    pub sha256: String,
    /// The store's signature over the archive.
    pub signature: ArchiveSignature,
    pub published_at: i64,
    /// How many times it was downloaded to be installed.
    pub installs: u64,
    pub featured: bool,
    pub category: Option<String>,
    pub publisher: Option<String>,
}

const SELECT: &str = "SELECT name, description, version, author, license, files, size, sha256,
    signature, published_at, downloads, featured, category, publisher FROM skills";

fn entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<SkillEntry> {
    let files: String = row.get(5)?;
    let signature: String = row.get(8)?;
    Ok(SkillEntry {
        name: row.get(0)?,
        description: row.get(1)?,
        version: row.get(2)?,
        author: row.get(3)?,
        license: row.get(4)?,
        files: serde_json::from_str(&files).unwrap_or_default(),
        size: row.get::<_, i64>(6)? as u64,
        sha256: row.get(7)?,
        signature: serde_json::from_str(&signature).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(8, rusqlite::types::Type::Text, Box::new(e))
        })?,
        published_at: row.get(9)?,
        installs: row.get::<_, i64>(10)? as u64,
        featured: row.get::<_, i64>(11)? != 0,
        category: row.get(12)?,
        publisher: row.get(13)?,
    })
}

fn get_skill(db: &Connection, name: &str) -> Result<SkillEntry> {
    db.query_row(&format!("{SELECT} WHERE name = ?1"), [name], entry)
        .optional()?
        .ok_or_else(|| Error::NotFound(format!("no skill `{name}`")))
}

fn upsert(db: &Connection, skill: &SkillEntry) -> Result<()> {
    let existing: Option<String> = db
        .query_row(
            "SELECT version FROM skills WHERE name = ?1",
            [&skill.name],
            |row| row.get(0),
        )
        .optional()?;
    if existing.as_deref() == Some(skill.version.as_str()) {
        return Err(Error::VersionExists(format!(
            "skill {} {} is already published",
            skill.name, skill.version
        )));
    }
    db.execute(
        "INSERT INTO skills (name, description, version, author, license, files, size, sha256,
             signature, published_at, featured, category, publisher)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT(name) DO UPDATE SET description = ?2, version = ?3, author = ?4,
             license = ?5, files = ?6, size = ?7, sha256 = ?8, signature = ?9,
             published_at = ?10, featured = MAX(featured, ?11),
             category = COALESCE(?12, category), publisher = COALESCE(?13, publisher)",
        params![
            skill.name,
            skill.description,
            skill.version,
            skill.author,
            skill.license,
            serde_json::to_string(&skill.files).unwrap_or_default(),
            skill.size as i64,
            skill.sha256,
            serde_json::to_string(&skill.signature).unwrap_or_default(),
            skill.published_at,
            skill.featured as i64,
            skill.category,
            skill.publisher,
        ],
    )?;
    Ok(())
}

/// Which slice of the skills.
enum Listing<'a> {
    All,
    Search(&'a str),
    Featured,
    Popular,
}

fn list(
    db: &Connection,
    listing: Listing<'_>,
    category: Option<&str>,
    page: u32,
    per_page: u32,
) -> Result<(Vec<SkillEntry>, u64)> {
    let (mut filter, order, pattern) = match listing {
        Listing::All => ("1 = 1".to_string(), "name, rowid", None),
        Listing::Search(query) => (
            "(name LIKE ?1 ESCAPE '\\' OR description LIKE ?1 ESCAPE '\\' \
             OR author LIKE ?1 ESCAPE '\\')"
                .to_string(),
            "name, rowid",
            Some(like_pattern(query)),
        ),
        Listing::Featured => ("featured = 1".to_string(), "name, rowid", None),
        Listing::Popular => ("1 = 1".to_string(), "downloads DESC, name", None),
    };
    let mut parameters: Vec<&dyn rusqlite::ToSql> = Vec::new();
    if let Some(pattern) = &pattern {
        parameters.push(pattern);
    }
    if let Some(category) = &category {
        filter.push_str(&format!(" AND category = ?{}", parameters.len() + 1));
        parameters.push(category);
    }
    let offset = i64::from(page.saturating_sub(1)) * i64::from(per_page);
    let mut statement = db.prepare(&format!(
        "{SELECT} WHERE {filter} ORDER BY {order} LIMIT {per_page} OFFSET {offset}"
    ))?;
    let entries = statement
        .query_map(parameters.as_slice(), entry)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let total = db.query_row(
        &format!("SELECT COUNT(*) FROM skills WHERE {filter}"),
        parameters.as_slice(),
        |row| row.get::<_, i64>(0),
    )?;
    Ok((entries, total as u64))
}

pub(crate) fn router() -> Router<Store> {
    Router::new()
        .route(
            "/api/v1/skills",
            get(list_skills)
                .post(publish)
                .layer(DefaultBodyLimit::max(MAX_PUBLISH_BYTES)),
        )
        .route("/api/v1/skills/featured", get(featured))
        .route("/api/v1/skills/popular", get(popular))
        .route("/api/v1/skills/categories", get(categories))
        .route("/api/v1/skills/{name}", get(skill))
        .route("/api/v1/skills/{name}/download", get(download))
        .route("/api/v1/skills/{name}/revoke", axum::routing::post(revoke))
}

fn page_of(store: &Store, listing: Listing<'_>, page: &Page) -> Result<Json<serde_json::Value>> {
    let (number, per_page) = page_bounds(page);
    let category = page.category.as_deref().filter(|c| !c.is_empty());
    let (skills, total) = with_db(store, |db| list(db, listing, category, number, per_page))?;
    Ok(Json(
        json!({"skills": skills, "total": total, "page": number, "per_page": per_page}),
    ))
}

async fn list_skills(
    State(store): State<Store>,
    Query(page): Query<Page>,
) -> Result<impl IntoResponse> {
    let listing = match page.q.as_deref().filter(|q| !q.trim().is_empty()) {
        Some(query) => Listing::Search(query.trim()),
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

async fn categories(State(store): State<Store>) -> Result<Json<Vec<crate::Category>>> {
    with_db(&store, |db| {
        let mut statement = db.prepare(
            "SELECT category, COUNT(*) FROM skills WHERE category IS NOT NULL
             GROUP BY category ORDER BY category",
        )?;
        let rows = statement
            .query_map([], |row| {
                Ok(crate::Category {
                    name: row.get(0)?,
                    count: row.get::<_, i64>(1)? as u64,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    })
    .map(Json)
}

async fn skill(State(store): State<Store>, Path(name): Path<String>) -> Result<Json<SkillEntry>> {
    with_db(&store, |db| get_skill(db, &name)).map(Json)
}

#[derive(Deserialize)]
struct DownloadOptions {
    /// A version still kept (the latest when not given).
    version: Option<String>,
}

async fn download(
    State(store): State<Store>,
    Path(name): Path<String>,
    Query(options): Query<DownloadOptions>,
) -> Result<Response> {
    let entry = with_db(&store, |db| get_skill(db, &name))?;
    let version = options.version.unwrap_or_else(|| entry.version.clone());
    // The version names a file: only a version string, never a path.
    if !osprey_apps::manifest::is_version(&version) {
        return Err(Error::InvalidRequest(format!(
            "`{version}` is not a version"
        )));
    }
    let path = store.skill_blobs().join(blob_name(&entry.name, &version));
    let bytes = match tokio::fs::read(&path).await {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NotFound(format!(
                "skill {name} {version} is not kept by this store"
            )));
        }
        Err(e) => return Err(e.into()),
    };
    with_db(&store, |db| {
        db.execute(
            "UPDATE skills SET downloads = downloads + 1 WHERE name = ?1",
            [&name],
        )?;
        Ok(())
    })?;
    Ok((
        [(header::CONTENT_TYPE, "application/gzip".to_owned())],
        bytes,
    )
        .into_response())
}

fn blob_name(name: &str, version: &str) -> String {
    format!("{name}-{version}.tar.gz")
}

#[derive(Deserialize)]
struct PublishOptions {
    #[serde(default)]
    featured: bool,
    category: Option<String>,
    publisher: Option<String>,
    /// The version when the SKILL.md names none in `metadata.version`.
    version: Option<String>,
}

async fn publish(
    State(store): State<Store>,
    headers: HeaderMap,
    Query(options): Query<PublishOptions>,
    body: Bytes,
) -> Result<(StatusCode, Json<SkillEntry>)> {
    require_admin(&store, &headers)?;
    check_listing(options.category.as_deref(), options.publisher.as_deref())?;
    let entry = tokio::task::spawn_blocking(move || publish_blocking(&store, &body, options))
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))??;
    Ok((StatusCode::CREATED, Json(entry)))
}

/// Unpacks the upload with every install-time check, packs the checked folder again (so what
/// clients get is a plain archive the store wrote), signs that archive and lists it.
fn publish_blocking(store: &Store, body: &[u8], options: PublishOptions) -> Result<SkillEntry> {
    let blobs = store.skill_blobs();
    std::fs::create_dir_all(&blobs)?;
    let work = tempfile::tempdir_in(&blobs)?;
    let staged = skill_package::extract_skill(body, work.path(), &SkillLimits::default(), None)?;
    let front = staged.frontmatter().clone();
    let name = staged.name().to_string();
    let version = front
        .metadata
        .get("version")
        .cloned()
        .or(options.version)
        .ok_or_else(|| {
            Error::InvalidRequest(format!(
                "skill `{name}` has no version: give its SKILL.md `metadata:` a `version: \
                 \"1.0.0\"`, or pass ?version=1.0.0 (`osprey store publish-skill --version 1.0.0`)"
            ))
        })?;
    if !osprey_apps::manifest::is_version(&version) {
        return Err(Error::InvalidRequest(format!(
            "`{version}` is not MAJOR.MINOR.PATCH (optionally -prerelease)"
        )));
    }
    let blob = blobs.join(blob_name(&name, &version));
    if blob.exists() {
        return Err(Error::VersionExists(format!(
            "skill {name} {version} is already published"
        )));
    }
    let (archive, _) = skill_package::pack_skill(staged.path())?;
    let signature = store.inner.key.sign_archive(&archive);
    let publisher = options.publisher.map(|p| p.trim().to_string());
    let entry = SkillEntry {
        name: name.clone(),
        description: front.description.clone().unwrap_or_default(),
        version,
        author: front
            .metadata
            .get("author")
            .cloned()
            .or_else(|| publisher.clone()),
        license: front.license.clone(),
        files: staged.files().to_vec(),
        size: archive.len() as u64,
        sha256: signature.sha256.clone(),
        signature,
        published_at: now(),
        installs: 0,
        featured: options.featured,
        category: options.category,
        publisher,
    };
    // Written under a temporary name and renamed: a half-written archive is never served.
    let temp = tempfile::NamedTempFile::new_in(&blobs)?;
    std::fs::write(temp.path(), &archive)?;
    temp.persist(&blob).map_err(|e| Error::Io(e.error))?;
    let event = json!({"kind": "skill", "id": name, "version": entry.version});
    let listed = store.change("updated", event, None, |db| {
        upsert(db, &entry)?;
        get_skill(db, &name)
    });
    match listed {
        Ok((listed, _)) => Ok(listed),
        Err(error) => {
            let _ = std::fs::remove_file(&blob);
            Err(error)
        }
    }
}

/// `POST /api/v1/skills/{name}/revoke` (admin; `{reason, version?}`): the skill goes on the
/// store's revocation list (kind `skill`), and installs remove it at their next sweep or at once
/// when they follow the event stream.
async fn revoke(
    State(store): State<Store>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<StatusCode> {
    with_db(&store, |db| get_skill(db, &name))?;
    crate::api::revoke_kind(
        &store,
        &headers,
        osprey_apps::trust::RevokedKind::Skill,
        name,
        &body,
    )
}
