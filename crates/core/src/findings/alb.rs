//! The load balancer side: which target group is slow (and whether the ALB
//! itself is), unhealthy targets, and whether switching the routing algorithm
//! could help.

use chrono::{DateTime, Utc};

use super::attribution::{self, Attribution, Combination, Outcome};
use super::traffic::{round, to_series};
use crate::alarm::facts::{Comparison, MetricFamily, Statistic};
use crate::diagnosis::summary::{TargetGroupSummary, UnhealthyTarget};
use crate::diagnosis::{Evidence, Facts, Finding, FindingId, Verdict};
use crate::evidence::model::{MetricSeries, TargetType, with_unit};
use crate::evidence::service_map::{self, ServiceRef};
use crate::evidence::{AlbEvidence, GroupEvidence};
use crate::series::Series;

/// Cumulative share of the breach the culprit groups must explain.
const CULPRIT_COVERAGE: f64 = 0.8;

/// The breakdown and the findings that rest on it.
#[derive(Debug, Clone, PartialEq)]
pub struct AlbAnalysis {
    pub summaries: Vec<TargetGroupSummary>,
    pub findings: Vec<Finding>,
    /// Which group's change explains the breach (`None`: an alarm on one
    /// group, the load balancer's own metrics, or too short a window).
    pub attribution: Option<Attribution>,
}

fn mean_at(series: &MetricSeries, periods: &[DateTime<Utc>]) -> Option<f64> {
    let values: Vec<f64> = periods.iter().filter_map(|t| series.at(*t)).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The group's Service: as a TargetGroupBinding names it, else from the
/// controller's tags, else guessed from the group's name.
fn service_of(alb: &AlbEvidence, group: &GroupEvidence) -> Option<ServiceRef> {
    alb.services
        .get(&group.group.arn)
        .cloned()
        .or_else(|| group.tags.as_ref().and_then(service_map::from_tags))
        .or_else(|| service_map::from_name(&group.group.name))
}

/// Analyses the groups over the breaching periods (`breach`; when empty, the
/// last 30 minutes of data stand in).
/// What the breakdown needs to know of the alarm.
#[derive(Debug, Clone, Copy)]
pub struct AlarmShape<'a> {
    /// What the alarm's metric measures.
    pub family: MetricFamily,
    /// The load balancer's kind, as people say it (`ALB`, `NLB`).
    pub load_balancer: &'a str,
    /// The metric exists per load balancer only (the load balancer's own
    /// failures): it falls on groups by their health and lost traffic.
    pub per_load_balancer_only: bool,
    pub statistic: &'a Statistic,
    pub threshold: f64,
    pub comparison: Comparison,
    pub period_seconds: u32,
    /// The metric's unit, for people (`s`).
    pub unit: &'a str,
    /// The `TargetGroup` dimension of an alarm on one group: that group is
    /// the culprit, whatever the others do.
    pub watched_group: Option<&'a str>,
    /// The alarm's metric for the whole load balancer, when read.
    pub observed: Option<&'a MetricSeries>,
}

