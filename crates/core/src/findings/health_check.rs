//! Targets taken out of rotation by a health check that is stricter than the
//! application under load: the check waits `timeout` seconds; when the app
//! serves its health path from the same (saturated) workers as real
//! requests, a check queues behind slow requests and times out, and after
//! `unhealthy_threshold` misses the target is drained, which pushes its load
//! onto the others and makes them slower still.

use chrono::{DateTime, Utc};

use super::traffic::round;
use crate::diagnosis::summary::TargetGroupSummary;
use crate::diagnosis::{Evidence, Finding, FindingId, Verdict};
use crate::evidence::{AlbEvidence, GroupEvidence};

const HYPOTHESIS: &str =
    "The health check times out under load: the targets answer slower than its timeout";

/// The periods in which some target of `g` was unhealthy.
fn unhealthy_periods(g: &GroupEvidence) -> Vec<DateTime<Utc>> {
    g.unhealthy_hosts
        .points
        .iter()
        .filter(|(_, v)| *v > 0.0)
        .map(|(t, _)| *t)
        .collect()
}

/// Decides the hypothesis for the culprit groups (every group when none is named).
pub fn timeout_under_load(
    alb: &AlbEvidence,
    summaries: &[TargetGroupSummary],
    periods: &[DateTime<Utc>],
) -> Finding {
    let culprits: Vec<&GroupEvidence> = alb
        .groups
        .iter()
        .filter(|g| summaries.iter().any(|s| s.culprit && s.arn == g.group.arn))
        .collect();
    let groups = if culprits.is_empty() {
        alb.groups.iter().collect()
    } else {
        culprits
    };
    // The group with failing targets, else the first considered.
    let failing = groups.iter().copied().find(|g| {
        !unhealthy_periods(g).is_empty()
            || g.health
                .as_ref()
                .is_some_and(|h| h.iter().any(|t| t.state == "unhealthy"))
    });
    // Every group's checks failing at once while each answers its requests
    // in time: the network between the load balancer and the targets (a
    // security group, the nodes), not a slow health path.
    let all_failing = groups.len() > 1 && groups.iter().all(|g| !unhealthy_periods(g).is_empty());
    let any_slow = groups.iter().any(|g| {
        let timeout = g
            .group
            .health_check
            .as_ref()
            .and_then(|c| c.timeout_seconds);
        let p99 = unhealthy_periods(g)
            .iter()
            .filter_map(|t| g.p99.at(*t))
            .reduce(f64::max);
        matches!((timeout, p99), (Some(t), Some(p)) if p >= f64::from(t))
    });
    if all_failing && !any_slow {
        return Finding::decided(
            FindingId::HealthCheckTimeout,
            HYPOTHESIS,
            Verdict::Refuted,
            format!(
                "The targets of all {} groups failed their checks in the same window while their requests answered in time: the checks fail on the way to the targets (a security group, the nodes), not because a health path is slow.",
                groups.len()
            ),
            Some("health check timeout: every group failed at once, requests in time".to_owned()),
        );
    }
    let Some(g) = failing else {
        return Finding::decided(
            FindingId::HealthCheckTimeout,
            HYPOTHESIS,
            Verdict::Refuted,
            "No target failed its health check in the window.".to_owned(),
            Some("health checks: none failed".to_owned()),
        );
    };
    decide_for(g, periods)
}

