//! One invocation: read the diagnoses out of the SNS event and post each to
//! the channels its routes name. Anything that is not delivered fails the
//! invocation, so Lambda retries it and then keeps it in the on-failure
//! destination; nothing is dropped silently.

use std::time::{Duration, SystemTime};

use alarm_triage::adapters::dynamodb::DynamoDbThreads;
use alarm_triage::adapters::dynamodb::feedback::DynamoDbFeedback;
use alarm_triage::adapters::secrets::SecretReader;
use alarm_triage::adapters::slack::SlackWebhook;
use alarm_triage::config::NotifyConfig;
use alarm_triage::diagnosis::Diagnosis;
use alarm_triage::diagnosis::ReportKind;
use alarm_triage::feedback::accuracy::track_record;
use alarm_triage::feedback::{DiagnosisRecord, FeedbackStore, asks_for_feedback};
use alarm_triage::invocation::remaining_time;
use alarm_triage::notify::credentials::{DEFAULT_WEBHOOK, SlackCredentials};
use alarm_triage::notify::delivery::Posted;
use alarm_triage::notify::delivery::{Attachment, Notifier, RetryPolicy};
use alarm_triage::notify::diagnoses_from_event;
use alarm_triage::notify::message::FirstMessageAdditions;
use alarm_triage::notify::seen::{self, SeenRecord, SeenStore};
use alarm_triage::{Error, Result};
use aws_config::SdkConfig;
use lambda_runtime::{Diagnostic, LambdaEvent};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

type SlackNotifier = Notifier<SlackWebhook, Option<DynamoDbThreads>>;

/// Built once per cold start; the secret is read on the first invocation and kept.
#[derive(Debug)]
pub struct State {
    config: NotifyConfig,
    secrets: SecretReader,
    aws: SdkConfig,
    notifier: OnceCell<(SlackNotifier, Option<DynamoDbFeedback>)>,
}

impl State {
    pub fn new(config: NotifyConfig, secrets: SecretReader, aws: SdkConfig) -> Self {
        State {
            config,
            secrets,
            aws,
            notifier: OnceCell::new(),
        }
    }

    /// Reads the secret (once: a failure is retried by the next invocation) and builds the notifier.
    async fn notifier(&self) -> Result<&(SlackNotifier, Option<DynamoDbFeedback>)> {
        self.notifier
            .get_or_try_init(|| async {
                let value = self.secrets.read(&self.config.secret).await?;
                let credentials = SlackCredentials::parse(&value, &self.config.secret.to_string())?;
                credentials.check_channels(self.config.routes.channels())?;
                if credentials.can_thread() && self.config.routes.channels().any(|c| c == DEFAULT_WEBHOOK) {
                    return Err(Error::Config {
                        variable: "SLACK_CHANNEL",
                        problem: "is not set; a bot token needs a channel: set SLACK_CHANNEL or give every route in SLACK_ROUTES a channel".to_owned(),
                    });
                }
                let threads = match (&self.config.thread_table, credentials.can_thread()) {
                    (Some(table), true) => Some(DynamoDbThreads::new(&self.aws, table.clone())),
                    (Some(table), false) => {
                        tracing::warn!(table = %table, "SLACK_THREAD_TABLE is set but the secret holds webhooks, which cannot thread; it is not used");
                        None
                    }
                    (None, _) => None,
                };
                let feedback = match (&self.config.feedback_table, credentials.can_thread()) {
                    (Some(table), true) => Some(DynamoDbFeedback::new(&self.aws, table.clone())),
                    (Some(table), false) => {
                        tracing::warn!(table = %table, "FEEDBACK_TABLE is set but the secret holds webhooks, which cannot carry buttons; it is not used");
                        None
                    }
                    (None, _) => None,
                };
                tracing::info!(
                    secret = %self.config.secret,
                    mode = if credentials.can_thread() { "chat.postMessage" } else { "incoming webhook" },
                    threads = threads.is_some(),
                    feedback = feedback.is_some(),
                    "Slack credentials loaded"
                );
                let notifier = Notifier {
                    poster: SlackWebhook::new(credentials, self.config.api_url.clone())?,
                    threads,
                    routes: self.config.routes.clone(),
                    thread_lifetime: self.config.thread_lifetime,
                    retry: RetryPolicy {
                        request_timeout: self.config.request_timeout,
                        ..RetryPolicy::default()
                    },
                    attachments: if self.config.charts {
                        charts_for_slack
                    } else {
                        alarm_triage::notify::delivery::no_attachments
                    },
                    incident_window: self.config.incident_window,
                    hold_seconds: self.config.hold_transient_seconds,
                };
                Ok((notifier, feedback))
            })
            .await
    }
}

