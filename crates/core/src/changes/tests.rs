use chrono::{Duration, TimeZone, Utc};

use super::*;
use crate::evidence::changes::{ClusterEvent, TrailEvent, TrailLookup};

fn breach() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap()
}

const GROUP: &str = "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/k8s-shop-cart-1a/0a";

fn path() -> RequestPath {
    RequestPath {
        load_balancer_arn: Some(
            "arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/k8s-shop/5d".into(),
        ),
        load_balancer_dimension: Some("app/k8s-shop/5d".into()),
        target_groups: [(GROUP.to_owned(), "k8s-shop-cart-1a".to_owned())].into(),
        security_groups: vec!["sg-alb".into()],
        cluster: None,
    }
}

fn trail(events: Vec<TrailEvent>) -> TrailEvidence {
    TrailEvidence {
        events,
        read: TrailLookup::ALL.to_vec(),
        ..TrailEvidence::default()
    }
}

/// A CloudTrail record of `name`, `minutes_before` the breach, with this record body.
fn trail_event(id: &str, name: &str, minutes_before: i64, record: serde_json::Value) -> TrailEvent {
    TrailEvent {
        id: id.into(),
        name: name.into(),
        at: breach() - Duration::minutes(minutes_before),
        source: "elasticloadbalancing.amazonaws.com".into(),
        username: None,
        resources: Vec::new(),
        record: Some(record.to_string()),
    }
}

fn health_check_edit(minutes_before: i64) -> TrailEvent {
    trail_event(
        &format!("hc-{minutes_before}"),
        "ModifyTargetGroup",
        minutes_before,
        serde_json::json!({
            "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::1:user/sam"},
            "readOnly": false,
            "requestParameters": {"targetGroupArn": GROUP, "healthCheckPath": "/health"},
        }),
    )
}

fn rescale(minutes_before: i64) -> ClusterEvent {
    ClusterEvent {
        component: "horizontal-pod-autoscaler".into(),
        object: "HorizontalPodAutoscaler/cart".into(),
        reason: "SuccessfulRescale".into(),
        message:
            "New size: 6; reason: cpu resource utilization (percentage of request) above target"
                .into(),
        count: 1,
        first_seen: Some(breach() - Duration::minutes(minutes_before)),
        last_seen: Some(breach() - Duration::minutes(minutes_before)),
    }
}

/// Judged against a latency symptom of the cart group that began
/// `onset_minutes_before` the breach, with these limits reached.
fn convict(
    timeline: &mut Timeline,
    onset_minutes_before: i64,
    limits: crate::suspects::LimitsReached,
) {
    let groups = vec!["k8s-shop-cart-1a".to_owned()];
    timeline.convict(&crate::suspects::Scene {
        family: crate::alarm::facts::MetricFamily::Latency,
        onset: crate::suspects::Onset::Moved {
            at: breach() - Duration::minutes(onset_minutes_before),
            baseline: 0.1,
            level: 1.0,
            from_the_first_period: false,
        },
        symptom: "latency of k8s-shop-cart-1a".to_owned(),
        culprit_groups: &groups,
        shared: false,
        workload: Some("shop/cart"),
        limits,
    });
}

fn timeline_of(trail_events: Vec<TrailEvent>, workload: Option<&Workload>) -> Timeline {
    let path = path();
    let trail = trail(trail_events);
    Timeline::build(Sources {
        workload,
        trail: Some(&trail),
        path: &path,
        breach_start: Some(breach()),
        now: breach() + Duration::minutes(20),
        fleet: &[],
    })
}

#[test]
fn changes_are_placed_against_the_breach_oldest_first_within_six_hours() {
    let timeline = timeline_of(
        vec![
            health_check_edit(10),
            health_check_edit(45),
            health_check_edit(7 * 60),
        ],
        None,
    );
    let offsets: Vec<Option<i64>> = timeline.changes.iter().map(|c| c.offset_seconds).collect();
    assert_eq!(offsets, [Some(-45 * 60), Some(-10 * 60)]);
    assert_eq!(timeline.changes[1].when(), "10 min before");
}

#[test]
fn the_change_that_touched_what_a_cause_is_about_is_the_most_plausible() {
    let mut workload = crate::fixtures::workload();
    workload.activity.scaling = vec![rescale(5)];
    let mut timeline = timeline_of(vec![health_check_edit(10)], Some(&workload));
    convict(&mut timeline, 8, Default::default());
    let chosen = timeline.most_plausible().unwrap();
    assert_eq!(chosen.kind, ChangeKind::TargetGroup);
    assert_eq!(
        timeline.headline().unwrap(),
        "Changed 10 min before the breach: target group k8s-shop-cart-1a: health-check path -> /health"
    );
}

