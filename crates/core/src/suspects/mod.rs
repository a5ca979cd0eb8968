//! Convict by evidence, not by proximity. Every change before the breach is
//! a suspect, and a careful engineer blames one only when three tests agree:
//!
//! - **onset**: the symptom started when the change took effect, within the
//!   lag its kind allows (a rollout as its new pods serve; a ConfigMap edit
//!   when a restart applies it; a lowered limit when demand reaches it; an
//!   AWS call at once). A long stretch at the baseline after it, or a symptom
//!   already there before it, clears it;
//! - **mechanism**: the change can move this metric at all (labels cannot
//!   slow a service; a controller reacting is never a cause);
//! - **locality**: the entities that went bad are the ones it touches (the
//!   group a target-group change is on).
//!
//! Pure: the timeline, the symptom's onset and what the findings established
//! in, verdicts out.

pub mod onset;

use chrono::{DateTime, Duration, Utc};

use crate::alarm::facts::MetricFamily;
use crate::classify::human_duration;
use crate::diagnosis::change::{Aspect, Change, ChangeKind, ChangeOrigin};
use crate::diagnosis::suspect::{Outcome, Suspect, SuspectVerdict, Test};
pub use onset::{Onset, SymptomSeries};

/// A rollout acts from its first new pod until a few minutes after the last.
pub const ROLLOUT_LAG: Duration = Duration::minutes(20);
/// A restart of the same template makes every pod cold for a few minutes.
pub const RESTART_LAG: Duration = Duration::minutes(10);
/// An AWS change applies at once; health checks take a few intervals to act.
pub const AWS_LAG: Duration = Duration::minutes(10);
/// A ConfigMap a process re-reads on its own acts within minutes.
pub const RELOAD_LAG: Duration = Duration::minutes(15);
/// The HPA reconciles every 15 s and pods start within a minute or two: a
/// scaling edit or a scale-in acts at once.
pub const SCALING_LAG: Duration = Duration::minutes(5);
/// A change this long after the onset began is not before it.
const GRACE: Duration = Duration::minutes(2);

/// Which limits the findings show the workload actually ran into: a lowered
/// limit acts when demand reaches it, however long after the edit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitsReached {
    /// Pods at their CPU limit (throttled).
    pub cpu: bool,
    /// Containers OOMKilled.
    pub memory: bool,
    /// The HPA at its maximum while it wanted more.
    pub replicas: bool,
}

/// What the suspects are judged against.
#[derive(Debug, Clone)]
pub struct Scene<'a> {
    pub family: MetricFamily,
    pub onset: Onset,
    /// What the onset was read from, for people: `latency of k8s-shop-catalog-...`.
    pub symptom: String,
    /// The target groups that moved (their names); empty when none did or no breakdown.
    pub culprit_groups: &'a [String],
    /// Every group moved together.
    pub shared: bool,
    /// The workload walked is the culprit's (its cluster changes are on it).
    pub workload: Option<&'a str>,
    pub limits: LimitsReached,
}

/// When a change took effect, and how long after that the symptom may start.
#[derive(Debug, Clone)]
struct Effect {
    at: DateTime<Utc>,
    /// `None`: open-ended (a limit the workload is shown to have reached).
    lag: Option<Duration>,
    /// How it took effect, when not by itself (`applied by revision 12's restart`).
    how: Option<String>,
}

/// Judges every change of the timeline: one that came after the symptom
/// began is acquitted by its onset, and on-call sees why.
pub fn judge(changes: &[Change], scene: &Scene<'_>) -> Vec<(usize, Suspect)> {
    changes
        .iter()
        .enumerate()
        .map(|(i, c)| (i, judge_one(c, changes, scene)))
        .collect()
}

fn judge_one(change: &Change, all: &[Change], scene: &Scene<'_>) -> Suspect {
    let reaction = is_reaction(change);
    let effect = effect_of(change, all, scene);
    let onset = onset_test(&effect, scene);
    let mechanism = mechanism_test(change, all, scene.family);
    let locality = locality_test(change, scene);
    let verdict = Suspect::verdict_of(&onset, &mechanism, &locality);
    let short = format!("{} {}", short_subject(change), change.when());
    let reason = match verdict {
        SuspectVerdict::Acquitted => {
            // A reaction is told as one, whenever it came.
            let order = if reaction {
                [&mechanism, &onset, &locality]
            } else {
                [&onset, &mechanism, &locality]
            };
            let failed = order
                .into_iter()
                .find(|t| t.outcome == Outcome::Fail)
                .map(|t| t.note.clone())
                .unwrap_or_default();
            format!("{short}: {failed}")
        }
        SuspectVerdict::Convicted => format!("{short}: {}", onset.note),
        SuspectVerdict::Undecided => {
            let unknown = [&onset, &mechanism, &locality]
                .into_iter()
                .find(|t| t.outcome == Outcome::Unknown)
                .map(|t| t.note.clone())
                .unwrap_or_default();
            format!("{short}: {unknown}")
        }
    };
    let summary = match &effect.how {
        Some(how) => format!("{} ({how})", summary_with_objects(change)),
        None => summary_with_objects(change),
    };
    Suspect {
        kind: kind_name(change.kind).to_owned(),
        subject: change.subject.clone(),
        summary,
        at: Some(effect.at),
        offset_seconds: change.offset_seconds,
        onset,
        mechanism,
        locality,
        verdict,
        reaction,
        reason,
    }
}

