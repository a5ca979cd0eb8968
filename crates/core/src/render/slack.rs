//! Slack Block Kit. Everything that came from an alarm is escaped (`&`, `<`,
//! `>`) so a name or description cannot inject a mention or a link, and every
//! text respects Slack's limits (50 blocks, 3000 characters a section, 150 a
//! header), truncated with a note rather than rejected by Slack.

use serde_json::{Value, json};

use super::brief::brief;
use super::capitalise;
use super::sparkline::series_sparkline;
use super::{one_line, truncate};
use crate::diagnosis::{Diagnosis, MAX_LINK_URL_CHARS, ReportKind, Severity, Verdict};

/// Slack's limits.
pub const MAX_BLOCKS: usize = 50;
pub const MAX_SECTION_TEXT: usize = 3000;
pub const MAX_HEADER_TEXT: usize = 150;
pub const MAX_FIELD_TEXT: usize = 2000;
pub const MAX_BUTTON_TEXT: usize = 75;

/// Escapes text for Slack mrkdwn: the three characters Slack asks to escape.
pub fn escape(text: &str) -> String {
    let text = one_line(text);
    if !text.bytes().any(|b| matches!(b, b'&' | b'<' | b'>')) {
        return text.into_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest: &str = &text;
    while let Some(at) = rest.find(['&', '<', '>']) {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            _ => "&gt;",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
    out
}

/// As [`escape`], keeping line breaks (for the plain-text report).
pub fn escape_multiline(text: &str) -> String {
    text.lines().map(escape).collect::<Vec<_>>().join("\n")
}

/// Escapes text for inside a ``` code block (also keeps the fence from being closed early).
fn escape_code(text: &str) -> String {
    escape(text).replace("```", "'''")
}

fn mrkdwn_section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, MAX_SECTION_TEXT)}})
}

fn context(text: &str) -> Value {
    json!({"type": "context", "elements": [{"type": "mrkdwn", "text": truncate(text, MAX_FIELD_TEXT)}]})
}

/// The first message holds at most this many blocks: what people read before acting.
pub const FIRST_MESSAGE_BLOCKS: usize = 10;

fn icon(d: &Diagnosis) -> &'static str {
    match (d.kind, d.severity) {
        (ReportKind::Resolution, _) => ":white_check_mark:",
        (_, Severity::Critical) => ":red_circle:",
        (_, Severity::Warning) => ":large_orange_circle:",
        (_, Severity::Info) => ":large_blue_circle:",
    }
}

fn footer(d: &Diagnosis) -> String {
    let mut footer = format!("{} · alarm-triage proposes, people decide", d.id);
    for note in &d.notes {
        footer.push_str(&format!(" · {}", escape(note)));
    }
    footer
}

fn links_block(d: &Diagnosis) -> Option<Value> {
    let buttons: Vec<Value> = d
        .links
        .iter()
        .filter(|l| l.url.chars().count() <= MAX_LINK_URL_CHARS)
        .take(5)
        .map(|l| {
            json!({
                "type": "button",
                "text": {"type": "plain_text", "text": truncate(&one_line(&l.label), MAX_BUTTON_TEXT)},
                "url": l.url,
            })
        })
        .collect();
    (!buttons.is_empty()).then(|| json!({"type": "actions", "elements": buttons}))
}

/// The first message: header, verdict, causes, the ruled-out line, the top
/// next steps with a command each, what was not checked, links: at most
/// [`FIRST_MESSAGE_BLOCKS`] blocks.
pub fn first_message(d: &Diagnosis) -> Value {
    let b = brief(d);
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "emoji": true, "text": truncate(
            &format!(
                "{} · {} · {}{}",
                d.classification.behaviour.as_str().to_uppercase(),
                d.severity.as_str(),
                one_line(&d.alarm.name),
                d.hold.as_ref().map(|h| format!(" · {}", h.label())).unwrap_or_default()
            ),
            MAX_HEADER_TEXT,
        )}}),
        mrkdwn_section(&format!(
            "{} *{}*{}",
            icon(d),
            escape(&b.verdict),
            d.severity_reason
                .as_deref()
                .map(|r| format!("\n_{} because {}_", d.severity.as_str(), escape(r)))
                .unwrap_or_default()
        )),
    ];
    if !b.causes.is_empty() {
        let causes: Vec<String> = b
            .causes
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{}. {}", i + 1, escape(c)))
            .collect();
        blocks.push(mrkdwn_section(&format!("*Causes*\n{}", causes.join("\n"))));
    }
    if !b.ruled_out.is_empty() {
        let ruled: Vec<String> = b.ruled_out.iter().map(|r| escape(r)).collect();
        blocks.push(context(&format!("*Ruled out:* {}", ruled.join("; "))));
    }
    if let Some(changed) = &d.what_changed {
        blocks.push(context(&format!(
            "*What changed:* {}",
            escape(&truncate(changed, MAX_SECTION_TEXT - 40))
        )));
    }
    if let Some(logs) = b.logs {
        blocks.push(context(&escape(&truncate(logs, MAX_SECTION_TEXT - 40))));
    }
    if !b.steps.is_empty() {
        let steps: Vec<String> = b
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let command = s
                    .commands
                    .iter()
                    .find(|c| c.tool != "promql")
                    .or(s.commands.first())
                    .map(|c| format!("\n```{}```", escape_code(&c.text)))
                    .unwrap_or_default();
                format!("*{}. {}*{command}", i + 1, escape(s.proposal))
            })
            .collect();
        blocks.push(mrkdwn_section(&format!(
            "*Next steps* (proposals; alarm-triage changes nothing)\n{}",
            steps.join("\n")
        )));
    }
    if !b.not_checked.is_empty() {
        let gaps: Vec<String> = b.not_checked.iter().map(|g| escape(g)).collect();
        blocks.push(context(&format!("*Not checked:* {}", gaps.join("; "))));
    }
    blocks.extend(links_block(d));
    blocks.push(context(&footer(d)));
    json!({
        "text": truncate(&escape(&capitalise(&d.headline)), MAX_SECTION_TEXT),
        "blocks": blocks,
    })
}

