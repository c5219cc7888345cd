//! The fleet server's edge against the real binary: spec 002's auth table, the baseline limits
//! (413, 504, 429 with `Retry-After`, trust-proxy), the 405s, `/health`, the metadata document,
//! invalid settings, `paddock server keys`, per-key profiles, an official MCP client with an
//! API key, and no key value anywhere it must not be.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "the helpers fail the test loudly, as the #[test] functions they serve do"
)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use paddock_testkit::{McpHttp, RawRequest, RawResponse, RunningServer, ServerHarness};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const RESOURCE: &str = "https://fleet.example.test";
const METADATA_CHALLENGE: &str =
    "Bearer resource_metadata=\"https://fleet.example.test/.well-known/oauth-protected-resource\"";

fn harness() -> ServerHarness {
    let mut harness = ServerHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_SERVER_RESOURCE_URL", RESOURCE);
    harness
}

fn port(server: &RunningServer) -> u16 {
    server.address.port()
}

const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;

/// A `POST /mcp` of `body` with the MCP headers and nothing else.
fn mcp(body: &str) -> RawRequest {
    RawRequest::new("POST", "/mcp")
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .body(body)
}

fn tool_names(server: &RunningServer, key: &str) -> Vec<String> {
    McpHttp {
        port: port(server),
        token: key.to_owned(),
        session: None,
    }
    .tool_names()
    .unwrap()
}

/// The error code of a refusal's JSON body.
fn error_code(response: &RawResponse) -> String {
    response.json().unwrap()["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn assert_refused(response: &RawResponse, status: u16, code: &str) {
    assert_eq!(response.status, status, "{response:?}");
    assert_eq!(error_code(response), code, "{response:?}");
    let message = response.json().unwrap()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!message.is_empty(), "{response:?}");
}

/// The first answer to `key` that is not a 200, polled: a revocation holds once the server's
/// key cache has seen the store's key epoch move (every 0.1 s).
fn revoked_within(port: u16, key: &str) -> RawResponse {
    paddock_testkit::wait_until(Duration::from_secs(30), || {
        let response = mcp(TOOLS_LIST).bearer(key).send(port).ok()?;
        (response.status != 200).then_some(response)
    })
    .unwrap()
}

#[test]
fn every_row_of_the_auth_table() {
    let mut harness = harness();
    let key = harness.create_key("alice", "no-commerce").unwrap();
    let server = harness.spawn(&[]).unwrap();
    let port = port(&server);
    let unknown = format!("pdk_sk_{}", "A".repeat(43));

    // No credential: 401 pointing at the configured metadata, even when the request claims
    // another host.
    let none = mcp(TOOLS_LIST).send(port).unwrap();
    assert_refused(&none, 401, "unauthorized");
    assert_eq!(none.header("www-authenticate"), Some(METADATA_CHALLENGE));
    let spoofed = mcp(TOOLS_LIST)
        .host("evil.example")
        .header("Forwarded", "host=evil.example;proto=https")
        .header("X-Forwarded-Host", "evil.example")
        .send(port)
        .unwrap();
    assert_refused(&spoofed, 401, "unauthorized");
    assert_eq!(spoofed.header("www-authenticate"), Some(METADATA_CHALLENGE));

    // Malformed Authorization: 400.
    for value in [
        "Basic dXNlcjpwYXNz".to_owned(),
        key.clone(),
        "Bearer".to_owned(),
        format!("Bearer {key} extra"),
    ] {
        let response = mcp(TOOLS_LIST)
            .header("Authorization", &value)
            .send(port)
            .unwrap();
        assert_refused(&response, 400, "invalid_request");
    }
    // Authorization twice: 400.
    let twice = mcp(TOOLS_LIST)
        .bearer(&key)
        .bearer(&key)
        .send(port)
        .unwrap();
    assert_refused(&twice, 400, "invalid_request");

    // Both channels: 400, even when both carry the same valid key.
    let both = mcp(TOOLS_LIST)
        .bearer(&key)
        .header("x-paddock-api-key", &key)
        .send(port)
        .unwrap();
    assert_refused(&both, 400, "invalid_request");

    // A bearer that is not a Paddock API key (an OAuth token, another Paddock credential): 400.
    for token in [
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln".to_owned(),
        format!("pdk_mk_{}", "a".repeat(43)),
    ] {
        let response = mcp(TOOLS_LIST).bearer(&token).send(port).unwrap();
        assert_refused(&response, 400, "invalid_request");
    }

    // A pdk_sk_ value of the wrong shape, and an unknown key: 401, through either channel.
    for value in ["pdk_sk_short", unknown.as_str()] {
        let bearer = mcp(TOOLS_LIST).bearer(value).send(port).unwrap();
        assert_refused(&bearer, 401, "unauthorized");
        assert_eq!(bearer.header("www-authenticate"), Some(METADATA_CHALLENGE));
        let header = mcp(TOOLS_LIST)
            .header("x-paddock-api-key", value)
            .send(port)
            .unwrap();
        assert_refused(&header, 401, "unauthorized");
    }

    // The key passes through either channel.
    let passed = mcp(TOOLS_LIST).bearer(&key).send(port).unwrap();
    assert_eq!(passed.status, 200, "{passed:?}");
    assert!(passed.json().unwrap()["result"]["tools"].is_array());
    let passed = mcp(TOOLS_LIST)
        .header("x-paddock-api-key", &key)
        .send(port)
        .unwrap();
    assert_eq!(passed.status, 200, "{passed:?}");

    // A revoked key: 401, once the server's key cache has seen the revocation (its epoch poll,
    // 0.1 s; the deadline only catches a revocation that never holds).
    harness
        .run(["server", "keys", "revoke", "alice"])
        .unwrap()
        .success()
        .unwrap();
    let revoked = revoked_within(port, &key);
    assert_refused(&revoked, 401, "unauthorized");
    assert_eq!(revoked.header("www-authenticate"), Some(METADATA_CHALLENGE));
}

