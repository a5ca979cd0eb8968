//! Composing what is posted: the Block Kit rendering plus where it goes (a
//! channel, a thread), the route's mention, and the plain-text fallback sent
//! when Slack refuses the blocks.

use serde_json::{Value, json};

use super::route::Route;
use crate::diagnosis::{Diagnosis, ReportKind};
use crate::feedback::asks_for_feedback;
use crate::feedback::message::buttons;
use crate::render::slack::{MAX_SECTION_TEXT, escape_multiline};
use crate::render::{text, truncate};

/// Slack shows at most about 4,000 characters of a message's `text` before cutting it.
const MAX_PLAIN_TEXT: usize = 3900;

/// One message for one route.
#[derive(Debug, Clone, PartialEq)]
pub struct SlackMessage {
    /// The route's channel (with webhooks: the key of the webhook).
    pub channel: String,
    /// Block Kit payload.
    pub payload: Value,
    /// The same report as plain text, for when Slack refuses the blocks.
    pub fallback: Value,
    /// Through the Web API: the details, for a reply in the first message's
    /// thread (its `thread_ts` is set once the first message is posted).
    pub details: Option<Box<SlackMessage>>,
}

/// Where a message goes beyond its channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Placement<'a> {
    /// Post through the Web API (names the channel in the body) rather than a webhook.
    pub web_api: bool,
    /// Reply in this thread (`ts` of the first message about the alarm).
    pub thread_ts: Option<&'a str>,
    /// The channel ID the thread lives in (the Web API answers with IDs).
    pub thread_channel: Option<&'a str>,
    /// What the first message gains through the Web API: whether this was
    /// seen before, the verdict buttons and the track record.
    pub additions: Option<&'a FirstMessageAdditions>,
}

/// What a diagnosis's first message gains beyond the report (Web API only).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FirstMessageAdditions {
    /// "4th time in 7 days; the same cause (per-process ceiling) each time".
    pub seen_before: Option<String>,
    /// Right / Wrong / Partly (feedback on).
    pub buttons: bool,
    /// "per-process ceiling: confirmed 7 of 8 times on this service".
    pub track_record: Vec<String>,
}

/// Builds the message for one route.
pub fn compose(d: &Diagnosis, route: &Route, placement: Placement<'_>) -> SlackMessage {
    // A resolution never pages anybody.
    let mention = match (&route.mention, d.kind) {
        (Some(m), ReportKind::Diagnosis) => Some(m.markup()),
        _ => None,
    };
    // Through the Web API the details go into the thread; a webhook has one message.
    let mut payload = if placement.web_api {
        crate::render::slack::first_message(d)
    } else {
        crate::render::slack::render(d)
    };
    // A resolution is judged by nobody and was seen with its alarm.
    if let Some(additions) = placement
        .additions
        .filter(|_| placement.web_api && asks_for_feedback(d))
    {
        add_to_first_message(&mut payload, d, additions);
    }
    if let Some(mention) = &mention {
        prefix_text(&mut payload["text"], mention, MAX_SECTION_TEXT);
        if let Some(section) = payload["blocks"].as_array_mut().and_then(|blocks| {
            blocks
                .iter_mut()
                .find(|b| b["type"] == "section" && b["text"]["type"] == "mrkdwn")
        }) {
            prefix_text(&mut section["text"]["text"], mention, MAX_SECTION_TEXT);
        }
    }
    // The plain-text report is laid out in columns: a code block keeps them
    // aligned. The mention stays outside, where it notifies. Rendered once:
    // the details reply falls back to the same report.
    let report = escape_multiline(&text::render(d)).replace("```", "'''");
    let room = MAX_PLAIN_TEXT - 8 - mention.as_ref().map_or(0, |m| m.len() + 1);
    let fallback_text = match &mention {
        Some(m) => format!("{m}\n```{}```", truncate(&report, room)),
        None => format!("```{}```", truncate(&report, room)),
    };
    let mut fallback = json!({ "text": fallback_text });
    let channel = placement
        .web_api
        .then(|| placement.thread_channel.unwrap_or(&route.channel));
    for body in [&mut payload, &mut fallback] {
        place(body, channel, placement.thread_ts);
    }
    let details = channel.map(|channel| {
        let mut details = crate::render::slack::details(d);
        let mut fallback =
            json!({ "text": format!("```{}```", truncate(&report, MAX_PLAIN_TEXT - 8)) });
        for body in [&mut details, &mut fallback] {
            place(body, Some(channel), None);
        }
        Box::new(SlackMessage {
            channel: route.channel.clone(),
            payload: details,
            fallback,
            details: None,
        })
    });
    SlackMessage {
        channel: route.channel.clone(),
        payload,
        fallback,
        details,
    }
}

