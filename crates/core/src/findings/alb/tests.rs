use super::*;
use crate::evidence::model::{TargetGroup, TargetHealth};

use crate::findings::minutes::{at as t, per_minute as series};

fn group(
    name: &str,
    kind: TargetType,
    latency: &[f64],
    requests: &[f64],
    unhealthy: usize,
) -> GroupEvidence {
    let health = (0..3)
        .map(|i| TargetHealth {
            id: format!("{name}-{i}"),
            port: Some(80),
            state: if i < unhealthy {
                "unhealthy".into()
            } else {
                "healthy".into()
            },
            reason: (i < unhealthy).then(|| "Target.Timeout".into()),
            description: None,
        })
        .collect();
    GroupEvidence {
        group: TargetGroup {
            arn: format!("arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/{name}/0123"),
            name: name.into(),
            dimension: format!("targetgroup/{name}/0123"),
            target_type: kind,
            port: Some(31892),
            protocol: Some("HTTP".into()),
            health_check: None,
        },
        algorithm: Some("round_robin".into()),
        slow_start_seconds: None,
        deregistration: None,
        health: Some(health),
        tags: None,
        metric: series(latency),
        p50: series(&latency.iter().map(|v| v * 0.8).collect::<Vec<_>>()),
        p99: series(&latency.iter().map(|v| v * 4.0).collect::<Vec<_>>()),
        maximum: series(&latency.iter().map(|v| v * 10.0).collect::<Vec<_>>()),
        requests: series(requests),
        target_errors: series(&[0.0; 3]),
        unhealthy_hosts: series(&[unhealthy as f64; 3]),
        healthy_hosts: series(&[(3 - unhealthy) as f64; 3]),
    }
}

fn alb(groups: Vec<GroupEvidence>) -> AlbEvidence {
    AlbEvidence {
        services: Default::default(),
        load_balancer: None,
        groups,
        errors: Default::default(),
    }
}

/// An alarm on the whole load balancer, per minute, in seconds.
fn shape(statistic: &Statistic, threshold: f64) -> AlarmShape<'_> {
    AlarmShape {
        family: MetricFamily::Latency,
        load_balancer: "ALB",
        per_load_balancer_only: false,
        statistic,
        threshold,
        comparison: Comparison::GreaterThan,
        period_seconds: 60,
        unit: "s",
        watched_group: None,
        observed: None,
    }
}

/// The names of the groups the breakdown named as culprits.
fn culprits(a: &AlbAnalysis) -> Vec<&str> {
    a.summaries
        .iter()
        .filter(|s| s.culprit)
        .map(|s| s.name.as_str())
        .collect()
}

fn verdict(a: &AlbAnalysis, id: &str) -> Verdict {
    a.findings
        .iter()
        .find(|f| f.id.as_str() == id)
        .unwrap_or_else(|| panic!("no finding {id}"))
        .verdict
}

const BREACH: [i64; 2] = [1, 2];

fn breach() -> Vec<DateTime<Utc>> {
    BREACH.iter().map(|m| t(*m)).collect()
}

#[test]
fn one_slow_group_among_six_clears_the_shared_alb_and_is_named() {
    let mut groups = vec![group(
        "k8s-shop-checkout-8a1f2c3d4e",
        TargetType::Instance,
        &[0.1, 2.9, 2.8],
        &[380.0, 620.0, 610.0],
        0,
    )];
    for name in ["catalog", "cart", "search", "accounts", "frontend"] {
        groups.push(group(
            name,
            TargetType::Instance,
            &[0.06, 0.07, 0.06],
            &[200.0; 3],
            0,
        ));
    }
    let a = analyse(
        &alb(groups),
        &breach(),
        shape(&Statistic::parse("Average"), 0.8),
    );
    assert_eq!(verdict(&a, "alb.shared_problem"), Verdict::Refuted);
    assert_eq!(culprits(&a), ["k8s-shop-checkout-8a1f2c3d4e"]);
    assert_eq!(
        a.summaries[0]
            .kubernetes_service
            .as_ref()
            .unwrap()
            .display(),
        "shop/checkout?"
    );
    assert!(a.summaries[0].share_of_breach.unwrap() > 0.9);
    assert_eq!(lor(&a, None), Verdict::Refuted, "instance mode");
    assert_eq!(verdict(&a, "targets.unhealthy"), Verdict::Refuted);
}

