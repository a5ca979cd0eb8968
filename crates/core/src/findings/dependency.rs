//! Slow while idle: when requests are broadly slow and the pods have CPU to
//! spare, the time goes to waiting on something they call (a database, a
//! cache, another service). Decided from the other findings and the pods'
//! CPU, so it runs after them.

use crate::diagnosis::summary::WorkloadSummary;
use crate::diagnosis::{Evidence, Finding, FindingId, Verdict};

/// A pod under this share of its CPU request (or this many cores without one) has CPU to spare.
const IDLE_SHARE_OF_REQUEST: f64 = 0.5;
const IDLE_CORES_WITHOUT_REQUEST: f64 = 0.5;

fn verdict_of(findings: &[Finding], id: FindingId) -> Option<Verdict> {
    findings.iter().find(|f| f.id == id).map(|f| f.verdict)
}

/// Whether the pods wait on a dependency, from the decided findings and the workload.
pub fn waiting_downstream(findings: &[Finding], workload: &WorkloadSummary) -> Finding {
    let measured: Vec<(&str, f64, Option<f64>)> = workload
        .pods
        .iter()
        .filter(|p| p.phase == "Running")
        .filter_map(|p| Some((p.name.as_str(), p.cpu_while_breaching?, p.cpu_request)))
        .collect();
    let mut evidence: Vec<Evidence> = measured
        .iter()
        .map(|(pod, cores, request)| {
            Evidence::text(
                &format!("{pod} CPU while breaching (p90)"),
                match request {
                    Some(r) if *r > 0.0 => {
                        format!(
                            "{cores:.2} cores, {:.0} % of its {r}-core request",
                            cores / r * 100.0
                        )
                    }
                    _ => format!("{cores:.2} cores (no request)"),
                },
            )
        })
        .collect();
    let spare = |cores: f64, request: Option<f64>| match request {
        Some(r) if r > 0.0 => cores < IDLE_SHARE_OF_REQUEST * r,
        _ => cores < IDLE_CORES_WITHOUT_REQUEST,
    };
    let cpu_explains = [
        FindingId::WorkerCeiling,
        FindingId::CpuThrottling,
        FindingId::PodImbalance,
    ]
    .into_iter()
    .find(|id| verdict_of(findings, id.clone()) == Some(Verdict::Supported));
    // Broad slowness: the median request itself breached (Average alarms), or
    // a percentile breached at traffic too busy for a few requests to decide it.
    let broad = match verdict_of(findings, FindingId::LatencyOutliers) {
        Some(v) => v == Verdict::Refuted,
        None => verdict_of(findings, FindingId::LowTrafficArtifact) == Some(Verdict::Refuted),
    };
    let few_requests =
        verdict_of(findings, FindingId::LowTrafficArtifact) == Some(Verdict::Supported);
    let all_spare = !measured.is_empty() && measured.iter().all(|(_, c, r)| spare(*c, *r));
    let busiest = measured.iter().map(|(_, c, _)| *c).fold(0.0, f64::max);
    evidence.push(Evidence::text(
        "requests broadly slow",
        if broad { "yes" } else { "not shown" },
    ));
    let (verdict, summary, cause) = match cpu_explains {
        Some(id) => (
            Verdict::Refuted,
            format!("The pods' CPU explains the latency ({id} is supported): no need to look further downstream first."),
            // CPU is the explanation: nothing worth a place on the "Ruled out" line.
            None,
        ),
        None if measured.is_empty() => (
            Verdict::Inconclusive,
            "No per-pod CPU while breaching: whether the pods were busy or waiting is unknown.".to_owned(),
            None,
        ),
        None if all_spare && broad && !few_requests => (
            Verdict::Supported,
            format!(
                "Requests are broadly slow while every pod has CPU to spare (the busiest at {busiest:.2} cores, under half its request): the time goes to waiting on something the service calls (a database, a cache, another service, a connection pool)."
            ),
            Some(format!(
                "pods idle (at most {busiest:.2} cores) while requests are slow: waiting on a dependency"
            )),
        ),
        None if !all_spare => (
            Verdict::Inconclusive,
            "Some pods use more than half their CPU request without being saturated: neither clearly waiting nor clearly CPU-bound.".to_owned(),
            None,
        ),
        None => (
            Verdict::Inconclusive,
            "The pods have CPU to spare, but the latency is not broadly slow (a few slow requests, or low traffic): nothing points downstream yet.".to_owned(),
            None,
        ),
    };
    Finding {
        evidence,
        ..Finding::decided(
            FindingId::DownstreamWait,
            "The pods wait on a dependency: slow while their CPU idles",
            verdict,
            summary,
            cause,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::summary::PodSummary;

    fn finding(id: FindingId, verdict: Verdict) -> Finding {
        Finding::decided(id, "", verdict, String::new(), None)
    }

    fn workload(levels: &[f64], request: f64) -> WorkloadSummary {
        WorkloadSummary {
            cluster: None,
            namespace: "ops".into(),
            service: "ledger".into(),
            mapped_by: "target_group_binding".into(),
            deployment: Some("ledger".into()),
            replicas: Some(levels.len() as i32),
            last_rollout: None,
            hpa: None,
            pods: levels
                .iter()
                .enumerate()
                .map(|(i, level)| PodSummary {
                    name: format!("ledger-{i}"),
                    node: None,
                    phase: "Running".into(),
                    ready: true,
                    restarts: 0,
                    cpu_request: Some(request),
                    cpu_limit: None,
                    cpu_while_breaching: Some(*level),
                    last_termination: None,
                    running_since: None,
                })
                .collect(),
            series_origin: None,
        }
    }

    #[test]
    fn broadly_slow_requests_from_idle_pods_point_downstream() {
        let decided = [
            finding(FindingId::LatencyOutliers, Verdict::Refuted),
            finding(FindingId::WorkerCeiling, Verdict::Refuted),
        ];
        let f = waiting_downstream(&decided, &workload(&[0.03, 0.04], 0.25));
        assert_eq!(f.verdict, Verdict::Supported, "{}", f.summary);
        assert!(f.cause.unwrap().contains("waiting on a dependency"));
    }

    #[test]
    fn cpu_bound_pods_are_not_waiting_and_a_few_slow_requests_prove_nothing() {
        let ceiling = [
            finding(FindingId::LatencyOutliers, Verdict::Refuted),
            finding(FindingId::WorkerCeiling, Verdict::Supported),
        ];
        let f = waiting_downstream(&ceiling, &workload(&[0.98, 0.97], 1.5));
        assert_eq!(f.verdict, Verdict::Refuted);
        let few = [
            finding(FindingId::LatencyOutliers, Verdict::Supported),
            finding(FindingId::LowTrafficArtifact, Verdict::Supported),
        ];
        let f = waiting_downstream(&few, &workload(&[0.03, 0.04], 0.25));
        assert_eq!(f.verdict, Verdict::Inconclusive);
    }
}
