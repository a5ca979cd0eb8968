//! CloudWatch Logs Insights over the log group the cluster ships container
//! logs to (Container Insights' `/aws/containerinsights/<cluster>/application`,
//! or `LOG_GROUPS`): one query per diagnosis for every pod of the culprit's
//! Deployments, the ones a rollout replaced included, which `pods/log` can no
//! longer read. StartQuery, GetQueryResults until it completes, StopQuery
//! when it does not in time.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};

use super::{sdk_failure, service_error_code};
use crate::error::{Error, Result};
use crate::evidence::logs::{
    BYTES_PER_CONTAINER, ContainerLog, LogLine, LogOrigin, LogWindow, USUAL_LINE_BYTES,
};
use crate::evidence::source;
use crate::evidence::workload::PodsListed;

/// Rows one query brings at most (the API's own maximum).
const MAX_ROWS: i32 = 10_000;

/// The lines worth the query's rows: levels, exceptions and failure words.
const NOTEWORTHY: &str = r"/(?i)(error|err\b|warn|exception|fatal|panic|fail|refused|timeout|timed out|denied|killed|cannot|unable|invalid|traceback)/";

/// What a row costs in the response besides its line: the field names, the
/// timestamp, the pod and container names and Insights' `@ptr` (about 100
/// characters), each quoted in JSON.
const ROW_ENVELOPE_BYTES: usize = 352;

/// How long a query may run before it is stopped.
const QUERY_TIME: Duration = Duration::from_secs(8);

/// Reads container logs through aws-sdk-cloudwatchlogs.
#[derive(Debug, Clone)]
pub struct LogsInsightsSource {
    client: aws_sdk_cloudwatchlogs::Client,
    /// `LOG_GROUPS`; empty: Container Insights' application log group.
    configured: Vec<String>,
}

impl LogsInsightsSource {
    pub fn new(client: aws_sdk_cloudwatchlogs::Client, configured: Vec<String>) -> Self {
        LogsInsightsSource { client, configured }
    }

    /// The workload's lines over the window; `None` when the cluster ships
    /// no logs to the default log group. Three queries at once: the breach
    /// (from shortly before it to now) with half the bytes, and the time
    /// before it with a quarter from each end. Rows come from one end of a
    /// span only, so one read of "before" that fills its rows leaves the
    /// other end out: newest first misses when a symptom that rose in steps
    /// began, oldest first misses the minutes before the breach.
    pub async fn workload_logs(
        &self,
        pods: &PodsListed,
        cluster: Option<&str>,
        window: LogWindow,
        limit_bytes: usize,
    ) -> Result<Option<Vec<ContainerLog>>> {
        let groups = if self.configured.is_empty() {
            let Some(cluster) = cluster else {
                return Ok(None);
            };
            vec![format!("/aws/containerinsights/{cluster}/application")]
        } else {
            self.configured.clone()
        };
        let reads = SpanRead::plan(window, limit_bytes);
        let queries = reads.iter().map(|read| self.span(&groups, pods, read));
        let mut answers = Vec::new();
        for (rows, read) in futures_util::future::try_join_all(queries)
            .await?
            .into_iter()
            .zip(reads)
        {
            let Some(rows) = rows else {
                return Ok(None);
            };
            answers.push(Answer::of(rows, read));
        }
        let logs = reconciled(answers)
            .into_iter()
            .map(|a| containers(a.rows, pods, (a.from, a.to), a.read.share))
            .collect();
        Ok(Some(merged(logs)))
    }

    /// One query; `None` when the default log group does not exist.
    async fn span(
        &self,
        groups: &[String],
        pods: &PodsListed,
        read: &SpanRead,
    ) -> Result<Option<Vec<Row>>> {
        let started = self
            .client
            .start_query()
            .set_log_group_names(Some(groups.to_vec()))
            .start_time(read.from.timestamp())
            .end_time(read.to.timestamp())
            .query_string(query(pods, read.rows(), read.oldest_first))
            .limit(read.rows())
            .send()
            .await;
        let id = match started {
            Ok(out) => out.query_id.unwrap_or_default(),
            Err(e)
                if self.configured.is_empty()
                    && service_error_code(&e) == Some("ResourceNotFoundException") =>
            {
                return Ok(None);
            }
            Err(e) => return Err(sdk_failure(source::LOGS_INSIGHTS, "logs:StartQuery", &e)),
        };
        self.results(&id).await.map(Some)
    }

