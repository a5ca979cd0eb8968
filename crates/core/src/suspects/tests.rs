use chrono::TimeZone;
use proptest::prelude::*;

use super::*;

fn breach_start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 14, 0, 0).unwrap()
}

fn minutes_before(m: i64) -> DateTime<Utc> {
    breach_start() - Duration::minutes(m)
}

fn change(kind: ChangeKind, minutes: i64, aspects: &[Aspect]) -> Change {
    let at = minutes_before(minutes);
    Change {
        kind,
        at,
        source: match kind {
            ChangeKind::TargetGroup
            | ChangeKind::Targets
            | ChangeKind::SecurityGroup
            | ChangeKind::Listener
            | ChangeKind::LoadBalancer
            | ChangeKind::NodeGroup => ChangeOrigin::CloudTrail,
            _ => ChangeOrigin::Kubernetes,
        },
        subject: match kind {
            ChangeKind::Rollout => "deployment shop/catalog".to_owned(),
            ChangeKind::ConfigMap => "configmap shop/catalog-config".to_owned(),
            ChangeKind::TargetGroup | ChangeKind::Targets => {
                "target group k8s-shop-catalog".to_owned()
            }
            _ => "something".to_owned(),
        },
        summary: "revision 38: image 1 -> 2".to_owned(),
        details: vec![],
        by: None,
        event: None,
        automatic: false,
        aspects: aspects.to_vec(),
        offset_seconds: Some((at - breach_start()).num_seconds()),
        most_plausible: false,
        elsewhere: false,
        lowered: Vec::new(),
    }
}

fn moved_at(minutes: i64) -> Onset {
    Onset::Moved {
        at: minutes_before(minutes),
        baseline: 0.1,
        level: 1.2,
        from_the_first_period: false,
    }
}

fn culprits() -> Vec<String> {
    vec!["k8s-shop-catalog".to_owned()]
}

fn scene<'a>(onset: Onset, groups: &'a [String]) -> Scene<'a> {
    Scene {
        family: MetricFamily::Latency,
        onset,
        symptom: "latency of k8s-shop-catalog".to_owned(),
        culprit_groups: groups,
        shared: false,
        workload: Some("shop/catalog"),
        limits: LimitsReached::default(),
    }
}

fn verdict(changes: &[Change], scene: &Scene<'_>) -> Vec<SuspectVerdict> {
    judge(changes, scene)
        .into_iter()
        .map(|(_, s)| s.verdict)
        .collect()
}

#[test]
fn a_rollout_the_symptom_followed_within_minutes_is_convicted() {
    let groups = culprits();
    let changes = [change(ChangeKind::Rollout, 12, &[Aspect::Image])];
    let judged = judge(&changes, &scene(moved_at(8), &groups));
    assert_eq!(judged[0].1.verdict, SuspectVerdict::Convicted, "{judged:?}");
    assert!(judged[0].1.reason.contains("began to move 4 min after it"));
}

#[test]
fn a_rollout_followed_by_a_long_flat_stretch_is_acquitted_by_its_onset() {
    let groups = culprits();
    let changes = [change(ChangeKind::Rollout, 52, &[Aspect::Environment])];
    let judged = judge(&changes, &scene(moved_at(14), &groups));
    let s = &judged[0].1;
    assert_eq!(s.verdict, SuspectVerdict::Acquitted);
    assert_eq!(s.onset.outcome, Outcome::Fail);
    assert_eq!(
        s.reason,
        "revision 38 of shop/catalog 52 min before: latency stayed at its usual level for 38 min after it"
    );
}

#[test]
fn a_change_after_the_symptom_began_is_acquitted() {
    let groups = culprits();
    let changes = [change(ChangeKind::Rollout, 15, &[Aspect::Image])];
    let judged = judge(&changes, &scene(moved_at(3 * 60), &groups));
    assert_eq!(judged[0].1.verdict, SuspectVerdict::Acquitted);
    assert!(
        judged[0]
            .1
            .onset
            .note
            .contains("began to move 2 h 45 min before it")
    );
}

#[test]
fn a_label_only_rollout_cannot_move_the_metric_whenever_it_came() {
    let groups = culprits();
    let changes = [change(ChangeKind::Rollout, 5, &[Aspect::Metadata])];
    let judged = judge(&changes, &scene(moved_at(2), &groups));
    assert_eq!(judged[0].1.verdict, SuspectVerdict::Acquitted);
    assert_eq!(judged[0].1.mechanism.outcome, Outcome::Fail);
}

