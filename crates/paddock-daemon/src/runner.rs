//! The executor of `paddock_agents::manager`: one task per bot that owns the bot's pure
//! [`Manager`], feeds it messages, session events and timer ticks, and applies its effects
//! through the agents subsystem — open a session (`StartProcess`), hand it the inbox notice
//! (`Deliver`, computed fresh from the store so coalesced messages become one notice), stop it
//! when idle (`StopProcess`), kill a stalled turn (`TerminateStalled`). Work that waits (opening,
//! sending, stopping) runs on its own task and reports back through the same channel, so the
//! loop never blocks and events reach the reducer in order.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use paddock_agents::manager::{Effect, Manager, ManagerConfig, ManagerEvent, Timestamp};
use paddock_client::control::{
    AgentsOpenParams, AgentsSendParams, AgentsStopParams, ControlError, SensitiveText,
};
use paddock_store::Store;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use crate::agents::{AgentsHost, CursorItem};

/// The default idle time before a bot's process is stopped.
pub const DEFAULT_IDLE_STOP: Duration = Duration::from_secs(600);
/// The default silence after which a running turn is ended.
pub const DEFAULT_STALL_AFTER: Duration = Duration::from_secs(600);
/// Messages waiting for one bot at most.
const MAX_QUEUE: usize = 256;

/// What to launch for a bot, and the instructions it starts with.
#[derive(Debug, Clone)]
pub struct Launch {
    pub open: AgentsOpenParams,
}

/// Timing of every bot's manager.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub idle_stop: Duration,
    pub stall_after: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            idle_stop: DEFAULT_IDLE_STOP,
            stall_after: DEFAULT_STALL_AFTER,
        }
    }
}

/// The bots' runners. Cheap to clone.
#[derive(Clone)]
pub struct Runners {
    agents: AgentsHost,
    store: Arc<Store>,
    timing: Timing,
    origin: Instant,
    runners: Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Input>>>>,
}

impl std::fmt::Debug for Runners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runners")
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

/// What reaches a runner's loop.
enum Input {
    Message {
        id: String,
        launch: Box<Launch>,
    },
    Event(ManagerEvent),
    /// `StartProcess` finished: the session id, or why not.
    Opened(Result<String, ControlError>),
    /// The session this runner follows has closed.
    Exited(String),
}

impl Runners {
    pub fn new(agents: AgentsHost, store: Arc<Store>, timing: Timing) -> Self {
        Self {
            agents,
            store,
            timing,
            origin: Instant::now(),
            runners: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Hands message `id` (an inbox sequence number) for `bot` to its manager, starting the
    /// bot's runner on first use.
    pub fn message(&self, bot: &str, id: String, launch: Launch) {
        let mut runners = self.runners.lock().unwrap_or_else(PoisonError::into_inner);
        let input = Input::Message {
            id,
            launch: Box::new(launch),
        };
        let input = match runners.get(bot) {
            Some(sender) => match sender.send(input) {
                Ok(()) => return,
                Err(mpsc::error::SendError(input)) => input,
            },
            None => input,
        };
        let (sender, receiver) = mpsc::unbounded_channel();
        let _ = sender.send(input);
        runners.insert(bot.to_owned(), sender.clone());
        let runner = Runner {
            bot: bot.to_owned(),
            runners: self.clone(),
            manager: Manager::new(ManagerConfig {
                idle_stop: self.timing.idle_stop,
                stall_after: self.timing.stall_after,
                max_queue: NonZeroUsize::new(MAX_QUEUE).unwrap_or(NonZeroUsize::MIN),
            }),
            sender,
            session: None,
            launch: None,
            tick: None,
        };
        tokio::spawn(runner.run(receiver));
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_millis(u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX))
    }

    fn instant(&self, at: Timestamp) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.origin + Duration::from_millis(at.as_millis()))
    }
}

struct Runner {
    bot: String,
    runners: Runners,
    manager: Manager,
    sender: mpsc::UnboundedSender<Input>,
    /// The running session, once `StartProcess` succeeded.
    session: Option<String>,
    /// The latest launch definition.
    launch: Option<Launch>,
    tick: Option<Timestamp>,
}

