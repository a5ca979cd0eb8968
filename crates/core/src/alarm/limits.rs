//! The ranges CloudWatch itself keeps to, checked once at intake.
//!
//! A notification outside them was not written by CloudWatch (or was edited
//! on the way), and the arithmetic downstream (lookback windows, evaluation
//! windows, timelines) is only meaningful inside them. Rejecting such input
//! with the field and the accepted range is kinder than a diagnosis dated in
//! year 10000 or a panic deep in the classifier.

use chrono::{DateTime, Utc};

use super::{AlarmNotification, Timestamp};

/// CloudWatch's limit on alarm names, in characters.
pub const MAX_ALARM_NAME_CHARS: usize = 255;
/// Period x EvaluationPeriods may not exceed seven days (CloudWatch's own limit).
pub const MAX_EVALUATION_WINDOW_SECONDS: u64 = 7 * 24 * 3600;
/// The earliest instant accepted: the Unix epoch (CloudWatch is younger).
pub const EARLIEST: &str = "1970-01-01T00:00:00Z";
/// The latest instant accepted: the last second a four-digit year can write.
pub const LATEST: &str = "9999-12-31T23:59:59Z";

/// A field outside the range CloudWatch keeps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfRange {
    /// The notification's field, as CloudWatch spells it (`Trigger.Period`).
    pub field: &'static str,
    /// What it held.
    pub received: String,
    /// What CloudWatch allows.
    pub expected: String,
}

/// Checks every number and instant the diagnosis computes with.
pub fn check(alarm: &AlarmNotification) -> Result<(), OutOfRange> {
    let name_chars = alarm.alarm_name.chars().count();
    if name_chars == 0 || name_chars > MAX_ALARM_NAME_CHARS {
        return Err(OutOfRange {
            field: "AlarmName",
            received: format!("{name_chars} characters"),
            expected: format!("1 to {MAX_ALARM_NAME_CHARS} characters"),
        });
    }
    instant("StateChangeTime", alarm.state_change_time)?;
    if let Some(t) = alarm.alarm_configuration_updated_timestamp {
        instant("AlarmConfigurationUpdatedTimestamp", t)?;
    }
    for child in &alarm.triggering_children {
        if let Some(t) = child.state.as_ref().and_then(|s| s.timestamp) {
            instant("TriggeringChildren[].State.Timestamp", t)?;
        }
    }
    let Some(trigger) = &alarm.trigger else {
        return Ok(());
    };
    if let Some(threshold) = trigger.threshold
        && !threshold.is_finite()
    {
        return Err(OutOfRange {
            field: "Trigger.Threshold",
            received: threshold.to_string(),
            expected: "a finite number".to_owned(),
        });
    }
    let periods = trigger
        .period
        .into_iter()
        .chain(trigger.metrics.iter().flat_map(|q| {
            q.period
                .into_iter()
                .chain(q.metric_stat.as_ref().and_then(|m| m.period))
        }));
    for period in periods {
        if period == 0 || u64::from(period) > MAX_EVALUATION_WINDOW_SECONDS {
            return Err(OutOfRange {
                field: "Trigger.Period",
                received: format!("{period} s"),
                expected: format!("1 to {MAX_EVALUATION_WINDOW_SECONDS} s"),
            });
        }
    }
    if let Some(evaluation_periods) = trigger.evaluation_periods {
        if evaluation_periods == 0 {
            return Err(OutOfRange {
                field: "Trigger.EvaluationPeriods",
                received: "0".to_owned(),
                expected: "at least 1".to_owned(),
            });
        }
        let period = alarm.period_seconds().unwrap_or(60);
        let window = u64::from(period) * u64::from(evaluation_periods);
        if window > MAX_EVALUATION_WINDOW_SECONDS {
            return Err(OutOfRange {
                field: "Trigger.EvaluationPeriods",
                received: format!("{evaluation_periods} periods of {period} s ({window} s)"),
                expected: format!(
                    "Period x EvaluationPeriods of at most {MAX_EVALUATION_WINDOW_SECONDS} s (7 days)"
                ),
            });
        }
        if let Some(datapoints) = trigger.datapoints_to_alarm
            && (datapoints == 0 || datapoints > evaluation_periods)
        {
            return Err(OutOfRange {
                field: "Trigger.DatapointsToAlarm",
                received: datapoints.to_string(),
                expected: format!("1 to EvaluationPeriods ({evaluation_periods})"),
            });
        }
    }
    Ok(())
}

