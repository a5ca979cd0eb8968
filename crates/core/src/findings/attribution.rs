//! Which target group's *change* explains the breach.
//!
//! A group that is high is not necessarily the culprit: a reporting endpoint
//! may have answered in seconds for weeks under a load-balancer-wide alarm
//! that never fired for it. What the on-call engineer needs is the group whose
//! change brought the alarm's metric over the threshold. So for each group the
//! alarm's own statistic is recomputed over the breaching periods with that
//! group put back at its own level from before the breach (its baseline); the
//! culprit is the smallest set of groups whose return to their baseline brings
//! the metric back across the threshold. A group at its usual level is a
//! standing condition, never the culprit; most groups moving together at the
//! same minutes is a shared problem with no culprit; no group moving at all is
//! "nothing changed".
//!
//! Pure: series in, numbers out. How the load balancer combines its groups
//! depends on the statistic ([`Combination`]); percentiles of all requests are
//! approximated from each group's quantiles weighted by its requests.

use chrono::{DateTime, Utc};

use super::traffic;
use crate::alarm::facts::{Comparison, Statistic};
use crate::evidence::model::MetricSeries;

/// Fewest periods a baseline may rest on.
const MIN_BASELINE_PERIODS: usize = 5;
/// A group "changed" when it moved toward the breach by more than this share
/// of its own baseline (and more than its own noise).
const RELATIVE_CHANGE: f64 = 0.2;
/// ... and more than this share of the threshold (counts that start at 0).
const THRESHOLD_SHARE: f64 = 0.05;
/// When no set of groups brings the metric back (the baseline itself sat near
/// the threshold), the culprits are the groups that make up this share of the change.
const EFFECT_COVERAGE: f64 = 0.8;
/// A moved group counts when its effect is at least this share of the largest.
const MATERIAL_SHARE: f64 = 0.1;
/// A group whose relative change is this many times every other changed
/// group's stands out of a crowd that moved a little with it.
const STANDS_OUT: f64 = 3.0;

/// How the load balancer's statistic combines its target groups'.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Combination {
    /// The request-weighted mean of the groups' values (`Average`; trimmed
    /// means are approximated the same way).
    Mean,
    /// Counts add up (`Sum`, `SampleCount`).
    Sum,
    Maximum,
    Minimum,
    /// A percentile over every request (`pNN`, as a fraction), approximated
    /// from each group's p50, the alarm's percentile, p99 and Maximum,
    /// weighted by the group's requests.
    Quantile(f64),
}

impl Combination {
    /// The combination for CloudWatch's statistic name.
    pub fn of(statistic: &Statistic) -> Self {
        match statistic {
            Statistic::Sum | Statistic::SampleCount => Combination::Sum,
            Statistic::Maximum => Combination::Maximum,
            Statistic::Minimum => Combination::Minimum,
            Statistic::Percentile(q) => Combination::Quantile(q / 100.0),
            Statistic::Average | Statistic::Extended(_) => Combination::Mean,
        }
    }

    /// Whether the report should say the recomputed value is approximate.
    pub fn is_approximate(self) -> bool {
        matches!(self, Combination::Quantile(_))
    }
}

/// One group's series as the attribution reads them.
#[derive(Debug, Clone, Copy)]
pub struct GroupSeries<'a> {
    /// The alarm's statistic for this group.
    pub value: &'a MetricSeries,
    pub requests: &'a MetricSeries,
    /// Quantile knots for percentile alarms (response time).
    pub p50: &'a MetricSeries,
    pub p99: &'a MetricSeries,
    pub maximum: &'a MetricSeries,
}

/// What is asked: the groups, the load balancer's own series, the breach.
#[derive(Debug, Clone)]
pub struct Question<'a> {
    pub groups: Vec<GroupSeries<'a>>,
    /// The alarm's metric itself, for the whole load balancer (calibrates the
    /// recomputation; the breach is read from it).
    pub observed: Option<&'a MetricSeries>,
    /// The breaching periods (or, when none, the periods looked at).
    pub breach: &'a [DateTime<Utc>],
    pub combination: Combination,
    pub threshold: f64,
    pub comparison: Comparison,
}

