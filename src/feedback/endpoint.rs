//! The feedback endpoint's answer to one HTTP request from Slack.
//!
//! Order matters: nothing is read or stored before the signature holds, the
//! diagnosis id is checked against the store before anything is written for
//! it, and a signed request seen before is refused (a replay within the
//! five minutes the timestamp allows). The answer is stored before Slack is
//! touched, so a slow `chat.update` can never lose it; the Slack calls run
//! together under what is left of Slack's 3-second budget.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::interaction::{self, DetailSubmission, Interaction, VerdictClick};
use super::message::{detail_form, with_tally};
use super::{
    Answer, DiagnosisRecord, FeedbackStore, Judgement, MAX_CLOCK_SKEW, Refusal, SignedRequest,
    SlackInteractions, verify,
};

/// What the endpoint answers: a status and a short body for Slack (and logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    /// Empty on success (Slack closes a form on an empty 200).
    pub body: String,
    /// For the log line: what happened, never what anyone typed.
    pub outcome: &'static str,
}

impl Reply {
    fn ok(outcome: &'static str) -> Self {
        Reply {
            status: 200,
            body: String::new(),
            outcome,
        }
    }

    fn refuse(status: u16, outcome: &'static str, reason: String) -> Self {
        Reply {
            status,
            body: reason,
            outcome,
        }
    }
}

/// The status for a request that failed verification.
pub fn refusal_status(refusal: &Refusal) -> u16 {
    match refusal {
        Refusal::BodyTooLarge { .. } => 413,
        _ => 401,
    }
}

/// Handles one request: verify, read, check, store, then tell Slack.
pub async fn respond(
    signing_secret: &[u8],
    request: SignedRequest<'_>,
    store: &impl FeedbackStore,
    slack: &impl SlackInteractions,
    now: DateTime<Utc>,
    slack_deadline: Instant,
) -> Reply {
    if let Err(refusal) = verify(signing_secret, request, now) {
        return Reply::refuse(
            refusal_status(&refusal),
            "refused: not verified",
            refusal.to_string(),
        );
    }
    let interaction = match interaction::parse(request.body) {
        Ok(i) => i,
        Err(e) => return Reply::refuse(400, "refused: malformed", e.to_string()),
    };
    let record = match store.diagnosis(interaction.diagnosis_id()).await {
        Ok(Some(record)) => record,
        Ok(None) => {
            return Reply::refuse(
                404,
                "refused: unknown diagnosis",
                "unknown diagnosis id: it was never posted with feedback buttons".to_owned(),
            );
        }
        Err(e) => return store_failure(&e),
    };
    // The signature is unique to the timestamp and body: seen twice is a replay.
    let key = request_key(request.signature.unwrap_or_default());
    match store.first_sight(&key, now + MAX_CLOCK_SKEW * 2).await {
        Ok(true) => {}
        Ok(false) => {
            return Reply::refuse(
                409,
                "refused: replay",
                "this signed request was already received".to_owned(),
            );
        }
        Err(e) => return store_failure(&e),
    }
    match interaction {
        Interaction::Verdict(click) => {
            let answer = Answer {
                diagnosis: record.clone(),
                user: click.user.clone(),
                judgement: click.judgement,
                wrong_causes: Vec::new(),
                note: None,
                answered_at: now,
            };
            if let Err(e) = store.answer(&answer).await {
                return store_failure(&e);
            }
            tell_slack(store, slack, &record, &click, slack_deadline).await;
            Reply::ok("answer stored")
        }
        Interaction::Detail(detail) => {
            if let Err(e) = store.answer(&detailed(&record, detail, now)).await {
                return store_failure(&e);
            }
            Reply::ok("details stored")
        }
    }
}

/// A submitted form as an answer; only causes the diagnosis named are kept.
fn detailed(record: &DiagnosisRecord, detail: DetailSubmission, now: DateTime<Utc>) -> Answer {
    let named: Vec<_> = record.causes().cloned().collect();
    Answer {
        diagnosis: record.clone(),
        user: detail.user,
        judgement: detail.judgement,
        wrong_causes: detail
            .wrong_causes
            .into_iter()
            .filter(|c| named.contains(c))
            .collect(),
        note: detail.note,
        answered_at: now,
    }
}

