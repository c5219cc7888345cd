//! Tests of the scheduling policy: one per behaviour with the exact effects, then property
//! tests that drive the reducer through a simulated executor.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::*;

const IDLE_STOP: u64 = 1_000;
const STALL_AFTER: u64 = 500;

fn config(idle_stop: u64, stall_after: u64, max_queue: usize) -> ManagerConfig {
    ManagerConfig {
        idle_stop: Duration::from_millis(idle_stop),
        stall_after: Duration::from_millis(stall_after),
        max_queue: NonZeroUsize::new(max_queue).unwrap_or(NonZeroUsize::MIN),
    }
}

fn manager() -> Manager {
    Manager::new(config(IDLE_STOP, STALL_AFTER, 3))
}

fn at(millis: u64) -> Timestamp {
    Timestamp::from_millis(millis)
}

fn text_of(id: &str) -> String {
    format!("text of {id}")
}

fn message(id: &str) -> ManagerEvent {
    ManagerEvent::MessageArrived {
        id: id.into(),
        text: text_of(id),
    }
}

fn deliver(delivery: u64, ids: &[&str]) -> Effect {
    Effect::Deliver {
        delivery: DeliveryId(delivery),
        message_ids: ids.iter().map(|id| id.to_string()).collect(),
        text: ids
            .iter()
            .map(|id| text_of(id))
            .collect::<Vec<_>>()
            .join(COALESCED_SEPARATOR),
    }
}

fn tick_at(millis: u64) -> Effect {
    Effect::ScheduleTick { at: at(millis) }
}

fn fail(ids: &[&str], reason: FailReason) -> Effect {
    Effect::FailMessages {
        ids: ids.iter().map(|id| id.to_string()).collect(),
        reason,
    }
}

/// A manager that has delivered `a` as delivery 1 at time 0.
fn busy_with_a() -> Manager {
    let mut manager = manager();
    assert_eq!(manager.step(message("a"), at(0)), [Effect::StartProcess]);
    assert_eq!(
        manager.step(ManagerEvent::ProcessStarted, at(0)),
        [deliver(1, &["a"]), tick_at(STALL_AFTER)]
    );
    manager
}

#[test]
fn a_message_while_asleep_starts_the_process_and_is_delivered_once_it_is_up() {
    let mut manager = manager();
    assert_eq!(manager.step(message("a"), at(0)), [Effect::StartProcess]);
    assert_eq!(
        manager.phase(),
        &Phase::Starting {
            stop_requested: false
        }
    );
    assert_eq!(
        manager.step(ManagerEvent::ProcessStarted, at(10)),
        [deliver(1, &["a"]), tick_at(10 + STALL_AFTER)]
    );
    assert_eq!(
        manager.phase(),
        &Phase::Busy {
            delivery: DeliveryId(1),
            message_ids: vec!["a".into()],
            last_activity: at(10),
        }
    );
}

#[test]
fn messages_arriving_while_starting_become_one_delivery() {
    let mut manager = manager();
    assert_eq!(manager.step(message("a"), at(0)), [Effect::StartProcess]);
    assert_eq!(manager.step(message("b"), at(1)), []);
    assert_eq!(manager.step(message("c"), at(2)), []);
    assert_eq!(manager.queued().len(), 3);
    let effects = manager.step(ManagerEvent::ProcessStarted, at(5));
    assert_eq!(effects, [deliver(1, &["a", "b", "c"]), tick_at(505)]);
    let Effect::Deliver { text, .. } = &effects[0] else {
        unreachable!("checked above");
    };
    assert_eq!(
        text, "text of a\n\n---\n\ntext of b\n\n---\n\ntext of c",
        "the texts are joined with the separator, in arrival order"
    );
    assert_eq!(manager.queued().len(), 0);
}

#[test]
fn messages_arriving_while_busy_become_one_delivery_when_the_turn_completes() {
    let mut manager = busy_with_a();
    assert_eq!(manager.step(message("b"), at(10)), []);
    assert_eq!(manager.step(message("c"), at(20)), []);
    // The timer is already armed for an earlier deadline, so none is armed now.
    assert_eq!(
        manager.step(ManagerEvent::TurnCompleted, at(30)),
        [deliver(2, &["b", "c"])]
    );
    // The early tick finds nothing due and arms the timer for the new deadline.
    assert_eq!(
        manager.step(ManagerEvent::Tick, at(500)),
        [tick_at(30 + STALL_AFTER)]
    );
}

#[test]
fn a_message_to_an_idle_process_is_delivered_at_once() {
    let mut manager = busy_with_a();
    assert_eq!(manager.step(ManagerEvent::TurnCompleted, at(100)), []);
    assert_eq!(manager.phase(), &Phase::Idle { since: at(100) });
    assert_eq!(
        manager.step(message("b"), at(200)),
        [deliver(2, &["b"])],
        "the timer armed for 500 comes before the stall deadline at 700"
    );
}

