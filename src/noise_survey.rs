//! Reads what the noise digest ranks (`alarm_triage_core::digest`): every
//! metric alarm of the account, its state changes over the span, its own
//! metric at its statistic and period, and, with the thread table, how many
//! of its diagnoses named no cause. Read-only; four alarms at a time.

use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt, TryStreamExt};

use crate::adapters::cloudwatch::{CloudWatchSource, ListedAlarm};
use crate::alarm::AlarmState;
use crate::digest::AlarmOverSpan;
use crate::error::Result;
use crate::evidence::model::MetricQuery;
use crate::evidence::{AlarmSource, MetricSource};
use crate::notify::seen::SeenStore;

/// CloudWatch keeps 1-minute datapoints 15 days and 5-minute ones 63
/// days: over a longer span the alarm's own period would come back empty.
fn retained_period(period: u32, span: chrono::Duration) -> u32 {
    if span > chrono::Duration::days(63) {
        period.max(3600)
    } else if span > chrono::Duration::days(15) {
        period.max(300)
    } else {
        period
    }
}

/// Alarms read at once.
const CONCURRENCY: usize = 4;

pub async fn survey<S: SeenStore>(
    cloudwatch: &CloudWatchSource,
    seen: Option<&S>,
    prefix: Option<&str>,
    from: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Vec<AlarmOverSpan>> {
    let listed = cloudwatch.list_metric_alarms(prefix).await?;
    stream::iter(listed)
        .map(|alarm| read_one(cloudwatch, seen, alarm, from, now))
        .buffered(CONCURRENCY)
        .try_collect()
        .await
}

async fn read_one<S: SeenStore>(
    cloudwatch: &CloudWatchSource,
    seen: Option<&S>,
    alarm: ListedAlarm,
    from: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<AlarmOverSpan> {
    let d = &alarm.definition;
    let query = match (&d.namespace, &d.metric_name, &d.statistic, d.period_seconds) {
        (Some(namespace), Some(metric), Some(stat), Some(period)) => Some(MetricQuery {
            id: "alarm_metric".to_owned(),
            namespace: namespace.clone(),
            metric_name: metric.clone(),
            dimensions: d.dimensions.clone(),
            stat: stat.clone(),
            period_seconds: retained_period(period, now - from),
        }),
        _ => None,
    };
    let key = format!(
        "seen|alarm|{}",
        alarm.arn.as_deref().unwrap_or(d.name.as_str())
    );
    let (history, series, records) = tokio::join!(
        cloudwatch.state_history(&d.name, from, now),
        async {
            match &query {
                Some(q) => {
                    cloudwatch
                        .metric_data(std::slice::from_ref(q), from, now)
                        .await
                }
                None => Ok(Vec::new()),
            }
        },
        async {
            match seen {
                Some(store) => store.history(&key).await.map(Some),
                None => Ok(None),
            }
        }
    );
    let history = history?;
    let state_at_start = history
        .changes()
        .first()
        .map(|c| c.from)
        .or(d.state)
        .unwrap_or(AlarmState::Ok);
    let metric_values = series?
        .into_iter()
        .flat_map(|s| s.points.into_iter().map(|(_, v)| v))
        .collect();
    let diagnoses = records?.map(|records| {
        let recent: Vec<_> = records.iter().filter(|r| r.at >= from).collect();
        (
            recent.len(),
            recent.iter().filter(|r| r.causes.is_empty()).count(),
        )
    });
    Ok(AlarmOverSpan {
        name: d.name.clone(),
        threshold: d.threshold,
        comparison: d.comparison.clone(),
        statistic: d.statistic.clone(),
        period_seconds: d.period_seconds.unwrap_or(60),
        evaluation_periods: d.evaluation_periods.unwrap_or(1),
        datapoints_to_alarm: d.datapoints_to_alarm,
        history,
        state_at_start,
        metric_values,
        diagnoses,
    })
}