/// Updates the message with who answered what and, after "wrong" or
/// "partly", opens the form; both at once, bounded by `deadline`. A
/// failure is logged: the answer is already stored.
async fn tell_slack(
    store: &impl FeedbackStore,
    slack: &impl SlackInteractions,
    record: &DiagnosisRecord,
    click: &VerdictClick,
    deadline: Instant,
) {
    let left = || deadline.saturating_duration_since(Instant::now());
    let update = async {
        let answers = store
            .answers_to(&record.diagnosis_id)
            .await
            .map_err(|e| e.to_string())?;
        let mut tally: Vec<_> = answers.into_iter().map(|a| (a.user, a.judgement)).collect();
        // The store may lag behind the write just made (eventual reads): the click itself counts.
        tally.retain(|(u, _)| *u != click.user);
        tally.push((click.user.clone(), click.judgement));
        let Some(blocks) = with_tally(&click.message_blocks, &tally) else {
            tracing::info!(diagnosis_id = %record.diagnosis_id, "the click carried no buttons: the message is left as it is");
            return Ok(());
        };
        slack
            .update_message(
                &click.channel_id,
                &click.message_ts,
                &click.message_text,
                &blocks,
                left(),
            )
            .await
    };
    let form = async {
        match (&click.trigger_id, click.judgement) {
            (Some(trigger), Judgement::Wrong | Judgement::Partly) => {
                slack
                    .open_form(trigger, &detail_form(record, click.judgement), left())
                    .await
            }
            _ => Ok(()),
        }
    };
    let (updated, opened) = tokio::join!(
        tokio::time::timeout(left(), update),
        tokio::time::timeout(left(), form)
    );
    for (call, result) in [("chat.update", updated), ("views.open", opened)] {
        match result {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => {
                tracing::warn!(diagnosis_id = %record.diagnosis_id, call, reason = %reason, "Slack call failed; the answer is stored")
            }
            Err(_) => {
                tracing::warn!(diagnosis_id = %record.diagnosis_id, call, "Slack call timed out; the answer is stored")
            }
        }
    }
}

fn store_failure(e: &crate::Error) -> Reply {
    tracing::error!(error = %e, "the feedback table could not be used");
    Reply::refuse(
        503,
        "failed: store",
        "the answer could not be stored; try again".to_owned(),
    )
}

