//! What changed before the breach: rollouts (with what each revision
//! changed), the HPA and the node autoscalers acting, ConfigMaps the pods
//! read, and changes made through the AWS API to the load balancer, its
//! listeners, target groups, security groups and the cluster's node groups.
//! One timeline, each change placed against the breach's start, and the one
//! change that most plausibly relates to the causes picked out for the
//! first screen. Pure: built from what the gathering read.

pub mod template;
pub mod trail;

use chrono::{DateTime, Duration, Utc};

pub use crate::diagnosis::change::{Aspect, Change, ChangeKind, ChangeOrigin};

use crate::classify::human_duration;
use crate::diagnosis::suspect::{Suspect, SuspectVerdict};
use crate::evidence::changes::{ClusterEvent, RequestPath, Revision, TrailEvidence};
use crate::evidence::workload::Workload;

/// How far before the breach the timeline looks.
pub const LOOKBACK: Duration = Duration::hours(6);

/// How long before the breach a change can still have set it off (as for a
/// deploy): older changes stay in the timeline but are never singled out.
pub const PLAUSIBLE_WINDOW: Duration = Duration::hours(2);

/// CloudTrail delivers a record 5 to 15 minutes after the call.
pub const TRAIL_DELIVERY_LAG: Duration = Duration::minutes(15);

impl Change {
    /// A change as the cluster records it: who made it is not recorded there.
    fn in_cluster(
        kind: ChangeKind,
        at: DateTime<Utc>,
        subject: String,
        summary: String,
        aspects: Vec<Aspect>,
    ) -> Self {
        Change {
            kind,
            at,
            source: ChangeOrigin::Kubernetes,
            subject,
            summary,
            details: Vec::new(),
            by: None,
            event: None,
            automatic: false,
            aspects,
            offset_seconds: None,
            most_plausible: false,
            elsewhere: false,
            lowered: Vec::new(),
        }
    }

    /// `7 min before`, `2 min after`, `at the breach's start`.
    pub fn when(&self) -> String {
        match self.offset_seconds {
            Some(s) if s < -59 => format!("{} before", human_duration(Duration::seconds(-s))),
            Some(s) if s > 59 => format!("{} after", human_duration(Duration::seconds(s))),
            Some(_) => "at the breach's start".to_owned(),
            None => self.at.format("%H:%M UTC").to_string(),
        }
    }

    /// `7 min before: deployment payments/ledger: revision 18: cpu limit 2 -> 500m`.
    pub fn line(&self) -> String {
        format!("{}: {}: {}", self.when(), self.subject, self.summary)
    }

    /// `7 min before the breach`, `2 min after the breach began`.
    pub fn when_against_the_breach(&self) -> String {
        match self.offset_seconds {
            Some(s) if s < -59 => format!("{} the breach", self.when()),
            Some(s) if s > 59 => format!("{} the breach began", self.when()),
            Some(_) => "as the breach began".to_owned(),
            None => format!("at {}", self.when()),
        }
    }

    /// `7 min before the breach: deployment payments/ledger: ...`.
    fn sentence(&self) -> String {
        format!(
            "{}: {}: {}",
            self.when_against_the_breach(),
            self.subject,
            self.summary
        )
    }
}

/// Everything that changed around the breach, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    pub changes: Vec<Change>,
    /// The start of the breach the offsets count from.
    pub breach_start: Option<DateTime<Utc>>,
    /// The cluster's side was read (the workload's revisions and events).
    pub kubernetes_read: bool,
    /// CloudTrail answered at least the load balancer's lookup.
    pub trail_read: bool,
    pub notes: Vec<String>,
    /// Every change before the breach, judged (`convict`).
    pub suspects: Vec<Suspect>,
}

/// What the timeline is built from.
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    pub workload: Option<&'a Workload>,
    pub trail: Option<&'a TrailEvidence>,
    pub path: &'a RequestPath,
    pub breach_start: Option<DateTime<Utc>>,
    pub now: DateTime<Utc>,
    /// How many pods the workload ran over time (Prometheus), when read:
    /// what tells a scale edit that cut the fleet from one that grew it.
    pub fleet: &'a [(DateTime<Utc>, f64)],
}

