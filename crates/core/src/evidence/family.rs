//! Alarm families: the kinds of load balancer whose alarms get the target
//! group breakdown. A family says which metrics it publishes for what (the
//! traffic that weighs a group, the response time when it measures one, the
//! failures its targets cause and the ones it causes itself), which it
//! publishes per load balancer only, and builds its queries and decodes the
//! answers by query id. The rest of the playbook (attribution, the workload
//! walk, classification, rendering) is shared; adding a family is a row here.

use std::collections::BTreeMap;

use crate::alarm::Dimension;

use super::model::{MetricQuery, MetricSeries, TargetGroup};
use super::{LoadBalancerErrors, PlannedMetric};

/// One kind of load balancer, as CloudWatch and Elastic Load Balancing show it.
#[derive(Debug, PartialEq, Eq)]
pub struct LoadBalancerFamily {
    /// The CloudWatch namespace its metrics live in.
    pub namespace: &'static str,
    /// What people call it in a hurry (`ALB`).
    pub short: &'static str,
    /// The traffic a group carries (its weight in a mean, its share of a sum).
    pub traffic: &'static str,
    /// The response time of its targets, when it measures one.
    pub latency: Option<&'static str>,
    /// Failures its targets answer or cause (5xx, connection resets).
    pub target_errors: &'static str,
    /// Failures it produces itself, published per load balancer only, with
    /// the slot of [`LoadBalancerErrors`] each fills.
    pub own_errors: &'static [(ErrorSlot, &'static str)],
    /// Other metrics published per load balancer only, never per group.
    pub per_load_balancer_only: &'static [&'static str],
    /// Whether it speaks HTTP: it answers 5xx of its own (502/503/504) and
    /// its health checks wait for a response, so slow requests fail them.
    pub http: bool,
    /// Whether its target groups choose a routing algorithm (least
    /// outstanding requests is then a step worth proposing).
    pub routing_algorithms: bool,
}

/// The slots of [`LoadBalancerErrors`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorSlot {
    /// Failures the targets answered or caused, summed over the load balancer.
    Target,
    /// Everything the load balancer produced itself.
    OwnTotal,
    Own502,
    Own503,
    Own504,
}

impl ErrorSlot {
    fn id(self) -> &'static str {
        match self {
            ErrorSlot::Target => "lb_target_errors",
            ErrorSlot::OwnTotal => "lb_own_errors",
            ErrorSlot::Own502 => "lb_own_502",
            ErrorSlot::Own503 => "lb_own_503",
            ErrorSlot::Own504 => "lb_own_504",
        }
    }
}

/// The Application Load Balancer: HTTP, requests, response times, 5xx.
pub static APPLICATION: LoadBalancerFamily = LoadBalancerFamily {
    namespace: "AWS/ApplicationELB",
    short: "ALB",
    traffic: "RequestCount",
    latency: Some("TargetResponseTime"),
    target_errors: "HTTPCode_Target_5XX_Count",
    own_errors: &[
        (ErrorSlot::Target, "HTTPCode_Target_5XX_Count"),
        (ErrorSlot::OwnTotal, "HTTPCode_ELB_5XX_Count"),
        (ErrorSlot::Own502, "HTTPCode_ELB_502_Count"),
        (ErrorSlot::Own503, "HTTPCode_ELB_503_Count"),
        (ErrorSlot::Own504, "HTTPCode_ELB_504_Count"),
    ],
    per_load_balancer_only: &[
        "RejectedConnectionCount",
        "ActiveConnectionCount",
        "NewConnectionCount",
        "HTTPCode_ELB_4XX_Count",
        "HTTPCode_ELB_3XX_Count",
    ],
    http: true,
    routing_algorithms: true,
};

/// The Network Load Balancer: TCP flows, no response time, resets for errors.
pub static NETWORK: LoadBalancerFamily = LoadBalancerFamily {
    namespace: "AWS/NetworkELB",
    short: "NLB",
    traffic: "NewFlowCount",
    latency: None,
    target_errors: "TCP_Target_Reset_Count",
    own_errors: &[
        (ErrorSlot::Target, "TCP_Target_Reset_Count"),
        (ErrorSlot::OwnTotal, "TCP_ELB_Reset_Count"),
    ],
    per_load_balancer_only: &[
        "TCP_Client_Reset_Count",
        "PortAllocationErrorCount",
        "ConsumedLCUs",
    ],
    http: false,
    routing_algorithms: false,
};

/// Every family the breakdown knows.
pub static FAMILIES: [&LoadBalancerFamily; 2] = [&APPLICATION, &NETWORK];

/// The family whose metrics live in `namespace`.
pub fn for_namespace(namespace: &str) -> Option<&'static LoadBalancerFamily> {
    FAMILIES.iter().copied().find(|f| f.namespace == namespace)
}

