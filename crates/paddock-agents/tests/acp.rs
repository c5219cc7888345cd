//! The ACP lane. The conformance suite runs against a real ACP agent from npm,
//! `@zed-industries/claude-code-acp` (installed by `scripts/setup --dev`), opened through
//! [`AgentDriverSdk::open_with`] with a profile of its own: it runs Claude Code, which reaches
//! the scripted Anthropic server through the credential proxy holding only a voucher. The
//! Cursor profile (Cursor's CLI cannot be installed here) is checked at the protocol level:
//! its launch plan, its handshake and the lane's turn ownership.
#![cfg(test)]

mod common;

use std::sync::Arc;

use common::{ScriptedHost, npm_bin};
use paddock_agents::adapters::acp::{AcpAdapter, AcpProfile, AcpProtocol, AcpSessionConfig};
use paddock_agents::adapters::{Adapter, Decoded, Protocol};
use paddock_agents::testing::{self, ConformanceHost, ScriptTurn};
use paddock_agents::*;
use serde_json::{Value, json};

fn claude_code_acp_profile() -> AcpProfile {
    AcpProfile::claude_code_acp()
}

fn acp_host() -> ScriptedHost {
    let mut host = ScriptedHost::new(
        BackendId::Claude,
        ModelApi::AnthropicMessages,
        npm_bin("claude-code-acp"),
    );
    host.shell_tool = "Bash";
    host.shell_input =
        |command| json!({ "command": command, "description": "Run a conformance command" });
    host.adapter = Some(Arc::new(|| {
        Arc::new(AcpAdapter::new(claude_code_acp_profile())) as Arc<dyn Adapter>
    }));
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_two_turns() {
    let host = acp_host();
    testing::two_turns(&host).await.unwrap();
    host.assert_only_real_key_upstream();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_steers_mid_turn() {
    testing::steer_mid_turn(&acp_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_interrupt_keeps_the_process() {
    let host = acp_host();
    let long = "this answer streams slowly and is interrupted long before it ends ".repeat(10);
    let session = host
        .open(vec![
            ScriptTurn::SlowText(long),
            ScriptTurn::Text("after the interrupt".into()),
        ])
        .await
        .unwrap();
    let mut events = session.events().unwrap();
    let mut seen = Vec::new();
    session.start(Command::user("c1", "go")).await;
    testing::wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::AssistantTextDelta { .. })
    })
    .await
    .unwrap();
    let pid = session.snapshot().await.pid.unwrap();
    session.interrupt().await.unwrap();
    let completed = testing::wait_for(
        &mut events,
        &mut seen,
        |e| matches!(e, AgentEvent::TurnCompleted { command_id, .. } if command_id == "c1"),
    )
    .await
    .unwrap();
    assert!(
        matches!(
            completed,
            AgentEvent::TurnCompleted {
                outcome: TurnOutcome::Interrupted,
                ..
            }
        ),
        "{seen:?}"
    );
    // session/cancel left the agent running: the same process takes the next turn.
    assert_eq!(session.snapshot().await.pid, Some(pid));
    assert_eq!(
        session.send(Command::user("c2", "still there?")).await,
        Receipt::Accepted
    );
    testing::wait_for(
        &mut events,
        &mut seen,
        |e| matches!(e, AgentEvent::TurnCompleted { command_id, .. } if command_id == "c2"),
    )
    .await
    .unwrap();
    assert!(
        seen.iter().any(|e| matches!(e, AgentEvent::AssistantMessageCompleted { text } if text.contains("after the interrupt"))),
        "{seen:?}"
    );
    assert_eq!(session.snapshot().await.pid, Some(pid));
    let facts = session
        .stop(StopRequest {
            reason: "test".into(),
            force_after: std::time::Duration::from_secs(10),
        })
        .await;
    assert!(
        facts.processes_reaped && facts.launch_dir_removed,
        "{facts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_interrupt() {
    testing::interrupt(&acp_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_permission_allow_runs_the_tool() {
    acp_host().permission_allowed().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_permission_deny_skips_the_tool() {
    acp_host().permission_denied("not allowed in tests").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_crash_closes_once() {
    testing::crash(&acp_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_stop_fails_the_running_command() {
    testing::stop(&acp_host()).await.unwrap();
}

/// Every live descendant of `pid` (by parent links in /proc).
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&child| paddock_process::is_running(child))
        .filter_map(|child| Some((child, paddock_process::parent_pid(child)?)))
        .collect();
    let mut found = vec![pid];
    let mut index = 0;
    while index < found.len() {
        let parent = found[index];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(child, _)| *child),
        );
        index += 1;
    }
    found.remove(0);
    found
}

/// claude-code-acp runs the Claude Code CLI as a child: that child holds only the voucher,
/// keeps its configuration inside the launch directory, and is gone once the session closed,
/// whether it was stopped or its leader was killed.
async fn the_agents_children_stay_inside_the_launch(crash: bool) {
    let host = acp_host();
    let session = host
        .open(vec![ScriptTurn::GatedText("hello".into())])
        .await
        .unwrap();
    let mut events = session.events().unwrap();
    session.start(Command::user("c1", "hi")).await;
    let mut seen = Vec::new();
    testing::wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::TurnStarted { .. })
    })
    .await
    .unwrap();
    common::until("claude-code-acp to ask the model", || host.asked())
        .await
        .unwrap();
    let pid = session.snapshot().await.pid.unwrap();
    let children = descendants(pid);
    let launches = host.root.path().join("launches");
    let cli = children
        .iter()
        // The agent SDK marks the CLI's environment (the CLI renames its own argv to `claude`).
        .find(|child| {
            std::fs::read(format!("/proc/{child}/environ"))
                .is_ok_and(|env| String::from_utf8_lossy(&env).contains("CLAUDE_CODE_ENTRYPOINT="))
        })
        .copied()
        .unwrap_or_else(|| panic!("no Claude Code child among {children:?}"));
    let environ = String::from_utf8_lossy(&std::fs::read(format!("/proc/{cli}/environ")).unwrap())
        .into_owned();
    assert!(
        !environ.contains(common::REAL_KEY),
        "the real key reached the CLI"
    );
    assert!(
        environ.contains("ANTHROPIC_API_KEY=vch_"),
        "the CLI holds a voucher"
    );
    assert!(
        environ.contains(&format!("CLAUDE_CONFIG_DIR={}", launches.display())),
        "the CLI's config dir is in the launch directory"
    );
    assert!(environ.contains(&format!("HOME={}", launches.display())));
    for child in children.iter().chain([&pid]) {
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&cmdline).contains("vch_"));
    }
    let facts = if crash {
        let leader = rustix::process::Pid::from_raw(pid as i32).unwrap();
        rustix::process::kill_process(leader, rustix::process::Signal::KILL).unwrap();
        common::within("the session to close after SIGKILL", session.closed())
            .await
            .unwrap()
    } else {
        session
            .stop(StopRequest {
                reason: "test".into(),
                force_after: std::time::Duration::from_secs(5),
            })
            .await
    };
    host.release_gate();
    assert!(
        facts.processes_reaped && facts.launch_dir_removed,
        "{facts:?}"
    );
    let left: Vec<u32> = children
        .into_iter()
        .filter(|child| paddock_process::is_running(*child))
        .collect();
    assert!(left.is_empty(), "left running: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_children_are_isolated_and_gone_after_stop() {
    the_agents_children_stay_inside_the_launch(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_children_are_gone_after_a_crash() {
    the_agents_children_stay_inside_the_launch(true).await;
}

// Protocol-level checks of the lane and the Cursor profile.

fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

fn writes(decoded: &[Decoded]) -> Vec<Value> {
    decoded
        .iter()
        .filter_map(|item| match item {
            Decoded::Write(line) => Some(parse(line)),
            _ => None,
        })
        .collect()
}

fn cursor_request() -> OpenRequest {
    OpenRequest {
        backend: BackendId::Cursor,
        launch: Launch {
            working_directory: "/work/project".into(),
            instructions: None,
            launch_id: "cursor-1".into(),
        },
        config: AgentConfig::default(),
        env: Vec::new(),
    }
}

#[tokio::test]
async fn the_cursor_backend_launches_cursor_agent_acp() {
    let root = tempfile::tempdir().unwrap();
    let fake = root.path().join("cursor-agent");
    std::fs::write(&fake, "").unwrap();
    let sdk = AgentDriverSdk::new(HostConfig::new(root.path()).with_program("cursor", &fake));
    let adapter = adapters::adapter(BackendId::Cursor);
    let descriptor = adapter.descriptor();
    assert_eq!(descriptor.backend, BackendId::Cursor);
    assert_eq!(descriptor.program, "cursor-agent");
    assert_eq!(sdk.probe(BackendId::Cursor).await.program, Some(fake));
    assert_eq!(
        descriptor.capabilities,
        Capabilities {
            lifetime: Lifetime::Session,
            transport: Transport::Process,
            mid_turn_delivery: MidTurnDelivery::Steer,
        }
    );
    // Cursor calls Cursor's service: no voucher, and no key in argv.
    assert_eq!(descriptor.model_api, None);
    assert_eq!(sdk.model_api(BackendId::Cursor), None);
    let plan = adapter.launch(&cursor_request());
    assert_eq!(plan.args, vec![std::ffi::OsString::from("acp")]);
    let mut named = cursor_request();
    named.config.model = Model::Named("composer-1".into());
    let plan = adapter.launch(&named);
    assert_eq!(
        plan.args,
        ["--model", "composer-1", "acp"].map(std::ffi::OsString::from)
    );
}

/// Lines as `cursor-agent acp` writes them (shapes from Cursor's ACP documentation and the
/// ACP schema): it advertises `cursor_login`, so the lane authenticates before session/new.
#[test]
fn cursor_authenticates_with_cursor_login_before_session_new() {
    let adapter = AcpAdapter::new(AcpProfile::cursor());
    let mut protocol = adapter.protocol(&cursor_request(), &Default::default());
    let init = parse(&protocol.startup()[0]);
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], 1);
    assert_eq!(init["params"]["clientCapabilities"]["terminal"], false);
    assert_eq!(
        init["params"]["clientCapabilities"]["fs"]["readTextFile"],
        false
    );
    // A command before the session exists waits for it.
    assert!(protocol.user(&Command::user("c1", "hello")).is_empty());
    let answer = json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[{"id":"cursor_login","name":"Cursor Login","description":null}]}});
    let sent = writes(&protocol.decode(&answer.to_string()));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["method"], "authenticate");
    assert_eq!(sent[0]["params"]["methodId"], "cursor_login");
    let authenticated = json!({"jsonrpc":"2.0","id":sent[0]["id"],"result":{}});
    let sent = writes(&protocol.decode(&authenticated.to_string()));
    assert_eq!(sent[0]["method"], "session/new");
    assert_eq!(sent[0]["params"]["cwd"], "/work/project");
    assert_eq!(sent[0]["params"]["mcpServers"], json!([]));
    let created = json!({"jsonrpc":"2.0","id":sent[0]["id"],"result":{"sessionId":"cur-1","modes":{"currentModeId":"agent","availableModes":[{"id":"agent","name":"Agent"},{"id":"plan","name":"Plan"},{"id":"ask","name":"Ask"}]}}});
    let decoded = protocol.decode(&created.to_string());
    assert_eq!(decoded[0], Decoded::VendorSession("cur-1".into()));
    assert_eq!(
        decoded[1],
        Decoded::Event(AgentEvent::SessionStarted {
            vendor_session_id: Some("cur-1".into())
        })
    );
    let sent = writes(&decoded);
    assert_eq!(sent[0]["method"], "session/prompt");
    assert_eq!(sent[0]["params"]["sessionId"], "cur-1");
    assert_eq!(
        sent[0]["params"]["prompt"],
        json!([{ "type": "text", "text": "hello" }])
    );
}

