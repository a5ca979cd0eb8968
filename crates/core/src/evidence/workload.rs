//! The Kubernetes side of the evidence, as plain data: the workload behind
//! the culprit target group and its pods' time series.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::evidence::logs::{BYTES_IN_ALL, BYTES_PER_CONTAINER, LogPlan, LogRequest, MAX_PODS};
use crate::evidence::service_map::ServiceRef;

/// What the Kubernetes adapter is asked to find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadTarget {
    /// The EKS cluster (configuration, else the target group's `elbv2.k8s.aws/cluster` tag).
    pub cluster: Option<String>,
    pub target_group_arn: String,
    pub target_group_name: String,
    /// The service AWS alone points at (tags, else the name): used when no
    /// TargetGroupBinding names the target group.
    pub service_hint: Option<ServiceRef>,
    /// The cluster's TargetGroupBindings when they were read alongside AWS;
    /// `None`: not read yet, so the walk lists them itself.
    pub bindings: Option<TargetGroupBindings>,
}

/// Which Service each target group feeds, from the AWS Load Balancer
/// Controller's TargetGroupBindings. Listing them does not depend on the
/// culprit, so it runs while AWS is read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TargetGroupBindings {
    /// Target group ARN -> Service.
    pub services: BTreeMap<String, ServiceRef>,
    /// Why they could not be listed (no controller CRD, RBAC), when so.
    pub unreadable: Option<String>,
}

/// The pods behind the Service, sent as soon as they are listed so that their
/// time series are queried while the rest of the walk (Deployment, HPA) goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodsListed {
    /// The cluster the walk read (configuration, else the target group's tag),
    /// so that Prometheus behind its service proxy is asked in the same one.
    pub cluster: Option<String>,
    pub namespace: String,
    pub pods: Vec<String>,
    /// Each pod's workload (its ReplicaSet's Deployment), when it has one:
    /// the name Container Insights publishes as `PodName`.
    pub workloads: BTreeMap<String, String>,
    /// Which containers' logs to read, chosen from the listing itself.
    pub logs: LogPlan,
    /// When each pod was created: a log group covers a pod from then only.
    pub created: BTreeMap<String, DateTime<Utc>>,
}

impl PodsListed {
    /// The Deployments the pods belong to, each once.
    pub fn owners(&self) -> Vec<String> {
        let mut owners: Vec<String> = self.workloads.values().cloned().collect();
        owners.sort();
        owners.dedup();
        owners
    }

    /// The announcement of `pods` in `namespace` of `cluster`.
    pub fn of(cluster: Option<String>, namespace: String, pods: &[PodInfo]) -> Self {
        PodsListed {
            cluster,
            namespace,
            pods: pods.iter().map(|p| p.name.clone()).collect(),
            // A ReplicaSet is named after its Deployment plus the pod-template hash.
            workloads: pods
                .iter()
                .filter_map(|p| {
                    let set = p.owner_replica_set.as_deref()?;
                    let (deployment, _hash) = set.rsplit_once('-')?;
                    Some((p.name.clone(), deployment.to_owned()))
                })
                .collect(),
            logs: LogPlan::for_pods(pods),
            created: pods
                .iter()
                .filter_map(|p| Some((p.name.clone(), p.created?)))
                .collect(),
        }
    }
}

