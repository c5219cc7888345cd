//! The error surfaces people and programs read, as snapshots: what the CLI prints (message and
//! `hint:` line, exit code) for the failures a user meets, and the ingress's refusals (status,
//! the headers that matter, body). Temporary paths, ports and ids are filtered out.
#![cfg(test)]

use paddock_testkit::{CommandOutput, DaemonHarness, RawRequest};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

/// A failed command as its user sees it.
fn shown(output: &CommandOutput) -> String {
    let stdout = output.stdout();
    format!(
        "exit: {}\n{}{}",
        output
            .code()
            .map_or_else(|| "signal".to_owned(), |code| code.to_string()),
        if stdout.is_empty() {
            String::new()
        } else {
            format!("stdout: {stdout}")
        },
        output.stderr()
    )
}

fn settings(harness: &DaemonHarness) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(
        &regex_escape(&harness.root().display().to_string()),
        "[ROOT]",
    );
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings.add_filter(r"daemon-[0-9a-f]{12}", "daemon-[SUFFIX]");
    settings.add_filter(r"v-[0-9a-f]{12}", "v-[ID]");
    settings.add_filter(r"uid \d+", "uid [UID]");
    settings.set_prepend_module_to_snapshot(false);
    settings
}

/// `text` as a regex matching itself.
fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[test]
fn cli_errors_say_what_happened_and_what_to_do() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let key_file = harness.root().join("key");
    std::fs::write(&key_file, "sk-test-key\n").unwrap();
    std::fs::set_permissions(
        &key_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let key_source = format!("file:{}", key_file.display());
    let exec = |source: &str| {
        vec![
            "credentials".to_owned(),
            "exec".into(),
            "--upstream".into(),
            "http://127.0.0.1:9".into(),
            "--key-from".into(),
            source.to_owned(),
            "--header".into(),
            "x-api-key".into(),
            "--allow".into(),
            "POST /v1/messages".into(),
            "--".into(),
            "true".into(),
        ]
    };

    let mut cases: Vec<(&str, CommandOutput)> = vec![
        (
            "daemon not running",
            harness.run(["credentials", "list"]).unwrap(),
        ),
        (
            "status of no daemon",
            harness.run(["daemon", "status"]).unwrap(),
        ),
        (
            "pii without a bot",
            harness.run_with_stdin(["pii", "redact"], b"x").unwrap(),
        ),
        (
            "an invalid log level",
            harness
                .run(["--log-level", "info,a=b=c", "daemon", "status"])
                .unwrap(),
        ),
        (
            "a key file others can read",
            harness.run(exec(&key_source)).unwrap(),
        ),
        (
            "no keychain on this platform",
            harness.run(exec("keychain:paddock")).unwrap(),
        ),
        (
            "an unset key variable",
            harness.run(exec("env:PADDOCK_TEST_NO_SUCH_KEY")).unwrap(),
        ),
    ];
    harness.start_detached(&[]).unwrap();
    cases.push((
        "revoking an unknown voucher",
        harness
            .run(["credentials", "revoke", "v-000000000000"])
            .unwrap(),
    ));
    cases.push((
        "deleting an unknown filter",
        harness
            .run(["pii", "delete", "plugin-9", "--bot", "helper"])
            .unwrap(),
    ));
    cases.push((
        "a playground text over its limit",
        harness
            .run_with_stdin(["pii", "test", "--bot", "helper"], &[b'x'; 1025])
            .unwrap(),
    ));
    cases.push((
        "warming an Android device without an AVD",
        harness
            .run(["devices", "warm", "1", "--platform", "android"])
            .unwrap(),
    ));
    cases.push((
        "warming an unknown platform",
        harness
            .run(["devices", "warm", "1", "--platform", "ios"])
            .unwrap(),
    ));
    let report: String = cases
        .iter()
        .map(|(name, output)| {
            assert_ne!(output.code(), Some(0), "{name}: {output}");
            format!("## {name}\n{}\n", shown(output))
        })
        .collect();
    settings(&harness).bind(|| insta::assert_snapshot!("cli_errors", report));
}

#[test]
fn ingress_refusals_have_fixed_shapes() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let status = harness.start_detached(&[]).unwrap();
    let port = paddock_testkit::http_port(&status).unwrap();
    let token = harness.token().unwrap();
    let cases = [
        ("no credentials", RawRequest::get("/heartbeat")),
        (
            "a wrong token",
            RawRequest::get("/heartbeat").bearer("not-the-token"),
        ),
        (
            "a foreign Host",
            RawRequest::get("/heartbeat")
                .host("evil.example")
                .bearer(&token),
        ),
        (
            "a foreign Origin",
            RawRequest::get("/heartbeat")
                .header("Origin", "https://evil.example")
                .bearer(&token),
        ),
        ("an unknown path", RawRequest::get("/nope").bearer(&token)),
        (
            "a body that is not JSON",
            RawRequest::new("POST", "/mcp")
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .bearer(&token)
                .body("not json"),
        ),
    ];
    let report: String = cases
        .into_iter()
        .map(|(name, request)| {
            let response = request.send(port).unwrap();
            let mut headers: Vec<String> = response
                .headers
                .iter()
                .filter(|(name, _)| {
                    ["content-type", "www-authenticate", "retry-after"]
                        .contains(&name.to_ascii_lowercase().as_str())
                })
                .map(|(name, value)| format!("{}: {value}", name.to_ascii_lowercase()))
                .collect();
            headers.sort();
            format!(
                "## {name}\n{}\n{}\n{}\n",
                response.status,
                headers.join("\n"),
                response.body
            )
        })
        .collect();
    settings(&harness).bind(|| insta::assert_snapshot!("ingress_refusals", report));
}
