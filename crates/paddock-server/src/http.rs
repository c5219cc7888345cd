//! The server's HTTP surface: `/health`, the RFC 9728 metadata document, `/mcp` (stateless
//! Streamable HTTP, JSON answers; `GET`/`DELETE` are 405) behind the edge, and the daemons'
//! control-plane routes.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderValue, StatusCode, header};
use paddock_tools::audit::StderrAuditSink;
use paddock_tools::backend::NoDevices;
use paddock_tools::discovery::{ProcessOptions, StartupSelection};
use paddock_tools::{AuthContext, Policy, Registry, RegistryConfig, ToolCtx};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tracing::info;

use crate::config::ServerConfig;
use crate::store::ServerStore;

/// Guidance for models, sent with `initialize`.
pub const INSTRUCTIONS: &str = "Paddock's fleet server reaches the devices of every machine \
that joined it. `list_devices` lists them with their machine and state; act on one by its \
`device_id` (`device_action`, `get_device_ui_state`, `get_device_screenshot`), or hand a goal \
to an agent that works a device with `run_task` and follow it with `get_task`.";

/// Everything a request handler shares.
pub struct ServerState {
    pub config: ServerConfig,
    pub store: Arc<dyn ServerStore>,
    pub registry: Arc<Registry>,
    /// The deployment's policy (`PADDOCK_SERVER_POLICY_PROFILE`), before any per-key narrowing.
    pub policy: Arc<Policy>,
    /// This process's id among the replicas sharing the database.
    pub replica_id: String,
    /// The joined daemons.
    pub hub: Arc<crate::hub::Hub>,
}

impl std::fmt::Debug for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerState")
            .field("listen", &self.config.listen)
            .field("policy", &self.policy.name())
            .field("replica_id", &self.replica_id)
            .finish_non_exhaustive()
    }
}

impl ServerState {
    /// Opens the store and builds the tool registry.
    pub async fn open(config: ServerConfig) -> anyhow::Result<Arc<Self>> {
        use anyhow::Context as _;
        paddock_secrets::private::ensure_private_dir(&config.state_dir).with_context(|| {
            format!(
                "could not prepare the server's state directory `{}`",
                config.state_dir.display()
            )
        })?;
        let store = crate::store::open(&config.database).await?;
        let catalog = paddock_tools::catalog::fleet();
        let policy = Arc::new(Policy::for_profile(config.policy_profile, &catalog));
        // Discovery choices are a daemon feature; the registry still wants a store for them.
        let tools_store = Arc::new(
            paddock_store::Store::open(&config.state_dir.join("tools.sqlite"))
                .context("could not open the tool store")?,
        );
        let registry = Registry::new(RegistryConfig {
            catalog,
            startup: StartupSelection::default(),
            process_options: ProcessOptions { debug: false },
            store: tools_store,
            audit: Arc::new(StderrAuditSink::new()),
            info: Arc::new(|| serde_json::json!({})),
        });
        registry.set_instructions(INSTRUCTIONS);
        let replica_id = crate::credential::record_id("r_")
            .map_err(|error| anyhow::anyhow!("OS random source: {error}"))?;
        let hub = crate::hub::Hub::new(store.clone(), replica_id.clone());
        {
            let hub = hub.clone();
            tokio::spawn(async move {
                if let Err(error) = hub.serve_relay().await {
                    tracing::error!(%error, "the replica relay stopped: commands for machines on other replicas fail");
                }
            });
        }
        Ok(Arc::new(Self {
            config,
            store,
            registry,
            policy,
            replica_id,
            hub,
        }))
    }

    /// The context of an authenticated caller: who they are and the policy their credential
    /// leaves them (the deployment's, narrowed by the key's profile).
    pub fn caller_ctx(&self, auth: AuthContext, policy: Arc<Policy>) -> Arc<ToolCtx> {
        Arc::new(ToolCtx {
            profile: format!("{}:{}", auth.kind().as_str(), auth.subject()),
            auth,
            policy,
            session: None,
            backend: Arc::new(NoDevices),
            tasks: None,
            recorder: None,
            fleet: Some(self.hub.clone()),
        })
    }

    /// The context of a request that passed no edge: it may call nothing. The edge puts the
    /// caller's own context into each request it lets through.
    fn closed_ctx(&self) -> Arc<ToolCtx> {
        Arc::new(ToolCtx {
            auth: AuthContext::local_owner("unauthenticated"),
            policy: Arc::new(Policy::empty()),
            profile: "unauthenticated".to_owned(),
            session: None,
            backend: Arc::new(NoDevices),
            tasks: None,
            recorder: None,
            fleet: None,
        })
    }
}