#[test]
fn an_agent_without_the_profiles_auth_method_is_not_authenticated() {
    let mut protocol = AcpProtocol::new(AcpSessionConfig {
        cwd: "/w".into(),
        auth_method: Some("cursor_login".into()),
        ..Default::default()
    });
    let init = parse(&protocol.startup()[0]);
    let answer = json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1,"authMethods":[{"id":"claude-login","name":"Log in"}]}});
    let sent = writes(&protocol.decode(&answer.to_string()));
    assert_eq!(sent[0]["method"], "session/new");
}

/// A protocol whose session `s1` exists and whose turn `c1` is running; returns the root
/// prompt's id.
fn running_turn() -> (AcpProtocol, Value) {
    let mut protocol = AcpProtocol::new(AcpSessionConfig {
        cwd: "/w".into(),
        ..Default::default()
    });
    let init = parse(&protocol.startup()[0]);
    let sent = writes(&protocol.decode(
        &json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1}}).to_string(),
    ));
    protocol.decode(
        &json!({"jsonrpc":"2.0","id":sent[0]["id"],"result":{"sessionId":"s1"}}).to_string(),
    );
    let prompt = parse(&protocol.user(&Command::user("c1", "first"))[0]);
    (protocol, prompt["id"].clone())
}

fn answer(id: &Value, stop_reason: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":stop_reason}}).to_string()
}