/// What each group query fills in [`GroupSeries`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupSlot {
    Metric,
    P50,
    P99,
    Maximum,
    Traffic,
    TargetErrors,
    Unhealthy,
    Healthy,
}

impl GroupSlot {
    fn suffix(self) -> &'static str {
        match self {
            GroupSlot::Metric => "metric",
            GroupSlot::P50 => "p50",
            GroupSlot::P99 => "p99",
            GroupSlot::Maximum => "maximum",
            GroupSlot::Traffic => "traffic",
            GroupSlot::TargetErrors => "errors",
            GroupSlot::Unhealthy => "unhealthy",
            GroupSlot::Healthy => "healthy",
        }
    }
}

/// A target group's series, as the family's queries brought them back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupSeries {
    /// The alarm's metric at the alarm's statistic.
    pub metric: MetricSeries,
    /// Response time at p50, p99 and Maximum (empty for families without one).
    pub p50: MetricSeries,
    pub p99: MetricSeries,
    pub maximum: MetricSeries,
    /// Requests or new flows.
    pub traffic: MetricSeries,
    pub target_errors: MetricSeries,
    pub unhealthy_hosts: MetricSeries,
    pub healthy_hosts: MetricSeries,
}

/// Answers to one GetMetricData call, by query id.
#[derive(Debug, Default)]
pub struct Answers(BTreeMap<String, MetricSeries>);

impl Answers {
    pub fn new(series: impl IntoIterator<Item = MetricSeries>) -> Self {
        Answers(series.into_iter().map(|s| (s.id.clone(), s)).collect())
    }

    /// The answer to query `id`; an unanswered query is an empty series.
    pub fn take(&mut self, id: &str) -> MetricSeries {
        self.0.remove(id).unwrap_or_default()
    }
}

impl LoadBalancerFamily {
    /// Whether `metric` exists per load balancer only.
    pub fn per_load_balancer(&self, metric: &str) -> bool {
        self.per_load_balancer_only.contains(&metric)
            || self
                .own_errors
                .iter()
                .any(|(slot, name)| *slot != ErrorSlot::Target && *name == metric)
    }

    fn group_slots(&self) -> Vec<(GroupSlot, &'static str, &'static str)> {
        let mut slots = vec![(GroupSlot::Metric, "", "")];
        if let Some(latency) = self.latency {
            slots.extend([
                (GroupSlot::P50, latency, "p50"),
                (GroupSlot::P99, latency, "p99"),
                (GroupSlot::Maximum, latency, "Maximum"),
            ]);
        }
        slots.extend([
            (GroupSlot::Traffic, self.traffic, "Sum"),
            (GroupSlot::TargetErrors, self.target_errors, "Sum"),
            // A group fails when any target does (the maximum), and has none
            // to serve when the healthy ones are gone even for a moment (the minimum).
            (GroupSlot::Unhealthy, "UnHealthyHostCount", "Maximum"),
            (GroupSlot::Healthy, "HealthyHostCount", "Minimum"),
        ]);
        slots
    }

    /// Each group's queries (id `g<i>_<slot>`): the alarm's metric at its
    /// statistic, the response time when the family has one, the traffic, the
    /// target failures and the healthy and unhealthy host counts.
    pub fn group_queries(
        &self,
        metric: &PlannedMetric,
        lb_dimension: &str,
        groups: &[TargetGroup],
    ) -> Vec<MetricQuery> {
        let slots = self.group_slots();
        let mut out = Vec::with_capacity(groups.len() * slots.len());
        for (i, group) in groups.iter().enumerate() {
            let dimensions = vec![
                Dimension {
                    name: "LoadBalancer".to_owned(),
                    value: lb_dimension.to_owned(),
                },
                Dimension {
                    name: "TargetGroup".to_owned(),
                    value: group.dimension.clone(),
                },
            ];
            for (slot, metric_name, stat) in &slots {
                let (metric_name, stat) = match slot {
                    GroupSlot::Metric => (metric.metric.name.clone(), metric.statistic.to_string()),
                    _ => ((*metric_name).to_owned(), (*stat).to_owned()),
                };
                out.push(MetricQuery {
                    id: format!("g{i}_{}", slot.suffix()),
                    namespace: self.namespace.to_owned(),
                    metric_name,
                    dimensions: dimensions.clone(),
                    stat,
                    period_seconds: metric.period_seconds,
                });
            }
        }
        out
    }

