//! Paddock's loopback HTTP ingress. Every request passes, in this order: the Host and Origin
//! checks (DNS-rebinding defence), the startup gate (held while the daemon starts), bearer
//! authentication (constant time), and credential stripping; only then does a route run.

pub mod rules;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use http_body_util::Limited;
use paddock_client::control::DaemonState;
use paddock_secrets::SecretString;
use tokio::net::TcpListener;

pub use paddock_http::ConnectionLimits;
use paddock_http::conn;
use tokio::sync::watch;
use tracing::{debug, trace};

pub use rules::{AuthorizationCheck, check_authorization, check_host, check_origin};

/// How the ingress listens and holds requests.
#[derive(Debug, Clone)]
pub struct IngressConfig {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// How long a request that arrives during startup is held before it gets a 503.
    pub startup_hold: Duration,
    /// Largest request body accepted; larger bodies get 413.
    pub body_limit: usize,
    /// Connection cap, header-read and idle timeouts.
    pub limits: ConnectionLimits,
}

impl Default for IngressConfig {
    fn default() -> Self {
        Self {
            port: 0,
            startup_hold: Duration::from_secs(30),
            body_limit: 4 * 1024 * 1024,
            limits: ConnectionLimits::default(),
        }
    }
}

/// Why the ingress could not start.
#[derive(Debug, thiserror::Error)]
pub enum IngressError {
    #[error("the HTTP ingress has no bearer token configured; refusing to start")]
    MissingToken,
    #[error("could not bind the loopback HTTP listener on `127.0.0.1:{port}`")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
}

impl IngressError {
    pub fn is_bind(&self) -> bool {
        matches!(self, Self::Bind { .. })
    }
}

/// A bound, not yet serving, ingress: its port is known before the token is published.
#[derive(Debug)]
pub struct BoundIngress {
    listener: TcpListener,
    guard: Arc<Guard>,
    limits: ConnectionLimits,
}

#[derive(Debug)]
struct Guard {
    token: SecretString,
    port: u16,
    startup_hold: Duration,
    body_limit: usize,
    state: watch::Receiver<DaemonState>,
}

impl BoundIngress {
    /// Binds 127.0.0.1 on the configured port. Refuses to start without a token.
    pub async fn bind(
        config: &IngressConfig,
        token: SecretString,
        state: watch::Receiver<DaemonState>,
    ) -> Result<Self, IngressError> {
        if token.expose_secret().is_empty() {
            return Err(IngressError::MissingToken);
        }
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, config.port));
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| IngressError::Bind {
                port: config.port,
                source,
            })?;
        let port = listener
            .local_addr()
            .map_err(|source| IngressError::Bind {
                port: config.port,
                source,
            })?
            .port();
        Ok(Self {
            listener,
            limits: config.limits.clone(),
            guard: Arc::new(Guard {
                token,
                port,
                startup_hold: config.startup_hold,
                body_limit: config.body_limit,
                state,
            }),
        })
    }

    pub fn port(&self) -> u16 {
        self.guard.port
    }

    /// Serves `/heartbeat`, `routes` (for example `/mcp`) and a 404 fallback, all behind the
    /// guard, until `shutdown` resolves.
    pub async fn serve(
        self,
        routes: Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let app = Router::new()
            .route("/heartbeat", get(heartbeat))
            .merge(routes)
            .fallback(not_found)
            .layer(middleware::from_fn_with_state(self.guard.clone(), guard));
        conn::serve_connections(
            self.listener,
            "HTTP ingress".to_owned(),
            self.limits,
            RouterHandler(app),
            shutdown,
        )
        .await;
        Ok(())
    }
}

/// Serves requests with an axum router.
#[derive(Clone)]
struct RouterHandler(Router);

impl conn::Handler for RouterHandler {
    fn call(
        &self,
        request: Request<hyper::body::Incoming>,
    ) -> std::pin::Pin<Box<dyn Future<Output = Response<conn::BoxBody>> + Send + 'static>> {
        use http_body_util::BodyExt as _;
        use tower_service::Service as _;

