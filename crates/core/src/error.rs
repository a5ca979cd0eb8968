//! The core's one error type: input that is not an alarm notification this
//! version reads, and a diagnosis that cannot be serialised.
//!
//! Each variant says what was received and what was expected, so a log line or
//! a CLI message is enough to understand a rejection without the payload.

/// Everything that can go wrong in the pure core.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input was empty (zero bytes or only whitespace).
    #[error(
        "received an empty payload; expected an SNS event carrying a CloudWatch alarm notification"
    )]
    EmptyInput,

    /// The input is larger than anything SNS can deliver.
    #[error(
        "received {received_bytes} bytes; expected at most {limit_bytes} bytes (an SNS message is at most 256 KiB)"
    )]
    InputTooLarge {
        received_bytes: usize,
        limit_bytes: usize,
    },

    /// The input (or the SNS message inside it) is not JSON.
    #[error("{what} is not valid JSON ({source}); it starts with {snippet:?}")]
    InvalidJson {
        what: &'static str,
        snippet: String,
        #[source]
        source: serde_json::Error,
    },

    /// SNS asks an HTTP endpoint to confirm a subscription; there is no alarm in it.
    #[error(
        "received an SNS {message_type} for topic {topic_arn}; expected a Notification carrying a CloudWatch alarm (confirm the subscription with its SubscribeURL, not with this bot)"
    )]
    SubscriptionMessage {
        message_type: String,
        topic_arn: String,
    },

    /// Valid JSON, but not a shape this bot knows.
    #[error("received JSON with top-level keys [{keys}]; expected {expected}")]
    UnrecognisedJson {
        keys: String,
        expected: &'static str,
    },

    /// A Lambda event record from another event source than SNS.
    #[error("record {index} comes from event source {event_source:?}; expected \"aws:sns\"")]
    NotAnSnsRecord { index: usize, event_source: String },

    /// An SNS message that is not a CloudWatch alarm state change.
    #[error(
        "SNS message {message_id}{} is not a CloudWatch alarm notification: it has top-level keys [{keys}]; expected AlarmName, NewStateValue, OldStateValue, StateChangeTime",
        subject.as_deref().map(|s| format!(" (subject {s:?})")).unwrap_or_default()
    )]
    NotAnAlarmNotification {
        message_id: String,
        subject: Option<String>,
        keys: String,
    },

    /// Looks like an alarm notification but a field has the wrong shape.
    #[error("CloudWatch alarm notification in SNS message {message_id} is malformed: {source}")]
    MalformedAlarmNotification {
        message_id: String,
        #[source]
        source: serde_json::Error,
    },

    /// A field holds a value CloudWatch never sends (an empty name, a year
    /// past 9999, an evaluation window longer than seven days).
    #[error(
        "CloudWatch alarm notification in SNS message {message_id}: {field} is {received}; expected {expected}"
    )]
    OutOfRange {
        message_id: String,
        field: &'static str,
        received: String,
        expected: String,
    },

    /// Rendering or serialising a diagnosis failed (a bug, not bad input).
    #[error("could not serialise the diagnosis: {0}")]
    Serialise(#[source] serde_json::Error),
}

impl Error {
    /// Whether this error means "the input is not something this bot handles"
    /// (as opposed to an internal failure). Bad input never becomes good by
    /// retrying, so none of these is retryable.
    pub fn is_rejection(&self) -> bool {
        !matches!(self, Error::Serialise(_))
    }

    /// A short, stable machine name for the error kind (used in logs and responses).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::EmptyInput => "empty_input",
            Error::InputTooLarge { .. } => "input_too_large",
            Error::InvalidJson { .. } => "invalid_json",
            Error::SubscriptionMessage { .. } => "sns_subscription_message",
            Error::UnrecognisedJson { .. } => "unrecognised_json",
            Error::NotAnSnsRecord { .. } => "not_an_sns_record",
            Error::NotAnAlarmNotification { .. } => "not_an_alarm_notification",
            Error::MalformedAlarmNotification { .. } => "malformed_alarm_notification",
            Error::OutOfRange { .. } => "out_of_range",
            Error::Serialise(_) => "serialise",
        }
    }
}

/// Convenience alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;
