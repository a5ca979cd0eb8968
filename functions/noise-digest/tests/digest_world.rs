//! End to end: the digest function under cargo-lambda's emulator, invoked as
//! EventBridge Scheduler would, reads a world's alarms from moto (their
//! seeded history included) and posts the ranked digest to the local Slack.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use support::{LocalWorld, Options, requests_at};

fn world() -> LocalWorld {
    let digest = PathBuf::from(env!("CARGO_BIN_EXE_noise-digest"));
    let notify = digest.with_file_name("notify-slack");
    assert!(
        notify.exists(),
        "{} is missing: run the tests from the workspace root (cargo test --all-targets)",
        notify.display()
    );
    LocalWorld::up_with(
        "alb-flapping-worker-ceiling",
        Options {
            notify: Some((notify, "bot")),
            digest_binary: Some(digest),
            ..Options::default()
        },
    )
}

/// Invokes the function with a scheduler's event; returns the status and the answer.
fn invoke(world: &LocalWorld) -> (String, Value) {
    let event = json!({
        "version": "0", "id": "0f8b2c4e-1d2a-4f7e-9c1b-0a1b2c3d4e5f",
        "detail-type": "Scheduled Event", "source": "aws.scheduler",
        "account": "123456789012", "time": "2026-12-02T08:00:00Z",
        "region": world.region(), "resources": [], "detail": "{}"
    });
    let (status, body) = support::post_raw(
        world.var("DIGEST_INVOKE_URL"),
        &[("Content-Type", "application/json")],
        event.to_string().as_bytes(),
    );
    (
        status.to_string(),
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

#[test]
fn the_scheduled_digest_ranks_the_flapping_alarm_in_slack() {
    let world = world();
    let alarm = world.facts["alarm_name"].as_str().unwrap().to_owned();
    let (status, answer) = invoke(&world);
    assert_eq!(status, "200", "{answer}\n{}", world.log("digest"));
    assert!(answer["entries"].as_u64().unwrap() >= 1, "{answer}");
    let posts: Vec<Value> = requests_at(world.var("SLACK_LOCAL_URL"))
        .into_iter()
        .filter(|r| r["kind"] == "web_api" && r["status"] == 200)
        .collect();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    let payload = &posts[0]["payload"];
    assert_eq!(payload["channel"], "#alerts");
    assert_eq!(
        payload["blocks"][0]["text"]["text"],
        "Alarm noise digest · last 7 days"
    );
    let flapping = payload["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"]["text"].as_str())
        .find(|t| t.starts_with("*Flapping*"))
        .unwrap_or_else(|| panic!("no flapping section: {payload:#}"));
    assert!(flapping.contains(&alarm), "{flapping}");
    assert!(
        flapping.contains("→ "),
        "each alarm comes with a suggestion: {flapping}"
    );
    assert_eq!(posts[0]["authorization"], "valid");
}
