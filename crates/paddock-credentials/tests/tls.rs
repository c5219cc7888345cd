//! The proxy against real TLS upstreams on 127.0.0.1 whose certificates come from a CA made at
//! test time: the swap over HTTP/1.1 and HTTP/2 (chosen by ALPN, checked on the server side),
//! SSE frame by frame, the scripted model server over TLS, typed 502s for every way TLS or the
//! connection can fail, redirects passed through unfollowed, and the trust configuration.
#![cfg(test)]

mod common;

use common::*;
use http::Version;
use hyper::body::Bytes;
use paddock_credentials::{CredentialBroker, CredentialBrokerConfig, UpstreamTrust};
use paddock_testkit::model::{ScriptedModel, Turn};
use paddock_testkit::tls::{ALPN_H2_HTTP1, ALPN_HTTP1, TestCa};

fn header<'a>(seen: &'a Seen, name: &str) -> Vec<&'a str> {
    seen.headers
        .get_all(name)
        .iter()
        .map(|value| value.to_str().unwrap())
        .collect()
}

/// An agent's view of the proxy: a broker whose Bearer upstream `api` is `url` (trusting the
/// PEM file `trust` as well, if given) and a voucher that may do anything on it.
struct Agent {
    broker: CredentialBroker,
    voucher: paddock_credentials::Voucher,
    proxy: String,
    bearer: String,
    _dir: tempfile::TempDir,
}

impl Agent {
    async fn new(url: &str, trust: Option<&std::path::Path>) -> Self {
        let upstreams = vec![upstream_config("api", url, "authorization", Some("Bearer"))];
        let broker = match trust {
            Some(pem) => broker_trusting(upstreams, pem).await,
            None => broker_for(upstreams).await,
        };
        let dir = tempfile::tempdir().unwrap();
        let voucher = broker
            .mint_for_launch("launch-tls", caps("api", &["* /"]), dir.path())
            .unwrap();
        let proxy = broker.proxy_url("api").unwrap();
        let bearer = format!("Bearer {}", voucher.expose_secret());
        Self {
            broker,
            voucher,
            proxy,
            bearer,
            _dir: dir,
        }
    }

    async fn send(&self, method: &str, path: &str, body: &str) -> (u16, http::HeaderMap, String) {
        send(
            &client(),
            method,
            &format!("{}{path}", self.proxy),
            &[("authorization", &self.bearer)],
            body,
        )
        .await
    }

    /// Sends a request that the upstream cannot be reached for and returns the error's
    /// `type` and `message`, after checking the status and that no secret is in the body.
    async fn failure(&self) -> (String, String) {
        let (status, headers, body) = self.send("POST", "/v1/messages", "{}").await;
        assert_eq!(status, 502, "{body}");
        assert_eq!(headers["content-type"], "application/json");
        assert!(!body.contains(KEY), "the key is in the answer: {body}");
        assert!(
            !body.contains(self.voucher.expose_secret()),
            "the voucher is in the answer: {body}"
        );
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(json["type"], "error");
        (
            json["error"]["type"].as_str().unwrap().to_owned(),
            json["error"]["message"].as_str().unwrap().to_owned(),
        )
    }

