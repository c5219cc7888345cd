//! The logical session: admission, FIFO queueing, safe-boundary delivery, terminal ordering and
//! cleanup exactly once. One actor task owns all state; the public [`Session`] handle talks to
//! it through a channel, so no two operations can interleave half-way.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paddock_process::ChildSpec;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, info, warn};

use crate::adapters::{Adapter, Decoded, Prepared, Protocol};
use crate::contract::*;
use crate::credentials::LaunchCredentials;
use crate::host::{HostConfig, LaunchDir, compose_env};
use crate::lane::{LaneOutput, ProcessLane};
use crate::sandbox::{self, LaunchSandbox};

/// How long a session dropped without `stop` gets before its process group is killed.
const DROP_FORCE_AFTER: Duration = Duration::from_secs(5);

enum Request {
    Start(Command, oneshot::Sender<Receipt>),
    Send(Command, oneshot::Sender<Receipt>),
    Interrupt(oneshot::Sender<Result<(), SessionError>>),
    Permission(
        String,
        PermissionDecision,
        oneshot::Sender<Result<(), SessionError>>,
    ),
    Stop(StopRequest),
    Snapshot(oneshot::Sender<Snapshot>),
}

/// A running agent session. Dropping it stops the session.
pub struct Session {
    backend: BackendId,
    capabilities: Capabilities,
    sandbox: LaunchSandbox,
    requests: mpsc::UnboundedSender<Request>,
    events: Mutex<Option<mpsc::UnboundedReceiver<AgentEvent>>>,
    closed: watch::Receiver<Option<ClosedFacts>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("backend", &self.backend)
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

impl Session {
    pub fn backend(&self) -> BackendId {
        self.backend
    }

    /// The runtime's declared capabilities (how a command sent mid-turn is delivered).
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request, closed: T) -> T {
        let (tx, rx) = oneshot::channel();
        if self.requests.send(make(tx)).is_err() {
            return closed;
        }
        rx.await.unwrap_or(closed)
    }

    /// Whether the runtime runs confined by the host's sandbox.
    pub fn sandbox(&self) -> &LaunchSandbox {
        &self.sandbox
    }

    /// Admits the first command.
    pub async fn start(&self, command: Command) -> Receipt {
        self.ask(|tx| Request::Start(command, tx), closed_receipt())
            .await
    }

    /// Accepts, queues or rejects a later command.
    pub async fn send(&self, command: Command) -> Receipt {
        self.ask(|tx| Request::Send(command, tx), closed_receipt())
            .await
    }

    /// Interrupts the running turn; queued commands stay queued.
    pub async fn interrupt(&self) -> Result<(), SessionError> {
        self.ask(Request::Interrupt, Err(SessionError::Closed))
            .await
    }

    /// Answers a `PermissionRequested` event.
    pub async fn answer_permission(
        &self,
        request_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), SessionError> {
        let request_id = request_id.to_owned();
        self.ask(
            |tx| Request::Permission(request_id, decision, tx),
            Err(SessionError::Closed),
        )
        .await
    }

    /// Stops the session and waits for it to close.
    pub async fn stop(&self, request: StopRequest) -> ClosedFacts {
        let _ = self.requests.send(Request::Stop(request));
        self.closed().await
    }

    pub async fn snapshot(&self) -> Snapshot {
        let closed = Snapshot {
            backend: self.backend,
            state: SessionState::Closed,
            current_command: None,
            queued: Vec::new(),
            vendor_session_id: None,
            pid: None,
            pending_permissions: Vec::new(),
        };
        self.ask(Request::Snapshot, closed).await
    }

    /// The event stream; it can be taken once and ends after the session closed.
    pub fn events(&self) -> Option<mpsc::UnboundedReceiver<AgentEvent>> {
        self.events.lock().ok().and_then(|mut events| events.take())
    }

    /// Resolves, exactly once per session, with the terminal facts (immediately if closed).
    pub async fn closed(&self) -> ClosedFacts {
        let mut closed = self.closed.clone();
        match closed.wait_for(Option::is_some).await {
            Ok(facts) => facts.clone().unwrap_or_else(lost_facts),
            Err(_) => lost_facts(),
        }
    }

