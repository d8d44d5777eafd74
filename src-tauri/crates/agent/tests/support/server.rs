//! A loopback model server for tests: it plays scripted replies in order (whatever the path) and
//! records every request, so the real provider clients run end to end against real HTTP.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 with these body chunks, written one by one, then a clean end.
    Stream {
        content_type: &'static str,
        chunks: Vec<String>,
    },
    /// 200 with these chunks, then the connection is cut (no terminating chunk).
    Cut {
        content_type: &'static str,
        chunks: Vec<String>,
    },
    /// 200 with these chunks, then nothing more, never ending (a stalled model).
    Hang {
        content_type: &'static str,
        chunks: Vec<String>,
    },
    /// A plain response (errors).
    Status {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
}

/// A request the server saw.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
    /// Ollama's `/api/show` is answered apart from the script (and not counted in `seen`): the
    /// model's window, as `model_info.llama.context_length`.
    shown: Mutex<Vec<Value>>,
}

/// The window the server reports for every model on `/api/show`.
pub const OLLAMA_WINDOW: u64 = 131_072;

/// Ollama's answer to `/api/show`: a llama model with [`OLLAMA_WINDOW`].
pub fn show_reply() -> Response {
    let info = serde_json::json!({"model_info": {
        "general.architecture": "llama", "llama.context_length": OLLAMA_WINDOW}});
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from(info.to_string()))
        .unwrap()
}

/// The running server.
pub struct Server {
    pub addr: SocketAddr,
    script: Arc<Script>,
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Server {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            ..Script::default()
        });
        let app = Router::new().fallback(handle).with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Server { addr, script }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.script.seen.lock().unwrap().clone()
    }

    /// The bodies of the `/api/show` requests.
    pub fn shown(&self) -> Vec<Value> {
        self.script.shown.lock().unwrap().clone()
    }

    pub fn remaining(&self) -> usize {
        self.script.replies.lock().unwrap().len()
    }
}

async fn handle(
    State(script): State<Arc<Script>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if uri.path() == "/api/show" {
        script.shown.lock().unwrap().push(body);
        return show_reply();
    }
    script.seen.lock().unwrap().push(Seen {
        path: uri.path().to_string(),
        headers,
        body: body.clone(),
    });
    if let Some(refused) = refused(uri.path(), &body) {
        return refused;
    }
    let reply = script.replies.lock().unwrap().pop_front();
    let Some(reply) = reply else {
        return Response::builder()
            .status(500)
            .body(Body::from("the test script has no more replies"))
            .unwrap();
    };
    respond(reply)
}

/// Refused as the real API refuses it, without using up a scripted reply.
fn refused(path: &str, body: &Value) -> Option<Response> {
    let (status, error) = osprey_tests::provider_rules::refusal(path, body)?;
    Some(
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(error.to_string()))
            .unwrap(),
    )
}

/// The response a scripted reply makes.
pub fn respond(reply: Reply) -> Response {
    match reply {
        Reply::Stream {
            content_type,
            chunks,
        } => stream(content_type, chunks, false),
        Reply::Cut {
            content_type,
            chunks,
        } => stream(content_type, chunks, true),
        Reply::Hang {
            content_type,
            chunks,
        } => {
            let body = futures::stream::iter(chunks)
                .map(|c| Ok::<_, std::io::Error>(Bytes::from(c)))
                .chain(futures::stream::pending());
            Response::builder()
                .header("content-type", content_type)
                .body(Body::from_stream(body))
                .unwrap()
        }
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut builder = Response::builder().status(StatusCode::from_u16(status).unwrap());
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            builder.body(Body::from(body)).unwrap()
        }
    }
}

fn stream(content_type: &'static str, chunks: Vec<String>, cut: bool) -> Response {
    let body = futures::stream::iter(chunks)
        .then(|chunk| async move {
            // Let each chunk go out on its own so the client sees real framing boundaries.
            tokio::task::yield_now().await;
            Ok::<_, std::io::Error>(Bytes::from(chunk))
        })
        .chain(futures::stream::iter(cut.then(|| {
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "scripted disconnect",
            ))
        })));
    Response::builder()
        .header("content-type", content_type)
        .body(Body::from_stream(body))
        .unwrap()
}

/// Anthropic-style SSE: one named event.
pub fn sse_event(event: &str, data: Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// OpenAI-style SSE: one unnamed data event.
pub fn sse_data(data: Value) -> String {
    format!("data: {data}\n\n")
}

pub fn ndjson(line: Value) -> String {
    format!("{line}\n")
}

pub const SSE: &str = "text/event-stream";
pub const NDJSON: &str = "application/x-ndjson";
struct Scripts {
    classify: fn(&str) -> usize,
    queues: Mutex<Vec<VecDeque<Reply>>>,
    seen: Mutex<Vec<(usize, String)>>,
}

/// A model server with one script per kind of request: `classify` says which script answers a
/// request (by its body), so agents running in parallel each get their own replies in order.
pub struct RoutedServer {
    pub url: String,
    scripts: Arc<Scripts>,
}

impl RoutedServer {
    /// `scripts[classify(body)]` answers each request.
    pub async fn start(classify: fn(&str) -> usize, scripts: Vec<Vec<Reply>>) -> RoutedServer {
        let scripts = Arc::new(Scripts {
            classify,
            queues: Mutex::new(scripts.into_iter().map(VecDeque::from).collect()),
            seen: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(routed).with_state(scripts.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        RoutedServer { url, scripts }
    }

    /// The bodies of the requests one script answered, in order.
    pub fn seen(&self, agent: usize) -> Vec<String> {
        self.scripts
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(a, _)| *a == agent)
            .map(|(_, body)| body.clone())
            .collect()
    }
}

async fn routed(State(scripts): State<Arc<Scripts>>, uri: Uri, body: Bytes) -> Response {
    if uri.path() == "/api/show" {
        return show_reply();
    }
    let text = String::from_utf8_lossy(&body).to_string();
    let agent = (scripts.classify)(&text);
    scripts.seen.lock().unwrap().push((agent, text));
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Some(refused) = refused(uri.path(), &json) {
        return refused;
    }
    let reply = scripts
        .queues
        .lock()
        .unwrap()
        .get_mut(agent)
        .and_then(|q| q.pop_front());
    match reply {
        Some(reply) => respond(reply),
        None => Response::builder()
            .status(500)
            .body(Body::from(format!("no scripted reply for script {agent}")))
            .unwrap(),
    }
}
