//! Facts about a Lambda invocation that both functions need.

use std::time::{Duration, SystemTime};

/// Time left before the invocation's deadline.
///
/// Lambda sends the deadline as epoch milliseconds. cargo-lambda's runtime
/// emulator sends the function timeout itself (e.g. 600000); a value that
/// cannot be an epoch time (before 2001) is read as the time left.
pub fn remaining_time(deadline_ms: u64, now: SystemTime) -> Duration {
    const EPOCH_MS_2001: u64 = 1_000_000_000_000;
    if deadline_ms < EPOCH_MS_2001 {
        return Duration::from_millis(deadline_ms);
    }
    (SystemTime::UNIX_EPOCH + Duration::from_millis(deadline_ms))
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_is_read_as_epoch_milliseconds_or_as_the_emulators_timeout() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(
            remaining_time(1_800_000_012_000, now),
            Duration::from_secs(12)
        );
        assert_eq!(remaining_time(1_799_999_999_000, now), Duration::ZERO);
        assert_eq!(remaining_time(600_000, now), Duration::from_secs(600));
    }
}
