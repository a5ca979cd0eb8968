//! When the symptom began: the change point in the culprit's own series of
//! the alarm's metric, not the alarm's transition (which lags it by the
//! evaluation periods, and by much more for a slow drift).
//!
//! The breach sets the level; the series before it sets the baseline. The
//! onset is the first period of the run of periods that left the baseline by
//! more than a third of the way to the breach's level and led, with at most
//! a few calm periods between, into the breach. For a flapping alarm the
//! episode's earlier bursts belong to the same symptom: the onset is the
//! first of them.
//!
//! A symptom can also rise in steps: a dependency that starts failing a few
//! percent of calls, then more. The first step is where the symptom began,
//! even when it is only a small part of the way to the breach's level, as
//! long as it stands well clear of the baseline's own noise and the series
//! stays up from there into the breach. A change that lands between the steps
//! did not start the symptom.

use chrono::{DateTime, Duration, Utc};

use crate::evidence::model::MetricSeries;
use crate::series::median;

/// A period counts as "moved" past this share of the way from the baseline to the breach's level.
const DEPARTURE_SHARE: f64 = 0.35;
/// Calm periods a run may contain and still be one run.
const MAX_CALM_PERIODS: i32 = 3;
/// A level this close to the baseline (relative) has not moved.
const RELATIVE_MOVE: f64 = 0.2;
/// Fewest points a baseline of its own may rest on.
const MIN_BASELINE_POINTS: usize = 5;
/// An earlier step counts past this share of the way from the baseline to the breach's level...
const STEP_SHARE: f64 = 0.1;
/// ... and past this many robust deviations (scaled median absolute deviation) of the periods before it.
const NOISE_DEVIATIONS: f64 = 5.0;
/// Fewest raised periods an earlier step holds: a spike is not a step.
const MIN_STEP_PERIODS: usize = 5;
/// Share of the periods from an earlier step to the steeper rise that stay raised.
const STEP_HELD_SHARE: f64 = 0.7;

/// The series and the breach it led to.
#[derive(Debug, Clone, Copy)]
pub struct SymptomSeries<'a> {
    pub series: &'a MetricSeries,
    /// The series' usual level before the breach, when the breakdown knows it.
    pub baseline: Option<f64>,
    /// The breaching periods, oldest first.
    pub breach: &'a [DateTime<Utc>],
    /// A flapping episode's first transition: its earlier bursts are the same symptom.
    pub episode_start: Option<DateTime<Utc>>,
    pub period_seconds: u32,
}

/// When the symptom began.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Onset {
    /// The series left `baseline` at `at` and reached `level` in the breach.
    Moved {
        at: DateTime<Utc>,
        baseline: f64,
        level: f64,
        /// The series was already away from its baseline at the first period read.
        from_the_first_period: bool,
    },
    /// The series sat at the breach's level before it: nothing moved.
    DidNotMove { level: f64 },
    /// Too little of the series to say.
    #[default]
    Unknown,
}

impl Onset {
    pub fn at(&self) -> Option<DateTime<Utc>> {
        match self {
            Onset::Moved { at, .. } => Some(*at),
            _ => None,
        }
    }
}

/// The first period of the last run of breaching periods (calm gaps of up to two periods allowed).
fn run_start(breach: &[DateTime<Utc>], period: Duration) -> Option<DateTime<Utc>> {
    let mut start = *breach.last()?;
    for at in breach.iter().rev().skip(1) {
        if start - *at > period * 3 {
            break;
        }
        start = *at;
    }
    Some(start)
}

