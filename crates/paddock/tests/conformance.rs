//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned with the
//! Node.js 22 it needs in `tests/conformance`, installed by `scripts/setup --dev`) against the
//! daemon's HTTP endpoint: every server scenario the suite lists, once at each protocol version
//! Paddock serves over HTTP that the scenario applies to (the suite speaks a different wire at
//! each: 2026-07-28 is stateless, with per-request `_meta`), and the extension scenarios once.
//! Every scenario must pass unless [`EXPECTED_FAILURES`] names it, or one of its checks, with a
//! reason; an entry that no longer matches a failure fails the test too, so the list stays
//! honest.
//!
//! The suite has no way to add a header to its requests and Paddock requires the bearer token,
//! so the suite talks to [`TokenProxy`], which adds `Authorization` and forwards everything
//! else byte for byte. Requests addressed to the proxy itself get the daemon's port in their
//! Host header; any other Host the suite sends (the DNS-rebinding scenario's) reaches the
//! daemon unchanged.
#![cfg(test)]

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use paddock_testkit::{DaemonHarness, McpHttp};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

/// The protocol versions Paddock serves over HTTP. A dated scenario runs at each of these that
/// its applicability tags name; a scenario tagged `extension` runs once, at the suite's choice.
const WIRES: [&str; 3] = ["2025-06-18", "2025-11-25", "2026-07-28"];
const EXTENSION: &str = "extension";

/// Hang guards only: a whole wire's run takes seconds.
const WIRE_DEADLINE: Duration = Duration::from_secs(600);
const SCENARIO_DEADLINE: Duration = Duration::from_secs(180);

/// `entry => reason,` lines as `(entry, reason)` pairs (a macro so that each stays one line).
macro_rules! expected_failures {
    ($($entry:literal => $reason:literal,)*) => {
        &[$(($entry, $reason)),*]
    };
}

