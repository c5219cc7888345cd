//! Every benchmark in smoke mode: the built `paddock-bench` performs each benchmark's measured
//! operation once against Paddock alone (`--smoke`: no peer, no load generator, no timings)
//! and checks the answer, so a broken benchmark fails here instead of rotting until somebody
//! runs it. Each run gets a private world — home, temporary, runtime, state and socket
//! directories in one temporary root, a scrubbed environment — and must leave no process
//! behind: anything still running with that root in its environment or arguments once the
//! benchmark exited is killed and fails the test.
//!
//! `android` and `tasks` are the benchmarks whose smoke runs start their peers too: mobile-mcp
//! and the Claude Code CLI must be installed (`scripts/setup --dev` does it), or the run fails
//! saying how to install them.
//!
//! The daemon benchmarks need the `paddock` binary beside `paddock-bench`. `cargo test
//! --workspace` has built it; under `cargo test -p paddock-bench` it is built here when missing
//! (and used as it is when present: rebuild it after changing the daemon).
#![cfg(test)]

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use paddock_testkit::wait_until;

const BENCH: &str = env!("CARGO_BIN_EXE_paddock-bench");
/// A smoke run still going after this hangs (the slowest, a real agent CLI or Chromium on a
/// busy machine, takes seconds).
const WITHIN: Duration = Duration::from_secs(300);
/// How long the processes a benchmark started may take to go once it exited.
const CLEANUP: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

/// The `paddock` binary beside `paddock-bench`, built with the same profile when missing.
fn paddock() -> &'static Path {
    static PADDOCK: OnceLock<PathBuf> = OnceLock::new();
    PADDOCK.get_or_init(|| {
        let binary = Path::new(BENCH).with_file_name("paddock");
        if binary.exists() {
            return binary;
        }
        let profile_dir = Path::new(BENCH)
            .parent()
            .and_then(Path::file_name)
            .and_then(|name| name.to_str())
            .unwrap_or("debug");
        let profile = if profile_dir == "debug" {
            "dev"
        } else {
            profile_dir
        };
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "-p",
                "paddock",
                "--bin",
                "paddock",
                "--profile",
                profile,
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "building the paddock binary failed");
        assert!(
            binary.exists(),
            "cargo built paddock but not at `{}`; build it there (cargo build -p paddock)",
            binary.display()
        );
        binary
    })
}

/// A private root for one benchmark run.
struct World {
    root: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let root = tempfile::Builder::new()
            .prefix("paddock-bench-smoke-")
            .tempdir()
            .unwrap();
        for dir in ["home", "tmp", "state"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        // The daemon refuses socket and runtime directories that others could enter.
        for dir in ["run", "aux"] {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(root.path().join(dir))
                .unwrap();
        }
        Self { root }
    }

    fn command(&self, args: &[&str]) -> Command {
        let root = self.root.path();
        let mut command = Command::new(BENCH);
        command
            .arg("--smoke")
            .args(args)
            .env_clear()
            .env("HOME", root.join("home"))
            .env("TMPDIR", root.join("tmp"))
            .env("XDG_RUNTIME_DIR", root.join("run"))
            .env("PADDOCK_STATE_DIR", root.join("state"))
            .env("PADDOCK_AUX_SOCKET_DIR", root.join("aux"))
            .env("NO_COLOR", "1")
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in ["PATH", "LANG"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command
    }

    /// Processes other than this test whose environment or arguments name the root.
    fn leftovers(&self) -> Vec<(u32, String)> {
        let root = self.root.path().to_string_lossy().into_owned();
        let me = std::process::id();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me)
            .filter_map(|pid| {
                let read = |file: &str| std::fs::read(format!("/proc/{pid}/{file}")).ok();
                let cmdline = read("cmdline")?;
                let environ = read("environ").unwrap_or_default();
                let names_root = |bytes: &[u8]| String::from_utf8_lossy(bytes).contains(&root);
                (names_root(&cmdline) || names_root(&environ)).then(|| {
                    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                    (pid, cmdline)
                })
            })
            .collect()
    }
}

/// What a finished smoke run printed.
struct Run {
    description: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\nstatus: {}\n--- stdout\n{}\n--- stderr\n{}",
            self.description, self.status, self.stdout, self.stderr
        )
    }
}

fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Waits for `child` until `within` passes; kills it then.
fn wait_within(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(POLL);
    }
}

