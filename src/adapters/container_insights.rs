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
use crate::evidence::workload::{PerPod, PodSeries, PodsListed};
use crate::evidence::{MetricSource, source};

pub const NAMESPACE: &str = "ContainerInsights";

/// Reads pod series from Container Insights through CloudWatch.
#[derive(Debug, Clone)]
pub struct ContainerInsightsSource {
    cloudwatch: CloudWatchSource,
}

/// The `PodName` dimension Container Insights gives a pod that the walk saw
/// no ReplicaSet for (a Deployment's pods are named from their ReplicaSet):
/// its controller's name, without the ordinal of a StatefulSet pod (`db-0`)
/// or the random suffix of a DaemonSet or Job pod (`fluent-bit-x7k2q`).
pub fn owner_name(pod: &str) -> &str {
    match pod.rsplit_once('-') {
        Some((controller, _)) if !controller.is_empty() => controller,
        _ => pod,
    }
}

/// Two queries per pod, CPU (`pod_cpu_usage_total`, millicores) then memory
/// (`pod_memory_working_set`, bytes), in pod order. `PodName` is the pod's
/// workload as the walk read it (its ReplicaSet's Deployment), else guessed
/// from the pod's name.
pub fn queries(cluster: &str, pods: &PodsListed, period_seconds: u32) -> Vec<MetricQuery> {
    let mut out = Vec::with_capacity(pods.pods.len() * 2);
    for (i, pod) in pods.pods.iter().enumerate() {
        let dimension = |name: &str, value: &str| Dimension {
            name: name.to_owned(),
            value: value.to_owned(),
        };
        let workload = pods
            .workloads
            .get(pod)
            .map_or_else(|| owner_name(pod), String::as_str);
        let dimensions = vec![
            dimension("ClusterName", cluster),
            dimension("FullPodName", pod),
            dimension("Namespace", &pods.namespace),
            dimension("PodName", workload),
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
        listed: &PodsListed,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step_seconds: u32,
    ) -> Result<PodSeries> {
        // Container Insights publishes once a minute.
        let period = step_seconds.max(60);
        let answers = self
            .cloudwatch
            .metric_data(&queries(cluster, listed, period), start, end)
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
        let (namespace, pods) = (&listed.namespace, &listed.pods);
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
        cpu_waiting: PerPod::new(),
        // Container Insights is asked for the pods running now only.
        pod_count: Vec::new(),
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
    fn a_pod_without_a_replica_set_is_published_under_its_controller_name() {
        assert_eq!(owner_name("db-0"), "db");
        assert_eq!(owner_name("fluent-bit-x7k2q"), "fluent-bit");
        assert_eq!(owner_name("single"), "single");
    }

    #[test]
    fn each_pod_is_asked_for_cpu_then_memory_by_its_full_name_and_its_workload() {
        let listed = PodsListed {
            cluster: None,
            namespace: "shop".to_owned(),
            pods: vec!["web-1a2b3c-x1".to_owned(), "db-0".to_owned()],
            // A StatefulSet pod has no ReplicaSet: its name is guessed.
            workloads: [("web-1a2b3c-x1".to_owned(), "web".to_owned())].into(),
            logs: Default::default(),
            created: Default::default(),
        };
        let q = queries("prod", &listed, 60);
        assert_eq!(q.len(), 4);
        assert_eq!(q[0].metric_name, "pod_cpu_usage_total");
        assert_eq!(q[1].metric_name, "pod_memory_working_set");
        let value = |i: usize, name: &str| {
            q[i].dimensions
                .iter()
                .find(|d| d.name == name)
                .map(|d| d.value.clone())
        };
        assert_eq!(value(0, "PodName").as_deref(), Some("web"));
        assert_eq!(value(2, "FullPodName").as_deref(), Some("db-0"));
        assert_eq!(value(2, "Namespace").as_deref(), Some("shop"));
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