/// The failures the test accepts, one line each: `scenario => reason` accepts every failing
/// check of that scenario at every wire it runs at, `scenario#check => reason` only the
/// failures of that check.
const EXPECTED_FAILURES: &[(&str, &str)] = expected_failures! {
    // Server features Paddock does not have (it advertises `tools` and `resources`), and
    // resource scenarios that read the suite's own fixture resources.
    "logging-set-level" => "logging/setLevel: Paddock does not advertise logging",
    "tools-call-with-logging" => "logging/setLevel: Paddock does not advertise logging",
    "completion-complete" => "completion/complete: Paddock does not advertise completions",
    "resources-read-text" => "reads the suite's fixture resource; Paddock's resources are its sessions' screenshots",
    "resources-read-binary" => "reads the suite's fixture resource; Paddock's resources are its sessions' screenshots",
    "resources-templates-read" => "reads the suite's fixture resource template; Paddock has no templates",
    "resources-subscribe" => "resources/subscribe: Paddock does not offer resource subscriptions (screenshots never change)",
    "resources-unsubscribe" => "resources/unsubscribe: Paddock does not offer resource subscriptions",
    "prompts-list" => "prompts/list: Paddock does not advertise prompts",
    "prompts-get-simple" => "prompts/get: Paddock does not advertise prompts",
    "prompts-get-with-args" => "prompts/get: Paddock does not advertise prompts",
    "prompts-get-embedded-resource" => "prompts/get: Paddock does not advertise prompts",
    "prompts-get-with-image" => "prompts/get: Paddock does not advertise prompts",
    "input-required-result-non-tool-request" => "prompts/get: Paddock does not advertise prompts",
    "caching#sep-2549-prompts-list-caching-hints" => "prompts/list: no prompts advertised",
    // The suite's own fixture tools (its "everything server"), which a real server does not have.
    "tools-call-simple-text" => "calls the suite's fixture tool test_simple_text",
    "tools-call-image" => "calls the suite's fixture tool test_image_content",
    "tools-call-audio" => "calls the suite's fixture tool test_audio_content",
    "tools-call-embedded-resource" => "calls the suite's fixture tool test_embedded_resource",
    "tools-call-mixed-content" => "calls the suite's fixture tool test_multiple_content_types",
    "tools-call-error" => "calls the suite's fixture tool test_error_handling",
    "tools-call-with-progress" => "calls the suite's fixture tool test_tool_with_progress",
    "tools-call-sampling" => "calls the suite's fixture tool test_sampling",
    "tools-call-elicitation" => "calls the suite's fixture tool test_elicitation",
    "elicitation-sep1034-defaults" => "calls the suite's fixture tool test_elicitation_sep1034_defaults",
    "elicitation-sep1330-enums" => "calls the suite's fixture tool test_elicitation_sep1330_enums",
    "json-schema-2020-12" => "looks for the suite's fixture tool json_schema_2020_12_tool",
    "http-custom-header-server-validation" => "needs a tool with x-mcp-header parameters; Paddock's have none",
    "input-required-result-basic-elicitation" => "calls the suite's fixture tool test_input_required_result_elicitation",
    "input-required-result-basic-sampling" => "calls the suite's fixture tool test_input_required_result_sampling",
    "input-required-result-basic-list-roots" => "calls the suite's fixture tool test_input_required_result_list_roots",
    "input-required-result-request-state" => "calls the suite's fixture tool test_input_required_result_request_state",
    "input-required-result-multiple-input-requests" => "calls the suite's fixture tool test_input_required_result_multiple_inputs",
    "input-required-result-multi-round" => "calls the suite's fixture tool test_input_required_result_multi_round",
    "input-required-result-tampered-state" => "calls the suite's fixture tool test_input_required_result_tampered_state",
    "input-required-result-result-type" => "calls the suite's fixture tool test_input_required_result_elicitation",
    "input-required-result-capability-check" => "calls the suite's fixture tool test_input_required_result_capabilities",
    "server-stateless#sep-2575-server-rejects-undeclared-capability" => "needs the suite's fixture tool test_missing_capability",
    "server-stateless#sep-2575-missing-capability-http-400" => "needs the suite's fixture tool test_missing_capability",
    "server-stateless#sep-2575-http-server-no-independent-requests-on-stream" => "needs the suite's fixture tool test_streaming_elicitation",
    "server-stateless#sep-2575-server-no-log-without-loglevel" => "needs the suite's fixture tool test_logging_tool",
    // The tasks extension, which Paddock neither implements nor advertises (these scenarios also
    // call the suite's fixture tools slow_compute, greet, failing_job, confirm_delete...).
    "tasks-lifecycle" => "tasks extension: not implemented",
    "tasks-capability-negotiation" => "tasks extension: not implemented",
    "tasks-wire-fields" => "tasks extension: not implemented",
    "tasks-request-state-removal" => "tasks extension: not implemented",
    "tasks-mrtr-input" => "tasks extension: not implemented",
    "tasks-request-headers" => "tasks extension: not implemented",
    "tasks-dispatch-and-envelope" => "tasks extension: not implemented",
    "tasks-required-task-error" => "tasks extension: not implemented",
    "tasks-mrtr-composition" => "tasks extension: not implemented",
    // Paddock bugs.
};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pinned suite and Node.js from `tests/conformance/node_modules`.
struct Suite {
    node: PathBuf,
    cli: PathBuf,
    /// The scenarios' working directory and HOME, and where their results and logs go.
    work: tempfile::TempDir,
}

impl Suite {
    fn installed() -> Self {
        let modules = repo().join("tests/conformance/node_modules");
        let node = modules.join(".bin/node");
        let cli = modules.join("@modelcontextprotocol/conformance/dist/index.js");
        assert!(
            node.exists() && cli.exists(),
            "the MCP conformance suite and its Node.js are not installed in {}\nhint: run \
             `scripts/setup --dev`",
            modules.display()
        );
        let work = tempfile::Builder::new()
            .prefix("paddock-conformance-")
            .tempdir()
            .unwrap();
        Self { node, cli, work }
    }

    fn dir(&self) -> &Path {
        self.work.path()
    }

