//! `logs.new_errors`: an error the pods began to print with the breach. Its
//! text is often the fix's first clue (the missing column, the refused
//! host and port, the heap that ran out); a pattern that was printed at the
//! same rate before is ruled out with its before-count.

use chrono::Duration;

use super::{Decided, Scope};
use crate::diagnosis::finding::Facts;
use crate::diagnosis::{Evidence, Finding, FindingId, Verdict};
use crate::evidence::source;
use crate::logs::patterns::{MIN_MINUTES_BEFORE, quoted, thousands};
use crate::logs::{LogReport, Redactor, Trend};

/// A pattern that starts this long after the onset followed the breach; it did not start it.
pub const ONSET_WINDOW: Duration = Duration::minutes(15);

const HYPOTHESIS: &str = "the pods began to print a new error when the breach began";

/// Reads the pods' logs around the onset, when they were read.
pub fn what_the_logs_say(scope: &Scope<'_>, decided: &mut Decided) {
    let investigation = scope.investigation;
    let evidence = &investigation.evidence;
    let Some(logs) = evidence.logs.as_ref() else {
        let unread = evidence
            .gaps
            .iter()
            .any(|g| g.source == source::POD_LOGS || g.source == source::LOGS_INSIGHTS);
        if decided.workload.is_some() && unread {
            decided.findings.push(Finding::decided(
                FindingId::NewLogErrors,
                HYPOTHESIS,
                Verdict::Inconclusive,
                "the pods' logs could not be read (see the evidence gaps)".to_owned(),
                None,
            ));
        }
        return;
    };
    let onset = decided
        .onset
        .at()
        .or_else(|| investigation.breach.first().copied())
        .unwrap_or(investigation.alarm.state_change_time);
    // The onset is known to one period of the metric, and a minute of slack.
    let tolerance = chrono::Duration::seconds(i64::from(investigation.alarm.period()))
        + chrono::Duration::minutes(1);
    let report = crate::logs::analyse(logs, onset, scope.now, tolerance, &Redactor::default());
    decided.findings.push(judge(&report, &logs.namespace));
    decided.logs = Some(report);
}

/// The verdict on the report: a new error that began with the onset, none, or too little read.
pub fn judge(report: &LogReport, namespace: &str) -> Finding {
    let pods = report.pods_read();
    let lines: usize = report.read.iter().map(|r| r.lines).sum();
    let Some(new) = report.new_error() else {
        if lines == 0 || report.minutes_before < MIN_MINUTES_BEFORE {
            return Finding::decided(
                FindingId::NewLogErrors,
                HYPOTHESIS,
                Verdict::Inconclusive,
                format!(
                    "{} lines from {pods} pod(s), {:.0} min of them before the onset: too little to tell a new pattern from an old one",
                    thousands(lines as u64),
                    report.minutes_before
                ),
                None,
            );
        }
        let loudest = report
            .patterns
            .iter()
            .filter(|p| p.trend == Trend::Steady && p.level >= crate::logs::Level::Warning)
            .max_by_key(|p| p.before);
        let clause = match (report.earlier_error(), loudest) {
            (Some(p), _) => format!(
                "new log errors: none with the breach; {} began at {}, before it, while the alarm's metric was still normal: it did not start the breach",
                quoted(&p.template),
                p.began
                    .map(|b| b.format("%H:%M").to_string())
                    .unwrap_or_default(),
            ),
            (None, loudest) => match loudest {
                Some(p) => format!(
                    "new log errors: none in {pods} pod(s); {} was there before ({} lines before the onset, {} since)",
                    quoted(&p.template),
                    thousands(p.before),
                    thousands(p.during)
                ),
                None => format!("new log errors: none in {pods} pod(s) since the onset"),
            },
        };
        return Finding::decided(
            FindingId::NewLogErrors,
            HYPOTHESIS,
            Verdict::Refuted,
            format!(
                "{} lines read from {pods} pod(s) ({:.0} min before the onset, {:.0} min since): no error pattern started or jumped with the breach",
                thousands(lines as u64),
                report.minutes_before,
                report.minutes_during
            ),
            Some(clause),
        );
    };
    let started = new.since.unwrap_or(report.onset);
    let late = started - report.onset > ONSET_WINDOW;
    let on = format!("{} of {pods} pod(s) read", new.pods.len());
    let since = started.format("%H:%M");
    let summary = format!(
        "{} × {} since {since} on {on} ({}; {} before the onset{})",
        thousands(new.during),
        quoted(&new.template),
        new.trend.as_str(),
        thousands(new.before),
        if late {
            format!(
                ", but it began {} min after the onset: it followed the breach",
                (started - report.onset).num_minutes()
            )
        } else {
            String::new()
        }
    );
    let verdict = if late {
        Verdict::Inconclusive
    } else {
        Verdict::Supported
    };
    let cause = format!(
        "the pods print {} since {since} ({} lines on {on}, {})",
        quoted(&new.template),
        thousands(new.during),
        new.trend.as_str()
    );
    let mut finding = Finding::decided(
        FindingId::NewLogErrors,
        HYPOTHESIS,
        verdict,
        summary,
        Some(cause),
    );
    finding.evidence = vec![
        Evidence::text("pattern", new.template.clone()),
        Evidence::number("lines since the onset", new.during as f64, ""),
        Evidence::number("lines before the onset", new.before as f64, ""),
        Evidence::text("pods printing it", new.pods.join(", ")),
        Evidence::text("example", new.example.clone()),
    ];
    let previous = report
        .read
        .iter()
        .any(|r| r.previous && new.pods.contains(&r.pod) && new.trend == Trend::LastWords);
    finding.facts = Facts::Logs {
        namespace: namespace.to_owned(),
        template: new.template.clone(),
        // Pods still there first (read through pods/log): the advice reads them.
        pods: {
            let mut pods = new.pods.clone();
            pods.sort_by_key(|pod| {
                !report
                    .read
                    .iter()
                    .any(|r| &r.pod == pod && r.origin == crate::evidence::logs::LogOrigin::PodLog)
            });
            pods
        },
        container: report
            .read
            .iter()
            .find(|r| new.pods.contains(&r.pod))
            .map(|r| r.container.clone())
            .unwrap_or_default(),
        since: started,
        previous,
    };
    finding
}
