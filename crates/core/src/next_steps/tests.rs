use chrono::TimeZone;

use super::rules::*;
use super::*;
use crate::alarm::{AlarmNotification, AlarmState};
use crate::classify::{AlarmTiming, Behaviour, ClassifierConfig, classify};
use crate::diagnosis::finding::{CeilingFacts, HpaBounds, HpaFacts, ImbalanceFacts, PodCpu};
use crate::diagnosis::summary::PodSummary;
use crate::history::AlarmHistory;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
}

fn alarm(statistic: &str, dimensions: &str) -> AlarmFacts {
    let notification: AlarmNotification = serde_json::from_str(&format!(
        r#"{{"AlarmName":"shop latency","AWSAccountId":"111122223333","NewStateValue":"ALARM",
            "OldStateValue":"OK","StateChangeTime":"2026-11-29T11:58:00.000+0000",
            "AlarmArn":"arn:aws:cloudwatch:eu-west-1:111122223333:alarm:shop latency",
            "Trigger":{{"MetricName":"TargetResponseTime","Namespace":"AWS/ApplicationELB",
            "Statistic":"{statistic}","Dimensions":[{dimensions}],"Period":60,
            "EvaluationPeriods":3,"ComparisonOperator":"GreaterThanThreshold","Threshold":1.0}}}}"#
    ))
    .unwrap();
    AlarmFacts::from_notification(&notification)
}

fn alb_alarm() -> AlarmFacts {
    alarm(
        "Average",
        r#"{"name":"LoadBalancer","value":"app/shop/0123456789abcdef"}"#,
    )
}

fn classification(behaviour: Behaviour) -> Classification {
    let timing = AlarmTiming {
        period_seconds: 60,
        evaluation_periods: 3,
        datapoints_to_alarm: 3,
    };
    let mut c = classify(
        &AlarmHistory::default(),
        AlarmState::Alarm,
        timing,
        &ClassifierConfig::default(),
        now(),
    );
    c.behaviour = behaviour;
    c
}

/// A finding as the roles step leaves it when the pods are saturated: a
/// supported finding is a cause, a refuted one is ruled out.
fn finding(id: FindingId, verdict: Verdict, facts: Facts) -> Finding {
    Finding {
        ruled_out_by: None,
        role: match verdict {
            Verdict::Supported => Role::Cause,
            Verdict::Refuted => Role::RuledOut,
            Verdict::Inconclusive => Role::Context,
        },
        id,
        hypothesis: String::new(),
        verdict,
        summary: "the finding's summary".to_owned(),
        cause: None,
        evidence: vec![],
        series: vec![],
        facts,
    }
}

fn pod(name: &str, node: &str) -> PodSummary {
    PodSummary {
        name: name.to_owned(),
        node: Some(node.to_owned()),
        phase: "Running".to_owned(),
        ready: true,
        restarts: 0,
        cpu_request: Some(1.0),
        cpu_limit: None,
        cpu_while_breaching: Some(1.0),
        last_termination: None,
        running_since: None,
    }
}

fn workload(pods: Vec<PodSummary>) -> WorkloadSummary {
    WorkloadSummary {
        cluster: Some("prod".to_owned()),
        namespace: "shop".to_owned(),
        service: "web".to_owned(),
        mapped_by: "target_group_binding".to_owned(),
        deployment: Some("web".to_owned()),
        replicas: Some(pods.len() as i32),
        last_rollout: None,
        hpa: Some("web".to_owned()),
        pods,
        series_origin: None,
    }
}

/// Runs one rule over the findings, with a three-pod workload on two nodes.
fn run(rule: Rule, findings: &[Finding]) -> Option<NextStep> {
    let w = workload(vec![
        pod("web-a", "n1"),
        pod("web-b", "n1"),
        pod("web-c", "n2"),
    ]);
    run_with(rule, findings, Some(&w))
}

