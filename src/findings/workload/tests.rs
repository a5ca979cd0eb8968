use std::collections::BTreeMap;

use chrono::{Duration, TimeZone};

use super::*;
use crate::classify::{AlarmTiming, ClassifierConfig, classify};
use crate::evidence::service_map::{MappingSource, ServiceRef};
use crate::evidence::workload::{ContainerInfo, DeploymentInfo, HpaInfo, PodInfo, PodUsage};
use crate::history::{AlarmHistory, StateChange};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
}

fn pod(name: &str, request: Option<f64>, limit: Option<f64>, readiness: bool) -> PodInfo {
    PodInfo {
        name: name.into(),
        phase: "Running".into(),
        node: Some("node-a".into()),
        ready: true,
        restarts: 0,
        owner_replica_set: Some("app-1".into()),
        created: None,
        containers: vec![ContainerInfo {
            name: "app".into(),
            cpu_request: request,
            cpu_limit: limit,
            memory_limit: None,
            readiness_probe: readiness,
            liveness_probe: true,
            args: vec![],
        }],
        scheduling_messages: vec![],
    }
}

fn hpa(target: i32, current: i32, max: i32) -> HpaInfo {
    HpaInfo {
        name: "app".into(),
        api_version: "autoscaling/v2".into(),
        created_as_v1: true,
        min_replicas: Some(4),
        max_replicas: max,
        target_cpu_utilization: Some(target),
        other_metrics: vec![],
        current_replicas: Some(current),
        desired_replicas: Some(current),
        current_cpu_utilization: Some(70),
        conditions: vec![],
    }
}

fn workload(pods: Vec<PodInfo>, hpa: Option<HpaInfo>, rollout_minutes_ago: i64) -> Workload {
    Workload {
        cluster: Some("shop-prod".into()),
        service: ServiceRef {
            namespace: "shop".into(),
            name: "checkout".into(),
            source: MappingSource::TargetGroupBinding,
        },
        selector: BTreeMap::from([("app".to_owned(), "checkout".to_owned())]),
        pods,
        deployment: Some(DeploymentInfo {
            name: "checkout".into(),
            replicas: Some(4),
            ready_replicas: Some(4),
            strategy: Some("RollingUpdate".into()),
            revision: Some("14".into()),
            last_rollout: Some(now() - Duration::minutes(rollout_minutes_ago)),
        }),
        hpa,
        snapshot: Some(vec![PodUsage {
            pod: "a".into(),
            cpu_cores: 0.98,
            memory_bytes: 0.0,
        }]),
        nodes: vec![],
        partial: vec![],
    }
}

/// Per-pod CPU over 10 breaching minutes, each pod at its own level.
fn series(levels: &[(&str, f64)], throttled: f64) -> (PodSeries, Vec<DateTime<Utc>>) {
    let periods: Vec<DateTime<Utc>> = (0..10).map(|i| now() - Duration::minutes(10 - i)).collect();
    let mut s = PodSeries {
        step_seconds: 60,
        origin: "test".into(),
        ..PodSeries::default()
    };
    for (i, (pod, level)) in levels.iter().enumerate() {
        let wobble = |k: usize| 1.0 + 0.02 * (((k + i) % 3) as f64 - 1.0);
        s.cpu.insert(
            (*pod).into(),
            periods
                .iter()
                .enumerate()
                .map(|(k, t)| (*t, level * wobble(k)))
                .collect(),
        );
        s.throttled.insert(
            (*pod).into(),
            periods.iter().map(|t| (*t, throttled)).collect(),
        );
    }
    (s, periods)
}

fn flapping_for_five_hours() -> Classification {
    let changes: Vec<StateChange> = (0..18)
        .map(|i| StateChange {
            at: now() - Duration::minutes(300 - 16 * i),
            from: if i % 2 == 0 {
                crate::alarm::AlarmState::Ok
            } else {
                crate::alarm::AlarmState::Alarm
            },
            to: if i % 2 == 0 {
                crate::alarm::AlarmState::Alarm
            } else {
                crate::alarm::AlarmState::Ok
            },
        })
        .collect();
    classify(
        &AlarmHistory::from_unordered(changes).complete_since(now() - Duration::hours(24)),
        crate::alarm::AlarmState::Alarm,
        AlarmTiming {
            period_seconds: 60,
            evaluation_periods: 2,
            datapoints_to_alarm: 2,
        },
        &ClassifierConfig::default(),
        now(),
    )
}

fn verdict(findings: &[Finding], id: &str) -> Verdict {
    findings
        .iter()
        .find(|f| f.id.as_str() == id)
        .unwrap_or_else(|| panic!("no {id}"))
        .verdict
}

fn four_pods(request: Option<f64>) -> Vec<PodInfo> {
    ["a", "b", "c", "d"]
        .iter()
        .map(|n| pod(n, request, Some(1.5), false))
        .collect()
}

#[test]
fn four_pods_flat_at_point_nine_cores_are_a_worker_ceiling_the_hpa_cannot_see() {
    let (s, periods) = series(&[("a", 0.9), ("b", 0.9), ("c", 0.88), ("d", 0.91)], 0.0);
    let w = workload(four_pods(Some(1.2)), Some(hpa(80, 4, 7)), 15);
    let (findings, summary) = decide(&w, Some(&s), &periods, &flapping_for_five_hours());
    assert_eq!(verdict(&findings, "pods.imbalance"), Verdict::Refuted);
    assert_eq!(
        verdict(&findings, "pods.worker_ceiling"),
        Verdict::Supported
    );
    assert_eq!(verdict(&findings, "pods.throttling"), Verdict::Refuted);
    assert_eq!(verdict(&findings, "hpa.cannot_react"), Verdict::Supported);
    assert_eq!(
        verdict(&findings, "deploy.recent_change"),
        Verdict::Refuted,
        "deployed 15 min ago, flapping for 5 h"
    );
    assert_eq!(
        verdict(&findings, "pods.readiness_probe_missing"),
        Verdict::Supported
    );
    assert_eq!(
        verdict(&findings, "capacity.pending_pods"),
        Verdict::Refuted
    );
    let ceiling = findings
        .iter()
        .find(|f| f.id == FindingId::WorkerCeiling)
        .unwrap();
    assert!(
        ceiling
            .evidence
            .iter()
            .any(|e| e.name.contains("concurrency") && e.display_value().starts_with('4'))
    );
    assert_eq!(summary.pods.len(), 4);
}