    /// Group `i`'s series from the answers to [`Self::group_queries`].
    pub fn group_series(&self, answers: &mut Answers, i: usize) -> GroupSeries {
        let mut take = |slot: GroupSlot| answers.take(&format!("g{i}_{}", slot.suffix()));
        GroupSeries {
            metric: take(GroupSlot::Metric),
            p50: take(GroupSlot::P50),
            p99: take(GroupSlot::P99),
            maximum: take(GroupSlot::Maximum),
            traffic: take(GroupSlot::Traffic),
            target_errors: take(GroupSlot::TargetErrors),
            unhealthy_hosts: take(GroupSlot::Unhealthy),
            healthy_hosts: take(GroupSlot::Healthy),
        }
    }

    /// The load balancer's failures, its targets' and its own, for the whole load balancer.
    pub fn error_queries(&self, lb_dimension: &str, period_seconds: u32) -> Vec<MetricQuery> {
        self.own_errors
            .iter()
            .map(|(slot, metric_name)| MetricQuery {
                id: slot.id().to_owned(),
                namespace: self.namespace.to_owned(),
                metric_name: (*metric_name).to_owned(),
                dimensions: vec![Dimension {
                    name: "LoadBalancer".to_owned(),
                    value: lb_dimension.to_owned(),
                }],
                stat: "Sum".to_owned(),
                period_seconds,
            })
            .collect()
    }

    /// The answers to [`Self::error_queries`]; what the family does not publish stays empty.
    pub fn errors(&self, answers: &mut Answers) -> LoadBalancerErrors {
        let mut take = |slot: ErrorSlot| answers.take(slot.id());
        LoadBalancerErrors {
            target_5xx: take(ErrorSlot::Target),
            elb_5xx: take(ErrorSlot::OwnTotal),
            elb_502: take(ErrorSlot::Own502),
            elb_503: take(ErrorSlot::Own503),
            elb_504: take(ErrorSlot::Own504),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alarm::facts::{MetricRef, Statistic};

    fn planned(namespace: &str, name: &str) -> PlannedMetric {
        PlannedMetric {
            metric: MetricRef {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                dimensions: vec![],
            },
            statistic: Statistic::Maximum,
            period_seconds: 60,
            per_request_scale: None,
        }
    }

    fn group(dimension: &str) -> TargetGroup {
        TargetGroup {
            arn: format!("arn:{dimension}"),
            name: dimension.to_owned(),
            dimension: dimension.to_owned(),
            target_type: crate::evidence::model::TargetType::Ip,
            port: None,
            protocol: None,
            health_check: None,
        }
    }

    #[test]
    fn each_namespace_finds_its_family_and_others_none() {
        assert_eq!(for_namespace("AWS/ApplicationELB"), Some(&APPLICATION));
        assert_eq!(for_namespace("AWS/NetworkELB"), Some(&NETWORK));
        assert_eq!(for_namespace("AWS/EC2"), None);
    }

    #[test]
    fn answers_are_decoded_by_id_whatever_order_they_come_back_in() {
        let family = &NETWORK;
        let queries = family.group_queries(
            &planned("AWS/NetworkELB", "UnHealthyHostCount"),
            "net/x/1",
            &[group("targetgroup/a/1"), group("targetgroup/b/2")],
        );
        assert_eq!(queries.len(), 2 * 5, "no response-time queries on an NLB");
        assert!(queries.iter().all(|q| q.namespace == "AWS/NetworkELB"));
        let mut answers =
            Answers::new(queries.iter().rev().enumerate().map(|(n, q)| MetricSeries {
                id: q.id.clone(),
                points: vec![(chrono::DateTime::UNIX_EPOCH, n as f64)],
            }));
        let b = family.group_series(&mut answers, 1);
        let a = family.group_series(&mut answers, 0);
        assert_eq!(a.metric.id, "g0_metric");
        assert_eq!(b.traffic.id, "g1_traffic");
        assert_eq!(b.target_errors.id, "g1_errors");
        assert!(a.p99.points.is_empty());
    }

    #[test]
    fn the_load_balancers_own_failures_are_per_load_balancer_only() {
        assert!(APPLICATION.per_load_balancer("HTTPCode_ELB_503_Count"));
        assert!(APPLICATION.per_load_balancer("RejectedConnectionCount"));
        assert!(!APPLICATION.per_load_balancer("HTTPCode_Target_5XX_Count"));
        assert!(NETWORK.per_load_balancer("TCP_ELB_Reset_Count"));
        assert!(!NETWORK.per_load_balancer("TCP_Target_Reset_Count"));
        let errors = NETWORK.error_queries("net/x/1", 60);
        assert_eq!(errors.len(), 2);
        let mut answers = Answers::new(errors.iter().map(|q| MetricSeries {
            id: q.id.clone(),
            points: vec![(chrono::DateTime::UNIX_EPOCH, 1.0)],
        }));
        let decoded = NETWORK.errors(&mut answers);
        assert_eq!(decoded.target_5xx.points.len(), 1);
        assert!(decoded.elb_503.points.is_empty());
    }
}
