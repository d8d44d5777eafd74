//! What the store pushes to running Osprey installs: `GET /api/v1/events`, a server-sent event
//! stream of `updated` (a new version of an app or skill was published), `revoked` (an app or
//! skill was revoked, with the reason and versions) and, on a stream opened with a person's token,
//! that person's `installed` / `uninstalled` (they installed or removed an app on another device or
//! through the store's web page: `POST /api/v1/me/installs`, `DELETE /api/v1/me/installs/{id}`).
//!
//! Every event is written to the `events` table before anyone is told, in the same transaction
//! as the change it reports ([`Store::change`]): a change whose event cannot be logged is not
//! made, so no install misses it. Its row id is the event's `id:`. A client that reconnects with `Last-Event-ID` gets every event after that id it
//! may see, so nothing is missed while it was away. The log is bounded (the newest
//! [`DEFAULT_EVENT_LOG_LIMIT`] events are kept); a `Last-Event-ID` older than the oldest kept (or
//! newer than the newest: another store's, or a store whose database was replaced) gets a `reset`
//! event instead, and the client checks everything afresh (its full sweep). Every stream starts
//! with a `ready` event whose id is where it resumes from, so a client has an id to keep at once.
//! Comments (`: keep-alive`) go out every [`KEEP_ALIVE`] so proxies and clients see a live
//! connection; at most [`MAX_STREAMS`] streams are open at once.
//!
//! People: the store knows a person only by a token the operator issued (`POST /api/v1/people`
//! with the admin token answers `{name, token}` once; the store keeps the token's SHA-256). The
//! person gives that token to each of their Osprey installs (`osprey config set store.token -`);
//! a stream opened with it also carries that person's events, and nobody else's.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use futures::Stream;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::api::{now, require_admin, with_db};
use crate::{Error, Result, Store};

/// How many events the log keeps (the newest); a client further behind gets `reset`.
pub const DEFAULT_EVENT_LOG_LIMIT: usize = 10_000;
/// How often an idle stream sends a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How many event streams may be open at once; more are refused with 503 (`busy`).
pub const MAX_STREAMS: usize = 256;
/// How many events one read of the log takes for a stream.
const BATCH: u32 = 100;

pub(crate) fn create_schema(db: &Connection) -> Result<()> {
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS events (
             id INTEGER PRIMARY KEY AUTOINCREMENT,
             name TEXT NOT NULL,
             data TEXT NOT NULL,
             person INTEGER,
             created_at INTEGER NOT NULL
         );
         CREATE INDEX IF NOT EXISTS events_person ON events(person, id);
         CREATE TABLE IF NOT EXISTS people (
             id INTEGER PRIMARY KEY,
             name TEXT NOT NULL UNIQUE,
             token_sha256 TEXT NOT NULL UNIQUE,
             created_at INTEGER NOT NULL
         );",
    )?;
    Ok(())
}

/// One event of the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoreEvent {
    pub id: i64,
    /// `updated`, `revoked`, `installed`, `uninstalled`.
    pub name: String,
    pub data: Value,
}

/// Appends an event (for everyone, or only for `person`) and drops the oldest beyond `limit`.
/// Returns its id.
pub(crate) fn append(
    db: &Connection,
    name: &str,
    data: &Value,
    person: Option<i64>,
    limit: usize,
) -> Result<i64> {
    db.execute(
        "INSERT INTO events (name, data, person, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![name, data.to_string(), person, now()],
    )?;
    let id = db.last_insert_rowid();
    let keep = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
    db.execute(
        "DELETE FROM events WHERE id <= ?1",
        [id.saturating_sub(keep)],
    )?;
    Ok(id)
}

/// The newest event id ever given (0 before the first): ids are never reused, pruned or not.
pub(crate) fn head(db: &Connection) -> Result<i64> {
    Ok(db
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
            [],
            |row| row.get(0),
        )
        .optional()?
        .unwrap_or(0))
}

/// Can a client that saw everything up to `last` resume from there? Not when events after it
/// were pruned, nor when it is beyond anything this store gave.
pub(crate) fn can_resume(db: &Connection, last: i64) -> Result<bool> {
    let head = head(db)?;
    let oldest: Option<i64> = db.query_row("SELECT MIN(id) FROM events", [], |row| row.get(0))?;
    Ok((0..=head).contains(&last) && oldest.is_none_or(|oldest| last >= oldest - 1))
}

