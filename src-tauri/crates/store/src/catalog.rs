//! The store's database: apps (latest version of each), revocations and reviews.

use osprey_apps::trust::{Revocation, RevokedKind};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

pub(crate) fn create_schema(db: &Connection) -> Result<()> {
    db.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE IF NOT EXISTS apps (
             id TEXT PRIMARY KEY,
             name TEXT NOT NULL,
             description TEXT NOT NULL,
             version TEXT NOT NULL,
             size INTEGER NOT NULL,
             sha256 TEXT NOT NULL,
             permissions TEXT NOT NULL,
             published_at INTEGER NOT NULL,
             downloads INTEGER NOT NULL DEFAULT 0,
             featured INTEGER NOT NULL DEFAULT 0,
             category TEXT,
             publisher TEXT
         );
         CREATE TABLE IF NOT EXISTS revocations (
             id TEXT NOT NULL,
             version TEXT,
             reason TEXT NOT NULL,
             revoked_at INTEGER NOT NULL
         );
         CREATE TABLE IF NOT EXISTS reviews (
             app_id TEXT NOT NULL,
             author TEXT NOT NULL,
             rating INTEGER NOT NULL,
             body TEXT NOT NULL,
             created_at INTEGER NOT NULL
         );",
    )?;
    // Stores created before categories, publishers and skill revocations: add the columns.
    for (table, column, definition) in [
        ("apps", "category", "TEXT"),
        ("apps", "publisher", "TEXT"),
        ("revocations", "kind", "TEXT NOT NULL DEFAULT 'app'"),
    ] {
        let present: bool = db.query_row(
            &format!("SELECT COUNT(*) FROM pragma_table_info('{table}') WHERE name = ?1"),
            [column],
            |row| row.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if !present {
            db.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition}"
            ))?;
        }
    }
    Ok(())
}

/// One category with how many apps it holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Category {
    pub name: String,
    pub count: u64,
}

/// One app in the catalog.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppEntry {
    pub id: String,
    pub name: String,
    pub description: String,
    pub version: String,
    pub size: u64,
    pub sha256: String,
    pub permissions: Vec<String>,
    pub published_at: i64,
    pub downloads: u64,
    pub featured: bool,
    /// Mean rating, when there are reviews.
    pub rating: Option<f64>,
    /// The shelf it is listed on (`productivity`, `developer`, ...), as the publisher chose.
    #[serde(default)]
    pub category: Option<String>,
    /// Who publishes it, as the store operator recorded at publishing.
    #[serde(default)]
    pub publisher: Option<String>,
    /// How many reviews its rating is the mean of.
    #[serde(default)]
    pub reviews: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Review {
    pub author: String,
    pub rating: u8,
    pub body: String,
    #[serde(default)]
    pub created_at: i64,
}

const SELECT: &str = "SELECT id, name, description, version, size, sha256, permissions,
    published_at, downloads, featured,
    (SELECT AVG(rating) FROM reviews WHERE reviews.app_id = apps.id), category, publisher,
    (SELECT COUNT(*) FROM reviews WHERE reviews.app_id = apps.id) FROM apps";

fn entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<AppEntry> {
    let permissions: String = row.get(6)?;
    Ok(AppEntry {
        id: row.get(0)?,
        name: row.get(1)?,
        description: row.get(2)?,
        version: row.get(3)?,
        size: row.get::<_, i64>(4)? as u64,
        sha256: row.get(5)?,
        permissions: serde_json::from_str(&permissions).unwrap_or_default(),
        published_at: row.get(7)?,
        downloads: row.get::<_, i64>(8)? as u64,
        featured: row.get::<_, i64>(9)? != 0,
        rating: row.get(10)?,
        category: row.get(11)?,
        publisher: row.get(12)?,
        reviews: row.get::<_, i64>(13)? as u64,
    })
}

pub(crate) fn upsert(db: &Connection, app: &AppEntry) -> Result<()> {
    let existing: Option<String> = db
        .query_row("SELECT version FROM apps WHERE id = ?1", [&app.id], |row| {
            row.get(0)
        })
        .optional()?;
    if existing.as_deref() == Some(app.version.as_str()) {
        return Err(Error::VersionExists(format!(
            "{} {} is already published",
            app.id, app.version
        )));
    }
    db.execute(
        "INSERT INTO apps (id, name, description, version, size, sha256, permissions, published_at, featured, category, publisher)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         ON CONFLICT(id) DO UPDATE SET name = ?2, description = ?3, version = ?4, size = ?5,
             sha256 = ?6, permissions = ?7, published_at = ?8, featured = MAX(featured, ?9),
             category = COALESCE(?10, category), publisher = COALESCE(?11, publisher)",
        params![
            app.id,
            app.name,
            app.description,
            app.version,
            app.size as i64,
            app.sha256,
            serde_json::to_string(&app.permissions).unwrap_or_default(),
            app.published_at,
            app.featured as i64,
            app.category,
            app.publisher,
        ],
    )?;
    Ok(())
}

pub(crate) fn get(db: &Connection, id: &str) -> Result<AppEntry> {
    db.query_row(&format!("{SELECT} WHERE id = ?1"), [id], entry)
        .optional()?
        .ok_or_else(|| Error::NotFound(format!("no app `{id}`")))
}

/// Which slice of the catalog.
pub(crate) enum Listing<'a> {
    All,
    Search(&'a str),
    Featured,
    Popular,
}

