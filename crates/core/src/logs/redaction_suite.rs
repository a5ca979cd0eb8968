//! The redaction suite: secrets and personal data of every kind the
//! redactor knows, planted in log lines at any place among other words, go
//! through the whole diagnosis (the logs finding, its advice, the report)
//! and appear in no rendering: the JSON, the text and email report, Slack
//! and the chat card.

use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;

use crate::evidence::logs::{ContainerLog, LogEvidence, LogLine, LogOrigin};
use crate::evidence::{GatheredEvidence, logs::LogRequest};

/// A planted secret: the line's text around it, and the part that must never show.
#[derive(Debug, Clone)]
struct Planted {
    text: String,
    secret: String,
}

/// One secret of each kind, built from the generated characters.
fn planted(kind: usize, token: &str, digits: &str) -> Planted {
    let plant = |text: String, secret: &str| Planted {
        text,
        secret: secret.to_owned(),
    };
    match kind % 12 {
        0 => plant(format!("Authorization: Bearer {token}"), token),
        1 => {
            let jwt = format!("eyJhbGciOiJIUzI1NiJ9.eyJzdWIi{token}.c2lnbmF0dXJl{token}");
            plant(format!("id_token {jwt}"), &jwt)
        }
        2 => {
            let key = format!("AKIA{}", &format!("{token}{token}").to_uppercase()[..16]);
            plant(format!("using access key {key} for s3"), &key)
        }
        3 => plant(format!("db login password={token}"), token),
        4 => plant(format!("client_secret: \"{token}\""), token),
        5 => plant(format!("GET /export?token={token}&page=2"), token),
        6 => plant(
            format!("connecting to postgres://ledger:{token}@ledger-pg:5432/ledger"),
            token,
        ),
        7 => {
            let email = format!("{}.{}@example.org", &token[..6], &token[6..12]);
            plant(format!("refused user {email}"), &email)
        }
        8 => plant(format!("x-api-key: {token}"), token),
        9 => plant(format!("Cookie: session={token}"), token),
        10 => {
            let secret: String = format!("{token}{token}{token}").chars().take(40).collect();
            plant(format!("aws_secret_access_key {secret}"), &secret)
        }
        _ => {
            // A Visa test number with the generated middle, made Luhn-valid.
            let mut number: Vec<u32> = format!("4111{digits}")
                .chars()
                .filter_map(|c| c.to_digit(10))
                .take(15)
                .collect();
            number.push(luhn_check_digit(&number));
            let card: String = number.iter().map(|d| d.to_string()).collect();
            plant(format!("charge failed for card {card}"), &card)
        }
    }
}

/// The digit that makes `digits` pass the redactor's Luhn check (itself
/// tested against known card numbers).
fn luhn_check_digit(digits: &[u32]) -> u32 {
    let number: String = digits.iter().map(|d| d.to_string()).collect();
    (0..10)
        .find(|d| super::redact::luhn(&format!("{number}{d}")))
        .unwrap_or_default()
}

/// The alarm's transition: with no history read, the onset the logs are split at.
fn onset() -> DateTime<Utc> {
    crate::fixtures::sample().alarm.state_change_time
}

/// A pod that printed ordinary lines for an hour, then the planted line as a
/// new error, ten times, from the onset.
fn evidence(planted: &Planted, before: &str, after: &str) -> LogEvidence {
    let onset = onset();
    let mut lines: Vec<LogLine> = (-60..0)
        .map(|m| LogLine {
            at: onset + Duration::minutes(m),
            text: format!("INFO GET /orders/{} 200", 1000 + m),
        })
        .collect();
    lines.extend((0..10).map(|m| LogLine {
        at: onset + Duration::minutes(m),
        text: format!("ERROR {before} {} {after}", planted.text),
    }));
    LogEvidence {
        namespace: "shop".into(),
        containers: vec![ContainerLog {
            pod: "web-7f4c9b6d52-8wjzc".into(),
            container: "web".into(),
            previous: false,
            origin: LogOrigin::PodLog,
            lines,
            covered: vec![(onset - Duration::minutes(60), onset + Duration::minutes(10))],
            truncated: false,
            bytes: 0,
        }],
        requested: vec![LogRequest {
            pod: "web-7f4c9b6d52-8wjzc".into(),
            container: "web".into(),
            previous: false,
            why: "sample".into(),
        }],
    }
}

/// Every rendering of the diagnosis made with these logs.
fn renderings(logs: LogEvidence) -> Vec<String> {
    let sample = crate::fixtures::sample();
    let alarm = crate::fixtures::alarm();
    let facts = sample.alarm.clone();
    let investigation = crate::findings::Investigation::of(
        facts.clone(),
        facts.plan(),
        GatheredEvidence {
            logs: Some(logs),
            ..GatheredEvidence::default()
        },
    );
    let d = crate::triage::assemble(
        &alarm,
        crate::diagnosis::ReportKind::Diagnosis,
        &investigation,
        &crate::classify::ClassifierConfig::default(),
        onset() + Duration::minutes(10),
    );
    vec![
        serde_json::to_string(&d).unwrap_or_default(),
        crate::render::text::render(&d),
        crate::render::slack::render(&d).to_string(),
        crate::render::chat::render(&d).to_string(),
    ]
}

#[test]
fn the_planted_line_reaches_the_report_so_the_suite_would_see_a_leak() {
    let planted = planted(3, "hunter2Xq9Zr7Lw4", "12345678901");
    let all = renderings(evidence(&planted, "login failed", "for tenant 7"));
    assert!(
        all[1].contains("login failed"),
        "the new error is on the report:\n{}",
        all[1]
    );
    assert!(all.iter().all(|r| !r.contains("hunter2Xq9Zr7Lw4")));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn no_planted_secret_of_any_kind_reaches_any_rendering(
        kind in 0usize..12,
        token in "[A-Za-z0-9]{16,24}",
        digits in "[0-9]{11}",
        before in "[a-z]{3,8}( [a-z]{2,8}){0,3}",
        after in "[a-z]{0,8}",
    ) {
        let planted = planted(kind, &token, &digits);
        for (i, rendered) in renderings(evidence(&planted, &before, &after)).iter().enumerate() {
            prop_assert!(
                !rendered.contains(&planted.secret),
                "kind {kind}: {:?} leaked into rendering {i} (json, text, slack, chat)",
                planted.secret
            );
        }
    }
}
