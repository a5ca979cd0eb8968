//! How loudly to tell people, from what users feel and how the alarm
//! behaves. The table is in `docs/severity.md`; thresholds are about people
//! (a typical request taking seconds), not about any one service.

use crate::alarm::facts::MetricFamily;
use crate::classify::Behaviour;
use crate::diagnosis::finding::Role;
use crate::diagnosis::summary::TargetGroupSummary;
use crate::diagnosis::{AlarmFacts, Finding, FindingId, ReportKind, Severity};

/// A typical request this slow is felt by everybody.
pub const MULTI_SECOND: f64 = 2.0;
/// A typical request past a second, and this many times slower than the
/// service's own usual, is felt by everybody too: the flow of a page breaks
/// at about a second, and a page makes several such requests.
pub const SLOW_FOR_EVERYONE: f64 = 1.0;
pub const TIMES_ITS_USUAL: f64 = 5.0;
/// ... and it is an outage, not a blip, once it lasted this many minutes.
pub const SUSTAINED_IMPACT_MINUTES: u32 = 5;

/// One request in twenty failing is felt by most users within a few clicks.
pub const FAILING_SHARE: f64 = 0.05;
/// One request in ten failing is felt by nearly everyone at once: no need
/// to wait [`SUSTAINED_IMPACT_MINUTES`] to call it an outage.
pub const FAILING_AT_ONCE_SHARE: f64 = 0.10;

/// What decides the severity.
#[derive(Debug, Clone, Copy)]
pub struct Impact<'a> {
    pub kind: ReportKind,
    pub behaviour: Behaviour,
    pub alarm: &'a AlarmFacts,
    pub findings: &'a [Finding],
    pub target_groups: &'a [TargetGroupSummary],
    /// Minutes the alarm's metric breached in the window read.
    pub breaching_minutes: u32,
}