#[test]
fn most_groups_slow_at_once_supports_a_shared_problem() {
    let groups = ["a", "b", "c"]
        .iter()
        .map(|n| group(n, TargetType::Ip, &[0.2, 1.5, 1.6], &[100.0; 3], 0))
        .collect();
    let a = analyse(
        &alb(groups),
        &breach(),
        shape(&Statistic::parse("Average"), 0.8),
    );
    assert_eq!(verdict(&a, "alb.shared_problem"), Verdict::Supported);
}

#[test]
fn a_single_group_cannot_separate_the_alb_from_the_service() {
    let a = analyse(
        &alb(vec![group(
            "only",
            TargetType::Ip,
            &[0.2, 1.5, 1.6],
            &[100.0; 3],
            1,
        )]),
        &breach(),
        shape(&Statistic::parse("Average"), 0.8),
    );
    assert_eq!(verdict(&a, "alb.shared_problem"), Verdict::Inconclusive);
    assert_eq!(verdict(&a, "targets.unhealthy"), Verdict::Supported);
    assert_eq!(
        lor(&a, None),
        Verdict::Inconclusive,
        "ip mode with round robin, but nothing known of the pods"
    );
    assert_eq!(
        lor(&a, Some(Verdict::Supported)),
        Verdict::Supported,
        "ip mode with round robin and a hot pod"
    );
    assert_eq!(
        lor(&a, Some(Verdict::Refuted)),
        Verdict::Refuted,
        "ip mode with round robin, pods evenly loaded"
    );
}

/// The routing-algorithm verdict, given the imbalance finding's verdict.
fn lor(a: &AlbAnalysis, imbalance: Option<Verdict>) -> Verdict {
    let findings: Vec<Finding> = imbalance
        .map(|verdict| Finding {
            ruled_out_by: None,
            id: FindingId::PodImbalance,
            role: Default::default(),
            hypothesis: String::new(),
            verdict,
            summary: "pods".to_owned(),
            cause: None,
            evidence: vec![],
            series: vec![],
            facts: Facts::None,
        })
        .into_iter()
        .collect();
    least_outstanding_requests(&a.summaries, &findings)
        .expect("a culprit")
        .verdict
}

#[test]
fn a_group_without_targets_is_reported_not_guessed() {
    let mut empty = group("empty", TargetType::Ip, &[0.2, 1.5, 1.6], &[10.0; 3], 0);
    empty.health = Some(Vec::new());
    empty.unhealthy_hosts = series(&[0.0; 3]);
    let a = analyse(
        &alb(vec![empty]),
        &breach(),
        shape(&Statistic::parse("Average"), 0.8),
    );
    assert_eq!(verdict(&a, "targets.unhealthy"), Verdict::Inconclusive);
}

#[test]
fn no_datapoints_at_all_decide_nothing() {
    let mut silent = group("silent", TargetType::Instance, &[], &[], 0);
    silent.health = None;
    let a = analyse(
        &alb(vec![silent.clone(), silent]),
        &[],
        shape(&Statistic::parse("Average"), 0.8),
    );
    assert_eq!(verdict(&a, "alb.shared_problem"), Verdict::Inconclusive);
    assert_eq!(verdict(&a, "targets.unhealthy"), Verdict::Inconclusive);
    assert!(a.summaries.iter().all(|s| !s.culprit));
}

#[test]
fn an_alarm_on_one_group_names_that_group_even_when_another_is_slower() {
    let groups = vec![
        group("watched", TargetType::Ip, &[0.2, 0.9, 0.95], &[300.0; 3], 0),
        group("slower", TargetType::Ip, &[0.2, 2.5, 2.6], &[300.0; 3], 0),
    ];
    let evidence = alb(groups);
    let watched = evidence.groups[0].group.dimension.clone();
    let a = analyse(
        &evidence,
        &breach(),
        AlarmShape {
            watched_group: Some(&watched),
            ..shape(&Statistic::parse("Average"), 0.8)
        },
    );
    assert_eq!(culprits(&a), ["watched"]);
}

#[test]
fn the_load_balancers_own_errors_fall_on_the_group_whose_targets_were_failing() {
    // ELB 5xx have no per-group series: every group's alarm metric is empty.
    let mut failing = group("failing", TargetType::Ip, &[0.1; 3], &[300.0; 3], 2);
    let mut healthy = group("healthy", TargetType::Ip, &[0.1; 3], &[900.0; 3], 0);
    for g in [&mut failing, &mut healthy] {
        g.metric = MetricSeries::default();
    }
    let a = analyse(
        &alb(vec![healthy, failing]),
        &breach(),
        AlarmShape {
            family: MetricFamily::LoadBalancerErrors,
            per_load_balancer_only: true,
            unit: "count",
            ..shape(&Statistic::Sum, 5.0)
        },
    );
    assert_eq!(culprits(&a), ["failing"]);
}

