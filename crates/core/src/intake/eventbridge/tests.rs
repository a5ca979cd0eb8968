use super::*;
use crate::alarm::AlarmKind;
use crate::diagnosis::DiagnosisId;

fn event(name: &str) -> Value {
    let path = format!("{}/../../events/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn sns_message(name: &str) -> AlarmNotification {
    let e = event(name);
    serde_json::from_str(e["Records"][0]["Sns"]["Message"].as_str().unwrap()).unwrap()
}

#[test]
fn a_single_metric_alarm_maps_onto_the_sns_form_with_what_the_reason_says() {
    let alarm =
        notification_from_event(&event("eventbridge-alb-alarm-target-response-time")).unwrap();
    assert_eq!(alarm.kind(), AlarmKind::SingleMetric);
    let trigger = alarm.trigger.as_ref().unwrap();
    assert_eq!(trigger.metric_name.as_deref(), Some("TargetResponseTime"));
    assert_eq!(trigger.statistic.as_deref(), Some("Average"));
    assert_eq!(trigger.threshold, Some(0.8));
    assert_eq!(
        trigger.comparison_operator.as_deref(),
        Some("GreaterThanThreshold")
    );
    assert_eq!(trigger.evaluation_periods, Some(2));
    assert_eq!(trigger.datapoints_to_alarm, Some(2));
    assert_eq!(trigger.period, Some(60));
    assert_eq!(alarm.region_code(), Some("eu-west-1"));
    assert_eq!(alarm.old_state_value, AlarmState::Ok);
    assert_eq!(
        alarm.alarm_tags.get("team").map(String::as_str),
        Some("checkout")
    );
}

#[test]
fn the_same_transition_from_sns_and_from_eventbridge_gets_the_same_diagnosis_id() {
    let from_eventbridge =
        notification_from_event(&event("eventbridge-alb-alarm-target-response-time")).unwrap();
    let from_sns = sns_message("sns-alb-alarm-target-response-time");
    assert_eq!(
        DiagnosisId::for_transition(&from_eventbridge),
        DiagnosisId::for_transition(&from_sns)
    );
}

#[test]
fn a_metric_math_rate_keeps_its_queries_and_reads_its_numerator() {
    let alarm = notification_from_event(&event("eventbridge-metricmath-alarm-5xx-rate")).unwrap();
    assert_eq!(alarm.kind(), AlarmKind::MetricMath);
    assert_eq!(
        alarm.primary_metric().unwrap().metric_name.as_deref(),
        Some("HTTPCode_Target_5XX_Count")
    );
    let trigger = alarm.trigger.as_ref().unwrap();
    assert_eq!(
        (trigger.evaluation_periods, trigger.datapoints_to_alarm),
        (Some(5), Some(3))
    );
    assert_eq!(trigger.threshold, Some(1.0));
}

#[test]
fn an_anomaly_band_alarm_names_its_band() {
    let alarm = notification_from_event(&event("eventbridge-anomaly-alarm-request-count")).unwrap();
    assert_eq!(alarm.kind(), AlarmKind::AnomalyBand);
    assert_eq!(
        alarm
            .trigger
            .as_ref()
            .unwrap()
            .comparison_operator
            .as_deref(),
        Some("GreaterThanUpperThreshold")
    );
    assert_eq!(
        alarm
            .trigger
            .as_ref()
            .unwrap()
            .threshold_metric_id
            .as_deref(),
        Some("ad1")
    );
}

#[test]
fn a_composite_alarm_keeps_its_rule_and_the_child_that_fired() {
    let alarm =
        notification_from_event(&event("eventbridge-composite-alarm-checkout-degraded")).unwrap();
    assert_eq!(alarm.kind(), AlarmKind::Composite);
    assert!(
        alarm
            .alarm_rule
            .as_deref()
            .unwrap()
            .contains("shop-checkout-p99-latency")
    );
    assert_eq!(alarm.triggering_children.len(), 1);
    assert_eq!(
        alarm.triggering_children[0].state.as_ref().map(|s| s.value),
        Some(AlarmState::Alarm)
    );
}

#[test]
fn an_event_of_another_kind_is_refused_by_name() {
    let other = serde_json::json!({"id": "1", "source": "aws.ec2", "detail-type": "EC2 Instance State-change Notification", "detail": {}});
    let error = notification_from_event(&other).unwrap_err().to_string();
    assert!(error.contains("aws.ec2"), "{error}");
    assert!(error.contains("CloudWatch Alarm State Change"), "{error}");
}

#[test]
fn an_alarm_event_without_a_state_says_what_is_missing() {
    let broken = serde_json::json!({"id": "e-1", "source": "aws.cloudwatch", "detail-type": DETAIL_TYPE, "detail": {"alarmName": "a"}});
    let error = notification_from_event(&broken).unwrap_err().to_string();
    assert!(error.contains("detail.state.value"), "{error}");
    assert!(error.contains("e-1"), "{error}");
}

#[test]
fn reasons_give_the_comparison_and_the_counts() {
    let counts = ReasonCounts::parse(
        "Threshold Crossed: 3 out of the last 5 datapoints [1.0 (x)] were less than or equal to the threshold (2.5) (minimum 3 datapoints for OK -> ALARM transition).",
    );
    assert_eq!(
        counts,
        ReasonCounts {
            evaluation_periods: Some(5),
            datapoints_to_alarm: Some(3),
            comparison: Some("LessThanOrEqualToThreshold"),
            threshold: Some(2.5),
        }
    );
}