#[test]
fn a_change_after_the_breach_began_is_never_the_most_plausible() {
    let mut timeline = timeline_of(vec![health_check_edit(-5)], None);
    convict(&mut timeline, 0, Default::default());
    assert!(timeline.most_plausible().is_none());
}

#[test]
fn with_nothing_changed_the_headline_says_so_and_names_only_reactions() {
    let mut workload = crate::fixtures::workload();
    workload.activity.scaling = vec![rescale(30)];
    let mut timeline = timeline_of(Vec::new(), Some(&workload));
    convict(&mut timeline, 10, Default::default());
    assert_eq!(
        timeline.headline().unwrap(),
        "No change in the 6 h before the breach; only the cluster reacting once, acquitted as a reaction (see Changes)"
    );
}

#[test]
fn with_neither_side_read_nothing_is_claimed() {
    let path = path();
    let timeline = Timeline::build(Sources {
        workload: None,
        trail: None,
        path: &path,
        breach_start: Some(breach()),
        now: breach(),
        fleet: &[],
    });
    assert_eq!(timeline.headline(), None);
}

#[test]
fn a_recent_breach_warns_that_cloudtrail_lags() {
    let path = path();
    let trail = trail(Vec::new());
    let timeline = Timeline::build(Sources {
        workload: None,
        trail: Some(&trail),
        path: &path,
        breach_start: Some(breach()),
        now: breach() + Duration::minutes(4),
        fleet: &[],
    });
    assert!(timeline.notes[0].contains("5 to 15 minutes"));
}

fn registration(id: &str, minutes_before: i64, verb: &str) -> TrailEvent {
    trail_event(
        id,
        verb,
        minutes_before,
        serde_json::json!({
            "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/lbc/1"},
            "userAgent": "elbv2.k8s.aws/v2.7.1 aws-sdk-go/1.50",
            "readOnly": false,
            "requestParameters": {"targetGroupArn": GROUP, "targets": [{"id": "10.0.0.1", "port": 80}]},
        }),
    )
}

#[test]
fn the_controller_following_a_rollout_is_one_change_not_one_per_pod() {
    let timeline = timeline_of(
        vec![
            registration("a", 60, "RegisterTargets"),
            registration("b", 59, "DeregisterTargets"),
            registration("c", 58, "RegisterTargets"),
            registration("d", 57, "DeregisterTargets"),
            registration("e", 20, "RegisterTargets"),
        ],
        None,
    );
    let summaries: Vec<&str> = timeline
        .changes
        .iter()
        .map(|c| c.summary.as_str())
        .collect();
    assert_eq!(
        summaries,
        [
            "2 targets registered, 2 deregistered (the controller following the pods)",
            "1 target registered (10.0.0.1)"
        ]
    );
}

#[test]
fn a_change_hours_before_the_onset_stays_in_the_timeline_but_is_acquitted() {
    let mut timeline = timeline_of(vec![health_check_edit(3 * 60)], None);
    convict(&mut timeline, 10, Default::default());
    assert_eq!(timeline.changes.len(), 1);
    assert!(timeline.most_plausible().is_none());
    assert_eq!(
        timeline.headline().unwrap(),
        "No change convicted: 1 change before the breach was acquitted; the last, target group k8s-shop-cart-1a 3 h 00 min before: latency stayed at its usual level for 2 h 50 min after it"
    );
}

#[test]
fn a_lowered_hpa_maximum_hours_before_the_peak_is_the_change_behind_an_hpa_at_its_limit() {
    use crate::evidence::changes::FieldEdit;
    use crate::evidence::workload::HpaInfo;
    let mut workload = crate::fixtures::workload();
    workload.hpa = Some(HpaInfo {
        name: "search-api".into(),
        api_version: "autoscaling/v2".into(),
        created_as_v1: false,
        min_replicas: Some(2),
        max_replicas: 4,
        target_cpu_utilization: Some(70),
        other_metrics: vec![],
        current_replicas: Some(4),
        desired_replicas: Some(4),
        current_cpu_utilization: Some(147),
        conditions: vec![],
        scale_down: None,
        // Older than the two hours a deploy stays plausible: the limit
        // bit only when the midday peak reached it.
        spec_edit: Some(FieldEdit {
            at: breach() - Duration::minutes(165),
            fields: vec!["maxReplicas".into()],
            manager: Some("kubectl-patch".into()),
        }),
    });
    let mut timeline = timeline_of(Vec::new(), Some(&workload));
    convict(
        &mut timeline,
        15,
        crate::suspects::LimitsReached {
            replicas: true,
            ..Default::default()
        },
    );
    let chosen = timeline.most_plausible().expect("the HPA edit");
    assert_eq!(chosen.kind, ChangeKind::Scaling);
    assert!(!chosen.automatic);
    assert_eq!(
        timeline.headline().unwrap(),
        "Changed 2 h 45 min before the breach: HPA search-api: spec edited: maxReplicas (now 4)"
    );
}
