//! The gRPC inspector: a ring buffer of each app's recent traffic, for the people who write apps.
//!
//! Every channel Osprey dials an app on is an [`AppChannel`]: tonic's channel with a tap on each
//! call. The tap notes the method, when it started, how long it took, the gRPC status, how many
//! bytes went each way, and keeps the first [`BYTES_KEPT`] bytes of each direction. Nothing is
//! decoded on the call's path: [`Traffic::recent`] decodes what was kept with the protocol's own
//! schema (compiled into this crate) when someone looks, so an inspected call costs a copy of a
//! few bytes and two uncontended locks.
//!
//! What is kept stays in this process's memory: it is never written to disk, and it is shown only
//! through the desktop and the owner-only control socket. Credentials are never shown: string
//! values under names such as `access_token`, `store_token`, `password` or `api_key` (also inside
//! the `*_json` payloads, which are decoded as JSON) read `[redacted]`.
//!
//! Health checks run every 15 s and would push everything else out of the ring, so a health check
//! is kept only when it fails. A ring outlives the app's process: the calls before a crash are
//! still there after the supervisor restarted it.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body::Frame;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};
use serde_json::Value;
use tonic::body::Body;
use tonic::transport::Channel;

/// Calls kept per app; older ones are forgotten.
pub const EXCHANGES_KEPT: usize = 100;
/// Bytes kept of each direction of a call; the counts still cover the whole call.
pub const BYTES_KEPT: usize = 16 * 1024;

const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/app_v1_descriptors.bin"));

/// Every inspected app's ring, by app id. Cheap to clone; clones share the rings.
#[derive(Clone, Default)]
pub struct Traffic {
    rings: Arc<Mutex<HashMap<String, Ring>>>,
}

impl std::fmt::Debug for Traffic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traffic").finish_non_exhaustive()
    }
}

impl Traffic {
    pub fn new() -> Traffic {
        Traffic::default()
    }

    /// The ring of `app_id`, made on first use.
    pub fn ring(&self, app_id: &str) -> Ring {
        let mut rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        rings.entry(app_id.to_owned()).or_default().clone()
    }

    /// Wraps a channel to `app_id` so its calls land in that app's ring.
    pub fn inspect(&self, app_id: &str, channel: Channel) -> AppChannel {
        AppChannel {
            inner: channel,
            ring: Some(self.ring(app_id)),
        }
    }

    /// The app's last `limit` calls, oldest first, decoded. Empty when nothing was seen.
    pub fn recent(&self, app_id: &str, limit: usize) -> Vec<Exchange> {
        let ring = self
            .rings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(app_id)
            .cloned();
        ring.map(|ring| ring.recent(limit)).unwrap_or_default()
    }

    /// Drops what was kept of an app (it was uninstalled).
    pub fn forget(&self, app_id: &str) {
        self.rings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(app_id);
    }
}

/// One app's recent calls.
#[derive(Clone, Default)]
pub struct Ring {
    inner: Arc<RingInner>,
}

#[derive(Default)]
struct RingInner {
    next_id: AtomicU64,
    calls: Mutex<VecDeque<Arc<Call>>>,
}

impl Ring {
    fn begin(&self, method: &str) -> Arc<Call> {
        let health_check = method.ends_with("/HealthCheck");
        let call = Arc::new(Call {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed) + 1,
            method: method.trim_start_matches('/').to_owned(),
            started_at: SystemTime::now(),
            start: Instant::now(),
            ring: health_check.then(|| self.clone()),
            state: Mutex::new(State::default()),
        });
        if !health_check {
            self.push(Arc::clone(&call));
        }
        call
    }

    fn push(&self, call: Arc<Call>) {
        let mut calls = self.inner.calls.lock().unwrap_or_else(|e| e.into_inner());
        if calls.len() == EXCHANGES_KEPT {
            calls.pop_front();
        }
        calls.push_back(call);
    }

    fn recent(&self, limit: usize) -> Vec<Exchange> {
        let calls: Vec<Arc<Call>> = {
            let calls = self.inner.calls.lock().unwrap_or_else(|e| e.into_inner());
            let skip = calls.len().saturating_sub(limit);
            calls.iter().skip(skip).cloned().collect()
        };
        calls.iter().map(|call| call.exchange()).collect()
    }
}

