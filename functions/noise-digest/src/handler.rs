//! One scheduled run: survey, rank, post. A run that cannot read the alarms
//! or post fails the invocation, so the scheduler's retry policy (and its
//! dead-letter queue, when configured) keeps it.

use std::time::{Duration, SystemTime};

use alarm_triage::Result;
use alarm_triage::adapters::cloudwatch::CloudWatchSource;
use alarm_triage::adapters::dynamodb::DynamoDbThreads;
use alarm_triage::adapters::secrets::SecretReader;
use alarm_triage::adapters::slack::SlackWebhook;
use alarm_triage::config::DigestConfig;
use alarm_triage::digest;
use alarm_triage::invocation::remaining_time;
use alarm_triage::noise_survey::survey;
use alarm_triage::notify::credentials::SlackCredentials;
use alarm_triage::notify::delivery::{RetryPolicy, SlackPoster, post_with_retries};
use alarm_triage::notify::message::standalone;
use lambda_runtime::{Diagnostic, LambdaEvent};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

/// Built once per cold start; the secret is read on the first run and kept.
#[derive(Debug)]
pub struct State {
    pub config: DigestConfig,
    pub cloudwatch: CloudWatchSource,
    pub threads: Option<DynamoDbThreads>,
    pub secrets: SecretReader,
    pub poster: OnceCell<SlackWebhook>,
}

impl State {
    async fn poster(&self) -> Result<&SlackWebhook> {
        self.poster
            .get_or_try_init(|| async {
                let value = self.secrets.read(&self.config.secret).await?;
                let credentials = SlackCredentials::parse(&value, &self.config.secret.to_string())?;
                credentials.check_channels(std::iter::once(self.config.channel.as_str()))?;
                SlackWebhook::new(credentials, self.config.api_url.clone())
            })
            .await
    }
}

/// Handles one scheduled run (the event itself carries nothing we need).
pub async fn handle(state: &State, event: LambdaEvent<Value>) -> Result<Value, Diagnostic> {
    let remaining = remaining_time(event.context.deadline, SystemTime::now());
    let deadline = tokio::time::Instant::now()
        + remaining
            .saturating_sub(Duration::from_secs(1))
            .max(Duration::from_millis(500));
    run(state, deadline).await.map_err(|e| {
        tracing::error!(error_kind = e.kind(), error = %e, "digest failed");
        Diagnostic {
            error_type: e.kind().to_owned(),
            error_message: e.to_string(),
        }
    })
}

async fn run(state: &State, deadline: tokio::time::Instant) -> Result<Value> {
    let poster = state.poster().await?;
    let now = chrono::Utc::now();
    let from = now - chrono::Duration::days(state.config.days);
    let alarms = survey(
        &state.cloudwatch,
        state.threads.as_ref(),
        state.config.prefix.as_deref(),
        from,
        now,
    )
    .await?;
    let entries = digest::digest(&alarms, from, now);
    let message = standalone(
        &state.config.channel,
        digest::slack_message(&entries, alarms.len(), from, now),
        &digest::render(&entries, alarms.len(), from, now),
        poster.web_api(),
    );
    let policy = RetryPolicy {
        request_timeout: state.config.request_timeout,
        ..RetryPolicy::default()
    };
    let posted = post_with_retries(poster, &message, deadline, &policy).await?;
    tracing::info!(
        channel = %state.config.channel,
        alarms = alarms.len(),
        entries = entries.len(),
        attempts = posted.attempts,
        "digest posted"
    );
    Ok(json!({
        "alarms": alarms.len(),
        "entries": entries.len(),
        "channel": state.config.channel,
        "ts": posted.ts,
    }))
}