impl Timeline {
    /// Every change from `LOOKBACK` before the breach's start until now.
    pub fn build(sources: Sources<'_>) -> Self {
        let mut changes = Vec::new();
        if let Some(workload) = sources.workload {
            changes.extend(rollouts(workload));
            changes.extend(
                workload
                    .activity
                    .scaling
                    .iter()
                    .map(|e| scaling(e, workload.hpa.as_ref().map(|h| h.name.as_str()))),
            );
            changes.extend(capacity(&workload.activity.capacity));
            changes.extend(config_maps(workload));
            changes.extend(elsewhere_in_the_namespace(workload));
            changes.extend(hpa_edit(workload));
            changes.extend(replicas_edit(workload, sources.fleet));
        }
        if let Some(trail) = sources.trail {
            let mut seen = std::collections::BTreeSet::new();
            changes.extend(
                trail
                    .events
                    .iter()
                    .filter(|e| seen.insert(e.id.clone()))
                    .filter_map(|e| trail::interpret(e, sources.path)),
            );
        }
        let anchor = sources.breach_start.unwrap_or(sources.now);
        let from = anchor - LOOKBACK;
        changes.retain(|c| c.at >= from && c.at <= sources.now);
        changes.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.subject.cmp(&b.subject)));
        let mut changes = merge_registrations(changes);
        for change in &mut changes {
            change.offset_seconds = sources
                .breach_start
                .map(|start| (change.at - start).num_seconds());
        }
        let trail_read = sources.trail.is_some_and(|t| !t.read.is_empty());
        let mut notes = Vec::new();
        if let Some(trail) = sources.trail.filter(|_| trail_read) {
            if sources.now - anchor < TRAIL_DELIVERY_LAG {
                notes.push(
                    "CloudTrail delivers records 5 to 15 minutes after the call: an AWS change in the last minutes may not show yet".to_owned(),
                );
            }
            for lookup in &trail.truncated {
                notes.push(format!(
                    "CloudTrail's {} lookup stopped at its page bound: older changes may be missing",
                    lookup.describe()
                ));
            }
        }
        Timeline {
            changes,
            breach_start: sources.breach_start,
            kubernetes_read: sources.workload.is_some(),
            trail_read,
            notes,
            suspects: Vec::new(),
        }
    }

    /// Puts every change before the breach through the suspect tests
    /// (`crate::suspects`) and marks the one the first screen names: a
    /// convicted change, made by someone rather than a controller, then the
    /// latest. Nothing is marked when nothing was convicted.
    pub fn convict(&mut self, scene: &crate::suspects::Scene<'_>) {
        let judged = crate::suspects::judge(&self.changes, scene);
        let named = judged
            .iter()
            .filter(|(_, s)| s.verdict == SuspectVerdict::Convicted)
            .map(|(i, _)| *i)
            // Someone's change, the latest; else what the cluster did first
            // (a node's interruption before the evictions it brought).
            .max_by_key(|i| {
                let change = &self.changes[*i];
                let order = if change.automatic {
                    -change.at.timestamp()
                } else {
                    change.at.timestamp()
                };
                (!change.automatic, order)
            });
        for (i, change) in self.changes.iter_mut().enumerate() {
            change.most_plausible = Some(i) == named;
        }
        self.suspects = judged.into_iter().map(|(_, s)| s).collect();
    }

    /// The change marked most plausible.
    pub fn most_plausible(&self) -> Option<&Change> {
        self.changes.iter().find(|c| c.most_plausible)
    }

    /// The first screen's line about change.
    pub fn headline(&self) -> Option<String> {
        if let Some(change) = self.most_plausible() {
            // A controller acting is no one's change: say that it reacted.
            return Some(if crate::suspects::is_reaction(change) {
                format!("The cluster reacted {}", change.sentence())
            } else {
                format!("Changed {}", change.sentence())
            });
        }
        if !self.kubernetes_read && !self.trail_read {
            return None;
        }
        let unread = match (self.kubernetes_read, self.trail_read) {
            (true, false) => " (CloudTrail not read)",
            (false, true) => " (the cluster not read)",
            _ => "",
        };
        let before = |s: &&Suspect| s.offset_seconds.is_none_or(|o| o <= 60);
        let people: Vec<&Suspect> = self
            .suspects
            .iter()
            .filter(|s| s.is_change() && !s.reaction)
            .collect();
        let (people_before, people_after): (Vec<&Suspect>, Vec<&Suspect>) =
            people.into_iter().partition(before);
        let reactions = self
            .suspects
            .iter()
            .filter(|s| s.reaction)
            .filter(before)
            .count();
        if let Some(last) = people_before.last() {
            let acquitted = people_before
                .iter()
                .filter(|s| s.verdict == SuspectVerdict::Acquitted)
                .count();
            return Some(if acquitted == people_before.len() {
                format!(
                    "No change convicted: {} before the breach {} acquitted; the last, {}",
                    crate::classify::plural(acquitted as u32, "change"),
                    if acquitted == 1 { "was" } else { "were" },
                    last.reason
                )
            } else {
                format!(
                    "No change convicted; not every test could be run on the last, {}",
                    last.reason
                )
            });
        }
        let after = match people_after.last() {
            Some(last) => format!(
                "; {} after it began, acquitted (the last, {})",
                crate::classify::plural(people_after.len() as u32, "change"),
                last.reason
            ),
            None => String::new(),
        };
        let reacted = match reactions {
            0 => String::new(),
            1 => {
                "; only the cluster reacting once, acquitted as a reaction (see Changes)".to_owned()
            }
            n => format!(
                "; only the cluster reacting, {n} times, acquitted as reactions (see Changes)"
            ),
        };
        Some(format!(
            "No change in the {} h before the breach{unread}{reacted}{after}",
            LOOKBACK.num_hours()
        ))
    }
}