/// One call as it happens.
struct Call {
    id: u64,
    method: String,
    started_at: SystemTime,
    start: Instant,
    /// Set for a health check, which joins the ring only if it fails.
    ring: Option<Ring>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    request: Captured,
    response: Captured,
    ended: Option<Duration>,
    /// The gRPC status code, from the response's headers or trailers.
    status: Option<i32>,
    message: Option<String>,
}

#[derive(Default)]
struct Captured {
    bytes: u64,
    kept: Vec<u8>,
}

impl Captured {
    fn take(&mut self, data: &[u8]) {
        self.bytes += data.len() as u64;
        let room = BYTES_KEPT.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&data[..data.len().min(room)]);
    }
}

#[derive(Clone, Copy)]
enum Side {
    Request,
    Response,
}

impl Call {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn read_status(&self, headers: &http::HeaderMap) {
        let Some(code) = headers
            .get("grpc-status")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<i32>().ok())
        else {
            return;
        };
        let message = headers
            .get("grpc-message")
            .and_then(|value| value.to_str().ok())
            .map(percent_decode);
        self.with(|state| {
            state.status = Some(code);
            if message.is_some() {
                state.message = message;
            }
        });
    }

    /// The call is over: `failure` is why, when it did not end with the response's trailers.
    fn end(&self, failure: Option<String>) {
        let failed = self.with(|state| {
            if state.ended.is_some() {
                return false;
            }
            state.ended = Some(self.start.elapsed());
            if let Some(failure) = failure
                && state.status.is_none()
            {
                state.message = Some(failure);
            }
            state.status != Some(0)
        });
        if failed && let Some(ring) = &self.ring {
            // A failed health check: the one kind the ring shows only when it goes wrong.
            ring.push(Arc::new(self.copy()));
        }
    }

    fn copy(&self) -> Call {
        let state = self.with(|state| State {
            request: Captured {
                bytes: state.request.bytes,
                kept: state.request.kept.clone(),
            },
            response: Captured {
                bytes: state.response.bytes,
                kept: state.response.kept.clone(),
            },
            ended: state.ended,
            status: state.status,
            message: state.message.clone(),
        });
        Call {
            id: self.id,
            method: self.method.clone(),
            started_at: self.started_at,
            start: self.start,
            ring: None,
            state: Mutex::new(state),
        }
    }

    fn exchange(&self) -> Exchange {
        let (service, method) = self.method.rsplit_once('/').unwrap_or(("", &self.method));
        let descriptors = method_types(service, method);
        self.with(|state| Exchange {
            id: self.id,
            method: self.method.clone(),
            started_at_ms: self
                .started_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_millis() as u64),
            duration_ms: state.ended.map(|ended| ended.as_secs_f64() * 1000.0),
            status: state
                .status
                .map(|code| format!("{:?}", tonic::Code::from(code))),
            message: state.message.clone(),
            request_bytes: state.request.bytes,
            response_bytes: state.response.bytes,
            request: decode(&state.request, descriptors.as_ref().map(|d| &d.0)),
            response: decode(&state.response, descriptors.as_ref().map(|d| &d.1)),
        })
    }
}

/// One call as the inspector shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Exchange {
    /// Counts up per app from 1.
    pub id: u64,
    /// `osprey.app.v1.ToolService/Execute`.
    pub method: String,
    pub started_at_ms: u64,
    /// None while the call is still going (a stream that is open, a call waiting on the app).
    pub duration_ms: Option<f64>,
    /// The gRPC status name (`Ok`, `Unavailable`, ...); None until the app answered one.
    pub status: Option<String>,
    /// The status's message, or why the call ended without one.
    pub message: Option<String>,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Each message sent, as protobuf JSON with the proto's field names; a message cut by
    /// [`BYTES_KEPT`] or not decodable is a string saying so.
    pub request: Vec<Value>,
    pub response: Vec<Value>,
}