#[test]
fn an_idle_process_is_stopped_after_idle_stop_and_the_next_message_wakes_it() {
    let mut manager = busy_with_a();
    assert_eq!(manager.step(ManagerEvent::TurnCompleted, at(100)), []);
    assert_eq!(
        manager.step(ManagerEvent::Tick, at(500)),
        [tick_at(100 + IDLE_STOP)]
    );
    assert_eq!(manager.next_deadline(), Some(at(1_100)));
    assert_eq!(manager.step(ManagerEvent::Tick, at(1_099)), []);
    assert_eq!(
        manager.step(ManagerEvent::Tick, at(1_100)),
        [Effect::StopProcess {
            reason: StopReason::Idle
        }]
    );
    assert_eq!(
        manager.phase(),
        &Phase::Stopping {
            reason: StopReason::Idle
        }
    );
    // A message during the stop waits for the next process.
    assert_eq!(manager.step(message("b"), at(1_200)), []);
    assert_eq!(
        manager.step(ManagerEvent::ProcessExited, at(1_300)),
        [Effect::StartProcess]
    );
    assert_eq!(
        manager.step(ManagerEvent::ProcessStarted, at(1_400)),
        [deliver(2, &["b"]), tick_at(1_400 + STALL_AFTER)]
    );
}

#[test]
fn an_idle_process_with_nothing_waiting_goes_to_sleep_when_it_exits() {
    let mut manager = busy_with_a();
    manager.step(ManagerEvent::TurnCompleted, at(100));
    manager.step(ManagerEvent::Tick, at(1_100));
    assert_eq!(manager.step(ManagerEvent::ProcessExited, at(1_150)), []);
    assert_eq!(manager.phase(), &Phase::Asleep);
    assert_eq!(manager.next_deadline(), None);
}

#[test]
fn a_delivery_silent_for_stall_after_is_terminated_and_the_queue_goes_to_a_new_process() {
    let mut manager = busy_with_a();
    assert_eq!(manager.step(ManagerEvent::AgentActivity, at(100)), []);
    assert_eq!(manager.step(ManagerEvent::Tick, at(500)), [tick_at(600)]);
    assert_eq!(manager.step(ManagerEvent::Tick, at(599)), []);
    assert_eq!(
        manager.step(ManagerEvent::Tick, at(600)),
        [Effect::TerminateStalled {
            delivery: DeliveryId(1),
            silent_for: Duration::from_millis(500),
        }]
    );
    assert_eq!(
        manager.phase(),
        &Phase::Terminating {
            delivery: DeliveryId(1)
        }
    );
    assert_eq!(manager.step(message("b"), at(700)), []);
    assert_eq!(
        manager.step(ManagerEvent::ProcessExited, at(800)),
        [Effect::StartProcess]
    );
}

#[test]
fn the_first_event_after_the_stall_deadline_terminates_whatever_it_is() {
    let mut manager = busy_with_a();
    assert_eq!(
        manager.step(ManagerEvent::AgentActivity, at(800)),
        [Effect::TerminateStalled {
            delivery: DeliveryId(1),
            silent_for: Duration::from_millis(800),
        }]
    );
    // The session may still report the turn's end; the stop is already under way.
    assert_eq!(manager.step(ManagerEvent::TurnCompleted, at(801)), []);
    assert_eq!(
        manager.phase(),
        &Phase::Terminating {
            delivery: DeliveryId(1)
        }
    );
}

#[test]
fn a_message_over_max_queue_fails_at_once() {
    let mut manager = Manager::new(config(IDLE_STOP, STALL_AFTER, 2));
    assert_eq!(manager.step(message("a"), at(0)), [Effect::StartProcess]);
    assert_eq!(manager.step(message("b"), at(1)), []);
    assert_eq!(
        manager.step(message("c"), at(2)),
        [fail(&["c"], FailReason::QueueFull { limit: 2 })]
    );
    assert_eq!(
        manager.step(ManagerEvent::ProcessStarted, at(3)),
        [deliver(1, &["a", "b"]), tick_at(503)]
    );
    // The queue bounds what waits, not what is in flight.
    assert_eq!(manager.step(message("d"), at(4)), []);
    assert_eq!(manager.step(message("e"), at(5)), []);
    assert_eq!(
        manager.step(message("f"), at(6)),
        [fail(&["f"], FailReason::QueueFull { limit: 2 })]
    );
}

#[test]
fn a_failed_start_fails_everything_waiting_and_the_next_message_tries_again() {
    let mut manager = manager();
    manager.step(message("a"), at(0));
    manager.step(message("b"), at(1));
    let reason = FailReason::StartFailed {
        reason: "backend `pi` is not installed".into(),
    };
    assert_eq!(
        manager.step(
            ManagerEvent::ProcessStartFailed {
                reason: "backend `pi` is not installed".into()
            },
            at(2)
        ),
        [fail(&["a", "b"], reason)]
    );
    assert_eq!(manager.phase(), &Phase::Asleep);
    assert_eq!(manager.step(message("c"), at(3)), [Effect::StartProcess]);
}

