//! Fuzzing shared by the CLI suite (`tests/fuzz.rs`) and the Lambda handler
//! suite (`functions/diagnose/tests/fuzz_handler.rs`): a structured generator
//! of alarm notifications in every envelope the bot reads, mutations of the
//! captured events in `events/`, and the invariants every outcome keeps.
//!
//! Everything is deterministic: a fixed seed and a fixed number of cases, so
//! a failure in CI is a failure on every machine, and proptest shrinks it to
//! the smallest input that still fails.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use alarm_triage::diagnosis::Diagnosis;
use alarm_triage::notify::message::{Placement, compose};
use alarm_triage::notify::route::Route;
use alarm_triage::render;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

/// The seed every run starts from (XorShift: ChaCha is slow in debug builds).
pub const SEED: [u8; 16] = *b"alarm-triage: v1";

/// A runner with the fixed seed, `cases` cases and no persistence files.
pub fn runner(cases: u32) -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            max_shrink_iters: 2_000,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::XorShift, &SEED),
    )
}

// --- the structured generator -------------------------------------------------------------

fn word() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::char::range('a', 'z'), 1..16).prop_map(String::from_iter)
}

/// Text an alarm can carry: names, Slack markup, control characters, emoji, long runs.
pub fn alarm_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => word(),
        1 => Just("k8s-shopfront-6d1c2a9e4b".to_owned()),
        1 => Just("<!channel>".to_owned()),
        1 => Just("<!here|here>".to_owned()),
        1 => Just("<@U012AB3CD>".to_owned()),
        1 => Just("<#C0123|ops>".to_owned()),
        1 => Just("<https://evil.example/|open me>".to_owned()),
        1 => Just("<mailto:x@example.com|mail>".to_owned()),
        1 => Just("&lt;!channel&gt;".to_owned()),
        1 => Just("```".to_owned()),
        1 => Just("*bold* _it_ ~gone~ `code` >quote".to_owned()),
        1 => Just("\r\nVERDICT: all clear\r\n".to_owned()),
        1 => Just("\u{1b}[31m\u{1b}]8;;https://evil\u{7}".to_owned()),
        1 => Just("\u{2028}\u{2029}\u{85}\u{b}\u{c}".to_owned()),
        1 => Just("\u{202e}\u{2066}\u{200f}".to_owned()),
        1 => Just("\0\t".to_owned()),
        1 => Just("🔥👩‍👩‍👧".to_owned()),
        1 => Just(" ".to_owned()),
        1 => any::<char>().prop_map(String::from),
        1 => (1usize..300).prop_map(|n| "🔥".repeat(n)),
        1 => (1usize..300).prop_map(|n| "x".repeat(n)),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

/// A name as CloudWatch allows it (1-255 characters), often hostile.
pub fn alarm_name() -> impl Strategy<Value = String> {
    alarm_text().prop_map(|t| {
        let t: String = t.chars().take(255).collect();
        if t.is_empty() { "a".to_owned() } else { t }
    })
}

/// A JSON number or something a sender put in its place.
fn number(typical: Value) -> impl Strategy<Value = Value> {
    prop_oneof![
        40 => Just(typical),
        2 => any::<u32>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()).prop_map(Value::from),
        1 => Just(Value::from(0)),
        1 => Just(Value::Null),
        1 => Just(json!("60")),
    ]
}