fn pool() -> Option<&'static DescriptorPool> {
    static POOL: OnceLock<Option<DescriptorPool>> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(DESCRIPTORS).ok())
        .as_ref()
}

fn method_types(service: &str, method: &str) -> Option<(MessageDescriptor, MessageDescriptor)> {
    let service = pool()?.get_service_by_name(service)?;
    let method = service.methods().find(|m| m.name() == method)?;
    Some((method.input(), method.output()))
}

/// Splits the kept bytes into gRPC messages (a flag byte, a 4-byte length, the message) and
/// decodes each.
fn decode(captured: &Captured, descriptor: Option<&MessageDescriptor>) -> Vec<Value> {
    let mut messages = Vec::new();
    let mut rest = captured.kept.as_slice();
    while !rest.is_empty() {
        if rest.len() < 5 {
            messages.push(cut(captured));
            break;
        }
        let compressed = rest[0] == 1;
        let length = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        let Some(body) = rest.get(5..5 + length) else {
            messages.push(cut(captured));
            break;
        };
        rest = &rest[5 + length..];
        messages.push(match descriptor {
            _ if compressed => Value::String(format!("(a compressed message of {length} bytes)")),
            None => Value::String(format!("(a message of {length} bytes; unknown method)")),
            Some(descriptor) => match DynamicMessage::decode(descriptor.clone(), body) {
                Ok(message) => {
                    let options = SerializeOptions::new()
                        .use_proto_field_name(true)
                        .stringify_64_bit_integers(false);
                    match message.serialize_with_options(serde_json::value::Serializer, &options) {
                        Ok(mut value) => {
                            redact(&mut value);
                            value
                        }
                        Err(error) => Value::String(format!("(not shown: {error})")),
                    }
                }
                Err(error) => Value::String(format!("(not decodable: {error})")),
            },
        });
    }
    messages
}

fn cut(captured: &Captured) -> Value {
    Value::String(format!(
        "(the rest is not kept: the inspector keeps the first {} of {} bytes)",
        captured.kept.len().min(BYTES_KEPT),
        captured.bytes
    ))
}

/// Names whose string values are credentials.
fn secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "token",
        "secret",
        "password",
        "passwd",
        "api_key",
        "apikey",
        "authorization",
        "cookie",
        "credential",
        "private_key",
    ]
    .iter()
    .any(|needle| name.contains(needle))
}