    /// Opens `GET /sse` through the proxy and checks that three events arrive one at a time:
    /// each is sent only after the previous one was received, so a proxy that buffered would
    /// never deliver the first and the test would fail at its deadline.
    async fn assert_sse_in_lockstep(&self, upstream: &Upstream) {
        let events = upstream.next_stream();
        let response = tokio::time::timeout(
            DEADLINE,
            client().request(request(
                "GET",
                &format!("{}/sse", self.proxy),
                &[("authorization", &self.bearer)],
                "",
            )),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let mut body = response.into_body();
        for index in 0..3 {
            let event = format!("event: delta\ndata: {{\"n\":{index}}}\n\n");
            events.send(Bytes::from(event.clone())).await.unwrap();
            assert_eq!(next_data(&mut body).await.unwrap(), event.as_bytes());
        }
        drop(events);
        assert!(
            next_data(&mut body).await.is_none(),
            "the stream ends cleanly"
        );
    }
}

#[tokio::test]
async fn an_https_upstream_gets_the_real_key_over_tls_and_sse_streams_frame_by_frame() {
    let ca = TestCa::new().unwrap();
    let upstream = Upstream::start_tls(ca.localhost_config(ALPN_HTTP1).unwrap()).await;
    assert!(upstream.url().starts_with("https://127.0.0.1:"));
    let agent = Agent::new(&upstream.url(), Some(ca.pem_path())).await;

    let (status, headers, body) = agent
        .send("POST", "/v1/messages?beta=true", r#"{"model":"m"}"#)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, r#"{"model":"m"}"#);
    assert_eq!(headers["x-upstream"], "yes");
    let seen = &upstream.seen()[0];
    assert_eq!(
        seen.version,
        Version::HTTP_11,
        "the server offered only http/1.1"
    );
    assert_eq!(seen.target, "/v1/messages?beta=true");
    assert_eq!(header(seen, "authorization"), vec![format!("Bearer {KEY}")]);
    assert_eq!(header(seen, "x-agent-id"), vec!["launch-tls"]);
    assert_eq!(header(seen, "host"), vec![upstream.address.to_string()]);

    agent.assert_sse_in_lockstep(&upstream).await;
}

#[tokio::test]
async fn http2_is_negotiated_when_the_upstream_offers_it_and_sse_still_streams_frame_by_frame() {
    let ca = TestCa::new().unwrap();
    let upstream = Upstream::start_tls(ca.localhost_config(ALPN_H2_HTTP1).unwrap()).await;
    let agent = Agent::new(&upstream.url(), Some(ca.pem_path())).await;

    for round in 0..2 {
        let (status, _, body) = agent
            .send("POST", "/v1/messages", &format!("round {round}"))
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body, format!("round {round}"));
    }
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    for request in &seen {
        assert_eq!(request.version, Version::HTTP_2, "ALPN chose h2");
        assert_eq!(
            header(request, "authorization"),
            vec![format!("Bearer {KEY}")]
        );
        assert!(header(request, "connection").is_empty());
    }
    // Both requests shared one multiplexed connection.
    assert_eq!(upstream.connections(), 1);

    agent.assert_sse_in_lockstep(&upstream).await;
    assert_eq!(upstream.seen().last().unwrap().version, Version::HTTP_2);
}

#[tokio::test]
async fn the_scripted_model_over_tls_streams_a_messages_answer_through_the_proxy() {
    let model =
        ScriptedModel::start_tls(vec![Turn::streamed("one two three").when("count")]).unwrap();
    let broker = broker_trusting(
        vec![upstream_config(
            "anthropic",
            &model.base_url(),
            "x-api-key",
            None,
        )],
        model.ca_pem_path().unwrap(),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch(
            "claude-tls",
            caps("anthropic", &["POST /v1/messages"]),
            dir.path(),
        )
        .unwrap();
    let request_body = serde_json::json!({
        "model": "scripted-model",
        "max_tokens": 16,
        "stream": true,
        "messages": [{ "role": "user", "content": "count to three" }],
    })
    .to_string();
    let response = tokio::time::timeout(
        DEADLINE,
        client().request(request(
            "POST",
            &format!(
                "{}/v1/messages?beta=true",
                broker.proxy_url("anthropic").unwrap()
            ),
            &[
                ("x-api-key", voucher.expose_secret()),
                ("content-type", "application/json"),
            ],
            &request_body,
        )),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let mut events = String::new();
    // The server ends the stream with close_notify, so the proxy ends it cleanly too.
    while let Some(data) = next_data(&mut body).await {
        events.push_str(&String::from_utf8_lossy(&data));
    }
    let deltas: Vec<&str> = events
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| data.contains("text_delta"))
        .collect();
    assert_eq!(deltas.len(), 3, "{events}");
    assert!(events.contains(r#""text":"three""#), "{events}");
    assert!(
        events
            .trim_end()
            .ends_with(r#"data: {"type":"message_stop"}"#),
        "{events}"
    );
    let requests = model.scripted_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert_eq!(requests[0].header("x-agent-id"), Some("claude-tls"));
}

#[tokio::test]
async fn a_certificate_from_an_untrusted_ca_is_a_502_that_names_the_host() {
    let ca = TestCa::new().unwrap();
    let upstream = Upstream::start_tls(ca.localhost_config(ALPN_H2_HTTP1).unwrap()).await;
    // The default roots (web PKI and platform) do not include the test CA.
    let agent = Agent::new(&upstream.url(), None).await;
    let (kind, message) = agent.failure().await;
    assert_eq!(kind, "upstream_tls_untrusted");
    assert!(
        message.contains(&format!("`{}`", upstream.address)),
        "{message}"
    );
    assert!(
        message.contains("not issued by an authority the proxy trusts"),
        "{message}"
    );
    assert!(message.contains("SSL_CERT_FILE"), "{message}");
    assert!(
        upstream.seen().is_empty(),
        "no request crossed the failed handshake"
    );
}

#[tokio::test]
async fn a_certificate_for_another_name_is_a_502_name_mismatch() {
    let ca = TestCa::new().unwrap();
    let config = ca
        .server_config(&["api.other.example"], ALPN_H2_HTTP1)
        .unwrap();
    let upstream = Upstream::start_tls(config).await;
    let agent = Agent::new(&upstream.url(), Some(ca.pem_path())).await;
    let (kind, message) = agent.failure().await;
    assert_eq!(kind, "upstream_tls_name_mismatch");
    assert!(
        message.contains(&format!(
            "the TLS certificate of `{}` is not valid",
            upstream.address
        )),
        "{message}"
    );
    assert!(upstream.seen().is_empty());
}

#[tokio::test]
async fn a_plain_http_server_behind_an_https_url_is_a_502_handshake_failure() {
    let plain = Upstream::start().await;
    let agent = Agent::new(&format!("https://{}", plain.address), None).await;
    let (kind, message) = agent.failure().await;
    assert_eq!(kind, "upstream_tls_handshake");
    assert!(
        message.contains(&format!(
            "the TLS handshake with `{}` failed",
            plain.address
        )),
        "{message}"
    );
    assert!(plain.seen().is_empty(), "nothing was sent in the clear");
}

#[tokio::test]
async fn a_refused_connection_to_an_https_upstream_is_a_502_that_names_the_host() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let agent = Agent::new(&format!("https://{closed}"), None).await;
    let (kind, message) = agent.failure().await;
    assert_eq!(kind, "upstream_unreachable");
    assert!(
        message.contains(&format!("`{closed}` refused the connection")),
        "{message}"
    );
}

#[tokio::test]
async fn an_upstream_redirect_is_passed_through_and_never_followed() {
    let ca = TestCa::new().unwrap();
    let upstream = Upstream::start_tls(ca.localhost_config(ALPN_H2_HTTP1).unwrap()).await;
    // Another host (another port: the proxy's key is bound to the configured authority).
    let elsewhere = Upstream::start().await;
    let location = format!("{}/landing?from=upstream", elsewhere.url());
    let agent = Agent::new(&upstream.url(), Some(ca.pem_path())).await;

    let (status, headers, body) = agent
        .send("GET", &format!("/redirect?to={location}"), "")
        .await;
    assert_eq!(status, 302);
    assert_eq!(
        headers["location"],
        location.as_str(),
        "Location is untouched"
    );
    assert_eq!(body, "moved");
    assert_eq!(upstream.seen().len(), 1);
    assert_eq!(
        elsewhere.connections(),
        0,
        "the proxy followed the redirect"
    );

    // Following it is the agent's business: it goes straight to the other host (not through
    // the key swap) and carries only what the agent holds, its voucher.
    let (status, _, _) = send(
        &client(),
        "GET",
        &location,
        &[("authorization", &agent.bearer)],
        "",
    )
    .await;
    assert_eq!(status, 200);
    let seen = elsewhere.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        header(&seen[0], "authorization"),
        vec![agent.bearer.as_str()]
    );
    assert!(
        seen[0].headers.values().all(|value| !value
            .as_bytes()
            .windows(KEY.len())
            .any(|w| w == KEY.as_bytes())),
        "the real key reached another host"
    );
    agent.broker.shutdown();
}

#[tokio::test]
async fn an_unreadable_extra_bundle_fails_the_start_and_names_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-ca.pem");
    let start = |url: &str| {
        CredentialBroker::start(CredentialBrokerConfig {
            upstreams: vec![upstream_config("api", url, "x-api-key", None)],
            trust: UpstreamTrust::default().with_pem_file(&missing),
            ..CredentialBrokerConfig::default()
        })
    };
    let error = start("https://127.0.0.1:9").await.unwrap_err();
    assert!(error.is_invalid_input(), "{error}");
    assert!(error.to_string().contains("no-such-ca.pem"), "{error}");
    assert!(error.to_string().contains("SSL_CERT_FILE"), "{error}");
    assert!(!error.to_string().contains(KEY));
    // The roots are read only when some upstream needs them.
    assert!(start("http://127.0.0.1:9").await.is_ok());
}

/// A host adds an upstream per launch while the broker runs (a key handed over for one launch
/// only): the first `https://` one loads the roots then, the launch's voucher works through it,
/// and removing it revokes that voucher and closes its listener.
#[tokio::test]
async fn an_https_upstream_added_at_run_time_works_and_its_removal_revokes_its_vouchers() {
    let ca = TestCa::new().unwrap();
    let upstream = Upstream::start_tls(ca.localhost_config(ALPN_HTTP1).unwrap()).await;
    let broker = broker_trusting(Vec::new(), ca.pem_path()).await;
    assert!(broker.upstreams().is_empty());
    let proxy = broker
        .add_upstream(upstream_config(
            "launch-key",
            &upstream.url(),
            "x-api-key",
            None,
        ))
        .await
        .unwrap();
    assert_eq!(
        broker.proxy_url("launch-key").as_deref(),
        Some(proxy.as_str())
    );
    let duplicate = broker
        .add_upstream(upstream_config(
            "launch-key",
            &upstream.url(),
            "x-api-key",
            None,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        duplicate.to_string(),
        "upstream `launch-key` is configured twice; give each upstream its own name"
    );
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch(
            "launch-1",
            caps("launch-key", &["POST /v1/messages"]),
            dir.path(),
        )
        .unwrap();
    let (status, _, body) = send(
        &client(),
        "POST",
        &format!("{proxy}/v1/messages"),
        &[("x-api-key", voucher.expose_secret())],
        "{}",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(header(&upstream.seen()[0], "x-api-key"), vec![KEY]);

    let revoked = broker.remove_upstream("launch-key").unwrap();
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0].id, voucher.id);
    assert!(broker.list().is_empty());
    assert!(broker.proxy_url("launch-key").is_none());
    assert!(!voucher.file.exists(), "the revoked voucher's file is gone");
    let address = proxy.trim_start_matches("http://").to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while tokio::net::TcpStream::connect(&address).await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the removed upstream's listener still accepts"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        broker
            .remove_upstream("launch-key")
            .unwrap_err()
            .to_string(),
        "unknown upstream `launch-key`; configured upstreams: none"
    );
}
