//! `paddock credentials`: `exec` hands the command a voucher and keeps the real key out of its
//! environment and out of every process's argv, the command reaches a real upstream through
//! the proxy, and `list`/`revoke` talk to the daemon.
#![cfg(test)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use paddock_testkit::{DEADLINE, DaemonHarness, wait_until};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const KEY: &str = "sk-exec-real-key-5b1f0c9e7d";

/// A std upstream on 127.0.0.1 that records each request head and answers `200 ok`.
struct Upstream {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads: Arc<Mutex<Vec<String>>> = Arc::default();
        let recorded = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                recorded.lock().unwrap().push(head);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nupstream!",
                );
            }
        });
        Self { port, heads }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

fn exec_args(upstream: &Upstream, key_from: &str, command: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "credentials",
        "exec",
        "--upstream",
        &format!("http://127.0.0.1:{}", upstream.port),
        "--key-from",
        key_from,
        "--header",
        "authorization",
        "--scheme",
        "Bearer",
        "--base-url-env",
        "MY_BASE_URL",
        "--voucher-env",
        "MY_VOUCHER",
        "--allow",
        "GET /v1/",
        "--",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    args.extend(command.iter().map(ToString::to_string));
    args
}

fn cmdlines_holding(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let path = entry.path().join("cmdline");
        if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        {
            found.push(path.display().to_string());
        }
    }
    found
}

