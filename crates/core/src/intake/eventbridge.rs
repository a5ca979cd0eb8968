//! EventBridge's "CloudWatch Alarm State Change" events, mapped onto the same
//! [`AlarmNotification`] an SNS notification gives. CloudWatch sends every
//! state change to EventBridge without anyone editing the alarm's actions,
//! which is how one bot serves a whole organisation.
//!
//! The event carries the alarm's metrics (or, for a composite, its rule), the
//! new and previous state with their reasons and `reasonData`, and the tags
//! when tag propagation is on. It does not carry the comparison, the number
//! of evaluation periods or datapoints to alarm: those are read from the
//! state reason CloudWatch writes ("3 out of the last 5 datapoints were
//! greater than or equal to the threshold (0.8) (minimum 3 datapoints ...)")
//! and the threshold, statistic and period from `reasonData`; what is still
//! missing is filled from DescribeAlarms when the sources are live.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::alarm::{
    AlarmNotification, AlarmState, Dimension, MetricIdentity, MetricQuery, MetricStat, Timestamp,
    Trigger, TriggeringChild,
};
use crate::error::{Error, Result};

/// EventBridge's `detail-type` for alarm state changes.
pub const DETAIL_TYPE: &str = "CloudWatch Alarm State Change";

/// Whether a JSON object is an EventBridge event (of any kind).
pub fn is_event(object: &serde_json::Map<String, Value>) -> bool {
    object.contains_key("detail-type") && object.contains_key("detail")
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn invalid(what: &str, event: &Value) -> Error {
    Error::UnrecognisedJson {
        keys: format!(
            "an EventBridge event (id {}) without a readable {what}",
            text(event, "/id").unwrap_or("?")
        ),
        expected: "a CloudWatch Alarm State Change event with detail.alarmName, detail.state.value and detail.state.timestamp",
    }
}

/// The alarm notification an alarm state change event stands for.
pub fn notification_from_event(event: &Value) -> Result<AlarmNotification> {
    let source = text(event, "/source").unwrap_or("(missing)");
    let detail_type = text(event, "/detail-type").unwrap_or("(missing)");
    if source != "aws.cloudwatch" || detail_type != DETAIL_TYPE {
        return Err(Error::UnrecognisedJson {
            keys: format!("an EventBridge event from {source:?} of type {detail_type:?}"),
            expected: "source aws.cloudwatch, detail-type \"CloudWatch Alarm State Change\"",
        });
    }
    let detail = event
        .get("detail")
        .ok_or_else(|| invalid("detail", event))?;
    let state = |which: &str| -> Result<(AlarmState, Option<Timestamp>, String, Option<Value>)> {
        let value = text(detail, &format!("/{which}/value"))
            .ok_or_else(|| invalid(&format!("detail.{which}.value"), event))?;
        let value: AlarmState =
            serde_json::from_value(Value::String(value.to_owned())).map_err(|_| {
                invalid(
                    &format!("detail.{which}.value (ALARM, OK or INSUFFICIENT_DATA)"),
                    event,
                )
            })?;
        let timestamp = text(detail, &format!("/{which}/timestamp")).and_then(Timestamp::parse);
        let reason = text(detail, &format!("/{which}/reason"))
            .unwrap_or_default()
            .to_owned();
        // reasonData is a JSON document inside a string.
        let data = text(detail, &format!("/{which}/reasonData"))
            .and_then(|s| serde_json::from_str::<Value>(s).ok());
        Ok((value, timestamp, reason, data))
    };
    let (new_state, timestamp, reason, reason_data) = state("state")?;
    let (old_state, _, _, _) =
        state("previousState").unwrap_or((AlarmState::InsufficientData, None, String::new(), None));
    let state_change_time = timestamp
        .or_else(|| text(event, "/time").and_then(Timestamp::parse))
        .ok_or_else(|| invalid("detail.state.timestamp", event))?;
    let alarm_name = text(detail, "/alarmName")
        .ok_or_else(|| invalid("detail.alarmName", event))?
        .to_owned();
    let account = text(event, "/account").unwrap_or_default().to_owned();
    let region = text(event, "/region").unwrap_or_default().to_owned();
    let alarm_arn = event
        .pointer("/resources/0")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let configuration = detail.get("configuration").cloned().unwrap_or(Value::Null);
    let alarm_rule = text(&configuration, "/alarmRule").map(str::to_owned);
    let trigger = match alarm_rule {
        Some(_) => None,
        None => Some(trigger_from(&configuration, &reason, reason_data.as_ref())),
    };
    let triggering_children = reason_data
        .as_ref()
        .and_then(|d| d.get("triggeringAlarms"))
        .and_then(Value::as_array)
        .map(|children| {
            children
                .iter()
                .filter_map(|c| {
                    Some(TriggeringChild {
                        arn: c.get("arn")?.as_str()?.to_owned(),
                        state: c
                            .get("state")
                            .and_then(|s| serde_json::from_value(capitalised(s)).ok()),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(AlarmNotification {
        alarm_name,
        alarm_description: text(&configuration, "/description").map(str::to_owned),
        aws_account_id: account,
        alarm_configuration_updated_timestamp: None,
        new_state_value: new_state,
        new_state_reason: reason,
        state_change_time,
        region,
        alarm_arn,
        old_state_value: old_state,
        ok_actions: Vec::new(),
        alarm_actions: Vec::new(),
        insufficient_data_actions: Vec::new(),
        trigger,
        alarm_rule: text(&configuration, "/alarmRule").map(str::to_owned),
        triggering_children,
        alarm_tags: detail
            .get("alarmTags")
            .and_then(Value::as_object)
            .map(|tags| {
                tags.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// `{"value": "ALARM", "timestamp": ...}` as the SNS form spells it (`Value`, `Timestamp`).
fn capitalised(state: &Value) -> Value {
    let mut out = serde_json::Map::new();
    if let Some(object) = state.as_object() {
        for (key, value) in object {
            let mut chars = key.chars();
            let key = chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default();
            out.insert(key, value.clone());
        }
    }
    Value::Object(out)
}

/// A metric identity from the event's `{namespace, name, dimensions: {k: v}}`.
fn metric_of(metric: &Value) -> MetricIdentity {
    let dimensions: BTreeMap<String, String> = metric
        .get("dimensions")
        .and_then(Value::as_object)
        .map(|d| {
            d.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    MetricIdentity {
        namespace: text(metric, "/namespace").map(str::to_owned),
        metric_name: text(metric, "/name").map(str::to_owned),
        dimensions: dimensions
            .into_iter()
            .map(|(name, value)| Dimension { name, value })
            .collect(),
    }
}

fn as_u32(value: Option<&Value>) -> Option<u32> {
    value
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

/// The trigger of a metric alarm: one metric becomes the SNS form's single
/// metric; several (metric math, anomaly band) stay a list of queries.
fn trigger_from(configuration: &Value, reason: &str, reason_data: Option<&Value>) -> Trigger {
    let metrics = configuration
        .get("metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let queries: Vec<MetricQuery> = metrics
        .iter()
        .map(|m| MetricQuery {
            id: text(m, "/id").unwrap_or_default().to_owned(),
            expression: text(m, "/expression").map(str::to_owned),
            label: text(m, "/label").map(str::to_owned),
            return_data: m.get("returnData").and_then(Value::as_bool),
            metric_stat: m.get("metricStat").map(|s| MetricStat {
                metric: metric_of(s.get("metric").unwrap_or(&Value::Null)),
                period: as_u32(s.get("period")),
                stat: text(s, "/stat").map(str::to_owned),
                unit: text(s, "/unit").map(str::to_owned),
            }),
            period: as_u32(m.get("period")),
            account_id: text(m, "/accountId").map(str::to_owned),
        })
        .collect();
    let band = queries.iter().find(|q| {
        q.expression
            .as_deref()
            .is_some_and(|e| e.trim_start().starts_with("ANOMALY_DETECTION_BAND"))
    });
    let counts = ReasonCounts::parse(reason);
    let mut trigger = Trigger {
        metric_name: None,
        namespace: None,
        statistic_type: None,
        statistic: None,
        extended_statistic: None,
        unit: None,
        dimensions: Vec::new(),
        period: reason_data.and_then(|d| as_u32(d.get("period"))),
        evaluation_periods: counts.evaluation_periods,
        datapoints_to_alarm: counts.datapoints_to_alarm,
        comparison_operator: counts.comparison.map(str::to_owned),
        threshold: reason_data
            .and_then(|d| d.get("threshold"))
            .and_then(Value::as_f64)
            .or(counts.threshold),
        threshold_metric_id: band.map(|q| q.id.clone()),
        treat_missing_data: None,
        evaluate_low_sample_count_percentile: None,
        metrics: Vec::new(),
    };
    match queries.as_slice() {
        [single] if single.expression.is_none() => {
            if let Some(stat) = &single.metric_stat {
                trigger.metric_name = stat.metric.metric_name.clone();
                trigger.namespace = stat.metric.namespace.clone();
                trigger.dimensions = stat.metric.dimensions.clone();
                trigger.period = trigger.period.or(stat.period);
                let statistic = stat.stat.clone();
                // pNN, tmNN and the like are extended statistics.
                if statistic
                    .as_deref()
                    .is_some_and(|s| s.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
                {
                    trigger.statistic_type = Some("ExtendedStatistic".to_owned());
                    trigger.extended_statistic = statistic;
                } else {
                    trigger.statistic_type = Some("Statistic".to_owned());
                    trigger.statistic = statistic;
                }
                trigger.unit = stat.unit.clone();
            }
        }
        _ => trigger.metrics = queries,
    }
    trigger
}

/// What CloudWatch's state reason says about the evaluation.
#[derive(Debug, Default, PartialEq)]
pub struct ReasonCounts {
    pub evaluation_periods: Option<u32>,
    pub datapoints_to_alarm: Option<u32>,
    pub comparison: Option<&'static str>,
    pub threshold: Option<f64>,
}

impl ReasonCounts {
    /// Reads "N out of the last M datapoints ... were greater than or equal to
    /// the threshold (X) (minimum K datapoints for OK -> ALARM transition)".
    pub fn parse(reason: &str) -> Self {
        let number_after = |marker: &str| -> Option<&str> {
            let tail = &reason[reason.find(marker)? + marker.len()..];
            tail.split_whitespace().next()
        };
        let evaluation_periods = number_after("out of the last ").and_then(|n| n.parse().ok());
        let datapoints_to_alarm = number_after("(minimum ").and_then(|n| n.parse().ok());
        let comparison = [
            (
                "greater than or equal to the threshold",
                "GreaterThanOrEqualToThreshold",
            ),
            (
                "less than or equal to the threshold",
                "LessThanOrEqualToThreshold",
            ),
            ("greater than the threshold", "GreaterThanThreshold"),
            ("less than the threshold", "LessThanThreshold"),
            // Anomaly detection bands.
            (
                "greater than the upper thresholds",
                "GreaterThanUpperThreshold",
            ),
            ("less than the lower thresholds", "LessThanLowerThreshold"),
            (
                "outside the band",
                "LessThanLowerOrGreaterThanUpperThreshold",
            ),
        ]
        .into_iter()
        .find(|(phrase, _)| {
            // "was not greater than" describes the OK side of the same comparison.
            reason.contains(phrase)
        })
        .map(|(_, operator)| operator);
        let threshold = reason.find("the threshold (").and_then(|i| {
            let tail = &reason[i + "the threshold (".len()..];
            tail[..tail.find(')')?].parse().ok()
        });
        ReasonCounts {
            evaluation_periods,
            datapoints_to_alarm,
            comparison,
            threshold,
        }
    }
}

#[cfg(test)]
mod tests;
