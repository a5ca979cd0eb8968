//! Flapping vs sustained vs one-off, from the alarm's state history.

use crate::classify::{Behaviour, Classification, human_duration};
use crate::diagnosis::{Evidence, Finding, FindingId, Verdict};

/// Flapping vs sustained vs one-off, from the alarm's state history.
///
/// Without the history only the notification's own transition is known, and
/// one transition cannot show a pattern: the finding is then inconclusive.
pub fn alarm_behaviour(classification: &Classification, history_known: bool) -> Finding {
    let f = &classification.figures;
    let mut evidence = vec![
        Evidence::number(
            "transitions in the last 1 h",
            f64::from(f.transitions_last_1h),
            "",
        ),
        Evidence::number(
            "transitions in the last 6 h",
            f64::from(f.transitions_last_6h),
            "",
        ),
        Evidence::number(
            "transitions in the last 24 h",
            f64::from(f.transitions_last_24h),
            "",
        ),
        Evidence::number("entries into ALARM", f64::from(f.alarm_cycles), ""),
        Evidence::number(
            "share of time in ALARM",
            (f.alarm_share * 1000.0).round() / 10.0,
            "%",
        ),
        Evidence::number("state-change score", f.percent_state_change, "%"),
        Evidence::number("flapping starts above", f.flap_start_percent, "%"),
        Evidence::number("flapping stops below", f.flap_stop_percent, "%"),
    ];
    if let Some(mean) = f.mean_alarm_episode_seconds {
        evidence.push(Evidence::text(
            "mean ALARM episode",
            human_duration(
                chrono::Duration::try_seconds(mean as i64).unwrap_or(chrono::Duration::MAX),
            ),
        ));
    }
    if let Some(start) = f.episode_started_at {
        evidence.push(Evidence::text(
            "current run of transitions started",
            start.format("%Y-%m-%d %H:%M UTC").to_string(),
        ));
    }
    let (verdict, summary, cause) = if !history_known {
        (
            Verdict::Inconclusive,
            format!(
                "Only this notification's transition is known (alarm history not collected); on that alone the alarm looks {}.",
                classification.behaviour.as_str()
            ),
            None,
        )
    } else if classification.behaviour == Behaviour::Flapping {
        (
            Verdict::Supported,
            format!("Flapping: {}.", classification.explanation),
            Some(format!(
                "{} into ALARM in {} h",
                crate::classify::plural(f.alarm_cycles, "entry"),
                f.lookback_seconds / 3600
            )),
        )
    } else {
        (
            Verdict::Refuted,
            format!(
                "Not flapping, {}: {}.",
                classification.behaviour.as_str(),
                classification.explanation
            ),
            Some(format!(
                "flapping: {} into ALARM in {} h, state-change score {:.0} %",
                crate::classify::plural(f.alarm_cycles, "entry"),
                f.lookback_seconds / 3600,
                f.percent_state_change
            )),
        )
    };
    Finding {
        evidence,
        series: vec![classification.timeline.clone()],
        ..Finding::decided(
            FindingId::AlarmFlapping,
            "The alarm is flapping (repeated OK/ALARM cycles) rather than a sustained breach or a one-off",
            verdict,
            summary,
            cause,
        )
    }
}

/// What the standing level is weighed on.
#[derive(Debug, Clone, Copy)]
pub struct StandingQuestion<'a> {
    /// When the symptom began, from the culprit's (or the alarm's) own series.
    pub onset: &'a crate::suspects::Onset,
    /// What the target-group breakdown concluded, when it ran.
    pub outcome: Option<super::attribution::Outcome>,
    /// The alarm's metric over the days CloudWatch keeps.
    pub history: Option<&'a crate::evidence::MetricHistory>,
    /// The alarm's metric over the window read, when the history was not.
    pub window: Option<&'a crate::evidence::model::MetricSeries>,
    pub threshold: f64,
    pub comparison: crate::alarm::facts::Comparison,
    pub unit: &'a str,
}

/// The share of the history on the breaching side, and what it spans.
struct Standing {
    share: f64,
    span: chrono::Duration,
    points: usize,
    p10: f64,
    p50: f64,
    p90: f64,
    p99: f64,
}

