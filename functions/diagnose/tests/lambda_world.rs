//! End to end: the diagnose binary runs under cargo-lambda's runtime emulator;
//! each world's alarm changes state in moto, CloudWatch's notification goes out
//! through SNS to an HTTP subscription that invokes the function with a Lambda
//! SNS event; the function reads CloudWatch and ELBv2 in moto and publishes its
//! diagnosis to the diagnosis topic, and the test reads it back from the SQS
//! queue subscribed to that topic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use support::{LocalWorld, Options};

fn world_with_lambda(name: &str) -> LocalWorld {
    LocalWorld::up_with(
        name,
        Options {
            lambda_binary: Some(PathBuf::from(env!("CARGO_BIN_EXE_diagnose"))),
            // Publish to the topic only: the queue receives it through its subscription.
            lambda_env: vec!["DIAGNOSIS_QUEUE_URL=".to_owned()],
            ..Options::default()
        },
    )
}

/// The diagnoses on the queue subscribed to the diagnosis topic, with their SNS envelopes.
async fn published_diagnoses(world: &LocalWorld, wait: Duration) -> Vec<(Value, Value)> {
    world
        .diagnosis_envelopes(wait)
        .await
        .into_iter()
        .map(|envelope| {
            let diagnosis = serde_json::from_str(envelope["Message"].as_str().unwrap()).unwrap();
            (envelope, diagnosis)
        })
        .collect()
}

fn verdict_of<'a>(diagnosis: &'a Value, id: &str) -> Option<&'a str> {
    diagnosis["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .and_then(|f| f["verdict"].as_str())
}

