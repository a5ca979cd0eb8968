//! The playbook's hypotheses, each decided by a pure function over collected
//! evidence, with the numbers that decided it.

pub mod alarm;
pub mod alb;
pub mod attribution;
pub mod capacity;
pub mod configuration;
pub mod conviction;
pub mod dependency;
pub mod errors;
pub mod health_check;
pub mod logs;
#[cfg(test)]
pub(crate) mod minutes;
pub mod placement;
pub mod probes;
pub mod registry;
pub mod scaling;
pub mod traffic;
pub mod workload;

use chrono::{DateTime, Utc};

use crate::alarm::facts::{MetricFamily, Statistic};
use crate::classify::Classification;
use crate::diagnosis::summary::{TargetGroupSummary, WorkloadSummary};
use crate::diagnosis::{AlarmFacts, Finding, FindingId, Verdict};
use crate::evidence::family::LoadBalancerFamily;
use crate::evidence::{AlbEvidence, GatheredEvidence, Plan, Statistics};
use alb::AlbAnalysis;

/// The alarm, what was planned and read for it, and what is computed from
/// that once: the breaching periods and the target-group breakdown (the
/// gathering needs it to pick the workload; the findings reuse it).
#[derive(Debug, Clone, PartialEq)]
pub struct Investigation {
    /// The alarm, completed from its definition when that was read.
    pub alarm: AlarmFacts,
    pub plan: Plan,
    pub evidence: GatheredEvidence,
    /// The periods in which the alarm's statistic breached its threshold.
    pub breach: Vec<DateTime<Utc>>,
    pub breakdown: Option<AlbAnalysis>,
}

impl Investigation {
    /// Completes the alarm from the definition read, then computes the
    /// breaching periods and the breakdown.
    pub fn of(mut alarm: AlarmFacts, plan: Plan, evidence: GatheredEvidence) -> Self {
        if let Some(Some(definition)) = &evidence.definition {
            alarm.complete_from(definition);
        }
        let breach = breaching_periods(&alarm, evidence.statistics.as_ref());
        let breakdown = breakdown(
            &alarm,
            plan.family,
            &breach,
            evidence.statistics.as_ref(),
            evidence.alb.as_ref(),
        );
        Investigation {
            alarm,
            plan,
            evidence,
            breach,
            breakdown,
        }
    }
}

/// The periods in which the alarm's statistic breached its threshold.
fn breaching_periods(alarm: &AlarmFacts, statistics: Option<&Statistics>) -> Vec<DateTime<Utc>> {
    match (statistics, alarm.threshold) {
        (Some(stats), Some(threshold)) => {
            traffic::breaching_periods(&stats.alarm_stat, threshold, alarm.comparison_or_default())
        }
        _ => Vec::new(),
    }
}

