//! The playbook's hypotheses, each decided by a pure function over collected
//! evidence, with the numbers that decided it.

pub mod alarm;
pub mod alb;
pub mod attribution;
pub mod capacity;
pub mod dependency;
pub mod errors;
pub mod health_check;
#[cfg(test)]
pub(crate) mod minutes;
pub mod probes;
pub mod roles;
pub mod scaling;
pub mod traffic;
pub mod workload;

use chrono::{DateTime, Utc};

use crate::classify::Classification;
use crate::diagnosis::summary::{TargetGroupSummary, WorkloadSummary};
use crate::diagnosis::{AlarmFacts, Finding, Verdict};
use crate::evidence::{AlbEvidence, GatheredEvidence, Statistics};
use alb::AlbAnalysis;

/// The evidence, and the target-group breakdown computed from it once (the
/// gathering needs it to pick the workload; the findings reuse it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Investigation {
    pub evidence: GatheredEvidence,
    pub breakdown: Option<AlbAnalysis>,
}

impl Investigation {
    /// Computes the breakdown from recorded evidence (offline runs, tests).
    pub fn of(alarm: &AlarmFacts, evidence: GatheredEvidence) -> Self {
        let breakdown = breakdown(alarm, evidence.statistics.as_ref(), evidence.alb.as_ref());
        Investigation {
            evidence,
            breakdown,
        }
    }
}

/// The comparison an alarm uses, CloudWatch's most common when it does not say.
fn comparison_of(alarm: &AlarmFacts) -> &str {
    alarm
        .comparison
        .as_deref()
        .unwrap_or("GreaterThanThreshold")
}

/// The periods in which the alarm's statistic breached its threshold.
pub fn breaching_periods(
    alarm: &AlarmFacts,
    statistics: Option<&Statistics>,
) -> Vec<DateTime<Utc>> {
    match (statistics, alarm.threshold) {
        (Some(stats), Some(threshold)) => {
            traffic::breaching_periods(&stats.alarm_stat, threshold, comparison_of(alarm))
        }
        _ => Vec::new(),
    }
}

/// Which target groups explain the breach, when the load balancer and its groups were read.
pub fn breakdown(
    alarm: &AlarmFacts,
    statistics: Option<&Statistics>,
    alb: Option<&AlbEvidence>,
) -> Option<AlbAnalysis> {
    let alb = alb?;
    let threshold = alarm.threshold?;
    if alb.load_balancer.is_none() || alb.groups.is_empty() {
        return None;
    }
    // A rate alarm combines its groups' rates weighted by their requests: a mean.
    let rate = statistics.and_then(|s| s.per_request_scale);
    Some(alb::analyse(
        alb,
        &breaching_periods(alarm, statistics),
        alb::AlarmShape {
            metric: alarm.metric_name.as_deref().unwrap_or_default(),
            statistic: match rate {
                Some(_) => "Average",
                None => alarm.statistic.as_deref().unwrap_or("Average"),
            },
            threshold,
            comparison: comparison_of(alarm),
            period_seconds: alarm.period_seconds.unwrap_or(60),
            unit: match rate {
                Some(scale) if (scale - 100.0).abs() < f64::EPSILON => "%",
                Some(_) => "",
                None => crate::evidence::model::unit_of_metric(alarm.metric_name.as_deref()),
            },
            watched_group: alarm.dimension("TargetGroup"),
            observed: statistics.map(|s| &s.alarm_stat),
        },
    ))
}

/// Everything the findings step contributes to a diagnosis.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decided {
    pub findings: Vec<Finding>,
    pub target_groups: Vec<TargetGroupSummary>,
    pub workload: Option<WorkloadSummary>,
    /// Facts about the evidence itself (the alarm was deleted, the load balancer is gone, ...).
    pub notes: Vec<String>,
}

