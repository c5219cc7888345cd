//! The daemon's MCP host: the stateless Streamable HTTP service mounted on the ingress at
//! `/mcp`, and MCP over control-socket connections (in process, no HTTP hop).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt as _;
use paddock_tools::tasks::{CallRecorder, TaskBackend};
use paddock_tools::{AuthContext, Backend, Policy, Registry, SessionKey, ToolCtx, protocol};
use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::BufReader;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tracing::debug;

/// What MCP transports share: the registry, the policy and the backend.
pub struct McpHost {
    /// The HTTP callers' context, built once: every request shares it.
    http_ctx: Arc<ToolCtx>,
    pub registry: Arc<Registry>,
    pub policy: Arc<Policy>,
    pub backend: Arc<dyn Backend>,
    owner: AuthContext,
    /// The daemon's tasks, for the owner's task tools.
    tasks: Option<Arc<dyn TaskBackend>>,
    /// Records the owner's sessions' tool calls (`--tool-call-recording`).
    recorder: Option<Arc<dyn CallRecorder>>,
    /// How long a reconnectable socket session keeps its device after its last connection.
    session_grace: Duration,
    /// Socket sessions with a live connection or a pending release.
    socket_sessions: Arc<Mutex<HashMap<SessionKey, SocketSession>>>,
}

