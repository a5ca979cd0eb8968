//! One invocation: every record is triaged on its own. Records that are not
//! CloudWatch alarms are rejected in the response and logged, never retried
//! (they would fail the same way again); only internal failures fail the
//! invocation, so that Lambda's retries and on-failure destination keep the event.

use std::time::SystemTime;

use alarm_triage::config::Config;
use alarm_triage::evidence::{Collection, EvidenceSources};
use alarm_triage::invocation::remaining_time;
use alarm_triage::pipeline::{Now, Outcome, Triage};
use alarm_triage::publish::DiagnosisPublisher;
use alarm_triage::publish::hold::{Returned, returned_from_event};
use lambda_runtime::{Diagnostic, LambdaEvent};
use serde_json::{Value, json};

/// Built once per cold start.
#[derive(Debug)]
pub struct State<S, P> {
    config: Config,
    triage: Triage<S, P>,
}

impl<S: EvidenceSources, P: DiagnosisPublisher> State<S, P> {
    pub fn new(config: Config, sources: S, publisher: P) -> Self {
        let triage = Triage {
            collection: Collection::Live(sources),
            publisher,
            budget: config.budget,
            classifier: config.classifier.clone(),
        };
        State { config, triage }
    }
}

/// Handles one invocation.
pub async fn handle<S: EvidenceSources, P: DiagnosisPublisher>(
    state: &State<S, P>,
    event: LambdaEvent<Value>,
) -> Result<Value, Diagnostic> {
    let remaining = remaining_time(event.context.deadline, SystemTime::now());
    let budget = state.config.budget_for(remaining);
    tracing::info!(
        request_id = %event.context.request_id,
        deadline_ms = event.context.deadline,
        remaining_ms = u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX),
        budget_ms = u64::try_from(budget.overall.as_millis()).unwrap_or(u64::MAX),
        "invocation started"
    );
    if let Some(returned) = returned_from_event(&event.payload) {
        return Ok(release(state, returned, budget).await);
    }
    let now = Now::At(chrono::Utc::now());
    let outcomes = match state.triage.handle_value(event.payload, now, budget).await {
        Ok(outcomes) => outcomes,
        Err(e) if e.is_rejection() => {
            tracing::warn!(request_id = %event.context.request_id, error_kind = e.kind(), error = %e, "event rejected");
            return Ok(
                json!({ "records": [{ "record": 0, "outcome": "rejected", "detail": format!("{}: {e}", e.kind()) }] }),
            );
        }
        Err(e) => return Err(failure(&e)),
    };
    let mut records = Vec::with_capacity(outcomes.len());
    let mut reports = Vec::new();
    for (index, outcome) in outcomes.iter().enumerate() {
        match outcome {
            Outcome::Failed {
                diagnosis_id,
                error,
                ..
            } => {
                let mut diagnostic = failure(error);
                diagnostic.error_message =
                    format!("diagnosis {diagnosis_id}: {}", diagnostic.error_message);
                return Err(diagnostic);
            }
            Outcome::Rejected(e) if !e.is_rejection() => return Err(failure(e)),
            Outcome::Report { diagnosis, .. } => reports.push(
                serde_json::to_value(diagnosis.as_ref())
                    .map_err(|e| failure(&alarm_triage::CoreError::Serialise(e).into()))?,
            ),
            _ => {}
        }
        records.push(outcome.summary(index));
    }
    Ok(json!({ "records": records, "diagnoses": reports }))
}

/// Held diagnoses back from the hold queue. Each that cannot be published
/// (or is not a held report) is a batch item failure: SQS keeps it, retries
/// it, and finally moves it to the hold queue's dead-letter queue.
async fn release<S: EvidenceSources, P: DiagnosisPublisher>(
    state: &State<S, P>,
    returned: Vec<Returned>,
    budget: alarm_triage::evidence::Budget,
) -> Value {
    let mut failures = Vec::new();
    let mut records = Vec::with_capacity(returned.len());
    for (index, item) in returned.into_iter().enumerate() {
        let outcome = match item.held {
            Ok(held) => state.triage.release(held, chrono::Utc::now(), budget).await,
            Err(e) => {
                tracing::error!(message_id = %item.message_id, error_kind = e.kind(), error = %e, "not a held report");
                Outcome::Rejected(e)
            }
        };
        if matches!(outcome, Outcome::Failed { .. } | Outcome::Rejected(_)) {
            failures.push(json!({ "itemIdentifier": item.message_id }));
        }
        records.push(outcome.summary(index));
    }
    json!({ "batchItemFailures": failures, "records": records })
}