fn standing_of(q: &StandingQuestion<'_>) -> Option<Standing> {
    let points = match q.history {
        Some(h) if !h.series.points.is_empty() => &h.series.points,
        _ => &q.window?.points,
    };
    let (first, last) = (points.first()?.0, points.last()?.0);
    let mut values: Vec<f64> = points.iter().map(|(_, v)| *v).collect();
    let breaching = values
        .iter()
        .filter(|v| q.comparison.breaches(**v, q.threshold))
        .count();
    values.sort_by(f64::total_cmp);
    let quantile = |p: f64| values[((values.len() - 1) as f64 * p).round() as usize];
    Some(Standing {
        share: breaching as f64 / values.len() as f64,
        span: last - first,
        points: values.len(),
        p10: quantile(0.1),
        p50: quantile(0.5),
        p90: quantile(0.9),
        p99: quantile(0.99),
    })
}

/// A breaching side held this share of the history is the metric's usual level.
const STANDING_SHARE: f64 = 0.5;
/// ... when the history read spans at least this long.
const MIN_STANDING_SPAN: chrono::Duration = chrono::Duration::hours(2);

/// Was it always like this? Asked of every alarm: the alarm's own metric
/// over the days CloudWatch keeps. Supported when nothing moved into the
/// breach (no group changed, the symptom's series has no onset) or the
/// metric sat on the breaching side for most of the history; refuted, with
/// the numbers, when the metric moved; inconclusive when neither was read.
pub fn standing_level(q: &StandingQuestion<'_>) -> Finding {
    use super::attribution::Outcome;
    use crate::evidence::model::with_unit;
    use crate::suspects::Onset;
    let unit = q.unit;
    let standing = standing_of(q);
    let read = standing.as_ref().map(|s| {
        format!(
            "{} of the {} read ({} periods)",
            percent(s.share),
            human_duration(s.span),
            s.points
        )
    });
    let range = standing.as_ref().map(|s| {
        format!(
            "usually {} (10th to 90th percentile {} to {}, 99th {})",
            with_unit(s.p50, unit),
            with_unit(s.p10, unit),
            with_unit(s.p90, unit),
            with_unit(s.p99, unit)
        )
    });
    // "Always" needs a history well beyond the breach itself.
    let mostly = standing
        .as_ref()
        .is_some_and(|s| s.share >= STANDING_SHARE && s.span >= MIN_STANDING_SPAN);
    let moved = match (q.onset, q.outcome) {
        (_, Some(Outcome::Culprits | Outcome::Shared)) => true,
        (
            Onset::Moved {
                from_the_first_period: false,
                ..
            },
            _,
        ) => true,
        (Onset::Moved { .. }, _) => !mostly,
        _ => false,
    };
    let nothing_moved =
        matches!(q.onset, Onset::DidNotMove { .. }) || q.outcome == Some(Outcome::NothingChanged);
    let threshold = with_unit(q.threshold, unit);
    let (verdict, summary, clause) = if moved {
        let how = match q.onset {
            Onset::Moved {
                at,
                baseline,
                level,
                ..
            } => format!(
                "it moved from {} to {} at {}",
                with_unit(*baseline, unit),
                with_unit(*level, unit),
                at.format("%H:%M UTC")
            ),
            _ => "a target group moved into the breach".to_owned(),
        };
        (
            Verdict::Refuted,
            format!(
                "Not the metric's usual level: {how}; over the days read it was on the breaching side of {threshold} {}.",
                read.as_deref()
                    .unwrap_or("for an unknown share of the time")
            ),
            Some(format!("standing level: {how}")),
        )
    } else if nothing_moved || mostly {
        let why = if mostly {
            format!(
                "The alarm's metric sat on the breaching side of {threshold} {}",
                read.as_deref().unwrap_or_default()
            )
        } else {
            format!(
                "Nothing moved into the breach: crossing {threshold} is the metric's ordinary variation"
            )
        };
        (
            Verdict::Supported,
            format!(
                "{why}{}: nothing changed; the threshold sits inside the metric's normal range.",
                range
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
            Some(format!(
                "nothing changed: the threshold {threshold} sits inside the metric's normal range ({})",
                standing.as_ref().map_or("?".to_owned(), |s| format!(
                    "usually {}",
                    with_unit(s.p50, unit)
                ))
            )),
        )
    } else {
        (
            Verdict::Inconclusive,
            "Whether the metric always sat at this level could not be told: neither its history nor its onset was read.".to_owned(),
            None,
        )
    };
    let mut evidence = vec![Evidence::number("threshold", q.threshold, unit)];
    if let Some(read) = &read {
        evidence.push(Evidence::text("on the breaching side", read.clone()));
    }
    if let Some(range) = range {
        evidence.push(Evidence::text("the metric over the days read", range));
    }
    Finding {
        evidence,
        ..Finding::decided(
            FindingId::ThresholdInsideNormalRange,
            "The alarm's threshold sits inside the metric's normal range (nothing changed)",
            verdict,
            summary,
            clause,
        )
    }
}

fn percent(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alarm::facts::Comparison;
    use crate::evidence::MetricHistory;
    use crate::evidence::model::MetricSeries;
    use crate::suspects::Onset;
    use chrono::{Duration, TimeZone, Utc};

    /// Three days at `value(i)` every 5 minutes.
    fn history(value: impl Fn(i64) -> f64) -> MetricHistory {
        let start = Utc.with_ymd_and_hms(2026, 11, 28, 0, 0, 0).unwrap();
        MetricHistory {
            series: MetricSeries {
                id: "alarm_stat".into(),
                points: (0..864)
                    .map(|i| (start + Duration::minutes(5 * i), value(i)))
                    .collect(),
            },
            period_seconds: 300,
        }
    }

    fn question<'a>(onset: &'a Onset, history: &'a MetricHistory) -> StandingQuestion<'a> {
        StandingQuestion {
            onset,
            outcome: None,
            history: Some(history),
            window: None,
            threshold: 1.2,
            comparison: Comparison::GreaterThan,
            unit: "s",
        }
    }

    #[test]
    fn a_metric_above_the_threshold_for_days_is_the_standing_level_with_the_days_read() {
        let days = history(|i| 1.6 + 0.01 * (i % 5) as f64);
        let onset = Onset::DidNotMove { level: 1.6 };
        let f = standing_level(&question(&onset, &days));
        assert_eq!(f.verdict, Verdict::Supported);
        assert!(
            f.summary.contains("100 % of the 2 d 23 h read"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("99th 1.64 s"), "{}", f.summary);
    }

    #[test]
    fn a_metric_that_moved_is_not_the_standing_level_and_says_by_how_much() {
        let days = history(|i| if i > 850 { 2.0 } else { 0.3 });
        let onset = Onset::Moved {
            at: Utc.with_ymd_and_hms(2026, 11, 30, 23, 10, 0).unwrap(),
            baseline: 0.3,
            level: 2.0,
            from_the_first_period: false,
        };
        let f = standing_level(&question(&onset, &days));
        assert_eq!(f.verdict, Verdict::Refuted);
        assert!(
            f.ruled_out_by.as_deref().is_some_and(
                |r| r.starts_with("standing level: it moved from 0.3 s to 2 s at 23:10 UTC")
            ),
            "{:?}",
            f.ruled_out_by
        );
    }

    #[test]
    fn a_series_high_since_the_window_began_but_not_for_days_moved() {
        let days = history(|i| if i > 800 { 2.0 } else { 0.3 });
        let onset = Onset::Moved {
            at: Utc.with_ymd_and_hms(2026, 11, 30, 18, 0, 0).unwrap(),
            baseline: 0.3,
            level: 2.0,
            from_the_first_period: true,
        };
        assert_eq!(
            standing_level(&question(&onset, &days)).verdict,
            Verdict::Refuted
        );
    }

    #[test]
    fn without_history_or_onset_nothing_is_claimed() {
        let onset = Onset::Unknown;
        let unused = history(|_| 0.0);
        let q = StandingQuestion {
            history: None,
            ..question(&onset, &unused)
        };
        assert_eq!(standing_level(&q).verdict, Verdict::Inconclusive);
    }
}
