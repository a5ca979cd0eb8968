//! SNS: publishes diagnoses to the diagnosis topic.

use aws_sdk_sns::types::MessageAttributeValue;
use aws_smithy_types::error::display::DisplayErrorContext;

use crate::error::Result;
use crate::publish::{Outgoing, failure};

/// Publishes to one topic with `MessageStructure=json`.
#[derive(Debug, Clone)]
pub struct SnsPublisher {
    client: aws_sdk_sns::Client,
    topic_arn: String,
}

impl SnsPublisher {
    pub fn new(client: aws_sdk_sns::Client, topic_arn: String) -> Self {
        SnsPublisher { client, topic_arn }
    }

    /// Returns the SNS message id.
    pub async fn publish(&self, outgoing: &Outgoing) -> Result<String> {
        let mut request = self
            .client
            .publish()
            .topic_arn(&self.topic_arn)
            .message_structure("json")
            .message(outgoing.sns_message())
            .subject(&outgoing.subject);
        for (name, value) in &outgoing.attributes {
            let attribute = MessageAttributeValue::builder()
                .data_type("String")
                .string_value(value)
                .build()
                .map_err(|e| failure("sns", format!("message attribute {name}: {e}")))?;
            request = request.message_attributes(name, attribute);
        }
        if self.topic_arn.ends_with(".fifo") {
            request = request
                .message_group_id(&outgoing.group_id)
                .message_deduplication_id(&outgoing.diagnosis_id);
        }
        let answer = request.send().await.map_err(|e| {
            failure(
                "sns",
                format!(
                    "publish to {} failed: {}",
                    self.topic_arn,
                    DisplayErrorContext(&e)
                ),
            )
        })?;
        Ok(answer.message_id().unwrap_or_default().to_owned())
    }
}
