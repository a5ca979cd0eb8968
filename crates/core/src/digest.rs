//! The noise digest: which alarms cost people attention without telling
//! them anything, over the last N days, each with a one-line suggestion.
//!
//! Read from an alarm's definition, its state changes and its own metric
//! (the statistic it evaluates, at its period):
//! - **flapping**: many short trips into ALARM (under three periods, or ten
//!   minutes): it pages and clears before anyone can act;
//! - **stuck in ALARM**: in ALARM more than half of the time: nobody acts on it;
//! - **threshold inside the normal range**: the metric's p95 over the span is
//!   already past the threshold, so ordinary traffic trips it;
//! - **fired with no supported cause**: most diagnoses of it named no cause;
//! - **never fired**: no trip into ALARM at all (it may watch nothing).
//!
//! Pure: the caller reads CloudWatch and passes `now`.

use chrono::{DateTime, Duration, Utc};

use crate::alarm::AlarmState;
use crate::history::AlarmHistory;

/// What is known of one alarm over the span.
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmOverSpan {
    pub name: String,
    pub threshold: Option<f64>,
    /// `GreaterThanThreshold`, ...
    pub comparison: Option<String>,
    pub statistic: Option<String>,
    pub period_seconds: u32,
    pub evaluation_periods: u32,
    pub datapoints_to_alarm: Option<u32>,
    pub history: AlarmHistory,
    /// The state before the span's first change (its current state when it never changed).
    pub state_at_start: AlarmState,
    /// The alarm's statistic at its period over the span (empty when unread, or metric math).
    pub metric_values: Vec<f64>,
    /// Diagnoses of it over the span (from the seen-before records): (total, with no cause).
    pub diagnoses: Option<(usize, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Noise {
    Flapping,
    StuckInAlarm,
    ThresholdInsideNormalRange,
    NoSupportedCause,
    NeverFired,
}

impl Noise {
    pub fn label(self) -> &'static str {
        match self {
            Noise::Flapping => "flapping",
            Noise::StuckInAlarm => "stuck in ALARM",
            Noise::ThresholdInsideNormalRange => "threshold inside the normal range",
            Noise::NoSupportedCause => "fired with no supported cause",
            Noise::NeverFired => "never fired",
        }
    }
}

/// One line of the digest.
#[derive(Debug, Clone, PartialEq)]
pub struct DigestEntry {
    pub alarm: String,
    pub noise: Noise,
    /// The deciding numbers.
    pub figures: String,
    pub suggestion: String,
    /// Ranks entries of the same kind (more is noisier).
    pub weight: f64,
}

/// What an alarm did over the span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpanFigures {
    pub trips: usize,
    /// Trips that cleared within three periods (at least ten minutes).
    pub short_trips: usize,
    pub alarm_share: f64,
}

pub fn span_figures(a: &AlarmOverSpan, from: DateTime<Utc>, now: DateTime<Utc>) -> SpanFigures {
    let short = Duration::seconds(i64::from(a.period_seconds) * 3).max(Duration::minutes(10));
    let (mut trips, mut short_trips) = (0, 0);
    let mut in_alarm = Duration::zero();
    let mut since = (a.state_at_start == AlarmState::Alarm).then_some(from);
    for change in a.history.changes_between(from, now) {
        match (change.to, since) {
            (AlarmState::Alarm, None) => {
                trips += 1;
                since = Some(change.at);
            }
            (AlarmState::Alarm, Some(_)) => {}
            (_, Some(start)) => {
                let lasted = change.at - start;
                in_alarm += lasted;
                if lasted <= short && start > from {
                    short_trips += 1;
                }
                since = None;
            }
            (_, None) => {}
        }
    }
    if let Some(start) = since {
        in_alarm += now - start;
    }
    let span = (now - from).num_seconds().max(1) as f64;
    SpanFigures {
        trips,
        short_trips,
        alarm_share: in_alarm.num_seconds() as f64 / span,
    }
}

