//! "Seen before": each posted diagnosis leaves a compact record under its
//! alarm and under its culprit (kept 90 days, the last 20 each); the next
//! diagnosis reads both and says on its first message whether this is new
//! ("First time in 90 days") or a repeat ("4th time in 7 days; the same
//! cause (per-process ceiling) each time"), with links to the earlier threads.

use std::future::Future;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::diagnosis::finding::Role;
use crate::diagnosis::{Diagnosis, FindingId};
use crate::error::Result;
use crate::render::slack::escape;

/// Records kept per alarm and per culprit.
pub const KEPT_RECORDS: usize = 20;
/// How long records are kept.
pub const KEPT_FOR: Duration = Duration::days(90);
/// The window "n-th time" counts over.
pub const RECENT: Duration = Duration::days(7);

/// One posted diagnosis, compactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeenRecord {
    pub diagnosis_id: String,
    pub alarm: String,
    pub at: DateTime<Utc>,
    /// Its causes, in causal order.
    pub causes: Vec<FindingId>,
    pub severity: String,
    /// Where its first message is, for a link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
}

impl SeenRecord {
    pub fn of(d: &Diagnosis, at: DateTime<Utc>) -> Self {
        SeenRecord {
            diagnosis_id: d.id.as_str().to_owned(),
            alarm: d.alarm.name.clone(),
            at,
            causes: d
                .findings
                .iter()
                .filter(|f| f.role == Role::Cause)
                .map(|f| f.id.clone())
                .collect(),
            severity: d.severity.as_str().to_owned(),
            channel_id: None,
            ts: None,
        }
    }
}

/// `seen|alarm|<alarm ARN or name>` and `seen|culprit|<culprit>`.
pub fn alarm_key(d: &Diagnosis) -> String {
    let alarm = d
        .alarm
        .arn
        .as_ref()
        .map_or_else(|| d.alarm.name.clone(), ToString::to_string);
    format!("seen|alarm|{alarm}")
}

pub fn culprit_key(culprit: &str) -> String {
    format!("seen|culprit|{culprit}")
}

/// Port: the records, newest last.
pub trait SeenStore: Send + Sync {
    fn history(&self, key: &str) -> impl Future<Output = Result<Vec<SeenRecord>>> + Send;

