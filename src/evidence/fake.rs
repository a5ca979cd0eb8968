//! In-memory sources for unit tests of pure logic and of the handler's error
//! mapping (the publisher's is `publish::fake`). End-to-end tests use the
//! local world instead.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::model::{
    AlarmDefinition, LoadBalancer, MetricQuery, MetricSeries, Tags, TargetGroup, TargetHealth,
};
use super::workload::{PodSeries, PodsListed, TargetGroupBindings, Workload, WorkloadTarget};
use super::{AlarmSource, KubernetesSource, LoadBalancerSource, MetricSource, PodSeriesSource};
use crate::error::{Error, Result};
use crate::history::{AlarmHistory, StateChange};

/// Sources that answer from memory, optionally after a delay, optionally failing.
#[derive(Debug, Clone, Default)]
pub struct StaticSources {
    pub history: Vec<StateChange>,
    pub definition: Option<AlarmDefinition>,
    /// Answers to metric queries, by query id.
    pub metrics: BTreeMap<String, MetricSeries>,
    pub load_balancer: Option<LoadBalancer>,
    pub groups: Vec<TargetGroup>,
    pub health: BTreeMap<String, Vec<TargetHealth>>,
    pub tags: BTreeMap<String, Tags>,
    pub workload: Option<Workload>,
    /// TargetGroupBindings, when the cluster is known before the culprit.
    pub bindings: Option<TargetGroupBindings>,
    pub pod_series: Option<PodSeries>,
    /// Each pod's log lines (`None`: the cluster ships no logs to CloudWatch).
    pub pod_logs: BTreeMap<String, Vec<super::logs::LogLine>>,
    /// The audit trail's records, answered to the lookups whose attribute they match.
    pub trail: Vec<super::changes::TrailEvent>,
    /// Every call waits this long first (use with tokio's paused clock).
    pub latency: Duration,
    /// Connecting to the cluster takes this long (a slow eks:DescribeCluster).
    pub connect_latency: Duration,
    /// Source names (see `evidence::source`) whose calls fail.
    pub failing: Vec<&'static str>,
    pub calls: Arc<AtomicUsize>,
}

