//! Telling people: the notify-slack function's core. Diagnoses arrive from
//! the diagnosis topic; [`route`] picks channels and mentions, [`message`]
//! composes the posts, [`delivery`] posts them with Slack's retry rules and
//! threads them, [`credentials`] reads the secret. Slack and the thread store
//! are ports ([`delivery::SlackPoster`], [`thread::ThreadStore`]) implemented in
//! [`crate::adapters`].

pub mod answer;
pub mod credentials;
pub mod delivery;
pub mod incident;
pub mod message;
pub mod route;
pub mod seen;
pub mod thread;

use serde_json::Value;

use crate::diagnosis::{Diagnosis, SCHEMA};
use crate::error::{Error, Result};
use crate::intake::deliveries_from_value;

/// One diagnosis from one SNS record.
#[derive(Debug, Clone)]
pub struct Received {
    pub message_id: String,
    pub diagnosis: Diagnosis,
}

/// Reads the diagnoses out of a Lambda SNS event (or an SNS HTTP delivery).
/// The outer error is for an event that is not SNS at all; the inner ones per record.
pub fn diagnoses_from_event(event: Value) -> Result<Vec<Result<Received>>> {
    Ok(deliveries_from_value(event)?
        .into_iter()
        .map(|delivery| {
            let delivery = delivery?;
            let not_one = |problem: String| Error::NotADiagnosis {
                message_id: delivery.message_id.clone(),
                problem,
            };
            let value: Value = serde_json::from_str(&delivery.message).map_err(|e| {
                not_one(format!(
                    "the message is not JSON ({e}); expected the diagnosis JSON (the `default` member the diagnose function publishes)"
                ))
            })?;
            match value.get("schema").and_then(Value::as_str) {
                Some(SCHEMA) => {}
                Some(other) => {
                    return Err(not_one(format!(
                        "it declares schema {other:?}; this version reads {SCHEMA:?} (deploy both functions from the same release)"
                    )));
                }
                None => {
                    return Err(not_one(format!(
                        "it has no schema field; expected {SCHEMA:?} (is another publisher using the diagnosis topic?)"
                    )));
                }
            }
            let diagnosis: Diagnosis = serde_json::from_value(value)
                .map_err(|e| not_one(format!("it does not match {SCHEMA}: {e}")))?;
            Ok(Received {
                message_id: delivery.message_id,
                diagnosis,
            })
        })
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::time::Duration;

    use chrono::Utc;
    use serde_json::json;
    use tokio::time::Instant;

    use super::answer::Answer;
    use super::delivery::{Notifier, RetryPolicy, SlackPoster, Step, next_step, post_with_retries};
    use super::incident::{AlarmMark, Incident, IncidentKey, IncidentStore, Opening};
    use super::message::{Placement, compose};
    use super::route::{Route, Routes};
    use super::thread::{NoThreads, Thread, ThreadKey, ThreadStore};
    use super::*;
    use crate::classify::Behaviour;
    use crate::diagnosis::{ReportKind, Severity};

    /// A diagnosis with the given classification, severity and kind.
    pub(crate) fn diagnosis(
        behaviour: Behaviour,
        severity: Severity,
        kind: ReportKind,
    ) -> Diagnosis {
        let mut d = alarm_triage_core::fixtures::sample();
        d.classification.behaviour = behaviour;
        d.severity = severity;
        d.kind = kind;
        // Another transition of the alarm, another id (as `DiagnosisId::for_transition` gives).
        d.id = serde_json::from_value(json!(format!("dx-{behaviour:?}-{kind:?}").to_lowercase()))
            .unwrap();
        d
    }

    /// Answers from a script, records what was posted.
    #[derive(Default)]
    struct ScriptedSlack {
        web_api: bool,
        script: Mutex<Vec<Answer>>,
        posted: Mutex<Vec<(String, Value)>>,
        updates: Mutex<Vec<(String, String, Value)>>,
    }

    impl ScriptedSlack {
        fn answering(web_api: bool, answers: Vec<Answer>) -> Self {
            let mut script = answers;
            script.reverse();
            ScriptedSlack {
                web_api,
                script: Mutex::new(script),
                posted: Mutex::default(),
                updates: Mutex::default(),
            }
        }

        /// The first messages (the details replies are in [`Self::details_posted`]).
        fn posted(&self) -> Vec<(String, Value)> {
            self.all_posted()
                .into_iter()
                .filter(|(_, body)| !is_details(body))
                .collect()
        }

        fn details_posted(&self) -> Vec<(String, Value)> {
            self.all_posted()
                .into_iter()
                .filter(|(_, body)| is_details(body))
                .collect()
        }

        fn all_posted(&self) -> Vec<(String, Value)> {
            self.posted.lock().unwrap().clone()
        }
    }

    fn is_details(body: &Value) -> bool {
        body["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Details: ") || t.starts_with("```DETAILS"))
    }

    impl SlackPoster for ScriptedSlack {
        fn web_api(&self) -> bool {
            self.web_api
        }

        async fn update(
            &self,
            channel_id: &str,
            ts: &str,
            message: &Value,
            _: Duration,
        ) -> std::result::Result<(), String> {
            self.updates.lock().unwrap().push((
                channel_id.to_owned(),
                ts.to_owned(),
                message.clone(),
            ));
            Ok(())
        }

        async fn post(&self, channel: &str, body: &Value, _: Duration) -> Answer {
            self.posted
                .lock()
                .unwrap()
                .push((channel.to_owned(), body.clone()));
            self.script.lock().unwrap().pop().unwrap_or(Answer::Posted {
                channel_id: Some("C0CHECKOUT".into()),
                ts: Some(format!(
                    "1700000000.{:06}",
                    self.posted.lock().unwrap().len()
                )),
            })
        }
    }

    #[derive(Default)]
    struct MemoryThreads(
        Mutex<HashMap<ThreadKey, Thread>>,
        Mutex<HashMap<IncidentKey, (Incident, chrono::DateTime<Utc>)>>,
    );

    impl IncidentStore for MemoryThreads {
        async fn open_or_join(
            &self,
            key: &IncidentKey,
            alarm: &str,
            opener: &str,
            now: chrono::DateTime<Utc>,
            window: chrono::Duration,
        ) -> Result<Opening> {
            let mut map = self.1.lock().unwrap();
            match map.get_mut(key) {
                Some((incident, last)) if *last >= now - window => {
                    incident.alarms.insert(alarm.to_owned(), AlarmMark::Firing);
                    *last = now;
                    Ok(Opening::Joined(incident.clone()))
                }
                _ => {
                    let incident = Incident {
                        channel_id: None,
                        ts: None,
                        opened_at: now,
                        opened_by: opener.to_owned(),
                        alarms: [(alarm.to_owned(), AlarmMark::Firing)].into(),
                        first_message: None,
                    };
                    map.insert(key.clone(), (incident, now));
                    Ok(Opening::Opened)
                }
            }
        }

        async fn posted(
            &self,
            key: &IncidentKey,
            channel_id: &str,
            ts: &str,
            first: &Value,
        ) -> Result<()> {
            if let Some((incident, _)) = self.1.lock().unwrap().get_mut(key) {
                incident.channel_id = Some(channel_id.to_owned());
                incident.ts = Some(ts.to_owned());
                incident.first_message = Some(first.clone());
            }
            Ok(())
        }

        async fn find_incident(&self, key: &IncidentKey) -> Result<Option<Incident>> {
            Ok(self.1.lock().unwrap().get(key).map(|(i, _)| i.clone()))
        }

        async fn resolved(&self, key: &IncidentKey, alarm: &str) -> Result<Option<Incident>> {
            Ok(self.1.lock().unwrap().get_mut(key).map(|(i, _)| {
                i.alarms.insert(alarm.to_owned(), AlarmMark::Ok);
                i.clone()
            }))
        }
    }

    impl ThreadStore for MemoryThreads {
        async fn find(&self, key: &ThreadKey) -> Result<Option<Thread>> {
            Ok(self.0.lock().unwrap().get(key).cloned())
        }

        async fn remember(
            &self,
            key: &ThreadKey,
            thread: &Thread,
            now: chrono::DateTime<Utc>,
        ) -> Result<bool> {
            let mut map = self.0.lock().unwrap();
            if map.get(key).is_some_and(|t| t.is_open(now)) {
                return Ok(false);
            }
            map.insert(key.clone(), thread.clone());
            Ok(true)
        }
    }

    fn ok() -> Answer {
        Answer::Posted {
            channel_id: None,
            ts: None,
        }
    }

    fn message() -> super::message::SlackMessage {
        let d = diagnosis(
            Behaviour::Flapping,
            Severity::Warning,
            ReportKind::Diagnosis,
        );
        compose(&d, &Route::everything_to("#alerts"), Placement::default())
    }

    #[test]
    fn a_429_is_retried_after_the_time_slack_asks_for() {
        let step = next_step(
            &Answer::RateLimited {
                retry_after: Duration::from_secs(3),
            },
            1,
            false,
            Duration::from_secs(15),
            &RetryPolicy::default(),
        );
        assert_eq!(step, Step::RetryAfter(Duration::from_secs(3)));
    }

    #[test]
    fn a_retry_that_would_outlive_the_deadline_fails_instead() {
        let step = next_step(
            &Answer::RateLimited {
                retry_after: Duration::from_secs(30),
            },
            1,
            false,
            Duration::from_secs(15),
            &RetryPolicy::default(),
        );
        assert!(matches!(step, Step::Fail(f) if !f.permanent && f.error.contains("429")));
    }

    #[test]
    fn server_errors_back_off_exponentially_up_to_the_cap() {
        let policy = RetryPolicy::default();
        let waits: Vec<Step> = (1..=5)
            .map(|attempt| {
                next_step(
                    &Answer::Unavailable {
                        reason: "HTTP 503".into(),
                    },
                    attempt,
                    false,
                    Duration::from_secs(60),
                    &policy,
                )
            })
            .collect();
        assert_eq!(
            waits,
            [500, 1000, 2000, 4000, 4000].map(|ms| Step::RetryAfter(Duration::from_millis(ms)))
        );
        assert!(matches!(
            next_step(
                &Answer::Unavailable { reason: "x".into() },
                policy.max_attempts,
                false,
                Duration::from_secs(60),
                &policy
            ),
            Step::Fail(_)
        ));
    }

    #[test]
    fn refused_blocks_fall_back_to_text_once_then_fail_for_good() {
        let refused = Answer::BlocksRejected {
            status: 400,
            error: "invalid_blocks".into(),
        };
        let policy = RetryPolicy::default();
        assert_eq!(
            next_step(&refused, 1, false, Duration::from_secs(10), &policy),
            Step::FallBackToText
        );
        assert!(
            matches!(next_step(&refused, 2, true, Duration::from_secs(10), &policy), Step::Fail(f) if f.permanent)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retries_wait_in_time_and_the_message_is_posted_in_the_end() {
        let slack = ScriptedSlack::answering(
            false,
            vec![
                Answer::RateLimited {
                    retry_after: Duration::from_secs(2),
                },
                Answer::Unavailable {
                    reason: "HTTP 502".into(),
                },
                ok(),
            ],
        );
        let started = Instant::now();
        let posted = post_with_retries(
            &slack,
            &message(),
            started + Duration::from_secs(15),
            &RetryPolicy::default(),
        )
        .await
        .unwrap();
        assert_eq!(posted.attempts, 3);
        // 2 s as Slack asked, then 1 s of backoff (the second attempt doubles the first 500 ms).
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        assert_eq!(slack.posted().len(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_permanent_refusal_names_slacks_error_and_what_to_do() {
        let slack = ScriptedSlack::answering(
            false,
            vec![Answer::Rejected {
                status: 404,
                error: "no_service".into(),
            }],
        );
        let e = post_with_retries(
            &slack,
            &message(),
            Instant::now() + Duration::from_secs(15),
            &RetryPolicy::default(),
        )
        .await
        .unwrap_err();
        assert!(!e.is_retryable());
        let text = e.to_string();
        assert!(
            text.contains("404 no_service")
                && text.contains("webhook for #alerts")
                && text.contains("update the secret"),
            "{text}"
        );
        assert_eq!(slack.posted().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn invalid_blocks_are_retried_once_as_plain_text() {
        let slack = ScriptedSlack::answering(
            false,
            vec![Answer::BlocksRejected {
                status: 400,
                error: "invalid_blocks".into(),
            }],
        );
        let posted = post_with_retries(
            &slack,
            &message(),
            Instant::now() + Duration::from_secs(15),
            &RetryPolicy::default(),
        )
        .await
        .unwrap();
        assert!(posted.as_text);
        let bodies = slack.posted();
        assert!(bodies[0].1.get("blocks").is_some());
        assert!(bodies[1].1.get("blocks").is_none() && bodies[1].1["text"].is_string());
    }

    fn notifier(slack: ScriptedSlack) -> Notifier<ScriptedSlack, MemoryThreads> {
        Notifier {
            poster: slack,
            threads: MemoryThreads::default(),
            routes: Routes::parse(
                Some(r##"[{"classification": ["sustained"], "channel": "#oncall", "mention": "here", "continue": true},
                         {"channel": "#alerts"}]"##),
                "#alerts",
            )
            .unwrap(),
            thread_lifetime: chrono::Duration::hours(24),
            retry: RetryPolicy::default(),
            attachments: super::delivery::no_attachments,
            incident_window: None,
            hold_seconds: 0,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn later_reports_about_an_alarm_are_threaded_under_the_first() {
        let n = notifier(ScriptedSlack::answering(true, vec![]));
        let deadline = Instant::now() + Duration::from_secs(15);
        let now = Utc::now();
        let first = diagnosis(
            Behaviour::Flapping,
            Severity::Warning,
            ReportKind::Diagnosis,
        );
        let resolved = diagnosis(Behaviour::Recovered, Severity::Info, ReportKind::Resolution);
        let a = n.notify(&first, now, deadline).await.unwrap();
        let b = n
            .notify(&resolved, now + chrono::Duration::minutes(5), deadline)
            .await
            .unwrap();
        assert_eq!(a[0].thread_ts, None);
        assert_eq!(b[0].thread_ts, a[0].ts);
        assert_eq!(b.len(), 1);
        let posted = n.poster.posted();
        assert_eq!(
            posted[1].1["channel"], "C0CHECKOUT",
            "replies go to the channel ID Slack answered with"
        );
        // A day later the thread is closed: a new conversation starts.
        let c = n
            .notify(&first, now + chrono::Duration::hours(25), deadline)
            .await
            .unwrap();
        assert_eq!(c[0].thread_ts, None);
    }

    /// A diagnosis of another alarm, about the same culprit.
    fn other_alarm(d: &Diagnosis, name: &str, kind: ReportKind) -> Diagnosis {
        let mut other = d.clone();
        other.alarm.name = name.to_owned();
        other.alarm.arn = None;
        other.kind = kind;
        other.id =
            serde_json::from_value(json!(format!("dx-{name}-{kind:?}").to_lowercase())).unwrap();
        other
    }

    #[tokio::test(start_paused = true)]
    async fn alarms_about_one_culprit_are_one_incident_and_its_first_message_says_when_it_resolved()
    {
        let n = Notifier {
            incident_window: Some(chrono::Duration::minutes(30)),
            hold_seconds: 0,
            ..notifier(ScriptedSlack::answering(true, vec![]))
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        let now = Utc::now();
        let latency = diagnosis(
            Behaviour::Flapping,
            Severity::Warning,
            ReportKind::Diagnosis,
        );
        let errors = other_alarm(&latency, "checkout-5xx", ReportKind::Diagnosis);
        let first = n.notify(&latency, now, deadline).await.unwrap();
        let second = n
            .notify(&errors, now + chrono::Duration::minutes(2), deadline)
            .await
            .unwrap();
        assert_eq!(
            first[0].thread_ts, None,
            "the first alarm opens the incident"
        );
        assert_eq!(
            second[0].thread_ts, first[0].ts,
            "the second replies in its thread"
        );
        let posted = n.poster.posted();
        let reply = &posted.last().unwrap().1;
        assert!(
            reply["text"].as_str().unwrap().starts_with("Also firing: "),
            "{reply}"
        );
        let updates = n.poster.updates.lock().unwrap().clone();
        assert_eq!(updates.len(), 1);
        assert!(
            updates[0].2["blocks"][0]["text"]["text"]
                .as_str()
                .unwrap()
                .ends_with("· alarms 2 of 2 firing"),
            "{}",
            updates[0].2
        );
        // One resolution leaves the incident open; the second resolves it.
        let latency_ok = other_alarm(&latency, &latency.alarm.name, ReportKind::Resolution);
        let mut latency_ok = latency_ok;
        latency_ok.alarm.arn = latency.alarm.arn.clone();
        n.notify(&latency_ok, now + chrono::Duration::minutes(10), deadline)
            .await
            .unwrap();
        let errors_ok = other_alarm(&latency, "checkout-5xx", ReportKind::Resolution);
        n.notify(&errors_ok, now + chrono::Duration::minutes(23), deadline)
            .await
            .unwrap();
        let updates = n.poster.updates.lock().unwrap().clone();
        let last = &updates.last().unwrap().2;
        assert!(
            last["blocks"][0]["text"]["text"]
                .as_str()
                .unwrap()
                .starts_with("Resolved after 23 min"),
            "{last}"
        );
        assert_eq!(
            updates.last().unwrap().1,
            first[0].ts.clone().unwrap(),
            "the first message is the one updated"
        );
        // Another culprit is another incident.
        let mut elsewhere = other_alarm(&latency, "search-latency", ReportKind::Diagnosis);
        elsewhere.target_groups.clear();
        elsewhere.alarm.watched = None;
        let third = n
            .notify(&elsewhere, now + chrono::Duration::minutes(3), deadline)
            .await
            .unwrap();
        assert_eq!(third[0].thread_ts, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_resolution_follows_its_alarm_into_the_channel_that_was_paged() {
        let n = notifier(ScriptedSlack::answering(true, vec![]));
        let deadline = Instant::now() + Duration::from_secs(15);
        let now = Utc::now();
        let paged = diagnosis(
            Behaviour::Sustained,
            Severity::Critical,
            ReportKind::Diagnosis,
        );
        let first = n.notify(&paged, now, deadline).await.unwrap();
        assert_eq!(first.len(), 2, "#oncall and #alerts");
        let resolved = diagnosis(Behaviour::Recovered, Severity::Info, ReportKind::Resolution);
        let replies = n
            .notify(&resolved, now + chrono::Duration::minutes(9), deadline)
            .await
            .unwrap();
        let mut threads: Vec<_> = replies
            .iter()
            .map(|p| (p.channel.clone(), p.thread_ts.clone()))
            .collect();
        threads.sort();
        let mut expected: Vec<_> = first
            .iter()
            .map(|p| (p.channel.clone(), p.ts.clone()))
            .collect();
        expected.sort();
        assert_eq!(threads, expected);
        assert!(
            !n.poster.posted()[2..]
                .iter()
                .any(|(_, body)| body.to_string().contains("<!here>"))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn in_bot_mode_the_details_go_into_the_first_messages_thread() {
        let n = notifier(ScriptedSlack::answering(true, vec![]));
        let d = diagnosis(
            Behaviour::Sustained,
            Severity::Critical,
            ReportKind::Diagnosis,
        );
        let deadline = Instant::now() + Duration::from_secs(15);
        let posted = n.notify(&d, Utc::now(), deadline).await.unwrap();
        let details = n.poster.details_posted();
        assert_eq!(
            details.len(),
            posted.len(),
            "one details reply per first message"
        );
        for p in &posted {
            let ts = p.ts.as_deref().unwrap();
            assert!(
                details
                    .iter()
                    .any(|(_, body)| body["thread_ts"] == ts && body["channel"] == "C0CHECKOUT"),
                "a reply under {ts}: {details:#?}"
            );
        }
        let first = &n.poster.posted()[0].1;
        assert!(
            first["blocks"].as_array().unwrap().len() <= crate::render::slack::FIRST_MESSAGE_BLOCKS
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_retried_event_is_not_posted_again_where_it_already_landed() {
        // #oncall refuses, #alerts takes it; the retry posts only to #oncall.
        let n = notifier(ScriptedSlack::answering(
            true,
            vec![Answer::Unavailable {
                reason: "HTTP 503".into(),
            }],
        ));
        let n = Notifier {
            retry: RetryPolicy {
                max_attempts: 1,
                ..RetryPolicy::default()
            },
            ..n
        };
        let d = diagnosis(
            Behaviour::Sustained,
            Severity::Critical,
            ReportKind::Diagnosis,
        );
        let deadline = Instant::now() + Duration::from_secs(15);
        assert!(n.notify(&d, Utc::now(), deadline).await.is_err());
        let retry = n.notify(&d, Utc::now(), deadline).await.unwrap();
        let channels: Vec<String> = n.poster.posted().into_iter().map(|(c, _)| c).collect();
        assert_eq!(channels, ["#oncall", "#alerts", "#oncall"]);
        assert!(!retry[0].already_posted && retry[1].already_posted);
    }

    #[tokio::test(start_paused = true)]
    async fn every_route_is_tried_and_the_first_failure_fails_the_delivery() {
        let n = notifier(ScriptedSlack::answering(
            true,
            vec![
                Answer::Rejected {
                    status: 200,
                    error: "not_in_channel".into(),
                },
                ok(),
            ],
        ));
        let d = diagnosis(
            Behaviour::Sustained,
            Severity::Critical,
            ReportKind::Diagnosis,
        );
        let e = n
            .notify(&d, Utc::now(), Instant::now() + Duration::from_secs(15))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("channel #oncall"), "{e}");
        let channels: Vec<String> = n.poster.posted().into_iter().map(|(c, _)| c).collect();
        assert_eq!(channels, ["#oncall", "#alerts"]);
    }

    #[tokio::test(start_paused = true)]
    async fn webhooks_never_thread() {
        let n = Notifier {
            poster: ScriptedSlack::answering(false, vec![]),
            threads: NoThreads,
            routes: Routes::parse(None, "default").unwrap(),
            thread_lifetime: chrono::Duration::hours(24),
            retry: RetryPolicy::default(),
            attachments: super::delivery::no_attachments,
            incident_window: None,
            hold_seconds: 0,
        };
        let d = diagnosis(
            Behaviour::Flapping,
            Severity::Warning,
            ReportKind::Diagnosis,
        );
        for _ in 0..2 {
            let p = n
                .notify(&d, Utc::now(), Instant::now() + Duration::from_secs(5))
                .await
                .unwrap();
            assert_eq!(p[0].thread_ts, None);
        }
    }

    #[test]
    fn a_diagnosis_round_trips_through_the_topic() {
        let d = diagnosis(
            Behaviour::Flapping,
            Severity::Warning,
            ReportKind::Diagnosis,
        );
        let event = json!({"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn": "arn:x",
            "Sns": {"Type": "Notification", "MessageId": "m-1", "TopicArn": "arn:aws:sns:eu-west-1:1:t", "Subject": "s",
                    "Message": d.to_json().unwrap(), "Timestamp": "2026-11-29T10:00:00.000Z", "SignatureVersion": "1",
                    "Signature": "x", "SigningCertUrl": "x", "UnsubscribeUrl": "x", "MessageAttributes": {}}}]});
        let received = diagnoses_from_event(event).unwrap();
        assert_eq!(received[0].as_ref().unwrap().diagnosis, d);
    }

    #[test]
    fn a_message_of_another_schema_is_refused_by_name() {
        let event = json!({"Type": "Notification", "MessageId": "m-2", "TopicArn": "arn:x", "Message": r#"{"schema":"alarm-triage/diagnosis/v2"}"#,
            "Timestamp": "2026-11-29T10:00:00.000Z"});
        let e = diagnoses_from_event(event).unwrap().remove(0).unwrap_err();
        assert!(
            e.to_string().contains("m-2") && e.to_string().contains("diagnosis/v2"),
            "{e}"
        );
        let event = json!({"Type": "Notification", "MessageId": "m-3", "TopicArn": "arn:x", "Message": "plain text report",
            "Timestamp": "2026-11-29T10:00:00.000Z"});
        assert!(matches!(
            diagnoses_from_event(event).unwrap().remove(0),
            Err(Error::NotADiagnosis { .. })
        ));
    }
}
