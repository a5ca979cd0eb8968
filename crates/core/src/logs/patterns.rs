//! Counting templates per pod before the onset and since, and ranking them:
//! what started or jumped with the breach first, errors before the rest.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};

use super::{
    ContainerRead, EXAMPLE_CHARS, Level, LogPattern, LogReport, PATTERNS_KEPT, Redactor, Templater,
    Trend,
};
use crate::evidence::logs::LogEvidence;

/// Fewer minutes of log before the onset than this, over every container
/// read, and nothing can be called new.
pub const MIN_MINUTES_BEFORE: f64 = 5.0;
/// A pattern counts as jumped when its rate since the onset is this many
/// times its rate before.
const JUMP: f64 = 5.0;
/// Fewest lines since the onset for a pattern to be new or jumped.
const MIN_LINES: u64 = 3;
/// How far before the onset a new pattern's start is looked for, in minutes.
const LEAD_MINUTES: i64 = 30;

#[derive(Debug, Default)]
struct Tally {
    level: Option<Level>,
    before: u64,
    during: u64,
    since: Option<DateTime<Utc>>,
    pods: BTreeSet<String>,
    example: Option<String>,
    /// Printed by a previous instance in its last minute before it ended during the breach.
    last_words: bool,
    /// Lines per minute (from the onset, rounded down) in the lead before it.
    lead: BTreeMap<i64, u64>,
}

/// The report on what the containers in `evidence` printed, split at
/// `onset`; a pattern that reached its breach rate more than `tolerance`
/// before the onset (the onset is known to a period of the metric) began
/// before the breach.
pub fn analyse(
    evidence: &LogEvidence,
    onset: DateTime<Utc>,
    now: DateTime<Utc>,
    tolerance: Duration,
    redactor: &Redactor,
) -> LogReport {
    let templater = Templater::default();
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let (mut minutes_before, mut minutes_during) = (0.0, 0.0);
    for log in &evidence.containers {
        minutes_before += log.minutes_covered(DateTime::<Utc>::MIN_UTC, onset);
        minutes_during += log.minutes_covered(onset, now);
        let last_line = log.lines.last().map(|l| l.at);
        let mut head: Option<String> = None;
        for line in &log.lines {
            if head.is_some() && templater.continues(&line.text) {
                continue; // a stack frame: counted with its first line
            }
            let text = redactor.redact(&line.text);
            let template = templater.template(&text, Some(&log.pod));
            if template.is_empty() {
                head = None;
                continue;
            }
            let tally = tallies.entry(template.clone()).or_default();
            tally.level = tally.level.max(Some(templater.level(&text)));
            let during = line.at >= onset;
            if during {
                tally.during += 1;
                tally.pods.insert(log.pod.clone());
                tally.since = Some(tally.since.map_or(line.at, |s| s.min(line.at)));
                // The first example printed since the onset is the one shown.
                if tally.example.as_ref().is_none_or(|_| tally.during == 1) {
                    tally.example = Some(example(&text));
                }
                if log.previous
                    && last_line.is_some_and(|end| end - line.at <= Duration::minutes(1))
                {
                    tally.last_words = true;
                }
            } else {
                tally.before += 1;
                if tally.example.is_none() {
                    tally.example = Some(example(&text));
                }
                let minute = (line.at - onset).num_seconds().div_euclid(60);
                if minute >= -LEAD_MINUTES {
                    *tally.lead.entry(minute).or_default() += 1;
                }
            }
            head = Some(template);
        }
    }
    // Container-minutes read in each minute of the lead.
    let coverage: BTreeMap<i64, f64> = (-LEAD_MINUTES..0)
        .map(|m| {
            let from = onset + Duration::minutes(m);
            let minutes: f64 = evidence
                .containers
                .iter()
                .map(|c| c.minutes_covered(from, from + Duration::minutes(1)))
                .sum();
            (m, minutes)
        })
        .collect();
    let mut patterns: Vec<LogPattern> = tallies
        .into_iter()
        .map(|(template, t)| {
            let before_per_minute = rate(t.before, minutes_before);
            let during_per_minute = rate(t.during, minutes_during);
            let mut trend = trend_of(&t, minutes_before, before_per_minute, during_per_minute);
            let began = matches!(trend, Trend::New | Trend::Increased)
                .then(|| rise(&t.lead, &coverage, during_per_minute))
                .flatten()
                .map(|minute| onset + Duration::minutes(minute))
                .filter(|began| onset - *began > tolerance);
            if began.is_some() {
                trend = Trend::Earlier;
            }
            LogPattern {
                template,
                level: t.level.unwrap_or(Level::Info),
                trend,
                before: t.before,
                during: t.during,
                before_per_minute,
                during_per_minute,
                since: t.since,
                began,
                read_after_onset: false,
                pods: t.pods.into_iter().collect(),
                example: t.example.unwrap_or_default(),
            }
        })
        .collect();
    patterns.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then(b.during.cmp(&a.during))
            .then(b.before.cmp(&a.before))
            .then(a.template.cmp(&b.template))
    });
    for p in &mut patterns {
        p.read_after_onset = read_after_onset(p, evidence, onset);
    }
    put_the_root_cause_first(&mut patterns);
    patterns.truncate(PATTERNS_KEPT);
    let read = evidence
        .containers
        .iter()
        .map(|c| ContainerRead {
            pod: c.pod.clone(),
            container: c.container.clone(),
            previous: c.previous,
            origin: c.origin,
            why: evidence
                .requested
                .iter()
                .find(|r| r.pod == c.pod && r.previous == c.previous)
                .map_or_else(|| not_requested(c.origin), |r| r.why.clone()),
            lines: c.lines.len(),
            bytes: c.bytes,
            truncated: c.truncated,
        })
        .collect();
    let mut report = LogReport {
        line: String::new(),
        onset,
        minutes_before,
        minutes_during,
        read,
        patterns,
    };
    report.line = first_screen_line(&report);
    report
}

