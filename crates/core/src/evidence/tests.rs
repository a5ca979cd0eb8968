use super::*;
use crate::fixtures::{alarm, facts, groups};

#[test]
fn the_load_balancer_arn_is_built_from_the_alarm_arn() {
    assert_eq!(
        facts(&alarm()).plan().load_balancer_arn.as_deref(),
        Some("arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/x/1")
    );
}

#[test]
fn the_plan_explains_what_does_not_apply() {
    let mut a = alarm();
    a.trigger.as_mut().unwrap().namespace = Some("AWS/SQS".into());
    let p = facts(&a).plan();
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
    let watched = facts(&tg).plan();
    assert!(watched.notes.is_empty(), "{:?}", watched.notes);
    assert!(watched.load_balancer_dimension.is_some());
}

#[test]
fn group_queries_come_eight_per_group_with_unique_ids() {
    let metric = facts(&alarm()).plan().metric.unwrap();
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
            connection_termination: None,
        }
    );
}

#[test]
fn a_rate_alarm_is_planned_as_its_numerator_per_request() {
    let event: serde_json::Value = serde_json::from_str(include_str!(
        "../../../../events/sns-metricmath-alarm-5xx-rate.json"
    ))
    .unwrap();
    let message = event["Records"][0]["Sns"]["Message"].as_str().unwrap();
    let alarm: crate::alarm::AlarmNotification = serde_json::from_str(message).unwrap();
    let metric = facts(&alarm).plan().metric.unwrap();
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