    /// The facts, if the session has closed.
    pub fn closed_now(&self) -> Option<ClosedFacts> {
        self.closed.borrow().clone()
    }
}

fn closed_receipt() -> Receipt {
    Receipt::Rejected {
        reason: "the session is closed".into(),
    }
}

fn lost_facts() -> ClosedFacts {
    ClosedFacts {
        reason: CloseReason::Crashed,
        exit_status: None,
        failed_commands: Vec::new(),
        launch_dir_removed: false,
        processes_reaped: false,
    }
}

/// What the blocking part of [`open`] made for one launch.
struct LaunchFiles {
    dir: LaunchDir,
    secrets: crate::credentials::LaunchSecrets,
    prepared: Prepared,
}

/// Creates the launch directory, mints the credentials and lets the adapter write its files.
/// It reads and writes the file system, so it runs on the blocking pool. On failure nothing
/// is left: the directory is removed and the credentials released.
fn prepare_launch(
    host: &HostConfig,
    adapter: &dyn Adapter,
    request: &OpenRequest,
    credentials: Option<&Arc<dyn LaunchCredentials>>,
) -> Result<LaunchFiles, OpenError> {
    let launch_id = &request.launch.launch_id;
    let dir = LaunchDir::create(host, launch_id)
        .map_err(|error| OpenError::LaunchDir(error.to_string()))?;
    let secrets = match (credentials, adapter.descriptor().model_api) {
        (Some(credentials), Some(api)) => {
            match credentials.prepare(request.backend, api, launch_id, &dir.root) {
                Ok(secrets) => secrets,
                Err(message) => {
                    dir.remove();
                    return Err(OpenError::Credentials(message));
                }
            }
        }
        _ => crate::credentials::LaunchSecrets::default(),
    };
    match adapter.prepare(request, &dir, &secrets.env) {
        Ok(prepared) => Ok(LaunchFiles {
            dir,
            secrets,
            prepared,
        }),
        Err(error) => {
            discard_launch(&dir, credentials, launch_id);
            Err(OpenError::LaunchDir(format!(
                "could not prepare the launch: {error}"
            )))
        }
    }
}

/// Releases the launch's credentials and removes its directory; true when the directory is
/// gone. Blocking: call it on the blocking pool.
fn discard_launch(
    dir: &LaunchDir,
    credentials: Option<&Arc<dyn LaunchCredentials>>,
    launch_id: &str,
) -> bool {
    if let Some(credentials) = credentials {
        credentials.release(launch_id);
    }
    dir.remove()
}

/// [`discard_launch`] on the blocking pool.
async fn discard_launch_off_thread(
    dir: LaunchDir,
    credentials: Option<Arc<dyn LaunchCredentials>>,
    launch_id: String,
) -> bool {
    tokio::task::spawn_blocking(move || discard_launch(&dir, credentials.as_ref(), &launch_id))
        .await
        .unwrap_or(false)
}