fn turn_ends(decoded: &[Decoded]) -> Vec<TurnOutcome> {
    decoded
        .iter()
        .filter_map(|item| match item {
            Decoded::TurnEnded(outcome) => Some(outcome.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_old_response_cannot_settle_the_current_turn() {
    let (mut protocol, first) = running_turn();
    assert_eq!(
        turn_ends(&protocol.decode(&answer(&first, "end_turn"))),
        [TurnOutcome::Completed]
    );
    let second = parse(&protocol.user(&Command::user("c2", "second"))[0]);
    assert_ne!(second["id"], first);
    // The first turn's answer again (a late duplicate), and an id never sent: neither ends c2.
    assert!(turn_ends(&protocol.decode(&answer(&first, "end_turn"))).is_empty());
    assert!(turn_ends(&protocol.decode(&answer(&json!(9999), "end_turn"))).is_empty());
    assert_eq!(
        turn_ends(&protocol.decode(&answer(&second["id"], "cancelled"))),
        [TurnOutcome::Interrupted]
    );
}

#[test]
fn a_steer_has_its_own_id_and_the_root_owns_the_turn() {
    let (mut protocol, root) = running_turn();
    let steer = parse(&protocol.steer(&Command::user("c2", "also")).unwrap()[0]);
    assert_eq!(steer["method"], "session/prompt");
    assert_ne!(steer["id"], root);
    // The steer's answer alone does not end the turn.
    assert!(turn_ends(&protocol.decode(&answer(&steer["id"], "end_turn"))).is_empty());
    // The root's answer does, with the root's stop reason.
    assert_eq!(
        turn_ends(&protocol.decode(&answer(&root, "refusal"))),
        [TurnOutcome::Failed("the agent stopped: refusal".into())]
    );
    // Root first, steer still out: the turn waits for the steer.
    let root = parse(&protocol.user(&Command::user("c3", "again"))[0])["id"].clone();
    let steer = parse(&protocol.steer(&Command::user("c4", "more")).unwrap()[0])["id"].clone();
    assert!(turn_ends(&protocol.decode(&answer(&root, "end_turn"))).is_empty());
    assert_eq!(
        turn_ends(&protocol.decode(&answer(&steer, "end_turn"))),
        [TurnOutcome::Completed]
    );
}

/// Lines recorded from `claude-code-acp` 0.16.2 (ACP SDK 0.14.1) against the scripted server
/// in the permission conformance check; the session id is shortened to `s1` and an
/// `fs/read_text_file` request (which it makes only to clients that advertise `fs`) added.
#[test]
fn normalises_recorded_updates() {
    let (mut protocol, root) = running_turn();
    assert_eq!(root, 2, "initialize is 0, session/new 1");
    let lines = [
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"compact","description":"Clear conversation history","input":null}]}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"call_conformance_0","sessionUpdate":"tool_call","rawInput":{},"status":"pending","title":"Terminal","kind":"execute","content":[]}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"call_conformance_0","sessionUpdate":"tool_call","rawInput":{"command":"echo conformance-tool-ran | tee conformance-output.txt","description":"Run a conformance command"},"status":"pending","title":"`echo conformance-tool-ran | tee conformance-output.txt`","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"Run a conformance command"}}]}}}"#,
        r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"options":[{"kind":"allow_always","name":"Always Allow","optionId":"allow_always"},{"kind":"allow_once","name":"Allow","optionId":"allow"},{"kind":"reject_once","name":"Reject","optionId":"reject"}],"sessionId":"s1","toolCall":{"toolCallId":"call_conformance_0","rawInput":{"command":"echo conformance-tool-ran | tee conformance-output.txt","description":"Run a conformance command"},"title":"`echo conformance-tool-ran | tee conformance-output.txt`"}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"_meta":{"claudeCode":{"toolResponse":{"stdout":"conformance-tool-ran","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false},"toolName":"Bash"}},"toolCallId":"call_conformance_0","sessionUpdate":"tool_call_update"}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"call_conformance_0","sessionUpdate":"tool_call_update","status":"completed","rawOutput":"conformance-tool-ran","content":[{"type":"content","content":{"type":"text","text":"conformance-tool-ran"}}]}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done "}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"other","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"not ours"}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"with the tool"}}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s1","path":"/etc/hosts"}}"#,
        "not json",
        r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
    ];
    let (last, lines) = lines.split_last().unwrap();
    let mut decoded: Vec<Decoded> = lines
        .iter()
        .flat_map(|line| protocol.decode(line))
        .collect();
    // Allow picks the agent's `allow_once` option, echoing its request id.
    let allow = parse(&protocol.permission("0", &PermissionDecision::Allow, &Value::Null)[0]);
    assert_eq!(
        allow,
        json!({"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}})
    );
    decoded.extend(protocol.decode(last));
    let input = json!({"command":"echo conformance-tool-ran | tee conformance-output.txt","description":"Run a conformance command"});
    let expect = [
        // The first tool_call has no input yet: the call starts with the second.
        Decoded::Event(AgentEvent::ToolCallStarted {
            call_id: "call_conformance_0".into(),
            name: "execute".into(),
            input: input.clone(),
        }),
        Decoded::Permission {
            request_id: "0".into(),
            tool: "execute".into(),
            input,
        },
        // The update without a status (a hook's echo) finishes nothing.
        Decoded::Event(AgentEvent::ToolCallFinished {
            call_id: "call_conformance_0".into(),
            is_error: false,
            output: "conformance-tool-ran".into(),
        }),
        Decoded::Event(AgentEvent::AssistantTextDelta {
            text: "done ".into(),
        }),
        Decoded::Event(AgentEvent::AssistantTextDelta {
            text: "with the tool".into(),
        }),
    ];
    assert_eq!(&decoded[..expect.len()], expect);
    // The unsupported request is answered with an error, so the agent does not wait.
    let Decoded::Write(error) = &decoded[expect.len()] else {
        panic!("{decoded:?}")
    };
    let error = parse(error);
    assert_eq!(error["id"], 1);
    assert_eq!(error["error"]["code"], -32601);
    assert!(matches!(
        decoded[expect.len() + 1],
        Decoded::Event(AgentEvent::Error { .. })
    ));
    assert_eq!(
        &decoded[expect.len() + 2..],
        [
            Decoded::Event(AgentEvent::AssistantMessageCompleted {
                text: "done with the tool".into()
            }),
            Decoded::TurnEnded(TurnOutcome::Completed)
        ]
    );
}

/// What `claude-code-acp` 0.16.2 did with a steer (recorded in the steer conformance check,
/// session id shortened): it pushed the second prompt into Claude Code's input, which ran it
/// as a second model turn after the first, and answered the *steer's* request (id 3) when the
/// first model turn ended and the root's (id 2) after the second. The logical turn ends once,
/// after both, with the steered answer inside it.
#[test]
fn a_recorded_steer_ends_the_turn_after_both_answers() {
    let (mut protocol, root) = running_turn();
    let steer = parse(
        &protocol
            .steer(&Command::user("c2", "and also this"))
            .unwrap()[0],
    );
    assert_eq!((root, steer["id"].clone()), (json!(2), json!(3)));
    let chunk = |text: &str| {
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}}}).to_string()
    };
    let lines = [
        chunk("slow "),
        chunk("answer"),
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#.to_owned(),
        chunk("steered "),
        chunk("answer"),
        r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#.to_owned(),
    ];
    let decoded: Vec<Decoded> = lines
        .iter()
        .flat_map(|line| protocol.decode(line))
        .filter(|item| !matches!(item, Decoded::Event(AgentEvent::AssistantTextDelta { .. })))
        .collect();
    assert_eq!(
        decoded,
        [
            Decoded::Event(AgentEvent::AssistantMessageCompleted {
                text: "slow answer".into()
            }),
            Decoded::Event(AgentEvent::AssistantMessageCompleted {
                text: "steered answer".into()
            }),
            Decoded::TurnEnded(TurnOutcome::Completed),
        ]
    );
}

