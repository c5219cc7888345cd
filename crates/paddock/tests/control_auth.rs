//! The control socket is not an open door for every process of the owner's uid: without the
//! token (which the sandbox hides from agents) a connection gets only `daemon/status`, and a
//! connection that proves itself with a launch's voucher gets only that session's own methods.
//! Spoken over raw sockets, as an agent would.
#![cfg(test)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use paddock_testkit::DaemonHarness;
use paddock_testkit::model::{ScriptedModel, Turn};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

/// One raw control connection.
struct Raw {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Raw {
    fn connect(socket: &Path) -> Self {
        let stream = UnixStream::connect(socket).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Self {
            writer: stream.try_clone().unwrap(),
            reader: BufReader::new(stream),
        }
    }

    /// Sends one frame and reads one answer; `None` when the daemon closed the connection.
    fn exchange(&mut self, frame: &Value) -> Option<Value> {
        let mut line = frame.to_string();
        line.push('\n');
        if self.writer.write_all(line.as_bytes()).is_err() {
            return None;
        }
        let mut answer = String::new();
        match self.reader.read_line(&mut answer) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&answer).unwrap()),
        }
    }
}

fn call(id: u64, method: &str, params: Value) -> Value {
    json!({ "id": id, "method": method, "params": params })
}

#[test]
fn without_the_token_a_connection_gets_only_the_status() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let status = harness.start_detached(&[]).unwrap();
    let socket = harness.paths().socket;

    let mut anonymous = Raw::connect(&socket);
    for (id, method, params) in [
        (1, "credentials/list", Value::Null),
        (
            2,
            "pii/redact",
            json!({ "bot": "default", "text": "4111 1111 1111 1111" }),
        ),
        (3, "agents/list", Value::Null),
        (4, "devices/list", Value::Null),
        (5, "mcp/connect", json!({ "session_id": "s1" })),
        (6, "daemon/stop", Value::Null),
    ] {
        let frame = if params.is_null() {
            json!({ "id": id, "method": method })
        } else {
            call(id, method, params)
        };
        let answer = anonymous
            .exchange(&frame)
            .expect("the connection stays open");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(
            answer["error"]["code"], "unauthenticated",
            "{method}: {answer}"
        );
    }
    let ok = anonymous
        .exchange(&json!({ "id": 7, "method": "daemon/status" }))
        .unwrap();
    assert_eq!(ok["result"]["pid"], status.pid, "{ok}");
    // A proof that is not the first frame is refused.
    let late = anonymous
        .exchange(&call(8, "auth/hello", json!({ "token": "x" })))
        .unwrap();
    assert_eq!(late["error"]["code"], "invalid_request", "{late}");

    // A wrong token is refused and ends the connection.
    let mut guesser = Raw::connect(&socket);
    let wrong = guesser
        .exchange(&call(1, "auth/hello", json!({ "token": "not-the-token" })))
        .unwrap();
    assert_eq!(wrong["error"]["code"], "unauthenticated", "{wrong}");
    assert!(
        guesser
            .exchange(&json!({ "id": 2, "method": "daemon/status" }))
            .is_none(),
        "the connection is closed after a wrong proof"
    );

    // The daemon is still running and serving its owner.
    let mut owner = Raw::connect(&socket);
    let token = harness.token().unwrap();
    let hello = owner
        .exchange(&call(1, "auth/hello", json!({ "token": token })))
        .unwrap();
    assert_eq!(hello["result"]["role"], "owner", "{hello}");
    let listed = owner
        .exchange(&json!({ "id": 2, "method": "credentials/list" }))
        .unwrap();
    assert!(listed["result"]["vouchers"].is_array(), "{listed}");
    assert!(!hello.to_string().contains(&token));
}

/// The voucher file of launch `id`, as the agent finds it through `PADDOCK_PROXY_TOKEN_FILE`.
fn voucher_of(state: &Path, id: &str) -> String {
    let root = state.join("agents").join("launches").join(id);
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                pending.push(path);
            } else if path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("voucher-"))
            {
                return std::fs::read_to_string(path).unwrap().trim().to_owned();
            }
        }
    }
    panic!("no voucher file under {}", root.display());
}

#[test]
fn a_voucher_proves_one_session_and_reaches_only_its_own_bot() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness
        .with_agent_clis()
        .unwrap()
        .set_env("TEST_MODEL_KEY", "sk-ant-auth-test");
    let model = ScriptedModel::start(vec![Turn::text("ok")]).unwrap();
    let started = harness
        .run([
            "agent",
            "start",
            "--bot",
            "helper",
            "--upstream",
            &model.base_url(),
            "--key-from",
            "env:TEST_MODEL_KEY",
        ])
        .unwrap()
        .success()
        .unwrap();
    let id = started
        .stdout()
        .split_whitespace()
        .last()
        .unwrap()
        .to_owned();
    let state = PathBuf::from(
        harness
            .client_env_vars()
            .into_iter()
            .find(|(name, _)| name == "PADDOCK_STATE_DIR")
            .unwrap()
            .1,
    );
    let voucher = voucher_of(&state, &id);
    assert!(voucher.starts_with("vch_"));

    let mut agent = Raw::connect(&harness.paths().socket);
    let hello = agent
        .exchange(&call(1, "auth/hello", json!({ "voucher": voucher })))
        .unwrap();
    assert_eq!(hello["result"]["role"], "session", "{hello}");
    assert_eq!(hello["result"]["session"], id.as_str(), "{hello}");
    assert_eq!(hello["result"]["bot"], "helper", "{hello}");
    let own = agent
        .exchange(&call(2, "pii/list", json!({ "bot": "helper" })))
        .unwrap();
    assert!(own["result"]["filters"].is_array(), "{own}");
    for (n, method, params) in [
        (3, "pii/list", json!({ "bot": "default" })),
        (
            4,
            "pii/delete",
            json!({ "bot": "helper", "filterId": "keys" }),
        ),
        (
            5,
            "pii/setEnabled",
            json!({ "bot": "helper", "filterId": "keys", "enabled": false }),
        ),
        (6, "credentials/revoke", json!({ "launch": id })),
        (7, "agents/stop", json!({ "id": id })),
    ] {
        let answer = agent.exchange(&call(n, method, params)).unwrap();
        assert_eq!(answer["error"]["code"], "forbidden", "{method}: {answer}");
    }
    for method in ["agents/list", "credentials/list", "devices/list"] {
        let answer = agent
            .exchange(&json!({ "id": 9, "method": method }))
            .unwrap();
        assert_eq!(answer["error"]["code"], "forbidden", "{method}: {answer}");
    }
    // Once the session is gone its voucher proves nothing.
    harness
        .run(["agent", "stop", &id])
        .unwrap()
        .success()
        .unwrap();
    let mut late = Raw::connect(&harness.paths().socket);
    let refused = late
        .exchange(&call(1, "auth/hello", json!({ "voucher": voucher })))
        .unwrap();
    assert_eq!(refused["error"]["code"], "unauthenticated", "{refused}");
}
