//! A finding: one hypothesis of the playbook, what the evidence says of it,
//! and the typed facts later stages read (so that no stage parses numbers
//! back out of text written for people).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Verdict;
use crate::series::Series;

/// Which hypothesis a finding decides. Serialised as the stable dotted ids of
/// schema v1 (`pods.worker_ceiling`); an id this version does not know (from
/// a newer producer) is kept as [`FindingId::Unrecognised`] rather than refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FindingId {
    AlarmFlapping,
    LowTrafficArtifact,
    LatencyOutliers,
    SharedLoadBalancerProblem,
    UnhealthyTargets,
    LeastOutstandingRequests,
    PodImbalance,
    WorkerCeiling,
    CpuThrottling,
    HpaCannotReact,
    RecentDeploy,
    /// A change to the load balancer, a target group, a security group or a
    /// node group, made through the AWS API shortly before the breach.
    ConfigurationChange,
    ReadinessProbeMissing,
    PendingPods,
    PodRestarts,
    DownstreamWait,
    TargetErrors,
    LoadBalancerErrors,
    HealthCheckTimeout,
    ProbeFailures,
    NodesBlocked,
    ThresholdInsideNormalRange,
    HpaScalesInTooEagerly,
    /// The bad pods share a node or a zone the good ones do not.
    CommonFactor,
    /// The pods began to print a new error with the breach.
    NewLogErrors,
    Unrecognised(String),
}

impl FindingId {
    /// Every id this version produces, in no particular order.
    pub const KNOWN: [FindingId; 25] = [
        FindingId::AlarmFlapping,
        FindingId::LowTrafficArtifact,
        FindingId::LatencyOutliers,
        FindingId::SharedLoadBalancerProblem,
        FindingId::UnhealthyTargets,
        FindingId::LeastOutstandingRequests,
        FindingId::PodImbalance,
        FindingId::WorkerCeiling,
        FindingId::CpuThrottling,
        FindingId::HpaCannotReact,
        FindingId::RecentDeploy,
        FindingId::ConfigurationChange,
        FindingId::ReadinessProbeMissing,
        FindingId::PendingPods,
        FindingId::PodRestarts,
        FindingId::DownstreamWait,
        FindingId::TargetErrors,
        FindingId::LoadBalancerErrors,
        FindingId::HealthCheckTimeout,
        FindingId::ProbeFailures,
        FindingId::NodesBlocked,
        FindingId::ThresholdInsideNormalRange,
        FindingId::HpaScalesInTooEagerly,
        FindingId::CommonFactor,
        FindingId::NewLogErrors,
    ];

    pub fn as_str(&self) -> &str {
        match self {
            FindingId::AlarmFlapping => "alarm.flapping",
            FindingId::LowTrafficArtifact => "traffic.low_traffic_artifact",
            FindingId::LatencyOutliers => "latency.outliers",
            FindingId::SharedLoadBalancerProblem => "alb.shared_problem",
            FindingId::UnhealthyTargets => "targets.unhealthy",
            FindingId::LeastOutstandingRequests => "alb.least_outstanding_requests",
            FindingId::PodImbalance => "pods.imbalance",
            FindingId::WorkerCeiling => "pods.worker_ceiling",
            FindingId::CpuThrottling => "pods.throttling",
            FindingId::HpaCannotReact => "hpa.cannot_react",
            FindingId::RecentDeploy => "deploy.recent_change",
            FindingId::ConfigurationChange => "config.recent_change",
            FindingId::ReadinessProbeMissing => "pods.readiness_probe_missing",
            FindingId::PendingPods => "capacity.pending_pods",
            FindingId::PodRestarts => "pods.restarts",
            FindingId::DownstreamWait => "dependency.waiting",
            FindingId::TargetErrors => "errors.target_side",
            FindingId::LoadBalancerErrors => "errors.load_balancer_side",
            FindingId::HealthCheckTimeout => "targets.health_check_timeout",
            FindingId::ProbeFailures => "pods.probe_failures",
            FindingId::NodesBlocked => "capacity.nodes_blocked",
            FindingId::ThresholdInsideNormalRange => "alarm.threshold_inside_normal_range",
            FindingId::HpaScalesInTooEagerly => "hpa.scales_in_too_eagerly",
            FindingId::CommonFactor => "placement.common_factor",
            FindingId::NewLogErrors => "logs.new_errors",
            FindingId::Unrecognised(id) => id,
        }
    }

