//! What the pods printed: which containers to read, within which bounds, and
//! the lines that came back, already redacted at the edge.
//!
//! Logs are read as soon as the pods are listed, alongside their series, so
//! the pods are chosen from the listing alone (no extra round trip): the ones
//! in trouble (not ready, restarted, waiting), the newest ReplicaSet's, and
//! one ordinary pod for contrast. Each container is read twice at once, from
//! the start of the baseline and from shortly before the breach, each half of
//! its byte budget: a chatty pod then still shows both what it printed
//! before and what it prints now, and counts are compared per minute of the
//! span each read covered.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// At most this many bytes read from one container (both reads together).
pub const BYTES_PER_CONTAINER: usize = 256 * 1024;
/// At most this many bytes read in all, across every container and source.
pub const BYTES_IN_ALL: usize = 1024 * 1024;
/// Containers read at most: the worst few, and one ordinary pod.
pub const MAX_PODS: usize = 4;
/// The recent read starts this long before the alarm's first breaching period.
pub const RECENT_MARGIN: Duration = Duration::minutes(20);

/// One container whose log to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRequest {
    pub pod: String,
    pub container: String,
    /// The previous (terminated) instance of a container that restarted.
    pub previous: bool,
    /// Why this pod was chosen: `restarted`, `not ready`, `newest ReplicaSet`, `contrast`.
    pub why: String,
}

/// Which containers to read and how many bytes each read may bring.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogPlan {
    pub requests: Vec<LogRequest>,
    /// Bytes one container's reads may bring together (a container is read
    /// twice: from the baseline's start and the tail since shortly before the breach).
    pub bytes_per_container: usize,
}

/// Where lines came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogOrigin {
    /// The Kubernetes API's `pods/log`.
    PodLog,
    /// CloudWatch Logs Insights over the log group the cluster ships to.
    LogsInsights,
}

/// One line a container printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub at: DateTime<Utc>,
    pub text: String,
}

/// What one container's log gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerLog {
    pub pod: String,
    pub container: String,
    pub previous: bool,
    pub origin: LogOrigin,
    /// Oldest first; redacted.
    pub lines: Vec<LogLine>,
    /// The spans the reads covered, `[from, to]` each: counts are compared
    /// per minute of these, so a read cut short by its byte bound still
    /// gives a rate.
    pub covered: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// A read stopped at its byte or row bound.
    pub truncated: bool,
    pub bytes: usize,
}

impl ContainerLog {
    /// Minutes of `[from, to)` the reads covered.
    pub fn minutes_covered(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
        let mut spans: Vec<(DateTime<Utc>, DateTime<Utc>)> = self
            .covered
            .iter()
            .map(|(a, b)| ((*a).max(from), (*b).min(to)))
            .filter(|(a, b)| a < b)
            .collect();
        spans.sort();
        let mut total = 0.0;
        let mut reached: Option<DateTime<Utc>> = None;
        for (a, b) in spans {
            let start = reached.map_or(a, |r| r.max(a));
            if b > start {
                total += (b - start).num_milliseconds() as f64 / 60_000.0;
            }
            reached = Some(reached.map_or(b, |r| r.max(b)));
        }
        total
    }
}

/// When a container's two reads start: at the baseline's start, and shortly
/// before the breach (so a chatty container's bound still leaves the breach in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogWindow {
    pub baseline: DateTime<Utc>,
    pub recent: DateTime<Utc>,
    pub now: DateTime<Utc>,
}

impl LogWindow {
    /// The reads for a breach that began around `breach_start`, over a
    /// baseline that starts at `baseline`.
    pub fn around(
        baseline: DateTime<Utc>,
        breach_start: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Self {
        let recent = crate::instants::earlier(breach_start, RECENT_MARGIN)
            .max(baseline)
            .min(now);
        LogWindow {
            baseline,
            recent,
            now,
        }
    }

    /// The reads of one container within `bytes` together: forward from the
    /// baseline's start (a quarter: enough minutes for a rate before), and
    /// the newest lines since shortly before the breach (the rest, as many
    /// lines of a usual length as it holds), so that a chatty container's
    /// bound cannot leave the breach out.
    pub fn reads(&self, bytes: usize) -> Vec<ReadSpec> {
        if self.recent <= self.baseline {
            return vec![ReadSpec {
                since: self.baseline,
                tail_lines: None,
                limit_bytes: bytes.max(1),
            }];
        }
        let baseline = (bytes / 4).max(1);
        let tail = bytes.saturating_sub(baseline).max(1);
        vec![
            ReadSpec {
                since: self.baseline,
                tail_lines: None,
                limit_bytes: baseline,
            },
            ReadSpec {
                since: self.recent,
                tail_lines: Some((tail / USUAL_LINE_BYTES).max(1)),
                limit_bytes: tail,
            },
        ]
    }
}

/// The length of a usual log line, to turn a byte bound into a line count.
pub const USUAL_LINE_BYTES: usize = 160;

/// One read: from `since`, the last `tail_lines` only when set, at most `limit_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSpec {
    pub since: DateTime<Utc>,
    pub tail_lines: Option<usize>,
    pub limit_bytes: usize,
}