/// The logs to read are chosen from the listing alone, so the plan is made
/// where the listing is.
impl LogPlan {
    /// The containers to read among `pods`: those in trouble first (not
    /// ready, restarted, waiting), then the newest ReplicaSet's, then one
    /// ordinary pod of another ReplicaSet (or the oldest) for contrast; the
    /// previous instance of each chosen container that restarted too.
    pub fn for_pods(pods: &[PodInfo]) -> Self {
        let newest_set = pods
            .iter()
            .filter(|p| p.owner_replica_set.is_some())
            .max_by_key(|p| p.created)
            .and_then(|p| p.owner_replica_set.clone());
        let trouble = |p: &PodInfo| {
            !p.ready
                || p.restarts > 0
                || p.lifecycle.waiting_reason.is_some()
                || p.phase != "Running"
        };
        let mut ranked: Vec<(&PodInfo, &str)> = Vec::new();
        for pod in pods.iter().filter(|p| trouble(p)) {
            ranked.push((
                pod,
                if pod.restarts > 0 {
                    "restarted"
                } else {
                    "not ready"
                },
            ));
        }
        let several_sets = pods
            .iter()
            .any(|p| p.owner_replica_set.is_some() && p.owner_replica_set != newest_set);
        if several_sets {
            for pod in pods
                .iter()
                .filter(|p| p.owner_replica_set == newest_set && !trouble(p))
            {
                ranked.push((pod, "newest ReplicaSet"));
            }
        }
        ranked.truncate(MAX_PODS - 1);
        // Contrast: an ordinary pod the ranking did not take, preferably of
        // another ReplicaSet than the worst pod's.
        let worst_set = ranked
            .first()
            .and_then(|(p, _)| p.owner_replica_set.clone());
        let taken =
            |p: &PodInfo, ranked: &[(&PodInfo, &str)]| ranked.iter().any(|(r, _)| r.name == p.name);
        let mut ordinary: Vec<&PodInfo> = pods
            .iter()
            .filter(|p| !trouble(p) && !taken(p, &ranked))
            .collect();
        ordinary.sort_by_key(|p| {
            (
                p.owner_replica_set == worst_set && worst_set.is_some(),
                p.created,
            )
        });
        if let Some(pod) = ordinary.first() {
            ranked.push((pod, "contrast"));
        }
        // Nothing stands out: a few pods as they come.
        for pod in pods {
            if ranked.len() >= MAX_PODS.min(pods.len()) {
                break;
            }
            if !taken(pod, &ranked) {
                ranked.push((pod, "sample"));
            }
        }
        let mut requests = Vec::new();
        for (pod, why) in ranked {
            let Some(main) = pod.containers.first() else {
                continue;
            };
            requests.push(LogRequest {
                pod: pod.name.clone(),
                container: main.name.clone(),
                previous: false,
                why: why.to_owned(),
            });
            if let Some(ended) = &pod.lifecycle.last_termination {
                requests.push(LogRequest {
                    pod: pod.name.clone(),
                    container: ended.container.clone(),
                    previous: true,
                    why: format!("{why}, previous instance ({})", ended.reason),
                });
            } else if pod.restarts > 0 {
                requests.push(LogRequest {
                    pod: pod.name.clone(),
                    container: main.name.clone(),
                    previous: true,
                    why: format!("{why}, previous instance"),
                });
            }
        }
        // Half the budget for pods/log; the log group's query may bring the rest.
        LogPlan {
            bytes_per_container: BYTES_PER_CONTAINER.min(BYTES_IN_ALL / 2 / requests.len().max(1)),
            requests,
        }
    }
}

/// One container's resources and probes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerInfo {
    pub name: String,
    /// Cores.
    pub cpu_request: Option<f64>,
    pub cpu_limit: Option<f64>,
    /// Bytes.
    pub memory_limit: Option<f64>,
    pub readiness_probe: bool,
    pub liveness_probe: bool,
    pub args: Vec<String>,
}

/// A pod of the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodInfo {
    pub name: String,
    pub phase: String,
    pub node: Option<String>,
    pub ready: bool,
    pub restarts: u32,
    pub owner_replica_set: Option<String>,
    pub created: Option<DateTime<Utc>>,
    /// `status.podIP`: an ip-mode target is a pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// `status.reason` (`Evicted`, `NodeLost`, `Shutdown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub containers: Vec<ContainerInfo>,
    /// Why a pending pod is not scheduled (from its events).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scheduling_messages: Vec<String>,
    /// Restarts, terminations and warnings: why a pod may be cold or failing.
    #[serde(default)]
    pub lifecycle: PodLifecycle,
}