#[test]
fn methods_health_and_the_metadata_document() {
    let mut harness = harness();
    let server = harness.spawn(&[]).unwrap();
    let port = port(&server);
    for method in ["GET", "DELETE", "PUT", "PATCH"] {
        let response = RawRequest::new(method, "/mcp").send(port).unwrap();
        assert_eq!(response.status, 405, "{method}: {response:?}");
        assert_eq!(response.header("allow"), Some("POST"));
    }
    let health = RawRequest::get("/health").send(port).unwrap();
    assert_eq!(health.status, 200);
    assert_eq!(health.json().unwrap(), json!({"status": "ok"}));

    let metadata = RawRequest::get("/.well-known/oauth-protected-resource")
        .host("evil.example")
        .header("Forwarded", "host=evil.example")
        .send(port)
        .unwrap();
    assert_eq!(metadata.status, 200);
    let document = metadata.json().unwrap();
    assert_eq!(document["resource"], RESOURCE);
    assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    assert!(!metadata.body.contains("evil.example"));
}

#[test]
fn invalid_settings_exit_1_naming_the_setting() {
    for (setting, value) in [
        ("PADDOCK_SERVER_BODY_LIMIT_BYTES", "0"),
        ("PADDOCK_SERVER_REQUEST_TIMEOUT_MS", "soon"),
        ("PADDOCK_SERVER_RATE_LIMIT_PER_KEY_PER_MIN", "-1"),
        ("PADDOCK_SERVER_RATE_LIMIT_PER_IP_PER_MIN", "many"),
        ("PADDOCK_SERVER_TRUST_PROXY", "yes"),
        ("PADDOCK_SERVER_POLICY_PROFILE", "admin"),
        ("PADDOCK_SERVER_RESOURCE_URL", "not a url"),
        ("PADDOCK_SERVER_DATABASE", "mysql://db"),
    ] {
        let mut harness = harness();
        harness.set_env(setting, value);
        let output = harness.run(["server", "--listen", "127.0.0.1:0"]).unwrap();
        assert_eq!(output.code(), Some(1), "{setting}={value}: {output:?}");
        assert!(
            output.stderr().contains(setting),
            "{setting}={value}: {}",
            output.stderr()
        );
    }
}

