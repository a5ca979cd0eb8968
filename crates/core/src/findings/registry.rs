//! Every finding the playbook decides, one row each, in causal order: the
//! order an on-call engineer follows the chain in. Where it happened (which
//! target group, or nothing changed), what set it off (low traffic, a deploy,
//! a scale-in, restarts), the mechanism in the pods (waiting downstream, a
//! hot pod, a per-process ceiling, throttling), what users then see
//! (failing health checks, unhealthy targets, the load balancer's own
//! errors), why it does not heal itself (the HPA, capacity), and context.
//!
//! A finding's rank is its row's position, and its role when supported is
//! its row's rule: adding a finding is a row here, its decision in the
//! module that reads its evidence, and its steps in `next_steps::RULES`.

use crate::diagnosis::finding::Role;
use crate::diagnosis::{Facts, Finding, FindingId, Verdict};

/// What a supported finding is to the breach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenSupported {
    /// A cause: it explains the breach, and its steps are proposed.
    Cause,
    /// A cause only when the pods are CPU-saturated (an HPA that cannot add
    /// pods explains nothing when the pods have CPU to spare).
    CauseWhenCpuSaturated,
    /// Context: true, worth knowing, not why the alarm fired.
    Context,
}

/// One finding of the playbook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingKind {
    pub id: FindingId,
    pub when_supported: WhenSupported,
}

const fn row(id: FindingId, when_supported: WhenSupported) -> FindingKind {
    FindingKind { id, when_supported }
}

use WhenSupported::{Cause, CauseWhenCpuSaturated, Context};

/// Every finding, in causal order.
pub static FINDINGS: [FindingKind; 25] = [
    // Where: one group changed, all did, or none.
    row(FindingId::SharedLoadBalancerProblem, Cause),
    row(FindingId::ThresholdInsideNormalRange, Cause),
    // Where inside the group: a node or a zone its bad pods share.
    row(FindingId::CommonFactor, Cause),
    // What set it off.
    row(FindingId::LowTrafficArtifact, Cause),
    row(FindingId::RecentDeploy, Cause),
    row(FindingId::ConfigurationChange, Cause),
    // A scale-in sets the breach off as a deploy does.
    row(FindingId::HpaScalesInTooEagerly, Cause),
    row(FindingId::TargetErrors, Cause),
    row(FindingId::PodRestarts, Cause),
    // What the pods say went wrong.
    row(FindingId::NewLogErrors, Cause),
    // The mechanism in the pods.
    row(FindingId::DownstreamWait, Cause),
    row(FindingId::PodImbalance, Cause),
    row(FindingId::WorkerCeiling, Cause),
    row(FindingId::CpuThrottling, Cause),
    // What the load balancer and users then see.
    row(FindingId::HealthCheckTimeout, Cause),
    row(FindingId::ProbeFailures, Cause),
    row(FindingId::UnhealthyTargets, Cause),
    row(FindingId::LoadBalancerErrors, Cause),
    // Why it does not heal itself.
    row(FindingId::HpaCannotReact, CauseWhenCpuSaturated),
    row(FindingId::PendingPods, Cause),
    row(FindingId::NodesBlocked, Cause),
    // Context.
    row(FindingId::LeastOutstandingRequests, Context),
    row(FindingId::ReadinessProbeMissing, Context),
    row(FindingId::LatencyOutliers, Context),
    row(FindingId::AlarmFlapping, Context),
];

/// The row of `id`; `None` for an id this version does not know.
pub fn kind_of(id: &FindingId) -> Option<&'static FindingKind> {
    FINDINGS.iter().find(|k| &k.id == id)
}

/// Position of a finding in the causal chain; lower reads first, unknown last.
pub fn causal_rank(id: &FindingId) -> usize {
    FINDINGS
        .iter()
        .position(|k| &k.id == id)
        .unwrap_or(FINDINGS.len())
}

/// Whether the pods are CPU-saturated: at a per-process ceiling, throttled,
/// or at their CPU limit. Only then does "the HPA cannot react" explain
/// anything; otherwise more pods would not have helped and it is context.
pub fn cpu_saturated(findings: &[Finding]) -> bool {
    findings.iter().any(|f| match (&f.id, f.verdict, &f.facts) {
        (FindingId::WorkerCeiling | FindingId::CpuThrottling, Verdict::Supported, _) => true,
        (_, _, Facts::Throttling(t)) => !t.pods_at_limit.is_empty(),
        _ => false,
    })
}

