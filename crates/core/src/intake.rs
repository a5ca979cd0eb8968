//! Intake: from the bytes Lambda (or a person replaying a capture) hands us to
//! alarm notifications, and the decision what each transition deserves.
//!
//! Accepted shapes:
//! - a Lambda SNS event (`{"Records":[{"EventSource":"aws:sns","Sns":{...}}]}`),
//! - an SNS HTTP delivery (`{"Type":"Notification","Message":"..."}`),
//! - a bare CloudWatch alarm message (what people paste from an email),
//! - an EventBridge "CloudWatch Alarm State Change" event ([`eventbridge`]),
//!   as a rule delivers it to Lambda or a person captured it.
//!
//! Everything else is rejected with an [`Error`] naming what it was.

pub mod eventbridge;

use aws_lambda_events::sns::SnsEvent;
use serde_json::{Map, Value};

use crate::alarm::{AlarmNotification, AlarmState};
use crate::error::{Error, Result};

/// The largest event we read. SNS messages are at most 256 KiB; escaping
/// inside the Lambda envelope can double that, so anything bigger is not SNS.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// The largest SNS message body SNS can deliver.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// One SNS delivery: the envelope facts we keep plus the raw message.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub message_id: String,
    pub topic_arn: Option<String>,
    pub subject: Option<String>,
    pub message: String,
}

/// Splits an input into its SNS deliveries.
///
/// The outer `Result` fails when the input as a whole is unusable; the inner
/// results fail per record, so one bad record in a batch does not hide the others.
pub fn deliveries_from_bytes(bytes: &[u8]) -> Result<Vec<Result<Delivery>>> {
    if bytes.len() > MAX_EVENT_BYTES {
        return Err(Error::InputTooLarge {
            received_bytes: bytes.len(),
            limit_bytes: MAX_EVENT_BYTES,
        });
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::EmptyInput);
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|source| Error::InvalidJson {
        what: "the input",
        snippet: snippet(&String::from_utf8_lossy(bytes)),
        source,
    })?;
    deliveries_from_value(value)
}

/// As [`deliveries_from_bytes`], for an already parsed JSON value (the Lambda handler's input).
pub fn deliveries_from_value(value: Value) -> Result<Vec<Result<Delivery>>> {
    let Value::Object(object) = value else {
        return Err(Error::UnrecognisedJson {
            keys: format!("(a JSON {}, not an object)", json_type(&value)),
            expected: EXPECTED_SHAPES,
        });
    };
    if object.contains_key("Records") {
        return lambda_event_deliveries(object);
    }
    if eventbridge::is_event(&object) {
        let event = Value::Object(object);
        let message_id = event
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("(EventBridge event without id)")
            .to_owned();
        return Ok(vec![eventbridge::notification_from_event(&event).map(
            |alarm| {
                Delivery {
                    message_id,
                    topic_arn: None,
                    subject: None,
                    // The SNS message form, so that everything downstream reads one shape.
                    message: serde_json::to_string(&alarm).unwrap_or_default(),
                }
            },
        )]);
    }
    if let Some(message_type) = object.get("Type").and_then(Value::as_str) {
        return Ok(vec![http_delivery(message_type, &object)]);
    }
    if object.contains_key("AlarmName") {
        let message = Value::Object(object).to_string();
        return Ok(vec![Ok(Delivery {
            message_id: "(bare alarm message)".to_owned(),
            topic_arn: None,
            subject: None,
            message,
        })]);
    }
    Err(Error::UnrecognisedJson {
        keys: key_list(&object),
        expected: EXPECTED_SHAPES,
    })
}

const EXPECTED_SHAPES: &str = "a Lambda SNS event (Records[].Sns), an SNS HTTP Notification (Type, Message), an EventBridge CloudWatch Alarm State Change event (detail-type, detail) or a CloudWatch alarm message (AlarmName, NewStateValue)";

