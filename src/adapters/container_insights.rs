//! Per-pod CPU and memory from CloudWatch Container Insights, for clusters
//! without Prometheus. Enhanced observability publishes them per pod
//! (dimension `FullPodName`, beside the owner's `PodName`) in the
//! `ContainerInsights` namespace; one GetMetricData call reads every pod.
//! Container Insights has no CFS throttling counters, so throttling stays
//! unanswered from this source.

use chrono::{DateTime, Utc};

use super::cloudwatch::CloudWatchSource;
use crate::alarm::Dimension;
use crate::error::{Error, Result};
use crate::evidence::model::MetricQuery;
use crate::evidence::workload::{PerPod, PodSeries};
use crate::evidence::{MetricSource, source};

pub const NAMESPACE: &str = "ContainerInsights";

/// Reads pod series from Container Insights through CloudWatch.
#[derive(Debug, Clone)]
pub struct ContainerInsightsSource {
    cloudwatch: CloudWatchSource,
}

/// The `PodName` dimension Container Insights gives a pod: its owner's name,
/// the pod name without the ReplicaSet hash and the pod suffix.
pub fn owner_name(pod: &str) -> &str {
    let mut cut = pod;
    for _ in 0..2 {
        match cut.rsplit_once('-') {
            Some((head, _)) if !head.is_empty() => cut = head,
            _ => return pod,
        }
    }
    cut
}

/// Two queries per pod, CPU (`pod_cpu_usage_total`, millicores) then memory
/// (`pod_memory_working_set`, bytes), in pod order.
pub fn queries(
    cluster: &str,
    namespace: &str,
    pods: &[String],
    period_seconds: u32,
) -> Vec<MetricQuery> {
    let mut out = Vec::with_capacity(pods.len() * 2);
    for (i, pod) in pods.iter().enumerate() {
        let dimension = |name: &str, value: &str| Dimension {
            name: name.to_owned(),
            value: value.to_owned(),
        };
        let dimensions = vec![
            dimension("ClusterName", cluster),
            dimension("FullPodName", pod),
            dimension("Namespace", namespace),
            dimension("PodName", owner_name(pod)),
        ];
        for (suffix, metric) in [
            ("cpu", "pod_cpu_usage_total"),
            ("memory", "pod_memory_working_set"),
        ] {
            out.push(MetricQuery {
                id: format!("p{i}_{suffix}"),
                namespace: NAMESPACE.to_owned(),
                metric_name: metric.to_owned(),
                dimensions: dimensions.clone(),
                stat: "Average".to_owned(),
                period_seconds,
            });
        }
    }
    out
}

impl ContainerInsightsSource {
    pub fn new(cloudwatch: CloudWatchSource) -> Self {
        ContainerInsightsSource { cloudwatch }
    }

    pub async fn pod_series(
        &self,
        cluster: &str,
        namespace: &str,
        pods: &[String],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step_seconds: u32,
    ) -> Result<PodSeries> {
        // Container Insights publishes once a minute.
        let period = step_seconds.max(60);
        let answers = self
            .cloudwatch
            .metric_data(&queries(cluster, namespace, pods, period), start, end)
            .await
            .map_err(|e| match e {
                Error::Source {
                    reason, retryable, ..
                } => Error::Source {
                    source_name: source::POD_SERIES,
                    reason: format!("Container Insights: {reason}"),
                    retryable,
                },
                other => other,
            })?;
        let series = from_answers(pods, answers.into_iter().map(|s| s.points), period, cluster);
        if series.cpu.is_empty() {
            return Err(Error::Source {
                source_name: source::POD_SERIES,
                reason: format!(
                    "no Prometheus configured and Container Insights has no per-pod series for the {} pods of {namespace} in cluster {cluster} (pod_cpu_usage_total by FullPodName: enable enhanced observability, or set PROMETHEUS_URL or PROMETHEUS_SERVICE)",
                    pods.len()
                ),
                retryable: false,
            });
        }
        Ok(series)
    }
}

/// The answers to [`queries`], in its order, as pod series (CPU in cores).
pub fn from_answers(
    pods: &[String],
    answers: impl IntoIterator<Item = Vec<(DateTime<Utc>, f64)>>,
    period_seconds: u32,
    cluster: &str,
) -> PodSeries {
    let mut answers = answers.into_iter();
    let mut cpu = PerPod::new();
    let mut memory = PerPod::new();
    for pod in pods {
        let cores: Vec<(DateTime<Utc>, f64)> = answers
            .next()
            .unwrap_or_default()
            .into_iter()
            .map(|(t, millicores)| (t, millicores / 1000.0))
            .collect();
        let bytes = answers.next().unwrap_or_default();
        if !cores.is_empty() {
            cpu.insert(pod.clone(), cores);
        }
        if !bytes.is_empty() {
            memory.insert(pod.clone(), bytes);
        }
    }
    PodSeries {
        step_seconds: period_seconds,
        cpu,
        throttled: PerPod::new(),
        memory,
        origin: format!(
            "Container Insights (CloudWatch {NAMESPACE}, cluster {cluster}; no throttling counters)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_replica_set_pod_is_published_under_its_deployment_name() {
        assert_eq!(owner_name("checkout-7d9f8b6c5d-x2x9q"), "checkout");
        assert_eq!(owner_name("api-gateway-5f9c8d7b64-j6pxh"), "api-gateway");
        assert_eq!(owner_name("single"), "single");
    }

    #[test]
    fn each_pod_is_asked_for_cpu_then_memory_by_its_full_name() {
        let q = queries(
            "prod",
            "shop",
            &["web-1a2b3c-x1".to_owned(), "web-1a2b3c-y2".to_owned()],
            60,
        );
        assert_eq!(q.len(), 4);
        assert_eq!(q[0].metric_name, "pod_cpu_usage_total");
        assert_eq!(q[1].metric_name, "pod_memory_working_set");
        assert!(
            q[2].dimensions
                .iter()
                .any(|d| d.name == "FullPodName" && d.value == "web-1a2b3c-y2")
        );
        assert!(
            q[2].dimensions
                .iter()
                .any(|d| d.name == "PodName" && d.value == "web")
        );
    }

    #[test]
    fn millicores_become_cores_and_pods_without_data_are_left_out() {
        let t = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap();
        let pods = ["a-1-x".to_owned(), "a-1-y".to_owned()];
        let series = from_answers(
            &pods,
            vec![vec![(t, 950.0)], vec![(t, 1.5e8)], vec![], vec![]],
            60,
            "prod",
        );
        assert_eq!(series.cpu["a-1-x"], vec![(t, 0.95)]);
        assert!(!series.cpu.contains_key("a-1-y"));
        assert!(series.throttled.is_empty());
        assert!(series.origin.contains("Container Insights"));
    }
}
