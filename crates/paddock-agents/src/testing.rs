//! The public conformance suite every adapter must pass. A [`ConformanceHost`] opens sessions
//! of one backend against a scripted model; each check drives the real runtime through the
//! contract and returns an error describing the first violation.

use std::future::Future;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::contract::*;
use crate::session::Session;

/// A scripted model turn, independent of any wire API.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptTurn {
    /// Answers with this text, streamed word by word.
    Text(String),
    /// Answers with this text only after the host's gate is released.
    GatedText(String),
    /// Answers with this text slowly, word by word (a stream to interrupt).
    SlowText(String),
    /// Streams the first word of this text, then holds the rest until the host's gate is
    /// released: the model is visibly answering and cannot finish before the test lets it.
    HeldText(String),
    /// Asks to run a shell command (a tool that needs permission).
    Shell { command: String },
}

/// What the suite needs from a backend's test setup.
pub trait ConformanceHost: Send + Sync {
    /// Opens a session whose model follows `script`, answering turns in order.
    fn open(&self, script: Vec<ScriptTurn>)
    -> impl Future<Output = anyhow::Result<Session>> + Send;
    /// Lets one gated turn answer.
    fn release_gate(&self);
}

const WAIT: Duration = Duration::from_secs(120);

/// Collects events until `stop` returns true for one.
pub async fn wait_for(
    events: &mut mpsc::UnboundedReceiver<AgentEvent>,
    seen: &mut Vec<AgentEvent>,
    mut stop: impl FnMut(&AgentEvent) -> bool,
) -> anyhow::Result<AgentEvent> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .map_err(|_| anyhow::anyhow!("timed out; saw {seen:?}"))?
            .ok_or_else(|| anyhow::anyhow!("the event stream ended; saw {seen:?}"))?;
        seen.push(event.clone());
        if stop(&event) {
            return Ok(event);
        }
    }
}

/// Awaits `future` for at most the suite's deadline; the error names `what` was awaited.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> anyhow::Result<T> {
    tokio::time::timeout(WAIT, future)
        .await
        .map_err(|_| anyhow::anyhow!("timed out after {WAIT:?} waiting for {what}"))
}

fn turn_completed(id: &str) -> impl FnMut(&AgentEvent) -> bool + '_ {
    move |event| matches!(event, AgentEvent::TurnCompleted { command_id, .. } if command_id == id)
}

fn events_of(session: &Session) -> anyhow::Result<mpsc::UnboundedReceiver<AgentEvent>> {
    session
        .events()
        .ok_or_else(|| anyhow::anyhow!("events already taken"))
}

fn stop_now() -> StopRequest {
    StopRequest {
        reason: "conformance".into(),
        force_after: Duration::from_secs(10),
    }
}