pub fn analyse(alb: &AlbEvidence, breach: &[DateTime<Utc>], shape: AlarmShape<'_>) -> AlbAnalysis {
    let AlarmShape {
        family,
        load_balancer,
        per_load_balancer_only,
        statistic,
        threshold,
        comparison,
        period_seconds,
        unit,
        watched_group,
        observed,
    } = shape;
    let per_minute = 60.0 / f64::from(period_seconds.max(1));
    let periods = periods_considered(alb, breach, period_seconds);
    let lost_traffic = if per_load_balancer_only {
        lost_routable_targets(alb, &periods)
    } else {
        Default::default()
    };
    let watched = watched_group.and_then(|dimension| {
        alb.groups
            .iter()
            .position(|g| g.group.dimension == dimension)
    });
    let attribution = (watched.is_none() && !per_load_balancer_only)
        .then(|| {
            attribution::attribute(&attribution::Question {
                groups: alb
                    .groups
                    .iter()
                    .map(|g| attribution::GroupSeries {
                        value: &g.metric,
                        requests: &g.requests,
                        p50: &g.p50,
                        p99: &g.p99,
                        maximum: &g.maximum,
                    })
                    .collect(),
                observed,
                breach: &periods,
                combination: Combination::of(statistic),
                threshold,
                comparison,
            })
        })
        .flatten();

    let weights = breach_weights(alb, &periods, &shape, &lost_traffic);
    let total: f64 = weights.iter().sum();

    let mut summaries: Vec<TargetGroupSummary> = alb
        .groups
        .iter()
        .zip(&weights)
        .map(|(g, weight)| {
            let (healthy, not_healthy, unhealthy_targets) = target_health(g);
            TargetGroupSummary {
                name: g.group.name.clone(),
                arn: g.group.arn.clone(),
                target_type: g.group.target_type.as_str().to_owned(),
                port: g.group.port,
                protocol: g.group.protocol.clone(),
                algorithm: g.algorithm.clone(),
                slow_start_seconds: g.slow_start_seconds,
                kubernetes_service: service_of(alb, g),
                culprit: false,
                statistic_while_breaching: mean_at(&g.metric, &periods).map(|v| round(v, 3)),
                p99_peak: g.p99.max().map(|v| round(v, 3)),
                requests_per_minute_while_breaching: mean_at(&g.requests, &periods)
                    .map(|v| round(v * per_minute, 1)),
                share_of_breach: (total > 0.0).then(|| round(weight / total, 3)),
                baseline: None,
                without_its_change: None,
                http_5xx_in_window: (!g.target_errors.points.is_empty())
                    .then(|| g.target_errors.points.iter().map(|(_, v)| v).sum()),
                users: user_impact(g, &periods, per_minute),
                unhealthy_hosts_peak: g.unhealthy_hosts.max(),
                targets_turned_over: None,
                resets_flows_after_seconds: None,
                targets_healthy: healthy,
                targets_not_healthy: not_healthy,
                unhealthy_targets,
                series: vec![Series {
                    label: format!("{} {statistic}", g.group.name),
                    unit: unit.to_owned(),
                    ..to_series(&g.metric, period_seconds)
                }],
            }
        })
        .collect();

    note_rotation(&mut summaries, alb, &periods, per_load_balancer_only);
    match &attribution {
        Some(found) => {
            let shares = found.shares();
            for (i, summary) in summaries.iter_mut().enumerate() {
                let part = &found.groups[i];
                summary.culprit = found.culprits.contains(&i);
                summary.share_of_breach = Some(round(shares[i], 3));
                summary.baseline = part.baseline.map(|v| round(v, 3));
                summary.without_its_change = part.without_its_change.map(|v| round(v, 3));
            }
        }
        None => mark_culprits(&mut summaries, &weights, watched, threshold, comparison),
    }

    // A culprit's chart shows a second statistic beside the alarm's: the tail
    // (p99) for an Average alarm, the median for a percentile one.
    for (summary, g) in summaries.iter_mut().zip(&alb.groups) {
        if summary.culprit && family == MetricFamily::Latency {
            let (name, second) = if statistic.percentile() == Some(99.0) {
                ("p50", &g.p50)
            } else {
                ("p99", &g.p99)
            };
            summary.series.push(Series {
                label: format!("{} {name}", g.group.name),
                unit: unit.to_owned(),
                ..to_series(second, period_seconds)
            });
        }
    }
    let findings = vec![
        if per_load_balancer_only {
            shared_problem_by_health(&summaries, load_balancer)
        } else if let Some(found) = &attribution {
            shared_problem_by_change(
                &summaries,
                found,
                (threshold, statistic, combination_note(statistic)),
                (unit, family.symptom(), load_balancer),
            )
        } else {
            shared_problem(
                &summaries,
                threshold,
                comparison,
                breach.is_empty(),
                (unit, family.symptom(), load_balancer),
            )
        },
        unhealthy_targets(&summaries, load_balancer),
    ];
    AlbAnalysis {
        summaries,
        findings,
        attribution,
    }
}

/// The group's requests and failures per minute before the breach and while it lasted.
fn user_impact(
    g: &GroupEvidence,
    periods: &[DateTime<Utc>],
    per_minute: f64,
) -> Option<crate::diagnosis::summary::UserImpact> {
    let first = *periods.first()?;
    let before = |series: &MetricSeries| {
        let values: Vec<f64> = series
            .points
            .iter()
            .filter(|(t, _)| *t < first)
            .map(|(_, v)| *v)
            .collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64 * per_minute)
    };
    let during = |series: &MetricSeries| mean_at(series, periods).map(|v| v * per_minute);
    Some(crate::diagnosis::summary::UserImpact {
        requests_per_minute_before: round(before(&g.requests)?, 1),
        requests_per_minute_while_breaching: round(during(&g.requests)?, 1),
        failures_per_minute_before: round(before(&g.target_errors).unwrap_or(0.0), 2),
        failures_per_minute_while_breaching: round(during(&g.target_errors).unwrap_or(0.0), 2),
    })
}

/// Each group's weight in the breach: how much of the alarm's metric it
/// carried over `periods`, or for a low alarm how far it fell under the
/// threshold; the load balancer's own failures fall on failing groups.
fn breach_weights(
    alb: &AlbEvidence,
    periods: &[DateTime<Utc>],
    shape: &AlarmShape<'_>,
    lost_traffic: &std::collections::HashMap<String, f64>,
) -> Vec<f64> {
    let AlarmShape {
        per_load_balancer_only,
        statistic,
        threshold,
        comparison,
        ..
    } = *shape;
    alb.groups
        .iter()
        .map(|g| {
            periods
                .iter()
                .filter_map(|t| {
                    if per_load_balancer_only {
                        // The load balancer's own errors and refusals are published
                        // per load balancer only: they fall on the group whose
                        // targets were failing (unhealthy host-periods) or that
                        // lost its routable targets (its requests vanished).
                        return Some(
                            g.unhealthy_hosts.at(*t).unwrap_or(0.0)
                                + lost_traffic.get(&g.group.arn).copied().unwrap_or(0.0),
                        );
                    }
                    let value = g.metric.at(*t)?;
                    // A low alarm (too few healthy hosts, traffic gone) weighs
                    // how far each group fell under the threshold.
                    if !comparison.fires_upwards() {
                        return Some((threshold - value).max(0.0));
                    }
                    Some(match statistic {
                        Statistic::Average => value * g.requests.at(*t).unwrap_or(0.0),
                        Statistic::Sum | Statistic::SampleCount => value,
                        _ => (value - threshold).max(0.0),
                    })
                })
                .sum::<f64>()
                + if per_load_balancer_only {
                    turnover(g, periods)
                } else {
                    0.0
                }
        })
        .collect()
}

