//! Backoff for accept loops. When `accept` fails — out of file descriptors (`EMFILE`,
//! `ENFILE`), or out of memory — retrying at once spins a core and, with a log line per
//! failure, can fill a disk within a minute. [`AcceptBackoff`] sleeps between attempts (5 ms,
//! doubling to 1 s, reset by the next success) and logs at most one line per second, with the
//! number of failures it did not log.

use std::time::Duration;

use tokio::time::Instant;
use tracing::warn;

/// The first delay after a failed accept.
pub const INITIAL_DELAY: Duration = Duration::from_millis(5);
/// The longest delay between attempts.
pub const MAX_DELAY: Duration = Duration::from_secs(1);
/// At most one log line per this interval.
pub const LOG_INTERVAL: Duration = Duration::from_secs(1);

/// The state of one accept loop's backoff.
#[derive(Debug)]
pub struct AcceptBackoff {
    listener: &'static str,
    delay: Duration,
    last_log: Option<Instant>,
    suppressed: u64,
}

/// What [`AcceptBackoff::failed`] decided, for the loop and for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// How long to wait before the next accept.
    pub delay: Duration,
    /// `Some(n)` when this failure is logged, with `n` failures left unlogged since the last
    /// line; `None` when it is counted silently.
    pub logged_with_suppressed: Option<u64>,
}

impl AcceptBackoff {
    /// A backoff for the listener named `listener` (it appears in the log line).
    pub fn new(listener: &'static str) -> Self {
        Self {
            listener,
            delay: Duration::ZERO,
            last_log: None,
            suppressed: 0,
        }
    }

    /// A connection was accepted: the next failure starts from the initial delay again.
    pub fn succeeded(&mut self) {
        self.delay = Duration::ZERO;
    }

    /// Records a failure at `now` and says what to do; [`AcceptBackoff::failed`] acts on it.
    pub fn decide(&mut self, now: Instant) -> Decision {
        self.delay = if self.delay.is_zero() {
            INITIAL_DELAY
        } else {
            (self.delay * 2).min(MAX_DELAY)
        };
        let due = self
            .last_log
            .is_none_or(|last| now.duration_since(last) >= LOG_INTERVAL);
        let logged_with_suppressed = if due {
            self.last_log = Some(now);
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        };
        Decision {
            delay: self.delay,
            logged_with_suppressed,
        }
    }

    /// Logs (rate-limited) and sleeps after a failed accept.
    pub async fn failed(&mut self, error: &std::io::Error) {
        let decision = self.decide(Instant::now());
        if let Some(suppressed) = decision.logged_with_suppressed {
            warn!(
                listener = self.listener,
                %error,
                suppressed,
                retry_in_ms = u64::try_from(decision.delay.as_millis()).unwrap_or(u64::MAX),
                "accept failed; backing off"
            );
        }
        tokio::time::sleep(decision.delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_to_the_cap_and_reset_on_success() {
        let start = Instant::now();
        let mut backoff = AcceptBackoff::new("test");
        let delays: Vec<Duration> = (0..12).map(|_| backoff.decide(start).delay).collect();
        assert_eq!(delays[0], INITIAL_DELAY);
        assert_eq!(delays[1], INITIAL_DELAY * 2);
        assert_eq!(delays[2], INITIAL_DELAY * 4);
        assert!(delays.windows(2).all(|pair| pair[1] >= pair[0]));
        assert_eq!(delays[11], MAX_DELAY);
        backoff.succeeded();
        assert_eq!(backoff.decide(start).delay, INITIAL_DELAY);
    }

    #[test]
    fn logs_at_most_once_per_interval_with_the_count_it_skipped() {
        let start = Instant::now();
        let mut backoff = AcceptBackoff::new("test");
        assert_eq!(backoff.decide(start).logged_with_suppressed, Some(0));
        for step in 1..=99u32 {
            let at = start + Duration::from_millis(u64::from(step) * 5);
            assert_eq!(backoff.decide(at).logged_with_suppressed, None);
        }
        let later = start + LOG_INTERVAL;
        assert_eq!(backoff.decide(later).logged_with_suppressed, Some(99));
        assert_eq!(
            backoff
                .decide(later + Duration::from_millis(1))
                .logged_with_suppressed,
            None
        );
    }
}
