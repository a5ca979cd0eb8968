//! Threads: with a bot token, every later message about an alarm (its
//! resolution, the next flapping report) is a reply under the first one.
//! Threads are remembered per alarm and channel, and end after a while so a
//! new incident next week starts a new conversation. The same store records
//! which diagnosis was posted where, so a retried event is not posted twice.

use std::future::Future;

use chrono::{DateTime, Duration, Utc};

use serde_json::Value;

use super::incident::{Incident, IncidentKey, IncidentStore, Opening};
use crate::error::Result;

/// Alarm (ARN, or name without one) and channel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ThreadKey(String);

impl ThreadKey {
    pub fn new(alarm: &str, channel: &str) -> Self {
        ThreadKey(format!("{alarm}|{channel}"))
    }

    /// The record that a diagnosis was posted to a channel (same store, its own key space).
    pub fn delivery(diagnosis_id: &str, channel: &str) -> Self {
        ThreadKey(format!("posted|{diagnosis_id}|{channel}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The first message about an alarm in a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// Channel ID, as the Web API answered it.
    pub channel_id: String,
    /// The first message's `ts`: replies name it as `thread_ts`.
    pub ts: String,
    pub started_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// The incident this alarm's thread belongs to, when incidents are on.
    pub incident: Option<String>,
}

impl Thread {
    /// A thread started now, open for `lifetime`.
    pub fn started(channel_id: String, ts: String, now: DateTime<Utc>, lifetime: Duration) -> Self {
        Thread {
            channel_id,
            ts,
            started_at: now,
            expires_at: now + lifetime,
            incident: None,
        }
    }

    /// The same thread, as part of the incident `key`.
    pub fn in_incident(self, key: Option<&IncidentKey>) -> Self {
        Thread {
            incident: key.map(|k| k.as_str().to_owned()),
            ..self
        }
    }

    /// Whether later messages still go under it (stores expire items lazily, so check).
    pub fn is_open(&self, now: DateTime<Utc>) -> bool {
        now < self.expires_at
    }
}

/// Port: where threads are remembered (and, in the same store, incidents).
pub trait ThreadStore: IncidentStore + Send + Sync {
    /// Whether threads are remembered at all.
    fn enabled(&self) -> bool {
        true
    }

    /// The thread for this key, open or not.
    fn find(&self, key: &ThreadKey) -> impl Future<Output = Result<Option<Thread>>> + Send;

    /// Remembers a new thread unless an open one is already there (a
    /// concurrent invocation won); returns whether it was stored.
    fn remember(
        &self,
        key: &ThreadKey,
        thread: &Thread,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// Remembers nothing: every message starts at the top level.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoThreads;

impl ThreadStore for NoThreads {
    fn enabled(&self) -> bool {
        false
    }

    async fn find(&self, _: &ThreadKey) -> Result<Option<Thread>> {
        Ok(None)
    }

    async fn remember(&self, _: &ThreadKey, _: &Thread, _: DateTime<Utc>) -> Result<bool> {
        Ok(false)
    }
}

/// Without a store there are no incidents: every alarm keeps its own thread.
impl IncidentStore for NoThreads {
    fn incidents_enabled(&self) -> bool {
        false
    }

    async fn open_or_join(
        &self,
        _: &IncidentKey,
        _: &str,
        _: &str,
        _: DateTime<Utc>,
        _: Duration,
    ) -> Result<Opening> {
        Ok(Opening::Opened)
    }

    async fn posted(&self, _: &IncidentKey, _: &str, _: &str, _: &Value) -> Result<()> {
        Ok(())
    }

    async fn find_incident(&self, _: &IncidentKey) -> Result<Option<Incident>> {
        Ok(None)
    }

    async fn resolved(&self, _: &IncidentKey, _: &str) -> Result<Option<Incident>> {
        Ok(None)
    }
}

/// A store that may not be configured.
impl<T: ThreadStore> ThreadStore for Option<T> {
    fn enabled(&self) -> bool {
        self.as_ref().is_some_and(ThreadStore::enabled)
    }

    async fn find(&self, key: &ThreadKey) -> Result<Option<Thread>> {
        match self {
            Some(store) => store.find(key).await,
            None => Ok(None),
        }
    }

    async fn remember(&self, key: &ThreadKey, thread: &Thread, now: DateTime<Utc>) -> Result<bool> {
        match self {
            Some(store) => store.remember(key, thread, now).await,
            None => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_closes_after_its_lifetime() {
        let now = Utc::now();
        let t = Thread::started("C1".into(), "1.2".into(), now, Duration::hours(24));
        assert!(t.is_open(now + Duration::hours(23)));
        assert!(!t.is_open(now + Duration::hours(24)));
    }

    #[test]
    fn keys_separate_channels_of_one_alarm() {
        assert_ne!(ThreadKey::new("arn:a", "#x"), ThreadKey::new("arn:a", "#y"));
    }
}
