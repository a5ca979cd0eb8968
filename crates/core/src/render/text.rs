//! Plain text for email: verdict first, readable at 80 columns without HTML.
//! Commands and links stay on one line so they can be copied whole.

use std::borrow::Cow;
use std::fmt::Write;

use super::brief::{BriefStep, brief, wrap_command};
use super::capitalise;
use super::sparkline::{scaled_sparkline, series_sparkline, shared_ceiling};
use super::{one_line, truncate};
use crate::classify::human_duration;
use crate::diagnosis::{Diagnosis, ReportKind, Verdict};

const WIDTH: usize = 80;

/// The first screen holds at most this many lines (of at most [`WIDTH`] columns).
pub const FIRST_SCREEN_LINES: usize = 25;

/// Renders the report as plain text: the first screen, then the details.
pub fn render(d: &Diagnosis) -> String {
    let mut out = first_screen(d).join("\n");
    out.push_str("\n\nDETAILS\n\n");
    header(&mut out, d);
    alarm_section(&mut out, d);
    behaviour_section(&mut out, d);
    findings_section(&mut out, d);
    workload_section(&mut out, d);
    logs_section(&mut out, d);
    changes_section(&mut out, d);
    gaps_section(&mut out, d);
    next_steps_section(&mut out, d);
    links_section(&mut out, d);
    out
}

/// `text` wrapped after `lead`, cut to `max` lines (the last ending in `…` when cut).
fn wrapped_lines(lead: &str, text: &str, max: usize) -> Vec<String> {
    let mut block = String::new();
    push_wrapped(&mut block, lead, text);
    let mut lines: Vec<String> = block.lines().map(str::to_owned).collect();
    if lines.len() > max {
        lines.truncate(max.max(1));
        if let Some(last) = lines.last_mut() {
            while last.chars().count() > WIDTH - 2 {
                last.pop();
            }
            last.push_str(" …");
        }
    }
    lines
}

/// The first step's command lines: the first of its commands that fits the
/// width (shell commands continue with `\`), or a pointer to the details.
fn first_command(step: &BriefStep<'_>) -> Vec<String> {
    const LEAD: &str = "     ";
    for cmd in step.commands {
        let prompt = prompt(&cmd.tool);
        let first_width = WIDTH - LEAD.len() - prompt.len() - 1;
        let fitted = if cmd.tool == "promql" {
            (cmd.text.chars().count() <= first_width).then(|| vec![cmd.text.clone()])
        } else {
            wrap_command(&one_line(&cmd.text), first_width, WIDTH, LEAD.len() + 4)
        };
        // A command over three lines is read in the details, not on the first screen.
        if let Some(lines) = fitted.filter(|lines| lines.len() <= 3) {
            return lines
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    if i == 0 {
                        format!("{LEAD}{prompt} {l}")
                    } else {
                        l
                    }
                })
                .collect();
        }
    }
    if step.commands.is_empty() {
        Vec::new()
    } else {
        vec![format!("{LEAD}(commands under NEXT STEPS in the details)")]
    }
}

/// The first screen: at most [`FIRST_SCREEN_LINES`] lines of at most
/// [`WIDTH`] columns. What does not fit is in the details that follow.
pub fn first_screen(d: &Diagnosis) -> Vec<String> {
    let b = brief(d);
    let mut top = wrapped_lines("", &one_line(&b.verdict), 2);
    top.push(identity(d));
    let causes: Vec<Vec<String>> = b
        .causes
        .iter()
        .take(5)
        .enumerate()
        .map(|(i, c)| wrapped_lines(&format!("  {}. ", i + 1), &one_line(c), 2))
        .collect();
    let ruled_out = |max_lines: usize| -> Vec<String> {
        if b.ruled_out.is_empty() {
            return Vec::new();
        }
        let mut shown = b.ruled_out.len();
        loop {
            let more = b.ruled_out.len() - shown;
            let mut parts: Vec<String> = b.ruled_out[..shown]
                .iter()
                .map(|c| (*c).to_owned())
                .collect();
            if more > 0 {
                parts.push(format!("{more} more in the details"));
            }
            let text = parts.join("; ");
            let lines = wrapped_lines("Ruled out: ", &one_line(&text), usize::MAX);
            if lines.len() <= max_lines || shown == 0 {
                return wrapped_lines("Ruled out: ", &one_line(&text), max_lines);
            }
            shown -= 1;
        }
    };
    let steps: Vec<Vec<String>> = b
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut lines = wrapped_lines(&format!("  {}. ", i + 1), &one_line(s.proposal), 2);
            lines.extend(first_command(s));
            lines
        })
        .collect();
    let changed = d
        .what_changed
        .as_deref()
        .map(|c| wrapped_lines("", &one_line(c), 2))
        .unwrap_or_default();
    let logs = b
        .logs
        .map(|l| wrapped_lines("", &one_line(l), 2))
        .unwrap_or_default();
    let changed: Vec<String> = changed.into_iter().chain(logs).collect();
    let not_checked = if b.not_checked.is_empty() {
        Vec::new()
    } else {
        wrapped_lines("Not checked: ", &one_line(&b.not_checked.join("; ")), 2)
    };
    // Fit the budget: fewer steps first, then a shorter ruled-out line, then fewer causes.
    let (mut step_count, mut ruled_lines, mut cause_count) = (steps.len(), 3, causes.len());
    loop {
        let lines = assemble_first_screen(
            &top,
            &causes[..cause_count],
            &ruled_out(ruled_lines),
            &changed,
            &steps[..step_count],
            &not_checked,
        );
        if lines.len() <= FIRST_SCREEN_LINES {
            return lines;
        }
        if step_count > 1 {
            step_count -= 1;
        } else if ruled_lines > 1 {
            ruled_lines -= 1;
        } else if cause_count > 1 {
            cause_count -= 1;
        } else {
            let mut lines = lines;
            lines.truncate(FIRST_SCREEN_LINES);
            return lines;
        }
    }
}