/// start → text → turn completed → send → second turn; events in order.
pub async fn two_turns(host: &impl ConformanceHost) -> anyhow::Result<()> {
    let (session, mut events, mut seen) = start_c1(
        host,
        vec![
            ScriptTurn::Text("first answer".into()),
            ScriptTurn::Text("second answer".into()),
        ],
        "say one",
    )
    .await?;
    wait_for(&mut events, &mut seen, turn_completed("c1")).await?;
    anyhow::ensure!(
        session.start(Command::user("c0", "again")).await != Receipt::Accepted,
        "start twice must be rejected"
    );
    anyhow::ensure!(session.send(Command::user("c2", "say two")).await == Receipt::Accepted);
    wait_for(&mut events, &mut seen, turn_completed("c2")).await?;
    let order: Vec<&str> = seen.iter().map(AgentEvent::kind).collect();
    let position = |kind: &str, from: usize| {
        order
            .iter()
            .skip(from)
            .position(|k| *k == kind)
            .map(|p| p + from)
    };
    let accepted = position("command_accepted", 0)
        .ok_or_else(|| anyhow::anyhow!("no command_accepted: {order:?}"))?;
    let started = position("turn_started", accepted)
        .ok_or_else(|| anyhow::anyhow!("no turn_started: {order:?}"))?;
    let completed_text = position("assistant_message_completed", started)
        .ok_or_else(|| anyhow::anyhow!("no message: {order:?}"))?;
    position("turn_completed", completed_text)
        .ok_or_else(|| anyhow::anyhow!("no turn_completed after the message: {order:?}"))?;
    anyhow::ensure!(seen.iter().any(|e| matches!(e, AgentEvent::AssistantMessageCompleted { text } if text.contains("first answer"))), "{seen:?}");
    anyhow::ensure!(seen.iter().any(|e| matches!(e, AgentEvent::AssistantMessageCompleted { text } if text.contains("second answer"))), "{seen:?}");
    anyhow::ensure!(
        seen.iter().any(|e| matches!(
            e,
            AgentEvent::SessionStarted {
                vendor_session_id: Some(_)
            }
        )),
        "vendor session id captured: {seen:?}"
    );
    anyhow::ensure!(session.snapshot().await.vendor_session_id.is_some());
    let facts = session.stop(stop_now()).await;
    anyhow::ensure!(
        matches!(facts.reason, CloseReason::Stopped { .. }),
        "{facts:?}"
    );
    anyhow::ensure!(
        facts.launch_dir_removed && facts.processes_reaped,
        "{facts:?}"
    );
    Ok(())
}

/// A command sent mid-turn is queued and delivered at the boundary with command_accepted.
pub async fn queue_at_boundary(host: &impl ConformanceHost) -> anyhow::Result<()> {
    let (session, mut events, mut seen) = start_c1(
        host,
        vec![
            ScriptTurn::GatedText("slow answer".into()),
            ScriptTurn::Text("queued answer".into()),
        ],
        "take your time",
    )
    .await?;
    wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::TurnStarted { .. })
    })
    .await?;
    let receipt = session.send(Command::user("c2", "then this")).await;
    anyhow::ensure!(receipt == Receipt::Queued { position: 1 }, "{receipt:?}");
    anyhow::ensure!(session.snapshot().await.queued == vec!["c2".to_owned()]);
    host.release_gate();
    wait_for(&mut events, &mut seen, turn_completed("c1")).await?;
    wait_for(
        &mut events,
        &mut seen,
        |e| matches!(e, AgentEvent::CommandAccepted { command_id } if command_id == "c2"),
    )
    .await?;
    wait_for(&mut events, &mut seen, turn_completed("c2")).await?;
    anyhow::ensure!(seen.iter().any(|e| matches!(e, AgentEvent::AssistantMessageCompleted { text } if text.contains("queued answer"))), "{seen:?}");
    session.stop(stop_now()).await;
    Ok(())
}

/// Interrupt mid-stream ends the turn as interrupted; the session stays usable.
pub async fn interrupt(host: &impl ConformanceHost) -> anyhow::Result<()> {
    let long = "this answer streams slowly and is interrupted long before it ends ".repeat(10);
    let session = host
        .open(vec![
            ScriptTurn::SlowText(long),
            ScriptTurn::Text("after the interrupt".into()),
        ])
        .await?;
    let mut events = events_of(&session)?;
    let mut seen = Vec::new();
    anyhow::ensure!(session.interrupt().await == Err(SessionError::NotBusy));
    session.start(Command::user("c1", "go")).await;
    // Mid-stream: the first words have arrived.
    wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::AssistantTextDelta { .. })
    })
    .await?;
    session.interrupt().await?;
    let completed = wait_for(&mut events, &mut seen, turn_completed("c1")).await?;
    anyhow::ensure!(
        matches!(
            completed,
            AgentEvent::TurnCompleted {
                outcome: TurnOutcome::Interrupted,
                ..
            }
        ),
        "{completed:?}"
    );
    anyhow::ensure!(session.send(Command::user("c2", "still there?")).await == Receipt::Accepted);
    wait_for(&mut events, &mut seen, turn_completed("c2")).await?;
    session.stop(stop_now()).await;
    Ok(())
}

