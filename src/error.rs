//! The crate's one error type.
//!
//! Each variant says what was received and what was expected, so a log line or
//! a CLI message is enough to understand a rejection without the payload.

/// Everything that can go wrong in the library.
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

    /// An evidence source did not answer usefully; becomes an evidence gap.
    #[error("{source_name}: {reason}")]
    Source {
        source_name: &'static str,
        reason: String,
        retryable: bool,
    },

    /// A diagnosis could not be published; the invocation must fail so Lambda retries it.
    #[error("could not publish the diagnosis to {destination}: {reason}")]
    Publish {
        destination: &'static str,
        reason: String,
    },

    /// Slack refused a message for good (the error string says why); the event
    /// fails so it reaches the on-failure destination.
    #[error("Slack refused the message to {destination}: HTTP {status} {error}; {advice}")]
    SlackRejected {
        destination: String,
        status: u16,
        error: String,
        advice: &'static str,
    },

    /// Slack kept answering 429 or 5xx (or could not be reached) until the deadline.
    #[error(
        "Slack did not take the message to {destination} after {attempts} attempts within the invocation's deadline: {last}"
    )]
    SlackUnavailable {
        destination: String,
        attempts: u32,
        last: String,
    },

    /// The Slack secret holds something unusable (described by shape, never by value).
    #[error("the Slack secret {secret}: {problem}")]
    Secret { secret: String, problem: String },

    /// A message on the diagnosis topic that is not a diagnosis this version reads.
    #[error("SNS message {message_id} is not an alarm-triage diagnosis: {problem}")]
    NotADiagnosis { message_id: String, problem: String },

    /// Rendering or serialising a diagnosis failed (a bug, not bad input).
    #[error("could not serialise the diagnosis: {0}")]
    Serialise(#[source] serde_json::Error),

    /// A required configuration variable is missing or invalid.
    #[error("configuration variable {variable}: {problem}")]
    Config {
        variable: &'static str,
        problem: String,
    },
}

impl Error {
    /// Whether trying the same input again could succeed.
    ///
    /// Bad input never becomes good by retrying, so every rejection is
    /// non-retryable; only failures of the outside world are.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Source { retryable, .. } => *retryable,
            Error::Publish { .. } | Error::SlackUnavailable { .. } => true,
            _ => false,
        }
    }

    /// Whether this error means "the input is not something this bot handles"
    /// (as opposed to an internal failure).
    pub fn is_rejection(&self) -> bool {
        matches!(
            self,
            Error::EmptyInput
                | Error::InputTooLarge { .. }
                | Error::InvalidJson { .. }
                | Error::SubscriptionMessage { .. }
                | Error::UnrecognisedJson { .. }
                | Error::NotAnSnsRecord { .. }
                | Error::NotAnAlarmNotification { .. }
                | Error::MalformedAlarmNotification { .. }
                | Error::OutOfRange { .. }
        )
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
            Error::Source { .. } => "evidence_source",
            Error::Publish { .. } => "publish",
            Error::SlackRejected { .. } => "slack_rejected",
            Error::SlackUnavailable { .. } => "slack_unavailable",
            Error::Secret { .. } => "slack_secret",
            Error::NotADiagnosis { .. } => "not_a_diagnosis",
            Error::Serialise(_) => "serialise",
            Error::Config { .. } => "config",
        }
    }
}

/// Convenience alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;
