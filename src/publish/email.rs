//! One email per incident. Every diagnosis still goes to the topic (Slack
//! and queue consumers read them all); the `email` message attribute says
//! whether the email subscription (filter policy `{"email": ["send"]}`)
//! takes it. Email goes out when an incident opens and when a later alarm of
//! it raises the severity; the rest are `skip`, resolutions included (an
//! incident that flaps would otherwise mail every time its last alarm
//! clears: Slack's first message says when it resolved). Every subject names
//! the incident: `[incident shop/checkout] ...`.
//!
//! The incident is the one Slack uses (same culprit within
//! `INCIDENT_WINDOW_MINUTES`), kept in its own table under
//! `incident|<culprit>|email`, so the two never share a write.

use std::future::Future;
use std::time::Duration as StdDuration;

use alarm_triage_core::diagnosis::hold::ends_a_possibly_held_alarm;
use chrono::{DateTime, Duration, Utc};

use super::{DiagnosisPublisher, Outgoing};
use crate::diagnosis::{Diagnosis, ReportKind, Severity};
use crate::error::Result;
use crate::notify::incident::{Incident, IncidentKey, IncidentStore, Opening};

/// The `email` attribute of a diagnosis email subscribers get.
pub const SEND: &str = "send";
/// The `email` attribute of one they do not.
pub const SKIP: &str = "skip";

/// The channel name of the email incidents in the incident key.
const EMAIL: &str = "email";

/// What [`EmailIncidents::raise`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raise {
    /// Recorded as the incident's highest emailed severity (it was `from`).
    Raised { from: Option<Severity> },
    /// An email at least as severe went out already.
    NotHigher,
    /// The opener has not recorded its severity yet.
    NotRecordedYet,
}

/// Port: the incidents' email state.
pub trait EmailIncidents: IncidentStore {
    /// Records `severity` as the highest emailed for the incident. The
    /// opener records unconditionally (unless one as high is there); a joiner
    /// only raises what the opener recorded. A retry by `by` raises again.
    fn raise(
        &self,
        key: &IncidentKey,
        severity: Severity,
        by: &str,
        opener: bool,
    ) -> impl Future<Output = Result<Raise>> + Send;

