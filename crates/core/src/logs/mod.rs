//! Logs as evidence: the pods' lines turned into templates, counted per pod
//! before the symptom's onset and since, so that what started with the
//! breach (a missing column, a refused port, the last words before an
//! out-of-memory kill) stands out from what was always printed.
//!
//! Pure: lines in (already redacted at the edge), a report out.

pub mod patterns;
pub mod redact;
#[cfg(test)]
mod redaction_suite;
pub mod template;

use chrono::{DateTime, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::evidence::logs::LogOrigin;
pub use patterns::analyse;
pub use redact::Redactor;
pub use template::{Level, Templater};

/// Example lines are cut to this many characters.
pub const EXAMPLE_CHARS: usize = 200;
/// Patterns the report keeps (the details show the first five).
pub const PATTERNS_KEPT: usize = 10;

/// Compiles one of our own patterns (constants, each exercised by the tests).
/// Each regex's lazy DFA may grow this large before it falls back to
/// slower matching: log lines are few, memory in a Lambda is not free.
#[allow(clippy::expect_used)]
pub(crate) fn compiled(pattern: &str) -> Regex {
    regex::RegexBuilder::new(&ascii_classes(pattern))
        .dfa_size_limit(128 * 1024)
        .build()
        .expect("built-in pattern compiles")
}

/// Our patterns mean `\d`, `\w` and `\b` in ASCII: what they look for
/// (ids, keys, ports, levels) is ASCII. In the regex crate's default
/// Unicode sense each is an automaton hundreds of states wide, and a dozen
/// such patterns cost megabytes while they compile, just as the log
/// group's response is held. `\s` stays Unicode (a few code points, and a
/// token after a no-break space must still be redacted), and so do negated
/// classes (`\S`): in ASCII they could match half a character.
fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut in_class = 0usize;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push(c);
                    break;
                };
                let members = match next {
                    'd' => Some("0-9"),
                    'w' => Some("0-9A-Za-z_"),
                    _ => None,
                };
                match (members, next) {
                    (Some(members), _) if in_class > 0 => out.push_str(members),
                    (Some(members), _) => {
                        out.push('[');
                        out.push_str(members);
                        out.push(']');
                    }
                    (None, 'b') if in_class == 0 => out.push_str("(?-u:\\b)"),
                    (None, _) => {
                        out.push(c);
                        out.push(next);
                    }
                }
            }
            '[' => {
                in_class += 1;
                out.push(c);
            }
            ']' if in_class > 0 => {
                in_class -= 1;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// How a pattern's rate moved at the onset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trend {
    /// Never printed before the onset, with enough of the before read to say so.
    New,
    /// What a container printed before it was killed during the breach.
    LastWords,
    /// Printed before, at a much lower rate.
    Increased,
    /// About the same rate before and since.
    Steady,
    /// Printed less since the onset, or no more.
    Decreased,
    /// Reached its breach rate before the onset, while the metric was still
    /// normal: it did not start the breach.
    Earlier,
    /// Too little of the time before the onset was read to compare.
    Unknown,
}

impl Trend {
    pub fn as_str(self) -> &'static str {
        match self {
            Trend::New => "new",
            Trend::LastWords => "last words before a kill",
            Trend::Increased => "increased",
            Trend::Steady => "steady",
            Trend::Decreased => "decreased",
            Trend::Earlier => "began before the breach",
            Trend::Unknown => "no before to compare",
        }
    }

    /// Started or jumped with the breach.
    pub fn is_new(self) -> bool {
        matches!(self, Trend::New | Trend::LastWords | Trend::Increased)
    }
}

/// One template, counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogPattern {
    pub template: String,
    pub level: Level,
    pub trend: Trend,
    /// Lines before the onset, and since it, over every container read.
    pub before: u64,
    pub during: u64,
    pub before_per_minute: f64,
    pub during_per_minute: f64,
    /// The first line since the onset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// When it reached its breach rate, for one that did so before the onset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub began: Option<DateTime<Utc>>,
    /// Its pods' reads begin after the onset, with its first line: it may
    /// have begun earlier than `since` (a chatty pod's bound left the start out).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_after_onset: bool,
    /// The pods that printed it since the onset.
    pub pods: Vec<String>,
    /// One line as printed, redacted and cut to [`EXAMPLE_CHARS`].
    pub example: String,
}

impl LogPattern {
    /// `since 14:21`, or `since at least 14:21` when the reads began there.
    pub fn since_words(&self) -> String {
        match self.since {
            Some(s) if self.read_after_onset => format!("since at least {}", s.format("%H:%M")),
            Some(s) => format!("since {}", s.format("%H:%M")),
            None => String::new(),
        }
    }
}

/// One container's log as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerRead {
    pub pod: String,
    pub container: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub previous: bool,
    pub origin: LogOrigin,
    pub why: String,
    pub lines: usize,
    pub bytes: usize,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// What the logs say, as the diagnosis publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogReport {
    /// The first screen's line.
    pub line: String,
    /// Lines before this instant are "before", the rest "during".
    pub onset: DateTime<Utc>,
    /// Minutes of log read before the onset and since, over every container.
    pub minutes_before: f64,
    pub minutes_during: f64,
    pub read: Vec<ContainerRead>,
    /// New and sharply increased first, errors before the rest.
    pub patterns: Vec<LogPattern>,
}

impl LogReport {
    /// The pattern the first screen names: the first new error.
    pub fn new_error(&self) -> Option<&LogPattern> {
        self.patterns
            .iter()
            .find(|p| p.trend.is_new() && p.level == Level::Error)
    }

    /// The loudest error that reached its breach rate before the onset.
    pub fn earlier_error(&self) -> Option<&LogPattern> {
        self.patterns
            .iter()
            .filter(|p| p.trend == Trend::Earlier && p.level == Level::Error)
            .max_by_key(|p| p.during)
    }

    /// Pods read (each once, whatever the number of containers and instances).
    pub fn pods_read(&self) -> usize {
        let mut pods: Vec<&str> = self.read.iter().map(|r| r.pod.as_str()).collect();
        pods.sort_unstable();
        pods.dedup();
        pods.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_classes_are_spelt_in_ascii_inside_and_outside_brackets() {
        assert_eq!(
            ascii_classes(r#"\b\d+[\w.-]*\s[^\s"]\S\\d\["#),
            r#"(?-u:\b)[0-9]+[0-9A-Za-z_.-]*\s[^\s"]\S\\d\["#
        );
    }

    #[test]
    fn an_ascii_pattern_matches_what_the_unicode_one_did_on_ascii_text() {
        let pattern = r"(?i)\b[\w.-]*(?:password|token)[\w.-]*\s*[:=]\s*\d{3,}\b";
        let ascii = compiled(pattern);
        let unicode = Regex::new(pattern).expect("compiles");
        for line in [
            "db.password = 12345 ok",
            "x-token:999",
            "no secret here",
            "token=12",
            "pre_TOKEN_x  =  4444",
        ] {
            assert_eq!(
                ascii.find(line).map(|m| m.as_str()),
                unicode.find(line).map(|m| m.as_str()),
                "{line}"
            );
        }
    }
}
