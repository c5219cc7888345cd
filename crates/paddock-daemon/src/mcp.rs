//! The daemon's MCP host: the stateless Streamable HTTP service mounted on the ingress at
//! `/mcp`, and MCP over control-socket connections (in process, no HTTP hop).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt as _;
use paddock_tools::{AuthContext, Backend, Policy, Registry, SessionKey, ToolCtx};
use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::BufReader;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tracing::debug;

/// What MCP transports share: the registry, the policy and the backend.
pub struct McpHost {
    pub registry: Arc<Registry>,
    pub policy: Arc<Policy>,
    pub backend: Arc<dyn Backend>,
    owner: AuthContext,
}

impl std::fmt::Debug for McpHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHost")
            .field("policy", &self.policy.name())
            .finish_non_exhaustive()
    }
}

impl McpHost {
    pub fn new(registry: Arc<Registry>, policy: Arc<Policy>, backend: Arc<dyn Backend>) -> Self {
        let uid = paddock_client::paths::current_uid();
        Self {
            registry,
            policy,
            backend,
            owner: AuthContext::local_owner(format!("uid:{uid}")),
        }
    }

    /// The local owner's context. HTTP callers hold the daemon's bearer token and socket
    /// callers passed the SO_PEERCRED check: both are the daemon's owner and share one
    /// connection profile.
    fn owner_ctx(&self, session: Option<SessionKey>) -> ToolCtx {
        ToolCtx {
            auth: self.owner.clone(),
            policy: self.policy.clone(),
            profile: format!("owner:{}", self.owner.subject()),
            session,
            backend: self.backend.clone(),
        }
    }

    /// The `/mcp` route: rmcp's stateless Streamable HTTP service with JSON responses. Host,
    /// Origin and body size are the ingress's job, so rmcp's own checks are switched off rather
    /// than run twice with different rules.
    pub fn http_router(self: &Arc<Self>) -> Router {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .disable_allowed_hosts()
            .with_max_request_body_bytes(usize::MAX);
        let host = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(host.registry.server(host.owner_ctx(None))),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        Router::new()
            .route_service("/mcp", service)
            .layer(middleware::from_fn(precheck_json))
    }

    /// Serves MCP on a control-socket connection until either side closes it.
    pub async fn serve_socket(
        self: Arc<Self>,
        session: SessionKey,
        reader: BufReader<OwnedReadHalf>,
        writer: OwnedWriteHalf,
    ) {
        if let Err(error) = self.registry_store_session(&session) {
            debug!(%error, "could not record socket session");
        }
        let ctx = self.owner_ctx(Some(session.clone()));
        let (server, id) = self.registry.connection_server(ctx.clone());
        match server.serve((reader, writer)).await {
            Ok(running) => {
                self.registry.attach(id, ctx, running.peer().clone());
                let _ = running.waiting().await;
                self.registry.detach(id);
            }
            Err(error) => debug!(%error, "socket MCP connection ended before initialization"),
        }
        // The connection was the session: its device goes back to the pool.
        if let Some(device) = self.backend.release(session.as_str()).await {
            debug!(%device, "released the device of a closed socket session");
        }
    }

    fn registry_store_session(&self, session: &SessionKey) -> Result<(), String> {
        self.registry
            .record_session(session)
            .map_err(|error| error.to_string())
    }
}

/// Answers a POST whose body is not JSON with a JSON-RPC parse error (rmcp alone would answer
/// 415 with a plain-text body), and a batch with a JSON-RPC invalid-request error.
async fn precheck_json(request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return json_rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                "Request body too large",
            );
        }
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(error) => {
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                &format!("Parse error: {error}"),
            );
        }
        Ok(serde_json::Value::Array(_)) => {
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "Invalid request: JSON-RPC batches are not supported",
            );
        }
        Ok(serde_json::Value::Object(_)) => {}
        Ok(_) => {
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "Invalid request: expected a JSON-RPC object",
            );
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn json_rpc_error(status: StatusCode, code: i32, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
