//! Memory: what the agent keeps between sessions, in three layers (`tacit` facts about the
//! person and their preferences, `daily` notes, `entity` records about people, projects and
//! things), grouped by namespace, optionally keyed (a key is unique within its namespace, and
//! storing under it again replaces the content). Full-text search runs on SQLite FTS5 with bm25
//! ranking; the person's text is always turned into quoted terms, so no punctuation in it can be
//! read as FTS5 query syntax.
//!
//! Each memory also has an importance (1 to 5), the origin and session that stored it, optional
//! JSON metadata, tags (lower-case; lists and searches filter on any of them), and a use count:
//! recall and search hits are counted ([`Memory::touch`]), and search ranks by bm25 scaled up
//! by importance and use, so what is important and often needed comes first. Memories can be
//! linked (`relation` such as `related`, `part_of`, `about`); [`Memory::associations`] follows
//! the links one hop in both directions, which is how recall brings related memories along.

use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, Row, params};

use crate::{Database, Result, now_ms};

/// The memory layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryLayer {
    /// Lasting facts and preferences ("prefers metric units").
    Tacit,
    /// Day-to-day notes ("met Sam about the launch").
    Daily,
    /// Records about a person, project or thing.
    Entity,
}

impl MemoryLayer {
    pub const ALL: [MemoryLayer; 3] = [MemoryLayer::Tacit, MemoryLayer::Daily, MemoryLayer::Entity];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryLayer::Tacit => "tacit",
            MemoryLayer::Daily => "daily",
            MemoryLayer::Entity => "entity",
        }
    }

    /// Parses a layer name (case-insensitive).
    pub fn parse(name: &str) -> Option<Self> {
        MemoryLayer::ALL
            .into_iter()
            .find(|l| l.as_str().eq_ignore_ascii_case(name.trim()))
    }
}

impl std::fmt::Display for MemoryLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The namespace used when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";

/// The importance a memory gets when none is given.
pub const DEFAULT_IMPORTANCE: u8 = 3;

/// One stored memory.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryRow {
    pub id: i64,
    pub layer: MemoryLayer,
    pub namespace: String,
    pub key: Option<String>,
    pub content: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// 1 (trivia) to 5 (essential).
    pub importance: u8,
    /// The origin that stored it (`user`, `comm`, `app`, ...), when known.
    pub source: Option<String>,
    /// The session it was stored in, when known.
    pub source_session: Option<String>,
    /// A JSON object the storer attached.
    pub metadata: Option<String>,
    /// Its tags, sorted.
    pub tags: Vec<String>,
    /// How many times recall or search returned it.
    pub access_count: i64,
    pub accessed_ms: Option<i64>,
}

/// What to store.
#[derive(Clone, Debug)]
pub struct NewMemory<'a> {
    pub layer: MemoryLayer,
    pub namespace: &'a str,
    /// When set, storing again under the same namespace and key replaces the memory.
    pub key: Option<&'a str>,
    pub content: &'a str,
    /// 1 to 5; `None`: [`DEFAULT_IMPORTANCE`] for a new memory, unchanged when replacing.
    pub importance: Option<u8>,
    pub source: Option<&'a str>,
    pub source_session: Option<&'a str>,
    /// A JSON object; `None` keeps what a replaced memory had.
    pub metadata: Option<&'a str>,
    /// The tags; `None` keeps what a replaced memory had, `Some` replaces them.
    pub tags: Option<&'a [String]>,
}

impl Default for NewMemory<'_> {
    fn default() -> Self {
        NewMemory {
            layer: MemoryLayer::Daily,
            namespace: DEFAULT_NAMESPACE,
            key: None,
            content: "",
            importance: None,
            source: None,
            source_session: None,
            metadata: None,
            tags: None,
        }
    }
}

/// A memory reached over a link from one of the memories asked about.
#[derive(Clone, Debug, PartialEq)]
pub struct Association {
    pub memory: MemoryRow,
    /// The memory asked about that links to it (or that it links to).
    pub via: i64,
    pub relation: String,
    /// True when the link goes from `via` to this memory.
    pub outgoing: bool,
}

/// A search result: the memory and its relevance (higher is better; bm25 negated).
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryHit {
    pub memory: MemoryRow,
    pub score: f64,
}

/// Filters and paging for [`Memory::list`] and [`Memory::search`].
#[derive(Clone, Debug, Default)]
pub struct MemoryQuery<'a> {
    pub namespace: Option<&'a str>,
    pub layer: Option<MemoryLayer>,
    /// Only memories with any of these tags (none: no filter).
    pub tags: &'a [String],
    /// At most this many rows (all when `None`).
    pub limit: Option<u32>,
    pub offset: u32,
}

/// The memory repository.
#[derive(Clone, Debug)]
pub struct Memory {
    db: Database,
}

