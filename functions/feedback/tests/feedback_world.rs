//! End to end: a world's alarm fires, diagnose publishes, notify-slack posts
//! the report with verdict buttons and records it in the feedback table
//! (moto's DynamoDB), the local Slack signs a click as Slack does and sends
//! it to the feedback function behind cargo-lambda's function URL, which
//! stores the answer and updates the message; `alarm-triage accuracy` then
//! counts it. Hostile requests (forged, stale, replayed, oversized,
//! malformed, unknown id) are refused with their status and store nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use support::{LocalWorld, Options, http, post_raw, requests_at};

const TABLE: &str = "alarm-triage-feedback";
const WAIT: Duration = Duration::from_secs(60);

fn sibling(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_feedback")).with_file_name(name);
    assert!(
        path.exists(),
        "{} is missing: run the tests from the workspace root (cargo test --all-targets)",
        path.display()
    );
    path
}

fn world() -> LocalWorld {
    LocalWorld::up_with(
        "alb-flapping-worker-ceiling",
        Options {
            lambda_binary: Some(sibling("diagnose")),
            lambda_env: vec!["DIAGNOSIS_QUEUE_URL=".to_owned()],
            notify: Some((sibling("notify-slack"), "bot")),
            notify_env: vec!["SLACK_CHARTS=off".to_owned(), "RUST_LOG=debug".to_owned()],
            feedback_binary: Some(PathBuf::from(env!("CARGO_BIN_EXE_feedback"))),
            ..Options::default()
        },
    )
}

fn json_body(answer: &str) -> Value {
    serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or("{}")).unwrap()
}

/// The bot's top-level messages as the local Slack holds them now.
fn messages(world: &LocalWorld) -> Vec<Value> {
    let answer = http(
        world.var("SLACK_LOCAL_URL"),
        "GET",
        "/_recorder/messages",
        "",
    );
    json_body(&answer)["messages"].as_array().cloned().unwrap()
}

/// Someone clicks a button; the local Slack signs and sends it, and reports the answer.
fn click(world: &LocalWorld, message: &Value, user: &str, action: &str) -> Value {
    let ask = json!({"user": user, "channel_id": message["channel_id"], "ts": message["ts"], "action_id": action});
    json_body(&http(
        world.var("SLACK_LOCAL_URL"),
        "POST",
        "/_recorder/interact",
        &ask.to_string(),
    ))
}

fn signing_secret(world: &LocalWorld) -> String {
    // stack.py lists the bot token, then the signing secret.
    world.facts["slack_secrets"][1].as_str().unwrap().to_owned()
}

fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    format!(
        "v0={}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// Sends `body` to the endpoint signed at `timestamp` with `secret`.
fn send_signed(world: &LocalWorld, secret: &str, timestamp: i64, body: &[u8]) -> (u16, String) {
    let timestamp = timestamp.to_string();
    let signature = sign(secret, &timestamp, body);
    post_raw(
        world.var("FEEDBACK_URL"),
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("X-Slack-Request-Timestamp", &timestamp),
            ("X-Slack-Signature", &signature),
        ],
        body,
    )
}

fn form(payload: &Value) -> Vec<u8> {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    format!(
        "payload={}",
        utf8_percent_encode(&payload.to_string(), NON_ALPHANUMERIC)
    )
    .into_bytes()
}

async fn table_items(world: &LocalWorld) -> Vec<std::collections::HashMap<String, AttributeValue>> {
    let client = aws_sdk_dynamodb::Client::new(&world.sdk_config().await);
    client
        .scan()
        .table_name(TABLE)
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .items()
        .to_vec()
}

fn answers_in(items: &[std::collections::HashMap<String, AttributeValue>]) -> Vec<Value> {
    items
        .iter()
        .filter(|i| i["entry"].as_s().is_ok_and(|e| e.starts_with("answer#")))
        .map(|i| serde_json::from_str(i["answer"].as_s().unwrap()).unwrap())
        .collect()
}

