//! The evidence model: what a diagnosis rests on, as plain data (statistics,
//! target groups and what was read about them, the workload), the plan of
//! what to read for an alarm and the queries it takes. Pure: the ports the
//! adapters implement, and the reading itself, live in the crate above.

pub mod changes;
pub mod family;
pub mod logs;
pub mod model;
pub mod service_map;
pub mod workload;

use crate::alarm::facts::{MetricRef, Statistic};
use crate::history::AlarmHistory;
use model::{
    AlarmDefinition, EvidenceGap, LoadBalancer, MetricQuery, MetricSeries, Tags, TargetGroup,
    TargetHealth, Timings,
};

/// Names of the evidence sources, as they appear in gaps and timings.
pub mod source {
    pub const ALARM_HISTORY: &str = "cloudwatch:DescribeAlarmHistory";
    pub const ALARM_DEFINITION: &str = "cloudwatch:DescribeAlarms";
    pub const METRIC_STATISTICS: &str =
        "cloudwatch:GetMetricData (the alarm's metric: Average, p50, p99, Maximum, requests)";
    pub const LOAD_BALANCER: &str = "elbv2:DescribeLoadBalancers";
    pub const TARGET_GROUPS: &str = "elbv2:DescribeTargetGroups";
    pub const TARGET_GROUP_METRICS: &str = "cloudwatch:GetMetricData (per target group)";
    pub const TARGET_GROUP_ATTRIBUTES: &str = "elbv2:DescribeTargetGroupAttributes";
    pub const TARGET_HEALTH: &str = "elbv2:DescribeTargetHealth";
    pub const TAGS: &str = "elbv2:DescribeTags";
    pub const CLUSTER: &str = "eks:DescribeCluster and the cluster connection";
    pub const TARGET_GROUP_BINDINGS: &str = "kubernetes: TargetGroupBindings";
    pub const KUBERNETES: &str = "kubernetes: service, pods, deployment, HPA";
    pub const CLOUDTRAIL: &str = "cloudtrail:LookupEvents (changes to the load balancer, target groups, security groups, node groups)";
    pub const METRIC_HISTORY: &str =
        "cloudwatch:GetMetricData (the alarm's metric over the days CloudWatch keeps)";
    pub const POD_LOGS: &str = "kubernetes: pods/log (the culprit's pods)";
    pub const LOGS_INSIGHTS: &str =
        "logs:StartQuery (CloudWatch Logs Insights over the cluster's container logs)";
    pub const POD_SERIES: &str =
        "pod series: per-pod CPU and memory (Prometheus, else Container Insights)";
}

/// The alarm's own metric at several statistics, period by period.
#[derive(Debug, Clone, PartialEq)]
pub struct Statistics {
    pub period_seconds: u32,
    /// The statistic the alarm evaluates (`Average`, `p99`, ...).
    pub alarm_statistic: Statistic,
    pub alarm_stat: MetricSeries,
    pub average: MetricSeries,
    pub p50: MetricSeries,
    pub p99: MetricSeries,
    pub maximum: MetricSeries,
    /// Traffic per period: the family's (`RequestCount`, `NewFlowCount`), else the metric's `SampleCount`.
    pub requests: MetricSeries,
    pub requests_metric: String,
    /// A rate alarm: `alarm_stat` is already the metric per request times this.
    pub per_request_scale: Option<f64>,
}

/// One target group and everything read about it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupEvidence {
    pub group: TargetGroup,
    pub algorithm: Option<String>,
    /// `slow_start.duration_seconds` (0: off), when read.
    pub slow_start_seconds: Option<i32>,
    /// `deregistration_delay.timeout_seconds` and, for an NLB, whether its
    /// end resets the leaving target's flows, when read.
    pub deregistration: Option<(Option<i32>, Option<bool>)>,
    pub health: Option<Vec<TargetHealth>>,
    pub tags: Option<Tags>,
    /// The alarm's metric and statistic for this group.
    pub metric: MetricSeries,
    /// The group's response time (`TargetResponseTime`) at p50, p99 and
    /// Maximum: the alarm's metric itself for a latency alarm, and what tells
    /// a slow group from a failing one for the others.
    pub p50: MetricSeries,
    pub p99: MetricSeries,
    pub maximum: MetricSeries,
    /// Requests (ALB) or new flows (NLB): the group's traffic.
    pub requests: MetricSeries,
    /// Failures the targets answered or caused: 5xx (ALB), TCP resets (NLB).
    pub target_errors: MetricSeries,
    pub unhealthy_hosts: MetricSeries,
    /// HealthyHostCount (minimum per period).
    pub healthy_hosts: MetricSeries,
}

