//! The `alarm-triage replay` command as people run it: output and exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

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
        ("json", "\"schema\": \"alarm-triage/diagnosis/v1\""),
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
