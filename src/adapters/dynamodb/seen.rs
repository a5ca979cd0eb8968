//! "Seen before" records in the thread table (`seen|alarm|...`,
//! `seen|culprit|...`): one item per alarm and per culprit holding its last
//! records as JSON, rewritten with a condition on the version read, so two
//! concurrent diagnoses do not drop each other's record.

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use super::{DynamoDbThreads, table_failure, unreadable, written};
use crate::error::{Error, Result};
use crate::notify::seen::{KEPT_FOR, SeenRecord, SeenStore, appended};

impl DynamoDbThreads {
    async fn versioned_history(&self, key: &str) -> Result<(Vec<SeenRecord>, Option<u64>)> {
        let answer = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("thread_key", AttributeValue::S(key.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| table_failure(&self.table, "GetItem", &e))?;
        let Some(item) = answer.item() else {
            return Ok((Vec::new(), None));
        };
        let history = item
            .get("history")
            .and_then(|v| v.as_s().ok())
            .and_then(|text| serde_json::from_str(text).ok())
            .ok_or_else(|| unreadable(&self.table, "history"))?;
        let version = item
            .get("version")
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok());
        Ok((history, version))
    }
}

impl SeenStore for DynamoDbThreads {
    async fn history(&self, key: &str) -> Result<Vec<SeenRecord>> {
        self.versioned_history(key).await.map(|(h, _)| h)
    }

    async fn append(&self, key: &str, record: &SeenRecord, now: DateTime<Utc>) -> Result<()> {
        for _ in 0..3 {
            let (history, version) = self.versioned_history(key).await?;
            let text = serde_json::to_string(&appended(&history, record, now)).map_err(|e| {
                Error::Source {
                    source_name: "dynamodb",
                    reason: format!("could not serialise the seen-before records: {e}"),
                    retryable: false,
                }
            })?;
            let put = self
                .client
                .put_item()
                .table_name(&self.table)
                .item("thread_key", AttributeValue::S(key.to_owned()))
                .item("history", AttributeValue::S(text))
                .item(
                    "version",
                    AttributeValue::N((version.unwrap_or(0) + 1).to_string()),
                )
                .item(
                    "expires_at",
                    AttributeValue::N((now + KEPT_FOR).timestamp().to_string()),
                );
            let put = match version {
                Some(v) => put
                    .condition_expression("version = :v")
                    .expression_attribute_values(":v", AttributeValue::N(v.to_string())),
                None => put.condition_expression("attribute_not_exists(thread_key)"),
            };
            if written(put.send().await, &self.table, "PutItem")? {
                return Ok(());
            }
        }
        Err(Error::Source {
            source_name: "dynamodb",
            reason: format!("{key} in {} kept changing under three attempts", self.table),
            retryable: true,
        })
    }
}