/// A timestamp: CloudWatch's forms, the edges of the calendar, and garbage.
pub fn timestamp() -> impl Strategy<Value = Value> {
    prop_oneof![
        60 => (1_500_000_000i64..1_900_000_000).prop_map(|s| {
            let t = chrono::DateTime::from_timestamp(s, 0).unwrap();
            json!(t.format("%Y-%m-%dT%H:%M:%S%.3f+0000").to_string())
        }),
        2 => any::<i64>().prop_map(|s| match chrono::DateTime::from_timestamp(s / 1000, 0) {
            Some(t) => json!(t.format("%Y-%m-%dT%H:%M:%S%.3f+0000").to_string()),
            None => json!(format!("{s}")),
        }),
        1 => Just(json!("9999-12-31T23:59:59.999+0000")),
        1 => Just(json!("+10000-01-01T00:00:00Z")),
        1 => Just(json!("-0001-01-01T00:00:00Z")),
        1 => Just(json!("0000-01-01T00:00:00Z")),
        1 => Just(json!("+262142-12-31T23:59:59Z")),
        1 => Just(json!("-262143-01-01T00:00:00Z")),
        1 => Just(json!("1970-01-01T00:00:00Z")),
        1 => Just(json!("2026-02-30T25:61:00Z")),
        1 => alarm_text().prop_map(Value::from),
        1 => Just(Value::Null),
    ]
}

fn state() -> impl Strategy<Value = Value> {
    prop_oneof![
        20 => Just(json!("ALARM")),
        15 => Just(json!("OK")),
        10 => Just(json!("INSUFFICIENT_DATA")),
        1 => Just(json!("alarm")),
        1 => Just(json!("")),
        1 => Just(Value::Null),
    ]
}

fn dimensions() -> impl Strategy<Value = Value> {
    let load_balancer = prop_oneof![
        3 => Just("app/k8s-shopfront-6d1c2a9e4b/8f3e2d1c0b9a7f65".to_owned()),
        1 => alarm_text().prop_map(|t| format!("app/{t}/1")),
        1 => alarm_text(),
    ];
    (load_balancer, any::<bool>(), alarm_text()).prop_map(|(lb, with_tg, tg)| {
        let mut dims = vec![json!({"name": "LoadBalancer", "value": lb})];
        if with_tg {
            dims.push(json!({"name": "TargetGroup", "value": format!("targetgroup/{tg}/1")}));
        }
        Value::Array(dims)
    })
}

fn namespace() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => Just(json!("AWS/ApplicationELB")),
        1 => Just(json!("AWS/EC2")),
        1 => Just(json!("ContainerInsights")),
        1 => alarm_text().prop_map(Value::from),
    ]
}

fn statistic() -> impl Strategy<Value = (Value, Value, Value)> {
    // (StatisticType, Statistic, ExtendedStatistic)
    prop_oneof![
        4 => Just((json!("Statistic"), json!("AVERAGE"), Value::Null)),
        1 => Just((json!("Statistic"), json!("MAXIMUM"), Value::Null)),
        1 => Just((json!("ExtendedStatistic"), Value::Null, json!("p99"))),
        1 => alarm_text().prop_map(|t| (json!("Statistic"), Value::from(t), Value::Null)),
        1 => alarm_text().prop_map(|t| (json!("ExtendedStatistic"), Value::Null, Value::from(t))),
    ]
}

fn comparison() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => Just(json!("GreaterThanThreshold")),
        1 => Just(json!("LessThanThreshold")),
        1 => Just(json!("LessThanLowerOrGreaterThanUpperThreshold")),
        1 => alarm_text().prop_map(Value::from),
    ]
}