/// The key a request is remembered by: a hash of its signature.
fn request_key(signature: &str) -> String {
    let digest = Sha256::digest(signature.as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("request#{hex}")
}

/// How long the Slack calls may take: Slack waits 3 s for the answer.
pub const SLACK_BUDGET: Duration = Duration::from_millis(2_300);

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use chrono::TimeZone;
    use hmac::{Hmac, Mac};
    use serde_json::{Value, json};

    use super::*;
    use crate::diagnosis::FindingId;
    use crate::diagnosis::finding::Role;
    use crate::feedback::RecordedFinding;

    const SECRET: &[u8] = b"8f742231b10e8888abcd99yyyzzz85a5";

    #[derive(Default)]
    struct MemoryStore {
        records: Mutex<HashMap<String, DiagnosisRecord>>,
        seen: Mutex<Vec<String>>,
        answers: Mutex<HashMap<(String, String), Answer>>,
    }

    impl FeedbackStore for MemoryStore {
        async fn record(&self, r: &DiagnosisRecord) -> crate::Result<()> {
            self.records
                .lock()
                .unwrap()
                .insert(r.diagnosis_id.clone(), r.clone());
            Ok(())
        }
        async fn diagnosis(&self, id: &str) -> crate::Result<Option<DiagnosisRecord>> {
            Ok(self.records.lock().unwrap().get(id).cloned())
        }
        async fn first_sight(&self, key: &str, _: DateTime<Utc>) -> crate::Result<bool> {
            let mut seen = self.seen.lock().unwrap();
            if seen.iter().any(|k| k == key) {
                return Ok(false);
            }
            seen.push(key.to_owned());
            Ok(true)
        }
        async fn answer(&self, a: &Answer) -> crate::Result<()> {
            self.answers.lock().unwrap().insert(
                (a.diagnosis.diagnosis_id.clone(), a.user.as_str().to_owned()),
                a.clone(),
            );
            Ok(())
        }
        async fn answers_to(&self, id: &str) -> crate::Result<Vec<Answer>> {
            Ok(self
                .answers
                .lock()
                .unwrap()
                .values()
                .filter(|a| a.diagnosis.diagnosis_id == id)
                .cloned()
                .collect())
        }
        async fn answers_about(&self, _: &str, _: usize) -> crate::Result<Vec<Answer>> {
            Ok(Vec::new())
        }
        async fn everything_since(
            &self,
            _: DateTime<Utc>,
        ) -> crate::Result<(Vec<DiagnosisRecord>, Vec<Answer>)> {
            Ok((Vec::new(), Vec::new()))
        }
    }

    #[derive(Default)]
    struct RecordingSlack {
        updates: Mutex<Vec<Vec<Value>>>,
        forms: Mutex<Vec<Value>>,
    }

    impl SlackInteractions for RecordingSlack {
        async fn update_message(
            &self,
            _: &str,
            _: &str,
            _: &str,
            blocks: &[Value],
            _: Duration,
        ) -> Result<(), String> {
            self.updates.lock().unwrap().push(blocks.to_vec());
            Ok(())
        }
        async fn open_form(&self, _: &str, view: &Value, _: Duration) -> Result<(), String> {
            self.forms.lock().unwrap().push(view.clone());
            Ok(())
        }
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, 10, 0, 0).unwrap()
    }

    fn store() -> MemoryStore {
        let s = MemoryStore::default();
        s.records.lock().unwrap().insert(
            "dx-0123abcd".into(),
            DiagnosisRecord {
                diagnosis_id: "dx-0123abcd".into(),
                alarm: "checkout-latency".into(),
                family: "AWS/ApplicationELB".into(),
                service: Some("shop/checkout".into()),
                findings: vec![
                    RecordedFinding {
                        id: FindingId::WorkerCeiling,
                        role: Role::Cause,
                    },
                    RecordedFinding {
                        id: FindingId::HpaCannotReact,
                        role: Role::Cause,
                    },
                ],
                recorded_at: now(),
            },
        );
        s
    }

    fn body(payload: &Value) -> Vec<u8> {
        use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
        format!(
            "payload={}",
            utf8_percent_encode(&payload.to_string(), NON_ALPHANUMERIC)
        )
        .into_bytes()
    }

    fn sign(timestamp: &str, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(SECRET).unwrap();
        mac.update(format!("v0:{timestamp}:").as_bytes());
        mac.update(body);
        let bytes = mac.finalize().into_bytes();
        format!(
            "v0={}",
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    }

    fn click(action: &str, diagnosis: &str) -> Value {
        json!({"type": "block_actions", "user": {"id": "U0ALICE01"}, "trigger_id": "1.2.3",
               "container": {"channel_id": "C0ALERTS01", "message_ts": "1700000000.000100"},
               "message": {"ts": "1700000000.000100", "text": "report", "blocks": [{"type": "actions", "block_id": "feedback", "elements": []}]},
               "actions": [{"block_id": "feedback", "action_id": action, "value": diagnosis}]})
    }

    async fn send(
        store: &MemoryStore,
        slack: &RecordingSlack,
        body: &[u8],
        signature: Option<&str>,
    ) -> Reply {
        let timestamp = now().timestamp().to_string();
        let signed = sign(&timestamp, body);
        let request = SignedRequest {
            timestamp: Some(&timestamp),
            signature: Some(signature.unwrap_or(&signed)),
            body,
        };
        respond(
            SECRET,
            request,
            store,
            slack,
            now(),
            Instant::now() + SLACK_BUDGET,
        )
        .await
    }

    #[tokio::test]
    async fn a_click_without_the_messages_blocks_is_stored_and_the_message_left_alone() {
        let (store, slack) = (store(), RecordingSlack::default());
        let mut payload = click("feedback.right", "dx-0123abcd");
        payload["message"]
            .as_object_mut()
            .expect("the click names its message")
            .remove("blocks");
        let reply = send(&store, &slack, &body(&payload), None).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(store.answers.lock().unwrap().len(), 1);
        assert!(
            slack.updates.lock().unwrap().is_empty(),
            "chat.update would replace the diagnosis"
        );
    }

    #[tokio::test]
    async fn a_click_is_stored_and_the_message_names_who_confirmed_it() {
        let (store, slack) = (store(), RecordingSlack::default());
        let reply = send(
            &store,
            &slack,
            &body(&click("feedback.right", "dx-0123abcd")),
            None,
        )
        .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(store.answers.lock().unwrap().len(), 1);
        let updates = slack.updates.lock().unwrap();
        assert_eq!(
            updates[0][1]["elements"][0]["text"],
            "Confirmed right by <@U0ALICE01>"
        );
        assert!(
            slack.forms.lock().unwrap().is_empty(),
            "no form after right"
        );
    }

    #[tokio::test]
    async fn wrong_opens_the_form_and_its_answer_keeps_only_named_causes() {
        let (store, slack) = (store(), RecordingSlack::default());
        send(
            &store,
            &slack,
            &body(&click("feedback.wrong", "dx-0123abcd")),
            None,
        )
        .await;
        assert_eq!(slack.forms.lock().unwrap().len(), 1);
        let submission = json!({"type": "view_submission", "user": {"id": "U0ALICE01"},
            "view": {"callback_id": "feedback.detail", "private_metadata": "{\"diagnosis_id\":\"dx-0123abcd\",\"judgement\":\"wrong\"}",
                     "state": {"values": {"causes": {"wrong_causes": {"selected_options": [{"value": "hpa.cannot_react"}, {"value": "pods.throttling"}]}},
                                          "note": {"what_was_it": {"value": "a noisy neighbour"}}}}}});
        let reply = send(&store, &slack, &body(&submission), None).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        let answers = store.answers.lock().unwrap();
        let answer = answers.values().next().unwrap();
        assert_eq!(answers.len(), 1, "the same person's answer is replaced");
        assert_eq!(answer.wrong_causes, vec![FindingId::HpaCannotReact]);
        assert_eq!(answer.note.as_deref(), Some("a noisy neighbour"));
    }

    #[tokio::test]
    async fn forged_unknown_malformed_and_replayed_requests_store_nothing() {
        let (store, slack) = (store(), RecordingSlack::default());
        let good = body(&click("feedback.right", "dx-0123abcd"));
        let forged = send(
            &store,
            &slack,
            &good,
            Some(&format!("v0={}", "0".repeat(64))),
        )
        .await;
        assert_eq!(forged.status, 401);
        let unknown = send(
            &store,
            &slack,
            &body(&click("feedback.right", "dx-ffff")),
            None,
        )
        .await;
        assert_eq!(unknown.status, 404);
        let malformed = send(&store, &slack, b"payload=%7B", None).await;
        assert_eq!(malformed.status, 400);
        let too_big = send(
            &store,
            &slack,
            &vec![b'a'; crate::feedback::MAX_BODY_BYTES + 1],
            None,
        )
        .await;
        assert_eq!(too_big.status, 413);
        assert!(store.answers.lock().unwrap().is_empty() && store.seen.lock().unwrap().is_empty());
        assert_eq!(send(&store, &slack, &good, None).await.status, 200);
        let replay = send(&store, &slack, &good, None).await;
        assert_eq!(replay.status, 409);
        assert_eq!(
            slack.updates.lock().unwrap().len(),
            1,
            "a replay changes nothing"
        );
    }
}
