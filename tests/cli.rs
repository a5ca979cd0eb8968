//! The `alarm-triage replay` command as people run it: output and exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

mod support;

use std::process::{Command, Output};

fn replay(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_alarm-triage"))
        .arg("replay")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "eu-west-1")
        .env_remove("RUST_LOG")
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_alb_alarm_replayed_offline_prints_the_verdict_first_and_exits_0() {
    let out = replay(&[
        "events/sns-alb-alarm-target-response-time.json",
        "--offline",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "Transient on this transition alone: k8s-shopfront-alb-target-response-time"
        ),
        "{text}"
    );
    assert!(text.contains("not collected (offline)"));
}

#[test]
fn every_format_prints_its_rendering() {
    for (format, marker) in [
        ("json", "\"schema\":\"alarm-triage/diagnosis/v1\""),
        ("slack", "\"blocks\""),
        ("chat", "\"source\": \"custom\""),
        ("text", "NEXT STEPS"),
    ] {
        let out = replay(&[
            "events/sns-alb-alarm-target-response-time.json",
            "--offline",
            "--format",
            format,
        ]);
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        assert!(stdout(&out).contains(marker), "{format}: {}", stdout(&out));
    }
}

#[test]
fn a_subscription_confirmation_exits_2_and_says_what_it_is() {
    let out = replay(&["events/sns-subscription-confirmation.json", "--offline"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("SubscriptionConfirmation"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn a_foreign_message_exits_2_and_names_its_keys() {
    let out = replay(&["events/sns-foreign-deploy-notice.json", "--offline"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("pipeline, stage, status"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_batch_prints_the_good_record_and_exits_2_for_the_bad_one() {
    let out = replay(&["events/sns-batch-alarm-and-foreign.json", "--offline"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).contains("k8s-payments-alb-latency"));
    assert!(
        stderr(&out).contains("Deploy of payments finished"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_ignored_transition_exits_0_with_a_note() {
    let out = replay(&[
        "events/sns-alb-ignored-insufficient-data-to-ok.json",
        "--offline",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).is_empty());
    assert!(stderr(&out).contains("INSUFFICIENT_DATA -> OK"));
}

#[test]
fn a_missing_file_is_an_internal_failure_with_exit_1() {
    let out = replay(&["events/does-not-exist.json", "--offline"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("does-not-exist.json"));
}

#[test]
fn now_can_be_moved_to_see_the_report_later() {
    let out = replay(&[
        "events/sns-alb-alarm-target-response-time.json",
        "--offline",
        "--now",
        "2026-11-27T15:32:10Z",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let d: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(d["generated_at"], "2026-11-27T15:32:10Z");
    assert_eq!(d["classification"]["behaviour"], "sustained");
}

#[test]
fn out_dir_receives_every_rendering() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/cli-out")
        .join(std::process::id().to_string());
    let out = replay(&[
        "events/sns-alb-alarm-target-response-time.json",
        "--offline",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for file in ["diagnosis.json", "email.txt", "slack.json", "chat.json"] {
        assert!(written.join(file).metadata().unwrap().len() > 100, "{file}");
    }
    let email = std::fs::read_to_string(written.join("email.txt")).unwrap();
    assert_eq!(
        email.trim_end(),
        stdout(&out).trim_end(),
        "the email body is the text report"
    );
}

/// Two alarm records in one SNS event print two JSON documents, one per line.
#[test]
fn a_batch_in_json_prints_one_document_per_line() {
    let root = env!("CARGO_MANIFEST_DIR");
    let single: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{root}/events/sns-alb-alarm-target-response-time.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let first = single["Records"][0].clone();
    let mut second = first.clone();
    let message = second["Sns"]["Message"]
        .as_str()
        .unwrap()
        .replace("\"AlarmName\":\"", "\"AlarmName\":\"other-");
    second["Sns"]["Message"] = serde_json::Value::String(message);
    second["Sns"]["MessageId"] = serde_json::Value::String("second-message".into());
    let batch = serde_json::json!({ "Records": [first, second] });
    let dir = std::env::temp_dir().join(format!("alarm-triage-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("batch.json");
    std::fs::write(&path, batch.to_string()).unwrap();

    let out = replay(&[path.to_str().unwrap(), "--offline", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let names: Vec<String> = lines
        .iter()
        .map(|l| {
            let d: serde_json::Value = serde_json::from_str(l).unwrap();
            d["alarm"]["name"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(names[1].starts_with("other-"), "{names:?}");
    assert_ne!(names[0], names[1]);
    let _ = std::fs::remove_dir_all(dir);
}

fn charts(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_alarm-triage"))
        .arg("charts")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_LOG")
        .output()
        .expect("the binary runs")
}

#[test]
fn the_charts_of_a_saved_diagnosis_are_written_as_pngs() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-charts");
    let _ = std::fs::remove_dir_all(&dir);
    let out = charts(&[
        "tests/fixtures/diagnosis-alb-flapping-worker-ceiling.json",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for file in ["latency.png", "pods-cpu.png"] {
        let png = std::fs::read(dir.join(file)).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{file}");
    }
}

#[test]
fn charts_of_something_that_is_not_a_diagnosis_say_what_was_expected() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-charts-bad");
    let out = charts(&[
        "events/sns-alb-alarm-target-response-time.json",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("is not a diagnosis (expected the JSON of schema alarm-triage/diagnosis/v1)"),
        "{}",
        stderr(&out)
    );
}

/// `alarm-triage digest` against the local CloudWatch: alarms created
/// through the SDK, 30 days of state changes loaded as CloudWatch would have
/// recorded them, and the alarm's own datapoints; each noisy alarm lands
/// under its kind of noise with a suggestion, the healthy one nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_digest_ranks_thirty_days_of_alarm_noise() {
    use aws_sdk_cloudwatch::primitives::DateTime as SmithyTime;
    use aws_sdk_cloudwatch::types::{ComparisonOperator, MetricDatum, Statistic};

    let world = support::LocalWorld::up("alb-flapping-worker-ceiling");
    let cloudwatch = aws_sdk_cloudwatch::Client::new(&world.sdk_config().await);
    for (name, metric, threshold) in [
        ("digest-flapping", "Latency", 1.0),
        ("digest-stuck", "QueueDepth", 100.0),
        ("digest-normal-range", "Errors", 5.0),
        ("digest-never-fires", "Quiet", 1.0),
        ("digest-healthy", "Saturation", 0.9),
    ] {
        cloudwatch
            .put_metric_alarm()
            .alarm_name(name)
            .namespace("Local/Digest")
            .metric_name(metric)
            .statistic(Statistic::Average)
            .period(60)
            .evaluation_periods(1)
            .threshold(threshold)
            .comparison_operator(ComparisonOperator::GreaterThanThreshold)
            .send()
            .await
            .unwrap();
    }
    let now = chrono::Utc::now();
    let at = |minutes_ago: i64| (now - chrono::Duration::minutes(minutes_ago)).to_rfc3339();
    let trip = |start: i64, lasted: i64| {
        vec![
            serde_json::json!({"timestamp": at(start), "old_state": "OK", "new_state": "ALARM"}),
            serde_json::json!({"timestamp": at(start - lasted), "old_state": "ALARM", "new_state": "OK"}),
        ]
    };
    // Three 3-minute trips a day for 29 days; one trip 20 days ago that never cleared; one long trip.
    let flapping: Vec<_> = (1..30)
        .flat_map(|day| (0..3).flat_map(move |k| trip(day * 1440 - k * 300, 3)))
        .collect();
    let stuck = vec![
        serde_json::json!({"timestamp": at(20 * 1440), "old_state": "OK", "new_state": "ALARM"}),
    ];
    let healthy = trip(5 * 1440, 90);
    for (name, items) in [
        ("digest-flapping", flapping),
        ("digest-stuck", stuck),
        ("digest-healthy", healthy),
    ] {
        let body = serde_json::json!({
            "account": world.facts["account"], "region": world.region(),
            "alarm_name": name, "items": items,
        });
        let answer = support::http(
            world.endpoint(),
            "POST",
            "/_alarm_triage/alarm-history",
            &body.to_string(),
        );
        assert!(answer.contains(" 200 "), "{answer}");
    }
    // The errors sit at 10 for the last three hours: past the threshold of 5.
    let data: Vec<MetricDatum> = (0..180)
        .map(|i| {
            MetricDatum::builder()
                .metric_name("Errors")
                .value(10.0)
                .timestamp(SmithyTime::from_secs(
                    (now - chrono::Duration::minutes(i)).timestamp(),
                ))
                .build()
        })
        .collect();
    cloudwatch
        .put_metric_data()
        .namespace("Local/Digest")
        .set_metric_data(Some(data))
        .send()
        .await
        .unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_alarm-triage"))
        .args(["digest", "--since", "30d", "--prefix", "digest-"])
        .envs(&world.env)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    println!("{text}");
    let position = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} is not in the digest:\n{text}"))
    };
    let flapping = position("digest-flapping: 87 trips into ALARM, 87 cleared within minutes");
    let stuck = position("digest-stuck: in ALARM 67 % of the time");
    let normal = position(
        "digest-normal-range: the metric's p95 over the span is 10 against a threshold of 5",
    );
    let never = position("digest-never-fires: no trip into ALARM in 30 days");
    assert!(
        flapping < stuck && stuck < normal && normal < never,
        "ranked:\n{text}"
    );
    assert!(text.contains("(5 alarms read)"), "{text}");
    assert!(
        !text.contains("digest-healthy"),
        "a healthy alarm is not noise:\n{text}"
    );
    assert!(text.contains("DatapointsToAlarm 2 of 3"), "{text}");
}
