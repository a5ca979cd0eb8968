//! Next steps: proposals for people with the read-only commands that confirm
//! them. Nothing here (or anywhere in the bot) changes AWS or Kubernetes.
//!
//! Each proposal is one small rule in [`rules`]: a pure function from the
//! typed findings to a proposal or nothing. [`propose`] runs them in the
//! order people should read them.

mod commands;
mod errors_and_capacity;
mod rules;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};

use crate::classify::Classification;
use crate::diagnosis::finding::Role;
use crate::diagnosis::summary::{TargetGroupSummary, WorkloadSummary};
use crate::diagnosis::{AlarmFacts, Facts, Finding, FindingId, NextStep, ReportKind, Verdict};
use crate::findings::Decided;
use crate::findings::registry::causal_rank;

pub use commands::shell_quote;

/// What every rule reads: the alarm, its behaviour and the typed findings.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub alarm: &'a AlarmFacts,
    pub classification: &'a Classification,
    pub findings: &'a [Finding],
    pub target_groups: &'a [TargetGroupSummary],
    pub workload: Option<&'a WorkloadSummary>,
    /// What changed around the breach, oldest first.
    pub changes: &'a [crate::changes::Change],
    pub now: DateTime<Utc>,
}

impl<'a> Context<'a> {
    /// The finding with `id`, when the evidence supports it.
    pub fn supported(&self, id: FindingId) -> Option<&'a Finding> {
        self.findings
            .iter()
            .find(|f| f.id == id && f.verdict == Verdict::Supported)
    }

    /// The finding with `id`, when it is one of the breach's causes.
    pub fn cause(&self, id: FindingId) -> Option<&'a Finding> {
        self.findings
            .iter()
            .find(|f| f.id == id && f.role == Role::Cause)
    }

    /// The typed facts of finding `id`, whatever its verdict.
    pub fn facts(&self, id: FindingId) -> &'a Facts {
        self.findings
            .iter()
            .find(|f| f.id == id)
            .map_or(&Facts::None, |f| &f.facts)
    }

    /// The target groups named as behind the alarm.
    pub fn culprits(&self) -> impl Iterator<Item = &'a TargetGroupSummary> {
        self.target_groups.iter().filter(|g| g.culprit)
    }
}

