//! Holding likely transients (`HOLD_TRANSIENT_SECONDS`). A diagnosis the
//! core says to hold ([`should_hold`]) is sent to an SQS queue with that
//! delay instead of being published; when the queue hands it back to the
//! function, the alarm's state decides: still firing, the full report goes out
//! marked "held N min"; back to OK, one quiet line and no email. Nothing is
//! lost: a hold that cannot be queued publishes at once, and a state that
//! cannot be read publishes the full report.

use std::future::Future;

use alarm_triage_core::alarm::AlarmState;
use alarm_triage_core::diagnosis::hold::should_hold;
use alarm_triage_core::diagnosis::{Hold, HoldOutcome};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{DiagnosisPublisher, Outgoing};
use crate::diagnosis::Diagnosis;
use crate::error::{Error, Result};
use crate::evidence::model::AlarmDefinition;

/// What a held message declares itself as.
pub const HELD_SCHEMA: &str = "alarm-triage/held/v1";

/// The receipt prefix of a held diagnosis (`held:<SQS message id>`).
pub const HELD_RECEIPT: &str = "held:";

/// The body of a message on the hold queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldReport {
    pub schema: String,
    pub held_at: DateTime<Utc>,
    pub diagnosis: Diagnosis,
}

/// Port: the delay queue.
pub trait HoldQueue: Send + Sync {
    /// Queues `body` to come back after `delay_seconds`; returns the message id.
    fn hold(&self, body: String, delay_seconds: u32)
    -> impl Future<Output = Result<String>> + Send;
}

/// A publisher that holds what the core says to hold, and publishes the rest
/// (and everything, without a queue) through `inner`.
#[derive(Debug, Clone)]
pub struct HoldTransients<P, Q> {
    pub inner: P,
    pub queue: Option<Q>,
    pub seconds: u32,
}

impl<P: DiagnosisPublisher, Q: HoldQueue> DiagnosisPublisher for HoldTransients<P, Q> {
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }

    async fn publish(&self, outgoing: &Outgoing) -> Result<Vec<String>> {
        let d = &outgoing.report;
        if let Some(queue) = self.queue.as_ref().filter(|_| should_hold(d, self.seconds)) {
            let held = HeldReport {
                schema: HELD_SCHEMA.to_owned(),
                held_at: Utc::now(),
                diagnosis: (**d).clone(),
            };
            let body = serde_json::to_string(&held)
                .map_err(|e| Error::Core(alarm_triage_core::Error::Serialise(e)))?;
            match queue.hold(body, self.seconds).await {
                Ok(id) => {
                    tracing::info!(alarm_name = %d.alarm.name, diagnosis_id = %d.id, hold_seconds = self.seconds, "likely transient held");
                    return Ok(vec![format!("{HELD_RECEIPT}{id}")]);
                }
                Err(e) => {
                    tracing::warn!(alarm_name = %d.alarm.name, diagnosis_id = %d.id, error = %e, "could not hold the diagnosis; publishing it now");
                }
            }
        }
        self.inner.publish(outgoing).await
    }
}

/// One message of an SQS event from the hold queue.
#[derive(Debug)]
pub struct Returned {
    /// The SQS message id (what a partial batch failure names).
    pub message_id: String,
    pub held: Result<HeldReport>,
}

/// The held reports in a Lambda SQS event; `None` when the event is not from SQS.
pub fn returned_from_event(event: &Value) -> Option<Vec<Returned>> {
    let records = event.get("Records")?.as_array()?;
    if records.is_empty()
        || !records
            .iter()
            .all(|r| r.get("eventSource").and_then(Value::as_str) == Some("aws:sqs"))
    {
        return None;
    }
    Some(
        records
            .iter()
            .map(|r| {
                let message_id = r
                    .get("messageId")
                    .and_then(Value::as_str)
                    .unwrap_or("(no messageId)")
                    .to_owned();
                let held = r
                    .get("body")
                    .and_then(Value::as_str)
                    .ok_or_else(|| "it has no body".to_owned())
                    .and_then(parse_held)
                    .map_err(|problem| Error::NotAHeldReport {
                        message_id: message_id.clone(),
                        problem,
                    });
                Returned { message_id, held }
            })
            .collect(),
    )
}

