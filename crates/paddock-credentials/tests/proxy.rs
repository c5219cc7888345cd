//! The proxy against a throwaway real upstream on 127.0.0.1: the swap, rejection, scoping,
//! revocation (also of open streams), streaming without buffering, disconnects, upstream
//! failures and hostile input.
#![cfg(test)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use http_body_util::BodyExt as _;
use hyper::body::Bytes;
use paddock_credentials::{CredentialBrokerConfig, ProxyTimeouts};

fn header<'a>(seen: &'a Seen, name: &str) -> Vec<&'a str> {
    seen.headers
        .get_all(name)
        .iter()
        .map(|value| value.to_str().unwrap())
        .collect()
}

/// A proxy spoken to over raw sockets, so tests control every byte of the request: a broker
/// whose Bearer upstream `api` is a fresh recording upstream (under `base`), and a voucher
/// with `grants` on it.
struct Proxied {
    upstream: Upstream,
    /// Keeps the proxy listening.
    _broker: paddock_credentials::CredentialBroker,
    voucher: paddock_credentials::Voucher,
    /// The proxy's `127.0.0.1:<port>`.
    address: String,
    /// Holds the voucher file.
    _dir: tempfile::TempDir,
}

impl Proxied {
    async fn start(base: &str, grants: &[&str]) -> Self {
        let upstream = Upstream::start().await;
        let broker = broker_for(vec![upstream_config(
            "api",
            &format!("{}{base}", upstream.url()),
            "authorization",
            Some("Bearer"),
        )])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let voucher = broker
            .mint_for_launch("launch-1", caps("api", grants), dir.path())
            .unwrap();
        let address = broker
            .proxy_url("api")
            .unwrap()
            .trim_start_matches("http://")
            .to_owned();
        Self {
            upstream,
            _broker: broker,
            voucher,
            address,
            _dir: dir,
        }
    }

    fn host_line(&self) -> String {
        format!("Host: {}\r\n", self.address)
    }

    fn auth_line(&self) -> String {
        format!("Authorization: Bearer {}\r\n", self.voucher.expose_secret())
    }

    /// `line`, then the Host and voucher, the `extra` header lines (each ending in CRLF),
    /// `Connection: close`, and `body` after the head.
    fn request(&self, line: &str, extra: &str, body: &str) -> Vec<u8> {
        format!(
            "{line}\r\n{}{}{extra}Connection: close\r\n\r\n{body}",
            self.host_line(),
            self.auth_line()
        )
        .into_bytes()
    }

    /// Sends [`Self::request`] on a fresh connection and returns the whole answer.
    async fn exchange(&self, line: &str, extra: &str, body: &str) -> String {
        raw_exchange(&self.address, &self.request(line, extra, body)).await
    }
}

