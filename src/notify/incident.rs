//! Incidents: alarms that fire about the same culprit within a window are one
//! incident, and one incident is one thread. The first diagnosis opens it (a
//! top-level message); later ones about the same culprit reply in its thread
//! ("Also firing: ...") and the first message's header counts the alarms;
//! when every alarm in it is OK again, the first message says it resolved.
//!
//! The culprit is the Kubernetes service the diagnosis blames, else its
//! target group, else the load balancer the alarm watches, else the alarm
//! itself. Opening is a conditional write, so two concurrent diagnoses about
//! one culprit never open two incidents.

use std::collections::BTreeMap;
use std::future::Future;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::Result;
use crate::render::truncate;

/// Culprit and channel: one incident per channel it is posted to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IncidentKey(String);

impl IncidentKey {
    pub fn new(culprit: &str, channel: &str) -> Self {
        IncidentKey(format!("incident|{culprit}|{channel}"))
    }

    pub fn parse(text: &str) -> Option<Self> {
        text.starts_with("incident|")
            .then(|| IncidentKey(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether an alarm of the incident is still firing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlarmMark {
    Firing,
    Ok,
}

/// One incident in one channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Incident {
    /// Where its first message is, once posted.
    pub channel_id: Option<String>,
    pub ts: Option<String>,
    pub opened_at: DateTime<Utc>,
    /// The diagnosis that opened it (a retry of that diagnosis is still the opener).
    pub opened_by: String,
    /// Alarm name -> firing or OK.
    pub alarms: BTreeMap<String, AlarmMark>,
    /// The first message as posted (`text` and `blocks`), to update it.
    pub first_message: Option<Value>,
}

impl Incident {
    pub fn firing(&self) -> usize {
        self.alarms
            .values()
            .filter(|m| **m == AlarmMark::Firing)
            .count()
    }

    pub fn all_ok(&self) -> bool {
        !self.alarms.is_empty() && self.firing() == 0
    }
}

/// Opening an incident, or joining the one that is open.
#[derive(Debug, Clone, PartialEq)]
pub enum Opening {
    /// This diagnosis opened it: post at the top level, then [`IncidentStore::posted`].
    Opened,
    /// Another diagnosis did (its first message may still be on its way).
    Joined(Incident),
}

/// Port: where incidents are kept.
pub trait IncidentStore: Send + Sync {
    fn incidents_enabled(&self) -> bool {
        true
    }

    /// Opens the incident for `key` (recording `opener`, the diagnosis id)
    /// unless one is open (its last alarm fired less than `window` ago), in
    /// which case `alarm` joins it.
    fn open_or_join(
        &self,
        key: &IncidentKey,
        alarm: &str,
        opener: &str,
        now: DateTime<Utc>,
        window: Duration,
    ) -> impl Future<Output = Result<Opening>> + Send;

    /// Where the first message landed.
    fn posted(
        &self,
        key: &IncidentKey,
        channel_id: &str,
        ts: &str,
        first_message: &Value,
    ) -> impl Future<Output = Result<()>> + Send;

    fn find_incident(
        &self,
        key: &IncidentKey,
    ) -> impl Future<Output = Result<Option<Incident>>> + Send;

    /// Marks `alarm` OK; the incident as it is now.
    fn resolved(
        &self,
        key: &IncidentKey,
        alarm: &str,
    ) -> impl Future<Output = Result<Option<Incident>>> + Send;
}

impl<T: IncidentStore> IncidentStore for Option<T> {
    fn incidents_enabled(&self) -> bool {
        self.as_ref().is_some_and(IncidentStore::incidents_enabled)
    }

    async fn open_or_join(
        &self,
        key: &IncidentKey,
        alarm: &str,
        opener: &str,
        now: DateTime<Utc>,
        window: Duration,
    ) -> Result<Opening> {
        match self {
            Some(s) => s.open_or_join(key, alarm, opener, now, window).await,
            None => Ok(Opening::Opened),
        }
    }

    async fn posted(
        &self,
        key: &IncidentKey,
        channel_id: &str,
        ts: &str,
        first: &Value,
    ) -> Result<()> {
        match self {
            Some(s) => s.posted(key, channel_id, ts, first).await,
            None => Ok(()),
        }
    }

    async fn find_incident(&self, key: &IncidentKey) -> Result<Option<Incident>> {
        match self {
            Some(s) => s.find_incident(key).await,
            None => Ok(None),
        }
    }

    async fn resolved(&self, key: &IncidentKey, alarm: &str) -> Result<Option<Incident>> {
        match self {
            Some(s) => s.resolved(key, alarm).await,
            None => Ok(None),
        }
    }
}

/// The first message with its header counting the firing alarms
/// ("... · 3 alarms firing").
pub fn with_alarm_count(first: &Value, incident: &Incident) -> Value {
    let mut updated = first.clone();
    let count = incident.alarms.len();
    if count < 2 {
        return updated;
    }
    if let Some(header) = header_text(&mut updated) {
        let base = header
            .split(" · alarms ")
            .next()
            .unwrap_or(header)
            .to_owned();
        *header = truncate(
            &format!("{base} · alarms {} of {count} firing", incident.firing()),
            150,
        );
    }
    updated
}

/// The first message once every alarm is OK: the header says so, and a line
/// under it gives the resolution's own words.
pub fn as_resolved(
    first: &Value,
    incident: &Incident,
    now: DateTime<Utc>,
    explanation: &str,
) -> Value {
    let mut updated = first.clone();
    let minutes = (now - incident.opened_at).num_minutes().max(1);
    let resolved = format!("Resolved after {minutes} min");
    if let Some(header) = header_text(&mut updated) {
        *header = truncate(&format!("{resolved} · {header}"), 150);
    }
    if let Some(blocks) = updated["blocks"].as_array_mut() {
        blocks.retain(|b| b["block_id"] != "incident-resolved");
        let at = usize::from(!blocks.is_empty());
        blocks.insert(
            at,
            json!({
                "type": "context",
                "block_id": "incident-resolved",
                "elements": [{"type": "mrkdwn", "text": truncate(&format!(
                    ":white_check_mark: *{resolved}*: {}",
                    crate::render::slack::escape(explanation)
                ), 3000)}],
            }),
        );
    }
    if let Some(text) = updated["text"].as_str() {
        updated["text"] = json!(truncate(&format!("{resolved}: {text}"), 3900));
    }
    updated
}

/// A reply about another alarm of the incident: one line on top says so.
pub fn mark_also_firing(payload: &mut Value, alarm: &str) {
    let line = format!(
        "*Also firing in this incident:* {}",
        crate::render::slack::escape(alarm)
    );
    if let Some(blocks) = payload["blocks"].as_array_mut() {
        blocks.insert(0, json!({"type": "context", "elements": [{"type": "mrkdwn", "text": truncate(&line, 3000)}]}));
    }
    if let Some(text) = payload["text"].as_str() {
        payload["text"] = json!(truncate(&format!("Also firing: {text}"), 3900));
    }
}

fn header_text(message: &mut Value) -> Option<&mut String> {
    message["blocks"]
        .as_array_mut()?
        .iter_mut()
        .find(|b| b["type"] == "header")
        .and_then(|b| match &mut b["text"]["text"] {
            Value::String(s) => Some(s),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::diagnosis::Diagnosis;

    fn first() -> Value {
        json!({"text": "Flapping: checkout latency", "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "FLAPPING · critical · checkout-latency"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "report"}}
        ]})
    }

    fn incident(marks: &[(&str, AlarmMark)]) -> Incident {
        Incident {
            channel_id: Some("C0ALERTS01".into()),
            ts: Some("1.2".into()),
            opened_at: Utc.with_ymd_and_hms(2026, 12, 2, 10, 0, 0).unwrap(),
            opened_by: "dx-1".into(),
            alarms: marks.iter().map(|(a, m)| ((*a).to_owned(), *m)).collect(),
            first_message: Some(first()),
        }
    }

    #[test]
    fn the_culprit_is_the_service_before_the_group_before_the_load_balancer() {
        let mut d: Diagnosis = serde_json::from_str(include_str!(
            "../../tests/fixtures/diagnosis-alb-flapping-worker-ceiling.json"
        ))
        .unwrap();
        assert_eq!(d.culprit(), "service:shop/checkout");
        for group in &mut d.target_groups {
            group.kubernetes_service = None;
        }
        assert_eq!(d.culprit(), "target-group:k8s-shop-checkout-8a1f2c3d4e");
        d.target_groups.clear();
        assert!(
            d.culprit().starts_with("load-balancer:app/"),
            "{}",
            d.culprit()
        );
        d.alarm.watched = None;
        assert!(
            d.culprit().starts_with("alarm:arn:aws:cloudwatch:"),
            "{}",
            d.culprit()
        );
    }

    #[test]
    fn the_header_counts_the_alarms_once_a_second_joins() {
        let one = incident(&[("checkout-latency", AlarmMark::Firing)]);
        assert_eq!(with_alarm_count(&first(), &one), first());
        let three = incident(&[
            ("checkout-latency", AlarmMark::Firing),
            ("checkout-5xx", AlarmMark::Firing),
            ("checkout-unhealthy", AlarmMark::Ok),
        ]);
        let updated = with_alarm_count(&with_alarm_count(&first(), &three), &three);
        assert_eq!(
            updated["blocks"][0]["text"]["text"],
            "FLAPPING · critical · checkout-latency · alarms 2 of 3 firing"
        );
    }

    #[test]
    fn a_resolved_incident_says_how_long_it_lasted_and_why_it_ended() {
        let done = incident(&[("checkout-latency", AlarmMark::Ok)]);
        assert!(done.all_ok());
        let now = done.opened_at + Duration::minutes(23);
        let updated = as_resolved(
            &first(),
            &done,
            now,
            "Recovered: latency back under 1 s <ok>",
        );
        assert_eq!(
            updated["blocks"][0]["text"]["text"],
            "Resolved after 23 min · FLAPPING · critical · checkout-latency"
        );
        let line = updated["blocks"][1]["elements"][0]["text"]
            .as_str()
            .unwrap();
        assert!(
            line.starts_with(":white_check_mark: *Resolved after 23 min*: Recovered"),
            "{line}"
        );
        assert!(line.contains("&lt;ok&gt;"), "escaped: {line}");
    }
}