/// Launches the runtime and returns the session handle.
pub(crate) async fn open(
    host: Arc<HostConfig>,
    adapter: Arc<dyn Adapter>,
    program: PathBuf,
    request: OpenRequest,
) -> Result<Session, OpenError> {
    let working_directory = &request.launch.working_directory;
    if !tokio::fs::metadata(working_directory)
        .await
        .is_ok_and(|metadata| metadata.is_dir())
    {
        return Err(OpenError::WorkingDirectory(working_directory.clone()));
    }
    let descriptor = adapter.descriptor();
    let credentials = match (&host.credentials, descriptor.model_api) {
        (None, Some(_)) => {
            return Err(OpenError::NoCredentialBroker {
                backend: request.backend,
            });
        }
        (_, None) => None,
        (Some(credentials), Some(_)) => Some(credentials.clone()),
    };
    let LaunchFiles {
        dir,
        secrets,
        prepared,
    } = {
        let (host, adapter, request, credentials) = (
            host.clone(),
            adapter.clone(),
            request.clone(),
            credentials.clone(),
        );
        tokio::task::spawn_blocking(move || {
            prepare_launch(&host, adapter.as_ref(), &request, credentials.as_ref())
        })
        .await
        .map_err(|error| {
            OpenError::LaunchDir(format!("the launch preparation did not finish: {error}"))
        })??
    };
    let mut plan = adapter.launch(&request);
    plan.env.extend(prepared.env.iter().cloned());
    let env = compose_env(&host, &dir, &plan.env, &request.env, &secrets.env);
    let wrapped = {
        let (host, dir, working_directory, program, env) = (
            host.clone(),
            dir.clone(),
            request.launch.working_directory.clone(),
            program.clone(),
            env.clone(),
        );
        tokio::task::spawn_blocking(move || {
            sandbox::wrap(&host, &dir, &working_directory, program, plan.args, &env)
        })
        .await
        .map_err(|error| OpenError::Sandbox(format!("the sandbox plan did not finish: {error}")))
        .and_then(|wrapped| wrapped)
    };
    let wrapped = match wrapped {
        Ok(wrapped) => wrapped,
        Err(error) => {
            discard_launch_off_thread(dir, credentials, request.launch.launch_id.clone()).await;
            return Err(error);
        }
    };
    let launch_sandbox = wrapped.sandbox;
    let spec = ChildSpec {
        program: wrapped.program,
        args: wrapped.args,
        sandbox: wrapped.confine,
        env,
        current_dir: Some(request.launch.working_directory.clone()),
        stdin: true,
        stdout: true,
        ..ChildSpec::default()
    };
    let (lane_tx, lane_rx) = mpsc::unbounded_channel();
    let mut lane = match ProcessLane::spawn(spec, lane_tx) {
        Ok(lane) => lane,
        Err(error) => {
            discard_launch_off_thread(dir, credentials, request.launch.launch_id.clone()).await;
            return Err(OpenError::Spawn {
                program: program.display().to_string(),
                message: error.to_string(),
            });
        }
    };
    let launch_id = &request.launch.launch_id;
    if !launch_sandbox.is_confined() {
        info!(
            backend = %request.backend,
            launch_id,
            sandbox = %launch_sandbox,
            "agent launch is not sandboxed: it can read every file this user can, Paddock's token and key files included"
        );
    }
    debug!(
        backend = %request.backend,
        launch_id,
        pid = lane.pid(),
        program = %program.display(),
        sandbox = %launch_sandbox,
        "agent launched"
    );
    let mut protocol = adapter.protocol(&request, &prepared);
    let (bridge_tx, bridge_rx) = mpsc::unbounded_channel();
    let bridge = adapter
        .bridge(&prepared)
        .map(|bridge| bridge.start(bridge_tx));
    let bridge_rx = bridge.is_some().then_some(bridge_rx);
    for line in protocol.startup() {
        let written = match &bridge {
            Some(bridge) => bridge
                .send(line)
                .map_err(|_| "the bridge stopped".to_owned()),
            None => lane
                .write_line(&line)
                .await
                .map_err(|error| error.to_string()),
        };
        if let Err(error) = written {
            warn!(%error, "could not write a startup line");
        }
    }
    let (requests_tx, requests_rx) = mpsc::unbounded_channel();
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let (closed_tx, closed_rx) = watch::channel(None);
    let actor = Actor {
        credentials,
        launch_id: request.launch.launch_id.clone(),
        backend: request.backend,
        mid_turn: descriptor.capabilities.mid_turn_delivery,
        protocol,
        bridge,
        lane,
        dir,
        events: Some(events_tx),
        closed: closed_tx,
        state: SessionState::Ready,
        current: None,
        queue: VecDeque::new(),
        seen: HashSet::new(),
        vendor_session: None,
        permissions: HashMap::new(),
        interrupted: false,
        next_control: 1,
        steered: Vec::new(),
    };
    tokio::spawn(actor.run(requests_rx, lane_rx, bridge_rx));
    Ok(Session {
        backend: request.backend,
        capabilities: descriptor.capabilities,
        sandbox: launch_sandbox,
        requests: requests_tx,
        events: Mutex::new(Some(events_rx)),
        closed: closed_rx,
    })
}

