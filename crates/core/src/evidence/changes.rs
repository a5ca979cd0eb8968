//! What was read about change, as plain data: the Deployment's revisions with
//! their pod templates, the cluster's scaling and capacity events, the
//! ConfigMaps the pods read, and the audit trail's records (CloudTrail) for
//! the resources in the request path. `crate::changes` turns them into a
//! timeline.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A pod template reduced to what changes behaviour. Environment variable
/// values are never kept (they may hold secrets): only their names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodTemplate {
    pub containers: Vec<ContainerTemplate>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// The affinity and tolerations as compact JSON: compared, not interpreted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<String>,
    /// ConfigMaps the pods read (env, envFrom, volumes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_maps: Vec<String>,
    /// The template's labels, without the controller's `pod-template-hash`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The template's annotations: a short fingerprint of each value (the
    /// values themselves may carry anything and are never kept).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// One container of a pod template.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerTemplate {
    pub name: String,
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Names only, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_names: Vec<String>,
    /// A short fingerprint of each literal value, by name (`valueFrom` names
    /// its source): enough to see that a value changed, never what it is.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_fingerprints: BTreeMap<String, String>,
    /// Quantities as written (`500m`, `1Gi`).
    pub cpu_request: Option<String>,
    pub cpu_limit: Option<String>,
    pub memory_request: Option<String>,
    pub memory_limit: Option<String>,
    pub readiness: Option<ProbeTemplate>,
    pub liveness: Option<ProbeTemplate>,
    pub startup: Option<ProbeTemplate>,
    /// `8000/TCP`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<String>,
}

/// A probe: what it asks and how patiently.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeTemplate {
    /// `GET /readyz :8000`, `TCP :5432`, `exec`, `gRPC :9000`.
    pub action: String,
    pub initial_delay_seconds: Option<i32>,
    pub period_seconds: Option<i32>,
    pub timeout_seconds: Option<i32>,
    pub failure_threshold: Option<i32>,
}

/// One revision of a Deployment: a ReplicaSet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    pub replica_set: String,
    /// `deployment.kubernetes.io/revision`.
    pub number: Option<u64>,
    pub created: Option<DateTime<Utc>>,
    /// The Deployment's replicas when this revision was made
    /// (`deployment.kubernetes.io/desired-replicas`).
    pub desired_replicas: Option<i32>,
    /// How far its rollout got: its pods now, and the ready ones.
    pub replicas: Option<i32>,
    pub ready_replicas: Option<i32>,
    /// `None` when the ReplicaSet was read without its template.
    pub template: Option<PodTemplate>,
}

/// An event from the cluster's controllers (the HPA, Karpenter, the Cluster
/// Autoscaler), as `kubectl get events` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterEvent {
    /// `horizontal-pod-autoscaler`, `karpenter`, `cluster-autoscaler`.
    pub component: String,
    /// `HorizontalPodAutoscaler/web`, `NodeClaim/default-x7k2p`.
    pub object: String,
    pub reason: String,
    pub message: String,
    pub count: u32,
    pub first_seen: Option<DateTime<Utc>>,
    pub last_seen: Option<DateTime<Utc>>,
}

/// A Deployment's newest revision, from its ReplicaSet's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceRollout {
    pub deployment: String,
    pub revision: Option<u64>,
    pub at: DateTime<Utc>,
}

/// When a ConfigMap was last written (its newest `managedFields` time, else
/// its creation). Its data is never read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigMapStamp {
    pub name: String,
    pub changed_at: Option<DateTime<Utc>>,
    /// The edit that time stands for, from `managedFields` (key names only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<FieldEdit>,
}

/// The newest write to an object's `data` or `spec`, as `managedFields`
/// records it: when, which fields (names, never values), and by which
/// manager (`kubectl-edit`, `kubectl-patch`, `argocd-controller`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldEdit {
    pub at: DateTime<Utc>,
    pub fields: Vec<String>,
    pub manager: Option<String>,
}

/// What the cluster said about change around the workload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterActivity {
    /// The HPA's rescale events in the namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scaling: Vec<ClusterEvent>,
    /// Karpenter's and the Cluster Autoscaler's events, cluster-wide.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity: Vec<ClusterEvent>,
    /// The namespace's ConfigMaps (metadata only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_maps: Vec<ConfigMapStamp>,
    /// The newest ReplicaSet of every Deployment in the namespace (metadata
    /// only): the other workloads' rollouts, to be judged too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace_rollouts: Vec<NamespaceRollout>,
    /// Parts that could not be read, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

/// One kind of resource looked up in the audit trail, with one call (paged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrailLookup {
    /// `EventSource = elasticloadbalancing.amazonaws.com`: the load
    /// balancer, its listeners and rules, its target groups and targets.
    LoadBalancing,
    /// `ResourceType = AWS::EC2::SecurityGroup`.
    SecurityGroups,
    /// `EventSource = eks.amazonaws.com`: node groups.
    NodeGroups,
}

impl TrailLookup {
    pub const ALL: [TrailLookup; 3] = [
        TrailLookup::LoadBalancing,
        TrailLookup::SecurityGroups,
        TrailLookup::NodeGroups,
    ];

    /// The one lookup attribute (`LookupEvents` takes exactly one).
    pub fn attribute(self) -> (&'static str, &'static str) {
        match self {
            TrailLookup::LoadBalancing => ("EventSource", "elasticloadbalancing.amazonaws.com"),
            TrailLookup::SecurityGroups => ("ResourceType", "AWS::EC2::SecurityGroup"),
            TrailLookup::NodeGroups => ("EventSource", "eks.amazonaws.com"),
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            TrailLookup::LoadBalancing => "load balancer, listeners, target groups",
            TrailLookup::SecurityGroups => "security groups",
            TrailLookup::NodeGroups => "node groups",
        }
    }
}

/// One record as `LookupEvents` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrailEvent {
    pub id: String,
    pub name: String,
    pub at: DateTime<Utc>,
    /// `elasticloadbalancing.amazonaws.com`.
    pub source: String,
    pub username: Option<String>,
    /// `(ResourceType, ResourceName)`.
    #[serde(default)]
    pub resources: Vec<(String, String)>,
    /// The full record (`CloudTrailEvent`), a JSON document as a string.
    pub record: Option<String>,
}

/// The answer of one lookup: its events, newest first, and whether the
/// page bound stopped it before the start of the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrailPage {
    pub events: Vec<TrailEvent>,
    pub truncated: bool,
}

/// Everything read from the audit trail.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrailEvidence {
    pub events: Vec<TrailEvent>,
    /// The lookups that answered.
    pub read: Vec<TrailLookup>,
    /// Lookups stopped by the page bound before the window's start.
    pub truncated: Vec<TrailLookup>,
    /// The load balancer's security groups (DescribeLoadBalancers): a
    /// security-group record matters when it names one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_groups: Vec<String>,
    /// The window looked up.
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

/// What the request path is made of: what an audit record must name to matter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestPath {
    pub load_balancer_arn: Option<String>,
    /// `app/<name>/<id>`: listeners and rules carry it in their ARNs.
    pub load_balancer_dimension: Option<String>,
    /// Target group ARN -> name.
    pub target_groups: BTreeMap<String, String>,
    pub security_groups: Vec<String>,
    pub cluster: Option<String>,
}
