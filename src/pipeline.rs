//! The pipeline the Lambda and `alarm-triage replay` share: intake, evidence
//! gathering, assembly. Each record of a batch is handled on its own, so one
//! bad record never hides the others.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::classify::ClassifierConfig;
use crate::diagnosis::{Diagnosis, ReportKind};
use crate::error::{Error, Result};
use tokio::time::Instant;

use crate::diagnosis::AlarmFacts;
use crate::evidence::{Budget, Collection, EvidenceSources};
use crate::gathering::gather;
use crate::intake::{self, Delivery, Response};
use crate::publish::hold::{HeldReport, released};
use crate::publish::{DiagnosisPublisher, prepare};
use crate::triage::assemble;

/// Which instant a run treats as "now".
#[derive(Debug, Clone, Copy)]
pub enum Now {
    /// A given instant (the Lambda passes the clock's reading).
    At(DateTime<Utc>),
    /// The transition's own time: replaying a capture reproduces what the bot
    /// would have said when it arrived.
    TransitionTime,
}

/// What became of one record.
#[derive(Debug)]
pub enum Outcome {
    /// A diagnosis or resolution report, and where it was published.
    Report {
        diagnosis: Box<Diagnosis>,
        published: Vec<String>,
    },
    /// Diagnosed, but publishing failed: the invocation must fail so Lambda retries.
    Failed {
        diagnosis_id: String,
        alarm_name: String,
        error: Error,
    },
    /// A transition that deserves nothing (OK <-> INSUFFICIENT_DATA).
    Ignored {
        alarm_name: String,
        transition: String,
    },
    /// Not something this bot handles; never retried.
    Rejected(Error),
}

/// A record's outcome as the Lambda reports it in its response.
#[derive(Debug, Serialize)]
pub struct OutcomeSummary {
    pub record: usize,
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnosis_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alarm_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Outcome {
    pub fn summary(&self, record: usize) -> OutcomeSummary {
        match self {
            Outcome::Report {
                diagnosis: d,
                published,
            } => OutcomeSummary {
                record,
                outcome: match d.kind {
                    ReportKind::Diagnosis => "diagnosed",
                    ReportKind::Resolution => "resolved",
                },
                diagnosis_id: Some(d.id.to_string()),
                alarm_name: Some(d.alarm.name.clone()),
                detail: Some(if published.is_empty() {
                    d.headline.clone()
                } else {
                    format!("{} [published: {}]", d.headline, published.join(", "))
                }),
            },
            Outcome::Failed {
                diagnosis_id,
                alarm_name,
                error,
            } => OutcomeSummary {
                record,
                outcome: "failed",
                diagnosis_id: Some(diagnosis_id.clone()),
                alarm_name: Some(alarm_name.clone()),
                detail: Some(format!("{}: {error}", error.kind())),
            },
            Outcome::Ignored {
                alarm_name,
                transition,
            } => OutcomeSummary {
                record,
                outcome: "ignored",
                diagnosis_id: None,
                alarm_name: Some(alarm_name.clone()),
                detail: Some(transition.clone()),
            },
            Outcome::Rejected(error) => OutcomeSummary {
                record,
                outcome: "rejected",
                diagnosis_id: None,
                alarm_name: None,
                detail: Some(format!("{}: {error}", error.kind())),
            },
        }
    }
}

/// Everything a run needs, built once (per cold start, or per CLI call).
#[derive(Debug)]
pub struct Triage<S, P> {
    pub collection: Collection<S>,
    pub publisher: P,
    pub budget: Budget,
    pub classifier: ClassifierConfig,
}

impl<S: EvidenceSources, P: DiagnosisPublisher> Triage<S, P> {
    /// Handles raw bytes (a captured event file).
    pub async fn handle_bytes(&self, bytes: &[u8], now: Now) -> Result<Vec<Outcome>> {
        let deliveries = intake::deliveries_from_bytes(bytes)?;
        Ok(self.handle_deliveries(deliveries, now, self.budget).await)
    }

