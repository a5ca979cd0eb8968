//! Regular time series, the shape every chart and sparkline is drawn from.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The median of `values` (sorted in place); `None` when there are none.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

/// Values at `start`, `start + step`, ...; `None` where nothing was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// What the values are, for a person ("share of each interval in ALARM").
    pub label: String,
    /// Unit of the values ("ratio", "seconds", "count", "cores").
    pub unit: String,
    pub start: DateTime<Utc>,
    pub step_seconds: u64,
    pub values: Vec<Option<f64>>,
}

impl Series {
    /// The largest measured value.
    pub fn max(&self) -> Option<f64> {
        self.values.iter().flatten().copied().reduce(f64::max)
    }

    /// Keeps only the newest `keep` values (used to shrink a message, never the verdict).
    pub fn trim_to_newest(&mut self, keep: usize) {
        let drop = self.values.len().saturating_sub(keep);
        if drop > 0 {
            self.values.drain(..drop);
            let offset = (drop as u64).saturating_mul(self.step_seconds);
            let offset = chrono::Duration::try_seconds(i64::try_from(offset).unwrap_or(i64::MAX))
                .unwrap_or(chrono::Duration::MAX);
            self.start = crate::instants::later(self.start, offset);
        }
    }
}
