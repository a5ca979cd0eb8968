//! Evidence gathering: runs the sources a notification calls for, concurrently,
//! each under its own timeout and all under the invocation's deadline. Calls
//! that depend on each other (load balancer -> target groups -> their metrics
//! and health) start as soon as their input arrives; independent ones never
//! wait for each other. Whatever does not answer in time, or answers with an
//! error, becomes an evidence gap with the reason; the diagnosis is produced
//! regardless.

#[doc(hidden)]
pub mod fake;
pub mod model;
pub mod service_map;
pub mod workload;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use tokio::time::Instant;

use crate::alarm::{AlarmNotification, Dimension};
use crate::error::{Error, Result};
use crate::history::AlarmHistory;
use model::{
    AlarmDefinition, EvidenceGap, LoadBalancer, MetricQuery, MetricSeries, SourceTiming, Tags,
    TargetGroup, TargetHealth, Timings,
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
    pub const KUBERNETES: &str = "kubernetes: service, pods, deployment, HPA";
    pub const POD_SERIES: &str = "prometheus: per-pod CPU and memory series";
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

    /// `load_balancing.algorithm.type`.
    fn algorithm(
        &self,
        target_group_arn: &str,
    ) -> impl Future<Output = Result<Option<String>>> + Send;

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

    /// Target group -> Service -> pods -> ReplicaSet -> Deployment, HPA, PodMetrics.
    fn workload(
        &self,
        target: &workload::WorkloadTarget,
    ) -> impl Future<Output = Result<workload::Workload>> + Send;

    /// CPU, throttling and memory per pod over `[start, end]`.
    fn pod_series(
        &self,
        namespace: &str,
        pods: &[String],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step_seconds: u32,
    ) -> impl Future<Output = Result<workload::PodSeries>> + Send;
}

/// Everything the diagnose pipeline reads from.
pub trait EvidenceSources:
    AlarmSource + MetricSource + LoadBalancerSource + KubernetesSource
{
}

impl<T: AlarmSource + MetricSource + LoadBalancerSource + KubernetesSource> EvidenceSources for T {}

/// How evidence is collected for this run.
#[derive(Debug)]
pub enum Collection<S> {
    /// No AWS at all: every source is reported as not collected.
    Offline,
    /// Read from the sources given.
    Live(S),
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
    pub alarm_statistic: String,
    pub alarm_stat: MetricSeries,
    pub average: MetricSeries,
    pub p50: MetricSeries,
    pub p99: MetricSeries,
    pub maximum: MetricSeries,
    /// Requests per period: `RequestCount` for load balancers, else the metric's `SampleCount`.
    pub requests: MetricSeries,
    pub requests_metric: String,
}

/// One target group and everything read about it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupEvidence {
    pub group: TargetGroup,
    pub algorithm: Option<String>,
    pub health: Option<Vec<TargetHealth>>,
    pub tags: Option<Tags>,
    /// The alarm's metric and statistic for this group.
    pub metric: MetricSeries,
    /// The alarm's metric at p50, p99 and Maximum for this group.
    pub p50: MetricSeries,
    pub p99: MetricSeries,
    pub maximum: MetricSeries,
    pub requests: MetricSeries,
    pub errors_5xx: MetricSeries,
    pub unhealthy_hosts: MetricSeries,
}

/// The load balancer side.
#[derive(Debug, Clone, PartialEq)]
pub struct AlbEvidence {
    /// `None`: the load balancer named by the alarm no longer exists.
    pub load_balancer: Option<LoadBalancer>,
    pub groups: Vec<GroupEvidence>,
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The single metric the alarm watches (none for composite and multi-metric math).
    pub metric: Option<PlannedMetric>,
    /// The `LoadBalancer` dimension, for ALB alarms without a `TargetGroup` dimension.
    pub load_balancer_dimension: Option<String>,
    /// The load balancer's ARN, built from the dimension and the alarm's
    /// partition, region and account: saves a DescribeLoadBalancers round trip.
    pub load_balancer_arn: Option<String>,
    /// Why a specialised part of the playbook does not apply.
    pub notes: Vec<String>,
}

