//! One invocation: read the diagnoses out of the SNS event and post each to
//! the channels its routes name. Anything that is not delivered fails the
//! invocation, so Lambda retries it and then keeps it in the on-failure
//! destination; nothing is dropped silently.

use std::time::{Duration, SystemTime};

use alarm_triage::adapters::dynamodb::DynamoDbThreads;
use alarm_triage::adapters::secrets::SecretReader;
use alarm_triage::adapters::slack::SlackWebhook;
use alarm_triage::config::NotifyConfig;
use alarm_triage::invocation::remaining_time;
use alarm_triage::notify::credentials::{DEFAULT_WEBHOOK, SlackCredentials};
use alarm_triage::notify::delivery::{Attachment, Notifier, RetryPolicy};
use alarm_triage::notify::diagnoses_from_event;
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
    notifier: OnceCell<SlackNotifier>,
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
    async fn notifier(&self) -> Result<&SlackNotifier> {
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
                tracing::info!(
                    secret = %self.config.secret,
                    mode = if credentials.can_thread() { "chat.postMessage" } else { "incoming webhook" },
                    threads = threads.is_some(),
                    "Slack credentials loaded"
                );
                Ok(Notifier {
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
                })
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
    let notifier = state.notifier().await.map_err(|e| failure(&e))?;
    let received = diagnoses_from_event(event.payload).map_err(|e| failure(&e))?;
    let mut posted = Vec::new();
    let mut first_failure: Option<Diagnostic> = None;
    for record in received {
        let outcome = match record {
            Ok(r) => notifier
                .notify(&r.diagnosis, chrono::Utc::now(), deadline)
                .await
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
