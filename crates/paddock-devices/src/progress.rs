//! Progress of a long device operation (booting a device, swiping until something shows), for
//! a caller that wants to hear about it: the caller runs the operation inside
//! [`with_progress`], and the operation calls [`report`] at each step. Outside such a scope
//! `report` does nothing, so device code reports unconditionally and stays free of any MCP
//! notion; the tools layer turns steps into `notifications/progress`.

use std::future::Future;
use std::sync::Arc;

/// One step of an operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Steps done so far (increasing).
    pub done: u64,
    /// Steps in all, when known.
    pub total: Option<u64>,
    /// What is happening, for a person.
    pub message: String,
}

/// Receives the steps of the operations run inside [`with_progress`].
#[derive(Clone)]
pub struct Reporter(Arc<dyn Fn(Step) + Send + Sync>);

impl Reporter {
    pub fn new(receive: impl Fn(Step) + Send + Sync + 'static) -> Self {
        Self(Arc::new(receive))
    }
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporter")
    }
}

tokio::task_local! {
    static REPORTER: Reporter;
}

/// Runs `operation` with `reporter` receiving the steps it reports.
pub async fn with_progress<F: Future>(reporter: Reporter, operation: F) -> F::Output {
    REPORTER.scope(reporter, operation).await
}

/// Reports a step to the enclosing [`with_progress`], if any.
pub fn report(done: u64, total: Option<u64>, message: impl Into<String>) {
    let _ = REPORTER.try_with(|reporter| {
        (reporter.0)(Step {
            done,
            total,
            message: message.into(),
        });
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[tokio::test]
    async fn steps_reach_the_enclosing_reporter_only() {
        report(1, None, "nobody listens");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let reporter = Reporter::new(move |step| sink.lock().unwrap().push(step));
        with_progress(reporter, async {
            report(1, Some(2), "one");
            tokio::task::yield_now().await;
            report(2, Some(2), "two");
        })
        .await;
        report(3, None, "after the scope");
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.iter()
                .map(|step| step.message.as_str())
                .collect::<Vec<_>>(),
            ["one", "two"]
        );
        assert_eq!(seen[1].total, Some(2));
    }
}