/// The role of one finding, given all of them.
fn role_of(finding: &Finding, saturated: bool) -> Role {
    match finding.verdict {
        Verdict::Refuted => Role::RuledOut,
        Verdict::Inconclusive => Role::Context,
        Verdict::Supported => match kind_of(&finding.id).map(|k| k.when_supported) {
            Some(Cause) => Role::Cause,
            Some(CauseWhenCpuSaturated) if saturated => Role::Cause,
            Some(CauseWhenCpuSaturated | Context) | None => Role::Context,
        },
    }
}

/// Whether a rollout just before the breach changed the CPU limit: the
/// saturation is then the revision's doing, and undoing it (not more pods)
/// is what brings the metric back.
pub fn saturation_rolled_out(findings: &[Finding]) -> bool {
    findings.iter().any(|f| {
        f.id == FindingId::RecentDeploy
            && f.verdict == Verdict::Supported
            && matches!(&f.facts, Facts::Rollout(aspects) if aspects.contains(&crate::changes::Aspect::CpuLimit))
    })
}

/// Sets every finding's role.
pub fn assign(findings: &mut [Finding]) {
    let saturated = cpu_saturated(findings) && !saturation_rolled_out(findings);
    for finding in findings.iter_mut() {
        finding.role = role_of(finding, saturated);
    }
}

/// The causes, in causal order.
pub fn causes(findings: &[Finding]) -> Vec<&Finding> {
    let mut causes: Vec<&Finding> = findings.iter().filter(|f| f.role == Role::Cause).collect();
    causes.sort_by_key(|f| causal_rank(&f.id));
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::finding::ThrottlingFacts;

    fn finding(id: FindingId, verdict: Verdict, facts: Facts) -> Finding {
        Finding {
            facts,
            ..Finding::decided(id, "", verdict, String::new(), None)
        }
    }

    fn throttling(at_limit: &[&str], verdict: Verdict) -> Finding {
        finding(
            FindingId::CpuThrottling,
            verdict,
            Facts::Throttling(ThrottlingFacts {
                worst_throttled_share: 0.0,
                pods_at_limit: at_limit.iter().map(|p| (*p).to_owned()).collect(),
                limit_cores: Some(1.0),
                request_cores: Some(0.5),
                peak_cores: Some(1.0),
            }),
        )
    }

    #[test]
    fn every_known_finding_has_exactly_one_row() {
        for id in FindingId::KNOWN {
            assert_eq!(FINDINGS.iter().filter(|k| k.id == id).count(), 1, "{id}");
        }
        assert_eq!(FINDINGS.len(), FindingId::KNOWN.len());
    }

    #[test]
    fn an_hpa_that_cannot_react_is_context_when_the_pods_have_cpu_to_spare() {
        let mut findings = vec![
            finding(FindingId::HpaCannotReact, Verdict::Supported, Facts::None),
            throttling(&[], Verdict::Refuted),
            finding(FindingId::WorkerCeiling, Verdict::Refuted, Facts::None),
            finding(FindingId::RecentDeploy, Verdict::Supported, Facts::None),
        ];
        assign(&mut findings);
        assert_eq!(findings[0].role, Role::Context);
        assert_eq!(findings[1].role, Role::RuledOut);
        assert_eq!(findings[3].role, Role::Cause);
    }

    #[test]
    fn an_hpa_that_cannot_react_is_a_cause_when_a_pod_sits_at_its_limit() {
        let mut findings = vec![
            finding(FindingId::HpaCannotReact, Verdict::Supported, Facts::None),
            throttling(&["web-1"], Verdict::Supported),
        ];
        assign(&mut findings);
        assert_eq!(findings[0].role, Role::Cause);
    }

    #[test]
    fn an_unknown_finding_is_context_and_reads_last() {
        let unknown = FindingId::Unrecognised("new.finding".into());
        let mut findings = vec![finding(unknown.clone(), Verdict::Supported, Facts::None)];
        assign(&mut findings);
        assert_eq!(findings[0].role, Role::Context);
        assert_eq!(causal_rank(&unknown), FINDINGS.len());
    }

    #[test]
    fn causes_read_in_causal_order_whatever_order_they_were_decided_in() {
        let mut findings = vec![
            finding(FindingId::HpaCannotReact, Verdict::Supported, Facts::None),
            finding(FindingId::WorkerCeiling, Verdict::Supported, Facts::None),
            finding(
                FindingId::ReadinessProbeMissing,
                Verdict::Supported,
                Facts::None,
            ),
            finding(FindingId::RecentDeploy, Verdict::Supported, Facts::None),
        ];
        assign(&mut findings);
        let order: Vec<&FindingId> = causes(&findings).iter().map(|f| &f.id).collect();
        assert_eq!(
            order,
            [
                &FindingId::RecentDeploy,
                &FindingId::WorkerCeiling,
                &FindingId::HpaCannotReact
            ]
        );
    }
}
