//! Next steps: proposals for people with the read-only commands that confirm
//! them. Nothing here (or anywhere in the bot) changes AWS or Kubernetes.
//!
//! Each proposal is one small rule in [`rules`]: a pure function from the
//! typed findings to a proposal or nothing. [`propose`] runs them in the
//! order people should read them.

mod commands;
mod rules;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};

use crate::classify::Classification;
use crate::diagnosis::summary::{TargetGroupSummary, WorkloadSummary};
use crate::diagnosis::{AlarmFacts, Facts, Finding, FindingId, NextStep, ReportKind, Verdict};
use crate::findings::Decided;

pub use commands::shell_quote;

/// What every rule reads: the alarm, its behaviour and the typed findings.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub alarm: &'a AlarmFacts,
    pub classification: &'a Classification,
    pub findings: &'a [Finding],
    pub target_groups: &'a [TargetGroupSummary],
    pub workload: Option<&'a WorkloadSummary>,
    pub now: DateTime<Utc>,
}

impl<'a> Context<'a> {
    /// The finding with `id`, when the evidence supports it.
    pub fn supported(&self, id: FindingId) -> Option<&'a Finding> {
        self.findings
            .iter()
            .find(|f| f.id == id && f.verdict == Verdict::Supported)
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

/// The rules after the flapping and culprit steps, in reading order: the
/// workload's own levers first, then the load balancer and the alarm itself.
pub const RULES: [Rule; 14] = [
    rules::more_workers_per_pod,
    rules::let_the_hpa_react,
    rules::look_at_the_hot_pod,
    rules::more_cpu_headroom,
    rules::add_a_readiness_probe,
    rules::compare_the_rollout,
    rules::find_why_pods_are_pending,
    rules::spread_pods_across_nodes,
    rules::treat_as_low_traffic_artifact,
    rules::find_why_targets_are_unhealthy,
    rules::consider_least_outstanding_requests,
    rules::look_at_what_groups_share,
    rules::break_down_per_target_group,
    rules::alarm_on_p99_per_target_group,
];

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
        now,
    };
    if kind == ReportKind::Resolution {
        return vec![rules::after_recovery(&context)];
    }
    let mut steps: Vec<NextStep> = rules::date_the_flapping(&context).into_iter().collect();
    steps.extend(
        context
            .culprits()
            .map(|group| rules::investigate_target_group(&context, group)),
    );
    steps.extend(RULES.iter().filter_map(|rule| rule(&context)));
    if steps.is_empty() {
        steps.push(rules::read_the_history(&context));
    }
    steps
}
