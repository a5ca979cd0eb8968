//! End to end: the diagnose binary runs under cargo-lambda's runtime emulator;
//! the world's alarm changes state in moto, CloudWatch's notification goes out
//! through SNS to an HTTP subscription that invokes the function with a Lambda
//! SNS event, and the function reads the alarm's history from moto.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{LocalWorld, Options};

fn invocations(world: &LocalWorld, wait: Duration) -> Vec<Value> {
    let log = world.state.join("invocations.jsonl");
    let deadline = Instant::now() + wait;
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if !records.is_empty() || Instant::now() > deadline {
            return records;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn an_alarm_delivered_through_sns_is_diagnosed_by_the_lambda_binary() {
    let world = LocalWorld::up_with(
        "alb-flapping-worker-ceiling",
        Options {
            lambda_binary: Some(PathBuf::from(env!("CARGO_BIN_EXE_diagnose"))),
            ..Options::default()
        },
    );
    world.deliver();
    let records = invocations(&world, Duration::from_secs(60));
    assert_eq!(
        records.len(),
        1,
        "one invocation; diagnose log:\n{}",
        world.log("diagnose")
    );
    let record = &records[0];
    assert_eq!(record["status"], 200, "{record}");
    assert!(record["function_error"].is_null(), "{record}");
    let response: Value = serde_json::from_str(record["body"].as_str().unwrap()).unwrap();
    assert_eq!(response["records"][0]["outcome"], "diagnosed", "{response}");
    let diagnosis = &response["diagnoses"][0];
    assert_eq!(
        diagnosis["classification"]["behaviour"], "flapping",
        "{}",
        diagnosis["evidence_gaps"]
    );
    assert_eq!(diagnosis["alarm"]["account"], "111122223333");
    assert!(
        !diagnosis["evidence_gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["source"] == "cloudwatch:DescribeAlarmHistory"),
        "the history was read from moto: {}",
        diagnosis["evidence_gaps"]
    );
}
