//! Reading Slack's answers. Incoming webhooks answer in plain text (`ok`, or
//! an error string with a 4xx); the Web API answers 200 with `{"ok": false,
//! "error": ...}` for most failures. Both answer 429 with `Retry-After` when
//! rate limited, and occasionally 5xx.

use std::time::Duration;

use serde::Deserialize;

/// What came back over HTTP, before interpretation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAnswer {
    pub status: u16,
    /// The `Retry-After` header, as sent.
    pub retry_after: Option<String>,
    pub body: String,
}

/// What an answer means for the delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Posted. The Web API says where (`channel` ID and `ts`, to thread replies under).
    Posted {
        channel_id: Option<String>,
        ts: Option<String>,
    },
    /// 429: try again after this long.
    RateLimited { retry_after: Duration },
    /// 5xx, a timeout or no connection: try again with backoff.
    Unavailable { reason: String },
    /// Slack could not read the blocks: try once more with plain text.
    BlocksRejected { status: u16, error: String },
    /// A permanent refusal: retrying the same request cannot succeed.
    Rejected { status: u16, error: String },
}

/// Used when a 429 comes without a readable `Retry-After`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Slack's error strings that mean the message format, not the destination, was refused.
const BLOCK_ERRORS: [&str; 3] = [
    "invalid_blocks",
    "invalid_blocks_format",
    "invalid_attachments",
];

/// Web API errors that are Slack's own trouble, documented as safe to retry.
const TRANSIENT_ERRORS: [&str; 4] = [
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
];

/// Interprets an incoming webhook's answer.
pub fn from_webhook(answer: &HttpAnswer) -> Answer {
    let error = answer.body.trim();
    match answer.status {
        200..=299 => Answer::Posted {
            channel_id: None,
            ts: None,
        },
        429 => rate_limited(answer),
        500..=599 => Answer::Unavailable {
            reason: format!("HTTP {} {}", answer.status, short(error)),
        },
        status if BLOCK_ERRORS.contains(&error) => Answer::BlocksRejected {
            status,
            error: error.to_owned(),
        },
        status => Answer::Rejected {
            status,
            error: if error.is_empty() {
                "(empty answer)".to_owned()
            } else {
                short(error)
            },
        },
    }
}

#[derive(Deserialize)]
struct ApiBody {
    ok: bool,
    error: Option<String>,
    channel: Option<String>,
    ts: Option<String>,
}

/// Interprets a Web API (`chat.postMessage`) answer.
pub fn from_web_api(answer: &HttpAnswer) -> Answer {
    match answer.status {
        429 => return rate_limited(answer),
        500..=599 => {
            return Answer::Unavailable {
                reason: format!("HTTP {} {}", answer.status, short(answer.body.trim())),
            };
        }
        _ => {}
    }
    let Ok(body) = serde_json::from_str::<ApiBody>(&answer.body) else {
        return if (200..300).contains(&answer.status) {
            Answer::Unavailable {
                reason: format!("unreadable answer: {}", short(answer.body.trim())),
            }
        } else {
            Answer::Rejected {
                status: answer.status,
                error: short(answer.body.trim()),
            }
        };
    };
    if body.ok {
        return Answer::Posted {
            channel_id: body.channel,
            ts: body.ts,
        };
    }
    let error = body.error.unwrap_or_else(|| "(no error string)".to_owned());
    if error == "ratelimited" {
        return rate_limited(answer);
    }
    if TRANSIENT_ERRORS.contains(&error.as_str()) {
        return Answer::Unavailable { reason: error };
    }
    if BLOCK_ERRORS.contains(&error.as_str()) {
        return Answer::BlocksRejected {
            status: answer.status,
            error,
        };
    }
    Answer::Rejected {
        status: answer.status,
        error,
    }
}

fn rate_limited(answer: &HttpAnswer) -> Answer {
    let retry_after = answer
        .retry_after
        .as_deref()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_RETRY_AFTER);
    Answer::RateLimited { retry_after }
}

/// Slack's error strings are short; anything else is cut so a log line stays one line.
fn short(text: &str) -> String {
    crate::render::truncate(&crate::render::one_line(text), 200)
}