#[test]
fn permission_answers_pick_the_agents_options() {
    let (mut protocol, _root) = running_turn();
    let request = |id: u64| {
        json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{"sessionId":"s1","options":[{"kind":"allow_once","name":"Allow","optionId":"allow-once"},{"kind":"allow_always","name":"Always","optionId":"allow-always"},{"kind":"reject_once","name":"Reject","optionId":"reject-once"}],"toolCall":{"toolCallId":"shell_1","kind":"execute","title":"ls","rawInput":{"command":"ls"}}}}).to_string()
    };
    protocol.decode(&request(7));
    protocol.decode(&request(8));
    let allow = parse(&protocol.permission("7", &PermissionDecision::Allow, &Value::Null)[0]);
    assert_eq!(allow["id"], 7);
    assert_eq!(
        allow["result"]["outcome"],
        json!({"outcome":"selected","optionId":"allow-once"})
    );
    let deny = parse(
        &protocol.permission(
            "8",
            &PermissionDecision::Deny {
                message: "no".into(),
            },
            &Value::Null,
        )[0],
    );
    assert_eq!(
        deny["result"]["outcome"],
        json!({"outcome":"selected","optionId":"reject-once"})
    );
    assert!(
        protocol
            .permission("8", &PermissionDecision::Allow, &Value::Null)
            .is_empty(),
        "answered once"
    );
    // Interrupt: pending permission requests are cancelled, then session/cancel.
    protocol.decode(&request(9));
    let lines: Vec<Value> = protocol.interrupt("i").iter().map(|l| parse(l)).collect();
    assert_eq!(lines[0]["id"], 9);
    assert_eq!(lines[0]["result"]["outcome"]["outcome"], "cancelled");
    assert_eq!(lines[1]["method"], "session/cancel");
    assert_eq!(lines[1]["params"]["sessionId"], "s1");
    assert!(lines[1].get("id").is_none(), "a notification");
}

