//! Pods failing their kubelet probes. A failed readiness probe takes the pod
//! out of the Service's endpoints (and, in ip mode, out of the target group);
//! a failed liveness probe restarts the container. Both shrink the serving
//! fleet under load, which is when slow probes fail.

use chrono::{DateTime, Utc};

use crate::diagnosis::{Evidence, Finding, FindingId, Verdict};
use crate::evidence::workload::{PodWarning, Workload};

const HYPOTHESIS: &str = "Pods fail their readiness or liveness probes";

/// The probe a kubelet `Unhealthy` event is about (`Readiness`, `Liveness`, `Startup`).
fn probe_of(warning: &PodWarning) -> Option<&'static str> {
    if warning.reason != "Unhealthy" {
        return None;
    }
    ["Readiness", "Liveness", "Startup"]
        .into_iter()
        .find(|kind| warning.message.starts_with(&format!("{kind} probe failed")))
}

/// Decides the hypothesis from the pods' warning events seen from `since` on.
pub fn probe_failures(workload: &Workload, since: Option<DateTime<Utc>>) -> Finding {
    let recent = |w: &&PodWarning| match (since, w.last_seen) {
        (Some(since), Some(seen)) => seen >= since,
        _ => true,
    };
    let mut evidence = Vec::new();
    let mut kinds: Vec<&str> = Vec::new();
    let mut pods = 0;
    let mut failures = 0;
    for pod in &workload.pods {
        let failed: Vec<(&str, &PodWarning)> = pod
            .lifecycle
            .warnings
            .iter()
            .filter(recent)
            .filter_map(|w| Some((probe_of(w)?, w)))
            .collect();
        if failed.is_empty() {
            continue;
        }
        pods += 1;
        for (kind, warning) in &failed {
            failures += warning.count.max(1);
            if !kinds.contains(kind) {
                kinds.push(kind);
            }
        }
        let (_, last) = failed[failed.len() - 1];
        let message: String = last.message.chars().take(160).collect();
        evidence.push(Evidence::text(
            &pod.name,
            format!(
                "{} failure(s): {message}",
                failed.iter().map(|(_, w)| w.count.max(1)).sum::<u32>()
            ),
        ));
    }
    let probes = kinds.join(" and ").to_lowercase();
    let (verdict, summary, clause) = if workload.pods.is_empty() {
        (
            Verdict::Inconclusive,
            "No pods to inspect.".to_owned(),
            None,
        )
    } else if pods == 0 {
        (
            Verdict::Refuted,
            format!(
                "No probe failures reported for the {} pods around the breach.",
                workload.pods.len()
            ),
            Some("probe failures: none".to_owned()),
        )
    } else {
        let effect = match (kinds.contains(&"Readiness"), kinds.contains(&"Liveness")) {
            (true, true) => "pods leave the endpoints and their containers restart",
            (true, false) => {
                "each failing pod leaves the Service's endpoints, so fewer pods carry the traffic"
            }
            (false, true) => "their containers are restarted, cold",
            (false, false) => "the pods are held back from serving",
        };
        (
            Verdict::Supported,
            format!(
                "{pods} of {} pods failed their {probes} probe {failures} time(s) around the breach: {effect}. A probe that times out under load points at a timeout shorter than the app's latency.",
                workload.pods.len()
            ),
            Some(format!("{pods} pod(s) failing {probes} probes")),
        )
    };
    let mut finding = Finding::decided(
        FindingId::ProbeFailures,
        HYPOTHESIS,
        verdict,
        summary,
        clause,
    );
    finding.evidence = evidence;
    finding
}