#[test]
fn nothing_that_did_not_move_can_be_blamed_on_a_change() {
    let groups: Vec<String> = vec![];
    let changes = [change(ChangeKind::Rollout, 5, &[Aspect::Image])];
    let judged = judge(&changes, &scene(Onset::DidNotMove { level: 0.55 }, &groups));
    assert_eq!(judged[0].1.verdict, SuspectVerdict::Acquitted);
    assert!(judged[0].1.reason.contains("nothing moved"));
}

#[test]
fn a_reaction_is_never_a_cause_even_just_before_the_onset() {
    let groups = culprits();
    let mut scale_out = change(ChangeKind::Scaling, 15, &[Aspect::ScaleOut]);
    scale_out.automatic = true;
    let mut registered = change(ChangeKind::Targets, 3, &[Aspect::TargetMembership]);
    registered.automatic = true;
    let judged = judge(&[scale_out, registered], &scene(moved_at(2), &groups));
    for (_, s) in &judged {
        assert_eq!(s.verdict, SuspectVerdict::Acquitted, "{s:?}");
        assert!(s.mechanism.note.starts_with("a reaction"), "{s:?}");
    }
}

#[test]
fn a_config_map_edit_takes_effect_with_the_restart_that_applied_it() {
    let groups = culprits();
    // Edited 3 h before; the restart 20 min before applied it; latency moved 12 min before.
    let edit = change(ChangeKind::ConfigMap, 180, &[Aspect::Config]);
    let restart = change(ChangeKind::Rollout, 20, &[Aspect::Restart]);
    let judged = judge(&[edit, restart], &scene(moved_at(12), &groups));
    assert_eq!(judged[0].1.verdict, SuspectVerdict::Convicted, "{judged:?}");
    assert!(
        judged[0]
            .1
            .summary
            .contains("applied by the restart 2 h 40 min later")
    );
    // The restart only carried it.
    assert_eq!(judged[1].1.verdict, SuspectVerdict::Acquitted);
    assert!(
        judged[1]
            .1
            .mechanism
            .note
            .contains("onto the edit of configmap")
    );
}

#[test]
fn a_config_map_edit_no_restart_applied_and_long_before_is_acquitted() {
    let groups = culprits();
    let edit = change(ChangeKind::ConfigMap, 120, &[Aspect::Config]);
    let judged = judge(&[edit], &scene(moved_at(5), &groups));
    assert_eq!(judged[0].1.verdict, SuspectVerdict::Acquitted);
}

#[test]
fn a_lowered_limit_acts_when_demand_reaches_it_however_late() {
    let groups = culprits();
    let mut cap = change(ChangeKind::Scaling, 180, &[Aspect::Replicas]);
    let mut reached = scene(moved_at(15), &groups);
    reached.limits.replicas = true;
    // Raised, or not known to be lowered: the lag of its kind holds.
    assert_eq!(
        verdict(std::slice::from_ref(&cap), &reached),
        [SuspectVerdict::Acquitted]
    );
    cap.lowered = vec![Aspect::Replicas];
    assert_eq!(
        verdict(std::slice::from_ref(&cap), &reached),
        [SuspectVerdict::Convicted]
    );
    // Lowered, but the workload never reached it.
    reached.limits.replicas = false;
    assert_eq!(verdict(&[cap], &reached), [SuspectVerdict::Acquitted]);
}

#[test]
fn an_aws_change_on_another_group_is_acquitted_by_locality() {
    let groups = vec!["k8s-shop-orders".to_owned()];
    let changes = [change(ChangeKind::TargetGroup, 4, &[Aspect::HealthCheck])];
    let judged = judge(&changes, &scene(moved_at(2), &groups));
    assert_eq!(judged[0].1.verdict, SuspectVerdict::Acquitted);
    assert!(
        judged[0]
            .1
            .locality
            .note
            .contains("but k8s-shop-orders moved")
    );
}

#[test]
fn an_aws_change_the_symptom_followed_at_once_is_convicted() {
    let groups = culprits();
    let changes = [change(ChangeKind::TargetGroup, 9, &[Aspect::HealthCheck])];
    assert_eq!(
        verdict(&changes, &scene(moved_at(6), &groups)),
        [SuspectVerdict::Convicted]
    );
}

#[test]
fn a_rule_that_only_allows_traffic_is_acquitted_by_its_mechanism() {
    let groups = culprits();
    let changes = [change(
        ChangeKind::SecurityGroup,
        4,
        &[Aspect::NetworkAllowed],
    )];
    let judged = judge(&changes, &scene(moved_at(3), &groups));
    assert_eq!(judged[0].1.mechanism.outcome, Outcome::Fail);
}