impl Runner {
    async fn run(mut self, mut inputs: mpsc::UnboundedReceiver<Input>) {
        loop {
            let timer = self.tick.map(|at| self.runners.instant(at));
            let input = tokio::select! {
                input = inputs.recv() => match input {
                    Some(input) => input,
                    None => return,
                },
                () = async {
                    match timer {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    self.tick = None;
                    Input::Event(ManagerEvent::Tick)
                }
            };
            let event = match input {
                Input::Message { id, launch } => {
                    self.launch = Some(*launch);
                    ManagerEvent::MessageArrived {
                        id,
                        text: String::new(),
                    }
                }
                Input::Event(event) => event,
                Input::Opened(Ok(session)) => {
                    self.follow(&session);
                    self.session = Some(session);
                    ManagerEvent::ProcessStarted
                }
                Input::Opened(Err(error)) => ManagerEvent::ProcessStartFailed {
                    reason: error.message,
                },
                Input::Exited(session) => {
                    if self.session.as_deref() != Some(session.as_str()) {
                        continue;
                    }
                    self.session = None;
                    ManagerEvent::ProcessExited
                }
            };
            let effects = self.manager.step(event, self.runners.now());
            for effect in effects {
                self.apply(effect);
            }
        }
    }

    fn apply(&mut self, effect: Effect) {
        let agents = self.runners.agents.clone();
        let sender = self.sender.clone();
        match effect {
            Effect::StartProcess => {
                let Some(launch) = self.launch.clone() else {
                    let _ = sender.send(Input::Opened(Err(ControlError::new(
                        paddock_client::control::ErrorCode::Internal,
                        "no launch definition",
                    ))));
                    return;
                };
                tokio::spawn(async move {
                    let opened = agents
                        .open(launch.open)
                        .await
                        .map(|opened| opened.session.id);
                    let _ = sender.send(Input::Opened(opened));
                });
            }
            Effect::Deliver { message_ids, .. } => {
                let Some(session) = self.session.clone() else {
                    return;
                };
                let store = self.runners.store.clone();
                let bot = self.bot.clone();
                debug!(bot = %bot, messages = message_ids.len(), "delivering the inbox notice");
                tokio::spawn(async move {
                    let notice = store
                        .blocking(move |store| {
                            let cursor = store.inbox_cursor(&bot)?;
                            store.inbox_after(&bot, cursor.seen)
                        })
                        .await
                        .map(|pending| crate::bots::notice(&pending))
                        .unwrap_or_default();
                    if notice.is_empty() {
                        // Everything was pulled meanwhile: a turn with nothing to say would
                        // only cost tokens. Report the boundary as reached.
                        let _ = sender.send(Input::Event(ManagerEvent::TurnCompleted));
                        return;
                    }
                    let receipt = agents
                        .send(AgentsSendParams {
                            id: session,
                            text: SensitiveText::new(notice),
                        })
                        .await;
                    if !matches!(&receipt, Ok(receipt) if receipt.reason.is_none()) {
                        let _ = sender.send(Input::Event(ManagerEvent::DeliveryRejected));
                    }
                });
            }
            Effect::StopProcess { reason } => self.stop(reason.as_str(), None),
            Effect::TerminateStalled { silent_for, .. } => {
                warn!(bot = %self.bot, ?silent_for, "the bot's turn stalled; terminating it");
                self.stop("stalled", Some(0));
            }
            Effect::FailMessages { ids, reason } => {
                // The messages stay in the inbox; the next wake's notice counts them again.
                warn!(bot = %self.bot, messages = ids.len(), %reason, "messages not delivered");
            }
            Effect::ScheduleTick { at } => self.tick = Some(at),
        }
    }

    fn stop(&self, reason: &str, force_after_ms: Option<u64>) {
        let Some(session) = self.session.clone() else {
            return;
        };
        info!(bot = %self.bot, session = %session, reason, "stopping the bot's session");
        let agents = self.runners.agents.clone();
        let reason = reason.to_owned();
        tokio::spawn(async move {
            let _ = agents
                .stop(AgentsStopParams {
                    id: session,
                    reason: Some(reason),
                    force_after_ms,
                })
                .await;
        });
    }

    /// Follows the session's events: a completed turn is a boundary, anything else activity,
    /// and the close is the process's exit.
    fn follow(&self, session: &str) {
        let cursor =
            match self
                .runners
                .agents
                .follow(&paddock_client::control::AgentsEventsParams {
                    id: session.to_owned(),
                    from: 1,
                }) {
                Ok(cursor) => cursor,
                Err(_) => {
                    let _ = self.sender.send(Input::Exited(session.to_owned()));
                    return;
                }
            };
        let sender = self.sender.clone();
        let session = session.to_owned();
        tokio::spawn(async move {
            let mut cursor = cursor;
            loop {
                match cursor.next().await {
                    CursorItem::Event(frame) => {
                        let event = if frame.event["type"] == "turn_completed" {
                            ManagerEvent::TurnCompleted
                        } else {
                            ManagerEvent::AgentActivity
                        };
                        if sender.send(Input::Event(event)).is_err() {
                            return;
                        }
                    }
                    CursorItem::Closed(_) => {
                        let _ = sender.send(Input::Exited(session));
                        return;
                    }
                }
            }
        });
    }
}