#[test]
fn a_stop_while_busy_fails_what_waits_and_stops_the_process() {
    let mut manager = busy_with_a();
    manager.step(message("b"), at(10));
    assert_eq!(
        manager.step(ManagerEvent::StopRequested, at(20)),
        [
            fail(&["b"], FailReason::Stopped),
            Effect::StopProcess {
                reason: StopReason::Requested
            },
        ]
    );
    assert_eq!(manager.step(ManagerEvent::TurnCompleted, at(30)), []);
    assert_eq!(manager.step(ManagerEvent::ProcessExited, at(40)), []);
    assert_eq!(manager.phase(), &Phase::Asleep);
}

#[test]
fn a_stop_while_starting_stops_the_process_once_it_is_up() {
    let mut manager = manager();
    manager.step(message("a"), at(0));
    assert_eq!(
        manager.step(ManagerEvent::StopRequested, at(1)),
        [fail(&["a"], FailReason::Stopped)]
    );
    // A message after the stop is new work: it waits for the process after this one.
    assert_eq!(manager.step(message("b"), at(2)), []);
    assert_eq!(
        manager.step(ManagerEvent::ProcessStarted, at(3)),
        [Effect::StopProcess {
            reason: StopReason::Requested
        }]
    );
    assert_eq!(
        manager.step(ManagerEvent::ProcessExited, at(4)),
        [Effect::StartProcess]
    );
    assert_eq!(
        manager.step(ManagerEvent::ProcessStarted, at(5)),
        [deliver(1, &["b"]), tick_at(505)]
    );
}

#[test]
fn a_stop_while_idle_or_asleep() {
    let mut asleep = manager();
    assert_eq!(asleep.step(ManagerEvent::StopRequested, at(0)), []);
    let mut idle = busy_with_a();
    idle.step(ManagerEvent::TurnCompleted, at(10));
    assert_eq!(
        idle.step(ManagerEvent::StopRequested, at(20)),
        [Effect::StopProcess {
            reason: StopReason::Requested
        }]
    );
}

#[test]
fn a_crash_while_busy_restarts_for_what_waits() {
    let mut manager = busy_with_a();
    manager.step(message("b"), at(10));
    assert_eq!(
        manager.step(ManagerEvent::ProcessExited, at(20)),
        [Effect::StartProcess]
    );
    assert_eq!(
        manager.step(ManagerEvent::ProcessStarted, at(30)),
        [deliver(2, &["b"])],
        "the timer armed for 500 is still before the new deadline"
    );
}

#[test]
fn a_crash_while_idle_goes_to_sleep() {
    let mut manager = busy_with_a();
    manager.step(ManagerEvent::TurnCompleted, at(10));
    assert_eq!(manager.step(ManagerEvent::ProcessExited, at(20)), []);
    assert_eq!(manager.phase(), &Phase::Asleep);
}

#[test]
fn an_exit_before_the_start_was_reported_counts_as_a_failed_start() {
    let mut manager = manager();
    manager.step(message("a"), at(0));
    assert_eq!(
        manager.step(ManagerEvent::ProcessExited, at(1)),
        [fail(
            &["a"],
            FailReason::StartFailed {
                reason: "the process exited before it was reported started".into()
            }
        )]
    );
    assert_eq!(manager.phase(), &Phase::Asleep);
}

#[test]
fn a_repeated_id_is_absorbed_while_the_manager_holds_it() {
    let mut manager = manager();
    manager.step(message("a"), at(0));
    assert_eq!(manager.step(message("a"), at(1)), [], "queued");
    assert_eq!(
        manager.step(ManagerEvent::ProcessStarted, at(2)),
        [deliver(1, &["a"]), tick_at(502)]
    );
    assert_eq!(manager.step(message("a"), at(3)), [], "in flight");
    assert_eq!(manager.queued().len(), 0);
    manager.step(ManagerEvent::TurnCompleted, at(4));
    // Settled, the id is no longer held: it arrives as a new message.
    assert_eq!(manager.step(message("a"), at(5)), [deliver(2, &["a"])]);
}

#[test]
fn a_rejected_delivery_stops_the_process_and_what_waits_goes_to_the_next() {
    let mut manager = busy_with_a();
    manager.step(message("b"), at(1));
    assert_eq!(
        manager.step(ManagerEvent::DeliveryRejected, at(2)),
        [Effect::StopProcess {
            reason: StopReason::DeliveryRejected
        }]
    );
    assert_eq!(
        manager.step(ManagerEvent::ProcessExited, at(3)),
        [Effect::StartProcess]
    );
}