/// Whether the reads of the pods that printed `p` only begin after the onset,
/// with its first line: then when it began is not known.
fn read_after_onset(p: &LogPattern, evidence: &LogEvidence, onset: DateTime<Utc>) -> bool {
    let Some(since) = p.since else {
        return false;
    };
    let first_read = evidence
        .containers
        .iter()
        .filter(|c| p.pods.contains(&c.pod))
        .flat_map(|c| c.covered.iter())
        .filter(|(_, to)| *to > onset)
        .map(|(from, _)| (*from).max(onset))
        .min();
    first_read.is_some_and(|first| {
        first - onset > Duration::minutes(1) && since - first <= Duration::minutes(1)
    })
}

/// Why a container nobody asked for was read: the log group brought every
/// pod of the workload, those a rollout replaced included.
fn not_requested(origin: crate::evidence::logs::LogOrigin) -> String {
    match origin {
        crate::evidence::logs::LogOrigin::LogsInsights => "in the log group".to_owned(),
        crate::evidence::logs::LogOrigin::PodLog => String::new(),
    }
}

/// Words that say how something failed, not only that it did.
const MECHANISMS: [&str; 28] = [
    "refused",
    "reset by peer",
    "timed out",
    "timeout",
    "does not exist",
    "not found",
    "no such",
    "denied",
    "forbidden",
    "unauthorized",
    "expired",
    "out of memory",
    "outofmemory",
    "no space",
    "too many",
    "unavailable",
    "deadline exceeded",
    "certificate",
    "unknown host",
    "unknownhost",
    "could not resolve",
    "name resolution",
    "nxdomain",
    "unreachable",
    "broken pipe",
    "exhausted",
    "overflow",
    "caused by",
];

/// One failure often prints itself several times at once: a framework's
/// wrapper ("request processing failed ... threw exception"), an access
/// line, and the underlying error on its own line. They start together at
/// about the same rate; the one to name first is the one that says how it
/// failed (refused, does not exist, out of memory), and of those the
/// shortest, since a wrapper quotes the cause with context around it.
fn put_the_root_cause_first(patterns: &mut [LogPattern]) {
    let Some(top) = patterns.first() else {
        return;
    };
    if !top.trend.is_new() || top.level != Level::Error {
        return;
    }
    let (top_during, top_since) = (top.during, top.since);
    let echoes = |p: &LogPattern| {
        p.trend.is_new()
            && p.level == Level::Error
            && p.during * 2 >= top_during
            && match (p.since, top_since) {
                (Some(a), Some(b)) => (a - b).num_seconds().abs() <= 120,
                _ => false,
            }
    };
    let mechanisms = |p: &LogPattern| {
        let text = p.template.to_lowercase();
        MECHANISMS.iter().filter(|m| text.contains(*m)).count()
    };
    let best = patterns
        .iter()
        .enumerate()
        .filter(|(_, p)| echoes(p))
        .max_by_key(|(i, p)| {
            (
                mechanisms(p),
                std::cmp::Reverse(p.template.chars().count()),
                std::cmp::Reverse(*i),
            )
        })
        .map(|(i, _)| i);
    if let Some(i) = best {
        patterns[..=i].rotate_right(1);
    }
}

