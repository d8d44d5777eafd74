//! Memory: what the agent keeps between sessions, in three layers (`tacit` facts about the
//! person and their preferences, `daily` notes, `entity` records about people, projects and
//! things), grouped by namespace, optionally keyed (a key is unique within its namespace, and
//! storing under it again replaces the content). Full-text search runs on SQLite FTS5 with bm25
//! ranking; the person's text is always turned into quoted terms, so no punctuation in it can be
//! read as FTS5 query syntax.

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
}

/// What to store.
#[derive(Clone, Debug)]
pub struct NewMemory<'a> {
    pub layer: MemoryLayer,
    pub namespace: &'a str,
    /// When set, storing again under the same namespace and key replaces the memory.
    pub key: Option<&'a str>,
    pub content: &'a str,
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
    /// At most this many rows (all when `None`).
    pub limit: Option<u32>,
    pub offset: u32,
}

/// The memory repository.
#[derive(Clone, Debug)]
pub struct Memory {
    db: Database,
}

const COLUMNS: &str = "m.id, m.layer, m.namespace, m.key, m.content, m.created_ms, m.updated_ms";

fn memory_row(row: &Row<'_>) -> rusqlite::Result<MemoryRow> {
    let layer: String = row.get(1)?;
    let layer = MemoryLayer::parse(&layer).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            1,
            rusqlite::types::Type::Text,
            format!("unknown memory layer `{layer}`").into(),
        )
    })?;
    Ok(MemoryRow {
        id: row.get(0)?,
        layer,
        namespace: row.get(2)?,
        key: row.get(3)?,
        content: row.get(4)?,
        created_ms: row.get(5)?,
        updated_ms: row.get(6)?,
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
            let id: i64 = match key {
                Some(key) => c.query_row(
                    "INSERT INTO memories (layer, namespace, key, content, created_ms, updated_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                     ON CONFLICT(namespace, key) WHERE key IS NOT NULL
                     DO UPDATE SET layer = excluded.layer, content = excluded.content,
                                   updated_ms = excluded.updated_ms
                     RETURNING id",
                    params![new.layer.as_str(), namespace, key, new.content, now],
                    |r| r.get(0),
                )?,
                None => {
                    c.execute(
                        "INSERT INTO memories (layer, namespace, key, content, created_ms, updated_ms)
                         VALUES (?1, ?2, NULL, ?3, ?4, ?4)",
                        params![new.layer.as_str(), namespace, new.content, now],
                    )?;
                    c.last_insert_rowid()
                }
            };
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
                "SELECT {COLUMNS}, bm25(memories_fts, 2.0, 1.0) AS rank
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                 WHERE memories_fts MATCH ?1
                   AND (?2 IS NULL OR m.namespace = ?2)
                   AND (?3 IS NULL OR m.layer = ?3)
                 ORDER BY rank, m.id DESC LIMIT ?4 OFFSET ?5"
            ))?;
            let rows = stmt.query_map(
                params![
                    fts,
                    query.namespace,
                    query.layer.map(MemoryLayer::as_str),
                    limit_of(query.limit),
                    query.offset
                ],
                |r| {
                    Ok(MemoryHit {
                        memory: memory_row(r)?,
                        score: -r.get::<_, f64>(7)?,
                    })
                },
            )?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Memories, most recently updated first.
    pub fn list(&self, query: &MemoryQuery<'_>) -> Result<Vec<MemoryRow>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM memories m
                 WHERE (?1 IS NULL OR m.namespace = ?1) AND (?2 IS NULL OR m.layer = ?2)
                 ORDER BY m.updated_ms DESC, m.id DESC LIMIT ?3 OFFSET ?4"
            ))?;
            let rows = stmt.query_map(
                params![
                    query.namespace,
                    query.layer.map(MemoryLayer::as_str),
                    limit_of(query.limit),
                    query.offset
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
                "SELECT count(*) FROM memories m
                 WHERE (?1 IS NULL OR m.namespace = ?1) AND (?2 IS NULL OR m.layer = ?2)",
                params![query.namespace, query.layer.map(MemoryLayer::as_str)],
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
            let mut stmt = c.prepare_cached(
                "SELECT v.memory_id, v.vector FROM memory_vectors v JOIN memories m ON m.id = v.memory_id
                 WHERE v.model = ?1 AND (?2 IS NULL OR m.namespace = ?2) AND (?3 IS NULL OR m.layer = ?3)",
            )?;
            let mut rows = stmt.query(params![
                model,
                query.namespace,
                query.layer.map(MemoryLayer::as_str)
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
