//! Holding likely transients (`HOLD_TRANSIENT_SECONDS`): a diagnosis that
//! looks like a blip waits before anyone is told, then the alarm's state at
//! the end of the wait decides what is said. Pure: the policy and the words.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Diagnosis, ReportKind, Severity};
use crate::classify::Behaviour;

/// The longest hold: SQS delays a message at most 15 minutes, and a page
/// held longer than that is a page missed.
pub const MAX_HOLD_SECONDS: u32 = 900;

/// That a report waited before it was published, and what the wait showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// How long it was held.
    pub seconds: u32,
    pub outcome: HoldOutcome,
}

/// The alarm's state when the hold ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum HoldOutcome {
    /// Still in ALARM (or INSUFFICIENT_DATA): the full report goes out.
    StillFiring,
    /// Back to OK: one quiet line, no email.
    Cleared {
        /// When it went back to OK, when CloudWatch said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<DateTime<Utc>>,
    },
    /// The state could not be read: the full report goes out (nothing is lost).
    Unknown { reason: String },
}

impl Hold {
    pub fn minutes(&self) -> u32 {
        self.seconds.div_ceil(60).max(1)
    }

    /// "held 5 min", for headers and subjects.
    pub fn label(&self) -> String {
        format!("held {} min", self.minutes())
    }

    pub fn cleared(&self) -> bool {
        matches!(self.outcome, HoldOutcome::Cleared { .. })
    }
}

/// Whether a report should wait `hold_seconds` before it is published: a
/// diagnosis (never a resolution) classified transient, below critical, not
/// already held. A critical diagnosis is never held.
pub fn should_hold(d: &Diagnosis, hold_seconds: u32) -> bool {
    hold_seconds > 0
        && d.hold.is_none()
        && d.kind == ReportKind::Diagnosis
        && d.classification.behaviour == Behaviour::Transient
        && d.severity < Severity::Critical
}

/// Whether a resolution ends an ALARM shorter than the hold: its firing may
/// have been held (and then said in one quiet line), so it is only worth a
/// reply where a thread about the alarm exists.
pub fn ends_a_possibly_held_alarm(d: &Diagnosis, hold_seconds: u32) -> bool {
    hold_seconds > 0
        && d.kind == ReportKind::Resolution
        && d.alarm_lasted_seconds
            .is_some_and(|lasted| lasted <= u64::from(hold_seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::sample;

    fn transient(severity: Severity) -> Diagnosis {
        let mut d = sample();
        d.kind = ReportKind::Diagnosis;
        d.classification.behaviour = Behaviour::Transient;
        d.severity = severity;
        d
    }

    #[test]
    fn a_transient_warning_is_held() {
        assert!(should_hold(&transient(Severity::Warning), 300));
    }

    #[test]
    fn a_critical_diagnosis_is_never_held() {
        assert!(!should_hold(&transient(Severity::Critical), 300));
    }

    #[test]
    fn nothing_is_held_when_holding_is_off() {
        assert!(!should_hold(&transient(Severity::Info), 0));
    }

    #[test]
    fn sustained_and_flapping_alarms_are_not_held() {
        for behaviour in [Behaviour::Sustained, Behaviour::Flapping] {
            let mut d = transient(Severity::Warning);
            d.classification.behaviour = behaviour;
            assert!(!should_hold(&d, 300), "{behaviour:?}");
        }
    }

    #[test]
    fn a_report_that_was_held_is_not_held_again() {
        let mut d = transient(Severity::Warning);
        d.hold = Some(Hold {
            seconds: 300,
            outcome: HoldOutcome::StillFiring,
        });
        assert!(!should_hold(&d, 300));
    }

    #[test]
    fn resolutions_are_not_held_but_short_ones_are_marked() {
        let mut d = transient(Severity::Info);
        d.kind = ReportKind::Resolution;
        d.alarm_lasted_seconds = Some(120);
        assert!(!should_hold(&d, 300));
        assert!(ends_a_possibly_held_alarm(&d, 300));
        d.alarm_lasted_seconds = Some(1800);
        assert!(!ends_a_possibly_held_alarm(&d, 300));
        d.alarm_lasted_seconds = None;
        assert!(!ends_a_possibly_held_alarm(&d, 300));
    }

    #[test]
    fn the_outcome_round_trips_as_tagged_json() {
        let hold = Hold {
            seconds: 60,
            outcome: HoldOutcome::Unknown {
                reason: "DescribeAlarms throttled".into(),
            },
        };
        let json = serde_json::to_value(&hold).unwrap();
        assert_eq!(json["outcome"]["state"], "unknown");
        assert_eq!(serde_json::from_value::<Hold>(json).unwrap(), hold);
    }
}