        let mut router = self.0.clone();
        Box::pin(async move {
            let response = match router.call(request.map(Body::new)).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            response.map(|body| body.map_err(conn::BoxError::from).boxed_unsync())
        })
    }
}

async fn heartbeat() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        r#"{"status":"ok"}"#,
    )
        .into_response()
}

async fn not_found() -> Response {
    json_error(StatusCode::NOT_FOUND, "Not found")
}

async fn guard(State(guard): State<Arc<Guard>>, mut request: Request, next: Next) -> Response {
    // Only the method and path are logged: header values may carry credentials.
    trace!(method = %request.method(), path = %request.uri().path(), "ingress request");
    let headers = request.headers();
    if !check_host(headers.get_all(header::HOST).iter(), guard.port) {
        debug!(path = %request.uri().path(), "refused: Host not allowed");
        return json_error(StatusCode::FORBIDDEN, "Host not allowed");
    }
    if !check_origin(headers.get_all(header::ORIGIN).iter()) {
        debug!(path = %request.uri().path(), "refused: Origin not allowed");
        return json_error(StatusCode::FORBIDDEN, "Origin not allowed");
    }
    if let Some(response) = wait_for_startup(&guard).await {
        return response;
    }
    match check_authorization(
        request.headers().get_all(header::AUTHORIZATION).iter(),
        &guard.token,
    ) {
        AuthorizationCheck::Valid => {}
        outcome @ (AuthorizationCheck::Missing | AuthorizationCheck::Invalid) => {
            debug!(path = %request.uri().path(), ?outcome, "refused: bearer token");
            return unauthorized();
        }
    }
    // Nothing downstream (MCP dispatch, logs, diagnostics) ever sees the credential.
    request.headers_mut().remove(header::AUTHORIZATION);
    if let Some(length) = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok())
        && length > guard.body_limit as u64
    {
        return json_error(StatusCode::PAYLOAD_TOO_LARGE, "Payload too large");
    }
    let limit = guard.body_limit;
    let request = request.map(|body| Body::new(Limited::new(body, limit)));
    next.run(request).await
}

/// Holds the request while the daemon starts; returns the answer when it must not proceed.
async fn wait_for_startup(guard: &Guard) -> Option<Response> {
    // The common case, a ready daemon, needs no timer and no watch subscription.
    if *guard.state.borrow() == DaemonState::Ready {
        return None;
    }
    let mut state = guard.state.clone();
    let settled = tokio::time::timeout(
        guard.startup_hold,
        state.wait_for(|state| *state != DaemonState::Starting),
    )
    .await;
    let current = match settled {
        Err(_) => {
            return Some(unavailable("Daemon is still starting", true));
        }
        // The sender is gone: the daemon is tearing down.
        Ok(Err(_)) => DaemonState::ShuttingDown,
        Ok(Ok(state)) => *state,
    };
    match current {
        DaemonState::Ready => None,
        DaemonState::Starting => Some(unavailable("Daemon is still starting", true)),
        DaemonState::Failed => Some(unavailable("Daemon startup failed", false)),
        DaemonState::ShuttingDown => Some(unavailable("Daemon is shutting down", true)),
    }
}

fn unauthorized() -> Response {
    let mut response = json_error(StatusCode::UNAUTHORIZED, "Unauthorized");
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

fn unavailable(message: &'static str, transient: bool) -> Response {
    let mut response = json_error(StatusCode::SERVICE_UNAVAILABLE, message);
    if transient {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// `{"error": message}` with `status`.
pub fn json_error(status: StatusCode, message: &str) -> Response {
    json_body(status, serde_json::json!({ "error": message }))
}

fn json_body(status: StatusCode, value: serde_json::Value) -> Response {
    let mut response = (status, value.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