/// What happened to a pod's containers, from its status and its warning events.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PodLifecycle {
    /// When the most recently started container started running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_since: Option<DateTime<Utc>>,
    /// The most recent termination of any container (`lastState.terminated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_termination: Option<Termination>,
    /// Why a container is waiting instead of running (`CrashLoopBackOff`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_reason: Option<String>,
    /// Warning events about the pod (BackOff, Unhealthy, OOMKilling, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<PodWarning>,
}

/// A container's previous run ended: how and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Termination {
    pub container: String,
    /// `OOMKilled`, `Error`, `Completed`, ...
    pub reason: String,
    pub exit_code: i32,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A Warning event about a pod, as `kubectl describe pod` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodWarning {
    pub reason: String,
    pub message: String,
    pub count: u32,
    pub last_seen: Option<DateTime<Utc>>,
}

impl PodInfo {
    /// Sum of the containers' CPU requests, in cores, when every container sets one.
    pub fn cpu_request(&self) -> Option<f64> {
        self.containers.iter().map(|c| c.cpu_request).sum()
    }

    /// Sum of the containers' CPU limits, in cores, when every container sets one.
    pub fn cpu_limit(&self) -> Option<f64> {
        self.containers.iter().map(|c| c.cpu_limit).sum()
    }
}

/// The Deployment that owns the pods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeploymentInfo {
    pub name: String,
    pub replicas: Option<i32>,
    pub ready_replicas: Option<i32>,
    pub strategy: Option<String>,
    pub revision: Option<String>,
    /// When the newest ReplicaSet was created: the last rollout.
    pub last_rollout: Option<DateTime<Utc>>,
    /// Its ReplicaSets, newest revision first, with their pod templates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<crate::evidence::changes::Revision>,
    /// `status.conditions` (`Progressing`, `Available`, `ReplicaFailure`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// `spec.paused`: a paused rollout stays where it is.
    #[serde(default)]
    pub paused: bool,
    /// The newest write of `spec.replicas` alone by a person or a tool
    /// (`kubectl scale`, the scale subresource), not the HPA's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_edit: Option<crate::evidence::changes::FieldEdit>,
}

/// A condition of a Kubernetes object (HPA, Deployment, Node), as its
/// controller wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    pub kind: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// When the status last flipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
}

impl Condition {
    /// `Kind=Status (Reason)`, as `kubectl describe` lists it.
    pub fn describe(&self) -> String {
        match &self.reason {
            Some(reason) => format!("{}={} ({reason})", self.kind, self.status),
            None => format!("{}={}", self.kind, self.status),
        }
    }
}

/// A node that holds some of the workload's pods, with what it says about
/// itself and what else runs on it (their names and resources only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeState {
    pub name: String,
    /// `topology.kubernetes.io/zone`.
    pub zone: Option<String>,
    /// The EC2 instance behind it (from `spec.providerID`): instance-mode targets are nodes.
    pub instance_id: Option<String>,
    /// Conditions away from their healthy status (`Ready` not True, a pressure True).
    pub conditions: Vec<Condition>,
    /// `key:Effect` of each taint.
    pub taints: Vec<String>,
    pub allocatable_cpu: Option<f64>,
    pub allocatable_memory: Option<f64>,
    /// NodeMetrics now, when readable.
    pub used_cpu: Option<f64>,
    pub used_memory: Option<f64>,
    /// Every other pod placed on it (other workloads and namespaces).
    pub neighbours: Vec<NeighbourPod>,
    /// Karpenter's, the autoscaler's and the kubelet's events about it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<crate::evidence::changes::ClusterEvent>,
}

/// Another pod on a node: what it asks for and, when known, what it uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NeighbourPod {
    pub namespace: String,
    pub name: String,
    pub phase: String,
    pub created: Option<DateTime<Utc>>,
    /// Sums over containers; `None` when a container sets none.
    pub cpu_request: Option<f64>,
    pub cpu_limit: Option<f64>,
    pub memory_limit: Option<f64>,
    pub used_cpu: Option<f64>,
    pub used_memory: Option<f64>,
}