fn kind_name(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Rollout => "rollout",
        ChangeKind::Scaling => "scaling",
        ChangeKind::Capacity => "capacity",
        ChangeKind::ConfigMap => "config_map",
        ChangeKind::LoadBalancer => "load_balancer",
        ChangeKind::Listener => "listener",
        ChangeKind::TargetGroup => "target_group",
        ChangeKind::Targets => "targets",
        ChangeKind::SecurityGroup => "security_group",
        ChangeKind::NodeGroup => "node_group",
    }
}

/// `rollout 38 of shop/catalog`, `configmap shop/catalog-config`, `target group k8s-...`.
fn short_subject(change: &Change) -> String {
    match change.kind {
        ChangeKind::Rollout => {
            // `revision 38`, whatever follows it in the summary.
            let what = change
                .summary
                .split([':', '('])
                .next()
                .unwrap_or("a revision")
                .trim()
                .trim_end_matches(" rolled out");
            let workload = change
                .subject
                .strip_prefix("deployment ")
                .unwrap_or(&change.subject);
            format!("{what} of {workload}")
        }
        _ => change.subject.clone(),
    }
}

/// A node taken away (an interruption, a termination, an eviction, a
/// disruption): an event that happened to the cluster, not a controller
/// answering one.
fn node_lost(change: &Change) -> bool {
    const LOSSES: [&str; 6] = [
        "Interrupt",
        "Terminat",
        "Evict",
        "Disrupt",
        "Consolidat",
        "Drift",
    ];
    change.kind == ChangeKind::Capacity && LOSSES.iter().any(|l| change.summary.contains(l))
}

/// A controller answering what happened (the HPA adding pods, the load
/// balancer controller registering them, a node autoscaler provisioning):
/// never a cause. A scale-in and a lost node are not answers.
pub(crate) fn is_reaction(change: &Change) -> bool {
    change.automatic && !change.aspects.contains(&Aspect::ScaleIn) && !node_lost(change)
}

/// `SpotInterrupted x2: ... on Node/ip-10-1-2-3, NodeClaim/x`: what a capacity change touched.
fn summary_with_objects(change: &Change) -> String {
    if change.kind != ChangeKind::Capacity {
        return change.summary.clone();
    }
    let objects: Vec<&str> = change
        .details
        .iter()
        .filter_map(|d| d.split_once(": ").map(|(object, _)| object))
        .collect();
    if objects.is_empty() {
        change.summary.clone()
    } else {
        format!("{} on {}", change.summary, objects.join(", "))
    }
}

fn only(change: &Change, aspects: &[Aspect]) -> bool {
    !change.aspects.is_empty() && change.aspects.iter().all(|a| aspects.contains(a))
}

/// The first revision rolled out after a ConfigMap edit: the restart that applied it.
fn applying_rollout<'a>(edit: &Change, all: &'a [Change]) -> Option<&'a Change> {
    all.iter()
        .filter(|c| c.kind == ChangeKind::Rollout && c.at >= edit.at)
        .min_by_key(|c| c.at)
}

/// The ConfigMap edit a restart applied, when one came before it (and after the revision before).
fn applied_edit<'a>(restart: &Change, all: &'a [Change]) -> Option<&'a Change> {
    all.iter()
        .filter(|c| c.kind == ChangeKind::ConfigMap && c.at <= restart.at)
        .filter(|edit| applying_rollout(edit, all).is_some_and(|r| r.at == restart.at))
        .max_by_key(|c| c.at)
}

