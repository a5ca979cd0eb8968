//! Answers many alarms share, kept briefly inside a warm container.
//!
//! In an alarm storm, twenty alarms on three load balancers ask ELBv2 the same
//! questions (which target groups, their tags, their routing algorithm), and
//! the answers do not change from one alarm to the next. Keeping them for a
//! minute spares the API (and its throttling) without making a diagnosis
//! stale. Target health and metrics are never cached: they are the evidence.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a shared answer is reused.
pub const SHARED_LOOKUP_TTL: Duration = Duration::from_secs(60);
/// Past this many entries the expired ones go, and if that is not enough, all of them.
const MAX_ENTRIES: usize = 1_000;

/// A small map of answers by key, each valid for `ttl` after it was stored.
#[derive(Debug)]
pub struct WarmCache<V> {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V: Clone> WarmCache<V> {
    pub fn new(ttl: Duration) -> Self {
        WarmCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The answer stored for `key`, if it is still fresh at `now`.
    pub fn get(&self, key: &str, now: Instant) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        let (stored, value) = entries.get(key)?;
        (now.saturating_duration_since(*stored) < self.ttl).then(|| value.clone())
    }

    /// Stores an answer obtained at `now`.
    pub fn put(&self, key: String, value: V, now: Instant) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (stored, _)| now.saturating_duration_since(*stored) < self.ttl);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, (now, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_reused_until_its_time_is_up() {
        let cache = WarmCache::new(Duration::from_secs(60));
        let t0 = Instant::now();
        cache.put("lb".to_owned(), vec![1, 2], t0);
        assert_eq!(
            cache.get("lb", t0 + Duration::from_secs(59)),
            Some(vec![1, 2])
        );
        assert_eq!(cache.get("lb", t0 + Duration::from_secs(60)), None);
        assert_eq!(cache.get("other", t0), None);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = WarmCache::new(Duration::from_secs(60));
        let t0 = Instant::now();
        for i in 0..(MAX_ENTRIES + 10) {
            cache.put(i.to_string(), i, t0);
        }
        let len = cache.entries.lock().map(|e| e.len()).unwrap_or(0);
        assert!(len <= MAX_ENTRIES, "{len}");
    }
}