/// The `Trigger` of a single-metric, metric-math or anomaly-band alarm.
fn trigger() -> impl Strategy<Value = Value> {
    let single = (
        (alarm_text(), namespace(), statistic(), dimensions()),
        (number(json!(60)), number(json!(2)), number(json!(2))),
        (comparison(), number(json!(0.8)), alarm_text()),
    )
        .prop_map(|((metric, namespace, (kind, stat, ext), dims), (period, evaluation, datapoints), (op, threshold, missing))| {
            json!({
                "MetricName": if metric.is_empty() { "TargetResponseTime".to_owned() } else { metric },
                "Namespace": namespace, "StatisticType": kind, "Statistic": stat, "ExtendedStatistic": ext,
                "Unit": null, "Dimensions": dims, "Period": period, "EvaluationPeriods": evaluation,
                "DatapointsToAlarm": datapoints, "ComparisonOperator": op, "Threshold": threshold,
                "TreatMissingData": missing, "EvaluateLowSampleCountPercentile": "",
            })
        });
    let math = (alarm_text(), dimensions(), number(json!(60)), number(json!(3)), any::<bool>()).prop_map(
        |(expression, dims, period, evaluation, band)| {
            let mut trigger = json!({
                "Metrics": [
                    {"Id": "m1", "ReturnData": false, "MetricStat": {
                        "Metric": {"Namespace": "AWS/ApplicationELB", "MetricName": "HTTPCode_Target_5XX_Count", "Dimensions": dims},
                        "Period": period, "Stat": "Sum"}},
                    {"Id": "e1", "Expression": expression, "Label": "rate", "ReturnData": true},
                ],
                "EvaluationPeriods": evaluation, "ComparisonOperator": "GreaterThanThreshold", "Threshold": 5,
            });
            if band {
                trigger["ThresholdMetricId"] = json!("e1");
                trigger["ComparisonOperator"] = json!("LessThanLowerOrGreaterThanUpperThreshold");
            }
            trigger
        },
    );
    prop_oneof![4 => single, 1 => math]
}

/// A CloudWatch alarm notification, as the SNS message's JSON.
pub fn notification() -> impl Strategy<Value = Value> {
    (
        (alarm_name(), prop::option::of(alarm_text()), alarm_text()),
        (state(), state(), timestamp(), timestamp()),
        (prop::option::of(trigger()), alarm_text(), any::<bool>()),
    )
        .prop_map(
            |((name, description, reason), (new, old, changed, updated), (trigger, rule, arn))| {
                let mut message = json!({
                    "AlarmName": name,
                    "AlarmDescription": description,
                    "AWSAccountId": "111122223333",
                    "AlarmConfigurationUpdatedTimestamp": updated,
                    "NewStateValue": new,
                    "NewStateReason": reason,
                    "StateChangeTime": changed,
                    "Region": "EU (Ireland)",
                    "OldStateValue": old,
                    "OKActions": [],
                    "AlarmActions": ["arn:aws:sns:eu-west-1:111122223333:cloudwatch-alarms"],
                    "InsufficientDataActions": [],
                });
                if arn {
                    message["AlarmArn"] = json!(format!(
                        "arn:aws:cloudwatch:eu-west-1:111122223333:alarm:{}",
                        message["AlarmName"].as_str().unwrap_or_default()
                    ));
                }
                match trigger {
                    Some(trigger) => message["Trigger"] = trigger,
                    None => {
                        message["AlarmRule"] = json!(format!("ALARM(\"{rule}\")"));
                        message["TriggeringChildren"] = json!([{
                            "Arn": "arn:aws:cloudwatch:eu-west-1:111122223333:alarm:child",
                            "State": {"Value": "ALARM", "Timestamp": "2026-11-27T14:32:10.482+0000"}
                        }]);
                    }
                }
                message
            },
        )
}

/// The SNS message wrapped as a Lambda SNS event, an SNS HTTP delivery, or bare.
pub fn envelope(message: Value, shape: u8, subject: &str) -> Vec<u8> {
    let text = message.to_string();
    let sns = json!({
        "Type": "Notification",
        "MessageId": "3c9e2a4f-8b7d-5e6c-a1b2-000000000001",
        "TopicArn": "arn:aws:sns:eu-west-1:111122223333:cloudwatch-alarms",
        "Subject": subject,
        "Message": text,
        "Timestamp": "2026-11-27T14:32:10.531Z",
        "SignatureVersion": "1",
        "Signature": "EXAMPLE",
        "SigningCertUrl": "https://sns.eu-west-1.amazonaws.com/x.pem",
        "UnsubscribeUrl": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe",
        "MessageAttributes": {},
    });
    let record = |sns: Value| {
        json!({
            "EventSource": "aws:sns",
            "EventVersion": "1.0",
            "EventSubscriptionArn": "arn:aws:sns:eu-west-1:111122223333:cloudwatch-alarms:5f0c8e7a",
            "Sns": sns,
        })
    };
    let value = match shape % 4 {
        0 => json!({"Records": [record(sns)]}),
        1 => sns,
        2 => return text.into_bytes(),
        _ => {
            json!({"Records": [record(sns.clone()), {"EventSource": "aws:sqs", "body": "x"}, record(sns)]})
        }
    };
    value.to_string().into_bytes()
}

