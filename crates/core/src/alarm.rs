//! The CloudWatch alarm notification, as CloudWatch writes it into an SNS message.
//!
//! These are our own serde types rather than a crate's: real payloads carry
//! lowercase dimension keys, `null` descriptions, `+0000` offsets, prose in
//! `TreatMissingData`, and four different shapes (single metric, metric math,
//! anomaly band, composite). Unknown fields are ignored so that a field AWS adds
//! tomorrow does not lose an alarm today.

pub mod facts;
pub mod limits;

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The three states of a CloudWatch alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AlarmState {
    Ok,
    Alarm,
    InsufficientData,
}

impl AlarmState {
    /// The spelling CloudWatch uses.
    pub fn as_str(self) -> &'static str {
        match self {
            AlarmState::Ok => "OK",
            AlarmState::Alarm => "ALARM",
            AlarmState::InsufficientData => "INSUFFICIENT_DATA",
        }
    }

    /// Parses CloudWatch's spelling.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "OK" => Some(AlarmState::Ok),
            "ALARM" => Some(AlarmState::Alarm),
            "INSUFFICIENT_DATA" => Some(AlarmState::InsufficientData),
            _ => None,
        }
    }
}

impl fmt::Display for AlarmState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A UTC instant that reads both RFC 3339 and CloudWatch's `2026-11-29T10:00:00.000+0000`,
/// and writes CloudWatch's form back so a captured message round-trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub DateTime<Utc>);

impl Timestamp {
    /// Parses either timestamp form CloudWatch uses.
    pub fn parse(text: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(text)
            .or_else(|_| DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f%z"))
            .ok()
            .map(|t| Timestamp(t.with_timezone(&Utc)))
    }

    /// CloudWatch's notification form, milliseconds and `+0000`.
    pub fn to_cloudwatch(self) -> String {
        self.0.format("%Y-%m-%dT%H:%M:%S%.3f+0000").to_string()
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_cloudwatch())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Timestamp::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "timestamp {text:?} is neither RFC 3339 nor CloudWatch's 2006-01-02T15:04:05.000+0000"
            ))
        })
    }
}

/// One metric dimension. CloudWatch writes `name`/`value` in lowercase in
/// notifications and `Name`/`Value` in its API; both are accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimension {
    #[serde(alias = "Name")]
    pub name: String,
    #[serde(alias = "Value")]
    pub value: String,
}

/// The metric an alarm or a metric-math query watches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct MetricIdentity {
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub metric_name: Option<String>,
    #[serde(default)]
    pub dimensions: Vec<Dimension>,
}

/// A metric and the statistic taken of it, inside a metric-math query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct MetricStat {
    pub metric: MetricIdentity,
    #[serde(default)]
    pub period: Option<u32>,
    #[serde(default)]
    pub stat: Option<String>,
    #[serde(default)]
    pub unit: Option<String>,
}

/// One entry of `Trigger.Metrics[]` (metric math and anomaly detection alarms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct MetricQuery {
    pub id: String,
    #[serde(default)]
    pub expression: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub return_data: Option<bool>,
    #[serde(default)]
    pub metric_stat: Option<MetricStat>,
    #[serde(default)]
    pub period: Option<u32>,
    #[serde(default)]
    pub account_id: Option<String>,
}

/// What a metric alarm evaluates. Absent for composite alarms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Trigger {
    #[serde(default)]
    pub metric_name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub statistic_type: Option<String>,
    #[serde(default)]
    pub statistic: Option<String>,
    #[serde(default)]
    pub extended_statistic: Option<String>,
    #[serde(default)]
    pub unit: Option<String>,
    #[serde(default)]
    pub dimensions: Vec<Dimension>,
    #[serde(default)]
    pub period: Option<u32>,
    #[serde(default)]
    pub evaluation_periods: Option<u32>,
    #[serde(default)]
    pub datapoints_to_alarm: Option<u32>,
    #[serde(default)]
    pub comparison_operator: Option<String>,
    #[serde(default)]
    pub threshold: Option<f64>,
    #[serde(default)]
    pub threshold_metric_id: Option<String>,
    #[serde(default)]
    pub treat_missing_data: Option<String>,
    #[serde(default)]
    pub evaluate_low_sample_count_percentile: Option<String>,
    #[serde(default)]
    pub metrics: Vec<MetricQuery>,
}

