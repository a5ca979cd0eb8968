//! The evidence model: what a diagnosis rests on, as plain data (statistics,
//! target groups and what was read about them, the workload), the plan of
//! what to read for an alarm and the queries it takes, and the ports the
//! adapters implement. Pure: the reading itself is [`crate::gathering`]'s.

#[cfg(any(test, feature = "test-util"))]
pub mod fake;
pub mod family;
pub mod model;
pub mod service_map;
pub mod workload;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::alarm::facts::{AlarmArn, MetricRef, Statistic};
use crate::diagnosis::AlarmFacts;
use crate::error::Result;
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
    pub const POD_SERIES: &str =
        "pod series: per-pod CPU and memory (Prometheus, else Container Insights)";
}

/// Port: CloudWatch alarms.
pub trait AlarmSource: Send + Sync {
    /// State changes of `alarm_name` with timestamps in `[start, end]`, in any order.
    fn state_history(
        &self,
        alarm_name: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> impl Future<Output = Result<AlarmHistory>> + Send;

    /// The alarm as it is defined now; `None` when it no longer exists.
    fn definition(
        &self,
        alarm_name: &str,
    ) -> impl Future<Output = Result<Option<AlarmDefinition>>> + Send;
}

/// Port: CloudWatch metric data.
pub trait MetricSource: Send + Sync {
    /// Answers every query over `[start, end)`; series come back in query order.
    fn metric_data(
        &self,
        queries: &[MetricQuery],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<MetricSeries>>> + Send;
}

/// Port: Elastic Load Balancing.
pub trait LoadBalancerSource: Send + Sync {
    /// The load balancer whose ARN ends with `dimension` (`app/<name>/<id>`); `None` if gone.
    fn load_balancer(
        &self,
        dimension: &str,
    ) -> impl Future<Output = Result<Option<LoadBalancer>>> + Send;

    /// The target groups of a load balancer; `None` when the load balancer does not exist.
    fn target_groups(
        &self,
        load_balancer_arn: &str,
    ) -> impl Future<Output = Result<Option<Vec<TargetGroup>>>> + Send;

    /// The routing algorithm, slow start and deregistration delay.
    fn attributes(
        &self,
        target_group_arn: &str,
    ) -> impl Future<Output = Result<model::TargetGroupAttributes>> + Send;

    fn target_health(
        &self,
        target_group_arn: &str,
    ) -> impl Future<Output = Result<Vec<TargetHealth>>> + Send;

    /// Tags of each resource.
    fn tags(&self, arns: &[String]) -> impl Future<Output = Result<BTreeMap<String, Tags>>> + Send;
}

/// Port: the cluster behind a target group, and its pods' time series.
pub trait KubernetesSource: Send + Sync {
    /// Gets ready to answer (connects) while other sources are read. It runs
    /// under the ledger like any call; when it fails, the workload is not read.
    fn prepare(&self) -> impl Future<Output = Result<()>> + Send;

    /// Which Service each target group feeds (TargetGroupBindings), when the
    /// cluster is known before the culprit is; `None` when it is not (the
    /// cluster comes from the culprit's tags), so the workload walk lists them.
    fn target_group_bindings(
        &self,
    ) -> impl Future<Output = Result<Option<workload::TargetGroupBindings>>> + Send;

    /// Target group -> Service -> pods -> ReplicaSet -> Deployment, HPA,
    /// PodMetrics. The pods' names go to `pods_listed` as soon as they are known.
    fn workload(
        &self,
        target: &workload::WorkloadTarget,
        pods_listed: workload::PodsListedSender,
    ) -> impl Future<Output = Result<workload::Workload>> + Send;

    /// CPU, throttling and memory per pod over `[start, end]`, for the pods
    /// (and in the cluster) the walk listed.
    fn pod_series(
        &self,
        pods: &workload::PodsListed,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step_seconds: u32,
    ) -> impl Future<Output = Result<workload::PodSeries>> + Send;
}

/// Everything the diagnose pipeline reads from.
pub trait EvidenceSources:
    AlarmSource + MetricSource + LoadBalancerSource + KubernetesSource + AccountScoped
{
}

impl<T: AlarmSource + MetricSource + LoadBalancerSource + KubernetesSource + AccountScoped>
    EvidenceSources for T
{
}

/// Port: the sources that read an alarm where it lives. One bot serves many
/// accounts and regions; the alarm's ARN says which.
pub trait AccountScoped: Sized {
    /// Sources for `account` in `region`: `Ok(None)` when these already read
    /// there; `Err` says why that account cannot be read (the role, what to deploy).
    fn scoped_to(
        &self,
        partition: &str,
        account: &str,
        region: &str,
    ) -> impl Future<Output = std::result::Result<Option<Self>, String>> + Send;
}

/// How evidence is collected for this run.
#[derive(Debug)]
pub enum Collection<S> {
    /// No AWS at all: every source is reported as not collected.
    Offline,
    /// Read from the sources given.
    Live(S),
    /// The alarm's account cannot be read: every source is a gap with this reason.
    Unreachable(String),
}

/// Budgets for one gathering.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Time left for all gathering (the invocation's deadline minus a publish margin).
    pub overall: Duration,
    /// The most any one source may take.
    pub per_source: Duration,
    /// Kept back after gathering for publishing; publishing is cut off when it runs out.
    pub publish: Duration,
    /// How far back to read history.
    pub lookback: chrono::Duration,
    /// How far back to read metrics (at least 3 h before the transition).
    pub metric_window: chrono::Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            overall: Duration::from_secs(20),
            per_source: Duration::from_secs(10),
            publish: Duration::from_secs(3),
            lookback: chrono::Duration::hours(24),
            metric_window: chrono::Duration::hours(3),
        }
    }
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
    pub alb: Option<AlbEvidence>,
    /// The workload behind the culprit target group.
    pub workload: Option<workload::Workload>,
    pub pod_series: Option<workload::PodSeries>,
    pub gaps: Vec<EvidenceGap>,
    pub timings: Timings,
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

/// Decides what to read for `alarm`: its one metric, and for a load
/// balancer's metric the family and the load balancer (its ARN built from the
/// alarm's, which saves a DescribeLoadBalancers round trip).
pub fn plan(alarm: &AlarmFacts) -> Plan {
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