/// Where the baselines come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaselineSource {
    /// The periods of the window in which the alarm's metric did not breach.
    CalmPeriods,
    /// The first third of the window: the metric breached (nearly) throughout.
    EarlyWindow,
}

/// The periods the baselines rest on.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineWindow {
    pub source: BaselineSource,
    pub periods: usize,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// One group's part in the breach.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupAttribution {
    /// The group's own statistic, median over the baseline periods.
    pub baseline: Option<f64>,
    /// The group's own statistic, mean over the breach.
    pub during: Option<f64>,
    /// Moved toward the breach by more than its noise.
    pub changed: bool,
    /// How much its change moved the alarm's metric toward the breach
    /// (the metric's unit; 0 when it did not).
    pub effect: f64,
    /// The alarm's metric over the breach had this group stayed at its baseline.
    pub without_its_change: Option<f64>,
    /// Its baseline already breaches the threshold on its own.
    pub standing: bool,
    /// It served nothing over the baseline periods and serves now (a new
    /// group, or one a listener started sending to): its usual level is
    /// "not in the mix", so its change is its whole part.
    pub appeared: bool,
}

/// What the attribution concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// These groups' change explains the breach (see [`Attribution::culprits`]).
    Culprits,
    /// Most groups moved together at the same minutes: what they share.
    Shared,
    /// No group moved from its baseline.
    NothingChanged,
}

/// The answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribution {
    pub outcome: Outcome,
    pub groups: Vec<GroupAttribution>,
    /// Indices into the question's groups, largest effect first.
    pub culprits: Vec<usize>,
    pub baseline: BaselineWindow,
    /// The alarm's metric over the breach, as observed.
    pub observed: Option<f64>,
    /// ... and with the culprits at their baselines.
    pub counterfactual: Option<f64>,
    /// The culprits' return to baseline brings the metric back across the threshold.
    pub sufficient: bool,
}

impl Attribution {
    /// Each group's share of the change, 0..1, among the groups that moved
    /// (0 for every group when none did: noise is nobody's share).
    pub fn shares(&self) -> Vec<f64> {
        let part = |g: &GroupAttribution| if g.changed { g.effect.max(0.0) } else { 0.0 };
        let total: f64 = self.groups.iter().map(part).sum();
        self.groups
            .iter()
            .map(|g| if total > 0.0 { part(g) / total } else { 0.0 })
            .collect()
    }
}

/// One group in one period, or at its baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    value: f64,
    requests: f64,
    p50: Option<f64>,
    p99: Option<f64>,
    maximum: Option<f64>,
}

fn sample_at(g: &GroupSeries<'_>, t: DateTime<Utc>) -> Option<Sample> {
    Some(Sample {
        value: g.value.at(t)?,
        requests: g.requests.at(t).unwrap_or(0.0),
        p50: g.p50.at(t),
        p99: g.p99.at(t),
        maximum: g.maximum.at(t),
    })
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    traffic::median(&mut values)
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The group at its usual level: each series' median over `periods`.
fn level(g: &GroupSeries<'_>, periods: &[DateTime<Utc>]) -> Option<(Sample, f64)> {
    let of = |s: &MetricSeries| median(periods.iter().filter_map(|t| s.at(*t)).collect());
    let values: Vec<f64> = periods.iter().filter_map(|t| g.value.at(*t)).collect();
    let value = median(values.clone())?;
    // The median absolute deviation, scaled to a standard deviation.
    let spread = median(values.iter().map(|v| (v - value).abs()).collect()).unwrap_or(0.0) * 1.4826;
    Some((
        Sample {
            value,
            requests: of(g.requests).unwrap_or(0.0),
            p50: of(g.p50),
            p99: of(g.p99),
            maximum: of(g.maximum),
        },
        spread,
    ))
}

/// The fraction of a group's requests at or under `x`, from its quantile knots.
fn cdf(knots: &[(f64, f64)], x: f64) -> f64 {
    let mut previous = (0.0, 0.0);
    for &(q, v) in knots {
        if x < v {
            let span = v - previous.1;
            return if span <= 0.0 {
                previous.0
            } else {
                previous.0 + (q - previous.0) * (x - previous.1) / span
            };
        }
        previous = (q, v);
    }
    1.0
}

/// Quantile knots (fraction, value) of one group, increasing in both.
fn knots(s: &Sample, q: f64) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = [
        s.p50.map(|v| (0.5, v)),
        Some((q, s.value)),
        s.p99.map(|v| (0.99, v)),
        s.maximum.map(|v| (1.0, v)),
    ]
    .into_iter()
    .flatten()
    .filter(|(_, v)| v.is_finite() && *v >= 0.0)
    .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The alarm's own percentile wins over a knot at the same fraction.
    points.dedup_by(|later, earlier| {
        if (later.0 - earlier.0).abs() < 1e-12 {
            if (later.0 - q).abs() < 1e-12 {
                *earlier = *later;
            }
            true
        } else {
            false
        }
    });
    let mut running: f64 = 0.0;
    for point in &mut points {
        running = running.max(point.1);
        point.1 = running;
    }
    points
}