/// Each group's target turnover (for a metric published per load balancer
/// only) and whether leaving targets' flows are reset when their delay ends.
fn note_rotation(
    summaries: &mut [TargetGroupSummary],
    alb: &AlbEvidence,
    periods: &[DateTime<Utc>],
    per_load_balancer_only: bool,
) {
    for (summary, g) in summaries.iter_mut().zip(&alb.groups) {
        summary.targets_turned_over = per_load_balancer_only
            .then(|| turnover(g, periods))
            .filter(|t| *t > 0.0);
        summary.resets_flows_after_seconds = match g.deregistration {
            Some((delay, Some(true))) => Some(delay.unwrap_or(300)),
            _ => None,
        };
    }
}

/// How far back from a breaching period a target that joined or left still
/// counts: its deregistration delay, and its flows' end, come minutes later.
const TURNOVER_REACH_MINUTES: i64 = 5;

/// Targets that joined or left the group (steps of its HealthyHostCount) in
/// `periods` and the few minutes before each: a rollout replacing targets,
/// whose leaving flows the load balancer ends. Per-load-balancer counts
/// (an NLB's own resets, an ALB's 502s) fall on the group that turned over.
fn turnover(g: &GroupEvidence, periods: &[DateTime<Utc>]) -> f64 {
    // HealthyHostCount's minimum hides a target that joined and one that
    // left in the same minute: the targets draining or registering now
    // (DescribeTargetHealth) count too.
    let in_transition = g.health.as_ref().map_or(0, |h| {
        h.iter()
            .filter(|t| matches!(t.state.as_str(), "draining" | "initial"))
            .count()
    }) as f64;
    let points = &g.healthy_hosts.points;
    in_transition
        + points
            .windows(2)
            .filter(|w| {
                periods.iter().any(|t| {
                    w[1].0 <= *t && *t - w[1].0 <= chrono::Duration::minutes(TURNOVER_REACH_MINUTES)
                })
            })
            .map(|w| (w[1].1 - w[0].1).abs())
            .sum::<f64>()
}

/// Healthy and not-healthy targets now, and the ones not healthy, when the
/// group's health was read.
fn target_health(g: &GroupEvidence) -> (Option<u32>, Option<u32>, Vec<UnhealthyTarget>) {
    let Some(health) = &g.health else {
        return (None, None, Vec::new());
    };
    let bad: Vec<UnhealthyTarget> = health
        .iter()
        .filter(|h| h.state != "healthy")
        .map(|h| UnhealthyTarget {
            id: h.id.clone(),
            state: h.state.clone(),
            reason: h.reason.clone(),
            description: h.description.clone(),
        })
        .collect();
    (
        Some(u32::try_from(health.len() - bad.len()).unwrap_or(u32::MAX)),
        Some(u32::try_from(bad.len()).unwrap_or(u32::MAX)),
        bad,
    )
}

/// Per group, how much of its traffic vanished during `periods` compared
/// with the periods before (0..1 per period, summed), when at least half of
/// it did: a group whose targets all left (draining, never Ready, so never
/// registered) stops receiving requests while the load balancer answers 503.
fn lost_routable_targets(
    alb: &AlbEvidence,
    periods: &[DateTime<Utc>],
) -> std::collections::HashMap<String, f64> {
    let Some(first) = periods.first() else {
        return Default::default();
    };
    // A series' median before the breach.
    let usual_of = |series: &MetricSeries| {
        let mut before: Vec<f64> = series
            .points
            .iter()
            .filter(|(t, _)| t < first)
            .map(|(_, v)| *v)
            .collect();
        super::traffic::median(&mut before)
    };
    alb.groups
        .iter()
        .filter_map(|g| {
            let usual = usual_of(&g.requests).unwrap_or(0.0);
            let during = periods
                .iter()
                .map(|t| g.requests.at(*t).unwrap_or(0.0))
                .sum::<f64>()
                / periods.len() as f64;
            let lost = if usual >= 1.0 {
                ((usual - during) / usual).clamp(0.0, 1.0)
            } else {
                0.0
            };
            // Healthy before, none healthy at some point of the breach.
            let emptied = usual_of(&g.healthy_hosts).is_some_and(|h| h >= 1.0)
                && periods
                    .iter()
                    .filter_map(|t| g.healthy_hosts.at(*t))
                    .any(|h| h < 1.0);
            let empty_now = g
                .health
                .as_ref()
                .is_some_and(|h| !h.iter().any(|t| t.state == "healthy"));
            (lost >= 0.5 || emptied || (empty_now && usual >= 1.0))
                .then(|| (g.group.arn.clone(), lost.max(0.5) * periods.len() as f64))
        })
        .collect()
}

