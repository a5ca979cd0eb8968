//! A suspect as the diagnosis publishes it (`suspects[]`): every candidate
//! explanation (a change, the culprit group, the standing level) with the
//! three tests a careful engineer runs before blaming it. Plain data: the
//! judging is `crate::suspects`' work.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How one test came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The evidence fits the suspect.
    Pass,
    /// The evidence clears it.
    Fail,
    /// The evidence to decide was not read.
    Unknown,
}

/// One test and the numbers behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Test {
    pub outcome: Outcome,
    /// `latency at its usual level for 38 min after it`.
    pub note: String,
}

impl Test {
    pub fn pass(note: impl Into<String>) -> Self {
        Test {
            outcome: Outcome::Pass,
            note: note.into(),
        }
    }

    pub fn fail(note: impl Into<String>) -> Self {
        Test {
            outcome: Outcome::Fail,
            note: note.into(),
        }
    }

    pub fn unknown(note: impl Into<String>) -> Self {
        Test {
            outcome: Outcome::Unknown,
            note: note.into(),
        }
    }
}

/// What the three tests add up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SuspectVerdict {
    /// Every test passed: a cause.
    Convicted,
    /// A test cleared it: ruled out, with that test's reason.
    Acquitted,
    /// No test cleared it, but one could not be run: neither blamed nor cleared.
    Undecided,
}

impl SuspectVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            SuspectVerdict::Convicted => "convicted",
            SuspectVerdict::Acquitted => "acquitted",
            SuspectVerdict::Undecided => "undecided",
        }
    }
}

/// One candidate explanation and its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspect {
    /// `rollout`, `config_map`, `scaling`, `target_group`, ... for changes
    /// (as `changes[].kind`); `culprit_group`, `standing_level` otherwise.
    pub kind: String,
    /// `deployment shop/catalog`, `target group k8s-...`, `the alarm's threshold`.
    pub subject: String,
    /// What it is: `revision 38: env LOG_FORMAT changed`.
    pub summary: String,
    /// When it took effect (a change), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<DateTime<Utc>>,
    /// Seconds from the breach's start to the change; negative before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_seconds: Option<i64>,
    /// Did the symptom start when it took effect, within the lag its kind allows?
    pub onset: Test,
    /// Can it move this metric at all?
    pub mechanism: Test,
    /// Are the entities that went bad the ones it touches?
    pub locality: Test,
    pub verdict: SuspectVerdict,
    /// A controller reacting (the HPA adding pods, targets registered).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reaction: bool,
    /// In a few words, for the first screen: why it was convicted or cleared.
    pub reason: String,
}

impl Suspect {
    /// A change of the timeline, rather than the culprit group or the standing level.
    pub fn is_change(&self) -> bool {
        !matches!(self.kind.as_str(), "culprit_group" | "standing_level")
    }

    /// The three tests in the order a reason is taken from.
    pub fn tests(&self) -> [&Test; 3] {
        [&self.onset, &self.mechanism, &self.locality]
    }

    /// The verdict the three tests add up to: a failed test acquits, three
    /// passes convict, anything else stays undecided.
    pub fn verdict_of(onset: &Test, mechanism: &Test, locality: &Test) -> SuspectVerdict {
        let tests = [onset, mechanism, locality];
        if tests.iter().any(|t| t.outcome == Outcome::Fail) {
            SuspectVerdict::Acquitted
        } else if tests.iter().all(|t| t.outcome == Outcome::Pass) {
            SuspectVerdict::Convicted
        } else {
            SuspectVerdict::Undecided
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_failed_test_acquits_whatever_the_others_say() {
        assert_eq!(
            Suspect::verdict_of(&Test::pass(""), &Test::fail(""), &Test::pass("")),
            SuspectVerdict::Acquitted
        );
        assert_eq!(
            Suspect::verdict_of(&Test::unknown(""), &Test::pass(""), &Test::fail("")),
            SuspectVerdict::Acquitted
        );
    }

    #[test]
    fn only_three_passes_convict() {
        assert_eq!(
            Suspect::verdict_of(&Test::pass(""), &Test::pass(""), &Test::pass("")),
            SuspectVerdict::Convicted
        );
        assert_eq!(
            Suspect::verdict_of(&Test::pass(""), &Test::unknown(""), &Test::pass("")),
            SuspectVerdict::Undecided
        );
    }
}