#[test]
fn one_hot_pod_at_its_limit_is_imbalance_and_throttling_not_a_ceiling() {
    let (s, periods) = series(&[("a", 1.48), ("b", 0.12), ("c", 0.11), ("d", 0.13)], 0.0);
    let mut s = s;
    s.throttled
        .insert("a".into(), periods.iter().map(|t| (*t, 0.42)).collect());
    let w = workload(four_pods(Some(1.0)), Some(hpa(70, 4, 8)), 3000);
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours());
    assert_eq!(verdict(&findings, "pods.imbalance"), Verdict::Supported);
    assert_eq!(verdict(&findings, "pods.throttling"), Verdict::Supported);
    assert_eq!(verdict(&findings, "pods.worker_ceiling"), Verdict::Refuted);
    assert_eq!(
        verdict(&findings, "hpa.cannot_react"),
        Verdict::Supported,
        "the mean (46 %) hides the hot pod"
    );
}

#[test]
fn without_prometheus_a_snapshot_decides_no_imbalance() {
    let w = workload(four_pods(Some(1.2)), Some(hpa(80, 4, 7)), 15);
    let (findings, _) = decide(&w, None, &[], &flapping_for_five_hours());
    let imbalance = findings
        .iter()
        .find(|f| f.id == FindingId::PodImbalance)
        .unwrap();
    assert_eq!(imbalance.verdict, Verdict::Inconclusive);
    assert!(imbalance.summary.contains("single metrics.k8s.io snapshot"));
    assert_eq!(
        verdict(&findings, "pods.worker_ceiling"),
        Verdict::Inconclusive
    );
    // The HPA's own current utilisation (70 %) still answers the HPA question.
    assert_eq!(verdict(&findings, "hpa.cannot_react"), Verdict::Supported);
}

#[test]
fn one_pod_has_nothing_to_balance() {
    let (s, periods) = series(&[("a", 0.9)], 0.0);
    let w = workload(vec![pod("a", Some(1.2), Some(1.5), true)], None, 15);
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours());
    assert_eq!(verdict(&findings, "pods.imbalance"), Verdict::Inconclusive);
    assert_eq!(
        verdict(&findings, "hpa.cannot_react"),
        Verdict::Supported,
        "no HPA at all"
    );
    assert_eq!(
        verdict(&findings, "pods.readiness_probe_missing"),
        Verdict::Refuted
    );
}

#[test]
fn pods_without_requests_leave_the_hpa_blind() {
    let (s, periods) = series(&[("a", 0.9), ("b", 0.9)], 0.0);
    let w = workload(four_pods(None), Some(hpa(80, 4, 7)), 15);
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours());
    let f = findings
        .iter()
        .find(|f| f.id == FindingId::HpaCannotReact)
        .unwrap();
    assert_eq!(f.verdict, Verdict::Supported);
    assert!(f.summary.contains("no CPU request"));
}

#[test]
fn an_hpa_at_its_maximum_cannot_add_pods() {
    let (s, periods) = series(&[("a", 1.4), ("b", 1.4)], 0.0);
    let w = workload(four_pods(Some(1.0)), Some(hpa(50, 7, 7)), 15);
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours());
    let f = findings
        .iter()
        .find(|f| f.id == FindingId::HpaCannotReact)
        .unwrap();
    assert!(f.summary.contains("maximum"), "{}", f.summary);
}

#[test]
fn missing_series_for_some_pods_are_named_not_guessed() {
    let (s, periods) = series(&[("a", 0.9), ("b", 0.9)], 0.0);
    let w = workload(four_pods(Some(1.2)), Some(hpa(80, 4, 7)), 15);
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours());
    let imbalance = findings
        .iter()
        .find(|f| f.id == FindingId::PodImbalance)
        .unwrap();
    assert!(
        imbalance
            .evidence
            .iter()
            .any(|e| e.name == "pods without CPU series" && e.display_value() == "c, d")
    );
}

#[test]
fn a_deploy_just_before_the_first_transition_is_a_suspect() {
    let w = workload(four_pods(Some(1.2)), None, 320);
    let (findings, _) = decide(&w, None, &[], &flapping_for_five_hours());
    assert_eq!(
        verdict(&findings, "deploy.recent_change"),
        Verdict::Supported
    );
}

#[test]
fn a_pending_pod_with_its_scheduling_message_is_a_capacity_problem() {
    let mut pods = four_pods(Some(1.2));
    pods[3].phase = "Pending".into();
    pods[3].scheduling_messages = vec!["0/3 nodes are available: 3 Insufficient cpu.".into()];
    let w = workload(pods, None, 15);
    let (findings, _) = decide(&w, None, &[], &flapping_for_five_hours());
    let f = findings
        .iter()
        .find(|f| f.id == FindingId::PendingPods)
        .unwrap();
    assert_eq!(f.verdict, Verdict::Supported);
    assert!(
        f.evidence
            .iter()
            .any(|e| e.display_value().contains("Insufficient cpu"))
    );
}