#[test]
fn a_failed_handshake_fails_the_waiting_turn_and_the_next_command_retries() {
    let mut protocol = AcpProtocol::new(AcpSessionConfig {
        cwd: "/w".into(),
        ..Default::default()
    });
    let init = parse(&protocol.startup()[0]);
    assert!(protocol.user(&Command::user("c1", "hi")).is_empty());
    let sent = writes(&protocol.decode(
        &json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1}}).to_string(),
    ));
    let failed = protocol.decode(
        &json!({"jsonrpc":"2.0","id":sent[0]["id"],"error":{"code":-32000,"message":"Authentication required"}}).to_string(),
    );
    assert!(
        matches!(&turn_ends(&failed)[..], [TurnOutcome::Failed(reason)] if reason.contains("Authentication required"))
    );
    let retry = parse(&protocol.user(&Command::user("c2", "again"))[0]);
    assert_eq!(retry["method"], "session/new");
}

#[test]
fn an_interrupt_before_the_session_exists_ends_the_turn_without_prompting() {
    let mut protocol = AcpProtocol::new(AcpSessionConfig {
        cwd: "/w".into(),
        ..Default::default()
    });
    let init = parse(&protocol.startup()[0]);
    assert!(protocol.user(&Command::user("c1", "hi")).is_empty());
    assert!(protocol.interrupt("i").is_empty(), "nothing to cancel yet");
    let decoded = protocol.decode(
        &json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1}}).to_string(),
    );
    assert_eq!(turn_ends(&decoded), [TurnOutcome::Interrupted]);
    let new = &writes(&decoded)[0];
    let decoded = protocol
        .decode(&json!({"jsonrpc":"2.0","id":new["id"],"result":{"sessionId":"s1"}}).to_string());
    assert!(
        writes(&decoded).is_empty(),
        "the dropped prompt is not sent: {decoded:?}"
    );
}

