//! Plain text for email: verdict first, readable at 80 columns without HTML.
//! Commands and links stay on one line so they can be copied whole.

use std::borrow::Cow;
use std::fmt::Write;

use super::sparkline::{scaled_sparkline, series_sparkline, shared_ceiling};
use super::{one_line, truncate};
use crate::classify::human_duration;
use crate::diagnosis::{Diagnosis, ReportKind, Verdict};

const WIDTH: usize = 80;

/// Renders the report as plain text.
pub fn render(d: &Diagnosis) -> String {
    let mut out = String::new();
    header(&mut out, d);
    alarm_section(&mut out, d);
    behaviour_section(&mut out, d);
    findings_section(&mut out, d);
    workload_section(&mut out, d);
    gaps_section(&mut out, d);
    next_steps_section(&mut out, d);
    links_section(&mut out, d);
    out
}

/// The headline and the report's identity.
fn header(out: &mut String, d: &Diagnosis) {
    push_wrapped(out, "", &capitalise(&one_line(&d.headline)));
    let _ = writeln!(
        out,
        "Severity {} | {} {} | {}",
        d.severity.as_str(),
        match d.kind {
            ReportKind::Diagnosis => "diagnosis",
            ReportKind::Resolution => "resolution",
        },
        d.id,
        d.generated_at.format("%Y-%m-%d %H:%M UTC")
    );
    out.push('\n');
}

/// What the alarm is and why it fired.
fn alarm_section(out: &mut String, d: &Diagnosis) {
    let a = &d.alarm;
    field(out, "Alarm", &one_line(&a.name));
    field(
        out,
        "State",
        &format!(
            "{} (was {}) since {}",
            a.new_state,
            a.old_state,
            a.state_change_time.format("%Y-%m-%d %H:%M:%S UTC")
        ),
    );
    field(
        out,
        "Account",
        &format!(
            "{} in {}",
            one_line(&a.account),
            a.region
                .as_deref()
                .map_or_else(|| one_line(&a.region_name), one_line)
        ),
    );
    field(out, "Watches", &one_line(&a.metric));
    if let Some(condition) = condition(d) {
        field(out, "Condition", &condition);
    }
    if let Some(description) = &a.description {
        field(out, "About", &one_line(description));
    }
    field(out, "Reason", &one_line(&a.reason));
    out.push('\n');
}

/// How the alarm behaved over the lookback.
fn behaviour_section(out: &mut String, d: &Diagnosis) {
    let c = &d.classification;
    field(
        out,
        "Behaviour",
        &format!("{}: {}", c.behaviour.as_str(), one_line(&c.explanation)),
    );
    let timeline = if c.timeline.values.iter().all(Option::is_none) {
        "not known (alarm history not collected)".to_owned()
    } else {
        let line = series_sparkline(&c.timeline, WIDTH - 30);
        let span = c
            .timeline
            .step_seconds
            .saturating_mul(c.timeline.values.len() as u64);
        let per_mark = span / line.chars().count().max(1) as u64;
        format!(
            "{line}  ({} per mark)",
            human_duration(
                chrono::Duration::try_seconds(i64::try_from(per_mark).unwrap_or(0))
                    .unwrap_or(chrono::Duration::MAX)
            )
        )
    };
    field(out, "ALARM 24 h", &timeline);
    out.push('\n');
}

/// Every hypothesis with its verdict, numbers and sparklines.
fn findings_section(out: &mut String, d: &Diagnosis) {
    if !d.findings.is_empty() {
        out.push_str("FINDINGS\n");
        for f in &d.findings {
            let mark = match f.verdict {
                Verdict::Supported => "[supported]   ",
                Verdict::Refuted => "[refuted]     ",
                Verdict::Inconclusive => "[inconclusive]",
            };
            push_wrapped(out, &format!("  {mark} "), &one_line(&f.hypothesis));
            push_wrapped(out, "      ", &one_line(&f.summary));
            for e in &f.evidence {
                push_wrapped(
                    out,
                    "      - ",
                    &format!("{}: {}", one_line(&e.name), one_line(&e.display_value())),
                );
            }
            for s in f
                .series
                .iter()
                .filter(|s| s.values.iter().any(Option::is_some))
            {
                // Series of one unit in one finding (per-pod CPU) share a scale.
                let ceiling = shared_ceiling(&f.series, &s.unit);
                push_wrapped(
                    out,
                    "      - ",
                    &format!(
                        "{}: {}",
                        one_line(&s.label),
                        scaled_sparkline(s, ceiling, 30)
                    ),
                );
            }
        }
        out.push('\n');
    }
}

/// The pods behind the culprit, one line each.
fn workload_section(out: &mut String, d: &Diagnosis) {
    if let Some(w) = &d.workload {
        push_wrapped(
            out,
            "",
            &format!(
                "WORKLOAD {}/{}{}{}",
                one_line(&w.namespace),
                one_line(&w.service),
                w.deployment
                    .as_deref()
                    .map(|n| format!(", deployment {}", one_line(n)))
                    .unwrap_or_default(),
                w.hpa
                    .as_deref()
                    .map(|n| format!(", HPA {}", one_line(n)))
                    .unwrap_or_default(),
            ),
        );
        let cores = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
        let _ = writeln!(
            out,
            "  {:<30} {:>6} {:>7} {:>6}  state",
            "pod", "cpu*", "request", "limit"
        );
        for p in &w.pods {
            let _ = writeln!(
                out,
                "  {:<30} {:>6} {:>7} {:>6}  {}{}",
                truncate(&one_line(&p.name), 30),
                cores(p.cpu_while_breaching),
                cores(p.cpu_request),
                cores(p.cpu_limit),
                one_line(&p.phase),
                if p.restarts > 0 {
                    format!(", {} restarts", p.restarts)
                } else {
                    String::new()
                }
            );
        }
        push_wrapped(
            out,
            "  ",
            &format!(
                "* cores used, 90th percentile while the alarm breached{}",
                w.series_origin
                    .as_deref()
                    .map(|o| format!(" ({})", one_line(o)))
                    .unwrap_or_default()
            ),
        );
        out.push('\n');
    }
}

