//! SQS: sends diagnoses to the diagnosis queue.

use aws_sdk_sqs::types::MessageAttributeValue;
use aws_smithy_types::error::display::DisplayErrorContext;

use crate::error::Result;
use crate::publish::{Outgoing, failure};

/// Sends the JSON diagnosis to one queue; FIFO queues deduplicate by diagnosis id.
#[derive(Debug, Clone)]
pub struct SqsPublisher {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsPublisher {
    pub fn new(client: aws_sdk_sqs::Client, queue_url: String) -> Self {
        SqsPublisher { client, queue_url }
    }

    /// Returns the SQS message id.
    pub async fn send(&self, outgoing: &Outgoing) -> Result<String> {
        let mut request = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(&outgoing.json);
        for (name, value) in &outgoing.attributes {
            let attribute = MessageAttributeValue::builder()
                .data_type("String")
                .string_value(value)
                .build()
                .map_err(|e| failure("sqs", format!("message attribute {name}: {e}")))?;
            request = request.message_attributes(name, attribute);
        }
        if self.queue_url.ends_with(".fifo") {
            request = request
                .message_group_id(&outgoing.group_id)
                .message_deduplication_id(&outgoing.diagnosis_id);
        }
        let answer = request.send().await.map_err(|e| {
            failure(
                "sqs",
                format!(
                    "send to {} failed: {}",
                    self.queue_url,
                    DisplayErrorContext(&e)
                ),
            )
        })?;
        Ok(answer.message_id().unwrap_or_default().to_owned())
    }
}

/// The hold queue: held diagnoses come back to the function after a delay.
#[derive(Debug, Clone)]
pub struct SqsHoldQueue {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsHoldQueue {
    pub fn new(client: aws_sdk_sqs::Client, queue_url: String) -> Self {
        SqsHoldQueue { client, queue_url }
    }
}

impl crate::publish::hold::HoldQueue for SqsHoldQueue {
    async fn hold(&self, body: String, delay_seconds: u32) -> Result<String> {
        let delay = i32::try_from(delay_seconds.min(900)).unwrap_or(900);
        let answer = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .delay_seconds(delay)
            .send()
            .await
            .map_err(|e| {
                failure(
                    "the hold queue",
                    format!(
                        "send to {} failed: {}",
                        self.queue_url,
                        DisplayErrorContext(&e)
                    ),
                )
            })?;
        Ok(answer.message_id().unwrap_or_default().to_owned())
    }
}