    /// A short name for people (feedback forms, track records).
    pub fn title(&self) -> &str {
        match self {
            FindingId::AlarmFlapping => "flapping alarm",
            FindingId::LowTrafficArtifact => "low-traffic artifact",
            FindingId::LatencyOutliers => "a few slow requests",
            FindingId::SharedLoadBalancerProblem => "shared load balancer problem",
            FindingId::UnhealthyTargets => "unhealthy targets",
            FindingId::LeastOutstandingRequests => "least-outstanding-requests routing",
            FindingId::PodImbalance => "uneven load across pods",
            FindingId::WorkerCeiling => "per-process ceiling",
            FindingId::CpuThrottling => "CPU throttling",
            FindingId::HpaCannotReact => "HPA cannot react",
            FindingId::RecentDeploy => "recent deploy",
            FindingId::ConfigurationChange => "recent AWS change",
            FindingId::ReadinessProbeMissing => "no readiness probe",
            FindingId::PendingPods => "pending pods",
            FindingId::PodRestarts => "pod restarts",
            FindingId::DownstreamWait => "slow dependency",
            FindingId::TargetErrors => "errors from the targets",
            FindingId::LoadBalancerErrors => "errors from the load balancer",
            FindingId::HealthCheckTimeout => "health checks time out",
            FindingId::ProbeFailures => "failing probes",
            FindingId::NodesBlocked => "nodes cannot be added",
            FindingId::ThresholdInsideNormalRange => "threshold inside the normal range",
            FindingId::HpaScalesInTooEagerly => "HPA scales in too eagerly",
            FindingId::CommonFactor => "a shared node or zone",
            FindingId::NewLogErrors => "new errors in the logs",
            FindingId::Unrecognised(id) => id,
        }
    }

    /// The id for a published name; unknown names are kept as they are.
    pub fn parse(text: &str) -> Self {
        FindingId::KNOWN
            .into_iter()
            .find(|id| id.as_str() == text)
            .unwrap_or_else(|| FindingId::Unrecognised(text.to_owned()))
    }
}

impl fmt::Display for FindingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FindingId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FindingId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(FindingId::parse(&text))
    }
}

/// One pod's CPU, in cores.
#[derive(Debug, Clone, PartialEq)]
pub struct PodCpu {
    pub pod: String,
    pub cores: f64,
}

/// What the imbalance finding measured across pods while the alarm breached.
#[derive(Debug, Clone, PartialEq)]
pub struct ImbalanceFacts {
    /// The busiest pod at its p90 while breaching.
    pub busiest: Option<PodCpu>,
    /// The pods running well above their peers (empty unless imbalance is supported).
    pub hot: Vec<PodCpu>,
    /// Busiest pod over the median of the *other* pods (median over the breaching periods).
    pub hot_over_peers: f64,
    /// How tightly the other pods agree: their coefficient of variation.
    pub peers_spread: f64,
}

/// A pod that restarted, was replaced or is crash-looping around the breach.
#[derive(Debug, Clone, PartialEq)]
pub struct PodTurnover {
    pub pod: String,
    pub restarts: u32,
    /// `OOMKilled`, `Error`, `CrashLoopBackOff`, or `new pod` for one started in the window.
    pub reason: String,
    pub container: Option<String>,
}

/// Pods that restarted or started inside the breach window.
#[derive(Debug, Clone, PartialEq)]
pub struct RestartFacts {
    pub pods: Vec<PodTurnover>,
}