/// What could not be read, and why.
fn gaps_section(out: &mut String, d: &Diagnosis) {
    if !d.evidence_gaps.is_empty() {
        out.push_str("NOT CHECKED\n");
        for g in &d.evidence_gaps {
            push_wrapped(
                out,
                "  - ",
                &format!("{}: {}", one_line(&g.source), one_line(&g.reason)),
            );
        }
        out.push('\n');
    }
}

/// Proposals with their read-only commands.
fn next_steps_section(out: &mut String, d: &Diagnosis) {
    if !d.next_steps.is_empty() {
        out.push_str("NEXT STEPS (proposals; alarm-triage changes nothing)\n");
        for (i, s) in d.next_steps.iter().enumerate() {
            push_wrapped(out, &format!("  {}. ", i + 1), &one_line(&s.proposal));
            push_wrapped(out, "     ", &format!("Why: {}", one_line(&s.rationale)));
            if let Some(t) = &s.trade_offs {
                push_wrapped(out, "     ", &format!("Trade-offs: {}", one_line(t)));
            }
            for cmd in &s.commands {
                let _ = writeln!(out, "     {} {}", prompt(&cmd.tool), one_line(&cmd.text));
            }
        }
        out.push('\n');
    }
}

/// Console pages, then remarks about the report.
fn links_section(out: &mut String, d: &Diagnosis) {
    if !d.links.is_empty() {
        out.push_str("LINKS\n");
        for l in &d.links {
            let _ = writeln!(out, "  {}: {}", one_line(&l.label), one_line(&l.url));
        }
        out.push('\n');
    }
    for note in &d.notes {
        push_wrapped(out, "", &format!("Note: {}", one_line(note)));
    }
}

fn prompt(tool: &str) -> &'static str {
    match tool {
        "promql" => "promql>",
        _ => "$",
    }
}

/// `Average > 0.8 for 2 of 2 periods of 60 s; missing data: missing`.
fn condition(d: &Diagnosis) -> Option<String> {
    let a = &d.alarm;
    let op: Cow<'_, str> = match a.comparison.as_deref()? {
        "GreaterThanThreshold" => ">".into(),
        "GreaterThanOrEqualToThreshold" => ">=".into(),
        "LessThanThreshold" => "<".into(),
        "LessThanOrEqualToThreshold" => "<=".into(),
        "LessThanLowerOrGreaterThanUpperThreshold" => "outside the band".into(),
        "LessThanLowerThreshold" => "below the band".into(),
        "GreaterThanUpperThreshold" => "above the band".into(),
        other => one_line(other),
    };
    let what = a
        .statistic
        .as_deref()
        .map_or(Cow::Borrowed("value"), one_line);
    let threshold = a.threshold.map(|t| format!(" {t}")).unwrap_or_default();
    let mut text = format!("{what} {op}{threshold}");
    if let (Some(n), Some(m), Some(p)) = (
        a.datapoints_to_alarm,
        a.evaluation_periods,
        a.period_seconds,
    ) {
        let _ = write!(text, " for {n} of {m} periods of {p} s");
    }
    if let Some(missing) = &a.treat_missing_data {
        let _ = write!(text, "; missing data: {}", one_line(missing));
    }
    Some(text)
}

fn field(out: &mut String, label: &str, value: &str) {
    push_wrapped(out, &format!("{label:<11}"), value);
}

/// Word-wraps `text` to 80 columns; the first line starts with `lead`, the
/// following ones are indented to line up with it. Words longer than a line
/// (URLs, ARNs) are kept whole.
/// Everything the report prints goes through here or [`one_line`], so alarm
/// text can never add a line of its own.
fn push_wrapped(out: &mut String, lead: &str, text: &str) {
    let text = one_line(text);
    let ascii = text.is_ascii();
    let lead_width = lead.chars().count();
    out.reserve(lead.len() + text.len() + text.len() / WIDTH * (lead_width + 1) + 1);
    out.push_str(lead);
    let mut width = lead_width;
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let word_width = if ascii {
            word.len()
        } else {
            word.chars().count()
        };
        if !empty && width + 1 + word_width > WIDTH {
            end_line(out);
            out.extend(std::iter::repeat_n(' ', lead_width));
            width = lead_width;
            empty = true;
        }
        if !empty {
            out.push(' ');
            width += 1;
        }
        out.push_str(word);
        width += word_width;
        empty = false;
    }
    end_line(out);
}

/// Ends the line being written, without the whitespace it may end with.
fn end_line(out: &mut String) {
    let kept = out
        .trim_end_matches(|c: char| c.is_whitespace() && c != '\n')
        .len();
    out.truncate(kept);
    out.push('\n');
}

/// The headline starts with a capital, as a sentence does.
pub(crate) fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_lines_within_eighty_columns() {
        let mut out = String::new();
        push_wrapped(&mut out, "Reason     ", &"word ".repeat(60));
        assert!(out.lines().all(|l| l.chars().count() <= WIDTH), "{out}");
        assert!(out.lines().nth(1).unwrap().starts_with("           word"));
    }

    #[test]
    fn a_word_longer_than_a_line_stays_whole() {
        let mut out = String::new();
        let url = format!("https://{}", "x".repeat(100));
        push_wrapped(&mut out, "  ", &format!("see {url}"));
        assert!(out.contains(&url));
    }
}