/// A socket session's connections: how many are open, and which close may release it.
#[derive(Debug, Default)]
struct SocketSession {
    live: usize,
    /// Bumped by every connection that opens, so a release scheduled before it is void.
    generation: u64,
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
        let owner = AuthContext::local_owner(format!("uid:{uid}"));
        let http_ctx = Arc::new(owner_ctx(&owner, &policy, &backend, None));
        Self {
            http_ctx,
            registry,
            policy,
            backend,
            owner,
            tasks: None,
            recorder: None,
            session_grace: Duration::ZERO,
            socket_sessions: Arc::default(),
        }
    }

    /// Keeps a reconnectable socket session's device for `grace` after its last connection.
    pub fn with_session_grace(mut self, grace: Duration) -> Self {
        self.session_grace = grace;
        self
    }

    /// Gives the owner's contexts the daemon's tasks and, with `--tool-call-recording`, a
    /// recorder of their sessions' tool calls.
    pub fn with_tasks(
        mut self,
        tasks: Arc<dyn TaskBackend>,
        recorder: Option<Arc<dyn CallRecorder>>,
    ) -> Self {
        self.tasks = Some(tasks);
        self.recorder = recorder;
        self.http_ctx = Arc::new(self.owner_ctx(None));
        self
    }

    /// The local owner's context. HTTP callers hold the daemon's bearer token and socket
    /// callers passed the SO_PEERCRED check: both are the daemon's owner and share one
    /// connection profile.
    fn owner_ctx(&self, session: Option<SessionKey>) -> ToolCtx {
        ToolCtx {
            tasks: self.tasks.clone(),
            recorder: self.recorder.clone(),
            ..owner_ctx(&self.owner, &self.policy, &self.backend, session)
        }
    }

    /// Runs `tool` for the fleet server this daemon joined, in `session` (a device's fleet
    /// session) or outside any; the answer is the tool's `CallToolResult` as JSON. The caller
    /// is the owner: the server already applied its own policy, and the daemon's applies too.
    pub async fn fleet_call(
        &self,
        session: Option<SessionKey>,
        tool: String,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, paddock_client::fleet::FrameError> {
        if let Some(session) = &session {
            self.registry.record_session(session);
        }
        let ctx = ToolCtx {
            profile: "fleet".to_owned(),
            ..self.owner_ctx(session)
        };
        let server = self.registry.server(ctx);
        let request = rmcp::model::CallToolRequestParams::new(tool).with_arguments(arguments);
        match server.call(request, None, None).await {
            Ok(result) => {
                serde_json::to_value(&result).map_err(|error| paddock_client::fleet::FrameError {
                    code: "upstream_error".into(),
                    message: format!("could not encode the answer: {error}"),
                })
            }
            Err(error) => Err(paddock_client::fleet::FrameError {
                code: "invalid_input".into(),
                message: error.message.to_string(),
            }),
        }
    }

    /// The owner's principal (`uid:<n>`): a task's agent context names it as its owner.
    pub fn owner_subject(&self) -> &str {
        self.owner.subject()
    }

    /// Serves MCP on a control-socket connection with a context fixed by the caller (a task's
    /// agent), until either side closes it or `ended` resolves. The session's device is not
    /// released here: whoever made the context owns it.
    pub async fn serve_bound(
        self: Arc<Self>,
        ctx: ToolCtx,
        reader: BufReader<OwnedReadHalf>,
        writer: OwnedWriteHalf,
        ended: impl std::future::Future<Output = ()>,
    ) {
        if let Some(session) = &ctx.session {
            self.registry.record_session(session);
        }
        self.serve_connection(ctx, reader, writer, ended).await;
    }

    /// Serves one MCP connection with `ctx` until either side closes it or `ended` resolves
    /// (dropping the running service cancels it).
    async fn serve_connection(
        &self,
        ctx: ToolCtx,
        reader: BufReader<OwnedReadHalf>,
        writer: OwnedWriteHalf,
        ended: impl std::future::Future<Output = ()>,
    ) {
        let (server, id) = self.registry.connection_server(ctx.clone());
        match server.serve((reader, writer)).await {
            Ok(running) => {
                self.registry.attach(id, ctx, running.peer().clone());
                tokio::select! {
                    _ = running.waiting() => {}
                    () = ended => {}
                }
                self.registry.detach(id);
            }
            Err(error) => debug!(%error, "socket MCP connection ended before initialization"),
        }
    }

    /// Ends the HTTP `subscriptions/listen` streams (called at shutdown, before the drain).
    pub fn close_subscriptions(&self) {
        self.registry.close_subscriptions();
    }

    /// Writes out pending audit lines (called at shutdown).
    pub fn flush_audit(&self) {
        self.registry.flush_audit();
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
            move || Ok(host.registry.shared_server(host.http_ctx.clone())),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let host = self.clone();
        Router::new()
            .route_service("/mcp", service)
            .layer(middleware::from_fn(move |request, next| {
                let host = host.clone();
                async move { host.fast_path_or(request, next).await }
            }))
    }

    /// Answers `tools/call` and `tools/list` of the protocol versions that need no negotiation
    /// directly, and hands everything else to rmcp. rmcp builds a service, a peer, several
    /// channels and tasks for each stateless request; for the two methods that carry almost all
    /// traffic the same handler is called here without that machinery, producing the same
    /// JSON-RPC answer (tests compare both paths).
    async fn fast_path_or(self: Arc<Self>, request: Request, next: Next) -> Response {
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
        let message = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Err(error) => {
                return json_rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32700,
                    &format!("Parse error: {error}"),
                );
            }
            Ok(message) => match protocol::request_object(message) {
                Ok(message) => message,
                Err(refusal) => {
                    return json_rpc_error(StatusCode::BAD_REQUEST, refusal.code, &refusal.message);
                }
            },
        };
        let version = parts
            .headers
            .get("mcp-protocol-version")
            .and_then(|value| value.to_str().ok());
        // A revision rmcp knows but this endpoint does not serve in full (2025-03-26 requires
        // batches, 2024-11-05 had the older HTTP+SSE transport) is refused; an unknown one is
        // rmcp's to refuse.
        let names = |versions: &[rmcp::model::ProtocolVersion], version: &str| {
            versions.iter().any(|known| known.as_str() == version)
        };
        if let Some(version) = version
            && !names(paddock_tools::server::HTTP_VERSIONS, version)
            && names(rmcp::model::ProtocolVersion::KNOWN_VERSIONS, version)
        {
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                protocol::INVALID_REQUEST,
                &format!(
                    "Bad Request: unsupported MCP-Protocol-Version `{version}`; this server speaks {}",
                    paddock_tools::server::HTTP_VERSIONS
                        .iter()
                        .map(rmcp::model::ProtocolVersion::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        if message.get("method").and_then(serde_json::Value::as_str)
            == Some("notifications/cancelled")
            && message.get("id").is_none()
        {
            // Stateless HTTP before 2026-07-28: the cancel arrives as its own POST, which only
            // the session header and the request id tie to the call.
            let request_id = message
                .get("params")
                .and_then(|params| params.get("requestId"))
                .map(|id| match id {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                });
            if let Some(request_id) = request_id {
                let session = parts
                    .headers
                    .get(paddock_tools::session::SESSION_HEADER)
                    .and_then(|value| value.to_str().ok());
                let stopped = self.registry.cancel_http_call(session, &request_id);
                debug!(%request_id, stopped, "HTTP notifications/cancelled");
            }
            return StatusCode::ACCEPTED.into_response();
        }
        if let Some(refusal) = protocol::check_request(&message) {
            // From 2026-07-28 an unknown method over HTTP is also a 404 (SEP-2575).
            let stateless = version == Some("2026-07-28")
                || message
                    .get("params")
                    .and_then(|params| params.get("_meta"))
                    .and_then(|meta| meta.get("io.modelcontextprotocol/protocolVersion"))
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(|version| version >= "2026-07-28");
            let status = if stateless && refusal.code == protocol::METHOD_NOT_FOUND {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::OK
            };
            return json_response(status, &refusal.response(message.get("id")));
        }
        if let Some(answer) = self.try_fast(&parts.headers, message).await {
            return answer;
        }
        next.run(Request::from_parts(parts, Body::from(bytes)))
            .await
    }

    async fn try_fast(
        &self,
        headers: &http::HeaderMap,
        message: serde_json::Map<String, serde_json::Value>,
    ) -> Option<Response> {
        let server = self.registry.shared_server(self.http_ctx.clone());
        let body = paddock_tools::direct::answer(&server, headers, message).await?;
        let mut response = (StatusCode::OK, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        Some(response)
    }

    /// Serves MCP on a control-socket connection until either side closes it. When the last
    /// connection of the session closes, its device goes back to the pool — at once, or, for a
    /// `reconnectable` session (the client chose its id), after the grace period unless a
    /// connection with the same id opened meanwhile.
    pub async fn serve_socket(
        self: Arc<Self>,
        session: SessionKey,
        reconnectable: bool,
        reader: BufReader<OwnedReadHalf>,
        writer: OwnedWriteHalf,
    ) {
        {
            let mut sessions = lock_sessions(&self.socket_sessions);
            let entry = sessions.entry(session.clone()).or_default();
            entry.live += 1;
            entry.generation += 1;
        }
        self.registry.record_session(&session);
        let ctx = self.owner_ctx(Some(session.clone()));
        self.serve_connection(ctx, reader, writer, std::future::pending())
            .await;
        let generation = {
            let mut sessions = lock_sessions(&self.socket_sessions);
            let Some(entry) = sessions.get_mut(&session) else {
                return;
            };
            entry.live = entry.live.saturating_sub(1);
            if entry.live > 0 {
                // Another connection still holds the session.
                return;
            }
            entry.generation
        };
        let grace = if reconnectable {
            self.session_grace
        } else {
            Duration::ZERO
        };
        if grace.is_zero() {
            lock_sessions(&self.socket_sessions).remove(&session);
            self.release_closed(&session, "released when its connection closed")
                .await;
            return;
        }
        debug!(%session, grace_secs = grace.as_secs(), "socket session closed; keeping its device for a reconnect");
        let host = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            {
                let mut sessions = lock_sessions(&host.socket_sessions);
                match sessions.get(&session) {
                    Some(entry) if entry.live == 0 && entry.generation == generation => {
                        sessions.remove(&session);
                    }
                    // A connection came back (or is back and gone again, with its own timer).
                    _ => return,
                }
            }
            let reason = format!(
                "released {} s after its connection closed, with no reconnect",
                grace.as_secs()
            );
            host.release_closed(&session, &reason).await;
        });
    }

    async fn release_closed(&self, session: &SessionKey, reason: &str) {
        if let Some(device) = self.backend.release(session.as_str(), reason).await {
            debug!(%device, %session, "released the device of a closed socket session");
        }
    }
}

fn lock_sessions(
    sessions: &Mutex<HashMap<SessionKey, SocketSession>>,
) -> std::sync::MutexGuard<'_, HashMap<SessionKey, SocketSession>> {
    sessions.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn owner_ctx(
    owner: &AuthContext,
    policy: &Arc<Policy>,
    backend: &Arc<dyn Backend>,
    session: Option<SessionKey>,
) -> ToolCtx {
    ToolCtx {
        auth: owner.clone(),
        policy: policy.clone(),
        profile: format!("owner:{}", owner.subject()),
        session,
        backend: backend.clone(),
        tasks: None,
        recorder: None,
        fleet: None,
    }
}

fn json_rpc_error(status: StatusCode, code: i32, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    json_response(status, &body)
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