/// The load balancer controller registers and deregisters one target per
/// pod as pods come and go: a rollout is dozens of records. Automatic
/// registrations of one group within 15 minutes of each other become one
/// change (when the first was made).
fn merge_registrations(changes: Vec<Change>) -> Vec<Change> {
    const GAP: Duration = Duration::minutes(15);
    let mut out: Vec<Change> = Vec::with_capacity(changes.len());
    let mut counts: Vec<(usize, u32, u32, DateTime<Utc>)> = Vec::new();
    for change in changes {
        let registered = change.summary.contains(" registered");
        let n = change
            .summary
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(1);
        let joins = change.kind == ChangeKind::Targets && change.automatic;
        if joins
            && let Some((index, up, down, last)) = counts.iter_mut().find(|(i, _, _, last)| {
                out[*i].subject == change.subject && change.at - *last <= GAP
            })
        {
            if registered {
                *up += n;
            } else {
                *down += n;
            }
            *last = change.at;
            let (up, down) = (*up, *down);
            out[*index].summary = format!(
                "{up} target{} registered, {down} deregistered (the controller following the pods)",
                if up == 1 { "" } else { "s" }
            );
            continue;
        }
        if joins {
            let (up, down) = if registered { (n, 0) } else { (0, n) };
            counts.push((out.len(), up, down, change.at));
        }
        out.push(change);
    }
    out
}