    /// Polls until the query completes; stops it when it takes too long.
    async fn results(&self, id: &str) -> Result<Vec<Row>> {
        let deadline = tokio::time::Instant::now() + QUERY_TIME;
        let mut pause = Duration::from_millis(200);
        loop {
            let out = self
                .client
                .get_query_results()
                .query_id(id)
                .send()
                .await
                .map_err(|e| sdk_failure(source::LOGS_INSIGHTS, "logs:GetQueryResults", &e))?;
            use aws_sdk_cloudwatchlogs::types::QueryStatus;
            match out.status {
                Some(QueryStatus::Complete) => {
                    // Rows take the response's strings rather than copies.
                    return Ok(out
                        .results
                        .unwrap_or_default()
                        .into_iter()
                        .map(Row::of)
                        .collect());
                }
                Some(QueryStatus::Running | QueryStatus::Scheduled) | None => {}
                Some(other) => {
                    return Err(Error::Source {
                        source_name: source::LOGS_INSIGHTS,
                        reason: format!("the query ended {}", other.as_str()),
                        retryable: true,
                    });
                }
            }
            if tokio::time::Instant::now() + pause > deadline {
                // Best effort: a query left running costs its scan, not ours.
                let _ = self.client.stop_query().query_id(id).send().await;
                return Err(Error::Source {
                    source_name: source::LOGS_INSIGHTS,
                    reason: format!(
                        "the query did not complete in {} s and was stopped",
                        QUERY_TIME.as_secs()
                    ),
                    retryable: true,
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(1000));
        }
    }
}

/// The query: the namespace, and every pod of the Deployments (by their
/// pods' name prefix) or, without Deployments, the pods listed.
fn query(pods: &PodsListed, rows: i32, oldest_first: bool) -> String {
    let owners = pods.owners();
    let which = if owners.is_empty() {
        let names: Vec<String> = pods.pods.iter().map(|p| quoted(p)).collect();
        format!("kubernetes.pod_name in [{}]", names.join(", "))
    } else {
        let names: Vec<String> = owners.iter().map(|o| regex_literal(o)).collect();
        format!(
            "kubernetes.pod_name like /^({})-[a-z0-9]+-[a-z0-9]+$/",
            names.join("|")
        )
    };
    // Errors and warnings only: a busy workload's access lines would fill
    // the rows with the last minutes and leave no "before" to compare with.
    format!(
        "fields @timestamp, kubernetes.pod_name, kubernetes.container_name, log \
         | filter kubernetes.namespace_name = {} and {which} and log like {NOTEWORTHY} \
         | sort @timestamp {} | limit {rows}",
        quoted(&pods.namespace),
        if oldest_first { "asc" } else { "desc" }
    )
}

/// One query's span, the end its rows come from, and its share of the bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SpanRead {
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    oldest_first: bool,
    share: usize,
}

impl SpanRead {
    /// The breach with half the bytes, so that a busy breach cannot crowd the
    /// "before" out, and the time before it from both ends.
    fn plan(window: LogWindow, limit_bytes: usize) -> Vec<SpanRead> {
        if window.recent <= window.baseline {
            return vec![SpanRead {
                from: window.baseline,
                to: window.now,
                oldest_first: false,
                share: limit_bytes,
            }];
        }
        let before = |oldest_first| SpanRead {
            from: window.baseline,
            to: window.recent,
            oldest_first,
            share: limit_bytes / 4,
        };
        vec![
            before(true),
            before(false),
            SpanRead {
                from: window.recent,
                to: window.now,
                oldest_first: false,
                share: limit_bytes / 2,
            },
        ]
    }