/// The load balancer's statistic from its groups in one period.
fn combine(samples: &[Sample], how: Combination) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    match how {
        Combination::Sum => Some(samples.iter().map(|s| s.value).sum()),
        Combination::Maximum => samples.iter().map(|s| s.value).reduce(f64::max),
        Combination::Minimum => samples.iter().map(|s| s.value).reduce(f64::min),
        Combination::Mean => {
            let n: f64 = samples.iter().map(|s| s.requests.max(0.0)).sum();
            if n > 0.0 {
                Some(
                    samples
                        .iter()
                        .map(|s| s.value * s.requests.max(0.0))
                        .sum::<f64>()
                        / n,
                )
            } else {
                mean(&samples.iter().map(|s| s.value).collect::<Vec<_>>())
            }
        }
        Combination::Quantile(q) => {
            let weighted: Vec<(f64, Vec<(f64, f64)>)> = samples
                .iter()
                .filter(|s| s.requests > 0.0)
                .map(|s| (s.requests, knots(s, q)))
                .collect();
            let n: f64 = weighted.iter().map(|(w, _)| w).sum();
            if n <= 0.0 {
                return samples.iter().map(|s| s.value).reduce(f64::max);
            }
            let mut hi = weighted
                .iter()
                .filter_map(|(_, k)| k.last().map(|p| p.1))
                .fold(0.0, f64::max);
            let mut lo = 0.0;
            for _ in 0..60 {
                let mid = (lo + hi) / 2.0;
                let below: f64 = weighted.iter().map(|(w, k)| w * cdf(k, mid)).sum::<f64>() / n;
                if below >= q {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            Some(hi)
        }
    }
}

/// +1 when a higher value breaches, -1 when a lower one does.
fn orientation(comparison: Comparison) -> f64 {
    if !comparison.fires_upwards() {
        -1.0
    } else {
        1.0
    }
}

/// The periods the baselines rest on, or `None` when the window is too short.
fn baseline_periods(
    periods: &[DateTime<Utc>],
    q: &Question<'_>,
) -> Option<(BaselineSource, Vec<DateTime<Utc>>)> {
    let calm: Vec<DateTime<Utc>> = periods
        .iter()
        .copied()
        .filter(|t| !q.breach.contains(t))
        .filter(|t| {
            q.observed
                .and_then(|o| o.at(*t))
                .is_none_or(|v| !q.comparison.breaches(v, q.threshold))
        })
        .collect();
    if calm.len() >= MIN_BASELINE_PERIODS {
        return Some((BaselineSource::CalmPeriods, calm));
    }
    let early: Vec<DateTime<Utc>> = periods[..periods.len() / 3].to_vec();
    (early.len() >= MIN_BASELINE_PERIODS).then_some((BaselineSource::EarlyWindow, early))
}

/// One group's part: its level over the baseline and during the breach,
/// and how far the metric would fall without its change.
fn judge_group(
    g: &GroupSeries<'_>,
    level: Option<(Sample, f64)>,
    breach: &[DateTime<Utc>],
    observed: Option<f64>,
    without_its_change: Option<f64>,
    sign: f64,
    q: &Question<'_>,
) -> GroupAttribution {
    let during = mean(
        &breach
            .iter()
            .filter_map(|t| g.value.at(*t))
            .collect::<Vec<_>>(),
    );
    let effect = match (observed, without_its_change) {
        (Some(o), Some(w)) => ((o - w) * sign).max(0.0),
        _ => 0.0,
    };
    let Some((usual, spread)) = level else {
        // Nothing over the baseline, something now: it appeared.
        let Some(during) = during else {
            return GroupAttribution::default();
        };
        return GroupAttribution {
            during: Some(during),
            changed: effect > THRESHOLD_SHARE * q.threshold.abs(),
            effect,
            without_its_change,
            appeared: true,
            ..GroupAttribution::default()
        };
    };
    let moved = during.map_or(0.0, |d| (d - usual.value) * sign);
    let floor = (RELATIVE_CHANGE * usual.value.abs())
        .max(3.0 * spread)
        .max(THRESHOLD_SHARE * q.threshold.abs());
    GroupAttribution {
        baseline: Some(usual.value),
        during,
        changed: moved > floor && effect > 0.0,
        effect,
        without_its_change,
        standing: q.comparison.breaches(usual.value, q.threshold),
        appeared: false,
    }
}

/// Attributes the breach to the groups whose change explains it; `None` when
/// the window holds too few periods for a baseline (the caller then ranks the
/// groups by their level instead).
pub fn attribute(q: &Question<'_>) -> Option<Attribution> {
    let mut periods: Vec<DateTime<Utc>> = q
        .groups
        .iter()
        .flat_map(|g| g.value.points.iter().map(|(t, _)| *t))
        .collect();
    periods.sort();
    periods.dedup();
    let (source, base_periods) = baseline_periods(&periods, q)?;
    let breach: Vec<DateTime<Utc>> = q
        .breach
        .iter()
        .copied()
        .filter(|t| periods.binary_search(t).is_ok())
        .collect();
    if breach.is_empty() {
        return None;
    }
    let sign = orientation(q.comparison);
    let levels: Vec<Option<(Sample, f64)>> =
        q.groups.iter().map(|g| level(g, &base_periods)).collect();

    // The metric per breaching period, as observed and with `set` at baseline.
    let at_baseline = |set: &[usize]| -> Vec<Option<f64>> {
        breach
            .iter()
            .map(|t| {
                let modelled = |replace: &[usize]| {
                    let samples: Vec<Sample> = q
                        .groups
                        .iter()
                        .enumerate()
                        .filter_map(|(i, g)| {
                            let now = sample_at(g, *t)?;
                            match (replace.contains(&i), &levels[i]) {
                                // Its usual level, carrying the requests it had.
                                (true, Some((usual, _))) => Some(Sample {
                                    requests: now.requests,
                                    ..*usual
                                }),
                                // It usually served nothing: out of the mix.
                                (true, None) => None,
                                (false, _) => Some(now),
                            }
                        })
                        .collect();
                    combine(&samples, q.combination)
                };
                let as_seen = modelled(&[]);
                let counterfactual = modelled(set)?;
                // Calibrated on what CloudWatch computed for the whole load
                // balancer: by the difference for means and counts (exact up
                // to rounding), by the ratio for a percentile (the mixture of
                // quantiles is only an approximation of its scale).
                Some(match (q.observed.and_then(|o| o.at(*t)), as_seen) {
                    (Some(observed), Some(model)) => match q.combination {
                        Combination::Quantile(_) if model > 0.0 => {
                            observed * counterfactual / model
                        }
                        Combination::Quantile(_) => counterfactual,
                        _ => (observed + counterfactual - model).max(0.0),
                    },
                    _ => counterfactual,
                })
            })
            .collect()
    };
    let observed_periods = at_baseline(&[]);
    let observed = mean(
        &observed_periods
            .iter()
            .flatten()
            .copied()
            .collect::<Vec<_>>(),
    );
    let over_breach =
        |values: &[Option<f64>]| mean(&values.iter().flatten().copied().collect::<Vec<_>>());
    let brings_back = |values: &[Option<f64>]| {
        let known: Vec<f64> = values.iter().flatten().copied().collect();
        let still = known
            .iter()
            .filter(|v| q.comparison.breaches(**v, q.threshold))
            .count();
        !known.is_empty()
            && mean(&known).is_some_and(|m| !q.comparison.breaches(m, q.threshold))
            && still * 3 <= known.len()
    };

    let groups: Vec<GroupAttribution> = q
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let without_its_change = over_breach(&at_baseline(&[i]));
            judge_group(g, levels[i], &breach, observed, without_its_change, sign, q)
        })
        .collect();

    let mut answer = Attribution {
        outcome: Outcome::NothingChanged,
        groups,
        culprits: Vec::new(),
        baseline: BaselineWindow {
            source,
            periods: base_periods.len(),
            from: base_periods[0],
            to: base_periods[base_periods.len() - 1],
        },
        observed,
        counterfactual: None,
        sufficient: false,
    };
    let brings_back_without = |set: &[usize]| brings_back(&at_baseline(set));
    let metric_without = |set: &[usize]| over_breach(&at_baseline(set));
    name_culprits(&mut answer, sign, &brings_back_without, &metric_without);
    Some(answer)
}