    /// `node <suite> args…` with a clean environment, the pinned node first on PATH.
    fn command(&self, args: &[&str]) -> Command {
        let bin = self.node.parent().unwrap().to_owned();
        let path = std::env::join_paths(
            std::iter::once(bin).chain(
                std::env::var_os("PATH")
                    .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
                    .unwrap_or_default(),
            ),
        )
        .unwrap();
        let mut command = Command::new(&self.node);
        command
            .arg(&self.cli)
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.dir())
            .env("NO_COLOR", "1")
            .current_dir(self.dir())
            .stdin(Stdio::null());
        command
    }

    /// Runs the suite with `args`, its output in `log` (a file in the work directory);
    /// returns the exit status and the output.
    fn run(&self, args: &[&str], log: &str, within: Duration) -> (ExitStatus, String) {
        let log = self.dir().join(log);
        let file = File::create(&log).unwrap();
        let mut command = self.command(args);
        command
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .process_group(0);
        let description = format!("{command:?}");
        let mut child = KillOnDrop(
            command
                .spawn()
                .unwrap_or_else(|error| panic!("{description}: {error}")),
        );
        let Some(status) = child.wait_within(within) else {
            drop(child);
            panic!(
                "{description} was still running after {within:?} (hang guard); its output:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        };
        (status, std::fs::read_to_string(&log).unwrap_or_default())
    }

    /// `--version` of the suite and of its node.
    fn versions(&self) -> (String, String) {
        let (_, suite) = self.run(&["--version"], "version.log", SCENARIO_DEADLINE);
        let node = Command::new(&self.node)
            .arg("--version")
            .output()
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
            .unwrap_or_default();
        (suite.trim().to_owned(), node)
    }

    /// The server scenarios with their applicability tags (`list --server` prints
    /// `  - name [2025-06-18,2025-11-25]`).
    fn scenarios(&self) -> Vec<(String, Vec<String>)> {
        let (status, output) = self.run(&["list", "--server"], "list.log", SCENARIO_DEADLINE);
        assert!(status.success(), "conformance list --server: {output}");
        let scenarios: Vec<(String, Vec<String>)> = output
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("- "))
            .map(|entry| {
                let (name, tags) = entry.split_once(' ').unwrap_or((entry, ""));
                let tags = tags.trim().trim_start_matches('[').trim_end_matches(']');
                let tags = tags.split(',').map(|tag| tag.trim().to_owned());
                (
                    name.to_owned(),
                    tags.filter(|tag| !tag.is_empty()).collect(),
                )
            })
            .collect();
        assert!(
            scenarios
                .iter()
                .any(|(name, _)| name == "server-initialize"),
            "no server scenarios in: {output}"
        );
        scenarios
    }
}

/// A child in its own process group, killed with its group unless it has exited.
struct KillOnDrop(Child);

impl KillOnDrop {
    fn wait_within(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let pid = rustix::process::Pid::from_child(&self.0);
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            let _ = self.0.wait();
        }
    }
}

/// One check of a scenario's `checks.json`.
#[derive(Debug, Clone)]
struct Check {
    id: String,
    status: String,
    message: String,
}

/// One scenario run at one wire.
#[derive(Debug)]
struct ScenarioRun {
    scenario: String,
    wire: &'static str,
    checks: Vec<Check>,
}

impl ScenarioRun {
    fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|check| check.status == "FAILURE")
    }

    fn label(&self) -> String {
        format!("{}@{}", self.scenario, self.wire)
    }
}

fn check_of(value: &Value) -> Check {
    let text = |key: &str| value[key].as_str().unwrap_or_default().to_owned();
    let mut message = text("errorMessage");
    if message.is_empty() {
        message = match &value["details"] {
            Value::Null => text("description"),
            details => details.to_string(),
        };
    }
    if message.len() > 600 {
        let mut end = 600;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    Check {
        id: text("id"),
        status: text("status"),
        message,
    }
}

/// The results the suite wrote under `dir` (`server-<scenario>-<timestamp>/checks.json`) for
/// the `expected` scenarios. A scenario without results failed to run: it gets one failing
/// check named after it (as the suite records a scenario that threw), with its log lines.
fn read_results(dir: &Path, wire: &'static str, expected: &[&str], log: &str) -> Vec<ScenarioRun> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // The timestamp is `new Date().toISOString()` with `:` and `.` as `-`: 24 characters.
        let Some(scenario) = name
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().checked_sub(25)?))
        else {
            continue;
        };
        let checks = std::fs::read_to_string(entry.path().join("checks.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|value| {
                value
                    .as_array()
                    .map(|checks| checks.iter().map(check_of).collect())
            });
        found.push((scenario.to_owned(), checks));
    }
    let mut runs = Vec::new();
    for scenario in expected {
        let checks = found
            .iter()
            .find(|(name, _)| name == scenario)
            .and_then(|(_, checks)| checks.clone())
            .unwrap_or_else(|| {
                let said: Vec<&str> = log.lines().filter(|line| line.contains(scenario)).collect();
                vec![Check {
                    id: (*scenario).to_owned(),
                    status: "FAILURE".to_owned(),
                    message: format!(
                        "no results: the scenario did not run; log: {}",
                        said.join(" | ")
                    ),
                }]
            });
        runs.push(ScenarioRun {
            scenario: (*scenario).to_owned(),
            wire,
            checks,
        });
    }
    runs
}