fn rate(count: u64, minutes: f64) -> f64 {
    if minutes <= 0.0 {
        0.0
    } else {
        (count as f64 / minutes * 100.0).round() / 100.0
    }
}

fn trend_of(t: &Tally, minutes_before: f64, before_rate: f64, during_rate: f64) -> Trend {
    if t.last_words && t.level == Some(Level::Error) && t.before == 0 {
        return Trend::LastWords;
    }
    if minutes_before < MIN_MINUTES_BEFORE {
        return Trend::Unknown;
    }
    if t.before == 0 && t.during >= MIN_LINES {
        Trend::New
    } else if t.during >= MIN_LINES
        && during_rate >= before_rate * JUMP
        && during_rate - before_rate >= 0.5
    {
        Trend::Increased
    } else if t.during == 0 || during_rate < before_rate / 2.0 {
        Trend::Decreased
    } else {
        Trend::Steady
    }
}

/// The earliest minute of the lead from which up to the onset the pattern
/// already ran at half its breach rate or more, per container-minute read:
/// when it reached the level it holds during the breach.
fn rise(lead: &BTreeMap<i64, u64>, coverage: &BTreeMap<i64, f64>, during_rate: f64) -> Option<i64> {
    if during_rate <= 0.0 {
        return None;
    }
    let (mut lines, mut minutes) = (0u64, 0.0f64);
    let mut earliest = None;
    for m in (-LEAD_MINUTES..0).rev() {
        lines += lead.get(&m).copied().unwrap_or_default();
        minutes += coverage.get(&m).copied().unwrap_or_default();
        let printed = lead.get(&m).is_some_and(|n| *n > 0);
        if printed && minutes > 0.0 && lines as f64 / minutes >= during_rate / 2.0 {
            earliest = Some(m);
        }
    }
    earliest
}

/// New before the rest, errors before warnings before the rest.
fn rank(p: &LogPattern) -> (u8, std::cmp::Reverse<Level>) {
    let trend = match p.trend {
        Trend::New | Trend::LastWords => 0,
        Trend::Increased => 1,
        _ => 2,
    };
    (trend, std::cmp::Reverse(p.level))
}