/// Hides credentials, and shows `*_json` strings as the JSON they hold.
fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            // A header as `{name, value}` (the UI service's requests): the name says whether
            // its value is a credential.
            let credential = map.get("name").and_then(Value::as_str).is_some_and(secret);
            if credential && let Some(value @ Value::String(_)) = map.get_mut("value") {
                *value = Value::String("[redacted]".into());
            }
            for (key, value) in map.iter_mut() {
                if key.ends_with("_json")
                    && let Value::String(text) = value
                    && let Ok(parsed) = serde_json::from_str::<Value>(text)
                {
                    *value = parsed;
                }
                if secret(key) && value.is_string() {
                    *value = Value::String("[redacted]".into());
                } else {
                    redact(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// `grpc-message` is percent-encoded.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The channel every app client uses: tonic's channel, with the inspector's tap when Osprey
/// supervises the app. Cheap to clone, like the channel.
#[derive(Clone, Debug)]
pub struct AppChannel {
    inner: Channel,
    ring: Option<Ring>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").finish_non_exhaustive()
    }
}

impl AppChannel {
    /// A channel whose calls are not kept (tests, benches, tools that talk to an app once).
    pub fn uninspected(channel: Channel) -> AppChannel {
        AppChannel {
            inner: channel,
            ring: None,
        }
    }
}

impl tower::Service<http::Request<Body>> for AppChannel {
    type Response = http::Response<Body>;
    type Error = tonic::transport::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<http::Response<Body>, tonic::transport::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        tower::Service::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let Some(ring) = &self.ring else {
            return Box::pin(self.inner.call(request));
        };
        let call = ring.begin(request.uri().path());
        let (parts, body) = request.into_parts();
        let body = Body::new(Tap::new(body, Arc::clone(&call), Side::Request));
        let future = self.inner.call(http::Request::from_parts(parts, body));
        Box::pin(async move {
            match future.await {
                Ok(response) => {
                    // A trailers-only answer (most errors) carries its status in the headers.
                    call.read_status(response.headers());
                    let (parts, body) = response.into_parts();
                    let body = Body::new(Tap::new(body, call, Side::Response));
                    Ok(http::Response::from_parts(parts, body))
                }
                Err(error) => {
                    call.end(Some(format!("transport: {error}")));
                    Err(error)
                }
            }
        })
    }
}

/// A body that notes what passes through it.
struct Tap {
    inner: Body,
    call: Arc<Call>,
    side: Side,
    done: bool,
}

impl Tap {
    fn new(inner: Body, call: Arc<Call>, side: Side) -> Tap {
        Tap {
            inner,
            call,
            side,
            done: false,
        }
    }
}

impl http_body::Body for Tap {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let side = self.side;
                    self.call.with(|state| match side {
                        Side::Request => state.request.take(data),
                        Side::Response => state.response.take(data),
                    });
                } else if let Some(trailers) = frame.trailers_ref() {
                    self.call.read_status(trailers);
                }
            }
            Poll::Ready(Some(Err(status))) => {
                if matches!(self.side, Side::Response) {
                    self.done = true;
                    self.call.end(Some(status.message().to_owned()));
                }
            }
            Poll::Ready(None) => {
                if matches!(self.side, Side::Response) {
                    self.done = true;
                    self.call.end(None);
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        if matches!(self.side, Side::Response) && !self.done {
            self.call.end(Some(
                "Osprey stopped reading the answer before it ended".into(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_hidden_and_json_payloads_shown_as_json() {
        let mut value = serde_json::json!({
            "settings_json": "{\"osprey\":{\"accounts\":{\"github\":{\"access_token\":\"gho_x\"}},\"store_token\":\"s\"},\"folder\":\"INBOX\",\"max_tokens\":5}",
            "input_json": "not json",
            "headers": [{"name": "Cookie", "value": "sid=1"}, {"name": "accept", "value": "*/*"}],
        });
        redact(&mut value);
        assert_eq!(
            value,
            serde_json::json!({
                "settings_json": {
                    "osprey": {"accounts": {"github": {"access_token": "[redacted]"}}, "store_token": "[redacted]"},
                    "folder": "INBOX",
                    "max_tokens": 5,
                },
                "input_json": "not json",
                "headers": [{"name": "Cookie", "value": "[redacted]"}, {"name": "accept", "value": "*/*"}],
            })
        );
    }

    #[test]
    fn grpc_messages_are_percent_decoded() {
        assert_eq!(percent_decode("no%20such%20tool%3A x"), "no such tool: x");
        assert_eq!(percent_decode("100%"), "100%");
    }

    #[test]
    fn kept_bytes_decode_per_message_and_a_cut_message_says_so() {
        let (input, _) = method_types("osprey.app.v1.ToolService", "Execute").expect("schema");
        let mut message = DynamicMessage::new(input.clone());
        message.set_field_by_name("tool", prost_reflect::Value::String("echo".into()));
        let encoded = prost::Message::encode_to_vec(&message);
        let mut framed = vec![0u8];
        framed.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
        framed.extend_from_slice(&encoded);
        let mut captured = Captured::default();
        captured.take(&framed);
        captured.take(&framed[..3]);
        let decoded = decode(&captured, Some(&input));
        assert_eq!(decoded.len(), 2);
        assert_eq!(decoded[0]["tool"], "echo");
        assert!(
            decoded[1].as_str().unwrap().contains("not kept"),
            "{decoded:?}"
        );
    }
}
