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
        ip: None,
        reason: None,
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
        lifecycle: Default::default(),
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
        scale_down: None,
        spec_edit: None,
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
            revisions: Vec::new(),
            conditions: Vec::new(),
            paused: false,
            scale_edit: None,
        }),
        hpa,
        snapshot: Some(vec![PodUsage {
            pod: "a".into(),
            cpu_cores: 0.98,
            memory_bytes: 0.0,
        }]),
        nodes: vec![],
        provisioning: None,
        partial: vec![],
        activity: Default::default(),
        placement: vec![],
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
    let (findings, summary) = decide(&w, Some(&s), &periods, &flapping_for_five_hours(), now());
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
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours(), now());
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
    let (findings, _) = decide(&w, None, &[], &flapping_for_five_hours(), now());
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
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours(), now());
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
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours(), now());
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
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours(), now());
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
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours(), now());
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
    let (findings, _) = decide(&w, None, &[], &flapping_for_five_hours(), now());
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
    let (findings, _) = decide(&w, None, &[], &flapping_for_five_hours(), now());
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

fn finding(findings: &[Finding], id: FindingId) -> &Finding {
    findings.iter().find(|f| f.id == id).unwrap()
}

fn five_pods(request: Option<f64>) -> Vec<PodInfo> {
    ["a", "b", "c", "d", "e"]
        .iter()
        .map(|n| pod(n, request, Some(2.0), true))
        .collect()
}

#[test]
fn one_pod_at_two_and_a_half_times_four_tight_peers_is_named_as_hot() {
    let levels = [("a", 0.4), ("b", 0.41), ("c", 1.0), ("d", 0.39), ("e", 0.4)];
    let (s, periods) = series(&levels, 0.0);
    let mut pods = five_pods(Some(1.0));
    pods[2].restarts = 1;
    pods[2].lifecycle.last_termination = Some(crate::evidence::workload::Termination {
        container: "app".into(),
        reason: "OOMKilled".into(),
        exit_code: 137,
        finished_at: Some(now() - Duration::minutes(12)),
    });
    let w = workload(pods, Some(hpa(70, 5, 10)), 3000);
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours(), now());
    let imbalance = finding(&findings, FindingId::PodImbalance);
    assert_eq!(
        imbalance.verdict,
        Verdict::Supported,
        "{}",
        imbalance.summary
    );
    assert!(
        imbalance.summary.contains("c at 1.0")
            && imbalance.summary.contains("last OOMKilled 12 min ago"),
        "{}",
        imbalance.summary
    );
    let Facts::Imbalance(facts) = &imbalance.facts else {
        panic!("imbalance facts")
    };
    assert_eq!(facts.hot.len(), 1);
    assert_eq!(facts.hot[0].pod, "c");
    let restarts = finding(&findings, FindingId::PodRestarts);
    assert_eq!(restarts.verdict, Verdict::Supported, "{}", restarts.summary);
    assert!(restarts.cause.as_deref().unwrap().contains("c OOMKilled"));
}

#[test]
fn idle_pods_are_not_called_evenly_saturated() {
    let levels = [("a", 0.02), ("b", 0.021), ("c", 0.019), ("d", 0.02)];
    let (s, periods) = series(&levels, 0.0);
    let w = workload(four_pods(Some(0.5)), None, 3000);
    let (findings, _) = decide(&w, Some(&s), &periods, &flapping_for_five_hours(), now());
    let imbalance = finding(&findings, FindingId::PodImbalance);
    assert_eq!(imbalance.verdict, Verdict::Refuted);
    assert!(
        imbalance.summary.starts_with("No pod is busy") && !imbalance.summary.contains("saturat"),
        "{}",
        imbalance.summary
    );
}

