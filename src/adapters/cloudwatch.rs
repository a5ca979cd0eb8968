//! CloudWatch: the alarm's state history.

use chrono::{DateTime, TimeZone, Utc};

use crate::error::{Error, Result};
use crate::evidence::{AlarmHistorySource, source};
use crate::history::{AlarmHistory, StateChange};

/// Reads alarm history (and later metrics) through aws-sdk-cloudwatch.
#[derive(Debug, Clone)]
pub struct CloudWatchSource {
    client: aws_sdk_cloudwatch::Client,
}

impl CloudWatchSource {
    pub fn new(client: aws_sdk_cloudwatch::Client) -> Self {
        CloudWatchSource { client }
    }
}

fn to_smithy(t: DateTime<Utc>) -> aws_sdk_cloudwatch::primitives::DateTime {
    aws_sdk_cloudwatch::primitives::DateTime::from_millis(t.timestamp_millis())
}

fn from_smithy(t: &aws_sdk_cloudwatch::primitives::DateTime) -> Option<DateTime<Utc>> {
    let millis = t.to_millis().ok()?;
    Utc.timestamp_millis_opt(millis).single()
}

impl AlarmHistorySource for CloudWatchSource {
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
                super::sdk_failure(source::ALARM_HISTORY, "cloudwatch:DescribeAlarmHistory", &e)
            })?;
            for item in page.alarm_history_items() {
                let (Some(at), Some(data)) =
                    (item.timestamp().and_then(from_smithy), item.history_data())
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
}
