//! The ports: what the gathering reads through, and what the adapters
//! implement. The data they return is the core's evidence model; the
//! reading is async, so the ports live here, above the pure core.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::model::{
    AlarmDefinition, LoadBalancer, MetricQuery, MetricSeries, Tags, TargetGroup, TargetHealth,
};
use super::{logs, workload};
use crate::error::Result;
use crate::history::AlarmHistory;

/// Where the workload walk hands over the pods it listed, as soon as it has
/// them, so their series are read while the walk goes on.
pub type PodsListedSender = tokio::sync::oneshot::Sender<workload::PodsListed>;

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
    ) -> impl Future<Output = Result<super::model::TargetGroupAttributes>> + Send;

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
        pods_listed: PodsListedSender,
    ) -> impl Future<Output = Result<workload::Workload>> + Send;
}

/// Port: the pods' own time series (Prometheus, Amazon Managed Prometheus,
/// or CloudWatch Container Insights; which one is chosen once, at set-up).
pub trait PodSeriesSource: Send + Sync {
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

/// Port: what the pods printed. Both reads are bounded (bytes, rows) and
/// redacted before they are returned: nothing unredacted leaves the adapter.
pub trait LogSource: Send + Sync {
    /// One container's log through the Kubernetes API (`pods/log`), read
    /// as `window` says, at most `limit_bytes` in all.
    fn container_log(
        &self,
        pods: &workload::PodsListed,
        request: &logs::LogRequest,
        window: logs::LogWindow,
        limit_bytes: usize,
    ) -> impl Future<Output = Result<logs::ContainerLog>> + Send;

    /// The lines of the pods' workloads (every pod of their Deployments, gone
    /// ones included) over the window, from the log group the cluster ships
    /// container logs to, in one Logs Insights query; `None` when there is no
    /// such log group. At most `limit_bytes` in all.
    fn workload_logs(
        &self,
        pods: &workload::PodsListed,
        window: logs::LogWindow,
        limit_bytes: usize,
    ) -> impl Future<Output = Result<Option<Vec<logs::ContainerLog>>>> + Send;
}

/// Port: the audit trail (CloudTrail): changes made through the AWS API.
pub trait AuditTrailSource: Send + Sync {
    /// The records one lookup finds over `[start, end]`, newest first, read
    /// page by page up to a bound (`TrailPage::truncated` says it stopped).
    fn trail_events(
        &self,
        lookup: super::changes::TrailLookup,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> impl Future<Output = Result<super::changes::TrailPage>> + Send;
}

/// Everything the diagnose pipeline reads from.
pub trait EvidenceSources:
    AlarmSource
    + MetricSource
    + LoadBalancerSource
    + KubernetesSource
    + PodSeriesSource
    + LogSource
    + AuditTrailSource
    + AccountScoped
{
}

impl<
    T: AlarmSource
        + MetricSource
        + LoadBalancerSource
        + KubernetesSource
        + PodSeriesSource
        + LogSource
        + AuditTrailSource
        + AccountScoped,
> EvidenceSources for T
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