/// Each revision created in the window, with what it changed from the one before.
fn rollouts(workload: &Workload) -> Vec<Change> {
    let Some(deployment) = &workload.deployment else {
        return Vec::new();
    };
    let subject = format!(
        "deployment {}/{}",
        workload.service.namespace, deployment.name
    );
    let revisions = &deployment.revisions;
    revisions
        .iter()
        .enumerate()
        .filter_map(|(i, revision)| {
            let at = revision.created?;
            // Revisions are newest first: the one before is the next.
            let previous = revisions.get(i + 1);
            let mut differences = previous.and_then(|p| template::diff(p, revision));
            // The current ReplicaSet's desired count follows every scaling
            // after the rollout (the HPA's, a scale edit): it is not the
            // rollout's to claim.
            let scaled_since =
                workload.hpa.is_some() || deployment.scale_edit.as_ref().is_some_and(|e| e.at > at);
            if i == 0
                && scaled_since
                && let Some(d) = &mut differences
            {
                d.retain(|d| d.aspect != Aspect::Replicas);
            }
            let number = revision
                .number
                .map_or_else(|| revision.replica_set.clone(), |n| format!("revision {n}"));
            let (mut summary, aspects, mut details) = match (&differences, previous) {
                (Some(d), _) if !d.is_empty() => (
                    format!("{number}: {}", summary_of(d)),
                    d.iter().map(|d| d.aspect).collect(),
                    d.iter()
                        .map(template::TemplateDifference::describe)
                        .collect(),
                ),
                (Some(_), _) => (
                    format!("{number}: the same pod template as before (a restart)"),
                    vec![Aspect::Restart],
                    Vec::new(),
                ),
                (None, Some(_)) => (
                    format!("{number} rolled out (its template could not be compared)"),
                    vec![Aspect::Code],
                    Vec::new(),
                ),
                (None, None) => (
                    format!("{number} rolled out"),
                    vec![Aspect::Code],
                    Vec::new(),
                ),
            };
            if let (Some(ready), Some(wanted)) =
                (revision.ready_replicas, revision.desired_replicas)
                && i == 0
            {
                details.push(format!("rollout: {ready} of {wanted} pods ready"));
            }
            // The newest rollout's own state, as the Deployment controller reports it.
            if i == 0
                && let Some(stuck) = stuck_rollout(deployment)
            {
                summary = format!("{summary}; the rollout is stuck: {stuck}");
            }
            let lowered = differences
                .iter()
                .flatten()
                .filter(|d| d.lowers_a_limit())
                .map(|d| d.aspect)
                .collect();
            Some(Change {
                details,
                lowered,
                ..Change::in_cluster(ChangeKind::Rollout, at, subject.clone(), summary, aspects)
            })
        })
        .collect()
}

/// `cpu limit 2 -> 500m, image ledger:2.3.0 -> 2.4.0 and 2 more`.
pub fn summary_of(differences: &[template::TemplateDifference]) -> String {
    const SHOWN: usize = 3;
    let mut text = differences
        .iter()
        .take(SHOWN)
        .map(template::TemplateDifference::describe)
        .collect::<Vec<_>>()
        .join(", ");
    if differences.len() > SHOWN {
        text.push_str(&format!(" and {} more", differences.len() - SHOWN));
    }
    text
}

/// The newest revision and what it changed from the one before, when both
/// templates were read.
pub fn latest_rollout(
    revisions: &[Revision],
) -> Option<(&Revision, Vec<template::TemplateDifference>)> {
    let newest = revisions.first()?;
    let differences = template::diff(revisions.get(1)?, newest)?;
    Some((newest, differences))
}

fn scaling(event: &ClusterEvent, hpa: Option<&str>) -> Change {
    let inward = event.message.contains("below target");
    let name = hpa.unwrap_or_else(|| event.object.rsplit('/').next().unwrap_or(&event.object));
    Change {
        details: if event.count > 1 {
            vec![format!("{} times", event.count)]
        } else {
            Vec::new()
        },
        automatic: true,
        ..Change::in_cluster(
            ChangeKind::Scaling,
            event.first_seen.or(event.last_seen).unwrap_or_default(),
            format!("HPA {name}"),
            event.message.clone(),
            vec![if inward {
                Aspect::ScaleIn
            } else {
                Aspect::ScaleOut
            }],
        )
    }
}

/// Karpenter's and the autoscaler's events, one change per component and reason.
fn capacity(events: &[ClusterEvent]) -> Vec<Change> {
    let mut groups: std::collections::BTreeMap<(&str, &str), Vec<&ClusterEvent>> =
        Default::default();
    for event in events {
        groups
            .entry((event.component.as_str(), event.reason.as_str()))
            .or_default()
            .push(event);
    }
    groups
        .into_iter()
        .filter_map(|((component, reason), events)| {
            let at = events
                .iter()
                .filter_map(|e| e.first_seen.or(e.last_seen))
                .min()?;
            let count: u32 = events.iter().map(|e| e.count.max(1)).sum();
            let latest = events.iter().max_by_key(|e| e.last_seen)?;
            // The node it is about, when a Node is among the objects: what
            // the first screen names.
            let node = events
                .iter()
                .find_map(|e| e.object.strip_prefix("Node/"))
                .map(|n| format!(", node {n}"))
                .unwrap_or_default();
            Some(Change {
                details: events
                    .iter()
                    .take(3)
                    .map(|e| format!("{}: {}", e.object, e.message))
                    .collect(),
                automatic: true,
                ..Change::in_cluster(
                    ChangeKind::Capacity,
                    at,
                    format!("{component}{node}"),
                    format!("{reason} x{count}: {}", latest.message),
                    vec![Aspect::Nodes],
                )
            })
        })
        .collect()
}

