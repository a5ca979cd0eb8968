//! Every call of a gathering runs through the ledger: it bounds the call by
//! the per-source timeout and the invocation's deadline, and records its wall
//! time and outcome, and a gap when it fails.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::evidence::model::{EvidenceGap, SourceTiming, Timings};

/// Records timings and gaps from concurrent sources.
#[derive(Debug)]
pub struct Ledger {
    started: Instant,
    deadline: Instant,
    per_source: Duration,
    timings: Mutex<Vec<SourceTiming>>,
    gaps: Mutex<Vec<EvidenceGap>>,
}

impl Ledger {
    pub fn new(overall: Duration, per_source: Duration) -> Self {
        let started = Instant::now();
        Ledger {
            started,
            deadline: started + overall,
            per_source,
            timings: Mutex::new(Vec::new()),
            gaps: Mutex::new(Vec::new()),
        }
    }

    /// Runs one call under `min(per-source timeout, time to the deadline)`;
    /// a failure or a timeout is recorded as a gap and gives `None`.
    pub async fn run<T>(
        &self,
        name: &'static str,
        call: impl Future<Output = Result<T>>,
    ) -> Option<T> {
        let started = Instant::now();
        let limit = (started + self.per_source).min(self.deadline);
        let outcome = match tokio::time::timeout_at(limit, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(gap_reason(&error)),
            Err(_) => Err(format!(
                "no answer within {} ms (the invocation's deadline or the per-source timeout)",
                limit.saturating_duration_since(started).as_millis()
            )),
        };
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (value, text) = match outcome {
            Ok(value) => (Some(value), "ok".to_owned()),
            Err(reason) => {
                self.gap(name, &reason);
                (None, reason)
            }
        };
        if let Ok(mut timings) = self.timings.lock() {
            timings.push(SourceTiming {
                source: name.to_owned(),
                ms,
                outcome: text,
            });
        }
        value
    }

    /// Records that `source` could not be read.
    pub fn gap(&self, source: &str, reason: &str) {
        if let Ok(mut gaps) = self.gaps.lock() {
            // One gap per source and reason, however many target groups failed the same way.
            if !gaps
                .iter()
                .any(|g| g.source == source && g.reason == reason)
            {
                gaps.push(EvidenceGap {
                    source: source.to_owned(),
                    reason: reason.to_owned(),
                });
            }
        }
    }

    /// The gaps and the timings, with the total wall time so far.
    pub fn close(self) -> (Vec<EvidenceGap>, Timings) {
        let total_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        (
            self.gaps.into_inner().unwrap_or_default(),
            Timings {
                total_ms,
                sources: self.timings.into_inner().unwrap_or_default(),
            },
        )
    }
}

fn gap_reason(error: &Error) -> String {
    match error {
        Error::Source { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}
