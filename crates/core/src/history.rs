//! An alarm's state-change history, as DescribeAlarmHistory reports it.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::alarm::{AlarmNotification, AlarmState, Timestamp};

/// One state change of an alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateChange {
    pub at: DateTime<Utc>,
    pub from: AlarmState,
    pub to: AlarmState,
}

impl StateChange {
    /// Reads a `StateUpdate` item's `HistoryData` JSON
    /// (`{"oldState":{"stateValue":"OK"},"newState":{"stateValue":"ALARM"}}`).
    /// Returns `None` for items that are not state changes.
    pub fn from_history_data(at: DateTime<Utc>, history_data: &str) -> Option<Self> {
        let data: serde_json::Value = serde_json::from_str(history_data).ok()?;
        let state = |key: &str| {
            data.get(key)?
                .get("stateValue")?
                .as_str()
                .and_then(AlarmState::parse)
        };
        let (from, to) = (state("oldState")?, state("newState")?);
        (from != to).then_some(StateChange { at, from, to })
    }
}

/// The state changes of one alarm, oldest first, without duplicates.
///
/// AWS returns history newest first and in pages; the order it arrives in
/// must not change anything we conclude, so construction always sorts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AlarmHistory {
    changes: Vec<StateChange>,
    /// From when on the history is complete. `None`: only the changes
    /// themselves are known (for example just the notification's own), so the
    /// state before the first of them is unknown.
    #[serde(default)]
    complete_since: Option<DateTime<Utc>>,
}

/// Two records of the same change may differ by a few milliseconds
/// (the notification versus the history item).
const SAME_CHANGE_TOLERANCE_MS: i64 = 1_000;

impl AlarmHistory {
    /// Builds a history from changes in any order.
    pub fn from_unordered(mut changes: Vec<StateChange>) -> Self {
        changes.retain(|c| c.from != c.to);
        changes.sort_by_key(|c| (c.at, c.from as u8, c.to as u8));
        let mut out: Vec<StateChange> = Vec::with_capacity(changes.len());
        for change in changes {
            let duplicate = out.last().is_some_and(|last| {
                last.from == change.from
                    && last.to == change.to
                    && (change.at - last.at) <= Duration::milliseconds(SAME_CHANGE_TOLERANCE_MS)
            });
            if !duplicate {
                out.push(change);
            }
        }
        AlarmHistory {
            changes: out,
            complete_since: None,
        }
    }

    /// Marks the history as holding every change since `start` (what a full
    /// read of DescribeAlarmHistory from `start` gives).
    pub fn complete_since(mut self, start: DateTime<Utc>) -> Self {
        self.complete_since = Some(start);
        self
    }

    /// The earliest instant whose state is known: the start of a complete
    /// history, else the first change, else nothing.
    pub fn known_from(&self) -> Option<DateTime<Utc>> {
        self.complete_since
            .or_else(|| self.changes.first().map(|c| c.at))
    }

    /// Adds the transition a notification reports, unless the history already holds it.
    pub fn including(self, notification: &AlarmNotification) -> Self {
        let Timestamp(at) = notification.state_change_time;
        let mut changes = self.changes;
        changes.push(StateChange {
            at,
            from: notification.old_state_value,
            to: notification.new_state_value,
        });
        AlarmHistory {
            complete_since: self.complete_since,
            ..Self::from_unordered(changes)
        }
    }

    /// Oldest first.
    pub fn changes(&self) -> &[StateChange] {
        &self.changes
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The state in force at `t`: the last change at or before it, else the
    /// state the first known change left, else `fallback`.
    pub fn state_at(&self, t: DateTime<Utc>, fallback: AlarmState) -> AlarmState {
        let after = self.changes.partition_point(|c| c.at <= t);
        match after {
            0 => self.changes.first().map_or(fallback, |c| c.from),
            n => self.changes[n - 1].to,
        }
    }

    /// Changes with `start < at <= end`.
    pub fn changes_between(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> &[StateChange] {
        let lo = self.changes.partition_point(|c| c.at <= start);
        let hi = self.changes.partition_point(|c| c.at <= end);
        &self.changes[lo..hi.max(lo)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(minute: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 0, 0, 0).unwrap() + Duration::minutes(minute)
    }

    #[test]
    fn history_data_of_a_state_update_becomes_a_change() {
        let data = r#"{"version":"1.0","oldState":{"stateValue":"OK","stateReason":"x"},"newState":{"stateValue":"ALARM","stateReason":"y"}}"#;
        let change = StateChange::from_history_data(at(0), data).unwrap();
        assert_eq!(
            (change.from, change.to),
            (AlarmState::Ok, AlarmState::Alarm)
        );
    }

    #[test]
    fn history_data_without_states_is_skipped() {
        assert_eq!(
            StateChange::from_history_data(at(0), r#"{"type":"Update"}"#),
            None
        );
        assert_eq!(StateChange::from_history_data(at(0), "not json"), None);
    }

    #[test]
    fn duplicates_a_few_milliseconds_apart_collapse_to_one() {
        let a = StateChange {
            at: at(5),
            from: AlarmState::Ok,
            to: AlarmState::Alarm,
        };
        let b = StateChange {
            at: at(5) + Duration::milliseconds(300),
            ..a
        };
        assert_eq!(AlarmHistory::from_unordered(vec![b, a]).changes().len(), 1);
    }

    #[test]
    fn state_before_the_first_change_is_the_state_it_left() {
        let h = AlarmHistory::from_unordered(vec![StateChange {
            at: at(10),
            from: AlarmState::Ok,
            to: AlarmState::Alarm,
        }]);
        assert_eq!(
            h.state_at(at(0), AlarmState::InsufficientData),
            AlarmState::Ok
        );
        assert_eq!(
            h.state_at(at(10), AlarmState::InsufficientData),
            AlarmState::Alarm
        );
        assert_eq!(h.changes_between(at(0), at(10)).len(), 1);
        assert_eq!(h.changes_between(at(10), at(20)).len(), 0);
    }
}