impl ReadSpec {
    /// Where what came back starts to be complete: a tail read that brought
    /// all the lines it asked for, or was cut at its byte bound (the API
    /// server cuts the tail's newest end), may have left older ones out.
    pub fn covered_from(&self, lines: &[LogLine], cut: bool) -> DateTime<Utc> {
        match (self.tail_lines, lines.first()) {
            (Some(tail), Some(first)) if cut || lines.len() >= tail => first.at.max(self.since),
            _ => self.since,
        }
    }
}

/// One bounded read of a container's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRead {
    pub since: DateTime<Utc>,
    /// Oldest first.
    pub lines: Vec<LogLine>,
    /// The read stopped at its byte bound: it covers up to its last line only.
    pub cut: bool,
    pub bytes: usize,
}

impl ContainerLog {
    /// One container's log from its reads: each read covers from its start
    /// to its last line when it was cut (or when it is a previous instance,
    /// which printed nothing after it ended), else to `now`; a later read
    /// only adds the lines past what the earlier ones covered.
    pub fn from_reads(
        request: &LogRequest,
        origin: LogOrigin,
        mut reads: Vec<LogRead>,
        now: DateTime<Utc>,
    ) -> Self {
        reads.sort_by_key(|r| r.since);
        let mut log = ContainerLog {
            pod: request.pod.clone(),
            container: request.container.clone(),
            previous: request.previous,
            origin,
            lines: Vec::new(),
            covered: Vec::new(),
            truncated: false,
            bytes: 0,
        };
        let mut reached: Option<DateTime<Utc>> = None;
        for read in reads {
            let last = read.lines.last().map(|l| l.at);
            let end = if read.cut || request.previous {
                last.unwrap_or(read.since).max(read.since)
            } else {
                now
            };
            log.truncated |= read.cut;
            log.bytes += read.bytes;
            log.covered.push((read.since, end));
            let after = reached;
            log.lines.extend(
                read.lines
                    .into_iter()
                    .filter(|l| after.is_none_or(|r| l.at > r)),
            );
            reached = Some(reached.map_or(end, |r| r.max(end)));
        }
        log
    }
}

impl ContainerLog {
    /// A pod's log covers it from its creation only: a read from before then
    /// did not see quiet minutes, it saw no pod. (Without this, a pod that a
    /// rollout created after the onset would count as read at the onset, and
    /// an error the old pods printed since then would look late.)
    pub fn clipped_to_creation(mut self, created: Option<DateTime<Utc>>) -> Self {
        if let Some(created) = created {
            self.covered = self
                .covered
                .into_iter()
                .map(|(from, to)| (from.max(created), to))
                .filter(|(from, to)| from < to)
                .collect();
        }
        self
    }
}

/// Everything read from the logs for one diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogEvidence {
    pub namespace: String,
    pub containers: Vec<ContainerLog>,
    /// The containers that were asked for and why (a pod whose read failed stays listed).
    pub requested: Vec<LogRequest>,
}

