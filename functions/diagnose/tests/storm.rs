//! An alarm storm against the local world: 200 state changes of 20 alarms on 3
//! load balancers within 10 s, through SNS to two warm instances of the
//! diagnose function (Lambda's asynchronous retries and failed-events queue
//! emulated), with CloudWatch throttling part of the reads and SNS refusing a
//! few publishes; diagnoses fan out to notify-slack (bot token, thread table).
//!
//! Nothing may be lost or doubled: every notification ends as exactly one
//! published report or in the failed-events queue, and Slack gets each report
//! once per channel. The figures (API calls per diagnosis against a lone
//! alarm, diagnoses per second) are printed for the closing note:
//! `cargo test -p diagnose --test storm -- --nocapture`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{LocalWorld, Options, requests_at};

const ALARMS: u32 = 20;
const LOAD_BALANCERS: u32 = 3;
const NOTIFICATIONS: u32 = 200;
const WITHIN_S: u32 = 10;

/// The AWS reads of one diagnosis (what the storm's own set-up calls are not).
fn diagnosis_reads(calls: &HashMap<String, u64>) -> BTreeMap<String, u64> {
    calls
        .iter()
        .filter(|(k, _)| {
            k.starts_with("monitoring:DescribeAlarm")
                || k.as_str() == "monitoring:GetMetricData"
                || k.starts_with("elasticloadbalancing:Describe")
                || k.starts_with("eks:")
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

fn total(calls: &BTreeMap<String, u64>) -> u64 {
    calls.values().sum()
}

fn storm_world() -> LocalWorld {
    let diagnose = PathBuf::from(env!("CARGO_BIN_EXE_diagnose"));
    let notify = diagnose.with_file_name("notify-slack");
    assert!(
        notify.exists(),
        "{} is missing: run the tests from the workspace root (cargo test --all-targets)",
        notify.display()
    );
    LocalWorld::up_with(
        "alb-flapping-worker-ceiling",
        Options {
            lambda_binary: Some(diagnose),
            // The topic only: the queue subscribed to it holds one copy of each report.
            lambda_env: vec![
                "DIAGNOSIS_QUEUE_URL=".to_owned(),
                "RUST_LOG=warn".to_owned(),
            ],
            lambda_instances: Some(2),
            lambda_retries: Some(2),
            notify: Some((notify, "bot")),
            // The storm is about delivery (nothing lost, nothing doubled), not charts:
            // drawing and uploading them for 200 reports in a debug build would only slow it.
            notify_env: vec!["RUST_LOG=warn".to_owned(), "SLACK_CHARTS=off".to_owned()],
            feedback_binary: None,
            // One email per incident.
            email_incidents: true,
            hold_seconds: None,
            digest_binary: None,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_200_notifications_loses_nothing_and_doubles_nothing() {
    let world = storm_world();
    let queue = world.var("DIAGNOSIS_QUEUE_URL").to_owned();
    let failed_queue = world.var("FAILED_EVENTS_QUEUE_URL").to_owned();

    // A lone alarm first: the baseline of AWS reads per diagnosis (cold caches).
    world.calls(true);
    world.deliver();
    let lone = world.drain_queue(&queue, 1, Duration::from_secs(60)).await;
    assert_eq!(lone.len(), 1, "the lone alarm's diagnosis");
    let lone_reads = diagnosis_reads(&world.calls(true));

    // The storm, with CloudWatch throttling some reads and SNS refusing some publishes.
    world.inject(json!([
        {"service": "monitoring", "operation": "GetMetricData", "status": 400, "code": "Throttling", "message": "Rate exceeded", "times": 60},
        {"service": "monitoring", "operation": "DescribeAlarmHistory", "status": 400, "code": "Throttling", "message": "Rate exceeded", "times": 30},
        {"service": "sns", "operation": "Publish", "status": 500, "code": "InternalFailure", "message": "injected", "times": 8}
    ]));
    let started = Instant::now();
    let fired = world.storm(ALARMS, LOAD_BALANCERS, NOTIFICATIONS, WITHIN_S);
    let fired_count = fired["fired"].as_u64().unwrap_or_default();
    assert_eq!(fired_count, u64::from(NOTIFICATIONS), "{fired}");

    let mut published: Vec<Value> = Vec::new();
    let mut failed: Vec<Value> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(150);
    while published.len() + failed.len() < NOTIFICATIONS as usize && Instant::now() < deadline {
        for body in world.drain_queue(&queue, 10, Duration::from_secs(2)).await {
            let envelope: Value = serde_json::from_str(&body).unwrap();
            published.push(serde_json::from_str(envelope["Message"].as_str().unwrap()).unwrap());
        }
        for body in world
            .drain_queue(&failed_queue, 1, Duration::from_secs(1))
            .await
        {
            failed.push(serde_json::from_str(&body).unwrap());
        }
    }
    let elapsed = started.elapsed();
    // Late duplicates would arrive after the count is reached: give them a moment.
    for body in world
        .drain_queue(&queue, usize::MAX, Duration::from_secs(3))
        .await
    {
        let envelope: Value = serde_json::from_str(&body).unwrap();
        published.push(serde_json::from_str(envelope["Message"].as_str().unwrap()).unwrap());
    }
    let storm_reads = diagnosis_reads(&world.calls(false));

    let ids: Vec<&str> = published
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    let distinct: BTreeSet<&str> = ids.iter().copied().collect();
    let transitions: BTreeSet<(String, String, String)> = published
        .iter()
        .map(|d| {
            (
                d["alarm"]["name"].as_str().unwrap().to_owned(),
                d["alarm"]["state_change_time"].to_string(),
                d["alarm"]["new_state"].to_string(),
            )
        })
        .collect();
    eprintln!(
        "storm: {NOTIFICATIONS} notifications fired in {:.1} s; {} published ({} distinct), {} in the failed-events queue; all accounted for after {:.1} s ({:.1} reports/s)",
        fired["firing_seconds"].as_f64().unwrap_or_default(),
        ids.len(),
        distinct.len(),
        failed.len(),
        elapsed.as_secs_f64(),
        distinct.len() as f64 / elapsed.as_secs_f64()
    );
    eprintln!(
        "AWS reads per report: lone alarm {} {lone_reads:?}; storm {:.1} ({} reads for {} reports) {storm_reads:?}",
        total(&lone_reads),
        total(&storm_reads) as f64 / distinct.len().max(1) as f64,
        total(&storm_reads),
        distinct.len()
    );

    assert_eq!(ids.len(), distinct.len(), "a report was published twice");
    assert_eq!(
        transitions.len(),
        distinct.len(),
        "one report per transition"
    );
    assert_eq!(
        distinct.len() + failed.len(),
        NOTIFICATIONS as usize,
        "every notification ends published or in the failed-events queue"
    );
    for record in &failed {
        assert_eq!(
            record["requestContext"]["condition"], "RetriesExhausted",
            "{record}"
        );
    }
    assert!(
        total(&storm_reads) < total(&lone_reads) * u64::from(NOTIFICATIONS),
        "shared lookups are cached in warm instances: {storm_reads:?} vs {lone_reads:?} for one"
    );

    // Slack: each report once per channel, however often notify-slack was retried.
    let slack = world.var("SLACK_LOCAL_URL").to_owned();
    // One notify-slack instance works through the backlog: each report is a first
    // message and its details in the thread, in every channel it goes to.
    let wait_until = Instant::now() + Duration::from_secs(150);
    let mut posts: BTreeMap<(String, String), u32> = BTreeMap::new();
    loop {
        posts.clear();
        for request in requests_at(&slack) {
            let ok = request["status"] == 200
                && request["answer"]
                    .as_str()
                    .is_some_and(|a| a.contains("\"ok\": true") || a.contains("\"ok\":true"));
            // The details reply under each first message carries its id too: count first messages.
            let details = request["payload"]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Details: "));
            // chat.update re-sends an incident's first message: not a post.
            if !ok || details || request["kind"] == "chat.update" {
                continue;
            }
            let text = request["payload"].to_string();
            let channel = request["payload"]["channel"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if let Some(id) = distinct.iter().find(|id| text.contains(**id)) {
                *posts.entry((channel, (*id).to_owned())).or_default() += 1;
            }
        }
        let posted_ids: BTreeSet<&str> = posts.keys().map(|(_, id)| id.as_str()).collect();
        if posted_ids.len() >= distinct.len() || Instant::now() > wait_until {
            eprintln!(
                "slack: {} reports posted to {} channel-report pairs, {:.1} s after the last was published",
                posted_ids.len(),
                posts.len(),
                (Instant::now() + Duration::from_secs(150) - wait_until).as_secs_f64()
            );
            assert_eq!(
                posted_ids.len(),
                distinct.len(),
                "every published report reached Slack"
            );
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let doubled: Vec<_> = posts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "posted more than once: {doubled:?}");

    // One incident, one thread: at most one top-level message per culprit and channel.
    let culprits: BTreeMap<String, String> = published
        .iter()
        .map(|d| {
            let report: alarm_triage::diagnosis::Diagnosis =
                serde_json::from_value(d.clone()).unwrap();
            (report.id.as_str().to_owned(), report.culprit())
        })
        .collect();
    let mut top_level: BTreeMap<(String, String), u32> = BTreeMap::new();
    let mut replies = 0;
    for request in requests_at(&slack) {
        let payload = &request["payload"];
        let first_message = request["kind"] == "web_api"
            && request["status"] == 200
            && !payload["text"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Details: ");
        if !first_message {
            continue;
        }
        if payload.get("thread_ts").is_some_and(|t| t.is_string()) {
            replies += 1;
            continue;
        }
        let text = payload.to_string();
        if let Some((_, culprit)) = culprits.iter().find(|(id, _)| text.contains(id.as_str())) {
            let channel = payload["channel"].as_str().unwrap_or_default().to_owned();
            *top_level.entry((culprit.clone(), channel)).or_default() += 1;
        }
    }
    eprintln!(
        "slack: {} top-level messages for {} reports ({} culprit-channel pairs), {replies} replies in threads",
        top_level.values().sum::<u32>(),
        distinct.len(),
        top_level.len()
    );
    let crowded: Vec<_> = top_level.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        crowded.is_empty(),
        "more than one top-level message for one culprit: {crowded:?}"
    );

    // Email: one per incident, more only where the severity rose.
    let mail: Vec<Value> = world
        .mailbox()
        .into_iter()
        .filter(|m| m["to"] == "oncall@example.com")
        .collect();
    let mut emails: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for m in &mail {
        let subject = m["subject"].as_str().unwrap();
        let label = subject
            .strip_prefix("[incident ")
            .and_then(|rest| rest.split_once("] "))
            .map(|(label, _)| label.to_owned())
            .unwrap_or_else(|| panic!("an email outside any incident: {subject}"));
        let entry = emails.entry(label).or_default();
        if subject.contains("] now ") {
            entry.1 += 1;
        } else {
            entry.0 += 1;
        }
    }
    eprintln!(
        "email: {} for {} reports: {} incidents, {} severity rises",
        mail.len(),
        distinct.len(),
        emails.len(),
        emails.values().map(|(_, raised)| raised).sum::<u32>()
    );
    let repeated: Vec<_> = emails
        .iter()
        .filter(|(_, (opened, _))| *opened > 1)
        .collect();
    assert!(
        repeated.is_empty(),
        "more than one opening email for one incident: {repeated:?}"
    );
    assert!(!emails.is_empty(), "the incidents were emailed");

    let attempts = world.invocations("invocations", 0, Duration::ZERO);
    let retried = attempts
        .iter()
        .filter(|r| r["attempt"].as_u64().unwrap_or(1) > 1)
        .count();
    eprintln!(
        "storm: {} invocations, {retried} of them Lambda's retries",
        attempts.len()
    );

    // A notification whose diagnosis can never be published ends in the
    // failed-events queue after Lambda's three attempts, and nowhere else.
    world.inject(json!([{"service": "sns", "operation": "Publish", "status": 500, "code": "InternalFailure", "message": "injected"}]));
    world.deliver_to(Some("OK")); // the world's alarm went to ALARM before the storm
    let parked = world
        .drain_queue(&failed_queue, 1, Duration::from_secs(60))
        .await;
    assert_eq!(parked.len(), 1, "the event is kept on failure");
    let record: Value = serde_json::from_str(&parked[0]).unwrap();
    assert_eq!(
        record["requestContext"]["approximateInvokeCount"], 3,
        "{record}"
    );
    assert_eq!(
        record["responseContext"]["functionError"], "Unhandled",
        "{record}"
    );
    assert!(
        record["requestPayload"]["Records"][0]["Sns"]["Message"]
            .as_str()
            .is_some_and(|m| m.contains(world.facts["alarm_name"].as_str().unwrap())),
        "the failed event carries the notification: {record}"
    );
    let stray = world
        .drain_queue(&queue, usize::MAX, Duration::from_secs(2))
        .await;
    assert!(stray.is_empty(), "nothing was published for it: {stray:?}");
}