/// The events after `cursor` that `person` (or, with `None`, anyone) may see, oldest first.
pub(crate) fn after(
    db: &Connection,
    cursor: i64,
    person: Option<i64>,
    limit: u32,
) -> Result<Vec<StoreEvent>> {
    let mut statement = db.prepare(
        "SELECT id, name, data FROM events
         WHERE id > ?1 AND (person IS NULL OR person = ?2) ORDER BY id LIMIT ?3",
    )?;
    let rows = statement
        .query_map(params![cursor, person, limit], |row| {
            let data: String = row.get(2)?;
            Ok(StoreEvent {
                id: row.get(0)?,
                name: row.get(1)?,
                data: serde_json::from_str(&data).unwrap_or(Value::Null),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

fn token_digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The person a token belongs to.
fn person_of(db: &Connection, token: &str) -> Result<Option<i64>> {
    Ok(db
        .query_row(
            "SELECT id FROM people WHERE token_sha256 = ?1",
            [token_digest(token)],
            |row| row.get(0),
        )
        .optional()?)
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The person the request's bearer token names; `None` without a token. A token that names
/// nobody is refused rather than served as anonymous, so a mistyped token is noticed.
fn caller(store: &Store, headers: &HeaderMap) -> Result<Option<i64>> {
    match bearer(headers) {
        None => Ok(None),
        Some(token) => match with_db(store, |db| person_of(db, token))? {
            Some(person) => Ok(Some(person)),
            None => Err(Error::Unauthorized),
        },
    }
}

impl Store {
    /// Writes an event to the log, then wakes the open streams. `person` limits it to that
    /// person's streams.
    pub(crate) fn record(&self, name: &str, data: Value, person: Option<i64>) -> Result<i64> {
        self.change(name, data, person, |_| Ok(()))
            .map(|(_, id)| id)
    }

    /// Makes a change with `write` and logs its event in the same transaction, then wakes the
    /// open streams: the change and its event are committed together or not at all, so no change
    /// is made that the installs never hear of (nor announced when it failed). Returns what
    /// `write` returned and the event's id.
    pub(crate) fn change<T>(
        &self,
        name: &str,
        data: Value,
        person: Option<i64>,
        write: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<(T, i64)> {
        let limit = self.inner.event_log_limit;
        let (value, id) = with_db(self, |db| {
            let transaction = db.unchecked_transaction()?;
            let value = write(&transaction)?;
            let id = append(&transaction, name, &data, person, limit)?;
            transaction.commit()?;
            Ok((value, id))
        })?;
        self.inner.head.send_replace(id);
        Ok((value, id))
    }

    /// How often idle streams opened from now on send a keep-alive comment (default
    /// [`KEEP_ALIVE`]).
    pub fn set_keep_alive(&self, interval: Duration) {
        let ms = u64::try_from(interval.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        self.inner.keep_alive_ms.store(ms, Ordering::Relaxed);
    }

    /// The event log as a client reconnecting after `cursor` would get it (tests and tools).
    pub fn events_after(&self, cursor: i64, person: Option<&str>) -> Result<Vec<StoreEvent>> {
        with_db(self, |db| {
            let person = match person {
                Some(token) => Some(person_of(db, token)?.ok_or(Error::Unauthorized)?),
                None => None,
            };
            after(db, cursor, person, u32::MAX)
        })
    }
}

pub(crate) fn router() -> Router<Store> {
    Router::new()
        .route("/api/v1/events", get(stream))
        .route("/api/v1/people", post(add_person))
        .route("/api/v1/me/installs", post(installed))
        .route("/api/v1/me/installs/{id}", delete(uninstalled))
}

/// Where a new stream starts: the client's `Last-Event-ID` when the log still holds what came
/// after it, else the head with a `reset` first.
fn start_of(store: &Store, headers: &HeaderMap) -> Result<(i64, bool)> {
    let given = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty());
    with_db(store, |db| {
        let head = head(db)?;
        Ok(match given {
            None => (head, false),
            Some(text) => match text.parse::<i64>() {
                Ok(last) if can_resume(db, last)? => (last, false),
                _ => (head, true),
            },
        })
    })
}

/// A stream's state between events.
struct Follow {
    store: Store,
    cursor: i64,
    person: Option<i64>,
    head: tokio::sync::watch::Receiver<i64>,
    queue: std::collections::VecDeque<Event>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Follow {
    /// The next event for this stream; waits for one to be written. `None` when the store is
    /// going away.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            // Marked seen before reading the log, so an event written after the read wakes us.
            self.head.borrow_and_update();
            let (store, cursor, person) = (self.store.clone(), self.cursor, self.person);
            let batch = tokio::task::spawn_blocking(move || {
                with_db(&store, |db| after(db, cursor, person, BATCH))
            })
            .await
            .ok()?;
            match batch {
                Ok(events) if !events.is_empty() => {
                    for event in events {
                        self.cursor = event.id;
                        self.queue
                            .push_back(sse(&event.name, event.id, &event.data));
                    }
                }
                Ok(_) => self.head.changed().await.ok()?,
                Err(error) => {
                    tracing::warn!("reading the event log: {error}");
                    return None;
                }
            }
        }
    }
}

fn sse(name: &str, id: i64, data: &Value) -> Event {
    Event::default()
        .event(name)
        .id(id.to_string())
        .data(data.to_string())
}

async fn stream(
    State(store): State<Store>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = std::result::Result<Event, Infallible>>>> {
    let person = caller(&store, &headers)?;
    let permit = Arc::clone(&store.inner.streams)
        .try_acquire_owned()
        .map_err(|_| {
            Error::Busy(format!(
                "{MAX_STREAMS} event streams are open already: try again later"
            ))
        })?;
    let (cursor, reset) = start_of(&store, &headers)?;
    let mut first = std::collections::VecDeque::new();
    if reset {
        first.push_back(sse(
            "reset",
            cursor,
            &json!({"head": cursor, "message": "the events after your Last-Event-ID are no \
                longer kept (or that id is not this store's): check everything afresh"}),
        ));
    }
    first.push_back(sse(
        "ready",
        cursor,
        &json!({"head": cursor, "person": person.is_some()}),
    ));
    let head = store.inner.head.subscribe();
    let interval = Duration::from_millis(store.inner.keep_alive_ms.load(Ordering::Relaxed));
    let follow = Follow {
        store,
        cursor,
        person,
        head,
        queue: first,
        _permit: permit,
    };
    let events = futures::stream::unfold(follow, |mut follow| async move {
        let event = follow.next().await?;
        Some((Ok(event), follow))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(interval)))
}

#[derive(Deserialize)]
struct NewPerson {
    name: String,
}

/// `POST /api/v1/people` (admin): issues a person's token, shown this once.
async fn add_person(
    State(store): State<Store>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>)> {
    require_admin(&store, &headers)?;
    let request: NewPerson = crate::api::json_body(&body)?;
    let name = request.name.trim().to_string();
    if name.is_empty() || name.len() > 100 {
        return Err(Error::InvalidRequest("name must be 1 to 100 bytes".into()));
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)
        .map_err(|e| Error::Io(std::io::Error::other(format!("no randomness: {e}"))))?;
    let token = hex::encode(secret);
    with_db(&store, |db| {
        let taken: bool = db.query_row(
            "SELECT COUNT(*) FROM people WHERE name = ?1",
            [&name],
            |row| row.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if taken {
            return Err(Error::VersionExists(format!(
                "a person named `{name}` exists already"
            )));
        }
        db.execute(
            "INSERT INTO people (name, token_sha256, created_at) VALUES (?1, ?2, ?3)",
            params![name, token_digest(&token), now()],
        )?;
        Ok(())
    })?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"name": name, "token": token})),
    ))
}

fn person_required(store: &Store, headers: &HeaderMap) -> Result<i64> {
    caller(store, headers)?.ok_or(Error::Unauthorized)
}

#[derive(Deserialize)]
struct Install {
    id: String,
}

/// `POST /api/v1/me/installs` (a person's token): the person installed an app elsewhere; their
/// other installs are asked whether to install it too.
async fn installed(
    State(store): State<Store>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode> {
    let person = person_required(&store, &headers)?;
    let request: Install = crate::api::json_body(&body)?;
    let entry = with_db(&store, |db| crate::catalog::get(db, &request.id))?;
    store.record(
        "installed",
        json!({"kind": "app", "id": entry.id, "version": entry.version}),
        Some(person),
    )?;
    Ok(StatusCode::ACCEPTED)
}

/// `DELETE /api/v1/me/installs/{id}` (a person's token): the person removed the app elsewhere;
/// their other installs remove it too.
async fn uninstalled(
    State(store): State<Store>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<StatusCode> {
    let person = person_required(&store, &headers)?;
    with_db(&store, |db| crate::catalog::get(db, &id))?;
    store.record(
        "uninstalled",
        json!({"kind": "app", "id": id}),
        Some(person),
    )?;
    Ok(StatusCode::ACCEPTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> Connection {
        let db = Connection::open_in_memory().unwrap();
        create_schema(&db).unwrap();
        db
    }

    fn names(events: &[StoreEvent]) -> Vec<(i64, String)> {
        events.iter().map(|e| (e.id, e.name.clone())).collect()
    }

    #[test]
    fn a_client_resumes_after_its_last_id_and_sees_only_its_own_person_events() {
        let db = log();
        assert_eq!(head(&db).unwrap(), 0);
        assert!(can_resume(&db, 0).unwrap());
        append(&db, "updated", &json!({"id": "a"}), None, 100).unwrap();
        append(&db, "installed", &json!({"id": "a"}), Some(1), 100).unwrap();
        append(&db, "installed", &json!({"id": "b"}), Some(2), 100).unwrap();
        append(&db, "revoked", &json!({"id": "a"}), None, 100).unwrap();
        assert_eq!(head(&db).unwrap(), 4);

        // Anonymous: the public events only, from after the id given.
        assert_eq!(
            names(&after(&db, 0, None, 100).unwrap()),
            [(1, "updated".into()), (4, "revoked".into())]
        );
        assert_eq!(
            names(&after(&db, 1, Some(1), 100).unwrap()),
            [(2, "installed".into()), (4, "revoked".into())]
        );
        assert_eq!(
            after(&db, 2, Some(1), 1).unwrap().len(),
            1,
            "a batch is bounded"
        );
        assert_eq!(after(&db, 1, Some(2), 100).unwrap()[0].data["id"], "b");
        assert!(after(&db, 4, None, 100).unwrap().is_empty());
    }

    #[test]
    fn the_log_is_bounded_and_an_id_older_than_it_or_from_elsewhere_cannot_resume() {
        let db = log();
        for n in 0..10 {
            append(&db, "updated", &json!({"n": n}), None, 4).unwrap();
        }
        let kept = after(&db, 0, None, 100).unwrap();
        assert_eq!(
            kept.iter().map(|e| e.id).collect::<Vec<_>>(),
            [7, 8, 9, 10],
            "the newest four are kept"
        );
        // 6 saw everything up to the oldest kept: it resumes. 5 missed event 6: it cannot.
        assert!(can_resume(&db, 6).unwrap());
        assert!(can_resume(&db, 10).unwrap());
        assert!(!can_resume(&db, 5).unwrap());
        assert!(!can_resume(&db, 0).unwrap());
        // An id this store never gave (another store's, or a replaced database).
        assert!(!can_resume(&db, 11).unwrap());
        assert!(!can_resume(&db, -1).unwrap());
        // Ids are never reused once pruned.
        assert_eq!(append(&db, "updated", &json!({}), None, 4).unwrap(), 11);
    }

    #[test]
    fn a_person_is_known_by_the_digest_of_their_token_only() {
        let db = log();
        db.execute(
            "INSERT INTO people (name, token_sha256, created_at) VALUES ('ana', ?1, 0)",
            [token_digest("secret-token")],
        )
        .unwrap();
        assert_eq!(person_of(&db, "secret-token").unwrap(), Some(1));
        assert_eq!(person_of(&db, "other").unwrap(), None);
        let stored: String = db
            .query_row("SELECT token_sha256 FROM people", [], |row| row.get(0))
            .unwrap();
        assert!(!stored.contains("secret"));
    }
}