/// Decides every hypothesis the evidence allows.
pub fn decide(
    alarm: &AlarmFacts,
    classification: &Classification,
    investigation: &Investigation,
    now: DateTime<Utc>,
) -> Decided {
    let evidence = &investigation.evidence;
    let mut decided = Decided {
        findings: vec![alarm::alarm_behaviour(
            classification,
            evidence.history.is_some(),
        )],
        ..Decided::default()
    };
    if let Some(None) = &evidence.definition {
        decided.notes.push(format!(
            "the alarm {} no longer exists (deleted after it notified); the diagnosis rests on the notification and the metrics",
            alarm.name
        ));
    }
    let threshold = alarm.threshold;
    let comparison = comparison_of(alarm);
    let breach = breaching_periods(alarm, evidence.statistics.as_ref());
    if let (Some(stats), Some(_)) = (&evidence.statistics, threshold) {
        if stats.alarm_stat.points.is_empty() {
            decided.notes.push(format!(
                "CloudWatch returned no datapoints for {} in the window: the metric may have stopped reporting",
                alarm.metric
            ));
        }
        decided
            .findings
            .push(traffic::low_traffic_artifact(stats, &breach));
    }
    if let (Some(alb_evidence), Some(_)) = (&evidence.alb, threshold) {
        match (&alb_evidence.load_balancer, &investigation.breakdown) {
            (None, _) => decided.notes.push(format!(
                "the load balancer {} no longer exists: no target-group breakdown",
                alarm.dimension("LoadBalancer").unwrap_or("?")
            )),
            (Some(_), _) if alb_evidence.groups.is_empty() => {
                decided
                    .notes
                    .push("the load balancer has no target groups".to_owned());
            }
            (Some(_), Some(analysis)) => {
                decided.findings.extend(analysis.findings.iter().cloned());
                if let (Some(found), Some(threshold)) = (&analysis.attribution, threshold) {
                    decided
                        .findings
                        .extend(alarm::threshold_inside_normal_range(
                            found,
                            evidence.statistics.as_ref().map(|s| &s.alarm_stat),
                            threshold,
                            crate::evidence::model::unit_of_metric(alarm.metric_name.as_deref()),
                        ));
                }
                decided.target_groups = analysis.summaries.clone();
                let periods = alb::periods_considered(
                    alb_evidence,
                    &breach,
                    alarm.period_seconds.unwrap_or(60),
                );
                let error_alarm = alarm
                    .metric_name
                    .as_deref()
                    .is_some_and(errors::is_error_alarm);
                if error_alarm {
                    decided.findings.extend(errors::split(
                        alb_evidence,
                        &analysis.summaries,
                        &periods,
                    ));
                }
                // Any alarm whose targets failed health checks gets the check
                // weighed against the latency; others only hear of it for
                // alarms about errors and health.
                let check =
                    health_check::timeout_under_load(alb_evidence, &analysis.summaries, &periods);
                if error_alarm || check.verdict != Verdict::Refuted {
                    decided.findings.push(check);
                }
            }
            (Some(_), None) => {}
        }
    }
    if let Some(w) = &evidence.workload {
        let (findings, summary) = workload::decide(
            w,
            evidence.pod_series.as_ref(),
            &breach,
            classification,
            now,
        );
        decided.findings.extend(findings);
        decided.findings.extend(scaling::scale_in_before_breaches(
            w,
            evidence.pod_series.as_ref(),
            &breach,
        ));
        decided.workload = Some(summary);
        // The cluster's TargetGroupBinding settles what AWS's tags or name only suggested.
        if w.service.source == crate::evidence::service_map::MappingSource::TargetGroupBinding
            && let Some(culprit) = decided.target_groups.iter_mut().find(|g| g.culprit)
        {
            culprit.kubernetes_service = Some(w.service.clone());
        }
        for (part, reason) in &w.partial {
            decided
                .notes
                .push(format!("kubernetes: {part} not read: {reason}"));
        }
    }
    // Outliers vs broad slowness: inside the culprit group when there is one
    // (the load balancer's median mixes fast and slow services), else on the whole metric.
    let average_alarm =
        alarm.statistic.as_deref() == Some("Average") && comparison.starts_with("GreaterThan");
    if let (true, Some(threshold)) = (average_alarm, threshold) {
        let culprit = evidence.alb.as_ref().and_then(|a| {
            let name = &decided.target_groups.iter().find(|g| g.culprit)?.name;
            a.groups.iter().find(|g| &g.group.name == name)
        });
        let scope;
        let spread = match culprit {
            Some(g) => {
                scope = format!("target group {}", g.group.name);
                Some(traffic::Spread {
                    scope: &scope,
                    average: &g.metric,
                    p50: &g.p50,
                    p99: &g.p99,
                    maximum: &g.maximum,
                    period_seconds: alarm.period_seconds.unwrap_or(60),
                    unit: crate::evidence::model::unit_of_metric(alarm.metric_name.as_deref()),
                })
            }
            None => evidence.statistics.as_ref().map(|stats| traffic::Spread {
                unit: crate::evidence::model::unit_of_metric(alarm.metric_name.as_deref()),
                ..traffic::spread_of(stats)
            }),
        };
        if let Some(spread) = spread {
            let position = decided.findings.len().min(2);
            decided
                .findings
                .insert(position, traffic::outliers(spread, &breach, threshold));
        }
    }
    // Waiting on a dependency explains slow requests: latency alarms only
    // (pods that get no traffic are idle too, and that is no dependency).
    if let (Some(workload), Some("TargetResponseTime")) =
        (&decided.workload, alarm.metric_name.as_deref())
    {
        let waiting = dependency::waiting_downstream(&decided.findings, workload);
        decided.findings.push(waiting);
    }
    if let Some(lor) = alb::least_outstanding_requests(&decided.target_groups, &decided.findings) {
        decided.findings.push(lor);
    }
    roles::assign(&mut decided.findings);
    decided
}
