//! Optional embeddings for memory search. An [`Embedder`] turns texts into vectors (through an
//! OpenAI-compatible `/embeddings` endpoint, Ollama's `/api/embed`, or anything else that
//! implements the trait, such as an app); [`hybrid_search`] runs the full-text search and the
//! vector search and fuses the two rankings by reciprocal rank fusion, so a memory found by
//! meaning ("car" for "vehicle") and one found by exact words both surface. Without an embedder,
//! memory search is FTS alone and nothing here runs.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use osprey_db::{Memory, MemoryHit, MemoryQuery};
use serde_json::{Value, json};

use crate::provider::send;
use crate::{Error, Result};

/// Turns texts into vectors, one per text, in order.
pub trait Embedder: Send + Sync {
    /// The model's name; vectors are stored per model, so switching models re-embeds.
    fn model(&self) -> &str;
    fn embed(&self, texts: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>>>;
}

/// How many texts go in one embedding request.
const BATCH: usize = 64;

/// The rank constant of reciprocal rank fusion (60, as in Cormack et al.): large enough that a
/// single list's top hit does not drown agreement between the lists.
const RRF_K: f64 = 60.0;

/// OpenAI's embeddings API, or any server that speaks it (`{base}/embeddings`).
#[derive(Clone, Debug)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    model: String,
}

impl OpenAiEmbedder {
    /// `base_url` up to `/v1` (default `https://api.openai.com/v1`).
    pub fn new(base_url: Option<&str>, api_key: Option<String>, model: impl Into<String>) -> Self {
        OpenAiEmbedder {
            client: reqwest::Client::new(),
            base_url: base_url
                .unwrap_or(crate::provider::openai::DEFAULT_BASE_URL)
                .trim_end_matches('/')
                .to_string(),
            api_key,
            model: model.into(),
        }
    }
}

