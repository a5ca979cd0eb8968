//! Lines into templates: what varies from one occurrence to the next
//! (numbers, ids, addresses, quoted values, durations, the line's own
//! timestamp) is masked, so the same event printed a thousand times is one
//! template whatever its request id.

use regex::Regex;
use serde::{Deserialize, Serialize};

/// How serious a line says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// The masks, in the order they run (the widest first).
#[derive(Debug, Clone)]
pub struct Templater {
    leading_time: Regex,
    masks: Vec<(Regex, &'static str)>,
    error: Regex,
    warning: Regex,
    continuation: Regex,
    spaces: Regex,
    /// A logfmt line's level, message and error (`level=error msg="..." err="..."`).
    logfmt_level: Regex,
    logfmt_message: Regex,
    logfmt_error: Regex,
    /// What names a dependency and is kept as printed: a host name with its
    /// port, a quoted host name, `port 5432`. It is what the reader acts on
    /// ("refused to ledger-pg...:5432"), and it does not vary between lines
    /// of one failure.
    names: Regex,
}

/// Compiled once per process; every `Templater::default()` shares it.
static SHARED: std::sync::LazyLock<Templater> = std::sync::LazyLock::new(Templater::compile);

impl Default for Templater {
    fn default() -> Self {
        SHARED.clone()
    }
}

impl Templater {
    fn compile() -> Self {
        let re = super::compiled;
        Templater {
            leading_time: re(
                r"^\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?\s*",
            ),
            masks: [
                (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?", "<time>"),
                (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "<uuid>"),
                (r"\b\d{1,3}(?:\.\d{1,3}){3}\b", "<ip>"),
                (r#""[^"]*""#, "\"<str>\""),
                (r"'[^'\s][^']*'", "'<str>'"),
                (r"\b\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h)\b", "<duration>"),
                (r"\b\d+(?:\.\d+)?[KMGT]i?B?\b", "<size>"),
                (r"\b(?:0x)?[0-9a-fA-F]{6,}\b", HEX),
                (r"-?\b\d+(?:\.\d+)?\b", "<n>"),
            ]
            .into_iter()
            .map(|(p, r)| (re(p), r))
            .collect(),
            error: re(
                r"(?i)\b(?:fatal|panic|critical|crit|severe|error|err|emerg|alert)\b|\w(?:Error|Exception)\b|^Traceback|^panic:|^fatal error:|\bOOMKilled\b",
            ),
            warning: re(r"(?i)\b(?:warn|warning)\b"),
            continuation: re(
                r"^(?:\s+\S|Caused by:|\.\.\. \d+ (?:more|common frames omitted)|goroutine \d+ \[|During handling of the above exception)",
            ),
            spaces: re(r"\s+"),
            logfmt_level: re(r#"(?i)(?:^|\s)(?:level|lvl|severity)=["']?(\w+)"#),
            logfmt_message: re(r#"(?:^|\s)(?:msg|message)=(?:"((?:[^"\\]|\\.)*)"|(\S+))"#),
            logfmt_error: re(r#"(?:^|\s)(?:err|error)=(?:"((?:[^"\\]|\\.)*)"|(\S+))"#),
            names: re(
                r#"(?i)"?\b[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b(?::\d{1,5}\b)?"?|\blocalhost(?::\d{1,5}\b)?|\bport\s+\d{1,5}\b"#,
            ),
        }
    }
}

/// A kept name's place while the masks run: private-use characters around
/// letters from g to z (no mask takes them for a number or hex).
fn marker(index: usize) -> String {
    let mut letters = String::new();
    let mut n = index;
    loop {
        letters.push(char::from(b'g' + (n % 20) as u8));
        n /= 20;
        if n == 0 {
            break;
        }
    }
    format!("\u{E000}{letters}\u{E001}")
}

/// The mask of a hex id: a word with both digits and letters a-f, or ten
/// digits or more (`deadbeef` and `1234567` are a word and a number).
const HEX: &str = "<hex>";

fn mask_hex(pattern: &Regex, text: &str) -> String {
    pattern
        .replace_all(text, |c: &regex::Captures<'_>| {
            let word = c[0].trim_start_matches("0x");
            let digits = word.chars().any(|ch| ch.is_ascii_digit());
            let letters = word.chars().any(|ch| ch.is_ascii_alphabetic());
            // A long id that happens to have no letter a-f is still an id.
            let long_id = !letters && word.len() >= 10;
            if digits && letters || long_id {
                HEX.to_owned()
            } else {
                c[0].to_owned()
            }
        })
        .into_owned()
}

impl Templater {
    /// Whether `line` continues the line before it (a stack frame, `Caused by:`).
    pub fn continues(&self, line: &str) -> bool {
        self.continuation.is_match(line)
    }

    /// The text worth templating: a JSON line's message (and error) field,
    /// else the line itself without its own leading timestamp.
    fn message(&self, line: &str) -> (String, Option<Level>) {
        let trimmed = line.trim();
        if trimmed.starts_with('{')
            && let Ok(serde_json::Value::Object(fields)) =
                serde_json::from_str::<serde_json::Value>(trimmed)
        {
            let text = |key: &str| fields.get(key).and_then(|v| v.as_str()).map(str::to_owned);
            let level = ["level", "severity", "lvl", "log.level"]
                .into_iter()
                .find_map(text)
                .map(|l| self.level_word(&l));
            let message = ["msg", "message", "log", "event"]
                .into_iter()
                .find_map(text);
            let error = ["error", "err", "exception"].into_iter().find_map(text);
            let joined = match (message, error) {
                (Some(m), Some(e)) => format!("{m}: {e}"),
                (Some(m), None) => m,
                (None, Some(e)) => e,
                (None, None) => trimmed.to_owned(),
            };
            let prefix = level
                .map(|l| format!("{} ", l.as_str().to_uppercase()))
                .unwrap_or_default();
            return (format!("{prefix}{joined}"), level);
        }
        if let Some(message) = self.logfmt_message.captures(trimmed) {
            // logfmt: the message and the error are the event; the other
            // pairs (method, path, durations) are its particulars.
            let value = |c: &regex::Captures<'_>| {
                c.get(1).or(c.get(2)).map_or("", |m| m.as_str()).to_owned()
            };
            let level = self
                .logfmt_level
                .captures(trimmed)
                .map(|c| self.level_word(&c[1]));
            let mut joined = value(&message);
            if let Some(error) = self.logfmt_error.captures(trimmed) {
                joined = format!("{joined}: {}", value(&error));
            }
            let prefix = level
                .map(|l| format!("{} ", l.as_str().to_uppercase()))
                .unwrap_or_default();
            return (format!("{prefix}{joined}"), level);
        }
        (self.leading_time.replace(trimmed, "").into_owned(), None)
    }

    fn level_word(&self, word: &str) -> Level {
        if self.error.is_match(word) {
            Level::Error
        } else if self.warning.is_match(word) {
            Level::Warning
        } else {
            Level::Info
        }
    }

    /// The level a line states (its level word, an exception, a panic).
    pub fn level(&self, line: &str) -> Level {
        let (text, stated) = self.message(line);
        stated
            .or_else(|| self.leading_level(&text))
            .unwrap_or_else(|| self.level_word(&text))
    }

    /// The level a line opens with (`WARN ...`, `[INFO] ...`, `W1204 ...`
    /// is not one): it wins over an exception's name quoted later, as in
    /// `WARN ... Resolved [BankUnavailableException: ...]`.
    fn leading_level(&self, text: &str) -> Option<Level> {
        let first = text
            .split_whitespace()
            .next()?
            .trim_matches(|c: char| !c.is_ascii_alphabetic())
            .to_ascii_lowercase();
        match first.as_str() {
            "warn" | "warning" => Some(Level::Warning),
            "info" | "debug" | "trace" | "notice" => Some(Level::Info),
            "error" | "err" | "fatal" | "critical" | "crit" | "severe" | "panic" => {
                Some(Level::Error)
            }
            _ => None,
        }
    }

    /// The template of `line` (already redacted), with `own_name` (the pod
    /// printing it) masked too, so that every pod's copy is one template.
    pub fn template(&self, line: &str, own_name: Option<&str>) -> String {
        let (mut text, _) = self.message(line);
        if let Some(name) = own_name.filter(|n| !n.is_empty()) {
            text = text.replace(name, "<pod>");
        }
        // Names are set aside behind markers no mask matches, and put back.
        let mut kept: Vec<String> = Vec::new();
        text = self
            .names
            .replace_all(&text, |c: &regex::Captures<'_>| {
                kept.push(c[0].to_owned());
                marker(kept.len() - 1)
            })
            .into_owned();
        for (pattern, replacement) in &self.masks {
            if !pattern.is_match(&text) {
                continue;
            }
            text = if *replacement == HEX {
                mask_hex(pattern, &text)
            } else {
                pattern.replace_all(&text, *replacement).into_owned()
            };
        }
        for (i, name) in kept.iter().enumerate() {
            text = text.replacen(&marker(i), name, 1);
        }
        let text = self.spaces.replace_all(text.trim(), " ").into_owned();
        // Backticks would end a code span in Slack and Markdown renderings.
        text.replace('`', "'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(line: &str) -> String {
        Templater::default().template(line, None)
    }

    #[test]
    fn the_same_event_with_other_numbers_ids_and_addresses_is_one_template() {
        let a = t(
            "2026-12-04T08:00:01.123Z ERROR dial tcp 10.0.3.7:5432: connect: connection refused (request 550e8400-e29b-41d4-a716-446655440000, took 35ms)",
        );
        let b = t(
            "2026-12-04 09:13:44,001 ERROR dial tcp 10.0.9.250:5432: connect: connection refused (request 123e4567-e89b-12d3-a456-426614174000, took 1.5s)",
        );
        assert_eq!(a, b);
        assert_eq!(
            a,
            "ERROR dial tcp <ip>:<n>: connect: connection refused (request <uuid>, took <duration>)"
        );
    }

    #[test]
    fn quoted_values_and_hex_ids_are_masked_and_a_dotted_name_is_kept() {
        assert_eq!(
            t(r#"ERROR column "invoices.currency" does not exist at trace 7f4c9b6d52ab"#),
            r#"ERROR column "invoices.currency" does not exist at trace <hex>"#
        );
        assert_eq!(
            t(r#"ERROR key "cart 81734" missing at trace 7f4c9b6d52ab"#),
            r#"ERROR key "<str>" missing at trace <hex>"#
        );
    }

    #[test]
    fn json_lines_are_templated_from_their_message_and_level() {
        let templater = Templater::default();
        let line =
            r#"{"ts":"2026-12-04T08:00:00Z","level":"error","msg":"payment failed","order":1234}"#;
        assert_eq!(templater.level(line), Level::Error);
        assert_eq!(templater.template(line, None), "ERROR payment failed");
    }

    #[test]
    fn levels_come_from_the_words_exceptions_and_panics() {
        let templater = Templater::default();
        assert_eq!(
            templater.level("java.lang.OutOfMemoryError: Java heap space"),
            Level::Error
        );
        assert_eq!(
            templater.level("fatal error: runtime: out of memory"),
            Level::Error
        );
        assert_eq!(
            templater.level("WARN deprecated config key cache.ttl"),
            Level::Warning
        );
        assert_eq!(templater.level("INFO GET /health 200"), Level::Info);
        assert_eq!(templater.level("user errorless path"), Level::Info);
    }

    #[test]
    fn stack_frames_continue_the_line_before() {
        let templater = Templater::default();
        assert!(templater.continues("\tat com.example.Cache.put(Cache.java:42)"));
        assert!(templater.continues("Caused by: java.io.IOException"));
        assert!(templater.continues("  File \"app.py\", line 3, in <module>"));
        assert!(!templater.continues("ERROR boom"));
    }

    #[test]
    fn the_pod_own_name_is_masked() {
        let templater = Templater::default();
        assert_eq!(
            templater.template(
                "INFO web-7f4c9b6d52-8wjzc started",
                Some("web-7f4c9b6d52-8wjzc")
            ),
            "INFO <pod> started"
        );
    }

    #[test]
    fn the_level_a_line_opens_with_wins_over_an_exception_it_quotes() {
        let templater = Templater::default();
        assert_eq!(
            templater.level("WARN 1 --- [api] [nio-8080-exec-1] Resolver : Resolved [c.l.BankUnavailableException: unreachable]"),
            Level::Warning
        );
        assert_eq!(
            templater.level("[INFO] retrying after TimeoutException"),
            Level::Info
        );
        assert_eq!(
            templater.level("java.net.UnknownHostException: api.bank"),
            Level::Error
        );
    }

    #[test]
    fn a_hex_id_without_letters_is_still_an_id() {
        assert_eq!(
            t("GET /v1/venues/283/seatmap 404 80ms req=8907017eedf10 venue not found"),
            t("GET /v1/venues/11/seatmap 404 41ms req=3807663579981 venue not found")
        );
    }

    #[test]
    fn sizes_are_masked_and_localhost_keeps_its_port() {
        assert_eq!(
            t("[0.512s][info][gc] GC(42) Pause Young 163M->2M(1382M) 3.1ms"),
            t("[9.1s][info][gc] GC(7) Pause Young 2153M->9M(1382M) 12.4ms")
        );
        assert_eq!(
            t("ERROR unable to send 12 metrics to localhost:8125"),
            "ERROR unable to send <n> metrics to localhost:8125"
        );
    }

    #[test]
    fn the_dependency_a_line_names_is_kept_with_its_port() {
        assert_eq!(
            t(
                r#"psycopg2.OperationalError: connection to server at "ledger-pg.backoffice.svc.cluster.local" (10.0.3.7), port 5432 failed: Connection refused"#
            ),
            r#"psycopg2.OperationalError: connection to server at "ledger-pg.backoffice.svc.cluster.local" (<ip>), port 5432 failed: Connection refused"#
        );
        assert_eq!(
            t("WARN retry 3 of 5: dial tcp redis.cache.svc:6379: i/o timeout after 250ms"),
            "WARN retry <n> of <n>: dial tcp redis.cache.svc:6379: i/o timeout after <duration>"
        );
        assert_eq!(
            t(r#"ERROR user "alice smith" not found"#),
            r#"ERROR user "<str>" not found"#
        );
    }

    #[test]
    fn a_logfmt_line_is_its_level_message_and_error() {
        let line = r#"time=2026-12-04T08:00:00Z level=ERROR msg="request aborted by client" method=GET path=/v2/products/81734/availability waited=3.01s err="context canceled""#;
        let templater = Templater::default();
        assert_eq!(templater.level(line), Level::Error);
        assert_eq!(
            templater.template(line, None),
            "ERROR request aborted by client: context canceled"
        );
    }

    proptest! {
        #[test]
        fn numbers_never_change_a_template(a in 0u32..1_000_000, b in 0u32..1_000_000, ms in 1u32..10_000) {
            let left = t(&format!("ERROR order {a} failed after {ms}ms on shard {b}"));
            let right = t(&format!("ERROR order {b} failed after {a}ms on shard {ms}"));
            prop_assert_eq!(left, right);
        }
    }
}
