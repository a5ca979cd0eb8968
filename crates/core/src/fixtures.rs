//! Fixtures shared by the core's tests and the tests of the crates above
//! (the `test-util` feature): one ALB latency alarm, its facts, six target
//! groups, and a diagnosis made with nothing gathered.

// Fixtures are test code: a fixture that does not parse is a broken test.
#![allow(clippy::unwrap_used)]

use crate::evidence::model::{TargetGroup, TargetType};

/// An ALB latency alarm on `app/x/1`.
pub fn alarm() -> crate::alarm::AlarmNotification {
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
pub fn groups() -> Vec<TargetGroup> {
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

/// The alarm's facts, as intake parses them.
pub fn facts(n: &crate::alarm::AlarmNotification) -> crate::diagnosis::AlarmFacts {
    crate::diagnosis::AlarmFacts::from_notification(n)
}

/// A diagnosis of a fresh 2-of-2 ALB latency alarm with no evidence gathered.
pub fn sample() -> crate::diagnosis::Diagnosis {
    let alarm: crate::alarm::AlarmNotification = serde_json::from_str(
        r#"{"AlarmName":"k8s-shop-latency","AWSAccountId":"1","NewStateValue":"ALARM","OldStateValue":"OK",
            "StateChangeTime":"2026-11-29T10:00:00.000+0000","AlarmArn":"arn:aws:cloudwatch:eu-west-1:1:alarm:k8s-shop-latency",
            "Trigger":{"MetricName":"TargetResponseTime","Namespace":"AWS/ApplicationELB","Statistic":"AVERAGE","Period":60,
              "EvaluationPeriods":2,"Threshold":0.8,"ComparisonOperator":"GreaterThanThreshold",
              "Dimensions":[{"name":"LoadBalancer","value":"app/x/1"}]}}"#,
    )
    .unwrap();
    crate::triage::assemble(
        &alarm,
        crate::diagnosis::ReportKind::Diagnosis,
        &crate::findings::Investigation::of(
            crate::diagnosis::AlarmFacts::from_notification(&alarm),
            crate::diagnosis::AlarmFacts::from_notification(&alarm).plan(),
            Default::default(),
        ),
        &crate::classify::ClassifierConfig::default(),
        alarm.state_change_time.0,
    )
}

/// A workload with no pods, no Deployment and no HPA: a base for tests.
pub fn workload() -> crate::evidence::workload::Workload {
    crate::evidence::workload::Workload {
        cluster: Some("shop-prod".into()),
        service: crate::evidence::service_map::ServiceRef {
            namespace: "shop".into(),
            name: "cart".into(),
            source: crate::evidence::service_map::MappingSource::TargetGroupBinding,
        },
        selector: Default::default(),
        pods: Vec::new(),
        deployment: None,
        hpa: None,
        snapshot: None,
        nodes: Vec::new(),
        provisioning: None,
        partial: Vec::new(),
        activity: Default::default(),
        placement: Vec::new(),
    }
}

/// One alarm over a digest's span: threshold 1 on a 1-minute Average, its
/// metric at 0.5, and a trip into ALARM for each `(minutes before now it
/// fired, minutes it lasted)`.
pub fn alarm_over_span(
    name: &str,
    trips: &[(i64, i64)],
    now: chrono::DateTime<chrono::Utc>,
) -> crate::digest::AlarmOverSpan {
    use crate::alarm::AlarmState;
    use crate::history::{AlarmHistory, StateChange};
    let changes = trips
        .iter()
        .flat_map(|(ago, lasted)| {
            let at = now - chrono::Duration::minutes(*ago);
            [
                StateChange {
                    at,
                    from: AlarmState::Ok,
                    to: AlarmState::Alarm,
                },
                StateChange {
                    at: at + chrono::Duration::minutes(*lasted),
                    from: AlarmState::Alarm,
                    to: AlarmState::Ok,
                },
            ]
        })
        .collect();
    crate::digest::AlarmOverSpan {
        name: name.into(),
        threshold: Some(1.0),
        comparison: Some("GreaterThanThreshold".into()),
        statistic: Some("Average".into()),
        period_seconds: 60,
        evaluation_periods: 1,
        datapoints_to_alarm: None,
        history: AlarmHistory::from_unordered(changes),
        state_at_start: AlarmState::Ok,
        metric_values: vec![0.5; 100],
        diagnoses: None,
    }
}