/// A message of its own (the noise digest): the Block Kit `payload`, and
/// `fallback_text` as a code block for when Slack refuses the blocks.
pub fn standalone(
    channel: &str,
    payload: Value,
    fallback_text: &str,
    web_api: bool,
) -> SlackMessage {
    let mut payload = payload;
    let mut fallback = json!({ "text": format!("```{}```", truncate(&escape_multiline(fallback_text).replace("```", "'''"), MAX_PLAIN_TEXT - 8)) });
    let placed = web_api.then_some(channel);
    for body in [&mut payload, &mut fallback] {
        place(body, placed, None);
    }
    SlackMessage {
        channel: channel.to_owned(),
        payload,
        fallback,
        details: None,
    }
}

/// The one quiet line for a held diagnosis whose alarm cleared during the
/// hold: no mention, no details, no buttons, nothing to thread.
pub fn quiet(
    d: &Diagnosis,
    hold: &crate::diagnosis::Hold,
    route: &Route,
    web_api: bool,
) -> SlackMessage {
    let line = escape_multiline(&alarm_triage_core::render::quiet_line(d, hold));
    let mut payload = json!({
        "text": line,
        "blocks": [{"type": "context", "elements": [{"type": "mrkdwn", "text": format!(":white_check_mark: {line}")}]}],
    });
    let mut fallback = json!({ "text": line });
    let channel = web_api.then_some(route.channel.as_str());
    for body in [&mut payload, &mut fallback] {
        place(body, channel, None);
    }
    SlackMessage {
        channel: route.channel.clone(),
        payload,
        fallback,
        details: None,
    }
}

/// "Seen before" under the verdict; the track record and the verdict
/// buttons at the end of the first message.
fn add_to_first_message(payload: &mut Value, d: &Diagnosis, additions: &FirstMessageAdditions) {
    let Some(blocks) = payload["blocks"].as_array_mut() else {
        return;
    };
    if let Some(seen) = &additions.seen_before {
        // After the header and the verdict section: read with the verdict.
        let at = blocks
            .iter()
            .position(|b| b["type"] == "section")
            .map_or(blocks.len(), |i| i + 1);
        blocks.insert(
            at,
            json!({
                "type": "context",
                "block_id": "seen-before",
                "elements": [{"type": "mrkdwn", "text": truncate(seen, MAX_SECTION_TEXT)}],
            }),
        );
    }
    if !additions.buttons {
        return;
    }
    if !additions.track_record.is_empty() {
        let line = format!("Track record: {}", additions.track_record.join("; "));
        blocks.push(json!({
            "type": "context",
            "block_id": "track-record",
            "elements": [{"type": "mrkdwn", "text": truncate(&escape_multiline(&line), MAX_SECTION_TEXT)}],
        }));
    }
    blocks.push(buttons(d.id.as_str()));
}

/// No link previews; the channel (Web API) and the thread, when there are.
fn place(body: &mut Value, channel: Option<&str>, thread_ts: Option<&str>) {
    body["unfurl_links"] = json!(false);
    body["unfurl_media"] = json!(false);
    if let Some(channel) = channel {
        body["channel"] = json!(channel);
    }
    if let Some(ts) = thread_ts {
        body["thread_ts"] = json!(ts);
    }
}

/// The details reply, placed in the thread the first message started (or
/// joined) in the channel Slack answered with.
pub fn in_thread(
    details: &SlackMessage,
    channel_id: Option<&str>,
    thread_ts: &str,
) -> SlackMessage {
    let mut placed = details.clone();
    for body in [&mut placed.payload, &mut placed.fallback] {
        place(body, channel_id, Some(thread_ts));
    }
    placed
}

