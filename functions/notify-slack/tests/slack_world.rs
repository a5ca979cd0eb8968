//! End to end, both functions: a world's alarm changes state in moto, SNS
//! invokes diagnose (under cargo-lambda's emulator), diagnose publishes to the
//! diagnosis topic, and the topic fans out to notify-slack (posting to the
//! local Slack with the secret it reads from Secrets Manager or SSM) and to
//! email subscribers (kept in moto's mailbox, filter policies applied).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use support::{LocalWorld, Options, requests_at};

const WAIT: Duration = Duration::from_secs(60);

/// The diagnose binary next to this package's. `cargo test` at the
/// workspace root builds both; `cargo test -p notify-slack` alone does not,
/// so it is built here once, with the same cargo, profile and target folder.
fn diagnose_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let own = PathBuf::from(env!("CARGO_BIN_EXE_notify-slack"));
            let path = own.with_file_name("diagnose");
            if path.exists() {
                return path;
            }
            let profile_dir = own.parent().expect("the binary sits in a profile folder");
            let target_dir = profile_dir
                .parent()
                .expect("the profile folder sits in the target folder");
            let mut build = std::process::Command::new(option_env!("CARGO").unwrap_or("cargo"));
            build
                .args(["build", "-p", "diagnose", "--target-dir"])
                .arg(target_dir)
                .current_dir(env!("CARGO_MANIFEST_DIR"));
            if profile_dir.file_name().is_some_and(|p| p == "release") {
                build.arg("--release");
            }
            let status = build.status().expect("cargo runs");
            assert!(
                status.success() && path.exists(),
                "cargo build -p diagnose failed ({status})"
            );
            path
        })
        .clone()
}

fn world(name: &str, mode: &'static str, notify_env: &[&str]) -> LocalWorld {
    LocalWorld::up_with(
        name,
        Options {
            lambda_binary: Some(diagnose_binary()),
            // Publish to the topic only: the queue receives it through its subscription.
            lambda_env: vec!["DIAGNOSIS_QUEUE_URL=".to_owned()],
            notify: Some((PathBuf::from(env!("CARGO_BIN_EXE_notify-slack")), mode)),
            // Debug logging everywhere in notify-slack: the secret must not appear even there.
            notify_env: notify_env
                .iter()
                .map(|s| (*s).to_owned())
                .chain(["RUST_LOG=debug".to_owned()])
                .collect(),
            ..Options::default()
        },
    )
}

/// Waits until notify-slack has been invoked `n` times and returns the records.
fn notified(world: &LocalWorld, n: usize) -> Vec<Value> {
    let diagnosed = world.invocations("invocations", n, WAIT);
    assert_eq!(
        diagnosed.len(),
        n,
        "diagnose log:\n{}",
        world.log("diagnose")
    );
    assert!(
        diagnosed.iter().all(|r| r["function_error"].is_null()),
        "{diagnosed:?}\n{}",
        world.log("diagnose")
    );
    let records = world.invocations("notify-slack-invocations", n, WAIT);
    assert_eq!(
        records.len(),
        n,
        "notify-slack was not invoked {n} times; its log:\n{}",
        world.log("notify-slack")
    );
    records
}

/// The first messages Slack received (the details replies are in [`details_requests`]).
fn slack_requests(world: &LocalWorld) -> Vec<Value> {
    requests_at(world.var("SLACK_LOCAL_URL"))
        .into_iter()
        .filter(|r| is_message(r) && !is_details(r))
        .collect()
}

/// Messages (webhooks, chat.postMessage), not file uploads.
fn is_message(request: &Value) -> bool {
    request["kind"] == "web_api" || request["kind"] == "webhook"
}

/// The chart uploads' three steps, in order.
fn upload_requests(world: &LocalWorld) -> Vec<Value> {
    requests_at(world.var("SLACK_LOCAL_URL"))
        .into_iter()
        .filter(|r| !is_message(r))
        .collect()
}

/// The details replies that follow each first message in bot mode.
fn details_requests(world: &LocalWorld) -> Vec<Value> {
    requests_at(world.var("SLACK_LOCAL_URL"))
        .into_iter()
        .filter(|r| is_message(r) && is_details(r))
        .collect()
}