#[test]
fn restarts_long_before_the_breach_are_ruled_out_and_a_new_pod_is_turnover_not_a_restart() {
    let (s, periods) = series(&[("a", 0.5), ("b", 0.5), ("c", 0.5), ("d", 0.5)], 0.0);
    let mut pods = four_pods(Some(1.0));
    pods[0].restarts = 2;
    pods[0].lifecycle.last_termination = Some(crate::evidence::workload::Termination {
        container: "app".into(),
        reason: "Error".into(),
        exit_code: 1,
        finished_at: Some(now() - Duration::days(3)),
    });
    let sustained = sustained_since(now() - Duration::minutes(20));
    let w = workload(pods.clone(), None, 3000);
    let (findings, _) = decide(&w, Some(&s), &periods, &sustained, now());
    assert_eq!(
        finding(&findings, FindingId::PodRestarts).verdict,
        Verdict::Refuted
    );
    // A pod started 12 minutes ago, before the breach began, was added by
    // a controller (a scale-out, a replacement): new, not restarted.
    pods[3].created = Some(now() - Duration::minutes(12));
    let w = workload(pods.clone(), None, 3000);
    let (findings, _) = decide(&w, Some(&s), &periods, &sustained, now());
    let restarts = finding(&findings, FindingId::PodRestarts);
    assert_eq!(restarts.verdict, Verdict::Refuted, "{}", restarts.summary);
    assert!(restarts.summary.contains("not restarts"));
    assert!(
        restarts
            .ruled_out_by
            .as_deref()
            .is_some_and(|r| r.contains("a replacement or a scale-up")),
        "{:?}",
        restarts.ruled_out_by
    );
    // One started 5 minutes ago, after the breach began, is the HPA's reaction, not a cause.
    pods[3].created = Some(now() - Duration::minutes(5));
    let w = workload(pods, None, 3000);
    let (findings, _) = decide(&w, Some(&s), &periods, &sustained, now());
    let restarts = finding(&findings, FindingId::PodRestarts);
    assert_eq!(restarts.verdict, Verdict::Refuted, "{}", restarts.summary);
    assert!(
        restarts
            .evidence
            .iter()
            .any(|e| e.display_value().contains("a reaction")),
        "{:?}",
        restarts.evidence
    );
}

/// One ALARM transition `since` ago, after a day of OK.
fn sustained_since(since: DateTime<Utc>) -> Classification {
    let changes = vec![StateChange {
        at: since,
        from: crate::alarm::AlarmState::Ok,
        to: crate::alarm::AlarmState::Alarm,
    }];
    classify(
        &AlarmHistory::from_unordered(changes).complete_since(now() - Duration::hours(24)),
        crate::alarm::AlarmState::Alarm,
        AlarmTiming {
            period_seconds: 60,
            evaluation_periods: 5,
            datapoints_to_alarm: 5,
        },
        &ClassifierConfig::default(),
        now(),
    )
}

mod properties {
    //! The findings follow the physics, not the numbers of any one world:
    //! which pod is which, the scale of the CPU figures and a hotter hot pod
    //! never move a verdict the wrong way.

    use proptest::prelude::*;

    use super::*;

    fn rank(v: Verdict) -> i8 {
        match v {
            Verdict::Refuted => 0,
            Verdict::Inconclusive => 1,
            Verdict::Supported => 2,
        }
    }

    /// Pod names `p0..`, levels as given, each pod requesting `request` with `limit`.
    fn world(levels: &[f64], request: f64, limit: f64, throttled: f64) -> Vec<Finding> {
        named_world(levels, 0, request, limit, throttled)
    }

    /// As [`world`], with the names handed out rotated by `rotate`: the same
    /// pods (and samples) listed in another order.
    fn named_world(
        levels: &[f64],
        rotate: usize,
        request: f64,
        limit: f64,
        throttled: f64,
    ) -> Vec<Finding> {
        let names: Vec<String> = (0..levels.len())
            .map(|i| format!("p{}", (i + rotate) % levels.len()))
            .collect();
        let pairs: Vec<(&str, f64)> = names
            .iter()
            .map(String::as_str)
            .zip(levels.iter().copied())
            .collect();
        let (s, periods) = series(&pairs, throttled);
        let pods = names
            .iter()
            .map(|n| pod(n, Some(request), Some(limit), true))
            .collect();
        let w = workload(pods, Some(hpa(70, levels.len() as i32, 20)), 3000);
        decide(&w, Some(&s), &periods, &flapping_for_five_hours(), now()).0
    }