/// Handles one invocation.
pub async fn handle(state: &State, event: LambdaEvent<Value>) -> Result<Value, Diagnostic> {
    let remaining = remaining_time(event.context.deadline, SystemTime::now());
    let deadline = tokio::time::Instant::now()
        + remaining
            .saturating_sub(state.config.deadline_margin)
            .max(Duration::from_millis(500));
    let (notifier, feedback) = state.notifier().await.map_err(|e| failure(&e))?;
    let received = diagnoses_from_event(event.payload).map_err(|e| failure(&e))?;
    let mut posted = Vec::new();
    let mut first_failure: Option<Diagnostic> = None;
    for record in received {
        let outcome = match record {
            Ok(r) => {
                let now = chrono::Utc::now();
                let d = &r.diagnosis;
                let seen = notifier.threads.as_ref();
                let (buttons, seen_before) = tokio::join!(
                    async {
                        match feedback {
                            Some(store) => ask_for_feedback(store, d, now).await,
                            None => None,
                        }
                    },
                    async {
                        match seen {
                            Some(store) => seen_before(store, d, now).await,
                            None => None,
                        }
                    }
                );
                let additions = FirstMessageAdditions {
                    seen_before,
                    ..buttons.unwrap_or_default()
                };
                let outcome = notifier
                    .notify_with(d, Some(&additions), now, deadline)
                    .await;
                if let (Some(store), Ok(deliveries)) = (seen, &outcome) {
                    remember_seen(store, d, deliveries, now).await;
                }
                outcome
            }
            .map(|p| (r.diagnosis.id.to_string(), p))
            .map_err(|e| {
                let mut d = failure(&e);
                d.error_message = format!("diagnosis {}: {}", r.diagnosis.id, d.error_message);
                d
            }),
            Err(e) => Err(failure(&e)),
        };
        match outcome {
            Ok((id, deliveries)) => posted.extend(deliveries.into_iter().map(|p| {
                json!({
                    "diagnosis_id": id,
                    "channel": p.channel,
                    "attempts": p.attempts,
                    "as_text": p.as_text,
                    "already_posted": p.already_posted,
                    "thread_ts": p.thread_ts,
                })
            })),
            Err(d) => {
                first_failure.get_or_insert(d);
            }
        }
    }
    match first_failure {
        Some(d) => Err(d),
        None => Ok(json!({ "posted": posted })),
    }
}

/// Records the diagnosis so its buttons can be answered, and reads the
/// culprit service's track record, together. Without the record there are
/// no buttons (logged): the report itself still goes out.
async fn ask_for_feedback(
    store: &DynamoDbFeedback,
    d: &Diagnosis,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<FirstMessageAdditions> {
    if !asks_for_feedback(d) {
        return None;
    }
    let record = DiagnosisRecord::of(d, now);
    let causes: Vec<_> = record.causes().cloned().collect();
    let history = async {
        match &record.service {
            Some(service) if !causes.is_empty() => {
                store.answers_about(service, TRACK_RECORD_ANSWERS).await
            }
            _ => Ok(Vec::new()),
        }
    };
    let (recorded, history) = tokio::join!(store.record(&record), history);
    if let Err(e) = recorded {
        tracing::warn!(diagnosis_id = %d.id, error = %e, "could not record the diagnosis; posting it without feedback buttons");
        return None;
    }
    let track_record = match (history, &record.service) {
        (Ok(answers), Some(service)) => track_record(&answers, service, &causes),
        (Err(e), _) => {
            tracing::warn!(diagnosis_id = %d.id, error = %e, "could not read the track record");
            Vec::new()
        }
        _ => Vec::new(),
    };
    Some(FirstMessageAdditions {
        buttons: true,
        track_record,
        seen_before: None,
    })
}

/// The "seen before" line: this alarm's and its culprit's records, read together.
async fn seen_before(
    store: &DynamoDbThreads,
    d: &Diagnosis,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<String> {
    if d.kind != ReportKind::Diagnosis {
        return None;
    }
    let culprit = d.culprit();
    let (alarm_key, culprit_key) = (seen::alarm_key(d), seen::culprit_key(&culprit));
    let (alarm, about) = tokio::join!(store.history(&alarm_key), store.history(&culprit_key));
    match (alarm, about) {
        (Ok(alarm), Ok(about)) => Some(seen::seen_line(d, &alarm, &about, &culprit, now)),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!(diagnosis_id = %d.id, error = %e, "could not read the seen-before records");
            None
        }
    }
}

/// Leaves this diagnosis's record, with a link to where it was posted.
async fn remember_seen(
    store: &DynamoDbThreads,
    d: &Diagnosis,
    deliveries: &[Posted],
    now: chrono::DateTime<chrono::Utc>,
) {
    if d.kind != ReportKind::Diagnosis {
        return;
    }
    let mut record = SeenRecord::of(d, now);
    if let Some(p) = deliveries.iter().find(|p| p.ts.is_some()) {
        record.channel_id = p.channel_id.clone();
        record.ts = p.thread_ts.clone().or_else(|| p.ts.clone());
    }
    let (alarm_key, culprit_key) = (seen::alarm_key(d), seen::culprit_key(&d.culprit()));
    let (a, b) = tokio::join!(
        store.append(&alarm_key, &record, now),
        store.append(&culprit_key, &record, now)
    );
    if let Err(e) = a.and(b) {
        tracing::warn!(diagnosis_id = %d.id, error = %e, "could not leave the seen-before record");
    }
}

/// The answers a track record is counted over: the service's latest.
const TRACK_RECORD_ANSWERS: usize = 200;

/// Every failure fails the invocation: Lambda retries it, then keeps it on failure.
fn failure(e: &Error) -> Diagnostic {
    tracing::error!(error_kind = e.kind(), error = %e, "invocation failed");
    Diagnostic {
        error_type: e.kind().to_owned(),
        error_message: e.to_string(),
    }
}

/// Built without the `charts` feature: nothing to attach.
#[cfg(not(feature = "charts"))]
fn charts_for_slack(d: &alarm_triage::diagnosis::Diagnosis) -> Vec<Attachment> {
    alarm_triage::notify::delivery::no_attachments(d)
}

/// The charts of a diagnosis, as files for its Slack thread. A chart that
/// cannot be drawn is left out (logged): the report itself has landed.
#[cfg(feature = "charts")]
fn charts_for_slack(d: &alarm_triage::diagnosis::Diagnosis) -> Vec<Attachment> {
    match alarm_triage::charts::charts(d) {
        Ok(charts) => charts
            .into_iter()
            .map(|c| Attachment {
                file_name: c.file_name,
                title: c.title,
                bytes: c.png,
            })
            .collect(),
        Err(e) => {
            tracing::warn!(diagnosis_id = %d.id, error = %e, "could not draw the charts");
            Vec::new()
        }
    }
}