/// A child alarm that made a composite alarm change state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TriggeringChild {
    pub arn: String,
    #[serde(default)]
    pub state: Option<ChildState>,
}

/// The state a triggering child was in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChildState {
    pub value: AlarmState,
    #[serde(default)]
    pub timestamp: Option<Timestamp>,
}

/// The JSON CloudWatch publishes to SNS when an alarm changes state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AlarmNotification {
    pub alarm_name: String,
    #[serde(default)]
    pub alarm_description: Option<String>,
    #[serde(rename = "AWSAccountId")]
    pub aws_account_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_configuration_updated_timestamp: Option<Timestamp>,
    pub new_state_value: AlarmState,
    #[serde(default)]
    pub new_state_reason: String,
    pub state_change_time: Timestamp,
    /// The region's display name ("US East (N. Virginia)"), not its code.
    #[serde(default)]
    pub region: String,
    #[serde(default)]
    pub alarm_arn: Option<String>,
    pub old_state_value: AlarmState,
    #[serde(rename = "OKActions", default, skip_serializing_if = "Vec::is_empty")]
    pub ok_actions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarm_actions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub insufficient_data_actions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_rule: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggering_children: Vec<TriggeringChild>,
    /// The alarm's tags, when EventBridge carried them (tag propagation on);
    /// SNS notifications have none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub alarm_tags: std::collections::BTreeMap<String, String>,
}

/// The four shapes an alarm notification comes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlarmKind {
    SingleMetric,
    MetricMath,
    AnomalyBand,
    Composite,
}

impl AlarmKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AlarmKind::SingleMetric => "single metric",
            AlarmKind::MetricMath => "metric math",
            AlarmKind::AnomalyBand => "anomaly detection band",
            AlarmKind::Composite => "composite",
        }
    }
}

impl AlarmNotification {
    /// Which of the four shapes this is.
    pub fn kind(&self) -> AlarmKind {
        match &self.trigger {
            None => AlarmKind::Composite,
            Some(t) if t.threshold_metric_id.is_some() => AlarmKind::AnomalyBand,
            Some(t) if t.metric_name.is_none() && !t.metrics.is_empty() => AlarmKind::MetricMath,
            Some(_) if self.alarm_rule.is_some() => AlarmKind::Composite,
            Some(_) => AlarmKind::SingleMetric,
        }
    }

    /// The region code, taken from the alarm ARN (the `Region` field is a display name).
    pub fn region_code(&self) -> Option<&str> {
        self.alarm_arn
            .as_deref()
            .and_then(|arn| arn.split(':').nth(3))
    }

    /// The alarm's period in seconds: the trigger's, else the first query's.
    pub fn period_seconds(&self) -> Option<u32> {
        let trigger = self.trigger.as_ref()?;
        trigger.period.or_else(|| {
            trigger
                .metrics
                .iter()
                .find_map(|q| q.period.or(q.metric_stat.as_ref().and_then(|s| s.period)))
        })
    }

    /// The metric being watched, when there is exactly one: the trigger's own,
    /// or the one metric behind a metric-math / anomaly-band alarm.
    pub fn primary_metric(&self) -> Option<MetricIdentity> {
        let trigger = self.trigger.as_ref()?;
        if trigger.metric_name.is_some() {
            return Some(MetricIdentity {
                namespace: trigger.namespace.clone(),
                metric_name: trigger.metric_name.clone(),
                dimensions: trigger.dimensions.clone(),
            });
        }
        self.primary_stat().map(|stat| stat.metric.clone())
    }