/// Event bytes that print as text when proptest reports a failing case.
#[derive(Clone)]
pub struct Event(pub Vec<u8>);

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", String::from_utf8_lossy(&self.0))
    }
}

/// A generated event: the structured notification in one of the envelopes.
pub fn structured_event() -> impl Strategy<Value = Event> {
    (notification(), any::<u8>(), alarm_text())
        .prop_map(|(message, shape, subject)| Event(envelope(message, shape, &subject)))
}

// --- mutations of the captured events --------------------------------------------------------

/// The captured events, as a mutation corpus.
pub fn corpus(root: &Path) -> Vec<Value> {
    let mut paths: Vec<_> = std::fs::read_dir(root.join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

/// One edit of an event: inside the alarm message (most) or of the envelope.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Replace the `pick`-th node (in document order) of the alarm message.
    ReplaceInMessage { pick: usize, with: Value },
    /// Delete the `pick`-th object member of the alarm message.
    DeleteInMessage { pick: usize },
    /// Replace the `pick`-th node of the envelope.
    ReplaceInEnvelope { pick: usize, with: Value },
    /// Cut the serialised event at this fraction of its length.
    Truncate { per_mille: u16 },
    /// Flip one byte of the serialised event.
    FlipByte { per_mille: u16, mask: u8 },
}

fn replacement() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => alarm_text().prop_map(Value::from),
        2 => number(json!(1)),
        2 => timestamp(),
        1 => state(),
        1 => Just(json!([])),
        1 => Just(json!({})),
        1 => Just(json!(true)),
    ]
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        6 => (any::<usize>(), replacement()).prop_map(|(pick, with)| Mutation::ReplaceInMessage { pick, with }),
        2 => any::<usize>().prop_map(|pick| Mutation::DeleteInMessage { pick }),
        1 => (any::<usize>(), replacement()).prop_map(|(pick, with)| Mutation::ReplaceInEnvelope { pick, with }),
        1 => (0u16..1000).prop_map(|per_mille| Mutation::Truncate { per_mille }),
        1 => (0u16..1000, 1u8..=255).prop_map(|(per_mille, mask)| Mutation::FlipByte { per_mille, mask }),
    ]
}

/// Counts the nodes of a JSON document.
fn nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(nodes).sum(),
        Value::Object(o) => o.values().map(nodes).sum(),
        _ => 0,
    }
}

/// The `n`-th node in document order.
fn node_mut(v: &mut Value, n: usize) -> Option<&mut Value> {
    if n == 0 {
        return Some(v);
    }
    let mut n = n - 1;
    let children: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(o) => o.values_mut().collect(),
        _ => return None,
    };
    for child in children {
        let size = nodes(child);
        if n < size {
            return node_mut(child, n);
        }
        n -= size;
    }
    None
}

fn delete_member(v: &mut Value, pick: usize) {
    let count = count_objects(v);
    if count > 0 {
        remove_in(v, pick % count, pick, &mut 0);
    }
}

fn count_objects(v: &Value) -> usize {
    match v {
        Value::Object(o) => 1 + o.values().map(count_objects).sum::<usize>(),
        Value::Array(a) => a.iter().map(count_objects).sum(),
        _ => 0,
    }
}