fn run_with(rule: Rule, findings: &[Finding], w: Option<&WorkloadSummary>) -> Option<NextStep> {
    let alarm = alb_alarm();
    let classification = classification(Behaviour::Flapping);
    rule(&Context {
        alarm: &alarm,
        classification: &classification,
        findings,
        target_groups: &[],
        workload: w,
        changes: &[],
        now: now(),
    })
}

fn ceiling(plateau_cores: f64, workers_per_pod: u32, limit_cores: Option<f64>) -> Finding {
    finding(
        FindingId::WorkerCeiling,
        Verdict::Supported,
        Facts::Ceiling(CeilingFacts {
            plateau_cores,
            workers_per_pod,
            busy_pods: 3,
            limit_cores,
        }),
    )
}

fn hpa(bounds: Option<HpaBounds>, peak: Option<f64>, request: Option<f64>) -> Finding {
    finding(
        FindingId::HpaCannotReact,
        Verdict::Supported,
        Facts::Hpa(HpaFacts {
            bounds,
            target_utilisation: Some(70),
            peak_utilisation: peak,
            request_cores: request,
            blocked: None,
        }),
    )
}

fn bounds(current: u32, max: u32) -> Option<HpaBounds> {
    Some(HpaBounds {
        name: "web".to_owned(),
        min_replicas: 2,
        max_replicas: max,
        current_replicas: Some(current),
    })
}

#[test]
fn doubling_two_workers_needs_twice_the_per_worker_plateau_not_the_per_pod_one() {
    // 1.9 cores over 2 workers: 0.95 a worker; 4 workers need 3.8 cores,
    // plus a quarter is 4.75, already on a quarter core.
    let sizing = cores_for_workers(1.9, 2, 4);
    assert!((sizing.cores_per_worker - 0.95).abs() < 1e-9);
    assert!((sizing.cores_needed - 3.8).abs() < 1e-9, "{sizing:?}");
    assert_eq!(sizing.limit_millicores, 4750);
    // 0.98 cores, one worker: 2 need 1.96 cores; plus a quarter is 2.45, up to 2.5.
    let sizing = cores_for_workers(0.98, 1, 2);
    assert!((sizing.cores_needed - 1.96).abs() < 1e-9, "{sizing:?}");
    assert_eq!(sizing.limit_millicores, 2500);
}

#[test]
fn two_workers_per_pod_are_called_two_and_a_limit_that_covers_them_is_kept() {
    let step = run(more_workers_per_pod, &[ceiling(1.9, 2, Some(5.0))]).unwrap();
    assert_eq!(
        step.proposal,
        "Run more workers per pod in web (e.g. 4 instead of 2) and size the CPU limit to match"
    );
    assert!(
        step.rationale
            .contains("2 CPU-bound workers serve 2 heavy requests at a time"),
        "{}",
        step.rationale
    );
    let trade_offs = step.trade_offs.unwrap();
    assert!(
        trade_offs
            .starts_with("4 workers need about 3.8 cores at peak (4 x 0.95 cores per worker)"),
        "{trade_offs}"
    );
    assert!(
        trade_offs.contains("the current 5-core limit already covers that with headroom"),
        "{trade_offs}"
    );
    // A 4-core limit fits 3.8 cores but not the headroom: a new limit is sized.
    let step = run(more_workers_per_pod, &[ceiling(1.9, 2, Some(4.0))]).unwrap();
    let trade_offs = step.trade_offs.unwrap();
    assert!(
        trade_offs.contains("set the limit to 4750m (3.8 cores plus 25 % headroom)"),
        "{trade_offs}"
    );
}

#[test]
fn one_worker_without_a_limit_gets_a_limit_sized_for_the_new_workers() {
    let step = run(more_workers_per_pod, &[ceiling(0.98, 1, None)]).unwrap();
    assert!(step.proposal.contains("e.g. 2 instead of 1"));
    assert!(
        step.rationale
            .contains("one CPU-bound worker serves one heavy request at a time"),
        "{}",
        step.rationale
    );
    assert!(
        step.trade_offs
            .unwrap()
            .contains("set the limit to 2500m (2.0 cores plus 25 % headroom)")
    );
}

