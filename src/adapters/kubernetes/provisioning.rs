//! Why the cluster adds no nodes for pending pods, read-only: Karpenter's
//! NodePools (their limits against what they hold) and NodeClaims that did not
//! become nodes, and the Cluster Autoscaler's status ConfigMap. Neither
//! autoscaler need be installed: a missing API (404) is simply "not there".

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

use super::connection::Cluster;
use crate::evidence::workload::{
    AutoscalerGroup, NodeClaimState, NodePoolState, NodeProvisioning, bytes, cpu_cores,
};

/// Reads what each installed autoscaler says; parts it may not read are noted.
pub async fn read(cluster: &Cluster) -> NodeProvisioning {
    let karpenter = |kind: &str, plural: &str| {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("karpenter.sh", "v1", kind),
            plural,
        )
    };
    let pools = karpenter("NodePool", "nodepools");
    let claims = karpenter("NodeClaim", "nodeclaims");
    let every = ListParams::default();
    let pools_api = Api::<DynamicObject>::all_with(cluster.client.clone(), &pools);
    let claims_api = Api::<DynamicObject>::all_with(cluster.client.clone(), &claims);
    let status_api = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
        cluster.client.clone(),
        "kube-system",
    );
    let (pools, claims, status) = tokio::join!(
        pools_api.list(&every),
        claims_api.list(&every),
        status_api.get_opt("cluster-autoscaler-status"),
    );
    let mut out = NodeProvisioning::default();
    let mut notes = Vec::new();
    match pools {
        Ok(list) => {
            out.node_pools = list
                .items
                .iter()
                .map(|o| node_pool(&o.data, name(o)))
                .collect()
        }
        Err(e) => note(&mut notes, "nodepools.karpenter.sh", e),
    }
    match claims {
        Ok(list) => {
            out.failing_claims = list
                .items
                .iter()
                .filter_map(|o| failing_claim(&o.data, name(o)))
                .collect();
        }
        Err(e) => note(&mut notes, "nodeclaims.karpenter.sh", e),
    }
    match status {
        Ok(Some(map)) => {
            out.autoscaler_groups = map
                .data
                .as_ref()
                .and_then(|d| d.get("status"))
                .map(|text| autoscaler_groups(text))
                .unwrap_or_default();
        }
        Ok(None) => {}
        Err(e) => note(&mut notes, "configmaps/cluster-autoscaler-status", e),
    }
    out.unreadable = notes;
    out
}

/// A missing API is no note (that autoscaler is not installed); anything else is.
fn note(notes: &mut Vec<String>, what: &str, e: kube::Error) {
    match e {
        kube::Error::Api(status) if status.code == 404 => {}
        kube::Error::Api(status) => {
            notes.push(format!("{what}: {} {}", status.code, status.reason));
        }
        other => notes.push(format!("{what}: {other}")),
    }
}

fn name(o: &DynamicObject) -> &str {
    o.metadata.name.as_deref().unwrap_or_default()
}

/// A NodePool's limits (`spec.limits`) and usage (`status.resources`).
pub(crate) fn node_pool(data: &Value, name: &str) -> NodePoolState {
    let quantity = |section: &Value, key: &str| {
        section[key]
            .as_str()
            .map(str::to_owned)
            .or_else(|| section[key].as_f64().map(|n| n.to_string()))
    };
    let (limits, used) = (&data["spec"]["limits"], &data["status"]["resources"]);
    NodePoolState {
        name: name.to_owned(),
        cpu_limit: quantity(limits, "cpu").and_then(|q| cpu_cores(&q)),
        cpu_used: quantity(used, "cpu").and_then(|q| cpu_cores(&q)),
        memory_limit: quantity(limits, "memory").and_then(|q| bytes(&q)),
        memory_used: quantity(used, "memory").and_then(|q| bytes(&q)),
    }
}

/// A NodeClaim whose launch, registration or initialisation is not True.
pub(crate) fn failing_claim(data: &Value, name: &str) -> Option<NodeClaimState> {
    let conditions = data["status"]["conditions"].as_array()?;
    ["Launched", "Registered", "Initialized"]
        .iter()
        .find_map(|kind| {
            let c = conditions
                .iter()
                .find(|c| c["type"].as_str() == Some(kind))?;
            (c["status"].as_str() != Some("True")).then(|| NodeClaimState {
                name: name.to_owned(),
                node_pool: data["metadata"]["labels"]["karpenter.sh/nodepool"]
                    .as_str()
                    .map(str::to_owned),
                condition: (*kind).to_owned(),
                reason: c["reason"].as_str().map(str::to_owned),
                message: c["message"].as_str().map(str::to_owned),
            })
        })
}

