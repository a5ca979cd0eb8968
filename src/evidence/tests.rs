use std::time::Duration;

use chrono::TimeZone;

use super::fake::StaticSources;
use super::model::{LoadBalancer, TargetGroup, TargetType};
use super::*;

fn alarm() -> AlarmNotification {
    serde_json::from_str(
        r#"{"AlarmName":"a","AWSAccountId":"1","NewStateValue":"ALARM","OldStateValue":"OK",
            "StateChangeTime":"2026-11-29T10:00:00.000+0000","AlarmArn":"arn:aws:cloudwatch:eu-west-1:1:alarm:a",
            "Trigger":{"MetricName":"TargetResponseTime","Namespace":"AWS/ApplicationELB","Statistic":"AVERAGE",
              "Period":60,"EvaluationPeriods":2,"Threshold":0.8,"ComparisonOperator":"GreaterThanThreshold",
              "Dimensions":[{"name":"LoadBalancer","value":"app/x/1"}]}}"#,
    )
    .unwrap()
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap()
}

fn world() -> StaticSources {
    StaticSources {
        load_balancer: Some(LoadBalancer {
            arn: "arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/x/1".into(),
            name: "x".into(),
            dimension: "app/x/1".into(),
            scheme: None,
        }),
        groups: (0..6)
            .map(|i| TargetGroup {
                arn: format!("arn:tg{i}"),
                name: format!("tg{i}"),
                dimension: format!("targetgroup/tg{i}/1"),
                target_type: TargetType::Instance,
                port: Some(80),
                protocol: None,
            })
            .collect(),
        ..StaticSources::default()
    }
}

#[tokio::test(start_paused = true)]
async fn independent_calls_never_wait_for_each_other() {
    let sources = StaticSources {
        latency: Duration::from_millis(100),
        ..world()
    };
    let started = tokio::time::Instant::now();
    let got = gather(
        &Collection::Live(sources.clone()),
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    let elapsed = started.elapsed();
    // Dependent steps: target groups (the ARN comes from the alarm) -> (metrics, tags, attributes, health).
    assert_eq!(
        elapsed,
        Duration::from_millis(200),
        "two dependent steps of 100 ms"
    );
    assert!(got.alb.as_ref().unwrap().groups.len() == 6);
    // history, definition, statistics, TGs, TG metrics, tags, 6 attributes, 6 health.
    assert_eq!(sources.call_count(), 18);
}

#[tokio::test(start_paused = true)]
async fn a_source_that_misses_the_deadline_becomes_a_gap_and_the_rest_still_arrives() {
    let sources = StaticSources {
        latency: Duration::from_secs(5),
        ..world()
    };
    let budget = Budget {
        overall: Duration::from_millis(7_000),
        per_source: Duration::from_secs(10),
        ..Budget::default()
    };
    let got = gather(&Collection::Live(sources), &alarm(), budget, now()).await;
    assert!(got.history.is_some(), "first-level calls answer at 5 s");
    let groups = &got
        .alb
        .as_ref()
        .expect("target groups answer at 5 s")
        .groups;
    assert!(
        groups.iter().all(|g| g.health.is_none()),
        "health would answer at 10 s, after the deadline"
    );
    let gap = got
        .gaps
        .iter()
        .find(|g| g.source == source::TARGET_HEALTH)
        .expect("a gap for target health");
    assert!(gap.reason.contains("no answer within"), "{}", gap.reason);
}

#[tokio::test]
async fn a_denied_source_names_the_missing_permission_once() {
    let sources = StaticSources {
        failing: vec![source::TARGET_HEALTH, source::ALARM_HISTORY],
        ..world()
    };
    let got = gather(
        &Collection::Live(sources),
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    let health_gaps: Vec<_> = got
        .gaps
        .iter()
        .filter(|g| g.source == source::TARGET_HEALTH)
        .collect();
    assert_eq!(
        health_gaps.len(),
        1,
        "six groups failing the same way make one gap"
    );
    assert!(
        got.gaps
            .iter()
            .any(|g| g.source == source::ALARM_HISTORY && g.reason.contains("access denied"))
    );
    assert!(got.alb.unwrap().groups.iter().all(|g| g.health.is_none()));
}

#[tokio::test]
async fn a_deleted_load_balancer_is_evidence_not_an_error() {
    let sources = StaticSources {
        load_balancer: None,
        ..world()
    };
    let got = gather(
        &Collection::Live(sources),
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    assert_eq!(got.alb.unwrap().load_balancer, None);
}

#[tokio::test]
async fn offline_reports_every_planned_source_as_not_collected() {
    let got = gather(
        &Collection::<StaticSources>::Offline,
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    assert!(got.gaps.len() >= 8);
    assert!(
        got.gaps
            .iter()
            .all(|g| g.reason == "not collected (offline)")
    );
}

#[test]
fn the_load_balancer_arn_is_built_from_the_alarm_arn() {
    assert_eq!(
        plan(&alarm()).load_balancer_arn.as_deref(),
        Some("arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/x/1")
    );
}

#[test]
fn the_plan_explains_what_does_not_apply() {
    let mut a = alarm();
    a.trigger.as_mut().unwrap().namespace = Some("AWS/SQS".into());
    let p = plan(&a);
    assert!(p.load_balancer_dimension.is_none());
    assert!(p.notes[0].contains("AWS/SQS"));
    let mut tg = alarm();
    tg.trigger
        .as_mut()
        .unwrap()
        .dimensions
        .push(crate::alarm::Dimension {
            name: "TargetGroup".into(),
            value: "targetgroup/t/1".into(),
        });
    assert!(plan(&tg).notes[0].contains("one target group"));
}

#[test]
fn group_queries_come_seven_per_group_with_unique_ids() {
    let metric = plan(&alarm()).metric.unwrap();
    let queries = group_queries(&metric, "app/x/1", &world().groups);
    assert_eq!(queries.len(), 42);
    let mut ids: Vec<_> = queries.iter().map(|q| q.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 42);
}

#[tokio::test(start_paused = true)]
async fn a_cluster_connection_slower_than_the_deadline_is_cut_off_and_named() {
    let sources = StaticSources {
        connect_latency: Duration::from_secs(45),
        ..world()
    };
    let budget = Budget {
        overall: Duration::from_secs(20),
        per_source: Duration::from_secs(8),
        ..Budget::default()
    };
    let started = tokio::time::Instant::now();
    let got = gather(&Collection::Live(sources), &alarm(), budget, now()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(8));
    let gap = got
        .gaps
        .iter()
        .find(|g| g.source == source::CLUSTER)
        .expect("the connection is a gap");
    assert!(gap.reason.contains("8000 ms"), "{gap:?}");
}
