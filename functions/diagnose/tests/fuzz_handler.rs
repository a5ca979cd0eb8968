//! The fuzz suite through the Lambda handler: the same generated and mutated
//! events as `tests/fuzz.rs`, handed to `handler::handle` as the runtime hands
//! them over, with sources that hold a flapping history so every diagnosis is
//! classified and published. Invariants: no panic, a rejection never fails
//! the invocation (a retry would fail the same way), and every published
//! message keeps the diagnosis schema, the email text and Slack's limits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

#[path = "../../../tests/support/fuzz.rs"]
mod fuzz;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use alarm_triage::alarm::AlarmState;
use alarm_triage::config::Config;
use alarm_triage::diagnosis::Diagnosis;
use alarm_triage::evidence::fake::StaticSources;
use alarm_triage::history::StateChange;
use alarm_triage::publish::fake::RecordingPublisher;
use chrono::Utc;
use diagnose::handler::{State, handle};
use lambda_runtime::{Context, LambdaEvent};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;

const CASES: u32 = 3_000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Nine OK -> ALARM cycles over the last six hours.
fn flapping() -> StaticSources {
    let end = Utc::now();
    StaticSources {
        history: (1..=18)
            .map(|i| StateChange {
                at: end - chrono::Duration::minutes(20 * (19 - i)),
                from: if i % 2 == 1 {
                    AlarmState::Ok
                } else {
                    AlarmState::Alarm
                },
                to: if i % 2 == 1 {
                    AlarmState::Alarm
                } else {
                    AlarmState::Ok
                },
            })
            .collect(),
        ..StaticSources::default()
    }
}

fn invocation(payload: Value) -> LambdaEvent<Value> {
    let mut context = Context::default();
    let deadline = SystemTime::now() + Duration::from_secs(30);
    context.deadline = u64::try_from(
        deadline
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    LambdaEvent::new(payload, context)
}

#[test]
fn the_handler_keeps_every_invariant_on_generated_and_mutated_events() {
    // Debug builds of the evidence futures need more than a test thread's 2 MiB
    // (Lambda's main thread has 8 MiB, and release builds far less).
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(fuzz_the_handler)
        .unwrap()
        .join()
        .unwrap();
}

fn fuzz_the_handler() {
    let validator = fuzz::schema_validator(&root());
    let corpus = fuzz::corpus(&root());
    let n = corpus.len();
    let strategy = prop_oneof![
        fuzz::structured_event(),
        (0..n, prop::collection::vec(fuzz::mutation(), 1..4))
            .prop_map(move |(i, m)| fuzz::Event(fuzz::mutate(&corpus[i], &m))),
    ];
    let config =
        Config::from_lookup(|k| (k == "AWS_REGION").then(|| "eu-west-1".to_owned())).unwrap();
    let publisher = RecordingPublisher::default();
    let state = State::new(config, flapping(), publisher.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let counts = std::cell::RefCell::new([0u32; 3]); // not JSON, answered, published
    let started = Instant::now();
    let result = fuzz::runner(CASES).run(&strategy, |event| {
        // The runtime only hands over JSON; anything else never reaches the handler.
        let Ok(payload) = serde_json::from_slice::<Value>(&event.0) else {
            counts.borrow_mut()[0] += 1;
            return Ok(());
        };
        publisher.sent.lock().unwrap().clear();
        let answer = runtime
            .block_on(handle(&state, invocation(payload)))
            .map_err(|e| {
                TestCaseError::fail(format!(
                    "the invocation failed ({}: {}): Lambda would retry a poison event",
                    e.error_type, e.error_message
                ))
            })?;
        if !answer["records"].is_array() {
            return Err(TestCaseError::fail(format!("no records in {answer}")));
        }
        let sent = publisher.sent.lock().unwrap().clone();
        for outgoing in &sent {
            let diagnosis: Diagnosis = serde_json::from_str(&outgoing.json)
                .map_err(|e| TestCaseError::fail(format!("published JSON unreadable: {e}")))?;
            fuzz::check_diagnosis(&diagnosis, &validator).map_err(TestCaseError::fail)?;
            if outgoing.text.chars().any(|c| c.is_control() && c != '\n') {
                return Err(TestCaseError::fail("control character in the email"));
            }
        }
        counts.borrow_mut()[if sent.is_empty() { 1 } else { 2 }] += 1;
        Ok(())
    });
    let seconds = started.elapsed().as_secs_f64();
    let counts = counts.into_inner();
    eprintln!(
        "fuzz handler: {CASES} cases in {seconds:.1} s ({:.0} cases/s); not JSON {}, answered without a report {}, published {}",
        f64::from(CASES) / seconds,
        counts[0],
        counts[1],
        counts[2]
    );
    if let Err(e) = result {
        panic!("fuzz handler found a failing input: {e}");
    }
    assert!(
        counts[2] > CASES / 10,
        "too few published diagnoses: {counts:?}"
    );
}
