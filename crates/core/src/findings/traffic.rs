//! Is the breach real? Low-traffic artifacts and outlier-driven averages,
//! decided from the alarm's own metric at several statistics.

use chrono::{DateTime, Utc};

use crate::alarm::facts::{Comparison, Statistic};
use crate::diagnosis::{Evidence, Facts, Finding, FindingId, Verdict};
use crate::evidence::Statistics;
use crate::evidence::model::{MetricSeries, with_unit};

/// Below this many requests a minute during the breach, a few slow requests
/// can move an Average: the breach is likely a statistical artifact.
pub const LOW_TRAFFIC_PER_MINUTE: f64 = 30.0;
/// From this many requests a minute on, a breach of the Average is many slow requests.
pub const BUSY_TRAFFIC_PER_MINUTE: f64 = 120.0;

/// The periods in which `series` breached the threshold, oldest first.
pub fn breaching_periods(
    series: &MetricSeries,
    threshold: f64,
    comparison: Comparison,
) -> Vec<DateTime<Utc>> {
    series
        .points
        .iter()
        .filter(|(_, v)| comparison.breaches(*v, threshold))
        .map(|(t, _)| *t)
        .collect()
}

/// The median of the values `series` has at `periods`.
pub fn median_at(series: &MetricSeries, periods: &[DateTime<Utc>]) -> Option<f64> {
    let mut values: Vec<f64> = periods.iter().filter_map(|t| series.at(*t)).collect();
    median(&mut values)
}

pub use crate::series::median;

pub fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

/// Low-traffic artifact: few requests in the breaching periods.
/// Requests per minute under which a breach of `statistic` can be one or two
/// slow requests, and at or above which many requests were slow. An Average
/// uses [`LOW_TRAFFIC_PER_MINUTE`] and [`BUSY_TRAFFIC_PER_MINUTE`]; a percentile
/// `pNN` (or trimmed mean `tmNN`) over fewer than 100/(100-NN) requests a
/// period *is* the slowest request, and reflects ten slow requests only at ten times that.
pub fn traffic_bounds(statistic: &Statistic, period_seconds: u32) -> (f64, f64) {
    let per_minute = 60.0 / f64::from(period_seconds.max(1));
    let percentile = match statistic {
        Statistic::Percentile(p) => Some(*p),
        Statistic::Extended(text) => text
            .strip_prefix("tm")
            .and_then(|p| p.parse::<f64>().ok())
            .filter(|p| *p > 0.0 && *p < 100.0),
        _ => None,
    };
    match percentile {
        Some(p) => {
            let one_request_decides = 100.0 / (100.0 - p);
            (
                one_request_decides * per_minute,
                10.0 * one_request_decides * per_minute,
            )
        }
        None => (LOW_TRAFFIC_PER_MINUTE, BUSY_TRAFFIC_PER_MINUTE),
    }
}