fn kill(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// Runs `paddock-bench --smoke args…` in a private world and checks that it succeeded, printed
/// only its smoke line, and that the line names every `expected` text; and that it left no
/// process behind.
fn smoke(args: &[&str], expected: &[&str]) {
    let world = World::new();
    let mut command = world.command(args);
    let description = format!("{command:?}");
    let mut child = command.spawn().unwrap();
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_within(&mut child, WITHIN);
    let leftovers = wait_until(CLEANUP, || {
        let leftovers = world.leftovers();
        leftovers.is_empty().then_some(())
    })
    .map_err(|_| world.leftovers());
    if let Err(leftovers) = &leftovers {
        for (pid, _) in leftovers {
            kill(*pid);
        }
    }
    // After the clean-up: a process left behind may hold the pipes open.
    let (stdout, stderr) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    let Some(status) = status else {
        panic!(
            "{description} did not finish within {WITHIN:?}: it hangs\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
    };
    let run = Run {
        description,
        status,
        stdout,
        stderr,
    };
    assert!(run.status.success(), "the smoke run failed:\n{run}");
    assert!(
        leftovers.is_ok(),
        "the smoke run left processes behind (now killed): {leftovers:?}\n{run}"
    );
    assert!(
        !run.stdout.trim().is_empty() && run.stdout.lines().all(|line| line.starts_with("smoke ")),
        "a smoke run prints its smoke line and nothing else (no timings):\n{run}"
    );
    for text in expected {
        assert!(
            run.stdout.contains(text),
            "no `{text}` in the output:\n{run}"
        );
    }
}

fn paddock_arg() -> String {
    paddock().to_string_lossy().into_owned()
}

#[test]
fn ingress_answers_the_authenticated_heartbeat() {
    smoke(
        &["ingress", "--paddock", &paddock_arg()],
        &[
            "smoke ingress: ok:",
            r#"authenticated GET /heartbeat answered 200 {"status":"ok"}"#,
            "without the token 401",
        ],
    );
}

#[test]
fn mcp_tools_call_returns_the_devices() {
    smoke(
        &["mcp", "--paddock", &paddock_arg()],
        &[
            "smoke mcp: ok:",
            r#"tools/call `listDevices` returned {"devices":[]}"#,
        ],
    );
}

#[test]
fn fleet_lists_a_joined_daemons_devices_and_commands_reach_the_daemons() {
    smoke(
        &["fleet", "--paddock", &paddock_arg()],
        &[
            "smoke fleet: ok:",
            "list_devices through the server listed a joined daemon's two devices",
            "3 more simulated daemons joined and each answered a device_action",
        ],
    );
}

#[test]
fn devices_observe_returns_the_pages_text() {
    smoke(
        &["devices", "--paddock", &paddock_arg()],
        &[
            "smoke devices: ok:",
            "provisionDevice launched a device cold",
            "getWeb acquired a warm one",
            "observe returned the page's text (`Accounts`, `user1@example.com`)",
            "observe+screenshot a screenshot (image/",
        ],
    );
}

#[test]
fn android_observes_and_taps_the_fake_phone_on_both_servers() {
    smoke(
        &["android", "--paddock", &paddock_arg()],
        &[
            "smoke android: ok:",
            "paddock observe (http and stdio) and mobile-mcp's element list (mobilecli and legacy robot) showed the sign-in screen (`Sign in`)",
            "answered and reached the phone (input tap ",
        ],
    );
}

#[test]
fn agents_driver_round_trips_a_command_through_the_fake_cli() {
    smoke(
        &["agents-driver"],
        &[
            "smoke agents-driver: ok:",
            "one command reached the fake CLI's stdin and its answer came back as a text delta and a completed turn",
        ],
    );
}

#[test]
fn agents_host_starts_a_hosted_cli() {
    smoke(
        &["agents-host", "--paddock", &paddock_arg()],
        &[
            "smoke agents-host: ok:",
            "agents/open started the CLI (it stamped its start), the session was listed and stopped",
        ],
    );
}

#[test]
fn tasks_reach_the_model_and_a_plan_runs_every_step() {
    smoke(
        &["tasks", "--paddock", &paddock_arg()],
        &[
            "smoke tasks: ok:",
            "runTask's agent reached the model with its goal and the task completed with the scripted answer",
            "the CLI started directly reached it too and printed the answer (with the task's MCP server and without one)",
            "executePlan ran 20 steps ok and as many separate inputText calls succeeded",
        ],
    );
}

fn agents_backend(runtime: &str) {
    smoke(
        &["agents-backends", "--runtime", runtime],
        &[
            "smoke agents-backends: ok:",
            &format!(
                "{runtime} answered `one two three four five` then `six seven eight nine ten`"
            ),
        ],
    );
}

#[test]
fn agents_backends_claude_answers_both_turns() {
    agents_backend("claude");
}

#[test]
fn agents_backends_codex_answers_both_turns() {
    agents_backend("codex");
}

#[test]
fn agents_backends_opencode_answers_both_turns() {
    agents_backend("opencode");
}

#[test]
fn agents_backends_pi_answers_both_turns() {
    agents_backend("pi");
}

#[test]
fn agents_backends_acp_answers_both_turns() {
    agents_backend("acp");
}

#[test]
fn proxy_swaps_the_key_for_an_http_upstream() {
    smoke(
        &["proxy", "--upstream", "http"],
        &[
            "smoke proxy: ok:",
            "to the http upstream (plain HTTP/1.1)",
            "the upstream saw the real key, not the voucher",
        ],
    );
}

#[test]
fn proxy_swaps_the_key_for_an_https_upstream() {
    smoke(
        &["proxy", "--upstream", "https"],
        &[
            "smoke proxy: ok:",
            "to the https upstream (TLS, HTTP/1.1 by ALPN)",
            "the upstream saw the real key, not the voucher",
        ],
    );
}

#[test]
fn proxy_swaps_the_key_for_an_https_upstream_over_http2() {
    smoke(
        &["proxy", "--upstream", "https-h2"],
        &[
            "smoke proxy: ok:",
            "to the https upstream (TLS, HTTP/2 by ALPN)",
            "the upstream saw the real key, not the voucher",
        ],
    );
}

#[test]
fn pii_redacts_the_card() {
    smoke(
        &["pii"],
        &[
            "smoke pii: ok:",
            "the default pipeline redacted the card",
            "(bank-cards triggered)",
            "adversarial inputs at 4 KiB",
        ],
    );
}
