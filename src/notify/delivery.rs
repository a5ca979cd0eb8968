//! Delivering a diagnosis to Slack: route it, thread it, post it, and retry
//! what Slack asks us to retry, within the invocation's deadline.
//!
//! Retrying is decided by [`next_step`], a pure function of the answer, the
//! attempt and the time left; the loop around it only posts and sleeps.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::time::Instant;

use super::answer::{Answer, advice};
use super::incident::{
    Incident, IncidentKey, Opening, as_resolved, mark_also_firing, with_alarm_count,
};
use super::message::{FirstMessageAdditions, Placement, SlackMessage, compose, in_thread, quiet};
use super::route::{Route, Routes};
use super::thread::{Thread, ThreadKey, ThreadStore};
use crate::diagnosis::hold::ends_a_possibly_held_alarm;
use crate::diagnosis::{Diagnosis, ReportKind};
use crate::error::{Error, Result};

/// Port: something that posts a JSON body to Slack for a channel.
pub trait SlackPoster: Send + Sync {
    /// `chat.postMessage` (true) or incoming webhooks (false).
    fn web_api(&self) -> bool;

    /// Posts once. Transport failures and timeouts come back as [`Answer::Unavailable`].
    fn post(
        &self,
        channel: &str,
        body: &Value,
        timeout: Duration,
    ) -> impl Future<Output = Answer> + Send;

    /// Shares a file as a reply in a thread (Web API only). The error says
    /// which step failed and why, never a secret.
    fn upload(
        &self,
        attachment: &Attachment,
        channel_id: &str,
        thread_ts: &str,
        timeout: Duration,
    ) -> impl Future<Output = std::result::Result<(), String>> + Send {
        let _ = (attachment, channel_id, thread_ts, timeout);
        async { Err("this poster cannot upload files".to_owned()) }
    }

    /// Replaces a posted message (`chat.update`, Web API only): `message`
    /// holds its `text` and `blocks`.
    fn update(
        &self,
        channel_id: &str,
        ts: &str,
        message: &Value,
        timeout: Duration,
    ) -> impl Future<Output = std::result::Result<(), String>> + Send {
        let _ = (channel_id, ts, message, timeout);
        async { Err("this poster cannot update messages".to_owned()) }
    }
}

/// A file shared under the first message (a chart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub file_name: String,
    /// The file's title in Slack, also its alt text.
    pub title: String,
    pub bytes: Vec<u8>,
}

/// What to attach to a diagnosis's thread: charts in notify-slack, nothing by default.
pub type Attachments = fn(&Diagnosis) -> Vec<Attachment>;

/// Attaches nothing.
pub fn no_attachments(_: &Diagnosis) -> Vec<Attachment> {
    Vec::new()
}

/// How hard to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Backoff after the first 5xx; doubled each time up to `max_backoff`.
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// Attempts per message, fallback included.
    pub max_attempts: u32,
    /// Timeout of one request.
    pub request_timeout: Duration,
    /// No retry starts unless this much time would be left for its request.
    pub room_for_a_request: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            first_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(4),
            max_attempts: 6,
            request_timeout: Duration::from_secs(5),
            room_for_a_request: Duration::from_secs(1),
        }
    }
}

/// What to do after an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Done {
        channel_id: Option<String>,
        ts: Option<String>,
    },
    RetryAfter(Duration),
    FallBackToText,
    Fail(Box<FailedDelivery>),
}

/// Why a message could not be delivered (boxed: it is the rare path).
#[derive(Debug, Clone, PartialEq)]
pub struct FailedDelivery {
    pub permanent: bool,
    pub status: u16,
    pub error: String,
}