/// Reads `body[list][i][field]` (or `body[list][i]` when `field` is empty) as vectors.
fn vectors(body: &Value, list: &str, field: &str, expected: usize) -> Result<Vec<Vec<f32>>> {
    let items = body[list]
        .as_array()
        .ok_or_else(|| Error::Protocol(format!("the embedding response has no `{list}` list")))?;
    let vectors = items
        .iter()
        .map(|item| {
            let values = if field.is_empty() { item } else { &item[field] };
            values
                .as_array()
                .ok_or_else(|| Error::Protocol("an embedding is not a list of numbers".into()))?
                .iter()
                .map(|v| {
                    v.as_f64().map(|f| f as f32).ok_or_else(|| {
                        Error::Protocol("an embedding holds something other than numbers".into())
                    })
                })
                .collect::<Result<Vec<f32>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    if vectors.len() != expected {
        return Err(Error::Protocol(format!(
            "asked for {expected} embeddings, got {}",
            vectors.len()
        )));
    }
    Ok(vectors)
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn embed(&self, texts: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>>> {
        Box::pin(async move {
            let expected = texts.len();
            let mut request = self
                .client
                .post(format!("{}/embeddings", self.base_url))
                .json(&json!({"model": self.model, "input": texts}));
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let body: Value = send(request)
                .await?
                .json()
                .await
                .map_err(crate::provider::network)?;
            // OpenAI returns items with an `index`; order by it rather than trusting the order.
            let mut body = body;
            if let Some(items) = body["data"].as_array_mut() {
                items.sort_by_key(|item| item["index"].as_u64().unwrap_or(u64::MAX));
            }
            vectors(&body, "data", "embedding", expected)
        })
    }
}

/// Ollama's embedding API (`POST {base}/api/embed`).
#[derive(Clone, Debug)]
pub struct OllamaEmbedder {
    client: reqwest::Client,
    base_url: String,
    model: String,
}

impl OllamaEmbedder {
    pub fn new(base_url: Option<&str>, model: impl Into<String>) -> Self {
        OllamaEmbedder {
            client: reqwest::Client::new(),
            base_url: base_url
                .unwrap_or(crate::provider::ollama::DEFAULT_BASE_URL)
                .trim_end_matches('/')
                .to_string(),
            model: model.into(),
        }
    }
}

impl Embedder for OllamaEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn embed(&self, texts: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>>> {
        Box::pin(async move {
            let expected = texts.len();
            let request = self
                .client
                .post(format!("{}/api/embed", self.base_url))
                .json(&json!({"model": self.model, "input": texts}));
            let body: Value = send(request)
                .await?
                .json()
                .await
                .map_err(crate::provider::network)?;
            vectors(&body, "embeddings", "", expected)
        })
    }
}

/// Embeds every memory that has no vector for the embedder's model yet, a batch at a time;
/// returns how many were embedded. Memory writes never wait for this: a failed or slow
/// embedder leaves FTS search working and the backfill catches up later.
pub async fn embed_missing(memory: &Memory, embedder: &dyn Embedder) -> Result<usize> {
    let mut done = 0;
    loop {
        let pending = memory.without_vector(embedder.model(), BATCH as u32)?;
        if pending.is_empty() {
            return Ok(done);
        }
        let texts = pending.iter().map(|m| m.content.clone()).collect();
        let vectors = embedder.embed(texts).await?;
        for (row, vector) in pending.iter().zip(&vectors) {
            memory.set_vector(row.id, embedder.model(), vector)?;
        }
        done += pending.len();
        if pending.len() < BATCH {
            return Ok(done);
        }
    }
}

/// Fuses rankings by reciprocal rank fusion: each list adds `1 / (k + rank)` for every memory
/// it holds; the fused score orders the result. Ties keep the first list's order.
pub fn reciprocal_rank_fusion(lists: &[Vec<MemoryHit>], limit: usize) -> Vec<MemoryHit> {
    let mut fused: HashMap<i64, (f64, usize, MemoryHit)> = HashMap::new();
    let mut seen = 0;
    for list in lists {
        for (rank, hit) in list.iter().enumerate() {
            let gain = 1.0 / (RRF_K + rank as f64 + 1.0);
            fused
                .entry(hit.memory.id)
                .and_modify(|entry| entry.0 += gain)
                .or_insert_with(|| {
                    seen += 1;
                    (gain, seen, hit.clone())
                });
        }
    }
    let mut ranked: Vec<(f64, usize, MemoryHit)> = fused.into_values().collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked
        .into_iter()
        .take(limit)
        .map(|(score, _, mut hit)| {
            hit.score = score;
            hit
        })
        .collect()
}

/// Memory search: FTS5 alone without an embedder; with one, FTS and nearest vectors fused by
/// reciprocal rank fusion. An embedder that fails falls back to FTS (logged), so a stopped
/// embedding server never breaks recall. Memories not embedded yet are embedded first.
pub async fn hybrid_search(
    memory: &Memory,
    embedder: Option<&Arc<dyn Embedder>>,
    text: &str,
    query: &MemoryQuery<'_>,
) -> Result<Vec<MemoryHit>> {
    let limit = query.limit.unwrap_or(20) as usize;
    let Some(embedder) = embedder else {
        return Ok(memory.search(text, query)?);
    };
    // Each list looks deeper than the page, so fusion can promote what both agree on.
    let deeper = MemoryQuery {
        limit: Some((limit as u32).saturating_mul(3).max(30)),
        offset: 0,
        ..query.clone()
    };
    let lexical = memory.search(text, &deeper)?;
    let semantic = async {
        embed_missing(memory, embedder.as_ref()).await?;
        let vector = embedder
            .embed(vec![text.to_string()])
            .await?
            .pop()
            .unwrap_or_default();
        Ok::<_, Error>(memory.nearest(&vector, embedder.model(), &deeper)?)
    };
    match semantic.await {
        Ok(semantic) => {
            let fused = reciprocal_rank_fusion(&[lexical, semantic], limit + query.offset as usize);
            Ok(fused.into_iter().skip(query.offset as usize).collect())
        }
        Err(error) => {
            tracing::warn!(%error, "embedding search failed; using full-text search alone");
            Ok(lexical
                .into_iter()
                .skip(query.offset as usize)
                .take(limit)
                .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use osprey_db::{MemoryLayer, MemoryRow};

    fn hit(id: i64) -> MemoryHit {
        MemoryHit {
            memory: MemoryRow {
                id,
                layer: MemoryLayer::Tacit,
                namespace: "default".into(),
                key: None,
                content: format!("memory {id}"),
                created_ms: 0,
                updated_ms: 0,
                importance: osprey_db::DEFAULT_IMPORTANCE,
                source: None,
                source_session: None,
                metadata: None,
                tags: Vec::new(),
                access_count: 0,
                accessed_ms: None,
            },
            score: 0.0,
        }
    }

    #[test]
    fn fusion_rewards_agreement_between_the_lists() {
        // 3 is second in both lists; 1 and 4 top one list each and are missing from the other.
        let lexical = vec![hit(1), hit(3), hit(2)];
        let semantic = vec![hit(4), hit(3), hit(5)];
        let fused = reciprocal_rank_fusion(&[lexical, semantic], 10);
        let ids: Vec<i64> = fused.iter().map(|h| h.memory.id).collect();
        assert_eq!(ids, [3, 1, 4, 2, 5]);
        assert!((fused[0].score - 2.0 / 62.0).abs() < 1e-12);
        assert_eq!(reciprocal_rank_fusion(&[vec![hit(1), hit(2)]], 1).len(), 1);
    }
}