/// Compares a published diagnosis with the world's expected.yaml. A listed
/// finding must either carry the expected verdict, or be undecidable because
/// its evidence source is reported as a gap (the Kubernetes findings until the
/// cluster can be read).
fn assert_matches_expected(world: &LocalWorld, diagnosis: &Value) {
    assert_roles_as_expected(world, diagnosis);
    assert_change_as_expected(world, diagnosis);
    assert_suspects_and_severity_as_expected(world, diagnosis);
    assert_first_screen_as_expected(world, diagnosis);
    assert_logs_as_expected(world, diagnosis);
    assert_no_secret_leaks(world, diagnosis);
    let expected = world.expected();
    if let Some(origin) = expected["series_origin_contains"].as_str() {
        let got = diagnosis["workload"]["series_origin"]
            .as_str()
            .unwrap_or_default();
        assert!(
            got.contains(origin),
            "{}: the pod series came from {got:?}, expected {origin:?}",
            world.name
        );
    }
    let context = || serde_json::to_string_pretty(&diagnosis["findings"]).unwrap();
    assert_eq!(
        diagnosis["classification"]["behaviour"], expected["classification"],
        "{}",
        world.name
    );
    let culprits: Vec<&Value> = diagnosis["target_groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["culprit"] == true)
        .collect();
    // `culprit_target_group: null`: nothing behind the load balancer is to
    // blame (a shared problem, or nothing changed).
    if expected["culprit_target_group"].is_null() {
        assert!(
            culprits.is_empty(),
            "{}: no culprit expected, got {:?}\n{}",
            world.name,
            culprits.iter().map(|c| &c["name"]).collect::<Vec<_>>(),
            diagnosis["headline"]
        );
    } else {
        let culprit = culprits.first().expect("a culprit");
        assert_eq!(
            culprit["name"], expected["culprit_target_group"],
            "{}: {}",
            world.name, diagnosis["headline"]
        );
        let service = culprit["kubernetes_service"].clone();
        assert_eq!(
            format!(
                "{}/{}",
                service["namespace"].as_str().unwrap(),
                service["name"].as_str().unwrap()
            ),
            expected["culprit_service"].as_str().unwrap()
        );
    }
    let gaps: Vec<String> = diagnosis["evidence_gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["source"].as_str().unwrap().to_owned())
        .collect();
    for (id, want) in expected["findings"].as_object().unwrap() {
        match verdict_of(diagnosis, id) {
            Some(got) => assert_eq!(
                got,
                want.as_str().unwrap(),
                "{}: finding {id}\n{}",
                world.name,
                context()
            ),
            None => {
                let kubernetes =
                    id.starts_with("pods.") || id.starts_with("hpa.") || id.starts_with("deploy.");
                assert!(
                    kubernetes
                        && gaps
                            .iter()
                            .any(|g| g.starts_with("kubernetes") || g.starts_with("prometheus")),
                    "{}: finding {id} is neither decided nor explained by a gap ({gaps:?})",
                    world.name
                );
            }
        }
    }
}

/// `change:` in `expected.yaml`: the change the first screen names (its
/// kind, and strings its line must contain), or `none` for "no change".
fn assert_change_as_expected(world: &LocalWorld, diagnosis: &Value) {
    let expected = world.expected();
    let changes = diagnosis["changes"].as_array().cloned().unwrap_or_default();
    let chosen = changes.iter().find(|c| c["most_plausible"] == true);
    let what_changed = diagnosis["what_changed"].as_str().unwrap_or_default();
    match &expected["change"] {
        Value::String(none) if none == "none" => {
            assert!(
                chosen.is_none() && what_changed.starts_with("No change in the 6 h before"),
                "{}: nothing changed, yet the report says {what_changed:?} ({chosen:?})",
                world.name
            );
        }
        // Changes came before the breach, and the suspect tests cleared them all.
        Value::String(acquitted) if acquitted == "acquitted" => {
            assert!(
                chosen.is_none() && what_changed.contains("acquitted"),
                "{}: every change should be acquitted, yet the report says {what_changed:?} ({chosen:?})",
                world.name
            );
        }
        Value::Object(want) => {
            let chosen = chosen.unwrap_or_else(|| {
                panic!(
                    "{}: no most plausible change; the report says {what_changed:?}; changes:\n{}",
                    world.name,
                    serde_json::to_string_pretty(&changes).unwrap()
                )
            });
            assert_eq!(chosen["kind"], want["kind"], "{}: {chosen}", world.name);
            for mention in want["mentions"].as_array().into_iter().flatten() {
                let mention = mention.as_str().unwrap();
                assert!(
                    what_changed.contains(mention),
                    "{}: the first screen's change line {what_changed:?} does not mention {mention:?}",
                    world.name
                );
            }
        }
        _ => {}
    }
}

/// `suspects:` in `expected.yaml`: each `{kind, mentions, verdict}` must be
/// judged so; `severity` (exact) and `severity_at_most` bound the severity.
fn assert_suspects_and_severity_as_expected(world: &LocalWorld, diagnosis: &Value) {
    let expected = world.expected();
    let suspects = diagnosis["suspects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for want in expected["suspects"].as_array().into_iter().flatten() {
        let mentions: Vec<&str> = want["mentions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let verdicts: Vec<&str> = suspects
            .iter()
            .filter(|s| s["kind"] == want["kind"])
            .filter(|s| {
                let text = format!(
                    "{} {}",
                    s["subject"].as_str().unwrap_or_default(),
                    s["summary"].as_str().unwrap_or_default()
                );
                mentions.iter().all(|m| text.contains(m))
            })
            .filter_map(|s| s["verdict"].as_str())
            .collect();
        assert!(
            !verdicts.is_empty() && verdicts.iter().all(|v| *v == want["verdict"]),
            "{}: suspect {want} judged {verdicts:?}\n{}",
            world.name,
            serde_json::to_string_pretty(&suspects).unwrap()
        );
    }
    let order = ["info", "warning", "critical"];
    let rank = |s: &Value| order.iter().position(|o| s == o);
    if expected["severity"].is_string() {
        assert_eq!(
            diagnosis["severity"], expected["severity"],
            "{}: {}",
            world.name, diagnosis["severity_reason"]
        );
    }
    if expected["severity_at_most"].is_string() {
        assert!(
            rank(&diagnosis["severity"]) <= rank(&expected["severity_at_most"]),
            "{}: severity {} above {} ({})",
            world.name,
            diagnosis["severity"],
            expected["severity_at_most"],
            diagnosis["severity_reason"]
        );
    }
}

/// `mentions:` must be on the first screen (the headline, the change line or
/// a cause's summary); `must_not_say:` in neither the headline, the change
/// line nor any next step (case-insensitive).
fn assert_first_screen_as_expected(world: &LocalWorld, diagnosis: &Value) {
    let expected = world.expected();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let findings = diagnosis["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let causes: Vec<String> = findings
        .iter()
        .filter(|f| f["role"] == "cause")
        .map(|f| text(&f["summary"]))
        .collect();
    let first_screen = format!(
        "{} {} {}",
        text(&diagnosis["headline"]),
        text(&diagnosis["what_changed"]),
        causes.join(" ")
    );
    for want in listed(&expected, "mentions") {
        assert!(
            first_screen.contains(&want),
            "{}: the first screen does not mention {want:?}: {first_screen}",
            world.name
        );
    }
    let advice: Vec<String> = diagnosis["next_steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| text(&s["proposal"]))
        .collect();
    let said = format!(
        "{} {} {}",
        text(&diagnosis["headline"]),
        text(&diagnosis["what_changed"]),
        advice.join(" ")
    )
    .to_lowercase();
    for banned in listed(&expected, "must_not_say") {
        assert!(
            !said.contains(&banned.to_lowercase()),
            "{}: the report says {banned:?}: {said}",
            world.name
        );
    }
}

/// `logs:` in `expected.yaml`: `new_pattern` is in the template of the new
/// error the first screen names; each of `old_patterns` is reported with its
/// before-count and never as new; `none_new` means no error or warning
/// started or jumped with the breach (case-insensitive).
fn assert_logs_as_expected(world: &LocalWorld, diagnosis: &Value) {
    let expected = world.expected();
    let want = &expected["logs"];
    if want.is_null() {
        return;
    }
    let patterns = diagnosis["logs"]["patterns"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let context = || serde_json::to_string_pretty(&diagnosis["logs"]).unwrap();
    let is_new = |p: &Value| {
        ["new", "last_words", "increased"].contains(&p["trend"].as_str().unwrap_or_default())
    };
    let template = |p: &Value| p["template"].as_str().unwrap_or_default().to_lowercase();
    let named = patterns.iter().find(|p| is_new(p) && p["level"] == "error");
    if let Some(pattern) = want["new_pattern"].as_str() {
        assert!(
            named.is_some_and(|p| template(p).contains(&pattern.to_lowercase())),
            "{}: the new error named is not {pattern:?}:\n{}",
            world.name,
            context()
        );
    }
    for old in want["old_patterns"].as_array().into_iter().flatten() {
        let old = old.as_str().unwrap().to_lowercase();
        let reported = patterns.iter().filter(|p| template(p).contains(&old));
        let mut reported = reported.peekable();
        assert!(
            reported.peek().is_some(),
            "{}: {old:?} not reported:\n{}",
            world.name,
            context()
        );
        for p in reported {
            assert!(
                !is_new(p) && p["before"].as_u64().unwrap_or_default() > 0,
                "{}: {old:?} should be reported as there before:\n{}",
                world.name,
                context()
            );
        }
    }
    if want["none_new"] == true {
        let new: Vec<&Value> = patterns
            .iter()
            .filter(|p| is_new(p) && p["level"] != "info")
            .collect();
        assert!(new.is_empty(), "{}: new patterns {new:?}", world.name);
    }
}

/// `secrets:` in `expected.yaml` appear in no rendering (JSON, text and
/// email, Slack, chat) and in none of the function's own log lines.
fn assert_no_secret_leaks(world: &LocalWorld, diagnosis: &Value) {
    let expected = world.expected();
    let secrets = listed(&expected, "secrets");
    if secrets.is_empty() {
        return;
    }
    let d: alarm_triage::diagnosis::Diagnosis = serde_json::from_value(diagnosis.clone()).unwrap();
    let everything = [
        diagnosis.to_string(),
        alarm_triage::render::text::render(&d),
        alarm_triage::render::slack::render(&d).to_string(),
        alarm_triage::render::chat::render(&d).to_string(),
        world.log("diagnose"),
    ];
    for secret in secrets {
        for (i, text) in everything.iter().enumerate() {
            assert!(
                !text.contains(&secret),
                "{}: a planted secret leaked into rendering {i} (json, text, slack, chat, log)",
                world.name
            );
        }
    }
}

/// The finding ids `expected.yaml` lists under `key`.
fn listed(expected: &Value, key: &str) -> Vec<String> {
    expected[key]
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(|id| id.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `causes` must be causes of the breach, `not_causes` must not (context or
/// ruled out), and no cause may be left out of the headline's order.
fn assert_roles_as_expected(world: &LocalWorld, diagnosis: &Value) {
    let expected = world.expected();
    let role_of = |id: &str| {
        diagnosis["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .and_then(|f| f["role"].as_str())
            .map(str::to_owned)
    };
    for id in listed(&expected, "causes") {
        assert_eq!(
            role_of(&id).as_deref(),
            Some("cause"),
            "{}: {id} should be a cause\n{}",
            world.name,
            diagnosis["headline"]
        );
    }
    for id in listed(&expected, "not_causes") {
        assert_ne!(
            role_of(&id).as_deref(),
            Some("cause"),
            "{}: {id} should not be a cause\n{}",
            world.name,
            diagnosis["headline"]
        );
    }
}

async fn diagnose_world(name: &str) -> (LocalWorld, Value) {
    let world = world_with_lambda(name);
    world.deliver();
    let records = world.invocations("invocations", 1, Duration::from_secs(60));
    assert_eq!(
        records.len(),
        1,
        "one invocation; diagnose log:\n{}",
        world.log("diagnose")
    );
    assert_eq!(records[0]["status"], 200, "{}", records[0]);
    assert!(
        records[0]["function_error"].is_null(),
        "{}\n{}",
        records[0],
        world.log("diagnose")
    );
    let published = published_diagnoses(&world, Duration::from_secs(20)).await;
    assert_eq!(published.len(), 1, "one diagnosis on the queue");
    let (envelope, diagnosis) = published.into_iter().next().unwrap();
    assert_eq!(
        envelope["MessageAttributes"]["classification"]["Value"],
        diagnosis["classification"]["behaviour"]
    );
    assert!(envelope["Subject"].as_str().unwrap().len() <= 100);
    (world, diagnosis)
}

/// The worlds with a test of their own below; every other world in
/// `tests/worlds/` is diagnosed by [`every_other_world_is_diagnosed_as_its_expected_yaml_says`].
const WORLDS_WITH_THEIR_OWN_TEST: [&str; 13] = [
    "alb-logs-missing-column-after-rollout",
    "alb-logs-old-warning-innocent",
    "alb-flapping-worker-ceiling",
    "alb-low-traffic-artifact",
    "alb-sustained-hot-pod",
    "eks-private-endpoint",
    "org-member-account-hot-pod",
    "nlb-target-resets-one-group-crashloop",
    "nlb-unhealthy-hosts-one-group",
    "alb-health-check-path-edited",
    "alb-rollout-lower-cpu-limit",
    "alb-security-group-rule-revoked",
    "alb-no-change-organic-traffic-growth",
];

/// The organisation world's member (B) and central (A) accounts.
const MEMBER: &str = "418295730661";
const ORG_WORLD: &str = "org-member-account-hot-pod";

/// The organisation world's two diagnoses: the metric alarm's and the composite's.
async fn diagnose_through_eventbridge(world: &LocalWorld, via: &str) -> Vec<Value> {
    world.deliver_via(via);
    let expected = if via == "both" { 4 } else { 2 };
    let records = world.invocations("invocations", expected, Duration::from_secs(90));
    assert_eq!(
        records.len(),
        expected,
        "child and composite, through {via}; diagnose log:\n{}",
        world.log("diagnose")
    );
    for record in &records {
        assert!(
            record["function_error"].is_null(),
            "{record}\n{}",
            world.log("diagnose")
        );
    }
    let mut diagnoses: Vec<Value> = published_diagnoses(world, Duration::from_secs(30))
        .await
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    // Both may not be on the queue at the first look.
    if diagnoses.len() < 2 {
        diagnoses.extend(
            published_diagnoses(world, Duration::from_secs(20))
                .await
                .into_iter()
                .map(|(_, d)| d),
        );
    }
    diagnoses
}

#[tokio::test]
async fn an_alarm_in_a_member_account_is_diagnosed_centrally_with_its_evidence_read_through_the_member_role()
 {
    let world = world_with_lambda(ORG_WORLD);
    let diagnoses = diagnose_through_eventbridge(&world, "eventbridge").await;
    assert_eq!(diagnoses.len(), 2, "{diagnoses:#?}");
    let child = diagnoses
        .iter()
        .find(|d| d["alarm"]["kind"] != "composite")
        .expect("the metric alarm's diagnosis");
    assert_eq!(child["alarm"]["account"], MEMBER);
    assert_matches_expected(&world, child);
    assert!(
        child["evidence_gaps"].as_array().unwrap().is_empty(),
        "everything read in account {MEMBER}: {:#}",
        child["evidence_gaps"]
    );

    // The composite alarm over it, through EventBridge too: its rule and the child that fired.
    let composite = diagnoses
        .iter()
        .find(|d| d["alarm"]["kind"] == "composite")
        .expect("the composite alarm's diagnosis");
    assert!(
        composite["alarm"]["alarm_rule"]
            .as_str()
            .unwrap()
            .contains(child["alarm"]["name"].as_str().unwrap()),
        "{:#}",
        composite["alarm"]
    );
    assert_eq!(composite["alarm"]["account"], MEMBER);
}

#[tokio::test]
async fn without_the_member_role_the_report_names_the_role_and_what_to_deploy() {
    let variant = LocalWorld::variant(ORG_WORLD, |world| {
        world.replace(
            "member_role: {name: AlarmTriageReader, present: true}",
            "member_role: {name: AlarmTriageReader, present: false}",
        )
    });
    let world = LocalWorld::up_with(
        variant.to_str().unwrap(),
        Options {
            lambda_binary: Some(PathBuf::from(env!("CARGO_BIN_EXE_diagnose"))),
            lambda_env: vec!["DIAGNOSIS_QUEUE_URL=".to_owned()],
            ..Options::default()
        },
    );
    let diagnoses = diagnose_through_eventbridge(&world, "eventbridge").await;
    let child = diagnoses
        .iter()
        .find(|d| d["alarm"]["kind"] != "composite")
        .expect("published all the same");
    let role = format!("arn:aws:iam::{MEMBER}:role/AlarmTriageReader");
    let gaps = child["evidence_gaps"].as_array().unwrap();
    assert!(!gaps.is_empty());
    for gap in gaps {
        let reason = gap["reason"].as_str().unwrap();
        assert!(
            reason.contains(&role) && reason.contains("infra/member/template.yaml"),
            "{reason}"
        );
    }
}

#[tokio::test]
async fn one_transition_delivered_by_sns_and_by_eventbridge_is_published_once() {
    let world = world_with_lambda(ORG_WORLD);
    let diagnoses = diagnose_through_eventbridge(&world, "both").await;
    let mut ids: Vec<&str> = diagnoses
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids.len(),
        2,
        "one report per alarm, not per delivery: {ids:?}\n{}",
        world.log("diagnose")
    );
    ids.dedup();
    assert_eq!(ids.len(), 2, "the metric alarm and the composite differ");
    assert!(
        world
            .log("diagnose")
            .contains("already published by another delivery"),
        "the second delivery of each transition stood down"
    );
}

#[tokio::test]
async fn every_other_world_is_diagnosed_as_its_expected_yaml_says() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/worlds");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            (path.join("expected.yaml").exists())
                .then(|| path.file_name()?.to_str().map(str::to_owned))
                .flatten()
        })
        .filter(|name| !WORLDS_WITH_THEIR_OWN_TEST.contains(&name.as_str()))
        .collect();
    names.sort();
    for name in &names {
        let (world, diagnosis) = diagnose_world(name).await;
        assert_matches_expected(&world, &diagnosis);
        assert!(
            !diagnosis["headline"].as_str().unwrap().contains("HPA")
                || listed(&world.expected(), "not_causes")
                    .iter()
                    .all(|id| id != "hpa.cannot_react"),
            "{name}: an HPA that is not a cause stays out of the headline: {}",
            diagnosis["headline"]
        );
    }
}

/// A 5xx alarm after a bad rollout names, on the first screen, the error the
/// new pods print (read through pods/log and, for the replaced pods, Logs
/// Insights); a loud warning that was there before is ruled out with its
/// count before the onset and blamed nowhere.
#[tokio::test]
async fn the_logs_name_the_new_error_and_rule_out_the_old_warning_with_its_count() {
    let (world, diagnosis) = diagnose_world("alb-logs-missing-column-after-rollout").await;
    assert_matches_expected(&world, &diagnosis);
    let report: alarm_triage::diagnosis::Diagnosis =
        serde_json::from_value(diagnosis.clone()).unwrap();
    let text = alarm_triage::render::text::render(&report);
    // The text wraps at 80 columns: compare words, not line breaks.
    let first_screen = text
        .split("DETAILS")
        .next()
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        first_screen.contains("column invoices.currency does not exist"),
        "{first_screen}"
    );
    let origins: Vec<&str> = diagnosis["logs"]["read"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["origin"].as_str())
        .collect();
    assert!(
        origins.contains(&"pod_log") && origins.contains(&"logs_insights"),
        "the new pods through pods/log, the replaced ones through the log group: {origins:?}"
    );
    drop(world);

    let (world, diagnosis) = diagnose_world("alb-logs-old-warning-innocent").await;
    assert_matches_expected(&world, &diagnosis);
    assert_eq!(verdict_of(&diagnosis, "logs.new_errors"), Some("refuted"));
    let finding = diagnosis["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "logs.new_errors")
        .unwrap();
    let ruled_out_by = finding["ruled_out_by"].as_str().unwrap_or_default();
    assert!(
        ruled_out_by.contains("deprecated config key") && ruled_out_by.contains("before the onset"),
        "{ruled_out_by}"
    );
}

/// What changed before the breach: an AWS change read from CloudTrail (a
/// health-check path, a security-group rule), a rollout whose only change is
/// its CPU limit, and nothing at all; each named on the first screen.
#[tokio::test]
async fn what_changed_before_the_breach_is_named_on_the_first_screen() {
    for name in [
        "alb-health-check-path-edited",
        "alb-rollout-lower-cpu-limit",
        "alb-security-group-rule-revoked",
        "alb-no-change-organic-traffic-growth",
    ] {
        let (world, diagnosis) = diagnose_world(name).await;
        assert_matches_expected(&world, &diagnosis);
        let report: alarm_triage::diagnosis::Diagnosis =
            serde_json::from_value(diagnosis.clone()).unwrap();
        let screen = alarm_triage::render::text::first_screen(&report).join("\n");
        let line = report.what_changed.as_deref().unwrap();
        assert!(
            screen.contains(&line[..line.len().min(40)]),
            "{name}: the first screen names what changed:\n{screen}"
        );
        println!("== {name}\n{screen}\n");
    }
}

/// The Network Load Balancer family: the same breakdown and workload walk,
/// with flows for traffic, resets for failures and no response time.
#[tokio::test]
async fn network_load_balancer_worlds_are_diagnosed_as_written() {
    for name in [
        "nlb-target-resets-one-group-crashloop",
        "nlb-unhealthy-hosts-one-group",
    ] {
        let (world, diagnosis) = diagnose_world(name).await;
        assert_matches_expected(&world, &diagnosis);
        assert_eq!(diagnosis["alarm"]["namespace"], "AWS/NetworkELB", "{name}");
        let text = diagnosis.to_string();
        assert!(
            !text.contains("TargetResponseTime") && !text.contains("shared ALB"),
            "{name}: an NLB has no response time and is no ALB: {text}"
        );
    }
}

#[tokio::test]
async fn world_1_flapping_worker_ceiling_is_diagnosed_as_written() {
    let (world, diagnosis) = diagnose_world("alb-flapping-worker-ceiling").await;
    assert_matches_expected(&world, &diagnosis);
    assert!(
        diagnosis["headline"]
            .as_str()
            .unwrap()
            .contains("k8s-shop-checkout-8a1f2c3d4e")
    );
}

#[tokio::test]
async fn world_2_low_traffic_artifact_is_diagnosed_as_written() {
    let (world, diagnosis) = diagnose_world("alb-low-traffic-artifact").await;
    assert_matches_expected(&world, &diagnosis);
}

#[tokio::test]
async fn world_3_sustained_hot_pod_is_diagnosed_as_written() {
    let (world, diagnosis) = diagnose_world("alb-sustained-hot-pod").await;
    assert_matches_expected(&world, &diagnosis);
    let api = &diagnosis["target_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["culprit"] == true)
        .unwrap();
    assert_eq!(api["unhealthy_targets"][0]["reason"], "Target.Timeout");
}

#[tokio::test]
async fn world_4_private_endpoint_still_publishes_with_the_kubernetes_gap() {
    let (world, diagnosis) = diagnose_world("eks-private-endpoint").await;
    assert_matches_expected(&world, &diagnosis);
    assert!(
        diagnosis["evidence_gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["source"].as_str().unwrap().starts_with("kubernetes"))
    );
}

#[tokio::test]
async fn a_failed_publish_fails_the_invocation_and_the_retry_publishes_the_same_id() {
    let world = world_with_lambda("alb-low-traffic-artifact");
    world.inject(json!([{ "service": "sns", "operation": "Publish", "status": 500, "code": "InternalError", "times": 4 }]));
    let event = std::fs::read_to_string(world.deliver()).unwrap();
    let records = world.invocations("invocations", 1, Duration::from_secs(60));
    assert_eq!(records[0]["function_error"], "Unhandled", "{}", records[0]);
    assert!(
        records[0]["body"].as_str().unwrap().contains("publish"),
        "{}",
        records[0]
    );

    // Lambda retries the same event; this time SNS accepts it.
    let invoke = format!(
        "{}/2015-03-31/functions/_/invocations",
        world.var("LAMBDA_INVOKE_URL")
    );
    let answer = support::http(
        world.var("LAMBDA_INVOKE_URL"),
        "POST",
        invoke.trim_start_matches(world.var("LAMBDA_INVOKE_URL")),
        &event,
    );
    assert!(answer.contains("\"outcome\":\"diagnosed\""), "{answer}");
    let published = published_diagnoses(&world, Duration::from_secs(20)).await;
    assert_eq!(published.len(), 1);
    let failed = records[0]["body"].as_str().unwrap();
    let retried_id = published[0].1["id"].as_str().unwrap();
    assert!(
        failed.contains(&format!("diagnosis {retried_id}")),
        "the failed attempt had the same id: {failed}"
    );
    assert!(
        answer.contains(retried_id),
        "the retry's response names {retried_id}"
    );
}
