//! Incidents in the thread table (key space `incident|<culprit>|<channel>`):
//! opened with a conditional put (only when none is open: its last alarm
//! fired within the window), joined with a conditional update that adds the
//! alarm to the `alarms` map, so two concurrent diagnoses never open two.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::{DynamoDbThreads, service_error_code, table_failure, unreadable, written};
use crate::error::Result;
use crate::notify::incident::{AlarmMark, Incident, IncidentKey, IncidentStore, Opening};

/// How long an incident's record is kept after its last alarm (resolutions come later).
const KEPT: i64 = 24;

fn seconds(at: DateTime<Utc>) -> AttributeValue {
    AttributeValue::N(at.timestamp().to_string())
}

fn mark(m: AlarmMark) -> AttributeValue {
    AttributeValue::S(
        match m {
            AlarmMark::Firing => "firing",
            AlarmMark::Ok => "ok",
        }
        .to_owned(),
    )
}

impl DynamoDbThreads {
    fn incident_of(&self, item: &HashMap<String, AttributeValue>) -> Result<Incident> {
        let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
        let opened_at = item
            .get("opened_at")
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse::<i64>().ok())
            .and_then(|secs| DateTime::from_timestamp(secs, 0))
            .ok_or_else(|| unreadable(&self.table, "opened_at"))?;
        let alarms: BTreeMap<String, AlarmMark> = item
            .get("alarms")
            .and_then(|v| v.as_m().ok())
            .map(|m| {
                m.iter()
                    .map(|(alarm, v)| {
                        let mark = if v.as_s().is_ok_and(|s| s == "ok") {
                            AlarmMark::Ok
                        } else {
                            AlarmMark::Firing
                        };
                        (alarm.clone(), mark)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Incident {
            channel_id: text("channel_id"),
            ts: text("ts"),
            opened_at,
            opened_by: text("opened_by").unwrap_or_default(),
            alarms,
            first_message: text("first_message").and_then(|t| serde_json::from_str(&t).ok()),
        })
    }
}

impl IncidentStore for DynamoDbThreads {
    async fn open_or_join(
        &self,
        key: &IncidentKey,
        alarm: &str,
        opener: &str,
        now: DateTime<Utc>,
        window: Duration,
    ) -> Result<Opening> {
        let stale = seconds(now - window);
        // Two rounds: an incident can go stale between a failed open and the join.
        for _ in 0..2 {
            let opened = self
                .client
                .put_item()
                .table_name(&self.table)
                .item("thread_key", AttributeValue::S(key.as_str().to_owned()))
                .item("opened_at", seconds(now))
                .item("opened_by", AttributeValue::S(opener.to_owned()))
                .item("last_at", seconds(now))
                .item(
                    "alarms",
                    AttributeValue::M(HashMap::from([(alarm.to_owned(), mark(AlarmMark::Firing))])),
                )
                .item("expires_at", seconds(now + Duration::hours(KEPT)))
                .condition_expression("attribute_not_exists(thread_key) OR last_at < :stale")
                .expression_attribute_values(":stale", stale.clone())
                .send()
                .await;
            if written(opened, &self.table, "PutItem")? {
                return Ok(Opening::Opened);
            }
            let joined = self
                .client
                .update_item()
                .table_name(&self.table)
                .key("thread_key", AttributeValue::S(key.as_str().to_owned()))
                .update_expression(
                    "SET alarms.#alarm = :firing, last_at = :now, expires_at = :expires",
                )
                .condition_expression("last_at >= :stale")
                .expression_attribute_names("#alarm", alarm)
                .expression_attribute_values(":firing", mark(AlarmMark::Firing))
                .expression_attribute_values(":now", seconds(now))
                .expression_attribute_values(":expires", seconds(now + Duration::hours(KEPT)))
                .expression_attribute_values(":stale", stale.clone())
                .return_values(ReturnValue::AllNew)
                .send()
                .await;
            match joined {
                Ok(answer) => {
                    let item = answer
                        .attributes()
                        .ok_or_else(|| unreadable(&self.table, "incident"))?;
                    return Ok(Opening::Joined(self.incident_of(item)?));
                }
                Err(e) if service_error_code(&e) == Some("ConditionalCheckFailedException") => {}
                Err(e) => return Err(table_failure(&self.table, "UpdateItem", &e)),
            }
        }
        Ok(Opening::Opened)
    }

    async fn posted(
        &self,
        key: &IncidentKey,
        channel_id: &str,
        ts: &str,
        first_message: &Value,
    ) -> Result<()> {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("thread_key", AttributeValue::S(key.as_str().to_owned()))
            .update_expression("SET channel_id = :channel, ts = :ts, first_message = :first")
            .expression_attribute_values(":channel", AttributeValue::S(channel_id.to_owned()))
            .expression_attribute_values(":ts", AttributeValue::S(ts.to_owned()))
            .expression_attribute_values(":first", AttributeValue::S(first_message.to_string()))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| table_failure(&self.table, "UpdateItem", &e))
    }

    async fn find_incident(&self, key: &IncidentKey) -> Result<Option<Incident>> {
        let answer = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("thread_key", AttributeValue::S(key.as_str().to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| table_failure(&self.table, "GetItem", &e))?;
        answer.item().map(|item| self.incident_of(item)).transpose()
    }

    async fn resolved(&self, key: &IncidentKey, alarm: &str) -> Result<Option<Incident>> {
        let answer = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("thread_key", AttributeValue::S(key.as_str().to_owned()))
            .update_expression("SET alarms.#alarm = :ok")
            .condition_expression("attribute_exists(thread_key)")
            .expression_attribute_names("#alarm", alarm)
            .expression_attribute_values(":ok", mark(AlarmMark::Ok))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match answer {
            Ok(answer) => answer
                .attributes()
                .map(|item| self.incident_of(item))
                .transpose(),
            Err(e) if service_error_code(&e) == Some("ConditionalCheckFailedException") => Ok(None),
            Err(e) => Err(table_failure(&self.table, "UpdateItem", &e)),
        }
    }
}