/// Decides the outcome from the groups' parts: a crowd that moved together is
/// shared; else the groups whose return alone brings the metric back, else
/// the smallest set of the movers (largest effect first) that does, else the
/// movers that make up most of the change. `brings_back(set)` and
/// `metric_without(set)` recompute the metric with `set` at its baseline.
fn name_culprits(
    answer: &mut Attribution,
    sign: f64,
    brings_back: &dyn Fn(&[usize]) -> bool,
    metric_without: &dyn Fn(&[usize]) -> Option<f64>,
) {
    let groups = &answer.groups;
    // Groups that moved and matter: a near-idle group that wobbled moves the
    // load balancer's metric by next to nothing, and is no crowd.
    let largest = groups
        .iter()
        .filter(|g| g.changed)
        .map(|g| g.effect)
        .fold(0.0, f64::max);
    let mut candidates: Vec<usize> = (0..groups.len())
        .filter(|i| groups[*i].changed && groups[*i].effect >= MATERIAL_SHARE * largest)
        .collect();
    candidates.sort_by(|a, b| groups[*b].effect.total_cmp(&groups[*a].effect));
    if candidates.is_empty() {
        return;
    }
    let with_data = groups.iter().filter(|g| g.during.is_some()).count();
    // Each group's move relative to its own baseline.
    let relative: Vec<f64> = groups
        .iter()
        .map(|g| match (g.during, g.baseline) {
            (Some(d), Some(b)) if b.abs() > 1e-9 => ((d - b) * sign / b.abs()).max(0.0),
            (Some(d), Some(_)) => (d * sign).max(0.0) * 1e9,
            // A group that appeared moved by all of itself.
            (Some(_), None) if g.appeared => f64::MAX / 4.0,
            _ => 0.0,
        })
        .collect();
    // Every group whose return alone brings the metric back (several when
    // they changed alike: which one to name first would be arbitrary).
    let alone: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|i| brings_back(&[*i]))
        .collect();
    let crowd = candidates.len() >= 2 && candidates.len() * 2 > with_data;
    let stands_out = alone.len() == 1
        && candidates
            .iter()
            .filter(|j| **j != alone[0])
            .all(|j| relative[alone[0]] >= STANDS_OUT * relative[*j]);
    if crowd && !stands_out {
        answer.outcome = Outcome::Shared;
        answer.counterfactual = metric_without(&candidates);
        return;
    }
    let (culprits, sufficient) = if !alone.is_empty() {
        (alone, true)
    } else if let Some(k) = (2..=candidates.len()).find(|k| brings_back(&candidates[..*k])) {
        (candidates[..k].to_vec(), true)
    } else {
        // Even all of them at baseline leave the metric over: the baseline
        // sat near the threshold; name who made up the change.
        let total: f64 = candidates.iter().map(|i| groups[*i].effect).sum();
        let mut covered = 0.0;
        let mut named = Vec::new();
        for i in &candidates {
            if covered >= EFFECT_COVERAGE * total {
                break;
            }
            covered += groups[*i].effect;
            named.push(*i);
        }
        (named, false)
    };
    answer.outcome = Outcome::Culprits;
    answer.counterfactual = metric_without(&culprits);
    answer.culprits = culprits;
    answer.sufficient = sufficient;
}

#[cfg(test)]
mod tests;