#[test]
fn a_low_alarm_falls_on_the_group_that_fell_under_its_threshold() {
    // HealthyHostCount Minimum < 1 on the load balancer: "empty" lost its targets.
    let mut empty = group("empty", TargetType::Ip, &[0.1; 3], &[300.0; 3], 3);
    let mut fine = group("fine", TargetType::Ip, &[0.1; 3], &[300.0; 3], 0);
    empty.metric = series(&[3.0, 0.0, 0.0]);
    fine.metric = series(&[3.0, 3.0, 3.0]);
    let a = analyse(
        &alb(vec![fine, empty]),
        &breach(),
        AlarmShape {
            family: MetricFamily::HealthyHosts,
            unit: "count",
            comparison: Comparison::LessThan,
            ..shape(&Statistic::Minimum, 1.0)
        },
    );
    assert_eq!(culprits(&a), ["empty"]);
}

/// `base` for 40 minutes, `burst` from minute 30 on.
fn stepped(base: f64, burst: f64) -> Vec<f64> {
    (0..40)
        .map(|m| if m >= 30 { burst } else { base })
        .collect()
}

#[test]
fn with_a_baseline_the_culprit_is_the_group_that_changed_not_the_one_always_above() {
    // "reports" has answered in 3 s for as long as the window goes back, on
    // few requests; "api" rose at minute 30 and took the Average over 0.8 s.
    let reports = group("reports", TargetType::Ip, &[3.0; 40], &[5.0; 40], 0);
    let api = group("api", TargetType::Ip, &stepped(0.2, 1.4), &[600.0; 40], 0);
    let quiet = group("web", TargetType::Ip, &[0.1; 40], &[300.0; 40], 0);
    let breach: Vec<DateTime<Utc>> = (30..40).map(t).collect();
    let a = analyse(
        &alb(vec![reports, api, quiet]),
        &breach,
        shape(&Statistic::parse("Average"), 0.8),
    );
    assert_eq!(culprits(&a), ["api"]);
    let finding = a
        .findings
        .iter()
        .find(|f| f.id == FindingId::SharedLoadBalancerProblem)
        .unwrap();
    assert_eq!(finding.verdict, Verdict::Refuted);
    assert!(
        finding.summary.contains("Without api's change"),
        "{}",
        finding.summary
    );
    assert!(
        finding
            .summary
            .contains("reports is always beyond the threshold"),
        "{}",
        finding.summary
    );
    assert!(a.summaries[1].without_its_change.unwrap() < 0.8);
    assert_eq!(a.summaries[0].share_of_breach, Some(0.0));
}

#[test]
fn with_a_baseline_groups_moving_together_are_shared_and_nobody_is_blamed() {
    let groups = ["a", "b", "c", "d"]
        .iter()
        .map(|n| group(n, TargetType::Ip, &stepped(0.15, 1.1), &[200.0; 40], 0))
        .collect();
    let breach: Vec<DateTime<Utc>> = (30..40).map(t).collect();
    let a = analyse(
        &alb(groups),
        &breach,
        shape(&Statistic::parse("Average"), 0.8),
    );
    assert!(culprits(&a).is_empty());
    assert_eq!(verdict(&a, "alb.shared_problem"), Verdict::Supported);
}

#[test]
fn with_a_baseline_and_no_group_moving_nothing_changed_and_nobody_is_blamed() {
    let groups = vec![
        group("steady", TargetType::Ip, &[0.55; 40], &[300.0; 40], 0),
        group("idle", TargetType::Ip, &[0.05; 40], &[10.0; 40], 0),
    ];
    let breach: Vec<DateTime<Utc>> = (0..40).map(t).collect();
    let a = analyse(
        &alb(groups),
        &breach,
        shape(&Statistic::parse("Average"), 0.5),
    );
    assert!(culprits(&a).is_empty());
    let finding = a
        .findings
        .iter()
        .find(|f| f.id == FindingId::SharedLoadBalancerProblem)
        .unwrap();
    assert_eq!(finding.verdict, Verdict::Inconclusive);
    assert!(
        finding.summary.contains("nothing changed"),
        "{}",
        finding.summary
    );
}

