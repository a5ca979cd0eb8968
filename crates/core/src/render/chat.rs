//! The Amazon Q Developer in chat applications custom-notification JSON
//! (`version` 1.0, `source` custom). `metadata.threadId` is the alarm ARN so
//! every report about one alarm lands in one thread.

use serde_json::{Value, json};

use super::capitalise;
use super::slack::escape;
use super::truncate;
use crate::diagnosis::{Diagnosis, Verdict};

/// Limits that keep the notification readable in a channel.
const MAX_TITLE: usize = 250;
const MAX_DESCRIPTION: usize = 3500;
const MAX_NEXT_STEP: usize = 500;

/// Renders the custom notification.
pub fn render(d: &Diagnosis) -> Value {
    let a = &d.alarm;
    let mut description = format!(
        "*{}*\n{} (was {}) at {} · {}",
        escape(&d.classification.explanation),
        a.new_state,
        a.old_state,
        a.state_change_time.format("%Y-%m-%d %H:%M UTC"),
        escape(&a.metric)
    );
    for f in &d.findings {
        let mark = match f.verdict {
            Verdict::Supported => "supported",
            Verdict::Refuted => "refuted",
            Verdict::Inconclusive => "inconclusive",
        };
        description.push_str(&format!("\n• _{mark}_: {}", escape(&f.summary)));
    }
    if !d.evidence_gaps.is_empty() {
        let sources: Vec<String> = d.evidence_gaps.iter().map(|g| escape(&g.source)).collect();
        description.push_str(&format!("\nNot checked: {}", sources.join("; ")));
    }
    let next_steps: Vec<String> = d
        .next_steps
        .iter()
        .map(|s| {
            let first = s
                .commands
                .first()
                .map(|c| format!(" `{}`", escape(&c.text).replace('`', "'")));
            truncate(
                &format!("{}{}", escape(&s.proposal), first.unwrap_or_default()),
                MAX_NEXT_STEP,
            )
        })
        .collect();
    let thread = a
        .arn
        .as_ref()
        .map_or_else(|| a.name.clone(), ToString::to_string);
    json!({
        "version": "1.0",
        "source": "custom",
        "id": d.id.as_str(),
        "content": {
            "textType": "client-markdown",
            "title": truncate(&escape(&capitalise(&d.headline)), MAX_TITLE),
            "description": truncate(&description, MAX_DESCRIPTION),
            "nextSteps": next_steps,
            "keywords": [d.classification.behaviour.as_str(), d.severity.as_str(), a.new_state.as_str()],
        },
        "metadata": {
            "threadId": thread,
            "summary": truncate(&escape(&d.headline), MAX_TITLE),
            "eventType": match d.kind {
                crate::diagnosis::ReportKind::Diagnosis => "AlarmDiagnosis",
                crate::diagnosis::ReportKind::Resolution => "AlarmResolution",
            },
            "relatedResources": a.arn.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "additionalContext": {
                "diagnosisId": d.id.as_str(),
                "classification": d.classification.behaviour.as_str(),
                "severity": d.severity.as_str(),
            },
        },
    })
}
