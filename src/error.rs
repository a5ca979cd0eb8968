//! The error type of the adapters, the gathering and publishing; what the
//! pure core refuses arrives wrapped in [`Error::Core`].
//!
//! Each variant says what was received and what was expected, so a log line or
//! a CLI message is enough to understand a rejection without the payload.

/// Everything that can go wrong in the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Input the core refused, or a diagnosis it could not serialise.
    #[error(transparent)]
    Core(#[from] alarm_triage_core::Error),

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

    /// A message on the hold queue that is not a held report; it fails its
    /// batch item, so that SQS keeps it and moves it to the dead-letter queue.
    #[error("SQS message {message_id} on the hold queue is not a held report: {problem}")]
    NotAHeldReport { message_id: String, problem: String },

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
        matches!(self, Error::Core(e) if e.is_rejection())
    }

    /// A short, stable machine name for the error kind (used in logs and responses).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Core(e) => e.kind(),
            Error::Source { .. } => "evidence_source",
            Error::Publish { .. } => "publish",
            Error::SlackRejected { .. } => "slack_rejected",
            Error::SlackUnavailable { .. } => "slack_unavailable",
            Error::Secret { .. } => "slack_secret",
            Error::NotADiagnosis { .. } => "not_a_diagnosis",
            Error::NotAHeldReport { .. } => "not_a_held_report",
            Error::Config { .. } => "config",
        }
    }
}

/// Convenience alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;
