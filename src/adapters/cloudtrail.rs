//! CloudTrail: the management events that changed the request path, through
//! `LookupEvents`. It takes one lookup attribute per call and answers 2 calls
//! a second per account and region, so each kind of resource is one lookup
//! (paged up to a bound) and the calls are spaced by a shared pacer.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::{sdk_failure, to_chrono, to_smithy};
use crate::error::Result;
use crate::evidence::changes::{TrailEvent, TrailLookup, TrailPage};
use crate::evidence::{AuditTrailSource, source};

/// `LookupEvents`' largest page.
const PAGE_SIZE: i32 = 50;

/// Pages read per lookup before giving up on older records: 250 records.
pub const MAX_PAGES: usize = 5;

/// The API's rate: 2 calls a second per account and region.
const CALL_SPACING: Duration = Duration::from_millis(500);

/// Reads CloudTrail through aws-sdk-cloudtrail.
#[derive(Debug, Clone)]
pub struct CloudTrailSource {
    client: aws_sdk_cloudtrail::Client,
    pacer: Arc<Pacer>,
}

impl CloudTrailSource {
    pub fn new(client: aws_sdk_cloudtrail::Client) -> Self {
        CloudTrailSource {
            client,
            pacer: Arc::new(Pacer::new(CALL_SPACING)),
        }
    }
}

/// Spaces calls so that they stay under the API's rate instead of being throttled.
#[derive(Debug)]
struct Pacer {
    next: Mutex<Option<Instant>>,
    spacing: Duration,
}

impl Pacer {
    fn new(spacing: Duration) -> Self {
        Pacer {
            next: Mutex::new(None),
            spacing,
        }
    }

    /// Waits for this call's turn.
    async fn turn(&self) {
        let mut next = self.next.lock().await;
        let now = Instant::now();
        let at = next.filter(|at| *at > now).unwrap_or(now);
        *next = Some(at + self.spacing);
        drop(next);
        tokio::time::sleep_until(at).await;
    }
}

impl AuditTrailSource for CloudTrailSource {
    async fn trail_events(
        &self,
        lookup: TrailLookup,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<TrailPage> {
        let (key, value) = lookup.attribute();
        let attribute = aws_sdk_cloudtrail::types::LookupAttribute::builder()
            .attribute_key(aws_sdk_cloudtrail::types::LookupAttributeKey::from(key))
            .attribute_value(value)
            .build()
            .map_err(|e| crate::Error::Source {
                source_name: source::CLOUDTRAIL,
                reason: format!("could not build the lookup attribute {key}={value}: {e}"),
                retryable: false,
            })?;
        let mut page = TrailPage::default();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            self.pacer.turn().await;
            let out = self
                .client
                .lookup_events()
                .lookup_attributes(attribute.clone())
                .start_time(to_smithy(start))
                .end_time(to_smithy(end))
                .max_results(PAGE_SIZE)
                .set_next_token(token.take())
                .send()
                .await
                .map_err(|e| sdk_failure(source::CLOUDTRAIL, "cloudtrail:LookupEvents", &e))?;
            page.events.extend(out.events().iter().filter_map(event));
            token = out.next_token().map(str::to_owned);
            if token.is_none() {
                return Ok(page);
            }
        }
        page.truncated = true;
        Ok(page)
    }
}

fn event(e: &aws_sdk_cloudtrail::types::Event) -> Option<TrailEvent> {
    Some(TrailEvent {
        id: e.event_id()?.to_owned(),
        name: e.event_name()?.to_owned(),
        at: to_chrono(e.event_time()?)?,
        source: e.event_source().unwrap_or_default().to_owned(),
        username: e.username().map(str::to_owned),
        resources: e
            .resources()
            .iter()
            .map(|r| {
                (
                    r.resource_type().unwrap_or_default().to_owned(),
                    r.resource_name().unwrap_or_default().to_owned(),
                )
            })
            .collect(),
        record: e.cloud_trail_event().map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn calls_are_spaced_to_stay_under_the_rate() {
        let pacer = Pacer::new(CALL_SPACING);
        let started = Instant::now();
        for _ in 0..3 {
            pacer.turn().await;
        }
        assert_eq!(started.elapsed(), Duration::from_millis(1000));
    }
}
