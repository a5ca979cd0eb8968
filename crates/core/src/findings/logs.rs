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

/// What a request abandoned by its caller leaves in a log: the caller's
/// patience ran out because the answer was slow; the line says nothing of why.
const ABANDONED: &str = r"(?i)\bcontext cancel+ed\b|\bcancel+ed by (?:the )?(?:client|caller|peer)\b|\baborted by (?:the )?(?:client|caller)\b|\bclient (?:closed|disconnected|aborted|went away|gone)\b|\brequest (?:was )?(?:aborted|cancel+ed)\b|\bbroken pipe\b|\boperation was cancel+ed\b";

/// Whether a template only says that a caller gave up.
pub fn abandoned(template: &str) -> bool {
    static COMPILED: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| crate::logs::compiled(ABANDONED));
    COMPILED.is_match(template)
}

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
    let finding = judge(&report, &logs.namespace);
    let mut report = report;
    if let Facts::Logs {
        abandoned: true, ..
    } = finding.facts
    {
        report
            .line
            .push_str(" (callers giving up on slow answers: an effect, not a cause)");
    }
    decided.findings.push(finding);
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
    // When the reads began after the onset, the error may be as old as the
    // onset: it is neither dated later nor called late.
    let started = new
        .since
        .filter(|_| !new.read_after_onset)
        .unwrap_or(report.onset);
    let late = started - report.onset > ONSET_WINDOW;
    let on = crate::logs::patterns::on_pods(&new.pods, pods);
    let since = new.since_words();
    let summary = format!(
        "{} × {} {since} on {on} ({}; {} before the onset{})",
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
    let abandoned = abandoned(&new.template);
    let summary = if abandoned {
        format!(
            "{summary}; it says callers gave up on requests: what slow answers look like from inside, an effect of the slowness and not its cause"
        )
    } else {
        summary
    };
    let cause = format!(
        "the pods print {} {since} ({} lines on {on}, {})",
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
        abandoned,
    };
    finding
}
/// A new error that only says callers gave up is context: the slowness
/// that made them give up is the cause, and has findings of its own.
pub fn abandoned_requests_are_context(findings: &mut [Finding]) {
    for f in findings.iter_mut() {
        if let Facts::Logs {
            abandoned: true, ..
        } = f.facts
            && f.role == crate::diagnosis::finding::Role::Cause
        {
            f.role = crate::diagnosis::finding::Role::Context;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_only_says_the_caller_gave_up_is_abandonment() {
        assert!(abandoned(
            "ERROR request aborted by client: context canceled"
        ));
        assert!(abandoned("WARN write tcp <ip>:<n>: broken pipe"));
        assert!(!abandoned(
            "psycopg2.OperationalError: connection to server failed: Connection refused"
        ));
        assert!(!abandoned("ERROR column invoices.currency does not exist"));
    }

    #[test]
    fn a_new_error_of_abandoned_requests_is_context_not_a_cause() {
        let mut finding = Finding::decided(
            FindingId::NewLogErrors,
            HYPOTHESIS,
            Verdict::Supported,
            "new".to_owned(),
            Some("the pods print it".to_owned()),
        );
        finding.role = crate::diagnosis::finding::Role::Cause;
        finding.facts = Facts::Logs {
            namespace: "shop".into(),
            template: "ERROR request aborted by client: context canceled".into(),
            pods: vec!["web-1".into()],
            container: "web".into(),
            since: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            previous: false,
            abandoned: true,
        };
        let mut findings = vec![finding];
        abandoned_requests_are_context(&mut findings);
        assert_eq!(findings[0].role, crate::diagnosis::finding::Role::Context);
    }
}
