//! DynamoDB as the thread store: one item per alarm and channel, written with
//! a condition so two invocations cannot both start the thread, and a TTL
//! attribute (`expires_at`) so DynamoDB removes closed threads by itself.
//! Also the ledger of published transitions, and ([`feedback`]) the
//! feedback table.

mod email;
pub mod feedback;
mod incidents;
mod seen;

use aws_config::SdkConfig;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use super::{sdk_failure, service_error_code};
use crate::error::{Error, Result};
use crate::notify::thread::{Thread, ThreadKey, ThreadStore};

/// The table: partition key `thread_key` (string), TTL attribute `expires_at`.
#[derive(Debug, Clone)]
pub struct DynamoDbThreads {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoDbThreads {
    /// A store over an existing client (tests give it a mocked one).
    pub fn from_client(client: aws_sdk_dynamodb::Client, table: String) -> Self {
        DynamoDbThreads { client, table }
    }

    pub fn new(aws: &SdkConfig, table: String) -> Self {
        DynamoDbThreads {
            client: aws_sdk_dynamodb::Client::new(aws),
            table,
        }
    }
}

/// A failed call on `table`, named with its IAM action.
fn table_failure<E, R>(
    table: &str,
    action: &str,
    e: &aws_smithy_runtime_api::client::result::SdkError<E, R>,
) -> Error
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    sdk_failure("dynamodb", &format!("dynamodb:{action} on {table}"), e)
}

/// A conditional write's outcome: `true` when written, `false` when its
/// condition did not hold (someone else's item is there).
fn written<T, E, R>(
    answer: std::result::Result<T, aws_smithy_runtime_api::client::result::SdkError<E, R>>,
    table: &str,
    action: &str,
) -> Result<bool>
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match answer {
        Ok(_) => Ok(true),
        Err(e) if service_error_code(&e) == Some("ConditionalCheckFailedException") => Ok(false),
        Err(e) => Err(table_failure(table, action, &e)),
    }
}

fn unreadable(table: &str, what: &str) -> Error {
    Error::Source {
        source_name: "dynamodb",
        reason: format!("the item in {table} has no readable {what}"),
        retryable: false,
    }
}

impl ThreadStore for DynamoDbThreads {
    async fn find(&self, key: &ThreadKey) -> Result<Option<Thread>> {
        let answer = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("thread_key", AttributeValue::S(key.as_str().to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| table_failure(&self.table, "GetItem", &e))?;
        let Some(item) = answer.item() else {
            return Ok(None);
        };
        let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
        let time = |name: &str| -> Result<DateTime<Utc>> {
            item.get(name)
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse::<i64>().ok())
                .and_then(|secs| DateTime::from_timestamp(secs, 0))
                .ok_or_else(|| unreadable(&self.table, name))
        };
        Ok(Some(Thread {
            channel_id: text("channel_id").ok_or_else(|| unreadable(&self.table, "channel_id"))?,
            ts: text("ts").ok_or_else(|| unreadable(&self.table, "ts"))?,
            started_at: time("started_at")?,
            expires_at: time("expires_at")?,
            incident: text("incident"),
        }))
    }

    async fn remember(&self, key: &ThreadKey, thread: &Thread, now: DateTime<Utc>) -> Result<bool> {
        let mut put = self.client.put_item();
        if let Some(incident) = &thread.incident {
            put = put.item("incident", AttributeValue::S(incident.clone()));
        }
        let answer = put
            .table_name(&self.table)
            .item("thread_key", AttributeValue::S(key.as_str().to_owned()))
            .item("channel_id", AttributeValue::S(thread.channel_id.clone()))
            .item("ts", AttributeValue::S(thread.ts.clone()))
            .item(
                "started_at",
                AttributeValue::N(thread.started_at.timestamp().to_string()),
            )
            .item(
                "expires_at",
                AttributeValue::N(thread.expires_at.timestamp().to_string()),
            )
            .condition_expression("attribute_not_exists(thread_key) OR expires_at <= :now")
            .expression_attribute_values(":now", AttributeValue::N(now.timestamp().to_string()))
            .send()
            .await;
        written(answer, &self.table, "PutItem")
    }
}

/// DynamoDB as the ledger of published transitions: one item per diagnosis
/// id (partition key `transition`), claimed with a conditional write, kept a
/// day (TTL attribute `expires_at`): SNS and EventBridge deliver within
/// seconds of each other, retries within hours.
#[derive(Debug, Clone)]
pub struct DynamoDbTransitions {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoDbTransitions {
    /// A ledger over an existing client (tests give it a mocked one).
    pub fn from_client(client: aws_sdk_dynamodb::Client, table: String) -> Self {
        DynamoDbTransitions { client, table }
    }

    pub fn new(aws: &SdkConfig, table: String) -> Self {
        DynamoDbTransitions {
            client: aws_sdk_dynamodb::Client::new(aws),
            table,
        }
    }

    fn failure<E, R>(
        &self,
        action: &str,
        e: &aws_smithy_runtime_api::client::result::SdkError<E, R>,
    ) -> Error
    where
        E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        table_failure(&self.table, action, e)
    }
}

impl crate::publish::once::TransitionLedger for DynamoDbTransitions {
    async fn claim(&self, id: &str, now: DateTime<Utc>) -> Result<bool> {
        let stale = now - crate::publish::once::STALE_CLAIM;
        let answer = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("transition", AttributeValue::S(id.to_owned()))
            .item("state", AttributeValue::S("claimed".to_owned()))
            .item("claimed_at", AttributeValue::N(now.timestamp().to_string()))
            .item(
                "expires_at",
                AttributeValue::N((now + chrono::Duration::days(1)).timestamp().to_string()),
            )
            .condition_expression(
                "attribute_not_exists(#transition) OR (#state = :claimed AND claimed_at < :stale)",
            )
            .expression_attribute_names("#transition", "transition")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":claimed", AttributeValue::S("claimed".to_owned()))
            .expression_attribute_values(":stale", AttributeValue::N(stale.timestamp().to_string()))
            .send()
            .await;
        written(answer, &self.table, "PutItem")
    }

    async fn published(&self, id: &str) -> Result<()> {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("transition", AttributeValue::S(id.to_owned()))
            .update_expression("SET #state = :published")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":published", AttributeValue::S("published".to_owned()))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| self.failure("UpdateItem", &e))
    }

    async fn release(&self, id: &str) -> Result<()> {
        let answer = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("transition", AttributeValue::S(id.to_owned()))
            .condition_expression("#state = :claimed")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":claimed", AttributeValue::S("claimed".to_owned()))
            .send()
            .await;
        // Already published or taken over: nothing to give up.
        written(answer, &self.table, "DeleteItem").map(|_| ())
    }
}