/// The newest ConfigMap edits the pods do not read, kept to a few.
const OTHER_CONFIG_MAPS: usize = 3;

/// What changed beside the workload, in its namespace: the other
/// Deployments' rollouts and the data edits of ConfigMaps its pods do not
/// read. They are judged like the rest, and their locality acquits them
/// unless nothing else explains the breach.
fn elsewhere_in_the_namespace(workload: &Workload) -> Vec<Change> {
    let namespace = &workload.service.namespace;
    let own = workload.deployment.as_ref().map(|d| d.name.as_str());
    let rollouts = workload
        .activity
        .namespace_rollouts
        .iter()
        .filter(|r| Some(r.deployment.as_str()) != own)
        .map(|r| Change {
            elsewhere: true,
            ..Change::in_cluster(
                ChangeKind::Rollout,
                r.at,
                format!("deployment {namespace}/{}", r.deployment),
                match r.revision {
                    Some(n) => format!("revision {n} rolled out (another workload)"),
                    None => "rolled out (another workload)".to_owned(),
                },
                vec![Aspect::Code],
            )
        });
    let read = config_maps_read(workload);
    let mut edits: Vec<Change> = workload
        .activity
        .config_maps
        .iter()
        .filter(|c| !read.contains(&&c.name))
        .filter_map(|c| {
            // Only data written by someone: leader elections and controllers
            // touch metadata, not data.
            let edit = c.edit.as_ref().filter(|e| !e.fields.is_empty())?;
            Some(Change {
                elsewhere: true,
                by: edit.manager.clone(),
                ..Change::in_cluster(
                    ChangeKind::ConfigMap,
                    edit.at,
                    format!("configmap {namespace}/{}", c.name),
                    format!(
                        "{} updated (not read by {}'s pods)",
                        edit.fields.join(", "),
                        own.unwrap_or(workload.service.name.as_str())
                    ),
                    vec![Aspect::Config],
                )
            })
        })
        .collect();
    edits.sort_by_key(|c| std::cmp::Reverse(c.at));
    edits.truncate(OTHER_CONFIG_MAPS);
    rollouts.chain(edits).collect()
}

/// The ConfigMaps the current pod template reads.
fn config_maps_read(workload: &Workload) -> Vec<&String> {
    workload
        .deployment
        .as_ref()
        .and_then(|d| d.revisions.first())
        .and_then(|r| r.template.as_ref())
        .map(|t| t.config_maps.iter().collect())
        .unwrap_or_default()
}

/// ConfigMaps the current pod template reads that were written in the window.
fn config_maps(workload: &Workload) -> Vec<Change> {
    let read = config_maps_read(workload);
    workload
        .activity
        .config_maps
        .iter()
        .filter(|c| read.contains(&&c.name))
        .filter_map(|c| {
            let at = c.changed_at?;
            // The keys written then, when the edit is the write that time stands for.
            let edit = c
                .edit
                .as_ref()
                .filter(|e| e.at == at && !e.fields.is_empty());
            let summary = match edit {
                Some(e) => format!(
                    "{} updated{} (the pods read it; running pods see it only on restart or reload)",
                    e.fields.join(", "),
                    e.manager
                        .as_deref()
                        .map(|m| format!(" by {m}"))
                        .unwrap_or_default()
                ),
                None => "updated (the pods read it; running pods see it only on restart or reload)"
                    .to_owned(),
            };
            Some(Change::in_cluster(
                ChangeKind::ConfigMap,
                at,
                format!("configmap {}/{}", workload.service.namespace, c.name),
                summary,
                vec![Aspect::Config],
            ))
        })
        .collect()
}

