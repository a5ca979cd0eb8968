//! The common factor: what the pods that went bad share and the good ones do
//! not. A node, a zone or a revision is named only when every bad pod has it
//! and no good pod does; a node is convicted only when it also shows a
//! mechanism (a pressure condition, not Ready, a disruption taint, its CPU
//! taken by a neighbour), and then with the time that trouble began.

use chrono::{DateTime, Utc};

use crate::classify::human_duration;
use crate::diagnosis::{Evidence, Finding, FindingId, Verdict};
use crate::evidence::model::TargetHealth;
use crate::evidence::workload::{NodeState, PodInfo, PodSeries, Workload};

/// A pod waiting for a CPU this share of the time during the breach, and
/// three times its own usual share, is starved.
const STARVED_SHARE: f64 = 0.10;
/// A node whose pods use this share of its allocatable CPU is saturated.
const SATURATED_NODE: f64 = 0.9;

const HYPOTHESIS: &str = "What went bad shares one node or zone the rest does not (the trouble is there, not in the service)";

/// Why a pod counts as bad, for people.
#[derive(Debug, Clone, PartialEq)]
struct Bad<'a> {
    pod: &'a PodInfo,
    why: String,
}

/// Which pods went bad: evicted or failed, not ready, their target unhealthy,
/// or starved of CPU (pressure stall information).
fn bad_pods<'a>(
    workload: &'a Workload,
    series: Option<&PodSeries>,
    breach: &[DateTime<Utc>],
    targets: &[TargetHealth],
) -> (Vec<Bad<'a>>, Vec<&'a PodInfo>) {
    let mut bad = Vec::new();
    let mut good = Vec::new();
    for pod in &workload.pods {
        let node = workload
            .placement
            .iter()
            .find(|n| Some(&n.name) == pod.node.as_ref());
        let unhealthy = targets.iter().any(|t| {
            t.state == "unhealthy"
                && (pod.ip.as_deref() == Some(t.id.as_str())
                    || node.and_then(|n| n.instance_id.as_deref()) == Some(t.id.as_str()))
        });
        let why = if let Some(reason) = &pod.reason {
            Some(format!("{} ({reason})", pod.phase))
        } else if pod.phase == "Failed" {
            Some("failed".to_owned())
        } else if pod.phase == "Running" && !pod.ready {
            Some("not ready".to_owned())
        } else if unhealthy {
            Some("its target unhealthy".to_owned())
        } else {
            series
                .and_then(|s| starved(s, &pod.name, breach))
                .map(|(during, before)| {
                    format!(
                        "waiting for a CPU {:.0} % of the time (was {:.0} %)",
                        during * 100.0,
                        before * 100.0
                    )
                })
        };
        match why {
            Some(why) => bad.push(Bad { pod, why }),
            None if pod.phase == "Running" => good.push(pod),
            None => {}
        }
    }
    (bad, good)
}

/// (during, before) CPU-waiting shares of a starved pod.
fn starved(series: &PodSeries, pod: &str, breach: &[DateTime<Utc>]) -> Option<(f64, f64)> {
    let points = series.cpu_waiting.get(pod)?;
    let start = *breach.first()?;
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let during = mean(
        points
            .iter()
            .filter(|(t, _)| *t >= start)
            .map(|(_, v)| *v)
            .collect(),
    )?;
    let before = mean(
        points
            .iter()
            .filter(|(t, _)| *t < start)
            .map(|(_, v)| *v)
            .collect(),
    )
    .unwrap_or(0.0);
    (during >= STARVED_SHARE && during >= 3.0 * before.max(0.01)).then_some((during, before))
}

/// One attribute of a pod the factor may be.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Attribute {
    Node,
    Revision,
    Zone,
}

fn value_of(attribute: Attribute, pod: &PodInfo, placement: &[NodeState]) -> Option<String> {
    match attribute {
        Attribute::Node => pod.node.clone(),
        Attribute::Revision => pod.owner_replica_set.clone(),
        Attribute::Zone => {
            let node = pod.node.as_ref()?;
            placement.iter().find(|n| &n.name == node)?.zone.clone()
        }
    }
}

