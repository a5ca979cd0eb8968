//! The plain data the adapters turn AWS into. No SDK types here: the core
//! (findings, diagnosis) only ever sees these.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::alarm::{AlarmState, Dimension};

/// An alarm as DescribeAlarms reports it now (it may have changed since the notification).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlarmDefinition {
    pub name: String,
    pub composite: bool,
    pub state: Option<AlarmState>,
    pub namespace: Option<String>,
    pub metric_name: Option<String>,
    pub dimensions: Vec<Dimension>,
    /// `Average`, `p99`, ...
    pub statistic: Option<String>,
    pub period_seconds: Option<u32>,
    pub evaluation_periods: Option<u32>,
    pub datapoints_to_alarm: Option<u32>,
    pub threshold: Option<f64>,
    pub comparison: Option<String>,
    pub actions_enabled: Option<bool>,
}

/// One GetMetricData query: a metric, a statistic and a period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricQuery {
    /// Unique within a request; letters, digits and underscores, starting lowercase.
    pub id: String,
    pub namespace: String,
    pub metric_name: String,
    pub dimensions: Vec<Dimension>,
    pub stat: String,
    pub period_seconds: u32,
}

/// The answer to one query, oldest point first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricSeries {
    pub id: String,
    pub points: Vec<(DateTime<Utc>, f64)>,
}

impl MetricSeries {
    /// The value at `t`, if CloudWatch returned one.
    pub fn at(&self, t: DateTime<Utc>) -> Option<f64> {
        self.points
            .binary_search_by_key(&t, |(at, _)| *at)
            .ok()
            .map(|i| self.points[i].1)
    }

    pub fn max(&self) -> Option<f64> {
        self.points.iter().map(|(_, v)| *v).reduce(f64::max)
    }
}

/// The load balancer's name from its `LoadBalancer` dimension (`app/<name>/<id>`).
pub fn load_balancer_name(dimension_value: &str) -> Option<&str> {
    let mut parts = dimension_value.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("app" | "net" | "gwy"), Some(name), Some(_)) if !name.is_empty() => Some(name),
        _ => None,
    }
}

/// A load balancer, found from the `LoadBalancer` dimension of an alarm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadBalancer {
    pub arn: String,
    pub name: String,
    /// `app/<name>/<id>`: the ARN suffix CloudWatch uses as the dimension value.
    pub dimension: String,
    pub scheme: Option<String>,
    /// Its security groups (an ALB's; an NLB may have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_groups: Vec<String>,
}

/// How a target group reaches its targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetType {
    /// EC2 instances on a port (a NodePort for Kubernetes): ALB -> node -> kube-proxy -> any pod.
    Instance,
    /// Pod IPs directly.
    Ip,
    Lambda,
    Alb,
    Other(String),
}

impl TargetType {
    pub fn parse(text: &str) -> Self {
        match text {
            "instance" => TargetType::Instance,
            "ip" => TargetType::Ip,
            "lambda" => TargetType::Lambda,
            "alb" => TargetType::Alb,
            other => TargetType::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            TargetType::Instance => "instance",
            TargetType::Ip => "ip",
            TargetType::Lambda => "lambda",
            TargetType::Alb => "alb",
            TargetType::Other(other) => other,
        }
    }
}

/// A target group of the load balancer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetGroup {
    pub arn: String,
    pub name: String,
    /// `targetgroup/<name>/<id>`: the `TargetGroup` dimension value.
    pub dimension: String,
    pub target_type: TargetType,
    pub port: Option<i32>,
    pub protocol: Option<String>,
    /// How the load balancer probes the targets; `None` when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheck>,
}

/// A target group's health check: a target answering slower than `timeout`
/// `unhealthy_threshold` times in a row is taken out of rotation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HealthCheck {
    pub path: Option<String>,
    pub interval_seconds: Option<i32>,
    pub timeout_seconds: Option<i32>,
    pub healthy_threshold: Option<i32>,
    pub unhealthy_threshold: Option<i32>,
    /// HTTP codes that count as healthy (`200-399`).
    pub matcher: Option<String>,
}

impl HealthCheck {
    /// How long a target that stops answering in time stays in rotation:
    /// `unhealthy_threshold` failed checks, `interval` apart.
    pub fn seconds_to_fail(&self) -> Option<i32> {
        Some(self.interval_seconds? * self.unhealthy_threshold?)
    }
}

/// One target's health as the load balancer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetHealth {
    pub id: String,
    pub port: Option<i32>,
    /// `healthy`, `unhealthy`, `initial`, `draining`, `unused`, `unavailable`.
    pub state: String,
    pub reason: Option<String>,
    pub description: Option<String>,
}

/// What ELBv2 says about one target group beyond its description.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetGroupDetails {
    /// `load_balancing.algorithm.type`: `round_robin`, `least_outstanding_requests`, `weighted_random`.
    pub algorithm: Option<String>,
    /// `None` when target health could not be read.
    pub health: Option<Vec<TargetHealth>>,
}

/// Resource tags by ARN.
pub type Tags = BTreeMap<String, String>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_balancer_names_come_from_the_dimension() {
        assert_eq!(
            load_balancer_name("app/k8s-shop-a1b2c3/50dc6c495c0c9188"),
            Some("k8s-shop-a1b2c3")
        );
        assert_eq!(load_balancer_name("i-123"), None);
    }
}

/// A source of evidence that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceGap {
    pub source: String,
    pub reason: String,
}

/// How long gathering took, per source.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Timings {
    pub total_ms: u64,
    pub sources: Vec<SourceTiming>,
}

/// One source's wall time and outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceTiming {
    pub source: String,
    pub ms: u64,
    pub outcome: String,
}

/// The unit a CloudWatch metric's values are in, for people: `s` for the
/// load balancer's response times, `requests` or `count` for its counters.
pub fn unit_of_metric(metric_name: Option<&str>) -> &'static str {
    match metric_name {
        Some("TargetResponseTime") => "s",
        Some("RequestCount" | "RequestCountPerTarget") => "requests",
        Some(name) if name.ends_with("Count") => "count",
        _ => "",
    }
}

/// A value followed by its unit when it has one (`0.08 s`).
pub fn with_unit(value: f64, unit: &str) -> String {
    let rounded = (value * 1000.0).round() / 1000.0;
    if unit.is_empty() {
        format!("{rounded}")
    } else {
        format!("{rounded} {unit}")
    }
}

/// What a target group's attributes say about how it routes and rotates targets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetGroupAttributes {
    /// `load_balancing.algorithm.type`.
    pub algorithm: Option<String>,
    /// `slow_start.duration_seconds`: how long a new target ramps up its
    /// share of requests (0: off).
    pub slow_start_seconds: Option<i32>,
    /// `deregistration_delay.timeout_seconds`: how long a leaving target drains.
    pub deregistration_delay_seconds: Option<i32>,
    /// `deregistration_delay.connection_termination.enabled` (NLB): a
    /// leaving target's open flows are reset when its delay ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_termination: Option<bool>,
}

impl TargetGroupAttributes {
    /// From DescribeTargetGroupAttributes' key/value pairs.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut out = TargetGroupAttributes::default();
        for (key, value) in pairs {
            match key {
                "load_balancing.algorithm.type" => out.algorithm = Some(value.to_owned()),
                "slow_start.duration_seconds" => out.slow_start_seconds = value.parse().ok(),
                "deregistration_delay.timeout_seconds" => {
                    out.deregistration_delay_seconds = value.parse().ok()
                }
                "deregistration_delay.connection_termination.enabled" => {
                    out.connection_termination = value.parse().ok()
                }
                _ => {}
            }
        }
        out
    }
}
