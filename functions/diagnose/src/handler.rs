//! One invocation: every record is triaged on its own. Records that are not
//! CloudWatch alarms are rejected in the response and logged, never retried
//! (they would fail the same way again); only internal failures fail the
//! invocation, so that Lambda's retries and on-failure destination keep the event.

use std::time::{Duration, SystemTime};

use alarm_triage::config::Config;
use alarm_triage::evidence::{AlarmHistorySource, Collection};
use alarm_triage::pipeline::{Now, Outcome, Triage};
use lambda_runtime::{Diagnostic, LambdaEvent};
use serde_json::{Value, json};

/// Built once per cold start.
#[derive(Debug)]
pub struct State<H> {
    config: Config,
    triage: Triage<H>,
}

impl<H: AlarmHistorySource> State<H> {
    pub fn new(config: Config, history: H) -> Self {
        let triage = Triage {
            collection: Collection::Live { history },
            budget: config.budget,
            classifier: config.classifier.clone(),
        };
        State { config, triage }
    }
}

/// Handles one invocation.
pub async fn handle<H: AlarmHistorySource>(
    state: &State<H>,
    event: LambdaEvent<Value>,
) -> Result<Value, Diagnostic> {
    let remaining = event
        .context
        .deadline()
        .duration_since(SystemTime::now())
        .unwrap_or(Duration::ZERO);
    let budget = state.config.budget_for(remaining);
    let now = Now::At(chrono::Utc::now());
    let outcomes = match state.triage.handle_value(event.payload, now, budget).await {
        Ok(outcomes) => outcomes,
        Err(e) if e.is_rejection() => {
            tracing::warn!(request_id = %event.context.request_id, error_kind = e.kind(), error = %e, "event rejected");
            return Ok(
                json!({ "records": [{ "record": 0, "outcome": "rejected", "detail": format!("{}: {e}", e.kind()) }] }),
            );
        }
        Err(e) => {
            return Err(Diagnostic {
                error_type: e.kind().to_owned(),
                error_message: e.to_string(),
            });
        }
    };
    let mut records = Vec::with_capacity(outcomes.len());
    let mut reports = Vec::new();
    for (index, outcome) in outcomes.iter().enumerate() {
        if let Outcome::Rejected(e) = outcome {
            if !e.is_rejection() {
                return Err(Diagnostic {
                    error_type: e.kind().to_owned(),
                    error_message: e.to_string(),
                });
            }
        }
        if let Outcome::Report(d) = outcome {
            reports.push(serde_json::to_value(d.as_ref()).map_err(|e| Diagnostic {
                error_type: "serialise".to_owned(),
                error_message: e.to_string(),
            })?);
        }
        records.push(outcome.summary(index));
    }
    Ok(json!({ "records": records, "diagnoses": reports }))
}
