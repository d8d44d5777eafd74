//! The client half of the store's event stream (`GET /api/v1/events`, server-sent events; the
//! server is osprey-store's `events` module): one connection, read with `eventsource-stream`,
//! turned into typed [`StoreChange`]s. Reconnecting, remembering the last id and applying the
//! changes are the caller's (osprey-core's `store_push`); this module only reads one stream and
//! says when it ended.
//!
//! A connection that sends nothing at all (not even the store's keep-alive comments, every 15 s)
//! for [`IDLE_LIMIT`] counts as dropped, so a silently dead network path is noticed. One that
//! sends more than [`MAX_PENDING_BYTES`] without ending an event is dropped too: the parser
//! buffers an event until its end, so an endless line would otherwise grow without bound (and,
//! never silent, would never meet the idle limit).

use std::time::Duration;

use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::Value;

use crate::store_client::StoreClient;
use crate::trust::RevokedKind;
use crate::{Error, Result};

/// How long a stream may stay completely silent before it counts as dropped (four of the
/// store's keep-alive periods).
pub const IDLE_LIMIT: Duration = Duration::from_secs(60);
/// The largest single event read; the store's are a few hundred bytes. A larger one is skipped
/// (see [`pushed`]).
const MAX_EVENT_BYTES: usize = 64 * 1024;
/// The most a stream may send without ending an event (a blank line) before the connection is
/// dropped. It bounds what is buffered; it is above [`MAX_EVENT_BYTES`] so that an event a
/// little over that still ends, and is skipped with its id rather than replayed at every
/// reconnect.
pub const MAX_PENDING_BYTES: usize = 4 * MAX_EVENT_BYTES;

/// Counts the bytes sent since the last blank line, across chunks. Lines end with CRLF, LF or CR
/// (the SSE grammar); line ends themselves are not counted.
struct EventBounds {
    pending: usize,
    line_empty: bool,
    after_cr: bool,
}

impl EventBounds {
    fn new() -> EventBounds {
        EventBounds {
            pending: 0,
            line_empty: true,
            after_cr: false,
        }
    }

    /// Takes in one chunk; false once the event being sent has gone past [`MAX_PENDING_BYTES`].
    fn take(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            match byte {
                // The LF of a CRLF: the line ended at the CR.
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    if self.line_empty {
                        self.pending = 0;
                    }
                    self.line_empty = true;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.line_empty = false;
                    self.after_cr = false;
                    self.pending += 1;
                }
            }
        }
        self.pending <= MAX_PENDING_BYTES
    }
}

/// What the store says changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreChange {
    /// The stream is live; events after `id` follow.
    Ready,
    /// The store no longer has every event after the id given (or it is another store's):
    /// check everything afresh (a full sweep and update check).
    Reset,
    /// A new version of an app or skill was published.
    Updated {
        kind: RevokedKind,
        id: String,
        version: String,
    },
    /// An app or skill was revoked (`versions`: `None` for every version).
    Revoked {
        kind: RevokedKind,
        id: String,
        reason: String,
        versions: Option<Vec<String>>,
    },
    /// The person installed the app elsewhere (another device, the store's web page).
    Installed { id: String },
    /// The person removed the app elsewhere.
    Uninstalled { id: String },
    /// An event this Osprey does not know (a newer store) or cannot read (its data does not
    /// parse, or is too large): its id is still kept, so the stream moves past it.
    Other { name: String },
}

/// One event of the stream: its `id:` (to resume after) and what it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushedEvent {
    pub id: String,
    pub change: StoreChange,
}

#[derive(Deserialize)]
struct Data {
    #[serde(default)]
    kind: RevokedKind,
    #[serde(default)]
    id: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    versions: Option<Vec<String>>,
}

/// Reads one event's name and data; an event whose data does not fit is an error (the stream
/// passes it on as [`StoreChange::Other`], see [`pushed`]).
pub fn parse(name: &str, data: &str) -> Result<StoreChange> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::StoreUnavailable(format!(
            "the store sent a `{name}` event that is not valid: {e}"
        ))
    };
    let fields = || -> Result<Data> {
        let data: Data = serde_json::from_str(data).map_err(|e| bad(&e))?;
        if data.id.is_empty() {
            return Err(bad(&"it names no app or skill"));
        }
        Ok(data)
    };
    Ok(match name {
        "ready" => StoreChange::Ready,
        "reset" => StoreChange::Reset,
        "updated" => {
            let data = fields()?;
            StoreChange::Updated {
                kind: data.kind,
                id: data.id,
                version: data.version.ok_or_else(|| bad(&"no version"))?,
            }
        }
        "revoked" => {
            let data = fields()?;
            StoreChange::Revoked {
                kind: data.kind,
                id: data.id,
                reason: data.reason.unwrap_or_default(),
                versions: data.versions,
            }
        }
        "installed" => StoreChange::Installed { id: fields()?.id },
        "uninstalled" => StoreChange::Uninstalled { id: fields()?.id },
        other => StoreChange::Other {
            name: other.to_string(),
        },
    })
}

