//! Is the alarm flapping, in a sustained breach, a one-off, or over?
//!
//! The flapping test is the one Nagios uses for hosts and services, adapted to
//! alarm history: rebuild the alarm's state as a sequence of samples, score the
//! share of sample intervals in which the state changed (newer intervals weigh
//! more, from 0.8 to 1.2), and apply hysteresis: flapping starts when the score
//! rises above a high threshold and only ends when it falls below a low one, so
//! one quiet interval does not flip the verdict.
//!
//! Sampling at the alarm's own period would make 21 samples cover 21 minutes,
//! too short to see the 20-40 minute cycles real flapping has. Samples are
//! therefore spaced so that the scoring window spans [`ClassifierConfig::flap_window`]
//! (6 h by default), and never closer than one evaluation window of the alarm.
//! An interval counts as changed when any transition happened inside it, so
//! short ALARM episodes between two samples are not lost.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::alarm::AlarmState;
use crate::history::AlarmHistory;
use crate::instants::{earlier, later, times};
use crate::series::Series;

/// The thresholds and windows of the classifier. Defaults are documented in `docs/classification.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassifierConfig {
    /// How far back history is read and figures are computed.
    pub lookback_seconds: u64,
    /// How many samples the percent-state-change score looks at (Nagios: 21).
    pub samples: usize,
    /// The span the samples cover.
    pub flap_window_seconds: u64,
    /// Flapping starts when the score rises above this (percent).
    pub flap_start_percent: f64,
    /// Flapping ends when the score falls below this (percent).
    pub flap_stop_percent: f64,
    /// An ALARM episode (including the breaching datapoints that raised it)
    /// at least this long is a sustained breach rather than a blip.
    pub sustained_after_seconds: u64,
    /// Transitions further apart than this belong to different episodes of activity.
    pub episode_quiet_gap_seconds: u64,
    /// A burst of this many entries into ALARM ...
    pub flap_burst_entries: u32,
    /// ... within this window (or six evaluation windows of the alarm, if
    /// longer) is flapping, however quiet the hours before: the score's
    /// 18-minute samples would see a dense burst as one or two changes.
    pub flap_burst_window_seconds: u64,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            lookback_seconds: 24 * 3600,
            samples: 21,
            flap_window_seconds: 6 * 3600,
            flap_start_percent: 30.0,
            flap_stop_percent: 15.0,
            sustained_after_seconds: 10 * 60,
            episode_quiet_gap_seconds: 2 * 3600,
            flap_burst_entries: 3,
            flap_burst_window_seconds: 3600,
        }
    }
}

/// How the alarm evaluates, as far as classification cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlarmTiming {
    pub period_seconds: u32,
    pub evaluation_periods: u32,
    pub datapoints_to_alarm: u32,
}

impl AlarmTiming {
    /// CloudWatch's defaults when a notification does not say (composite alarms).
    pub const UNKNOWN: AlarmTiming = AlarmTiming {
        period_seconds: 60,
        evaluation_periods: 1,
        datapoints_to_alarm: 1,
    };
}

/// The four behaviours an alarm can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Behaviour {
    /// Going in and out of ALARM repeatedly.
    Flapping,
    /// In ALARM for long enough to be a real breach.
    Sustained,
    /// A single short excursion, not (yet) a pattern.
    Transient,
    /// Back to OK after a real breach.
    Recovered,
}

impl Behaviour {
    pub fn as_str(self) -> &'static str {
        match self {
            Behaviour::Flapping => "flapping",
            Behaviour::Sustained => "sustained",
            Behaviour::Transient => "transient",
            Behaviour::Recovered => "recovered",
        }
    }
}