/// Sends a chunked `POST /mcp` with `key` whose chunks add up to `total` bytes, and reads the
/// answer.
fn chunked_post(port: u16, key: &str, total: usize) -> RawResponse {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let chunk = vec![b' '; 256];
    let mut sent = 0;
    while sent < total {
        let size = chunk.len().min(total - sent);
        let framed = [
            format!("{size:x}\r\n").into_bytes(),
            chunk[..size].to_vec(),
            b"\r\n".to_vec(),
        ]
        .concat();
        // The server may answer 413 and close before the rest arrives.
        if stream.write_all(&framed).is_err() {
            break;
        }
        sent += size;
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    read_response(stream)
}

fn read_response(mut stream: TcpStream) -> RawResponse {
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    RawResponse {
        status,
        headers: lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect(),
        body: body.to_owned(),
    }
}

#[test]
fn bodies_over_the_limit_are_413_declared_or_chunked() {
    let mut harness = harness();
    harness.set_env("PADDOCK_SERVER_BODY_LIMIT_BYTES", "1024");
    let key = harness.create_key("bulk", "no-commerce").unwrap();
    let server = harness.spawn(&[]).unwrap();
    let port = port(&server);

    // Declared: refused before anything else, with or without a key.
    let padded = format!("{TOOLS_LIST}{}", " ".repeat(2000));
    for request in [mcp(&padded), mcp(&padded).bearer(&key)] {
        let response = request.send(port).unwrap();
        assert_refused(&response, 413, "payload_too_large");
    }
    // Chunked, no Content-Length: counted as it arrives.
    let response = chunked_post(port, &key, 4096);
    assert_refused(&response, 413, "payload_too_large");
    // Under the limit, chunked or not, it passes.
    let small = mcp(TOOLS_LIST).bearer(&key).send(port).unwrap();
    assert_eq!(small.status, 200, "{small:?}");
}

#[test]
fn a_body_that_never_finishes_gets_504() {
    let mut harness = harness();
    harness.set_env("PADDOCK_SERVER_REQUEST_TIMEOUT_MS", "300");
    let key = harness.create_key("slow", "no-commerce").unwrap();
    let server = harness.spawn(&[]).unwrap();
    let port = port(&server);
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    // The deadline only catches a hang: a server without one would never answer.
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 100\r\nConnection: close\r\n\r\n{{\"jsonrpc\""
    );
    stream.write_all(head.as_bytes()).unwrap();
    let response = read_response(stream);
    assert_refused(&response, 504, "timeout");
    // The server is still fine afterwards.
    let after = mcp(TOOLS_LIST).bearer(&key).send(port).unwrap();
    assert_eq!(after.status, 200, "{after:?}");
}

fn retry_after(response: &RawResponse) -> u64 {
    let value = response.header("retry-after").unwrap_or_default();
    value
        .parse()
        .unwrap_or_else(|_| panic!("Retry-After `{value}` is not whole seconds"))
}

#[test]
fn the_per_key_bucket_answers_429_with_retry_after() {
    let mut harness = harness();
    harness.set_env("PADDOCK_SERVER_RATE_LIMIT_PER_KEY_PER_MIN", "2");
    harness.set_env("PADDOCK_SERVER_RATE_LIMIT_PER_IP_PER_MIN", "1000");
    let first = harness.create_key("first", "no-commerce").unwrap();
    let second = harness.create_key("second", "no-commerce").unwrap();
    let server = harness.spawn(&[]).unwrap();
    let port = port(&server);
    for _ in 0..2 {
        let response = mcp(TOOLS_LIST).bearer(&first).send(port).unwrap();
        assert_eq!(response.status, 200, "{response:?}");
    }
    // The same key through the other header shares its bucket.
    let limited = mcp(TOOLS_LIST)
        .header("x-paddock-api-key", &first)
        .send(port)
        .unwrap();
    assert_refused(&limited, 429, "rate_limited");
    assert!(retry_after(&limited) >= 1, "{limited:?}");
    // Another key has its own bucket.
    let other = mcp(TOOLS_LIST).bearer(&second).send(port).unwrap();
    assert_eq!(other.status, 200, "{other:?}");
}

#[test]
fn without_trust_proxy_forwarded_headers_do_not_escape_the_ip_bucket() {
    let mut harness = harness();
    harness.set_env("PADDOCK_SERVER_RATE_LIMIT_PER_IP_PER_MIN", "2");
    let server = harness.spawn(&[]).unwrap();
    let port = port(&server);
    // Refused requests count too: the IP bucket comes before auth.
    for _ in 0..2 {
        let response = mcp(TOOLS_LIST).send(port).unwrap();
        assert_eq!(response.status, 401, "{response:?}");
    }
    for forwarded in ["203.0.113.1", "198.51.100.2, 10.0.0.1"] {
        let response = mcp(TOOLS_LIST)
            .header("X-Forwarded-For", forwarded)
            .header("X-Real-IP", "192.0.2.9")
            .send(port)
            .unwrap();
        assert_refused(&response, 429, "rate_limited");
        assert!(retry_after(&response) >= 1, "{response:?}");
    }
    // The 405s are behind the same limits.
    let get = RawRequest::new("GET", "/mcp").send(port).unwrap();
    assert_eq!(get.status, 429, "{get:?}");
    // /health is not.
    let health = RawRequest::get("/health").send(port).unwrap();
    assert_eq!(health.status, 200);
}

#[test]
fn with_trust_proxy_each_forwarded_address_has_its_own_bucket() {
    let mut harness = harness();
    harness.set_env("PADDOCK_SERVER_RATE_LIMIT_PER_IP_PER_MIN", "2");
    harness.set_env("PADDOCK_SERVER_TRUST_PROXY", "true");
    let server = harness.spawn(&[]).unwrap();
    let port = port(&server);
    let from = |forwarded: &str| {
        mcp(TOOLS_LIST)
            .header("X-Forwarded-For", forwarded)
            .send(port)
            .unwrap()
    };
    for _ in 0..2 {
        assert_eq!(from("203.0.113.1, 10.0.0.1").status, 401);
    }
    let limited = from("203.0.113.1");
    assert_refused(&limited, 429, "rate_limited");
    assert!(retry_after(&limited) >= 1, "{limited:?}");
    // Another forwarded address: another bucket.
    assert_eq!(from("203.0.113.2").status, 401);
    // X-Real-IP wins over X-Forwarded-For.
    let real = mcp(TOOLS_LIST)
        .header("X-Real-IP", "198.51.100.7")
        .header("X-Forwarded-For", "203.0.113.1")
        .send(port)
        .unwrap();
    assert_eq!(real.status, 401, "{real:?}");
}

#[test]
fn keys_create_once_list_without_values_and_revoke() {
    let mut harness = harness();
    let created = harness
        .run([
            "server",
            "keys",
            "create",
            "--name",
            "ci",
            "--profile",
            "readonly",
        ])
        .unwrap()
        .success()
        .unwrap();
    let key = created.stdout().trim().to_owned();
    assert!(key.starts_with("pdk_sk_"), "{created:?}");
    assert_eq!(created.stdout().lines().count(), 1);
    assert!(!created.stderr().contains(&key));

    let server = harness.spawn(&[]).unwrap();
    assert!(!tool_names(&server, &key).is_empty());

    for args in [
        vec!["server", "keys", "ls"],
        vec!["server", "keys", "ls", "--json"],
    ] {
        let listed = harness.run(&args).unwrap().success().unwrap();
        assert!(listed.stdout().contains("ci"), "{listed:?}");
        assert!(listed.stdout().contains("readonly"), "{listed:?}");
        assert!(!listed.stdout().contains(&key), "{args:?} shows the key");
        assert!(!listed.stderr().contains(&key));
    }
    let listed = harness
        .run(["server", "keys", "ls", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let record: Value = serde_json::from_str(listed.stdout().trim()).unwrap();
    let id = record["id"].as_str().unwrap().to_owned();
    assert!(record["revokedAtMs"].is_null());

    harness
        .run(["server", "keys", "revoke", &id])
        .unwrap()
        .success()
        .unwrap();
    let refused = revoked_within(port(&server), &key);
    assert_refused(&refused, 401, "unauthorized");
    let listed = harness
        .run(["server", "keys", "ls", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let record: Value = serde_json::from_str(listed.stdout().trim()).unwrap();
    assert!(record["revokedAtMs"].is_i64(), "{record}");
    let again = harness.run(["server", "keys", "revoke", &id]).unwrap();
    assert_eq!(again.code(), Some(1), "{again:?}");
}

#[test]
fn a_key_profile_narrows_the_deployment_and_never_widens_it() {
    // A `full` deployment: a readonly key sees less than a full key.
    let mut full_server = harness();
    full_server.set_env("PADDOCK_SERVER_POLICY_PROFILE", "full");
    let full_key = full_server.create_key("full", "full").unwrap();
    let readonly_key = full_server.create_key("reader", "readonly").unwrap();
    let server = full_server.spawn(&[]).unwrap();
    let full_tools = tool_names(&server, &full_key);
    let readonly_tools = tool_names(&server, &readonly_key);
    for tool in [
        "list_devices",
        "device_action",
        "create_device",
        "terminate_device",
    ] {
        assert!(full_tools.iter().any(|name| name == tool), "{full_tools:?}");
    }
    assert!(readonly_tools.iter().all(|tool| full_tools.contains(tool)));
    assert!(
        readonly_tools.len() < full_tools.len(),
        "{readonly_tools:?}"
    );
    assert!(readonly_tools.iter().any(|name| name == "list_devices"));
    for tool in ["device_action", "create_device", "terminate_device"] {
        assert!(
            !readonly_tools.iter().any(|name| name == tool),
            "{readonly_tools:?}"
        );
    }

    // The default (`no-commerce`) deployment: a full key cannot see the commerce tools, and
    // cannot call them either.
    let mut default_server = harness();
    let full_key = default_server.create_key("full", "full").unwrap();
    let server = default_server.spawn(&[]).unwrap();
    let tools = tool_names(&server, &full_key);
    assert!(tools.iter().any(|name| name == "list_devices"), "{tools:?}");
    for tool in ["create_device", "terminate_device"] {
        assert!(!tools.iter().any(|name| name == tool), "{tools:?}");
    }
    let call = McpHttp {
        port: port(&server),
        token: full_key,
        session: None,
    }
    .rpc(
        "tools/call",
        json!({"name": "create_device", "arguments": {}}),
    )
    .unwrap();
    let refused = call.get("error").is_some() || call["result"]["isError"] == json!(true);
    assert!(refused, "{call}");
}

#[test]
fn the_python_sdk_lists_tools_with_an_api_key() {
    let mut harness = harness();
    let key = harness.create_key("python", "no-commerce").unwrap();
    let server = harness.spawn(&[]).unwrap();
    let output = Command::new(paddock_testkit::clients::python())
        .arg(
            paddock_testkit::clients::repo_root().join("tests/clients/python/server_edge_check.py"),
        )
        .arg(format!("{}/mcp", server.url()))
        .env_clear()
        .env("PADDOCK_API_KEY", &key)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_PROXY", "*")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(report["hasInstructions"] == json!(true), "{report}");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"list_devices"), "{report}");
    assert!(!tools.contains(&"create_device"), "{report}");
}

#[test]
fn no_key_value_in_logs_audit_lines_bodies_argv_or_the_database() {
    let mut harness = harness();
    let valid = harness.create_key("valid", "no-commerce").unwrap();
    let revoked = harness.create_key("revoked", "no-commerce").unwrap();
    harness
        .run(["server", "keys", "revoke", "revoked"])
        .unwrap()
        .success()
        .unwrap();
    let unknown = format!("pdk_sk_{}", "Z".repeat(43));
    let not_ours = "eyJhbGciOiJub25lIn0.c2VjcmV0LXRva2Vu.";
    let server = harness.spawn(&["--log-level", "trace"]).unwrap();
    let port = port(&server);

    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_devices","arguments":{}}}"#;
    let mut bodies = Vec::new();
    for key in [&valid, &revoked, &unknown] {
        for body in [TOOLS_LIST, call] {
            bodies.push(mcp(body).bearer(key).send(port).unwrap());
            bodies.push(
                mcp(body)
                    .header("x-paddock-api-key", key)
                    .send(port)
                    .unwrap(),
            );
        }
        bodies.push(
            mcp(TOOLS_LIST)
                .bearer(key)
                .header("x-paddock-api-key", key)
                .send(port)
                .unwrap(),
        );
    }
    bodies.push(mcp(TOOLS_LIST).bearer(not_ours).send(port).unwrap());
    assert_eq!(bodies[0].status, 200);
    assert_eq!(bodies[1].status, 200);
    let secrets = [valid.as_str(), revoked.as_str(), unknown.as_str(), not_ours];
    let key_id = {
        let listed = harness
            .run(["server", "keys", "ls", "--json"])
            .unwrap()
            .success()
            .unwrap();
        listed
            .stdout()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|record| record["name"] == "valid")
            .and_then(|record| record["id"].as_str().map(str::to_owned))
            .unwrap()
    };

    // The audit lines: one per call that reached a tool, spec 002's shape, with the key's id.
    let log = paddock_testkit::wait_until(paddock_testkit::DEADLINE, || {
        let log = server.log_text();
        (log.matches(r#""type":"audit""#).count() >= 2).then_some(log)
    })
    .unwrap();
    let audit: Vec<Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["type"] == "audit")
        .collect();
    assert_eq!(audit.len(), 2, "{log}");
    for line in &audit {
        let fields: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for field in &fields {
            assert!(
                [
                    "type",
                    "toolName",
                    "operation",
                    "outcome",
                    "durationMs",
                    "requestId",
                    "auth"
                ]
                .contains(field),
                "{line}"
            );
        }
        assert_eq!(line["toolName"], "list_devices", "{line}");
        assert!(line["durationMs"].is_u64(), "{line}");
        assert!(line["outcome"].is_string(), "{line}");
        assert!(line["requestId"].is_string(), "{line}");
        assert!(line.get("arguments").is_none(), "{line}");
        assert_eq!(line["auth"]["kind"], "api_key", "{line}");
        assert_eq!(line["auth"]["subject"], key_id.as_str(), "{line}");
    }

    for secret in secrets {
        assert!(!log.contains(secret), "a key is in the server's stderr");
        for body in &bodies {
            assert!(
                !body.body.contains(secret),
                "a key is in an answer: {body:?}"
            );
            for (name, value) in &body.headers {
                assert!(!value.contains(secret), "a key is in header {name}");
            }
        }
    }
    let cmdline = paddock_testkit::procfs::cmdline(server.pid)
        .unwrap()
        .join(" ");
    assert!(cmdline.contains("server"), "{cmdline}");
    for secret in secrets {
        assert!(!cmdline.contains(secret), "a key is in argv");
    }
    // The database (and every other file of the server's world, logs included).
    let files = paddock_testkit::no_file_contains(harness.root(), &secrets).unwrap();
    assert!(files >= 2, "only {files} files were searched");
    assert!(
        harness.root().join("server-state/server.sqlite").exists(),
        "the SQLite file is not where the search looked"
    );
}

/// A JSON `POST` to one of the server's non-MCP routes, with `bearer` when given.
fn api(path: &str, bearer: Option<&str>, body: &str) -> RawRequest {
    let request = RawRequest::new("POST", path)
        .header("Content-Type", "application/json")
        .body(body);
    match bearer {
        Some(bearer) => request.header("Authorization", &format!("Bearer {bearer}")),
        None => request,
    }
}

#[test]
fn the_agent_data_plane_takes_runner_keys_and_owner_routes_take_api_keys() {
    let mut harness = harness();
    let key = harness.create_key("owner", "no-commerce").unwrap();
    let token = harness.pair_token(&["--name", "laptop"]).unwrap();
    let server = harness.spawn(&[]).unwrap();
    let port = port(&server);
    let activated = api(
        "/api/daemon/activate",
        None,
        &json!({ "token": token, "hostname": "laptop", "platform": "linux", "arch": "x86_64" })
            .to_string(),
    )
    .send(port)
    .unwrap();
    assert_eq!(activated.status, 200, "{activated:?}");
    let machine_key = activated.json().unwrap()["machineKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let mint = |bearer: Option<&str>, agent: &str| {
        api(
            "/api/daemon/runner-keys",
            bearer,
            &json!({ "agentId": agent }).to_string(),
        )
        .send(port)
        .unwrap()
    };
    // Only a machine key mints runner keys.
    assert_refused(&mint(None, "helper"), 401, "unauthorized");
    assert_refused(&mint(Some(&key), "helper"), 401, "unauthorized");
    assert_refused(&mint(Some(&machine_key), "../etc"), 400, "invalid_request");
    let runner_key = |response: RawResponse| {
        assert_eq!(response.status, 200, "{response:?}");
        response.json().unwrap()["runnerKey"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let first = runner_key(mint(Some(&machine_key), "helper"));
    assert!(first.starts_with("pdk_rk_"), "{first}");

    // The data plane takes a live runner key and nothing else.
    let call = |bearer: Option<&str>, operation: &str, body: &str| {
        api(&format!("/api/agent/{operation}"), bearer, body)
            .send(port)
            .unwrap()
    };
    let unknown = format!("pdk_rk_{}", "A".repeat(43));
    for bearer in [None, Some(key.as_str()), Some(&machine_key), Some(&unknown)] {
        assert_refused(&call(bearer, "read", "{}"), 401, "unauthorized");
    }
    let sent = call(
        Some(&first),
        "send",
        &json!({ "target": "/.dm/owner#fleet", "text": "hello owner" }).to_string(),
    );
    assert_eq!(sent.status, 200, "{sent:?}");
    assert_eq!(sent.json().unwrap()["seq"], 1);
    let read = call(Some(&first), "read", "{}");
    let messages = read.json().unwrap()["messages"].clone();
    assert_eq!(messages[0]["direction"], "out", "{messages}");
    assert_eq!(messages[0]["sender"], "helper", "{messages}");
    assert_eq!(messages[0]["text"], "hello owner", "{messages}");
    let channels = call(Some(&first), "listChannels", "");
    assert_eq!(
        channels.json().unwrap()["channels"],
        json!([{ "target": "/.dm/owner#fleet", "messages": 1, "latestSeq": 1 }])
    );
    let pulled = call(Some(&first), "inboxPull", "{}");
    assert_eq!(
        pulled.json().unwrap(),
        json!({ "messages": [], "acked": 0 }),
        "an outbound message is not in the inbox"
    );
    // Bad input: typed refusals, nothing stored.
    assert_refused(&call(Some(&first), "delete", "{}"), 404, "not_found");
    assert_refused(
        &call(Some(&first), "ack", r#"{"upto":"all"}"#),
        400,
        "invalid_request",
    );
    assert_refused(
        &call(Some(&first), "inboxPull", r#"{"agentId":"other"}"#),
        400,
        "invalid_request",
    );
    assert_refused(
        &call(
            Some(&first),
            "send",
            r#"{"target":"/.dm/owner#fleet","text":""}"#,
        ),
        400,
        "invalid_request",
    );
    assert_refused(
        &call(Some(&first), "send", r#"{"target":"no ref","text":"x"}"#),
        400,
        "invalid_request",
    );
    // Another bot's key sees its own, empty, conversation.
    let other = runner_key(mint(Some(&machine_key), "other"));
    assert_eq!(
        call(Some(&other), "read", "{}").json().unwrap(),
        json!({ "messages": [] })
    );
    // A new key for a bot replaces the old one.
    let second = runner_key(mint(Some(&machine_key), "helper"));
    assert_refused(&call(Some(&first), "read", "{}"), 401, "unauthorized");
    assert_eq!(
        call(Some(&second), "read", "{}").json().unwrap()["messages"][0]["text"],
        "hello owner"
    );

    // The owner routes take an API key, never a runner or machine key.
    let message = json!({ "bot": "helper", "text": "hi" }).to_string();
    for bearer in [None, Some(second.as_str()), Some(&machine_key)] {
        let refused = api("/api/messages", bearer, &message).send(port).unwrap();
        assert!(matches!(refused.status, 400 | 401), "{refused:?}");
    }
    // No daemon has reported the bot: 404, nothing stored.
    assert_refused(
        &api("/api/messages", Some(&key), &message)
            .send(port)
            .unwrap(),
        404,
        "not_found",
    );
    assert_refused(
        &api("/api/messages", Some(&key), r#"{"bot":"helper"}"#)
            .send(port)
            .unwrap(),
        400,
        "invalid_request",
    );
    let bad_query = RawRequest::new("GET", "/api/messages?bot=..%2Fx")
        .header("Authorization", &format!("Bearer {key}"))
        .send(port)
        .unwrap();
    assert_refused(&bad_query, 400, "invalid_request");

    // No credential value in the server's log.
    let log = server.log_text();
    for secret in [&key, &machine_key, &first, &second, &other] {
        assert!(!log.contains(secret.as_str()), "{log}");
    }
}