#[test]
fn time_never_goes_backwards() {
    let mut manager = manager();
    manager.step(message("a"), at(1_000));
    assert_eq!(
        manager.step(ManagerEvent::ProcessStarted, at(1_000)),
        [deliver(1, &["a"]), tick_at(1_500)]
    );
    // An earlier timestamp counts as the latest one seen.
    assert_eq!(manager.step(ManagerEvent::AgentActivity, at(0)), []);
    assert_eq!(
        manager.step(ManagerEvent::Tick, at(1_500)),
        [Effect::TerminateStalled {
            delivery: DeliveryId(1),
            silent_for: Duration::from_millis(500),
        }]
    );
}

#[test]
fn a_zero_idle_stop_stops_the_process_after_every_turn() {
    let mut manager = Manager::new(config(0, STALL_AFTER, 3));
    manager.step(message("a"), at(0));
    manager.step(ManagerEvent::ProcessStarted, at(0));
    assert_eq!(
        manager.step(ManagerEvent::TurnCompleted, at(10)),
        [Effect::StopProcess {
            reason: StopReason::Idle
        }]
    );
}

#[test]
fn events_that_do_not_fit_the_phase_change_nothing() {
    let mut manager = manager();
    for event in [
        ManagerEvent::ProcessStarted,
        ManagerEvent::ProcessStartFailed {
            reason: "late".into(),
        },
        ManagerEvent::AgentActivity,
        ManagerEvent::TurnCompleted,
        ManagerEvent::DeliveryRejected,
        ManagerEvent::ProcessExited,
        ManagerEvent::StopRequested,
        ManagerEvent::Tick,
    ] {
        assert_eq!(manager.step(event.clone(), at(0)), [], "{event:?}");
        assert_eq!(manager.phase(), &Phase::Asleep, "{event:?}");
    }
    let mut busy = busy_with_a();
    assert_eq!(busy.step(ManagerEvent::ProcessStarted, at(1)), []);
    assert_eq!(
        busy.step(
            ManagerEvent::ProcessStartFailed {
                reason: "late".into()
            },
            at(2)
        ),
        []
    );
    assert!(matches!(busy.phase(), Phase::Busy { .. }));
}

#[test]
fn names_and_messages() {
    assert_eq!(DeliveryId(7).to_string(), "delivery-7");
    assert_eq!(DeliveryId(7).get(), 7);
    assert_eq!(StopReason::Idle.as_str(), "idle");
    assert!(
        FailReason::QueueFull { limit: 64 }
            .to_string()
            .contains("64 messages")
    );
    assert!(
        FailReason::StartFailed {
            reason: "no `pi`".into()
        }
        .to_string()
        .ends_with("no `pi`")
    );
    assert_eq!(
        at(u64::MAX - 1).after(Duration::from_secs(1)),
        at(u64::MAX),
        "saturates"
    );
    assert_eq!(at(5).since(at(10)), Duration::ZERO);
}

