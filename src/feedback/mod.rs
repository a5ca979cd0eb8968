//! Feedback on diagnoses: the core's verdicts and counting
//! (`alarm_triage_core::feedback`), plus the ports the feedback endpoint and
//! notify-slack talk through ([`FeedbackStore`], [`SlackInteractions`]) and
//! the endpoint's logic ([`endpoint`]).

pub mod endpoint;

use std::future::Future;
use std::time::Duration;

pub use alarm_triage_core::feedback::*;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::Result;

/// Port: where diagnoses posted with buttons and the answers to them are kept.
pub trait FeedbackStore: Send + Sync {
    /// Records a diagnosis before its buttons are posted (idempotent).
    fn record(&self, record: &DiagnosisRecord) -> impl Future<Output = Result<()>> + Send;

    /// The recorded diagnosis, if this id was ever posted with buttons.
    fn diagnosis(&self, id: &str) -> impl Future<Output = Result<Option<DiagnosisRecord>>> + Send;

    /// Marks a signed request as seen; `false` when it was seen before (a replay).
    fn first_sight(
        &self,
        request_key: &str,
        forget_after: DateTime<Utc>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Stores a person's answer, replacing their earlier one on the same diagnosis.
    fn answer(&self, answer: &Answer) -> impl Future<Output = Result<()>> + Send;

    /// Everyone's last answer on one diagnosis.
    fn answers_to(&self, diagnosis_id: &str) -> impl Future<Output = Result<Vec<Answer>>> + Send;

    /// The latest answers on diagnoses about `service` (at most `limit`), for a track record.
    fn answers_about(
        &self,
        service: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Answer>>> + Send;

    /// Every record and answer since `since` (for `alarm-triage accuracy`).
    fn everything_since(
        &self,
        since: DateTime<Utc>,
    ) -> impl Future<Output = Result<(Vec<DiagnosisRecord>, Vec<Answer>)>> + Send;
}

/// Port: the two Slack calls the endpoint makes after an answer.
pub trait SlackInteractions: Send + Sync {
    /// `chat.update`: the message with the tally line.
    fn update_message(
        &self,
        channel_id: &str,
        ts: &str,
        text: &str,
        blocks: &[Value],
        timeout: Duration,
    ) -> impl Future<Output = std::result::Result<(), String>> + Send;

    /// `views.open`: the "what was it" form.
    fn open_form(
        &self,
        trigger_id: &str,
        view: &Value,
        timeout: Duration,
    ) -> impl Future<Output = std::result::Result<(), String>> + Send;
}