/// Whether `statistic` describes a typical request (what most users feel)
/// rather than the tail.
/// The severity and the reason for it, in a few words.
pub fn assess(impact: &Impact<'_>) -> (Severity, String) {
    if impact.kind == ReportKind::Resolution {
        return (Severity::Info, "the alarm recovered".to_owned());
    }
    let caused_by = |id: FindingId| {
        impact
            .findings
            .iter()
            .any(|f| f.id == id && f.role == Role::Cause)
    };
    if caused_by(FindingId::LowTrafficArtifact) {
        return (
            Severity::Info,
            "a few slow requests at low traffic; users at large unaffected".to_owned(),
        );
    }
    if caused_by(FindingId::ThresholdInsideNormalRange) {
        return (
            Severity::Warning,
            "nothing changed: the alarm fires on the metric's usual level".to_owned(),
        );
    }
    if let Some(reason) = users_unaffected(impact) {
        return (Severity::Warning, reason);
    }
    let statistic = impact.alarm.evaluated_statistic();
    let latency = impact.alarm.family() == MetricFamily::Latency;
    let slowest_culprit = impact
        .target_groups
        .iter()
        .filter(|g| g.culprit)
        .filter_map(|g| Some((g, g.statistic_while_breaching?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if latency
        && statistic.is_typical()
        && impact.breaching_minutes >= SUSTAINED_IMPACT_MINUTES
        && let Some((group, value)) = slowest_culprit.filter(|(_, v)| *v >= MULTI_SECOND)
    {
        return (
            Severity::Critical,
            format!(
                "users of {} wait {value:.1} s ({statistic}) over {} breaching minutes",
                group.label(),
                impact.breaching_minutes
            ),
        );
    }
    // Past a second and many times its own usual: a slow service, not a slow threshold.
    if latency
        && statistic.is_typical()
        && impact.breaching_minutes >= SUSTAINED_IMPACT_MINUTES
        && let Some((group, value, usual)) = impact
            .target_groups
            .iter()
            .filter(|g| g.culprit)
            .filter_map(|g| Some((g, g.statistic_while_breaching?, g.baseline?)))
            .find(|(_, v, usual)| *v >= SLOW_FOR_EVERYONE && *v >= TIMES_ITS_USUAL * usual)
    {
        return (
            Severity::Critical,
            format!(
                "users of {} wait {value:.1} s ({statistic}), {:.0} times their usual {usual:.2} s, over {} breaching minutes",
                group.label(),
                value / usual.max(1e-3),
                impact.breaching_minutes
            ),
        );
    }
    if let Some(reason) = failing_for_users(impact) {
        return (Severity::Critical, reason);
    }
    match impact.behaviour {
        Behaviour::Sustained => (
            Severity::Critical,
            "a sustained breach without recovering".to_owned(),
        ),
        Behaviour::Flapping => (
            Severity::Warning,
            "flapping; the typical request stays under 2 s".to_owned(),
        ),
        _ => (
            Severity::Warning,
            "a short breach, not yet sustained".to_owned(),
        ),
    }
}

/// Alarms about the targets' health or the callers' requests, while what
/// users felt did not change: a load balancer whose targets all fail their
/// checks fails open and keeps routing, and 4xx are callers' errors until
/// shown otherwise. The alarm says something is wrong; users do not feel it yet.
fn users_unaffected(impact: &Impact<'_>) -> Option<String> {
    let family = impact.alarm.family();
    let network = impact.alarm.namespace() == Some("AWS/NetworkELB");
    let (balancer, traffic) = if network {
        ("NLB", "flows")
    } else {
        ("ALB", "requests")
    };
    let culprit = impact.target_groups.iter().find(|g| g.culprit)?;
    let users = culprit.users?;
    if !users.unaffected() {
        return None;
    }
    match family {
        MetricFamily::UnhealthyHosts | MetricFamily::HealthyHosts => {
            let targets =
                culprit.targets_healthy.unwrap_or(0) + culprit.targets_not_healthy.unwrap_or(0);
            let unhealthy = culprit.targets_not_healthy.unwrap_or(0);
            let state = if targets > 0 && unhealthy == targets {
                format!(
                    "all {targets} targets of {} unhealthy; the {balancer} fails open and",
                    culprit.label()
                )
            } else {
                format!(
                    "{unhealthy} of {targets} targets of {} unhealthy;",
                    culprit.label()
                )
            };
            Some(format!(
                "{state} {traffic} and failures are unchanged: users are not affected yet"
            ))
        }
        MetricFamily::ClientErrors => Some(format!(
            "client errors: {} rejects some callers' requests while its other {traffic} and failures are unchanged; callers' errors until shown otherwise",
            culprit.label()
        )),
        _ => None,
    }
}

/// Users get errors: a culprit group with no healthy target whose traffic
/// failed or vanished, or a 5xx cause failing at least [`FAILING_SHARE`] of
/// its requests for [`SUSTAINED_IMPACT_MINUTES`] (or [`FAILING_AT_ONCE_SHARE`]
/// however short the breach so far).
fn failing_for_users(impact: &Impact<'_>) -> Option<String> {
    if let Some(group) = impact.target_groups.iter().find(|g| {
        g.culprit
            && g.targets_healthy == Some(0)
            && g.targets_not_healthy > Some(0)
            && !g.users.is_some_and(|u| u.unaffected())
    }) {
        return Some(format!(
            "no healthy target left in {}: its requests fail",
            group.label()
        ));
    }
    let short = impact.breaching_minutes < SUSTAINED_IMPACT_MINUTES;
    let bar = if short {
        FAILING_AT_ONCE_SHARE
    } else {
        FAILING_SHARE
    };
    if let Some(reason) = culprit_failing(impact, bar) {
        return Some(reason);
    }
    impact
        .findings
        .iter()
        .filter(|f| f.role == Role::Cause)
        .filter(|f| {
            matches!(
                f.id,
                FindingId::TargetErrors | FindingId::LoadBalancerErrors
            )
        })
        .find_map(|f| match &f.facts {
            crate::diagnosis::finding::Facts::Errors(e) => {
                e.rate().filter(|rate| *rate >= bar).map(|rate| {
                    format!(
                        "{:.1} % of requests fail with 5xx over {} breaching minutes",
                        rate * 100.0,
                        impact.breaching_minutes
                    )
                })
            }
            _ => None,
        })
}

/// A culprit group whose own failures (target 5xx, or TCP resets) rose and
/// reach `bar` of its requests (or flows): what its users felt, whichever
/// finding names the mechanism.
fn culprit_failing(impact: &Impact<'_>, bar: f64) -> Option<String> {
    let network = impact.alarm.namespace() == Some("AWS/NetworkELB");
    impact
        .target_groups
        .iter()
        .filter(|g| g.culprit)
        .find_map(|g| {
            let u = g.users?;
            let rose = u.failures_per_minute_while_breaching
                > (2.0 * u.failures_per_minute_before).max(u.failures_per_minute_before + 1.0);
            let requests = u.requests_per_minute_while_breaching;
            let share = (requests > 0.0).then(|| u.failures_per_minute_while_breaching / requests)?;
            (rose && share >= bar).then(|| {
                format!(
                    "{:.1} % of the {} to {} fail ({:.0} a minute, {:.0} before) over {} breaching minutes",
                    (share * 100.0).min(100.0),
                    if network { "flows" } else { "requests" },
                    g.label(),
                    u.failures_per_minute_while_breaching,
                    u.failures_per_minute_before,
                    impact.breaching_minutes
                )
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::Verdict;
    use crate::diagnosis::finding::Facts;

    fn alarm(statistic: &str) -> AlarmFacts {
        let mut a = crate::fixtures::sample().alarm;
        a.statistic = Some(crate::alarm::facts::Statistic::parse(statistic));
        a
    }

    fn group(value: f64) -> TargetGroupSummary {
        TargetGroupSummary {
            name: "k8s-shop-checkout".into(),
            arn: "arn:tg".into(),
            target_type: "instance".into(),
            port: None,
            protocol: None,
            algorithm: None,
            slow_start_seconds: None,
            kubernetes_service: None,
            culprit: true,
            statistic_while_breaching: Some(value),
            p99_peak: None,
            requests_per_minute_while_breaching: None,
            share_of_breach: None,
            baseline: None,
            without_its_change: None,
            http_5xx_in_window: None,
            users: None,
            unhealthy_hosts_peak: None,
            targets_turned_over: None,
            resets_flows_after_seconds: None,
            targets_healthy: None,
            targets_not_healthy: None,
            unhealthy_targets: vec![],
            series: vec![],
        }
    }

    fn assess_with(
        behaviour: Behaviour,
        statistic: &str,
        value: f64,
        minutes: u32,
        findings: &[Finding],
    ) -> Severity {
        let a = alarm(statistic);
        let groups = [group(value)];
        assess(&Impact {
            kind: ReportKind::Diagnosis,
            behaviour,
            alarm: &a,
            findings,
            target_groups: &groups,
            breaching_minutes: minutes,
        })
        .0
    }

    #[test]
    fn a_flapping_alarm_whose_users_wait_seconds_is_critical() {
        assert_eq!(
            assess_with(Behaviour::Flapping, "Average", 2.8, 38, &[]),
            Severity::Critical
        );
        assert_eq!(
            assess_with(Behaviour::Flapping, "Average", 0.9, 38, &[]),
            Severity::Warning
        );
        assert_eq!(
            assess_with(Behaviour::Flapping, "Average", 2.8, 2, &[]),
            Severity::Warning,
            "two minutes is a blip"
        );
    }

    fn errors(id: FindingId, errors: f64, requests: f64) -> Finding {
        let mut f = Finding::decided(id, "", Verdict::Supported, String::new(), None);
        f.role = Role::Cause;
        f.facts = Facts::Errors(crate::diagnosis::finding::ErrorFacts {
            errors,
            requests: Some(requests),
        });
        f
    }

    #[test]
    fn one_request_in_twenty_failing_for_five_minutes_is_critical_even_when_short() {
        let failing = [errors(FindingId::TargetErrors, 60.0, 1000.0)];
        assert_eq!(
            assess_with(Behaviour::Transient, "Sum", 0.0, 6, &failing),
            Severity::Critical
        );
        let trickle = [errors(FindingId::LoadBalancerErrors, 6.0, 1000.0)];
        assert_eq!(
            assess_with(Behaviour::Transient, "Sum", 0.0, 6, &trickle),
            Severity::Warning,
            "0.6 % of requests is not everybody"
        );
        assert_eq!(
            assess_with(Behaviour::Transient, "Sum", 0.0, 2, &failing),
            Severity::Warning,
            "two minutes of one in twenty is a blip"
        );
        let one_in_seven = [errors(FindingId::TargetErrors, 140.0, 1000.0)];
        assert_eq!(
            assess_with(Behaviour::Transient, "Sum", 0.0, 3, &one_in_seven),
            Severity::Critical,
            "one request in seven failing is felt at once"
        );
    }

    #[test]
    fn a_culprit_without_a_healthy_target_is_critical() {
        let a = alarm("Maximum");
        let mut empty = group(0.0);
        empty.targets_healthy = Some(0);
        empty.targets_not_healthy = Some(3);
        let (severity, reason) = assess(&Impact {
            kind: ReportKind::Diagnosis,
            behaviour: Behaviour::Transient,
            alarm: &a,
            findings: &[],
            target_groups: &[empty],
            breaching_minutes: 1,
        });
        assert_eq!(severity, Severity::Critical);
        assert!(reason.contains("no healthy target"), "{reason}");
    }

    #[test]
    fn a_typical_request_past_a_second_and_five_times_its_usual_is_critical() {
        let a = alarm("Average");
        let judge = |baseline: f64| {
            let mut slow = group(1.4);
            slow.baseline = Some(baseline);
            let groups = [slow];
            assess(&Impact {
                kind: ReportKind::Diagnosis,
                behaviour: Behaviour::Transient,
                alarm: &a,
                findings: &[],
                target_groups: &groups,
                breaching_minutes: 5,
            })
        };
        let (severity, reason) = judge(0.13);
        assert_eq!(severity, Severity::Critical, "{reason}");
        assert!(reason.contains("11 times their usual 0.13 s"), "{reason}");
        // Always about that slow: the threshold, not the users, changed.
        assert_eq!(judge(1.1).0, Severity::Warning);
    }

    #[test]
    fn a_slow_tail_alone_is_not_everybody_waiting() {
        assert_eq!(
            assess_with(Behaviour::Flapping, "p99", 4.0, 38, &[]),
            Severity::Warning
        );
        assert_eq!(
            assess_with(Behaviour::Sustained, "p99", 4.0, 38, &[]),
            Severity::Critical
        );
    }

    #[test]
    fn a_low_traffic_artifact_is_information() {
        let low = Finding {
            id: FindingId::LowTrafficArtifact,
            role: Role::Cause,
            hypothesis: String::new(),
            verdict: Verdict::Supported,
            summary: String::new(),
            cause: None,
            ruled_out_by: None,
            evidence: vec![],
            series: vec![],
            facts: Facts::None,
        };
        assert_eq!(
            assess_with(Behaviour::Sustained, "Average", 8.0, 3, &[low]),
            Severity::Info
        );
    }

    fn health_alarm(namespace: &str) -> AlarmFacts {
        let mut a = crate::fixtures::sample().alarm;
        if let Some(w) = a.watched.as_mut() {
            w.namespace = namespace.to_owned();
            w.name = "UnHealthyHostCount".to_owned();
        }
        a
    }

    fn all_unhealthy(users: crate::diagnosis::summary::UserImpact) -> TargetGroupSummary {
        TargetGroupSummary {
            targets_healthy: Some(0),
            targets_not_healthy: Some(3),
            users: Some(users),
            ..group(3.0)
        }
    }

    fn impact(before: f64, during: f64, failures: f64) -> crate::diagnosis::summary::UserImpact {
        crate::diagnosis::summary::UserImpact {
            requests_per_minute_before: before,
            requests_per_minute_while_breaching: during,
            failures_per_minute_before: 0.0,
            failures_per_minute_while_breaching: failures,
        }
    }

    /// A sustained health alarm on `namespace` whose one group has every target unhealthy.
    fn assess_unhealthy(
        namespace: &str,
        users: crate::diagnosis::summary::UserImpact,
    ) -> (Severity, String) {
        let alarm = health_alarm(namespace);
        let groups = [all_unhealthy(users)];
        assess(&Impact {
            kind: ReportKind::Diagnosis,
            behaviour: Behaviour::Sustained,
            alarm: &alarm,
            findings: &[],
            target_groups: &groups,
            breaching_minutes: 10,
        })
    }

    #[test]
    fn every_target_unhealthy_while_flows_go_on_is_a_warning_that_users_are_not_affected() {
        let (severity, reason) = assess_unhealthy("AWS/NetworkELB", impact(2600.0, 2590.0, 0.0));
        assert_eq!(severity, Severity::Warning);
        assert!(
            reason.contains("all 3 targets") && reason.contains("the NLB fails open"),
            "{reason}"
        );
        assert!(reason.ends_with("users are not affected yet"), "{reason}");
    }

    #[test]
    fn every_target_unhealthy_while_traffic_fails_is_critical() {
        let (severity, reason) =
            assess_unhealthy("AWS/ApplicationELB", impact(2600.0, 2590.0, 900.0));
        assert_eq!(severity, Severity::Critical, "{reason}");
    }

    #[test]
    fn flows_reset_at_a_group_whose_resets_rose_are_critical_however_short() {
        let mut alarm = health_alarm("AWS/NetworkELB");
        if let Some(w) = alarm.watched.as_mut() {
            w.name = "TCP_Target_Reset_Count".to_owned();
        }
        let groups = [TargetGroupSummary {
            users: Some(crate::diagnosis::summary::UserImpact {
                requests_per_minute_before: 600.0,
                requests_per_minute_while_breaching: 4600.0,
                failures_per_minute_before: 3.0,
                failures_per_minute_while_breaching: 4100.0,
            }),
            ..group(0.0)
        }];
        let (severity, reason) = assess(&Impact {
            kind: ReportKind::Diagnosis,
            behaviour: Behaviour::Transient,
            alarm: &alarm,
            findings: &[],
            target_groups: &groups,
            breaching_minutes: 3,
        });
        assert_eq!(severity, Severity::Critical, "{reason}");
        assert!(reason.contains("% of the flows to"), "{reason}");
    }
}