/// Decides the next step after `attempt` (1-based) got `answer`, with `left` before the deadline.
pub fn next_step(
    answer: &Answer,
    attempt: u32,
    sent_as_text: bool,
    left: Duration,
    policy: &RetryPolicy,
) -> Step {
    let retry = |wait: Duration, why: String| {
        if attempt < policy.max_attempts && wait + policy.room_for_a_request <= left {
            Step::RetryAfter(wait)
        } else {
            Step::Fail(Box::new(FailedDelivery {
                permanent: false,
                status: 0,
                error: why,
            }))
        }
    };
    match answer {
        Answer::Posted { channel_id, ts } => Step::Done {
            channel_id: channel_id.clone(),
            ts: ts.clone(),
        },
        Answer::RateLimited { retry_after } => retry(
            *retry_after,
            format!(
                "rate limited (429, Retry-After {} s) with {} ms left",
                retry_after.as_secs(),
                left.as_millis()
            ),
        ),
        Answer::Unavailable { reason } => {
            let doubling = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
            let wait = policy
                .first_backoff
                .saturating_mul(doubling)
                .min(policy.max_backoff);
            retry(wait, reason.clone())
        }
        Answer::BlocksRejected { .. } if !sent_as_text && attempt < policy.max_attempts => {
            Step::FallBackToText
        }
        Answer::BlocksRejected { status, error } | Answer::Rejected { status, error } => {
            Step::Fail(Box::new(FailedDelivery {
                permanent: true,
                status: *status,
                error: error.clone(),
            }))
        }
    }
}

/// A message Slack took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub channel: String,
    pub channel_id: Option<String>,
    pub ts: Option<String>,
    /// The thread it was posted in, when it is a reply.
    pub thread_ts: Option<String>,
    pub attempts: u32,
    /// Whether Slack refused the blocks and the plain-text report went instead.
    pub as_text: bool,
    /// Posted by an earlier attempt at this event (a Lambda retry, a repeated
    /// SNS delivery): not posted again.
    pub already_posted: bool,
}

/// Posts one message, retrying within `deadline`.
pub async fn post_with_retries<P: SlackPoster>(
    poster: &P,
    message: &SlackMessage,
    deadline: Instant,
    policy: &RetryPolicy,
) -> Result<Posted> {
    let destination = if poster.web_api() {
        format!("channel {}", message.channel)
    } else {
        format!("the webhook for {}", message.channel)
    };
    let mut as_text = false;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let body = if as_text {
            &message.fallback
        } else {
            &message.payload
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = policy
            .request_timeout
            .min(left)
            .max(Duration::from_millis(500));
        let answer = poster.post(&message.channel, body, timeout).await;
        let left = deadline.saturating_duration_since(Instant::now());
        match next_step(&answer, attempt, as_text, left, policy) {
            Step::Done { channel_id, ts } => {
                return Ok(Posted {
                    channel: message.channel.clone(),
                    channel_id,
                    ts,
                    thread_ts: body["thread_ts"].as_str().map(str::to_owned),
                    attempts: attempt,
                    as_text,
                    already_posted: false,
                });
            }
            Step::RetryAfter(wait) => {
                tracing::warn!(
                    channel = %message.channel,
                    attempt,
                    wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    answer = ?answer,
                    "Slack did not take the message; retrying"
                );
                tokio::time::sleep(wait).await;
            }
            Step::FallBackToText => {
                tracing::warn!(channel = %message.channel, answer = ?answer, "Slack refused the blocks; sending the plain-text report");
                as_text = true;
            }
            Step::Fail(failed) if failed.permanent => {
                return Err(Error::SlackRejected {
                    destination,
                    status: failed.status,
                    advice: advice(&failed.error),
                    error: failed.error,
                });
            }
            Step::Fail(failed) => {
                return Err(Error::SlackUnavailable {
                    destination,
                    attempts: attempt,
                    last: failed.error,
                });
            }
        }
    }
}

/// Routes, threads and posts diagnoses. Built once per cold start.
#[derive(Debug)]
pub struct Notifier<P, T> {
    pub poster: P,
    pub threads: T,
    pub routes: Routes,
    /// How long later messages about an alarm go under its first one.
    pub thread_lifetime: chrono::Duration,
    pub retry: RetryPolicy,
    /// Files to share in the thread after the details (Web API only).
    pub attachments: Attachments,
    /// `INCIDENT_WINDOW_MINUTES`: alarms about one culprit within this window
    /// share one thread (bot token and thread table only); `None` is off.
    pub incident_window: Option<chrono::Duration>,
    /// `HOLD_TRANSIENT_SECONDS`: a resolution of an alarm shorter than this
    /// only goes where a thread about the alarm is open (its firing may have
    /// been held and said in one quiet line).
    pub hold_seconds: u32,
}

/// How a diagnosis takes part in its culprit's incident.
#[derive(Debug, Clone)]
struct IncidentPlan {
    key: IncidentKey,
    /// The incident another diagnosis opened (with its first message); `None`: this one opens it.
    joined: Option<Incident>,
}

