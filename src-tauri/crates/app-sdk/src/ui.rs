//! A UI app's `/api/*` handler and the `UIService` that serves it. Osprey serves the static
//! `ui/` files itself; only API requests reach the app.

use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use osprey_rpc::v1::ui_service_server::UiService;
use osprey_rpc::v1::{
    ConfigureRequest, ConfigureResponse, HealthCheckRequest, HealthCheckResponse, HttpHeader,
    HttpRequest, HttpResponse,
};
use serde_json::Value;
use tonic::{Request, Response, Status};

use crate::tool::{configure, serving};

/// An API request, as forwarded by Osprey.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UiRequest {
    pub method: String,
    /// The path after `/api`, starting with `/`.
    pub path: String,
    /// The raw query string, without `?`.
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl UiRequest {
    /// The body parsed as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// An API response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UiResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl UiResponse {
    pub fn json(value: &Value) -> UiResponse {
        UiResponse {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
        }
    }

    pub fn text(status: u16, text: impl Into<String>) -> UiResponse {
        UiResponse {
            status,
            headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
            body: text.into().into_bytes(),
        }
    }
}

pub(crate) type UiHandler = Arc<dyn Fn(UiRequest) -> BoxFuture<'static, UiResponse> + Send + Sync>;

pub(crate) struct UiServer {
    pub(crate) handler: UiHandler,
    pub(crate) settings: Arc<RwLock<Value>>,
}

#[tonic::async_trait]
impl UiService for UiServer {
    async fn handle_request(
        &self,
        request: Request<HttpRequest>,
    ) -> Result<Response<HttpResponse>, Status> {
        let request = request.into_inner();
        let response = (self.handler)(UiRequest {
            method: request.method,
            path: request.path,
            query: request.query,
            headers: request
                .headers
                .into_iter()
                .map(|h| (h.name, h.value))
                .collect(),
            body: request.body,
        })
        .await;
        Ok(Response::new(HttpResponse {
            status: u32::from(response.status),
            headers: response
                .headers
                .into_iter()
                .map(|(name, value)| HttpHeader { name, value })
                .collect(),
            body: response.body,
        }))
    }

    async fn health_check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(serving()))
    }

    async fn configure(
        &self,
        request: Request<ConfigureRequest>,
    ) -> Result<Response<ConfigureResponse>, Status> {
        Ok(Response::new(configure(
            &self.settings,
            request.into_inner(),
        )))
    }
}
