//! `paddock-bench ingress`: the authenticated `GET /heartbeat` on the daemon next to a bare axum
//! hello-world with the same route and body, both under the same `wrk` load.

use std::time::Duration;

use anyhow::bail;

use crate::daemon::{PrivateDaemon, paddock_binary};
use crate::probe::{self, Target};
use crate::smoke::{self, Mode};
use crate::{LoadArgs, wrk};

/// What the heartbeat answers, on the daemon and on the bare server alike.
pub const EXPECTED_HEARTBEAT: &str = r#"{"status":"ok"}"#;

const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn run(args: LoadArgs, mode: Mode) -> anyhow::Result<()> {
    if mode.is_smoke() {
        return smoke(&args);
    }
    wrk::check_installed()?;
    let paddock = paddock_binary(args.paddock.clone())?;
    let daemon = PrivateDaemon::start(&paddock, &[])?;
    let script = wrk::Script {
        bearer_token_file: Some(daemon.token_file()),
        ..wrk::Script::default()
    }
    .write(&daemon.dir.path().join("auth.lua"))?;
    let bare_port = spawn_bare_axum().await?;
    let bare_url = format!("http://127.0.0.1:{bare_port}/heartbeat");
    let paddock_url = daemon.url("/heartbeat")?;
    let load = wrk::Load {
        threads: args.threads,
        connections: args.connections,
        duration: Duration::from_secs(args.duration),
    };

    // Warm both servers, then alternate so that drift affects both alike.
    wrk::run(&load.warmup(), &bare_url, None)?;
    wrk::run(&load.warmup(), &paddock_url, Some(&script))?;
    let mut bare = Vec::new();
    let mut ours = Vec::new();
    for _ in 0..args.rounds {
        bare.push(wrk::run(&load, &bare_url, None)?);
        ours.push(wrk::run(&load, &paddock_url, Some(&script))?);
    }
    let bare = wrk::Summary::best(&bare)?;
    let ours = wrk::Summary::best(&ours)?;
    if ours.non_2xx > 0 {
        bail!(
            "paddock answered {} non-2xx responses: the auth script is wrong",
            ours.non_2xx
        );
    }
    println!(
        "ingress: authenticated GET /heartbeat, {} connections, {} threads, {}s x {} rounds (best round)",
        args.connections, args.threads, args.duration, args.rounds
    );
    wrk::print_table(&[("bare axum", &bare), ("paddock daemon", &ours)]);
    println!(
        "ratio paddock/bare: throughput {:.2}, p50 {:.2}x, p99 {:.2}x",
        ours.requests_per_sec / bare.requests_per_sec,
        ours.p50_ms / bare.p50_ms,
        ours.p99_ms / bare.p99_ms
    );
    Ok(())
}

/// A bare axum hello-world with the same route and body as the daemon's heartbeat.
pub async fn spawn_bare_axum() -> anyhow::Result<u16> {
    use axum::routing::get;
    use axum::serve::ListenerExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let app = axum::Router::new().route(
        "/heartbeat",
        get(|| async {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                r#"{"status":"ok"}"#,
            )
        }),
    );
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(port)
}

/// One authenticated `GET /heartbeat` on the daemon (no Chromium: the heartbeat needs none),
/// which must answer 200 with the heartbeat body; and the same request without the token,
/// which must be refused, or wrk's auth script would measure refusals.
fn smoke(args: &LoadArgs) -> anyhow::Result<()> {
    let paddock = paddock_binary(args.paddock.clone())?;
    let daemon = PrivateDaemon::start(&paddock, &["--web-warm", "0"])?;
    let target = Target::parse(&daemon.url("/heartbeat")?)?;
    let token = paddock_client::token::read_token_file(&daemon.token_file())?;
    let authorization = format!("Bearer {}", token.expose_secret());
    drop(token);
    let authenticated = probe::send(
        &target,
        &probe::Request {
            method: "GET",
            headers: &[("Authorization", &authorization)],
            body: "",
        },
        PROBE_TIMEOUT,
    )?;
    let body: Option<serde_json::Value> = serde_json::from_slice(&authenticated.body).ok();
    if authenticated.status != 200 || body != serde_json::from_str(EXPECTED_HEARTBEAT).ok() {
        bail!(
            "the authenticated heartbeat answered {}: {}",
            authenticated.status,
            String::from_utf8_lossy(&authenticated.body)
        );
    }
    let anonymous = probe::send(
        &target,
        &probe::Request {
            method: "GET",
            headers: &[],
            body: "",
        },
        PROBE_TIMEOUT,
    )?;
    if anonymous.status != 401 {
        bail!(
            "the heartbeat without a token answered {} instead of 401",
            anonymous.status
        );
    }
    smoke::passed(
        "ingress",
        &format!(
            "authenticated GET /heartbeat answered 200 {EXPECTED_HEARTBEAT}; without the token 401"
        ),
    );
    Ok(())
}
