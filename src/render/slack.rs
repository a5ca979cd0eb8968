//! Slack Block Kit. Everything that came from an alarm is escaped (`&`, `<`,
//! `>`) so a name or description cannot inject a mention or a link, and every
//! text respects Slack's limits (50 blocks, 3000 characters a section, 150 a
//! header), truncated with a note rather than rejected by Slack.

use serde_json::{Value, json};

use super::sparkline::series_sparkline;
use super::text::capitalise;
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

/// Renders the message body for `chat.postMessage` or an incoming webhook.
pub fn render(d: &Diagnosis) -> Value {
    let a = &d.alarm;
    let icon = match (d.kind, d.severity) {
        (ReportKind::Resolution, _) => ":white_check_mark:",
        (_, Severity::Critical) => ":red_circle:",
        (_, Severity::Warning) => ":large_orange_circle:",
        (_, Severity::Info) => ":large_blue_circle:",
    };
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "emoji": true, "text": truncate(
            &format!("{} {}", d.classification.behaviour.as_str().to_uppercase(), one_line(&a.name)),
            MAX_HEADER_TEXT,
        )}}),
        mrkdwn_section(&format!("{icon} *{}*", escape(&capitalise(&d.headline)))),
    ];

    let mut fields = vec![
        format!("*State*\n{} (was {})", a.new_state, a.old_state),
        format!(
            "*Since*\n{}",
            a.state_change_time.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        format!("*Watches*\n{}", escape(&a.metric)),
        format!(
            "*Account / region*\n{} / {}",
            escape(&a.account),
            escape(a.region.as_deref().unwrap_or(&a.region_name))
        ),
    ];
    let f = &d.classification.figures;
    fields.push(format!(
        "*Transitions 1 h / 6 h / 24 h*\n{} / {} / {}",
        f.transitions_last_1h, f.transitions_last_6h, f.transitions_last_24h
    ));
    fields.push(format!(
        "*State-change score*\n{:.0}% (flapping above {:.0}%)",
        f.percent_state_change, f.flap_start_percent
    ));
    blocks.push(json!({"type": "section", "fields": fields
        .iter()
        .map(|t| json!({"type": "mrkdwn", "text": truncate(t, MAX_FIELD_TEXT)}))
        .collect::<Vec<_>>()}));
    blocks.push(context(&format!(
        "ALARM over 24 h `{}`",
        series_sparkline(&d.classification.timeline, 48)
    )));
    if let Some(description) = &a.description {
        blocks.push(context(&format!("_{}_", escape(description))));
    }

    if !d.findings.is_empty() {
        blocks.push(json!({"type": "divider"}));
        blocks.push(mrkdwn_section("*Findings*"));
        for finding in &d.findings {
            let mark = match finding.verdict {
                Verdict::Supported => ":white_check_mark: *supported*",
                Verdict::Refuted => ":x: *refuted*",
                Verdict::Inconclusive => ":grey_question: *inconclusive*",
            };
            let evidence: Vec<String> = finding
                .evidence
                .iter()
                .map(|e| format!("• {}: {}", escape(&e.name), escape(&e.display_value())))
                .collect();
            blocks.push(mrkdwn_section(&format!(
                "{mark} {}\n{}\n{}",
                escape(&finding.hypothesis),
                escape(&finding.summary),
                evidence.join("\n")
            )));
        }
    }

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

    if !d.next_steps.is_empty() {
        blocks.push(json!({"type": "divider"}));
        blocks.push(mrkdwn_section(
            "*Next steps* (proposals; alarm-triage changes nothing)",
        ));
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
    }

    if d.links
        .iter()
        .any(|l| l.url.chars().count() <= MAX_LINK_URL_CHARS)
    {
        blocks.push(
            json!({"type": "actions", "elements": d.links.iter().filter(|l| l.url.chars().count() <= MAX_LINK_URL_CHARS).take(5).map(|l| json!({
            "type": "button",
            "text": {"type": "plain_text", "text": truncate(&one_line(&l.label), MAX_BUTTON_TEXT)},
            "url": l.url,
        })).collect::<Vec<_>>()}),
        );
    }
    let mut footer = format!("{} · alarm-triage proposes, people decide", d.id);
    for note in &d.notes {
        footer.push_str(&format!(" · {}", escape(note)));
    }
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
        "text": truncate(&escape(&capitalise(&d.headline)), MAX_SECTION_TEXT),
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