pub fn low_traffic_artifact(stats: &Statistics, breach: &[DateTime<Utc>]) -> Finding {
    let per_minute = 60.0 / f64::from(stats.period_seconds.max(1));
    let during = median_at(&stats.requests, breach).map(|r| r * per_minute);
    let outside: Vec<DateTime<Utc>> = stats
        .requests
        .points
        .iter()
        .map(|(t, _)| *t)
        .filter(|t| !breach.contains(t))
        .collect();
    let before = median_at(&stats.requests, &outside).map(|r| r * per_minute);
    let mut evidence = vec![Evidence::number(
        "breaching periods in the window",
        breach.len() as f64,
        "periods",
    )];
    if let Some(d) = during {
        evidence.push(Evidence::number(
            "requests per minute while breaching (median)",
            round(d, 1),
            "requests/min",
        ));
    }
    if let Some(b) = before {
        evidence.push(Evidence::number(
            "requests per minute otherwise (median)",
            round(b, 1),
            "requests/min",
        ));
    }
    let statistic = &stats.alarm_statistic;
    let (low, busy) = traffic_bounds(statistic, stats.period_seconds);
    evidence.push(Evidence::number(
        &format!("low-traffic bound for {statistic}"),
        round(low, 1),
        "requests/min",
    ));
    evidence.push(Evidence::number(
        &format!("busy-traffic bound for {statistic}"),
        round(busy, 1),
        "requests/min",
    ));
    let (verdict, summary, cause) = match during {
        None if breach.is_empty() => (
            Verdict::Inconclusive,
            "No period in the window breached the threshold (no datapoints, or the breach is older than the window).".to_owned(),
            None,
        ),
        None => (
            Verdict::Inconclusive,
            format!("No {} datapoints for the breaching periods.", stats.requests_metric),
            None,
        ),
        Some(d) if d < low => (
            Verdict::Supported,
            format!(
                "Only {d:.0} requests a minute while the alarm breached: a handful of slow requests can move {} this thin.",
                if *statistic == Statistic::Average {
                    "an average".to_owned()
                } else {
                    format!("a {statistic}")
                }
            ),
            Some(format!("a few slow requests at {d:.0} requests a minute")),
        ),
        Some(d) if d >= busy => (
            Verdict::Refuted,
            format!("{d:.0} requests a minute while the alarm breached: many requests were slow, not a statistical artifact."),
            Some(format!("low traffic: {d:.0} requests/min")),
        ),
        Some(d) => (
            Verdict::Inconclusive,
            format!(
                "{d:.0} requests a minute while breaching: between the low-traffic bound ({low:.0}) and busy traffic ({busy:.0}) for {statistic}."
            ),
            None,
        ),
    };
    Finding {
        evidence,
        series: vec![crate::series::Series {
            label: format!("{} per period", stats.requests_metric),
            unit: "count".to_owned(),
            ..to_series(&stats.requests, stats.period_seconds)
        }],
        ..Finding::decided(
            FindingId::LowTrafficArtifact,
            format!(
                "The breach is a low-traffic artifact: a few slow requests on a near-idle target inflate the {statistic}"
            ),
            verdict,
            summary,
            cause,
        )
    }
}

/// The series the outlier question looks at, for the whole metric or one target group.
#[derive(Debug, Clone, Copy)]
pub struct Spread<'a> {
    /// What the series describe ("the load balancer", "target group checkout").
    pub scope: &'a str,
    pub average: &'a MetricSeries,
    pub p50: &'a MetricSeries,
    pub p99: &'a MetricSeries,
    pub maximum: &'a MetricSeries,
    pub period_seconds: u32,
    /// The metric's unit (`s`), for people.
    pub unit: &'a str,
}