/// The narrowest attribute every bad pod shares and no good pod has.
fn shared(
    bad: &[Bad<'_>],
    good: &[&PodInfo],
    placement: &[NodeState],
) -> Option<(Attribute, String)> {
    [Attribute::Node, Attribute::Revision, Attribute::Zone]
        .into_iter()
        .find_map(|attribute| {
            let first = value_of(attribute, bad.first()?.pod, placement)?;
            let all_bad = bad
                .iter()
                .all(|b| value_of(attribute, b.pod, placement).as_ref() == Some(&first));
            let no_good = good
                .iter()
                .all(|g| value_of(attribute, g, placement).as_ref() != Some(&first));
            (all_bad && no_good).then_some((attribute, first))
        })
}

/// What is wrong with the node, and since when, if anything shows.
fn node_trouble(node: &NodeState) -> Option<(String, Option<DateTime<Utc>>)> {
    if let Some(c) = node.conditions.first() {
        let message = c
            .message
            .as_deref()
            .map(|m| format!(": {}", super::workload::clipped(m, 120)))
            .unwrap_or_default();
        return Some((format!("it reports {}{message}", c.describe()), c.since));
    }
    if let Some(taint) = node.taints.iter().find(|t| {
        t.contains("disrupted")
            || t.contains("disruption")
            || t.contains("interruption")
            || t.contains("unschedulable")
            || t.contains("not-ready")
            || t.contains("unreachable")
    }) {
        return Some((format!("it is tainted {taint}"), None));
    }
    let allocatable = node.allocatable_cpu?;
    let used = node.used_cpu?;
    if used < SATURATED_NODE * allocatable {
        return None;
    }
    let greedy = node
        .neighbours
        .iter()
        .filter(|n| n.used_cpu.is_some())
        .max_by(|a, b| {
            a.used_cpu
                .partial_cmp(&b.used_cpu)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    // Saturated by a neighbour taking more than it asked for, not by the
    // workload's own pods (a hot pod is `pods.imbalance`'s).
    let greedy =
        greedy.filter(|n| n.used_cpu.unwrap_or(0.0) > n.cpu_request.unwrap_or(0.0) * 1.5)?;
    let neighbour = Some(greedy)
        .map(|n| {
            format!(
                "; {}/{} uses {:.1} cores{}",
                n.namespace,
                n.name,
                n.used_cpu.unwrap_or(0.0),
                match (n.cpu_request, n.cpu_limit) {
                    (_, None) => " with no CPU limit".to_owned(),
                    (Some(r), Some(_)) => format!(" against a request of {r}"),
                    (None, Some(l)) => format!(" up to its limit of {l}"),
                }
            )
        })
        .unwrap_or_default();
    Some((
        format!("its CPU is saturated: {used:.1} of {allocatable:.1} cores in use{neighbour}"),
        greedy.created,
    ))
}

/// A pod's owner from its name: less the ReplicaSet's hash and the pod's
/// suffix (`web-7d9f5c8b46-x2x9k`), or the suffix alone (a DaemonSet's or a
/// Job's `aws-node-x7k2q`).
fn owner_of(pod: &str) -> &str {
    let generated = |part: &str, lengths: std::ops::RangeInclusive<usize>| {
        lengths.contains(&part.len())
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    };
    let mut name = pod;
    if let Some((rest, suffix)) = name.rsplit_once('-')
        && generated(suffix, 5..=5)
    {
        name = rest;
        if let Some((rest, hash)) = name.rsplit_once('-')
            && generated(hash, 8..=10)
            && hash.chars().any(|c| c.is_ascii_digit())
        {
            name = rest;
        }
    }
    name
}

/// Other workloads with pods on the node, by namespace/owner.
fn sharing(node: &NodeState) -> Vec<String> {
    let mut owners: Vec<String> = node
        .neighbours
        .iter()
        .filter(|n| n.phase == "Running")
        .map(|n| {
            let owner = owner_of(&n.name);
            format!("{}/{owner}", n.namespace)
        })
        .collect();
    owners.sort();
    owners.dedup();
    owners
}

/// The common factor of what went bad, decided.
pub fn common_factor(
    workload: &Workload,
    series: Option<&PodSeries>,
    breach: &[DateTime<Utc>],
    targets: &[TargetHealth],
) -> Finding {
    let (bad, good) = bad_pods(workload, series, breach, targets);
    let mut evidence: Vec<Evidence> = bad
        .iter()
        .map(|b| {
            Evidence::text(
                &b.pod.name,
                format!(
                    "{} (node {})",
                    b.why,
                    b.pod.node.as_deref().unwrap_or("none")
                ),
            )
        })
        .collect();
    evidence.push(Evidence::number("pods fine", good.len() as f64, ""));
    let undecided = |summary: String| {
        Finding::decided(
            FindingId::CommonFactor,
            HYPOTHESIS,
            Verdict::Inconclusive,
            summary,
            None,
        )
    };
    // Nothing to localise is not a place ruled out: it says nothing either way.
    if bad.is_empty() {
        return Finding {
            evidence,
            ..undecided(
                "No pod stands out as bad (none evicted, unready, unhealthy or starved of CPU): nothing to localise.".to_owned(),
            )
        };
    }
    if good.is_empty() {
        return Finding {
            evidence,
            ..Finding::decided(
                FindingId::CommonFactor,
                HYPOTHESIS,
                Verdict::Refuted,
                format!(
                    "All {} pods went bad alike, wherever they run: no node or zone sets them apart.",
                    bad.len()
                ),
                Some("every pod went bad, wherever it runs".to_owned()),
            )
        };
    }
    let Some((attribute, value)) = shared(&bad, &good, &workload.placement) else {
        return Finding {
            evidence,
            ..undecided(format!(
                "The {} bad pods share no node, zone or revision that the {} good ones lack.",
                bad.len(),
                good.len()
            ))
        };
    };
    // "The 2 of 6 pods that went bad all run" / "The one pod of 3 that went bad runs".
    let total = bad.len() + good.len();
    let (counts, all, run, are) = if bad.len() == 1 {
        (format!("one pod of {total}"), "", "runs", "is")
    } else {
        (
            format!("{} of {total} pods", bad.len()),
            " all",
            "run",
            "are all",
        )
    };
    match attribute {
        Attribute::Revision => Finding {
            evidence,
            ..undecided(format!(
                "The {counts} that went bad {are} of ReplicaSet {value} and none of the others: the revision, not the place, sets them apart."
            ))
        },
        Attribute::Zone => Finding {
            evidence,
            ..Finding::decided(
                FindingId::CommonFactor,
                HYPOTHESIS,
                Verdict::Supported,
                format!(
                    "The {counts} that went bad {are} in zone {value}, and every pod elsewhere is fine: something in {value} (its network path, a zonal dependency, its nodes) is at fault, not the service."
                ),
                Some(format!(
                    "zone {value}: every bad pod is there, none elsewhere"
                )),
            )
        },
        Attribute::Node => {
            let node = workload.placement.iter().find(|n| n.name == value);
            let trouble = node.and_then(node_trouble);
            let others = node.map(sharing).unwrap_or_default();
            let also = if others.is_empty() {
                String::new()
            } else {
                format!(" Also on it: {}.", others.join(", "))
            };
            match trouble {
                Some((what, since)) => {
                    let when = match (since, breach.first()) {
                        (Some(s), Some(b)) if s <= *b => {
                            format!(
                                " since {}, {} before the breach",
                                s.format("%H:%M UTC"),
                                human_duration(*b - s)
                            )
                        }
                        (Some(s), _) => format!(" since {}", s.format("%H:%M UTC")),
                        _ => String::new(),
                    };
                    evidence.push(Evidence::text(
                        &format!("node {value}"),
                        format!("{what}{when}"),
                    ));
                    Finding {
                        evidence,
                        facts: crate::diagnosis::Facts::Node {
                            name: value.clone(),
                            sharing: others.clone(),
                        },
                        ..Finding::decided(
                            FindingId::CommonFactor,
                            HYPOTHESIS,
                            Verdict::Supported,
                            format!(
                                "The {counts} that went bad{all} {run} on node {value}, and none of the fine ones do: {what}{when}.{also}"
                            ),
                            Some(format!("node {value}: {what}")),
                        )
                    }
                }
                None => Finding {
                    evidence,
                    ..undecided(format!(
                        "The {counts} that went bad{all} {run} on node {value}, but the node shows no trouble (no pressure, Ready, CPU to spare).{also}"
                    ))
                },
            }
        }
    }
}

/// The other target groups that moved too and whose pods share the node
/// found: then the node, not one service, is where the breach comes from.
pub fn groups_sharing_the_node(
    factor: &Finding,
    groups: &[crate::diagnosis::summary::TargetGroupSummary],
) -> Vec<usize> {
    let crate::diagnosis::Facts::Node { sharing, .. } = &factor.facts else {
        return Vec::new();
    };
    if factor.verdict != Verdict::Supported {
        return Vec::new();
    }
    groups
        .iter()
        .enumerate()
        .filter(|(_, g)| {
            let moved = matches!(
                (g.baseline, g.statistic_while_breaching),
                (Some(usual), Some(during)) if during > usual * MOVED
            );
            let service = g.kubernetes_service.as_ref();
            moved
                && service.is_some_and(|s| {
                    sharing.iter().any(|owner| {
                        owner == &format!("{}/{}", s.namespace, s.name)
                            || owner.starts_with(&format!("{}/{}-", s.namespace, s.name))
                    })
                })
        })
        .map(|(i, _)| i)
        .collect()
}

/// A group moved when its metric during the breach is this many times its usual.
const MOVED: f64 = 1.5;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod owners {
    #[test]
    fn a_pods_owner_is_its_name_less_what_the_controllers_generated() {
        assert_eq!(
            super::owner_of("catalog-api-7d9f5c8b46-x2x9k"),
            "catalog-api"
        );
        assert_eq!(super::owner_of("aws-node-x7k2q"), "aws-node");
        assert_eq!(
            super::owner_of("product-feed-backfill-x7k2q"),
            "product-feed-backfill"
        );
        assert_eq!(super::owner_of("redis-0"), "redis-0");
    }
}
