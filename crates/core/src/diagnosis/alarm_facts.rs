//! The alarm as the diagnosis describes it: built once from the notification
//! (and completed once from the alarm's definition), typed, and published in
//! schema v1's plain strings.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::alarm::facts::{
    AlarmArn, Comparison, DEFAULT_PERIOD_SECONDS, MetricFamily, MetricRef, Statistic,
};
use crate::alarm::{AlarmKind, AlarmNotification, AlarmState, Dimension};

/// The alarm as the diagnosis describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "AlarmFactsV1", into = "AlarmFactsV1")]
pub struct AlarmFacts {
    pub name: String,
    pub arn: Option<AlarmArn>,
    pub description: Option<String>,
    /// Region display name from the notification (`Europe (Ireland)`).
    pub region_name: String,
    pub account: String,
    pub kind: AlarmKind,
    pub old_state: AlarmState,
    pub new_state: AlarmState,
    pub state_change_time: DateTime<Utc>,
    pub reason: String,
    /// What is watched, in one line.
    pub metric: String,
    /// The one metric the alarm is about (none for composites and math over several).
    pub watched: Option<MetricRef>,
    pub expression: Option<String>,
    pub statistic: Option<Statistic>,
    pub comparison: Option<Comparison>,
    pub threshold: Option<f64>,
    pub period_seconds: Option<u32>,
    pub evaluation_periods: Option<u32>,
    pub datapoints_to_alarm: Option<u32>,
    pub treat_missing_data: Option<String>,
    pub alarm_rule: Option<String>,
    /// A rate alarm (`100 * errors / requests`): the alarm's value is the
    /// watched metric per request, times this.
    pub per_request_scale: Option<f64>,
}

impl AlarmFacts {
    pub fn from_notification(n: &AlarmNotification) -> Self {
        let trigger = n.trigger.as_ref();
        let watched = n.primary_metric().and_then(|m| {
            Some(MetricRef {
                namespace: m.namespace?,
                name: m.metric_name?,
                dimensions: m.dimensions,
            })
        });
        AlarmFacts {
            name: n.alarm_name.clone(),
            arn: n.alarm_arn.as_deref().and_then(AlarmArn::parse),
            description: n.alarm_description.clone().filter(|d| !d.trim().is_empty()),
            region_name: n.region.clone(),
            account: n.aws_account_id.clone(),
            kind: n.kind(),
            old_state: n.old_state_value,
            new_state: n.new_state_value,
            state_change_time: n.state_change_time.0,
            reason: n.new_state_reason.clone(),
            metric: n.describe_metric(),
            watched,
            expression: n.expression().map(str::to_owned),
            statistic: n.statistic().as_deref().map(Statistic::parse),
            comparison: trigger
                .and_then(|t| t.comparison_operator.as_deref())
                .and_then(Comparison::parse),
            threshold: trigger.and_then(|t| t.threshold),
            period_seconds: n.period_seconds(),
            evaluation_periods: trigger.and_then(|t| t.evaluation_periods),
            datapoints_to_alarm: trigger
                .and_then(|t| t.datapoints_to_alarm.or(t.evaluation_periods)),
            treat_missing_data: n.treat_missing_data().map(str::to_owned),
            alarm_rule: n.alarm_rule.clone(),
            per_request_scale: n.per_request_scale(),
        }
    }

    /// Fills what the notification did not carry from the alarm's definition
    /// (DescribeAlarms): an EventBridge event has no comparison or evaluation
    /// counts, and its reason does not always spell them out. What the
    /// notification said wins: the definition may have changed since.
    pub fn complete_from(&mut self, definition: &crate::evidence::model::AlarmDefinition) {
        fn fill<T: Clone>(slot: &mut Option<T>, from: Option<T>) {
            if slot.is_none() {
                *slot = from;
            }
        }
        fill(
            &mut self.statistic,
            definition.statistic.as_deref().map(Statistic::parse),
        );
        fill(
            &mut self.comparison,
            definition.comparison.as_deref().and_then(Comparison::parse),
        );
        fill(&mut self.threshold, definition.threshold);
        fill(&mut self.period_seconds, definition.period_seconds);
        fill(&mut self.evaluation_periods, definition.evaluation_periods);
        fill(
            &mut self.datapoints_to_alarm,
            definition.datapoints_to_alarm,
        );
        fill(&mut self.datapoints_to_alarm, definition.evaluation_periods);
    }

    /// The region code from the ARN (`eu-west-1`).
    pub fn region(&self) -> Option<&str> {
        self.arn.as_ref().map(|arn| arn.region.as_str())
    }

    pub fn namespace(&self) -> Option<&str> {
        self.watched.as_ref().map(|m| m.namespace.as_str())
    }