/// The value below which 95 % of `values` lie.
fn p95(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.len() < 20 {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = ((sorted.len() as f64) * 0.95).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied()
}

/// Whether `value` is past `threshold` in the alarm's direction.
fn past(value: f64, threshold: f64, comparison: &str) -> bool {
    match comparison {
        "GreaterThanThreshold" => value > threshold,
        "GreaterThanOrEqualToThreshold" => value >= threshold,
        "LessThanThreshold" => value < threshold,
        "LessThanOrEqualToThreshold" => value <= threshold,
        _ => false,
    }
}

fn number(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The digest, noisiest first: each alarm under its worst kind of noise.
pub fn digest(
    alarms: &[AlarmOverSpan],
    from: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Vec<DigestEntry> {
    let days = ((now - from).num_hours() as f64 / 24.0).max(1.0 / 24.0);
    let mut entries: Vec<DigestEntry> = alarms
        .iter()
        .filter_map(|a| entry(a, span_figures(a, from, now), days))
        .collect();
    entries.sort_by(|a, b| {
        a.noise
            .cmp(&b.noise)
            .then(b.weight.total_cmp(&a.weight))
            .then(a.alarm.cmp(&b.alarm))
    });
    entries
}

fn entry(a: &AlarmOverSpan, f: SpanFigures, days: f64) -> Option<DigestEntry> {
    let make = |noise: Noise, figures: String, suggestion: String, weight: f64| {
        Some(DigestEntry {
            alarm: a.name.clone(),
            noise,
            figures,
            suggestion,
            weight,
        })
    };
    let periods = a.evaluation_periods.max(1);
    if f.short_trips >= 3 && f.short_trips as f64 >= 0.5 * f.trips as f64 {
        let average = a.statistic.as_deref() == Some("Average");
        let suggestion = format!(
            "evaluate over more periods ({} -> {}) with DatapointsToAlarm {} of {}{}",
            periods,
            periods * 3,
            periods * 2,
            periods * 3,
            if average {
                ", or alarm on p90 rather than the Average"
            } else {
                ""
            }
        );
        return make(
            Noise::Flapping,
            format!(
                "{} trips into ALARM, {} cleared within minutes ({:.1} a day)",
                f.trips,
                f.short_trips,
                f.short_trips as f64 / days
            ),
            suggestion,
            f.short_trips as f64,
        );
    }
    if f.alarm_share > 0.5 {
        return make(
            Noise::StuckInAlarm,
            format!("in ALARM {:.0} % of the time", f.alarm_share * 100.0),
            "nobody acts on it: fix what it watches, raise the threshold, or retire it".to_owned(),
            f.alarm_share,
        );
    }
    if let (Some(threshold), Some(comparison), Some(p95)) =
        (a.threshold, a.comparison.as_deref(), p95(&a.metric_values))
        && past(p95, threshold, comparison)
    {
        return make(
            Noise::ThresholdInsideNormalRange,
            format!(
                "the metric's p95 over the span is {} against a threshold of {}",
                number(p95),
                number(threshold)
            ),
            "move the threshold outside the normal range, or guard it with metric math on traffic (IF(requests > N, metric))".to_owned(),
            (p95 - threshold).abs() / threshold.abs().max(f64::MIN_POSITIVE),
        );
    }
    if let Some((total, without)) = a.diagnoses
        && total >= 2
        && without * 2 > total
    {
        return make(
            Noise::NoSupportedCause,
            format!("{without} of {total} diagnoses named no cause"),
            "it fires without anything wrong behind it: alarm on a percentile, add DatapointsToAlarm, or guard it on traffic".to_owned(),
            without as f64,
        );
    }
    if f.trips == 0 && a.state_at_start != AlarmState::Alarm {
        return make(
            Noise::NeverFired,
            format!("no trip into ALARM in {} days", days.round()),
            "check that its metric still exists (INSUFFICIENT_DATA?) and that it would fire; retire it if nobody needs it".to_owned(),
            0.0,
        );
    }
    None
}

/// The digest as text for a terminal or a chat message.
pub fn render(
    entries: &[DigestEntry],
    alarms: usize,
    from: DateTime<Utc>,
    now: DateTime<Utc>,
) -> String {
    let mut out = format!(
        "Alarm noise digest, {} to {} ({} alarms read)\n",
        from.format("%Y-%m-%d %H:%M"),
        now.format("%Y-%m-%d %H:%M UTC"),
        alarms
    );
    if entries.is_empty() {
        out.push_str("Nothing noisy: every alarm fired rarely, cleared for a reason, and has its threshold outside the normal range.\n");
        return out;
    }
    let mut current = None;
    for (i, e) in entries.iter().enumerate() {
        if current != Some(e.noise) {
            out.push_str(&format!("\n{}\n", e.noise.label().to_uppercase()));
            current = Some(e.noise);
        }
        out.push_str(&format!(
            "{:>2}. {}: {}\n    -> {}\n",
            i + 1,
            e.alarm,
            e.figures,
            e.suggestion
        ));
    }
    out.push_str("\nalarm-triage changes nothing: these are proposals for the alarms' owners.\n");
    out
}

/// Entries shown per kind in Slack; the rest are counted (`alarm-triage digest` lists all).
const SLACK_ENTRIES_PER_KIND: usize = 8;

/// The digest as one Slack message (Block Kit): a header, one section per
/// kind of noise with its noisiest alarms, a footer. Alarm names are escaped;
/// every section stays inside Slack's limits.
pub fn slack_message(
    entries: &[DigestEntry],
    alarms: usize,
    from: DateTime<Utc>,
    now: DateTime<Utc>,
) -> serde_json::Value {
    use crate::render::slack::{MAX_HEADER_TEXT, MAX_SECTION_TEXT, escape};
    use crate::render::truncate;
    use serde_json::json;

    let days = (now - from).num_days().max(1);
    let title = format!(
        "Alarm noise digest · last {days} day{}",
        if days == 1 { "" } else { "s" }
    );
    let summary = if entries.is_empty() {
        format!("{alarms} alarms read: nothing noisy.")
    } else {
        format!("{alarms} alarms read: {} worth a look.", entries.len())
    };
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "text": truncate(&title, MAX_HEADER_TEXT)}}),
        json!({"type": "context", "elements": [{"type": "mrkdwn", "text": format!(
            "{} to {} · {summary}",
            from.format("%Y-%m-%d %H:%M"),
            now.format("%Y-%m-%d %H:%M UTC")
        )}]}),
    ];
    let mut kinds: Vec<Noise> = entries.iter().map(|e| e.noise).collect();
    kinds.dedup();
    for kind in kinds {
        let of_kind: Vec<&DigestEntry> = entries.iter().filter(|e| e.noise == kind).collect();
        let mut lines: Vec<String> = of_kind
            .iter()
            .take(SLACK_ENTRIES_PER_KIND)
            .map(|e| {
                format!(
                    "• *{}*: {}\n     → {}",
                    escape(&e.alarm),
                    escape(&e.figures),
                    escape(&e.suggestion)
                )
            })
            .collect();
        if of_kind.len() > SLACK_ENTRIES_PER_KIND {
            lines.push(format!(
                "_and {} more: `alarm-triage digest` lists them all_",
                of_kind.len() - SLACK_ENTRIES_PER_KIND
            ));
        }
        let text = format!(
            "*{}* ({})\n{}",
            capitalised(kind.label()),
            of_kind.len(),
            lines.join("\n")
        );
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate(&text, MAX_SECTION_TEXT)}}));
    }
    blocks.push(
        json!({"type": "context", "elements": [{"type": "mrkdwn", "text":
        "alarm-triage changes nothing: these are proposals for the alarms' owners."}]}),
    );
    json!({"text": format!("{title}: {summary}"), "blocks": blocks})
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::history::StateChange;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, 12, 0, 0).unwrap()
    }

    fn alarm(name: &str, trips: &[(i64, i64)]) -> AlarmOverSpan {
        crate::fixtures::alarm_over_span(name, trips, now())
    }

    #[test]
    fn each_kind_of_noise_is_found_and_ranked() {
        let from = now() - Duration::days(7);
        let flapping = alarm(
            "checkout-latency",
            &[(100, 3), (200, 4), (300, 2), (400, 5), (500, 3)],
        );
        let mut stuck = alarm("batch-queue-depth", &[(9000, 7000)]);
        stuck.state_at_start = AlarmState::Ok;
        let mut normal = alarm("search-5xx", &[(600, 60)]);
        normal.metric_values = (0..100).map(|i| if i < 90 { 2.0 } else { 0.5 }).collect();
        let mut causeless = alarm("cart-latency", &[(700, 45), (900, 30)]);
        causeless.diagnoses = Some((2, 2));
        let quiet = alarm("legacy-api-errors", &[]);
        let healthy = alarm("payments-latency", &[(1000, 40)]);
        let entries = digest(
            &[quiet, healthy, causeless, normal, stuck, flapping],
            from,
            now(),
        );
        let kinds: Vec<(&str, Noise)> = entries
            .iter()
            .map(|e| (e.alarm.as_str(), e.noise))
            .collect();
        assert_eq!(
            kinds,
            [
                ("checkout-latency", Noise::Flapping),
                ("batch-queue-depth", Noise::StuckInAlarm),
                ("search-5xx", Noise::ThresholdInsideNormalRange),
                ("cart-latency", Noise::NoSupportedCause),
                ("legacy-api-errors", Noise::NeverFired),
            ]
        );
        assert!(
            entries[0].suggestion.contains("DatapointsToAlarm 2 of 3")
                && entries[0].suggestion.contains("p90")
        );
        assert!(
            entries[2]
                .figures
                .contains("p95 over the span is 2 against a threshold of 1"),
            "{}",
            entries[2].figures
        );
    }

    #[test]
    fn a_trip_that_began_before_the_span_counts_its_time_not_a_trip() {
        let from = now() - Duration::days(1);
        let mut a = alarm("x", &[]);
        a.state_at_start = AlarmState::Alarm;
        a.history = AlarmHistory::from_unordered(vec![StateChange {
            at: now() - Duration::hours(6),
            from: AlarmState::Alarm,
            to: AlarmState::Ok,
        }]);
        let f = span_figures(&a, from, now());
        assert_eq!((f.trips, f.short_trips), (0, 0));
        assert!((f.alarm_share - 0.75).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn the_slack_digest_escapes_alarm_names_and_counts_what_it_leaves_out() {
        let from = now() - Duration::days(7);
        let alarms: Vec<AlarmOverSpan> = (0..11)
            .map(|i| alarm(&format!("<!channel> quiet-{i}"), &[]))
            .collect();
        let entries = digest(&alarms, from, now());
        assert_eq!(entries.len(), 11);
        let message = slack_message(&entries, 11, from, now());
        let text = message.to_string();
        assert!(!text.contains("<!channel>"), "{text}");
        assert!(text.contains("&lt;!channel&gt; quiet-"), "{text}");
        assert!(text.contains("and 3 more"), "{text}");
        assert_eq!(
            message["blocks"][0]["text"]["text"],
            "Alarm noise digest · last 7 days"
        );
        for block in message["blocks"].as_array().unwrap() {
            if let Some(t) = block["text"]["text"].as_str() {
                assert!(t.chars().count() <= crate::render::slack::MAX_SECTION_TEXT);
            }
        }
    }

    #[test]
    fn a_quiet_span_says_so() {
        let text = render(&[], 3, now() - Duration::days(7), now());
        assert!(text.contains("Nothing noisy"), "{text}");
    }
}