fn lambda_event_deliveries(object: Map<String, Value>) -> Result<Vec<Result<Delivery>>> {
    let records = object
        .get("Records")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::UnrecognisedJson {
            keys: key_list(&object),
            expected: "Records to be an array of Lambda event records",
        })?;
    if records.is_empty() {
        return Err(Error::UnrecognisedJson {
            keys: "Records (empty)".to_owned(),
            expected: "at least one SNS record",
        });
    }
    let mut out = Vec::with_capacity(records.len());
    for (index, record) in records.iter().enumerate() {
        let source = record
            .get("EventSource")
            .or_else(|| record.get("eventSource"))
            .and_then(Value::as_str)
            .unwrap_or("(missing)");
        if source != "aws:sns" {
            out.push(Err(Error::NotAnSnsRecord {
                index,
                event_source: source.to_owned(),
            }));
            continue;
        }
        let single = serde_json::json!({ "Records": [record] });
        out.push(
            serde_json::from_value::<SnsEvent>(single)
                .map_err(|source| Error::InvalidJson {
                    what: "an SNS record",
                    snippet: snippet(&record.to_string()),
                    source,
                })
                .and_then(|event| {
                    event
                        .records
                        .into_iter()
                        .next()
                        .ok_or(Error::EmptyInput)
                        .map(|r| Delivery {
                            message_id: r.sns.message_id,
                            topic_arn: Some(r.sns.topic_arn),
                            subject: r.sns.subject,
                            message: r.sns.message,
                        })
                }),
        );
    }
    Ok(out)
}

fn http_delivery(message_type: &str, object: &Map<String, Value>) -> Result<Delivery> {
    let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
    if message_type != "Notification" {
        return Err(Error::SubscriptionMessage {
            message_type: message_type.to_owned(),
            topic_arn: text("TopicArn").unwrap_or_else(|| "(unknown topic)".to_owned()),
        });
    }
    let message = text("Message").ok_or_else(|| Error::UnrecognisedJson {
        keys: key_list(object),
        expected: "an SNS Notification with a string Message",
    })?;
    Ok(Delivery {
        message_id: text("MessageId").unwrap_or_else(|| "(no MessageId)".to_owned()),
        topic_arn: text("TopicArn"),
        subject: text("Subject"),
        message,
    })
}

/// Reads the CloudWatch alarm notification inside one delivery.
pub fn alarm_from_delivery(delivery: &Delivery) -> Result<AlarmNotification> {
    if delivery.message.len() > MAX_MESSAGE_BYTES {
        return Err(Error::InputTooLarge {
            received_bytes: delivery.message.len(),
            limit_bytes: MAX_MESSAGE_BYTES,
        });
    }
    // Nearly every message is an alarm: try the typed parse first, and only
    // look at the message as generic JSON to explain a failure.
    if let Ok(alarm) = serde_json::from_str::<AlarmNotification>(&delivery.message) {
        return in_range(alarm, delivery);
    }
    let value: Value =
        serde_json::from_str(&delivery.message).map_err(|source| Error::InvalidJson {
            what: "the SNS message",
            snippet: snippet(&delivery.message),
            source,
        })?;
    let looks_like_alarm = value.as_object().is_some_and(|o| {
        [
            "AlarmName",
            "NewStateValue",
            "OldStateValue",
            "StateChangeTime",
        ]
        .iter()
        .all(|k| o.contains_key(*k))
    });
    if !looks_like_alarm {
        return Err(Error::NotAnAlarmNotification {
            message_id: delivery.message_id.clone(),
            subject: delivery.subject.clone(),
            keys: match &value {
                Value::Object(o) => key_list(o),
                other => format!("(a JSON {}, not an object)", json_type(other)),
            },
        });
    }
    let alarm = serde_json::from_value::<AlarmNotification>(value).map_err(|source| {
        Error::MalformedAlarmNotification {
            message_id: delivery.message_id.clone(),
            source,
        }
    })?;
    in_range(alarm, delivery)
}

/// Refuses a notification whose numbers or instants CloudWatch would never send.
fn in_range(alarm: AlarmNotification, delivery: &Delivery) -> Result<AlarmNotification> {
    match crate::alarm::limits::check(&alarm) {
        Ok(()) => Ok(alarm),
        Err(e) => Err(Error::OutOfRange {
            message_id: delivery.message_id.clone(),
            field: e.field,
            received: e.received,
            expected: e.expected,
        }),
    }
}