/// The top patterns in the pods' logs, for the details.
fn logs_block(d: &Diagnosis) -> Option<Value> {
    let logs = d.logs.as_ref()?;
    let rows: Vec<String> = logs
        .patterns
        .iter()
        .take(super::LOG_PATTERNS_SHOWN)
        .map(|p| {
            format!(
                "• *{}* {} `{}` ({} before, {} since{})\n```{}```",
                p.trend.as_str(),
                p.level.as_str(),
                escape(&truncate(&p.template, 200)),
                crate::logs::patterns::thousands(p.before),
                crate::logs::patterns::thousands(p.during),
                if p.pods.is_empty() {
                    String::new()
                } else {
                    format!("; {}", escape(&p.pods.join(", ")))
                },
                escape_code(&truncate(&p.example, 300))
            )
        })
        .collect();
    Some(mrkdwn_section(&truncate(
        &format!(
            "*Logs* ({} pod(s) read; onset {})\n{}",
            logs.pods_read(),
            logs.onset.format("%H:%M UTC"),
            rows.join("\n")
        ),
        MAX_SECTION_TEXT,
    )))
}

/// The change timeline, newest first, for the details.
fn changes_block(d: &Diagnosis) -> Option<Value> {
    if d.changes.is_empty() {
        return None;
    }
    let lines: Vec<String> = d
        .changes
        .iter()
        .rev()
        .take(12)
        .map(|c| {
            format!(
                "{} {}{}",
                if c.most_plausible { "★" } else { "•" },
                escape(&c.line()),
                if c.automatic { " _(automatic)_" } else { "" }
            )
        })
        .collect();
    Some(mrkdwn_section(&truncate(
        &format!(
            "*Changes* (against the breach's start, newest first)\n{}",
            lines.join("\n")
        ),
        MAX_SECTION_TEXT,
    )))
}

/// One line per finding, for the one-message (webhook) form.
fn compact_findings(d: &Diagnosis) -> Option<Value> {
    if d.findings.is_empty() {
        return None;
    }
    let lines: Vec<String> = d
        .findings
        .iter()
        .map(|f| {
            format!(
                "{} {} {}",
                mark(f.verdict),
                escape(&f.hypothesis),
                truncate(&escape(&f.summary), 240)
            )
        })
        .collect();
    Some(mrkdwn_section(&format!("*Findings*\n{}", lines.join("\n"))))
}

fn mark(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Supported => ":white_check_mark:",
        Verdict::Refuted => ":x:",
        Verdict::Inconclusive => ":grey_question:",
    }
}

/// The whole report in one message, for incoming webhooks (no thread): the
/// first message, then the findings one line each.
pub fn render(d: &Diagnosis) -> Value {
    let mut message = first_message(d);
    if let (Some(blocks), Some(findings)) = (message["blocks"].as_array_mut(), compact_findings(d))
    {
        let footer = blocks.pop();
        blocks.push(json!({"type": "divider"}));
        blocks.push(findings);
        blocks.extend(footer);
    }
    message
}