struct Actor {
    /// The broker whose vouchers for `launch_id` are revoked at close.
    credentials: Option<Arc<dyn LaunchCredentials>>,
    launch_id: String,
    backend: BackendId,
    mid_turn: MidTurnDelivery,
    protocol: Box<dyn Protocol>,
    /// Where outbound messages go for a service runtime (else the process's stdin).
    bridge: Option<mpsc::UnboundedSender<String>>,
    lane: ProcessLane,
    dir: LaunchDir,
    events: Option<mpsc::UnboundedSender<AgentEvent>>,
    closed: watch::Sender<Option<ClosedFacts>>,
    state: SessionState,
    current: Option<String>,
    queue: VecDeque<Command>,
    seen: HashSet<String>,
    vendor_session: Option<String>,
    permissions: HashMap<String, Value>,
    interrupted: bool,
    next_control: u64,
    /// Commands steered into the running turn; they end with it.
    steered: Vec<String>,
}

enum Exit {
    Stop(StopRequest),
    Crashed(Option<std::process::ExitStatus>),
}

impl Actor {
    fn emit(&self, event: AgentEvent) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }

    async fn run(
        mut self,
        mut requests: mpsc::UnboundedReceiver<Request>,
        mut lane: mpsc::UnboundedReceiver<LaneOutput>,
        mut bridge: Option<mpsc::UnboundedReceiver<String>>,
    ) {
        let exit = loop {
            tokio::select! {
                request = requests.recv() => match request {
                    None => break Exit::Stop(StopRequest { reason: "the session handle was dropped".into(), force_after: DROP_FORCE_AFTER }),
                    Some(Request::Stop(stop)) => break Exit::Stop(stop),
                    Some(request) => self.handle(request).await,
                },
                output = lane.recv() => match output {
                    Some(LaneOutput::Line(line)) => self.decode(&line).await,
                    Some(LaneOutput::Broken(message)) => {
                        self.emit(AgentEvent::Error { message });
                    }
                    Some(LaneOutput::Exited(status)) => break Exit::Crashed(status),
                    None => break Exit::Crashed(None),
                },
                line = recv_bridge(&mut bridge) => match line {
                    Some(line) => self.decode(&line).await,
                    None => bridge = None,
                },
            }
        };
        self.state = SessionState::Stopping;
        self.bridge = None;
        let (reason, exit_status) = match exit {
            Exit::Stop(stop) => {
                let (status, forced) = self.lane.stop(stop.force_after).await;
                (
                    CloseReason::Stopped {
                        reason: stop.reason,
                        forced,
                    },
                    status,
                )
            }
            Exit::Crashed(status) => {
                let stderr = self.lane.stderr_tail();
                if !stderr.trim().is_empty() {
                    debug!(backend = %self.backend, stderr = %stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | "), "agent exited");
                }
                let status = self.lane.reap().await.or(status);
                (CloseReason::Crashed, status)
            }
        };
        let mut failed = Vec::new();
        if let Some(current) = self.current.take() {
            self.emit(AgentEvent::CommandFailed {
                command_id: current.clone(),
                reason: "the session closed during the turn".into(),
            });
            failed.push(current);
        }
        // Steered commands went into the running turn and end with it.
        for steered in std::mem::take(&mut self.steered) {
            self.emit(AgentEvent::CommandFailed {
                command_id: steered.clone(),
                reason: "the session closed during the turn it steered".into(),
            });
            failed.push(steered);
        }
        while let Some(command) = self.queue.pop_front() {
            self.emit(AgentEvent::CommandFailed {
                command_id: command.id.clone(),
                reason: "the session closed before the command was delivered".into(),
            });
            failed.push(command.id);
        }
        let processes_reaped = wait_group_gone(self.lane.pid(), Duration::from_secs(3)).await;
        let launch_dir_removed = discard_launch_off_thread(
            self.dir.clone(),
            self.credentials.clone(),
            self.launch_id.clone(),
        )
        .await;
        self.state = SessionState::Closed;
        // Closed settles once, after the last event; then the event stream ends.
        let _ = self.closed.send(Some(ClosedFacts {
            reason,
            exit_status,
            failed_commands: failed,
            launch_dir_removed,
            processes_reaped,
        }));
        self.events = None;
        // Answer anything still asked, so no caller waits forever.
        requests.close();
        while let Some(request) = requests.recv().await {
            self.refuse(request);
        }
    }

    fn refuse(&self, request: Request) {
        match request {
            Request::Start(_, tx) | Request::Send(_, tx) => {
                let _ = tx.send(closed_receipt());
            }
            Request::Interrupt(tx) | Request::Permission(_, _, tx) => {
                let _ = tx.send(Err(SessionError::Closed));
            }
            Request::Snapshot(tx) => {
                let _ = tx.send(self.snapshot());
            }
            Request::Stop(_) => {}
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            backend: self.backend,
            state: self.state,
            current_command: self.current.clone(),
            queued: self
                .queue
                .iter()
                .map(|command| command.id.clone())
                .collect(),
            vendor_session_id: self.vendor_session.clone(),
            pid: (self.state != SessionState::Closed).then(|| self.lane.pid()),
            pending_permissions: self.permissions.keys().cloned().collect(),
        }
    }

    async fn handle(&mut self, request: Request) {
        match request {
            Request::Start(command, tx) => {
                let receipt = if self.state != SessionState::Ready {
                    Receipt::Rejected {
                        reason: "the session has already started; use send".into(),
                    }
                } else {
                    self.admit(command).await
                };
                let _ = tx.send(receipt);
            }
            Request::Send(command, tx) => {
                let receipt = if self.state == SessionState::Ready {
                    Receipt::Rejected {
                        reason: "the session has not started; use start".into(),
                    }
                } else {
                    self.admit(command).await
                };
                let _ = tx.send(receipt);
            }
            Request::Interrupt(tx) => {
                let result = if self.current.is_none() {
                    Err(SessionError::NotBusy)
                } else {
                    self.interrupted = true;
                    let id = format!("paddock-interrupt-{}", self.next_control);
                    self.next_control += 1;
                    let lines = self.protocol.interrupt(&id);
                    self.write(lines).await.map_err(SessionError::Write)
                };
                let _ = tx.send(result);
            }
            Request::Permission(request_id, decision, tx) => {
                let result = match self.permissions.remove(&request_id) {
                    None => Err(SessionError::UnknownPermission(request_id)),
                    Some(input) => {
                        let lines = self.protocol.permission(&request_id, &decision, &input);
                        self.write(lines).await.map_err(SessionError::Write)
                    }
                };
                let _ = tx.send(result);
            }
            Request::Snapshot(tx) => {
                let _ = tx.send(self.snapshot());
            }
            Request::Stop(_) => {}
        }
    }

    /// Delivers now when idle, else queues or rejects according to the runtime's capability.
    async fn admit(&mut self, command: Command) -> Receipt {
        if command.id.is_empty() || !self.seen.insert(command.id.clone()) {
            return Receipt::Rejected {
                reason: format!("command id `{}` is empty or was used before", command.id),
            };
        }
        if self.current.is_none() {
            return match self.deliver(command).await {
                Ok(()) => Receipt::Accepted,
                Err(reason) => Receipt::Rejected { reason },
            };
        }
        let steer = match self.mid_turn {
            MidTurnDelivery::Steer => self.protocol.steer(&command),
            _ => None,
        };
        match (self.mid_turn, steer) {
            // Steering runtimes take the command into the running turn now.
            (MidTurnDelivery::Steer, Some(lines)) => match self.write(lines).await {
                Ok(()) => {
                    self.steered.push(command.id.clone());
                    self.emit(AgentEvent::CommandAccepted {
                        command_id: command.id,
                    });
                    Receipt::Accepted
                }
                Err(error) => Receipt::Rejected {
                    reason: format!("could not write to the agent: {error}"),
                },
            },
            (MidTurnDelivery::SafeBoundaryQueue | MidTurnDelivery::Steer, _) => {
                self.queue.push_back(command);
                Receipt::Queued {
                    position: self.queue.len(),
                }
            }
            (MidTurnDelivery::Reject, _) => Receipt::Rejected {
                reason: "a turn is running".into(),
            },
        }
    }

    async fn deliver(&mut self, command: Command) -> Result<(), String> {
        let lines = self.protocol.user(&command);
        if let Err(error) = self.write(lines).await {
            warn!(backend = %self.backend, %error, "could not deliver a command");
            self.emit(AgentEvent::CommandFailed {
                command_id: command.id.clone(),
                reason: format!("could not write to the agent: {error}"),
            });
            return Err(format!("could not write to the agent: {error}"));
        }
        self.state = SessionState::Busy;
        self.interrupted = false;
        self.current = Some(command.id.clone());
        self.emit(AgentEvent::CommandAccepted {
            command_id: command.id.clone(),
        });
        self.emit(AgentEvent::TurnStarted {
            command_id: command.id,
        });
        Ok(())
    }

    /// Sends messages to the runtime: to the bridge for a service, else to stdin.
    async fn write(&mut self, lines: Vec<String>) -> Result<(), String> {
        for line in lines {
            match &self.bridge {
                Some(bridge) => bridge
                    .send(line)
                    .map_err(|_| "the service bridge stopped".to_owned())?,
                None => self
                    .lane
                    .write_line(&line)
                    .await
                    .map_err(|error| error.to_string())?,
            }
        }
        Ok(())
    }

    async fn decode(&mut self, line: &str) {
        for decoded in self.protocol.decode(line) {
            match decoded {
                Decoded::Event(event) => self.emit(event),
                Decoded::Write(message) => {
                    if let Err(error) = self.write(vec![message]).await {
                        self.emit(AgentEvent::Error {
                            message: format!("could not write to the agent: {error}"),
                        });
                    }
                }
                Decoded::VendorSession(id) => self.vendor_session = Some(id),
                Decoded::Permission {
                    request_id,
                    tool,
                    input,
                } => {
                    self.permissions.insert(request_id.clone(), input.clone());
                    self.emit(AgentEvent::PermissionRequested {
                        request_id,
                        tool,
                        input,
                    });
                }
                Decoded::TurnEnded(outcome) => {
                    let Some(command_id) = self.current.take() else {
                        continue;
                    };
                    let outcome = if self.interrupted {
                        TurnOutcome::Interrupted
                    } else {
                        outcome
                    };
                    self.interrupted = false;
                    self.permissions.clear();
                    // Steered commands were part of this turn; its completion settles them.
                    self.steered.clear();
                    self.emit(AgentEvent::TurnCompleted {
                        command_id,
                        outcome,
                    });
                    self.state = SessionState::Idle;
                    // The safe boundary: deliver the next queued command, if any.
                    while let Some(next) = self.queue.pop_front() {
                        if self.deliver(next).await.is_ok() {
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// The next line from the bridge; pending forever when there is none.
async fn recv_bridge(bridge: &mut Option<mpsc::UnboundedReceiver<String>>) -> Option<String> {
    match bridge {
        Some(bridge) => bridge.recv().await,
        None => std::future::pending().await,
    }
}

/// Waits (briefly) until the leader's group is gone: the lane kills the group once the leader
/// exits, and the kernel needs a moment to finish them.
async fn wait_group_gone(pid: u32, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if group_gone(pid) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// True when no process of the group led by `pid` remains.
fn group_gone(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return true;
    };
    matches!(
        rustix::process::test_kill_process_group(pid),
        Err(rustix::io::Errno::SRCH)
    )
}