/// One step of the simulated world: time passing, a message, or the executor reporting
/// something that is plausible in its current state (otherwise the step does nothing).
#[derive(Debug, Clone)]
enum Action {
    Advance(u64),
    Arrive,
    /// Re-sends one of the ids the manager holds, chosen by this number.
    Repeat(usize),
    StartSucceeds,
    StartFails,
    Activity,
    Complete,
    Reject,
    Crash,
    StopFinishes,
    FireTimer,
    SpuriousTick,
    StopRequested,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => (0_u64..40).prop_map(Action::Advance),
        4 => Just(Action::Arrive),
        1 => any::<usize>().prop_map(Action::Repeat),
        3 => Just(Action::StartSucceeds),
        1 => Just(Action::StartFails),
        2 => Just(Action::Activity),
        3 => Just(Action::Complete),
        1 => Just(Action::Reject),
        1 => Just(Action::Crash),
        3 => Just(Action::StopFinishes),
        2 => Just(Action::FireTimer),
        1 => Just(Action::SpuriousTick),
        1 => Just(Action::StopRequested),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Process {
    None,
    Starting { stop_requested: bool },
    Running,
    Stopping,
}

#[derive(Debug, Clone)]
struct Turn {
    delivery: DeliveryId,
    message_ids: Vec<String>,
    last_activity: u64,
    /// The session has not answered the delivery yet, so it may still refuse it.
    receipt_pending: bool,
}

/// An executor that answers the manager's effects as a real one would, and checks each
/// effect against what it knows of the process.
#[derive(Debug)]
struct World {
    manager: Manager,
    idle_stop: u64,
    stall_after: u64,
    max_queue: usize,
    now: u64,
    process: Process,
    turn: Option<Turn>,
    /// A turn a stop ended; the session may still report activity or its completion.
    late_turn: bool,
    /// Since when the process has been up with no delivery.
    idle_since: Option<u64>,
    /// When the one timer fires.
    timer: Option<u64>,
    next_id: u64,
    /// Accepted and not yet settled, in arrival order.
    waiting: Vec<String>,
    texts: HashMap<String, String>,
    /// How often each id was settled (delivered or failed).
    settled: HashMap<String, usize>,
    last_delivery: u64,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl World {
    fn new(config: ManagerConfig) -> Self {
        Self {
            idle_stop: millis(config.idle_stop),
            stall_after: millis(config.stall_after),
            max_queue: config.max_queue.get(),
            manager: Manager::new(config),
            now: 0,
            process: Process::None,
            turn: None,
            late_turn: false,
            idle_since: None,
            timer: None,
            next_id: 0,
            waiting: Vec::new(),
            texts: HashMap::new(),
            settled: HashMap::new(),
            last_delivery: 0,
        }
    }

    fn stall_due(&self) -> Option<(DeliveryId, u64)> {
        self.turn
            .as_ref()
            .filter(|turn| self.now >= turn.last_activity + self.stall_after)
            .map(|turn| (turn.delivery, turn.last_activity))
    }

    fn idle_due(&self) -> bool {
        self.idle_since
            .is_some_and(|since| self.now >= since + self.idle_stop)
    }

    /// Ids the manager holds, which it must absorb when they arrive again.
    fn held(&self) -> Vec<String> {
        let mut held = self.waiting.clone();
        if self.stall_due().is_none()
            && let Some(turn) = &self.turn
        {
            held.extend(turn.message_ids.iter().cloned());
        }
        held
    }

    fn run(&mut self, action: Action) -> Result<(), TestCaseError> {
        match action {
            Action::Advance(millis) => {
                self.now += millis;
                Ok(())
            }
            Action::Arrive => {
                self.next_id += 1;
                let id = format!("m{}", self.next_id);
                let text = format!("message {} from someone", self.next_id);
                self.texts.insert(id.clone(), text.clone());
                self.waiting.push(id.clone());
                let asleep = self.process == Process::None;
                let effects = self.send(ManagerEvent::MessageArrived { id, text }, |_| Ok(()))?;
                if asleep {
                    // Wake: the message starts the process.
                    prop_assert_eq!(effects, vec![Effect::StartProcess]);
                }
                Ok(())
            }
            Action::Repeat(choice) => {
                let held = self.held();
                if held.is_empty() {
                    return Ok(());
                }
                let id = held[choice % held.len()].clone();
                let text = self.texts[&id].clone();
                let effects = self.send(ManagerEvent::MessageArrived { id, text }, |_| Ok(()))?;
                prop_assert!(effects.is_empty(), "a repeat is absorbed: {:?}", effects);
                Ok(())
            }
            Action::StartSucceeds => {
                let Process::Starting { stop_requested } = self.process else {
                    return Ok(());
                };
                let had_waiting = !self.waiting.is_empty();
                let effects = self.send(ManagerEvent::ProcessStarted, |world| {
                    world.process = Process::Running;
                    world.idle_since = Some(world.now);
                    Ok(())
                })?;
                if stop_requested {
                    prop_assert_eq!(
                        effects.first(),
                        Some(&Effect::StopProcess {
                            reason: StopReason::Requested
                        })
                    );
                } else if had_waiting {
                    // The boundary: what waited during the start goes out now.
                    prop_assert!(
                        matches!(effects.first(), Some(Effect::Deliver { .. })),
                        "no delivery when the process came up: {:?}",
                        effects
                    );
                }
                Ok(())
            }
            Action::StartFails => {
                if !matches!(self.process, Process::Starting { .. }) {
                    return Ok(());
                }
                self.send(
                    ManagerEvent::ProcessStartFailed {
                        reason: "could not start `agent`".into(),
                    },
                    |world| {
                        world.process = Process::None;
                        Ok(())
                    },
                )?;
                Ok(())
            }
            Action::Activity => {
                if self.turn.is_none() && !self.late_turn {
                    return Ok(());
                }
                self.send(ManagerEvent::AgentActivity, |world| {
                    if let Some(turn) = &mut world.turn {
                        turn.last_activity = world.now;
                        turn.receipt_pending = false;
                    }
                    Ok(())
                })?;
                Ok(())
            }
            Action::Complete => {
                if self.turn.is_none() && !self.late_turn {
                    return Ok(());
                }
                self.send(ManagerEvent::TurnCompleted, |world| {
                    if world.turn.take().is_some() {
                        world.idle_since = Some(world.now);
                    } else {
                        world.late_turn = false;
                    }
                    Ok(())
                })?;
                Ok(())
            }
            Action::Reject => {
                if !self.turn.as_ref().is_some_and(|turn| turn.receipt_pending) {
                    return Ok(());
                }
                let mut rejected = false;
                let effects = self.send(ManagerEvent::DeliveryRejected, |world| {
                    rejected = world.turn.take().is_some();
                    Ok(())
                })?;
                if rejected {
                    prop_assert_eq!(
                        effects,
                        vec![Effect::StopProcess {
                            reason: StopReason::DeliveryRejected
                        }]
                    );
                }
                Ok(())
            }
            Action::Crash => {
                if self.process != Process::Running {
                    return Ok(());
                }
                self.exit()
            }
            Action::StopFinishes => {
                if self.process != Process::Stopping {
                    return Ok(());
                }
                self.exit()
            }
            Action::FireTimer => {
                let Some(timer) = self.timer else {
                    return Ok(());
                };
                self.now = self.now.max(timer);
                self.send(ManagerEvent::Tick, |_| Ok(()))?;
                Ok(())
            }
            Action::SpuriousTick => {
                self.send(ManagerEvent::Tick, |_| Ok(()))?;
                Ok(())
            }
            Action::StopRequested => {
                self.send(ManagerEvent::StopRequested, |world| {
                    if let Process::Starting { stop_requested } = &mut world.process {
                        *stop_requested = true;
                    }
                    Ok(())
                })?;
                Ok(())
            }
        }
    }

    fn exit(&mut self) -> Result<(), TestCaseError> {
        let had_waiting = !self.waiting.is_empty();
        let effects = self.send(ManagerEvent::ProcessExited, |world| {
            world.process = Process::None;
            world.turn = None;
            world.late_turn = false;
            world.idle_since = None;
            Ok(())
        })?;
        if had_waiting {
            prop_assert_eq!(effects, vec![Effect::StartProcess]);
        } else {
            prop_assert_eq!(effects, vec![]);
        }
        Ok(())
    }

    /// Sends `event` at the current time. Deadlines due before it must be acted on first (the
    /// first effect); then `update` records what the event means for the process, and the
    /// remaining effects are applied and checked in order. Returns those remaining effects.
    fn send(
        &mut self,
        event: ManagerEvent,
        update: impl FnOnce(&mut Self) -> Result<(), TestCaseError>,
    ) -> Result<Vec<Effect>, TestCaseError> {
        let stall_due = self.stall_due();
        let idle_due = self.idle_due();
        if event == ManagerEvent::Tick && self.timer.is_some_and(|timer| timer <= self.now) {
            self.timer = None;
        }
        let is_stop_request = event == ManagerEvent::StopRequested;
        let is_start = event == ManagerEvent::ProcessStarted;
        let is_rejection = event == ManagerEvent::DeliveryRejected;
        let is_start_failure = matches!(event, ManagerEvent::ProcessStartFailed { .. });
        let arrived = match &event {
            ManagerEvent::MessageArrived { id, .. } => Some(id.clone()),
            _ => None,
        };
        let effects = self
            .manager
            .step(event.clone(), Timestamp::from_millis(self.now));
        let mut rest = effects.as_slice();
        if let Some((delivery, last_activity)) = stall_due {
            // (3) A silent turn is ended by the first event at or after its deadline.
            prop_assert_eq!(
                effects.first(),
                Some(&Effect::TerminateStalled {
                    delivery,
                    silent_for: Duration::from_millis(self.now - last_activity),
                }),
                "{:?} at {} after a delivery silent since {}",
                event,
                self.now,
                last_activity
            );
            self.apply(&effects[0], &event)?;
            rest = &effects[1..];
        } else if idle_due {
            // (4) An idle process past idle_stop is stopped.
            prop_assert_eq!(
                effects.first(),
                Some(&Effect::StopProcess {
                    reason: StopReason::Idle
                }),
                "{:?} at {} after idling since {:?}",
                event,
                self.now,
                self.idle_since
            );
            self.apply(&effects[0], &event)?;
            rest = &effects[1..];
        }
        update(self)?;
        for effect in rest {
            match effect {
                Effect::StopProcess {
                    reason: StopReason::Requested,
                } => prop_assert!(
                    is_stop_request || is_start,
                    "{:?} after {:?}",
                    effect,
                    event
                ),
                Effect::StopProcess {
                    reason: StopReason::DeliveryRejected,
                } => prop_assert!(is_rejection, "{:?} after {:?}", effect, event),
                Effect::FailMessages {
                    reason: FailReason::Stopped,
                    ..
                } => prop_assert!(is_stop_request, "{:?} after {:?}", effect, event),
                Effect::FailMessages {
                    ids,
                    reason: FailReason::QueueFull { limit },
                } => {
                    prop_assert_eq!(*limit, self.max_queue);
                    prop_assert_eq!(ids.clone(), arrived.iter().cloned().collect::<Vec<_>>());
                    prop_assert_eq!(self.waiting.len(), self.max_queue + 1);
                }
                Effect::FailMessages {
                    reason: FailReason::StartFailed { .. },
                    ..
                } => prop_assert!(is_start_failure, "{:?} after {:?}", effect, event),
                _ => {}
            }
            self.apply(effect, &event)?;
        }
        let rest = rest.to_vec();
        self.check()?;
        Ok(rest)
    }

    /// Applies one effect as an executor would, checking it is possible now.
    fn apply(&mut self, effect: &Effect, event: &ManagerEvent) -> Result<(), TestCaseError> {
        match effect {
            Effect::StartProcess => {
                // (1) Single flight: never a second process.
                prop_assert_eq!(
                    self.process,
                    Process::None,
                    "StartProcess after {:?}",
                    event
                );
                self.process = Process::Starting {
                    stop_requested: false,
                };
            }
            Effect::Deliver {
                delivery,
                message_ids,
                text,
            } => {
                prop_assert_eq!(self.process, Process::Running, "Deliver after {:?}", event);
                prop_assert!(
                    self.turn.is_none(),
                    "Deliver during a turn after {:?}",
                    event
                );
                prop_assert!(delivery.get() > self.last_delivery);
                self.last_delivery = delivery.get();
                // (5) One delivery carries everything that waited, in arrival order.
                prop_assert_eq!(message_ids, &self.waiting);
                let joined = message_ids
                    .iter()
                    .map(|id| self.texts[id].as_str())
                    .collect::<Vec<_>>()
                    .join(COALESCED_SEPARATOR);
                prop_assert_eq!(text, &joined);
                for id in message_ids {
                    self.settle(id)?;
                }
                self.waiting.clear();
                self.turn = Some(Turn {
                    delivery: *delivery,
                    message_ids: message_ids.clone(),
                    last_activity: self.now,
                    receipt_pending: true,
                });
                self.idle_since = None;
            }
            Effect::StopProcess { reason } => {
                prop_assert_eq!(
                    self.process,
                    Process::Running,
                    "{:?} after {:?}",
                    effect,
                    event
                );
                if *reason == StopReason::Idle {
                    prop_assert!(self.turn.is_none());
                    prop_assert!(self.idle_due(), "stopped early: {:?}", self.idle_since);
                }
                self.process = Process::Stopping;
                self.late_turn = self.turn.take().is_some();
                self.idle_since = None;
            }
            Effect::TerminateStalled {
                delivery,
                silent_for,
            } => {
                prop_assert_eq!(self.process, Process::Running);
                let due = self.stall_due();
                prop_assert_eq!(
                    due.map(|(due, _)| due),
                    Some(*delivery),
                    "terminated early or the wrong delivery"
                );
                let last_activity = due.map_or(0, |(_, last)| last);
                prop_assert_eq!(*silent_for, Duration::from_millis(self.now - last_activity));
                self.process = Process::Stopping;
                self.turn = None;
                self.late_turn = true;
            }
            Effect::FailMessages { ids, reason } => {
                if !matches!(reason, FailReason::QueueFull { .. }) {
                    prop_assert_eq!(ids, &self.waiting, "{:?} fails everything waiting", reason);
                }
                for id in ids {
                    self.settle(id)?;
                }
                self.waiting.retain(|waiting| !ids.contains(waiting));
            }
            Effect::ScheduleTick { at } => {
                prop_assert!(at.as_millis() > self.now, "a tick in the past: {:?}", at);
                self.timer = Some(at.as_millis());
            }
        }
        Ok(())
    }

    /// (2) Each id is settled at most once (and, at quiescence, exactly once).
    fn settle(&mut self, id: &str) -> Result<(), TestCaseError> {
        let count = self.settled.entry(id.to_owned()).or_default();
        *count += 1;
        prop_assert_eq!(*count, 1, "`{}` settled twice", id);
        Ok(())
    }

    /// What must hold between steps.
    fn check(&self) -> Result<(), TestCaseError> {
        let queued: Vec<&str> = self
            .manager
            .queued()
            .map(|message| message.id.as_str())
            .collect();
        let waiting: Vec<&str> = self.waiting.iter().map(String::as_str).collect();
        prop_assert_eq!(queued, waiting, "the manager's queue is what waits");
        prop_assert!(self.waiting.len() <= self.max_queue);
        match self.process {
            Process::None => {
                // Nothing waits for a process nobody is starting.
                prop_assert!(self.waiting.is_empty());
                prop_assert_eq!(self.manager.phase(), &Phase::Asleep);
            }
            Process::Starting { stop_requested } => {
                prop_assert_eq!(self.manager.phase(), &Phase::Starting { stop_requested })
            }
            Process::Running => match &self.turn {
                None => {
                    // Nothing waits at an idle process, and its idle stop is timed.
                    prop_assert!(self.waiting.is_empty());
                    let since = self.idle_since.unwrap_or(u64::MAX);
                    prop_assert_eq!(
                        self.manager.phase(),
                        &Phase::Idle {
                            since: Timestamp::from_millis(since)
                        }
                    );
                    prop_assert!(
                        self.timer
                            .is_some_and(|timer| timer <= since + self.idle_stop),
                        "no timer for the idle stop: {:?}",
                        self.timer
                    );
                }
                Some(turn) => {
                    prop_assert!(
                        matches!(self.manager.phase(), Phase::Busy { delivery, .. } if *delivery == turn.delivery),
                        "{:?} running {:?}",
                        self.manager.phase(),
                        turn.delivery
                    );
                    prop_assert!(
                        self.timer
                            .is_some_and(|timer| timer <= turn.last_activity + self.stall_after),
                        "no timer for the stall: {:?}",
                        self.timer
                    );
                }
            },
            Process::Stopping => prop_assert!(
                matches!(
                    self.manager.phase(),
                    Phase::Stopping { .. } | Phase::Terminating { .. }
                ),
                "{:?} while the process stops",
                self.manager.phase()
            ),
        }
        Ok(())
    }

    /// Lets everything under way finish, with no new messages, until the agent sleeps.
    fn quiesce(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..1_000 {
            let action = if matches!(self.process, Process::Starting { .. }) {
                Action::StartSucceeds
            } else if self.turn.is_some() {
                Action::Complete
            } else if self.process == Process::Stopping {
                Action::StopFinishes
            } else if self.timer.is_some() {
                Action::FireTimer
            } else {
                break;
            };
            self.run(action)?;
        }
        prop_assert_eq!(self.process, Process::None);
        prop_assert_eq!(self.manager.phase(), &Phase::Asleep);
        prop_assert!(self.waiting.is_empty());
        for number in 1..=self.next_id {
            let id = format!("m{number}");
            prop_assert_eq!(
                self.settled.get(&id).copied(),
                Some(1),
                "`{}` settled once",
                id
            );
        }
        Ok(())
    }
}

fn any_config() -> impl Strategy<Value = ManagerConfig> {
    (0_u64..60, 0_u64..60, 1_usize..5)
        .prop_map(|(idle_stop, stall_after, max_queue)| config(idle_stop, stall_after, max_queue))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Through any plausible history: one process at a time, every message settled exactly
    /// once, silent turns ended and idle processes stopped on time, and one delivery per
    /// boundary carrying everything that waited.
    #[test]
    fn any_plausible_history_keeps_the_invariants(
        config in any_config(),
        actions in proptest::collection::vec(action(), 0..200),
    ) {
        let mut world = World::new(config);
        for action in actions {
            world.run(action)?;
        }
        world.quiesce()?;
    }

    /// Even events no executor would send in that order neither panic nor settle an id twice,
    /// and the phase and queue stay consistent.
    #[test]
    fn any_event_sequence_is_handled(
        config in any_config(),
        events in proptest::collection::vec((0_u64..30, 0_u8..9), 0..200),
    ) {
        let max_queue = config.max_queue.get();
        let mut manager = Manager::new(config);
        let mut now = 0;
        let mut next_id = 0;
        let mut settled: HashMap<String, usize> = HashMap::new();
        for (advance, kind) in events {
            now += advance;
            let event = match kind {
                0 => {
                    next_id += 1;
                    ManagerEvent::MessageArrived { id: format!("m{next_id}"), text: String::new() }
                }
                1 => ManagerEvent::ProcessStarted,
                2 => ManagerEvent::ProcessStartFailed { reason: String::new() },
                3 => ManagerEvent::AgentActivity,
                4 => ManagerEvent::TurnCompleted,
                5 => ManagerEvent::DeliveryRejected,
                6 => ManagerEvent::ProcessExited,
                7 => ManagerEvent::StopRequested,
                _ => ManagerEvent::Tick,
            };
            let effects = manager.step(event, Timestamp::from_millis(now));
            for effect in &effects {
                match effect {
                    Effect::StartProcess => prop_assert!(
                        matches!(manager.phase(), Phase::Starting { .. }),
                        "StartProcess leaves {:?}",
                        manager.phase()
                    ),
                    Effect::Deliver { message_ids: ids, .. } | Effect::FailMessages { ids, .. } => {
                        for id in ids {
                            let count = settled.entry(id.clone()).or_default();
                            *count += 1;
                            prop_assert_eq!(*count, 1, "`{}` settled twice", id);
                        }
                    }
                    Effect::ScheduleTick { at } => prop_assert!(at.as_millis() > now),
                    Effect::StopProcess { .. } | Effect::TerminateStalled { .. } => {}
                }
            }
            prop_assert!(effects.iter().filter(|effect| **effect == Effect::StartProcess).count() <= 1);
            prop_assert!(manager.queued().len() <= max_queue);
            if matches!(manager.phase(), Phase::Asleep | Phase::Idle { .. }) {
                prop_assert_eq!(manager.queued().len(), 0);
            }
        }
    }
}
