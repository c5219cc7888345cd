//! An HTTP helper for the daemon's loopback endpoints that follows the client rules: attach the
//! token only to daemon endpoints, re-read the token file once after a 401 (the daemon may have
//! restarted with a new token), and retry a 503 that carries `Retry-After` until the caller's
//! deadline.

use std::time::Duration;

use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::time::Instant;

use crate::endpoint::classify_endpoint;
use crate::env::ClientEnv;
use crate::token::{TokenFileError, read_daemon_http_token};
use paddock_secrets::SecretString;

/// The longest `Retry-After` we honour in one step; a larger value is capped so that a client
/// re-checks well before its deadline.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);
/// The pause between attempts when the daemon's port refuses connections (it is restarting).
const CONNECT_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// A response from the daemon, read whole.
#[derive(Debug, Clone)]
pub struct DaemonResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Errors of [`DaemonHttpClient::send`]. None carries the token or the Authorization header.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Token(#[from] TokenFileError),
    #[error("the daemon token contains characters that cannot be sent in an HTTP header")]
    TokenNotHeaderSafe,
    #[error("`{url}` is not a valid request URL")]
    InvalidUrl { url: String },
    #[error("request to `{url}` failed")]
    Transport {
        url: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("the daemon at `{url}` did not answer before the deadline")]
    DeadlineExceeded { url: String },
}

/// A small HTTP/1.1 client for daemon endpoints. It keeps the token it read last and reads the
/// file again only after a 401, as a long-lived client should.
#[derive(Debug)]
pub struct DaemonHttpClient {
    env: ClientEnv,
    client: Client<HttpConnector, Full<Bytes>>,
    token: std::sync::Mutex<Option<SecretString>>,
}

impl DaemonHttpClient {
    /// A client that discovers the token as a process launched with `env` would.
    pub fn new(env: ClientEnv) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Self {
            env,
            client,
            token: std::sync::Mutex::new(None),
        }
    }

    /// The `Authorization` value for `url`: `None` for a URL that is not a daemon endpoint
    /// (the PID record is re-read for every request), else the cached or freshly read token.
    fn authorization(&self, url: &str, reread: bool) -> Result<Option<String>, TokenFileError> {
        if classify_endpoint(url, &self.env).is_err() {
            return Ok(None);
        }
        let mut cached = self
            .token
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if reread || cached.is_none() {
            *cached = Some(read_daemon_http_token(&self.env)?);
        }
        Ok(cached
            .as_ref()
            .map(|token| format!("Bearer {}", token.expose_secret())))
    }

    /// Sends `method url` with `body` (JSON when non-empty), following the retry rules until
    /// `deadline`. Returns the final response, including a final 401 or 503.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        body: Bytes,
        deadline: Instant,
    ) -> Result<DaemonResponse, RequestError> {
        let mut reread_after_unauthorized = false;
        let mut reread_now = false;
        loop {
            let mut builder = Request::builder().method(method.clone()).uri(url);
            if let Some(authorization) = self.authorization(url, reread_now)? {
                let mut value = HeaderValue::from_str(&authorization)
                    .map_err(|_| RequestError::TokenNotHeaderSafe)?;
                value.set_sensitive(true);
                builder = builder.header(http::header::AUTHORIZATION, value);
            }
            reread_now = false;
            if !body.is_empty() {
                builder = builder
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream");
            }
            let request =
                builder
                    .body(Full::new(body.clone()))
                    .map_err(|_| RequestError::InvalidUrl {
                        url: url.to_owned(),
                    })?;
            let response =
                match tokio::time::timeout_at(deadline, self.client.request(request)).await {
                    Err(_) => {
                        return Err(RequestError::DeadlineExceeded {
                            url: url.to_owned(),
                        });
                    }
                    Ok(Err(error)) if error.is_connect() => {
                        if Instant::now() + CONNECT_RETRY_PAUSE >= deadline {
                            return Err(RequestError::Transport {
                                url: url.to_owned(),
                                source: Box::new(error),
                            });
                        }
                        tokio::time::sleep(CONNECT_RETRY_PAUSE).await;
                        continue;
                    }
                    Ok(Err(error)) => {
                        return Err(RequestError::Transport {
                            url: url.to_owned(),
                            source: Box::new(error),
                        });
                    }
                    Ok(Ok(response)) => response,
                };
            let (parts, incoming) = response.into_parts();
            let body_bytes = tokio::time::timeout_at(deadline, incoming.collect())
                .await
                .map_err(|_| RequestError::DeadlineExceeded {
                    url: url.to_owned(),
                })?
                .map_err(|error| RequestError::Transport {
                    url: url.to_owned(),
                    source: Box::new(error),
                })?
                .to_bytes();
            let response = DaemonResponse {
                status: parts.status,
                headers: parts.headers,
                body: body_bytes,
            };
            // A 401 may mean the daemon restarted with a new token: read the file once more.
            if response.status == StatusCode::UNAUTHORIZED && !reread_after_unauthorized {
                reread_after_unauthorized = true;
                reread_now = true;
                continue;
            }
            if response.status == StatusCode::SERVICE_UNAVAILABLE
                && let Some(wait) = retry_after(&response.headers)
            {
                let wake = Instant::now() + wait.min(MAX_RETRY_AFTER);
                if wake < deadline {
                    tokio::time::sleep_until(wake).await;
                    continue;
                }
            }
            return Ok(response);
        }
    }
}

/// `Retry-After` in delta-seconds form; an HTTP-date is not produced by the daemon.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(http::header::RETRY_AFTER)?.to_str().ok()?;
    text.trim().parse::<u64>().ok().map(Duration::from_secs)
}
