//! The scheduling policy for one bot's agent process, as a pure reducer: events and the time
//! go in, effects come out, and nothing here does I/O, spawns tasks or reads a clock.
//!
//! [`Manager::step`] decides four things:
//!
//! - **Single flight.** At most one process per agent: [`Effect::StartProcess`] is emitted only
//!   from [`Phase::Asleep`], and every later phase waits for [`ManagerEvent::ProcessExited`]
//!   before another start.
//! - **Wake and sleep.** A message arriving while asleep starts the process; a process that
//!   has been idle for [`ManagerConfig::idle_stop`] is stopped ([`StopReason::Idle`]).
//! - **A queue with coalescing.** Messages arriving while the process is starting, busy or
//!   stopping wait, at most [`ManagerConfig::max_queue`] of them (the next one fails at once
//!   with [`FailReason::QueueFull`]). At the next safe boundary — the process has started, or a
//!   turn has completed — everything waiting goes out as one [`Effect::Deliver`], the texts
//!   joined with [`COALESCED_SEPARATOR`]. A message arriving while idle is delivered at once.
//! - **Stall detection.** A delivery with no activity for [`ManagerConfig::stall_after`] is
//!   ended with [`Effect::TerminateStalled`]; what is still queued goes to a fresh process.
//!
//! Every message the manager accepts is settled exactly once: it appears in exactly one
//! [`Effect::Deliver`] or [`Effect::FailMessages`]. A delivery is settled when it is handed to
//! the session; what becomes of the turn afterwards (its outcome, a rejection, a crash) is the
//! session's to report through its own receipts, events and closed facts.
//!
//! # Time
//!
//! Time comes in with every event as a [`Timestamp`], milliseconds on the executor's monotonic
//! clock (an earlier timestamp than one already seen counts as the latest one seen). Deadlines
//! are checked on every event, before it is applied and again after: a turn silent past its
//! deadline is terminated by the first event at or after the deadline, whatever that event is.
//! The executor keeps one timer: [`Effect::ScheduleTick`] (re)arms it, replacing the previous
//! one, and it answers with [`ManagerEvent::Tick`]. Timers are lazy: activity that moves a
//! deadline later does not re-arm the timer; the earlier tick arrives, finds nothing due and
//! arms the timer for the new deadline.
//!
//! # Wiring to a [`Session`](crate::Session)
//!
//! The executor that applies the effects is the integrator's; it owns at most one `Session`
//! (the manager guarantees it never needs two) and feeds every outcome back in, in order.
//!
//! | Effect | What the executor does |
//! |---|---|
//! | [`Effect::StartProcess`] | [`AgentDriverSdk::open`](crate::AgentDriverSdk::open) off the event loop; `Ok` → [`ManagerEvent::ProcessStarted`] (take `events()` and start pumping them), `Err(error)` → [`ManagerEvent::ProcessStartFailed`] with `error.to_string()` |
//! | [`Effect::Deliver`] | the first delivery on a session: [`Session::start`](crate::Session::start), later ones [`Session::send`](crate::Session::send), with `Command { id: delivery.to_string(), text }`; `Receipt::Rejected` → [`ManagerEvent::DeliveryRejected`] (and the executor tells the messages' senders) |
//! | [`Effect::StopProcess`] | [`Session::stop`](crate::Session::stop) with [`StopReason::as_str`] and the host's grace period |
//! | [`Effect::TerminateStalled`] | `Session::stop` with reason `"stalled"` and `force_after: Duration::ZERO` (the process group is killed at once) |
//! | [`Effect::FailMessages`] | tells the messages' senders, with [`FailReason`]'s message |
//! | [`Effect::ScheduleTick`] | re-arms the one timer; when it fires → [`ManagerEvent::Tick`] |
//!
//! | Session outcome | Event |
//! |---|---|
//! | `AgentEvent::TurnCompleted { .. }` | [`ManagerEvent::TurnCompleted`] |
//! | any other `AgentEvent` (`TurnStarted`, deltas, tool calls, `Usage`, `Error`, …) | [`ManagerEvent::AgentActivity`] |
//! | `Session::closed` settles (after the last event) | [`ManagerEvent::ProcessExited`] |
//! | the host stops the agent (`agent:stop`) | [`ManagerEvent::StopRequested`] |
//! | a message or unread notice for the agent (`agent:wake`) | [`ManagerEvent::MessageArrived`] |
//!
//! A `PermissionRequested` the host leaves unanswered counts as silence: answer permissions by
//! policy, or the turn is terminated as stalled once `stall_after` passes.

