//! Optional embeddings for memory search, against a loopback server speaking the real wire
//! formats (OpenAI's `/v1/embeddings`, Ollama's `/api/embed`): memories are embedded in batches,
//! search fuses FTS and vectors by reciprocal rank fusion (a memory found only by meaning is
//! returned), and a failing embedding server leaves full-text search working.

#[path = "support/server.rs"]
mod server;

use std::sync::Arc;

use osprey_agent::embedding::{
    Embedder, OllamaEmbedder, OpenAiEmbedder, embed_missing, hybrid_search,
};
use osprey_db::{Database, Memory, MemoryLayer, MemoryQuery, NewMemory};
use serde_json::{Value, json};
use server::{Reply, Server};

fn json_reply(body: Value) -> Reply {
    Reply::Status {
        status: 200,
        headers: vec![("content-type", "application/json".into())],
        body: body.to_string(),
    }
}

/// OpenAI's response shape, items deliberately out of order (clients must use `index`).
fn openai_vectors(vectors: &[[f32; 3]]) -> Reply {
    let mut data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(index, v)| json!({"object": "embedding", "index": index, "embedding": v}))
        .collect();
    data.reverse();
    json_reply(
        json!({"object": "list", "data": data, "model": "embed-small",
        "usage": {"prompt_tokens": 3, "total_tokens": 3}}),
    )
}

fn store(memory: &Memory, content: &str) -> i64 {
    memory
        .store(&NewMemory {
            layer: MemoryLayer::Entity,
            namespace: "default",
            key: None,
            content,
            ..NewMemory::default()
        })
        .unwrap()
        .id
}

fn ids(hits: &[osprey_db::MemoryHit]) -> Vec<i64> {
    hits.iter().map(|h| h.memory.id).collect()
}

#[tokio::test]
async fn search_fuses_words_and_meaning_through_an_openai_compatible_server() {
    let db = Database::open_in_memory().unwrap();
    let memory = db.memory();
    let car = store(&memory, "Sam drives a red hatchback");
    let garden = store(&memory, "The garden needs water on Fridays");
    let bike = store(&memory, "Sam sold the old bicycle");
    let server = Server::start(vec![
        // The backfill: the three memories in one batch, in id order.
        openai_vectors(&[[1.0, 0.1, 0.0], [0.0, 0.0, 1.0], [0.6, 0.8, 0.0]]),
        // The query "Sam red automobile", which sits near the car.
        openai_vectors(&[[0.95, 0.2, 0.0]]),
    ])
    .await;
    let embedder: Arc<dyn Embedder> = Arc::new(OpenAiEmbedder::new(
        Some(&format!("{}/v1", server.url())),
        Some("sk-embed".into()),
        "embed-small",
    ));
    let query = MemoryQuery {
        limit: Some(3),
        ..MemoryQuery::default()
    };
    // FTS alone finds only the memories that share the word "Sam".
    let lexical = hybrid_search(&memory, None, "Sam red automobile", &query)
        .await
        .unwrap();
    assert_eq!(ids(&lexical).len(), 2);
    assert!(!ids(&lexical).contains(&garden));

    let fused = hybrid_search(&memory, Some(&embedder), "Sam red automobile", &query)
        .await
        .unwrap();
    // The car is first by words (two of them) and by meaning; the bicycle second in both; the
    // garden, which shares no word, is still found by meaning.
    assert_eq!(ids(&fused), [car, bike, garden]);

    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v1/embeddings");
    assert_eq!(
        seen[0].headers["authorization"].to_str().unwrap(),
        "Bearer sk-embed"
    );
    assert_eq!(seen[0].body["model"], "embed-small");
    assert_eq!(
        seen[0].body["input"],
        json!([
            "Sam drives a red hatchback",
            "The garden needs water on Fridays",
            "Sam sold the old bicycle"
        ])
    );
    assert_eq!(seen[1].body["input"], json!(["Sam red automobile"]));
    // Everything is embedded now: the backfill asks for nothing more.
    assert_eq!(embed_missing(&memory, embedder.as_ref()).await.unwrap(), 0);
}

#[tokio::test]
async fn a_memory_found_only_by_meaning_is_returned_through_ollama() {
    let db = Database::open_in_memory().unwrap();
    let memory = db.memory();
    let car = store(&memory, "Sam drives a red hatchback");
    let garden = store(&memory, "The garden needs water on Fridays");
    let server = Server::start(vec![
        json_reply(
            json!({"model": "nomic-embed-text", "embeddings": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]}),
        ),
        json_reply(json!({"model": "nomic-embed-text", "embeddings": [[0.9, 0.1, 0.0]]})),
    ])
    .await;
    let embedder: Arc<dyn Embedder> =
        Arc::new(OllamaEmbedder::new(Some(&server.url()), "nomic-embed-text"));
    // No word of the query is in any memory: FTS finds nothing, the vectors find the car.
    let hits = hybrid_search(&memory, Some(&embedder), "vehicle", &MemoryQuery::default())
        .await
        .unwrap();
    assert_eq!(ids(&hits)[0], car);
    assert_eq!(ids(&hits), [car, garden]);
    let seen = server.seen();
    assert_eq!(seen[0].path, "/api/embed");
    assert_eq!(seen[0].body["model"], "nomic-embed-text");
}

#[tokio::test]
async fn a_failing_embedding_server_leaves_full_text_search_working() {
    let db = Database::open_in_memory().unwrap();
    let memory = db.memory();
    let car = store(&memory, "Sam drives a red hatchback");
    store(&memory, "The garden needs water on Fridays");
    let server = Server::start(vec![Reply::Status {
        status: 500,
        headers: vec![],
        body: json!({"error": "model not loaded"}).to_string(),
    }])
    .await;
    let embedder: Arc<dyn Embedder> =
        Arc::new(OllamaEmbedder::new(Some(&server.url()), "nomic-embed-text"));
    let hits = hybrid_search(
        &memory,
        Some(&embedder),
        "hatchback",
        &MemoryQuery::default(),
    )
    .await
    .unwrap();
    assert_eq!(ids(&hits), [car]);
    // Nothing half-written: no memory has a vector.
    assert_eq!(
        memory.without_vector("nomic-embed-text", 10).unwrap().len(),
        2
    );

    // A server that answers with the wrong number of vectors is an error, not a mismatch.
    let short = Server::start(vec![json_reply(json!({"embeddings": [[1.0, 0.0, 0.0]]}))]).await;
    let embedder = OllamaEmbedder::new(Some(&short.url()), "nomic-embed-text");
    let error = embed_missing(&memory, &embedder).await.unwrap_err();
    assert!(
        error.to_string().contains("asked for 2 embeddings, got 1"),
        "{error}"
    );
    assert_eq!(
        memory.without_vector("nomic-embed-text", 10).unwrap().len(),
        2
    );
}