/// The numbers a classification rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub transitions_last_1h: u32,
    pub transitions_last_6h: u32,
    pub transitions_last_24h: u32,
    /// Entries into ALARM within the lookback.
    pub alarm_cycles: u32,
    /// Share of the lookback spent in ALARM, 0..1.
    pub alarm_share: f64,
    pub mean_alarm_episode_seconds: Option<f64>,
    pub current_state: AlarmState,
    pub current_state_since: Option<DateTime<Utc>>,
    /// Weighted percent state change now, 0..100.
    pub percent_state_change: f64,
    pub flap_start_percent: f64,
    pub flap_stop_percent: f64,
    pub sample_interval_seconds: u64,
    /// First transition of the current run of activity (no gap longer than the
    /// quiet gap since): when "the problem" started, for deploy correlation.
    pub episode_started_at: Option<DateTime<Utc>>,
    pub lookback_seconds: u64,
}

/// The classifier's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    pub behaviour: Behaviour,
    /// One sentence with the deciding numbers.
    pub explanation: String,
    pub figures: Figures,
    /// Share of each sample interval spent in ALARM, oldest first, for a sparkline.
    pub timeline: Series,
}

/// What a non-flapping alarm's last episode says, for [`classify`].
struct Steady {
    current: AlarmState,
    /// How long the last (or current) ALARM episode lasted, with the
    /// breaching datapoints that raised it.
    last: Duration,
    /// Whether an episode was seen at all.
    known: bool,
    sustained_after: Duration,
    datapoints_to_alarm: u32,
    alarm_cycles: u32,
    lookback_hours: u64,
    score: f64,
}

fn not_flapping(s: &Steady) -> (Behaviour, String) {
    let Steady {
        current,
        last,
        known,
        sustained_after,
        datapoints_to_alarm,
        alarm_cycles,
        lookback_hours,
        score,
    } = *s;
    if current == AlarmState::Alarm {
        if last >= sustained_after {
            (
                Behaviour::Sustained,
                format!(
                    "breaching for {} (including the {} breaching datapoints that raised it) without recovering; state-change score {:.0}%",
                    human_duration(last),
                    datapoints_to_alarm,
                    score
                ),
            )
        } else {
            (
                Behaviour::Transient,
                format!(
                    "breaching for {} so far, {} into ALARM in {} h, state-change score {:.0}%: no pattern yet",
                    human_duration(last),
                    plural(alarm_cycles, "entry"),
                    lookback_hours,
                    score
                ),
            )
        }
    } else if !known {
        (
            Behaviour::Recovered,
            format!(
                "back to {current}; how long it was in ALARM is unknown (no history before this transition)"
            ),
        )
    } else if last >= sustained_after {
        (
            Behaviour::Recovered,
            format!(
                "back to {} after an ALARM episode of {}; state-change score {:.0}%",
                current,
                human_duration(last),
                score
            ),
        )
    } else {
        (
            Behaviour::Transient,
            format!(
                "back to {} after a {} excursion into ALARM; state-change score {:.0}%",
                current,
                human_duration(last),
                score
            ),
        )
    }
}