const COLUMNS: &str = "m.id, m.layer, m.namespace, m.key, m.content, m.created_ms, m.updated_ms, \
     m.importance, m.source, m.source_session, m.metadata, m.access_count, m.accessed_ms, \
     (SELECT group_concat(t.tag, char(31)) FROM \
        (SELECT tag FROM memory_tags WHERE memory_id = m.id ORDER BY tag) t)";

/// How many columns [`COLUMNS`] has (a query's own columns follow them).
const COLUMN_COUNT: usize = 14;

/// The SQL condition "has any of the tags in JSON array parameter `?n`" (true for NULL).
fn tag_filter(n: usize) -> String {
    format!(
        "(?{n} IS NULL OR m.id IN (SELECT memory_id FROM memory_tags \
          WHERE tag IN (SELECT value FROM json_each(?{n}))))"
    )
}

/// The tags filter as its SQL parameter: a JSON array, or NULL for none.
fn tags_param(tags: &[String]) -> Option<String> {
    (!tags.is_empty())
        .then(|| serde_json::to_string(&normalize_tags(tags)).expect("strings serialize"))
}

/// Tags as stored: trimmed, lower-case, without empties and duplicates, sorted.
pub fn normalize_tags(tags: &[String]) -> Vec<String> {
    let mut tags: Vec<String> = tags
        .iter()
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    tags.sort();
    tags.dedup();
    tags
}

/// Search order: bm25 (negative, lower is better) scaled up by importance (x0.9 for 1 to x1.3
/// for 5) and by use (up to x1.5, half of that after 5 uses), so relevance still leads.
const BOOSTED_RANK: &str = "bm25(memories_fts, 2.0, 1.0) * (0.8 + 0.1 * m.importance) \
     * (1.0 + 0.5 * m.access_count / (m.access_count + 5.0))";

fn memory_row(row: &Row<'_>) -> rusqlite::Result<MemoryRow> {
    let layer: String = row.get(1)?;
    let layer = MemoryLayer::parse(&layer).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            1,
            rusqlite::types::Type::Text,
            format!("unknown memory layer `{layer}`").into(),
        )
    })?;
    let tags: Option<String> = row.get(13)?;
    Ok(MemoryRow {
        id: row.get(0)?,
        layer,
        namespace: row.get(2)?,
        key: row.get(3)?,
        content: row.get(4)?,
        created_ms: row.get(5)?,
        updated_ms: row.get(6)?,
        importance: row.get(7)?,
        source: row.get(8)?,
        source_session: row.get(9)?,
        metadata: row.get(10)?,
        access_count: row.get(11)?,
        accessed_ms: row.get(12)?,
        tags: tags
            .map(|t| t.split('\u{1f}').map(String::from).collect())
            .unwrap_or_default(),
    })
}

