//! Renderings of full diagnoses captured from the local worlds (fixtures in
//! `tests/fixtures/`): snapshots, schema, Slack's limits, 80 columns.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

use alarm_triage::diagnosis::Diagnosis;
use alarm_triage::render;
use serde_json::Value;

/// Every captured world: `tests/fixtures/diagnosis-<world>.json` (re-captured
/// by `scripts/capture_fixtures.sh`).
fn fixtures() -> Vec<String> {
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some(
                name.strip_prefix("diagnosis-")?
                    .strip_suffix(".json")?
                    .to_owned(),
            )
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_world_has_a_captured_diagnosis() {
    let worlds = format!("{}/tests/worlds", env!("CARGO_MANIFEST_DIR"));
    let captured = fixtures();
    for entry in std::fs::read_dir(worlds).unwrap() {
        let path = entry.unwrap().path();
        if path.join("expected.yaml").exists() {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            assert!(
                captured.contains(&name),
                "{name}: run scripts/capture_fixtures.sh {name}"
            );
        }
    }
}

#[test]
fn the_first_screen_fits_twenty_five_lines_of_eighty_columns_in_every_world() {
    for name in fixtures() {
        let d = fixture(&name);
        let screen = render::text::first_screen(&d);
        assert!(
            screen.len() <= render::text::FIRST_SCREEN_LINES,
            "{name}: {} lines\n{}",
            screen.len(),
            screen.join("\n")
        );
        for line in &screen {
            assert!(line.chars().count() <= 80, "{name}: {line:?}");
        }
        let text = render::text::render(&d);
        assert!(
            text.starts_with(&screen.join("\n")),
            "{name}: the report opens with it"
        );
        let causes = d
            .findings
            .iter()
            .filter(|f| f.role == alarm_triage::diagnosis::finding::Role::Cause)
            .count();
        assert_eq!(
            screen.iter().any(|l| l == "Causes"),
            causes > 0,
            "{name}: causes are on the first screen when there are any"
        );
    }
}

fn fixture(name: &str) -> Diagnosis {
    let path = format!(
        "{}/tests/fixtures/diagnosis-{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn captured_diagnoses_parse_serialise_and_reparse_unchanged() {
    for name in fixtures() {
        let name = name.as_str();
        let d = fixture(name);
        let again: Diagnosis = serde_json::from_str(&d.to_json().unwrap()).unwrap();
        assert_eq!(d, again, "{name}");
    }
}

#[test]
fn captured_diagnoses_validate_against_the_schema() {
    let schema: Value =
        serde_json::from_str(include_str!("../schema/diagnosis-v1.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for name in fixtures() {
        let name = name.as_str();
        let value = serde_json::to_value(fixture(name)).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

#[test]
fn full_diagnoses_render_as_snapshotted() {
    for name in fixtures() {
        let name = name.as_str();
        let d = fixture(name);
        insta::assert_snapshot!(format!("{name}.text"), render::text::render(&d));
        insta::assert_json_snapshot!(format!("{name}.slack"), render::slack::render(&d));
        insta::assert_json_snapshot!(
            format!("{name}.slack-first"),
            render::slack::first_message(&d)
        );
        insta::assert_json_snapshot!(format!("{name}.slack-details"), render::slack::details(&d));
        insta::assert_json_snapshot!(format!("{name}.chat"), render::chat::render(&d));
    }
}

#[test]
fn full_diagnoses_respect_slack_limits_and_eighty_columns() {
    for name in fixtures() {
        let name = name.as_str();
        let d = fixture(name);
        let first = render::slack::first_message(&d);
        assert!(
            first["blocks"].as_array().unwrap().len() <= render::slack::FIRST_MESSAGE_BLOCKS,
            "{name}: the first message holds at most 10 blocks"
        );
        for slack in [render::slack::render(&d), first, render::slack::details(&d)] {
            let blocks = slack["blocks"].as_array().unwrap();
            assert!(blocks.len() <= 50, "{name}: {} blocks", blocks.len());
            for block in blocks {
                if let Some(text) = block["text"]["text"].as_str() {
                    assert!(text.chars().count() <= 3000, "{name}");
                }
            }
        }
        for line in render::text::render(&d).lines() {
            let whole = line.trim_start().starts_with('$')
                || line.trim_start().starts_with("promql>")
                || line.contains("https://")
                || line.split_whitespace().any(|w| w.chars().count() > 60);
            assert!(whole || line.chars().count() <= 80, "{name}: {line:?}");
        }
    }
}

#[test]
fn every_chart_decodes_as_a_png_of_the_stated_size() {
    let mut drawn = Vec::new();
    for name in fixtures() {
        let d = fixture(&name);
        for chart in alarm_triage::charts::charts(&d).unwrap() {
            let decoder = png::Decoder::new(std::io::Cursor::new(&chart.png));
            let reader = decoder.read_info().unwrap();
            let info = reader.info();
            assert_eq!(
                (info.width, info.height),
                (alarm_triage::charts::WIDTH, alarm_triage::charts::HEIGHT),
                "{name}: {}",
                chart.file_name
            );
            assert!(
                chart.png.len() > 5_000,
                "{name}: {} is nearly empty",
                chart.file_name
            );
            drawn.push(format!("{name}/{}", chart.file_name));
        }
    }
    // Every world with a breakdown has the latency chart; those with pod series the CPU chart.
    for expected in [
        "alb-flapping-worker-ceiling/latency.png",
        "alb-flapping-worker-ceiling/pods-cpu.png",
        "alb-hot-pod-oomkilled/pods-cpu.png",
        "alb-p99-low-traffic/latency.png",
    ] {
        assert!(
            drawn.iter().any(|d| d == expected),
            "{expected} in {drawn:?}"
        );
    }
    assert!(
        !drawn
            .iter()
            .any(|d| d.starts_with("eks-private-endpoint/pods")),
        "no pod chart without pod series"
    );
}

/// The feedback renderings over world 1's diagnosis: the first message with
/// its buttons and track record, the tally after answers, the what-was-it
/// form and the accuracy table.
#[test]
fn the_feedback_renderings_are_snapshotted() {
    use alarm_triage::feedback::accuracy::{Grouping, accuracy, render as render_accuracy};
    use alarm_triage::feedback::message::{detail_form, with_tally};
    use alarm_triage::feedback::{Answer, DiagnosisRecord, Judgement, SlackUserId};
    use alarm_triage::notify::message::{FirstMessageAdditions, Placement, compose};
    use alarm_triage::notify::route::Route;

    let d = fixture("alb-flapping-worker-ceiling");
    let addition = FirstMessageAdditions {
        buttons: true,
        seen_before: Some(
            "3rd time in 7 days; the same cause (per-process ceiling) each time".into(),
        ),
        track_record: vec!["per-process ceiling: confirmed 7 of 8 times on this service".into()],
    };
    let message = compose(
        &d,
        &Route::everything_to("#alerts"),
        Placement {
            web_api: true,
            additions: Some(&addition),
            ..Placement::default()
        },
    );
    let blocks = message.payload["blocks"].as_array().unwrap().clone();
    insta::assert_json_snapshot!("feedback_first_message_blocks", blocks);
    let user = |id: &str| SlackUserId::parse(id).unwrap();
    let tallied = with_tally(
        &blocks,
        &[
            (user("U0ALICE01"), Judgement::Right),
            (user("U0BOB0001"), Judgement::Partly),
        ],
    )
    .expect("the first message holds the buttons");
    insta::assert_json_snapshot!("feedback_tally", &tallied[tallied.len() - 1]);
    let at = d.generated_at;
    let record = DiagnosisRecord::of(&d, at);
    insta::assert_json_snapshot!("feedback_form", detail_form(&record, Judgement::Partly));
    let causes: Vec<_> = record.causes().cloned().collect();
    let answers = vec![
        Answer {
            diagnosis: record.clone(),
            user: user("U0ALICE01"),
            judgement: Judgement::Right,
            wrong_causes: vec![],
            note: None,
            answered_at: at,
        },
        Answer {
            diagnosis: record.clone(),
            user: user("U0BOB0001"),
            judgement: Judgement::Partly,
            wrong_causes: causes.last().cloned().into_iter().collect(),
            note: Some("a node was draining".into()),
            answered_at: at,
        },
    ];
    let since = at - chrono::Duration::days(30);
    for (name, grouping) in [
        ("feedback_accuracy_by_finding", Grouping::Finding),
        ("feedback_accuracy_by_service", Grouping::Service),
    ] {
        insta::assert_snapshot!(
            name,
            render_accuracy(&accuracy(
                std::slice::from_ref(&record),
                &answers,
                since,
                grouping
            ))
        );
    }
}

#[test]
fn held_reports_render_as_snapshotted_and_validate() {
    use alarm_triage::diagnosis::{Hold, HoldOutcome};
    use alarm_triage::notify::message::quiet;
    use alarm_triage::notify::route::Route;

    let schema: Value =
        serde_json::from_str(include_str!("../schema/diagnosis-v1.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut still = fixture("alb-every-group-slow-two-minutes");
    still.hold = Some(Hold {
        seconds: 300,
        outcome: HoldOutcome::StillFiring,
    });
    let first = render::slack::first_message(&still);
    insta::assert_json_snapshot!("held_still_firing_first_message_header", first["blocks"][0]);
    let identity = render::text::render(&still)
        .lines()
        .find(|l| l.starts_with("Severity "))
        .unwrap()
        .to_owned();
    insta::assert_snapshot!("held_still_firing_email_identity", identity);

    let mut cleared = still.clone();
    cleared.hold = Some(Hold {
        seconds: 300,
        outcome: HoldOutcome::Cleared { since: None },
    });
    // An alarm name with Slack markup in it stays text.
    cleared.alarm.name = "<!channel> *latency*".into();
    let hold = cleared.hold.clone().unwrap();
    let line = quiet(&cleared, &hold, &Route::everything_to("#alerts"), true);
    insta::assert_json_snapshot!("held_cleared_quiet_line", line.payload);
    assert!(!line.payload.to_string().contains("<!channel>"));

    for d in [&still, &cleared] {
        let value = serde_json::to_value(d).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }
}

/// The noise digest in both renderings, over one week of a made-up account:
/// one alarm of each kind, a name with Slack markup in it (stays text).
#[test]
fn the_noise_digest_renders_as_text_and_as_slack_blocks() {
    use alarm_triage::digest::{digest, render, slack_message};
    use alarm_triage_core::fixtures::alarm_over_span;
    use chrono::{Duration, TimeZone, Utc};

    let now = Utc.with_ymd_and_hms(2026, 12, 2, 8, 0, 0).unwrap();
    let from = now - Duration::days(7);
    let alarm = |name: &str, trips: &[(i64, i64)]| alarm_over_span(name, trips, now);
    let flapping = alarm(
        "<!channel> *checkout-latency*",
        &[(100, 3), (200, 4), (300, 2), (400, 5), (500, 3)],
    );
    let stuck = alarm("batch-queue-depth", &[(9000, 7000)]);
    let mut normal = alarm("search-5xx", &[(600, 60)]);
    normal.metric_values = (0..100).map(|i| if i < 90 { 2.0 } else { 0.5 }).collect();
    let mut causeless = alarm("cart-latency", &[(700, 45), (900, 30)]);
    causeless.diagnoses = Some((2, 2));
    let never = alarm("legacy-api-errors", &[]);
    let healthy = alarm("payments-latency", &[(1000, 40)]);
    let alarms = [flapping, stuck, normal, causeless, never, healthy];
    let entries = digest(&alarms, from, now);
    insta::assert_snapshot!(
        "noise_digest.text",
        render(&entries, alarms.len(), from, now)
    );
    let slack = slack_message(&entries, alarms.len(), from, now);
    assert!(!slack.to_string().contains("<!channel>"), "{slack:#}");
    insta::assert_json_snapshot!("noise_digest.slack", slack);
}