/// The accepted range of instants.
pub fn instant_range() -> (DateTime<Utc>, DateTime<Utc>) {
    let parse = |text| {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    };
    (parse(EARLIEST), parse(LATEST))
}

/// Whether `t` lies in the accepted range.
pub fn instant_in_range(t: DateTime<Utc>) -> bool {
    let (earliest, latest) = instant_range();
    (earliest..=latest).contains(&t)
}

fn instant(field: &'static str, t: Timestamp) -> Result<(), OutOfRange> {
    if instant_in_range(t.0) {
        return Ok(());
    }
    Err(OutOfRange {
        field,
        received: t.0.to_rfc3339(),
        expected: format!("an instant from {EARLIEST} to {LATEST}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alarm() -> AlarmNotification {
        serde_json::from_str(
            &serde_json::json!({
                "AlarmName": "k8s-shop-latency",
                "AWSAccountId": "123456789012",
                "NewStateValue": "ALARM",
                "OldStateValue": "OK",
                "StateChangeTime": "2026-11-29T10:00:00.000+0000",
                "Trigger": {"MetricName": "TargetResponseTime", "Namespace": "AWS/ApplicationELB",
                            "Period": 60, "EvaluationPeriods": 2, "DatapointsToAlarm": 2, "Threshold": 0.8}
            })
            .to_string(),
        )
        .unwrap_or_else(|e| unreachable!("fixture parses: {e}"))
    }

    #[test]
    fn an_ordinary_alarm_is_in_range() {
        assert_eq!(check(&alarm()), Ok(()));
    }

    #[test]
    fn an_empty_alarm_name_is_refused_naming_the_field() {
        let mut a = alarm();
        a.alarm_name.clear();
        let e = check(&a).unwrap_err();
        assert_eq!(e.field, "AlarmName");
        assert_eq!(e.received, "0 characters");
    }

    #[test]
    fn a_name_of_255_emoji_is_accepted_and_256_is_not() {
        let mut a = alarm();
        a.alarm_name = "🔥".repeat(255);
        assert_eq!(check(&a), Ok(()));
        a.alarm_name.push('x');
        assert_eq!(check(&a).unwrap_err().field, "AlarmName");
    }

    #[test]
    fn a_state_change_time_beyond_year_9999_is_refused() {
        let mut a = alarm();
        a.state_change_time = Timestamp(DateTime::<Utc>::MAX_UTC);
        let e = check(&a).unwrap_err();
        assert_eq!(e.field, "StateChangeTime");
        assert!(e.expected.contains(LATEST), "{e:?}");
        a.state_change_time = Timestamp(DateTime::<Utc>::MIN_UTC);
        assert_eq!(check(&a).unwrap_err().field, "StateChangeTime");
    }

    #[test]
    fn an_evaluation_window_over_seven_days_is_refused_with_its_length() {
        let mut a = alarm();
        if let Some(t) = a.trigger.as_mut() {
            t.period = Some(86_400);
            t.evaluation_periods = Some(u32::MAX);
            t.datapoints_to_alarm = Some(1);
        }
        let e = check(&a).unwrap_err();
        assert_eq!(e.field, "Trigger.EvaluationPeriods");
        assert!(e.received.contains("86400 s"), "{e:?}");
    }

    #[test]
    fn a_zero_period_and_more_datapoints_than_periods_are_refused() {
        let mut a = alarm();
        if let Some(t) = a.trigger.as_mut() {
            t.period = Some(0);
        }
        assert_eq!(check(&a).unwrap_err().field, "Trigger.Period");
        let mut a = alarm();
        if let Some(t) = a.trigger.as_mut() {
            t.datapoints_to_alarm = Some(3);
        }
        assert_eq!(check(&a).unwrap_err().field, "Trigger.DatapointsToAlarm");
    }
}
