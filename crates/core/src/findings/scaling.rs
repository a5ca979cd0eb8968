//! Whether the HPA scales in too eagerly: it removes pods the traffic still
//! needs, the rest saturate and the alarm fires, it scales back out, and the
//! cycle repeats. The pod count over time comes from the pods' own series
//! (a pod has samples only while it exists), so no scaling event is needed.

use chrono::{DateTime, Duration, Utc};

use crate::diagnosis::{Evidence, Finding, FindingId, Verdict};
use crate::evidence::workload::{PodSeries, Workload};

/// How long before an episode a scale-in counts as its trigger.
const LEAD: Duration = Duration::minutes(20);
/// A gap between breaching periods this long starts a new episode.
const EPISODE_GAP: Duration = Duration::minutes(5);

const HYPOTHESIS: &str =
    "The HPA scales in too eagerly: pods removed, the rest saturate, scaled back out, again";

/// The number of the workload's pods at each instant, oldest first: the
/// fleet's count when Prometheus gave it (removed pods included), else the
/// pods with a sample.
pub fn pod_count(series: &PodSeries) -> Vec<(DateTime<Utc>, usize)> {
    if !series.pod_count.is_empty() {
        return series
            .pod_count
            .iter()
            .map(|(t, n)| (*t, n.round().max(0.0) as usize))
            .collect();
    }
    let mut instants: Vec<DateTime<Utc>> = series
        .cpu
        .values()
        .flat_map(|points| points.iter().map(|(t, _)| *t))
        .collect();
    instants.sort();
    instants.dedup();
    instants
        .into_iter()
        .map(|t| {
            let present = series
                .cpu
                .values()
                .filter(|points| points.binary_search_by_key(&t, |(at, _)| *at).is_ok())
                .count();
            (t, present)
        })
        .collect()
}

/// The first period of each run of breaching periods.
fn episode_starts(breach: &[DateTime<Utc>]) -> Vec<DateTime<Utc>> {
    let mut starts = Vec::new();
    let mut previous: Option<DateTime<Utc>> = None;
    for t in breach {
        if previous.is_none_or(|p| *t - p > EPISODE_GAP) {
            starts.push(*t);
        }
        previous = Some(*t);
    }
    starts
}

/// Times the count went down, and up, ignoring one-sample blips.
fn moves(count: &[(DateTime<Utc>, usize)]) -> (usize, usize) {
    let mut settled: Vec<usize> = Vec::new();
    for window in count.windows(2) {
        // A level held for two samples in a row.
        if window[0].1 == window[1].1 && settled.last() != Some(&window[1].1) {
            settled.push(window[1].1);
        }
    }
    let downs = settled.windows(2).filter(|w| w[1] < w[0]).count();
    let ups = settled.windows(2).filter(|w| w[1] > w[0]).count();
    (downs, ups)
}

