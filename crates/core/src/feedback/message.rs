//! The Slack side of feedback: the buttons under a first message, the line
//! that says who answered what, and the "what was it" form.

use serde_json::{Value, json};

use super::{DiagnosisRecord, Judgement, MAX_NOTE_CHARS, SlackUserId};
use crate::render::slack::escape;
use crate::render::truncate;

/// The actions block holding the verdict buttons.
pub const FEEDBACK_BLOCK: &str = "feedback";
/// The context block saying who answered what.
pub const TALLY_BLOCK: &str = "feedback-tally";
/// Button action ids are `feedback.right`, `feedback.wrong`, `feedback.partly`.
pub const ACTION_PREFIX: &str = "feedback.";
/// The form's callback id and its two inputs.
pub const DETAIL_CALLBACK: &str = "feedback.detail";
pub const CAUSES_BLOCK: &str = "causes";
pub const CAUSES_ACTION: &str = "wrong_causes";
pub const NOTE_BLOCK: &str = "note";
pub const NOTE_ACTION: &str = "what_was_it";

/// Slack's limits: an option's text, a checkbox group's options.
const MAX_OPTION_TEXT: usize = 75;
const MAX_OPTIONS: usize = 10;
/// Names listed per verdict before "and N more".
const MAX_NAMES: usize = 5;

/// The three buttons, carrying the diagnosis id.
pub fn buttons(diagnosis_id: &str) -> Value {
    let button = |judgement: Judgement, label: &str, style: Option<&str>| {
        let mut b = json!({
            "type": "button",
            "action_id": format!("{ACTION_PREFIX}{}", judgement.as_str()),
            "text": {"type": "plain_text", "text": label},
            "value": diagnosis_id,
        });
        if let Some(style) = style {
            b["style"] = json!(style);
        }
        b
    };
    json!({
        "type": "actions",
        "block_id": FEEDBACK_BLOCK,
        "elements": [
            button(Judgement::Right, "Right", Some("primary")),
            button(Judgement::Wrong, "Wrong", Some("danger")),
            button(Judgement::Partly, "Partly", None),
        ]
    })
}

/// The message's blocks with the line of who answered what, after the
/// buttons (replacing an earlier line). `answers` are each person's last.
/// `None` when the blocks received do not hold the buttons (a payload
/// without `message.blocks`, or a message edited since): writing them back
/// would replace the whole diagnosis with the tally line.
pub fn with_tally(blocks: &[Value], answers: &[(SlackUserId, Judgement)]) -> Option<Vec<Value>> {
    if !blocks.iter().any(|b| b["block_id"] == FEEDBACK_BLOCK) {
        return None;
    }
    let mut updated: Vec<Value> = blocks
        .iter()
        .filter(|b| b["block_id"] != TALLY_BLOCK)
        .cloned()
        .collect();
    let Some(line) = tally(answers) else {
        return Some(updated);
    };
    let block = json!({
        "type": "context",
        "block_id": TALLY_BLOCK,
        "elements": [{"type": "mrkdwn", "text": line}],
    });
    let at = updated
        .iter()
        .position(|b| b["block_id"] == FEEDBACK_BLOCK)
        .map_or(updated.len(), |i| i + 1);
    updated.insert(at, block);
    Some(updated)
}