    /// The rows it asks for. The share bounds the response, not only its
    /// lines: a response is held whole (and parsed) before it is cut, and a
    /// row's envelope weighs more than a usual line.
    fn rows(&self) -> i32 {
        i32::try_from(self.share / (USUAL_LINE_BYTES + ROW_ENVELOPE_BYTES))
            .unwrap_or(MAX_ROWS)
            .clamp(1, MAX_ROWS)
    }
}

/// One query's rows (newest first) and the span they cover.
#[derive(Debug)]
struct Answer {
    rows: Vec<Row>,
    read: SpanRead,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    /// It returned all the rows it was allowed: the far end was left out.
    full: bool,
}

impl Answer {
    fn of(mut rows: Vec<Row>, read: SpanRead) -> Self {
        let full = rows.len() >= usize::try_from(read.rows()).unwrap_or(usize::MAX);
        if read.oldest_first {
            rows.reverse();
        }
        let (mut from, mut to) = (read.from, read.to);
        // A full answer covers from its oldest row (newest first) or to its
        // newest (oldest first), for every pod alike.
        if full {
            let times = rows.iter().filter_map(|r| r.at);
            if read.oldest_first {
                to = times.max().unwrap_or(to).min(to);
            } else {
                from = times.min().unwrap_or(from).max(from);
            }
        }
        Answer {
            rows,
            read,
            from,
            to,
            full,
        }
    }
}

/// The two reads of the time before the breach as what they cover together:
/// either one alone when it read the whole span, both when each was cut,
/// the rows of the newest-first read that the oldest-first one already
/// holds left out.
fn reconciled(answers: Vec<Answer>) -> Vec<Answer> {
    let mut kept: Vec<Answer> = Vec::new();
    let mut answers = answers.into_iter().peekable();
    while let Some(answer) = answers.next() {
        let pair = answers
            .peek()
            .is_some_and(|next| answer.read.oldest_first && next.read.from == answer.read.from);
        if !pair {
            kept.push(answer);
            continue;
        }
        let Some(mut newest) = answers.next() else {
            kept.push(answer);
            continue;
        };
        if !answer.full {
            kept.push(answer);
        } else if !newest.full {
            kept.push(newest);
        } else {
            let reached = answer.to;
            newest.rows.retain(|r| r.at.is_some_and(|at| at > reached));
            newest.from = newest.from.max(reached);
            kept.push(answer);
            kept.push(newest);
        }
    }
    kept
}

fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A Kubernetes name inside a /regex/: dots escaped, anything else unexpected dropped.
fn regex_literal(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
        .map(|c| {
            if c == '.' {
                "\\.".to_owned()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// One result row's fields.
#[derive(Debug, Default)]
struct Row {
    at: Option<DateTime<Utc>>,
    pod: Option<String>,
    container: Option<String>,
    log: Option<String>,
}

impl Row {
    fn of(fields: Vec<aws_sdk_cloudwatchlogs::types::ResultField>) -> Self {
        let mut row = Row::default();
        for f in fields {
            let value = f.value;
            match f.field.as_deref() {
                Some("@timestamp") => row.at = value.as_deref().and_then(insights_time),
                Some("kubernetes.pod_name") => row.pod = value,
                Some("kubernetes.container_name") => row.container = value,
                Some("log") => row.log = value,
                _ => {}
            }
        }
        row
    }
}

/// Insights writes `2026-12-04 08:10:00.123`, in UTC.
fn insights_time(s: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc())
}

/// Rows (newest first) of one span into one log per container, within
/// the byte bounds. A pod still listed is covered from the span's start (or
/// its creation) to the span's end, whatever it printed: the query keeps
/// only errors and warnings, so a pod that printed none still counts its
/// minutes. A pod gone is covered from its first line to its last.
fn containers(
    rows: Vec<Row>,
    pods: &PodsListed,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    limit_bytes: usize,
) -> Vec<ContainerLog> {
    let log = |pod: String, container: String| ContainerLog {
        pod,
        container,
        previous: false,
        origin: LogOrigin::LogsInsights,
        lines: Vec::new(),
        covered: Vec::new(),
        truncated: false,
        bytes: 0,
    };
    let mut by_container: BTreeMap<(String, String), ContainerLog> = BTreeMap::new();
    let mut total = 0usize;
    let mut cut_at: Option<DateTime<Utc>> = None;
    for row in rows {
        let (Some(at), Some(pod), Some(text)) = (row.at, row.pod, row.log) else {
            continue;
        };
        let container = row.container.unwrap_or_default();
        let entry = by_container
            .entry((pod.clone(), container.clone()))
            .or_insert_with(|| log(pod, container));
        let text = text.trim_end_matches(['\n', '\r']).to_owned();
        if total + text.len() > limit_bytes || entry.bytes + text.len() > BYTES_PER_CONTAINER / 2 {
            entry.truncated = true;
            cut_at = Some(cut_at.map_or(at, |c| c.max(at)));
            continue;
        }
        total += text.len() + 1;
        entry.bytes += text.len() + 1;
        entry.lines.push(LogLine { at, text });
    }
    // Listed pods that printed nothing noteworthy still count their minutes.
    for pod in &pods.pods {
        if !by_container.keys().any(|(p, _)| p == pod) {
            by_container.insert(
                (pod.clone(), String::new()),
                log(pod.clone(), String::new()),
            );
        }
    }
    by_container
        .into_values()
        .map(|mut c| {
            c.lines.reverse();
            let listed = pods.pods.contains(&c.pod);
            let start = if c.truncated || !listed {
                // Rows were dropped from the old end: covered from the oldest kept.
                c.lines.first().map_or(to, |l| l.at)
            } else {
                pods.created
                    .get(&c.pod)
                    .map_or(from, |created| (*created).max(from))
            };
            let start = match cut_at {
                Some(cut) if c.truncated => start.max(cut),
                _ => start,
            };
            let end = if listed {
                to
            } else {
                c.lines.last().map_or(from, |l| l.at)
            };
            if start < end {
                c.covered = vec![(start.max(from), end)];
            }
            c
        })
        .collect()
}

/// The spans' logs of each container, as one.
fn merged(spans: Vec<Vec<ContainerLog>>) -> Vec<ContainerLog> {
    let mut by_container: BTreeMap<(String, String), ContainerLog> = BTreeMap::new();
    for log in spans.into_iter().flatten() {
        match by_container.entry((log.pod.clone(), log.container.clone())) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(log);
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                let c = o.get_mut();
                c.lines.extend(log.lines);
                c.lines.sort_by_key(|l| l.at);
                c.covered.extend(log.covered);
                c.truncated |= log.truncated;
                c.bytes += log.bytes;
            }
        }
    }
    by_container.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> PodsListed {
        PodsListed {
            cluster: Some("prod".into()),
            namespace: "trips".into(),
            pods: vec!["itinerary-7f4c9b6d52-8wjzc".into()],
            workloads: [("itinerary-7f4c9b6d52-8wjzc".into(), "itinerary".into())].into(),
            logs: Default::default(),
            created: Default::default(),
        }
    }

    fn minute(m: i64) -> DateTime<Utc> {
        insights_time("2026-12-04 08:00:00.000").unwrap() + chrono::Duration::minutes(m)
    }

    /// Three hours of logs, the breach in the last ten minutes.
    fn three_hours() -> LogWindow {
        LogWindow {
            baseline: minute(0),
            recent: minute(170),
            now: minute(180),
        }
    }

    /// One row at each of `seconds` after minute 0, in that order.
    fn rows_at(seconds: impl Iterator<Item = i64>) -> Vec<Row> {
        seconds
            .map(|t| Row {
                at: Some(minute(0) + chrono::Duration::seconds(t)),
                pod: Some("itinerary-7f4c9b6d52-8wjzc".into()),
                container: Some("app".into()),
                log: Some(format!("ERROR at second {t}")),
            })
            .collect()
    }

    #[test]
    fn the_time_before_the_breach_is_read_from_both_ends_and_the_breach_with_half_the_bytes() {
        let reads = SpanRead::plan(three_hours(), 1 << 20);
        let ends: Vec<(bool, usize)> = reads.iter().map(|r| (r.oldest_first, r.share)).collect();
        assert_eq!(
            ends,
            vec![(true, 1 << 18), (false, 1 << 18), (false, 1 << 19)]
        );
        assert!(query(&listed(), 10, true).contains("sort @timestamp asc"));
    }

    #[test]
    fn two_cut_reads_of_the_time_before_cover_both_ends_each_row_once() {
        let reads = SpanRead::plan(three_hours(), 1 << 20);
        let rows = i64::from(reads[0].rows());
        // A row every 10 s: from minute 10 oldest first and back from minute
        // 160 newest first, both cut by their rows, overlapping in the middle.
        let oldest = Answer::of(rows_at((0..rows).map(|i| 600 + 10 * i)), reads[0]);
        let newest = Answer::of(rows_at((0..rows).map(|i| 9600 - 10 * i)), reads[1]);
        assert!(oldest.full && newest.full);
        let reached = minute(10) + chrono::Duration::seconds(10 * (rows - 1));
        assert!(reached > minute(160) - chrono::Duration::seconds(10 * (rows - 1)));
        let kept = reconciled(vec![oldest, newest]);
        assert_eq!(kept.len(), 2);
        assert_eq!((kept[0].from, kept[0].to), (minute(0), reached));
        assert_eq!((kept[1].from, kept[1].to), (reached, minute(170)));
        let mut times: Vec<DateTime<Utc>> = kept
            .iter()
            .flat_map(|a| a.rows.iter().filter_map(|r| r.at))
            .collect();
        let read = times.len();
        times.sort();
        times.dedup();
        assert_eq!(read, times.len(), "a row counted twice");
        assert_eq!(times.first(), Some(&minute(10)));
        assert_eq!(times.last(), Some(&minute(160)));
    }

    #[test]
    fn a_read_of_the_time_before_that_was_not_cut_is_enough_alone() {
        let reads = SpanRead::plan(three_hours(), 1 << 20);
        let oldest = Answer::of(rows_at((60..70).map(|m| m * 60)), reads[0]);
        let newest = Answer::of(rows_at((60..70).rev().map(|m| m * 60)), reads[1]);
        let breach = Answer::of(rows_at((170..180).rev().map(|m| m * 60)), reads[2]);
        let kept = reconciled(vec![oldest, newest, breach]);
        let spans: Vec<_> = kept
            .iter()
            .map(|a| (a.from, a.to, a.read.oldest_first))
            .collect();
        assert_eq!(
            spans,
            vec![
                (minute(0), minute(170), true),
                (minute(170), minute(180), false)
            ]
        );
        assert_eq!(
            kept[0].rows.first().and_then(|r| r.at),
            Some(minute(69)),
            "newest first"
        );
    }

    #[test]
    fn the_query_reads_every_pod_of_the_deployment_in_the_namespace() {
        assert_eq!(
            query(&listed(), 10_000, false),
            format!(
                "fields @timestamp, kubernetes.pod_name, kubernetes.container_name, log | filter kubernetes.namespace_name = \"trips\" and kubernetes.pod_name like /^(itinerary)-[a-z0-9]+-[a-z0-9]+$/ and log like {NOTEWORTHY} | sort @timestamp desc | limit 10000"
            )
        );
    }

    #[test]
    fn rows_become_one_log_per_container_oldest_first_and_gone_pods_end_at_their_last_line() {
        let at = |s: &str| insights_time(s);
        let row = |t: &str, pod: &str, log: &str| Row {
            at: at(t),
            pod: Some(pod.into()),
            container: Some("app".into()),
            log: Some(format!("{log}\n")),
        };
        let rows = vec![
            row("2026-12-04 08:30:00.000", "itinerary-7f4c9b6d52-8wjzc", "b"),
            row("2026-12-04 08:20:00.000", "itinerary-7f4c9b6d52-8wjzc", "a"),
            row(
                "2026-12-04 08:10:00.000",
                "itinerary-5d8c7b6a41-q5npx",
                "old",
            ),
            row(
                "2026-12-04 08:00:00.000",
                "itinerary-5d8c7b6a41-q5npx",
                "older",
            ),
        ];
        let baseline = at("2026-12-04 07:00:00.000").unwrap_or_default();
        let now = at("2026-12-04 08:40:00.000").unwrap_or_default();
        let logs = containers(rows, &listed(), (baseline, now), 1 << 20);
        assert_eq!(logs.len(), 2);
        let gone = &logs[0];
        assert_eq!(gone.pod, "itinerary-5d8c7b6a41-q5npx");
        assert_eq!(gone.lines[0].text, "older");
        assert_eq!(gone.covered[0].1, gone.lines[1].at);
        let current = &logs[1];
        assert_eq!(current.covered[0].1, now);
        assert_eq!(current.lines[1].text, "b");
    }

    #[test]
    fn the_byte_bound_keeps_the_newest_rows() {
        let row = |m: u32| Row {
            at: insights_time(&format!("2026-12-04 08:{m:02}:00.000")),
            pod: Some("p-1-a".into()),
            container: Some("app".into()),
            log: Some("x".repeat(100)),
        };
        let rows: Vec<Row> = (0..10).rev().map(row).collect();
        let t = insights_time("2026-12-04 08:10:00.000").unwrap_or_default();
        let logs = containers(rows, &listed(), (t, t), 350);
        let read = logs.iter().find(|c| c.pod == "p-1-a").unwrap_or(&logs[0]);
        assert_eq!(read.lines.len(), 3);
        assert!(read.truncated);
        assert_eq!(
            read.lines[2].at,
            insights_time("2026-12-04 08:09:00.000").unwrap_or_default()
        );
    }

    #[test]
    fn a_listed_pod_that_printed_nothing_noteworthy_still_counts_its_minutes() {
        let from = insights_time("2026-12-04 07:00:00.000").unwrap_or_default();
        let to = insights_time("2026-12-04 08:00:00.000").unwrap_or_default();
        let logs = containers(Vec::new(), &listed(), (from, to), 1 << 20);
        assert_eq!(logs.len(), 1);
        assert!((logs[0].minutes_covered(from, to) - 60.0).abs() < 1e-9);
        let both = merged(vec![logs.clone(), logs]);
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].covered.len(), 2);
    }
}
