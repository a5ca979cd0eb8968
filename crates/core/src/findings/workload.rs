//! The workload behind the culprit target group: are the pods imbalanced or
//! evenly saturated, capped by a per-process ceiling, throttled; can the HPA
//! react; did a deploy start it; is there a readiness probe; are pods pending.

use chrono::{DateTime, Duration, Utc};

use super::traffic::{median, round};
use crate::classify::{Classification, human_duration};
use crate::diagnosis::finding::{
    CeilingFacts, HpaBounds, HpaFacts, ImbalanceFacts, PodCpu, PodTurnover, RestartFacts,
    ThrottlingFacts,
};
use crate::diagnosis::summary::{PodSummary, WorkloadSummary};
use crate::diagnosis::{Evidence, Facts, Finding, FindingId, Verdict};
use crate::evidence::workload::{Condition, PodInfo, PodSeries, Workload};
use crate::series::Series;

/// Pods whose CPU spread is below this coefficient of variation move together.
const TOGETHER_CV: f64 = 0.25;
/// Round robin sends every pod the same share of requests, so identical pods
/// burn about the same CPU: the hottest pod at this multiple of the median of
/// the others, while the others agree (spread under [`PEERS_AGREE`]), is hot.
const HOT_OVER_PEERS: f64 = 1.5;
const PEERS_AGREE: f64 = 0.25;
/// ... and at this multiple it stands out even from peers that scatter.
const HOT_OVER_SCATTERED_PEERS: f64 = 3.0;
/// A pod is busy at this share of its CPU request ...
const BUSY_SHARE_OF_REQUEST: f64 = 0.25;
/// ... or, when it requests none, at this many cores.
const BUSY_CORES_WITHOUT_REQUEST: f64 = 0.1;
/// A plateau within this many cores of a whole number of cores is a per-process ceiling.
const NEAR_INTEGER: f64 = 0.15;
/// ... when it also stays below this share of the CPU limit.
const BELOW_LIMIT: f64 = 0.85;
/// Usage at this share of the limit is at the limit.
const AT_LIMIT: f64 = 0.95;
/// A restart this long before the breach began can still explain it (a cold pod).
const RESTART_LEAD: Duration = Duration::minutes(30);
/// A deploy this long before the first transition may have caused it.
const DEPLOY_WINDOW: Duration = Duration::hours(2);

/// Per-pod CPU at the breaching periods (the nearest sample within a step).
struct Usage {
    /// pod -> values at the breaching periods it has data for.
    by_pod: Vec<(String, Vec<f64>)>,
    /// period -> values across pods.
    by_period: Vec<Vec<f64>>,
}

fn nearest(points: &[(DateTime<Utc>, f64)], t: DateTime<Utc>, tolerance: Duration) -> Option<f64> {
    let i = points.partition_point(|(at, _)| *at < t);
    [i.checked_sub(1), Some(i)]
        .into_iter()
        .flatten()
        .filter_map(|j| points.get(j))
        .filter(|(at, _)| (*at - t).abs() <= tolerance)
        .min_by_key(|(at, _)| (*at - t).abs())
        .map(|(_, v)| *v)
}

