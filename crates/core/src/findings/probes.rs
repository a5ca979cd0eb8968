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
/// Why the probes fail, from what the kubelet said: each calls for another fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeTrouble {
    /// Timeouts, deadlines exceeded: the app answers too slowly.
    TooSlow,
    /// An HTTP error status: the app answers, but the path or handler fails.
    ErrorStatus,
    /// Connection refused: nothing listens on the probe's port (yet).
    NotListening,
    Other,
}

impl ProbeTrouble {
    /// The trouble most of `messages` describe.
    pub fn of<'a>(messages: impl IntoIterator<Item = &'a str>) -> Self {
        let mut counts = [0usize; 3];
        for message in messages {
            let m = message.to_ascii_lowercase();
            if m.contains("timeout") || m.contains("deadline exceeded") {
                counts[0] += 1;
            } else if m.contains("statuscode") || m.contains("status code") {
                counts[1] += 1;
            } else if m.contains("connection refused") {
                counts[2] += 1;
            }
        }
        match counts.iter().enumerate().max_by_key(|(_, n)| **n) {
            Some((_, 0)) | None => ProbeTrouble::Other,
            Some((0, _)) => ProbeTrouble::TooSlow,
            Some((1, _)) => ProbeTrouble::ErrorStatus,
            Some(_) => ProbeTrouble::NotListening,
        }
    }

    /// From a decided finding's evidence (one line per pod with its last message).
    pub fn of_finding(finding: &Finding) -> Self {
        Self::of(finding.evidence.iter().filter_map(|e| e.value.as_str()))
    }

    fn explanation(self) -> &'static str {
        match self {
            ProbeTrouble::TooSlow => {
                "The probes time out: a timeout shorter than the app's latency under load."
            }
            ProbeTrouble::ErrorStatus => {
                "The probes get an HTTP error status: the app answers, but the probe's path or port is one it does not serve (or the check itself fails)."
            }
            ProbeTrouble::NotListening => {
                "The probes' connections are refused: nothing listens on the probe's port yet (still starting) or the app listens elsewhere."
            }
            ProbeTrouble::Other => {
                "A probe that times out under load points at a timeout shorter than the app's latency."
            }
        }
    }
}

pub fn probe_failures(workload: &Workload, since: Option<DateTime<Utc>>) -> Finding {
    let recent = |w: &&PodWarning| match (since, w.last_seen) {
        (Some(since), Some(seen)) => seen >= since,
        _ => true,
    };
    let mut evidence = Vec::new();
    let mut kinds: Vec<&str> = Vec::new();
    let mut pods = 0;
    let mut failures = 0;
    let mut messages: Vec<&str> = Vec::new();
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
            messages.push(&warning.message);
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
                "{pods} of {} pods failed their {probes} probe {failures} time(s) around the breach: {effect}. {}",
                workload.pods.len(),
                ProbeTrouble::of(messages.iter().copied()).explanation()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn why_probes_fail_is_read_from_what_the_kubelet_said() {
        assert_eq!(
            ProbeTrouble::of(["Readiness probe failed: HTTP probe failed with statuscode: 404"]),
            ProbeTrouble::ErrorStatus
        );
        assert_eq!(
            ProbeTrouble::of([
                "Readiness probe failed: Get \"http://10.0.0.1:8080/healthz\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                "Liveness probe failed: dial tcp 10.0.0.1:8080: connect: connection refused",
                "Readiness probe failed: context deadline exceeded",
            ]),
            ProbeTrouble::TooSlow
        );
        assert_eq!(
            ProbeTrouble::of([
                "Startup probe failed: dial tcp 10.0.0.1:8080: connect: connection refused"
            ]),
            ProbeTrouble::NotListening
        );
        assert_eq!(ProbeTrouble::of(["something else"]), ProbeTrouble::Other);
    }
}