/// The HorizontalPodAutoscaler that scales the Deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HpaInfo {
    pub name: String,
    /// `autoscaling/v2` or `autoscaling/v1`, as read.
    pub api_version: String,
    /// Applied as autoscaling/v1 (CPU only), from its last-applied configuration.
    pub created_as_v1: bool,
    pub min_replicas: Option<i32>,
    pub max_replicas: i32,
    /// Target CPU utilisation (percent of request).
    pub target_cpu_utilization: Option<i32>,
    /// Other metrics it scales on (memory, custom, external).
    pub other_metrics: Vec<String>,
    pub current_replicas: Option<i32>,
    pub desired_replicas: Option<i32>,
    pub current_cpu_utilization: Option<i32>,
    pub conditions: Vec<Condition>,
    /// `spec.behavior.scaleDown` (autoscaling/v2 only): how fast it removes pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down: Option<ScaleDownBehaviour>,
    /// The newest write to its spec (a person lowering `maxReplicas`, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_edit: Option<crate::evidence::changes::FieldEdit>,
}

/// How an HPA scales in, as its `behavior.scaleDown` says (Kubernetes'
/// defaults when unset: a 300 s stabilization window, up to 100 % of pods a
/// 15 s period).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleDownBehaviour {
    pub stabilization_window_seconds: Option<i32>,
    /// `Pods 2 per 60 s`, `Percent 10 per 60 s`.
    pub policies: Vec<String>,
}

/// A pod's usage in a `metrics.k8s.io` snapshot (what `kubectl top` shows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodUsage {
    pub pod: String,
    pub cpu_cores: f64,
    pub memory_bytes: f64,
}

/// Allocatable versus requested CPU on a node (read when pods are pending).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeCapacity {
    pub name: String,
    pub allocatable_cpu: f64,
    pub requested_cpu: f64,
}

/// Whether the cluster can add nodes for pending pods: Karpenter's NodePools
/// and NodeClaims, or the Cluster Autoscaler's node groups. Read only when
/// pods are pending; empty parts mean that autoscaler is not installed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeProvisioning {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_pools: Vec<NodePoolState>,
    /// NodeClaims with a condition that is not True (not launched, not registered).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing_claims: Vec<NodeClaimState>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub autoscaler_groups: Vec<AutoscalerGroup>,
    /// Parts that could not be read (`nodepools: 403 Forbidden`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

/// A Karpenter NodePool: what it may provision (`spec.limits`) against what
/// its nodes already hold (`status.resources`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePoolState {
    pub name: String,
    /// Cores.
    pub cpu_limit: Option<f64>,
    pub cpu_used: Option<f64>,
    /// Bytes.
    pub memory_limit: Option<f64>,
    pub memory_used: Option<f64>,
}

impl NodePoolState {
    /// The resources at or over their limit: the pool will launch nothing more.
    pub fn exhausted(&self) -> Vec<&'static str> {
        let at = |limit: Option<f64>, used: Option<f64>| match (limit, used) {
            (Some(limit), Some(used)) => used >= limit,
            _ => false,
        };
        let mut out = Vec::new();
        if at(self.cpu_limit, self.cpu_used) {
            out.push("cpu");
        }
        if at(self.memory_limit, self.memory_used) {
            out.push("memory");
        }
        out
    }
}

/// A NodeClaim that did not become a node, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeClaimState {
    pub name: String,
    pub node_pool: Option<String>,
    /// The first condition that is not True (`Launched`, `Registered`, `Initialized`).
    pub condition: String,
    pub reason: Option<String>,
    pub message: Option<String>,
}

/// One Cluster Autoscaler node group, from its status ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoscalerGroup {
    pub name: String,
    /// The size the autoscaler asked the cloud provider for.
    pub target: Option<u32>,
    pub max_size: Option<u32>,
}