    /// Handles a parsed event (the Lambda's input) within `budget` (derived from
    /// the invocation's deadline).
    pub async fn handle_value(
        &self,
        event: Value,
        now: Now,
        budget: Budget,
    ) -> Result<Vec<Outcome>> {
        let deliveries = intake::deliveries_from_value(event)?;
        Ok(self.handle_deliveries(deliveries, now, budget).await)
    }

    async fn handle_deliveries(
        &self,
        deliveries: Vec<alarm_triage_core::Result<Delivery>>,
        now: Now,
        budget: Budget,
    ) -> Vec<Outcome> {
        // The records of a batch share the invocation's time: each gets what is left.
        let gather_until = Instant::now() + budget.overall;
        let mut outcomes = Vec::with_capacity(deliveries.len());
        for delivery in deliveries {
            let left = Budget {
                overall: gather_until.saturating_duration_since(Instant::now()),
                ..budget
            };
            let outcome = match delivery {
                Ok(d) => self.handle_delivery(&d, now, left).await,
                Err(e) => Outcome::Rejected(e.into()),
            };
            outcomes.push(outcome);
        }
        outcomes
    }

    /// Handles one SNS delivery.
    pub async fn handle_delivery(&self, delivery: &Delivery, now: Now, budget: Budget) -> Outcome {
        let publish_until = Instant::now() + budget.overall + budget.publish;
        let alarm = match intake::alarm_from_delivery(delivery) {
            Ok(alarm) => alarm,
            Err(e) => {
                tracing::warn!(
                    message_id = %delivery.message_id,
                    error_kind = e.kind(),
                    error = %e,
                    "rejected SNS message"
                );
                return Outcome::Rejected(e.into());
            }
        };
        let kind = match intake::response_to(alarm.old_state_value, alarm.new_state_value) {
            Response::Diagnose => ReportKind::Diagnosis,
            Response::Resolve => ReportKind::Resolution,
            Response::Ignore => {
                let transition = format!("{} -> {}", alarm.old_state_value, alarm.new_state_value);
                tracing::info!(alarm_name = %alarm.alarm_name, %transition, "transition ignored");
                return Outcome::Ignored {
                    alarm_name: alarm.alarm_name,
                    transition,
                };
            }
        };
        let now = match now {
            Now::At(t) => t,
            Now::TransitionTime => alarm.state_change_time.0,
        };
        // The alarm's facts are parsed here, once; every later stage reads them.
        let facts = AlarmFacts::from_notification(&alarm);
        let elsewhere = self.scoped(&facts).await;
        let collection = elsewhere.as_ref().unwrap_or(&self.collection);
        let investigation = Box::pin(gather(collection, &facts, budget, now)).await;
        let diagnosis = assemble(&alarm, kind, &investigation, &self.classifier, now);
        tracing::info!(
            alarm_name = %diagnosis.alarm.name,
            diagnosis_id = %diagnosis.id,
            classification = diagnosis.classification.behaviour.as_str(),
            severity = diagnosis.severity.as_str(),
            gaps = diagnosis.evidence_gaps.len(),
            total_ms = diagnosis.timings.total_ms,
            headline = %diagnosis.headline,
            "alarm triaged"
        );
        self.publish(diagnosis, publish_until).await
    }