fn effect_of(change: &Change, all: &[Change], scene: &Scene<'_>) -> Effect {
    let limit_reached = |aspect: Aspect| match aspect {
        Aspect::CpuLimit => scene.limits.cpu,
        Aspect::Memory => scene.limits.memory,
        Aspect::Replicas => scene.limits.replicas,
        _ => false,
    };
    let reached: Vec<Aspect> = change
        .lowered
        .iter()
        .copied()
        .filter(|a| limit_reached(*a))
        .collect();
    match change.kind {
        ChangeKind::ConfigMap => match applying_rollout(change, all) {
            Some(rollout) => Effect {
                at: rollout.at,
                lag: Some(ROLLOUT_LAG),
                how: Some(format!(
                    "applied by the restart {} later",
                    human_duration(rollout.at - change.at)
                )),
            },
            None => Effect {
                at: change.at,
                lag: Some(RELOAD_LAG),
                how: None,
            },
        },
        _ if !reached.is_empty() => Effect {
            at: change.at,
            lag: None,
            how: None,
        },
        ChangeKind::Capacity if node_lost(change) => Effect {
            at: change.at,
            lag: Some(RESTART_LAG),
            how: None,
        },
        ChangeKind::Rollout if only(change, &[Aspect::Restart]) => Effect {
            at: change.at,
            lag: Some(RESTART_LAG),
            how: None,
        },
        ChangeKind::Rollout => Effect {
            at: change.at,
            lag: Some(ROLLOUT_LAG),
            how: None,
        },
        ChangeKind::Scaling => Effect {
            at: change.at,
            lag: Some(SCALING_LAG),
            how: None,
        },
        _ if change.source == ChangeOrigin::CloudTrail => Effect {
            at: change.at,
            lag: Some(AWS_LAG),
            how: None,
        },
        _ => Effect {
            at: change.at,
            lag: Some(RELOAD_LAG),
            how: None,
        },
    }
}

/// The symptom in a word or two, as the onset notes say it.
fn noun(family: MetricFamily) -> &'static str {
    match family {
        MetricFamily::Latency => "latency",
        MetricFamily::TargetErrors | MetricFamily::LoadBalancerErrors => "errors",
        MetricFamily::ClientErrors => "client errors",
        MetricFamily::UnhealthyHosts | MetricFamily::HealthyHosts => "target health",
        MetricFamily::Connections => "connections",
        MetricFamily::Traffic => "traffic",
        MetricFamily::Other => "the metric",
    }
}

fn onset_test(effect: &Effect, scene: &Scene<'_>) -> Test {
    let what = noun(scene.family);
    match scene.onset {
        Onset::Unknown => Test::unknown(format!(
            "when {what} began to move is unknown (no series of {})",
            scene.symptom
        )),
        Onset::DidNotMove { .. } => Test::fail(format!(
            "{what} sat at the same level before it: nothing moved"
        )),
        Onset::Moved {
            at: onset,
            from_the_first_period,
            ..
        } => {
            if onset + GRACE < effect.at {
                let already = if from_the_first_period {
                    format!(
                        "{what} was already away from its usual level at the first period read, {} before it",
                        human_duration(effect.at - onset)
                    )
                } else {
                    format!(
                        "{what} began to move {} before it",
                        human_duration(effect.at - onset)
                    )
                };
                return Test::fail(already);
            }
            let after = onset - effect.at;
            match effect.lag {
                Some(lag) if after > lag => Test::fail(format!(
                    "{what} stayed at its usual level for {} after it",
                    human_duration(after)
                )),
                Some(_) => Test::pass(format!(
                    "{what} began to move {} after it took effect",
                    human_duration(after.max(Duration::zero()))
                )),
                None => Test::pass(format!(
                    "{what} began to move {} after it, once demand reached the limit it set",
                    human_duration(after.max(Duration::zero()))
                )),
            }
        }
    }
}

/// Whether a change to `aspect` can move a metric of `family` at all.
fn can_move(aspect: Aspect, family: MetricFamily) -> bool {
    use Aspect as A;
    use MetricFamily as F;
    // What a service does with each request.
    let runtime = matches!(
        aspect,
        A::Code | A::Image | A::Command | A::Environment | A::Config | A::Restart
    );
    match aspect {
        A::Metadata | A::NetworkAllowed | A::ScaleOut => false,
        _ => match family {
            F::Latency | F::Other | F::Traffic | F::Connections => true,
            F::TargetErrors => {
                runtime
                    || matches!(
                        aspect,
                        A::CpuLimit
                            | A::Memory
                            | A::Ports
                            | A::Probes
                            | A::Replicas
                            | A::ScaleIn
                            | A::Nodes
                            | A::Network
                            | A::Routing
                            | A::TargetGroupAttributes
                            | A::LoadBalancerAttributes
                            | A::TargetMembership
                    )
            }
            F::LoadBalancerErrors | F::UnhealthyHosts | F::HealthyHosts => {
                !matches!(aspect, A::CpuRequest | A::Scheduling)
            }
            F::ClientErrors => {
                runtime || matches!(aspect, A::Routing | A::Ports | A::LoadBalancerAttributes)
            }
        },
    }
}