/// The details, posted as a reply in the first message's thread (bot mode):
/// the alarm, every finding with its evidence, the pods, every next step with
/// all its commands, and the notes. Within Slack's 50 blocks.
pub fn details(d: &Diagnosis) -> Value {
    let a = &d.alarm;
    let mut blocks = vec![mrkdwn_section(&format!(
        "*Details* of {} ({})",
        escape(&a.name),
        d.id
    ))];
    let f = &d.classification.figures;
    let fields = [
        format!("*State*\n{} (was {})", a.new_state, a.old_state),
        format!(
            "*Since*\n{}",
            a.state_change_time.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        format!("*Watches*\n{}", escape(&a.metric)),
        format!(
            "*Account / region*\n{} / {}",
            escape(&a.account),
            escape(a.region().unwrap_or(&a.region_name))
        ),
        format!(
            "*Transitions 1 h / 6 h / 24 h*\n{} / {} / {}",
            f.transitions_last_1h, f.transitions_last_6h, f.transitions_last_24h
        ),
        format!(
            "*State-change score*\n{:.0}% (flapping above {:.0}%)",
            f.percent_state_change, f.flap_start_percent
        ),
    ];
    blocks.push(json!({"type": "section", "fields": fields
        .iter()
        .map(|t| json!({"type": "mrkdwn", "text": truncate(t, MAX_FIELD_TEXT)}))
        .collect::<Vec<_>>()}));
    blocks.push(context(&format!(
        "ALARM over 24 h `{}` (share of each interval in ALARM, 0-1)",
        series_sparkline(&d.classification.timeline, 48)
    )));
    if let Some(description) = &a.description {
        blocks.push(context(&format!("_{}_", escape(description))));
    }
    for finding in &d.findings {
        let evidence: Vec<String> = finding
            .evidence
            .iter()
            .map(|e| format!("• {}: {}", escape(&e.name), escape(&e.display_value())))
            .collect();
        blocks.push(mrkdwn_section(&format!(
            "{} *{}* ({}) {}\n{}\n{}",
            mark(finding.verdict),
            finding.verdict.as_str(),
            finding.role.as_str(),
            escape(&finding.hypothesis),
            escape(&finding.summary),
            evidence.join("\n")
        )));
    }
    if let Some(w) = &d.workload {
        let rows: Vec<String> = w
            .pods
            .iter()
            .map(|p| {
                format!(
                    "{:<34} {:>6} {:>7} {:>6}  {}{}",
                    truncate(&one_line(&p.name), 34),
                    p.cpu_while_breaching
                        .map_or("-".to_owned(), |v| format!("{v:.2}")),
                    p.cpu_request.map_or("-".to_owned(), |v| format!("{v:.2}")),
                    p.cpu_limit.map_or("-".to_owned(), |v| format!("{v:.2}")),
                    one_line(&p.phase),
                    if p.restarts > 0 {
                        format!(", {} restarts", p.restarts)
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        blocks.push(mrkdwn_section(&format!(
            "*Workload* {}/{}\n```{:<34} {:>6} {:>7} {:>6}  state\n{}```\n_cpu: cores used, 90th percentile while the alarm breached_",
            escape(&w.namespace),
            escape(&w.service),
            "pod",
            "cpu",
            "request",
            "limit",
            escape_code(&rows.join("\n"))
        )));
    }
    blocks.extend(logs_block(d));
    blocks.extend(changes_block(d));
    if !d.evidence_gaps.is_empty() {
        let gaps: Vec<String> = d
            .evidence_gaps
            .iter()
            .map(|g| format!("• {}: {}", escape(&g.source), escape(&g.reason)))
            .collect();
        blocks.push(mrkdwn_section(&format!(
            "*Not checked*\n{}",
            gaps.join("\n")
        )));
    }
    for (i, step) in d.next_steps.iter().enumerate() {
        let mut text = format!(
            "*{}. {}*\n{}",
            i + 1,
            escape(&step.proposal),
            escape(&step.rationale)
        );
        if let Some(t) = &step.trade_offs {
            text.push_str(&format!("\n_Trade-offs:_ {}", escape(t)));
        }
        if !step.commands.is_empty() {
            let commands: Vec<String> =
                step.commands.iter().map(|c| escape_code(&c.text)).collect();
            text.push_str(&format!("\n```{}```", commands.join("\n")));
        }
        blocks.push(mrkdwn_section(&text));
    }
    let footer = footer(d);
    blocks.push(context(&footer));
    if blocks.len() > MAX_BLOCKS {
        let omitted = blocks.len() - (MAX_BLOCKS - 1);
        blocks.truncate(MAX_BLOCKS - 2);
        blocks.push(context(&format!(
            "{omitted} more blocks omitted to fit Slack's limit; the full report is in the JSON diagnosis {}",
            d.id
        )));
        blocks.push(context(&footer));
    }
    json!({
        "text": truncate(&format!("Details: {}", escape(&capitalise(&d.headline))), MAX_SECTION_TEXT),
        "blocks": blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_defuses_mentions_and_links() {
        assert_eq!(
            escape("<!channel> & <https://evil|x>"),
            "&lt;!channel&gt; &amp; &lt;https://evil|x&gt;"
        );
    }

    #[test]
    fn code_blocks_cannot_be_closed_from_inside() {
        assert!(!escape_code("a ``` b").contains("```"));
    }
}
