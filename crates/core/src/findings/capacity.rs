//! Why pending pods stay pending: the cluster's autoscaler cannot add nodes.
//! Karpenter launches nothing once a NodePool's `status.resources` reach its
//! `spec.limits`, and a NodeClaim that never launched (no capacity for its
//! instance types, a bad EC2NodeClass) leaves its pods waiting; the Cluster
//! Autoscaler stops at a node group's maximum size.

use crate::diagnosis::{Evidence, Finding, FindingId, Verdict};
use crate::evidence::workload::Workload;

const HYPOTHESIS: &str = "New nodes cannot be added: a Karpenter NodePool at its limits, NodeClaims failing to launch, or a Cluster Autoscaler node group at its maximum";

/// What Karpenter says on a pod it cannot place because of a NodePool's limits.
/// Both wordings Karpenter has used: `exceed limits for nodepool: "NAME"` and
/// `exceed limits for nodepool (NodePool=NAME)`.
fn mentions_limits(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("nodepool") && m.contains("limit")
}

/// Decides the hypothesis; only meaningful when pods are pending.
pub fn nodes_blocked(workload: &Workload) -> Finding {
    let pending = workload
        .pods
        .iter()
        .filter(|p| p.phase == "Pending")
        .count();
    let decided = |verdict, summary: String, clause: Option<String>, evidence| {
        let mut f = Finding::decided(
            FindingId::NodesBlocked,
            HYPOTHESIS,
            verdict,
            summary,
            clause,
        );
        f.evidence = evidence;
        f
    };
    if pending == 0 {
        return decided(
            Verdict::Refuted,
            "No pod is pending, so no node is missing.".to_owned(),
            Some("node capacity: nothing pending".to_owned()),
            Vec::new(),
        );
    }
    let Some(provisioning) = &workload.provisioning else {
        return decided(
            Verdict::Inconclusive,
            format!("{pending} pod(s) pending; the node autoscaler was not read."),
            None,
            Vec::new(),
        );
    };
    let mut evidence = Vec::new();
    let mut blocked = Vec::new();
    for pool in &provisioning.node_pools {
        let exhausted = pool.exhausted();
        if let (Some(limit), Some(used)) = (pool.cpu_limit, pool.cpu_used) {
            evidence.push(Evidence::text(
                &format!("NodePool {} cpu", pool.name),
                format!("{used} of {limit} cores"),
            ));
        }
        if !exhausted.is_empty() {
            blocked.push(format!(
                "NodePool {} is at its {} limit",
                pool.name,
                exhausted.join(" and ")
            ));
        }
    }
    for claim in &provisioning.failing_claims {
        let why = [claim.reason.as_deref(), claim.message.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ");
        evidence.push(Evidence::text(
            &format!("NodeClaim {}", claim.name),
            format!("{} not true: {why}", claim.condition),
        ));
        blocked.push(format!(
            "NodeClaim {} did not reach {} ({why})",
            claim.name, claim.condition
        ));
    }
    for group in &provisioning.autoscaler_groups {
        if group.at_max() {
            blocked.push(format!(
                "Cluster Autoscaler node group {} is at its maximum of {}",
                group.name,
                group.max_size.unwrap_or_default()
            ));
        }
        evidence.push(Evidence::text(
            &format!("node group {}", group.name),
            format!(
                "target {} of max {}",
                group.target.map_or("?".to_owned(), |n| n.to_string()),
                group.max_size.map_or("?".to_owned(), |n| n.to_string())
            ),
        ));
    }
    let karpenter_says = workload
        .pods
        .iter()
        .flat_map(|p| &p.scheduling_messages)
        .find(|m| mentions_limits(m));
    if let Some(message) = karpenter_says {
        evidence.push(Evidence::text(
            "scheduling event",
            message.chars().take(200).collect::<String>(),
        ));
        if blocked.is_empty() {
            blocked.push("Karpenter reports the NodePool limits exceeded".to_owned());
        }
    }
    for part in &provisioning.unreadable {
        evidence.push(Evidence::text("not read", part.clone()));
    }
    let nothing_installed = provisioning.node_pools.is_empty()
        && provisioning.autoscaler_groups.is_empty()
        && provisioning.failing_claims.is_empty();
    if !blocked.is_empty() {
        decided(
            Verdict::Supported,
            format!(
                "{pending} pod(s) pending and the cluster cannot grow: {}.",
                blocked.join("; ")
            ),
            Some(blocked[0].clone()),
            evidence,
        )
    } else if nothing_installed {
        decided(
            Verdict::Inconclusive,
            format!(
                "{pending} pod(s) pending; no Karpenter NodePool or Cluster Autoscaler status was found{}.",
                if provisioning.unreadable.is_empty() {
                    ""
                } else {
                    " (some could not be read)"
                }
            ),
            None,
            evidence,
        )
    } else {
        decided(
            Verdict::Refuted,
            format!(
                "{pending} pod(s) pending, yet the autoscaler has room (no NodePool at its limits, no failing NodeClaim, no node group at its maximum): the pods' own constraints (affinity, taints, topology spread) or a node still starting hold them."
            ),
            Some("node limits: room left".to_owned()),
            evidence,
        )
    }
}
