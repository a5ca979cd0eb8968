//! The read-only commands next steps offer, with every name from an alarm quoted.

use chrono::{DateTime, Duration, SecondsFormat, Utc};

use crate::diagnosis::{AlarmFacts, Command};

/// Quotes a value for a POSIX shell, so names from an alarm cannot break out of a command.
pub fn shell_quote(value: &str) -> String {
    if !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        return value.to_owned();
    }
    format!("'{}'", value.replace('\'', r"'\''"))
}

pub fn aws(text: String) -> Command {
    Command {
        tool: "aws".to_owned(),
        text,
    }
}

pub fn kubectl(text: String) -> Command {
    Command {
        tool: "kubectl".to_owned(),
        text,
    }
}

pub fn promql(text: String) -> Command {
    Command {
        tool: "promql".to_owned(),
        text,
    }
}

pub fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// ` --region eu-west-1`, or nothing when the region is unknown.
pub fn region_flag(alarm: &AlarmFacts) -> String {
    alarm
        .region()
        .map(|r| format!(" --region {}", shell_quote(r)))
        .unwrap_or_default()
}

/// The alarm's state changes over the last 24 hours.
pub fn alarm_history(alarm: &AlarmFacts, now: DateTime<Utc>) -> Command {
    aws(format!(
        "aws cloudwatch describe-alarm-history --alarm-name {} --history-item-type StateUpdate --start-date {} --end-date {} --query 'AlarmHistoryItems[].[Timestamp,HistorySummary]' --output table{}",
        shell_quote(&alarm.name),
        iso(crate::instants::earlier(now, Duration::hours(24))),
        iso(now),
        region_flag(alarm),
    ))
}

/// Per-pod CPU of a deployment's pods over the last 3 hours.
pub fn pod_cpu(namespace: &str, deployment: &str) -> Command {
    promql(format!(
        "max_over_time(sum by (pod) (rate(container_cpu_usage_seconds_total{{namespace=\"{namespace}\", pod=~\"{deployment}-.*\", container!=\"\"}}[2m]))[3h:1m])"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_names_and_wraps_the_rest() {
        assert_eq!(shell_quote("k8s-shop-latency"), "k8s-shop-latency");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("x'; rm -rf /"), r"'x'\''; rm -rf /'");
        assert_eq!(shell_quote("$(id)"), "'$(id)'");
        assert_eq!(shell_quote(""), "''");
    }
}