/// The per-process ceiling the worker-ceiling finding saw.
#[derive(Debug, Clone, PartialEq)]
pub struct CeilingFacts {
    /// The highest busy pod's plateau (p90 while breaching), in cores.
    pub plateau_cores: f64,
    /// Whole cores per pod at the plateau: one CPU-bound worker each.
    pub workers_per_pod: u32,
    /// Pods at the plateau.
    pub busy_pods: usize,
    /// The pods' CPU limit, when one is set.
    pub limit_cores: Option<f64>,
}

/// How hard the pods were throttled.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottlingFacts {
    /// The worst pod's median share of throttled CFS periods while breaching (0..1).
    pub worst_throttled_share: f64,
    /// Pods whose usage reached their CPU limit.
    pub pods_at_limit: Vec<String>,
    pub limit_cores: Option<f64>,
    /// The pods' CPU request, in cores, when set.
    pub request_cores: Option<f64>,
    /// The busiest pod's usage while breaching (p90), in cores.
    pub peak_cores: Option<f64>,
}

/// The HPA's bounds as read.
#[derive(Debug, Clone, PartialEq)]
pub struct HpaBounds {
    pub name: String,
    pub min_replicas: u32,
    pub max_replicas: u32,
    pub current_replicas: Option<u32>,
}

impl HpaBounds {
    pub fn at_max(&self) -> bool {
        self.current_replicas
            .is_some_and(|current| current >= self.max_replicas)
    }
}

/// What decides whether the HPA can react.
#[derive(Debug, Clone, PartialEq)]
pub struct HpaFacts {
    /// `None`: no HPA scales the Deployment.
    pub bounds: Option<HpaBounds>,
    /// Target CPU utilisation, percent of request; `None` when it scales on other metrics.
    pub target_utilisation: Option<u32>,
    /// The highest utilisation the HPA computes (mean over pods of usage / request), percent.
    pub peak_utilisation: Option<f64>,
    /// The pods' CPU request, in cores; `None` when the pods set none.
    pub request_cores: Option<f64>,
    /// The condition by which the HPA says it cannot act (`ScalingActive=False`).
    pub blocked: Option<crate::evidence::workload::Condition>,
}

/// How many requests one side of the 5xx failed, while the alarm breached.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorFacts {
    pub errors: f64,
    /// The requests they were a part of (the loudest group's for the
    /// targets, the whole load balancer's for its own); `None` when unread.
    pub requests: Option<f64>,
}

impl ErrorFacts {
    /// Errors as a share of requests, 0..1.
    pub fn rate(&self) -> Option<f64> {
        self.requests.filter(|r| *r > 0.0).map(|r| self.errors / r)
    }
}

/// Typed facts of a finding, per kind.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Facts {
    #[default]
    None,
    Imbalance(ImbalanceFacts),
    Ceiling(CeilingFacts),
    Throttling(ThrottlingFacts),
    Hpa(HpaFacts),
    Restarts(RestartFacts),
    Errors(ErrorFacts),
    /// What the last rollout changed in the pod template.
    Rollout(Vec<super::change::Aspect>),
    /// The node the bad pods share, and the other workloads on it
    /// (`namespace/owner`).
    Node {
        name: String,
        sharing: Vec<String>,
    },
    /// The error the pods began to print, where, and since when.
    Logs {
        namespace: String,
        template: String,
        pods: Vec<String>,
        container: String,
        since: chrono::DateTime<chrono::Utc>,
        /// Printed by the previous instance of a container that was killed.
        previous: bool,
        /// The error says the caller gave up (cancelled, aborted, closed the
        /// connection): what slowness looks like from inside, not its cause.
        abandoned: bool,
    },
}

/// What a finding is to the breach: one of its causes, a hypothesis ruled
/// out, or context (true, but not why the alarm fired). Headlines and next
/// steps name causes first, in causal order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Cause,
    RuledOut,
    #[default]
    Context,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Cause => "cause",
            Role::RuledOut => "ruled out",
            Role::Context => "context",
        }
    }
}

