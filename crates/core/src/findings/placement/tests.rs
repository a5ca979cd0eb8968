use chrono::{Duration, TimeZone};
use proptest::prelude::*;

use super::*;
use crate::evidence::workload::{Condition, NeighbourPod};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 3, 14, 0, 0).unwrap()
}

fn breach() -> Vec<DateTime<Utc>> {
    (0..10).map(|i| now() - Duration::minutes(10 - i)).collect()
}

fn pod(name: &str, node: &str, ready: bool) -> PodInfo {
    PodInfo {
        name: name.into(),
        phase: "Running".into(),
        node: Some(node.into()),
        ready,
        restarts: 0,
        owner_replica_set: Some("web-abc".into()),
        created: None,
        ip: None,
        reason: None,
        containers: vec![],
        scheduling_messages: vec![],
        lifecycle: Default::default(),
    }
}

fn node(name: &str, zone: &str) -> NodeState {
    NodeState {
        name: name.into(),
        zone: Some(zone.into()),
        allocatable_cpu: Some(8.0),
        used_cpu: Some(2.0),
        ..NodeState::default()
    }
}

fn workload(pods: Vec<PodInfo>, placement: Vec<NodeState>) -> Workload {
    Workload {
        pods,
        placement,
        ..crate::fixtures::workload()
    }
}

/// Pods' CPU-waiting shares: (pod, before, during).
fn waiting(shares: &[(&str, f64, f64)]) -> PodSeries {
    let mut series = PodSeries::default();
    for (pod, before, during) in shares {
        let points = (0..30)
            .map(|i| {
                let t = now() - Duration::minutes(30 - i);
                (t, if t >= breach()[0] { *during } else { *before })
            })
            .collect();
        series.cpu_waiting.insert((*pod).to_owned(), points);
    }
    series
}

fn saturated_by_a_neighbour(mut n: NodeState) -> NodeState {
    n.used_cpu = Some(7.8);
    n.neighbours = vec![NeighbourPod {
        namespace: "batch".into(),
        name: "reindex-7d9f-x2x".into(),
        phase: "Running".into(),
        created: Some(now() - Duration::minutes(14)),
        cpu_request: Some(0.5),
        cpu_limit: None,
        used_cpu: Some(6.6),
        ..NeighbourPod::default()
    }];
    n
}

#[test]
fn starved_pods_on_a_node_a_neighbour_saturates_convict_the_node() {
    let w = workload(
        vec![
            pod("a", "n1", true),
            pod("b", "n1", true),
            pod("c", "n2", true),
        ],
        vec![saturated_by_a_neighbour(node("n1", "z1")), node("n2", "z2")],
    );
    let s = waiting(&[("a", 0.01, 0.4), ("b", 0.02, 0.35), ("c", 0.01, 0.01)]);
    let f = common_factor(&w, Some(&s), &breach(), &[]);
    assert_eq!(f.verdict, Verdict::Supported, "{}", f.summary);
    assert!(f.summary.contains("node n1"), "{}", f.summary);
    assert!(
        f.summary
            .contains("batch/reindex-7d9f-x2x uses 6.6 cores with no CPU limit"),
        "{}",
        f.summary
    );
    assert!(
        f.summary
            .contains("since 13:46 UTC, 4 min before the breach"),
        "{}",
        f.summary
    );
}

#[test]
fn a_node_the_bad_pods_share_but_that_shows_no_trouble_is_not_blamed() {
    let w = workload(
        vec![
            pod("a", "n1", true),
            pod("b", "n1", true),
            pod("c", "n2", true),
        ],
        vec![node("n1", "z1"), node("n2", "z2")],
    );
    let s = waiting(&[("a", 0.01, 0.4), ("b", 0.02, 0.35), ("c", 0.01, 0.01)]);
    let f = common_factor(&w, Some(&s), &breach(), &[]);
    assert_eq!(f.verdict, Verdict::Inconclusive, "{}", f.summary);
    assert!(f.cause.is_none());
}

#[test]
fn a_factor_good_pods_share_too_is_never_named() {
    // n1 holds a bad pod and a good one: the node does not set them apart.
    let mut n1 = saturated_by_a_neighbour(node("n1", "z1"));
    n1.conditions = vec![];
    let w = workload(
        vec![
            pod("a", "n1", false),
            pod("b", "n1", true),
            pod("c", "n2", true),
        ],
        vec![n1, node("n2", "z1")],
    );
    let f = common_factor(&w, None, &breach(), &[]);
    assert_ne!(f.verdict, Verdict::Supported, "{}", f.summary);
}

#[test]
fn unready_pods_all_in_one_zone_name_the_zone() {
    let w = workload(
        vec![
            pod("a", "n1", false),
            pod("b", "n2", false),
            pod("c", "n3", true),
            pod("d", "n4", true),
        ],
        vec![
            node("n1", "eu-west-1c"),
            node("n2", "eu-west-1c"),
            node("n3", "eu-west-1a"),
            node("n4", "eu-west-1b"),
        ],
    );
    let f = common_factor(&w, None, &breach(), &[]);
    assert_eq!(f.verdict, Verdict::Supported, "{}", f.summary);
    assert!(f.summary.contains("zone eu-west-1c"), "{}", f.summary);
}

#[test]
fn unhealthy_ip_targets_mark_their_pods_bad() {
    let mut a = pod("a", "n1", true);
    a.ip = Some("10.0.3.7".into());
    let mut n1 = node("n1", "z1");
    n1.conditions = vec![Condition {
        kind: "MemoryPressure".into(),
        status: "True".into(),
        reason: Some("KubeletHasInsufficientMemory".into()),
        message: None,
        since: Some(now() - Duration::minutes(12)),
    }];
    let w = workload(vec![a, pod("b", "n2", true)], vec![n1, node("n2", "z2")]);
    let targets = [TargetHealth {
        id: "10.0.3.7".into(),
        port: Some(8080),
        state: "unhealthy".into(),
        reason: Some("Target.Timeout".into()),
        description: None,
    }];
    let f = common_factor(&w, None, &breach(), &targets);
    assert_eq!(f.verdict, Verdict::Supported, "{}", f.summary);
    assert!(
        f.summary
            .contains("MemoryPressure=True (KubeletHasInsufficientMemory)"),
        "{}",
        f.summary
    );
}

#[test]
fn every_pod_bad_alike_is_the_service_not_a_place() {
    let w = workload(
        vec![pod("a", "n1", false), pod("b", "n2", false)],
        vec![node("n1", "z1"), node("n2", "z1")],
    );
    let f = common_factor(&w, None, &breach(), &[]);
    assert_eq!(f.verdict, Verdict::Refuted, "{}", f.summary);
}

proptest! {
    #[test]
    fn the_order_of_the_pods_changes_nothing(rotation in 0usize..4, reverse in any::<bool>()) {
        let mut pods = vec![
            pod("a", "n1", false),
            pod("b", "n2", false),
            pod("c", "n3", true),
            pod("d", "n4", true),
        ];
        pods.rotate_left(rotation);
        if reverse {
            pods.reverse();
        }
        let placement = vec![node("n1", "z3"), node("n2", "z3"), node("n3", "z1"), node("n4", "z2")];
        let f = common_factor(&workload(pods, placement.clone()), None, &breach(), &[]);
        let base = common_factor(
            &workload(
                vec![pod("a", "n1", false), pod("b", "n2", false), pod("c", "n3", true), pod("d", "n4", true)],
                placement,
            ),
            None,
            &breach(),
            &[],
        );
        prop_assert_eq!(f.verdict, base.verdict);
        prop_assert_eq!(f.cause, base.cause);
    }
}
