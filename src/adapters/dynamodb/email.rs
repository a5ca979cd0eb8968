//! The email incidents (`EMAIL_INCIDENT_TABLE`, the thread table's schema):
//! the incident items of [`super::incidents`] under `incident|<culprit>|email`,
//! with the highest severity emailed (`emailed_rank`, `raised_by`), and one
//! pointer per alarm (`email-alarm|<alarm>` -> the incident key) for its
//! resolution. Raising is a conditional update, so of two concurrent
//! diagnoses of one severity only one is emailed.

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Utc};

use super::{DynamoDbThreads, table_failure, written};
use crate::diagnosis::Severity;
use crate::error::Result;
use crate::notify::incident::IncidentKey;
use crate::publish::email::{EmailIncidents, Raise};

/// How long an alarm's pointer is kept (its incident's record lives as long).
const KEPT: i64 = 24;

fn rank(s: Severity) -> u8 {
    match s {
        Severity::Info => 0,
        Severity::Warning => 1,
        Severity::Critical => 2,
    }
}

fn severity_of(rank: u8) -> Severity {
    match rank {
        0 => Severity::Info,
        1 => Severity::Warning,
        _ => Severity::Critical,
    }
}

fn key(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

impl DynamoDbThreads {
    async fn emailed_rank(&self, incident: &IncidentKey) -> Result<Option<u8>> {
        let answer = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("thread_key", key(incident.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| table_failure(&self.table, "GetItem", &e))?;
        Ok(answer
            .item()
            .and_then(|item| item.get("emailed_rank"))
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok()))
    }
}

impl EmailIncidents for DynamoDbThreads {
    async fn raise(
        &self,
        incident: &IncidentKey,
        severity: Severity,
        by: &str,
        opener: bool,
    ) -> Result<Raise> {
        let before = self.emailed_rank(incident).await?;
        let condition = if opener {
            "attribute_exists(thread_key) AND (attribute_not_exists(emailed_rank) OR emailed_rank < :rank OR raised_by = :by)"
        } else {
            "attribute_exists(emailed_rank) AND (emailed_rank < :rank OR raised_by = :by)"
        };
        let answer = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("thread_key", key(incident.as_str()))
            .update_expression("SET emailed_rank = :rank, raised_by = :by")
            .condition_expression(condition)
            .expression_attribute_values(":rank", AttributeValue::N(rank(severity).to_string()))
            .expression_attribute_values(":by", key(by))
            .send()
            .await;
        if written(answer, &self.table, "UpdateItem")? {
            return Ok(Raise::Raised {
                from: before.map(severity_of),
            });
        }
        // Not raised: was there nothing to raise yet, or one as high already?
        Ok(match self.emailed_rank(incident).await? {
            None => Raise::NotRecordedYet,
            Some(_) => Raise::NotHigher,
        })
    }

    async fn remember_alarm(
        &self,
        alarm: &str,
        incident: &IncidentKey,
        now: DateTime<Utc>,
    ) -> Result<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("thread_key", key(&format!("email-alarm|{alarm}")))
            .item("incident_key", key(incident.as_str()))
            .item(
                "expires_at",
                AttributeValue::N((now + Duration::hours(KEPT)).timestamp().to_string()),
            )
            .send()
            .await
            .map(|_| ())
            .map_err(|e| table_failure(&self.table, "PutItem", &e))
    }

    async fn incident_of_alarm(&self, alarm: &str) -> Result<Option<IncidentKey>> {
        let answer = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("thread_key", key(&format!("email-alarm|{alarm}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| table_failure(&self.table, "GetItem", &e))?;
        Ok(answer
            .item()
            .and_then(|item| item.get("incident_key"))
            .and_then(|v| v.as_s().ok())
            .and_then(|s| IncidentKey::parse(s)))
    }
}
