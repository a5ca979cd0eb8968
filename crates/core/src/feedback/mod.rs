//! Whether a diagnosis was right, in the words of the people who read it.
//!
//! The first message in Slack carries three buttons ("Right", "Wrong",
//! "Partly"); a click reaches the feedback endpoint, which proves Slack sent
//! it ([`signature`]), reads what was clicked ([`interaction`]), stores one
//! [`Answer`] per person and diagnosis, and updates the message
//! ([`message`]). [`accuracy`] turns the stored answers into precision per
//! finding, alarm and service. Everything here is pure: no Slack, no table,
//! no clock.

pub mod accuracy;
pub mod interaction;
pub mod message;
pub mod signature;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::diagnosis::finding::Role;
use crate::diagnosis::{Diagnosis, FindingId, ReportKind};

pub use signature::{MAX_BODY_BYTES, MAX_CLOCK_SKEW, Refusal, SignedRequest, verify};

/// What a person said of a diagnosis as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Judgement {
    Right,
    Wrong,
    Partly,
}

impl Judgement {
    pub fn as_str(self) -> &'static str {
        match self {
            Judgement::Right => "right",
            Judgement::Wrong => "wrong",
            Judgement::Partly => "partly",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "right" => Some(Judgement::Right),
            "wrong" => Some(Judgement::Wrong),
            "partly" => Some(Judgement::Partly),
            _ => None,
        }
    }

    /// How the message says it ("Confirmed right by ...").
    pub fn phrase(self) -> &'static str {
        match self {
            Judgement::Right => "Confirmed right",
            Judgement::Wrong => "Marked wrong",
            Judgement::Partly => "Marked partly right",
        }
    }
}

/// A Slack user id (`U0123ABCD`, `W...` on Enterprise Grid), checked once so
/// it can go into a mention (`<@U0123ABCD>`) without escaping.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SlackUserId(String);

impl SlackUserId {
    pub fn parse(text: &str) -> Option<Self> {
        let ok = (3..=32).contains(&text.len())
            && text.starts_with(['U', 'W'])
            && text
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        ok.then(|| SlackUserId(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `<@U0123>`: Slack shows the person's name.
    pub fn mention(&self) -> String {
        format!("<@{}>", self.0)
    }
}

impl TryFrom<String> for SlackUserId {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        SlackUserId::parse(&text).ok_or_else(|| "not a Slack user id".to_owned())
    }
}

impl From<SlackUserId> for String {
    fn from(id: SlackUserId) -> String {
        id.0
    }
}

/// A diagnosis id as it comes back from Slack (`dx-` and lower-case letters,
/// digits or dashes), checked before it is used as a key.
pub fn valid_diagnosis_id(text: &str) -> bool {
    text.len() <= 64
        && text.strip_prefix("dx-").is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// One finding of a recorded diagnosis: enough to count it later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedFinding {
    pub id: FindingId,
    pub role: Role,
}

/// What the feedback store keeps of a diagnosis that was posted with
/// buttons: who it was about and what it blamed, so answers can be counted
/// without the original message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisRecord {
    pub diagnosis_id: String,
    pub alarm: String,
    /// The alarm's metric namespace (`AWS/ApplicationELB`), or its kind for a composite alarm.
    pub family: String,
    /// `namespace/service` of the culprit, when the diagnosis names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    pub findings: Vec<RecordedFinding>,
    pub recorded_at: DateTime<Utc>,
}

impl DiagnosisRecord {
    pub fn of(d: &Diagnosis, now: DateTime<Utc>) -> Self {
        DiagnosisRecord {
            diagnosis_id: d.id.as_str().to_owned(),
            alarm: d.alarm.name.clone(),
            family: d.alarm.watched.as_ref().map_or_else(
                || format!("{:?}", d.alarm.kind).to_lowercase(),
                |m| m.namespace.clone(),
            ),
            service: d.culprit_service(),
            findings: d
                .findings
                .iter()
                .map(|f| RecordedFinding {
                    id: f.id.clone(),
                    role: f.role,
                })
                .collect(),
            recorded_at: now,
        }
    }

    /// The causes the diagnosis named, in its order.
    pub fn causes(&self) -> impl Iterator<Item = &FindingId> {
        self.findings
            .iter()
            .filter(|f| f.role == Role::Cause)
            .map(|f| &f.id)
    }
}

/// Whether a report asks for a verdict: a diagnosis does, a resolution
/// (nothing left to judge) does not.
pub fn asks_for_feedback(d: &Diagnosis) -> bool {
    // A quiet line (held, then cleared) names no cause to judge.
    d.kind == ReportKind::Diagnosis && !d.hold.as_ref().is_some_and(|h| h.cleared())
}

/// One person's answer on one diagnosis: the last one they gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub diagnosis: DiagnosisRecord,
    pub user: SlackUserId,
    pub judgement: Judgement,
    /// The causes they marked wrong (only with "wrong" or "partly").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wrong_causes: Vec<FindingId>,
    /// What it was, in their words (bounded; never logged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub answered_at: DateTime<Utc>,
}

/// The longest "what was it" kept, in characters.
pub const MAX_NOTE_CHARS: usize = 500;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_user_ids_are_accepted_and_anything_else_refused() {
        assert!(SlackUserId::parse("U0123ABCD").is_some());
        assert!(SlackUserId::parse("W0123ABCD").is_some());
        for bad in ["", "U", "u0123", "U012<!here>", "U01 23", "C0123ABCD"] {
            assert!(SlackUserId::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn diagnosis_ids_must_look_like_ours() {
        assert!(valid_diagnosis_id("dx-f5483b443539503a171bb60f"));
        assert!(!valid_diagnosis_id("dx-"));
        assert!(!valid_diagnosis_id("dx-ABC"));
        assert!(!valid_diagnosis_id("f5483b443539503a171bb60f"));
        assert!(!valid_diagnosis_id(&format!("dx-{}", "a".repeat(70))));
    }

    #[test]
    fn a_record_keeps_the_causes_the_diagnosis_named() {
        let mut d = crate::fixtures::sample();
        d.findings[0].role = Role::Cause;
        let record = DiagnosisRecord::of(&d, d.generated_at);
        let causes: Vec<_> = record.causes().cloned().collect();
        let expected: Vec<_> = d
            .findings
            .iter()
            .filter(|f| f.role == Role::Cause)
            .map(|f| f.id.clone())
            .collect();
        assert_eq!(causes, expected);
        assert!(!causes.is_empty(), "the sample names a cause");
        assert_eq!(record.alarm, d.alarm.name);
    }
}