/// Parses what `pods/log?timestamps=true` returns: each line prefixed by its
/// RFC 3339 timestamp and a space. A line without a readable timestamp takes
/// the previous line's (a continuation); the last line is dropped when the
/// read was cut at its byte bound (it may be partial).
pub fn parse_timestamped(body: &str, cut_at_bound: bool) -> Vec<LogLine> {
    let mut lines = Vec::new();
    let mut last: Option<DateTime<Utc>> = None;
    let mut raw: Vec<&str> = body.lines().collect();
    if cut_at_bound && !body.ends_with('\n') {
        raw.pop();
    }
    for line in raw {
        let (at, text) = match line.split_once(' ') {
            Some((stamp, rest)) => match DateTime::parse_from_rfc3339(stamp) {
                Ok(at) => (Some(at.with_timezone(&Utc)), rest),
                Err(_) => (None, line),
            },
            None => match DateTime::parse_from_rfc3339(line) {
                Ok(at) => (Some(at.with_timezone(&Utc)), ""),
                Err(_) => (None, line),
            },
        };
        let Some(at) = at.or(last) else {
            continue;
        };
        last = Some(at);
        lines.push(LogLine {
            at,
            text: text.to_owned(),
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamped_lines_parse_and_a_cut_last_line_is_dropped() {
        let body = "2026-12-04T08:00:00.123456789Z hello 1\n\tat frame\n2026-12-04T08:00:01Z hello 2\n2026-12-04T08:00:02Z hel";
        let lines = parse_timestamped(body, true);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1].text, "\tat frame");
        assert_eq!(lines[1].at, lines[0].at);
        assert_eq!(parse_timestamped(body, false).len(), 4);
    }

    #[test]
    fn coverage_counts_overlapping_reads_once() {
        let t = |m: i64| DateTime::<Utc>::UNIX_EPOCH + Duration::minutes(m);
        let log = ContainerLog {
            pod: "p".into(),
            container: "c".into(),
            previous: false,
            origin: LogOrigin::PodLog,
            lines: vec![],
            covered: vec![(t(0), t(30)), (t(20), t(60))],
            truncated: false,
            bytes: 0,
        };
        assert!((log.minutes_covered(t(0), t(60)) - 60.0).abs() < 1e-9);
        assert!((log.minutes_covered(t(50), t(100)) - 10.0).abs() < 1e-9);
    }

    fn line(minute: i64, text: &str) -> LogLine {
        LogLine {
            at: t0() + Duration::minutes(minute),
            text: text.into(),
        }
    }

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-04T08:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    fn request(previous: bool) -> LogRequest {
        LogRequest {
            pod: "web-1".into(),
            container: "app".into(),
            previous,
            why: "restarted".into(),
        }
    }

    #[test]
    fn a_cut_read_covers_to_its_last_line_and_the_recent_read_adds_only_what_follows() {
        let baseline = LogRead {
            since: t0(),
            lines: vec![line(0, "a"), line(10, "b")],
            cut: true,
            bytes: 100,
        };
        let recent = LogRead {
            since: t0() + Duration::minutes(5),
            lines: vec![line(6, "b"), line(10, "b"), line(30, "c")],
            cut: false,
            bytes: 60,
        };
        let now = t0() + Duration::minutes(40);
        let log = ContainerLog::from_reads(
            &request(false),
            LogOrigin::PodLog,
            vec![recent, baseline],
            now,
        );
        let texts: Vec<&str> = log.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["a", "b", "c"]);
        assert!(log.truncated);
        assert_eq!(log.bytes, 160);
        assert!((log.minutes_covered(t0(), now) - 40.0).abs() < 1e-9);
    }

    #[test]
    fn a_whole_read_makes_the_recent_one_add_nothing() {
        let whole = LogRead {
            since: t0(),
            lines: vec![line(0, "a"), line(20, "b")],
            cut: false,
            bytes: 10,
        };
        let recent = LogRead {
            since: t0() + Duration::minutes(15),
            lines: vec![line(20, "b")],
            cut: false,
            bytes: 5,
        };
        let log = ContainerLog::from_reads(
            &request(false),
            LogOrigin::PodLog,
            vec![whole, recent],
            t0() + Duration::minutes(30),
        );
        assert_eq!(log.lines.len(), 2);
    }

    #[test]
    fn a_tail_read_that_got_every_line_it_asked_for_covers_from_its_first_line() {
        let spec = ReadSpec {
            since: t0(),
            tail_lines: Some(2),
            limit_bytes: 1000,
        };
        let lines = [line(7, "a"), line(9, "b")];
        assert_eq!(
            spec.covered_from(&lines, false),
            t0() + Duration::minutes(7)
        );
        assert_eq!(spec.covered_from(&lines[..1], false), t0());
        assert_eq!(
            spec.covered_from(&lines[..1], true),
            t0() + Duration::minutes(7),
            "a tail cut at its byte bound left older lines out"
        );
    }

    #[test]
    fn a_pod_created_after_the_read_began_is_covered_from_its_creation() {
        let request = LogRequest {
            pod: "p".into(),
            container: "c".into(),
            previous: false,
            why: "sample".into(),
        };
        let read = LogRead {
            since: t0(),
            lines: vec![line(40, "started")],
            cut: false,
            bytes: 10,
        };
        let now = t0() + Duration::minutes(60);
        let log = ContainerLog::from_reads(&request, LogOrigin::PodLog, vec![read], now);
        let created = t0() + Duration::minutes(39);
        let log = log.clipped_to_creation(Some(created));
        assert_eq!(log.covered, vec![(created, now)]);
        assert!((log.minutes_covered(t0(), now) - 21.0).abs() < 1e-9);
        let unborn = log
            .clone()
            .clipped_to_creation(Some(now + Duration::minutes(1)));
        assert!(unborn.covered.is_empty(), "{unborn:?}");
    }

    #[test]
    fn a_previous_instance_covers_only_until_it_ended() {
        let read = LogRead {
            since: t0(),
            lines: vec![line(0, "start"), line(12, "OutOfMemoryError")],
            cut: false,
            bytes: 10,
        };
        let now = t0() + Duration::minutes(60);
        let log = ContainerLog::from_reads(&request(true), LogOrigin::PodLog, vec![read], now);
        assert!((log.minutes_covered(t0(), now) - 12.0).abs() < 1e-9);
    }

    #[test]
    fn the_recent_read_starts_before_the_breach_and_never_before_the_baseline() {
        let now = t0() + Duration::hours(3);
        let window = LogWindow::around(t0(), now - Duration::minutes(5), now);
        assert_eq!(window.recent, now - Duration::minutes(25));
        let reads = window.reads(16_000);
        assert_eq!(reads[1].tail_lines, Some(75));
        assert_eq!(reads[0].limit_bytes + reads[1].limit_bytes, 16_000);
        let early = LogWindow::around(t0(), t0(), now);
        assert_eq!(early.reads(16_000).len(), 1);
    }
}