/// Finds the symptom's onset.
pub fn find(symptom: &SymptomSeries<'_>) -> Onset {
    let period = Duration::seconds(i64::from(symptom.period_seconds.max(1)));
    let points = &symptom.series.points;
    let Some(start) = run_start(symptom.breach, period) else {
        return Onset::Unknown;
    };
    let mut during: Vec<f64> = symptom
        .breach
        .iter()
        .filter(|t| **t >= start)
        .filter_map(|t| symptom.series.at(*t))
        .collect();
    let Some(level) = median(&mut during) else {
        return Onset::Unknown;
    };
    let baseline = match symptom.baseline {
        Some(b) => b,
        None => {
            let guard = start - period * 10;
            let mut before: Vec<f64> = points
                .iter()
                .filter(|(t, _)| *t < guard)
                .map(|(_, v)| *v)
                .collect();
            if before.len() < MIN_BASELINE_POINTS {
                return Onset::Unknown;
            }
            median(&mut before).unwrap_or(level)
        }
    };
    let moved = level - baseline;
    if moved.abs() <= RELATIVE_MOVE * baseline.abs() || moved.abs() < f64::EPSILON {
        return Onset::DidNotMove { level };
    }
    let cut = baseline + DEPARTURE_SHARE * moved;
    let departed = |v: f64| if moved > 0.0 { v > cut } else { v < cut };
    let Some(last) = points
        .iter()
        .rposition(|(t, _)| *t <= *symptom.breach.last().unwrap_or(&start))
    else {
        return Onset::Unknown;
    };
    let mut onset = points[last].0;
    for (t, v) in points[..=last].iter().rev() {
        if onset - *t > period * (MAX_CALM_PERIODS + 1) {
            break;
        }
        if departed(*v) {
            onset = *t;
        }
    }
    // A flapping episode's earlier bursts are the same symptom.
    if let Some(episode) = symptom.episode_start.filter(|e| *e < onset) {
        let lead = episode - period * 10;
        if let Some((t, _)) = points
            .iter()
            .find(|(t, v)| *t >= lead && *t < onset && departed(*v))
        {
            onset = *t;
        }
    }
    if let Some(step) = earlier_step(points, onset, baseline, moved, period) {
        onset = step;
    }
    let from_the_first_period = points.first().is_some_and(|(t, _)| *t >= onset);
    Onset::Moved {
        at: onset,
        baseline,
        level,
        from_the_first_period,
    }
}