/// A proposal, or nothing when the findings do not call for it.
pub type Rule = fn(&Context<'_>) -> Option<NextStep>;

/// The rules, each with the finding it acts on. [`propose`] runs a rule only
/// when its finding is a cause of the breach (a context or ruled-out finding
/// gets no next step), causes in causal order; the generic steps (date the
/// flapping, investigate the culprit group) follow them, and rules about the
/// alarm itself (no finding) come last.
pub const RULES: [(Option<FindingId>, Rule); 29] = [
    (
        Some(FindingId::CommonFactor),
        errors_and_capacity::look_at_the_place,
    ),
    (Some(FindingId::WorkerCeiling), rules::more_workers_per_pod),
    (Some(FindingId::HpaCannotReact), rules::let_the_hpa_react),
    (
        Some(FindingId::HpaScalesInTooEagerly),
        rules::slow_the_hpas_scale_in,
    ),
    (Some(FindingId::PodImbalance), rules::look_at_the_hot_pod),
    (Some(FindingId::PodRestarts), rules::find_why_pods_restarted),
    (
        Some(FindingId::NewLogErrors),
        errors_and_capacity::read_the_new_error,
    ),
    (Some(FindingId::DownstreamWait), rules::look_downstream),
    (Some(FindingId::CpuThrottling), rules::more_cpu_headroom),
    (
        Some(FindingId::ReadinessProbeMissing),
        rules::add_a_readiness_probe,
    ),
    (Some(FindingId::RecentDeploy), rules::compare_the_rollout),
    (
        Some(FindingId::ConfigurationChange),
        errors_and_capacity::review_the_aws_change,
    ),
    (Some(FindingId::RecentDeploy), rules::warm_up_new_pods),
    (
        Some(FindingId::PendingPods),
        rules::find_why_pods_are_pending,
    ),
    (
        Some(FindingId::WorkerCeiling),
        rules::spread_pods_across_nodes,
    ),
    (
        Some(FindingId::LowTrafficArtifact),
        rules::treat_as_low_traffic_artifact,
    ),
    (
        Some(FindingId::UnhealthyTargets),
        rules::find_why_targets_are_unhealthy,
    ),
    // Least outstanding requests acts on uneven pods, and only for latency.
    (
        Some(FindingId::PodImbalance),
        rules::consider_least_outstanding_requests,
    ),
    (
        Some(FindingId::SharedLoadBalancerProblem),
        rules::look_at_what_groups_share,
    ),
    (
        Some(FindingId::TargetErrors),
        errors_and_capacity::read_the_failing_requests,
    ),
    (
        Some(FindingId::LoadBalancerErrors),
        errors_and_capacity::find_what_the_load_balancer_rejects,
    ),
    (
        Some(FindingId::HealthCheckTimeout),
        errors_and_capacity::loosen_the_health_check,
    ),
    (
        Some(FindingId::ProbeFailures),
        errors_and_capacity::read_the_probe_failures,
    ),
    (
        Some(FindingId::NodesBlocked),
        errors_and_capacity::see_why_nodes_are_not_added,
    ),
    (
        Some(FindingId::ThresholdInsideNormalRange),
        rules::revisit_the_threshold,
    ),
    (None, errors_and_capacity::find_the_callers),
    (None, rules::break_down_per_target_group),
    (None, rules::reconsider_the_alarms_statistic),
    (None, rules::alarm_on_p99_per_target_group),
];

/// Where a rule's proposal reads: causes by causal rank, then context, then the rest.
fn reading_order(context: &Context<'_>, subject: Option<&FindingId>) -> (u8, usize) {
    let role = subject.and_then(|id| {
        context
            .findings
            .iter()
            .find(|f| &f.id == id)
            .map(|f| f.role)
    });
    let group = match role {
        Some(Role::Cause) => 0,
        Some(_) => 1,
        None => 2,
    };
    (group, subject.map_or(usize::MAX, causal_rank))
}

/// Proposals that follow from what is known about the alarm and its behaviour.
pub fn propose(
    alarm: &AlarmFacts,
    classification: &Classification,
    decided: &Decided,
    kind: ReportKind,
    now: DateTime<Utc>,
) -> Vec<NextStep> {
    let context = Context {
        alarm,
        classification,
        findings: &decided.findings,
        target_groups: &decided.target_groups,
        workload: decided.workload.as_ref(),
        changes: &decided.changes.changes,
        now,
    };
    let mut ordered: Vec<&(Option<FindingId>, Rule)> = RULES
        .iter()
        .filter(|(subject, _)| {
            subject
                .as_ref()
                .is_none_or(|id| context.cause(id.clone()).is_some())
        })
        .collect();
    ordered.sort_by_key(|(subject, _)| reading_order(&context, subject.as_ref()));
    let (on_causes, on_the_alarm): (Vec<_>, Vec<_>) = ordered
        .into_iter()
        .partition(|(subject, _)| subject.is_some());
    if kind == ReportKind::Resolution {
        // The episode is over: one step that keeps it from coming back (the
        // first cause's), then whether the recovery holds.
        let mut steps: Vec<NextStep> = on_causes
            .iter()
            .find_map(|(_, rule)| rule(&context))
            .into_iter()
            .collect();
        steps.push(rules::after_recovery(&context));
        return steps;
    }
    let mut steps: Vec<NextStep> = on_causes
        .iter()
        .filter_map(|(_, rule)| rule(&context))
        .collect();
    steps.extend(rules::date_the_flapping(&context));
    steps.extend(
        context
            .culprits()
            .map(|group| rules::investigate_target_group(&context, group)),
    );
    steps.extend(on_the_alarm.iter().filter_map(|(_, rule)| rule(&context)));
    if steps.is_empty() {
        steps.push(rules::read_the_history(&context));
    }
    steps
}