fn remove_in(v: &mut Value, target: usize, pick: usize, seen: &mut usize) -> bool {
    match v {
        Value::Object(o) => {
            if *seen == target {
                if !o.is_empty() {
                    let key = o.keys().nth(pick % o.len()).cloned().unwrap();
                    o.remove(&key);
                }
                return true;
            }
            *seen += 1;
            o.values_mut().any(|c| remove_in(c, target, pick, seen))
        }
        Value::Array(a) => a.iter_mut().any(|c| remove_in(c, target, pick, seen)),
        _ => false,
    }
}

/// The alarm message inside an event, wherever the envelope keeps it.
fn message_slot(event: &mut Value) -> Option<&mut Value> {
    if event.get("Records").is_some() {
        return event.pointer_mut("/Records/0/Sns/Message");
    }
    if event.get("Message").is_some() {
        return event.get_mut("Message");
    }
    None
}

/// Applies the mutations to a corpus event and serialises it.
pub fn mutate(event: &Value, mutations: &[Mutation]) -> Vec<u8> {
    let mut event = event.clone();
    let mut cuts = Vec::new();
    for m in mutations {
        match m {
            Mutation::ReplaceInMessage { pick, .. } | Mutation::DeleteInMessage { pick } => {
                let Some(slot) = message_slot(&mut event) else {
                    continue;
                };
                let Some(mut message) = slot
                    .as_str()
                    .and_then(|s| serde_json::from_str::<Value>(s).ok())
                else {
                    continue;
                };
                if let Mutation::ReplaceInMessage { with, .. } = m {
                    let n = pick % nodes(&message);
                    if let Some(node) = node_mut(&mut message, n) {
                        *node = with.clone();
                    }
                } else {
                    delete_member(&mut message, *pick);
                }
                *slot = Value::String(message.to_string());
            }
            Mutation::ReplaceInEnvelope { pick, with } => {
                let n = pick % nodes(&event);
                if n > 0
                    && let Some(node) = node_mut(&mut event, n)
                {
                    *node = with.clone();
                }
            }
            other => cuts.push(other.clone()),
        }
    }
    let mut bytes = event.to_string().into_bytes();
    for cut in cuts {
        match cut {
            Mutation::Truncate { per_mille } => {
                bytes.truncate(bytes.len() * usize::from(per_mille) / 1000);
            }
            Mutation::FlipByte { per_mille, mask } if !bytes.is_empty() => {
                let at = (bytes.len() * usize::from(per_mille) / 1000).min(bytes.len() - 1);
                bytes[at] ^= mask;
            }
            _ => {}
        }
    }
    bytes
}

// --- invariants ---------------------------------------------------------------------------------