/// One event as read off the stream. An event this Osprey cannot use (its data does not parse,
/// or is over [`MAX_EVENT_BYTES`]) is logged and passed on as [`StoreChange::Other`] with its id:
/// were it an error, the connection would drop before its id was kept, and every reconnect would
/// replay it and stop there, so no later event would ever be applied. What it said is not lost
/// for long: the revocation sweep and the update check still cover it.
fn pushed(event: eventsource_stream::Event) -> PushedEvent {
    let change = if event.data.len() > MAX_EVENT_BYTES {
        Err(Error::StoreUnavailable(format!(
            "the store sent a `{}` event over {} KB",
            event.event,
            MAX_EVENT_BYTES / 1024
        )))
    } else {
        parse(&event.event, &event.data)
    };
    let change = change.unwrap_or_else(|error| {
        tracing::warn!(id = %event.id, "skipping an event of the store's stream: {error}");
        StoreChange::Other {
            name: event.event.clone(),
        }
    });
    PushedEvent {
        id: event.id,
        change,
    }
}

impl StoreClient {
    /// Opens the store's event stream, resuming after `last_event_id` when given; with a
    /// person's `token` the stream also carries that person's own events. A refused or failed
    /// connection is an error; the stream then yields events until the connection ends (its
    /// last item is the error that ended it, or nothing when the store closed it).
    pub async fn events(
        &self,
        last_event_id: Option<&str>,
        token: Option<&str>,
    ) -> Result<impl Stream<Item = Result<PushedEvent>> + Send + use<>> {
        let mut request = self
            .http()
            .get(format!("{}/api/v1/events", self.base()))
            .header("accept", "text/event-stream");
        if let Some(last) = last_event_id {
            request = request.header("last-event-id", last);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = self.answer_for(request).await?;
        let bytes = response.bytes_stream();
        // Every chunk, keep-alive comments included, proves the connection alive; none may carry
        // an event past its bound.
        let watched =
            futures::stream::unfold(Some((bytes, EventBounds::new())), |state| async move {
                let (mut bytes, mut bounds) = state?;
                match tokio::time::timeout(IDLE_LIMIT, bytes.next()).await {
                    Ok(Some(Ok(chunk))) if bounds.take(&chunk) => {
                        Some((Ok(chunk), Some((bytes, bounds))))
                    }
                    Ok(Some(Ok(_))) => Some((
                        Err(format!(
                            "the store sent over {} KB without ending an event",
                            MAX_PENDING_BYTES / 1024
                        )),
                        None,
                    )),
                    Ok(Some(Err(error))) => Some((Err(error.to_string()), None)),
                    Ok(None) => None,
                    Err(_) => Some((
                        Err(format!(
                            "the store sent nothing for {} s",
                            IDLE_LIMIT.as_secs()
                        )),
                        None,
                    )),
                }
            });
        use eventsource_stream::Eventsource;
        Ok(watched.eventsource().map(|item| match item {
            Ok(event) => Ok(pushed(event)),
            Err(error) => Err(Error::StoreUnavailable(format!(
                "the store's event stream broke: {error}"
            ))),
        }))
    }

    /// Issues a person's token (`POST /api/v1/people`, admin): the answer (`{name, token}`) is
    /// the only time the store shows it.
    pub async fn add_person(&self, name: &str, admin_token: &str) -> Result<Value> {
        let request = self
            .http()
            .post(format!("{}/api/v1/people", self.base()))
            .bearer_auth(admin_token)
            .json(&serde_json::json!({ "name": name }));
        self.answer_for(request)
            .await?
            .json()
            .await
            .map_err(|e| Error::StoreUnavailable(e.to_string()))
    }

    /// Tells the store the person installed (`true`) or removed (`false`) the app `id`
    /// elsewhere, with their token: their other installs hear of it.
    pub async fn record_install(&self, id: &str, installed: bool, token: &str) -> Result<()> {
        let url = format!("{}/api/v1/me/installs", self.base());
        let request = if installed {
            self.http().post(url).json(&serde_json::json!({ "id": id }))
        } else {
            self.http().delete(format!("{url}/{id}"))
        };
        self.answer_for(request.bearer_auth(token))
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_events_read_as_changes() {
        assert_eq!(
            parse(
                "revoked",
                r#"{"kind":"skill","id":"pdf","reason":"exfiltrates","versions":["1.0.0"]}"#
            )
            .unwrap(),
            StoreChange::Revoked {
                kind: RevokedKind::Skill,
                id: "pdf".into(),
                reason: "exfiltrates".into(),
                versions: Some(vec!["1.0.0".into()]),
            }
        );
        assert_eq!(
            parse("updated", r#"{"kind":"app","id":"a.b","version":"2.0.0"}"#).unwrap(),
            StoreChange::Updated {
                kind: RevokedKind::App,
                id: "a.b".into(),
                version: "2.0.0".into()
            }
        );
        assert_eq!(
            parse(
                "installed",
                r#"{"kind":"app","id":"a.b","version":"2.0.0"}"#
            )
            .unwrap(),
            StoreChange::Installed { id: "a.b".into() }
        );
        assert_eq!(parse("reset", r#"{"head":4}"#).unwrap(), StoreChange::Reset);
        assert_eq!(
            parse("featured", "{}").unwrap(),
            StoreChange::Other {
                name: "featured".into()
            }
        );
        // An event missing what it must say is refused, not half-applied.
        assert!(parse("updated", r#"{"id":"a.b"}"#).is_err());
        assert!(parse("uninstalled", r#"{"kind":"app"}"#).is_err());
        assert!(parse("revoked", "not json").is_err());
    }

    /// A one-connection loopback "store" that answers the event stream with `body` as it is
    /// written, then keeps the connection open (until the returned task is aborted).
    async fn serve(
        body: impl futures::Stream<Item = Vec<u8>> + Send + 'static,
    ) -> (StoreClient, tokio::task::JoinHandle<()>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buffer = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&buffer[..n]),
                }
            }
            let answer = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                          connection: close\r\n\r\n";
            if socket.write_all(answer.as_bytes()).await.is_err() {
                return;
            }
            let mut body = std::pin::pin!(body);
            while let Some(chunk) = body.next().await {
                if socket.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            std::future::pending::<()>().await;
        });
        (StoreClient::new(url), server)
    }

    #[tokio::test]
    async fn an_event_that_cannot_be_read_is_passed_on_with_its_id_and_the_stream_goes_on() {
        let big = "x".repeat(MAX_EVENT_BYTES + 1);
        let body = [
            "event: ready\nid: 4\ndata: {\"head\":4}\n\n".to_string(),
            // A kind this Osprey does not know (a newer store).
            "event: updated\nid: 5\ndata: {\"kind\":\"widget\",\"id\":\"w\",\"version\":\"1.0.0\"}\n\n"
                .to_string(),
            format!("event: updated\nid: 6\ndata: \"{big}\"\n\n"),
            "event: revoked\nid: 7\ndata: {\"kind\":\"app\",\"id\":\"a.b\",\"reason\":\"bad\"}\n\n"
                .to_string(),
        ];
        let (client, server) = serve(futures::stream::iter(body.map(String::into_bytes))).await;
        let stream = client.events(None, None).await.unwrap();
        let events: Vec<PushedEvent> = stream
            .take(4)
            .map(|event| event.expect("the stream goes on"))
            .collect()
            .await;
        server.abort();
        let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["4", "5", "6", "7"]);
        assert_eq!(events[0].change, StoreChange::Ready);
        for skipped in &events[1..3] {
            assert_eq!(
                skipped.change,
                StoreChange::Other {
                    name: "updated".into()
                }
            );
        }
        assert_eq!(
            events[3].change,
            StoreChange::Revoked {
                kind: RevokedKind::App,
                id: "a.b".into(),
                reason: "bad".into(),
                versions: None
            }
        );
    }

    #[tokio::test]
    async fn a_store_that_never_ends_an_event_is_dropped_before_it_fills_memory() {
        let ready = b"event: ready\nid: 1\ndata: {}\n\n".to_vec();
        let endless = b"event: updated\ndata: ".to_vec();
        // 32 MB of one line at most, so the test stops by itself if nothing drops it.
        let line = futures::stream::repeat(vec![b'x'; 16 * 1024]).take(2048);
        let body = futures::stream::iter([ready, endless]).chain(line);
        let (client, server) = serve(body).await;
        let stream = client.events(None, None).await.unwrap();
        let mut errors = std::pin::pin!(stream.filter_map(|item| async move { item.err() }));
        let ended = tokio::time::timeout(Duration::from_secs(20), errors.next())
            .await
            .expect("dropped well before the line ends");
        let error = ended.expect("an error, not the end of the stream");
        assert!(
            error.to_string().contains("without ending an event"),
            "{error}"
        );
        server.abort();
    }

    #[test]
    fn the_bound_counts_bytes_since_the_last_blank_line_across_chunks_and_line_ends() {
        let mut bounds = EventBounds::new();
        let half = vec![b'x'; MAX_PENDING_BYTES / 2];
        // Many events, each ended: never past the bound.
        for ending in ["\n\n", "\r\n\r\n", "\r\r"] {
            for _ in 0..4 {
                assert!(bounds.take(b"data: "));
                assert!(bounds.take(&half));
                assert!(bounds.take(ending.as_bytes()));
            }
        }
        // One event split over lines (each ended, the event not): past the bound.
        assert!(bounds.take(&half));
        assert!(bounds.take(b"\r\n"));
        assert!(bounds.take(&half));
        assert!(!bounds.take(b"\r\nxx"));
        // A CR and an LF in separate chunks are one line end, not a blank line.
        let mut bounds = EventBounds::new();
        assert!(bounds.take(&half));
        assert!(bounds.take(b"\r"));
        assert!(bounds.take(b"\n"));
        assert!(
            !bounds.take(
                &half[..half.len() - 1]
                    .iter()
                    .chain(b"yy")
                    .copied()
                    .collect::<Vec<_>>()
            )
        );
    }
}