/// Why the newest rollout does not progress, when the Deployment says so:
/// `Progressing=False (ProgressDeadlineExceeded)`, a `ReplicaFailure`, or paused.
fn stuck_rollout(deployment: &crate::evidence::workload::DeploymentInfo) -> Option<String> {
    let failed = deployment.conditions.iter().find(|c| {
        (c.kind == "Progressing" && c.status == "False")
            || (c.kind == "ReplicaFailure" && c.status == "True")
    });
    match failed {
        Some(c) => Some(c.describe()),
        None if deployment.paused => Some("paused (spec.paused)".to_owned()),
        None => None,
    }
}

/// A person's or a tool's `spec.replicas` write on the Deployment (`kubectl
/// scale`, the scale subresource): a change of capacity of its own, dated,
/// apart from the rollouts.
fn replicas_edit(workload: &Workload, fleet: &[(DateTime<Utc>, f64)]) -> Option<Change> {
    let deployment = workload.deployment.as_ref()?;
    let edit = deployment.scale_edit.as_ref()?;
    let now = deployment
        .replicas
        .map(|r| format!(" to {r}"))
        .unwrap_or_default();
    // The fleet's size in the ten minutes before the edit and after it.
    let size = |from: DateTime<Utc>, to: DateTime<Utc>| {
        fleet
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, n)| *n)
            .reduce(f64::max)
    };
    let window = chrono::Duration::minutes(10);
    let before = size(edit.at - window, edit.at);
    let after = size(edit.at + chrono::Duration::minutes(2), edit.at + window);
    let (was, lowered) = match (before, after) {
        (Some(b), Some(a)) if a < b => (format!(" (was {b:.0})"), vec![Aspect::Replicas]),
        (Some(b), Some(a)) if a > b => (format!(" (was {b:.0})"), Vec::new()),
        _ => (String::new(), Vec::new()),
    };
    Some(Change {
        by: edit.manager.clone(),
        lowered,
        details: edit.manager.iter().map(|m| format!("by {m}")).collect(),
        ..Change::in_cluster(
            ChangeKind::Scaling,
            edit.at,
            format!(
                "deployment {}/{}",
                workload.service.namespace, deployment.name
            ),
            format!("replicas set{now}{was} by hand (spec.replicas)"),
            vec![Aspect::Replicas],
        )
    })
}

/// A person's (or a tool's) edit of the HPA's spec: its limits and targets
/// decide how far the workload can scale. The HPA's own rescaling is in
/// [`scaling`]; its status writes are not edits.
fn hpa_edit(workload: &Workload) -> Option<Change> {
    let hpa = workload.hpa.as_ref()?;
    let edit = hpa.spec_edit.as_ref()?;
    let now_value = |field: &str| match field {
        "maxReplicas" => Some(format!("maxReplicas (now {})", hpa.max_replicas)),
        "minReplicas" => hpa.min_replicas.map(|m| format!("minReplicas (now {m})")),
        _ => None,
    };
    let fields: Vec<String> = edit
        .fields
        .iter()
        .map(|f| now_value(f).unwrap_or_else(|| f.clone()))
        .collect();
    let limits = edit
        .fields
        .iter()
        .any(|f| matches!(f.as_str(), "maxReplicas" | "minReplicas" | "metrics"));
    // The edit's earlier values are not kept: a maximum the HPA now sits at
    // is taken as brought down to where it bites.
    let capped = edit.fields.iter().any(|f| f == "maxReplicas")
        && hpa
            .current_replicas
            .is_some_and(|current| current >= hpa.max_replicas);
    Some(Change {
        by: edit.manager.clone(),
        lowered: if capped {
            vec![Aspect::Replicas]
        } else {
            Vec::new()
        },
        details: edit.manager.iter().map(|m| format!("by {m}")).collect(),
        ..Change::in_cluster(
            ChangeKind::Scaling,
            edit.at,
            format!("HPA {}", hpa.name),
            format!("spec edited: {}", fields.join(", ")),
            if limits {
                vec![Aspect::Replicas]
            } else {
                vec![Aspect::ScaleIn]
            },
        )
    })
}

#[cfg(test)]
mod tests;
