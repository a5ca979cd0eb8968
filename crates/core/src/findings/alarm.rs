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

/// Nothing behind the load balancer moved, yet the alarm breached: its
/// threshold sits inside the metric's normal range. Decided only when the
/// attribution found no group that changed; the metric's spread over the
/// window read is the evidence, and the alarm itself is what to change.
pub fn threshold_inside_normal_range(
    found: &super::attribution::Attribution,
    metric: Option<&crate::evidence::model::MetricSeries>,
    threshold: f64,
    unit: &str,
) -> Option<Finding> {
    use super::attribution::{BaselineSource, Outcome};
    use crate::evidence::model::with_unit;
    if found.outcome != Outcome::NothingChanged {
        return None;
    }
    let mut values: Vec<f64> = metric
        .map(|m| m.points.iter().map(|(_, v)| *v).collect())
        .unwrap_or_default();
    values.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        (!values.is_empty()).then(|| values[((values.len() - 1) as f64 * q).round() as usize])
    };
    let (low, middle, high) = (quantile(0.1), quantile(0.5), quantile(0.9));
    let range = match (low, middle, high) {
        (Some(l), Some(m), Some(h)) => format!(
            "{} (10th to 90th percentile {} to {})",
            with_unit(m, unit),
            with_unit(l, unit),
            with_unit(h, unit)
        ),
        _ => "not read".to_owned(),
    };
    let throughout = found.baseline.source == BaselineSource::EarlyWindow;
    let summary = if throughout {
        format!(
            "No target group moved, and the alarm's metric sat on the breaching side of {} for the whole window read (usually {range}): nothing changed; the threshold sits inside the metric's normal range.",
            with_unit(threshold, unit)
        )
    } else {
        format!(
            "No target group moved beyond its own noise, yet the alarm's metric crossed {} (usually {range}): the breach is the metric's ordinary variation, so the threshold sits inside its normal range.",
            with_unit(threshold, unit)
        )
    };
    let mut evidence = vec![
        Evidence::number("threshold", threshold, unit),
        Evidence::text("the metric over the window", range),
    ];
    if let Some(observed) = found.observed {
        evidence.push(Evidence::number(
            "the metric while breaching",
            observed,
            unit,
        ));
    }
    Some(Finding {
        evidence,
        ..Finding::decided(
            FindingId::ThresholdInsideNormalRange,
            "The alarm's threshold sits inside the metric's normal range (nothing changed)",
            Verdict::Supported,
            summary,
            Some(format!(
                "nothing changed: the threshold {} sits inside the metric's normal range ({})",
                with_unit(threshold, unit),
                middle.map_or("?".to_owned(), |m| format!(
                    "usually {}",
                    with_unit(m, unit)
                ))
            )),
        )
    })
}