    /// Publishes a diagnosis (when there is anywhere to publish to) by `until`.
    async fn publish(&self, diagnosis: Diagnosis, until: Instant) -> Outcome {
        let published = if self.publisher.enabled() {
            match prepare(&diagnosis) {
                Ok(outgoing) => {
                    if outgoing.shortened {
                        tracing::warn!(diagnosis_id = %diagnosis.id, "diagnosis shortened to fit the message limit");
                    }
                    publish_within(&self.publisher, &outgoing, until).await
                }
                Err(e) => Err(e),
            }
        } else {
            Ok(Vec::new())
        };
        match published {
            Ok(published) => {
                if !published.is_empty() {
                    tracing::info!(diagnosis_id = %diagnosis.id, destinations = ?published, "diagnosis published");
                }
                Outcome::Report {
                    diagnosis: Box::new(diagnosis),
                    published,
                }
            }
            Err(error) => {
                tracing::error!(alarm_name = %diagnosis.alarm.name, diagnosis_id = %diagnosis.id, error = %error, "publishing failed");
                Outcome::Failed {
                    diagnosis_id: diagnosis.id.to_string(),
                    alarm_name: diagnosis.alarm.name.clone(),
                    error,
                }
            }
        }
    }
}

impl<S: EvidenceSources, P: DiagnosisPublisher> Triage<S, P> {
    /// A held diagnosis back from the hold queue: reads the alarm's state
    /// (in its own account) and publishes what the hold showed.
    pub async fn release(&self, held: HeldReport, now: DateTime<Utc>, budget: Budget) -> Outcome {
        let publish_until = Instant::now() + budget.overall + budget.publish;
        let alarm = held.diagnosis.alarm.clone();
        let elsewhere = self.scoped(&alarm).await;
        let state = match elsewhere.as_ref().unwrap_or(&self.collection) {
            Collection::Live(sources) => {
                match tokio::time::timeout(budget.per_source, sources.definition(&alarm.name)).await
                {
                    Ok(answer) => answer,
                    Err(_) => Err(crate::publish::failure(
                        "cloudwatch",
                        format!(
                            "DescribeAlarms gave no answer within {} ms",
                            budget.per_source.as_millis()
                        ),
                    )),
                }
            }
            Collection::Unreachable(reason) => {
                Err(crate::publish::failure("cloudwatch", reason.clone()))
            }
            _ => Err(crate::publish::failure(
                "cloudwatch",
                "this run reads no live sources".to_owned(),
            )),
        };
        let diagnosis = released(held, state, now);
        tracing::info!(
            alarm_name = %diagnosis.alarm.name,
            diagnosis_id = %diagnosis.id,
            hold = ?diagnosis.hold,
            "held diagnosis released"
        );
        self.publish(diagnosis, publish_until).await
    }
}

impl<S: EvidenceSources, P> Triage<S, P> {
    /// The collection for the alarm's own account and region (from its ARN),
    /// when it is not the one this run reads by default.
    async fn scoped(&self, alarm: &AlarmFacts) -> Option<Collection<S>> {
        let Collection::Live(sources) = &self.collection else {
            return None;
        };
        let arn = alarm.arn.as_ref()?;
        let account = arn.account.as_str();
        match sources
            .scoped_to(&arn.partition, account, &arn.region)
            .await
        {
            Ok(None) => None,
            Ok(Some(sources)) => Some(Collection::Live(sources)),
            Err(reason) => {
                tracing::warn!(alarm_name = %alarm.name, account, %reason, "alarm's account unreadable");
                Some(Collection::Unreachable(reason))
            }
        }
    }
}

/// Publishes, giving up at `until` (the invocation's deadline less nothing):
/// a destination that hangs fails the invocation in time for Lambda to retry
/// it, instead of the runtime killing it with nothing said.
async fn publish_within<P: DiagnosisPublisher>(
    publisher: &P,
    outgoing: &crate::publish::Outgoing,
    until: Instant,
) -> Result<Vec<String>> {
    let started = Instant::now();
    match tokio::time::timeout_at(until, publisher.publish(outgoing)).await {
        Ok(result) => result,
        Err(_) => Err(Error::Publish {
            destination: "the diagnosis topic and queue",
            reason: format!(
                "no answer within {} ms (the time kept for publishing before the invocation's deadline)",
                until.saturating_duration_since(started).as_millis()
            ),
        }),
    }
}