    /// For a rate alarm (`100 * errors / requests`: the primary metric over
    /// RequestCount, times a constant), that constant: the alarm's value is
    /// then the primary metric per request, times it.
    pub fn per_request_scale(&self) -> Option<f64> {
        let queries = &self.trigger.as_ref()?.metrics;
        let primary = self.primary_stat()?;
        let id_of = |wanted: &dyn Fn(&MetricStat) -> bool| {
            queries
                .iter()
                .find(|q| q.metric_stat.as_ref().is_some_and(wanted))
                .map(|q| q.id.as_str())
        };
        let numerator = id_of(&|s| s == primary)?;
        let denominator = id_of(&|s| is_traffic(s.metric.metric_name.as_deref()))?;
        let expression = queries
            .iter()
            .find(|q| q.expression.is_some() && q.return_data != Some(false))?
            .expression
            .as_deref()?;
        rate_scale(expression, numerator, denominator)
    }

    /// The one metric a metric-math alarm is about: the only one it reads, or
    /// the only one left once denominators are set aside (`100 * errors /
    /// requests` is about the errors; `IF(requests >= 60, latency, 0)` about
    /// the latency).
    fn primary_stat(&self) -> Option<&MetricStat> {
        let stats: Vec<&MetricStat> = self
            .trigger
            .as_ref()?
            .metrics
            .iter()
            .filter_map(|q| q.metric_stat.as_ref())
            .collect();
        let is_denominator = |s: &&&MetricStat| {
            is_traffic(s.metric.metric_name.as_deref())
                || s.metric.metric_name.as_deref() == Some("RequestCountPerTarget")
        };
        match stats.as_slice() {
            [only] => Some(only),
            many => {
                let mut numerators = many.iter().filter(|s| !is_denominator(s));
                match (numerators.next(), numerators.next()) {
                    (Some(one), None) => Some(one),
                    _ => None,
                }
            }
        }
    }

    /// The statistic, normalised to CloudWatch API spelling (`Average`, `p99`).
    pub fn statistic(&self) -> Option<String> {
        let trigger = self.trigger.as_ref()?;
        if let Some(extended) = &trigger.extended_statistic {
            return Some(extended.clone());
        }
        if let Some(stat) = &trigger.statistic {
            return Some(normalise_statistic(stat));
        }
        self.primary_stat().and_then(|stat| stat.stat.clone())
    }

    /// The expression that produces the alarm's value, for metric-math and anomaly alarms.
    pub fn expression(&self) -> Option<&str> {
        let trigger = self.trigger.as_ref()?;
        let wanted = trigger.threshold_metric_id.as_deref();
        trigger
            .metrics
            .iter()
            .filter(|q| q.expression.is_some())
            .find(|q| match wanted {
                Some(id) => q.id == id,
                None => q.return_data.unwrap_or(true),
            })
            .and_then(|q| q.expression.as_deref())
    }

    /// `TreatMissingData` without the prose prefix CloudWatch sometimes writes
    /// (`"- TreatMissingData: missing"` becomes `missing`).
    pub fn treat_missing_data(&self) -> Option<&str> {
        let raw = self.trigger.as_ref()?.treat_missing_data.as_deref()?.trim();
        let value = raw.rsplit(':').next().unwrap_or(raw).trim();
        (!value.is_empty()).then_some(value)
    }

