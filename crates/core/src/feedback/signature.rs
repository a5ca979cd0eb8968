//! The first thing the feedback endpoint does with a request: prove that
//! Slack sent it. Pure: the signing secret, the headers, the raw body and
//! `now` are passed in.
//!
//! Slack signs `v0:<timestamp>:<raw body>` with HMAC-SHA256 under the app's
//! signing secret and sends `v0=<hex>` in `X-Slack-Signature`, the timestamp
//! in `X-Slack-Request-Timestamp`. A request is accepted only when the
//! signature matches (compared in constant time), the timestamp is within
//! five minutes of `now` (a replayed request is refused) and the body is at
//! most 64 KiB.

use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The largest body the endpoint reads.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// How far a request's timestamp may be from `now`.
pub const MAX_CLOCK_SKEW: Duration = Duration::minutes(5);

/// Why a request is refused, in words that name what was received; never
/// the secret, the signature or the body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("body of {received} bytes, over the {MAX_BODY_BYTES}-byte limit")]
    BodyTooLarge { received: usize },
    #[error("missing header {0}")]
    MissingHeader(&'static str),
    #[error("X-Slack-Request-Timestamp is not a Unix time in seconds (received {0} characters)")]
    UnreadableTimestamp(usize),
    #[error(
        "request timestamp {seconds_off} s away from now (at most 300 s): a replay or a skewed clock"
    )]
    Stale { seconds_off: i64 },
    #[error("X-Slack-Signature is not of the form v0=<64 hex digits>")]
    UnreadableSignature,
    #[error("signature does not match the body: not from Slack, or signed with another secret")]
    Forged,
}

/// What Slack sent: its two headers and the raw body, as received.
#[derive(Debug, Clone, Copy)]
pub struct SignedRequest<'a> {
    pub timestamp: Option<&'a str>,
    pub signature: Option<&'a str>,
    pub body: &'a [u8],
}

/// Accepts `request` when Slack signed it with `signing_secret` within
/// [`MAX_CLOCK_SKEW`] of `now`.
pub fn verify(
    signing_secret: &[u8],
    request: SignedRequest<'_>,
    now: DateTime<Utc>,
) -> Result<(), Refusal> {
    if request.body.len() > MAX_BODY_BYTES {
        return Err(Refusal::BodyTooLarge {
            received: request.body.len(),
        });
    }
    let timestamp = request
        .timestamp
        .ok_or(Refusal::MissingHeader("X-Slack-Request-Timestamp"))?;
    let signature = request
        .signature
        .ok_or(Refusal::MissingHeader("X-Slack-Signature"))?;
    let seconds: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| Refusal::UnreadableTimestamp(timestamp.len()))?;
    let seconds_off = (now.timestamp() - seconds).abs();
    if seconds_off > MAX_CLOCK_SKEW.num_seconds() {
        return Err(Refusal::Stale { seconds_off });
    }
    let expected = signature
        .strip_prefix("v0=")
        .and_then(decode_hex)
        .filter(|bytes| bytes.len() == 32)
        .ok_or(Refusal::UnreadableSignature)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(signing_secret).map_err(|_| Refusal::Forged)?;
    mac.update(b"v0:");
    mac.update(timestamp.trim().as_bytes());
    mac.update(b":");
    mac.update(request.body);
    // `verify_slice` compares in constant time.
    mac.verify_slice(&expected).map_err(|_| Refusal::Forged)
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    const SECRET: &[u8] = b"test-signing-secret-0123456789abcdef";
    const BODY: &[u8] = b"payload=%7B%22type%22%3A%22block_actions%22%7D";

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, 10, 0, 0).unwrap()
    }

    /// Signs as Slack does, for the tests.
    fn sign(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        mac.update(format!("v0:{timestamp}:").as_bytes());
        mac.update(body);
        let bytes = mac.finalize().into_bytes();
        format!(
            "v0={}",
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    }

    fn request<'a>(timestamp: &'a str, signature: &'a str, body: &'a [u8]) -> SignedRequest<'a> {
        SignedRequest {
            timestamp: Some(timestamp),
            signature: Some(signature),
            body,
        }
    }

    #[test]
    fn a_request_slack_signed_a_minute_ago_is_accepted() {
        let timestamp = (now().timestamp() - 60).to_string();
        let signature = sign(SECRET, &timestamp, BODY);
        assert_eq!(
            verify(SECRET, request(&timestamp, &signature, BODY), now()),
            Ok(())
        );
    }

    #[test]
    fn a_signature_computed_elsewhere_is_accepted() {
        // Computed with Python's hmac module: HMAC-SHA256("secret", "v0:1700000000:hello").
        let signature = "v0=5bf2c08f3dd3a82bee05eecbecb3c9afc1296d88a9575ebb25750a099f54012a";
        let at = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        assert_eq!(
            verify(b"secret", request("1700000000", signature, b"hello"), at),
            Ok(())
        );
        assert_eq!(
            verify(b"secret", request("1700000000", signature, b"hellO"), at),
            Err(Refusal::Forged)
        );
    }

    #[test]
    fn a_forged_signature_or_another_secret_is_refused() {
        let timestamp = now().timestamp().to_string();
        let other = sign(b"another-secret", &timestamp, BODY);
        assert_eq!(
            verify(SECRET, request(&timestamp, &other, BODY), now()),
            Err(Refusal::Forged)
        );
        let tampered = sign(SECRET, &timestamp, b"payload=other");
        assert_eq!(
            verify(SECRET, request(&timestamp, &tampered, BODY), now()),
            Err(Refusal::Forged)
        );
    }

    #[test]
    fn a_replayed_request_older_than_five_minutes_is_refused() {
        let timestamp = (now().timestamp() - 301).to_string();
        let signature = sign(SECRET, &timestamp, BODY);
        assert_eq!(
            verify(SECRET, request(&timestamp, &signature, BODY), now()),
            Err(Refusal::Stale { seconds_off: 301 })
        );
    }

    #[test]
    fn an_oversized_body_is_refused_before_anything_is_computed() {
        let body = vec![b'a'; MAX_BODY_BYTES + 1];
        assert_eq!(
            verify(SECRET, request("0", "v0=00", &body), now()),
            Err(Refusal::BodyTooLarge {
                received: MAX_BODY_BYTES + 1
            })
        );
    }

    #[test]
    fn malformed_headers_are_named_and_never_echoed() {
        let timestamp = now().timestamp().to_string();
        assert_eq!(
            verify(
                SECRET,
                SignedRequest {
                    timestamp: None,
                    signature: Some("v0=00"),
                    body: BODY
                },
                now()
            ),
            Err(Refusal::MissingHeader("X-Slack-Request-Timestamp"))
        );
        assert_eq!(
            verify(SECRET, request("yesterday", "v0=00", BODY), now()),
            Err(Refusal::UnreadableTimestamp(9))
        );
        let refusal = verify(SECRET, request(&timestamp, "sha1=abcd", BODY), now()).unwrap_err();
        assert_eq!(refusal, Refusal::UnreadableSignature);
        assert!(!refusal.to_string().contains("abcd"));
    }
}
