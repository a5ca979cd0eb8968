//! What Slack posts when someone clicks a verdict button or submits the
//! "what was it" form: `application/x-www-form-urlencoded` with one field,
//! `payload`, holding JSON. Only our two interactions are read; anything
//! else is refused by name, and nothing a user typed appears in an error.

use serde_json::Value;

use super::message::{
    ACTION_PREFIX, CAUSES_ACTION, CAUSES_BLOCK, DETAIL_CALLBACK, FEEDBACK_BLOCK, NOTE_ACTION,
    NOTE_BLOCK,
};
use super::{Judgement, MAX_NOTE_CHARS, SlackUserId, valid_diagnosis_id};
use crate::diagnosis::FindingId;

/// A click on "Right", "Wrong" or "Partly" under a posted diagnosis.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictClick {
    pub user: SlackUserId,
    pub diagnosis_id: String,
    pub judgement: Judgement,
    /// Where the message is, to update it.
    pub channel_id: String,
    pub message_ts: String,
    /// Opens the "what was it" form (valid for 3 s).
    pub trigger_id: Option<String>,
    /// The message as it is now, to update it in place.
    pub message_blocks: Vec<Value>,
    pub message_text: String,
}

/// The "what was it" form, submitted.
#[derive(Debug, Clone, PartialEq)]
pub struct DetailSubmission {
    pub user: SlackUserId,
    pub diagnosis_id: String,
    pub judgement: Judgement,
    pub wrong_causes: Vec<FindingId>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Interaction {
    Verdict(VerdictClick),
    Detail(DetailSubmission),
}

impl Interaction {
    pub fn diagnosis_id(&self) -> &str {
        match self {
            Interaction::Verdict(c) => &c.diagnosis_id,
            Interaction::Detail(d) => &d.diagnosis_id,
        }
    }

    pub fn user(&self) -> &SlackUserId {
        match self {
            Interaction::Verdict(c) => &c.user,
            Interaction::Detail(d) => &d.user,
        }
    }
}

/// Why a signed request is not an interaction we read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error(
        "the body has no `payload` form field; expected Slack's application/x-www-form-urlencoded interaction"
    )]
    NoPayload,
    #[error("the payload is not JSON ({0}); expected Slack's interaction JSON")]
    NotJson(String),
    #[error("interaction type {0:?}; this endpoint reads block_actions and view_submission")]
    UnsupportedType(String),
    #[error("{0} is missing or malformed")]
    Field(&'static str),
    #[error("the action is not one of alarm-triage's verdict buttons")]
    NotOurs,
}

/// Reads an interaction out of the raw (already verified) body.
pub fn parse(body: &[u8]) -> Result<Interaction, Malformed> {
    let payload = form_field(body, "payload").ok_or(Malformed::NoPayload)?;
    let value: Value = serde_json::from_str(&payload).map_err(|e| {
        // serde's message names a position, never the content.
        Malformed::NotJson(format!("line {} column {}", e.line(), e.column()))
    })?;
    let user = value["user"]["id"]
        .as_str()
        .and_then(SlackUserId::parse)
        .ok_or(Malformed::Field("user.id"))?;
    match value["type"].as_str() {
        Some("block_actions") => verdict_click(&value, user).map(Interaction::Verdict),
        Some("view_submission") => detail(&value, user).map(Interaction::Detail),
        Some(other) => Err(Malformed::UnsupportedType(other.chars().take(40).collect())),
        None => Err(Malformed::Field("type")),
    }
}