    pub fn metric_name(&self) -> Option<&str> {
        self.watched.as_ref().map(|m| m.name.as_str())
    }

    /// What the watched metric measures; `Other` when there is no one metric.
    pub fn family(&self) -> MetricFamily {
        self.watched
            .as_ref()
            .map_or(MetricFamily::Other, MetricRef::family)
    }

    /// The value of a dimension of the watched metric.
    pub fn dimension(&self, name: &str) -> Option<&str> {
        self.watched.as_ref()?.dimension(name)
    }

    /// The statistic evaluated, CloudWatch's default when the alarm does not say.
    pub fn evaluated_statistic(&self) -> Statistic {
        self.statistic.clone().unwrap_or(Statistic::DEFAULT)
    }

    /// The comparison, CloudWatch's most common when the alarm does not say.
    pub fn comparison_or_default(&self) -> Comparison {
        self.comparison.unwrap_or(Comparison::DEFAULT)
    }

    /// The period in seconds, CloudWatch's shortest standard one when unknown.
    pub fn period(&self) -> u32 {
        self.period_seconds.unwrap_or(DEFAULT_PERIOD_SECONDS)
    }
}

/// Schema v1's spelling of [`AlarmFacts`]: plain strings, as published.
#[derive(Serialize, Deserialize)]
struct AlarmFactsV1 {
    name: String,
    arn: Option<String>,
    description: Option<String>,
    region: Option<String>,
    region_name: String,
    account: String,
    kind: AlarmKind,
    old_state: AlarmState,
    new_state: AlarmState,
    state_change_time: DateTime<Utc>,
    reason: String,
    metric: String,
    namespace: Option<String>,
    metric_name: Option<String>,
    dimensions: Vec<Dimension>,
    expression: Option<String>,
    statistic: Option<String>,
    comparison: Option<String>,
    threshold: Option<f64>,
    period_seconds: Option<u32>,
    evaluation_periods: Option<u32>,
    datapoints_to_alarm: Option<u32>,
    treat_missing_data: Option<String>,
    alarm_rule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    per_request_scale: Option<f64>,
}

impl From<AlarmFacts> for AlarmFactsV1 {
    fn from(a: AlarmFacts) -> Self {
        let (namespace, metric_name, dimensions) = match a.watched {
            Some(m) => (Some(m.namespace), Some(m.name), m.dimensions),
            None => (None, None, Vec::new()),
        };
        AlarmFactsV1 {
            region: a.arn.as_ref().map(|arn| arn.region.clone()),
            arn: a.arn.map(|arn| arn.to_string()),
            name: a.name,
            description: a.description,
            region_name: a.region_name,
            account: a.account,
            kind: a.kind,
            old_state: a.old_state,
            new_state: a.new_state,
            state_change_time: a.state_change_time,
            reason: a.reason,
            metric: a.metric,
            namespace,
            metric_name,
            dimensions,
            expression: a.expression,
            statistic: a.statistic.map(|s| s.to_string()),
            comparison: a.comparison.map(|c| c.as_str().to_owned()),
            threshold: a.threshold,
            period_seconds: a.period_seconds,
            evaluation_periods: a.evaluation_periods,
            datapoints_to_alarm: a.datapoints_to_alarm,
            treat_missing_data: a.treat_missing_data,
            alarm_rule: a.alarm_rule,
            per_request_scale: a.per_request_scale,
        }
    }
}

impl From<AlarmFactsV1> for AlarmFacts {
    fn from(w: AlarmFactsV1) -> Self {
        let watched = match (w.namespace, w.metric_name) {
            (Some(namespace), Some(name)) => Some(MetricRef {
                namespace,
                name,
                dimensions: w.dimensions,
            }),
            _ => None,
        };
        AlarmFacts {
            name: w.name,
            arn: w.arn.as_deref().and_then(AlarmArn::parse),
            description: w.description,
            region_name: w.region_name,
            account: w.account,
            kind: w.kind,
            old_state: w.old_state,
            new_state: w.new_state,
            state_change_time: w.state_change_time,
            reason: w.reason,
            metric: w.metric,
            watched,
            expression: w.expression,
            statistic: w.statistic.as_deref().map(Statistic::parse),
            comparison: w.comparison.as_deref().and_then(Comparison::parse),
            threshold: w.threshold,
            period_seconds: w.period_seconds,
            evaluation_periods: w.evaluation_periods,
            datapoints_to_alarm: w.datapoints_to_alarm,
            treat_missing_data: w.treat_missing_data,
            alarm_rule: w.alarm_rule,
            per_request_scale: w.per_request_scale,
        }
    }
}