/// An internal failure fails the invocation, so Lambda retries it and keeps it on failure.
fn failure(e: &alarm_triage::Error) -> Diagnostic {
    tracing::error!(error_kind = e.kind(), error = %e, "invocation failed");
    Diagnostic {
        error_type: e.kind().to_owned(),
        error_message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alarm_triage::alarm::AlarmState;
    use alarm_triage::evidence::fake::StaticSources;
    use alarm_triage::history::StateChange;
    use alarm_triage::publish::fake::RecordingPublisher;
    use chrono::{Duration as ChronoDuration, Utc};
    use lambda_runtime::Context;
    use std::time::Duration;

    /// A flapping history: 9 OK -> ALARM cycles every 40 minutes up to now.
    fn flapping() -> StaticSources {
        let end = Utc::now();
        StaticSources {
            history: (1..=18)
                .map(|i| {
                    let (from, to) = if i % 2 == 1 {
                        (AlarmState::Ok, AlarmState::Alarm)
                    } else {
                        (AlarmState::Alarm, AlarmState::Ok)
                    };
                    StateChange {
                        at: end - ChronoDuration::minutes(20 * (19 - i)),
                        from,
                        to,
                    }
                })
                .collect(),
            ..StaticSources::default()
        }
    }

    fn config() -> Config {
        Config::from_lookup(|k| (k == "AWS_REGION").then(|| "eu-west-1".to_owned()))
            .expect("config")
    }

    fn state() -> State<StaticSources, RecordingPublisher> {
        State::new(config(), flapping(), RecordingPublisher::default())
    }

    fn invocation(payload: Value) -> LambdaEvent<Value> {
        let mut context = Context::default();
        let deadline = SystemTime::now() + Duration::from_secs(30);
        context.deadline = u64::try_from(
            deadline
                .duration_since(SystemTime::UNIX_EPOCH)
                .expect("after epoch")
                .as_millis(),
        )
        .expect("fits");
        LambdaEvent::new(payload, context)
    }

    fn event(name: &str) -> Value {
        let path = format!("{}/../../events/{name}.json", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).expect("event file")).expect("json")
    }

    #[tokio::test]
    async fn an_alarm_with_a_flapping_history_is_diagnosed_as_flapping() {
        let out = handle(
            &state(),
            invocation(event("sns-alb-alarm-target-response-time")),
        )
        .await
        .expect("handled");
        assert_eq!(out["records"][0]["outcome"], "diagnosed");
        assert_eq!(
            out["diagnoses"][0]["classification"]["behaviour"],
            "flapping"
        );
    }

    #[tokio::test]
    async fn a_batch_diagnoses_the_good_record_and_rejects_the_bad_one_without_failing() {
        let out = handle(&state(), invocation(event("sns-batch-alarm-and-foreign")))
            .await
            .expect("rejections do not fail the invocation");
        assert_eq!(out["records"][0]["outcome"], "diagnosed");
        assert_eq!(out["records"][1]["outcome"], "rejected");
        assert!(
            out["records"][1]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("invalid_json"))
        );
    }

    #[tokio::test]
    async fn a_diagnosis_that_cannot_be_published_fails_the_invocation_for_a_retry() {
        let failing = State::new(
            config(),
            flapping(),
            RecordingPublisher {
                fail: true,
                ..RecordingPublisher::default()
            },
        );
        let err = handle(
            &failing,
            invocation(event("sns-alb-alarm-target-response-time")),
        )
        .await
        .expect_err("a publish failure must fail the invocation");
        assert_eq!(err.error_type, "publish");
        assert!(
            err.error_message.contains("NotFound"),
            "{}",
            err.error_message
        );
    }

    #[tokio::test]
    async fn published_diagnoses_carry_filter_attributes_and_the_email_text() {
        let publisher = RecordingPublisher::default();
        let state = State::new(config(), flapping(), publisher.clone());
        handle(
            &state,
            invocation(event("sns-alb-alarm-target-response-time")),
        )
        .await
        .expect("handled");
        let sent = publisher.sent.lock().expect("lock");
        let outgoing = &sent[0];
        assert!(
            outgoing
                .attributes
                .contains(&("classification".to_owned(), "flapping".to_owned()))
        );
        assert!(
            outgoing
                .attributes
                .iter()
                .any(|(k, v)| k == "alarm_name" && v == "k8s-shopfront-alb-target-response-time")
        );
        assert!(outgoing.subject.starts_with("[flapping] ") && outgoing.subject.len() <= 100);
        let message: Value = serde_json::from_str(&outgoing.sns_message()).expect("json");
        assert!(
            message["email"]
                .as_str()
                .is_some_and(|t| t.starts_with("Flapping: "))
        );
        let diagnosis: Value =
            serde_json::from_str(message["default"].as_str().expect("default")).expect("json");
        assert_eq!(diagnosis["schema"], "alarm-triage/diagnosis/v1");
    }

    #[tokio::test]
    async fn a_subscription_confirmation_is_rejected_not_retried() {
        let out = handle(&state(), invocation(event("sns-subscription-confirmation")))
            .await
            .expect("a rejection is a successful invocation");
        assert_eq!(out["records"][0]["outcome"], "rejected");
    }
}