fn verdict_click(value: &Value, user: SlackUserId) -> Result<VerdictClick, Malformed> {
    let action = value["actions"]
        .as_array()
        .and_then(|actions| actions.iter().find(|a| a["block_id"] == FEEDBACK_BLOCK))
        .ok_or(Malformed::NotOurs)?;
    let judgement = action["action_id"]
        .as_str()
        .and_then(|id| id.strip_prefix(ACTION_PREFIX))
        .and_then(Judgement::parse)
        .ok_or(Malformed::NotOurs)?;
    let diagnosis_id = action["value"]
        .as_str()
        .filter(|id| valid_diagnosis_id(id))
        .ok_or(Malformed::Field("actions[].value (the diagnosis id)"))?;
    let channel_id = value["container"]["channel_id"]
        .as_str()
        .or_else(|| value["channel"]["id"].as_str())
        .filter(|c| slack_id(c))
        .ok_or(Malformed::Field("container.channel_id"))?;
    let message_ts = value["container"]["message_ts"]
        .as_str()
        .or_else(|| value["message"]["ts"].as_str())
        .filter(|ts| message_ts(ts))
        .ok_or(Malformed::Field("container.message_ts"))?;
    Ok(VerdictClick {
        user,
        diagnosis_id: diagnosis_id.to_owned(),
        judgement,
        channel_id: channel_id.to_owned(),
        message_ts: message_ts.to_owned(),
        trigger_id: value["trigger_id"]
            .as_str()
            .filter(|t| t.len() <= 255)
            .map(str::to_owned),
        message_blocks: value["message"]["blocks"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        message_text: value["message"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    })
}

fn detail(value: &Value, user: SlackUserId) -> Result<DetailSubmission, Malformed> {
    let view = &value["view"];
    if view["callback_id"] != DETAIL_CALLBACK {
        return Err(Malformed::NotOurs);
    }
    let metadata: Value = view["private_metadata"]
        .as_str()
        .and_then(|m| serde_json::from_str(m).ok())
        .ok_or(Malformed::Field("view.private_metadata"))?;
    let diagnosis_id = metadata["diagnosis_id"]
        .as_str()
        .filter(|id| valid_diagnosis_id(id))
        .ok_or(Malformed::Field("view.private_metadata.diagnosis_id"))?;
    let judgement = metadata["judgement"]
        .as_str()
        .and_then(Judgement::parse)
        .ok_or(Malformed::Field("view.private_metadata.judgement"))?;
    let values = &view["state"]["values"];
    let wrong_causes = values[CAUSES_BLOCK][CAUSES_ACTION]["selected_options"]
        .as_array()
        .map(|options| {
            options
                .iter()
                .filter_map(|o| o["value"].as_str())
                .filter(|v| v.len() <= 80)
                .map(FindingId::parse)
                .collect()
        })
        .unwrap_or_default();
    let note = values[NOTE_BLOCK][NOTE_ACTION]["value"]
        .as_str()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| n.chars().take(MAX_NOTE_CHARS).collect());
    Ok(DetailSubmission {
        user,
        diagnosis_id: diagnosis_id.to_owned(),
        judgement,
        wrong_causes,
        note,
    })
}

/// A channel id (`C...`, `G...`, `D...`): upper-case letters and digits.
fn slack_id(text: &str) -> bool {
    (2..=32).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// A message timestamp: `1700000000.000100`.
fn message_ts(text: &str) -> bool {
    text.len() <= 32 && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// The value of `name` in a form body (`+` is a space, `%XX` a byte).
pub fn form_field(body: &[u8], name: &str) -> Option<String> {
    let body = std::str::from_utf8(body).ok()?;
    body.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == name).then(|| {
            let spaced = value.replace('+', " ");
            percent_encoding::percent_decode_str(&spaced)
                .decode_utf8()
                .ok()
                .map(|v| v.into_owned())
        })?
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    /// Form-encodes a payload as Slack sends it.
    pub(crate) fn form(payload: &Value) -> Vec<u8> {
        use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
        format!(
            "payload={}",
            utf8_percent_encode(&payload.to_string(), NON_ALPHANUMERIC)
        )
        .into_bytes()
    }

    pub(crate) fn click(action_id: &str, value: &str) -> Value {
        json!({
            "type": "block_actions",
            "user": {"id": "U0ALICE01", "username": "alice", "team_id": "T0TEAM"},
            "api_app_id": "A0APP",
            "container": {"type": "message", "message_ts": "1700000000.000100", "channel_id": "C0ALERTS01", "is_ephemeral": false},
            "trigger_id": "1234.5678.abcd",
            "channel": {"id": "C0ALERTS01", "name": "alerts"},
            "message": {"type": "message", "ts": "1700000000.000100", "text": "report",
                        "blocks": [{"type": "section", "block_id": "headline", "text": {"type": "mrkdwn", "text": "report"}}]},
            "response_url": "https://hooks.slack.com/actions/T0TEAM/1/abc",
            "actions": [{"action_id": action_id, "block_id": "feedback", "type": "button",
                         "value": value, "text": {"type": "plain_text", "text": "Right"}, "action_ts": "1700000001.0"}]
        })
    }

    #[test]
    fn a_click_on_right_names_the_person_the_diagnosis_and_the_message() {
        let parsed = parse(&form(&click("feedback.right", "dx-0123abcd"))).unwrap();
        let Interaction::Verdict(click) = parsed else {
            panic!("a click")
        };
        assert_eq!(click.user.as_str(), "U0ALICE01");
        assert_eq!(click.diagnosis_id, "dx-0123abcd");
        assert_eq!(click.judgement, Judgement::Right);
        assert_eq!(
            (click.channel_id.as_str(), click.message_ts.as_str()),
            ("C0ALERTS01", "1700000000.000100")
        );
        assert_eq!(click.message_blocks.len(), 1);
    }

    #[test]
    fn a_submitted_form_carries_the_marked_causes_and_the_note() {
        let payload = json!({
            "type": "view_submission",
            "user": {"id": "U0BOB0001"},
            "view": {"callback_id": "feedback.detail",
                     "private_metadata": "{\"diagnosis_id\":\"dx-0123abcd\",\"judgement\":\"partly\"}",
                     "state": {"values": {
                         "causes": {"wrong_causes": {"type": "checkboxes", "selected_options": [{"value": "pods.worker_ceiling"}]}},
                         "note": {"what_was_it": {"type": "plain_text_input", "value": "  a bad node  "}}}}}
        });
        let Interaction::Detail(detail) = parse(&form(&payload)).unwrap() else {
            panic!("a submission")
        };
        assert_eq!(detail.judgement, Judgement::Partly);
        assert_eq!(detail.wrong_causes, vec![FindingId::WorkerCeiling]);
        assert_eq!(detail.note.as_deref(), Some("a bad node"));
    }

    #[test]
    fn anything_but_our_interactions_is_refused_by_name() {
        assert_eq!(parse(b"token=abc"), Err(Malformed::NoPayload));
        assert!(matches!(
            parse(b"payload=%7Bnot"),
            Err(Malformed::NotJson(_))
        ));
        let mut other = click("feedback.right", "dx-0123abcd");
        other["type"] = json!("shortcut");
        assert_eq!(
            parse(&form(&other)),
            Err(Malformed::UnsupportedType("shortcut".into()))
        );
        assert_eq!(
            parse(&form(&click("approve.deploy", "dx-0123abcd"))),
            Err(Malformed::NotOurs)
        );
        assert!(matches!(
            parse(&form(&click("feedback.right", "../../etc"))),
            Err(Malformed::Field(_))
        ));
        let mut injected = click("feedback.right", "dx-0123abcd");
        injected["user"]["id"] = json!("U1> <!channel");
        assert_eq!(parse(&form(&injected)), Err(Malformed::Field("user.id")));
    }

    #[test]
    fn an_error_never_repeats_what_was_typed() {
        let e = parse(b"payload=%7B%22secret-note%22").unwrap_err();
        assert!(!e.to_string().contains("secret-note"), "{e}");
    }

    #[test]
    fn form_fields_decode_plus_and_percent() {
        assert_eq!(
            form_field(b"a=1&payload=x+y%21", "payload").as_deref(),
            Some("x y!")
        );
        assert_eq!(form_field(b"a=1", "payload"), None);
    }
}