/// Node groups from the Cluster Autoscaler's status text, in either of its
/// forms: the older prose (`Name: ng` then `cloudProviderTarget=3 (minSize=1,
/// maxSize=3)`) or the YAML of newer versions (`- name: ng`, `cloudProviderTarget: 3`,
/// `maxSize: 3`).
pub(crate) fn autoscaler_groups(text: &str) -> Vec<AutoscalerGroup> {
    let mut groups: Vec<AutoscalerGroup> = Vec::new();
    let number_after = |line: &str, key: &str| -> Option<u32> {
        let rest = &line[line.find(key)? + key.len()..];
        let digits: String = rest
            .trim_start_matches([':', '=', ' '])
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let mut in_node_groups = false;
    for line in text.lines() {
        let trimmed = line.trim().trim_start_matches("- ");
        if trimmed.to_ascii_lowercase().starts_with("nodegroups") {
            in_node_groups = true;
            continue;
        }
        if !in_node_groups {
            continue;
        }
        let lower = trimmed.to_ascii_lowercase();
        if let Some(name) = lower.strip_prefix("name:").map(|_| trimmed[5..].trim()) {
            groups.push(AutoscalerGroup {
                name: name.trim_matches('"').to_owned(),
                target: None,
                max_size: None,
            });
            continue;
        }
        if let Some(group) = groups.last_mut() {
            if let Some(n) = number_after(trimmed, "cloudProviderTarget") {
                group.target = Some(n);
            }
            if let Some(n) = number_after(trimmed, "maxSize") {
                group.max_size = Some(n);
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_node_pool_at_its_cpu_limit_is_exhausted_for_cpu() {
        let pool = node_pool(
            &json!({"spec": {"limits": {"cpu": "64", "memory": "256Gi"}},
                    "status": {"resources": {"cpu": "64", "memory": "120Gi"}}}),
            "general",
        );
        assert_eq!(pool.cpu_limit, Some(64.0));
        assert_eq!(pool.exhausted(), ["cpu"]);
    }

    #[test]
    fn a_node_pool_without_limits_is_never_exhausted() {
        let pool = node_pool(&json!({"status": {"resources": {"cpu": "1000"}}}), "open");
        assert!(pool.exhausted().is_empty());
    }

    #[test]
    fn a_node_claim_that_did_not_launch_says_why() {
        let claim = failing_claim(
            &json!({"metadata": {"labels": {"karpenter.sh/nodepool": "general"}},
                    "status": {"conditions": [
                        {"type": "Launched", "status": "False", "reason": "InsufficientCapacity",
                         "message": "no capacity for c6i.2xlarge"}]}}),
            "general-x7k2q",
        )
        .unwrap();
        assert_eq!(claim.condition, "Launched");
        assert_eq!(claim.node_pool.as_deref(), Some("general"));
        assert_eq!(claim.reason.as_deref(), Some("InsufficientCapacity"));
    }

    #[test]
    fn a_ready_node_claim_is_not_failing() {
        let ready = json!({"status": {"conditions": [
            {"type": "Launched", "status": "True"}, {"type": "Registered", "status": "True"},
            {"type": "Initialized", "status": "True"}]}});
        assert_eq!(failing_claim(&ready, "ok"), None);
    }

    #[test]
    fn autoscaler_groups_are_read_from_the_prose_status() {
        let text = "Cluster-autoscaler status at 2026-12-01 10:00:00 +0000 UTC:\nCluster-wide:\n  Health: Healthy (ready=5 unready=0)\n\nNodeGroups:\n  Name:        eks-web-a1\n  Health:      Healthy (ready=5 unready=0 registered=5 cloudProviderTarget=5 (minSize=2, maxSize=5))\n  ScaleUp:     NoActivity (ready=5 cloudProviderTarget=5)\n  Name:        eks-batch-b2\n  Health:      Healthy (ready=1 cloudProviderTarget=1 (minSize=0, maxSize=10))\n";
        let groups = autoscaler_groups(text);
        assert_eq!(groups.len(), 2);
        assert!(groups[0].at_max());
        assert_eq!(groups[1].max_size, Some(10));
        assert!(!groups[1].at_max());
    }

    #[test]
    fn autoscaler_groups_are_read_from_the_yaml_status() {
        let text = "time: 2026-12-01\nautoscalerStatus: Running\nnodeGroups:\n- name: eks-web-a1\n  health:\n    status: Healthy\n    cloudProviderTarget: 6\n    minSize: 2\n    maxSize: 6\n";
        let groups = autoscaler_groups(text);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].name, "eks-web-a1");
        assert!(groups[0].at_max());
    }
}