/// A tool that needs permission raises `PermissionRequested`; allow and deny both reach the
/// runtime and the turn completes.
pub async fn permission(
    host: &impl ConformanceHost,
    decision: PermissionDecision,
) -> anyhow::Result<Vec<AgentEvent>> {
    let (session, mut events, mut seen) = start_c1(
        host,
        vec![
            ScriptTurn::Shell {
                command: "echo conformance-tool-ran | tee conformance-output.txt".into(),
            },
            ScriptTurn::Text("done with the tool".into()),
        ],
        "run the tool",
    )
    .await?;
    let asked = wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::PermissionRequested { .. })
    })
    .await?;
    let AgentEvent::PermissionRequested { request_id, .. } = asked else {
        anyhow::bail!("unreachable")
    };
    anyhow::ensure!(
        session
            .answer_permission("no-such-request", PermissionDecision::Allow)
            .await
            .is_err()
    );
    session.answer_permission(&request_id, decision).await?;
    wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::ToolCallFinished { .. })
    })
    .await?;
    wait_for(&mut events, &mut seen, turn_completed("c1")).await?;
    session.stop(stop_now()).await;
    Ok(seen)
}

/// Opens a session on `script` and starts `c1` with `text`, which must be accepted; returns the
/// session, its event stream and the events seen so far.
async fn start_c1(
    host: &impl ConformanceHost,
    script: Vec<ScriptTurn>,
    text: &str,
) -> anyhow::Result<(
    Session,
    mpsc::UnboundedReceiver<AgentEvent>,
    Vec<AgentEvent>,
)> {
    let session = host.open(script).await?;
    let events = events_of(&session)?;
    let receipt = session.start(Command::user("c1", text)).await;
    anyhow::ensure!(receipt == Receipt::Accepted, "start: {receipt:?}");
    Ok((session, events, Vec::new()))
}

/// A session whose first command `c1` is running and will not finish (its answer is gated).
async fn busy_session(
    host: &impl ConformanceHost,
) -> anyhow::Result<(
    Session,
    mpsc::UnboundedReceiver<AgentEvent>,
    Vec<AgentEvent>,
)> {
    let (session, mut events, mut seen) =
        start_c1(host, vec![ScriptTurn::GatedText("never".into())], "go").await?;
    wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::TurnStarted { .. })
    })
    .await?;
    Ok((session, events, seen))
}

/// Sends `id` while a turn runs: a queueing runtime queues it, a steering one takes it into
/// the turn.
async fn send_mid_turn(session: &Session, id: &str) -> anyhow::Result<()> {
    let receipt = session.send(Command::user(id, "sent mid-turn")).await;
    let expected = match session.capabilities().mid_turn_delivery {
        MidTurnDelivery::Steer => matches!(receipt, Receipt::Accepted),
        MidTurnDelivery::SafeBoundaryQueue => matches!(receipt, Receipt::Queued { .. }),
        MidTurnDelivery::Reject => matches!(receipt, Receipt::Rejected { .. }),
    };
    anyhow::ensure!(
        expected,
        "{:?} runtime answered {receipt:?}",
        session.capabilities().mid_turn_delivery
    );
    Ok(())
}