fn tally_of(message: &Value) -> String {
    message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block_id"] == "feedback-tally")
        .map(|b| b["elements"][0]["text"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verdict_click_is_verified_stored_shown_and_counted() {
    let world = world();
    world.deliver();
    let records = world.invocations("notify-slack-invocations", 1, WAIT);
    assert!(
        records.len() == 1 && records[0]["function_error"].is_null(),
        "{records:?}\n{}",
        world.log("notify-slack")
    );

    // The first message in #alerts carries the buttons with the diagnosis id.
    let posted = messages(&world);
    let message = posted
        .iter()
        .find(|m| m["channel_id"] == "C0ALERTS01")
        .expect("a first message in #alerts")
        .clone();
    let buttons = message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block_id"] == "feedback")
        .expect("verdict buttons on the first message")
        .clone();
    let diagnosis_id = buttons["elements"][0]["value"].as_str().unwrap().to_owned();
    let recorded = table_items(&world).await;
    assert!(
        recorded
            .iter()
            .any(|i| i["diagnosis_id"].as_s().unwrap() == &diagnosis_id
                && i["entry"].as_s().unwrap() == "diagnosis"),
        "notify-slack recorded the diagnosis before posting its buttons"
    );

    // A click on "Right": stored, and the message says who confirmed it.
    let first = click(&world, &message, "U0ALICE01", "feedback.right");
    assert_eq!(first["status"], 200, "{first}\n{}", world.log("feedback"));
    let warm = click(&world, &message, "U0CAROL01", "feedback.right");
    assert_eq!(warm["status"], 200, "{warm}");
    let now = messages(&world)
        .into_iter()
        .find(|m| m["ts"] == message["ts"] && m["channel_id"] == message["channel_id"])
        .unwrap();
    assert_eq!(
        tally_of(&now),
        "Confirmed right by <@U0ALICE01>, <@U0CAROL01>",
        "{now}"
    );
    println!(
        "feedback endpoint: first request {} ms (reads the secret), later {} ms",
        first["elapsed_ms"], warm["elapsed_ms"]
    );

    // "Partly" opens the form; its submission names the wrong cause and what it was.
    let partly = click(&world, &message, "U0BOB0001", "feedback.partly");
    assert_eq!(partly["status"], 200, "{partly}");
    let opened: Vec<Value> = requests_at(world.var("SLACK_LOCAL_URL"))
        .into_iter()
        .filter(|r| r["kind"] == "views.open")
        .collect();
    assert_eq!(opened.len(), 1, "one form, for partly: {opened:?}");
    let view = json_body(&format!(
        "\r\n\r\n{}",
        opened[0]["answer"].as_str().unwrap()
    ));
    assert_eq!(view["ok"], true, "{view}");
    let options = view["view"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block_id"] == "causes")
        .map(|b| b["element"]["options"].clone())
        .expect("the form lists the causes");
    let wrong = options[0]["value"].as_str().unwrap().to_owned();
    let note = "the node it ran on was being drained";
    let submitted = json_body(&http(
        world.var("SLACK_LOCAL_URL"),
        "POST",
        "/_recorder/submit",
        &json!({"view_id": view["view"]["id"], "user": "U0BOB0001", "selected": [wrong], "text": note}).to_string(),
    ));
    assert_eq!(submitted["status"], 200, "{submitted}");

    // Alice changes her mind: her last answer replaces the first.
    assert_eq!(
        click(&world, &message, "U0ALICE01", "feedback.wrong")["status"],
        200
    );
    let answers = answers_in(&table_items(&world).await);
    assert_eq!(
        answers.len(),
        3,
        "alice, carol and bob, once each: {answers:?}"
    );
    let of = |user: &str| answers.iter().find(|a| a["user"] == user).unwrap().clone();
    assert_eq!(of("U0ALICE01")["judgement"], "wrong");
    assert_eq!(of("U0BOB0001")["wrong_causes"], json!([wrong]));
    assert_eq!(of("U0BOB0001")["note"], note);
    assert_eq!(of("U0BOB0001")["diagnosis"]["family"], "AWS/ApplicationELB");

    // Hostile requests: each refused with its status, nothing stored.
    let secret = signing_secret(&world);
    let request = &first["request"];
    let body = request["body"].as_str().unwrap().as_bytes().to_vec();
    let header = |name: &str| request["headers"][name].as_str().unwrap().to_owned();
    let replay = post_raw(
        world.var("FEEDBACK_URL"),
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            (
                "X-Slack-Request-Timestamp",
                &header("X-Slack-Request-Timestamp"),
            ),
            ("X-Slack-Signature", &header("X-Slack-Signature")),
        ],
        &body,
    );
    assert_eq!(replay.0, 409, "a replay within the window: {replay:?}");
    let mut tampered = body.clone();
    tampered.extend_from_slice(b"&extra=1");
    let forged = post_raw(
        world.var("FEEDBACK_URL"),
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            (
                "X-Slack-Request-Timestamp",
                &header("X-Slack-Request-Timestamp"),
            ),
            ("X-Slack-Signature", &header("X-Slack-Signature")),
        ],
        &tampered,
    );
    assert_eq!(
        forged.0, 401,
        "a body that does not match its signature: {forged:?}"
    );
    let now_secs = chrono::Utc::now().timestamp();
    let stale = send_signed(&world, &secret, now_secs - 600, &body);
    assert_eq!(stale.0, 401, "ten minutes old: {stale:?}");
    assert!(stale.1.contains("replay or a skewed clock"), "{stale:?}");
    let wrong_secret = send_signed(&world, "0123456789abcdef0123456789abcdef", now_secs, &body);
    assert_eq!(wrong_secret.0, 401);
    let oversized = send_signed(&world, &secret, now_secs, &vec![b'a'; 70 * 1024]);
    assert_eq!(oversized.0, 413, "{oversized:?}");
    let malformed = send_signed(&world, &secret, now_secs, b"payload=%7Bnot-json");
    assert_eq!(malformed.0, 400, "{malformed:?}");
    let mut unknown: Value = serde_json::from_str(&support_form_payload(&body)).unwrap();
    unknown["actions"][0]["value"] = json!("dx-000000000000000000000000");
    unknown["user"]["id"] = json!("U0MALLORY1");
    let unknown = send_signed(&world, &secret, now_secs, &form(&unknown));
    assert_eq!(unknown.0, 404, "{unknown:?}");
    let after = table_items(&world).await;
    assert_eq!(
        answers_in(&after).len(),
        3,
        "nothing stored by a refused request"
    );
    assert!(
        !after
            .iter()
            .any(|i| i["diagnosis_id"].as_s().unwrap().contains("dx-0000")),
        "an unknown id leaves no trace"
    );

    // No secret and nothing anyone typed reaches the function's log.
    let log = world.log("feedback");
    for secret in world.facts["slack_secrets"].as_array().unwrap() {
        assert!(
            !log.contains(secret.as_str().unwrap()),
            "a secret in the log"
        );
    }
    assert!(!log.contains(note), "a person's note in the log");

    // The accuracy command counts the stored answers.
    let output = Command::new(sibling("alarm-triage"))
        .args([
            "accuracy", "--table", TABLE, "--since", "1d", "--by", "finding",
        ])
        .envs(&world.env)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains("diagnoses posted 1, answered 1 (100 %); answers 3"),
        "{text}"
    );
    // Carol confirmed every cause, Alice refuted them all, Bob marked one wrong.
    let row = text
        .lines()
        .find(|l| l.starts_with(&wrong))
        .unwrap_or_else(|| panic!("a row for {wrong}:\n{text}"));
    let numbers: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&numbers[1..4], ["1", "3", "33"], "{row}");
    println!("{text}");

    // Figures for people (no assertion on time): 20 more clicks on a warm instance.
    let mut warm_ms: Vec<f64> = (0..20)
        .map(|i| {
            let answer = click(&world, &message, &format!("U0WARM{i:04}"), "feedback.right");
            assert_eq!(answer["status"], 200, "{answer}");
            answer["elapsed_ms"].as_f64().unwrap()
        })
        .collect();
    warm_ms.sort_by(f64::total_cmp);
    println!(
        "feedback endpoint, warm: min {} ms, median {} ms, max {} ms over 20 clicks",
        warm_ms[0], warm_ms[10], warm_ms[19]
    );
}

/// The JSON inside a `payload=` form body.
fn support_form_payload(body: &[u8]) -> String {
    let text = std::str::from_utf8(body).unwrap();
    let encoded = text.strip_prefix("payload=").unwrap().replace('+', " ");
    percent_encoding::percent_decode_str(&encoded)
        .decode_utf8()
        .unwrap()
        .into_owned()
}
