//! The Slack adapter against the local Slack (infra/local/slack_api.py), which
//! answers as Slack does (200 `ok`, 429 with Retry-After, 5xx, 4xx with
//! Slack's error strings) and records what it received. Payloads are snapshots.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use alarm_triage::adapters::slack::SlackWebhook;
use alarm_triage::diagnosis::Diagnosis;
use alarm_triage::notify::credentials::SlackCredentials;
use alarm_triage::notify::delivery::{Notifier, Posted, RetryPolicy};
use alarm_triage::notify::route::Routes;
use alarm_triage::notify::thread::NoThreads;
use alarm_triage::{Error, Result};
use secrecy::SecretString;
use serde_json::{Value, json};
use support::LocalSlack;

const ROUTES: &str = r##"[
    {"classification": ["sustained"], "severity": ["critical"], "channel": "#oncall", "mention": "here", "continue": true},
    {"channel": "#alerts"}
]"##;

fn fixture(name: &str) -> Diagnosis {
    let path = format!(
        "{}/tests/fixtures/diagnosis-{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn webhooks(slack: &LocalSlack) -> SlackCredentials {
    SlackCredentials::Webhooks(
        slack
            .webhooks
            .iter()
            .map(|(c, u)| (c.clone(), SecretString::from(u.clone())))
            .collect::<BTreeMap<_, _>>(),
    )
}

fn notifier(
    slack: &LocalSlack,
    credentials: SlackCredentials,
) -> Notifier<SlackWebhook, NoThreads> {
    Notifier {
        poster: SlackWebhook::new(credentials, format!("{}/api", slack.url)).unwrap(),
        threads: NoThreads,
        routes: Routes::parse(Some(ROUTES), "#alerts").unwrap(),
        thread_lifetime: chrono::Duration::hours(24),
        retry: RetryPolicy {
            request_timeout: Duration::from_secs(3),
            ..RetryPolicy::default()
        },
        attachments: alarm_triage::notify::delivery::no_attachments,
        incident_window: None,
        hold_seconds: 0,
    }
}

async fn notify(
    slack: &LocalSlack,
    credentials: SlackCredentials,
    d: &Diagnosis,
    within: Duration,
) -> Result<Vec<Posted>> {
    notifier(slack, credentials)
        .notify(d, chrono::Utc::now(), tokio::time::Instant::now() + within)
        .await
}

/// Posts world 1's diagnosis (flapping: one route, #alerts) through the webhooks.
async fn post_flapping(slack: &LocalSlack, within: Duration) -> Result<Vec<Posted>> {
    notify(
        slack,
        webhooks(slack),
        &fixture("alb-flapping-worker-ceiling"),
        within,
    )
    .await
}

/// A request as the snapshot keeps it: where it went, what it carried, what Slack answered.
fn recorded(request: &Value) -> Value {
    json!({
        "kind": request["kind"],
        "webhook": request["webhook"],
        "authorization": request["authorization"],
        "status": request["status"],
        "payload": request["payload"],
    })
}

#[tokio::test]
async fn diagnoses_reach_the_webhooks_of_their_routes_as_snapshotted() {
    let slack = LocalSlack::start(&["#alerts", "#oncall"]);
    let mut requests: Vec<Value> = Vec::new();
    for name in ["alb-flapping-worker-ceiling", "alb-sustained-hot-pod"] {
        let posted = notify(
            &slack,
            webhooks(&slack),
            &fixture(name),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert!(
            posted.iter().all(|p| p.attempts == 1 && !p.as_text),
            "{posted:?}"
        );
        // One diagnosis's channels are posted to concurrently: order them by channel.
        let mut new: Vec<Value> = slack.requests().split_off(requests.len());
        new.sort_by_key(|r| r["webhook"].as_str().unwrap_or_default().to_owned());
        requests.extend(new);
    }
    let channels: Vec<&str> = requests
        .iter()
        .map(|r| r["webhook"].as_str().unwrap())
        .collect();
    // Flapping goes to #alerts; a critical sustained alarm pages #oncall and also reaches #alerts.
    assert_eq!(channels, ["#alerts", "#alerts", "#oncall"]);
    assert!(
        requests
            .iter()
            .all(|r| r["status"] == 200 && r["answer"] == "ok")
    );
    assert!(
        requests[2]["payload"]["text"]
            .as_str()
            .unwrap()
            .starts_with("<!here> ")
    );
    assert!(!requests[1]["payload"].to_string().contains("<!here>"));
    insta::assert_json_snapshot!(
        "slack_webhook_posts",
        requests.iter().map(recorded).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn the_web_api_gets_the_bot_token_and_the_channel() {
    let slack = LocalSlack::start(&[]);
    let token = SlackCredentials::BotToken(SecretString::from(slack.bot_token.clone()));
    let posted = notify(
        &slack,
        token,
        &fixture("alb-flapping-worker-ceiling"),
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert_eq!(posted[0].channel_id.as_deref(), Some("C0ALERTS01"));
    assert!(posted[0].ts.is_some());
    let requests = slack.requests();
    assert_eq!(requests[0]["authorization"], "valid");
    assert_eq!(requests[0]["payload"]["channel"], "#alerts");
    assert!(
        requests[0]["payload"]["blocks"].as_array().unwrap().len()
            <= alarm_triage::render::slack::FIRST_MESSAGE_BLOCKS
    );
    // The details follow as a reply in the first message's thread, where Slack put it.
    assert_eq!(requests.len(), 2, "the first message and its details");
    assert!(
        requests[1]["answer"]
            .as_str()
            .unwrap()
            .contains("\"ok\": true"),
        "{}",
        requests[1]["answer"]
    );
    assert_eq!(requests[1]["payload"]["channel"], "C0ALERTS01");
    assert_eq!(
        requests[1]["payload"]["thread_ts"].as_str(),
        posted[0].ts.as_deref()
    );
    insta::assert_json_snapshot!("slack_web_api_post", recorded(&requests[0]));
    insta::assert_json_snapshot!("slack_web_api_details", recorded(&requests[1]));
}

/// The charts, as notify-slack attaches them.
fn charts(d: &Diagnosis) -> Vec<alarm_triage::notify::delivery::Attachment> {
    alarm_triage::charts::charts(d)
        .unwrap()
        .into_iter()
        .map(|c| alarm_triage::notify::delivery::Attachment {
            file_name: c.file_name,
            title: c.title,
            bytes: c.png,
        })
        .collect()
}

#[tokio::test]
async fn charts_are_uploaded_into_the_first_messages_thread_as_slack_validates_them() {
    let slack = LocalSlack::start(&[]);
    let token = SlackCredentials::BotToken(SecretString::from(slack.bot_token.clone()));
    let n = Notifier {
        attachments: charts,
        incident_window: None,
        hold_seconds: 0,
        ..notifier(&slack, token)
    };
    let posted = n
        .notify(
            &fixture("alb-flapping-worker-ceiling"),
            chrono::Utc::now(),
            tokio::time::Instant::now() + Duration::from_secs(20),
        )
        .await
        .unwrap();
    let first_ts = posted[0].ts.clone().unwrap();
    let requests = slack.requests();
    let kinds: Vec<&str> = requests
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "web_api",
            "web_api",
            "files.getUploadURLExternal",
            "upload",
            "files.completeUploadExternal",
            "files.getUploadURLExternal",
            "upload",
            "files.completeUploadExternal"
        ],
        "first message, details, then each chart in three steps"
    );
    for r in &requests[2..] {
        assert_eq!(r["status"], 200, "{r:#}");
        if r["kind"] != "upload" {
            assert_eq!(r["authorization"], "valid");
            assert!(
                r["answer"].as_str().unwrap().contains("\"ok\": true"),
                "{r:#}"
            );
        } else {
            assert_eq!(
                r["authorization"], "missing",
                "the token never goes to the upload URL"
            );
            assert_eq!(r["png_size"], json!([960, 480]));
        }
    }
    let completed = &requests[4]["payload"];
    assert_eq!(completed["thread_ts"], first_ts.as_str());
    assert_eq!(completed["channel_id"], "C0ALERTS01");
    assert!(
        completed["files"][0]["title"]
            .as_str()
            .unwrap()
            .contains("vs threshold 0.8 s")
    );
}

#[tokio::test]
async fn a_wrong_bot_token_fails_for_good_and_says_to_rotate_it() {
    let slack = LocalSlack::start(&[]);
    let token = SlackCredentials::BotToken(SecretString::from("xoxb-wrong".to_owned()));
    let e = notify(
        &slack,
        token,
        &fixture("alb-flapping-worker-ceiling"),
        Duration::from_secs(10),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, Error::SlackRejected { .. }), "{e}");
    assert!(
        e.to_string().contains("invalid_auth") && e.to_string().contains("rotate"),
        "{e}"
    );
    assert!(!e.to_string().contains("xoxb-wrong"));
}

#[tokio::test]
async fn a_rate_limited_post_waits_for_retry_after_then_lands() {
    let slack = LocalSlack::start(&["#alerts"]);
    slack.script(json!([
        {"status": 429, "retry_after": 1, "body": "rate_limited"},
        {"status": 503, "body": ""},
    ]));
    let posted = post_flapping(&slack, Duration::from_secs(15))
        .await
        .unwrap();
    assert_eq!(posted[0].attempts, 3);
    let requests = slack.requests();
    let statuses: Vec<u64> = requests
        .iter()
        .map(|r| r["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [429, 503, 200]);
    let waited =
        requests[1]["received_at"].as_f64().unwrap() - requests[0]["received_at"].as_f64().unwrap();
    assert!(
        waited >= 0.95,
        "the retry came {waited:.3} s after the 429 that asked for 1 s"
    );
    // Every attempt carried the same message.
    assert_eq!(requests[0]["payload"], requests[2]["payload"]);
}

#[tokio::test]
async fn a_removed_webhook_fails_the_delivery_naming_no_service() {
    let slack = LocalSlack::start(&["#alerts"]);
    slack.script(json!([{"status": 404, "body": "no_service"}]));
    let e = post_flapping(&slack, Duration::from_secs(10))
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(!e.is_retryable());
    assert_eq!(e.kind(), "slack_rejected");
    assert!(
        text.contains("404 no_service") && text.contains("webhook for #alerts"),
        "{text}"
    );
    assert!(
        !text.contains(&slack.webhooks["#alerts"]),
        "the webhook URL leaked into the error"
    );
    assert_eq!(
        slack.requests().len(),
        1,
        "a permanent refusal is not retried"
    );
}

#[tokio::test]
async fn a_revoked_webhook_fails_the_delivery_naming_invalid_token() {
    let slack = LocalSlack::start(&["#alerts"]);
    slack.script(json!([{"status": 403, "body": "invalid_token"}]));
    let e = post_flapping(&slack, Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("403 invalid_token"), "{e}");
}

#[tokio::test]
async fn refused_blocks_are_sent_once_more_as_plain_text() {
    let slack = LocalSlack::start(&["#alerts"]);
    slack.script(json!([{"status": 400, "body": "invalid_blocks"}]));
    let posted = post_flapping(&slack, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(posted[0].as_text);
    let requests = slack.requests();
    assert!(requests[1]["payload"].get("blocks").is_none());
    let text = requests[1]["payload"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("```Flapping: ") && text.ends_with("```"),
        "{text}"
    );
    insta::assert_json_snapshot!("slack_plain_text_fallback", recorded(&requests[1]));
}

#[tokio::test]
async fn blocks_refused_twice_fail_the_delivery_for_good() {
    let slack = LocalSlack::start(&["#alerts"]);
    slack.script(json!([{"status": 400, "body": "invalid_blocks"}, {"status": 400, "body": "invalid_blocks"}]));
    let e = post_flapping(&slack, Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("invalid_blocks"), "{e}");
    assert_eq!(slack.requests().len(), 2);
}

#[tokio::test]
async fn slack_that_stays_down_fails_before_the_deadline_and_can_be_retried() {
    let slack = LocalSlack::start(&["#alerts"]);
    slack.script(json!([{"status": 503}, {"status": 503}, {"status": 503}, {"status": 503}, {"status": 503}, {"status": 503}]));
    let started = std::time::Instant::now();
    let e = post_flapping(&slack, Duration::from_secs(3))
        .await
        .unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert_eq!(e.kind(), "slack_unavailable");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "gave up at the deadline, not after it"
    );
    assert!(e.to_string().contains("503"), "{e}");
}

#[tokio::test]
async fn an_unreachable_slack_is_retryable_and_says_it_could_not_connect() {
    let slack = LocalSlack::start(&["#alerts"]);
    let credentials = webhooks(&slack);
    let api_url = format!("{}/api", slack.url);
    drop(slack); // nothing listens at its port any more
    let n = Notifier {
        poster: SlackWebhook::new(credentials, api_url).unwrap(),
        threads: NoThreads,
        routes: Routes::parse(None, "#alerts").unwrap(),
        thread_lifetime: chrono::Duration::hours(1),
        retry: RetryPolicy::default(),
        attachments: alarm_triage::notify::delivery::no_attachments,
        incident_window: None,
        hold_seconds: 0,
    };
    let e = n
        .notify(
            &fixture("alb-flapping-worker-ceiling"),
            chrono::Utc::now(),
            tokio::time::Instant::now() + Duration::from_secs(2),
        )
        .await
        .unwrap_err();
    assert!(
        e.is_retryable() && e.to_string().contains("could not connect"),
        "{e}"
    );
}
