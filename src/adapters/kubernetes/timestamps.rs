//! Kubernetes timestamps (`Time`, `MicroTime`) as chrono times, through
//! their RFC 3339 serialisation: the walk and the change reads share them.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Any Kubernetes timestamp type that serialises to RFC 3339.
pub(super) fn time_of<T: Serialize>(t: Option<&T>) -> Option<DateTime<Utc>> {
    let text = serde_json::to_value(t?).ok()?;
    DateTime::parse_from_rfc3339(text.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}