/// One number (or fact) behind a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub name: String,
    pub value: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl Evidence {
    /// A measured number; whole numbers are written without a fraction.
    pub fn number(name: &str, value: f64, unit: &str) -> Self {
        let whole = value.fract() == 0.0 && value.abs() < 9.0e15;
        let value = if whole {
            serde_json::Value::from(value as i64)
        } else {
            serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, Into::into)
        };
        Evidence {
            name: name.to_owned(),
            value,
            unit: (!unit.is_empty()).then(|| unit.to_owned()),
        }
    }

    pub fn text(name: &str, value: impl Into<String>) -> Self {
        Evidence {
            name: name.to_owned(),
            value: serde_json::Value::String(value.into()),
            unit: None,
        }
    }

    /// The value as a person reads it.
    pub fn display_value(&self) -> String {
        let value = match &self.value {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => "n/a".to_owned(),
            other => other.to_string(),
        };
        match &self.unit {
            Some(unit) => format!("{value} {unit}"),
            None => value,
        }
    }
}

/// One hypothesis of the playbook and what the evidence says of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable machine name (`alarm.flapping`, `alb.shared_problem`).
    pub id: FindingId,
    pub hypothesis: String,
    pub verdict: Verdict,
    /// Cause, ruled out or context: set once every finding is decided.
    #[serde(default)]
    pub role: Role,
    /// One sentence with the deciding numbers.
    pub summary: String,
    /// A short clause for the verdict line, when this finding explains the alarm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// When refuted: a short clause with the number that ruled it out, for
    /// the report's "Ruled out:" line (`low traffic: 1392 requests/min`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ruled_out_by: Option<String>,
    pub evidence: Vec<Evidence>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Series>,
    /// The numbers later stages (next steps, severity) read, typed; not
    /// published (the evidence lines carry them for people).
    #[serde(skip)]
    pub facts: Facts,
}

impl Finding {
    /// The same finding with `cause` as its clause in the verdict line (where,
    /// for the headline, even when the hypothesis itself is ruled out).
    pub fn with_cause(self, cause: String) -> Self {
        Finding {
            cause: Some(cause),
            ..self
        }
    }

    /// A decided hypothesis: `clause` is its cause when the evidence does not
    /// refute it, and what ruled it out when it does. The role is set once all
    /// findings are decided; evidence, series and facts start empty.
    pub fn decided(
        id: FindingId,
        hypothesis: impl Into<String>,
        verdict: Verdict,
        summary: String,
        clause: Option<String>,
    ) -> Self {
        let refuted = verdict == Verdict::Refuted;
        let (cause, ruled_out_by) = if refuted {
            (None, clause)
        } else {
            (clause, None)
        };
        Finding {
            id,
            hypothesis: hypothesis.into(),
            verdict,
            role: Role::default(),
            summary,
            cause,
            ruled_out_by,
            evidence: Vec::new(),
            series: Vec::new(),
            facts: Facts::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_id_reads_back_as_itself() {
        for id in FindingId::KNOWN {
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(serde_json::from_str::<FindingId>(&json).unwrap(), id);
            assert!(!matches!(
                FindingId::parse(id.as_str()),
                FindingId::Unrecognised(_)
            ));
        }
    }

    #[test]
    fn an_id_from_a_newer_producer_is_kept_not_refused() {
        let id: FindingId = serde_json::from_str("\"targets.draining\"").unwrap();
        assert_eq!(id, FindingId::Unrecognised("targets.draining".to_owned()));
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"targets.draining\"");
    }

    #[test]
    fn an_hpa_is_at_max_only_when_its_current_count_says_so() {
        let bounds = |current| HpaBounds {
            name: "web".to_owned(),
            min_replicas: 2,
            max_replicas: 6,
            current_replicas: current,
        };
        assert!(bounds(Some(6)).at_max());
        assert!(!bounds(Some(5)).at_max());
        assert!(!bounds(None).at_max());
    }
}