    /// A one-line, human description of what is watched.
    pub fn describe_metric(&self) -> String {
        if let Some(rule) = &self.alarm_rule {
            return format!("composite rule {rule}");
        }
        let Some(trigger) = &self.trigger else {
            return "unknown metric".to_owned();
        };
        if let Some(name) = &trigger.metric_name {
            let dims = describe_dimensions(&trigger.dimensions);
            let ns = trigger.namespace.as_deref().unwrap_or("?");
            return if dims.is_empty() {
                format!("{ns} {name}")
            } else {
                format!("{ns} {name} ({dims})")
            };
        }
        let inputs: Vec<String> = trigger
            .metrics
            .iter()
            .filter_map(|q| {
                let stat = q.metric_stat.as_ref()?;
                Some(format!(
                    "{}={} {}",
                    q.id,
                    stat.metric.namespace.as_deref().unwrap_or("?"),
                    stat.metric.metric_name.as_deref().unwrap_or("?")
                ))
            })
            .collect();
        match self.expression() {
            Some(expr) if inputs.is_empty() => format!("expression {expr}"),
            Some(expr) => format!("expression {expr} over {}", inputs.join(", ")),
            None => inputs.join(", "),
        }
    }
}

/// The traffic a rate alarm divides by: an ALB's requests, an NLB's new flows.
fn is_traffic(metric_name: Option<&str>) -> bool {
    matches!(metric_name, Some("RequestCount" | "NewFlowCount"))
}

/// `AVERAGE` (notification spelling) to `Average` (API spelling).
pub fn normalise_statistic(stat: &str) -> String {
    match stat.to_ascii_lowercase().as_str() {
        "average" => "Average".into(),
        "sum" => "Sum".into(),
        "minimum" => "Minimum".into(),
        "maximum" => "Maximum".into(),
        "samplecount" => "SampleCount".into(),
        _ => stat.to_owned(),
    }
}

/// `LoadBalancer=app/x/1, TargetGroup=...`.
pub fn describe_dimensions(dimensions: &[Dimension]) -> String {
    dimensions
        .iter()
        .map(|d| format!("{}={}", d.name, d.value))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `k * n / d`, `n / d * k`, `(n / d) * k`, `n / d`, `n * k / d`: the constant `k`
/// when `expression` divides `numerator` by `denominator` and scales it.
fn rate_scale(expression: &str, numerator: &str, denominator: &str) -> Option<f64> {
    let flat: String = expression
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '(' && *c != ')')
        .collect();
    let (top, bottom) = flat.split_once('/')?;
    if bottom.split('*').next()? != denominator {
        return None;
    }
    let mut scale = 1.0;
    let mut saw_numerator = false;
    for factor in top.split('*').chain(bottom.split('*').skip(1)) {
        if factor == numerator && !saw_numerator {
            saw_numerator = true;
        } else {
            scale *= factor
                .parse::<f64>()
                .ok()
                .filter(|k| k.is_finite() && *k > 0.0)?;
        }
    }
    saw_numerator.then_some(scale)
}

#[cfg(test)]
mod tests {

    #[test]
    fn rate_expressions_give_their_scale_and_anything_else_none() {
        for (expression, scale) in [
            ("100 * errors / requests", Some(100.0)),
            ("errors / requests * 100", Some(100.0)),
            ("(errors / requests) * 100", Some(100.0)),
            ("errors/requests", Some(1.0)),
            ("errors * 100 / requests", Some(100.0)),
            ("requests / errors", None),
            ("100 * errors / other", None),
            ("errors / requests + 1", None),
            ("IF(requests > 10, errors / requests, 0)", None),
        ] {
            assert_eq!(
                super::rate_scale(expression, "errors", "requests"),
                scale,
                "{expression}"
            );
        }
    }

    use super::*;

    #[test]
    fn cloudwatch_timestamps_with_plus_0000_parse_and_print_back() {
        let t = Timestamp::parse("2026-11-29T10:15:00.123+0000").unwrap();
        assert_eq!(t.to_cloudwatch(), "2026-11-29T10:15:00.123+0000");
        assert_eq!(Timestamp::parse("2026-11-29T10:15:00.123Z"), Some(t));
        assert_eq!(Timestamp::parse("yesterday"), None);
    }

