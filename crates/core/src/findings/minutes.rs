//! Test data for the findings: minutes and per-minute series.

use chrono::{DateTime, Duration, Utc};

use crate::evidence::model::MetricSeries;

/// Minute `minute` of a fixed test hour.
pub fn at(minute: i64) -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH + Duration::minutes(29_000_000 + minute)
}

/// One value a minute, from minute 0.
pub fn per_minute(values: &[f64]) -> MetricSeries {
    MetricSeries {
        id: "s".into(),
        points: values
            .iter()
            .enumerate()
            .map(|(i, v)| (at(i as i64), *v))
            .collect(),
    }
}