/// The child prints its environment, calls the upstream through the proxy with its voucher
/// (bash's /dev/tcp: no HTTP client needed), then waits until the test has inspected every
/// process's argv.
const CHILD: &str = r#"
env
echo "--- response"
hostport=${MY_BASE_URL#http://}
exec 3<>"/dev/tcp/${hostport%:*}/${hostport#*:}"
printf 'GET /v1/models HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$hostport" "$MY_VOUCHER" >&3
cat <&3
echo
echo "--- end"
: > "$READY"
while [ ! -e "$GO" ]; do sleep 0.02; done
"#;

#[test]
fn exec_gives_the_command_a_voucher_and_never_the_key() {
    let upstream = Upstream::start();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    let ready = harness.root().join("ready");
    let go = harness.root().join("go");
    harness
        .set_env("UPSTREAM_KEY", KEY)
        .set_env("KEY_COPY", format!("prefix-{KEY}-suffix"))
        .set_env("UNRELATED", "kept")
        .set_env("READY", &ready)
        .set_env("GO", &go);
    let mut args = vec!["--log-level".to_owned(), "trace".to_owned()];
    args.extend(exec_args(
        &upstream,
        "env:UPSTREAM_KEY",
        &["bash", "-c", CHILD],
    ));
    let child = harness
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // While paddock, its proxy and the command are all alive: no argv anywhere holds the key.
    wait_until(DEADLINE, || ready.exists().then_some(())).unwrap();
    assert_eq!(cmdlines_holding(KEY), Vec::<String>::new());
    std::fs::write(&go, "").unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let (env, response) = stdout.split_once("--- response").unwrap();
    let var = |name: &str| {
        env.lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
            .map(ToOwned::to_owned)
    };
    let voucher = var("MY_VOUCHER").expect("the voucher variable");
    assert!(
        voucher.starts_with("vch_") && voucher.len() == 47,
        "{voucher}"
    );
    let proxy = var("PADDOCK_PROXY_URL").unwrap();
    assert!(proxy.starts_with("http://127.0.0.1:"), "{proxy}");
    assert_eq!(var("MY_BASE_URL").as_deref(), Some(proxy.as_str()));
    let token_file = var("PADDOCK_PROXY_TOKEN_FILE").unwrap();
    assert!(token_file.contains("/credentials/exec-"), "{token_file}");
    assert_eq!(var("UNRELATED").as_deref(), Some("kept"));
    assert_eq!(var("UPSTREAM_KEY"), None);
    assert_eq!(
        var("KEY_COPY"),
        None,
        "a copy of the key under another name"
    );
    assert!(
        !stdout.contains(KEY),
        "the key reached the command:\n{stdout}"
    );

    // The command reached the upstream through the proxy with only its voucher.
    assert!(response.contains("HTTP/1.1 200 OK"), "{response}");
    assert!(response.contains("upstream!"), "{response}");
    let heads = upstream.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let head = heads[0].to_ascii_lowercase();
    assert!(head.starts_with("get /v1/models http/1.1"), "{head}");
    assert!(head.contains(&format!(
        "authorization: bearer {}",
        KEY.to_ascii_lowercase()
    )));
    assert!(head.contains("x-agent-id: exec-"), "{head}");
    assert!(
        head.contains("x-agent-active-capabilities: get /v1/"),
        "{head}"
    );
    assert!(!heads[0].contains(&voucher), "the upstream saw the voucher");

    // Trace-level logs name neither secret; the voucher file is gone with the command.
    assert!(stderr.contains("credential proxy listening"), "{stderr}");
    assert!(!stderr.contains(KEY), "{stderr}");
    assert!(!stderr.contains(&voucher[4..]), "{stderr}");
    assert!(!Path::new(&token_file).exists());
}

#[test]
fn exec_passes_stdin_through_and_returns_the_exit_code() {
    let upstream = Upstream::start();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("UPSTREAM_KEY", KEY);
    let args = exec_args(
        &upstream,
        "env:UPSTREAM_KEY",
        &[
            "sh",
            "-c",
            "read line; echo \"got $line\"; echo err >&2; exit 7",
        ],
    );
    let mut child = harness
        .command(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "got hello\n");
    assert!(String::from_utf8_lossy(&output.stderr).contains("err\n"));

    let killed = harness
        .run(exec_args(
            &upstream,
            "env:UPSTREAM_KEY",
            &["sh", "-c", "kill -TERM $$"],
        ))
        .unwrap();
    assert_eq!(killed.code(), Some(128 + 15));
    let missing = harness
        .run(exec_args(
            &upstream,
            "env:UPSTREAM_KEY",
            &["/nonexistent/tool"],
        ))
        .unwrap();
    assert_eq!(missing.code(), Some(127));
    assert!(
        missing
            .stderr()
            .contains("could not start `/nonexistent/tool`")
    );
}

#[test]
fn key_files_must_be_private_and_there_is_no_key_flag() {
    use std::os::unix::fs::PermissionsExt as _;

    let upstream = Upstream::start();
    let harness = DaemonHarness::new(BIN).unwrap();
    let key_file = harness.root().join("key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let source = format!("file:{}", key_file.display());
    let open = harness
        .run(exec_args(&upstream, &source, &["true"]))
        .unwrap();
    assert_eq!(open.code(), Some(1));
    assert!(open.stderr().contains("has mode 0644"), "{}", open.stderr());
    assert!(open.stderr().contains("hint: "), "{}", open.stderr());
    assert!(!open.stderr().contains(KEY));

    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let script =
        "[ \"${MY_VOUCHER#vch_}\" != \"$MY_VOUCHER\" ] && [ -z \"$(env | grep -F sk-exec)\" ]";
    let private = harness
        .run(exec_args(&upstream, &source, &["sh", "-c", script]))
        .unwrap();
    assert_eq!(private.code(), Some(0), "{}", private.stderr());

    let keychain = harness
        .run(exec_args(&upstream, "keychain:paddock", &["true"]))
        .unwrap();
    assert_eq!(keychain.code(), Some(1));
    assert!(
        keychain
            .stderr()
            .contains("the OS keychain is not available on linux"),
        "{}",
        keychain.stderr()
    );

    let mut flag = exec_args(&upstream, "env:UPSTREAM_KEY", &["true"]);
    flag.insert(2, "--api-key".into());
    flag.insert(3, KEY.into());
    let refused = harness.run(flag).unwrap();
    assert_eq!(refused.code(), Some(2), "{}", refused.stderr());
}

#[test]
fn list_and_revoke_talk_to_the_daemon() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let not_running = harness.run(["credentials", "list"]).unwrap();
    assert_eq!(not_running.code(), Some(3));
    assert!(
        not_running
            .stderr()
            .contains("hint: start it with `paddock daemon start`")
    );

    harness.start_detached(&[]).unwrap();
    let listed = harness
        .run(["credentials", "list"])
        .unwrap()
        .success()
        .unwrap();
    assert_eq!(listed.stdout(), "no live vouchers\n");
    let json = harness
        .run(["credentials", "list", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&json.stdout()).unwrap();
    assert_eq!(value, serde_json::json!({ "vouchers": [] }));

    let unknown = harness
        .run(["credentials", "revoke", "v-000000000000"])
        .unwrap();
    assert_eq!(unknown.code(), Some(1));
    assert!(
        unknown
            .stderr()
            .contains("no live voucher `v-000000000000`"),
        "{}",
        unknown.stderr()
    );
    assert!(
        unknown
            .stderr()
            .contains("hint: `paddock credentials list`")
    );
    let launch = harness
        .run(["credentials", "revoke", "--launch", "nobody"])
        .unwrap();
    assert_eq!(launch.code(), Some(1));
    assert!(
        launch
            .stderr()
            .contains("launch `nobody` holds no live vouchers")
    );
    let neither = harness.run(["credentials", "revoke"]).unwrap();
    assert_eq!(neither.code(), Some(2));
}

/// The real Claude Code CLI (npm, installed by `scripts/setup --dev`) completes a turn against
/// the scripted Anthropic server holding only a voucher: the server sees the real key in
/// `x-api-key` and the stamps, never the voucher.
#[test]
fn the_real_claude_cli_completes_a_turn_with_only_a_voucher() {
    let claude =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules/.bin/claude");
    assert!(
        claude.exists(),
        "`{}` is missing; run `scripts/setup --dev`",
        claude.display()
    );
    let model =
        paddock_testkit::model::ScriptedModel::start(vec![paddock_testkit::model::Turn::streamed(
            "Hello from the scripted model",
        )])
        .unwrap();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness
        .set_env("ANTHROPIC_API_KEY", KEY)
        .set_env("DISABLE_AUTOUPDATER", "1")
        .set_env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    let claude = claude.display().to_string();
    let output = harness
        .run([
            "credentials",
            "exec",
            "--upstream",
            &model.base_url(),
            "--key-from",
            "env:ANTHROPIC_API_KEY",
            "--header",
            "x-api-key",
            "--base-url-env",
            "ANTHROPIC_BASE_URL",
            "--voucher-env",
            "ANTHROPIC_API_KEY",
            "--allow",
            "POST /v1/messages",
            "--",
            &claude,
            "-p",
            "Say hello",
        ])
        .unwrap();
    assert_eq!(output.code(), Some(0), "{output}");
    assert!(
        output.stdout().contains("Hello from the scripted model"),
        "{output}"
    );
    let requests = model.requests();
    assert!(
        requests.iter().any(|request| request.turn == Some(0)),
        "{requests:?}"
    );
    for request in &requests {
        assert_eq!(request.header("x-api-key"), Some(KEY), "{request:?}");
        assert!(
            request
                .header("x-agent-id")
                .is_some_and(|id| id.starts_with("exec-")),
            "{request:?}"
        );
        assert_eq!(
            request.header("x-agent-active-capabilities"),
            Some("POST /v1/messages")
        );
        assert!(
            !request
                .headers
                .iter()
                .any(|(_, value)| value.contains("vch_")),
            "the model server saw a voucher: {request:?}"
        );
    }
}
