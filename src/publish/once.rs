//! One transition, one report. When both SNS (the alarm's action) and
//! EventBridge (the organisation-wide rule) deliver the same transition, both
//! invocations compute the same diagnosis id; the first to claim it in a
//! ledger publishes, the other stands down. A claim whose holder died (no
//! publish within [`STALE_CLAIM`]) can be taken over, so that a crashed
//! invocation's retry is never locked out.

use std::future::Future;

use chrono::{DateTime, Duration, Utc};

use super::{DiagnosisPublisher, Outgoing};
use crate::error::Result;

/// A claim older than this, never marked published, is abandoned.
pub const STALE_CLAIM: Duration = Duration::minutes(2);

/// Port: which transitions are being or were published.
pub trait TransitionLedger: Send + Sync {
    /// Takes the transition for this invocation; `false` when another holds
    /// a live claim on it or already published it.
    fn claim(&self, id: &str, now: DateTime<Utc>) -> impl Future<Output = Result<bool>> + Send;

    /// Marks it published: later deliveries of it stand down.
    fn published(&self, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Gives the claim up after a failed publish, so that a retry can take it.
    fn release(&self, id: &str) -> impl Future<Output = Result<()>> + Send;
}

/// A publisher that publishes each transition once across deliveries
/// (without a ledger, every delivery publishes).
#[derive(Debug, Clone)]
pub struct OncePerTransition<P, L> {
    pub inner: P,
    pub ledger: Option<L>,
}

/// The receipt of a delivery that stood down.
pub const STOOD_DOWN: &str = "skipped: this transition is published by another delivery";

impl<P: DiagnosisPublisher, L: TransitionLedger> DiagnosisPublisher for OncePerTransition<P, L> {
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }

    async fn publish(&self, outgoing: &Outgoing) -> Result<Vec<String>> {
        let Some(ledger) = &self.ledger else {
            return self.inner.publish(outgoing).await;
        };
        let id = &outgoing.diagnosis_id;
        if !ledger.claim(id, Utc::now()).await? {
            tracing::info!(diagnosis_id = %id, "transition already published by another delivery");
            return Ok(vec![STOOD_DOWN.to_owned()]);
        }
        match self.inner.publish(outgoing).await {
            Ok(receipts) => {
                // Published: a failure to record it only risks a second report, never a lost one.
                if let Err(e) = ledger.published(id).await {
                    tracing::warn!(diagnosis_id = %id, error = %e, "published, but not recorded in the ledger");
                }
                Ok(receipts)
            }
            Err(e) => {
                if let Err(release) = ledger.release(id).await {
                    tracing::warn!(diagnosis_id = %id, error = %release, "claim not released; it goes stale");
                }
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// Per transition: published yet, and when it was claimed.
    type Entries = HashMap<String, (bool, DateTime<Utc>)>;

    /// An in-memory ledger with the same rules as the DynamoDB one.
    #[derive(Default, Clone)]
    struct MemoryLedger(Arc<Mutex<Entries>>);

    impl TransitionLedger for MemoryLedger {
        async fn claim(&self, id: &str, now: DateTime<Utc>) -> Result<bool> {
            let mut map = self.0.lock().unwrap();
            match map.get(id) {
                Some((true, _)) => Ok(false),
                Some((false, at)) if now - *at < STALE_CLAIM => Ok(false),
                _ => {
                    map.insert(id.to_owned(), (false, now));
                    Ok(true)
                }
            }
        }
        async fn published(&self, id: &str) -> Result<()> {
            if let Some(entry) = self.0.lock().unwrap().get_mut(id) {
                entry.0 = true;
            }
            Ok(())
        }
        async fn release(&self, id: &str) -> Result<()> {
            self.0.lock().unwrap().remove(id);
            Ok(())
        }
    }

    #[derive(Default, Clone)]
    struct Counting {
        sent: Arc<Mutex<u32>>,
        fail: bool,
    }

    impl DiagnosisPublisher for Counting {
        async fn publish(&self, _: &Outgoing) -> Result<Vec<String>> {
            if self.fail {
                return Err(super::super::failure("test", "refused".to_owned()));
            }
            *self.sent.lock().unwrap() += 1;
            Ok(vec!["sns:1".to_owned()])
        }
    }

    fn outgoing() -> Outgoing {
        Outgoing {
            diagnosis_id: "dx-1".to_owned(),
            group_id: "g".to_owned(),
            subject: "s".to_owned(),
            json: "{}".to_owned(),
            text: String::new(),
            attributes: Vec::new(),
            shortened: false,
            report: std::sync::Arc::new(alarm_triage_core::fixtures::sample()),
        }
    }

    #[tokio::test]
    async fn the_second_delivery_of_a_transition_stands_down() {
        let inner = Counting::default();
        let once = OncePerTransition {
            inner: inner.clone(),
            ledger: Some(MemoryLedger::default()),
        };
        assert_eq!(once.publish(&outgoing()).await.unwrap(), ["sns:1"]);
        assert_eq!(once.publish(&outgoing()).await.unwrap(), [STOOD_DOWN]);
        assert_eq!(*inner.sent.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn a_failed_publish_releases_its_claim_so_the_retry_publishes() {
        let ledger = MemoryLedger::default();
        let failing = OncePerTransition {
            inner: Counting {
                fail: true,
                ..Counting::default()
            },
            ledger: Some(ledger.clone()),
        };
        assert!(failing.publish(&outgoing()).await.is_err());
        let working = Counting::default();
        let retry = OncePerTransition {
            inner: working.clone(),
            ledger: Some(ledger),
        };
        assert_eq!(retry.publish(&outgoing()).await.unwrap(), ["sns:1"]);
        assert_eq!(*working.sent.lock().unwrap(), 1);
    }
}
