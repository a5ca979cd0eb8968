//! Redaction: secrets and personal data are replaced before a line goes
//! anywhere (templates, examples, the JSON, Slack, email). Applied at the
//! edge as lines are read, and again to every example the report quotes.

use std::borrow::Cow;

use regex::{Captures, Regex};

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// The built-in rules, in the order they run: the widest first (a whole
/// `Authorization:` header before the bearer token inside it).
fn built_in() -> Vec<(Regex, &'static str)> {
    let rules: [(&str, &'static str); 9] = [
        // A whole Authorization / Proxy-Authorization / X-Api-Key header value.
        (
            r#"(?i)\b((?:proxy-)?authorization|x-api-key|x-auth-token|cookie|set-cookie)(["']?\s*[:=]\s*["']?)[^"'\r\n,;}]+"#,
            "${1}${2}<redacted>",
        ),
        (r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*", "Bearer <redacted>"),
        (
            r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
            "<jwt>",
        ),
        (
            r"\b(?:AKIA|ASIA|AIDA|AROA|AIPA|ANPA|ANVA|AGPA)[A-Z0-9]{16}\b",
            "<aws-key>",
        ),
        // Credentials in a URL: scheme://user:password@host.
        (
            r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@",
            "${1}<redacted>@",
        ),
        // key=value and key: value for secret-looking keys (JSON quoted or not).
        (
            r#"(?i)\b([\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|credential|private[_-]?key|session[_-]?id)[\w.-]*)(["']?\s*[:=]\s*["']?)[^\s"'&;,}]+"#,
            "${1}${2}<redacted>",
        ),
        // A 40-character AWS secret access key standing alone.
        (r"\b[A-Za-z0-9/+]{40}\b", "<secret>"),
        (
            r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b",
            "<email>",
        ),
        // Card numbers are checked with Luhn below; this finds candidates.
        (r"\b\d(?:[ -]?\d){12,18}\b", "<card>"),
    ];
    rules
        .into_iter()
        .map(|(pattern, replacement)| (super::compiled(pattern), replacement))
        .collect()
}

/// Whether `digits` (spaces and dashes ignored) pass the Luhn check.
pub(super) fn luhn(candidate: &str) -> bool {
    let digits: Vec<u32> = candidate.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// A bad `LOG_REDACT` pattern.
#[derive(Debug, thiserror::Error)]
#[error("LOG_REDACT pattern {index} ({pattern:?}) is not a valid regular expression: {source}")]
pub struct BadPattern {
    pub index: usize,
    pub pattern: String,
    #[source]
    pub source: regex::Error,
}

/// Redacts secrets from log lines: the built-in rules and the deployment's own.
#[derive(Debug, Clone)]
pub struct Redactor {
    /// Compiled once per process and shared: every redactor uses the same
    /// programs and the same match caches (a regex's memory is mostly its caches).
    rules: &'static [(Regex, &'static str)],
    extra: Vec<Regex>,
}

static BUILT_IN: std::sync::LazyLock<Vec<(Regex, &'static str)>> =
    std::sync::LazyLock::new(built_in);

impl Default for Redactor {
    fn default() -> Self {
        Redactor {
            rules: &BUILT_IN,
            extra: Vec::new(),
        }
    }
}

impl Redactor {
    /// The built-in rules plus `extra` patterns (`LOG_REDACT`), each replaced whole.
    pub fn with_extra(extra: &[String]) -> Result<Self, BadPattern> {
        let extra = extra
            .iter()
            .enumerate()
            .map(|(index, pattern)| {
                Regex::new(pattern).map_err(|source| BadPattern {
                    index,
                    pattern: pattern.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Redactor {
            extra,
            ..Redactor::default()
        })
    }

    /// `line` with every secret replaced.
    pub fn redact<'a>(&self, line: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(line);
        for pattern in &self.extra {
            if pattern.is_match(&out) {
                out = Cow::Owned(pattern.replace_all(&out, REDACTED).into_owned());
            }
        }
        for (pattern, replacement) in self.rules {
            if !pattern.is_match(&out) {
                continue;
            }
            let replaced = if *replacement == "<card>" {
                pattern
                    .replace_all(&out, |c: &Captures<'_>| {
                        if luhn(&c[0]) {
                            "<card>".to_owned()
                        } else {
                            c[0].to_owned()
                        }
                    })
                    .into_owned()
            } else {
                pattern.replace_all(&out, *replacement).into_owned()
            };
            out = Cow::Owned(replaced);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(line: &str) -> String {
        Redactor::default().redact(line).into_owned()
    }

    #[test]
    fn every_kind_of_planted_secret_is_replaced() {
        let planted = [
            ("GET /x Authorization: Bearer abc.def-123", "abc.def-123"),
            ("Authorization=Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"),
            (
                "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sflKxwRJSMeKKF2QT4fw",
                "eyJhbGciOiJIUzI1NiJ9",
            ),
            (
                "using key AKIAIOSFODNN7EXAMPLE for s3",
                "AKIAIOSFODNN7EXAMPLE",
            ),
            (
                "aws wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY here",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ),
            (
                "jdbc:postgresql://db:5432/app?user=app&password=hunter2",
                "hunter2",
            ),
            ("connecting to postgres://app:s3cr3t@db:5432/app", "s3cr3t"),
            (r#"{"client_secret": "zz-top-9"}"#, "zz-top-9"),
            ("refresh token=abcd1234efgh", "abcd1234efgh"),
            ("mail sent to jane.doe@example.com", "jane.doe@example.com"),
            (
                "charge card 4111 1111 1111 1111 declined",
                "4111 1111 1111 1111",
            ),
            (
                "charge card 4111-1111-1111-1111 declined",
                "4111-1111-1111-1111",
            ),
            ("x-api-key: k-12345-abc", "k-12345-abc"),
            // A no-break space between the scheme and the token.
            ("auth Bearer\u{a0}tok-abc123xyz sent", "tok-abc123xyz"),
            ("db password:\u{a0}hunter22", "hunter22"),
        ];
        for (line, secret) in planted {
            let out = redacted(line);
            assert!(!out.contains(secret), "{line:?} -> {out:?}");
        }
    }

    #[test]
    fn ordinary_numbers_and_words_are_left_alone() {
        let line = "GET /api/orders/1234567 200 took 35ms from 10.1.2.3:8080 request 550e8400-e29b-41d4-a716-446655440000";
        assert_eq!(redacted(line), line);
        assert_eq!(
            redacted("column \"invoices.currency\" does not exist"),
            "column \"invoices.currency\" does not exist"
        );
    }

    #[test]
    fn a_number_that_fails_luhn_is_not_a_card() {
        assert_eq!(
            redacted("order 1234 5678 9012 3456 shipped"),
            "order 1234 5678 9012 3456 shipped"
        );
    }

    #[test]
    fn extra_patterns_are_applied_and_a_bad_one_is_named() {
        let r = Redactor::with_extra(&["tenant-[0-9]+".to_owned()]).unwrap();
        assert_eq!(r.redact("for tenant-42 failed"), "for <redacted> failed");
        let error = Redactor::with_extra(&["ok".into(), "(".into()]).unwrap_err();
        assert_eq!(error.index, 1);
        assert!(error.to_string().contains("LOG_REDACT pattern 1"));
    }
}
