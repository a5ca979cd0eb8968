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

/// Calls that may go at once: one second's worth.
const CALL_BURST: u32 = 2;

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
            pacer: Arc::new(Pacer::new(CALL_SPACING, CALL_BURST)),
        }
    }
}

/// Keeps calls under the API's rate instead of being throttled: a bucket of
/// `burst` calls, refilled one call every `spacing`. The first lookups go at
/// once; later ones (more kinds, next pages) wait their turn.
#[derive(Debug)]
struct Pacer {
    /// When the bucket was last full, as the time its tokens were all spent up to.
    next: Mutex<Option<Instant>>,
    spacing: Duration,
    burst: u32,
}

impl Pacer {
    fn new(spacing: Duration, burst: u32) -> Self {
        Pacer {
            next: Mutex::new(None),
            spacing,
            burst,
        }
    }

    /// Waits for this call's turn.
    async fn turn(&self) {
        let mut next = self.next.lock().await;
        let now = Instant::now();
        // A full bucket holds `burst` calls: the earliest "next" is that far back.
        let floor = now
            .checked_sub(self.spacing * self.burst.saturating_sub(1))
            .unwrap_or(now);
        let at = next.map_or(floor, |n| n.max(floor));
        *next = Some(at + self.spacing);
        drop(next);
        if at > now {
            tokio::time::sleep_until(at).await;
        }
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
    async fn two_calls_go_at_once_and_the_next_wait_their_turn() {
        let pacer = Pacer::new(CALL_SPACING, CALL_BURST);
        let started = Instant::now();
        let mut at = Vec::new();
        for _ in 0..4 {
            pacer.turn().await;
            at.push(started.elapsed().as_millis());
        }
        assert_eq!(at, [0, 0, 500, 1000]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_pacer_refills_its_burst() {
        let pacer = Pacer::new(CALL_SPACING, CALL_BURST);
        for _ in 0..3 {
            pacer.turn().await;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        let started = Instant::now();
        pacer.turn().await;
        pacer.turn().await;
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
