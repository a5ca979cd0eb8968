//! Who answered the 5xx: the targets (the application failed the request)
//! or the load balancer itself (502: the target broke the connection or
//! answered garbage; 503: no healthy target to send to; 504: the target did
//! not answer within the idle timeout). The two call for different fixes, so
//! a 5xx alarm is split before anything else is said about it.

use chrono::{DateTime, Utc};

use super::traffic::round;
use crate::diagnosis::finding::ErrorFacts;
use crate::diagnosis::summary::TargetGroupSummary;
use crate::diagnosis::{Evidence, Facts, Finding, FindingId, Verdict};
use crate::evidence::AlbEvidence;
use crate::evidence::model::MetricSeries;

/// A side answering at least this share of the 5xx is a cause.
const SUBSTANTIAL_SHARE: f64 = 0.25;
/// A side answering less than this share of them is ruled out.
const NEGLIGIBLE_SHARE: f64 = 0.05;

fn sum_at(series: &MetricSeries, periods: &[DateTime<Utc>]) -> f64 {
    periods.iter().filter_map(|t| series.at(*t)).sum()
}

/// The group that answered most target 5xx, with its count and requests.
struct Loudest<'a> {
    name: &'a str,
    errors: f64,
    requests: f64,
}

fn loudest<'a>(alb: &'a AlbEvidence, periods: &[DateTime<Utc>]) -> Option<Loudest<'a>> {
    alb.groups
        .iter()
        .map(|g| Loudest {
            name: &g.group.name,
            errors: sum_at(&g.target_errors, periods),
            requests: sum_at(&g.requests, periods),
        })
        .filter(|l| l.errors > 0.0)
        .max_by(|a, b| a.errors.total_cmp(&b.errors))
}

/// The verdict for one side's share of the 5xx.
fn verdict_for(share: f64) -> Verdict {
    if share >= SUBSTANTIAL_SHARE {
        Verdict::Supported
    } else if share < NEGLIGIBLE_SHARE {
        Verdict::Refuted
    } else {
        Verdict::Inconclusive
    }
}

/// Both sides of the 5xx over `periods` (the breach, or the last 30 minutes).
pub fn split(
    alb: &AlbEvidence,
    summaries: &[TargetGroupSummary],
    periods: &[DateTime<Utc>],
) -> [Finding; 2] {
    let target = if alb.errors.target_5xx.points.is_empty() {
        alb.groups
            .iter()
            .map(|g| sum_at(&g.target_errors, periods))
            .sum()
    } else {
        sum_at(&alb.errors.target_5xx, periods)
    };
    let elb = sum_at(&alb.errors.elb_5xx, periods);
    let total = target + elb;
    let share = |n: f64| if total > 0.0 { n / total } else { 0.0 };
    [
        target_side(alb, periods, target, share(target)),
        load_balancer_side(alb, summaries, periods, elb, share(elb)),
    ]
}

fn target_side(alb: &AlbEvidence, periods: &[DateTime<Utc>], count: f64, share: f64) -> Finding {
    let verdict = verdict_for(share);
    let loudest = loudest(alb, periods);
    let mut evidence = vec![
        Evidence::number("target 5xx while breaching", count, "responses"),
        Evidence::number("share of all 5xx", round(share * 100.0, 1), "%"),
    ];
    let (summary, clause) = match (&verdict, &loudest) {
        (Verdict::Refuted, _) if count == 0.0 => (
            "The targets answered no 5xx while the alarm breached.".to_owned(),
            "target 5xx: none".to_owned(),
        ),
        (Verdict::Refuted, _) => (
            format!(
                "The targets answered {count:.0} 5xx, {:.1} % of them: the load balancer produced the rest.",
                share * 100.0
            ),
            format!("target 5xx: {:.1} %", share * 100.0),
        ),
        (_, Some(l)) => {
            let rate = (l.requests > 0.0).then(|| l.errors / l.requests * 100.0);
            evidence.push(Evidence::number(
                &format!("{} 5xx", l.name),
                l.errors,
                "responses",
            ));
            if let Some(rate) = rate {
                evidence.push(Evidence::number(
                    &format!("{} 5xx rate", l.name),
                    round(rate, 2),
                    "% of requests",
                ));
            }
            let rate_text =
                rate.map_or_else(String::new, |r| format!(" ({r:.1} % of its requests)"));
            (
                format!(
                    "The targets answered {count:.0} 5xx ({:.0} % of all 5xx); {} answered {:.0} of them{rate_text}: the application fails these requests itself, so its logs say why.",
                    share * 100.0,
                    l.name,
                    l.errors
                ),
                format!("{} answers 5xx{rate_text}", l.name),
            )
        }
        (_, None) => (
            format!(
                "The targets answered {count:.0} 5xx ({:.0} % of all 5xx).",
                share * 100.0
            ),
            format!("targets answer {count:.0} 5xx"),
        ),
    };
    let mut finding = Finding::decided(
        FindingId::TargetErrors,
        "The targets themselves answer with 5xx (the application fails requests)",
        verdict,
        summary,
        Some(clause),
    );
    finding.evidence = evidence;
    finding.facts = Facts::Errors(match &loudest {
        Some(l) => ErrorFacts {
            errors: l.errors,
            requests: Some(l.requests),
        },
        None => ErrorFacts {
            errors: count,
            requests: None,
        },
    });
    finding
}

