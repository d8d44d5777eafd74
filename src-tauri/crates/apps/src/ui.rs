//! Serving an installed UI app (`osprey-app://<id>/...` in the desktop shell): static files from
//! the app's `ui/` directory, and `/api/*` forwarded to the app's `UIService`. Paths are checked
//! component by component (no `..`, no hidden files, no symlinks anywhere under ui/), so a
//! request can never read outside `ui/`.

use std::path::Path;
use std::time::Duration;

use osprey_rpc::AppChannel;
use osprey_rpc::v1::ui_service_client::UiServiceClient;
use osprey_rpc::v1::{HttpHeader, HttpRequest};

/// How long an `/api/*` request may take.
pub const API_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest static file served.
const MAX_STATIC_BYTES: u64 = 5 * 1024 * 1024;
/// Headers that belong to one hop and are not passed on.
const HOP_HEADERS: [&str; 6] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "proxy-connection",
    "te",
];

/// A request to a UI app, from the shell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UiRequest {
    pub method: String,
    /// Starts with `/`; `?query` already split off.
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UiResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl UiResponse {
    /// A plain-text answer with `status`: what the shell shows for a refused request.
    pub fn error(status: u16, message: &str) -> UiResponse {
        UiResponse {
            status,
            headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
            body: message.as_bytes().to_vec(),
        }
    }
}

/// Answers one request for the UI app in `app_dir`, whose UIService is on `channel`.
pub async fn serve(app_dir: &Path, channel: AppChannel, request: UiRequest) -> UiResponse {
    let api_path = if request.path == "/api" {
        Some("/")
    } else {
        request
            .path
            .strip_prefix("/api/")
            .map(|_| &request.path[4..])
    };
    match api_path {
        Some(path) => forward(channel, path.to_owned(), request).await,
        None if request.method == "GET" || request.method == "HEAD" => {
            static_file(app_dir, &request.path)
        }
        None => UiResponse::error(405, "static files are read-only"),
    }
}

async fn forward(channel: AppChannel, path: String, request: UiRequest) -> UiResponse {
    let mut client = UiServiceClient::new(channel);
    let forwarded = HttpRequest {
        method: request.method,
        path,
        query: request.query,
        headers: request
            .headers
            .into_iter()
            .filter(|(name, _)| !HOP_HEADERS.contains(&name.to_ascii_lowercase().as_str()))
            .map(|(name, value)| HttpHeader { name, value })
            .collect(),
        body: request.body,
    };
    match tokio::time::timeout(API_TIMEOUT, client.handle_request(forwarded)).await {
        Err(_) => UiResponse::error(504, "the app did not answer in time"),
        Ok(Err(status)) => UiResponse::error(502, &format!("the app failed: {}", status.message())),
        Ok(Ok(response)) => {
            let response = response.into_inner();
            let status = u16::try_from(response.status)
                .ok()
                .filter(|s| (100..=599).contains(s))
                .unwrap_or(502);
            UiResponse {
                status,
                headers: response
                    .headers
                    .into_iter()
                    .filter(|h| !HOP_HEADERS.contains(&h.name.to_ascii_lowercase().as_str()))
                    .map(|h| (h.name, h.value))
                    .collect(),
                body: response.body,
            }
        }
    }
}

fn static_file(app_dir: &Path, path: &str) -> UiResponse {
    let relative = match path.trim_start_matches('/') {
        "" => "index.html",
        other => other,
    };
    let mut file = app_dir.join(crate::napp::UI_DIR);
    // ui/ itself must be a real directory, and so must every step below it.
    if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_dir()) {
        return UiResponse::error(404, "this app has no UI");
    }
    let components: Vec<&str> = relative.split('/').collect();
    for (index, component) in components.iter().enumerate() {
        let safe = !component.is_empty()
            && !component.starts_with('.')
            && component
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !safe {
            return UiResponse::error(404, "not found");
        }
        file.push(component);
        let Ok(meta) = std::fs::symlink_metadata(&file) else {
            return UiResponse::error(404, "not found");
        };
        let last = index + 1 == components.len();
        let right_kind = if last { meta.is_file() } else { meta.is_dir() };
        if !right_kind || meta.file_type().is_symlink() {
            return UiResponse::error(404, "not found");
        }
        if last && meta.len() > MAX_STATIC_BYTES {
            return UiResponse::error(413, "file too large");
        }
    }
    match std::fs::read(&file) {
        Ok(body) => UiResponse {
            status: 200,
            headers: vec![
                ("content-type".into(), content_type(relative).into()),
                ("x-content-type-options".into(), "nosniff".into()),
            ],
            body,
        },
        Err(_) => UiResponse::error(404, "not found"),
    }
}

fn content_type(path: &str) -> &'static str {
    match path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .as_deref()
    {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("txt") => "text/plain; charset=utf-8",
        Some("wasm") => "application/wasm",
        _ => "application/octet-stream",
    }
}