fn assemble_first_screen(
    top: &[String],
    causes: &[Vec<String>],
    ruled_out: &[String],
    changed: &[String],
    steps: &[Vec<String>],
    not_checked: &[String],
) -> Vec<String> {
    let mut lines: Vec<String> = top.to_vec();
    lines.push(String::new());
    if !causes.is_empty() {
        lines.push("Causes".to_owned());
        lines.extend(causes.iter().flatten().cloned());
    }
    lines.extend(ruled_out.iter().cloned());
    lines.extend(changed.iter().cloned());
    if !steps.is_empty() {
        lines.push("Next steps (proposals; alarm-triage changes nothing)".to_owned());
        lines.extend(steps.iter().flatten().cloned());
    }
    lines.extend(not_checked.iter().cloned());
    lines
}

/// `Severity critical | diagnosis dx-... | 2026-11-29 10:00 UTC`.
fn identity(d: &Diagnosis) -> String {
    format!(
        "Severity {} | {} {} | {}",
        d.severity.as_str(),
        match d.kind {
            ReportKind::Diagnosis => "diagnosis",
            ReportKind::Resolution => "resolution",
        },
        d.id,
        d.generated_at.format("%Y-%m-%d %H:%M UTC")
    ) + &d
        .hold
        .as_ref()
        .map(|h| format!(" | {}", h.label()))
        .unwrap_or_default()
}

/// The headline and the report's identity.
fn header(out: &mut String, d: &Diagnosis) {
    push_wrapped(out, "", &capitalise(&one_line(&d.headline)));
    if let Some(reason) = &d.severity_reason {
        push_wrapped(
            out,
            "",
            &format!("Severity {}: {}", d.severity.as_str(), one_line(reason)),
        );
    }
    out.push_str(&identity(d));
    out.push('\n');
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
            a.region()
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
            "{line}  (share of time in ALARM, 0-1; {} per mark)",
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

/// The top patterns in the pods' logs: counts before and since the onset,
/// the pods printing them and one redacted example each.
fn logs_section(out: &mut String, d: &Diagnosis) {
    let Some(logs) = &d.logs else {
        return;
    };
    push_wrapped(
        out,
        "",
        &format!(
            "LOGS ({} container log(s) from {} pod(s); before and since the onset at {}: {:.0} and {:.0} min read)",
            logs.read.len(),
            logs.pods_read(),
            logs.onset.format("%H:%M UTC"),
            logs.minutes_before,
            logs.minutes_during
        ),
    );
    for p in logs.patterns.iter().take(crate::render::LOG_PATTERNS_SHOWN) {
        push_wrapped(
            out,
            "  ",
            &format!(
                "[{}, {}] {} before, {} since: {}",
                p.trend.as_str(),
                p.level.as_str(),
                p.before,
                p.during,
                one_line(&p.template)
            ),
        );
        if !p.pods.is_empty() {
            push_wrapped(out, "      pods: ", &p.pods.join(", "));
        }
        push_wrapped(out, "      e.g. ", &one_line(&p.example));
    }
    out.push('\n');
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

/// The timeline of changes, oldest first, each against the breach's start.
fn changes_section(out: &mut String, d: &Diagnosis) {
    if d.changes.is_empty() {
        return;
    }
    out.push_str("CHANGES (against the breach's start, oldest first; * the most plausible)\n");
    for c in &d.changes {
        push_wrapped(
            out,
            if c.most_plausible { "  * " } else { "  - " },
            &one_line(&format!(
                "{}{}",
                c.line(),
                if c.automatic { " (automatic)" } else { "" }
            )),
        );
        for detail in &c.details {
            push_wrapped(out, "      ", &one_line(detail));
        }
    }
    out.push('\n');
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
    let op = a.comparison?.symbol();
    let what: Cow<'_, str> = a.statistic.as_ref().map_or(Cow::Borrowed("value"), |s| {
        Cow::Owned(one_line(&s.to_string()).into_owned())
    });
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
