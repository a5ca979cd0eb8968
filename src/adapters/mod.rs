//! Adapters: turn the outside world into the plain data the core works on.
//! One per technology, each built once per cold start.

pub mod cloudwatch;

use aws_sdk_cloudwatch::error::{DisplayErrorContext, ProvideErrorMetadata};

use crate::error::Error;

/// Maps an SDK error to a gap reason: access problems name the IAM action to
/// grant, throttling and server errors are marked retryable.
pub(crate) fn sdk_failure<E, R>(
    source_name: &'static str,
    iam_action: &str,
    error: &aws_sdk_cloudwatch::error::SdkError<E, R>,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    use aws_sdk_cloudwatch::error::SdkError;
    let (retryable, reason) = match error {
        SdkError::ServiceError(service) => {
            let err = service.err();
            let code = err.code().unwrap_or("Unknown");
            let message = err.message().unwrap_or("");
            match code {
                "AccessDenied" | "AccessDeniedException" | "UnauthorizedOperation" => (
                    false,
                    format!("access denied ({code}): grant {iam_action} to the function's role"),
                ),
                "Throttling" | "ThrottlingException" | "RequestLimitExceeded" => {
                    (true, format!("throttled ({code}) after retries: {message}"))
                }
                _ => (false, format!("{code}: {message}")),
            }
        }
        SdkError::TimeoutError(_) => (true, "timed out".to_owned()),
        SdkError::DispatchFailure(_) => (
            true,
            format!(
                "could not reach the endpoint: {}",
                DisplayErrorContext(error)
            ),
        ),
        SdkError::ResponseError(_) => (true, "unreadable response from the service".to_owned()),
        other => (true, DisplayErrorContext(other).to_string()),
    };
    Error::Source {
        source_name,
        reason,
        retryable,
    }
}