#[tokio::test]
async fn the_upstream_sees_the_real_key_and_the_stamps_never_the_voucher() {
    let upstream = Upstream::start().await;
    let broker = broker_for(vec![upstream_config(
        "api",
        &format!("{}/base", upstream.url()),
        "authorization",
        Some("Bearer"),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch("launch-1", caps("api", &["POST /v1/messages"]), dir.path())
        .unwrap();
    let proxy = broker.proxy_url("api").unwrap();
    let bearer = format!("Bearer {}", voucher.expose_secret());
    let (status, headers, body) = send(
        &client(),
        "POST",
        &format!("{proxy}/v1/messages?beta=true"),
        &[
            ("authorization", &bearer),
            ("x-api-key", voucher.expose_secret()),
            ("x-agent-id", "someone-else"),
            ("x-client", "spoofed"),
            ("x-agent-active-capabilities", "* /"),
            ("connection", "x-hop"),
            ("x-hop", "1"),
            ("x-keep", "kept"),
            ("content-type", "application/json"),
        ],
        r#"{"model":"m"}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, r#"{"model":"m"}"#);
    assert_eq!(headers["x-upstream"], "yes");

    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    let seen = &seen[0];
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.target, "/base/v1/messages?beta=true");
    assert_eq!(header(seen, "authorization"), vec![format!("Bearer {KEY}")]);
    assert!(header(seen, "x-api-key").is_empty());
    assert_eq!(header(seen, "x-agent-id"), vec!["launch-1"]);
    assert_eq!(
        header(seen, "x-client"),
        vec![format!("paddock/{}", env!("CARGO_PKG_VERSION"))]
    );
    assert_eq!(
        header(seen, "x-agent-active-capabilities"),
        vec!["POST /v1/messages"]
    );
    assert!(header(seen, "x-hop").is_empty());
    assert_eq!(header(seen, "x-keep"), vec!["kept"]);
    assert_eq!(header(seen, "host"), vec![upstream.address.to_string()]);
    for (name, value) in &seen.headers {
        assert!(
            !value.as_bytes().windows(20).any(|w| voucher
                .expose_secret()
                .as_bytes()
                .windows(20)
                .any(|v| v == w)),
            "`{name}` carries the voucher"
        );
    }
}

#[tokio::test]
async fn an_x_api_key_upstream_gets_its_key_in_x_api_key() {
    let upstream = Upstream::start().await;
    let broker = broker_for(vec![upstream_config(
        "anthropic",
        &upstream.url(),
        "x-api-key",
        None,
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch(
            "claude-1",
            caps("anthropic", &["POST /v1/messages"]),
            dir.path(),
        )
        .unwrap();
    let proxy = broker.proxy_url("anthropic").unwrap();
    // Claude Code sends its ANTHROPIC_API_KEY as x-api-key.
    let (status, _, _) = send(
        &client(),
        "POST",
        &format!("{proxy}/v1/messages?beta=true"),
        &[("x-api-key", voucher.expose_secret())],
        "{}",
    )
    .await;
    assert_eq!(status, 200);
    let seen = &upstream.seen()[0];
    assert_eq!(header(seen, "x-api-key"), vec![KEY]);
    assert!(header(seen, "authorization").is_empty());
}

#[tokio::test]
async fn unknown_missing_and_conflicting_vouchers_are_rejected() {
    let upstream = Upstream::start().await;
    let broker = broker_for(vec![upstream_config(
        "api",
        &upstream.url(),
        "authorization",
        Some("Bearer"),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch("l", caps("api", &["* /"]), dir.path())
        .unwrap();
    let proxy = broker.proxy_url("api").unwrap();
    let client = client();
    let forged = format!("Bearer vch_{}", "A".repeat(43));
    let (status, headers, body) = send(
        &client,
        "GET",
        &format!("{proxy}/x"),
        &[("authorization", &forged)],
        "",
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(headers["content-type"], "application/json");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["error"]["type"], "invalid_local_agent_proxy_token");
    assert!(body.contains("invalid local agent proxy token"), "{body}");

    // The real key is not a voucher either.
    let (status, _, _) = send(
        &client,
        "GET",
        &format!("{proxy}/x"),
        &[("x-api-key", KEY)],
        "",
    )
    .await;
    assert_eq!(status, 401);
    let (status, _, body) = send(&client, "GET", &format!("{proxy}/x"), &[], "").await;
    assert_eq!(status, 401);
    assert!(body.contains("carries no voucher"), "{body}");

    let bearer = format!("Bearer {}", voucher.expose_secret());
    let (status, _, body) = send(
        &client,
        "GET",
        &format!("{proxy}/x"),
        &[("authorization", &bearer), ("x-api-key", "vch_other")],
        "",
    )
    .await;
    assert_eq!(status, 400);
    assert!(body.contains("conflicting_credentials"), "{body}");
    assert!(upstream.seen().is_empty());
}

#[tokio::test]
async fn capabilities_scope_method_path_and_upstream() {
    let a = Upstream::start().await;
    let b = Upstream::start().await;
    let broker = broker_for(vec![
        upstream_config("a", &a.url(), "authorization", Some("Bearer")),
        upstream_config("b", &b.url(), "authorization", Some("Bearer")),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch(
            "l",
            caps("a", &["POST /v1/messages", "GET /v1/models/"]),
            dir.path(),
        )
        .unwrap();
    let bearer = format!("Bearer {}", voucher.expose_secret());
    let auth = [("authorization", bearer.as_str())];
    let client = client();
    let on_a = broker.proxy_url("a").unwrap();
    let on_b = broker.proxy_url("b").unwrap();
    let cases = [
        ("POST", format!("{on_a}/v1/messages"), 200),
        ("POST", format!("{on_a}/v1/messages/batches"), 200),
        ("GET", format!("{on_a}/v1/models/claude"), 200),
        ("GET", format!("{on_a}/v1/messages"), 403),
        ("POST", format!("{on_a}/v1/messagesX"), 403),
        ("POST", format!("{on_a}/v1/complete"), 403),
        ("GET", format!("{on_a}/v1/models"), 403),
        ("POST", format!("{on_b}/v1/messages"), 403),
    ];
    for (method, url, expected) in cases {
        let (status, _, body) = send(&client, method, &url, &auth, "").await;
        assert_eq!(status, expected, "{method} {url}: {body}");
        if expected == 403 {
            assert!(
                body.contains(&format!("voucher `{}`", voucher.id)),
                "{body}"
            );
            assert!(body.contains("capability_denied"), "{body}");
        }
    }
    assert_eq!(a.seen().len(), 3);
    assert!(b.seen().is_empty());
}

#[tokio::test]
async fn a_launch_is_told_when_the_proxy_first_forwards_for_it() {
    let upstream = Upstream::start().await;
    let broker = broker_for(vec![upstream_config(
        "api",
        &upstream.url(),
        "authorization",
        Some("Bearer"),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    assert!(broker.first_request("l").is_none(), "no voucher yet");
    let voucher = broker
        .mint_for_launch("l", caps("api", &["POST /v1/messages"]), dir.path())
        .unwrap();
    let first = broker.first_request("l").unwrap();
    tokio::pin!(first);
    let client = client();
    let proxy = broker.proxy_url("api").unwrap();
    let bearer = format!("Bearer {}", voucher.expose_secret());
    // Refused requests reach nothing, so they do not count.
    let (status, _, _) = send(
        &client,
        "GET",
        &format!("{proxy}/v1/models"),
        &[("authorization", &bearer)],
        "",
    )
    .await;
    assert_eq!(status, 403);
    let (status, _, _) = send(&client, "POST", &format!("{proxy}/v1/messages"), &[], "").await;
    assert_eq!(status, 401);
    let pending = tokio::time::timeout(Duration::ZERO, first.as_mut()).await;
    assert!(pending.is_err(), "fired before anything was forwarded");
    let (status, _, _) = send(
        &client,
        "POST",
        &format!("{proxy}/v1/messages"),
        &[("authorization", &bearer)],
        "{}",
    )
    .await;
    assert_eq!(status, 200);
    tokio::time::timeout(Duration::from_secs(30), first)
        .await
        .expect("a forwarded request fires it");
    // A later voucher of the same launch shares what the launch has done.
    broker
        .mint_for_launch("l", caps("api", &["POST /v1/messages"]), dir.path())
        .unwrap();
    broker.revoke(&voucher.id).unwrap();
    let again = broker.first_request("l").unwrap();
    tokio::time::timeout(Duration::ZERO, again)
        .await
        .expect("already fired for the launch");
}

#[tokio::test]
async fn revocation_takes_effect_on_the_next_request_on_the_same_connection() {
    let upstream = Upstream::start().await;
    let broker = broker_for(vec![upstream_config(
        "api",
        &upstream.url(),
        "authorization",
        Some("Bearer"),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch("l", caps("api", &["GET /"]), dir.path())
        .unwrap();
    let keep = broker
        .mint_for_launch("other", caps("api", &["GET /"]), dir.path())
        .unwrap();
    let url = format!("{}/ping", broker.proxy_url("api").unwrap());
    let bearer = format!("Bearer {}", voucher.expose_secret());
    // One pooled client: the second request reuses the keep-alive connection.
    let client = client();
    assert_eq!(
        send(&client, "GET", &url, &[("authorization", &bearer)], "")
            .await
            .0,
        200
    );
    broker.revoke(&voucher.id).unwrap();
    let (status, _, body) = send(&client, "GET", &url, &[("authorization", &bearer)], "").await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("invalid local agent proxy token"));
    // Other launches are untouched.
    let other = format!("Bearer {}", keep.expose_secret());
    assert_eq!(
        send(&client, "GET", &url, &[("authorization", &other)], "")
            .await
            .0,
        200
    );
    assert_eq!(upstream.seen().len(), 2);
}

/// A stream through the proxy: a broker whose Bearer upstream `api` is the test upstream, a
/// voucher allowed `GET /sse`, the upstream's sender for that stream and the client's body.
struct SseThroughProxy {
    broker: paddock_credentials::CredentialBroker,
    voucher: paddock_credentials::Voucher,
    events: tokio::sync::mpsc::Sender<Bytes>,
    body: hyper::body::Incoming,
    /// Holds the voucher file.
    _dir: tempfile::TempDir,
}

impl SseThroughProxy {
    async fn open(upstream: &Upstream) -> Self {
        let broker = broker_for(vec![upstream_config(
            "api",
            &upstream.url(),
            "authorization",
            Some("Bearer"),
        )])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let voucher = broker
            .mint_for_launch("l", caps("api", &["GET /sse"]), dir.path())
            .unwrap();
        let events = upstream.next_stream();
        let url = format!("{}/sse", broker.proxy_url("api").unwrap());
        let bearer = format!("Bearer {}", voucher.expose_secret());
        let response = tokio::time::timeout(
            DEADLINE,
            client().request(request("GET", &url, &[("authorization", &bearer)], "")),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self {
            broker,
            voucher,
            events,
            body: response.into_body(),
            _dir: dir,
        }
    }
}

#[tokio::test]
async fn sse_passes_through_chunk_by_chunk() {
    let upstream = Upstream::start().await;
    let mut sse = SseThroughProxy::open(&upstream).await;
    // Each event is sent only after the client has received the previous one, so a proxy
    // that buffered (the whole body, or more than one event) would never deliver the first and
    // the test would fail at its deadline. The timestamps record the order as well.
    let mut timeline = Vec::new();
    for index in 0..3 {
        let event = format!("event: delta\ndata: {{\"n\":{index}}}\n\n");
        timeline.push(("sent", index, Instant::now()));
        sse.events.send(Bytes::from(event.clone())).await.unwrap();
        let received = next_data(&mut sse.body).await.unwrap();
        timeline.push(("received", index, Instant::now()));
        assert_eq!(received, event.as_bytes());
    }
    drop(sse.events);
    assert!(next_data(&mut sse.body).await.is_none());
    for pair in timeline.windows(2) {
        assert!(pair[0].2 <= pair[1].2);
    }
    let order: Vec<(&str, i32)> = timeline.iter().map(|(what, n, _)| (*what, *n)).collect();
    assert_eq!(
        order,
        vec![
            ("sent", 0),
            ("received", 0),
            ("sent", 1),
            ("received", 1),
            ("sent", 2),
            ("received", 2)
        ]
    );
}

#[tokio::test]
async fn revocation_cuts_an_open_stream() {
    let upstream = Upstream::start().await;
    let mut sse = SseThroughProxy::open(&upstream).await;
    sse.events
        .send(Bytes::from_static(b"data: 1\n\n"))
        .await
        .unwrap();
    assert_eq!(next_data(&mut sse.body).await.unwrap(), "data: 1\n\n");

    sse.broker.revoke(&sse.voucher.id).unwrap();
    // The client sees the stream break (not a clean end), and the upstream sees its reader go.
    let frame = tokio::time::timeout(DEADLINE, sse.body.frame())
        .await
        .unwrap();
    assert!(matches!(frame, Some(Err(_))), "stream not cut: {frame:?}");
    tokio::time::timeout(DEADLINE, sse.events.closed())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_client_disconnect_closes_the_upstream_stream() {
    let upstream = Upstream::start().await;
    let mut sse = SseThroughProxy::open(&upstream).await;
    sse.events
        .send(Bytes::from_static(b"data: 1\n\n"))
        .await
        .unwrap();
    next_data(&mut sse.body).await.unwrap();
    drop(sse.body);
    tokio::time::timeout(DEADLINE, sse.events.closed())
        .await
        .expect("the upstream learns that the client went away");
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_502_with_a_clear_body() {
    // A port that was just free: nothing listens on it.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let broker = broker_for(vec![upstream_config(
        "api",
        &format!("http://{closed}"),
        "authorization",
        Some("Bearer"),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch("l", caps("api", &["* /"]), dir.path())
        .unwrap();
    let bearer = format!("Bearer {}", voucher.expose_secret());
    let (status, _, body) = send(
        &client(),
        "GET",
        &format!("{}/v1/models", broker.proxy_url("api").unwrap()),
        &[("authorization", &bearer)],
        "",
    )
    .await;
    assert_eq!(status, 502);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let message = json["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "upstream `api` at `http://{closed}` is unreachable: "
        )),
        "{message}"
    );
    assert!(message.to_lowercase().contains("refused"), "{message}");
    assert!(!body.contains(KEY) && !body.contains(voucher.expose_secret()));
}

#[tokio::test]
async fn a_silent_upstream_times_out_with_504() {
    let upstream = Upstream::start().await;
    let broker = paddock_credentials::CredentialBroker::start(CredentialBrokerConfig {
        upstreams: vec![upstream_config(
            "api",
            &upstream.url(),
            "authorization",
            Some("Bearer"),
        )],
        timeouts: ProxyTimeouts {
            response_head: Duration::from_millis(300),
            ..ProxyTimeouts::default()
        },
        ..CredentialBrokerConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch("l", caps("api", &["* /"]), dir.path())
        .unwrap();
    let bearer = format!("Bearer {}", voucher.expose_secret());
    let (status, _, body) = send(
        &client(),
        "GET",
        &format!("{}/hang", broker.proxy_url("api").unwrap()),
        &[("authorization", &bearer)],
        "",
    )
    .await;
    assert_eq!(status, 504, "{body}");
    assert!(body.contains("sent no response within"), "{body}");
}

#[tokio::test]
async fn large_request_bodies_stream_through() {
    let upstream = Upstream::start().await;
    let broker = broker_for(vec![upstream_config(
        "api",
        &upstream.url(),
        "authorization",
        Some("Bearer"),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch("l", caps("api", &["PUT /upload"]), dir.path())
        .unwrap();
    let bearer = format!("Bearer {}", voucher.expose_secret());
    let payload = "x".repeat(4 * 1024 * 1024);
    let (status, _, echoed) = send(
        &client(),
        "PUT",
        &format!("{}/upload", broker.proxy_url("api").unwrap()),
        &[("authorization", &bearer)],
        &payload,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(echoed.len(), payload.len());
}

#[tokio::test]
async fn hostile_requests_are_refused_before_they_reach_the_upstream() {
    let proxied = Proxied::start("", &["* /"]).await;
    let (host, auth) = (proxied.host_line(), proxied.auth_line());
    let request = |line: &str, extra: &str| proxied.request(line, extra, "");
    let huge = format!("X-Big: {}\r\n", "a".repeat(40 * 1024));
    let many: String = (0..150).map(|i| format!("X-H{i}: 1\r\n")).collect();
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("CONNECT", request("CONNECT evil.example:443 HTTP/1.1", ""), 405),
        ("absolute form", request("GET http://evil.example/v1/models HTTP/1.1", ""), 400),
        ("asterisk form", request("OPTIONS * HTTP/1.1", ""), 400),
        ("dot-dot", request("GET /v1/../admin HTTP/1.1", ""), 400),
        ("encoded dot-dot", request("GET /v1/%2e%2E/admin HTTP/1.1", ""), 400),
        ("double-encoded dot-dot", request("GET /v1/%252e%252e/admin HTTP/1.1", ""), 400),
        ("encoded slash", request("GET /v1/a%2f..%2fadmin HTTP/1.1", ""), 400),
        ("backslash", request("GET /v1/..\\admin HTTP/1.1", ""), 400),
        ("oversized header", request("GET /v1/models HTTP/1.1", &huge), 431),
        ("too many headers", request("GET /v1/models HTTP/1.1", &many), 431),
        ("folded header", request("GET /v1/models HTTP/1.1", "X-A: 1\r\n X-Injected: 2\r\n"), 400),
        ("NUL in a header", request("GET /v1/models HTTP/1.1", "X-A: a\0b\r\n"), 400),
        ("CR in a header", request("GET /v1/models HTTP/1.1", "X-A: a\rX-Injected: b\r\n"), 400),
        (
            "foreign Host",
            format!("GET /v1/models HTTP/1.1\r\nHost: evil.example\r\n{auth}Connection: close\r\n\r\n").into_bytes(),
            400,
        ),
        (
            "two Hosts",
            format!("GET /v1/models HTTP/1.1\r\n{host}Host: evil.example\r\n{auth}Connection: close\r\n\r\n").into_bytes(),
            400,
        ),
    ];
    for (name, raw, expected) in cases {
        let answer = raw_exchange(&proxied.address, &raw).await;
        assert_eq!(status_of(&answer), expected, "{name}: {answer}");
    }
    let seen = proxied.upstream.seen();
    assert!(seen.is_empty(), "{seen:?}");
    // The same connection setup with a clean request still works.
    let answer = proxied.exchange("GET /v1/models HTTP/1.1", "", "").await;
    assert_eq!(status_of(&answer), 200, "{answer}");
}

#[tokio::test]
async fn paths_an_upstream_could_read_differently_get_400_and_never_reach_it() {
    // The voucher allows `POST /v1/messages` and below; every path starts there.
    let proxied = Proxied::start("", &["POST /v1/messages"]).await;
    let cases = [
        ("/v1/messages/..;/admin", "`;`"),
        ("/v1/messages;x", "`;`"),
        ("/v1/messages;jsessionid=1", "`;`"),
        ("/v1/messages/%3b", "`;`"),
        ("/v1/messages/%c0%ae%c0%ae/admin", "overlong"),
        ("/v1/messages/%c0%ae", "overlong"),
        ("/v1/messages/%e0%80%ae", "overlong"),
        ("/v1/messages/%80", "continuation byte"),
        ("/v1/messages/%25c0%25ae", "overlong"),
        ("/v1/messages/%00", "`%00`"),
        ("/v1/messages/a%00b", "`%00`"),
        ("/v1/messages/a%2fb", "encoded `/`"),
        ("/v1/messages/..%2fadmin", "encoded `/`"),
        ("/v1/messages/a%5cb", "encoded `/` or `\\`"),
        ("/v1/messages/%2e%2e/admin", "`..` segment"),
        ("/v1/messages/%252e%252e/admin", "`..` segment"),
        (
            "/v1/messages/%ef%bc%8e%ef%bc%8e/admin",
            "Unicode normalisation",
        ),
        ("/v1/messages/%zz", "well-formed `%XX`"),
    ];
    for (path, hint) in cases {
        let answer = proxied
            .exchange(
                &format!("POST {path} HTTP/1.1"),
                "Content-Length: 2\r\n",
                "{}",
            )
            .await;
        assert_eq!(status_of(&answer), 400, "{path}: {answer}");
        let json: serde_json::Value = serde_json::from_str(body_of(&answer)).unwrap();
        assert_eq!(json["error"]["type"], "invalid_request_target", "{path}");
        let message = json["error"]["message"].as_str().unwrap();
        assert!(message.contains(hint), "{path}: {message}");
        assert!(!answer.contains(proxied.voucher.expose_secret()), "{path}");
    }
    let seen = proxied.upstream.seen();
    assert!(seen.is_empty(), "{seen:?}");
}

#[tokio::test]
async fn an_allowed_path_arrives_at_the_upstream_byte_for_byte_as_checked() {
    let proxied = Proxied::start("/base", &["POST /v1/messages"]).await;
    // Escapes in both cases, a literal percent sign, every character a path may hold raw, an
    // empty segment, and a query (not part of the check) that would be refused as a path.
    let target =
        "/v1/messages/a%20b/%e2%9c%93/%E2%9C%93/100%25//-._~!$&'()*+,=:@?beta=true&x=%2e%2e;y";
    let answer = proxied
        .exchange(
            &format!("POST {target} HTTP/1.1"),
            "Content-Length: 2\r\n",
            "{}",
        )
        .await;
    assert_eq!(status_of(&answer), 200, "{answer}");
    let seen = proxied.upstream.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].target, format!("/base{target}"));
    assert_eq!(seen[0].method, "POST");
}

/// Sends one request per `(header line, names)` case, each also carrying `X-Keep`, and
/// checks that the upstream got every request, `X-Keep` each time, and none of the names.
async fn assert_never_forwarded(proxied: &Proxied, cases: &[(&str, &[&str])]) {
    for (line, _) in cases {
        let answer = proxied
            .exchange(
                "POST /v1/messages HTTP/1.1",
                &format!("{line}\r\nX-Keep: kept\r\nContent-Length: 2\r\n"),
                "{}",
            )
            .await;
        assert_eq!(status_of(&answer), 200, "{line}: {answer}");
    }
    let seen = proxied.upstream.seen();
    assert_eq!(seen.len(), cases.len());
    for ((line, names), seen) in cases.iter().zip(&seen) {
        assert_eq!(
            (seen.method.as_str(), seen.target.as_str()),
            ("POST", "/v1/messages")
        );
        assert_eq!(header(seen, "x-keep"), vec!["kept"], "{line}");
        for name in *names {
            assert!(
                header(seen, name).is_empty(),
                "{line}: `{name}` reached the upstream"
            );
        }
    }
}

#[tokio::test]
async fn override_headers_sent_by_the_agent_never_reach_the_upstream() {
    let proxied = Proxied::start("", &["POST /v1/messages"]).await;
    assert_never_forwarded(
        &proxied,
        &[
            (
                "X-HTTP-Method-Override: DELETE",
                &["x-http-method-override"],
            ),
            ("X-HTTP-Method: DELETE", &["x-http-method"]),
            ("X-Method-Override: PUT", &["x-method-override"]),
            ("X-Forwarded-Host: admin.internal", &["x-forwarded-host"]),
            ("X-Forwarded-For: 10.0.0.1", &["x-forwarded-for"]),
            ("X-Forwarded-Proto: https", &["x-forwarded-proto"]),
            ("X-Forwarded-Prefix: /admin", &["x-forwarded-prefix"]),
            ("X-Forwarded-Port: 8443", &["x-forwarded-port"]),
            ("X-Forwarded-Server: admin", &["x-forwarded-server"]),
            ("x-forwarded-uri: /admin", &["x-forwarded-uri"]),
            (
                "Forwarded: for=10.0.0.1;host=admin.internal;proto=https",
                &["forwarded"],
            ),
            ("X-Original-URL: /admin", &["x-original-url"]),
            ("X-Original-URI: /admin", &["x-original-uri"]),
            ("X-Rewrite-URL: /admin", &["x-rewrite-url"]),
            ("X-Original-Host: admin.internal", &["x-original-host"]),
            ("X-Host: admin.internal", &["x-host"]),
            ("X-Real-IP: 10.0.0.1", &["x-real-ip"]),
            ("X-Client-IP: 10.0.0.1", &["x-client-ip"]),
            ("True-Client-IP: 10.0.0.1", &["true-client-ip"]),
        ],
    )
    .await;
}

#[tokio::test]
async fn hop_by_hop_headers_sent_by_the_agent_never_reach_the_upstream() {
    let proxied = Proxied::start("", &["POST /v1/messages"]).await;
    assert_never_forwarded(
        &proxied,
        &[
            (
                "Connection: X-Named\r\nX-Named: 1",
                &["connection", "x-named"],
            ),
            (
                "Connection: keep-alive, X-A, x-b\r\nX-A: 1\r\nX-B: 2",
                &["x-a", "x-b"],
            ),
            ("Keep-Alive: timeout=5, max=100", &["keep-alive"]),
            (
                "Proxy-Authorization: Basic dXNlcjpwYXNz",
                &["proxy-authorization"],
            ),
            ("Proxy-Connection: keep-alive", &["proxy-connection"]),
            ("Proxy-Anything: 1", &["proxy-anything"]),
            ("TE: trailers", &["te"]),
            ("Trailer: X-Later", &["trailer"]),
            (
                "Upgrade: h2c\r\nConnection: Upgrade",
                &["upgrade", "connection"],
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn connection_cannot_remove_the_proxys_credential_or_stamps() {
    let proxied = Proxied::start("", &["POST /v1/messages"]).await;
    let answer = proxied
        .exchange(
            "POST /v1/messages HTTP/1.1",
            "Connection: authorization, x-agent-id, x-client, x-agent-active-capabilities, host\r\nContent-Length: 2\r\n",
            "{}",
        )
        .await;
    assert_eq!(status_of(&answer), 200, "{answer}");
    let seen = &proxied.upstream.seen()[0];
    assert_eq!(header(seen, "authorization"), vec![format!("Bearer {KEY}")]);
    assert_eq!(header(seen, "x-agent-id"), vec!["launch-1"]);
    assert_eq!(
        header(seen, "x-agent-active-capabilities"),
        vec!["POST /v1/messages"]
    );
    assert_eq!(header(seen, "x-client").len(), 1);
    assert_eq!(
        header(seen, "host"),
        vec![proxied.upstream.address.to_string()]
    );
}

#[tokio::test]
async fn chunked_bodies_are_reframed_and_their_trailers_dropped() {
    let proxied = Proxied::start("", &["POST /v1/messages"]).await;
    // A trailer would be merged into the headers by some servers, after every check.
    let chunked = "5\r\nhello\r\n6\r\n world\r\n0\r\nX-HTTP-Method-Override: DELETE\r\n\r\n";
    let answer = proxied
        .exchange(
            "POST /v1/messages HTTP/1.1",
            "Transfer-Encoding: chunked\r\nTrailer: X-HTTP-Method-Override\r\n",
            chunked,
        )
        .await;
    assert_eq!(status_of(&answer), 200, "{answer}");
    // Content-Length and Transfer-Encoding together (request smuggling): the chunked framing
    // wins and the stale length is not forwarded.
    let answer = proxied
        .exchange(
            "POST /v1/messages HTTP/1.1",
            "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n",
            chunked,
        )
        .await;
    assert_eq!(status_of(&answer), 200, "{answer}");
    let seen = proxied.upstream.seen();
    assert_eq!(seen.len(), 2);
    for seen in &seen {
        assert_eq!(seen.body, "hello world");
        assert!(seen.trailers.is_none(), "{:?}", seen.trailers);
        assert!(header(seen, "trailer").is_empty());
        assert!(header(seen, "x-http-method-override").is_empty());
        // The proxy's client frames the body itself; a length, if any, is the true one.
        let framing = (
            header(seen, "transfer-encoding"),
            header(seen, "content-length"),
        );
        assert!(
            framing == (vec!["chunked"], vec![]) || framing == (vec![], vec!["11"]),
            "{framing:?}"
        );
    }
}

#[tokio::test]
async fn no_key_is_written_anywhere_and_voucher_files_hold_only_vouchers() {
    let upstream = Upstream::start().await;
    let broker = broker_for(vec![upstream_config(
        "api",
        &upstream.url(),
        "authorization",
        Some("Bearer"),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch("l", caps("api", &["* /"]), dir.path())
        .unwrap();
    let bearer = format!("Bearer {}", voucher.expose_secret());
    let url = format!("{}/x", broker.proxy_url("api").unwrap());
    assert_eq!(
        send(&client(), "GET", &url, &[("authorization", &bearer)], "")
            .await
            .0,
        200
    );
    let mut files = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let contents = std::fs::read(entry.unwrap().path()).unwrap();
        files += 1;
        assert_eq!(contents, voucher.expose_secret().as_bytes());
        assert!(!contents.windows(KEY.len()).any(|w| w == KEY.as_bytes()));
    }
    assert_eq!(files, 1);
}

#[tokio::test]
async fn shutdown_stops_the_listeners_and_cuts_streams() {
    let upstream = Upstream::start().await;
    let mut sse = SseThroughProxy::open(&upstream).await;
    sse.events
        .send(Bytes::from_static(b"data: 1\n\n"))
        .await
        .unwrap();
    next_data(&mut sse.body).await.unwrap();
    let address = sse
        .broker
        .proxy_url("api")
        .unwrap()
        .trim_start_matches("http://")
        .to_owned();
    sse.broker.shutdown();
    let frame = tokio::time::timeout(DEADLINE, sse.body.frame())
        .await
        .unwrap();
    assert!(!matches!(frame, Some(Ok(_))), "{frame:?}");
    // The listener is closed: connecting fails (polled, the accept loop ends asynchronously).
    let deadline = Instant::now() + DEADLINE;
    while tokio::net::TcpStream::connect(&address).await.is_ok() {
        assert!(Instant::now() < deadline, "listener still open");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
