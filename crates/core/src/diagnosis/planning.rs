//! What to read for an alarm, decided from the alarm alone: the plan the
//! gathering follows. It lives beside the alarm's facts so that the evidence
//! model below it never needs them.

use super::AlarmFacts;
use crate::alarm::facts::AlarmArn;
use crate::evidence::{Plan, PlannedMetric, family};

impl AlarmFacts {
    /// Decides what to read for `alarm`: its one metric, and for a load
    /// balancer's metric the family and the load balancer (its ARN built from the
    /// alarm's, which saves a DescribeLoadBalancers round trip).
    pub fn plan(&self) -> Plan {
        let alarm = self;
        let mut notes = Vec::new();
        let metric = alarm.watched.clone().map(|metric| PlannedMetric {
            metric,
            statistic: alarm.evaluated_statistic(),
            period_seconds: alarm.period(),
            per_request_scale: alarm.per_request_scale,
        });
        if metric.is_none() {
            notes.push(match alarm.kind {
                crate::alarm::AlarmKind::Composite => "composite alarm: its children carry the metrics; diagnose the child alarm that fired".to_owned(),
                _ => "the alarm combines several metrics: no single metric to break down".to_owned(),
            });
        }
        let family = metric
            .as_ref()
            .and_then(|m| family::for_namespace(&m.metric.namespace));
        let mut load_balancer_dimension = None;
        if let Some(m) = &metric {
            match (family, m.metric.dimension("LoadBalancer")) {
                // An alarm on one group names it; the others are still read to compare.
                (Some(_), Some(lb)) => load_balancer_dimension = Some(lb.to_owned()),
                (Some(_), None) => notes.push(
                    "the metric has no LoadBalancer dimension: no target-group breakdown".to_owned(),
                ),
                (None, _) => notes.push(format!(
                    "no specialised enrichment exists yet for {} alarms; only the alarm's history and its own metric were examined",
                    m.metric.namespace
                )),
            }
        }
        let load_balancer_arn = load_balancer_dimension
            .as_ref()
            .zip(alarm.arn.as_ref())
            .map(|(dimension, arn): (&String, &AlarmArn)| {
                arn.sibling("elasticloadbalancing", &format!("loadbalancer/{dimension}"))
            });
        Plan {
            metric,
            family: family.filter(|_| load_balancer_dimension.is_some()),
            load_balancer_dimension,
            load_balancer_arn,
            notes,
        }
    }
}