/// Classifies an alarm from its history.
///
/// `current` is the state the alarm is in now (the notification's new state);
/// `history` should already include the notification's own transition.
pub fn classify(
    history: &AlarmHistory,
    current: AlarmState,
    timing: AlarmTiming,
    config: &ClassifierConfig,
    now: DateTime<Utc>,
) -> Classification {
    let lookback = secs(config.lookback_seconds);
    let window_start = earlier(now, lookback);
    // Before this instant the state is unknown: shares and episodes only count known time.
    let known_from = history.known_from().unwrap_or(now).clamp(window_start, now);
    let changes = history.changes_between(DateTime::<Utc>::MIN_UTC, now);
    let count_since = |d: Duration| {
        u32::try_from(history.changes_between(earlier(now, d), now).len()).unwrap_or(u32::MAX)
    };

    let interval = sample_interval(timing, config);
    let (by_score, score) = flapping_with_hysteresis(history, interval, config, now);
    let burst_window = secs(config.flap_burst_window_seconds).max(times(
        secs(u64::from(timing.period_seconds) * u64::from(timing.evaluation_periods.max(1))),
        6,
    ));
    let burst_entries = u32::try_from(
        history
            .changes_between(earlier(now, burst_window), now)
            .iter()
            .filter(|c| c.to == AlarmState::Alarm)
            .count(),
    )
    .unwrap_or(u32::MAX);
    let in_a_burst = config.flap_burst_entries > 0 && burst_entries >= config.flap_burst_entries;
    let behaviour_is_flapping = by_score || in_a_burst;
    let episodes = alarm_episodes(history, current, known_from, now);
    let alarm_seconds: i64 = episodes
        .iter()
        .map(|e| (e.end - e.start).num_seconds())
        .sum();
    // The mean is over episodes that ended: the current one is still running
    // (at notification time it has barely begun) and would drag the mean to 0.
    let ended = if current == AlarmState::Alarm {
        &episodes[..episodes.len().saturating_sub(1)]
    } else {
        &episodes[..]
    };
    let ended_seconds: i64 = ended.iter().map(|e| (e.end - e.start).num_seconds()).sum();
    let mean_episode = (!ended.is_empty()).then(|| ended_seconds as f64 / ended.len() as f64);
    let alarm_cycles = u32::try_from(
        history
            .changes_between(window_start, now)
            .iter()
            .filter(|c| c.to == AlarmState::Alarm)
            .count(),
    )
    .unwrap_or(u32::MAX);
    let current_state_since = changes.last().map(|c| c.at);
    let pre_breach = secs(u64::from(timing.datapoints_to_alarm) * u64::from(timing.period_seconds));
    let sustained_after = secs(config.sustained_after_seconds);

    let figures = Figures {
        transitions_last_1h: count_since(Duration::hours(1)),
        transitions_last_6h: count_since(Duration::hours(6)),
        transitions_last_24h: count_since(Duration::hours(24)),
        alarm_cycles,
        alarm_share: round3(alarm_seconds as f64 / (now - known_from).num_seconds().max(1) as f64),
        mean_alarm_episode_seconds: mean_episode.map(|m| m.round()),
        current_state: current,
        current_state_since,
        percent_state_change: round1(score),
        flap_start_percent: config.flap_start_percent,
        flap_stop_percent: config.flap_stop_percent,
        sample_interval_seconds: interval.num_seconds().unsigned_abs(),
        episode_started_at: episode_start(history, secs(config.episode_quiet_gap_seconds), now),
        lookback_seconds: config.lookback_seconds,
    };

    let last_episode = episodes.last();
    let (behaviour, explanation) = if in_a_burst && !by_score {
        (
            Behaviour::Flapping,
            format!(
                "{} into ALARM in the last {}, each cleared in between: flapping (a burst of {} within {} is), though the 6 h state-change score is only {:.0}%",
                plural(burst_entries, "entry"),
                human_duration(burst_window),
                config.flap_burst_entries,
                human_duration(burst_window),
                score,
            ),
        )
    } else if behaviour_is_flapping {
        (
            Behaviour::Flapping,
            format!(
                "{} in 6 h and {} into ALARM in {} h; state-change score {:.0}% (flapping starts above {:.0}% and ends below {:.0}%)",
                plural(figures.transitions_last_6h, "transition"),
                plural(figures.alarm_cycles, "entry",),
                config.lookback_seconds / 3600,
                score,
                config.flap_start_percent,
                config.flap_stop_percent,
            ),
        )
    } else {
        not_flapping(&Steady {
            current,
            last: last_episode.map_or(Duration::zero(), |e| e.end - e.start) + pre_breach,
            known: last_episode.is_some(),
            sustained_after,
            datapoints_to_alarm: timing.datapoints_to_alarm,
            alarm_cycles: figures.alarm_cycles,
            lookback_hours: config.lookback_seconds / 3600,
            score,
        })
    };

    Classification {
        behaviour,
        explanation,
        figures,
        timeline: alarm_timeline(history, current, interval, window_start, known_from, now),
    }
}