/// Forwards the suite's HTTP requests to the daemon with `Authorization: Bearer <token>`
/// added, one request per connection (`Connection: close` both ways), answers streamed back
/// as they come.
struct TokenProxy {
    port: u16,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl TokenProxy {
    fn start(daemon_port: u16, token: &str) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let authorization = format!("Authorization: Bearer {token}\r\n");
        let acceptor = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let authorization = authorization.clone();
                    std::thread::spawn(move || {
                        let _ = forward(client, port, daemon_port, &authorization);
                    });
                }
            })
        };
        Self {
            port,
            stop,
            acceptor: Some(acceptor),
        }
    }
}

impl Drop for TokenProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor, which then sees the stop flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn forward(
    client: TcpStream,
    own_port: u16,
    daemon_port: u16,
    authorization: &str,
) -> std::io::Result<()> {
    client.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut received = Vec::new();
    let head_end = loop {
        if let Some(at) = received.windows(4).position(|window| window == b"\r\n\r\n") {
            break at;
        }
        let mut chunk = [0_u8; 8192];
        let read = (&client).read(&mut chunk)?;
        if read == 0 || received.len() > 1 << 20 {
            return Ok(());
        }
        received.extend_from_slice(&chunk[..read]);
    };
    client.set_read_timeout(None)?;
    let own = format!(":{own_port}");
    let mut head = Vec::with_capacity(head_end + 256);
    for (index, line) in received[..head_end]
        .split(|byte| *byte == b'\n')
        .enumerate()
    {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let (name, value) = match line.iter().position(|byte| *byte == b':') {
            Some(colon) if index > 0 => (
                String::from_utf8_lossy(&line[..colon])
                    .trim()
                    .to_ascii_lowercase(),
                String::from_utf8_lossy(&line[colon + 1..])
                    .trim()
                    .to_owned(),
            ),
            _ => (String::new(), String::new()),
        };
        match (name.as_str(), value.strip_suffix(&own)) {
            ("connection" | "keep-alive", _) => continue,
            ("host", Some(host)) => {
                head.extend_from_slice(format!("Host: {host}:{daemon_port}").as_bytes());
            }
            _ => head.extend_from_slice(line),
        }
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(authorization.as_bytes());
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    head.extend_from_slice(&received[head_end + 4..]);

    let upstream = TcpStream::connect(("127.0.0.1", daemon_port))?;
    (&upstream).write_all(&head)?;
    let uploader = {
        let (client, upstream) = (client.try_clone()?, upstream.try_clone()?);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut &client, &mut &upstream);
            // The client is gone (or sent all it will): nobody waits for more of the answer.
            let _ = upstream.shutdown(Shutdown::Both);
        })
    };
    let _ = std::io::copy(&mut &upstream, &mut &client);
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
    let _ = uploader.join();
    Ok(())
}