/// Resuming: `session/load` when the agent can load, its history replay is not reported as
/// new output, and the requested mode is set before the first prompt.
#[test]
fn resuming_loads_the_session_and_sets_the_mode_first() {
    let mut profile = AcpProfile::new(BackendId::Cursor, "cursor-agent", &["acp"]);
    profile.modes = vec![(Mode::Plan, "plan".into())];
    let adapter = AcpAdapter::new(profile).resuming("old-session");
    let mut request = cursor_request();
    request.config.mode = Mode::Plan;
    let mut protocol = adapter.protocol(&request, &Default::default());
    let init = parse(&protocol.startup()[0]);
    assert!(protocol.user(&Command::user("c1", "continue")).is_empty());
    let sent = writes(&protocol.decode(
        &json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}).to_string(),
    ));
    assert_eq!(sent[0]["method"], "session/load");
    assert_eq!(sent[0]["params"]["sessionId"], "old-session");
    let replay = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old-session","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"an old answer"}}}});
    assert!(protocol.decode(&replay.to_string()).is_empty());
    let loaded = protocol.decode(
        &json!({"jsonrpc":"2.0","id":sent[0]["id"],"result":{"modes":{"currentModeId":"agent","availableModes":[{"id":"agent","name":"Agent"},{"id":"plan","name":"Plan"}]}}}).to_string(),
    );
    assert_eq!(loaded[0], Decoded::VendorSession("old-session".into()));
    let sent = writes(&loaded);
    assert_eq!(sent.len(), 1, "{loaded:?}");
    assert_eq!(sent[0]["method"], "session/set_mode");
    assert_eq!(sent[0]["params"]["modeId"], "plan");
    let sent = writes(
        &protocol.decode(&json!({"jsonrpc":"2.0","id":sent[0]["id"],"result":{}}).to_string()),
    );
    assert_eq!(sent[0]["method"], "session/prompt");
    assert_eq!(sent[0]["params"]["sessionId"], "old-session");
}