use std::collections::VecDeque;
use std::fmt;
use std::num::NonZeroUsize;
use std::time::Duration;

/// What stands between coalesced messages in one delivery's text.
pub const COALESCED_SEPARATOR: &str = "\n\n---\n\n";

/// A point on the executor's monotonic clock, in milliseconds from an origin it chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(u64);

impl Timestamp {
    pub const fn from_millis(millis: u64) -> Self {
        Self(millis)
    }

    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// `self + duration`, rounded down to whole milliseconds and saturating at the end of time.
    pub fn after(self, duration: Duration) -> Self {
        let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(millis))
    }

    /// How long after `earlier` this is (zero if it is not later).
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

/// The policy's knobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerConfig {
    /// How long a process may sit idle before it is stopped; zero stops it after every turn.
    pub idle_stop: Duration,
    /// How long a delivery may go without activity before its process is terminated.
    pub stall_after: Duration,
    /// How many messages may wait for the next delivery; the next one fails at once.
    pub max_queue: NonZeroUsize,
}

/// One delivery's number; its `Display` (`delivery-<n>`) is the session's command id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeliveryId(u64);

impl DeliveryId {
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for DeliveryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "delivery-{}", self.0)
    }
}

/// A message waiting for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub id: String,
    pub text: String,
}

/// What happened, as the executor saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManagerEvent {
    /// A message for the agent. Idempotent while the manager holds the id (queued or in the
    /// running delivery): a repeat is absorbed, not queued twice.
    MessageArrived { id: String, text: String },
    /// The process asked for by [`Effect::StartProcess`] is up.
    ProcessStarted,
    /// The process asked for by [`Effect::StartProcess`] could not be started.
    ProcessStartFailed { reason: String },
    /// Anything the running turn did: an event from the session other than a completion.
    AgentActivity,
    /// The running turn completed (whatever its outcome).
    TurnCompleted,
    /// The session refused the delivery ([`Receipt::Rejected`](crate::Receipt::Rejected)).
    DeliveryRejected,
    /// The process is gone, stopped or crashed; nothing more will come from it.
    ProcessExited,
    /// The host wants the agent stopped; what is queued fails with [`FailReason::Stopped`].
    /// A later message starts it again.
    StopRequested,
    /// The timer armed by [`Effect::ScheduleTick`] fired (a spurious tick is harmless).
    Tick,
}

/// What the executor should do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Start the agent's process.
    StartProcess,
    /// Hand these messages to the running process as one command.
    Deliver {
        delivery: DeliveryId,
        message_ids: Vec<String>,
        text: String,
    },
    /// Stop the process gracefully.
    StopProcess { reason: StopReason },
    /// Kill the process: `delivery` has been silent for `silent_for`.
    TerminateStalled {
        delivery: DeliveryId,
        silent_for: Duration,
    },
    /// These messages will never be delivered.
    FailMessages {
        ids: Vec<String>,
        reason: FailReason,
    },
    /// Arm the timer (replacing any earlier one) to send [`ManagerEvent::Tick`] at `at`.
    ScheduleTick { at: Timestamp },
}

/// Why a process is stopped gracefully.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// It sat idle for [`ManagerConfig::idle_stop`].
    Idle,
    /// [`ManagerEvent::StopRequested`].
    Requested,
    /// The session refused a delivery, so it cannot take work.
    DeliveryRejected,
}

impl StopReason {
    /// For [`StopRequest::reason`](crate::StopRequest::reason).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Requested => "stop requested",
            Self::DeliveryRejected => "the session refused a delivery",
        }
    }
}

/// Why messages will never be delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailReason {
    /// `limit` messages were already waiting.
    QueueFull { limit: usize },
    /// The process they were waiting for could not be started.
    StartFailed { reason: String },
    /// The agent was stopped before they were delivered.
    Stopped,
}

impl fmt::Display for FailReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::QueueFull { limit } => write!(
                f,
                "{limit} messages are already waiting for the agent; send it again once it has caught up"
            ),
            Self::StartFailed { reason } => write!(f, "the agent could not be started: {reason}"),
            Self::Stopped => f.write_str("the agent was stopped before the message was delivered"),
        }
    }
}