fn secs(s: u64) -> Duration {
    Duration::seconds(i64::try_from(s).unwrap_or(i64::MAX / 1000))
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Sample spacing: the flap window split into `samples - 1` intervals, never
/// finer than one evaluation window of the alarm.
fn sample_interval(timing: AlarmTiming, config: &ClassifierConfig) -> Duration {
    let intervals = config.samples.saturating_sub(1).max(1) as u64;
    let from_window = config.flap_window_seconds / intervals;
    let evaluation = u64::from(timing.period_seconds) * u64::from(timing.evaluation_periods.max(1));
    secs(from_window.max(evaluation).max(1))
}

/// Walks the score forward through the lookback and applies hysteresis.
/// Returns whether the alarm is flapping now and the score now.
fn flapping_with_hysteresis(
    history: &AlarmHistory,
    interval: Duration,
    config: &ClassifierConfig,
    now: DateTime<Utc>,
) -> (bool, f64) {
    let intervals_per_score = config.samples.saturating_sub(1).max(1);
    let lookback_intervals = usize::try_from(
        (secs(config.lookback_seconds).num_seconds() / interval.num_seconds().max(1)).max(0),
    )
    .unwrap_or(0)
    .clamp(intervals_per_score, 10_000);
    // changed[i] is true when the state changed in (now - (i+1)*interval, now - i*interval];
    // index 0 is the newest interval.
    let changed: Vec<bool> = (0..lookback_intervals)
        .map(|i| {
            let end = earlier(now, times(interval, i));
            !history
                .changes_between(earlier(end, interval), end)
                .is_empty()
        })
        .collect();
    let weights: Vec<f64> = (0..intervals_per_score)
        .map(|age| 1.2 - 0.4 * age as f64 / (intervals_per_score.max(2) - 1) as f64)
        .collect();
    let total_weight: f64 = weights.iter().sum();
    let score_at = |newest: usize| {
        weights
            .iter()
            .enumerate()
            .map(|(age, w)| {
                if changed.get(newest + age).copied().unwrap_or(false) {
                    *w
                } else {
                    0.0
                }
            })
            .sum::<f64>()
            / total_weight
            * 100.0
    };
    let mut flapping = false;
    let mut score = 0.0;
    // From the oldest score whose window lies inside the lookback to now.
    let oldest = lookback_intervals.saturating_sub(intervals_per_score);
    for newest in (0..=oldest).rev() {
        score = score_at(newest);
        if !flapping && score > config.flap_start_percent {
            flapping = true;
        } else if flapping && score < config.flap_stop_percent {
            flapping = false;
        }
    }
    (flapping, score)
}

#[derive(Debug, Clone, Copy)]
struct Episode {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

/// ALARM intervals clipped to `[window_start, now]`, oldest first.
fn alarm_episodes(
    history: &AlarmHistory,
    current: AlarmState,
    window_start: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Vec<Episode> {
    let mut episodes = Vec::new();
    let mut state = history.state_at(window_start, current);
    let mut since = window_start;
    for change in history.changes_between(window_start, now) {
        if state == AlarmState::Alarm && change.to != AlarmState::Alarm {
            episodes.push(Episode {
                start: since,
                end: change.at,
            });
        }
        if change.to == AlarmState::Alarm && state != AlarmState::Alarm {
            since = change.at;
        }
        state = change.to;
    }
    if state == AlarmState::Alarm {
        episodes.push(Episode {
            start: since,
            end: now,
        });
    }
    episodes
}

/// The first transition of the current run of activity: walk back from the
/// newest change while the gaps stay under `quiet_gap`.
fn episode_start(
    history: &AlarmHistory,
    quiet_gap: Duration,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let changes = history.changes_between(DateTime::<Utc>::MIN_UTC, now);
    let newest = changes.last()?;
    if now - newest.at > quiet_gap {
        return None;
    }
    let mut start = newest.at;
    for pair in changes.windows(2).rev() {
        if pair[1].at - pair[0].at > quiet_gap {
            break;
        }
        start = pair[0].at;
    }
    Some(start)
}

/// Share of each sample interval spent in ALARM.
fn alarm_timeline(
    history: &AlarmHistory,
    current: AlarmState,
    interval: Duration,
    window_start: DateTime<Utc>,
    known_from: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Series {
    let steps =
        ((now - window_start).num_seconds() / interval.num_seconds().max(1)).clamp(1, 10_000);
    let start = earlier(now, times(interval, usize::try_from(steps).unwrap_or(0)));
    let episodes = alarm_episodes(history, current, known_from.max(start), now);
    let values = (0..steps)
        .map(|i| {
            let a = later(start, times(interval, usize::try_from(i).unwrap_or(0)));
            let b = later(a, interval);
            if b <= known_from {
                return None;
            }
            let in_alarm: i64 = episodes
                .iter()
                .map(|e| (e.end.min(b) - e.start.max(a)).num_seconds().max(0))
                .sum();
            Some(round3(
                in_alarm as f64 / interval.num_seconds().max(1) as f64,
            ))
        })
        .collect();
    Series {
        label: "share of each interval in ALARM".to_owned(),
        unit: "ratio".to_owned(),
        start,
        step_seconds: interval.num_seconds().unsigned_abs(),
        values,
    }
}

/// `1 entry`, `3 entries`, `2 transitions`.
pub fn plural(n: u32, noun: &str) -> String {
    match (n, noun.strip_suffix('y')) {
        (1, _) => format!("1 {noun}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {noun}s"),
    }
}

/// `2 h 05 min`, `7 min`, `45 s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..=89 => format!("{s} s"),
        90..=5399 => format!("{} min", (s + 30) / 60),
        5400..=172_799 => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
        // Past two days the minutes are noise: days and hours.
        _ => format!("{} d {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::StateChange;
    use chrono::TimeZone;
    use proptest::prelude::*;

    #[test]
    fn durations_read_in_the_unit_people_use() {
        assert_eq!(human_duration(Duration::seconds(45)), "45 s");
        assert_eq!(human_duration(Duration::minutes(15)), "15 min");
        assert_eq!(human_duration(Duration::minutes(125)), "2 h 05 min");
        assert_eq!(human_duration(Duration::hours(216)), "9 d 0 h");
        assert_eq!(human_duration(Duration::hours(52)), "2 d 4 h");
    }

    const INCIDENT: AlarmTiming = AlarmTiming {
        period_seconds: 60,
        evaluation_periods: 2,
        datapoints_to_alarm: 2,
    };

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
    }

    fn change(minutes_ago: i64, from: AlarmState, to: AlarmState) -> StateChange {
        StateChange {
            at: now() - Duration::minutes(minutes_ago),
            from,
            to,
        }
    }

    /// An ALARM episode of `length` minutes every `every` minutes, for `span` minutes up to now.
    fn cycles(every: i64, length: i64, span: i64) -> Vec<StateChange> {
        let mut out = Vec::new();
        let mut t = span;
        while t > 0 {
            out.push(change(t, AlarmState::Ok, AlarmState::Alarm));
            if t - length > 0 {
                out.push(change(t - length, AlarmState::Alarm, AlarmState::Ok));
            }
            t -= every;
        }
        out
    }

    fn run(changes: Vec<StateChange>, current: AlarmState) -> Classification {
        classify(
            &AlarmHistory::from_unordered(changes).complete_since(now() - Duration::hours(24)),
            current,
            INCIDENT,
            &ClassifierConfig::default(),
            now(),
        )
    }

    #[test]
    fn seven_short_trips_in_half_an_hour_after_a_quiet_day_are_flapping() {
        // Peaks every 5 minutes push the metric over for 2 minutes each.
        let c = run(cycles(5, 2, 33), AlarmState::Alarm);
        assert_eq!(c.behaviour, Behaviour::Flapping, "{}", c.explanation);
        assert!(c.figures.percent_state_change < 30.0, "{:?}", c.figures);
        assert!(
            c.explanation.contains("7 entries into ALARM"),
            "{}",
            c.explanation
        );
    }

    #[test]
    fn two_trips_within_an_hour_are_not_yet_flapping() {
        let c = run(cycles(20, 3, 25), AlarmState::Alarm);
        assert_eq!(c.figures.alarm_cycles, 2);
        assert_eq!(c.behaviour, Behaviour::Transient, "{}", c.explanation);
    }

    #[test]
    fn nine_cycles_in_five_hours_is_flapping() {
        let c = run(cycles(33, 6, 297), AlarmState::Alarm);
        assert_eq!(c.behaviour, Behaviour::Flapping, "{}", c.explanation);
        assert_eq!(c.figures.alarm_cycles, 9);
        assert!(c.figures.percent_state_change > 30.0);
        assert_eq!(
            c.figures.episode_started_at,
            Some(now() - Duration::minutes(297))
        );
    }

    #[test]
    fn a_fresh_alarm_with_a_quiet_history_is_transient() {
        let c = run(
            vec![change(0, AlarmState::Ok, AlarmState::Alarm)],
            AlarmState::Alarm,
        );
        assert_eq!(c.behaviour, Behaviour::Transient, "{}", c.explanation);
        assert_eq!(c.figures.transitions_last_1h, 1);
    }

    #[test]
    fn an_alarm_breaching_for_forty_minutes_is_sustained() {
        let c = run(
            vec![change(40, AlarmState::Ok, AlarmState::Alarm)],
            AlarmState::Alarm,
        );
        assert_eq!(c.behaviour, Behaviour::Sustained, "{}", c.explanation);
        assert!((c.figures.alarm_share - 40.0 / 1440.0).abs() < 0.001);
    }

    #[test]
    fn ok_after_a_long_episode_is_recovered_and_after_a_blip_is_transient() {
        let long = run(
            vec![
                change(90, AlarmState::Ok, AlarmState::Alarm),
                change(0, AlarmState::Alarm, AlarmState::Ok),
            ],
            AlarmState::Ok,
        );
        assert_eq!(long.behaviour, Behaviour::Recovered, "{}", long.explanation);
        let blip = run(
            vec![
                change(3, AlarmState::Ok, AlarmState::Alarm),
                change(0, AlarmState::Alarm, AlarmState::Ok),
            ],
            AlarmState::Ok,
        );
        assert_eq!(blip.behaviour, Behaviour::Transient, "{}", blip.explanation);
    }

    #[test]
    fn one_quiet_interval_does_not_end_flapping() {
        // Flapping for 5 hours, then quiet for the last 40 minutes (two intervals).
        let mut changes = cycles(33, 6, 340);
        changes.retain(|c| c.at < now() - Duration::minutes(40));
        let c = run(changes, AlarmState::Ok);
        assert_eq!(c.behaviour, Behaviour::Flapping, "{}", c.explanation);
    }

    #[test]
    fn flapping_ends_once_the_score_falls_below_the_low_threshold() {
        // Flapping ended 10 hours ago; 6 hours of calm since clear the whole window.
        let changes: Vec<_> = cycles(33, 6, 900)
            .into_iter()
            .filter(|c| c.at < now() - Duration::hours(10))
            .collect();
        let c = run(changes, AlarmState::Ok);
        assert_ne!(c.behaviour, Behaviour::Flapping, "{}", c.explanation);
        assert_eq!(c.figures.percent_state_change, 0.0);
    }

    #[test]
    fn timeline_covers_the_lookback_with_alarm_shares() {
        let c = run(
            vec![change(40, AlarmState::Ok, AlarmState::Alarm)],
            AlarmState::Alarm,
        );
        assert_eq!(c.timeline.values.len(), 80);
        assert_eq!(c.timeline.values.last(), Some(&Some(1.0)));
        assert_eq!(c.timeline.values.first(), Some(&Some(0.0)));
    }

    #[test]
    fn without_history_nothing_before_the_first_change_is_assumed() {
        let only_the_notification =
            AlarmHistory::from_unordered(vec![change(0, AlarmState::Alarm, AlarmState::Ok)]);
        let c = classify(
            &only_the_notification,
            AlarmState::Ok,
            INCIDENT,
            &ClassifierConfig::default(),
            now(),
        );
        assert_eq!(c.figures.alarm_share, 0.0);
        assert_eq!(c.figures.mean_alarm_episode_seconds, None);
        assert!(c.timeline.values.iter().all(Option::is_none));
    }

    #[test]
    fn durations_read_like_a_person_writes_them() {
        assert_eq!(human_duration(Duration::seconds(45)), "45 s");
        assert_eq!(human_duration(Duration::seconds(600)), "10 min");
        assert_eq!(human_duration(Duration::seconds(7500)), "2 h 05 min");
    }

    fn state_strategy() -> impl Strategy<Value = AlarmState> {
        prop_oneof![
            Just(AlarmState::Ok),
            Just(AlarmState::Alarm),
            Just(AlarmState::InsufficientData)
        ]
    }

    proptest! {
        #[test]
        fn a_constant_state_is_never_flapping(state in state_strategy(), period in 10u32..3600, evals in 1u32..10) {
            let timing = AlarmTiming { period_seconds: period, evaluation_periods: evals, datapoints_to_alarm: evals };
            let c = classify(&AlarmHistory::default(), state, timing, &ClassifierConfig::default(), now());
            prop_assert_ne!(c.behaviour, Behaviour::Flapping);
            prop_assert_eq!(c.figures.percent_state_change, 0.0);
        }

        #[test]
        fn alternating_every_period_is_always_flapping(period in 10u32..1800, evals in 1u32..5) {
            let timing = AlarmTiming { period_seconds: period, evaluation_periods: evals, datapoints_to_alarm: evals };
            let step = i64::from(period);
            let total = 24 * 3600 / step;
            let changes: Vec<_> = (0..total)
                .map(|i| {
                    let (from, to) = if i % 2 == 0 { (AlarmState::Ok, AlarmState::Alarm) } else { (AlarmState::Alarm, AlarmState::Ok) };
                    StateChange { at: now() - Duration::seconds((total - i) * step), from, to }
                })
                .collect();
            let current = changes.last().map_or(AlarmState::Ok, |c| c.to);
            let c = classify(&AlarmHistory::from_unordered(changes), current, timing, &ClassifierConfig::default(), now());
            prop_assert_eq!(c.behaviour, Behaviour::Flapping);
        }

        #[test]
        fn the_verdict_does_not_depend_on_delivery_order(
            minutes in proptest::collection::vec(0i64..1440, 0..60),
            seed in any::<u64>(),
        ) {
            let mut sorted = minutes.clone();
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            sorted.dedup();
            let changes: Vec<_> = sorted
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let (from, to) = if i % 2 == 0 { (AlarmState::Ok, AlarmState::Alarm) } else { (AlarmState::Alarm, AlarmState::Ok) };
                    change(*m, from, to)
                })
                .collect();
            let current = changes.last().map_or(AlarmState::Ok, |c| c.to);
            let mut shuffled = changes.clone();
            // A deterministic shuffle from the seed: newest first, as AWS pages it, then rotated.
            shuffled.reverse();
            if !shuffled.is_empty() {
                let k = (seed as usize) % shuffled.len();
                shuffled.rotate_left(k);
            }
            let a = run(changes, current);
            let b = run(shuffled, current);
            prop_assert_eq!(a, b);
        }
    }
}