/// "Confirmed right by <@U1>, <@U2> · Marked wrong by <@U3>".
pub fn tally(answers: &[(SlackUserId, Judgement)]) -> Option<String> {
    let parts: Vec<String> = [Judgement::Right, Judgement::Partly, Judgement::Wrong]
        .into_iter()
        .filter_map(|judgement| {
            let people: Vec<&SlackUserId> = answers
                .iter()
                .filter(|(_, j)| *j == judgement)
                .map(|(u, _)| u)
                .collect();
            if people.is_empty() {
                return None;
            }
            let mut names: Vec<String> =
                people.iter().take(MAX_NAMES).map(|u| u.mention()).collect();
            if people.len() > MAX_NAMES {
                names.push(format!("{} more", people.len() - MAX_NAMES));
            }
            Some(format!("{} by {}", judgement.phrase(), names.join(", ")))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// The form opened after "Wrong" or "Partly": which listed cause was wrong
/// (when the diagnosis named any) and what it was. Both optional.
pub fn detail_form(record: &DiagnosisRecord, judgement: Judgement) -> Value {
    let metadata = json!({"diagnosis_id": record.diagnosis_id, "judgement": judgement.as_str()});
    let mut blocks = vec![json!({
        "type": "section",
        "text": {"type": "mrkdwn", "text": format!(
            "You marked the diagnosis of *{}* {}. Both questions are optional.",
            escape(&truncate(&record.alarm, 200)),
            if judgement == Judgement::Wrong { "wrong" } else { "partly right" },
        )},
    })];
    let options: Vec<Value> = record
        .causes()
        .take(MAX_OPTIONS)
        .map(|id| {
            json!({
                "text": {"type": "plain_text", "text": truncate(id.title(), MAX_OPTION_TEXT)},
                "value": id.as_str(),
            })
        })
        .collect();
    if !options.is_empty() {
        blocks.push(json!({
            "type": "input",
            "block_id": CAUSES_BLOCK,
            "optional": true,
            "label": {"type": "plain_text", "text": "Which listed cause was wrong?"},
            "element": {"type": "checkboxes", "action_id": CAUSES_ACTION, "options": options},
        }));
    }
    blocks.push(json!({
        "type": "input",
        "block_id": NOTE_BLOCK,
        "optional": true,
        "label": {"type": "plain_text", "text": "What was it?"},
        "element": {"type": "plain_text_input", "action_id": NOTE_ACTION, "multiline": true,
                    "max_length": MAX_NOTE_CHARS},
    }));
    json!({
        "type": "modal",
        "callback_id": DETAIL_CALLBACK,
        "private_metadata": metadata.to_string(),
        "title": {"type": "plain_text", "text": "Diagnosis feedback"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Skip"},
        "blocks": blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::FindingId;
    use crate::diagnosis::finding::Role;
    use crate::feedback::RecordedFinding;

    fn user(id: &str) -> SlackUserId {
        SlackUserId::parse(id).unwrap()
    }

    #[test]
    fn the_buttons_carry_the_diagnosis_id_and_one_action_per_verdict() {
        let block = buttons("dx-0123");
        let ids: Vec<&str> = block["elements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["action_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["feedback.right", "feedback.wrong", "feedback.partly"]);
        assert!(
            block["elements"]
                .as_array()
                .unwrap()
                .iter()
                .all(|b| b["value"] == "dx-0123")
        );
    }

    #[test]
    fn the_tally_follows_the_buttons_and_replaces_the_last_one() {
        let blocks = vec![
            json!({"type": "section", "block_id": "headline"}),
            buttons("dx-1"),
            json!({"type": "context", "block_id": TALLY_BLOCK, "elements": []}),
            json!({"type": "context", "block_id": "footer"}),
        ];
        let updated = with_tally(
            &blocks,
            &[
                (user("U0ALICE01"), Judgement::Right),
                (user("U0BOB0001"), Judgement::Wrong),
            ],
        )
        .expect("the blocks hold the buttons");
        let ids: Vec<&str> = updated
            .iter()
            .map(|b| b["block_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["headline", "feedback", TALLY_BLOCK, "footer"]);
        assert_eq!(
            updated[2]["elements"][0]["text"],
            "Confirmed right by <@U0ALICE01> · Marked wrong by <@U0BOB0001>"
        );
    }

    #[test]
    fn blocks_without_the_buttons_are_never_written_back() {
        let answers = [(user("U0ALICE01"), Judgement::Right)];
        assert_eq!(with_tally(&[], &answers), None);
        let edited = [json!({"type": "section", "block_id": "headline"})];
        assert_eq!(with_tally(&edited, &answers), None);
    }

    #[test]
    fn many_answers_are_summed_up_after_five_names() {
        let answers: Vec<_> = (0..7)
            .map(|i| (user(&format!("U0PERSON{i}")), Judgement::Right))
            .collect();
        let line = tally(&answers).unwrap();
        assert!(line.ends_with(", 2 more"), "{line}");
    }

    #[test]
    fn the_form_lists_the_causes_and_escapes_the_alarm_name() {
        let record = DiagnosisRecord {
            diagnosis_id: "dx-1".into(),
            alarm: "<!channel> & latency".into(),
            family: "AWS/ApplicationELB".into(),
            service: None,
            findings: vec![
                RecordedFinding {
                    id: FindingId::WorkerCeiling,
                    role: Role::Cause,
                },
                RecordedFinding {
                    id: FindingId::LowTrafficArtifact,
                    role: Role::RuledOut,
                },
            ],
            recorded_at: chrono::DateTime::UNIX_EPOCH,
        };
        let form = detail_form(&record, Judgement::Partly);
        let options = form["blocks"][1]["element"]["options"].as_array().unwrap();
        assert_eq!(options.len(), 1);
        assert_eq!(options[0]["value"], "pods.worker_ceiling");
        let intro = form["blocks"][0]["text"]["text"].as_str().unwrap();
        assert!(
            !intro.contains("<!channel>") && intro.contains("&amp;"),
            "{intro}"
        );
        let metadata: Value =
            serde_json::from_str(form["private_metadata"].as_str().unwrap()).unwrap();
        assert_eq!(metadata["judgement"], "partly");
    }
}