/// What a state change deserves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response {
    /// Into ALARM: the full investigation.
    Diagnose,
    /// Out of ALARM: a short resolution report.
    Resolve,
    /// Between OK and INSUFFICIENT_DATA (or no change): nothing to say.
    Ignore,
}

/// ALARM gets a diagnosis, leaving ALARM gets a resolution report, the rest is ignored.
pub fn response_to(old: AlarmState, new: AlarmState) -> Response {
    match (old, new) {
        (_, AlarmState::Alarm) if old != AlarmState::Alarm => Response::Diagnose,
        (AlarmState::Alarm, AlarmState::Ok | AlarmState::InsufficientData) => Response::Resolve,
        _ => Response::Ignore,
    }
}

fn key_list(object: &Map<String, Value>) -> String {
    let mut keys: Vec<&str> = object.keys().map(String::as_str).take(12).collect();
    keys.sort_unstable();
    let mut list = keys.join(", ");
    if object.len() > 12 {
        list.push_str(", ...");
    }
    list
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The first characters of a payload, for error messages.
fn snippet(text: &str) -> String {
    const MAX: usize = 60;
    let mut out: String = text.chars().take(MAX).collect();
    if text.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_is_rejected_as_empty() {
        assert!(matches!(
            deliveries_from_bytes(b"  \n"),
            Err(Error::EmptyInput)
        ));
    }

    #[test]
    fn huge_input_is_rejected_with_its_size() {
        let huge = vec![b' '; MAX_EVENT_BYTES + 1];
        let err = deliveries_from_bytes(&huge).unwrap_err();
        assert!(err.to_string().contains(&(MAX_EVENT_BYTES + 1).to_string()));
        assert!(err.is_rejection());
    }

    #[test]
    fn invalid_json_names_what_it_received() {
        let err = deliveries_from_bytes(b"ALARM: disk full").unwrap_err();
        assert_eq!(err.kind(), "invalid_json");
        assert!(err.to_string().contains("ALARM: disk full"));
    }

    #[test]
    fn a_json_array_is_not_an_event() {
        let err = deliveries_from_bytes(b"[1,2]").unwrap_err();
        assert!(err.to_string().contains("array"), "{err}");
    }

    #[test]
    fn records_from_sqs_are_rejected_per_record() {
        let out = deliveries_from_bytes(br#"{"Records":[{"eventSource":"aws:sqs","body":"x"}]}"#)
            .unwrap();
        let err = out.into_iter().next().unwrap().unwrap_err();
        assert!(err.to_string().contains("aws:sqs"), "{err}");
    }

    #[test]
    fn transitions_map_to_responses() {
        use AlarmState::*;
        assert_eq!(response_to(Ok, Alarm), Response::Diagnose);
        assert_eq!(response_to(InsufficientData, Alarm), Response::Diagnose);
        assert_eq!(response_to(Alarm, Ok), Response::Resolve);
        assert_eq!(response_to(Alarm, InsufficientData), Response::Resolve);
        assert_eq!(response_to(Ok, InsufficientData), Response::Ignore);
        assert_eq!(response_to(InsufficientData, Ok), Response::Ignore);
        assert_eq!(response_to(Alarm, Alarm), Response::Ignore);
    }

    #[test]
    fn a_message_that_is_not_an_alarm_names_its_keys() {
        let d = Delivery {
            message_id: "m-1".into(),
            topic_arn: None,
            subject: Some("hello".into()),
            message: r#"{"order":42,"status":"shipped"}"#.into(),
        };
        let err = alarm_from_delivery(&d).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("order, status") && text.contains("m-1"),
            "{text}"
        );
    }

    #[test]
    fn a_plain_text_message_is_invalid_json() {
        let d = Delivery {
            message_id: "m-2".into(),
            topic_arn: None,
            subject: None,
            message: "Deploy finished".into(),
        };
        assert_eq!(alarm_from_delivery(&d).unwrap_err().kind(), "invalid_json");
    }
}
