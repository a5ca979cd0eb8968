//! CloudWatch: alarm history and definition, metric data.

use chrono::{DateTime, Utc};
use futures_util::future::try_join_all;

use super::{sdk_failure, to_chrono, to_smithy};
use crate::alarm::{AlarmState, Dimension as AlarmDimension, normalise_statistic};
use crate::error::{Error, Result};
use crate::evidence::model::{AlarmDefinition, MetricQuery, MetricSeries};
use crate::evidence::{AlarmSource, MetricSource, source};
use crate::history::{AlarmHistory, StateChange};

/// GetMetricData takes at most 500 queries a call.
const MAX_QUERIES_PER_CALL: usize = 500;

/// Reads alarms and metrics through aws-sdk-cloudwatch.
#[derive(Debug, Clone)]
pub struct CloudWatchSource {
    client: aws_sdk_cloudwatch::Client,
}

impl CloudWatchSource {
    pub fn new(client: aws_sdk_cloudwatch::Client) -> Self {
        CloudWatchSource { client }
    }

    async fn metric_data_chunk(
        &self,
        queries: &[MetricQuery],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<MetricSeries>> {
        use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat, ScanBy};
        let built: Vec<MetricDataQuery> = queries
            .iter()
            .map(|q| {
                let metric = Metric::builder()
                    .namespace(&q.namespace)
                    .metric_name(&q.metric_name)
                    .set_dimensions(Some(
                        q.dimensions
                            .iter()
                            .map(|d| Dimension::builder().name(&d.name).value(&d.value).build())
                            .collect(),
                    ))
                    .build();
                MetricDataQuery::builder()
                    .id(&q.id)
                    .metric_stat(
                        MetricStat::builder()
                            .metric(metric)
                            .stat(&q.stat)
                            .period(i32::try_from(q.period_seconds).unwrap_or(60))
                            .build(),
                    )
                    .return_data(true)
                    .build()
            })
            .collect();
        let mut pages = self
            .client
            .get_metric_data()
            .set_metric_data_queries(Some(built))
            .start_time(to_smithy(start))
            .end_time(to_smithy(end))
            .scan_by(ScanBy::TimestampAscending)
            .into_paginator()
            .send();
        let mut series: Vec<MetricSeries> = queries
            .iter()
            .map(|q| MetricSeries {
                id: q.id.clone(),
                points: Vec::new(),
            })
            .collect();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| {
                sdk_failure(source::METRIC_STATISTICS, "cloudwatch:GetMetricData", &e)
            })?;
            for result in page.metric_data_results() {
                let Some(slot) = series
                    .iter_mut()
                    .find(|s| Some(s.id.as_str()) == result.id())
                else {
                    continue;
                };
                slot.points.extend(
                    result
                        .timestamps()
                        .iter()
                        .zip(result.values())
                        .filter_map(|(t, v)| Some((to_chrono(t)?, *v))),
                );
            }
        }
        for s in &mut series {
            s.points.sort_by_key(|(t, _)| *t);
            s.points.dedup_by_key(|(t, _)| *t);
        }
        Ok(series)
    }
}

impl AlarmSource for CloudWatchSource {
    async fn state_history(
        &self,
        alarm_name: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<AlarmHistory> {
        use aws_sdk_cloudwatch::types::HistoryItemType;
        let mut pages = self
            .client
            .describe_alarm_history()
            .alarm_name(alarm_name)
            .history_item_type(HistoryItemType::StateUpdate)
            .start_date(to_smithy(start))
            .end_date(to_smithy(end))
            .into_paginator()
            .send();
        let mut changes = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| {
                sdk_failure(source::ALARM_HISTORY, "cloudwatch:DescribeAlarmHistory", &e)
            })?;
            for item in page.alarm_history_items() {
                let (Some(at), Some(data)) =
                    (item.timestamp().and_then(to_chrono), item.history_data())
                else {
                    continue;
                };
                changes.extend(StateChange::from_history_data(at, data));
            }
            if changes.len() > 100_000 {
                return Err(Error::Source {
                    source_name: source::ALARM_HISTORY,
                    reason:
                        "more than 100000 state changes in the window; refusing to read further"
                            .to_owned(),
                    retryable: false,
                });
            }
        }
        Ok(AlarmHistory::from_unordered(changes).complete_since(start))
    }

    async fn definition(&self, alarm_name: &str) -> Result<Option<AlarmDefinition>> {
        use aws_sdk_cloudwatch::types::AlarmType;
        let out = self
            .client
            .describe_alarms()
            .alarm_names(alarm_name)
            .alarm_types(AlarmType::MetricAlarm)
            .alarm_types(AlarmType::CompositeAlarm)
            .send()
            .await
            .map_err(|e| sdk_failure(source::ALARM_DEFINITION, "cloudwatch:DescribeAlarms", &e))?;
        if let Some(a) = out.metric_alarms().first() {
            return Ok(Some(metric_alarm_definition(alarm_name, a)));
        }
        Ok(out.composite_alarms().first().map(|a| AlarmDefinition {
            name: alarm_name.to_owned(),
            composite: true,
            state: a.state_value().and_then(|s| AlarmState::parse(s.as_str())),
            namespace: None,
            metric_name: None,
            dimensions: Vec::new(),
            statistic: None,
            period_seconds: None,
            evaluation_periods: None,
            datapoints_to_alarm: None,
            threshold: None,
            comparison: None,
            actions_enabled: a.actions_enabled(),
        }))
    }
}

