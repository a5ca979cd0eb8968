//! Instant arithmetic that cannot panic.
//!
//! chrono's `-` and `*` panic on overflow. Intake keeps notifications inside
//! years 1970-9999, but the pure core is also called with `--now`, fixtures
//! and fuzzed data, so the windows it computes saturate at chrono's range
//! instead of taking the process down.

use chrono::{DateTime, Duration, Utc};

/// `t - d`, or the earliest instant chrono can hold.
pub fn earlier(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t.checked_sub_signed(d).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// `t + d`, or the latest instant chrono can hold.
pub fn later(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t.checked_add_signed(d).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// `d * n`, saturating at the longest duration chrono can hold.
pub fn times(d: Duration, n: usize) -> Duration {
    i32::try_from(n)
        .ok()
        .and_then(|n| d.checked_mul(n))
        .unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_at_the_edge_of_chronos_range_saturates_instead_of_panicking() {
        let year = Duration::days(365);
        assert_eq!(
            earlier(DateTime::<Utc>::MIN_UTC, year),
            DateTime::<Utc>::MIN_UTC
        );
        assert_eq!(
            later(DateTime::<Utc>::MAX_UTC, year),
            DateTime::<Utc>::MAX_UTC
        );
        assert_eq!(times(Duration::days(7), usize::MAX), Duration::MAX);
        assert_eq!(times(Duration::seconds(60), 3), Duration::seconds(180));
    }
}