fn prefix_text(slot: &mut Value, prefix: &str, max: usize) {
    if let Some(current) = slot.as_str() {
        *slot = json!(truncate(&format!("{prefix} {current}"), max));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Behaviour;
    use crate::diagnosis::Severity;
    use crate::notify::route::Mention;
    use crate::notify::tests::diagnosis;

    fn route(mention: Option<Mention>) -> Route {
        Route {
            mention,
            ..Route::everything_to("#oncall")
        }
    }

    #[test]
    fn a_mention_is_put_where_slack_notifies_from() {
        let d = diagnosis(
            Behaviour::Sustained,
            Severity::Critical,
            ReportKind::Diagnosis,
        );
        let m = compose(&d, &route(Some(Mention::Here)), Placement::default());
        assert!(m.payload["text"].as_str().unwrap().starts_with("<!here> "));
        let first_section = m.payload["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["type"] == "section")
            .unwrap();
        assert!(
            first_section["text"]["text"]
                .as_str()
                .unwrap()
                .starts_with("<!here> ")
        );
        assert!(
            m.fallback["text"]
                .as_str()
                .unwrap()
                .starts_with("<!here>\n```")
        );
    }

    #[test]
    fn a_diagnosis_through_the_web_api_asks_for_a_verdict_and_a_resolution_does_not() {
        let feedback = FirstMessageAdditions {
            buttons: true,
            seen_before: None,
            track_record: vec![
                "per-process ceiling: confirmed 7 of 8 times on this service".into(),
            ],
        };
        let placement = Placement {
            web_api: true,
            additions: Some(&feedback),
            ..Placement::default()
        };
        let d = diagnosis(
            Behaviour::Sustained,
            Severity::Critical,
            ReportKind::Diagnosis,
        );
        let m = compose(&d, &route(None), placement);
        let blocks = m.payload["blocks"].as_array().unwrap();
        let last = blocks.last().unwrap();
        assert_eq!(last["block_id"], "feedback");
        assert_eq!(last["elements"][0]["value"], d.id.as_str());
        assert!(
            blocks[blocks.len() - 2]["elements"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("Track record: per-process ceiling: confirmed 7 of 8")
        );
        let resolved = diagnosis(Behaviour::Recovered, Severity::Info, ReportKind::Resolution);
        assert!(
            !compose(&resolved, &route(None), placement)
                .payload
                .to_string()
                .contains("feedback.right")
        );
        let webhook = Placement {
            web_api: false,
            ..placement
        };
        assert!(
            !compose(&d, &route(None), webhook)
                .payload
                .to_string()
                .contains("feedback.right")
        );
    }

    #[test]
    fn a_resolution_mentions_nobody() {
        let d = diagnosis(Behaviour::Recovered, Severity::Info, ReportKind::Resolution);
        let m = compose(&d, &route(Some(Mention::Here)), Placement::default());
        assert!(!m.payload.to_string().contains("<!here>"));
    }

    #[test]
    fn web_api_messages_name_their_channel_and_thread() {
        let d = diagnosis(
            Behaviour::Flapping,
            Severity::Warning,
            ReportKind::Diagnosis,
        );
        let m = compose(
            &d,
            &route(None),
            Placement {
                web_api: true,
                thread_ts: Some("1700000000.000100"),
                thread_channel: Some("C024BE91L"),
                additions: None,
            },
        );
        for body in [&m.payload, &m.fallback] {
            assert_eq!(body["channel"], "C024BE91L");
            assert_eq!(body["thread_ts"], "1700000000.000100");
            assert_eq!(body["unfurl_links"], false);
        }
        let webhook = compose(&d, &route(None), Placement::default());
        assert!(webhook.payload.get("channel").is_none());
    }

    #[test]
    fn the_plain_text_fallback_is_escaped_and_short_enough() {
        let mut d = diagnosis(
            Behaviour::Flapping,
            Severity::Warning,
            ReportKind::Diagnosis,
        );
        d.alarm.name = "<!channel> & friends".to_owned();
        d.headline = format!("{} {}", d.alarm.name, "x".repeat(10_000));
        let m = compose(&d, &route(None), Placement::default());
        let text = m.fallback["text"].as_str().unwrap();
        assert!(!text.contains("<!channel>"), "{text}");
        assert!(text.chars().count() <= MAX_PLAIN_TEXT);
        assert!(text.starts_with("```") && text.ends_with("```") && text.contains('\n'));
    }
}