/// Turns free text into a safe FTS5 query: every run of non-space characters that holds a letter
/// or digit becomes a quoted string (inner quotes doubled), and the terms are OR-ed so that bm25
/// ranks memories matching more of them first. Operators (`AND`, `NEAR(`, `*`, `^`, `:`) arrive
/// as plain quoted text. `None` when nothing searchable is left.
pub fn fts_query(text: &str) -> Option<String> {
    let terms: Vec<String> = text
        .split_whitespace()
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .take(64)
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

fn limit_of(limit: Option<u32>) -> i64 {
    limit.map(i64::from).unwrap_or(-1)
}

impl Memory {
    pub(crate) fn new(db: Database) -> Self {
        Memory { db }
    }

    /// Stores a memory. With a key, an existing memory under the same namespace and key is
    /// replaced (its layer and content updated, its id and creation time kept).
    pub fn store(&self, new: &NewMemory<'_>) -> Result<MemoryRow> {
        let now = now_ms();
        let namespace = if new.namespace.trim().is_empty() {
            DEFAULT_NAMESPACE
        } else {
            new.namespace.trim()
        };
        let key = new.key.map(str::trim).filter(|k| !k.is_empty());
        let id = self.db.with_conn(|c| {
            let tx = c.transaction()?;
            // Without a key the conflict clause never fires: every store is a new memory.
            let id: i64 = tx.query_row(
                "INSERT INTO memories (layer, namespace, key, content, created_ms, updated_ms,
                                       importance, source, source_session, metadata)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5, coalesce(?6, 3), ?7, ?8, ?9)
                 ON CONFLICT(namespace, key) WHERE key IS NOT NULL
                 DO UPDATE SET layer = excluded.layer, content = excluded.content,
                               updated_ms = excluded.updated_ms,
                               importance = coalesce(?6, importance),
                               source = coalesce(?7, source),
                               source_session = coalesce(?8, source_session),
                               metadata = coalesce(?9, metadata)
                 RETURNING id",
                params![
                    new.layer.as_str(),
                    namespace,
                    key,
                    new.content,
                    now,
                    new.importance,
                    new.source,
                    new.source_session,
                    new.metadata
                ],
                |r| r.get(0),
            )?;
            if let Some(tags) = new.tags {
                replace_tags(&tx, id, tags)?;
            }
            tx.commit()?;
            Ok(id)
        })?;
        self.get(id)?
            .ok_or(crate::Error::Sqlite(rusqlite::Error::QueryReturnedNoRows))
    }

    pub fn get(&self, id: i64) -> Result<Option<MemoryRow>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                &format!("SELECT {COLUMNS} FROM memories m WHERE m.id = ?1"),
                [id],
                memory_row,
            )
            .optional()?)
        })
    }

    /// The memory stored under `key` in `namespace`.
    pub fn recall(&self, namespace: &str, key: &str) -> Result<Option<MemoryRow>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                &format!("SELECT {COLUMNS} FROM memories m WHERE m.namespace = ?1 AND m.key = ?2"),
                params![namespace, key.trim()],
                memory_row,
            )
            .optional()?)
        })
    }

    /// Full-text search, best match first. Keys weigh twice as much as content.
    pub fn search(&self, text: &str, query: &MemoryQuery<'_>) -> Result<Vec<MemoryHit>> {
        let Some(fts) = fts_query(text) else {
            return Ok(Vec::new());
        };
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS}, {BOOSTED_RANK} AS rank
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                 WHERE memories_fts MATCH ?1
                   AND (?2 IS NULL OR m.namespace = ?2)
                   AND (?3 IS NULL OR m.layer = ?3)
                   AND {}
                 ORDER BY rank, m.id DESC LIMIT ?4 OFFSET ?5",
                tag_filter(6)
            ))?;
            let rows = stmt.query_map(
                params![
                    fts,
                    query.namespace,
                    query.layer.map(MemoryLayer::as_str),
                    limit_of(query.limit),
                    query.offset,
                    tags_param(query.tags)
                ],
                |r| {
                    Ok(MemoryHit {
                        memory: memory_row(r)?,
                        score: -r.get::<_, f64>(COLUMN_COUNT)?,
                    })
                },
            )?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Memories, most recently updated first.
    pub fn list(&self, query: &MemoryQuery<'_>) -> Result<Vec<MemoryRow>> {
        self.filtered(query, "m.updated_ms DESC, m.id DESC")
    }

    /// The memories to keep in mind first: most important, then most used, then newest.
    pub fn top(&self, query: &MemoryQuery<'_>) -> Result<Vec<MemoryRow>> {
        self.filtered(
            query,
            "m.importance DESC, m.access_count DESC, m.updated_ms DESC, m.id DESC",
        )
    }

    /// The memories `query` selects, in `order` (an SQL ORDER BY list over `m`).
    fn filtered(&self, query: &MemoryQuery<'_>, order: &str) -> Result<Vec<MemoryRow>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM memories m
                 WHERE (?1 IS NULL OR m.namespace = ?1) AND (?2 IS NULL OR m.layer = ?2)
                   AND {}
                 ORDER BY {order} LIMIT ?3 OFFSET ?4",
                tag_filter(5)
            ))?;
            let rows = stmt.query_map(
                params![
                    query.namespace,
                    query.layer.map(MemoryLayer::as_str),
                    limit_of(query.limit),
                    query.offset,
                    tags_param(query.tags)
                ],
                memory_row,
            )?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// How many memories match the filters (paging ignored).
    pub fn count(&self, query: &MemoryQuery<'_>) -> Result<i64> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                &format!(
                    "SELECT count(*) FROM memories m
                     WHERE (?1 IS NULL OR m.namespace = ?1) AND (?2 IS NULL OR m.layer = ?2)
                       AND {}",
                    tag_filter(3)
                ),
                params![
                    query.namespace,
                    query.layer.map(MemoryLayer::as_str),
                    tags_param(query.tags)
                ],
                |r| r.get(0),
            )?)
        })
    }

    /// Deletes one memory; whether it existed.
    pub fn delete(&self, id: i64) -> Result<bool> {
        self.db
            .with_conn(|c| Ok(c.execute("DELETE FROM memories WHERE id = ?1", [id])? > 0))
    }

    /// Deletes every memory in `namespace` (of one layer when given); how many went.
    pub fn clear(&self, namespace: &str, layer: Option<MemoryLayer>) -> Result<usize> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "DELETE FROM memories WHERE namespace = ?1 AND (?2 IS NULL OR layer = ?2)",
                params![namespace, layer.map(MemoryLayer::as_str)],
            )?)
        })
    }

    /// Stores many memories in one transaction (imports, benchmarks); how many were written.
    pub fn store_many(&self, items: &[NewMemory<'_>]) -> Result<usize> {
        let now = now_ms();
        self.db.with_conn(|c| {
            let tx = c.transaction()?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO memories (layer, namespace, key, content, created_ms, updated_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                     ON CONFLICT(namespace, key) WHERE key IS NOT NULL
                     DO UPDATE SET layer = excluded.layer, content = excluded.content,
                                   updated_ms = excluded.updated_ms",
                )?;
                for item in items {
                    let key: SqlValue = match item.key.map(str::trim).filter(|k| !k.is_empty()) {
                        Some(k) => SqlValue::Text(k.to_string()),
                        None => SqlValue::Null,
                    };
                    stmt.execute(params![
                        item.layer.as_str(),
                        item.namespace,
                        key,
                        item.content,
                        now
                    ])?;
                }
            }
            tx.commit()?;
            Ok(items.len())
        })
    }

    /// Counts a use of each memory in `ids` (a recall or search returned it): search ranks
    /// often-used memories up. Their content and update time stay as they were.
    pub fn touch(&self, ids: &[i64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids = serde_json::to_string(ids).expect("integers serialize");
        self.db.with_conn(|c| {
            c.execute(
                "UPDATE memories SET access_count = access_count + 1, accessed_ms = ?2
                 WHERE id IN (SELECT value FROM json_each(?1))",
                params![ids, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Links memory `from` to memory `to` with `relation`; false when that link existed. Fails
    /// with a constraint error when either memory is not there or both are the same.
    pub fn link(&self, from: i64, to: i64, relation: &str) -> Result<bool> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "INSERT INTO memory_links (from_id, to_id, relation, created_ms)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(from_id, to_id, relation) DO NOTHING",
                params![from, to, relation.trim(), now_ms()],
            )? > 0)
        })
    }

    /// Removes the links from `from` to `to` (of one relation when given); how many went.
    pub fn unlink(&self, from: i64, to: i64, relation: Option<&str>) -> Result<usize> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "DELETE FROM memory_links WHERE from_id = ?1 AND to_id = ?2
                   AND (?3 IS NULL OR relation = ?3)",
                params![from, to, relation.map(str::trim)],
            )?)
        })
    }

    /// The memories linked to any of `ids`, one hop either way, leaving out `ids` themselves:
    /// most important and most used first, each once (by its first link), at most `limit`.
    pub fn associations(&self, ids: &[i64], limit: u32) -> Result<Vec<Association>> {
        if ids.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let asked = serde_json::to_string(ids).expect("integers serialize");
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "WITH asked(id) AS (SELECT value FROM json_each(?1)),
                 hops(other, via, relation, outgoing) AS (
                     SELECT to_id, from_id, relation, 1 FROM memory_links
                      WHERE from_id IN asked AND to_id NOT IN asked
                     UNION ALL
                     SELECT from_id, to_id, relation, 0 FROM memory_links
                      WHERE to_id IN asked AND from_id NOT IN asked)
                 SELECT {COLUMNS}, h.via, h.relation, h.outgoing
                 FROM hops h JOIN memories m ON m.id = h.other
                 GROUP BY m.id
                 ORDER BY m.importance DESC, m.access_count DESC, m.updated_ms DESC, m.id DESC
                 LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![asked, limit], |r| {
                Ok(Association {
                    memory: memory_row(r)?,
                    via: r.get(COLUMN_COUNT)?,
                    relation: r.get(COLUMN_COUNT + 1)?,
                    outgoing: r.get(COLUMN_COUNT + 2)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Stores the embedding of memory `id` made by `model`, replacing any earlier one.
    pub fn set_vector(&self, id: i64, model: &str, vector: &[f32]) -> Result<()> {
        let bytes: Vec<u8> = vector.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO memory_vectors (memory_id, model, vector) VALUES (?1, ?2, ?3)
                 ON CONFLICT(memory_id) DO UPDATE SET model = excluded.model, vector = excluded.vector",
                params![id, model, bytes],
            )?;
            Ok(())
        })
    }

    /// Memories with no embedding by `model` yet (new, changed, or embedded by another model),
    /// oldest first, so a backfill can catch up a batch at a time.
    pub fn without_vector(&self, model: &str, limit: u32) -> Result<Vec<MemoryRow>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM memories m
                 LEFT JOIN memory_vectors v ON v.memory_id = m.id AND v.model = ?1
                 WHERE v.memory_id IS NULL ORDER BY m.id LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![model, limit], memory_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The memories whose `model` embeddings are nearest `vector` by cosine similarity, best
    /// first (score = the similarity). An exact scan: fine for the tens of thousands of memories
    /// a person accumulates, and it needs no index to keep in step.
    pub fn nearest(
        &self,
        vector: &[f32],
        model: &str,
        query: &MemoryQuery<'_>,
    ) -> Result<Vec<MemoryHit>> {
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let wanted = norm(vector);
        if wanted == 0.0 {
            return Ok(Vec::new());
        }
        let limit = query.limit.unwrap_or(u32::MAX) as usize + query.offset as usize;
        let mut scored: Vec<(f32, i64)> = self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT v.memory_id, v.vector FROM memory_vectors v JOIN memories m ON m.id = v.memory_id
                 WHERE v.model = ?1 AND (?2 IS NULL OR m.namespace = ?2) AND (?3 IS NULL OR m.layer = ?3)
                   AND {}",
                tag_filter(4)
            ))?;
            let mut rows = stmt.query(params![
                model,
                query.namespace,
                query.layer.map(MemoryLayer::as_str),
                tags_param(query.tags)
            ])?;
            let mut scored = Vec::new();
            while let Some(row) = rows.next()? {
                let bytes = row
                    .get_ref(1)?
                    .as_blob()
                    .map_err(rusqlite::Error::from)?;
                if bytes.len() != vector.len() * 4 {
                    continue; // another dimension: embedded by a differently sized model
                }
                let (mut dot, mut own) = (0f32, 0f32);
                for (chunk, wanted) in bytes.chunks_exact(4).zip(vector) {
                    let value = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                    dot += value * wanted;
                    own += value * value;
                }
                if own > 0.0 {
                    scored.push((dot / (own.sqrt() * wanted), row.get(0)?));
                }
            }
            Ok(scored)
        })?;
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        scored
            .into_iter()
            .skip(query.offset as usize)
            .take(limit)
            .filter_map(|(score, id)| match self.get(id) {
                Ok(Some(memory)) => Some(Ok(MemoryHit {
                    memory,
                    score: f64::from(score),
                })),
                Ok(None) => None,
                Err(err) => Some(Err(err)),
            })
            .collect()
    }
}