/// One line as the report quotes it: redacted (the caller has), one line, cut.
fn example(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let trimmed = one_line.trim();
    if trimmed.chars().count() <= EXAMPLE_CHARS {
        return trimmed.to_owned();
    }
    let mut cut: String = trimmed.chars().take(EXAMPLE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// `1,240`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Where a line's exception begins (`...SQLException:`).
static EXCEPTION_NAME: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| super::compiled(r"\b[\w.$]*(?:Exception|Error)\b:"));

/// A template as the first screen quotes it, at most 90 characters: a long
/// one keeps its head (what failed) and its tail (how: "Connection refused").
pub fn quoted(template: &str) -> String {
    let mut chars: Vec<char> = template.chars().collect();
    // A long line's event is its exception and message; the thread and
    // logger before it are context.
    if chars.len() > 90
        && let Some(at) = EXCEPTION_NAME
            .find(template)
            .map(|m| template[..m.start()].chars().count())
            .filter(|at| *at > 0)
    {
        chars = "… ".chars().chain(chars[at..].iter().copied()).collect();
    }
    let short: String = if chars.len() > 90 {
        let head: String = chars[..44].iter().collect();
        let tail: String = chars[chars.len() - 44..].iter().collect();
        format!("{} … {}", head.trim_end(), tail.trim_start())
    } else {
        chars.into_iter().collect()
    };
    format!("`{short}`")
}

/// Where a pattern was printed: `3 of 4 pods read`, or the pods by name when
/// they are one or two of more (locality: the rest did not print it).
pub fn on_pods(printing: &[String], read: usize) -> String {
    let of = format!(
        "{} of {read} pod{} read",
        printing.len(),
        if read == 1 { "" } else { "s" }
    );
    if printing.len() <= 2 && read > printing.len() {
        format!("{} ({of})", printing.join(" and "))
    } else {
        of
    }
}

/// `Logs: 1,240 × `...` since 14:21 on 3 of 4 pods read, new`, or what was read and found old.
fn first_screen_line(report: &LogReport) -> String {
    let pods = report.pods_read();
    if let Some(p) = report.new_error() {
        let since = match p.since_words() {
            words if words.is_empty() => words,
            words => format!(" {words}"),
        };
        let how = match p.trend {
            Trend::Increased => format!(
                ", up from {}/min to {}/min",
                p.before_per_minute, p.during_per_minute
            ),
            trend => format!(", {}", trend.as_str()),
        };
        return format!(
            "Logs: {} × {}{since} on {}{how}",
            thousands(p.during),
            quoted(&p.template),
            on_pods(&p.pods, pods),
        );
    }
    let lines: usize = report.read.iter().map(|r| r.lines).sum();
    if lines == 0 {
        return format!(
            "Logs: {} container log{} read, no lines",
            report.read.len(),
            if report.read.len() == 1 { "" } else { "s" }
        );
    }
    if report.minutes_before < MIN_MINUTES_BEFORE {
        return format!(
            "Logs: {} lines from {pods} pod{}, too little from before the onset to tell new from old",
            thousands(lines as u64),
            if pods == 1 { "" } else { "s" }
        );
    }
    if let Some(p) = report.earlier_error() {
        return format!(
            "Logs: nothing new with the breach; {} began at {}, before it ({} before the onset, {} since)",
            quoted(&p.template),
            p.began
                .map(|b| b.format("%H:%M").to_string())
                .unwrap_or_default(),
            thousands(p.before),
            thousands(p.during)
        );
    }
    let loudest = report
        .patterns
        .iter()
        .filter(|p| p.level >= Level::Warning && p.before > 0)
        .max_by_key(|p| p.before + p.during);
    match loudest {
        Some(p) => format!(
            "Logs: nothing new since the onset in the logs of {pods} pod{}; the loudest, {}, was there before ({} before, {} since)",
            if pods == 1 { "" } else { "s" },
            quoted(&p.template),
            thousands(p.before),
            thousands(p.during)
        ),
        None => format!(
            "Logs: nothing new since the onset in the logs of {pods} pod{}",
            if pods == 1 { "" } else { "s" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::logs::{ContainerLog, LogLine, LogOrigin};

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::hours(10) + Duration::minutes(minute)
    }

    /// A container printing `lines` (minute, text), read over `[from, to]`.
    fn container(
        pod: &str,
        previous: bool,
        from: i64,
        to: i64,
        lines: &[(i64, &str)],
    ) -> ContainerLog {
        ContainerLog {
            pod: pod.into(),
            container: "app".into(),
            previous,
            origin: LogOrigin::PodLog,
            lines: lines
                .iter()
                .map(|(m, t)| LogLine {
                    at: at(*m),
                    text: (*t).to_owned(),
                })
                .collect(),
            covered: vec![(at(from), at(to))],
            truncated: false,
            bytes: 0,
        }
    }

    fn every_minute(from: i64, to: i64, text: &str) -> Vec<(i64, String)> {
        (from..to)
            .map(|m| (m, text.replace("{m}", &m.to_string())))
            .collect()
    }

    fn evidence(containers: Vec<ContainerLog>) -> LogEvidence {
        LogEvidence {
            namespace: "shop".into(),
            containers,
            requested: vec![],
        }
    }

    fn borrowed(lines: &[(i64, String)]) -> Vec<(i64, &str)> {
        lines.iter().map(|(m, t)| (*m, t.as_str())).collect()
    }

    #[test]
    fn an_error_that_started_at_the_onset_is_new_and_named_on_the_first_screen() {
        let mut lines = every_minute(-60, 0, "INFO GET /orders/{m} 200");
        lines.extend(every_minute(
            -10,
            0,
            "ERROR column \"invoices.currency\" does not exist (order {m})",
        ));
        lines.sort();
        let report = analyse(
            &evidence(vec![container("web-1", false, -60, 0, &borrowed(&lines))]),
            at(-10),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        let top = &report.patterns[0];
        assert_eq!(top.trend, Trend::New);
        assert_eq!(top.during, 10);
        assert!(report.line.starts_with("Logs: 10 × `ERROR column \"invoices.currency\" does not exist (order <n>)` since 09:50 on 1 of 1 pod read, new"), "{}", report.line);
    }

    #[test]
    fn an_old_noisy_warning_is_steady_with_its_before_count_and_never_new() {
        let lines = every_minute(
            -120,
            0,
            "WARN deprecated config key cache.ttl (seen {m} times)",
        );
        let report = analyse(
            &evidence(vec![container("web-1", false, -120, 0, &borrowed(&lines))]),
            at(-10),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        assert_eq!(report.patterns[0].trend, Trend::Steady);
        assert_eq!(
            (report.patterns[0].before, report.patterns[0].during),
            (110, 10)
        );
        assert!(report.new_error().is_none());
        assert!(
            report.line.contains("nothing new") && report.line.contains("110 before"),
            "{}",
            report.line
        );
    }

    #[test]
    fn order_and_volume_change_nothing_but_the_counts() {
        let lines = every_minute(-30, 0, "ERROR timeout calling ledger after {m}ms");
        let mut reversed = lines.clone();
        reversed.reverse();
        let a = analyse(
            &evidence(vec![container("a", false, -30, 0, &borrowed(&lines))]),
            at(-10),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        let b = analyse(
            &evidence(vec![container("a", false, -30, 0, &borrowed(&reversed))]),
            at(-10),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        assert_eq!(a.patterns[0].template, b.patterns[0].template);
        assert_eq!(a.patterns[0].during, b.patterns[0].during);
    }

    #[test]
    fn a_stack_trace_counts_once_under_its_first_line_and_the_last_words_of_a_killed_instance_are_named()
     {
        let lines = [
            (-20, "INFO started"),
            (-3, "java.lang.OutOfMemoryError: Java heap space"),
            (-3, "\tat com.example.Cache.put(Cache.java:42)"),
            (-3, "\tat com.example.Api.handle(Api.java:7)"),
        ];
        let report = analyse(
            &evidence(vec![container("web-1", true, -20, -3, &lines)]),
            at(-10),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        let oom = report.new_error().unwrap();
        assert_eq!(oom.template, "java.lang.OutOfMemoryError: Java heap space");
        assert_eq!(oom.trend, Trend::LastWords);
        assert_eq!(oom.during, 1);
        assert_eq!(
            report.patterns.len(),
            2,
            "frames are folded: {:?}",
            report.patterns
        );
    }

    #[test]
    fn a_jump_is_increased_and_a_rate_without_enough_before_is_unknown() {
        let mut lines = every_minute(-60, 0, "ERROR retrying payment {m}");
        lines.extend(every_minute(-10, 0, "ERROR retrying payment {m}0"));
        lines.extend(every_minute(-10, 0, "ERROR retrying payment {m}1"));
        lines.extend(every_minute(-10, 0, "ERROR retrying payment {m}2"));
        lines.extend(every_minute(-10, 0, "ERROR retrying payment {m}3"));
        lines.extend(every_minute(-10, 0, "ERROR retrying payment {m}4"));
        lines.sort();
        let report = analyse(
            &evidence(vec![container("a", false, -60, 0, &borrowed(&lines))]),
            at(-10),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        assert_eq!(report.patterns[0].trend, Trend::Increased);
        let short = analyse(
            &evidence(vec![container("a", false, -12, 0, &borrowed(&lines[..5]))]),
            at(-10),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        assert!(short.patterns.iter().all(|p| p.trend == Trend::Unknown));
    }

    #[test]
    fn secrets_never_reach_an_example_and_examples_are_cut() {
        let long = format!(
            "ERROR login failed for jane@example.com password=hunter2 {}",
            "x".repeat(400)
        );
        let lines = [(-2, long.as_str())];
        let report = analyse(
            &evidence(vec![container("a", false, -30, 0, &lines)]),
            at(-10),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        let example = &report.patterns[0].example;
        assert!(!example.contains("hunter2") && !example.contains("jane@"));
        assert!(example.chars().count() <= EXAMPLE_CHARS);
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(1240), "1,240");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn of_one_failure_printed_several_ways_the_line_that_says_how_it_failed_comes_first() {
        let mut lines = every_minute(-60, 0, "INFO GET /invoices/{m} 200");
        for m in -10..0 {
            lines.push((m, format!("ERROR {m} servlet threw exception [Request processing failed: bad SQL grammar [select {m}]] with root cause")));
            lines.push((m, "ERROR 500 Internal Server Error".to_owned()));
            lines.push((
                m,
                "org.postgresql.util.PSQLException: ERROR: column invoices.currency does not exist"
                    .to_owned(),
            ));
        }
        let report = analyse(
            &evidence(vec![container("web-1", false, -60, 0, &borrowed(&lines))]),
            at(-10),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        let named = report.new_error().map(|p| p.template.as_str());
        assert!(
            named.is_some_and(|t| t.contains("does not exist")),
            "{named:?}"
        );
    }

    #[test]
    fn an_error_that_reached_its_rate_minutes_before_the_onset_began_before_the_breach() {
        let mut lines = every_minute(-60, 0, "INFO GET /orders/{m} 200");
        lines.extend(every_minute(
            -8,
            0,
            "ERROR export failed: 503 from collector",
        ));
        let report = analyse(
            &evidence(vec![container("web-1", false, -60, 0, &borrowed(&lines))]),
            at(-4),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        assert!(report.new_error().is_none(), "{:?}", report.patterns);
        let export = report
            .patterns
            .iter()
            .find(|p| p.template.contains("export"));
        assert!(export.is_some_and(|p| p.trend == Trend::Earlier && p.began == Some(at(-8))));
    }

    #[test]
    fn an_error_that_began_within_the_onsets_tolerance_is_new() {
        let mut lines = every_minute(-60, 0, "INFO GET /orders/{m} 200");
        lines.extend(every_minute(-5, 0, "ERROR column x does not exist"));
        let report = analyse(
            &evidence(vec![container("web-1", false, -60, 0, &borrowed(&lines))]),
            at(-4),
            at(0),
            Duration::minutes(2),
            &Redactor::default(),
        );
        assert!(report.new_error().is_some_and(|p| p.trend.is_new()));
    }

    #[test]
    fn a_long_line_is_quoted_from_its_exception() {
        let long = "ERROR [http-nio-8080-exec-3] c.w.geo.api.ApiExceptionHandler - lookup failed: org.apache.lucene.index.CorruptIndexException: checksum failed (hardware problem?)";
        let q = quoted(long);
        assert!(
            q.starts_with("`… org.apache.lucene.index.CorruptIndexException: checksum failed"),
            "{q}"
        );
    }

    #[test]
    fn one_or_two_pods_of_more_are_named() {
        assert_eq!(on_pods(&["web-1".into()], 6), "web-1 (1 of 6 pods read)");
        assert_eq!(
            on_pods(&["web-1".into(), "web-2".into(), "web-3".into()], 6),
            "3 of 6 pods read"
        );
        assert_eq!(on_pods(&["web-1".into()], 1), "1 of 1 pod read");
    }

    #[test]
    fn a_long_template_is_quoted_with_its_head_and_its_tail() {
        let long = "psycopg2.OperationalError: connection to server at \"ledger-pg.backoffice.svc.cluster.local\" (<ip>), port 5432 failed: Connection refused";
        let q = quoted(long);
        assert!(q.starts_with("`psycopg2.OperationalError"), "{q}");
        assert!(q.ends_with("failed: Connection refused`"), "{q}");
        assert!(q.chars().count() <= 94, "{q}");
    }

    #[test]
    fn an_error_seen_from_the_first_line_read_after_the_onset_is_dated_at_least_then() {
        let mut lines = every_minute(-60, -40, "INFO GET /orders/{m} 200");
        lines.extend(every_minute(5, 10, "ERROR connection refused to db:5432"));
        let mut log = container("web-1", false, -60, -40, &borrowed(&lines));
        log.covered.push((at(5), at(10)));
        let report = analyse(
            &evidence(vec![log]),
            at(0),
            at(10),
            Duration::minutes(2),
            &Redactor::default(),
        );
        let new = report.new_error();
        assert!(
            new.is_some_and(|p| p.read_after_onset && p.since_words() == "since at least 10:05"),
            "{new:?}"
        );
        assert!(
            report.line.contains("since at least 10:05"),
            "{}",
            report.line
        );
    }
}