/// Said of a recomputed percentile.
fn combination_note(statistic: &Statistic) -> &'static str {
    if Combination::of(statistic).is_approximate() {
        " (approximated from each group's percentiles weighted by its requests)"
    } else {
        ""
    }
}

/// The evidence lines of the shared-problem question answered by change:
/// each group's level while breaching and usually, the baseline window, and
/// the alarm's metric.
fn change_evidence(
    summaries: &[TargetGroupSummary],
    found: &Attribution,
    (threshold, statistic, approximation): (f64, &Statistic, &str),
    unit: &str,
    baseline_text: &str,
) -> Vec<Evidence> {
    let value = |v: Option<f64>| v.map_or("no data".to_owned(), |v| with_unit(v, unit));
    let mut evidence: Vec<Evidence> = summaries
        .iter()
        .zip(&found.groups)
        .map(|(s, part)| {
            Evidence::text(
                "target group",
                format!(
                    "{}: {} while breaching, usually {}{}",
                    s.label(),
                    value(part.during),
                    if part.appeared {
                        "nothing (it served no requests before)".to_owned()
                    } else {
                        value(part.baseline)
                    },
                    if s.culprit {
                        format!(
                            "; without its change the alarm's metric would be {} (culprit)",
                            value(part.without_its_change)
                        )
                    } else if part.changed {
                        " (moved)".to_owned()
                    } else if part.standing {
                        " (always beyond the threshold: a standing condition, not this breach)"
                            .to_owned()
                    } else {
                        String::new()
                    }
                ),
            )
        })
        .collect();
    evidence.push(Evidence::text("baseline", baseline_text.to_owned()));
    evidence.push(Evidence::text(
        "the alarm's metric while breaching",
        format!(
            "{} ({statistic}{approximation}), threshold {}",
            value(found.observed),
            with_unit(threshold, unit)
        ),
    ));
    evidence
}

