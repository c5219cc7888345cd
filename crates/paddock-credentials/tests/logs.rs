//! At trace level, across every path the proxy and broker take (mint, success, a refused
//! path, unknown voucher, capability denial, upstream failure, revocation of an open stream,
//! shutdown), over plain HTTP and over TLS (HTTP/2 to a trusted upstream, a handshake that fails
//! on an untrusted certificate), no log line holds a voucher or the real key. Its own binary,
//! because it installs the global subscriber.
#![cfg(test)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use http_body_util::BodyExt as _;
use hyper::body::Bytes;
use paddock_credentials::{
    Capabilities, CredentialBroker, CredentialBrokerConfig, Grant, UpstreamTrust,
};
use paddock_testkit::tls::{ALPN_H2_HTTP1, TestCa};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_voucher_or_key_in_any_log_line_at_trace_level() {
    let capture = Capture::default();
    let writer = capture.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();

    let upstream = Upstream::start().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let trusted = TestCa::new().unwrap();
    let h2 = Upstream::start_tls(trusted.localhost_config(ALPN_H2_HTTP1).unwrap()).await;
    let unknown = TestCa::new().unwrap();
    let untrusted = Upstream::start_tls(unknown.localhost_config(ALPN_H2_HTTP1).unwrap()).await;
    let broker = CredentialBroker::start(CredentialBrokerConfig {
        upstreams: vec![
            upstream_config("api", &upstream.url(), "authorization", Some("Bearer")),
            upstream_config("down", &format!("http://{closed}"), "x-api-key", None),
            upstream_config("h2", &h2.url(), "x-api-key", None),
            upstream_config("untrusted", &untrusted.url(), "x-api-key", None),
        ],
        trust: UpstreamTrust::default().with_pem_file(trusted.pem_path()),
        ..CredentialBrokerConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let voucher = broker
        .mint_for_launch(
            "l",
            Capabilities::new([
                Grant::parse("api", "POST /v1/messages").unwrap(),
                Grant::parse("api", "GET /sse").unwrap(),
                Grant::parse("down", "* /").unwrap(),
                Grant::parse("h2", "* /").unwrap(),
                Grant::parse("untrusted", "* /").unwrap(),
            ]),
            dir.path(),
        )
        .unwrap();
    let secret = voucher.expose_secret().to_owned();
    let bearer = format!("Bearer {secret}");
    let api = broker.proxy_url("api").unwrap();
    let client = client();
    let auth = [("authorization", bearer.as_str())];
    assert_eq!(
        send(
            &client,
            "POST",
            &format!("{api}/v1/messages?key=q"),
            &auth,
            "{}"
        )
        .await
        .0,
        200
    );
    assert_eq!(
        send(&client, "GET", &format!("{api}/v1/models"), &auth, "")
            .await
            .0,
        403
    );
    // Refused by the path guard, before the voucher is looked at.
    assert_eq!(
        send(
            &client,
            "POST",
            &format!("{api}/v1/messages/..;/admin?key=q"),
            &auth,
            "{}"
        )
        .await
        .0,
        400
    );
    let wrong = format!("Bearer {}x", &secret[..secret.len() - 1]);
    assert_eq!(
        send(
            &client,
            "POST",
            &format!("{api}/v1/messages"),
            &[("authorization", &wrong)],
            ""
        )
        .await
        .0,
        401
    );
    let down = broker.proxy_url("down").unwrap();
    assert_eq!(
        send(
            &client,
            "GET",
            &format!("{down}/x"),
            &[("x-api-key", &secret)],
            ""
        )
        .await
        .0,
        502
    );
    let over_h2 = broker.proxy_url("h2").unwrap();
    assert_eq!(
        send(
            &client,
            "POST",
            &format!("{over_h2}/v1/messages?key=q"),
            &[("x-api-key", &secret)],
            "{}"
        )
        .await
        .0,
        200
    );
    assert_eq!(h2.seen()[0].version, http::Version::HTTP_2);
    let untrusted_proxy = broker.proxy_url("untrusted").unwrap();
    let (status, _, body) = send(
        &client,
        "POST",
        &format!("{untrusted_proxy}/v1/messages?key=q"),
        &[("x-api-key", &secret)],
        "{}",
    )
    .await;
    assert_eq!(status, 502);
    assert!(body.contains("upstream_tls_untrusted"), "{body}");
    let events = upstream.next_stream();
    let response = client
        .request(request("GET", &format!("{api}/sse"), &auth, ""))
        .await
        .unwrap();
    let mut body = response.into_body();
    events
        .send(Bytes::from_static(b"data: 1\n\n"))
        .await
        .unwrap();
    body.frame().await.unwrap().unwrap();
    broker.revoke(&voucher.id).unwrap();
    let _ = body.frame().await;
    assert_eq!(
        send(&client, "POST", &format!("{api}/v1/messages"), &auth, "")
            .await
            .0,
        401
    );
    broker.shutdown();

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    // The capture saw the traffic (so the assertions below are not vacuous).
    for expected in [
        "voucher minted",
        "request refused",
        "proxied",
        "outside capabilities",
        "unknown or revoked voucher",
        "upstream failed",
        "upstream_tls_untrusted",
        "HTTP/2.0",
        "voucher revoked",
    ] {
        assert!(logs.contains(expected), "no `{expected}` line in:\n{logs}");
    }
    assert!(logs.contains(&voucher.id));
    let body = secret.trim_start_matches("vch_");
    assert!(
        !logs.contains(body),
        "a voucher leaked into the logs:\n{logs}"
    );
    assert!(!logs.contains(&wrong[7..]), "a presented token leaked");
    assert!(!logs.contains(KEY), "the key leaked into the logs:\n{logs}");
    assert!(!logs.contains("key=q"), "a query string was logged");
}
