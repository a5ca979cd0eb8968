//! Publishing a diagnosis: what goes on the wire (pure) and the port the
//! SNS and SQS adapters implement.
//!
//! SNS gets `MessageStructure=json`: `default` (what SQS, Lambda and HTTP
//! subscribers receive) is the JSON diagnosis, `email` the plain-text report.
//! Message attributes carry what subscription filter policies select on.

pub mod email;
#[cfg(any(test, feature = "test-util"))]
pub mod fake;
pub mod hold;
pub mod once;

use std::future::Future;

use crate::diagnosis::Diagnosis;
use crate::error::{Error, Result};
use crate::render;

/// SNS and SQS refuse messages over 256 KiB (body and attributes together).
pub const MESSAGE_LIMIT_BYTES: usize = 256 * 1024;
/// Room kept for message attributes and the SNS envelope.
const ATTRIBUTE_ALLOWANCE: usize = 4 * 1024;

/// A diagnosis ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub diagnosis_id: String,
    /// For SQS FIFO message groups: reports on one alarm stay in order.
    pub group_id: String,
    /// At most 100 ASCII characters, no newlines (SNS's rule for email subjects).
    pub subject: String,
    /// The JSON diagnosis.
    pub json: String,
    /// The plain-text report (email).
    pub text: String,
    /// Message attributes for subscription filter policies.
    pub attributes: Vec<(String, String)>,
    /// Whether the diagnosis had to be shortened to fit.
    pub shortened: bool,
    /// The diagnosis as sent, for the publishers that decide on it (holding, email grouping).
    pub report: std::sync::Arc<Diagnosis>,
}

impl Outgoing {
    /// The SNS message body for `MessageStructure=json`.
    pub fn sns_message(&self) -> String {
        serde_json::json!({ "default": self.json, "email": self.text }).to_string()
    }
}

/// Builds the outgoing message, shortening the diagnosis when it would not fit:
/// first the time series are cut to their newest points, then dropped, then
/// long evidence lists are cut. The headline, classification and verdicts always stay.
pub fn prepare(diagnosis: &Diagnosis) -> Result<Outgoing> {
    let mut d = diagnosis.clone();
    let mut outgoing = build(&d, false)?;
    for step in 0..4 {
        if outgoing.sns_message().len() + ATTRIBUTE_ALLOWANCE <= MESSAGE_LIMIT_BYTES {
            break;
        }
        match step {
            0 => trim_series(&mut d, 60),
            1 => trim_series(&mut d, 0),
            2 => {
                for f in &mut d.findings {
                    f.evidence.truncate(12);
                }
                for s in &mut d.next_steps {
                    s.commands.truncate(3);
                }
            }
            _ => {
                d.findings.iter_mut().for_each(|f| f.evidence.clear());
                d.target_groups
                    .iter_mut()
                    .for_each(|g| g.unhealthy_targets.clear());
            }
        }
        d.notes.retain(|n| !n.starts_with("shortened"));
        d.notes.push(format!(
            "shortened to fit the {} KiB message limit; the full evidence is in the function's logs under diagnosis id {}",
            MESSAGE_LIMIT_BYTES / 1024,
            d.id
        ));
        outgoing = build(&d, true)?;
    }
    if outgoing.sns_message().len() + ATTRIBUTE_ALLOWANCE > MESSAGE_LIMIT_BYTES {
        // Still too big (pathological input): keep the JSON, cut the email text.
        let room =
            MESSAGE_LIMIT_BYTES.saturating_sub(outgoing.json.len() * 2 + ATTRIBUTE_ALLOWANCE * 2);
        outgoing.text = render::truncate(&outgoing.text, room / 2);
    }
    Ok(outgoing)
}

fn trim_series(d: &mut Diagnosis, keep: usize) {
    d.classification
        .timeline
        .trim_to_newest(keep.max(1).min(d.classification.timeline.values.len()));
    for f in &mut d.findings {
        if keep == 0 {
            f.series.clear();
        } else {
            f.series.iter_mut().for_each(|s| s.trim_to_newest(keep));
        }
    }
}