#[test]
fn the_load_balancers_503s_fall_on_the_group_whose_requests_vanished() {
    // No unhealthy target anywhere: "orders"'s targets left (draining, new
    // pods never Ready) and its requests stopped when the 503s began.
    let mut orders = group(
        "orders",
        TargetType::Ip,
        &[0.1; 40],
        &stepped(400.0, 0.0),
        0,
    );
    let web = group("web", TargetType::Ip, &[0.1; 40], &[500.0; 40], 0);
    orders.health = Some(Vec::new());
    assert_eq!(elb_5xx_culprits(vec![web, orders]), ["orders"]);
}

#[test]
fn the_load_balancers_503s_fall_on_the_group_whose_healthy_hosts_fell_to_zero() {
    // Nobody unhealthy and traffic only halved on "orders" (retries), but its
    // HealthyHostCount went from 3 to 0 when the 503s began: its targets left.
    let mut orders = group(
        "orders",
        TargetType::Ip,
        &[0.1; 40],
        &stepped(400.0, 250.0),
        0,
    );
    let mut web = group("web", TargetType::Ip, &[0.1; 40], &[500.0; 40], 0);
    orders.healthy_hosts = series(&stepped(3.0, 0.0));
    web.healthy_hosts = series(&[3.0; 40]);
    assert_eq!(elb_5xx_culprits(vec![web, orders]), ["orders"]);
}

fn with_states(mut g: GroupEvidence, states: &[&str]) -> GroupEvidence {
    g.health = Some(
        states
            .iter()
            .enumerate()
            .map(|(i, state)| TargetHealth {
                id: format!("10.0.0.{i}"),
                port: Some(80),
                state: (*state).into(),
                reason: None,
                description: None,
            })
            .collect(),
    );
    g
}

#[test]
fn draining_and_unused_targets_are_leaving_not_unhealthy() {
    let rolled = with_states(
        group(
            "rolled",
            TargetType::Ip,
            &stepped(0.1, 2.0),
            &[300.0; 40],
            0,
        ),
        &["healthy", "healthy", "draining", "unused"],
    );
    let quiet = group("quiet", TargetType::Ip, &[0.1; 40], &[300.0; 40], 0);
    let breach: Vec<DateTime<Utc>> = (30..40).map(t).collect();
    let a = analyse(
        &alb(vec![rolled, quiet]),
        &breach,
        shape(&Statistic::parse("Average"), 0.8),
    );
    assert_eq!(culprits(&a), ["rolled"]);
    assert_eq!(verdict(&a, "targets.unhealthy"), Verdict::Refuted);
}

#[test]
fn a_group_left_with_no_healthy_target_lost_its_targets_not_its_health() {
    let emptied = with_states(
        group(
            "emptied",
            TargetType::Ip,
            &stepped(0.1, 2.0),
            &[300.0; 40],
            0,
        ),
        &["draining", "initial", "initial"],
    );
    let quiet = group("quiet", TargetType::Ip, &[0.1; 40], &[300.0; 40], 0);
    let breach: Vec<DateTime<Utc>> = (30..40).map(t).collect();
    let a = analyse(
        &alb(vec![emptied, quiet]),
        &breach,
        shape(&Statistic::parse("Average"), 0.8),
    );
    let f = a
        .findings
        .iter()
        .find(|f| f.id == FindingId::UnhealthyTargets)
        .unwrap();
    assert_eq!(f.verdict, Verdict::Inconclusive, "{}", f.summary);
    assert!(
        f.summary.contains("lost its routable targets"),
        "{}",
        f.summary
    );
}

/// The culprits of a load-balancer 5xx alarm breaching from minute 30 (the
/// groups' own series are empty: CloudWatch has none per group).
fn elb_5xx_culprits(mut groups: Vec<GroupEvidence>) -> Vec<String> {
    for g in &mut groups {
        g.metric = MetricSeries::default();
    }
    let breach: Vec<DateTime<Utc>> = (30..40).map(t).collect();
    let a = analyse(
        &alb(groups),
        &breach,
        AlarmShape {
            family: MetricFamily::LoadBalancerErrors,
            per_load_balancer_only: true,
            unit: "count",
            ..shape(&Statistic::Sum, 5.0)
        },
    );
    culprits(&a).into_iter().map(str::to_owned).collect()
}