/// The load balancer side.
#[derive(Debug, Clone, PartialEq)]
pub struct AlbEvidence {
    /// `None`: the load balancer named by the alarm no longer exists.
    pub load_balancer: Option<LoadBalancer>,
    pub groups: Vec<GroupEvidence>,
    /// The 5xx of the whole load balancer, its own and its targets'.
    pub errors: LoadBalancerErrors,
    /// The Services the cluster's TargetGroupBindings name, by target group
    /// ARN: what AWS's tags or a group's name only suggest, confirmed.
    pub services: std::collections::BTreeMap<String, service_map::ServiceRef>,
}

/// Failures per period for the whole load balancer: 5xx for an ALB, TCP
/// resets for an NLB (which has no 502/503/504). The ones the load balancer
/// generates itself (no target answered in time, none healthy, a connection
/// reset) exist per load balancer only, never per target group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadBalancerErrors {
    /// `HTTPCode_Target_5XX_Count`: answered by the targets.
    pub target_5xx: MetricSeries,
    /// `HTTPCode_ELB_5XX_Count`: generated by the load balancer.
    pub elb_5xx: MetricSeries,
    /// 502 Bad Gateway: the target closed the connection or answered garbage.
    pub elb_502: MetricSeries,
    /// 503 Service Unavailable: no healthy (or no registered) target.
    pub elb_503: MetricSeries,
    /// 504 Gateway Timeout: the target did not answer within the idle timeout.
    pub elb_504: MetricSeries,
}

/// What the evidence gathering brought back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatheredEvidence {
    /// The alarm's state history; `None` when it could not be read.
    pub history: Option<AlarmHistory>,
    /// `None`: not read; `Some(None)`: the alarm no longer exists.
    pub definition: Option<Option<AlarmDefinition>>,
    pub statistics: Option<Statistics>,
    /// The alarm's own metric at its statistic over the days CloudWatch
    /// keeps: was it always like this?
    pub standing: Option<MetricHistory>,
    pub alb: Option<AlbEvidence>,
    /// The workload behind the culprit target group.
    pub workload: Option<workload::Workload>,
    pub pod_series: Option<workload::PodSeries>,
    /// What the audit trail (CloudTrail) says changed on the request path.
    pub trail: Option<changes::TrailEvidence>,
    /// What the culprit's pods printed (redacted as read).
    pub logs: Option<logs::LogEvidence>,
    pub gaps: Vec<EvidenceGap>,
    pub timings: Timings,
}

/// The alarm's metric over a long span, to tell a standing level from a change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricHistory {
    pub series: MetricSeries,
    pub period_seconds: u32,
}

/// How far back the standing level is read: CloudWatch keeps 1-minute
/// datapoints for 15 days, so the alarm's own period still answers.
pub const STANDING_SPAN_DAYS: i64 = 14;

/// The query for the standing level: the alarm's statistic at its period
/// (and the requests, for a rate alarm), over [`STANDING_SPAN_DAYS`].
pub fn standing_queries(metric: &PlannedMetric) -> Vec<MetricQuery> {
    statistics_queries(metric)
        .into_iter()
        .filter(|q| {
            q.id == "alarm_stat" || (metric.per_request_scale.is_some() && q.id == "requests")
        })
        .collect()
}