/// Average driven by a few outliers vs broad slowness: the median request against the threshold.
pub fn outliers(spread: Spread<'_>, breach: &[DateTime<Utc>], threshold: f64) -> Finding {
    let average = median_at(spread.average, breach);
    let p50 = median_at(spread.p50, breach);
    let p99 = median_at(spread.p99, breach);
    let maximum = breach
        .iter()
        .filter_map(|t| spread.maximum.at(*t))
        .reduce(f64::max);
    let mut evidence = vec![Evidence::text("measured on", spread.scope)];
    let unit = spread.unit;
    for (name, value) in [
        ("Average while breaching (median)", average),
        ("p50 while breaching (median)", p50),
        ("p99 while breaching (median)", p99),
        ("Maximum while breaching", maximum),
    ] {
        if let Some(v) = value {
            evidence.push(Evidence::number(name, round(v, 3), unit));
        }
    }
    evidence.push(Evidence::number("threshold", threshold, unit));
    let scope = spread.scope;
    let v = |x: f64| with_unit(round(x, 2), unit);
    let (verdict, summary) = match (p50, average) {
        (Some(p50), Some(avg)) if p50 < threshold * 0.5 => (
            Verdict::Supported,
            format!(
                "On {scope}, the median request took {} while the Average was {}: a minority of slow requests (p99 {}, Maximum {}) drives the Average over {}.",
                v(p50),
                v(avg),
                p99.map_or("n/a".to_owned(), v),
                maximum.map_or("n/a".to_owned(), v),
                v(threshold)
            ),
        ),
        (Some(p50), Some(avg)) if p50 >= threshold => (
            Verdict::Refuted,
            format!(
                "Broad slowness on {scope}: the median request itself took {} (Average {}), above the {} threshold.",
                v(p50),
                v(avg),
                v(threshold)
            ),
        ),
        (Some(p50), Some(avg)) => (
            Verdict::Inconclusive,
            format!(
                "On {scope}, the median request took {} (Average {}): neither clearly a minority of slow requests nor broad slowness.",
                v(p50),
                v(avg)
            ),
        ),
        _ => (
            Verdict::Inconclusive,
            format!("No percentile datapoints for {scope} in the breaching periods."),
        ),
    };
    Finding {
        role: Default::default(),
        id: FindingId::LatencyOutliers,
        hypothesis: "A minority of slow requests drives the Average (rather than broad slowness)"
            .to_owned(),
        verdict,
        summary,
        cause: None,
        ruled_out_by: (verdict == Verdict::Refuted).then(|| {
            format!(
                "a minority of slow requests: the median took {}",
                p50.map_or("n/a".to_owned(), v)
            )
        }),
        evidence,
        series: vec![
            crate::series::Series {
                label: format!("Average ({scope})"),
                unit: "value".to_owned(),
                ..to_series(spread.average, spread.period_seconds)
            },
            crate::series::Series {
                label: format!("p99 ({scope})"),
                unit: "value".to_owned(),
                ..to_series(spread.p99, spread.period_seconds)
            },
        ],
        facts: Facts::None,
    }
}

/// The load balancer-wide spread from the alarm's statistics.
pub fn spread_of(stats: &Statistics) -> Spread<'_> {
    Spread {
        scope: "the whole metric",
        average: &stats.average,
        p50: &stats.p50,
        p99: &stats.p99,
        maximum: &stats.maximum,
        period_seconds: stats.period_seconds,
        unit: "",
    }
}