fn build(d: &Diagnosis, shortened: bool) -> Result<Outgoing> {
    let mut attributes = vec![
        ("alarm_name".to_owned(), d.alarm.name.clone()),
        (
            "classification".to_owned(),
            d.classification.behaviour.as_str().to_owned(),
        ),
        ("severity".to_owned(), d.severity.as_str().to_owned()),
        ("kind".to_owned(), format!("{:?}", d.kind).to_lowercase()),
        // Email subscriptions filter on it: a held report that cleared is never emailed,
        // and the email grouping turns repeats to `skip`.
        (
            "email".to_owned(),
            if d.hold.as_ref().is_some_and(|h| h.cleared()) {
                email::SKIP
            } else {
                email::SEND
            }
            .to_owned(),
        ),
    ];
    if let Some(namespace) = d.alarm.namespace() {
        attributes.push(("namespace".to_owned(), namespace.to_owned()));
    }
    if let Some(service) = d.culprit_service() {
        attributes.push(("service".to_owned(), service));
    }
    attributes.retain(|(_, v)| !v.trim().is_empty());
    Ok(Outgoing {
        diagnosis_id: d.id.to_string(),
        group_id: fifo_group_id(
            &d.alarm
                .arn
                .as_ref()
                .map_or_else(|| d.alarm.name.clone(), ToString::to_string),
        ),
        subject: subject(d),
        json: d.to_json()?,
        text: render::text::render(d),
        attributes,
        shortened,
        report: std::sync::Arc::new(d.clone()),
    })
}

/// `[flapping] alarm name`, ASCII only, one line, at most 100 characters.
pub fn subject(d: &Diagnosis) -> String {
    ascii_subject(&format!(
        "[{}] {}",
        d.classification.behaviour.as_str(),
        d.alarm.name
    ))
}

/// SNS's email subject rule: ASCII only, one line, at most 100 characters.
pub fn ascii_subject(raw: &str) -> String {
    let ascii: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect();
    ascii.chars().take(100).collect()
}

/// A FIFO message group id: at most 128 characters of `[A-Za-z0-9!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~]`.
fn fifo_group_id(key: &str) -> String {
    key.chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .take(128)
        .collect()
}

/// Port: somewhere diagnoses go.
pub trait DiagnosisPublisher: Send + Sync {
    /// Whether there is anywhere to publish to (when not, the message is not even built).
    fn enabled(&self) -> bool {
        true
    }

    /// Publishes one diagnosis; returns a receipt per destination (e.g. `sns:<message id>`).
    fn publish(&self, outgoing: &Outgoing) -> impl Future<Output = Result<Vec<String>>> + Send;
}

/// Publishes nowhere (offline replays, and replays without `--publish`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPublisher;

impl DiagnosisPublisher for NoPublisher {
    fn enabled(&self) -> bool {
        false
    }

    async fn publish(&self, _: &Outgoing) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// A failed publish, as the adapters report it.
pub fn failure(destination: &'static str, reason: String) -> Error {
    Error::Publish {
        destination,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Series;

    fn diagnosis() -> Diagnosis {
        alarm_triage_core::fixtures::sample()
    }

    #[test]
    fn a_small_diagnosis_goes_out_whole_with_its_filter_attributes() {
        let d = diagnosis();
        let out = prepare(&d).unwrap();
        assert!(!out.shortened);
        assert!(
            out.attributes
                .contains(&("namespace".to_owned(), "AWS/ApplicationELB".to_owned()))
        );
        let message: serde_json::Value = serde_json::from_str(&out.sns_message()).unwrap();
        assert_eq!(message["default"].as_str(), Some(out.json.as_str()));
        assert!(message["email"].as_str().unwrap().starts_with("Transient"));
    }

    #[test]
    fn an_oversized_diagnosis_is_shortened_but_keeps_its_verdict() {
        let mut d = diagnosis();
        let huge = Series {
            label: "per-pod CPU".into(),
            unit: "cores".into(),
            start: d.generated_at,
            step_seconds: 15,
            values: vec![Some(0.123_456); 20_000],
        };
        for f in &mut d.findings {
            f.series = vec![huge.clone(); 5];
        }
        let out = prepare(&d).unwrap();
        assert!(out.shortened);
        assert!(out.sns_message().len() <= MESSAGE_LIMIT_BYTES);
        let sent: Diagnosis = serde_json::from_str(&out.json).unwrap();
        assert_eq!(sent.headline, d.headline);
        assert_eq!(sent.classification.behaviour, d.classification.behaviour);
        assert_eq!(sent.findings.len(), d.findings.len());
        assert!(sent.notes.iter().any(|n| n.contains("shortened")));
    }

    #[test]
    fn subjects_are_ascii_single_line_and_short() {
        let mut d = diagnosis();
        d.alarm.name = format!("caf\u{e9}\nlatency {}", "x".repeat(200));
        let subject = subject(&d);
        assert!(
            subject.is_ascii() && !subject.contains('\n') && subject.len() <= 100,
            "{subject}"
        );
    }

    #[test]
    fn group_ids_keep_only_printable_ascii() {
        assert_eq!(
            fifo_group_id("arn:aws:cloudwatch:x:1:alarm:a b\u{e9}"),
            "arn:aws:cloudwatch:x:1:alarm:a_b_"
        );
        assert_eq!(fifo_group_id(&"x".repeat(300)).len(), 128);
    }
}