/// The standing level from what [`standing_queries`] brought back.
pub fn standing_from(metric: &PlannedMetric, series: Vec<MetricSeries>) -> MetricHistory {
    let mut answers = family::Answers::new(series);
    let value = answers.take("alarm_stat");
    let series = match metric.per_request_scale {
        Some(scale) => per_request(&value, &answers.take("requests"), scale),
        None => value,
    };
    MetricHistory {
        series,
        period_seconds: metric.period_seconds,
    }
}

/// Which sources the playbook reads for an alarm, and why not the others.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The single metric the alarm watches (none for composite and multi-metric math).
    pub metric: Option<PlannedMetric>,
    /// The kind of load balancer the metric belongs to, when the breakdown knows it.
    pub family: Option<&'static family::LoadBalancerFamily>,
    /// The `LoadBalancer` dimension, for ALB alarms without a `TargetGroup` dimension.
    pub load_balancer_dimension: Option<String>,
    /// The load balancer's ARN, built from the dimension and the alarm's
    /// partition, region and account: saves a DescribeLoadBalancers round trip.
    pub load_balancer_arn: Option<String>,
    /// Why a specialised part of the playbook does not apply.
    pub notes: Vec<String>,
}

/// The alarm's metric, as queries need it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedMetric {
    pub metric: MetricRef,
    pub statistic: Statistic,
    pub period_seconds: u32,
    /// A rate alarm (`100 * errors / requests`): the alarm's value is this
    /// metric per request (RequestCount), times this constant.
    pub per_request_scale: Option<f64>,
}

/// The statistics of the alarm's own metric, in this order:
/// alarm statistic, Average, p50, p99, Maximum, requests.
pub fn statistics_queries(metric: &PlannedMetric) -> Vec<MetricQuery> {
    let query = |id: &str, metric_name: &str, stat: &str| MetricQuery {
        id: id.to_owned(),
        namespace: metric.metric.namespace.clone(),
        metric_name: metric_name.to_owned(),
        dimensions: metric.metric.dimensions.clone(),
        stat: stat.to_owned(),
        period_seconds: metric.period_seconds,
    };
    let (requests_metric, requests_stat) = requests_metric(metric);
    let name = &metric.metric.name;
    vec![
        query("alarm_stat", name, &metric.statistic.to_string()),
        query("average", name, "Average"),
        query("p50", name, "p50"),
        query("p99", name, "p99"),
        query("maximum", name, "Maximum"),
        query("requests", &requests_metric, requests_stat),
    ]
}

/// The traffic behind the metric: the family's, else the metric's own sample count.
fn requests_metric(metric: &PlannedMetric) -> (String, &'static str) {
    match family::for_namespace(&metric.metric.namespace) {
        Some(family) => (family.traffic.to_owned(), "Sum"),
        None => (metric.metric.name.clone(), "SampleCount"),
    }
}

/// The statistics from the answers to [`statistics_queries`], by query id.
pub fn statistics_from(metric: &PlannedMetric, series: Vec<MetricSeries>) -> Statistics {
    let mut answers = family::Answers::new(series);
    let mut stats = Statistics {
        period_seconds: metric.period_seconds,
        alarm_statistic: metric.statistic.clone(),
        alarm_stat: answers.take("alarm_stat"),
        average: answers.take("average"),
        p50: answers.take("p50"),
        p99: answers.take("p99"),
        maximum: answers.take("maximum"),
        requests: answers.take("requests"),
        requests_metric: requests_metric(metric).0,
        per_request_scale: metric.per_request_scale,
    };
    // A rate alarm compares the metric per request with its threshold.
    if let Some(scale) = metric.per_request_scale {
        stats.alarm_stat = per_request(&stats.alarm_stat, &stats.requests, scale);
    }
    stats
}

/// `series` per request of `requests`, times `scale`, where requests were made.
pub fn per_request(series: &MetricSeries, requests: &MetricSeries, scale: f64) -> MetricSeries {
    MetricSeries {
        id: series.id.clone(),
        points: series
            .points
            .iter()
            .filter_map(|(t, v)| {
                let n = requests.at(*t).filter(|n| *n > 0.0)?;
                Some((*t, v / n * scale))
            })
            .collect(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