fn parse_held(body: &str) -> std::result::Result<HeldReport, String> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| format!("the body is not JSON ({e}); expected a held report"))?;
    match value.get("schema").and_then(Value::as_str) {
        Some(HELD_SCHEMA) => {}
        other => {
            return Err(format!(
                "it declares schema {other:?}; expected {HELD_SCHEMA:?} (only the diagnose function writes to the hold queue)"
            ));
        }
    }
    serde_json::from_value(value).map_err(|e| format!("it does not match {HELD_SCHEMA}: {e}"))
}

/// The report as it goes out after the hold, given what DescribeAlarms said.
pub fn released(
    held: HeldReport,
    state: Result<Option<AlarmDefinition>>,
    now: DateTime<Utc>,
) -> Diagnosis {
    let mut d = held.diagnosis;
    let seconds = u32::try_from((now - held.held_at).num_seconds().max(0)).unwrap_or(u32::MAX);
    let outcome = match state {
        Ok(Some(AlarmDefinition {
            state: Some(AlarmState::Ok),
            ..
        })) => HoldOutcome::Cleared { since: None },
        Ok(Some(AlarmDefinition { state: Some(_), .. })) => HoldOutcome::StillFiring,
        Ok(Some(_)) => HoldOutcome::Unknown {
            reason: "DescribeAlarms gave the alarm without a state".to_owned(),
        },
        Ok(None) => HoldOutcome::Unknown {
            reason: "the alarm no longer exists".to_owned(),
        },
        Err(e) => HoldOutcome::Unknown {
            reason: e.to_string(),
        },
    };
    let hold = Hold { seconds, outcome };
    if let HoldOutcome::Unknown { reason } = &hold.outcome {
        d.notes.push(format!(
            "{}: the alarm's state could not be read afterwards ({reason}), so the full report went out",
            hold.label()
        ));
    }
    d.hold = Some(hold);
    d
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::classify::Behaviour;
    use crate::diagnosis::{ReportKind, Severity};
    use crate::publish::fake::RecordingPublisher;
    use crate::publish::prepare;

    #[derive(Default)]
    struct RecordingQueue {
        fail: bool,
        held: Mutex<Vec<(String, u32)>>,
    }

    impl HoldQueue for RecordingQueue {
        async fn hold(&self, body: String, delay_seconds: u32) -> Result<String> {
            if self.fail {
                return Err(crate::publish::failure(
                    "the hold queue",
                    "AccessDenied".to_owned(),
                ));
            }
            self.held.lock().unwrap().push((body, delay_seconds));
            Ok("m-1".to_owned())
        }
    }

    fn transient(severity: Severity) -> Diagnosis {
        let mut d = alarm_triage_core::fixtures::sample();
        d.kind = ReportKind::Diagnosis;
        d.classification.behaviour = Behaviour::Transient;
        d.severity = severity;
        d
    }

    fn holder(fail: bool) -> HoldTransients<RecordingPublisher, RecordingQueue> {
        HoldTransients {
            inner: RecordingPublisher::default(),
            queue: Some(RecordingQueue {
                fail,
                ..RecordingQueue::default()
            }),
            seconds: 300,
        }
    }

    #[tokio::test]
    async fn a_transient_warning_goes_to_the_queue_with_the_delay_and_is_not_published() {
        let holder = holder(false);
        let receipts = holder
            .publish(&prepare(&transient(Severity::Warning)).unwrap())
            .await
            .unwrap();
        assert_eq!(receipts, vec!["held:m-1".to_owned()]);
        assert!(holder.inner.sent.lock().unwrap().is_empty());
        let queue = holder.queue.as_ref().unwrap();
        let held = queue.held.lock().unwrap();
        assert_eq!(held[0].1, 300);
        let back: HeldReport = serde_json::from_str(&held[0].0).unwrap();
        assert_eq!(
            back.diagnosis.classification.behaviour,
            Behaviour::Transient
        );
    }

    #[tokio::test]
    async fn a_critical_transient_is_published_at_once() {
        let holder = holder(false);
        holder
            .publish(&prepare(&transient(Severity::Critical)).unwrap())
            .await
            .unwrap();
        assert_eq!(holder.inner.sent.lock().unwrap().len(), 1);
        assert!(holder.queue.unwrap().held.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_hold_that_cannot_be_queued_is_published_at_once() {
        let holder = holder(true);
        let receipts = holder
            .publish(&prepare(&transient(Severity::Warning)).unwrap())
            .await
            .unwrap();
        assert_eq!(
            receipts,
            vec![
                "recorded:".to_owned() + holder.inner.sent.lock().unwrap()[0].diagnosis_id.as_str()
            ]
        );
    }

    fn returned_event(body: &str) -> Value {
        serde_json::json!({"Records": [{"messageId": "q-1", "eventSource": "aws:sqs", "body": body}]})
    }

    fn held_body() -> String {
        serde_json::to_string(&HeldReport {
            schema: HELD_SCHEMA.to_owned(),
            held_at: "2026-12-02T10:00:00Z".parse().unwrap(),
            diagnosis: transient(Severity::Warning),
        })
        .unwrap()
    }

    #[test]
    fn an_sqs_event_from_the_hold_queue_gives_its_held_reports() {
        let returned = returned_from_event(&returned_event(&held_body())).unwrap();
        assert_eq!(returned[0].message_id, "q-1");
        assert!(returned[0].held.is_ok());
    }

    #[test]
    fn an_sns_event_is_not_a_return_from_the_hold_queue() {
        let sns = serde_json::json!({"Records": [{"EventSource": "aws:sns", "Sns": {}}]});
        assert!(returned_from_event(&sns).is_none());
    }

    #[test]
    fn a_foreign_message_on_the_hold_queue_is_refused_naming_what_was_expected() {
        let returned = returned_from_event(&returned_event("{\"schema\":\"other\"}")).unwrap();
        let error = returned[0].held.as_ref().unwrap_err().to_string();
        assert!(
            error.contains("q-1") && error.contains(HELD_SCHEMA),
            "{error}"
        );
    }

    fn definition(state: Option<AlarmState>) -> AlarmDefinition {
        AlarmDefinition {
            name: "a".into(),
            composite: false,
            state,
            namespace: None,
            metric_name: None,
            dimensions: Vec::new(),
            statistic: None,
            period_seconds: None,
            evaluation_periods: None,
            datapoints_to_alarm: None,
            threshold: None,
            comparison: None,
            actions_enabled: None,
        }
    }

    fn held() -> HeldReport {
        parse_held(&held_body()).unwrap()
    }

    #[test]
    fn an_alarm_back_to_ok_after_the_hold_is_cleared() {
        let now = "2026-12-02T10:05:00Z".parse().unwrap();
        let d = released(held(), Ok(Some(definition(Some(AlarmState::Ok)))), now);
        let hold = d.hold.unwrap();
        assert!(hold.cleared());
        assert_eq!(hold.seconds, 300);
    }

    #[test]
    fn an_alarm_still_in_alarm_after_the_hold_is_still_firing() {
        let now = "2026-12-02T10:05:00Z".parse().unwrap();
        let d = released(held(), Ok(Some(definition(Some(AlarmState::Alarm)))), now);
        assert_eq!(d.hold.unwrap().outcome, HoldOutcome::StillFiring);
    }

    #[test]
    fn an_unreadable_state_sends_the_full_report_and_says_why() {
        let now = "2026-12-02T10:05:00Z".parse().unwrap();
        let failed = Err(crate::publish::failure(
            "cloudwatch",
            "Throttling".to_owned(),
        ));
        let d = released(held(), failed, now);
        assert!(matches!(
            d.hold.unwrap().outcome,
            HoldOutcome::Unknown { .. }
        ));
        assert!(
            d.notes.iter().any(|n| n.contains("Throttling")),
            "{:?}",
            d.notes
        );
    }
}