fn decide_for(g: &GroupEvidence, periods: &[DateTime<Utc>]) -> Finding {
    let check = g.group.health_check.clone().unwrap_or_default();
    let failing_at = unhealthy_periods(g);
    // Latency when targets failed, else while the alarm breached.
    let looked_at = if failing_at.is_empty() {
        periods
    } else {
        &failing_at
    };
    let p99 = looked_at
        .iter()
        .filter_map(|t| g.p99.at(*t))
        .reduce(f64::max);
    let reasons: Vec<String> = g
        .health
        .iter()
        .flatten()
        .filter(|t| t.state == "unhealthy")
        .filter_map(|t| t.reason.clone())
        .collect();
    let timed_out = reasons.iter().any(|r| r == "Target.Timeout");
    let mut evidence = Vec::new();
    if let Some(path) = &check.path {
        evidence.push(Evidence::text("health check path", path.clone()));
    }
    if let Some(timeout) = check.timeout_seconds {
        evidence.push(Evidence::number(
            "health check timeout",
            f64::from(timeout),
            "s",
        ));
    }
    if let Some(seconds) = check.seconds_to_fail() {
        evidence.push(Evidence::number(
            "time to mark a target unhealthy",
            f64::from(seconds),
            "s",
        ));
    }
    if let Some(p99) = p99 {
        evidence.push(Evidence::number(
            &format!("{} p99 while targets failed", g.group.name),
            round(p99, 3),
            "s",
        ));
    }
    if !reasons.is_empty() {
        evidence.push(Evidence::text("unhealthy reasons now", reasons.join(", ")));
    }
    let name = &g.group.name;
    let (verdict, summary, clause) = match (check.timeout_seconds, p99) {
        (None, _) | (_, None) => (
            Verdict::Inconclusive,
            format!(
                "Targets of {name} failed health checks, but the check's timeout or the group's latency was not read."
            ),
            format!("{name}: health checks failing"),
        ),
        (Some(timeout), Some(p99)) if p99 >= f64::from(timeout) => (
            Verdict::Supported,
            format!(
                "{name}'s p99 reached {:.2} s while its health check gives a target {timeout} s to answer{}: checks queue behind slow requests and time out, and after {} misses the target leaves rotation, loading the others further.",
                p99,
                check
                    .path
                    .as_ref()
                    .map_or_else(String::new, |p| format!(" on {p}")),
                check
                    .unhealthy_threshold
                    .map_or_else(|| "a few".to_owned(), |n| n.to_string()),
            ),
            format!("health check timeout {timeout} s < p99 {p99:.2} s"),
        ),
        (Some(timeout), Some(p99)) if timed_out => (
            Verdict::Inconclusive,
            format!(
                "Checks of {name} time out ({timeout} s) although its requests answer in time (p99 {p99:.2} s): the health path may be slower than other requests or served elsewhere."
            ),
            format!("{name}: checks time out, requests do not"),
        ),
        (Some(timeout), Some(p99)) => (
            Verdict::Refuted,
            format!(
                "Targets of {name} failed health checks ({}), but its requests answered well within the {timeout} s timeout (p99 {p99:.2} s): the checks fail for another reason.",
                if reasons.is_empty() {
                    "reason not reported".to_owned()
                } else {
                    reasons.join(", ")
                }
            ),
            format!("health check timeout: p99 {p99:.2} s < {timeout} s"),
        ),
    };
    let mut finding = Finding::decided(
        FindingId::HealthCheckTimeout,
        HYPOTHESIS,
        verdict,
        summary,
        Some(clause),
    );
    finding.evidence = evidence;
    finding
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::model::{
        HealthCheck, MetricSeries, TargetGroup, TargetHealth, TargetType,
    };
    use crate::findings::minutes::{at as t, per_minute as series};

    fn group(p99: &[f64], unhealthy: &[f64], reason: Option<&str>, timeout: i32) -> AlbEvidence {
        AlbEvidence {
            services: Default::default(),
            load_balancer: None,
            errors: Default::default(),
            groups: vec![GroupEvidence {
                group: TargetGroup {
                    arn: "arn:api".into(),
                    name: "api".into(),
                    dimension: "targetgroup/api/1".into(),
                    target_type: TargetType::Ip,
                    port: None,
                    protocol: None,
                    health_check: Some(HealthCheck {
                        path: Some("/healthz".into()),
                        interval_seconds: Some(10),
                        timeout_seconds: Some(timeout),
                        healthy_threshold: Some(3),
                        unhealthy_threshold: Some(2),
                        matcher: Some("200".into()),
                    }),
                },
                algorithm: None,
                slow_start_seconds: None,
                deregistration: None,
                health: Some(vec![TargetHealth {
                    id: "10.0.0.1".into(),
                    port: Some(8080),
                    state: if reason.is_some() {
                        "unhealthy"
                    } else {
                        "healthy"
                    }
                    .into(),
                    reason: reason.map(str::to_owned),
                    description: None,
                }]),
                tags: None,
                metric: series(unhealthy),
                p50: MetricSeries::default(),
                p99: series(p99),
                maximum: MetricSeries::default(),
                requests: MetricSeries::default(),
                target_errors: MetricSeries::default(),
                unhealthy_hosts: series(unhealthy),
                healthy_hosts: MetricSeries::default(),
            }],
        }
    }

    #[test]
    fn targets_failing_while_requests_are_slower_than_the_timeout_support_it() {
        let alb = group(
            &[0.4, 2.8, 3.6],
            &[0.0, 1.0, 2.0],
            Some("Target.Timeout"),
            2,
        );
        let f = timeout_under_load(&alb, &[], &[t(1), t(2)]);
        assert_eq!(f.verdict, Verdict::Supported, "{}", f.summary);
        assert!(f.summary.contains("3.60 s"), "{}", f.summary);
    }

    #[test]
    fn targets_failing_while_requests_are_fast_rule_it_out() {
        let alb = group(
            &[0.2, 0.3, 0.3],
            &[0.0, 1.0, 1.0],
            Some("Target.ResponseCodeMismatch"),
            5,
        );
        let f = timeout_under_load(&alb, &[], &[t(1), t(2)]);
        assert_eq!(f.verdict, Verdict::Refuted, "{}", f.summary);
    }

    #[test]
    fn checks_timing_out_while_requests_are_fast_is_left_open() {
        let alb = group(
            &[0.2, 0.3, 0.3],
            &[0.0, 1.0, 1.0],
            Some("Target.Timeout"),
            5,
        );
        let f = timeout_under_load(&alb, &[], &[t(1), t(2)]);
        assert_eq!(f.verdict, Verdict::Inconclusive, "{}", f.summary);
    }

    #[test]
    fn no_failing_target_rules_it_out() {
        let alb = group(&[3.0, 3.0, 3.0], &[0.0, 0.0, 0.0], None, 2);
        let f = timeout_under_load(&alb, &[], &[t(1), t(2)]);
        assert_eq!(f.verdict, Verdict::Refuted);
    }
}