/// The shared-ALB question answered by which groups *changed*: most groups
/// moving together at the same minutes is a shared problem; one group whose
/// return to its usual level brings the metric back clears the load balancer;
/// no group moving at all leaves nothing behind the load balancer to blame.
fn shared_problem_by_change(
    summaries: &[TargetGroupSummary],
    found: &Attribution,
    (threshold, statistic, approximation): (f64, &Statistic, &str),
    (unit, symptom, lb): (&str, &str, &str),
) -> Finding {
    let hypothesis =
        "The shared load balancer or ingress is the problem (rather than one service behind it)";
    let value = |v: Option<f64>| v.map_or("no data".to_owned(), |v| with_unit(v, unit));
    let window = &found.baseline;
    let baseline_text = format!(
        "{} {} from {} to {} UTC",
        window.periods,
        match window.source {
            attribution::BaselineSource::CalmPeriods => "periods without a breach",
            attribution::BaselineSource::EarlyWindow => "periods at the start of the window",
        },
        window.from.format("%H:%M"),
        window.to.format("%H:%M")
    );
    let evidence = change_evidence(
        summaries,
        found,
        (threshold, statistic, approximation),
        unit,
        &baseline_text,
    );
    let names = |list: &[usize]| {
        list.iter()
            .map(|i| summaries[*i].label())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let others = |n: usize| match n {
        1 => "the other group".to_owned(),
        n => format!("the {n} other groups"),
    };
    let moved: Vec<usize> = (0..found.groups.len())
        .filter(|i| found.groups[*i].changed)
        .collect();
    let standing: Vec<usize> = (0..found.groups.len())
        .filter(|i| found.groups[*i].standing && !found.groups[*i].changed)
        .collect();
    let standing_note = if standing.is_empty() {
        String::new()
    } else {
        format!(
            " {} {} always beyond the threshold at {} usual level: a standing condition, not this breach.",
            names(&standing),
            if standing.len() == 1 { "is" } else { "are" },
            if standing.len() == 1 { "its" } else { "their" }
        )
    };
    match found.outcome {
        Outcome::Shared => Finding {
            evidence,
            ..Finding::decided(
                crate::diagnosis::FindingId::SharedLoadBalancerProblem,
                hypothesis,
                Verdict::Supported,
                format!(
                    "{} of {} target groups moved together at the same minutes ({}), each away from its own usual level ({baseline_text}): look at what they share (the {lb}, the ingress, a common dependency, the nodes).",
                    moved.len(),
                    summaries.len(),
                    names(&moved)
                ),
                None,
            )
        }
        .with_cause(format!(
            "{} of {} target groups {symptom} at once",
            moved.len(),
            summaries.len()
        )),
        Outcome::NothingChanged => Finding {
            evidence,
            ..Finding::decided(
                crate::diagnosis::FindingId::SharedLoadBalancerProblem,
                hypothesis,
                Verdict::Inconclusive,
                format!(
                    "No target group moved from its own usual level ({baseline_text}): nothing changed behind the load balancer, so no group is to blame.{standing_note}"
                ),
                None,
            )
        },
        Outcome::Culprits => {
            let culprits = &found.culprits;
            let rest = summaries.len() - culprits.len();
            let summary = if found.sufficient {
                format!(
                    "Without {}'s change the alarm's {statistic} would have been {}, {} the threshold of {}{approximation}; {} stayed at {} usual level: the shared {lb} and ingress are cleared.{standing_note}",
                    names(culprits),
                    value(found.counterfactual),
                    if found.counterfactual.is_some_and(|v| v > threshold) { "over" } else { "under" },
                    with_unit(threshold, unit),
                    others(rest),
                    if rest == 1 { "its" } else { "their" },
                )
            } else {
                format!(
                    "{} made up most of the change, although even at {} usual level the alarm's {statistic} would stay at {} against {} (its usual level sits near the threshold){approximation}; {} stayed at {} usual level: the shared {lb} and ingress are cleared.{standing_note}",
                    names(culprits),
                    if culprits.len() == 1 { "its" } else { "their" },
                    value(found.counterfactual),
                    with_unit(threshold, unit),
                    others(rest),
                    if rest == 1 { "its" } else { "their" },
                )
            };
            Finding {
                evidence,
                ruled_out_by: Some(format!(
                    "shared {lb}: only {} changed; {} stayed at {} usual level",
                    names(culprits),
                    others(rest),
                    if rest == 1 { "its" } else { "their" },
                )),
                ..Finding::decided(
                    crate::diagnosis::FindingId::SharedLoadBalancerProblem,
                    hypothesis,
                    Verdict::Refuted,
                    summary,
                    None,
                )
            }
            .with_cause(format!(
                "target group {} is {symptom} while {} normal",
                names(culprits),
                match rest {
                    1 => "the other group stays".to_owned(),
                    n => format!("{n} other groups stay"),
                }
            ))
        }
    }
}

/// The periods the load balancer findings look at: the breaching ones, or
/// when there are none the last 30 minutes of the groups' data.
pub(crate) fn periods_considered(
    alb: &AlbEvidence,
    breach: &[DateTime<Utc>],
    period_seconds: u32,
) -> Vec<DateTime<Utc>> {
    if !breach.is_empty() {
        return breach.to_vec();
    }
    let mut recent: Vec<DateTime<Utc>> = alb
        .groups
        .iter()
        .flat_map(|g| g.metric.points.iter().map(|(t, _)| *t))
        .collect();
    recent.sort();
    recent.dedup();
    let keep = (1800 / period_seconds.max(1)) as usize;
    recent.split_off(recent.len().saturating_sub(keep.max(1)))
}

/// An alarm on one group (`watched`) names its culprit; otherwise the
/// culprits are the fewest groups that explain 80 % of the breach, among
/// groups that breach themselves.
fn mark_culprits(
    summaries: &mut [TargetGroupSummary],
    weights: &[f64],
    watched: Option<usize>,
    threshold: f64,
    comparison: Comparison,
) {
    if let Some(i) = watched {
        summaries[i].culprit = true;
        return;
    }
    let total: f64 = weights.iter().sum();
    let mut order: Vec<usize> = (0..summaries.len()).collect();
    order.sort_by(|a, b| weights[*b].total_cmp(&weights[*a]));
    let mut covered = 0.0;
    for i in order {
        if total <= 0.0 || covered >= CULPRIT_COVERAGE {
            break;
        }
        let own = summaries[i].statistic_while_breaching;
        let breaching_itself = own.is_some_and(|v| comparison.breaches(v, threshold));
        let share = weights[i] / total;
        if breaching_itself || share >= 0.5 {
            summaries[i].culprit = true;
            covered += share;
        } else {
            break;
        }
    }
}

fn group_line(s: &TargetGroupSummary, unit: &str) -> String {
    format!(
        "{}: {} while breaching, {} requests/min, {} of the breach{}",
        s.label(),
        s.statistic_while_breaching
            .map_or("no data".to_owned(), |v| with_unit(v, unit)),
        s.requests_per_minute_while_breaching
            .map_or("?".to_owned(), |v| format!("{v:.0}")),
        s.share_of_breach
            .map_or("?".to_owned(), |v| format!("{:.0} %", v * 100.0)),
        if s.culprit { " (culprit)" } else { "" }
    )
}

fn shared_problem(
    summaries: &[TargetGroupSummary],
    threshold: f64,
    comparison: Comparison,
    no_breach: bool,
    (unit, symptom, lb): (&str, &str, &str),
) -> Finding {
    let with_data: Vec<&TargetGroupSummary> = summaries
        .iter()
        .filter(|s| s.statistic_while_breaching.is_some())
        .collect();
    let slow: Vec<&TargetGroupSummary> = with_data
        .iter()
        .copied()
        .filter(|s| {
            s.statistic_while_breaching
                .is_some_and(|v| comparison.breaches(v, threshold))
        })
        .collect();
    let culprits: Vec<&TargetGroupSummary> = summaries.iter().filter(|s| s.culprit).collect();
    let evidence: Vec<Evidence> = summaries
        .iter()
        .map(|s| Evidence::text("target group", group_line(s, unit)))
        .chain([
            Evidence::number("target groups", summaries.len() as f64, ""),
            Evidence::number(
                "groups breaching the threshold themselves",
                slow.len() as f64,
                "groups",
            ),
        ])
        .collect();
    let names = |list: &[&TargetGroupSummary]| {
        list.iter()
            .map(|s| s.label())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (verdict, summary, cause) = if with_data.is_empty() {
        (
            Verdict::Inconclusive,
            "No per-target-group datapoints in the window.".to_owned(),
            None,
        )
    } else if summaries.len() == 1 {
        (
            Verdict::Inconclusive,
            format!(
                "The load balancer has a single target group: the {lb} and the service cannot be told apart by a breakdown."
            ),
            culprits
                .first()
                .map(|c| format!("target group {} is {symptom}", c.label())),
        )
    } else if slow.len() * 2 > with_data.len() {
        (
            Verdict::Supported,
            format!(
                "{} of {} target groups breach the threshold themselves ({}): look at what they share (the {lb}, the ingress, a common dependency).",
                slow.len(),
                with_data.len(),
                names(&slow)
            ),
            Some(format!(
                "{} of {} target groups {symptom} at once",
                slow.len(),
                with_data.len()
            )),
        )
    } else if !culprits.is_empty() {
        let fastest_others = summaries
            .iter()
            .filter(|s| !s.culprit)
            .filter_map(|s| s.statistic_while_breaching)
            .reduce(f64::max);
        (
            Verdict::Refuted,
            format!(
                "{} explain{} {:.0} % of the breach while {} at or below {}{}: the shared {lb} and ingress are cleared.",
                names(&culprits),
                if culprits.len() == 1 { "s" } else { "" },
                culprits
                    .iter()
                    .filter_map(|c| c.share_of_breach)
                    .sum::<f64>()
                    * 100.0,
                match summaries.len() - culprits.len() {
                    1 => "the other group stays".to_owned(),
                    n => format!("the {n} other groups stay"),
                },
                fastest_others.map_or("no data".to_owned(), |v| with_unit(v, unit)),
                if no_breach {
                    " (last 30 minutes; no breaching period in the window)"
                } else {
                    ""
                }
            ),
            Some(format!(
                "target group {} is {symptom} while {} normal",
                names(&culprits),
                match summaries.len() - culprits.len() {
                    1 => "the other group stays".to_owned(),
                    n => format!("{n} other groups stay"),
                }
            )),
        )
    } else {
        (
            Verdict::Inconclusive,
            "No group stands out, and most groups stay under the threshold.".to_owned(),
            None,
        )
    };
    Finding {
        ruled_out_by: (verdict == Verdict::Refuted).then(|| {
            format!(
                "shared {lb}: {} at or under {}",
                match summaries.len() - culprits.len() {
                    1 => "the other group".to_owned(),
                    n => format!("the {n} other groups"),
                },
                summaries
                    .iter()
                    .filter(|s| !s.culprit)
                    .filter_map(|s| s.statistic_while_breaching)
                    .reduce(f64::max)
                    .map_or("no data".to_owned(), |v| with_unit(v, unit))
            )
        }),
        role: Default::default(),
        id: FindingId::SharedLoadBalancerProblem,
        hypothesis:
            "The shared load balancer or ingress is the problem (rather than one service behind it)"
                .to_owned(),
        verdict,
        summary,
        cause,
        evidence,
        series: Vec::new(),
        facts: Facts::None,
    }
}

/// The shared-ALB question for metrics the load balancer publishes only for
/// itself: a group whose targets failed while the others stayed healthy
/// localises the errors; no failing group leaves the load balancer itself
/// (its idle timeout, its connection limits) in question.
fn shared_problem_by_health(summaries: &[TargetGroupSummary], lb: &str) -> Finding {
    let culprits: Vec<&TargetGroupSummary> = summaries.iter().filter(|s| s.culprit).collect();
    let others = summaries.len() - culprits.len();
    let others_text = match others {
        1 => "the other group".to_owned(),
        n => format!("the {n} other groups"),
    };
    let hypothesis =
        "The shared load balancer or ingress is the problem (rather than one service behind it)";
    // Every group's targets failing at once: what they share failed (the
    // path from the load balancer to the nodes, a security group, the nodes).
    let all_failed = summaries.len() > 1
        && summaries
            .iter()
            .all(|s| s.unhealthy_hosts_peak.is_some_and(|peak| peak > 0.0));
    if culprits.is_empty() && all_failed {
        return Finding {
            cause: Some(format!(
                "the targets of all {} groups behind the {lb} failed at once: something they share",
                summaries.len()
            )),
            ..Finding::decided(
                FindingId::SharedLoadBalancerProblem,
                hypothesis,
                Verdict::Supported,
                format!(
                    "The targets of every group behind the {lb} ({} groups) failed their health checks in the same window while the {lb} answered for itself: what they share (the path from the {lb} to the nodes, a security group, the nodes) failed, not one service.",
                    summaries.len()
                ),
                None,
            )
        };
    }
    if culprits.is_empty() {
        return Finding::decided(
            FindingId::SharedLoadBalancerProblem,
            hypothesis,
            Verdict::Inconclusive,
            "No group's targets failed while the load balancer answered for itself, and CloudWatch has no per-group figure for it: the load balancer (idle timeout, connection limits) or a keep-alive mismatch in any group stay possible.".to_owned(),
            None,
        );
    }
    let names = culprits
        .iter()
        .map(|c| c.label())
        .collect::<Vec<_>>()
        .join(", ");
    // Targets that came and went, not targets that failed: a rotation.
    let rotating: Vec<&&TargetGroupSummary> = culprits
        .iter()
        .filter(|c| c.unhealthy_hosts_peak.unwrap_or(0.0) <= 0.0 && c.targets_turned_over.is_some())
        .collect();
    if rotating.len() == culprits.len() {
        let resets = rotating
            .iter()
            .filter_map(|c| c.resets_flows_after_seconds.map(|d| (c.label(), d)))
            .map(|(name, delay)| {
                format!("; {name} resets a leaving target's open flows when its {delay} s deregistration delay ends")
            })
            .collect::<String>();
        let moved: f64 = rotating.iter().filter_map(|c| c.targets_turned_over).sum();
        return Finding {
            cause: Some(format!(
                "target group {names}'s targets were being replaced ({moved:.0} joined or left) in the breach minutes while {others_text} stayed put{resets}"
            )),
            ..Finding::decided(
                FindingId::SharedLoadBalancerProblem,
                hypothesis,
                Verdict::Refuted,
                format!(
                    "CloudWatch counts this per load balancer only; in the same minutes only {names}'s targets came and went ({moved:.0} joined or left, none failed its health checks) while {others_text} stayed put{resets}: it comes from that group's rotation, not from the shared load balancer."
                ),
                Some(format!("shared {lb}: {others_text} stayed put")),
            )
        };
    }
    Finding {
        // Where, for the headline, though the hypothesis itself is ruled out.
        cause: Some(format!(
            "target group {names} is failing behind the load balancer while {others_text} stay healthy"
        )),
        ..Finding::decided(
            FindingId::SharedLoadBalancerProblem,
            hypothesis,
            Verdict::Refuted,
            format!(
                "Only {names}'s targets failed while the load balancer answered for itself; {others_text} stayed healthy: the errors come from that group, not from the shared load balancer."
            ),
            Some(format!("shared {lb}: {others_text} stayed healthy")),
        )
    }
}

fn unhealthy_targets(summaries: &[TargetGroupSummary], lb: &str) -> Finding {
    let considered: Vec<&TargetGroupSummary> = if summaries.iter().any(|s| s.culprit) {
        summaries.iter().filter(|s| s.culprit).collect()
    } else {
        summaries.iter().collect()
    };
    let mut evidence = Vec::new();
    let mut unhealthy_now = 0;
    let mut peak_unhealthy: f64 = 0.0;
    let mut health_known = true;
    let mut empty_groups = Vec::new();
    // Groups with no healthy target whose targets are leaving or arriving
    // (draining, unused, initial) rather than failing: a rollout or a
    // deregistration took their routable targets, not a health check.
    let mut emptied_groups = Vec::new();
    let mut leaving = 0;
    for s in &considered {
        let failing = u32::try_from(
            s.unhealthy_targets
                .iter()
                .filter(|t| matches!(t.state.as_str(), "unhealthy" | "unavailable"))
                .count(),
        )
        .unwrap_or(u32::MAX);
        let others = u32::try_from(s.unhealthy_targets.len())
            .unwrap_or(u32::MAX)
            .saturating_sub(failing);
        match (s.targets_healthy, s.targets_not_healthy) {
            (Some(h), Some(n)) => {
                evidence.push(Evidence::text(
                    &format!("{} targets", s.name),
                    format!("{h} healthy, {failing} failing health checks, {others} draining, unused or initial"),
                ));
                unhealthy_now += failing;
                leaving += others;
                if h + n == 0 {
                    empty_groups.push(s.name.clone());
                } else if h == 0 && failing == 0 {
                    emptied_groups.push(s.name.clone());
                }
            }
            _ => health_known = false,
        }
        for t in &s.unhealthy_targets {
            evidence.push(Evidence::text(
                &format!("{} {}", s.name, t.id),
                format!(
                    "{} {} {}",
                    t.state,
                    t.reason.as_deref().unwrap_or(""),
                    t.description.as_deref().unwrap_or("")
                )
                .trim()
                .to_owned(),
            ));
        }
        peak_unhealthy = peak_unhealthy.max(s.unhealthy_hosts_peak.unwrap_or(0.0));
    }
    evidence.push(Evidence::number(
        "UnHealthyHostCount peak in the window",
        peak_unhealthy,
        "hosts",
    ));
    let (verdict, summary, cause) = if unhealthy_now > 0 || peak_unhealthy > 0.0 {
        (
            Verdict::Supported,
            format!(
                "{} failing health checks now, up to {peak_unhealthy:.0} unhealthy during the window: fewer targets carry the traffic and the {lb} may route to failing ones.",
                crate::classify::plural(unhealthy_now, "target")
            ),
            Some(format!(
                "{} unhealthy",
                crate::classify::plural(unhealthy_now, "target")
            )),
        )
    } else if !empty_groups.is_empty() {
        (
            Verdict::Inconclusive,
            format!(
                "No targets are registered in {}: nothing to be unhealthy, and nothing to serve.",
                empty_groups.join(", ")
            ),
            None,
        )
    } else if !emptied_groups.is_empty() {
        (
            Verdict::Inconclusive,
            format!(
                "No target of {} is healthy, yet none fails its health checks: its {} are draining, unused or still initial. The group lost its routable targets (a rollout or a deregistration), not its health.",
                emptied_groups.join(", "),
                crate::classify::plural(leaving, "target")
            ),
            None,
        )
    } else if health_known && !considered.is_empty() {
        (
            Verdict::Refuted,
            if leaving > 0 {
                format!(
                    "No target fails its health checks and UnHealthyHostCount stayed at 0 ({} draining, unused or initial: leaving or joining, not failing).",
                    crate::classify::plural(leaving, "target")
                )
            } else {
                "Every target is healthy and UnHealthyHostCount stayed at 0.".to_owned()
            },
            Some("unhealthy targets: none, UnHealthyHostCount 0".to_owned()),
        )
    } else {
        (
            Verdict::Inconclusive,
            "Target health could not be read.".to_owned(),
            None,
        )
    };
    Finding {
        evidence,
        ..Finding::decided(
            FindingId::UnhealthyTargets,
            "Unhealthy targets explain the alarm",
            verdict,
            summary,
            cause,
        )
    }
}

/// Whether least outstanding requests would help the culprit group: only in
/// ip mode, and only when some targets are slower or busier than others (a hot
/// pod, restarted or new pods warming up); with evenly loaded pods it moves
/// nothing. Decided after the workload findings, which carry that evidence.
pub fn least_outstanding_requests(
    summaries: &[TargetGroupSummary],
    findings: &[Finding],
) -> Option<Finding> {
    let culprit = summaries.iter().find(|s| s.culprit)?;
    let algorithm = culprit
        .algorithm
        .clone()
        .unwrap_or_else(|| "round_robin".to_owned());
    let mut evidence = vec![
        Evidence::text("target group", culprit.name.clone()),
        Evidence::text("target type", culprit.target_type.clone()),
        Evidence::text("routing algorithm", algorithm.clone()),
    ];
    let verdict_of = |id: FindingId| findings.iter().find(|f| f.id == id);
    let uneven: Vec<&Finding> = [FindingId::PodImbalance, FindingId::PodRestarts]
        .into_iter()
        .filter_map(verdict_of)
        .filter(|f| f.verdict == Verdict::Supported)
        .collect();
    for f in &uneven {
        evidence.push(Evidence::text("uneven targets", f.summary.clone()));
    }
    let even = verdict_of(FindingId::PodImbalance).filter(|f| f.verdict == Verdict::Refuted);
    let (verdict, summary) = match (TargetType::parse(&culprit.target_type), algorithm.as_str()) {
        (TargetType::Instance, _) => (
            Verdict::Refuted,
            format!(
                "{} is in instance mode: the ALB balances across nodes' NodePort {}, and kube-proxy then sends each request to any pod, so the ALB's algorithm cannot balance per pod.",
                culprit.name,
                culprit.port.map_or("?".to_owned(), |p| p.to_string())
            ),
        ),
        (TargetType::Ip, "least_outstanding_requests") => (
            Verdict::Refuted,
            format!(
                "{} already routes by least outstanding requests.",
                culprit.name
            ),
        ),
        (TargetType::Ip, _) if !uneven.is_empty() => (
            Verdict::Supported,
            format!(
                "{} targets pods directly (ip mode) with {algorithm} while some pods are slower or busier than the others: least outstanding requests would send new requests to the pods with the fewest in flight, away from them (it adds no capacity).",
                culprit.name
            ),
        ),
        (TargetType::Ip, _) => match even {
            Some(f) => (
                Verdict::Refuted,
                format!(
                    "{} is in ip mode with {algorithm}, but the pods are evenly loaded ({}): least outstanding requests only helps when some targets are slower or busier than others.",
                    culprit.name,
                    f.summary.trim_end_matches('.')
                ),
            ),
            None => (
                Verdict::Inconclusive,
                format!(
                    "{} is in ip mode with {algorithm}, but whether some pods are slower or busier than others is not known: least outstanding requests only helps then.",
                    culprit.name
                ),
            ),
        },
        (other, _) => (
            Verdict::Inconclusive,
            format!(
                "{} targets {}: the routing algorithm question does not apply.",
                culprit.name,
                other.as_str()
            ),
        ),
    };
    Some(Finding {
        ruled_out_by: (verdict == Verdict::Refuted).then(|| {
            format!(
                "least outstanding requests: {}",
                match (TargetType::parse(&culprit.target_type), algorithm.as_str()) {
                    (TargetType::Instance, _) => "instance mode",
                    (_, "least_outstanding_requests") => "already in use",
                    _ => "pods evenly loaded",
                }
            )
        }),
        role: Default::default(),
        id: FindingId::LeastOutstandingRequests,
        hypothesis: "Switching the target group to least outstanding requests would help"
            .to_owned(),
        verdict,
        summary,
        cause: None,
        evidence,
        series: Vec::new(),
        facts: Facts::None,
    })
}

#[cfg(test)]
mod tests;