/// (entries on the page, total matching), within `category` when given.
pub(crate) fn list(
    db: &Connection,
    listing: Listing<'_>,
    category: Option<&str>,
    page: u32,
    per_page: u32,
) -> Result<(Vec<AppEntry>, u64)> {
    let (filter, order, pattern) = match listing {
        Listing::All => ("1 = 1", "name COLLATE NOCASE, id", None),
        Listing::Search(query) => (
            "(id LIKE ?1 ESCAPE '\\' OR name LIKE ?1 ESCAPE '\\' OR description LIKE ?1 ESCAPE '\\')",
            "name COLLATE NOCASE, id",
            Some(crate::api::like_pattern(query)),
        ),
        Listing::Featured => ("featured = 1", "name COLLATE NOCASE, id", None),
        Listing::Popular => ("1 = 1", "downloads DESC, id", None),
    };
    // The category is the last parameter: `?2` after a search pattern, else `?1`.
    let category_filter = match (category, &pattern) {
        (None, _) => String::new(),
        (Some(_), Some(_)) => " AND category = ?2".to_string(),
        (Some(_), None) => " AND category = ?1".to_string(),
    };
    let filter = format!("{filter}{category_filter}");
    let mut parameters: Vec<&dyn rusqlite::ToSql> = Vec::new();
    if let Some(pattern) = &pattern {
        parameters.push(pattern);
    }
    if let Some(category) = &category {
        parameters.push(category);
    }
    let offset = i64::from(page.saturating_sub(1)) * i64::from(per_page);
    let sql = format!(
        "{SELECT} WHERE {filter} ORDER BY {order} LIMIT {} OFFSET {offset}",
        per_page
    );
    let count_sql = format!("SELECT COUNT(*) FROM apps WHERE {filter}");
    let mut statement = db.prepare(&sql)?;
    let entries = statement
        .query_map(parameters.as_slice(), entry)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let total = db.query_row(&count_sql, parameters.as_slice(), |row| {
        row.get::<_, i64>(0)
    })?;
    Ok((entries, total as u64))
}

/// Every category with at least one app, by name.
pub(crate) fn categories(db: &Connection) -> Result<Vec<Category>> {
    let mut statement = db.prepare(
        "SELECT category, COUNT(*) FROM apps WHERE category IS NOT NULL
         GROUP BY category ORDER BY category",
    )?;
    let rows = statement
        .query_map([], |row| {
            Ok(Category {
                name: row.get(0)?,
                count: row.get::<_, i64>(1)? as u64,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

pub(crate) fn count_download(db: &Connection, id: &str) -> Result<()> {
    db.execute(
        "UPDATE apps SET downloads = downloads + 1 WHERE id = ?1",
        [id],
    )?;
    Ok(())
}

pub(crate) fn set_featured(db: &Connection, id: &str, featured: bool) -> Result<()> {
    let changed = db.execute(
        "UPDATE apps SET featured = ?2 WHERE id = ?1",
        params![id, featured as i64],
    )?;
    if changed == 0 {
        return Err(Error::NotFound(format!("no app `{id}`")));
    }
    Ok(())
}

pub(crate) fn revoke(db: &Connection, revocation: &Revocation, now: i64) -> Result<()> {
    db.execute(
        "INSERT INTO revocations (id, version, reason, revoked_at, kind)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            revocation.id,
            revocation.version,
            revocation.reason,
            now,
            kind_name(revocation.kind)
        ],
    )?;
    Ok(())
}

fn kind_name(kind: RevokedKind) -> &'static str {
    match kind {
        RevokedKind::App => "app",
        RevokedKind::Skill => "skill",
    }
}

pub(crate) fn revocations(db: &Connection) -> Result<Vec<Revocation>> {
    let mut statement =
        db.prepare("SELECT id, version, reason, kind FROM revocations ORDER BY revoked_at, rowid")?;
    let rows = statement
        .query_map([], |row| {
            Ok(Revocation {
                id: row.get(0)?,
                version: row.get(1)?,
                reason: row.get(2)?,
                kind: match row.get::<_, String>(3)?.as_str() {
                    "skill" => RevokedKind::Skill,
                    _ => RevokedKind::App,
                },
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

pub(crate) fn add_review(db: &Connection, app_id: &str, review: &Review, now: i64) -> Result<()> {
    get(db, app_id)?;
    if !(1..=5).contains(&review.rating) {
        return Err(Error::InvalidRequest("rating must be 1 to 5".into()));
    }
    if review.author.trim().is_empty() || review.author.len() > 100 || review.body.len() > 10_000 {
        return Err(Error::InvalidRequest(
            "author (1-100) and body (at most 10,000 bytes) required".into(),
        ));
    }
    db.execute(
        "INSERT INTO reviews (app_id, author, rating, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![app_id, review.author, review.rating, review.body, now],
    )?;
    Ok(())
}

pub(crate) fn reviews(db: &Connection, app_id: &str) -> Result<Vec<Review>> {
    let mut statement = db.prepare(
        "SELECT author, rating, body, created_at FROM reviews WHERE app_id = ?1
         ORDER BY created_at DESC, rowid DESC",
    )?;
    let rows = statement
        .query_map([app_id], |row| {
            Ok(Review {
                author: row.get(0)?,
                rating: row.get(1)?,
                body: row.get(2)?,
                created_at: row.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