    fn verdicts(findings: &[Finding]) -> Vec<(String, Verdict)> {
        findings
            .iter()
            .map(|f| (f.id.as_str().to_owned(), f.verdict))
            .collect()
    }

    fn peers_and_hot() -> impl Strategy<Value = (Vec<f64>, f64)> {
        (prop::collection::vec(0.2f64..1.2, 1..7), 1.0f64..4.0).prop_map(|(peers, factor)| {
            let hot = peers.iter().copied().fold(0.0, f64::max) * factor;
            (peers, hot)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn permuting_the_pods_changes_no_verdict(
            (peers, hot) in peers_and_hot(),
            rotate in 0usize..7,
        ) {
            let mut levels = peers;
            levels.push(hot);
            let before = verdicts(&world(&levels, 1.0, 4.0, 0.0));
            let after = verdicts(&named_world(&levels, rotate, 1.0, 4.0, 0.0));
            prop_assert_eq!(before, after);
        }

        #[test]
        fn scaling_every_cpu_figure_keeps_the_imbalance_throttling_and_hpa_verdicts(
            (peers, hot) in peers_and_hot(),
            scale in 0.5f64..4.0,
            throttled in prop_oneof![Just(0.0), Just(0.3)],
        ) {
            let mut levels = peers.clone();
            levels.push(hot);
            let scaled: Vec<f64> = levels.iter().map(|v| v * scale).collect();
            let pick = |findings: Vec<Finding>| -> Vec<(String, Verdict)> {
                verdicts(&findings)
                    .into_iter()
                    .filter(|(id, _)| ["pods.imbalance", "pods.throttling", "hpa.cannot_react"].contains(&id.as_str()))
                    .collect()
            };
            let before = pick(world(&levels, 1.0, 4.0, throttled));
            let after = pick(world(&scaled, scale, 4.0 * scale, throttled));
            prop_assert_eq!(before, after);
        }

        #[test]
        fn scaling_by_whole_cores_keeps_the_worker_ceiling(
            level in prop_oneof![Just(0.97), Just(1.02), Just(1.5), Just(0.7)],
            count in 2usize..6,
            factor in 1u32..4,
        ) {
            let factor = f64::from(factor);
            let levels = vec![level; count];
            let scaled = vec![level * factor; count];
            let ceiling = |findings: &[Finding]| finding(findings, FindingId::WorkerCeiling).verdict;
            // A whole-core plateau stays whole when multiplied by whole cores.
            let before = ceiling(&world(&levels, 1.0, 8.0, 0.0));
            let after = ceiling(&world(&scaled, factor, 8.0 * factor, 0.0));
            if before == Verdict::Supported {
                prop_assert_eq!(after, Verdict::Supported);
            }
        }

        #[test]
        fn a_hotter_hot_pod_never_weakens_the_imbalance(
            (peers, hot) in peers_and_hot(),
            hotter in 1.0f64..3.0,
        ) {
            let imbalance = |hot: f64| {
                let mut levels = peers.clone();
                levels.push(hot);
                finding(&world(&levels, 1.0, 16.0, 0.0), FindingId::PodImbalance).verdict
            };
            let before = imbalance(hot);
            let after = imbalance(hot * hotter);
            // Refuted (pods together) may become anything; supported stays supported.
            if before == Verdict::Supported {
                prop_assert_eq!(after, Verdict::Supported);
            }
            if before == Verdict::Inconclusive {
                prop_assert!(rank(after) >= rank(before), "{:?} -> {:?}", before, after);
            }
        }
    }
}