/// Replaces the tags of memory `id` with `tags` (normalized).
fn replace_tags(c: &rusqlite::Connection, id: i64, tags: &[String]) -> rusqlite::Result<()> {
    c.execute("DELETE FROM memory_tags WHERE memory_id = ?1", [id])?;
    let mut insert =
        c.prepare_cached("INSERT INTO memory_tags (memory_id, tag) VALUES (?1, ?2)")?;
    for tag in normalize_tags(tags) {
        insert.execute(params![id, tag])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_rank_by_cosine_and_go_stale_when_the_content_changes() {
        let db = Database::open_in_memory().unwrap();
        let memory = db.memory();
        let new = |key, content| NewMemory {
            layer: MemoryLayer::Tacit,
            namespace: "default",
            key: Some(key),
            content,
            ..NewMemory::default()
        };
        let north = memory.store(&new("a", "points north")).unwrap();
        let east = memory.store(&new("b", "points east")).unwrap();
        let other = memory.store(&new("c", "no vector yet")).unwrap();
        memory.set_vector(north.id, "m", &[1.0, 0.0]).unwrap();
        memory.set_vector(east.id, "m", &[0.0, 1.0]).unwrap();
        memory
            .set_vector(other.id, "other-model", &[1.0, 1.0, 1.0])
            .unwrap();
        let hits = memory
            .nearest(&[0.9, 0.1], "m", &MemoryQuery::default())
            .unwrap();
        let ids: Vec<i64> = hits.iter().map(|h| h.memory.id).collect();
        assert_eq!(ids, [north.id, east.id]);
        assert!(hits[0].score > 0.99 && hits[1].score < 0.2);
        let missing: Vec<i64> = memory
            .without_vector("m", 10)
            .unwrap()
            .iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(missing, [other.id]);
        // New content, same key: the old vector no longer describes it.
        memory.store(&new("a", "points south")).unwrap();
        let missing: Vec<i64> = memory
            .without_vector("m", 10)
            .unwrap()
            .iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(missing, [north.id, other.id]);
        // Deleting a memory deletes its vector.
        memory.delete(east.id).unwrap();
        assert!(
            memory
                .nearest(&[0.0, 1.0], "m", &MemoryQuery::default())
                .unwrap()
                .is_empty()
        );
    }

    fn db() -> Database {
        Database::open_in_memory().unwrap()
    }

    fn note<'a>(
        layer: MemoryLayer,
        namespace: &'a str,
        key: Option<&'a str>,
        content: &'a str,
    ) -> NewMemory<'a> {
        NewMemory {
            layer,
            namespace,
            key,
            content,
            ..NewMemory::default()
        }
    }

    #[test]
    fn bundled_sqlite_has_fts5() {
        let db = db();
        let options: Vec<String> = db
            .with_conn(|c| {
                let mut stmt = c.prepare("PRAGMA compile_options")?;
                let rows = stmt.query_map([], |r| r.get(0))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .unwrap();
        assert!(options.iter().any(|o| o == "ENABLE_FTS5"), "{options:?}");
    }

    #[test]
    fn stores_recalls_and_replaces_by_key() {
        let m = db().memory();
        let a = m
            .store(&note(
                MemoryLayer::Tacit,
                "user",
                Some("units"),
                "prefers metric",
            ))
            .unwrap();
        assert_eq!(a.layer, MemoryLayer::Tacit);
        assert_eq!(
            m.recall("user", "units").unwrap().unwrap().content,
            "prefers metric"
        );
        let b = m
            .store(&note(
                MemoryLayer::Entity,
                "user",
                Some("units"),
                "prefers imperial",
            ))
            .unwrap();
        assert_eq!(a.id, b.id);
        assert_eq!(b.created_ms, a.created_ms);
        assert_eq!(b.layer, MemoryLayer::Entity);
        assert_eq!(m.get(a.id).unwrap().unwrap().content, "prefers imperial");
        // The index follows the update: the old text is gone, the new one is found.
        assert!(
            m.search("metric", &MemoryQuery::default())
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            m.search("imperial", &MemoryQuery::default()).unwrap().len(),
            1
        );
        // Same key in another namespace is another memory.
        let c = m
            .store(&note(MemoryLayer::Tacit, "work", Some("units"), "SI"))
            .unwrap();
        assert_ne!(c.id, a.id);
        assert!(m.recall("nobody", "units").unwrap().is_none());
        // An empty namespace means the default one.
        let d = m.store(&note(MemoryLayer::Daily, "  ", None, "x")).unwrap();
        assert_eq!(d.namespace, DEFAULT_NAMESPACE);
    }

    #[test]
    fn search_ranks_with_bm25_and_filters() {
        let m = db().memory();
        m.store(&note(
            MemoryLayer::Daily,
            "a",
            None,
            "lunch with Sam about the launch plan",
        ))
        .unwrap();
        m.store(&note(
            MemoryLayer::Entity,
            "a",
            Some("sam"),
            "Sam Rivera, launch lead, launch launch",
        ))
        .unwrap();
        m.store(&note(
            MemoryLayer::Daily,
            "b",
            None,
            "the launch slipped a week",
        ))
        .unwrap();
        m.store(&note(MemoryLayer::Tacit, "a", None, "likes tea"))
            .unwrap();
        let all = m.search("launch", &MemoryQuery::default()).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].memory.key.as_deref(), Some("sam"), "{all:?}");
        assert!(all.windows(2).all(|w| w[0].score >= w[1].score));
        let ns = m
            .search(
                "launch",
                &MemoryQuery {
                    namespace: Some("a"),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(ns.len(), 2);
        let daily = m
            .search(
                "launch",
                &MemoryQuery {
                    layer: Some(MemoryLayer::Daily),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(daily.len(), 2);
        let paged = m
            .search(
                "launch",
                &MemoryQuery {
                    limit: Some(1),
                    offset: 1,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(paged.len(), 1);
        assert_eq!(paged[0].memory.id, all[1].memory.id);
        // Diacritics and case are folded.
        m.store(&note(MemoryLayer::Daily, "a", None, "Café Zürich"))
            .unwrap();
        assert_eq!(
            m.search("cafe zurich", &MemoryQuery::default())
                .unwrap()
                .len(),
            1
        );
        // Terms are OR-ed: more matching terms rank higher.
        let two = m.search("tea launch", &MemoryQuery::default()).unwrap();
        assert_eq!(two.len(), 4);
    }

    #[test]
    fn hostile_queries_are_plain_text() {
        let m = db().memory();
        m.store(&note(
            MemoryLayer::Daily,
            "a",
            None,
            "AND OR NOT near the col:umn \"quoted\" star*",
        ))
        .unwrap();
        for q in [
            "\"",
            "\"\"",
            "AND",
            "OR",
            "NOT",
            "*",
            "NEAR(",
            "NEAR(a b",
            "a AND",
            "(",
            ")",
            "^",
            ":",
            "col:umn",
            "-x",
            "+",
            "{a b}:c",
            "star*",
            "\"quoted",
            "a\" OR \"b",
            "'; DROP TABLE memories; --",
            "",
            "   ",
            "\u{0}",
            "☃",
        ] {
            let got = m.search(q, &MemoryQuery::default());
            assert!(got.is_ok(), "query {q:?} failed: {got:?}");
        }
        assert_eq!(m.search("AND", &MemoryQuery::default()).unwrap().len(), 1);
        assert_eq!(m.search("near", &MemoryQuery::default()).unwrap().len(), 1);
        assert_eq!(
            m.search("\"quoted", &MemoryQuery::default()).unwrap().len(),
            1
        );
        assert_eq!(
            m.search("col:umn", &MemoryQuery::default()).unwrap().len(),
            1
        );
        assert!(m.search("*", &MemoryQuery::default()).unwrap().is_empty());
        assert_eq!(m.count(&MemoryQuery::default()).unwrap(), 1);
        assert_eq!(fts_query("a\"b c"), Some("\"a\"\"b\" OR \"c\"".to_string()));
        assert_eq!(fts_query(" * ( ) "), None);
    }

    #[test]
    fn lists_pages_deletes_and_clears() {
        let m = db().memory();
        for i in 0..5 {
            m.store(&note(MemoryLayer::Daily, "a", None, &format!("note {i}")))
                .unwrap();
        }
        m.store(&note(MemoryLayer::Tacit, "a", None, "fact"))
            .unwrap();
        let b = m
            .store(&note(MemoryLayer::Daily, "b", None, "note b"))
            .unwrap();
        let page = m
            .list(&MemoryQuery {
                namespace: Some("a"),
                limit: Some(2),
                offset: 0,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(page.len(), 2);
        assert_eq!(page[0].content, "fact");
        let rest = m
            .list(&MemoryQuery {
                namespace: Some("a"),
                limit: Some(10),
                offset: 2,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(rest.len(), 4);
        assert_eq!(
            m.list(&MemoryQuery {
                layer: Some(MemoryLayer::Tacit),
                ..Default::default()
            })
            .unwrap()
            .len(),
            1
        );
        assert_eq!(m.count(&MemoryQuery::default()).unwrap(), 7);

        assert!(m.delete(b.id).unwrap());
        assert!(!m.delete(b.id).unwrap());
        assert!(m.search("b", &MemoryQuery::default()).unwrap().is_empty());

        assert_eq!(m.clear("a", Some(MemoryLayer::Tacit)).unwrap(), 1);
        assert_eq!(m.clear("a", None).unwrap(), 5);
        assert_eq!(m.count(&MemoryQuery::default()).unwrap(), 0);
        assert!(
            m.search("note", &MemoryQuery::default())
                .unwrap()
                .is_empty()
        );
        // The FTS index agrees with the table after all that.
        m.db.with_conn(|c| {
            c.execute(
                "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )?;
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn store_many_writes_in_one_transaction_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let m = Database::open_in(dir.path()).unwrap().memory();
            let texts: Vec<String> = (0..1000)
                .map(|i| format!("memory number {i} about topic{}", i % 10))
                .collect();
            let items: Vec<NewMemory<'_>> = texts
                .iter()
                .map(|t| note(MemoryLayer::Daily, "bulk", None, t))
                .collect();
            assert_eq!(m.store_many(&items).unwrap(), 1000);
        }
        let m = Database::open_in(dir.path()).unwrap().memory();
        assert_eq!(
            m.search("topic3", &MemoryQuery::default()).unwrap().len(),
            100
        );
    }

    #[test]
    fn importance_source_metadata_and_tags_are_kept_and_replaced_as_asked() {
        let memory = db().memory();
        let tags = vec![
            "Work".to_string(),
            " travel ".into(),
            "work".into(),
            "".into(),
        ];
        let stored = memory
            .store(&NewMemory {
                layer: MemoryLayer::Tacit,
                key: Some("trip"),
                content: "Flies to Lisbon in March",
                importance: Some(5),
                source: Some("user"),
                source_session: Some("s1"),
                metadata: Some(r#"{"confidence": 0.9}"#),
                tags: Some(&tags),
                ..NewMemory::default()
            })
            .unwrap();
        assert_eq!(stored.importance, 5);
        assert_eq!(stored.source.as_deref(), Some("user"));
        assert_eq!(stored.source_session.as_deref(), Some("s1"));
        assert_eq!(stored.metadata.as_deref(), Some(r#"{"confidence": 0.9}"#));
        assert_eq!(stored.tags, ["travel", "work"]);
        // Replaced by key without them: content changes, the rest stays.
        let replaced = memory
            .store(&NewMemory {
                layer: MemoryLayer::Tacit,
                key: Some("trip"),
                content: "Flies to Porto in April",
                ..NewMemory::default()
            })
            .unwrap();
        assert_eq!(replaced.id, stored.id);
        assert_eq!(replaced.importance, 5);
        assert_eq!(replaced.metadata, stored.metadata);
        assert_eq!(replaced.tags, ["travel", "work"]);
        // New tags replace the old ones; a memory without importance gets the default.
        let retagged = memory
            .store(&NewMemory {
                layer: MemoryLayer::Tacit,
                key: Some("trip"),
                content: "Flies to Porto in April",
                tags: Some(&["Family".to_string()]),
                ..NewMemory::default()
            })
            .unwrap();
        assert_eq!(retagged.tags, ["family"]);
        let plain = memory
            .store(&NewMemory {
                content: "plain",
                ..NewMemory::default()
            })
            .unwrap();
        assert_eq!(plain.importance, DEFAULT_IMPORTANCE);
        assert!(plain.tags.is_empty());
        // The schema refuses an importance outside 1 to 5.
        assert!(
            memory
                .store(&NewMemory {
                    content: "too important",
                    importance: Some(9),
                    ..NewMemory::default()
                })
                .is_err()
        );
        // Deleting a memory takes its tags along.
        memory.delete(stored.id).unwrap();
        let left: i64 = memory
            .db
            .with_conn(|c| Ok(c.query_row("SELECT count(*) FROM memory_tags", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(left, 0);
    }

    #[test]
    fn tags_filter_lists_counts_and_searches() {
        let memory = db().memory();
        for (content, tag) in [
            ("espresso machine manual", "home"),
            ("espresso order for the office", "work"),
            ("quarterly report draft", "work"),
        ] {
            memory
                .store(&NewMemory {
                    content,
                    tags: Some(&[tag.to_string()]),
                    ..NewMemory::default()
                })
                .unwrap();
        }
        let work = vec!["WORK".to_string()];
        let query = MemoryQuery {
            tags: &work,
            ..MemoryQuery::default()
        };
        assert_eq!(memory.count(&query).unwrap(), 2);
        assert_eq!(memory.list(&query).unwrap().len(), 2);
        let hits = memory.search("espresso", &query).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].memory.content, "espresso order for the office");
        let either = vec!["home".to_string(), "work".to_string()];
        let both = MemoryQuery {
            tags: &either,
            ..MemoryQuery::default()
        };
        assert_eq!(memory.search("espresso", &both).unwrap().len(), 2);
    }

    #[test]
    fn use_and_importance_rank_equally_relevant_memories_up() {
        let memory = db().memory();
        let store = |content, importance| {
            memory
                .store(&NewMemory {
                    content,
                    importance: Some(importance),
                    ..NewMemory::default()
                })
                .unwrap()
        };
        let first = store("the garage code is 4412", 3);
        let second = store("the garage door squeaks", 3);
        let order = |memory: &Memory| -> Vec<i64> {
            memory
                .search("garage", &MemoryQuery::default())
                .unwrap()
                .iter()
                .map(|h| h.memory.id)
                .collect()
        };
        // Equal relevance: the newer one first.
        assert_eq!(order(&memory), [second.id, first.id]);
        // Used a few times, the older one rises; using it changes neither its text nor its
        // update time, and the text index still finds it.
        for _ in 0..3 {
            memory.touch(&[first.id]).unwrap();
        }
        let touched = memory.get(first.id).unwrap().unwrap();
        assert_eq!(touched.access_count, 3);
        assert!(touched.accessed_ms.is_some());
        assert_eq!(touched.updated_ms, first.updated_ms);
        assert_eq!(order(&memory), [first.id, second.id]);
        // An important memory outranks a used one.
        let vital = store("garage", 5);
        assert_eq!(order(&memory)[0], vital.id);
        // Top: importance, then use, then recency.
        let top: Vec<i64> = memory
            .top(&MemoryQuery::default())
            .unwrap()
            .iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(top, [vital.id, first.id, second.id]);
    }

    #[test]
    fn links_are_followed_one_hop_both_ways_and_go_with_their_memory() {
        let memory = db().memory();
        let store = |content| {
            memory
                .store(&NewMemory {
                    content,
                    ..NewMemory::default()
                })
                .unwrap()
                .id
        };
        let (sam, launch, budget, unrelated) = (
            store("Sam leads the launch"),
            store("The launch is on 3 May"),
            store("The launch budget is 40k"),
            store("Buy milk"),
        );
        assert!(memory.link(sam, launch, "works_on").unwrap());
        assert!(!memory.link(sam, launch, "works_on").unwrap(), "once");
        memory.link(budget, launch, "part_of").unwrap();
        assert!(memory.link(sam, 999, "about").is_err(), "no such memory");
        assert!(memory.link(sam, sam, "about").is_err(), "not to itself");

        let from_launch = memory.associations(&[launch], 10).unwrap();
        let mut found: Vec<(i64, &str, bool)> = from_launch
            .iter()
            .map(|a| (a.memory.id, a.relation.as_str(), a.outgoing))
            .collect();
        found.sort();
        assert_eq!(
            found,
            [(sam, "works_on", false), (budget, "part_of", false)]
        );
        assert!(from_launch.iter().all(|a| a.via == launch));
        // The ids asked about are never their own associations; two hops are not followed.
        let from_sam = memory.associations(&[sam, launch], 10).unwrap();
        assert_eq!(
            from_sam.iter().map(|a| a.memory.id).collect::<Vec<_>>(),
            [budget]
        );
        assert!(memory.associations(&[unrelated], 10).unwrap().is_empty());
        assert_eq!(memory.unlink(sam, launch, None).unwrap(), 1);
        memory.delete(budget).unwrap();
        assert!(memory.associations(&[launch], 10).unwrap().is_empty());
    }

    #[test]
    fn a_version_two_database_gains_memory_and_keeps_its_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("osprey.db");
        {
            let c = rusqlite::Connection::open(&path).unwrap();
            for (i, sql) in crate::migrations::STEPS.iter().take(2).enumerate() {
                c.execute_batch(sql).unwrap();
                c.pragma_update(None, "user_version", i as i64 + 1).unwrap();
            }
            c.execute(
                "INSERT INTO sessions (id, origin, created_ms, updated_ms) VALUES ('s', 'user', 1, 1)",
                [],
            )
            .unwrap();
        }
        let db = Database::open(&path).unwrap();
        assert_eq!(db.schema_version().unwrap(), crate::migrations::LATEST);
        assert!(db.sessions().get("s").unwrap().is_some());
        db.memory()
            .store(&note(MemoryLayer::Tacit, "a", None, "upgraded"))
            .unwrap();
        assert_eq!(
            db.memory()
                .search("upgraded", &MemoryQuery::default())
                .unwrap()
                .len(),
            1
        );
    }
}
