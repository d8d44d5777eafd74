//! App UI windows: the `osprey-app://<app id>/<path>` scheme. Static files come from the app's
//! `ui/` directory and `/api/*` goes to the app's UIService, both through
//! `Core::serve_app_ui` (traversal, symlinks and oversize files refused there). A request is
//! served only to the app's own window (label [`window_label`]), so the main window, another
//! app's window or a page an app navigates to cannot reach an app's API. The windows match
//! `capabilities/app-ui.json`, which grants no commands.

use std::borrow::Cow;

use osprey_core::Core;
use tauri::http::{Request, Response, StatusCode};
use tauri::{Manager, Runtime, UriSchemeContext, UriSchemeResponder};

use crate::CoreState;

/// The URI scheme of app UI windows.
pub const SCHEME: &str = "osprey-app";
/// The content security policy every app UI response carries: the page may load and call only
/// its own app (`'self'` is `osprey-app://<id>`), so a UI cannot reach the network around the
/// `network:` permissions its app was granted, nor be framed. An app's own policy, if it sends
/// one, applies too (browsers enforce every policy), so it can only tighten this.
pub const APP_UI_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; media-src 'self' blob:; \
     object-src 'none'; frame-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// App UI window labels start with this (capabilities/app-ui.json matches `app-ui-*`).
pub const LABEL_PREFIX: &str = "app-ui-";

/// The window label for an app, or `None` when the id has characters a label cannot hold
/// (labels allow ASCII letters, digits, `-`, `_`, `/` and `:`; app ids use `.` too, mapped to
/// `:` so the mapping stays one to one).
pub fn window_label(app_id: &str) -> Option<String> {
    let valid = !app_id.is_empty()
        && app_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    valid.then(|| format!("{LABEL_PREFIX}{}", app_id.replace('.', ":")))
}

/// The start page of an app's UI window.
pub fn url_for(app_id: &str) -> Result<tauri::Url, String> {
    tauri::Url::parse(&format!("{SCHEME}://{app_id}/"))
        .map_err(|error| format!("`{app_id}` does not make a URL: {error}"))
}

fn plain(status: u16, message: &str) -> Response<Cow<'static, [u8]>> {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "text/plain; charset=utf-8")
        .body(Cow::Owned(message.as_bytes().to_vec()))
        .unwrap_or_else(|_| Response::new(Cow::Borrowed(&b"error"[..])))
}

/// Which app a request is for and what it asks, or a refusal response.
pub fn parse_request(
    webview_label: &str,
    request: &Request<Vec<u8>>,
) -> Result<(String, osprey_core::app_status::UiRequest), (u16, String)> {
    let uri = request.uri();
    let app_id = uri.host().unwrap_or_default().to_string();
    let Some(label) = window_label(&app_id) else {
        return Err((404, format!("`{app_id}` is not an app id")));
    };
    if label != webview_label {
        return Err((
            403,
            format!("only {app_id}'s own window may load {SCHEME}://{app_id}/"),
        ));
    }
    let headers = request
        .headers()
        .iter()
        .filter_map(|(name, value)| {
            value
                .to_str()
                .ok()
                .map(|value| (name.as_str().to_string(), value.to_string()))
        })
        .collect();
    Ok((
        app_id,
        osprey_core::app_status::UiRequest {
            method: request.method().as_str().to_string(),
            path: uri.path().to_string(),
            query: uri.query().unwrap_or_default().to_string(),
            headers,
            body: request.body().clone(),
        },
    ))
}

async fn serve(
    core: Core,
    app_id: String,
    request: osprey_core::app_status::UiRequest,
) -> Response<Cow<'static, [u8]>> {
    let response = core.serve_app_ui(&app_id, request).await;
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(response.status).unwrap_or(StatusCode::BAD_GATEWAY));
    for (name, value) in &response.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder = builder.header("content-security-policy", APP_UI_CSP);
    builder
        .body(Cow::Owned(response.body))
        .unwrap_or_else(|error| plain(502, &format!("the app sent a bad header: {error}")))
}

/// The scheme handler registered in `lib.rs`.
pub fn handle<R: Runtime>(
    context: UriSchemeContext<'_, R>,
    request: Request<Vec<u8>>,
    responder: UriSchemeResponder,
) {
    let core = match context.app_handle().state::<CoreState>().core() {
        Ok(core) => core.clone(),
        Err(error) => return responder.respond(plain(503, &error.message)),
    };
    match parse_request(context.webview_label(), &request) {
        Err((status, message)) => responder.respond(plain(status, &message)),
        Ok((app_id, request)) => {
            tauri::async_runtime::spawn(async move {
                responder.respond(serve(core, app_id, request).await);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_map_ids_one_to_one_and_refuse_odd_characters() {
        assert_eq!(
            window_label("com.example.notes").as_deref(),
            Some("app-ui-com:example:notes")
        );
        assert_eq!(window_label("ui-app").as_deref(), Some("app-ui-ui-app"));
        assert_eq!(window_label(""), None);
        assert_eq!(window_label("../etc"), None);
        assert_eq!(window_label("a b"), None);
    }

    fn request(uri: &str) -> Request<Vec<u8>> {
        Request::builder()
            .method("POST")
            .uri(uri)
            .header("content-type", "application/json")
            .body(b"{}".to_vec())
            .unwrap()
    }

    #[test]
    fn a_request_from_the_apps_own_window_is_passed_on_whole() {
        let (app, ui) =
            parse_request("app-ui-ui-app", &request("osprey-app://ui-app/api/sum?x=1")).unwrap();
        assert_eq!(app, "ui-app");
        assert_eq!(ui.method, "POST");
        assert_eq!(ui.path, "/api/sum");
        assert_eq!(ui.query, "x=1");
        assert_eq!(ui.body, b"{}");
        assert!(
            ui.headers
                .contains(&("content-type".into(), "application/json".into()))
        );
    }

    #[test]
    fn other_windows_are_refused() {
        let refused = |label: &str| parse_request(label, &request("osprey-app://ui-app/api/x"));
        assert_eq!(refused("main").unwrap_err().0, 403);
        assert_eq!(refused("app-ui-other-app").unwrap_err().0, 403);
        assert_eq!(
            parse_request("main", &request("osprey-app://bad~id/"))
                .unwrap_err()
                .0,
            404
        );
    }
}
