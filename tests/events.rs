//! Every captured event in `events/`: it round-trips through its types, gives
//! the expected outcome, validates against the JSON Schema, and its renderings
//! match the committed snapshots.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

use std::path::{Path, PathBuf};

use alarm_triage::alarm::AlarmNotification;
use alarm_triage::classify::ClassifierConfig;
use alarm_triage::diagnosis::{Diagnosis, ReportKind};
use alarm_triage::evidence::fake::StaticSources;
use alarm_triage::evidence::{Budget, Collection};
use alarm_triage::pipeline::{Now, Outcome, Triage};
use alarm_triage::publish::NoPublisher;
use alarm_triage::render;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_lambda_events::sns::SnsEvent;
use serde_json::Value;

/// What each record of an event must become.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Report(ReportKind, &'static str),
    Ignored,
    Rejected(&'static str),
}

use Expect::*;
use ReportKind::{Diagnosis as Dx, Resolution as Rs};

/// The expected outcome of every file in `events/`; a file missing here fails the suite.
const EXPECTATIONS: &[(&str, &[Expect])] = &[
    (
        "sns-alb-alarm-target-response-time",
        &[Report(Dx, "transient")],
    ),
    (
        "sns-alb-ok-target-response-time",
        &[Report(Rs, "recovered")],
    ),
    ("sns-alb-alarm-null-description", &[Report(Dx, "transient")]),
    ("sns-alb-alarm-hostile-text", &[Report(Dx, "transient")]),
    ("sns-alb-ignored-insufficient-data-to-ok", &[Ignored]),
    ("sns-metricmath-alarm-5xx-rate", &[Report(Dx, "transient")]),
    (
        "sns-anomaly-alarm-request-count",
        &[Report(Dx, "transient")],
    ),
    (
        "sns-composite-alarm-checkout-degraded",
        &[Report(Dx, "transient")],
    ),
    (
        "sns-foreign-deploy-notice",
        &[Rejected("not_an_alarm_notification")],
    ),
    (
        "sns-batch-alarm-and-foreign",
        &[Report(Dx, "transient"), Rejected("invalid_json")],
    ),
    (
        "sns-subscription-confirmation",
        &[Rejected("sns_subscription_message")],
    ),
    (
        "eventbridge-alb-alarm-target-response-time",
        &[Report(Dx, "transient")],
    ),
    (
        "eventbridge-metricmath-alarm-5xx-rate",
        &[Report(Dx, "transient")],
    ),
    (
        "eventbridge-anomaly-alarm-request-count",
        &[Report(Dx, "transient")],
    ),
    (
        "eventbridge-composite-alarm-checkout-degraded",
        &[Report(Dx, "transient")],
    ),
];

fn event_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("events");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("events/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .expect("a file name")
        .to_string_lossy()
        .into_owned()
}

fn offline() -> Triage<StaticSources, NoPublisher> {
    Triage {
        collection: Collection::Offline,
        publisher: NoPublisher,
        budget: Budget::default(),
        classifier: ClassifierConfig::default(),
    }
}

async fn outcomes(path: &Path) -> Result<Vec<Outcome>, alarm_triage::Error> {
    let bytes = std::fs::read(path).expect("readable event");
    offline().handle_bytes(&bytes, Now::TransitionTime).await
}

fn reports(outcomes: &[Outcome]) -> Vec<&Diagnosis> {
    outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Report { diagnosis, .. } => Some(diagnosis.as_ref()),
            _ => None,
        })
        .collect()
}

#[test]
fn every_event_file_is_named_by_kind_and_scenario_and_has_an_expectation() {
    let files = event_files();
    assert!(files.len() >= EXPECTATIONS.len());
    for file in &files {
        let name = stem(file);
        assert!(
            name.starts_with("sns-") || name.starts_with("eventbridge-"),
            "{name} should be named sns-<kind>-<scenario>.json or eventbridge-<kind>-<scenario>.json"
        );
        assert!(
            EXPECTATIONS.iter().any(|(n, _)| *n == name),
            "events/{name}.json has no expectation in tests/events.rs"
        );
    }
}

#[test]
fn every_event_file_round_trips_through_its_types() {
    for file in event_files() {
        let text = std::fs::read_to_string(&file).expect("readable");
        let raw: Value = serde_json::from_str(&text).expect("valid JSON");
        if raw.get("detail-type").is_some() {
            let event: EventBridgeEvent<Value> =
                serde_json::from_value(raw.clone()).expect("an EventBridge event");
            let reparsed: EventBridgeEvent<Value> =
                serde_json::from_str(&serde_json::to_string(&event).expect("serialise"))
                    .expect("re-parse");
            assert_eq!(event, reparsed, "{}", file.display());
            assert_eq!(reparsed.detail_type, "CloudWatch Alarm State Change");
            continue;
        }
        if raw.get("Records").is_none() {
            // SNS HTTP deliveries have no Lambda type; JSON itself must round-trip.
            let again: Value = serde_json::from_str(&raw.to_string()).expect("re-parse");
            assert_eq!(raw, again, "{}", file.display());
            continue;
        }
        let event: SnsEvent = serde_json::from_value(raw).expect("a Lambda SNS event");
        let reparsed: SnsEvent =
            serde_json::from_str(&serde_json::to_string(&event).expect("serialise"))
                .expect("re-parse");
        assert_eq!(event, reparsed, "{}", file.display());
        for record in &event.records {
            if let Ok(alarm) = serde_json::from_str::<AlarmNotification>(&record.sns.message) {
                let again: AlarmNotification =
                    serde_json::from_str(&serde_json::to_string(&alarm).expect("serialise"))
                        .expect("re-parse");
                assert_eq!(alarm, again, "{}", file.display());
            }
        }
    }
}