#[test]
fn official_conformance_suite_server_scenarios() {
    let suite = Suite::installed();
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    let proxy = TokenProxy::start(http.port, &http.token);
    let url = format!("http://127.0.0.1:{}/mcp", proxy.port);

    let (suite_version, node_version) = suite.versions();
    let scenarios = suite.scenarios();
    let names: BTreeSet<&str> = scenarios.iter().map(|(name, _)| name.as_str()).collect();

    let entries: Vec<(&str, Option<&str>, &str)> = EXPECTED_FAILURES
        .iter()
        .map(|(entry, reason)| {
            let (scenario, check) = match entry.split_once('#') {
                Some((scenario, check)) => (scenario, Some(check)),
                None => (*entry, None),
            };
            assert!(
                names.contains(scenario),
                "EXPECTED_FAILURES names `{scenario}`, which the suite does not list"
            );
            (scenario, check, *reason)
        })
        .collect();

    let mut runs = Vec::new();
    let mut exits = Vec::new();
    for wire in WIRES {
        let expected: Vec<&str> = scenarios
            .iter()
            .filter(|(_, tags)| tags.iter().any(|tag| tag == wire))
            .map(|(name, _)| name.as_str())
            .collect();
        let out = suite.dir().join(wire);
        let args = [
            "server",
            "--url",
            &url,
            "--suite",
            "all",
            "--spec-version",
            wire,
            "--output-dir",
            out.to_str().unwrap(),
        ];
        let (status, log) = suite.run(&args, &format!("{wire}.log"), WIRE_DEADLINE);
        exits.push(format!(
            "{wire}: {} scenarios, suite {status}",
            expected.len()
        ));
        runs.extend(read_results(&out, wire, &expected, &log));
    }
    let extensions: Vec<&str> = scenarios
        .iter()
        .filter(|(_, tags)| tags.iter().any(|tag| tag == EXTENSION))
        .map(|(name, _)| name.as_str())
        .collect();
    let out = suite.dir().join(EXTENSION);
    for scenario in &extensions {
        let args = [
            "server",
            "--url",
            &url,
            "--scenario",
            scenario,
            "--output-dir",
            out.to_str().unwrap(),
        ];
        let (_, log) = suite.run(&args, &format!("{scenario}.log"), SCENARIO_DEADLINE);
        runs.extend(read_results(&out, EXTENSION, &[scenario], &log));
    }
    exits.push(format!(
        "{EXTENSION}: {} scenarios, one run each",
        extensions.len()
    ));
    let not_run: Vec<&str> = scenarios
        .iter()
        .filter(|(_, tags)| {
            !tags
                .iter()
                .any(|tag| tag == EXTENSION || WIRES.contains(&tag.as_str()))
        })
        .map(|(name, _)| name.as_str())
        .collect();

    let mut used = vec![false; entries.len()];
    let mut lines = Vec::new();
    let mut unexpected = Vec::new();
    let (mut passing, mut listed) = (0, 0);
    for run in &runs {
        let mut reasons = BTreeSet::new();
        let mut surprises = Vec::new();
        for failure in run.failures() {
            let matched = entries.iter().position(|(scenario, check, _)| {
                *scenario == run.scenario && check.is_none_or(|check| check == failure.id)
            });
            match matched {
                Some(index) => {
                    used[index] = true;
                    reasons.insert(entries[index].2);
                }
                None => surprises.push(failure.clone()),
            }
        }
        let warnings: Vec<String> = run
            .checks
            .iter()
            .filter(|check| check.status == "WARNING")
            .map(|check| format!("warning {}: {}", check.id, check.message))
            .collect();
        let label = run.label();
        if !surprises.is_empty() {
            lines.push(format!("  FAIL   {label}"));
            for failure in &surprises {
                lines.push(format!("           {}: {}", failure.id, failure.message));
                unexpected.push(format!("{label} {}: {}", failure.id, failure.message));
            }
        } else if reasons.is_empty() {
            passing += 1;
            lines.push(format!("  pass   {label} ({} checks)", run.checks.len()));
        } else {
            listed += 1;
            let reasons: Vec<&str> = reasons.into_iter().collect();
            lines.push(format!(
                "  listed {label} ({} of {} checks fail): {}",
                run.failures().count(),
                run.checks.len(),
                reasons.join("; ")
            ));
        }
        for warning in warnings {
            lines.push(format!("           {warning}"));
        }
    }
    let stale: Vec<String> = entries
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|((scenario, check, reason), _)| match check {
            Some(check) => format!("{scenario}#{check} ({reason})"),
            None => format!("{scenario} ({reason})"),
        })
        .collect();

    println!(
        "MCP conformance suite {suite_version} on Node.js {node_version}, against {url} \
         (token proxy in front of the daemon on port {})",
        http.port
    );
    for exit in &exits {
        println!("  {exit}");
    }
    for line in &lines {
        println!("{line}");
    }
    if !not_run.is_empty() {
        println!(
            "  not run (no protocol version Paddock serves): {}",
            not_run.join(", ")
        );
    }
    println!(
        "conformance summary: {} scenario runs; {passing} pass, {listed} fail as \
         EXPECTED_FAILURES allows, {} fail unexpectedly; {} stale entries",
        runs.len(),
        runs.len() - passing - listed,
        stale.len()
    );

    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "conformance failures not in EXPECTED_FAILURES:\n  {}\nEXPECTED_FAILURES entries that \
         no longer fail (remove them):\n  {}",
        unexpected.join("\n  "),
        stale.join("\n  ")
    );
    drop(proxy);
}