#[test]
fn no_worker_step_without_the_workload_or_a_supported_ceiling() {
    assert!(run_with(more_workers_per_pod, &[ceiling(1.9, 2, None)], None).is_none());
    let refuted = finding(FindingId::WorkerCeiling, Verdict::Refuted, Facts::None);
    assert!(run(more_workers_per_pod, &[refuted]).is_none());
}

#[test]
fn without_an_hpa_the_step_proposes_one_and_never_describes_a_missing_hpa() {
    let step = run(let_the_hpa_react, &[hpa(None, None, Some(1.0))]).unwrap();
    assert_eq!(step.proposal, "Consider an HPA for web");
    assert!(
        step.commands
            .iter()
            .all(|c| !c.text.contains("describe hpa"))
    );
    assert_eq!(step.commands[0].text, "kubectl -n shop get hpa");
}

#[test]
fn an_hpa_at_its_maximum_gets_max_replicas_not_a_lower_target() {
    let step = run(
        let_the_hpa_react,
        &[hpa(bounds(6, 6), Some(40.0), Some(1.0))],
    )
    .unwrap();
    assert!(
        step.proposal
            .starts_with("Raise the HPA's maxReplicas: it is at its maximum of 6"),
        "{}",
        step.proposal
    );
    // Over its target at the maximum, the replicas the HPA would want are named.
    let step = run(
        let_the_hpa_react,
        &[hpa(bounds(6, 6), Some(105.0), Some(1.0))],
    )
    .unwrap();
    assert!(
        step.proposal.starts_with(
            "Raise the HPA's maxReplicas to about 9 (105 % utilisation against its 70 % target)"
        ),
        "{}",
        step.proposal
    );
}

#[test]
fn replicas_for_a_utilisation_follow_the_hpa_formula_and_add_at_least_one() {
    assert_eq!(replicas_for(6, 105.0, 70), 9);
    assert_eq!(replicas_for(4, 71.0, 70), 5);
    assert_eq!(replicas_for(4, 50.0, 70), 5);
}

#[test]
fn an_hpa_that_is_only_context_gets_no_step() {
    let mut context_only = hpa(bounds(3, 10), Some(36.0), Some(1.0));
    context_only.role = Role::Context;
    assert!(run(let_the_hpa_react, &[context_only]).is_none());
}

#[test]
fn a_restarted_pod_gets_its_previous_logs_and_an_oomkill_its_memory() {
    use crate::diagnosis::finding::{PodTurnover, RestartFacts};
    let restarts = finding(
        FindingId::PodRestarts,
        Verdict::Supported,
        Facts::Restarts(RestartFacts {
            pods: vec![PodTurnover {
                pod: "web-b".to_owned(),
                restarts: 1,
                reason: "OOMKilled".to_owned(),
                container: Some("app".to_owned()),
            }],
        }),
    );
    let step = run(find_why_pods_restarted, &[restarts]).unwrap();
    assert_eq!(
        step.proposal,
        "Find out why web-b was OOMKilled: read its previous container's logs and its events"
    );
    assert_eq!(
        step.commands[0].text,
        "kubectl -n shop logs web-b -c app --previous --tail=200"
    );
    assert!(
        step.commands
            .iter()
            .any(|c| c.text.contains("memory_working_set"))
    );
}

