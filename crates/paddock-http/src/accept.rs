//! Backoff for accept loops. When `accept` fails — out of file descriptors under a connection
//! storm (EMFILE, ENFILE), a connection aborted before it was taken (ECONNABORTED) — trying
//! again at once fails again at once, and a loop that does so spins a core and floods the log.
//! [`AcceptBackoff`] says how long to wait (growing while failures repeat, back to the start
//! after a success) and logs failures at most once per interval, with the number it did not
//! log. It knows nothing of what the listener serves, so any accept loop can use it.

use std::io;
use std::time::{Duration, Instant};

use tracing::warn;

/// The state an accept loop keeps between failures. Call [`AcceptBackoff::on_error`] when
/// `accept` fails and wait the delay it returns; call [`AcceptBackoff::on_success`] when it
/// succeeds. Time is passed in, so the schedule can be tested without a clock.
#[derive(Debug)]
pub struct AcceptBackoff {
    /// Names the listener in log lines.
    listener: String,
    next_delay: Duration,
    last_logged: Option<Instant>,
    /// Failures since the last log line that it did not report.
    suppressed: u64,
}

impl AcceptBackoff {
    /// The wait after the first failure of a run.
    pub const INITIAL_DELAY: Duration = Duration::from_millis(5);
    /// The wait doubles up to this.
    pub const MAX_DELAY: Duration = Duration::from_secs(1);
    /// At most one log line per this interval.
    pub const LOG_INTERVAL: Duration = Duration::from_secs(1);

    /// `listener` names the listener in log lines (`credential proxy for upstream `api``).
    pub fn new(listener: impl Into<String>) -> Self {
        Self {
            listener: listener.into(),
            next_delay: Self::INITIAL_DELAY,
            last_logged: None,
            suppressed: 0,
        }
    }

    /// Records an accept that failed at `now` and returns how long to wait before the next.
    pub fn on_error(&mut self, error: &io::Error, now: Instant) -> Duration {
        let delay = self.next_delay;
        self.next_delay = (delay * 2).min(Self::MAX_DELAY);
        if self.may_log(now) {
            warn!(
                listener = %self.listener,
                %error,
                retry_in = ?delay,
                suppressed = self.suppressed,
                "accept failed; backing off"
            );
            self.logged(now);
        } else {
            self.suppressed += 1;
        }
        delay
    }

    /// Records an accept that succeeded at `now`: the next failure waits
    /// [`Self::INITIAL_DELAY`] again. Failures that were not logged are reported here once the
    /// interval allows, so a run that ends is not left uncounted until the next failure.
    pub fn on_success(&mut self, now: Instant) {
        self.next_delay = Self::INITIAL_DELAY;
        if self.suppressed > 0 && self.may_log(now) {
            warn!(
                listener = %self.listener,
                suppressed = self.suppressed,
                "accepting again after failures that were not logged"
            );
            self.logged(now);
        }
    }

    /// Records a failure, logs (rate-limited) and waits the delay, unless `stop` resolves
    /// first (then returns `false`: the loop should end).
    pub async fn wait_after(&mut self, error: &io::Error, stop: impl Future<Output = ()>) -> bool {
        let delay = self.on_error(error, Instant::now());
        tokio::select! {
            () = stop => false,
            () = tokio::time::sleep(delay) => true,
        }
    }

    fn may_log(&self, now: Instant) -> bool {
        self.last_logged
            .is_none_or(|last| now.saturating_duration_since(last) >= Self::LOG_INTERVAL)
    }

    fn logged(&mut self, now: Instant) {
        self.last_logged = Some(now);
        self.suppressed = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    fn emfile() -> io::Error {
        io::Error::other("Too many open files (os error 24)")
    }

    fn millis(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn delays_double_to_the_cap_and_reset_on_success() {
        let start = Instant::now();
        let mut backoff = AcceptBackoff::new("test");
        let delays: Vec<Duration> = (0..10)
            .map(|_| backoff.on_error(&emfile(), start))
            .collect();
        let expected: Vec<Duration> = [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]
            .into_iter()
            .map(millis)
            .collect();
        assert_eq!(delays, expected);
        backoff.on_success(start);
        assert_eq!(backoff.on_error(&emfile(), start), millis(5));
        assert_eq!(backoff.on_error(&emfile(), start), millis(10));
    }

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Runs `steps` against a fresh backoff under a subscriber that captures what it logs.
    fn logged_lines(steps: impl FnOnce(&mut AcceptBackoff)) -> Vec<String> {
        let capture = Capture::default();
        let writer = capture.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .without_time()
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            steps(&mut AcceptBackoff::new("listener-under-test"));
        });
        let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn failures_are_logged_at_most_once_per_interval_with_the_suppressed_count() {
        let start = Instant::now();
        let lines = logged_lines(|backoff| {
            // A storm: 100 failures in the first 990 ms, one line for all of them.
            for step in 0..100 {
                backoff.on_error(&emfile(), start + millis(step * 10));
            }
            // The interval has passed: the next failure is logged with the 99 not logged.
            backoff.on_error(&emfile(), start + millis(1000));
            // Three more inside the interval, then successes: the first success inside the
            // interval stays quiet, the one after it reports the three.
            for step in 1..=3 {
                backoff.on_error(&emfile(), start + millis(1000 + step));
            }
            backoff.on_success(start + millis(1500));
            backoff.on_success(start + millis(2000));
            // Nothing is left to report.
            backoff.on_success(start + millis(5000));
        });
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines[0].contains("accept failed"), "{}", lines[0]);
        assert!(lines[0].contains("suppressed=0"), "{}", lines[0]);
        assert!(
            lines[0].contains("listener=listener-under-test"),
            "{}",
            lines[0]
        );
        assert!(lines[0].contains("Too many open files"), "{}", lines[0]);
        assert!(lines[1].contains("accept failed"), "{}", lines[1]);
        assert!(lines[1].contains("suppressed=99"), "{}", lines[1]);
        assert!(lines[2].contains("accepting again"), "{}", lines[2]);
        assert!(lines[2].contains("suppressed=3"), "{}", lines[2]);
    }

    #[test]
    fn a_quiet_success_logs_nothing() {
        let start = Instant::now();
        let lines = logged_lines(|backoff| {
            backoff.on_success(start);
            backoff.on_error(&emfile(), start + millis(1));
            backoff.on_success(start + millis(5000));
        });
        assert_eq!(lines.len(), 1, "{lines:#?}");
    }
}
