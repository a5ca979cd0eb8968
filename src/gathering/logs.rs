//! Phase 3's logs: as soon as the pods are listed, the chosen containers
//! through `pods/log` and the whole workload through Logs Insights, both at
//! once and alongside the pods' series, so reading logs adds no round trip
//! to the gathering's critical path.

use std::collections::BTreeSet;

use futures_util::future::join_all;

use super::Ledger;
use crate::error::Error;
use crate::evidence::logs::{BYTES_IN_ALL, ContainerLog, LogEvidence, LogWindow};
use crate::evidence::workload::PodsListed;
use crate::evidence::{LogSource, source};

/// What the pods printed: the planned containers' own logs, and, for the
/// pods those could not read (gone after a rollout, forbidden), the log
/// group's lines. `None` when nothing could be read (the gaps say why).
pub(super) async fn read_logs<S: LogSource>(
    sources: &S,
    ledger: &Ledger,
    listed: &PodsListed,
    window: LogWindow,
) -> Option<LogEvidence> {
    let plan = &listed.logs;
    if plan.requests.is_empty() {
        return None;
    }
    let pod_logs = ledger.run(source::POD_LOGS, async {
        let reads = plan.requests.iter().map(|request| {
            sources.container_log(listed, request, window, plan.bytes_per_container)
        });
        let mut read = Vec::new();
        let mut failed: Option<Error> = None;
        for outcome in join_all(reads).await {
            match outcome {
                Ok(log) => read.push(log),
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        match failed {
            // Some pods read: the rest is a gap, the lines are kept.
            Some(e) if !read.is_empty() => {
                ledger.gap(source::POD_LOGS, &format!("some containers not read: {e}"));
                Ok(read)
            }
            Some(e) => Err(e),
            None => Ok(read),
        }
    });
    // Logs Insights may bring what pods/log left of the budget.
    let pod_log_budget = plan.bytes_per_container * plan.requests.len();
    let insights = ledger.run(
        source::LOGS_INSIGHTS,
        sources.workload_logs(listed, window, BYTES_IN_ALL.saturating_sub(pod_log_budget)),
    );
    let (pod_logs, insights) = tokio::join!(pod_logs, insights);
    let containers = combine(pod_logs, insights.flatten());
    if containers.is_empty() {
        return None;
    }
    Some(LogEvidence {
        namespace: listed.namespace.clone(),
        containers,
        requested: plan.requests.clone(),
    })
}

/// The pods' own logs first; the log group's lines only for pods they did
/// not read (each line counted once).
fn combine(
    pod_logs: Option<Vec<ContainerLog>>,
    insights: Option<Vec<ContainerLog>>,
) -> Vec<ContainerLog> {
    let mut containers: Vec<ContainerLog> = pod_logs
        .unwrap_or_default()
        .into_iter()
        .filter(|c| !c.lines.is_empty())
        .collect();
    let read: BTreeSet<String> = containers.iter().map(|c| c.pod.clone()).collect();
    containers.extend(
        insights
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !read.contains(&c.pod)),
    );
    containers
}