    /// Adds `record` (once: a record with its diagnosis id replaces it), keeping the newest [`KEPT_RECORDS`].
    fn append(
        &self,
        key: &str,
        record: &SeenRecord,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// `history` with `record` added (replacing one of the same diagnosis), newest last, bounded.
pub fn appended(
    history: &[SeenRecord],
    record: &SeenRecord,
    now: DateTime<Utc>,
) -> Vec<SeenRecord> {
    let mut kept: Vec<SeenRecord> = history
        .iter()
        .filter(|r| r.diagnosis_id != record.diagnosis_id && r.at > now - KEPT_FOR)
        .cloned()
        .collect();
    kept.push(record.clone());
    kept.sort_by_key(|r| r.at);
    let excess = kept.len().saturating_sub(KEPT_RECORDS);
    kept.drain(..excess);
    kept
}

/// The first-message line for `d`, from its alarm's and its culprit's records.
pub fn seen_line(
    d: &Diagnosis,
    alarm_history: &[SeenRecord],
    culprit_history: &[SeenRecord],
    culprit: &str,
    now: DateTime<Utc>,
) -> String {
    let earlier: Vec<&SeenRecord> = alarm_history
        .iter()
        .filter(|r| r.diagnosis_id != d.id.as_str() && r.at <= now)
        .collect();
    let recent: Vec<&SeenRecord> = earlier
        .iter()
        .copied()
        .filter(|r| r.at > now - RECENT)
        .collect();
    if recent.is_empty() {
        let others: Vec<&str> = culprit_history
            .iter()
            .filter(|r| r.alarm != d.alarm.name && r.at > now - RECENT && r.at <= now)
            .map(|r| r.alarm.as_str())
            .collect();
        let mut others_dedup = others.clone();
        others_dedup.sort_unstable();
        others_dedup.dedup();
        let about = culprit.split_once(':').map_or(culprit, |(_, c)| c);
        return match (earlier.last(), others_dedup.len()) {
            (Some(last), _) => format!(
                "First time in 7 days (last seen {} days ago)",
                (now - last.at).num_days()
            ),
            (None, 0) => "First time in 90 days".to_owned(),
            (None, n) => format!(
                "First time for this alarm; {n} other alarm{} about {} in 7 days",
                if n == 1 { "" } else { "s" },
                escape(about)
            ),
        };
    }
    let this_cause = d
        .findings
        .iter()
        .find(|f| f.role == Role::Cause)
        .map(|f| f.id.clone());
    let mut line = format!("{} time in 7 days", ordinal(recent.len() + 1));
    match &this_cause {
        Some(cause) if recent.iter().all(|r| r.causes.first() == Some(cause)) => {
            line.push_str(&format!(
                "; the same cause ({}) each time",
                escape(cause.title())
            ));
        }
        Some(_) => {
            let mut before: Vec<&str> = recent
                .iter()
                .map(|r| r.causes.first().map_or("no cause", FindingId::title))
                .collect();
            before.sort_unstable();
            before.dedup();
            line.push_str(&format!(
                "; causes differed (before: {})",
                escape(&before.join(", "))
            ));
        }
        None => {}
    }
    let links: Vec<String> = recent
        .iter()
        .rev()
        .filter_map(|r| link(r))
        .take(3)
        .collect();
    if !links.is_empty() {
        line.push_str(&format!(" · earlier: {}", links.join(", ")));
    }
    line
}

/// A link to an earlier first message, labelled with its time.
fn link(record: &SeenRecord) -> Option<String> {
    let (channel, ts) = (record.channel_id.as_deref()?, record.ts.as_deref()?);
    let plain = |s: &str, extra: char| s.chars().all(|c| c.is_ascii_alphanumeric() || c == extra);
    if !plain(channel, '_') || !plain(ts, '.') {
        return None;
    }
    Some(format!(
        "<https://slack.com/archives/{channel}/p{}|{}>",
        ts.replace('.', ""),
        record.at.format("%b %-d %H:%M")
    ))
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnosis() -> Diagnosis {
        let mut d = alarm_triage_core::fixtures::sample();
        d.findings[0].role = Role::Cause;
        d
    }

    fn record(
        d: &Diagnosis,
        id: &str,
        days_ago: i64,
        cause: FindingId,
        now: DateTime<Utc>,
    ) -> SeenRecord {
        SeenRecord {
            diagnosis_id: id.into(),
            alarm: d.alarm.name.clone(),
            at: now - Duration::days(days_ago),
            causes: vec![cause],
            severity: "warning".into(),
            channel_id: Some("C0ALERTS01".into()),
            ts: Some(format!("170000000{days_ago}.000100")),
        }
    }

    #[test]
    fn a_repeat_names_how_often_and_whether_the_cause_was_the_same() {
        let d = diagnosis();
        let now = d.generated_at;
        let cause = d.findings[0].id.clone();
        let history = [
            record(&d, "dx-a", 5, cause.clone(), now),
            record(&d, "dx-b", 3, cause.clone(), now),
            record(&d, "dx-c", 1, cause.clone(), now),
            record(&d, "dx-old", 30, FindingId::TargetErrors, now),
        ];
        let line = seen_line(&d, &history, &[], "service:shop/checkout", now);
        assert!(
            line.starts_with(&format!("4th time in 7 days; the same cause ({}) each time · earlier: <https://slack.com/archives/C0ALERTS01/p17000000010001", cause.title())),
            "{line}"
        );
        let mixed = [record(&d, "dx-a", 2, FindingId::TargetErrors, now)];
        let line = seen_line(&d, &mixed, &[], "service:shop/checkout", now);
        assert!(
            line.starts_with(
                "2nd time in 7 days; causes differed (before: errors from the targets)"
            ),
            "{line}"
        );
    }

    #[test]
    fn a_first_time_says_so_and_mentions_other_alarms_about_the_culprit() {
        let d = diagnosis();
        let now = d.generated_at;
        assert_eq!(
            seen_line(&d, &[], &[], "service:shop/checkout", now),
            "First time in 90 days"
        );
        let mut other = record(&d, "dx-x", 1, FindingId::TargetErrors, now);
        other.alarm = "checkout-5xx".into();
        assert_eq!(
            seen_line(&d, &[], &[other], "service:shop/checkout", now),
            "First time for this alarm; 1 other alarm about shop/checkout in 7 days"
        );
        let old = [record(&d, "dx-old", 12, FindingId::TargetErrors, now)];
        assert_eq!(
            seen_line(&d, &old, &[], "service:shop/checkout", now),
            "First time in 7 days (last seen 12 days ago)"
        );
    }

    #[test]
    fn the_diagnosis_itself_and_a_retry_count_once() {
        let d = diagnosis();
        let now = d.generated_at;
        let mine = SeenRecord::of(&d, now);
        assert_eq!(
            seen_line(&d, std::slice::from_ref(&mine), &[], "c", now),
            "First time in 90 days"
        );
        let twice = appended(&appended(&[], &mine, now), &mine, now);
        assert_eq!(twice.len(), 1);
        let many: Vec<SeenRecord> = (0..30)
            .map(|i| SeenRecord {
                diagnosis_id: format!("dx-{i}"),
                at: now - Duration::hours(30 - i),
                ..mine.clone()
            })
            .collect();
        let bounded = appended(&many, &mine, now);
        assert_eq!(bounded.len(), KEPT_RECORDS);
        assert_eq!(bounded.last().unwrap().diagnosis_id, mine.diagnosis_id);
    }

    #[test]
    fn ordinals_read_as_english() {
        let words: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22]
            .into_iter()
            .map(ordinal)
            .collect();
        assert_eq!(
            words,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd"
            ]
        );
    }
}