#[test]
fn without_the_symptom_series_a_suspect_is_undecided_not_convicted() {
    let groups = culprits();
    let changes = [change(ChangeKind::Rollout, 10, &[Aspect::Image])];
    assert_eq!(
        verdict(&changes, &scene(Onset::Unknown, &groups)),
        [SuspectVerdict::Undecided]
    );
}

#[test]
fn a_change_after_the_symptom_began_is_judged_and_acquitted_by_its_onset() {
    let groups = culprits();
    let changes = [change(ChangeKind::Rollout, -10, &[Aspect::Image])];
    let judged = judge(&changes, &scene(moved_at(5), &groups));
    assert_eq!(judged[0].1.verdict, SuspectVerdict::Acquitted);
    assert_eq!(
        judged[0].1.onset.note,
        "latency began to move 15 min before it"
    );
}

#[test]
fn a_reaction_is_told_as_one_and_a_lost_node_is_a_suspect() {
    let groups = culprits();
    let mut scale_out = change(ChangeKind::Scaling, 40, &[Aspect::ScaleOut]);
    scale_out.automatic = true;
    let mut lost = change(ChangeKind::Capacity, 6, &[Aspect::Nodes]);
    lost.automatic = true;
    lost.summary = "SpotInterrupted x2: Spot interruption warning was triggered".to_owned();
    lost.details = vec!["Node/ip-10-30-2-118: Spot interruption warning was triggered".to_owned()];
    let judged = judge(&[scale_out, lost], &scene(moved_at(3), &groups));
    assert!(judged[0].1.reaction);
    assert!(
        judged[0]
            .1
            .reason
            .contains("a reaction (the HPA adding pods)"),
        "{}",
        judged[0].1.reason
    );
    assert!(!judged[1].1.reaction);
    assert_eq!(
        judged[1].1.verdict,
        SuspectVerdict::Convicted,
        "{:?}",
        judged[1].1
    );
    assert!(judged[1].1.summary.ends_with("on Node/ip-10-30-2-118"));
}

fn any_aspects() -> impl Strategy<Value = Vec<Aspect>> {
    prop::collection::vec(
        prop::sample::select(vec![
            Aspect::Image,
            Aspect::Environment,
            Aspect::Config,
            Aspect::CpuLimit,
            Aspect::Memory,
            Aspect::Probes,
            Aspect::Ports,
            Aspect::Replicas,
            Aspect::Restart,
            Aspect::Metadata,
        ]),
        1..4,
    )
}

proptest! {
    /// Moving an innocent change earlier than the onset by more than its
    /// lag never makes it a cause (limits the workload did not reach).
    #[test]
    fn a_change_long_before_the_onset_is_never_convicted(
        aspects in any_aspects(),
        onset in 0i64..300,
        extra in 21i64..300,
    ) {
        let groups = culprits();
        let changes = [change(ChangeKind::Rollout, onset + extra, &aspects)];
        let judged = judge(&changes, &scene(moved_at(onset), &groups));
        prop_assert_ne!(judged[0].1.verdict, SuspectVerdict::Convicted);
    }

    /// A revision that changed only labels never becomes a cause, and adding
    /// one to the timeline changes no other suspect's verdict.
    #[test]
    fn a_label_only_revision_changes_nothing(
        aspects in any_aspects(),
        at in 1i64..200,
        label_at in 1i64..200,
        onset in 0i64..200,
    ) {
        let groups = culprits();
        let s = scene(moved_at(onset), &groups);
        let real = change(ChangeKind::Rollout, at, &aspects);
        let mut label = change(ChangeKind::Rollout, label_at, &[Aspect::Metadata]);
        label.summary = "revision 39: label team a -> b".to_owned();
        let alone = verdict(std::slice::from_ref(&real), &s);
        let judged = judge(&[real, label], &s);
        prop_assert_eq!(judged[0].1.verdict, alone[0]);
        prop_assert_ne!(judged[1].1.verdict, SuspectVerdict::Convicted);
    }

    /// A reaction is never a cause, wherever it falls.
    #[test]
    fn a_reaction_is_never_convicted(at in -1i64..300, onset in 0i64..300) {
        let groups = culprits();
        let mut scale_out = change(ChangeKind::Scaling, at, &[Aspect::ScaleOut]);
        scale_out.automatic = true;
        let judged = judge(&[scale_out], &scene(moved_at(onset), &groups));
        prop_assert!(judged.iter().all(|(_, s)| s.verdict != SuspectVerdict::Convicted));
    }
}
