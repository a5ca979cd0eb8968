//! Where the workload's pods run: the nodes that hold them (conditions,
//! taints, room, usage) and what else is placed on those nodes (names,
//! namespaces and resources only, never their data). Bounded: at most
//! [`MAX_NODES`] nodes, read concurrently; read-only: get and list only.

use futures_util::future::join_all;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};

use super::connection::Cluster;
use super::timestamps::{condition, time_of};
use crate::evidence::workload::{NeighbourPod, NodeState, PodInfo, bytes, cpu_cores};

/// Nodes read per diagnosis, the busiest with the workload's pods first.
pub const MAX_NODES: usize = 8;

/// Parts that could not be read, and why.
type Partial = Vec<(String, String)>;

/// The nodes of `pods`, each with its own state and its neighbours.
pub async fn read(cluster: &Cluster, pods: &[PodInfo]) -> (Vec<NodeState>, Partial) {
    let mut counted: Vec<(String, usize)> = Vec::new();
    for node in pods.iter().filter_map(|p| p.node.as_deref()) {
        match counted.iter_mut().find(|(n, _)| n == node) {
            Some((_, count)) => *count += 1,
            None => counted.push((node.to_owned(), 1)),
        }
    }
    counted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counted.truncate(MAX_NODES);
    let own: Vec<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    let reads = counted.iter().map(|(name, _)| node(cluster, name, &own));
    let mut partial = Partial::new();
    let mut nodes = Vec::new();
    for (state, gaps) in join_all(reads).await {
        partial.extend(gaps);
        nodes.extend(state);
    }
    (nodes, partial)
}

/// One node: the object, its NodeMetrics and its pods, concurrently; then
/// the neighbours' PodMetrics, one list per namespace they run in.
async fn node(cluster: &Cluster, name: &str, own: &[&str]) -> (Option<NodeState>, Partial) {
    let mut partial = Partial::new();
    let on_node = ListParams::default().fields(&format!("spec.nodeName={name}"));
    let node_metrics = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "NodeMetrics"),
        "nodes",
    );
    let nodes = Api::<Node>::all(cluster.client.clone());
    let metrics = Api::<DynamicObject>::all_with(cluster.client.clone(), &node_metrics);
    let pods = Api::<Pod>::all(cluster.client.clone());
    let (object, usage, placed) =
        tokio::join!(nodes.get(name), metrics.get(name), pods.list(&on_node));
    let object = match object {
        Ok(object) => object,
        // Gone since the pods were placed (an interruption, a scale-in): the
        // pods on it are being replaced; nothing more to read of it.
        Err(kube::Error::Api(status)) if status.code == 404 => return (None, partial),
        Err(e) => {
            partial.push((
                format!("node {name}"),
                cluster.explain(&e, "the node").to_string(),
            ));
            return (None, partial);
        }
    };
    let mut state = node_state(&object);
    match usage {
        Ok(m) => {
            state.used_cpu = m.data["usage"]["cpu"].as_str().and_then(cpu_cores);
            state.used_memory = m.data["usage"]["memory"].as_str().and_then(bytes);
        }
        // No metrics for it (yet): its usage stays unknown.
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(e) => partial.push((
            format!("metrics.k8s.io node {name}"),
            cluster.explain(&e, "NodeMetrics").to_string(),
        )),
    }
    match placed {
        Ok(list) => {
            state.neighbours = list
                .items
                .iter()
                .filter(|p| !own.contains(&p.metadata.name.as_deref().unwrap_or_default()))
                .map(neighbour)
                .collect();
            neighbours_usage(cluster, &mut state.neighbours, &mut partial).await;
        }
        Err(e) => partial.push((
            format!("pods on node {name}"),
            cluster.explain(&e, "the pods on the node").to_string(),
        )),
    }
    (Some(state), partial)
}

/// What `kubectl top pod` says of the neighbours, by namespace.
async fn neighbours_usage(
    cluster: &Cluster,
    neighbours: &mut [NeighbourPod],
    partial: &mut Partial,
) {
    let mut namespaces: Vec<String> = neighbours.iter().map(|n| n.namespace.clone()).collect();
    namespaces.sort();
    namespaces.dedup();
    let pod_metrics = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics"),
        "pods",
    );
    let lists = join_all(namespaces.iter().map(|ns| {
        let api = Api::<DynamicObject>::namespaced_with(cluster.client.clone(), ns, &pod_metrics);
        async move { (ns, api.list(&ListParams::default()).await) }
    }))
    .await;
    for (ns, list) in lists {
        match list {
            Ok(list) => {
                for m in &list.items {
                    let name = m.metadata.name.as_deref().unwrap_or_default();
                    if let Some(n) = neighbours
                        .iter_mut()
                        .find(|n| &n.namespace == ns && n.name == name)
                    {
                        n.used_cpu = Some(container_sum(&m.data, "cpu", cpu_cores));
                        n.used_memory = Some(container_sum(&m.data, "memory", bytes));
                    }
                }
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => partial.push((
                format!("metrics.k8s.io pods in {ns}"),
                cluster.explain(&e, "PodMetrics").to_string(),
            )),
        }
    }
}