/// The alarm's metric, as queries need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedMetric {
    pub namespace: String,
    pub metric_name: String,
    pub dimensions: Vec<Dimension>,
    pub statistic: String,
    pub period_seconds: u32,
}

/// Decides what to read for `alarm`.
pub fn plan(alarm: &AlarmNotification) -> Plan {
    let mut notes = Vec::new();
    let metric = alarm.primary_metric().and_then(|m| {
        Some(PlannedMetric {
            namespace: m.namespace?,
            metric_name: m.metric_name?,
            dimensions: m.dimensions,
            statistic: alarm.statistic().unwrap_or_else(|| "Average".to_owned()),
            period_seconds: alarm.period_seconds().unwrap_or(60),
        })
    });
    if metric.is_none() {
        notes.push(match alarm.kind() {
            crate::alarm::AlarmKind::Composite => "composite alarm: its children carry the metrics; diagnose the child alarm that fired".to_owned(),
            _ => "the alarm combines several metrics: no single metric to break down".to_owned(),
        });
    }
    let mut load_balancer_dimension = None;
    if let Some(m) = &metric {
        let lb = m.dimensions.iter().find(|d| d.name == "LoadBalancer");
        let tg = m.dimensions.iter().any(|d| d.name == "TargetGroup");
        match (m.namespace.as_str(), lb, tg) {
            ("AWS/ApplicationELB", Some(lb), false) => load_balancer_dimension = Some(lb.value.clone()),
            ("AWS/ApplicationELB", Some(_), true) => notes.push(
                "the alarm already watches one target group: no breakdown across groups".to_owned(),
            ),
            ("AWS/ApplicationELB", None, _) => notes.push(
                "the metric has no LoadBalancer dimension: no target-group breakdown".to_owned(),
            ),
            (namespace, _, _) => notes.push(format!(
                "no specialised enrichment exists yet for {namespace} alarms; only the alarm's history and its own metric were examined"
            )),
        }
    }
    let load_balancer_arn = load_balancer_dimension.as_ref().and_then(|dimension| {
        let arn = alarm.alarm_arn.as_deref()?;
        let mut parts = arn.split(':');
        let (partition, region, account) = (parts.nth(1)?, parts.nth(1)?, parts.next()?);
        Some(format!(
            "arn:{partition}:elasticloadbalancing:{region}:{account}:loadbalancer/{dimension}"
        ))
    });
    Plan {
        metric,
        load_balancer_dimension,
        load_balancer_arn,
        notes,
    }
}

/// Records timings and gaps from concurrent sources.
#[derive(Debug)]
struct Ledger {
    deadline: Instant,
    per_source: Duration,
    timings: Mutex<Vec<SourceTiming>>,
    gaps: Mutex<Vec<EvidenceGap>>,
}

impl Ledger {
    /// Runs one call under `min(per-source timeout, time to the deadline)`;
    /// a failure or a timeout is recorded as a gap and gives `None`.
    async fn run<T>(&self, name: &'static str, call: impl Future<Output = Result<T>>) -> Option<T> {
        let started = Instant::now();
        let limit = (started + self.per_source).min(self.deadline);
        let outcome = match tokio::time::timeout_at(limit, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(gap_reason(&error)),
            Err(_) => Err(format!(
                "no answer within {} ms (the invocation's deadline or the per-source timeout)",
                limit.saturating_duration_since(started).as_millis()
            )),
        };
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (value, text) = match outcome {
            Ok(value) => (Some(value), "ok".to_owned()),
            Err(reason) => {
                self.gap(name, &reason);
                (None, reason)
            }
        };
        if let Ok(mut timings) = self.timings.lock() {
            timings.push(SourceTiming {
                source: name.to_owned(),
                ms,
                outcome: text,
            });
        }
        value
    }

