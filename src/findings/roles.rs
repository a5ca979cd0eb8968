//! What each decided finding is to the breach: a cause, a hypothesis ruled
//! out, or context. Causes are ordered along the chain an on-call engineer
//! follows: where (which target group), what set it off (low traffic, a
//! deploy, restarts), the mechanism in the pods (a hot pod, a per-process
//! ceiling, throttling), what users then see (unhealthy targets), and why it
//! does not heal itself (the HPA, capacity).

use crate::diagnosis::finding::Role;
use crate::diagnosis::{Facts, Finding, FindingId, Verdict};

/// Position of a finding in the causal chain; lower reads first.
pub fn causal_rank(id: &FindingId) -> u8 {
    match id {
        FindingId::SharedLoadBalancerProblem | FindingId::ThresholdInsideNormalRange => 0,
        FindingId::LowTrafficArtifact => 1,
        // A scale-in sets the breach off as a deploy does: it comes first.
        FindingId::RecentDeploy | FindingId::HpaScalesInTooEagerly => 2,
        FindingId::TargetErrors => 3,
        FindingId::PodRestarts => 4,
        FindingId::DownstreamWait => 5,
        FindingId::PodImbalance => 6,
        FindingId::WorkerCeiling => 7,
        FindingId::CpuThrottling => 8,
        FindingId::HealthCheckTimeout => 9,
        FindingId::ProbeFailures => 10,
        FindingId::UnhealthyTargets => 11,
        FindingId::LoadBalancerErrors => 12,
        FindingId::HpaCannotReact => 13,
        FindingId::PendingPods => 14,
        FindingId::NodesBlocked => 15,
        FindingId::LeastOutstandingRequests => 16,
        FindingId::ReadinessProbeMissing => 17,
        FindingId::LatencyOutliers => 18,
        FindingId::AlarmFlapping => 19,
        FindingId::Unrecognised(_) => 20,
    }
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
        Verdict::Supported => match finding.id {
            FindingId::SharedLoadBalancerProblem
            | FindingId::LowTrafficArtifact
            | FindingId::RecentDeploy
            | FindingId::PodRestarts
            | FindingId::DownstreamWait
            | FindingId::PodImbalance
            | FindingId::WorkerCeiling
            | FindingId::CpuThrottling
            | FindingId::UnhealthyTargets
            | FindingId::PendingPods
            | FindingId::TargetErrors
            | FindingId::LoadBalancerErrors
            | FindingId::HealthCheckTimeout
            | FindingId::ProbeFailures
            | FindingId::NodesBlocked
            | FindingId::ThresholdInsideNormalRange
            | FindingId::HpaScalesInTooEagerly => Role::Cause,
            FindingId::HpaCannotReact if saturated => Role::Cause,
            FindingId::HpaCannotReact
            | FindingId::LeastOutstandingRequests
            | FindingId::ReadinessProbeMissing
            | FindingId::LatencyOutliers
            | FindingId::AlarmFlapping
            | FindingId::Unrecognised(_) => Role::Context,
        },
    }
}

/// Sets every finding's role.
pub fn assign(findings: &mut [Finding]) {
    let saturated = cpu_saturated(findings);
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