/// What a person should do about a permanent refusal.
pub fn advice(error: &str) -> &'static str {
    match error {
        "no_service" | "no_service_id" | "no_team" | "team_disabled" => {
            "the webhook was removed or its URL is wrong; create a new incoming webhook and update the secret"
        }
        "invalid_token" | "invalid_auth" | "not_authed" | "token_revoked" | "token_expired"
        | "account_inactive" => {
            "the webhook URL or bot token was revoked or is wrong; rotate the secret"
        }
        "missing_scope" | "not_allowed_token_type" => {
            "the bot token lacks the chat:write scope; add it to the Slack app and reinstall"
        }
        "channel_not_found" => {
            "the channel does not exist or the bot cannot see it; check SLACK_ROUTES"
        }
        "not_in_channel" => "the bot is not a member of the channel; invite it (/invite @your-bot)",
        "channel_is_archived" | "is_archived" => {
            "the channel is archived; route to another channel"
        }
        "action_prohibited" | "restricted_action" | "posting_to_general_channel_denied" => {
            "a workspace admin restricts posting there; ask them or route elsewhere"
        }
        "invalid_blocks"
        | "invalid_blocks_format"
        | "invalid_attachments"
        | "invalid_payload"
        | "no_text"
        | "msg_too_long"
        | "too_many_attachments" => {
            "Slack refused the message itself, also as plain text; report it as an alarm-triage bug with the diagnosis id"
        }
        _ => "see Slack's documentation for this error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<&str>, body: &str) -> HttpAnswer {
        HttpAnswer {
            status,
            retry_after: retry_after.map(str::to_owned),
            body: body.to_owned(),
        }
    }

    #[test]
    fn a_webhook_ok_is_posted() {
        assert!(matches!(
            from_webhook(&http(200, None, "ok")),
            Answer::Posted { .. }
        ));
    }

    #[test]
    fn a_429_waits_as_long_as_slack_asks() {
        assert_eq!(
            from_webhook(&http(429, Some("7"), "rate_limited")),
            Answer::RateLimited {
                retry_after: Duration::from_secs(7)
            }
        );
        assert_eq!(
            from_web_api(&http(429, None, "")),
            Answer::RateLimited {
                retry_after: DEFAULT_RETRY_AFTER
            }
        );
    }

    #[test]
    fn server_errors_are_worth_retrying() {
        assert!(matches!(
            from_webhook(&http(503, None, "")),
            Answer::Unavailable { .. }
        ));
        assert!(matches!(
            from_web_api(&http(200, None, r#"{"ok":false,"error":"internal_error"}"#)),
            Answer::Unavailable { .. }
        ));
    }

    #[test]
    fn webhook_refusals_keep_slacks_error_string() {
        assert_eq!(
            from_webhook(&http(404, None, "no_service")),
            Answer::Rejected {
                status: 404,
                error: "no_service".into()
            }
        );
        assert_eq!(
            from_webhook(&http(403, None, "invalid_token")),
            Answer::Rejected {
                status: 403,
                error: "invalid_token".into()
            }
        );
        assert_eq!(
            from_webhook(&http(400, None, "invalid_blocks")),
            Answer::BlocksRejected {
                status: 400,
                error: "invalid_blocks".into()
            }
        );
    }

    #[test]
    fn the_web_api_reports_errors_inside_a_200() {
        assert_eq!(
            from_web_api(&http(200, None, r#"{"ok":false,"error":"not_in_channel"}"#)),
            Answer::Rejected {
                status: 200,
                error: "not_in_channel".into()
            }
        );
        assert_eq!(
            from_web_api(&http(200, None, r#"{"ok":true,"channel":"C1","ts":"1.2"}"#)),
            Answer::Posted {
                channel_id: Some("C1".into()),
                ts: Some("1.2".into())
            }
        );
    }

    #[test]
    fn every_permanent_error_comes_with_advice() {
        assert!(advice("no_service").contains("webhook"));
        assert!(advice("not_in_channel").contains("invite"));
        assert!(advice("something_new").contains("documentation"));
    }
}
