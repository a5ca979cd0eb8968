//! The feedback table. One table, partition key `diagnosis_id` (S), sort key
//! `entry` (S), TTL attribute `expires_at`:
//! - `entry = "diagnosis"`: what a diagnosis posted with buttons blamed
//!   (attribute `record`, JSON), kept a year;
//! - `entry = "answer#<Slack user id>"`: that person's last answer (attribute
//!   `answer`, JSON, with a copy of the record so it counts on its own), and
//!   `service` + `answered_at` for the sparse index `by_service`;
//! - partition `request#<hash>`, `entry = "request"`: a signed request seen,
//!   kept ten minutes so a replay inside Slack's 5-minute window is refused.

use aws_config::SdkConfig;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{table_failure, unreadable, written};
use crate::error::{Error, Result};
use crate::feedback::{Answer, DiagnosisRecord, FeedbackStore};

/// The sparse index over answers by culprit service, newest first.
pub const BY_SERVICE_INDEX: &str = "by_service";
const DIAGNOSIS_ENTRY: &str = "diagnosis";
const ANSWER_PREFIX: &str = "answer#";
/// Pages read by one scan (`alarm-triage accuracy`): 1 MB each.
const MAX_SCAN_PAGES: usize = 200;

#[derive(Debug, Clone)]
pub struct DynamoDbFeedback {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoDbFeedback {
    pub fn from_client(client: aws_sdk_dynamodb::Client, table: String) -> Self {
        DynamoDbFeedback { client, table }
    }

    pub fn new(aws: &SdkConfig, table: String) -> Self {
        DynamoDbFeedback {
            client: aws_sdk_dynamodb::Client::new(aws),
            table,
        }
    }

    fn json<T: Serialize>(&self, value: &T) -> Result<AttributeValue> {
        serde_json::to_string(value)
            .map(AttributeValue::S)
            .map_err(|e| Error::Source {
                source_name: "dynamodb",
                reason: format!("could not serialise an item for {}: {e}", self.table),
                retryable: false,
            })
    }

    fn parse<T: DeserializeOwned>(
        &self,
        item: &std::collections::HashMap<String, AttributeValue>,
        attribute: &str,
    ) -> Result<T> {
        item.get(attribute)
            .and_then(|v| v.as_s().ok())
            .and_then(|text| serde_json::from_str(text).ok())
            .ok_or_else(|| unreadable(&self.table, attribute))
    }
}

fn seconds(at: DateTime<Utc>) -> AttributeValue {
    AttributeValue::N(at.timestamp().to_string())
}

impl FeedbackStore for DynamoDbFeedback {
    async fn record(&self, record: &DiagnosisRecord) -> Result<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(
                "diagnosis_id",
                AttributeValue::S(record.diagnosis_id.clone()),
            )
            .item("entry", AttributeValue::S(DIAGNOSIS_ENTRY.to_owned()))
            .item("record", self.json(record)?)
            .item("recorded_at", seconds(record.recorded_at))
            .item(
                "expires_at",
                seconds(record.recorded_at + Duration::days(400)),
            )
            .send()
            .await
            .map(|_| ())
            .map_err(|e| table_failure(&self.table, "PutItem", &e))
    }

    async fn diagnosis(&self, id: &str) -> Result<Option<DiagnosisRecord>> {
        let answer = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("diagnosis_id", AttributeValue::S(id.to_owned()))
            .key("entry", AttributeValue::S(DIAGNOSIS_ENTRY.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| table_failure(&self.table, "GetItem", &e))?;
        answer
            .item()
            .map(|item| self.parse(item, "record"))
            .transpose()
    }

    async fn first_sight(&self, request_key: &str, forget_after: DateTime<Utc>) -> Result<bool> {
        let answer = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("diagnosis_id", AttributeValue::S(request_key.to_owned()))
            .item("entry", AttributeValue::S("request".to_owned()))
            .item("expires_at", seconds(forget_after))
            .condition_expression("attribute_not_exists(diagnosis_id)")
            .send()
            .await;
        written(answer, &self.table, "PutItem")
    }

    async fn answer(&self, answer: &Answer) -> Result<()> {
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(
                "diagnosis_id",
                AttributeValue::S(answer.diagnosis.diagnosis_id.clone()),
            )
            .item(
                "entry",
                AttributeValue::S(format!("{ANSWER_PREFIX}{}", answer.user.as_str())),
            )
            .item("answer", self.json(answer)?)
            .item("answered_at", seconds(answer.answered_at))
            .item(
                "expires_at",
                seconds(answer.answered_at + Duration::days(400)),
            );
        if let Some(service) = &answer.diagnosis.service {
            put = put.item("service", AttributeValue::S(service.clone()));
        }
        put.send()
            .await
            .map(|_| ())
            .map_err(|e| table_failure(&self.table, "PutItem", &e))
    }

    async fn answers_to(&self, diagnosis_id: &str) -> Result<Vec<Answer>> {
        let answer = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("diagnosis_id = :id AND begins_with(#entry, :answer)")
            .expression_attribute_names("#entry", "entry")
            .expression_attribute_values(":id", AttributeValue::S(diagnosis_id.to_owned()))
            .expression_attribute_values(":answer", AttributeValue::S(ANSWER_PREFIX.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| table_failure(&self.table, "Query", &e))?;
        answer
            .items()
            .iter()
            .map(|item| self.parse(item, "answer"))
            .collect()
    }

    async fn answers_about(&self, service: &str, limit: usize) -> Result<Vec<Answer>> {
        let answer = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(BY_SERVICE_INDEX)
            .key_condition_expression("service = :service")
            .expression_attribute_values(":service", AttributeValue::S(service.to_owned()))
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(|e| table_failure(&self.table, "Query", &e))?;
        answer
            .items()
            .iter()
            .map(|item| self.parse(item, "answer"))
            .collect()
    }

    async fn everything_since(
        &self,
        since: DateTime<Utc>,
    ) -> Result<(Vec<DiagnosisRecord>, Vec<Answer>)> {
        let (mut records, mut answers) = (Vec::new(), Vec::new());
        let mut start = None;
        for _ in 0..MAX_SCAN_PAGES {
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("recorded_at >= :since OR answered_at >= :since")
                .expression_attribute_values(":since", seconds(since))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| table_failure(&self.table, "Scan", &e))?;
            for item in page.items() {
                match item.get("entry").and_then(|v| v.as_s().ok()) {
                    Some(e) if e == DIAGNOSIS_ENTRY => records.push(self.parse(item, "record")?),
                    Some(e) if e.starts_with(ANSWER_PREFIX) => {
                        answers.push(self.parse(item, "answer")?);
                    }
                    _ => {}
                }
            }
            match page.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => return Ok((records, answers)),
            }
        }
        Err(Error::Source {
            source_name: "dynamodb",
            reason: format!(
                "{} has more than {MAX_SCAN_PAGES} pages since {since}; narrow --since",
                self.table
            ),
            retryable: false,
        })
    }
}
