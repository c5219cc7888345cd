//! The agent sandbox, tested the way an attacker would use a confined agent: `paddock
//! sandbox-exec` directly (a secret outside the policy, an allowed file, a unix socket outside
//! the policy, the daemon's control socket, as root and as an ordinary user), and the real
//! Claude Code CLI launched by the agent driver with the sandbox on, told by the scripted model
//! to `cat` a key file, a daemon-style token file and a file in Paddock's state directory, and
//! to write in its working directory.
#![cfg(test)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use paddock_agents::*;
use paddock_testkit::DaemonHarness;
use paddock_testkit::model::{ScriptedModel, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

/// The system directories an agent may read and execute, as the driver passes them.
fn system_exec_args() -> Vec<String> {
    paddock_agents::sandbox::SYSTEM_EXEC
        .iter()
        .flat_map(|dir| ["--exec".to_owned(), (*dir).to_owned()])
        .collect()
}

/// The system part of the policy the driver passes: programs, configuration and kernel
/// interfaces, devices.
fn system_args() -> Vec<String> {
    let mut args = system_exec_args();
    for dir in paddock_agents::sandbox::SYSTEM_READ {
        args.extend(["--read".to_owned(), (*dir).to_owned()]);
    }
    for dir in paddock_agents::sandbox::SYSTEM_WRITE {
        args.extend(["--write".to_owned(), (*dir).to_owned()]);
    }
    args
}

/// `paddock sandbox-exec <policy> -- <program…>`, run as this (the tests') user.
fn sandbox_exec(policy: &[String], program: &[&str]) -> std::process::Output {
    std::process::Command::new(BIN)
        .arg("sandbox-exec")
        .args(policy)
        .arg("--")
        .args(program)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A private file holding `content`.
fn secret_file(path: &Path, content: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn sandbox_exec_denies_a_secret_and_reads_an_allowed_file() {
    let root = tempfile::tempdir().unwrap();
    let secret = root.path().join("keys/anthropic.key");
    secret_file(&secret, "sk-ant-sandbox-exec-secret");
    let allowed = root.path().join("allowed/notes.txt");
    std::fs::create_dir_all(allowed.parent().unwrap()).unwrap();
    std::fs::write(&allowed, "public notes").unwrap();
    let work = root.path().join("work");
    std::fs::create_dir(&work).unwrap();

    // Unconfined, this user reads the secret: the denial below is the sandbox's.
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "sk-ant-sandbox-exec-secret"
    );
    let mut policy = system_args();
    policy.extend([
        "--read".to_owned(),
        allowed.parent().unwrap().display().to_string(),
        "--write".to_owned(),
        work.display().to_string(),
    ]);
    let denied = sandbox_exec(&policy, &["cat", &secret.display().to_string()]);
    assert!(!denied.status.success(), "{denied:?}");
    assert!(
        text(&denied.stderr).contains("Permission denied"),
        "{denied:?}"
    );
    assert!(!text(&denied.stdout).contains("sk-ant"), "{denied:?}");
    // Listing the secret's folder is denied too.
    let listed = sandbox_exec(
        &policy,
        &["ls", &root.path().join("keys").display().to_string()],
    );
    assert!(!listed.status.success(), "{listed:?}");
    assert!(
        !text(&listed.stdout).contains("anthropic.key"),
        "{listed:?}"
    );

    let read = sandbox_exec(&policy, &["cat", &allowed.display().to_string()]);
    assert!(read.status.success(), "{read:?}");
    assert_eq!(text(&read.stdout), "public notes");

    // Writing: in the writable folder yes, beside the allowed (read-only) file no.
    let wrote = sandbox_exec(
        &policy,
        &[
            "sh",
            "-c",
            &format!(
                "echo made > {work}/made.txt && cat {work}/made.txt",
                work = work.display()
            ),
        ],
    );
    assert!(wrote.status.success(), "{wrote:?}");
    assert_eq!(text(&wrote.stdout), "made\n");
    let refused = sandbox_exec(
        &policy,
        &[
            "sh",
            "-c",
            &format!("echo x > {}", root.path().join("allowed/new.txt").display()),
        ],
    );
    assert!(!refused.status.success(), "{refused:?}");
    assert!(!root.path().join("allowed/new.txt").exists());

    // Nothing outside the exec paths runs, not even with the read right.
    let script = root.path().join("allowed/tool.sh");
    paddock_process::write_executable(&script, b"#!/bin/sh\necho ran\n").unwrap();
    let ran = sandbox_exec(&policy, &[&script.display().to_string()]);
    assert_eq!(ran.status.code(), Some(126), "{ran:?}");
}

#[test]
fn sandbox_exec_reports_a_missing_program_and_needs_one() {
    let missing = sandbox_exec(&system_exec_args(), &["/nonexistent/agent"]);
    assert_eq!(missing.status.code(), Some(127), "{missing:?}");
    assert!(
        text(&missing.stderr).contains("could not run `/nonexistent/agent`"),
        "{missing:?}"
    );
    let none = std::process::Command::new(BIN)
        .args(["sandbox-exec", "--read", "/etc"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2), "{none:?}");
    // Hidden from the help: it is the driver's wrapper, not a user command.
    let help = std::process::Command::new(BIN)
        .arg("--help")
        .output()
        .unwrap();
    assert!(!text(&help.stdout).contains("sandbox-exec"));
}

/// Landlock before ABI 9 does not restrict `connect(2)` to a pathname unix socket: a confined
/// agent still reaches a socket outside its policy (the daemon's control socket lives in the
/// runtime directory, which it cannot read). From ABI 9 connecting is restricted, and
/// `--connect` opens the socket's folder.
#[test]
fn a_unix_socket_outside_the_policy_stays_connectable() {
    let root = tempfile::tempdir().unwrap();
    let socket = root.path().join("private/agent.sock");
    std::fs::create_dir(root.path().join("private")).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let server = std::thread::spawn(move || {
        let mut accepted = 0;
        while accepted < 2 {
            let Ok((mut stream, _)) = listener.accept() else {
                break;
            };
            use std::io::Write as _;
            let _ = stream.write_all(b"hello from outside\n");
            accepted += 1;
        }
    });
    let client = format!(
        "require('net').connect({socket:?}).on('data', d => {{ process.stdout.write(d); process.exit(0) }}).on('error', e => {{ console.log(e.code); process.exit(1) }})",
        socket = socket.display().to_string()
    );
    let support = paddock_agents::sandbox::support();
    let connected = sandbox_exec(&system_args(), &["node", "-e", &client]);
    if support.restricts_unix_connect() {
        assert!(!connected.status.success(), "{connected:?}");
    } else {
        assert!(connected.status.success(), "{support}: {connected:?}");
        assert_eq!(text(&connected.stdout), "hello from outside\n");
    }
    // The socket's folder stays unreadable either way.
    let listed = sandbox_exec(
        &system_args(),
        &["ls", &root.path().join("private").display().to_string()],
    );
    assert!(!listed.status.success(), "{listed:?}");
    let mut policy = system_args();
    policy.extend([
        "--connect".to_owned(),
        root.path().join("private").display().to_string(),
    ]);
    let allowed = sandbox_exec(&policy, &["node", "-e", &client]);
    assert!(allowed.status.success(), "{allowed:?}");
    assert_eq!(text(&allowed.stdout), "hello from outside\n");
    server.join().unwrap();
}

/// A confined `paddock` command reaches the daemon over its control socket (the session's
/// `bin/paddock`), while the daemon's token file beside it stays unreadable.
#[test]
fn a_confined_paddock_command_reaches_the_daemon_but_not_its_token() {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    let paths = harness.paths();
    let mut policy = system_args();
    policy.extend(["--exec".to_owned(), BIN.to_owned()]);
    if paddock_agents::sandbox::support().restricts_unix_connect() {
        let socket_dir = paths.socket.parent().unwrap().display().to_string();
        policy.extend(["--connect".to_owned(), socket_dir]);
    }
    let mut args = vec!["sandbox-exec".to_owned()];
    args.extend(policy.iter().cloned());
    args.extend(["--".into(), BIN.into(), "daemon".into(), "status".into()]);
    let status = harness.run(&args).unwrap().success().unwrap();
    assert!(
        status.stdout().contains("paddock daemon is running"),
        "{status}"
    );
    let token = harness.token().unwrap();
    let mut args = vec!["sandbox-exec".to_owned()];
    args.extend(policy.iter().cloned());
    args.extend([
        "--".into(),
        "cat".into(),
        paths.token_file.display().to_string(),
    ]);
    let stolen = harness.run(&args).unwrap();
    assert_ne!(stolen.code(), Some(0), "{stolen}");
    assert!(stolen.stderr().contains("Permission denied"), "{stolen}");
    assert!(!stolen.stdout().contains(&token), "{stolen}");
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
}

/// The everyday case, without root's privileges: an ordinary user's confined program cannot
/// read that same user's own private key file (Landlock needs no privilege; the program gets
/// `no_new_privs`).
#[test]
fn an_ordinary_user_is_confined_from_its_own_files() {
    let user = paddock_testkit::OtherUser::get().unwrap();
    let harness = DaemonHarness::new_as(BIN, &user).unwrap();
    let key = harness.root().join("config/paddock/anthropic.key");
    secret_file(&key, "sk-ant-own-user-secret");
    user.chown(&harness.root().join("config"), true).unwrap();
    let path = key.display().to_string();
    let unconfined = harness.run(["sandbox-exec", "--exec", "/", "--", "cat", &path]);
    // With `/` allowed the user reads its own key: the sandbox is what stops it below.
    let unconfined = unconfined.unwrap().success().unwrap();
    assert_eq!(unconfined.stdout(), "sk-ant-own-user-secret");
    let mut args = vec!["sandbox-exec".to_owned()];
    args.extend(system_args());
    args.extend(["--".into(), "cat".into(), path.clone()]);
    let denied = harness.run(&args).unwrap();
    assert_ne!(denied.code(), Some(0), "{denied}");
    assert!(denied.stderr().contains("Permission denied"), "{denied}");
    assert!(!denied.stdout().contains("sk-ant"), "{denied}");
    // Another process of the same user holds a key in its environment (the shell that
    // exported it): unconfined, the user reads its `/proc/<pid>/environ`; confined, Landlock's
    // ptrace restriction refuses it (root keeps CAP_SYS_PTRACE, so this holds for ordinary
    // users only).
    let mut holder = user
        .command("sleep")
        .arg("60")
        .env("ANTHROPIC_API_KEY", "sk-ant-in-a-shell-environment")
        .spawn()
        .unwrap();
    let environ = format!("/proc/{}/environ", holder.id());
    // Until setpriv has exec'd `sleep`, the process is not dumpable (it changed its uid).
    let comm = format!("/proc/{}/comm", holder.id());
    paddock_testkit::wait_until(Duration::from_secs(10), || {
        (std::fs::read_to_string(&comm).ok()?.trim() == "sleep").then_some(())
    })
    .unwrap();
    let read = user.command("cat").arg(&environ).output().unwrap();
    assert!(
        text(&read.stdout).contains("sk-ant-in-a-shell-environment"),
        "{read:?}"
    );
    let mut args = vec!["sandbox-exec".to_owned()];
    args.extend(system_args());
    args.extend(["--".into(), "cat".into(), environ]);
    let denied = harness.run(&args).unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    assert_ne!(denied.code(), Some(0), "{denied}");
    assert!(!denied.stdout().contains("sk-ant"), "{denied}");
    // `no_new_privs`: a setuid program does not elevate inside the sandbox.
    let mut args = vec!["sandbox-exec".to_owned()];
    args.extend(system_args());
    args.extend([
        "--".into(),
        "grep".into(),
        "NoNewPrivs".into(),
        "/proc/self/status".into(),
    ]);
    let status = harness.run(&args).unwrap().success().unwrap();
    assert!(status.stdout().contains("NoNewPrivs:\t1"), "{status}");
}

// ---------------------------------------------------------------------------------------------
// A real agent CLI, confined by the driver.

/// The real key behind the proxy (the scripted upstream alone sees it).
const PROXY_KEY: &str = "sk-real-key-for-sandbox-tests";
/// What the attacker wants: a key file in the config directory, the daemon's token file in
/// its runtime directory, a file in Paddock's state directory.
const KEY_FILE_SECRET: &str = "sk-ant-KEYFILE-must-never-leak-4711";
const TOKEN_SECRET: &str = "pdk-TOKEN-must-never-leak-0815";
const STATE_SECRET: &str = "STATE-must-never-leak-2024";
const WRITTEN: &str = "sandboxed-agent-wrote-this";
const DEADLINE: Duration = Duration::from_secs(120);

/// One runtime the attack drives, and how the scripted model calls its shell tool.
#[derive(Clone, Copy)]
struct Runtime {
    backend: BackendId,
    api: ModelApi,
    /// Its executable in `tests/agents/node_modules/.bin`.
    program: &'static str,
    shell_tool: &'static str,
    shell_input: fn(&str) -> serde_json::Value,
    /// A named model, for runtimes whose default model expects another request shape.
    model: Option<&'static str>,
}

const CLAUDE: Runtime = Runtime {
    backend: BackendId::Claude,
    api: ModelApi::AnthropicMessages,
    program: "claude",
    shell_tool: "Bash",
    shell_input: |command| serde_json::json!({ "command": command, "description": "Run a command" }),
    model: None,
};

const CODEX: Runtime = Runtime {
    backend: BackendId::Codex,
    api: ModelApi::OpenAiResponses,
    program: "codex",
    shell_tool: "exec_command",
    shell_input: |command| serde_json::json!({ "cmd": command }),
    model: Some("scripted-model"),
};

const OPENCODE: Runtime = Runtime {
    backend: BackendId::OpenCode,
    api: ModelApi::OpenAiChat,
    program: "opencode",
    shell_tool: "bash",
    shell_input: |command| serde_json::json!({ "command": command, "description": "Run a command" }),
    model: Some("scripted-model"),
};

const PI: Runtime = Runtime {
    backend: BackendId::Pi,
    api: ModelApi::AnthropicMessages,
    program: "pi",
    shell_tool: "bash",
    shell_input: |command| serde_json::json!({ "command": command }),
    model: None,
};

impl Runtime {
    fn program_path(self) -> PathBuf {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/agents/node_modules/.bin")
            .join(self.program);
        assert!(
            path.exists(),
            "{} is missing\nhint: run `scripts/setup --dev`",
            path.display()
        );
        path
    }

    fn shell(self, id: &str, command: &str) -> Turn {
        Turn::tool(id, self.shell_tool, (self.shell_input)(command))
    }
}

async fn broker_for(model: &ScriptedModel, api: ModelApi) -> Arc<dyn LaunchCredentials> {
    use paddock_credentials::{CredentialBroker, CredentialBrokerConfig, UpstreamConfig};
    let (name, header, scheme) = api.upstream_auth();
    let broker = CredentialBroker::start(CredentialBrokerConfig {
        upstreams: vec![UpstreamConfig {
            name: name.into(),
            url: model.base_url(),
            credential: paddock_secrets::SecretString::new(PROXY_KEY),
            header: header.into(),
            scheme: scheme.map(str::to_owned),
        }],
        ..CredentialBrokerConfig::default()
    })
    .await
    .unwrap();
    Arc::new(BrokerCredentials::single(Arc::new(broker), api))
}

/// What one attack run saw.
struct Attack {
    sandbox: LaunchSandbox,
    /// The launched process's `/proc/<pid>/status` and its command line, read mid-session.
    status: String,
    cmdline: String,
    events: Vec<AgentEvent>,
    /// Every request body the model server received, as JSON text.
    bodies: Vec<String>,
    work: tempfile::TempDir,
    _root: tempfile::TempDir,
}

impl Attack {
    fn tool_output(&self, call_id: &str) -> (bool, &str) {
        self.events
            .iter()
            .find_map(|event| match event {
                AgentEvent::ToolCallFinished {
                    call_id: id,
                    is_error,
                    output,
                } if id == call_id => Some((*is_error, output.as_str())),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no result for {call_id}: {:?}", self.events))
    }
}

/// Launches `runtime` through the driver (with `sandbox`, or none) and has the scripted model
/// call its shell tool to read three secrets and write one file, allowing every permission it
/// asks for.
async fn attack(runtime: Runtime, sandbox: Option<SandboxConfig>) -> Attack {
    let root = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let state = root.path().join("state/agents");
    let key = root.path().join("config/paddock/anthropic.key");
    let token = root.path().join("runtime/paddock/token");
    let state_file = root.path().join("state/agents/credentials.json");
    secret_file(&key, KEY_FILE_SECRET);
    secret_file(&token, TOKEN_SECRET);
    secret_file(&state_file, STATE_SECRET);
    let model = ScriptedModel::start(vec![
        runtime.shell("call_key", &format!("cat {}", key.display())),
        runtime.shell("call_token", &format!("cat {}", token.display())),
        runtime.shell("call_state", &format!("cat {}", state_file.display())),
        runtime.shell(
            "call_write",
            &format!("echo {WRITTEN} > written.txt && cat written.txt"),
        ),
        Turn::text("All done."),
    ])
    .unwrap();
    let mut host = HostConfig::new(&state)
        .with_program(runtime.backend.as_str(), runtime.program_path())
        .with_credentials(broker_for(&model, runtime.api).await);
    host.paddock_command = Some(PathBuf::from(BIN));
    host.sandbox = sandbox;
    let sdk = AgentDriverSdk::new(host);
    let session = sdk
        .open(OpenRequest {
            backend: runtime.backend,
            launch: Launch {
                working_directory: work.path().to_path_buf(),
                instructions: None,
                launch_id: "sandbox-attack".into(),
            },
            config: AgentConfig {
                model: runtime
                    .model
                    .map_or(Model::Default, |name| Model::Named(name.into())),
                mode: Mode::Default,
                ..AgentConfig::default()
            },
            env: Vec::new(),
        })
        .await
        .unwrap();
    let mut events = session.events().unwrap();
    assert_eq!(
        session.start(Command::user("c1", "read the keys")).await,
        Receipt::Accepted
    );
    let mut seen = Vec::new();
    let finished = tokio::time::timeout(DEADLINE, async {
        while let Some(event) = events.recv().await {
            if let AgentEvent::PermissionRequested { request_id, .. } = &event {
                session
                    .answer_permission(request_id, PermissionDecision::Allow)
                    .await
                    .unwrap();
            }
            let done = matches!(event, AgentEvent::TurnCompleted { .. });
            seen.push(event);
            if done {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(finished, Ok(true), "the turn did not complete: {seen:?}");
    let sandbox_state = session.sandbox().clone();
    let pid = session.snapshot().await.pid.expect("the CLI runs");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    session
        .stop(StopRequest {
            reason: "test".into(),
            force_after: Duration::from_secs(6),
        })
        .await;
    let bodies = model
        .requests()
        .iter()
        .map(|request| request.body.to_string())
        .collect();
    Attack {
        sandbox: sandbox_state,
        status,
        cmdline,
        events: seen,
        bodies,
        work,
        _root: root,
    }
}

/// The attack against `runtime`, sandboxed: every read fails, the write works, no secret
/// reaches an event or the model.
async fn assert_confined(runtime: Runtime) {
    let attack = attack(runtime, Some(SandboxConfig::default())).await;
    assert!(
        matches!(attack.sandbox, LaunchSandbox::Landlock { .. }),
        "{:?}",
        attack.sandbox
    );
    // The CLI's own process entered the ruleset before its exec: no wrapper ran in between,
    // and setuid programs cannot lift it.
    assert!(
        !attack.cmdline.contains("sandbox-exec"),
        "{}",
        attack.cmdline
    );
    assert!(
        attack
            .status
            .lines()
            .any(|line| line.split_whitespace().eq(["NoNewPrivs:", "1"])),
        "{}",
        attack.status
    );
    for call in ["call_key", "call_token", "call_state"] {
        let (_, output) = attack.tool_output(call);
        assert!(output.contains("Permission denied"), "{call}: {output}");
    }
    let (is_error, output) = attack.tool_output("call_write");
    assert!(!is_error && output.contains(WRITTEN), "{output}");
    assert_eq!(
        std::fs::read_to_string(attack.work.path().join("written.txt")).unwrap(),
        format!("{WRITTEN}\n")
    );
    // No secret in any event, nor in anything the model was sent (the tool results included).
    let events = format!("{:?}", attack.events);
    assert!(
        attack
            .bodies
            .iter()
            .any(|body| body.contains("Permission denied")),
        "the model saw the denials: {:?}",
        attack.bodies
    );
    for secret in [KEY_FILE_SECRET, TOKEN_SECRET, STATE_SECRET] {
        assert!(!events.contains(secret), "{secret} in the events: {events}");
        for body in &attack.bodies {
            assert!(!body.contains(secret), "{secret} sent to the model: {body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_claude_cannot_read_keys_but_writes_its_work() {
    assert_confined(CLAUDE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_codex_cannot_read_keys_but_writes_its_work() {
    assert_confined(CODEX).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_opencode_cannot_read_keys_but_writes_its_work() {
    assert_confined(OPENCODE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_pi_cannot_read_keys_but_writes_its_work() {
    assert_confined(PI).await;
}

/// The same attack without the sandbox succeeds: the test above would catch a sandbox that
/// does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_the_same_agent_reads_the_key() {
    let attack = attack(CLAUDE, None).await;
    assert_eq!(attack.sandbox, LaunchSandbox::Off);
    assert!(
        attack
            .status
            .lines()
            .any(|line| line.split_whitespace().eq(["NoNewPrivs:", "0"])),
        "{}",
        attack.status
    );
    let (_, output) = attack.tool_output("call_key");
    assert!(output.contains(KEY_FILE_SECRET), "{output}");
    assert!(
        attack
            .bodies
            .iter()
            .any(|body| body.contains(KEY_FILE_SECRET))
    );
}

/// The attack, end to end: as an ordinary user (`paddock-test`) whose key file and
/// token sit where Paddock looks by default (its config directory under HOME, its runtime
/// directory), an agent that the daemon launched for a bot tries to read the key from the
/// daemon's `/proc/<pid>/environ` and `mem`, the key file and the token file. Every read fails,
/// the model never sees the key, and the agent still does its work in its working directory.
#[test]
fn a_daemon_hosted_agent_of_an_ordinary_user_reaches_no_key_and_still_works() {
    let user = paddock_testkit::OtherUser::get().unwrap();
    let mut harness = DaemonHarness::new_as(BIN, &user).unwrap();
    harness.with_agent_clis().unwrap();
    let home = harness.home();
    // The turns are pushed once the daemon's pid is known.
    let model = ScriptedModel::start(Vec::new()).unwrap();
    let key_file = harness
        .write_anthropic_config(&model.base_url(), OWN_KEY, "")
        .unwrap();
    let work = harness.root().join("work");
    std::fs::create_dir(&work).unwrap();
    user.chown(&home.join(".config"), true).unwrap();
    user.chown(&work, true).unwrap();
    let status = harness.start_detached(&[]).unwrap();
    let token_file = harness.paths().token_file;
    let pid = status.pid;
    model.push(Turn::tool(
        "call_probe",
        "Bash",
        serde_json::json!({ "description": "Probe", "command": format!(
        "cat /proc/{pid}/environ; head -c 16 /proc/{pid}/mem; cat {}; cat {}; echo done > proof.txt; echo finished-probing",
        key_file.display(),
        token_file.display()
    ) }),
    ));
    model.push(Turn::text("Probed."));
    harness.add_claude_bot("helper", &work, true).unwrap();
    let message = harness.root().join("message.txt");
    std::fs::write(&message, "Please probe.").unwrap();
    user.chown(&message, false).unwrap();
    harness
        .run([
            "bot",
            "message",
            "helper",
            "--file",
            message.to_str().unwrap(),
        ])
        .unwrap()
        .success()
        .unwrap();
    paddock_testkit::wait_until(Duration::from_secs(90), || {
        (model.scripted_requests().len() >= 2).then_some(())
    })
    .unwrap();
    let result = model.scripted_requests()[1].body.to_string();
    assert!(
        result.contains("finished-probing"),
        "the probe ran: {result}"
    );
    assert!(
        !result.contains(OWN_KEY),
        "the key reached the model: {result}"
    );
    let token = harness.token().unwrap_or_default();
    assert!(
        token.is_empty() || !result.contains(&token),
        "the token reached the model"
    );
    assert!(
        result.matches("Permission denied").count() >= 4,
        "environ, mem, the key file and the token file are all refused: {result}"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("proof.txt"))
            .unwrap()
            .trim(),
        "done",
        "the agent still writes its working directory"
    );
    for request in model.scripted_requests() {
        assert_eq!(
            request.header("x-api-key"),
            Some(OWN_KEY),
            "the upstream gets the key"
        );
    }
}

const OWN_KEY: &str = "sk-ant-ordinary-user-key-5150";

/// One agent's sandbox over the daemon's: by default a file outside the allowed paths is
/// refused; `--sandbox-read` lets that agent read it; `--sandbox off` runs it unconfined.
#[test]
fn one_agent_can_be_given_more_of_the_disk_or_no_sandbox() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness
        .with_agent_clis()
        .unwrap()
        .set_env("TEST_MODEL_KEY", "sk-ant-widening-test");
    let docs = harness.root().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("notes.txt"), "shared-notes-4242").unwrap();
    let probe = format!("cat {}/notes.txt; echo rc=$?", docs.display());
    let mut turns = Vec::new();
    for run in 0..3 {
        turns.push(Turn::tool(
            &format!("call_read_{run}"),
            "Bash",
            serde_json::json!({ "description": "Read", "command": probe }),
        ));
        turns.push(Turn::text("Read."));
    }
    let model = ScriptedModel::start(turns).unwrap();
    let upstream = model.base_url();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "agent",
            "run",
            "--permissions",
            "allow",
            "--upstream",
            &upstream,
            "--key-from",
            "env:TEST_MODEL_KEY",
        ];
        args.extend_from_slice(extra);
        args.push("read the notes");
        harness.run(args).unwrap().success().unwrap();
    };
    let docs_arg = docs.display().to_string();
    run(&[]);
    run(&["--sandbox-read", &docs_arg]);
    run(&["--sandbox", "off"]);
    let results: Vec<String> = model
        .scripted_requests()
        .iter()
        .map(|request| request.body.to_string())
        .collect();
    assert_eq!(results.len(), 6, "{results:?}");
    assert!(
        results[1].contains("Permission denied") && !results[1].contains("shared-notes-4242"),
        "the daemon's sandbox refuses the file: {}",
        results[1]
    );
    assert!(
        results[3].contains("shared-notes-4242"),
        "widened: {}",
        results[3]
    );
    assert!(
        results[5].contains("shared-notes-4242"),
        "off: {}",
        results[5]
    );
}