fn is_details(request: &Value) -> bool {
    request["payload"]["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("Details: "))
}

fn mail_to(world: &LocalWorld, address: &str) -> Vec<Value> {
    world
        .mailbox()
        .into_iter()
        .filter(|m| m["to"] == address)
        .collect()
}

/// The Lambda SNS event for an SNS envelope, as SNS would invoke the function.
fn lambda_sns_event(envelope: &Value) -> Value {
    json!({"Records": [{
        "EventSource": "aws:sns",
        "EventVersion": "1.0",
        "EventSubscriptionArn": format!("{}:redelivery", envelope["TopicArn"].as_str().unwrap()),
        "Sns": {
            "Type": "Notification",
            "MessageId": envelope["MessageId"],
            "TopicArn": envelope["TopicArn"],
            "Subject": envelope["Subject"],
            "Message": envelope["Message"],
            "Timestamp": envelope["Timestamp"],
            "SignatureVersion": "1",
            "Signature": "EXAMPLE",
            "SigningCertUrl": "https://sns.local/cert.pem",
            "UnsubscribeUrl": "https://sns.local/unsubscribe",
            "MessageAttributes": envelope.get("MessageAttributes").cloned().unwrap_or(json!({})),
        }
    }]})
}

/// No line of any log the stack wrote (both functions at debug level, the
/// bridges, the emulators, moto, the local Slack) contains a secret.
fn assert_no_secret_in_logs(world: &LocalWorld) {
    let secrets: Vec<String> = world.facts["slack_secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    assert!(secrets.len() >= 3 && secrets.iter().all(|s| s.len() >= 20));
    let files = world.log_files();
    assert!(files.len() >= 8, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            for secret in &secrets {
                assert!(
                    !line.contains(secret.as_str()),
                    "{}:{} contains a Slack secret",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}

#[tokio::test]
async fn world_1_reaches_the_alerts_channel_and_the_oncall_inbox() {
    let world = world("alb-flapping-worker-ceiling", "webhook", &[]);
    world.deliver();
    let records = notified(&world, 1);
    assert!(
        records[0]["function_error"].is_null(),
        "{}\n{}",
        records[0],
        world.log("notify-slack")
    );

    // Slack: one post, through the #alerts webhook the secret names, no mention (flapping).
    let requests = slack_requests(&world);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let post = &requests[0];
    assert_eq!(
        (
            post["kind"].as_str(),
            post["webhook"].as_str(),
            post["status"].as_u64()
        ),
        (Some("webhook"), Some("#alerts"), Some(200))
    );
    let payload = &post["payload"];
    let blocks = payload["blocks"].as_array().unwrap();
    // Flapping, yet critical: checkout's users wait seconds for many minutes (docs/severity.md).
    assert_eq!(
        blocks[0]["text"]["text"],
        "FLAPPING · critical · k8s-shopfront-alb-target-response-time"
    );
    let whole = payload.to_string();
    assert!(
        whole.contains("k8s-shop-checkout-8a1f2c3d4e"),
        "the culprit target group is named"
    );
    assert!(!whole.contains("<!here>") && !whole.contains("<!channel>"));
    assert!(
        blocks.iter().any(|b| b["type"] == "actions"),
        "console links as buttons"
    );

    // Email: the oncall address hears everything; the escalations address only sustained alarms.
    let mail = mail_to(&world, "oncall@example.com");
    assert_eq!(mail.len(), 1, "{:#?}", world.mailbox());
    let subject = mail[0]["subject"].as_str().unwrap();
    assert_eq!(subject, "[flapping] k8s-shopfront-alb-target-response-time");
    assert!(subject.len() <= 100 && subject.is_ascii() && !subject.contains('\n'));
    let body = mail[0]["body"].as_str().unwrap();
    assert!(
        body.starts_with("Flapping: k8s-shopfront-alb-target-response-time"),
        "verdict first:\n{body}"
    );
    assert!(
        body.contains("https://") && body.contains("console.aws.amazon.com"),
        "console links:\n{body}"
    );
    assert!(
        !body.contains("<html") && !body.contains("<br"),
        "plain text, no HTML"
    );
    assert!(body.contains("k8s-shop-checkout-8a1f2c3d4e"));
    assert!(
        mail_to(&world, "escalations@example.com").is_empty(),
        "filtered out: not sustained"
    );

    assert_no_secret_in_logs(&world);
}

#[tokio::test]
async fn world_3_pages_oncall_and_threads_the_resolution_under_it() {
    let world = world("alb-sustained-hot-pod", "bot", &[]);
    world.deliver();
    let first = notified(&world, 1);
    assert!(
        first[0]["function_error"].is_null(),
        "{}\n{}",
        first[0],
        world.log("notify-slack")
    );

    let mut requests = slack_requests(&world);
    // The channels are posted to concurrently: order them by channel.
    requests.sort_by_key(|r| {
        r["payload"]["channel"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    });
    let channels: Vec<&str> = requests
        .iter()
        .map(|r| r["payload"]["channel"].as_str().unwrap())
        .collect();
    assert_eq!(
        channels,
        ["#alerts", "#oncall"],
        "critical and sustained: #oncall and #alerts"
    );
    assert!(
        requests
            .iter()
            .all(|r| r["authorization"] == "valid" && r["status"] == 200)
    );
    assert!(
        requests[1]["payload"]["text"]
            .as_str()
            .unwrap()
            .starts_with("<!here> ")
    );
    assert!(!requests[0]["payload"].to_string().contains("<!here>"));
    assert!(
        requests
            .iter()
            .all(|r| r["payload"].get("thread_ts").is_none())
    );
    // Each first message holds at most 10 blocks; its details follow in its thread.
    assert!(requests.iter().all(|r| {
        r["payload"]["blocks"].as_array().unwrap().len()
            <= alarm_triage::render::slack::FIRST_MESSAGE_BLOCKS
    }));
    let details = details_requests(&world);
    assert_eq!(details.len(), 2, "{details:#?}");
    // The charts follow in each thread: the latency and the pods' CPU, as PNGs.
    let uploads = upload_requests(&world);
    let completed: Vec<&Value> = uploads
        .iter()
        .filter(|u| u["kind"] == "files.completeUploadExternal")
        .collect();
    assert_eq!(completed.len(), 4, "{uploads:#?}");
    assert!(uploads.iter().all(|u| u["status"] == 200), "{uploads:#?}");
    for done in &completed {
        assert!(
            done["answer"].as_str().unwrap().contains("\"ok\": true"),
            "{done:#}"
        );
        assert!(
            requests
                .iter()
                .any(|f| f["ts"] == done["payload"]["thread_ts"]
                    && f["channel_id"] == done["payload"]["channel_id"]),
            "a chart in a thread without its first message: {done:#}"
        );
    }
    assert!(
        uploads
            .iter()
            .filter(|u| u["kind"] == "upload")
            .all(|u| u["png_size"] == json!([960, 480])),
        "{uploads:#?}"
    );
    for reply in &details {
        let first = requests
            .iter()
            .find(|f| f["channel_id"] == reply["payload"]["channel"])
            .unwrap_or_else(|| panic!("details without a first message: {reply:#}"));
        assert_eq!(reply["payload"]["thread_ts"], first["ts"], "{reply:#}");
    }
    let escalations = mail_to(&world, "escalations@example.com");
    assert_eq!(escalations.len(), 1, "sustained passes the filter policy");
    assert!(
        escalations[0]["subject"]
            .as_str()
            .unwrap()
            .starts_with("[sustained] ")
    );

    // The alarm recovers: the resolution is a reply under each first message.
    world.deliver_to(Some("OK"));
    let second = notified(&world, 2);
    assert!(
        second[1]["function_error"].is_null(),
        "{}\n{}",
        second[1],
        world.log("notify-slack")
    );
    let requests = slack_requests(&world);
    assert_eq!(requests.len(), 4, "{requests:#?}");
    // Both channels get it: #alerts by its route, #oncall because its thread is open.
    for reply in &requests[2..] {
        let first = requests[..2]
            .iter()
            .find(|f| f["channel_id"] == reply["payload"]["channel"])
            .unwrap_or_else(|| panic!("a reply in a channel without a first message: {reply:#}"));
        assert_eq!(reply["payload"]["thread_ts"], first["ts"], "{reply:#}");
        assert!(
            !reply["payload"].to_string().contains("<!here>"),
            "a resolution pages nobody"
        );
    }
    let replied: std::collections::BTreeSet<&str> = requests[2..]
        .iter()
        .map(|r| r["payload"]["channel"].as_str().unwrap())
        .collect();
    assert_eq!(replied.len(), 2);

    // SNS delivers the first diagnosis again (at-least-once delivery, or a
    // Lambda retry): nothing is posted twice.
    let first_envelope = world.diagnosis_envelopes(WAIT).await.remove(0);
    let answer = support::http(
        world.var("NOTIFY_INVOKE_URL"),
        "POST",
        "/2015-03-31/functions/_/invocations",
        &lambda_sns_event(&first_envelope).to_string(),
    );
    let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let again = body["posted"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(again.len(), 2, "{body}");
    assert!(again.iter().all(|p| p["already_posted"] == true), "{body}");
    assert_eq!(slack_requests(&world).len(), 4, "no new post");

    // The threads are remembered in DynamoDB, with the expiry DynamoDB's TTL reads.
    let dynamodb = aws_sdk_dynamodb::Client::new(&world.sdk_config().await);
    let items = dynamodb
        .scan()
        .table_name("alarm-triage-slack-threads")
        .send()
        .await
        .unwrap();
    let keys: Vec<&str> = items
        .items()
        .iter()
        .map(|i| i["thread_key"].as_s().unwrap().as_str())
        .collect();
    let threads = keys
        .iter()
        .filter(|k| k.starts_with("arn:aws:cloudwatch:"))
        .count();
    let deliveries = keys.iter().filter(|k| k.starts_with("posted|dx-")).count();
    assert_eq!((threads, deliveries), (2, 4), "{keys:?}");
    assert!(items.items().iter().all(|i| i["expires_at"].as_n().is_ok()));

    // Its one alarm is OK: each incident's first message now says it resolved.
    let answer = support::http(
        world.var("SLACK_LOCAL_URL"),
        "GET",
        "/_recorder/messages",
        "",
    );
    let messages: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let headers: Vec<String> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["blocks"][0]["text"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(headers.len(), 2, "{messages}");
    assert!(
        headers.iter().all(|h| h.starts_with("Resolved after ")),
        "{headers:?}"
    );
    let seen_line = |request: &Value| {
        request["payload"]["blocks"]
            .as_array()
            .and_then(|b| b.iter().find(|b| b["block_id"] == "seen-before"))
            .map(|b| b["elements"][0]["text"].as_str().unwrap().to_owned())
    };
    let firsts = slack_requests(&world);
    assert_eq!(
        seen_line(&firsts[0]).as_deref(),
        Some("First time in 90 days")
    );

    // It fires again: the report says it was seen before, and links the first.
    world.deliver_to(Some("ALARM"));
    let third = notified(&world, 3);
    assert!(
        third[2]["function_error"].is_null(),
        "{}",
        world.log("notify-slack")
    );
    let again = slack_requests(&world);
    let line = seen_line(again.last().unwrap()).expect("a seen-before line");
    assert!(
        line.starts_with("2nd time in 7 days; the same cause (")
            && line.contains("earlier: <https://slack.com/archives/"),
        "{line}"
    );
    assert_no_secret_in_logs(&world);
}

/// Eight diagnoses about one culprit arrive at once: exactly one opens the
/// incident, the seven others join it, through the SDK against the local
/// DynamoDB (whose conditional writes are atomic per item, as the service's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_diagnoses_about_one_culprit_open_one_incident() {
    use alarm_triage::adapters::dynamodb::DynamoDbThreads;
    use alarm_triage::notify::incident::{IncidentKey, IncidentStore, Opening};

    let world = world("alb-flapping-worker-ceiling", "bot", &[]);
    let store = DynamoDbThreads::new(
        &world.sdk_config().await,
        "alarm-triage-slack-threads".to_owned(),
    );
    let key = IncidentKey::new("service:shop/checkout", "#alerts");
    let now = chrono::Utc::now();
    let window = chrono::Duration::minutes(30);
    let alarms: Vec<String> = (0..8).map(|i| format!("checkout-alarm-{i}")).collect();
    let tasks: Vec<_> = alarms
        .iter()
        .enumerate()
        .map(|(i, alarm)| {
            let (store, key, alarm) = (store.clone(), key.clone(), alarm.clone());
            tokio::spawn(async move {
                store
                    .open_or_join(&key, &alarm, &format!("dx-{i}"), now, window)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut opened = 0;
    for task in tasks {
        if task.await.unwrap() == Opening::Opened {
            opened += 1;
        }
    }
    assert_eq!(opened, 1, "exactly one diagnosis opens the incident");
    let incident = store.find_incident(&key).await.unwrap().unwrap();
    assert_eq!(incident.alarms.len(), 8, "{incident:?}");
    // After the window, the same culprit opens a new incident.
    let later = store
        .open_or_join(
            &key,
            "checkout-alarm-9",
            "dx-9",
            now + window + chrono::Duration::minutes(1),
            window,
        )
        .await
        .unwrap();
    assert_eq!(later, Opening::Opened);
}

#[tokio::test]
async fn a_permanent_slack_refusal_fails_the_invocation_naming_the_cause() {
    let world = world("alb-flapping-worker-ceiling", "webhook", &[]);
    let script = json!({"answers": [{"status": 404, "body": "no_service"}]}).to_string();
    support::http(
        world.var("SLACK_LOCAL_URL"),
        "POST",
        "/_recorder/script",
        &script,
    );
    world.deliver();
    let records = notified(&world, 1);
    assert_eq!(records[0]["function_error"], "Unhandled", "{}", records[0]);
    let error: Value = serde_json::from_str(records[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(error["errorType"], "slack_rejected", "{error}");
    let message = error["errorMessage"].as_str().unwrap();
    assert!(
        message.contains("404 no_service") && message.contains("webhook for #alerts"),
        "{message}"
    );
    assert!(message.contains("diagnosis dx-"), "{message}");
    // Email does not depend on Slack.
    assert_eq!(mail_to(&world, "oncall@example.com").len(), 1);
    assert_no_secret_in_logs(&world);
}

#[tokio::test]
async fn a_missing_secret_fails_the_invocation_naming_the_secret() {
    let world = world(
        "alb-flapping-worker-ceiling",
        "webhook",
        &["SLACK_SECRET_ID=alarm-triage/does-not-exist"],
    );
    world.deliver();
    let records = notified(&world, 1);
    assert_eq!(records[0]["function_error"], "Unhandled", "{}", records[0]);
    let error: Value = serde_json::from_str(records[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(error["errorType"], "slack_secret", "{error}");
    assert!(
        error["errorMessage"]
            .as_str()
            .unwrap()
            .contains("alarm-triage/does-not-exist"),
        "{error}"
    );
    assert!(slack_requests(&world).is_empty());
}

/// A world with likely transients held `seconds` and one email per incident.
fn holding_world(name: &str, seconds: u32) -> LocalWorld {
    LocalWorld::up_with(
        name,
        Options {
            lambda_binary: Some(diagnose_binary()),
            lambda_env: vec!["DIAGNOSIS_QUEUE_URL=".to_owned()],
            notify: Some((PathBuf::from(env!("CARGO_BIN_EXE_notify-slack")), "bot")),
            hold_seconds: Some(seconds),
            email_incidents: true,
            ..Options::default()
        },
    )
}

/// The diagnose function's answer to its `n`th invocation from SNS.
fn diagnosed(world: &LocalWorld, n: usize) -> Value {
    let records = world.invocations("invocations", n, WAIT);
    assert_eq!(records.len(), n, "diagnose log:\n{}", world.log("diagnose"));
    let record = &records[n - 1];
    assert!(record["function_error"].is_null(), "{record}");
    serde_json::from_str(record["body"].as_str().unwrap()).unwrap()
}

/// The held diagnoses the hold queue handed back, once `n` came back.
fn released(world: &LocalWorld, n: usize) -> Vec<Value> {
    let records = world.invocations("hold-invocations", n, WAIT);
    assert_eq!(records.len(), n, "diagnose log:\n{}", world.log("diagnose"));
    assert!(
        records
            .iter()
            .all(|r| r["function_error"].is_null() && r["failures"] == json!([])),
        "{records:#?}\n{}",
        world.log("diagnose")
    );
    records
}

/// Asserts the first diagnosis was held (a transient below critical), not published.
fn assert_held(answer: &Value) {
    let d = &answer["diagnoses"][0];
    assert_eq!(d["classification"]["behaviour"], "transient", "{d:#}");
    assert_ne!(d["severity"], "critical");
    let detail = answer["records"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("[published: held:"), "{detail}");
}

#[tokio::test]
async fn a_held_transient_that_clears_is_one_quiet_line_and_no_email() {
    let world = holding_world("alb-every-group-slow-two-minutes", 15);
    world.deliver();
    assert_held(&diagnosed(&world, 1));
    // Back to OK within the hold: its resolution goes out at once.
    world.deliver_to(Some("OK"));
    let resolution = diagnosed(&world, 2);
    assert_eq!(
        resolution["records"][0]["outcome"], "resolved",
        "{resolution:#}"
    );
    let returned = released(&world, 1);
    assert!(
        returned[0]["body"]
            .as_str()
            .unwrap()
            .contains("\"diagnosed\""),
        "{returned:#?}"
    );
    // notify-slack heard the resolution and the quiet line.
    let records = world.invocations("notify-slack-invocations", 2, WAIT);
    assert_eq!(records.len(), 2, "{}", world.log("notify-slack"));
    assert!(
        records.iter().all(|r| r["function_error"].is_null()),
        "{records:#?}"
    );
    let messages = slack_requests(&world);
    assert_eq!(
        messages.len(),
        1,
        "only the quiet line (the resolution had no thread to go to): {messages:#?}"
    );
    let line = messages[0]["payload"]["text"].as_str().unwrap();
    assert!(
        line.contains("cleared within the 1-minute hold") && line.ends_with("not paged"),
        "{line}"
    );
    assert!(messages[0]["payload"]["channel"] == "#alerts");
    assert!(
        details_requests(&world).is_empty(),
        "no details for a quiet line"
    );
    assert_eq!(
        mail_to(&world, "oncall@example.com"),
        Vec::<Value>::new(),
        "no email for a blip: neither the held report nor its resolution"
    );
}

#[tokio::test]
async fn a_held_transient_still_firing_is_posted_whole_and_marked_held() {
    let world = holding_world("alb-every-group-slow-two-minutes", 3);
    world.deliver();
    assert_held(&diagnosed(&world, 1));
    released(&world, 1);
    let records = world.invocations("notify-slack-invocations", 1, WAIT);
    assert!(
        records[0]["function_error"].is_null(),
        "{}",
        world.log("notify-slack")
    );
    let messages = slack_requests(&world);
    assert_eq!(messages.len(), 1, "{messages:#?}");
    let header = messages[0]["payload"]["blocks"][0]["text"]["text"]
        .as_str()
        .unwrap();
    assert!(
        header.starts_with("TRANSIENT · ") && header.ends_with(" · held 1 min"),
        "{header}"
    );
    assert_eq!(
        details_requests(&world).len(),
        1,
        "the full report, details in its thread"
    );
    let mail = mail_to(&world, "oncall@example.com");
    assert_eq!(mail.len(), 1, "{:#?}", world.mailbox());
    let subject = mail[0]["subject"].as_str().unwrap();
    assert!(subject.starts_with("[incident "), "{subject}");
    let body = mail[0]["body"].as_str().unwrap();
    assert!(body.starts_with("Incident: "), "{body}");
    assert!(body.contains("| held 1 min"), "{body}");
}