/// The whole router.
pub fn router(state: &Arc<ServerState>) -> Router {
    let metadata = {
        let body = serde_json::json!({
            "resource": state.config.resource_url,
            "bearer_methods_supported": ["header"],
            "resource_name": "Paddock fleet server",
        })
        .to_string();
        move || async move { json(StatusCode::OK, body.clone()) }
    };
    Router::new()
        .route(
            "/health",
            get(|| async { json(StatusCode::OK, r#"{"status":"ok"}"#.to_owned()) }),
        )
        .route("/.well-known/oauth-protected-resource", get(metadata))
        .merge(mcp_router(state))
        .merge(control_router(state))
}

/// The daemons' routes: activation of a pairing token, and the control WebSocket.
fn control_router(state: &Arc<ServerState>) -> Router {
    Router::new()
        .route(
            paddock_client::fleet::ACTIVATE_PATH,
            post(crate::hub::Hub::activate_route),
        )
        .route(
            paddock_client::fleet::CONTROL_PATH,
            get(crate::hub::Hub::control_route),
        )
        .route(
            paddock_client::fleet::RUNNER_KEYS_PATH,
            post(crate::inbox::runner_keys_route),
        )
        .layer(axum::extract::DefaultBodyLimit::max(16 * 1024))
        .merge(
            Router::new()
                .route(
                    &format!("{}/{{operation}}", paddock_client::fleet::AGENT_PATH),
                    post(crate::inbox::agent_route),
                )
                // A message and its JSON escaping.
                .layer(axum::extract::DefaultBodyLimit::max(
                    2 * crate::inbox::MAX_MESSAGE_BYTES + 4096,
                )),
        )
        .with_state(state.hub.clone())
}

/// What the edge of `/mcp` shares: the limits, the per-profile policies and the state.
#[derive(Debug)]
struct Edge {
    state: Arc<ServerState>,
    limits: Arc<crate::limits::RateLimits>,
    policies: crate::auth::ProfilePolicies,
    metadata_url: String,
    /// The live keys looked up lately, forgotten whenever a key is revoked anywhere.
    keys: Arc<crate::auth::KeyCache>,
}

/// `/mcp`: rmcp's stateless Streamable HTTP service with JSON answers; `GET` and `DELETE` are
/// 405 (a fresh server per request has no stream or session for them to act on), and so is
/// any other method.
///
/// Every method passes the baseline limits first ([`edge_limits`]: deadline, per-IP bucket,
/// declared body size); a `POST` then passes the auth table, the per-key bucket and the body
/// limit as it is read ([`mcp_post`]), and reaches rmcp with the caller's context in its
/// extensions.
fn mcp_router(state: &Arc<ServerState>) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .with_max_request_body_bytes(usize::MAX);
    let registry = state.registry.clone();
    let closed = state.closed_ctx();
    let service = StreamableHttpService::new(
        move || Ok(registry.shared_server(closed.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let limits = crate::limits::RateLimits::new(&state.config);
    limits.spawn_sweeper();
    let edge = Arc::new(Edge {
        state: state.clone(),
        limits,
        policies: crate::auth::ProfilePolicies::new(&state.policy, state.registry.catalog()),
        metadata_url: state.config.metadata_url(),
        keys: {
            let keys = Arc::new(crate::auth::KeyCache::default());
            keys.spawn_epoch_watch(state.store.clone());
            keys
        },
    });
    let not_allowed = || async {
        let mut response = json(
            StatusCode::METHOD_NOT_ALLOWED,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Method not allowed: this server is stateless; POST JSON-RPC requests to /mcp"}}"#.to_owned(),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        response
    };
    let post_edge = edge.clone();
    let (message_edge, read_edge, stop_edge) = (edge.clone(), edge.clone(), edge.clone());
    Router::new()
        .route(
            paddock_client::fleet::MESSAGES_PATH,
            post(move |request: axum::extract::Request| {
                let edge = message_edge.clone();
                async move {
                    match owner_request(&edge, request, true).await {
                        Ok((caller, body)) => {
                            crate::inbox::post_message(&edge.state.hub, &caller.key_name, &body)
                                .await
                        }
                        Err(refused) => refused,
                    }
                }
            })
            .get(move |request: axum::extract::Request| {
                let edge = read_edge.clone();
                async move {
                    let query =
                        axum::extract::Query::<crate::inbox::ConversationQuery>::try_from_uri(
                            request.uri(),
                        );
                    match (owner_request(&edge, request, false).await, query) {
                        (Err(refused), _) => refused,
                        (Ok(_), Err(error)) => crate::hub::refusal(
                            StatusCode::BAD_REQUEST,
                            &format!("expected `?bot=NAME[&machine=ID][&after=SEQ]`: {error}"),
                        ),
                        (Ok(_), Ok(query)) => {
                            crate::inbox::conversation(&edge.state.hub, query.0).await
                        }
                    }
                }
            }),
        )
        .route(
            paddock_client::fleet::AGENT_STOP_PATH,
            post(move |request: axum::extract::Request| {
                let edge = stop_edge.clone();
                async move {
                    match owner_request(&edge, request, true).await {
                        Ok((_, body)) => crate::inbox::stop_agent(&edge.state.hub, &body).await,
                        Err(refused) => refused,
                    }
                }
            }),
        )
        .route(
            "/mcp",
            post(move |request: axum::extract::Request| {
                let service = service.clone();
                let edge = post_edge.clone();
                async move { mcp_post(&edge, service, request).await }
            })
            .get(not_allowed)
            .delete(not_allowed)
            .fallback(not_allowed),
        )
        .route_layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let edge = edge.clone();
                async move { edge_limits(&edge, request, next).await }
            },
        ))
}

/// The limits every `/mcp` request passes: the deadline around everything after it (reading
/// the body included), the per-IP bucket, and a declared `Content-Length` over the limit.
async fn edge_limits(
    edge: &Edge,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    if let Err(refusal) = limit_checks(edge, request.headers(), peer) {
        return refusal.into_response();
    }
    match tokio::time::timeout(edge.state.config.request_timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => crate::limits::timed_out().into_response(),
    }
}

fn limit_checks(
    edge: &Edge,
    headers: &http::HeaderMap,
    peer: Option<SocketAddr>,
) -> Result<(), crate::auth::Refusal> {
    if let Some(ip) = edge.limits.client_ip(headers, peer) {
        edge.limits.check_ip(ip)?;
    }
    crate::limits::check_declared_length(headers, edge.state.config.body_limit_bytes)
}

/// A `POST /mcp` past the limits: the auth table, the per-key bucket, the body (counted as it
/// arrives), then rmcp with the caller's [`RequestCtx`](paddock_tools::server::RequestCtx).
async fn mcp_post(
    edge: &Edge,
    service: StreamableHttpService<paddock_tools::server::McpServer, NeverSessionManager>,
    request: axum::extract::Request,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let (caller, bytes) = match caller_and_body(edge, &parts.headers, body).await {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    // The credential has done its work; nothing after the edge sees it.
    parts.headers.remove(header::AUTHORIZATION);
    parts.headers.remove(crate::auth::API_KEY_HEADER);
    let policy = edge.policies.get(caller.profile);
    let ctx = edge.state.caller_ctx(caller.auth, policy);
    // `tools/call` and `tools/list` are answered directly; the rest goes through rmcp.
    if let Ok(serde_json::Value::Object(message)) = serde_json::from_slice(&bytes) {
        let server = edge.state.registry.shared_server(ctx.clone());
        if let Some(answer) = paddock_tools::direct::answer(&server, &parts.headers, message).await
        {
            return json(
                StatusCode::OK,
                String::from_utf8_lossy(&answer).into_owned(),
            );
        }
    }
    parts
        .extensions
        .insert(paddock_tools::server::RequestCtx(ctx));
    let request = http::Request::from_parts(parts, axum::body::Body::from(bytes));
    service.handle(request).await.into_response()
}

/// The auth table, the per-key bucket, then the body (counted as it arrives): what every
/// API-key route runs before its own work.
async fn caller_and_body(
    edge: &Edge,
    headers: &http::HeaderMap,
    body: axum::body::Body,
) -> Result<(crate::auth::Caller, axum::body::Bytes), crate::auth::Refusal> {
    let crate::auth::Presented::ApiKey(key) = crate::auth::presented(headers, &edge.metadata_url)?;
    let caller =
        crate::auth::authenticate(&edge.state.store, &edge.keys, key, &edge.metadata_url).await?;
    edge.limits.check_key(&caller.key_hash)?;
    let bytes = crate::limits::read_body(body, edge.state.config.body_limit_bytes).await?;
    Ok((caller, bytes))
}

/// An owner's request to the message routes: authenticated like `/mcp`; one that changes
/// something (`writes`) needs a key whose profile is not `readonly`.
async fn owner_request(
    edge: &Edge,
    request: axum::extract::Request,
    writes: bool,
) -> Result<(crate::auth::Caller, axum::body::Bytes), Response> {
    let (parts, body) = request.into_parts();
    let (caller, bytes) = caller_and_body(edge, &parts.headers, body)
        .await
        .map_err(crate::auth::Refusal::into_response)?;
    if writes && caller.profile == paddock_tools::PolicyProfile::Readonly {
        return Err(crate::hub::refusal(
            StatusCode::FORBIDDEN,
            "a `readonly` API key cannot message or stop bots",
        ));
    }
    Ok((caller, bytes))
}

fn json(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Serves until `shutdown` resolves.
pub async fn serve(
    state: Arc<ServerState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let listener = tokio::net::TcpListener::bind(state.config.listen)
        .await
        .with_context(|| format!("could not listen on {}", state.config.listen))?;
    let address = listener.local_addr()?;
    info!(%address, policy = %state.policy.name(), database = %state.config.database.display(), store = state.store.kind(), "paddock server listening");
    let app = router(&state).into_make_service_with_connect_info::<SocketAddr>();
    match &state.config.tls {
        Some((cert, key)) => {
            let config = crate::tls::server_config(cert, key).map_err(anyhow::Error::msg)?;
            let listener = crate::tls::TlsListener::new(listener, config)?;
            // The listening line on stderr, for scripts and tests that asked for port 0.
            eprintln!("paddock server listening on https://{address}");
            use axum::serve::ListenerExt as _;
            axum::serve(listener.tap_io(|_| {}), app)
                .with_graceful_shutdown(shutdown)
                .await
                .context("the server stopped")?;
        }
        None => {
            eprintln!("paddock server listening on http://{address}");
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
                .context("the server stopped")?;
        }
    }
    state.registry.flush_audit();
    Ok(())
}