/// How long a diagnosis that joins an incident waits for its first message to land.
const FIRST_MESSAGE_WAIT: Duration = Duration::from_secs(5);

impl<P: SlackPoster, T: ThreadStore> Notifier<P, T> {
    /// Opens or joins the culprit's incident for a diagnosis without an open
    /// thread of its own. `None`: incidents are off, or the store failed
    /// (logged; the message then goes to the top level as before).
    async fn incident_for(
        &self,
        d: &Diagnosis,
        route: &Route,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Option<IncidentPlan> {
        let window = self.incident_window?;
        if !self.poster.web_api() || !self.threads.enabled() || !self.threads.incidents_enabled() {
            return None;
        }
        let key = IncidentKey::new(&d.culprit(), &route.channel);
        if d.kind == ReportKind::Resolution {
            // A resolution whose alarm has no thread here (its report went
            // elsewhere, or arrives after it): into the culprit's incident, if one is open.
            return match self.threads.find_incident(&key).await {
                Ok(Some(incident)) if incident.ts.is_some() => Some(IncidentPlan {
                    key,
                    joined: Some(incident),
                }),
                _ => None,
            };
        }
        let opening = self
            .threads
            .open_or_join(&key, &d.alarm.name, d.id.as_str(), now, window)
            .await;
        let mut incident = match opening {
            Ok(Opening::Opened) => return Some(IncidentPlan { key, joined: None }),
            // An earlier attempt at this very diagnosis opened it.
            Ok(Opening::Joined(i)) if i.opened_by == d.id.as_str() => {
                return Some(IncidentPlan { key, joined: None });
            }
            Ok(Opening::Joined(i)) => i,
            Err(e) => {
                tracing::warn!(diagnosis_id = %d.id, error = %e, "could not open or join the incident; posting at the top level");
                return None;
            }
        };
        // The opener may still be posting its first message: wait for it, bounded.
        let give_up = (Instant::now() + FIRST_MESSAGE_WAIT).min(
            deadline
                .checked_sub(self.retry.room_for_a_request)
                .unwrap_or(deadline),
        );
        while incident.ts.is_none() && Instant::now() < give_up {
            tokio::time::sleep(Duration::from_millis(200)).await;
            match self.threads.find_incident(&key).await {
                Ok(Some(found)) => incident = found,
                _ => break,
            }
        }
        if incident.ts.is_none() {
            tracing::warn!(diagnosis_id = %d.id, channel = %route.channel, "the incident's first message did not land in time; posting at the top level");
            return None;
        }
        Some(IncidentPlan {
            key,
            joined: Some(incident),
        })
    }

    /// After posting: an opener records where its first message is; a joiner
    /// updates the first message's header to count the alarms.
    async fn incident_posted(
        &self,
        d: &Diagnosis,
        plan: &IncidentPlan,
        message: &SlackMessage,
        channel_id: &str,
        ts: &str,
        deadline: Instant,
    ) {
        let Some(joined) = &plan.joined else {
            let first = serde_json::json!({"text": message.payload["text"], "blocks": message.payload["blocks"]});
            if let Err(e) = self.threads.posted(&plan.key, channel_id, ts, &first).await {
                tracing::warn!(diagnosis_id = %d.id, error = %e, "could not record the incident's first message");
            }
            return;
        };
        let now = match self.threads.find_incident(&plan.key).await {
            Ok(Some(now)) => now,
            _ => joined.clone(),
        };
        self.update_first_message(d, &now, |first| with_alarm_count(first, &now), deadline)
            .await;
    }

    /// A resolution in an incident: marks its alarm OK; once every alarm is
    /// OK the first message says the incident resolved, else it counts again.
    async fn incident_resolved(
        &self,
        d: &Diagnosis,
        key: &str,
        now: DateTime<Utc>,
        deadline: Instant,
    ) {
        let Some(key) = IncidentKey::parse(key) else {
            return;
        };
        let incident = match self.threads.resolved(&key, &d.alarm.name).await {
            Ok(Some(incident)) => incident,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(diagnosis_id = %d.id, error = %e, "could not mark the alarm resolved in its incident");
                return;
            }
        };
        if incident.all_ok() {
            self.update_first_message(
                d,
                &incident,
                |first| as_resolved(first, &incident, now, &d.headline),
                deadline,
            )
            .await;
        } else {
            self.update_first_message(
                d,
                &incident,
                |first| with_alarm_count(first, &incident),
                deadline,
            )
            .await;
        }
    }