    fn gap(&self, source: &str, reason: &str) {
        if let Ok(mut gaps) = self.gaps.lock() {
            // One gap per source and reason, however many target groups failed the same way.
            if !gaps
                .iter()
                .any(|g| g.source == source && g.reason == reason)
            {
                gaps.push(EvidenceGap {
                    source: source.to_owned(),
                    reason: reason.to_owned(),
                });
            }
        }
    }
}

fn gap_reason(error: &Error) -> String {
    match error {
        Error::Source { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

/// The sources an offline run reports as not collected.
fn offline_sources(plan: &Plan) -> Vec<&'static str> {
    let mut out = vec![source::ALARM_HISTORY, source::ALARM_DEFINITION];
    if plan.metric.is_some() {
        out.push(source::METRIC_STATISTICS);
    }
    if plan.load_balancer_dimension.is_some() {
        out.extend([
            source::TARGET_GROUPS,
            source::TARGET_GROUP_METRICS,
            source::TARGET_HEALTH,
            source::KUBERNETES,
            source::POD_SERIES,
        ]);
    }
    out
}

/// Gathers the evidence for one notification.
pub async fn gather<S: EvidenceSources>(
    collection: &Collection<S>,
    alarm: &AlarmNotification,
    budget: Budget,
    now: DateTime<Utc>,
) -> GatheredEvidence {
    let plan = plan(alarm);
    let Collection::Live(sources) = collection else {
        return GatheredEvidence {
            gaps: offline_sources(&plan)
                .into_iter()
                .map(|source| EvidenceGap {
                    source: source.to_owned(),
                    reason: "not collected (offline)".to_owned(),
                })
                .collect(),
            ..GatheredEvidence::default()
        };
    };
    let started = Instant::now();
    let ledger = Ledger {
        deadline: started + budget.overall,
        per_source: budget.per_source,
        timings: Mutex::new(Vec::new()),
        gaps: Mutex::new(Vec::new()),
    };
    let window_start = align(
        crate::instants::earlier(now, budget.metric_window),
        plan.metric.as_ref().map_or(60, |m| m.period_seconds),
    );

    let history = ledger.run(
        source::ALARM_HISTORY,
        sources.state_history(
            &alarm.alarm_name,
            crate::instants::earlier(now, budget.lookback),
            now,
        ),
    );
    let definition = ledger.run(
        source::ALARM_DEFINITION,
        sources.definition(&alarm.alarm_name),
    );
    let statistics = async {
        let metric = plan.metric.as_ref()?;
        let queries = statistics_queries(metric);
        let series = ledger
            .run(
                source::METRIC_STATISTICS,
                sources.metric_data(&queries, window_start, now),
            )
            .await?;
        Some(statistics_from(metric, series))
    };
    let alb = async {
        let dimension = plan.load_balancer_dimension.as_deref()?;
        let metric = plan.metric.as_ref()?;
        // The ARN is known from the alarm: ask for the target groups at once.
        // Without an alarm ARN, find the load balancer first.
        let arn = match &plan.load_balancer_arn {
            Some(arn) => arn.clone(),
            None => match ledger
                .run(source::LOAD_BALANCER, sources.load_balancer(dimension))
                .await?
            {
                Some(lb) => lb.arn,
                None => {
                    return Some(AlbEvidence {
                        load_balancer: None,
                        groups: Vec::new(),
                    });
                }
            },
        };
        let Some(groups) = ledger
            .run(source::TARGET_GROUPS, sources.target_groups(&arn))
            .await?
        else {
            return Some(AlbEvidence {
                load_balancer: None,
                groups: Vec::new(),
            });
        };
        let load_balancer = LoadBalancer {
            name: model::load_balancer_name(dimension)
                .unwrap_or(dimension)
                .to_owned(),
            arn,
            dimension: dimension.to_owned(),
            scheme: None,
        };
        let queries = group_queries(metric, &load_balancer.dimension, &groups);
        let arns: Vec<String> = groups.iter().map(|g| g.arn.clone()).collect();
        let (series, tags, algorithms, health) = tokio::join!(
            ledger.run(
                source::TARGET_GROUP_METRICS,
                sources.metric_data(&queries, window_start, now)
            ),
            ledger.run(source::TAGS, sources.tags(&arns)),
            join_all(groups.iter().map(|g| {
                ledger.run(source::TARGET_GROUP_ATTRIBUTES, sources.algorithm(&g.arn))
            })),
            join_all(
                groups
                    .iter()
                    .map(|g| ledger.run(source::TARGET_HEALTH, sources.target_health(&g.arn)))
            ),
        );
        let mut series = series.unwrap_or_default().into_iter();
        let mut next = || series.next().unwrap_or_default();
        let groups = groups
            .into_iter()
            .zip(algorithms.into_iter().zip(health))
            .map(|(group, (algorithm, health))| GroupEvidence {
                tags: tags
                    .as_ref()
                    .map(|t| t.get(&group.arn).cloned().unwrap_or_default()),
                algorithm: algorithm.flatten(),
                health,
                metric: next(),
                p50: next(),
                p99: next(),
                maximum: next(),
                requests: next(),
                errors_5xx: next(),
                unhealthy_hosts: next(),
                group,
            })
            .collect();
        Some(AlbEvidence {
            load_balancer: Some(load_balancer),
            groups,
        })
    };
    // Connecting (DescribeCluster, the token) overlaps the load balancer calls,
    // under the same bounds as every other call.
    let prepare = async {
        if plan.load_balancer_dimension.is_none() {
            return true;
        }
        ledger
            .run(source::CLUSTER, sources.prepare())
            .await
            .is_some()
    };
    let (history, definition, statistics, alb, connected) =
        tokio::join!(history, definition, statistics, alb, prepare);

    // The cluster, for the target group behind the breach.
    let mut workload = None;
    let mut pod_series = None;
    if let (Some(alb), Some(metric)) = (&alb, &plan.metric) {
        match culprit_target(alarm, statistics.as_ref(), alb, metric) {
            Some(_) if !connected => ledger.gap(
                source::KUBERNETES,
                "not read: the cluster connection failed (see eks:DescribeCluster and the cluster connection)",
            ),
            Some(target) => {
                workload = ledger
                    .run(source::KUBERNETES, sources.workload(&target))
                    .await;
                if let Some(w) = &workload {
                    let pods: Vec<String> = w.pods.iter().map(|p| p.name.clone()).collect();
                    if !pods.is_empty() {
                        pod_series = ledger
                            .run(
                                source::POD_SERIES,
                                sources.pod_series(
                                    &w.service.namespace,
                                    &pods,
                                    window_start,
                                    now,
                                    metric.period_seconds.max(60),
                                ),
                            )
                            .await;
                    }
                }
            }
            None => {
                if !alb.groups.is_empty() {
                    ledger.gap(source::KUBERNETES, "not read: no single target group stands out, so there is no workload to examine");
                }
            }
        }
    }

    let total_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let gaps = ledger.gaps.into_inner().unwrap_or_default();
    GatheredEvidence {
        history,
        definition,
        statistics,
        alb,
        workload,
        pod_series,
        gaps,
        timings: Timings {
            total_ms,
            sources: ledger.timings.into_inner().unwrap_or_default(),
        },
    }
}

/// The workload question for the culprit target group (the pure breakdown decides which).
fn culprit_target(
    alarm: &AlarmNotification,
    statistics: Option<&Statistics>,
    alb: &AlbEvidence,
    metric: &PlannedMetric,
) -> Option<workload::WorkloadTarget> {
    let trigger = alarm.trigger.as_ref()?;
    let threshold = trigger.threshold?;
    let comparison = trigger
        .comparison_operator
        .as_deref()
        .unwrap_or("GreaterThanThreshold");
    let breach = statistics
        .map(|s| crate::findings::traffic::breaching_periods(&s.alarm_stat, threshold, comparison))
        .unwrap_or_default();
    let analysis = crate::findings::alb::analyse(
        alb,
        &breach,
        &metric.statistic,
        threshold,
        comparison,
        metric.period_seconds,
    );
    let culprit = analysis.summaries.iter().find(|s| s.culprit)?;
    let group = alb.groups.iter().find(|g| g.group.arn == culprit.arn)?;
    Some(workload::WorkloadTarget {
        cluster: group
            .tags
            .as_ref()
            .and_then(|t| t.get("elbv2.k8s.aws/cluster").cloned()),
        target_group_arn: group.group.arn.clone(),
        target_group_name: group.group.name.clone(),
        service_hint: culprit.kubernetes_service.clone(),
    })
}

/// Rounds `t` down to a multiple of the period, as CloudWatch aligns periods.
fn align(t: DateTime<Utc>, period_seconds: u32) -> DateTime<Utc> {
    let period = i64::from(period_seconds.max(1));
    let seconds = t.timestamp() - t.timestamp().rem_euclid(period);
    DateTime::from_timestamp(seconds, 0).unwrap_or(t)
}

/// The statistics of the alarm's own metric, in this order:
/// alarm statistic, Average, p50, p99, Maximum, requests.
pub fn statistics_queries(metric: &PlannedMetric) -> Vec<MetricQuery> {
    let query = |id: &str, metric_name: &str, stat: &str| MetricQuery {
        id: id.to_owned(),
        namespace: metric.namespace.clone(),
        metric_name: metric_name.to_owned(),
        dimensions: metric.dimensions.clone(),
        stat: stat.to_owned(),
        period_seconds: metric.period_seconds,
    };
    let (requests_metric, requests_stat) = requests_metric(metric);
    vec![
        query("alarm_stat", &metric.metric_name, &metric.statistic),
        query("average", &metric.metric_name, "Average"),
        query("p50", &metric.metric_name, "p50"),
        query("p99", &metric.metric_name, "p99"),
        query("maximum", &metric.metric_name, "Maximum"),
        query("requests", &requests_metric, requests_stat),
    ]
}

fn requests_metric(metric: &PlannedMetric) -> (String, &'static str) {
    if metric.namespace == "AWS/ApplicationELB" {
        ("RequestCount".to_owned(), "Sum")
    } else {
        (metric.metric_name.clone(), "SampleCount")
    }
}

fn statistics_from(metric: &PlannedMetric, series: Vec<MetricSeries>) -> Statistics {
    let mut series = series.into_iter();
    let mut next = || series.next().unwrap_or_default();
    Statistics {
        period_seconds: metric.period_seconds,
        alarm_statistic: metric.statistic.clone(),
        alarm_stat: next(),
        average: next(),
        p50: next(),
        p99: next(),
        maximum: next(),
        requests: next(),
        requests_metric: requests_metric(metric).0,
    }
}

/// Seven queries per target group, in this order: the alarm's metric at the
/// alarm's statistic, p50, p99 and Maximum, then RequestCount,
/// HTTPCode_Target_5XX_Count and UnHealthyHostCount (maximum).
pub fn group_queries(
    metric: &PlannedMetric,
    lb_dimension: &str,
    groups: &[TargetGroup],
) -> Vec<MetricQuery> {
    let mut out = Vec::with_capacity(groups.len() * 7);
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
        let query = |suffix: &str, metric_name: &str, stat: &str| MetricQuery {
            id: format!("g{i}_{suffix}"),
            namespace: "AWS/ApplicationELB".to_owned(),
            metric_name: metric_name.to_owned(),
            dimensions: dimensions.clone(),
            stat: stat.to_owned(),
            period_seconds: metric.period_seconds,
        };
        out.push(query("metric", &metric.metric_name, &metric.statistic));
        out.push(query("p50", &metric.metric_name, "p50"));
        out.push(query("p99", &metric.metric_name, "p99"));
        out.push(query("maximum", &metric.metric_name, "Maximum"));
        out.push(query("requests", "RequestCount", "Sum"));
        out.push(query("errors", "HTTPCode_Target_5XX_Count", "Sum"));
        out.push(query("unhealthy", "UnHealthyHostCount", "Maximum"));
    }
    out
}

#[cfg(test)]
mod tests;