#[tokio::test]
async fn every_event_file_gives_its_expected_outcome() {
    for (name, expected) in EXPECTATIONS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("events/{name}.json"));
        let got: Vec<Expect> = match outcomes(&path).await {
            Err(e) => vec![Rejected(e.kind())],
            Ok(outcomes) => outcomes
                .iter()
                .map(|o| match o {
                    Outcome::Report { diagnosis: d, .. } => {
                        Report(d.kind, d.classification.behaviour.as_str())
                    }
                    Outcome::Ignored { .. } => Ignored,
                    Outcome::Rejected(e) | Outcome::Failed { error: e, .. } => Rejected(e.kind()),
                })
                .collect(),
        };
        assert_eq!(&got, expected, "{name}");
    }
}

#[tokio::test]
async fn every_diagnosis_validates_against_the_published_schema() {
    let schema: Value = serde_json::from_str(include_str!("../schema/diagnosis-v1.schema.json"))
        .expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let mut checked = 0;
    for file in event_files() {
        let Ok(outcomes) = outcomes(&file).await else {
            continue;
        };
        for d in reports(&outcomes) {
            let value = serde_json::to_value(d).expect("serialise");
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| format!("{} at {}", e, e.instance_path))
                .collect();
            assert!(errors.is_empty(), "{}: {errors:#?}", file.display());
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} diagnoses checked");
}

#[test]
fn the_schema_rejects_a_diagnosis_with_an_unknown_verdict() {
    let schema: Value = serde_json::from_str(include_str!("../schema/diagnosis-v1.schema.json"))
        .expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    assert!(!validator.is_valid(&serde_json::json!({"schema": "alarm-triage/diagnosis/v1"})));
}

#[tokio::test]
async fn renderings_match_their_snapshots() {
    for file in event_files() {
        let name = stem(&file);
        let Ok(outcomes) = outcomes(&file).await else {
            continue;
        };
        for (i, d) in reports(&outcomes).into_iter().enumerate() {
            let key = if i == 0 {
                name.clone()
            } else {
                format!("{name}-{i}")
            };
            insta::assert_snapshot!(format!("{key}.text"), render::text::render(d));
            insta::assert_json_snapshot!(format!("{key}.slack"), render::slack::render(d));
            insta::assert_json_snapshot!(format!("{key}.chat"), render::chat::render(d));
            insta::assert_json_snapshot!(format!("{key}.diagnosis"), d);
        }
    }
}

#[tokio::test]
async fn text_reports_fit_eighty_columns_except_commands_and_links() {
    for file in event_files() {
        let Ok(outcomes) = outcomes(&file).await else {
            continue;
        };
        for d in reports(&outcomes) {
            for line in render::text::render(d).lines() {
                // Commands, links and single words longer than a line (ARNs) are kept whole.
                let long_ok = line.trim_start().starts_with('$')
                    || line.contains("https://")
                    || line.split_whitespace().any(|w| w.chars().count() > 60);
                assert!(
                    long_ok || line.chars().count() <= 80,
                    "{}: {line:?}",
                    file.display()
                );
            }
        }
    }
}

#[tokio::test]
async fn slack_messages_escape_alarm_text_and_respect_limits() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("events/sns-alb-alarm-hostile-text.json");
    let outcomes = outcomes(&path).await.expect("handled");
    let d = reports(&outcomes)[0];
    let slack = render::slack::render(d);
    let blocks = slack["blocks"].as_array().expect("blocks");
    assert!(blocks.len() <= 50);
    let mut mrkdwn = vec![slack["text"].as_str().expect("fallback text").to_owned()];
    collect_mrkdwn(&slack["blocks"], &mut mrkdwn);
    for text in &mrkdwn {
        assert!(text.chars().count() <= 3000);
        assert!(
            !text.contains("<!channel>"),
            "unescaped mention in {text:?}"
        );
        assert!(
            !text.contains("<https://example.invalid"),
            "unescaped link in {text:?}"
        );
        assert!(
            !text.contains("<@U024BE7LH>"),
            "unescaped user mention in {text:?}"
        );
        assert!(!text.contains('\u{1b}'), "terminal escape in {text:?}");
    }
    assert!(mrkdwn.iter().any(|t| t.contains("&lt;!channel&gt;")));
}

fn collect_mrkdwn(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("mrkdwn")
                && let Some(text) = map.get("text").and_then(Value::as_str)
            {
                out.push(text.to_owned());
            }
            map.values().for_each(|v| collect_mrkdwn(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_mrkdwn(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_chat_notification_threads_by_alarm_arn() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("events/sns-alb-alarm-target-response-time.json");
    let outcomes = outcomes(&path).await.expect("handled");
    let d = reports(&outcomes)[0];
    let chat = render::chat::render(d);
    assert_eq!(chat["version"], "1.0");
    assert_eq!(chat["source"], "custom");
    assert_eq!(
        chat["metadata"]["threadId"].as_str(),
        d.alarm.arn.as_ref().map(ToString::to_string).as_deref()
    );
    assert!(
        chat["content"]["nextSteps"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
}

#[tokio::test]
async fn a_redelivered_event_gets_the_same_diagnosis_id() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("events/sns-alb-alarm-target-response-time.json");
    let first = outcomes(&path).await.expect("handled");
    let second = outcomes(&path).await.expect("handled");
    assert_eq!(reports(&first)[0].id, reports(&second)[0].id);
}