/// Where the agent's process is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// No process; nothing waits.
    Asleep,
    /// A start is under way; `stop_requested` stops the process as soon as it is up.
    Starting { stop_requested: bool },
    /// Running, no delivery outstanding; nothing waits.
    Idle { since: Timestamp },
    /// Running `delivery` of `message_ids`; last heard from at `last_activity`.
    Busy {
        delivery: DeliveryId,
        message_ids: Vec<String>,
        last_activity: Timestamp,
    },
    /// A graceful stop is under way.
    Stopping { reason: StopReason },
    /// A kill of the process running stalled `delivery` is under way.
    Terminating { delivery: DeliveryId },
}

/// The scheduling state of one agent. See the module documentation.
#[derive(Debug, Clone)]
pub struct Manager {
    config: ManagerConfig,
    phase: Phase,
    queue: VecDeque<Message>,
    /// The last delivery's number.
    deliveries: u64,
    /// When the executor's timer fires, if it is armed.
    tick_at: Option<Timestamp>,
    /// The latest time seen; time never goes backwards here.
    clock: Timestamp,
}

impl Manager {
    pub fn new(config: ManagerConfig) -> Self {
        Self {
            config,
            phase: Phase::Asleep,
            queue: VecDeque::new(),
            deliveries: 0,
            tick_at: None,
            clock: Timestamp::from_millis(0),
        }
    }