/// A metric series on a regular grid (missing periods as gaps), for sparklines.
pub fn to_series(series: &MetricSeries, period_seconds: u32) -> crate::series::Series {
    let step = i64::from(period_seconds.max(1));
    let (Some(first), Some(last)) = (series.points.first(), series.points.last()) else {
        return crate::series::Series {
            label: series.id.clone(),
            unit: String::new(),
            start: DateTime::<Utc>::UNIX_EPOCH,
            step_seconds: u64::from(period_seconds.max(1)),
            values: Vec::new(),
        };
    };
    let count = usize::try_from((last.0 - first.0).num_seconds() / step + 1)
        .unwrap_or(0)
        .min(10_000);
    let mut values = vec![None; count];
    for (t, v) in &series.points {
        if let Ok(i) = usize::try_from((*t - first.0).num_seconds() / step)
            && let Some(slot) = values.get_mut(i)
        {
            *slot = Some(round(*v, 4));
        }
    }
    crate::series::Series {
        label: series.id.clone(),
        unit: String::new(),
        start: first.0,
        step_seconds: u64::from(period_seconds.max(1)),
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn t(minute: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::minutes(28_000_000 + minute)
    }

    fn series(id: &str, values: &[f64]) -> MetricSeries {
        MetricSeries {
            id: id.into(),
            points: values
                .iter()
                .enumerate()
                .map(|(i, v)| (t(i as i64), *v))
                .collect(),
        }
    }

    fn stats(avg: &[f64], p50: &[f64], requests: &[f64]) -> Statistics {
        Statistics {
            period_seconds: 60,
            alarm_statistic: Statistic::Average,
            alarm_stat: series("alarm_stat", avg),
            average: series("average", avg),
            p50: series("p50", p50),
            p99: series("p99", &vec![9.0; avg.len()]),
            maximum: series("maximum", &vec![12.0; avg.len()]),
            requests: series("requests", requests),
            per_request_scale: None,
            requests_metric: "RequestCount".into(),
        }
    }

    #[test]
    fn three_requests_a_minute_is_a_low_traffic_artifact_and_a_few_outliers() {
        let s = stats(&[0.2, 2.5, 2.4], &[0.2, 0.21, 0.2], &[3.0, 3.0, 3.0]);
        let breach = breaching_periods(&s.alarm_stat, 1.0, Comparison::GreaterThan);
        assert_eq!(breach.len(), 2);
        assert_eq!(
            low_traffic_artifact(&s, &breach).verdict,
            Verdict::Supported
        );
        assert_eq!(
            outliers(spread_of(&s), &breach, 1.0).verdict,
            Verdict::Supported
        );
    }

    #[test]
    fn six_hundred_requests_a_minute_with_a_slow_median_is_broad_slowness() {
        let s = stats(&[0.1, 2.9, 2.8], &[0.07, 2.4, 2.4], &[380.0, 620.0, 610.0]);
        let breach = breaching_periods(&s.alarm_stat, 0.8, Comparison::GreaterThan);
        assert_eq!(low_traffic_artifact(&s, &breach).verdict, Verdict::Refuted);
        assert_eq!(
            outliers(spread_of(&s), &breach, 0.8).verdict,
            Verdict::Refuted
        );
    }

    #[test]
    fn a_percentile_over_fewer_requests_than_it_needs_is_the_slowest_request() {
        // p99 over a minute: 100 requests are needed before it is not the maximum.
        assert_eq!(
            traffic_bounds(&Statistic::Percentile(99.0), 60),
            (100.0, 1000.0)
        );
        assert_eq!(
            traffic_bounds(&Statistic::Percentile(90.0), 300),
            (2.0, 20.0)
        );
        assert_eq!(traffic_bounds(&Statistic::Average, 60), (30.0, 120.0));
        let mut s = stats(&[0.2, 2.5, 2.4], &[0.2, 0.21, 0.2], &[50.0, 50.0, 50.0]);
        s.alarm_statistic = Statistic::Percentile(99.0);
        let breach = breaching_periods(&s.alarm_stat, 1.0, Comparison::GreaterThan);
        let finding = low_traffic_artifact(&s, &breach);
        assert_eq!(finding.verdict, Verdict::Supported, "{}", finding.summary);
        assert!(
            finding.summary.contains("a p99 this thin"),
            "{}",
            finding.summary
        );
        s.alarm_statistic = Statistic::Average;
        assert_eq!(
            low_traffic_artifact(&s, &breach).verdict,
            Verdict::Inconclusive,
            "50 a minute is enough for an Average not to be a few requests"
        );
    }

    #[test]
    fn zero_datapoints_decide_nothing() {
        let s = stats(&[], &[], &[]);
        let breach = breaching_periods(&s.alarm_stat, 0.8, Comparison::GreaterThan);
        assert_eq!(
            low_traffic_artifact(&s, &breach).verdict,
            Verdict::Inconclusive
        );
        assert_eq!(
            outliers(spread_of(&s), &breach, 0.8).verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn medium_traffic_is_inconclusive() {
        let s = stats(&[1.2], &[0.6], &[60.0]);
        let breach = breaching_periods(&s.alarm_stat, 1.0, Comparison::GreaterThan);
        assert_eq!(
            low_traffic_artifact(&s, &breach).verdict,
            Verdict::Inconclusive
        );
        assert_eq!(
            outliers(spread_of(&s), &breach, 1.0).verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn series_are_put_on_a_regular_grid_with_gaps() {
        let s = MetricSeries {
            id: "x".into(),
            points: vec![(t(0), 1.0), (t(2), 3.0)],
        };
        assert_eq!(to_series(&s, 60).values, vec![Some(1.0), None, Some(3.0)]);
    }
}
