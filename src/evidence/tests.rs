use super::model::{TargetGroup, TargetType};
use super::*;

/// An ALB latency alarm on `app/x/1` (shared with the gathering's tests).
pub(crate) fn alarm() -> crate::alarm::AlarmNotification {
    serde_json::from_str(
        r#"{"AlarmName":"a","AWSAccountId":"1","NewStateValue":"ALARM","OldStateValue":"OK",
            "StateChangeTime":"2026-11-29T10:00:00.000+0000","AlarmArn":"arn:aws:cloudwatch:eu-west-1:1:alarm:a",
            "Trigger":{"MetricName":"TargetResponseTime","Namespace":"AWS/ApplicationELB","Statistic":"AVERAGE",
              "Period":60,"EvaluationPeriods":2,"Threshold":0.8,"ComparisonOperator":"GreaterThanThreshold",
              "Dimensions":[{"name":"LoadBalancer","value":"app/x/1"}]}}"#,
    )
    .unwrap()
}

/// Six instance-mode target groups `tg0`..`tg5`.
pub(crate) fn groups() -> Vec<TargetGroup> {
    (0..6)
        .map(|i| TargetGroup {
            arn: format!("arn:tg{i}"),
            name: format!("tg{i}"),
            dimension: format!("targetgroup/tg{i}/1"),
            target_type: TargetType::Instance,
            port: Some(80),
            protocol: None,
            health_check: None,
        })
        .collect()
}

#[test]
fn the_load_balancer_arn_is_built_from_the_alarm_arn() {
    assert_eq!(
        plan(&facts(&alarm())).load_balancer_arn.as_deref(),
        Some("arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/x/1")
    );
}

#[test]
fn the_plan_explains_what_does_not_apply() {
    let mut a = alarm();
    a.trigger.as_mut().unwrap().namespace = Some("AWS/SQS".into());
    let p = plan(&facts(&a));
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
    // An alarm on one group still reads its load balancer: the group is named, the others compared.
    let watched = plan(&facts(&tg));
    assert!(watched.notes.is_empty(), "{:?}", watched.notes);
    assert!(watched.load_balancer_dimension.is_some());
}

/// The alarm's facts, as intake parses them.
pub(crate) fn facts(n: &crate::alarm::AlarmNotification) -> AlarmFacts {
    AlarmFacts::from_notification(n)
}

#[test]
fn group_queries_come_eight_per_group_with_unique_ids() {
    let metric = plan(&facts(&alarm())).metric.unwrap();
    let queries = family::APPLICATION.group_queries(&metric, "app/x/1", &groups());
    assert_eq!(queries.len(), 48);
    let mut ids: Vec<_> = queries.iter().map(|q| q.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 48);
}

#[test]
fn target_group_attributes_are_read_from_their_keys_and_others_ignored() {
    let read = model::TargetGroupAttributes::from_pairs([
        (
            "load_balancing.algorithm.type",
            "least_outstanding_requests",
        ),
        ("slow_start.duration_seconds", "30"),
        ("deregistration_delay.timeout_seconds", "not a number"),
        ("stickiness.enabled", "false"),
    ]);
    assert_eq!(
        read,
        model::TargetGroupAttributes {
            algorithm: Some("least_outstanding_requests".into()),
            slow_start_seconds: Some(30),
            deregistration_delay_seconds: None,
        }
    );
}

#[test]
fn a_rate_alarm_is_planned_as_its_numerator_per_request() {
    let event: serde_json::Value = serde_json::from_str(include_str!(
        "../../events/sns-metricmath-alarm-5xx-rate.json"
    ))
    .unwrap();
    let message = event["Records"][0]["Sns"]["Message"].as_str().unwrap();
    let alarm: crate::alarm::AlarmNotification = serde_json::from_str(message).unwrap();
    let metric = plan(&facts(&alarm)).metric.unwrap();
    assert_eq!(metric.metric.name, "HTTPCode_Target_5XX_Count");
    assert_eq!(metric.per_request_scale, Some(100.0));
    // 12 errors in 600 requests: 2 %, as the alarm's expression computes it.
    let t = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let series = |id: &str, v: f64| model::MetricSeries {
        id: id.into(),
        points: vec![(t, v)],
    };
    // Answers come back by id, in whatever order.
    let stats = statistics_from(
        &metric,
        vec![
            series("requests", 600.0),
            series("alarm_stat", 12.0),
            series("average", 0.0),
        ],
    );
    assert_eq!(stats.alarm_stat.at(t), Some(2.0));
}