/// A metric alarm as the core's [`AlarmDefinition`].
fn metric_alarm_definition(
    alarm_name: &str,
    a: &aws_sdk_cloudwatch::types::MetricAlarm,
) -> AlarmDefinition {
    AlarmDefinition {
        name: alarm_name.to_owned(),
        composite: false,
        state: a.state_value().and_then(|s| AlarmState::parse(s.as_str())),
        namespace: a.namespace().map(str::to_owned),
        metric_name: a.metric_name().map(str::to_owned),
        dimensions: a
            .dimensions()
            .iter()
            .filter_map(|d| {
                Some(AlarmDimension {
                    name: d.name()?.to_owned(),
                    value: d.value()?.to_owned(),
                })
            })
            .collect(),
        statistic: a
            .extended_statistic()
            .map(str::to_owned)
            .or_else(|| a.statistic().map(|s| normalise_statistic(s.as_str()))),
        period_seconds: a.period().and_then(|p| u32::try_from(p).ok()),
        evaluation_periods: a.evaluation_periods().and_then(|p| u32::try_from(p).ok()),
        datapoints_to_alarm: a.datapoints_to_alarm().and_then(|p| u32::try_from(p).ok()),
        threshold: a.threshold(),
        comparison: a.comparison_operator().map(|c| c.as_str().to_owned()),
        actions_enabled: a.actions_enabled(),
    }
}

/// A metric alarm found by [`CloudWatchSource::list_metric_alarms`].
#[derive(Debug, Clone)]
pub struct ListedAlarm {
    pub arn: Option<String>,
    pub definition: AlarmDefinition,
}

/// Pages of 100 alarms read at most by one listing.
const MAX_ALARM_PAGES: usize = 20;

impl CloudWatchSource {
    /// The account's metric alarms (whose names start with `prefix`), at most 2,000.
    pub async fn list_metric_alarms(&self, prefix: Option<&str>) -> Result<Vec<ListedAlarm>> {
        use aws_sdk_cloudwatch::types::AlarmType;
        let mut pages = self
            .client
            .describe_alarms()
            .set_alarm_name_prefix(prefix.map(str::to_owned))
            .alarm_types(AlarmType::MetricAlarm)
            .max_records(100)
            .into_paginator()
            .send();
        let mut listed = Vec::new();
        for _ in 0..MAX_ALARM_PAGES {
            let Some(page) = pages.next().await else {
                break;
            };
            let page = page.map_err(|e| {
                sdk_failure(source::ALARM_DEFINITION, "cloudwatch:DescribeAlarms", &e)
            })?;
            for a in page.metric_alarms() {
                let Some(name) = a.alarm_name() else { continue };
                listed.push(ListedAlarm {
                    arn: a.alarm_arn().map(str::to_owned),
                    definition: metric_alarm_definition(name, a),
                });
            }
        }
        Ok(listed)
    }
}

impl MetricSource for CloudWatchSource {
    async fn metric_data(
        &self,
        queries: &[MetricQuery],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<MetricSeries>> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        // More than 500 queries: one call per chunk, all at once.
        let chunks = try_join_all(
            queries
                .chunks(MAX_QUERIES_PER_CALL)
                .map(|chunk| self.metric_data_chunk(chunk, start, end)),
        )
        .await?;
        Ok(chunks.into_iter().flatten().collect())
    }
}