fn container_sum(data: &serde_json::Value, resource: &str, parse: fn(&str) -> Option<f64>) -> f64 {
    data["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["usage"][resource].as_str().and_then(parse))
        .sum()
}

/// The node as the scheduler and the kubelet describe it. Only the
/// conditions away from health are kept: `Ready` not True, a pressure True.
pub(super) fn node_state(node: &Node) -> NodeState {
    let labels = node.metadata.labels.as_ref();
    let status = node.status.as_ref();
    let allocatable = status.and_then(|s| s.allocatable.as_ref());
    NodeState {
        name: node.metadata.name.clone().unwrap_or_default(),
        zone: labels
            .and_then(|l| {
                l.get("topology.kubernetes.io/zone")
                    .or_else(|| l.get("failure-domain.beta.kubernetes.io/zone"))
            })
            .cloned(),
        instance_id: node
            .spec
            .as_ref()
            .and_then(|s| s.provider_id.as_deref())
            .and_then(|id| id.rsplit('/').next())
            .filter(|id| id.starts_with("i-"))
            .map(str::to_owned),
        conditions: status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| {
                if c.type_ == "Ready" {
                    c.status != "True"
                } else {
                    c.status == "True"
                }
            })
            .map(|c| {
                condition(
                    &c.type_,
                    &c.status,
                    c.reason.as_ref(),
                    c.message.as_ref(),
                    c.last_transition_time.as_ref(),
                )
            })
            .collect(),
        taints: node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect(),
        allocatable_cpu: allocatable
            .and_then(|a| a.get("cpu"))
            .and_then(|q| cpu_cores(&q.0)),
        allocatable_memory: allocatable
            .and_then(|a| a.get("memory"))
            .and_then(|q| bytes(&q.0)),
        ..NodeState::default()
    }
}

fn neighbour(pod: &Pod) -> NeighbourPod {
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let sum = |limits: bool, key: &str, parse: fn(&str) -> Option<f64>| {
        containers
            .iter()
            .map(|c| quantity(c, limits, key).and_then(|q| parse(&q)))
            .sum::<Option<f64>>()
    };
    NeighbourPod {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        phase: pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".to_owned()),
        created: time_of(pod.metadata.creation_timestamp.as_ref()),
        cpu_request: sum(false, "cpu", cpu_cores),
        cpu_limit: sum(true, "cpu", cpu_cores),
        memory_limit: sum(true, "memory", bytes),
        used_cpu: None,
        used_memory: None,
    }
}

/// A container's request or limit of `key`, as written.
fn quantity(c: &k8s_openapi::api::core::v1::Container, limits: bool, key: &str) -> Option<String> {
    let r = c.resources.as_ref()?;
    let map = if limits {
        r.limits.as_ref()
    } else {
        r.requests.as_ref()
    }?;
    map.get(key).map(|q| q.0.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_keeps_its_zone_instance_taints_and_only_its_troubled_conditions() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "ip-10-52-3-118", "labels": {"topology.kubernetes.io/zone": "eu-west-1b"}},
            "spec": {
                "providerID": "aws:///eu-west-1b/i-0a1b2c3d4e5f",
                "taints": [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]
            },
            "status": {
                "allocatable": {"cpu": "7910m", "memory": "31Gi"},
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "MemoryPressure", "status": "True", "reason": "KubeletHasInsufficientMemory",
                     "lastTransitionTime": "2026-12-03T14:21:00Z"},
                    {"type": "DiskPressure", "status": "False"}
                ]
            }
        }))
        .unwrap();
        let state = node_state(&node);
        assert_eq!(state.zone.as_deref(), Some("eu-west-1b"));
        assert_eq!(state.instance_id.as_deref(), Some("i-0a1b2c3d4e5f"));
        assert_eq!(
            state.taints,
            ["node.kubernetes.io/memory-pressure:NoSchedule"]
        );
        assert_eq!(state.allocatable_cpu, Some(7.91));
        let kinds: Vec<&str> = state.conditions.iter().map(|c| c.kind.as_str()).collect();
        assert_eq!(kinds, ["MemoryPressure"]);
        assert!(state.conditions[0].since.is_some());
    }

    #[test]
    fn a_neighbour_without_a_cpu_limit_has_none() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "backfill-x7k2q", "namespace": "data-eng"},
            "spec": {"containers": [
                {"name": "a", "image": "x", "resources": {"requests": {"cpu": "1"}}},
                {"name": "b", "image": "x", "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}}
            ]},
            "status": {"phase": "Running"}
        }))
        .unwrap();
        let n = neighbour(&pod);
        assert_eq!(n.cpu_request, Some(1.5));
        assert_eq!(
            n.cpu_limit, None,
            "one container without a limit leaves the pod unbounded"
        );
    }
}