fn usage(series: &PodSeries, periods: &[DateTime<Utc>]) -> Usage {
    let tolerance = Duration::seconds(i64::from(series.step_seconds.max(60)));
    let by_pod = series
        .cpu
        .iter()
        .map(|(pod, points)| {
            (
                pod.clone(),
                periods
                    .iter()
                    .filter_map(|t| nearest(points, *t, tolerance))
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let by_period = periods
        .iter()
        .map(|t| {
            series
                .cpu
                .values()
                .filter_map(|points| nearest(points, *t, tolerance))
                .collect::<Vec<_>>()
        })
        .filter(|v: &Vec<f64>| !v.is_empty())
        .collect();
    Usage { by_pod, by_period }
}

fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted.get(rank).copied()
}

/// The workload findings and summary.
pub fn decide(
    workload: &Workload,
    series: Option<&PodSeries>,
    breach: &[DateTime<Utc>],
    classification: &Classification,
    now: DateTime<Utc>,
) -> (Vec<Finding>, WorkloadSummary) {
    // Without breaching periods, the last 30 minutes of series stand in.
    let periods: Vec<DateTime<Utc>> = if breach.is_empty() {
        series
            .and_then(|s| s.cpu.values().next())
            .map(|points| points.iter().rev().take(30).map(|(t, _)| *t).collect())
            .unwrap_or_default()
    } else {
        breach.to_vec()
    };
    let used = series.map(|s| usage(s, &periods));
    let plateau = |pod: &str| {
        used.as_ref()
            .and_then(|u| u.by_pod.iter().find(|(p, _)| p == pod))
            .and_then(|(_, v)| percentile(v, 90.0))
    };
    let running: Vec<&crate::evidence::workload::PodInfo> = workload
        .pods
        .iter()
        .filter(|p| p.phase == "Running")
        .collect();

    let summary = WorkloadSummary {
        cluster: workload.cluster.clone(),
        namespace: workload.service.namespace.clone(),
        service: workload.service.name.clone(),
        mapped_by: serde_json::to_value(workload.service.source)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        deployment: workload.deployment.as_ref().map(|d| d.name.clone()),
        replicas: workload.deployment.as_ref().and_then(|d| d.replicas),
        last_rollout: workload.deployment.as_ref().and_then(|d| d.last_rollout),
        hpa: workload.hpa.as_ref().map(|h| h.name.clone()),
        pods: workload
            .pods
            .iter()
            .map(|p| PodSummary {
                name: p.name.clone(),
                node: p.node.clone(),
                phase: p.phase.clone(),
                ready: p.ready,
                restarts: p.restarts,
                cpu_request: p.cpu_request(),
                cpu_limit: p.cpu_limit(),
                cpu_while_breaching: plateau(&p.name).map(|v| round(v, 3)),
                last_termination: p.lifecycle.last_termination.clone(),
                running_since: p.lifecycle.running_since,
            })
            .collect(),
        series_origin: series.map(|s| s.origin.clone()),
    };

    // Restarts matter from a little before the breach (or the episode) began.
    let window_start = breach
        .first()
        .copied()
        .into_iter()
        .chain(classification.figures.episode_started_at)
        .min()
        .map(|t| crate::instants::earlier(t, RESTART_LEAD));
    let mut findings = vec![
        imbalance(workload, series, used.as_ref(), now),
        restarts(workload, window_start, breach.first().copied(), now),
        ceiling(&running, &plateau, series.is_some()),
        throttling(&running, series, &periods, &plateau),
        hpa(workload, used.as_ref(), &running),
        deploy(workload, classification),
        readiness(workload),
        super::probes::probe_failures(workload, window_start),
        pending(workload),
    ];
    if workload.pods.iter().any(|p| p.phase == "Pending") {
        findings.push(super::capacity::nodes_blocked(workload));
    }
    (findings, summary)
}

/// How the pods' CPU compares, period by period, summarised over the breach.
struct PeerComparison {
    /// Hottest pod over the median of the others.
    hot_over_peers: f64,
    /// Coefficient of variation of the others.
    peers_spread: f64,
    /// Coefficient of variation of all pods.
    spread: f64,
}

/// The hottest pod of each period against the median of the *others*, and
/// how tightly the others agree: one hot pod among equal peers stands out
/// however many peers there are.
fn compare_peers(by_period: &[Vec<f64>]) -> Option<PeerComparison> {
    let mut ratios = Vec::new();
    let mut peer_spreads = Vec::new();
    let mut spreads = Vec::new();
    for values in by_period.iter().filter(|v| v.len() >= 2) {
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let Some((hottest, others)) = sorted.split_last() else {
            continue;
        };
        let mut peers = others.to_vec();
        let peer_median = median(&mut peers).unwrap_or(0.0);
        ratios.push(if peer_median > 0.0 {
            hottest / peer_median
        } else if *hottest > 0.0 {
            f64::INFINITY
        } else {
            1.0
        });
        peer_spreads.push(variation(others));
        spreads.push(variation(values));
    }
    Some(PeerComparison {
        hot_over_peers: median(&mut ratios)?,
        peers_spread: median(&mut peer_spreads)?,
        spread: median(&mut spreads)?,
    })
}

/// Coefficient of variation (0 for fewer than two values or a zero mean).
fn variation(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    if mean <= 0.0 {
        return 0.0;
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64;
    variance.sqrt() / mean
}

/// Whether a pod at `cores` does real work: a quarter of its request, or a
/// tenth of a core when it sets none.
fn busy(cores: f64, request: Option<f64>) -> bool {
    match request {
        Some(r) if r > 0.0 => cores >= BUSY_SHARE_OF_REQUEST * r,
        _ => cores >= BUSY_CORES_WITHOUT_REQUEST,
    }
}

/// "restarted 2 times, last OOMKilled 25 min ago; running 24 min" for a pod, or nothing.
fn lifecycle_note(pod: &PodInfo, now: DateTime<Utc>) -> Option<String> {
    let mut parts = Vec::new();
    if pod.restarts > 0 {
        let last = pod.lifecycle.last_termination.as_ref().map(|t| {
            format!(
                ", last {}{}",
                t.reason,
                t.finished_at
                    .map(|at| format!(" {} ago", human_duration(now - at)))
                    .unwrap_or_default()
            )
        });
        parts.push(format!(
            "restarted {}{}",
            crate::classify::plural(pod.restarts, "time"),
            last.unwrap_or_default()
        ));
    }
    if let Some(waiting) = &pod.lifecycle.waiting_reason {
        parts.push(format!("waiting: {waiting}"));
    }
    if let Some(since) = pod.lifecycle.running_since.or(pod.created) {
        parts.push(format!("running for {}", human_duration(now - since)));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn imbalance(
    workload: &Workload,
    series: Option<&PodSeries>,
    used: Option<&Usage>,
    now: DateTime<Utc>,
) -> Finding {
    let mut evidence = Vec::new();
    let mut facts = Facts::None;
    let (verdict, summary, cause) = match (
        series,
        used,
        used.and_then(|u| compare_peers(&u.by_period)),
    ) {
        (Some(_), Some(u), Some(peers)) if u.by_pod.len() >= 2 => {
            decide_imbalance(workload, u, peers, now, &mut evidence, &mut facts)
        }
        (Some(_), Some(_), _) => (
            Verdict::Inconclusive,
            "Fewer than two pods with CPU series: nothing to balance.".to_owned(),
            None,
        ),
        _ => {
            if let Some(snapshot) = &workload.snapshot {
                for usage in snapshot {
                    evidence.push(Evidence::number(
                        &format!("{} CPU (snapshot)", usage.pod),
                        round(usage.cpu_cores, 3),
                        "cores",
                    ));
                }
            }
            (
                Verdict::Inconclusive,
                "No per-pod time series: a single metrics.k8s.io snapshot cannot decide imbalance (it may catch one pod mid-request and the others between bursts).".to_owned(),
                None,
            )
        }
    };
    Finding {
        evidence,
        series: series
            .map(|s| {
                s.cpu
                    .iter()
                    .map(|(pod, points)| Series {
                        label: format!("{pod} CPU"),
                        unit: "cores".to_owned(),
                        ..super::traffic::to_series(
                            &crate::evidence::model::MetricSeries {
                                id: pod.clone(),
                                points: points.clone(),
                            },
                            s.step_seconds,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        facts,
        ..Finding::decided(
            FindingId::PodImbalance,
            "Load is imbalanced across pods (one or a few pods hot, the others not)",
            verdict,
            summary,
            cause,
        )
    }
}

/// Each pod's CPU plateau (p90 while breaching), busiest first, written into
/// the evidence with the running pods that have no series.
fn plateaus_with_evidence<'a>(
    workload: &Workload,
    u: &'a Usage,
    evidence: &mut Vec<Evidence>,
) -> Vec<(&'a str, f64)> {
    let mut plateaus: Vec<(&str, f64)> = u
        .by_pod
        .iter()
        .filter_map(|(pod, v)| Some((pod.as_str(), percentile(v, 90.0)?)))
        .collect();
    plateaus.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (pod, p90) in &plateaus {
        evidence.push(Evidence::number(
            &format!("{pod} CPU (p90 while breaching)"),
            round(*p90, 3),
            "cores",
        ));
    }
    let missing: Vec<&str> = workload
        .pods
        .iter()
        .filter(|p| p.phase == "Running" && !u.by_pod.iter().any(|(name, _)| name == &p.name))
        .map(|p| p.name.as_str())
        .collect();
    if !missing.is_empty() {
        evidence.push(Evidence::text(
            "pods without CPU series",
            missing.join(", "),
        ));
    }
    plateaus
}

/// The hot pods: at [`HOT_OVER_PEERS`] times the median of the pods below the
/// hottest, at most half of them; and that median (the peers' level).
fn hot_pods(plateaus: &[(&str, f64)]) -> (f64, Vec<PodCpu>) {
    let peer_level = {
        let mut rest: Vec<f64> = plateaus.iter().skip(1).map(|(_, v)| *v).collect();
        median(&mut rest).unwrap_or(0.0)
    };
    let hot = plateaus
        .iter()
        .filter(|(_, v)| *v >= HOT_OVER_PEERS * peer_level && *v > 0.0)
        .take((plateaus.len() / 2).max(1))
        .map(|(pod, cores)| PodCpu {
            pod: (*pod).to_owned(),
            cores: round(*cores, 3),
        })
        .collect();
    (peer_level, hot)
}

/// The imbalance verdict once the pods' CPU was compared: the evidence, the
/// hot pods named with what happened to them, and the typed facts.
fn decide_imbalance(
    workload: &Workload,
    u: &Usage,
    peers: PeerComparison,
    now: DateTime<Utc>,
    evidence: &mut Vec<Evidence>,
    facts: &mut Facts,
) -> Decision {
    let PeerComparison {
        hot_over_peers: ratio,
        peers_spread,
        spread,
    } = peers;
    evidence.push(Evidence::number(
        "hottest pod / median of the other pods (median while breaching)",
        round(ratio, 2),
        "x",
    ));
    evidence.push(Evidence::number(
        "spread of the other pods (coefficient of variation, median while breaching)",
        round(peers_spread, 3),
        "",
    ));
    evidence.push(Evidence::number(
        "spread of all pods (coefficient of variation, median while breaching)",
        round(spread, 3),
        "",
    ));
    let plateaus = plateaus_with_evidence(workload, u, evidence);
    let info = |name: &str| workload.pods.iter().find(|p| p.name == name);
    let hottest = plateaus.first().copied();
    let hottest_busy =
        hottest.is_some_and(|(pod, cores)| busy(cores, info(pod).and_then(PodInfo::cpu_request)));
    let stands_out = (ratio >= HOT_OVER_PEERS && peers_spread <= PEERS_AGREE)
        || ratio >= HOT_OVER_SCATTERED_PEERS;
    let (peer_level, hot) = hot_pods(&plateaus);
    let supported = stands_out && hottest_busy && !hot.is_empty();
    *facts = Facts::Imbalance(ImbalanceFacts {
        busiest: hottest.map(|(pod, cores)| PodCpu {
            pod: pod.to_owned(),
            cores: round(cores, 3),
        }),
        hot: if supported { hot.clone() } else { Vec::new() },
        hot_over_peers: ratio,
        peers_spread,
    });
    let peers = plateaus.len() - hot.len().max(1);
    if supported {
        let names: Vec<String> = hot
            .iter()
            .map(|h| {
                let note = info(&h.pod)
                    .and_then(|p| lifecycle_note(p, now))
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                format!("{} at {:.2} cores{note}", h.pod, h.cores)
            })
            .collect();
        let agree = if peers_spread <= PEERS_AGREE {
            format!(
                "while its {} agree within {:.0} % (around {peer_level:.2} cores)",
                crate::classify::plural(peers as u32, "peer"),
                peers_spread * 100.0
            )
        } else {
            format!(
                "above peers that scatter (spread {peers_spread:.2}, median {peer_level:.2} cores)"
            )
        };
        let (subject, verb) = if hot.len() == 1 {
            ("One pod runs hot", "is")
        } else {
            ("A few pods run hot", "are")
        };
        (
            Verdict::Supported,
            format!(
                "{subject}: {} {verb} {ratio:.1}x the median of the others {agree}.",
                names.join("; ")
            ),
            Some(match hot.as_slice() {
                [one] => format!(
                    "one pod hot ({}, {:.2} cores, {ratio:.1}x its peers)",
                    one.pod, one.cores
                ),
                many => format!(
                    "{} pods hot ({}), {ratio:.1}x their peers",
                    many.len(),
                    many.iter()
                        .map(|h| h.pod.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        )
    } else if !hottest_busy {
        (
            Verdict::Refuted,
            format!(
                "No pod is busy while breaching (the busiest at {:.2} cores): CPU imbalance cannot explain the latency.",
                hottest.map_or(0.0, |h| h.1)
            ),
            Some(format!(
                "hot pod: none busy (the busiest at {:.2} cores)",
                hottest.map_or(0.0, |h| h.1)
            )),
        )
    } else if spread <= TOGETHER_CV {
        (
            Verdict::Refuted,
            format!(
                "The {} pods move together while breaching (spread {spread:.2}, hottest {ratio:.2}x the others): the load is shared evenly, not imbalanced.",
                u.by_pod.len()
            ),
            Some(format!(
                "hot pod: the {} pods within {:.0} % of each other",
                u.by_pod.len(),
                spread * 100.0
            )),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!(
                "Uneven, but no pod stands out from peers that agree (hottest {ratio:.2}x the others, whose spread is {peers_spread:.2})."
            ),
            None,
        )
    }
}

/// The restarts verdict from what each pod went through: `turnover` (failed
/// or new around the breach), restarts older than the window, and restarts
/// whose time the status does not give, out of `pods` pods.
fn restart_verdict(
    pods: usize,
    turnover: &[PodTurnover],
    (old_restarts, undated_restarts): (u32, u32),
    origins: &str,
) -> Decision {
    let failed: Vec<&PodTurnover> = turnover.iter().filter(|t| t.reason != "new pod").collect();
    let new: Vec<&PodTurnover> = turnover.iter().filter(|t| t.reason == "new pod").collect();
    let describe = |list: &[&PodTurnover]| {
        list.iter()
            .map(|t| {
                if t.reason == "new pod" {
                    t.pod.clone()
                } else {
                    format!("{} {}", t.pod, t.reason)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if pods == 0 {
        (
            Verdict::Inconclusive,
            "No pods to inspect.".to_owned(),
            None,
        )
    } else if !failed.is_empty() {
        (
            Verdict::Supported,
            format!(
                "{} restarted or failing around the breach ({}): a restarted pod starts cold (empty caches, JIT, connection pools) and serves slowly at first.",
                crate::classify::plural(failed.len() as u32, "pod"),
                describe(&failed)
            ),
            Some(format!("{} (restarted, cold)", describe(&failed))),
        )
    } else if !new.is_empty() && new.len() == pods {
        (
            Verdict::Refuted,
            format!(
                "Every one of the {} pods started inside the breach window, together (a rollout or a restart of the whole Deployment): no pod restarted on its own; the deploy finding weighs the rollout.",
                pods
            ),
            Some("restarts: none (the whole fleet started together)".to_owned()),
        )
    } else if !new.is_empty() {
        // A new pod is turnover, not a restart: a scale-out, a replacement
        // or a rollout made it, and the change findings weigh those.
        (
            Verdict::Refuted,
            format!(
                "No container restarted or crashed; {} new in the window ({}): pods a controller added, not restarts.",
                crate::classify::plural(new.len() as u32, "pod"),
                describe(&new)
            ),
            Some(format!(
                "restarts: none ({} new, added by {})",
                new.len(),
                origins
            )),
        )
    } else if undated_restarts > 0 {
        (
            Verdict::Inconclusive,
            format!(
                "{} restarted, but the pods' status does not say when: the restarts may or may not fall in the breach window.",
                crate::classify::plural(undated_restarts, "pod")
            ),
            None,
        )
    } else if old_restarts > 0 {
        (
            Verdict::Refuted,
            format!(
                "{} restarted, but before the breach window: not why the alarm fired now.",
                crate::classify::plural(old_restarts, "pod")
            ),
            Some("restarts: none in the breach window".to_owned()),
        )
    } else {
        (
            Verdict::Refuted,
            format!(
                "None of the {} pods restarted or crash-looped around the breach, and none was new when it began.",
                pods
            ),
            Some("restarts: none".to_owned()),
        )
    }
}

/// Pods restarted, crash-looping, or started inside the breach window:
/// a cold or failing pod serves slowly, and an OOMKill says why.
fn restarts(
    workload: &Workload,
    window_start: Option<DateTime<Utc>>,
    breach_start: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Finding {
    let mut evidence = Vec::new();
    let mut turnover = Vec::new();
    let mut old_restarts = 0;
    let mut undated_restarts = 0;
    let inside = |t: Option<DateTime<Utc>>| match (t, window_start) {
        (Some(t), Some(start)) => t >= start,
        _ => false,
    };
    for pod in &workload.pods {
        let life = &pod.lifecycle;
        if let Some(note) = lifecycle_note(pod, now)
            && (pod.restarts > 0 || life.waiting_reason.is_some())
        {
            evidence.push(Evidence::text(&pod.name, note));
        }
        for warning in life.warnings.iter().take(3) {
            evidence.push(Evidence::text(
                &format!("{} event {}", pod.name, warning.reason),
                format!("{} (x{})", warning.message, warning.count),
            ));
        }
        let terminated = life.last_termination.as_ref();
        let reason = if life.waiting_reason.as_deref() == Some("CrashLoopBackOff") {
            Some("CrashLoopBackOff".to_owned())
        } else if let Some(t) = terminated.filter(|t| inside(t.finished_at)) {
            Some(t.reason.clone())
        } else if inside(pod.created) && pod.restarts == 0 {
            // A pod started after the breach began is a reaction to it (an HPA
            // scale-out, a replacement), not why it began.
            match (pod.created, breach_start) {
                (Some(created), Some(began)) if created > began => {
                    evidence.push(Evidence::text(
                        &pod.name,
                        format!(
                            "started {} after the breach began: a reaction (scale-out or replacement), not its cause",
                            human_duration(created - began)
                        ),
                    ));
                    None
                }
                _ => Some("new pod".to_owned()),
            }
        } else {
            None
        };
        match reason {
            Some(reason) => turnover.push(PodTurnover {
                pod: pod.name.clone(),
                restarts: pod.restarts,
                container: terminated.map(|t| t.container.clone()),
                reason,
            }),
            None if pod.restarts > 0 && terminated.is_some_and(|t| t.finished_at.is_some()) => {
                old_restarts += 1;
            }
            None if pod.restarts > 0 => undated_restarts += 1,
            None => {}
        }
    }
    if let Some(start) = window_start {
        evidence.push(Evidence::text(
            "window considered",
            format!("since {}", start.format("%Y-%m-%d %H:%M UTC")),
        ));
    }
    let origins = new_pod_origins(workload, &turnover);
    for (pod, origin) in &origins {
        evidence.push(Evidence::text(pod, format!("new pod: {origin}")));
    }
    let mut named: Vec<&str> = origins.iter().map(|(_, o)| o.as_str()).collect();
    named.sort_unstable();
    named.dedup();
    let (verdict, summary, cause) = restart_verdict(
        workload.pods.len(),
        &turnover,
        (old_restarts, undated_restarts),
        &named.join(" and "),
    );
    Finding {
        evidence,
        facts: Facts::Restarts(RestartFacts { pods: turnover }),
        ..Finding::decided(
            FindingId::PodRestarts,
            "Pods restarted, crashed or were replaced around the breach (OOMKilled, CrashLoopBackOff, new pods)",
            verdict,
            summary,
            cause,
        )
    }
}

/// What made each new pod: the rollout of its revision, the HPA scaling
/// out just before it, or else a replacement or a scale-up.
fn new_pod_origins(workload: &Workload, turnover: &[PodTurnover]) -> Vec<(String, String)> {
    let newest = workload
        .deployment
        .as_ref()
        .and_then(|d| d.revisions.first());
    turnover
        .iter()
        .filter(|t| t.reason == "new pod")
        .filter_map(|t| {
            let pod = workload.pods.iter().find(|p| p.name == t.pod)?;
            let created = pod.created?;
            let rolled = newest.is_some_and(|r| {
                pod.owner_replica_set.as_deref() == Some(r.replica_set.as_str())
                    && r.created
                        .is_some_and(|at| at <= created && created - at <= RESTART_LEAD)
            });
            let scaled = workload.activity.scaling.iter().any(|e| {
                !e.message.contains("below target")
                    && e.first_seen.or(e.last_seen).is_some_and(|at| {
                        at <= created + Duration::minutes(1)
                            && created - at <= Duration::minutes(10)
                    })
            });
            let origin = if rolled {
                "the rollout"
            } else if scaled {
                "the HPA scaling out"
            } else {
                "a replacement or a scale-up"
            };
            Some((t.pod.clone(), origin.to_owned()))
        })
        .collect()
}

fn ceiling(
    running: &[&crate::evidence::workload::PodInfo],
    plateau: &dyn Fn(&str) -> Option<f64>,
    have_series: bool,
) -> Finding {
    let mut evidence = Vec::new();
    let mut facts = Facts::None;
    let busy: Vec<(&str, f64, Option<f64>)> = running
        .iter()
        .filter_map(|p| Some((p.name.as_str(), plateau(&p.name)?, p.cpu_limit())))
        .filter(|(_, v, _)| *v >= 0.5)
        .collect();
    for (pod, value, limit) in &busy {
        evidence.push(Evidence::text(
            &format!("{pod} plateau"),
            format!(
                "{value:.2} cores of {}",
                limit.map_or("no limit".to_owned(), |l| format!("a {l} core limit"))
            ),
        ));
    }
    let near = |v: f64| {
        let whole = v.round();
        whole >= 1.0 && (v - whole).abs() <= NEAR_INTEGER
    };
    let (verdict, summary, cause) = if !have_series {
        (
            Verdict::Inconclusive,
            "No per-pod time series: a plateau cannot be seen in a snapshot.".to_owned(),
            None,
        )
    } else if busy.is_empty() {
        (
            Verdict::Refuted,
            "No pod was busy (all under 0.5 cores) while the alarm breached.".to_owned(),
            Some("worker ceiling: no pod busy".to_owned()),
        )
    } else if running.len() > 1 && busy.len() * 2 <= running.len() {
        (
            Verdict::Refuted,
            format!(
                "Only {} of {} pods were busy while the alarm breached: a per-process ceiling caps every pod alike, so a minority of busy pods is imbalance, not a fleet-wide ceiling.",
                busy.len(),
                running.len()
            ),
            Some(format!(
                "worker ceiling: only {} of {} pods busy",
                busy.len(),
                running.len()
            )),
        )
    } else if busy
        .iter()
        .any(|(_, v, l)| l.is_some_and(|l| *v >= AT_LIMIT * l))
    {
        (
            Verdict::Refuted,
            "A pod reaches its CPU limit: the cap is the limit, not the process.".to_owned(),
            Some("worker ceiling: the pods reach their CPU limit".to_owned()),
        )
    } else {
        let values: Vec<f64> = busy.iter().map(|(_, v, _)| *v).collect();
        let (lo, hi) = (
            values.iter().copied().fold(f64::MAX, f64::min),
            values.iter().copied().fold(f64::MIN, f64::max),
        );
        let below_limit = busy
            .iter()
            .all(|(_, v, l)| l.is_none_or(|l| *v <= BELOW_LIMIT * l));
        if values.iter().all(|v| near(*v)) && below_limit && hi <= lo * 1.25 {
            let workers: f64 = values.iter().map(|v| v.round()).sum();
            let per_pod = values.iter().map(|v| v.round()).fold(0.0, f64::max);
            evidence.push(Evidence::number(
                "effective fleet concurrency for CPU-bound requests",
                workers,
                "workers",
            ));
            let limit = busy.iter().find_map(|(_, _, l)| *l);
            facts = Facts::Ceiling(CeilingFacts {
                plateau_cores: round(hi, 3),
                workers_per_pod: per_pod as u32,
                busy_pods: busy.len(),
                limit_cores: limit,
            });
            (
                Verdict::Supported,
                format!(
                    "Every busy pod plateaus at {}{}, near {}: the signature of {} per pod. CPU-bound requests queue behind each other; the fleet runs about {workers:.0} at once.",
                    if (hi - lo).abs() < 0.005 {
                        format!("{hi:.2} cores")
                    } else {
                        format!("{lo:.2}-{hi:.2} cores")
                    },
                    limit
                        .map(|l| format!(", well below the {l}-core limit"))
                        .unwrap_or_default(),
                    crate::classify::plural(per_pod as u32, "whole core"),
                    crate::classify::plural(per_pod as u32, "single-threaded worker"),
                ),
                Some(format!(
                    "{} pods each capped at ~{hi:.1} cores by a per-process ceiling (about {} each)",
                    busy.len(),
                    crate::classify::plural(per_pod as u32, "worker")
                )),
            )
        } else {
            (
                Verdict::Refuted,
                format!(
                    "The busy pods' plateaus ({lo:.2}-{hi:.2} cores) are not a common whole-core ceiling below the limit."
                ),
                Some(format!(
                    "worker ceiling: plateaus at {lo:.2}-{hi:.2} cores, not whole cores"
                )),
            )
        }
    };
    Finding {
        evidence,
        facts,
        ..Finding::decided(
            FindingId::WorkerCeiling,
            "A per-process (worker or thread) ceiling caps each pod below its CPU limit",
            verdict,
            summary,
            cause,
        )
    }
}

fn throttling(
    running: &[&crate::evidence::workload::PodInfo],
    series: Option<&PodSeries>,
    periods: &[DateTime<Utc>],
    plateau: &dyn Fn(&str) -> Option<f64>,
) -> Finding {
    let mut evidence = Vec::new();
    let tolerance = Duration::seconds(i64::from(series.map_or(60, |s| s.step_seconds.max(60))));
    let ratios: Vec<(String, f64)> = series
        .map(|s| {
            s.throttled
                .iter()
                .filter_map(|(pod, points)| {
                    let mut values: Vec<f64> = periods
                        .iter()
                        .filter_map(|t| nearest(points, *t, tolerance))
                        .collect();
                    Some((pod.clone(), median(&mut values)?))
                })
                .collect()
        })
        .unwrap_or_default();
    for (pod, ratio) in &ratios {
        evidence.push(Evidence::number(
            &format!("{pod} throttled periods"),
            round(ratio * 100.0, 1),
            "%",
        ));
    }
    let at_limit: Vec<(&str, f64, f64)> = running
        .iter()
        .filter_map(|p| Some((p.name.as_str(), plateau(&p.name)?, p.cpu_limit()?)))
        .filter(|(_, v, l)| *v >= AT_LIMIT * l)
        .collect();
    for (pod, v, l) in &at_limit {
        evidence.push(Evidence::text(
            &format!("{pod} at its limit"),
            format!("{v:.2} of {l} cores"),
        ));
    }
    let worst = ratios.iter().map(|(_, r)| *r).fold(0.0, f64::max);
    let (verdict, summary, cause) = if worst >= 0.1 || !at_limit.is_empty() {
        (
            Verdict::Supported,
            format!(
                "Throttled in up to {:.0} % of CFS periods{}.",
                worst * 100.0,
                if at_limit.is_empty() {
                    String::new()
                } else {
                    format!(", {} pod(s) at the CPU limit", at_limit.len())
                }
            ),
            Some(format!("CPU throttled ({:.0} % of periods)", worst * 100.0)),
        )
    } else if series.is_some() && !ratios.is_empty() {
        (
            Verdict::Refuted,
            format!(
                "At most {:.1} % of CFS periods throttled, no pod at its limit.",
                worst * 100.0
            ),
            Some(format!(
                "throttling: at most {:.1} % of CFS periods",
                worst * 100.0
            )),
        )
    } else {
        (
            Verdict::Inconclusive,
            "No throttling series.".to_owned(),
            None,
        )
    };
    Finding {
        evidence,
        facts: Facts::Throttling(ThrottlingFacts {
            worst_throttled_share: worst,
            limit_cores: running.iter().find_map(|p| p.cpu_limit()),
            request_cores: running.iter().find_map(|p| p.cpu_request()),
            peak_cores: running
                .iter()
                .filter_map(|p| plateau(&p.name))
                .reduce(f64::max)
                .map(|v| round(v, 3)),
            pods_at_limit: at_limit
                .iter()
                .map(|(pod, _, _)| (*pod).to_owned())
                .collect(),
        }),
        ..Finding::decided(
            FindingId::CpuThrottling,
            "CPU throttling at the limit slows the pods",
            verdict,
            summary,
            cause,
        )
    }
}

fn hpa(
    workload: &Workload,
    used: Option<&Usage>,
    running: &[&crate::evidence::workload::PodInfo],
) -> Finding {
    let mut facts = HpaFacts {
        bounds: workload.hpa.as_ref().map(|h| HpaBounds {
            name: h.name.clone(),
            min_replicas: h.min_replicas.unwrap_or(1).max(0) as u32,
            max_replicas: h.max_replicas.max(0) as u32,
            current_replicas: h.current_replicas.map(|c| c.max(0) as u32),
        }),
        target_utilisation: workload
            .hpa
            .as_ref()
            .and_then(|h| h.target_cpu_utilization)
            .map(|t| t.max(0) as u32),
        peak_utilisation: None,
        request_cores: running
            .iter()
            .filter_map(|p| p.cpu_request())
            .reduce(f64::max),
        blocked: None,
    };
    let mut evidence = workload.hpa.as_ref().map(hpa_evidence).unwrap_or_default();
    let (verdict, summary, cause) = hpa_verdict(workload, used, running, &mut facts, &mut evidence);
    Finding {
        evidence,
        facts: Facts::Hpa(facts),
        ..Finding::decided(
            FindingId::HpaCannotReact,
            "The HPA cannot scale out of this",
            verdict,
            summary,
            cause,
        )
    }
}

/// A controller's message, cut to `max` characters on one line (the
/// renderings escape it further).
pub(crate) fn clipped(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

/// The condition by which the HPA says it cannot act: `ScalingActive=False`
/// (it cannot read its metrics, or its target has no replicas) or
/// `AbleToScale=False` (it cannot read or write the scale).
fn hpa_blocked(hpa: &crate::evidence::workload::HpaInfo) -> Option<&Condition> {
    hpa.conditions
        .iter()
        .find(|c| matches!(c.kind.as_str(), "ScalingActive" | "AbleToScale") && c.status == "False")
}

/// The HPA's settings and conditions, for people.
fn hpa_evidence(hpa: &crate::evidence::workload::HpaInfo) -> Vec<Evidence> {
    let mut evidence = vec![
        Evidence::text("HPA", format!("{} ({})", hpa.name, hpa.api_version)),
        Evidence::number("min replicas", f64::from(hpa.min_replicas.unwrap_or(1)), ""),
        Evidence::number("max replicas", f64::from(hpa.max_replicas), ""),
    ];
    if let Some(current) = hpa.current_replicas {
        evidence.push(Evidence::number("current replicas", f64::from(current), ""));
    }
    if hpa.created_as_v1 {
        evidence.push(Evidence::text(
            "API version",
            "applied as autoscaling/v1: scales on CPU utilisation only",
        ));
    }
    for c in hpa.conditions.iter().filter(|c| {
        matches!(
            c.kind.as_str(),
            "ScalingLimited" | "AbleToScale" | "ScalingActive"
        )
    }) {
        evidence.push(Evidence::text(
            &c.kind,
            format!("{} {}", c.status, c.reason.as_deref().unwrap_or("")),
        ));
    }
    if let Some(target) = hpa.target_cpu_utilization {
        evidence.push(Evidence::number(
            "target CPU utilisation",
            f64::from(target),
            "% of request",
        ));
    }
    evidence
}

/// Utilisation as the HPA computes it (mean over pods of usage / request), at its peak.
fn peak_utilisation(used: Option<&Usage>, requests: &[(&str, f64)]) -> Option<f64> {
    let per_pod: Vec<(&str, &Vec<f64>)> =
        used?.by_pod.iter().map(|(p, v)| (p.as_str(), v)).collect();
    let periods = per_pod.iter().map(|(_, v)| v.len()).min()?;
    (0..periods)
        .filter_map(|i| {
            let shares: Vec<f64> = per_pod
                .iter()
                .filter_map(|(pod, v)| Some(v.get(i)? / requests.iter().find(|(p, _)| p == pod)?.1))
                .collect();
            (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64 * 100.0)
        })
        .reduce(f64::max)
}

type Decision = (Verdict, String, Option<String>);

/// A controller that says why it cannot act is believed before any guess
/// from the numbers: an HPA without metrics does not scale whatever its target.
fn hpa_says_it_cannot_act(
    hpa: &crate::evidence::workload::HpaInfo,
    running: usize,
    facts: &mut HpaFacts,
) -> Option<Decision> {
    let condition = hpa_blocked(hpa)?;
    facts.blocked = Some(condition.clone());
    let message = condition
        .message
        .as_deref()
        .map(|m| format!(": {}", clipped(m, 160)))
        .unwrap_or_default();
    Some((
        Verdict::Supported,
        format!(
            "The HPA reports {}{message}; it does not scale while that holds ({} replicas now, up to {}).",
            condition.describe(),
            hpa.current_replicas.unwrap_or(running as i32),
            hpa.max_replicas
        ),
        Some(format!("HPA cannot act: {}", condition.describe())),
    ))
}

fn hpa_verdict(
    workload: &Workload,
    used: Option<&Usage>,
    running: &[&crate::evidence::workload::PodInfo],
    facts: &mut HpaFacts,
    evidence: &mut Vec<Evidence>,
) -> Decision {
    let Some(deployment) = &workload.deployment else {
        return (
            Verdict::Inconclusive,
            "No Deployment found for the pods: no HPA to check.".to_owned(),
            None,
        );
    };
    let Some(hpa) = &workload.hpa else {
        return (
            Verdict::Supported,
            format!(
                "No HPA scales deployment {}: it stays at {} replicas whatever the load.",
                deployment.name,
                deployment.replicas.unwrap_or(0)
            ),
            Some("no HPA to add pods".to_owned()),
        );
    };
    if let Some(decision) = hpa_says_it_cannot_act(hpa, running.len(), facts) {
        return decision;
    }
    let requests: Vec<(&str, f64)> = running
        .iter()
        .filter_map(|p| Some((p.name.as_str(), p.cpu_request()?)))
        .collect();
    let measured = match (
        peak_utilisation(used, &requests),
        hpa.current_cpu_utilization,
    ) {
        (Some(p), _) => Some((p, "the per-pod series")),
        (None, Some(c)) => Some((
            f64::from(c),
            "the HPA's own current utilisation (no time series)",
        )),
        (None, None) => None,
    };
    if let Some((peak, _)) = measured {
        facts.peak_utilisation = Some(round(peak, 1));
        evidence.push(Evidence::number(
            "peak utilisation as the HPA computes it",
            round(peak, 1),
            "% of request",
        ));
    }
    // The HPA asked for more pods, but they cannot be placed: it reacted, and
    // its reaction is stuck on the cluster's capacity.
    let pending = workload
        .pods
        .iter()
        .filter(|p| p.phase == "Pending")
        .count();
    if pending > 0
        && hpa
            .desired_replicas
            .is_some_and(|d| d > running.len() as i32)
    {
        return (
            Verdict::Supported,
            format!(
                "It asks for {} replicas but only {} run: {pending} pod(s) it added are pending, so its scale-out does not reach the load.",
                hpa.desired_replicas.unwrap_or_default(),
                running.len()
            ),
            Some(format!(
                "HPA's new pods pending ({pending} of {})",
                hpa.desired_replicas.unwrap_or_default()
            )),
        );
    }
    if hpa.current_replicas.is_some_and(|c| c >= hpa.max_replicas) {
        return (
            Verdict::Supported,
            format!(
                "Already at its maximum of {} replicas{}: it cannot add pods whatever the load.",
                hpa.max_replicas,
                measured
                    .zip(hpa.target_cpu_utilization)
                    .map(|((peak, _), target)| format!(
                        " (utilisation {peak:.0} % against a {target} % target)"
                    ))
                    .unwrap_or_default()
            ),
            Some(format!(
                "HPA already at its maximum ({} replicas)",
                hpa.max_replicas
            )),
        );
    }
    let Some(target) = hpa.target_cpu_utilization else {
        return (
            Verdict::Inconclusive,
            format!(
                "The HPA scales on {} rather than CPU utilisation.",
                hpa.other_metrics.join(", ")
            ),
            None,
        );
    };
    if requests.is_empty() {
        return (
            Verdict::Supported,
            "The pods set no CPU request: utilisation cannot be computed and the HPA cannot act on CPU.".to_owned(),
            Some("HPA blind: no CPU request".to_owned()),
        );
    }
    let Some((peak, from)) = measured else {
        return (
            Verdict::Inconclusive,
            "No CPU usage to compare with the target.".to_owned(),
            None,
        );
    };
    let request = requests.iter().map(|(_, r)| *r).fold(0.0, f64::max);
    if peak < f64::from(target) {
        (
            Verdict::Supported,
            format!(
                "At its peak the HPA sees {peak:.0} % of the {request}-core request (from {from}), under its {target} % target: it never scales out{}.",
                if hpa.created_as_v1 {
                    "; autoscaling/v1 only knows CPU"
                } else {
                    ""
                }
            ),
            Some(format!(
                "HPA peaks at {peak:.0} % of request, under its {target} % target"
            )),
        )
    } else {
        (
            Verdict::Refuted,
            format!(
                "The HPA sees {peak:.0} % against a {target} % target: it can scale out (up to {}).",
                hpa.max_replicas
            ),
            Some(format!(
                "HPA blind: it reaches {peak:.0} % against its {target} % target"
            )),
        )
    }
}

/// `the edit of ConfigMap invoices-config (WEB_CONCURRENCY)`: the newest
/// write, within two hours before `rollout`, to a ConfigMap the pods read.
fn config_map_edit_before(
    workload: &Workload,
    rollout: chrono::DateTime<chrono::Utc>,
) -> Option<String> {
    let read = &workload
        .deployment
        .as_ref()?
        .revisions
        .first()?
        .template
        .as_ref()?
        .config_maps;
    let stamp = workload
        .activity
        .config_maps
        .iter()
        .filter(|c| read.contains(&c.name))
        .filter(|c| {
            c.changed_at
                .is_some_and(|t| t <= rollout && rollout - t <= crate::changes::PLAUSIBLE_WINDOW)
        })
        .max_by_key(|c| c.changed_at)?;
    let keys = stamp
        .edit
        .as_ref()
        .filter(|e| Some(e.at) == stamp.changed_at && !e.fields.is_empty())
        .map(|e| format!(" ({})", e.fields.join(", ")))
        .unwrap_or_default();
    Some(format!("the edit of ConfigMap {}{keys}", stamp.name))
}

fn deploy(workload: &Workload, classification: &Classification) -> Finding {
    let rollout = workload.deployment.as_ref().and_then(|d| d.last_rollout);
    let started = classification.figures.episode_started_at;
    let mut evidence = Vec::new();
    if let Some(r) = rollout {
        evidence.push(Evidence::text(
            "last rollout",
            r.format("%Y-%m-%d %H:%M UTC").to_string(),
        ));
    }
    if let Some(s) = started {
        evidence.push(Evidence::text(
            "first transition of this episode",
            s.format("%Y-%m-%d %H:%M UTC").to_string(),
        ));
    }
    let (verdict, summary) = match (rollout, started) {
        (Some(r), Some(s)) if r > s => (
            Verdict::Refuted,
            format!(
                "The last rollout came {} after the alarm's episode began: a red herring.",
                human_duration(r - s)
            ),
        ),
        (Some(r), Some(s)) if s - r <= DEPLOY_WINDOW => (
            Verdict::Supported,
            format!(
                "The last rollout came {} before the first transition of this episode.",
                human_duration(s - r)
            ),
        ),
        (Some(r), Some(s)) => (
            Verdict::Refuted,
            format!(
                "The last rollout came {} before the episode began: too long before to explain it.",
                human_duration(s - r)
            ),
        ),
        _ => (
            Verdict::Inconclusive,
            "The rollout time or the episode's start is unknown.".to_owned(),
        ),
    };
    // What the rollout changed, when both revisions' templates were read.
    let changed = workload
        .deployment
        .as_ref()
        .and_then(|d| crate::changes::latest_rollout(&d.revisions))
        .map(|(_, differences)| differences);
    let what = changed.as_deref().map(what_the_rollout_changed);
    if let Some(what) = &what {
        evidence.push(Evidence::text(
            "what the last rollout changed",
            what.clone(),
        ));
    }
    let summary = match (&what, verdict) {
        (Some(what), Verdict::Supported) => format!("{summary} It {what}."),
        _ => summary,
    };
    // A restart (the same template) carries no change of its own: what it
    // brought in is a ConfigMap edit the pods read, when one came before it.
    let restart = changed.as_ref().is_some_and(Vec::is_empty);
    let applied = rollout
        .filter(|_| restart)
        .and_then(|r| config_map_edit_before(workload, r));
    if let Some(edit) = &applied {
        evidence.push(Evidence::text("what the restart applied", edit.clone()));
    }
    let summary = match (&applied, verdict) {
        (Some(edit), Verdict::Supported) => {
            format!("{summary} It restarted the pods onto {edit}.")
        }
        _ => summary,
    };
    Finding {
        role: Default::default(),
        id: FindingId::RecentDeploy,
        hypothesis: "A recent deploy caused it".to_owned(),
        cause: (verdict == Verdict::Supported).then(|| match (&changed, &applied) {
            (Some(d), _) if !d.is_empty() => format!(
                "a deploy just before the first transition ({})",
                crate::changes::summary_of(d)
            ),
            (_, Some(edit)) => format!("a restart just before the first transition, onto {edit}"),
            (Some(_), None) => {
                "a restart (the same pod template) just before the first transition".to_owned()
            }
            _ => "a deploy just before the first transition".to_owned(),
        }),
        ruled_out_by: match (verdict, rollout, started) {
            (Verdict::Refuted, Some(r), Some(s)) if r > s => Some(format!(
                "deploy: {} after the episode began",
                human_duration(r - s)
            )),
            (Verdict::Refuted, Some(r), Some(s)) => Some(format!(
                "deploy: {} before the episode began",
                human_duration(s - r)
            )),
            _ => None,
        },
        facts: match &changed {
            Some(d) if verdict == Verdict::Supported => {
                Facts::Rollout(d.iter().map(|d| d.aspect).collect())
            }
            _ => Facts::None,
        },
        verdict,
        summary,
        evidence,
        series: Vec::new(),
    }
}

/// `changed only the cpu limit (2 -> 500m)`, `changed the image (...), ...`.
fn what_the_rollout_changed(
    differences: &[crate::changes::template::TemplateDifference],
) -> String {
    match differences {
        [] => "changed nothing in the pod template (a restart of the same revision)".to_owned(),
        [only] => format!(
            "changed only the {} ({} -> {})",
            only.field, only.before, only.after
        ),
        _ => format!("changed {}", crate::changes::summary_of(differences)),
    }
}

fn readiness(workload: &Workload) -> Finding {
    let without: Vec<String> = workload
        .pods
        .iter()
        .flat_map(|p| {
            p.containers
                .iter()
                .filter(|c| !c.readiness_probe)
                .map(move |c| format!("{}/{}", p.name, c.name))
        })
        .collect();
    let (verdict, summary) = if workload.pods.is_empty() {
        (Verdict::Inconclusive, "No pods to inspect.".to_owned())
    } else if without.is_empty() {
        (
            Verdict::Refuted,
            "Every container has a readiness probe.".to_owned(),
        )
    } else {
        (
            Verdict::Supported,
            format!(
                "{} container(s) behind the load balancer have no readiness probe: a pod receives traffic as soon as it starts. A naive probe on a CPU-bound app would fail under load and pull pods out exactly when they are needed.",
                without.len()
            ),
        )
    };
    Finding {
        ruled_out_by: (verdict == Verdict::Refuted).then(|| "readiness probe: present".to_owned()),
        role: Default::default(),
        id: FindingId::ReadinessProbeMissing,
        hypothesis: "Pods behind the load balancer lack a readiness probe".to_owned(),
        verdict,
        summary,
        cause: None,
        evidence: without
            .iter()
            .take(10)
            .map(|c| Evidence::text("no readiness probe", c.clone()))
            .collect(),
        series: Vec::new(),
        facts: Facts::None,
    }
}

fn pending(workload: &Workload) -> Finding {
    let pending: Vec<&crate::evidence::workload::PodInfo> = workload
        .pods
        .iter()
        .filter(|p| p.phase == "Pending")
        .collect();
    let mut evidence: Vec<Evidence> = pending
        .iter()
        .map(|p| {
            Evidence::text(
                &p.name,
                p.scheduling_messages
                    .last()
                    .cloned()
                    .unwrap_or_else(|| "pending".to_owned()),
            )
        })
        .collect();
    for node in &workload.nodes {
        evidence.push(Evidence::text(
            &node.name,
            format!(
                "{:.2} of {:.2} cores requested",
                node.requested_cpu, node.allocatable_cpu
            ),
        ));
    }
    let (verdict, summary) = if pending.is_empty() {
        (
            Verdict::Refuted,
            format!(
                "No pod of the workload is pending ({} running).",
                workload.pods.len()
            ),
        )
    } else {
        (
            Verdict::Supported,
            format!(
                "{} pod(s) pending: the cluster cannot place them.",
                pending.len()
            ),
        )
    };
    Finding {
        role: Default::default(),
        id: FindingId::PendingPods,
        hypothesis: "Pods cannot be scheduled (capacity)".to_owned(),
        cause: (verdict == Verdict::Supported).then(|| format!("{} pod(s) pending", pending.len())),
        ruled_out_by: (verdict == Verdict::Refuted).then(|| "pending pods: none".to_owned()),
        verdict,
        summary,
        evidence,
        series: Vec::new(),
        facts: Facts::None,
    }
}

#[cfg(test)]
mod tests;
