//! The fuzz suite of the replay path: structured notifications and mutations
//! of the captured events, with a fixed seed and a fixed budget, through the
//! same pipeline `alarm-triage replay --offline` runs, plus a sample through
//! the real binary for its exit codes. Invariants: no panic, exit 0 or 2,
//! every diagnosis valid against the schema, no live Slack markup or control
//! characters from alarm text, every Slack limit kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

mod support;

#[path = "support/fuzz.rs"]
mod fuzz;

use std::process::{Command, Stdio};
use std::time::Instant;

use alarm_triage::adapters::AwsSources;
use alarm_triage::classify::ClassifierConfig;
use alarm_triage::evidence::{Budget, Collection};
use alarm_triage::pipeline::{Now, Outcome, Triage};
use alarm_triage::publish::NoPublisher;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Cases per suite: 20,000 in all with the mutation suite.
const STRUCTURED_CASES: u32 = 12_000;
const MUTATION_CASES: u32 = 8_000;
const BINARY_CASES: u32 = 150;

fn offline() -> Triage<AwsSources, NoPublisher> {
    Triage {
        collection: Collection::Offline,
        publisher: NoPublisher,
        budget: Budget::default(),
        classifier: ClassifierConfig::default(),
    }
}

/// What `replay --offline` would do with these bytes: 0 diagnosed, ignored
/// or nothing to say; 2 refused as not ours; anything else is a failure.
fn replay(
    triage: &Triage<AwsSources, NoPublisher>,
    runtime: &tokio::runtime::Runtime,
    validator: &jsonschema::Validator,
    bytes: &[u8],
) -> Result<u8, TestCaseError> {
    let outcomes = match runtime.block_on(triage.handle_bytes(bytes, Now::TransitionTime)) {
        Ok(outcomes) => outcomes,
        Err(e) if e.is_rejection() => return Ok(2),
        Err(e) => {
            return Err(TestCaseError::fail(format!(
                "internal failure (exit 1): {e}"
            )));
        }
    };
    let mut code = 0;
    for outcome in outcomes {
        match outcome {
            Outcome::Report { diagnosis, .. } => {
                fuzz::check_diagnosis(&diagnosis, validator).map_err(TestCaseError::fail)?;
            }
            Outcome::Ignored { .. } => {}
            Outcome::Rejected(e) if e.is_rejection() => code = 2,
            other => return Err(TestCaseError::fail(format!("exit 1: {other:?}"))),
        }
    }
    Ok(code)
}

fn run_suite(name: &str, cases: u32, strategy: impl Strategy<Value = fuzz::Event>) {
    let root = support::repo_root();
    let validator = fuzz::schema_validator(&root);
    let triage = offline();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let codes = std::cell::RefCell::new([0u32; 3]);
    let started = Instant::now();
    let result = fuzz::runner(cases).run(&strategy, |bytes| {
        let code = replay(&triage, &runtime, &validator, &bytes.0)?;
        codes.borrow_mut()[usize::from(code)] += 1;
        Ok(())
    });
    let seconds = started.elapsed().as_secs_f64();
    let codes = codes.into_inner();
    eprintln!(
        "fuzz {name}: {cases} cases in {seconds:.1} s ({:.0} cases/s); exit 0: {}, exit 2: {}",
        f64::from(cases) / seconds,
        codes[0],
        codes[2]
    );
    if let Err(e) = result {
        panic!("fuzz {name} found a failing input: {e}");
    }
    // A generator that only ever produced rejections would prove nothing.
    assert!(
        codes[0] > cases / 10,
        "too few diagnosable cases: {codes:?}"
    );
    assert!(codes[2] > cases / 20, "too few rejected cases: {codes:?}");
}

#[test]
fn structured_notifications_never_break_an_invariant() {
    run_suite("structured", STRUCTURED_CASES, fuzz::structured_event());
}

#[test]
fn mutated_captured_events_never_break_an_invariant() {
    let corpus = fuzz::corpus(&support::repo_root());
    let n = corpus.len();
    let strategy = (0..n, prop::collection::vec(fuzz::mutation(), 1..4))
        .prop_map(move |(i, mutations)| fuzz::Event(fuzz::mutate(&corpus[i], &mutations)));
    run_suite("mutation", MUTATION_CASES, strategy);
}

/// The real binary, on a sample: its exit code is 0 or 2, and it prints what it refused.
#[test]
fn the_replay_binary_exits_0_or_2_on_generated_input() {
    let dir = support::repo_root().join("target/fuzz-binary");
    std::fs::create_dir_all(&dir).unwrap();
    let mut runner = fuzz::runner(BINARY_CASES);
    let strategy = fuzz::structured_event();
    let mut codes = std::collections::BTreeMap::new();
    for i in 0..BINARY_CASES {
        let bytes = strategy
            .new_tree(&mut runner)
            .map(|t| proptest::strategy::ValueTree::current(&t))
            .unwrap();
        let file = dir.join(format!("case-{i}.json"));
        std::fs::write(&file, &bytes.0).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_alarm-triage"))
            .args(["replay", "--offline", "--format", "json"])
            .arg(&file)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let code = output.status.code();
        assert!(
            matches!(code, Some(0 | 2)),
            "exit {code:?} for {}: {}",
            file.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        if code == Some(2) {
            assert!(
                String::from_utf8_lossy(&output.stderr).contains("not handled"),
                "a refusal says why"
            );
        }
        *codes.entry(code).or_insert(0) += 1;
    }
    eprintln!("fuzz binary: {BINARY_CASES} cases, exit codes {codes:?}");
}