/// Decided when an HPA scales the workload and the pods' series were read.
pub fn scale_in_before_breaches(
    workload: &Workload,
    series: Option<&PodSeries>,
    breach: &[DateTime<Utc>],
) -> Option<Finding> {
    let hpa = workload.hpa.as_ref()?;
    let count = pod_count(series?);
    if count.is_empty() {
        return None;
    }
    let (downs, ups) = moves(&count);
    let starts = episode_starts(breach);
    let at = |t: DateTime<Utc>| count.iter().rev().find(|(at, _)| *at <= t).map(|(_, n)| *n);
    // Each episode: the pods just before it began, and the most in the lead-up.
    let after_scale_in: Vec<(usize, usize)> = starts
        .iter()
        .filter_map(|start| {
            let now = at(*start)?;
            let before = count
                .iter()
                .filter(|(t, _)| *t < *start && *t >= *start - LEAD)
                .map(|(_, n)| *n)
                .max()?;
            (before > now).then_some((before, now))
        })
        .collect();
    let behaviour = match &hpa.scale_down {
        Some(b) => format!(
            "scaleDown: stabilization window {}, policies {}",
            b.stabilization_window_seconds
                .map_or("default (300 s)".to_owned(), |s| format!("{s} s")),
            if b.policies.is_empty() {
                "default".to_owned()
            } else {
                b.policies.join(", ")
            }
        ),
        None => format!(
            "no behavior.scaleDown read ({}): Kubernetes' defaults, a 300 s window and up to every pod at once",
            hpa.api_version
        ),
    };
    let mut evidence = vec![
        Evidence::number("scale-ins in the window", downs as f64, ""),
        Evidence::number("scale-outs in the window", ups as f64, ""),
        Evidence::number("breach episodes", starts.len() as f64, ""),
        Evidence::number(
            "episodes that began within 20 min of a scale-in",
            after_scale_in.len() as f64,
            "",
        ),
        Evidence::text("HPA behaviour", behaviour.clone()),
    ];
    if let Some((lo, hi)) = count
        .iter()
        .map(|(_, n)| *n)
        .min()
        .zip(count.iter().map(|(_, n)| *n).max())
    {
        evidence.push(Evidence::text(
            "pods over the window",
            format!("{lo} to {hi}"),
        ));
    }
    let oscillates = downs >= 2 && ups >= 2;
    let (verdict, summary, clause) = if oscillates
        && starts.len() >= 2
        && after_scale_in.len() * 3 >= starts.len() * 2
    {
        let (before, after) = after_scale_in[after_scale_in.len() - 1];
        (
            Verdict::Supported,
            format!(
                "The pod count went down {downs} and up {ups} times in the window, and {} of {} breach episodes began within 20 min of a scale-in (the last from {before} to {after} pods): {} removes pods the traffic still needs, the rest saturate, and it scales back out ({behaviour}).",
                after_scale_in.len(),
                starts.len(),
                hpa.name
            ),
            Some(format!(
                "HPA scales in too eagerly ({} of {} episodes after a scale-in)",
                after_scale_in.len(),
                starts.len()
            )),
        )
    } else if downs == 0 || after_scale_in.is_empty() && !starts.is_empty() {
        (
            Verdict::Refuted,
            if downs == 0 {
                "The pod count never went down in the window: no scale-in preceded the breach."
                    .to_owned()
            } else {
                "No breach episode began within 20 min of a scale-in.".to_owned()
            },
            Some("scale-in: none before the breach".to_owned()),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!(
                "The pod count went down {downs} and up {ups} times; {} of {} breach episodes followed a scale-in: too few to call a pattern.",
                after_scale_in.len(),
                starts.len()
            ),
            None,
        )
    };
    Some(Finding {
        evidence,
        ..Finding::decided(
            FindingId::HpaScalesInTooEagerly,
            HYPOTHESIS,
            verdict,
            summary,
            clause,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::minutes::at;

    /// Pods `name -> (first minute, last minute)` sampled every minute over 0..minutes.
    fn series(pods: &[(&str, i64, i64)]) -> PodSeries {
        PodSeries {
            step_seconds: 60,
            cpu: pods
                .iter()
                .map(|(name, from, to)| {
                    (
                        (*name).to_owned(),
                        (*from..=*to).map(|m| (at(m), 0.5)).collect(),
                    )
                })
                .collect(),
            ..PodSeries::default()
        }
    }

    fn with_hpa() -> Workload {
        serde_json::from_value(serde_json::json!({
            "cluster": null,
            "service": {"namespace": "shop", "name": "web", "source": "target_group_binding"},
            "selector": {},
            "pods": [],
            "deployment": null,
            "hpa": {"name": "web", "api_version": "autoscaling/v2", "created_as_v1": false,
                    "min_replicas": 2, "max_replicas": 6, "target_cpu_utilization": 60,
                    "other_metrics": [], "current_replicas": 4, "desired_replicas": 4,
                    "current_cpu_utilization": 50, "conditions": []},
            "snapshot": null,
            "nodes": [],
            "partial": []
        }))
        .unwrap()
    }

    #[test]
    fn breaches_that_follow_each_scale_in_of_an_oscillating_fleet_blame_the_hpas_scale_down() {
        // Four pods; two removed at 20 and 60, added back at 35 and 75;
        // the alarm breaches at 25-30 and 65-70, after each removal.
        let pods = series(&[
            ("web-a", 0, 99),
            ("web-b", 0, 99),
            ("web-c", 0, 19),
            ("web-d", 0, 19),
            ("web-e", 35, 59),
            ("web-f", 35, 59),
            ("web-g", 75, 99),
            ("web-h", 75, 99),
        ]);
        let breach: Vec<_> = (25..=30).chain(65..=70).map(at).collect();
        let f = scale_in_before_breaches(&with_hpa(), Some(&pods), &breach).unwrap();
        assert_eq!(f.verdict, Verdict::Supported, "{}", f.summary);
        assert!(
            f.summary.contains("2 of 2 breach episodes"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn the_fleets_count_from_prometheus_wins_over_the_pods_running_now() {
        // Only the two pods that survive have series; the count saw 4 -> 2 twice.
        let mut pods = series(&[("web-a", 0, 99), ("web-b", 0, 99)]);
        pods.pod_count = (0..100)
            .map(|m| {
                let n = if (20..35).contains(&m) || (60..75).contains(&m) {
                    2.0
                } else {
                    4.0
                };
                (at(m), n)
            })
            .collect();
        let breach: Vec<_> = (25..=30).chain(65..=70).map(at).collect();
        let f = scale_in_before_breaches(&with_hpa(), Some(&pods), &breach).unwrap();
        assert_eq!(f.verdict, Verdict::Supported, "{}", f.summary);
    }

    #[test]
    fn a_steady_fleet_never_scaled_in_before_the_breach() {
        let pods = series(&[("web-a", 0, 99), ("web-b", 0, 99)]);
        let breach: Vec<_> = (25..=30).map(at).collect();
        let f = scale_in_before_breaches(&with_hpa(), Some(&pods), &breach).unwrap();
        assert_eq!(f.verdict, Verdict::Refuted);
    }

    #[test]
    fn without_an_hpa_or_series_nothing_is_said() {
        let mut w = with_hpa();
        let pods = series(&[("web-a", 0, 99)]);
        assert!(scale_in_before_breaches(&w, None, &[]).is_none());
        w.hpa = None;
        assert!(scale_in_before_breaches(&w, Some(&pods), &[]).is_none());
    }
}