/// The first period of a lower step that led, without returning to the
/// baseline, into the rise that starts at `onset`; `None` when there is none.
fn earlier_step(
    points: &[(DateTime<Utc>, f64)],
    onset: DateTime<Utc>,
    baseline: f64,
    moved: f64,
    period: Duration,
) -> Option<DateTime<Utc>> {
    let before: Vec<(DateTime<Utc>, f64)> =
        points.iter().filter(|(t, _)| *t < onset).copied().collect();
    if before.len() < MIN_BASELINE_POINTS + MIN_STEP_PERIODS {
        return None;
    }
    // The baseline's noise from every earlier period: the median absolute
    // deviation stands while fewer than half of them belong to a step.
    let mut deviations: Vec<f64> = before.iter().map(|(_, v)| (v - baseline).abs()).collect();
    let noise = 1.4826 * median(&mut deviations)?;
    let clearance = (STEP_SHARE * moved.abs())
        .max(NOISE_DEVIATIONS * noise)
        .max(RELATIVE_MOVE * baseline.abs());
    let raised = |v: f64| (v - baseline) * moved.signum() > clearance;
    let mut start = onset;
    let mut held = 0usize;
    for (t, v) in before.iter().rev() {
        if start - *t > period * (MAX_CALM_PERIODS + 1) {
            break;
        }
        if raised(*v) {
            start = *t;
            held += 1;
        }
    }
    let spanned = before.iter().filter(|(t, _)| *t >= start).count();
    let step_held = held >= MIN_STEP_PERIODS && held as f64 >= STEP_HELD_SHARE * spanned as f64;
    step_held.then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap()
    }

    fn minute(i: i64) -> DateTime<Utc> {
        t0() + Duration::minutes(i)
    }

    /// 120 minutes: `value(i)` at minute i.
    fn series(value: impl Fn(i64) -> f64) -> MetricSeries {
        MetricSeries {
            id: "m".into(),
            points: (0..120).map(|i| (minute(i), value(i))).collect(),
        }
    }

    fn breach_from(i: i64, to: i64) -> Vec<DateTime<Utc>> {
        (i..to).map(minute).collect()
    }

    /// The onset of `s` breaching at `breach`, one-minute periods.
    fn onset_of(
        s: &MetricSeries,
        breach: &[DateTime<Utc>],
        baseline: Option<f64>,
        episode_start: Option<DateTime<Utc>>,
    ) -> Onset {
        find(&SymptomSeries {
            series: s,
            baseline,
            breach,
            episode_start,
            period_seconds: 60,
        })
    }

    #[test]
    fn a_step_is_found_where_it_happened_not_where_the_alarm_fired() {
        let s = series(|i| if i >= 90 { 1.2 } else { 0.1 });
        let breach = breach_from(92, 120);
        let onset = onset_of(&s, &breach, None, None);
        assert_eq!(onset.at(), Some(minute(90)));
    }

    #[test]
    fn a_ramp_begins_where_it_leaves_the_baseline_by_a_third() {
        // Flat 0.1 until 60, then +0.02 a minute: 1.3 at 120.
        let s = series(|i| {
            if i < 60 {
                0.1
            } else {
                0.1 + 0.02 * (i - 60) as f64
            }
        });
        let breach = breach_from(100, 120);
        let Onset::Moved { at, .. } = onset_of(&s, &breach, None, None) else {
            panic!("a ramp moves")
        };
        assert!(at > minute(60) && at < minute(100), "{at}");
    }

    #[test]
    fn a_series_at_the_breach_level_all_along_did_not_move() {
        let s = series(|i| 0.55 + 0.01 * ((i % 3) as f64));
        let breach = breach_from(100, 120);
        let onset = onset_of(&s, &breach, None, None);
        assert!(matches!(onset, Onset::DidNotMove { .. }), "{onset:?}");
    }

    #[test]
    fn a_flapping_episode_begins_at_its_first_burst() {
        let s = series(|i| if i % 20 < 4 && i >= 30 { 1.5 } else { 0.2 });
        let breach: Vec<_> = (0..120)
            .filter(|i| i % 20 < 4 && *i >= 30)
            .map(minute)
            .collect();
        let onset = onset_of(&s, &breach, Some(0.2), Some(minute(41)));
        assert_eq!(onset.at(), Some(minute(40)));
    }

    #[test]
    fn a_short_calm_inside_the_run_does_not_end_it() {
        let s = series(|i| {
            if i >= 80 && !(95..97).contains(&i) {
                1.0
            } else {
                0.1
            }
        });
        let breach = breach_from(100, 120);
        let onset = onset_of(&s, &breach, None, None);
        assert_eq!(onset.at(), Some(minute(80)));
    }

    #[test]
    fn a_symptom_that_rose_in_two_steps_began_at_the_first() {
        // 1 a minute, 45 from minute 75 (a dependency failing a few calls),
        // 210 from minute 110 (failing more): the symptom began at 75.
        let s = series(|i| match i {
            i if i >= 110 => 210.0 + (i % 3) as f64,
            i if i >= 75 => 45.0 + (i % 4) as f64,
            i => 1.0 + (i % 2) as f64,
        });
        let breach = breach_from(112, 120);
        assert_eq!(onset_of(&s, &breach, None, None).at(), Some(minute(75)));
        assert_eq!(
            onset_of(&s, &breach, Some(1.0), None).at(),
            Some(minute(75))
        );
    }

    #[test]
    fn noise_and_lone_spikes_before_a_rise_are_not_a_step() {
        // A noisy baseline (0 to 30 a minute) with two lone spikes to 60, then 210.
        let s = series(|i| match i {
            i if i >= 110 => 210.0,
            70 | 85 => 60.0,
            i => ((i * 7) % 31) as f64,
        });
        let breach = breach_from(112, 120);
        assert_eq!(onset_of(&s, &breach, None, None).at(), Some(minute(110)));
    }

    #[test]
    fn a_step_that_returned_to_the_baseline_is_an_earlier_episode_not_the_onset() {
        let s = series(|i| match i {
            i if i >= 110 => 210.0,
            i if (40..60).contains(&i) => 45.0,
            _ => 1.0,
        });
        let breach = breach_from(112, 120);
        assert_eq!(onset_of(&s, &breach, None, None).at(), Some(minute(110)));
    }

    #[test]
    fn a_falling_metric_steps_down_too() {
        // Healthy hosts: 12, then 8 from minute 60, then 2 from minute 100.
        let s = series(|i| match i {
            i if i >= 100 => 2.0,
            i if i >= 60 => 8.0,
            _ => 12.0,
        });
        let breach = breach_from(102, 120);
        assert_eq!(onset_of(&s, &breach, None, None).at(), Some(minute(60)));
    }

    #[test]
    fn no_breach_no_onset() {
        let s = series(|_| 0.1);
        let onset = onset_of(&s, &[], None, None);
        assert_eq!(onset, Onset::Unknown);
    }
}