    pub fn config(&self) -> &ManagerConfig {
        &self.config
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The messages waiting for the next delivery, oldest first.
    pub fn queued(&self) -> impl ExactSizeIterator<Item = &Message> {
        self.queue.iter()
    }

    /// When the manager next needs to act on its own: an idle stop or a stall.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        match &self.phase {
            Phase::Idle { since } => Some(since.after(self.config.idle_stop)),
            Phase::Busy { last_activity, .. } => Some(last_activity.after(self.config.stall_after)),
            Phase::Asleep
            | Phase::Starting { .. }
            | Phase::Stopping { .. }
            | Phase::Terminating { .. } => None,
        }
    }

    /// Applies `event`, seen at `now`, and returns what the executor should do, in order.
    pub fn step(&mut self, event: ManagerEvent, now: Timestamp) -> Vec<Effect> {
        self.clock = self.clock.max(now);
        let now = self.clock;
        let mut effects = Vec::new();
        if event == ManagerEvent::Tick && self.tick_at.is_some_and(|at| at <= now) {
            self.tick_at = None;
        }
        // Deadlines first: the state as of `now` is what the event meets.
        self.expire(now, &mut effects);
        self.apply(event, now, &mut effects);
        // And again, for a deadline the event set at `now` itself (a zero duration).
        self.expire(now, &mut effects);
        self.arm_timer(&mut effects);
        effects
    }

    fn expire(&mut self, now: Timestamp, effects: &mut Vec<Effect>) {
        if self.next_deadline().is_none_or(|deadline| deadline > now) {
            return;
        }
        match &self.phase {
            Phase::Idle { .. } => self.stop(StopReason::Idle, effects),
            Phase::Busy {
                delivery,
                last_activity,
                ..
            } => {
                let delivery = *delivery;
                effects.push(Effect::TerminateStalled {
                    delivery,
                    silent_for: now.since(*last_activity),
                });
                self.phase = Phase::Terminating { delivery };
            }
            Phase::Asleep
            | Phase::Starting { .. }
            | Phase::Stopping { .. }
            | Phase::Terminating { .. } => {}
        }
    }

    fn apply(&mut self, event: ManagerEvent, now: Timestamp, effects: &mut Vec<Effect>) {
        match event {
            ManagerEvent::MessageArrived { id, text } => {
                self.arrive(Message { id, text }, now, effects)
            }
            ManagerEvent::ProcessStarted => {
                if let Phase::Starting { stop_requested } = self.phase {
                    if stop_requested {
                        self.stop(StopReason::Requested, effects);
                    } else {
                        self.reach_boundary(now, effects);
                    }
                }
            }
            ManagerEvent::ProcessStartFailed { reason } => {
                if matches!(self.phase, Phase::Starting { .. }) {
                    self.start_failed(reason, effects);
                }
            }
            ManagerEvent::AgentActivity => {
                if let Phase::Busy { last_activity, .. } = &mut self.phase {
                    *last_activity = now;
                }
            }
            ManagerEvent::TurnCompleted => {
                if matches!(self.phase, Phase::Busy { .. }) {
                    self.reach_boundary(now, effects);
                }
            }
            ManagerEvent::DeliveryRejected => {
                if matches!(self.phase, Phase::Busy { .. }) {
                    self.stop(StopReason::DeliveryRejected, effects);
                }
            }
            ManagerEvent::ProcessExited => match self.phase {
                Phase::Asleep => {}
                // An executor reports the start first; a process gone before that never
                // started, as far as the messages waiting for it are concerned.
                Phase::Starting { .. } => self.start_failed(
                    "the process exited before it was reported started".into(),
                    effects,
                ),
                Phase::Idle { .. }
                | Phase::Busy { .. }
                | Phase::Stopping { .. }
                | Phase::Terminating { .. } => {
                    self.phase = Phase::Asleep;
                    self.wake(effects);
                }
            },
            ManagerEvent::StopRequested => {
                self.fail_queue(FailReason::Stopped, effects);
                match &mut self.phase {
                    Phase::Starting { stop_requested } => *stop_requested = true,
                    Phase::Idle { .. } | Phase::Busy { .. } => {
                        self.stop(StopReason::Requested, effects);
                    }
                    Phase::Asleep | Phase::Stopping { .. } | Phase::Terminating { .. } => {}
                }
            }
            ManagerEvent::Tick => {}
        }
    }

    fn arrive(&mut self, message: Message, now: Timestamp, effects: &mut Vec<Effect>) {
        if self.holds(&message.id) {
            return;
        }
        match self.phase {
            Phase::Idle { .. } => {
                self.queue.push_back(message);
                self.reach_boundary(now, effects);
            }
            Phase::Asleep => {
                self.queue.push_back(message);
                self.wake(effects);
            }
            Phase::Starting { .. }
            | Phase::Busy { .. }
            | Phase::Stopping { .. }
            | Phase::Terminating { .. } => {
                let limit = self.config.max_queue.get();
                if self.queue.len() >= limit {
                    effects.push(Effect::FailMessages {
                        ids: vec![message.id],
                        reason: FailReason::QueueFull { limit },
                    });
                } else {
                    self.queue.push_back(message);
                }
            }
        }
    }

    /// Whether `id` is queued or in the running delivery.
    fn holds(&self, id: &str) -> bool {
        let in_flight = match &self.phase {
            Phase::Busy { message_ids, .. } => message_ids.iter().any(|held| held == id),
            _ => false,
        };
        in_flight || self.queue.iter().any(|message| message.id == id)
    }

    /// A safe boundary on a running process: deliver everything waiting, or go idle.
    fn reach_boundary(&mut self, now: Timestamp, effects: &mut Vec<Effect>) {
        if self.queue.is_empty() {
            self.phase = Phase::Idle { since: now };
            return;
        }
        let messages: Vec<Message> = self.queue.drain(..).collect();
        let text = messages
            .iter()
            .map(|message| message.text.as_str())
            .collect::<Vec<_>>()
            .join(COALESCED_SEPARATOR);
        let message_ids: Vec<String> = messages.into_iter().map(|message| message.id).collect();
        self.deliveries += 1;
        let delivery = DeliveryId(self.deliveries);
        effects.push(Effect::Deliver {
            delivery,
            message_ids: message_ids.clone(),
            text,
        });
        self.phase = Phase::Busy {
            delivery,
            message_ids,
            last_activity: now,
        };
    }

    /// From asleep, starts a process if anything waits.
    fn wake(&mut self, effects: &mut Vec<Effect>) {
        if !self.queue.is_empty() {
            effects.push(Effect::StartProcess);
            self.phase = Phase::Starting {
                stop_requested: false,
            };
        }
    }

    fn stop(&mut self, reason: StopReason, effects: &mut Vec<Effect>) {
        effects.push(Effect::StopProcess { reason });
        self.phase = Phase::Stopping { reason };
    }

    fn start_failed(&mut self, reason: String, effects: &mut Vec<Effect>) {
        self.fail_queue(FailReason::StartFailed { reason }, effects);
        self.phase = Phase::Asleep;
    }

    fn fail_queue(&mut self, reason: FailReason, effects: &mut Vec<Effect>) {
        if !self.queue.is_empty() {
            let ids = self.queue.drain(..).map(|message| message.id).collect();
            effects.push(Effect::FailMessages { ids, reason });
        }
    }

    /// Arms the timer when the next deadline comes before the armed one (or none is armed).
    fn arm_timer(&mut self, effects: &mut Vec<Effect>) {
        let Some(deadline) = self.next_deadline() else {
            return;
        };
        if self.tick_at.is_none_or(|armed| armed > deadline) {
            self.tick_at = Some(deadline);
            effects.push(Effect::ScheduleTick { at: deadline });
        }
    }
}

#[cfg(test)]
mod tests;