/// The runtime killed with SIGKILL: closed once with Crashed, queued commands failed, nothing
/// after closed, no process left.
pub async fn crash(host: &impl ConformanceHost) -> anyhow::Result<()> {
    let (session, mut events, mut seen) = busy_session(host).await?;
    send_mid_turn(&session, "c2").await?;
    let pid = session
        .snapshot()
        .await
        .pid
        .ok_or_else(|| anyhow::anyhow!("no pid"))?;
    let pid =
        rustix::process::Pid::from_raw(pid as i32).ok_or_else(|| anyhow::anyhow!("bad pid"))?;
    rustix::process::kill_process(pid, rustix::process::Signal::KILL)?;
    let facts = within("the session to close after SIGKILL", session.closed()).await?;
    anyhow::ensure!(facts.reason == CloseReason::Crashed, "{facts:?}");
    anyhow::ensure!(
        facts.failed_commands == vec!["c1".to_owned(), "c2".to_owned()],
        "{facts:?}"
    );
    anyhow::ensure!(
        facts.processes_reaped && facts.launch_dir_removed,
        "{facts:?}"
    );
    // The event stream ends after closed.
    within("the event stream to end", async {
        while let Some(event) = events.recv().await {
            seen.push(event);
        }
    })
    .await?;
    let failed: Vec<&str> = seen
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CommandFailed { command_id, .. } => Some(command_id.as_str()),
            _ => None,
        })
        .collect();
    anyhow::ensure!(failed == ["c1", "c2"], "{seen:?}");
    anyhow::ensure!(
        session.closed().await == facts,
        "closed settles to the same facts every time"
    );
    anyhow::ensure!(session.send(Command::user("c3", "late")).await != Receipt::Accepted);
    anyhow::ensure!(
        !paddock_process::is_zombie(pid.as_raw_nonzero().get() as u32),
        "zombie left"
    );
    Ok(())
}

/// stop with `force_after`: queued commands fail, closed settles once with Stopped.
pub async fn stop(host: &impl ConformanceHost) -> anyhow::Result<()> {
    let (session, _events, _seen) = busy_session(host).await?;
    send_mid_turn(&session, "c2").await?;
    let facts = session
        .stop(StopRequest {
            reason: "owner_request".into(),
            force_after: Duration::from_secs(4),
        })
        .await;
    anyhow::ensure!(
        matches!(&facts.reason, CloseReason::Stopped { reason, .. } if reason == "owner_request"),
        "{facts:?}"
    );
    anyhow::ensure!(
        facts.failed_commands == vec!["c1".to_owned(), "c2".to_owned()],
        "{facts:?}"
    );
    anyhow::ensure!(
        facts.processes_reaped && facts.launch_dir_removed,
        "{facts:?}"
    );
    let again = session.stop(stop_now()).await;
    anyhow::ensure!(again == facts, "a second stop reports the same facts");
    host.release_gate();
    Ok(())
}

/// For `steer` runtimes: a command sent while the model is answering is accepted at once and
/// taken into the running turn, which ends once (for the root command) after the model
/// answered both.
pub async fn steer_mid_turn(host: &impl ConformanceHost) -> anyhow::Result<()> {
    let (session, mut events, mut seen) = start_c1(
        host,
        vec![
            ScriptTurn::HeldText("a held answer of several words".into()),
            ScriptTurn::Text("steered answer".into()),
        ],
        "take your time",
    )
    .await?;
    // The model is answering: the first words arrived.
    wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::AssistantTextDelta { .. })
    })
    .await?;
    let receipt = session.send(Command::user("c2", "and also this")).await;
    anyhow::ensure!(receipt == Receipt::Accepted, "{receipt:?}");
    wait_for(
        &mut events,
        &mut seen,
        |e| matches!(e, AgentEvent::CommandAccepted { command_id } if command_id == "c2"),
    )
    .await?;
    anyhow::ensure!(session.snapshot().await.queued.is_empty());
    // Only now may the model finish its first answer: the steer is in before the turn ends.
    host.release_gate();
    wait_for(&mut events, &mut seen, turn_completed("c1")).await?;
    anyhow::ensure!(seen.iter().any(|e| matches!(e, AgentEvent::AssistantMessageCompleted { text } if text.contains("steered answer"))), "{seen:?}");
    anyhow::ensure!(
        !seen.iter().any(
            |e| matches!(e, AgentEvent::TurnCompleted { command_id, .. } if command_id == "c2")
        ),
        "{seen:?}"
    );
    session.stop(stop_now()).await;
    Ok(())
}