/// Which target groups explain the breach, when the load balancer and its groups were read.
fn breakdown(
    alarm: &AlarmFacts,
    family: Option<&'static LoadBalancerFamily>,
    breach: &[DateTime<Utc>],
    statistics: Option<&Statistics>,
    alb: Option<&AlbEvidence>,
) -> Option<AlbAnalysis> {
    let alb = alb?;
    let family = family?;
    let threshold = alarm.threshold?;
    if alb.load_balancer.is_none() || alb.groups.is_empty() {
        return None;
    }
    // A rate alarm combines its groups' rates weighted by their requests: a mean.
    let rate = statistics.and_then(|s| s.per_request_scale);
    let statistic = match rate {
        Some(_) => Statistic::Average,
        None => alarm.evaluated_statistic(),
    };
    let metric = alarm.metric_name().unwrap_or_default();
    Some(alb::analyse(
        alb,
        breach,
        alb::AlarmShape {
            family: alarm.family(),
            load_balancer: family.short,
            per_load_balancer_only: family.per_load_balancer(metric),
            statistic: &statistic,
            threshold,
            comparison: alarm.comparison_or_default(),
            period_seconds: alarm.period(),
            unit: match rate {
                Some(scale) if (scale - 100.0).abs() < f64::EPSILON => "%",
                Some(_) => "",
                None => crate::evidence::model::unit_of_metric(alarm.metric_name()),
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
    /// What changed around the breach.
    pub changes: crate::changes::Timeline,
    /// When the symptom began (the culprit's own series, else the alarm's).
    pub onset: crate::suspects::Onset,
    /// What the onset was read from, for people.
    pub symptom: String,
    /// What the culprit's pods printed, when their logs were read.
    pub logs: Option<crate::logs::LogReport>,
}

/// What every decider reads.
#[derive(Debug)]
pub struct Scope<'a> {
    pub investigation: &'a Investigation,
    pub classification: &'a Classification,
    pub now: DateTime<Utc>,
}

/// One step of the decision: reads the scope and what was decided before it,
/// adds findings, summaries and notes.
type Decider = fn(&Scope<'_>, &mut Decided);

/// The deciders, in the order they run: later ones read what earlier ones
/// decided (the culprit group, the workload's summary, the findings so far).
const DECIDERS: [(&str, Decider); 10] = [
    ("the alarm's behaviour", alarm_behaviour),
    ("the traffic", traffic_behind_the_breach),
    ("the load balancer", load_balancer),
    ("the standing level", conviction::standing_level),
    ("what changed", configuration::what_changed),
    ("the workload", workload_behind_the_culprit),
    ("outliers or broad slowness", outliers_or_broad_slowness),
    ("a dependency", waiting_downstream),
    ("the logs", logs::what_the_logs_say),
    ("the routing algorithm", routing_algorithm),
];

/// Decides every hypothesis the evidence allows, then each finding's role.
pub fn decide(
    classification: &Classification,
    investigation: &Investigation,
    now: DateTime<Utc>,
) -> Decided {
    let scope = Scope {
        investigation,
        classification,
        now,
    };
    let mut decided = Decided::default();
    for (_, decider) in DECIDERS {
        decider(&scope, &mut decided);
    }
    registry::assign(&mut decided.findings);
    conviction::convict(&scope, &mut decided);
    decided
}

fn alarm_behaviour(scope: &Scope<'_>, decided: &mut Decided) {
    let evidence = &scope.investigation.evidence;
    decided.findings.push(alarm::alarm_behaviour(
        scope.classification,
        evidence.history.is_some(),
    ));
    if let Some(None) = &evidence.definition {
        decided.notes.push(format!(
            "the alarm {} no longer exists (deleted after it notified); the diagnosis rests on the notification and the metrics",
            scope.investigation.alarm.name
        ));
    }
}

fn traffic_behind_the_breach(scope: &Scope<'_>, decided: &mut Decided) {
    let Investigation {
        alarm,
        evidence,
        breach,
        ..
    } = scope.investigation;
    if let (Some(stats), Some(_)) = (&evidence.statistics, alarm.threshold) {
        if stats.alarm_stat.points.is_empty() {
            decided.notes.push(format!(
                "CloudWatch returned no datapoints for {} in the window: the metric may have stopped reporting",
                alarm.metric
            ));
        }
        // Too few requests for a statistic to mean much is a question about
        // requests: an NLB counts flows and bytes, and has no response time.
        let requests = scope.investigation.plan.family.is_none_or(|f| f.http);
        if requests {
            decided
                .findings
                .push(traffic::low_traffic_artifact(stats, breach));
        }
    }
}

fn load_balancer(scope: &Scope<'_>, decided: &mut Decided) {
    let investigation = scope.investigation;
    let Investigation {
        alarm,
        evidence,
        breach,
        ..
    } = investigation;
    let (Some(alb_evidence), Some(_)) = (&evidence.alb, alarm.threshold) else {
        return;
    };
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
            decided.target_groups = analysis.summaries.clone();
            let periods = alb::periods_considered(alb_evidence, breach, alarm.period());
            // A client-error alarm asks too whether users also got 5xx:
            // 4xx with healthy 5xx are about the callers.
            let error_alarm =
                alarm.family().is_failure() || alarm.family() == MetricFamily::ClientErrors;
            // Who answered the 5xx, and whether slow requests fail the
            // health checks, are HTTP questions: an NLB has neither.
            let http = investigation.plan.family.is_some_and(|f| f.http);
            if error_alarm && http {
                decided
                    .findings
                    .extend(errors::split(alb_evidence, &analysis.summaries, &periods));
            }
            // Any alarm whose targets failed health checks gets the check
            // weighed against the latency; others only hear of it for
            // alarms about errors and health.
            let check =
                health_check::timeout_under_load(alb_evidence, &analysis.summaries, &periods);
            if http && (error_alarm || check.verdict != Verdict::Refuted) {
                decided.findings.push(check);
            }
        }
        (Some(_), None) => {}
    }
}

fn workload_behind_the_culprit(scope: &Scope<'_>, decided: &mut Decided) {
    let Investigation {
        evidence, breach, ..
    } = scope.investigation;
    let Some(w) = &evidence.workload else {
        return;
    };
    let (findings, summary) = workload::decide(
        w,
        evidence.pod_series.as_ref(),
        breach,
        scope.classification,
        scope.now,
    );
    decided.findings.extend(findings);
    let targets = evidence
        .alb
        .as_ref()
        .and_then(|a| {
            let culprit = decided.target_groups.iter().find(|g| g.culprit)?;
            a.groups.iter().find(|g| g.group.name == culprit.name)
        })
        .and_then(|g| g.health.as_deref())
        .unwrap_or_default();
    let factor = placement::common_factor(w, evidence.pod_series.as_ref(), breach, targets);
    // Another group that moved has its pods on the same troubled node: the
    // node is to blame, not the one service the breakdown singled out.
    let sharing = placement::groups_sharing_the_node(&factor, &decided.target_groups);
    if !sharing.is_empty() {
        let names: Vec<String> = sharing
            .iter()
            .map(|i| decided.target_groups[*i].label())
            .collect();
        let singled_out: Vec<String> = decided
            .target_groups
            .iter()
            .filter(|g| g.culprit)
            .map(|g| g.label())
            .collect();
        for group in &mut decided.target_groups {
            group.culprit = false;
        }
        // The breakdown's "one group is slow while the others stay normal" no longer holds.
        if let Some(shared) = decided
            .findings
            .iter_mut()
            .find(|f| f.id == FindingId::SharedLoadBalancerProblem)
        {
            shared.cause = None;
            shared.ruled_out_by = Some(format!(
                "shared load balancer: only {} and {} moved, their bad pods on one node",
                singled_out.join(", "),
                names.join(", ")
            ));
            shared.summary = format!(
                "{} and {} moved, not every group: the load balancer they share is not the problem; their bad pods share a node (see placement.common_factor).",
                singled_out.join(", "),
                names.join(", ")
            );
        }
        decided.notes.push(format!(
            "{} also moved and has pods on the same node: no one group is to blame",
            names.join(", ")
        ));
    }
    decided.findings.push(factor);
    decided.findings.extend(scaling::scale_in_before_breaches(
        w,
        evidence.pod_series.as_ref(),
        breach,
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

/// Outliers vs broad slowness: inside the culprit group when there is one
/// (the load balancer's median mixes fast and slow services), else on the
/// whole metric. Average alarms that fire going up only.
fn outliers_or_broad_slowness(scope: &Scope<'_>, decided: &mut Decided) {
    let Investigation {
        alarm,
        evidence,
        breach,
        ..
    } = scope.investigation;
    let average_alarm = alarm.statistic == Some(Statistic::Average)
        && alarm.comparison_or_default().fires_upwards();
    let (true, Some(threshold)) = (average_alarm, alarm.threshold) else {
        return;
    };
    let culprit = evidence.alb.as_ref().and_then(|a| {
        let name = &decided.target_groups.iter().find(|g| g.culprit)?.name;
        a.groups.iter().find(|g| &g.group.name == name)
    });
    let unit = crate::evidence::model::unit_of_metric(alarm.metric_name());
    let scope_name;
    let spread = match culprit {
        Some(g) => {
            scope_name = format!("target group {}", g.group.name);
            Some(traffic::Spread {
                scope: &scope_name,
                average: &g.metric,
                p50: &g.p50,
                p99: &g.p99,
                maximum: &g.maximum,
                period_seconds: alarm.period(),
                unit,
            })
        }
        None => evidence.statistics.as_ref().map(|stats| traffic::Spread {
            unit,
            ..traffic::spread_of(stats)
        }),
    };
    if let Some(spread) = spread {
        let position = decided.findings.len().min(2);
        decided
            .findings
            .insert(position, traffic::outliers(spread, breach, threshold));
    }
}

/// Waiting on a dependency explains slow requests: latency alarms only
/// (pods that get no traffic are idle too, and that is no dependency).
fn waiting_downstream(scope: &Scope<'_>, decided: &mut Decided) {
    if let (Some(workload), MetricFamily::Latency) =
        (&decided.workload, scope.investigation.alarm.family())
    {
        let waiting = dependency::waiting_downstream(&decided.findings, workload);
        decided.findings.push(waiting);
    }
}

/// Least outstanding requests, where the load balancer lets groups choose.
fn routing_algorithm(scope: &Scope<'_>, decided: &mut Decided) {
    let routing = scope
        .investigation
        .plan
        .family
        .is_some_and(|f| f.routing_algorithms);
    if let Some(lor) = alb::least_outstanding_requests(&decided.target_groups, &decided.findings)
        .filter(|_| routing)
    {
        decided.findings.push(lor);
    }
}