    async fn update_first_message(
        &self,
        d: &Diagnosis,
        incident: &Incident,
        edit: impl FnOnce(&Value) -> Value,
        deadline: Instant,
    ) {
        let (Some(channel_id), Some(ts), Some(first)) =
            (&incident.channel_id, &incident.ts, &incident.first_message)
        else {
            return;
        };
        let timeout = self
            .retry
            .request_timeout
            .min(deadline.saturating_duration_since(Instant::now()));
        if let Err(e) = self
            .poster
            .update(channel_id, ts, &edit(first), timeout)
            .await
        {
            tracing::warn!(diagnosis_id = %d.id, error = %e, "could not update the incident's first message");
        }
    }

    /// Posts `d` to every route it takes, concurrently. Every route is tried;
    /// the first failure (in route order) is returned after all were attempted.
    pub async fn notify(
        &self,
        d: &Diagnosis,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Result<Vec<Posted>> {
        self.notify_with(d, None, now, deadline).await
    }

    /// [`Self::notify`], with the verdict buttons (and track record) on the first message.
    pub async fn notify_with(
        &self,
        d: &Diagnosis,
        additions: Option<&FirstMessageAdditions>,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Result<Vec<Posted>> {
        let mut routes: Vec<Route> = self.routes.select(d).into_iter().cloned().collect();
        if ends_a_possibly_held_alarm(d, self.hold_seconds) {
            routes = self.where_threads_are_open(d, routes, now).await;
        }
        routes.extend(self.open_threads_elsewhere(d, &routes, now).await);
        if routes.is_empty() {
            tracing::info!(
                diagnosis_id = %d.id,
                alarm_name = %d.alarm.name,
                classification = d.classification.behaviour.as_str(),
                severity = d.severity.as_str(),
                "no route takes this diagnosis; not posted"
            );
        }
        // Channels are independent: a 429 in one does not hold up the others.
        // Charts are drawn once per diagnosis, by the first channel that needs them.
        let files = std::sync::OnceLock::new();
        let outcomes = futures_util::future::join_all(
            routes
                .iter()
                .map(|route| self.deliver(d, route, additions, now, deadline, &files)),
        )
        .await;
        let mut posted = Vec::with_capacity(routes.len());
        let mut first_failure = None;
        for (route, outcome) in routes.iter().zip(outcomes) {
            match outcome {
                Ok(p) => {
                    tracing::info!(
                        diagnosis_id = %d.id,
                        alarm_name = %d.alarm.name,
                        channel = %p.channel,
                        attempts = p.attempts,
                        as_text = p.as_text,
                        threaded = p.thread_ts.is_some(),
                        "posted to Slack"
                    );
                    posted.push(p);
                }
                Err(e) => {
                    tracing::error!(
                        diagnosis_id = %d.id,
                        alarm_name = %d.alarm.name,
                        channel = %route.channel,
                        error_kind = e.kind(),
                        error = %e,
                        "could not post to Slack"
                    );
                    first_failure.get_or_insert(e);
                }
            }
        }
        match first_failure {
            Some(e) => Err(e),
            None => Ok(posted),
        }
    }

    /// The routes whose channel has an open thread about the alarm, or an
    /// open incident about its culprit. Without a thread store nothing can
    /// be known, and every route stays.
    async fn where_threads_are_open(
        &self,
        d: &Diagnosis,
        routes: Vec<Route>,
        now: DateTime<Utc>,
    ) -> Vec<Route> {
        if !self.poster.web_api() || !self.threads.enabled() {
            return routes;
        }
        let alarm = d
            .alarm
            .arn
            .as_ref()
            .map_or_else(|| d.alarm.name.clone(), ToString::to_string);
        let culprit = d.culprit();
        let mut kept = Vec::with_capacity(routes.len());
        for route in routes {
            let thread = self
                .threads
                .find(&ThreadKey::new(&alarm, &route.channel))
                .await;
            let incident = self
                .threads
                .find_incident(&IncidentKey::new(&culprit, &route.channel))
                .await;
            let open = matches!(thread, Ok(Some(t)) if t.is_open(now))
                || matches!(incident, Ok(Some(i)) if i.ts.is_some());
            if open {
                kept.push(route);
            } else {
                tracing::info!(diagnosis_id = %d.id, channel = %route.channel, "short resolution with no thread here: its firing was held or not posted; not posted");
            }
        }
        kept
    }

    /// A resolution follows its alarm into every channel where a thread about
    /// it is open, even where its own routes do not lead (a route for
    /// `sustained` does not match `recovered`); it mentions nobody there.
    async fn open_threads_elsewhere(
        &self,
        d: &Diagnosis,
        chosen: &[Route],
        now: DateTime<Utc>,
    ) -> Vec<Route> {
        if d.kind != ReportKind::Resolution || !self.poster.web_api() || !self.threads.enabled() {
            return Vec::new();
        }
        let alarm = d
            .alarm
            .arn
            .as_ref()
            .map_or_else(|| d.alarm.name.clone(), ToString::to_string);
        let alarm = alarm.as_str();
        let mut candidates: Vec<&str> = Vec::new();
        for channel in self.routes.channels() {
            if !chosen.iter().any(|r| r.channel == channel) && !candidates.contains(&channel) {
                candidates.push(channel);
            }
        }
        let keys: Vec<ThreadKey> = candidates
            .iter()
            .map(|c| ThreadKey::new(alarm, c))
            .collect();
        let threads =
            futures_util::future::join_all(keys.iter().map(|key| self.threads.find(key))).await;
        candidates
            .into_iter()
            .zip(threads)
            .filter(|(_, thread)| matches!(thread, Ok(Some(t)) if t.is_open(now)))
            .map(|(channel, _)| Route::everything_to(channel))
            .collect()
    }

    /// Shares the diagnosis's attachments in the thread, one after the other,
    /// while time is left; a failure is logged, never fatal (the report landed).
    async fn attach(
        &self,
        d: &Diagnosis,
        files: &[Attachment],
        channel_id: &str,
        thread_ts: &str,
        deadline: Instant,
    ) {
        for attachment in files {
            let left = deadline.saturating_duration_since(Instant::now());
            if left < self.retry.room_for_a_request {
                tracing::warn!(diagnosis_id = %d.id, file = %attachment.file_name, "no time left to upload the chart");
                return;
            }
            let timeout = self.retry.request_timeout.min(left);
            match self
                .poster
                .upload(attachment, channel_id, thread_ts, timeout)
                .await
            {
                Ok(()) => {
                    tracing::info!(diagnosis_id = %d.id, file = %attachment.file_name, bytes = attachment.bytes.len(), "chart shared in the thread")
                }
                Err(e) => {
                    tracing::warn!(diagnosis_id = %d.id, file = %attachment.file_name, error = %e, "could not share the chart")
                }
            }
        }
    }

    async fn deliver(
        &self,
        d: &Diagnosis,
        route: &Route,
        additions: Option<&FirstMessageAdditions>,
        now: DateTime<Utc>,
        deadline: Instant,
        files: &std::sync::OnceLock<Vec<Attachment>>,
    ) -> Result<Posted> {
        let web_api = self.poster.web_api();
        let threading = web_api && self.threads.enabled();
        let alarm = d
            .alarm
            .arn
            .as_ref()
            .map_or_else(|| d.alarm.name.clone(), ToString::to_string);
        let key = ThreadKey::new(&alarm, &route.channel);
        // The thread and the record of an earlier delivery are read together.
        let delivery = ThreadKey::delivery(d.id.as_str(), &route.channel);
        let (thread, earlier) = if threading {
            futures_util::future::join(self.threads.find(&key), self.threads.find(&delivery)).await
        } else {
            (Ok(None), Ok(None))
        };
        let open = match thread {
            Ok(found) => found.filter(|t| t.is_open(now)),
            Err(e) => {
                // Threads are a convenience: without the store, post at the top level.
                tracing::warn!(diagnosis_id = %d.id, error = %e, "could not read the thread store; posting at the top level");
                None
            }
        };
        let quiet_hold = d.hold.as_ref().filter(|h| h.cleared());
        // Without a thread of its own, a diagnosis opens or joins its culprit's
        // incident (a quiet line takes part in none).
        let incident = match open {
            None if threading && quiet_hold.is_none() => {
                self.incident_for(d, route, now, deadline).await
            }
            _ => None,
        };
        let joined = incident.as_ref().and_then(|i| i.joined.as_ref());
        let placement = Placement {
            web_api,
            thread_ts: open
                .as_ref()
                .map(|t| t.ts.as_str())
                .or(joined.and_then(|i| i.ts.as_deref())),
            thread_channel: open
                .as_ref()
                .map(|t| t.channel_id.as_str())
                .or(joined.and_then(|i| i.channel_id.as_deref())),
            additions,
        };
        // With a store, a retry of an event does not post again where it already landed.
        if let Ok(Some(earlier)) = earlier
            && earlier.is_open(now)
        {
            tracing::info!(
                diagnosis_id = %d.id,
                channel = %route.channel,
                "already posted by an earlier attempt at this event; not posting again"
            );
            return Ok(Posted {
                channel: route.channel.clone(),
                channel_id: Some(earlier.channel_id),
                ts: Some(earlier.ts),
                thread_ts: open.map(|t| t.ts),
                attempts: 0,
                as_text: false,
                already_posted: true,
            });
        }
        if let Some(hold) = quiet_hold {
            let message = quiet(d, hold, route, web_api);
            let posted = post_with_retries(&self.poster, &message, deadline, &self.retry).await?;
            if threading && let (Some(channel_id), Some(ts)) = (&posted.channel_id, &posted.ts) {
                let record =
                    Thread::started(channel_id.clone(), ts.clone(), now, self.thread_lifetime);
                if let Err(e) = self.threads.remember(&delivery, &record, now).await {
                    tracing::warn!(diagnosis_id = %d.id, error = %e, "could not remember the delivery");
                }
            }
            return Ok(posted);
        }
        let mut message = compose(d, route, placement);
        if joined.is_some() && d.kind == ReportKind::Diagnosis {
            mark_also_firing(&mut message.payload, &d.alarm.name);
        }
        let posted = post_with_retries(&self.poster, &message, deadline, &self.retry).await?;
        // The details go under the first message (or into the alarm's open thread).
        if let (Some(details), Some(thread_ts)) = (
            message.details.as_deref(),
            posted.thread_ts.clone().or_else(|| posted.ts.clone()),
        ) && !posted.as_text
        {
            let reply = in_thread(details, posted.channel_id.as_deref(), &thread_ts);
            if let Err(e) = post_with_retries(&self.poster, &reply, deadline, &self.retry).await {
                // The first message landed: the details are a convenience, and
                // retrying the event would post the first message again.
                tracing::warn!(diagnosis_id = %d.id, channel = %route.channel, error = %e, "could not post the details in the thread");
            }
            if let Some(channel_id) = &posted.channel_id {
                let files = files.get_or_init(|| (self.attachments)(d));
                self.attach(d, files, channel_id, &thread_ts, deadline)
                    .await;
            }
        }
        if threading && let (Some(channel_id), Some(ts)) = (&posted.channel_id, &posted.ts) {
            let record = Thread::started(channel_id.clone(), ts.clone(), now, self.thread_lifetime);
            if let Err(e) = self.threads.remember(&delivery, &record, now).await {
                tracing::warn!(diagnosis_id = %d.id, error = %e, "could not remember the delivery");
            }
            let resolved_in = open
                .as_ref()
                .and_then(|t| t.incident.clone())
                .or_else(|| incident.as_ref().map(|p| p.key.as_str().to_owned()));
            match (&incident, d.kind) {
                (_, ReportKind::Resolution) => {
                    if let Some(key) = resolved_in {
                        self.incident_resolved(d, &key, now, deadline).await;
                    }
                }
                (Some(plan), ReportKind::Diagnosis) => {
                    self.incident_posted(d, plan, &message, channel_id, ts, deadline)
                        .await;
                }
                (None, ReportKind::Diagnosis) => {}
            }
            if open.is_none() {
                // The alarm's thread is the incident's when it joined one.
                let thread_ts = posted.thread_ts.clone().unwrap_or_else(|| ts.clone());
                let record =
                    Thread::started(channel_id.clone(), thread_ts, now, self.thread_lifetime)
                        .in_incident(incident.as_ref().map(|p| &p.key));
                match self.threads.remember(&key, &record, now).await {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(
                        diagnosis_id = %d.id,
                        channel = %route.channel,
                        "another invocation started a thread for this alarm at the same time; this message stays at the top level"
                    ),
                    Err(e) => {
                        tracing::warn!(diagnosis_id = %d.id, error = %e, "could not remember the thread")
                    }
                }
            }
        }
        Ok(posted)
    }
}