#[test]
fn steps_follow_the_causes_in_causal_order_and_context_gets_none() {
    let decided = Decided {
        findings: vec![
            finding(
                FindingId::ReadinessProbeMissing,
                Verdict::Supported,
                Facts::None,
            ),
            hpa(bounds(6, 6), Some(105.0), Some(1.0)),
            finding(FindingId::CpuThrottling, Verdict::Supported, Facts::None),
            finding(FindingId::RecentDeploy, Verdict::Supported, Facts::None),
        ]
        .into_iter()
        .map(|mut f| {
            if f.id == FindingId::ReadinessProbeMissing {
                f.role = Role::Context;
            }
            f
        })
        .collect(),
        workload: Some(workload(vec![pod("web-a", "n1")])),
        ..Decided::default()
    };
    let steps = propose(
        &alb_alarm(),
        &classification(Behaviour::Sustained),
        &decided,
        ReportKind::Diagnosis,
        now(),
    );
    let firsts: Vec<&str> = steps
        .iter()
        .map(|s| s.proposal.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(firsts[..3], ["Compare", "Give", "Raise"], "{steps:#?}");
    assert!(
        !steps.iter().any(|s| s.proposal.contains("readiness probe")),
        "a missing readiness probe is context here: no step\n{steps:#?}"
    );
}

#[test]
fn a_target_the_pods_can_reach_is_three_quarters_of_the_peak_in_fives() {
    assert_eq!(reachable_target(40.0), 30);
    assert_eq!(reachable_target(66.0), 45);
    assert_eq!(reachable_target(3.0), 5);
    let step = run(
        let_the_hpa_react,
        &[hpa(bounds(3, 10), Some(40.0), Some(1.0))],
    )
    .unwrap();
    assert_eq!(
        step.proposal,
        "Lower the HPA's CPU target to about 30 % so that the 40 % the pods can reach triggers scaling"
    );
}

#[test]
fn pods_without_a_cpu_request_are_asked_for_one() {
    let step = run(let_the_hpa_react, &[hpa(bounds(3, 10), None, None)]).unwrap();
    assert_eq!(
        step.proposal,
        "Set CPU requests on web's containers so the HPA can compute utilisation"
    );
}

fn imbalance(busiest: Option<&str>) -> Finding {
    finding(
        FindingId::PodImbalance,
        Verdict::Supported,
        Facts::Imbalance(ImbalanceFacts {
            busiest: busiest.map(|pod| PodCpu {
                pod: pod.to_owned(),
                cores: 2.5,
            }),
            hot: busiest
                .map(|pod| PodCpu {
                    pod: pod.to_owned(),
                    cores: 2.5,
                })
                .into_iter()
                .collect(),
            hot_over_peers: 2.5,
            peers_spread: 0.05,
        }),
    )
}

#[test]
fn a_hot_pod_overrides_the_hpa_target_advice() {
    let step = run(
        let_the_hpa_react,
        &[
            hpa(bounds(3, 10), Some(40.0), Some(1.0)),
            imbalance(Some("web-b")),
        ],
    )
    .unwrap();
    assert!(step.proposal.starts_with("Do not count on the HPA here"));
}

#[test]
fn the_hot_pod_step_names_the_busiest_pod_from_the_facts() {
    let step = run(look_at_the_hot_pod, &[imbalance(Some("web-b"))]).unwrap();
    assert_eq!(
        step.proposal,
        "Find out why web-b runs hotter than its peers"
    );
    assert_eq!(step.commands[0].text, "kubectl -n shop describe pod web-b");
    assert!(run(look_at_the_hot_pod, &[imbalance(None)]).is_none());
}

#[test]
fn pods_are_spread_only_when_several_share_a_node() {
    let findings = [ceiling(1.0, 1, None)];
    assert!(run(spread_pods_across_nodes, &findings).is_some());
    let one = workload(vec![pod("web-a", "n1")]);
    assert!(run_with(spread_pods_across_nodes, &findings, Some(&one)).is_none());
    let apart = workload(vec![pod("a", "n1"), pod("b", "n2"), pod("c", "n3")]);
    assert!(run_with(spread_pods_across_nodes, &findings, Some(&apart)).is_none());
}

#[test]
fn workload_rules_stay_silent_without_a_workload() {
    let findings = [
        ceiling(1.9, 2, None),
        hpa(None, None, None),
        imbalance(Some("web-b")),
        finding(FindingId::CpuThrottling, Verdict::Supported, Facts::None),
        finding(
            FindingId::ReadinessProbeMissing,
            Verdict::Supported,
            Facts::None,
        ),
        finding(FindingId::RecentDeploy, Verdict::Supported, Facts::None),
        finding(FindingId::PendingPods, Verdict::Supported, Facts::None),
    ];
    for (subject, rule) in &RULES {
        if subject.is_some() {
            assert!(run_with(*rule, &findings, None).is_none());
        }
    }
}

#[test]
fn a_load_balancer_wide_alarm_without_a_breakdown_gets_one_by_hand() {
    let step = run(break_down_per_target_group, &[]).unwrap();
    assert!(step.commands.iter().any(|c| c.text.contains("SEARCH(")));
    assert!(step.commands[0].text.contains("--names shop"));
}

#[test]
fn a_recovery_with_a_cause_proposes_what_keeps_it_from_repeating_first() {
    let steps = steps_for_low_traffic(Behaviour::Transient, ReportKind::Resolution);
    assert_eq!(steps.len(), 2, "{steps:#?}");
    assert!(
        steps[0]
            .proposal
            .starts_with("Treat this breach as a low-traffic artifact")
    );
    assert!(steps[1].rationale.contains("its cause is still there"));
}

#[test]
fn a_recovery_gets_one_step_and_an_unknown_alarm_gets_the_history() {
    let alarm = alarm("Maximum", r#"{"name":"QueueName","value":"jobs"}"#);
    let decided = Decided::default();
    let steps = propose(
        &alarm,
        &classification(Behaviour::Recovered),
        &decided,
        ReportKind::Resolution,
        now(),
    );
    assert_eq!(steps.len(), 1);
    assert!(
        steps[0]
            .proposal
            .starts_with("Confirm that the recovery holds")
    );
    let steps = propose(
        &alarm,
        &classification(Behaviour::Sustained),
        &decided,
        ReportKind::Diagnosis,
        now(),
    );
    assert_eq!(steps.len(), 1);
    assert!(
        steps[0]
            .proposal
            .starts_with("Read the alarm's recent history")
    );
}

#[test]
fn the_step_on_the_cause_comes_before_dating_the_flapping() {
    let steps = steps_for_low_traffic(Behaviour::Flapping, ReportKind::Diagnosis);
    assert!(
        steps[0]
            .proposal
            .starts_with("Treat this breach as a low-traffic artifact"),
        "{steps:#?}"
    );
    assert!(
        steps[1]
            .proposal
            .starts_with("Date the start of the flapping")
    );
}

#[test]
fn sizes_are_rounded_to_quarter_cores_in_the_safe_direction() {
    assert_eq!(quarter_cores_up(0.99), "1");
    assert_eq!(quarter_cores_up(1.01), "1.25");
    // 1.95 cores at an 80 % target: 1.95 / 0.88 = 2.2, down to 2.0 cores.
    assert!((request_for_target(1.95, 80) - 2.0).abs() < 1e-9);
}

#[test]
fn pods_using_more_than_they_request_are_told_to_raise_the_request() {
    use crate::diagnosis::finding::ThrottlingFacts;
    let throttled = finding(
        FindingId::CpuThrottling,
        Verdict::Supported,
        Facts::Throttling(ThrottlingFacts {
            worst_throttled_share: 0.35,
            pods_at_limit: vec!["web-a".to_owned()],
            limit_cores: Some(1.0),
            request_cores: Some(0.5),
            peak_cores: Some(0.99),
        }),
    );
    let step = run(more_cpu_headroom, std::slice::from_ref(&throttled)).unwrap();
    assert!(
        step.proposal
            .contains("raise the request from 0.5 toward 1 cores"),
        "{}",
        step.proposal
    );
    // At its maximum while the limit caps usage, the replica count is a floor.
    let step = run(
        let_the_hpa_react,
        &[hpa(bounds(6, 6), Some(198.0), Some(0.5)), throttled],
    )
    .unwrap();
    assert!(
        step.proposal.contains("to at least 17 (198 % utilisation"),
        "{}",
        step.proposal
    );
}

fn with_evidence(mut f: Finding, evidence: &[(&str, f64)]) -> Finding {
    f.evidence = evidence
        .iter()
        .map(|(name, value)| crate::diagnosis::Evidence::number(name, *value, "s"))
        .collect();
    f
}

#[test]
fn an_average_pushed_over_by_a_slow_minority_gets_a_statistic_that_minority_cannot_dominate() {
    // Long polls: over 1 % of requests take 25 s, so p99 would fire too.
    let long_polls = with_evidence(
        finding(FindingId::LatencyOutliers, Verdict::Supported, Facts::None),
        &[("p99 while breaching (median)", 25.0)],
    );
    let step = run(reconsider_the_alarms_statistic, &[long_polls]).unwrap();
    assert!(step.proposal.contains("p90"), "{}", step.proposal);
    assert!(!step.proposal.contains("p99"), "{}", step.proposal);
    // A handful of slow requests under 1 %: a trimmed mean leaves them out.
    let few = with_evidence(
        finding(FindingId::LatencyOutliers, Verdict::Supported, Facts::None),
        &[("p99 while breaching (median)", 0.6)],
    );
    let step = run(reconsider_the_alarms_statistic, &[few]).unwrap();
    assert!(step.proposal.contains("tm99"), "{}", step.proposal);
    // Broad slowness says nothing about the statistic.
    let broad = finding(FindingId::LatencyOutliers, Verdict::Refuted, Facts::None);
    assert!(run(reconsider_the_alarms_statistic, &[broad]).is_none());
}

#[test]
fn least_outstanding_requests_is_proposed_for_latency_only() {
    let findings = [
        finding(FindingId::PodImbalance, Verdict::Supported, Facts::None),
        finding(
            FindingId::LeastOutstandingRequests,
            Verdict::Supported,
            Facts::None,
        ),
    ];
    let groups = [crate::diagnosis::summary::TargetGroupSummary {
        name: "k8s-shop-web".into(),
        arn: "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/k8s-shop-web/1".into(),
        target_type: "ip".into(),
        culprit: true,
        ..Default::default()
    }];
    let classification = classification(Behaviour::Sustained);
    let latency = alb_alarm();
    let mut errors = alb_alarm();
    errors.watched.as_mut().unwrap().name = "HTTPCode_Target_5XX_Count".into();
    let step = |alarm: &AlarmFacts| {
        consider_least_outstanding_requests(&Context {
            alarm,
            classification: &classification,
            findings: &findings,
            target_groups: &groups,
            workload: None,
            changes: &[],
            now: now(),
        })
    };
    assert!(step(&latency).is_some());
    assert!(step(&errors).is_none(), "routing does not stop 5xx");
}

#[test]
fn node_launches_failing_for_capacity_ask_for_flexibility_not_a_higher_limit() {
    let mut blocked = finding(FindingId::NodesBlocked, Verdict::Supported, Facts::None);
    blocked.summary = "6 pod(s) pending and the cluster cannot grow: NodeClaim default-x7k2p did not reach Launched (InsufficientCapacityError).".into();
    blocked.evidence = vec![crate::diagnosis::Evidence::text(
        "NodeClaim default-x7k2p",
        "Launched not true: InsufficientCapacityError".to_owned(),
    )];
    let step = run(
        super::errors_and_capacity::see_why_nodes_are_not_added,
        std::slice::from_ref(&blocked),
    )
    .unwrap();
    assert!(
        step.proposal.contains("instance types"),
        "{}",
        step.proposal
    );
    blocked.summary =
        "6 pod(s) pending and the cluster cannot grow: NodePool general is at its cpu limit."
            .into();
    blocked.evidence.clear();
    let step = run(
        super::errors_and_capacity::see_why_nodes_are_not_added,
        std::slice::from_ref(&blocked),
    )
    .unwrap();
    assert!(
        step.proposal.starts_with("Raise the capacity"),
        "{}",
        step.proposal
    );
}

#[test]
fn new_pods_at_their_limit_after_a_rollout_get_warm_up_advice_and_old_ones_do_not() {
    let rollout = now() - chrono::Duration::minutes(8);
    let mut w = workload(vec![pod("web-new", "n1"), pod("web-old", "n2")]);
    w.last_rollout = Some(rollout);
    w.pods[0].running_since = Some(rollout + chrono::Duration::minutes(1));
    w.pods[1].running_since = Some(rollout - chrono::Duration::days(3));
    let throttled = |pods: &[&str]| {
        finding(
            FindingId::CpuThrottling,
            Verdict::Supported,
            Facts::Throttling(crate::diagnosis::finding::ThrottlingFacts {
                worst_throttled_share: 0.4,
                pods_at_limit: pods.iter().map(|p| (*p).to_owned()).collect(),
                limit_cores: Some(1.0),
                request_cores: Some(0.5),
                peak_cores: Some(1.0),
            }),
        )
    };
    let deploy = finding(FindingId::RecentDeploy, Verdict::Supported, Facts::None);
    let step = run_with(
        warm_up_new_pods,
        &[deploy.clone(), throttled(&["web-new"])],
        Some(&w),
    )
    .unwrap();
    assert!(step.proposal.contains("warm up"), "{}", step.proposal);
    assert!(step.rationale.contains("web-new"));
    assert!(
        run_with(
            warm_up_new_pods,
            &[deploy, throttled(&["web-old"])],
            Some(&w)
        )
        .is_none()
    );
}

#[test]
fn nothing_changed_points_at_the_threshold_with_read_only_commands() {
    let nothing = finding(
        FindingId::ThresholdInsideNormalRange,
        Verdict::Supported,
        Facts::None,
    );
    let step = run(revisit_the_threshold, std::slice::from_ref(&nothing)).unwrap();
    assert!(step.proposal.contains("threshold"));
    assert!(
        step.commands
            .iter()
            .all(|c| c.text.starts_with("aws cloudwatch describe-")
                || c.text.starts_with("aws cloudwatch get-metric-statistics"))
    );
    assert!(
        step.commands
            .iter()
            .any(|c| c.text.contains("--period 3600"))
    );
    // ... and the generic p99 advice stays out of its way.
    assert!(run(alarm_on_p99_per_target_group, &[nothing]).is_none());
}

#[test]
fn an_hpa_that_scales_in_too_eagerly_gets_a_slower_scale_down() {
    let eager = finding(
        FindingId::HpaScalesInTooEagerly,
        Verdict::Supported,
        Facts::None,
    );
    let step = run(slow_the_hpas_scale_in, &[eager]).unwrap();
    assert!(
        step.proposal.contains("stabilizationWindowSeconds"),
        "{}",
        step.proposal
    );
    assert!(
        step.commands[0]
            .text
            .contains("kubectl -n shop get hpa web")
    );
    let context = finding(
        FindingId::HpaScalesInTooEagerly,
        Verdict::Inconclusive,
        Facts::None,
    );
    assert!(run(slow_the_hpas_scale_in, &[context]).is_none());
}

/// The steps for a breach whose one cause is low traffic.
fn steps_for_low_traffic(behaviour: Behaviour, kind: ReportKind) -> Vec<NextStep> {
    let decided = Decided {
        findings: vec![finding(
            FindingId::LowTrafficArtifact,
            Verdict::Supported,
            Facts::None,
        )],
        ..Decided::default()
    };
    propose(
        &alb_alarm(),
        &classification(behaviour),
        &decided,
        kind,
        now(),
    )
}