impl AutoscalerGroup {
    pub fn at_max(&self) -> bool {
        matches!((self.target, self.max_size), (Some(t), Some(m)) if t >= m)
    }
}

/// Everything read from the cluster about the workload behind a target group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub cluster: Option<String>,
    pub service: ServiceRef,
    pub selector: BTreeMap<String, String>,
    pub pods: Vec<PodInfo>,
    pub deployment: Option<DeploymentInfo>,
    pub hpa: Option<HpaInfo>,
    pub snapshot: Option<Vec<PodUsage>>,
    pub nodes: Vec<NodeCapacity>,
    /// Read when pods are pending: can the cluster add nodes?
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning: Option<NodeProvisioning>,
    /// Parts that could not be read (e.g. PodMetrics forbidden), with the reason.
    pub partial: Vec<(String, String)>,
    /// The HPA's, Karpenter's and the autoscaler's events, and the ConfigMaps' times.
    #[serde(default)]
    pub activity: crate::evidence::changes::ClusterActivity,
    /// The nodes the pods run on (conditions, taints, room, neighbours).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<NodeState>,
}

/// Points per pod, oldest first.
pub type PerPod = BTreeMap<String, Vec<(DateTime<Utc>, f64)>>;

/// Per-pod time series from Prometheus, oldest point first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodSeries {
    pub step_seconds: u32,
    /// Cores used, per pod.
    pub cpu: PerPod,
    /// Share of CFS periods throttled, per pod.
    pub throttled: PerPod,
    /// Working-set bytes, per pod.
    pub memory: PerPod,
    /// Share of time waiting for a CPU (pressure stall information), per
    /// pod; empty when the kubelets do not report it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cpu_waiting: PerPod,
    /// How many pods of the workload's Deployments ran at each step,
    /// removed ones included (the per-pod series cover the pods running now).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_count: Vec<(DateTime<Utc>, f64)>,
    /// Where the series came from (`prometheus at URL`, `service proxy to NS/SVC:PORT`).
    pub origin: String,
}

/// Parses a Kubernetes CPU quantity into cores: `1200m`, `1.5`, `2`.
pub fn cpu_cores(quantity: &str) -> Option<f64> {
    let q = quantity.trim();
    if let Some(milli) = q.strip_suffix('m') {
        return milli.parse::<f64>().ok().map(|m| m / 1000.0);
    }
    if let Some(nano) = q.strip_suffix('n') {
        return nano.parse::<f64>().ok().map(|n| n / 1e9);
    }
    if let Some(micro) = q.strip_suffix('u') {
        return micro.parse::<f64>().ok().map(|n| n / 1e6);
    }
    q.parse().ok()
}