fn load_balancer_side(
    alb: &AlbEvidence,
    summaries: &[TargetGroupSummary],
    periods: &[DateTime<Utc>],
    count: f64,
    share: f64,
) -> Finding {
    let verdict = verdict_for(share);
    let codes = [
        (502, sum_at(&alb.errors.elb_502, periods)),
        (503, sum_at(&alb.errors.elb_503, periods)),
        (504, sum_at(&alb.errors.elb_504, periods)),
    ];
    let mut evidence = vec![
        Evidence::number("load balancer 5xx while breaching", count, "responses"),
        Evidence::number("share of all 5xx", round(share * 100.0, 1), "%"),
    ];
    for (code, n) in codes {
        evidence.push(Evidence::number(
            &format!("HTTP {code} from the load balancer"),
            n,
            "responses",
        ));
    }
    let dominant = codes
        .iter()
        .filter(|(_, n)| *n > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(code, _)| *code);
    let (summary, clause) = if verdict == Verdict::Refuted {
        (
            format!(
                "The load balancer itself answered {count:.0} 5xx ({:.1} % of all 5xx): it reached the targets and passed their answers on.",
                share * 100.0
            ),
            format!("load balancer 5xx: {count:.0}"),
        )
    } else {
        let why = match dominant {
            Some(503) => {
                let empty: Vec<&str> = summaries
                    .iter()
                    .filter(|s| s.targets_healthy == Some(0) || s.unhealthy_hosts_peak.unwrap_or(0.0) > 0.0)
                    .map(|s| s.name.as_str())
                    .collect();
                if empty.is_empty() {
                    "mostly 503: a rule forwarded to a group with no healthy target".to_owned()
                } else {
                    format!(
                        "mostly 503: no healthy target to send to in {}",
                        empty.join(", ")
                    )
                }
            }
            Some(504) => {
                let slowest = summaries
                    .iter()
                    .filter_map(|s| Some((s.name.as_str(), s.p99_peak?)))
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                match slowest {
                    Some((name, p99)) => format!(
                        "mostly 504: targets did not answer within the idle timeout ({name} p99 peaked at {p99} s)"
                    ),
                    None => "mostly 504: targets did not answer within the idle timeout".to_owned(),
                }
            }
            Some(502) => "mostly 502: targets closed connections or answered malformed responses (pods stopping or crashing, or an app keep-alive timeout shorter than the load balancer's idle timeout)".to_owned(),
            _ => "the per-code counts were not reported".to_owned(),
        };
        (
            format!(
                "The load balancer itself answered {count:.0} 5xx ({:.0} % of all 5xx), {why}.",
                share * 100.0
            ),
            match dominant {
                Some(code) => format!("load balancer answers {code}s"),
                None => format!("load balancer answers {count:.0} 5xx"),
            },
        )
    };
    let requests: f64 = alb
        .groups
        .iter()
        .map(|g| sum_at(&g.requests, periods))
        .sum();
    let mut finding = Finding::decided(
        FindingId::LoadBalancerErrors,
        "The load balancer answers 5xx itself (502 bad gateway, 503 no healthy target, 504 timeout)",
        verdict,
        summary,
        Some(clause),
    );
    finding.evidence = evidence;
    finding.facts = Facts::Errors(ErrorFacts {
        errors: count,
        requests: (requests > 0.0).then_some(requests + count),
    });
    finding
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::model::{TargetGroup, TargetType};
    use crate::evidence::{GroupEvidence, LoadBalancerErrors};
    use crate::findings::minutes::{at as t, per_minute as series};

    fn group(name: &str, errors: &[f64], requests: &[f64]) -> GroupEvidence {
        GroupEvidence {
            group: TargetGroup {
                arn: format!("arn:{name}"),
                name: name.into(),
                dimension: format!("targetgroup/{name}/1"),
                target_type: TargetType::Ip,
                port: None,
                protocol: None,
                health_check: None,
            },
            algorithm: None,
            slow_start_seconds: None,
            deregistration: None,
            health: None,
            tags: None,
            metric: series(errors),
            p50: MetricSeries::default(),
            p99: MetricSeries::default(),
            maximum: MetricSeries::default(),
            requests: series(requests),
            target_errors: series(errors),
            unhealthy_hosts: MetricSeries::default(),
            healthy_hosts: MetricSeries::default(),
        }
    }

    fn alb(groups: Vec<GroupEvidence>, target: &[f64], elb: &[f64], e503: &[f64]) -> AlbEvidence {
        AlbEvidence {
            services: Default::default(),
            load_balancer: None,
            groups,
            errors: LoadBalancerErrors {
                target_5xx: series(target),
                elb_5xx: series(elb),
                elb_503: series(e503),
                ..LoadBalancerErrors::default()
            },
        }
    }

    const PERIODS: [i64; 3] = [0, 1, 2];

    fn periods() -> Vec<DateTime<Utc>> {
        PERIODS.iter().map(|m| t(*m)).collect()
    }

    #[test]
    fn errors_answered_by_a_group_are_blamed_on_the_targets_and_name_the_group() {
        let evidence = alb(
            vec![
                group("api", &[30.0, 40.0, 50.0], &[1000.0; 3]),
                group("web", &[0.0; 3], &[500.0; 3]),
            ],
            &[30.0, 40.0, 50.0],
            &[0.0; 3],
            &[0.0; 3],
        );
        let [target, elb] = split(&evidence, &[], &periods());
        assert_eq!(target.verdict, Verdict::Supported);
        assert!(
            target.summary.contains("api answered 120"),
            "{}",
            target.summary
        );
        assert!(
            target.summary.contains("4.0 % of its requests"),
            "{}",
            target.summary
        );
        assert_eq!(elb.verdict, Verdict::Refuted);
    }

    #[test]
    fn errors_made_by_the_load_balancer_point_at_the_code_that_dominates() {
        let evidence = alb(
            vec![group("api", &[0.0; 3], &[1000.0; 3])],
            &[0.0; 3],
            &[20.0, 25.0, 30.0],
            &[20.0, 25.0, 30.0],
        );
        let [target, elb] = split(&evidence, &[], &periods());
        assert_eq!(target.verdict, Verdict::Refuted);
        assert_eq!(elb.verdict, Verdict::Supported);
        assert!(elb.summary.contains("mostly 503"), "{}", elb.summary);
    }

    #[test]
    fn no_errors_at_all_rules_both_sides_out() {
        let evidence = alb(
            vec![group("api", &[0.0; 3], &[10.0; 3])],
            &[0.0; 3],
            &[0.0; 3],
            &[0.0; 3],
        );
        let [target, elb] = split(&evidence, &[], &periods());
        assert_eq!(target.verdict, Verdict::Refuted);
        assert_eq!(elb.verdict, Verdict::Refuted);
    }

    #[test]
    fn both_sides_are_causes_when_each_answers_a_substantial_share() {
        let evidence = alb(
            vec![group("api", &[10.0; 3], &[100.0; 3])],
            &[10.0; 3],
            &[10.0; 3],
            &[10.0; 3],
        );
        let [target, elb] = split(&evidence, &[], &periods());
        assert_eq!(target.verdict, Verdict::Supported);
        assert_eq!(elb.verdict, Verdict::Supported);
    }
}
