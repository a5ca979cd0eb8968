//! What the diagnosis reports about the load balancer's target groups and the
//! workload behind the culprit: owned here so that every layer above the
//! findings (renderings, next steps, notify) reads them without reaching into
//! the findings.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::evidence::service_map::ServiceRef;

/// A target that is not healthy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnhealthyTarget {
    pub id: String,
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One target group as the diagnosis reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetGroupSummary {
    pub name: String,
    pub arn: String,
    pub target_type: String,
    pub port: Option<i32>,
    pub protocol: Option<String>,
    /// `load_balancing.algorithm.type`.
    pub algorithm: Option<String>,
    /// `slow_start.duration_seconds` (0: off), when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_start_seconds: Option<i32>,
    pub kubernetes_service: Option<ServiceRef>,
    /// Named as (one of) the group(s) behind the alarm.
    pub culprit: bool,
    /// The alarm's statistic for this group, averaged over the breaching periods.
    pub statistic_while_breaching: Option<f64>,
    pub p99_peak: Option<f64>,
    pub requests_per_minute_while_breaching: Option<f64>,
    /// This group's share of the breach, 0..1: of the change that brought the
    /// metric over when a baseline was read, else of its level (request-weighted
    /// for an Average).
    pub share_of_breach: Option<f64>,
    /// The group's own statistic at its usual level before the breach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    /// The alarm's metric over the breach had this group stayed at its baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_its_change: Option<f64>,
    pub http_5xx_in_window: Option<f64>,
    /// What users felt, before the breach and while it lasted: requests (or
    /// new flows) and failures (target 5xx, or TCP resets) per minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<UserImpact>,
    pub unhealthy_hosts_peak: Option<f64>,
    /// Targets that joined or left in the breach and the minutes before it
    /// (a rollout's turnover), from HealthyHostCount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets_turned_over: Option<f64>,
    /// Leaving targets' open flows are reset when their deregistration
    /// delay (seconds) ends: `Some(delay)` when the group says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_flows_after_seconds: Option<i32>,
    pub targets_healthy: Option<u32>,
    pub targets_not_healthy: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unhealthy_targets: Vec<UnhealthyTarget>,
    /// The alarm's metric for this group over the window read, at the
    /// alarm's statistic (and, for a culprit, a second statistic beside it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<crate::series::Series>,
}

/// A group's traffic and failures before the breach and while it lasted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UserImpact {
    pub requests_per_minute_before: f64,
    pub requests_per_minute_while_breaching: f64,
    pub failures_per_minute_before: f64,
    pub failures_per_minute_while_breaching: f64,
}

impl UserImpact {
    /// Traffic still arrives and no more of it fails than before: whatever
    /// the alarm says, users are not affected (yet).
    pub fn unaffected(&self) -> bool {
        let kept =
            self.requests_per_minute_while_breaching >= 0.8 * self.requests_per_minute_before;
        let failing = self.failures_per_minute_while_breaching
            > (2.0 * self.failures_per_minute_before).max(self.failures_per_minute_before + 1.0);
        self.requests_per_minute_before > 0.0 && kept && !failing
    }
}

impl TargetGroupSummary {
    /// `name (namespace/service)`.
    pub fn label(&self) -> String {
        match &self.kubernetes_service {
            Some(service) => format!("{} ({})", self.name, service.display()),
            None => self.name.clone(),
        }
    }
}

/// The workload as the diagnosis reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSummary {
    pub cluster: Option<String>,
    pub namespace: String,
    pub service: String,
    /// How the service was found: `target_group_binding`, `tags` or `name_guess`.
    pub mapped_by: String,
    pub deployment: Option<String>,
    pub replicas: Option<i32>,
    pub last_rollout: Option<DateTime<Utc>>,
    pub hpa: Option<String>,
    pub pods: Vec<PodSummary>,
    /// Where the per-pod series came from, or why there are none.
    pub series_origin: Option<String>,
}

/// One pod as the diagnosis reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodSummary {
    pub name: String,
    pub node: Option<String>,
    pub phase: String,
    pub ready: bool,
    pub restarts: u32,
    pub cpu_request: Option<f64>,
    pub cpu_limit: Option<f64>,
    /// 90th percentile of the pod's CPU while the alarm breached (cores).
    pub cpu_while_breaching: Option<f64>,
    /// The last time one of its containers ended, and why (OOMKilled, Error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_termination: Option<crate::evidence::workload::Termination>,
    /// When its newest container started running (a restart resets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_since: Option<chrono::DateTime<chrono::Utc>>,
}