    /// Remembers which incident `alarm` is in, for its resolution (whose
    /// culprit may read differently once the alarm is OK).
    fn remember_alarm(
        &self,
        alarm: &str,
        key: &IncidentKey,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The incident `alarm` was last in.
    fn incident_of_alarm(
        &self,
        alarm: &str,
    ) -> impl Future<Output = Result<Option<IncidentKey>>> + Send;
}

/// Why an email goes out or not.
#[derive(Debug, Clone, PartialEq)]
pub enum EmailTurn {
    /// The first diagnosis of the incident.
    Opened,
    /// A later alarm raised the severity.
    Escalated {
        from: Option<Severity>,
        incident: Incident,
    },
    /// The last alarm of the incident is OK (not emailed: see the module's note).
    Closed { incident: Incident },
    /// Another alarm of an incident already emailed at this severity.
    Repeat { incident: Incident },
    /// A resolution while other alarms of the incident still fire.
    StillFiring { incident: Incident },
    /// A resolution of an alarm no email was about (its firing was held, or quiet).
    NothingEmailed,
    /// Held, and back to OK within the hold: one quiet line in Slack, no email.
    HeldAndCleared,
    /// The incident state could not be read or written: email, as without grouping.
    Ungrouped,
}

impl EmailTurn {
    pub fn sends(&self) -> bool {
        matches!(
            self,
            EmailTurn::Opened | EmailTurn::Escalated { .. } | EmailTurn::Ungrouped
        )
    }
}

/// `shop/checkout` for `service:shop/checkout`; the alarm's name for `alarm:<arn>`.
pub fn incident_label(d: &Diagnosis) -> String {
    let culprit = d.culprit();
    match culprit.split_once(':') {
        Some(("alarm", _)) | None => d.alarm.name.clone(),
        Some((_, rest)) => rest.to_owned(),
    }
}

/// The subject and the email's first lines for a turn (pure).
pub fn with_turn(outgoing: &Outgoing, turn: &EmailTurn, now: DateTime<Utc>) -> Outgoing {
    let d = &outgoing.report;
    let label = incident_label(d);
    let mut out = outgoing.clone();
    let (lead, preamble) = match turn {
        EmailTurn::Opened => (
            String::new(),
            format!(
                "Incident: {label}. Later alarms about it, and its resolution, are in Slack and on the queue; email follows only if the severity rises."
            ),
        ),
        EmailTurn::Escalated { from, incident } => (
            format!("now {}: ", d.severity.as_str()),
            format!(
                "Incident: {label}. The severity rose to {}{}; {}.",
                d.severity.as_str(),
                from.map(|f| format!(" (emailed as {})", f.as_str()))
                    .unwrap_or_default(),
                alarms_line(incident)
            ),
        ),
        EmailTurn::Closed { incident } => (
            "resolved: ".to_owned(),
            format!(
                "Incident: {label}. Every alarm in it is OK again after {} min: {}.",
                (now - incident.opened_at).num_minutes().max(1),
                incident
                    .alarms
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        EmailTurn::Repeat { incident } | EmailTurn::StillFiring { incident } => (
            String::new(),
            format!("Incident: {label}; {}.", alarms_line(incident)),
        ),
        EmailTurn::NothingEmailed | EmailTurn::HeldAndCleared | EmailTurn::Ungrouped => {
            (String::new(), String::new())
        }
    };
    out.subject = super::ascii_subject(&format!("[incident {label}] {lead}{}", outgoing.subject));
    if !preamble.is_empty() {
        out.text = format!("{preamble}\n\n{}", outgoing.text);
    }
    let value = if turn.sends() { SEND } else { SKIP };
    out.attributes.retain(|(name, _)| name != "email");
    out.attributes.push(("email".to_owned(), value.to_owned()));
    out
}

fn alarms_line(incident: &Incident) -> String {
    format!(
        "{} alarm{} in it, {} firing",
        incident.alarms.len(),
        if incident.alarms.len() == 1 { "" } else { "s" },
        incident.firing()
    )
}

/// A publisher that groups emails by incident (without a store, every report is emailed).
#[derive(Debug, Clone)]
pub struct EmailByIncident<P, S> {
    pub inner: P,
    pub incidents: Option<S>,
    pub window: Duration,
    /// `HOLD_TRANSIENT_SECONDS`: a resolution of an alarm shorter than this
    /// with no incident behind it followed a held firing.
    pub hold_seconds: u32,
}

/// How long a joiner waits for the opener to record its severity.
const OPENER_WAIT: StdDuration = StdDuration::from_millis(2_000);

impl<P: DiagnosisPublisher, S: EmailIncidents> EmailByIncident<P, S> {
    /// Decides whether this report is emailed, updating the incident.
    pub async fn turn(&self, store: &S, d: &Diagnosis, now: DateTime<Utc>) -> Result<EmailTurn> {
        if d.hold.as_ref().is_some_and(|h| h.cleared()) {
            return Ok(EmailTurn::HeldAndCleared);
        }
        let alarm = d.alarm.name.as_str();
        if d.kind == ReportKind::Resolution {
            let key = match store.incident_of_alarm(alarm).await? {
                Some(key) => key,
                None => IncidentKey::new(&d.culprit(), EMAIL),
            };
            return Ok(match store.resolved(&key, alarm).await? {
                Some(incident) if incident.all_ok() => EmailTurn::Closed { incident },
                Some(incident) => EmailTurn::StillFiring { incident },
                None if ends_a_possibly_held_alarm(d, self.hold_seconds) => {
                    EmailTurn::NothingEmailed
                }
                None => EmailTurn::Ungrouped,
            });
        }
        let key = IncidentKey::new(&d.culprit(), EMAIL);
        let id = d.id.as_str();
        let opening = store
            .open_or_join(&key, alarm, id, now, self.window)
            .await?;
        store.remember_alarm(alarm, &key, now).await?;
        let incident = match opening {
            Opening::Opened => {
                store.raise(&key, d.severity, id, true).await?;
                return Ok(EmailTurn::Opened);
            }
            Opening::Joined(i) if i.opened_by == id => {
                store.raise(&key, d.severity, id, true).await?;
                return Ok(EmailTurn::Opened);
            }
            Opening::Joined(i) => i,
        };
        let give_up = tokio::time::Instant::now() + OPENER_WAIT;
        loop {
            match store.raise(&key, d.severity, id, false).await? {
                Raise::Raised { from } => return Ok(EmailTurn::Escalated { from, incident }),
                Raise::NotHigher => return Ok(EmailTurn::Repeat { incident }),
                Raise::NotRecordedYet if tokio::time::Instant::now() < give_up => {
                    tokio::time::sleep(StdDuration::from_millis(100)).await;
                }
                // The opener never recorded (it failed): this one emails instead.
                Raise::NotRecordedYet => {
                    store.raise(&key, d.severity, id, true).await?;
                    return Ok(EmailTurn::Escalated {
                        from: None,
                        incident,
                    });
                }
            }
        }
    }
}

impl<P: DiagnosisPublisher, S: EmailIncidents> DiagnosisPublisher for EmailByIncident<P, S> {
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }

    async fn publish(&self, outgoing: &Outgoing) -> Result<Vec<String>> {
        let Some(store) = &self.incidents else {
            return self.inner.publish(outgoing).await;
        };
        let now = Utc::now();
        let d = &outgoing.report;
        let turn = match self.turn(store, d, now).await {
            Ok(turn) => turn,
            Err(e) => {
                tracing::warn!(alarm_name = %d.alarm.name, diagnosis_id = %d.id, error = %e, "email incident state unavailable; emailing this report");
                EmailTurn::Ungrouped
            }
        };
        tracing::info!(alarm_name = %d.alarm.name, diagnosis_id = %d.id, email = turn.sends(), turn = ?std::mem::discriminant(&turn), "email decided");
        self.inner.publish(&with_turn(outgoing, &turn, now)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Behaviour;
    use crate::diagnosis::{Hold, HoldOutcome};
    use crate::publish::fake::RecordingPublisher;
    use crate::publish::prepare;
    use chrono::TimeZone;

    fn incident(alarms: &[(&str, bool)]) -> Incident {
        use crate::notify::incident::AlarmMark;
        Incident {
            channel_id: None,
            ts: None,
            opened_at: Utc.with_ymd_and_hms(2026, 12, 2, 10, 0, 0).unwrap(),
            opened_by: "dx-1".into(),
            alarms: alarms
                .iter()
                .map(|(a, firing)| {
                    (
                        (*a).to_owned(),
                        if *firing {
                            AlarmMark::Firing
                        } else {
                            AlarmMark::Ok
                        },
                    )
                })
                .collect(),
            first_message: None,
        }
    }

    fn outgoing() -> Outgoing {
        prepare(&alarm_triage_core::fixtures::sample()).unwrap()
    }

    fn email_attribute(o: &Outgoing) -> &str {
        o.attributes
            .iter()
            .find(|(n, _)| n == "email")
            .map(|(_, v)| v.as_str())
            .unwrap()
    }

    #[test]
    fn every_report_is_emailed_unless_grouping_says_otherwise() {
        assert_eq!(email_attribute(&outgoing()), SEND);
    }

    #[test]
    fn a_report_held_and_cleared_is_never_emailed_even_without_grouping() {
        let mut d = alarm_triage_core::fixtures::sample();
        d.hold = Some(Hold {
            seconds: 300,
            outcome: HoldOutcome::Cleared { since: None },
        });
        assert_eq!(email_attribute(&prepare(&d).unwrap()), SKIP);
    }

    #[test]
    fn the_subject_names_the_incident_and_stays_a_short_ascii_line() {
        let now = Utc.with_ymd_and_hms(2026, 12, 2, 10, 20, 0).unwrap();
        let out = with_turn(&outgoing(), &EmailTurn::Opened, now);
        assert!(out.subject.starts_with("[incident "), "{}", out.subject);
        assert!(out.subject.len() <= 100 && out.subject.is_ascii());
        assert_eq!(email_attribute(&out), SEND);
        assert!(out.text.starts_with("Incident: "), "{}", out.text);
    }

    #[test]
    fn a_repeat_is_skipped_and_an_escalation_says_what_rose() {
        let now = Utc.with_ymd_and_hms(2026, 12, 2, 10, 20, 0).unwrap();
        let repeat = with_turn(
            &outgoing(),
            &EmailTurn::Repeat {
                incident: incident(&[("a", true), ("b", true)]),
            },
            now,
        );
        assert_eq!(email_attribute(&repeat), SKIP);
        let raised = with_turn(
            &outgoing(),
            &EmailTurn::Escalated {
                from: Some(Severity::Warning),
                incident: incident(&[("a", true), ("b", true)]),
            },
            now,
        );
        assert_eq!(email_attribute(&raised), SEND);
        assert!(raised.subject.contains("now "), "{}", raised.subject);
        assert!(
            raised.text.contains("emailed as warning"),
            "{}",
            raised.text
        );
    }

    #[test]
    fn closing_an_incident_gives_its_length_and_its_alarms() {
        let now = Utc.with_ymd_and_hms(2026, 12, 2, 10, 23, 0).unwrap();
        let out = with_turn(
            &outgoing(),
            &EmailTurn::Closed {
                incident: incident(&[("a", false), ("b", false)]),
            },
            now,
        );
        assert!(out.subject.contains("resolved: "), "{}", out.subject);
        assert!(out.text.contains("after 23 min: a, b"), "{}", out.text);
    }

    #[test]
    fn the_label_is_the_service_else_the_alarm_name() {
        let mut d = alarm_triage_core::fixtures::sample();
        d.classification.behaviour = Behaviour::Sustained;
        d.target_groups.clear();
        d.alarm.watched = None;
        assert_eq!(incident_label(&d), d.alarm.name);
    }

    /// An incident, the severity emailed, and who raised it.
    type Entry = (Incident, Option<Severity>, String);

    /// Incidents in memory, for the decisions (the DynamoDB store's
    /// conditional writes are tested against moto).
    #[derive(Default)]
    struct MemoryEmail {
        incidents: std::sync::Mutex<std::collections::HashMap<String, Entry>>,
        alarms: std::sync::Mutex<std::collections::HashMap<String, IncidentKey>>,
    }

    impl IncidentStore for MemoryEmail {
        async fn open_or_join(
            &self,
            key: &IncidentKey,
            alarm: &str,
            opener: &str,
            now: DateTime<Utc>,
            _window: Duration,
        ) -> Result<Opening> {
            use crate::notify::incident::AlarmMark;
            let mut all = self.incidents.lock().unwrap();
            if let Some((i, _, _)) = all.get_mut(key.as_str()) {
                i.alarms.insert(alarm.to_owned(), AlarmMark::Firing);
                return Ok(Opening::Joined(i.clone()));
            }
            let mut i = incident(&[(alarm, true)]);
            i.opened_by = opener.to_owned();
            i.opened_at = now;
            all.insert(key.as_str().to_owned(), (i, None, String::new()));
            Ok(Opening::Opened)
        }

        async fn posted(
            &self,
            _: &IncidentKey,
            _: &str,
            _: &str,
            _: &serde_json::Value,
        ) -> Result<()> {
            Ok(())
        }

        async fn find_incident(&self, key: &IncidentKey) -> Result<Option<Incident>> {
            Ok(self
                .incidents
                .lock()
                .unwrap()
                .get(key.as_str())
                .map(|e| e.0.clone()))
        }

        async fn resolved(&self, key: &IncidentKey, alarm: &str) -> Result<Option<Incident>> {
            use crate::notify::incident::AlarmMark;
            let mut all = self.incidents.lock().unwrap();
            Ok(all.get_mut(key.as_str()).map(|(i, _, _)| {
                i.alarms.insert(alarm.to_owned(), AlarmMark::Ok);
                i.clone()
            }))
        }
    }

    impl EmailIncidents for MemoryEmail {
        async fn raise(
            &self,
            key: &IncidentKey,
            severity: Severity,
            by: &str,
            opener: bool,
        ) -> Result<Raise> {
            let mut all = self.incidents.lock().unwrap();
            let Some((_, recorded, raised_by)) = all.get_mut(key.as_str()) else {
                return Ok(Raise::NotRecordedYet);
            };
            let from = *recorded;
            let raises = match from {
                None => opener,
                Some(r) => r < severity || raised_by == by,
            };
            if raises {
                *recorded = Some(severity);
                by.clone_into(raised_by);
                Ok(Raise::Raised { from })
            } else if from.is_none() {
                Ok(Raise::NotRecordedYet)
            } else {
                Ok(Raise::NotHigher)
            }
        }

        async fn remember_alarm(
            &self,
            alarm: &str,
            key: &IncidentKey,
            _: DateTime<Utc>,
        ) -> Result<()> {
            self.alarms
                .lock()
                .unwrap()
                .insert(alarm.to_owned(), key.clone());
            Ok(())
        }

        async fn incident_of_alarm(&self, alarm: &str) -> Result<Option<IncidentKey>> {
            Ok(self.alarms.lock().unwrap().get(alarm).cloned())
        }
    }

    fn grouping() -> EmailByIncident<RecordingPublisher, MemoryEmail> {
        EmailByIncident {
            inner: RecordingPublisher::default(),
            incidents: Some(MemoryEmail::default()),
            window: Duration::minutes(30),
            hold_seconds: 300,
        }
    }

    fn about(alarm: &str, severity: Severity, kind: ReportKind) -> Diagnosis {
        let mut d = alarm_triage_core::fixtures::sample();
        d.alarm.name = alarm.to_owned();
        d.severity = severity;
        d.kind = kind;
        d.id = serde_json::from_value(serde_json::json!(
            format!("dx-{alarm}-{kind:?}").to_lowercase()
        ))
        .unwrap();
        d
    }

    #[tokio::test]
    async fn an_incident_emails_its_first_alarm_and_a_rise_in_severity_only() {
        let g = grouping();
        let now = Utc.with_ymd_and_hms(2026, 12, 2, 10, 0, 0).unwrap();
        let store = g.incidents.as_ref().unwrap();
        let mut sent = Vec::new();
        for (alarm, severity, kind) in [
            ("latency", Severity::Warning, ReportKind::Diagnosis),
            ("errors", Severity::Warning, ReportKind::Diagnosis),
            ("unhealthy", Severity::Critical, ReportKind::Diagnosis),
            ("latency", Severity::Info, ReportKind::Resolution),
            ("errors", Severity::Info, ReportKind::Resolution),
            ("unhealthy", Severity::Info, ReportKind::Resolution),
        ] {
            let turn = g
                .turn(store, &about(alarm, severity, kind), now)
                .await
                .unwrap();
            sent.push(turn.sends());
        }
        assert_eq!(sent, [true, false, true, false, false, false]);
        let last = about("unhealthy", Severity::Info, ReportKind::Resolution);
        assert!(matches!(
            g.turn(store, &last, now).await.unwrap(),
            EmailTurn::Closed { .. }
        ));
    }

    #[tokio::test]
    async fn a_retry_of_the_opener_is_emailed_again() {
        let g = grouping();
        let now = Utc.with_ymd_and_hms(2026, 12, 2, 10, 0, 0).unwrap();
        let store = g.incidents.as_ref().unwrap();
        let d = about("latency", Severity::Warning, ReportKind::Diagnosis);
        assert_eq!(g.turn(store, &d, now).await.unwrap(), EmailTurn::Opened);
        assert_eq!(g.turn(store, &d, now).await.unwrap(), EmailTurn::Opened);
    }

    #[tokio::test]
    async fn a_short_resolution_with_no_incident_behind_it_is_not_emailed() {
        let g = grouping();
        let now = Utc.with_ymd_and_hms(2026, 12, 2, 10, 0, 0).unwrap();
        let store = g.incidents.as_ref().unwrap();
        let mut d = about("latency", Severity::Info, ReportKind::Resolution);
        d.alarm_lasted_seconds = Some(120);
        assert_eq!(
            g.turn(store, &d, now).await.unwrap(),
            EmailTurn::NothingEmailed
        );
        d.alarm_lasted_seconds = Some(3600);
        assert_eq!(g.turn(store, &d, now).await.unwrap(), EmailTurn::Ungrouped);
    }

    #[tokio::test]
    async fn without_a_store_everything_goes_through_unchanged() {
        let publisher: EmailByIncident<RecordingPublisher, MemoryEmail> = EmailByIncident {
            inner: RecordingPublisher::default(),
            incidents: None,
            window: Duration::minutes(30),
            hold_seconds: 0,
        };
        let o = outgoing();
        publisher.publish(&o).await.unwrap();
        assert_eq!(publisher.inner.sent.lock().unwrap()[0], o);
    }
}