/// The diagnosis JSON Schema, compiled once.
pub fn schema_validator(root: &Path) -> jsonschema::Validator {
    let schema: Value = serde_json::from_slice(
        &std::fs::read(root.join("schema/diagnosis-v1.schema.json")).unwrap(),
    )
    .unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// Characters that must never reach a line of text from an alarm.
fn forbidden_in_text(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

fn check_text(what: &str, text: &str) -> Result<(), String> {
    match text.chars().find(|c| forbidden_in_text(*c)) {
        Some(c) => Err(format!("{what} holds the control character {c:?}")),
        None => Ok(()),
    }
}

/// Slack mrkdwn from an alarm is escaped: no `<` or `>` survive, so no mention, link or broadcast.
fn check_mrkdwn(what: &str, text: &str) -> Result<(), String> {
    if let Some(at) = text.find(['<', '>']) {
        let from = text[..at]
            .char_indices()
            .rev()
            .nth(20)
            .map_or(0, |(i, _)| i);
        return Err(format!(
            "{what} holds live markup near {:?}",
            &text[from..(at + 1).min(text.len())]
        ));
    }
    check_text(what, text)
}

fn chars(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

/// Slack's Block Kit limits, and escaping of every mrkdwn text.
pub fn check_slack(payload: &Value) -> Result<(), String> {
    if chars(&payload["text"]) > 40_000 {
        return Err("message text over 40,000 characters".into());
    }
    if let Some(text) = payload["text"].as_str() {
        check_mrkdwn("the message text", text)?;
    }
    let blocks = payload["blocks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if blocks.len() > 50 {
        return Err(format!("{} blocks (Slack allows 50)", blocks.len()));
    }
    for block in blocks {
        let kind = block["type"].as_str().unwrap_or_default();
        let text = &block["text"];
        match kind {
            "header" => {
                if text["type"] != "plain_text" || chars(&text["text"]) > 150 {
                    return Err(format!(
                        "header over 150 characters or not plain text: {block}"
                    ));
                }
            }
            "section" => {
                if chars(&text["text"]) > 3000 {
                    return Err("section text over 3,000 characters".into());
                }
                let fields = block["fields"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if fields.len() > 10 || fields.iter().any(|f| chars(&f["text"]) > 2000) {
                    return Err("more than 10 fields, or a field over 2,000 characters".into());
                }
            }
            "context" => {
                if block["elements"].as_array().is_some_and(|e| e.len() > 10) {
                    return Err("context with more than 10 elements".into());
                }
            }
            "actions" => {
                let elements = block["elements"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if elements.len() > 25 {
                    return Err("actions with more than 25 elements".into());
                }
                for button in elements {
                    if chars(&button["url"]) > 3000 {
                        return Err(format!(
                            "button URL of {} characters (Slack allows 3,000)",
                            chars(&button["url"])
                        ));
                    }
                    if chars(&button["text"]["text"]) > 75 {
                        return Err("button text over 75 characters".into());
                    }
                    check_text("a button URL", button["url"].as_str().unwrap_or_default())?;
                }
            }
            "divider" => {}
            other => return Err(format!("unknown block type {other:?}")),
        }
    }
    walk_mrkdwn(payload)
}

fn walk_mrkdwn(v: &Value) -> Result<(), String> {
    match v {
        Value::Object(o) => {
            if o.get("type").is_some_and(|t| t == "mrkdwn") {
                check_mrkdwn(
                    "a mrkdwn text",
                    o.get("text").and_then(Value::as_str).unwrap_or_default(),
                )?;
            }
            if o.get("type").is_some_and(|t| t == "plain_text") {
                check_text(
                    "a plain_text",
                    o.get("text").and_then(Value::as_str).unwrap_or_default(),
                )?;
            }
            o.values().try_for_each(walk_mrkdwn)
        }
        Value::Array(a) => a.iter().try_for_each(walk_mrkdwn),
        _ => Ok(()),
    }
}

/// Every invariant of one diagnosis: schema, email text, subject, Slack, chat.
pub fn check_diagnosis(d: &Diagnosis, validator: &jsonschema::Validator) -> Result<(), String> {
    let value = serde_json::to_value(d).map_err(|e| format!("serialise: {e}"))?;
    if let Some(e) = validator.iter_errors(&value).next() {
        return Err(format!("schema: {e} at {}", e.instance_path));
    }
    check_text("the text report", &render::text::render(d))?;
    let outgoing = alarm_triage::publish::prepare(d).map_err(|e| format!("prepare: {e}"))?;
    if outgoing.subject.len() > 100
        || !outgoing.subject.is_ascii()
        || outgoing.subject.chars().any(char::is_control)
    {
        return Err(format!(
            "subject {:?} is not one ASCII line of at most 100",
            outgoing.subject
        ));
    }
    check_slack(&render::slack::render(d))?;
    let message = compose(d, &Route::everything_to("#alerts"), Placement::default());
    check_slack(&message.payload)?;
    check_slack(&message.fallback)?;
    let chat = render::chat::render(d);
    for field in [
        "/content/title",
        "/content/description",
        "/metadata/summary",
    ] {
        let text = chat
            .pointer(field)
            .and_then(Value::as_str)
            .unwrap_or_default();
        check_mrkdwn(&format!("chat {field}"), text)?;
    }
    Ok(())
}
