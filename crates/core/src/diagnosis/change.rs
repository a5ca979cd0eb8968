//! A change around the breach, as the diagnosis publishes it (`changes[]`).
//! Plain data: building the timeline and relating a change to the causes is
//! `crate::changes`' work.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What kind of thing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Rollout,
    Scaling,
    Capacity,
    ConfigMap,
    LoadBalancer,
    Listener,
    TargetGroup,
    Targets,
    SecurityGroup,
    NodeGroup,
}

/// Where the change was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeOrigin {
    Kubernetes,
    #[serde(rename = "cloudtrail")]
    CloudTrail,
}

/// What a change touched: what relates it to a cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aspect {
    /// A rollout whose content is unknown (its template was not read).
    Code,
    /// The same pod template rolled again (`kubectl rollout restart`): the
    /// pods re-read their ConfigMaps and Secrets, nothing else changed.
    Restart,
    Image,
    Command,
    Environment,
    Config,
    CpuLimit,
    CpuRequest,
    Memory,
    Probes,
    Ports,
    Scheduling,
    Replicas,
    ScaleOut,
    ScaleIn,
    Nodes,
    HealthCheck,
    TargetGroupAttributes,
    TargetMembership,
    Routing,
    LoadBalancerAttributes,
    Network,
    /// Only allows more traffic (a security-group rule added): it can block nothing.
    NetworkAllowed,
    /// Labels and annotations that do not change how the pods run.
    Metadata,
}

/// One change, placed against the breach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub kind: ChangeKind,
    pub at: DateTime<Utc>,
    pub source: ChangeOrigin,
    /// What changed: `deployment payments/ledger`, `target group k8s-...`.
    pub subject: String,
    /// How, in one line: `revision 18: cpu limit 2 -> 500m`.
    pub summary: String,
    /// Each difference, who made it, how far the rollout got.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// The principal (a role and session, a user), when the source says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The API call that made it (`ModifyTargetGroup`), for changes read from CloudTrail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Made by a controller reacting (the HPA, Karpenter, the load balancer
    /// controller registering pods), not by a person or a pipeline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub automatic: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aspects: Vec<Aspect>,
    /// The limits among `aspects` that it brought down (a CPU or memory
    /// limit, replicas, an HPA's maximum).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lowered: Vec<Aspect>,
    /// Seconds from the breach's start; negative before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_seconds: Option<i64>,
    /// The change the first screen names: the one convicted suspect.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub most_plausible: bool,
    /// Made to another workload of the namespace than the one behind the
    /// group that moved (its rollout, a ConfigMap its pods do not read).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub elsewhere: bool,
}