/// Parses a Kubernetes memory quantity into bytes: `768Mi`, `1Gi`, `512M`, `1000`.
pub fn bytes(quantity: &str) -> Option<f64> {
    let q = quantity.trim();
    const UNITS: [(&str, f64); 12] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    for (suffix, factor) in UNITS {
        if let Some(number) = q.strip_suffix(suffix) {
            return number.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    q.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_quantities_become_cores() {
        assert_eq!(cpu_cores("1200m"), Some(1.2));
        assert_eq!(cpu_cores("1.5"), Some(1.5));
        assert_eq!(cpu_cores("2"), Some(2.0));
        assert_eq!(cpu_cores("250000000n"), Some(0.25));
        assert_eq!(cpu_cores("lots"), None);
    }

    #[test]
    fn memory_quantities_become_bytes() {
        assert_eq!(bytes("768Mi"), Some(805_306_368.0));
        assert_eq!(bytes("1Gi"), Some(1_073_741_824.0));
        assert_eq!(bytes("512M"), Some(512e6));
        assert_eq!(bytes("16093584Ki"), Some(16_093_584.0 * 1024.0));
    }

    #[test]
    fn a_pod_without_a_request_on_every_container_has_no_request() {
        let container = |request| ContainerInfo {
            name: "c".into(),
            cpu_request: request,
            cpu_limit: None,
            memory_limit: None,
            readiness_probe: false,
            liveness_probe: false,
            args: vec![],
        };
        let pod = PodInfo {
            name: "p".into(),
            phase: "Running".into(),
            node: None,
            ready: true,
            restarts: 0,
            owner_replica_set: None,
            created: None,
            ip: None,
            reason: None,
            containers: vec![container(Some(1.0)), container(None)],
            scheduling_messages: vec![],
            lifecycle: PodLifecycle::default(),
        };
        assert_eq!(pod.cpu_request(), None);
    }

    mod log_plan {
        use super::super::*;
        use chrono::Duration;

        fn pod(name: &str, set: &str, minutes_old: i64, restarts: u32) -> PodInfo {
            PodInfo {
                name: name.into(),
                phase: "Running".into(),
                node: None,
                ready: true,
                restarts,
                owner_replica_set: Some(set.into()),
                created: Some(
                    DateTime::<Utc>::UNIX_EPOCH + Duration::hours(10)
                        - Duration::minutes(minutes_old),
                ),
                ip: None,
                reason: None,
                containers: vec![ContainerInfo {
                    name: "app".into(),
                    cpu_request: None,
                    cpu_limit: None,
                    memory_limit: None,
                    readiness_probe: true,
                    liveness_probe: true,
                    args: vec![],
                }],
                scheduling_messages: vec![],
                lifecycle: PodLifecycle::default(),
            }
        }

        #[test]
        fn a_restarted_pod_is_read_first_with_its_previous_instance_and_an_ordinary_pod_for_contrast()
         {
            let mut hot = pod("web-a-1", "web-a", 100, 3);
            hot.lifecycle.last_termination = Some(Termination {
                container: "app".into(),
                reason: "OOMKilled".into(),
                exit_code: 137,
                finished_at: None,
            });
            let pods = vec![
                pod("web-a-0", "web-a", 100, 0),
                hot,
                pod("web-a-2", "web-a", 100, 0),
            ];
            let plan = LogPlan::for_pods(&pods);
            let read: Vec<(&str, bool)> = plan
                .requests
                .iter()
                .map(|r| (r.pod.as_str(), r.previous))
                .collect();
            assert_eq!(
                read[..3],
                [("web-a-1", false), ("web-a-1", true), ("web-a-0", false)]
            );
            assert!(plan.bytes_per_container * plan.requests.len() * 2 <= BYTES_IN_ALL);
        }

        #[test]
        fn after_a_rollout_the_new_pods_are_read_and_an_old_one_for_contrast() {
            let pods = vec![
                pod("web-old-1", "web-old", 300, 0),
                pod("web-old-2", "web-old", 300, 0),
                pod("web-new-1", "web-new", 10, 0),
                pod("web-new-2", "web-new", 10, 0),
            ];
            let plan = LogPlan::for_pods(&pods);
            let why: Vec<(&str, &str)> = plan
                .requests
                .iter()
                .map(|r| (r.pod.as_str(), r.why.as_str()))
                .collect();
            assert_eq!(why[0], ("web-new-1", "newest ReplicaSet"));
            assert_eq!(why[1], ("web-new-2", "newest ReplicaSet"));
            assert_eq!(why[2].1, "contrast");
            assert!(why[2].0.starts_with("web-old"));
        }

        #[test]
        fn never_more_than_a_mebibyte_is_asked_for_in_all() {
            let pods: Vec<PodInfo> = (0..40).map(|i| pod(&format!("p-{i}"), "s", i, 1)).collect();
            let plan = LogPlan::for_pods(&pods);
            assert!(plan.requests.len() <= MAX_PODS * 2);
            assert!(plan.bytes_per_container * plan.requests.len() * 2 <= BYTES_IN_ALL);
            assert!(plan.bytes_per_container <= BYTES_PER_CONTAINER);
        }
    }
}