    #[test]
    fn treat_missing_data_prose_is_reduced_to_its_value() {
        let mut n: AlarmNotification = serde_json::from_str(
            r#"{"AlarmName":"a","AWSAccountId":"1","NewStateValue":"ALARM","OldStateValue":"OK",
                "StateChangeTime":"2026-11-29T10:15:00.000+0000",
                "Trigger":{"MetricName":"m","TreatMissingData":"- TreatMissingData: notBreaching"}}"#,
        )
        .unwrap();
        assert_eq!(n.treat_missing_data(), Some("notBreaching"));
        n.trigger.as_mut().unwrap().treat_missing_data = Some("missing".into());
        assert_eq!(n.treat_missing_data(), Some("missing"));
    }

    #[test]
    fn a_rate_over_request_count_is_about_its_numerator() {
        let n: AlarmNotification = serde_json::from_str(
            r#"{"AlarmName":"rate","AWSAccountId":"1","NewStateValue":"ALARM","OldStateValue":"OK","StateChangeTime":"2026-11-27T15:05:40.204+0000",
                "Trigger":{"Period":60,"EvaluationPeriods":3,"ComparisonOperator":"GreaterThanThreshold","Threshold":1.0,
                "Metrics":[
                  {"Id":"errors","ReturnData":false,"MetricStat":{"Metric":{"Namespace":"AWS/ApplicationELB","MetricName":"HTTPCode_Target_5XX_Count","Dimensions":[{"name":"LoadBalancer","value":"app/x/1"}]},"Period":60,"Stat":"Sum"}},
                  {"Id":"requests","ReturnData":false,"MetricStat":{"Metric":{"Namespace":"AWS/ApplicationELB","MetricName":"RequestCount","Dimensions":[{"name":"LoadBalancer","value":"app/x/1"}]},"Period":60,"Stat":"Sum"}},
                  {"Id":"rate","Expression":"100 * errors / requests","ReturnData":true}]}}"#,
        )
        .unwrap();
        let metric = n.primary_metric().unwrap();
        assert_eq!(
            metric.metric_name.as_deref(),
            Some("HTTPCode_Target_5XX_Count")
        );
        assert_eq!(n.statistic().as_deref(), Some("Sum"));
    }

    #[test]
    fn an_nlb_reset_rate_over_new_flows_is_about_its_resets() {
        let n: AlarmNotification = serde_json::from_str(
            r#"{"AlarmName":"rate","AWSAccountId":"1","NewStateValue":"ALARM","OldStateValue":"OK","StateChangeTime":"2026-11-27T15:05:40.204+0000",
                "Trigger":{"Period":60,"EvaluationPeriods":3,"ComparisonOperator":"GreaterThanThreshold","Threshold":5.0,
                "Metrics":[
                  {"Id":"resets","ReturnData":false,"MetricStat":{"Metric":{"Namespace":"AWS/NetworkELB","MetricName":"TCP_Target_Reset_Count","Dimensions":[{"name":"LoadBalancer","value":"net/x/1"}]},"Period":60,"Stat":"Sum"}},
                  {"Id":"flows","ReturnData":false,"MetricStat":{"Metric":{"Namespace":"AWS/NetworkELB","MetricName":"NewFlowCount","Dimensions":[{"name":"LoadBalancer","value":"net/x/1"}]},"Period":60,"Stat":"Sum"}},
                  {"Id":"rate","Expression":"100 * resets / flows","ReturnData":true}]}}"#,
        )
        .unwrap();
        assert_eq!(
            n.primary_metric().unwrap().metric_name.as_deref(),
            Some("TCP_Target_Reset_Count")
        );
        assert_eq!(n.per_request_scale(), Some(100.0));
    }

    #[test]
    fn statistic_in_notification_spelling_is_normalised() {
        assert_eq!(normalise_statistic("AVERAGE"), "Average");
        assert_eq!(normalise_statistic("p99"), "p99");
    }
}