impl StaticSources {
    async fn enter(&self, source: &'static str) -> Result<()> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        if self.failing.contains(&source) {
            return Err(Error::Source {
                source_name: source,
                reason: format!(
                    "access denied (AccessDenied): grant the read action for {source} to the function's role"
                ),
                retryable: false,
            });
        }
        Ok(())
    }

    pub fn call_count(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

impl AlarmSource for StaticSources {
    async fn state_history(
        &self,
        _: &str,
        start: DateTime<Utc>,
        _: DateTime<Utc>,
    ) -> Result<AlarmHistory> {
        self.enter(super::source::ALARM_HISTORY).await?;
        Ok(AlarmHistory::from_unordered(self.history.clone()).complete_since(start))
    }

    async fn definition(&self, _: &str) -> Result<Option<AlarmDefinition>> {
        self.enter(super::source::ALARM_DEFINITION).await?;
        Ok(self.definition.clone())
    }
}

impl MetricSource for StaticSources {
    async fn metric_data(
        &self,
        queries: &[MetricQuery],
        _: DateTime<Utc>,
        _: DateTime<Utc>,
    ) -> Result<Vec<MetricSeries>> {
        let source = if queries.first().is_some_and(|q| q.id.starts_with('g')) {
            super::source::TARGET_GROUP_METRICS
        } else if queries.iter().any(|q| q.id == "average") {
            super::source::METRIC_STATISTICS
        } else {
            // The alarm's statistic alone: the standing level's long read.
            super::source::METRIC_HISTORY
        };
        self.enter(source).await?;
        Ok(queries
            .iter()
            .map(|q| {
                self.metrics.get(&q.id).cloned().unwrap_or(MetricSeries {
                    id: q.id.clone(),
                    points: Vec::new(),
                })
            })
            .collect())
    }
}

impl LoadBalancerSource for StaticSources {
    async fn load_balancer(&self, _: &str) -> Result<Option<LoadBalancer>> {
        self.enter(super::source::LOAD_BALANCER).await?;
        Ok(self.load_balancer.clone())
    }

    async fn target_groups(&self, _: &str) -> Result<Option<Vec<TargetGroup>>> {
        self.enter(super::source::TARGET_GROUPS).await?;
        Ok(self.load_balancer.as_ref().map(|_| self.groups.clone()))
    }

    async fn attributes(&self, _: &str) -> Result<super::model::TargetGroupAttributes> {
        self.enter(super::source::TARGET_GROUP_ATTRIBUTES).await?;
        Ok(super::model::TargetGroupAttributes {
            algorithm: Some("round_robin".to_owned()),
            slow_start_seconds: Some(0),
            deregistration_delay_seconds: Some(300),
            connection_termination: None,
        })
    }

    async fn target_health(&self, arn: &str) -> Result<Vec<TargetHealth>> {
        self.enter(super::source::TARGET_HEALTH).await?;
        Ok(self.health.get(arn).cloned().unwrap_or_default())
    }

    async fn tags(&self, _: &[String]) -> Result<BTreeMap<String, Tags>> {
        self.enter(super::source::TAGS).await?;
        Ok(self.tags.clone())
    }
}

impl super::AccountScoped for StaticSources {
    /// Recorded evidence belongs to one account.
    async fn scoped_to(
        &self,
        _: &str,
        _: &str,
        _: &str,
    ) -> std::result::Result<Option<Self>, String> {
        Ok(None)
    }
}

impl KubernetesSource for StaticSources {
    async fn prepare(&self) -> Result<()> {
        if !self.connect_latency.is_zero() {
            tokio::time::sleep(self.connect_latency).await;
        }
        Ok(())
    }

    async fn target_group_bindings(&self) -> Result<Option<TargetGroupBindings>> {
        if self.bindings.is_none() {
            return Ok(None);
        }
        self.enter(super::source::TARGET_GROUP_BINDINGS).await?;
        Ok(self.bindings.clone())
    }

    /// Walks like the adapter: the Service, then its pods (announced), then
    /// their Deployment: three dependent steps of `latency` each.
    async fn workload(
        &self,
        _: &WorkloadTarget,
        pods_listed: crate::evidence::ports::PodsListedSender,
    ) -> Result<Workload> {
        self.enter(super::source::KUBERNETES).await?;
        let workload = self.workload.clone().ok_or_else(|| Error::Source {
            source_name: super::source::KUBERNETES,
            reason: "no cluster in this fake".to_owned(),
            retryable: false,
        })?;
        tokio::time::sleep(self.latency).await;
        let _ = pods_listed.send(PodsListed::of(
            workload.cluster.clone(),
            workload.service.namespace.clone(),
            &workload.pods,
        ));
        tokio::time::sleep(self.latency).await;
        Ok(workload)
    }
}

impl PodSeriesSource for StaticSources {
    async fn pod_series(
        &self,
        _: &PodsListed,
        _: DateTime<Utc>,
        _: DateTime<Utc>,
        _: u32,
    ) -> Result<PodSeries> {
        self.enter(super::source::POD_SERIES).await?;
        self.pod_series.clone().ok_or_else(|| Error::Source {
            source_name: super::source::POD_SERIES,
            reason: "no Prometheus in this fake".to_owned(),
            retryable: false,
        })
    }
}

impl super::LogSource for StaticSources {
    async fn container_log(
        &self,
        _: &PodsListed,
        request: &super::logs::LogRequest,
        window: super::logs::LogWindow,
        _: usize,
    ) -> Result<super::logs::ContainerLog> {
        self.enter(super::source::POD_LOGS).await?;
        let lines: Vec<super::logs::LogLine> = self
            .pod_logs
            .get(&request.pod)
            .into_iter()
            .flatten()
            .filter(|l| l.at >= window.baseline && l.at <= window.now)
            .cloned()
            .collect();
        let read = super::logs::LogRead {
            since: window.baseline,
            bytes: lines.iter().map(|l| l.text.len() + 1).sum(),
            lines,
            cut: false,
        };
        Ok(super::logs::ContainerLog::from_reads(
            request,
            super::logs::LogOrigin::PodLog,
            vec![read],
            window.now,
        ))
    }

    async fn workload_logs(
        &self,
        _: &PodsListed,
        _: super::logs::LogWindow,
        _: usize,
    ) -> Result<Option<Vec<super::logs::ContainerLog>>> {
        self.enter(super::source::LOGS_INSIGHTS).await?;
        Ok(None)
    }
}

impl super::AuditTrailSource for StaticSources {
    async fn trail_events(
        &self,
        lookup: super::changes::TrailLookup,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<super::changes::TrailPage> {
        self.enter(super::source::CLOUDTRAIL).await?;
        let (key, value) = lookup.attribute();
        let mut events: Vec<super::changes::TrailEvent> = self
            .trail
            .iter()
            .filter(|e| e.at >= start && e.at <= end)
            .filter(|e| match key {
                "EventSource" => e.source == value,
                _ => e.resources.iter().any(|(kind, _)| kind == value),
            })
            .cloned()
            .collect();
        events.sort_by_key(|e| std::cmp::Reverse(e.at));
        Ok(super::changes::TrailPage {
            events,
            truncated: false,
        })
    }
}