fn aspects_named(change: &Change) -> String {
    let names: Vec<String> = change
        .aspects
        .iter()
        .map(|a| {
            serde_json::to_value(a)
                .ok()
                .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
                .unwrap_or_default()
        })
        .collect();
    names.join(", ")
}

fn mechanism_test(change: &Change, all: &[Change], family: MetricFamily) -> Test {
    let what = noun(family);
    if node_lost(change) {
        return Test::pass(format!(
            "losing a node takes its pods' capacity away at once, and their replacements start cold: it can move {what}"
        ));
    }
    if is_reaction(change) {
        let reaction = match change.kind {
            ChangeKind::Scaling => "the HPA adding pods",
            ChangeKind::Targets => "the controller registering the pods' targets",
            ChangeKind::Capacity => "the node autoscaler acting",
            _ => "a controller acting",
        };
        return Test::fail(format!("a reaction ({reaction}), never a cause"));
    }
    if only(change, &[Aspect::Metadata]) {
        return Test::fail(
            "only labels or annotations changed: they cannot change how the service runs",
        );
    }
    if only(change, &[Aspect::NetworkAllowed]) {
        return Test::fail("it only allowed more traffic: it cannot block a request");
    }
    if change.kind == ChangeKind::Rollout
        && only(change, &[Aspect::Restart, Aspect::Metadata])
        && let Some(edit) = applied_edit(change, all)
    {
        return Test::fail(format!(
            "it only restarted the pods onto the edit of {} (judged on its own)",
            edit.subject
        ));
    }
    let moving: Vec<Aspect> = change
        .aspects
        .iter()
        .copied()
        .filter(|a| can_move(*a, family))
        .collect();
    if moving.is_empty() {
        Test::fail(format!(
            "a change of {} cannot move {what}",
            aspects_named(change)
        ))
    } else if only(change, &[Aspect::Restart, Aspect::Metadata]) {
        Test::pass(format!(
            "a restart starts every pod cold, which can move {what} for minutes"
        ))
    } else {
        let named = Change {
            aspects: moving,
            ..change.clone()
        };
        Test::pass(format!(
            "a change of {} can move {what}",
            aspects_named(&named)
        ))
    }
}

/// `target group k8s-...` -> the group's name.
fn group_of(subject: &str) -> Option<&str> {
    subject.strip_prefix("target group ")
}

fn locality_test(change: &Change, scene: &Scene<'_>) -> Test {
    match change.kind {
        ChangeKind::TargetGroup | ChangeKind::Targets => {
            let Some(group) = group_of(&change.subject) else {
                return Test::unknown("which group it is on is unknown");
            };
            if scene.shared {
                Test::fail(format!("every group moved together, not only {group}"))
            } else if scene.culprit_groups.is_empty() {
                Test::unknown("no group moved on its own to compare it with")
            } else if scene.culprit_groups.iter().any(|c| c == group) {
                Test::pass(format!("it is on {group}, the group that moved"))
            } else {
                Test::fail(format!(
                    "it is on {group}, but {} moved",
                    scene.culprit_groups.join(", ")
                ))
            }
        }
        ChangeKind::Rollout | ChangeKind::ConfigMap if change.elsewhere => match scene.workload {
            Some(workload) => Test::fail(format!(
                "it is on another workload, not on {workload} behind the group that moved"
            )),
            None => Test::unknown("the workload behind the group that moved was not read"),
        },
        ChangeKind::Rollout | ChangeKind::ConfigMap | ChangeKind::Scaling => {
            match (scene.workload, scene.shared) {
                (_, true) => Test::fail("every group moved together, not only this workload's"),
                (Some(workload), false) => {
                    Test::pass(format!("it is on {workload}, behind the group that moved"))
                }
                (None, false) => {
                    Test::unknown("the workload behind the group that moved was not read")
                }
            }
        }
        // The load balancer, its listeners, security groups and node groups
        // sit on the path of every group behind them.
        _ => Test::pass("it is on the path of the requests that went bad"),
    }
}

/// The reasons the people's changes were acquitted, for the first screen's
/// "Ruled out" line (the cluster's reactions stay in the details).
pub fn acquitted_reasons(suspects: &[Suspect]) -> Vec<&str> {
    suspects
        .iter()
        .filter(|s| s.verdict == SuspectVerdict::Acquitted && !s.reaction && s.is_change())
        .map(|s| s.reason.as_str())
        .collect()
}

#[cfg(test)]
mod tests;
